/* Validation of a backward call. The problem itself (shapes, masks, varlen, Q/K/V/O/LSE tensors,
 * workspace) goes through the forward's pa_validate, so both directions accept exactly the same
 * problems; this file adds what only the backward has: the required LSE, dO, and the three gradient
 * outputs, which must have distinct addresses and share memory with no other argument. */
#include <string.h>

#include "bwd_problem.h"
#include "validate_view.h"

#define INVALID(...) pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* The forward parameters that describe the same problem. */
static void forward_of(const portattn_bwd_params_t *in, portattn_fwd_params_t *f)
{
    portattn_fwd_params_init(f);
    f->dtype = in->dtype;
    f->batch = in->batch, f->seqlen_q = in->seqlen_q, f->seqlen_k = in->seqlen_k;
    f->heads_q = in->heads_q, f->heads_kv = in->heads_kv;
    f->head_dim_qk = in->head_dim_qk, f->head_dim_v = in->head_dim_v;
    f->q = in->q, f->k = in->k, f->v = in->v, f->o = in->o;
    f->lse = (float *)(uintptr_t)in->lse; /* read, never written, by every backward */
    memcpy(f->lse_stride, in->lse_stride, sizeof f->lse_stride);
    f->cu_seqlens_q = in->cu_seqlens_q, f->cu_seqlens_k = in->cu_seqlens_k;
    f->max_seqlen_q = in->max_seqlen_q, f->max_seqlen_k = in->max_seqlen_k;
    f->softmax_scale = in->softmax_scale, f->softcap = in->softcap, f->causal = in->causal;
    f->window_left = in->window_left, f->window_right = in->window_right;
    f->backend = in->backend;
    f->workspace = in->workspace, f->workspace_size = in->workspace_size;
}

/* Views of the arguments the forward's validation already accepted, for the overlap checks. */
static void input_views(const pa_problem *f, int64_t nb, int64_t elem, view *out)
{
    const portattn_fwd_params_t *p = &f->p;
    out[0] = make_view("q", &p->q, nb, p->seqlen_q, p->heads_q, p->head_dim_qk, elem, f->varlen);
    out[1] = make_view("k", &p->k, nb, p->seqlen_k, p->heads_kv, p->head_dim_qk, elem, f->varlen);
    out[2] = make_view("v", &p->v, nb, p->seqlen_k, p->heads_kv, p->head_dim_v, elem, f->varlen);
    out[3] = make_view("o", &p->o, nb, p->seqlen_q, p->heads_q, p->head_dim_v, elem, f->varlen);
    portattn_tensor_t lse_t = {p->lse, {p->lse_stride[0], p->lse_stride[2], p->lse_stride[1], 0}};
    out[4] = make_view("lse", &lse_t, nb, p->seqlen_q, p->heads_q, 1, 4, f->varlen);
    portattn_tensor_t ws_t = {p->workspace, {1, 0, 0, 0}};
    out[5] = make_view("workspace", &ws_t, (int64_t)(p->workspace_size > INT64_MAX ? INT64_MAX : p->workspace_size),
                       1, 1, 1, 1, 0);
    const int64_t ncu = f->varlen && p->batch > 0 ? p->batch + 1 : 0;
    portattn_tensor_t cq = {(void *)(uintptr_t)p->cu_seqlens_q, {1, 0, 0, 0}};
    portattn_tensor_t ck = {(void *)(uintptr_t)p->cu_seqlens_k, {1, 0, 0, 0}};
    out[6] = make_view("cu_seqlens_q", &cq, ncu, 1, 1, 1, 4, 0);
    out[7] = make_view("cu_seqlens_k", &ck, ncu, 1, 1, 1, 4, 0);
}

portattn_status_t pa_bwd_validate(const portattn_bwd_params_t *in, pa_bwd_problem *pb, char *why, size_t why_len)
{
    if (!in) return INVALID("params is NULL");
    portattn_status_t size_st = check_struct_size(in->struct_size, sizeof *in, "portattn_bwd_params_init", why, why_len);
    if (size_st) return size_st;
    memset(pb, 0, sizeof *pb);
    portattn_fwd_params_t f;
    forward_of(in, &f);
    portattn_status_t st = pa_validate(&f, &pb->fwd, why, why_len);
    if (st) return st;
    const pa_problem *fp = &pb->fwd;
    const portattn_fwd_params_t *p = &fp->p;

    const int64_t elem = pa_dtype_size(p->dtype), nb = fp->varlen ? (p->batch ? 1 : 0) : p->batch;
    const int any_rows = nb > 0 && p->seqlen_q > 0;
    if (any_rows && !in->lse)
        return INVALID("lse is NULL: the backward needs the forward's LSE (set lse on the forward call)");

    view g[4] = {make_view("dout", &in->dout, nb, p->seqlen_q, p->heads_q, p->head_dim_v, elem, fp->varlen),
                 make_view("dq", &in->dq, nb, p->seqlen_q, p->heads_q, p->head_dim_qk, elem, fp->varlen),
                 make_view("dk", &in->dk, nb, p->seqlen_k, p->heads_kv, p->head_dim_qk, elem, fp->varlen),
                 make_view("dv", &in->dv, nb, p->seqlen_k, p->heads_kv, p->head_dim_v, elem, fp->varlen)};
    for (int i = 0; i < 4; i++)
        if ((st = check_view(&g[i], i > 0, why, why_len))) return st;

    view inputs[9];
    input_views(fp, nb, elem, inputs);
    inputs[8] = g[0]; /* dout */
    for (int i = 0; i < 9; i++)
        if ((st = check_view(&inputs[i], 0, why, why_len)))
            return pa_fmt(why, why_len, PORTATTN_ERROR_INTERNAL, "re-checking %s failed after validation", inputs[i].name);
    for (int o = 1; o < 4; o++) {
        for (int i = 0; i < 9; i++)
            if (views_overlap(&g[o], &inputs[i])) return INVALID("%s overlaps %s in memory", g[o].name, inputs[i].name);
        for (int o2 = o + 1; o2 < 4; o2++)
            if (views_overlap(&g[o], &g[o2])) return INVALID("%s overlaps %s in memory", g[o].name, g[o2].name);
    }

    /* As in the forward: strides of empty or ignored dims are never used, so zero them. */
    portattn_tensor_t *t[4] = {&pb->dout, &pb->dq, &pb->dk, &pb->dv};
    const portattn_tensor_t *src[4] = {&in->dout, &in->dq, &in->dk, &in->dv};
    for (int i = 0; i < 4; i++) {
        *t[i] = *src[i];
        if (!g[i].count) memset(t[i]->stride, 0, sizeof t[i]->stride);
        if (fp->varlen) t[i]->stride[0] = 0;
    }
    pb->deterministic = in->deterministic != 0;
    return PORTATTN_SUCCESS;
}
