/* The cuda-sm80 backward's main kernel (FlashAttention-2 structure), included by one .cu per head dim.
 *
 * A CTA owns BN = 128 keys of one (batch, KV head): their K and V stay in shared memory while the
 * Q and dO blocks (BM = 64 rows) of every query head of the group stream through two buffers, each
 * landing by cp.async while the previous block is computed. Each of the 8 warps owns 16 of the keys
 * and works in the transposed frame, keys as MMA rows, so that its dK and dV rows accumulate in its
 * registers across every block:
 *   S^T  = K Q^T               (A: K rows by ldmatrix, B: Q rows by ldmatrix)
 *   P^T  = 2^(S^T * log2e * scale - LSE_2)  with the mask; also packed to 16 bits for the next MMA
 *   dV  += P^T dO              (A: P^T from registers, B: dO by ldmatrix.trans)
 *   dP^T = V dO^T              (A: V rows, B: dO rows)
 *   dS^T = P^T (dP^T - D)      (times 1 - tanh^2 under softcap), rounded to 16 bits
 *   dK  += dS^T Q              (A: dS^T from registers, B: Q by ldmatrix.trans)
 * dS^T goes to shared memory, and after a barrier the warps compute dQ = dS K for the block (warps
 * as 4 row groups x 2 column halves, dS by ldmatrix.trans of dS^T) and add it to the fp32 dQ sums:
 * atomically, or in deterministic mode with plain adds into a slice the CTA alone writes (it then
 * visits the key blocks of its slice one after another, so every sum has a fixed order).
 * The accumulator fragment of an MMA, rounded to 16 bits, is the A fragment of the next one (as in
 * the forward), so P^T and dS^T never pass through shared memory for dV and dK. */
#ifndef PORTATTN_SM80_BWD_KERNEL_CUH
#define PORTATTN_SM80_BWD_KERNEL_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "sm80_attr.cuh"
#include "sm80_bwd.h"
#include "sm80_ptx.cuh"

/* sm80_swz's byte offset, written so that the chunk's bits above the swizzle (which the XOR with
 * row & 7 leaves alone) stay a compile-time offset: an unrolled loop then needs one address
 * register per distinct low part, not one per chunk. */
template <int PITCH>
__device__ __forceinline__ uint32_t sm80b_swz(int row, int ch)
{
    return (uint32_t)(row * PITCH * 16 + ((ch & ~7) << 4) + (((ch ^ row) & 7) << 4));
}

/* 16-byte chunks of a D-wide row, and of its shared memory row: padded to a multiple of 8 for the
 * swizzle (d96: 12 of 16; the pad chunks are never written or read). */
template <int D>
struct sm80b_row_shape {
    static constexpr int CH = D / 8, PITCH = (CH + 7) / 8 * 8;
};

/* ROWS x D tile from rows [row0, row0 + ROWS) of a tensor into shared memory, zeros from row `limit`
 * on. Each thread copies one 16-byte column chunk of every RS-th row (RS a multiple of 8, so its
 * swizzled column is the same on every pass); the threads of pad chunks idle. */
template <typename T, int ROWS, int D, int NT>
__device__ __forceinline__ void sm80b_load(uint32_t sdst, const T *g, int64_t rstride, int row0, int limit, int tid)
{
    constexpr int CH = sm80b_row_shape<D>::CH, PITCH = sm80b_row_shape<D>::PITCH, RS = NT / PITCH;
    static_assert(NT % PITCH == 0 && RS % 8 == 0 && ROWS % RS == 0, "load shape");
    const int r = tid / PITCH, c = tid % PITCH;
    if (CH != PITCH && c >= CH) return;
    const T *src = g + (int64_t)(row0 + r) * rstride + c * 8;
    const uint32_t dst = sdst + sm80b_swz<PITCH>(r, c);
#pragma unroll
    for (int k = 0; k < ROWS / RS; ++k) {
        const bool ok = row0 + r + k * RS < limit;
        sm80_cp_async16(dst + k * RS * PITCH * 16, ok ? src : g, ok);
        src += RS * rstride;
    }
}

