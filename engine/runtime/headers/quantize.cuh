// fusescope runtime: nvfp4 block quantization (BlockQuantizationOp), the 128x4 block-scale
// swizzle, and the output offsets of the grouped-matmul scale layout op
// (PreprocessGroupedMatmulInputSf). The math is engine/nvfp4.py's, step for step, in fp32.
#ifndef FS_RUNTIME_QUANTIZE_CUH
#define FS_RUNTIME_QUANTIZE_CUH

// The 8 bytes of a quantized block of 16: byte j holds code 2j in its low nibble and code
// 2j+1 in its high nibble; `lo` is bytes 0-3. Stored with one 8-byte access.
struct alignas(8) FsNvfp4Packed {
  uint32_t lo;
  uint32_t hi;
};

// Directed roundings of a double to float (RD, RU).
FS_DEVICE float fsDoubleToFloatDown(double v) {
#if defined(FS_EMULATE)
  const float f = static_cast<float>(v);
  return static_cast<double>(f) > v ? std::nextafterf(f, -INFINITY) : f;
#else
  return __double2float_rd(v);
#endif
}

FS_DEVICE float fsDoubleToFloatUp(double v) {
#if defined(FS_EMULATE)
  const float f = static_cast<float>(v);
  return static_cast<double>(f) < v ? std::nextafterf(f, INFINITY) : f;
#else
  return __double2float_ru(v);
#endif
}

// The e2m1 code of RN(x / d) for d > 0 finite, without dividing. fsToE2m1Code counts the
// thresholds t that |q| passes (q > t or q >= t, ties to the even code). t's significand
// ends in 0, so with u the float spacing at t:
//   RN(y) >  t  <=>  y >  t + u/2      RN(y) >= t  <=>  y >= t - u/2
// and with y = |x| / d and P = (t +- u/2) * d (exact in double: 25 x 24 bits), for a float
// |x|:  |x| > P <=> |x| > RD(P),  |x| >= P <=> |x| >= RU(P).  One block shares d, so its
// seven float thresholds are computed once and each value costs seven compares.
struct FsE2m1Steps {
  float t[7];
};

FS_DEVICE FsE2m1Steps fsE2m1Steps(float d) {
  const double dd = static_cast<double>(d);
  FsE2m1Steps s;
  s.t[0] = fsDoubleToFloatDown(dd * (0.25 + 0x1p-26));
  s.t[1] = fsDoubleToFloatUp(dd * (0.75 - 0x1p-25));
  s.t[2] = fsDoubleToFloatDown(dd * (1.25 + 0x1p-24));
  s.t[3] = fsDoubleToFloatUp(dd * (1.75 - 0x1p-24));
  s.t[4] = fsDoubleToFloatDown(dd * (2.5 + 0x1p-23));
  s.t[5] = fsDoubleToFloatUp(dd * (3.5 - 0x1p-23));
  s.t[6] = fsDoubleToFloatDown(dd * (5.0 + 0x1p-22));
  return s;
}

FS_DEVICE uint32_t fsE2m1CodeBySteps(float x, const FsE2m1Steps& s) {
  const float a = fabsf(x);
  const uint32_t n = static_cast<uint32_t>(a > s.t[0]) + static_cast<uint32_t>(a >= s.t[1]) +
                     static_cast<uint32_t>(a > s.t[2]) + static_cast<uint32_t>(a >= s.t[3]) +
                     static_cast<uint32_t>(a > s.t[4]) + static_cast<uint32_t>(a >= s.t[5]) +
                     static_cast<uint32_t>(a > s.t[6]);
  return n | ((fsFloatAsUint(x) >> 28) & 8u);  // RN(x / d) keeps x's sign, -0 included
}

// bf16 values: the same steps rounded onto the bf16 grid, which holds every |x| (so the
// directed-rounding argument above holds on it too), all as ">=" (|x| > t <=> |x| >= the
// next bf16 above t), in both 16-bit lanes of a word: two values per compare.
struct FsE2m1StepsBf16x2 {
  uint32_t g[7];
};

FS_DEVICE uint32_t fsBf16x2Lanes(uint32_t b16) { return b16 | (b16 << 16); }

FS_DEVICE FsE2m1StepsBf16x2 fsE2m1StepsBf16x2(float d) {
  const FsE2m1Steps f = fsE2m1Steps(d);
  FsE2m1StepsBf16x2 s;
#pragma unroll
  for (int k = 0; k < 7; ++k) {
    const uint32_t b = fsFloatAsUint(f.t[k]);  // f.t[k] >= 0
    // Even k: |x| > t, t rounded down onto bf16, then its successor. Odd k: |x| >= t, up.
    s.g[k] = fsBf16x2Lanes(k % 2 == 0 ? (b >> 16) + 1u : (b + 0xffffu) >> 16);
  }
  return s;
}

