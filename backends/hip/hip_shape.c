/* hip_shape.h */
#include "hip_shape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwd_resolve.h"

#define REFUSE(...) (pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, __VA_ARGS__), 0)

int pa_hip_nothing_to_do(const pa_problem *pb) { return pb->p.batch <= 0 || pb->max_seqlen_q <= 0; }

int pa_hip_shape_ok(const pa_problem *pb, const char *tag, const char *tile, const int *dims, int ndims, char *kernel,
                    size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    const int64_t d = p->head_dim_qk;
    int dim_ok = 0;
    char list[64] = "";
    for (int i = 0; i < ndims; i++) {
        dim_ok |= d == dims[i];
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? ", " : "", dims[i]);
    }
    if (p->head_dim_v != d || !dim_ok)
        return REFUSE("head dims %lld/%lld: instances take %s with Dqk == Dv", (long long)d, (long long)p->head_dim_v, list);
    if (pb->kv_cache) return REFUSE("KV cache: not in this kernel");
    if (p->seqlen_q > (1 << 30) - 1 || p->seqlen_k > (1 << 30) - 1)
        return REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || p->batch * p->heads_q > (int64_t)65535 * 65535)
        return REFUSE("batch %lld x heads %lld over the grid", (long long)p->batch, (long long)p->heads_q);
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (!pa_hip_nothing_to_do(pb) && !pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "%s<%s,d%lld,%s>", tag, dt, (long long)d, tile);
    return 1;
}
