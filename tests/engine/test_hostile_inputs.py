"""Hostile and broken fusion files: every one is refused with a FusionFileError naming the file
and line, nothing in it runs, and no other exception type escapes load_fusion. Payloads in the
repro's checking code after the run (AFTER_RUN) are skipped unread instead: the file loads, the
skip is recorded, and the payload still never runs.

Each payload that could act writes a marker file when run as Python; the tests check that the
marker is absent after loading, and (test_payloads_are_live) that running the same text as
Python, with a stand-in nvfuser module, does create it: the refusals are not vacuous.
"""

from __future__ import annotations

import ast
import os
import sys
import types
from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion, loads_fusion
from engine.errors import EngineError, ExecutionError, FusionDefinitionError, FusionFileError

HEAD = "import torch\nfrom nvfuser import FusionDefinition, DataType\n"  # lines 1-2
W = "with FusionDefinition() as fd:\n"  # line 3 when first
T = "    t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)\n"  # line 4
MK = "open('{marker}', 'w')"
BIG = "9" * 400
# A fusion, its inputs and its run (lines 3-7): what follows is the repro's checking code.
RUN = W + T + "    fd.add_output(t)\ninputs = [torch.randn(2)]\nfd.execute(inputs)\n"

# name -> (body after HEAD, the line the error must name, whether running it writes the marker)
HOSTILE: dict[str, tuple[str, int, bool]] = {
    # imports and calls outside the frontend
    "torch_load": ("inputs = [torch.load('{marker}')]\n", 3, False),
    "eval_in_shape": (W + f"    t = fd.define_tensor(shape=eval(\"[{MK}]\"))\n", 4, True),
    "compile_call": (W + f"    t = fd.define_tensor(shape=[exec(compile(\"{MK}\", 'x', 'exec'))])\n", 4, True),
    "breakpoint": (W + "    breakpoint()\n", 4, False),
    "print_open": (W + T + f"    print({MK})\n", 5, True),
    "open_in_op": (W + T + f"    u = fd.ops.add(t, {MK})\n", 5, True),
    "getattr_escape": (W + T + "    u = getattr(fd, 'ops')\n", 5, False),
    "vars_globals": (W + T + "    u = fd.ops.add(t, len(globals()))\n", 5, False),
    "method_on_tensor": (W + T + "    u = t.fusion.inputs\n", 5, False),
    "fd_fusion_attr": (W + T + "    u = fd.ops.add(fd.fusion, t)\n", 5, False),
    "fd_private": (W + T + "    u = fd._record_call('fd', 'x', open, ('{marker}', 'w'), {})\n", 5, False),
    "sched_private": (W + T + "    u = fd.sched._fd\n", 5, False),
    "execute_payload": (W + T + f"fd.execute([{MK}])\n", 5, True),
    # the 2022 frontend's `FusionDefinition(fs)`, timing loops and trailing prints (read, never run)
    "loop_body_payload": (W + T + f"for _ in range(2):\n    fd.execute([])\n    {MK}\n", 7, True),
    "loop_iter_payload": (W + T + f"for _ in [{MK}]:\n    fd.execute([])\n", 5, True),
    "fusion_arg_payload": (f"with FusionDefinition({MK}) as fd:\n    pass\n", 3, True),
    "rank_only_define_tensor": ("fs = Fusion()\nwith FusionDefinition(fs) as fd:\n    t = fd.define_tensor(3)\n",
                                5, False),
    "fusion_arg_not_fusion": ("fs = FusionDefinition()\nwith FusionDefinition(fs) as fd:\n    pass\n", 4, False),
    # attribute tricks
    "subclasses": (W + "    t = ().__class__.__base__.__subclasses__()\n", 4, False),
    "func_globals": (W + T + "    u = fd.ops.add.__globals__['__builtins__']\n", 5, False),
    "dunder_dict": (W + T + "    u = fd.__dict__\n", 5, False),
    "enum_class": (W + "    t = fd.define_tensor(shape=[2], dtype=DataType.Float.__class__)\n", 4, False),
    "torch_builtins": (W + "    t = fd.define_tensor(shape=[2], dtype=torch.__builtins__)\n", 4, False),
    "dunder_method": ("class F(FusionDefinition):\n    def __init__(self):\n        " + MK + "\n", 4, False),
    # lambdas, comprehensions, f-strings, decorators, walrus, starred
    "lambda_arg": (W + T + f"    u = fd.ops.add(t, (lambda: {MK})())\n", 5, True),
    "list_comprehension": (W + f"    t = fd.define_tensor(shape=[{MK} for i in [1]])\n", 4, True),
    "generator": (W + f"    t = fd.define_tensor(shape=list({MK} for i in [1]))\n", 4, True),
    "dict_comprehension": (W + T + f"    fd.sched.reorder(t, {{0: {MK} for i in [1]}})\n", 5, True),
    "fstring_shape": (W + "    t = fd.define_tensor(shape=[f\"{" + MK + "}\"])\n", 4, True),
    "decorator_class": (f"@{MK}.close\nclass F(FusionDefinition):\n    pass\n", 3, False),
    "decorator_method": ("class F(FusionDefinition):\n    @staticmethod\n    def definition(fd):\n        pass\n",
                         4, False),
    "walrus_arg": (W + f"    t = fd.define_tensor(shape=[(m := {MK}) and 2])\n", 4, True),
    "starred_call": (W + T + "    u = fd.ops.add(*[t, t])\n", 5, False),
    "starred_list": (W + "    t = fd.define_tensor(shape=[*[2, 3]])\n", 4, False),
    "double_star": (W + "    t = fd.define_tensor(**{'shape': [2]})\n", 4, False),
    "starred_target": (W + T + "    a, *b = fd.ops.var_mean(t, dims=[0])\n", 5, False),
    "annotation_call": (f"def f(fd: {MK}) -> None:\n    pass\n", 3, False),
    "default_arg": (f"def f(fd={MK}):\n    pass\n", 3, False),
    "class_body_code": (f"class F(FusionDefinition):\n    x = {MK}\n", 4, False),
    "metaclass": (f"class F(FusionDefinition, metaclass={MK}):\n    pass\n", 3, False),
    # control flow and other statements
    "try_except": (W + f"    try:\n        {MK}\n    except Exception:\n        pass\n", 4, True),
    "while_loop": (W + "    while True:\n        pass\n", 4, False),
    "if_stmt": (W + f"    if True:\n        {MK}\n", 4, True),
    "assert_stmt": (W + f"    assert {MK}\n", 4, True),
    "global_stmt": ("def f(fd):\n    global x\n", 4, False),
    "del_stmt": (W + T + "    del t\n", 5, False),
    "async_def": ("async def f(fd):\n    pass\n", 3, False),
    "await_expr": (W + "    await fd\n", 4, False),
    "yield_expr": ("def f(fd):\n    yield fd\n", 4, False),
    "aug_assign": (W + T + "    t += 1\n", 5, False),
    "subscript_store": (W + T + "    fd.ops[0] = t\n", 5, False),
    # recursion bombs
    "self_recursion": ("def f(fd):\n    f(fd)\nwith FusionDefinition() as fd:\n    f(fd)\n", 4, False),
    "mutual_recursion": ("def f(fd):\n    g(fd)\ndef g(fd):\n    f(fd)\nwith FusionDefinition() as fd:\n    f(fd)\n",
                         4, False),
    "method_recursion": ("class F(FusionDefinition):\n    def definition(self):\n        self.definition()\n", 5, False),
    "nested_calls_150": (W + T + "    u = " + "fd.ops.neg(" * 150 + "t" + ")" * 150 + "\n", 5, False),
    "nested_lists_5000": (W + "    t = fd.define_tensor(shape=" + "[" * 5000 + "]" * 5000 + ")\n", 4, False),
    "unary_minus_3000": (W + "    t = fd.define_tensor(shape=[" + "-" * 3000 + "2])\n", 4, False),
    # after the run, what builds, changes or rebinds the fusion or its inputs is not skipped
    "after_run_sched_payload": (RUN + f"fd.sched.split({MK}, 0, 2)\n", 8, True),
    "after_run_ops_payload": (RUN + f"u = fd.ops.add({MK}, 1)\n", 8, True),
    "after_run_second_inputs": (RUN + f"inputs = [{MK}]\n", 8, True),
    "after_run_inputs_item": (RUN + f"inputs[0] = {MK}\n", 8, True),
    "after_run_rebinds_torch": (RUN + f"torch = {MK}\n", 8, True),
    "after_run_rebinds_fd": (RUN + f"fd = {MK}\n", 8, True),
    "after_run_second_fusion": (RUN + f"with FusionDefinition() as fd2:\n    u = fd2.define_tensor(shape=[{MK}])\n",
                                8, True),
    "after_run_import_as_torch": (RUN + "import os as torch\ntorch.system('touch {marker}')\n", 8, True),
    "after_run_dunder": (RUN + "print(inputs.__class__)\n", 8, False),
    # before the inputs list, a statement using torch (which the inputs read) is read, not skipped
    "assert_close_payload": ("torch.testing.assert_close(open('{marker}', 'w'), 1)\n" + RUN, 3, True),
    "output_dunder": (W + T + "o = fd.execute([torch.randn(2)])\nc = o.__class__\n", 6, False),
    "output_rebinds_torch": (W + T + "torch = fd.execute([torch.randn(2)])[0]\n", 5, False),
    "list_repeat_huge": ("inputs = [torch.tensor([1, 2] * 10 ** 9)]\n", 3, False),
    "list_repeat_in_body": (W + "    t = fd.define_tensor(shape=[1] * 20000)\n", 4, False),
    "binop_chain_30000": (W + "    t = fd.define_tensor(shape=[" + "+".join(["1"] * 30000) + "])\n", 4, False),
    "nested_dicts": (W + T + "    fd.sched.reorder(t, " + "{0: " * 120 + "0" + "}" * 120 + ")\n", 5, False),
    # gigantic literals
    "int_400_digits": (W + f"    t = fd.define_tensor(shape=[{BIG}])\n", 4, False),
    "int_5000_digits": (W + "    t = fd.define_tensor(shape=[" + "9" * 5000 + "])\n", 4, False),
    "int_past_int64": (W + T + "    u = fd.ops.add(t, 9223372036854775808)\n", 5, False),
    "huge_scalar": (W + f"    s = fd.define_scalar({BIG}, dtype=DataType.Int)\n", 4, False),
    "huge_quotient": (W + f"    t = fd.define_tensor(shape=[{BIG} // 10 ** 1])\n", 4, False),
    "float_of_huge": (W + f"    s = fd.define_scalar(float({BIG}))\n", 4, False),
    "overflowing_product": (W + "    t = fd.define_tensor(shape=[9223372036854775807 * 3])\n", 4, False),
    "string_repeat": (W + "    t = fd.define_tensor(shape=['a' * 1000000000])\n", 4, False),
    "huge_inputs_size": (W + "    pass\ninputs = [torch.randn(" + BIG + ")]\n", 5, False),
    # wrong types
    "shape_string": (W + "    t = fd.define_tensor(shape='abc')\n", 4, False),
    "shape_number": (W + "    t = fd.define_tensor(shape=5)\n", 4, False),
    "dtype_string": (W + "    t = fd.define_tensor(shape=[2], dtype='Float')\n", 4, False),
    "contiguity_number": (W + "    t = fd.define_tensor(shape=[2], contiguity=7)\n", 4, False),
    "operand_string": (W + T + "    u = fd.ops.add(t, 'x')\n", 5, False),
    "operand_none": (W + T + "    u = fd.ops.add(t, None)\n", 5, False),
    "dims_string": (W + T + "    u = fd.ops.sum(t, dims='0')\n", 5, False),
    "unhashable_key": (W + T + "    fd.sched.reorder(t, {[0]: 0})\n", 5, False),
    "bytes_literal": (W + "    t = fd.define_tensor(shape=[b'2'])\n", 4, False),
    "output_number": (W + "    fd.add_output(3)\n", 4, False),
    "split_string": (W + T + "    u = fd.ops.neg(t)\n    fd.sched.split(u, 0, '4')\n", 6, False),
    # unknown ops, and op names that would be text in the generated code
    "unknown_op": (W + T + "    u = fd.ops.system(t)\n", 5, False),
    "unknown_sched": (W + T + "    fd.sched.run_shell(t)\n", 5, False),
    "unary_code": (W + T + "    u = fd.ops.unary('exp); system(\"x\"); (', t)\n", 5, False),
    "binary_code": (W + T + "    u = fd.ops.binary('add */ evil /*', t, t)\n", 5, False),
    "ternary_code": (W + T + "    u = fd.ops.ternary('where\\n#include <x>', t, t, t)\n", 5, False),
    "reduce_code": (W + T + "    u = fd.ops.reduce('max) + evil(', t)\n", 5, False),
    # negative and huge shapes
    "negative_size": (W + "    t = fd.define_tensor(shape=[-2])\n", 4, False),
    "negative_full": (W + "    t = fd.ops.full([-5], 1.0, dtype=DataType.Float)\n", 4, False),
    "negative_input": (W + "    pass\ninputs = [torch.randn(-3)]\n", 5, False),
    "negative_stride": (W + "    pass\ninputs = [torch.randn(6).as_strided((2, 3), (-3, 1))]\n", 5, False),
    "zero_split": (W + T + "    u = fd.ops.neg(t)\n    fd.sched.split(u, 0, 0)\n", 6, False),
    "storage_overflow": (W + "    pass\ninputs = [torch.randn(4611686018427387904, 4611686018427387904)]\n", 5, False),
    "strided_past_storage": (W + "    pass\ninputs = [torch.randn(5).as_strided((2, 3), (3, 1))]\n", 5, False),
    # dtypes that do not match the data
    "data_overflows_dtype": (W + "    pass\ninputs = [torch.tensor([1, 300], dtype=torch.uint8)]\n", 5, False),
    "fill_overflows_dtype": (W + "    pass\ninputs = [torch.full([2], 1000, dtype=torch.int8)]\n", 5, False),
    "range_overflows_dtype": (W + "    pass\ninputs = [torch.randint(0, 300, (3,), dtype=torch.int8)]\n", 5, False),
    "ragged_data": (W + "    pass\ninputs = [torch.tensor([[1, 2], [3]])]\n", 5, False),
    "string_data": (W + "    pass\ninputs = [torch.tensor(['a'])]\n", 5, False),
    "view_size_mismatch": (W + "    pass\ninputs = [torch.randn(3).view(torch.float64)]\n", 5, False),
    "dtype_not_a_dtype": (W + "    pass\ninputs = [torch.randn(3, dtype=torch.nn)]\n", 5, False),
    # truncated files
    "truncated_call": (W + "    t = fd.define_tensor(shape=[2,\n", 4, False),
    "truncated_string": (W + "    t = fd.define_tensor(shape='\n", 4, False),
    "truncated_block": ("with FusionDefinition() as fd:", 3, False),
    "truncated_inputs": (W + T + "inputs = [\n    torch.randn(4),\n", 5, False),
    "nul_byte": (W + "    t = fd.define_tensor(shape=[2])\x00\n", 4, False),
}


