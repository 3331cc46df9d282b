/* The cuda-sm90 backward's main kernel (FlashAttention-3's structure, first version): dK and dV of one
 * block of BN = 128 keys of one (batch, KV head) per CTA, dQ summed into the fp32 workspace. The row
 * kernels around it (D = rowsum(dO * O) and the LSE in base 2 before, dQ converted after) and the
 * argument struct are every CUDA backward's (cuda_bwd_args.h).
 *
 * Three warpgroups: the producer (one thread) loads K and V once and streams the (query head, row
 * block) items' Q and dO through a two-stage ring (TMA, transaction-count mbarriers); consumer
 * warpgroup w owns keys 64 w .. 64 w + 63 of the block, and per item
 *   S^T = K_w Q^T, dP^T = V_w dO^T        wgmma, both operands from shared memory (K-major)
 *   P^T = 2^(S^T mult - LSE_2), dS^T = P^T (dP^T - D)   in registers, masked
 *   dV_w += P^T dO, dK_w += dS^T Q        wgmma, A from registers (the S^T accumulator of 16 rows is,
 *                                         rounded, the A fragment of one k-step), B N-major
 *   dS^T to shared memory, then dQ = dS K wgmma, A and B MN-major, added to the workspace by atomics
 * (items of BM = 64 rows: warpgroup w's dQ is its half of the columns, an m64n(D/2) product). dK (times
 * the scale) and dV are written once, after the last item. At d64 a 128-row item (each warpgroup's dQ its
 * own rows, whole) spilled 64 bytes: S^T and dP^T of 128 rows beside dK, dV and the fragments.
 *
 * Not yet: varlen, softcap and negative scales (the transform), the deterministic mode, head dims but
 * 64 and 128; cuda-sm80's backward takes those. */
#ifndef PORTATTN_SM90_BWD_KERNEL_CUH
#define PORTATTN_SM90_BWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "block.h" /* pa_bwd_row_blocks */
#include "cuda_attr.cuh"
#include "cuda_bwd_args.h"
#include "cuda_bwd_rows.cuh" /* the row kernels around this one */
#include "cuda_math.cuh"     /* pa_ex2, pa_pack */
#include "sm90_bwd.h"
#include "sm90_ptx.cuh"
#include "sm90_wgmma.cuh"

/* Tiles and shared memory of the instance of head dim D (offsets from a 1024-byte aligned base). */
template <int D> struct sm90b_shape {
    static constexpr int BN = 128, BM = 64, NB = D / 64, NQ = D / 2; /* NQ: a warpgroup's dQ columns */
    static constexpr int KBLK = BN * 128, QBLK = BM * 128; /* a 64-column block of K or V; of Q or dO */
    static constexpr int KV = NB * KBLK, QD = NB * QBLK;     /* K (or V); Q (or dO) of one stage */
    static constexpr int DSBLK = BN * 128, DS = BM / 64 * DSBLK; /* dS^T: per 64 rows, a 128-byte line a key */
    static constexpr int O_K = 0, O_V = KV, O_Q = 2 * KV, O_DO = O_Q + 2 * QD, O_DS = O_DO + 2 * QD, O_BAR = O_DS + DS;
    static constexpr int SMEM = O_BAR + 8 * 5 + 1024; /* barriers FULL_KV, FULL_QD[2], EMPTY_QD[2]; alignment */
    static constexpr int THREADS = 384;
    static_assert(PA_SM90_BWD_HAS_DIM(D) && BM == PA_SM90_BWD_BM && BN == PA_SM90_BWD_BN, "shape");
    static_assert(SMEM == PA_SM90_BWD_SMEM(D), "shared memory size");
};

#ifdef PA_SM90_DEVICE
#define FULL_KV(bar) (bar)
#define FULL_QD(bar, s) ((bar) + 8 + 8 * (s))
#define EMPTY_QD(bar, s) ((bar) + 24 + 8 * (s))

/* Item it of the CTA: query head hk * group + it / nm, row block mb0 + it % nm. */
struct sm90b_item {
    int h, m0;
};
template <int BM> __device__ __forceinline__ sm90b_item sm90b_item_of(int it, int hk, int group, int mb0, int nm)
{
    const int hh = it / nm;
    return {hk * group + hh, (mb0 + it - hh * nm) * BM};
}

