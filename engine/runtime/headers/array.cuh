// fusescope runtime: aligned register arrays, the kernel's Tensor argument (the ABI of
// engine/runtime/abi.py), vectorized loads and stores, dynamic shared memory.
#ifndef FS_RUNTIME_ARRAY_CUH
#define FS_RUNTIME_ARRAY_CUH

// N elements of T aligned to `align` elements (align a power of two), as nvFuser's Array:
// reinterpreting memory as an Array<T, V, V> is how a kernel issues one V-wide access.
template <typename T, int N, int align = 1>
struct alignas(sizeof(T) * align) Array {
  T array[N];
  FS_DEVICE T& operator[](int i) { return array[i]; }
  FS_DEVICE const T& operator[](int i) const { return array[i]; }
  FS_DEVICE void set(T v) {
    for (int i = 0; i < N; ++i) {
      array[i] = v;
    }
  }
};

// A kernel's tensor argument, passed by value. Memory layout (abi.pack_tensor): the data
// pointer, N int64 logical sizes, A int64 allocation strides in elements. There is no
// padding: every member is 8 bytes. Tensor<T, 0, 0> is the pointer alone.
template <typename T, int N, int A = N>
struct Tensor {
  T* data;
  nvfuser_index_t logical_size[N];
  nvfuser_index_t alloc_stride[A];
  FS_DEVICE T& operator[](nvfuser_index_t i) { return data[i]; }
};

template <typename T, int N>
struct Tensor<T, N, 0> {
  T* data;
  nvfuser_index_t logical_size[N];
  FS_DEVICE T& operator[](nvfuser_index_t i) { return data[i]; }
};

template <typename T, int A>
struct Tensor<T, 0, A> {
  T* data;
  nvfuser_index_t alloc_stride[A];
  FS_DEVICE T& operator[](nvfuser_index_t i) { return data[i]; }
};

template <typename T>
struct Tensor<T, 0, 0> {
  T* data;
  FS_DEVICE T& operator[](nvfuser_index_t i) { return data[i]; }
};

// ---- vector access -------------------------------------------------------------------------

template <int v>
struct FsIsPow2 {
  static constexpr bool value = v > 0 && (v & (v - 1)) == 0;
};

// Copy V elements from src to dst. Both must be aligned to the access width (the code
// generator only vectorizes what it proved aligned). Power-of-two widths up to 16 bytes are
// one access; wider ones are 16-byte accesses; other shapes fall back to element copies.
// The reinterpretation is always to an Array of the same T, so no aliasing rule is broken.
template <typename T, int V>
FS_DEVICE void loadGeneric(T* dst, const T* src) {
  constexpr int bytes = static_cast<int>(sizeof(T)) * V;
  if constexpr (FsIsPow2<V>::value && FsIsPow2<bytes>::value && bytes <= 16) {
    *reinterpret_cast<Array<T, V, V>*>(dst) = *reinterpret_cast<const Array<T, V, V>*>(src);
  } else if constexpr (bytes > 16 && bytes % 16 == 0 && 16 % sizeof(T) == 0) {
    constexpr int per = 16 / static_cast<int>(sizeof(T));
    for (int i = 0; i < V; i += per) {
      *reinterpret_cast<Array<T, per, per>*>(dst + i) =
          *reinterpret_cast<const Array<T, per, per>*>(src + i);
    }
  } else {
    for (int i = 0; i < V; ++i) {
      dst[i] = src[i];
    }
  }
}

// A global load of V elements that also pulls `Prefetch` bytes around them into L2
// (ld.global.L2::{64,128,256}B, sm_80 and later): for inputs read in rows shorter than a DRAM
// burst, whose other half a later block reads. Only 4-, 8- and 16-byte accesses take the
// hint; other shapes, older GPUs and the emulator load as loadGeneric does.
template <typename T, int V, int Prefetch>
FS_DEVICE void loadGlobalPrefetchL2(T* dst, const T* src) {
  static_assert(Prefetch == 64 || Prefetch == 128 || Prefetch == 256, "L2 prefetch sizes: 64, 128, 256");
#if !defined(FS_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int bytes = static_cast<int>(sizeof(T)) * V;
  if constexpr (bytes == 16) {
    Array<unsigned, 4, 4> r;
    asm("ld.global.L2::%5B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r.array[0]), "=r"(r.array[1]), "=r"(r.array[2]), "=r"(r.array[3])
        : "l"(src), "n"(Prefetch));
    *reinterpret_cast<Array<unsigned, 4, 4>*>(dst) = r;
    return;
  } else if constexpr (bytes == 8) {
    Array<unsigned, 2, 2> r;
    asm("ld.global.L2::%3B.v2.u32 {%0,%1}, [%2];\n" : "=r"(r.array[0]), "=r"(r.array[1]) : "l"(src), "n"(Prefetch));
    *reinterpret_cast<Array<unsigned, 2, 2>*>(dst) = r;
    return;
  } else if constexpr (bytes == 4) {
    unsigned r;
    asm("ld.global.L2::%2B.u32 %0, [%1];\n" : "=r"(r) : "l"(src), "n"(Prefetch));
    *reinterpret_cast<unsigned*>(dst) = r;
    return;
  }
#endif
  loadGeneric<T, V>(dst, src);
}

