/* The RDNA3 forward kernel (gfx1100; wave32, v_wmma_f32_16x16x16_{f16,bf16}), written once for hipcc
 * and for the nvcc/CPU emulation (hip_wave.h holds every wave-level primitive). It mirrors the CDNA
 * kernel (cdna_fwd_kernel.h) on the WMMA shapes; design and state: backends/hip/NOTES.md.
 *
 * A workgroup of 4 wave32s owns 64 query rows of one (batch, head); each wave owns 16 of them in
 * full. The block's Q rows and tiles of K and V go through LDS (hip_lds.h's RDNA3 layout, conflict-free
 * under both a 32- and a 64-bank model by tests/test_hip_lds.c); a tile is 32 keys (two WMMA blocks)
 * at d64/d128 and 16 at d256 (PA_RDNA3_BN_OF). Per 16-key block each wave computes S^T = K Q^T (16
 * keys x 16 queries): in the f32 accumulator lane l holds query l % 16 and keys 2r + l / 16 (reg r),
 * so the softmax is a per-lane loop plus one xor-16 exchange. K rows (A) are read from LDS, two
 * 16-byte reads per lane and k-step; Q rows (B = Q^T) are read once per row block into registers at
 * d64/d128 (DQK / 2 VGPRs) and from LDS at every k-step at d256; lanes l and l ^ 16 read the same
 * row, the replication WMMA wants in both half-waves. P^T, the B operand of O^T += V^T P^T, is the
 * accumulator rounded to 16 bits plus the partner lane's 8 keys (4 packed exchanges), in the key
 * order of pa_wmma_pv_key; V^T's A operand is gathered in that order, one 2-byte LDS read per key.
 * O^T stays in VGPRs (DV / 2 per lane).
 *
 * Instances of head dims 64, 128 and 256 serve every call whose head dims are multiples of 8 up to
 * theirs: Q/K columns past the call's Dqk and V columns past its Dv are never loaded and read as
 * zeros (S and the LSE exact), O's columns past Dv are never stored. Each is one launch.
 *
 * Register budget: gfx1100 is built by clang 17+ (clang-19 here), which gives a wave up to 256 VGPRs
 * (clang-15 stopped at 128: it forced Q re-reads from LDS, 16-key tiles and d256 as four launches).
 * Under clang-19: 169 VGPRs at d64, 250 at d128, 256 at d256 (O^T alone is 128 there), no spills;
 * tests/isa_gate_hip.sh requires 0 spills and 0 scratch. Per-lane LDS addresses are still recomputed
 * every tile from pa_opaque values rather than hoisted (a clang-15 measure, kept: d128 and d256 sit
 * at the 256-VGPR ceiling).
 *
 * Built for gfx1100 and gated by tests/isa_gate_hip.sh; the same source runs on the CPU under the
 * emulation (the case table through the hip-rdna3 backend against tests/hip_fake, and
 * tests/hip_sim/test_hip_rdna3_sim.cpp). backends/hip/NOTES.md says how far it has been checked. */
#ifndef PORTATTN_RDNA3_FWD_KERNEL_H
#define PORTATTN_RDNA3_FWD_KERNEL_H

#include "fwd_args.h"
#include "rdna3_grid.h"
#include "hip_lds.h"
#include "hip_seq.h"
#include "hip_wave.h"


/* The kernel body; pa_rdna3_fwd (below) and the hipcc entry points of rdna3_fwd.hip wrap it. Scores
 * use DQK head-dim elements; the output is columns C0 .. C0 + DV - 1 of V and O (every instance of
 * rdna3_entries.h has C0 = 0 and DV = DQK; the parameters stay for an A/B of split launches). The LSE
 * is written by the C0 = 0 launch. */
