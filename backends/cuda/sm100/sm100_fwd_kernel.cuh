/* The cuda-sm100 forward kernel (FlashAttention-4 / cuDNN structure, 1 CTA), included by one .cu per
 * head dim and built for sm_100a and sm_103a (unchanged also for sm_90a in the emulation build and
 * for the host in tests/sim/sm100_sim). NEVER RUN ON A B200/B300: see NOTES.md for what is verified.
 *
 * A CTA owns 2 x 128 query rows (two Q tiles) of one (batch, head) and runs 10 warps:
 *   warps 0-3 softmax of Q tile 0, warps 4-7 softmax of tile 1 (one thread per row: warp w reads
 *   TMEM lanes 32 (w % 4) .. + 31, the quadrant tcgen05.ld/st allow it), warp 8 issues every MMA
 *   (one thread) and owns the TMEM allocation, warp 9 issues every TMA load (one thread).
 * Per K/V tile j the MMA thread issues, for t = 0, 1: O_t += P_t(j-1) V(j-1) (TS form: P_t from
 * TMEM), then S_t(j) = Q_t K(j)^T (SS form) once that P V has completed (S_t(j) overwrites the TMEM
 * columns P_t(j-1) occupies). While softmax group t works on S_t(j), the tensor core runs the other
 * tile's P V and S: the ping-pong. Barriers (mbarriers in shared memory):
 *   q_full, k_full[s], v_full[s]      TMA transaction counts
 *   k_empty[s], v_empty[s]            tcgen05.commit after the last MMA reading slot s
 *   s_full[t]                         tcgen05.commit after S_t(j)
 *   p_ready[t]                        128 arrivals: P_t(j) stored (and O_t rescaled, if it was)
 *   pv_done[t]                        tcgen05.commit after P_t(j) V(j)
 * Softmax in base 2 with the scale folded in; the running max m may lag the true max by up to 8
 * (log2 units): O and l are rescaled only when a row's max grows past m + 8 (then P <= 2^8 fits
 * fp16/bf16 easily); the final O / l and LSE use the same m, so the result is exact either way. */
#ifndef PORTATTN_SM100_FWD_KERNEL_CUH
#define PORTATTN_SM100_FWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "block.h"
#include "cuda_attr.cuh"
#include "cuda_math.cuh"
#include "fwd_args.h"
#include "seqlen.h"
#include "sm100_desc.h"
#include "sm100_ptx.cuh"

#define PA_SM100_RESCALE_THRESHOLD 8.0f /* log2 units: rescale O only when the max grew by > 2^8 */

#ifdef PA_SM100_DEVICE
/* The registers a tcgen05.ld wrote are valid only after tcgen05.wait::ld: this keeps the compiler
 * from moving their uses above the wait (volatile asm statements keep their order). */
