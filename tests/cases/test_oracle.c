/* Checks the oracle itself: the CPU backend against an independent, deliberately plain double
 * implementation (full score matrix, per-key mask predicate), dense here and, through naive_ref.c,
 * with varlen, seqused_k, page tables and appends; against closed-form answers; and the fp16/bf16
 * conversions it rests on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "harness.h"
#include "naive_ref.h"
#include "problem.h"

static int failures, checks;

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        checks++;                                                                                       \
        if (!(cond)) {                                                                                  \
            failures++;                                                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
            printf(__VA_ARGS__);                                                                        \
            printf("\n");                                                                               \
        }                                                                                               \
    } while (0)

typedef struct shape {
    int64_t b, sq, sk, hq, hkv, dqk, dv, wl, wr;
    int causal, bhsd;
    float softcap, scale;
} shape;

/* Plain attention in double, straight from the definitions in portattn.h. */
static void naive(const shape *s, const float *q, const float *k, const float *v, double *o, double *lse)
{
    int64_t g = s->hq / s->hkv;
    double scale = s->scale ? s->scale : 1.0 / sqrt((double)s->dqk);
    double *w = malloc(sizeof(double) * (size_t)(s->sk + 1));
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < s->sk; j++) {
                    int64_t shift = s->sk - s->sq; /* bottom-right alignment */
                    int right = s->causal ? 0 : s->wr;
                    int visible = (s->wl < 0 || j >= i + shift - s->wl) && (right < 0 || j <= i + shift + right);
                    double dot = 0;
                    for (int64_t d = 0; d < s->dqk; d++)
                        dot += (double)q[((b * s->sq + i) * s->hq + h) * s->dqk + d] *
                               (double)k[((b * s->sk + j) * s->hkv + h / g) * s->dqk + d];
                    dot *= scale;
                    if (s->softcap > 0) dot = s->softcap * tanh(dot / s->softcap);
                    w[j] = visible ? dot : -INFINITY;
                    mx = fmax(mx, w[j]);
                }
                for (int64_t j = 0; j < s->sk; j++) sum += w[j] = isinf(w[j]) ? 0 : exp(w[j] - mx);
                for (int64_t d = 0; d < s->dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < s->sk; j++) acc += w[j] * v[((b * s->sk + j) * s->hkv + h / g) * s->dv + d];
                    o[((b * s->sq + i) * s->hq + h) * s->dv + d] = sum > 0 ? acc / sum : 0;
                }
                lse[(b * s->hq + h) * s->sq + i] = sum > 0 ? mx + log(sum) : -INFINITY;
            }
    free(w);
}

/* Runs the CPU backend on contiguous BSHD (or BHSD-strided) fp32 buffers. */
static portattn_status_t cpu(const shape *s, const float *q, const float *k, const float *v, float *o, float *lse)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32, p.backend = PORTATTN_BACKEND_CPU;
    p.batch = s->b, p.seqlen_q = s->sq, p.seqlen_k = s->sk, p.heads_q = s->hq, p.heads_kv = s->hkv;
    p.head_dim_qk = s->dqk, p.head_dim_v = s->dv;
    p.q = portattn_tensor_bshd((void *)q, s->sq, s->hq, s->dqk);
    p.k = portattn_tensor_bshd((void *)k, s->sk, s->hkv, s->dqk);
    p.v = portattn_tensor_bshd((void *)v, s->sk, s->hkv, s->dv);
    p.o = portattn_tensor_bshd(o, s->sq, s->hq, s->dv);
    p.lse = lse, p.lse_stride[0] = s->hq * s->sq, p.lse_stride[1] = s->sq, p.lse_stride[2] = 1;
    p.causal = s->causal, p.window_left = s->wl, p.window_right = s->wr;
    p.softcap = s->softcap, p.softmax_scale = s->scale;
    return portattn_forward(&p, NULL);
}