# Payloads in the checking code after the run: skipped unread, so the file loads and the payload
# never runs. name -> (body after HEAD, the (first, last) lines recorded as skipped)
AFTER_RUN: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "print_open": (RUN + f"print({MK})\n", [(8, 8)]),
    "print_fstring": (RUN + "print(f\"{" + MK + "}\")\n", [(8, 8)]),
    "assert_close_open": (RUN + f"torch.testing.assert_close({MK}, 1)\n", [(8, 8)]),
    "exec": (RUN + f"exec(\"{MK}\")\n", [(8, 8)]),
    "import_os_system": (RUN + "import os\nos.system('touch {marker}')\n", [(8, 8), (9, 9)]),
    "import_subprocess": (RUN + "import subprocess as sp; sp.run(['touch', '{marker}'])\n", [(8, 8), (8, 8)]),
    "timing_loop_body": (RUN + f"for _ in range(2):\n    fd.execute(inputs)\n    {MK}\n", [(8, 10)]),
    "with_open": (RUN + "with open('{marker}', 'w') as f:\n    pass\n", [(8, 9)]),
    "lambda_call": (RUN + f"(lambda: {MK})()\n", [(8, 8)]),
    "walrus": (RUN + f"(m := {MK})\n", [(8, 8)]),
    "def_then_call": (RUN + f"def check(o):\n    {MK}\ncheck(1)\n", [(8, 9), (10, 10)]),
    "try_except": (RUN + f"try:\n    {MK}\nexcept Exception:\n    pass\n", [(8, 11)]),
    "decorator": (RUN + f"@{MK}.close\ndef f(x):\n    pass\n", [(8, 10)]),
    "torch_attribute_store": (RUN + f"torch.testing.assert_close = lambda *a: {MK}\n"
                                    "torch.testing.assert_close(1, 1)\n", [(8, 8), (9, 9)]),
    "run_with_payload": (RUN + f"fd.execute([{MK}])\n", [(8, 8)]),
}


