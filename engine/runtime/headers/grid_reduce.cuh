// fusescope runtime: grid reductions in one (non-cooperative) launch.
//
//   bool gridReduce<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
//       out, val, op, init, work_buf, sync_flags, smem)
//
// Reduces `val` over the flagged thread dims and the flagged block dims, separately for each
// combination of the unflagged thread and block coordinates. Every thread of every block
// calls it (uniformly within a block). Each block reduces within itself (blockAllReduce),
// writes one partial per thread segment to work_buf, fences, and counts its arrival in
// sync_flags[block segment] with an atomic. The last block of a block segment to arrive
// reads all partials, combines them and returns true with `out` set in all of its threads;
// every other block returns false and leaves `out` untouched. The last block also resets its
// counter to 0, so the next launch (or a later call with the same flags) starts clean.
//
// Buffer sizes (elements), see fsGridReduceWorkSize / fsGridReduceFlagsSize below and
// engine/codegen/ops_table.py grid_reduce_buffer_sizes:
//   work_buf:   gridDim.x*gridDim.y*gridDim.z
//               * (X_THREAD ? 1 : blockDim.x) * (Y_THREAD ? 1 : blockDim.y)
//               * (Z_THREAD ? 1 : blockDim.z)
//   sync_flags: (X_BLOCK ? 1 : gridDim.x) * (Y_BLOCK ? 1 : gridDim.y) * (Z_BLOCK ? 1 : gridDim.z)
//               nvfuser_index_t, zeroed before the first launch (the kernel keeps them zero).
// Each gridReduce call site needs its own work_buf and sync_flags regions: a block that
// runs ahead into a second call could otherwise count into a flag the first call has not
// reset yet. smem: blockDim.x*y*z elements, as blockAllReduce.
// No block waits for another, so any grid size works without a cooperative launch.
#ifndef FS_RUNTIME_GRID_REDUCE_CUH
#define FS_RUNTIME_GRID_REDUCE_CUH

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD>
FS_HOST_DEVICE constexpr nvfuser_index_t fsGridReduceWorkSize(nvfuser_index_t gx, nvfuser_index_t gy,
                                               nvfuser_index_t gz, nvfuser_index_t bx,
                                               nvfuser_index_t by, nvfuser_index_t bz) {
  return gx * gy * gz * (X_THREAD ? 1 : bx) * (Y_THREAD ? 1 : by) * (Z_THREAD ? 1 : bz);
}

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK>
FS_HOST_DEVICE constexpr nvfuser_index_t fsGridReduceFlagsSize(nvfuser_index_t gx, nvfuser_index_t gy,
                                                nvfuser_index_t gz) {
  return (X_BLOCK ? 1 : gx) * (Y_BLOCK ? 1 : gy) * (Z_BLOCK ? 1 : gz);
}

// A load that bypasses the (non-coherent) L1, for partials that other blocks wrote.
template <typename T>
FS_DEVICE T fsVolatileLoad(const T* p) {
  if constexpr (sizeof(T) == 4 && alignof(T) >= 4) {
    const uint32_t w = *reinterpret_cast<const volatile uint32_t*>(p);
    T out;
    const char* s = reinterpret_cast<const char*>(&w);
    char* d = reinterpret_cast<char*>(&out);
    for (int i = 0; i < 4; ++i) {
      d[i] = s[i];
    }
    return out;
  } else if constexpr (sizeof(T) == 8 && alignof(T) >= 8) {
    const uint64_t w = *reinterpret_cast<const volatile uint64_t*>(p);
    T out;
    const char* s = reinterpret_cast<const char*>(&w);
    char* d = reinterpret_cast<char*>(&out);
    for (int i = 0; i < 8; ++i) {
      d[i] = s[i];
    }
    return out;
  } else {
    T out;
    const volatile char* s = reinterpret_cast<const volatile char*>(p);
    char* d = reinterpret_cast<char*>(&out);
    for (int i = 0; i < static_cast<int>(sizeof(T)); ++i) {
      d[i] = s[i];
    }
    return out;
  }
}