static void compare_with_naive(const char *name, shape s, uint64_t *rng)
{
    int64_t nq = s.b * s.sq * s.hq, nk = s.b * s.sk * s.hkv;
    float *q = malloc(sizeof(float) * (size_t)(nq * s.dqk)), *k = malloc(sizeof(float) * (size_t)(nk * s.dqk));
    float *v = malloc(sizeof(float) * (size_t)(nk * s.dv)), *o = malloc(sizeof(float) * (size_t)(nq * s.dv));
    float *lse = malloc(sizeof(float) * (size_t)nq);
    double *ro = malloc(sizeof(double) * (size_t)(nq * s.dv)), *rl = malloc(sizeof(double) * (size_t)nq);
    for (int64_t i = 0; i < nq * s.dqk; i++) q[i] = (float)urand(rng);
    for (int64_t i = 0; i < nk * s.dqk; i++) k[i] = (float)urand(rng);
    for (int64_t i = 0; i < nk * s.dv; i++) v[i] = (float)urand(rng);
    memset(o, 0xff, sizeof(float) * (size_t)(nq * s.dv));
    naive(&s, q, k, v, ro, rl);
    portattn_status_t st = cpu(&s, q, k, v, o, lse);
    CHECK(st == PORTATTN_SUCCESS, "%s: %s", name, portattn_last_error());
    double worst = 0, worst_lse = 0;
    for (int64_t i = 0; i < nq * s.dv; i++) worst = fmax(worst, isnan(o[i]) ? INFINITY : fabs(o[i] - ro[i]));
    for (int64_t i = 0; i < nq; i++)
        worst_lse = fmax(worst_lse, isinf(rl[i]) ? (lse[i] == rl[i] ? 0 : INFINITY) : fabs(lse[i] - rl[i]));
    CHECK(worst < 1e-6 && worst_lse < 1e-5, "%s: max |O - naive| %.2e, |LSE - naive| %.2e", name, worst, worst_lse);
    printf("%-4s oracle vs naive %-24s max_err %.1e lse_err %.1e\n", worst < 1e-6 && worst_lse < 1e-5 ? "ok" : "FAIL",
           name, worst, worst_lse);
    free(q), free(k), free(v), free(o), free(lse), free(ro), free(rl);
}

/* A KV-cache or varlen call, built at random and checked against naive_ref.c. */
typedef struct kvcase {
    const char *name;
    portattn_dtype_t dt;
    int64_t b, sq, sk, hq, hkv, dqk, dv, wl, wr;
    int causal;
    float softcap;
    int varlen;        /* random packed lengths, some empty; with used or page: packed queries over the
                          cache (cu_seqlens_k NULL, the keys per sequence) */
    int used;          /* seqused_k: random cache lengths (some 0) */
    int64_t page;      /* page size of a shuffled pool (0 = contiguous) */
    int64_t append;    /* tokens appended per sequence */
    int interleaved;   /* K and V in one [n, s, Hkv, 2, D] buffer */
} kvcase;

static void fill(portattn_dtype_t dt, void *buf, int64_t n, uint64_t *rng)
{
    for (int64_t i = 0; i < n; i++) pa_store_elem(dt, buf, i, (float)(urand(rng) + 0.001));
}

/* Element offset of (key j of sequence b, head h) in the cache t: contiguous or through the table. */
static int64_t cache_row(const portattn_fwd_params_t *p, const portattn_tensor_t *t, int64_t b, int64_t j, int64_t h)
{
    int64_t n = b, r = j;
    if (p->block_table) n = p->block_table[b * p->block_table_stride + j / p->page_size], r = j % p->page_size;
    return n * t->stride[0] + r * t->stride[1] + h * t->stride[2];
}

