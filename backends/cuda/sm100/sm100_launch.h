/* cuda-sm100: the launcher prototype (the instance shapes are in sm100_desc.h). */
#ifndef PORTATTN_SM100_LAUNCH_H
#define PORTATTN_SM100_LAUNCH_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

portattn_status_t pa_cuda_sm100_launch(const pa_problem *pb, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
