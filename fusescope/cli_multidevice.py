"""The command line for multi-device fusions (tensors with device meshes): fusescope/cli.py hands
`show`, `run` and `export` of such a fusion here: it runs on several ranks, not as one compilation.

    fusescope show FILE --ir                    the listing and a sharding row per tensor
    fusescope show FILE --segments [--json]     regions and communications in run order
    fusescope show FILE --host-ir [--rank R]    the host IR rank R runs (default 0)
    fusescope show FILE --transforms TV         the transform block and the tensor's sharding
    fusescope run FILE [--ranks N] [--backend reference|emulate|cuda] [--json]
    fusescope export FILE --format dot|json|mermaid|svg -o OUT
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fusescope.md_model import MultiDeviceInfo
    from fusescope.md_run import MultiRunResult
    from fusescope.model import Session

NOT_COMPILED = ("{what} shows one single-device compilation; {title} is a multi-device fusion, whose regions "
                "are compiled on each rank for its shards when it runs: see --segments (regions and "
                "communications), --host-ir [--rank R], or `fusescope run {title} --ranks N`")


class MultiDeviceCliError(Exception):
    """A user-facing failure (cli.py prints it as its CliError: one line, exit status 2)."""


def show(session: Session, info: MultiDeviceInfo, args: argparse.Namespace,
         emit: Any, emit_json: Any) -> int:
    """`show` of a multi-device fusion."""
    if args.ir:
        emit(session.listing + "\n" + info.sharding_table())
    elif args.transforms:
        name = args.transforms if args.transforms.upper().startswith("T") else f"T{args.transforms}"
        name = "T" + name[1:]
        try:
            emit(session.transforms(name))  # with the tensor's sharding line
        except KeyError as e:
            raise MultiDeviceCliError(e.args[0]) from None
    elif args.segments:
        emit_json(info.to_dict()) if args.json else emit(info.segments_text())
    elif args.host_ir:
        if info.error:
            raise MultiDeviceCliError(f"no host IR: {info.error}")
        rank = 0 if args.rank is None else args.rank
        try:
            text = info.host_ir_of(rank)
        except ValueError as e:
            raise MultiDeviceCliError(str(e)) from None
        emit_json({"rank": rank, "host_ir": text}) if args.json else emit(text)
    elif args.runs:
        raise MultiDeviceCliError(f"{args.file} is a multi-device fusion: it has no recorded runs")
    else:
        what = next(f"--{k.replace('_', '-')}" for k in ("schedule", "why", "cuda", "kernel_ir") if getattr(args, k))
        raise MultiDeviceCliError(NOT_COMPILED.format(what=what, title=session.title))
    return 0


def ranks_for(info: MultiDeviceInfo, asked: int | None) -> int:
    """--ranks, or the mesh's size when it is left out; refused when the meshes need more."""
    if asked is None:
        print(f"note: a multi-device fusion: running on {info.world} ranks, its meshes' size "
              "(--ranks N to choose)", file=sys.stderr)
        return info.world
    if asked < info.world:
        raise MultiDeviceCliError(f"--ranks {asked}: the fusion's meshes ({', '.join(info.meshes)}) need "
                                  f"{info.world} ranks")
    return asked


def run(session: Session, info: MultiDeviceInfo, args: argparse.Namespace, timeout: float) -> MultiRunResult:
    """`run` of a multi-device fusion on N worker processes."""
    from fusescope.md_run import run_ranks

    if info.error:
        raise MultiDeviceCliError(f"cannot run: {info.error}")
    if args.profile or args.save_bundle:
        raise MultiDeviceCliError(f"--{'profile' if args.profile else 'save-bundle'} is for single-device "
                                  "fusions; a multi-device run prints each rank's timeline")
    ranks = ranks_for(info, args.ranks)
    if sys.stderr.isatty():
        print(f"running on {ranks} ranks ({args.backend}) ...", file=sys.stderr, flush=True)
    return run_ranks(session.fusion_source(), session.title, ranks, args.backend, timeout=timeout)


def run_command(session: Session, info: MultiDeviceInfo, args: argparse.Namespace, timeout: float,
                emit_json: Any) -> str:
    """`run --ranks N`: the run, its report (or JSON) on stdout; returns its status."""
    result = run(session, info, args, timeout)
    emit_json(result.to_dict()) if args.json else sys.stdout.write(result.report())
    sys.stdout.flush()
    if result.status != "ok":
        print(f"fusescope: {result.status}: {result.message}", file=sys.stderr)
    return result.status


def export(session: Session, info: MultiDeviceInfo, fmt: str, output: str) -> str | bytes:
    from fusescope.md_model import EXPORT_FORMATS, export

    if fmt not in EXPORT_FORMATS:
        raise MultiDeviceCliError(f"a multi-device fusion exports its step graph as {', '.join(EXPORT_FORMATS)}, "
                                  f"not {fmt}")
    try:
        return export(info, fmt, None if output == "-" else output)
    except (ValueError, OSError) as e:
        raise MultiDeviceCliError(str(e)) from None
