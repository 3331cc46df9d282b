/* The CDNA forward kernel (gfx90a, gfx940; wave64, v_mfma_f32_32x32x8), written once for hipcc and
 * for the nvcc emulation (hip_wave.h holds every wave-level primitive). Design: backends/hip/NOTES.md.
 *
 * A workgroup of 4 waves owns 128 query rows of one (batch, head); each wave owns 32 of them in
 * full. K and V tiles of 32 keys go through LDS (hip_lds.h layout, conflict-free by
 * tests/sim/test_hip_lds.c). Each wave computes S^T = K Q^T (32 keys x 32 queries): in that accumulator a
 * lane holds one query column (16 of the 32 keys; the other 16 sit in lane ^ 32), so the softmax is a
 * per-lane loop plus one xor-32 exchange, and registers 4s..4s+3 are, rounded to 16 bits, the B
 * operand (P^T) of step s of O^T += V^T P^T. Q stays in registers for the whole tile loop, as the B
 * operand of S^T; K is read as A with one 16-byte read per two MFMA k-steps (KPack 8, the same k
 * permutation as Q's registers); V^T's A operand is gathered with four 2-byte reads per step.
 *
 * Instances at every multiple of 32 up to 256 but 224 (cdna_entries.h; d256 as two launches of 128
 * output columns each, see below) serve every call whose head dims are multiples of 8 up to theirs: columns past the call's Dqk (Q, K) and Dv (V) are never loaded and read as zeros, so S and
 * the LSE are exact, and O's columns past Dv (zeros) are never stored.
 * Built for gfx90a/gfx942 and gated by tests/isa/isa_gate_hip.sh; the case table runs it through the
 * hip-cdna backend against tests/sim/hip_fake's simulated gfx90a, and cdna_fwd_emu.cu builds it with
 * nvcc for an NVIDIA GPU. backends/hip/NOTES.md says how far it has been checked.
 *
 * pa_cdna_fwd_body reads top-down as the FlashAttention loop, each phase a device function (all
 * inlined): the (batch, head) pair and the sequence's extent, per row block Q into registers, then per
 * key tile the K/V load into LDS, S^T, the step (score map, mask, online softmax, P packed) and
 * O^T += V^T P^T, and the epilogue. The phases the split decode (cdna_decode_kernel.h) shares are
 * first. */
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
#ifndef PA_CDNA_P_LOG2 /* tests/sim/hip_sim/test_hip_cdna_flush_sim.cpp builds the kernel without it (0) */
#define PA_CDNA_P_LOG2 15
#endif

/* The phases below that use PA_MFMA32, PA_XOR32 or PA_ANY take the wave scratch the kernel body
 * declares (PA_WAVE_SCRATCH): PA_WAVE_SCRATCH_PARAMS ends their parameter lists, PA_WAVE_SCRATCH_ARGS
 * their calls. Under the emulation (emu/hip_wave_emu.h) they pass its four arrays by the names its
 * operations use; on AMD they are empty (the builtins need no scratch). cdna_decode_kernel.h uses them
 * too. */
#ifndef PA_WAVE_SCRATCH_ARGS
#ifdef PA_WAVE_EMU
#define PA_WAVE_SCRATCH_PARAMS                                                                                  \
    , [[maybe_unused]] pa_in4(*pa_emu_a)[PA_WAVE], [[maybe_unused]] pa_in4(*pa_emu_b)[PA_WAVE],                 \
        [[maybe_unused]] float(*pa_emu_x)[PA_WAVE], [[maybe_unused]] int(*pa_emu_i)[PA_WAVE]
#define PA_WAVE_SCRATCH_ARGS , pa_emu_a, pa_emu_b, pa_emu_x, pa_emu_i
#else
#define PA_WAVE_SCRATCH_PARAMS
#define PA_WAVE_SCRATCH_ARGS
#endif
#endif

/* ---- Phases both CDNA kernels share (this file's prefill and cdna_decode_kernel.h's split decode) ---- */

/* A lane's online-softmax state: O^T's DV / 32 column blocks of its query, the running max of its
 * scores and the running sum of P over the keys this lane holds (lane ^ 32 holds the tile's others). */
template <int DV> struct pa_cdna_row {
    pa_acc32 o[DV / 32];
    float mrow, lsum;
};

