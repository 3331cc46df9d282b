/* The NaN/inf contract (README "Numerics"), checked on one backend: test_numerics <backend>.
 *   - NaN (or +inf) in a query row: that row's O and LSE are NaN (+inf: unless every visible key
 *     scores -inf, which is no visible key), every other row is bitwise the result of the clean call;
 *   - NaN in key j: the rows that see j are NaN, the rows that do not (causal) are bitwise clean;
 *   - NaN in V[j][c]: rows that see j have O[.., c] NaN and every other column bitwise clean; rows
 *     that do not see j are bitwise clean on the CPU backend, while GPU kernels may also turn their
 *     column c NaN (0 x NaN inside a key tile, as in FlashAttention), and nothing else;
 *   - keys whose scores are all -inf count as no visible key: O = 0, LSE = -inf.
 *   - varlen: non-finite values in one sequence never reach another sequence's rows.
 *   - softcap: +-inf scores become +-softcap (finite rows); +inf in K or V, and scores past fp32
 *     (infinities(): README "Numerics").
 * f32, bf16 and f16; causal, 24 x 24 (prefill kernels), 4 x 40 (decode kernels) and 40 x 20 (rows that
 * see no key beside rows that do, in one key tile). Then the backward's contract (numerics_bwd.c)
 * where the backend has a backward pass. Exit 0 pass, 1 fail, 77 backend absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"
#include "numerics_bwd.h"
#include "problem.h"

/* Three shapes: 24 x 24 and 40 x 20 (the prefill kernels), 4 queries x 40 keys (the decode kernels). */
enum { SMAX = 40, H = 4, HKV = 2, D = 64, NQ = SMAX * H * D, NK = SMAX * HKV * D, NL = H * SMAX };
static int SQ, SK; /* the current shape */
enum { ROW_CLEAN, ROW_NAN, ROW_COLUMN, ROW_COLUMN_MAYBE, ROW_ZERO, ROW_ANY, ROW_FINITE, ROW_NAN_OR_FINITE };
/* The varlen check packs two sequences into the 40 x 40 buffers: queries [0, 24) and [24, 40), keys
 * [0, 20) and [20, 40); a key tile of the first sequence's last keys holds the second's first keys. */
static const int32_t CU_Q[3] = {0, 24, 40}, CU_K[3] = {0, 20, 40};
static int VARLEN;     /* run() packs the two sequences */
static float SOFTCAP;  /* run()'s softcap (0 = off) */
static int NONFINITE;  /* ROW_COLUMN(_MAYBE) accept +-inf as well as NaN (an inf in V) */

static int failures, checks;

typedef struct buf {
    float q[NQ], k[NK], v[NK], o[NQ], lse[NL]; /* [SQ, H, D], [SK, HKV, D], LSE [H, SQ] */
} buf;

