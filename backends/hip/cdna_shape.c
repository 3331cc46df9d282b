/* cdna_shape.h */
#include "cdna_shape.h"

#include <stdint.h>

#include "fwd_resolve.h"

#define REFUSE(...) (pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, __VA_ARGS__), 0)

int pa_cdna_nothing_to_do(const pa_problem *pb) { return pb->p.batch <= 0 || pb->max_seqlen_q <= 0; }

int pa_cdna_shape_ok(const pa_problem *pb, const char *tag, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d || (d != 64 && d != 128 && d != 256))
        return REFUSE("head dims %lld/%lld: instances take 64, 128 and 256 with Dqk == Dv", (long long)d,
                      (long long)p->head_dim_v);
    if (pb->kv_cache) return REFUSE("KV cache: not in this kernel");
    if (p->seqlen_q > (1 << 30) - 1 || p->seqlen_k > (1 << 30) - 1)
        return REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || p->batch * p->heads_q > (int64_t)65535 * 65535)
        return REFUSE("batch %lld x heads %lld over the grid", (long long)p->batch, (long long)p->heads_q);
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (!pa_cdna_nothing_to_do(pb) && !pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "%s<%s,d%lld,128x32%s>", tag, dt, (long long)d,
                                      d == 256 ? ",2x128 columns" : "");
    return 1;
}
