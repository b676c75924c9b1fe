/* simt.h — a small SIMT emulator, so that the kernel sources in native/cuda compile with g++ -std=c++20 on a machine
 * without a GPU and their logic can be tested against NumPy (tests/test_cuda_kernels_host.py).
 *
 * Build one kernel source into one shared library:
 *   g++ -std=c++20 -O1 -ffp-contract=off -shared -fPIC -pthread -fvisibility=hidden -DLT_SIMT_HOST \
 *       -I tests/cuda_host -I native/cuda -x c++ native/cuda/copy.cu -o copy.so
 * (lt_cuda_common.cuh includes this header when LT_SIMT_HOST is defined.) Each kernel registers itself
 * by name through LT_EXPORT; the library exports only the C functions at the bottom of this file:
 *   simt_launch(name, signature, grid xyz, block xyz, params, err, errlen)
 * takes `params` exactly as cuLaunchKernel does (params[k] points at the value of argument k), so the
 * tests exercise the argument ABI the real host code uses. `signature` is checked against the kernel's
 * C++ parameter types ("S144" a struct of 144 bytes, "p" a pointer, "q" long long, "Q" unsigned long
 * long, "i" int, "I" unsigned, "f" float, "d" double, comma-separated).
 *
 * Model:
 *   - Blocks run one after another. Each CUDA thread of a block is a std::thread (worker t of a
 *     pool, created once and reused for thread t of every block and launch); the block's threads
 *     really run concurrently, so a missing __syncthreads can (but need not) show up as a wrong
 *     result.
 *   - __syncthreads() is a std::barrier over the block's threads. A thread that returns from the kernel
 *     drops out of the block's and its warp's barriers (as exited threads do on the hardware).
 *   - __shared__ expands to `static`: a function's shared variables are one static object, shared by
 *     the threads of the (only) running block and reused by the next block, as on the hardware where
 *     shared memory is not cleared between blocks. Launches are serialized by a mutex.
 *   - Warps are groups of 32 consecutive threads (x fastest). __shfl_*_sync exchange values through a
 *     per-warp buffer and a warp barrier.
 *   - __half is a 16-bit struct with exact conversions: float/double -> half rounds to nearest even
 *     (directly from the value, so double -> half is rounded once, like __double2half), half -> float
 *     is exact. No half arithmetic: the kernels compute in float.
 *   - Math functions are the host libm's (glibc), not CUDA's: results can differ from a GPU's by the
 *     documented ulp of CUDA's math library (e.g. rsqrtf here is 1/sqrtf, correctly rounded twice).
 *
 * Limits (it is a test tool):
 *   - Shuffles need every lane of the warp to take part (mask 0xffffffff; anything else aborts) and
 *     all lanes to call the same shuffle; lanes that do not exist in a partial last warp read as the
 *     caller's own value (undefined on the hardware). Divergent __syncthreads deadlocks (UB on CUDA).
 *   - No dynamic shared memory, streams, atomics, cooperative groups, warp vote/match functions,
 *     clock/timing, printf formatting differences, memory fences beyond the barriers' ordering, or
 *     texture/surface objects. Blocks never run concurrently, so inter-block races cannot be observed.
 *   - At most 1024 threads per block. Every barrier phase costs a context switch per thread
 *     (~2-3 us on a small machine): keep blocks small in tests (32-96 threads).
 *   - One translation unit per library: the exported functions are defined in this header.
 *   - Races are found only by chance (real threads) or by the schedule jitter (simt_set_jitter),
 *     which targets barrier-separated reuse of shared memory; there is no race detector.
 *   - A deadlocked block aborts the process after the watchdog time (simt_set_timeout).
 *   - Integer overflow inside kernels is undefined in C++ (it wraps on the GPU); tests keep values in
 *     range.
 */
#ifndef LT_SIMT_H
#define LT_SIMT_H

#include <math.h>

#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

/* ---------------------------------------------------------------- CUDA keywords */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __launch_bounds__(...)

struct simt_dim3 {
  unsigned x = 1, y = 1, z = 1;
};

inline thread_local simt_dim3 threadIdx;
inline thread_local simt_dim3 blockIdx;
inline simt_dim3 blockDim; /* constant during a launch (launches are serialized) */
inline simt_dim3 gridDim;

