"""batch_norm, as nvFuser's composite builds it from primitives (a Welford over every axis
but the channels, then the affine step).

In training with running statistics, the updated running mean and (unbiased) variance are
written back into the running-stat inputs, as nvFuser's aliasOutputToInput does: the
builder queues them on the fusion (`Fusion.queue_alias`) and the FusionDefinition adds them
as outputs aliased to those inputs, which execute() writes in place and does not return.
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.ops import arith
from engine.ops.common import check_tensor, no_reductions, real_scalar
from engine.ops.reduction import reduced_count, welford
from engine.ops.shape import broadcast, set_

__all__ = ["batch_norm"]


def batch_norm(arg: TensorView, weight: TensorView | None, bias: TensorView | None,
               running_mean: TensorView | None, running_var: TensorView | None,
               momentum: float | Scalar, eps: float | Scalar, training: bool,
               channels_last: bool = False) -> tuple[TensorView, TensorView, TensorView]:
    """(output, mean, invstd) of batch normalization over every axis of `arg` but the
    channels (axis 1, or the last with channels_last)."""
    x = check_tensor("batch_norm", arg)
    if not x.dtype.is_float:
        raise FusionDefinitionError(f"batch_norm: {x.short_name} must be a floating tensor, got {x.dtype.cuda_name}")
    rank = len(no_reductions(x))
    if rank < 2:
        raise FusionDefinitionError(f"batch_norm: {x.short_name} must have at least 2 axes, got {rank}")
    if (running_mean is None) != (running_var is None):
        raise FusionDefinitionError("batch_norm: running_mean and running_var must be given together")
    channel = rank - 1 if channels_last else 1
    flags = [k != channel for k in range(rank)]
    eps_s = real_scalar("batch_norm", "eps", eps)
    if training or running_mean is None:
        reduced = [k for k in range(rank) if k != channel]
        avg, var_sum, _ = welford(x, reduced)
        # A scalar count (nvFuser's num_features) keeps the statistics in the tensor's type.
        count = arith.cast(reduced_count(x, reduced), DataType.Double)
        if running_mean is not None:
            _update_running_stats(running_mean, running_var, avg, var_sum, count, real_scalar("batch_norm", "momentum", momentum))
        mean = avg
        invstd = arith.rsqrt(arith.add(arith.div(var_sum, count), eps_s))
        centered = arith.sub(x, broadcast(mean, flags))
    else:
        mean = set_(running_mean)
        invstd = arith.rsqrt(arith.add(running_var, eps_s))
        centered = arith.sub(x, broadcast(running_mean, flags))
    y = arith.mul(centered, broadcast(invstd, flags))
    if weight is not None:
        y = arith.mul(y, broadcast(check_tensor("batch_norm", weight, "weight"), flags))
    if bias is not None:
        y = arith.add(y, broadcast(check_tensor("batch_norm", bias, "bias"), flags))
    return y, mean, invstd


def _update_running_stats(running_mean: TensorView, running_var: TensorView, avg: TensorView,
                          var_sum: TensorView, count: Scalar, momentum: Scalar) -> None:
    keep = arith.sub(1.0, momentum)
    unbiased = arith.div(var_sum, arith.sub(count, 1.0))
    for stat, batch in ((running_mean, avg), (running_var, unbiased)):
        stat = check_tensor("batch_norm", stat, "running statistics")
        new = arith.add(arith.mul(stat, keep), arith.mul(batch, momentum))
        if new.dtype != stat.dtype:
            new = arith.cast(new, stat.dtype)
        stat.fusion.queue_alias(new, stat)
