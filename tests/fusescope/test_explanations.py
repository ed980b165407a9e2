"""What the Schedule view and `show --schedule` / `show --why` say about a segment's kernel
agrees with the kernel itself, on every bundled sample: the launch's grid, block and shared
memory (with its parts) are the compiled segment's, the load mechanism named is the one the
CUDA source uses (cp.async iff it uses it, never TMA), the circular-buffer stages named are the
source's, so are its vector widths, and a heuristic figure that the kernel does not keep is
called the plan and explained."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rich.text import Text

from engine.compile import compile_fusion
from engine.config import Options
from fusescope import samples
from fusescope.cli import main
from fusescope.model import SegmentInfo, load_session
from fusescope.widgets.schedule_view import _parts
from tests.multidevice.samples import MULTIDEVICE

# The multi-device samples have no single compilation whose launch the Schedule view shows
# (tests/multidevice/samples.py says where they are checked).
SAMPLES = [s.name for s in samples.list_samples() if s.name not in MULTIDEVICE]
_SMEM_PTR = re.compile(r"(\w+)\* (\w+) = reinterpret_cast<\w+\*>\(smem \+ (\d+)\);")


def kernel_body(source: str) -> str:
    """The kernel alone: the runtime headers ahead of it define fsCpAsync for every kernel."""
    return source[source.index('extern "C" __global__'):]


def launch_section(report: str) -> list[str]:
    lines = report.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Launch (the compiled kernel's"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    return lines[start + 1:end]


def check_segment(text: str, seg: Any) -> None:
    """`text`: all a view says about the engine CompiledSegment `seg` (a kernel)."""
    launch, use, body = seg.launch, seg.shared_memory, kernel_body(seg.cuda_source)
    section = launch_section(text)
    g, b = launch.grid, launch.block
    assert section[0].startswith(f"  grid ({g[0]}, {g[1]}, {g[2]}), block ({b[0]}, {b[1]}, {b[2]}): "
                                 f"{launch.threads} threads per block")
    assert ("cooperative" in section[0]) == launch.cooperative
    if launch.shared_mem_bytes:
        assert section[1] == f"  dynamic shared memory: {launch.shared_mem_bytes} B"
        parts = [(int(m.group(1)), m.group(2)) for ln in section[2:]
                 if (m := re.fullmatch(r"\s+(\d+) B  (.*)", ln))]
        assert parts == use.parts() and sum(n for n, _ in parts) == launch.shared_mem_bytes
    else:
        assert section[1] == "  dynamic shared memory: none"
    # The breakdown's buffers are the kernel's shared pointers, at their offsets.
    assert {(name, off) for _t, name, off in _SMEM_PTR.findall(body)} == \
        {(x.name, str(x.offset)) for x in use.buffers}
    if use.reduction_bytes:
        assert f"char* red_smem = smem + {use.reduction_offset};" in body
    # The vector copies named are the source's, and a planned width the kernel lacks is said so.
    widths = sorted({int(n) for n in re.findall(r"\b(?:loadGeneric|loadGlobal\w*|fsCpAsync)<[^<>,]+, (\d+)[,>]", body)}
                    - {1})
    said = next(ln for ln in section if ln.startswith("  vector copies: "))
    assert said == (f"  vector copies: {' and '.join(map(str, widths))} elements wide" if widths
                    else "  vector copies: none (every copy moves one element)")
    planned = re.findall(r"vectorize / factor (\d+)|vectorization_factor: (\d+)|Vectorize group \d, Factor: (\d+)",
                         text)
    for v in {int(n) for groups in planned for n in groups if n} - {1}:
        assert v in widths or any(ln.startswith(f"  the heuristic's vectorization factor {v} is not in the kernel")
                                  for ln in section), v
    # The load mechanism named is the source's.
    assert ("cp.async" in text) == ("fsCpAsync" in body)
    assert "TMA" not in text or "cp.async.bulk.tensor" in body
    for d in {int(x) for x in re.findall(r"(\d+) circular-buffer stages", text)} | \
            {int(x) for x in re.findall(r"Circular buffer: stages (\d+)", text)}:
        assert f"fsCpAsyncWait<{d - 2}>();" in body, f"{d} stages said, the kernel has none"
    # Nvfuser's "Smem Size" is printed only on the heuristic's plan line, labelled so.
    for ln in text.splitlines():
        if "Smem Size = " in ln:
            assert ln.startswith("Launch Parameters (the heuristic's plan;"), ln
    # A shared-memory figure of the derivation is a part of the launch's shared memory.
    figures = {n for n, _ in use.parts()} | {use.staged_bytes, use.total}
    for ln in text.splitlines():
        m = re.search(r"in shared memory\b.*?(\d+) bytes$", ln)
        if m:
            assert int(m.group(1)) in figures, ln
    # Every planned launch figure that the launch does not keep is said to be the plan's.
    lp = getattr(seg.params, "lparams", None)
    if lp is not None:
        planned = (lp.bdimx, lp.bdimy, lp.bdimz, lp.gdimx, lp.gdimy, lp.gdimz)
        names = ("BlockDim.x", "BlockDim.y", "BlockDim.z", "GridDim.x", "GridDim.y", "GridDim.z")
        for name, p, got in zip(names, planned, (*b, *g)):
            if p not in (-1, got):
                assert any(ln.startswith(f"  {name} is {got}, not the planned {p}: ") for ln in section)
        if lp.smem != launch.shared_mem_bytes:
            assert any(ln.startswith(f"  Smem Size is {launch.shared_mem_bytes} B, not the planned {lp.smem} B")
                       for ln in section)


def view_text(s: SegmentInfo) -> str:
    """What the Schedule tab draws for the segment (its rich Text parts, as plain text)."""
    return Text("\n").join(_parts(s)).plain


@pytest.mark.parametrize("name", SAMPLES)
def test_schedule_views_agree_with_the_compiled_kernels(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples.resolve(name)
    session = load_session(path)
    if session.multidevice() is not None:  # (tests/fusescope/test_multidevice_tui.py checks its views)
        pytest.skip("a multi-device fusion has no single compilation: the Schedule tab says so")
    result = session.compile()
    assert result.ok, result.error
    # The engine's own compilation at the same inputs and (default) options.
    cf = compile_fusion(session.fd, session.fd.example_inputs(device="cpu", seed=0), Options())
    assert [s.id for s in cf.segments] == [s.id for s in result.segments]
    assert main(["show", str(path), "--schedule"]) == 0
    printed = capsys.readouterr().out
    assert printed == result.schedule_report()
    why = result.why()
    kernels = 0
    for seg, info in zip(cf.segments, result.segments):
        if seg.cuda_source is None:
            assert info.launch_info is None and "Launch (the compiled kernel's" not in info.schedule_report()
            assert f"[launch] g{seg.id}:" not in why
            continue
        kernels += 1
        assert info.cuda_source == seg.cuda_source  # the same kernel on both sides
        report = info.schedule_report()
        assert report in printed
        check_segment(report, seg)
        check_segment(view_text(info), seg)
        g, b = seg.launch.grid, seg.launch.block
        assert f"[launch] g{seg.id}: grid ({g[0]}, {g[1]}, {g[2]}), block ({b[0]}, {b[1]}, {b[2]}), " \
               f"{seg.launch.shared_mem_bytes} B dynamic shared memory" in why
    assert "TMA" not in why and ("cp.async" in why) == any(
        s.cuda_source is not None and "fsCpAsync" in kernel_body(s.cuda_source) for s in cf.segments)
    assert kernels or all(s.scheduler == "expr_eval" for s in cf.segments)


def test_the_default_sample_says_cp_async_and_the_launch_shared_memory(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28's example: the inner-outer kernel stages its input with cp.async, and its launch
    asks for the staged rows plus the block reduction's workspace."""
    assert main(["show", samples.DEFAULT_SAMPLE, "--schedule"]) == 0
    out = capsys.readouterr().out
    assert "TMA" not in out
    assert "  compute capability 9.0 >= 9.0: inputs staged in shared memory, 2 circular-buffer stages of 2 rows, " \
           "65536 bytes\n" in out
    assert "  dynamic shared memory: 100352 B\n" in out
    assert "       65536 B  T7: a cache of T0, 2 circular-buffer stages loaded ahead by cp.async\n" in out
    assert "       34816 B  block-reduction workspace (red_smem, at offset 65536)\n" in out
    assert "Smem Size is 100352 B, not the planned 65536 B" in out