__device__ __forceinline__ void sm100_reg_fence(uint32_t (&r)[32])
{
#pragma unroll
    for (int i = 0; i < 32; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

/* 64 columns of this thread's TMEM lane from column address t: two 32x32b.x32 loads, one wait. */
__device__ __forceinline__ void sm100_ld64(uint32_t t, uint32_t (&r)[2][32])
{
    sm100_ld32(t, r[0]);
    sm100_ld32(t + 32, r[1]);
    sm100_wait_ld();
    sm100_reg_fence(r[0]);
    sm100_reg_fence(r[1]);
}
#endif

__device__ __forceinline__ int sm100_is_bf16(__half) { return 0; }
__device__ __forceinline__ int sm100_is_bf16(__nv_bfloat16) { return 1; }

/* A raw score (fp32 bits from TMEM) as the softmax sees it: softcap or negative-scale rewrite, then
 * -inf outside the row's visible columns [lo, hi] of a boundary tile. */
__device__ __forceinline__ float sm100_score(uint32_t bits, int col, bool boundary, int lo, int hi, const pa_fwd_args &a)
{
    float v = __uint_as_float(bits);
    if (a.softcap) v = a.post_mul * tanhf(v * a.pre_mul);
    else if (a.transform) v *= a.pre_mul;
    return boundary && (col < lo || col > hi) ? -INFINITY : v;
}

#ifdef PA_SM100_DEVICE
/* Shared memory of a CTA: Q (two tiles), ST K and ST V slots, the mbarriers and the TMEM address slot,
 * from the first 1 KB boundary (the 128-byte swizzle pattern repeats every 1 KB). */
template <int D, int ST> struct sm100_smem {
    uint32_t raw, q_s, k_s, v_s, bar;
    __device__ __forceinline__ uint32_t q_full() const { return bar; }
    __device__ __forceinline__ uint32_t k_full(int s) const { return bar + 8 * (1 + s); }
    __device__ __forceinline__ uint32_t v_full(int s) const { return bar + 8 * (1 + ST + s); }
    __device__ __forceinline__ uint32_t k_empty(int s) const { return bar + 8 * (1 + 2 * ST + s); }
    __device__ __forceinline__ uint32_t v_empty(int s) const { return bar + 8 * (1 + 3 * ST + s); }
    __device__ __forceinline__ uint32_t s_full(int t) const { return bar + 8 * (1 + 4 * ST + t); }
    __device__ __forceinline__ uint32_t p_ready(int t) const { return bar + 8 * (3 + 4 * ST + t); }
    __device__ __forceinline__ uint32_t pv_done(int t) const { return bar + 8 * (5 + 4 * ST + t); }
    __device__ __forceinline__ uint32_t tslot() const { return bar + 8 * PA_SM100_NBARS(ST); }
};

template <int D, int ST> __device__ __forceinline__ sm100_smem<D, ST> sm100_smem_of(uint8_t *smem_raw)
{
    constexpr int KVB = PA_SM100_KVBYTES(D);
    sm100_smem<D, ST> L;
    L.raw = pa_smem_u32(smem_raw);
    const uint32_t base = (L.raw + 1023) & ~1023u;
    L.q_s = base, L.k_s = L.q_s + PA_SM100_QBYTES(D), L.v_s = L.k_s + ST * KVB, L.bar = L.v_s + ST * KVB;
    return L;
}

/* A CTA's work item (as cuda-sm90): one 256-row block (first row m0) of one (batch b, head h; KV head
 * hk); with a right-bounded mask (causal) the longest row blocks first over all pairs, otherwise a
 * pair's blocks together. The grid holds row blocks for the longest sequence (max_seqlen_q with
 * varlen): sequence b is rows [q0, q0 + sq) and keys [k0, k0 + sk) of the packed tensors (the TMA maps
 * then have batch 1, tb = 0). The block visits key tiles [n_lo, n_lo + cnt), [full_lo, full_hi) of
 * them unmasked. False: a row block past its sequence's end, nothing to do. */
struct sm100_work {
    int b, h, hk, q0, k0, sq, sk, m0, tb, tail_rows, n_lo, cnt, full_lo, full_hi;
};

__device__ __forceinline__ bool sm100_work_of(const pa_fwd_args &a, sm100_work &w)
{
    constexpr int BN = PA_SM100_BN, ROWS = PA_SM100_QT * PA_SM100_BM;
    const int64_t nbh = (int64_t)a.batch * a.heads, lin = blockIdx.x;
    const int nmb = (int)(gridDim.x / nbh);
    int64_t bh;
    int mb;
    if (a.wr >= 0) bh = lin % nbh, mb = nmb - 1 - (int)(lin / nbh);
    else bh = lin / nmb, mb = (int)(lin % nmb);
    w.b = (int)(bh / a.heads), w.h = (int)(bh % a.heads), w.hk = w.h / a.group;
    w.q0 = 0, w.k0 = 0, w.sq = a.seqlen_q, w.sk = a.seqlen_k;
    if (a.cu_q) { /* right-bounded: the t-th row block from this sequence's own end, as without varlen */
        pa_seq_extent(a.cu_q, w.b, a.seqlen_q, &w.q0, &w.sq);
        pa_seq_extent(a.cu_k, w.b, a.seqlen_k, &w.k0, &w.sk);
        if (a.wr >= 0) mb -= nmb - (w.sq + ROWS - 1) / ROWS;
        if (mb < 0 || mb * ROWS >= w.sq) return false;
    }
    w.m0 = mb * ROWS, w.tb = a.cu_q ? 0 : w.b;
    /* A key tile that reaches past a packed sequence's last key holds the next sequence's rows: the
     * mask hides their scores, but P V would still compute 0 x V, NaN for a non-finite V. That tile's
     * V rows past the sequence are zeroed in shared memory before P V reads them (tail_rows > 0). */
    w.tail_rows = a.cu_q && w.k0 + w.sk < a.seqlen_k && w.sk % BN ? w.sk % BN : 0;
    const pa_tile_hull hull = pa_tile_hull_of(w.m0, ROWS, BN, w.sq, w.sk, a.wl, a.wr);
    w.n_lo = hull.n_lo, w.cnt = hull.n_hi - hull.n_lo;
    w.full_lo = hull.full_lo, w.full_hi = hull.full_hi;
    return true;
}

/* The mbarriers (thread 0) and the TMEM allocation (the MMA warp), made visible to every thread;
 * returns TMEM's base address. */
template <int D, int ST>
__device__ __forceinline__ uint32_t sm100_setup(const sm100_smem<D, ST> &L, uint8_t *smem_raw, int tid, int warp)
{
    if (tid == 0) {
        pa_bar_init(L.q_full(), 1);
        for (int s = 0; s < ST; ++s) {
            pa_bar_init(L.k_full(s), 1);
            pa_bar_init(L.v_full(s), 1);
            pa_bar_init(L.k_empty(s), 1); /* one tcgen05.commit each */
            pa_bar_init(L.v_empty(s), 1);
        }
        for (int t = 0; t < 2; ++t) {
            pa_bar_init(L.s_full(t), 1);
            pa_bar_init(L.p_ready(t), 128); /* every thread of softmax group t */
            pa_bar_init(L.pv_done(t), 1);
        }
        pa_bar_init_fence();
    }
    if (warp == PA_SM100_MMA_WARP) {
        __syncwarp(); /* .sync.aligned: the whole warp, converged */
        sm100_tmem_alloc(L.tslot(), PA_SM100_TMEM_COLS);
    }
    sm100_fence_before();
    __syncthreads();
    sm100_fence_after();
    return *(volatile uint32_t *)(smem_raw + (L.tslot() - L.raw));
}

/* The TMA thread: Q once, then K and V tile after tile into the slots. */
template <int D, int ST>
__device__ __forceinline__ void sm100_load_role(const sm100_smem<D, ST> &L, const sm100_work &w, const CUtensorMap *tq,
                                                const CUtensorMap *tk, const CUtensorMap *tv)
{
    constexpr int BM = PA_SM100_BM, BN = PA_SM100_BN, NB = D / 64;
    constexpr int QTILE = BM * D * 2, QBLK = BM * 128, KBLK = BN * 128, KVB = PA_SM100_KVBYTES(D);
    pa_bar_expect_tx(L.q_full(), PA_SM100_QBYTES(D));
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int c = 0; c < NB; ++c)
            pa_tma_load_4d(L.q_s + t * QTILE + c * QBLK, tq, L.q_full(), c * 64, w.q0 + w.m0 + t * BM, w.h, w.tb);
    for (int j = 0; j < w.cnt; ++j) {
        const int s = j % ST, u = j / ST, n = w.n_lo + j;
        /* K and V slots come back separately: K once both S products read it, V once both
         * P V products did, so K(j+ST) can land while P V still reads V(j). */
        if (u > 0) pa_bar_wait(L.k_empty(s), (u - 1) & 1);
        pa_bar_expect_tx(L.k_full(s), KVB);
#pragma unroll
        for (int c = 0; c < NB; ++c) pa_tma_load_4d(L.k_s + s * KVB + c * KBLK, tk, L.k_full(s), c * 64, w.k0 + n * BN, w.hk, w.tb);
        if (u > 0) pa_bar_wait(L.v_empty(s), (u - 1) & 1);
        pa_bar_expect_tx(L.v_full(s), KVB);
#pragma unroll
        for (int c = 0; c < NB; ++c) pa_tma_load_4d(L.v_s + s * KVB + c * KBLK, tv, L.v_full(s), c * 64, w.k0 + n * BN, w.hk, w.tb);
    }
}

/* The MMA thread: per K/V tile j and Q tile t, O_t += P_t(j-1) V(j-1), then S_t(j) = Q_t K(j)^T. */
template <typename T, int D, int ST>
__device__ __forceinline__ void sm100_mma_role(const sm100_smem<D, ST> &L, const sm100_work &w, uint32_t tmem)
{
    constexpr int BM = PA_SM100_BM, BN = PA_SM100_BN, QTILE = BM * D * 2, KVB = PA_SM100_KVBYTES(D);
    const int bf16 = sm100_is_bf16(T());
    const uint32_t id_s = sm100_idesc_f16(bf16, BM, BN, 0, 0); /* Q, K both K-major */
    const uint32_t id_o = sm100_idesc_f16(bf16, BM, D, 0, 1);  /* P K-major (TMEM), V MN-major */
    const int cnt = w.cnt;
    pa_bar_wait(L.q_full(), 0); /* also when cnt == 0: no TMA may outlive the CTA */
    for (int j = 0; j <= cnt; ++j) {
        const int s = j % ST, sp = (j + ST - 1) % ST;
        if (j < cnt) pa_bar_wait(L.k_full(s), (j / ST) & 1);
#pragma unroll
        for (int t = 0; t < 2; ++t) {
            if (j > 0) { /* O_t += P_t(j-1) V(j-1) */
                pa_bar_wait(L.p_ready(t), (j - 1) & 1);
                if (t == 0) pa_bar_wait(L.v_full(sp), ((j - 1) / ST) & 1);
                sm100_fence_after();
#pragma unroll
                for (int ks = 0; ks < BN / 16; ++ks)
                    sm100_mma_ts(tmem + PA_SM100_O_COL(D, t), tmem + PA_SM100_S_COL(t) + ks * 8,
                                 sm100_desc_v(L.v_s + sp * KVB, BN, ks), id_o, j > 1 || ks > 0);
                sm100_commit(L.pv_done(t));
                if (t == 1) sm100_commit(L.v_empty(sp));
            }
            if (j < cnt) { /* S_t(j) = Q_t K(j)^T, over P_t(j-1)'s columns once that P V is done */
                if (j > 0) pa_bar_wait(L.pv_done(t), (j - 1) & 1);
                sm100_fence_after();
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk)
                    sm100_mma_ss(tmem + PA_SM100_S_COL(t), sm100_desc_kmajor(L.q_s + t * QTILE, BM, kk),
                                 sm100_desc_kmajor(L.k_s + s * KVB, BN, kk), id_s, kk > 0);
                sm100_commit(L.s_full(t));
            }
        }
        if (j < cnt) sm100_commit(L.k_empty(s));
    }
}