template <int DV> __device__ __forceinline__ void pa_cdna_row_init(pa_cdna_row<DV> &row)
{
#pragma unroll
    for (int c = 0; c < DV / 32; ++c)
#pragma unroll
        for (int r = 0; r < 16; ++r) row.o[c].r[r] = 0.f;
    row.mrow = -INFINITY, row.lsum = 0.f;
}

/* Q^T as the B operand of S^T, for every k-step, from the lane's query row qr (ok = the row exists):
 * lane l holds query l % 32 and, at step 2g + t, head-dim elements 16g + 8 (l / 32) + 4t .. +3 (the
 * KPack-8 order of the K reads); columns past the call's dqk are zeros. */
template <int DQK>
__device__ __forceinline__ void pa_cdna_load_q(pa_in4 (&qf)[DQK / 8], const uint16_t *qr, bool ok, int dqk, int lane)
{
#pragma unroll
    for (int g = 0; g < DQK / 16; ++g)
#pragma unroll
        for (int t = 0; t < 2; ++t) {
            const int col = 16 * g + 8 * (lane / 32) + 4 * t; /* 4 columns of one 8-column chunk */
#pragma unroll
            for (int i = 0; i < 4; ++i) qf[2 * g + t].h[i] = ok && col < dqk ? qr[col + i] : 0;
        }
}

/* One key tile's step from its scores S^T (st: register r holds key key0 + 8 (r / 4) + 4 (lane / 32) +
 * r % 4 of the tile for this lane's query): the score map (softcap, or a negative scale, when the host
 * set transform), the mask of keys outside [klo, khi] when asked (a boundary tile), the online softmax
 * in base 2 (the max over the lane and its partner lane ^ 32; O rescaled only when some row's max grew,
 * rare once it settles: a rescale multiplies every accumulator, AGPRs in the prefill) and P,
 * 2^PA_CDNA_P_LOG2 times its weight, packed as the B operands pf[s] of the four O^T += V^T P^T steps.
 * A is the kernels' pa_fwd_args (a template parameter only so that host tests may pass their own). */
template <bool BF16, int DV, typename A>
__device__ __forceinline__ void pa_cdna_step(pa_cdna_row<DV> &row, pa_acc32 &st, pa_in4 (&pf)[4], const A &a, bool mask,
                                             int key0, int klo, int khi, int lane PA_WAVE_SCRATCH_PARAMS)
{
    if (a.softcap) {
#pragma unroll
        for (int r = 0; r < 16; ++r) st.r[r] = a.post_mul * tanhf(st.r[r] * a.pre_mul);
    } else if (a.transform) {
#pragma unroll
        for (int r = 0; r < 16; ++r) st.r[r] *= a.pre_mul;
    }
    if (mask) {
        const int k0 = key0 + 4 * (lane / 32);
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            const int key = k0 + 8 * (r / 4) + r % 4;
            if (key < klo || key > khi) st.r[r] = -INFINITY;
        }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int r = 0; r < 16; ++r) mx = fmaxf(mx, st.r[r]);
    mx = fmaxf(mx, PA_XOR32(mx));
    const float mnew = fmaxf(row.mrow, mx), base = mnew == -INFINITY ? 0.f : mnew * a.mult;
    const float corr = pa_exp2(row.mrow * a.mult - base);
    row.mrow = mnew;
    row.lsum *= corr;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        const float p = pa_exp2(fmaf(st.r[r], a.mult, -base)) * (float)(1 << PA_CDNA_P_LOG2);
        row.lsum += p;
        pf[r / 4].h[r % 4] = pa_from_f32<BF16>(p);
    }
    if (PA_ANY(corr != 1.f)) {
#pragma unroll
        for (int c = 0; c < DV / 32; ++c)
#pragma unroll
            for (int r = 0; r < 16; ++r) row.o[c].r[r] *= corr;
    }
}

/* O's row orow (from column C0 on) normalised by inv (l: both half-waves' row sum): O^T registers
 * 4m..4m+3 of column block c are head-dim elements C0 + 32c + 8m + 4 (lane / 32) .. +3 of this lane's
 * query; none stored past the call's dv; a row that saw no key is 0. */
