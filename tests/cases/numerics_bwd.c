/* The backward's NaN/inf contract, run by test_numerics <backend> after the forward's. The forward
 * of every call is the CPU backend's on the same dtype-exact inputs, so what is checked is the
 * backward alone, given O and LSE. What each gradient element must be follows from the math
 * (P = exp(S - LSE), D = dO . O, dS = P (dO . V - D), dQ = dS K, dK = dS^T Q, dV = P^T dO) over the
 * keys each row sees, rows with LSE = -inf contributing nothing:
 *   - a row whose LSE is NaN, or whose O or dO holds a NaN (its D or dP is NaN): its dQ row NaN and
 *     the dK rows of every key it sees NaN; if its LSE is NaN (its P is), the dV rows of those keys too;
 *   - a NaN in dO[i][c] alone: column c of the dV rows of the keys row i sees (P is clean);
 *   - a NaN in V alone leaves every dV bitwise clean (dV reads only P and dO);
 *   - a row that sees no key (LSE = -inf): dQ = 0; a key no row sees: dK = dV = 0;
 *   - every other element bitwise as in the clean call.
 * Scenarios: a NaN in one query row, one key, one V element, one dO element; K = -inf (every row
 * of a KV head sees no key); shapes 24 x 24, 4 x 40 and 40 x 20 causal (rows without keys); varlen
 * with NaN and inf in all of the second sequence (the first sequence's gradients bitwise clean).
 * cpu and cuda-generic walk only each row's visible keys and are held to this exactly; a tiled
 * kernel may also turn NaN (0 x NaN, or 0 x inf of an infinite K or V, inside a tile) elements of
 * the KV head group that holds the poison, never another group's. A dtype the backend's backward
 * refuses (NOT_SUPPORTED) is reported n/a and not counted; the case table pins which those are. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"
#include "numerics_bwd.h"
#include "problem.h"

enum { SMAX = 40, H = 4, HKV = 2, G = H / HKV, D = 64, NQ = SMAX * H * D, NK = SMAX * HKV * D, NL = H * SMAX };
enum { E_CLEAN, E_NAN, E_ZERO, E_ANY };

static int SQ, SK, VARLEN;
static const int32_t CU_Q[3] = {0, 24, 40}, CU_K[3] = {0, 20, 40}; /* varlen: two sequences in 40 x 40 */

typedef struct bbuf {
    float q[NQ], k[NK], v[NK], dout[NQ];  /* inputs [S, H, D] */
    float o[NQ], lse[NL];                 /* the CPU forward's, LSE [H, SQ] */
    float dq[NQ], dk[NK], dv[NK];         /* the backend's gradients */
} bbuf;

/* Row i's sequence, and whether row i sees key j (causal, bottom-right per sequence). */
static int sees(int i, int j)
{
    if (!VARLEN) return j <= i + SK - SQ;
    const int b = i >= CU_Q[1], bk = j >= CU_K[1];
    if (b != bk) return 0;
    return j - CU_K[b] <= (i - CU_Q[b]) + (CU_K[b + 1] - CU_K[b]) - (CU_Q[b + 1] - CU_Q[b]);
}