/* Softmax pass 1 over the row's S_t(j) in TMEM (t_s): its max, 64 columns (two loads) at a time, so
 * that a thread never holds all 128 scores (10 warps cap ptxas at 168 registers). */
template <int D>
__device__ __forceinline__ float sm100_row_max(uint32_t t_s, bool boundary, int lo, int hi, const pa_fwd_args &a)
{
    float mx = -INFINITY;
#ifdef PA_SM100_HAVE_LD_RED
    /* sm_103: the load reduces the max along the way (tcgen05.ld.red), valid when the
     * scores are used as loaded: no mask on this tile, no softcap or rewrite. */
    if (!boundary && !a.softcap && !a.transform) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            uint32_t sr[32];
            float mc;
            sm100_ld32_max(t_s + 32 * c, sr, mc);
            sm100_wait_ld();
            asm volatile("" : "+f"(mc)::"memory");
            mx = fmaxf(mx, mc);
        }
    } else
#endif
#pragma unroll
    for (int g = 0; g < 2; ++g) {
        uint32_t sr[2][32];
        sm100_ld64(t_s + 64 * g, sr);
#pragma unroll
        for (int i = 0; i < 64; ++i)
            mx = fmaxf(mx, sm100_score(sr[i / 32][i % 32], 64 * g + i, boundary, lo, hi, a));
    }
    return mx;
}

