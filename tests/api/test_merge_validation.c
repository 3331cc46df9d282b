/* Every validation path of portattn_merge returns its documented status and a message naming the
 * problem; then random valid calls (shapes, layouts, dtype pairs, LSEs with -inf and NaN) must match
 * an independent per-row computation in double, and the same calls with a random bad argument must
 * be refused with INVALID_ARGUMENT, leaving the outputs untouched. Host memory (the CPU merge). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "harness.h"
#include "problem.h"

enum { B = 2, S = 8, H = 4, D = 16, N = B * S * H * D, NL = B * H * S, ARENA = 1 << 14 };
static float o[N], op[N], lse[NL], lsep[NL];
static int failures, checks;

static portattn_merge_params_t base(void)
{
    portattn_merge_params_t p;
    portattn_merge_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32;
    p.batch = B, p.seqlen_q = S, p.heads_q = H, p.head_dim_v = D;
    p.o = portattn_tensor_bshd(o, S, H, D), p.o_part = portattn_tensor_bshd(op, S, H, D);
    p.lse = lse, p.lse_stride[0] = H * S, p.lse_stride[1] = S, p.lse_stride[2] = 1;
    p.lse_part = lsep, p.lse_part_stride[0] = H * S, p.lse_part_stride[1] = S, p.lse_part_stride[2] = 1;
    return p;
}

static void expect(const char *what, const portattn_merge_params_t *p, portattn_status_t want, const char *word)
{
    portattn_status_t got = portattn_merge(p, NULL);
    const char *msg = portattn_last_error();
    int ok = got == want && (want == PORTATTN_SUCCESS ? msg[0] == '\0' : strstr(msg, word) != NULL);
    checks++;
    failures += !ok;
    printf("%-4s %-40s -> %s: %s\n", ok ? "ok" : "FAIL", what, portattn_status_string(got), msg);
    if (!ok) printf("     expected %s with \"%s\"\n", portattn_status_string(want), word);
}

#define CASE(what, mutation, status, word)                                                               \
    do {                                                                                                 \
        portattn_merge_params_t p = base();                                                              \
        mutation;                                                                                        \
        expect(what, &p, status, word);                                                                  \
    } while (0)

static const portattn_status_t INV = PORTATTN_ERROR_INVALID_ARGUMENT;

/* A forced backend other than the CPU on host memory: unavailable where it is absent, else refused. */
static void forced_elsewhere(portattn_backend_t be, const char *word_present)
{
    portattn_backend_info_t info;
    portattn_backend_get_info(be, &info);
    char what[64];
    snprintf(what, sizeof what, "forced %s, host memory", info.name);
    CASE(what, p.backend = be, info.available ? PORTATTN_ERROR_NOT_SUPPORTED : PORTATTN_ERROR_BACKEND_UNAVAILABLE,
         info.available ? word_present : info.name);
}