# A fusion function's decorators are skipped, never run, and its body is read: name -> (body
# after HEAD, the (first, last) lines recorded as skipped).
DECORATED: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "decorator_fn": (f"@{MK}.close\ndef f(fd):\n" + T + "    fd.add_output(t)\n" + W + "    f(fd)\n", [(3, 3)]),
    "decorators_stacked": (f"@torch.no_grad()\n@{MK}.close\ndef f(fd):\n" + T + "    fd.add_output(t)\n" + W
                           + "    f(fd)\n", [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(DECORATED))
def test_decorators_of_a_fusion_function_are_skipped_unread(name: str, tmp_path: Path, marker: Path) -> None:
    body, lines = DECORATED[name]
    fd = load_fusion(_write(tmp_path, name, body, marker))
    assert not marker.exists()
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == lines
    assert "the decorators of f" in fd.skipped_statements[0].reason
    assert len(fd.fusion.outputs) == 1 and len(fd.fusion.inputs) == 1


# Payloads before the fusion in statements the fusion does not need (they mention neither the
# fusion nor a name it reads): skipped unread, so the file loads and the payload never runs;
# without a fusion after them the file is refused (no fusion). name -> (payload after HEAD,
# the (first, last) lines recorded as skipped); the fusion (RUN) follows the payload.
SKIPPED_UNREAD: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "import_subprocess": ("import subprocess as sp\nsp.run(['touch', '{marker}'])\n", [(3, 3), (4, 4)]),
    "import_os_path": ("import os.path\nos.system('touch {marker}')\n", [(3, 3), (4, 4)]),
    "from_builtins": ("from builtins import open as o\no('{marker}', 'w')\n", [(3, 3), (4, 4)]),
    "import_importlib": ("import importlib\nimportlib.import_module('os').system('touch {marker}')\n",
                         [(3, 3), (4, 4)]),
    "relative_import": ("from . import evil\nevil.run('{marker}')\n", [(3, 3), (4, 4)]),
    "exec_top": (f"exec(\"{MK}\")\n", [(3, 3)]),
    "print_payload": (f"print({MK})\n", [(3, 3)]),
    "print_fstring_payload": ("print(f\"{" + MK + "}\")\n", [(3, 3)]),
    "main_guard": ("if __name__ == '__main__':\n    " + MK + "\n", [(4, 4)]),
    "main_guard_else": ("if __name__ == '__main__':\n    pass\nelse:\n    " + MK + "\n", [(6, 6)]),
    "lambda_top": (f"f = lambda: {MK}\nf()\n", [(3, 3), (4, 4)]),
    "fstring_top": ("x = f\"{" + MK + "}\"\n", [(3, 3)]),
    "walrus_top": (f"(m := {MK})\n", [(3, 3)]),
    "helper_function": (f"def clearL2Cache():\n    {MK}\nclearL2Cache()\n", [(3, 4), (5, 5)]),
    "helper_class": (f"class Timer:\n    x = {MK}\n", [(3, 4)]),
    "try_import_payload": (f"try:\n    import no_such_module\nexcept ImportError:\n    {MK}\n", [(4, 4), (5, 6)]),
}


