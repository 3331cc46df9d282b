/* The RDNA3 forward kernel (gfx1100; wave32, v_wmma_f32_16x16x16_{f16,bf16}), written once for hipcc
 * and for the nvcc/CPU emulation (hip_wave.h holds every wave-level primitive). It mirrors the CDNA
 * kernel (cdna_fwd_kernel.h) on the WMMA shapes; design and state: backends/hip/NOTES.md.
 *
 * A workgroup of 4 wave32s owns 64 query rows of one (batch, head); each wave owns 16 of them in
 * full. The block's Q rows and tiles of K and V go through LDS (hip_lds.h's RDNA3 layout, conflict-free
 * under both a 32- and a 64-bank model by tests/sim/test_hip_lds.c); a tile is 32 keys (two WMMA blocks)
 * up to d128 and 16 over (PA_RDNA3_BN_OF). Per 16-key block each wave computes S^T = K Q^T (16
 * keys x 16 queries): in the f32 accumulator lane l holds query l % 16 and keys 2r + l / 16 (reg r),
 * so the softmax is a per-lane loop plus one xor-16 exchange. K rows (A) are read from LDS, two
 * 16-byte reads per lane and k-step; Q rows (B = Q^T) are read once per row block into registers up
 * to d128 (DQK / 2 VGPRs) and from LDS at every k-step over it; lanes l and l ^ 16 read the same
 * row, the replication WMMA wants in both half-waves. P^T, the B operand of O^T += V^T P^T, is the
 * accumulator rounded to 16 bits plus the partner lane's 8 keys (4 packed exchanges), in the key
 * order of pa_wmma_pv_key; V^T's A operand is gathered in that order, one 2-byte LDS read per key.
 * O^T stays in VGPRs (DV / 2 per lane).
 *
 * Instances at every multiple of 32 up to 256 (rdna3_entries.h) serve every call whose head dims are
 * multiples of 8 up to theirs: Q/K columns past the call's Dqk and V columns past its Dv are never loaded and read as
 * zeros (S and the LSE exact), O's columns past Dv are never stored. Each is one launch.
 *
 * Register budget: gfx1100 is built by clang 17+ (clang-19 here), which gives a wave up to 256 VGPRs
 * (clang-15 stopped at 128: it forced Q re-reads from LDS, 16-key tiles and d256 as four launches).
 * Under clang-19: 119 VGPRs at d32, 169-170 at d64, 242 at d96, 249 at d128, 218-234 at d160-d224,
 * 254 at d256 (O^T alone is 128 there), no spills;
 * tests/isa/isa_gate_hip.sh requires 0 spills and 0 scratch. Per-lane LDS addresses are still recomputed
 * every tile from pa_opaque values rather than hoisted (a clang-15 measure, kept: d128 and d256 sit
 * at the 256-VGPR ceiling).
 *
 * Built for gfx1100 and gated by tests/isa/isa_gate_hip.sh; the same source runs on the CPU under the
 * emulation (the case table through the hip-rdna3 backend against tests/sim/hip_fake, and
 * tests/sim/hip_sim/test_hip_rdna3_sim.cpp). backends/hip/NOTES.md says how far it has been checked. */
#ifndef PORTATTN_RDNA3_FWD_KERNEL_H
#define PORTATTN_RDNA3_FWD_KERNEL_H

#include "fwd_args.h"
#include "rdna3_grid.h"
#include "hip_lds.h"
#include "hip_seq.h"
#include "hip_wave.h"


/* The phases below that use PA_WMMA16 or PA_XOR16 take the wave scratch the kernel body declares
 * (PA_WAVE32_SCRATCH): PA_WAVE32_SCRATCH_PARAMS ends their parameter lists, PA_WAVE32_SCRATCH_ARGS
 * their calls; empty on AMD (as cdna_fwd_kernel.h's PA_WAVE_SCRATCH_PARAMS for wave64). */
#ifndef PA_WAVE32_SCRATCH_ARGS
#ifdef PA_WAVE_EMU
#define PA_WAVE32_SCRATCH_PARAMS                                                                                \
    , [[maybe_unused]] pa_in16(*pa_emu_a16)[PA_WAVE32], [[maybe_unused]] pa_in16(*pa_emu_b16)[PA_WAVE32],       \
        [[maybe_unused]] uint32_t(*pa_emu_x16)[PA_WAVE32]
