/* cuda-sm80 backward, host side: its shapes, workspace and dQ slices; the launch through every CUDA
 * backward's host side (cuda_bwd_host.h) to the head dim's instance. */
#include <cuda_runtime.h>
#include <string.h>

#include "bwd_problem.h"
#include "cuda_bwd_host.h"
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

/* Workspace row slots (a multiple of 64 rows a (batch, head), so every part is 256-byte aligned). */
static size_t bwd_rows(const pa_bwd_problem *bp) { return pa_cuda_bwd_slots(bp, bwd_sqp(&bp->fwd)); }

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
    return pa_cuda_bwd_ws_bytes(bp, bwd_sqp(&bp->fwd), pa_sm80_bwd_splits(bp));
}

/* The head dim's instance (ctx unused). */
static cudaError_t sm80_bwd_run(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *, cudaStream_t st)
{
    const int d = a->f.dqk;
    return d == 64    ? sm80_bwd_run_d64(a, bf16, max_sk, st)
           : d == 96  ? sm80_bwd_run_d96(a, bf16, max_sk, st)
           : d == 128 ? sm80_bwd_run_d128(a, bf16, max_sk, st)
                      : sm80_bwd_run_d256(a, bf16, max_sk, st);
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
    int optin = 0, bm = 0;
    if (!pa_cuda_device_smem(&optin, NULL) || !(bm = pa_sm80_bwd_rows((int)d, optin)))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80 backward: shared memory for no shape");
    return pa_cuda_bwd_launch(bp, "cuda-sm80 backward", bwd_sqp(pb), bm, pa_sm80_bwd_splits(bp), sm80_bwd_run, NULL,
                              stream, err, err_len);
}
