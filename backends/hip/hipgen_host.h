/* hip-generic, host side (hipgen_host.c): which calls it takes, its pointer checks and its launches.
 * hip_backend.c owns the code objects and routes here every call the family's fast kernels decline. */
#ifndef PORTATTN_HIPGEN_HOST_H
#define PORTATTN_HIPGEN_HOST_H

#include <stddef.h>

#include "backend.h"
#include "hip_rt.h"

/* 1 if the generic kernel takes the (validated) problem by its shape (its name in kernel), else 0
 * and why: every dtype, head dims 1..256, any strides, KV caches, paged K/V, varlen, appends. */
int pa_hipgen_shape_ok(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len);
/* Every pointer the launches read or write is memory of device dev. */
int pa_hipgen_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len);
/* The append (if any), then the attention, on stream; fns: the functions of hipgen_entries.h in list
 * order, target: the gfx name of the loaded code object (its wave width sets the grid). */
portattn_status_t pa_hipgen_launch(const pa_hip_rt *rt, const pa_hip_fn *fns, const char *target, const pa_problem *pb,
                                   void *stream, char *err, size_t err_len);

#endif
