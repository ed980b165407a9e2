"""The ordinary shapes of nvFuser repro scripts that load_fusion reads (never runs): a main
guard, helper functions, fusion functions with more parameters, pytest and unittest test
bodies (self.exec_nvfuser included), harmless imports and math, the legacy body without a
with block, and a script without an inputs list, whose example inputs come from the
definition and `sizes`. What is not read is recorded as skipped; hostile code in any of
these shapes is refused or skipped, and never runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, dumps_fusion, load_fusion, loads_fusion
from engine.errors import FusionDefinitionError, FusionFileError

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"
HEAD = "import torch\nfrom nvfuser import FusionDefinition, DataType\n"  # lines 1-2
# A fusion and its run, as top-level lines (indented by `_indent` for other shapes).
BODY = """\
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.sum(T0, dims=[1])
    fd.add_output(T1)
inputs = [torch.randn(3, 5)]
out = fd.execute(inputs)
"""


def _load(text: str) -> FusionDefinition:
    return loads_fusion(textwrap.dedent(text), "s.py")


def _indent(text: str, by: str = "    ") -> str:
    return textwrap.indent(text, by)


def _lines(fd: FusionDefinition) -> list[tuple[int, int]]:
    return [(s.first_line, s.last_line) for s in fd.skipped_statements]


def _same_fusion(fd: FusionDefinition) -> None:
    assert dumps_fusion(fd) == dumps_fusion(loads_fusion(HEAD + BODY))


# ---- 1. the main guard ------------------------------------------------------------------------
def test_a_main_guard_body_is_read_as_the_script() -> None:
    fd = loads_fusion(HEAD + 'if __name__ == "__main__":\n' + _indent(BODY) + "    print(out)\n", "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(10, 10)] and "checking code after the run at line 9" in fd.skipped_statements[0].reason
    # either order, and its else (run only on import) is skipped
    fd = loads_fusion(HEAD + "if '__main__' == __name__:\n" + _indent(BODY) + "else:\n    import os\n", "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(11, 11)] and "the else branch" in fd.skipped_statements[0].reason


def test_a_cuda_availability_guard_is_read_as_on_a_gpu_machine() -> None:
    fd = loads_fusion(HEAD + "if torch.cuda.is_available():\n" + _indent(BODY) + "else:\n    import os\n", "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(11, 11)] and "taken without a GPU" in fd.skipped_statements[0].reason
    # negated: the body is what runs without a GPU; nested in a main guard
    text = (HEAD + 'if __name__ == "__main__":\n    if not torch.cuda.is_available():\n        import sys\n'
            "    else:\n" + _indent(_indent(BODY)))
    fd = loads_fusion(text, "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(5, 5)] and "taken without a GPU" in fd.skipped_statements[0].reason


def test_the_main_guard_is_the_only_dunder_a_file_may_spell() -> None:
    for text in ('if __name__ == "__main__":\n    print(__name__)\n' + _indent(BODY),
                 'if __name__ == "__main__":\n' + _indent(BODY) + "    x = inputs.__class__\n",
                 'if __name__ != "__main__":\n    pass\n', 'if __file__ == "__main__":\n    pass\n'):
        with pytest.raises(FusionFileError, match="is not allowed in a fusion file"):
            loads_fusion(HEAD + text)


def test_a_main_function_called_from_the_guard_is_read_there() -> None:
    text = HEAD + "N = 5\ndef main():\n" + _indent(BODY.replace("randn(3, 5)", "randn(3, N)")) + \
        'if __name__ == "__main__":\n    main()\n'
    fd = loads_fusion(text)
    assert fd.input_specs[0].shape == (3, 5) and fd.skipped_statements == []


# ---- 2. helper functions ----------------------------------------------------------------------
def test_helper_functions_are_skipped_unless_the_fusion_uses_them() -> None:
    helper = "def clearL2Cache():\n    x = torch.empty(1 << 20)\n    x.zero_()\n"  # lines 3-5
    fd = loads_fusion(HEAD + helper + BODY + "clearL2Cache()\n", "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(3, 5), (12, 12)]
    assert fd.skipped_statements[0].reason.startswith("skipped, not evaluated (a function that does not take "
                                                      "the FusionDefinition")
    used = BODY.replace("dims=[1]", "dims=[clearL2Cache()]")
    with pytest.raises(FusionFileError, match=r"s.py:8: 'clearL2Cache' is the function defined at line 3, "
                                              "which does not take the FusionDefinition and is not read"):
        loads_fusion(HEAD + helper + used, "s.py")


# ---- 3. fusion functions with other names and parameters ---------------------------------------
FUNC = """\
def fusion_func(fd: FusionDefinition, eps, n, scale=2.0):
    T0 = fd.define_tensor(shape=[-1, n], contiguity=[True, True], dtype=DataType.Float)
    S1 = fd.define_scalar(eps, dtype=DataType.Double)
    T2 = fd.ops.mul(fd.ops.add(T0, S1), scale)
    fd.add_output(T2)