template <bool BF16, int DV, int C0>
__device__ __forceinline__ void pa_cdna_store_o(uint16_t *orow, const pa_cdna_row<DV> &row, float l, float inv, int dv,
                                                int lane)
{
#pragma unroll
    for (int c = 0; c < DV / 32; ++c)
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            if (C0 + 32 * c + 8 * m >= dv) continue;
            uint16_t v4[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) v4[r] = l == 0.f ? 0 : pa_from_f32<BF16>(row.o[c].r[4 * m + r] * inv);
            __builtin_memcpy(orow + 32 * c + 8 * m + 4 * (lane / 32), v4, 8);
        }
}

/* ---- The prefill's own phases ---- */

/* The workgroup's (batch b, head h) from grid y and z; false past the last pair. */
__device__ __forceinline__ bool pa_cdna_fwd_pair(const pa_fwd_args &a, int *b, int *h)
{
    const int64_t nbh = (int64_t)a.batch * a.heads;
    const int64_t bh = blockIdx.y + (int64_t)gridDim.y * blockIdx.z;
    if (bh >= nbh) return false;
    *b = (int)(bh / a.heads), *h = (int)(bh % a.heads);
    return true;
}

/* Copy passes of a tile of BN rows x CH 16-byte chunks over the workgroup's threads. */
template <int CH, int BN> constexpr int pa_cdna_copy_passes = (BN * CH + PA_CDNA_THREADS - 1) / PA_CDNA_THREADS;

/* Thread tid's row r and chunk c in copy pass p of such a tile: copies numbered row-major,
 * thread-fastest (pa_lds_store_addr's order, so a wave stores whole aligned runs of the swizzled
 * tile). A row of a power-of-two chunk count divides the threads and keeps the shift-and-mask form;
 * d96/d160/d192/d224 rows (12, 20, 24, 28 chunks) do not and take the division; a last pass partly
 * past the tile (d96, d160) returns false there. */
template <int CH, int BN> __device__ __forceinline__ bool pa_cdna_copy_slot(int p, int tid, int &r, int &c)
{
    constexpr int NT = PA_CDNA_THREADS;
    if constexpr (NT % CH == 0) {
        r = p * (NT / CH) + tid / CH, c = tid % CH;
    } else {
        const int i = p * NT + tid;
        r = i / CH, c = i % CH;
    }
    return (BN * CH) % NT == 0 || r < BN;
}

/* K and V tile n into LDS (layout lm), 16 bytes a thread a pass; keys past the sequence and columns
 * past the call's head dims read as zeros. */
