/* The host side every CUDA backward shares: the argument struct filled from the problem, the
 * workspace (the caller's, else a stream-ordered allocation) with its dQ sums cleared, then the
 * family's launches (its run function: the row kernels and its main kernel, cuda_bwd_rows.cuh).
 * C linkage, for the families' launchers (.cu). */
#ifndef PORTATTN_CUDA_BWD_HOST_H
#define PORTATTN_CUDA_BWD_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "bwd_problem.h"
#include "cuda_bwd_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A family's launches for one call (ctx: what its launcher prepared, e.g. tensor maps). */
typedef cudaError_t (*pa_cuda_bwd_run_fn)(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *ctx,
                                         cudaStream_t stream);

/* Workspace row slots of a call with sqp rows per (batch, query head); bytes with `splits` dQ slices:
 * LSE_2 and D (a float a slot each), then the slices (splits x slots x head dim floats). */
size_t pa_cuda_bwd_slots(const pa_bwd_problem *bp, int64_t sqp);
size_t pa_cuda_bwd_ws_bytes(const pa_bwd_problem *bp, int64_t sqp, int splits);

/* The call: arguments (sqp, bm, splits as the family chose them), workspace, cleared dQ sums, run(),
 * the workspace freed; `who` names the family in messages. */
portattn_status_t pa_cuda_bwd_launch(const pa_bwd_problem *bp, const char *who, int64_t sqp, int bm, int splits,
                                     pa_cuda_bwd_run_fn run, const void *ctx, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
