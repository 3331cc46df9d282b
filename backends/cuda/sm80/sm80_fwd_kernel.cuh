/* The cuda-sm80 forward kernel (FlashAttention-2 structure), included by one .cu per head dim.
 *
 * A CTA owns BM query rows of one (batch, head); each of its warps owns MT x 16 of those rows in
 * full, so the softmax needs only quad shuffles, never shared memory. K/V tiles of BN keys stream
 * through a cp.async ring of STAGES slots each; V_j lands while S = Q K_j^T is computed and
 * K_{j+STAGES} while P V_j is. Scores stay in registers: the S accumulator fragment of mma.m16n8k16 is, once
 * rounded to 16 bits, the A fragment of the P V product. The online softmax runs in base 2 with
 * the scale folded into one FFMA per score; O is normalised once, at the end.
 *
 * Shared memory rows are 16-byte chunks XOR-swizzled by (row & 7) inside each 128-byte group, so
 * the eight rows that one ldmatrix phase reads (or one cp.async phase writes) hit 32 distinct banks. */
#ifndef PORTATTN_SM80_FWD_KERNEL_CUH
#define PORTATTN_SM80_FWD_KERNEL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "block.h"
#include "cuda_attr.cuh"
#include "fwd_args.h"
#include "kv_args.h"
#include "seqlen.h"
#include "sm80_launch.h"
#include "sm80_ptx.cuh"

typedef pa_fwd_args sm80_args; /* fwd_args.h (filled by pa_fwd_fill_args): shared with cuda-sm90 and the HIP kernel */

/* Where a paged instance finds the K or V rows of one sequence and head: bt_row NULL = contiguous
 * rows from the tile's base pointer; else pages of the pool (kv_args.h). */
struct sm80_pager {
    const int32_t *bt_row;
    int64_t pstride, num_pages;
    int shift;
};

/* ROWS x D tile from global rows [row0, row0 + ROWS) into shared: zeros from row `limit` on and in
 * the column chunks from `nch` on (the call's head dim is under the instance's D; those chunks cost
 * no memory traffic). Each thread keeps one column chunk and steps down the rows with a pointer
 * increment (far fewer registers than per-chunk index math); with padded rows (d32) the pad chunks'
 * threads idle. A pass of RS rows keeps the swizzle phase when RS % 8 == 0; with RS % 8 == 4 (d256,
 * 4 warps) odd passes take the other phase, one precomputed address each. Rows of 24 chunks (d160,
 * d192), which no thread count divides, go as three 8-chunk column blocks per thread instead. */