template <bool BF16, int DQK, int DV, int C0>
__device__ __forceinline__ void pa_rdna3_fwd_body(const pa_fwd_args &a)
{
    constexpr int CH = DQK / 8, CHV = DV / 8; /* 16-byte chunks per Q/K row and per V row */
    constexpr int RPPV = PA_RDNA3_THREADS / CHV;
    constexpr int NT = PA_RDNA3_THREADS;
    static_assert(PA_RDNA3_THREADS == PA_RDNA3_WAVES * PA_WAVE32, "wave32");
    constexpr int RPP = NT / CH; /* tile rows one pass of 16-byte copies covers */
    constexpr int BN = PA_RDNA3_BN_OF(DV);
    constexpr int KB = BN / 16;
    constexpr bool QREG = DQK <= 128; /* Q^T held in VGPRs for the tile loop (see below) */
    static_assert((DQK == 64 || DQK == 128 || DQK == 256) && (DV == 64 || DV == 128 || DV == 256) && C0 % DV == 0 &&
                      C0 + DV <= DQK, "instances (a launch of DV = 256 is all of d256)");
    static_assert(BN % RPP == 0 && PA_RDNA3_BM % RPP == 0 && BN % RPPV == 0, "whole store passes");
    /* the bank count of RDNA3 is unverified: the layout serves both models (hip_lds.h) */
    const pa_lds_model lo = {"gfx1100", 32, 4, PA_WAVE32, 0}, hi = {"gfx1100-64", 64, 4, PA_WAVE32, 0};
    __shared__ __attribute__((aligned(16))) uint16_t sq_t[PA_RDNA3_BM * DQK], sk_t[BN * DQK], sv_t[BN * DV];
    PA_WAVE32_SCRATCH(PA_RDNA3_WAVES);

    const int tid = threadIdx.x, lane = tid % PA_WAVE32, wave = tid / PA_WAVE32, hl = lane / 16;
    const int64_t nbh = (int64_t)a.batch * a.heads;
    const int64_t bh = blockIdx.y + (int64_t)gridDim.y * blockIdx.z;
    if (bh >= nbh) return;
    const int b = pa_uniform((int)(bh / a.heads)), h = pa_uniform((int)(bh % a.heads));
    const pa_hip_seq seq = pa_hip_seq_of(a, b, h, C0);
    const int q0 = seq.q0, sq = seq.sq, sk = seq.sk;
    const uint16_t *qh = seq.q, *kh = seq.k, *vh = seq.v;
    uint16_t *oh = seq.o;

    /* Row blocks of this sequence (a grid sized by a short max_seqlen_q still covers every row);
     * with a right-bounded mask the longest blocks come first. */
    const int nmb = (sq + PA_RDNA3_BM - 1) / PA_RDNA3_BM;
    for (int t = blockIdx.x; t < nmb; t += gridDim.x) {
        const int m0 = (a.wr >= 0 ? nmb - 1 - t : t) * PA_RDNA3_BM;

        /* This lane's query and its visible keys; the block's key tiles (the hull of its rows). */
        const int qrow = m0 + wave * 16 + lane % 16;
        int klo, khi;
        pa_row_keys(qrow, sq, sk, a.wl, a.wr, &klo, &khi);
        const pa_tile_hull hull = pa_tile_hull_of(m0, PA_RDNA3_BM, BN, sq, sk, a.wl, a.wr);
        const int n_lo = hull.n_lo, n_hi = hull.n_hi;
        const int full_lo = hull.full_lo, full_hi = hull.full_hi; /* tiles with no mask */

        /* The block's Q rows into LDS (same layout and store pattern as the K/V tiles): Q^T, the B
         * operand of S^T, is read from there at every k-step (at k-step g lanes l and l ^ 16 hold
         * head-dim elements 16g .. 16g + 15 of query l % 16). Rows past the sequence and columns past
         * the call's Dqk read as zeros. */
        __syncthreads(); /* the previous row block's waves are done with sq_t */
        {
            const unsigned tq = (unsigned)pa_opaque(tid); /* addresses not hoisted out of the row-block loop */
#pragma unroll
            for (int p = 0; p < PA_RDNA3_BM / RPP; ++p) {
                const int r = p * RPP + (int)(tq / CH), c = (int)(tq % CH), row = m0 + r;
                uint4 qv = make_uint4(0, 0, 0, 0);
                if (row < sq && 8 * c < a.dqk) qv = *(const uint4 *)(qh + (int64_t)row * a.qs[1] + 8 * c);
                *(uint4 *)((char *)sq_t + pa_lds_rdna3_store_addr(&lo, &hi, (int)(tq % PA_WAVE32), p * PA_RDNA3_WAVES + (int)(tq / PA_WAVE32), CH)) = qv;
            }
        }

        /* Q^T in registers where the budget holds it (DQK / 2 VGPRs a lane): the tile loop then reads only
         * K and V from LDS. d256 keeps reading Q from LDS: 128 VGPRs of Q beside 64 of O^T spill. */
        pa_in16 qreg[QREG ? DQK / 16 : 1];
        if constexpr (QREG) {
            __syncthreads(); /* every wave's Q rows are in LDS */
            const int wb = pa_lds_wmma_lane_base(&lo, &hi, lane, CH);
#pragma unroll
            for (int g = 0; g < DQK / 16; ++g) {
                const uint4 q_lo = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * wave, g, 0, CH));
                const uint4 q_hi = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * wave, g, 1, CH));
                __builtin_memcpy(&qreg[g].w[0], &q_lo, 16);
                __builtin_memcpy(&qreg[g].w[4], &q_hi, 16);
            }
        }

        pa_acc8 o[DV / 16]; /* O^T: reg r of block c = head-dim 16c + 2r + lane / 16 of this lane's query */
