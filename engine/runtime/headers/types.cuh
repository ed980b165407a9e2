// fusescope runtime: fixed-width integers, math constants, and the low-precision float
// types (__half, __bfloat, __e4m3, __e5m2, __e8m0, __e2m1) with their conversions.
//
// Three compilers read this text: NVRTC (no host headers at all), nvcc (host headers are
// there but cuda_fp16.h is not included by us, so our own __half cannot clash), and g++
// under the emulator (FS_EMULATE, whose header runs before this one).
//
// Conversions round and saturate exactly as torch does on the CPU, because
// engine/reference.py (torch) is the ground truth:
//   float -> half/bf16   round to nearest even, overflow to inf
//   float -> e4m3fn      clamp to +-448 first (reference's satfinite), then RNE
//   float -> e5m2        clamp to +-57344 first (inf saturates too), then RNE
//   float -> e8m0fnu     torch's guard/round/sticky RNE on the exponent; sign ignored;
//                        inf and NaN -> 0xff (NaN)
//   float -> e2m1        RNE to {0, .5, 1, 1.5, 2, 3, 4, 6}, saturating, NaN -> +6
//   double -> any 16/8-bit type goes through float first: torch's c10 types are only
//   constructible from float, so torch rounds twice too (checked in tests).
// Only NaN bit patterns are not a contract (torch's own scalar and vector paths differ).
#ifndef FS_RUNTIME_TYPES_CUH
#define FS_RUNTIME_TYPES_CUH

#if defined(FS_EMULATE)
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#elif defined(__CUDACC_RTC__)
// NVRTC has no host headers; the math API is built in.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int int64_t;
typedef unsigned long long int uint64_t;
#else
#include <stdint.h>
#endif

typedef int64_t nvfuser_index_t;

// NVRTC has neither math.h's macros nor GCC's __builtin_huge_valf: spell them by their bits.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif

// Every runtime function is inlined into the kernel; under the emulator they are plain
// inline host functions (the emulator runs CUDA threads as fibers on the CPU).
#if defined(FS_EMULATE)
#define FS_DEVICE inline
#define FS_HOST_DEVICE
#else
#define FS_DEVICE __device__ __forceinline__
#define FS_HOST_DEVICE __host__ __device__
#endif

// ---- bit casts ----------------------------------------------------------------------------

FS_DEVICE uint32_t fsFloatAsUint(float f) {
#if defined(FS_EMULATE)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#else
  return __float_as_uint(f);
#endif
}

FS_DEVICE float fsUintAsFloat(uint32_t u) {
#if defined(FS_EMULATE)
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#else
  return __uint_as_float(u);
#endif
}

FS_DEVICE uint64_t fsDoubleAsUint(double d) {
#if defined(FS_EMULATE)
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#else
  return static_cast<uint64_t>(__double_as_longlong(d));
#endif
}

FS_DEVICE double fsUintAsDouble(uint64_t u) {
#if defined(FS_EMULATE)
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#else
  return __longlong_as_double(static_cast<long long>(u));
#endif
}

// ---- the storage types ---------------------------------------------------------------------
// Plain structs (trivially copyable, no constructors) so that Array<T, N> reinterpretation
// and by-value kernel arguments are well defined. Convert only through the functions below.

struct alignas(2) __half {
  uint16_t raw;
};
struct alignas(2) __bfloat {
  uint16_t raw;
};
struct alignas(1) __e4m3 {
  uint8_t raw;
};
struct alignas(1) __e5m2 {
  uint8_t raw;
};
struct alignas(1) __e8m0 {
  uint8_t raw;
};
// One e2m1 code (0..15) in the low nibble. In global memory fp4 packs two codes per byte
// (element 2i in the low nibble of byte i): see array.cuh's __e2m1 vector accessors.
struct alignas(1) __e2m1 {
  uint8_t raw;
};

