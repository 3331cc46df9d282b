/* hip_shape.h */
#include "hip_shape.h"

#include <stdint.h>
#include <stdio.h>

#include "fwd_resolve.h"

int pa_hip_nothing_to_do(const pa_problem *pb) { return pb->p.batch <= 0 || pb->max_seqlen_q <= 0; }

int pa_hip_shape_ok(const pa_problem *pb, const char *tag, int bm, int bn, const int *dims, int ndims, char *kernel,
                    size_t kernel_len, char *why, size_t why_len)
{
    return pa_hip_shape_ok_wide(pb, tag, bm, bn, bn, PA_HIP_LAUNCH_COLS, dims, ndims, kernel, kernel_len, why, why_len);
}

int pa_hip_shape_ok_wide(const pa_problem *pb, const char *tag, int bm, int bn, int bn_wide, int launch_cols,
                         const int *dims, int ndims, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return PA_REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    char who[24];
    snprintf(who, sizeof who, "hip-%s", tag);
    if (!pa_fwd_dims_ok(dims, ndims, pb, who, why, why_len)) return 0;
    if (pb->kv_cache) return PA_REFUSE("KV cache: not in this kernel");
    if (p->seqlen_q > (1 << 30) - 1 || p->seqlen_k > (1 << 30) - 1)
        return PA_REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || p->batch * p->heads_q > (int64_t)65535 * 65535)
        return PA_REFUSE("batch %lld x heads %lld over the grid", (long long)p->batch, (long long)p->heads_q);
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (!pa_hip_nothing_to_do(pb) && !pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    const int d = pa_fwd_instance_dim(dims, ndims, p->head_dim_qk, p->head_dim_v);
    if (kernel && kernel_len) {
        char launches[40]; /* the launches, one per launch_cols columns of Dv */
        snprintf(launches, sizeof launches, "%dx%d columns", (int)((p->head_dim_v + launch_cols - 1) / launch_cols),
                 launch_cols);
        pa_kernel_name(kernel, kernel_len, tag, dt, d, pb, bm, d > PA_HIP_LAUNCH_COLS ? bn_wide : bn,
                       d > launch_cols ? launches : NULL);
    }
    return 1;
}
