// fusescope runtime: pointwise ops with torch's CPU semantics (engine/reference.py is the
// ground truth). engine/codegen/ops_table.py spells each op with these functions or with a
// CUDA math function (expf, log1p, ...) directly where that alone matches torch.
//
// Overloads exist for float, double, int64_t, int and bool where the op accepts the type;
// bf16/fp16/fp8/fp4 values are computed in float (the generator casts them first).
#ifndef FS_RUNTIME_HELPERS_CUH
#define FS_RUNTIME_HELPERS_CUH

// ---- integer helpers -----------------------------------------------------------------------

template <typename I>
struct FsUnsigned;
template <>
struct FsUnsigned<int> {
  typedef unsigned int type;
};
template <>
struct FsUnsigned<int64_t> {
  typedef uint64_t type;
};

template <typename I>
FS_DEVICE I ceilDiv(I a, I b) {
  return (a + b - 1) / b;
}

// ---- float building blocks (overloaded so templates below serve float and double) ----------

FS_DEVICE float fsExp(float x) { return expf(x); }
FS_DEVICE double fsExp(double x) { return exp(x); }
FS_DEVICE float fsLog(float x) { return logf(x); }
FS_DEVICE double fsLog(double x) { return log(x); }
FS_DEVICE float fsErf(float x) { return erff(x); }
FS_DEVICE double fsErf(double x) { return erf(x); }
FS_DEVICE float fsSqrt(float x) { return sqrtf(x); }
FS_DEVICE double fsSqrt(double x) { return sqrt(x); }
FS_DEVICE float fsTrunc(float x) { return truncf(x); }
FS_DEVICE double fsTrunc(double x) { return trunc(x); }
FS_DEVICE float fsFabs(float x) { return fabsf(x); }
FS_DEVICE double fsFabs(double x) { return fabs(x); }

FS_DEVICE bool fsSignbit(float x) { return (fsFloatAsUint(x) >> 31) != 0; }
FS_DEVICE bool fsSignbit(double x) { return (fsDoubleAsUint(x) >> 63) != 0; }
FS_DEVICE bool fsSignbit(int64_t x) { return x < 0; }
FS_DEVICE bool fsSignbit(int x) { return x < 0; }
FS_DEVICE bool fsSignbit(bool) { return false; }

FS_DEVICE float fsCopysign(float mag, float sgn) {
  return fsUintAsFloat((fsFloatAsUint(mag) & 0x7fffffffu) | (fsFloatAsUint(sgn) & 0x80000000u));
}
FS_DEVICE double fsCopysign(double mag, double sgn) {
  const uint64_t m = 0x8000000000000000ull;
  return fsUintAsDouble((fsDoubleAsUint(mag) & ~m) | (fsDoubleAsUint(sgn) & m));
}

// Exact IEEE add/mul that the device compiler may not contract into an fma: the reference
// rounds after every torch op, and an fma would round once.
FS_DEVICE float fsAddRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FS_DEVICE double fsAddRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
FS_DEVICE float fsMulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FS_DEVICE double fsMulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// ---- unary ---------------------------------------------------------------------------------

template <typename F>
FS_DEVICE F fsReciprocal(F x) {
  return F(1) / x;
}

// torch CPU: 1 / sqrt(x), two correctly rounded steps; on the device too (sqrtf and `/` are
// IEEE without fast-math), rather than the ~2 ulp rsqrtf, so results match bit for bit.
FS_DEVICE float fsRsqrt(float x) { return 1.0f / sqrtf(x); }
FS_DEVICE double fsRsqrt(double x) { return 1.0 / sqrt(x); }

// torch: 1 / (1 + exp(-x))
template <typename F>
FS_DEVICE F fsSigmoid(F x) {
  return F(1) / (F(1) + fsExp(-x));
}

// torch: x / (1 + exp(-x))
template <typename F>
FS_DEVICE F fsSilu(F x) {
  return x / (F(1) + fsExp(-x));
}

// torch's default (erf) gelu: x * 0.5 * (1 + erf(x / sqrt(2)))
template <typename F>
FS_DEVICE F fsGelu(F x) {
  return x * F(0.5) * (F(1) + fsErf(x * F(0.70710678118654752440)));
}

