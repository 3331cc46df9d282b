/* The cuda-sm80 decode kernels (split-KV with GQA packing, see sm80_decode.h), included by one .cu
 * per head dim.
 *
 * One CTA = one (sequence, KV head, 16-row tile of packed query rows, key split). Every warp holds
 * the same 16 rows and streams its own 16-key tiles (tile t of the split goes to warp t % 4)
 * through a private cp.async ring of STAGES slots, so the main loop synchronises with __syncwarp
 * only. Per tile: S = Q K^T is 2 x D/16 mma.m16n8k16, the online softmax runs in base 2 on the
 * S fragments, and P (one 16x16 A fragment) times V is D/8 mmas. This is bandwidth-bound work:
 * what matters is bytes in flight (STAGES - 1 tiles per warp) and reading K/V exactly once. */
#ifndef PORTATTN_SM80_DECODE_KERNEL_CUH
#define PORTATTN_SM80_DECODE_KERNEL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_attr.cuh"
#include "problem.h"
#include "sm80_decode.h"
#include "sm80_ptx.cuh"

/* Keys in sequence b's cache: seqused_k (+ appended tokens) clamped to the capacity, since
 * device-resident lengths are not validated. */
__device__ __forceinline__ int64_t sm80_dec_len(const pa_fwd_args &a, int b)
{
    return a.kv.seqused_k ? pa_cache_len_of(a.kv.seqused_k[b], a.kv.seqlen_new, a.seqlen_k) : a.seqlen_k;
}

/* What a CTA and lane work on: the CTA's (key split, row tile mt, KV head hk, sequence b) = grid
 * (x, y % mtiles, y / mtiles, z) and the sequence's keys sk; the keys [lo, hi] this lane's rows
 * (g and g + 8 of the tile) may see; the split's first key tile s_lo and this warp's count n_w of
 * its tiles (the warp's tile i is s_lo + warp + NW i). */
struct sm80_dec_work {
    int split, mt, hk, b;
    int64_t sk;
    int lo[2], hi[2];
    int s_lo, n_w;
};

template <int KT, int NW>
__device__ __forceinline__ sm80_dec_work sm80_dec_work_of(const pa_fwd_args &a, int warp, int lane)
{
    sm80_dec_work w;
    w.split = blockIdx.x, w.mt = blockIdx.y % a.split.mtiles, w.hk = blockIdx.y / a.split.mtiles, w.b = blockIdx.z;
    w.sk = sm80_dec_len(a, w.b);
    const int rows = a.split.rows, group = a.group; /* read up front: the row test then needs no branch */
    const int64_t sq = a.seqlen_q, wl = a.window_left, wr = a.window_right;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int pr = w.mt * 16 + (lane >> 2) + 8 * r;
        int64_t l = 1, h = 0;
        if (pr < rows) pa_key_range(pr / group, sq, w.sk, wl, wr, &l, &h);
        w.lo[r] = (int)l, w.hi[r] = (int)h;
    }
    /* The tile's key hull (first row's low end to last row's high end: both grow with the row),
     * cut into `splits` equal runs of 16-key tiles. */
    int64_t klo, khi, tmp;
    const int last = (w.mt * 16 + 15 < rows ? w.mt * 16 + 15 : rows - 1) / group;
    pa_key_range((w.mt * 16) / group, sq, w.sk, wl, wr, &klo, &tmp);
    pa_key_range(last, sq, w.sk, wl, wr, &tmp, &khi);
    const int t_lo = (int)(klo / KT), t_n = khi < klo ? 0 : (int)(khi / KT) + 1 - t_lo;
    const int per = (t_n + a.split.splits - 1) / a.split.splits;
    w.s_lo = t_lo + w.split * per;
    const int s_n = min(per, t_n - w.split * per);
    w.n_w = s_n > warp ? (s_n - warp + NW - 1) / NW : 0;
    return w;
}

/* K and V tile t (keys [t KT, t KT + KT)) into ring slot `slot` of the warp's ring, 16-byte copies.
 * Row pointers of a tile's first key: contiguous, or through the page table (a tile never straddles
 * pages: page_size >= 16); garbage page entries are clamped into the pool. Rows past the sequence
 * load as zeros (never NaN garbage), and so do chunks past the call's head dims (the instance's D may
 * be wider), with no traffic. */
