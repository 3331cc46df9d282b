/* The generic forward kernel, one source for every vendor: cuda-generic's kernel (GPU oracle and
 * fallback, backends/cuda/generic/generic_fwd.cu) and the HIP backends' fallback
 * (backends/hip/hipgen.hip, and its CPU simulation in tests/sim/hip_fake). One warp per query row,
 * KT-key tiles staged in shared memory as fp32, online softmax in fp32. Simple on purpose: every
 * feature and dtype, not speed.
 *
 * The including file first defines the vendor vocabulary, W being the lanes of one warp (the
 * hardware's: 32 on NVIDIA and RDNA, 64 on CDNA), so that warp-uniform branches are wave-uniform:
 *   gen_ld(const T *) -> float, gen_st(T *, float)   one element of each input type T
 *   gen_max<W>(x), gen_sum<W>(x), gen_sum_d<W>(x)    butterfly reductions over the warp
 *   gen_any<W>(p)                                    p nonzero in some lane of the warp
 *   gen_sync_warp<W>()                               the warp's shared-memory writes visible to it
 * and threadIdx, blockIdx, gridDim, __syncthreads, expf, logf, tanhf, fmaf, fma, fmaxf. The KV-cache
 * append beside it (gen_append_body.h) needs none of it. */
#ifndef PORTATTN_GEN_FWD_BODY_H
#define PORTATTN_GEN_FWD_BODY_H

#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "gen_math.h"
#include "gen_shape.h" /* PA_GEN_DMAX */
#include "fwd_args.h"
#include "problem.h"
#include "seqlen.h"


/* Floats of shared memory a block uses: K tile (odd pitch so lane-per-key reads hit every bank), V
 * tile, one scaled query row and one P row per warp. */
#define PA_GEN_KPITCH(dqk) ((dqk) | 1)
#define PA_GEN_SMEM_FLOATS(kt, rows, dqk, dv) ((kt) * PA_GEN_KPITCH(dqk) + (kt) * (dv) + (rows) * (dqk) + (rows) * (kt))

/* Page of key j (< seqlen_k) from a sequence's page-table row (as kv_row() in cpu_ref.c). Entries
 * in device memory may be garbage: clamped into the pool so that they never read out of bounds.
 * Shift, not division: page_size is a power of two, and 64-bit division costs registers. */
__device__ __forceinline__ int64_t gen_page(const int32_t *bt_row, int64_t j, int pshift, int64_t num_pages)
{
    return pa_page_clamp(bt_row[j >> pshift], num_pages);
}

/* One sequence of the batch: its query rows and keys in the packed (varlen) or per-sequence buffers,
 * the element offsets of its row 0 in Q, K, V and O, and its page-table row. */
struct gen_seq {
    int64_t q0, sq, sk, qb, kb, vb, ob;
    const int32_t *bt_row;
};

__device__ __forceinline__ gen_seq gen_seq_of(const pa_fwd_args &a, int64_t b)
{
    gen_seq s;
    const int32_t *bt = a.kv.block_table;
    int64_t k0 = 0;
    s.q0 = 0, s.sq = a.seqlen_q64, s.sk = a.seqlen_k64;
    s.bt_row = bt ? bt + b * a.kv.bt_stride : NULL;
    /* KV cache: this sequence's length (appended tokens included, clamped to the capacity). */
    if (a.kv.seqused_k) s.sk = pa_cache_len_of(a.kv.seqused_k[b], a.seqlen_new64, a.seqlen_k64);
    /* packed [1, total, H, D]: stride[0] is ignored (may be anything). Packed queries over a KV
     * cache (cu_k NULL) keep per-sequence (or paged) keys. */
    if (a.cu_q) {
        pa_seq_extent64(a.cu_q, b, a.seqlen_q64, &s.q0, &s.sq);
        s.qb = s.q0 * a.qs[1]; s.ob = s.q0 * a.os[1];
    } else {
        s.qb = b * a.qs[0]; s.ob = b * a.os[0];
    }
    if (a.cu_k) {
        pa_seq_extent64(a.cu_k, b, a.seqlen_k64, &k0, &s.sk);
        s.kb = k0 * a.ks[1]; s.vb = k0 * a.vs[1];
    } else {
        s.kb = bt ? 0 : b * a.ks[0]; s.vb = bt ? 0 : b * a.vs[0]; /* paged: the row offset names the page */
    }
    return s;
}

/* The keys of the block's rows [r0, r0 + ROWS): their hull [*blo, *bhi] (tiles outside it are masked
 * for every row) and this warp's own row's range [*lo, *hi]. */
