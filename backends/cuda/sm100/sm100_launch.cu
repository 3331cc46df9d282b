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

typedef cudaError_t (*sm100_fn)(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const CUtensorMap *,
                                const pa_fwd_args *, int, int64_t, cudaStream_t);
#define SM100_PROTO(Y, D)                                                                                    \
    cudaError_t sm100_launch_d##D(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, \
                                  const pa_fwd_args *, int, int64_t, cudaStream_t);
PA_SM100_LIST(SM100_PROTO, _)
#undef SM100_PROTO
/* The instance table and, in the same row order, the instance files' entry points (sm100_desc.h). */
#define SM100_ROW(Y, D) {Y, D, PA_SM100_QT * PA_SM100_BM, PA_SM100_BN, PA_SM100_WARPS, PA_SM100_STAGES(D), PA_SM100_SMEM(D)},
static const pa_cuda_inst insts[] = {PA_SM100_LIST(SM100_ROW, "sm100")};
#undef SM100_ROW
#define SM100_FN(Y, D) sm100_launch_d##D,
static const sm100_fn fns[] = {PA_SM100_LIST(SM100_FN, _)};
#undef SM100_FN
PA_CUDA_INST_FNS_OK(insts, fns);

extern "C" const pa_cuda_inst *pa_sm100_instance(int64_t dqk, int64_t dv)
{
    for (int i = 0; i < PA_CUDA_ROWS(insts); ++i)
        if (dqk == insts[i].d && dv == insts[i].d) return &insts[i];
    return NULL;
}

extern "C" portattn_status_t pa_cuda_sm100_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                                 size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_cuda_inst *in = (const pa_cuda_inst *)ch->inst; /* supports() checked the call against it */
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    pa_fwd_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;
    CUtensorMap tq, tk, tv, to; /* to: O for the epilogue's TMA stores, boxes as Q's */
    s = pa_tmap_fwd(pb, "cuda-sm100", PA_SM100_BM, 1, PA_SM100_BN, &tq, &tk, &tv, &to, err, err_len);
    if (s) return s;
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    const cudaStream_t st = (cudaStream_t)stream;
    const cudaError_t e = fns[in - insts](&tq, &tk, &tv, &to, &a, bf16, pb->max_seqlen_q, st);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm100: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
