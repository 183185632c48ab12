// The CPML's part of the blocked kernel (yee_blocked.cu): where a cell's psi lies in the
// packed arrays, the per-thread psi chains that carry it from level to level, and one
// correction. Compiled after the generated header (TH, the window, the CPML's widths).

// index of a cell in a packed psi array along axis a: the lo slab's L cells, then the hi
// slab's (the caller checks that the cell is in one of them)
#define SLAB(g, n, L) ((g) < (L) ? (g) : (g) - (n) + 2 * (L))
#define PIDX0(x, y, z) (((IDXT)SLAB(x, NX, L0) * NY + (y)) * NZ + (z))
#define PIDX1(x, y, z) (((IDXT)((x) - xoff) * 2 * L1 + SLAB(y, NY, L1)) * NZ + (z))
#define PIDX2(x, y, z) (((IDXT)((x) - xoff) * NY + (y)) * 2 * L2 + SLAB(z, NZ, L2))
#define INSLAB(g, n, L) ((g) < (L) || (g) >= (n) - (L))

// the psi chains, one per CPML axis (so a cell outside the y and z slabs touches none of
// their memory), a slot per (kind, differentiated component): x: H0_1 0, H0_2 1, E0_1 2,
// E0_2 3; y: H1_0 0, H1_2 1, E1_0 2, E1_2 3; z: H2_0 0, H2_1 1, E2_0 2, E2_1 3. Level s
// (< TH) leaves its psi for level s + 1, which takes it in the next iteration.

// In shared memory (ChainS, per axis where CHAIN_SMEMa): after the two buffer sets, a block
// per such axis of TH x 4 values per window cell (a thread's own cells: no barrier): plane
// p's psi stays in slot p % TH from level 1 (iteration p + 1) to level TH, each level
// updating it in place (the levels of one iteration are on TH different planes). The
// caller passes the level's slot, ``ring``: (it - s) mod TH (:func:`chain_slot`), worked
// out once a level for every chain (a modulo per use took 7 instructions twice a level).
typedef REAL *ChainS;
__device__ __forceinline__ int chain_slot(int it, int s) {  // it - s + TH >= 0 where it runs
#if CHAIN_SMEM
  return (int)((unsigned)(it - s + TH) % (unsigned)TH);
#else
  return it;  // (ChainL ignores it)
#endif
}
__device__ __forceinline__ REAL &ch_old(ChainS ch, int ring, int, int, int slot) {
  return ch[((ring) * 4 + (slot)) * (WY * WZ)];
}
__device__ __forceinline__ REAL &ch_new(ChainS ch, int it, int par, int s, int slot) {
  return ch_old(ch, it, par, s, slot);
}
// In registers or local memory (ChainL), double-buffered by the iteration's parity (par:
// it & 1, a constant where the caller knows it).
struct ChainL {
  REAL v[2][TH][4];
};
__device__ __forceinline__ REAL &ch_old(ChainL &ch, int, int par, int s, int slot) {
  return ch.v[par ^ 1][s - 1][slot];
}
__device__ __forceinline__ REAL &ch_new(ChainL &ch, int, int par, int s, int slot) {
  return ch.v[par][s][slot];
}
#if CHAIN_SMEM0
typedef ChainS Chain0;
#else
typedef ChainL Chain0;
#endif
#if CHAIN_SMEM1
typedef ChainS Chain1;
#else
typedef ChainL Chain1;
#endif
#if CHAIN_SMEM2
typedef ChainS Chain2;
#else
typedef ChainL Chain2;
#endif

// one CPML correction: psi' = b psi + c vs, term = (1/kappa - 1) vs + psi' (or psi')
template <class Chain>
__device__ __forceinline__ REAL cpml_term(Chain &ch, int it, int par, int s, int slot, REAL vs,
                                          REAL b, REAL c, REAL km1, int kappa,
                                          const REAL *pin, REAL *pout, long pidx, bool own) {
  REAL old = (s == 1) ? pin[pidx] : ch_old(ch, it, par, s, slot);
  REAL p = b * old + c * vs;
  if (s == TH) {
    if (own) pout[pidx] = p;
  } else {
    ch_new(ch, it, par, s, slot) = p;
  }
  return kappa ? km1 * vs + p : p;
}
