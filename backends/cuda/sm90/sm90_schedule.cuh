/* cuda-sm90's tile scheduler: which work items a persistent CTA takes, in which order, and what an
 * item is (sm90_work). Two orders:
 * - slots (sm90_work_of): nmb row blocks x batch x (KV) heads, CTA c taking slot c of every round of
 *   gridDim.x slots (snaking); under varlen a slot past its sequence's row blocks is a hole, skipped;
 * - compact (sm90_seek), for varlen batches that are not right-bounded and for every varlen call
 *   over a KV cache: only the row blocks that exist, sequence by sequence, CTA c taking items c,
 *   c + gridDim.x, ... With holes a CTA's count of real items depended on where they fell: a serving
 *   batch of 8 decodes and 2 chunks of 512 left some CTAs twice the mean.
 * Under varlen the producer warps walk the order and the consumers read each item from a 64-byte
 * shared-memory slot per Q tile (sm90_fwd): its mapping reads cu_seqlens, which the consumers would
 * otherwise keep in registers or load again on their critical path. Otherwise every thread maps its
 * items itself, from kernel parameters alone. */
#ifndef PORTATTN_SM90_SCHEDULE_CUH
#define PORTATTN_SM90_SCHEDULE_CUH

#include <stdint.h>

#include "block.h"   /* pa_tile_hull_of */
#include "fwd_args.h"
#include "problem.h" /* pa_cache_len_of */
#include "seqlen.h"  /* pa_seq_extent */

/* One work item: a row block of one (batch, head), and the key tiles its rows see. With GQA packing
 * (KV instances, kv.qpack > 1) the item is a block of nq query tokens of every query head of one KV
 * head: row r of the tile is token m0 + r % nq of head h + r / nq. */
struct sm90_work {
    int b, h, hk, tb;   /* batch, (first) head, KV head; tb: the Q map's batch coordinate (0 under varlen) */
    int tk;             /* the K/V maps' batch coordinate (tb, or b over a per-sequence KV cache) */
    int q0, k0, sq, sk; /* the sequence's packed start rows and lengths (0 and a.seqlen_* without varlen) */
    int m0, nq;         /* first query token of the block, and its tokens (BM, or BM / qpack) */
    int n_lo, n_hi;     /* key tiles [n_lo, n_hi) */
    int full_lo, full_hi; /* tiles every row of the block sees in full (no mask) */
    int pad;              /* 64 bytes: one shared-memory slot (sm90_fwd's handoff); b < 0 there: no more */
};
static_assert(sizeof(sm90_work) == 64, "a work item fills its 64-byte shared-memory slot");

/* What GQA packing (KV instances) makes of the pairs and the row blocks: the pairs' heads (KV heads
 * when packed) and a row block's query tokens (BM / qpack when packed). */
template <bool KV> __device__ __forceinline__ int sm90_pair_heads(const pa_fwd_args &a, const pa_kv_args &kv)
{
    return KV ? a.heads / kv.qpack : a.heads;
}
template <int BM, bool KV> __device__ __forceinline__ int sm90_block_rows(const pa_kv_args &kv)
{
    return KV ? BM / kv.qpack : BM;
}

/* The (batch, head) pair and row block of item `lin` (the order: sm90_work_of), in index type I. */
template <typename I>
__device__ __forceinline__ void sm90_pair_of(const pa_fwd_args &a, I lin, I nmb, I chunk, I heads, sm90_work &w, int &mb)
{
    const I nbh = (I)a.batch * heads;
    I bh;
    if (a.wr >= 0) { /* chunk ci holds pairs [c0, c0 + cn) (the last may be short) */
        const I ci = lin / (chunk * nmb), c0 = ci * chunk, l = lin - c0 * nmb;
        const I cn = nbh - c0 < chunk ? nbh - c0 : chunk, last = (nbh - 1) / chunk, lev = l / cn;
        bh = c0 + (l - lev * cn), mb = (int)(((last - ci) & 1) ? lev : nmb - 1 - lev);
    } else {
        bh = lin / nmb, mb = (int)(lin - bh * nmb);
    }
    const I b = bh / heads;
    w.b = (int)b, w.h = (int)(bh - b * heads);
}

