/* KV-cache append: common/gen_append_body.h's pa_gen_append_body (one warp per (sequence, new token,
 * KV head) row, lanes over the head dims), launched on the caller's stream before the attention. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_append.h"
#include "cuda_host.h"
#include "gen_append_body.h"

#define APP_WARPS 4
#define APP_THREADS (APP_WARPS * 32)
#define APP_MAX_BLOCKS 65535 /* enough to fill any GPU; the grid-stride loop covers the rest */

template <typename T>
__global__ void __launch_bounds__(APP_THREADS) pa_append_kernel(const pa_fwd_args a)
{
    pa_gen_append_body<T, 32, APP_WARPS>(a);
}

extern "C" portattn_status_t pa_cuda_append(const pa_problem *pb, const pa_fwd_args *a, void *stream, char *err,
                                           size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (pb->seqlen_new <= 0 || p->batch <= 0 || p->heads_kv <= 0) return PORTATTN_SUCCESS; /* nothing to copy */
    if (!p->seqused_k || !p->k_new.data || !p->v_new.data) /* the front end requires all three */
        return pa_fmt(err, err_len, PORTATTN_ERROR_INTERNAL, "cuda append: seqlen_new = %lld without %s",
                      (long long)pb->seqlen_new, !p->seqused_k ? "seqused_k" : "k_new/v_new");
    const void *fn = NULL;
    switch (pa_dtype_size(p->dtype)) {
    case 2: fn = (const void *)pa_append_kernel<uint16_t>; break;
    case 4: fn = (const void *)pa_append_kernel<uint32_t>; break;
    default:
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda append: dtype %d not supported", (int)p->dtype);
    }
    const int64_t rows = p->batch * pb->seqlen_new * p->heads_kv;
    const int64_t blocks = rows / APP_WARPS + 1; /* no rounding overflow near INT64_MAX */
    const dim3 grid((unsigned)(blocks < APP_MAX_BLOCKS ? blocks : APP_MAX_BLOCKS));
    /* cudaLaunchKernel's own status, so that an error the caller left pending in the runtime is not
     * reported as ours (nor cleared: cuda_host.h, pa_cuda_drop_error). */
    pa_fwd_args arg = *a;
    void *args[] = {&arg};
    cudaError_t e = cudaLaunchKernel(fn, grid, dim3(APP_THREADS), args, 0, (cudaStream_t)stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda append: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
