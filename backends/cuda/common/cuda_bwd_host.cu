/* cuda_bwd_host.h: the host side every CUDA backward shares. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "cuda_bwd_host.h"
#include "cuda_host.h"
#include "fwd_resolve.h"

extern "C" size_t pa_cuda_bwd_slots(const pa_bwd_problem *bp, int64_t sqp)
{
    return (size_t)bp->fwd.p.batch * (size_t)bp->fwd.p.heads_q * (size_t)sqp;
}

extern "C" size_t pa_cuda_bwd_ws_bytes(const pa_bwd_problem *bp, int64_t sqp, int splits)
{
    return pa_cuda_bwd_slots(bp, sqp) * 4 * (2 + (size_t)splits * (size_t)bp->fwd.p.head_dim_qk);
}

static void bwd_strides(int64_t dst[3], const portattn_tensor_t *t)
{
    for (int i = 0; i < 3; ++i) dst[i] = t->stride[i];
}

extern "C" portattn_status_t pa_cuda_bwd_launch(const pa_bwd_problem *bp, const char *who, int64_t sqp, int bm,
                                                int splits, pa_cuda_bwd_run_fn run, const void *ctx, void *stream,
                                                char *err, size_t err_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    pa_bwd_args a;
    memset(&a, 0, sizeof a);
    portattn_status_t s = pa_fwd_fill_args(pb, &a.f, err, err_len);
    if (s) return s;
    a.dout = bp->dout.data, a.dq = bp->dq.data, a.dk = bp->dk.data, a.dv = bp->dv.data;
    bwd_strides(a.dos, &bp->dout), bwd_strides(a.dqs, &bp->dq);
    bwd_strides(a.dks, &bp->dk), bwd_strides(a.dvs, &bp->dv);
    a.sqp = (int)sqp, a.max_sq = (int)pb->max_seqlen_q, a.bm = bm;
    a.splits = splits, a.deterministic = bp->deterministic != 0, a.scale = pb->scale;

    cudaStream_t st = (cudaStream_t)stream;
    const size_t slots = pa_cuda_bwd_slots(bp, sqp), need = pa_cuda_bwd_ws_bytes(bp, sqp, splits);
    void *ws = p->workspace, *own = NULL;
    char what[96];
    if (need && ws && p->workspace_size < need)
        return pa_fmt(err, err_len, PORTATTN_ERROR_INVALID_ARGUMENT,
                      "workspace_size = %zu, this call needs %zu (portattn_backward_workspace_size)", p->workspace_size,
                      need);
    cudaError_t e = cudaSuccess;
    if (need && !ws) {
        if ((e = cudaMallocAsync(&own, need, st)) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(what, sizeof what, "%s: workspace allocation", who);
            return pa_cuda_status(e, what, err, err_len);
        }
        ws = own;
    }
    if (need) {
        a.lse2 = (float *)ws, a.delta = a.lse2 + slots, a.dq_acc = a.delta + slots;
        e = cudaMemsetAsync(a.dq_acc, 0, slots * 4 * (size_t)splits * (size_t)p->head_dim_qk, st);
    }
    if (e == cudaSuccess) e = run(&a, p->dtype == PORTATTN_DTYPE_BF16, pb->max_seqlen_k, ctx, st);
    if (own) {
        cudaError_t f = cudaFreeAsync(own, st);
        if (e == cudaSuccess) e = f;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(what, sizeof what, "%s: kernel launch", who);
        return pa_cuda_status(e, what, err, err_len);
    }
    return PORTATTN_SUCCESS;
}