template <typename T>
struct FsWorkStore {
  T* work;
  FS_DEVICE T load(nvfuser_index_t i) const { return fsVolatileLoad(work + i); }
  FS_DEVICE void store(nvfuser_index_t i, const T& v) const { work[i] = v; }
};

template <typename T>
struct FsWelfordWorkStore {
  T* avg;
  T* m2;
  nvfuser_index_t* n;
  FS_DEVICE FsWelford<T> load(nvfuser_index_t i) const {
    FsWelford<T> w;
    w.avg = fsVolatileLoad(avg + i);
    w.m2 = fsVolatileLoad(m2 + i);
    w.n = fsVolatileLoad(n + i);
    return w;
  }
  FS_DEVICE void store(nvfuser_index_t i, const FsWelford<T>& w) const {
    avg[i] = w.avg;
    m2[i] = w.m2;
    n[i] = w.n;
  }
};

// Where this thread and block stand in a grid reduction: r = index among the reduced,
// R = their count, seg = the index of its segment (threads, then blocks), t_S = thread
// segments per block.
struct FsGridCoords {
  unsigned t_r, t_R, t_seg, b_r, b_R, b_seg;
  nvfuser_index_t t_S;
};

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD>
FS_DEVICE FsGridCoords fsGridCoords() {
  FsGridCoords c;
  fsReduceCoords<X_THREAD, Y_THREAD, Z_THREAD>(threadIdx.x, threadIdx.y, threadIdx.z, blockDim.x,
                                               blockDim.y, blockDim.z, c.t_r, c.t_R, c.t_seg);
  c.t_S = static_cast<nvfuser_index_t>(blockDim.x) * blockDim.y * blockDim.z / c.t_R;
  fsReduceCoords<X_BLOCK, Y_BLOCK, Z_BLOCK>(blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x,
                                            gridDim.y, gridDim.z, c.b_r, c.b_R, c.b_seg);
  return c;
}

// Whether this block is the last of `count` to arrive at `*flag` (then the flag is reset).
// On the GPU thread 0 counts with one acquire-release atomic after a barrier (the pattern of
// CUTLASS's semaphore): the barrier orders the block's partials before its release, and the
// last block's barrier after thread 0's acquire orders every thread's reads of the others'
// partials after it. Two block-wide __threadfence()s cost the outer sum 0.5 us (of 179).
FS_DEVICE bool fsArriveLast(nvfuser_index_t* flag, unsigned count) {
  __shared__ int fs_group_last;
#if defined(FS_EMULATE) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 700
  __threadfence();  // this block's partials are visible device-wide before it counts
#endif
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
#if defined(FS_EMULATE) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 700
    const unsigned long long old = atomicAdd(reinterpret_cast<unsigned long long*>(flag), 1ull);
#else
    unsigned long long old;
    asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], 1;" : "=l"(old) : "l"(flag) : "memory");
#endif
    const bool last = old + 1 == static_cast<unsigned long long>(count);
    if (last) {
      *flag = 0;  // every other block has already counted
    }
    fs_group_last = last ? 1 : 0;
  }
  __syncthreads();
  const bool last = fs_group_last != 0;
  __syncthreads();  // all have read the flag before another call may overwrite it
#if defined(FS_EMULATE) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 700
  if (last) {
    __threadfence();
  }
#endif
  return last;
}