template <typename T, int ROWS, int D, int NT, bool PAGED = false>
__device__ __forceinline__ void sm80_load_tile(uint32_t sdst, const T *g, int64_t rstride, int row0, int limit,
                                               int nch, int tid, const sm80_pager pg = sm80_pager())
{
    constexpr int CH = D / 8, PITCH = (CH + 7) / 8 * 8;
    if constexpr (PAGED) {
        /* Every row addressed on its own (a tile may span pages of any size); the page entry is read
         * only for rows below the limit, which lie inside the sequence's table row. */
        constexpr int RS = NT / PITCH;
        static_assert(NT % PITCH == 0 && RS % 8 == 0 && ROWS % RS == 0, "paged load shape");
        const int r = tid / PITCH, c = tid % PITCH;
        if (CH == PITCH || c < CH) {
            const bool cok = c < nch;
            const uint32_t dst0 = sdst + sm80_swz<PITCH>(r, c);
#pragma unroll
            for (int k = 0; k < ROWS / RS; ++k) {
                const int key = row0 + r + k * RS;
                const bool ok = cok && key < limit;
                int64_t off = 0;
                if (ok)
                    off = pg.bt_row ? pa_kv_page_offset(pg.bt_row, pg.num_pages, pg.shift, pg.pstride, rstride, key)
                                    : (int64_t)key * rstride;
                sm80_cp_async16(dst0 + k * RS * PITCH * 16, ok ? g + off + c * 8 : g, ok);
            }
        }
    } else if constexpr (NT % PITCH == 0) {
        constexpr int RS = NT / PITCH; /* rows per pass */
        static_assert(RS % 4 == 0 && ROWS % RS == 0, "load shape");
        const int r = tid / PITCH, c = tid % PITCH;
        if (CH == PITCH || c < CH) {
            const bool cok = c < nch;
            const T *src = g + (int64_t)(row0 + r) * rstride + c * 8;
            const uint32_t dst0 = sdst + sm80_swz<PITCH>(r, c);
            const uint32_t dst1 = RS % 8 == 0 ? dst0 : sdst + sm80_swz<PITCH>(r + RS, c) - RS * PITCH * 16;
#pragma unroll
            for (int k = 0; k < ROWS / RS; ++k) {
                const bool ok = cok && row0 + r + k * RS < limit;
                sm80_cp_async16(((k & 1) ? dst1 : dst0) + k * RS * PITCH * 16, ok ? src : g, ok);
                src += RS * rstride;
            }
        }
    } else {
        constexpr int RS = NT / 8; /* rows per pass; a thread's chunks c8, c8 + 8, ... of each row */
        static_assert(NT % 8 == 0 && RS % 8 == 0 && ROWS % RS == 0, "load shape");
        const int r = tid / 8, c8 = tid % 8;
        /* Chunk cb * 8 + c8 of row r sits at swz(r, c8) + cb * 128 (the swizzle only permutes the low
         * three bits), so one row pointer and immediate offsets address all of them. */
        const T *src = g + (int64_t)(row0 + r) * rstride + c8 * 8;
        const uint32_t dst = sdst + sm80_swz<PITCH>(r, c8);
#pragma unroll
        for (int k = 0; k < ROWS / RS; ++k) {
            const bool rok = row0 + r + k * RS < limit;
#pragma unroll
            for (int cb = 0; cb < PITCH / 8; ++cb) {
                if (cb * 8 + c8 >= CH) continue;
                const bool ok = rok && cb * 8 + c8 < nch;
                sm80_cp_async16(dst + k * RS * PITCH * 16 + cb * 128, ok ? src + cb * 64 : g, ok);
            }
            src += RS * rstride;
        }
    }
}

/* The sequence a CTA works on: its queries' and keys' extents and where its rows start in Q, K, V
 * and O (element offsets; K/V through the pagers when PAGED reads a paged cache). */
struct sm80_seq {
    int q0, sq, sk;
    int64_t qb, kb, vb, ob;
    sm80_pager kpg, vpg;
};

/* PAGED: the K/V source is the KV cache a.kv (fwd_args.h): sequence b holds pa_cache_len_of keys,
 * paged through block_table or contiguous at batch stride; its queries (packed by cu_q, or seqlen_q
 * per sequence) are its last keys' rows (bottom-right). Otherwise a.kv is unused and every PAGED
 * branch compiles away. */
template <bool PAGED>
__device__ __forceinline__ sm80_seq sm80_seq_of(const sm80_args &a, int b)
{
    const pa_kv_args &kv = a.kv;
    sm80_seq s;
    int k0 = 0;
    s.q0 = 0, s.sq = a.seqlen_q, s.sk = a.seqlen_k;
    s.kpg = sm80_pager(), s.vpg = sm80_pager();
    if constexpr (PAGED) {
        if (a.cu_q) {
            pa_seq_extent(a.cu_q, b, a.seqlen_q, &s.q0, &s.sq);
            s.qb = s.q0 * a.qs[1], s.ob = s.q0 * a.os[1];
        } else {
            s.qb = b * a.qs[0], s.ob = b * a.os[0];
        }
        s.sk = kv.seqused_k ? (int)pa_cache_len_of(kv.seqused_k[b], kv.seqlen_new, a.seqlen_k) : a.seqlen_k;
        if (kv.block_table) {
            s.kb = s.vb = 0;
            s.kpg.bt_row = s.vpg.bt_row = kv.block_table + b * kv.bt_stride;
            s.kpg.num_pages = s.vpg.num_pages = kv.num_pages;
            s.kpg.shift = s.vpg.shift = kv.page_shift;
            s.kpg.pstride = a.ks[0], s.vpg.pstride = a.vs[0];
        } else {
            s.kb = b * a.ks[0], s.vb = b * a.vs[0];
        }
    } else if (a.cu_q) { /* packed [1, total, H, D]: the batch stride is ignored */
        pa_seq_extent(a.cu_q, b, a.seqlen_q, &s.q0, &s.sq);
        pa_seq_extent(a.cu_k, b, a.seqlen_k, &k0, &s.sk);
        s.qb = s.q0 * a.qs[1], s.kb = k0 * a.ks[1], s.vb = k0 * a.vs[1], s.ob = s.q0 * a.os[1];
    } else {
        s.qb = b * a.qs[0], s.kb = b * a.ks[0], s.vb = b * a.vs[0], s.ob = b * a.os[0];
    }
    return s;
}

