/* The generic kernels' launchers (generic_fwd.cu, generic_bwd.cu), called by their backend tables. */
#ifndef PORTATTN_GENERIC_LAUNCH_H
#define PORTATTN_GENERIC_LAUNCH_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

portattn_status_t pa_cuda_generic_launch(const pa_problem *pb, void *stream, char *err, size_t err_len);
/* The backward kernels (generic_bwd.cu), for generic_bwd_backend.c. */
struct pa_bwd_problem;
portattn_status_t pa_cuda_generic_bwd_launch(const struct pa_bwd_problem *bp, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
