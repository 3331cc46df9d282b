/* The cuda-sm80 backward's main kernel (FlashAttention-2 structure), included by one .cu per head dim.
 *
 * A CTA owns BN keys (128; 64 at d256) of one (batch, KV head): their K and V stay in shared memory
 * while the Q and dO blocks (BM = 64 rows) of every query head of the group stream through two
 * buffers, each landing by cp.async while the previous block is computed. The 8 warps form a 4 x 2
 * grid, each GEMM laid out so that a warp's tile is close to square (shared-memory reads per MMA
 * are then lowest); keys are MMA rows in the first two, so that P^T and dS^T come out transposed:
 *   S^T  = K Q^T      warp: BN/4 keys x 32 rows  (A: K by ldmatrix, B: Q by ldmatrix)
 *   P^T  = 2^(S^T * log2e * scale - LSE_2) with the mask, in 16 bits: A fragments and shared memory
 *   dV  += P^T dO     the warp's 32 rows, dims D/2 of its half (A: P^T in registers, B: dO by .trans)
 *   dP^T = V dO^T     as S^T                     (A: V, B: dO)
 *   dS^T = P^T (dP^T - D) (times 1 - tanh^2 under softcap), 16 bits: A fragments and shared memory
 *   dK  += dS^T Q     as the dV step             (A: dS^T in registers, B: Q by .trans)
 *   -- barrier --
 *   dV, dK += the other 32 rows' part, with P^T and dS^T of the warp of the same keys from shared memory
 *   dQ  += dS K       warp: 32 rows x D/4 dims (d96: 16 x 48) (A: dS^T by ldmatrix.trans, B: K too)
 * dK and dV sum in registers across every block; dQ is added to the fp32 dQ sums atomically, or in
 * deterministic mode with plain adds into a slice the CTA alone writes (it then visits the key
 * blocks of its slice one after another, so every sum has a fixed order). */
#ifndef PORTATTN_SM80_BWD_KERNEL_CUH
#define PORTATTN_SM80_BWD_KERNEL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

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
struct sm80b_row_shape {
    static constexpr int CH = D / 8, PITCH = (CH + 7) / 8 * 8;
};

/* ROWS x D tile from rows [row0, row0 + ROWS) of a tensor into shared memory, zeros from row `limit`
 * on. Each thread copies one 16-byte column chunk of every RS-th row (RS a multiple of 8, so its
 * swizzled column is the same on every pass); the threads of pad chunks idle. */
template <typename T, int ROWS, int D, int NT>
__device__ __forceinline__ void sm80b_load(uint32_t sdst, const T *g, int64_t rstride, int row0, int limit, int tid)
{
    constexpr int CH = sm80b_row_shape<D>::CH, PITCH = sm80b_row_shape<D>::PITCH, RS = NT / PITCH;
    static_assert(NT % PITCH == 0 && RS % 8 == 0 && ROWS % RS == 0, "load shape");
    const int r = tid / PITCH, c = tid % PITCH;
    if (CH != PITCH && c >= CH) return;
    const T *src = g + (int64_t)(row0 + r) * rstride + c * 8;
    const uint32_t dst = sdst + sm80b_swz<PITCH>(r, c);
#pragma unroll
    for (int k = 0; k < ROWS / RS; ++k) {
        const bool ok = row0 + r + k * RS < limit;
        sm80_cp_async16(dst + k * RS * PITCH * 16, ok ? src : g, ok);
        src += RS * rstride;
    }
}

/* One sequence of the call: where its rows start, how many, and its batch offsets of each tensor. */
struct sm80b_seqinfo {
    int q0, sq, k0, sk;
};

