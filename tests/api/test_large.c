/* Tensors past 2^31 elements on a GPU backend: every offset must be 64-bit.
 *   test_large <backend>      exit 0 pass, 1 fail (also when the prefill case is declined), 77 no
 *                             GPU for the backend (harness.h) or not enough device memory
 * Each case allocates a K and a V of more than 2^31 elements (4.3 GB each in bf16) but fills only
 * the rows the call reads, at offsets past 2^31 elements; the oracle is the CPU backend on compact
 * copies of those rows. A kernel that truncates an offset to 32 bits reads unfilled rows (zeros)
 * or faults, and fails. Cases: a paged decode whose pages lie at the far end of the pool, a
 * contiguous decode and a contiguous prefill whose second sequence starts past 2^31 elements, and
 * the backward of that prefill (where the backend has one), whose dK and dV are as large as K and V
 * (17 GB of device memory in all) and are written only in the rows past 2^31 elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"

#define BIG ((int64_t)1 << 31)
enum { D = 128, HQ = 8, PAGE = 64, NPG = 20 }; /* GQA 8 onto one KV head */

typedef struct lcase {
    const char *name;
    int paged;
    int64_t sq, sk; /* per sequence; two sequences */
} lcase;

static int run(const lcase *c, portattn_backend_t be, uint64_t seed)
{
    const portattn_dtype_t dt = PORTATTN_DTYPE_BF16;
    const int64_t B = 2, SK = c->sk, SQ = c->sq;
    /* Elements of the big K (and V): a pool of pages ending past 2^31 elements, or two sequences
     * with a batch stride past 2^31. */
    const int64_t npages = BIG / (PAGE * D) + 64, bstride = BIG + 4096 * D;
    const int64_t elems = c->paged ? npages * PAGE * D : bstride + SK * D;
    int64_t row_off[2][2048]; /* element offset of key j of sequence b */
    int32_t bt[2 * NPG];
    for (int64_t b = 0; b < B; b++)
        for (int64_t g = 0; g < NPG; g++) bt[b * NPG + g] = (int32_t)(npages - 1 - (2 * g + b)); /* interleaved, far end */
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < SK; j++)
            row_off[b][j] = c->paged ? ((int64_t)bt[b * NPG + j / PAGE] * PAGE + j % PAGE) * D : b * bstride + j * D;

    int rc = 1;
    uint64_t rng = seed;
    const size_t kvb = (size_t)elems * 2, qn = (size_t)(B * SQ * HQ * D), rowsb = (size_t)D * 2;
    uint16_t *hq = malloc(qn * 2), *ho = malloc(qn * 2), *hk = malloc((size_t)(B * SK * D) * 2), *hv = malloc((size_t)(B * SK * D) * 2);
    float *fq = malloc(qn * 4), *fk = malloc((size_t)(B * SK * D) * 4), *fv = malloc((size_t)(B * SK * D) * 4);
    float *fo = malloc(qn * 4), *fl = malloc((size_t)(B * HQ * SQ) * 4), *hl = malloc((size_t)(B * HQ * SQ) * 4);
    void *dk = dm_alloc(DM_CUDA, kvb), *dv = dm_alloc(DM_CUDA, kvb), *dq = dm_alloc(DM_CUDA, qn * 2);
    void *dout = dm_alloc(DM_CUDA, qn * 2), *dl = dm_alloc(DM_CUDA, (size_t)(B * HQ * SQ) * 4);
    void *dbt = dm_alloc(DM_CUDA, sizeof bt);
    if (!hq || !ho || !hk || !hv || !fq || !fk || !fv || !fo || !fl || !hl || !dq || !dout || !dl || !dbt) {
        printf("FAIL %s: host or small device allocation failed\n", c->name);
        goto done;
    }
    if (!dk || !dv) {
        printf("SKIP %s: cannot allocate 2 x %.1f GB of device memory\n", c->name, (double)kvb / 1e9);
        rc = 77;
        goto done;
    }
    for (size_t i = 0; i < qn; i++) hq[i] = pa_f32_to_bf16((float)urand(&rng)), fq[i] = pa_bf16_to_f32(hq[i]);
    for (int64_t i = 0; i < B * SK * D; i++) {
        hk[i] = pa_f32_to_bf16((float)urand(&rng)), fk[i] = pa_bf16_to_f32(hk[i]);
        hv[i] = pa_f32_to_bf16((float)urand(&rng)), fv[i] = pa_bf16_to_f32(hv[i]);
    }
    int bad_up = dm_upload(DM_CUDA, dq, hq, qn * 2) || dm_upload(DM_CUDA, dbt, bt, sizeof bt);
    for (int64_t b = 0; b < B && !bad_up; b++)
        for (int64_t j = 0; j < SK && !bad_up; j++)
            bad_up = dm_upload(DM_CUDA, (char *)dk + row_off[b][j] * 2, hk + (b * SK + j) * D, rowsb) ||
                     dm_upload(DM_CUDA, (char *)dv + row_off[b][j] * 2, hv + (b * SK + j) * D, rowsb);
    memset(ho, 0xFF, qn * 2);
    if (bad_up || dm_upload(DM_CUDA, dout, ho, qn * 2)) {
        printf("FAIL %s: upload failed\n", c->name);
        goto done;
    }

    /* The oracle: the CPU backend, fp32, compact contiguous K/V. */
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32, p.batch = B, p.seqlen_q = SQ, p.seqlen_k = SK, p.heads_q = HQ, p.heads_kv = 1;
    p.head_dim_qk = p.head_dim_v = D, p.causal = 1;
    p.q = portattn_tensor_bshd(fq, SQ, HQ, D), p.o = portattn_tensor_bshd(fo, SQ, HQ, D);
    p.k = portattn_tensor_bshd(fk, SK, 1, D), p.v = portattn_tensor_bshd(fv, SK, 1, D);
    p.lse = fl, p.lse_stride[0] = HQ * SQ, p.lse_stride[1] = SQ, p.lse_stride[2] = 1;
    p.backend = PORTATTN_BACKEND_CPU;
    if (portattn_forward(&p, NULL)) {
        printf("FAIL %s: oracle: %s\n", c->name, portattn_last_error());
        goto done;
    }

    /* The backend under test on the big tensors. */
    p.dtype = dt, p.backend = be;
    p.q = portattn_tensor_bshd(dq, SQ, HQ, D), p.o = portattn_tensor_bshd(dout, SQ, HQ, D), p.lse = dl;
    if (c->paged) {
        p.k = portattn_tensor_bshd(dk, PAGE, 1, D), p.v = portattn_tensor_bshd(dv, PAGE, 1, D);
        p.block_table = dbt, p.block_table_stride = NPG, p.page_size = PAGE, p.num_pages = npages;
        p.seqlen_k = NPG * PAGE; /* capacity; a seqused_k would say SK, here SK is the whole table */
    } else {
        p.k = (portattn_tensor_t){dk, {bstride, D, D, 1}}, p.v = (portattn_tensor_t){dv, {bstride, D, D, 1}};
    }
    portattn_selection_t sel;
    portattn_status_t st = portattn_forward_query(&p, &sel);
    if (st == PORTATTN_ERROR_NOT_SUPPORTED && c->sq <= 16) { /* e.g. cuda-sm90 and a decode shape */
        printf("n/a  %-22s %s\n", c->name, portattn_last_error());
        rc = 77;
        goto done;
    } /* every CUDA backend takes the bf16 d128 prefill: a refusal there fails below */
    if (st == PORTATTN_SUCCESS) st = portattn_forward(&p, NULL);
    if (st != PORTATTN_SUCCESS || dm_sync(DM_CUDA) || dm_download(DM_CUDA, ho, dout, qn * 2) ||
        dm_download(DM_CUDA, hl, dl, (size_t)(B * HQ * SQ) * 4)) {
        printf("FAIL %s: %s: %s\n", c->name, portattn_status_string(st), portattn_last_error());
        goto done;
    }
    double se = 0, sr = 0, lerr = 0;
    long long nonfinite = 0;
    for (size_t i = 0; i < qn; i++) {
        double got = pa_bf16_to_f32(ho[i]), e = got - fo[i];
        nonfinite += !isfinite(got);
        se += e * e, sr += (double)fo[i] * fo[i];
    }
    for (int64_t i = 0; i < B * HQ * SQ; i++) lerr = fmax(lerr, fabs((double)hl[i] - fl[i]));
    double rel = sqrt(se / (sr > 0 ? sr : 1));
    int pass = !nonfinite && rel <= 1e-2 && lerr <= 1e-2;
    printf("%-4s %-22s %s  K/V %lld elements each (%.2f GB), O rel-L2 %.2e, LSE max-abs %.2e%s\n", pass ? "ok" : "FAIL",
           c->name, sel.kernel, (long long)elems, (double)kvb / 1e9, rel, lerr, nonfinite ? " NON-FINITE" : "");
    rc = !pass;
