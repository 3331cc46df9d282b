/* cuda-sm80's backward entry points: which calls the mma.sync backward takes, and why not otherwise
 * (the selector then falls back to cuda-generic and shows the reason in the "which kernel" query). */
#include <stdint.h>

#include "backend.h"
#include "bwd_problem.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm80_bwd.h"

/* The problem's shape against the instances and the grid. */
static int bwd_shape_ok(const pa_bwd_problem *bp, char *why, size_t why_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    if (p->dtype != PORTATTN_DTYPE_F16 && p->dtype != PORTATTN_DTYPE_BF16)
        return PA_REFUSE("dtype %s not supported (f16, bf16)", pa_dtype_name(p->dtype));
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d)
        return PA_REFUSE("head dims %lld/%lld: no instance with Dqk != Dv", (long long)d, (long long)p->head_dim_v);
    if (!PA_SM80_BWD_HAS_DIM(d)) return PA_REFUSE("head dim %lld has no backward instance (64, 96, 128, 256)", (long long)d);
    if (p->seqlen_q > (1 << 30) - 1 || p->seqlen_k > (1 << 30) - 1)
        return PA_REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch > 65535 || p->heads_q > 65535)
        return PA_REFUSE("batch %lld or heads_q %lld over the grid's 65535", (long long)p->batch, (long long)p->heads_q);
    return pa_fwd_score_map_ok(pb, why, why_len);
}

/* Layouts and device residency of every tensor the kernels touch (none when there are no rows). */
static int bwd_tensors_ok(const pa_bwd_problem *bp, char *why, size_t why_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    if (p->batch == 0 || (pb->max_seqlen_q == 0 && pb->max_seqlen_k == 0)) return 1;
    const int kv = p->seqlen_k > 0, vl = pb->varlen;
    if (!pa_fwd_layouts_ok(pb, why, why_len) || !pa_tiled_layout_ok(&bp->dout, "dout", vl, why, why_len) ||
        !pa_tiled_layout_ok(&bp->dq, "dq", vl, why, why_len) ||
        (kv && (!pa_tiled_layout_ok(&bp->dk, "dk", vl, why, why_len) || !pa_tiled_layout_ok(&bp->dv, "dv", vl, why, why_len))))
        return 0;
    const struct { const void *ptr; const char *what; } need[] = {
        {p->q.data, "q.data"}, {p->k.data, "k.data"}, {p->v.data, "v.data"}, {p->o.data, "o.data"},
        {bp->dout.data, "dout.data"}, {p->lse, "lse"}, {bp->dq.data, "dq.data"}, {bp->dk.data, "dk.data"},
        {bp->dv.data, "dv.data"}, {p->cu_seqlens_q, "cu_seqlens_q"}, {p->cu_seqlens_k, "cu_seqlens_k"},
        {p->workspace, "workspace"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
        if (need[i].ptr && !pa_cuda_ptr_check(need[i].ptr, need[i].what, why, why_len)) return 0;
    if ((uintptr_t)p->workspace % 16) return PA_REFUSE("workspace %p is not 16-byte aligned", p->workspace);
    return 1;
}

static int sm80_bwd_supports(const pa_bwd_problem *bp, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    int major = 0, minor = 0, optin = 0;
    char dev[96];
    if (!pa_cuda_device_info(&major, &minor, NULL, dev, sizeof dev)) return PA_REFUSE("%s", dev);
    if (major < 8) return PA_REFUSE("needs compute capability 8.0+, device is %d.%d", major, minor);
    if (!bwd_shape_ok(bp, why, why_len)) return 0;
    const int d = (int)bp->fwd.p.head_dim_qk;
    if (!pa_cuda_device_smem(&optin, NULL)) return PA_REFUSE("cannot read the device's shared memory limit");
    const int bm = pa_sm80_bwd_rows(d, optin);
    if (!bm)
        return PA_REFUSE("d%d backward needs %d bytes of shared memory per block, %s allows %d%s", d,
                      PA_SM80_BWD_SMEM(d, 64), dev, optin,
                      d > 128 ? " (d256 needs an sm_90/sm_100-class 227 KB part; an A100 has 163 KB)" : "");
    if (!bwd_tensors_ok(bp, why, why_len)) return 0;
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
                                                 sm80_bwd_workspace};