template <typename T, int D, int KT> struct sm80_dec_kv_loader {
    const pa_fwd_args &a;
    const T *kg, *vg;
    int64_t sk;
    uint32_t ring;
    int b, hk, c, r0;
    bool ck, cv;
    __device__ __forceinline__ void operator()(int slot, int t) const
    {
        constexpr int CH = D / 8, TB = KT * D * 2, RPP = 32 / CH;
        const int64_t key0 = (int64_t)t * KT;
        const T *kp, *vp;
        const pa_kv_args &kv = a.kv;
        if (kv.block_table) {
            const int64_t pg = pa_page_clamp(kv.block_table[b * kv.bt_stride + (key0 >> kv.page_shift)], kv.num_pages);
            const int64_t row = key0 & ((1LL << kv.page_shift) - 1);
            kp = kg + pg * a.ks[0] + row * a.ks[1] + hk * a.ks[2];
            vp = vg + pg * a.vs[0] + row * a.vs[1] + hk * a.vs[2];
        } else {
            kp = kg + b * a.ks[0] + key0 * a.ks[1] + hk * a.ks[2];
            vp = vg + b * a.vs[0] + key0 * a.vs[1] + hk * a.vs[2];
        }
        const uint32_t kd = ring + slot * 2 * TB, vd = kd + TB;
#pragma unroll
        for (int p = 0; p < KT / RPP; ++p) {
            const int r = r0 + p * RPP;
            const bool ok = key0 + r < sk;
            sm80_cp_async16(kd + sm80_swz<CH>(r, c), ok && ck ? kp + r * a.ks[1] + c * 8 : kg, ok && ck);
            sm80_cp_async16(vd + sm80_swz<CH>(r, c), ok && cv ? vp + r * a.vs[1] + c * 8 : vg, ok && cv);
        }
    }
};

/* The Q tile into shared memory: packed row r -> query token r / group of head hk * group + r % group;
 * rows past the packed count are zeros (and see no key). Then, where Q stays in registers (QREG), the
 * A fragments of its D / 16 k-steps. */
template <typename T, int D, int NW, bool QREG>
__device__ __forceinline__ void sm80_dec_load_q(uint32_t (&qf)[QREG ? D / 16 : 1][4], const pa_fwd_args &a,
                                                const sm80_dec_work &w, const T *qg, uint8_t *smem, uint32_t sq_base,
                                                int tid, int lane)
{
    constexpr int CH = D / 8;
    const int rows = a.split.rows, dqk = a.dqk; /* read up front: the two bounds tests then make one predicate */
    for (int i = tid; i < 16 * CH; i += NW * 32) {
        const int r = i / CH, ch = i % CH, pr = w.mt * 16 + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (pr < rows && ch * 8 < dqk) {
            const int qi = pr / a.group, hq = w.hk * a.group + pr % a.group;
            v = *(const uint4 *)(qg + w.b * a.qs[0] + qi * a.qs[1] + hq * a.qs[2] + ch * 8);
        }
        *(uint4 *)(smem + sm80_swz<CH>(r, ch)) = v;
    }
    __syncthreads();
    if (QREG) {
#pragma unroll
        for (int kc = 0; kc < (QREG ? D / 16 : 1); ++kc)
            sm80_ldsm_x4(qf[kc], sq_base + sm80_swz<CH>(lane & 15, kc * 2 + (lane >> 4)));
    }
}

/* S = Q K^T of one 16-key tile: 2 x D/16 mma.m16n8k16, Q from registers (QREG) or re-read from shared
 * memory per k-step, K as the col-major B operand. */
template <typename T, int D, bool QREG>
__device__ __forceinline__ void sm80_dec_scores(float (&s)[2][4], const uint32_t (&qf)[QREG ? D / 16 : 1][4],
                                                uint32_t sq_base, uint32_t kt, int lane, T tag)
{
    constexpr int CH = D / 8;
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t qs[4], kf[4];
        if (!QREG) sm80_ldsm_x4(qs, sq_base + sm80_swz<CH>(lane & 15, kc * 2 + (lane >> 4)));
        const uint32_t *qa = QREG ? qf[QREG ? kc : 0] : qs;
        sm80_ldsm_x4(kf, kt + sm80_swz<CH>(((lane >> 4) << 3) + (lane & 7), kc * 2 + ((lane >> 3) & 1)));
        sm80_mma(s[0], qa, kf[0], kf[1], tag);
        sm80_mma(s[1], qa, kf[2], kf[3], tag);
    }
}

/* The score map (softcap or a negative scale make scores base-2 logits here), then the mask of tile t:
 * key j of the lane's row r is visible iff lo[r] <= j <= hi[r]. */
