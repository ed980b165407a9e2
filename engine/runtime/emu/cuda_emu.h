// cuda_emu.h: run a generated CUDA kernel on the CPU (fusescope's `emulate` back end).
//
// g++ force-includes this file (-include) before the kernel's complete CUDA source text, so the
// same text that NVRTC/nvcc compile also compiles here. It defines FS_EMULATE (runtime headers
// test it to pick host-compatible code), maps CUDA's qualifiers to g++ attributes, and emulates
// the CUDA execution model:
//   * blocks run one after another in the calling OS thread (blockIdx.x fastest);
//   * each CUDA thread of a block is a fiber with its own stack; a fiber runs until it reaches a
//     barrier (__syncthreads, a warp shuffle/vote/__syncwarp) or exits, then the next ready
//     fiber runs. The last thread to reach a barrier releases the others and keeps running;
//   * __shared__ is `static`: blocks never overlap, so one static copy is block-shared storage;
//   * a barrier that can never complete (some threads wait while the others have exited or wait
//     elsewhere) is reported as an error, never a hang.
// Context switches are a small hand-written x86-64 routine (no signal-mask syscall, unlike glibc's
// swapcontext); other architectures fall back to ucontext.
//
// The exported entry point is generated per kernel by engine/runtime/emulate.py (fs_launch), which
// calls fs_emu::run_grid below.

#ifndef FS_CUDA_EMU_H
#define FS_CUDA_EMU_H

#define FS_EMULATE 1

// The hand-written context switch (x86-64); -DFS_EMU_USE_UCONTEXT or another architecture uses
// glibc's swapcontext, about 10x slower per switch (it changes the signal mask by syscall).
#if defined(__x86_64__) && !defined(FS_EMU_USE_UCONTEXT)
#define FS_EMU_ASM_SWITCH 1
#else
#define FS_EMU_ASM_SWITCH 0
#endif

// Every system header is included before the CUDA keyword macros below are defined: libstdc++
// and glibc spell attributes such as __noinline__ themselves, which the macros would break.
#include <cassert>
#include <cfloat>
#include <climits>
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <math.h>
#include <pthread.h>
#include <new>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>
#if !FS_EMU_ASM_SWITCH
#include <ucontext.h>
#endif

// ---------------------------------------------------------------------------------------------
// CUDA qualifiers and attributes
// ---------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
// `restrict` only licenses optimizations; g++ could use it to keep a value in a register across a
// fiber switch that another fiber wrote through a different pointer, so it is dropped.
#define __restrict__
// Blocks run one at a time in one OS thread, so one static copy per variable is block-shared.
// (`extern __shared__` arrays: use FS_DYNAMIC_SHARED instead.)
#define __shared__ static

#define FS_EMU_MAX_THREADS_PER_BLOCK 1024
// The largest dynamic shared memory a block may ask for (H100's opt-in maximum, 227 KiB).
#define FS_EMU_MAX_DYNAMIC_SMEM (227 * 1024)
#define FS_EMU_API extern "C" __attribute__((visibility("hidden")))

// ---------------------------------------------------------------------------------------------
// Built-in vector types (NVRTC and nvcc predefine them)
// ---------------------------------------------------------------------------------------------
#define FS_EMU_VEC2(T, NAME, AL) \
  struct __attribute__((aligned(AL))) NAME { T x, y; }; \
  static inline NAME make_##NAME(T x, T y) { NAME v; v.x = x; v.y = y; return v; }
#define FS_EMU_VEC3(T, NAME) \
  struct NAME { T x, y, z; }; \
  static inline NAME make_##NAME(T x, T y, T z) { NAME v; v.x = x; v.y = y; v.z = z; return v; }
#define FS_EMU_VEC4(T, NAME, AL) \
  struct __attribute__((aligned(AL))) NAME { T x, y, z, w; }; \
  static inline NAME make_##NAME(T x, T y, T z, T w) { \
    NAME v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
FS_EMU_VEC2(float, float2, 8)
FS_EMU_VEC3(float, float3)
FS_EMU_VEC4(float, float4, 16)
FS_EMU_VEC2(double, double2, 16)
FS_EMU_VEC2(int, int2, 8)
FS_EMU_VEC3(int, int3)
FS_EMU_VEC4(int, int4, 16)
FS_EMU_VEC2(unsigned int, uint2, 8)
FS_EMU_VEC3(unsigned int, uint3)
FS_EMU_VEC4(unsigned int, uint4, 16)
FS_EMU_VEC2(long long, longlong2, 16)
FS_EMU_VEC2(unsigned long long, ulonglong2, 16)
FS_EMU_VEC2(short, short2, 4)
FS_EMU_VEC2(unsigned short, ushort2, 4)
FS_EMU_VEC4(signed char, char4, 4)
FS_EMU_VEC4(unsigned char, uchar4, 4)
#undef FS_EMU_VEC2
#undef FS_EMU_VEC3
#undef FS_EMU_VEC4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---------------------------------------------------------------------------------------------
// The scheduler's state
// ---------------------------------------------------------------------------------------------
namespace fs_emu {

enum FiberState : int { kReady, kRunning, kWaitBlock, kWaitWarp, kDone };

struct Fiber {
  void* sp;       // saved stack pointer while switched out (x86-64 path)
  uint3 tid;      // threadIdx of this fiber
  int lin;        // linear thread id: x + bx * (y + by * z)
  int state;
  int wait_line;  // source line of the barrier it waits at (for deadlock messages)
#if !FS_EMU_ASM_SWITCH
  ucontext_t uc;
#endif
};

struct Warp {
  unsigned exists;    // lanes that exist in this warp (the last warp of a block may be partial)
  unsigned mask;      // participants of the barrier now filling
  int expected;
  int arrived;
  int phase;          // which half of `slots` the current exchange writes (double buffered)
  unsigned long long slots[2][32];
};

struct Stats {
  unsigned long long blocks, threads, barriers, warp_syncs, switches;
};

struct State {
  void (*entry)(void*);
  void* ctx;
  Fiber* fibers;
  int fibers_cap;
  Warp* warps;
  int warps_cap;
  int nthreads;
  int cur;
  int done;
  // Ready queue: a ring of thread indices; each thread is queued at most once.
  int* runq;
  int rq_head, rq_count;
  // __syncthreads
  int block_arrived;
  int block_acc;     // __syncthreads_count/and/or accumulator of the barrier now filling
  int block_result;  // its value, published when the barrier releases
  // Fiber stacks: one mapping, each stack above a PROT_NONE guard page.
  char* stacks;
  size_t stack_size;
  size_t stack_stride;
  int stacks_cap;
  void* sched_sp;
#if !FS_EMU_ASM_SWITCH
  ucontext_t sched_uc;
#endif
  bool failed;
  char msg[1024];
  Stats stats;
};

}  // namespace fs_emu

