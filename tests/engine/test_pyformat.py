"""Fusion files: reading nvFuser repros without running them, writing them back exactly."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import torch

from engine import (
    DataType,
    FusionDefinition,
    FusionFileError,
    ParallelType,
    dumps_fusion,
    load_fusion,
    loads_fusion,
    save_fusion,
)
from engine.frontend.pyformat import InputSpec

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_fusions").glob("*.py"))
SEEDS = Path("/work/shared/seeds")

SEED001_LISTING = """\
Inputs:
  T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]
Outputs:
  T4_g_float[bS10{1}, iS11{4096}, iS12{4096}]
  T6_g_float[rS15{4096}, iS16{4096}]

%kernel_math {
T1_l_float[iS3{4096}, iS4{4096}]
   = squeeze( T0_g_float[bS0{1}, iS1{4096}, iS2{4096}], flags = {true, false, false} )
T2_l_float[iS5{4096}, rS6{4096}]
   = reduction( T1_l_float[iS3{4096}, iS4{4096}], op = add, initial value = float(0), allreduce = false )
T3_l_float[bS7{1}, iS8{4096}, bS9{1}]
   = broadcast( T2_l_float[iS5{4096}, rS6{4096}], flags = {true, false, true} )
T4_g_float[bS10{1}, iS11{4096}, iS12{4096}]
   = T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]
   + T3_l_float[bS7{1}, iS8{4096}, bS9{1}];
T5_l_float[iS13{4096}, iS14{4096}]
   = squeeze( T4_g_float[bS10{1}, iS11{4096}, iS12{4096}], flags = {true, false, false} )
T6_g_float[rS15{4096}, iS16{4096}]
   = reduction( T5_l_float[iS13{4096}, iS14{4096}], op = add, initial value = float(0), allreduce = false )
} // %kernel_math """


def _text(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


# ---- samples ------------------------------------------------------------------------


def test_samples_exist():
    assert len(SAMPLES) >= 10


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_round_trip(path: Path, tmp_path: Path):
    fd = load_fusion(path)
    text = dumps_fusion(fd)
    again = loads_fusion(text, filename="dumped.py")
    assert dumps_fusion(again) == text
    assert str(again) == str(fd)
    # save/load through a file as well
    save_fusion(fd, tmp_path / "out.py")
    assert (tmp_path / "out.py").read_text() == text
    assert str(load_fusion(tmp_path / "out.py")) == str(fd)
    # the schedule is replayed: the same user-schedule calls in the same order
    assert [c.name for c in again.sched.calls] == [c.name for c in fd.sched.calls]
    if fd.input_specs:
        assert again.input_specs == fd.input_specs


def test_seed001_listing_exact():
    fd = load_fusion(ROOT / "sample_fusions" / "seed001_inner_outer_alloc.py")
    listing = str(fd).rstrip("\n")
    assert listing == SEED001_LISTING


def test_seed001_listing_matches_seed_text():
    seed = next(SEEDS.glob("001_*.txt"), None) if SEEDS.exists() else None
    if seed is None:
        pytest.skip("seed documents are not on this machine")
    text = seed.read_text()
    start = text.index("Inputs:")
    end = text.index("} // %kernel_math", start) + len("} // %kernel_math ")
    fd = load_fusion(ROOT / "sample_fusions" / "seed001_inner_outer_alloc.py")
    assert str(fd).rstrip("\n") == text[start:end]


def test_seed001_allocation_and_example_input():
    fd = load_fusion(ROOT / "sample_fusions" / "seed001_inner_outer_alloc.py")
    t0 = fd.fusion.inputs[0]
    assert [str(i) for i in t0.domain.allocation] == ["iS1{4096}", "bS0{1}", "iS2{4096}"]
    (x,) = fd.example_inputs(device="cpu", seed=0)
    assert x.shape == (1, 4096, 4096) and x.stride() == (4096, 4096, 1) and x.device.type == "cpu"


# ---- writer -------------------------------------------------------------------------


def _small_fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        t1 = fd.define_tensor(shape=[1, -1], contiguity=[None, False], dtype=DataType.Float)
        s0 = fd.define_scalar(None, dtype=DataType.Double)
        c = fd.define_scalar(0.5, dtype=DataType.Double)
        t2 = fd.ops.cast(t0, DataType.Float)
        t3 = fd.ops.mul(t2, c)
        t4 = fd.ops.add(t3, t1)
        t5 = fd.ops.mul(t4, s0)
        t6 = fd.ops.clamp(t5, -1.5, float("inf"))
        t7, t8 = fd.ops.var_mean(t6, dims=[1], correction=0, keepdim=False)
        fd.add_output(t7)
        fd.add_output(t8)
        fd.sched.parallelize(t7, 0, ParallelType.grid_x)
    return fd


def test_dumps_format_and_round_trip():
    fd = _small_fusion()
    text = dumps_fusion(fd)
    assert text.startswith("import torch\nfrom nvfuser import FusionDefinition, DataType, ParallelType\n")
    assert "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n" in text
    assert "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)\n" in text
    assert "    S2 = fd.define_scalar(None, dtype=DataType.Double)\n" in text
    assert "fd.ops.clamp(T7, -1.5, float('inf'))" in text
    assert re.search(r"\n    T\d+, T\d+ = fd\.ops\.var_mean\(T\d+, dims=\[1\], correction=0, keepdim=False\)\n", text)
    assert "    fd.sched.parallelize(T" in text and "ParallelType.grid_x)" in text
    assert "with FusionDefinition() as fd:\n    nvfuser_fusion_id0(fd)\n" in text
    assert "inputs = [" not in text  # no specs, no inputs list
    again = loads_fusion(text)
    assert dumps_fusion(again) == text
    assert str(again) == str(fd)


def test_dumps_with_inputs_makes_specs():
    fd = _small_fusion()
    x = torch.randn(3, 4).to(torch.bfloat16)
    y = torch.randn(8).as_strided((1, 4), (8, 2))  # strided: written as randn(n).as_strided
    text = dumps_fusion(fd, inputs=[x, y, 2.0])
    assert "torch.testing.make_tensor((3, 4), dtype=torch.bfloat16, device='cuda:0')," in text
    assert "torch.randn(7, dtype=torch.float32, device='cuda:0').as_strided((1, 4), (8, 2))," in text
    assert "    2.0,\n]\nfd.execute(inputs)\n" in text
    fd2 = loads_fusion(text)
    xs = fd2.example_inputs(seed=1)
    assert xs[0].shape == (3, 4) and xs[0].dtype == torch.bfloat16
    assert xs[1].shape == (1, 4) and xs[1].stride() == (8, 2)
    assert xs[2] == 2.0
    out = fd2.execute(xs)
    ref = fd.execute(xs)
    for a, b in zip(out, ref):
        torch.testing.assert_close(a, b)
    assert dumps_fusion(fd2) == text


def test_writer_refuses_values_made_outside_the_frontend():
    import engine.ops as ops

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2], dtype=DataType.Float)
        t1 = ops.neg(t0)  # builder called directly: not recorded
        fd.add_output(t1)
    with pytest.raises(FusionFileError, match="T1"):
        dumps_fusion(fd)


def test_recorded_calls_survive_mutation_of_argument_lists():
    shape = [2, 3]
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=shape, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(t0))
    shape.append(4)
    assert "shape=[2, 3]," in dumps_fusion(fd)


