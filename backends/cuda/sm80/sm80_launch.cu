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

static const int sm80_dims[] = {
#define PA_X(d) d,
    PA_SM80_DIMS(PA_X)
#undef PA_X
};
#define SM80_NDIMS ((int)(sizeof sm80_dims / sizeof sm80_dims[0]))
static const int sm80_paged_dims[] = {
#define PA_X(d) d,
    PA_SM80_PAGED_DIMS(PA_X)
#undef PA_X
};
#define SM80_NPAGED ((int)(sizeof sm80_paged_dims / sizeof sm80_paged_dims[0]))

extern "C" int pa_sm80_dim(const pa_problem *pb)
{
    return pb->kv_cache ? pa_fwd_instance_dim(sm80_paged_dims, SM80_NPAGED, pb->p.head_dim_qk, pb->p.head_dim_v)
                        : pa_fwd_instance_dim(sm80_dims, SM80_NDIMS, pb->p.head_dim_qk, pb->p.head_dim_v);
}

extern "C" int pa_sm80_dims_ok(const pa_problem *pb, char *why, size_t why_len)
{
    return pb->kv_cache ? pa_fwd_dims_ok(sm80_paged_dims, SM80_NPAGED, pb, "paged prefill (KV cache)", why, why_len)
                        : pa_fwd_dims_ok(sm80_dims, SM80_NDIMS, pb, "cuda-sm80", why, why_len);
}

/* A KV-cache call: the new tokens go into the cache first (same stream), then the paged instance. */
static portattn_status_t sm80_launch_paged(const pa_problem *pb, const sm80_args *a, int d, int bf16,
                                           cudaStream_t st, char *err, size_t err_len)
{
    const pa_kv_args kv = pa_kv_args_of(pb);
    portattn_status_t s = pa_cuda_append(pb, st, err, err_len);
    if (s) return s;
    cudaError_t e = cudaErrorInvalidValue; /* no instance: supports() refused it first */
    switch (d) {
#define PA_X(D)                                                                                                  \
    case D: e = sm80_launch_paged_d##D(a, &kv, bf16, pb->max_seqlen_q, st); break;
        PA_SM80_PAGED_DIMS(PA_X)
#undef PA_X
    }
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm80 paged: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_sm80_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int d = pa_sm80_dim(pb);
    if (!d || (p->dtype != PORTATTN_DTYPE_F16 && p->dtype != PORTATTN_DTYPE_BF16) || p->seqlen_q > PA_SM80_MAX_SEQ ||
        p->seqlen_k > PA_SM80_MAX_SEQ || p->heads_q > INT32_MAX || p->batch > INT32_MAX ||
        p->batch * p->heads_q > PA_SM80_MAX_BH)
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80: call outside the instances");
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */

    sm80_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;

    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    cudaStream_t st = (cudaStream_t)stream;
    if (pb->kv_cache) return sm80_launch_paged(pb, &a, d, bf16, st, err, err_len);
    const int64_t msq = pb->max_seqlen_q;
    cudaError_t e;
    if (d == 256 && pa_sm80_block_rows(256) != PA_SM80_BM(256)) {
        e = sm80_launch_d256_small(&a, bf16, msq, st);
    } else {
        switch (d) {
#define PA_X(D)                                                                                                  \
    case D: e = sm80_launch_d##D(&a, bf16, msq, st); break;
            PA_SM80_DIMS(PA_X)
#undef PA_X
        default: return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80: no d%d instance", d);
        }
    }
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm80: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
