/* The cuda-sm90 forward kernel (FlashAttention-3 structure, first version), included by one .cu per
 * head dim and built for sm_90a only.
 *
 * A CTA owns BM = 64 x NC query rows of one (batch, head) and runs NC + 1 warpgroups: warpgroup 0
 * is the producer (one thread issues every TMA load; the group gives its registers away with
 * setmaxnreg), warpgroups 1..NC are consumers, each owning 64 of the rows in full (NC = 2, or 3 at
 * d64). K and V tiles of BN keys stream through an ST-slot ring: per slot a "K landed" and a
 * "V landed" barrier (TMA transaction counts), and "K free"/"V free" barriers every consumer arrives
 * on once its S, or its P V, product has read the slot.
 *
 * Per K/V tile a consumer issues S = Q K^T as wgmma (both operands from shared memory), applies
 * the mask and the online softmax (base 2, scale folded) to S in registers, packs P into the A
 * fragments of the register-A wgmma and issues O += P V with V as the N-major B operand; O is
 * normalised once at the end and written with 16-byte stores after a transpose across each quad.
 *
 * Shared memory holds every tile as 64-column blocks of 128-byte rows with the 128-byte swizzle the
 * TMA writes (chunk c of row r at c ^ (r & 7)); the wgmma descriptors describe the same layout.
 *
 * Varlen (a.cu_q set): the tensor maps span the packed tensors as one batch of all tokens; a CTA
 * reads its sequence's extent from cu_seqlens and offsets its TMA rows by the sequence's start, so
 * a tile that reaches past the sequence's end holds the next sequence's rows (the TMA zero-fills
 * only past the end of the whole tensor). Their scores are masked (a select to -inf, so P = 0), and
 * the V rows of the sequence's last, partial key tile past its last key are zeroed in shared memory
 * before P V reads them: 0 x V of the next sequence would be NaN where that V holds NaN or inf.
 *
 * KV cache (the KV instances): K and V come from per-sequence caches [batch, capacity] or, through a
 * page table, from a pool [pages, page size] (one TMA box per page a tile spans, the producer warp
 * sharing the page lookups), each sequence's length from seqused_k; the queries are per sequence or
 * packed (a serving call: sequence b's queries are the last tokens of its cache). The rows of the
 * last key tile past the cache length are zeroed as under varlen. */
#ifndef PORTATTN_SM90_FWD_KERNEL_CUH
#define PORTATTN_SM90_FWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_host.h" /* pa_cuda_device_info: the grid is one CTA per SM */
#include "block.h"       /* pa_row_keys, pa_tile_hull_of: which key tiles a row block visits */
#include "cuda_attr.cuh"
#include "cuda_math.cuh"   /* pa_ex2, pa_pack */
#include "fwd_args.h"
#include "kv_args.h"
#include "seqlen.h"      /* pa_seq_extent */
#include "sm90_launch.h"
#include "sm90_ptx.cuh"
#include "sm90_schedule.cuh" /* sm90_work, sm90_next: which work items a CTA takes */
#include "sm90_wgmma.cuh"

/* The per-thread softmax state of a consumer (two rows: rowc and rowc + 8 of the block) and the
 * work on one S tile: score transform, mask on boundary tiles, online softmax in base 2 (as
 * cuda-sm80: a row with nothing visible keeps max -inf and exponent base 0), P packed into the
 * A fragments of the register-A wgmma, the O correction factors in corr. */
template <typename T, int BN, bool PK> struct sm90_tile_softmax {
    float mrow[2], lsum[2];
    int dlo, dhi, kdiag, sk, lane;
    int row1; /* PK (GQA-packed rows): the second row's query token, which is not the first's + 8 */
    int transform, softcap; /* the score map, copied out of the kernel parameters */
    float mult, pre_mul, post_mul;

    __device__ __forceinline__ void init(const pa_fwd_args &a, int row, int row1_, int sq, int sk_, int lane_)
    {
        sk = sk_, lane = lane_, row1 = row1_;
        transform = a.transform, softcap = a.softcap, mult = a.mult, pre_mul = a.pre_mul, post_mul = a.post_mul;
        /* Key j is visible to row i iff dlo <= j - i <= dhi and j < sk (as cuda-sm80). */
        const int64_t span = (int64_t)sk + sq + 1;
        int64_t dl = a.wl < 0 ? -span : (int64_t)sk - sq - a.wl, dh = a.wr < 0 ? span : (int64_t)sk - sq + a.wr;
        dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
        kdiag = -row;
        mrow[0] = mrow[1] = -INFINITY, lsum[0] = lsum[1] = 0.f;
    }

    /* Rewrites S in place: base-2 logits (softcap, negative scale), -inf where masked, then P of
     * the online softmax (fp32; pack() rounds it into the A fragments later). */
    __device__ __forceinline__ void step(float (&sc)[BN / 2], int n, int full_lo, int full_hi, float (&corr)[2])
    {
        constexpr int NS = BN / 8;
        if (softcap) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) sc[i] = post_mul * tanhf(sc[i] * pre_mul);
        } else if (transform) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) sc[i] *= pre_mul;
        }
        if (n < full_lo || n >= full_hi) { /* boundary tile: mask per element */
            /* Visible keys of row r as offsets from this thread's first column of the tile, so that
             * each element's test is against a compile-time constant. */
            const int k0 = n * BN + (lane & 3) * 2;
            int lo[2], hi[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = PK && r ? row1 : -kdiag + 8 * r; /* key - row in [dlo, dhi], key < sk */
                lo[r] = (int)max((int64_t)row + dlo, (int64_t)0) - k0;
                hi[r] = (int)min((int64_t)row + dhi, (int64_t)sk - 1) - k0;
            }
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int c = j * 8 + (e & 1), r = e >> 1;
                    if (c < lo[r] || c > hi[r]) sc[4 * j + e] = -INFINITY;
                }
        }
        /* Row maxima as a tree (exact, as any order of fmaxf): a running max over the tile was a
         * chain of BN / 8 dependent instructions ahead of every exponential, and two consumer warps
         * per scheduler cannot hide that latency (ncu: "wait" stalls 1.6 per instruction, cuDNN 0.9). */
        float m0[NS], m1[NS];
