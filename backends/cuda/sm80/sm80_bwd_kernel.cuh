/* The cuda-sm80 backward's main kernel (FlashAttention-2 structure), included by one .cu per head dim.
 *
 * A CTA owns BN keys (128; 64 at d256) of one (batch, KV head): their K and V stay in shared memory
 * while the Q and dO blocks (BM = 64 rows; 128 at d64 where shared memory allows) of every query head
 * of the group stream through two buffers, each landing by cp.async while the previous block is
 * computed. The 8 warps form a 4 x 2 grid, each GEMM laid out so that a warp's tile is close to square
 * (shared-memory reads per MMA are then lowest); keys are MMA rows in the first two, so that P^T and
 * dS^T come out transposed:
 *   S^T  = K Q^T      warp: BN/4 keys x BM/2 rows  (A: K by ldmatrix, B: Q by ldmatrix)
 *   P^T  = 2^(S^T * log2e * scale - LSE_2) with the mask, in 16 bits: A fragments and shared memory
 *   dV  += P^T dO     the warp's BM/2 rows, dims D/2 of its half (A: P^T in registers, B: dO by .trans)
 *   dP^T = V dO^T     as S^T                     (A: V, B: dO)
 *   dS^T = P^T (dP^T - D) (times 1 - tanh^2 under softcap), 16 bits: A fragments and shared memory
 *   dK  += dS^T Q     as the dV step             (A: dS^T in registers, B: Q by .trans)
 *   -- barrier --
 *   dV, dK += the other BM/2 rows' part, with P^T and dS^T of the warp of the same keys from shared memory
 *   dQ  += dS K       warp: 32 rows x D/4 dims (d96: 16 x 48; d64 at 128 rows: 32 x 32)
 *                     (A: dS^T by ldmatrix.trans, B: K too)
 * dK and dV sum in registers across every block; dQ is added to the fp32 dQ sums atomically, or in
 * deterministic mode with plain adds into a slice the CTA alone writes (it then visits the key
 * blocks of its slice one after another, so every sum has a fixed order). */
#ifndef PORTATTN_SM80_BWD_KERNEL_CUH
#define PORTATTN_SM80_BWD_KERNEL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "block.h" /* pa_bwd_row_blocks */
#include "cuda_bwd_rows.cuh" /* pa_bwd_seq_of, pa_bwd_row, pa_bwd_ws_row */
#include "cuda_attr.cuh"
#include "seqlen.h"
#include "sm80_bwd.h"
#include "sm80_ptx.cuh"

/* sm80_swz's byte offset, written so that the chunk's bits above the swizzle (which the XOR with
 * row & 7 leaves alone) stay a compile-time offset: an unrolled loop then needs one address
 * register per distinct low part, not one per chunk. */
template <int PITCH>
__device__ __forceinline__ uint32_t sm80b_swz(int row, int ch)
{
    return (uint32_t)(row * PITCH * 16 + ((ch & ~7) << 4) + (((ch ^ row) & 7) << 4));
}

/* 16-byte chunks of a D-wide row, and of its shared memory row: padded to a multiple of 8 for the
 * swizzle (d96: 12 of 16; the pad chunks are never written or read). */
template <int D>
struct pa_bwd_row_shape {
    static constexpr int CH = D / 8, PITCH = (CH + 7) / 8 * 8;
};

/* ROWS x D tile whose first row is g into shared memory, zeros from row `rows` on. Each thread copies one
 * 16-byte column chunk of every RS-th row (RS a multiple of 8, so its swizzled column is the same on every
 * pass); the threads of pad chunks idle. A row past the end reads nothing (its source is g, in bounds). */
template <typename T, int ROWS, int D, int NT>
__device__ __forceinline__ void sm80b_load(uint32_t sdst, const T *g, int64_t rstride, int rows, int tid)
{
    constexpr int CH = pa_bwd_row_shape<D>::CH, PITCH = pa_bwd_row_shape<D>::PITCH, RS = NT / PITCH;
    static_assert(NT % PITCH == 0 && RS % 8 == 0 && ROWS % RS == 0, "load shape");
    const int r = tid / PITCH, c = tid % PITCH;
    if (CH != PITCH && c >= CH) return;
    const T *src = g + (int64_t)r * rstride + c * 8;
    const uint32_t dst = sdst + sm80b_swz<PITCH>(r, c);
#pragma unroll
    for (int k = 0; k < ROWS / RS; ++k) {
        const bool ok = r + k * RS < rows;
        sm80_cp_async16(dst + k * RS * PITCH * 16, ok ? src : g, ok);
        src += RS * rstride;
    }
}

