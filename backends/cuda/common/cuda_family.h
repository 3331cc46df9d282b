/* The device half of the family check (common/family.h) for the CUDA families: the compute capability
 * a family's code runs on, and the opt-in shared memory an instance needs, each refused in one wording.
 * Host C. */
#ifndef PORTATTN_CUDA_FAMILY_H
#define PORTATTN_CUDA_FAMILY_H

#include <stddef.h>

#include "family.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if the current device is one family f's code runs on (f->cc); else 0 and why: no usable device,
 * or "needs compute capability 9.0 (sm_90a code), device is 8.0". Also the probes' answer. */
int pa_cuda_arch_ok(const pa_family *f, char *why, size_t why_len);

/* The whole check of a CUDA family: pa_cuda_arch_ok, then pa_family_can_implement. */
int pa_cuda_family_ok(const pa_family *f, const pa_problem *pb, char *why, size_t why_len);

/* 1 if the current device allows `bytes` of dynamic shared memory per block (with the opt-in), which
 * instance `kernel` of head dim d needs; else 0 and why ("sm90-kv d128 needs 200000 bytes of shared
 * memory, device allows 101376 per block"). */
int pa_cuda_smem_ok(const char *kernel, int d, int bytes, char *why, size_t why_len);

/* The head-dim rule of a CUDA backward (Dqk == Dv of an instance): has_dim says whether head dim
 * Dqk has one, dims lists them for the refusal ("64, 128"). 1, or 0 and why. */
int pa_cuda_bwd_dims_ok(const pa_problem *pb, int has_dim, const char *dims, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