# ---- reader: accepted syntax ----------------------------------------------------------

NVFUSER_REPRO = _text("""
    # CUDA devices:
    #  0: NVIDIA H100 80GB HBM3
    # torch version: 2.7.0
    import torch
    from nvfuser import FusionDefinition, DataType

    def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
        T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
        S2 = fd.define_scalar(2.00000, dtype=DataType.Double)
        T3 = fd.ops.broadcast_in_dim(T1, shape=[4, 3], broadcast_dims=[1])
        T4 = fd.ops.mul(T0, S2)
        T5 = fd.ops.add(T4, T3)
        T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
        fd.add_output(T6)

    with FusionDefinition() as fd:
        nvfuser_fusion_id3(fd)

    inputs = [
        torch.testing.make_tensor((4, 3), dtype=torch.float32, device='cuda:0'),
        torch.testing.make_tensor((3,), dtype=torch.float32, device='cuda:0', low=0, high=1),
    ]
    fd.execute(inputs)
""")


def _check_repro(fd: FusionDefinition, bounded: bool = True) -> None:
    x, y = fd.example_inputs(seed=0)
    assert x.shape == (4, 3) and y.shape == (3,) and x.dtype == torch.float32
    if bounded:  # make_tensor(low=0, high=1)
        assert 0 <= float(y.min()) and float(y.max()) <= 1
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, (x * 2 + y).sum(1))


def test_nvfuser_repro_loads_and_runs():
    _check_repro(loads_fusion(NVFUSER_REPRO))


def test_nvfuser_direct_spelling():
    text = NVFUSER_REPRO.replace("from nvfuser import", "from nvfuser_direct import")
    text = re.sub(r"\bT(\d+)\b", r"tv\1", text)  # the direct frontend prints tv0, tv1, ...
    _check_repro(loads_fusion(text))


def test_module_style_names_and_aliases():
    text = _text("""
        import torch
        import nvfuser_direct as nvfd
        with nvfd.FusionDefinition() as f:
            a = f.define_tensor(shape=[4, 3], contiguity=[True, True], dtype=nvfd.DataType.Float)
            b = f.define_tensor(shape=[3], dtype=torch.float32)
            c = f.ops.broadcast_in_dim(b, shape=[4, 3], broadcast_dims=[1])
            d = f.ops.add(f.ops.mul(a, 2.0), c)
            f.add_output(f.ops.sum(d, dims=[1]))
        inputs = [torch.randn(4, 3, dtype=torch.float32, device='cuda'), torch.randn((3,))]
        out = f.execute(inputs)
    """)
    _check_repro(loads_fusion(text), bounded=False)


def test_inline_with_block_and_execute_variants():
    text = _text("""
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            t0 = fd.define_tensor([2, 3])
            t1 = fd.ops.neg(t0)
            fd.add_output(t1)
        fd.execute(inputs=[], device="cuda:1")
        fd.validate([])
    """)
    fd = loads_fusion(text)
    assert fd.input_specs is None
    assert len(fd.fusion.outputs) == 1


def test_subclass_style_with_schedule():
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType, ParallelType

        class MyFusion(FusionDefinition):
            \"\"\"A fusion with a user schedule.\"\"\"
            def definition(self):
                self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
                self.t1 = self.ops.set(self.t0)
                self.add_output(self.t1)

            def schedule(self):
                self.sched.parallelize(self.t1, 0, ParallelType.stream)

        fd = MyFusion()
        inputs = [torch.randn(2, 3, device='cuda:0')]
        fd.execute(inputs)
    """)
    fd = loads_fusion(text)
    assert "iStreamIdx" in str(fd)
    assert [c.name for c in fd.sched.calls] == ["parallelize"]
    (x,) = fd.example_inputs()
    torch.testing.assert_close(fd.execute([x])[0], x)
    # written back in function style, it reads the same
    again = loads_fusion(dumps_fusion(fd))
    assert str(again) == str(fd)


def test_pasted_function_without_block_is_built():
    text = _text("""
        def fusion_func(fd):
            t0 = fd.define_tensor(shape=[3], dtype=DataType.Half)
            fd.add_output(fd.ops.exp(t0))
    """)
    fd = loads_fusion(text)
    assert fd.fusion.inputs[0].dtype == DataType.Half


def test_literals_and_tuple_unpacking():
    text = _text("""
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            T0 = fd.define_tensor(shape=[2, 8], contiguity=[True, True], dtype=DataType.Float)
            T1, T2 = fd.ops.var_mean(T0, dims=[-1], correction=0, keepdim=True)
            T3 = fd.ops.clamp(T0, float('-inf'), 4 * 2)
            T4 = fd.ops.where(fd.ops.gt(T3, -0.5), T3, None if False else 0.0)
            fd.add_output(T4)
    """)
    with pytest.raises(FusionFileError, match=":6:"):  # IfExp is not a literal
        loads_fusion(text)
    fd = loads_fusion(text.replace("None if False else 0.0", "0.0"))
    (x,) = [torch.randn(2, 8)]
    (out,) = fd.execute([x])
    ref = torch.where(x > -0.5, x.clamp(max=8.0), torch.tensor(0.0))
    torch.testing.assert_close(out, ref)


# ---- input specs ------------------------------------------------------------------------


def test_input_specs_shapes_dtypes_strides():
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            fd.add_output(fd.define_tensor(shape=[2, 3], dtype=DataType.Float))
        inputs = [
            torch.randn(2, 3, dtype=torch.float32, device='cuda:0'),
            torch.randn(24, dtype=torch.bfloat16, device='cuda:0').as_strided((2, 3, 4), (1, 8, 2)),
            torch.randint(0, 10, (5,), dtype=torch.int32, device='cuda:0'),
            torch.randint(7, size=(2, 2)),
            torch.ones((2, 2), dtype=torch.float16),
            torch.zeros(3, dtype=torch.int64),
            torch.full((2,), 1.5, dtype=torch.float64),
            torch.tensor([0, 128, 384], dtype=torch.int32, device='cuda:0'),
            torch.testing.make_tensor((4, 16), dtype=torch.float8_e4m3fn, device='cuda:0'),
            torch.randint(0, 256, (4, 8), dtype=torch.uint8).view(torch.float4_e2m1fn_x2),
            torch.rand((3,), dtype=torch.float32),
            3,
            -2.5,
        ]
    """)
    fd = loads_fusion(text)
    specs = fd.input_specs
    assert specs[1] == InputSpec(kind="randn", shape=(2, 3, 4), dtype=torch.bfloat16, strides=(1, 8, 2),
                                 base_shape=(24,), device="cuda:0")
    xs = fd.example_inputs(device="cpu", seed=3)
    expect = [
        ((2, 3), torch.float32), ((2, 3, 4), torch.bfloat16), ((5,), torch.int32), ((2, 2), torch.int64),
        ((2, 2), torch.float16), ((3,), torch.int64), ((2,), torch.float64), ((3,), torch.int32),
        ((4, 16), torch.float8_e4m3fn), ((4, 8), torch.float4_e2m1fn_x2), ((3,), torch.float32),
    ]
    for x, (shape, dtype) in zip(xs, expect):
        assert tuple(x.shape) == shape and x.dtype == dtype and x.device.type == "cpu"
    assert xs[1].stride() == (1, 8, 2)
    assert 0 <= int(xs[2].min()) and int(xs[2].max()) < 10
    assert int(xs[3].max()) < 7
    assert bool((xs[4] == 1).all()) and bool((xs[5] == 0).all()) and bool((xs[6] == 1.5).all())
    assert xs[7].tolist() == [0, 128, 384]
    assert 0 <= float(xs[10].min()) and float(xs[10].max()) < 1
    assert xs[11] == 3 and xs[12] == -2.5
    # fresh values each time, the same for the same seed
    assert not torch.equal(fd.example_inputs()[0], fd.example_inputs()[0])
    assert torch.equal(fd.example_inputs(seed=5)[0], fd.example_inputs(seed=5)[0])
    # written back and read again: the same specs
    again = loads_fusion(dumps_fusion(fd))
    assert again.input_specs == specs
    assert dumps_fusion(again) == dumps_fusion(fd)


