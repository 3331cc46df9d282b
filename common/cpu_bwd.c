/* The CPU backend's backward pass: the gradient oracle. In double, from the forward's LSE:
 *   P = exp(S - LSE), D = rowsum(dO * O), dP = dO V^T, dS = P * (dP - D),
 *   dX = dS * ds/dx (softcap: 1 - (s / cap)^2), dQ = scale dX K, dK = scale dX^T Q, dV = P^T dO,
 * over visible keys only; a row whose LSE is -inf saw no key and contributes nothing.
 * Two kinds of work item, run by one thread pool: a block of query rows of one head (writes its dQ
 * rows) and a block of keys of one KV head (writes its dK/dV rows, summing over the query heads of
 * its group and their rows in a fixed order). Each output row has one owner and one summation order,
 * so results are bitwise deterministic whatever the thread count. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bwd_problem.h"
#include "frontend.h"
#include "half.h"

enum { ROWS_PER_ITEM = 16, KEYS_PER_ITEM = 16, MAX_THREADS = 64 };

typedef struct bwd_job {
    const pa_bwd_problem *pb;
    int64_t qblocks, kblocks; /* row blocks per (batch, head), key blocks per (batch, KV head) */
    int64_t dq_items, items;  /* the first dq_items items are row blocks, the rest key blocks */
    atomic_llong next;
    atomic_int failed;
} bwd_job;

/* One sequence: query rows [q0, q0 + sq), keys [k0, k0 + sk) of the (packed) tensors. */
typedef struct seq { int64_t b, q0, sq, k0, sk; } seq;

static seq seq_of(const pa_problem *f, int64_t b)
{
    seq s = {b, 0, f->p.seqlen_q, 0, f->p.seqlen_k};
    if (f->varlen) { /* validated: monotone, within the totals */
        s.q0 = f->p.cu_seqlens_q[b], s.sq = f->p.cu_seqlens_q[b + 1] - s.q0;
        s.k0 = f->p.cu_seqlens_k[b], s.sk = f->p.cu_seqlens_k[b + 1] - s.k0;
    }
    return s;
}

/* Element offset of row r (within the sequence), head h, of tensor t; rows are packed under varlen. */
static int64_t at(const pa_problem *f, const portattn_tensor_t *t, const seq *s, int64_t r0, int64_t r, int64_t h)
{
    return (f->varlen ? 0 : s->b * t->stride[0]) + (r0 + r) * t->stride[1] + h * t->stride[2];
}

static void load_row(portattn_dtype_t dt, const portattn_tensor_t *t, int64_t off, int64_t n, double *dst)
{
    pa_load_row_f64(dt, t->data, off, t->stride[3], n, dst);
}

