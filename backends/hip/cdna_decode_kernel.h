/* hip-cdna's split-KV decode kernels (gfx90a, gfx942; wave64, v_mfma_f32_32x32x8), written once for
 * hipcc and for the wave emulation (hip_wave.h). Design: NOTES.md, "Decode".
 *
 * Few query tokens against a long, optionally paged cache: the work is reading K and V once. GQA
 * packing: the seqlen_q x group query rows that share a KV head are the 32 columns of one S^T = K Q^T
 * tile (packed row r = token r / group, query head r % group of the KV head), so each K/V byte serves
 * every query head of its group. A workgroup is one wave and owns (sequence, KV head, 32 packed rows,
 * key split); it streams tiles of 32 keys: K straight from global memory into the MFMA's A operand
 * (lane l reads 16 bytes of key l % 32, the KPack-8 order of the prefill's Q registers), V through LDS
 * (16-byte copies in, V^T gathered as the A operand of O^T += V^T P^T). Paged keys are found one row
 * at a time through block_table, so any power-of-two page size works. The softmax is the prefill's
 * (cdna_fwd_kernel.h), P shifted by 2^PA_CDNA_P_LOG2 against gfx90a's subnormal flush.
 * With one split the workgroup writes O and the LSE; with more, its normalised O (fp32) and base-2 LSE
 * go to the workspace and pa_cdna_dec_combine_body merges the splits in split order: bitwise the same
 * result for a given split count. pa_cdna_dec_append_body writes k_new/v_new first.
 * Built for gfx90a/gfx942; backends/hip/NOTES.md says how far it has been checked. */
#ifndef PORTATTN_CDNA_DECODE_KERNEL_H
#define PORTATTN_CDNA_DECODE_KERNEL_H

#include "cdna_decode_args.h"
#include "fwd_args.h"
#include "cdna_fwd_kernel.h" /* PA_CDNA_P_LOG2 */
#include "hip_seq.h"
#include "hip_wave.h"

/* Keys of sequence b as the attention sees them: seqused_k (+ appended tokens) clamped to the capacity,
 * since lengths in device memory are not validated. */
__device__ __forceinline__ int pa_cdna_dec_len(const pa_fwd_args &a, int b)
{
    if (!a.kv.seqused_k) return a.seqlen_k;
    const int64_t n = (int64_t)(a.kv.seqused_k[b] < 0 ? 0 : a.kv.seqused_k[b]) + a.kv.seqlen_new;
    return n > a.seqlen_k ? a.seqlen_k : (int)n;
}

/* Element offset of key j's row of KV head hk in the cache (page entries clamped into the pool). */
__device__ __forceinline__ int64_t pa_cdna_dec_row(const pa_fwd_args &a, const int64_t *st, int b, int hk, int j)
{
    if (!a.kv.block_table) return b * st[0] + (int64_t)j * st[1] + hk * st[2];
    int64_t pg = a.kv.block_table[b * a.kv.bt_stride + (j >> a.kv.page_shift)];
    pg = pg < 0 ? 0 : (pg >= a.kv.num_pages ? a.kv.num_pages - 1 : pg);
    return pg * st[0] + (int64_t)(j & ((1 << a.kv.page_shift) - 1)) * st[1] + hk * st[2];
}

/* What a lane of the split attention works on: the workgroup's (key split, sequence b, KV head hk,
 * row tile mt) = grid (x, z, y / mtiles, y % mtiles), the sequence's keys sk; the lane's packed row r
 * (its query column of S^T: token tok, query head h; row_ok = it exists) and the keys it may see
 * [klo, khi]; the split's key tiles [t_begin, t_end) within the row tile's hull (its first token sees
 * the fewest keys from the left, its last the most to the right). */
struct pa_cdna_dec_work {
    int split, b, hk, sk, r, tok, h, klo, khi, t_begin, t_end;
    bool row_ok;
};