// Not static: g++ must assume an opaque call (the context switch) may change them.
extern "C" {
__attribute__((visibility("hidden"))) fs_emu::State fs_emu_g;
__attribute__((visibility("hidden"))) uint3 fs_emu_thread_idx;
__attribute__((visibility("hidden"))) uint3 fs_emu_block_idx;
__attribute__((visibility("hidden"))) dim3 fs_emu_block_dim;
__attribute__((visibility("hidden"))) dim3 fs_emu_grid_dim;
alignas(128) __attribute__((visibility("hidden"))) char fs_emu_dynamic_smem[FS_EMU_MAX_DYNAMIC_SMEM];
}

// Read-only views, as on CUDA (assigning to threadIdx.x is a compile error there too).
static const uint3& threadIdx = fs_emu_thread_idx;
static const uint3& blockIdx = fs_emu_block_idx;
static const dim3& blockDim = fs_emu_block_dim;
static const dim3& gridDim = fs_emu_grid_dim;
static constexpr int warpSize = 32;

// `char name[]` of the block's dynamic shared memory. A reference to the array (not a pointer)
// so that both `name` and `&name` mean its address, as with CUDA's `extern __shared__ char name[]`.
#define FS_DYNAMIC_SHARED(name) auto& name = fs_emu_dynamic_smem

// ---------------------------------------------------------------------------------------------
// Context switch
// ---------------------------------------------------------------------------------------------
#if FS_EMU_ASM_SWITCH
// fs_emu_swap(save, load): push the callee-saved registers, store rsp in *save, load rsp = load,
// pop the other context's registers and return into it. Caller-saved registers need no saving:
// every switch is a function call. The SSE control word is never changed by kernels.
FS_EMU_API void fs_emu_swap(void** save, void* load);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl fs_emu_swap\n"
    ".hidden fs_emu_swap\n"
    ".type fs_emu_swap,@function\n"
    "fs_emu_swap:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size fs_emu_swap, .-fs_emu_swap\n");
#endif

FS_EMU_API __attribute__((noreturn)) void fs_emu_fiber_main();

namespace fs_emu {

static inline State& g() { return fs_emu_g; }
static inline Fiber& cur_fiber() { return fs_emu_g.fibers[fs_emu_g.cur]; }

static inline void rq_push(int t) {
  State& s = g();
  int i = s.rq_head + s.rq_count;
  if (i >= s.nthreads) i -= s.nthreads;
  s.runq[i] = t;
  ++s.rq_count;
}

static inline int rq_pop() {
  State& s = g();
  if (s.rq_count == 0) return -1;
  int t = s.runq[s.rq_head];
  if (++s.rq_head == s.nthreads) s.rq_head = 0;
  --s.rq_count;
  return t;
}

// Prepare fiber t to start fs_emu_fiber_main on a fresh stack.
static inline void fiber_init(int t) {
  State& s = g();
  Fiber& f = s.fibers[t];
  char* lo = s.stacks + (size_t)t * s.stack_stride + (s.stack_stride - s.stack_size);
  // Stagger stack tops so that hundreds of fibers touching the tops of 64 KiB-aligned stacks do
  // not all land in the same L1 sets.
  char* top = lo + s.stack_size - (size_t)(t % 32) * 128;
  top = (char*)((uintptr_t)top & ~(uintptr_t)15);
#if FS_EMU_ASM_SWITCH
  // [rbp rbx r12 r13 r14 r15 (popped in reverse)] then the return address fs_emu_fiber_main and
  // a null fake return address of its own: at its entry rsp % 16 == 8, as after a call.
  void** sp = (void**)(top - 64);
  for (int i = 0; i < 6; ++i) sp[i] = nullptr;
  sp[6] = (void*)&fs_emu_fiber_main;
  sp[7] = nullptr;
  f.sp = sp;
#else
  getcontext(&f.uc);
  f.uc.uc_stack.ss_sp = lo;
  f.uc.uc_stack.ss_size = (size_t)(top - lo);
  f.uc.uc_link = nullptr;
  makecontext(&f.uc, (void (*)())fs_emu_fiber_main, 0);
#endif
}

// Run thread t (set threadIdx first), saving the current context into `save`.
#if FS_EMU_ASM_SWITCH
static inline void switch_to(void** save, int t) {
  State& s = g();
  s.cur = t;
  s.fibers[t].state = kRunning;
  fs_emu_thread_idx = s.fibers[t].tid;
  ++s.stats.switches;
  fs_emu_swap(save, s.fibers[t].sp);
}
#else
static inline void switch_to(ucontext_t* save, int t) {
  State& s = g();
  s.cur = t;
  s.fibers[t].state = kRunning;
  fs_emu_thread_idx = s.fibers[t].tid;
  ++s.stats.switches;
  swapcontext(save, &s.fibers[t].uc);
}
#endif

// The current fiber stops (it waits at a barrier or has failed): run the next ready fiber, or
// return to the scheduler when none is ready (the block is finished or deadlocked).
static inline void yield_current() {
  State& s = g();
  Fiber& f = cur_fiber();
  int next = s.failed ? -1 : rq_pop();
#if FS_EMU_ASM_SWITCH
  if (next >= 0)
    switch_to(&f.sp, next);
  else
    fs_emu_swap(&f.sp, s.sched_sp);
#else
  if (next >= 0)
    switch_to(&f.uc, next);
  else
    swapcontext(&f.uc, &s.sched_uc);
#endif
}

// Record an error for the current thread and abandon the launch (the fiber never resumes).
[[noreturn]] static void fail_now(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] static void fail_now(const char* fmt, ...) {
  State& s = g();
  if (!s.failed) {
    s.failed = true;
    Fiber& f = cur_fiber();
    int n = snprintf(s.msg, sizeof(s.msg), "block (%u,%u,%u) thread (%u,%u,%u): ", fs_emu_block_idx.x,
                     fs_emu_block_idx.y, fs_emu_block_idx.z, f.tid.x, f.tid.y, f.tid.z);
    if (n < 0 || n >= (int)sizeof(s.msg)) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s.msg + n, sizeof(s.msg) - (size_t)n, fmt, ap);
    va_end(ap);
  }
  yield_current();
  __builtin_trap();  // unreachable: a failed launch never resumes its fibers
}

