/* cuda-sm90 launcher: builds the TMA tensor maps of Q, K and V (4-D: dim, seq, head, batch, with the
 * caller's strides) and launches the instance for (head dim, dtype). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "cuda_host.h"
#include "sm90_fwd_kernel.cuh"
#include "sm90_launch.h"

cudaError_t sm90_launch_d64(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                            cudaStream_t);
cudaError_t sm90_launch_d128(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                             cudaStream_t);
cudaError_t sm90_launch_d256(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                             cudaStream_t);

extern "C" int pa_sm90_compiled(void) { return 1; }

/* A driver function (CUDA 12 ABI), found once and cached in *slot (the library links the static
 * runtime only); NULL when the driver lacks it. A racing second lookup finds the same pointer. */
static void *sm90_driver_fn(const char *name, void **slot)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f) return f;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !f) {
        (void)cudaGetLastError();
        return NULL;
    }
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

static PFN_cuTensorMapEncodeTiled_v12000 sm90_encoder(void)
{
    static void *fn;
    return (PFN_cuTensorMapEncodeTiled_v12000)sm90_driver_fn("cuTensorMapEncodeTiled", &fn);
}

/* The driver's encoder needs a context current on the calling thread. The runtime makes the
 * device's primary context current lazily, at the first runtime call that needs one, which a thread
 * that has only called portattn may not have made yet (the encoder then fails with
 * CUDA_ERROR_INVALID_CONTEXT). Only when no context is current is the primary one made current
 * (cudaSetDevice on the current device); a caller's own context is never replaced. */
static cudaError_t sm90_ensure_context(void)
{
    static void *fn;
    typedef CUresult (*ctx_get_fn)(CUcontext *);
    const ctx_get_fn get = (ctx_get_fn)sm90_driver_fn("cuCtxGetCurrent", &fn);
    if (!get) return cudaErrorNotSupported;
    CUcontext cur = NULL;
    if (get(&cur) == CUDA_SUCCESS && cur) return cudaSuccess;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    return e == cudaSuccess ? cudaSetDevice(dev) : e;
}

/* A [batch, seq, heads, dim] tensor of 16-bit elements as boxes of 64 columns x `rows` rows with the
 * 128-byte swizzle; rows past `seq` read as zeros. Size-1 dimensions get a nominal stride of 16
 * bytes (TMA wants multiples of 16 below 2^40; the stride of a single index is never used). */
static CUresult sm90_tmap(PFN_cuTensorMapEncodeTiled_v12000 enc, CUtensorMap *m, const void *ptr, int bf16, int64_t b,
                          int64_t s, int64_t h, int64_t d, const int64_t st[3], int rows)
{
    const cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)s, (cuuint64_t)h, (cuuint64_t)b};
    const int64_t el[3] = {st[1], st[2], st[0]}, n[3] = {s, h, b};
    cuuint64_t strides[3];
    for (int i = 0; i < 3; ++i) strides[i] = (cuuint64_t)(n[i] == 1 ? 16 : el[i] * 2);
    const cuuint32_t box[4] = {64, (cuuint32_t)rows, 1, 1}, es[4] = {1, 1, 1, 1};
    return enc(m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, (void *)ptr, dims,
               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

extern "C" portattn_status_t pa_cuda_sm90_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t d = p->head_dim_qk;
    if (p->batch <= 0 || p->seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    sm80_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;
    PFN_cuTensorMapEncodeTiled_v12000 enc = sm90_encoder();
    if (!enc) return pa_fmt(err, err_len, PORTATTN_ERROR_DEVICE, "cuda-sm90: the driver has no cuTensorMapEncodeTiled");
    cudaError_t e = sm90_ensure_context();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pa_cuda_status(e, "cuda-sm90: making the device's context current", err, err_len);
    }
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    CUtensorMap tq, tk, tv;
    CUresult r = sm90_tmap(enc, &tq, p->q.data, bf16, p->batch, p->seqlen_q, p->heads_q, d, p->q.stride, PA_SM90_BM(d));
    if (r == CUDA_SUCCESS)
        r = sm90_tmap(enc, &tk, p->k.data, bf16, p->batch, p->seqlen_k, p->heads_kv, d, p->k.stride, PA_SM90_BN(d));
    if (r == CUDA_SUCCESS)
        r = sm90_tmap(enc, &tv, p->v.data, bf16, p->batch, p->seqlen_k, p->heads_kv, d, p->v.stride, PA_SM90_BN(d));
    /* CUresult and cudaError_t share their numbers (a dead context: 719 in both), so the runtime
     * names the error; supports() keeps the arguments inside the encoder's limits. */
    if (r != CUDA_SUCCESS) return pa_cuda_status((cudaError_t)r, "cuda-sm90: cuTensorMapEncodeTiled", err, err_len);
    cudaStream_t st = (cudaStream_t)stream;
    e = d == 64    ? sm90_launch_d64(&tq, &tk, &tv, &a, bf16, st)
                    : d == 128 ? sm90_launch_d128(&tq, &tk, &tv, &a, bf16, st)
                               : sm90_launch_d256(&tq, &tk, &tv, &a, bf16, st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pa_cuda_status(e, "cuda-sm90: kernel launch", err, err_len);
    }
    return PORTATTN_SUCCESS;
}