#pragma unroll
        for (int j = 0; j < NS; ++j)
            m0[j] = fmaxf(sc[4 * j], sc[4 * j + 1]), m1[j] = fmaxf(sc[4 * j + 2], sc[4 * j + 3]);
#pragma unroll
        for (int st = 1; st < NS; st *= 2)
#pragma unroll
            for (int j = 0; j + st < NS; j += 2 * st)
                m0[j] = fmaxf(m0[j], m0[j + st]), m1[j] = fmaxf(m1[j], m1[j + st]);
        float mnew[2] = {fmaxf(mrow[0], m0[0]), fmaxf(mrow[1], m1[0])}, base2[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 1));
            mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 2));
#if PA_SM90_LAZY_RESCALE
            /* The base moves only when the max grew by more than 2^8 (P <= 2^8 otherwise); the first
             * visible key always moves it (from -inf: the difference is +inf, or NaN while nothing is
             * visible, and both fail the test). */
            if ((mnew[r] - mrow[r]) * mult <= PA_SM90_RESCALE_THRESHOLD) mnew[r] = mrow[r];
#endif
            base2[r] = mnew[r] == -INFINITY ? 0.f : mnew[r] * mult;
            corr[r] = pa_ex2(mrow[r] * mult - base2[r]);
            mrow[r] = mnew[r];
            lsum[r] *= corr[r];
        }
        /* Row sums in two interleaved partial sums per row: half the dependent chain of adds. */
        float part[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
        for (int j = 0; j < NS; ++j) {
            const float p0 = pa_ex2(fmaf(sc[4 * j], mult, -base2[0]));
            const float p1 = pa_ex2(fmaf(sc[4 * j + 1], mult, -base2[0]));
            const float p2 = pa_ex2(fmaf(sc[4 * j + 2], mult, -base2[1]));
            const float p3 = pa_ex2(fmaf(sc[4 * j + 3], mult, -base2[1]));
            part[0][j & 1] += p0 + p1;
            part[1][j & 1] += p2 + p3;
            sc[4 * j] = p0, sc[4 * j + 1] = p1, sc[4 * j + 2] = p2, sc[4 * j + 3] = p3;
        }
        lsum[0] += part[0][0] + part[0][1];
        lsum[1] += part[1][0] + part[1][1];
    }

    /* P (fp32 in the S layout) into the A fragments of the P V wgmma: the S accumulator of 16 keys
     * is, rounded to 16 bits, the register-A fragment of one k-step (as mma.sync's). */
    static __device__ __forceinline__ void pack(const float (&sc)[BN / 2], uint32_t (&pf)[BN / 16][4], T tag)
    {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            pf[j >> 1][(j & 1) * 2 + 0] = pa_pack(sc[4 * j], sc[4 * j + 1], tag);
            pf[j >> 1][(j & 1) * 2 + 1] = pa_pack(sc[4 * j + 2], sc[4 * j + 3], tag);
        }
    }
};

/* Named barrier of the consumer warpgroups (barrier 0 is __syncthreads'). */
#define PA_SM90_BAR_CONSUMERS 1
/* Ping-pong (PA_SM90_PINGPONG, sm90_launch.h): consumer warpgroup cw issues its wgmmas only in its turn,
 * named barrier PA_SM90_BAR_TURN + cw (its 128 threads wait, the 128 of the warpgroup before it in the
 * ring arrive), and hands the turn on once they are issued: one warpgroup's softmax runs while the
 * next one's products do. Every consumer issues at the same points (the same items and tiles), so the
 * ring stays in step; the last hand-on of the CTA is never taken. */
#define PA_SM90_BAR_TURN 2
#ifdef PA_SM90_DEVICE
template <int NC> __device__ __forceinline__ void sm90_turn_take(int cw)
{
    if (PA_SM90_PINGPONG) pa_named_sync(PA_SM90_BAR_TURN + cw, 256);
}
template <int NC> __device__ __forceinline__ void sm90_turn_pass(int cw)
{
    if (PA_SM90_PINGPONG) pa_named_arrive(PA_SM90_BAR_TURN + (cw + 1) % NC, 256);
}
#endif

/* Over a page pool a K/V tile of BN keys is one TMA box per page it spans, of min(BN, page) rows (the
 * maps' box), box j landing at row j * rows of the slot: a multiple of 8 rows (pages of at least
 * PA_SM90_MIN_PAGE), so each box's 128-byte swizzle is the whole tile's. Boxes wholly past the
 * sequence's last key are not loaded: their rows' scores are masked, and V's rows past the last key
 * are zeroed before P V reads them. The producer warp shares the boxes: lane j looks up box j's page
 * (one load latency a tile instead of one a box) and issues its TMA. */
template <int BN> struct sm90_pages {
    int rows, boxes, key0;

    __device__ __forceinline__ sm90_pages(const pa_kv_args &kv, const sm90_work &w, int n)
    {
        const int page = 1 << kv.page_shift;
        rows = BN < page ? BN : page, key0 = n * BN;
        boxes = min(BN / rows, (w.sk - key0 + rows - 1) / rows);
    }
    /* The page of box `lane` (0 for lanes past the last box), clamped into the pool. */
    __device__ __forceinline__ int page_of(const pa_kv_args &kv, const sm90_work &w, int lane) const
    {
        if (lane >= boxes) return 0;
        const int key = key0 + lane * rows;
        return (int)pa_page_clamp(kv.block_table[(int64_t)w.b * kv.bt_stride + (key >> kv.page_shift)], kv.num_pages);
    }
};

/* Producer warps of the KV instances with two consumer warpgroups: 2 (warp 0 loads Q and K, warp 1
 * V, so that the two tiles' page boxes issue in parallel) or 1 (-DPA_SM90_KV_PRODUCER_WARPS=1 in
 * CUDA flags, for an A/B). With three consumers (d64) the producer's 24 registers hold one warp's
 * loop only (two spilled). */
