"""Inputs lists of fusion files: the forms real repro scripts use (nvFuser's and Thunder's
printed repros, hand-written issue reports), read without running them into InputSpecs
whose example inputs have torch's exact sizes, strides, storage offsets and dtypes, and
values of the right kind; the forms that are refused, with the line and the construct;
and the specs written back by dumps_fusion."""

import math

import pytest
import torch

from engine.compile import compile_fusion
from engine.errors import FusionFileError
from engine.frontend.pyformat import InputSpec, dumps_fusion, loads_fusion
from engine.reference import evaluate
from tests.emulation import require_gxx

HEAD = """import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    fd.add_output(fd.define_tensor(shape=[-1, -1], dtype=DataType.Float))
"""


def _load(tail: str):
    return loads_fusion(HEAD + tail, filename="f.py")


def _entry(entry: str):
    return _load(f"inputs = [\n    {entry},\n]\nfd.execute(inputs)\n")


def _layout(x):
    return tuple(x.shape), tuple(x.stride()), x.storage_offset(), x.dtype


# Entries evaluated by torch itself (in this test, on the CPU) and read by the loader: the
# example input must have the same sizes, strides, storage offset and dtype.
TORCH_FORMS = [
    # nvFuser's repro printer
    "torch.testing.make_tensor((2, 3), dtype=torch.bfloat16, device='cpu')",
    "torch.randn(24, dtype=torch.float32, device='cpu').as_strided((2, 3, 4), (1, 8, 2))",
    "torch.randn((24,), dtype=torch.float32, device='cpu').as_strided((2, 3), (1, 2))",
    "torch.randint(0, 2, (6,), dtype=torch.bool, device='cpu').as_strided((2, 3), (1, 2))",
    "torch.randint(0, 10, (4, 4), device='cpu').as_strided((4, 4), (4, 1)).to(dtype=torch.bool)",
    "torch.randn(10).as_strided((2, 3), (3, 1), 2)",
    # Thunder's dumps
    "torch.randint(low=0, high=127, size=torch.Size([4, 64]), dtype=torch.int64, layout=torch.strided, "
    "device='cpu', requires_grad=False)",
    "torch.tensor(data=5, dtype=torch.int64, device='cpu', requires_grad=False).broadcast_to(torch.Size([4, 64]))",
    "torch.randn(size=(4, 64, 8), dtype=torch.float32, layout=torch.strided, device='cpu', "
    "requires_grad=False).as_strided((4, 64, 8), (512, 1, 64))",
    # hand-written: makers
    "torch.empty_strided((2, 3), (1, 2), dtype=torch.float16)",
    "torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)",
    "torch.zeros(3, 4, dtype=torch.int32)",
    "torch.arange(12).reshape(3, 4)",
    "torch.arange(0, 1, 0.25)",
    "torch.normal(0.0, 2.0, (3, 4))",
    "torch.full([2, 3], 5, dtype=torch.int64)",
    "torch.tensor(5.0, dtype=torch.float64, device='cpu')",
    "torch.testing.make_tensor((4, 4), dtype=torch.float32, device='cpu', noncontiguous=True)",
    "torch.testing.make_tensor((2, 3, 4, 5), dtype=torch.float32, device='cpu', memory_format=torch.channels_last)",
    # views
    "torch.randn(3, 5).t()",
    "torch.randn(3, 5).T",
    "torch.randn(2, 3, 5).mT",
    "torch.randn(3, 5).transpose(0, 1)",
    "torch.randn(2, 3, 4).transpose(-1, -2)",
    "torch.randn(2, 3, 4).permute(2, 0, 1)",
    "torch.randn(4, 1).expand(4, 6)",
    "torch.randn(4).expand([3, -1])",
    "torch.randn(6).view(2, 3)",
    "torch.randn(6).view((3, 2))",
    "torch.randn(2, 6).reshape(-1, 3, 2)",
    "torch.randn(3, 5).t().reshape(15)",
    "torch.randn(6).unsqueeze(0).unsqueeze(-1)",
    "torch.randn(1, 6, 1).squeeze()",
    "torch.randn(2, 3, 4).flatten(1)",
    "torch.randn(2, 12).unflatten(1, (3, 4))",
    "torch.randn(2, 3, 4).movedim(0, -1)",
    "torch.randn(5, 6).narrow(1, 2, 3)",
    "torch.randn(5, 6).select(0, 2)",
    "torch.randn(4, 4).diagonal()",
    "torch.randn(10).unfold(0, 4, 2)",
    "torch.randn(2, 3).swapaxes(0, 1)",
    # indexing
    "torch.randn(8, 8)[:, :6]",
    "torch.randn(8, 8)[::2]",
    "torch.randn(8, 8)[1:, 2::3]",
    "torch.randn(8, 8)[0]",
    "torch.randn(8, 8)[-1, -3:]",
    "torch.randn(8, 8)[:, None]",
    "torch.randn(2, 3, 4)[..., 1:]",
    "torch.randn(4, 6).permute(1, 0)[:3]",
    # copies: a fresh layout, as torch lays it out
    "torch.randn(3, 5).t().contiguous()",
    "torch.randn(8, 8)[:, :6].contiguous()",
    "torch.randn(3, 5).t().clone()",
    "torch.randn(8, 8)[:, ::2].clone()",
    "torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)",
    "torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)",
    "torch.randn(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)",
    # dtypes and devices
    "torch.randn(2, 3).half()",
    "torch.randn(2, 3).to(torch.bfloat16)",
    "torch.randn(2, 3).to('cpu', torch.float64)",
    "torch.randn(2, 3).to(device=torch.device('cpu'), dtype=torch.float16)",
    "torch.randn(2, 3, device=torch.device('cpu')).type(torch.float16)",
    "torch.randn(2, 3).requires_grad_().detach()",
    "torch.randn(2, 3, requires_grad=True).cpu()",
    # arithmetic and comparisons (a copy: a dense result)
    "torch.randn(4, 4) * 10",
    "torch.randn(4, 4) * 10 + 1",
    "10 * torch.randn(4, 4) - 3",
    "1 - torch.rand(4)",
    "-torch.randn(3, 5).t()",
    "torch.randn(3, 5).t() / 2",
    "torch.randn(8, 8)[:, :6] * 10",
    "torch.randn(4, 1).expand(4, 6) + 1",
    "torch.randint(0, 10, (4,)) * 0.5",
    "torch.randint(0, 10, (4,)) + 1",
    "torch.randint(0, 10, (4,)) / 2",
    "torch.rand(2, 3) < 0.5",
    "0.5 > torch.rand(2, 3)",
    "torch.randn(3, 5).t() > 0",
    "torch.rand(4).mul(3).add(1)",
    "(torch.rand(8) * 100).long()",
    "(torch.rand(3, 4) < 0.9).float()",
    # in-place fills
    "torch.empty(3, 4).uniform_(-1, 1)",
    "torch.empty(3, 4).normal_(mean=2.0, std=0.5)",
    "torch.empty(5, dtype=torch.int64).random_(0, 7)",
    "torch.empty(2, 3).fill_(1.5)",
    "torch.ones(2, 3).zero_()",
]


