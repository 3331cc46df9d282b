/* The forward kernels' argument struct: everything they read, resolved on the host from a validated
 * problem (pa_fwd_fill_args, fwd_resolve.c). Plain C: the CUDA kernels (cuda-sm80, cuda-sm90), the HIP
 * kernels (hipcc and the nvcc emulation) and host tests share it. Runtime flags are values, not
 * templates. */
#ifndef PORTATTN_FWD_ARGS_H
#define PORTATTN_FWD_ARGS_H

#include <stdint.h>

typedef struct pa_fwd_args {
    const void *q, *k, *v;
    void *o;
    float *lse; /* NULL = not wanted */
    const int32_t *cu_q, *cu_k; /* varlen when non-NULL (packed [1, total, H, D]) */
    int64_t qs[3], ks[3], vs[3], os[3], ls[3]; /* element strides (batch, seq, head); dim stride is 1 */
    int batch, heads, group;
    int dqk, dv;            /* the call's head dims; an instance's D may be larger (columns past them read as 0, never written) */
    int seqlen_q, seqlen_k; /* per sequence, or the packed totals with varlen */
    int wl, wr;             /* window sides, -1 = unbounded (causal folded into wr = 0) */
    int transform;          /* 0: log2 score = raw * mult; 1: scores rewritten first (softcap or scale < 0) */
    float mult;             /* scale * log2(e), > 0; 1 when transform */
    float pre_mul, post_mul; /* transform: s = post_mul * tanh(raw * pre_mul), or raw * pre_mul without softcap */
    int softcap;
} pa_fwd_args;

#endif
