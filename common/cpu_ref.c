/* The CPU reference backend: the oracle. Every API feature, scores and softmax in double with an
 * exact two-pass softmax (no online rescaling), threads across (batch, head, block of query rows). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "frontend.h"
#include "half.h"

enum { ROWS_PER_ITEM = 16, MAX_THREADS = 64 };

typedef struct job {
    const pa_problem *pb;
    double *scratch;      /* per thread: the scores of one row, its O accumulator, its Q row */
    int64_t keys;         /* most keys one row can see: the scratch's score part */
    int64_t qblocks;      /* blocks of query rows per (batch, head) */
    int64_t items;        /* batch * heads_q * qblocks */
    atomic_llong next;    /* next work item */
    atomic_int slot;      /* next worker's scratch */
} job;

/* Element offset of key/value row j of sequence b (k0: packed start when the keys are packed):
 * contiguous, or through the page table. */
static int64_t kv_row(const pa_problem *pb, const portattn_tensor_t *t, int64_t b, int64_t k0, int64_t j)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!p->block_table) return (pb->varlen_k ? 0 : b * t->stride[0]) + (k0 + j) * t->stride[1];
    int64_t page = p->block_table[b * p->block_table_stride + j / p->page_size];
    return page * t->stride[0] + (j % p->page_size) * t->stride[1];
}

/* x . row and acc += w row, the row (n elements, stride st, from element off) in the call's dtype,
 * chosen once per row rather than per element; products and sums in double. Fused rather than
 * pa_load_row_f64 into a buffer first: that extra pass cost the CPU forward table 15%. */
static double dot_row(portattn_dtype_t dt, const void *base, int64_t off, int64_t st, const double *x, int64_t n)
{
    double s = 0.0;
    if (dt == PORTATTN_DTYPE_F32) {
        const float *r = (const float *)base + off;
        for (int64_t d = 0; d < n; d++) s += x[d] * r[d * st];
    } else if (dt == PORTATTN_DTYPE_F16) {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) s += x[d] * pa_f16_to_f32(r[d * st]);
    } else {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) s += x[d] * pa_bf16_to_f32(r[d * st]);
    }
    return s;
}

static void axpy_row(portattn_dtype_t dt, const void *base, int64_t off, int64_t st, double w, double *acc, int64_t n)
{
    if (dt == PORTATTN_DTYPE_F32) {
        const float *r = (const float *)base + off;
        for (int64_t d = 0; d < n; d++) acc[d] += w * r[d * st];
    } else if (dt == PORTATTN_DTYPE_F16) {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) acc[d] += w * pa_f16_to_f32(r[d * st]);
    } else {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) acc[d] += w * pa_bf16_to_f32(r[d * st]);
    }
}

/* One query row: two passes over the visible keys, in double. */
static void row(const pa_problem *pb, int64_t b, int64_t h, int64_t i, int64_t sq, int64_t sk, int64_t q0,
                int64_t k0, double *s, double *acc, double *qd)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t hk = h / pb->group, dqk = p->head_dim_qk, dv = p->head_dim_v;
    const int64_t bq = pb->varlen ? 0 : b * p->q.stride[0], bo = pb->varlen ? 0 : b * p->o.stride[0];
    const int64_t qoff = bq + (q0 + i) * p->q.stride[1] + h * p->q.stride[2];
    const int64_t ooff = bo + (q0 + i) * p->o.stride[1] + h * p->o.stride[2];
    int64_t lo, hi;
    pa_key_range(i, sq, sk, pb->window_left, pb->window_right, &lo, &hi);

    double mx = -INFINITY, sum = 0.0;
    int nan_score = 0;
    pa_load_row_f64(p->dtype, p->q.data, qoff, p->q.stride[3], dqk, qd);
    for (int64_t j = lo; j <= hi; j++) {
        const int64_t koff = kv_row(pb, &p->k, b, k0, j) + hk * p->k.stride[2];
        double x = dot_row(p->dtype, p->k.data, koff, p->k.stride[3], qd, dqk) * (double)pb->scale;
        if (p->softcap > 0) x = (double)p->softcap * tanh(x / (double)p->softcap);
        s[j - lo] = x;
        if (x > mx) mx = x;
        nan_score |= isnan(x);
    }
    /* NaN/inf contract (README): a NaN score makes the row NaN; scores that are all -inf count as
     * no visible key (O = 0, LSE = -inf), as in the GPU kernels, where -inf is the mask value. */
    const int none = lo > hi || (mx == -INFINITY && !nan_score);
    for (int64_t d = 0; d < dv; d++) acc[d] = 0.0;
    for (int64_t j = lo; j <= hi; j++) {
        const int64_t voff = kv_row(pb, &p->v, b, k0, j) + hk * p->v.stride[2];
        double w = exp(s[j - lo] - mx);
        sum += w;
        axpy_row(p->dtype, p->v.data, voff, p->v.stride[3], w, acc, dv);
    }
    /* A row with no visible key writes O = 0 and LSE = -inf. NaN inputs propagate to this row. */
    for (int64_t d = 0; d < dv; d++) pa_store_elem(p->dtype, p->o.data, ooff + d * p->o.stride[3], none ? 0.0f : (float)(acc[d] / sum));
    if (p->lse) {
        const int64_t l = (pb->varlen ? 0 : b * p->lse_stride[0]) + h * p->lse_stride[1] + (q0 + i) * p->lse_stride[2];
        p->lse[l] = none ? -INFINITY : (float)(mx + log(sum));
    }
}