def test_as_strided_past_storage_is_refused():
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            fd.add_output(fd.define_tensor(shape=[2, 3], dtype=DataType.Float))
        inputs = [
            torch.randn(5, dtype=torch.float32).as_strided((2, 3), (3, 1)),
        ]
    """)
    with pytest.raises(FusionFileError, match=r":6: as_strided"):
        loads_fusion(text)


def test_repro_trailer_of_prints_and_checks_is_recognised_not_run():
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
            fd.add_output(fd.ops.neg(t0))
        inputs = [torch.randn(5, device='cuda')]
        outputs = fd.execute(inputs)
        o0, = fd.execute(inputs)
        out = outputs[0]
        print(out.shape, "done", -1)
        print(fd.last_cuda_code())
        torch.testing.assert_close(out, o0, rtol=0, atol=0)
    """)
    fd = loads_fusion(text)
    assert len(fd.fusion.outputs) == 1
    # Everything after the first run is the repro's checking code: skipped and recorded.
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == [(8, 8), (9, 9), (10, 10), (11, 11),
                                                                             (12, 12)]
    # An eager reference computed in torch is checking code too: skipped, not refused.
    fd = loads_fusion(text + "torch.testing.assert_close(out, -inputs[0].cpu())\n")
    assert str(fd.skipped_statements[-1]) == ("line 13: skipped, not evaluated (checking code after the run at "
                                              "line 7): torch.testing.assert_close(out, -inputs[0].cpu())")