template <int ROWS>
__device__ __forceinline__ void gen_block_keys(const pa_fwd_args &a, const gen_seq &s, int64_t r0, int warp, int64_t *blo,
                                               int64_t *bhi, int64_t *lo, int64_t *hi)
{
    *blo = INT64_MAX, *bhi = -1, *lo = 0, *hi = -1;
    for (int r = 0; r < ROWS && r0 + r < s.sq; ++r) {
        int64_t l, u;
        pa_key_range(r0 + r, s.sq, s.sk, a.window_left, a.window_right, &l, &u);
        if (l > u) continue;
        *blo = l < *blo ? l : *blo;
        *bhi = u > *bhi ? u : *bhi;
        if (r == warp) { *lo = l; *hi = u; }
    }
}

/* Keys [t, t + KT) of KV head rows kh/vh into the fp32 tiles ks (pitch kpitch) and vs, a warp a key
 * row; keys past bhi are zeros, so that p = 0 keys never meet NaN garbage in V. */
template <typename T, int W, int KT, int ROWS>
__device__ __forceinline__ void gen_load_tile(const pa_fwd_args &a, const gen_seq &s, const T *kh, const T *vh, int64_t t,
                                              int64_t bhi, int pshift, int lane, int warp, int dqk, int dv, int kpitch,
                                              float *ks, float *vs)
{
    for (int r = warp; r < KT; r += ROWS) {
        const int64_t key = t + r;
        const bool in = key <= bhi;
        const T *kr = kh + key * a.ks[1];
        const T *vr = vh + key * a.vs[1];
        if (a.kv.block_table && in) { /* read the table for real keys only: key <= bhi < seqlen_k */
            const int64_t page = gen_page(s.bt_row, key, pshift, a.kv.num_pages);
            const int64_t row = key & (((int64_t)1 << pshift) - 1);
            kr = kh + page * a.ks[0] + row * a.ks[1];
            vr = vh + page * a.vs[0] + row * a.vs[1];
        }
        for (int d = lane; d < dqk; d += W) ks[r * kpitch + d] = in ? gen_ld(kr + d * a.kd) : 0.f;
        for (int d = lane; d < dv; d += W) vs[r * dv + d] = in ? gen_ld(vr + d * a.vd) : 0.f;
    }
}

/* The score of this lane's key: q.k (f32 inputs: in double, scaled once), softcapped. */
template <typename T>
__device__ __forceinline__ float gen_score(const pa_fwd_args &a, const float *qs, const float *kr, int dqk)
{
    float dot = 0.f;
    if (gen_exact_scores<T>::value) {
        double acc = 0.0;
        for (int d = 0; d < dqk; ++d) acc = fma((double)qs[d], (double)kr[d], acc);
        dot = (float)(acc * (double)a.scale);
    } else {
#pragma unroll 4
        for (int d = 0; d < dqk; ++d) dot = fmaf(qs[d], kr[d], dot);
    }
    return a.cap > 0.f ? a.cap * tanhf(dot * a.inv_cap) : dot;
}

/* A row's online softmax: running max m, running sum lsum, and O's columns lane + W j. */
template <int W> struct gen_row {
    float m, lsum, acc[PA_GEN_DMAX / W];
};

/* One key tile of a row: s is this lane's score (-inf masked). The max, the rescale, P into ps (this
 * warp's row) and O += P V from the tile vs. Returns without a change when the tile holds nothing
 * visible (but a NaN score must reach O and the LSE). */
template <int W, int KT>
__device__ __forceinline__ void gen_step(gen_row<W> &st, float s, bool key_lane, int lane, int dv, float *ps, const float *vs)
{
    const float mt = gen_max<W>(s);
    if (mt == -INFINITY && !gen_any<W>(s != s)) return; /* keep m, avoid -inf - -inf */
    const float mn = fmaxf(st.m, mt);
    const float corr = st.m == -INFINITY ? 0.f : expf(st.m - mn);
    const float p = expf(s - mn); /* s = -inf gives 0 */
    st.lsum = st.lsum * corr + gen_sum<W>(p);
    st.m = mn;
    if (key_lane) ps[lane] = p;
    gen_sync_warp<W>();
#pragma unroll
    for (int j = 0; j < PA_GEN_DMAX / W; ++j) st.acc[j] *= corr;
    for (int r = 0; r < KT; ++r) {
        const float pr = ps[r];
        if (pr == 0.f) continue; /* masked: its V must not matter (0 * inf) */
        const float *vr = vs + r * dv;
#pragma unroll
        for (int j = 0; j < PA_GEN_DMAX / W; ++j)
            if (lane + W * j < dv) st.acc[j] = fmaf(pr, vr[lane + W * j], st.acc[j]);
    }
}

/* O's row and the LSE from the row's state. lsum > 0 iff some key was visible (the max key
 * contributes exp(0) = 1); NaN if a score was (NaN in, NaN out). */