static void *worker(void *arg)
{
    job *jb = arg;
    const pa_problem *pb = jb->pb;
    const portattn_fwd_params_t *p = &pb->p;
    double *s = jb->scratch + (size_t)atomic_fetch_add(&jb->slot, 1) * (size_t)(jb->keys + p->head_dim_v + p->head_dim_qk);
    double *acc = s + jb->keys, *qd = acc + p->head_dim_v;
    for (;;) {
        long long it = atomic_fetch_add(&jb->next, 1);
        if (it >= jb->items) break;
        int64_t blk = it % jb->qblocks, h = (it / jb->qblocks) % p->heads_q, b = it / jb->qblocks / p->heads_q;
        int64_t sq = p->seqlen_q, sk = p->seqlen_k, q0 = 0, k0 = 0;
        if (pb->varlen) /* validated by the front end: monotone and within the totals */
            q0 = p->cu_seqlens_q[b], sq = p->cu_seqlens_q[b + 1] - q0;
        if (pb->varlen_k) k0 = p->cu_seqlens_k[b], sk = p->cu_seqlens_k[b + 1] - k0;
        if (p->seqused_k) sk = pa_cache_len(pb, p->seqused_k[b]); /* validated: within the capacity */
        for (int64_t i = blk * ROWS_PER_ITEM; i < sq && i < (blk + 1) * ROWS_PER_ITEM; i++)
            row(pb, b, h, i, sq, sk, q0, k0, s, acc, qd);
    }
    return NULL;
}

/* Append: new tokens go into the cache at rows seqused_k[b] + i, before any row is computed. */
static void append_new_tokens(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t i = 0; i < pb->seqlen_new; i++) {
            const int64_t j = (p->seqused_k[b] < 0 ? 0 : p->seqused_k[b]) + i;
            if (j >= p->seqlen_k) break; /* validated; never write past the capacity */
            for (int64_t h = 0; h < p->heads_kv; h++) {
                const int64_t ko = kv_row(pb, &p->k, b, 0, j) + h * p->k.stride[2];
                const int64_t vo = kv_row(pb, &p->v, b, 0, j) + h * p->v.stride[2];
                const int64_t kn = b * p->k_new.stride[0] + i * p->k_new.stride[1] + h * p->k_new.stride[2];
                const int64_t vn = b * p->v_new.stride[0] + i * p->v_new.stride[1] + h * p->v_new.stride[2];
                for (int64_t d = 0; d < p->head_dim_qk; d++)
                    pa_store_elem(p->dtype, p->k.data, ko + d * p->k.stride[3],
                                  pa_load_elem(p->dtype, p->k_new.data, kn + d * p->k_new.stride[3]));
                for (int64_t d = 0; d < p->head_dim_v; d++)
                    pa_store_elem(p->dtype, p->v.data, vo + d * p->v.stride[3],
                                  pa_load_elem(p->dtype, p->v_new.data, vn + d * p->v_new.stride[3]));
            }
        }
}

