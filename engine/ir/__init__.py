"""The fusion IR: values, ops, IterDomains and their transforms, TensorViews, printing."""

from engine.ir.base import Expr, FusionGuard, Val, current_fusion
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import (
    IterDomain,
    IterType,
    Merge,
    ParallelType,
    Resize,
    Split,
    Swizzle,
    SwizzleType,
)
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView

__all__ = [
    "Expr", "Fusion", "FusionGuard", "IterDomain", "IterType", "Merge", "MemoryType",
    "ParallelType", "Resize", "Scalar", "Split", "Swizzle", "SwizzleType", "TensorDomain", "TensorView",
    "Val", "current_fusion",
]
