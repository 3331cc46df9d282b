/* cuda-sm90 backward, host side: the tensor maps of Q, K, V (pa_tmap_fwd) and dO, then the launch
 * through every CUDA backward's host side (cuda_bwd_host.h) to the head dim's instance. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include "bwd_problem.h"
#include "cuda_bwd_host.h"
#include "cuda_host.h"
#include "cuda_tmap.cuh"
#include "sm90_bwd.h"

cudaError_t sm90_bwd_run_d64(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *ctx, cudaStream_t st);
cudaError_t sm90_bwd_run_d128(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *ctx, cudaStream_t st);

/* Row slots per (batch, query head): the longest sequence in whole 64-row items. */
static int64_t bwd_sqp(const pa_problem *pb)
{
    return (pb->max_seqlen_q + PA_SM90_BWD_BM - 1) / PA_SM90_BWD_BM * PA_SM90_BWD_BM;
}

extern "C" size_t pa_sm90_bwd_workspace(const pa_bwd_problem *bp) { return pa_cuda_bwd_ws_bytes(bp, bwd_sqp(&bp->fwd), 1); }

static cudaError_t sm90_bwd_run(const pa_bwd_args *a, int bf16, int64_t max_sk, const void *ctx, cudaStream_t st)
{
    return a->f.dqk == 64 ? sm90_bwd_run_d64(a, bf16, max_sk, ctx, st) : sm90_bwd_run_d128(a, bf16, max_sk, ctx, st);
}

extern "C" portattn_status_t pa_sm90_bwd_launch(const pa_bwd_problem *bp, void *stream, char *err, size_t err_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write (supports() wants keys) */
    CUtensorMap maps[4]; /* Q, K, V, dO */
    portattn_status_t s = pa_tmap_fwd(pb, "cuda-sm90 backward", PA_SM90_BWD_BM, 1, PA_SM90_BWD_BN, &maps[0], &maps[1],
                                      &maps[2], NULL, err, err_len);
    if (s) return s;
    const CUresult r = pa_tmap_bshd(pa_tmap_encoder(), &maps[3], bp->dout.data, p->dtype == PORTATTN_DTYPE_BF16,
                                    p->batch, p->seqlen_q, p->heads_q, p->head_dim_v, bp->dout.stride, PA_SM90_BWD_BM, 1);
    if (r != CUDA_SUCCESS)
        return pa_cuda_status((cudaError_t)r, "cuda-sm90 backward: cuTensorMapEncodeTiled (dout)", err, err_len);
    return pa_cuda_bwd_launch(bp, "cuda-sm90 backward", bwd_sqp(pb), PA_SM90_BWD_BM, 1, sm90_bwd_run, maps, stream, err,
                              err_len);
}