// The shared core: V is the value (T, or FsWelford<T>), Work and Smem the storages.
template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename V, typename Op, typename Work, typename Smem>
__device__ bool fsGridReduceImpl(V& out, V val, Op op, V init, const Work& work,
                                 nvfuser_index_t* sync_flags, const Smem& smem) {
  // 1. Within the block: every thread gets its thread segment's partial.
  const V partial = fsBlockAllReduceImpl<X_THREAD, Y_THREAD, Z_THREAD>(val, op, smem);

  const FsGridCoords c = fsGridCoords<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>();
  const unsigned t_r = c.t_r, t_R = c.t_R, t_seg = c.t_seg, b_r = c.b_r, b_R = c.b_R, b_seg = c.b_seg;
  const nvfuser_index_t t_S = c.t_S;

  // 2. One thread per thread segment publishes the partial: slot (b_seg, b_r, t_seg).
  const nvfuser_index_t block_base = (static_cast<nvfuser_index_t>(b_seg) * b_R) * t_S;
  if (t_r == 0) {
    work.store(block_base + static_cast<nvfuser_index_t>(b_r) * t_S + t_seg, partial);
  }
  // 3. Count this block's arrival; the last one of the block segment finishes.
  if (!fsArriveLast(sync_flags + b_seg, b_R)) {
    return false;
  }

  // 4. The last block: its threads of each thread segment split the b_R partials, then
  // combine them within the block (same tree as above, so every thread gets the result).
  V acc = init;
  #pragma unroll 4
  for (nvfuser_index_t b = t_r; b < b_R; b += t_R) {
    acc = op(acc, work.load(block_base + b * t_S + t_seg));
  }
  out = fsBlockAllReduceImpl<X_THREAD, Y_THREAD, Z_THREAD>(acc, op, smem);
  return true;
}

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T, typename Func>
__device__ bool gridReduce(T& out, T val, Func op, T init, T* work_buf,
                           nvfuser_index_t* sync_flags, T* smem) {
  FsWorkStore<T> work{work_buf};
  FsSmemStore<T> st{smem};
  return fsGridReduceImpl<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
      out, val, op, init, work, sync_flags, st);
}

// N values at once (an accumulator array, e.g. the per-thread columns of an outer
// reduction), in two levels so that no single block reads many partials (one level where
// it reads few, see g_size):
//   1. each block reduces within itself and publishes its partials;
//   2. the blocks of a block segment form groups of about sqrt(b_R) blocks; the last block
//      of each group to arrive combines the group's partials and publishes one per group;
//   3. the last group finisher combines the group partials and returns true with `vals` set.
// Partials are stored element-major (work[k * stride + slot]) so that a warp's loads of one
// element are contiguous. Sizes per call site: work_buf 2 * N * stride elements, stride =
// gridReduce's work size; sync_flags 2 * gridDim.x*y*z (zeroed once; kept zero).
// smem: blockDim.x*y*z*N elements.
template <typename T, int N, typename Func>
struct FsGroupOp {
  Func op;
  FS_DEVICE Array<T, N> operator()(Array<T, N> a, const Array<T, N>& b) const {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      a[k] = op(a[k], b[k]);
    }
    return a;
  }
};

// The block-level step's shared memory, element-major like the partials: slot i's element
// k at smem[k * slots + i], so that a warp's accesses to one element fall in distinct banks
// (slot-major 64-byte arrays put a whole warp on two banks).
template <typename T, int N>
struct FsGroupSmemStore {
  T* smem;
  unsigned slots;
  FS_DEVICE Array<T, N> load(unsigned i) const {
    Array<T, N> v;
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      v[k] = smem[k * slots + i];
    }
    return v;
  }
  FS_DEVICE void store(unsigned i, const Array<T, N>& v) const {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      smem[k * slots + i] = v[k];
    }
  }
};

template <typename T, int N>
FS_DEVICE void fsGroupPublish(T* work, nvfuser_index_t stride, nvfuser_index_t slot,
                              const Array<T, N>& v) {
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    work[k * stride + slot] = v[k];
  }
}

// Partials a thread of fsGroupCombine loads at once. 8 measured on an H100 (outer sum fp32
// [32768, 4096], 32 blocks a column, hand-edited kernels): 16 saved 0.3 us more but took the
// kernel from 60 to 104 registers; 4 saved 1 us less.
constexpr unsigned kFsCombineBatch = 8;