// torch: relu(-0.0) is -0.0 and relu(NaN) is NaN
template <typename T>
FS_DEVICE T fsRelu(T x) {
  return x < T(0) ? T(0) : x;
}

// torch: x - trunc(x) (NaN for +-inf)
template <typename F>
FS_DEVICE F fsFrac(F x) {
  return x - fsTrunc(x);
}

// torch: (0 < x) - (x < 0); NaN gives 0
template <typename T>
FS_DEVICE T fsSign(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}
FS_DEVICE bool fsSign(bool x) { return x; }

template <typename T>
FS_DEVICE T fsAbs(T x) {
  return x < T(0) ? static_cast<T>(T(0) - x) : x;
}
FS_DEVICE float fsAbs(float x) { return fabsf(x); }
FS_DEVICE double fsAbs(double x) { return fabs(x); }

template <typename T>
FS_DEVICE bool fsIsnan(T x) {
  return x != x;
}
template <typename T>
FS_DEVICE bool fsIsinf(T x) {
  return x == static_cast<T>(INFINITY) || x == -static_cast<T>(INFINITY);
}
template <typename T>
FS_DEVICE bool fsIsfinite(T x) {
  return x == x && !fsIsinf(x);
}
template <typename T>
FS_DEVICE bool fsIsposinf(T x) {
  return x == static_cast<T>(INFINITY);
}
template <typename T>
FS_DEVICE bool fsIsneginf(T x) {
  return x == -static_cast<T>(INFINITY);
}
// Integers and bools are always finite.
FS_DEVICE bool fsIsnan(int64_t) { return false; }
FS_DEVICE bool fsIsnan(int) { return false; }
FS_DEVICE bool fsIsnan(bool) { return false; }
FS_DEVICE bool fsIsinf(int64_t) { return false; }
FS_DEVICE bool fsIsinf(int) { return false; }
FS_DEVICE bool fsIsinf(bool) { return false; }
FS_DEVICE bool fsIsfinite(int64_t) { return true; }
FS_DEVICE bool fsIsfinite(int) { return true; }
FS_DEVICE bool fsIsfinite(bool) { return true; }
FS_DEVICE bool fsIsposinf(int64_t) { return false; }
FS_DEVICE bool fsIsposinf(int) { return false; }
FS_DEVICE bool fsIsposinf(bool) { return false; }
FS_DEVICE bool fsIsneginf(int64_t) { return false; }
FS_DEVICE bool fsIsneginf(int) { return false; }
FS_DEVICE bool fsIsneginf(bool) { return false; }

// torch's calc_digamma (ATen/native/Math.h), float and double: recurrence up to x >= 10,
// then the asymptotic series; reflection for negative non-integers.
template <typename F>
FS_DEVICE F fsDigammaPositive(F x) {
  F result = 0;
  while (x < F(10)) {
    result -= F(1) / x;
    x += F(1);
  }
  if (x == F(10)) {
    return result + F(2.25175258906672110764);
  }
  F y = 0;
  if (x < F(1.0e17)) {
    const F z = F(1) / (x * x);
    F p = F(8.33333333333333333333E-2);
    p = p * z + F(-2.10927960927960927961E-2);
    p = p * z + F(7.57575757575757575758E-3);
    p = p * z + F(-4.16666666666666666667E-3);
    p = p * z + F(3.96825396825396825397E-3);
    p = p * z + F(-8.33333333333333333333E-3);
    p = p * z + F(8.33333333333333333333E-2);
    y = z * p;
  }
  return result + fsLog(x) - (F(0.5) / x) - y;
}

template <typename F>
FS_DEVICE F fsDigamma(F x) {
  if (x == F(0)) {
    return fsCopysign(static_cast<F>(INFINITY), -x);
  }
  if (x < F(0)) {
    if (x == fsTrunc(x)) {
      return static_cast<F>(NAN);
    }
    // torch computes pi / tan(pi * frac(x)) in double for both types
    const double r = static_cast<double>(x) - trunc(static_cast<double>(x));
    const double pi = 3.14159265358979323846;
    const F reflect = static_cast<F>(pi / tan(pi * r));
    return fsDigammaPositive(F(1) - x) - reflect;
  }
  return fsDigammaPositive(x);
}

