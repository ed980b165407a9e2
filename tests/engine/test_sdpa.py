"""sdpfa_fwd / sdpfa_bwd: the reference against torch's own attention and autograd, the
segments they make (expr_eval, apart from the pointwise ops around them), the IR listing,
the refusals (shapes, dtypes), and attention with dropout: defined and compiled, refused when run."""

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion, dumps_fusion, load_fusion, loads_fusion
from engine.errors import ExecutionError, FusionDefinitionError
from engine.reference import evaluate
from tests.emulation import needs_gxx

ATTENTION_DROPOUT = Path(__file__).parent / "fixtures" / "attention_dropout.py"


def _qkv(dtype=torch.float64, n=2, h=3, seq_q=5, seq_k=7, e=8, ev=6):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(n, h, s, d, generator=g, dtype=dtype) for s, d in ((seq_q, e), (seq_k, e), (seq_k, ev))]


def _define(fd: FusionDefinition, dtype: DataType):
    return [fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_forward_matches_torch_attention(causal, scale):
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.Double)
        out, lse, _, _ = fd.ops.sdpfa_fwd(q, k, v, None, fd.define_scalar(causal, dtype=DataType.Bool),
                                          None if scale is None else fd.define_scalar(scale, dtype=DataType.Double))
        fd.add_output(out)
        fd.add_output(lse)
    xs = _qkv()
    got, got_lse = evaluate(fd.fusion, xs)
    want = torch.nn.functional.scaled_dot_product_attention(*xs, is_causal=causal, scale=scale)
    torch.testing.assert_close(got, want)
    s = torch.matmul(xs[0], xs[1].transpose(-2, -1)) * (scale or 8 ** -0.5)
    if causal:
        s = s.masked_fill(~torch.ones(5, 7, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(got_lse, torch.logsumexp(s, -1).float())


@pytest.mark.parametrize("causal", [False, True])
def test_backward_matches_autograd(causal):
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.Double)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, 0.0, causal, None)
        g = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.Double)
        for t in fd.ops.sdpfa_bwd(g, q, k, v, out, lse, 0.0, causal, seed, offset, None):
            fd.add_output(t)
    xs = [t.requires_grad_() for t in _qkv()]
    grad = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    torch.nn.functional.scaled_dot_product_attention(*xs, is_causal=causal).backward(grad)
    got = evaluate(fd.fusion, [t.detach() for t in xs] + [grad])
    for g_got, t in zip(got, xs):
        torch.testing.assert_close(g_got, t.grad, rtol=1e-6, atol=1e-6)


def test_bias_and_mask_in_nvfuser_directs_argument_order():
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.Double)
        bias = fd.define_tensor(shape=[-1, 1, -1, -1], contiguity=[True, None, True, True], dtype=DataType.Double)
        mask = fd.define_tensor(shape=[1, 1, -1, -1], contiguity=[None, None, True, True], dtype=DataType.Bool)
        out, _, _, _ = fd.ops.sdpfa_fwd(q, k, v, bias, mask, None, False, None)
        fd.add_output(out)
    xs = _qkv()
    b = torch.randn(2, 1, 5, 7, dtype=torch.float64)
    m = torch.rand(1, 1, 5, 7) > 0.3
    m[..., 0] = True  # every query keeps a key
    (got,) = evaluate(fd.fusion, [*xs, b, m])
    want = torch.nn.functional.scaled_dot_product_attention(*xs, attn_mask=b.masked_fill(~m, float("-inf")))
    torch.testing.assert_close(got, want)
    assert "bias=T3" in str(fd.fusion) and "mask=T4" in str(fd.fusion)


def test_attention_runs_as_its_own_expr_eval_segment_in_bf16():
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.BFloat16)
        q2 = fd.ops.cast(fd.ops.mul(fd.ops.cast(q, DataType.Float), 2.0), DataType.BFloat16)
        out, _, _, _ = fd.ops.sdpfa_fwd(q2, k, v, None, True, None)
        fd.add_output(fd.ops.cast(out, DataType.Float))
    xs = _qkv(torch.bfloat16)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise", "expr_eval", "pointwise"]
    (got,) = cf.run(xs, backend="emulate")
    want = torch.nn.functional.scaled_dot_product_attention(
        (xs[0].float() * 2).bfloat16().float(), xs[1].float(), xs[2].float(), is_causal=True)
    torch.testing.assert_close(got, want.bfloat16().float(), rtol=2e-2, atol=2e-2)
    assert " = sdpa(T" in str(fd.fusion) and "is_causal=true" in str(fd.fusion)


def test_sdpa_script_round_trips():
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.Float)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=0.0, is_causal=False, scale=0.25)
        fd.add_output(out)
        fd.add_output(seed)
    again = loads_fusion(dumps_fusion(fd), "sdpa.py")
    assert str(again.fusion) == str(fd.fusion)
    xs = _qkv(torch.float32)
    a, b = evaluate(fd.fusion, xs), evaluate(again.fusion, xs)
    assert torch.equal(a[0], b[0]) and a[1].shape == (2,)


@pytest.mark.parametrize("build, why", [
    (lambda fd, q, k, v: fd.ops.sdpfa_fwd(q, k, fd.ops.sum(v, [3]), None, None, None), "value T.* must be 4-D"),
    (lambda fd, q, k, v: fd.ops.sdpfa_fwd(q, k, fd.ops.broadcast(v, [True, False, False, False, False]),
                                          None, None, None), "value T.* must be 4-D .* like the query, got 5-D"),
    (lambda fd, q, k, v: fd.ops.sdpfa_fwd(q, k, fd.ops.cast(v, DataType.Half), None, None, None),
     "must share one floating dtype"),
    (lambda fd, q, k, v: fd.ops.sdpfa_fwd(q, k, v, None, 1.0, None), "is_causal must be a bool"),
])
def test_bad_attention_definitions_name_the_problem(build, why):
    with pytest.raises(FusionDefinitionError, match=why), FusionDefinition() as fd:
        build(fd, *_define(fd, DataType.Float))