#define PA_WAVE32_SCRATCH_ARGS , pa_emu_a16, pa_emu_b16, pa_emu_x16
#else
#define PA_WAVE32_SCRATCH_PARAMS
#define PA_WAVE32_SCRATCH_ARGS
#endif
#endif

/* The two bank models the LDS layout serves (the bank count of RDNA3 is unverified: hip_lds.h), made
 * in each phase so that its addresses fold to constants there. */
struct pa_rdna3_lds {
    pa_lds_model lo, hi;
};
__device__ __forceinline__ pa_rdna3_lds pa_rdna3_lds_of()
{
    return {{"gfx1100", 32, 4, PA_WAVE32, 0}, {"gfx1100-64", 64, 4, PA_WAVE32, 0}};
}

/* A lane's online-softmax state: O^T (reg r of block c = head-dim 16c + 2r + lane / 16 of its query),
 * the running max of its query's scores and the running sum of P over the keys this lane holds (lane
 * ^ 16 holds the others). */
template <int DV> struct pa_rdna3_row {
    pa_acc8 o[DV / 16];
    float mrow, lsum;
};

template <int DV> __device__ __forceinline__ void pa_rdna3_row_init(pa_rdna3_row<DV> &row)
{
#pragma unroll
    for (int c = 0; c < DV / 16; ++c)
#pragma unroll
        for (int r = 0; r < 8; ++r) row.o[c].r[r] = 0.f;
    row.mrow = -INFINITY, row.lsum = 0.f;
}

/* Per-lane values of the tile loop, recomputed every tile from an opaque thread index: hoisted out of
 * the loops, clang-15 kept them all live and spilled (see pa_opaque). tt: the thread, tl its lane, tw
 * its wave, th its half-wave. */
struct pa_rdna3_lane {
    unsigned tt;
    int tl, tw, th;
};

__device__ __forceinline__ pa_rdna3_lane pa_rdna3_lane_of(int tid)
{
    pa_rdna3_lane t;
    t.tt = (unsigned)pa_opaque(tid); /* unsigned: no signed-division fix-ups */
    t.tl = (int)(t.tt % PA_WAVE32), t.tw = (int)(t.tt / PA_WAVE32), t.th = t.tl / 16;
    return t;
}

/* Copy passes of a tile of ROWS rows x CH 16-byte chunks over the workgroup's threads. */
template <int CH, int ROWS> constexpr int pa_rdna3_copy_passes = (ROWS * CH + PA_RDNA3_THREADS - 1) / PA_RDNA3_THREADS;

/* Thread tt's row r and chunk c in copy pass p of such a tile: copies numbered row-major,
 * thread-fastest, which is pass p * waves + wave of pa_lds_rdna3_store_addr for its lane (a wave stores
 * whole aligned runs of the swizzled tile). A power-of-two CH divides the threads and keeps the
 * shift-and-mask form; d96/d160/d192/d224 rows (12, 20, 24, 28 chunks) do not and take the division,
 * and a last pass partly past the tile returns false there. */
template <int CH, int ROWS> __device__ __forceinline__ bool pa_rdna3_copy_slot(unsigned tt, int p, int &r, int &c)
{
    constexpr int NT = PA_RDNA3_THREADS;
    if constexpr (NT % CH == 0) {
        r = p * (NT / CH) + (int)(tt / CH), c = (int)(tt % CH);
    } else {
        const unsigned i = (unsigned)p * NT + tt;
        r = (int)(i / CH), c = (int)(i % CH);
    }
    return (ROWS * CH) % NT == 0 || r < ROWS;
}

/* The workgroup's (batch b, head h) from grid y and z; false past the last pair. */
__device__ __forceinline__ bool pa_rdna3_pair(const pa_fwd_args &a, int *b, int *h)
{
    const int64_t nbh = (int64_t)a.batch * a.heads;
    const int64_t bh = blockIdx.y + (int64_t)gridDim.y * blockIdx.z;
    if (bh >= nbh) return false;
    *b = pa_uniform((int)(bh / a.heads)), *h = pa_uniform((int)(bh % a.heads));
    return true;
}

/* The block's Q rows [m0, m0 + BM) into LDS (same layout and store pattern as the K/V tiles): Q^T, the
 * B operand of S^T (at k-step g lanes l and l ^ 16 hold head-dim elements 16g .. 16g + 15 of query
 * l % 16). Rows past the sequence and columns past the call's Dqk read as zeros. */
