/* The generic kernel's launcher (generic_fwd.cu), called by its backend table (generic_backend.c). */
#ifndef PORTATTN_GENERIC_LAUNCH_H
#define PORTATTN_GENERIC_LAUNCH_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

portattn_status_t pa_cuda_generic_launch(const pa_problem *pb, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