/* Runs the call on `be` with host inputs in f32, converted to dtype; O and LSE back in f32. */
static int run(portattn_backend_t be, portattn_dtype_t dt, buf *x)
{
    const dm_kind kind = dm_kind_of(be);
    const size_t es = (size_t)pa_dtype_size(dt);
    unsigned char *h = malloc((NQ + 2 * NK + NQ) * es);
    void *dq = dm_alloc(kind, NQ * es), *dk = dm_alloc(kind, NK * es), *dv = dm_alloc(kind, NK * es);
    void *dout = dm_alloc(kind, NQ * es), *dl = dm_alloc(kind, NL * 4);
    int32_t *dcq = dm_alloc(kind, sizeof CU_Q), *dck = dm_alloc(kind, sizeof CU_K);
    int rc = 1;
    if (!h || !dq || !dk || !dv || !dout || !dl || !dcq || !dck) goto done;
    if (dm_upload(kind, dcq, CU_Q, sizeof CU_Q) || dm_upload(kind, dck, CU_K, sizeof CU_K)) goto done;
    for (int i = 0; i < NQ; i++) pa_store_elem(dt, h, i, x->q[i]);
    for (int i = 0; i < NK; i++) pa_store_elem(dt, h + NQ * es, i, x->k[i]), pa_store_elem(dt, h + (NQ + NK) * es, i, x->v[i]);
    memset(h + (NQ + 2 * NK) * es, 0xFF, NQ * es); /* poisoned O */
    if (dm_upload(kind, dq, h, NQ * es) || dm_upload(kind, dk, h + NQ * es, NK * es) ||
        dm_upload(kind, dv, h + (NQ + NK) * es, NK * es) || dm_upload(kind, dout, h + (NQ + 2 * NK) * es, NQ * es))
        goto done;
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = dt, p.batch = 1, p.seqlen_q = SQ, p.seqlen_k = SK, p.heads_q = H, p.heads_kv = HKV;
    p.head_dim_qk = p.head_dim_v = D, p.causal = 1, p.backend = be, p.softcap = SOFTCAP;
    p.q = portattn_tensor_bshd(dq, SQ, H, D), p.k = portattn_tensor_bshd(dk, SK, HKV, D);
    p.v = portattn_tensor_bshd(dv, SK, HKV, D), p.o = portattn_tensor_bshd(dout, SQ, H, D);
    p.lse = dl, p.lse_stride[0] = NL, p.lse_stride[1] = SQ, p.lse_stride[2] = 1;
    if (VARLEN) p.batch = 2, p.cu_seqlens_q = dcq, p.cu_seqlens_k = dck, p.max_seqlen_q = 24, p.max_seqlen_k = 20;
    portattn_status_t st = portattn_forward(&p, NULL);
    if (st) {
        printf("     forward: %s: %s\n", portattn_status_string(st), portattn_last_error());
        rc = st == PORTATTN_ERROR_NOT_SUPPORTED ? 2 : 1;
        goto done;
    }
    if (dm_sync(kind) || dm_download(kind, h, dout, NQ * es) || dm_download(kind, x->lse, dl, NL * 4)) goto done;
    for (int i = 0; i < NQ; i++) x->o[i] = pa_load_elem(dt, h, i);
    rc = 0;
done:
    free(h);
    dm_free(kind, dq), dm_free(kind, dk), dm_free(kind, dv), dm_free(kind, dout), dm_free(kind, dl);
    dm_free(kind, dcq), dm_free(kind, dck);
    return rc;
}

/* Fresh random inputs into *clean and the clean run (*rng advances): 1 when it ran, 0 when the
 * backend declined (n/a) or the run failed (counted). `tag` prefixes the messages. */
static int clean_run(portattn_backend_t be, portattn_dtype_t dt, buf *clean, uint64_t *rng, const char *tag)
{
    const char *dn = pa_dtype_name(dt);
    for (int i = 0; i < NQ; i++) clean->q[i] = (float)urand(rng);
    for (int i = 0; i < NK; i++) clean->k[i] = (float)urand(rng), clean->v[i] = (float)urand(rng);
    const int r = run(be, dt, clean);
    if (r == 2) printf("n/a  %s%s declined by the backend\n", tag, dn);
    else if (r) printf("FAIL clean %srun %s\n", tag, dn), failures++;
    return r == 0;
}

static int same(float a, float b) { return memcmp(&a, &b, 4) == 0; }

/* x as the backend holds it in dtype dt. */
static float held(portattn_dtype_t dt, float x)
{
    unsigned char b[4];
    pa_store_elem(dt, b, 0, x);
    return pa_load_elem(dt, b, 0);
}

/* A 16-bit subnormal on a backend whose tensor instructions may flush it: gfx90a's MFMAs read it as
 * zero (hip_wave.h), so an infinity it multiplies is NaN there (0 x inf) and +-inf elsewhere, and a
 * row whose score hinges on one is NaN or finite. hip-cdna may run on a gfx90a (the test cannot tell
 * which target); every other backend keeps subnormals. */
static int FLUSHES; /* set by main() for the backend under test */
static int subnormal16(portattn_dtype_t dt, float x)
{
    const float h = fabsf(held(dt, x));
    return FLUSHES && dt != PORTATTN_DTYPE_F32 && h != 0 && h < (dt == PORTATTN_DTYPE_F16 ? 0x1p-14f : 0x1p-126f);
}

