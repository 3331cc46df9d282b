/* The CUDA backward kernels' one argument struct: the forward's problem (pa_fwd_args) and what the
 * backward adds (dO, the gradients, their strides, the per-row workspace). Filled once by a backward
 * launcher, taken by its row kernels (the D / LSE prologue, the dQ conversion) and its main kernel.
 * Plain C, included by C and CUDA alike. */
#ifndef PORTATTN_CUDA_BWD_ARGS_H
#define PORTATTN_CUDA_BWD_ARGS_H

#include <stdint.h>

#include "fwd_args.h"

typedef struct pa_bwd_args {
    pa_fwd_args f;            /* q, k, v, o, lse, their strides, shape, masks, score map */
    const void *dout;
    void *dq, *dk, *dv;
    int64_t dos[3], dqs[3], dks[3], dvs[3]; /* element strides (batch, seq, head); dim stride is 1 */
    /* Workspace, per (slice, batch, query head) `sqp` rows: the rows' LSE in base 2 (+inf for a row
     * that saw no key or a padding row, so that its P is 0), D = rowsum(dO * O), the fp32 dQ sums. */
    float *lse2, *delta, *dq_acc;
    int sqp;          /* rows per (batch, head): the longest sequence rounded up to every selectable shape */
    int max_sq;       /* query rows of a sequence past this are left alone (varlen, as FlashAttention) */
    int splits;       /* dQ slices: 1, or the deterministic mode's count */
    int deterministic;
    float scale;      /* softmax scale: dQ and dK are scale * (dS K), scale * (dS^T Q) */
    int bm;           /* query rows per block of the main kernel (cuda-sm80: pa_sm80_bwd_rows) */
} pa_bwd_args;

#endif