FS_DEVICE __half fsHalfFromBits(uint16_t b) {
  __half h;
  h.raw = b;
  return h;
}
FS_DEVICE __bfloat fsBfloatFromBits(uint16_t b) {
  __bfloat h;
  h.raw = b;
  return h;
}
FS_DEVICE __e4m3 fsE4m3FromBits(uint8_t b) {
  __e4m3 h;
  h.raw = b;
  return h;
}
FS_DEVICE __e5m2 fsE5m2FromBits(uint8_t b) {
  __e5m2 h;
  h.raw = b;
  return h;
}
FS_DEVICE __e8m0 fsE8m0FromBits(uint8_t b) {
  __e8m0 h;
  h.raw = b;
  return h;
}
FS_DEVICE __e2m1 fsE2m1FromBits(uint8_t b) {
  __e2m1 h;
  h.raw = static_cast<uint8_t>(b & 0xF);
  return h;
}

// ---- half ----------------------------------------------------------------------------------

// Round-to-nearest-even float -> binary16 on the bits (no reliance on FP rounding modes).
FS_DEVICE uint16_t fsFloatToHalfBits(float f) {
  uint32_t x = fsFloatAsUint(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u);  // NaN, as c10::Half
  }
  if (x >= 0x477ff000u) {
    return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf (inf stays inf)
  }
  if (x >= 0x38800000u) {  // normal half: >= 2^-14
    const uint32_t r = (x - 0x38000000u) + 0xfffu + ((x >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  const uint32_t e = x >> 23;
  if (e < 102u) {
    return sign;  // below 2^-25 (2^-25 itself ties to the even 0): +-0
  }
  const uint32_t m = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24: value = m >> shift units of 2^-24
  uint32_t r = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) {
    ++r;  // a carry into 0x400 is the smallest normal, encoded right
  }
  return static_cast<uint16_t>(sign | r);
}

FS_DEVICE float fsHalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) {
    return fsUintAsFloat(sign | 0x7f800000u | (m << 13));
  }
  if (e == 0) {
    // subnormal or zero: m * 2^-24 is exact in float
    const float v = static_cast<float>(m) * 5.9604644775390625e-08f;
    return fsUintAsFloat(sign | fsFloatAsUint(v));
  }
  return fsUintAsFloat(sign | ((e + 112u) << 23) | (m << 13));
}

FS_DEVICE __half __float2half(float f) {
#if defined(__CUDA_ARCH__)
  // cvt.rn is IEEE round-to-nearest-even, as the portable path (NaN payloads aside).
  __half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.raw) : "f"(f));
  return h;
#else
  return fsHalfFromBits(fsFloatToHalfBits(f));
#endif
}

FS_DEVICE float __half2float(__half h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.raw));
  return f;
#else
  return fsHalfBitsToFloat(h.raw);
#endif
}

// ---- bfloat16 ------------------------------------------------------------------------------

FS_DEVICE uint16_t fsFloatToBfloatBits(float f) {
  const uint32_t x = fsFloatAsUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return 0x7fc0u;  // NaN, as c10::BFloat16's scalar path
  }
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

FS_DEVICE __bfloat __float2bfloat(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __bfloat h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.raw) : "f"(f));
  return h;
#else
  return fsBfloatFromBits(fsFloatToBfloatBits(f));
#endif
}

FS_DEVICE float __bfloat2float(__bfloat h) {
  return fsUintAsFloat(static_cast<uint32_t>(h.raw) << 16);
}