@pytest.fixture()
def marker(tmp_path: Path) -> Path:
    return tmp_path / "marker"


def _write(tmp_path: Path, name: str, body: str, marker: Path) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + body.replace("{marker}", str(marker)), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_is_refused_naming_the_line(name: str, tmp_path: Path, marker: Path) -> None:
    body, line, _ = HOSTILE[name]
    path = _write(tmp_path, name, body, marker)
    with pytest.raises(FusionFileError) as info:
        load_fusion(path)
    msg = str(info.value)
    assert info.value.path == str(path)
    assert info.value.line == line, msg[:300]
    assert msg.startswith(f"{path}:{line}: "), msg[:300]
    assert len(msg) < 2000  # huge literals are not echoed whole
    assert not marker.exists()


@pytest.mark.parametrize("name", sorted(AFTER_RUN))
def test_payload_after_the_run_is_skipped_unread(name: str, tmp_path: Path, marker: Path) -> None:
    body, lines = AFTER_RUN[name]
    fd = load_fusion(_write(tmp_path, name, body, marker))
    assert not marker.exists()
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == lines
    assert all("checking code after the run at line 7" in s.reason for s in fd.skipped_statements)
    assert len(fd.fusion.outputs) == 1 and len(fd.input_specs) == 1


@pytest.mark.parametrize("name", sorted(SKIPPED_UNREAD))
def test_payload_the_fusion_does_not_need_is_skipped_unread(name: str, tmp_path: Path, marker: Path) -> None:
    payload, lines = SKIPPED_UNREAD[name]
    fd = load_fusion(_write(tmp_path, name, payload + RUN, marker))
    assert not marker.exists()
    assert [(s.first_line, s.last_line) for s in fd.skipped_statements] == lines
    assert all(s.reason.startswith("skipped, not ") for s in fd.skipped_statements)
    assert len(fd.fusion.outputs) == 1 and len(fd.input_specs) == 1
    with pytest.raises(FusionFileError, match="no fusion defined"):  # alone: nothing to read
        load_fusion(_write(tmp_path, name, payload, marker))
    assert not marker.exists()


