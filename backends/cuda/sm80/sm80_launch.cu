/* cuda-sm80 launcher: turns the validated problem into the kernel's argument struct and picks the
 * instance for (head dim, dtype). Called by the backend table (sm80_backend.c) after supports(). */
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include "cuda_host.h"
#include "sm80_fwd_kernel.cuh"
#include "sm80_launch.h"

/* A window side at least as long as both sequences together cuts nothing: make it unbounded, so
 * that what remains fits the kernel's int32 row arithmetic. */
static int sm80_window(int64_t w, int64_t sq, int64_t sk) { return w < 0 || w >= sq + sk ? -1 : (int)w; }

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

/* Base-2 logits: exp(x * scale) = 2^(x * scale * log2 e). The FFMA form needs a positive
 * multiplier (the row max is taken before it); softcap and negative scales rewrite the scores
 * first and then use multiplier 1. */
extern "C" int pa_sm80_score_map(const pa_problem *pb, int *transform, int *softcap, float *mult, float *pre_mul,
                                 float *post_mul)
{
    const double log2e = 1.4426950408889634, cap = pb->p.softcap;
    *softcap = cap > 0.0;
    *transform = *softcap || pb->scale < 0.f;
    *mult = *transform ? 1.f : (float)(pb->scale * log2e);
    *pre_mul = *softcap ? (float)((double)pb->scale / cap) : (float)(pb->scale * log2e);
    *post_mul = *softcap ? (float)(cap * log2e) : 1.f;
    return isfinite(*mult) && isfinite(*pre_mul) && isfinite(*post_mul) && *mult != 0.f;
}

extern "C" int pa_sm80_score_map_ok(const pa_problem *pb, char *why, size_t why_len)
{
    int transform, softcap;
    float mult, pre, post;
    if (pa_sm80_score_map(pb, &transform, &softcap, &mult, &pre, &post)) return 1;
    pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "scale %g / softcap %g out of range", (double)pb->scale,
           (double)pb->p.softcap);
    return 0;
}

/* The kernel argument struct of a validated problem (shared with cuda-sm90). */
portattn_status_t sm80_fill_args(const pa_problem *pb, sm80_args *a, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    memset(a, 0, sizeof *a);
    a->q = p->q.data, a->k = p->k.data, a->v = p->v.data, a->o = p->o.data, a->lse = p->lse;
    if (pb->varlen) a->cu_q = p->cu_seqlens_q, a->cu_k = p->cu_seqlens_k;
    for (int i = 0; i < 3; ++i) {
        a->qs[i] = p->q.stride[i], a->ks[i] = p->k.stride[i], a->vs[i] = p->v.stride[i], a->os[i] = p->o.stride[i];
        a->ls[i] = p->lse_stride[i];
    }
    a->batch = (int)p->batch, a->heads = (int)p->heads_q, a->group = (int)pb->group;
    a->seqlen_q = (int)p->seqlen_q, a->seqlen_k = (int)p->seqlen_k;
    a->wl = sm80_window(pb->window_left, p->seqlen_q, p->seqlen_k);
    a->wr = sm80_window(pb->window_right, p->seqlen_q, p->seqlen_k);
    if (!pa_sm80_score_map(pb, &a->transform, &a->softcap, &a->mult, &a->pre_mul, &a->post_mul))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "scale %g / softcap %g out of range",
                      (double)pb->scale, (double)p->softcap);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_sm80_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d || !PA_SM80_HAS_DIM(d) ||
        (p->dtype != PORTATTN_DTYPE_F16 && p->dtype != PORTATTN_DTYPE_BF16) || p->seqlen_q > PA_SM80_MAX_SEQ ||
        p->seqlen_k > PA_SM80_MAX_SEQ || p->heads_q > INT32_MAX || p->batch > INT32_MAX ||
        p->batch * p->heads_q > PA_SM80_MAX_BH)
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80: call outside the instances");
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */

    sm80_args a;
    portattn_status_t s = sm80_fill_args(pb, &a, err, err_len);
    if (s) return s;

    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e;
    switch (d) {
    case 64: e = sm80_launch_d64(&a, bf16, pb->max_seqlen_q, st); break;
    case 96: e = sm80_launch_d96(&a, bf16, pb->max_seqlen_q, st); break;
    case 128: e = sm80_launch_d128(&a, bf16, pb->max_seqlen_q, st); break;
    default: {
        const int bm = pa_sm80_block_rows(256);
        if (bm == 0) return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-sm80: cannot read the device");
        e = bm == PA_SM80_BM(256) ? sm80_launch_d256(&a, bf16, pb->max_seqlen_q, st)
                                  : sm80_launch_d256_small(&a, bf16, pb->max_seqlen_q, st);
        break;
    }
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the runtime's slot; the status carries the error */
        return pa_cuda_status(e, "cuda-sm80: kernel launch", err, err_len);
    }
    return PORTATTN_SUCCESS;
}