/* ldmatrix addressing. Lane l's row address for the 16 x 16 fragment at (row r0, chunk c0) of a shared
 * tile is tile + swz(r0 + lr, c0 + lc), (lr, lc) the lane's place in the fragment, one of two patterns:
 *   X: lr = l & 15, lc = l >> 4                  A of a tile stored [m][k]; B pair of one stored [k][n] (.trans)
 *   Y: lr = (l & 7) + 8 (l >> 4), lc = (l >> 3) & 1   B pair of a tile stored [n][k]; A of one stored [k][m] (.trans)
 * With r0 a multiple of 8 the row's swizzle bits are the lane's, and while c0's low three bits and the
 * lane's chunk (plus any runtime chunk offset c folded in) have no bit in common, swz(r0 + lr, c0 + lc + c)
 * is swz(lr, lc + c) with c0 & 7 XORed into its swizzle bits (4..6) plus a plain offset. A tile base
 * aligned to 128 bytes (every tile here) then gives each fragment from the lane's address by one XOR with
 * a constant and an immediate offset, instead of the swizzle arithmetic per load. The XOR works on
 * offsets from the start of the kernel's shared memory; the base (one uniform register) is added last. */
template <int PITCH, bool Y>
__device__ __forceinline__ uint32_t sm80b_lane(uint32_t tile, int c, int lane)
{
    const int lr = Y ? (lane & 7) + ((lane >> 4) << 3) : lane & 15, lc = Y ? (lane >> 3) & 1 : lane >> 4;
    return tile + sm80b_swz<PITCH>(lr, lc + c);
}
template <int PITCH>
__device__ __forceinline__ uint32_t sm80b_fa(uint32_t la, int r0, int c0)
{
    return (la ^ (uint32_t)((c0 & 7) << 4)) + (uint32_t)(r0 * PITCH * 16 + ((c0 & ~7) << 4));
}
/* The same fragment where the bits may meet (d96's 6-chunk dim splits): the whole swizzle per load. */
template <int PITCH, bool Y, bool XOR>
__device__ __forceinline__ uint32_t sm80b_fa_any(uint32_t tile, uint32_t la, int c, int r0, int c0, int lane)
{
    if constexpr (XOR) return sm80b_fa<PITCH>(la, r0, c0);
    else return sm80b_lane<PITCH, Y>(tile, c + c0, lane) + (uint32_t)(r0 * PITCH * 16);
}

/* acc = X Y^T for MX * 16 rows of X and NQ * 8 rows of Y, both D wide, from lane addresses xa (pattern X)
 * and ya (pattern Y): S^T = K Q^T and dP^T = V dO^T. acc[m][j] is rows 16 m.., columns 8 j..; the depth
 * loop is unrolled, so every load is an XOR with a constant and an immediate off xa or ya. */
template <typename T, int D, int MX, int NQ>
__device__ __forceinline__ void sm80b_xyt(float (&acc)[MX][NQ][4], uint32_t sb, uint32_t xa, uint32_t ya)
{
    constexpr int PITCH = pa_bwd_row_shape<D>::PITCH;
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int j = 0; j < NQ; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
    /* d256's 16 steps in groups of 4 (the XOR pattern's period): unrolled whole, ptxas hoists enough loads
     * to spill beside dK/dV. */
    [[maybe_unused]] constexpr int UNROLL = D > 128 ? 4 : D / 16; /* the simulator ignores the pragma */
#pragma unroll UNROLL
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t af[MX][4];
#pragma unroll
        for (int m = 0; m < MX; ++m) sm80_ldsm_x4(af[m], sb + sm80b_fa<PITCH>(xa, 16 * m, 2 * kc));
#pragma unroll
        for (int j = 0; j < NQ / 2; ++j) {
            uint32_t bf[4];
            sm80_ldsm_x4(bf, sb + sm80b_fa<PITCH>(ya, 16 * j, 2 * kc));
#pragma unroll
            for (int m = 0; m < MX; ++m) {
                sm80_mma(acc[m][2 * j], af[m], bf[0], bf[1], T());
                sm80_mma(acc[m][2 * j + 1], af[m], bf[2], bf[3], T());
            }
        }
    }
}

