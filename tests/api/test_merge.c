/* portattn_merge against one forward over the union of the keys.
 *   test_merge <backend>     exit 0 pass, 1 fail, 77 when the backend's hardware is absent
 * Each case splits a fresh random key set into 2 or 3 disjoint parts, runs the backend's forward on
 * each part with the LSE, merges the parts in order and compares with the CPU reference over all keys
 * (in f32, on the same dtype-exact inputs). Splits: keys dealt at random to the parts (no mask, a part
 * may be empty), or contiguous chunks under a causal mask (a window per chunk), where rows see no key
 * of a chunk, and with Sq > Sk none at all. Accumulators: the first part's own output, or an fp32 one
 * (BHSD) that starts empty (LSE -inf) over NaN, merged with backend AUTO (the others force the backend
 * under test). Partials: the output dtype, or f32 (the forward run in f32 on the same values).
 * The rule, as the case table's: the merged output's max error is at most twice that of the
 * backend's one-shot forward in the same dtype, plus one rounding of the accumulator's dtype (1e-5
 * relative for f32); an fp32 ring over f32 partials, 1e-5 relative alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"
#include "problem.h"

typedef struct mcase {
    const char *name;
    int64_t b, sq, sk, hq, hkv, d;
    int parts;
    int causal;     /* contiguous chunks under a bottom-right causal mask; else keys dealt at random */
    float amp;      /* amplitude of q and k: large values make the parts' LSEs far apart */
} mcase;

static const mcase cases[] = {
    {"random-2", 2, 37, 53, 4, 2, 64, 2, 0, 1.0f},
    {"random-3", 1, 29, 70, 4, 4, 128, 3, 0, 1.0f},
    {"random-3-sharp", 2, 16, 24, 2, 1, 64, 3, 0, 4.0f},
    {"random-3-few-keys", 2, 9, 2, 2, 1, 64, 3, 0, 1.0f}, /* 2 keys, 3 parts: one part is empty */
    {"causal-2", 2, 40, 64, 4, 2, 64, 2, 1, 1.0f},
    {"causal-3", 1, 33, 33, 2, 2, 128, 3, 1, 2.0f},
    {"causal-3-sq>sk", 2, 48, 20, 2, 1, 64, 3, 1, 1.0f}, /* the first 28 rows see no key at all */
};

typedef enum { ACC_OWN, ACC_F32 } acc_kind;

static dm_kind mem;
static portattn_backend_t backend;
static int failures, passes, skipped;

/* Host floats -> a device (or host) buffer of dtype t. */
static void *upload(portattn_dtype_t t, const float *x, int64_t n)
{
    const size_t es = (size_t)pa_dtype_size(t);
    unsigned char *h = malloc(es * (size_t)n + 1);
    void *d = dm_alloc(mem, es * (size_t)n + 1);
    if (!h || !d) exit((printf("FAIL out of memory\n"), 1));
    for (int64_t i = 0; i < n; i++) pa_store_elem(t, h, i, x[i]);
    if (dm_upload(mem, d, h, es * (size_t)n)) exit((printf("FAIL upload\n"), 1));
    free(h);
    return d;
}

/* A buffer of n elements of dtype t filled with NaN (outputs are poisoned). */
static void *poisoned(portattn_dtype_t t, int64_t n)
{
    float *nan = malloc(sizeof(float) * (size_t)n + 1);
    for (int64_t i = 0; i < n; i++) nan[i] = NAN;
    void *d = upload(t, nan, n);
    free(nan);
    return d;
}

static void download(portattn_dtype_t t, const void *d, float *x, int64_t n)
{
    const size_t es = (size_t)pa_dtype_size(t);
    unsigned char *h = malloc(es * (size_t)n + 1);
    if (!h || dm_sync(mem) || dm_download(mem, h, d, es * (size_t)n)) exit((printf("FAIL download\n"), 1));
    for (int64_t i = 0; i < n; i++) x[i] = pa_load_elem(t, h, i);
    free(h);
}

typedef struct prob {
    const mcase *c;
    portattn_dtype_t dtype;
    float *q, *k, *v; /* host, dtype-exact, BSHD */
} prob;

