"""How the command line writes what it shows: exactly the engine's text when stdout is piped,
coloured on a terminal (rich is imported only then); JSON indented; the kernels of `show --cuda`
and `show --kernel-ir`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fusescope.compile_result import SegmentInfo


def emit(text: str) -> None:
    """Plain text when piped (exactly what the engine printed); coloured on a terminal."""
    if sys.stdout.isatty():
        from rich.console import Console

        from fusescope.render.highlight import highlight

        # soft_wrap: long IR lines stay single lines, so what is copied from the terminal is exact.
        Console(highlight=False, soft_wrap=True).print(highlight(text), end="")
    else:
        sys.stdout.write(text)


def emit_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def emit_cuda(text: str) -> None:
    """CUDA source: exactly the generated text when piped, highlighted on a terminal."""
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.syntax import Syntax

        Console(highlight=False, soft_wrap=True).print(Syntax(text, "cuda", theme="ansi_dark"), end="")
    else:
        sys.stdout.write(text)


def emit_kernels(segments: Sequence[SegmentInfo], args: argparse.Namespace) -> None:
    """--cuda / --kernel-ir of `segments` (--with-runtime, --json and --segment as `show` got them)."""
    what = ("cuda_source" if args.with_runtime else "kernel_source") if args.cuda else "kernel_ir"
    if args.json:
        emit_json([
            {"segment": s.id, "scheduler": s.scheduler, "kernel_name": s.kernel_name, "launch": s.launch,
             what: getattr(s, what),
             **({"stages": dict(s.stages)} if args.kernel_ir else {})}
            for s in segments
        ])
        return
    parts = []
    for s in segments:
        # A C++ comment per segment keeps the whole output valid CUDA. --segment N gives the
        # kernel alone (as NVFUSER_DUMP=cuda_kernel prints it), with --with-runtime the file
        # exactly as it is compiled (what --kernel-source takes).
        head = f"// segment {s.id} ({s.scheduler})"
        if not s.is_kernel:
            parts.append(f"{head}: no kernel, runs through the reference evaluator\n")
            continue
        text = getattr(s, what) or ""
        if args.segment is not None:
            parts.append(text)
        else:
            parts.append(f"{head}: {s.kernel_name}\n// {s.launch}\n{text}")
    out = "\n".join(parts)
    emit_cuda(out) if args.cuda else emit(out)
