/* Host-side CUDA helpers shared by the CUDA backends: device info, pointer residency, error
 * mapping. C11, built with the CUDA include dir; never prints, never aborts. */
#ifndef PORTATTN_CUDA_HOST_H
#define PORTATTN_CUDA_HOST_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Current device: compute capability, SM count and name (cached per device). 1 if a device is
 * usable; else 0 with the reason in `name`. Any output pointer may be NULL. */
int pa_cuda_device_info(int *cc_major, int *cc_minor, int *sm_count, char *name, size_t name_len);

/* Current device's shared memory in bytes: per block with the opt-in attribute, per SM (cached
 * with the device info). 0 if no device is usable. Either pointer may be NULL. */
int pa_cuda_device_smem(int *optin, int *per_sm);

/* Current device's L2 cache in bytes (cached with the device info). 0 if no device is usable. */
int pa_cuda_device_l2(int *bytes);

/* 1 if a CUDA device is usable, detail "NVIDIA H200 (sm_90, 132 SMs)"; else 0 and why. */
int pa_cuda_probe(char *detail, size_t detail_len);

/* Also declared in backend.h (under PORTATTN_HAVE_CUDA); repeated so this header stands alone. */
int pa_cuda_ptr_is_device_only(const void *ptr);
int pa_cuda_ptr_is_device_accessible(const void *ptr);

/* 1 if the current device can dereference ptr; else 0 and a one-line reason naming `what`,
 * e.g. "q.data is host memory", "k.data is on device 1, current device 0". */
int pa_cuda_ptr_check(const void *ptr, const char *what, char *why, size_t why_len);
/* Every pointer a kernel reads must be usable by the current device: each entry with `need` set
 * goes through pa_cuda_ptr_check. 1, or 0 and why (the first that is not). */
typedef struct pa_cuda_ptr { const void *ptr; const char *what; int need; } pa_cuda_ptr;
int pa_cuda_ptrs_ok(const pa_cuda_ptr *ptrs, size_t n, char *why, size_t why_len);
/* The forward's pointers as the prefill kernels read them (Q, O, K, V, LSE, cu_seqlens, the KV cache
 * and the appended tokens): the check of cuda-sm80's prefill, cuda-sm90 and cuda-sm100. */
int pa_cuda_fwd_ptrs_ok(const pa_problem *pb, char *why, size_t why_len);

/* Every tensor a CUDA backward's kernels touch (Q, K, V, O, dO, the LSE, the gradients, cu_seqlens, the
 * workspace): 16-byte rows (pa_tiled_layout_ok) and usable by the current device; 1, or 0 and why. */
struct pa_bwd_problem;
int pa_cuda_bwd_tensors_ok(const struct pa_bwd_problem *bp, char *why, size_t why_len);

/* on = 1 at the start of one front-end resolution (validation and selection), 0 at its end: while
 * on, a pointer this thread already asked about is answered from the first query (cuda_host.c). */
void pa_cuda_memo(int on);

/* 1 if a CUDA query of this thread failed with a device error (not "no device", not a bad
 * pointer) since the last call; copies the message and clears it. */
int pa_cuda_take_device_error(char *buf, size_t len);

/* The strides of Q, K, V (and O when with_o) as TMA tensor maps read them (pa_tmap_fwd in
 * cuda_tmap.cuh; varlen: one packed batch): below 2^40 bytes, no zero stride on a dimension with
 * more than one index. 1 if so; else 0 with the reason (NOT_SUPPORTED) in why. */
int pa_tma_strides_ok(const pa_problem *pb, int with_o, char *why, size_t why_len);

/* K and V as TMA maps of [*nk, *sk, heads, dim] in boxes of *rows rows (callers set the plain call's
 * values first). Over a KV cache they are the per-sequence caches [batch, seqlen_k] (varlen queries
 * or not), or the page pool [num_pages, page_size] with boxes of at most a page: a box never crosses
 * a page, so a tile of more rows than a page is several boxes, one per page. */
static inline void pa_tmap_kv_extent(const pa_problem *pb, int64_t *nk, int64_t *sk, int *rows)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pb->kv_cache) return;
    *nk = p->batch, *sk = p->seqlen_k;
    if (p->block_table) {
        *nk = p->num_pages, *sk = p->page_size;
        if (*rows > p->page_size) *rows = (int)p->page_size;
    }
}

/* The runtime's last error (cudaGetLastError) is one slot per thread and runtime copy. A shared
 * libportattn carries its own copy of the static runtime (whose symbols are hidden), a slot the
 * caller never sees; a static libportattn.a shares the program's runtime, and so the caller's slot.
 * The rule: the library never clears an error it did not raise. A library call that fails leaves
 * its runtime error there, as a failed runtime call does (the status carries it too): knowing
 * whether the slot was clean before would cost a runtime call on every launch. Only where the
 * library carries on past a failed runtime call of its own (an allocation or a driver entry point
 * it can do without) does it clear that error, and only if the slot was clean before: `pending` is
 * cudaPeekAtLastError() from just before the call that may fail. */
static inline void pa_cuda_drop_error(cudaError_t pending)
{
    if (pending == cudaSuccess) (void)cudaGetLastError();
}

/* The current context's unique id (cuCtxGetId) folded to a positive int; 0 when none is current, the
 * current one was destroyed (a primary context not created again since a cudaDeviceReset), or the
 * driver lacks cuCtxGetId. Keys caches of per-context state (cuda_attr.cuh): one driver call. */
int pa_cuda_context_key(void);

/* The dynamic shared memory opt-in of `kernel` in the current context, through the driver so that
 * the runtime's last-error slot (the caller's, in a static build) is left alone. */
cudaError_t pa_cuda_smem_optin(const void *kernel, int bytes);

/* cudaSuccess -> PORTATTN_SUCCESS (err untouched); cudaErrorMemoryAllocation -> OUT_OF_MEMORY;
 * anything else -> DEVICE. Message "what: <cudaGetErrorString> (<cudaGetErrorName>)". */
portattn_status_t pa_cuda_status(cudaError_t e, const char *what, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