template <int DQK, int DV, int C0>
__device__ __forceinline__ void pa_cdna_fwd_load_kv(const pa_fwd_args &a, const pa_hip_seq &seq, const pa_lds_model &lm,
                                                    int n, int tid, uint16_t *sk_t, uint16_t *sv_t)
{
    constexpr int CHK = DQK / 8, CHV = DV / 8, BN = PA_CDNA_BN; /* 16-byte chunks per K and V row */
    const uint16_t *kh = seq.k, *vh = seq.v;
    const int sk = seq.sk;
    if constexpr (CHK == CHV) { /* one pass loop for both */
#pragma unroll
        for (int p = 0; p < pa_cdna_copy_passes<CHK, BN>; ++p) {
            int r, c;
            if (!pa_cdna_copy_slot<CHK, BN>(p, tid, r, c)) continue;
            const int key = n * BN + r;
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
        for (int p = 0; p < pa_cdna_copy_passes<CHK, BN>; ++p) {
            int r, c;
            if (!pa_cdna_copy_slot<CHK, BN>(p, tid, r, c)) continue;
            const int key = n * BN + r;
            uint4 kv = make_uint4(0, 0, 0, 0);
            if (key < sk && 8 * c < a.dqk) kv = *(const uint4 *)(kh + (int64_t)key * a.ks[1] + 8 * c);
            *(uint4 *)(sk_t + pa_lds_chunk_addr(&lm, r, c, CHK) / 2) = kv;
        }
#pragma unroll
        for (int p = 0; p < pa_cdna_copy_passes<CHV, BN>; ++p) {
            int r, c;
            if (!pa_cdna_copy_slot<CHV, BN>(p, tid, r, c)) continue;
            const int key = n * BN + r;
            uint4 vv = make_uint4(0, 0, 0, 0);
            if (key < sk && C0 + 8 * c < a.dv) vv = *(const uint4 *)(vh + (int64_t)key * a.vs[1] + 8 * c);
            *(uint4 *)(sv_t + pa_lds_chunk_addr(&lm, r, c, CHV) / 2) = vv;
        }
    }
}

/* S^T += K Q^T over one 16-column group of Dqk: a lane's 16-byte chunk kk of its key row (8 halves) is
 * the A operands of two 4-half k-steps, against Q's fragments q_lo and q_hi. */
template <bool BF16>
__device__ __forceinline__ void pa_cdna_qk16(pa_acc32 &st, const uint4 &kk, const pa_in4 &q_lo,
                                             const pa_in4 &q_hi PA_WAVE_SCRATCH_PARAMS)
{
    pa_in4 k_lo, k_hi;
    __builtin_memcpy(&k_lo, &kk.x, 8);
    __builtin_memcpy(&k_hi, &kk.z, 8);
    PA_MFMA32(BF16, st, k_lo, q_lo);
    PA_MFMA32(BF16, st, k_hi, q_hi);
}

/* S^T = K Q^T of the tile in LDS: two k-steps per 16-byte read of a K row. */
template <bool BF16, int DQK>
__device__ __forceinline__ void pa_cdna_fwd_scores(pa_acc32 &st, const pa_in4 (&qf)[DQK / 8], const uint16_t *sk_t,
                                                   const pa_lds_model &lm, int lane PA_WAVE_SCRATCH_PARAMS)
{
#pragma unroll
    for (int r = 0; r < 16; ++r) st.r[r] = 0.f;
#pragma unroll
    for (int g = 0; g < DQK / 16; ++g) {
        const uint4 kk = *(const uint4 *)(sk_t + pa_lds_frag_addr(&lm, lane, 32, 0, g, DQK / 8) / 2);
        pa_cdna_qk16<BF16>(st, kk, qf[2 * g], qf[2 * g + 1] PA_WAVE_SCRATCH_ARGS);
    }
}

/* O^T += V^T P^T, 8 keys a step: V^T's A operand gathered from LDS as 4 keys of one column a lane. */
template <bool BF16, int DV>
__device__ __forceinline__ void pa_cdna_fwd_pv(pa_cdna_row<DV> &row, const pa_in4 (&pf)[4], const uint16_t *sv_t,
                                               const pa_lds_model &lm, int lane PA_WAVE_SCRATCH_PARAMS)
{
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int c = 0; c < DV / 32; ++c) {
            pa_in4 va;
#pragma unroll
            for (int r = 0; r < 4; ++r) va.h[r] = sv_t[pa_lds_v_half_addr(&lm, lane, 32, 8 * s, r, 32 * c, DV / 8) / 2];
            PA_MFMA32(BF16, row.o[c], va, pf[s]);
        }
}

/* Epilogue of the lane's query row qrow: the two half-waves' row sums (2^PA_CDNA_P_LOG2 too large, as
 * O), one normalisation, O, and the LSE (the C0 = 0 launch writes it). */
template <bool BF16, int DV, int C0>
__device__ __forceinline__ void pa_cdna_fwd_finish(const pa_fwd_args &a, const pa_hip_seq &seq, const pa_cdna_row<DV> &row,
                                                   int b, int h, int qrow, int lane PA_WAVE_SCRATCH_PARAMS)
{
    const float l = row.lsum + PA_XOR32(row.lsum);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    if (qrow >= seq.sq) return;
    pa_cdna_store_o<BF16, DV, C0>(seq.o + (int64_t)qrow * a.os[1], row, l, inv, a.dv, lane);
    if (C0 == 0 && a.lse && lane < 32) {
        const int64_t off = a.cu_q ? h * a.ls[1] + (int64_t)(seq.q0 + qrow) * a.ls[2]
                                   : b * a.ls[0] + h * a.ls[1] + (int64_t)qrow * a.ls[2];
        a.lse[off] = l > 0.f ? (row.mrow * a.mult + (__log2f(l) - PA_CDNA_P_LOG2)) * 0.69314718055994531f
                             : l == 0.f ? -INFINITY : NAN;
    }
}

/* The kernel body; pa_cdna_fwd (below) and the hipcc entry points of cdna_fwd.hip wrap it. Scores use
 * DQK head-dim elements; the output is columns C0 .. C0 + DV - 1 of V and O (d256 runs as two
 * launches of DV = 128: Q, 128 accumulators and the operand gathers of one d256 launch need more than
 * 512 registers and spilled, as did d224's 112; the second launch recomputes the scores, 1.5x the
 * FLOPs; d160 and d192 fit one launch). The LSE is written by the C0 = 0 launch. */
