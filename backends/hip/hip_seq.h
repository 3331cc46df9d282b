/* The per-(batch, head) prologue both HIP kernels share (cdna_fwd_kernel.h, rdna3_fwd_kernel.h):
 * the sequence's extent (packed varlen offsets clamped into the buffers) and the base pointers of its
 * Q, K, V and O rows. The keys a row sees and the block's key tiles are common/block.h's. */
#ifndef PORTATTN_HIP_SEQ_H
#define PORTATTN_HIP_SEQ_H

#include "hip_wave.h" /* first: the device qualifiers the common headers' PA_HD functions use */

#include "block.h"
#include "fwd_args.h"
#include "seqlen.h"

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
        pa_seq_extent(a.cu_q, b, a.seqlen_q, &q0, &s.sq);
        pa_seq_extent(a.cu_k, b, a.seqlen_k, &k0, &s.sk);
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

#endif
