"""What names in a fusion file may mean to the loader: the FusionDefinition methods it
recognises, the enum namespaces a file may name, torch's layout names, the loader's bounds,
and small checks on plain values shared by the reader's modules.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import engine.frontend.sched as sched_mod
import engine.ir.exprs as exprs_mod
import engine.ir.iterdomain as id_mod
import engine.ir.tensorview as tv_mod
from engine.dtypes import DataType
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import MemoryType

if TYPE_CHECKING:
    from engine.frontend.pyfile.loader import Loader


# Methods of a FusionDefinition that a fusion body may call.
FD_METHODS = ("define_tensor", "define_scalar", "define_constant", "add_output")

# Trailing calls of a repro that run or check the fusion: recognised, not interpreted.
RUN_METHODS = ("execute", "validate")

# FusionDefinition methods that report on the fusion (printed at the end of repros).
REPORT_METHODS = ("last_cuda_code", "fusion_ir", "last_scheduled_fusion_ir", "print_ir", "last_kernel_ir",
                  "user_schedule_ir")

# What checking code after the run may call on the fusion (and skip unread): the run and
# report methods and nvFuser's other read-only ones (the 2022 frontend's too).
INSPECT_METHODS = (*RUN_METHODS, *REPORT_METHODS, "cuda_code_for", "scheduled_fusion_ir_for",
                   "last_repro_script", "repro_script_for", "profile", "debug_output", "id", "print_kernel")

# What a name the loader holds may stand for that makes it the fusion (see Ref.kind).
FUSION_KINDS = ("fd", "fusion", "fd_class", "fusion_class", "class", "function")

# Methods of nvFuser's Tensor that a fusion body may call: T.size(d), T.shape().
TENSOR_METHODS = ("size", "shape")


def enum_namespaces() -> dict[str, type[enum.Enum]]:
    """Enum classes a file may name (DataType.Float, ParallelType.stream, ...).

    Besides the three of the public API, any public enum that the IR or the sched
    module defines (e.g. a cache-op or load/store type) becomes nameable, so new
    schedule arguments need no change here.
    """
    found: dict[str, type[enum.Enum]] = {}
    for mod in (id_mod, tv_mod, exprs_mod, sched_mod):
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and issubclass(obj, enum.Enum) and not name.startswith("_"):
                found.setdefault(name, obj)
    found.update(DataType=DataType, ParallelType=ParallelType, MemoryType=MemoryType)
    if "SchedulerType" in found:
        found.setdefault("SchedulerHeuristic", found["SchedulerType"])  # its name before 2024
    return found


@dataclass(frozen=True)
class TorchConst:
    """torch.strided / torch.contiguous_format as written in an inputs entry (a name only)."""

    name: str


MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")

# Items a list the body builds may hold (range(), list(), extend(), ...): bounded like the
# loops, so that no line can make the loader allocate without end.
MAX_ITEMS = 10_000


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def copy_containers(v: Any) -> Any:
    """A fresh copy of the containers in `v` (a range as its list, as nvFuser's bindings
    take it); IR values, numbers and enums as they are."""
    if isinstance(v, (list, range)):
        return [copy_containers(x) for x in v]
    if isinstance(v, tuple):
        return tuple(copy_containers(x) for x in v)
    if isinstance(v, dict):
        return {k: copy_containers(x) for k, x in v.items()}
    return v


def ints(loader: Loader, node: ast.AST, v: Any) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                   for x in v):
        raise loader.error(node, f"a size must be non-negative integers, got {v!r}")
    return tuple(v)

