/* Host side of the GPU kernels' argument struct (fwd_args.h): a validated problem resolved into it,
 * and the checks every tiled kernel shares. Vendor-neutral, so the CUDA and HIP backends resolve a
 * call alike (fwd_resolve.c). */
#ifndef PORTATTN_FWD_RESOLVE_H
#define PORTATTN_FWD_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

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
/* The kernel argument struct of a validated problem: every field but a family's launch shape (kv.qpack
 * 1, split zero). The base-2 score fields (mult, pre_mul, post_mul) hold only where pa_fwd_score_map
 * succeeds; the generic kernel, which takes every call, reads the raw scale and softcap instead. */
void pa_fwd_args_of(const struct pa_problem *pb, pa_fwd_args *a);
/* The same for the kernels that score in base 2: NOT_SUPPORTED and why when scale/softcap leave the
 * float range there. */
portattn_status_t pa_fwd_fill_args(const struct pa_problem *pb, pa_fwd_args *a, char *err, size_t err_len);
/* The tiled kernels' layout: unit innermost stride, 16-byte base pointers and row strides (Q and O,
 * and K and V when there are keys; varlen ignores the batch stride): 1, or 0 and why. */
int pa_fwd_layouts_ok(const struct pa_problem *pb, char *why, size_t why_len);
/* One tensor of it (varlen: its batch stride is not used): 1, or 0 and why. The backward kernels'
 * gradients take the same rule. */
int pa_tiled_layout_ok(const portattn_tensor_t *t, const char *name, int varlen, char *why, size_t why_len);
/* The instance a tiled kernel family runs a call on: the smallest D in `dims` (ascending, n of them)
 * that holds both head dims. Both must be positive multiples of 8, because the kernels load and
 * store 16-byte column chunks: the chunks past Dqk (Q, K) and past Dv (V) are zero-filled on load
 * and O's are never written, so S, the LSE and O's first Dv columns are exact. 0 when none fits;
 * pa_fwd_dims_ok is the same with the reason in words, headed by `who` where it names a kernel family
 * inside the backend ("decode kernel: head dims ..."); NULL for the backend's own, which the selector
 * already names. */
int pa_fwd_instance_dim(const int *dims, int n, int64_t dqk, int64_t dv);
/* The kernel's name in the "which kernel" answer: family<dtype,dD,BMxBN>, the call's head dims after
 * D where the instance is wider than them (family<bf16,d128(80/80),128x128>), and a family's own
 * note last unless extra is NULL (family<f16,d64,128x128,packgqa4>). */
/* "(Dqk/Dv)" in buf when instance D is wider than the call's head dims, else "" (buf unused). */
const char *pa_dims_note(const struct pa_problem *pb, int d, char *buf, size_t len);
void pa_kernel_name(char *buf, size_t len, const char *family, const char *dtype, int d, const struct pa_problem *pb,
                    int bm, int bn, const char *extra);
int pa_fwd_dims_ok(const int *dims, int n, const struct pa_problem *pb, const char *who, char *why, size_t why_len);
/* Decode shapes: at most this many query tokens per sequence go to the split-KV decode kernels
 * (cuda-sm80's, hip-cdna's), which the prefill kernels leave them to. */
#define PA_DECODE_MAX_SQ 16
/* The KV-cache prefill kernels' layouts (cuda-sm80's paged prefill, cuda-sm90's KV-cache instances):
 * Q and O as every tiled call, K and V as page pools or per-sequence caches whose batch (page) stride
 * the kernels use even when the queries are packed; the pool within their int32 range; the score
 * map. 1, or 0 and why. */
int pa_fwd_kv_layouts_ok(const struct pa_problem *pb, char *why, size_t why_len);
/* The refusal of packed queries over a KV cache (pa_serving) by the tiled kernels that do not take
 * them (all but cuda-sm80's paged prefill): 1 when the call is not one, else 0 and why. One place, so
 * that they all say the same. */
int pa_fwd_not_serving(const struct pa_problem *pb, char *why, size_t why_len);
#ifdef __cplusplus
}
#endif

#endif
