/* cuda-sm80's backward entry points: which calls the mma.sync backward takes, and why not otherwise
 * (the selector then falls back to cuda-generic and shows the reason in the "which kernel" query). */
#include <stdint.h>

#include "backend.h"
#include "bwd_problem.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm80_bwd.h"

/* Dqk == Dv of an instance only. */
static int bwd_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_cuda_bwd_dims_ok(pb, PA_SM80_BWD_HAS_DIM(pb->p.head_dim_qk), "64, 96, 128, 256", why, why_len);
}

/* The mma.sync backward (sm80_bwd.h), on the backward's forward problem: int32 rows inside the
 * kernels, batch and query heads over grid y and z. */
static const pa_family sm80_bwd_family = {
    .dtypes = PA_DTYPES_16, .cc = {80}, .cc_newer = 1, .head_dims = bwd_dims, .max_seqlen = (1 << 30) - 1,
    .grid_dim = 65535,
};

static int sm80_bwd_supports(const pa_bwd_problem *bp, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    if (!pa_cuda_family_ok(&sm80_bwd_family, &bp->fwd, why, why_len) || !pa_fwd_score_map_ok(&bp->fwd, why, why_len))
        return 0;
    /* the 64-row shape is the smallest; pa_sm80_bwd_rows takes the largest that fits */
    const int d = (int)bp->fwd.p.head_dim_qk;
    if (!pa_cuda_smem_ok("sm80-bwd", d, PA_SM80_BWD_SMEM(d, 64), why, why_len)) return 0;
    int optin = 0;
    pa_cuda_device_smem(&optin, NULL); /* read by pa_cuda_smem_ok just now */
    const int bm = pa_sm80_bwd_rows(d, optin);
    if (!pa_cuda_bwd_tensors_ok(bp, why, why_len)) return 0;
    if (kernel && kernel_len)
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "sm80-bwd<%s,d%d,%dx%d%s>", pa_dtype_name(bp->fwd.p.dtype), d,
               bm, PA_SM80_BWD_BN(d), bp->deterministic ? ",deterministic" : "");
    return 1;
}

static portattn_status_t sm80_bwd_run(const pa_bwd_problem *bp, void *stream, char *err, size_t err_len)
{
    return pa_sm80_bwd_launch(bp, stream, err, err_len);
}

static size_t sm80_bwd_workspace(const pa_bwd_problem *bp) { return pa_sm80_bwd_workspace(bp); }

const pa_bwd_backend pa_bwd_backend_cuda_sm80 = {PORTATTN_BACKEND_CUDA_SM80, sm80_bwd_supports, sm80_bwd_run,
                                                 sm80_bwd_workspace, NULL};