static inline void block_barrier(int line) {
  State& s = g();
  if (++s.block_arrived == s.nthreads) {
    s.block_arrived = 0;
    s.block_result = s.block_acc;
    s.block_acc = 0;
    ++s.stats.barriers;
    for (int t = 0; t < s.nthreads; ++t) {
      if (s.fibers[t].state == kWaitBlock) {
        s.fibers[t].state = kReady;
        rq_push(t);
      }
    }
    return;
  }
  Fiber& f = cur_fiber();
  f.state = kWaitBlock;
  f.wait_line = line;
  yield_current();
}

static inline int lane_id() { return cur_fiber().lin & 31; }

// cp.async: a copy waits in a queue until its thread's cp.async.wait_group lets its group
// land, so a kernel that reads a stage before waiting for it reads stale data here too.
struct CpAsync {
  void* dst;
  const void* src;
  int bytes;
  int lin;          // the issuing thread
  long long group;  // its commit group (-1: not committed yet)
};
static std::vector<CpAsync> cp_queue;
static long long cp_groups[1024];  // groups each thread of the block has committed

static inline void cp_async_reset() {
  cp_queue.clear();
  memset(cp_groups, 0, sizeof(cp_groups));
}

static inline void cp_async(void* dst, const void* src, int bytes) {
  cp_queue.push_back(CpAsync{dst, src, bytes, cur_fiber().lin, -1});
}

static inline void cp_async_commit() {
  const int lin = cur_fiber().lin;
  const long long g = ++cp_groups[lin];
  for (CpAsync& c : cp_queue) {
    if (c.lin == lin && c.group < 0) {
      c.group = g;
    }
  }
}

// Lands, in issue order, this thread's copies of every group but the newest `pending`.
static inline void cp_async_wait(int pending) {
  const int lin = cur_fiber().lin;
  const long long done = cp_groups[lin] - pending;
  size_t kept = 0;
  for (size_t i = 0; i < cp_queue.size(); ++i) {
    const CpAsync c = cp_queue[i];
    if (c.lin == lin && c.group >= 0 && c.group <= done) {
      memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
    } else {
      cp_queue[kept++] = c;
    }
  }
  cp_queue.resize(kept);
}

// Warp barrier among the lanes of `mask` (restricted to lanes that exist). All participants of
// one barrier must pass the same mask. Returns the slot phase that this exchange used.
static inline int warp_barrier(unsigned mask, int line, const char* what) {
  State& s = g();
  Fiber& f = cur_fiber();
  Warp& w = s.warps[f.lin >> 5];
  const int lane = f.lin & 31;
  const unsigned part = mask & w.exists;
  if (!((part >> lane) & 1u))
    fail_now("%s (line %d) with mask 0x%08x that excludes the calling lane %d", what, line, mask, lane);
  const int phase = w.phase;
  if (w.arrived == 0) {
    w.mask = part;
    w.expected = __builtin_popcount(part);
  } else if (w.mask != part) {
    fail_now("%s (line %d): mask 0x%08x differs from 0x%08x of lanes already waiting in the warp", what,
             line, part, w.mask);
  }
  if (++w.arrived == w.expected) {
    w.arrived = 0;
    w.phase ^= 1;
    ++s.stats.warp_syncs;
    const int base = f.lin & ~31;
    for (unsigned m = part & ~(1u << lane); m; m &= m - 1) {
      int t = base + __builtin_ctz(m);
      if (s.fibers[t].state == kWaitWarp) {
        s.fibers[t].state = kReady;
        rq_push(t);
      }
    }
    return phase;
  }
  f.state = kWaitWarp;
  f.wait_line = line;
  yield_current();
  return phase;
}

// Exchange one value per lane: write ours, wait for the warp, read lane `src` (our own value when
// `src` names no participating lane, which CUDA leaves undefined).
template <class T>
static inline T warp_exchange(unsigned mask, T var, int src, int line, const char* what) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp shuffles move values of at most 8 bytes");
  State& s = g();
  Fiber& f = cur_fiber();
  Warp& w = s.warps[f.lin >> 5];
  const int lane = f.lin & 31;
  std::memcpy(&w.slots[w.phase][lane], &var, sizeof(T));
  const int phase = warp_barrier(mask, line, what);
  if (src < 0 || src > 31 || !(((mask & w.exists) >> src) & 1u)) return var;
  T out;
  std::memcpy(&out, &s.warps[f.lin >> 5].slots[phase][src], sizeof(T));
  return out;
}