template <int DQK>
__device__ __forceinline__ void pa_rdna3_load_q(uint16_t *sq_t, const pa_fwd_args &a, const pa_hip_seq &seq, int m0,
                                                int tid)
{
    constexpr int CH = DQK / 8;
    const pa_rdna3_lds m = pa_rdna3_lds_of();
    const unsigned tq = (unsigned)pa_opaque(tid); /* addresses not hoisted out of the row-block loop */
#pragma unroll
    for (int p = 0; p < pa_rdna3_copy_passes<CH, PA_RDNA3_BM>; ++p) {
        int r, c;
        if (!pa_rdna3_copy_slot<CH, PA_RDNA3_BM>(tq, p, r, c)) continue;
        const int row = m0 + r;
        uint4 qv = make_uint4(0, 0, 0, 0);
        if (row < seq.sq && 8 * c < a.dqk) qv = *(const uint4 *)(seq.q + (int64_t)row * a.qs[1] + 8 * c);
        *(uint4 *)((char *)sq_t + pa_lds_rdna3_store_addr(&m.lo, &m.hi, (int)(tq % PA_WAVE32), p * PA_RDNA3_WAVES + (int)(tq / PA_WAVE32), CH)) = qv;
    }
}

/* Q^T in registers where the budget holds it (DQK / 2 VGPRs a lane): the tile loop then reads only K
 * and V from LDS. Over d128 Q is read from LDS: d256's 128 VGPRs of Q beside 64 of O^T spill. */
template <int DQK>
__device__ __forceinline__ void pa_rdna3_q_regs(pa_in16 (&qreg)[DQK / 16], const uint16_t *sq_t, int lane, int wave)
{
    constexpr int CH = DQK / 8;
    const pa_rdna3_lds m = pa_rdna3_lds_of();
    const int wb = pa_lds_wmma_lane_base(&m.lo, &m.hi, lane, CH);
#pragma unroll
    for (int g = 0; g < DQK / 16; ++g) {
        const uint4 q_lo = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * wave, g, 0, CH));
        const uint4 q_hi = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * wave, g, 1, CH));
        __builtin_memcpy(&qreg[g].w[0], &q_lo, 16);
        __builtin_memcpy(&qreg[g].w[4], &q_hi, 16);
    }
}

/* K and V tile n into LDS, 16 bytes a thread a pass; keys past the sequence and columns past the
 * call's head dims read as zeros. */
template <int DQK, int DV, int C0>
__device__ __forceinline__ void pa_rdna3_load_kv(const pa_fwd_args &a, const pa_hip_seq &seq, const pa_rdna3_lane &t,
                                                 int n, uint16_t *sk_t, uint16_t *sv_t)
{
    constexpr int CH = DQK / 8, CHV = DV / 8, BN = PA_RDNA3_BN_OF(DV);
    const pa_rdna3_lds m = pa_rdna3_lds_of();
    const int sk = seq.sk;
    if constexpr (CH == CHV) { /* one pass loop for both */
#pragma unroll
        for (int p = 0; p < pa_rdna3_copy_passes<CH, BN>; ++p) {
            int r, c;
            if (!pa_rdna3_copy_slot<CH, BN>(t.tt, p, r, c)) continue;
            const int key = n * BN + r;
            uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
            if (key < sk) {
                if (8 * c < a.dqk) kv = *(const uint4 *)(seq.k + (int64_t)key * a.ks[1] + 8 * c);
                if (C0 + 8 * c < a.dv) vv = *(const uint4 *)(seq.v + (int64_t)key * a.vs[1] + 8 * c);
            }
            /* (row r, chunk c) is pass p * WAVES + wave of pa_lds_rdna3_store_addr for this lane */
            const int off = pa_lds_rdna3_store_addr(&m.lo, &m.hi, t.tl, p * PA_RDNA3_WAVES + t.tw, CH);
            *(uint4 *)((char *)sk_t + off) = kv;
            *(uint4 *)((char *)sv_t + off) = vv;
        }
    } else {
#pragma unroll
        for (int p = 0; p < pa_rdna3_copy_passes<CH, BN>; ++p) {
            int r, c;
            if (!pa_rdna3_copy_slot<CH, BN>(t.tt, p, r, c)) continue;
            const int key = n * BN + r;
            uint4 kv = make_uint4(0, 0, 0, 0);
            if (key < sk && 8 * c < a.dqk) kv = *(const uint4 *)(seq.k + (int64_t)key * a.ks[1] + 8 * c);
            *(uint4 *)((char *)sk_t + pa_lds_rdna3_store_addr(&m.lo, &m.hi, t.tl, p * PA_RDNA3_WAVES + t.tw, CH)) = kv;
        }
#pragma unroll
        for (int p = 0; p < pa_rdna3_copy_passes<CHV, BN>; ++p) {
            int r, c;
            if (!pa_rdna3_copy_slot<CHV, BN>(t.tt, p, r, c)) continue;
            const int key = n * BN + r;
            uint4 vv = make_uint4(0, 0, 0, 0);
            if (key < sk && C0 + 8 * c < a.dv) vv = *(const uint4 *)(seq.v + (int64_t)key * a.vs[1] + 8 * c);
            *(uint4 *)((char *)sv_t + pa_lds_rdna3_store_addr(&m.lo, &m.hi, t.tl, p * PA_RDNA3_WAVES + t.tw, CHV)) = vv;
        }
    }
}

