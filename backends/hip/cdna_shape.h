/* Which calls the hip-cdna kernel takes, by shape alone: shared by the HIP backend (cdna_backend.c)
 * and its nvcc emulation (cdna_emu_backend.c), so the two refuse exactly the same calls. */
#ifndef PORTATTN_CDNA_SHAPE_H
#define PORTATTN_CDNA_SHAPE_H

#include <stddef.h>

#include "backend.h"

/* 1 (and the kernel's name, "<tag><dtype,dD,128x32>", in kernel) or 0 with the reason in why. */
int pa_cdna_shape_ok(const pa_problem *pb, const char *tag, char *kernel, size_t kernel_len, char *why, size_t why_len);
/* A call with nothing to write (no batch or no query rows): success without a launch. */
int pa_cdna_nothing_to_do(const pa_problem *pb);

#endif
