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
// per such axis of CH_SLOTS x 4 values per window cell (a thread's own cells: no barrier):
// plane p's psi stays in slot (p - X0) mod CH_SLOTS from level 1 to level TH, each level
// updating it in place (the levels of one iteration are on TH different planes). The
// caller passes the level's slot, ``ring``: (it - s) mod CH_SLOTS (:func:`chain_slot`), worked
// out once a level for every chain (a modulo per use took 7 instructions twice a level).
// With PSI_PREF the ring has CH_SLOTS = TH + 1 slots, and iteration it copies the psi that
// level 1 takes in iteration it + 1 into slot it (PSI_PREFETCH): no level uses that slot in
// iteration it, and its last user (level TH, iteration it - 1) has read it.
typedef REAL *ChainS;
__device__ __forceinline__ int chain_slot(int it, int s) {  // it - s + TH >= 0 where it runs
#if CHAIN_SMEM
  return (int)((unsigned)(it - s + CH_SLOTS) % (unsigned)CH_SLOTS);
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

// whether a chain's level 1 finds its psi in its slot (PSI_PREF) rather than in memory
template <class Chain>
struct Prefetched {
  static constexpr bool on = false;
};
template <>
struct Prefetched<ChainS> {
  static constexpr bool on = PSI_PREF;
};

// one CPML correction: psi' = b psi + c vs, term = (1/kappa - 1) vs + psi' (or psi')
template <class Chain>
__device__ __forceinline__ REAL cpml_term(Chain &ch, int it, int par, int s, int slot, REAL vs,
                                          REAL b, REAL c, REAL km1, int kappa,
                                          const REAL *pin, REAL *pout, long pidx, bool own) {
  REAL old = (s == 1 && !Prefetched<Chain>::on) ? pin[pidx] : ch_old(ch, it, par, s, slot);
  REAL p = b * old + c * vs;
  if (s == TH) {
    if (own) pout[pidx] = p;
  } else {
    ch_new(ch, it, par, s, slot) = p;
  }
  return kappa ? km1 * vs + p : p;
}

// PSI_PREF: iteration it's copies into the chains' slot it % CH_SLOTS of what level 1 takes in
// iteration it + 1: the E psi of plane X0 + it (and the x-CPML's H psi, completed on that
// plane) and the y and z CPMLs' H psi of plane X0 + it + 1 (H starts there), for the thread's
// cells in each slab (st: a steady iteration's; a: the thread has window cells, halo ones
// too); it = -1 before the march (H of plane X0). Slots as in cpml_term's calls.
#define PSI_COPY(ch, slot, arr, at) cp_async1(&ch_old(ch, pslot, 0, 0, slot), arr + (at))
#define PSI_PREFETCH(it, st, a)                                                               \
  {                                                                                           \
    const int pslot = (int)((unsigned)((it) + CH_SLOTS) % (unsigned)CH_SLOTS);                \
    const bool e_in = (it) >= 0 && ((st) || (it) < NXW), h_in = (st) || (it) + 1 < NXW;      \
    const int pe = X0 + (it), ph = pe + 1;                                                    \
    FOR_K {                                                                                   \
      if (a) {                                                                                \
        PSI_X(k) PSI_Y(k) PSI_Z(k)                                                            \
      }                                                                                       \
    }                                                                                         \
  }
#if PML0 && CHAIN_SMEM0
#define PSI_X(k)                                                                               \
  if (e_in && INSLAB(pe, NX, L0)) {                                                            \
    const IDXT pi = PIDX0(pe, gy[k], gz);                                                      \
    PSI_COPY(chx[k], 0, pin_H0_1, pi); PSI_COPY(chx[k], 1, pin_H0_2, pi);                      \
    PSI_COPY(chx[k], 2, pin_E0_1, pi); PSI_COPY(chx[k], 3, pin_E0_2, pi);                      \
  }
#else
#define PSI_X(k)
#endif
// a y or z axis: E psi on plane pe (slots 3, 2), H psi on plane ph (slots 1, 0)
#define PSI_YZ(ch, inslab, PIDX, e3, e2, h1, h0, k)                                            \
  if (inslab) {                                                                                \
    if (e_in) {                                                                                \
      PSI_COPY(ch, 3, e3, PIDX(pe, gy[k], gz));                                                \
      PSI_COPY(ch, 2, e2, PIDX(pe, gy[k], gz));                                                \
    }                                                                                          \
    if (h_in) {                                                                                \
      PSI_COPY(ch, 1, h1, PIDX(ph, gy[k], gz));                                                \
      PSI_COPY(ch, 0, h0, PIDX(ph, gy[k], gz));                                                \
    }                                                                                          \
  }
#if PML1 && CHAIN_SMEM1
#define PSI_Y(k) PSI_YZ(chy[k], INSLAB(gy[k], NY, L1), PIDX1, pin_E1_2, pin_E1_0, pin_H1_2, pin_H1_0, k)
#else
#define PSI_Y(k)
#endif
#if PML2 && CHAIN_SMEM2
#define PSI_Z(k) PSI_YZ(chz[k], INSLAB(gz, NZ, L2), PIDX2, pin_E2_1, pin_E2_0, pin_H2_1, pin_H2_0, k)
#else
#define PSI_Z(k)
#endif
