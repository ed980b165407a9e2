"""An output against the reference evaluator's: the largest error, and whether it is within
the engine's test tolerance."""

from __future__ import annotations

from typing import Any

import torch


def compare_output(out: Any, ref: Any) -> tuple[float, str]:
    """(max absolute error, note). NaN where the reference has NaN counts as equal; values
    that cannot be subtracted (fp4, shapes that differ) are compared bit for bit."""
    out = out.detach().cpu()
    ref = ref.detach().cpu()
    if out.shape != ref.shape:
        return float("inf"), f"shape {tuple(out.shape)} vs reference {tuple(ref.shape)}"
    try:
        a, b = out.double(), ref.double()
    except (RuntimeError, TypeError):
        a8 = out.contiguous().view(torch.uint8)
        b8 = ref.contiguous().view(torch.uint8)
        diff = int((a8 != b8).sum())
        return float(diff), f"compared bit for bit: {diff} byte(s) differ" if diff else "bit-exact"
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    if bool(same.all()):
        return 0.0, ""
    d = (a - b).abs()
    d = torch.where(same, torch.zeros_like(d), d)
    d = torch.nan_to_num(d, nan=float("inf"))
    return float(d.max()), ""


def check_output(out: Any, ref: Any) -> tuple[float, float, bool, str, float]:
    """(max error, tolerance, ok, note, rtol): floats within the engine's test tolerance (rtol
    1e-5 for float/double, 1e-2 for narrower floats; the tolerance is rtol scaled by the
    reference's magnitude), the rest exact (rtol 0)."""
    err, note = compare_output(out, ref)
    if not ref.dtype.is_floating_point or ref.element_size() < 2 or note:
        return err, 0.0, err == 0.0, note, 0.0
    tol = 1e-5 if ref.dtype in (torch.float32, torch.float64) else 1e-2
    finite = ref.detach().cpu().double()
    finite = finite[torch.isfinite(finite)]
    scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    bound = tol * scale
    # The engine's tests allow rtol * |ref| + atol per element; the largest that can be is
    # 2 * tol * scale, and a per-element check is what decides.
    ok = bool(torch.isclose(out.detach().cpu().double(), ref.detach().cpu().double(), rtol=tol, atol=bound,
                            equal_nan=True).all())
    return err, bound, ok, "", tol