# ---- dropout inside attention ----------------------------------------------------------------

def test_attention_with_dropout_compiles_and_its_run_is_refused_naming_op_and_segment():
    """The file opens and compiles: the pointwise segments get kernels, the attention ops are
    expr_eval segments. Running refuses at the attention segment, on every back end's path
    (expr_eval segments are evaluated by the reference's rule), and the whole-fusion reference
    refuses with the same op message."""
    fd = load_fusion(ATTENTION_DROPOUT)
    assert "dropout_p = 0.1" in str(fd.fusion)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise", "expr_eval", "expr_eval", "pointwise"]
    assert all(s.cuda_source and s.kernel_ir for s in cf.segments if s.scheduler == "pointwise")
    assert "sdpa(" in cf.segments[1].scheduled_ir and "sdpa_bwd(" in cf.segments[2].scheduled_ir
    op = (r"sdpfa_fwd producing T7, T8, T9, T10: dropout_p = 0\.1: attention with dropout is not run: flash "
          r"attention draws its dropout mask from torch's CUDA generator, which the reference evaluator cannot "
          r"reproduce")
    with pytest.raises(ExecutionError, match=r"^segment 1 \(expr_eval\): " + op):
        cf.run(xs, backend="reference")
    with pytest.raises(ExecutionError, match="^" + op):
        evaluate(fd.fusion, xs)
    with pytest.raises(ExecutionError, match="^" + op):
        fd.execute(xs)


def test_a_runtime_dropout_p_is_refused_only_when_it_is_not_zero():
    """dropout_p given at run time: 0.0 runs (and matches torch), anything else is refused
    when the attention runs, by sdpfa_bwd as much as by sdpfa_fwd."""
    with FusionDefinition() as fd:
        q, k, v = _define(fd, DataType.Float)
        p = fd.define_scalar(None, dtype=DataType.Double)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, p, False, None)
        fd.add_output(out)
    xs = _qkv(torch.float32)
    cf = compile_fusion(fd, [*xs, 0.0])
    (got,) = cf.run([*xs, 0.0], backend="reference")
    torch.testing.assert_close(got, torch.nn.functional.scaled_dot_product_attention(*xs))
    with pytest.raises(ExecutionError, match=r"segment 0 \(expr_eval\): sdpfa_fwd producing T3, T4, T5, T6: "
                                             r"dropout_p = 0\.25: attention with dropout is not run"):
        compile_fusion(fd, [*xs, 0.25]).run([*xs, 0.25], backend="reference")
    with FusionDefinition() as bwd:
        g, q, k, v, o = (bwd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.Float)
                         for _ in range(5))
        lse = bwd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        seed = bwd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Int)
        offset = bwd.define_tensor(shape=[], contiguity=[], dtype=DataType.Int)
        for t in bwd.ops.sdpfa_bwd(g, q, k, v, o, lse, 0.5, False, seed, offset):
            bwd.add_output(t)
    q, k, v = _qkv(torch.float32, seq_k=5, ev=8)
    args = [torch.randn_like(q), q, k, v, torch.randn_like(q), torch.randn(2, 3, 5),
            torch.zeros(2, dtype=torch.int64), torch.zeros((), dtype=torch.int64)]
    cf = compile_fusion(bwd, args)
    with pytest.raises(ExecutionError, match=r"segment 0 \(expr_eval\): sdpfa_bwd producing T8, T9, T10: "
                                             r"dropout_p = 0\.5: attention with dropout is not run"):
        cf.run(args, backend="reference")


@needs_gxx
def test_attention_with_dropout_is_refused_alike_on_the_emulator():
    """The emulator runs the pointwise kernel before the attention, then refuses with the
    reference back end's message: both run the attention through the same rule."""
    fd = load_fusion(ATTENTION_DROPOUT)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    messages = []
    for backend in ("reference", "emulate"):
        with pytest.raises(ExecutionError) as info:
            cf.run(xs, backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and messages[0].startswith("segment 1 (expr_eval): sdpfa_fwd producing")


def test_attention_with_a_leading_axis_is_attention_per_index_of_it():
    """5-D q, k, v ([D, N, H, L, E], nvFuser's logical device axis first): each index of the
    leading axis is an ordinary 4-D attention, forward and backward."""
    with FusionDefinition() as fd:
        q, k, v, go = (fd.define_tensor(shape=[-1] * 5, contiguity=[True] * 5, dtype=DataType.Double)
                       for _ in range(4))
        p = fd.define_scalar(0.0, dtype=DataType.Double)
        causal = fd.define_scalar(True, dtype=DataType.Bool)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=p, is_causal=causal)
        for t in (out, *fd.ops.sdpfa_bwd(go, q, k, v, out, lse, p, causal, seed, offset)):
            fd.add_output(t)
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(2, 2, 3, 5, 8, generator=g, dtype=torch.float64, requires_grad=k < 3) for k in range(4)]
    ref = torch.nn.functional.scaled_dot_product_attention(*xs[:3], is_causal=True)
    ref.backward(xs[3])
    got = evaluate(fd.fusion, [x.detach() for x in xs])
    for a, b in zip(got, (ref, xs[0].grad, xs[1].grad, xs[2].grad)):
        torch.testing.assert_close(a, b.detach())
