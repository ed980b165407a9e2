"""Runs a test case on N processes with the torchrun environment (gloo on the CPU, NCCL on
GPUs), as `torchrun --nproc-per-node N` would: each process calls `case(backend)` from
tests.multidevice.cases and the test fails with the first process's traceback."""

from __future__ import annotations

import os
import socket

import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, name: str, backend: str, dist_backend: str | None) -> None:
    if dist_backend:
        os.environ["FUSESCOPE_DIST_BACKEND"] = dist_backend
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
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