done:
    dm_free(DM_CUDA, dk), dm_free(DM_CUDA, dv), dm_free(DM_CUDA, dq), dm_free(DM_CUDA, dout), dm_free(DM_CUDA, dl);
    dm_free(DM_CUDA, dbt);
    free(hq), free(ho), free(hk), free(hv), free(fq), free(fk), free(fv), free(fo), free(fl), free(hl);
    return rc;
}

/* rel-L2 of n bf16 values against f32 ones; *nonfinite counts the values that are not finite. */
static double rel_l2_bf16(const uint16_t *got, const float *want, size_t n, long long *nonfinite)
{
    double se = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        const double g = pa_bf16_to_f32(got[i]), e = g - want[i];
        *nonfinite += !isfinite(g);
        se += e * e, sr += (double)want[i] * want[i];
    }
    return sqrt(se / (sr > 0 ? sr : 1));
}

/* Whether `be` has a backward pass, asked with an empty problem (no memory needed): 0 and the
 * reason printed when it has none. */
static int has_backward(portattn_backend_t be)
{
    portattn_bwd_params_t g;
    portattn_selection_t sel;
    portattn_bwd_params_init(&g);
    g.backend = be, g.seqlen_q = 100, g.seqlen_k = 700, g.heads_q = HQ, g.heads_kv = 1, g.head_dim_qk = g.head_dim_v = D;
    if (portattn_backward_query(&g, &sel) == PORTATTN_ERROR_NOT_SUPPORTED &&
        strstr(portattn_last_error(), "has no backward pass")) {
        printf("n/a  %-22s %s\n", "contiguous_prefill_bwd", portattn_last_error());
        return 0;
    }
    return 1;
}