#if defined(__CUDA_ARCH__)
FS_DEVICE float fsErfinv(float x) { return erfinvf(x); }
FS_DEVICE double fsErfinv(double x) { return erfinv(x); }
#else
// No erfinv in libm: torch's calc_erfinv (a rational first guess, two Newton steps).
template <typename F>
FS_DEVICE F fsErfinvImpl(F y) {
  const F y_abs = fsFabs(y);
  if (y_abs > F(1)) {
    return static_cast<F>(NAN);
  }
  if (y_abs == F(1)) {
    return fsCopysign(static_cast<F>(INFINITY), y);
  }
  F x, z, num, dem;
  if (y_abs <= F(0.7)) {
    z = y * y;
    num = (((F(-0.140543331) * z + F(0.914624893)) * z + F(-1.645349621)) * z + F(0.886226899));
    dem = ((((F(0.012229801) * z + F(-0.329097515)) * z + F(1.442710462)) * z + F(-2.118377725)) * z +
           F(1));
    x = y * num / dem;
  } else {
    z = fsSqrt(-fsLog((F(1) - y_abs) / F(2)));
    num = ((F(1.641345311) * z + F(3.429567803)) * z + F(-1.624906493)) * z + F(-1.970840454);
    dem = (F(1.637067800) * z + F(3.543889200)) * z + F(1);
    x = fsCopysign(num, y) / dem;
  }
  const F two_over_sqrt_pi = static_cast<F>(1.12837916709551257390);
  x = x - (fsErf(x) - y) / (two_over_sqrt_pi * fsExp(-x * x));
  x = x - (fsErf(x) - y) / (two_over_sqrt_pi * fsExp(-x * x));
  return x;
}
FS_DEVICE float fsErfinv(float x) { return fsErfinvImpl(x); }
FS_DEVICE double fsErfinv(double x) { return fsErfinvImpl(x); }
#endif

// ---- binary --------------------------------------------------------------------------------