#ifndef PA_SM90_KV_PRODUCER_WARPS
#define PA_SM90_KV_PRODUCER_WARPS 2
#endif
#define PA_SM90_KV_PWARPS(nc) ((nc) == 3 ? 1 : PA_SM90_KV_PRODUCER_WARPS)
/* K or V tile n of work item w into the slot at dst (NB column blocks of BN rows), on barrier bar.
 * Called by the producer thread or warp: lane 0 issues a contiguous tile; over a page pool every lane
 * issues its box (pg: this lane's page from sm90_pages::page_of). */
#ifdef PA_SM90_DEVICE
template <int BN, int NB, bool KV>
__device__ __forceinline__ void sm90_load_kv(uint32_t dst, const CUtensorMap *map, uint32_t bar, const pa_kv_args &kv,
                                             const sm90_work &w, int n, int lane, int pg)
{
    constexpr int KBLK = BN * 128;
    if (KV && kv.block_table) {
        const sm90_pages<BN> pt(kv, w, n);
        if (lane == 0) pa_bar_expect_tx(bar, pt.boxes * pt.rows * 128 * NB);
        __syncwarp();
        if (lane < pt.boxes) {
            const int key = pt.key0 + lane * pt.rows;
#pragma unroll
            for (int c = 0; c < NB; ++c)
                pa_tma_load_4d(dst + c * KBLK + lane * pt.rows * 128, map, bar, c * 64,
                               key & ((1 << kv.page_shift) - 1), w.hk, pg);
        }
        return;
    }
    if (lane != 0) return; /* one thread of the producer warp issues a contiguous tile */
    pa_bar_expect_tx(bar, NB * KBLK);
#pragma unroll
    for (int c = 0; c < NB; ++c) pa_tma_load_4d(dst + c * KBLK, map, bar, c * 64, w.k0 + n * BN, w.hk, w.tk);
}
#endif

/* A 4x4 transpose across the quad (lanes 4i..4i+3 hold one accumulator row): on entry x[c] holds
 * this lane's two columns of the c-th 8-column tile of a group of four; on return lane t holds
 * tile t's eight columns in order, one 16-byte chunk. Two exchange rounds (bit 0, then bit 1 of lane
 * and slot), each a shuffle per slot pair and selects, so no register is indexed at run time. */
__device__ __forceinline__ void sm90_quad_transpose(uint32_t (&x)[4], int lane)
{
    const bool odd = lane & 1, hi = lane & 2;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, odd ? x[2 * p] : x[2 * p + 1], 1);
        if (odd) x[2 * p] = got;
        else x[2 * p + 1] = got;
    }
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        const uint32_t got = __shfl_xor_sync(0xffffffffu, hi ? x[p] : x[p + 2], 2);
        if (hi) x[p] = got;
        else x[p + 2] = got;
    }
}

/* Row r of item w's tile as (query token, head offset from w.h): token m0 + r, or under GQA packing
 * (PK, the KV instances) token m0 + r % nq of head r / nq. */
template <bool PK> __device__ __forceinline__ void sm90_row_of(const sm90_work &w, int r, int &row, int &head)
{
    head = PK ? r / w.nq : 0;
    row = w.m0 + r - head * w.nq;
}

/* Epilogue of a work item: row sums across the quad, normalise once, write O (its first Dv columns)
 * and the LSE. Varlen: packed row q0 + row, the batch strides ignored (LSE indexed (head, packed
 * token)). In the accumulator layout a lane holds 4 bytes of each 16-byte chunk of its row, and
 * storing those directly wrote half of every 32-byte sector per instruction (ncu: twice the sectors
 * O needs). The quad transposes each group of four tiles first, so every lane stores whole 16-byte
 * chunks and a quad fills 64 contiguous bytes of its row. The front end has checked O for 16-byte
 * rows (data and strides, pa_tiled_layout_ok) and the head dims for multiples of 8, so a chunk is
 * either wholly inside Dv or wholly past it. */
template <typename T, int NO, bool VL, bool PK>
__device__ __forceinline__ void sm90_epilogue(const pa_fwd_args &a, const sm90_work &w, const float (&o)[NO * 4],
                                              const float (&mrow)[2], const float (&lsum_part)[2], int rowc, int g,
                                              int lane, T tag)
{
    constexpr int NG = (NO + 3) / 4; /* groups of four 8-column tiles; with D % 32 == 16 the last has two */
    T *oh = (T *)a.o + (VL ? (int64_t)w.q0 * a.os[1] : w.b * a.os[0]) + w.h * a.os[2];
    const int64_t lse0 = (VL ? (int64_t)w.q0 * a.ls[2] : w.b * a.ls[0]) + w.h * a.ls[1];
    const int t = lane & 3;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = lsum_part[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        int row, head;
        sm90_row_of<PK>(w, rowc + 8 * r, row, head);
        const float inv = l > 0.f ? __fdividef(1.f, l) : 0.f;
        /* the shuffles below run in every lane; only the stores are guarded */
        const bool live = row < w.sq && head < g;
        T *orow = oh + head * a.os[2] + (int64_t)row * a.os[1] + t * 8;
#pragma unroll
        for (int g = 0; g < NG; ++g) {
            uint32_t x[4];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int j = 4 * g + c;
                const int jj = j < NO ? j : 0; /* past D: a zero that is never stored */
                x[c] = l == 0.f || j >= NO ? 0u /* no visible key: 0, not 0 x NaN */
                                           : pa_pack(o[4 * jj + 2 * r] * inv, o[4 * jj + 2 * r + 1] * inv, tag);
            }
            sm90_quad_transpose(x, lane);
            if (live && (4 * g + t) * 8 < a.dv) /* the instance's columns past the call's Dv are not the caller's */
                sm90_st_global16(orow + g * 32, x[0], x[1], x[2], x[3]);
        }
        if (live && a.lse && t == 0)
            a.lse[lse0 + head * a.ls[1] + (int64_t)row * a.ls[2]] =
                l > 0.f ? (mrow[r] * a.mult + __log2f(l)) * 0.69314718055994531f : l == 0.f ? -INFINITY : NAN;
    }
}

/* The barriers (8 bytes each, from `bar`): full_q[QS], empty_q[QS], then full_k[ST], full_v[ST],
 * empty_k[ST], empty_v[ST]; defined for the producer and the kernel, undefined after them. */