static inline unsigned warp_ballot(unsigned mask, bool pred, int line, const char* what) {
  State& s = g();
  Fiber& f = cur_fiber();
  Warp& w = s.warps[f.lin >> 5];
  w.slots[w.phase][f.lin & 31] = pred ? 1u : 0u;
  const int phase = warp_barrier(mask, line, what);
  unsigned part = mask & w.exists, out = 0;
  for (unsigned m = part; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    if (w.slots[phase][l]) out |= 1u << l;
  }
  return out;
}

}  // namespace fs_emu

FS_EMU_API __attribute__((noreturn)) void fs_emu_fiber_main() {
  fs_emu::State& s = fs_emu_g;
  try {
    s.entry(s.ctx);
  } catch (const std::exception& e) {
    fs_emu::fail_now("C++ exception: %s", e.what());
  } catch (...) {
    fs_emu::fail_now("C++ exception");
  }
  fs_emu::Fiber& f = fs_emu::cur_fiber();
  f.state = fs_emu::kDone;
  ++s.done;
  fs_emu::yield_current();  // this fiber is never resumed: fiber_init resets it for the next block
  __builtin_trap();
}

// ---------------------------------------------------------------------------------------------
// Barriers, shuffles, votes
// ---------------------------------------------------------------------------------------------
static inline void __syncthreads(int line = __builtin_LINE()) { fs_emu::block_barrier(line); }
static inline int __syncthreads_count(int pred, int line = __builtin_LINE()) {
  fs_emu_g.block_acc += pred != 0;
  fs_emu::block_barrier(line);
  return fs_emu_g.block_result;
}
static inline int __syncthreads_and(int pred, int line = __builtin_LINE()) {
  return __syncthreads_count(pred, line) == fs_emu_g.nthreads;
}
static inline int __syncthreads_or(int pred, int line = __builtin_LINE()) {
  return __syncthreads_count(pred, line) != 0;
}
static inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
  fs_emu::warp_barrier(mask, line, "__syncwarp");
}
static inline unsigned __activemask() {
  fs_emu::State& s = fs_emu_g;
  int base = fs_emu::cur_fiber().lin & ~31;
  unsigned m = 0;
  for (int l = 0; l < 32 && base + l < s.nthreads; ++l)
    if (s.fibers[base + l].state != fs_emu::kDone) m |= 1u << l;
  return m;
}

template <class T>
static inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
                            int line = __builtin_LINE()) {
  int lane = fs_emu::lane_id();
  int src = (lane & ~(width - 1)) + (srcLane & (width - 1));
  return fs_emu::warp_exchange(mask, var, src, line, "__shfl_sync");
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                               int line = __builtin_LINE()) {
  int lane = fs_emu::lane_id();
  int src = lane - (int)delta;
  if (src < (lane & ~(width - 1))) src = lane;
  return fs_emu::warp_exchange(mask, var, src, line, "__shfl_up_sync");
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                                 int line = __builtin_LINE()) {
  int lane = fs_emu::lane_id();
  int src = lane + (int)delta;
  if (src >= (lane & ~(width - 1)) + width) src = lane;
  return fs_emu::warp_exchange(mask, var, src, line, "__shfl_down_sync");
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                                int line = __builtin_LINE()) {
  int lane = fs_emu::lane_id();
  int src = lane ^ laneMask;
  if (src >= (lane & ~(width - 1)) + width) src = lane;
  return fs_emu::warp_exchange(mask, var, src, line, "__shfl_xor_sync");
}
static inline unsigned __ballot_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return fs_emu::warp_ballot(mask, pred != 0, line, "__ballot_sync");
}
static inline int __any_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  return fs_emu::warp_ballot(mask, pred != 0, line, "__any_sync") != 0;
}
static inline int __all_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
  unsigned part = mask & fs_emu_g.warps[fs_emu::cur_fiber().lin >> 5].exists;
  return fs_emu::warp_ballot(mask, pred != 0, line, "__all_sync") == part;
}
// sm_80 warp reductions over 32-bit integers.
#define FS_EMU_WARP_REDUCE(NAME, T, OP)                                             \
  static inline T NAME(unsigned mask, T value, int line = __builtin_LINE()) {       \
    fs_emu::State& s = fs_emu_g;                                                    \
    fs_emu::Fiber& f = fs_emu::cur_fiber();                                         \
    fs_emu::Warp& w = s.warps[f.lin >> 5];                                          \
    w.slots[w.phase][f.lin & 31] = (unsigned long long)(long long)value;            \
    int phase = fs_emu::warp_barrier(mask, line, #NAME);                            \
    unsigned m = mask & w.exists;                                                   \
    T acc = (T)(long long)w.slots[phase][__builtin_ctz(m)];                         \
    for (m &= m - 1; m; m &= m - 1) {                                               \
      T v = (T)(long long)w.slots[phase][__builtin_ctz(m)];                         \
      acc = OP;                                                                     \
    }                                                                               \
    return acc;                                                                     \
  }
FS_EMU_WARP_REDUCE(__reduce_add_sync, int, acc + v)
FS_EMU_WARP_REDUCE(__reduce_add_sync, unsigned, acc + v)
FS_EMU_WARP_REDUCE(__reduce_min_sync, int, (v < acc ? v : acc))
FS_EMU_WARP_REDUCE(__reduce_min_sync, unsigned, (v < acc ? v : acc))
FS_EMU_WARP_REDUCE(__reduce_max_sync, int, (v > acc ? v : acc))
FS_EMU_WARP_REDUCE(__reduce_max_sync, unsigned, (v > acc ? v : acc))
FS_EMU_WARP_REDUCE(__reduce_and_sync, unsigned, acc & v)
FS_EMU_WARP_REDUCE(__reduce_or_sync, unsigned, acc | v)
FS_EMU_WARP_REDUCE(__reduce_xor_sync, unsigned, acc ^ v)
#undef FS_EMU_WARP_REDUCE

// Fibers switch only at barriers, so memory is already coherent; these only stop g++ from
// moving loads and stores across the fence.
static inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

[[noreturn]] static inline void __trap() { fs_emu::fail_now("__trap()"); }
[[noreturn]] static inline void __brkpt() { fs_emu::fail_now("__brkpt()"); }
static inline void __nanosleep(unsigned) {}
static inline long long clock64() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// A failed device assert ends the launch with an error (ExecutionError) instead of abort().
// glibc's assert calls __assert_fail; this library's own hidden definition wins over libc's, and
// unlike a redefined `assert` macro it survives the kernel text re-including <assert.h>.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) noexcept {
  (void)file;
  fs_emu::fail_now("assertion `%s` failed (line %u, in %s)", assertion, line, function);
}

