// fusescope runtime: block-level all-reductions and Welford.
//
//   blockAllReduce<X_REDUCE, Y_REDUCE, Z_REDUCE>(val, op, smem)
//   blockWelford<X_REDUCE, Y_REDUCE, Z_REDUCE>(avg, m2, n, smem_avg, smem_m2, smem_n)
//
// Every thread of the block calls them, uniformly (they contain __syncthreads). The thread
// dims flagged true are reduced, separately for each combination of the other thread
// coordinates (a "segment"); every thread gets its segment's result. smem holds at least
// blockDim.x * blockDim.y * blockDim.z elements; it can be reused right after the call.
//
// Results do not depend on which thread asks: every combination is op(lower, upper) in a
// fixed tree order, so all threads of a segment receive bit-identical values even for a
// non-commutative-in-rounding op such as Welford's.
#ifndef FS_RUNTIME_REDUCE_CUH
#define FS_RUNTIME_REDUCE_CUH

// Where a thread sits: r = its index among the reduced positions of its segment (x fastest),
// R = their count, seg = the index of its segment.
template <bool X, bool Y, bool Z>
FS_DEVICE void fsReduceCoords(unsigned tx, unsigned ty, unsigned tz, unsigned bx, unsigned by,
                              unsigned bz, unsigned& r, unsigned& R, unsigned& seg) {
  r = 0;
  R = 1;
  seg = 0;
  unsigned S = 1;
  if (X) {
    r += tx * R;
    R *= bx;
  } else {
    seg += tx * S;
    S *= bx;
  }
  if (Y) {
    r += ty * R;
    R *= by;
  } else {
    seg += ty * S;
    S *= by;
  }
  if (Z) {
    r += tz * R;
    R *= bz;
  } else {
    seg += tz * S;
    S *= bz;
  }
}

// A warp shuffle of any trivially copyable value, one 32-bit word at a time: `shfl` moves a
// word (a __shfl_*_sync with its lane argument bound).
template <typename T, typename Shfl>
FS_DEVICE T fsShflWords(T v, Shfl shfl) {
  constexpr int W = (static_cast<int>(sizeof(T)) + 3) / 4;
  unsigned int w[W];
  for (int i = 0; i < W; ++i) {
    w[i] = 0;
  }
  const char* p = reinterpret_cast<const char*>(&v);
  char* q = reinterpret_cast<char*>(w);
  for (int i = 0; i < static_cast<int>(sizeof(T)); ++i) {
    q[i] = p[i];
  }
  for (int i = 0; i < W; ++i) {
    w[i] = shfl(w[i]);
  }
  T out;
  char* o = reinterpret_cast<char*>(&out);
  for (int i = 0; i < static_cast<int>(sizeof(T)); ++i) {
    o[i] = q[i];
  }
  return out;
}

template <typename T>
FS_DEVICE T fsShflXor(T v, int lane_mask) {
  return fsShflWords(v, [lane_mask](unsigned int x) { return __shfl_xor_sync(0xffffffffu, x, lane_mask); });
}

// __shfl_down_sync among the lanes of `mask`.
template <typename T>
FS_DEVICE T fsShflDown(T v, unsigned delta, unsigned mask) {
  return fsShflWords(v, [delta, mask](unsigned int x) { return __shfl_down_sync(mask, x, delta); });
}

// Shared-memory storage of one array of T.
template <typename T>
struct FsSmemStore {
  T* smem;
  FS_DEVICE T load(unsigned i) const { return smem[i]; }
  FS_DEVICE void store(unsigned i, const T& v) const { smem[i] = v; }
};

// The tree over shared memory. `active` threads hold a value; coordinates may be virtual (the
// warp path passes tx / 32 with only lane 0 active). All threads reach every barrier.
template <bool X, bool Y, bool Z, typename V, typename Op, typename Store>
FS_DEVICE V fsBlockTree(V val, Op op, const Store& st, bool active, unsigned tx, unsigned ty,
                        unsigned tz, unsigned bx, unsigned by, unsigned bz) {
  unsigned r, R, seg;
  fsReduceCoords<X, Y, Z>(tx, ty, tz, bx, by, bz, r, R, seg);
  const unsigned base = seg * R;
  if (active) {
    st.store(base + r, val);
  }
  __syncthreads();
  unsigned np2 = 1;
  while (np2 * 2 <= R) {
    np2 *= 2;
  }
  // Fold the part above the largest power of two, then halve.
  if (active && r < np2 && r + np2 < R) {
    st.store(base + r, op(st.load(base + r), st.load(base + r + np2)));
  }
  __syncthreads();
  for (unsigned f = np2 / 2; f > 0; f /= 2) {
    if (active && r < f) {
      st.store(base + r, op(st.load(base + r), st.load(base + r + f)));
    }
    __syncthreads();
  }
  const V out = st.load(base);
  __syncthreads();  // everyone has read before smem is reused
  return out;
}

