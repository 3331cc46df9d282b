/* cuda-sm80 backward, host side: the argument struct, the workspace (the caller's, else a
 * stream-ordered allocation) and the launches of the head dim's instance. */
#include <cuda_runtime.h>
#include <string.h>

#include "bwd_problem.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm80_bwd.h"

cudaError_t sm80_bwd_run_d64(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d96(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d128(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d256(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);

/* Row slots per (batch, query head): the longest sequence, rounded up to whole row blocks of every
 * shape pa_sm80_bwd_rows may select, so that the workspace size does not depend on the device. */
static int64_t bwd_sqp(const pa_problem *pb)
{
    const int64_t bm = PA_SM80_BWD_BM_MAX(pb->p.head_dim_qk);
    return (pb->max_seqlen_q + bm - 1) / bm * bm;
}

extern "C" int pa_sm80_bwd_rows(int d, int optin)
{
    const int bm = PA_SM80_BWD_BM_MAX(d);
    return optin >= PA_SM80_BWD_SMEM(d, bm) ? bm : optin >= PA_SM80_BWD_SMEM(d, 64) ? 64 : 0;
}

/* Floats of each part: LSE_2 and D (rows each), then the dQ slices (splits x rows x D). Rows are a
 * multiple of 64, so every part starts 256-byte aligned. */
static size_t bwd_rows(const pa_bwd_problem *bp)
{
    return (size_t)bp->fwd.p.batch * (size_t)bp->fwd.p.heads_q * (size_t)bwd_sqp(&bp->fwd);
}

/* Deterministic: one dQ slice per group of key blocks, as many groups as it takes to give every SM a
 * CTA (the grid is slices x KV heads x batch), capped by the key blocks, PA_SM80_BWD_MAX_SPLITS and
 * PA_SM80_BWD_SPLIT_BYTES of slices beyond the first. */
extern "C" int pa_sm80_bwd_splits(const pa_bwd_problem *bp)
{
    if (!bp->deterministic) return 1;
    const pa_problem *pb = &bp->fwd;
    int sms = 0;
    if (!pa_cuda_device_info(NULL, NULL, &sms, NULL, 0) || sms < 1) sms = 1;
    const int64_t ctas = pb->p.batch * pb->p.heads_kv, bn = PA_SM80_BWD_BN(pb->p.head_dim_qk),
                  nkb = (pb->max_seqlen_k + bn - 1) / bn;
    const double slice = (double)bwd_rows(bp) * (double)pb->p.head_dim_qk * 4;
    int64_t s = ctas > 0 ? (sms + ctas - 1) / ctas : 1;
    if (s > nkb) s = nkb;
    if (s > PA_SM80_BWD_MAX_SPLITS) s = PA_SM80_BWD_MAX_SPLITS;
    while (s > 1 && (double)(s - 1) * slice > (double)PA_SM80_BWD_SPLIT_BYTES) s--;
    return s < 1 ? 1 : (int)s;
}

extern "C" size_t pa_sm80_bwd_workspace(const pa_bwd_problem *bp)
{
    const size_t rows = bwd_rows(bp);
    return rows * 4 * (2 + (size_t)pa_sm80_bwd_splits(bp) * (size_t)bp->fwd.p.head_dim_qk);
}

static void bwd_strides(int64_t dst[3], const portattn_tensor_t *t)
{
    for (int i = 0; i < 3; ++i) dst[i] = t->stride[i];
}

extern "C" portattn_status_t pa_sm80_bwd_launch(const pa_bwd_problem *bp, void *stream, char *err, size_t err_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d || !PA_SM80_BWD_HAS_DIM(d) ||
        (p->dtype != PORTATTN_DTYPE_F16 && p->dtype != PORTATTN_DTYPE_BF16))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80 backward: call outside the instances");
    if (p->batch <= 0) return PORTATTN_SUCCESS;

    pa_bwd_args a;
    memset(&a, 0, sizeof a);
    portattn_status_t s = pa_fwd_fill_args(pb, &a.f, err, err_len);
    if (s) return s;
    a.dout = bp->dout.data, a.dq = bp->dq.data, a.dk = bp->dk.data, a.dv = bp->dv.data;
    bwd_strides(a.dos, &bp->dout), bwd_strides(a.dqs, &bp->dq);
    bwd_strides(a.dks, &bp->dk), bwd_strides(a.dvs, &bp->dv);
    a.sqp = (int)bwd_sqp(pb), a.max_sq = (int)pb->max_seqlen_q;
    int optin = 0;
    if (!pa_cuda_device_smem(&optin, NULL) || !(a.bm = pa_sm80_bwd_rows((int)d, optin)))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80 backward: shared memory for no shape");
    a.splits = pa_sm80_bwd_splits(bp), a.deterministic = bp->deterministic != 0;
    a.scale = pb->scale;

    cudaStream_t st = (cudaStream_t)stream;
    const size_t rows = bwd_rows(bp), need = pa_sm80_bwd_workspace(bp);
    void *ws = p->workspace, *own = NULL;
    if (need && ws && p->workspace_size < need)
        return pa_fmt(err, err_len, PORTATTN_ERROR_INVALID_ARGUMENT,
                      "workspace_size = %zu, this call needs %zu (portattn_backward_workspace_size)", p->workspace_size,
                      need);
    cudaError_t e = cudaSuccess;
    if (need && !ws) {
        if ((e = cudaMallocAsync(&own, need, st)) != cudaSuccess) {
            (void)cudaGetLastError();
            return pa_cuda_status(e, "cuda-sm80 backward: workspace allocation", err, err_len);
        }
        ws = own;
    }
    if (need) {
        a.lse2 = (float *)ws, a.delta = a.lse2 + rows, a.dq_acc = a.delta + rows;
        e = cudaMemsetAsync(a.dq_acc, 0, rows * 4 * (size_t)a.splits * (size_t)d, st);
    }
    if (e == cudaSuccess) {
        const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
        e = d == 64    ? sm80_bwd_run_d64(&a, bf16, pb->max_seqlen_k, st)
            : d == 96  ? sm80_bwd_run_d96(&a, bf16, pb->max_seqlen_k, st)
            : d == 128 ? sm80_bwd_run_d128(&a, bf16, pb->max_seqlen_k, st)
                       : sm80_bwd_run_d256(&a, bf16, pb->max_seqlen_k, st);
    }
    if (own) {
        cudaError_t f = cudaFreeAsync(own, st);
        if (e == cudaSuccess) e = f;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pa_cuda_status(e, "cuda-sm80 backward: kernel launch", err, err_len);
    }
    return PORTATTN_SUCCESS;
}