def test_input_methods_give_the_strides_torch_gives():
    # Hand-written repros make strided inputs with torch methods, not as_strided.
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            fd.add_output(fd.define_tensor(shape=[2, 3], dtype=DataType.Float))
        inputs = [
            torch.randn(3, 5, device='cuda').t(),
            torch.randn(2, 3, 4).permute(2, 0, 1).half(),
            torch.randn(4, device='cuda').expand(3, -1).cuda(),
            torch.randn(2, 6, 3, 4).to(memory_format=torch.channels_last).bfloat16(),
            torch.randn(5, 2).transpose(0, 1).contiguous(),
            torch.randint(0, 4, (3,)).to('cuda:0', torch.int32),
            torch.tensor([[1, 2], [3, 4]]).t(),
        ]
    """)
    fd = loads_fusion(text)
    xs = fd.example_inputs(seed=0)
    meta = [torch.empty(3, 5).t(), torch.empty(2, 3, 4).permute(2, 0, 1), torch.empty(4).expand(3, -1),
            torch.empty(2, 6, 3, 4).to(memory_format=torch.channels_last), torch.empty(2, 5)]
    for x, m in zip(xs, meta):
        assert x.shape == m.shape and x.stride() == m.stride()
    assert [x.dtype for x in xs] == [torch.float32, torch.float16, torch.float32, torch.bfloat16, torch.float32,
                                     torch.int32, torch.int64]
    assert xs[6].tolist() == [[1, 3], [2, 4]]  # a view of torch.tensor data reads its values
    again = loads_fusion(dumps_fusion(fd))
    assert [(x.shape, x.stride(), x.dtype) for x in again.example_inputs(seed=0)] == \
        [(x.shape, x.stride(), x.dtype) for x in xs]


@pytest.mark.parametrize("entry,message", [
    ("torch.randn(2, 3, 4).t()", r":6: .t: t\(\) expects a tensor with <= 2 dimensions"),
    ("torch.tensor([[1, 2], [3, 4]]).t().contiguous()", r":6: a torch.tensor\(...\) input takes no layout"),
    ("torch.randn(2, 3).to(memory_format=torch.channels_last)", r":6: memory_format=torch.channels_last"),
    ("torch.randn(2, 3).permute(0, 1, 2)", r":6: .permute"),
    ("torch.randn(2, 3).half(1)", r":6: .half\(\) takes no arguments"),
    ("torch.randn(2, 3).to(bogus=True)", r":6: .to: unknown keyword 'bogus'"),
    ("torch.randn(2, 3).view(torch.int32).float()", r":6: .float\(...\) after .view\(dtype\)"),
])
def test_input_methods_refused_naming_the_line(entry: str, message: str):
    text = _text(f"""
        import torch
        from nvfuser import FusionDefinition, DataType
        with FusionDefinition() as fd:
            fd.add_output(fd.define_tensor(shape=[2, 3], dtype=DataType.Float))
        inputs = [
            {entry},
        ]
    """)
    with pytest.raises(FusionFileError, match=message):
        loads_fusion(text)


# ---- reader: refused files -----------------------------------------------------------------

HOSTILE = {
    "open_call": "with FusionDefinition() as fd:\n    open('{marker}', 'w')\n",
    "open_in_inputs": "inputs = [open('{marker}', 'w')]\n",
    "dunder_import": "with FusionDefinition() as fd:\n    t = __import__('os').system('touch {marker}')\n",
    "subclasses": "with FusionDefinition() as fd:\n    t = ().__class__.__bases__[0].__subclasses__()\n",
    "lambda": "with FusionDefinition() as fd:\n    t = fd.ops.add((lambda: open('{marker}', 'w'))(), 1)\n",
    "eval_in_arg": "with FusionDefinition() as fd:\n    t = fd.define_tensor(shape=eval(\"open('{marker}','w')\"))\n",
    "attribute_trick": "with FusionDefinition() as fd:\n    t = fd.ops.add.__globals__\n",
    "fd_private": "with FusionDefinition() as fd:\n    t = fd._record_call('fd', 'x', open, ('{marker}', 'w'), {{}})\n",
    "getattr_builtin": "with FusionDefinition() as fd:\n    t = getattr(fd, 'ops')\n",
    "decorator": "@open('{marker}', 'w')\nclass F(FusionDefinition):\n    pass\n",
    "for_loop": "with FusionDefinition() as fd:\n    for i in range(3):\n        open('{marker}', 'w')\n",
    "torch_save": "import torch\ninputs = [torch.save(torch.ones(1), '{marker}')]\n",
    "torch_attr_call": "import torch\nwith FusionDefinition() as fd:\n    t = fd.ops.add(torch.ops.aten.ones(1), 1)\n",
    "fstring": "with FusionDefinition() as fd:\n    t = fd.define_tensor(shape=[f\"{{open('{marker}', 'w')}}\"])\n",
    "walrus": "with FusionDefinition() as fd:\n    t = fd.define_tensor(shape=[(x := open('{marker}', 'w'))])\n",
    "comprehension": "with FusionDefinition() as fd:\n    t = fd.define_tensor(shape=[open('{marker}', 'w') for i in [1]])\n",
    "map_open": "with FusionDefinition() as fd:\n    t = list(map(open, ['{marker}'], ['w']))\n",
    "filter_lambda": "with FusionDefinition() as fd:\n    t = list(filter(lambda p: open(p, 'w'), ['{marker}']))\n",
    "sorted_key": "with FusionDefinition() as fd:\n    t = sorted(['{marker}'], key=lambda p: open(p, 'w'))\n",
    "list_method_arg": "with FusionDefinition() as fd:\n    ts = []\n    ts.append(open('{marker}', 'w'))\n",
    "generator_open": "with FusionDefinition() as fd:\n    t = list(open(p, 'w') for p in ['{marker}'])\n",
    "class_alias": "class F(FusionDefinition):\n    def definition(self):\n        fd.ops.add(open('{marker}', 'w'), 1)\n"
                   "fd = F()\n",
}


# Payloads in statements the fusion does not need: skipped unread (a file of nothing else has
# no fusion, and is refused for that).
UNREAD = {
    "assign_global": "x = open('{marker}', 'w')\n",
    "class_other_base": "class X(object):\n    def definition(self):\n        open('{marker}', 'w')\n",
    "exec": "exec(\"open('{marker}', 'w')\")\n",
    "from_os": "from os import system\nsystem('touch {marker}')\n",
    "import_os": "import os\nos.system('touch {marker}')\n",
    "top_level_call": "print(open('{marker}', 'w'))\n",
    "with_open": "with open('{marker}', 'w') as fd:\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(UNREAD))
def test_payloads_the_fusion_does_not_need_are_skipped_unread(name: str, tmp_path: Path):
    marker = tmp_path / "marker"
    body = UNREAD[name].format(marker=marker)
    head = "import torch\nfrom nvfuser import FusionDefinition, DataType\n"
    with pytest.raises(FusionFileError, match="no fusion defined"):
        loads_fusion(head + body)
    fusion = "with FusionDefinition() as fd2:\n    fd2.add_output(fd2.define_tensor(shape=[2]))\n"
    fd = loads_fusion(head + body + fusion)
    assert fd.skipped_statements and fd.skipped_statements[-1].last_line == 2 + body.count("\n")
    assert not marker.exists()
    if name == "top_level_call":  # the payload is live: run as Python, it makes the marker
        exec(compile(body, "probe", "exec"), {})  # noqa: S102
        assert marker.exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_refused_and_do_not_run(name: str, tmp_path: Path):
    marker = tmp_path / "marker"
    body = HOSTILE[name].format(marker=marker)
    text = "import torch\nfrom nvfuser import FusionDefinition, DataType\n" + body
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    with pytest.raises(FusionFileError) as info:
        load_fusion(path)
    assert info.value.path == str(path)
    assert isinstance(info.value.line, int) and info.value.line >= 3, str(info.value)
    assert re.match(rf"{re.escape(str(path))}:\d+: ", str(info.value))
    assert not marker.exists()


BAD = {
    "syntax": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2, 3]\n", None),
    "truncated": ("def f(fd : FusionDefinition) -> None :\n    t0 = fd.define_tensor(shape=[2,\n", None),
    "unknown_op": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                   "    t1 = fd.ops.frobnicate(t0)\n", 5),
    "wrong_keyword": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                      "    t1 = fd.ops.sum(t0, over=[0])\n", 5),
    "wrong_arity": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                    "    t1 = fd.ops.add(t0)\n", 5),
    "bad_dims": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                 "    t1 = fd.ops.sum(t0, dims=[3])\n", 5),
    "unknown_name": ("with FusionDefinition() as fd:\n    t1 = fd.ops.neg(t9)\n", 4),
    "unknown_dtype": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2], dtype=DataType.Float7)\n",
                      4),
    "unknown_sched": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                      "    fd.sched.launch_missiles(t0)\n", 5),
    "bad_schedule": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2])\n"
                     "    t1 = fd.ops.neg(t0)\n    fd.sched.parallelize(t1, 5, ParallelType.grid_x)\n", 6),
    "unpack_count": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[2, 2])\n"
                     "    a, b, c = fd.ops.var_mean(t0, dims=[0])\n", 5),
    "non_call_body": ("with FusionDefinition() as fd:\n    x = lambda: 3\n", 4),
    "import_numpy": ("import numpy\nwith FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[numpy.int64(2)])\n",
                     5),
    "two_fusions": ("with FusionDefinition() as fd:\n    pass\nwith FusionDefinition() as fd2:\n    pass\n", 5),
    "empty": ("", None),
    "bad_inputs_entry": ("with FusionDefinition() as fd:\n    pass\ninputs = [torch.eye(3)]\n", 5),
    "bad_spec_keyword": ("with FusionDefinition() as fd:\n    pass\ninputs = [torch.randn(3, bogus=1)]\n", 5),
    "star_args": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(*[[2]])\n", 4),
    "float_trick": ("with FusionDefinition() as fd:\n    t0 = fd.define_tensor(shape=[float('1e5')])\n", 4),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_files_name_the_line(name: str):
    body, line = BAD[name]
    text = "import torch\nfrom nvfuser import FusionDefinition, DataType, ParallelType\n" + body
    with pytest.raises(FusionFileError) as info:
        loads_fusion(text, filename="bad.py")
    msg = str(info.value)
    assert msg.startswith("bad.py")
    if line is not None:
        assert info.value.line == line, msg
        assert msg.startswith(f"bad.py:{line}: ")


def test_builder_errors_keep_their_message():
    text = "from nvfuser import FusionDefinition\nwith FusionDefinition() as fd:\n" \
           "    t0 = fd.define_tensor(shape=[2])\n    t1 = fd.ops.sum(t0, dims=[3])\n"
    with pytest.raises(FusionFileError, match=r"x\.py:4: fd\.ops\.sum: .*dim 3") as info:
        loads_fusion(text, filename="x.py")
    assert info.value.__cause__ is not None


def test_missing_file_and_binary_file(tmp_path: Path):
    with pytest.raises(FusionFileError, match="cannot read"):
        load_fusion(tmp_path / "nope.py")
    p = tmp_path / "bin.py"
    p.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(FusionFileError):
        load_fusion(p)


def test_torch_maker_imports_and_define_vector():
    text = _text("""
        import torch
        import torch.testing as tt
        from torch.testing import make_tensor
        from nvfuser import FusionDefinition, DataType

        def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
            T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
            V1 = fd.define_vector([6, 4], dtype=DataType.Int)
            T2 = fd.ops.reshape(T0, new_shape=V1)
            fd.add_output(T2)

        with FusionDefinition() as fd:
            nvfuser_fusion_id0(fd)

        inputs = [make_tensor((4, 6), dtype=torch.float32, device='cuda:0')]
        other = [tt.make_tensor((4, 6), dtype=torch.float32)]
    """)
    # a list the fusion does not read is skipped; a second `inputs` list is refused
    assert [s.first_line for s in loads_fusion(text).skipped_statements] == [16]
    with pytest.raises(FusionFileError, match=":16: a second inputs list"):
        loads_fusion(text.replace("other = [", "inputs = ["))
    fd = loads_fusion(text.replace("other = [tt.make_tensor((4, 6), dtype=torch.float32)]\n", ""))
    (x,) = fd.example_inputs()
    torch.testing.assert_close(fd.execute([x])[0], x.reshape(6, 4))
    # written back with the list inline, as the current frontend prints it
    assert "fd.ops.reshape(T0, new_shape=[6, 4])" in dumps_fusion(fd)
    # the submodule alias works as well
    only_tt = text.replace("inputs = [make_tensor((4, 6), dtype=torch.float32, device='cuda:0')]\n", "").replace(
        "other = [", "inputs = [")  # the example inputs: the list named inputs (or given to the run)
    fd = loads_fusion(only_tt)
    assert fd.input_specs == [InputSpec(kind="make_tensor", shape=(4, 6), dtype=torch.float32)]
    with pytest.raises(FusionFileError, match=r":2: 'save' is from `from torch import save` at line 1, which is not read"):
        loads_fusion("from torch import save\ninputs = [save(1)]\n")


def test_absurd_nesting_is_refused_not_crashing():
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(FusionFileError):
        loads_fusion(f"with FusionDefinition() as fd:\n    t = fd.define_tensor(shape={deep})\n")
    deep = "[" * 300 + "2" + "]" * 300
    with pytest.raises(FusionFileError):
        loads_fusion(f"with FusionDefinition() as fd:\n    t = fd.define_tensor(shape={deep})\n")


def test_pasted_script_with_named_inputs():
    """An issue-style paste: inputs bound to names and handed to fd.execute directly."""
    text = _text("""
        import torch
        from nvfuser_direct import FusionDefinition, DataType

        with FusionDefinition() as fd :
            t0 = fd.define_tensor(shape=[-1, 1, -1],
                                  contiguity=[True, None, True],
                                  dtype=DataType.Float)
            t1 = fd.define_tensor([-1, -1, -1])
            c0 = fd.define_scalar(3.0)
            t2 = fd.ops.add(t0, t1)
            t3 = fd.ops.mul(t2, c0)
            t4 = fd.ops.sum(t3, [-1], False, DataType.Float)
            fd.add_output(t4)

        input1 = torch.ones(2, 1, 8, device='cuda')
        input2 = torch.randn(size=(2, 4, 8), dtype=torch.float32, layout=torch.strided, device='cuda:0',
                             requires_grad=False)

        nvf_out = fd.execute([input1, input2])[0]
    """)
    fd = loads_fusion(text)
    a, b = fd.example_inputs(seed=0)
    assert bool((a == 1).all()) and a.shape == (2, 1, 8) and b.shape == (2, 4, 8)
    (out,) = fd.execute([a, b])
    torch.testing.assert_close(out, ((a + b) * 3).sum(-1))
    # a memory format gives the strides torch gives (channels_last needs rank 4, as in torch)
    with pytest.raises(FusionFileError, match=":16: memory_format=torch.channels_last: required rank 4"):
        loads_fusion(text.replace("layout=torch.strided", "memory_format=torch.channels_last"))


def test_user_schedule_round_trip():
    """Schedule calls (with results, dicts, enums, lists) interleaved with ops replay exactly."""
    from engine.frontend.sched import CacheOp
    from engine.ir.tensorview import MemoryType

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.exp(t0)
        c = fd.sched.cache_after(t0, cache_op=CacheOp.Streaming)
        fd.sched.set_memory_type(c, MemoryType.Shared)
        t2 = fd.ops.sum(t1, dims=[1])
        fd.add_output(t2)
        fd.sched.split(t2, 1, 32)
        fd.sched.reorder(t2, {0: 1, 1: 0})
        rf = fd.sched.rfactor(t2, [0])
        fd.sched.merge(rf, 1)
        fd.sched.parallelize(t2, 0, ParallelType.block_x)
        fd.sched.parallelize_like(t2, selected_parallel_types=[ParallelType.block_x])
        fd.sched.inline_most()
    text = dumps_fusion(fd)
    assert "fd.sched.reorder(T" in text and "{0: 1, 1: 0})" in text
    assert re.search(r"\n    T\d+ = fd\.sched\.cache_after\(T0, cache_op=CacheOp\.Streaming\)\n", text)
    assert re.search(r"\n    T\d+ = fd\.sched\.rfactor\(T\d+, \[0\]\)\n", text)
    assert "from nvfuser import FusionDefinition, DataType, CacheOp, MemoryType, ParallelType\n" in text
    # the cache is made between exp and sum, so the sum's names depend on the order kept here
    assert text.index("cache_after") < text.index("fd.ops.sum")
    again = loads_fusion(text)
    assert dumps_fusion(again) == text
    assert str(again) == str(fd)
    for a, b in zip(again.fusion.tensors(), fd.fusion.tensors()):
        assert again.sched.to_string(a) == fd.sched.to_string(b)


def test_spec_from_tensor_keeps_padded_and_broadcast_strides():
    padded = torch.randn(2, 8)[:, :3]  # strides (8, 1): storage beyond numel
    expanded = torch.randn(3, 1).expand(3, 5)  # stride 0
    for t in (padded, expanded):
        spec = InputSpec.from_tensor(t)
        x = spec.make(generator=torch.Generator().manual_seed(0))
        assert x.shape == t.shape and x.stride() == t.stride() and x.dtype == t.dtype
    direct = InputSpec(kind="randn", shape=(2, 3), dtype=torch.float32, strides=(8, 1))
    assert direct.make().stride() == (8, 1)


def test_file_schedule_call_runs_once_the_inputs_list_gives_sizes():
    from engine import load_fusion, loads_fusion

    fd = load_fusion(ROOT / "sample_fusions" / "gelu_bias.py")
    fd.sched.schedule()
    text = dumps_fusion(fd)
    again = loads_fusion(text)
    assert not again.sched.pending
    assert str(again.fusion) == str(fd.fusion) and "blockIdx.x" in str(again.fusion)
    assert dumps_fusion(again) == text


# ---- reader: plain Python in fusion bodies (list methods, builtins, from_pytorch) -------------

LIST_METHODS = _text("""
    from nvfuser import FusionDefinition, DataType
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        tvs = [fd.ops.neg(T0)]
        same = tvs
        tvs.append(fd.ops.exp(tvs[0]))
        tvs.extend([fd.ops.abs(tvs[1]), 2.0])
        tvs.insert(0, T0)
        two = tvs.pop()
        tvs.remove(T0)
        k = tvs.index(tvs[2])
        pair = (1, 2, 2)
        n = same.count(tvs[0]) + pair.count(2) + pair.index(2)
        fd.add_output(fd.ops.mul(tvs[k], two * n + len(same)))