/* The CPU forward (O, LSE in the dtype / f32), then the backend's backward; 0 ran, 2 declined, 1 failed. */
static int run(portattn_backend_t be, portattn_dtype_t dt, bbuf *x)
{
    const dm_kind kind = dm_kind_of(be);
    const size_t es = (size_t)pa_dtype_size(dt), qb = NQ * es, kb = NK * es;
    unsigned char *h = malloc(4 * qb + 4 * kb); /* q, k, v, dO, O, then dQ, dK, dV */
    unsigned char *hq = h, *hk = hq + qb, *hv = hk + kb, *hdo = hv + kb, *ho = hdo + qb, *hg = ho + qb;
    void *d[8] = {NULL}; /* q, k, v, dout, o, dq, dk, dv */
    const size_t sz[8] = {qb, kb, kb, qb, qb, qb, kb, kb};
    float *dl = dm_alloc(kind, NL * 4);
    int32_t *dcq = dm_alloc(kind, sizeof CU_Q), *dck = dm_alloc(kind, sizeof CU_K);
    int rc = 1, ok = h && dl && dcq && dck;
    for (int i = 0; i < 8; i++) ok &= (d[i] = dm_alloc(kind, sz[i])) != NULL;
    if (!ok) goto done;
    for (int i = 0; i < NQ; i++) pa_store_elem(dt, hq, i, x->q[i]), pa_store_elem(dt, hdo, i, x->dout[i]);
    for (int i = 0; i < NK; i++) pa_store_elem(dt, hk, i, x->k[i]), pa_store_elem(dt, hv, i, x->v[i]);
    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = dt, f.batch = 1, f.seqlen_q = SQ, f.seqlen_k = SK, f.heads_q = H, f.heads_kv = HKV;
    f.head_dim_qk = f.head_dim_v = D, f.causal = 1, f.backend = PORTATTN_BACKEND_CPU;
    f.q = portattn_tensor_bshd(hq, SQ, H, D), f.k = portattn_tensor_bshd(hk, SK, HKV, D);
    f.v = portattn_tensor_bshd(hv, SK, HKV, D), f.o = portattn_tensor_bshd(ho, SQ, H, D);
    f.lse = x->lse, f.lse_stride[0] = NL, f.lse_stride[1] = SQ, f.lse_stride[2] = 1;
    if (VARLEN) f.batch = 2, f.cu_seqlens_q = CU_Q, f.cu_seqlens_k = CU_K, f.max_seqlen_q = 24, f.max_seqlen_k = 20;
    if (portattn_forward(&f, NULL)) {
        printf("     CPU forward: %s\n", portattn_last_error());
        goto done;
    }
    for (int i = 0; i < NQ; i++) x->o[i] = pa_load_elem(dt, ho, i);
    memset(hg, 0xFF, qb + 2 * kb); /* poisoned gradients */
    const void *src[5] = {hq, hk, hv, hdo, ho};
    for (int i = 0; i < 5; i++) ok &= !dm_upload(kind, d[i], src[i], sz[i]);
    for (int i = 5; i < 8; i++) ok &= !dm_upload(kind, d[i], hg, sz[i]);
    ok &= !dm_upload(kind, dl, x->lse, NL * 4) && !dm_upload(kind, dcq, CU_Q, sizeof CU_Q) &&
          !dm_upload(kind, dck, CU_K, sizeof CU_K);
    if (!ok) goto done;
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = dt, p.batch = f.batch, p.seqlen_q = SQ, p.seqlen_k = SK, p.heads_q = H, p.heads_kv = HKV;
    p.head_dim_qk = p.head_dim_v = D, p.causal = 1, p.backend = be, p.deterministic = 1;
    p.q = portattn_tensor_bshd(d[0], SQ, H, D), p.k = portattn_tensor_bshd(d[1], SK, HKV, D);
    p.v = portattn_tensor_bshd(d[2], SK, HKV, D), p.dout = portattn_tensor_bshd(d[3], SQ, H, D);
    p.o = portattn_tensor_bshd(d[4], SQ, H, D), p.dq = portattn_tensor_bshd(d[5], SQ, H, D);
    p.dk = portattn_tensor_bshd(d[6], SK, HKV, D), p.dv = portattn_tensor_bshd(d[7], SK, HKV, D);
    p.lse = dl, memcpy(p.lse_stride, f.lse_stride, sizeof p.lse_stride);
    if (VARLEN) p.cu_seqlens_q = dcq, p.cu_seqlens_k = dck, p.max_seqlen_q = 24, p.max_seqlen_k = 20;
    const portattn_status_t st = portattn_backward(&p, NULL);
    if (st) {
        printf("     backward: %s: %s\n", portattn_status_string(st), portattn_last_error());
        rc = st == PORTATTN_ERROR_NOT_SUPPORTED ? 2 : 1;
        goto done;
    }
    if (dm_sync(kind) || dm_download(kind, hg, d[5], qb) || dm_download(kind, hg + qb, d[6], kb) ||
        dm_download(kind, hg + qb + kb, d[7], kb))
        goto done;
    for (int i = 0; i < NQ; i++) x->dq[i] = pa_load_elem(dt, hg, i);
    for (int i = 0; i < NK; i++) x->dk[i] = pa_load_elem(dt, hg + qb, i), x->dv[i] = pa_load_elem(dt, hg + qb + kb, i);
    rc = 0;
done:
    free(h);
    for (int i = 0; i < 8; i++) dm_free(kind, d[i]);
    dm_free(kind, dl), dm_free(kind, dcq), dm_free(kind, dck);
    return rc;
}

static int any_nan(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (isnan(x[i])) return 1;
    return 0;
}

static int any_nonfinite(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 1;
    return 0;
}

/* Expectations for every gradient element of the poisoned call x (inputs and CPU forward), from
 * the rules at the top; tainted[hk] marks the KV head groups that hold a NaN (or an inf in K or V). */