// ---------------------------------------------------------------------------------------------
// Atomics: fibers never switch inside one, so a plain read-modify-write is atomic.
// ---------------------------------------------------------------------------------------------
template <class T, class U>
static inline T atomicAdd(T* address, U val) {
  T old = *address;
  *address = old + val;
  return old;
}
template <class T, class U>
static inline T atomicSub(T* address, U val) {
  T old = *address;
  *address = old - val;
  return old;
}
template <class T, class U>
static inline T atomicExch(T* address, U val) {
  T old = *address;
  *address = (T)val;
  return old;
}
template <class T, class U, class V>
static inline T atomicCAS(T* address, U compare, V val) {
  T old = *address;
  if (old == (T)compare) *address = (T)val;
  return old;
}
template <class T, class U>
static inline T atomicMax(T* address, U val) {
  T old = *address;
  if ((T)val > old) *address = (T)val;
  return old;
}
template <class T, class U>
static inline T atomicMin(T* address, U val) {
  T old = *address;
  if ((T)val < old) *address = (T)val;
  return old;
}
template <class T, class U>
static inline T atomicAnd(T* address, U val) {
  T old = *address;
  *address = old & (T)val;
  return old;
}
template <class T, class U>
static inline T atomicOr(T* address, U val) {
  T old = *address;
  *address = old | (T)val;
  return old;
}
template <class T, class U>
static inline T atomicXor(T* address, U val) {
  T old = *address;
  *address = old ^ (T)val;
  return old;
}
static inline unsigned atomicInc(unsigned* address, unsigned val) {
  unsigned old = *address;
  *address = old >= val ? 0u : old + 1u;
  return old;
}
static inline unsigned atomicDec(unsigned* address, unsigned val) {
  unsigned old = *address;
  *address = (old == 0u || old > val) ? val : old - 1u;
  return old;
}
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicExch_block atomicExch
#define atomicCAS_block atomicCAS
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin

// Cache-hinted loads and stores.
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }

// ---------------------------------------------------------------------------------------------
// Integer and bit intrinsics
// ---------------------------------------------------------------------------------------------
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)((v << (shift & 31)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(v >> (shift & 31));
}
static inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
static inline unsigned __umulhi(unsigned x, unsigned y) {
  return (unsigned)(((unsigned long long)x * y) >> 32);
}
static inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
static inline int __mul24(int x, int y) { return (int)((long long)((x << 8) >> 8) * ((y << 8) >> 8)); }

template <class To, class From>
static inline To fs_emu_bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between types of different sizes");
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}
static inline int __float_as_int(float x) { return fs_emu_bit_cast<int>(x); }
static inline float __int_as_float(int x) { return fs_emu_bit_cast<float>(x); }
static inline unsigned __float_as_uint(float x) { return fs_emu_bit_cast<unsigned>(x); }
static inline float __uint_as_float(unsigned x) { return fs_emu_bit_cast<float>(x); }
static inline long long __double_as_longlong(double x) { return fs_emu_bit_cast<long long>(x); }
static inline double __longlong_as_double(long long x) { return fs_emu_bit_cast<double>(x); }
static inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

// ---------------------------------------------------------------------------------------------
// min/max overloads that CUDA's math API declares in the global namespace
// ---------------------------------------------------------------------------------------------
#define FS_EMU_MINMAX(R, A, B)                                          \
  static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }  \
  static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
FS_EMU_MINMAX(int, int, int)
FS_EMU_MINMAX(unsigned int, unsigned int, unsigned int)
FS_EMU_MINMAX(unsigned int, int, unsigned int)
FS_EMU_MINMAX(unsigned int, unsigned int, int)
FS_EMU_MINMAX(long, long, long)
FS_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
FS_EMU_MINMAX(unsigned long, long, unsigned long)
FS_EMU_MINMAX(unsigned long, unsigned long, long)
FS_EMU_MINMAX(long long, long long, long long)
FS_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
FS_EMU_MINMAX(unsigned long long, long long, unsigned long long)
FS_EMU_MINMAX(unsigned long long, unsigned long long, long long)
#undef FS_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin(a, b); }
static inline double max(float a, double b) { return fmax(a, b); }
static inline double min(double a, float b) { return fmin(a, b); }
static inline double max(double a, float b) { return fmax(a, b); }
static inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long llmin(long long a, long long b) { return a < b ? a : b; }
static inline long long llmax(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Device math that glibc lacks; intrinsics map to the accurate functions. glibc declares (but
// does not export) some of the __ names, e.g. __expf, so those are `inline`, not `static`.
// ---------------------------------------------------------------------------------------------
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }

// erfinv: Giles' single-precision approximation as a start, then Newton steps on erf in double.
static inline double erfinv(double y) {
  if (!(y > -1.0 && y < 1.0)) {
    if (y == 1.0) return HUGE_VAL;
    if (y == -1.0) return -HUGE_VAL;
    return NAN;
  }
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w;
    x = -3.5233877e-06 + x * w;
    x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w;
    x = -0.00125372503 + x * w;
    x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w;
    x = 0.00134934322 + x * w;
    x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w;
    x = -0.0076224613 + x * w;
    x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int i = 0; i < 3; ++i) {
    double err = erf(x) - y;
    x -= err / (1.1283791670955126 * exp(-x * x));  // d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
  }
  return x;
}
static inline float erfinvf(float y) { return (float)erfinv((double)y); }
// erfcinv: erfinv(1 - y) loses a tiny y's digits, so that is only the start (or sqrt(-log y)
// in the tail), refined by Newton steps on log(erfc(x)), which is nearly quadratic in x.
static inline double erfcinv(double y) {
  if (!(y > 0.0 && y < 2.0)) {
    if (y == 0.0) return HUGE_VAL;
    if (y == 2.0) return -HUGE_VAL;
    return NAN;
  }
  if (y > 1.0) return -erfcinv(2.0 - y);  // erfc(-x) = 2 - erfc(x); 2 - y is exact here
  double x = y > 0.0625 ? erfinv(1.0 - y) : sqrt(-log(y));
  const double log_y = log(y);
  for (int i = 0; i < 12; ++i) {
    const double e = erfc(x);
    if (!(e > 0.0)) break;
    const double step = (log(e) - log_y) / (-1.1283791670955126 * exp(-x * x) / e);
    x -= step;
    if (fabs(step) <= 1e-17 * fabs(x)) break;
  }
  return x;
}
static inline float erfcinvf(float y) { return (float)erfcinv((double)y); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
static inline float normcdff(float x) { return (float)normcdf((double)x); }
static inline double normcdfinv(double p) { return -1.41421356237309504880 * erfcinv(2.0 * p); }
static inline float normcdfinvf(float p) { return (float)normcdfinv((double)p); }

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double x) { return 1.0 / x; }
static inline double __dsqrt_rn(double x) { return sqrt(x); }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