__device__ __forceinline__ sm80b_seqinfo sm80b_seq_of(const sm80_bwd_args &a, int b)
{
    sm80b_seqinfo s = {0, a.f.seqlen_q, 0, a.f.seqlen_k};
    if (a.f.cu_q) {
        pa_seq_extent(a.f.cu_q, b, a.f.seqlen_q, &s.q0, &s.sq);
        pa_seq_extent(a.f.cu_k, b, a.f.seqlen_k, &s.k0, &s.sk);
    }
    if (s.sq > a.max_sq) s.sq = a.max_sq; /* the workspace holds max_sq rows per (batch, head) */
    return s;
}

/* Element offset of packed row `row` of sequence b (varlen: the batch stride is ignored). Strides by
 * value: a pointer into the kernel's parameter struct would make the compiler copy it to local memory. */
__device__ __forceinline__ int64_t sm80b_row(const sm80_bwd_args &a, int64_t bstride, int64_t rstride, int b, int row)
{
    return (a.f.cu_q ? 0 : (int64_t)b * bstride) + (int64_t)row * rstride;
}

/* Row index, in the workspace, of row 0 of (slice, batch, query head). */
__device__ __forceinline__ int64_t sm80b_ws_row(const sm80_bwd_args &a, int slice, int b, int h)
{
    return (((int64_t)slice * a.f.batch + b) * a.f.heads + h) * a.sqp;
}

/* The kernel's fragment loads. Shared tiles are row-major, PITCH 16-byte chunks per row, swizzled.
 * A fragment (16 x 16, m x k) of a tile stored [m][k], by plain ldmatrix; rows m0.., k chunk pair kc. */
template <int PITCH>
__device__ __forceinline__ void sm80b_a(uint32_t (&f)[4], uint32_t tile, int m0, int kc, int lane)
{
    sm80_ldsm_x4(f, tile + sm80b_swz<PITCH>(m0 + (lane & 15), kc * 2 + (lane >> 4)));
}
/* ... of a tile stored transposed, [k][m] (rows k0.., m chunk pair mc), by ldmatrix.trans. */
template <int PITCH>
__device__ __forceinline__ void sm80b_at(uint32_t (&f)[4], uint32_t tile, int k0, int mc, int lane)
{
    sm80_ldsm_x4_trans(f, tile + sm80b_swz<PITCH>(k0 + (lane & 7) + ((lane >> 4) << 3), mc * 2 + ((lane >> 3) & 1)));
}
/* B fragments of two 8-wide n tiles (f[0..1]: n0.., f[2..3]: n0 + 8..) of a tile stored [n][k]. */
template <int PITCH>
__device__ __forceinline__ void sm80b_b(uint32_t (&f)[4], uint32_t tile, int n0, int kc, int lane)
{
    sm80_ldsm_x4(f, tile + sm80b_swz<PITCH>(n0 + ((lane >> 4) << 3) + (lane & 7), kc * 2 + ((lane >> 3) & 1)));
}
/* ... of a tile stored [k][n] (rows k0.., n from chunk nc), by ldmatrix.trans. */
template <int PITCH>
__device__ __forceinline__ void sm80b_bt(uint32_t (&f)[4], uint32_t tile, int k0, int nc, int lane)
{
    sm80_ldsm_x4_trans(f, tile + sm80b_swz<PITCH>(k0 + (((lane >> 3) & 1) << 3) + (lane & 7), nc + (lane >> 4)));
}

/* acc = X Y^T for MX * 16 rows of X (from row x0 of shared tile xt) and NQ * 8 rows of Y (from row
 * y0 of yt), both D wide: S^T = K Q^T and dP^T = V dO^T. acc[m][j] is rows 16 m.., columns 8 j.. */