/* acc += A Z for A the warp's MX * 16 x KS * 16 fragments (P^T or dS^T: keys x query rows) and Z the
 * KS * 16 rows of shared tile zt, DN dims from chunk zc (0 where the dim half is folded into zt):
 * dV += P^T dO, dK += dS^T Q. Z's B pairs by ldmatrix.trans (pattern X). */
template <typename T, int D, int MX, int KS, int DN>
__device__ __forceinline__ void sm80b_az(float (&acc)[MX][DN / 8][4], const uint32_t (&af)[MX][KS][4], uint32_t sb,
                                         uint32_t zt, int zc, int lane)
{
    constexpr int PITCH = pa_bwd_row_shape<D>::PITCH;
    const uint32_t la = sm80b_lane<PITCH, false>(zt, zc, lane);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int jd = 0; jd < DN / 16; ++jd) {
            uint32_t bf[4];
            sm80_ldsm_x4_trans(bf, sb + sm80b_fa_any<PITCH, false, D != 96>(zt, la, zc, ks * 16, jd * 2, lane));
#pragma unroll
            for (int m = 0; m < MX; ++m) {
                sm80_mma(acc[m][2 * jd], af[m][ks], bf[0], bf[1], T());
                sm80_mma(acc[m][2 * jd + 1], af[m][ks], bf[2], bf[3], T());
            }
        }
}

/* The A fragments of MX * 16 rows and KS * 16 columns (from chunk c) of a shared tile stored [m][k] with
 * rows of SP 16-byte chunks, from the tile's lane address at chunk 0 of row 0: P^T or dS^T of another
 * warp's query rows. */
template <int SP, int MX, int KS>
__device__ __forceinline__ void sm80b_afrags(uint32_t (&af)[MX][KS][4], uint32_t sb, uint32_t at, int c, int lane)
{
    const uint32_t la = sm80b_lane<SP, false>(at, c, lane);
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) sm80_ldsm_x4(af[m][ks], sb + sm80b_fa<SP>(la, 16 * m, 2 * ks));
}

/* dQ's columns per pass (each pass: its dS K MMAs, then its fp32 reductions): a warp's whole dQ
 * share where it fits (48 columns or fewer). -DPA_SM80_BWD_DQ_PASS=16 (CUDA flags) builds 16-column
 * passes for an A/B: the reductions of one pass would drain while the next pass's MMAs run. */
#ifndef PA_SM80_BWD_DQ_PASS
#define PA_SM80_BWD_DQ_PASS 48
#endif

/* The main kernel's shape. Warp w works as (kg, rh) = (w % 4, w / 4): S^T and dP^T for key quarter kg
 * (KW = BN / 4 keys) and row half rh (QH of the BM rows), both read from shared memory once per block;
 * dK and dV for the same keys and dim half rh, over all BM rows, with the other half's P^T and dS^T read
 * back from shared memory. dQ: WQM row groups of MQ 16-row tiles x DQC dims, in passes of DQP dims (a
 * pass must be a multiple of 16 dims: d96 takes 4 x 2; d64 at 128 rows 4 x 2, 32 rows x 32 dims a
 * warp). Shared memory: K, V (KVB each), two buffers of Q and of dO (QB each), P^T and dS^T (BN rows of
 * BM 16-bit values: SP 16-byte chunks, swizzled), then two buffers of the rows' LSE_2 and of D. */