/* expect[s][h]: what row (s, h) must be; col = the V column of ROW_COLUMN(_MAYBE). */
static void check(const char *what, const char *dt, const buf *clean, const buf *got, int expect[SMAX][H], int col)
{
    long bad = 0;
    for (int s = 0; s < SQ; s++)
        for (int h = 0; h < H; h++) {
            const float *o = got->o + (s * H + h) * D, *c = clean->o + (s * H + h) * D;
            const float l = got->lse[h * SQ + s], lc = clean->lse[h * SQ + s];
            int ok = 1;
            switch (expect[s][h]) {
            case ROW_CLEAN:
                for (int d = 0; d < D; d++) ok &= same(o[d], c[d]);
                ok &= same(l, lc);
                break;
            case ROW_NAN:
                for (int d = 0; d < D; d++) ok &= isnan(o[d]);
                ok &= isnan(l);
                break;
            case ROW_COLUMN:
            case ROW_COLUMN_MAYBE:
                for (int d = 0; d < D; d++)
                    ok &= d == col ? ((NONFINITE ? !isfinite(o[d]) : isnan(o[d])) ||
                                      (expect[s][h] == ROW_COLUMN_MAYBE && same(o[d], c[d])))
                                   : same(o[d], c[d]);
                ok &= same(l, lc);
                break;
            case ROW_FINITE:
                for (int d = 0; d < D; d++) ok &= isfinite(o[d]);
                ok &= isfinite(l);
                break;
            case ROW_NAN_OR_FINITE: {
                int nan = isnan(l), fin = isfinite(l);
                for (int d = 0; d < D; d++) nan &= isnan(o[d]), fin &= isfinite(o[d]);
                ok = nan || fin;
                break;
            }
            case ROW_ANY:
                break;
            case ROW_ZERO:
                for (int d = 0; d < D; d++) ok &= o[d] == 0.0f;
                ok &= isinf(l) && l < 0;
                break;
            }
            if (!ok && bad++ < 3) printf("     row (s %d, h %d): expected %d, got o[0] %g o[%d] %g lse %g\n", s, h, expect[s][h], o[0], col, o[col], l);
        }
    checks++;
    failures += bad != 0;
    printf("%-4s %-44s %-4s %2dx%-2d %s\n", bad ? "FAIL" : "ok", what, dt, SQ, SK, bad ? "contract broken" : "");
}

/* Row (qs, 1) of a softcapped call whose Q row holds +inf at dim 3: each visible key j scores
 * softcap * sign(k[j][3]) (tanh's limit), so O and LSE are a softmax over +-softcap; checked
 * against that closed form within the dtype's rounding. NaN expected when some k[j][3] is 0. */
static void check_capped_row(portattn_dtype_t dt, const buf *x, const buf *got, int qs, int diag)
{
    const char *dn = pa_dtype_name(dt);
    const int hk = 1 / (H / HKV);
    double w[SMAX], sum = 0, mx = -INFINITY;
    int n = 0, zero = 0, flushable = 0;
    for (int j = 0; j <= qs + diag && j < SK; j++, n++) {
        const float kd = held(dt, x->k[(j * HKV + hk) * D + 3]);
        zero |= kd == 0.0f;
        flushable |= subnormal16(dt, kd);
        w[j] = kd > 0 ? SOFTCAP : -SOFTCAP;
        mx = fmax(mx, w[j]);
    }
    for (int j = 0; j < n; j++) sum += w[j] = exp(w[j] - mx);
    double worst = 0;
    const float *o = got->o + (qs * H + 1) * D;
    for (int d = 0; d < D; d++) {
        double acc = 0;
        for (int j = 0; j < n; j++) acc += w[j] * x->v[(j * HKV + hk) * D + d];
        worst = fmax(worst, isfinite(o[d]) ? fabs(o[d] - acc / sum) : INFINITY);
    }
    const double lse = mx + log(sum), gl = got->lse[1 * SQ + qs];
    worst = fmax(worst, isfinite(gl) ? fabs(gl - lse) / fmax(1.0, fabs(lse)) : INFINITY);
    const int ok = zero ? isnan(o[0]) : n == 0 || worst < 2e-2 || (flushable && isnan(o[0]));
    checks++;
    failures += !ok;
    printf("%-4s %-44s %-4s %2dx%-2d max err %.1e\n", ok ? "ok" : "FAIL", "softcap: +inf in a query row -> +-softcap", dn,
           SQ, SK, worst);
}