static void fixed_cases(void)
{
    expect("params NULL", NULL, INV, "params is NULL");
    CASE("valid", (void)0, PORTATTN_SUCCESS, "");
    CASE("valid, bf16 o with f32 o_part", (p.dtype = PORTATTN_DTYPE_BF16, p.dtype_part = PORTATTN_DTYPE_F32),
         PORTATTN_SUCCESS, "");
    CASE("struct_size 0", p.struct_size = 0, INV, "struct_size");
    CASE("struct_size from a newer library", p.struct_size = sizeof p + 8, INV, "newer portattn.h");
    CASE("dtype 0", p.dtype = (portattn_dtype_t)0, INV, "dtype = 0");
    CASE("dtype 9", p.dtype = (portattn_dtype_t)9, INV, "dtype = 9");
    CASE("dtype_part 4", p.dtype_part = (portattn_dtype_t)4, INV, "dtype_part = 4");
    CASE("backend 99", p.backend = (portattn_backend_t)99, INV, "backend = 99");
    CASE("batch -1", p.batch = -1, INV, "batch = -1");
    CASE("seqlen_q -3", p.seqlen_q = -3, INV, "seqlen_q = -3");
    CASE("heads_q 0", p.heads_q = 0, INV, "heads_q = 0");
    CASE("head_dim_v 0", p.head_dim_v = 0, INV, "head_dim_v = 0");
    CASE("o.data NULL", p.o.data = NULL, INV, "o is NULL");
    CASE("o_part.data NULL", p.o_part.data = NULL, INV, "o_part is NULL");
    CASE("lse NULL", p.lse = NULL, INV, "lse is NULL");
    CASE("lse_part NULL", p.lse_part = NULL, INV, "lse_part is NULL");
    CASE("o stride negative", p.o.stride[1] = -5, INV, "o.stride[1] = -5");
    CASE("bshd overflow (-1 strides)", p.o_part = portattn_tensor_bshd(op, INT64_MAX / 2, 4, D), INV, "o_part.stride");
    CASE("lse_part stride negative", p.lse_part_stride[2] = -1, INV, "lse_part.stride");
    CASE("o misaligned", p.o.data = (char *)o + 2, INV, "not aligned");
    CASE("o heads share addresses", p.o.stride[2] = 0, INV, "o: cannot show");
    CASE("lse rows share addresses", p.lse_stride[2] = 0, INV, "lse: cannot show");
    CASE("o_part may repeat (read only)", p.o_part.stride[2] = 0, PORTATTN_SUCCESS, "");
    CASE("o strided extent overflows", p.o.stride[0] = INT64_MAX / 2, INV, "overflows");
    CASE("o_part is o", p.o_part = p.o, INV, "o_part overlaps o");
    CASE("lse_part is lse", p.lse_part = p.lse, INV, "lse_part overlaps lse");
    CASE("lse inside o", p.lse = o + 64, INV, "lse overlaps o");
    CASE("lse_part inside o", p.lse_part = o + 8, INV, "lse_part overlaps o");
    CASE("o_part over lse", (p.o_part.data = lse, p.batch = 1, p.seqlen_q = 1, p.head_dim_v = 1), INV,
         "o_part overlaps lse");
    CASE("batch 0, nothing given", (p.batch = 0, p.o.data = p.o_part.data = NULL, p.lse = NULL, p.lse_part = NULL),
         PORTATTN_SUCCESS, "");
    CASE("seqlen 0, nothing given", (p.seqlen_q = 0, p.lse = NULL), PORTATTN_SUCCESS, "");
    CASE("forced cpu", p.backend = PORTATTN_BACKEND_CPU, PORTATTN_SUCCESS, "");
    forced_elsewhere(PORTATTN_BACKEND_CUDA_GENERIC, "host memory");
    forced_elsewhere(PORTATTN_BACKEND_CUDA_SM80, "host memory");
    forced_elsewhere(PORTATTN_BACKEND_HIP_CDNA, "no merge kernel");
    setenv("PORTATTN_BACKEND", "no-such-backend", 1);
    CASE("PORTATTN_BACKEND bogus", (void)0, INV, "PORTATTN_BACKEND");
    CASE("PORTATTN_BACKEND bogus, batch 0", p.batch = 0, INV, "PORTATTN_BACKEND");
    CASE("params->backend over PORTATTN_BACKEND", p.backend = PORTATTN_BACKEND_CPU, PORTATTN_SUCCESS, "");
    setenv("PORTATTN_BACKEND", "cpu", 1);
    CASE("PORTATTN_BACKEND=cpu", (void)0, PORTATTN_SUCCESS, "");
    unsetenv("PORTATTN_BACKEND");
}

/* ---- random calls against a per-row computation in double ---- */

static unsigned char arena[4][ARENA * 4]; /* o, o_part, lse, lse_part */

