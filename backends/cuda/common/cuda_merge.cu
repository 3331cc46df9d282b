/* portattn_merge on a CUDA device: picks the kernel instance for the two dtypes and launches it. */
#include <cuda_runtime.h>

#include "cuda_host.h"
#include "cuda_merge_kernel.cuh"

template <typename TO>
static const void *merge_kernel_for(portattn_dtype_t part)
{
    switch (part) {
    case PORTATTN_DTYPE_F32: return (const void *)pa_merge_kernel<TO, float>;
    case PORTATTN_DTYPE_F16: return (const void *)pa_merge_kernel<TO, __half>;
    case PORTATTN_DTYPE_BF16: return (const void *)pa_merge_kernel<TO, __nv_bfloat16>;
    }
    return NULL;
}

extern "C" portattn_status_t pa_cuda_merge(const pa_merge_problem *mp, void *stream, char *err, size_t err_len)
{
    const portattn_merge_params_t *p = &mp->p;
    const void *fn = NULL;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F32: fn = merge_kernel_for<float>(p->dtype_part); break;
    case PORTATTN_DTYPE_F16: fn = merge_kernel_for<__half>(p->dtype_part); break;
    case PORTATTN_DTYPE_BF16: fn = merge_kernel_for<__nv_bfloat16>(p->dtype_part); break;
    }
    if (!fn) /* the front end validated both dtypes */
        return pa_fmt(err, err_len, PORTATTN_ERROR_INTERNAL, "cuda merge: dtypes %d/%d", (int)p->dtype,
                      (int)p->dtype_part);
    const int64_t rows = p->batch * p->seqlen_q * p->heads_q;
    const int64_t blocks = rows / MRG_WARPS + 1;
    const dim3 grid((unsigned)(blocks < MRG_MAX_BLOCKS ? blocks : MRG_MAX_BLOCKS));
    portattn_merge_params_t arg = *p;
    void *args[] = {&arg};
    /* cudaLaunchKernel's own status: an error the caller left pending is neither reported nor cleared. */
    cudaError_t e = cudaLaunchKernel(fn, grid, dim3(MRG_THREADS), args, 0, (cudaStream_t)stream);
    return e == cudaSuccess ? PORTATTN_SUCCESS : pa_cuda_status(e, "cuda merge: kernel launch", err, err_len);
}