/* Forward of rows q over keys [first, first + n) of the gathered k/v (host arrays of Sk rows) on
 * backend be, memory `kind`: O (BSHD, dtype t) and LSE into the given buffers. */
static portattn_status_t forward(const prob *pr, portattn_backend_t be, portattn_dtype_t t, const float *k,
                                 const float *v, int64_t first, int64_t n, int causal_full, void *o, float *lse)
{
    const mcase *c = pr->c;
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = t, p.backend = be;
    p.batch = c->b, p.seqlen_q = c->sq, p.seqlen_k = n, p.heads_q = c->hq, p.heads_kv = c->hkv;
    p.head_dim_qk = p.head_dim_v = c->d;
    /* bottom-right causal over all Sk keys, seen from a chunk starting at `first`: key j of the chunk
     * is visible iff j <= i + Sk - Sq - first, i.e. window_right = Sk - first - n. */
    if (causal_full) p.window_right = c->sk - first - n;
    const int64_t nk = c->b * n * c->hkv * c->d;
    float *kc = malloc(sizeof(float) * (size_t)nk + 1), *vc = malloc(sizeof(float) * (size_t)nk + 1);
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t src = ((b * c->sk + first + j) * c->hkv) * c->d, dst = ((b * n + j) * c->hkv) * c->d;
            memcpy(kc + dst, k + src, sizeof(float) * (size_t)(c->hkv * c->d));
            memcpy(vc + dst, v + src, sizeof(float) * (size_t)(c->hkv * c->d));
        }
    void *dq = upload(t, pr->q, c->b * c->sq * c->hq * c->d), *dk = upload(t, kc, nk), *dv = upload(t, vc, nk);
    p.q = portattn_tensor_bshd(dq, c->sq, c->hq, c->d);
    p.k = portattn_tensor_bshd(dk, n, c->hkv, c->d), p.v = portattn_tensor_bshd(dv, n, c->hkv, c->d);
    p.o = portattn_tensor_bshd(o, c->sq, c->hq, c->d);
    p.lse = lse, p.lse_stride[0] = c->hq * c->sq, p.lse_stride[1] = c->sq, p.lse_stride[2] = 1;
    portattn_status_t st = portattn_forward(&p, NULL);
    if (st && st != PORTATTN_ERROR_NOT_SUPPORTED) printf("FAIL forward: %s\n", portattn_last_error());
    dm_sync(mem);
    dm_free(mem, dq), dm_free(mem, dk), dm_free(mem, dv);
    free(kc), free(vc);
    return st;
}

typedef struct result {
    float *o, *lse; /* host, BSHD and [B, Hq, Sq] */
} result;

/* max |o - ref| over O; infinite when o holds a NaN. */
static double o_error(const prob *pr, const float *o, const float *ref)
{
    const mcase *c = pr->c;
    double e = 0.0;
    for (int64_t i = 0; i < c->b * c->sq * c->hq * c->d; i++) {
        if (isnan(o[i])) return INFINITY;
        if (fabs((double)o[i] - ref[i]) > e) e = fabs((double)o[i] - ref[i]);
    }
    return e;
}

static double max_abs(const float *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* Rows that see no key must come out exactly O = 0, LSE = -inf; the others within tol of the LSE. */
static int lse_ok(const prob *pr, const float *lse, const float *o, const result *ref, double tol, double *err)
{
    const mcase *c = pr->c;
    *err = 0.0;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t s = 0; s < c->sq; s++) {
                const int64_t l = (b * c->hq + h) * c->sq + s, r = ((b * c->sq + s) * c->hq + h) * c->d;
                if (ref->lse[l] == -INFINITY) {
                    if (lse[l] != -INFINITY) return 0;
                    for (int64_t d = 0; d < c->d; d++)
                        if (o[r + d] != 0.0f) return 0;
                    continue;
                }
                const double e = fabs((double)lse[l] - ref->lse[l]);
                if (!(e <= tol * (1.0 + fabs(ref->lse[l])))) return 0; /* NaN fails too */
                if (e > *err) *err = e;
            }
    return 1;
}

static double unit_roundoff(portattn_dtype_t t)
{
    return t == PORTATTN_DTYPE_BF16 ? 0x1p-8 : t == PORTATTN_DTYPE_F16 ? 0x1p-11 : 0x1p-24;
}

