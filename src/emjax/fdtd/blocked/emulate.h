// The CUDA execution model on the host, enough for yee_blocked.cu: one std::thread per
// CUDA thread of a CTA (the same threads for every CTA of a launch), __syncthreads() a
// barrier, shared memory one buffer, CTAs one after another. Slow; for checking the
// kernel's logic on small grids.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstring>
#include <deque>
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

// Asynchronous copies (cp.async) as the hardware may do them: a copy reads its source when
// issued and lands only at a wait that covers its group; copies issued after the last commit
// join the next commit's group. A copy read before its wait reads what the slot held before.
// EMU_COPIES_EARLY: each lands as it is issued instead (the other end of what the hardware
// may do: a slot's old value read after a copy into it was issued is gone).
struct EmuCopy {
  unsigned char *dst;
  unsigned long long bits;
  int size;
};
static thread_local std::vector<EmuCopy> emu_open;               // issued since the last commit
static thread_local std::deque<std::vector<EmuCopy>> emu_groups;  // committed, not yet waited for
template <class T>
inline void emu_cp_async(T *dst, const T *src) {
#ifdef EMU_COPIES_EARLY
  std::memcpy(dst, src, sizeof(T));
#else
  EmuCopy c{reinterpret_cast<unsigned char *>(dst), 0, (int)sizeof(T)};
  std::memcpy(&c.bits, src, sizeof(T));
  emu_open.push_back(c);
#endif
}
inline void emu_commit() {
  emu_groups.push_back(std::move(emu_open));
  emu_open.clear();
}
inline void emu_wait(size_t newest) {  // every group but the ``newest`` most recent lands
  while (emu_groups.size() > newest) {
    for (const EmuCopy &c : emu_groups.front()) std::memcpy(c.dst, &c.bits, c.size);
    emu_groups.pop_front();
  }
}
inline void emu_cta_start() {  // a CTA's copies never land in the next one's shared memory
  emu_open.clear();
  emu_groups.clear();
}