/* Softmax pass 2: the exponentials against base mb2, each 64 keys packed into 32 columns of P and
 * stored; returns their sum. P's columns [0, 64) overlap S's [0, 64), which the first 64-column step
 * has read by then. */
template <typename T>
__device__ __forceinline__ float sm100_exp_pack(uint32_t t_s, bool boundary, int lo, int hi, float mb2,
                                                const pa_fwd_args &a, T tag)
{
    float sum = 0.f;
#pragma unroll
    for (int g = 0; g < 2; ++g) {
        uint32_t sr[2][32], pr[32];
        sm100_ld64(t_s + 64 * g, sr);
#pragma unroll
        for (int c = 0; c < 32; ++c) {
            const int i = 2 * c;
            const float x0 = fmaf(sm100_score(sr[i / 32][i % 32], 64 * g + i, boundary, lo, hi, a), a.mult, -mb2);
            const float x1 = fmaf(sm100_score(sr[i / 32][i % 32 + 1], 64 * g + i + 1, boundary, lo, hi, a), a.mult, -mb2);
#ifdef PA_SM100_EXP2_FMA
            const bool fma_pipe = PA_SM100_EXP2_FMA_PAIR(c); /* compile-time under the unroll */
#else
            const bool fma_pipe = false;
#endif
            const float p0 = fma_pipe ? sm100_exp2_fma(x0) : sm100_ex2(x0);
            const float p1 = fma_pipe ? sm100_exp2_fma(x1) : sm100_ex2(x1);
            sum += p0 + p1;
            pr[c] = pa_pack(p0, p1, tag); /* key 2c in the low half: the TS operand layout */
        }
        sm100_st32(t_s + 32 * g, pr);
    }
    return sum;
}