// A narrow buffer converted at each of its reads: volatile asm, which the compiler neither
// merges with another conversion of the same value nor hoists, so a persistent buffer kept
// in half or bfloat16 is not held converted (twice the registers) across a block reduction
// between its reads.
FS_DEVICE float fsHalfToFloatEach(__half h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm volatile("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.raw));
  return f;
#else
  return __half2float(h);
#endif
}

FS_DEVICE float fsBfloatToFloatEach(__bfloat h) {
#if defined(__CUDA_ARCH__)
  uint32_t w;
  asm volatile("mov.b32 %0, {0, %1};" : "=r"(w) : "h"(h.raw));
  return fsUintAsFloat(w);
#else
  return __bfloat2float(h);
#endif
}

// ---- fp8 e4m3fn ----------------------------------------------------------------------------

// c10's fp8e4m3fn_from_fp32_value after the reference's clamp to +-448 (so only NaN reaches
// the 0x7f branch). The subnormal path adds a magic number and lets float RNE do the
// rounding, exactly as c10 does.
FS_DEVICE uint8_t fsFloatToE4m3Bits(float f) {
  f = (f != f) ? f : (f < -448.0f ? -448.0f : (f > 448.0f ? 448.0f : f));
  uint32_t bits = fsFloatAsUint(f);
  const uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint8_t result;
  if (bits >= 0x43f00000u) {  // 480 and above: only NaN after the clamp
    result = 0x7f;
  } else if (bits < (121u << 23)) {  // below 2^-6: subnormal e4m3
    const uint32_t denorm_mask = 141u << 23;
    const float sum = fsUintAsFloat(bits) + fsUintAsFloat(denorm_mask);
    result = static_cast<uint8_t>(fsFloatAsUint(sum) - denorm_mask);
  } else {
    const uint32_t mant_odd = (bits >> 20) & 1u;
    bits += (static_cast<uint32_t>(7 - 127) << 23) + 0x7ffffu;
    bits += mant_odd;
    result = static_cast<uint8_t>(bits >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

FS_DEVICE float fsE4m3BitsToFloat(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xfu;
  const uint32_t m = b & 0x7u;
  if (e == 0xfu && m == 0x7u) {
    return fsUintAsFloat(sign | 0x7ff00000u);  // NaN (torch keeps these payload bits)
  }
  if (e == 0) {
    const float v = static_cast<float>(m) * 0.001953125f;  // m * 2^-9, exact
    return fsUintAsFloat(sign | fsFloatAsUint(v));
  }
  return fsUintAsFloat(sign | ((e + 120u) << 23) | (m << 20));
}

FS_DEVICE float __e4m32float(__e4m3 h) { return fsE4m3BitsToFloat(h.raw); }

// ---- fp8 e5m2 ------------------------------------------------------------------------------

FS_DEVICE uint8_t fsFloatToE5m2Bits(float f) {
  f = (f != f) ? f : (f < -57344.0f ? -57344.0f : (f > 57344.0f ? 57344.0f : f));
  uint32_t bits = fsFloatAsUint(f);
  const uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint8_t result;
  if (bits >= (143u << 23)) {  // 65536 and above: only NaN after the clamp
    result = bits > 0x7f800000u ? 0x7f : 0x7c;
  } else if (bits < (113u << 23)) {  // below 2^-14: subnormal e5m2
    const uint32_t denorm_mask = 134u << 23;
    const float sum = fsUintAsFloat(bits) + fsUintAsFloat(denorm_mask);
    result = static_cast<uint8_t>(fsFloatAsUint(sum) - denorm_mask);
  } else {
    const uint32_t mant_odd = (bits >> 21) & 1u;
    bits += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffffu;
    bits += mant_odd;
    result = static_cast<uint8_t>(bits >> 21);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

// float -> e4m3 (E4M3) or e5m2 bits. On sm_89 and later, PTX's cvt.rn.satfinite.{e4m3,e5m2}x2
// (its low byte): the same rounding and saturation (the reference's clamp to the largest
// finite value is satfinite's) in one instruction instead of a dozen; only a NaN's bits may
// differ, which are not part of the contract. The emulator and older GPUs take the bit paths.
template <bool E4M3>
FS_DEVICE uint8_t fsFloatToFp8Bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(FS_EMULATE)
  unsigned short pair;
  if (E4M3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  }
  return static_cast<uint8_t>(pair & 0xffu);
#else
  return E4M3 ? fsFloatToE4m3Bits(f) : fsFloatToE5m2Bits(f);
#endif
}

FS_DEVICE __e4m3 __float2e4m3(float f) { return fsE4m3FromBits(fsFloatToFp8Bits<true>(f)); }
FS_DEVICE __e5m2 __float2e5m2(float f) { return fsE5m2FromBits(fsFloatToFp8Bits<false>(f)); }
// e5m2 is the high byte of a binary16.
FS_DEVICE float __e5m22float(__e5m2 h) {
  return fsHalfBitsToFloat(static_cast<uint16_t>(static_cast<uint16_t>(h.raw) << 8));
}

// ---- fp8 e8m0fnu ---------------------------------------------------------------------------

// c10's fp8e8m0fnu_from_fp32_value: RNE of the exponent with guard/round/sticky bits,
// where the implied leading bit (1 for normal floats, 0 for subnormal) is the LSB.
FS_DEVICE uint8_t fsFloatToE8m0Bits(float f) {
  const uint32_t bits = fsFloatAsUint(f);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu) {
    return 0xff;
  }
  const bool g = (bits & 0x400000u) != 0;
  const bool r = (bits & 0x200000u) != 0;
  const bool s = (bits & 0x1fffffu) != 0;
  const bool lsb = exponent > 0;
  if (g && (r || s || lsb)) {
    ++exponent;
  }
  return static_cast<uint8_t>(exponent);
}

FS_DEVICE __e8m0 __float2e8m0(float f) { return fsE8m0FromBits(fsFloatToE8m0Bits(f)); }
FS_DEVICE float __e8m02float(__e8m0 h) {
  if (h.raw == 0xff) {
    return fsUintAsFloat(0x7f800001u);  // NaN, with torch's payload
  }
  return fsUintAsFloat(h.raw == 0 ? 0x00400000u : static_cast<uint32_t>(h.raw) << 23);
}

// ---- fp4 e2m1 ------------------------------------------------------------------------------

// engine/nvfp4.py fp4_codes: thresholds between neighbours {0,.5,1,1.5,2,3,4,6}; at a tie
// the even code wins. Templated so a double source compares in double, as the reference.
template <typename F>
FS_DEVICE uint8_t fsToE2m1Code(F x) {
  if (x != x) {
    return 7;  // NaN -> +6, sign dropped (cvt.rn.satfinite.e2m1x2 does the same)
  }
  const bool neg = (sizeof(F) == 4) ? (fsFloatAsUint(static_cast<float>(x)) >> 31) != 0
                                    : (fsDoubleAsUint(static_cast<double>(x)) >> 63) != 0;
  const F a = neg ? -x : x;
  uint8_t code = 0;
  code += a > F(0.25);
  code += a >= F(0.75);
  code += a > F(1.25);
  code += a >= F(1.75);
  code += a > F(2.5);
  code += a >= F(3.5);
  code += a > F(5.0);
  return static_cast<uint8_t>(code | (neg ? 8 : 0));
}

FS_DEVICE float fsE2m1CodeToFloat(uint8_t code) {
  // 0, .5, 1, 1.5, 2, 3, 4, 6: exponent e = bits 2-1, mantissa m = bit 0
  const uint32_t e = (code >> 1) & 3u;
  const uint32_t m = code & 1u;
  const float mag = e == 0 ? 0.5f * static_cast<float>(m)
                           : static_cast<float>(2u + m) * static_cast<float>(1u << e) * 0.25f;
  return (code & 8u) ? -mag : mag;
}

FS_DEVICE __e2m1 __float2e2m1(float f) { return fsE2m1FromBits(fsToE2m1Code(f)); }
FS_DEVICE __e2m1 __double2e2m1(double d) { return fsE2m1FromBits(fsToE2m1Code(d)); }
FS_DEVICE float __e2m12float(__e2m1 h) { return fsE2m1CodeToFloat(h.raw); }

// Two e2m1 codes in one byte: `lo` is the even-indexed element.
FS_DEVICE uint8_t fsPackE2m1x2(__e2m1 lo, __e2m1 hi) {
  return static_cast<uint8_t>((lo.raw & 0xF) | ((hi.raw & 0xF) << 4));
}

// ---- double routes (torch rounds through float; see the header comment) --------------------

FS_DEVICE __half __double2half(double d) { return __float2half(static_cast<float>(d)); }
FS_DEVICE __bfloat __double2bfloat(double d) { return __float2bfloat(static_cast<float>(d)); }
FS_DEVICE __e4m3 __double2e4m3(double d) {
  // clamp in double first (as the reference), then through float
  d = (d != d) ? d : (d < -448.0 ? -448.0 : (d > 448.0 ? 448.0 : d));
  return __float2e4m3(static_cast<float>(d));
}
FS_DEVICE __e5m2 __double2e5m2(double d) {
  d = (d != d) ? d : (d < -57344.0 ? -57344.0 : (d > 57344.0 ? 57344.0 : d));
  return __float2e5m2(static_cast<float>(d));
}
FS_DEVICE __e8m0 __double2e8m0(double d) { return __float2e8m0(static_cast<float>(d)); }

#endif  // FS_RUNTIME_TYPES_CUH