/* One (batch, head) pair and row block per CTA, no loop over pairs: loop state live across the main
 * loop made the d256 instance spill. Without a right bound every row block sees the same keys and the
 * pairs go in (y, z) order, so that CTAs running together share K/V in L2. With a right bound
 * (causal) later row blocks see more keys: the linear block index is taken row block major, longest
 * first over all pairs, so that the last CTAs of the grid are the shortest and no long one starts
 * near the end (longest-processing-time-first). False for a CTA past the work. */
__device__ __forceinline__ bool sm80_pair_of(const sm80_args &a, int64_t &bh, int &tfirst)
{
    const int64_t nbh = (int64_t)a.batch * a.heads;
    if (a.wr >= 0) {
        const int64_t lin = blockIdx.x + (int64_t)gridDim.x * ((int64_t)blockIdx.z * gridDim.y + blockIdx.y);
        bh = lin % nbh;
        tfirst = (int)(lin / nbh);
        return tfirst < (int)gridDim.x;
    }
    bh = (int64_t)blockIdx.z * gridDim.y + blockIdx.y;
    tfirst = blockIdx.x;
    return bh < nbh;
}

/* K and V tiles of one (sequence, KV head) into ring slots: tile n is keys [n BN, n BN + BN). */
template <typename T, int D, int BN, int NT, bool PAGED> struct sm80_kv_loader {
    const T *kh, *vh;
    int64_t ks, vs;
    int sk, nch_qk, nch_v, tid;
    sm80_pager kpg, vpg;
    __device__ __forceinline__ void k(uint32_t dst, int n) const
    {
        sm80_load_tile<T, BN, D, NT, PAGED>(dst, kh, ks, n * BN, sk, nch_qk, tid, kpg);
    }
    __device__ __forceinline__ void v(uint32_t dst, int n) const
    {
        sm80_load_tile<T, BN, D, NT, PAGED>(dst, vh, vs, n * BN, sk, nch_v, tid, vpg);
    }
};

/* S = Q K_n^T for the warp's MT row tiles (rows row0.. of the Q tile at sq_base): Q fragments by
 * ldmatrix, K as the col-major B operand; each K fragment serves the warp's MT row tiles. Fully
 * unrolled (WHOLE), the loop of d128..d256 runs out of registers next to the O accumulator. */
template <typename T, int D, int MT, int BN, bool WHOLE> __device__ __forceinline__ void
sm80_scores(float (&s)[MT][BN / 8][4], uint32_t sq_base, int row0, uint32_t kt, int lane, T tag)
{
    constexpr int NS = BN / 8, PITCH = (D / 8 + 7) / 8 * 8, QK_UNROLL = WHOLE || D <= 64 ? D / 16 : 2;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NS; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
#pragma unroll QK_UNROLL
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t qf[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
            sm80_ldsm_x4(qf[mt], sq_base + sm80_swz<PITCH>(row0 + mt * 16 + (lane & 15), kc * 2 + (lane >> 4)));
#pragma unroll
        for (int j = 0; j < NS / 2; ++j) {
            uint32_t kf[4];
            sm80_ldsm_x4(kf, kt + sm80_swz<PITCH>(j * 16 + ((lane >> 4) << 3) + (lane & 7), kc * 2 + ((lane >> 3) & 1)));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                sm80_mma(s[mt][2 * j], qf[mt], kf[0], kf[1], tag);
                sm80_mma(s[mt][2 * j + 1], qf[mt], kf[2], kf[3], tag);
            }
        }
    }
}

