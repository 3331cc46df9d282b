/* cuda-generic's backward entry points: every dtype and feature, head dims up to 256, device memory. */
#include "backend.h"
#include "bwd_problem.h"
#include "cuda_host.h"
#include "generic_launch.h"

#define GENERIC_BWD_DMAX 256

static int generic_bwd_supports(const pa_bwd_problem *bp, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    if (p->head_dim_qk > GENERIC_BWD_DMAX || p->head_dim_v > GENERIC_BWD_DMAX) {
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "head dims %lld/%lld over %d", (long long)p->head_dim_qk,
               (long long)p->head_dim_v, GENERIC_BWD_DMAX);
        return 0;
    }
    if (p->heads_q > INT32_MAX) { /* the kernels do their head math in 32 bits */
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "heads_q %lld over 2^31-1", (long long)p->heads_q);
        return 0;
    }
    /* Every pointer the kernels may dereference lives on the device; validation made those with
     * elements non-NULL, and NULL ones are never read. */
    const struct { const void *ptr; const char *what; } need[] = {
        {p->q.data, "q.data"}, {p->k.data, "k.data"}, {p->v.data, "v.data"}, {p->o.data, "o.data"},
        {bp->dout.data, "dout.data"}, {p->lse, "lse"}, {bp->dq.data, "dq.data"}, {bp->dk.data, "dk.data"},
        {bp->dv.data, "dv.data"}, {p->cu_seqlens_q, "cu_seqlens_q"}, {p->cu_seqlens_k, "cu_seqlens_k"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
        if (need[i].ptr && !pa_cuda_ptr_check(need[i].ptr, need[i].what, why, why_len)) return 0;
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "generic-bwd<%s>", pa_dtype_name(p->dtype));
    return 1;
}

static portattn_status_t generic_bwd_run(const pa_bwd_problem *bp, void *stream, char *err, size_t err_len)
{
    return pa_cuda_generic_bwd_launch(bp, stream, err, err_len);
}

const pa_bwd_backend pa_bwd_backend_cuda_generic = {PORTATTN_BACKEND_CUDA_GENERIC, generic_bwd_supports,
                                                    generic_bwd_run, NULL, NULL};