static void check_kv(kvcase c, uint64_t *rng)
{
    const int64_t es = pa_dtype_size(c.dt), pad = 3;
    static int32_t cuq[16], cuk[16], su[16], bt[16 * 64];
    const int serving = c.varlen && (c.used || c.page);
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = c.dt, p.backend = PORTATTN_BACKEND_CPU, p.batch = c.b, p.heads_q = c.hq, p.heads_kv = c.hkv;
    p.head_dim_qk = c.dqk, p.head_dim_v = c.dv, p.causal = c.causal, p.window_left = c.wl, p.window_right = c.wr;
    p.softcap = c.softcap, p.seqlen_q = c.sq, p.seqlen_k = c.sk;
    if (c.varlen) {
        cuq[0] = cuk[0] = 0;
        for (int64_t b = 0; b < c.b; b++) { /* sequence 1 is empty on both sides */
            cuq[b + 1] = cuq[b] + (b == 1 ? 0 : (int32_t)((urand(rng) + 1) * 0.5 * (double)(c.sq + 1)) % (int32_t)(c.sq + 1));
            cuk[b + 1] = cuk[b] + (b == 1 ? 0 : (int32_t)((urand(rng) + 1) * 0.5 * (double)(c.sk + 1)) % (int32_t)(c.sk + 1));
        }
        p.cu_seqlens_q = cuq, p.seqlen_q = cuq[c.b] + 2;
        if (!serving) p.cu_seqlens_k = cuk, p.seqlen_k = cuk[c.b] + 1;
    }
    const int64_t nb = c.varlen ? 1 : c.b, pages_per_seq = c.page ? (c.sk + c.page - 1) / c.page : 0;
    const int64_t kv_n = c.page ? c.b * pages_per_seq + 2 : serving ? c.b : nb, kv_s = c.page ? c.page : p.seqlen_k;
    if (c.used || c.append) {
        for (int64_t b = 0; b < c.b; b++)
            su[b] = b == 0 ? 0 : (int32_t)((urand(rng) + 1) * 0.5 * (double)(c.sk - c.append + 1)) % (int32_t)(c.sk - c.append + 1);
        p.seqused_k = su;
    }
    if (c.page) { /* a shuffled pool: sequence b's page g is a random page, no two alike */
        for (int64_t i = 0; i < kv_n; i++) bt[i] = (int32_t)i;
        for (int64_t i = kv_n - 1; i > 0; i--) {
            int64_t j = (int64_t)((urand(rng) + 1) * 0.5 * (double)(i + 1)) % (i + 1);
            int32_t t = bt[i]; bt[i] = bt[j]; bt[j] = t;
        }
        p.block_table = bt, p.block_table_stride = pages_per_seq, p.page_size = c.page, p.num_pages = kv_n;
    }
    /* Q, O padded in D; K, V padded or interleaved */
    const int64_t dq = c.dqk + pad, dvp = c.dv + pad, nq = nb * p.seqlen_q * c.hq;
    void *q = malloc((size_t)(nq * dq * es)), *o = malloc((size_t)(nq * dvp * es));
    float *lse = malloc(sizeof(float) * (size_t)(nq + 1));
    p.q = (portattn_tensor_t){q, {p.seqlen_q * c.hq * dq, c.hq * dq, dq, 1}};
    p.o = (portattn_tensor_t){o, {p.seqlen_q * c.hq * dvp, c.hq * dvp, dvp, 1}};
    p.lse = lse, p.lse_stride[0] = c.hq * p.seqlen_q, p.lse_stride[1] = p.seqlen_q, p.lse_stride[2] = 1;
    const int64_t krow = c.interleaved ? 2 * c.dqk : dq, vrow = c.interleaved ? 2 * c.dv : dvp;
    const int64_t kelems = kv_n * kv_s * c.hkv * krow, velems = c.interleaved ? 0 : kv_n * kv_s * c.hkv * vrow;
    unsigned char *kv = malloc((size_t)((kelems + velems) * es)), *snap = malloc((size_t)((kelems + velems) * es));
    p.k = (portattn_tensor_t){kv, {kv_s * c.hkv * krow, c.hkv * krow, krow, 1}};
    p.v = (portattn_tensor_t){kv + (c.interleaved ? c.dqk : kelems) * es, {kv_s * c.hkv * vrow, c.hkv * vrow, vrow, 1}};
    void *kn = NULL, *vn = NULL;
    const int64_t nnew = c.b * c.append * c.hkv;
    if (c.append) {
        kn = malloc((size_t)(nnew * c.dqk * es)), vn = malloc((size_t)(nnew * c.dv * es));
        p.k_new = portattn_tensor_bshd(kn, c.append, c.hkv, c.dqk), p.v_new = portattn_tensor_bshd(vn, c.append, c.hkv, c.dv);
        p.seqlen_new = c.append;
        fill(c.dt, kn, nnew * c.dqk, rng), fill(c.dt, vn, nnew * c.dv, rng);
    }
    fill(c.dt, q, nq * dq, rng), fill(c.dt, kv, kelems + velems, rng);
    memset(o, 0xff, (size_t)(nq * dvp * es)), memset(lse, 0xff, sizeof(float) * (size_t)(nq + 1));
    memcpy(snap, kv, (size_t)((kelems + velems) * es));
    const int64_t rows = naive_rows(&p) * c.hq;
    double *ro = malloc(sizeof(double) * (size_t)(rows * c.dv + 1)), *rl = malloc(sizeof(double) * (size_t)(rows + 1));
    CHECK(naive_forward(&p, ro, rl) == 0, "%s: reference out of memory", c.name);
    portattn_status_t st = portattn_forward(&p, NULL);
    CHECK(st == PORTATTN_SUCCESS, "%s: %s", c.name, portattn_last_error());
    long bad = st ? -1 : naive_compare(c.name, &p, ro, rl);
    CHECK(bad == 0, "%s: %ld elements differ from the reference", c.name, bad);
    /* the cache afterwards: the snapshot with exactly the appended rows written */
    for (int64_t b = 0; b < c.b && c.append; b++)
        for (int64_t i = 0; i < c.append; i++)
            for (int64_t h = 0; h < c.hkv; h++) {
                const int64_t ko = cache_row(&p, &p.k, b, su[b] + i, h), vo = cache_row(&p, &p.v, b, su[b] + i, h);
                const int64_t vbase = c.interleaved ? c.dqk : kelems;
                memcpy(snap + ko * es, (unsigned char *)kn + ((b * c.append + i) * c.hkv + h) * c.dqk * es, (size_t)(c.dqk * es));
                memcpy(snap + (vbase + vo) * es, (unsigned char *)vn + ((b * c.append + i) * c.hkv + h) * c.dv * es,
                       (size_t)(c.dv * es));
            }
    CHECK(memcmp(snap, kv, (size_t)((kelems + velems) * es)) == 0, "%s: the cache differs from the expected append", c.name);
    printf("%-4s oracle vs naive %-34s %s\n", bad == 0 && !st ? "ok" : "FAIL", c.name, pa_dtype_name(c.dt));
    free(q), free(o), free(lse), free(kv), free(snap), free(kn), free(vn), free(ro), free(rl);
}