// A global load of V elements whose L2 lines are kept ahead of others (ld.global.L2::cache_hint
// with an evict_last policy, sm_80 and later). The scheduler marks inputs larger than L2 that a
// kernel streams through once: on an H100, with every input set read once per call, gelu(x +
// bias) went from 98.7 to 92.3 us and the normalizations 0.6-1% faster (the output's lines,
// not hinted, leave L2 first: our reading, not measured). Only 4-, 8- and 16-byte accesses take
// the hint; other shapes, older GPUs and the emulator load as loadGeneric does.
template <typename T, int V>
FS_DEVICE void loadGlobalEvictLast(T* dst, const T* src) {
#if !defined(FS_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int bytes = static_cast<int>(sizeof(T)) * V;
  if constexpr (bytes == 16 || bytes == 8 || bytes == 4) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
    if constexpr (bytes == 16) {
      Array<unsigned, 4, 4> r;
      asm("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
          : "=r"(r.array[0]), "=r"(r.array[1]), "=r"(r.array[2]), "=r"(r.array[3])
          : "l"(src), "l"(policy));
      *reinterpret_cast<Array<unsigned, 4, 4>*>(dst) = r;
    } else if constexpr (bytes == 8) {
      Array<unsigned, 2, 2> r;
      asm("ld.global.L2::cache_hint.v2.u32 {%0,%1}, [%2], %3;\n"
          : "=r"(r.array[0]), "=r"(r.array[1]) : "l"(src), "l"(policy));
      *reinterpret_cast<Array<unsigned, 2, 2>*>(dst) = r;
    } else {
      unsigned r;
      asm("ld.global.L2::cache_hint.u32 %0, [%1], %2;\n" : "=r"(r) : "l"(src), "l"(policy));
      *reinterpret_cast<unsigned*>(dst) = r;
    }
    return;
  }
#endif
  loadGeneric<T, V>(dst, src);
}

// cp.async (sm_80 and later): a global-to-shared copy that does not wait for the data, so a
// circular buffer's next stage loads while the current one is computed. Copies are grouped by
// fsCpAsyncCommit; fsCpAsyncWait<N> waits until at most N groups of this thread are pending
// (a __syncthreads then shows every thread's copies to the block). Older GPUs copy
// synchronously, and commit and wait do nothing; the emulator holds each copy back until its
// thread waits for it (cuda_emu.h).
#if !defined(FS_EMULATE) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
#define FS_CP_ASYNC 1
#endif

template <typename T, int V>
FS_DEVICE void fsCpAsync(T* dst, const T* src) {
#if defined(FS_CP_ASYNC)
  constexpr int bytes = static_cast<int>(sizeof(T)) * V;
  static_assert(bytes == 4 || bytes == 8 || bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(bytes) : "memory");
  }
#elif defined(FS_EMULATE)
  fs_emu::cp_async(dst, src, static_cast<int>(sizeof(T)) * V);
#else
  loadGeneric<T, V>(dst, src);
#endif
}

FS_DEVICE void fsCpAsyncCommit() {
#if defined(FS_CP_ASYNC)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(FS_EMULATE)
  fs_emu::cp_async_commit();
#endif
}

template <int N>
FS_DEVICE void fsCpAsyncWait() {
#if defined(FS_CP_ASYNC)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(FS_EMULATE)
  fs_emu::cp_async_wait(N);
#endif
}

template <typename T, int V>
FS_DEVICE void loadGlobalToLocal(T* dst, const T* src) {
  loadGeneric<T, V>(dst, src);
}

template <typename T, int V>
FS_DEVICE void loadLocalToGlobal(T* dst, const T* src) {
  loadGeneric<T, V>(dst, src);
}