template <typename T, int D, int MX, int NQ>
__device__ __forceinline__ void sm80b_xyt(float (&acc)[MX][NQ][4], uint32_t xt, int x0, uint32_t yt, int y0, int lane)
{
    constexpr int PITCH = sm80b_row_shape<D>::PITCH;
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int j = 0; j < NQ; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
    /* Unrolled further at d <= 128, ptxas hoists enough loads and addresses to spill next to dK/dV
     * on sm_90; d256's warps hold half the keys, so they can afford 4 steps. */
    [[maybe_unused]] constexpr int UNROLL = D > 128 ? 4 : 2; /* the simulator ignores the pragma */
#pragma unroll UNROLL
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t af[MX][4];
#pragma unroll
        for (int m = 0; m < MX; ++m) sm80b_a<PITCH>(af[m], xt, x0 + 16 * m, kc, lane);
#pragma unroll
        for (int j = 0; j < NQ / 2; ++j) {
            uint32_t bf[4];
            sm80b_b<PITCH>(bf, yt, y0 + 16 * j, kc, lane);
#pragma unroll
            for (int m = 0; m < MX; ++m) {
                sm80_mma(acc[m][2 * j], af[m], bf[0], bf[1], T());
                sm80_mma(acc[m][2 * j + 1], af[m], bf[2], bf[3], T());
            }
        }
    }
}

/* acc += A Z for A the warp's MX * 16 x KS * 16 fragments (P^T or dS^T: keys x query rows) and Z the
 * KS * 16 rows of shared tile zt from row z0, DN dims from chunk zc0: dV += P^T dO, dK += dS^T Q. */
template <typename T, int D, int MX, int KS, int DN>
__device__ __forceinline__ void sm80b_az(float (&acc)[MX][DN / 8][4], const uint32_t (&af)[MX][KS][4], uint32_t zt,
                                         int z0, int zc0, int lane)
{
    constexpr int PITCH = sm80b_row_shape<D>::PITCH;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int jd = 0; jd < DN / 16; ++jd) {
            uint32_t bf[4];
            sm80b_bt<PITCH>(bf, zt, z0 + ks * 16, zc0 + jd * 2, lane);
#pragma unroll
            for (int m = 0; m < MX; ++m) {
                sm80_mma(acc[m][2 * jd], af[m][ks], bf[0], bf[1], T());
                sm80_mma(acc[m][2 * jd + 1], af[m][ks], bf[2], bf[3], T());
            }
        }
}

/* The A fragments of MX * 16 rows (from row a0) and KS * 16 columns (from chunk pair kc0) of shared
 * tile at, stored [m][k] with 128-byte rows: P^T or dS^T of another warp's query rows. */
template <int MX, int KS>
__device__ __forceinline__ void sm80b_afrags(uint32_t (&af)[MX][KS][4], uint32_t at, int a0, int kc0, int lane)
{
#pragma unroll
    for (int m = 0; m < MX; ++m)
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) sm80b_a<8>(af[m][ks], at, a0 + 16 * m, kc0 + ks, lane);
}

/* Warp w works as (kg, rh) = (w % 4, w / 4): S^T and dP^T for key quarter kg (KW = BN / 4 keys) and
 * row half rh (32 of the BM rows), both read from shared memory once per block; dK and dV for the
 * same keys and dim half rh, over all BM rows, with P^T and dS^T read back from shared memory.
 * dQ: WQM row groups x the rest in dims. */
