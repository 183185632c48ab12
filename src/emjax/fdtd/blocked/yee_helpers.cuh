// Device helpers of the blocked kernel (yee_blocked.cu) for the TF/SF box, the Drude
// poles and the per-cell coefficients; blocked/cuda.py puts this file between the
// generated header and the kernel.

#if NJ  // Drude and Lorentz poles (blocked/poles.py): their state carried level to level
#define POLE_COEF(arr, kind, m, c, x, y, z)                                            \
  ((kind) == 1 ? arr[(IDXT)(m) * NCELL + IDX(x, y, z)]                                 \
               : (kind) == 2 ? arr[((IDXT)(m) * 3 + (c)) * NCELL + IDX(x, y, z)] : arr[m])
// the state's slots: Drude pole m's J_c at 3 m + c; Lorentz pole m's P_c now and one step
// before at 3 NPOLE + 6 m + 2 c (+ 1)
struct JChain {
  REAL v[2][TH][NJ];
};
#define LSLOT(m, c) (3 * NPOLE + 6 * (m) + 2 * (c))
#endif

// the differences' scale: with FOLD_DX (a kernel whose curl is the differences alone: no
// CPML, TF/SF or poles), 1/dx goes with dt and cb, once, instead of with each difference
#if FOLD_DX
#define DXS ((REAL)1)
#define DTS ((REAL)DT * (REAL)INV_DX)
#define CBS(c) (CBE(c) * (REAL)INV_DX)
#else
#define DXS inv_dx
#define DTS dt
#define CBS(c) CBE(c)
#endif

#if TFSF
// The TF/SF box (emjax.fdtd.tfsf; blocked/incidence.py): a node at i (row 0) or i + 1/2
// (row 1) along axis a is in the box when TF_LO_TABLE[row][a] <= i <= TF_HI_TABLE[row][a];
// the incident E (H) component c is TF_AMP_TABLE[0 (1)][c] times the pass's line tinc of
// level s (E at step n + s - 1, H half a step later) at the node's cell along TF_AXIS. The
// tables are local constants and every loop unrolls, so the corrections fold to a few
// operations per face cell, inlined: at 512^3 (sm_90, ptxas -v) the kernels spill no more
// than with a point dipole (float32 bulk: none), where __constant__ tables and a
// non-inlined function spilled in the march's loop.

// whether a cell at g (of n) may have a stencil node (g - 1, g, g + 1, wrapped) in the box
// along an axis whose nodes in the box lie in [lo, hi] (compile-time bounds TF_G*: a superset)
#define TF_NEAR(g, n, lo, hi) \
  (((g) >= (lo) - 1 && (g) <= (hi) + 1) || ((g) == (n) - 1 && (lo) <= 0) || ((g) == 0 && (hi) >= (n) - 1))

// the total-field indicator at node r of field f (0: E, 1: H), component c
__device__ __forceinline__ REAL tf_mask(int f, int c, const int *r) {
  const int lo[2][3] = {TF_LO_TABLE}, hi[2][3] = {TF_HI_TABLE};
  bool in = true;
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    const int h = (f == 0) == (a == c);  // half a cell along a: E_c along c, H_c across it
    in = in && r[a] >= lo[h][a] && r[a] <= hi[h][a];
  }
  return in ? (REAL)1 : (REAL)0;
}

// the face correction of component c at cell (x, y, z), level s: f = 0: m_H curl E_inc -
// curl(m_E E_inc) at the H_c node (forward differences), to be multiplied by -dt; f = 1:
// m_E curl H_inc - curl(m_H H_inc) at the E_c node (backward differences), by cb. Zero
// where no node of the stencil is in the box (TF_NEAR false on an axis).
__device__ __forceinline__ REAL tf_corr(const REAL *__restrict__ tinc, int s, int f, int c, int x, int y,
                                        int z) {
  const REAL amp[2][3] = {TF_AMP_TABLE};
  const int n[3] = {NX, NY, NZ};
  const int r[3] = {x, y, z};
  const REAL m0 = tf_mask(1 - f, c, r);
  const REAL *line = tinc + ((s - 1) * 2 + f) * TF_NA;
  REAL cu = (REAL)0, cm = (REAL)0;
#pragma unroll
  for (int t = 0; t < 2; ++t) {  // curl_c F = d_{c+1} F_{c+2} - d_{c+2} F_{c+1}
    const int b = (c + 1 + t) % 3, g = (c + 2 - t) % 3;
    if (amp[f][g] == (REAL)0) continue;
    int o[3] = {x, y, z};  // the other node of the difference along b, wrapped
    o[b] = f == 0 ? (r[b] + 1 == n[b] ? 0 : r[b] + 1) : (r[b] == 0 ? n[b] - 1 : r[b] - 1);
    const REAL vr = amp[f][g] * line[r[TF_AXIS]], vo = amp[f][g] * line[o[TF_AXIS]];
    const REAL mr = vr * tf_mask(f, g, r), mo = vo * tf_mask(f, g, o);
    const REAL d = (f == 0 ? vo - vr : vr - vo) * (REAL)INV_DX;
    const REAL dm = (f == 0 ? mo - mr : mr - mo) * (REAL)INV_DX;
    cu += t == 0 ? d : -d;
    cm += t == 0 ? dm : -dm;
  }
  return m0 * cu - cm;
}
#define TF_E(c) + tce[k][c]
#else
#define TF_E(c)
#endif