// Conversions with an explicit rounding mode (default FP environment: round to nearest even).
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline float __ull2float_rn(unsigned long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline long long __float2ll_rz(float x) { return (long long)x; }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __double2int_rz(double x) { return (int)x; }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline long long __double2ll_rz(double x) { return (long long)x; }

// ---------------------------------------------------------------------------------------------
// The grid runner (called by the generated fs_launch)
// ---------------------------------------------------------------------------------------------
namespace fs_emu {

// Static __shared__ storage makes a library single-launch. (pthread, not std::mutex: <mutex>
// doubles the header's compile time.)
static pthread_mutex_t launch_mutex = PTHREAD_MUTEX_INITIALIZER;
struct LaunchLock {
  LaunchLock() { pthread_mutex_lock(&launch_mutex); }
  ~LaunchLock() { pthread_mutex_unlock(&launch_mutex); }
};

static size_t stack_bytes_wanted() {
  // FUSESCOPE_EMU_STACK_KIB: per-thread stack for kernels with large local arrays.
  size_t kib = 64;
  if (const char* e = getenv("FUSESCOPE_EMU_STACK_KIB")) {
    long v = strtol(e, nullptr, 10);
    if (v >= 16 && v <= 1 << 20) kib = (size_t)v;
  }
  return kib * 1024;
}

static bool ensure_capacity(int nthreads, char* err, int errlen) {
  State& s = g();
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t want = (stack_bytes_wanted() + page - 1) / page * page;
  if (s.stacks && (s.stacks_cap < nthreads || s.stack_size != want)) {
    munmap(s.stacks, s.stack_stride * (size_t)s.stacks_cap);
    s.stacks = nullptr;
  }
  if (!s.stacks) {
    int cap = nthreads < 32 ? 32 : nthreads;
    size_t stride = want + page;  // a guard page below each stack turns an overflow into SIGSEGV
    void* m = mmap(nullptr, stride * (size_t)cap, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      snprintf(err, (size_t)errlen, "cannot map %d fiber stacks of %zu bytes", cap, want);
      return false;
    }
    for (int i = 0; i < cap; ++i) mprotect((char*)m + stride * (size_t)i, page, PROT_NONE);
    s.stacks = (char*)m;
    s.stack_size = want;
    s.stack_stride = stride;
    s.stacks_cap = cap;
  }
  if (s.fibers_cap < nthreads) {
    delete[] s.fibers;
    delete[] s.runq;
    s.fibers = new Fiber[nthreads];
    s.runq = new int[nthreads];
    s.fibers_cap = nthreads;
  }
  int nwarps = (nthreads + 31) / 32;
  if (s.warps_cap < nwarps) {
    delete[] s.warps;
    s.warps = new Warp[nwarps];
    s.warps_cap = nwarps;
  }
  return true;
}

// Give the fiber stacks back after a launch: every stack has a guard page, so each kernel's
// library would otherwise hold two mappings per thread for the life of the process, and a
// process that emulates a few hundred kernels runs into the kernel's limit on mappings.
static void release_stacks() {
  State& s = g();
  if (!s.stacks) return;
  munmap(s.stacks, s.stack_stride * (size_t)s.stacks_cap);
  s.stacks = nullptr;
  s.stacks_cap = 0;
}

// Explain why a block could not finish: who waits where, who has exited.
static void describe_deadlock() {
  State& s = g();
  int n_block = 0, n_warp = 0, n_done = 0, first_done = -1, first_block = -1, first_warp = -1;
  for (int t = 0; t < s.nthreads; ++t) {
    const Fiber& f = s.fibers[t];
    if (f.state == kWaitBlock) {
      if (n_block++ == 0) first_block = t;
    } else if (f.state == kWaitWarp) {
      if (n_warp++ == 0) first_warp = t;
    } else if (f.state == kDone) {
      if (n_done++ == 0) first_done = t;
    }
  }
  int n = snprintf(s.msg, sizeof(s.msg), "deadlock in block (%u,%u,%u) of %d threads:", fs_emu_block_idx.x,
                   fs_emu_block_idx.y, fs_emu_block_idx.z, s.nthreads);
  auto add = [&](const char* fmt, auto... a) {
    if (n >= 0 && n < (int)sizeof(s.msg)) n += snprintf(s.msg + n, sizeof(s.msg) - (size_t)n, fmt, a...);
  };
  if (n_block) {
    const Fiber& f = s.fibers[first_block];
    add(" %d wait at __syncthreads (first: thread (%u,%u,%u) at line %d);", n_block, f.tid.x, f.tid.y,
        f.tid.z, f.wait_line);
  }
  if (n_warp) {
    const Fiber& f = s.fibers[first_warp];
    add(" %d wait at a warp barrier (shuffle/vote/__syncwarp; first: thread (%u,%u,%u) at line %d);",
        n_warp, f.tid.x, f.tid.y, f.tid.z, f.wait_line);
  }
  if (n_done) {
    const Fiber& f = s.fibers[first_done];
    add(" %d have exited (first: thread (%u,%u,%u))", n_done, f.tid.x, f.tid.y, f.tid.z);
  }
  add("%s", "; a barrier must be reached by every thread of the block (or warp)");
}

static bool run_block() {
  State& s = g();
  cp_async_reset();
  s.rq_head = 0;
  s.rq_count = 0;
  s.done = 0;
  s.block_arrived = 0;
  s.block_acc = 0;
  s.block_result = 0;
  const unsigned bx = fs_emu_block_dim.x, by = fs_emu_block_dim.y;
  for (int t = 0; t < s.nthreads; ++t) {
    Fiber& f = s.fibers[t];
    f.lin = t;
    f.tid = uint3{(unsigned)t % bx, ((unsigned)t / bx) % by, (unsigned)t / (bx * by)};
    f.state = kReady;
    f.wait_line = 0;
    fiber_init(t);
    rq_push(t);
  }
  for (int w = 0; w * 32 < s.nthreads; ++w) {
    Warp& wp = s.warps[w];
    int lanes = s.nthreads - w * 32;
    wp.exists = lanes >= 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    wp.mask = 0;
    wp.expected = 0;
    wp.arrived = 0;
    wp.phase = 0;
  }
  // Each switch_to returns here only when no fiber is ready: all done, deadlocked, or failed.
  for (int t = rq_pop(); t >= 0 && !s.failed; t = rq_pop()) {
#if FS_EMU_ASM_SWITCH
    switch_to(&s.sched_sp, t);
#else
    switch_to(&s.sched_uc, t);
#endif
  }
  if (s.failed) return false;
  if (s.done != s.nthreads) {
    describe_deadlock();
    s.failed = true;
    return false;
  }
  ++s.stats.blocks;
  s.stats.threads += (unsigned long long)s.nthreads;
  return true;
}

// A memory fault, an integer division by zero, an illegal instruction (__builtin_trap), abort()
// or a run past the time limit in a kernel becomes an error of the launch, not the death of the
// process (e.g. the pytest run that emulates generated kernels). While a launch runs, handlers on
// an alternate stack (a fiber's stack may be the one that overflowed) jump back to the launching
// frame; the previous handlers are restored afterwards. Faults on other OS threads go to the
// previous handlers. What still ends the process: exit(), a signal that cannot be caught
// (SIGKILL), and a stray write that lands in valid memory (no fault to catch); fusescope runs
// kernels in a worker process for those.
static sigjmp_buf fault_jmp;
static pthread_t fault_thread;
static volatile sig_atomic_t fault_armed;  // 1 while run_blocks may be jumped back to
static volatile sig_atomic_t fault_sig;
static void* volatile fault_addr;
constexpr int kFaultSignals = 6;
// SIGXCPU: the launch's CPU-time watchdog (a POSIX timer aimed at the launching thread).
static const int fault_signals[kFaultSignals] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGXCPU};
static struct sigaction fault_old[kFaultSignals];
alignas(16) static char fault_altstack[64 * 1024];
static double time_limit_s = 0;  // CPU seconds per launch; 0: no limit

static void fault_handler(int sig, siginfo_t* si, void* uctx) {
  const bool ours = sig != SIGXCPU || (si && si->si_code == SI_TIMER);
  if (ours && fault_armed && pthread_equal(pthread_self(), fault_thread)) {
    fault_armed = 0;
    fault_sig = sig;
    fault_addr = si ? si->si_addr : nullptr;
    siglongjmp(fault_jmp, 1);
  }
  if (sig == SIGXCPU && si && si->si_code == SI_TIMER) return;  // a watchdog that fired too late
  for (int i = 0; i < kFaultSignals; ++i) {
    if (fault_signals[i] != sig) continue;
    const struct sigaction& old = fault_old[i];
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
      old.sa_sigaction(sig, si, uctx);
    } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
      old.sa_handler(sig);
    } else {
      signal(sig, SIG_DFL);  // returning re-executes the faulting instruction: default action
      if (sig == SIGABRT || sig == SIGXCPU) raise(sig);  // sent, not a faulting instruction
    }
  }
}