@pytest.mark.parametrize("entry", TORCH_FORMS)
def test_entry_has_the_layout_torch_gives(entry: str):
    want = eval(entry, {"torch": torch})  # the test runs torch; the loader never does
    fd = _entry(entry)
    (x,) = fd.example_inputs(device="cpu", seed=0)
    assert _layout(x) == _layout(want), entry
    (m,) = fd.example_inputs(device="meta")
    assert tuple(m.stride()) == tuple(want.stride()) and m.storage_offset() == want.storage_offset()
    # written back and read again: the same spec, the same tensor
    again = loads_fusion(dumps_fusion(fd))
    assert again.input_specs == fd.input_specs, dumps_fusion(fd)
    (y,) = again.example_inputs(device="cpu", seed=0)
    assert _layout(y) == _layout(x) and torch.equal(y, x)


def test_values_have_the_right_kind():
    fd = _load("""inputs = [
    torch.rand(1000) * 10 + 1,
    torch.rand(1000) < 0.25,
    torch.empty(1000).uniform_(-2, 2),
    torch.arange(12).reshape(3, 4)[1:, ::2],
    torch.tensor([[1, 2], [3, 4]]).t(),
    torch.tensor([[1, 2], [3, 4]]) * 2 - 1,
    torch.randint(3, 8, (100,)) * 0.5,
    (torch.rand(100) * 100).long(),
    torch.ones(2, 3) * 4,
    torch.normal(5.0, 0.1, (1000,)),
    torch.arange(0, 1, 0.25),
]
fd.execute(inputs)
""")
    xs = fd.example_inputs(seed=1)
    assert 1 <= float(xs[0].min()) and float(xs[0].max()) < 11 and float(xs[0].std()) > 2
    assert xs[1].dtype == torch.bool and 0 < int(xs[1].sum()) < 1000
    assert -2 <= float(xs[2].min()) and float(xs[2].max()) < 2 and float(xs[2].min()) < -1
    assert xs[3].tolist() == torch.arange(12).reshape(3, 4)[1:, ::2].tolist()
    assert xs[4].tolist() == [[1, 3], [2, 4]]
    assert xs[5].tolist() == [[1, 3], [5, 7]] and xs[5].dtype == torch.int64
    assert xs[6].dtype == torch.float32 and set(xs[6].tolist()) <= {1.5, 2.0, 2.5, 3.0, 3.5}
    assert xs[7].dtype == torch.int64 and 0 <= int(xs[7].min()) and int(xs[7].max()) < 100
    assert bool((xs[8] == 4).all())
    assert abs(float(xs[9].mean()) - 5.0) < 0.05
    assert xs[10].tolist() == [0.0, 0.25, 0.5, 0.75]