static int64_t pick(uint64_t *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)((urand(r) + 1) * 0.5 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

static float draw_lse(uint64_t *r)
{
    const int64_t k = pick(r, 0, 19);
    return k == 0 ? -INFINITY : k == 1 ? NAN : k == 2 ? 80.0f : (float)(8.0 * urand(r));
}

/* What one row must become, in double. */
static void expected_row(double l, double lp, const double *x, const double *xp, int64_t dv, double *out, double *lout)
{
    if (isnan(l) || isnan(lp)) {
        for (int64_t d = 0; d < dv; d++) out[d] = NAN;
        *lout = NAN;
        return;
    }
    const double m = l > lp ? l : lp;
    if (m == -INFINITY) {
        for (int64_t d = 0; d < dv; d++) out[d] = 0.0;
        *lout = -INFINITY;
        return;
    }
    const double e = exp(l - m), ep = exp(lp - m);
    for (int64_t d = 0; d < dv; d++) out[d] = (l == -INFINITY ? 0 : e * x[d]) + (lp == -INFINITY ? 0 : ep * xp[d]);
    for (int64_t d = 0; d < dv; d++) out[d] /= e + ep;
    *lout = m + log(e + ep);
}

static int close_to(double got, double want, double tol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* One random valid call, checked; then the same call with a bad argument, which must be refused. */
static void random_call(uint64_t *r)
{
    portattn_merge_params_t p;
    portattn_merge_params_init(&p);
    p.dtype = (portattn_dtype_t)pick(r, 1, 3), p.dtype_part = (portattn_dtype_t)pick(r, 0, 3);
    const portattn_dtype_t tp = p.dtype_part ? p.dtype_part : p.dtype;
    p.batch = pick(r, 1, 3), p.seqlen_q = pick(r, 1, 9), p.heads_q = pick(r, 1, 4), p.head_dim_v = pick(r, 1, 40);
    const int64_t bb = p.batch, s = p.seqlen_q, h = p.heads_q, dv = p.head_dim_v;
    const int bhsd = (int)pick(r, 0, 1);
    p.o = bhsd ? portattn_tensor_bhsd(arena[0], s, h, dv) : portattn_tensor_bshd(arena[0], s, h, dv);
    p.o_part = pick(r, 0, 1) ? portattn_tensor_bhsd(arena[1], s, h, dv) : portattn_tensor_bshd(arena[1], s, h, dv);
    p.lse = (float *)arena[2], p.lse_stride[0] = h * s, p.lse_stride[1] = s, p.lse_stride[2] = 1;
    p.lse_part = (float *)arena[3], p.lse_part_stride[0] = s * h, p.lse_part_stride[1] = 1, p.lse_part_stride[2] = h;
    const int64_t n = bb * s * h * dv, nl = bb * s * h;
    double *x = malloc(sizeof(double) * (size_t)n), *xp = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) { /* element i in o's and o_part's own layouts */
        pa_store_elem(p.dtype, arena[0], i, (float)urand(r));
        pa_store_elem(tp, arena[1], i, (float)urand(r));
    }
    for (int64_t i = 0; i < nl; i++) ((float *)arena[2])[i] = draw_lse(r), ((float *)arena[3])[i] = draw_lse(r);
    for (int64_t i = 0; i < n; i++) x[i] = pa_load_elem(p.dtype, arena[0], i), xp[i] = pa_load_elem(tp, arena[1], i);
    float *lse_before = malloc(sizeof(float) * (size_t)nl);
    memcpy(lse_before, arena[2], sizeof(float) * (size_t)nl);

    /* A bad variant first: refused, nothing written. */
    portattn_merge_params_t bad = p;
    switch (pick(r, 0, 5)) {
    case 0: bad.o_part.data = arena[0]; break;
    case 1: bad.lse_part = bad.lse; break;
    case 2: bad.o.stride[0] = -1; break;
    case 3: bad.lse_stride[pick(r, 0, 2)] = -2; break;
    case 4: bad.dtype_part = (portattn_dtype_t)7; break;
    default: bad.lse = NULL; break;
    }
    const int refused = portattn_merge(&bad, NULL) == INV && portattn_last_error()[0] &&
                        !memcmp(lse_before, arena[2], sizeof(float) * (size_t)nl);

    int ok = refused && portattn_merge(&p, NULL) == PORTATTN_SUCCESS;
    double want[64], wl, xs[64], xps[64];
    const double tol = p.dtype == PORTATTN_DTYPE_F32 ? 1e-5 : 2.0 * (p.dtype == PORTATTN_DTYPE_BF16 ? 0x1p-8 : 0x1p-11);
    for (int64_t b = 0; b < bb && ok; b++)
        for (int64_t q = 0; q < s && ok; q++)
            for (int64_t k = 0; k < h && ok; k++) {
                const int64_t ob = b * p.o.stride[0] + q * p.o.stride[1] + k * p.o.stride[2];
                const int64_t pb = b * p.o_part.stride[0] + q * p.o_part.stride[1] + k * p.o_part.stride[2];
                const int64_t li = b * p.lse_stride[0] + k * p.lse_stride[1] + q;
                const int64_t lpi = b * p.lse_part_stride[0] + k + q * p.lse_part_stride[2];
                for (int64_t d = 0; d < dv; d++) xs[d] = x[ob + d], xps[d] = xp[pb + d];
                expected_row(lse_before[li], ((float *)arena[3])[lpi], xs, xps, dv, want, &wl);
                ok &= close_to(((float *)arena[2])[li], wl, 1e-5);
                for (int64_t d = 0; d < dv; d++) ok &= close_to(pa_load_elem(p.dtype, arena[0], ob + d), want[d], tol);
            }
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL random call: %s o %s o_part, B%lld S%lld H%lld D%lld (%s): %s\n", pa_dtype_name(p.dtype),
               pa_dtype_name(tp), (long long)bb, (long long)s, (long long)h, (long long)dv,
               refused ? "the valid call" : "the bad variant", portattn_last_error());
    }
    free(x), free(xp), free(lse_before);
}

int main(void)
{
    fixed_cases();
    uint64_t seed = test_seed(), r = seed;
    printf("random calls, seed %llu\n", (unsigned long long)seed);
    const int before = failures;
    for (int i = 0; i < 400; i++) random_call(&r);
    printf("%d random calls, %d failed\n", 400, failures - before);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