/* O_t *= scale in TMEM (t_o: the row's O columns), 32 columns at a time. Warp-collective. */
template <int D> __device__ __forceinline__ void sm100_rescale_o(uint32_t t_o, float scale)
{
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
        uint32_t r[32];
        sm100_ld32(t_o + 32 * c, r);
        sm100_wait_ld();
        sm100_reg_fence(r);
#pragma unroll
        for (int i = 0; i < 32; ++i) r[i] = __float_as_uint(__uint_as_float(r[i]) * scale);
        sm100_st32(t_o + 32 * c, r);
    }
}

/* varlen, the sequence's last and partial key tile j: the V rows past the sequence as zeros (thread =
 * row r_t of the slot), once TMA has landed the tile; the slot cannot be refilled before the first P V
 * of the tile, which waits for group 0's p_ready, has run. */
template <int D, int ST>
__device__ __forceinline__ void sm100_zero_v_tail(const sm100_smem<D, ST> &L, uint8_t *smem_raw, int j, int r_t,
                                                  int tail_rows)
{
    constexpr int NB = D / 64, KBLK = PA_SM100_BN * 128, KVB = PA_SM100_KVBYTES(D);
    if (r_t >= tail_rows) {
        const int s = j % ST;
        pa_bar_wait(L.v_full(s), (j / ST) & 1);
        uint4 *vrow = (uint4 *)(smem_raw + (L.v_s - L.raw) + s * KVB + r_t * 128);
#pragma unroll
        for (int c = 0; c < NB; ++c)
#pragma unroll
            for (int i = 0; i < 8; ++i) vrow[c * (KBLK / 16) + i] = make_uint4(0u, 0u, 0u, 0u);
        pa_fence_proxy_async(); /* generic writes before the tensor core's (async proxy) read */
    }
    __syncwarp(); /* converged for the .aligned tcgen05.wait that follows */
}

/* Epilogue of softmax group t: normalise once; LSE in natural log. O goes out through a TMA store of
 * the tile (written into Q_t's shared memory, free once the last S_t MMA has completed, so cnt > 0)
 * when every row of the tile is this sequence's or, without varlen, the store clips the rows past Sq;
 * else (a packed sequence's partial tile) as 16-byte stores of the thread's row. */