/* The serving call (packed queries over a shuffled page pool with a shared prefix page and unused
 * pages) against one call per sequence over a contiguous copy of its keys. The CPU backend computes
 * every row on its own, so the two must agree bit for bit, O and LSE. */
static void serving_vs_per_sequence(portattn_dtype_t dt, uint64_t *rng)
{
    enum { B = 6, HQ = 6, HKV = 2, D = 16, PAGE = 8, CAP = 64, PPS = CAP / PAGE, NPAGES = B * PPS + 3 };
    static const int32_t nq[B] = {13, 1, 0, 1, 7, 1}; /* chunks, decodes and an idle sequence */
    const int64_t es = pa_dtype_size(dt);
    int32_t cuq[B + 1] = {0}, used[B], bt[B * PPS], pool[NPAGES];
    for (int b = 0; b < B; b++) {
        cuq[b + 1] = cuq[b] + nq[b]; /* a chunk's tokens are in the cache: at least nq keys, one empty decode */
        used[b] = b == 5 ? 0 : nq[b] + (int32_t)((urand(rng) + 1) * 0.5 * (CAP - nq[b] + 1)) % (CAP - nq[b] + 1);
    }
    for (int i = 0; i < NPAGES; i++) pool[i] = i;
    for (int i = NPAGES - 1; i > 0; i--) {
        int j = (int)((urand(rng) + 1) * 0.5 * (i + 1)) % (i + 1), t = pool[i];
        pool[i] = pool[j], pool[j] = t;
    }
    for (int i = 0; i < B * PPS; i++) bt[i] = pool[i]; /* the last 3 pages of the pool stay unused */
    bt[3 * PPS] = bt[1 * PPS] = bt[0];                 /* a prefix page three sequences share */
    const int64_t total = cuq[B], qn = total * HQ * D, kn = (int64_t)NPAGES * PAGE * HKV * D;
    void *q = malloc((size_t)(qn * es)), *k = malloc((size_t)(kn * es)), *v = malloc((size_t)(kn * es));
    void *o = malloc((size_t)(qn * es)), *o1 = malloc((size_t)(qn * es));
    void *k1 = malloc((size_t)(CAP * HKV * D * es)), *v1 = malloc((size_t)(CAP * HKV * D * es));
    float *lse = malloc(sizeof(float) * (size_t)(total * HQ)), *lse1 = malloc(sizeof(float) * (size_t)(total * HQ));
    if (!q || !k || !v || !o || !o1 || !k1 || !v1 || !lse || !lse1) {
        CHECK(0, "serving_vs_per_sequence: out of host memory");
        goto out;
    }
    fill(dt, q, qn, rng), fill(dt, k, kn, rng), fill(dt, v, kn, rng);
    for (int mask = 0; mask < 2; mask++) { /* causal; then a two-sided window with softcap */
        portattn_fwd_params_t p;
        portattn_fwd_params_init(&p);
        p.dtype = dt, p.backend = PORTATTN_BACKEND_CPU, p.batch = B, p.seqlen_q = total, p.seqlen_k = CAP;
        p.heads_q = HQ, p.heads_kv = HKV, p.head_dim_qk = p.head_dim_v = D;
        p.causal = !mask, p.window_left = mask ? 9 : -1, p.window_right = mask ? 2 : -1, p.softcap = mask ? 3.0f : 0;
        p.q = portattn_tensor_bshd(q, total, HQ, D), p.o = portattn_tensor_bshd(o, total, HQ, D);
        p.k = portattn_tensor_bshd(k, PAGE, HKV, D), p.v = portattn_tensor_bshd(v, PAGE, HKV, D);
        p.lse = lse, p.lse_stride[1] = total, p.lse_stride[2] = 1;
        p.cu_seqlens_q = cuq, p.seqused_k = used;
        p.block_table = bt, p.block_table_stride = PPS, p.page_size = PAGE, p.num_pages = NPAGES;
        memset(o, 0xff, (size_t)(qn * es)), memset(lse, 0xff, sizeof(float) * (size_t)(total * HQ));
        portattn_status_t st = portattn_forward(&p, NULL);
        CHECK(st == PORTATTN_SUCCESS, "serving call: %s", portattn_last_error());
        int same = st == PORTATTN_SUCCESS;
        for (int b = 0; b < B && same; b++) {
            for (int32_t j = 0; j < used[b]; j++) /* sequence b's keys, gathered through its page table row */
                for (int64_t x = 0; x < HKV * D; x++) {
                    const int64_t src = ((int64_t)bt[b * PPS + j / PAGE] * PAGE + j % PAGE) * HKV * D + x;
                    pa_store_elem(dt, k1, j * HKV * D + x, pa_load_elem(dt, k, src));
                    pa_store_elem(dt, v1, j * HKV * D + x, pa_load_elem(dt, v, src));
                }
            portattn_fwd_params_t s = p;
            s.batch = 1, s.seqlen_q = nq[b], s.seqlen_k = used[b];
            s.cu_seqlens_q = NULL, s.seqused_k = NULL, s.block_table = NULL;
            s.block_table_stride = s.page_size = s.num_pages = 0;
            s.q.data = (char *)q + (int64_t)cuq[b] * HQ * D * es, s.o.data = (char *)o1 + (int64_t)cuq[b] * HQ * D * es;
            s.q.stride[0] = s.o.stride[0] = nq[b] * HQ * D;
            s.k = portattn_tensor_bshd(k1, used[b], HKV, D), s.v = portattn_tensor_bshd(v1, used[b], HKV, D);
            s.lse = lse1, s.lse_stride[0] = HQ * nq[b], s.lse_stride[1] = nq[b], s.lse_stride[2] = 1;
            st = portattn_forward(&s, NULL);
            CHECK(st == PORTATTN_SUCCESS, "sequence %d alone: %s", b, portattn_last_error());
            same = st == PORTATTN_SUCCESS &&
                   !memcmp((char *)o + (int64_t)cuq[b] * HQ * D * es, (char *)o1 + (int64_t)cuq[b] * HQ * D * es,
                           (size_t)(nq[b] * HQ * D * es));
            for (int h = 0; h < HQ && same; h++)
                same = !memcmp(lse + h * total + cuq[b], lse1 + h * nq[b], sizeof(float) * (size_t)nq[b]);
            CHECK(same, "%s mask %d: sequence %d differs from its own call", pa_dtype_name(dt), mask, b);
        }
        printf("%-4s serving call = per-sequence calls, bitwise (%s, %s)\n", same ? "ok" : "FAIL", pa_dtype_name(dt),
               mask ? "window 9/2 + softcap" : "causal");
    }
out:
    free(q), free(k), free(v), free(o), free(o1), free(k1), free(v1), free(lse), free(lse1);
}