def test_scalar_entries_as_nvfuser_prints_them():
    # nvFuser's repro printer writes inf and nan as float("inf"), -float("inf"), float("nan").
    fd = _load('inputs = [\n    3,\n    0.5,\n    True,\n    float("inf"),\n    -float("inf"),\n'
               '    float("nan"),\n    complex(1.0, -2.0),\n    -7,\n]\nfd.execute(inputs)\n')
    xs = fd.example_inputs()
    assert xs[:3] == [3, 0.5, True] and xs[3] == math.inf and xs[4] == -math.inf and math.isnan(xs[5])
    assert xs[6] == complex(1.0, -2.0) and xs[7] == -7
    assert "float('-inf')" in dumps_fusion(fd)


def test_names_defined_before_the_inputs_list():
    fd = _load("""torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
N = 4
shape = (2, N * 2)
dtype = torch.bfloat16
device = torch.device("cuda", 0)
eps = 1e-5
t0 = torch.randn(shape, dtype=dtype, device=device)
t1 = t0.t()
t1 = t1[:, :1]
mask = torch.rand(N, N, device=device) < 0.5
inputs = [t0, t1, mask, eps, N]
fd.execute(inputs)
""")
    xs = fd.example_inputs(seed=0)
    assert _layout(xs[0]) == ((2, 8), (8, 1), 0, torch.bfloat16)
    assert _layout(xs[1]) == ((8, 1), (1, 8), 0, torch.bfloat16)
    assert xs[2].dtype == torch.bool and xs[2].shape == (4, 4)
    assert xs[3:] == [1e-5, 4]
    assert fd.input_specs[0].device == "cuda:0"