/* Packed sequence b of a varlen call, clamped into [0, total] so that garbage offsets in device
 * memory stay inside the tensors. */
__device__ __forceinline__ void sm80b_seq(const int32_t *cu, int b, int total, int *start, int *len)
{
    int s = cu[b], e = cu[b + 1];
    s = s < 0 ? 0 : (s > total ? total : s);
    e = e < s ? s : (e > total ? total : e);
    *start = s;
    *len = e - s;
}

/* One sequence of the call: where its rows start, how many, and its batch offsets of each tensor. */
struct sm80b_seqinfo {
    int q0, sq, k0, sk;
};

__device__ __forceinline__ sm80b_seqinfo sm80b_seq_of(const sm80_bwd_args &a, int b)
{
    sm80b_seqinfo s = {0, a.f.seqlen_q, 0, a.f.seqlen_k};
    if (a.f.cu_q) {
        sm80b_seq(a.f.cu_q, b, a.f.seqlen_q, &s.q0, &s.sq);
        sm80b_seq(a.f.cu_k, b, a.f.seqlen_k, &s.k0, &s.sk);
    }
    if (s.sq > a.max_sq) s.sq = a.max_sq; /* the workspace holds max_sq rows per (batch, head) */
    return s;
}

/* Element offset of packed row `row` of sequence b (varlen: the batch stride is ignored). Strides by
 * value: a pointer into the kernel's parameter struct would make the compiler copy it to local memory. */
__device__ __forceinline__ int64_t sm80b_row(const sm80_bwd_args &a, int64_t bstride, int64_t rstride, int b, int row)
{
    return (a.f.cu_q ? 0 : (int64_t)b * bstride) + (int64_t)row * rstride;
}

/* Row index, in the workspace, of row 0 of (slice, batch, query head). */
__device__ __forceinline__ int64_t sm80b_ws_row(const sm80_bwd_args &a, int slice, int b, int h)
{
    return (((int64_t)slice * a.f.batch + b) * a.f.heads + h) * a.sqp;
}

/* acc = X Y^T for the warp's 16 rows of X (from row x0 of shared tile xt) and NQ * 8 rows of Y (from
 * row y0 of yt), both D wide: S^T = K Q^T and dP^T = V dO^T. X gives the A fragments, Y (row-major
 * [n][k]) the B fragments, both by plain ldmatrix. acc[j] is columns 8 j.. of the product. */