template <bool BF16, int DQK, int DV, int C0>
__device__ __forceinline__ void pa_cdna_fwd_body(const pa_fwd_args &a)
{
    static_assert(PA_CDNA_THREADS == PA_CDNA_WAVES * PA_WAVE, "wave64");
    static_assert(DQK % 32 == 0 && DQK <= 256 && DV % 32 == 0 && C0 % 32 == 0 && C0 + DV <= DQK,
                  "instances: O^T in blocks of 32 columns, LDS rows of a multiple of 4 chunks (hip_lds.h)");
    const pa_lds_model lm = {"gfx90a", 32, 4, PA_WAVE, 1}; /* the layout of every CDNA target */
    __shared__ __attribute__((aligned(16))) uint16_t sk_t[PA_CDNA_BN * DQK], sv_t[PA_CDNA_BN * DV];
    PA_WAVE_SCRATCH(PA_CDNA_WAVES);

    const int tid = threadIdx.x, lane = pa_wave_lane(), wave = tid / PA_WAVE;
    int b, h;
    if (!pa_cdna_fwd_pair(a, &b, &h)) return;
    const pa_hip_seq seq = pa_hip_seq_of(a, b, h, C0);

    /* Row blocks of this sequence: a grid sized by a max_seqlen_q below the longest sequence still
     * covers every row (as cuda-sm80). With a right-bounded mask the longest blocks come first. */
    const int nmb = (seq.sq + PA_CDNA_BM - 1) / PA_CDNA_BM;
    for (int t = blockIdx.x; t < nmb; t += gridDim.x) {
        const int m0 = (a.wr >= 0 ? nmb - 1 - t : t) * PA_CDNA_BM;

        /* This lane's query and its visible keys; the block's key tiles (the hull of its rows), those
         * in [full_lo, full_hi) with no mask. */
        const int qrow = m0 + wave * 32 + lane % 32;
        int klo, khi;
        pa_row_keys(qrow, seq.sq, seq.sk, a.wl, a.wr, &klo, &khi);
        const pa_tile_hull hull = pa_tile_hull_of(m0, PA_CDNA_BM, PA_CDNA_BN, seq.sq, seq.sk, a.wl, a.wr);

        pa_in4 qf[DQK / 8];
        const bool ok = qrow < seq.sq;
        pa_cdna_load_q<DQK>(qf, seq.q + (int64_t)(ok ? qrow : 0) * a.qs[1], ok, a.dqk, lane);
        pa_cdna_row<DV> row;
        pa_cdna_row_init(row);

        for (int n = hull.n_lo; n < hull.n_hi; ++n) {
            __syncthreads(); /* the last tile's reads are done */
            pa_cdna_fwd_load_kv<DQK, DV, C0>(a, seq, lm, n, tid, sk_t, sv_t);
            __syncthreads();
            pa_acc32 st;
            pa_cdna_fwd_scores<BF16, DQK>(st, qf, sk_t, lm, lane PA_WAVE_SCRATCH_ARGS);
            const bool boundary = n < hull.full_lo || n >= hull.full_hi; /* some row sees part of the tile */
            pa_in4 pf[4];
            pa_cdna_step<BF16, DV>(row, st, pf, a, boundary, n * PA_CDNA_BN, klo, khi, lane PA_WAVE_SCRATCH_ARGS);
            pa_cdna_fwd_pv<BF16, DV>(row, pf, sv_t, lm, lane PA_WAVE_SCRATCH_ARGS);
        }
        pa_cdna_fwd_finish<BF16, DV, C0>(a, seq, row, b, h, qrow, lane PA_WAVE_SCRATCH_ARGS);
    }
}

/* The nvcc emulation's kernel: one launch of the (DQK, DV, C0) instance. */
template <bool BF16, int DQK, int DV = DQK, int C0 = 0>
__global__ void __launch_bounds__(PA_CDNA_WAVES * PA_WAVE) pa_cdna_fwd(const pa_fwd_args a)
{
    pa_cdna_fwd_body<BF16, DQK, DV, C0>(a);
}

#endif