namespace simt {

constexpr int kWarpSize = 32;

struct Warp {
  explicit Warp(int n) : bar(n), lanes(n) {}
  std::barrier<> bar;
  int lanes;
  alignas(16) unsigned char slot[2][kWarpSize][16]; /* two buffers, used alternately */
};

struct Block {
  explicit Block(int n) : bar(n) {}
  std::barrier<> bar;
  std::vector<std::unique_ptr<Warp>> warps;
};

inline thread_local Block *tl_block = nullptr;
inline thread_local Warp *tl_warp = nullptr;
inline thread_local int tl_lane = 0;
inline thread_local int tl_parity = 0; /* which exchange buffer the next shuffle uses */
inline thread_local unsigned tl_syncs = 0; /* __syncthreads calls of this thread in this block */
inline thread_local int tl_warp_id = 0;
inline unsigned g_jitter_us = 0; /* schedule jitter, see simt_set_jitter */
inline unsigned g_timeout_s = 120; /* watchdog, see simt_set_timeout */

[[noreturn]] inline void fatal(const char *what) {
  std::fprintf(stderr, "simt: %s\n", what);
  std::abort();
}

/* value of lane src(lane) of the calling warp, or v itself when src returns -1.
 * One warp barrier per shuffle: shuffles alternate between two buffers, and a lane can only write
 * buffer b again (two shuffles later) after every lane has passed the barrier of the shuffle in
 * between, i.e. after every lane has finished reading buffer b. */
template <typename T, typename Src> inline T shfl(unsigned mask, T v, Src src_of) {
  static_assert(sizeof(T) <= 16 && std::is_trivially_copyable_v<T>, "shuffle of a large type");
  if (mask != 0xffffffffu) fatal("only full-warp shuffles (mask 0xffffffff) are emulated");
  Warp *w = tl_warp;
  const int lane = tl_lane, b = tl_parity;
  tl_parity ^= 1;
  std::memcpy(w->slot[b][lane], &v, sizeof(T));
  w->bar.arrive_and_wait();
  const int src = src_of(lane);
  T r = v;
  if (src >= 0 && src < w->lanes) std::memcpy(&r, w->slot[b][src], sizeof(T));
  return r;
}

} // namespace simt

inline void __syncthreads() {
  simt::tl_block->bar.arrive_and_wait();
  if (simt::g_jitter_us) { /* hold one warp back, a different one at each barrier */
    const int nw = (int)((blockDim.x * blockDim.y * blockDim.z + 31) / 32);
    if (nw > 1 && simt::tl_warp_id == (int)(simt::tl_syncs % (unsigned)nw))
      std::this_thread::sleep_for(std::chrono::microseconds(simt::g_jitter_us));
  }
  ++simt::tl_syncs;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) simt::fatal("only __syncwarp(0xffffffff) is emulated");
  simt::tl_warp->bar.arrive_and_wait();
}

template <typename T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return simt::shfl(mask, v, [&](int lane) {
    const int base = lane & ~(width - 1), s = lane + (int)delta;
    return s - base < width ? s : -1;
  });
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return simt::shfl(mask, v, [&](int lane) {
    const int base = lane & ~(width - 1), s = lane - (int)delta;
    return s >= base ? s : -1;
  });
}
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return simt::shfl(mask, v, [&](int lane) {
    const int base = lane & ~(width - 1), s = lane ^ lane_mask;
    return s < base + width ? s : -1;
  });
}
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return simt::shfl(mask, v, [&](int lane) {
    const int base = lane & ~(width - 1);
    return base + (src_lane & (width - 1));
  });
}

/* ---------------------------------------------------------------- bit casts and math extras */
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
// the device clock: the host's steady clock in nanoseconds (a 1 GHz device)
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

/* ---------------------------------------------------------------- __half */
struct __half {
  unsigned short __x;
};

namespace simt {
/* round |d| to the nearest half (ties to even), from the exact value */
inline unsigned short half_bits(double d) {
  const unsigned short sign = std::signbit(d) ? 0x8000u : 0u;
  if (std::isnan(d)) return (unsigned short)(sign | 0x7e00u);
  const double a = std::fabs(d);
  if (std::isinf(a)) return (unsigned short)(sign | 0x7c00u);
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e); /* a in [2^(e-1), 2^e) */
  int E = e - 1;
  if (E < -14) { /* subnormal half: units of 2^-24; 1024 units is the smallest normal, 0x0400 */
    const double m = std::nearbyint(std::ldexp(a, 24));
    return (unsigned short)(sign | (unsigned)m);
  }
  double m = std::nearbyint(std::ldexp(a, 10 - E)); /* in [1024, 2048] */
  if (m == 2048.0) {
    m = 1024.0;
    E += 1;
  }
  if (E > 15) return (unsigned short)(sign | 0x7c00u);
  return (unsigned short)(sign | (unsigned)((E + 15) << 10) | ((unsigned)m - 1024u));
}
} // namespace simt