/* Which keys each part gets: contiguous chunks (causal) or dealt at random, as index lists. */
static void split_keys(const mcase *c, uint64_t *rng, int64_t *part_of)
{
    int64_t cut[3] = {0, 0, c->sk};
    if (c->causal) {
        cut[0] = 1 + (int64_t)((urand(rng) + 1) * 0.5 * (double)(c->sk - 2)) % (c->sk - 1);
        cut[1] = c->parts == 3 ? cut[0] + (c->sk - cut[0]) / 2 : c->sk;
        for (int64_t j = 0; j < c->sk; j++) part_of[j] = j < cut[0] ? 0 : j < cut[1] ? 1 : 2;
    } else {
        for (int64_t j = 0; j < c->sk; j++)
            part_of[j] = (int64_t)((urand(rng) + 1) * 0.5 * c->parts) % c->parts;
    }
}

/* K and V reordered so that each part's keys are contiguous (first[p], count[p]); attention without
 * a mask does not depend on the order of its keys. */
static void gather(const prob *pr, const int64_t *part_of, float *k, float *v, int64_t *first, int64_t *count)
{
    const mcase *c = pr->c;
    const int64_t row = c->hkv * c->d;
    int64_t at = 0;
    for (int p = 0; p < c->parts; p++) {
        first[p] = at;
        for (int64_t j = 0; j < c->sk; j++)
            if (part_of[j] == p) {
                for (int64_t b = 0; b < c->b; b++) {
                    memcpy(k + (b * c->sk + at) * row, pr->k + (b * c->sk + j) * row, sizeof(float) * (size_t)row);
                    memcpy(v + (b * c->sk + at) * row, pr->v + (b * c->sk + j) * row, sizeof(float) * (size_t)row);
                }
                at++;
            }
        count[p] = at - first[p];
    }
}

/* be: the backend under test (forced), or AUTO, which must place the merge where the memory is. */
static portattn_status_t merge_into(const prob *pr, portattn_backend_t be, portattn_dtype_t acc_t,
                                    portattn_tensor_t acc_o, float *acc_lse, int64_t acc_lse_stride[3],
                                    portattn_dtype_t part_t, void *part_o, float *part_lse)
{
    const mcase *c = pr->c;
    portattn_merge_params_t m;
    portattn_merge_params_init(&m);
    m.dtype = acc_t, m.dtype_part = part_t, m.backend = be;
    m.batch = c->b, m.seqlen_q = c->sq, m.heads_q = c->hq, m.head_dim_v = c->d;
    m.o = acc_o, m.lse = acc_lse;
    memcpy(m.lse_stride, acc_lse_stride, sizeof m.lse_stride);
    m.o_part = portattn_tensor_bshd(part_o, c->sq, c->hq, c->d);
    m.lse_part = part_lse, m.lse_part_stride[0] = c->hq * c->sq, m.lse_part_stride[1] = c->sq, m.lse_part_stride[2] = 1;
    portattn_status_t st = portattn_merge(&m, NULL);
    if (st) printf("FAIL merge: %s: %s\n", portattn_status_string(st), portattn_last_error());
    return st;
}