"""


@pytest.mark.parametrize("call, n, scale", [
    ("fusion_func(fd, 1e-5, 4)", 4, 2.0),
    ("fusion_func(fd, 1e-5, n=6, scale=0.5)", 6, 0.5),
    ("fusion_func(fd, EPS, N)", 8, 2.0),
])
def test_a_fusion_function_takes_more_parameters_from_its_call(call: str, n: int, scale: float) -> None:
    fd = loads_fusion(HEAD + "EPS, N = 1e-5, 8\n" + FUNC + f"with FusionDefinition() as fd:\n    {call}\n")
    assert fd.fusion.inputs[0].domain.logical[1].extent.value == n
    x = torch.randn(2, n)
    torch.testing.assert_close(fd.execute([x])[0], (x + 1e-5) * scale)


def test_a_fusion_function_missing_a_value_names_it() -> None:
    with pytest.raises(FusionFileError, match=r"s.py:9: fusion_func: no value for n"):
        loads_fusion(HEAD + FUNC + "with FusionDefinition() as fd:\n    fusion_func(fd, 1e-5)\n", "s.py")
    with pytest.raises(FusionFileError, match=r"s.py:3: fusion function 'fusion_func' takes eps, n: call it"):
        loads_fusion(HEAD + FUNC, "s.py")  # built when the file ends, nothing gives eps and n
    # with defaults for them all, the pasted function alone is built
    fd = loads_fusion(HEAD + FUNC.replace("eps, n,", "eps=1e-5, n=3,"))
    assert fd.fusion.inputs[0].domain.logical[1].extent.value == 3


# ---- 3. test functions and methods ------------------------------------------------------------
def test_a_pytest_function_body_is_read_and_other_tests_skipped() -> None:
    text = ("import pytest\nimport torch\nfrom nvfuser_direct import FusionDefinition, DataType\n"  # 1-3
            "def test_other(nvfuser_direct_test):\n    x = 1\n"  # 4-5: builds no fusion
            "def test_first(nvfuser_direct_test):\n" + _indent(BODY)  # 6-12
            + "    nvfuser_direct_test.assertEqual(out[0], inputs[0].sum(1))\n"  # 13
            "def test_second(nvfuser_direct_test):\n    with FusionDefinition() as fd:\n        pass\n")  # 14-16
    fd = loads_fusion(text)
    _same_fusion(fd)
    assert [(s.first_line, s.last_line, s.reason.split(":")[0]) for s in fd.skipped_statements] == [
        (1, 1, "skipped, not imported (only torch, nvfuser and math are read; pytest is not)"),
        (4, 5, "skipped, not evaluated (a function that does not take the FusionDefinition, not used by the fusion)"),
        (13, 13, "skipped, not evaluated (checking code after the run at line 12)"),
        (14, 16, "skipped, not evaluated (another test; the fusion is read from test_first at line 6)"),
    ]
    # the fixture is a name the file does not give: using it where the fusion is read is refused
    with pytest.raises(FusionFileError, match=r":4: 'nvfuser_direct_test' is a parameter of test_first \(line 1\)"):
        loads_fusion("def test_first(nvfuser_direct_test):\n"
                     + _indent(BODY.replace("dims=[1]", "dims=[nvfuser_direct_test]")))


def test_a_unittest_method_with_exec_nvfuser_is_read_as_the_block_and_run() -> None:
    fd = _load("""\
        import torch
        from nvfuser import FusionDefinition, DataType
        from nvfuser.testing.utils import NVFuserTest

        class TestRepro(NVFuserTest):
            def setUp(self):
                super().setUp()

            def test_issue(self):
                inputs = [torch.randn(3, 5)]

                def fusion_func(fd: FusionDefinition) -> None:
                    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
                    T1 = fd.ops.sum(T0, dims=[1])
                    fd.add_output(T1)

                nvf_out, _ = self.exec_nvfuser(fusion_func, inputs, new_fusion_expected=None, validate=True)
                self.assertEqual(nvf_out[0], inputs[0].sum(1))
    """)
    _same_fusion(fd)
    assert _lines(fd) == [(5, 5), (6, 7), (17, 17), (18, 18)]
    assert fd.skipped_statements[2].reason == ("skipped, not evaluated (the arguments of exec_nvfuser after the fusion "
                                               "function and its inputs): new_fusion_expected=None, validate=True")
    assert "only the body of test_issue is read" in fd.skipped_statements[0].reason


def test_the_first_of_several_tests_that_builds_a_fusion_is_read() -> None:
    fd = loads_fusion(HEAD + "def test_a(self):\n    with FusionDefinition() as fd:\n"  # 3-4
                      "        T0 = fd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Half)\n"
                      "        fd.add_output(T0)\n"  # 5-6
                      "def test_b(self):\n" + _indent(BODY))  # 7-13
    assert fd.fusion.inputs[0].dtype == DataType.Half and fd.input_specs is None
    assert _lines(fd) == [(7, 13)]


# ---- 4. imports and math ----------------------------------------------------------------------
def test_harmless_imports_are_skipped_and_their_names_opaque() -> None:
    head = ("import time, itertools\nimport numpy as np\nfrom functools import partial\n"
            "import torch.nn.functional as F\nfrom direct_fusion_definition import FusionDefinition\n")  # 1-5
    head += "import torch\n"  # line 6
    fd = loads_fusion(head + "from nvfuser import DataType\n" + BODY, "s.py")
    _same_fusion(fd)
    assert _lines(fd) == [(1, 1), (2, 2), (3, 3), (4, 4)]  # FusionDefinition: nvFuser's, from any module
    assert fd.skipped_statements[0].reason == ("skipped, not imported (only torch, nvfuser and math are read; time, "
                                               "itertools is not): import time, itertools")
    for use, name in (("dims=[np.int64(1)]", "np"), ("dims=[F.dim]", "F"), ("dims=list(partial(1))", "partial")):
        with pytest.raises(FusionFileError, match=rf"s.py:10: '{name}' is from `.*` at line \d, which is not read"):
            loads_fusion(head + "from nvfuser import DataType\n" + BODY.replace("dims=[1]", use), "s.py")
    # an import may not rebind what the loader reads, nor star-import unknown names
    with pytest.raises(FusionFileError, match=r":3: import numpy is not allowed: .* would rebind 'torch'"):
        loads_fusion(HEAD + "import numpy as torch\n" + BODY)
    with pytest.raises(FusionFileError, match=r"from numpy import \* is not allowed"):
        loads_fusion("from numpy import *\n" + HEAD + BODY)


def test_math_evaluates_in_the_fusion_and_the_inputs() -> None:
    fd = loads_fusion(HEAD + "import math\nfrom math import sqrt, pi as PI\nK = math.prod([2, 3])\n" + """\
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, math.ceil(K / 4)], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.mul(T0, math.sqrt(2.0 / math.pi) + sqrt(4) + PI + math.log(math.e) + math.inf * 0 + math.fabs(-1))
    fd.add_output(T1)