#define FULL_Q(s) (bar + 8 * (s))
#define EMPTY_Q(s) (bar + 8 * (QS + (s)))
#define FULL_K(s) (bar + 16 * QS + 8 * (s))
#define FULL_V(s) (bar + 16 * QS + 8 * (ST + (s)))
#define EMPTY_K(s) (bar + 16 * QS + 8 * (2 * ST + (s)))
#define EMPTY_V(s) (bar + 16 * QS + 8 * (3 * ST + (s)))
/* under varlen, after the QS + 1 work items: item slot i free again (every consumer thread has read it) */
#define EMPTY_I(i) (bar + 16 * (QS + 2 * ST) + 64 * (QS + 1) + 8 * (i))

#ifdef PA_SM90_DEVICE
/* The barriers' arrival counts: a TMA load's expect_tx arrival on every "landed" barrier, one per
 * consumer warpgroup on the Q and K/V "free" ones, one per consumer thread on the item slots. */
template <int QS, int ST, int NC, bool VL> __device__ __forceinline__ void sm90_init_barriers(uint32_t bar)
{
    for (int s = 0; s < QS; ++s) {
        pa_bar_init(FULL_Q(s), 1);
        pa_bar_init(EMPTY_Q(s), NC); /* one arrival per consumer warpgroup */
    }
    for (int s = 0; VL && s < QS + 1; ++s) pa_bar_init(EMPTY_I(s), 128 * NC); /* every consumer thread */
    for (int s = 0; s < ST; ++s) {
        pa_bar_init(FULL_K(s), 1);
        pa_bar_init(FULL_V(s), 1);
        pa_bar_init(EMPTY_K(s), NC);
        pa_bar_init(EMPTY_V(s), NC);
    }
    pa_bar_init_fence();
}

/* Waits until work item i's slot of the ring (sm90_fwd) is free: every consumer thread has read the
 * item that was there (the slot's barrier at empty_i + 8 x slot). Before the walk computes item i,
 * so that no item is held in registers while the producer waits. */
template <int QS> __device__ __forceinline__ void sm90_wait_item(uint32_t empty_i, int i)
{
    const int u = i / (QS + 1);
    if (u > 0) pa_bar_wait(empty_i + 8 * (i % (QS + 1)), (u - 1) & 1);
}

/* The producer warpgroup's work: its first warp (one thread of it but under varlen and over a KV
 * cache) walks the CTA's items, publishes each under varlen (items[], sm90_schedule.cuh), and loads
 * its Q tile and K/V tiles into the rings; over a KV cache with two consumer warpgroups a second warp
 * loads the V tiles. The other producer threads return at once. */
template <int D, int NC, int BN, int ST, bool VL, bool KV>
__device__ __forceinline__ void sm90_produce(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                             const pa_fwd_args &a, const pa_kv_args &kv, int64_t nwork, int nmb,
                                             int chunk, bool i32, uint32_t q_s, uint32_t k_s, uint32_t v_s,
                                             uint32_t bar, sm90_work *items)
{
    constexpr int BM = PA_SM90_BM_NC(NC), NB = PA_SM90_NB(D), QS = PA_SM90_QS(D);
    constexpr int QBLK = BM * 128, QBYTES = NB * QBLK, KVBYTES = NB * BN * 128;
    /* Over a KV cache a warp shares a page pool's boxes, and a second warp takes the V tiles;
     * under varlen a whole warp walks the schedule (sm90_seek), one thread issuing the loads. */
    const int tid = threadIdx.x;
    if (KV ? tid >= 32 * PA_SM90_KV_PWARPS(NC) : VL ? tid >= 32 : tid != 0) return;
    const int lane = KV || VL ? tid & 31 : 0;
    const bool does_k = !KV || tid < 32, does_v = !KV || PA_SM90_KV_PWARPS(NC) == 1 || tid >= 32;
    int it = 0, qi = 0; /* K/V tiles and Q tiles loaded so far */
    sm90_walk walk;
    for (;;) {
        sm90_work w;
        if (VL && does_k) sm90_wait_item<QS>(EMPTY_I(0), qi);
        if (!sm90_next<BM, BN, VL, KV>(a, kv, nwork, nmb, chunk, i32, walk, w)) break;
        const int qs = qi % QS, qu = qi / QS;
        if (qu > 0 && does_k) pa_bar_wait(EMPTY_Q(qs), (qu - 1) & 1);
        if (tid == 0) {
            if (VL) items[qi % (QS + 1)] = w;
            /* a packed tile's box is nq tokens x qpack heads, which may leave the last rows unwritten */
            pa_bar_expect_tx(FULL_Q(qs), KV ? NB * w.nq * kv.qpack * 128 : QBYTES);
#pragma unroll
            for (int c = 0; c < NB; ++c)
                pa_tma_load_4d(q_s + qs * QBYTES + c * QBLK, tq, FULL_Q(qs), c * 64, w.q0 + w.m0, w.h, w.tb);
        }
        ++qi;
        /* Page lookups run one tile ahead: tile n+1's entries are in flight while tile n waits
         * for its slots and issues its boxes. */
        const bool paged = KV && kv.block_table;
        int pg_next = paged && w.n_lo < w.n_hi ? sm90_pages<BN>(kv, w, w.n_lo).page_of(kv, w, lane) : 0;
        for (int n = w.n_lo; n < w.n_hi; ++n, ++it) {
            const int s = it % ST, u = it / ST, pg = pg_next;
            if (paged && n + 1 < w.n_hi) pg_next = sm90_pages<BN>(kv, w, n + 1).page_of(kv, w, lane);
            /* K and V slots are given back separately: K once every S product on it is done, V
             * once every P V product is, so K_{n+1} can land while P_n V_n still reads V_n. */
            if (does_k) {
                if (u > 0) pa_bar_wait(EMPTY_K(s), (u - 1) & 1);
                sm90_load_kv<BN, NB, KV>(k_s + s * KVBYTES, tk, FULL_K(s), kv, w, n, lane, pg);
            }
            if (does_v) {
                if (u > 0) pa_bar_wait(EMPTY_V(s), (u - 1) & 1);
                sm90_load_kv<BN, NB, KV>(v_s + s * KVBYTES, tv, FULL_V(s), kv, w, n, lane, pg);
            }
        }
    }
    if (VL && tid == 0) { /* the end: a slot whose item says so, on a plain arrival */
        const int qs = qi % QS, qu = qi / QS;
        if (qu > 0) pa_bar_wait(EMPTY_Q(qs), (qu - 1) & 1);
        items[qi % (QS + 1)].b = -1; /* its slot: waited for at the top of the loop */
        pa_bar_arrive(FULL_Q(qs));
    }
}
#endif

