// One blocked pass of the 2nd-order Yee update: TH steps per read of the grid.
//
// Compiled at run time (NVRTC) with a generated header that defines the sizes, the
// features and the parameter list (emjax/fdtd/blocked/cuda.py); the same text compiles for
// the host with emulated threads (blocked/emulate.h) so the CPU checks its logic.
//
// A CTA owns a tile of BY x BZ cells in (y, z) and a window of WY x WZ = (BY + 2 TH) x
// (BZ + 2 TH) cells, wrapped modulo the grid (the halo is recomputed by the neighbours).
// One thread per window column. The CTA marches along x (walled: PEC or CPML): iteration i
// reads plane i of E and H; time level s (1 .. TH) then works on plane q - 1 = i - s:
//   a. completes H^s(q-1) with its x difference (E^{s-1} on q, fresh from level s-1, and
//      on q-1, kept from the previous iteration);
//   b. stores H^s(q-1) and E^{s-1}(q) in shared memory (two buffer sets, alternating per
//      level, so one barrier per level suffices);
//   c. E^s(q-1) = ca E^{s-1}(q-1) + cb curl H^s (y/z neighbours from shared memory, the x
//      difference from H^s(q-2) kept in registers), walls, PEC cells, point sources, probes;
//   d. starts H^s(q) with the y/z differences of E^{s-1}(q).
// Level s's outputs E^s(q-1), H^s(q-1) are level s+1's inputs on its plane q' = q - 1.
// Level TH's are written back for the tile's own cells. The CPML's psi of level s is
// read from level s-1 of the same thread (a per-thread chain, double-buffered by
// iteration parity) or, at level 1, from memory; level TH writes it back.
// Differences and CPML corrections are those of emjax.fdtd.step (tile.py is the
// reference): plain differences wrap, the CPML's own difference reads 0 past the wall.

#define IDX(x, y, z) (((long)(x) * NY + (y)) * NZ + (z))

#if CA_KIND == 1
#define CA(c, x, y, z) ca[IDX(x, y, z)]
#elif CA_KIND == 2
#define CA(c, x, y, z) ca[(long)(c) * NX * NY * NZ + IDX(x, y, z)]
#elif CA_KIND == 0
#define CA(c, x, y, z) ca[0]
#else
#define CA(c, x, y, z) ((REAL)CA_VALUE)
#endif
#if CB_KIND == 1
#define CB(c, x, y, z) cb[IDX(x, y, z)]
#elif CB_KIND == 2
#define CB(c, x, y, z) cb[(long)(c) * NX * NY * NZ + IDX(x, y, z)]
#elif CB_KIND == 0
#define CB(c, x, y, z) cb[0]
#else
#define CB(c, x, y, z) ((REAL)CB_VALUE)
#endif
#if PEC_KIND == 1
#define KEEP(c, x, y, z) pec[IDX(x, y, z)]
#elif PEC_KIND == 2
#define KEEP(c, x, y, z) pec[(long)(c) * NX * NY * NZ + IDX(x, y, z)]
#endif

// index of a cell in a packed psi array along axis a: the lo slab's L cells, then the hi
// slab's (the caller checks that the cell is in one of them)
#define SLAB(g, n, L) ((g) < (L) ? (g) : (g) - (n) + 2 * (L))
#define PIDX0(x, y, z) (((long)SLAB(x, NX, L0) * NY + (y)) * NZ + (z))
#define PIDX1(x, y, z) (((long)(x) * 2 * L1 + SLAB(y, NY, L1)) * NZ + (z))
#define PIDX2(x, y, z) (((long)(x) * NY + (y)) * 2 * L2 + SLAB(z, NZ, L2))
#define INSLAB(g, n, L) ((g) < (L) || (g) >= (n) - (L))

// the psi chain, one slot per (kind, axis, differentiated component): H0_1 0, H0_2 1,
// H2_0 2, H2_1 3, E0_1 4, E0_2 5, H1_0 6, H1_2 7, E1_0 8, E1_2 9, E2_0 10, E2_1 11
#define NSLOT 12

struct Chain {
  REAL v[2][TH + 1][NSLOT];
};

// one CPML correction: psi' = b psi + c vs, term = (1/kappa - 1) vs + psi' (or psi')
__device__ __forceinline__ REAL cpml_term(Chain &ch, int par, int s, int slot, REAL vs,
                                          REAL b, REAL c, REAL km1, int kappa,
                                          const REAL *pin, REAL *pout, long pidx, bool own) {
  REAL old = (s == 1) ? pin[pidx] : ch.v[par ^ 1][s - 1][slot];
  REAL p = b * old + c * vs;
  if (s == TH) {
    if (own) pout[pidx] = p;
  } else {
    ch.v[par][s][slot] = p;
  }
  return kappa ? km1 * vs + p : p;
}