/* The score map, then the mask of a boundary tile (full = every key of the tile visible to every row
 * of the block: no mask). Softcap or a negative scale make scores base-2 logits here. This lane's
 * rows of row tile mt are g and g + 8 (g = lane / 4); key j is visible to row i iff
 * dlo <= j - i <= dhi and j < sk, kdiag = -(the lane's first row). */
template <int MT, int BN> __device__ __forceinline__ void
sm80_score_map(float (&s)[MT][BN / 8][4], const sm80_args &a, bool full, int n, int lane, int kdiag, int dlo, int dhi,
               int sk)
{
    constexpr int NS = BN / 8;
    if (a.transform) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    s[mt][j][e] = a.softcap ? a.post_mul * tanhf(s[mt][j][e] * a.pre_mul) : s[mt][j][e] * a.pre_mul;
    }
    if (!full) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = n * BN + j * 8 + (lane & 3) * 2 + (e & 1);
                    const int diff = key + kdiag - mt * 16 - (e >> 1) * 8;
                    if (diff < dlo || diff > dhi || key >= sk) s[mt][j][e] = -INFINITY;
                }
    }
}

/* Row max of tile mt over this tile's scores and the previous max: the exponent base of its rows and
 * the factor that rescales their O and row sums. A row with nothing visible yet keeps max -inf; its
 * base is taken as 0 so that no -inf - -inf appears. */
template <int MT, int NS> __device__ __forceinline__ void
sm80_row_max(const float (&s)[MT][NS][4], int mt, float (&mrow)[MT][2], float (&lsum)[MT][2], float (&base)[2],
             float (&corr)[MT][2], bool &rescale, float mult)
{
    float mnew[2] = {mrow[mt][0], mrow[mt][1]};
#pragma unroll
    for (int j = 0; j < NS; ++j) {
        mnew[0] = fmaxf(mnew[0], fmaxf(s[mt][j][0], s[mt][j][1]));
        mnew[1] = fmaxf(mnew[1], fmaxf(s[mt][j][2], s[mt][j][3]));
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 1));
        mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 2));
        base[r] = mnew[r] == -INFINITY ? 0.f : mnew[r] * mult;
        corr[mt][r] = pa_ex2(mrow[mt][r] * mult - base[r]); /* 1 if the max held, 0 from -inf */
        rescale |= corr[mt][r] != 1.f;
        mrow[mt][r] = mnew[r];
        lsum[mt][r] *= corr[mt][r];
    }
}

/* P = 2^(s * mult - base) of tile mt into the row sums and, packed, the A fragments of the P V product
 * (one per 16 keys). */
template <typename T, int MT, int NS> __device__ __forceinline__ void
sm80_exp_pack(const float (&s)[MT][NS][4], int mt, const float (&base)[2], uint32_t (&pf)[MT][NS / 2][4],
              float (&lsum)[MT][2], float mult, T tag)
{
#pragma unroll
    for (int j = 0; j < NS; ++j) {
        const float p0 = pa_ex2(fmaf(s[mt][j][0], mult, -base[0]));
        const float p1 = pa_ex2(fmaf(s[mt][j][1], mult, -base[0]));
        const float p2 = pa_ex2(fmaf(s[mt][j][2], mult, -base[1]));
        const float p3 = pa_ex2(fmaf(s[mt][j][3], mult, -base[1]));
        lsum[mt][0] += p0 + p1;
        lsum[mt][1] += p2 + p3;
        pf[mt][j >> 1][(j & 1) * 2 + 0] = pa_pack(p0, p1, tag);
        pf[mt][j >> 1][(j & 1) * 2 + 1] = pa_pack(p2, p3, tag);
    }
}

/* O *= corr row by row, when some row of the warp needs it (rare once the maxima settle). */
template <int MT, int NO> __device__ __forceinline__ void
sm80_rescale(float (&acc)[MT][NO][4], const float (&corr)[MT][2], bool rescale)
{
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NO; ++j) {
                acc[mt][j][0] *= corr[mt][0], acc[mt][j][1] *= corr[mt][0];
                acc[mt][j][2] *= corr[mt][1], acc[mt][j][3] *= corr[mt][1];
            }
    }
}

