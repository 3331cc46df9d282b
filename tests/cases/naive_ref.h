/* An independent reference for checking the library: attention straight from the definitions in
 * portattn.h, in double, over host-memory params of any kind (strides, varlen, seqused_k, page
 * tables, append). It shares no code with the CPU backend but the fp16/bf16 conversions (which
 * test_oracle checks exhaustively), so it can judge that backend too. */
#ifndef PORTATTN_TEST_NAIVE_REF_H
#define PORTATTN_TEST_NAIVE_REF_H

#include <stdint.h>

#include "portattn.h"

/* Query rows of a call as the reference indexes them: batch * seqlen_q, or the packed tokens. */
int64_t naive_rows(const portattn_fwd_params_t *p);

/* O into o[(row * heads_q + h) * head_dim_v + d] and LSE into lse[row * heads_q + h], row as in
 * naive_rows; rows no sequence owns (packed tokens past cu_seqlens_q[batch]) are set to NaN. The
 * call must be valid and its memory host-readable; appended keys are read from k_new/v_new, the
 * cache itself is never written. 0 on success, -1 when out of memory. */
int naive_forward(const portattn_fwd_params_t *p, double *o, double *lse);

/* Compares a backend's O and LSE (host memory, at the params' own strides) with the reference:
 * the error each element may have is the rounding of one dtype conversion plus 1e-6 (LSE: fp32).
 * Prints at most three differences prefixed by `what`; returns how many elements differ. */
long naive_compare(const char *what, const portattn_fwd_params_t *p, const double *o, const double *lse);

#endif
