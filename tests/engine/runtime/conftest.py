"""Hand-written CUDA kernels shared by the emulator and nvcc tests.

Each text is complete CUDA (as NVRTC would get it): a prelude with a minimal Tensor<T, N, A>
matching engine/runtime/abi.py (the real runtime headers are written separately), then one
`extern "C" __global__` kernel. test_emulate.py runs them on the CPU emulator; test_nvcc.py
proves that the same texts are valid CUDA for sm_80 and sm_90.
"""

from __future__ import annotations

import pytest

PRELUDE = r"""
// Minimal stand-ins for the runtime headers (see engine/runtime/abi.py for the layout).
#ifndef FS_EMULATE
#define FS_DYNAMIC_SHARED(name) extern __shared__ __align__(16) char name[]
#endif
template <typename T, int N, int A>
struct Tensor {
  T* data;
  long long logical_size[N];
  long long alloc_stride[A];
};
template <typename T>
struct Tensor<T, 0, 0> {
  T* data;
};
"""

KERNELS: dict[str, str] = {}

# 2-D grid and block; strided (non-contiguous) Tensor arguments; scalar arguments of each type;
# a 0-dim Tensor<T, 0, 0>.
KERNELS["index2d"] = PRELUDE + r"""
extern "C" __global__ void index2d(Tensor<float, 2, 2> T0, Tensor<double, 2, 2> T1,
                                   Tensor<float, 0, 0> T2, double s0, float s1, long long s2,
                                   int s3, bool s4) {
  long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= T1.logical_size[0] || col >= T1.logical_size[1]) {
    return;
  }
  float x = T0.data[row * T0.alloc_stride[0] + col * T0.alloc_stride[1]];
  double v = x * s0 + s1 + (double)(s2 + s3) * T2.data[0];
  if (s4) {
    v = -v;
  }
  T1.data[row * T1.alloc_stride[0] + col * T1.alloc_stride[1]] = v;
}
"""

# 3-D grid and block indices; __syncthreads_count/or/and; the sm_80 warp reduction intrinsic.
KERNELS["index3d"] = PRELUDE + r"""
extern "C" __global__ void index3d(Tensor<int, 1, 1> T0, Tensor<int, 1, 1> T1) {
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int nthreads = blockDim.x * blockDim.y * blockDim.z;
  const int bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const long long g = (long long)bid * nthreads + tid;
  T0.data[g] = ((((blockIdx.z * 16 + blockIdx.y) * 16 + blockIdx.x) * 16 + threadIdx.z) * 16 +
                threadIdx.y) * 16 + threadIdx.x;
  const int odd = __syncthreads_count(tid % 2);
  const int last = __syncthreads_or(tid == nthreads - 1);
  const int none = __syncthreads_and(tid > 0);
  const int wsum = __reduce_add_sync(0xffffffffu, tid);
  T1.data[g] = odd * 1000000 + last * 100000 + none * 10000 + wsum;
}
"""

# Block-wide reversal through static shared memory; two barriers per block.
KERNELS["reverse"] = PRELUDE + r"""
extern "C" __global__ void reverse(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {
  __shared__ float buf[256];
  const int t = threadIdx.x;
  const long long base = (long long)blockIdx.x * blockDim.x;
  buf[t] = T0.data[(base + t) * T0.alloc_stride[0]];
  __syncthreads();
  const float mine = buf[blockDim.x - 1 - t];
  __syncthreads();
  buf[t] = mine * 2.0f;
  __syncthreads();
  T1.data[(base + t) * T1.alloc_stride[0]] = buf[t] + buf[(t + 1) % blockDim.x];
}
"""