#pragma unroll
        for (int c = 0; c < DV / 16; ++c)
#pragma unroll
            for (int r = 0; r < 8; ++r) o[c].r[r] = 0.f;
        float mrow = -INFINITY, lsum = 0.f;

        for (int n = n_lo; n < n_hi; ++n) {
            /* Per-lane values of the tile loop, recomputed every tile from an opaque thread index:
             * hoisted out of the loops, clang-15 kept them all live and spilled (see pa_opaque). */
            const unsigned tt = (unsigned)pa_opaque(tid); /* unsigned: no signed-division fix-ups */
            const int tl = (int)(tt % PA_WAVE32), tw = (int)(tt / PA_WAVE32), th = tl / 16;
            const int tr = (int)(tt / CH), tc = (int)(tt % CH);

            /* K and V tiles into LDS, 16 bytes a thread a pass; keys past the sequence and columns past
             * the call's head dims read as zeros. */
            __syncthreads();
            if constexpr (CH == CHV) { /* one pass loop for both */
#pragma unroll
                for (int p = 0; p < BN / RPP; ++p) {
                    const int r = p * RPP + tr, c = tc, key = n * BN + r;
                    uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
                    if (key < sk) {
                        if (8 * c < a.dqk) kv = *(const uint4 *)(kh + (int64_t)key * a.ks[1] + 8 * c);
                        if (C0 + 8 * c < a.dv) vv = *(const uint4 *)(vh + (int64_t)key * a.vs[1] + 8 * c);
                    }
                    /* (row r, chunk c) is pass p * WAVES + wave of pa_lds_rdna3_store_addr for this lane */
                    const int off = pa_lds_rdna3_store_addr(&lo, &hi, tl, p * PA_RDNA3_WAVES + tw, CH);
                    *(uint4 *)((char *)sk_t + off) = kv;
                    *(uint4 *)((char *)sv_t + off) = vv;
                }
            } else {
#pragma unroll
                for (int p = 0; p < BN / RPP; ++p) {
                    const int r = p * RPP + tr, key = n * BN + r;
                    uint4 kv = make_uint4(0, 0, 0, 0);
                    if (key < sk && 8 * tc < a.dqk) kv = *(const uint4 *)(kh + (int64_t)key * a.ks[1] + 8 * tc);
                    *(uint4 *)((char *)sk_t + pa_lds_rdna3_store_addr(&lo, &hi, tl, p * PA_RDNA3_WAVES + tw, CH)) = kv;
                }
                const int trv = (int)(tt / CHV), tcv = (int)(tt % CHV);
#pragma unroll
                for (int p = 0; p < BN / RPPV; ++p) {
                    const int r = p * RPPV + trv, key = n * BN + r;
                    uint4 vv = make_uint4(0, 0, 0, 0);
                    if (key < sk && C0 + 8 * tcv < a.dv) vv = *(const uint4 *)(vh + (int64_t)key * a.vs[1] + 8 * tcv);
                    *(uint4 *)((char *)sv_t + pa_lds_rdna3_store_addr(&lo, &hi, tl, p * PA_RDNA3_WAVES + tw, CHV)) = vv;
                }
            }
            __syncthreads();

            /* S^T = K Q^T per 16-key block; reg r of st[j] is key 16j + 2r + lane / 16 of the tile. */
            pa_acc8 st[KB];
            const int wb = pa_lds_wmma_lane_base(&lo, &hi, tl, CH);
#pragma unroll
            for (int j = 0; j < KB; ++j) {
#pragma unroll
                for (int r = 0; r < 8; ++r) st[j].r[r] = 0.f;
                /* all k-steps unrolled, d256 too (clang-15 spilled that; clang-19 holds it in 195-198 VGPRs) */
#pragma unroll
                for (int g = 0; g < DQK / 16; ++g) {
                    /* = pa_lds_wmma_addr (Q rows 16 wave.., K rows 16 j..), split (see hip_lds.h) */
                    const uint4 k_lo = *(const uint4 *)((const char *)sk_t + pa_lds_wmma_addr_from(wb, 16 * j, g, 0, CH));
                    const uint4 k_hi = *(const uint4 *)((const char *)sk_t + pa_lds_wmma_addr_from(wb, 16 * j, g, 1, CH));
                    pa_in16 ka;
                    __builtin_memcpy(&ka.w[0], &k_lo, 16);
                    __builtin_memcpy(&ka.w[4], &k_hi, 16);
                    if constexpr (QREG) {
                        PA_WMMA16(BF16, st[j], ka, qreg[g]);
                    } else {
                        const uint4 q_lo = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * tw, g, 0, CH));
                        const uint4 q_hi = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * tw, g, 1, CH));
                        pa_in16 qb;
                        __builtin_memcpy(&qb.w[0], &q_lo, 16);
                        __builtin_memcpy(&qb.w[4], &q_hi, 16);
                        PA_WMMA16(BF16, st[j], ka, qb);
                    }
                }
            }

            if (a.softcap) {
#pragma unroll
                for (int j = 0; j < KB; ++j)
#pragma unroll
                    for (int r = 0; r < 8; ++r) st[j].r[r] = a.post_mul * tanhf(st[j].r[r] * a.pre_mul);
            } else if (a.transform) {
#pragma unroll
                for (int j = 0; j < KB; ++j)
#pragma unroll
                    for (int r = 0; r < 8; ++r) st[j].r[r] *= a.pre_mul;
            }
            if (n < full_lo || n >= full_hi) { /* boundary tile: mask per element */
                const int key0 = n * BN + th;
#pragma unroll
                for (int j = 0; j < KB; ++j)
#pragma unroll
                    for (int r = 0; r < 8; ++r) {
                        const int key = key0 + 16 * j + 2 * r;
                        if (key < klo || key > khi) st[j].r[r] = -INFINITY;
                    }
            }
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < KB; ++j)
#pragma unroll
                for (int r = 0; r < 8; ++r) mx = fmaxf(mx, st[j].r[r]);
            mx = fmaxf(mx, __uint_as_float(PA_XOR16(__float_as_uint(mx))));
            const float mnew = fmaxf(mrow, mx), base = mnew == -INFINITY ? 0.f : mnew * a.mult;
            const float corr = pa_exp2(mrow * a.mult - base);
            mrow = mnew;
            lsum *= corr;

            /* P^T per block: this lane's 8 probabilities (16-bit, packed in pairs) and its partner's;
             * items 0-7 are the even keys (half-wave 0's), 8-15 the odd ones (pa_wmma_pv_key). */
            pa_in16 pb[KB];
