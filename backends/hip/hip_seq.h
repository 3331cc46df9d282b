/* The per-(batch, head) prologue both HIP kernels share (cdna_fwd_kernel.h, rdna3_fwd_kernel.h):
 * the sequence's extent (packed varlen offsets clamped into the buffers), the base pointers of its
 * Q, K, V and O rows, and the keys a query row may see. */
#ifndef PORTATTN_HIP_SEQ_H
#define PORTATTN_HIP_SEQ_H

#include "fwd_args.h"
#include "hip_wave.h"

/* Keys [lo, hi] that query row i may see (bottom-right masks); lo > hi = none. */
__device__ __forceinline__ void pa_hip_keys(int i, int sq, int sk, int wl, int wr, int *lo, int *hi)
{
    const int64_t diag = (int64_t)i + sk - sq;
    int64_t l = wl < 0 ? 0 : diag - wl, h = wr < 0 ? (int64_t)sk - 1 : diag + wr;
    l = l < 0 ? 0 : (l > sk ? sk : l);
    h = h > sk - 1 ? sk - 1 : (h < -1 ? -1 : h);
    *lo = (int)l, *hi = (int)h;
}

/* Sequence b, head h: q0 its first packed query token (0 without varlen), sq/sk its lengths, and
 * the row-0 pointers of Q and K, and of V and O from column c0 on. */
typedef struct pa_hip_seq {
    int q0, sq, sk;
    const uint16_t *q, *k, *v;
    uint16_t *o;
} pa_hip_seq;

__device__ __forceinline__ pa_hip_seq pa_hip_seq_of(const pa_fwd_args &a, int b, int h, int c0)
{
    pa_hip_seq s;
    int q0 = 0, k0 = 0;
    s.sq = a.seqlen_q, s.sk = a.seqlen_k;
    if (a.cu_q) { /* packed sequences; garbage offsets are clamped into the buffer */
        int lo = a.cu_q[b], e = a.cu_q[b + 1];
        lo = lo < 0 ? 0 : (lo > a.seqlen_q ? a.seqlen_q : lo), e = e < lo ? lo : (e > a.seqlen_q ? a.seqlen_q : e);
        q0 = lo, s.sq = e - lo;
        lo = a.cu_k[b], e = a.cu_k[b + 1];
        lo = lo < 0 ? 0 : (lo > a.seqlen_k ? a.seqlen_k : lo), e = e < lo ? lo : (e > a.seqlen_k ? a.seqlen_k : e);
        k0 = lo, s.sk = e - lo;
    }
    const int hk = h / a.group;
    const int64_t qb = a.cu_q ? (int64_t)q0 * a.qs[1] : b * a.qs[0], kb = a.cu_q ? (int64_t)k0 * a.ks[1] : b * a.ks[0];
    const int64_t vb = a.cu_q ? (int64_t)k0 * a.vs[1] : b * a.vs[0], ob = a.cu_q ? (int64_t)q0 * a.os[1] : b * a.os[0];
    s.q0 = q0;
    s.q = (const uint16_t *)a.q + qb + h * a.qs[2];
    s.k = (const uint16_t *)a.k + kb + hk * a.ks[2];
    s.v = (const uint16_t *)a.v + vb + hk * a.vs[2] + c0;
    s.o = (uint16_t *)a.o + ob + h * a.os[2] + c0;
    return s;
}

/* The key tiles of the row block [m0, m0 + bm) of a sequence: [n_lo, n_hi) the tiles some row
 * sees, [full_lo, full_hi) those every row sees in full (no mask). */
__device__ __forceinline__ void pa_hip_block_tiles(int m0, int bm, int bn, int sq, int sk, int wl, int wr, int *n_lo,
                                                   int *n_hi, int *full_lo, int *full_hi)
{
    int lo_f, hi_f, lo_l, hi_l;
    const int mlast = (m0 + bm < sq ? m0 + bm : sq) - 1;
    pa_hip_keys(m0, sq, sk, wl, wr, &lo_f, &hi_f);
    pa_hip_keys(mlast, sq, sk, wl, wr, &lo_l, &hi_l);
    *n_lo = lo_f / bn, *n_hi = hi_l < lo_f ? *n_lo : hi_l / bn + 1;
    *full_lo = (lo_l + bn - 1) / bn, *full_hi = (hi_f + 1) / bn;
}

#endif
