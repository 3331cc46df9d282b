/* portattn_merge on the host: one row at a time, fp32 as on the GPU (the row formula is shared,
 * merge.h), so the two agree to the last bit up to the libm's expf/log1pf. */
#include "half.h"
#include "merge.h"

static void merge_row(const portattn_merge_params_t *p, int64_t b, int64_t s, int64_t h)
{
    float *lse = p->lse + b * p->lse_stride[0] + h * p->lse_stride[1] + s * p->lse_stride[2];
    const int64_t *lps = p->lse_part_stride;
    const float lse_part = p->lse_part[b * lps[0] + h * lps[1] + s * lps[2]];
    float w, w_part, merged;
    pa_merge_weights(*lse, lse_part, &w, &w_part, &merged);
    const int64_t o0 = b * p->o.stride[0] + s * p->o.stride[1] + h * p->o.stride[2];
    const int64_t op0 = b * p->o_part.stride[0] + s * p->o_part.stride[1] + h * p->o_part.stride[2];
    const int read_o = *lse != -INFINITY, read_part = lse_part != -INFINITY; /* else O may be garbage */
    for (int64_t d = 0; d < p->head_dim_v; d++) {
        float x = 0.0f;
        if (read_o) x = w * pa_load_elem(p->dtype, p->o.data, o0 + d * p->o.stride[3]);
        if (read_part) x += w_part * pa_load_elem(p->dtype_part, p->o_part.data, op0 + d * p->o_part.stride[3]);
        pa_store_elem(p->dtype, p->o.data, o0 + d * p->o.stride[3], x);
    }
    *lse = merged;
}

portattn_status_t pa_cpu_merge(const pa_merge_problem *mp, char *err, size_t err_len)
{
    (void)err, (void)err_len; /* nothing here can fail */
    const portattn_merge_params_t *p = &mp->p;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t s = 0; s < p->seqlen_q; s++)
            for (int64_t h = 0; h < p->heads_q; h++) merge_row(p, b, s, h);
    return PORTATTN_SUCCESS;
}