/* The infinities and overflow: with softcap, +-inf scores become +-softcap (a finite row, NaN only
 * from a NaN score); without it, +inf in key j makes NaN the rows whose score is +inf and drops the
 * key from rows whose score is -inf; +inf in V[j][c] makes column c non-finite in the rows that
 * see j, as NaN does; finite inputs whose scores leave the fp32 range are undefined in their own
 * rows only (double on the CPU, fp32 on GPUs), never in another row. */
static void infinities(portattn_backend_t be, portattn_dtype_t dt, int qs, int kj, int diag, uint64_t *rng)
{
    static buf clean, x;
    static int expect[SMAX][H];
    const char *dn = pa_dtype_name(dt);
    const int g = H / HKV, vc = 11, cpu = be == PORTATTN_BACKEND_CPU;
    SOFTCAP = 5.0f;
    if (clean_run(be, dt, &clean, rng, "softcap ")) {
        for (int pass = 0; pass < 2; pass++) { /* +inf, then NaN, in query row qs of head 1 */
            x = clean;
            x.q[(qs * H + 1) * D + 3] = pass ? NAN : INFINITY;
            for (int s = 0; s < SQ; s++)
                for (int h = 0; h < H; h++)
                    expect[s][h] = s != qs || h != 1 ? ROW_CLEAN : qs + diag < 0 ? ROW_ZERO : pass ? ROW_NAN : ROW_ANY;
            if (run(be, dt, &x)) failures++, printf("FAIL run\n");
            else {
                check(pass ? "softcap: NaN in a query row -> that row NaN" : "softcap: +inf in a query row, other rows",
                      dn, &clean, &x, expect, 0);
                if (!pass) check_capped_row(dt, &x, &x, qs, diag);
            }
        }
        x = clean; /* -inf and +inf in key kj of KV head 0: scores +-softcap, finite rows */
        x.k[(kj * HKV + 0) * D + 9] = INFINITY, x.k[(kj * HKV + 0) * D + 10] = INFINITY;
        for (int i = 0; i < SQ * H; i++) x.q[i * D + 10] = x.q[i * D + 9]; /* +inf x q9 + inf x q10: never inf - inf */
        buf base = clean;
        for (int i = 0; i < NQ; i++) base.q[i] = x.q[i];
        if (!run(be, dt, &base) && !run(be, dt, &x)) {
            for (int s = 0; s < SQ; s++)
                for (int h = 0; h < H; h++)
                {
                    const float q9 = x.q[(s * H + h) * D + 9];
                    expect[s][h] = kj > s + diag || h / g != 0 ? ROW_CLEAN : held(dt, q9) == 0 ? ROW_NAN
                                 : subnormal16(dt, q9) ? ROW_NAN_OR_FINITE : ROW_FINITE;
                }
            check("softcap: +-inf scores from an inf key -> finite", dn, &base, &x, expect, 0);
        } else failures++, printf("FAIL run\n");
    }
    SOFTCAP = 0;
    if (!clean_run(be, dt, &clean, rng, "inf ")) return;
    x = clean; /* +inf in key kj of KV head 0: rows with q > 0 there score +inf (NaN), q < 0 -inf (key dropped) */
    x.k[(kj * HKV + 0) * D + 9] = INFINITY;
    for (int s = 0; s < SQ; s++)
        for (int h = 0; h < H; h++) {
            const float qd = held(dt, x.q[(s * H + h) * D + 9]);
            expect[s][h] = kj > s + diag || h / g != 0 ? ROW_CLEAN : qd >= 0 ? ROW_NAN
                         : subnormal16(dt, qd) ? ROW_NAN_OR_FINITE : ROW_FINITE;
        }
    if (run(be, dt, &x)) failures++, printf("FAIL run\n");
    else check("+inf in one key -> NaN (+inf score) or finite", dn, &clean, &x, expect, 0);
    x = clean; /* +inf in V[kj][vc] of KV head 1 */
    x.v[(kj * HKV + 1) * D + vc] = INFINITY;
    for (int s = 0; s < SQ; s++)
        for (int h = 0; h < H; h++)
            expect[s][h] = h / g != 1 ? ROW_CLEAN : kj <= s + diag ? ROW_COLUMN : s + diag < 0 ? ROW_ZERO
                         : cpu ? ROW_CLEAN : ROW_COLUMN_MAYBE;
    NONFINITE = 1;
    if (run(be, dt, &x)) failures++, printf("FAIL run\n");
    else check("+inf in one V element -> that column non-finite", dn, &clean, &x, expect, vc);
    NONFINITE = 0;
    if (dt == PORTATTN_DTYPE_F16) return; /* 3e38 is +inf in f16: the case above */
    x = clean; /* scores past the fp32 range in query row qs of head 2: undefined there only */
    for (int d = 0; d < D; d++) x.q[(qs * H + 2) * D + d] = 3e38f;
    for (int s = 0; s < SQ; s++)
        for (int h = 0; h < H; h++) expect[s][h] = s == qs && h == 2 ? ROW_ANY : ROW_CLEAN;
    if (run(be, dt, &x)) failures++, printf("FAIL run\n");
    else check("scores past fp32 -> that row only", dn, &clean, &x, expect, 0);
}

