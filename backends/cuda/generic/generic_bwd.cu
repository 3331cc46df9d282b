/* cuda-generic backward: launches the two kernels of generic_bwd_kernel.cuh on the caller's stream. */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdint.h>

#include "cuda_host.h"
#include "generic_bwd_kernel.cuh"
#include "generic_launch.h"

static dim3 gb_grid(int64_t rows, int64_t heads, int64_t batch)
{
    const int64_t blocks = (rows + GB_WARPS - 1) / GB_WARPS;
    return dim3((unsigned)(blocks < INT_MAX ? blocks : INT_MAX), (unsigned)(heads < 65535 ? heads : 65535),
                (unsigned)(batch < 65535 ? batch : 65535));
}

template <typename T>
static portattn_status_t gb_launch(const pa_bwd_problem *bp, cudaStream_t stream, char *err, size_t err_len)
{
    pa_bwd_problem arg = *bp;
    float inv_cap = bp->fwd.p.softcap > 0.f ? 1.f / bp->fwd.p.softcap : 0.f;
    void *args[] = {&arg, &inv_cap};
    const pa_problem *pb = &bp->fwd;
    cudaError_t e = cudaSuccess;
    if (pb->max_seqlen_q > 0) /* cudaLaunchKernel's own status: a stale error is not ours */
        e = cudaLaunchKernel((const void *)gen_bwd_dq<T>, gb_grid(pb->max_seqlen_q, pb->p.heads_q, pb->p.batch),
                             dim3(GB_THREADS), args, 0, stream);
    if (e == cudaSuccess && pb->max_seqlen_k > 0)
        e = cudaLaunchKernel((const void *)gen_bwd_dkdv<T>, gb_grid(pb->max_seqlen_k, pb->p.heads_kv, pb->p.batch),
                             dim3(GB_THREADS), args, 0, stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-generic backward: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_generic_bwd_launch(const pa_bwd_problem *bp, void *stream, char *err,
                                                         size_t err_len)
{
    const portattn_fwd_params_t *p = &bp->fwd.p;
    if (p->head_dim_qk < 1 || p->head_dim_qk > GB_DMAX || p->head_dim_v < 1 || p->head_dim_v > GB_DMAX ||
        p->heads_q > INT32_MAX)
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic backward: head dims %lld/%lld "
                      "outside 1..%d or heads_q %lld over 2^31-1", (long long)p->head_dim_qk, (long long)p->head_dim_v,
                      GB_DMAX, (long long)p->heads_q);
    if (p->batch <= 0) return PORTATTN_SUCCESS;
    cudaStream_t st = (cudaStream_t)stream;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F16: return gb_launch<__half>(bp, st, err, err_len);
    case PORTATTN_DTYPE_BF16: return gb_launch<__nv_bfloat16>(bp, st, err, err_len);
    case PORTATTN_DTYPE_F32: return gb_launch<float>(bp, st, err, err_len);
    default:
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic backward: dtype %d not supported",
                      (int)p->dtype);
    }
}
