/* One row: a shape's sizes and work, its buffers, the portattn_forward call the user would make,
 * its timing and the peak it is judged by, then (with --check) the oracle check. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

int row_error(row *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return 1;
}

int row_api_error(row *r, const char *what, portattn_status_t st)
{
    return row_error(r, "%s: %s: %s", what, portattn_status_string(st), portattn_last_error());
}

/* A shape's extent in memory and its work; pages_per_seq and num_pages are 0 for contiguous K/V. */
typedef struct sizes {
    extent e;
    int64_t pages_per_seq, num_pages;
    double flops, keys, macs;
} sizes;

/* Sizes, token counts and work of the row; the varlen lengths into b. 1 on failure (r->msg). */
static int size_row(const opts *o, const shape *s, bufs *b, sizes *z, row *r)
{
    /* the int64 and size_t products below must not overflow: refuse absurd shapes first */
    int paged = s->page > 0;
    z->pages_per_seq = paged ? (s->sk + s->page - 1) / s->page : 0; /* of the block table */
    int64_t sk_alloc = paged ? z->pages_per_seq * s->page : s->sk;  /* keys per sequence in memory */
    double elems = (double)s->b * (double)(s->sq > sk_alloc ? s->sq : sk_alloc) *
                   (double)(s->hq > s->hkv ? s->hq : s->hkv) * (double)(s->d > s->dv ? s->d : s->dv);
    if (elems > 17592186044416.0 || elems * 4 > (double)SIZE_MAX || (s->varlen && s->b >= INT32_MAX))
        return row_error(r, "shape too large to allocate");
    if (paged && (double)s->b * (double)z->pages_per_seq > (double)INT32_MAX)
        return row_error(r, "paged: more than 2^31 pages (int32 block table entries)");
    extent *e = &z->e;
    *e = (extent){s->b * s->sq, s->b * s->sk, s->sq, s->sk};
    z->num_pages = s->b * z->pages_per_seq;
    if (s->nserve) { /* every sequence over its whole cache of Sk keys, queries the last tokens */
        if (serve_lengths(s, b, e, r)) return 1;
        for (int64_t i = 0; i < s->b; i++) {
            int64_t lq = b->hcu_q[i + 1] - b->hcu_q[i];
            z->flops += seq_flops(s, lq, s->sk);
            z->keys += lq ? seq_keys(s, lq, s->sk) : 0;
            z->macs += (double)s->hq * (double)lq * (double)s->sk * (double)(s->d + s->dv);
        }
    } else if (s->varlen) {
        if (varlen_lengths(s, b, e, r)) return 1;
        for (int64_t i = 0; i < s->b; i++) {
            int64_t lq = b->hcu_q[i + 1] - b->hcu_q[i], lk = b->hcu_k[i + 1] - b->hcu_k[i];
            z->flops += seq_flops(s, lq, lk);
            z->keys += seq_keys(s, lq, lk);
            z->macs += (double)s->hq * (double)lq * (double)lk * (double)(s->d + s->dv);
        }
    } else {
        z->flops = (double)s->b * seq_flops(s, s->sq, s->sk);
        z->keys = (double)s->b * seq_keys(s, s->sq, s->sk);
        z->macs = (double)s->b * (double)s->hq * (double)s->sq * (double)s->sk * (double)(s->d + s->dv);
    }
    size_t es = (size_t)dtype_size(s->dtype);
    r->tokens_q = e->tq; r->tokens_k = e->tk; r->flops = z->flops;
    /* the keys read, not the pool: a paged row's tail padding in its last page is not counted */
    r->kv_bytes = z->keys * (double)s->hkv * (double)(s->d + s->dv) * (double)es;
    int64_t kv_tokens = paged ? z->num_pages * s->page : s->nserve ? s->b * s->sk : e->tk; /* K/V rows (one copy) */
    b->nq = (size_t)(e->tq * s->hq * s->d); b->nk = (size_t)(kv_tokens * s->hkv * s->d);
    b->nv = (size_t)(kv_tokens * s->hkv * s->dv); b->no = (size_t)(e->tq * s->hq * s->dv);
    b->nlse = s->lse ? (size_t)(e->tq * s->hq) : 0;
    if (r->decode) /* enough copies of K and V that no timed call finds them in L2, or --kv-copies */
        r->kv_copies = kv_copy_count(o, (double)(b->nk + b->nv) * (double)es);
    return 0;
}