// The row's `nw` warp partials (one row of threads along x; at most 32 warps) combined by its
// first warp with shuffles: three barriers, where the tree over shared memory takes
// log2(nw) + 3. Lane 0 of warp `w` holds warp w's partial; the first warp folds the partials
// above the largest power of two onto those below it, then halves with the butterfly; every
// thread of the row reads the one result from `base`.
template <typename V, typename Op, typename Store>
FS_DEVICE V fsWarpPartials(V val, Op op, const Store& st, unsigned lane, unsigned w, unsigned nw,
                           unsigned base) {
  if (lane == 0) {
    st.store(base + w, val);
  }
  __syncthreads();
  if (w == 0) {
    unsigned np2 = 1;
    while (np2 * 2 <= nw) {
      np2 *= 2;
    }
    V v = st.load(base + (lane < np2 ? lane : 0));
    if (lane + np2 < nw) {
      v = op(v, st.load(base + lane + np2));
    }
    for (unsigned m = np2 / 2; m >= 1; m /= 2) {
      const V other = fsShflXor(v, static_cast<int>(m));
      v = (lane & m) ? op(other, v) : op(v, other);
    }
    if (lane == 0) {
      st.store(base, v);
    }
  }
  __syncthreads();
  const V out = st.load(base);
  __syncthreads();  // everyone has read before smem is reused
  return out;
}

template <bool X, bool Y, bool Z, typename V, typename Op, typename Store>
FS_DEVICE V fsBlockAllReduceImpl(V val, Op op, const Store& st) {
  if (!X && !Y && !Z) {
    return val;
  }
  const unsigned tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  const unsigned bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
  if (X && bx % 32 == 0) {
    // Whole warps lie along x: reduce each warp with shuffles first. Both partners of a
    // butterfly step compute op(lower lane's value, upper lane's value).
    const unsigned lane = tx % 32;
    for (int m = 16; m >= 1; m /= 2) {
      const V other = fsShflXor(val, m);
      val = (lane & static_cast<unsigned>(m)) ? op(other, val) : op(val, other);
    }
    if (bx == 32 && !Y && !Z) {
      return val;
    }
    if (!Y && !Z) {
      return fsWarpPartials(val, op, st, lane, tx / 32, bx / 32, (ty + tz * by) * (bx / 32));
    }
    return fsBlockTree<X, Y, Z>(val, op, st, lane == 0, tx / 32, ty, tz, bx / 32, by, bz);
  }
  if (X && !Y && !Z && by == 1 && bz == 1) {
    // A row of threads that is not whole warps (899 threads along a row of odd width): each
    // warp halves its own lanes into lane 0 (lane i < m takes lane i + m where that lane
    // exists), the last warp over the lanes it has; then the warps' partials as above. On
    // whole warps this is the butterfly's order.
    const unsigned lane = tx % 32, w = tx / 32;
    const unsigned n = bx - w * 32 < 32 ? bx - w * 32 : 32;
    const unsigned mask = n == 32 ? 0xffffffffu : (1u << n) - 1u;
    for (unsigned m = 16; m >= 1; m /= 2) {
      const V other = fsShflDown(val, m, mask);
      if (lane + m < n) {
        val = op(val, other);
      }
    }
    return fsWarpPartials(val, op, st, lane, w, (bx + 31) / 32, 0);
  }
  return fsBlockTree<X, Y, Z>(val, op, st, true, tx, ty, tz, bx, by, bz);
}

template <bool X_REDUCE, bool Y_REDUCE, bool Z_REDUCE, typename T, typename Func>
__device__ T blockAllReduce(T val, Func op, T* smem) {
  FsSmemStore<T> st{smem};
  return fsBlockAllReduceImpl<X_REDUCE, Y_REDUCE, Z_REDUCE>(val, op, st);
}

// ---- Welford -------------------------------------------------------------------------------

template <typename T>
struct FsWelford {
  T avg;
  T m2;
  nvfuser_index_t n;
};

// Chan's combine of two sets of the same count: nb / n is exactly one half, so it needs no
// division and no test for an empty set (two empty sets give (0, 0, 0)); the values are
// fsWelfordCombine's to the bit.
template <typename T>
FS_DEVICE FsWelford<T> fsWelfordCombineEqual(const FsWelford<T>& a, const FsWelford<T>& b) {
  FsWelford<T> out;
  out.n = a.n + b.n;
  const T delta = b.avg - a.avg;
  out.avg = a.avg + delta * static_cast<T>(0.5);
  out.m2 = a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * static_cast<T>(0.5);
  return out;
}