/* The item of pair (w.b, w.h) (w.h a KV head under GQA packing) and row block mb: mb counted from the
 * sequence's end in a right-bounded slot order (the longest row blocks first whatever the length),
 * else, and always when `own` (the compact order), the sequence's own block. 0: a hole. */
template <int BM, int BN, bool VL, bool KV>
__device__ __forceinline__ int sm90_work_at(const pa_fwd_args &a, const pa_kv_args &kv, int mb, int nmb, bool own,
                                            sm90_work &w)
{
    const int g = KV ? kv.qpack : 1, rows = sm90_block_rows<BM, KV>(kv);
    if (KV && g > 1) w.hk = w.h, w.h *= g; /* the pair is a KV head with its whole group */
    else w.hk = w.h / a.group;
    w.q0 = 0, w.k0 = 0, w.sq = a.seqlen_q, w.sk = a.seqlen_k, w.tb = w.b;
    if (VL) { /* right-bounded: the t-th row block from this sequence's own end, as without varlen */
        pa_seq_extent(a.cu_q, w.b, a.seqlen_q, &w.q0, &w.sq);
        if (!KV) pa_seq_extent(a.cu_k, w.b, a.seqlen_k, &w.k0, &w.sk);
        if (!own && a.wr >= 0) mb -= nmb - (w.sq + rows - 1) / rows;
        if (mb < 0 || mb * rows >= w.sq) return 0;
        w.tb = 0;
    }
    w.tk = KV ? w.b : w.tb;
    if (KV && kv.seqused_k) w.sk = (int)pa_cache_len_of(kv.seqused_k[w.b], kv.seqlen_new, a.seqlen_k);
    w.m0 = mb * rows, w.nq = rows;
    const pa_tile_hull t = pa_tile_hull_of(w.m0, rows, BN, w.sq, w.sk, a.wl, a.wr);
    w.n_lo = t.n_lo, w.n_hi = t.n_hi, w.full_lo = t.full_lo, w.full_hi = t.full_hi;
    return 1;
}

/* Slot `lin` of nmb x batch x heads. Right-bounded masks (causal) go chunk by chunk of `chunk`
 * consecutive (batch, head) pairs (sized on the host so that a chunk's K/V stay in L2 while its row
 * blocks run: sm90_chunk), and within a chunk by row-block length, longest first in the last chunk
 * and in every second one before it, shortest first in the others: item lengths then rise and fall
 * without jumps, so the snake (sm90_item) still pairs long items with short ones (a sawtooth of
 * longest-first chunks left some CTAs up to 20% more work in a model of the schedule), and the grid
 * still ends on the shortest items. Otherwise the row blocks of a pair run together so that they
 * share K/V in L2. Under varlen nmb is the longest sequence's (a.seqlen_q is the packed total) and a
 * row block past its own sequence's end is no work (0 returned): cu_seqlens and lin are the same for
 * every thread, so all of them skip it or none, and no barrier phase is spent on it.
 * i32: every item index fits in 32 bits (the usual case; a varlen batch of very many sequences with
 * one long one may not). Every thread maps every item, and a 64-bit division is a call of some 70
 * instructions on the GPU where a 32-bit one is a short inline sequence. */
template <int BM, int BN, bool VL, bool KV>
__device__ __forceinline__ int sm90_work_of(const pa_fwd_args &a, const pa_kv_args &kv, int64_t lin, int nmb, int chunk,
                                            bool i32, sm90_work &w)
{
    const int heads = sm90_pair_heads<KV>(a, kv);
    int mb;
    if (i32) sm90_pair_of<uint32_t>(a, (uint32_t)lin, (uint32_t)nmb, (uint32_t)chunk, (uint32_t)heads, w, mb);
    else sm90_pair_of<int64_t>(a, lin, nmb, chunk, heads, w, mb);
    return sm90_work_at<BM, BN, VL, KV>(a, kv, mb, nmb, false, w);
}

/* The item a CTA takes in round r (items [base, base + gridDim.x)): in order on even rounds, in
 * reverse on odd ones. Causal items come longest first; a plain stride would hand CTA 0 the longest
 * of every round (about one item more than the mean over a long causal grid, 5-10%); the snake pairs
 * each long item with a short one. */
