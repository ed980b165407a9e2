"""Aliased outputs written in place (engine.host.in_place, RunPlan.writing_in_place): a pointwise
kernel writes `add_output(out, alias_input=inp)` straight into inp's buffer, as nvFuser does,
where nothing else reads inp; everywhere else the output gets a buffer of its own and
FusionDefinition.apply_output_aliases copies it back. Values are checked against the reference
evaluator run on copies of the inputs (the emulator runs the generated kernels)."""

from __future__ import annotations

import torch

from engine import compile_fusion, load_fusion, loads_fusion
from engine.host.in_place import in_place_writes

ADAMW = "tests/realworld/scripts/adamw_step_lerp_addcmul_scalar_inputs_alias_fp32.py"


def _calls(fd, xs, n=3):
    """n fd.execute-style calls through the in-place plan on the emulator, against the
    reference evaluator's in-place calls on copies. Returns whether the last call wrote the
    aliased outputs into the inputs' buffers."""
    ref = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
    cf = compile_fusion(fd, xs)
    plan = cf._plan("emulate").writing_in_place(fd.output_aliases)
    same = False
    for _ in range(n):
        fd.execute(ref)  # CPU tensors: the reference evaluator, copied into the inputs
        outs = plan.run(xs)
        same = all(outs[o] is xs[i] for o, i in fd.output_aliases.items())
        fd.apply_output_aliases(xs, outs)
        for a, b in zip(ref, xs):
            if isinstance(a, torch.Tensor):
                torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    return same


def test_pointwise_optimizer_step_writes_its_states_in_place():
    fd = load_fusion(ADAMW)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    assert in_place_writes(cf.host_ir, fd.output_aliases) == {0: {2: 0, 0: 2, 1: 3}}
    ptrs = [x.data_ptr() for x in xs[:4]]
    assert _calls(fd, xs)
    assert [x.data_ptr() for x in xs[:4]] == ptrs


_READ_AGAIN = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[64, 48], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[64, 48], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.mul(T0, T1)
    T3 = fd.ops.sum(T0, dims=[1])
    fd.add_output(T2, alias_input=T0)
    fd.add_output(T3)
inputs = [torch.randn(64, 48), torch.randn(64, 48)]
"""

_BROADCAST = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[64, 48], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[48], contiguity=[True], dtype=DataType.Float)
    T2 = fd.ops.sum(T0, dims=[0])
    T3 = fd.ops.add(T2, T1)
    fd.add_output(T3, alias_input=T1)
inputs = [torch.randn(64, 48), torch.randn(48)]
"""


def test_an_input_another_kernel_reads_is_not_overwritten():
    fd = loads_fusion(_READ_AGAIN)
    xs = fd.example_inputs(seed=1)
    cf = compile_fusion(fd, xs)
    assert in_place_writes(cf.host_ir, fd.output_aliases) == {}
    assert not _calls(fd, xs, n=2)


def test_a_reduction_kernel_copies_its_aliased_output_back():
    fd = loads_fusion(_BROADCAST)
    xs = fd.example_inputs(seed=2)
    cf = compile_fusion(fd, xs)
    assert all(s.scheduler != "pointwise" for s in cf.segments if s.is_kernel)
    assert in_place_writes(cf.host_ir, fd.output_aliases) == {}
    assert not _calls(fd, xs, n=2)