// 0xffff in each 16-bit lane where bf16 a >= bf16 b.
FS_DEVICE uint32_t fsMaskGeBf16x2(uint32_t a, uint32_t b) {
#if defined(FS_EMULATE)
  const bool lo = fsUintAsFloat(a << 16) >= fsUintAsFloat(b << 16);
  const bool hi = fsUintAsFloat(a & 0xffff0000u) >= fsUintAsFloat(b & 0xffff0000u);
  return (lo ? 0xffffu : 0u) | (hi ? 0xffff0000u : 0u);
#else
  uint32_t m;
  asm("set.ge.u32.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(b));
  return m;
#endif
}

FS_DEVICE uint32_t fsMaxU16x2(uint32_t a, uint32_t b) {
#if defined(FS_EMULATE)
  const uint32_t lo = (a & 0xffffu) > (b & 0xffffu) ? (a & 0xffffu) : (b & 0xffffu);
  const uint32_t hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | (hi << 16);
#else
  uint32_t m;
  asm("max.u16x2 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(b));
  return m;
#endif
}

// The packed byte of two bf16 values (a word, element 2j in the low lane): the code is the
// number of steps passed, found by a binary search (lane masks select the next step).
FS_DEVICE uint32_t fsE2m1ByteBySteps(uint32_t w, const FsE2m1StepsBf16x2& s) {
  const uint32_t a = w & 0x7fff7fffu;
  const uint32_t m2 = fsMaskGeBf16x2(a, s.g[3]);
  const uint32_t m1 = fsMaskGeBf16x2(a, (s.g[5] & m2) | (s.g[1] & ~m2));
  const uint32_t up = (s.g[6] & m2) | (s.g[2] & ~m2);
  const uint32_t down = (s.g[4] & m2) | (s.g[0] & ~m2);
  const uint32_t m0 = fsMaskGeBf16x2(a, (up & m1) | (down & ~m1));
  // Each lane: code bits 0-2 and the sign of RN(x / d), which is x's, as bit 3.
  const uint32_t c = (m2 & 0x00040004u) | (m1 & 0x00020002u) | (m0 & 0x00010001u) |
                     ((w >> 12) & 0x00080008u);
  return (c | (c >> 12)) & 0xffu;
}

// The block's e4m3 scale from its amax; returns the divisor of its values. The clamped
// scale is NaN or in [2^-6, 448], so its e4m3 is normal or NaN: __float2e4m3's rounding of
// a normal value, without its other cases.
FS_DEVICE float fsNvfp4Scale(float amax, float global_scale, bool has_global_scale, __e4m3& scale) {
  float s = amax / 6.0f;
  if (has_global_scale) {
    s = s * global_scale;
  }
  s = fsClamp(s, 0.015625f, 448.0f);
  const uint32_t b = fsFloatAsUint(s);
  const uint32_t r = b + (static_cast<uint32_t>(7 - 127) << 23) + 0x7ffffu + ((b >> 20) & 1u);
  // A NaN keeps its sign, as in __float2e4m3.
  const uint32_t code = s != s ? 0x7fu | ((b >> 24) & 0x80u) : (r >> 20) & 0x7fu;
  scale = fsE4m3FromBits(static_cast<uint8_t>(code));
  float denom = s != s ? NAN : fsUintAsFloat((code << 20) + (120u << 23));
  if (has_global_scale) {
    denom = denom / global_scale;
  }
  return denom;
}

// The steps need 0 < d < inf; NaN blocks and odd global scales divide instead.
FS_DEVICE bool fsNvfp4ByDivision(float denom) { return !(denom > 0.0f && denom <= 3.4028234663852886e38f); }

FS_DEVICE FsNvfp4Packed fsNvfp4PackByDivision(const float* x16, float denom) {
  FsNvfp4Packed out{0u, 0u};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    out.lo |= static_cast<uint32_t>(fsToE2m1Code(fsClamp(x16[i] / denom, -6.0f, 6.0f))) << (4 * i);
    out.hi |= static_cast<uint32_t>(fsToE2m1Code(fsClamp(x16[8 + i] / denom, -6.0f, 6.0f))) << (4 * i);
  }
  return out;
}

// Quantize one block of 16 contiguous values:
//   amax = max |x| (NaN propagates);  s = amax / 6 (* global_scale when given)
//   scale = e4m3(clamp(s, 2^-6, 448))
//   q_i = e2m1(clamp(x_i / (float(scale) [/ global_scale]), -6, 6))
// Returns the packed codes. Every index is a constant once inlined and unrolled, so the
// block stays in registers.
FS_DEVICE FsNvfp4Packed nvfp4QuantizeBlock(const float* x16, __e4m3& scale, float global_scale,
                                           bool has_global_scale) {
  // |x| as bits: integer order is float order, and a NaN sorts above inf.
  uint32_t amax_bits = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t b = fsFloatAsUint(x16[i]) & 0x7fffffffu;
    amax_bits = b > amax_bits ? b : amax_bits;
  }
  const float denom = fsNvfp4Scale(fsUintAsFloat(amax_bits), global_scale, has_global_scale, scale);
  if (fsNvfp4ByDivision(denom)) {
    return fsNvfp4PackByDivision(x16, denom);
  }
  const FsE2m1Steps steps = fsE2m1Steps(denom);
  FsNvfp4Packed out{0u, 0u};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    out.lo |= fsE2m1CodeBySteps(x16[i], steps) << (4 * i);
    out.hi |= fsE2m1CodeBySteps(x16[8 + i], steps) << (4 * i);
  }
  return out;
}