__device__ __forceinline__ int64_t sm90_item(int64_t r, int64_t base)
{
    return base + ((r & 1) ? gridDim.x - 1 - blockIdx.x : blockIdx.x);
}

/* Where a CTA is in its walk: the slot order's round and first slot, and the compact order's
 * sequence b (the one that held the last item taken), the items before it and its own. */
struct sm90_walk {
    int64_t r = 0, base = 0;
    int b = -1, n = 0, p0 = 0; /* item counts fit in 32 bits (supports() bounds the slots) */
};

/* Whether a call takes the compact order: varlen, and over a KV cache or not right-bounded (the
 * right-bounded dense order keeps its longest-first levels and L2 chunks). */
template <bool VL, bool KV> __device__ __forceinline__ bool sm90_compact(const pa_fwd_args &a)
{
    return VL && (KV || a.wr < 0);
}

/* Moves the walk to the sequence that holds compact item k (k only grows along a CTA's walk); false
 * past the last. A sequence's items are its row blocks (at most nmb, as the slot order visits) times
 * the pairs' heads. A whole warp calls it: lanes read 32 sequences' extents at once and scan their
 * item counts, so a walk over a batch of B sequences costs about B / 32 dependent loads a warp. */
__device__ __forceinline__ bool sm90_seek(const pa_fwd_args &a, int rows, int heads, int nmb, int k, sm90_walk &s)
{
    const int lane = threadIdx.x & 31;
    while (k >= s.p0 + s.n) {
        if (s.b + 1 >= a.batch) return false;
        const int q = s.b + 1 + lane;
        int items = 0;
        if (q < a.batch) {
            int start, len;
            pa_seq_extent(a.cu_q, q, a.seqlen_q, &start, &len);
            const int nb = (len + rows - 1) / rows;
            items = (nb < nmb ? nb : nmb) * heads;
        }
        int incl = items; /* items of sequences b + 1 .. q */
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int t = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += t;
        }
        const int past = s.p0 + s.n; /* items before sequence b + 1 */
        const unsigned hit = __ballot_sync(0xffffffffu, past + incl > k);
        const int l = hit ? __ffs(hit) - 1 : 31; /* no hit: move past all 32 and scan on */
        const int il = __shfl_sync(0xffffffffu, incl, l), nl = __shfl_sync(0xffffffffu, items, l);
        s.b += 1 + l, s.p0 = past + il - nl, s.n = nl;
    }
    return true;
}

/* The CTA's next work item into w; 0 when it has none left. nwork: the slot count. A whole warp
 * calls it under varlen (sm90_seek). Compact: a sequence's items head by head, the row blocks of a
 * head together (they share its K/V in L2), the longest first where the mask is right-bounded. */
template <int BM, int BN, bool VL, bool KV>
__device__ __forceinline__ int sm90_next(const pa_fwd_args &a, const pa_kv_args &kv, int64_t nwork, int nmb, int chunk,
                                         bool i32, sm90_walk &s, sm90_work &w)
{
    if (sm90_compact<VL, KV>(a)) {
        const int rows = sm90_block_rows<BM, KV>(kv), heads = sm90_pair_heads<KV>(a, kv);
        const int k = (int)(blockIdx.x + s.r++ * gridDim.x);
        if (!sm90_seek(a, rows, heads, nmb, k, s)) return 0;
        const int j = k - s.p0, nb = s.n / heads, hh = j / nb, mb = j - hh * nb;
        w.b = s.b, w.h = hh;
        return sm90_work_at<BM, BN, VL, KV>(a, kv, a.wr >= 0 ? nb - 1 - mb : mb, nmb, true, w);
    }
    for (; s.base < nwork; ++s.r, s.base += gridDim.x) {
        const int64_t lin = sm90_item(s.r, s.base);
        if (lin < nwork && sm90_work_of<BM, BN, VL, KV>(a, kv, lin, nmb, chunk, i32, w)) {
            ++s.r, s.base += gridDim.x;
            return 1;
        }
    }
    return 0;
}

#endif