template <typename T, int D>
__global__ void __launch_bounds__(PA_SM80_BWD_WARPS * 32, 1) sm80_bwd_main(const sm80_bwd_args a)
{
    constexpr int BM = PA_SM80_BWD_BM, BN = PA_SM80_BWD_BN(D), NW = PA_SM80_BWD_WARPS, NT = NW * 32;
    constexpr int PITCH = sm80b_row_shape<D>::PITCH; /* 16-byte chunks per shared row */
    /* Per warp: keys, their 16-row tiles, query rows, their 8-wide tiles, dims of dK/dV. */
    constexpr int KW = BN / 4, MX = KW / 16, QH = BM / 2, NQ = QH / 8, DH = D / 2;
    /* The dQ warp grid: WQM row groups of MQ 16-row tiles x DQC dims, in passes of DQP dims (a pass
     * must be a multiple of 16 dims: d96 takes 4 x 2). */
    constexpr int WQM = (D / 4) % 16 == 0 ? 2 : 4, MQ = BM / WQM / 16, DQC = D / (NW / WQM);
    constexpr int DQP = DQC <= 48 ? DQC : 32;
    constexpr int KVB = BN * PITCH * 16, QB = BM * PITCH * 16, SB = BN * BM * 2;
    static_assert(NW == 8 && BM == 64 && KW % 16 == 0 && DH % 16 == 0 && DQC % DQP == 0 && DQP % 16 == 0, "shape");
    static_assert(2 * KVB + 4 * QB + 2 * SB + 4 * BM * 4 == PA_SM80_BWD_SMEM(D), "smem size");

    /* Byte offsets of P^T, dS^T (BN rows of BM 16-bit values: 128 bytes, swizzled) and LSE_2 / D. */
    constexpr int O_PT = 2 * KVB + 4 * QB, O_DS = O_PT + SB, O_L = O_DS + SB;

    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t s_k = sm80_smem_u32(smem), s_v = s_k + KVB, s_q = s_v + KVB, s_do = s_q + 2 * QB;
    const uint32_t s_pt = s_k + O_PT, s_ds = s_k + O_DS;
    float *const s_lse = (float *)(smem + O_L); /* [2][BM], then D: [2][BM] */
    float *const s_del = s_lse + 2 * BM;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const T tag = T();
    const pa_fwd_args &f = a.f;

    const int b = blockIdx.z, hk = blockIdx.y, slice = a.deterministic ? (int)blockIdx.x : 0;
    const sm80b_seqinfo sq_ = sm80b_seq_of(a, b);
    const int sq = sq_.sq, sk = sq_.sk;
    const T *qb = (const T *)f.q + sm80b_row(a, f.qs[0], f.qs[1], b, sq_.q0);
    const T *dob = (const T *)a.dout + sm80b_row(a, a.dos[0], a.dos[1], b, sq_.q0);

    /* Key j is visible to row i iff dlo <= j - i <= dhi (bottom-right aligned), j < sk and i < sq;
     * dlo/dhi clamped to the range j - i can take, so that they fit in int32. */
    const int64_t diag = (int64_t)sk - sq, span = (int64_t)sk + sq + 1;
    const int64_t dl = f.wl < 0 ? -span : diag - f.wl, dh = f.wr < 0 ? span : diag + f.wr;
    const int dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
    const int kw = (warp & 3) * KW, rh = warp >> 2, r0 = rh * QH; /* the warp's keys and rows within the block */
    /* A row or chunk offset that is a multiple of 8 leaves the swizzle's low bits alone, so the warp's
     * offsets go into the tile addresses: its fragment addresses then stay compile-time offsets of a
     * few registers. The dK/dV dim half is such a chunk offset at d128 and d256 only. */
    constexpr bool DFOLD = (DH / 8) % 8 == 0;
    const uint32_t kofs = kw * PITCH * 16, rofs = r0 * PITCH * 16, dofs = DFOLD ? rh * DH * 2 : 0;
    const int dch = DFOLD ? 0 : rh * (DH / 8); /* the dim half's first chunk, where not folded */

    const int nkb = (sk + BN - 1) / BN;
    for (int n = blockIdx.x; n < nkb; n += gridDim.x) {
        const int n0 = n * BN, n1 = (n0 + BN < sk ? n0 + BN : sk) - 1;
        /* Query rows that see a key of [n0, n1]: hi(i) >= n0 and lo(i) <= n1. */
        int64_t ilo = 0, ihi = (int64_t)sq - 1;
        if (f.wr >= 0 && n0 - diag - f.wr > ilo) ilo = n0 - diag - f.wr;
        if (f.wl >= 0 && n1 + f.wl - diag < ihi) ihi = n1 + f.wl - diag;
        const int mb0 = ilo <= ihi ? (int)(ilo / BM) : 0, nm = ilo <= ihi ? (int)(ihi / BM) - mb0 + 1 : 0;
        const int nit = nm * f.group; /* (query head, row block) items, head major */

        /* Item `it`: Q, dO and the rows' LSE_2 and D into buffer `buf`. */
        auto load_item = [&](int it, int buf) {
            const int h = hk * f.group + it / nm, m0 = (mb0 + it % nm) * BM;
            sm80b_load<T, BM, D, NT>(s_q + buf * QB, qb + (int64_t)h * f.qs[2], f.qs[1], m0, sq, tid);
            sm80b_load<T, BM, D, NT>(s_do + buf * QB, dob + (int64_t)h * a.dos[2], a.dos[1], m0, sq, tid);
            if (tid < BM / 2) { /* 16-byte pieces: BM / 4 of LSE_2, BM / 4 of D */
                const int part = tid / (BM / 4), c = tid % (BM / 4);
                const float *src = (part ? a.delta : a.lse2) + sm80b_ws_row(a, 0, b, h) + m0 + c * 4;
                sm80_cp_async16(sm80_smem_u32((part ? s_del : s_lse) + buf * BM + c * 4), src, true);
            }
        };

        __syncthreads(); /* every warp is done with the previous key block's tiles */
        if (nit > 0) { /* K/V and dK/dV addresses are formed where used: fewer registers live in the loop */
            const T *kh = (const T *)f.k + sm80b_row(a, f.ks[0], f.ks[1], b, sq_.k0) + (int64_t)hk * f.ks[2];
            const T *vh = (const T *)f.v + sm80b_row(a, f.vs[0], f.vs[1], b, sq_.k0) + (int64_t)hk * f.vs[2];
            sm80b_load<T, BN, D, NT>(s_k, kh, f.ks[1], n0, sk, tid);
            sm80b_load<T, BN, D, NT>(s_v, vh, f.vs[1], n0, sk, tid);
            load_item(0, 0);
        }
        sm80_cp_async_commit();

        float dk[MX][DH / 8][4], dv[MX][DH / 8][4];
#pragma unroll
        for (int m = 0; m < MX; ++m)
#pragma unroll
            for (int j = 0; j < DH / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) dk[m][j][e] = dv[m][j][e] = 0.f;

        for (int it = 0; it < nit; ++it) {
            const int buf = it & 1, m0 = (mb0 + it % nm) * BM;
            sm80_cp_async_wait<0>(); /* this item's tiles (and K, V) landed for this thread */
            __syncthreads();         /* ... for all; every warp is done with the previous item's P^T, dS^T */
            if (it + 1 < nit) load_item(it + 1, buf ^ 1); /* its buffer was last read before the previous barrier */
            sm80_cp_async_commit();
            const uint32_t tq = s_q + buf * QB, tdo = s_do + buf * QB;
            const float *lse = s_lse + buf * BM, *del = s_del + buf * BM;
            const bool full = m0 + BM <= sq && n0 + BN <= sk && (int64_t)n0 - (m0 + BM - 1) >= dlo &&
                              (int64_t)n0 + BN - 1 - m0 <= dhi;

            /* The mask for the thread's first key n0 + kw + g and row m0 + r0 + 2 t: bounds on an element's
             * key offset minus row offset (the window), and on each alone (sk, sq). */
            const int k1 = n0 + kw + g, r1 = m0 + r0 + 2 * t;
            const int mlo = dlo - (k1 - r1), mhi = dhi - (k1 - r1), mkl = sk - k1, mrl = sq - r1;

            /* S^T = K Q^T for the warp's KW keys x QH rows. */
            float p[MX][NQ][4];
            sm80b_xyt<T, D>(p, s_k + kofs, 0, tq + rofs, 0, lane);

            uint32_t pp[MX][NQ / 2][4]; /* P^T, then dS^T, of the warp's rows in 16 bits: A fragments */
            /* P^T in place (fp32), and in 16 bits as A fragments and to shared memory (for the warp that
             * shares these keys and takes the other dims) for dV += P^T dO. Element (m, j, e):
             * key n0 + kw + 16 m + g + 8 (e >> 1), row m0 + r0 + 8 j + 2 t + (e & 1). Under softcap the
             * score's derivative 1 - tanh^2 is folded into the fp32 P^T after packing (dS needs it, dV not). */
#pragma unroll
            for (int m = 0; m < MX; ++m)
#pragma unroll
                for (int j = 0; j < NQ; ++j) {
                    const float2 l2 = *(const float2 *)(lse + r0 + j * 8 + 2 * t);
                    float fac[4] = {1.f, 1.f, 1.f, 1.f};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float x = p[m][j][e], lrow = (e & 1) ? l2.y : l2.x;
                        float pe;
                        if (f.transform) {
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
                        if (!full) { /* the element's key and row offsets from the thread's first are constants */
                            const int ko = 16 * m + 8 * (e >> 1), ro = 8 * j + (e & 1);
                            if (ko - ro < mlo || ko - ro > mhi || ko >= mkl || ro >= mrl) pe = 0.f;
                        }
                        p[m][j][e] = pe;
                    }
                    const int kr = kw + 16 * m + g, ch = r0 / 8 + j;
                    pp[m][j >> 1][(j & 1) * 2] = pa_pack(p[m][j][0], p[m][j][1], tag);
                    pp[m][j >> 1][(j & 1) * 2 + 1] = pa_pack(p[m][j][2], p[m][j][3], tag);
                    *(uint32_t *)(smem + O_PT + sm80b_swz<8>(kr, ch) + t * 4) = pp[m][j >> 1][(j & 1) * 2];
                    *(uint32_t *)(smem + O_PT + sm80b_swz<8>(kr + 8, ch) + t * 4) = pp[m][j >> 1][(j & 1) * 2 + 1];
#pragma unroll
                    for (int e = 0; e < 4; ++e) p[m][j][e] *= fac[e];
                }

            sm80b_az<T, D, MX, NQ / 2, DH>(dv, pp, tdo + rofs + dofs, 0, dch, lane); /* dV += P^T dO, own rows */

            float dp[MX][NQ][4]; /* dP^T = V dO^T, laid out as S^T */
            sm80b_xyt<T, D>(dp, s_v + kofs, 0, tdo + rofs, 0, lane);

            /* dS^T = P^T (dP^T - D), 16 bits, to shared memory for dK and dQ. */
#pragma unroll
            for (int m = 0; m < MX; ++m)
#pragma unroll
                for (int j = 0; j < NQ; ++j) {
                    const float2 d2 = *(const float2 *)(del + r0 + j * 8 + 2 * t);
                    const int kr = kw + 16 * m + g, ch = r0 / 8 + j;
                    uint32_t *const lo = &pp[m][j >> 1][(j & 1) * 2], *const hi = lo + 1;
                    *lo = pa_pack(p[m][j][0] * (dp[m][j][0] - d2.x), p[m][j][1] * (dp[m][j][1] - d2.y), tag);
                    *hi = pa_pack(p[m][j][2] * (dp[m][j][2] - d2.x), p[m][j][3] * (dp[m][j][3] - d2.y), tag);
                    *(uint32_t *)(smem + O_DS + sm80b_swz<8>(kr, ch) + t * 4) = *lo;
                    *(uint32_t *)(smem + O_DS + sm80b_swz<8>(kr + 8, ch) + t * 4) = *hi;
                }
            sm80b_az<T, D, MX, NQ / 2, DH>(dk, pp, tq + rofs + dofs, 0, dch, lane); /* dK += dS^T Q, own rows */
            __syncthreads(); /* P^T and dS^T of every warp are in shared memory */

            /* The other row half's P^T and dS^T, from the warp of the same keys (rows QH (1 - rh)..). */
            const int ro = QH - r0;
            sm80b_afrags(pp, s_pt, kw, ro / 16, lane);
            sm80b_az<T, D, MX, NQ / 2, DH>(dv, pp, tdo + ro * PITCH * 16 + dofs, 0, dch, lane);
            sm80b_afrags(pp, s_ds, kw, ro / 16, lane);
            sm80b_az<T, D, MX, NQ / 2, DH>(dk, pp, tq + ro * PITCH * 16 + dofs, 0, dch, lane);

            /* dQ (BM x D) += dS K: warp (wm, wn) takes rows 16 MQ wm.. and dims DQC wn..; dS = (dS^T)^T
             * and K by ldmatrix.trans. Rows past sq land in the (b, h) slot's padding rows, never read back. */
            const int wm = warp % WQM, wn = warp / WQM, h = hk * f.group + it / nm;
            float *const dst = a.dq_acc + (sm80b_ws_row(a, slice, b, h) + m0 + wm * MQ * 16 + g) * D + 2 * t;
#pragma unroll 1
            for (int c0 = wn * DQC; c0 < (wn + 1) * DQC; c0 += DQP) {
                float acc[MQ][DQP / 8][4];
#pragma unroll
                for (int mq = 0; mq < MQ; ++mq)
#pragma unroll
                    for (int j = 0; j < DQP / 8; ++j) acc[mq][j][0] = acc[mq][j][1] = acc[mq][j][2] = acc[mq][j][3] = 0.f;
#pragma unroll
                for (int kk = 0; kk < BN / 16; ++kk) {
                    uint32_t af[MQ][4];
#pragma unroll
                    for (int mq = 0; mq < MQ; ++mq) sm80b_at<8>(af[mq], s_ds, kk * 16, wm * MQ + mq, lane);
#pragma unroll
                    for (int jd = 0; jd < DQP / 16; ++jd) {
                        uint32_t bf[4];
                        sm80b_bt<PITCH>(bf, s_k, kk * 16, c0 / 8 + jd * 2, lane);
#pragma unroll
                        for (int mq = 0; mq < MQ; ++mq) {
                            sm80_mma(acc[mq][2 * jd], af[mq], bf[0], bf[1], tag);
                            sm80_mma(acc[mq][2 * jd + 1], af[mq], bf[2], bf[3], tag);
                        }
                    }
                }
#pragma unroll
                for (int mq = 0; mq < MQ; ++mq)
#pragma unroll
                    for (int j = 0; j < DQP / 8; ++j)
#pragma unroll
                        for (int r = 0; r < 2; ++r) {
                            float *d = dst + (mq * 16 + r * 8) * D + c0 + j * 8; /* columns 2 t, 2 t + 1: 8-byte aligned */
                            const float x = acc[mq][j][2 * r], y = acc[mq][j][2 * r + 1];
                            if (a.deterministic) { /* this CTA alone writes its slice, this thread alone these */
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
        }

        /* dK (times the scale) and dV of the warp's keys and dims: element (m, j, e) is key
         * n0 + kw + 16 m + g + 8 (e >> 1), dim DH rh + 8 j + 2 t + (e & 1). Keys no row sees get 0. */
#pragma unroll
        for (int m = 0; m < MX; ++m)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int key = n0 + kw + 16 * m + g + 8 * r;
                if (key >= sk) continue;
                const int c = rh * DH + 2 * t;
                T *dkr = (T *)a.dk + sm80b_row(a, a.dks[0], a.dks[1], b, sq_.k0 + key) + (int64_t)hk * a.dks[2] + c;
                T *dvr = (T *)a.dv + sm80b_row(a, a.dvs[0], a.dvs[1], b, sq_.k0 + key) + (int64_t)hk * a.dvs[2] + c;
#pragma unroll
                for (int j = 0; j < DH / 8; ++j) {
                    *(uint32_t *)(dkr + j * 8) = pa_pack(dk[m][j][2 * r] * a.scale, dk[m][j][2 * r + 1] * a.scale, tag);
                    *(uint32_t *)(dvr + j * 8) = pa_pack(dv[m][j][2 * r], dv[m][j][2 * r + 1], tag);
                }
            }
    }
}

#endif
