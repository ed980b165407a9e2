"""Runs test cases on N processes with the torchrun environment (gloo on the CPU, NCCL on
GPUs), as `torchrun --nproc-per-node N` would: each process calls `case(backend)` from
tests.multidevice.cases and a case fails with the first process's traceback.

`spawn` runs one case in fresh processes. `batched` runs every case of a parametrized test
that the session selected in one set of processes, one case after another (process start,
CUDA context and process group made once), and reports each case to its own test; a case
that the batch did not reach (one before it failed, which ends the batch's processes) runs
alone through `spawn`.
"""

from __future__ import annotations

import os
import socket
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(rank: int, world: int, port: int, dist_backend: str | None) -> None:
    if dist_backend:
        os.environ["FUSESCOPE_DIST_BACKEND"] = dist_backend
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


def _worker(rank: int, world: int, port: int, name: str, backend: str, dist_backend: str | None) -> None:
    _environment(rank, world, port, dist_backend)
    import torch.distributed as dist

    from tests.multidevice import cases

    try:
        getattr(cases, name)(backend)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def spawn(name: str, world: int = 2, backend: str = "reference", dist_backend: str | None = None) -> None:
    """`dist_backend`: gloo or nccl for the process group (default: the Communicator's choice)."""
    mp.spawn(_worker, args=(world, _free_port(), name, backend, dist_backend), nprocs=world, join=True)


def _batch_worker(rank: int, world: int, port: int, names: list[str], backend: str, dist_backend: str | None,
                  report: str) -> None:
    """Run `names` in turn; after each, append its name to this rank's `.ok` file, or write
    its traceback to the `.fail` file and end the process (the other ranks may be waiting in
    a collective of that case: mp.spawn ends them)."""
    _environment(rank, world, port, dist_backend)
    import torch.distributed as dist

    from engine import fusion_cache
    from tests.multidevice import cases

    out = Path(report)
    try:
        for name in names:
            fusion_cache.clear()  # as tests/conftest.py does before each test
            try:
                getattr(cases, name)(backend)
                if dist.is_initialized():
                    dist.barrier()  # every rank is done with this case before the next starts
            except BaseException:
                (out / f"{rank}.fail").write_text(f"{name}\n{traceback.format_exc()}")
                raise
            with open(out / f"{rank}.ok", "a") as f:
                f.write(name + "\n")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_batch(names: list[str], world: int, backend: str, dist_backend: str | None = None) -> dict[str, str]:
    """Run `names` in one set of `world` processes: {case: "" (passed on every rank) or the
    traceback of the rank it failed on}; a case the batch did not reach is left out."""
    with tempfile.TemporaryDirectory(prefix="fusescope-md-") as report:
        try:
            mp.spawn(_batch_worker, args=(world, _free_port(), names, backend, dist_backend, report),
                     nprocs=world, join=True)
        except Exception:  # the case's traceback is in its .fail file; the rest run alone
            pass
        passed = [set(p.read_text().split()) if p.exists() else set()
                  for p in (Path(report) / f"{r}.ok" for r in range(world))]
        outcome = {n: "" for n in names if all(n in s for s in passed)}
        for r in range(world):
            fail = Path(report) / f"{r}.fail"
            if fail.exists():
                name, _, tb = fail.read_text().partition("\n")
                outcome.setdefault(name, f"rank {r}:\n{tb}")
    return outcome


_BATCHES: dict[tuple, dict[str, str]] = {}


def batched(request: pytest.FixtureRequest, case: str, world: int = 2, backend: str = "reference",
            dist_backend: str | None = None, runs: Callable[[Any], bool] = lambda item: True) -> None:
    """Run `case` as a part of its test's batch: the cases of the selected items of the same
    test function with the same other parameters and for which `runs(item)` holds (the items
    the test does not skip)."""
    node = request.node
    others = {k: v for k, v in node.callspec.params.items() if k != "case"}
    key = (node.module.__name__, node.originalname, tuple(sorted(others.items())), world, backend, dist_backend)
    if key not in _BATCHES:
        names = [it.callspec.params["case"] for it in request.session.items
                 if getattr(it, "originalname", None) == node.originalname and it.module is node.module
                 and {k: v for k, v in it.callspec.params.items() if k != "case"} == others and runs(it)]
        _BATCHES[key] = run_batch(names, world, backend, dist_backend)
    outcome = _BATCHES[key].get(case)
    if outcome is None:  # not reached: a case before it failed
        spawn(case, world, backend, dist_backend)
    elif outcome:
        pytest.fail(f"{case} on {world} ranks ({backend}) failed on {outcome}", pytrace=False)