#ifdef PA_SM90_DEVICE
/* S = Q K^T of the K tile in slot s of the ring at k_s, committed as one wgmma group (q: this
 * warpgroup's 64 rows of the first Q column block; both operands from shared memory). The slot's
 * address is formed here, between the descriptors, where the kernel's loop formed it. */
template <int D, int NC, int BN, typename T>
__device__ __forceinline__ void sm90_issue_s(float (&sc)[BN / 2], uint32_t q, uint32_t k_s, int s, T tag)
{
    constexpr int QBLK = PA_SM90_BM_NC(NC) * 128, KBLK = BN * 128, KVBYTES = PA_SM90_NB(D) * KBLK;
    sm90_wgmma_ss0<BN>(sc, sm90_desc_sw128(q, 16, 1024), sm90_desc_sw128(k_s + s * KVBYTES, 16, 1024), tag);
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk)
        sm90_wgmma_ss<BN>(sc, sm90_desc_sw128(q + (kk / 4) * QBLK + (kk % 4) * 32, 16, 1024),
                          sm90_desc_sw128(k_s + s * KVBYTES + (kk / 4) * KBLK + (kk % 4) * 32, 16, 1024), 1, tag);
    sm90_wgmma_commit();
}

/* O *= corr: before any wgmma of the step is issued (ptxas serializes wgmmas whose input registers
 * are written inside the pipeline stage). */
template <int D> __device__ __forceinline__ void sm90_rescale_o(float (&o)[D / 2], const float (&corr)[2])
{
#if PA_SM90_LAZY_RESCALE /* a warp none of whose rows moved its base skips the multiplies */
    if (!__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) return;
#endif
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        o[4 * j] *= corr[0], o[4 * j + 1] *= corr[0];
        o[4 * j + 2] *= corr[1], o[4 * j + 3] *= corr[1];
    }
#pragma unroll
    for (int i = 0; i < D / 2; ++i) sm90_reg_fence(o[i]);
}

/* O += P V of the V tile in slot s of the ring at v_s, its own wgmma group (its V has landed: no
 * barrier loop may sit between the wgmmas of a stage either). */
template <int D, int BN, typename T>
__device__ __forceinline__ void sm90_issue_pv(float (&o)[D / 2], uint32_t (&pf)[BN / 16][4], uint32_t v_s, int s, T tag)
{
    constexpr int KBLK = BN * 128, KVBYTES = PA_SM90_NB(D) * KBLK;
#pragma unroll
    for (int t = 0; t < BN / 16; ++t)
        sm90_wgmma_rs<D>(o, pf[t], sm90_desc_sw128(v_s + s * KVBYTES + t * 16 * 128, KBLK, 1024), 1, tag);
    sm90_wgmma_commit();
}

/* The V rows of an item's last key tile past its last key, zeroed before P V reads them. Varlen:
 * the only tile that can reach past the sequence's last key is its last one. Its V rows from key sk
 * on hold the next sequence's values (unless the tensor ends there: the TMA zero-filled them); P is
 * 0 there but 0 x NaN is not, so they become zeros first. In each 64-column block key r is bytes
 * [r * 128, r * 128 + 128) (the swizzle only permutes the 16-byte chunks inside a row), so rows vz..
 * of a block are one contiguous range. All consumer threads share the stores, order them before the
 * async proxy (wgmma) and meet at a named barrier: neither warpgroup's P V reads the slot before
 * every zero is written. The condition is CTA-uniform (sk, k0, n), so every consumer thread reaches
 * the barrier. Over a KV cache the rows past the cache length are the cache's unused rows, or rows
 * of a page box that was not loaded (sm90_load_kv): zeroed the same way. */
template <int D, int NC, int BN, bool VL, bool KV>
__device__ __forceinline__ void sm90_zero_v_tail(const pa_fwd_args &a, const sm90_work &w, int sk, int n, uint32_t v_s,
                                                 int s, int tid)
{
    constexpr int NB = PA_SM90_NB(D), KBLK = BN * 128, KVBYTES = NB * KBLK;
    const int vz = KV || (VL && w.k0 + sk < a.seqlen_k) ? sk - n * BN : BN;
    if (vz < BN) {
        const int ct = tid - 128, nz = (BN - vz) * 8; /* 16-byte chunks to zero per column block */
        const uint32_t vt = v_s + s * KVBYTES + vz * 128;
#pragma unroll
        for (int c = 0; c < NB; ++c)
#pragma unroll 1
            for (int i = ct; i < nz; i += NC * 128) sm90_st_shared_zero16(vt + c * KBLK + i * 16);
        pa_fence_proxy_async();
        pa_named_sync(PA_SM90_BAR_CONSUMERS, NC * 128);
    }
}

/* After the wait for P V: O, S and P were live until then (the caller then gives the V slot back). */
template <int D, int BN>
__device__ __forceinline__ void sm90_pv_retired(float (&o)[D / 2], float (&sc)[BN / 2], uint32_t (&pf)[BN / 16][4])
{
#pragma unroll
    for (int i = 0; i < D / 2; ++i) sm90_reg_fence(o[i]);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) sm90_reg_fence(sc[i]);
#pragma unroll
    for (int t = 0; t < BN / 16; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) sm90_reg_fence(pf[t][i]);
}

/* An item's first key tile: S = Q K^T with nothing to overlap (the pipeline's fill), its softmax step
 * and P packed; Q is given back after it if it is the item's only tile, at once if it has none. */