/* A 3-key decode in a cache of 2^40 keys' capacity (pages of 2^20 keys): the CPU backend must size
 * its scratch by the keys a row sees, not the capacity, and append only once it cannot fail. */
static void huge_capacity(uint64_t *rng)
{
    enum { HQ = 2, DD = 4, PAGE = 1 << 20 };
    const int64_t cap = (int64_t)1 << 40, pages = cap / PAGE;
    float *pool = malloc(sizeof(float) * 2 * PAGE * DD), q[HQ * DD], o[HQ * DD], lse[HQ], kn[DD], vn[DD];
    int32_t *table = calloc((size_t)pages, sizeof(int32_t)), used = 2;
    if (!pool || !table) {
        CHECK(0, "huge_capacity: out of host memory");
        free(pool), free(table);
        return;
    }
    for (int i = 0; i < 2 * DD * 2; i++) pool[i] = (float)urand(rng); /* keys 0, 1 of the interleaved K/V page */
    for (int i = 0; i < HQ * DD; i++) q[i] = (float)urand(rng), o[i] = NAN;
    for (int i = 0; i < DD; i++) kn[i] = (float)urand(rng), vn[i] = (float)urand(rng);
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32, p.backend = PORTATTN_BACKEND_CPU, p.batch = 1, p.seqlen_q = 1, p.seqlen_k = cap;
    p.heads_q = HQ, p.heads_kv = 1, p.head_dim_qk = p.head_dim_v = DD;
    p.q = portattn_tensor_bshd(q, 1, HQ, DD), p.o = portattn_tensor_bshd(o, 1, HQ, DD);
    p.k = (portattn_tensor_t){pool, {PAGE * 2 * DD, 2 * DD, DD, 1}};
    p.v = (portattn_tensor_t){pool + DD, {PAGE * 2 * DD, 2 * DD, DD, 1}};
    p.lse = lse, p.lse_stride[1] = 1;
    p.block_table = table, p.block_table_stride = pages, p.page_size = PAGE, p.num_pages = 1, p.seqused_k = &used;
    p.k_new = portattn_tensor_bshd(kn, 1, 1, DD), p.v_new = portattn_tensor_bshd(vn, 1, 1, DD), p.seqlen_new = 1;
    double ro[HQ * DD], rl[HQ];
    CHECK(naive_forward(&p, ro, rl) == 0, "huge_capacity: reference out of memory");
    portattn_status_t st = portattn_forward(&p, NULL);
    CHECK(st == PORTATTN_SUCCESS, "huge_capacity: 3 keys in a 2^40-key cache: %s: %s", portattn_status_string(st),
          portattn_last_error());
    CHECK(!st && naive_compare("huge_capacity", &p, ro, rl) == 0, "huge_capacity: O/LSE differ from the reference");
    printf("%-4s decode of 3 keys in a 2^40-key paged cache\n", st ? "FAIL" : "ok");
    free(pool), free(table);
}