/* S^T = K Q^T per 16-key block of the tile in LDS; reg r of st[j] is key 16j + 2r + lane / 16 of the
 * tile. K rows (A) are two 16-byte LDS reads per lane and k-step; Q^T (B) comes from qreg (QREG) or
 * from LDS at every k-step. */
template <bool BF16, int DQK, int KB, bool QREG>
__device__ __forceinline__ void pa_rdna3_scores(pa_acc8 (&st)[KB], const pa_in16 (&qreg)[QREG ? DQK / 16 : 1],
                                                const uint16_t *sq_t, const uint16_t *sk_t,
                                                const pa_rdna3_lane &t PA_WAVE32_SCRATCH_PARAMS)
{
    constexpr int CH = DQK / 8;
    const pa_rdna3_lds m = pa_rdna3_lds_of();
    const int wb = pa_lds_wmma_lane_base(&m.lo, &m.hi, t.tl, CH);
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
                const uint4 q_lo = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * t.tw, g, 0, CH));
                const uint4 q_hi = *(const uint4 *)((const char *)sq_t + pa_lds_wmma_addr_from(wb, 16 * t.tw, g, 1, CH));
                pa_in16 qb;
                __builtin_memcpy(&qb.w[0], &q_lo, 16);
                __builtin_memcpy(&qb.w[4], &q_hi, 16);
                PA_WMMA16(BF16, st[j], ka, qb);
            }
        }
    }
}

/* One key tile's step from its scores S^T: the score map (softcap, or a negative scale when the host
 * set transform), the mask of keys outside [klo, khi] on a boundary tile (key0: the tile's first key
 * plus the lane's half-wave), the online softmax in base 2 (max over the lane and its partner lane ^
 * 16) and P^T per block: this lane's 8 probabilities (16-bit, packed in pairs) and its partner's;
 * items 0-7 are the even keys (half-wave 0's), 8-15 the odd ones (pa_wmma_pv_key). O^T is rescaled
 * unconditionally: the CDNA kernel's wave vote avoids moving AGPRs, and RDNA3 keeps O^T in VGPRs. */