inline __half __double2half(double d) { return __half{simt::half_bits(d)}; }
inline __half __float2half_rn(float f) { return __half{simt::half_bits((double)f)}; }
inline __half __float2half(float f) { return __float2half_rn(f); }
inline float __half2float(__half h) {
  const unsigned e = (h.__x >> 10) & 31u, m = h.__x & 1023u;
  float v;
  if (e == 0) v = std::ldexp((float)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp((float)(m | 1024u), (int)e - 25);
  return (h.__x & 0x8000u) ? -v : v;
}

/* ---------------------------------------------------------------- kernel registry and launch */
namespace simt {

struct Kernel {
  std::string sig;
  std::function<void(void **)> call;
};

inline std::map<std::string, Kernel> &registry() {
  static std::map<std::string, Kernel> m;
  return m;
}

template <typename T> struct always_false : std::false_type {};

template <typename T> std::string sig1() {
  if constexpr (std::is_pointer_v<T>) return "p";
  else if constexpr (std::is_same_v<T, long long>) return "q";
  else if constexpr (std::is_same_v<T, unsigned long long>) return "Q";
  else if constexpr (std::is_same_v<T, int>) return "i";
  else if constexpr (std::is_same_v<T, unsigned>) return "I";
  else if constexpr (std::is_same_v<T, float>) return "f";
  else if constexpr (std::is_same_v<T, double>) return "d";
  else if constexpr (std::is_class_v<T> && std::is_trivially_copyable_v<T>) return "S" + std::to_string(sizeof(T));
  else static_assert(always_false<T>::value, "kernel parameter type not supported by the emulator");
}

template <typename... A> std::string signature() {
  std::string s;
  ((s += sig1<A>() + ","), ...);
  if (!s.empty()) s.pop_back();
  return s;
}

template <typename... A, std::size_t... I>
void invoke(void (*k)(A...), void **p, std::index_sequence<I...>) {
  k(*static_cast<std::remove_cv_t<A> *>(p[I])...);
}

template <typename... A> int reg(const char *name, void (*k)(A...)) {
  registry()[name] = Kernel{signature<A...>(), [k](void **p) { invoke(k, p, std::index_sequence_for<A...>{}); }};
  return 0;
}

inline std::mutex &launch_mutex() {
  static std::mutex m;
  return m;
}

/* Worker threads, created on first use and kept for the life of the process (never joined: at exit
 * they are blocked on their semaphores). Worker t plays thread t of every block. */
struct Pool {
  struct Job {
    const Kernel *k = nullptr;
    void **params = nullptr;
    Block *blk = nullptr;
    simt_dim3 block, bidx;
  } job;
  std::mutex m;
  std::condition_variable cv;
  int remaining = 0; /* threads of the current block still running */
  std::vector<std::unique_ptr<std::binary_semaphore>> go;
  std::vector<std::thread> workers;

  void ensure(int n) {
    /* go never moves: a worker of the last launch may still be on its way back to go[t]->acquire() while this
     * adds threads for a bigger block, and a reallocation under it crashed a CI run */
    if (go.capacity() < 1024) go.reserve(1024);
    while ((int)workers.size() < n) {
      const int t = (int)workers.size();
      go.push_back(std::make_unique<std::binary_semaphore>(0));
      workers.emplace_back([this, t] { work(t); });
      workers.back().detach();
    }
  }
  void work(int t) {
    for (;;) {
      go[t]->acquire(); /* acquire: sees the job written before the release */
      const Job j = job;
      threadIdx.x = (unsigned)t % j.block.x;
      threadIdx.y = ((unsigned)t / j.block.x) % j.block.y;
      threadIdx.z = (unsigned)t / (j.block.x * j.block.y);
      blockIdx = j.bidx;
      tl_block = j.blk;
      tl_warp = j.blk->warps[t / kWarpSize].get();
      tl_lane = t % kWarpSize;
      tl_warp_id = t / kWarpSize;
      tl_parity = 0;
      tl_syncs = 0;
      j.k->call(j.params);
      tl_warp->bar.arrive_and_drop(); /* an exited thread leaves the barriers */
      j.blk->bar.arrive_and_drop();
      std::lock_guard<std::mutex> lock(m);
      if (--remaining == 0) cv.notify_one();
    }
  }
};

inline Pool &pool() {
  static Pool *p = new Pool(); /* deliberately leaked: its threads outlive static destruction */
  return *p;
}

inline int run(const Kernel &k, simt_dim3 grid, simt_dim3 block, void **params, std::string &err) {
  const unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
  if (nt < 1 || nt > 1024) {
    err = "block size must be 1..1024 threads";
    return 3;
  }
  if (grid.x < 1 || grid.y < 1 || grid.z < 1) {
    err = "grid dimensions must be >= 1";
    return 3;
  }
  const int n = (int)nt;
  gridDim = grid;
  blockDim = block;
  Pool &p = pool();
  try {
    p.ensure(n);
  } catch (const std::exception &e) {
    err = std::string("cannot start emulator threads: ") + e.what();
    return 4;
  }
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        /* fresh barriers per block: exited threads have dropped out of the previous block's */
        Block blk(n);
        for (int w = 0; w * kWarpSize < n; ++w)
          blk.warps.push_back(std::make_unique<Warp>(std::min(kWarpSize, n - w * kWarpSize)));
        p.job.k = &k;
        p.job.params = params;
        p.job.blk = &blk;
        p.job.block = block;
        p.job.bidx = simt_dim3{bx, by, bz};
        p.remaining = n;
        for (int t = 0; t < n; ++t) p.go[t]->release();
        /* the whole block finishes before the next one starts; a block that never finishes is a
         * deadlock (divergent __syncthreads, a shuffle not all lanes reach): threads cannot be
         * cancelled, so end the process with a message rather than hang the test run */
        std::unique_lock<std::mutex> lock(p.m);
        if (!p.cv.wait_for(lock, std::chrono::seconds(g_timeout_s), [&] { return p.remaining == 0; })) {
          std::fprintf(stderr, "simt: block %u of a launch did not finish within %u s (%d threads still "
                               "running): deadlock in the kernel?\n", bx, g_timeout_s, p.remaining);
          std::fflush(stderr);
          std::abort();
        }
      }
  return 0;
}

} // namespace simt

