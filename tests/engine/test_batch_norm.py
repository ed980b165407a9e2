"""batch_norm (nvFuser's composite): output, mean and invstd against torch's batch_norm in
training and inference, channels first and last; running statistics written back into the
inputs by execute(); the generated kernels on the emulator; a script read and written back."""


import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion, dumps_fusion, loads_fusion
from engine.errors import FusionDefinitionError
from engine.reference import evaluate
from tests.emulation import needs_gxx


def _definition(training: bool, channels_last: bool = False, affine: bool = True,
                dtype: DataType = DataType.Float) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=dtype)
        w, b, rm, rv = (fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float) for _ in range(4))
        momentum = fd.define_scalar(0.1, dtype=DataType.Double)
        eps = fd.define_scalar(1e-5, dtype=DataType.Double)
        y, mean, invstd = fd.ops.batch_norm(x, w if affine else None, b if affine else None, rm, rv, momentum, eps,
                                            training, channels_last)
        fd.add_output(y)
        fd.add_output(mean)
        fd.add_output(invstd)
    return fd


def _inputs(channels_last: bool, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    shape = (4, 5, 6, 3) if channels_last else (4, 3, 5, 6)
    x = torch.randn(shape, generator=g).to(dtype) * 2 + 1
    w, b, rm = (torch.randn(3, generator=g) for _ in range(3))
    rv = torch.rand(3, generator=g) + 0.5
    return [x, w, b, rm, rv]


def _torch(xs, training: bool, channels_last: bool, affine: bool = True):
    x, w, b, rm, rv = (t.clone() for t in xs)
    xc = x.float().movedim(-1, 1) if channels_last else x.float()
    y = torch.nn.functional.batch_norm(xc, rm, rv, w if affine else None, b if affine else None, training, 0.1, 1e-5)
    return (y.movedim(1, -1) if channels_last else y), rm, rv


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch_and_updates_running_stats(training, channels_last):
    fd = _definition(training, channels_last)
    xs = _inputs(channels_last)
    want_y, want_rm, want_rv = _torch(xs, training, channels_last)
    y, mean, invstd = fd.execute(xs)
    torch.testing.assert_close(y, want_y, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xs[3], want_rm)  # written in place (training) or untouched
    torch.testing.assert_close(xs[4], want_rv)
    xf = xs[0].movedim(-1, 1) if channels_last else xs[0]
    if training:
        dims = [0, 2, 3]
        torch.testing.assert_close(mean, xf.mean(dims))
        torch.testing.assert_close(invstd, torch.rsqrt(xf.var(dims, unbiased=False) + 1e-5))
    else:
        torch.testing.assert_close(mean, xs[3])


def test_training_hides_the_running_stat_outputs_and_aliases_them():
    fd = _definition(True)
    assert len(fd.fusion.outputs) == 5 and sorted(fd.output_aliases.values()) == [3, 4]
    assert len(fd.execute(_inputs(False))) == 3


@needs_gxx
def test_batch_norm_kernels_match_the_reference_in_bf16():
    fd = _definition(True, dtype=DataType.BFloat16)
    xs = _inputs(False, torch.bfloat16)
    outs = compile_fusion(fd, xs).run(xs, backend="emulate")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o, r, rtol=1e-4, atol=1e-4)


def test_batch_norm_script_round_trips():
    fd = _definition(True, affine=False)
    again = loads_fusion(dumps_fusion(fd), "bn.py")
    assert str(again.fusion) == str(fd.fusion) and again.output_aliases == fd.output_aliases


def test_bad_batch_norm_definitions_name_the_problem():
    with pytest.raises(FusionDefinitionError, match="running_mean and running_var must be given together"), \
            FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        rm = fd.define_tensor(shape=[-1], contiguity=[True])
        fd.ops.batch_norm(x, None, None, rm, None, 0.1, 1e-5, True)