/* The producer thread: K and V once, then each item's Q and dO into stage it % 2. */
template <int D>
__device__ __forceinline__ void sm90b_produce(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                              const CUtensorMap *tdo, int b, int hk, int n0, int group, int mb0, int nm,
                                              uint32_t sb, uint32_t bar)
{
    using S = sm90b_shape<D>;
    pa_bar_expect_tx(FULL_KV(bar), 2 * S::KV);
#pragma unroll
    for (int c = 0; c < S::NB; ++c) {
        pa_tma_load_4d(sb + S::O_K + c * S::KBLK, tk, FULL_KV(bar), c * 64, n0, hk, b);
        pa_tma_load_4d(sb + S::O_V + c * S::KBLK, tv, FULL_KV(bar), c * 64, n0, hk, b);
    }
    for (int it = 0; it < nm * group; ++it) {
        const int s = it & 1, u = it >> 1;
        const sm90b_item x = sm90b_item_of<S::BM>(it, hk, group, mb0, nm);
        if (u > 0) pa_bar_wait(EMPTY_QD(bar, s), (u - 1) & 1);
        pa_bar_expect_tx(FULL_QD(bar, s), 2 * S::QD);
#pragma unroll
        for (int c = 0; c < S::NB; ++c) {
            pa_tma_load_4d(sb + S::O_Q + s * S::QD + c * S::QBLK, tq, FULL_QD(bar, s), c * 64, x.m0, x.h, b);
            pa_tma_load_4d(sb + S::O_DO + s * S::QD + c * S::QBLK, tdo, FULL_QD(bar, s), c * 64, x.m0, x.h, b);
        }
    }
}

/* acc = A_w B^T over D for this warpgroup's 64 keys (A: K or V, B: Q or dO of stage s), one group. */
template <int D, typename T>
__device__ __forceinline__ void sm90b_issue_kt(float (&acc)[sm90b_shape<D>::BM / 2], uint32_t a, uint32_t b_, T tag)
{
    using S = sm90b_shape<D>;
    sm90_wgmma_ss0<S::BM>(acc, sm90_desc_sw128(a, 16, 1024), sm90_desc_sw128(b_, 16, 1024), tag);
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk)
        sm90_wgmma_ss<S::BM>(acc, sm90_desc_sw128(a + (kk / 4) * S::KBLK + (kk % 4) * 32, 16, 1024),
                             sm90_desc_sw128(b_ + (kk / 4) * S::QBLK + (kk % 4) * 32, 16, 1024), 1, tag);
}

/* acc += F B over the item's BM rows: F in A fragments (16 rows a k-step), B (dO or Q of a stage) N-major. */
template <int D, typename T>
__device__ __forceinline__ void sm90b_issue_rows(float (&acc)[D / 2], const uint32_t (&f)[sm90b_shape<D>::BM / 16][4],
                                                 uint32_t b_, T tag)
{
    using S = sm90b_shape<D>;
#pragma unroll
    for (int t = 0; t < S::BM / 16; ++t) sm90_wgmma_rs<D>(acc, f[t], sm90_desc_sw128(b_ + t * 16 * 128, S::QBLK, 1024), 1, tag);
}

/* The mask and the rows' statistics of one item, for this thread's accumulator elements: key = k1 +
 * 16 m + 8 (e >> 1) ... of its warp's 16 keys, row = r1 + 8 j + (e & 1). */
struct sm90b_rows {
    int dlo, dhi, sk, sq; /* key - row in [dlo, dhi], key < sk, row < sq */
};