template <int D, int NC, int BN, int ST, int QS, typename T, bool KV>
__device__ __forceinline__ void sm90_first_s(sm90_tile_softmax<T, BN, KV> &sm, float (&sc)[BN / 2], float (&corr)[2],
                                             uint32_t (&pf)[BN / 16][4], const sm90_work &w, int n_lo, int n_hi,
                                             int it, uint32_t q_wg, uint32_t k_s, uint32_t bar, uint32_t empty_q,
                                             bool leader, int cw, T tag)
{
    if (n_lo < n_hi) {
        const int s0 = it % ST;
        pa_bar_wait(FULL_K(s0), (it / ST) & 1);
        sm90_turn_take<NC>(cw);
        sm90_wgmma_fence();
        sm90_issue_s<D, NC, BN>(sc, q_wg, k_s, s0, tag);
        sm90_turn_pass<NC>(cw);
        sm90_wgmma_wait<0>();
        if (leader) {
            pa_bar_arrive(EMPTY_K(s0));
            if (n_lo + 1 == n_hi) pa_bar_arrive(empty_q);
        }
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) sm90_reg_fence(sc[i]);
        sm.step(sc, n_lo, w.full_lo, w.full_hi, corr);
        sm.pack(sc, pf, tag);
    } else if (leader) {
        pa_bar_arrive(empty_q); /* no key tile: Q was never read */
    }
}

/* A key tile n but the item's last, overlapped with the next: S_{n+1} is issued before P_n V_n, and its
 * mask, max and exponentials run while P_n V_n does (FlashAttention-3's order); only the rounding of
 * P_{n+1} into the A fragments waits for P_n V_n, which still reads them. No branch sits around a wgmma
 * of a stage and only S (whose group has retired) is rewritten inside one, so ptxas keeps both in
 * flight. Q is given back after S of the item's last tile. */
template <int D, int NC, int BN, int ST, int QS, typename T, bool KV>
__device__ __forceinline__ void sm90_mid_step(sm90_tile_softmax<T, BN, KV> &sm, float (&o)[D / 2], float (&sc)[BN / 2],
                                              float (&corr)[2], uint32_t (&pf)[BN / 16][4], const sm90_work &w, int n,
                                              int n_hi, int it, uint32_t q_wg, uint32_t k_s, uint32_t v_s, uint32_t bar,
                                              uint32_t empty_q, bool leader, int cw, T tag)
{
    const int s = it % ST, s1 = (it + 1) % ST;
    sm90_rescale_o<D>(o, corr);
    pa_bar_wait(FULL_K(s1), ((it + 1) / ST) & 1);
    pa_bar_wait(FULL_V(s), (it / ST) & 1);
    sm90_turn_take<NC>(cw);
    sm90_wgmma_fence();
    sm90_issue_s<D, NC, BN>(sc, q_wg, k_s, s1, tag);
    sm90_issue_pv<D, BN>(o, pf, v_s, s, tag);
    sm90_turn_pass<NC>(cw);
    sm90_wgmma_wait<1>(); /* S_{n+1} done; P_n V_n may still run */
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) sm90_reg_fence(sc[i]);
    if (leader) {
        pa_bar_arrive(EMPTY_K(s1));
        if (n + 2 == n_hi) pa_bar_arrive(empty_q);
    }
    sm.step(sc, n + 1, w.full_lo, w.full_hi, corr);
    sm90_wgmma_wait<0>();
    sm90_pv_retired<D, BN>(o, sc, pf);
    if (leader) pa_bar_arrive(EMPTY_V(s));
    sm.pack(sc, pf, tag);
}

/* An item's last key tile: its P V alone, after the V rows past the item's last key are zeroed (the
 * caller counts the tile). */
template <int D, int NC, int BN, int ST, int QS, bool VL, bool KV, typename T>
__device__ __forceinline__ void sm90_last_pv(const pa_fwd_args &a, float (&o)[D / 2], float (&sc)[BN / 2],
                                             const float (&corr)[2], uint32_t (&pf)[BN / 16][4], const sm90_work &w,
                                             int sk, int n, int it, uint32_t v_s, uint32_t bar, int tid, bool leader,
                                             int cw, T tag)
{
    const int s = it % ST;
    sm90_rescale_o<D>(o, corr);
    pa_bar_wait(FULL_V(s), (it / ST) & 1);
    sm90_zero_v_tail<D, NC, BN, VL, KV>(a, w, sk, n, v_s, s, tid);
    sm90_turn_take<NC>(cw);
    sm90_wgmma_fence();
    sm90_issue_pv<D, BN>(o, pf, v_s, s, tag);
    sm90_turn_pass<NC>(cw);
    sm90_wgmma_wait<0>();
    sm90_pv_retired<D, BN>(o, sc, pf);
    if (leader) pa_bar_arrive(EMPTY_V(s));
}

#endif

/* VL: the varlen instance. The per-sequence extents as run-time values cost the non-varlen kernel
 * 5-10% on the H200 (registers where kernel parameters were), so varlen is its own instance.
 *
 * Persistent: gridDim.x CTAs (one per SM) walk the work items in the order sm90_schedule.cuh gives
 * (sm90_next). The K/V ring runs on across items (`it` counts tiles over the CTA's whole life, so slot
 * and phase follow from it), and the Q tiles (QS slots) have "Q free" barriers of their own: the consumers give a slot
 * back as soon as their last S product of an item has read it. With two slots the producer runs a
 * whole item ahead (the next item's Q and first K/V tiles are in flight while this item's S waits);
 * with one, the next item's loads start only after this item's last S. Short sequences, where an item is
 * one or two key tiles, pay the load latency once per CTA instead of once per item. */