// Combines partials [first, first + count) of a thread segment, split among its t_R threads,
// then across those threads; every thread of the block gets its segment's result.
template <bool X_THREAD, bool Y_THREAD, bool Z_THREAD, typename T, int N, typename Func>
FS_DEVICE Array<T, N> fsGroupCombine(const T* work, nvfuser_index_t stride, nvfuser_index_t first,
                                     unsigned count, nvfuser_index_t t_S, unsigned t_r, unsigned t_R,
                                     unsigned t_seg, T init, FsGroupOp<T, N, Func> op,
                                     const FsGroupSmemStore<T, N>& st) {
  Array<T, N> acc;
  acc.set(init);
  // L2 loads (ld.global.cg), not volatile ones: the arrival count's fences order them after
  // the partials' stores, and unlike volatile loads they may all be in flight at once. A
  // batch's loads are all issued before any is summed: this runs on the kernel's critical
  // path, after the last block's main loop, where each round trip to L2 is paid in full.
  for (unsigned b0 = t_r; b0 < count; b0 += kFsCombineBatch * t_R) {
    Array<T, N> v[kFsCombineBatch];
    #pragma unroll
    for (unsigned j = 0; j < kFsCombineBatch; ++j) {
      const unsigned b = b0 + j * t_R;
      const nvfuser_index_t slot = (first + min(b, count - 1)) * t_S + t_seg;
      #pragma unroll
      for (int k = 0; k < N; ++k) {
        v[j][k] = b < count ? __ldcg(work + k * stride + slot) : init;
      }
    }
    #pragma unroll
    for (unsigned j = 0; j < kFsCombineBatch; ++j) {
      acc = op(acc, v[j]);
    }
  }
  return fsBlockAllReduceImpl<X_THREAD, Y_THREAD, Z_THREAD>(acc, op, st);
}

// Step 1 of a grouped grid reduction: the block's partials of its thread segment, in every thread.
template <bool X_THREAD, bool Y_THREAD, bool Z_THREAD, typename T, int N, typename Func>
FS_DEVICE Array<T, N> fsGroupBlockPartial(const T (&vals)[N], const FsGroupOp<T, N, Func>& gop,
                                          const FsGroupSmemStore<T, N>& st) {
  Array<T, N> val;
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    val[k] = vals[k];
  }
  return fsBlockAllReduceImpl<X_THREAD, Y_THREAD, Z_THREAD>(val, gop, st);
}

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T, int N, typename Func>
__device__ bool gridReduceGroup(T (&vals)[N], Func op, T init, T* work_buf, nvfuser_index_t stride,
                                nvfuser_index_t* sync_flags, T* smem) {
  const FsGroupOp<T, N, Func> gop{op};
  const FsGroupSmemStore<T, N> st{smem, blockDim.x * blockDim.y * blockDim.z};
  const Array<T, N> partial = fsGroupBlockPartial<X_THREAD, Y_THREAD, Z_THREAD>(vals, gop, st);
  const FsGridCoords c = fsGridCoords<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>();
  const unsigned t_r = c.t_r, t_R = c.t_R, t_seg = c.t_seg, b_r = c.b_r, b_R = c.b_R, b_seg = c.b_seg;
  const nvfuser_index_t t_S = c.t_S;
  // One level while the last block reads the partials in two batches or fewer: an arrival
  // (a fence and an atomic) costs about as much as two rounds of loads. Outer sum fp32
  // [32768, 4096] (32 blocks a column) on an H100: 181.4 -> 179.7 us.
  unsigned g_size = b_R;
  if (b_R > 2 * kFsCombineBatch * t_R) {
    g_size = 1;
    while (g_size * g_size < b_R) {
      ++g_size;
    }
  }
  const unsigned groups = (b_R + g_size - 1) / g_size;
  const unsigned group = b_r / g_size;
  const unsigned members = min(g_size, b_R - group * g_size);
  const nvfuser_index_t seg_base = static_cast<nvfuser_index_t>(b_seg) * b_R;
  nvfuser_index_t* flags = sync_flags + static_cast<nvfuser_index_t>(b_seg) * (b_R + 1);

  // Level 1: publish, then the group's last block combines the group.
  if (t_r == 0) {
    fsGroupPublish(work_buf, stride, (seg_base + b_r) * t_S + t_seg, partial);
  }
  if (!fsArriveLast(flags + group, members)) {
    return false;
  }
  const Array<T, N> group_sum = fsGroupCombine<X_THREAD, Y_THREAD, Z_THREAD>(
      work_buf, stride, seg_base + group * g_size, members, t_S, t_r, t_R, t_seg, init, gop, st);

  if (groups == 1) {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      vals[k] = group_sum[k];
    }
    return true;
  }
  // Level 2: group partials in the second half of the work buffer.
  T* work2 = work_buf + N * stride;
  if (t_r == 0) {
    fsGroupPublish(work2, stride, (seg_base + group) * t_S + t_seg, group_sum);
  }
  if (!fsArriveLast(flags + b_R, groups)) {
    return false;
  }
  const Array<T, N> total = fsGroupCombine<X_THREAD, Y_THREAD, Z_THREAD>(
      work2, stride, seg_base, groups, t_S, t_r, t_R, t_seg, init, gop, st);
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    vals[k] = total[k];
  }
  return true;
}