__device__ __forceinline__ pa_cdna_dec_work pa_cdna_dec_work_of(const pa_fwd_args &a, int lane)
{
    constexpr int KT = PA_CDNA_DEC_KT;
    pa_cdna_dec_work w;
    w.split = blockIdx.x, w.b = blockIdx.z;
    const int mt = blockIdx.y % a.split.mtiles;
    w.hk = blockIdx.y / a.split.mtiles;
    w.sk = pa_cdna_dec_len(a, w.b);
    w.r = mt * PA_CDNA_DEC_ROWS + lane % 32;
    const int r_end = (mt + 1) * PA_CDNA_DEC_ROWS, r_last = (r_end < a.split.rows ? r_end : a.split.rows) - 1;
    w.row_ok = w.r < a.split.rows;
    w.tok = w.row_ok ? w.r / a.group : 0, w.h = w.hk * a.group + (w.row_ok ? w.r % a.group : 0);
    int hull_lo, hull_hi, unused;
    w.klo = 1, w.khi = 0;
    if (w.row_ok) pa_row_keys(w.tok, a.seqlen_q, w.sk, a.wl, a.wr, &w.klo, &w.khi);
    pa_row_keys(mt * PA_CDNA_DEC_ROWS / a.group, a.seqlen_q, w.sk, a.wl, a.wr, &hull_lo, &unused);
    pa_row_keys(r_last / a.group, a.seqlen_q, w.sk, a.wl, a.wr, &unused, &hull_hi);
    const int s_begin = w.split * a.split.tiles, s_end = s_begin + a.split.tiles;
    const int h_end = hull_hi < hull_lo ? 0 : hull_hi / KT + 1;
    w.t_begin = s_begin > hull_lo / KT ? s_begin : hull_lo / KT, w.t_end = s_end < h_end ? s_end : h_end;
    return w;
}

/* V tile n into LDS (keys past the sequence and columns past Dv as zeros: P is 0 there, and 0 x garbage
 * must stay 0), 16 bytes a lane a pass. */
template <int DV, int C0>
__device__ __forceinline__ void pa_cdna_dec_load_v(const pa_fwd_args &a, const pa_cdna_dec_work &w, int n, int lane,
                                                   uint16_t *sv_t)
{
    constexpr int KT = PA_CDNA_DEC_KT, CHV = DV / 8;
    constexpr int RPPV = PA_WAVE / CHV; /* V rows one pass of 16-byte copies covers */
    const uint16_t *vg = (const uint16_t *)a.v + C0;
#pragma unroll
    for (int p = 0; p < KT / RPPV; ++p) {
        const int kr = p * RPPV + lane / CHV, c = lane % CHV, key = n * KT + kr;
        uint4 vv = make_uint4(0, 0, 0, 0);
        if (key < w.sk && C0 + 8 * c < a.dv) vv = *(const uint4 *)(vg + pa_cdna_dec_row(a, a.vs, w.b, w.hk, key) + 8 * c);
        *(uint4 *)(sv_t + kr * DV + 8 * c) = vv;
    }
}

/* S^T = K Q^T of tile n, K's A operand straight from global memory (lane l: 16 bytes of key l % 32): two
 * k-steps per 16-byte read. */
template <bool BF16, int DQK>
__device__ __forceinline__ void pa_cdna_dec_scores(pa_acc32 &st, const pa_in4 (&qf)[DQK / 8], const pa_fwd_args &a,
                                                   const pa_cdna_dec_work &w, int n, int lane PA_WAVE_SCRATCH_PARAMS)
{
#pragma unroll
    for (int i = 0; i < 16; ++i) st.r[i] = 0.f;
    const int key = n * PA_CDNA_DEC_KT + lane % 32;
    const uint16_t *kr = (const uint16_t *)a.k + (key < w.sk ? pa_cdna_dec_row(a, a.ks, w.b, w.hk, key) : 0);
#pragma unroll
    for (int g = 0; g < DQK / 16; ++g) {
        const int col = 16 * g + 8 * (lane / 32);
        uint4 kk = make_uint4(0, 0, 0, 0);
        if (key < w.sk && col < a.dqk) kk = *(const uint4 *)(kr + col);
        pa_cdna_qk16<BF16>(st, kk, qf[2 * g], qf[2 * g + 1] PA_WAVE_SCRATCH_ARGS);
    }
}

/* O^T += V^T P^T, 8 keys a step: lane l gathers column 32c + l % 32 of keys 8s + 4 (l / 32) .. +3. */
template <bool BF16, int DV>
__device__ __forceinline__ void pa_cdna_dec_pv(pa_cdna_row<DV> &row, const pa_in4 (&pf)[4], const uint16_t *sv_t,
                                               int lane PA_WAVE_SCRATCH_PARAMS)
{
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int c = 0; c < DV / 32; ++c) {
            pa_in4 va;
#pragma unroll
            for (int i = 0; i < 4; ++i) va.h[i] = sv_t[(8 * s + 4 * (lane / 32) + i) * DV + 32 * c + lane % 32];
            PA_MFMA32(BF16, row.o[c], va, pf[s]);
        }
}