template <typename T, int D, int ST>
__device__ __forceinline__ void sm100_epilogue(const pa_fwd_args &a, const sm100_smem<D, ST> &L, uint8_t *smem_raw,
                                               const sm100_work &w, const CUtensorMap *to, uint32_t t_o, int t,
                                               int row, int r_t, float m, float l, T tag)
{
    constexpr int BM = PA_SM100_BM, NB = D / 64, QTILE = BM * D * 2, QBLK = BM * 128;
    const int cnt = w.cnt, sq = w.sq;
    if (cnt > 0) {
        pa_bar_wait(L.pv_done(t), (cnt - 1) & 1);
        sm100_fence_after();
    }
    const bool via_tma = cnt > 0 && (!a.cu_q || w.m0 + (t + 1) * BM <= sq); /* uniform over group t */
    const uint32_t o_s = L.q_s + t * QTILE;
    const float inv = l > 0.f ? __fdividef(1.f, l) : 0.f;
    T *orow = (T *)a.o + w.tb * a.os[0] + w.h * a.os[2] + (int64_t)(w.q0 + (row < sq ? row : 0)) * a.os[1];
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
        uint32_t r[32];
        if (cnt > 0) {
            __syncwarp(); /* reconverge after the previous chunk's row < sq stores */
            sm100_ld32(t_o + 32 * c, r);
            sm100_wait_ld();
            sm100_reg_fence(r);
        }
        uint32_t o[16];
#pragma unroll
        for (int i = 0; i < 16; ++i)
            o[i] = cnt == 0 || l == 0.f ? 0u /* no visible key: 0, never 0 x NaN */
                                        : pa_pack(__uint_as_float(r[2 * i]) * inv, __uint_as_float(r[2 * i + 1]) * inv, tag);
        if (via_tma) { /* the TMA map's layout: 64-column blocks of 128-byte rows, 16-byte chunk k of
                        * row r at chunk k ^ (r % 8) (128-byte swizzle) */
            uint8_t *blk = smem_raw + (o_s - L.raw) + (c / 2) * QBLK + r_t * 128;
#pragma unroll
            for (int i = 0; i < 4; ++i)
                *(uint4 *)(blk + ((((c % 2) * 4 + i) ^ (r_t & 7)) << 4)) =
                    make_uint4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]);
        } else if (row < sq) {
            uint4 *dst = (uint4 *)(orow + 32 * c);
#pragma unroll
            for (int i = 0; i < 4; ++i) dst[i] = make_uint4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]);
        }
    }
    if (via_tma) {
        pa_fence_proxy_async();       /* the tile's generic writes before the TMA engine reads them */
        pa_named_sync(1 + t, 4 * 32); /* the 4 warps of group t */
        if (r_t == 0) {
#pragma unroll
            for (int c = 0; c < NB; ++c) pa_tma_store_4d(to, o_s + c * QBLK, c * 64, w.q0 + w.m0 + t * BM, w.h, w.tb);
            pa_bulk_commit();
            pa_bulk_wait_read(); /* shared memory stays valid until the store has read it */
        }
    }
    if (a.lse && row < sq)
        a.lse[w.tb * a.ls[0] + w.h * a.ls[1] + (int64_t)(w.q0 + row) * a.ls[2]] =
            l > 0.f ? (m + __log2f(l)) * 0.69314718055994531f : l == 0.f ? -INFINITY : NAN;
}

/* A softmax group's thread: one query row of tile t. Per key tile: the row max, the exponentials into
 * P, O rescaled where the base moved, P handed to the MMA thread; then the epilogue. */
template <typename T, int D, int ST>
__device__ __forceinline__ void sm100_softmax_role(const pa_fwd_args &a, const sm100_smem<D, ST> &L, uint8_t *smem_raw,
                                                   const sm100_work &w, const CUtensorMap *to, uint32_t tmem, int warp,
                                                   int lane)
{
    constexpr int BM = PA_SM100_BM, BN = PA_SM100_BN;
    const int t = warp >> 2, wq = warp & 3, row = w.m0 + t * BM + 32 * wq + lane, r_t = 32 * wq + lane;
    const uint32_t t_lane = tmem + ((uint32_t)(32 * wq) << 16);
    const uint32_t t_s = t_lane + PA_SM100_S_COL(t), t_o = t_lane + PA_SM100_O_COL(D, t);
    int klo, khi; /* keys this row sees */
    pa_row_keys(row < w.sq ? row : w.sq - 1, w.sq, w.sk, a.wl, a.wr, &klo, &khi);
    const T tag = T();
    float m = -INFINITY, l = 0.f; /* running base (log2 units) and row sum */
    for (int j = 0; j < w.cnt; ++j) {
        const int n = w.n_lo + j;
        pa_bar_wait(L.s_full(t), j & 1);
        sm100_fence_after();
        const bool boundary = n < w.full_lo || n >= w.full_hi;
        const int lo = klo - n * BN, hi = khi - n * BN; /* visible columns of this tile */
        const float ml = sm100_row_max<D>(t_s, boundary, lo, hi, a) * a.mult;
        float scale = 1.f;
        if (ml > m + PA_SM100_RESCALE_THRESHOLD) { /* rare after the first tiles */
            scale = sm100_ex2(m - ml);              /* 0 from m = -inf */
            m = ml;
        }
        const float mb2 = m == -INFINITY ? 0.f : m; /* nothing visible yet: every p is 0 */
        l = l * scale + sm100_exp_pack<T>(t_s, boundary, lo, hi, mb2, a, tag);
        /* O_t *= scale for the rows whose base moved, once P_t(j-1) V has landed in O_t. The
         * ld/st are warp-collective: the warp goes in when any of its rows needs it. */
        if (j > 0 && __any_sync(0xffffffffu, scale != 1.f)) {
            pa_bar_wait(L.pv_done(t), (j - 1) & 1);
            sm100_fence_after();
            sm100_rescale_o<D>(t_o, scale);
        }
        /* group 0's p_ready is what the first P V of the tile waits for */
        if (t == 0 && w.tail_rows && n == (w.sk - 1) / BN) /* warp-uniform */
            sm100_zero_v_tail<D, ST>(L, smem_raw, j, r_t, w.tail_rows);
        sm100_wait_st();
        sm100_fence_before();
        pa_bar_arrive(L.p_ready(t));
    }
    sm100_epilogue<T, D, ST>(a, L, smem_raw, w, to, t_o, t, row, r_t, m, l, tag);
}
#endif