static void closed_forms(uint64_t *rng)
{
    /* One key: O is V exactly, LSE is the scaled score. */
    shape s = {1, 5, 1, 2, 1, 8, 8, -1, -1, 0, 0, 0, 0};
    float q[5 * 2 * 8], k[8], v[8], o[5 * 2 * 8], lse[10];
    for (int i = 0; i < 80; i++) q[i] = (float)urand(rng);
    for (int i = 0; i < 8; i++) k[i] = (float)urand(rng), v[i] = (float)urand(rng);
    CHECK(cpu(&s, q, k, v, o, lse) == PORTATTN_SUCCESS, "sk=1: %s", portattn_last_error());
    for (int i = 0; i < 80; i++) CHECK(o[i] == v[i % 8], "sk=1: O[%d] = %g, expected V = %g", i, o[i], v[i % 8]);

    /* Identical keys: uniform weights, O = mean of V, LSE = score + log(Sk). */
    shape u = {1, 1, 4, 1, 1, 2, 1, -1, -1, 0, 0, 0, 1.0f};
    float uq[2] = {0.5f, -1}, uk[8] = {1, 2, 1, 2, 1, 2, 1, 2}, uv[4] = {1, 2, 3, 6}, uo[1], ul[1];
    CHECK(cpu(&u, uq, uk, uv, uo, ul) == PORTATTN_SUCCESS, "uniform: %s", portattn_last_error());
    CHECK(fabsf(uo[0] - 3.0f) < 1e-6f, "uniform: O = %g, expected 3", uo[0]);
    CHECK(fabs(ul[0] - (-1.5 + log(4.0))) < 1e-6, "uniform: LSE = %g, expected %g", ul[0], -1.5 + log(4.0));

    /* Products in double: q = k0 = 1 + 2^-12 in all 64 dims, k1 = 1. Each q*k0 is 1 + 2^-11 + 2^-24, which
     * float would round to 1 + 2^-11, so the score gap is 2^-6 + 2^-18 (2^-6 in float products); at
     * scale -64 that moves O = 2p - 1 (p the weight of key 0, V = +-1) by about 1e-4. */
    {
        shape e = {1, 1, 2, 1, 1, 64, 1, -1, -1, 0, 0, 0, -64.0f};
        float eq[64], ek[128], ev[2] = {1, -1}, eo[1], el[1];
        for (int i = 0; i < 64; i++) eq[i] = ek[i] = 1.0f + 1.0f / 4096, ek[64 + i] = 1.0f;
        CHECK(cpu(&e, eq, ek, ev, eo, el) == PORTATTN_SUCCESS, "products: %s", portattn_last_error());
        const double gap = -64.0 * (1.0 / 64 + 1.0 / (1 << 18)), want = 2.0 / (1.0 + exp(-gap)) - 1.0;
        CHECK(fabs(eo[0] - want) < 1e-6, "products in double: O = %.9g, expected %.9g", eo[0], want);
    }

    /* Causal with Sq > Sk: the first Sq - Sk rows see no key: O = 0, LSE = -inf. */
    shape c = {1, 4, 2, 1, 1, 2, 2, -1, -1, 1, 0, 0, 0};
    float cq[8], ck[4], cv[4], co[8], cl[4];
    for (int i = 0; i < 8; i++) cq[i] = (float)urand(rng);
    for (int i = 0; i < 4; i++) ck[i] = (float)urand(rng), cv[i] = (float)urand(rng);
    CHECK(cpu(&c, cq, ck, cv, co, cl) == PORTATTN_SUCCESS, "causal: %s", portattn_last_error());
    for (int i = 0; i < 2; i++) {
        CHECK(co[2 * i] == 0 && co[2 * i + 1] == 0, "masked row %d: O = (%g, %g)", i, co[2 * i], co[2 * i + 1]);
        CHECK(isinf(cl[i]) && cl[i] < 0, "masked row %d: LSE = %g", i, cl[i]);
    }
    CHECK(co[4] == cv[0] && co[5] == cv[1], "row 2 sees only key 0: O = (%g, %g)", co[4], co[5]);
}