// gridReduceGroup for a co-resident grid (a cooperative launch): instead of one block per
// group combining partials while the others leave, every block waits at a grid barrier and
// then combines its own share of the N * t_S partial columns over all b_R blocks, so the
// tail reads the partials with every SM instead of a few. The totals go to the second half
// of the work buffer; the last block to finish its share loads its threads' totals and
// returns true, as gridReduceGroup does. Sizes per call site: work_buf as gridReduceGroup;
// sync_flags 3 * gridDim.x*y*z (zeroed once; the finish count is kept zero, the barrier's
// counter flips its top bit per launch). The emulator runs blocks one after
// another, so no block there can wait for another: it runs gridReduceGroup instead (the same
// result, summed in another order).
#if !defined(FS_EMULATE)
// Every block of a block segment waits until all `count` have arrived. The counter's top bit
// flips once per barrier: block 0 adds 2^31 - (count - 1), every other block 1, so the sum
// of one barrier is exactly 2^31 and the low bits are back where they were. No block has to
// count its departure and reset the counter for the next launch (an atomic round trip on
// every block's way out).
FS_DEVICE void fsGridBarrier(nvfuser_index_t* bar, unsigned count, bool first) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    unsigned int* arrived = reinterpret_cast<unsigned int*>(bar);
    const unsigned int add = first ? 0x80000000u - (count - 1u) : 1u;
    __threadfence();  // this block's partials are visible before it counts
    const unsigned int old = atomicAdd(arrived, add);
    while (((old ^ *reinterpret_cast<volatile unsigned int*>(arrived)) & 0x80000000u) == 0u) {
      __nanosleep(32);
    }
    __threadfence();
  }
  __syncthreads();
}

// Combines `count` partial columns over the b_R blocks and stores the totals in `total`:
// slot n's partials are work[col_of(n) + b * block_stride] for block b, its total goes to
// total[col_of(n)]. W threads over consecutive slots (coalesced loads where consecutive slots
// are adjacent columns), P groups of them over the blocks, then the groups' sums through
// shared memory.
template <typename T, typename Func, typename ColOf>
FS_DEVICE void fsGridShare(const T* work, T* total, nvfuser_index_t block_stride, unsigned b_R,
                           unsigned count, ColOf col_of, Func op, T init, T* smem) {
  const unsigned nthr = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned W = min(max(count, 1u), nthr), P = nthr / W, j = tid % W, p = tid / W;
  for (unsigned base = 0; base < count; base += W) {
    const unsigned n = base + j;
    const nvfuser_index_t col = col_of(min(n, count - 1));
    T acc = init;
    if (n < count && p < P) {
      // A group's partials are loaded kBatch at a time, each batch's loads all issued before
      // any is summed: one L2 round trip per kBatch partials, not one per partial (a
      // multi-wave launch has several blocks an SM, so a group may have dozens of partials).
      // Slots past b_R add `init`, the combine's identity.
      constexpr unsigned kBatch = 16;
      for (unsigned b0 = p; b0 < b_R; b0 += kBatch * P) {
        T v[kBatch];
        #pragma unroll
        for (unsigned k = 0; k < kBatch; ++k) {
          const unsigned b = b0 + k * P;
          v[k] = b < b_R ? __ldcg(work + col + static_cast<nvfuser_index_t>(b) * block_stride) : init;
        }
        #pragma unroll
        for (unsigned k = 0; k < kBatch; ++k) {
          acc = op(acc, v[k]);
        }
      }
    }
    smem[tid] = acc;
    __syncthreads();
    if (p == 0 && n < count) {
      for (unsigned r = 1; r < P; ++r) {
        acc = op(acc, smem[r * W + j]);
      }
      total[col] = acc;
    }
    __syncthreads();
  }
}
#endif

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T, int N, typename Func>
__device__ bool gridReduceGroupSync(T (&vals)[N], Func op, T init, T* work_buf, nvfuser_index_t stride,
                                    nvfuser_index_t* sync_flags, T* smem) {
#if defined(FS_EMULATE)
  return gridReduceGroup<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
      vals, op, init, work_buf, stride, sync_flags, smem);
