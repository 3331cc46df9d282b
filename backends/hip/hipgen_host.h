/* hip-generic, host side (hipgen_host.c): which calls it takes, its pointer checks and its launches.
 * hip_backend.c owns the code objects and routes here every call the family's fast kernels decline. */
#ifndef PORTATTN_HIPGEN_HOST_H
#define PORTATTN_HIPGEN_HOST_H

#include <stddef.h>

#include "backend.h"
#include "hip_rt.h"

/* Which calls it takes is common/gen_shape.h's pa_gen_shape_ok (cuda-generic's rule: every dtype,
 * head dims 1..256, any strides, KV caches, paged K/V, varlen, appends). Every pointer the launches
 * read or write (pa_gen_device_ptrs) is memory of device dev. */
int pa_hipgen_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len);
/* The append (if any), then the attention, on stream; fns: the functions of hipgen_entries.h in list
 * order, target: the gfx name of the loaded code object (its wave width sets the grid). */
portattn_status_t pa_hipgen_launch(const pa_hip_rt *rt, const pa_hip_fn *fns, const char *target, const pa_problem *pb,
                                   void *stream, char *err, size_t err_len);

#endif