template <int D, int BM_>
struct sm80b_shape {
    static constexpr int BM = BM_, BN = PA_SM80_BWD_BN(D), NW = PA_SM80_BWD_WARPS, NT = NW * 32;
    static constexpr int PITCH = pa_bwd_row_shape<D>::PITCH; /* 16-byte chunks per shared row */
    static constexpr int KW = BN / 4, MX = KW / 16, QH = BM / 2, NQ = QH / 8, DH = D / 2, SP = BM / 8;
    static constexpr int WQM = BM == 128 || (D / 4) % 16 != 0 ? 4 : 2, MQ = BM / WQM / 16, DQC = D / (NW / WQM);
    static constexpr int DQP = DQC <= 48 ? (DQC % PA_SM80_BWD_DQ_PASS == 0 ? PA_SM80_BWD_DQ_PASS : DQC) : 32;
    static constexpr int KVB = BN * PITCH * 16, QB = BM * PITCH * 16, SB = BN * BM * 2;
    static constexpr int O_V = KVB, O_Q = 2 * KVB, O_DO = O_Q + 2 * QB, O_PT = O_DO + 2 * QB, O_DS = O_PT + SB,
                         O_L = O_DS + SB;
    /* A row or chunk offset that is a multiple of 8 leaves the swizzle's low bits alone, so the dK/dV
     * dim half (at d128 and d256 a multiple of 8 chunks) folds into the tile offset. */
    static constexpr bool DFOLD = (DH / 8) % 8 == 0;
    static_assert(NW == 8 && (BM == 64 || BM == 128) && KW % 16 == 0 && DH % 16 == 0 && DQC % DQP == 0 &&
                      DQP % 16 == 0 && SP == 2 * NQ,
                  "shape");
    static_assert(O_L + 4 * BM * 4 == PA_SM80_BWD_SMEM(D, BM), "smem size");
};

/* One thread's place: lane, its quad (g, t), the warp's keys kw and row half rh (rows r0..) in the block. */
struct sm80b_thread {
    int lane, warp, g, t, kw, rh, r0;
};

/* One item (query head h, rows m0..): Q, dO and the rows' LSE_2 and D into buffer `buf`. */
template <typename T, int D, int BM>
__device__ __forceinline__ void sm80b_load_item(const pa_bwd_args &a, uint32_t sb, const T *qb, const T *dob, int b,
                                                int h, int m0, int sq, int buf, int tid)
{
    using S = sm80b_shape<D, BM>;
    const pa_fwd_args &f = a.f;
    sm80b_load<T, S::BM, D, S::NT>(sb + S::O_Q + buf * S::QB, qb + (int64_t)h * f.qs[2] + (int64_t)m0 * f.qs[1],
                                   f.qs[1], sq - m0, tid);
    sm80b_load<T, S::BM, D, S::NT>(sb + S::O_DO + buf * S::QB, dob + (int64_t)h * a.dos[2] + (int64_t)m0 * a.dos[1],
                                   a.dos[1], sq - m0, tid);
    if (tid < S::BM / 2) { /* 16-byte pieces: BM / 4 of LSE_2, BM / 4 of D */
        const int part = tid / (S::BM / 4), c = tid % (S::BM / 4);
        const float *src = (part ? a.delta : a.lse2) + pa_bwd_ws_row(a, 0, b, h) + m0 + c * 4;
        sm80_cp_async16(sb + S::O_L + ((part * 2 + buf) * S::BM + c * 4) * 4, src, true);
    }
}

/* The mask of one item for the thread's first key k1 = n0 + kw + g and row r1 = m0 + r0 + 2 t: bounds on
 * an element's key offset minus row offset (the window), and on each alone (sk, sq), so that an element
 * at compile-time offsets (ko, ro) from the thread's first is tested against constants. */
struct sm80b_mask {
    int lo, hi, kl, rl;
    __device__ __forceinline__ bool out(int ko, int ro) const { return ko - ro < lo || ko - ro > hi || ko >= kl || ro >= rl; }
};

/* The thread's two words of (m, j) (keys g and g + 8 of the 16-key tile m, rows 8 j + 2 t..) into a
 * shared P^T or dS^T tile (rows of SP 16-byte chunks), `st` the offset of its (0, 0) word: j moves it
 * by a chunk, an XOR. */
template <int SP>
__device__ __forceinline__ void sm80b_store_pair(uint8_t *smem, uint32_t st, int m, int j, const uint32_t *w)
{
    const uint32_t o = (st ^ (uint32_t)(j << 4)) + m * 16 * SP * 16;
    *(uint32_t *)(smem + o) = w[0];
    *(uint32_t *)(smem + o + 8 * SP * 16) = w[1];
}

/* P^T = 2^(S^T scaled - LSE_2) for the warp's keys x rows, masked, in place; in 16 bits as A fragments pp
 * and into shared P^T (for the warp of the same keys, which takes the other dims). Under softcap the
 * score's derivative 1 - tanh^2 is folded into the fp32 P^T after packing (dS needs it, dV not). Element
 * (m, j, e): key n0 + kw + 16 m + g + 8 (e >> 1), row m0 + r0 + 8 j + 2 t + (e & 1). `st`: the byte
 * offset of the thread's (m, j) = (0, 0) word in the shared tile (sm80b_store_pair). MASK
 * (a tile some element of which is masked) and TRANSFORM (a score map other than a scale: softcap) are
 * compile-time, so that the common tile runs neither test per element. */
