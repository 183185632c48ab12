// The CUDA execution model on the host, enough for yee_blocked.cu: one std::thread per
// CUDA thread of a CTA (the same threads for every CTA of a launch), __syncthreads() a
// barrier, shared memory one buffer, CTAs one after another. Slow; for checking the
// kernel's logic on small grids.
#include <algorithm>
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
using std::max;
using std::min;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __syncthreads() emu_barrier->arrive_and_wait()
#define __constant__
#define __ffsll(x) __builtin_ffsll(x)
