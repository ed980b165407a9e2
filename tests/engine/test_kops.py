"""The kernel IR's typed ops (engine.lower.kops): built by lowering, spelled by codegen."""

import pytest

from engine.codegen import ops_table
from engine.codegen.expressions import render
from engine.dtypes import DataType
from engine.errors import CompileError
from engine.lower import kops, kquery
from engine.lower.kexpr import Access, Lit, Var

F, D, INT, H = DataType.Float, DataType.Double, DataType.Int, DataType.Half


def test_typed_ops_render_as_ops_table_spells_them():
    x = Access("T1", Var("i0"))
    assert render(kops.unary("exp", x, F)) == ops_table.unary("exp", "T1[i0]", F)
    assert render(kops.binary("pow", x, Lit("b"), F, 2)) == ops_table.binary("pow", "T1[i0]", "b", F, 2)
    assert render(kops.cast(x, H, D)) == ops_table.cast("T1[i0]", H, D)
    assert render(kops.literal(-1.5, F)) == ops_table.literal(-1.5, F)
    assert render(kops.combine("max", x, Lit("y"), F)) == ops_table.reduction_combine("max", "T1[i0]", "y", F)


def test_an_op_spelled_as_its_operand_is_the_operand():
    x = Lit("i3")
    assert kops.cast(x, INT, DataType.Index) is x
    assert kops.unary("ceil", x, INT) is x


def test_an_operand_named_twice_is_walked_once():
    # The spelling names it three times (a product); the node holds it once, as the op does.
    e = kops.binary("pow", Access("T1", Var("i0")), Lit("3"), F, 3)
    assert kquery.count_var(e, "i0") == 1
    assert render(e) == "(T1[i0] * T1[i0] * T1[i0])"


def test_an_op_left_as_its_operand_is_spelled_as_the_operand_by_codegen():
    # kops.same_value (lowering's rule, no node) and ops_table (codegen's spelling) agree.
    from engine.ops.arith import BOOL_UNARY, FLOAT_UNARY, SAME_UNARY

    types = [t for t in DataType if not t.is_complex and t != DataType.Null]
    for src in types:
        for dst in types:
            node = kops.Cast(Lit("x"), src, dst)
            try:
                text = ops_table.cast("x", src, dst)
            except CompileError:
                continue
            assert kops.same_value(node) == (text == "x"), (src, dst, text)
    for op in [*FLOAT_UNARY, *SAME_UNARY, *BOOL_UNARY]:
        for t in types:
            node = kops.Unary(op, Lit("x"), t)
            try:
                text = ops_table.unary(op, "x", t)
            except CompileError:
                assert not kops.same_value(node), (op, t)
                continue
            assert kops.same_value(node) == (text == "x"), (op, t, text)


def test_rewriting_an_operand_spells_the_op_again():
    e = kops.unary("neg", Access("T1", Var("i0")), F)
    got = kquery.substitute(e, "i0", Var("j"))
    assert render(got) == ops_table.unary("neg", "T1[j]", F)


def test_queries_see_operands_not_spelling():
    e = kops.combiner("add", F)  # a lambda: its text holds `[]`, `a` and `b`
    assert not kquery.reads_memory(e)
    assert kquery.words(e) == set()
    assert kquery.words(kops.unary("exp", Access("T1", Var("i0")), F)) == {"T1", "i0"}


def test_an_op_codegen_cannot_spell_fails_when_rendered_naming_it():
    node = kops.unary("bitwise_not", Lit("x"), F)  # lowering builds it: the op is data
    with pytest.raises(CompileError, match="bitwise_not"):
        render(node)


def test_an_op_codegen_cannot_spell_fails_the_compile_naming_it(monkeypatch):
    # Lowering builds the typed op; codegen refuses it when it renders the kernel.
    import torch

    from engine import FusionDefinition
    from engine.compile import compile_fusion

    real = ops_table.unary

    def refuse(op, x, dtype):
        if op == "exp":
            raise CompileError("exp: not spelled here")
        return real(op, x, dtype)
    monkeypatch.setattr(ops_table, "unary", refuse)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(t0))
    with pytest.raises(CompileError, match="exp: not spelled here"):
        compile_fusion(fd, [torch.randn(8)])


def test_an_expression_codegen_has_no_spelling_for_is_refused_when_rendered() -> None:
    from engine.lower import kexpr, kir

    with pytest.raises(TypeError, match="no C spelling for kernel-IR expression Half"):
        render(type("Half", (kexpr.Expr,), {})())
    with pytest.raises(TypeError, match="has no str"):
        str(kexpr.Var("i0"))  # its text is codegen's: a node has no str
    # A statement is data: codegen spells each kind, and refuses one it has no spelling for.
    from engine.codegen.statements import stmt_lines

    with pytest.raises(TypeError, match="no CUDA spelling for kernel-IR statement Quiet"):
        stmt_lines(type("Quiet", (kir.Stmt,), {})(), 0)
    with pytest.raises(TypeError, match="Mute must define operands"):
        type("Mute", (kexpr.Spelled,), {})
    # a subclass of a node codegen spells: spelled as its base
    leaf = type("Leaf", (kexpr.Lit,), {})
    assert render(leaf("x")) == "x"