def test_inputs_built_by_a_comprehension_a_loop_or_appends():
    fd = _load("inputs = [torch.randn(2, n) for n in range(1, 4)]\nfd.execute(inputs)\n")
    assert [tuple(x.shape) for x in fd.example_inputs()] == [(2, 1), (2, 2), (2, 3)]
    fd = _load("sizes = [4, 8]\ninputs = [torch.randn(s).half() for s in sizes]\nfd.execute(inputs)\n")
    assert [(tuple(x.shape), x.dtype) for x in fd.example_inputs()] == [((4,), torch.float16), ((8,), torch.float16)]
    fd = _load("""inputs = []
for i in range(3):
    inputs.append(torch.randn(i + 1, 2).t())
inputs.append(2.0)
inputs.extend([torch.ones(3), 1])
fd.execute(inputs)
""")
    xs = fd.example_inputs()
    assert [_layout(x)[:2] for x in xs[:3]] == [((2, 1), (1, 2)), ((2, 2), (1, 2)), ((2, 3), (1, 2))]
    assert xs[3] == 2.0 and xs[4].shape == (3,) and xs[5] == 1
    # the loop's name is gone after the loop
    with pytest.raises(FusionFileError, match=r"f.py:8: unknown name 'i'"):
        _load("inputs = []\nfor i in range(2):\n    inputs.append(torch.randn(2))\ninputs.append(torch.randn(i))\n")


def test_inputs_given_to_fd_execute_directly():
    fd = _load("fd.execute([torch.randn(2, 3, device='cuda').t(), float('inf'), torch.rand(4) < 0.5])\n")
    a, b, c = fd.example_inputs()
    assert _layout(a)[:2] == ((3, 2), (1, 3)) and b == math.inf and c.dtype == torch.bool
    fd = _load("out = fd.execute(inputs=[torch.ones(2, 2)], device='cuda:0')[0]\n")
    assert fd.example_inputs()[0].shape == (2, 2)


def test_a_const_named_list_of_numbers_is_sizes_until_executed():
    fd = _load("shape = [2, 3]\nx = torch.randn(shape)\ninputs = [x]\nfd.execute(inputs)\n")
    assert fd.example_inputs()[0].shape == (2, 3)
    fd = _load("args = [2, 3.5]\nfd.execute(args)\n")
    assert fd.example_inputs() == [2, 3.5]