template <int KT>
__device__ __forceinline__ void sm80_dec_score_map(float (&s)[2][4], const pa_fwd_args &a, int t, int lane,
                                                   const int (&lo)[2], const int (&hi)[2])
{
    if (a.transform) {
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                s[j][e] = a.softcap ? a.post_mul * tanhf(s[j][e] * a.pre_mul) : s[j][e] * a.pre_mul;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int key = t * KT + j * 8 + (lane & 3) * 2 + (e & 1);
            if (key < lo[e >> 1] || key > hi[e >> 1]) s[j][e] = -INFINITY;
        }
}

/* Online softmax in base 2 (as the prefill kernel): a row with nothing visible yet keeps max -inf and
 * exponent base 0. P is packed into the A fragment of the P V product; O is rescaled only when some
 * row of the warp raised its max. */
template <typename T, int NO>
__device__ __forceinline__ void sm80_dec_softmax_step(const float (&s)[2][4], uint32_t (&pf)[4], float (&m)[2],
                                                      float (&l)[2], float (&acc)[NO][4], float mult, T tag)
{
    float corr[2];
    bool rescale = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mn = fmaxf(m[r], fmaxf(fmaxf(s[0][2 * r], s[0][2 * r + 1]), fmaxf(s[1][2 * r], s[1][2 * r + 1])));
        mn = fmaxf(mn, __shfl_xor_sync(0xffffffffu, mn, 1));
        mn = fmaxf(mn, __shfl_xor_sync(0xffffffffu, mn, 2));
        const float base = mn == -INFINITY ? 0.f : mn * mult;
        corr[r] = pa_ex2(m[r] * mult - base);
        rescale |= corr[r] != 1.f;
        m[r] = mn;
        l[r] *= corr[r];
        const float p0 = pa_ex2(fmaf(s[0][2 * r], mult, -base)), p1 = pa_ex2(fmaf(s[0][2 * r + 1], mult, -base));
        const float p2 = pa_ex2(fmaf(s[1][2 * r], mult, -base)), p3 = pa_ex2(fmaf(s[1][2 * r + 1], mult, -base));
        l[r] += (p0 + p1) + (p2 + p3);
        pf[r] = pa_pack(p0, p1, tag);     /* keys 0..7 of row g (r = 0) or g + 8 (r = 1) */
        pf[2 + r] = pa_pack(p2, p3, tag); /* keys 8..15 */
    }
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
        for (int j = 0; j < NO; ++j) {
            acc[j][0] *= corr[0], acc[j][1] *= corr[0];
            acc[j][2] *= corr[1], acc[j][3] *= corr[1];
        }
    }
}

/* O += P V of one tile: V is row-major [key][dim], so ldmatrix.trans yields its B fragments. */
template <typename T, int D>
__device__ __forceinline__ void sm80_dec_pv(float (&acc)[D / 8][4], const uint32_t (&pf)[4], uint32_t vt, int lane, T tag)
{
    constexpr int CH = D / 8, NO = D / 8;
#pragma unroll
    for (int j = 0; j < NO / 2; ++j) {
        uint32_t vf[4];
        sm80_ldsm_x4_trans(vf, vt + sm80_swz<CH>((((lane >> 3) & 1) << 3) + (lane & 7), j * 2 + (lane >> 4)));
        sm80_mma(acc[2 * j], pf, vf[0], vf[1], tag);
        sm80_mma(acc[2 * j + 1], pf, vf[2], vf[3], tag);
    }
}

/* Merges the warps' states for each row, in warp order (deterministic): the rows' maxima mx (base 2)
 * and sums tot over all warps, and each warp's O rescaled to them into its rows of the merge buffer
 * `red` (the rings, which every warp is done with after the barrier). */
template <int D, int NW>
__device__ __forceinline__ void sm80_dec_merge(float (&mx)[2], float (&tot)[2], float *red, float (&sm_m)[NW][16],
                                               float (&sm_l)[NW][16], const float (&m)[2], float (&l)[2],
                                               const float (&acc)[D / 8][4], float mult, int warp, int lane)
{
    constexpr int NO = D / 8, RS = D + 8;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        if ((lane & 3) == 0) sm_m[warp][(lane >> 2) + 8 * r] = m[r], sm_l[warp][(lane >> 2) + 8 * r] = l[r];
    }
    __syncthreads(); /* also: every warp is done with its ring, which becomes the merge buffer */
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int row = (lane >> 2) + 8 * r;
        mx[r] = -INFINITY, tot[r] = 0.f;