/* Online softmax, base 2: each row tile's max, then its exponentials, and O rescaled after them; or
 * (RESCALE_FIRST) every max, O rescaled, then the exponentials, so that the branch sits ahead of the
 * exponentials (and, with the V wait before the softmax too, of the whole stretch to the last P V MMA). */
template <typename T, int MT, int NS, int NO, bool RESCALE_FIRST> __device__ __forceinline__ void
sm80_softmax_step(const float (&s)[MT][NS][4], uint32_t (&pf)[MT][NS / 2][4], float (&mrow)[MT][2],
                  float (&lsum)[MT][2], float (&acc)[MT][NO][4], float mult, T tag)
{
    bool rescale = false;
    float base[MT][2], corr[MT][2];
    if constexpr (RESCALE_FIRST) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) sm80_row_max<MT, NS>(s, mt, mrow, lsum, base[mt], corr, rescale, mult);
        sm80_rescale<MT, NO>(acc, corr, rescale);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) sm80_exp_pack<T, MT, NS>(s, mt, base[mt], pf, lsum, mult, tag);
    } else {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            sm80_row_max<MT, NS>(s, mt, mrow, lsum, base[mt], corr, rescale, mult);
            sm80_exp_pack<T, MT, NS>(s, mt, base[mt], pf, lsum, mult, tag);
        }
        sm80_rescale<MT, NO>(acc, corr, rescale);
    }
}

/* O += P V_n: V is row-major [key][dim], so ldmatrix.trans yields its B fragments. */
template <typename T, int D, int MT, int BN> __device__ __forceinline__ void
sm80_pv(float (&acc)[MT][D / 8][4], const uint32_t (&pf)[MT][BN / 16][4], uint32_t vt, int lane, T tag)
{
    constexpr int NO = D / 8, PITCH = (D / 8 + 7) / 8 * 8;
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc) {
#pragma unroll
        for (int j = 0; j < NO / 2; ++j) {
            uint32_t vf[4];
            sm80_ldsm_x4_trans(vf, vt + sm80_swz<PITCH>(kc * 16 + (((lane >> 3) & 1) << 3) + (lane & 7), j * 2 + (lane >> 4)));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                sm80_mma(acc[mt][2 * j], pf[mt][kc], vf[0], vf[1], tag);
                sm80_mma(acc[mt][2 * j + 1], pf[mt][kc], vf[2], vf[3], tag);
            }
        }
    }
}

/* Epilogue of a row block: finish the row sums across the quad, normalise once, stage O (16-bit) in
 * the warp's own Q rows (smem), then write 16-byte row pieces of its first nch_v column chunks (the
 * call's Dv) to global memory, and the LSE. */
template <typename T, int D, int MT> __device__ __forceinline__ void
sm80_epilogue(const sm80_args &a, uint8_t *smem, T *oh, float (&acc)[MT][D / 8][4], float (&lsum)[MT][2],
              const float (&mrow)[MT][2], const sm80_seq &q, int b, int h, int m0, int nch_v, int warp, int lane,
              T tag)
{
    constexpr int CH = D / 8, NO = D / 8, PITCH = (CH + 7) / 8 * 8, WR = 16 * MT;
    const int wrow = warp * WR + (lane >> 2);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float l = lsum[mt][r];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            lsum[mt][r] = l;
            /* l lies in [1, keys] when a key was visible, where the fast divide is within 2 ulp
             * (IEEE division is a call); no visible key gives O = 0 */
            const float inv = l > 0.f ? __fdividef(1.f, l) : 0.f;
            const int row = wrow + mt * 16 + 8 * r;
#pragma unroll
            for (int j = 0; j < NO; ++j)
                *(uint32_t *)(smem + sm80_swz<PITCH>(row, j) + (lane & 3) * 4) =
                    l == 0.f ? 0u /* no visible key: exactly 0, even where V held a NaN (0 x NaN) */
                             : pa_pack(acc[mt][j][2 * r] * inv, acc[mt][j][2 * r + 1] * inv, tag);
        }
    __syncwarp();