# Warp reductions across multiple warps: a butterfly with __shfl_xor_sync inside each warp, then
# the first warp reduces the per-warp sums with __shfl_down_sync. float, double and int64 values.
KERNELS["warp_reduce"] = PRELUDE + r"""
template <typename T>
__device__ __forceinline__ T warp_xor_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}
template <typename T>
__device__ __forceinline__ T warp_down_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}
extern "C" __global__ void warp_reduce(Tensor<float, 2, 2> T0, Tensor<float, 1, 1> T1,
                                       Tensor<double, 1, 1> T2, Tensor<long long, 1, 1> T3) {
  __shared__ float fsum[32];
  __shared__ double dsum[32];
  __shared__ long long isum[32];
  const int tid = threadIdx.x;
  const int lane = tid % 32, warp = tid / 32, nwarps = (blockDim.x + 31) / 32;
  const long long row = blockIdx.x;
  float f = 0.0f;
  for (long long c = tid; c < T0.logical_size[1]; c += blockDim.x) {
    f += T0.data[row * T0.alloc_stride[0] + c * T0.alloc_stride[1]];
  }
  double d = (double)f;
  long long i = (long long)tid + 1;
  f = warp_xor_sum(f);
  d = warp_xor_sum(d);
  i = warp_xor_sum(i);
  if (lane == 0) {
    fsum[warp] = f;
    dsum[warp] = d;
    isum[warp] = i;
  }
  __syncthreads();
  if (warp == 0) {
    f = lane < nwarps ? fsum[lane] : 0.0f;
    d = lane < nwarps ? dsum[lane] : 0.0;
    i = lane < nwarps ? isum[lane] : 0;
    f = warp_down_sum(f);
    d = warp_down_sum(d);
    i = warp_down_sum(i);
    if (lane == 0) {
      T1.data[row * T1.alloc_stride[0]] = f;
      T2.data[row * T2.alloc_stride[0]] = d;
      T3.data[row * T3.alloc_stride[0]] = i;
    }
  }
}
"""

# Warp scan with __shfl_up_sync, a broadcast with __shfl_sync, votes, and an unsigned xor.
KERNELS["warp_misc"] = PRELUDE + r"""
extern "C" __global__ void warp_misc(Tensor<int, 1, 1> T0, Tensor<int, 1, 1> T1,
                                     Tensor<int, 1, 1> T2, Tensor<unsigned int, 1, 1> T3) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % 32;
  const int x = T0.data[g];
  int scan = x;
  for (int d = 1; d < 32; d *= 2) {
    int up = __shfl_up_sync(0xffffffffu, scan, d);
    if (lane >= d) {
      scan += up;
    }
  }
  const int total = __shfl_sync(0xffffffffu, scan, 31);
  T1.data[g] = scan;
  const unsigned positive = __ballot_sync(0xffffffffu, x > 0);
  const int any_big = __any_sync(0xffffffffu, x > 90);
  const int all_pos = __all_sync(0xffffffffu, x > 0);
  T2.data[g] = total * 1000 + __popc(positive) * 10 + any_big * 2 + all_pos;
  unsigned u = (unsigned)x;
  u ^= __shfl_xor_sync(0xffffffffu, u, 1);
  __syncwarp();
  T3.data[g] = u;
}
"""

# Atomics across blocks: per-block partial sums, then the last block to finish (a ticket taken
# with atomicAdd after __threadfence) adds the partials; plus float/double/int/u64 atomics.
KERNELS["last_block"] = PRELUDE + r"""
extern "C" __global__ void last_block(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> partial,
                                      Tensor<unsigned int, 0, 0> counter, Tensor<float, 1, 1> T1,
                                      Tensor<double, 1, 1> T2, Tensor<int, 1, 1> T3,
                                      Tensor<unsigned long long, 1, 1> T4) {
  __shared__ float red[128];
  __shared__ bool am_last;
  const int t = threadIdx.x;
  const long long n = T0.logical_size[0];
  const long long g = (long long)blockIdx.x * blockDim.x + t;
  const float x = g < n ? T0.data[g] : 0.0f;
  red[t] = x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) {
      red[t] += red[t + s];
    }
    __syncthreads();
  }
  if (g < n) {
    atomicAdd(&T1.data[1], x);
    atomicAdd(&T2.data[0], (double)x);
    atomicMax(&T3.data[0], (int)x);
    atomicAdd(&T3.data[1], 1);
    atomicCAS(&T3.data[2], 0, (int)blockIdx.x + 100);
    atomicExch(&T3.data[3], 7);
    atomicAdd(&T4.data[0], (unsigned long long)g);
  }
  if (t == 0) {
    partial.data[blockIdx.x] = red[0];
    __threadfence();
    const unsigned int ticket = atomicAdd(counter.data, 1u);
    am_last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (am_last && t == 0) {
    float total = 0.0f;
    for (unsigned int b = 0; b < gridDim.x; ++b) {
      total += partial.data[b];
    }
    T1.data[0] = total;
    *counter.data = 0;
  }
}
"""