template <typename T, int D, int NC, int BN, int ST, bool VL, bool KV>
__global__ void __launch_bounds__(PA_SM90_THREADS_NC(NC), 1)
    sm90_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
             const __grid_constant__ CUtensorMap tv, const pa_fwd_args a, const int nmb, const int chunk)
{
#ifdef PA_SM90_DEVICE
    const pa_kv_args &kv = a.kv; /* the KV cache (KV instances only) */
    constexpr int BM = PA_SM90_BM_NC(NC), NB = PA_SM90_NB(D); /* rows, 64-column blocks */
    constexpr int QBLK = BM * 128, KBLK = BN * 128;    /* bytes of one column block of Q, of K or V */
    constexpr int QBYTES = NB * QBLK, KVBYTES = NB * KBLK, QS = PA_SM90_QS(D);
    constexpr int NO = D / 8;              /* 8-wide column tiles of O */
    static_assert(D % 16 == 0 && D <= 256 && BN % 16 == 0 && BN <= 256, "tile shape");
    /* the host's size (opt-in, supports()) and this carve-up: Q and K/V slots, barriers, work items, alignment */
    static_assert(QS * QBYTES + 2 * ST * KVBYTES + 8 * (2 * QS + 4 * ST) + 72 * (QS + 1) + 1024 ==
                      PA_SM90_SMEM_SHAPE(D, NC, BN, ST),
                  "shared memory size");

    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (pa_smem_u32(smem_raw) + 1023) & ~1023u; /* swizzle atoms need 1 KB alignment */
    const uint32_t q_s = base, k_s = q_s + QS * QBYTES, v_s = k_s + ST * KVBYTES, bar = v_s + ST * KVBYTES;
    /* Under varlen, after the barriers: a ring of QS + 1 work items (item i in slot i % (QS + 1)),
     * each written by the producer before its Q load, whose barrier orders it before the consumers'
     * reads (the end of the walk: an item with b < 0), and given back by every consumer thread after
     * its epilogue (EMPTY_I). With one slot more than Q has, the producer rarely waits for one: it
     * writes item i after the Q slot of item i - QS came back, i.e. after item i - QS - 1, the slot's
     * previous item, was finished. */
    sm90_work *const items = (sm90_work *)(smem_raw + (bar + 16 * (QS + 2 * ST) - pa_smem_u32(smem_raw)));

    const int tid = threadIdx.x, wg = tid >> 7;
    const int64_t nwork = (int64_t)nmb * a.batch * sm90_pair_heads<KV>(a, kv);
    const bool i32 = nwork <= INT32_MAX;

    if (tid == 0) sm90_init_barriers<QS, ST, NC, VL>(bar);
    __syncthreads();

    if (wg == 0) { /* producer */
        sm90_setmaxnreg_dec<PA_SM90_PRODUCER_REGS_NC(NC)>();
        sm90_produce<D, NC, BN, ST, VL, KV>(&tq, &tk, &tv, a, kv, nwork, nmb, chunk, i32, q_s, k_s, v_s, bar, items);
        return;
    }

    /* consumers */
    sm90_setmaxnreg_inc<PA_SM90_CONSUMER_REGS_NC(NC)>();
    const int cw = wg - 1, lane = tid & 31, wq = (tid >> 5) & 3;
    const int rowc = cw * 64 + wq * 16 + (lane >> 2); /* this thread's rows in the block: rowc, rowc + 8 */
    const T tag = T();
    const bool leader = (tid & 127) == 0;     /* arrives on the free barriers for its warpgroup */
    if (PA_SM90_PINGPONG && cw == NC - 1) pa_named_arrive(PA_SM90_BAR_TURN, 256); /* the first turn: warpgroup 0's */
    int it = 0, qi = 0;
    sm90_walk walk;
    for (;;) {
        const int qs = qi % QS, islot = qi % (QS + 1);
        sm90_work wr;
        if (VL) { /* the producer's item (its mapping reads cu_seqlens) */
            pa_bar_wait(FULL_Q(qs), (qi / QS) & 1);
            if (items[islot].b < 0) break;
        } else { /* a few instructions on kernel parameters, which registers need not hold */
            if (!sm90_next<BM, BN, VL, KV>(a, kv, nwork, nmb, chunk, i32, walk, wr)) break;
            pa_bar_wait(FULL_Q(qs), (qi / QS) & 1);
        }
        ++qi;
        /* Under varlen the item stays in its slot until every consumer thread gives the slot back
         * after the epilogue, so it is read from there where needed rather than held in registers. */
        const sm90_work &w = VL ? items[islot] : wr;
        const int n_lo = w.n_lo, n_hi = w.n_hi, sk = w.sk;
        int qrow[2], head; /* the query tokens of this thread's rows rowc and rowc + 8 (heads: the epilogue's) */
        sm90_row_of<KV>(w, rowc, qrow[0], head);
        sm90_row_of<KV>(w, rowc + 8, qrow[1], head);
        sm90_tile_softmax<T, BN, KV> sm;
        sm.init(a, qrow[0], qrow[1], w.sq, sk, lane);

        float o[D / 2];
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
        float sc[BN / 2], corr[2];
        uint32_t pf[BN / 16][4];

        const uint32_t q_wg = q_s + qs * QBYTES + cw * 64 * 128; /* this warpgroup's 64 rows of each column block */
        const uint32_t empty_q = EMPTY_Q(qs);
        /* Software pipeline inside the warpgroup (FlashAttention-3's intra-warpgroup overlap): while
         * O += P_n V_n runs on the tensor cores, S_{n+1} = Q K_{n+1}^T has already been issued ahead
         * of it and its softmax runs on the other units. P_n stays in registers the async wgmma
         * reads, so P_{n+1} goes to a second set. Q is given back after the item's last S product. */
        sm90_first_s<D, NC, BN, ST, QS>(sm, sc, corr, pf, w, n_lo, n_hi, it, q_wg, k_s, bar, empty_q, leader, cw, tag);

        /* Every tile but the last overlaps S_{n+1} with P_n V_n. */
        int n = n_lo;
        for (; n + 1 < n_hi; ++n, ++it)
            sm90_mid_step<D, NC, BN, ST, QS>(sm, o, sc, corr, pf, w, n, n_hi, it, q_wg, k_s, v_s, bar, empty_q, leader,
                                             cw, tag);
        if (n < n_hi) { /* the last tile: its P V alone */
            sm90_last_pv<D, NC, BN, ST, QS, VL, KV>(a, o, sc, corr, pf, w, sk, n, it, v_s, bar, tid, leader, cw, tag);
            ++it;
        }
        sm90_epilogue<T, NO, VL, KV>(a, w, o, sm.mrow, sm.lsum, rowc, KV ? kv.qpack : 1, lane, tag);
        /* The item slot back: each thread arrives after its own reads of it, so its release covers
         * them by program order alone. (One lane arriving for its warp after __syncwarp drew
         * racecheck's write-after-read reports here, though not in tests/probes' small copy of it.) */
        if (VL) pa_bar_arrive(EMPTY_I(islot));
    }
#undef FULL_Q
#undef EMPTY_Q
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V
#undef EMPTY_I
#endif
}

