/* Everything the HIP forward kernels read, resolved on the host (plain C: the HIP launcher, the
 * nvcc emulation and host tests share it). Field meanings as cuda-sm80's sm80_args. */
#ifndef PORTATTN_HIP_ARGS_H
#define PORTATTN_HIP_ARGS_H

#include <stdint.h>

typedef struct pa_hip_args {
    const void *q, *k, *v;
    void *o;
    float *lse;                  /* NULL = not wanted */
    const int32_t *cu_q, *cu_k;  /* varlen when non-NULL (packed [1, total, H, D]) */
    int64_t qs[3], ks[3], vs[3], os[3], ls[3]; /* element strides (batch, seq, head); dim stride 1 */
    int batch, heads, group;
    int seqlen_q, seqlen_k;      /* per sequence, or the packed totals with varlen */
    int wl, wr;                  /* window sides, -1 = unbounded (causal folded into wr = 0) */
    int transform, softcap;      /* scores rewritten before the base-2 softmax (softcap, scale < 0) */
    float mult, pre_mul, post_mul;
} pa_hip_args;

#endif
