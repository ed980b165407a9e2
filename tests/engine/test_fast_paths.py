"""The per-call fast paths (engine.runtime.fast_paths) against the plain answers they stand for."""

import pytest
import torch

from engine.frontend.input_spec import input_signature
from engine.host.plan import InputCheck
from engine.runtime import fast_paths
from engine.runtime.fast_paths import SignatureGuard, allocator


@pytest.mark.parametrize("shape,stride,dtype", [((4, 6), (6, 1), torch.float32), ((4, 6), (1, 4), torch.bfloat16),
                                                ((), (), torch.int64), ((0, 3), (3, 1), torch.float16),
                                                ((2, 3, 5), (0, 5, 1), torch.bool)])
def test_allocator_makes_what_empty_strided_makes(shape, stride, dtype):
    t = allocator(torch.device("cpu"))(shape, stride, dtype)
    ref = torch.empty_strided(shape, stride, dtype=dtype)
    assert (t.shape, t.stride(), t.dtype, t.device) == (ref.shape, ref.stride(), ref.dtype, ref.device)


def _inputs():
    return [torch.randn(8, 16), torch.randn(16, 8, dtype=torch.float16).t(), 3.0]


def _guard(xs):
    # The pinned torch has the C++ check: a guard that is not built there is a failure. A
    # torch without it gets no guard (InputCheck then compares in Python, tested below).
    if fast_paths._TENSOR_GUARDS is None:
        assert SignatureGuard.build(xs, [16, 16, None]) is None
        pytest.skip("this torch has no C++ tensor guard: InputCheck compares in Python")
    guard = SignatureGuard.build(xs, [16, 16, None])
    assert guard is not None
    return guard


def test_guard_accepts_the_inputs_it_was_built_from_and_their_like():
    xs = _inputs()
    guard = _guard(xs)
    assert guard(xs)
    assert guard(_inputs())  # other tensors, same signature


@pytest.mark.parametrize("change", ["shape", "stride", "dtype", "misaligned", "type", "count", "requires_grad"])
def test_guard_refuses_what_the_signature_does_not_allow(change):
    guard = _guard(_inputs())
    ys = _inputs()
    if change == "shape":
        ys[0] = torch.randn(8, 17)
    elif change == "stride":
        ys[1] = torch.randn(8, 16, dtype=torch.float16)
    elif change == "dtype":
        ys[0] = torch.randn(8, 16, dtype=torch.float64)
    elif change == "misaligned":
        ys[0] = torch.randn(8 * 16 + 1)[1:].view(8, 16)
    elif change == "type":
        ys[2] = 3
    elif change == "count":
        ys = ys[:2]
    else:
        ys[0] = ys[0].requires_grad_(True)
    assert not guard(ys)


def test_input_check_keeps_the_full_comparison_behind_the_guard():
    xs = _inputs()
    check = InputCheck(input_signature(xs), on_gpu=False)
    assert check(xs) and check(_inputs())
    grad = _inputs()
    grad[0].requires_grad_(True)  # the guard says no, the signature says yes
    assert check(grad)
    assert check(_inputs())
    bad = _inputs()
    bad[0] = torch.randn(8, 16)[:, :15]
    assert not check(bad)
    misaligned = _inputs()
    misaligned[0] = torch.randn(8 * 16 + 1)[1:].view(8, 16)
    assert not check(misaligned)