#pragma unroll
    for (int i = lane; i < WR * CH; i += 32) {
        const int r = i / CH, c = i % CH, row = m0 + warp * WR + r;
        if (row < q.sq && c < nch_v)
            *(uint4 *)(oh + (int64_t)row * a.os[1] + c * 8) = *(const uint4 *)(smem + sm80_swz<PITCH>(warp * WR + r, c));
    }
    if (a.lse && (lane & 3) == 0) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = m0 + wrow + mt * 16 + 8 * r;
                if (row >= q.sq) continue;
                const int64_t off = a.cu_q ? h * a.ls[1] + (int64_t)(q.q0 + row) * a.ls[2]
                                           : b * a.ls[0] + h * a.ls[1] + (int64_t)row * a.ls[2];
                a.lse[off] = lsum[mt][r] > 0.f ? (mrow[mt][r] * a.mult + __log2f(lsum[mt][r])) * 0.69314718055994531f
                                               : lsum[mt][r] == 0.f ? -INFINITY : NAN; /* NaN scores give NaN */
            }
    }
}

/* One step of the K/V ring, twice per key tile: wait until this thread's tile of the step has landed
 * (all but its newest 2 STAGES - 2 groups) and every thread is past the barrier, so the slot read
 * before it is free; then tile n of K (IS_K) or V into that slot when there is one (more). One commit
 * group either way, so that the wait counts hold on every path. */
template <int STAGES, bool IS_K, typename LD> __device__ __forceinline__ void
sm80_ring_step(const LD &ld, uint32_t dst, bool more, int n)
{
    sm80_cp_async_wait<2 * STAGES - 2>();
    __syncthreads();
    if (more) {
        if (IS_K) ld.k(dst, n);
        else ld.v(dst, n);
    }
    sm80_cp_async_commit();
}

