/* The cuda-sm90 forward kernel (FlashAttention-3 structure, first version), included by one .cu per
 * head dim and built for sm_90a only.
 *
 * A CTA owns BM = 128 query rows of one (batch, head) and runs three warpgroups: warpgroup 0 is the
 * producer (one thread issues every TMA load; the group gives its registers away with setmaxnreg),
 * warpgroups 1 and 2 are consumers, each owning 64 of the rows in full. K and V tiles of BN keys
 * stream through an ST-slot ring: per slot a "K landed" and a "V landed" barrier (TMA transaction
 * counts) and an "empty" barrier both consumers arrive on once their P V product has read the slot.
 *
 * Per K/V tile a consumer issues S = Q K^T as wgmma (both operands from shared memory), applies
 * the mask and the online softmax (base 2, scale folded) to S in registers, packs P into the A
 * fragments of the register-A wgmma and issues O += P V with V as the N-major B operand; O is
 * normalised once at the end and written from registers.
 *
 * Shared memory holds every tile as 64-column blocks of 128-byte rows with the 128-byte swizzle the
 * TMA writes (chunk c of row r at c ^ (r & 7)); the wgmma descriptors describe the same layout. */
#ifndef PORTATTN_SM90_FWD_KERNEL_CUH
#define PORTATTN_SM90_FWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "sm80_fwd_kernel.cuh" /* sm80_args, sm80_keys, sm80_ex2, sm80_pack: shared with cuda-sm80 */
#include "sm90_launch.h"
#include "sm90_ptx.cuh"
#include "sm90_wgmma.cuh"