static void describe_fault() {
  State& s = g();
  char what[200];
  const uintptr_t a = (uintptr_t)fault_addr;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int guard_of = -1;
  for (int i = 0; s.stacks && i < s.stacks_cap; ++i) {
    uintptr_t lo = (uintptr_t)(s.stacks + s.stack_stride * (size_t)i);
    if (a >= lo && a < lo + page) guard_of = i;
  }
  if (fault_sig == SIGXCPU)
    snprintf(what, sizeof(what), "time limit: still running after %g s of CPU time (an endless loop?); "
             "set FUSESCOPE_EMU_TIMEOUT_S to allow more", time_limit_s);
  else if (guard_of >= 0)
    snprintf(what, sizeof(what), "stack overflow (each thread has %zu KiB; set FUSESCOPE_EMU_STACK_KIB)",
             s.stack_size / 1024);
  else if (fault_sig == SIGFPE)
    snprintf(what, sizeof(what), "SIGFPE (integer division by zero or overflow)");
  else if (fault_sig == SIGILL)
    snprintf(what, sizeof(what), "SIGILL: illegal instruction (__builtin_trap() or a corrupt jump) at %p",
             fault_addr);
  else if (fault_sig == SIGABRT)
    snprintf(what, sizeof(what), "SIGABRT: abort() was called (or std::terminate)");
  else
    snprintf(what, sizeof(what), "%s: invalid memory access at address %p",
             fault_sig == SIGBUS ? "SIGBUS" : "SIGSEGV", fault_addr);
  const Fiber& f = cur_fiber();
  snprintf(s.msg, sizeof(s.msg), "block (%u,%u,%u) thread (%u,%u,%u): %s", fs_emu_block_idx.x,
           fs_emu_block_idx.y, fs_emu_block_idx.z, f.tid.x, f.tid.y, f.tid.z, what);
}

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

