// One blocked pass of the 2nd-order Yee update: TH steps per read of the grid.
//
// Compiled at run time (NVRTC) with a generated header that defines the sizes, the
// features and the parameter list (emjax/fdtd/blocked/cuda.py); the same text compiles for
// the host with emulated threads (blocked/emulate.h) so the CPU checks its logic.
//
// A CTA owns a tile of BY x BZ cells in (y, z) and a window of WY x WZ = (BY + 2 TH) x
// (BZ + 2 TH) cells, wrapped modulo the grid (the halo is recomputed by the neighbours).
// A thread owns RY window columns (rows r, r + WY / RY, ... at one z): RY independent
// updates between barriers. The CTA marches along x (walled: PEC or CPML): iteration i
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
// read from level s-1 of the same thread (a per-thread chain: in registers double-buffered
// by iteration parity, in shared memory a ring of CH_SLOTS planes) or, at level 1, from
// memory (PSI_PREF: copied into the ring an iteration ahead); level TH writes it back.
// Differences and CPML corrections are those of emjax.fdtd.step (tile.py is the
// reference): plain differences wrap, the CPML's own difference reads 0 past the wall.

// the arrays hold NXA planes from the grid's plane xoff (a shard's slab: xoff at run time)
// IDXT: int where every array the kernel indexes holds fewer than 2^31 values, else long
#define IDX(x, y, z) (((IDXT)((x) - xoff) * NY + (y)) * NZ + (z))
#define NCELL ((IDXT)NXA * NY * NZ)

// the coefficients CA, CB, KEEP (c, x, y, z): yee_helpers.cuh; the CPML's psi indices,
// chains and correction: yee_cpml.cuh; the march (steady iterations, where along x, task
// rows, the x planes' and spent rows' tests), monitor boxes, asynchronous copies: yee_march.cuh

