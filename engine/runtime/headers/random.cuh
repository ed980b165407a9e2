// fusescope runtime: random numbers for RNGOp, as nvFuser draws them. Philox4x32-10 (Salmon
// et al., SC'11) with counter (offset lo, offset hi, subsequence lo, subsequence hi) and key
// (seed lo, seed hi); the element at linear index n takes word n % 4 of philox(seed, n / 4,
// offset) (double: words 2(n % 2) and 2(n % 2) + 1 of philox(seed, n / 2, offset)).
//
// engine/philox.py computes the same numbers for the reference. The affine steps are
// spelled unfused (fsMulRn/fsAddRn, helpers.cuh) so that a contracted FMA cannot round differently
// from the reference; nvFuser lets them contract, so a uniform over a range other than
// [0, 1) may differ from nvFuser's in its last bit.
#ifndef FS_RUNTIME_RANDOM_CUH
#define FS_RUNTIME_RANDOM_CUH

struct FsPhilox {
  uint32_t w[4];
};

FS_DEVICE uint32_t fsMulHiLo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

FS_DEVICE FsPhilox fsPhiloxRound(FsPhilox c, uint32_t k0, uint32_t k1) {
  uint32_t hi0, hi1;
  const uint32_t lo0 = fsMulHiLo(0xD2511F53u, c.w[0], &hi0);
  const uint32_t lo1 = fsMulHiLo(0xCD9E8D57u, c.w[2], &hi1);
  FsPhilox r;
  r.w[0] = hi1 ^ c.w[1] ^ k0;
  r.w[1] = lo1;
  r.w[2] = hi0 ^ c.w[3] ^ k1;
  r.w[3] = lo0;
  return r;
}