/* The call a user would make on these buffers. */
static void make_params(const opts *o, const shape *s, const bufs *b, const sizes *z, portattn_fwd_params_t *p)
{
    portattn_fwd_params_init(p);
    p->dtype = s->dtype;
    p->batch = s->b;
    p->seqlen_q = s->varlen || s->nserve ? z->e.tq : s->sq;
    p->seqlen_k = s->varlen ? z->e.tk : s->sk; /* --serve: the cache capacity per sequence */
    p->heads_q = s->hq; p->heads_kv = s->hkv;
    p->head_dim_qk = s->d; p->head_dim_v = s->dv;
    portattn_tensor_t (*mk)(void *, int64_t, int64_t, int64_t) = s->bhsd ? portattn_tensor_bhsd : portattn_tensor_bshd;
    int paged = s->page > 0;
    p->q = mk(b->dq, p->seqlen_q, s->hq, s->d);
    /* paged: pools [num_pages, P, Hkv, D], the row's layout within a page, stride[0] = page stride */
    p->k = mk(b->dk, paged ? s->page : p->seqlen_k, s->hkv, s->d);
    p->v = mk(b->dv, paged ? s->page : p->seqlen_k, s->hkv, s->dv);
    p->o = mk(b->dout, p->seqlen_q, s->hq, s->dv);
    if (paged) {
        p->block_table = b->dbt;
        p->block_table_stride = z->pages_per_seq;
        p->page_size = s->page;
        p->num_pages = z->num_pages;
    }
    if (s->lse) {
        p->lse = b->dlse;
        p->lse_stride[0] = s->varlen || s->nserve ? 0 : s->hq * p->seqlen_q; /* packed: (head, token) */
        p->lse_stride[1] = p->seqlen_q;
        p->lse_stride[2] = 1;
    }
    if (s->varlen) {
        p->cu_seqlens_q = b->dcu_q; p->cu_seqlens_k = b->dcu_k;
        p->max_seqlen_q = z->e.maxq; p->max_seqlen_k = z->e.maxk;
    }
    if (s->nserve) {
        p->cu_seqlens_q = b->dcu_q; p->seqused_k = b->dused;
        p->max_seqlen_q = z->e.maxq; p->max_seqlen_k = s->sk;
    }
    p->softcap = s->softcap;
    p->causal = s->causal;
    p->window_left = s->wl; p->window_right = s->wr;
    p->backend = o->backend;
    p->num_splits = o->num_splits;
}

/* Asks which backend and kernel will run, and gives the call its split-KV scratch, allocated once
 * as serving engines do (--no-workspace: the library's own per-call stream-ordered allocation). */
static int select_kernel(const opts *o, dm_kind kind, portattn_fwd_params_t *p, bufs *b,
                         portattn_selection_t *sel, row *r)
{
    portattn_status_t st = portattn_forward_query(p, sel);
    if (st != PORTATTN_SUCCESS) return row_api_error(r, "portattn_forward_query", st);
    snprintf(r->backend, sizeof r->backend, "%s", sel->backend_name);
    snprintf(r->kernel, sizeof r->kernel, "%s", sel->kernel);
    if (dm_kind_of(sel->backend) != kind) /* e.g. a HIP backend, which devmem does not know yet */
        return row_error(r, "selected backend %s takes other memory than was allocated", sel->backend_name);
    size_t ws = 0;
    if (!o->no_workspace && (st = portattn_forward_workspace_size(p, &ws)) != PORTATTN_SUCCESS)
        return row_api_error(r, "portattn_forward_workspace_size", st);
    if (ws) {
        if (!(b->dws = dm_alloc(kind, ws))) return row_error(r, "out of memory for a %zu-byte workspace", ws);
        p->workspace = b->dws;
        p->workspace_size = ws;
    }
    return 0;
}

/* The peak a row is judged by: the HBM bandwidth for decode rows, the dtype's dense tensor TFLOPS
 * otherwise; no percentage (and why) for an unknown device or a metric the table lacks. */
static void assign_peak(const opts *o, row *r)
{
    snprintf(r->peak_metric, sizeof r->peak_metric, "%s", r->decode ? "hbm_TBps"
             : r->s.dtype == PORTATTN_DTYPE_BF16 ? "bf16_tflops" : r->s.dtype == PORTATTN_DTYPE_F16 ? "fp16_tflops"
             : "fp32_tflops");
    if (!o->have_table) snprintf(r->peak_note, sizeof r->peak_note, "no device table");
    else if (!o->dev) snprintf(r->peak_note, sizeof r->peak_note, "unknown device");
    else if (!(r->peak = dt_peak_of(o->dev, r->peak_metric, o->prefer_measured)))
        snprintf(r->peak_note, sizeof r->peak_note, "no %s peak for %s in the device table", r->peak_metric, o->dev->name);
    else r->peak_fraction = (r->decode ? r->kv_Bps * 1e-12 : r->tflops) / r->peak->value;
}

static void row_init(row *r, const shape *s)
{
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->check = "none";
    r->ms = r->tflops = r->kv_Bps = r->host_us = -1;
    r->kv_copies = 1;
    r->decode = !s->varlen && s->sq == 1;
    snprintf(r->backend, sizeof r->backend, "?");
}

int run_shape(const opts *o, const shape *s, dm_kind kind, rng *gen, row *r)
{
    bufs b;
    sizes z;
    portattn_fwd_params_t p;
    portattn_selection_t sel;
    memset(&b, 0, sizeof b);
    memset(&z, 0, sizeof z);
    row_init(r, s);
    int fail = 1;
    size_t es = (size_t)dtype_size(s->dtype);
    if (size_row(o, s, &b, &z, r) || (s->page > 0 && make_block_table(kind, z.num_pages, &b, r)) ||
        make_inputs(o, s, kind, (size_t)r->kv_copies, gen, &b, r))
        goto bail;
    make_params(o, s, &b, &z, &p);
    if (select_kernel(o, kind, &p, &b, &sel, r) ||
        time_forward(o, kind, &p, (char *)b.dk, (char *)b.dv, b.nk * es, b.nv * es, r->kv_copies, r))
        goto bail;
    r->ms = r->timing.median_ms;
    r->host_us = r->timing.host_us;
    r->tflops = r->ms > 0 ? z.flops / (r->ms * 1e-3) / 1e12 : 0;
    if (r->decode) r->kv_Bps = r->ms > 0 ? r->kv_bytes / (r->ms * 1e-3) : 0;
    assign_peak(o, r);
    print_row(r);
    fail = 0;
    if (o->check > 0) fail = check_row(o, s, kind, &p, sel.backend, &b, z.macs, r);
bail:
    if (fail && r->ms < 0) { print_row(r); printf("  error: %s\n", r->msg); }
    free_bufs(&b, kind);
    return fail;
}