extern "C" __global__ void __launch_bounds__(NTHREADS, MIN_CTAS) yee_blocked(PARAMS) {
#ifdef EMJAX_EMULATE
  REAL *smem = reinterpret_cast<REAL *>(emu_smem);
#else
  extern __shared__ unsigned char smem_raw[];
  REAL *smem = reinterpret_cast<REAL *>(smem_raw);
#endif
  const int W = WY * WZ;
  // a coefficient that is one traced value: read once here (read at each use, the loads
  // and their pointers' took 72 of the 1744 instructions of the bulk's march loop, sm_90)
#if CA_KIND == 0
  const REAL ca_v = ca[0];
#endif
#if CB_KIND == 0
  const REAL cb_v = cb[0];
#endif
  // buffers: set (0/1), field (E: 0..2, H: 3..5), window cell
#ifdef EMJAX_EMULATE  // race-checked (emulate.h)
#define BUF(set, f, c) (EmuRef<REAL>{&smem[((set) * 6 + (f)) * W + (c)]})
#else
#define BUF(set, f, c) smem[((set) * 6 + (f)) * W + (c)]
#endif
#define FOR_K _Pragma("unroll") for (int k = 0; k < RY; ++k)
#if NRING
  // the coefficient ring: TH + 1 planes of NRING values per window cell after the buffers
  // (and chains); iteration i copies plane X0 + i into slot (i + 1) % (TH + 1), which level
  // s reads in iteration i + s (its plane p = X0 + i' - s): no slot is overwritten while a
  // level still reads it, and each thread reads only the cells it copied (no barrier)
  REAL *ring = smem + (IDXT)RING_OFF * W;
#define RING(slot, v, k) ring[((slot) * NRING + (v)) * W + cell[k]]
#endif

  // thread -> one z position and RY rows of the window (rows r, r + WY / RY, ...)
  const int t = threadIdx.x;
  const bool active = t < W / RY;
  const int lz = active ? t % WZ : 0;
  const int r = active ? t / WZ : 0;
#if XR_STATIC  // the whole grid on one device: compile-time bounds
  const int xoff = 0;
#else
  const int xoff = xr[0];
#endif
#if NTASK
  const int *task_row = tasks + 10 * blockIdx.x;
  const int y0 = task_row[0], z0 = task_row[1], oy0 = task_row[2], oy1 = task_row[3];
  const int oz0 = task_row[4], oz1 = task_row[5], X0 = task_row[6], NXW = task_row[7];
  const int OX0 = task_row[8], OX1 = task_row[9];
  if (NXW <= 0) return;
#else
  const int ty = blockIdx.y, tz = blockIdx.x;
#ifdef TILES  // tiles that other kernels compute are left out: only the first tl[4] tiles
  {            // of the rectangle [tl[0], tl[1]) x [tl[2], tl[3]) in launch order, but those
    const int tl[9] = {TILES};  // of the hole [tl[5], tl[6]) x [tl[7], tl[8])
    if (ty < tl[0] || ty >= tl[1] || tz < tl[2] || tz >= tl[3] ||
        (ty - tl[0]) * (tl[3] - tl[2]) + tz - tl[2] >= tl[4] ||
        (ty >= tl[5] && ty < tl[6] && tz >= tl[7] && tz < tl[8]))
      return;
  }
#endif
  // the tiling of [TY_OFF, TY_OFF + TY_LEN) x [TZ_OFF, TZ_OFF + TZ_LEN) (the whole axes but
  // where the CPML kernel's face rows own the cells at the faces)
  const int y0 = TY_OFF + min(ty * BY, TY_LEN - BY), z0 = TZ_OFF + min(tz * BZ, TZ_LEN - BZ);
  const int oy0 = TY_OFF + ty * BY, oy1 = TY_OFF + min((ty + 1) * BY, TY_LEN);
  const int oz0 = TZ_OFF + tz * BZ, oz1 = TZ_OFF + min((tz + 1) * BZ, TZ_LEN);
#if XR_STATIC
  const int X0 = XM_X0, NXW = XM_NXW, OX0 = XM_OX0, OX1 = XM_OX1;  // (split.BULK_X_INSIDE)
#elif XR_WHOLE  // a shard's slab without CPML code: march its planes (halos included; past
  // the grid's ends they hold the ring's wrapped planes, which the x walls cut off)
  const bool x_first = xoff + XH == 0, x_last = xoff + NXA - XH == NX;  // H100: 12% faster
  // (the tests below in the march's own count, X_OWN); XIN: two slabs leave out the x-CPML's
  // XIN planes at their ends of the grid, which their x rows own (split.BULK_X_INSIDE_SLABS)
  const int X0 = xoff + (XIN && x_first ? XH + XIN : 0), NXW = NXA - (XIN ? XH + XIN : 0);
#else
  const int X0 = xr[1], NXW = xr[2], OX0 = xr[3], OX1 = xr[4];
#endif
#endif
  const int gz = ((z0 - TH + lz) % NZ + NZ) % NZ;
  const int pz = z0 - TH + lz;  // unwrapped
  // a cell is written where it is one of the row's own and inside the exact part of the window
  // (TH cells in from each edge; with WALLWIN, up to the edge at the wall: the table's own
  // cells say which)
#if WALLWIN == 2
  const bool own_z = pz >= oz0 && pz < oz1;
#else
  const bool own_z = lz >= TH && lz < TH + BZ && pz >= oz0 && pz < oz1;
#endif
  const int dzm = (lz > 0) ? -1 : 0, dzp = (lz < WZ - 1) ? 1 : 0;  // clamped at the window
  int ly[RY], gy[RY], cell[RY], dym[RY], dyp[RY];
  bool own[RY];
  IDXT col[RY];
  FOR_K {
    ly[k] = r + k * (WY / RY);
    gy[k] = ((y0 - TH + ly[k]) % NY + NY) % NY;
    const int py = y0 - TH + ly[k];
#if WALLWIN == 1
    own[k] = active && own_z && py >= oy0 && py < oy1;
#else
    own[k] = active && own_z && ly[k] >= TH && ly[k] < TH + BY && py >= oy0 && py < oy1;
#endif
    cell[k] = ly[k] * WZ + lz;
    dym[k] = (ly[k] > 0) ? -WZ : 0;
    dyp[k] = (ly[k] < WY - 1) ? WZ : 0;
    col[k] = IDX(X0, gy[k], gz);
  }
  const IDXT plane = (IDXT)NY * NZ;
#if NBOX
  unsigned long long yzm[RY];  // per row: the monitor boxes its (y, z) falls in
  FOR_K {
    yzm[k] = 0ull;
#pragma unroll 1
    for (int b = 0; b < NBOX; ++b)
      if ((unsigned)((gy[k] - BOXP[b][1] + NY) % NY) < BOXP[b][4] &&
          (unsigned)((gz - BOXP[b][2] + NZ) % NZ) < BOXP[b][5])
        yzm[k] |= 1ull << b;
  }
#endif
  const REAL inv_dx = (REAL)INV_DX, dt = (REAL)DT;
#if TFSF
  bool tf_yz[RY];  // per row: whether its (y, z) may take a TF/SF correction
  FOR_K tf_yz[k] = active && TF_NEAR(gy[k], NY, TF_G1_LO, TF_G1_HI) && TF_NEAR(gz, NZ, TF_G2_LO, TF_G2_HI);
#endif
#if PML2
  const bool sz = INSLAB(gz, NZ, L2);  // (the profiles are read where used: registers are scarce)
#endif
#if PROFILE_REGS  // where registers are not scarce: a thread's y and z profiles, read once
#if PML1          // (its rows' y and its z stay put through the march)
  REAL py1[RY][6];
  FOR_K {
    const int g = gy[k];
    py1[k][0] = pE1[g]; py1[k][1] = pE1[NY + g]; py1[k][2] = pE1[2 * NY + g];
    py1[k][3] = pH1[g]; py1[k][4] = pH1[NY + g]; py1[k][5] = pH1[2 * NY + g];
  }
#endif
#if PML2
  const REAL pz2[6] = {pE2[gz], pE2[NZ + gz], pE2[2 * NZ + gz], pH2[gz], pH2[NZ + gz], pH2[2 * NZ + gz]};
#endif
#endif

#if NJ
  const REAL *jin[NJ] = {JIN_LIST};
  REAL *jout[NJ] = {JOUT_LIST};
  JChain chj[RY];  // level s (< TH) leaves its plane's pole state in [parity][s] for s + 1
#endif
  REAL eo[TH + 1][RY][3];     // level s: E^{s-1} on plane q - 1
  REAL hp[TH + 1][RY][3];     // level s: H^s on plane q without its x difference
  REAL hprev[TH + 1][RY][2];  // level s: Hy, Hz^s on plane q - 2
#if PML0
  Chain0 chx[RY];
#endif
#if PML1
  Chain1 chy[RY];
#endif
#if PML2
  Chain2 chz[RY];
#endif
#if CHAIN_SMEM  // each such axis's block: (ring slot, psi slot) planes of W values
  FOR_K {
#if PML0 && CHAIN_SMEM0
    chx[k] = smem + 12 * W + (IDXT)CH_AXIS0 * 4 * CH_SLOTS * W + cell[k];
#endif
#if PML1 && CHAIN_SMEM1
    chy[k] = smem + 12 * W + (IDXT)CH_AXIS1 * 4 * CH_SLOTS * W + cell[k];
#endif
#if PML2 && CHAIN_SMEM2
    chz[k] = smem + 12 * W + (IDXT)CH_AXIS2 * 4 * CH_SLOTS * W + cell[k];
#endif
  }
#endif
#pragma unroll
  for (int s = 0; s <= TH; ++s)
    FOR_K {
      for (int c = 0; c < 3; ++c) eo[s][k][c] = hp[s][k][c] = (REAL)0;
      hprev[s][k][0] = hprev[s][k][1] = (REAL)0;
    }

  // plane i + 1 is read into registers while plane i is worked on
  REAL nxt[RY][6];
  FOR_K {
#if HALO_TRIM == 1  // (the rows' fields it leaves out)
    for (int c = 0; c < 6; ++c) nxt[k][c] = (REAL)0;
#endif
    if (active) LOAD_NEXT(k, col[k]);
  }
#define NEXT(f, k) nxt[k][f]
  int task = 0;  // running level count: the shared-memory set alternates with it
  // one iteration of the march; ``Mode`` says whether it is a steady one (every level runs,
  // every cell updates: no guards) and, where known at compile time, the parities of the
  // level count and of i (the buffer set and the chains' slots: constant offsets)
  auto iteration = [&](const int i, auto mode) {
    constexpr bool ST = decltype(mode)::steady;
    constexpr bool INNER = ST && STEADY_INNER;  // no plane at an x wall (yee_march.cuh)
    const int par = decltype(mode)::ipar >= 0 ? decltype(mode)::ipar : (i & 1);
    const bool act = ALL_ACTIVE || active;
#if NRING
    const int slot1 = (i + 1) % (TH + 1);  // plane X0 + i's slot; level s reads slot1 - s's
    if (act && (ST || i < NXW)) {  // plane X0 + i: its first E update is level 1's next iteration
      const int slot = slot1;
      FOR_K {
        const IDXT at = col[k] + (IDXT)i * plane;
#if CBOX  // inside the coefficients' box: its arrays; outside: the background
        const bool inb = INBOX(X0 + i, gy[k], gz);
        const IDXT bat = inb ? BIDX(X0 + i, gy[k], gz) : 0;
#endif
#if RING_CA >= 0
        RING_FILL(RING_CA, CA_KIND, ca, CA_BGV)
#endif
#if RING_CB >= 0
        RING_FILL(RING_CB, CB_KIND, cb, CB_BGV)
#endif
#if RING_PEC >= 0
        RING_FILL(RING_PEC, PEC_KIND, pec, PEC_BGV)
#endif
      }
    }
#endif
#if PSI_PREF  // (yee_cpml.cuh)
    PSI_PREFETCH(i, ST, act)
#endif
#if NRING || PSI_PREF
    cp_async_commit_wait1();
#endif
    REAL ef[RY][3], hin[RY][3];  // level s's inputs: E^{s-1}(q), H^{s-1}(q)
    FOR_K {
      if (act && (ST || i < NXW)) {
        for (int c = 0; c < 3; ++c) { ef[k][c] = NEXT(c, k); hin[k][c] = NEXT(3 + c, k); }
      } else {
        for (int c = 0; c < 3; ++c) ef[k][c] = hin[k][c] = (REAL)0;
      }
    }
#pragma unroll
    for (int s = 1; s <= TH; ++s) {
      if (s == PREFETCH_LEVEL) {  // plane i + 1, read while the levels from this one work
        FOR_K {
          if (act && (ST || i + 1 < NXW)) {
            const IDXT at = col[k] + (i + 1) * plane;
            LOAD_NEXT(k, at);
          }
        }
      }
      if (!ST && (i < s - 1 || i > NXW - 1 + s)) continue;  // uniform over the CTA
      const int ql = i - s + 1;                             // the march's own plane count
      const int q = X0 + ql;                                // the grid's plane
      const int set = decltype(mode)::tpar >= 0 ? (decltype(mode)::tpar + s - 1) & 1 : task & 1;
      ++task;
      const bool do_e = act && (ST || (ql >= 1 && ql <= NXW));  // E update, H completion on q - 1
      const bool do_h = act && (ST || ql <= NXW - 1);           // H start on plane q
      const int p = q - 1;
      const int cring = chain_slot(i, s);  // the psi chains' slot in shared memory (yee_cpml.cuh)
#if TFSF
      const bool tf_px = TF_NEAR(p, NX, TF_G0_LO, TF_G0_HI);
#endif
      const bool out_p = X_OWN(p, ql - 1), out_q = X_OWN(q, ql);  // written planes
      REAL hc[RY][3];
      FOR_K {
        hc[k][0] = hp[s][k][0]; hc[k][1] = hp[s][k][1]; hc[k][2] = hp[s][k][2];
        if (!INNER && X_ISNX(q, ql)) {  // E^{s-1}(NX) is the wrapped plane 0: the input, then 0 (the wall);
          // a shard without plane 0 takes 0 (what the wall leaves after the first step)
          const bool has0 = xoff <= 0 && xoff + NXA > 0;
          const IDXT at0 = col[k] - (IDXT)X0 * plane;  // IDX(0, gy, gz)
          ef[k][1] = (s == 1 && active && has0) ? ey[at0] : (REAL)0;
          ef[k][2] = (s == 1 && active && has0) ? ez[at0] : (REAL)0;
        }
        // a. H^s(q-1): the x differences, -dt (-dx Ez) on Hy and -dt (dx Ey) on Hz
        if (do_e && LIVE(k, s)) {
          REAL dxEz = (ef[k][2] - eo[s][k][2]) * DXS, dxEy = (ef[k][1] - eo[s][k][1]) * DXS;
#if PML0
          if (INSLAB(p, NX, L0)) {
            const REAL mH = (!INNER && p == NX - 1) ? (REAL)0 : (REAL)1;
            const REAL b = pH0[p], c = pH0[NX + p], kp = pH0[2 * NX + p];
            const IDXT pi = PIDX0(p, gy[k], gz);
            dxEz += cpml_term(chx[k], cring, par, s, 1, (ef[k][2] * mH - eo[s][k][2]) * inv_dx, b, c, kp,
                              KAPPA0, pin_H0_2, pout_H0_2, pi, own[k] && out_p);
            dxEy += cpml_term(chx[k], cring, par, s, 0, (ef[k][1] * mH - eo[s][k][1]) * inv_dx, b, c, kp,
                              KAPPA0, pin_H0_1, pout_H0_1, pi, own[k] && out_p);
          }
#endif
          hc[k][1] = hc[k][1] + DTS * dxEz;
          hc[k][2] = hc[k][2] - DTS * dxEy;
#if TFSF  // the TF/SF correction of H: the incident E at step n + s - 1
          if (tf_yz[k] && tf_px)
#pragma unroll
            for (int c = 0; c < 3; ++c) hc[k][c] -= dt * tf_corr(tinc, s, 0, c, p, gy[k], gz);
#endif
        }
        // b. H^s(q-1) and E^{s-1}(q) to shared memory
        if (act) {
          BUF(set, 0, cell[k]) = ef[k][0]; BUF(set, 1, cell[k]) = ef[k][1];
          BUF(set, 2, cell[k]) = ef[k][2]; BUF(set, 3, cell[k]) = hc[k][0];
          BUF(set, 4, cell[k]) = hc[k][1]; BUF(set, 5, cell[k]) = hc[k][2];
        }
      }
      __syncthreads();
      REAL en[RY][3];
#if TFSF
      REAL tce[RY][3];
#endif
      FOR_K {
        en[k][0] = eo[s][k][0]; en[k][1] = eo[s][k][1]; en[k][2] = eo[s][k][2];
        // c. E^s(q-1) = ca E + cb curl H (backward differences)
        if (do_e && LIVE(k, s)) {
          const int cy = cell[k] + dym[k], cz = cell[k] + dzm;
          const REAL hxm_y = BUF(set, 3, cy), hxm_z = BUF(set, 3, cz);
          const REAL hym_z = BUF(set, 4, cz), hzm_y = BUF(set, 5, cy);
          const REAL hym_x = (!INNER && X_IS0(p, ql - 1)) ? (REAL)0 : hprev[s][k][0];
          const REAL hzm_x = (!INNER && X_IS0(p, ql - 1)) ? (REAL)0 : hprev[s][k][1];
          REAL dyHz = (hc[k][2] - hzm_y) * DXS, dzHy = (hc[k][1] - hym_z) * DXS;
          REAL dzHx = (hc[k][0] - hxm_z) * DXS, dxHz = (hc[k][2] - hzm_x) * DXS;
          REAL dxHy = (hc[k][1] - hym_x) * DXS, dyHx = (hc[k][0] - hxm_y) * DXS;
#if PML0
          if (INSLAB(p, NX, L0)) {
            const REAL mE = (!INNER && p == 0) ? (REAL)0 : (REAL)1;
            const REAL b = pE0[p], c = pE0[NX + p], kp = pE0[2 * NX + p];
            const IDXT pi = PIDX0(p, gy[k], gz);
            dxHz += cpml_term(chx[k], cring, par, s, 3, (hc[k][2] - hzm_x * mE) * inv_dx, b, c, kp, KAPPA0,
                              pin_E0_2, pout_E0_2, pi, own[k] && out_p);
            dxHy += cpml_term(chx[k], cring, par, s, 2, (hc[k][1] - hym_x * mE) * inv_dx, b, c, kp, KAPPA0,
                              pin_E0_1, pout_E0_1, pi, own[k] && out_p);
          }
#endif
#if PML1
          if (INSLAB(gy[k], NY, L1)) {
            const int g = gy[k];
#if PROFILE_REGS
            const REAL b = py1[k][0], c = py1[k][1], kp = py1[k][2];
#else
            const REAL b = pE1[g], c = pE1[NY + g], kp = pE1[2 * NY + g];
#endif
            const REAL m = (g == 0) ? (REAL)0 : (REAL)1;
            const IDXT pi = PIDX1(p, g, gz);
            dyHz += cpml_term(chy[k], cring, par, s, 3, (hc[k][2] - hzm_y * m) * inv_dx, b, c, kp, KAPPA1,
                              pin_E1_2, pout_E1_2, pi, own[k] && out_p);
            dyHx += cpml_term(chy[k], cring, par, s, 2, (hc[k][0] - hxm_y * m) * inv_dx, b, c, kp, KAPPA1,
                              pin_E1_0, pout_E1_0, pi, own[k] && out_p);
          }
#endif
#if PML2
          if (sz) {
#if PROFILE_REGS
            const REAL bEz = pz2[0], cEz = pz2[1], kEz = pz2[2];
#else
            const REAL bEz = pE2[gz], cEz = pE2[NZ + gz], kEz = pE2[2 * NZ + gz];
#endif
            const REAL mEz = (gz == 0) ? (REAL)0 : (REAL)1;
            const IDXT pi = PIDX2(p, gy[k], gz);
            dzHy += cpml_term(chz[k], cring, par, s, 3, (hc[k][1] - hym_z * mEz) * inv_dx, bEz, cEz, kEz,
                              KAPPA2, pin_E2_1, pout_E2_1, pi, own[k] && out_p);
            dzHx += cpml_term(chz[k], cring, par, s, 2, (hc[k][0] - hxm_z * mEz) * inv_dx, bEz, cEz, kEz,
                              KAPPA2, pin_E2_0, pout_E2_0, pi, own[k] && out_p);
          }
#endif
          const int gyk = gy[k];
#if TFSF  // the TF/SF correction of curl H: the incident H at step n + s - 1/2
          const bool tf_here = tf_yz[k] && tf_px;
#pragma unroll
          for (int c = 0; c < 3; ++c) tce[k][c] = tf_here ? tf_corr(tinc, s, 1, c, p, gyk, gz) : (REAL)0;
#endif
#if NRING
          const int slot = slot1 - s + (slot1 < s ? TH + 1 : 0);  // plane p's: (i - s + 1) % (TH + 1)
#endif
#if RING_CA >= 0
#define CAE(c) RING(slot, RING_CA + (CA_KIND == 2 ? (c) : 0), k)
#else
#define CAE(c) CA(c, p, gyk, gz)
#endif
#if RING_CB >= 0
#define CBE(c) RING(slot, RING_CB + (CB_KIND == 2 ? (c) : 0), k)
#else
#define CBE(c) CB(c, p, gyk, gz)
#endif
#if NJ
          const IDXT atj = col[k] + (IDXT)(p - X0) * plane;
#define JPREV(b) ((s == 1) ? jin[b][atj] : chj[k].v[par ^ 1][s - 1][b])
#endif
#if NPOLE  // Ampere's law: -(1/2) sum (1 + k) J^{s-1}, J^{s-1} of this plane
          REAL jold[NPOLE][3], jsum[3] = {(REAL)0, (REAL)0, (REAL)0};
#pragma unroll
          for (int m = 0; m < NPOLE; ++m)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
              jold[m][c] = JPREV(m * 3 + c);
              jsum[c] += ((REAL)1 + POLE_COEF(pk, PK_KIND, m, c, p, gyk, gz)) * jold[m][c];
            }
#define J_E(c) -(REAL)0.5 * jsum[c]
#else
#define J_E(c)
#endif
#if NLOR  // P^s = c1 P^{s-1} + c2 P^{s-2} + c3 E^{s-1}; Ampere's law: -(P^s - P^{s-1}) / dt
          REAL lnew[NLOR][3], lold[NLOR][3], lsum[3] = {(REAL)0, (REAL)0, (REAL)0};
#pragma unroll
          for (int m = 0; m < NLOR; ++m)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
              lold[m][c] = JPREV(LSLOT(m, c));
              lnew[m][c] = lc[2 * m] * lold[m][c] + lc[2 * m + 1] * JPREV(LSLOT(m, c) + 1) +
                           POLE_COEF(l3, L3_KIND, m, c, p, gyk, gz) * eo[s][k][c];
              lsum[c] += lnew[m][c] - lold[m][c];
            }
#define L_E(c) -lsum[c] / dt
#else
#define L_E(c)
#endif
          en[k][0] = CAE(0) * eo[s][k][0] + CBS(0) * (dyHz - dzHy TF_E(0) J_E(0) L_E(0));
          en[k][1] = CAE(1) * eo[s][k][1] + CBS(1) * (dzHx - dxHz TF_E(1) J_E(1) L_E(1));
          en[k][2] = CAE(2) * eo[s][k][2] + CBS(2) * (dxHy - dyHx TF_E(2) J_E(2) L_E(2));
#if WALL0
          if (!INNER && X_IS0(p, ql - 1)) { en[k][1] = (REAL)0; en[k][2] = (REAL)0; }
#endif
#if WALL1
          if (gyk == 0) { en[k][0] = (REAL)0; en[k][2] = (REAL)0; }
#endif
#if WALL2
          if (gz == 0) { en[k][0] = (REAL)0; en[k][1] = (REAL)0; }
#endif
#ifdef PEC_KIND
#if RING_PEC >= 0
#define KEEPE(c) RING(slot, RING_PEC + (PEC_KIND == 2 ? (c) : 0), k)
#else
#define KEEPE(c) KEEP(c, p, gyk, gz)
#endif
          en[k][0] *= KEEPE(0);
          en[k][1] *= KEEPE(1);
          en[k][2] *= KEEPE(2);
#endif
#if NPOLE  // J^s = k J^{s-1} + beta (E^s + E^{s-1}), E before the point sources
#pragma unroll
          for (int m = 0; m < NPOLE; ++m)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
              const REAL jn = POLE_COEF(pk, PK_KIND, m, c, p, gyk, gz) * jold[m][c] +
                              POLE_COEF(pb, PB_KIND, m, c, p, gyk, gz) * (en[k][c] + eo[s][k][c]);
              if (s == TH) {
                if (own[k] && out_p) jout[m * 3 + c][atj] = jn;
              } else {
                chj[k].v[par][s][m * 3 + c] = jn;
              }
            }
#endif
#if NLOR
#pragma unroll
          for (int m = 0; m < NLOR; ++m)
#pragma unroll
            for (int c = 0; c < 3; ++c) {
              const int b = LSLOT(m, c);
              if (s == TH) {
                if (own[k] && out_p) { jout[b][atj] = lnew[m][c]; jout[b + 1][atj] = lold[m][c]; }
              } else {
                chj[k].v[par][s][b] = lnew[m][c];
                chj[k].v[par][s][b + 1] = lold[m][c];
              }
            }
#endif
          // point sources, probes and monitor boxes: on the planes of no steady iteration
#if NSRC
          if (!ST) {
            SOURCES
          }
#endif
#if NPROBE
          if (!ST && own[k] && out_p) {
            PROBES
          }
#endif
#if NBOX
          // the boxes this cell is in: rare, so the loop costs only there
          const unsigned long long bits = (!ST && own[k] && out_p) ? XMASK[p] & yzm[k] : 0ull;
          if (bits) record_boxes(bits, mrec, s, p, gyk, gz, en[k][0], en[k][1], en[k][2], hc[k][0], hc[k][1], hc[k][2]);
#endif
        }
        // d. H^s(q) without its x difference: H^{s-1} - dt (y/z parts of curl E^{s-1})
        REAL hn[3] = {(REAL)0, (REAL)0, (REAL)0};
        if (do_h && LIVE(k, s)) {
          const int cy = cell[k] + dyp[k], cz = cell[k] + dzp;
          REAL exp_y = BUF(set, 0, cy), exp_z = BUF(set, 0, cz);
          REAL eyp_z = BUF(set, 1, cz), ezp_y = BUF(set, 2, cy);
#if WALLWIN == 1  // past the last row, the wall's: E^{s-1}(y = 0), the input, then 0 (the wall)
          if (gy[k] == NY - 1) {
            const IDXT at0 = col[k] + (IDXT)(q - X0) * plane - (IDXT)gy[k] * NZ;  // IDX(q, 0, gz)
            exp_y = (s == 1) ? ex[at0] : (REAL)0;
            ezp_y = (s == 1) ? ez[at0] : (REAL)0;
          }
#elif WALLWIN == 2  // past the last z, E^{s-1}(z = 0) likewise
          if (gz == NZ - 1) {
            const IDXT at0 = col[k] + (IDXT)(q - X0) * plane - gz;  // IDX(q, gy, 0)
            exp_z = (s == 1) ? ex[at0] : (REAL)0;
            eyp_z = (s == 1) ? ey[at0] : (REAL)0;
          }
#endif
          REAL dyEz = (ezp_y - ef[k][2]) * DXS, dzEy = (eyp_z - ef[k][1]) * DXS;
          REAL dzEx = (exp_z - ef[k][0]) * DXS, dyEx = (exp_y - ef[k][0]) * DXS;
#if PML1
          if (INSLAB(gy[k], NY, L1)) {
            const int g = gy[k];
#if PROFILE_REGS
            const REAL b = py1[k][3], c = py1[k][4], kp = py1[k][5];
#else
            const REAL b = pH1[g], c = pH1[NY + g], kp = pH1[2 * NY + g];
#endif
            const REAL m = (g == NY - 1) ? (REAL)0 : (REAL)1;
            const IDXT pi = PIDX1(q, g, gz);
            dyEz += cpml_term(chy[k], cring, par, s, 1, (ezp_y * m - ef[k][2]) * inv_dx, b, c, kp, KAPPA1,
                              pin_H1_2, pout_H1_2, pi, own[k] && out_q);
            dyEx += cpml_term(chy[k], cring, par, s, 0, (exp_y * m - ef[k][0]) * inv_dx, b, c, kp, KAPPA1,
                              pin_H1_0, pout_H1_0, pi, own[k] && out_q);
          }
#endif
#if PML2
          if (sz) {
#if PROFILE_REGS
            const REAL bHz = pz2[3], cHz = pz2[4], kHz = pz2[5];
#else
            const REAL bHz = pH2[gz], cHz = pH2[NZ + gz], kHz = pH2[2 * NZ + gz];
#endif
            const REAL mHz = (gz == NZ - 1) ? (REAL)0 : (REAL)1;
            const IDXT pi = PIDX2(q, gy[k], gz);
            dzEy += cpml_term(chz[k], cring, par, s, 1, (eyp_z * mHz - ef[k][1]) * inv_dx, bHz, cHz, kHz,
                              KAPPA2, pin_H2_1, pout_H2_1, pi, own[k] && out_q);
            dzEx += cpml_term(chz[k], cring, par, s, 0, (exp_z * mHz - ef[k][0]) * inv_dx, bHz, cHz, kHz,
                              KAPPA2, pin_H2_0, pout_H2_0, pi, own[k] && out_q);
          }
#endif
          hn[0] = hin[k][0] - DTS * (dyEz - dzEy);
          hn[1] = hin[k][1] - DTS * dzEx;
          hn[2] = hin[k][2] + DTS * dyEx;
        }
        // carry: this level's state for the next iteration, the next level's inputs
        eo[s][k][0] = ef[k][0]; eo[s][k][1] = ef[k][1]; eo[s][k][2] = ef[k][2];
        hp[s][k][0] = hn[0]; hp[s][k][1] = hn[1]; hp[s][k][2] = hn[2];
        hprev[s][k][0] = hc[k][1]; hprev[s][k][1] = hc[k][2];
        if (s == TH) {
          if (own[k] && do_e && out_p) {
            const IDXT at = col[k] + (IDXT)(p - X0) * plane;
            ex_out[at] = en[k][0]; ey_out[at] = en[k][1]; ez_out[at] = en[k][2];
            hx_out[at] = hc[k][0]; hy_out[at] = hc[k][1]; hz_out[at] = hc[k][2];
          }
        } else {
          ef[k][0] = en[k][0]; ef[k][1] = en[k][1]; ef[k][2] = en[k][2];
          hin[k][0] = hc[k][0]; hin[k][1] = hc[k][1]; hin[k][2] = hc[k][2];
        }
      }
    }
  };
#if PSI_PREF
  PSI_PREFETCH(-1, false, ALL_ACTIVE || active)
  cp_async_commit();
#endif
  march(iteration, task, X0, NXW);  // (yee_march.cuh)
}
