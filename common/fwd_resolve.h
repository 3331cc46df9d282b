/* Host side of the GPU kernels' argument struct (fwd_args.h): a validated problem resolved into it,
 * and the checks every tiled kernel shares. Vendor-neutral, so the CUDA and HIP backends resolve a
 * call alike (fwd_resolve.c). */
#ifndef PORTATTN_FWD_RESOLVE_H
#define PORTATTN_FWD_RESOLVE_H

#include <stddef.h>

#include "fwd_args.h"
#include "portattn.h"

#ifdef __cplusplus
extern "C" {
#endif
struct pa_problem;
/* The base-2 score mapping of every GPU kernel: 0 when scale/softcap leave the float range. */
int pa_fwd_score_map(const struct pa_problem *pb, int *transform, int *softcap, float *mult, float *pre_mul,
                     float *post_mul);
/* supports()' form of the same: 1, or 0 with "scale / softcap out of range" in why. */
int pa_fwd_score_map_ok(const struct pa_problem *pb, char *why, size_t why_len);
/* The kernel argument struct of a validated problem. */
portattn_status_t pa_fwd_fill_args(const struct pa_problem *pb, pa_fwd_args *a, char *err, size_t err_len);
/* The tiled kernels' layout: unit innermost stride, 16-byte base pointers and row strides (Q and O,
 * and K and V when there are keys; varlen ignores the batch stride): 1, or 0 and why. */
int pa_fwd_layouts_ok(const struct pa_problem *pb, char *why, size_t why_len);
/* The tiled kernels' refusal of packed queries over a KV cache (pa_serving): 1 when the call is not
 * one, else 0 and why. One place, so that every fast backend says the same and selection falls to
 * cuda-generic (and the CPU). */
int pa_fwd_not_serving(const struct pa_problem *pb, char *why, size_t why_len);
#ifdef __cplusplus
}
#endif

#endif