template <bool BF16, int DV, int KB>
__device__ __forceinline__ void pa_rdna3_step(pa_rdna3_row<DV> &row, pa_acc8 (&st)[KB], pa_in16 (&pb)[KB],
                                              const pa_fwd_args &a, bool boundary, int key0, int klo, int khi,
                                              int th PA_WAVE32_SCRATCH_PARAMS)
{
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
    if (boundary) {
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
    const float mnew = fmaxf(row.mrow, mx), base = mnew == -INFINITY ? 0.f : mnew * a.mult;
    const float corr = pa_exp2(row.mrow * a.mult - base);
    row.mrow = mnew;
    row.lsum *= corr;
#pragma unroll
    for (int j = 0; j < KB; ++j) {
        uint32_t own[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float p0 = pa_exp2(fmaf(st[j].r[2 * i], a.mult, -base));
            const float p1 = pa_exp2(fmaf(st[j].r[2 * i + 1], a.mult, -base));
            row.lsum += p0 + p1;
            own[i] = pa_pack2<BF16>(p0, p1);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const uint32_t par = PA_XOR16(own[i]);
            pb[j].w[i] = th ? par : own[i];     /* even keys 4i, 4i + 2 */
            pb[j].w[4 + i] = th ? own[i] : par; /* odd keys 4i + 1, 4i + 3 */
        }
    }
#pragma unroll
    for (int c = 0; c < DV / 16; ++c)
#pragma unroll
        for (int r = 0; r < 8; ++r) row.o[c].r[r] *= corr;
}

/* O^T += V^T P^T: lane l (and l ^ 16) gathers head-dim 16c + l % 16 of the block's keys, one 2-byte
 * LDS read per key in pa_wmma_pv_key's order. */
template <bool BF16, int DV, int KB>
__device__ __forceinline__ void pa_rdna3_pv(pa_rdna3_row<DV> &row, const pa_in16 (&pb)[KB], const uint16_t *sv_t,
                                            int tl PA_WAVE32_SCRATCH_PARAMS)
{
    constexpr int CHV = DV / 8;
    const pa_rdna3_lds m = pa_rdna3_lds_of();
    const int v_up = pa_lds_wmma_v_lane_addr(tl, 0), v_dn = pa_lds_wmma_v_lane_addr(tl, 1);
#pragma unroll
    for (int j = 0; j < KB; ++j)
#pragma unroll
        for (int c = 0; c < DV / 16; ++c) {
            pa_in16 va;
#pragma unroll
            for (int p = 0; p < 16; ++p) { /* = pa_lds_wmma_v_half_addr, split (see hip_lds.h) */
                const int ka = pa_lds_wmma_v_key_addr(&m.lo, &m.hi, 16 * j + pa_wmma_pv_key(p), 16 * c, CHV);
                const uint32_t v = *(const uint16_t *)((const char *)sv_t + ka + (pa_lds_wmma_v_x_odd(ka) ? v_dn : v_up));
                va.w[p / 2] = p % 2 ? va.w[p / 2] | v << 16 : v;
            }
            PA_WMMA16(BF16, row.o[c], va, pb[j]);
        }
}

/* Epilogue of the lane's query row qrow: the two half-waves' row sums, one normalisation. Reg r of O^T
 * block c is head-dim 16c + 2r + lane / 16; after 4 exchanges per block lane half 0 holds dims 16c ..
 * 16c + 7 and half 1 dims 16c + 8 .. 16c + 15 of the query, written as one 16-byte store (none past
 * Dv; the exchanges still run in every lane). The LSE is written by the C0 = 0 launch. */
template <bool BF16, int DV, int C0>
__device__ __forceinline__ void pa_rdna3_finish(const pa_fwd_args &a, const pa_hip_seq &seq,
                                                const pa_rdna3_row<DV> &row, int b, int h, int qrow,
                                                int hl PA_WAVE32_SCRATCH_PARAMS)
{
    const int sq = seq.sq;
    const float l = row.lsum + __uint_as_float(PA_XOR16(__float_as_uint(row.lsum)));
    const float inv = l > 0.f ? 1.f / l : 0.f;
    uint16_t *orow = seq.o + (int64_t)(qrow < sq ? qrow : 0) * a.os[1];
#pragma unroll
    for (int c = 0; c < DV / 16; ++c) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float mine = (hl ? row.o[c].r[4 + i] : row.o[c].r[i]) * inv; /* dim 16c + 8 hl + 2i + hl */
            const float give = (hl ? row.o[c].r[i] : row.o[c].r[4 + i]) * inv; /* dim 16c + 8 (1 - hl) + 2i + hl */
            const float got = __uint_as_float(PA_XOR16(__float_as_uint(give))); /* dim 16c + 8 hl + 2i + 1 - hl */
            w[i] = l == 0.f ? 0u : hl ? pa_pack2<BF16>(got, mine) : pa_pack2<BF16>(mine, got);
        }
        if (qrow < sq && C0 + 16 * c + 8 * hl < a.dv) *(uint4 *)(orow + 16 * c + 8 * hl) = make_uint4(w[0], w[1], w[2], w[3]);
    }
    if (qrow < sq) {
        if (C0 == 0 && a.lse && hl == 0) {
            const int64_t off = a.cu_q ? h * a.ls[1] + (int64_t)(seq.q0 + qrow) * a.ls[2]
                                       : b * a.ls[0] + h * a.ls[1] + (int64_t)qrow * a.ls[2];
            a.lse[off] = l > 0.f ? (row.mrow * a.mult + __log2f(l)) * 0.69314718055994531f : l == 0.f ? -INFINITY : NAN;
        }
    }
}

/* The kernel body; pa_rdna3_fwd (below) and the hipcc entry points of rdna3_fwd.hip wrap it. Scores
 * use DQK head-dim elements; the output is columns C0 .. C0 + DV - 1 of V and O (every instance of
 * rdna3_entries.h has C0 = 0 and DV = DQK; the parameters stay for an A/B of split launches). The LSE
 * is written by the C0 = 0 launch. */