typedef struct expect {
    unsigned char dq[NQ], dk[NK], dv[NK], tainted[HKV];
} expect;

static void derive(const bbuf *x, expect *e)
{
    static unsigned char skip[SMAX][H], pnan[SMAX][H], dnan[SMAX][H];
    memset(e->tainted, 0, sizeof e->tainted);
    for (int i = 0; i < SQ; i++)
        for (int h = 0; h < H; h++) {
            const float l = x->lse[h * SQ + i];
            const int r = (i * H + h) * D;
            skip[i][h] = isinf(l) && l < 0;
            pnan[i][h] = isnan(l);
            dnan[i][h] = !skip[i][h] && (pnan[i][h] || any_nan(x->o + r, D) || any_nan(x->dout + r, D));
            for (int c = 0; c < D; c++) e->dq[r + c] = skip[i][h] ? E_ZERO : dnan[i][h] ? E_NAN : E_CLEAN;
            e->tainted[h / G] |= dnan[i][h] || any_nan(x->q + r, D);
        }
    for (int j = 0; j < SK; j++)
        for (int hk = 0; hk < HKV; hk++) {
            int seen = 0, knan = 0, vnan = 0;
            unsigned char col[D] = {0};
            for (int i = 0; i < SQ; i++)
                for (int h = hk * G; h < (hk + 1) * G; h++) {
                    if (!sees(i, j) || skip[i][h]) continue;
                    seen = 1, knan |= dnan[i][h], vnan |= pnan[i][h];
                    for (int c = 0; c < D; c++) col[c] |= isnan(x->dout[(i * H + h) * D + c]);
                }
            const int r = (j * HKV + hk) * D;
            e->tainted[hk] |= any_nonfinite(x->k + r, D) || any_nonfinite(x->v + r, D); /* 0 x inf in a tile */
            for (int c = 0; c < D; c++) {
                e->dk[r + c] = !seen ? E_ZERO : knan ? E_NAN : E_CLEAN;
                e->dv[r + c] = !seen ? E_ZERO : vnan || col[c] ? E_NAN : E_CLEAN;
            }
        }
    if (VARLEN) { /* the second sequence is all poison: only the first one's gradients are checked */
        for (int i = CU_Q[1]; i < SQ; i++) memset(e->dq + i * H * D, E_ANY, H * D);
        for (int j = CU_K[1]; j < SK; j++) memset(e->dk + j * HKV * D, E_ANY, HKV * D), memset(e->dv + j * HKV * D, E_ANY, HKV * D);
    }
}

static int same(float a, float b) { return memcmp(&a, &b, 4) == 0; }

/* Elements of one gradient against their expectations; returns the count that break them. */
static long check_grad(const char *name, const float *got, const float *clean, const unsigned char *want, int rows,
                       int heads, const unsigned char *tainted, int strict)
{
    long bad = 0;
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++)
            for (int c = 0; c < D; c++) {
                const int i = (r * heads + h) * D + c;
                const int group = heads == H ? h / G : h;
                int ok = want[i] == E_ANY || (want[i] == E_NAN && isnan(got[i])) ||
                         (want[i] == E_ZERO && got[i] == 0.0f) || (want[i] == E_CLEAN && same(got[i], clean[i]));
                ok |= !strict && tainted[group] && want[i] != E_NAN && isnan(got[i]);
                if (!ok && bad++ < 3)
                    printf("     %s (s %d, h %d, c %d): expected %s, got %g (clean %g)\n", name, r, h, c,
                           want[i] == E_NAN ? "NaN" : want[i] == E_ZERO ? "0" : "the clean value", got[i], clean[i]);
            }
    return bad;
}

static int checks, failures;