static void conversions(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pa_f16_to_f32((uint16_t)h);
        if (!isnan(f) && pa_f32_to_f16(f) != h) bad++;
        float g = pa_bf16_to_f32((uint16_t)h);
        if (!isnan(g) && pa_f32_to_bf16(g) != h) bad++;
    }
    CHECK(bad == 0, "%d fp16/bf16 values do not round-trip", bad);
    CHECK(pa_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00, "f16 tie rounds to even (down)");
    CHECK(pa_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02, "f16 tie rounds to even (up)");
    CHECK(pa_f32_to_f16(65520.0f) == 0x7c00 && pa_f32_to_f16(65519.0f) == 0x7bff, "f16 overflow threshold");
    CHECK(pa_f32_to_f16(5.9604645e-8f) == 0x0001 && pa_f32_to_f16(2.9802322e-8f) == 0x0000, "f16 subnormals");
    CHECK(pa_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80 && pa_f32_to_bf16(1.0f + 3.0f / 256) == 0x3f82, "bf16 ties");
    CHECK(isnan(pa_bf16_to_f32(pa_f32_to_bf16(NAN))) && isnan(pa_f16_to_f32(pa_f32_to_f16(NAN))), "NaN stays NaN");
}

int main(void)
{
    uint64_t rng = test_seed();
    /*                                      b  sq  sk  hq hkv dqk dv  wl  wr causal bhsd softcap scale */
    compare_with_naive("plain", (shape){2, 17, 23, 2, 2, 16, 16, -1, -1, 0, 0, 0, 0}, &rng);
    compare_with_naive("causal_sq_gt_sk", (shape){1, 30, 12, 2, 1, 8, 8, -1, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("causal_sq_lt_sk", (shape){1, 12, 30, 4, 2, 8, 12, -1, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("window_5_3", (shape){2, 40, 40, 2, 2, 8, 8, 5, 3, 0, 0, 0, 0}, &rng);
    compare_with_naive("window_left_causal", (shape){1, 40, 50, 3, 1, 8, 8, 7, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("softcap_scale", (shape){1, 20, 20, 2, 2, 8, 8, -1, -1, 0, 0, 2.0f, 3.0f}, &rng);
    compare_with_naive("dqk_ne_dv", (shape){1, 9, 11, 8, 2, 24, 5, -1, 4, 0, 0, 0, 0}, &rng);
    /*        name                         dtype                b  sq  sk  hq hkv dqk dv  wl  wr causal softcap varlen used page append interleaved */
    check_kv((kvcase){"varlen_window_gqa",   PORTATTN_DTYPE_F32,  4, 13, 17, 4, 2, 16, 16, 5, 2, 0, 0, 1, 0, 0, 0, 0}, &rng);
    check_kv((kvcase){"varlen_causal_softcap", PORTATTN_DTYPE_BF16, 3, 9, 21, 2, 1, 8, 12, -1, -1, 1, 3.0f, 1, 0, 0, 0, 0}, &rng);
    check_kv((kvcase){"seqused_k",           PORTATTN_DTYPE_F16,  3, 3, 40, 4, 1, 16, 16, -1, -1, 1, 0, 0, 1, 0, 0, 0}, &rng);
    check_kv((kvcase){"paged4_seqused_window", PORTATTN_DTYPE_BF16, 3, 2, 30, 4, 2, 8, 8, 6, -1, 0, 0, 0, 1, 4, 0, 0}, &rng);
    check_kv((kvcase){"paged8_no_seqused",   PORTATTN_DTYPE_F32,  2, 5, 29, 2, 2, 8, 4, -1, -1, 1, 0, 0, 0, 8, 0, 0}, &rng);
    check_kv((kvcase){"append_contiguous",   PORTATTN_DTYPE_F32,  3, 2, 24, 4, 2, 8, 8, -1, -1, 1, 0, 0, 1, 0, 3, 0}, &rng);
    check_kv((kvcase){"append_paged4_interleaved", PORTATTN_DTYPE_BF16, 3, 4, 32, 4, 1, 8, 8, -1, -1, 1, 0, 0, 1, 4, 4, 1}, &rng);
    check_kv((kvcase){"append_paged16_interleaved", PORTATTN_DTYPE_F16, 2, 1, 40, 2, 2, 16, 16, -1, -1, 0, 0, 0, 1, 16, 1, 1}, &rng);
    check_kv((kvcase){"serving_paged4_gqa_causal", PORTATTN_DTYPE_BF16, 5, 9, 37, 4, 2, 8, 8, -1, -1, 1, 0, 1, 1, 4, 0, 0}, &rng);
    check_kv((kvcase){"serving_used_window_softcap", PORTATTN_DTYPE_F32, 4, 6, 30, 2, 1, 16, 8, 4, 1, 0, 2.5f, 1, 1, 0, 0, 0}, &rng);
    check_kv((kvcase){"serving_paged8_no_seqused", PORTATTN_DTYPE_F16, 3, 7, 29, 2, 2, 8, 8, -1, -1, 1, 0, 1, 0, 8, 0, 1}, &rng);
    serving_vs_per_sequence(PORTATTN_DTYPE_F32, &rng);
    serving_vs_per_sequence(PORTATTN_DTYPE_BF16, &rng);
    serving_vs_per_sequence(PORTATTN_DTYPE_F16, &rng);
    huge_capacity(&rng);
    closed_forms(&rng);
    conversions();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
