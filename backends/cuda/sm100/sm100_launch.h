/* cuda-sm100: the launcher prototype (the instance shapes are in sm100_desc.h). */
#ifndef PORTATTN_SM100_LAUNCH_H
#define PORTATTN_SM100_LAUNCH_H

#include "backend.h"
#include "cuda_inst.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The launch of what supports() chose (the instance row in ch->inst). */
portattn_status_t pa_cuda_sm100_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                       size_t err_len);
/* The instance of head dims dqk/dv (both its D), from the table sm100_launch.cu generates from
 * PA_SM100_LIST (sm100_desc.h); NULL when none. */
const pa_cuda_inst *pa_sm100_instance(int64_t dqk, int64_t dv);

#ifdef __cplusplus
}
#endif

#endif