static void store_row(portattn_dtype_t dt, const portattn_tensor_t *t, int64_t off, int64_t n, const double *src,
                      double mul)
{
    for (int64_t d = 0; d < n; d++) pa_store_elem(dt, t->data, off + d * t->stride[3], (float)(src[d] * mul));
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

/* What one query row brings to every key it sees: its Q and dO rows, LSE and D = dO . O. */
typedef struct qrow {
    double *q, *dout, lse, delta;
} qrow;

/* Loads row i of head h; 0 when the row saw no key (LSE = -inf) and so has no gradient. */
static int load_qrow(const pa_bwd_problem *pb, const seq *s, int64_t h, int64_t i, double *o_scratch, qrow *r)
{
    const pa_problem *f = &pb->fwd;
    const portattn_fwd_params_t *p = &f->p;
    r->lse = p->lse[(f->varlen ? 0 : s->b * p->lse_stride[0]) + h * p->lse_stride[1] + (s->q0 + i) * p->lse_stride[2]];
    if (r->lse == -INFINITY) return 0;
    load_row(p->dtype, &p->q, at(f, &p->q, s, s->q0, i, h), p->head_dim_qk, r->q);
    load_row(p->dtype, &pb->dout, at(f, &pb->dout, s, s->q0, i, h), p->head_dim_v, r->dout);
    load_row(p->dtype, &p->o, at(f, &p->o, s, s->q0, i, h), p->head_dim_v, o_scratch);
    r->delta = dot(r->dout, o_scratch, p->head_dim_v);
    return 1;
}

/* dX for (row, key) given the key's K and V rows; *prob gets P. */
static double grad_score(const pa_problem *f, const qrow *r, const double *k, const double *v, double *prob)
{
    const double cap = f->p.softcap;
    double s = dot(r->q, k, f->p.head_dim_qk) * (double)f->scale, dsdx = 1.0;
    if (cap > 0) {
        s = cap * tanh(s / cap);
        dsdx = 1.0 - (s / cap) * (s / cap);
    }
    const double pr = exp(s - r->lse);
    *prob = pr;
    return pr * (dot(r->dout, v, f->p.head_dim_v) - r->delta) * dsdx;
}

typedef struct scratch {
    double *q, *dout, *acc; /* ROWS_PER_ITEM rows */
    double *o;              /* one row */
    double *k, *v, *dk, *dv; /* KEYS_PER_ITEM rows */
} scratch;

/* A block of query rows of head h: dQ. Keys outer, rows inner, so that each K and V row is converted
 * once per block rather than once per row; each row still sums over its keys in ascending order. */
static void dq_block(const pa_bwd_problem *pb, const seq *s, int64_t h, int64_t blk, scratch *w)
{
    const pa_problem *f = &pb->fwd;
    const portattn_fwd_params_t *p = &f->p;
    const int64_t hk = h / f->group, dqk = p->head_dim_qk, dv = p->head_dim_v;
    const int64_t i0 = blk * ROWS_PER_ITEM, n = s->sq - i0 < ROWS_PER_ITEM ? s->sq - i0 : ROWS_PER_ITEM;
    qrow r[ROWS_PER_ITEM];
    int64_t lo[ROWS_PER_ITEM], hi[ROWS_PER_ITEM], jlo = s->sk, jhi = -1;
    for (int64_t i = 0; i < n; i++) {
        r[i] = (qrow){w->q + i * dqk, w->dout + i * dv, 0, 0};
        for (int64_t d = 0; d < dqk; d++) w->acc[i * dqk + d] = 0.0;
        pa_key_range(i0 + i, s->sq, s->sk, f->window_left, f->window_right, &lo[i], &hi[i]);
        if (lo[i] > hi[i] || !load_qrow(pb, s, h, i0 + i, w->o, &r[i])) {
            lo[i] = 1, hi[i] = 0; /* no gradient: sees no key, or LSE = -inf */
            continue;
        }
        if (lo[i] < jlo) jlo = lo[i];
        if (hi[i] > jhi) jhi = hi[i];
    }
    for (int64_t j = jlo; j <= jhi; j++) {
        load_row(p->dtype, &p->k, at(f, &p->k, s, s->k0, j, hk), dqk, w->k);
        load_row(p->dtype, &p->v, at(f, &p->v, s, s->k0, j, hk), dv, w->v);
        for (int64_t i = 0; i < n; i++) {
            if (j < lo[i] || j > hi[i]) continue;
            double pr, dx = grad_score(f, &r[i], w->k, w->v, &pr), *acc = w->acc + i * dqk;
            for (int64_t d = 0; d < dqk; d++) acc[d] += dx * w->k[d];
        }
    }
    for (int64_t i = 0; i < n; i++)
        store_row(p->dtype, &pb->dq, at(f, &pb->dq, s, s->q0, i0 + i, h), dqk, w->acc + i * dqk, (double)f->scale);
}

/* A block of keys of KV head hk: dK and dV, summed over the group's query heads and their rows. */
static void dkdv_block(const pa_bwd_problem *pb, const seq *s, int64_t hk, int64_t blk, scratch *w)
{
    const pa_problem *f = &pb->fwd;
    const portattn_fwd_params_t *p = &f->p;
    const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
    const int64_t j0 = blk * KEYS_PER_ITEM, n = s->sk - j0 < KEYS_PER_ITEM ? s->sk - j0 : KEYS_PER_ITEM;
    for (int64_t j = 0; j < n; j++) {
        load_row(p->dtype, &p->k, at(f, &p->k, s, s->k0, j0 + j, hk), dqk, w->k + j * dqk);
        load_row(p->dtype, &p->v, at(f, &p->v, s, s->k0, j0 + j, hk), dv, w->v + j * dv);
    }
    for (int64_t x = 0; x < n * dqk; x++) w->dk[x] = 0.0;
    for (int64_t x = 0; x < n * dv; x++) w->dv[x] = 0.0;
    qrow r = {w->q, w->dout, 0, 0};
    for (int64_t h = hk * f->group; h < (hk + 1) * f->group; h++)
        for (int64_t i = 0; i < s->sq; i++) {
            int64_t lo, hi;
            pa_key_range(i, s->sq, s->sk, f->window_left, f->window_right, &lo, &hi);
            if (lo < j0) lo = j0;
            if (hi > j0 + n - 1) hi = j0 + n - 1;
            if (lo > hi || !load_qrow(pb, s, h, i, w->o, &r)) continue;
            for (int64_t j = lo - j0; j <= hi - j0; j++) {
                double pr, dx = grad_score(f, &r, w->k + j * dqk, w->v + j * dv, &pr);
                for (int64_t d = 0; d < dqk; d++) w->dk[j * dqk + d] += dx * r.q[d];
                for (int64_t d = 0; d < dv; d++) w->dv[j * dv + d] += pr * r.dout[d];
            }
        }
    for (int64_t j = 0; j < n; j++) {
        store_row(p->dtype, &pb->dk, at(f, &pb->dk, s, s->k0, j0 + j, hk), dqk, w->dk + j * dqk, (double)f->scale);
        store_row(p->dtype, &pb->dv, at(f, &pb->dv, s, s->k0, j0 + j, hk), dv, w->dv + j * dv, 1.0);
    }
}

static void run_item(bwd_job *jb, int64_t it, scratch *w)
{
    const pa_problem *f = &jb->pb->fwd;
    const int64_t kv = it >= jb->dq_items, blocks = kv ? jb->kblocks : jb->qblocks;
    const int64_t heads = kv ? f->p.heads_kv : f->p.heads_q;
    if (kv) it -= jb->dq_items;
    const int64_t blk = it % blocks, h = (it / blocks) % heads;
    const seq s = seq_of(f, it / blocks / heads);
    if (kv)
        dkdv_block(jb->pb, &s, h, blk, w);
    else
        dq_block(jb->pb, &s, h, blk, w);
}

static void *worker(void *arg)
{
    bwd_job *jb = arg;
    const portattn_fwd_params_t *p = &jb->pb->fwd.p;
    const size_t dqk = (size_t)p->head_dim_qk, dv = (size_t)p->head_dim_v;
    const size_t R = ROWS_PER_ITEM, K = KEYS_PER_ITEM;
    double *mem = malloc(sizeof(double) * ((dqk * 2 + dv) * R + dv + (dqk + dv) * 2 * K));
    if (!mem) atomic_store(&jb->failed, 1);
    scratch w = {0};
    if (mem) {
        w.q = mem, w.acc = w.q + dqk * R, w.dout = w.acc + dqk * R, w.o = w.dout + dv * R;
        w.k = w.o + dv, w.dk = w.k + dqk * K, w.v = w.dk + dqk * K, w.dv = w.v + dv * K;
    }
    for (;;) {
        long long it = atomic_fetch_add(&jb->next, 1);
        if (it >= jb->items || atomic_load(&jb->failed)) break;
        run_item(jb, it, &w);
    }
    free(mem);
    return NULL;
}

static portattn_status_t cpu_bwd_run(const pa_bwd_problem *pb, void *stream, char *err, size_t err_len)
{
    (void)stream; /* synchronous */
    const pa_problem *f = &pb->fwd;
    bwd_job jb;
    jb.pb = pb;
    jb.qblocks = (f->max_seqlen_q + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
    jb.kblocks = (f->max_seqlen_k + KEYS_PER_ITEM - 1) / KEYS_PER_ITEM;
    jb.dq_items = f->p.batch * f->p.heads_q * jb.qblocks;
    jb.items = jb.dq_items + f->p.batch * f->p.heads_kv * jb.kblocks;
    atomic_init(&jb.next, 0);
    atomic_init(&jb.failed, 0);
    if (jb.items == 0) return PORTATTN_SUCCESS;
    int n = pa_cpu_thread_count();
    if (n > jb.items) n = (int)jb.items;
    if (n > MAX_THREADS) n = MAX_THREADS;
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (; started < n - 1; started++)
        if (pthread_create(&tid[started], NULL, worker, &jb)) break; /* fewer threads still finish */
    worker(&jb);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (atomic_load(&jb.failed))
        return pa_fmt(err, err_len, PORTATTN_ERROR_OUT_OF_MEMORY, "cannot allocate the per-thread row buffers");
    return PORTATTN_SUCCESS;
}

static int cpu_bwd_supports(const pa_bwd_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->fwd.p;
    const struct { const char *name; const void *ptr; } ptrs[] = {
        {"q.data", p->q.data}, {"k.data", p->k.data}, {"v.data", p->v.data}, {"o.data", p->o.data},
        {"dout.data", pb->dout.data}, {"lse", p->lse}, {"dq.data", pb->dq.data}, {"dk.data", pb->dk.data},
        {"dv.data", pb->dv.data}, {"cu_seqlens_q", p->cu_seqlens_q}, {"cu_seqlens_k", p->cu_seqlens_k}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i].ptr && !pa_host_accessible(ptrs[i].ptr)) {
            snprintf(why, why_len, "%s is device memory", ptrs[i].name);
            return 0;
        }
    snprintf(kernel, kernel_len, "cpu-ref-bwd<%s>", pa_dtype_name(p->dtype));
    return 1;
}

const pa_bwd_backend pa_bwd_backend_cpu = {PORTATTN_BACKEND_CPU, cpu_bwd_supports, cpu_bwd_run, NULL, NULL};