template <typename T, int D, int BN, int ST>
__global__ void __launch_bounds__(PA_SM90_THREADS, 1)
    sm90_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
             const __grid_constant__ CUtensorMap tv, const sm80_args a)
{
#ifdef PA_SM90_DEVICE
    constexpr int BM = PA_SM90_BM, NB = D / 64;       /* 64-column blocks of a row */
    constexpr int QBLK = BM * 128, KBLK = BN * 128;    /* bytes of one column block of Q, of K or V */
    constexpr int QBYTES = NB * QBLK, KVBYTES = NB * KBLK;
    constexpr int NS = BN / 8, NO = D / 8;             /* 8-wide column tiles of S and of O */
    static_assert(D % 64 == 0 && BN % 16 == 0 && BN <= 256, "tile shape");

    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (sm90_smem_u32(smem_raw) + 1023) & ~1023u; /* swizzle atoms need 1 KB alignment */
    const uint32_t q_s = base, k_s = q_s + QBYTES, v_s = k_s + ST * KVBYTES, bar = v_s + ST * KVBYTES;
    const uint32_t full_q = bar; /* then full_k[ST], full_v[ST], empty[ST], 8 bytes each */
#define FULL_K(s) (bar + 8 + 8 * (s))
#define FULL_V(s) (bar + 8 + 8 * (ST + (s)))
#define EMPTY(s) (bar + 8 + 8 * (2 * ST + (s)))

    const int tid = threadIdx.x, wg = tid >> 7;

    /* Work item: one row block of one (batch, head). Right-bounded masks (causal) hand out the
     * longest row blocks first over all pairs; otherwise the row blocks of a pair run together
     * so that they share K/V in L2. */
    const int64_t nbh = (int64_t)a.batch * a.heads, lin = blockIdx.x;
    const int nmb = (a.seqlen_q + BM - 1) / BM;
    int64_t bh;
    int mb;
    if (a.wr >= 0) bh = lin % nbh, mb = nmb - 1 - (int)(lin / nbh);
    else bh = lin / nmb, mb = (int)(lin % nmb);
    const int b = (int)(bh / a.heads), h = (int)(bh % a.heads), hk = h / a.group;
    const int sq = a.seqlen_q, sk = a.seqlen_k, m0 = mb * BM;
    const int mlast = (m0 + BM < sq ? m0 + BM : sq) - 1;
    int lo_f, hi_f, lo_l, hi_l;
    sm80_keys(m0, sq, sk, a.wl, a.wr, &lo_f, &hi_f);
    sm80_keys(mlast, sq, sk, a.wl, a.wr, &lo_l, &hi_l);
    const int n_lo = lo_f / BN, n_hi = hi_l < lo_f ? n_lo : hi_l / BN + 1;
    const int full_lo = (lo_l + BN - 1) / BN, full_hi = (hi_f + 1) / BN;

    if (tid == 0) {
        sm90_bar_init(full_q, 1);
        for (int s = 0; s < ST; ++s) {
            sm90_bar_init(FULL_K(s), 1);
            sm90_bar_init(FULL_V(s), 1);
            sm90_bar_init(EMPTY(s), 2); /* one arrival per consumer warpgroup */
        }
        sm90_bar_init_fence();
    }
    __syncthreads();

    if (wg == 0) { /* producer */
        sm90_setmaxnreg_dec<PA_SM90_PRODUCER_REGS>();
        if (tid != 0) return;
        sm90_bar_expect_tx(full_q, QBYTES);
#pragma unroll
        for (int c = 0; c < NB; ++c) sm90_tma_load_4d(q_s + c * QBLK, &tq, full_q, c * 64, m0, h, b);
        for (int n = n_lo, it = 0; n < n_hi; ++n, ++it) {
            const int s = it % ST, u = it / ST;
            if (u > 0) sm90_bar_wait(EMPTY(s), (u - 1) & 1); /* both consumers are done with the slot */
            sm90_bar_expect_tx(FULL_K(s), KVBYTES);
#pragma unroll
            for (int c = 0; c < NB; ++c)
                sm90_tma_load_4d(k_s + s * KVBYTES + c * KBLK, &tk, FULL_K(s), c * 64, n * BN, hk, b);
            sm90_bar_expect_tx(FULL_V(s), KVBYTES);
#pragma unroll
            for (int c = 0; c < NB; ++c)
                sm90_tma_load_4d(v_s + s * KVBYTES + c * KBLK, &tv, FULL_V(s), c * 64, n * BN, hk, b);
        }
        return;
    }

    /* consumers */
    sm90_setmaxnreg_inc<PA_SM90_CONSUMER_REGS>();
    const int cw = wg - 1, lane = tid & 31, wq = (tid >> 5) & 3;
    const int rowc = cw * 64 + wq * 16 + (lane >> 2); /* this thread's rows in the block: rowc, rowc + 8 */
    const T tag = T();

    /* Key j is visible to row i iff dlo <= j - i <= dhi and j < sk (as cuda-sm80). */
    const int64_t span = (int64_t)sk + sq + 1;
    int64_t dl = a.wl < 0 ? -span : (int64_t)sk - sq - a.wl, dh = a.wr < 0 ? span : (int64_t)sk - sq + a.wr;
    const int dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
    const int kdiag = -(m0 + rowc);

    float o[D / 2], mrow[2] = {-INFINITY, -INFINITY}, lsum[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;

    sm90_bar_wait(full_q, 0);
    const uint32_t q_wg = q_s + cw * 64 * 128; /* this warpgroup's 64 rows of each column block */

    for (int n = n_lo, it = 0; n < n_hi; ++n, ++it) {
        const int s = it % ST;
        const uint32_t ph = (it / ST) & 1;
        const uint32_t ks = k_s + s * KVBYTES, vs = v_s + s * KVBYTES;

        /* S = Q K_n^T */
        float sc[BN / 2];
        sm90_bar_wait(FULL_K(s), ph);
        sm90_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int c = kk / 4, kin = (kk % 4) * 32; /* column block, byte offset of the 16 columns */
            sm90_wgmma_ss<BN>(sc, sm90_desc_sw128(q_wg + c * QBLK + kin, 16, 1024),
                              sm90_desc_sw128(ks + c * KBLK + kin, 16, 1024), kk > 0, tag);
        }
        sm90_wgmma_commit();
        sm90_wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) sm90_reg_fence(sc[i]);

        if (a.transform) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                sc[i] = a.softcap ? a.post_mul * tanhf(sc[i] * a.pre_mul) : sc[i] * a.pre_mul;
        }
        if (n < full_lo || n >= full_hi) { /* boundary tile: mask per element */
#pragma unroll
            for (int j = 0; j < NS; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = n * BN + j * 8 + (lane & 3) * 2 + (e & 1);
                    const int diff = key + kdiag - (e >> 1) * 8;
                    if (diff < dlo || diff > dhi || key >= sk) sc[4 * j + e] = -INFINITY;
                }
        }

        /* Online softmax, base 2 (as cuda-sm80): a row with nothing visible keeps max -inf and base 0. */
        float mnew[2] = {mrow[0], mrow[1]}, base2[2], corr[2];
#pragma unroll
        for (int j = 0; j < NS; ++j) {
            mnew[0] = fmaxf(mnew[0], fmaxf(sc[4 * j], sc[4 * j + 1]));
            mnew[1] = fmaxf(mnew[1], fmaxf(sc[4 * j + 2], sc[4 * j + 3]));
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 1));
            mnew[r] = fmaxf(mnew[r], __shfl_xor_sync(0xffffffffu, mnew[r], 2));
            base2[r] = mnew[r] == -INFINITY ? 0.f : mnew[r] * a.mult;
            corr[r] = sm80_ex2(mrow[r] * a.mult - base2[r]);
            mrow[r] = mnew[r];
            lsum[r] *= corr[r];
        }
        uint32_t pf[BN / 16][4];