/* One (case, dtype, partial dtype, accumulator) run. */
static void run(const prob *pr, portattn_dtype_t part_t, acc_kind acc, const result *ref, double err_one,
                double lse_err_one, const float *k, const float *v, const int64_t *first, const int64_t *count)
{
    const mcase *c = pr->c;
    const int64_t no = c->b * c->sq * c->hq * c->d, nl = c->b * c->hq * c->sq;
    const portattn_dtype_t acc_t = acc == ACC_F32 ? PORTATTN_DTYPE_F32 : pr->dtype;
    char label[160];
    snprintf(label, sizeof label, "%-18s %-4s parts %-4s acc %-4s %s", c->name, pa_dtype_name(pr->dtype),
             pa_dtype_name(part_t), pa_dtype_name(acc_t), acc == ACC_F32 ? "(ring: empty, BHSD)" : "(first part)");
    /* The accumulator: fp32 BHSD starting empty over NaN, or the first part's own output. */
    void *acc_o = poisoned(acc_t, no);
    float *acc_lse = poisoned(PORTATTN_DTYPE_F32, nl);
    int64_t acc_lse_stride[3] = {c->hq * c->sq, c->sq, 1};
    portattn_tensor_t acc_view = acc == ACC_F32 ? portattn_tensor_bhsd(acc_o, c->sq, c->hq, c->d)
                                                : portattn_tensor_bshd(acc_o, c->sq, c->hq, c->d);
    int p0 = 0, merge_failed = 0;
    portattn_status_t st = PORTATTN_SUCCESS;
    if (acc == ACC_F32) {
        float *inf = malloc(sizeof(float) * (size_t)nl);
        for (int64_t i = 0; i < nl; i++) inf[i] = -INFINITY;
        dm_upload(mem, acc_lse, inf, sizeof(float) * (size_t)nl);
        free(inf);
    } else {
        st = forward(pr, backend, pr->dtype, k, v, first[0], count[0], c->causal, acc_o, acc_lse);
        p0 = 1;
    }
    for (int p = p0; p < c->parts && !st; p++) {
        void *po = poisoned(part_t, no);
        float *pl = poisoned(PORTATTN_DTYPE_F32, nl);
        st = forward(pr, backend, part_t, k, v, first[p], count[p], c->causal, po, pl);
        const portattn_backend_t be = acc == ACC_F32 ? PORTATTN_BACKEND_AUTO : backend;
        if (!st) {
            st = merge_into(pr, be, acc_t, acc_view, acc_lse, acc_lse_stride, part_t, po, pl);
            merge_failed = st != 0;
        }
        dm_free(mem, po), dm_free(mem, pl);
    }
    if (st == PORTATTN_ERROR_NOT_SUPPORTED && !merge_failed) { /* the backend's forward refuses this dtype */
        printf("n/a  %s: %s\n", label, portattn_last_error());
        skipped++;
        dm_free(mem, acc_o), dm_free(mem, acc_lse);
        return;
    }
    float *o = malloc(sizeof(float) * (size_t)no), *raw = malloc(sizeof(float) * (size_t)no);
    float *lse = malloc(sizeof(float) * (size_t)nl);
    download(acc_t, acc_o, raw, no);
    download(PORTATTN_DTYPE_F32, acc_lse, lse, nl);
    for (int64_t b = 0; b < c->b; b++) /* back to BSHD */
        for (int64_t s = 0; s < c->sq; s++)
            for (int64_t h = 0; h < c->hq; h++)
                for (int64_t d = 0; d < c->d; d++)
                    o[((b * c->sq + s) * c->hq + h) * c->d + d] =
                        raw[acc_view.stride[0] * b + acc_view.stride[1] * s + acc_view.stride[2] * h + d];
    const double scale = max_abs(ref->o, no), u_acc = unit_roundoff(acc_t);
    /* Every input of an fp32 ring in f32: nothing rounded to the output dtype on the way. */
    const double floor = (acc_t == PORTATTN_DTYPE_F32 ? 1e-5 : u_acc) * scale;
    const double tol = part_t == PORTATTN_DTYPE_F32 && acc == ACC_F32 ? floor : 2.0 * err_one + floor;
    double lse_err = 0.0;
    const double err = o_error(pr, o, ref->o);
    const int pass = !st && err <= tol && lse_ok(pr, lse, o, ref, 4.0 * lse_err_one + 1e-5, &lse_err);
    printf("%-4s %s  O err %.3g (tol %.3g, one-shot %.3g)  LSE err %.3g\n", pass ? "ok" : "FAIL", label, err, tol,
           err_one, lse_err);
    pass ? passes++ : failures++;
    free(o), free(raw), free(lse);
    dm_free(mem, acc_o), dm_free(mem, acc_lse);
}

