/* gen_shape.h */
#include "gen_shape.h"

#include <stdint.h>

#include "backend.h"

int pa_gen_shape_ok(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_dtype_size(p->dtype)) return PA_REFUSE("dtype %d not supported", (int)p->dtype); /* f16, bf16, f32 run */
    if (p->head_dim_qk < 1 || p->head_dim_qk > PA_GEN_DMAX || p->head_dim_v < 1 || p->head_dim_v > PA_GEN_DMAX)
        return PA_REFUSE("head dims %lld/%lld outside 1..%d", (long long)p->head_dim_qk, (long long)p->head_dim_v,
                         PA_GEN_DMAX);
    if (p->heads_q > INT32_MAX) return PA_REFUSE("heads_q %lld over 2^31-1", (long long)p->heads_q);
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "generic<%s>", pa_dtype_name(p->dtype));
    return 1;
}

int pa_gen_device_ptrs(const pa_problem *pb, pa_gen_ptr out[PA_GEN_MAX_PTRS])
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0 || p->heads_q <= 0) return 0;
    const int kv = p->seqlen_k > 0, app = pb->seqlen_new > 0;
    const struct { const void *ptr; const char *what; int need; } all[PA_GEN_MAX_PTRS] = {
        {p->q.data, "q.data", 1},
        {p->o.data, "o.data", 1},
        {p->k.data, "k.data", kv},
        {p->v.data, "v.data", kv},
        {p->lse, "lse", p->lse != NULL},
        {p->cu_seqlens_q, "cu_seqlens_q", pb->varlen},
        {p->cu_seqlens_k, "cu_seqlens_k", pb->varlen_k},
        {p->seqused_k, "seqused_k", p->seqused_k != NULL},
        {p->block_table, "block_table", p->block_table != NULL},
        {p->k_new.data, "k_new.data", app},
        {p->v_new.data, "v_new.data", app},
    };
    int n = 0;
    for (int i = 0; i < PA_GEN_MAX_PTRS; i++)
        if (all[i].need) out[n].ptr = all[i].ptr, out[n].what = all[i].what, n++;
    return n;
}