inputs = [torch.randn(K, math.isqrt(4))]
""")
    assert fd.input_specs[0].shape == (6, 2)
    assert fd.fusion.inputs[0].domain.logical[1].extent.value == 2
    for bad, why in (("math.sqrt(-1)", "math domain error"), ("math.factorial(5)", "call not allowed: math.factorial"),
                     ("math.pow(10, 400)", "math range error"), ("math.prod([1099511627776] * 2)", "64 bits"),
                     ("math.sqrt(T0)", "takes numbers"), ("math.tau2", "not a constant")):
        with pytest.raises(FusionFileError, match=why):
            loads_fusion(HEAD + f"import math\nwith FusionDefinition() as fd:\n    T0 = fd.define_tensor(shape=[2])\n"
                                f"    T1 = fd.ops.mul(T0, {bad})\n")


# ---- 5. the legacy body without a with block -----------------------------------------------------
LEGACY = """\
fd = FusionDefinition()
T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
c0 = fd.define_constant(3.0)
T1 = fd.ops.view(T0, original_shape=[2, 6], new_shape=[3, 4])
T2 = fd.ops.broadcast_in_dim(fd.ops.mul(T1, c0), output_shape=[2, 3, 4], broadcast_dims=[1, 2])
fd.add_output(T2)
"""


def _legacy_check(fd: FusionDefinition) -> None:
    x = torch.randn(2, 6)
    torch.testing.assert_close(fd.execute([x])[0], (x.view(3, 4) * 3).expand(2, 3, 4))


@pytest.mark.parametrize("text", [
    LEGACY,
    LEGACY.replace("fd = FusionDefinition()\n", "fd = FusionDefinition()\nwith fd:\n    pass\n"),
    LEGACY.replace("fd = FusionDefinition()\n", "fd = FusionDefinition()\nwith fd:\n", 1).replace("\nT", "\n    T")
    .replace("\nc0", "\n    c0").replace("\nfd.add", "\n    fd.add"),
    # an unrelated statement between the definition lines: the blocks share their names
    LEGACY.replace("c0 = ", "print('defining')\nc0 = "),
])
def test_the_legacy_body_reads_as_a_with_block(text: str) -> None:
    fd = loads_fusion(HEAD + text + "inputs = [torch.randn(2, 6)]\nfd.execute(inputs)\n")
    _legacy_check(fd)
    assert str(fd.fusion).count("Inputs:") == 1 and len(fd.fusion.outputs) == 1


def test_the_legacy_body_after_the_run_is_not_read() -> None:
    with pytest.raises(FusionFileError, match=r":11: .*not skipped as checking code after the run at line 10"):
        loads_fusion(HEAD + LEGACY + "inputs = [torch.randn(2, 6)]\nfd.execute(inputs)\nT9 = fd.ops.neg(T2)\n")


# ---- 6. no inputs list: example inputs from the definition --------------------------------------
STATIC = """\
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[6, 8], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[6, 8], contiguity=[True, None], dtype=DataType.Half)
    T2 = fd.define_tensor(shape=[6, 8], contiguity=[False, True], dtype=DataType.Int32)
    S3 = fd.define_scalar(dtype=DataType.Double)
    T4 = fd.ops.add(fd.ops.mul(T0, T1), fd.ops.mul(T2, S3))
    fd.add_output(T4)