#pragma unroll
            for (int j = 0; j < KB; ++j) {
                uint32_t own[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float p0 = pa_exp2(fmaf(st[j].r[2 * i], a.mult, -base));
                    const float p1 = pa_exp2(fmaf(st[j].r[2 * i + 1], a.mult, -base));
                    lsum += p0 + p1;
                    own[i] = pa_pack2<BF16>(p0, p1);
                }
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const uint32_t par = PA_XOR16(own[i]);
                    pb[j].w[i] = th ? par : own[i];     /* even keys 4i, 4i + 2 */
                    pb[j].w[4 + i] = th ? own[i] : par; /* odd keys 4i + 1, 4i + 3 */
                }
            }
            /* Rescale O^T unconditionally: the CDNA kernel's wave vote avoids moving AGPRs, and RDNA3
             * keeps O^T in VGPRs. */
#pragma unroll
            for (int c = 0; c < DV / 16; ++c)
#pragma unroll
                for (int r = 0; r < 8; ++r) o[c].r[r] *= corr;

            /* O^T += V^T P^T: lane l (and l ^ 16) gathers head-dim 16c + l % 16 of the block's keys. */
            const int v_up = pa_lds_wmma_v_lane_addr(tl, 0), v_dn = pa_lds_wmma_v_lane_addr(tl, 1);
