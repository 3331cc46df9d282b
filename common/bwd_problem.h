/* The validated form of a backward call that every backward backend receives: the forward's problem
 * (validated by the forward's own checks, O and LSE in its o/lse fields) plus the gradient tensors. */
#ifndef PORTATTN_BWD_PROBLEM_H
#define PORTATTN_BWD_PROBLEM_H

#include "problem.h"

typedef struct pa_bwd_problem {
    pa_problem fwd;         /* q, k, v, o, lse (read only here), masks, varlen, resolved scale */
    portattn_tensor_t dout; /* input, O's shape */
    portattn_tensor_t dq, dk, dv; /* outputs */
    int deterministic;
} pa_bwd_problem;

#ifdef __cplusplus
extern "C" {
#endif
/* Checks every argument of a backward call and resolves it into *pb: the status and why. */
portattn_status_t pa_bwd_validate(const portattn_bwd_params_t *params, pa_bwd_problem *pb, char *why, size_t why_len);
#ifdef __cplusplus
}
#endif

#endif