class _Anything:
    """A stand-in for nvfuser's FusionDefinition and DataType: any attribute, any call."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __getattr__(self, name: str) -> _Anything:
        return _Anything()

    def __call__(self, *args: object, **kwargs: object) -> _Anything:
        return _Anything()

    def __enter__(self) -> _Anything:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


LIVE = (sorted(name for name, (_, _, live) in HOSTILE.items() if live) + sorted(AFTER_RUN)
        + sorted(f"unread_{name}" for name in SKIPPED_UNREAD) + sorted(DECORATED))


@pytest.mark.parametrize("name", LIVE)
def test_payloads_are_live(name: str, tmp_path: Path, marker: Path, monkeypatch) -> None:
    """Run as Python (nvfuser stood in for), each payload does write its marker."""
    fake = types.ModuleType("nvfuser")
    fake.FusionDefinition = _Anything  # type: ignore[attr-defined]
    fake.DataType = _Anything()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nvfuser", fake)
    if name.startswith("unread_"):
        payload, _ = SKIPPED_UNREAD[name.removeprefix("unread_")]
        # evil.run for `from . import evil`: a module the payload's import stands for.
        evil = types.ModuleType("evil")
        evil.run = lambda p: open(p, "w").close()  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "evil", evil)
        body = payload.replace("from . import evil", "import evil") + RUN
    else:
        body = HOSTILE[name][0] if name in HOSTILE else DECORATED[name][0] if name in DECORATED else AFTER_RUN[name][0]
    path = _write(tmp_path, name, body, marker)
    ast.parse(path.read_text())  # valid Python: the reader refused it by rule, not by accident
    # A payload may replace torch's own functions (torch.testing.assert_close = ...): they are
    # put back, or every later test in this process would call the payload.
    saved = {m: dict(vars(m)) for m in (torch, torch.testing)}
    try:
        # As a script (the else of a main guard runs only on import).
        run_as = "imported" if name == "unread_main_guard_else" else "__main__"
        exec(compile(path.read_text(), str(path), "exec"), {"__name__": run_as})  # noqa: S102
    except Exception:
        pass  # the payload ran before whatever failed after it
    finally:
        for module, before in saved.items():
            for key in set(vars(module)) - set(before):
                delattr(module, key)
            for key, value in before.items():
                if vars(module).get(key) is not value:
                    setattr(module, key, value)
    assert marker.exists()


def test_every_refusal_is_a_fusion_file_error_never_another_exception() -> None:
    """The same texts through loads_fusion: nothing but FusionFileError, whatever went wrong."""
    for name, (body, line, _) in HOSTILE.items():
        try:
            loads_fusion(HEAD + body.replace("{marker}", "/nonexistent/m"), filename="f.py")
        except FusionFileError as e:
            assert e.line == line, name
        except BaseException as e:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}: {type(e).__name__} escaped load_fusion: {e}"[:500])
        else:
            pytest.fail(f"{name}: accepted")


def test_files_that_are_not_text_name_the_line_or_the_file(tmp_path: Path) -> None:
    bad_utf8 = tmp_path / "latin1.py"
    bad_utf8.write_bytes((HEAD + W + "    # caf\xe9\n").encode("latin-1"))
    with pytest.raises(FusionFileError, match=r"latin1\.py:4: not UTF-8 text"):
        load_fusion(bad_utf8)
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(17 << 20)  # sparse: costs no disk
    with pytest.raises(FusionFileError, match=r"big\.py: larger than 16 MiB"):
        load_fusion(big)
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)  # opening it for reading must not wait for a writer
    with pytest.raises(FusionFileError, match="not a regular file"):
        load_fusion(fifo)
    with pytest.raises(FusionFileError, match="cannot read"):
        load_fusion(tmp_path)


def test_api_refuses_values_past_64_bits() -> None:
    with pytest.raises(FusionDefinitionError, match="fit in 64 bits"):
        with FusionDefinition() as fd:
            fd.define_tensor(shape=[1 << 63])
    with pytest.raises(FusionDefinitionError, match="does not fit in 64 bits"):
        with FusionDefinition() as fd:
            fd.define_scalar(-(1 << 63) - 1, dtype=DataType.Int)
    with pytest.raises(FusionDefinitionError, match="too large for a float"):
        with FusionDefinition() as fd:
            fd.define_scalar(10**400, dtype=DataType.Double)


# ---- inputs that contradict the definition, at compile and at run time ----------------------

def _fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(fd.ops.exp(a), s))
    return fd


GOOD = [torch.randn(3, 4), 2.0]
CONTRADICTING = {
    "dtype": ([torch.randn(3, 4, dtype=torch.float64), 2.0], r"input 0 \(T0\) must be float \(torch.float32\)",
              r"input 0 \(T0\) has dtype torch.float64 instead of torch.float32"),
    "rank": ([torch.randn(12), 2.0], r"input 0 \(T0\) must have rank 2", r"input 0 \(T0\) has shape \(12,\)"),
    "static_size": ([torch.randn(3, 5), 2.0], r"input 0 \(T0\) axis 1 must have size 4",
                    r"input 0 \(T0\) has shape \(3, 5\) instead of \(3, 4\)"),
    "count": ([torch.randn(3, 4)], "fusion takes 2 inputs, got 1", "compiled for 2 inputs, got 1"),
    "tensor_for_scalar": ([torch.randn(3, 4), torch.randn(3)], r"input 1 \(d\d+\) is a scalar",
                          r"input 1 \(d\d+\) is a tensor torch.float32, compiled for a float"),
    "scalar_for_tensor": ([2.0, 2.0], r"input 0 \(T0\) must be a torch tensor, got float",
                          r"input 0 \(T0\) is a float, compiled for a tensor torch.float32"),
    "string": ([torch.randn(3, 4), "x"], r"input 1 \(d\d+\) must be a number, got str",
               r"input 1 \(d\d+\) is a str"),
}


@pytest.fixture(scope="module")
def compiled():
    from engine.compile import compile_fusion

    return compile_fusion(_fusion(), GOOD)


@pytest.mark.parametrize("name", sorted(CONTRADICTING))
def test_inputs_that_contradict_the_definition_are_named(name: str, compiled) -> None:
    from engine.compile import compile_fusion

    xs, at_compile, at_run = CONTRADICTING[name]
    with pytest.raises(ExecutionError, match=at_compile):
        compile_fusion(_fusion(), xs)
    with pytest.raises(ExecutionError, match=at_run):
        compiled.run(xs, backend="reference")
    assert issubclass(ExecutionError, EngineError)


# ---- identifiers from a file never reach the generated CUDA ---------------------------------

# Names a file may legally use that would be dangerous spliced into CUDA: builtin variables,
# keywords and runtime symbols, and text in comments, docstrings and strings.
SPLICE_FILE = '''\
"""Docstring: "); asm("trap"); /* system("rm -rf /") */ #include </etc/passwd>"""
import torch
from nvfuser import FusionDefinition, DataType