template <typename T, int D, int NQ>
__device__ __forceinline__ void sm80b_xyt(float (&acc)[NQ][4], uint32_t xt, int x0, uint32_t yt, int y0, int lane)
{
    constexpr int PITCH = sm80b_row_shape<D>::PITCH;
#pragma unroll
    for (int j = 0; j < NQ; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll 4 /* d128 fully unrolled: ptxas hoists enough addresses to spill next to dK/dV */
    for (int kc = 0; kc < D / 16; ++kc) {
        uint32_t af[4];
        sm80_ldsm_x4(af, xt + sm80b_swz<PITCH>(x0 + (lane & 15), kc * 2 + (lane >> 4)));
#pragma unroll
        for (int j = 0; j < NQ / 2; ++j) {
            uint32_t bf[4];
            sm80_ldsm_x4(bf, yt + sm80b_swz<PITCH>(y0 + j * 16 + ((lane >> 4) << 3) + (lane & 7),
                                                   kc * 2 + ((lane >> 3) & 1)));
            sm80_mma(acc[2 * j], af, bf[0], bf[1], T());
            sm80_mma(acc[2 * j + 1], af, bf[2], bf[3], T());
        }
    }
}

/* acc += A Z for A the warp's 16 x (KQ * 16) register fragments (P^T or dS^T, k = rows of Z) and Z
 * the KQ * 16 rows of shared tile zt from row z0, D wide: dV += P^T dO and dK += dS^T Q. Z is
 * row-major [k][n], so ldmatrix.trans gives its B fragments. */
template <typename T, int D, int KQ>
__device__ __forceinline__ void sm80b_az(float (&acc)[D / 8][4], const uint32_t (&af)[KQ][4], uint32_t zt, int z0,
                                         int lane)
{
    constexpr int PITCH = sm80b_row_shape<D>::PITCH;
#pragma unroll
    for (int kq = 0; kq < KQ; ++kq)
#pragma unroll
        for (int jd = 0; jd < D / 16; ++jd) {
            uint32_t bf[4];
            sm80_ldsm_x4_trans(bf, zt + sm80b_swz<PITCH>(z0 + kq * 16 + (((lane >> 3) & 1) << 3) + (lane & 7),
                                                         jd * 2 + (lane >> 4)));
            sm80_mma(acc[2 * jd], af[kq], bf[0], bf[1], T());
            sm80_mma(acc[2 * jd + 1], af[kq], bf[2], bf[3], T());
        }
}

template <typename T, int D>
__global__ void __launch_bounds__(PA_SM80_BWD_WARPS * 32, 1) sm80_bwd_main(const sm80_bwd_args a)
{
    constexpr int BM = PA_SM80_BWD_BM, BN = PA_SM80_BWD_BN, NW = PA_SM80_BWD_WARPS, NT = NW * 32;
    constexpr int PITCH = sm80b_row_shape<D>::PITCH;          /* 16-byte chunks per shared row */
    constexpr int QH = BM / 2, NQ = QH / 8, ND = D / 8; /* half-block rows; 8-wide tiles of S^T, of dK/dV */
    constexpr int WQM = BM / 16, WQN = NW / WQM, DQC = D / WQN; /* the dQ warp grid: rows x dims */
    constexpr int DQP = DQC <= 48 ? DQC : 32;                    /* dQ dims per pass */
    constexpr int KVB = BN * PITCH * 16, QB = BM * PITCH * 16, SB = BN * BM * 2;
    static_assert(BN == 16 * NW && BM * 2 == 128 && WQM * WQN == NW && DQC % DQP == 0 && DQP % 16 == 0 && D % 16 == 0,
                  "shape");
    static_assert(2 * KVB + 4 * QB + SB + 4 * BM * 4 == PA_SM80_BWD_SMEM(D), "smem size");

    constexpr int O_DS = 2 * KVB + 4 * QB, O_L = O_DS + SB; /* byte offsets of dS^T and of LSE_2 / D */

    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t s_k = sm80_smem_u32(smem), s_v = s_k + KVB, s_q = s_v + KVB, s_do = s_q + 2 * QB;
    const uint32_t s_ds = s_k + O_DS;
    float *const s_lse = (float *)(smem + O_L); /* [2][BM], then D: [2][BM] */
    float *const s_del = s_lse + 2 * BM;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const T tag = T();
    const pa_fwd_args &f = a.f;

    const int b = blockIdx.z, hk = blockIdx.y, slice = a.deterministic ? (int)blockIdx.x : 0;
    const sm80b_seqinfo sq_ = sm80b_seq_of(a, b);
    const int sq = sq_.sq, sk = sq_.sk;
    const T *qb = (const T *)f.q + sm80b_row(a, f.qs[0], f.qs[1], b, sq_.q0);
    const T *dob = (const T *)a.dout + sm80b_row(a, a.dos[0], a.dos[1], b, sq_.q0);

    /* Key j is visible to row i iff dlo <= j - i <= dhi (bottom-right aligned), j < sk and i < sq;
     * dlo/dhi clamped to the range j - i can take, so that they fit in int32. */
    const int64_t diag = (int64_t)sk - sq, span = (int64_t)sk + sq + 1;
    const int64_t dl = f.wl < 0 ? -span : diag - f.wl, dh = f.wr < 0 ? span : diag + f.wr;
    const int dlo = (int)(dl < -span ? -span : dl), dhi = (int)(dh > span ? span : dh);
    const int kw = warp * 16; /* the warp's keys within the block */

    const int nkb = (sk + BN - 1) / BN;
    for (int n = blockIdx.x; n < nkb; n += gridDim.x) {
        const int n0 = n * BN, n1 = (n0 + BN < sk ? n0 + BN : sk) - 1;
        /* Query rows that see a key of [n0, n1]: hi(i) >= n0 and lo(i) <= n1. */
        int64_t ilo = 0, ihi = (int64_t)sq - 1;
        if (f.wr >= 0 && n0 - diag - f.wr > ilo) ilo = n0 - diag - f.wr;
        if (f.wl >= 0 && n1 + f.wl - diag < ihi) ihi = n1 + f.wl - diag;
        const int mb0 = ilo <= ihi ? (int)(ilo / BM) : 0, nm = ilo <= ihi ? (int)(ihi / BM) - mb0 + 1 : 0;
        const int nit = nm * f.group; /* (query head, row block) items, head major */

        /* Item `it`: Q, dO and the rows' LSE_2 and D into buffer `buf`. */
        auto load_item = [&](int it, int buf) {
            const int h = hk * f.group + it / nm, m0 = (mb0 + it % nm) * BM;
            sm80b_load<T, BM, D, NT>(s_q + buf * QB, qb + (int64_t)h * f.qs[2], f.qs[1], m0, sq, tid);
            sm80b_load<T, BM, D, NT>(s_do + buf * QB, dob + (int64_t)h * a.dos[2], a.dos[1], m0, sq, tid);
            if (tid < BM / 2) { /* 16-byte pieces: BM / 4 of LSE_2, BM / 4 of D */
                const int part = tid / (BM / 4), c = tid % (BM / 4);
                const float *src = (part ? a.delta : a.lse2) + sm80b_ws_row(a, 0, b, h) + m0 + c * 4;
                sm80_cp_async16(sm80_smem_u32((part ? s_del : s_lse) + buf * BM + c * 4), src, true);
            }
        };

        __syncthreads(); /* every warp is done with the previous key block's tiles */
        if (nit > 0) { /* K/V and dK/dV addresses are formed where used: fewer registers live in the loop */
            const T *kh = (const T *)f.k + sm80b_row(a, f.ks[0], f.ks[1], b, sq_.k0) + (int64_t)hk * f.ks[2];
            const T *vh = (const T *)f.v + sm80b_row(a, f.vs[0], f.vs[1], b, sq_.k0) + (int64_t)hk * f.vs[2];
            sm80b_load<T, BN, D, NT>(s_k, kh, f.ks[1], n0, sk, tid);
            sm80b_load<T, BN, D, NT>(s_v, vh, f.vs[1], n0, sk, tid);
            load_item(0, 0);
        }
        sm80_cp_async_commit();

        float dk[ND][4], dv[ND][4];
#pragma unroll
        for (int j = 0; j < ND; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) dk[j][e] = dv[j][e] = 0.f;

        for (int it = 0; it < nit; ++it) {
            const int buf = it & 1, m0 = (mb0 + it % nm) * BM;
            sm80_cp_async_wait<0>(); /* this item's tiles (and K, V) landed for this thread */
            __syncthreads();         /* ... for all; every warp is done with the previous item's dQ */
            if (it + 1 < nit) load_item(it + 1, buf ^ 1); /* its buffer was last read before the previous barrier */
            sm80_cp_async_commit();
            const uint32_t tq = s_q + buf * QB, tdo = s_do + buf * QB;
            const float *lse = s_lse + buf * BM, *del = s_del + buf * BM;

            /* The BM rows in two halves of QH, so that S^T, dP^T and their 16-bit forms of one half
             * are live at a time next to the dK/dV accumulators (the K and V fragments are read twice). */
            const bool full = m0 + BM <= sq && n0 + BN <= sk && (int64_t)n0 - (m0 + BM - 1) >= dlo &&
                              (int64_t)n0 + BN - 1 - m0 <= dhi;
#pragma unroll 1
            for (int hf = 0; hf < BM / QH; ++hf) {
                const int r0 = hf * QH; /* the half's first row within the block */

                /* S^T = K Q^T for the warp's 16 keys x QH rows. */
                float p[NQ][4];
                sm80b_xyt<T, D>(p, s_k, kw, tq, r0, lane);

                /* P^T in place (fp32), and packed to 16 bits as the A fragments of dV += P^T dO.
                 * Element (j, e): key n0 + kw + g + 8 (e >> 1), row m0 + r0 + 8 j + 2 t + (e & 1).
                 * Under softcap the score's derivative 1 - tanh^2 is folded into the fp32 P^T after
                 * packing (dS needs it, dV not). */
                uint32_t pp[NQ / 2][4];
#pragma unroll
                for (int j = 0; j < NQ; ++j) {
                    const float2 l2 = *(const float2 *)(lse + r0 + j * 8 + 2 * t);
                    float fac[4] = {1.f, 1.f, 1.f, 1.f};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float x = p[j][e], lrow = (e & 1) ? l2.y : l2.x;
                        float pe;
                        if (f.transform) {
                            float z = x * f.pre_mul;
                            if (f.softcap) {
                                const float th = tanhf(z);
                                z = f.post_mul * th;
                                fac[e] = 1.f - th * th;
                            }
                            pe = sm80_ex2(z - lrow);
                        } else {
                            pe = sm80_ex2(fmaf(x, f.mult, -lrow));
                        }
                        if (!full) {
                            const int key = n0 + kw + g + 8 * (e >> 1), row = m0 + r0 + j * 8 + 2 * t + (e & 1);
                            const int diff = key - row;
                            if (diff < dlo || diff > dhi || key >= sk || row >= sq) pe = 0.f;
                        }
                        p[j][e] = pe;
                    }
                    pp[j >> 1][(j & 1) * 2 + 0] = sm80_pack(p[j][0], p[j][1], tag);
                    pp[j >> 1][(j & 1) * 2 + 1] = sm80_pack(p[j][2], p[j][3], tag);
#pragma unroll
                    for (int e = 0; e < 4; ++e) p[j][e] *= fac[e];
                }

                sm80b_az<T, D>(dv, pp, tdo, r0, lane); /* dV += P^T dO */

                float dp[NQ][4]; /* dP^T = V dO^T, laid out as S^T */
                sm80b_xyt<T, D>(dp, s_v, kw, tdo, r0, lane);

                /* dS^T = P^T (dP^T - D), 16 bits: the A fragments of dK += dS^T Q, and shared memory
                 * for dQ (row key, column query: 128-byte rows, swizzled). */
                uint32_t ps[NQ / 2][4];
#pragma unroll
                for (int j = 0; j < NQ; ++j) {
                    const float2 d2 = *(const float2 *)(del + r0 + j * 8 + 2 * t);
                    const uint32_t lo = sm80_pack(p[j][0] * (dp[j][0] - d2.x), p[j][1] * (dp[j][1] - d2.y), tag);
                    const uint32_t hi = sm80_pack(p[j][2] * (dp[j][2] - d2.x), p[j][3] * (dp[j][3] - d2.y), tag);
                    ps[j >> 1][(j & 1) * 2 + 0] = lo;
                    ps[j >> 1][(j & 1) * 2 + 1] = hi;
                    *(uint32_t *)(smem + O_DS + sm80b_swz<8>(kw + g, r0 / 8 + j) + t * 4) = lo;
                    *(uint32_t *)(smem + O_DS + sm80b_swz<8>(kw + g + 8, r0 / 8 + j) + t * 4) = hi;
                }

                sm80b_az<T, D>(dk, ps, tq, r0, lane); /* dK += dS^T Q */
            }
            __syncthreads(); /* dS^T of every warp is in shared memory */

            /* dQ (BM x D) += dS K: warp (wm, wn) takes rows 16 wm.. and dims DQC wn.., in passes of
             * DQP dims (fewer accumulators live next to dK/dV); dS = (dS^T)^T by ldmatrix.trans
             * (matrix i: keys 8 (i >> 1).., rows 8 (i & 1)..), K by ldmatrix.trans. Rows past sq land
             * in the (b, h) slot's padding rows, never read back. */
            const int wm = warp % WQM, wn = warp / WQM, h = hk * f.group + it / nm;
            float *const dst = a.dq_acc + (sm80b_ws_row(a, slice, b, h) + m0 + wm * 16 + g) * D + 2 * t;
#pragma unroll 1
            for (int c0 = wn * DQC; c0 < (wn + 1) * DQC; c0 += DQP) {
                float acc[DQP / 8][4];
#pragma unroll
                for (int j = 0; j < DQP / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll
                for (int kk = 0; kk < BN / 16; ++kk) {
                    uint32_t af[4];
                    sm80_ldsm_x4_trans(af, s_ds + sm80b_swz<8>(kk * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                               wm * 2 + ((lane >> 3) & 1)));
#pragma unroll
                    for (int jd = 0; jd < DQP / 16; ++jd) {
                        uint32_t bf[4];
                        sm80_ldsm_x4_trans(bf, s_k + sm80b_swz<PITCH>(kk * 16 + (((lane >> 3) & 1) << 3) + (lane & 7),
                                                                   c0 / 8 + jd * 2 + (lane >> 4)));
                        sm80_mma(acc[2 * jd], af, bf[0], bf[1], tag);
                        sm80_mma(acc[2 * jd + 1], af, bf[2], bf[3], tag);
                    }
                }
#pragma unroll
                for (int j = 0; j < DQP / 8; ++j)
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        float *d = dst + r * 8 * D + c0 + j * 8; /* columns 2 t and 2 t + 1: 8-byte aligned */
                        const float x = acc[j][2 * r], y = acc[j][2 * r + 1];
                        if (a.deterministic) { /* this CTA alone writes its slice, this thread alone these */
                            d[0] += x;
                            d[1] += y;
                        } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                            atomicAdd((float2 *)d, make_float2(x, y)); /* one vector reduction on sm_90 */
#else
                            atomicAdd(d, x);
                            atomicAdd(d + 1, y);
#endif
                        }
                    }
            }
        }

        /* dK (times the scale) and dV of the warp's keys: element (j, e) is key n0 + kw + g + 8 (e >> 1),
         * dim 8 j + 2 t + (e & 1). Keys no row sees get 0. */
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int key = n0 + kw + g + 8 * r;
            if (key >= sk) continue;
            T *dkr = (T *)a.dk + sm80b_row(a, a.dks[0], a.dks[1], b, sq_.k0 + key) + (int64_t)hk * a.dks[2] + 2 * t;
            T *dvr = (T *)a.dv + sm80b_row(a, a.dvs[0], a.dvs[1], b, sq_.k0 + key) + (int64_t)hk * a.dvs[2] + 2 * t;
#pragma unroll
            for (int j = 0; j < ND; ++j) {
                *(uint32_t *)(dkr + j * 8) = sm80_pack(dk[j][2 * r] * a.scale, dk[j][2 * r + 1] * a.scale, tag);
                *(uint32_t *)(dvr + j * 8) = sm80_pack(dv[j][2 * r], dv[j][2 * r + 1], tag);
            }
        }
    }
}

#endif
