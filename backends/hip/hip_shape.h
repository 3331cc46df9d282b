/* Which calls the HIP kernels take, by shape alone: shared by the HIP backends (hip_backend.c) and the
 * nvcc emulation of hip-cdna (cdna_emu_backend.c), so that they refuse exactly the same calls. */
#ifndef PORTATTN_HIP_SHAPE_H
#define PORTATTN_HIP_SHAPE_H

#include <stddef.h>

#include "backend.h"

/* 1 (and the kernel's name, "<tag><dtype,dD,tile>", in kernel) or 0 with the reason in why. The
 * kernel takes f16/bf16, Dqk == Dv in dims[0 .. ndims), no KV cache, 16-byte rows. */
int pa_hip_shape_ok(const pa_problem *pb, const char *tag, const char *tile, const int *dims, int ndims, char *kernel,
                    size_t kernel_len, char *why, size_t why_len);
/* A call with nothing to write (no batch or no query rows): success without a launch. */
int pa_hip_nothing_to_do(const pa_problem *pb);

#endif
