/* fwd_resolve.h: a validated problem resolved into the GPU kernels' argument struct (fwd_args.h), and
 * the checks every tiled kernel shares. Vendor-neutral (CUDA and HIP backends call it alike). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "fwd_resolve.h"

/* A window side at least as long as both sequences together cuts nothing: make it unbounded, so
 * that what remains fits the kernels' int32 row arithmetic. */
static int fwd_window(int64_t w, int64_t sq, int64_t sk) { return w < 0 || w >= sq + sk ? -1 : (int)w; }

/* Base-2 logits: exp(x * scale) = 2^(x * scale * log2 e). The FFMA form needs a positive
 * multiplier (the row max is taken before it); softcap and negative scales rewrite the scores
 * first and then use multiplier 1. */
int pa_fwd_score_map(const pa_problem *pb, int *transform, int *softcap, float *mult, float *pre_mul, float *post_mul)
{
    const double log2e = 1.4426950408889634, cap = pb->p.softcap;
    *softcap = cap > 0.0;
    *transform = *softcap || pb->scale < 0.f;
    *mult = *transform ? 1.f : (float)(pb->scale * log2e);
    *pre_mul = *softcap ? (float)((double)pb->scale / cap) : (float)(pb->scale * log2e);
    *post_mul = *softcap ? (float)(cap * log2e) : 1.f;
    return isfinite(*mult) && isfinite(*pre_mul) && isfinite(*post_mul) && *mult != 0.f;
}

int pa_fwd_score_map_ok(const pa_problem *pb, char *why, size_t why_len)
{
    int transform, softcap;
    float mult, pre, post;
    if (pa_fwd_score_map(pb, &transform, &softcap, &mult, &pre, &post)) return 1;
    return PA_REFUSE("scale %g / softcap %g out of range", (double)pb->scale, (double)pb->p.softcap);
}

/* The KV-cache fields: zero without a cache, but qpack (1: a family that packs GQA sets its own). */
static void fwd_kv_of(const pa_problem *pb, pa_kv_args *kv)
{
    const portattn_fwd_params_t *p = &pb->p;
    kv->seqused_k = p->seqused_k, kv->block_table = p->block_table;
    kv->bt_stride = p->block_table_stride, kv->num_pages = p->num_pages;
    for (kv->page_shift = 0; p->block_table && ((int64_t)1 << kv->page_shift) < p->page_size;) kv->page_shift++;
    kv->seqlen_new = (int)pb->seqlen_new;
    kv->qpack = 1;
}

/* The int fields are plain casts: exact wherever a kernel that reads them runs, since its supports()
 * bounds the shape; the generic kernel and the appends read the 64-bit ones. Returns the score map's
 * verdict (pa_fwd_score_map). */
static int fwd_fill(const pa_problem *pb, pa_fwd_args *a)
{
    const portattn_fwd_params_t *p = &pb->p;
    memset(a, 0, sizeof *a);
    a->q = p->q.data, a->k = p->k.data, a->v = p->v.data, a->o = p->o.data, a->lse = p->lse;
    if (pb->varlen) a->cu_q = p->cu_seqlens_q, a->cu_k = p->cu_seqlens_k;
    for (int i = 0; i < 3; ++i) {
        a->qs[i] = p->q.stride[i], a->ks[i] = p->k.stride[i], a->vs[i] = p->v.stride[i], a->os[i] = p->o.stride[i];
        a->ls[i] = p->lse_stride[i];
    }
    a->qd = p->q.stride[3], a->kd = p->k.stride[3], a->vd = p->v.stride[3], a->od = p->o.stride[3];
    a->batch = (int)p->batch, a->heads = (int)p->heads_q, a->heads_kv = (int)p->heads_kv, a->group = (int)pb->group;
    a->dqk = (int)p->head_dim_qk, a->dv = (int)p->head_dim_v;
    a->seqlen_q = (int)p->seqlen_q, a->seqlen_k = (int)p->seqlen_k;
    a->wl = fwd_window(pb->window_left, p->seqlen_q, p->seqlen_k);
    a->wr = fwd_window(pb->window_right, p->seqlen_q, p->seqlen_k);
    fwd_kv_of(pb, &a->kv);
    if (pb->seqlen_new > 0) {
        a->k_new = p->k_new.data, a->v_new = p->v_new.data;
        for (int i = 0; i < 4; ++i) a->kns[i] = p->k_new.stride[i], a->vns[i] = p->v_new.stride[i];
    }
    a->batch64 = p->batch, a->seqlen_q64 = p->seqlen_q, a->seqlen_k64 = p->seqlen_k, a->seqlen_new64 = pb->seqlen_new;
    a->window_left = pb->window_left, a->window_right = pb->window_right;
    a->scale = pb->scale, a->cap = p->softcap;
    a->inv_cap = p->softcap > 0.f ? 1.f / p->softcap : 0.f;
    return pa_fwd_score_map(pb, &a->transform, &a->softcap, &a->mult, &a->pre_mul, &a->post_mul);
}