#else
  const Array<T, N> partial = fsGroupBlockPartial<X_THREAD, Y_THREAD, Z_THREAD>(
      vals, FsGroupOp<T, N, Func>{op}, FsGroupSmemStore<T, N>{smem, blockDim.x * blockDim.y * blockDim.z});
  const FsGridCoords c = fsGridCoords<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>();
  const nvfuser_index_t seg_base = static_cast<nvfuser_index_t>(c.b_seg) * c.b_R;
  // Three flags per block segment: the barrier's counter, one unused, finished shares.
  nvfuser_index_t* flags = sync_flags + static_cast<nvfuser_index_t>(c.b_seg) * 3;
  if (c.t_r == 0) {
    fsGroupPublish(work_buf, stride, (seg_base + c.b_r) * c.t_S + c.t_seg, partial);
  }
  fsGridBarrier(flags, c.b_R, c.b_r == 0);
  const unsigned total = N * static_cast<unsigned>(c.t_S);
  const unsigned per = (total + c.b_R - 1) / c.b_R;
  const unsigned q0 = min(total, c.b_r * per), q1 = min(total, q0 + per);
  T* work2 = work_buf + N * stride;
  const nvfuser_index_t t_S = c.t_S;
  fsGridShare(work_buf, work2, t_S, c.b_R, q1 - q0,
              [=](unsigned n) { return ((q0 + n) / t_S) * stride + seg_base * t_S + (q0 + n) % t_S; },
              op, init, smem);
  if (!fsArriveLast(flags + 2, c.b_R)) {
    return false;
  }
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    vals[k] = __ldcg(work2 + k * stride + seg_base * c.t_S + c.t_seg);
  }
  return true;
#endif
}

// A block's share of a grid reduction's results, for an epilogue run per share
// (engine/lower/grid_epilogue.py): the thread segments [v0, v1) of its block segment, whose
// totals are at work_buf[base + v * v_stride + k * k_stride] for accumulator element k.
struct FsShare {
  unsigned v0, v1;
  nvfuser_index_t base, v_stride, k_stride;
};

// The thread a thread segment's results belong to: its coordinates along the dimensions
// that were not reduced, 0 along the reduced ones (fsReduceCoords inverted).
template <bool X_THREAD, bool Y_THREAD, bool Z_THREAD>
FS_DEVICE uint3 fsVirtualThread(unsigned seg) {
  uint3 t;
  t.x = 0;
  t.y = 0;
  t.z = 0;
  if (!X_THREAD) {
    t.x = seg % blockDim.x;
    seg /= blockDim.x;
  }
  if (!Y_THREAD) {
    t.y = seg % blockDim.y;
    seg /= blockDim.y;
  }
  if (!Z_THREAD) {
    t.z = seg % blockDim.z;
  }
  return t;
}