/* S^T and dP^T (in place) into P^T and dS^T, packed into A fragments pf, df. */
template <int D, typename T>
__device__ __forceinline__ void sm90b_grads(float (&st)[sm90b_shape<D>::BM / 2], float (&dp)[sm90b_shape<D>::BM / 2],
                                            uint32_t (&pf)[sm90b_shape<D>::BM / 16][4],
                                            uint32_t (&df)[sm90b_shape<D>::BM / 16][4], const sm90b_rows &m,
                                            const float *lse2, const float *delta, int key, int row, float mult, T tag)
{
    constexpr int BM = sm90b_shape<D>::BM;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) {
        const float l2[2] = {lse2[8 * j], lse2[8 * j + 1]}, dl[2] = {delta[8 * j], delta[8 * j + 1]};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int k = key + 8 * (e >> 1), r = row + 8 * j + (e & 1);
            const bool vis = k - r >= m.dlo && k - r <= m.dhi && k < m.sk && r < m.sq;
            const float p = vis ? pa_ex2(fmaf(st[4 * j + e], mult, -l2[e & 1])) : 0.f;
            st[4 * j + e] = p;
            dp[4 * j + e] = p * (dp[4 * j + e] - dl[e & 1]);
        }
    }
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            pf[j >> 1][(j & 1) * 2 + h] = pa_pack(st[4 * j + 2 * h], st[4 * j + 2 * h + 1], tag);
            df[j >> 1][(j & 1) * 2 + h] = pa_pack(dp[4 * j + 2 * h], dp[4 * j + 2 * h + 1], tag);
        }
}

/* This thread's dS^T words into the shared tile dQ reads as its MN-major A operand: row r of key k at
 * byte (r / 64) DSBLK + (k / 8) 1024 + (k % 8) 128 + (r % 64) 2, 128-byte swizzled. kl: the thread's
 * first key in the block, rl: its first row (8 j + rl, + 1 in the word's high half). */
template <int D>
__device__ __forceinline__ void sm90b_store_ds(const uint32_t (&df)[sm90b_shape<D>::BM / 16][4], uint32_t ds, int kl, int rl)
{
    using S = sm90b_shape<D>;
#pragma unroll
    for (int j = 0; j < S::BM / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int k = kl + 8 * h, r = rl + 8 * j;
            const uint32_t off = (uint32_t)((r / 64) * S::DSBLK + (k / 8) * 1024 + (k % 8) * 128 + (r % 64) * 2);
            sm90_st_shared32(ds + (off ^ (((off >> 7) & 7u) << 4)), df[j >> 1][(j & 1) * 2 + h]);
        }
}

/* dQ part of warpgroup w = dS K over the block's keys: the item's 64 rows, columns c0.. (NQ of them:
 * at d64 half a 64-column block, the descriptor starting 64 bytes into its 128-byte rows), into acc. */
template <int D, typename T>
__device__ __forceinline__ void sm90b_issue_dq(float (&acc)[sm90b_shape<D>::NQ / 2], uint32_t ds, uint32_t k, int c0, T tag)
{
    using S = sm90b_shape<D>;
#pragma unroll
    for (int kt = 0; kt < S::BN / 16; ++kt)
        sm90_wgmma_sst<S::NQ>(acc, sm90_desc_sw128(ds + kt * 2048, S::DSBLK, 1024),
                              sm90_desc_sw128(k + kt * 16 * 128 + (c0 / 64) * S::KBLK + (c0 % 64) * 2, S::KBLK, 1024),
                              kt > 0, tag);
}

/* dQ part (64 x N at rows row.., columns col..) added to the fp32 workspace rows of the item's head. */
template <int N>
__device__ __forceinline__ void sm90b_add_dq(const float (&acc)[N / 2], float *dq, int row, int col, int sq, int d)
{
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        const int r = row + 8 * ((i % 4) >> 1), c = col + 8 * (i / 4) + (i & 1);
        if (r < sq) atomicAdd(dq + (int64_t)r * d + c, acc[i]);
    }
}

/* dK (times the scale) and dV of this thread's keys into the caller's tensors (keys past sk skipped). */
template <typename T, int D>
__device__ __forceinline__ void sm90b_store_dkdv(const pa_bwd_args &a, const float (&dk)[D / 2], const float (&dv)[D / 2],
                                                 int b, int hk, int key, int col, int sk)
{
    T *const gk = (T *)a.dk + (int64_t)b * a.dks[0] + (int64_t)hk * a.dks[2] + col;
    T *const gv = (T *)a.dv + (int64_t)b * a.dvs[0] + (int64_t)hk * a.dvs[2] + col;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int k = key + 8 * h;
            if (k >= sk) continue;
            *(uint32_t *)(gk + (int64_t)k * a.dks[1] + 8 * j) =
                pa_pack(dk[4 * j + 2 * h] * a.scale, dk[4 * j + 2 * h + 1] * a.scale, T());
            *(uint32_t *)(gv + (int64_t)k * a.dvs[1] + 8 * j) = pa_pack(dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1], T());
        }
}

