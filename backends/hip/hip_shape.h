/* Which calls the HIP kernels take, by shape alone: shared by the HIP backends (hip_backend.c) and the
 * nvcc emulation of hip-cdna (cdna_emu_backend.c), so that they refuse exactly the same calls. */
#ifndef PORTATTN_HIP_SHAPE_H
#define PORTATTN_HIP_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "family.h"

/* Head dims over this take the family's wide tiles (bn_wide keys: hip-rdna3's instances of more than
 * 128 output columns, PA_RDNA3_BN_OF). */
#define PA_HIP_NARROW_COLS 128

/* An instance as the host launches it, from the X(name, bf16, head dim, output columns, first output
 * column) entries of cdna_entries.h / rdna3_entries.h. */
typedef struct pa_hip_inst { int bf16, d, cols, c0; } pa_hip_inst;
/* The X of those lists that makes one pa_hip_inst initialiser: {PA_CDNA_ENTRIES(PA_HIP_INST)}. */
#define PA_HIP_INST(name, bf16, dqk, dv, c0) {bf16, dqk, dv, c0},

/* A fast kernel family's limits (common/family.h) around its head-dim rule, dims_rule: f16/bf16, no KV
 * cache, int32 rows, one workgroup column per (batch, head) pair over grid y and z (hip_grid.h). */
#define PA_HIP_FAST_FAMILY(dims_rule)                                                                     \
    {.dtypes = PA_DTYPES_16, .head_dims = (dims_rule), .refuses = PA_REFUSES_KV_CACHE,                    \
     .max_seqlen = (1 << 30) - 1, .grid_dim = INT32_MAX, .grid_blocks = (int64_t)65535 * 65535}

/* 1 (and the kernel's name in kernel: pa_kernel_name's "<tag><dtype,dD(Dqk/Dv),BMxBN>", plus, where the
 * head dim runs as several launches (insts), the columns of those the call makes) or 0 with the reason
 * in why. The kernel takes what its family fam (PA_HIP_FAST_FAMILY) does, head dims that are multiples
 * of 8 up to dims[ndims - 1] on the smallest of dims (ascending) that holds both (pa_fwd_instance_dim:
 * fam's rule), and 16-byte rows. */
int pa_hip_shape_ok(const pa_problem *pb, const pa_family *fam, const char *tag, int bm, int bn,
                    const pa_hip_inst *insts, int ninsts, const int *dims, int ndims, char *kernel, size_t kernel_len,
                    char *why, size_t why_len);
/* As pa_hip_shape_ok for a family whose instances over 128 head-dim columns take bn_wide keys per tile
 * (hip-rdna3: 16). */
int pa_hip_shape_ok_wide(const pa_problem *pb, const pa_family *fam, const char *tag, int bm, int bn, int bn_wide,
                         const pa_hip_inst *insts, int ninsts, const int *dims, int ndims, char *kernel,
                         size_t kernel_len, char *why, size_t why_len);
/* A call with nothing to write (no batch or no query rows): success without a launch. */
int pa_hip_nothing_to_do(const pa_problem *pb);

#endif