void pa_fwd_args_of(const pa_problem *pb, pa_fwd_args *a) { (void)fwd_fill(pb, a); }

portattn_status_t pa_fwd_fill_args(const pa_problem *pb, pa_fwd_args *a, char *err, size_t err_len)
{
    if (!fwd_fill(pb, a))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "scale %g / softcap %g out of range",
                      (double)pb->scale, (double)pb->p.softcap);
    return PORTATTN_SUCCESS;
}

/* Rows are read and written as 16-byte vectors. */
int pa_tiled_layout_ok(const portattn_tensor_t *t, const char *name, int varlen, char *why, size_t why_len)
{
    if (t->stride[3] != 1) return PA_REFUSE("%s.stride[3] = %lld, needs 1", name, (long long)t->stride[3]);
    if ((uintptr_t)t->data % 16) return PA_REFUSE("%s.data %p is not 16-byte aligned", name, t->data);
    for (int i = varlen ? 1 : 0; i < 3; i++)
        if (t->stride[i] % 8)
            return PA_REFUSE("%s.stride[%d] = %lld is not a multiple of 8 elements (16 bytes)", name, i,
                          (long long)t->stride[i]);
    return 1;
}

int pa_fwd_layouts_ok(const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int needs_kv = p->seqlen_k > 0;
    return pa_tiled_layout_ok(&p->q, "q", pb->varlen, why, why_len) && pa_tiled_layout_ok(&p->o, "o", pb->varlen, why, why_len) &&
           (!needs_kv || (pa_tiled_layout_ok(&p->k, "k", pb->varlen, why, why_len) &&
                          pa_tiled_layout_ok(&p->v, "v", pb->varlen, why, why_len)));
}

int pa_fwd_instance_dim(const int *dims, int n, int64_t dqk, int64_t dv)
{
    if (dqk <= 0 || dv <= 0 || dqk % 8 || dv % 8) return 0;
    const int64_t need = dqk > dv ? dqk : dv;
    for (int i = 0; i < n; ++i)
        if (dims[i] >= need) return dims[i];
    return 0;
}

/* supports()' form: 1, or 0 and why, naming the family's instances. */
int pa_fwd_dims_ok(const int *dims, int n, const pa_problem *pb, const char *who, char *why, size_t why_len)
{
    const int64_t dqk = pb->p.head_dim_qk, dv = pb->p.head_dim_v;
    if (pa_fwd_instance_dim(dims, n, dqk, dv)) return 1;
    char list[64] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; ++i)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", i ? "/" : "", dims[i]);
    const char *sep = who ? ": " : "";
    if (!who) who = "";
    if (dqk % 8 || dv % 8)
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s%shead dims %lld/%lld are not multiples of 8 (16-byte rows)",
               who, sep, (long long)dqk, (long long)dv);
    else
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s%shead dims %lld/%lld over its largest instance (%s)", who,
               sep, (long long)dqk, (long long)dv, list);
    return 0;
}

const char *pa_dims_note(const pa_problem *pb, int d, char *buf, size_t len)
{
    const long long dqk = (long long)pb->p.head_dim_qk, dv = (long long)pb->p.head_dim_v;
    if (dqk == d && dv == d) return "";
    snprintf(buf, len, "(%lld/%lld)", dqk, dv);
    return buf;
}

void pa_kernel_name(char *buf, size_t len, const char *family, const char *dtype, int d, const pa_problem *pb, int bm,
                    int bn, const char *extra)
{
    char note[48];
    pa_fmt(buf, len, PORTATTN_SUCCESS, "%s<%s,d%d%s,%dx%d%s%s>", family, dtype, d, pa_dims_note(pb, d, note, sizeof note),
           bm, bn, extra ? "," : "", extra ? extra : "");
}

int pa_fwd_kv_layouts_ok(const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->block_table && (p->num_pages > INT32_MAX || p->page_size > (1 << 20)))
        return PA_REFUSE("%lld pages of %lld rows: over the paged kernels' int32 range",
                      (long long)p->num_pages, (long long)p->page_size);
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (p->batch == 0 || pb->max_seqlen_q == 0) return 1;
    return pa_tiled_layout_ok(&p->q, "q", pb->varlen, why, why_len) &&
           pa_tiled_layout_ok(&p->o, "o", pb->varlen, why, why_len) &&
           (p->seqlen_k == 0 || (pa_tiled_layout_ok(&p->k, "k", 0, why, why_len) &&
                                 pa_tiled_layout_ok(&p->v, "v", 0, why, why_len)));
}

int pa_fwd_not_serving(const pa_problem *pb, char *why, size_t why_len)
{
    if (!pa_serving(pb)) return 1;
    return PA_REFUSE("packed queries over a KV cache (cu_seqlens_q with seqused_k/block_table): not this kernel "
                  "(the KV-cache instances of cuda-sm90 and cuda-sm80 and cuda-generic take them)");
}