/* One consumer warpgroup's walk over the CTA's items (see the file's comment). */
template <typename T, int D>
__device__ __forceinline__ void sm90b_consume(const pa_bwd_args &a, int b, int hk, int n0, int mb0, int nm, uint32_t sb,
                                              uint32_t bar)
{
    using S = sm90b_shape<D>;
    const pa_fwd_args &f = a.f;
    const int tid = threadIdx.x, cw = tid / 128 - 1, wq = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int kl = 64 * cw + 16 * wq + g; /* this thread's first key in the block (and + 8) */
    const int c0 = S::NQ * cw;            /* its dQ columns */
    const T tag = T();
    const int64_t diag = (int64_t)f.seqlen_k - f.seqlen_q, span = (int64_t)f.seqlen_k + f.seqlen_q + 1;
    const int64_t dl = f.wl < 0 ? -span : diag - f.wl, dh = f.wr < 0 ? span : diag + f.wr;
    const sm90b_rows m = {(int)(dl < -span ? -span : dl), (int)(dh > span ? span : dh), f.seqlen_k, f.seqlen_q};
    float dk[D / 2], dv[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) dk[i] = dv[i] = 0.f;
    pa_bar_wait(FULL_KV(bar), 0);
    for (int it = 0; it < nm * f.group; ++it) {
        const int s = it & 1;
        const sm90b_item x = sm90b_item_of<S::BM>(it, hk, f.group, mb0, nm);
        const uint32_t q = sb + S::O_Q + s * S::QD, dout = sb + S::O_DO + s * S::QD;
        pa_bar_wait(FULL_QD(bar, s), (it >> 1) & 1);
        float st[S::BM / 2], dp[S::BM / 2];
        sm90_wgmma_fence();
        sm90b_issue_kt<D>(st, sb + S::O_K + 64 * cw * 128, q, tag);
        sm90b_issue_kt<D>(dp, sb + S::O_V + 64 * cw * 128, dout, tag);
        sm90_wgmma_commit();
        sm90_wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < S::BM / 2; ++i) sm90_reg_fence(st[i]), sm90_reg_fence(dp[i]);
        const int64_t ws = ((int64_t)b * f.heads + x.h) * a.sqp + x.m0 + 2 * t;
        uint32_t pf[S::BM / 16][4], df[S::BM / 16][4];
        sm90b_grads<D>(st, dp, pf, df, m, a.lse2 + ws, a.delta + ws, n0 + kl, x.m0 + 2 * t, f.mult, tag);
        sm90_wgmma_fence();
        sm90b_issue_rows<D>(dv, pf, dout, tag);
        sm90b_issue_rows<D>(dk, df, q, tag);
        sm90_wgmma_commit();
        pa_named_sync(1, 256); /* both warpgroups' dQ products of the last item have read dS^T */
        sm90b_store_ds<D>(df, sb + S::O_DS, kl, 2 * t);
        pa_fence_proxy_async();
        pa_named_sync(1, 256); /* all of dS^T written */
        float dq[S::NQ / 2];
#pragma unroll
        for (int i = 0; i < S::NQ / 2; ++i) dq[i] = 0.f;
        sm90_wgmma_fence();
        sm90b_issue_dq<D>(dq, sb + S::O_DS, sb + S::O_K, c0, tag);
        sm90_wgmma_commit();
        sm90_wgmma_wait<0>(); /* dV, dK and dQ: stage s read */
        if ((tid & 127) == 0) pa_bar_arrive(EMPTY_QD(bar, s));
#pragma unroll
        for (int i = 0; i < S::NQ / 2; ++i) sm90_reg_fence(dq[i]);
#pragma unroll
        for (int i = 0; i < D / 2; ++i) sm90_reg_fence(dk[i]), sm90_reg_fence(dv[i]);
        sm90b_add_dq<S::NQ>(dq, a.dq_acc + ((int64_t)b * f.heads + x.h) * a.sqp * D, x.m0 + 16 * wq + g, c0 + 2 * t,
                            f.seqlen_q, D);
    }
    sm90b_store_dkdv<T, D>(a, dk, dv, b, hk, n0 + kl, 2 * t, f.seqlen_k);
}
#undef FULL_KV
#undef FULL_QD
#undef EMPTY_QD
#endif