# Dynamic shared memory (FS_DYNAMIC_SHARED): two float arrays of blockDim.x each.
KERNELS["dyn_smem"] = PRELUDE + r"""
extern "C" __global__ void dyn_smem(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {
  FS_DYNAMIC_SHARED(smem);
  float* a = reinterpret_cast<float*>(smem);
  float* b = a + blockDim.x;
  const int t = threadIdx.x;
  const long long g = (long long)blockIdx.x * blockDim.x + t;
  a[t] = T0.data[g];
  b[t] = (float)t;
  __syncthreads();
  T1.data[g] = a[(t + 1) % blockDim.x] + b[blockDim.x - 1 - t];
}
"""

# Half of the block exits before a __syncthreads that the other half waits at.
KERNELS["deadlock"] = PRELUDE + r"""
extern "C" __global__ void deadlock(Tensor<float, 1, 1> T0) {
  if (threadIdx.x >= 32) {
    return;
  }
  T0.data[threadIdx.x] = 1.0f;
  __syncthreads();
  T0.data[threadIdx.x] = 2.0f;
}
"""

# Lanes 16..31 exit; lanes 0..15 shuffle with a full mask: a warp barrier nobody completes.
KERNELS["warp_deadlock"] = PRELUDE + r"""
extern "C" __global__ void warp_deadlock(Tensor<float, 1, 1> T0) {
  if (threadIdx.x % 32 >= 16) {
    return;
  }
  float v = T0.data[threadIdx.x];
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  T0.data[threadIdx.x] = v;
}
"""

# A device-side assert that fails in one thread of one block.
KERNELS["trap"] = PRELUDE + r"""
#include <cassert>
extern "C" __global__ void trap(Tensor<float, 1, 1> T0) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  assert(T0.data[g] >= 0.0f);
  T0.data[g] += 1.0f;
}
"""

# Faults: a wild store (SIGSEGV), a local array too large for a fiber's stack, an integer division
# by zero; `mode` picks one, in block 1 thread 5 only.
KERNELS["fault"] = PRELUDE + r"""
__device__ __noinline__ int big_frame(int x) {
  volatile int big[1 << 20];
  for (int i = 0; i < (1 << 20); i += 1024) {
    big[i] = i + x;
  }
  return big[x & 1023];
}
extern "C" __global__ void fault(Tensor<int, 1, 1> T0, int mode) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const bool culprit = blockIdx.x == 1 && threadIdx.x == 5;
  if (culprit && mode == 0) {
    T0.data[g + (1LL << 40)] = 1;
  } else if (culprit && mode == 1) {
    T0.data[g] = big_frame(T0.data[g]);
  } else {
    const int d = culprit && mode == 2 ? T0.data[0] : 1;  // T0[0] is 0
    T0.data[g] = T0.data[g] / d;
  }
}
"""

# Missing ';' at the end of the line that declares `i`: compilers blame the next line.
KERNELS["syntax_error"] = PRELUDE + r"""
extern "C" __global__ void syntax_error(Tensor<float, 1, 1> T0) {
  long long i = threadIdx.x
  T0.data[i] = 1.0f;
}
"""

VALID = [k for k in KERNELS if k != "syntax_error"]


@pytest.fixture(scope="session")
def cuda_kernels() -> dict[str, str]:
    """name -> complete CUDA source of each hand-written test kernel."""
    return dict(KERNELS)