#pragma unroll
            for (int j = 0; j < KB; ++j)
#pragma unroll
                for (int c = 0; c < DV / 16; ++c) {
                    pa_in16 va;
#pragma unroll
                    for (int p = 0; p < 16; ++p) { /* = pa_lds_wmma_v_half_addr, split (see hip_lds.h) */
                        const int ka = pa_lds_wmma_v_key_addr(&lo, &hi, 16 * j + pa_wmma_pv_key(p), 16 * c, CHV);
                        const uint32_t v = *(const uint16_t *)((const char *)sv_t + ka + (pa_lds_wmma_v_x_odd(ka) ? v_dn : v_up));
                        va.w[p / 2] = p % 2 ? va.w[p / 2] | v << 16 : v;
                    }
                    PA_WMMA16(BF16, o[c], va, pb[j]);
                }
        }

        /* Epilogue: the two half-waves' row sums, one normalisation. Reg r of O^T block c is head-dim
         * 16c + 2r + lane / 16; after 4 exchanges per block lane half 0 holds dims 16c .. 16c + 7 and
         * half 1 dims 16c + 8 .. 16c + 15 of the query, written as one 16-byte store (none past Dv; the
         * exchanges still run in every lane). */
        const float l = lsum + __uint_as_float(PA_XOR16(__float_as_uint(lsum)));
        const float inv = l > 0.f ? 1.f / l : 0.f;
        uint16_t *orow = oh + (int64_t)(qrow < sq ? qrow : 0) * a.os[1];
#pragma unroll
        for (int c = 0; c < DV / 16; ++c) {
            uint32_t w[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float mine = (hl ? o[c].r[4 + i] : o[c].r[i]) * inv; /* dim 16c + 8 hl + 2i + hl */
                const float give = (hl ? o[c].r[i] : o[c].r[4 + i]) * inv; /* dim 16c + 8 (1 - hl) + 2i + hl */
                const float got = __uint_as_float(PA_XOR16(__float_as_uint(give))); /* dim 16c + 8 hl + 2i + 1 - hl */
                w[i] = l == 0.f ? 0u : hl ? pa_pack2<BF16>(got, mine) : pa_pack2<BF16>(mine, got);
            }
            if (qrow < sq && C0 + 16 * c + 8 * hl < a.dv) *(uint4 *)(orow + 16 * c + 8 * hl) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        if (qrow < sq) {
            if (C0 == 0 && a.lse && hl == 0) {
                const int64_t off = a.cu_q ? h * a.ls[1] + (int64_t)(q0 + qrow) * a.ls[2]
                                           : b * a.ls[0] + h * a.ls[1] + (int64_t)qrow * a.ls[2];
                a.lse[off] = l > 0.f ? (mrow * a.mult + __log2f(l)) * 0.69314718055994531f : l == 0.f ? -INFINITY : NAN;
            }
        }
    }
}

template <bool BF16, int DQK, int DV = DQK, int C0 = 0>
__global__ void __launch_bounds__(PA_RDNA3_THREADS) pa_rdna3_fwd(const pa_fwd_args a)
{
    pa_rdna3_fwd_body<BF16, DQK, DV, C0>(a);
}

#endif