template <typename T, int D, int MT, int BN, int NW, int STAGES, int MINB, bool PAGED>
__global__ void __launch_bounds__(NW * 32, MINB) sm80_fwd(const sm80_args a)
{
    constexpr int NT = NW * 32, PITCH = (D / 8 + 7) / 8 * 8;
    constexpr int WR = 16 * MT, BM = WR * NW;                  /* query rows per warp, per CTA */
    constexpr int QB = BM * PITCH * 16, KVB = BN * PITCH * 16; /* bytes of the Q tile, of one K or V tile */
    constexpr int NS = BN / 8, NO = D / 8;                     /* 8-wide column tiles of S and of O */
    constexpr int SCHED = PA_SM80_SCHED(D);
    static_assert(D % 16 == 0 && BN % 16 == 0, "tile shape");
    static_assert(BN == PA_SM80_BN(D) && STAGES == PA_SM80_STAGES(D), "instance shape");
    static_assert(QB + 2 * STAGES * KVB == PA_SM80_SMEM_SHAPE(D, BM, BN, STAGES), "smem size");

    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sq_base = sm80_smem_u32(smem);
    const uint32_t sk_base = sq_base + QB, sv_base = sk_base + STAGES * KVB;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const T tag = T(); /* picks the f16 or bf16 mma/pack overload */

    int64_t bh;
    int tfirst;
    if (!sm80_pair_of(a, bh, tfirst)) return;
    const int b = (int)(bh / a.heads), h = (int)(bh % a.heads);
    const sm80_seq q = sm80_seq_of<PAGED>(a, b);
    const int sq = q.sq, sk = q.sk, nmb = (sq + BM - 1) / BM, hk = h / a.group;
    const T *qh = (const T *)a.q + q.qb + h * a.qs[2];
    T *oh = (T *)a.o + q.ob + h * a.os[2];
    const int nch_qk = a.dqk / 8; /* the call's column chunks (the instance has D / 8) */
    const sm80_kv_loader<T, D, BN, NT, PAGED> ld = {(const T *)a.k + q.kb + hk * a.ks[2],
                                                    (const T *)a.v + q.vb + hk * a.vs[2],
                                                    a.ks[1], a.vs[1], sk, nch_qk, a.dv / 8, tid, q.kpg, q.vpg};

    /* Bound by this sequence's own length, so a low max_seqlen still covers every row. With a
     * right-bounded mask later row blocks see more keys: hand those out first. */
    for (int t = tfirst; t < nmb; t += gridDim.x) {
        const int m0 = (a.wr >= 0 ? nmb - 1 - t : t) * BM;
        __syncthreads(); /* the previous work item is done with shared memory */

        /* Key tiles to visit: the hull of the rows' ranges. Tiles in [full_lo, full_hi) are visible
         * to every row of the block and skip the mask. */
        const pa_tile_hull hull = pa_tile_hull_of(m0, BM, BN, sq, sk, a.wl, a.wr);
        const int n_lo = hull.n_lo, n_hi = hull.n_hi, full_lo = hull.full_lo, full_hi = hull.full_hi;

        /* Prologue: Q, then K_0, V_0, ..., K_{STAGES-1}; one commit group each, empty ones too, so
         * that the wait counts below are the same on every path. */
        sm80_load_tile<T, BM, D, NT>(sq_base, qh, a.qs[1], m0, sq, nch_qk, tid);
        sm80_cp_async_commit();
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            if (n_lo + s < n_hi) ld.k(sk_base + s * KVB, n_lo + s);
            sm80_cp_async_commit();
            if (s < STAGES - 1) {
                if (n_lo + s < n_hi) ld.v(sv_base + s * KVB, n_lo + s);
                sm80_cp_async_commit();
            }
        }

        /* The lane's rows' visible keys as bounds on key - row (dlo/dhi clamped to the range key - row
         * can take, so that they fit in int32 and no per-row bounds need registers). */
        const int wrow = warp * WR + (lane >> 2);
        const int64_t span = (int64_t)sk + sq + 1;
        int64_t dl = a.wl < 0 ? -span : (int64_t)sk - sq - a.wl, dh = a.wr < 0 ? span : (int64_t)sk - sq + a.wr;
        const int dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
        const int kdiag = -(m0 + wrow); /* key - row = (key - m0 - wrow) - offset of the row */
        float mrow[MT][2], lsum[MT][2], acc[MT][NO][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                mrow[mt][r] = -INFINITY, lsum[mt][r] = 0.f;
#pragma unroll
                for (int j = 0; j < NO; ++j) acc[mt][j][2 * r] = acc[mt][j][2 * r + 1] = 0.f;
            }

        /* A KV-cache batch mixes long prompts with sequences of a few (decode) rows: a warp with no
         * row of its own takes part only in the block's loads and barriers, so that a one-row
         * sequence costs one warp's MMAs, not four. */
        const bool idle = PAGED && m0 + warp * WR >= sq;
        if (idle)
            for (int n = n_lo, it = 0; n < n_hi; ++n, ++it) {
                sm80_ring_step<STAGES, false>(ld, sv_base + ((it + STAGES - 1) % STAGES) * KVB, n + STAGES - 1 < n_hi,
                                              n + STAGES - 1);
                sm80_ring_step<STAGES, true>(ld, sk_base + (it % STAGES) * KVB, n + STAGES < n_hi, n + STAGES);
            }
        for (int n = idle ? n_hi : n_lo, it = 0; n < n_hi; ++n, ++it) {
            const int slot = it % STAGES;
            /* K_n (and Q) landed, P V_{n-1} done everywhere: V_{n+STAGES-1} into the V slot it freed */
            sm80_ring_step<STAGES, false>(ld, sv_base + ((it + STAGES - 1) % STAGES) * KVB, n + STAGES - 1 < n_hi,
                                          n + STAGES - 1);

            float s[MT][NS][4];
            const uint32_t kt = sk_base + slot * KVB;
            sm80_scores<T, D, MT, BN, (SCHED & PA_SM80_QK_WHOLE) != 0>(s, sq_base, warp * WR, kt, lane, tag);
            sm80_score_map<MT, BN>(s, a, n >= full_lo && n < full_hi, n, lane, kdiag, dlo, dhi, sk);

            /* The second wait: V_n landed (issued a tile ago with two or more slots, at the top of
             * this tile with one), every warp is done with K_n; before the softmax (EARLY_V) or after. */
            constexpr bool EARLY_V = (SCHED & PA_SM80_EARLY_V) != 0;
            constexpr bool RESCALE_FIRST = (SCHED & PA_SM80_RESCALE_FIRST) != 0;
            if constexpr (EARLY_V) sm80_ring_step<STAGES, true>(ld, kt, n + STAGES < n_hi, n + STAGES);
            uint32_t pf[MT][NS / 2][4];
            sm80_softmax_step<T, MT, NS, NO, RESCALE_FIRST>(s, pf, mrow, lsum, acc, a.mult, tag);
            if constexpr (!EARLY_V) sm80_ring_step<STAGES, true>(ld, kt, n + STAGES < n_hi, n + STAGES);
            sm80_pv<T, D, MT, BN>(acc, pf, sv_base + slot * KVB, lane, tag);
        }
        sm80_cp_async_wait<0>(); /* with no key tile, Q may still be landing */
        __syncthreads();         /* before the warps reuse their Q rows for O */
        sm80_epilogue<T, D, MT>(a, smem, oh, acc, lsum, mrow, q, b, h, m0, ld.nch_v, warp, lane, tag);
    }
}