"""


def test_concrete_sizes_make_the_example_inputs() -> None:
    fd = loads_fusion(HEAD + STATIC)
    assert fd.input_specs is None
    x0, x1, x2, s3 = fd.example_inputs(seed=0)
    assert (x0.shape, x0.stride(), x0.dtype) == ((6, 8), (1, 6), torch.float32)  # stride order
    assert (x1.shape, x1.stride(), x1.dtype) == ((6, 8), (1, 0), torch.float16)  # expanded broadcast
    assert (x2.shape, x2.stride(), x2.dtype) == ((6, 8), (9, 1), torch.int32)  # not contiguous: padded
    assert set(x2.unique().tolist()) <= {0, 1} and s3 == 0.5
    torch.testing.assert_close(x0, fd.example_inputs(seed=0)[0])  # seeded
    fd.execute([x0, x1, x2, s3])  # the definition's layout checks accept them


SYMBOLIC = """\
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1, 4], contiguity=[True, True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T2 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
    S3 = fd.define_scalar(dtype=DataType.Int)
    T4 = fd.ops.sum(T0, dims=[2])
    T6 = fd.ops.mul(fd.ops.sum(T4, dims=[1], keepdim=True), T2)
    fd.add_output(T6)
    fd.add_output(T1)
"""


def _symbolic() -> FusionDefinition:
    return loads_fusion(HEAD + SYMBOLIC)


def test_symbolic_sizes_without_sizes_say_which_and_how() -> None:
    with pytest.raises(FusionDefinitionError) as info:
        _symbolic().example_inputs()
    msg = str(info.value)
    assert "no `inputs = [...]` list" in msg
    assert "T0 [i0, i2, 4] (axes 0, 1), T1 [i4] (axis 0), T2 [i5, 1] (axis 0)" in msg
    assert "fd.example_inputs(sizes={'T0': [i0, i2], 'T1': [i4], 'T2': [i5]})" in msg
    assert "--size T0=i0,i2 --size T1=i4 --size T2=i5, or --size N" in msg


@pytest.mark.parametrize("sizes, shapes", [
    (3, [(3, 3, 4), (3,), (3, 1)]),
    ({"T0": [5, 2], "T1": [7]}, [(5, 2, 4), (7,), (5, 1)]),  # T2's rows are T0's (T6 = sum(T0) * T2)
    ({"T0": [5, 2, 4], "*": 9}, [(5, 2, 4), (9,), (5, 1)]),  # every axis, and a default
    ({"i0": 5, "i2": 2, "i4": 1, "i7": 7}, [(5, 2, 4), (1,), (5, 1)]),  # symbolic sizes, a scalar by name
    ([[5, 2], [1], None, 4], [(5, 2, 4), (1,), (5, 1)]),  # a list per input (None: T2 follows T0)
])
def test_sizes_give_the_symbolic_sizes(sizes: object, shapes: list[tuple[int, ...]]) -> None:
    fd = _symbolic()
    *tensors, scalar = fd.example_inputs(sizes=sizes, seed=0)
    assert [tuple(t.shape) for t in tensors] == shapes
    assert scalar == (7 if isinstance(sizes, dict) and "i7" in sizes else 4 if isinstance(sizes, list) else 1)
    fd.execute([*tensors, scalar])


@pytest.mark.parametrize("sizes, why", [
    ({"T0": [5, 2], "T2": [6]}, r"sizes: T2 axis 0 \(i5\) is the same axis as T0 axis 0 \(i0\) as given, 5, not 6"),
    ({"T9": [1]}, r"'T9' names no input or symbolic size of this fusion \(inputs: T0, T1, T2, i7; symbolic "
                  r"sizes: i0, i2, i4, i5\)"),
    ({"T0": [5, 2, 3]}, r"sizes\['T0'\]: axis 2 is 4 by its definition, not 3"),
    ({"T0": [5]}, r"1 sizes for T0, which has 3 axes \(2 of them symbolic\)"),
    ({"*": -1}, r"a size is an integer from 0"),
    ({"*": 2, "i7": 1.5}, r"the scalar input i7 \(Int\) takes a int value, got 1.5"),
    ([1, 2], r"2 entries for 4 inputs"),
    ("big", r"sizes must be an int, a mapping or a list"),
])
def test_wrong_sizes_are_named(sizes: object, why: str) -> None:
    with pytest.raises(FusionDefinitionError, match=why):
        _symbolic().example_inputs(sizes=sizes)


def test_sizes_are_for_a_fusion_without_an_inputs_list() -> None:
    fd = loads_fusion(HEAD + BODY)
    with pytest.raises(FusionDefinitionError, match="sizes are for a fusion without an inputs list"):
        fd.example_inputs(sizes=4)


def test_a_fusion_built_in_python_makes_its_example_inputs_too() -> None:
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor(shape=[2, -1], dtype=DataType.BFloat16)))
    (x,) = fd.example_inputs(sizes={"T0": [2, 5]})
    assert x.shape == (2, 5) and x.dtype == torch.bfloat16


# ---- the real-world scripts of each form, and what they skip --------------------------------------
@pytest.mark.parametrize("name, skipped", [
    ("main_guard_rms_norm_timed", [(7, 7), (13, 15), (42, 42), (43, 43), (44, 44), (45, 45), (46, 46), (47, 47)]),
    ("helper_functions_l2_flush_bandwidth", [(11, 14), (17, 18), (41, 41), (42, 42), (43, 43), (44, 44), (46, 46),
                                             (47, 47), (48, 48), (49, 49)]),
    ("fusion_func_eps_and_width_params", []),
    ("pytest_direct_test_slice_zero", [(8, 8), (28, 28), (29, 29), (32, 40)]),
    ("unittest_repro_exec_nvfuser", [(14, 14), (34, 34), (36, 41)]),
    ("harmless_imports_math_gelu", [(6, 6), (8, 8), (9, 9), (10, 10), (12, 12), (13, 13), (37, 38)]),
    ("legacy_top_level_no_with", []),
    ("legacy_empty_with_then_top_level", []),
    ("no_inputs_list_static_shapes", []),
])
def test_each_real_world_form_loads_and_records_what_it_skipped(name: str, skipped: list[tuple[int, int]]) -> None:
    fd = load_fusion(SCRIPTS / f"{name}.py")
    assert _lines(fd) == skipped
    assert all(s.reason.startswith("skipped, not ") for s in fd.skipped_statements)
    assert fd.fusion.outputs and fd.example_inputs(seed=0) is not None


# ---- hostile code in the new forms: refused, or skipped unread; never run ---------------------------
MK = "open('{marker}', 'w')"


@pytest.mark.parametrize("text, line", [
    # what the fusion reads is read, and refused
    (FUNC + f"with FusionDefinition() as fd:\n    fusion_func(fd, {MK}, 4)\n", 9),
    (FUNC.replace("scale=2.0", f"scale={MK}"), 3),
    ('if __name__ == "__main__":\n' + _indent(BODY.replace("dims=[1]", f"dims=[{MK}]")), 6),
    ("if torch.cuda.is_available():\n" + _indent(BODY.replace("dims=[1]", f"dims=[{MK}]")), 6),
    ("def test_x(self):\n" + _indent(BODY.replace("randn(3, 5)", f"randn({MK})")), 8),
    ("def test_x(self):\n    inputs = [torch.randn(2)]\n    def f(fd):\n        fd.add_output(" + MK + ")\n"
     "    self.exec_nvfuser(f, inputs)\n", 6),
    ("import math\n" + BODY.replace("dims=[1]", "dims=[math.factorial(10 ** 8)]"), 6),
    ('if __name__ == "__main__":\n    x = __import__("os")\n' + _indent(BODY), 4),
    ("fd = FusionDefinition()\nT0 = fd.define_tensor(shape=[" + MK + "])\n", 4),
])
def test_hostile_code_the_fusion_reads_is_refused(text: str, line: int, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(FusionFileError) as info:
        loads_fusion(HEAD + text.replace("{marker}", str(marker)), "h.py")
    assert info.value.line == line, str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize("text", [
    'if __name__ == "__main__":\n    ' + MK + "\n" + _indent(BODY),  # in the guard, before the fusion
    'if __name__ == "__main__":\n' + _indent(BODY) + "    " + MK + "\n",  # in the guard, after the run
    "if torch.cuda.is_available():\n" + _indent(BODY) + "else:\n    " + MK + "\n",  # the branch not taken
    "def clearL2Cache():\n    " + MK + "\nclearL2Cache()\n" + BODY,  # a helper and its call
    "def test_a(self):\n" + _indent(BODY) + "def test_b(self):\n    " + MK + "\n" + _indent(BODY),  # another test
    "import pytest\n@pytest.mark.skipif(" + MK + ", reason='x')\ndef test_a(self):\n" + _indent(BODY),  # decorators
    "def test_a(self):\n    inputs = [torch.randn(3, 5)]\n    def f(fd):\n"
    "        T0 = fd.define_tensor(shape=[-1, -1])\n        fd.add_output(T0)\n"
    "    self.exec_nvfuser(f, inputs, validate=" + MK + ")\n",  # the helper's own arguments
    "try:\n    import nvfuser_extras\nexcept ImportError:\n    " + MK + "\n" + BODY,  # a guarded import
    "import os\nos.system('touch {marker}')\n" + BODY,  # an import and its use, before the fusion
])
def test_hostile_code_the_fusion_does_not_read_is_skipped_unread(text: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    fd = loads_fusion(HEAD + text.replace("{marker}", str(marker)), "h.py")
    assert fd.fusion.outputs and fd.skipped_statements
    assert not marker.exists()