/* Epilogue: the half-waves' row sums (2^PA_CDNA_P_LOG2 too large, as O), one normalisation. With one
 * split, O and the LSE; with more, this split's normalised O over the instance's columns (fp32; the
 * combine reads the call's Dv) and base-2 LSE into the workspace. */
template <bool BF16, int DV, int C0>
__device__ __forceinline__ void pa_cdna_dec_finish(const pa_fwd_args &a, const pa_cdna_dec_work &w,
                                                   const pa_cdna_row<DV> &row, int lane PA_WAVE_SCRATCH_PARAMS)
{
    const float l = row.lsum + PA_XOR32(row.lsum);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    if (!w.row_ok) return;
    const float lse2 = l > 0.f ? row.mrow * a.mult + (__log2f(l) - PA_CDNA_P_LOG2) : l == 0.f ? -INFINITY : NAN;
    const pa_split_args &sp = a.split;
    if (sp.splits > 1) {
        const int64_t pr = ((int64_t)w.b * a.heads_kv + w.hk) * sp.rows + w.r, nr = (int64_t)a.batch * a.heads_kv * sp.rows;
        float *po = sp.part_o + ((int64_t)w.split * nr + pr) * sp.d + C0;
#pragma unroll
        for (int c = 0; c < DV / 32; ++c)
#pragma unroll
            for (int m = 0; m < 4; ++m)
#pragma unroll
                for (int i = 0; i < 4; ++i) po[32 * c + 8 * m + 4 * (lane / 32) + i] = row.o[c].r[4 * m + i] * inv;
        if (C0 == 0 && lane < 32) sp.part_lse[(int64_t)w.split * nr + pr] = lse2;
        return;
    }
    pa_cdna_store_o<BF16, DV, C0>((uint16_t *)a.o + w.b * a.os[0] + (int64_t)w.tok * a.os[1] + w.h * a.os[2] + C0, row, l,
                                  inv, a.dv, lane);
    if (C0 == 0 && a.lse && lane < 32)
        a.lse[w.b * a.ls[0] + w.h * a.ls[1] + (int64_t)w.tok * a.ls[2]] = lse2 * 0.69314718055994531f;
}

/* The split attention: one workgroup per (split, KV head x row tile, sequence) = (x, y, z), one wave.
 * Scores use DQK head-dim elements; the output is columns C0 .. C0 + DV - 1 (d256: two launches, as
 * the prefill). The step (score map, mask, online softmax, P) is the prefill's (cdna_fwd_kernel.h). */
template <bool BF16, int DQK, int DV, int C0>
__device__ __forceinline__ void pa_cdna_dec_body(const pa_fwd_args &a)
{
    static_assert((DQK == 64 || DQK == 128 || DQK == 256) && (DV == 64 || DV == 128) && C0 % DV == 0 &&
                      C0 + DV <= DQK && PA_CDNA_DEC_KT % (PA_WAVE / (DV / 8)) == 0, "instances");
    __shared__ __attribute__((aligned(16))) uint16_t sv_t[PA_CDNA_DEC_KT * DV];
    PA_WAVE_SCRATCH(1);

    const int lane = pa_wave_lane();
    const pa_cdna_dec_work w = pa_cdna_dec_work_of(a, lane);
    pa_in4 qf[DQK / 8];
    pa_cdna_load_q<DQK>(qf, (const uint16_t *)a.q + w.b * a.qs[0] + (int64_t)w.tok * a.qs[1] + w.h * a.qs[2], w.row_ok,
                        a.dqk, lane);
    pa_cdna_row<DV> row;
    pa_cdna_row_init(row);

    for (int n = w.t_begin; n < w.t_end; ++n) {
        __syncthreads(); /* the last tile's gathers are done */
        pa_cdna_dec_load_v<DV, C0>(a, w, n, lane, sv_t);
        pa_acc32 st;
        pa_cdna_dec_scores<BF16, DQK>(st, qf, a, w, n, lane PA_WAVE_SCRATCH_ARGS);
        pa_in4 pf[4];
        pa_cdna_step<BF16, DV>(row, st, pf, a, true, n * PA_CDNA_DEC_KT, w.klo, w.khi, lane PA_WAVE_SCRATCH_ARGS);
        __syncthreads(); /* the V tile is in */
        pa_cdna_dec_pv<BF16, DV>(row, pf, sv_t, lane PA_WAVE_SCRATCH_ARGS);
    }
    pa_cdna_dec_finish<BF16, DV, C0>(a, w, row, lane PA_WAVE_SCRATCH_ARGS);
}