// gridReduceGroupSync without the gather: after the grid barrier each block combines whole
// thread segments (all N elements of each) and leaves their totals in the work buffer's second
// half, so that it runs the epilogue of its own share: no count of finished shares and no last
// block reading every total. Partials and totals are thread-segment major (a segment's N
// elements adjacent), so that a share is one contiguous run. The emulator runs blocks one
// after another: there the last block of gridReduceGroup stores every total and takes every
// segment. Sizes as gridReduceGroupSync.
template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T, int N, typename Func>
__device__ FsShare gridReduceGroupShares(T (&vals)[N], Func op, T init, T* work_buf, nvfuser_index_t stride,
                                         nvfuser_index_t* sync_flags, T* smem) {
  const FsGridCoords c = fsGridCoords<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>();
  const nvfuser_index_t seg_base = static_cast<nvfuser_index_t>(c.b_seg) * c.b_R;
#if defined(FS_EMULATE)
  // The totals go where this block segment's first block published its partials (read by
  // now, and no other segment writes there), element-major as gridReduceGroup keeps them.
  const FsShare none{0u, 0u, seg_base * c.t_S, 1, stride};
  if (!gridReduceGroup<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
          vals, op, init, work_buf, stride, sync_flags, smem)) {
    return none;
  }
  if (c.t_r == 0) {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      work_buf[none.base + c.t_seg + k * stride] = vals[k];
    }
  }
  __syncthreads();
  return FsShare{0u, static_cast<unsigned>(c.t_S), none.base, 1, stride};
#else
  nvfuser_index_t* flags = sync_flags + static_cast<nvfuser_index_t>(c.b_seg) * 3;
  // The block's partials: every thread's elements go to shared memory (rows of N + 1, so that
  // a thread's N stores hit N banks), then each of the block's t_S * N partials is reduced over
  // the reduced threads as it is copied out, coalesced. A thread storing its N elements at a
  // stride of N in global memory makes each store a transaction of its own (4.3 us of the
  // seed-001 kernel's 60 on an H100); a block all-reduce first costs barriers the copy needs
  // only one of. Shared memory: (N + 1) elements per thread (reductions._grid reserves them).
  constexpr unsigned kRow = N + 1;
  const unsigned t_S = static_cast<unsigned>(c.t_S);
  __syncthreads();  // an earlier reduction may still read the shared memory
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    smem[(c.t_r * t_S + c.t_seg) * kRow + k] = vals[k];
  }
  __syncthreads();
  {
    const unsigned nthr = blockDim.x * blockDim.y * blockDim.z;
    const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    T* dst = work_buf + (seg_base + c.b_r) * c.t_S * N;
    for (unsigned i = tid; i < t_S * N; i += nthr) {
      const unsigned t = i / N, k = i % N;
      T acc = smem[t * kRow + k];
      for (unsigned r = 1; r < c.t_R; ++r) {
        acc = op(acc, smem[(r * t_S + t) * kRow + k]);
      }
      dst[i] = acc;
    }
  }
  fsGridBarrier(flags, c.b_R, c.b_r == 0);
  const unsigned per = (t_S + c.b_R - 1) / c.b_R;
  const unsigned v0 = min(t_S, c.b_r * per), v1 = min(t_S, v0 + per);
  const nvfuser_index_t first = seg_base * c.t_S * N + static_cast<nvfuser_index_t>(v0) * N;
  fsGridShare(work_buf, work_buf + N * stride, c.t_S * N, c.b_R, N * (v1 - v0),
              [=](unsigned n) { return first + n; }, op, init, smem);
  return FsShare{v0, v1, N * stride + seg_base * c.t_S * N, N, 1};
#endif
}

// Thread segment v's totals (see FsShare).
template <typename T, int N>
FS_DEVICE void fsShareLoad(T (&vals)[N], const T* work_buf, const FsShare& share, unsigned v) {
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    vals[k] = __ldcg(work_buf + share.base + v * share.v_stride + k * share.k_stride);
  }
}

// Welford over the grid: work buffers and smem as gridReduce, one array per component
// (work_n and smem_n are nvfuser_index_t). Returns true in the last block of each block
// segment with (out_avg, out_m2, out_n) set; partials with n == 0 are ignored.
template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T>
__device__ bool gridWelford(T& out_avg, T& out_m2, nvfuser_index_t& out_n, T avg, T m2,
                            nvfuser_index_t n, T* work_avg, T* work_m2, nvfuser_index_t* work_n,
                            nvfuser_index_t* sync_flags, T* smem_avg, T* smem_m2,
                            nvfuser_index_t* smem_n) {
  FsWelfordWorkStore<T> work{work_avg, work_m2, work_n};
  FsWelfordSmemStore<T> st{smem_avg, smem_m2, smem_n};
  FsWelford<T> val{avg, m2, n};
  FsWelford<T> init{T(0), T(0), 0};
  FsWelford<T> out;
  const bool last = fsGridReduceImpl<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
      out, val, FsWelfordOp<T>(), init, work, sync_flags, st);
  if (last) {
    out_avg = out.avg;
    out_m2 = out.m2;
    out_n = out.n;
  }
  return last;
}

