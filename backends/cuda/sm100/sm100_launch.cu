/* cuda-sm100 launcher: TMA maps of Q (boxes of 128 rows), K and V (128 keys), 64 columns each with
 * the 128-byte swizzle, then the instance for (head dim, dtype). */
#include <cuda.h>
#include <cuda_runtime.h>

#include "cuda_host.h"
#include "cuda_tmap.cuh"
#include "fwd_resolve.h"
#include "sm100_desc.h"
#include "sm100_launch.h"
#include "fwd_args.h"

cudaError_t sm100_launch_d64(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const CUtensorMap *,
                             const pa_fwd_args *, int, int64_t, cudaStream_t);
cudaError_t sm100_launch_d128(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const CUtensorMap *,
                              const pa_fwd_args *, int, int64_t, cudaStream_t);

extern "C" portattn_status_t pa_cuda_sm100_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t d = p->head_dim_qk;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    pa_fwd_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;
    CUtensorMap tq, tk, tv, to; /* to: O for the epilogue's TMA stores, boxes as Q's */
    s = pa_tmap_fwd(pb, "cuda-sm100", PA_SM100_BM, 1, PA_SM100_BN, &tq, &tk, &tv, &to, err, err_len);
    if (s) return s;
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    const cudaStream_t st = (cudaStream_t)stream;
    const cudaError_t e = d == 64 ? sm100_launch_d64(&tq, &tk, &tv, &to, &a, bf16, pb->max_seqlen_q, st)
                                  : sm100_launch_d128(&tq, &tk, &tv, &to, &a, bf16, pb->max_seqlen_q, st);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm100: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
