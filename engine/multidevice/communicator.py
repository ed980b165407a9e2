"""The process group the multi-device runtime communicates through (torch.distributed).

`Communicator.instance()` joins the default process group: the caller's when one is set up
already, otherwise one made from the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT), NCCL when CUDA is available and gloo otherwise
(FUSESCOPE_DIST_BACKEND=gloo|nccl chooses: gloo lets several ranks share one GPU, which NCCL
refuses). Teams (the devices of a communication) get their own groups, made once each.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist

from engine.errors import ExecutionError

REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}


def _env_int(names: tuple[str, ...], default: int) -> int:
    for n in names:
        v = os.environ.get(n)
        if v:
            return int(v)
    return default


class Communicator:
    _instance: Communicator | None = None

    def __init__(self) -> None:
        if not dist.is_available():
            raise ExecutionError("torch.distributed is not available in this torch build")
        if not dist.is_initialized():
            world = _env_int(("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"), 1)
            rank = _env_int(("RANK", "OMPI_COMM_WORLD_RANK"), 0)
            local = _env_int(("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"), rank)
            os.environ.setdefault("MASTER_ADDR", "localhost")
            os.environ.setdefault("MASTER_PORT", "29500")
            cuda = torch.cuda.is_available() and torch.cuda.device_count() > 0
            backend = os.environ.get("FUSESCOPE_DIST_BACKEND") or ("nccl" if cuda else "gloo")
            kwargs: dict[str, Any] = {}
            if cuda:
                torch.cuda.set_device(local % torch.cuda.device_count())
            if cuda and backend == "nccl":
                kwargs["device_id"] = torch.device("cuda", local % torch.cuda.device_count())
            dist.init_process_group(backend=backend, world_size=world, rank=rank, **kwargs)
        self._groups: dict[tuple[int, ...], Any] = {}
        self._side: dict[int, Any] = {}

    @classmethod
    def instance(cls) -> Communicator:
        if cls._instance is None or not dist.is_initialized():
            cls._instance = Communicator()
        return cls._instance

    def size(self) -> int:
        return dist.get_world_size()

    def rank(self) -> int:
        return dist.get_rank()

    def local_size(self) -> int:
        return _env_int(("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"), self.size())

    def local_rank(self) -> int:
        return _env_int(("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"), self.rank())

    def backend(self) -> str:
        return str(dist.get_backend())

    def barrier(self) -> None:
        dist.barrier()

    def device(self) -> torch.device:
        if self.backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def group(self, team: list[int]) -> Any:
        """The process group of `team` (the whole world's when it is everyone). Every rank
        makes the same groups in the same order (torch.distributed requires it): the runtime
        asks for each communication's team on every rank, in program order."""
        key = tuple(team)
        if len(key) == self.size() and sorted(key) == list(range(self.size())):
            return None
        if key not in self._groups:
            self._groups[key] = dist.new_group(sorted(key))
        return self._groups[key]

    def side_stream(self, device: torch.device) -> Any:
        """The CUDA stream chunked collectives are queued on beside the compute (one per
        device, made once)."""
        k = device.index if device.index is not None else torch.cuda.current_device()
        if k not in self._side:
            self._side[k] = torch.cuda.Stream(device=torch.device("cuda", k))
        return self._side[k]
