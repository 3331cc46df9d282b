/* The CDNA forward kernel (gfx90a, gfx940; wave64, v_mfma_f32_32x32x8), written once for hipcc and
 * for the nvcc emulation (hip_wave.h holds every wave-level primitive). Design: backends/hip/NOTES.md.
 *
 * A workgroup of 4 waves owns 128 query rows of one (batch, head); each wave owns 32 of them in
 * full. K and V tiles of 32 keys go through LDS (hip_lds.h layout, conflict-free by
 * tests/test_hip_lds.c). Each wave computes S^T = K Q^T (32 keys x 32 queries): in that accumulator a
 * lane holds one query column (16 of the 32 keys; the other 16 sit in lane ^ 32), so the softmax is a
 * per-lane loop plus one xor-32 exchange, and registers 4s..4s+3 are, rounded to 16 bits, the B
 * operand (P^T) of step s of O^T += V^T P^T. Q stays in registers for the whole tile loop, as the B
 * operand of S^T; K is read as A with one 16-byte read per two MFMA k-steps (KPack 8, the same k
 * permutation as Q's registers); V^T's A operand is gathered with four 2-byte reads per step.
 *
 * Instances of head dims 64, 128 and 256 (d256 as two launches of 128 output columns each, see below)
 * serve every call whose head dims are multiples of 8 up to theirs: columns past the call's Dqk (Q, K)
 * and Dv (V) are never loaded and read as zeros, so S and the LSE are exact, and O's columns past Dv
 * (zeros) are never stored.
 * Built for gfx90a/gfx942 and gated by tests/isa_gate_hip.sh; the case table runs it through the
 * hip-cdna backend against tests/hip_fake's simulated gfx90a, and cdna_fwd_emu.cu builds it with
 * nvcc for an NVIDIA GPU. backends/hip/NOTES.md says how far it has been checked. */
#ifndef PORTATTN_CDNA_FWD_KERNEL_H
#define PORTATTN_CDNA_FWD_KERNEL_H

#include "cdna_grid.h"
#include "fwd_args.h"
#include "hip_lds.h"
#include "hip_seq.h"
#include "hip_wave.h"



/* P is computed 2^15 times its softmax weight (at most 32768, inside f16's range) and the row sum
 * carries the same factor, which the normalisation cancels: gfx90a's MFMA flushes f16 inputs below
 * 2^-14 to zero, which would drop every weight more than 9.7 nats under the row max from O but not
 * from the sum (an attention sink over a long tail); shifted, weights down to 2^-29 (20 nats) stay
 * normal. A power of two, so the shift itself rounds nothing (one v_mul_f32 a score). */
#ifndef PA_CDNA_P_LOG2 /* tests/hip_sim/test_hip_cdna_flush_sim.cpp builds the kernel without it (0) */
#define PA_CDNA_P_LOG2 15
#endif

/* The kernel body; pa_cdna_fwd (below) and the hipcc entry points of cdna_fwd.hip wrap it. Scores use
 * DQK head-dim elements; the output is columns C0 .. C0 + DV - 1 of V and O (d256 runs as two
 * launches of DV = 128: Q, 128 accumulators and the operand gathers of one d256 launch need more than
 * 512 registers and spilled; the second launch recomputes the scores, 1.5x the FLOPs). The LSE is
 * written by the C0 = 0 launch. */
