/* KV-cache append shared by the CUDA backends: writes k_new/v_new into the cache (cuda_append.cu). */
#ifndef PORTATTN_CUDA_APPEND_H
#define PORTATTN_CUDA_APPEND_H

#include <stddef.h>

#include "backend.h"
#include "fwd_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* When pb->seqlen_new > 0, launches one kernel on `stream` (a cudaStream_t), whose argument is `a` (the
 * call's pa_fwd_args: k_new/v_new, the cache and its geometry), that copies token i of
 * k_new/v_new into cache row seqused_k[b] + i of every sequence b and KV head, through the page
 * table when block_table is set. Device-resident seqused_k/block_table may hold anything: negative
 * lengths count as 0, rows at or past seqlen_k and pages outside [0, num_pages) are skipped, so the
 * kernel never writes out of bounds. SUCCESS without a launch when there is nothing to append;
 * otherwise a status with the reason in `err`. Stream-ordered before the attention kernel that
 * follows on the same stream. */
portattn_status_t pa_cuda_append(const pa_problem *pb, const pa_fwd_args *a, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