FS_DEVICE FsPhilox fsPhilox(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  FsPhilox c;
  c.w[0] = static_cast<uint32_t>(offset);
  c.w[1] = static_cast<uint32_t>(offset >> 32);
  c.w[2] = static_cast<uint32_t>(subsequence);
  c.w[3] = static_cast<uint32_t>(subsequence >> 32);
  for (int i = 0; i < 9; ++i) {
    c = fsPhiloxRound(c, k0, k1);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return fsPhiloxRound(c, k0, k1);
}

// x / 2^32 + 2^-33: in (0, 1]; 1 where x rounds up to 2^32.
FS_DEVICE float fsRawUnitFloat(uint32_t x) {
  const float scale = 2.3283064365386963e-10f;  // 2^-32, exact
  return fsAddRn(fsMulRn(static_cast<float>(x), scale), 0.5f * scale);
}

FS_DEVICE float fsUnitFloat(uint32_t x) {
  const float r = fsRawUnitFloat(x);
  return r == 1.0f ? 0.0f : r;
}

FS_DEVICE double fsUnitDouble(uint32_t x, uint32_t y) {
  const double scale = 1.1102230246251565e-16;  // 2^-53, exact
  const uint64_t z = static_cast<uint64_t>(x) ^ (static_cast<uint64_t>(y) << 21);
  const double r = fsAddRn(fsMulRn(static_cast<double>(z), scale), 0.5 * scale);
  return r == 1.0 ? 0.0 : r;
}

// Box-Muller over words (x, y); the component's parity picks sine or cosine.
FS_DEVICE float fsNormalFloat(uint32_t x, uint32_t y, int component) {
  const float r = sqrtf(fsMulRn(-2.0f, logf(fsUnitFloat(x))));
  const float v = fsMulRn(fsUnitFloat(y), 6.2831855f);
  return fsMulRn(r, component % 2 == 0 ? sinf(v) : cosf(v));
}

// The last Philox block a thread drew, kept across elements: four consecutive elements (two
// for double) share one block, so a vectorized or unrolled loop draws it once, not per
// element (nvFuser keeps rng_result the same way).
struct FsPhiloxCache {
  bool valid;
  uint64_t seed, subsequence, offset;
  FsPhilox block;
};

FS_DEVICE const FsPhilox& fsPhiloxCached(FsPhiloxCache& cache, uint64_t seed, uint64_t subsequence,
                                         uint64_t offset) {
  if (!cache.valid || cache.subsequence != subsequence || cache.offset != offset || cache.seed != seed) {
    cache.block = fsPhilox(seed, subsequence, offset);
    cache.valid = true;
    cache.seed = seed;
    cache.subsequence = subsequence;
    cache.offset = offset;
  }
  return cache.block;
}

// Word c of a block by selects, so that the block stays in registers (an indexed local array
// would go to local memory).
FS_DEVICE uint32_t fsWord(const FsPhilox& p, int c) {
  return c == 0 ? p.w[0] : c == 1 ? p.w[1] : c == 2 ? p.w[2] : p.w[3];
}

// One element of a float-computed draw (float, half, bfloat16 tensors), before rounding to
// the tensor's type. A narrow uniform keeps the raw unit (the caller maps `hi` to `lo`).
FS_DEVICE float fsRngFloat(FsPhiloxCache& cache, bool normal, bool raw, uint64_t seed, uint64_t offset,
                           nvfuser_index_t n, float a, float b) {
  const FsPhilox& p = fsPhiloxCached(cache, seed, static_cast<uint64_t>(n / 4), offset);
  const int c = static_cast<int>(n % 4);
  if (normal) {
    const int pair = c / 2 * 2;
    return fsAddRn(fsMulRn(fsNormalFloat(fsWord(p, pair), fsWord(p, pair + 1), c), b), a);
  }
  const float u = raw ? fsRawUnitFloat(fsWord(p, c)) : fsUnitFloat(fsWord(p, c));
  return fsAddRn(a, fsMulRn(b - a, u));
}

FS_DEVICE double fsRngDouble(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
                             nvfuser_index_t n, double a, double b) {
  const FsPhilox& p = fsPhiloxCached(cache, seed, static_cast<uint64_t>(n / 2), offset);
  const int c = static_cast<int>(n % 2);
  if (normal) {
    const double r = sqrt(fsMulRn(-2.0, log(fsUnitDouble(p.w[0], p.w[1]))));
    const double v = fsMulRn(fsUnitDouble(p.w[2], p.w[3]), 6.2831853071795860);
    return fsAddRn(fsMulRn(fsMulRn(r, c == 0 ? sin(v) : cos(v)), b), a);
  }
  return fsAddRn(a, fsMulRn(b - a, c == 0 ? fsUnitDouble(p.w[0], p.w[1]) : fsUnitDouble(p.w[2], p.w[3])));
}

template <typename T>
FS_DEVICE T fsRng(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset, nvfuser_index_t n,
                  double a, double b);

template <>
FS_DEVICE float fsRng<float>(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
    nvfuser_index_t n, double a, double b) {
  return fsRngFloat(cache, normal, false, seed, offset, n, static_cast<float>(a), static_cast<float>(b));
}

template <>
FS_DEVICE double fsRng<double>(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
    nvfuser_index_t n, double a, double b) {
  return fsRngDouble(cache, normal, seed, offset, n, a, b);
}

// A half or bfloat16 draw: computed in float, rounded by `round`; a uniform that rounds up to
// its upper bound becomes the lower one (nvFuser's rule for narrow types).
template <typename T, typename Round>
FS_DEVICE T fsRngNarrow(Round round, FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
                        nvfuser_index_t n, double a, double b) {
  const float lo = static_cast<float>(a), hi = static_cast<float>(b);
  const T h = round(fsRngFloat(cache, normal, !normal, seed, offset, n, lo, hi));
  return !normal && h.raw == round(hi).raw ? round(lo) : h;
}

template <>
FS_DEVICE __half fsRng<__half>(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
    nvfuser_index_t n, double a, double b) {
  return fsRngNarrow<__half>([](float x) { return __float2half(x); }, cache, normal, seed, offset, n, a, b);
}

template <>
FS_DEVICE __bfloat fsRng<__bfloat>(FsPhiloxCache& cache, bool normal, uint64_t seed, uint64_t offset,
    nvfuser_index_t n, double a, double b) {
  return fsRngNarrow<__bfloat>([](float x) { return __float2bfloat(x); }, cache, normal, seed, offset, n, a, b);
}

#endif  // FS_RUNTIME_RANDOM_CUH