// Chan et al.: the mean and the sum of squared deviations of two disjoint sets. An empty set
// (n == 0) is the identity. Equal counts, as every step of a block's tree has when each thread
// holds as many elements, skip the division (a dozen instructions at every shuffle step).
template <typename T>
FS_DEVICE FsWelford<T> fsWelfordCombine(const FsWelford<T>& a, const FsWelford<T>& b) {
  if (a.n == b.n) {
    return fsWelfordCombineEqual(a, b);
  }
  if (b.n == 0) {
    return a;
  }
  if (a.n == 0) {
    return b;
  }
  FsWelford<T> out;
  out.n = a.n + b.n;
  const T nb_over_n = static_cast<T>(b.n) / static_cast<T>(out.n);
  const T delta = b.avg - a.avg;
  out.avg = a.avg + delta * nb_over_n;
  out.m2 = a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * nb_over_n;
  return out;
}

// In place: (avg, m2, n) <- combine((avg, m2, n), (b_avg, b_m2, b_n)). A serial Welford
// update of one value x is welfordCombine(avg, m2, n, x, 0, 1).
template <typename T>
FS_DEVICE void welfordCombine(T& avg, T& m2, nvfuser_index_t& n, T b_avg, T b_m2,
                              nvfuser_index_t b_n) {
  FsWelford<T> a{avg, m2, n};
  FsWelford<T> b{b_avg, b_m2, b_n};
  const FsWelford<T> c = fsWelfordCombine(a, b);
  avg = c.avg;
  m2 = c.m2;
  n = c.n;
}

template <typename T>
struct FsWelfordOp {
  FS_DEVICE FsWelford<T> operator()(const FsWelford<T>& a, const FsWelford<T>& b) const {
    return fsWelfordCombine(a, b);
  }
};

template <typename T>
struct FsWelfordSmemStore {
  T* avg;
  T* m2;
  nvfuser_index_t* n;
  FS_DEVICE FsWelford<T> load(unsigned i) const {
    FsWelford<T> w;
    w.avg = avg[i];
    w.m2 = m2[i];
    w.n = n[i];
    return w;
  }
  FS_DEVICE void store(unsigned i, const FsWelford<T>& w) const {
    avg[i] = w.avg;
    m2[i] = w.m2;
    n[i] = w.n;
  }
};

// The all-reduce of (avg, m2, n) over the flagged thread dims with combine `Op`.
template <bool X_REDUCE, bool Y_REDUCE, bool Z_REDUCE, typename T, typename Op>
FS_DEVICE void fsBlockWelfordWith(T& avg, T& m2, nvfuser_index_t& n, T* smem_avg, T* smem_m2,
                                  nvfuser_index_t* smem_n, Op op) {
  FsWelfordSmemStore<T> st{smem_avg, smem_m2, smem_n};
  FsWelford<T> w{avg, m2, n};
  w = fsBlockAllReduceImpl<X_REDUCE, Y_REDUCE, Z_REDUCE>(w, op, st);
  avg = w.avg;
  m2 = w.m2;
  n = w.n;
}

template <bool X_REDUCE, bool Y_REDUCE, bool Z_REDUCE, typename T>
__device__ void blockWelford(T& avg, T& m2, nvfuser_index_t& n, T* smem_avg, T* smem_m2,
                             nvfuser_index_t* smem_n) {
  fsBlockWelfordWith<X_REDUCE, Y_REDUCE, Z_REDUCE>(avg, m2, n, smem_avg, smem_m2, smem_n, FsWelfordOp<T>());
}

// blockWelford where every thread holds the same count `n` (the code generator knows: a
// two-pass thread Welford over a fixed number of values, no thread predicated): the block's
// mean is the mean of the threads' means, and its m2 the sum of theirs plus n times the squared
// deviations of their means (Chan's combine, all at once). Two float all-reductions instead of
// one of (avg, m2, n) triples, as nvFuser's translated Welford does.
template <bool X_REDUCE, bool Y_REDUCE, bool Z_REDUCE, typename T>
__device__ void blockWelfordFixedCounts(T& avg, T& m2, nvfuser_index_t& n, T* smem_avg, T* smem_m2,
                                        nvfuser_index_t* smem_n) {
  (void)smem_m2;
  (void)smem_n;
  unsigned r, R, seg;
  fsReduceCoords<X_REDUCE, Y_REDUCE, Z_REDUCE>(threadIdx.x, threadIdx.y, threadIdx.z, blockDim.x,
                                                blockDim.y, blockDim.z, r, R, seg);
  const auto add = [](T a, T b) { return a + b; };
  const T mean = blockAllReduce<X_REDUCE, Y_REDUCE, Z_REDUCE>(avg, add, smem_avg) / static_cast<T>(R);
  const T d = avg - mean;
  m2 = blockAllReduce<X_REDUCE, Y_REDUCE, Z_REDUCE>(m2 + static_cast<T>(n) * d * d, add, smem_avg);
  avg = mean;
  n = n * static_cast<nvfuser_index_t>(R);
}

#endif  // FS_RUNTIME_REDUCE_CUH