/* Launches one instance; shared memory above 48 KB needs the opt-in attribute on every device. */
template <typename T, int D, int BM = PA_SM80_BM(D), int NW = PA_SM80_WARPS(D), int MINB = PA_SM80_MIN_CTAS(D),
          bool PAGED = false>
static cudaError_t sm80_launch_instance(const sm80_args *a, int64_t max_sq, cudaStream_t stream)
{
    constexpr int BN = PA_SM80_BN(D), ST = PA_SM80_STAGES(D);
    constexpr int MT = BM / (16 * NW);
    static_assert(MT * 16 * NW == BM, "rows per warp");
    const size_t smem = PA_SM80_SMEM_SHAPE(D, BM, BN, ST);
    auto kern = sm80_fwd<T, D, MT, BN, NW, ST, MINB, PAGED>;
    static int optin_done[64]; /* this instance, per device */
    cudaError_t e = pa_smem_optin_once(kern, (int)smem, optin_done);
    if (e != cudaSuccess) return e;
    const int64_t mb = (max_sq + BM - 1) / BM, bh = (int64_t)a->batch * a->heads;
    const int64_t gy = bh < 65535 ? bh : 65535, gz = (bh + gy - 1) / gy; /* supports() keeps gz <= 65535 */
    const dim3 grid((unsigned)(mb < 0x7fffffff ? mb : 0x7fffffff), (unsigned)gy, (unsigned)gz);
    sm80_args arg = *a;
    void *args[] = {&arg};
    return cudaLaunchKernel((const void *)kern, grid, dim3(NW * 32), args, smem, stream);
}

/* The instance files define these for their head dim. */
#define SM80_INSTANCE_LAUNCHER(D)                                                                           \
    cudaError_t sm80_launch_d##D(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream)         \
    {                                                                                                        \
        return bf16 ? sm80_launch_instance<__nv_bfloat16, D>(a, max_sq, stream)                              \
                    : sm80_launch_instance<__half, D>(a, max_sq, stream);                                    \
    }

/* The paged family: the default shape of head dim D over a KV cache. */
#define SM80_PAGED_LAUNCHER(D)                                                                              \
    cudaError_t sm80_launch_paged_d##D(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream)   \
    {                                                                                                        \
        constexpr int BM = PA_SM80_BM(D), NW = PA_SM80_WARPS(D), MB = PA_SM80_MIN_CTAS(D);                   \
        return bf16 ? sm80_launch_instance<__nv_bfloat16, D, BM, NW, MB, true>(a, max_sq, stream)             \
                    : sm80_launch_instance<__half, D, BM, NW, MB, true>(a, max_sq, stream);                   \
    }

#define PA_X(D) cudaError_t sm80_launch_d##D(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream);
PA_SM80_DIMS(PA_X)
#undef PA_X
#define PA_X(D)                                                                                             \
    cudaError_t sm80_launch_paged_d##D(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream);
PA_SM80_PAGED_DIMS(PA_X)
#undef PA_X
cudaError_t sm80_launch_d256_small(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream);

#endif