int main(int argc, char **argv)
{
    int ok = 0;
    portattn_backend_t be = argc > 1 ? portattn_backend_from_name(argv[1], &ok) : PORTATTN_BACKEND_AUTO;
    portattn_backend_info_t info;
    if (!ok || be == PORTATTN_BACKEND_AUTO || portattn_backend_get_info(be, &info)) {
        fprintf(stderr, "usage: %s <backend>\n", argv[0]);
        return 2;
    }
    const int present = test_backend_present(be);
    if (present) return present;
    const int cpu = be == PORTATTN_BACKEND_CPU;
    FLUSHES = be == PORTATTN_BACKEND_HIP_CDNA;
    uint64_t rng = test_seed();
    static buf clean, x;
    static int expect[SMAX][H];
    const portattn_dtype_t dts[3] = {PORTATTN_DTYPE_F32, PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16};
    const int vc = 5, g = H / HKV; /* poisoned V column */
    /* Sq, Sk, poisoned query row, poisoned key; the third shape has rows that see no key (s < 20) in
     * the key tile of a poisoned V row, which must stay exactly 0 (no 0 x NaN) */
    const int shapes[3][4] = {{24, 24, 7, 13}, {4, 40, 1, 38}, {40, 20, 30, 5}};
    int ran = 0;
    for (int t = 0; t < 9; t++) {
        SQ = shapes[t / 3][0], SK = shapes[t / 3][1];
        const int qs = shapes[t / 3][2], kj = shapes[t / 3][3], diag = SK - SQ; /* row s sees keys <= s + diag */
        const portattn_dtype_t dt = dts[t % 3];
        const char *dn = pa_dtype_name(dt);
        if (!clean_run(be, dt, &clean, &rng, "")) continue;
        ran++;

        /* NaN, then +inf, in query row qs of head 1 */
        for (int pass = 0; pass < 2; pass++) {
            x = clean;
            x.q[(qs * H + 1) * D + 3] = pass ? INFINITY : NAN;
            /* +inf x k: +inf for k >= 0 (max +inf -> inf - inf = NaN), -inf for k < 0; a row whose
             * visible keys all have k[3] < 0 has only -inf scores, i.e. no visible key */
            int any_pos = !pass;
            for (int j = 0; j <= qs + diag && j < SK; j++) any_pos |= !(x.k[(j * HKV + 1 / g) * D + 3] < -1e-6f);
            for (int s = 0; s < SQ; s++)
                for (int h = 0; h < H; h++) expect[s][h] = s == qs && h == 1 ? (any_pos ? ROW_NAN : ROW_ZERO) : ROW_CLEAN;
            if (run(be, dt, &x)) failures++, printf("FAIL run\n");
            else check(pass ? "+inf in one query row -> that row NaN" : "NaN in one query row -> that row NaN", dn, &clean, &x, expect, 0);
        }
        /* NaN in key kj of KV head 0: rows that see it (s >= kj, heads 0..g-1) */
        x = clean;
        x.k[(kj * HKV + 0) * D + 9] = NAN;
        for (int s = 0; s < SQ; s++)
            for (int h = 0; h < H; h++) expect[s][h] = kj <= s + diag && h / g == 0 ? ROW_NAN : ROW_CLEAN;
        if (run(be, dt, &x)) failures++, printf("FAIL run\n");
        else check("NaN in one key -> the rows that see it NaN", dn, &clean, &x, expect, 0);
        /* NaN in V[kj][vc] of KV head 1 */
        x = clean;
        x.v[(kj * HKV + 1) * D + vc] = NAN;
        for (int s = 0; s < SQ; s++)
            for (int h = 0; h < H; h++)
                expect[s][h] = h / g != 1       ? ROW_CLEAN
                               : kj <= s + diag ? ROW_COLUMN
                               : s + diag < 0   ? ROW_ZERO /* sees no key at all: O = 0, LSE = -inf */
                               : cpu            ? ROW_CLEAN
                                                : ROW_COLUMN_MAYBE;
        if (run(be, dt, &x)) failures++, printf("FAIL run\n");
        else check("NaN in one V element -> that column of its rows", dn, &clean, &x, expect, vc);
        /* K rows of -inf with q > 0: every score of KV head 0 is -inf -> no visible key */
        x = clean;
        for (int i = 0; i < NQ; i++) x.q[i] = fabsf(x.q[i]) + 0.25f;
        for (int i = 0; i < NK; i++)
            if ((i / D) % HKV == 0) x.k[i] = -INFINITY;
        buf base = clean;
        for (int i = 0; i < NQ; i++) base.q[i] = x.q[i];
        if (run(be, dt, &base)) { failures++, printf("FAIL run\n"); continue; }
        for (int s = 0; s < SQ; s++)
            for (int h = 0; h < H; h++) expect[s][h] = h / g == 0 ? ROW_ZERO : ROW_CLEAN;
        if (run(be, dt, &x)) failures++, printf("FAIL run\n");
        else check("all scores -inf -> O = 0, LSE = -inf", dn, &base, &x, expect, 0);
        infinities(be, dt, qs, kj, diag, &rng);
    }
    /* varlen: NaN and inf in every K, V and Q element of the second sequence leave the first one's rows
     * bitwise as they were (a kernel whose key tiles reach past a sequence's end must not let the next
     * sequence in, not even as 0 x NaN) */
    SQ = SK = SMAX, VARLEN = 1;
    for (int t = 0; t < 3; t++) {
        const portattn_dtype_t dt = dts[t];
        const char *dn = pa_dtype_name(dt);
        if (!clean_run(be, dt, &clean, &rng, "varlen ")) continue;
        ran++;
        x = clean;
        for (int i = CU_K[1] * HKV * D; i < NK; i++) x.k[i] = i % 3 ? NAN : INFINITY, x.v[i] = i % 2 ? NAN : -INFINITY;
        for (int i = CU_Q[1] * H * D; i < NQ; i++) x.q[i] = NAN;
        for (int s = 0; s < SQ; s++)
            for (int h = 0; h < H; h++) expect[s][h] = s < CU_Q[1] ? ROW_CLEAN : ROW_ANY;
        if (run(be, dt, &x)) failures++, printf("FAIL run\n");
        else check("varlen: NaN/inf in sequence 2 stay out of 1", dn, &clean, &x, expect, 0);
    }
    VARLEN = 0;
    int bwd_checks = 0;
    failures += numerics_bwd(be, &rng, &bwd_checks);
    checks += bwd_checks;
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures || !ran ? 1 : 0;
}
