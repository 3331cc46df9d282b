/* Which calls the HIP kernels take, by shape alone: shared by the HIP backends (hip_backend.c) and the
 * nvcc emulation of hip-cdna (cdna_emu_backend.c), so that they refuse exactly the same calls. */
#ifndef PORTATTN_HIP_SHAPE_H
#define PORTATTN_HIP_SHAPE_H

#include <stddef.h>

#include "backend.h"

/* Output columns one launch holds: an instance of a larger head dim runs as launches of this many
 * columns each (cdna_entries.h, rdna3_entries.h), only those that hold some of the call's Dv. */
#define PA_HIP_LAUNCH_COLS 128

/* 1 (and the kernel's name in kernel: pa_kernel_name's "<tag><dtype,dD(Dqk/Dv),BMxBN>", plus the
 * launches of 128 columns for D > 128) or 0 with the reason in why. The kernel takes f16/bf16, head
 * dims that are multiples of 8 up to dims[ndims - 1] on the smallest of dims (ascending) that holds
 * both (pa_fwd_instance_dim), no KV cache, 16-byte rows. */
int pa_hip_shape_ok(const pa_problem *pb, const char *tag, int bm, int bn, const int *dims, int ndims, char *kernel,
                    size_t kernel_len, char *why, size_t why_len);
/* As pa_hip_shape_ok for a family whose instances over 128 head-dim columns take bn_wide keys per tile
 * and hold launch_cols output columns a launch (hip-rdna3: 16 and 256, its d256 in one launch). */
int pa_hip_shape_ok_wide(const pa_problem *pb, const char *tag, int bm, int bn, int bn_wide, int launch_cols,
                         const int *dims, int ndims, char *kernel, size_t kernel_len, char *why, size_t why_len);
/* A call with nothing to write (no batch or no query rows): success without a launch. */
int pa_hip_nothing_to_do(const pa_problem *pb);

#endif
