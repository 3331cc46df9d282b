/* cuda-sm80 launcher: turns the validated problem into the kernel's argument struct and picks the
 * instance for (head dim, dtype). Called by the backend table (sm80_backend.c) after supports(). */
#include <cuda_runtime.h>
#include <math.h>

#include "cuda_append.h"
#include "cuda_host.h"
#include "sm80_fwd_kernel.cuh"
#include "sm80_launch.h"

/* d256: the 64-row shape where two of its CTAs (plus the 1 KB the runtime reserves for each) fit
 * one SM's shared memory, or where the 128-row shape does not fit a block; else the 128-row one. */
extern "C" int pa_sm80_block_rows(int d)
{
    if (d != 256) return PA_SM80_BM(d);
    int per_sm = 0, optin = 0;
    if (!pa_cuda_device_smem(&optin, &per_sm)) return 0;
    return per_sm >= 2 * (PA_SM80_D256_SMALL_SMEM + 1024) || optin < PA_SM80_SMEM_BYTES(256) ? PA_SM80_D256_SMALL_BM
                                                                                             : PA_SM80_BM(256);
}

/* The instance tables and, in the same row order, the instance files' entry points: both from
 * sm80_instances.h. Each row's shared memory is its default shape's (d256: the 128-row one). */
#define SM80_FWD_ROW(Y, D, BM, BN, W, ST, SC) {Y, D, BM, BN, W, ST, PA_SM80_SMEM_SHAPE(D, BM, BN, ST)},
#define SM80_PAGED_ROW(Y, D) {Y, D, PA_SM80_BM(D), PA_SM80_BN(D), PA_SM80_WARPS(D), PA_SM80_STAGES(D), PA_SM80_SMEM_BYTES(D)},
static const pa_cuda_inst fwd_insts[] = {PA_SM80_FWD_LIST(SM80_FWD_ROW, "sm80")};
static const pa_cuda_inst paged_insts[] = {PA_SM80_PAGED_LIST(SM80_PAGED_ROW, "sm80-paged")};
#undef SM80_FWD_ROW
#undef SM80_PAGED_ROW
typedef cudaError_t (*sm80_fwd_fn)(const sm80_args *, int, int64_t, cudaStream_t);
#define PA_X(D) sm80_launch_d##D,
static const sm80_fwd_fn sm80_fwd_fns[] = {PA_SM80_DIMS(PA_X)};
#undef PA_X
#define PA_X(D) sm80_launch_paged_d##D,
static const sm80_fwd_fn sm80_paged_fns[] = {PA_SM80_PAGED_DIMS(PA_X)};
#undef PA_X
PA_CUDA_INST_FNS_OK(fwd_insts, sm80_fwd_fns);
PA_CUDA_INST_FNS_OK(paged_insts, sm80_paged_fns);

extern "C" const pa_cuda_inst *pa_sm80_instance(const pa_problem *pb, char *why, size_t why_len)
{
    if (pb->kv_cache)
        return pa_cuda_inst_ok(paged_insts, PA_CUDA_ROWS(paged_insts), pb, "paged prefill (KV cache)", why, why_len);
    return pa_cuda_inst_ok(fwd_insts, PA_CUDA_ROWS(fwd_insts), pb, NULL, why, why_len);
}

/* A KV-cache call: the new tokens go into the cache first (same stream), then the paged instance. */
static portattn_status_t sm80_launch_paged(const pa_problem *pb, const sm80_args *a, const pa_cuda_inst *in, int bf16,
                                           cudaStream_t st, char *err, size_t err_len)
{
    portattn_status_t s = pa_cuda_append(pb, a, st, err, err_len);
    if (s) return s;
    const cudaError_t e = sm80_paged_fns[in - paged_insts](a, bf16, pb->max_seqlen_q, st);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm80 paged: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_sm80_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                                size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_cuda_inst *in = (const pa_cuda_inst *)ch->inst; /* supports() checked the call against it */
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */

    sm80_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;

    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    cudaStream_t st = (cudaStream_t)stream;
    if (pb->kv_cache) return sm80_launch_paged(pb, &a, in, bf16, st, err, err_len);
    const int64_t msq = pb->max_seqlen_q;
    const cudaError_t e = in->d == 256 && ch->bm != in->bm ? sm80_launch_d256_small(&a, bf16, msq, st)
                                                           : sm80_fwd_fns[in - fwd_insts](&a, bf16, msq, st);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm80: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