template <typename T, int W>
__device__ __forceinline__ void gen_finish(const pa_fwd_args &a, const gen_row<W> &st, T *orow, int64_t b, int64_t h,
                                           int64_t i, int64_t q0, int lane, int dv)
{
#pragma unroll
    for (int j = 0; j < PA_GEN_DMAX / W; ++j)
        if (lane + W * j < dv)
            gen_st(orow + (lane + W * j) * a.od, st.lsum > 0.f ? gen_div_fast(st.acc[j], st.lsum) : st.lsum == 0.f ? 0.f : NAN);
    if (a.lse && lane == 0) {
        const int64_t *ls = a.ls;
        const int64_t off = a.cu_q ? h * ls[1] + (q0 + i) * ls[2] : b * ls[0] + h * ls[1] + i * ls[2];
        a.lse[off] = st.lsum > 0.f ? st.m + logf(st.lsum) : st.lsum == 0.f ? -INFINITY : NAN;
    }
}

/* The kernel: sequences over grid z, heads over y, blocks of ROWS query rows over x (each loop
 * grid-strided), a warp a row, the block's key tiles in order. No IEEE division and no 64-bit
 * division: they become calls whose saved registers spill. Hence inv_cap from the host, 32-bit head
 * math, and gen_div_fast by lsum, which lies in [1, Sk]. W lanes a warp, KT <= W keys a tile (one
 * per lane for the scores), ROWS warps a block. */
template <typename T, int W, int KT, int ROWS>
__device__ __forceinline__ void pa_gen_fwd_body(const pa_fwd_args &a, float *smem)
{
    static_assert((W & (W - 1)) == 0 && KT <= W && PA_GEN_DMAX % W == 0, "a warp of W lanes, KT <= W keys a tile");
    const int lane = threadIdx.x & (W - 1), warp = threadIdx.x / W;
    const int dqk = a.dqk, dv = a.dv, kpitch = PA_GEN_KPITCH(dqk);
    const bool key_lane = KT == W || lane < KT; /* lanes past the tile's keys hold no score */
    float *ks = smem;
    float *vs = ks + KT * kpitch;
    float *qs = vs + KT * dv + warp * dqk;
    float *ps = vs + KT * dv + ROWS * dqk + warp * KT;
    const int pshift = a.kv.page_shift; /* 0 without a page table */

    for (int64_t b = blockIdx.z; b < a.batch64; b += gridDim.z) {
        const gen_seq s = gen_seq_of(a, b);
        for (int64_t h = blockIdx.y; h < a.heads; h += gridDim.y) {
            const int64_t hk = (uint32_t)h / (uint32_t)a.group; /* heads < 2^31: see the launcher */
            const T *qh = (const T *)a.q + s.qb + h * a.qs[2];
            const T *kh = (const T *)a.k + s.kb + hk * a.ks[2];
            const T *vh = (const T *)a.v + s.vb + hk * a.vs[2];
            T *oh = (T *)a.o + s.ob + h * a.os[2];
            /* Bound by sq, not max_seqlen_q, so every row is written even if the bound is low. */
            for (int64_t r0 = (int64_t)blockIdx.x * ROWS; r0 < s.sq; r0 += (int64_t)gridDim.x * ROWS) {
                int64_t blo, bhi, lo, hi;
                gen_block_keys<ROWS>(a, s, r0, warp, &blo, &bhi, &lo, &hi);
                const int64_t i = r0 + warp;
                const bool active = i < s.sq;

                gen_sync_warp<W>(); /* this warp's last reads of qs are done */
                if (active)
                    for (int d = lane; d < dqk; d += W) qs[d] = gen_ld(qh + i * a.qs[1] + d * a.qd) * (gen_exact_scores<T>::value ? 1.f : a.scale);

                gen_row<W> st;
                st.m = -INFINITY, st.lsum = 0.f;
#pragma unroll
                for (int j = 0; j < PA_GEN_DMAX / W; ++j) st.acc[j] = 0.f;

                for (int64_t t = blo; t <= bhi; t += KT) {
                    __syncthreads(); /* previous tile consumed; qs visible */
                    gen_load_tile<T, W, KT, ROWS>(a, s, kh, vh, t, bhi, pshift, lane, warp, dqk, dv, kpitch, ks, vs);
                    __syncthreads();
                    if (!active || hi < t || lo > t + KT - 1) continue; /* warp-uniform */
                    const int64_t key = t + lane;
                    const float sc = key_lane && key >= lo && key <= hi ? gen_score<T>(a, qs, ks + lane * kpitch, dqk) : -INFINITY;
                    gen_step<W, KT>(st, sc, key_lane, lane, dv, ps, vs);
                }
                if (active) gen_finish<T, W>(a, st, oh + i * a.os[1], b, h, i, s.q0, lane, dv);
            }
        }
    }
}

#endif