/* The backward of the contiguous prefill: K, V, dK and dV of more than 2^31 elements each, the second
 * sequence's rows past 2^31, dK/dV rows poisoned before the call. The oracle is the CPU backward in
 * f32 on compact copies from the backend's own O and LSE, so that only the backward is compared.
 * 0 pass, 1 fail, 77 skipped (no backward pass, or not enough device memory). */
static int run_bwd(portattn_backend_t be, uint64_t seed)
{
    const int64_t B = 2, SQ = 100, SK = 700, bstride = BIG + 4096 * D, elems = bstride + SK * D;
    const size_t kvb = (size_t)elems * 2, qn = (size_t)(B * SQ * HQ * D), kn = (size_t)(SK * D), nl = (size_t)(B * HQ * SQ);
    if (!has_backward(be)) return 77;
    int rc = 1;
    uint64_t rng = seed;
    uint16_t *h16 = malloc((3 * qn + 4 * B * kn) * 2); /* q, dO, then O and dQ back; K, V, then dK, dV back */
    float *f32 = malloc((4 * qn + 4 * B * kn + 2 * B * kn + nl) * 4);
    void *dq = dm_alloc(DM_CUDA, qn * 2), *ddo = dm_alloc(DM_CUDA, qn * 2), *dout = dm_alloc(DM_CUDA, qn * 2);
    void *dgq = dm_alloc(DM_CUDA, qn * 2);
    float *dl = dm_alloc(DM_CUDA, nl * 4);
    void *big[4] = {dm_alloc(DM_CUDA, kvb), dm_alloc(DM_CUDA, kvb), dm_alloc(DM_CUDA, kvb), dm_alloc(DM_CUDA, kvb)};
    if (!h16 || !f32 || !dq || !ddo || !dout || !dgq || !dl) {
        printf("FAIL backward: host or small device allocation failed\n");
        goto done;
    }
    if (!big[0] || !big[1] || !big[2] || !big[3]) {
        printf("SKIP backward: cannot allocate 4 x %.1f GB of device memory\n", (double)kvb / 1e9);
        rc = 77;
        goto done;
    }
    uint16_t *hq = h16, *hdo = hq + qn, *hback = hdo + qn, *hk = hback + qn, *hv = hk + B * kn, *hgk = hv + B * kn;
    uint16_t *hgv = hgk + B * kn;
    float *fq = f32, *fdo = fq + qn, *fo = fdo + qn, *rq = fo + qn, *fk = rq + qn, *fv = fk + B * kn, *rk = fv + B * kn;
    float *rv = rk + B * kn, *fl = rv + B * kn;
    for (size_t i = 0; i < qn; i++) {
        hq[i] = pa_f32_to_bf16((float)urand(&rng)), fq[i] = pa_bf16_to_f32(hq[i]);
        hdo[i] = pa_f32_to_bf16((float)urand(&rng)), fdo[i] = pa_bf16_to_f32(hdo[i]);
    }
    for (size_t i = 0; i < B * kn; i++) {
        hk[i] = pa_f32_to_bf16((float)urand(&rng)), fk[i] = pa_bf16_to_f32(hk[i]);
        hv[i] = pa_f32_to_bf16((float)urand(&rng)), fv[i] = pa_bf16_to_f32(hv[i]);
    }
    memset(hgk, 0xFF, 2 * B * kn * 2), memset(hback, 0xFF, qn * 2);
    int bad = dm_upload(DM_CUDA, dq, hq, qn * 2) || dm_upload(DM_CUDA, ddo, hdo, qn * 2) ||
              dm_upload(DM_CUDA, dout, hback, qn * 2) || dm_upload(DM_CUDA, dgq, hback, qn * 2);
    for (int64_t b = 0; b < B && !bad; b++) { /* each sequence's rows are contiguous (one KV head) */
        const size_t at = (size_t)(b * bstride) * 2, n = kn * 2;
        bad = dm_upload(DM_CUDA, (char *)big[0] + at, hk + b * kn, n) || dm_upload(DM_CUDA, (char *)big[1] + at, hv + b * kn, n) ||
              dm_upload(DM_CUDA, (char *)big[2] + at, hgk, n) || dm_upload(DM_CUDA, (char *)big[3] + at, hgv, n);
    }
    if (bad) {
        printf("FAIL backward: upload failed\n");
        goto done;
    }
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_BF16, p.backend = be, p.batch = B, p.seqlen_q = SQ, p.seqlen_k = SK;
    p.heads_q = HQ, p.heads_kv = 1, p.head_dim_qk = p.head_dim_v = D, p.causal = 1;
    p.q = portattn_tensor_bshd(dq, SQ, HQ, D), p.o = portattn_tensor_bshd(dout, SQ, HQ, D);
    p.k = (portattn_tensor_t){big[0], {bstride, D, D, 1}}, p.v = (portattn_tensor_t){big[1], {bstride, D, D, 1}};
    p.lse = dl, p.lse_stride[0] = HQ * SQ, p.lse_stride[1] = SQ, p.lse_stride[2] = 1;
    portattn_bwd_params_t g;
    portattn_bwd_params_init(&g);
    g.dtype = p.dtype, g.backend = be, g.batch = B, g.seqlen_q = SQ, g.seqlen_k = SK, g.heads_q = HQ, g.heads_kv = 1;
    g.head_dim_qk = g.head_dim_v = D, g.causal = 1, g.deterministic = 1;
    g.q = p.q, g.k = p.k, g.v = p.v, g.o = p.o, g.lse = dl, memcpy(g.lse_stride, p.lse_stride, sizeof g.lse_stride);
    g.dout = portattn_tensor_bshd(ddo, SQ, HQ, D), g.dq = portattn_tensor_bshd(dgq, SQ, HQ, D);
    g.dk = (portattn_tensor_t){big[2], {bstride, D, D, 1}}, g.dv = (portattn_tensor_t){big[3], {bstride, D, D, 1}};
    portattn_selection_t sel;
    portattn_status_t st = portattn_backward_query(&g, &sel);
    if (!st && !(st = portattn_forward(&p, NULL))) st = portattn_backward(&g, NULL);
    if (st || dm_sync(DM_CUDA)) {
        printf("FAIL backward: %s: %s\n", portattn_status_string(st), portattn_last_error());
        goto done;
    }
    bad = dm_download(DM_CUDA, hback, dout, qn * 2) || dm_download(DM_CUDA, fl, dl, nl * 4);
    for (size_t i = 0; i < qn; i++) fo[i] = pa_bf16_to_f32(hback[i]);
    bad = bad || dm_download(DM_CUDA, hback, dgq, qn * 2);
    for (int64_t b = 0; b < B && !bad; b++) {
        const size_t at = (size_t)(b * bstride) * 2, n = kn * 2;
        bad = dm_download(DM_CUDA, hgk + b * kn, (char *)big[2] + at, n) || dm_download(DM_CUDA, hgv + b * kn, (char *)big[3] + at, n);
    }
    if (bad) {
        printf("FAIL backward: download failed\n");
        goto done;
    }
    portattn_bwd_params_t c = g; /* the oracle: CPU, f32, compact K/V and gradients */
    c.dtype = PORTATTN_DTYPE_F32, c.backend = PORTATTN_BACKEND_CPU;
    c.q = portattn_tensor_bshd(fq, SQ, HQ, D), c.o = portattn_tensor_bshd(fo, SQ, HQ, D), c.lse = fl;
    c.k = portattn_tensor_bshd(fk, SK, 1, D), c.v = portattn_tensor_bshd(fv, SK, 1, D);
    c.dout = portattn_tensor_bshd(fdo, SQ, HQ, D), c.dq = portattn_tensor_bshd(rq, SQ, HQ, D);
    c.dk = portattn_tensor_bshd(rk, SK, 1, D), c.dv = portattn_tensor_bshd(rv, SK, 1, D);
    if (portattn_backward(&c, NULL)) {
        printf("FAIL backward: oracle: %s\n", portattn_last_error());
        goto done;
    }
    long long nonfinite = 0;
    const double eq = rel_l2_bf16(hback, rq, qn, &nonfinite), ek = rel_l2_bf16(hgk, rk, B * kn, &nonfinite);
    const double ev = rel_l2_bf16(hgv, rv, B * kn, &nonfinite);
    const int pass = !nonfinite && eq <= 1e-2 && ek <= 1e-2 && ev <= 1e-2;
    printf("%-4s %-22s %s  K/V/dK/dV %lld elements each, rel-L2 dQ %.2e dK %.2e dV %.2e%s\n", pass ? "ok" : "FAIL",
           "contiguous_prefill_bwd", sel.kernel, (long long)elems, eq, ek, ev, nonfinite ? " NON-FINITE/UNWRITTEN" : "");
    rc = !pass;
done:
    for (int i = 0; i < 4; i++) dm_free(DM_CUDA, big[i]);
    dm_free(DM_CUDA, dq), dm_free(DM_CUDA, ddo), dm_free(DM_CUDA, dout), dm_free(DM_CUDA, dgq), dm_free(DM_CUDA, dl);
    free(h16), free(f32);
    return rc;
}

int main(int argc, char **argv)
{
    portattn_backend_t be;
    const int rc = gpu_test_backend(argc, argv, &be);
    if (rc) return rc;
    const lcase cases[] = {
        {"paged_decode_far_pages", 1, 1, NPG * PAGE},
        {"contiguous_decode", 0, 4, 1000},
        {"contiguous_prefill", 0, 100, 700},
    };
    uint64_t seed = test_seed();
    int failed = 0, skipped = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r = run(&cases[i], be, seed + i);
        failed += r == 1, skipped += r == 77;
    }
    const int r = run_bwd(be, seed + 3);
    failed += r == 1, skipped += r == 77;
    printf("%d passed, %d failed, %d skipped\n", 4 - failed - skipped, failed, skipped);
    return failed ? 1 : skipped == 4 ? 77 : 0; /* nothing ran is a skip, never a pass */
}