""")


def test_list_methods_change_the_loaders_own_lists():
    """`selected.extend([c1, c5])` as nvFuser's schedule tests write it: Python's list methods
    on the loader's list (a second name bound to it sees the change, as in Python); the
    calls that read the list are recorded with its items, not the method calls."""
    fd = loads_fusion(LIST_METHODS, "lists.py")
    x = torch.randn(2, 3)
    (out,) = fd.execute([x])
    # two * n + len(same) = 2.0 * (1 + 2 + 1) + 3
    torch.testing.assert_close(out, (-x).exp().abs() * 11.0)
    text = dumps_fusion(fd)
    assert "append" not in text and "extend" not in text
    assert str(loads_fusion(text).fusion) == str(fd.fusion)


@pytest.mark.parametrize("line, why", [
    ("tvs.sort()", "lists.py:5: call not allowed: tvs.sort()"),
    ("tvs.pop(3)", "lists.py:5: tvs.pop(): pop index out of range"),
    ("tvs.remove(T0)", "lists.py:5: tvs.remove(T0): T0 is not in the list"),
    ("tvs.insert(T0, T0)", "lists.py:5: tvs.insert(): positions are integers"),
    ("tvs.append(T0, T0)", "lists.py:5: tvs.append() takes 1 argument, got 2"),
    ("tvs.append(x=T0)", "lists.py:5: tvs.append() takes no keyword arguments"),
    ("(T0, T0).append(T0)", "lists.py:5: call not allowed: (T0, T0).append(T0)"),
    ("fd.define_tensor.append(T0)", "lists.py:5: call not allowed: fd.define_tensor.append(T0)"),
    ("T0.append(T0)", "lists.py:5: call not allowed: T0.append(T0)"),
    ("for k in range(20):\n        tvs.extend(tvs)", "lists.py:6: tvs.extend(): a list in a fusion body holds at "
                                                      "most 10000 items"),
])
def test_list_methods_refused_name_the_line(line: str, why: str):
    text = LIST_METHODS.split("    tvs = [")[0] + f"    tvs = [fd.ops.neg(T0)]\n    {line}\n"
    with pytest.raises(FusionFileError) as info:
        loads_fusion(text, "lists.py")
    assert why in str(info.value)


BUILTINS = _text("""
    from nvfuser import FusionDefinition, DataType
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        negs = list(map(fd.ops.neg, (T0, T1)))
        pairs = list(zip(negs, reversed(negs)))
        sums = [fd.ops.add(a, b) for a, b in pairs if len(pairs) == 2]
        scale = sum(range(4)) + max(1, 2) - min([3, 4]) + len(sorted([3, 1, 2], reverse=True))
        flags = [any([False, True]), all(x > 0 for x in [1, 2]), len(list(filter(None, [0, 1, 2]))) == 2]
        for k, t in enumerate(sums):
            fd.add_output(fd.ops.mul(t, scale + k + flags.count(True) + len(tuple(map(len, [[1], [2]])))))
