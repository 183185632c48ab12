// The CUDA execution model on the host, enough for yee_blocked.cu: one std::thread per
// CUDA thread of a CTA (the same threads for every CTA of a launch), __syncthreads() a
// barrier, shared memory one buffer, CTAs one after another. Slow; for checking the
// kernel's logic on small grids.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#define EMJAX_EMULATE 1
struct emu_dim3 {
  int x, y, z;
};
static thread_local emu_dim3 threadIdx, blockIdx;
static thread_local std::barrier<> *emu_barrier;
static thread_local unsigned char *emu_smem;

// A race check of the exchange buffers (BUF in yee_blocked.cu): every access records its
// thread and barrier epoch (the barriers a thread has passed) per value; a thread that reads
// a value another wrote, or writes one another read, in the same epoch (no barrier between)
// counts a race, whatever the threads' timing. emulate_launch returns the count.
static thread_local long emu_epoch;
static thread_local std::atomic<long> *emu_races;  // one count and shadow per launch: host
static thread_local struct EmuShadow *emu_shadow;   // threads of several launches run at once
struct EmuShadow {
  std::atomic<long> w{-1}, r{-1};  // epoch << 20 | thread of the last write, read (0xFFFFF: several)
};
static const long EMU_MANY = 0xFFFFF;
template <class T>
struct EmuRef {
  T *p;
  EmuShadow &sh() const { return emu_shadow[p - reinterpret_cast<T *>(emu_smem)]; }
  operator T() const {
    EmuShadow &s = sh();
    const long me = emu_epoch << 20 | threadIdx.x, w = s.w.load();
    if (w >> 20 == emu_epoch && (w & EMU_MANY) != threadIdx.x) ++*emu_races;
    long r = s.r.load();
    for (;;) {
      const long next = (r >> 20 == emu_epoch && (r & EMU_MANY) != threadIdx.x) ? (emu_epoch << 20 | EMU_MANY) : me;
      if (next == r || s.r.compare_exchange_weak(r, next)) break;
    }
    return *p;
  }
  EmuRef &operator=(T v) {
    EmuShadow &s = sh();
    const long r = s.r.load();
    if (r >> 20 == emu_epoch && (r & EMU_MANY) != threadIdx.x) ++*emu_races;
    s.w.store(emu_epoch << 20 | threadIdx.x);
    *p = v;
    return *this;
  }
};
using std::max;
using std::min;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __syncthreads() (++emu_epoch, emu_barrier->arrive_and_wait())
#define __constant__
#define __ffsll(x) __builtin_ffsll(x)