#pragma unroll
        for (int j = 0; j < NS; ++j) {
            const float p0 = sm80_ex2(fmaf(sc[4 * j], a.mult, -base2[0]));
            const float p1 = sm80_ex2(fmaf(sc[4 * j + 1], a.mult, -base2[0]));
            const float p2 = sm80_ex2(fmaf(sc[4 * j + 2], a.mult, -base2[1]));
            const float p3 = sm80_ex2(fmaf(sc[4 * j + 3], a.mult, -base2[1]));
            lsum[0] += p0 + p1;
            lsum[1] += p2 + p3;
            pf[j >> 1][(j & 1) * 2 + 0] = sm80_pack(p0, p1, tag);
            pf[j >> 1][(j & 1) * 2 + 1] = sm80_pack(p2, p3, tag);
        }
#pragma unroll
        for (int j = 0; j < NO; ++j) {
            o[4 * j] *= corr[0], o[4 * j + 1] *= corr[0];
            o[4 * j + 2] *= corr[1], o[4 * j + 3] *= corr[1];
        }

        /* O += P V_n: V's rows are keys (the K dimension), its 64-column blocks LBO apart. */
        sm90_bar_wait(FULL_V(s), ph);
#pragma unroll
        for (int i = 0; i < D / 2; ++i) sm90_reg_fence(o[i]);
        sm90_wgmma_fence();
#pragma unroll
        for (int t = 0; t < BN / 16; ++t)
            sm90_wgmma_rs<D>(o, pf[t], sm90_desc_sw128(vs + t * 16 * 128, KBLK, 1024), 1, tag);
        sm90_wgmma_commit();
        sm90_wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < D / 2; ++i) sm90_reg_fence(o[i]);
        if ((tid & 127) == 0) sm90_bar_arrive(EMPTY(s)); /* this warpgroup is done with the slot */
    }

    /* Epilogue: row sums across the quad, normalise once, write O and LSE from registers. */
    const int qrow0 = m0 + rowc;
    T *oh = (T *)a.o + b * a.os[0] + h * a.os[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = lsum[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        lsum[r] = l;
        const int row = qrow0 + 8 * r;
        const float inv = l > 0.f ? __fdividef(1.f, l) : 0.f;
        if (row < sq) {
            T *orow = oh + (int64_t)row * a.os[1] + (lane & 3) * 2;
#pragma unroll
            for (int j = 0; j < NO; ++j)
                *(uint32_t *)(orow + j * 8) = sm80_pack(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv, tag);
            if (a.lse && (lane & 3) == 0)
                a.lse[b * a.ls[0] + h * a.ls[1] + (int64_t)row * a.ls[2]] =
                    l > 0.f ? (mrow[r] * a.mult + __log2f(l)) * 0.69314718055994531f : l == 0.f ? -INFINITY : NAN;
        }
    }
#undef FULL_K
#undef FULL_V
#undef EMPTY
#endif
}

template <typename T, int D, int BN, int ST>
static cudaError_t sm90_launch_instance(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                        const sm80_args *a, cudaStream_t stream)
{
    const int smem = PA_SM90_SMEM_SHAPE(D, BN, ST);
    auto kern = sm90_fwd<T, D, BN, ST>;
    static int optin_done[64];
    cudaError_t e = sm80_smem_optin(kern, smem, optin_done);
    if (e != cudaSuccess) return e;
    const int64_t nmb = ((int64_t)a->seqlen_q + PA_SM90_BM - 1) / PA_SM90_BM;
    CUtensorMap q = *tq, k = *tk, v = *tv;
    sm80_args arg = *a;
    void *args[] = {&q, &k, &v, &arg};
    return cudaLaunchKernel((const void *)kern, dim3((unsigned)(nmb * a->batch * a->heads)), dim3(PA_SM90_THREADS),
                            args, smem, stream);
}

#define SM90_INSTANCE(D, BN, ST)                                                                              \
    cudaError_t sm90_launch_d##D(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,           \
                                 const sm80_args *a, int bf16, cudaStream_t stream)                             \
    {                                                                                                           \
        return bf16 ? sm90_launch_instance<__nv_bfloat16, D, BN, ST>(tq, tk, tv, a, stream)                     \
                    : sm90_launch_instance<__half, D, BN, ST>(tq, tk, tv, a, stream);                           \
    }

#endif