/* The combine: a workgroup per packed row (a grid-stride loop over them), lanes over the Dv columns.
 * Each split's weight 2^(lse_s - max) is summed in split order, so the result depends on the split
 * count only. A row no split saw gives O = 0 and LSE = -inf. */
template <bool BF16>
__device__ __forceinline__ void pa_cdna_dec_combine_body(const pa_fwd_args &a)
{
    const int lane = pa_wave_lane();
    const pa_split_args &sp = a.split;
    const int64_t nr = (int64_t)a.batch * a.heads_kv * sp.rows;
    for (int64_t pr = blockIdx.x; pr < nr; pr += gridDim.x) {
        const int r = (int)(pr % sp.rows), hk = (int)(pr / sp.rows % a.heads_kv), b = (int)(pr / sp.rows / a.heads_kv);
        const int tok = r / a.group, h = hk * a.group + r % a.group;
        float mx = -INFINITY;
        for (int s = 0; s < sp.splits; ++s) mx = fmaxf(mx, sp.part_lse[s * nr + pr]);
        float wsum = 0.f;
        if (mx != -INFINITY)
            for (int s = 0; s < sp.splits; ++s) wsum += pa_exp2(sp.part_lse[s * nr + pr] - mx);
        const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
        uint16_t *orow = (uint16_t *)a.o + b * a.os[0] + (int64_t)tok * a.os[1] + h * a.os[2];
        for (int c = lane; c < a.dv; c += PA_WAVE) {
            float acc = 0.f;
            if (mx != -INFINITY)
                for (int s = 0; s < sp.splits; ++s)
                    acc += pa_exp2(sp.part_lse[s * nr + pr] - mx) * sp.part_o[(s * nr + pr) * sp.d + c];
            orow[c] = pa_from_f32<BF16>(acc * inv);
        }
        if (a.lse && lane == 0)
            a.lse[b * a.ls[0] + h * a.ls[1] + (int64_t)tok * a.ls[2]] =
                mx == -INFINITY ? -INFINITY : (mx + __log2f(wsum)) * 0.69314718055994531f;
    }
}

/* The append: a wave per (sequence, new token, KV head) row, lanes over the head dims; it copies
 * 16-bit elements, so one instance serves f16 and bf16. Rows past the capacity are dropped (lengths in
 * device memory are not validated); the front end refuses pages read as other keys. */
__device__ __forceinline__ void pa_cdna_dec_append_body(const pa_fwd_args &a)
{
    const int lane = pa_wave_lane();
    const int64_t nrows = (int64_t)a.batch * a.kv.seqlen_new * a.heads_kv;
    uint16_t *k = (uint16_t *)a.k, *v = (uint16_t *)a.v;
    const uint16_t *kn = (const uint16_t *)a.k_new, *vn = (const uint16_t *)a.v_new;
    for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
        const int hk = (int)(row % a.heads_kv), i = (int)(row / a.heads_kv % a.kv.seqlen_new);
        const int b = (int)(row / a.heads_kv / a.kv.seqlen_new);
        const int used = a.kv.seqused_k[b];
        const int64_t j = (int64_t)(used < 0 ? 0 : used) + i;
        if (j >= a.seqlen_k) continue;
        const int64_t ko = pa_cdna_dec_row(a, a.ks, b, hk, (int)j), vo = pa_cdna_dec_row(a, a.vs, b, hk, (int)j);
        const int64_t kno = b * a.kns[0] + i * a.kns[1] + hk * a.kns[2];
        const int64_t vno = b * a.vns[0] + i * a.vns[1] + hk * a.vns[2];
        for (int c = lane; c < a.dqk; c += PA_WAVE) k[ko + c] = kn[kno + c * a.kns[3]];
        for (int c = lane; c < a.dv; c += PA_WAVE) v[vo + c] = vn[vno + c * a.vns[3]];
    }
}

#endif
