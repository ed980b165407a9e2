"""The kernel IR's typed ops (engine.lower.kops): built by lowering, spelled by codegen."""

import pytest

from engine.codegen import ops_table
from engine.dtypes import DataType
from engine.errors import CompileError
from engine.lower import kops, kquery
from engine.lower.kexpr import Access, Lit, Var

F, D, INT, H = DataType.Float, DataType.Double, DataType.Int, DataType.Half


def test_typed_ops_render_as_ops_table_spells_them():
    x = Access("T1", Var("i0"))
    assert str(kops.unary("exp", x, F)) == ops_table.unary("exp", "T1[i0]", F)
    assert str(kops.binary("pow", x, Lit("b"), F, 2)) == ops_table.binary("pow", "T1[i0]", "b", F, 2)
    assert str(kops.cast(x, H, D)) == ops_table.cast("T1[i0]", H, D)
    assert str(kops.literal(-1.5, F)) == ops_table.literal(-1.5, F)
    assert str(kops.combine("max", x, Lit("y"), F)) == ops_table.reduction_combine("max", "T1[i0]", "y", F)


def test_an_op_spelled_as_its_operand_is_the_operand():
    x = Lit("i3")
    assert kops.cast(x, INT, DataType.Index) is x
    assert kops.unary("ceil", x, INT) is x


def test_an_operand_named_twice_is_walked_twice():
    e = kops.binary("pow", Access("T1", Var("i0")), Lit("3"), F, 3)
    assert kquery.count_var(e, "i0") == 3


def test_rewriting_an_operand_spells_the_op_again():
    e = kops.unary("neg", Access("T1", Var("i0")), F)
    got = kquery.substitute(e, "i0", Var("j"))
    assert str(got) == ops_table.unary("neg", "T1[j]", F)


def test_queries_see_operands_not_spelling():
    e = kops.combiner("add", F)  # a lambda: its text holds `[]`, `a` and `b`
    assert not kquery.reads_memory(e)
    assert kquery.words(e) == set()
    assert kquery.words(kops.unary("exp", Access("T1", Var("i0")), F)) == {"T1", "i0"}


def test_an_op_codegen_cannot_spell_fails_when_built():
    with pytest.raises(CompileError, match="bitwise_not"):
        kops.unary("bitwise_not", Lit("x"), F)


def test_a_node_class_without_its_rendering_is_refused_when_made() -> None:
    from engine.lower import kexpr, kir

    with pytest.raises(TypeError, match="Half must define render"):
        type("Half", (kexpr.Expr,), {})
    # A statement is data: codegen spells each kind, and refuses one it has no spelling for.
    from engine.codegen.statements import stmt_lines

    with pytest.raises(TypeError, match="no CUDA spelling for kernel-IR statement Quiet"):
        stmt_lines(type("Quiet", (kir.Stmt,), {})(), 0)
    with pytest.raises(TypeError, match="Mute must define operands"):
        type("Mute", (kexpr.Spelled,), {})
    # defined by a class between it and the base: accepted
    leaf = type("Leaf", (kexpr.Lit,), {})
    assert str(leaf("x")) == "x"