# comment: */ asm volatile("trap;"); /* #define float double
def asm_volatile_trap(fd : FusionDefinition) -> None :
    """"); __trap(); //"""
    blockIdx = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    threadIdx = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    include_etc_passwd = fd.ops.add(blockIdx, threadIdx)
    extern_C_system = fd.ops.sum(include_etc_passwd, dims=[1])
    fd.add_output(extern_C_system)

with FusionDefinition() as goto_evil_label:
    asm_volatile_trap(goto_evil_label)  # */ #pragma once

inputs = [
    torch.randn(8, 300, dtype=torch.float32, device='cuda:0'),  # "); exit(1); //
    torch.randn(8, 300, dtype=torch.float32, device='cuda:0'),
]
'''
FILE_WORDS = ["asm", "trap", "system", "passwd", "blockIdx =", "threadIdx =", "include_etc_passwd",
              "extern_C_system", "goto_evil_label", "asm_volatile_trap", "rm -rf", "exit(1)", "pragma once",
              "#define float", "Docstring"]


def test_identifiers_from_a_file_never_reach_the_generated_cuda(tmp_path: Path) -> None:
    from engine.compile import compile_fusion
    from engine.runtime.nvcc import nvcc_available, ptx_check

    path = tmp_path / "splice.py"
    path.write_text(SPLICE_FILE)
    fd = load_fusion(path)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    kernels = [s for s in cf.segments if s.cuda_source]
    assert kernels
    for seg in kernels:
        kernel = seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]
        for word in FILE_WORDS:
            assert word not in kernel, f"{word!r} from the file is in kernel {seg.kernel_name}"
        assert seg.kernel_name.startswith("nvfuser_")
        if nvcc_available():
            ptx_check(seg.cuda_source, "sm_90")  # compiles as it is
    torch.testing.assert_close(cf.run(xs, backend="reference")[0], (xs[0] + xs[1]).sum(1))


def test_the_code_generator_refuses_a_name_that_is_not_an_identifier() -> None:
    from engine.codegen.cuda import kernel_text
    from engine.errors import CompileError
    from engine.lower import kir
    from engine.runtime.abi import LaunchConfig, TensorArg

    k = kir.Kernel("k); system(\"x\"); (", [TensorArg("T0", "float", 1, 1)], [], LaunchConfig((1, 1, 1), (32, 1, 1)))
    with pytest.raises(CompileError, match="is not a C identifier"):
        kernel_text(k)
    k = kir.Kernel("k0", [TensorArg("T0, int evil", "float", 1, 1)], [], LaunchConfig((1, 1, 1), (32, 1, 1)))
    with pytest.raises(CompileError, match="'T0, int evil' is not a C identifier"):
        kernel_text(k)