int pa_cpu_thread_count(void)
{
    const char *env = getenv("PORTATTN_NUM_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* The most keys one query row can see: the longest sequence (the cache lengths plus the appended
 * tokens, not the capacity, for a KV cache), at most the width of a window bounded on both sides. */
static int64_t keys_per_row(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    int64_t n = pb->varlen_k ? pb->max_seqlen_k : p->seqlen_k; /* over a KV cache: the capacity */
    if (p->seqused_k) {
        n = 0;
        for (int64_t b = 0; b < p->batch; b++)
            if (pa_cache_len(pb, p->seqused_k[b]) > n) n = pa_cache_len(pb, p->seqused_k[b]);
    }
    if (pb->window_left >= 0 && pb->window_right >= 0 && pb->window_left < n && pb->window_right < n - pb->window_left)
        n = pb->window_left + pb->window_right + 1;
    return n;
}

static portattn_status_t cpu_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    (void)ch, (void)stream; /* one kernel; synchronous */
    job jb;
    jb.pb = pb;
    jb.qblocks = (pb->max_seqlen_q + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
    jb.items = pb->p.batch * pb->p.heads_q * jb.qblocks;
    jb.keys = keys_per_row(pb);
    atomic_init(&jb.next, 0);
    atomic_init(&jb.slot, 0);
    int n = pa_cpu_thread_count();
    if (n > jb.items) n = jb.items > 0 ? (int)jb.items : 1;

    /* Every refusal comes before the append, so a failed call leaves the cache as it was. Sk may be
     * huge with a zero key stride (validation accepts it): refuse what cannot even be expressed. */
    const uint64_t per_thread = (uint64_t)jb.keys + (uint64_t)pb->p.head_dim_v + (uint64_t)pb->p.head_dim_qk;
    if (per_thread >= SIZE_MAX / sizeof(double) / (uint64_t)n / 2)
        return pa_fmt(err, err_len, PORTATTN_ERROR_OUT_OF_MEMORY, "a %lld-key score buffer does not fit in memory",
                      (long long)jb.keys);
    jb.scratch = malloc(sizeof(double) * (size_t)per_thread * (size_t)n);
    if (!jb.scratch)
        return pa_fmt(err, err_len, PORTATTN_ERROR_OUT_OF_MEMORY, "cannot allocate %d score buffers of %lld keys", n,
                      (long long)jb.keys);
    if (pb->seqlen_new) append_new_tokens(pb);

    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (; started < n - 1 && jb.items > 0; started++)
        if (pthread_create(&tid[started], NULL, worker, &jb)) break; /* fewer threads still finish */
    if (jb.items > 0) worker(&jb); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(jb.scratch);
    return PORTATTN_SUCCESS;
}

static int cpu_probe(char *detail, size_t len)
{
    /* the thread count reads /sys (a syscall): only for the words, which the quiet pass never wants */
    if (detail && len) snprintf(detail, len, "host CPU, %d threads", pa_cpu_thread_count());
    return 1;
}

static int cpu_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    (void)ch; /* nothing to choose */
    const struct { const char *name; const void *ptr; } ptrs[] = {
        {"q.data", p->q.data}, {"k.data", p->k.data}, {"v.data", p->v.data}, {"o.data", p->o.data},
        {"lse", p->lse}, {"cu_seqlens_q", p->cu_seqlens_q}, {"cu_seqlens_k", p->cu_seqlens_k},
        {"seqused_k", p->seqused_k}, {"block_table", p->block_table}, {"k_new.data", p->k_new.data},
        {"v_new.data", p->v_new.data}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i].ptr && !pa_host_accessible(ptrs[i].ptr)) {
            snprintf(why, why_len, "%s is device memory", ptrs[i].name);
            return 0;
        }
    if (kernel && kernel_len) snprintf(kernel, kernel_len, "cpu-ref<%s>", pa_dtype_name(p->dtype));
    return 1;
}

const pa_backend pa_backend_cpu = {PORTATTN_BACKEND_CPU, "cpu", cpu_probe, cpu_supports, cpu_run, NULL};
