// The blocked kernel's (yee_blocked.cu) march along x, monitor boxes and asynchronous
// copies; blocked/cuda.py puts this file after the generated header. Its macros name the
// kernel's locals (x_first, x_last, OX0, OX1, ly).
//
// Steady iterations (STEADY_N > 0): those in the middle of the march, where every level runs
// and updates every cell, are compiled apart without the guards of the march's ends, with
// the buffer set's parity (and, two at a time, i's) known at compile time; the host
// emulation checks the sets' alternation (emulate.h counts reads and writes of one value by
// two threads with no barrier between).
//
// Where along x: xr = (xoff, x0, nxw, ox0, ox1), read at run time: the arrays' first plane
// is the grid's plane xoff (a shard of several devices), each CTA marches over planes
// [x0, x0 + nxw) and writes [ox0, ox1). A march that starts or ends inside the grid spoils
// TH planes at that end (their x neighbours are missing), as the y/z halo does; they are
// left out of [ox0, ox1). The x-CPML's packed psi is indexed by the grid's plane.
// Tasks (NTASK > 0): CTA b takes its window and its cells from row b of the table ``tasks``
// instead of the regular tiling: window origin (y0, z0), own cells [oy0, oy1) x [oz0, oz1),
// and its march (x0, nxw, ox0, ox1); a row with nxw = 0 does nothing.

// the march's tests of plane x = X0 + l (l: the march's own count): whether the kernel
// writes it, and whether it is the grid's plane 0 or NX (the x walls)
#if XR_WHOLE && !NTASK
// a shard's slab: its own planes are l in [XH, NXW - XH) (XH halo planes; NXW = NXA, or
// less XH + XIN on two slabs that leave out the x-CPML); without XIN the grid's plane 0 is
// l = XH on the first slab, plane NX is l = NXA - XH on the last (XIN: no x walls)
#if XIN && WALL0
#error "XIN: a bulk without x walls only"
#endif
#define X_OWN(x, l) ((l) >= XH && (l) < NXW - XH)
#define X_IS0(x, l) (x_first && (l) == XH)
#define X_ISNX(x, l) (x_last && (l) == NXA - XH)
#else
#define X_OWN(x, l) ((x) >= OX0 && (x) < OX1)
#define X_IS0(x, l) ((x) == 0)
#define X_ISNX(x, l) ((x) == NX)
#endif
#if !WALL0  // no x wall here: another kernel recomputes the cells its x ends reach
#undef X_IS0
#undef X_ISNX
#define X_IS0(x, l) false
#define X_ISNX(x, l) false
#endif

// a window row whose level-s values no own cell needs: H^s holds in rows [s - 1, WY - s),
// E^s in [s, WY - s) (each step's y differences spend a row at each side); such rows are
// left out of the level (uniform over a warp: a warp is one row per k)
#if SKIP_SPENT
#define LIVE(k, s) (ly[k] >= (s) - 1 && ly[k] < WY - (s))
#else
#define LIVE(k, s) true
#endif

#if NBOX
// monitor boxes (DFT planes): per box lo (3), count (3), offset into mrec, value (E 0..2,
// H 3..5); per plane p the boxes whose x range holds it
__constant__ long BOXP[NBOX][8] = {BOX_TABLE};
__constant__ unsigned long long XMASK[NX] = {XMASK_TABLE};

// one cell's values at level s into the boxes of ``bits`` (those it is in: rare, so the loop
// costs only there); the values pass one by one (an array indexed at run time would put the
// caller's registers in local memory)
__device__ __forceinline__ void record_boxes(unsigned long long bits, REAL *mrec, int s, int p, int gy, int gz,
                                             REAL e0, REAL e1, REAL e2, REAL h0, REAL h1, REAL h2) {
  while (bits) {
    const int b = __ffsll((long long)bits) - 1;
    bits &= bits - 1;
    const int v = BOXP[b][7];
    const REAL val = v == 0 ? e0 : v == 1 ? e1 : v == 2 ? e2 : v == 3 ? h0 : v == 4 ? h1 : h2;
    mrec[BOXP[b][6] + (((long)(s - 1) * BOXP[b][3] + (p - BOXP[b][0])) * BOXP[b][4] + (gy - BOXP[b][1] + NY) % NY) *
                          BOXP[b][5] +
         (gz - BOXP[b][2] + NZ) % NZ] = val;
  }
}
#endif