/* Pairs per chunk of the right-bounded item order (sm90_work_of): l2_pairs (the pairs whose K/V fit
 * in half the L2) but at least six rounds of the grid's items, then evened out over the chunks that
 * makes (a short last chunk unbalanced the schedule) and rounded up to whole GQA groups; at most
 * every pair (one chunk: longest first over all pairs, the order before chunks). Six rounds and the
 * evening: the smallest bound that kept a model of the snake schedule within 3.5% of the one-chunk
 * order's balance over s 512-16k, d 64-256, 8-64 heads (mean 0.3% worse). */
static int sm90_chunk(int64_t nbh, int64_t group, int64_t l2_pairs, int64_t nmb, int64_t grid)
{
    const int64_t g = group > 0 ? group : 1;
    const int64_t rounds = (6 * grid + nmb - 1) / nmb;
    int64_t c = l2_pairs > rounds ? l2_pairs : rounds;
    if (c >= nbh) return (int)nbh;
    const int64_t n = (nbh + c - 1) / c; /* chunks */
    c = ((nbh + n - 1) / n + g - 1) / g * g;
    return (int)(c > nbh ? nbh : c < 1 ? 1 : c);
}

/* max_sq: the longest sequence's queries (the grid's row blocks per (batch, head)); seqlen_q without
 * varlen, max_seqlen_q with it. l2_pairs: see sm90_chunk. With a->kv.qpack > 1 (KV instances) the
 * pairs are (batch, KV head) and a row block holds BM / qpack tokens of each. */
template <typename T, int D, int NC, int BN, int ST, bool VL, bool KV>
static cudaError_t sm90_launch_instance(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                        const pa_fwd_args *a, int64_t max_sq, int64_t l2_pairs, cudaStream_t stream)
{
    const int smem = PA_SM90_SMEM_SHAPE(D, NC, BN, ST);
    auto kern = sm90_fwd<T, D, NC, BN, ST, VL, KV>;
    static int optin_done[64];
    cudaError_t e = pa_smem_optin_once(kern, smem, optin_done);
    if (e != cudaSuccess) return e;
    int sms = 0;
    if (!pa_cuda_device_info(NULL, NULL, &sms, NULL, 0) || sms < 1) sms = 1;
    /* One CTA per SM (shared memory allows no second), each walking the work items. */
    const int g = a->kv.qpack > 1 ? a->kv.qpack : 1, rows = PA_SM90_BM_NC(NC) / g;
    const int64_t nmb = (max_sq + rows - 1) / rows, pairs = (int64_t)a->batch * (a->heads / g), nwork = nmb * pairs;
    const unsigned grid = (unsigned)(nwork < sms ? nwork : sms);
    CUtensorMap q = *tq, k = *tk, v = *tv;
    pa_fwd_args arg = *a;
    int nmb_arg = (int)nmb, chunk = sm90_chunk(pairs, g > 1 ? 1 : a->group, l2_pairs / g, nmb, grid);
    void *args[] = {&q, &k, &v, &arg, &nmb_arg, &chunk};
    return cudaLaunchKernel((const void *)kern, dim3(grid), dim3(PA_SM90_THREADS_NC(NC)), args, smem, stream);
}

/* The four instances of a shape: f16/bf16, varlen queries or not. */
template <int D, int NC, int BN, int ST, bool KV>
static cudaError_t sm90_launch_shape(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                     const pa_fwd_args *a, int bf16, int64_t max_sq, int64_t l2_pairs,
                                     cudaStream_t stream)
{
#define PA_SM90_GO(T, VL) sm90_launch_instance<T, D, NC, BN, ST, VL, KV>(tq, tk, tv, a, max_sq, l2_pairs, stream)
    if (a->cu_q) return bf16 ? PA_SM90_GO(__nv_bfloat16, true) : PA_SM90_GO(__half, true);
    return bf16 ? PA_SM90_GO(__nv_bfloat16, false) : PA_SM90_GO(__half, false);
#undef PA_SM90_GO
}

/* The instance files define these for their head dim: the default shape and the short-query one
 * where the head dim has it (nc = PA_SM90_NC_SHORT(D)); and, in files of their own (they build in
 * parallel), the KV-cache instances of PA_SM90_KV_DIMS. */
#define SM90_INSTANCE(D, BN, ST)                                                                              \
    cudaError_t sm90_launch_d##D(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,           \
                                 const pa_fwd_args *a, int bf16, int nc, int64_t max_sq, int64_t l2_pairs,        \
                                 cudaStream_t stream)                                                           \
    {                                                                                                           \
        if constexpr (PA_SM90_NC_SHORT(D) != 0)                                                                 \
            if (nc == PA_SM90_NC_SHORT(D))                                                                      \
                return sm90_launch_shape<D, PA_SM90_NC_SHORT(D), BN, ST, false>(tq, tk, tv, a, bf16, max_sq,    \
                                                                                l2_pairs, stream);              \
        return sm90_launch_shape<D, PA_SM90_NC(D), BN, ST, false>(tq, tk, tv, a, bf16, max_sq, l2_pairs,        \
                                                                  stream);                                      \
    }
#define SM90_KV_INSTANCE(D, BN, ST)                                                                           \
    cudaError_t sm90_launch_kv_d##D(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,        \
                                    const pa_fwd_args *a, int bf16, int64_t max_sq, int64_t l2_pairs,             \
                                    cudaStream_t stream)                                                        \
    {                                                                                                           \
        return sm90_launch_shape<D, PA_SM90_NC(D), BN, ST, true>(tq, tk, tv, a, bf16, max_sq, l2_pairs, stream); \
    }

#endif