#define SIMT_EXPORT extern "C" __attribute__((visibility("default")))

/* 0 ok; 1 unknown kernel; 2 signature mismatch; 3 bad geometry. err gets a message. */
SIMT_EXPORT int simt_launch(const char *name, const char *sig, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, void **params, char *err, int errlen) {
  std::string msg;
  int rc = 0;
  auto &r = simt::registry();
  auto it = r.find(name);
  if (it == r.end()) {
    msg = std::string("no kernel named ") + name;
    rc = 1;
  } else if (sig && it->second.sig != sig) {
    msg = std::string(name) + " takes (" + it->second.sig + "), called with (" + sig + ")";
    rc = 2;
  } else {
    std::lock_guard<std::mutex> lock(simt::launch_mutex());
    rc = simt::run(it->second, simt_dim3{gx, gy, gz}, simt_dim3{bx, by, bz}, params, msg);
  }
  if (err && errlen > 0) std::snprintf(err, (size_t)errlen, "%s", msg.c_str());
  return rc;
}

/* Schedule jitter for tests: after every __syncthreads, one warp of the block (a different one at each
 * barrier, in turn) sleeps `us` microseconds while the others run ahead. This exposes a missing
 * barrier between a read of shared memory and a later write of it (reuse hazards) that free-running
 * threads almost never show. 0 (the default) turns it off. */
SIMT_EXPORT void simt_set_jitter(unsigned us) { simt::g_jitter_us = us; }

/* Watchdog: a block not finished after `seconds` aborts the process with a message (default 120). */
SIMT_EXPORT void simt_set_timeout(unsigned seconds) { simt::g_timeout_s = seconds ? seconds : 1; }

SIMT_EXPORT int simt_kernel_count() { return (int)simt::registry().size(); }

/* name (what = 0) or signature (what = 1) of the i-th kernel in name order */
SIMT_EXPORT const char *simt_kernel_info(int i, int what) {
  auto &r = simt::registry();
  if (i < 0 || i >= (int)r.size()) return nullptr;
  auto it = r.begin();
  std::advance(it, i);
  return what == 0 ? it->first.c_str() : it->second.sig.c_str();
}

#endif /* LT_SIMT_H */