// The launch's CPU-time limit: a one-shot timer on this thread's CPU clock that sends SIGXCPU to
// this thread alone. CPU time, not wall time, so that a busy machine does not trip it.
struct Watchdog {
  timer_t timer;
  bool armed;
  Watchdog() : armed(false) {
    if (time_limit_s <= 0) return;
    struct sigevent ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGXCPU;
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &timer) != 0) return;
    struct itimerspec its;
    std::memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)time_limit_s;
    its.it_value.tv_nsec = (long)((time_limit_s - (double)its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    armed = timer_settime(timer, 0, &its, nullptr) == 0;
    if (!armed) timer_delete(timer);
  }
  ~Watchdog() {
    if (armed) timer_delete(timer);
  }
};

struct FaultGuard {
  stack_t old_ss;
  bool ok;
  FaultGuard() : ok(false) {
    stack_t ss;
    ss.ss_sp = fault_altstack;
    ss.ss_size = sizeof(fault_altstack);
    ss.ss_flags = 0;
    if (sigaltstack(&ss, &old_ss) != 0) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    fault_thread = pthread_self();
    for (int i = 0; i < kFaultSignals; ++i) sigaction(fault_signals[i], &sa, &fault_old[i]);
    ok = true;
  }
  ~FaultGuard() {
    if (!ok) return;
    fault_armed = 0;
    for (int i = 0; i < kFaultSignals; ++i) sigaction(fault_signals[i], &fault_old[i], nullptr);
    sigaltstack(&old_ss, nullptr);
  }
};

// All blocks of the grid, x fastest. sigsetjmp's frame outlives every fiber, so a fault's
// siglongjmp lands here with the fibers simply abandoned (they are reset for the next block).
static bool run_blocks(dim3 grid) {
  State& s = g();
  if (sigsetjmp(fault_jmp, 1) != 0) {
    describe_fault();
    s.failed = true;
    return false;
  }
  fault_armed = 1;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        fs_emu_block_idx = uint3{x, y, z};
        if (!run_block()) {
          fault_armed = 0;
          return false;
        }
      }
  fault_armed = 0;
  return true;
}

// Run the grid; 0 on success, else 1 with a message in err.
static int run_grid(void (*entry)(void*), void* ctx, dim3 grid, dim3 block, int smem_bytes, char* err,
                    int errlen) {
  LaunchLock lock;
  State& s = g();
  if (errlen > 0) err[0] = '\0';
  s.stats = Stats{0, 0, 0, 0, 0};
  const unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
  if (nthreads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0) {
    snprintf(err, (size_t)errlen, "invalid launch: grid (%u,%u,%u), block (%u,%u,%u)", grid.x, grid.y,
             grid.z, block.x, block.y, block.z);
    return 1;
  }
  if (nthreads > FS_EMU_MAX_THREADS_PER_BLOCK || block.z > 64) {
    snprintf(err, (size_t)errlen, "invalid launch: block (%u,%u,%u) exceeds 1024 threads (z <= 64)",
             block.x, block.y, block.z);
    return 1;
  }
  if (grid.y > 65535 || grid.z > 65535) {
    snprintf(err, (size_t)errlen, "invalid launch: grid (%u,%u,%u) exceeds 65535 in y or z", grid.x,
             grid.y, grid.z);
    return 1;
  }
  if (smem_bytes < 0 || smem_bytes > FS_EMU_MAX_DYNAMIC_SMEM) {
    snprintf(err, (size_t)errlen, "invalid launch: %d bytes of dynamic shared memory (at most %d)",
             smem_bytes, FS_EMU_MAX_DYNAMIC_SMEM);
    return 1;
  }
  if (!ensure_capacity((int)nthreads, err, errlen)) return 1;
  // Uninitialized shared memory reads as NaN (0xff bytes) rather than as plausible zeros.
  std::memset(fs_emu_dynamic_smem, 0xff, (size_t)smem_bytes);
  s.entry = entry;
  s.ctx = ctx;
  s.nthreads = (int)nthreads;
  s.failed = false;
  s.msg[0] = '\0';
  fs_emu_block_dim = block;
  fs_emu_grid_dim = grid;
  FaultGuard guard;  // when it cannot be armed, a fault kills the process as it would without it
  Watchdog watchdog;  // declared after the guard: disarmed before the handlers are restored
  const bool ok = run_blocks(grid);
  release_stacks();
  if (!ok) snprintf(err, (size_t)errlen, "%s", s.msg);
  return ok ? 0 : 1;
}

}  // namespace fs_emu

// The CPU-time limit of each later launch in seconds (0: none); set by emulate.py before a launch.
extern "C" __attribute__((visibility("default"))) void fs_emu_set_time_limit(double seconds) {
  fs_emu::time_limit_s = seconds > 0 ? seconds : 0;
}

// Counters of the last launch: blocks, threads, block barriers, warp barriers, fiber switches.
extern "C" __attribute__((visibility("default"))) int fs_emu_stats(unsigned long long* out, int n) {
  const unsigned long long v[5] = {fs_emu_g.stats.blocks, fs_emu_g.stats.threads, fs_emu_g.stats.barriers,
                                   fs_emu_g.stats.warp_syncs, fs_emu_g.stats.switches};
  int k = n < 5 ? n : 5;
  for (int i = 0; i < k; ++i) out[i] = v[i];
  return 5;
}

#endif  // FS_CUDA_EMU_H
