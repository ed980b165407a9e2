"""Philox4x32-10 and nvFuser's conversions of its words to floats, vectorized with numpy.

The reference evaluator's side of RNGOp; engine/runtime/headers/random.cuh is the kernel's
side, step for step, so that both draw the same numbers: the uniform ones bit for bit, the
normal ones up to the last bits of logf/sinf/cosf, which differ between libraries.

Counter: (offset lo, offset hi, subsequence lo, subsequence hi); key: (seed lo, seed hi);
ten rounds with the Weyl key bumps between them (Salmon et al., SC'11). Blocks are computed
as whole arrays of 32-bit words, a cache-sized chunk of counters at a time.
"""

from __future__ import annotations

import numpy as np

_MUL_A, _MUL_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_WEYL_A, _WEYL_B = 0x9E3779B9, 0xBB67AE85
_WORD = 0xFFFFFFFF
_32 = np.uint64(32)
# Counters per chunk: the round's arrays (a few hundred KiB) stay in the L2 cache.
_CHUNK = 1 << 16


def philox(seed: int, subsequence: np.ndarray, offset: int) -> list[np.ndarray]:
    """The four 32-bit words (uint32 arrays shaped like `subsequence`) of
    philox(seed, subsequence, offset)."""
    sub = np.asarray(subsequence).astype(np.uint64).reshape(-1)
    out = [np.empty(sub.shape, np.uint32) for _ in range(4)]
    for s in range(0, sub.shape[0], _CHUNK):
        for o, w in zip(out, _block(seed, sub[s : s + _CHUNK], offset)):
            o[s : s + _CHUNK] = w
    shape = np.shape(subsequence)
    return [o.reshape(shape) for o in out]


def _block(seed: int, sub: np.ndarray, offset: int) -> list[np.ndarray]:
    """philox(seed, sub, offset) for a 1-D uint64 array of subsequences."""
    seed, offset = seed % 2**64, offset % 2**64
    c0 = np.full(sub.shape, offset & _WORD, np.uint32)
    c1 = np.full(sub.shape, offset >> 32, np.uint32)
    c2, c3 = sub.astype(np.uint32), (sub >> _32).astype(np.uint32)
    k0, k1 = seed & _WORD, seed >> 32
    p0, p1 = np.empty(sub.shape, np.uint64), np.empty(sub.shape, np.uint64)
    for r in range(10):
        if r:
            k0, k1 = (k0 + _WEYL_A) & _WORD, (k1 + _WEYL_B) & _WORD
        # (2^32 - 1)^2 < 2^64: the products are exact in uint64; their low words are the
        # truncating casts to uint32.
        np.multiply(c0, _MUL_A, out=p0, dtype=np.uint64)
        np.multiply(c2, _MUL_B, out=p1, dtype=np.uint64)
        n0 = (p1 >> _32).astype(np.uint32)
        n0 ^= c1
        n0 ^= np.uint32(k0)
        n2 = (p0 >> _32).astype(np.uint32)
        n2 ^= c3
        n2 ^= np.uint32(k1)
        c0, c1, c2, c3 = n0, p1.astype(np.uint32), n2, p0.astype(np.uint32)
    return [c0, c1, c2, c3]


def draw(dist: str, numel: int, seed: int, offset: int, double: bool,
         a: float, b: float, raw: bool = False) -> np.ndarray:
    """`numel` numbers of `dist` ("uniform": [a, b); "normal": mean a, std b), float64 for a
    double tensor and float32 otherwise, in linear-index order. With `raw`, a float uniform
    keeps the words that round to 1 (the half and bfloat16 draws: their caller maps b to a
    after rounding to the narrow type).

    Element n takes component n % m (m = 4 words per block for float, 2 word pairs for
    double) of block n // m: each block is drawn once and its m components are computed as
    whole arrays, a chunk of blocks at a time, into the columns of the result."""
    m = 2 if double else 4
    blocks = -(-numel // m)
    out = np.empty((blocks, m), np.float64 if double else np.float32)
    for s in range(0, blocks, _CHUNK):
        sub = np.arange(s, min(s + _CHUNK, blocks), dtype=np.uint64)
        words = _block(seed, sub, offset)
        for k, comp in enumerate(_components(dist, words, double, a, b, raw)):
            out[s : s + _CHUNK, k] = comp
    return out.reshape(-1)[:numel]


def _components(dist: str, w: list[np.ndarray], double: bool, a: float, b: float,
                raw: bool) -> list[np.ndarray]:
    """The m numbers of each block, as m arrays (component k of every block)."""
    if double:
        if dist == "uniform":
            return [a + (b - a) * _unit_double(w[0], w[1]), a + (b - a) * _unit_double(w[2], w[3])]
        with np.errstate(divide="ignore"):
            r = np.sqrt(-2.0 * np.log(_unit_double(w[0], w[1])))
        v = _unit_double(w[2], w[3]) * 6.2831853071795860
        return [r * np.sin(v) * b + a, r * np.cos(v) * b + a]
    if dist == "uniform":
        lo, span = np.float32(a), np.float32(np.float32(b) - np.float32(a))
        unit = raw_unit_float if raw else _unit_float
        return [lo + span * unit(x) for x in w]
    comps = []
    for x, y in ((w[0], w[1]), (w[2], w[3])):
        # Box-Muller over a word pair: the first component of the pair takes the sine.
        with np.errstate(divide="ignore"):
            r = np.sqrt(np.float32(-2.0) * np.log(_unit_float(x)))
        v = _unit_float(y) * np.float32(6.2831855)
        comps += [(r * np.sin(v)).astype(np.float32), (r * np.cos(v)).astype(np.float32)]
    return [z * np.float32(b) + np.float32(a) for z in comps]


def raw_unit_float(x: np.ndarray) -> np.ndarray:
    """x / 2^32 + 2^-33 in float32: in (0, 1], 1 where x rounds up to 2^32."""
    scale = np.float32(2.0**-32)
    return x.astype(np.float32) * scale + np.float32(0.5) * scale


def _unit_float(x: np.ndarray) -> np.ndarray:
    r = raw_unit_float(x)
    return np.where(r == np.float32(1.0), np.float32(0.0), r)


def _unit_double(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64) ^ (y.astype(np.uint64) << np.uint64(21))
    scale = 2.0**-53
    r = z.astype(np.float64) * scale + 0.5 * scale
    return np.where(r == 1.0, 0.0, r)