template <typename T, bool MASK, bool TRANSFORM, int MX, int NQ>
__device__ __forceinline__ void sm80b_probs(float (&p)[MX][NQ][4], uint32_t (&pp)[MX][NQ / 2][4], const pa_fwd_args &f,
                                            const float *lse, const sm80b_thread &w, sm80b_mask mk, uint8_t *smem,
                                            uint32_t st)
{
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int j = 0; j < NQ; ++j) {
            const float2 l2 = *(const float2 *)(lse + w.r0 + j * 8 + 2 * w.t);
            float fac[4] = {1.f, 1.f, 1.f, 1.f};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float x = p[m][j][e], lrow = (e & 1) ? l2.y : l2.x;
                float pe;
                if (TRANSFORM) {
                    float z = x * f.pre_mul;
                    if (f.softcap) {
                        const float th = tanhf(z);
                        z = f.post_mul * th;
                        fac[e] = 1.f - th * th;
                    }
                    pe = pa_ex2(z - lrow);
                } else {
                    pe = pa_ex2(fmaf(x, f.mult, -lrow));
                }
                if (MASK && mk.out(16 * m + 8 * (e >> 1), 8 * j + (e & 1))) pe = 0.f;
                p[m][j][e] = pe;
            }
            uint32_t *lo = &pp[m][j >> 1][(j & 1) * 2];
            lo[0] = pa_pack(p[m][j][0], p[m][j][1], T());
            lo[1] = pa_pack(p[m][j][2], p[m][j][3], T());
            sm80b_store_pair<2 * NQ>(smem, st, m, j, lo); /* tile rows: both row halves */
#pragma unroll
            for (int e = 0; e < 4; ++e) p[m][j][e] *= fac[e];
        }
}

/* dS^T = P^T (dP^T - D), in 16 bits as A fragments (over P^T's) and into shared dS^T (offset st as above). */
template <typename T, int MX, int NQ>
__device__ __forceinline__ void sm80b_dscores(uint32_t (&pp)[MX][NQ / 2][4], const float (&p)[MX][NQ][4],
                                              const float (&dp)[MX][NQ][4], const float *del, const sm80b_thread &w,
                                              uint8_t *smem, uint32_t st)
{
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int j = 0; j < NQ; ++j) {
            const float2 d2 = *(const float2 *)(del + w.r0 + j * 8 + 2 * w.t);
            uint32_t *lo = &pp[m][j >> 1][(j & 1) * 2];
            lo[0] = pa_pack(p[m][j][0] * (dp[m][j][0] - d2.x), p[m][j][1] * (dp[m][j][1] - d2.y), T());
            lo[1] = pa_pack(p[m][j][2] * (dp[m][j][2] - d2.x), p[m][j][3] * (dp[m][j][3] - d2.y), T());
            sm80b_store_pair<2 * NQ>(smem, st, m, j, lo); /* tile rows: both row halves */
        }
}

/* The dQ sums += one pass's acc (rows 16 mq + 8 r, columns 8 j + 2 t from dst): atomically, or in
 * deterministic mode with plain adds into the CTA's own slice (this thread alone writes these elements). */
template <bool DET, int D, int MQ, int NJ>
__device__ __forceinline__ void sm80b_dq_add(const float (&acc)[MQ][NJ][4], float *dst)
{
#pragma unroll
    for (int mq = 0; mq < MQ; ++mq)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                float *d = dst + (mq * 16 + r * 8) * D + j * 8; /* columns 2 t, 2 t + 1: 8-byte aligned */
                const float x = acc[mq][j][2 * r], y = acc[mq][j][2 * r + 1];
                if (DET) {
                    d[0] += x;
                    d[1] += y;
                } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                    atomicAdd((float2 *)d, make_float2(x, y)); /* one vector reduction on sm_90 */
#else
                    atomicAdd(d, x);
                    atomicAdd(d + 1, y);
#endif
                }
            }
}

