"""Philox4x32-10 and nvFuser's conversions of its words to floats, vectorized with numpy.

The reference evaluator's side of RNGOp; engine/codegen/runtime/random.cuh is the kernel's
side, step for step, so that both draw the same numbers: the uniform ones bit for bit, the
normal ones up to the last bits of logf/sinf/cosf, which differ between libraries.

Counter: (offset lo, offset hi, subsequence lo, subsequence hi); key: (seed lo, seed hi);
ten rounds with the Weyl key bumps between them (Salmon et al., SC'11).
"""

from __future__ import annotations

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_MUL_A, _MUL_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_WEYL_A, _WEYL_B = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)


def philox(seed: int, subsequence: np.ndarray, offset: int) -> list[np.ndarray]:
    """The four 32-bit words (as uint64 arrays) of philox(seed, subsequence, offset)."""
    sub = subsequence.astype(np.uint64)
    seed_u, offset_u = np.uint64(seed % 2**64), np.uint64(offset % 2**64)
    ctr = [np.full_like(sub, offset_u & _MASK), np.full_like(sub, offset_u >> np.uint64(32)),
           sub & _MASK, sub >> np.uint64(32)]
    key = [seed_u & _MASK, seed_u >> np.uint64(32)]
    for _ in range(9):
        ctr = _round(ctr, key)
        key = [(key[0] + _WEYL_A) & _MASK, (key[1] + _WEYL_B) & _MASK]
    return _round(ctr, key)


def _round(ctr: list[np.ndarray], key: list[np.uint64]) -> list[np.ndarray]:
    # (2^32 - 1)^2 < 2^64: the products are exact in uint64.
    p0, p1 = _MUL_A * ctr[0], _MUL_B * ctr[2]
    hi0, lo0 = p0 >> np.uint64(32), p0 & _MASK
    hi1, lo1 = p1 >> np.uint64(32), p1 & _MASK
    return [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0]


def draw(dist: str, numel: int, seed: int, offset: int, double: bool,
         a: float, b: float, raw: bool = False) -> np.ndarray:
    """`numel` numbers of `dist` ("uniform": [a, b); "normal": mean a, std b), float64 for a
    double tensor and float32 otherwise, in linear-index order. With `raw`, a float uniform
    keeps the words that round to 1 (the half and bfloat16 draws: their caller maps b to a
    after rounding to the narrow type)."""
    m = 2 if double else 4
    n = np.arange(numel, dtype=np.uint64)
    words = philox(seed, n // np.uint64(m), offset)
    comp = (n % np.uint64(m)).astype(np.int64)
    stacked = np.stack(words)  # [4, numel]
    if double:
        lo = np.take_along_axis(stacked, (2 * comp)[None], 0)[0]
        hi = np.take_along_axis(stacked, (2 * comp + 1)[None], 0)[0]
        if dist == "uniform":
            u = _unit_double(lo, hi)
            return a + (b - a) * u
        r = np.sqrt(-2.0 * np.log(_unit_double(stacked[0], stacked[1])))
        v = _unit_double(stacked[2], stacked[3]) * 6.2831853071795860
        return np.where(comp % 2 == 0, r * np.sin(v), r * np.cos(v)) * b + a
    if dist == "uniform":
        word = np.take_along_axis(stacked, comp[None], 0)[0]
        u = raw_unit_float(word) if raw else _unit_float(word)
        lo, span = np.float32(a), np.float32(np.float32(b) - np.float32(a))
        return lo + span * u
    pair = comp // 2 * 2
    x = np.take_along_axis(stacked, pair[None], 0)[0]
    y = np.take_along_axis(stacked, (pair + 1)[None], 0)[0]
    with np.errstate(divide="ignore"):
        r = np.sqrt(np.float32(-2.0) * np.log(_unit_float(x)))
    v = _unit_float(y) * np.float32(6.2831855)
    z = np.where(comp % 2 == 0, r * np.sin(v), r * np.cos(v)).astype(np.float32)
    return z * np.float32(b) + np.float32(a)


def raw_unit_float(x: np.ndarray) -> np.ndarray:
    """x / 2^32 + 2^-33 in float32: in (0, 1], 1 where x rounds up to 2^32."""
    scale = np.float32(2.0**-32)
    return x.astype(np.float32) * scale + np.float32(0.5) * scale


def _unit_float(x: np.ndarray) -> np.ndarray:
    r = raw_unit_float(x)
    return np.where(r == np.float32(1.0), np.float32(0.0), r)


def _unit_double(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    z = x ^ (y << np.uint64(21))
    scale = 2.0**-53
    r = z.astype(np.float64) * scale + 0.5 * scale
    return np.where(r == 1.0, 0.0, r)