def test_a_spec_with_offset_and_arithmetic_builds_and_emulates():
    """Strides and storage offsets change compilation: the compiled kernel and the
    reference agree on a sliced, transposed, scaled input."""
    text = """import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.add(T0, T1))
inputs = [torch.randn(9, 7)[1:, 2:].t(), torch.rand(5, 8) * 10 - 5]
fd.execute(inputs)
"""
    fd = loads_fusion(text)
    xs = fd.example_inputs(seed=0)
    assert _layout(xs[0]) == ((5, 8), (1, 7), 9, torch.float32)
    (ref,) = evaluate(fd.fusion, fd.example_inputs(seed=0))
    torch.testing.assert_close(ref, xs[0] + xs[1])
    require_gxx()
    (out,) = compile_fusion(fd, xs).run(xs, backend="emulate")
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("entry,message", [
    ("torch.randn(4, 4).abs()", r"f.py:6: .abs\(...\) is not supported on an inputs entry"),
    ("torch.randn(4) * torch.randn(4)", r"f.py:6: arithmetic between two tensors is not supported"),
    ("2 / torch.randn(4)", r"f.py:6: a number divided by a tensor is not supported"),
    ("torch.randn(4) ** 2", r"f.py:6: not supported in an inputs entry: torch.randn\(4\) \*\* 2"),
    ("torch.randn(4) // 2", r"f.py:6: not supported in an inputs entry"),
    ("torch.randn(4) / 0", r"f.py:6: torch.randn\(4\) / 0: division by zero"),
    ("(torch.rand(4) < 0.5) * 2", r"f.py:6: .*arithmetic on a comparison's result is not supported"),
    ("torch.randn(8)[torch.tensor([0, 1])]", r"f.py:6: an inputs entry is indexed by integers, slices, None"),
    ("torch.randn(8)[::-1]", r"f.py:6: indexing \[::-1\]: step must be greater than zero"),
    ("torch.randn(8)[9]", r"f.py:6: indexing \[9\]: index 9 is out of bounds"),
    ("torch.randn(6).view(4, -1)", r"f.py:6: .view: shape '\[4, -1\]' is invalid"),
    ("torch.randn(3, 5).t().view(15)", r"f.py:6: .view: view size is not compatible"),
    ("torch.linspace(0, 1, 5)", r"f.py:6: unsupported inputs entry torch.linspace\(0, 1, 5\) \(use"),
    ("torch.randperm(10)", r"f.py:6: unsupported inputs entry torch.randperm\(10\)"),
    ("torch.randn(3, generator=g)", r"f.py:6: randn: unknown keyword 'generator'"),
    ("torch.randn(3).random_()", r"f.py:6: .random_\(\) needs a range"),
    ("torch.randint(0, 5, (3,)).uniform_()", r"f.py:6: .uniform_: needs a floating-point tensor"),
    ("torch.tensor([[1, 2], [3, 4]])[:, :1] * 2",
     r"f.py:6: a torch.tensor\(...\) input takes no layout change \(torch.tensor"),
    ("torch.arange(6).view(2, 3).t().contiguous()", r"f.py:6: a torch.arange\(...\) input takes no layout change"),
    ("torch.randn(4).view(torch.int32).t()", r"f.py:6: .t after .view\(dtype\) is not supported"),
    ("torch.zeros_like(y)", r"f.py:6: torch.zeros_like\(x, ...\) needs an input tensor of the inputs list"),
    ("torch.device('cuda')", r"f.py:6: an inputs entry must be a torch call or a number|unsupported inputs entry"),
])
def test_unsupported_entries_are_refused_naming_the_line(entry: str, message: str):
    with pytest.raises(FusionFileError, match=message):
        _entry(entry)


def test_view_of_storage_past_the_end_is_refused():
    with pytest.raises(FusionFileError, match=r"f.py:6: as_strided: size \(2, 3\) with stride \(3, 1\) from "
                                              r"offset 5 reaches past the 10 elements"):
        _entry("torch.randn(10).as_strided((2, 3), (3, 1), 5)")


def test_spec_fields_of_the_new_forms():
    fd = _load("""inputs = [
    torch.randn(8, 8)[1:, 2:],
    torch.rand(3) * 4 - 2,
    torch.randint(0, 10, (4,)) * 0.5,
    torch.rand(2) < 0.1,
    torch.arange(2, 11, 3),
]
fd.execute(inputs)
""")
    a, b, c, d, e = fd.input_specs
    assert (a.base_shape, a.shape, a.strides, a.offset) == ((8, 8), (7, 6), (8, 1), 10)
    assert (b.kind, b.scale, b.shift, b.fill_dtype, b.dtype) == ("rand", 4, -2, torch.float32, torch.float32)
    assert (c.kind, c.scale, c.fill_dtype, c.dtype) == ("randint", 0.5, torch.int64, torch.float32)
    assert (d.compare, d.fill_dtype, d.dtype) == (("lt", 0.1), torch.float32, torch.bool)
    assert (e.kind, e.low, e.high, e.fill_value, e.shape, e.dtype) == ("arange", 2, 11, 3, (3,), torch.int64)
    text = dumps_fusion(fd)
    assert "torch.randn((8, 8), dtype=torch.float32).as_strided((7, 6), (8, 1), 10)," in text
    assert "(torch.rand((3,), dtype=torch.float32) * 4 + -2)," in text
    assert "(torch.randint(0, 10, (4,), dtype=torch.int64) * 0.5)," in text
    assert "(torch.rand((2,), dtype=torch.float32) < 0.1)," in text
    assert "torch.arange(2, 11, 3, dtype=torch.int64)," in text
    assert InputSpec(kind="empty", shape=(2,)).make().shape == (2,)