/* dQ (BM x D) += dS K for one item: warp (wm, wn) takes rows 16 MQ wm.. and dims DQC wn..; dS = (dS^T)^T
 * (A by ldmatrix.trans, pattern Y) and K (B pairs by ldmatrix.trans, pattern X), added to the fp32 sums.
 * Rows past sq land in the (b, h) slot's padding rows, never read back. */
template <typename T, int D, int BM>
__device__ __forceinline__ void sm80b_dq(const pa_bwd_args &a, uint32_t sb, float *dst, const sm80b_thread &w)
{
    using S = sm80b_shape<D, BM>;
    constexpr int MQ = S::MQ, DQP = S::DQP;
    const int wm = w.warp % S::WQM, wn = w.warp / S::WQM;
    const uint32_t la_ds = sm80b_lane<S::SP, true>(S::O_DS, 2 * wm * MQ, w.lane);
    dst += (wm * MQ * 16 + w.g) * D + 2 * w.t;
#pragma unroll 1
    for (int c0 = wn * S::DQC; c0 < (wn + 1) * S::DQC; c0 += DQP) {
        const uint32_t la_k = sm80b_lane<S::PITCH, false>(0, c0 / 8, w.lane);
        float acc[MQ][DQP / 8][4];
#pragma unroll
        for (int mq = 0; mq < MQ; ++mq)
#pragma unroll
            for (int j = 0; j < DQP / 8; ++j) acc[mq][j][0] = acc[mq][j][1] = acc[mq][j][2] = acc[mq][j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < S::BN / 16; ++kk) {
            uint32_t af[MQ][4];
#pragma unroll
            for (int mq = 0; mq < MQ; ++mq) sm80_ldsm_x4_trans(af[mq], sb + sm80b_fa<S::SP>(la_ds, kk * 16, 2 * mq));
#pragma unroll
            for (int jd = 0; jd < DQP / 16; ++jd) {
                uint32_t bf[4];
                sm80_ldsm_x4_trans(bf, sb + sm80b_fa_any<S::PITCH, false, D != 96>(0, la_k, c0 / 8, kk * 16, jd * 2, w.lane));
#pragma unroll
                for (int mq = 0; mq < MQ; ++mq) {
                    sm80_mma(acc[mq][2 * jd], af[mq], bf[0], bf[1], T());
                    sm80_mma(acc[mq][2 * jd + 1], af[mq], bf[2], bf[3], T());
                }
            }
        }
        if (a.deterministic)
            sm80b_dq_add<true, D>(acc, dst + c0);
        else
            sm80b_dq_add<false, D>(acc, dst + c0);
    }
}

/* dK (times the scale) and dV of the warp's keys and dims: element (m, j, e) is key n0 + kw + 16 m + g +
 * 8 (e >> 1), dim DH rh + 8 j + 2 t + (e & 1). Keys no row sees get 0. */
template <typename T, int D, int MX>
__device__ __forceinline__ void sm80b_store_dkdv(const pa_bwd_args &a, const float (&dk)[MX][D / 16][4],
                                                 const float (&dv)[MX][D / 16][4], int b, int k0, int sk, int hk, int n0,
                                                 const sm80b_thread &w)
{
    constexpr int DH = D / 2;
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int key = n0 + w.kw + 16 * m + w.g + 8 * r;
            if (key >= sk) continue;
            const int c = w.rh * DH + 2 * w.t;
            T *dkr = (T *)a.dk + pa_bwd_row(a, a.dks[0], a.dks[1], b, k0 + key) + (int64_t)hk * a.dks[2] + c;
            T *dvr = (T *)a.dv + pa_bwd_row(a, a.dvs[0], a.dvs[1], b, k0 + key) + (int64_t)hk * a.dvs[2] + c;
#pragma unroll
            for (int j = 0; j < DH / 8; ++j) {
                *(uint32_t *)(dkr + j * 8) = pa_pack(dk[m][j][2 * r] * a.scale, dk[m][j][2 * r + 1] * a.scale, T());
                *(uint32_t *)(dvr + j * 8) = pa_pack(dv[m][j][2 * r], dv[m][j][2 * r + 1], T());
            }
        }
}

/* A CTA owns the keys of one (batch, KV head) key block at a time (blockIdx.x, stepping by gridDim.x) and
 * streams every item of it: K V resident, Q dO double-buffered, each item's loads landing while the
 * previous item is computed. */