extern "C" __global__ void __launch_bounds__(NTHREADS) yee_blocked(PARAMS) {
#ifdef EMJAX_EMULATE
  REAL *smem = reinterpret_cast<REAL *>(emu_smem);
#else
  extern __shared__ unsigned char smem_raw[];
  REAL *smem = reinterpret_cast<REAL *>(smem_raw);
#endif
  const int W = WY * WZ;
  // buffers: set (0/1), field (E: 0..2, H: 3..5), cell
#define BUF(set, f, t) smem[((set) * 6 + (f)) * W + (t)]

  const int t = threadIdx.x;
  const bool active = t < W;
  const int ly = active ? t / WZ : 0;
  const int lz = active ? t % WZ : 0;
  const int ty = blockIdx.y, tz = blockIdx.x;
  const int y0 = min(ty * BY, NY - BY), z0 = min(tz * BZ, NZ - BZ);
  const int gy = ((y0 - TH + ly) % NY + NY) % NY;
  const int gz = ((z0 - TH + lz) % NZ + NZ) % NZ;
  // the tile's own cells: window rows [TH, TH + B) that fall in [t B, (t + 1) B)
  const int py = y0 - TH + ly, pz = z0 - TH + lz;  // unwrapped positions
  const bool own = active && ly >= TH && ly < TH + BY && lz >= TH && lz < TH + BZ &&
                   py >= ty * BY && py < min((ty + 1) * BY, NY) && pz >= tz * BZ &&
                   pz < min((tz + 1) * BZ, NZ);
  // window neighbours (clamped at the window's edge: that only spoils halo cells)
  const int tym = (ly > 0) ? t - WZ : t, typ = (ly < WY - 1) ? t + WZ : t;
  const int tzm = (lz > 0) ? t - 1 : t, tzp = (lz < WZ - 1) ? t + 1 : t;
  const REAL inv_dx = (REAL)INV_DX, dt = (REAL)DT;
#if PML1
  const bool sy = INSLAB(gy, NY, L1);
  const REAL bEy = pE1[gy], cEy = pE1[NY + gy], kEy = pE1[2 * NY + gy];
  const REAL bHy = pH1[gy], cHy = pH1[NY + gy], kHy = pH1[2 * NY + gy];
  const REAL mEy = (gy == 0) ? (REAL)0 : (REAL)1, mHy = (gy == NY - 1) ? (REAL)0 : (REAL)1;
#endif
#if PML2
  const bool sz = INSLAB(gz, NZ, L2);
  const REAL bEz = pE2[gz], cEz = pE2[NZ + gz], kEz = pE2[2 * NZ + gz];
  const REAL bHz = pH2[gz], cHz = pH2[NZ + gz], kHz = pH2[2 * NZ + gz];
  const REAL mEz = (gz == 0) ? (REAL)0 : (REAL)1, mHz = (gz == NZ - 1) ? (REAL)0 : (REAL)1;
#endif

  REAL eo[TH + 1][3];     // level s: E^{s-1} on plane q - 1
  REAL hp[TH + 1][3];     // level s: H^s on plane q without its x difference
  REAL hprev[TH + 1][3];  // level s: H^s on plane q - 2
  REAL e0[TH + 1][3];     // level s: E^{s-1} on plane 0 (the x difference's wrap)
  Chain ch;
#pragma unroll
  for (int s = 0; s <= TH; ++s)
    for (int c = 0; c < 3; ++c) eo[s][c] = hp[s][c] = hprev[s][c] = e0[s][c] = (REAL)0;

  // plane i + 1 is read while plane i is worked on (the loads' latency hides behind the
  // levels' arithmetic)
  const long col = IDX(0, gy, gz), plane = (long)NY * NZ;
  REAL nxt[6];
  if (active) {
    nxt[0] = ex[col]; nxt[1] = ey[col]; nxt[2] = ez[col];
    nxt[3] = hx[col]; nxt[4] = hy[col]; nxt[5] = hz[col];
  }
  int task = 0;  // running level count: the shared-memory set alternates with it
  for (int i = 0; i < NX + TH; ++i) {
    const int par = i & 1;
    REAL ef[3], hin[3];  // level s's inputs: E^{s-1}(q), H^{s-1}(q)
    if (active && i < NX) {
      ef[0] = nxt[0]; ef[1] = nxt[1]; ef[2] = nxt[2];
      hin[0] = nxt[3]; hin[1] = nxt[4]; hin[2] = nxt[5];
      if (i + 1 < NX) {
        const long at = col + (i + 1) * plane;
        nxt[0] = ex[at]; nxt[1] = ey[at]; nxt[2] = ez[at];
        nxt[3] = hx[at]; nxt[4] = hy[at]; nxt[5] = hz[at];
      }
    } else {
      ef[0] = ef[1] = ef[2] = hin[0] = hin[1] = hin[2] = (REAL)0;
    }
#pragma unroll
    for (int s = 1; s <= TH; ++s) {
      if (i < s - 1 || i > NX - 1 + s) continue;  // uniform over the CTA
      const int q = i - s + 1;
      const int set = task & 1;
      ++task;
      const bool do_e = (q >= 1 && q <= NX);  // E update (and H completion) on plane q - 1
      const bool do_h = (q <= NX - 1);        // H start on plane q
      const int p = q - 1;
      REAL hc[3] = {hp[s][0], hp[s][1], hp[s][2]};
      if (q == NX) {  // E^{s-1}(NX) is the wrapped plane 0
        ef[0] = e0[s][0]; ef[1] = e0[s][1]; ef[2] = e0[s][2];
      }
      // a. H^s(q-1): the x differences, -dt (-dx Ez) on Hy and -dt (dx Ey) on Hz
      if (active && do_e) {
        REAL dxEz = (ef[2] - eo[s][2]) * inv_dx, dxEy = (ef[1] - eo[s][1]) * inv_dx;
#if PML0
        if (INSLAB(p, NX, L0)) {
          const REAL mH = (p == NX - 1) ? (REAL)0 : (REAL)1;
          const REAL b = pH0[p], c = pH0[NX + p], k = pH0[2 * NX + p];
          const long pi = PIDX0(p, gy, gz);
          dxEz += cpml_term(ch, par, s, 1, (ef[2] * mH - eo[s][2]) * inv_dx, b, c, k, KAPPA0,
                            pin_H0_2, pout_H0_2, pi, own);
          dxEy += cpml_term(ch, par, s, 0, (ef[1] * mH - eo[s][1]) * inv_dx, b, c, k, KAPPA0,
                            pin_H0_1, pout_H0_1, pi, own);
        }
#endif
        hc[1] = hc[1] + dt * dxEz;
        hc[2] = hc[2] - dt * dxEy;
      }
      // b. exchange H^s(q-1) and E^{s-1}(q) through shared memory
      if (active) {
        BUF(set, 0, t) = ef[0]; BUF(set, 1, t) = ef[1]; BUF(set, 2, t) = ef[2];
        BUF(set, 3, t) = hc[0]; BUF(set, 4, t) = hc[1]; BUF(set, 5, t) = hc[2];
      }
      __syncthreads();
      REAL en[3] = {eo[s][0], eo[s][1], eo[s][2]};
      // c. E^s(q-1) = ca E + cb curl H (backward differences)
      if (active && do_e) {
        const REAL hxm_y = BUF(set, 3, tym), hxm_z = BUF(set, 3, tzm);
        const REAL hym_z = BUF(set, 4, tzm), hzm_y = BUF(set, 5, tym);
        const REAL hym_x = (p == 0) ? (REAL)0 : hprev[s][1];
        const REAL hzm_x = (p == 0) ? (REAL)0 : hprev[s][2];
        REAL dyHz = (hc[2] - hzm_y) * inv_dx, dzHy = (hc[1] - hym_z) * inv_dx;
        REAL dzHx = (hc[0] - hxm_z) * inv_dx, dxHz = (hc[2] - hzm_x) * inv_dx;
        REAL dxHy = (hc[1] - hym_x) * inv_dx, dyHx = (hc[0] - hxm_y) * inv_dx;
#if PML0
        if (INSLAB(p, NX, L0)) {
          const REAL mE = (p == 0) ? (REAL)0 : (REAL)1;
          const REAL b = pE0[p], c = pE0[NX + p], k = pE0[2 * NX + p];
          const long pi = PIDX0(p, gy, gz);
          dxHz += cpml_term(ch, par, s, 5, (hc[2] - hzm_x * mE) * inv_dx, b, c, k, KAPPA0,
                            pin_E0_2, pout_E0_2, pi, own);
          dxHy += cpml_term(ch, par, s, 4, (hc[1] - hym_x * mE) * inv_dx, b, c, k, KAPPA0,
                            pin_E0_1, pout_E0_1, pi, own);
        }
#endif
#if PML1
        if (sy) {
          const long pi = PIDX1(p, gy, gz);
          dyHz += cpml_term(ch, par, s, 9, (hc[2] - hzm_y * mEy) * inv_dx, bEy, cEy, kEy, KAPPA1,
                            pin_E1_2, pout_E1_2, pi, own);
          dyHx += cpml_term(ch, par, s, 8, (hc[0] - hxm_y * mEy) * inv_dx, bEy, cEy, kEy, KAPPA1,
                            pin_E1_0, pout_E1_0, pi, own);
        }
#endif
#if PML2
        if (sz) {
          const long pi = PIDX2(p, gy, gz);
          dzHy += cpml_term(ch, par, s, 11, (hc[1] - hym_z * mEz) * inv_dx, bEz, cEz, kEz, KAPPA2,
                            pin_E2_1, pout_E2_1, pi, own);
          dzHx += cpml_term(ch, par, s, 10, (hc[0] - hxm_z * mEz) * inv_dx, bEz, cEz, kEz, KAPPA2,
                            pin_E2_0, pout_E2_0, pi, own);
        }
#endif
        en[0] = CA(0, p, gy, gz) * eo[s][0] + CB(0, p, gy, gz) * (dyHz - dzHy);
        en[1] = CA(1, p, gy, gz) * eo[s][1] + CB(1, p, gy, gz) * (dzHx - dxHz);
        en[2] = CA(2, p, gy, gz) * eo[s][2] + CB(2, p, gy, gz) * (dxHy - dyHx);
#if WALL0
        if (p == 0) { en[1] = (REAL)0; en[2] = (REAL)0; }
#endif
#if WALL1
        if (gy == 0) { en[0] = (REAL)0; en[2] = (REAL)0; }
#endif
#if WALL2
        if (gz == 0) { en[0] = (REAL)0; en[1] = (REAL)0; }
#endif
#ifdef PEC_KIND
        en[0] *= KEEP(0, p, gy, gz);
        en[1] *= KEEP(1, p, gy, gz);
        en[2] *= KEEP(2, p, gy, gz);
#endif
#if NSRC
        SOURCES
#endif
#if NPROBE
        if (own) {
          PROBES
        }
#endif
      }
      // d. H^s(q) without its x difference: H^{s-1} - dt (y/z parts of curl E^{s-1})
      REAL hn[3] = {(REAL)0, (REAL)0, (REAL)0};
      if (active && do_h) {
        const REAL exp_y = BUF(set, 0, typ), exp_z = BUF(set, 0, tzp);
        const REAL eyp_z = BUF(set, 1, tzp), ezp_y = BUF(set, 2, typ);
        REAL dyEz = (ezp_y - ef[2]) * inv_dx, dzEy = (eyp_z - ef[1]) * inv_dx;
        REAL dzEx = (exp_z - ef[0]) * inv_dx, dyEx = (exp_y - ef[0]) * inv_dx;
#if PML1
        if (sy) {
          const long pi = PIDX1(q, gy, gz);
          dyEz += cpml_term(ch, par, s, 7, (ezp_y * mHy - ef[2]) * inv_dx, bHy, cHy, kHy, KAPPA1,
                            pin_H1_2, pout_H1_2, pi, own);
          dyEx += cpml_term(ch, par, s, 6, (exp_y * mHy - ef[0]) * inv_dx, bHy, cHy, kHy, KAPPA1,
                            pin_H1_0, pout_H1_0, pi, own);
        }
#endif
#if PML2
        if (sz) {
          const long pi = PIDX2(q, gy, gz);
          dzEy += cpml_term(ch, par, s, 3, (eyp_z * mHz - ef[1]) * inv_dx, bHz, cHz, kHz,
                            KAPPA2, pin_H2_1, pout_H2_1, pi, own);
          dzEx += cpml_term(ch, par, s, 2, (exp_z * mHz - ef[0]) * inv_dx, bHz, cHz, kHz,
                            KAPPA2, pin_H2_0, pout_H2_0, pi, own);
        }
#endif
        hn[0] = hin[0] - dt * (dyEz - dzEy);
        hn[1] = hin[1] - dt * dzEx;
        hn[2] = hin[2] + dt * dyEx;
      }
      // carry: this level's state for the next iteration, the next level's inputs
      if (q == 0) { e0[s][0] = ef[0]; e0[s][1] = ef[1]; e0[s][2] = ef[2]; }
      eo[s][0] = ef[0]; eo[s][1] = ef[1]; eo[s][2] = ef[2];
      hp[s][0] = hn[0]; hp[s][1] = hn[1]; hp[s][2] = hn[2];
      hprev[s][0] = hc[0]; hprev[s][1] = hc[1]; hprev[s][2] = hc[2];
      if (s == TH) {
        if (own && do_e) {
          const long at = col + p * plane;
          ex_out[at] = en[0]; ey_out[at] = en[1]; ez_out[at] = en[2];
          hx_out[at] = hc[0]; hy_out[at] = hc[1]; hz_out[at] = hc[2];
        }
      } else {
        ef[0] = en[0]; ef[1] = en[1]; ef[2] = en[2];
        hin[0] = hc[0]; hin[1] = hc[1]; hin[2] = hc[2];
      }
    }
  }
}