// gridWelford over N accumulator elements at once (a thread's vector of columns in an outer
// Welford): one block step, one arrival and one last-block combine for all N, where N calls of
// gridWelford would pay each N times. Partials are element-major in each work buffer
// (work[k * stride + slot], stride = gridWelford's work size); shared memory holds N entries
// per thread in each of smem_avg, smem_m2 and smem_n (element-major, N * blockDim entries).
template <typename T, int N>
struct FsWelfordGroup {
  FsWelford<T> w[N];
};

template <typename T, int N>
struct FsWelfordGroupOp {
  FS_DEVICE FsWelfordGroup<T, N> operator()(FsWelfordGroup<T, N> a, const FsWelfordGroup<T, N>& b) const {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      a.w[k] = fsWelfordCombine(a.w[k], b.w[k]);
    }
    return a;
  }
};

template <typename T, int N>
struct FsWelfordGroupStore {
  T* avg;
  T* m2;
  nvfuser_index_t* n;
  nvfuser_index_t stride;
  bool global;  // partials other blocks wrote: read past the L1
  FS_DEVICE FsWelfordGroup<T, N> load(nvfuser_index_t i) const {
    FsWelfordGroup<T, N> g;
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      const nvfuser_index_t j = k * stride + i;
      g.w[k].avg = global ? fsVolatileLoad(avg + j) : avg[j];
      g.w[k].m2 = global ? fsVolatileLoad(m2 + j) : m2[j];
      g.w[k].n = global ? fsVolatileLoad(n + j) : n[j];
    }
    return g;
  }
  FS_DEVICE void store(nvfuser_index_t i, const FsWelfordGroup<T, N>& g) const {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      const nvfuser_index_t j = k * stride + i;
      avg[j] = g.w[k].avg;
      m2[j] = g.w[k].m2;
      n[j] = g.w[k].n;
    }
  }
};

template <bool X_BLOCK, bool Y_BLOCK, bool Z_BLOCK, bool X_THREAD, bool Y_THREAD, bool Z_THREAD,
          typename T, int N>
__device__ bool gridWelfordGroup(T (&avg)[N], T (&m2)[N], nvfuser_index_t (&n)[N], T* work_avg, T* work_m2,
                                 nvfuser_index_t* work_n, nvfuser_index_t stride, nvfuser_index_t* sync_flags,
                                 T* smem_avg, T* smem_m2, nvfuser_index_t* smem_n) {
  const nvfuser_index_t slots = static_cast<nvfuser_index_t>(blockDim.x) * blockDim.y * blockDim.z;
  const FsWelfordGroupStore<T, N> work{work_avg, work_m2, work_n, stride, true};
  const FsWelfordGroupStore<T, N> st{smem_avg, smem_m2, smem_n, slots, false};
  FsWelfordGroup<T, N> val, init, out;
  #pragma unroll
  for (int k = 0; k < N; ++k) {
    val.w[k] = FsWelford<T>{avg[k], m2[k], n[k]};
    init.w[k] = FsWelford<T>{T(0), T(0), 0};
  }
  const bool last = fsGridReduceImpl<X_BLOCK, Y_BLOCK, Z_BLOCK, X_THREAD, Y_THREAD, Z_THREAD>(
      out, val, FsWelfordGroupOp<T, N>(), init, work, sync_flags, st);
  if (last) {
    #pragma unroll
    for (int k = 0; k < N; ++k) {
      avg[k] = out.w[k].avg;
      m2[k] = out.w[k].m2;
      n[k] = out.w[k].n;
    }
  }
  return last;
}

#endif  // FS_RUNTIME_GRID_REDUCE_CUH