template <typename T, int D, int BM>
__global__ void __launch_bounds__(PA_SM80_BWD_WARPS * 32, 1) sm80_bwd_main(const pa_bwd_args a)
{
    using S = sm80b_shape<D, BM>;
    constexpr int BN = S::BN, PITCH = S::PITCH, MX = S::MX, NQ = S::NQ, QH = S::QH, DH = S::DH;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sb = sm80_smem_u32(smem);
    const float *const s_lse = (const float *)(smem + S::O_L), *const s_del = s_lse + 2 * BM;
    const int tid = threadIdx.x;
    sm80b_thread w;
    w.lane = tid & 31, w.warp = tid >> 5, w.g = w.lane >> 2, w.t = w.lane & 3;
    w.kw = (w.warp & 3) * S::KW, w.rh = w.warp >> 2, w.r0 = w.rh * QH;
    const pa_fwd_args &f = a.f;

    const int b = blockIdx.z, hk = blockIdx.y, slice = a.deterministic ? (int)blockIdx.x : 0;
    const pa_bwd_seq sq_ = pa_bwd_seq_of(a, b);
    const int sq = sq_.sq, sk = sq_.sk;
    const T *qb = (const T *)f.q + pa_bwd_row(a, f.qs[0], f.qs[1], b, sq_.q0);
    const T *dob = (const T *)a.dout + pa_bwd_row(a, a.dos[0], a.dos[1], b, sq_.q0);

    /* Key j is visible to row i iff dlo <= j - i <= dhi (bottom-right aligned), j < sk and i < sq;
     * dlo/dhi clamped to the range j - i can take, so that they fit in int32. */
    const int64_t diag = (int64_t)sk - sq, span = (int64_t)sk + sq + 1;
    const int64_t dl = f.wl < 0 ? -span : diag - f.wl, dh = f.wr < 0 ? span : diag + f.wr;
    const int dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
    /* The warp's tiles as lane offsets: K, V (pattern X) at its keys; Q, dO (pattern Y) at its rows; its
     * dK/dV operands (dO, Q by .trans at the dim half: pattern X inside sm80b_az); P^T/dS^T stores. */
    const uint32_t kofs = w.kw * PITCH * 16, rofs = w.r0 * PITCH * 16, dofs = S::DFOLD ? w.rh * DH * 2 : 0;
    const int dch = S::DFOLD ? 0 : w.rh * (DH / 8);
    const uint32_t la_k = sm80b_lane<PITCH, false>(kofs, 0, w.lane), la_q = sm80b_lane<PITCH, true>(S::O_Q + rofs, 0, w.lane);
    const uint32_t st = sm80b_swz<S::SP>(w.kw + w.g, w.r0 / 8) + w.t * 4; /* the thread's P^T/dS^T word (m = j = 0) */
    const int ro = QH - w.r0; /* the other row half */

    const int nkb = (sk + BN - 1) / BN;
    for (int n = blockIdx.x; n < nkb; n += gridDim.x) {
        const int n0 = n * BN, n1 = (n0 + BN < sk ? n0 + BN : sk) - 1;
        int mb0, nm;
        pa_bwd_row_blocks(&f, sq, diag, n0, n1, BM, &mb0, &nm);
        const int nit = nm * f.group; /* (query head, row block) items, head major */

        __syncthreads(); /* every warp is done with the previous key block's tiles */
        if (nit > 0) { /* K/V addresses are formed where used: fewer registers live in the loop */
            const T *kh = (const T *)f.k + pa_bwd_row(a, f.ks[0], f.ks[1], b, sq_.k0) + (int64_t)hk * f.ks[2];
            const T *vh = (const T *)f.v + pa_bwd_row(a, f.vs[0], f.vs[1], b, sq_.k0) + (int64_t)hk * f.vs[2];
            sm80b_load<T, BN, D, S::NT>(sb, kh + (int64_t)n0 * f.ks[1], f.ks[1], sk - n0, tid);
            sm80b_load<T, BN, D, S::NT>(sb + S::O_V, vh + (int64_t)n0 * f.vs[1], f.vs[1], sk - n0, tid);
            sm80b_load_item<T, D, BM>(a, sb, qb, dob, b, hk * f.group, mb0 * BM, sq, 0, tid);
        }
        sm80_cp_async_commit();

        float dk[MX][DH / 8][4], dv[MX][DH / 8][4];
#pragma unroll
        for (int m = 0; m < MX; ++m)
#pragma unroll
            for (int j = 0; j < DH / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) dk[m][j][e] = dv[m][j][e] = 0.f;

        /* The item's query head and first row, head major: rows m0 from mb0 BM to mend, then the next head. */
        const int mend = (mb0 + nm) * BM;
        int h = hk * f.group, m0 = mb0 * BM;
        for (int it = 0; it < nit; ++it) {
            const int buf = it & 1;
            sm80_cp_async_wait<0>(); /* this item's tiles (and K, V) landed for this thread */
            __syncthreads();         /* ... for all; every warp is done with the previous item's P^T, dS^T */
            if (it + 1 < nit) {      /* its buffer was last read before the previous barrier */
                const bool wrap = m0 + BM == mend;
                sm80b_load_item<T, D, BM>(a, sb, qb, dob, b, h + wrap, wrap ? mb0 * BM : m0 + BM, sq, buf ^ 1, tid);
            }
            sm80_cp_async_commit();
            const uint32_t tq = S::O_Q + buf * S::QB, tdo = S::O_DO + buf * S::QB, bq = buf * S::QB;
            const float *lse = s_lse + buf * BM, *del = s_del + buf * BM;
            const bool full = m0 + BM <= sq && n0 + BN <= sk && (int64_t)n0 - (m0 + BM - 1) >= dlo &&
                              (int64_t)n0 + BN - 1 - m0 <= dhi;
            const int k1 = n0 + w.kw + w.g, r1 = m0 + w.r0 + 2 * w.t;
            const sm80b_mask mk = {dlo - (k1 - r1), dhi - (k1 - r1), sk - k1, sq - r1};

            float p[MX][NQ][4]; /* S^T = K Q^T, then P^T */
            sm80b_xyt<T, D>(p, sb, la_k, la_q + bq);
            uint32_t pp[MX][NQ / 2][4]; /* P^T, then dS^T, of the warp's rows in 16 bits: A fragments */
            if (full && !f.transform)
                sm80b_probs<T, false, false>(p, pp, f, lse, w, mk, smem, S::O_PT + st);
            else if (!f.transform)
                sm80b_probs<T, true, false>(p, pp, f, lse, w, mk, smem, S::O_PT + st);
            else
                sm80b_probs<T, true, true>(p, pp, f, lse, w, mk, smem, S::O_PT + st);
            sm80b_az<T, D, MX, NQ / 2, DH>(dv, pp, sb, tdo + rofs + dofs, dch, w.lane); /* dV += P^T dO, own rows */

            float dp[MX][NQ][4]; /* dP^T = V dO^T */
            sm80b_xyt<T, D>(dp, sb, la_k + S::O_V, la_q + (S::O_DO - S::O_Q) + bq);
            sm80b_dscores<T>(pp, p, dp, del, w, smem, S::O_DS + st);
            sm80b_az<T, D, MX, NQ / 2, DH>(dk, pp, sb, tq + rofs + dofs, dch, w.lane); /* dK += dS^T Q, own rows */
            __syncthreads(); /* P^T and dS^T of every warp are in shared memory */

            /* The other row half's P^T and dS^T, from the warp of the same keys. */
            sm80b_afrags<S::SP>(pp, sb, S::O_PT + w.kw * S::SP * 16, ro / 8, w.lane);
            sm80b_az<T, D, MX, NQ / 2, DH>(dv, pp, sb, tdo + ro * PITCH * 16 + dofs, dch, w.lane);
            sm80b_afrags<S::SP>(pp, sb, S::O_DS + w.kw * S::SP * 16, ro / 8, w.lane);
            sm80b_az<T, D, MX, NQ / 2, DH>(dk, pp, sb, tq + ro * PITCH * 16 + dofs, dch, w.lane);

            sm80b_dq<T, D, BM>(a, sb, a.dq_acc + (pa_bwd_ws_row(a, slice, b, h) + m0) * D, w);
            m0 += BM;
            if (m0 == mend) m0 = mb0 * BM, ++h;
        }
        sm80b_store_dkdv<T, D>(a, dk, dv, b, sq_.k0, sk, hk, n0, w);
    }
}

#endif