/* Grid (key blocks, KV heads, batch). */
template <typename T, int D>
__global__ void __launch_bounds__(384, 1)
    sm90_bwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
             const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tdo, const pa_bwd_args a)
{
#ifdef PA_SM90_DEVICE
    using S = sm90b_shape<D>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t sb = (pa_smem_u32(smem_raw) + 1023) & ~1023u, bar = sb + S::O_BAR;
    const int b = blockIdx.z, hk = blockIdx.y, n0 = blockIdx.x * S::BN;
    const int n1 = (n0 + S::BN < a.f.seqlen_k ? n0 + S::BN : a.f.seqlen_k) - 1;
    int mb0, nm;
    pa_bwd_row_blocks(&a.f, a.f.seqlen_q, (int64_t)a.f.seqlen_k - a.f.seqlen_q, n0, n1, S::BM, &mb0, &nm);
    if (threadIdx.x == 0) {
        pa_bar_init(bar, 1);
        for (int s = 0; s < 2; ++s) pa_bar_init(bar + 8 + 8 * s, 1), pa_bar_init(bar + 24 + 8 * s, 2);
        pa_bar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
        sm90_setmaxnreg_dec<24>();
        if (threadIdx.x == 0) sm90b_produce<D>(&tq, &tk, &tv, &tdo, b, hk, n0, a.f.group, mb0, nm, sb, bar);
        return;
    }
    sm90_setmaxnreg_inc<240>();
    sm90b_consume<T, D>(a, b, hk, n0, mb0, nm, sb, bar);
#endif
}

/* The three launches of an instance: row prologue, this kernel over every key block, dQ conversion
 * (the fp32 dQ sums are zero before: cuda_bwd_host.cu). maps: Q, K, V, dO. */
template <typename T, int D>
static cudaError_t sm90_bwd_instance(const pa_bwd_args *a, int64_t max_sk, const CUtensorMap *maps, cudaStream_t stream)
{
    using S = sm90b_shape<D>;
    cudaError_t e = pa_bwd_rows_launch<T, D>(a, 0, stream);
    if (e == cudaSuccess && max_sk > 0) {
        auto kern = sm90_bwd<T, D>;
        static int optin_done[64];
        e = pa_smem_optin_once(kern, S::SMEM, optin_done);
        CUtensorMap q = maps[0], k = maps[1], v = maps[2], dout = maps[3];
        pa_bwd_args arg = *a;
        void *args[] = {&q, &k, &v, &dout, &arg};
        const dim3 grid((unsigned)((max_sk + S::BN - 1) / S::BN), (unsigned)(a->f.heads / a->f.group), (unsigned)a->f.batch);
        if (e == cudaSuccess) e = cudaLaunchKernel((const void *)kern, grid, dim3(S::THREADS), args, S::SMEM, stream);
    }
    if (e == cudaSuccess) e = pa_bwd_rows_launch<T, D>(a, 1, stream);
    return e;
}

/* An instance file's entry point for head dim D (ctx: the four tensor maps). */
#define SM90_BWD_INSTANCE(D)                                                                                      \
    cudaError_t sm90_bwd_run_d##D(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *ctx, cudaStream_t st) \
    {                                                                                                              \
        const CUtensorMap *m = (const CUtensorMap *)ctx;                                                            \
        return bf16 ? sm90_bwd_instance<__nv_bfloat16, D>(a, max_sk, m, st) : sm90_bwd_instance<__half, D>(a, max_sk, m, st); \
    }

#endif
