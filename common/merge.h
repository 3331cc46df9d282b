/* The merge of two partial attention results (portattn_merge): its validated form, the per-row
 * weights every implementation shares, and the implementations the front end (merge.c) picks from. */
#ifndef PORTATTN_MERGE_H
#define PORTATTN_MERGE_H

#include <math.h>
#include <stddef.h>

#include "problem.h"

/* The caller's params, copied, with dtype_part resolved and the strides of empty tensors zeroed. */
typedef struct pa_merge_problem {
    portattn_merge_params_t p;
} pa_merge_problem;

/* Weights of the two sides of one row and its merged LSE, in fp32. A side with LSE -inf gets weight
 * 0 (its O must then not be read: it may be anything), both -inf give the empty row (weights 0,
 * LSE -inf), a NaN gives NaN weights. The larger side's weight is e^0 = 1 exactly, so +inf merges
 * without inf - inf, and log1p keeps the small side's contribution to the LSE. */
PA_HD void pa_merge_weights(float lse, float lse_part, float *w, float *w_part, float *lse_out)
{
    if (lse != lse || lse_part != lse_part) { /* NaN */
        *w = *w_part = *lse_out = lse + lse_part;
        return;
    }
    const float m = lse > lse_part ? lse : lse_part;
    if (m == -INFINITY) {
        *w = *w_part = 0.0f;
        *lse_out = -INFINITY;
        return;
    }
    const float e = lse == m ? 1.0f : expf(lse - m), e_part = lse_part == m ? 1.0f : expf(lse_part - m);
    const float sum = e + e_part;
    *w = e / sum;
    *w_part = e_part / sum;
    *lse_out = m + log1pf(lse == m ? e_part : e);
}

#ifdef __cplusplus
extern "C" {
#endif

/* Checks every argument of a merge call and resolves it into *mp: the status and why. */
portattn_status_t pa_merge_validate(const portattn_merge_params_t *params, pa_merge_problem *mp, char *why,
                                    size_t why_len);

/* The host loop (cpu_merge.c): synchronous, host memory. */
portattn_status_t pa_cpu_merge(const pa_merge_problem *mp, char *err, size_t err_len);

#ifdef PORTATTN_HAVE_CUDA
/* One kernel for every CUDA backend (backends/cuda/common/cuda_merge.cu), asynchronous on `stream`. */
portattn_status_t pa_cuda_merge(const pa_merge_problem *mp, void *stream, char *err, size_t err_len);
#endif

#ifdef __cplusplus
}
#endif

#endif