// The per-cell coefficients: kind 1 one array, 2 one per component, 0 one value, else a
// literal; with CBOX the arrays are read only in the box [CB_X0, CB_X0 + CB_NX) x ... and
// every cell outside it takes the background literal of its component (coef_box.py). They
// hold the box's y-z cells of CB_NXA planes from the grid's plane CB_XA (the box's own, or
// a shard's slab).
#if CBOX
#define INBOX(x, y, z) \
  ((unsigned)((x) - CB_X0) < CB_NX && (unsigned)((y) - CB_Y0) < CB_NY && (unsigned)((z) - CB_Z0) < CB_NZ)
#define BIDX(x, y, z) (((IDXT)((x) - CB_XA) * CB_NY + (y) - CB_Y0) * CB_NZ + (z) - CB_Z0)
#define BNCELL ((IDXT)CB_NXA * CB_NY * CB_NZ)
#define BGV(key, c) ((c) == 0 ? (REAL)key##_BG0 : (c) == 1 ? (REAL)key##_BG1 : (REAL)key##_BG2)
#define CA_BGV(c) BGV(CA, c)
#define CB_BGV(c) BGV(CB, c)
#define PEC_BGV(c) BGV(PEC, c)
#if CBOX_BG  // a kernel whose windows all miss the box: the backgrounds only
#define COEF(arr, kind, bgv, c, x, y, z) bgv(c)
#else
#define COEF(arr, kind, bgv, c, x, y, z) \
  (INBOX(x, y, z) ? arr[((kind) == 2 ? (IDXT)(c) * BNCELL : 0) + BIDX(x, y, z)] : bgv(c))
#endif
// the ring's plane of one coefficient: its box values, or the background
#define RING_FILL(v0, kind, arr, bgv)                                                   \
  for (int c = 0; c < ((kind) == 2 ? 3 : 1); ++c) {                                    \
    if (inb) cp_async1(&RING(slot, (v0) + c, k), arr + (IDXT)c * BNCELL + bat);         \
    else RING(slot, (v0) + c, k) = bgv(c);                                             \
  }
#else
#define COEF(arr, kind, bgv, c, x, y, z) arr[((kind) == 2 ? (IDXT)(c) * NCELL : 0) + IDX(x, y, z)]
#define RING_FILL(v0, kind, arr, bgv) \
  for (int c = 0; c < ((kind) == 2 ? 3 : 1); ++c) cp_async1(&RING(slot, (v0) + c, k), arr + (IDXT)c * NCELL + at);
#endif
#if CA_KIND == 1 || CA_KIND == 2
#define CA(c, x, y, z) COEF(ca, CA_KIND, CA_BGV, c, x, y, z)
#elif CA_KIND == 0  // one traced value, read once into a register (yee_blocked's prologue)
#define CA(c, x, y, z) ca_v
#else
#define CA(c, x, y, z) ((REAL)CA_VALUE)
#endif
#if CB_KIND == 1 || CB_KIND == 2
#define CB(c, x, y, z) COEF(cb, CB_KIND, CB_BGV, c, x, y, z)
#elif CB_KIND == 0
#define CB(c, x, y, z) cb_v
#else
#define CB(c, x, y, z) ((REAL)CB_VALUE)
#endif
#ifdef PEC_KIND
#define KEEP(c, x, y, z) COEF(pec, PEC_KIND, PEC_BGV, c, x, y, z)
#endif
