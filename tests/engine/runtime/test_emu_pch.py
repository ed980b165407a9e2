"""The emulator's precompiled header: keyed by what it holds, used, rebuilt when unusable,
safe to build from two processes at once, and invisible in results and compile errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from engine import fusion_cache
from engine.errors import CompileError
from engine.reference import evaluate
from engine.runtime.emu import build, pch
from engine.runtime.emulate import CXX_FLAGS, EmulatedKernel
from engine.runtime.prelude import runtime_prelude
from tests.emulation import needs_gxx
from tests.engine.runtime.emu_kernels import compiled, kernel_job, pointwise

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path: Path) -> Iterator[Path]:
    """An empty cache folder, and a process that has checked no precompiled header yet."""
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(build.PCH_ENV, raising=False)
    monkeypatch.setattr(pch, "_checked", set())
    monkeypatch.setattr(pch, "_failed", set())
    monkeypatch.setattr(pch, "_builds", {})
    yield tmp_path / "cache"
    pch.wait_for_builds()


def _gch_files(cache: Path) -> list[Path]:
    return sorted((cache / "emulate" / "pch").glob("*.h.gch"))


def _header(cache: Path) -> Path:
    (gch,) = _gch_files(cache)
    return gch.with_name(gch.name.removesuffix(".gch"))


def test_split_is_exactly_after_the_prelude() -> None:
    source, _, _ = kernel_job("exp")
    split = pch.split_source(source)
    assert split is not None
    assert split.prefix == runtime_prelude() and split.prefix + split.rest == source
    assert source.splitlines()[split.first_line - 1] == split.rest.splitlines()[0]
    assert pch.split_source("// hand-written\n" + source) is None


def test_header_key_changes_with_what_it_holds(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path))
    prelude = runtime_prelude()
    base = pch.header_path(prelude, "g++ 12", CXX_FLAGS)
    assert pch.header_path(prelude, "g++ 12", CXX_FLAGS) == base
    assert pch.header_path(prelude, "g++ 12", tuple(f for f in CXX_FLAGS if f != "-shared")) == base
    others = {pch.header_path(prelude + "// edited\n", "g++ 12", CXX_FLAGS),
              pch.header_path(prelude, "g++ 13", CXX_FLAGS),
              pch.header_path(prelude, "g++ 12", (*CXX_FLAGS, "-O0"))}
    edited = tmp_path / "cuda_emu.h"
    edited.write_text(pch.HEADER_PATH.read_text() + "\n// edited\n")
    monkeypatch.setattr(pch, "HEADER_PATH", edited)
    others.add(pch.header_path(prelude, "g++ 12", CXX_FLAGS))
    assert len(others) == 4 and base not in others


def _spy_compiles(monkeypatch) -> list[list[str]]:
    """The g++ command lines build.py runs from now on."""
    commands: list[list[str]] = []
    run = build._run

    def spy(cmd: list[str]):  # type: ignore[no-untyped-def]
        commands.append(cmd)
        return run(cmd)

    monkeypatch.setattr(build, "_run", spy)
    return commands


@needs_gxx
def test_the_first_kernel_compiles_whole_while_the_pch_builds(fresh_cache: Path, monkeypatch) -> None:
    commands = _spy_compiles(monkeypatch)
    source, name, specs = kernel_job("exp")
    EmulatedKernel(source, name, specs)
    assert [str(pch.HEADER_PATH) in cmd for cmd in commands] == [True]  # whole: cuda_emu.h itself
    pch.wait_for_builds()
    assert pch.pch_is_used(_header(fresh_cache), "g++", CXX_FLAGS)


@needs_gxx
def test_kernels_compile_against_the_pch_and_compute_the_same(fresh_cache: Path, monkeypatch) -> None:
    source, name, specs = kernel_job("exp")
    EmulatedKernel(source, name, specs)
    pch.wait_for_builds()
    commands = _spy_compiles(monkeypatch)
    cf, xs = compiled("sin")
    out = cf.run(xs, backend="emulate")[0]
    assert [cmd[cmd.index("-include") + 1] for cmd in commands] == [str(_header(fresh_cache))]
    torch.testing.assert_close(out, evaluate(cf.fusion, xs)[0], rtol=1e-5, atol=1e-6)
    # The same kernel compiled whole (another cache folder) gives the same bits.
    monkeypatch.setenv(build.PCH_ENV, "0")
    monkeypatch.setenv("FUSESCOPE_CACHE", str(fresh_cache.parent / "whole"))
    fusion_cache.clear()  # compile the fusion again, not reuse the one compiled above
    whole, xs2 = compiled("sin")
    assert torch.equal(whole.run(xs2, backend="emulate")[0], out)
    assert [cmd[cmd.index("-include") + 1] for cmd in commands[1:]] == [str(pch.HEADER_PATH)]
    assert not (fresh_cache.parent / "whole" / "emulate" / "pch").exists()


def _gch_with_other_flags(header: Path) -> bytes:
    """A valid precompiled header of the same text, built with -O0: g++ refuses it at -O2."""
    other = header.with_name("other.h")
    other.write_text(header.read_text())
    subprocess.run(["g++", *pch.compile_flags((*CXX_FLAGS, "-O0")), "-x", "c++-header", str(other)],
                   check=True, capture_output=True)
    return other.with_name("other.h.gch").read_bytes()


@needs_gxx
@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_flags"])
def test_an_unusable_pch_is_rebuilt_not_just_ignored(fresh_cache: Path, monkeypatch, damage: str) -> None:
    source, name, specs = kernel_job("exp")
    EmulatedKernel(source, name, specs)
    pch.wait_for_builds()
    header = _header(fresh_cache)
    gch = pch.gch_path(header)
    good = gch.read_bytes()
    bad = {"garbage": b"not a pch", "truncated": good[: len(good) // 3]}.get(damage) or _gch_with_other_flags(header)
    gch.write_bytes(bad)
    monkeypatch.setattr(pch, "_checked", set())  # as a new process finds it
    assert not pch.pch_is_used(header, "g++", CXX_FLAGS)
    # A kernel compiled meanwhile is right (g++ read the header's text), and the file is dropped...
    cf, xs = compiled("cos")
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(cf.fusion, xs)[0], rtol=1e-5, atol=1e-6)
    assert not gch.exists() or gch.read_bytes() != bad
    # ... so that the next compile builds it again, usable.
    source, name, specs = kernel_job("tanh")
    EmulatedKernel(source, name, specs)
    pch.wait_for_builds()
    assert gch.exists() and gch.read_bytes() != bad
    assert pch.pch_is_used(header, "g++", CXX_FLAGS)


_PROCESS = """
import sys
from engine.compile import compile_fusion
from engine.reference import evaluate
from tests.engine.runtime.emu_kernels import pointwise
import torch
fd, xs = pointwise(sys.argv[1])
out = compile_fusion(fd, xs).run(xs, backend="emulate")[0]
torch.testing.assert_close(out, evaluate(fd.fusion, xs)[0], rtol=1e-5, atol=1e-6)
print("ok")
"""


@needs_gxx
def test_two_processes_build_the_pch_at_once(fresh_cache: Path) -> None:
    env = {**os.environ, "FUSESCOPE_CACHE": str(fresh_cache), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _PROCESS, op], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for op in ("exp", "sin")]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in results]
    assert len(_gch_files(fresh_cache)) == 1
    assert pch.pch_is_used(_header(fresh_cache), "g++", CXX_FLAGS)
    leftovers = [p.name for p in (fresh_cache / "emulate").rglob(".*") if not p.name.endswith(".lock")]
    assert leftovers == []  # no temporary file left behind
    assert len(list((fresh_cache / "emulate").glob("*.so"))) == 2


@needs_gxx
def test_compile_errors_name_the_kernels_own_lines(fresh_cache: Path) -> None:
    source, name, specs = kernel_job("exp")
    EmulatedKernel(source, name, specs)
    pch.wait_for_builds()  # the header is built and fine
    broken = source.replace('extern "C" __global__', 'this_is_not_cuda;\nextern "C" __global__', 1)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "this_is_not_cuda" in text)
    with pytest.raises(CompileError) as e:
        EmulatedKernel(broken, name, specs)
    assert (f"{name}.cu", line) in e.value.locations
    assert f">{line:5d} | this_is_not_cuda;" in str(e.value)
    assert pch.pch_is_used(_header(fresh_cache), "g++", CXX_FLAGS)  # the kernel's fault: header kept


def test_pointwise_helper_makes_distinct_kernels() -> None:
    fd, xs = pointwise("exp", segments=3)
    assert len(fd.fusion.outputs) == 1 and xs[0].shape == (8, 16)
    assert kernel_job("exp")[0] != kernel_job("sin")[0]
