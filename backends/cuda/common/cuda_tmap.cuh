/* Host side of TMA for the cuda-sm90 and cuda-sm100 launchers: the driver's tensor-map encoder
 * (fetched through the runtime: the library links the static runtime, not libcuda) and the map of a
 * [batch, seq, heads, dim] 16-bit tensor as 64-column boxes with the 128-byte swizzle. Header-only
 * (static inline) because each launcher is its own object with its own -gencode list. */
#ifndef PORTATTN_CUDA_TMAP_CUH
#define PORTATTN_CUDA_TMAP_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_host.h" /* pa_cuda_status, pa_fmt, pa_problem */

/* A driver function (CUDA 12 ABI), found once and cached in *slot (the library links the static
 * runtime only); NULL when the driver lacks it. A racing second lookup finds the same pointer. */
static inline void *pa_driver_fn(const char *name, void **slot)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f) return f;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !f)
        return NULL; /* the call fails: its runtime error stays (cuda_host.h, pa_cuda_drop_error) */
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

static inline PFN_cuTensorMapEncodeTiled_v12000 pa_tmap_encoder(void)
{
    static void *fn;
    return (PFN_cuTensorMapEncodeTiled_v12000)pa_driver_fn("cuTensorMapEncodeTiled", &fn);
}

/* The driver's encoder needs a context current on the calling thread. The runtime makes the
 * device's primary context current lazily, at the first runtime call that needs one, which a thread
 * that has only called portattn may not have made yet (the encoder then fails with
 * CUDA_ERROR_INVALID_CONTEXT). Only when no context is current is the primary one made current
 * (cudaSetDevice on the current device); a caller's own context is never replaced. */
static inline cudaError_t pa_tmap_ensure_context(void)
{
    static void *fn;
    typedef CUresult (*ctx_get_fn)(CUcontext *);
    const ctx_get_fn get = (ctx_get_fn)pa_driver_fn("cuCtxGetCurrent", &fn);
    if (!get) return cudaErrorNotSupported;
    CUcontext cur = NULL;
    if (get(&cur) == CUDA_SUCCESS && cur) return cudaSuccess;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    return e == cudaSuccess ? cudaSetDevice(dev) : e;
}

/* A [batch, seq, heads, dim] tensor of 16-bit elements as boxes of 64 columns x `rows` rows x `hbox`
 * heads with the 128-byte swizzle (a box lands head by head: row r of it is token r % rows of head
 * r / rows); rows past `seq` read as zeros. Size-1 dimensions get a nominal stride of 16
 * bytes (TMA wants multiples of 16 below 2^40; the stride of a single index is never used). */
static inline CUresult pa_tmap_bshd(PFN_cuTensorMapEncodeTiled_v12000 enc, CUtensorMap *m, const void *ptr, int bf16,
                                    int64_t b, int64_t s, int64_t h, int64_t d, const int64_t st[3], int rows,
                                    int hbox)
{
    const cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)s, (cuuint64_t)h, (cuuint64_t)b};
    const int64_t el[3] = {st[1], st[2], st[0]}, n[3] = {s, h, b};
    cuuint64_t strides[3];
    for (int i = 0; i < 3; ++i) strides[i] = (cuuint64_t)(n[i] == 1 ? 16 : el[i] * 2);
    const cuuint32_t box[4] = {64, (cuuint32_t)rows, (cuuint32_t)hbox, 1}, es[4] = {1, 1, 1, 1};
    return enc(m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, (void *)ptr, dims,
               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* The maps of a forward call, as both TMA launchers use them: Q in boxes of q_rows tokens x q_heads
 * heads, K and V in boxes of kv_rows, and O (when `to` is not NULL) as Q; under varlen the packed
 * tensors as one batch of all tokens (seqlen_q/k are the totals, stride[0] unused); a KV cache as
 * pa_tmap_kv_extent says. Finds the encoder and makes a context current first. `who` names the
 * backend in the error message. */
static inline portattn_status_t pa_tmap_fwd(const pa_problem *pb, const char *who, int q_rows, int q_heads, int kv_rows,
                                            CUtensorMap *tq, CUtensorMap *tk, CUtensorMap *tv, CUtensorMap *to,
                                            char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    PFN_cuTensorMapEncodeTiled_v12000 enc = pa_tmap_encoder();
    if (!enc) return pa_fmt(err, err_len, PORTATTN_ERROR_DEVICE, "%s: the driver has no cuTensorMapEncodeTiled", who);
    char what[64];
    cudaError_t e = pa_tmap_ensure_context();
    if (e != cudaSuccess) {
        snprintf(what, sizeof what, "%s: making the device's context current", who);
        return pa_cuda_status(e, what, err, err_len);
    }
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    /* Each map spans the call's own head dim: the columns of a kernel instance's wider boxes past it
     * are zero-filled by the TMA (loads) or dropped (stores). */
    const int64_t nb = pb->varlen ? 1 : p->batch, dqk = p->head_dim_qk, dv = p->head_dim_v;
    int64_t nk = nb, sk = p->seqlen_k;
    pa_tmap_kv_extent(pb, &nk, &sk, &kv_rows);
    CUresult r = pa_tmap_bshd(enc, tq, p->q.data, bf16, nb, p->seqlen_q, p->heads_q, dqk, p->q.stride, q_rows, q_heads);
    if (r == CUDA_SUCCESS)
        r = pa_tmap_bshd(enc, tk, p->k.data, bf16, nk, sk, p->heads_kv, dqk, p->k.stride, kv_rows, 1);
    if (r == CUDA_SUCCESS)
        r = pa_tmap_bshd(enc, tv, p->v.data, bf16, nk, sk, p->heads_kv, dv, p->v.stride, kv_rows, 1);
    if (r == CUDA_SUCCESS && to)
        r = pa_tmap_bshd(enc, to, p->o.data, bf16, nb, p->seqlen_q, p->heads_q, dv, p->o.stride, q_rows, q_heads);
    /* CUresult and cudaError_t share their numbers (a dead context: 719 in both), so the runtime
     * names the error; supports() keeps the arguments inside the encoder's limits. */
    if (r != CUDA_SUCCESS) {
        snprintf(what, sizeof what, "%s: cuTensorMapEncodeTiled", who);
        return pa_cuda_status((cudaError_t)r, what, err, err_len);
    }
    return PORTATTN_SUCCESS;
}

#endif