// fp4: global memory packs two codes per byte, registers hold one code per __e2m1. The
// global pointer is the BYTE holding the first element: `tensor.data + elem / 2` with elem
// even. V must be even, so a thread always owns whole bytes (no two threads write one byte).
template <int V>
FS_DEVICE void fsLoadE2m1GlobalToLocal(__e2m1* dst, const __e2m1* src_bytes) {
  static_assert(V % 2 == 0, "fp4 vectors hold whole bytes: V must be even");
  Array<uint8_t, V / 2, (FsIsPow2<V / 2>::value && V / 2 <= 16) ? V / 2 : 1> packed;
  loadGeneric<uint8_t, V / 2>(&packed[0], reinterpret_cast<const uint8_t*>(src_bytes));
  for (int i = 0; i < V / 2; ++i) {
    dst[2 * i] = fsE2m1FromBits(static_cast<uint8_t>(packed[i] & 0xF));
    dst[2 * i + 1] = fsE2m1FromBits(static_cast<uint8_t>(packed[i] >> 4));
  }
}

template <int V>
FS_DEVICE void fsStoreE2m1LocalToGlobal(__e2m1* dst_bytes, const __e2m1* src) {
  static_assert(V % 2 == 0, "fp4 vectors hold whole bytes: V must be even");
  Array<uint8_t, V / 2, (FsIsPow2<V / 2>::value && V / 2 <= 16) ? V / 2 : 1> packed;
  for (int i = 0; i < V / 2; ++i) {
    packed[i] = fsPackE2m1x2(src[2 * i], src[2 * i + 1]);
  }
  loadGeneric<uint8_t, V / 2>(reinterpret_cast<uint8_t*>(dst_bytes), &packed[0]);
}

template <>
FS_DEVICE void loadGlobalToLocal<__e2m1, 2>(__e2m1* dst, const __e2m1* src) {
  fsLoadE2m1GlobalToLocal<2>(dst, src);
}
template <>
FS_DEVICE void loadGlobalToLocal<__e2m1, 4>(__e2m1* dst, const __e2m1* src) {
  fsLoadE2m1GlobalToLocal<4>(dst, src);
}
template <>
FS_DEVICE void loadGlobalToLocal<__e2m1, 8>(__e2m1* dst, const __e2m1* src) {
  fsLoadE2m1GlobalToLocal<8>(dst, src);
}
template <>
FS_DEVICE void loadGlobalToLocal<__e2m1, 16>(__e2m1* dst, const __e2m1* src) {
  fsLoadE2m1GlobalToLocal<16>(dst, src);
}
template <>
FS_DEVICE void loadGlobalToLocal<__e2m1, 32>(__e2m1* dst, const __e2m1* src) {
  fsLoadE2m1GlobalToLocal<32>(dst, src);
}
template <>
FS_DEVICE void loadLocalToGlobal<__e2m1, 2>(__e2m1* dst, const __e2m1* src) {
  fsStoreE2m1LocalToGlobal<2>(dst, src);
}
template <>
FS_DEVICE void loadLocalToGlobal<__e2m1, 4>(__e2m1* dst, const __e2m1* src) {
  fsStoreE2m1LocalToGlobal<4>(dst, src);
}
template <>
FS_DEVICE void loadLocalToGlobal<__e2m1, 8>(__e2m1* dst, const __e2m1* src) {
  fsStoreE2m1LocalToGlobal<8>(dst, src);
}
template <>
FS_DEVICE void loadLocalToGlobal<__e2m1, 16>(__e2m1* dst, const __e2m1* src) {
  fsStoreE2m1LocalToGlobal<16>(dst, src);
}
template <>
FS_DEVICE void loadLocalToGlobal<__e2m1, 32>(__e2m1* dst, const __e2m1* src) {
  fsStoreE2m1LocalToGlobal<32>(dst, src);
}

// One fp4 element of global memory (a read-modify-write of its byte for stores: only safe
// when no other thread writes the neighbouring element concurrently).
FS_DEVICE __e2m1 fsLoadE2m1(const __e2m1* data, nvfuser_index_t elem) {
  const uint8_t b = reinterpret_cast<const uint8_t*>(data)[elem >> 1];
  return fsE2m1FromBits(static_cast<uint8_t>((elem & 1) ? (b >> 4) : (b & 0xF)));
}

// ---- dynamic shared memory -----------------------------------------------------------------
// The emulator defines its own FS_DYNAMIC_SHARED (block-shared storage of the launch's size).
#if !defined(FS_EMULATE) && !defined(FS_DYNAMIC_SHARED)
#define FS_DYNAMIC_SHARED(name) extern __shared__ __align__(16) char name[]
#endif

#endif  // FS_RUNTIME_ARRAY_CUH