template <bool BF16, int DQK, int DV, int C0>
__device__ __forceinline__ void pa_cdna_fwd_body(const pa_fwd_args &a)
{
    constexpr int CHK = DQK / 8, CHV = DV / 8; /* 16-byte chunks per K and V row */
    constexpr int NT = PA_CDNA_THREADS;
    static_assert(PA_CDNA_THREADS == PA_CDNA_WAVES * PA_WAVE, "wave64");
    constexpr int RPPK = NT / CHK, RPPV = NT / CHV; /* tile rows one pass of 16-byte copies covers */
    static_assert((DQK == 64 || DQK == 128 || DQK == 256) && (DV == 64 || DV == 128) && C0 % DV == 0 &&
                      C0 + DV <= DQK, "instances");
    const pa_lds_model lm = {"gfx90a", 32, 4, PA_WAVE, 1}; /* the layout of every CDNA target */
    __shared__ __attribute__((aligned(16))) uint16_t sk_t[PA_CDNA_BN * DQK], sv_t[PA_CDNA_BN * DV];
    PA_WAVE_SCRATCH(PA_CDNA_WAVES);

    const int tid = threadIdx.x, lane = pa_wave_lane(), wave = tid / PA_WAVE;
    const int64_t nbh = (int64_t)a.batch * a.heads;
    const int64_t bh = blockIdx.y + (int64_t)gridDim.y * blockIdx.z;
    if (bh >= nbh) return;
    const int b = (int)(bh / a.heads), h = (int)(bh % a.heads);
    const pa_hip_seq seq = pa_hip_seq_of(a, b, h, C0);
    const int q0 = seq.q0, sq = seq.sq, sk = seq.sk;
    const uint16_t *qh = seq.q, *kh = seq.k, *vh = seq.v;
    uint16_t *oh = seq.o;

    /* Row blocks of this sequence: a grid sized by a max_seqlen_q below the longest sequence still
     * covers every row (as cuda-sm80). With a right-bounded mask the longest blocks come first. */
    const int nmb = (sq + PA_CDNA_BM - 1) / PA_CDNA_BM;
    for (int t = blockIdx.x; t < nmb; t += gridDim.x) {
        const int m0 = (a.wr >= 0 ? nmb - 1 - t : t) * PA_CDNA_BM;

        /* This lane's query and its visible keys; the block's key tiles (the hull of its rows). */
        const int qrow = m0 + wave * 32 + lane % 32;
        int klo, khi;
        pa_row_keys(qrow, sq, sk, a.wl, a.wr, &klo, &khi);
        const pa_tile_hull hull = pa_tile_hull_of(m0, PA_CDNA_BM, PA_CDNA_BN, sq, sk, a.wl, a.wr);
        const int n_lo = hull.n_lo, n_hi = hull.n_hi;
        const int full_lo = hull.full_lo, full_hi = hull.full_hi; /* tiles with no mask */

        /* Q^T as the B operand of S^T, for every k-step: lane l holds query l % 32 and, at step
         * 2g + t, head-dim elements 16g + 8 (l / 32) + 4t .. +3 (the KPack-8 order of the K reads). */
        pa_in4 qf[DQK / 8];
        {
            const bool ok = qrow < sq;
            const uint16_t *qr = qh + (int64_t)(ok ? qrow : 0) * a.qs[1];
#pragma unroll
            for (int g = 0; g < DQK / 16; ++g)
#pragma unroll
                for (int t = 0; t < 2; ++t) {
                    const int col = 16 * g + 8 * (lane / 32) + 4 * t; /* 4 columns of one 8-column chunk */
#pragma unroll
                    for (int i = 0; i < 4; ++i) qf[2 * g + t].h[i] = ok && col < a.dqk ? qr[col + i] : 0;
                }
        }

        pa_acc32 o[DV / 32];
#pragma unroll
        for (int c = 0; c < DV / 32; ++c)
#pragma unroll
            for (int r = 0; r < 16; ++r) o[c].r[r] = 0.f;
        float mrow = -INFINITY, lsum = 0.f;

        for (int n = n_lo; n < n_hi; ++n) {
            /* K and V tiles into LDS, 16 bytes a thread a pass; keys past the sequence and columns past
             * the call's head dims read as zeros. */
            __syncthreads();
            if constexpr (CHK == CHV) { /* one pass loop for both */
#pragma unroll
                for (int p = 0; p < PA_CDNA_BN / RPPK; ++p) {
                    const int r = p * RPPK + tid / CHK, c = tid % CHK, key = n * PA_CDNA_BN + r;
                    uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
                    if (key < sk) {
                        if (8 * c < a.dqk) kv = *(const uint4 *)(kh + (int64_t)key * a.ks[1] + 8 * c);
                        if (C0 + 8 * c < a.dv) vv = *(const uint4 *)(vh + (int64_t)key * a.vs[1] + 8 * c);
                    }
                    const int off = pa_lds_chunk_addr(&lm, r, c, CHK) / 2;
                    *(uint4 *)(sk_t + off) = kv;
                    *(uint4 *)(sv_t + off) = vv;
                }
            } else {
#pragma unroll
                for (int p = 0; p < PA_CDNA_BN / RPPK; ++p) {
                    const int r = p * RPPK + tid / CHK, c = tid % CHK, key = n * PA_CDNA_BN + r;
                    uint4 kv = make_uint4(0, 0, 0, 0);
                    if (key < sk && 8 * c < a.dqk) kv = *(const uint4 *)(kh + (int64_t)key * a.ks[1] + 8 * c);
                    *(uint4 *)(sk_t + pa_lds_chunk_addr(&lm, r, c, CHK) / 2) = kv;
                }
#pragma unroll
                for (int p = 0; p < PA_CDNA_BN / RPPV; ++p) {
                    const int r = p * RPPV + tid / CHV, c = tid % CHV, key = n * PA_CDNA_BN + r;
                    uint4 vv = make_uint4(0, 0, 0, 0);
                    if (key < sk && C0 + 8 * c < a.dv) vv = *(const uint4 *)(vh + (int64_t)key * a.vs[1] + 8 * c);
                    *(uint4 *)(sv_t + pa_lds_chunk_addr(&lm, r, c, CHV) / 2) = vv;
                }
            }
            __syncthreads();

            /* S^T = K Q^T: two k-steps per 16-byte read of a K row. */
            pa_acc32 st;
#pragma unroll
            for (int r = 0; r < 16; ++r) st.r[r] = 0.f;
#pragma unroll
            for (int g = 0; g < DQK / 16; ++g) {
                const uint4 kk = *(const uint4 *)(sk_t + pa_lds_frag_addr(&lm, lane, 32, 0, g, CHK) / 2);
                pa_in4 k_lo, k_hi;
                __builtin_memcpy(&k_lo, &kk.x, 8);
                __builtin_memcpy(&k_hi, &kk.z, 8);
                PA_MFMA32(BF16, st, k_lo, qf[2 * g]);
                PA_MFMA32(BF16, st, k_hi, qf[2 * g + 1]);
            }

            /* Register r holds key 8 (r / 4) + 4 (lane / 32) + r % 4 of the tile for this lane's query. */
            if (a.softcap) {
#pragma unroll
                for (int r = 0; r < 16; ++r) st.r[r] = a.post_mul * tanhf(st.r[r] * a.pre_mul);
            } else if (a.transform) {
#pragma unroll
                for (int r = 0; r < 16; ++r) st.r[r] *= a.pre_mul;
            }
            if (n < full_lo || n >= full_hi) { /* boundary tile: mask per element */
                const int key0 = n * PA_CDNA_BN + 4 * (lane / 32);
#pragma unroll
                for (int r = 0; r < 16; ++r) {
                    const int key = key0 + 8 * (r / 4) + r % 4;
                    if (key < klo || key > khi) st.r[r] = -INFINITY;
                }
            }
            float mx = -INFINITY;
#pragma unroll
            for (int r = 0; r < 16; ++r) mx = fmaxf(mx, st.r[r]);
            mx = fmaxf(mx, PA_XOR32(mx));
            const float mnew = fmaxf(mrow, mx), base = mnew == -INFINITY ? 0.f : mnew * a.mult;
            const float corr = pa_exp2(mrow * a.mult - base);
            mrow = mnew;
            lsum *= corr;
            pa_in4 pf[4];
#pragma unroll
            for (int r = 0; r < 16; ++r) {
                const float p = pa_exp2(fmaf(st.r[r], a.mult, -base)) * (float)(1 << PA_CDNA_P_LOG2);
                lsum += p;
                pf[r / 4].h[r % 4] = pa_from_f32<BF16>(p);
            }
            if (PA_ANY(corr != 1.f)) { /* rescale only when some row's max grew (rare once it settles): the
                                         * accumulators live in AGPRs, a rescale moves all of them */
#pragma unroll
                for (int c = 0; c < DV / 32; ++c)
#pragma unroll
                    for (int r = 0; r < 16; ++r) o[c].r[r] *= corr;
            }

            /* O^T += V^T P^T, 8 keys a step: V^T's A operand gathered as 4 keys of one column a lane. */
#pragma unroll
            for (int s = 0; s < 4; ++s)
#pragma unroll
                for (int c = 0; c < DV / 32; ++c) {
                    pa_in4 va;
#pragma unroll
                    for (int r = 0; r < 4; ++r) va.h[r] = sv_t[pa_lds_v_half_addr(&lm, lane, 32, 8 * s, r, 32 * c, CHV) / 2];
                    PA_MFMA32(BF16, o[c], va, pf[s]);
                }
        }

        /* Epilogue: the two half-waves' row sums (2^15 too large, as O), one normalisation, O^T registers 4m..4m+3 of column
         * block c are head-dim elements 32c + 8m + 4 (lane / 32) .. +3 of this lane's query (none stored past Dv). */
        const float l = lsum + PA_XOR32(lsum);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        if (qrow < sq) {
            uint16_t *orow = oh + (int64_t)qrow * a.os[1];
#pragma unroll
            for (int c = 0; c < DV / 32; ++c)
#pragma unroll
                for (int m = 0; m < 4; ++m) {
                    if (C0 + 32 * c + 8 * m >= a.dv) continue;
                    uint16_t v4[4];
#pragma unroll
                    for (int r = 0; r < 4; ++r) v4[r] = l == 0.f ? 0 : pa_from_f32<BF16>(o[c].r[4 * m + r] * inv);
                    __builtin_memcpy(orow + 32 * c + 8 * m + 4 * (lane / 32), v4, 8);
                }
            if (C0 == 0 && a.lse && lane < 32) {
                const int64_t off = a.cu_q ? h * a.ls[1] + (int64_t)(q0 + qrow) * a.ls[2]
                                           : b * a.ls[0] + h * a.ls[1] + (int64_t)qrow * a.ls[2];
                a.lse[off] = l > 0.f ? (mrow * a.mult + (__log2f(l) - PA_CDNA_P_LOG2)) * 0.69314718055994531f
                                     : l == 0.f ? -INFINITY : NAN;
            }
        }
    }
}

/* The nvcc emulation's kernel: one launch of the (DQK, DV, C0) instance. */
template <bool BF16, int DQK, int DV = DQK, int C0 = 0>
__global__ void __launch_bounds__(PA_CDNA_WAVES * PA_WAVE) pa_cdna_fwd(const pa_fwd_args a)
{
    pa_cdna_fwd_body<BF16, DQK, DV, C0>(a);
}

#endif