// an asynchronous copy of one value from global to shared memory (sm_80 and later; older
// GPUs copy at once; the host emulation lands it at the wait that covers it: emulate.h), and
// the waits for them
__device__ __forceinline__ void cp_async1(REAL *dst, const REAL *src) {
#if defined(EMJAX_EMULATE)
  emu_cp_async(dst, src);
#elif __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(sizeof(REAL)));
#else
  *dst = *src;
#endif
}
__device__ __forceinline__ void cp_async_commit_wait1() {  // all but the newest group landed
#if defined(EMJAX_EMULATE)
  emu_commit();
  emu_wait(1);
#elif __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // (no shared load moves above it)
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(EMJAX_EMULATE)
  emu_commit();
#elif __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// a march on the whole grid (arrays of NX planes from 0) starts its steady iterations at
// i = TH + 1: their planes p = X0 + i - s (s <= TH) are past 0, and q + 1 <= X0 + NXW - 1 < NX,
// so that they leave out the tests of the x walls' planes (INNER in yee_blocked.cu)
#define STEADY_INNER XR_STATIC
#define STEADY_FIRST (TH + STEADY_INNER)

// an iteration's kind: steady (no guards) or not, and the parities of the running level count
// (tpar) and of i (ipar) where known at compile time (else -1)
template <bool S, int TP, int IP>
struct Mode {
  static constexpr bool steady = S;
  static constexpr int tpar = TP, ipar = IP;
};
// every thread of the CTA has window columns (no idle threads in the last warp)
#define ALL_ACTIVE (WY * WZ == RY * NTHREADS)

// a plane's six fields of row k at ``at`` into nxt[k]. HALO_TRIM (windows with TH halo rows on
// both sides in y): no own cell's cone of TH steps reaches the window's last row of Ey, Hx, Hz
// and Hy, nor its first row of Hy (the y differences: H's forward, E's backward), so those
// loads are left out (their values, 0 or the plane before, feed only cells no one reads)
// HALO_TRIM 2: those loads read the row next to theirs in the window instead (a row another
// load of the CTA reads too: the loads stay unconditional, the L1 may serve them); their own
// row where the window wraps around y there (the next row in memory is another plane's)
#if HALO_TRIM == 2
#define LOAD_NEXT(k, at)                                                                      \
  do {                                                                                        \
    const bool dn_ = ly[k] == WY - 1 && gy[k] > 0, up_ = ly[k] == 0 && gy[k] < NY - 1;        \
    const IDXT in_ = (at) - (dn_ ? (IDXT)NZ : (IDXT)0);                                       \
    const IDXT hy_ = (at) + (up_ ? (IDXT)NZ : dn_ ? -(IDXT)NZ : (IDXT)0);                     \
    nxt[k][0] = ex[at]; nxt[k][1] = ey[in_]; nxt[k][2] = ez[at];                              \
    nxt[k][3] = hx[in_]; nxt[k][4] = hy[hy_]; nxt[k][5] = hz[in_];                            \
  } while (0)
#elif HALO_TRIM
#define LOAD_NEXT(k, at)                                                                      \
  do {                                                                                        \
    const bool far_ = ly[k] == WY - 1, near_ = ly[k] == 0;                                    \
    nxt[k][0] = ex[at]; nxt[k][2] = ez[at];                                                   \
    if (!far_) { nxt[k][1] = ey[at]; nxt[k][3] = hx[at]; nxt[k][5] = hz[at]; }                \
    if (!far_ && !near_) nxt[k][4] = hy[at];                                                  \
  } while (0)
#else
#define LOAD_NEXT(k, at)                                                                      \
  do {                                                                                        \
    nxt[k][0] = ex[at]; nxt[k][1] = ey[at]; nxt[k][2] = ez[at];                               \
    nxt[k][3] = hx[at]; nxt[k][4] = hy[at]; nxt[k][5] = hz[at];                               \
  } while (0)
#endif

// The march: iterations [STEADY_FIRST, NXW - 2] are steady, but those on planes with point sources,
// probes or monitor boxes (STEADY_FREE of the planes they work on: their code stays out of
// the steady ones, and so do its registers); they run STEADY_N at a time (2: the carried
// registers renamed instead of moved, and both parities known; 0: none is). A steady
// iteration follows TH (TH + 1) / 2 levels and then whole iterations of TH levels each.
// ``task`` is the running level count that ``iteration`` (a lambda of (i, Mode)) advances;
// X0 and NXW the march's first plane and length (constants where they are known).
template <class It>
__device__ __forceinline__ void march(It &&iteration, const int &task, const int X0, const int NXW) {
  constexpr int P0 = (TH * (TH + 1) / 2) & 1;
#if STEADY_N == 0  // one iteration's code for the whole march, unrolled GENERAL_UNROLL times
#pragma unroll GENERAL_UNROLL
  for (int i = 0; i < NXW + TH; ++i) iteration(i, Mode<false, -1, -1>{});
#elif STEADY_LOOP  // the steady iterations in a loop of their own inside the general one
  for (int i = 0; i < NXW + TH;) {
    // (the parities a steady iteration assumes: a general one in between, where a plane
    // is not free, realigns them)
    while (i >= STEADY_FIRST && i + STEADY_N - 1 <= NXW - 2 &&
           (STEADY_N == 1 || ((task & 1) == P0 && (i & 1) == (TH & 1))) &&
           STEADY_FREE(X0 + i - TH, X0 + i + STEADY_N - 2)) {
#if STEADY_N == 2
      iteration(i, Mode<true, P0, TH & 1>{});
      iteration(i + 1, Mode<true, (P0 + TH) & 1, (TH + 1) & 1>{});
#else
      iteration(i, Mode<true, TH % 2 ? -1 : P0, -1>{});
#endif
      i += STEADY_N;
    }
    if (i >= NXW + TH) break;
    iteration(i, Mode<false, -1, -1>{});
    ++i;
  }
#else
  for (int i = 0; i < NXW + TH;) {
    // (the parities a steady iteration assumes: a general one in between, where a plane
    // is not free, realigns them)
    const bool aligned = STEADY_N == 1 || ((task & 1) == P0 && (i & 1) == (TH & 1));
    if (i >= STEADY_FIRST && i + STEADY_N - 1 <= NXW - 2 && aligned && STEADY_FREE(X0 + i - TH, X0 + i + STEADY_N - 2)) {
#if STEADY_N == 2
      iteration(i, Mode<true, P0, TH & 1>{});
      iteration(i + 1, Mode<true, (P0 + TH) & 1, (TH + 1) & 1>{});
#else  // one at a time: the set's parity is known where TH is even (TH levels an iteration)
      iteration(i, Mode<true, TH % 2 ? -1 : P0, -1>{});  // (P0: the level count's parity)
#endif
      i += STEADY_N;
    } else {
      iteration(i, Mode<false, -1, -1>{});
      ++i;
    }
  }
#endif
}