/* Runs the clean call `base` and the poisoned `x` on `be` and checks x's gradients. */
static void scenario(portattn_backend_t be, portattn_dtype_t dt, bbuf *base, bbuf *x, const char *what)
{
    static expect e;
    const char *dn = pa_dtype_name(dt);
    const int strict = be == PORTATTN_BACKEND_CPU || be == PORTATTN_BACKEND_CUDA_GENERIC;
    const int rb = run(be, dt, base), rx = rb ? rb : run(be, dt, x);
    if (rb == 2 || rx == 2) {
        printf("n/a  bwd %-40s %-4s %s\n", what, dn, portattn_last_error());
        return;
    }
    checks++;
    if (rb || rx) {
        failures++;
        printf("FAIL bwd %-40s %-4s run failed\n", what, dn);
        return;
    }
    derive(x, &e);
    long nan_expected = 0;
    for (int i = 0; i < NQ; i++) nan_expected += e.dq[i] == E_NAN;
    for (int i = 0; i < NK; i++) nan_expected += (e.dk[i] == E_NAN) + (e.dv[i] == E_NAN);
    const long bad = check_grad("dq", x->dq, base->dq, e.dq, SQ, H, e.tainted, strict) +
                     check_grad("dk", x->dk, base->dk, e.dk, SK, HKV, e.tainted, strict) +
                     check_grad("dv", x->dv, base->dv, e.dv, SK, HKV, e.tainted, strict);
    failures += bad != 0;
    printf("%-4s bwd %-40s %-4s %2dx%-2d %ld NaN expected%s\n", bad ? "FAIL" : "ok", what, dn, SQ, SK, nan_expected,
           bad ? ", contract broken" : "");
}

static void fill(bbuf *x, uint64_t *rng)
{
    for (int i = 0; i < NQ; i++) x->q[i] = (float)urand(rng), x->dout[i] = (float)urand(rng);
    for (int i = 0; i < NK; i++) x->k[i] = (float)urand(rng), x->v[i] = (float)urand(rng);
}

/* Whether `be` has a backward pass: only "has no backward pass" lets the checks be skipped (a
 * backend that has one must run every call here). */
static int has_backward(portattn_backend_t be)
{
    static bbuf x;
    uint64_t rng = 1;
    fill(&x, &rng);
    SQ = SK = 8;
    if (run(be, PORTATTN_DTYPE_F32, &x) != 2) return 1; /* ran, or failed: the scenarios say how */
    if (!strstr(portattn_last_error(), "has no backward pass")) return 1;
    printf("n/a  bwd: %s\n", portattn_last_error());
    return 0;
}

int numerics_bwd(portattn_backend_t be, uint64_t *rng, int *checks_out)
{
    static bbuf clean, x, base;
    const portattn_dtype_t dts[3] = {PORTATTN_DTYPE_F32, PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16};
    const int shapes[3][4] = {{24, 24, 7, 13}, {4, 40, 1, 38}, {40, 20, 30, 5}}; /* Sq, Sk, query row, key */
    checks = failures = 0;
    VARLEN = 0;
    *checks_out = 0;
    if (!has_backward(be)) return 0;
    for (int t = 0; t < 9; t++) {
        SQ = shapes[t / 3][0], SK = shapes[t / 3][1];
        const int qs = shapes[t / 3][2], kj = shapes[t / 3][3];
        const portattn_dtype_t dt = dts[t % 3];
        fill(&clean, rng);
        x = clean, x.q[(qs * H + 1) * D + 3] = NAN;
        scenario(be, dt, &clean, &x, "NaN in one query row");
        x = clean, x.k[(kj * HKV + 0) * D + 9] = NAN;
        scenario(be, dt, &clean, &x, "NaN in one key");
        x = clean, x.v[(kj * HKV + 1) * D + 5] = NAN;
        scenario(be, dt, &clean, &x, "NaN in one V element (dV clean)");
        x = clean, x.dout[(qs * H + 2) * D + 7] = NAN;
        scenario(be, dt, &clean, &x, "NaN in one dO element");
        base = clean; /* q > 0 and K = -inf in KV head 0: its rows see no key */
        for (int i = 0; i < NQ; i++) base.q[i] = fabsf(base.q[i]) + 0.25f;
        x = base;
        for (int i = 0; i < NK; i++)
            if ((i / D) % HKV == 0) x.k[i] = -INFINITY;
        scenario(be, dt, &base, &x, "K = -inf: no visible key -> dQ, dK, dV 0");
    }
    SQ = SK = SMAX, VARLEN = 1;
    for (int t = 0; t < 3; t++) {
        fill(&clean, rng);
        x = clean;
        for (int i = CU_K[1] * HKV * D; i < NK; i++) x.k[i] = i % 3 ? NAN : INFINITY, x.v[i] = i % 2 ? NAN : -INFINITY;
        for (int i = CU_Q[1] * H * D; i < NQ; i++) x.q[i] = NAN, x.dout[i] = i % 2 ? NAN : INFINITY;
        scenario(be, dts[t], &clean, &x, "varlen: NaN/inf in sequence 2 stay out of 1");
    }
    VARLEN = 0;
    *checks_out = checks;
    return failures;
}
