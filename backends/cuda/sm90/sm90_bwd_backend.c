/* cuda-sm90's backward entry points: which calls the wgmma backward (sm90_bwd_kernel.cuh) takes, and
 * why not otherwise. Its case table passes on the H200 (2026-12-05), but this first version is not yet
 * faster than cuda-sm80's backward (d64 the same, d128 12-21% slower), so automatic selection passes it
 * over (forced_only) and backwards keep going to cuda-sm80; calls forced to cuda-sm90 run it. */
#include <stdint.h>

#include "backend.h"
#include "bwd_problem.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm90_bwd.h"
#include "sm90_launch.h" /* PA_SM90_MAX_SEQ */

/* Dqk == Dv of an instance only. */
static int bwd_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_cuda_bwd_dims_ok(pb, PA_SM90_BWD_HAS_DIM(pb->p.head_dim_qk), "64, 128", why, why_len);
}

/* The wgmma backward: dense batches (no varlen yet), int32 rows, KV heads and batch over grid y and z. */
static const pa_family sm90_bwd_family = {
    .dtypes = PA_DTYPES_16, .cc = {90}, .code = "sm_90a code", .head_dims = bwd_dims, .refuses = PA_REFUSES_VARLEN,
    .min_queries = 1, .fewer_go = "cuda-sm80's backward takes them", .needs_keys = 1, .max_seqlen = PA_SM90_MAX_SEQ,
    .grid_dim = 65535,
};

static int sm90_bwd_supports(const pa_bwd_problem *bp, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const pa_problem *pb = &bp->fwd;
    if (!pa_cuda_family_ok(&sm90_bwd_family, pb, why, why_len)) return 0;
    int transform, softcap;
    float mult, pre, post;
    if (!pa_fwd_score_map(pb, &transform, &softcap, &mult, &pre, &post)) return pa_fwd_score_map_ok(pb, why, why_len);
    if (transform) return PA_REFUSE("softcap or a negative scale: not yet in this kernel (cuda-sm80's backward takes it)");
    if (bp->deterministic) return PA_REFUSE("deterministic mode: its dQ sums are atomics (cuda-sm80's backward has the mode)");
    const int d = (int)pb->p.head_dim_qk;
    if (!pa_cuda_smem_ok("sm90-bwd", d, PA_SM90_BWD_SMEM(d), why, why_len) || !pa_tma_strides_ok(pb, 0, why, why_len) ||
        !pa_cuda_bwd_tensors_ok(bp, why, why_len))
        return 0;
    if (kernel && kernel_len)
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "sm90-bwd<%s,d%d,%dx%d>", pa_dtype_name(pb->p.dtype), d, PA_SM90_BWD_BM,
               PA_SM90_BWD_BN);
    return 1;
}

static portattn_status_t sm90_bwd_run(const pa_bwd_problem *bp, void *stream, char *err, size_t err_len)
{
    return pa_sm90_bwd_launch(bp, stream, err, err_len);
}

static size_t sm90_bwd_workspace(const pa_bwd_problem *bp) { return pa_sm90_bwd_workspace(bp); }

const pa_bwd_backend pa_bwd_backend_cuda_sm90 = {PORTATTN_BACKEND_CUDA_SM90, sm90_bwd_supports, sm90_bwd_run,
                                                 sm90_bwd_workspace,
                                                 "first version, not yet faster than cuda-sm80's backward"};