// torch.maximum / torch.minimum: NaN from either side wins.
FS_DEVICE float fsMax(float a, float b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
FS_DEVICE double fsMax(double a, double b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
FS_DEVICE float fsMin(float a, float b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
FS_DEVICE double fsMin(double a, double b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
FS_DEVICE int64_t fsMax(int64_t a, int64_t b) { return a > b ? a : b; }
FS_DEVICE int fsMax(int a, int b) { return a > b ? a : b; }
FS_DEVICE int64_t fsMin(int64_t a, int64_t b) { return a < b ? a : b; }
FS_DEVICE int fsMin(int a, int b) { return a < b ? a : b; }
FS_DEVICE bool fsMax(bool a, bool b) { return a || b; }
FS_DEVICE bool fsMin(bool a, bool b) { return a && b; }

// Integer division truncates (the reference's torch.div(rounding_mode="trunc")). torch
// raises on a zero divisor; here it gives 0 rather than trapping the emulator, and
// MIN / -1 wraps instead of trapping.
template <typename I>
FS_DEVICE I fsDivInt(I a, I b) {
  typedef typename FsUnsigned<I>::type U;
  if (b == 0) {
    return 0;
  }
  if (b == -1) {
    return static_cast<I>(U(0) - static_cast<U>(a));
  }
  return a / b;
}
FS_DEVICE int64_t fsDiv(int64_t a, int64_t b) { return fsDivInt(a, b); }
FS_DEVICE int fsDiv(int a, int b) { return fsDivInt(a, b); }

// fmod (the reference's "mod" too): C's truncating remainder.
template <typename I>
FS_DEVICE I fsFmodInt(I a, I b) {
  if (b == 0 || b == -1) {
    return 0;
  }
  return a % b;
}
FS_DEVICE int64_t fsFmod(int64_t a, int64_t b) { return fsFmodInt(a, b); }
FS_DEVICE int fsFmod(int a, int b) { return fsFmodInt(a, b); }
FS_DEVICE float fsFmod(float a, float b) { return fmodf(a, b); }
FS_DEVICE double fsFmod(double a, double b) { return fmod(a, b); }

// Python's remainder: the result takes the divisor's sign (torch: fmod, then add b when
// the signs differ and the remainder is not zero).
template <typename T>
FS_DEVICE T fsRemainder(T a, T b) {
  T mod = fsFmod(a, b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) {
    mod += b;
  }
  return mod;
}

// torch's integer pow: exponentiation by squaring (wrapping), negative exponents give 0
// except for bases 1 and -1.
template <typename I>
FS_DEVICE I fsPowInt(I a, I b) {
  typedef typename FsUnsigned<I>::type U;
  if (b < 0) {
    if (a == 1) {
      return 1;
    }
    if (a == -1) {
      return (b & 1) ? -1 : 1;
    }
    return 0;
  }
  U result = 1;
  U base = static_cast<U>(a);
  while (b) {
    if (b & 1) {
      result *= base;
    }
    b /= 2;
    base *= base;
  }
  return static_cast<I>(result);
}
FS_DEVICE int64_t fsPow(int64_t a, int64_t b) { return fsPowInt(a, b); }
FS_DEVICE int fsPow(int a, int b) { return fsPowInt(a, b); }
FS_DEVICE float fsPow(float a, float b) { return powf(a, b); }
FS_DEVICE double fsPow(double a, double b) { return pow(a, b); }

// torch's shifts: a shift by a negative amount or by the width or more gives 0 (left) or the
// sign fill (right); left shifts work on the unsigned bits.
template <typename I>
FS_DEVICE I fsShiftLeft(I a, I b) {
  typedef typename FsUnsigned<I>::type U;
  const I max_shift = static_cast<I>(sizeof(I) * 8);
  if (b < 0 || b >= max_shift) {
    return 0;
  }
  return static_cast<I>(static_cast<U>(a) << b);
}
template <typename I>
FS_DEVICE I fsShiftRight(I a, I b) {
  const I max_shift = static_cast<I>(sizeof(I) * 8 - 1);
  if (b < 0 || b >= max_shift) {
    return a >> max_shift;
  }
  return a >> b;
}
// nvFuser's logical_right_shift: zero-filling, on the unsigned bits; shifting by a negative
// amount or by the width or more shifts every bit out.
template <typename I>
FS_DEVICE I fsLogicalShiftRight(I a, I b) {
  typedef typename FsUnsigned<I>::type U;
  const I width = static_cast<I>(sizeof(I) * 8);
  if (b < 0 || b >= width) {
    return 0;
  }
  return static_cast<I>(static_cast<U>(a) >> b);
}
// torch.gcd (c10's calc_gcd): Euclid on absolute values; |MIN| wraps to MIN as there.
template <typename I>
FS_DEVICE I fsGcd(I a, I b) {
  typedef typename FsUnsigned<I>::type U;
  a = a < 0 ? static_cast<I>(U(0) - static_cast<U>(a)) : a;
  b = b < 0 ? static_cast<I>(U(0) - static_cast<U>(b)) : b;
  while (a != 0) {
    const I c = a;
    a = b % a;
    b = c;
  }
  return b;
}

// ---- ternary -------------------------------------------------------------------------------

// The reference: minimum(maximum(x, lo), hi), NaN-propagating like both.
template <typename T>
FS_DEVICE T fsClamp(T x, T lo, T hi) {
  return fsMin(fsMax(x, lo), hi);
}

// The reference's lerp: start + weight * (end - start), each step rounded.
template <typename T>
FS_DEVICE T fsLerp(T start, T end, T weight) {
  return static_cast<T>(start + weight * (end - start));
}
FS_DEVICE float fsLerp(float start, float end, float weight) {
  return fsAddRn(start, fsMulRn(weight, end - start));
}
FS_DEVICE double fsLerp(double start, double end, double weight) {
  return fsAddRn(start, fsMulRn(weight, end - start));
}

#endif  // FS_RUNTIME_HELPERS_CUH