// bf16 values, read as 8 words of two.
FS_DEVICE FsNvfp4Packed nvfp4QuantizeBlock(const __bfloat* x16, __e4m3& scale, float global_scale,
                                           bool has_global_scale) {
  uint32_t w[8];
  uint32_t amax2 = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    w[i] = static_cast<uint32_t>(x16[2 * i].raw) | (static_cast<uint32_t>(x16[2 * i + 1].raw) << 16);
    amax2 = fsMaxU16x2(amax2, w[i] & 0x7fff7fffu);  // |bf16| bits: NaN sorts above inf
  }
  const uint32_t amax_bits = (amax2 & 0xffffu) > (amax2 >> 16) ? (amax2 & 0xffffu) : (amax2 >> 16);
  const float denom = fsNvfp4Scale(fsUintAsFloat(amax_bits << 16), global_scale, has_global_scale, scale);
  if (fsNvfp4ByDivision(denom)) {
    float xf[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      xf[i] = __bfloat2float(x16[i]);
    }
    return fsNvfp4PackByDivision(xf, denom);
  }
  const FsE2m1StepsBf16x2 steps = fsE2m1StepsBf16x2(denom);
  FsNvfp4Packed out{0u, 0u};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    out.lo |= fsE2m1ByteBySteps(w[j], steps) << (8 * j);
    out.hi |= fsE2m1ByteBySteps(w[4 + j], steps) << (8 * j);
  }
  return out;
}

// The bytes-out form (byte j of packed8 is code 2j | code 2j+1 << 4), for callers that
// quantize into an array.
FS_DEVICE void nvfp4QuantizeBlock(const float* x16, uint8_t* packed8, __e4m3& scale, float global_scale,
                                  bool has_global_scale) {
  const FsNvfp4Packed p = nvfp4QuantizeBlock(x16, scale, global_scale, has_global_scale);
  for (int j = 0; j < 4; ++j) {
    packed8[j] = static_cast<uint8_t>(p.lo >> (8 * j));
    packed8[4 + j] = static_cast<uint8_t>(p.hi >> (8 * j));
  }
}

// Flat offset of block scale (r, c) of an [m, cols] scale matrix in the 128x4 swizzle:
// allocation [m/128, k/4, 32, 4, 4] of the split [m/128, 4, 32, k/4, 4], k = cols rounded
// up to a multiple of 4.
FS_DEVICE nvfuser_index_t nvfp4SwizzledScaleOffset(nvfuser_index_t r, nvfuser_index_t c,
                                                   nvfuser_index_t cols) {
  const nvfuser_index_t k4 = (cols + 3) / 4;
  return (r / 128) * k4 * 512 + (c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

// The layout op: element (row, col) of the [M, K] input scales goes to this flat index of
// the [M + G*127, Kp] output buffer (Kp = ceil(K/4)*4). Row `row` belongs to the last group g
// whose input offset is <= row (groups run to the next group's start; an empty group's start
// equals the next one's, so it is skipped), lr = row - input_offsets[g]:
//   output_offsets[g]*Kp + (lr/128)*128*Kp + (col/4)*512 + (lr%32)*16 + ((lr%128)/32)*4 + col%4
// Rows before the first group's start (a malformed offsets list) return -1.
FS_DEVICE nvfuser_index_t preprocessGroupedMatmulInputSfOffset(nvfuser_index_t row,
                                                               nvfuser_index_t col,
                                                               nvfuser_index_t K, int num_groups,
                                                               const int* input_offsets,
                                                               const int* output_offsets) {
  int g = -1;
  for (int i = 0; i < num_groups; ++i) {
    if (input_offsets[i] <= row) {
      g = i;
    }
  }
  if (g < 0) {
    return -1;
  }
  const nvfuser_index_t kp = (K + 3) / 4 * 4;
  const nvfuser_index_t lr = row - input_offsets[g];
  return static_cast<nvfuser_index_t>(output_offsets[g]) * kp + (lr / 128) * 128 * kp +
         (col / 4) * 512 + (lr % 32) * 16 + ((lr % 128) / 32) * 4 + col % 4;
}

#endif  // FS_RUNTIME_QUANTIZE_CUH