#pragma unroll
        for (int w = 0; w < NW; ++w) mx[r] = fmaxf(mx[r], sm_m[w][row] * mult);
        /* tot: 0 when no warp saw a key, NaN when a score was NaN (NaN in, NaN out) */
#pragma unroll
        for (int w = 0; w < NW; ++w)
            tot[r] += sm_l[w][row] * (mx[r] == -INFINITY ? 1.f : pa_ex2(sm_m[w][row] * mult - mx[r]));
        const float f = tot[r] > 0.f ? pa_ex2(m[r] * mult - mx[r]) / tot[r] : tot[r] == 0.f ? 0.f : NAN;
#pragma unroll
        for (int j = 0; j < NO; ++j)
            *(float2 *)(red + (warp * 16 + row) * RS + j * 8 + (lane & 3) * 2) =
                tot[r] == 0.f ? make_float2(0.f, 0.f) /* no visible key: 0, not 0 x NaN */
                              : make_float2(acc[j][2 * r] * f, acc[j][2 * r + 1] * f);
    }
}

/* The LSE (base 2 into the workspace with splits, else natural into lse), then the rows out, four
 * columns per thread, summing the warps' parts: O in the dtype, or the split's fp32 partial. */
template <typename T, int D, int NW>
__device__ __forceinline__ void sm80_dec_finish(const pa_fwd_args &a, const sm80_dec_work &w, const float *red,
                                                const float (&mx)[2], const float (&tot)[2], int tid, int warp,
                                                int lane, T tag)
{
    constexpr int RS = D + 8;
    const int64_t R = (int64_t)a.batch * a.heads_kv * a.split.rows; /* packed rows of the whole call */
    const int64_t grow0 = ((int64_t)w.b * a.heads_kv + w.hk) * a.split.rows + w.mt * 16;
    if (warp == 0 && (lane & 3) == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int pr = w.mt * 16 + (lane >> 2) + 8 * r;
            if (pr >= a.split.rows) continue;
            const float lse2 = tot[r] > 0.f ? mx[r] + __log2f(tot[r]) : tot[r] == 0.f ? -INFINITY : NAN; /* base 2 */
            if (a.split.splits > 1) {
                a.split.part_lse[w.split * R + grow0 + (lane >> 2) + 8 * r] = lse2;
            } else if (a.lse) {
                const int qi = pr / a.group, hq = w.hk * a.group + pr % a.group;
                a.lse[w.b * a.ls[0] + hq * a.ls[1] + qi * a.ls[2]] = lse2 * 0.69314718055994531f;
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < 16 * (D / 4); i += NW * 32) {
        const int r = i / (D / 4), c4 = i % (D / 4), pr = w.mt * 16 + r;
        if (pr >= a.split.rows) continue;
        float4 v = *(const float4 *)(red + r * RS + c4 * 4);
#pragma unroll
        for (int u = 1; u < NW; ++u) {
            const float4 x = *(const float4 *)(red + (u * 16 + r) * RS + c4 * 4);
            v.x += x.x, v.y += x.y, v.z += x.z, v.w += x.w;
        }
        if (a.split.splits > 1) {
            *(float4 *)(a.split.part_o + (w.split * R + grow0 + r) * D + c4 * 4) = v;
        } else if (c4 * 4 < a.dv) {
            const int qi = pr / a.group, hq = w.hk * a.group + pr % a.group;
            T *o = (T *)a.o + w.b * a.os[0] + qi * a.os[1] + hq * a.os[2] + c4 * 4;
            *(uint2 *)o = make_uint2(pa_pack(v.x, v.y, tag), pa_pack(v.z, v.w, tag));
        }
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(PA_SM80_DEC_WARPS * 32) sm80_decode(const pa_fwd_args a)
{
    constexpr int NW = PA_SM80_DEC_WARPS, KT = PA_SM80_DEC_KT, CH = D / 8, ST = PA_SM80_DEC_STAGES(D);
    constexpr int TB = KT * D * 2;  /* bytes of one K or V tile */
    constexpr int NO = D / 8;       /* 8-wide column tiles of O */
    constexpr int RPP = 32 / CH;    /* tile rows one pass of the warp's 16-byte copies covers */
    constexpr int RS = D + 8;       /* fp32 row pitch of the merge buffer (padded: fewer conflicts) */
    constexpr bool QREG = D <= 128; /* d256 re-reads Q from shared memory: registers go to O */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* Let the combine grid (a programmatic dependent, see sm80_decode_instance) be scheduled now;
     * it waits for this whole grid before reading anything. */
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    static_assert(CH % 8 == 0 && KT % RPP == 0, "tile shape");
    static_assert(NW * 16 * RS * 4 <= NW * ST * 2 * TB, "merge buffer fits the rings");

    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ float sm_m[NW][16], sm_l[NW][16];
    static_assert(sizeof sm_m + sizeof sm_l == PA_SM80_DEC_STATIC_SMEM, "static shared memory");
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const uint32_t sq_base = sm80_smem_u32(smem);
    const uint32_t ring = sq_base + 16 * D * 2 + warp * ST * 2 * TB;
    const T tag = T();
    const T *qg = (const T *)a.q, *kg = (const T *)a.k, *vg = (const T *)a.v;

    const sm80_dec_work w = sm80_dec_work_of<KT, NW>(a, warp, lane);
    const int c = lane % CH;
    const sm80_dec_kv_loader<T, D, KT> load = {a, kg, vg, w.sk, ring, w.b, w.hk, c, lane / CH, c * 8 < a.dqk, c * 8 < a.dv};

    /* The first K/V tiles go out before Q is read, so that the two latencies overlap. */
#pragma unroll
    for (int p = 0; p < ST - 1; ++p) {
        if (p < w.n_w) load(p, w.s_lo + warp + NW * p);
        sm80_cp_async_commit();
    }
    uint32_t qf[QREG ? D / 16 : 1][4];
    sm80_dec_load_q<T, D, NW, QREG>(qf, a, w, qg, smem, sq_base, tid, lane);

    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, acc[NO][4];
#pragma unroll
    for (int j = 0; j < NO; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

    for (int i = 0; i < w.n_w; ++i) {
        const int t = w.s_lo + warp + NW * i, ip = i + ST - 1;
        if (ip < w.n_w) load(ip % ST, w.s_lo + warp + NW * ip); /* the slot tile i - 1 left */
        sm80_cp_async_commit();
        sm80_cp_async_wait<ST - 1>(); /* tile i landed for this lane ... */
        __syncwarp();                 /* ... and for the whole warp */
        const uint32_t kt = ring + (i % ST) * 2 * TB, vt = kt + TB;

        float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        sm80_dec_scores<T, D, QREG>(s, qf, sq_base, kt, lane, tag);
        sm80_dec_score_map<KT>(s, a, t, lane, w.lo, w.hi);
        uint32_t pf[4];
        sm80_dec_softmax_step<T, NO>(s, pf, m, l, acc, a.mult, tag);
        sm80_dec_pv<T, D>(acc, pf, vt, lane, tag);
        __syncwarp(); /* every lane is done with this slot before it is refilled */
    }
    sm80_cp_async_wait<0>();

    float mx[2], tot[2];
    float *red = (float *)(smem + 16 * D * 2);
    sm80_dec_merge<D, NW>(mx, tot, red, sm_m, sm_l, m, l, acc, a.mult, warp, lane);
    sm80_dec_finish<T, D, NW>(a, w, red, mx, tot, tid, warp, lane, tag);
}

/* Merges the splits of each packed row, one CTA per row, in a fixed order (deterministic). */
template <typename T, int D>
__global__ void __launch_bounds__(128) sm80_decode_combine(const pa_fwd_args a)
{
    /* One CTA per packed row. The splits are read in parallel: warp w takes splits w, w+4, ...,
     * and issues a batch of U of them before using any (the partials are L2 latency-bound, not
     * bandwidth-bound); the four warps' sums are added in warp order, so the result depends only
     * on the split count. */
    constexpr int E = D / 32, U = 8; /* columns per lane, splits per warp in flight */
    const int64_t R = (int64_t)a.batch * a.heads_kv * a.split.rows, grow = blockIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __shared__ float s_acc[4][D], s_tot[4];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the decode grid's partials are complete */
#endif
    float mx = -INFINITY;
    for (int s = lane; s < a.split.splits; s += 32) mx = fmaxf(mx, a.split.part_lse[s * R + grow]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float tot = 0.f, acc[E];
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = 0.f;
    for (int s0 = warp; s0 < a.split.splits; s0 += 4 * U) {
        float ls[U], po[U][E];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int s = s0 + 4 * u;
            ls[u] = s < a.split.splits ? a.split.part_lse[s * R + grow] : -INFINITY;
            const float *src = a.split.part_o + (s * R + grow) * D + lane * E;
#pragma unroll
            for (int e = 0; e < E; e += 2) { /* 8-byte loads: E is 2, 4 or 8 */
                const float2 v = s < a.split.splits ? *(const float2 *)(src + e) : make_float2(0.f, 0.f);
                po[u][e] = v.x, po[u][e + 1] = v.y;
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (s0 + 4 * u >= a.split.splits) break;
            /* a NaN partial (NaN scores) makes w NaN: fmaxf skipped it in mx, the sum keeps it */
            const float w = mx == -INFINITY ? (ls[u] == -INFINITY ? 0.f : NAN) : pa_ex2(ls[u] - mx);
            tot += w;
#pragma unroll
            for (int e = 0; e < E; ++e) acc[e] += w * po[u][e];
        }
    }
#pragma unroll
    for (int e = 0; e < E; ++e) s_acc[warp][lane * E + e] = acc[e];
    if (lane == 0) s_tot[warp] = tot;
    __syncthreads();
    if (warp) return;
    tot = ((s_tot[0] + s_tot[1]) + s_tot[2]) + s_tot[3];
#pragma unroll
    for (int e = 0; e < E; ++e)
        acc[e] = ((s_acc[0][lane * E + e] + s_acc[1][lane * E + e]) + s_acc[2][lane * E + e]) + s_acc[3][lane * E + e];
    const float inv = tot > 0.f ? 1.f / tot : tot == 0.f ? 0.f : NAN;
    const int64_t pr = grow % a.split.rows, bh = grow / a.split.rows;
    const int hk = (int)(bh % a.heads_kv), b = (int)(bh / a.heads_kv);
    const int qi = (int)(pr / a.group), hq = hk * a.group + (int)(pr % a.group);
    T *o = (T *)a.o + b * a.os[0] + qi * a.os[1] + hq * a.os[2] + lane * E;
    const T tag = T();
#pragma unroll
    for (int e = 0; e < E; e += 2)
        if (lane * E + e < a.dv)
            *(uint32_t *)(o + e) = tot == 0.f ? 0u : pa_pack(acc[e] * inv, acc[e + 1] * inv, tag);
    if (lane == 0 && a.lse)
        a.lse[b * a.ls[0] + hq * a.ls[1] + qi * a.ls[2]] =
            tot > 0.f ? (mx + __log2f(tot)) * 0.69314718055994531f : tot == 0.f ? -INFINITY : NAN;
}

template <typename T, int D>
static cudaError_t sm80_decode_instance(const pa_fwd_args *a, cudaStream_t stream)
{
    const size_t smem = PA_SM80_DEC_SMEM(D);
    static int optin_done[64]; /* this <T, D> instance, per device */
    cudaError_t e = pa_smem_optin_once(sm80_decode<T, D>, (int)smem, optin_done);
    if (e != cudaSuccess) return e;
    pa_fwd_args arg = *a;
    void *args[] = {&arg};
    const dim3 grid((unsigned)a->split.splits, (unsigned)(a->heads_kv * a->split.mtiles), (unsigned)a->batch);
    e = cudaLaunchKernel((const void *)sm80_decode<T, D>, grid, dim3(PA_SM80_DEC_WARPS * 32), args, smem, stream);
    if (e != cudaSuccess || a->split.splits == 1) return e;
    /* On sm_90+ the combine is launched as a programmatic dependent of the decode grid: it is
     * scheduled while the decode runs and waits in griddepcontrol.wait, which hides one launch
     * latency (about 2 us, a tenth of a batch-1 decode). */
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3((unsigned)((int64_t)a->batch * a->heads_kv * a->split.rows));
    cfg.blockDim = dim3(128);
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = a->split.pdl ? 1 : 0;
    return cudaLaunchKernelExC(&cfg, (const void *)sm80_decode_combine<T, D>, args);
}

#define SM80_DECODE_INSTANCE(D)                                                                 \
    cudaError_t sm80_decode_d##D(const pa_fwd_args *a, int bf16, cudaStream_t stream)         \
    {                                                                                            \
        return bf16 ? sm80_decode_instance<__nv_bfloat16, D>(a, stream)                          \
                    : sm80_decode_instance<__half, D>(a, stream);                                \
    }

#define PA_X(D) cudaError_t sm80_decode_d##D(const pa_fwd_args *a, int bf16, cudaStream_t stream);
PA_SM80_DEC_DIMS(PA_X)
#undef PA_X

#endif