template <bool BF16, int DQK, int DV, int C0>
__device__ __forceinline__ void pa_rdna3_fwd_body(const pa_fwd_args &a)
{
    constexpr int BN = PA_RDNA3_BN_OF(DV), KB = BN / 16;
    constexpr bool QREG = DQK <= 128; /* Q^T held in VGPRs for the tile loop (pa_rdna3_q_regs) */
    static_assert(PA_RDNA3_THREADS == PA_RDNA3_WAVES * PA_WAVE32, "wave32");
    static_assert(DQK % 32 == 0 && DQK <= 256 && DV % 32 == 0 && C0 % 16 == 0 && C0 + DV <= DQK,
                  "instances: WMMA k-steps and O^T blocks of 16, LDS rows of a multiple of 4 chunks (hip_lds.h)");
    __shared__ __attribute__((aligned(16))) uint16_t sq_t[PA_RDNA3_BM * DQK], sk_t[BN * DQK], sv_t[BN * DV];
    PA_WAVE32_SCRATCH(PA_RDNA3_WAVES);

    const int tid = threadIdx.x, lane = tid % PA_WAVE32, wave = tid / PA_WAVE32, hl = lane / 16;
    int b, h;
    if (!pa_rdna3_pair(a, &b, &h)) return;
    const pa_hip_seq seq = pa_hip_seq_of(a, b, h, C0);

    /* Row blocks of this sequence (a grid sized by a short max_seqlen_q still covers every row);
     * with a right-bounded mask the longest blocks come first. */
    const int nmb = (seq.sq + PA_RDNA3_BM - 1) / PA_RDNA3_BM;
    for (int t = blockIdx.x; t < nmb; t += gridDim.x) {
        const int m0 = (a.wr >= 0 ? nmb - 1 - t : t) * PA_RDNA3_BM;

        /* This lane's query and its visible keys; the block's key tiles (the hull of its rows), those
         * in [full_lo, full_hi) with no mask. */
        const int qrow = m0 + wave * 16 + lane % 16;
        int klo, khi;
        pa_row_keys(qrow, seq.sq, seq.sk, a.wl, a.wr, &klo, &khi);
        const pa_tile_hull hull = pa_tile_hull_of(m0, PA_RDNA3_BM, BN, seq.sq, seq.sk, a.wl, a.wr);

        __syncthreads(); /* the previous row block's waves are done with sq_t */
        pa_rdna3_load_q<DQK>(sq_t, a, seq, m0, tid);
        pa_in16 qreg[QREG ? DQK / 16 : 1];
        if constexpr (QREG) {
            __syncthreads(); /* every wave's Q rows are in LDS */
            pa_rdna3_q_regs<DQK>(qreg, sq_t, lane, wave);
        }
        pa_rdna3_row<DV> row;
        pa_rdna3_row_init(row);

        for (int n = hull.n_lo; n < hull.n_hi; ++n) {
            const pa_rdna3_lane tl = pa_rdna3_lane_of(tid);
            __syncthreads(); /* the last tile's reads are done */
            pa_rdna3_load_kv<DQK, DV, C0>(a, seq, tl, n, sk_t, sv_t);
            __syncthreads();
            pa_acc8 st[KB];
            pa_rdna3_scores<BF16, DQK, KB, QREG>(st, qreg, sq_t, sk_t, tl PA_WAVE32_SCRATCH_ARGS);
            const bool boundary = n < hull.full_lo || n >= hull.full_hi; /* some row sees part of the tile */
            pa_in16 pb[KB];
            pa_rdna3_step<BF16, DV, KB>(row, st, pb, a, boundary, n * BN + tl.th, klo, khi, tl.th PA_WAVE32_SCRATCH_ARGS);
            pa_rdna3_pv<BF16, DV, KB>(row, pb, sv_t, tl.tl PA_WAVE32_SCRATCH_ARGS);
        }
        pa_rdna3_finish<BF16, DV, C0>(a, seq, row, b, h, qrow, hl PA_WAVE32_SCRATCH_ARGS);
    }
}

template <bool BF16, int DQK, int DV = DQK, int C0 = 0>
__global__ void __launch_bounds__(PA_RDNA3_THREADS) pa_rdna3_fwd(const pa_fwd_args a)
{
    pa_rdna3_fwd_body<BF16, DQK, DV, C0>(a);
}

#endif