""")


def test_pure_builtins_over_plain_values():
    """list, tuple, len, range, enumerate, zip, reversed, sorted, min, max, sum, any, all,
    filter and map, run by the loader on the values it holds; map() and filter() call a
    frontend function (recorded like a direct call) or one of these builtins."""
    fd = loads_fusion(BUILTINS, "builtins.py")
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    a, b = fd.execute([x, y])
    # scale = 6 + 2 - 3 + 3 = 8; + k + 3 true flags + 2
    torch.testing.assert_close(a, (-x + -y) * 13.0)
    torch.testing.assert_close(b, (-y + -x) * 14.0)
    text = dumps_fusion(fd)
    assert text.count("fd.ops.neg(") == 2 and "map" not in text
    assert str(loads_fusion(text).fusion) == str(fd.fusion)


def test_filter_over_schedule_tensors_and_rfactor_comprehension():
    """nvFuser's test_var_mean_user_schedule: list(filter(self.sched.is_reduction,
    self.sched.tensors())) then an rfactor per reduction in a list comprehension, with
    `fd.sched` (the module's name of the instance) in schedule()."""
    text = _text("""
        import torch
        from nvfuser import FusionDefinition, DataType, ParallelType

        class RowSum(FusionDefinition):
            def definition(self):
                self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
                self.t1 = self.ops.sum(self.t0, dims=[-1])
                self.add_output(self.t1)

            def schedule(self):
                fd.sched.split(self.t1, dim=-1, factor=4)
                reductions = list(filter(self.sched.is_reduction, self.sched.tensors()))
                rfactors = [fd.sched.rfactor(t, dims=[-1]) for t in reductions]
                self.sched.parallelize(rfactors[0], -1, ParallelType.block_x)

        fd = RowSum()
        inputs = [torch.randn(3, 16, device='cuda')]
        fd.execute(inputs)
    """)
    fd = loads_fusion(text)
    assert [c.name for c in fd.sched.calls] == ["split", "rfactor", "parallelize"]
    (x,) = fd.example_inputs(seed=0)
    torch.testing.assert_close(fd.execute([x])[0], x.sum(-1))
    again = loads_fusion(dumps_fusion(fd))
    assert str(again) == str(fd)


FROM_PYTORCH = _text("""
    import torch
    from nvfuser import FusionDefinition, DataType

    inputs = [
        torch.randn(4, 1, 8, dtype=torch.float16, device='cuda'),
        torch.randn(8, 4, device='cuda:0').as_strided((4, 8), (1, 4)),
        torch.tensor(2.0, device='cpu'),
    ]

    class Scale(FusionDefinition):
        def definition(self):
            t0 = self.from_pytorch(inputs[0])
            t1 = self.from_pytorch(inputs[1], static_sizes=True)
            s = self.from_pytorch(tensor=inputs[-1])
            self.add_output(self.ops.mul(self.ops.cast(t0, DataType.Float), s))
            self.add_output(self.ops.add(t1, 1.0))

    fd = Scale()
    fd.execute(inputs)
""")


def test_from_pytorch_defines_inputs_like_the_example_tensors():
    """fd.from_pytorch(tensor, static_sizes=False): rank, dtype and strides of the inputs
    list's entry (read from its spec, never made), sizes symbolic unless static_sizes, a
    0-dim CPU tensor a CPU scalar; written back as nvFuser makes it, define_tensor(sizes=,
    strides=)."""
    fd = loads_fusion(FROM_PYTORCH, "from_pytorch.py")
    t0, t1, s = fd.fusion.inputs
    assert t0.dtype == DataType.Half and t1.dtype == DataType.Float and s.ndim == 0
    assert [i.extent.value for i in t0.domain.logical] == [None, 1, None]  # symbolic, broadcast, symbolic
    assert [i.extent.value for i in t1.domain.logical] == [4, 8]  # static_sizes=True
    assert t1.domain.allocation is not None  # column-major: a stride order
    xs = fd.example_inputs(seed=0)
    assert xs[1].stride() == (1, 4)
    a, b = fd.execute(xs)
    torch.testing.assert_close(a, xs[0].float() * 2.0 if False else xs[0].float() * xs[2])
    torch.testing.assert_close(b, xs[1] + 1.0)
    text = dumps_fusion(fd)
    assert "fd.define_tensor(sizes=[4, 1, 8], strides=[8, 8, 1], dtype=DataType.Half)" in text
    assert "static_sizes=True" in text and "is_cpu=True" in text
    assert str(loads_fusion(text).fusion) == str(fd.fusion)


@pytest.mark.parametrize("change, why", [
    # the inputs list below the fusion: the loader builds the fusion where the file creates it
    (lambda t: t.replace("inputs = [", "early = [").replace("fd.execute(inputs)", "inputs = [1.0]"),
     "from_pytorch.py:12: unknown name 'inputs' (assigned at line 19, after the fusion is built at line 18; "
     "assign it above)"),
    (lambda t: t.replace("device='cuda')", ")"),
     "from_pytorch.py:12: self.from_pytorch: found unsupported device cpu, only scalar CPU or CUDA tensors"),
    (lambda t: t.replace("torch.tensor(2.0, device='cpu')", "2.0"),
     "from_pytorch.py:14: self.from_pytorch: takes an example tensor of the file's inputs list"),
    (lambda t: t.replace("static_sizes=True", "static_sizes=1"),
     "from_pytorch.py:13: self.from_pytorch: static_sizes must be True or False"),
    (lambda t: t.replace("inputs[1], static_sizes=True", "inputs[1], True, 3"),
     "from_pytorch.py:13: self.from_pytorch(tensor, static_sizes=False): wrong arguments"),
    (lambda t: t.replace("self.ops.add(t1, 1.0)", "self.ops.add(inputs[0], 1.0)"),
     "from_pytorch.py:16: self.ops.add: an example input of the inputs list is only read by from_pytorch"),
    (lambda t: t.replace("self.ops.add(t1, 1.0)", "inputs[0] + 1.0"),
     "from_pytorch.py:16: inputs[0] + 1.0 (self.ops.add): an example input"),
])
def test_from_pytorch_refusals_name_the_line(change, why: str):
    with pytest.raises(FusionFileError) as info:
        loads_fusion(change(FROM_PYTORCH), "from_pytorch.py")
    assert why in str(info.value)


def test_from_pytorch_in_a_with_block():
    text = _text("""
        import torch
        from nvfuser import FusionDefinition
        x = torch.randn(2, 3, device='cuda')
        with FusionDefinition() as fd:
            T0 = fd.from_pytorch(x)
            fd.add_output(fd.ops.neg(T0))
        fd.execute([x])
    """)
    fd = loads_fusion(text)
    (x,) = fd.example_inputs(seed=0)
    torch.testing.assert_close(fd.execute([x])[0], -x)


BODY = "import torch\nfrom nvfuser import FusionDefinition, DataType\nwith FusionDefinition() as fd:\n" \
       "    T0 = fd.define_tensor(shape=[2, 3], dtype=DataType.Float)\n    S1 = fd.define_scalar(2.0)\n"


@pytest.mark.parametrize("line, why", [
    ("t = open('x', 'w')", "body.py:6: call not allowed: open('x', 'w')"),
    ("t = __import__('os')", "body.py:6: name '__import__' is not allowed"),
    ("t = getattr(fd, 'ops')", "body.py:6: call not allowed: getattr(fd, 'ops')"),
    ("t = round(1.5)", "body.py:6: call not allowed: round(1.5)"),
    ("t = list(map(open, ['x']))", "body.py:6: map() and filter() take fd.ops.X, fd.sched.X"),
    ("t = list(map(lambda p: p, [1]))", "body.py:6: map() and filter() take"),
    ("t = list(map(T0.size, [0]))", "body.py:6: map() and filter() take"),
    ("t = sorted([3, 1], key=abs)", "body.py:6: sorted() takes no keyword 'key' here"),
    ("t = sorted([T0, T0])", "body.py:6: sorted() takes numbers or strings"),
    ("t = sum([S1, S1])", "body.py:6: sum() takes numbers"),
    ("t = max(T0, T0)", "body.py:6: max() takes numbers or strings"),
    ("t = any([T0])", "body.py:6: any([T0]): a condition must be a bool or a number, got TensorView"),
    ("t = list(T0)", "body.py:6: list(T0): expected a list, a tuple, range(...) or an iterator, got TensorView"),
    ("t = len(T0)", "body.py:6: len() of a TensorView"),
    ("t = list(range(20000))", "body.py:6: range(20000) runs more than 10000 times"),
    ("t = range(-9223372036854775807, 9223372036854775807)", "body.py:6: range(-9223372036854775807, "
                                                               "9223372036854775807) runs more than 10000 times"),
    ("t = enumerate()", "body.py:6: enumerate() takes 1 argument and start=: enumerate()"),
    ("t = min()", "body.py:6: min() takes at least 1 argument: min()"),
    ("t = [fd.ops.neg(T0) for k in range(9000) for j in range(2)]", "body.py:6: loops run more than 10000"),
    ("t = [t for t in [T0] if t]", "body.py:6: t: a condition must be a bool or a number"),
    ("t = fd.ops.cat(map(fd.ops.neg, [T0]), dim=0)", "body.py:6: fd.ops.cat: pass a list, not an iterator"),
    ("list = [1]\n    t = list([2])", "body.py:7: call not allowed: list([2])"),
    ("t = {k: 1 for k in [1]}", "body.py:6: DictComp expression is not allowed"),
    ("g = (list(g) for k in [1])\n    t = list(g)", "body.py:6: a generator expression reads itself"),
])
def test_what_a_body_still_may_not_call_is_refused(line: str, why: str):
    with pytest.raises(FusionFileError) as info:
        loads_fusion(BODY + f"    {line}\n", "body.py")
    assert why in str(info.value)


def test_comprehension_names_stay_local_and_generators_are_lazy():
    """A comprehension's loop name does not leak into the body (Python 3), a `:=` inside it
    binds the body's name, and a generator expression runs its calls only when consumed
    (any() stops at the first true item, as in Python)."""
    text = BODY + (
        "    t = 7\n"
        "    tvs = [fd.ops.neg(T0) for t in [1, 2]]\n"
        "    found = any((n := k) > 1 for k in [1, 2, 3, 4])\n"
        "    lazy = (fd.ops.exp(T0) for k in [1, 2])\n"
        "    fd.add_output(fd.ops.mul(tvs[1], t + n + found))\n"
    )
    fd = loads_fusion(text, "body.py")
    x = torch.randn(2, 3)
    # t is still 7; any() stopped at k == 2, so n == 2; found is True; exp never ran
    torch.testing.assert_close(fd.execute([x])[0], -x * 10.0)
    assert "exp" not in dumps_fusion(fd)
    consumed = loads_fusion(text.replace("t + n + found))", "t + n + found))\n    fd.add_output(list(lazy)[1])"),
                            "body.py")
    assert dumps_fusion(consumed).count("fd.ops.exp(") == 2
    with pytest.raises(FusionFileError, match=r"body.py:8: any\(.*\): a condition must be a bool or a number, got TensorView"):
        loads_fusion(text.replace("(n := k) > 1", "fd.ops.exp(T0) == T0"), "body.py")


# ---- reader: the repro's checking code after the run ----------------------------------------

TRAILER_HEAD = _text("""
    import torch
    from nvfuser import FusionDefinition, DataType

    def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(T0, T1))

    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)

    inputs = [torch.randn(4, 8, device='cuda'), torch.randn(4, 8, device='cuda')]
    out = fd.execute(inputs)
""")  # the run is line 13; the trailer starts at line 14


@pytest.mark.parametrize("trailer, lines", [
    ("ref = inputs[0] + inputs[1]\ntorch.testing.assert_close(out[0], ref, atol=1e-5, rtol=1e-5)\n",
     [(14, 14), (15, 15)]),
    ("import numpy as np\nnp.testing.assert_allclose(out[0].cpu().numpy(), (inputs[0] + inputs[1]).cpu().numpy())\n",
     [(14, 14), (15, 15)]),
    ("import time; t = time.perf_counter()\nfrom time import perf_counter as pc\n", [(14, 14), (14, 14), (15, 15)]),
    ("for _ in range(3):\n    torch.cuda.synchronize()\n    out = fd.execute(inputs)\n", [(14, 16)]),
    ("with torch.no_grad():\n    ref = torch.add(*inputs)\nprint((out[0] - ref).abs().max().item())\n",
     [(14, 15), (16, 16)]),
    ("if out[0].isnan().any():\n    raise RuntimeError('nan')\n", [(14, 15)]),
    ("try:\n    fd.validate(inputs, [inputs[0] + inputs[1]])\nexcept AssertionError as e:\n    print(e)\n",
     [(14, 17)]),
    ("def bench(fn, n=10):\n    return [fn() for _ in range(n)]\nbench(lambda: fd.execute(inputs))\n",
     [(14, 15), (16, 16)]),
    ("print(fd.last_cuda_code())\nprint(fd)\nprint(fd.repro_script_for(inputs))\n", [(14, 14), (15, 15), (16, 16)]),
    ("out = [o.float() for o in out]\nout[0] += 1\ndel out\n", [(14, 14), (15, 15), (16, 16)]),
    ("x = inputs[0].clone()\ninputs[0].copy_(x)\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
     [(14, 14), (15, 15), (16, 16)]),
    ("fd.execute([inputs[0].half(), inputs[1]])\nassert torch.allclose(out[0], sum(inputs))\n", [(14, 14), (15, 15)]),
    ('"""A docstring-like note."""\npass\n', []),
])
def test_checking_code_after_the_run_is_skipped_and_recorded(trailer: str, lines: list[tuple[int, int]]):
    fd = loads_fusion(TRAILER_HEAD + trailer, "repro.py")
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == lines
    assert all("checking code after the run at line 13" in s.reason for s in fd.skipped_statements)
    assert dumps_fusion(fd) == dumps_fusion(loads_fusion(TRAILER_HEAD, "repro.py"))  # the same fusion
    assert len(fd.input_specs) == 2


@pytest.mark.parametrize("trailer, why", [
    # what defines, builds or changes the fusion is read as before, and refused
    ("fd.sched.split(out, 0, 4)\n", "repro.py:14: statement is not allowed: fd.sched.split(out, 0, 4) (not skipped "
                                    "as checking code after the run at line 13: it uses 'fd'"),
    ("fd.add_output(out)\n", "repro.py:14: statement is not allowed"),
    ("T2 = fd.ops.neg(inputs[0])\n", "repro.py:14: assignment to 'T2' is not allowed"),
    ("nvfuser_fusion_id0(fd)\n", "repro.py:14: call nvfuser_fusion_id0(fd) inside `with FusionDefinition() as fd:`"),
    ("with FusionDefinition() as fd2:\n    nvfuser_fusion_id0(fd2)\n",
     "repro.py:14: a second fusion; this file already defined one at line 9 (not skipped as checking code after the "
     "run at line 13: it uses 'FusionDefinition'"),
    ("fd2 = FusionDefinition()\n", "repro.py:14: a second fusion"),
    ("print(fd.fusion, fd.ops.neg(out))\n", "repro.py:14: print(...) may only show names and literals"),
    ("fusion = fd\n", "it uses 'fd'"),
    # what rebinds the fusion's names, torch, the inputs list or an input the run named
    ("inputs = [torch.randn(4, 8)]\n", "repro.py:14: a second inputs list ('inputs') (not skipped as checking code "
                                       "after the run at line 13: it rebinds 'inputs'"),
    ("inputs[0] = torch.randn(4, 8)\n", "repro.py:14: only `inputs = [...]`"),
    ("torch = None\n", "repro.py:14: assignment to 'torch' is not allowed"),
    ("import numpy as torch\n", "repro.py:14: import numpy is not allowed: only torch, nvfuser and math are read, "
                                "and it would rebind 'torch' (not skipped as checking code after the run at line 13: "
                                "it rebinds 'torch'"),
    ("from numpy import *\n", "a * import may rebind the names the fusion uses"),
    ("for inputs in [[1.0]]:\n    pass\n", "repro.py:14: a top-level for loop may only repeat fd.execute(inputs)"),
    ("DataType = None\n", "it rebinds 'DataType'"),
    # what Python cannot parse, or names a dunder, anywhere in the file
    ("print(out[0]\n", "repro.py:14: not valid Python"),
    ("print(out.__class__)\n", "repro.py:14: name '__class__' is not allowed"),
])
def test_what_changes_the_fusion_after_the_run_is_still_refused(trailer: str, why: str):
    with pytest.raises(FusionFileError) as info:
        loads_fusion(TRAILER_HEAD + trailer, "repro.py")
    assert why in str(info.value)


@pytest.mark.parametrize("before", [
    # what uses the inputs the run reads is read before the run, and refused
    "torch.testing.assert_close(inputs[0], inputs[0] * 1)\n",
    "ref = inputs[0] + inputs[1]\n",
    "inputs[0].unsqueeze_(0)\n",
])
def test_checking_code_before_the_run_is_still_refused(before: str):
    text = TRAILER_HEAD.replace("out = fd.execute(inputs)\n", before + "out = fd.execute(inputs)\n")
    with pytest.raises(FusionFileError, match=r"repro.py:13: "):
        loads_fusion(text, "repro.py")


@pytest.mark.parametrize("before", [
    # after the inputs list nothing reads torch again; numpy is never read
    "torch.cuda.synchronize()\n",
    "import numpy as np\n",
    "start = time.perf_counter()\n",
])
def test_what_the_run_does_not_read_is_skipped_before_it(before: str):
    text = TRAILER_HEAD.replace("out = fd.execute(inputs)\n", before + "out = fd.execute(inputs)\n")
    fd = loads_fusion(text, "repro.py")
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == [(13, 13)]
    assert fd.skipped_statements[0].reason.startswith("skipped, not ")


def test_without_a_run_what_the_fusion_does_not_need_is_skipped():
    # no run: a print of a report is recognised; what the fusion does not need is skipped
    text = TRAILER_HEAD.replace("out = fd.execute(inputs)\n", "print(fd.last_cuda_code())\n")
    assert loads_fusion(text).skipped_statements == []
    skipped = loads_fusion(text + "torch.cuda.synchronize()\n").skipped_statements
    assert [(s.first_line, s.reason) for s in skipped] == [
        (14, "skipped, not evaluated (not used by the fusion): torch.cuda.synchronize()")]
    with pytest.raises(FusionFileError, match=r":14: statement is not allowed"):
        loads_fusion(text + "fd.sched.split(fd.fusion.outputs[0], 0, 2)\n")


def test_a_later_run_gives_the_inputs_when_the_first_did_not():
    # `fd.execute(xs)` names no inputs the loader knows; a later run's literal list is read as before
    text = TRAILER_HEAD.replace("inputs = [torch.randn(4, 8, device='cuda'), torch.randn(4, 8, device='cuda')]\n",
                                "x = torch.randn(2, 3)\ny = torch.randn(2, 3)\n").replace("execute(inputs)", "execute(xs)")
    fd = loads_fusion(text + "print(out)\nout = fd.execute([x, y])\nprint(out)\n")
    assert [s.shape for s in fd.input_specs] == [(2, 3), (2, 3)]
    assert [s.first_line for s in fd.skipped_statements] == [15, 17]
    assert fd.execute(fd.example_inputs(seed=0))[0].shape == (2, 3)


def test_a_fusion_built_in_python_skipped_nothing():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(shape=[2], dtype=DataType.Float)))
    assert fd.skipped_statements == []
