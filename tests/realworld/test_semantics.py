"""What the older spellings and the compat ops mean, checked against torch directly (the
emulator tests compare with the engine's own reference; these pin the reference)."""

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.errors import FusionDefinitionError
from engine.frontend.pyformat import dumps_fusion, loads_fusion

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_alias_output_is_written_into_its_input_and_not_returned():
    fd = load_fusion(SCRIPTS / "alias_running_stats.py")
    x, running = fd.example_inputs(seed=0)
    expected_mean = x.sum(0) * 0.125
    expected_running = running * 0.9 + expected_mean * 0.1
    outs = fd.execute([x, running])
    assert len(outs) == 1  # nvFuser returns no tensor for the aliased output
    torch.testing.assert_close(outs[0], expected_mean)
    torch.testing.assert_close(running, expected_running)


def test_alias_must_name_a_tensor_input_of_the_same_dtype():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Half)
        with pytest.raises(FusionDefinitionError, match="cannot alias"):
            fd.add_output(fd.ops.neg(a), b)
        with pytest.raises(FusionDefinitionError, match="tensor input of the fusion"):
            fd.add_output(fd.ops.neg(a), fd.ops.neg(a))


def test_old_reduction_spellings_match_torch():
    fd = load_fusion(SCRIPTS / "old_max_axes.py")
    (x,) = fd.example_inputs(seed=1)
    mx, sm = fd.execute([x])
    torch.testing.assert_close(mx, x.amax(1))
    torch.testing.assert_close(sm, x.sum(0, keepdim=True))


def test_sizes_strides_give_broadcasts_and_stride_order():
    with FusionDefinition() as fd:
        t = fd.define_tensor(sizes=[2, 3, 4, 5], strides=[60, 1, 15, 3])
        b = fd.define_tensor(sizes=[1, 4], strides=[4, 1])
        fd.add_output(fd.ops.add(t, fd.ops.broadcast_in_dim(b, [2, 3, 4, 5], [0, 2])))
    assert [i.is_broadcast for i in b.domain.logical] == [True, False]
    alloc = t.domain.maybe_allocation
    assert [t.domain.logical.index(i) for i in alloc] == [0, 2, 3, 1]  # channels last
    x = torch.randn(120).as_strided((2, 3, 4, 5), (60, 1, 15, 3))
    y = torch.randn(1, 4)
    torch.testing.assert_close(fd.execute([x, y])[0], x + y[:, None, :, None])


def test_define_scalar_with_a_dtype_positional_is_an_input():
    with FusionDefinition() as fd:
        s = fd.define_scalar(DataType.Int)
    assert fd.fusion.inputs == [s] and s.dtype == DataType.Int


def test_arange_iota_and_embedding_match_torch():
    fd = load_fusion(SCRIPTS / "iota_arange.py")
    (x,) = fd.example_inputs(seed=0)
    t5, t6, t7 = fd.execute([x])
    torch.testing.assert_close(t5, x + torch.arange(2, 32, 3))
    torch.testing.assert_close(t6, torch.arange(1, 13, 3, dtype=torch.float32))
    torch.testing.assert_close(t7, torch.arange(5))
    fd = load_fusion(SCRIPTS / "embedding_fwd.py")
    idx, w = fd.example_inputs(seed=0)
    torch.testing.assert_close(fd.execute([idx, w])[0], torch.nn.functional.embedding(idx, w))


def test_old_spellings_are_saved_in_the_current_form():
    fd = load_fusion(SCRIPTS / "symbolic_sizes_contiguous.py")
    text = dumps_fusion(fd)
    assert "output_shape" not in text and "shape=[4, 4]" in text
    again = loads_fusion(text)
    a, b = fd.example_inputs(seed=0)
    torch.testing.assert_close(again.execute([a, b])[0], b / a)