static void merge_case(const mcase *c, portattn_dtype_t dtype, uint64_t *rng)
{
    const int64_t nq = c->b * c->sq * c->hq * c->d, nk = c->b * c->sk * c->hkv * c->d, nl = c->b * c->hq * c->sq;
    prob pr = {c, dtype, malloc(sizeof(float) * (size_t)nq), malloc(sizeof(float) * (size_t)nk),
               malloc(sizeof(float) * (size_t)nk)};
    const float amp = c->amp;
    for (int64_t i = 0; i < nq; i++) pr.q[i] = round_to(dtype, amp * (float)urand(rng));
    for (int64_t i = 0; i < nk; i++) pr.k[i] = round_to(dtype, amp * (float)urand(rng));
    for (int64_t i = 0; i < nk; i++) pr.v[i] = round_to(dtype, (float)urand(rng));
    int64_t *part_of = malloc(sizeof(int64_t) * (size_t)c->sk + 1), first[3], count[3];
    float *k = malloc(sizeof(float) * (size_t)nk + 1), *v = malloc(sizeof(float) * (size_t)nk + 1);
    split_keys(c, rng, part_of);
    gather(&pr, part_of, k, v, first, count);

    /* The reference: the CPU in f32 over every key; the one-shot: the backend in this dtype. */
    const dm_kind saved = mem;
    mem = DM_HOST;
    result ref = {poisoned(PORTATTN_DTYPE_F32, nq), poisoned(PORTATTN_DTYPE_F32, nl)};
    portattn_status_t st =
        forward(&pr, PORTATTN_BACKEND_CPU, PORTATTN_DTYPE_F32, k, v, 0, c->sk, c->causal, ref.o, ref.lse);
    mem = saved;
    void *one_o = poisoned(dtype, nq);
    float *one_lse = poisoned(PORTATTN_DTYPE_F32, nl);
    portattn_status_t st1 = st ? st : forward(&pr, backend, dtype, k, v, 0, c->sk, c->causal, one_o, one_lse);
    if (st || st1) {
        if (st1 == PORTATTN_ERROR_NOT_SUPPORTED && !st) printf("n/a  %-18s %-4s: %s\n", c->name, pa_dtype_name(dtype),
                                                            portattn_last_error()), skipped++;
        else failures++;
    } else {
        float *o1 = malloc(sizeof(float) * (size_t)nq), *l1 = malloc(sizeof(float) * (size_t)nl);
        download(dtype, one_o, o1, nq);
        download(PORTATTN_DTYPE_F32, one_lse, l1, nl);
        const double err_one = o_error(&pr, o1, ref.o);
        double lse_err_one = 0.0;
        const portattn_dtype_t parts[2] = {dtype, PORTATTN_DTYPE_F32};
        if (!lse_ok(&pr, l1, o1, &ref, 1e-3, &lse_err_one) || isinf(err_one)) {
            printf("FAIL %-18s %-4s: the one-shot forward's empty rows or LSE disagree with the CPU\n", c->name,
                   pa_dtype_name(dtype));
            failures++;
        } else
            for (int pi = 0; pi < (dtype == PORTATTN_DTYPE_F32 ? 1 : 2); pi++)
                for (int a = 0; a < 2; a++)
                    run(&pr, parts[pi], (acc_kind)a, &ref, err_one, lse_err_one, k, v, first, count);
        free(o1), free(l1);
    }
    dm_free(mem, one_o), dm_free(mem, one_lse);
    dm_free(DM_HOST, ref.o), dm_free(DM_HOST, ref.lse);
    free(pr.q), free(pr.k), free(pr.v), free(part_of), free(k), free(v);
}

int main(int argc, char **argv)
{
    int ok = 0;
    backend = argc > 1 ? portattn_backend_from_name(argv[1], &ok) : PORTATTN_BACKEND_AUTO;
    if (!ok || backend == PORTATTN_BACKEND_AUTO) return fprintf(stderr, "usage: %s <backend name>\n", argv[0]), 2;
    const int rc = test_backend_present(backend);
    if (rc) return rc;
    mem = dm_kind_of(backend);
    uint64_t seed = test_seed(), rng = seed;
    printf("test_merge %s, seed %llu\n", argv[1], (unsigned long long)seed);
    const portattn_dtype_t dtypes[3] = {PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_F32};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 0; t < 3; t++) merge_case(&cases[i], dtypes[t], &rng);
    printf("%d passed, %d failed, %d n/a\n", passes, failures, skipped);
    return failures || !passes ? 1 : 0;
}