/* Warp-specialised roles over one 256-row block: warp 9's lane 0 loads (TMA), warp 8's lane 0 issues
 * the MMAs, warps 0-7 run the softmax and the epilogue; warp 8 owns the TMEM allocation. */
template <typename T, int D, int ST>
__global__ void __launch_bounds__(PA_SM100_THREADS, 1)
    sm100_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
              const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap to, const pa_fwd_args a)
{
#ifdef PA_SM100_DEVICE
    static_assert(D % 64 == 0 && D <= 128 && PA_SM100_BN == 128,
                  "TMEM map: S0, S1 (128 columns each), O0, O1 (D each) <= 512");
    extern __shared__ uint8_t smem_raw[];
    const sm100_smem<D, ST> L = sm100_smem_of<D, ST>(smem_raw);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

    sm100_work w;
    if (!sm100_work_of(a, w)) return; /* the whole CTA, before any barrier or TMEM use */
    const uint32_t tmem = sm100_setup<D, ST>(L, smem_raw, tid, warp);
    if (warp == PA_SM100_TMA_WARP) {
        if (lane == 0) sm100_load_role<D, ST>(L, w, &tq, &tk, &tv);
    } else if (warp == PA_SM100_MMA_WARP) {
        if (lane == 0) sm100_mma_role<T, D, ST>(L, w, tmem);
    } else {
        sm100_softmax_role<T, D, ST>(a, L, smem_raw, w, &to, tmem, warp, lane);
    }

    /* Every tcgen05 operation of the CTA is complete (the epilogue waited for the last P V, the
     * softmax loads and stores waited): the allocating warp frees TMEM. */
    sm100_fence_before();
    __syncthreads();
    if (warp == PA_SM100_MMA_WARP) {
        __syncwarp();
        sm100_fence_after();
        sm100_tmem_dealloc(tmem, PA_SM100_TMEM_COLS);
    }
#endif
}

template <typename T, int D, int ST>
static cudaError_t sm100_launch_instance(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                         const CUtensorMap *to, const pa_fwd_args *a, int64_t max_sq, cudaStream_t stream)
{
    const int smem = PA_SM100_SMEM_SHAPE(D, ST);
    auto kern = sm100_fwd<T, D, ST>;
    static int optin_done[64];
    cudaError_t e = pa_smem_optin_once(kern, smem, optin_done);
    if (e != cudaSuccess) return e;
    const int64_t rows = PA_SM100_QT * PA_SM100_BM, nmb = (max_sq + rows - 1) / rows;
    CUtensorMap q = *tq, k = *tk, v = *tv, o = *to;
    pa_fwd_args arg = *a;
    void *args[] = {&q, &k, &v, &o, &arg};
    return cudaLaunchKernel((const void *)kern, dim3((unsigned)(nmb * a->batch * a->heads)), dim3(PA_SM100_THREADS), args,
                            smem, stream);
}

#define SM100_INSTANCE(D)                                                                                            \
    cudaError_t sm100_launch_d##D(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,               \
                                  const CUtensorMap *to, const pa_fwd_args *a, int bf16, int64_t max_sq,             \
                                  cudaStream_t stream)                                                               \
    {                                                                                                                \
        return bf16 ? sm100_launch_instance<__nv_bfloat16, D, PA_SM100_STAGES(D)>(tq, tk, tv, to, a, max_sq, stream) \
                    : sm100_launch_instance<__half, D, PA_SM100_STAGES(D)>(tq, tk, tv, to, a, max_sq, stream);       \
    }

#endif
