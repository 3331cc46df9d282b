/* portattn-bench: times portattn_forward on one shape or on the DESIGN.md section 6 prefill sweep and,
 * with --check, compares the result with the CPU reference (or with the generic CUDA kernel when the
 * problem is too large for the CPU). Host C11 on the public API and tools/devmem.h only, so that it
 * measures exactly what a user calls. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "portattn.h"

#define MAX_LIST 16
#define VARLEN_SEED 0x5EEDu /* fixed: the same --varlen lengths on every run and machine */

/* dtype conversions: common/half.h, the same round-to-nearest-even code as the CPU backend. */

static int dtype_size(portattn_dtype_t t) { return t == PORTATTN_DTYPE_F32 ? 4 : 2; }
static const char *dtype_name(portattn_dtype_t t)
{
    return t == PORTATTN_DTYPE_F32 ? "f32" : t == PORTATTN_DTYPE_F16 ? "f16" : "bf16";
}

static double load_elem(const void *p, portattn_dtype_t t, size_t i)
{
    if (t == PORTATTN_DTYPE_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == PORTATTN_DTYPE_F16 ? pa_f16_to_f32(h) : pa_bf16_to_f32(h);
}

/* ---- random inputs: splitmix64, uniform [-1, 1) or standard normal ----------------------- */

typedef struct rng { uint64_t s; } rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

static void fill_random(void *dst, portattn_dtype_t t, size_t n, rng *r, int normal)
{
    for (size_t i = 0; i < n; i++) {
        double x = 2.0 * rng_unit(r) - 1.0;
        if (normal) x = sqrt(-2.0 * log(1.0 - rng_unit(r))) * cos(6.283185307179586 * rng_unit(r));
        float f = (float)x;
        if (t == PORTATTN_DTYPE_F32) ((float *)dst)[i] = f;
        else ((uint16_t *)dst)[i] = t == PORTATTN_DTYPE_F16 ? pa_f32_to_f16(f) : pa_f32_to_bf16(f);
    }
}

/* ---- options and results ----------------------------------------------------------------- */

typedef struct shape {
    portattn_dtype_t dtype;
    int64_t b, sq, sk, hq, hkv, d, dv;
    int causal, varlen, lse, bhsd;
    int64_t wl, wr; /* -1 = unbounded */
    float softcap;
} shape;

typedef struct opts {
    shape s;
    int shape_given;
    portattn_backend_t backend;
    int warmup, reps, check; /* -1 = default for the memory kind */
    int sweep, force, normal;
    double check_limit;
    uint64_t seed;
    const char *json;
    portattn_dtype_t dtypes[3];
    int ndtypes;
    int64_t seqlens[MAX_LIST], dims[MAX_LIST];
    int nseqlens, ndims;
} opts;

typedef struct row {
    shape s;
    char backend[32], kernel[96];
    int64_t tokens_q, tokens_k; /* real token counts (the packed totals with --varlen) */
    double flops, ms, tflops;
    const char *check; /* "none", "pass", "fail", "skipped", "error" */
    char check_ref[32];
    double o_maxabs, o_rel, lse_maxabs, lse_rel;
    char msg[700]; /* the error, or why the check was skipped */
} row;

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: portattn-bench [options]\n"
        "Times portattn_forward (median of --reps after --warmup; device events on GPUs) and prints\n"
        "TFLOPS by the FlashAttention convention 2*B*Hq*Sq*Sk*(Dqk+Dv), halved when causal.\n"
        "shape:\n"
        "  --batch B --seqlen S (sets Sq and Sk) --seqlen-q Sq --seqlen-k Sk (default Sq)\n"
        "  --heads-q Hq --heads-kv Hkv (default Hq) --head-dim D --head-dim-v Dv (default D)\n"
        "  --dtype f16|bf16|f32 (a comma list with --sweep; default bf16) --layout bshd|bhsd\n"
        "  --causal --window L,R (-1 = unbounded side) --softcap X --lse\n"
        "  --varlen       pack B sequences of random lengths in [1, S] (fixed seed)\n"
        "run:\n"
        "  --backend NAME (default automatic, or env PORTATTN_BACKEND) --warmup N (5) --reps N (20)\n"
        "  --seed N --dist uniform|normal\n"
        "  --check | --no-check   compare O (and LSE) with the CPU reference; exit 1 on failure\n"
        "  --check-limit MACS     largest B*Hq*Sq*Sk*(Dqk+Dv) for the CPU reference (2e10); above it\n"
        "                         a GPU run is compared with the cuda-generic backend instead\n"
        "  --sweep [--sweep-seqlens LIST] [--sweep-dims LIST] [--force]   DESIGN.md section 6:\n"
        "         B*S = 16384, H*D = 2048, S 512..16384, D 64,128,256, causal no/yes\n"
        "  --json FILE --list-backends --help\n"
        "With no shape flags: B=1 S=2048 H=16 D=128 on a GPU, B=1 S=1024 H=8 D=64 on a CPU-only\n"
        "machine, both with --check on. On the CPU warmup/reps default to 1/3.\n"
        "Exit: 0 ok, 1 a run or check failed, 2 bad command line.\n");
}

static int parse_i64(const char *s, int64_t lo, int64_t *out)
{
    char *end = NULL;
    if (!s || !*s) return -1;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo) return -1;
    *out = v;
    return 0;
}

static int parse_dtype(const char *s, portattn_dtype_t *t)
{
    if (!strcmp(s, "f16") || !strcmp(s, "fp16")) *t = PORTATTN_DTYPE_F16;
    else if (!strcmp(s, "bf16")) *t = PORTATTN_DTYPE_BF16;
    else if (!strcmp(s, "f32") || !strcmp(s, "fp32")) *t = PORTATTN_DTYPE_F32;
    else return -1;
    return 0;
}

/* Comma list of positive integers into out[]; returns the count or -1. */
static int parse_list(const char *s, int64_t *out)
{
    char buf[256];
    int n = 0;
    if (strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_LIST || parse_i64(tok, 1, &out[n])) return -1;
        n++;
    }
    return n ? n : -1;
}

static int parse_f64(const char *s, double *out)
{
    char *end = NULL;
    double x = strtod(s, &end);
    if (!*s || *end || !(x >= 0 && x < 1e30)) return -1;
    *out = x;
    return 0;
}

/* Returns 0 to run, 1 to exit 0 (help printed), 2 for a usage error. */
static int parse_args(int argc, char **argv, opts *o, int *list_backends)
{
    int64_t b = -1, sq = -1, sk = -1, hq = -1, hkv = -1, d = -1, dv = -1, warmup = -1, reps = -1, seed = 1;
    const struct { const char *name; int *dst; int val; } bools[] = {
        {"--list-backends", list_backends, 1}, {"--causal", &o->s.causal, 1}, {"--varlen", &o->s.varlen, 1},
        {"--lse", &o->s.lse, 1}, {"--check", &o->check, 1}, {"--no-check", &o->check, 0},
        {"--sweep", &o->sweep, 1}, {"--force", &o->force, 1}};
    const struct { const char *name; int64_t *dst; int64_t min; } ints[] = {
        {"--batch", &b, 1}, {"--seqlen-q", &sq, 1}, {"--seqlen-k", &sk, 1}, {"--heads-q", &hq, 1},
        {"--heads-kv", &hkv, 1}, {"--head-dim", &d, 1}, {"--head-dim-v", &dv, 1}, {"--warmup", &warmup, 0},
        {"--reps", &reps, 1}, {"--seed", &seed, 0}};
    static const char *const others[] = {"--seqlen", "--dtype", "--json", "--sweep-seqlens", "--sweep-dims",
        "--layout", "--dist", "--window", "--softcap", "--check-limit", "--backend"};
    const char *dtype_arg = "bf16";
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *a = argv[i], *v = NULL, *eq = strchr(a, '=');
        int known = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 1; }
        if (strncmp(a, "--", 2) || strlen(a) >= sizeof name) goto bad;
        strcpy(name, a);
        if (eq) { name[eq - a] = 0; v = eq + 1; }
#define FLAG(n) (!strcmp(name, n))
        for (size_t j = 0; j < sizeof bools / sizeof bools[0]; j++)
            if (FLAG(bools[j].name) && !v) { *bools[j].dst = bools[j].val; known = 1; }
        if (known) continue;
        for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++) known |= FLAG(ints[j].name);
        for (size_t j = 0; j < sizeof others / sizeof others[0]; j++) known |= FLAG(others[j]);
        if (!known) goto bad;
        if (!v && !(v = i + 1 < argc ? argv[++i] : NULL)) {
            fprintf(stderr, "portattn-bench: %s needs a value\n", name);
            return 2;
        }
        for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
            if (FLAG(ints[j].name) && parse_i64(v, ints[j].min, ints[j].dst)) goto bad_value;
        if (FLAG("--seqlen")) { if (parse_i64(v, 1, &sq)) goto bad_value; sk = sq; }
        else if (FLAG("--dtype")) dtype_arg = v;
        else if (FLAG("--json")) o->json = v;
        else if (FLAG("--sweep-seqlens")) { if ((o->nseqlens = parse_list(v, o->seqlens)) < 0) goto bad_value; }
        else if (FLAG("--sweep-dims")) { if ((o->ndims = parse_list(v, o->dims)) < 0) goto bad_value; }
        else if (FLAG("--layout")) { if (strcmp(v, "bshd") && strcmp(v, "bhsd")) goto bad_value; o->s.bhsd = v[1] == 'h'; }
        else if (FLAG("--dist")) { if (strcmp(v, "uniform") && strcmp(v, "normal")) goto bad_value; o->normal = v[0] == 'n'; }
        else if (FLAG("--check-limit")) { if (parse_f64(v, &o->check_limit)) goto bad_value; }
        else if (FLAG("--softcap")) {
            double c;
            if (parse_f64(v, &c)) goto bad_value;
            o->s.softcap = (float)c;
        } else if (FLAG("--window")) {
            char buf[64], *comma;
            if (strlen(v) >= sizeof buf) goto bad_value;
            strcpy(buf, v);
            if (!(comma = strchr(buf, ','))) goto bad_value;
            *comma = 0;
            if (parse_i64(buf, -1, &o->s.wl) || parse_i64(comma + 1, -1, &o->s.wr)) goto bad_value;
        } else if (FLAG("--backend")) {
            int ok = 0;
            o->backend = portattn_backend_from_name(v, &ok);
            if (!ok) { fprintf(stderr, "portattn-bench: unknown backend '%s' (see --list-backends)\n", v); return 2; }
        }
#undef FLAG
        continue;
    bad_value:
        fprintf(stderr, "portattn-bench: bad value '%s' for %s\n", v, name);
        return 2;
    bad:
        fprintf(stderr, "portattn-bench: unknown argument '%s'\n\n", a);
        usage(stderr);
        return 2;
    }
    if (warmup > 1000000 || reps > 1000000) { fprintf(stderr, "portattn-bench: --warmup/--reps too large\n"); return 2; }
    o->warmup = (int)warmup; o->reps = (int)reps; o->seed = (uint64_t)seed;
    char buf[64]; /* dtype: a comma list only makes sense when sweeping */
    if (strlen(dtype_arg) >= sizeof buf) goto bad_dtype;
    strcpy(buf, dtype_arg);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (o->ndtypes == 3 || parse_dtype(tok, &o->dtypes[o->ndtypes++])) goto bad_dtype;
    if (o->ndtypes == 0 || (o->ndtypes > 1 && !o->sweep)) goto bad_dtype;
    o->s.dtype = o->dtypes[0];
    o->shape_given = b > 0 || sq > 0 || sk > 0 || hq > 0 || hkv > 0 || d > 0 || dv > 0;
    if (o->sweep && o->shape_given) {
        fprintf(stderr, "portattn-bench: --sweep sets batch, seqlens, heads and head dims itself\n");
        return 2;
    }
    if (!o->sweep && (o->nseqlens || o->ndims)) {
        fprintf(stderr, "portattn-bench: --sweep-seqlens/--sweep-dims need --sweep\n");
        return 2;
    }
    if (sq < 0 && sk > 0) { fprintf(stderr, "portattn-bench: --seqlen-k needs --seqlen-q or --seqlen\n"); return 2; }
    /* unset fields stay -1 and get the defaults once the memory kind is known */
    o->s.b = b; o->s.sq = sq; o->s.sk = sk < 0 ? sq : sk;
    o->s.hq = hq; o->s.hkv = hkv; o->s.d = d; o->s.dv = dv;
    return 0;
bad_dtype:
    fprintf(stderr, "portattn-bench: bad --dtype '%s' (f16, bf16 or f32; a comma list only with --sweep)\n", dtype_arg);
    return 2;
}

/* ---- running one shape ------------------------------------------------------------------- */

typedef struct call { const portattn_fwd_params_t *p; portattn_status_t st; } call;

static int call_forward(void *arg)
{
    call *c = (call *)arg;
    c->st = portattn_forward(c->p, NULL);
    return c->st != PORTATTN_SUCCESS;
}

/* Record why a row failed and leave through the function's `bail` label. */
#define BAIL(...) do { snprintf(r->msg, sizeof r->msg, __VA_ARGS__); goto bail; } while (0)
#define BAIL_API(what, st) BAIL("%s: %s: %s", what, portattn_status_string(st), portattn_last_error())

/* Forward FLOPs. FlashAttention's convention (full Sq*Sk, halved when causal) when there is no
 * window; a sliding window has no convention there, and counting the full square would inflate
 * TFLOPS by Sk/L, so windowed rows count the (query, key) pairs actually visible. */
static double seq_flops(const shape *s, int64_t sq, int64_t sk)
{
    double pairs = (double)sq * (double)sk;
    int64_t wl = s->wl, wr = s->causal ? 0 : s->wr;
    if (wl >= 0 || (wr >= 0 && !s->causal)) {
        pairs = 0;
        for (int64_t i = 0; i < sq; i++) { /* the bottom-right window rule of portattn.h */
            int64_t lo = wl < 0 ? 0 : i + sk - sq - wl, hi = wr < 0 ? sk - 1 : i + sk - sq + wr;
            lo = lo < 0 ? 0 : lo;
            hi = hi > sk - 1 ? sk - 1 : hi;
            pairs += hi >= lo ? (double)(hi - lo + 1) : 0;
        }
    } else if (s->causal) {
        pairs *= 0.5;
    }
    return 2.0 * (double)s->hq * pairs * (double)(s->d + s->dv);
}

/* An fp32 copy of a whole strided buffer (same element strides), or NULL. */
static float *upcast(const void *src, portattn_dtype_t t, size_t n)
{
    float *f = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; f && i < n; i++) f[i] = (float)load_elem(src, t, i);
    return f;
}

typedef struct err { double maxabs, rel; size_t bad; } err;

/* Max-abs and relative-L2 error; NaN anywhere or a differing infinity counts as bad. Equal
 * infinities (LSE = -inf of a fully masked row) agree. */
static err compare(const void *out, portattn_dtype_t t, const void *ref, portattn_dtype_t tref, size_t n)
{
    err e = {0, 0, 0};
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double x = load_elem(out, t, i), y = load_elem(ref, tref, i);
        if (isnan(x) || isnan(y) || ((isinf(x) || isinf(y)) && x != y)) { e.bad++; continue; }
        if (isinf(x)) continue;
        double dd = fabs(x - y);
        if (dd > e.maxabs) e.maxabs = dd;
        num += dd * dd;
        den += y * y;
    }
    e.rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return e;
}

/* Device and host buffers of one shape; every pointer NULL or owned. */
typedef struct bufs {
    size_t nq, nk, nv, no, nlse;
    void *hq, *hk, *hv, *ho, *href;
    float *hlse, *hlse_ref;
    int32_t *hcu_q, *hcu_k;
    void *dq, *dk, *dv, *dout, *dref;
    float *dlse, *dlse_ref;
    int32_t *dcu_q, *dcu_k;
} bufs;

static void free_bufs(bufs *b, dm_kind kind)
{
    void *host[] = {b->hq, b->hk, b->hv, b->ho, b->href, b->hlse, b->hlse_ref, b->hcu_q, b->hcu_k};
    void *dev[] = {b->dq, b->dk, b->dv, b->dout, b->dref, b->dlse, b->dlse_ref, b->dcu_q, b->dcu_k};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) dm_free(kind, dev[i]);
}

/* Same call on other O/LSE buffers (and, for the CPU reference, other inputs). */
static portattn_fwd_params_t retarget(const portattn_fwd_params_t *p, const shape *s, portattn_backend_t be,
                                      void *q, void *k, void *v, void *o, float *lse,
                                      const int32_t *cuq, const int32_t *cuk)
{
    portattn_fwd_params_t r = *p;
    r.q.data = q; r.k.data = k; r.v.data = v; r.o.data = o;
    r.lse = s->lse ? lse : NULL;
    if (s->varlen) { r.cu_seqlens_q = cuq; r.cu_seqlens_k = cuk; }
    r.backend = be;
    return r;
}

/* Reruns the tested backend on poisoned outputs (so unwritten elements fail), then runs a reference
 * and compares. Returns 1 when the check failed or errored. */
static int check_row(const opts *o, const shape *s, dm_kind kind, const portattn_fwd_params_t *p,
                     portattn_backend_t tested, bufs *b, double macs, row *r)
{
    size_t obytes = b->no * (size_t)dtype_size(s->dtype), lbytes = b->nlse * sizeof(float);
    portattn_status_t st;
    const char *which = "cpu";
    memset(b->ho, 0xFF, obytes); /* all-ones bits: NaN in f16, bf16 and f32 */
    if (s->lse) memset(b->hlse, 0xFF, lbytes);
    if (dm_upload(kind, b->dout, b->ho, obytes) || (s->lse && dm_upload(kind, b->dlse, b->hlse, lbytes)))
        BAIL("check: upload failed");
    if ((st = portattn_forward(p, NULL)) != PORTATTN_SUCCESS) BAIL_API("check run", st);
    if (dm_sync(kind) || dm_download(kind, b->ho, b->dout, obytes) || (s->lse && dm_download(kind, b->hlse, b->dlse, lbytes)))
        BAIL("check: device sync or download failed");

    portattn_dtype_t ref_dtype = s->dtype;
    if (!(b->href = malloc(b->no * 4 + 4)) || !(b->hlse_ref = (float *)malloc(lbytes + 4))) BAIL("check: out of host memory");
    if (macs <= o->check_limit) {
        /* The CPU reference in fp32 on the same input values (upcast exactly, same strides): it
         * yields the exact function of the inputs, so even the CPU backend's own dtype run is
         * checked for real (its rounding, its dtype paths). */
        float *f[3] = {upcast(b->hq, s->dtype, b->nq), upcast(b->hk, s->dtype, b->nk), upcast(b->hv, s->dtype, b->nv)};
        portattn_fwd_params_t c = retarget(p, s, PORTATTN_BACKEND_CPU, f[0], f[1], f[2], b->href, b->hlse_ref,
                                           b->hcu_q, b->hcu_k);
        c.dtype = ref_dtype = PORTATTN_DTYPE_F32;
        st = f[0] && f[1] && f[2] ? portattn_forward(&c, NULL) : PORTATTN_ERROR_OUT_OF_MEMORY;
        free(f[0]), free(f[1]), free(f[2]);
        if (st != PORTATTN_SUCCESS) BAIL_API("cpu reference", st);
    } else if (kind == DM_CUDA && tested != PORTATTN_BACKEND_CUDA_GENERIC) {
        which = "cuda-generic";
        b->dref = dm_alloc(kind, obytes);
        b->dlse_ref = (float *)dm_alloc(kind, lbytes);
        if (!b->dref || !b->dlse_ref) BAIL("check: out of device memory for the cuda-generic reference");
        portattn_fwd_params_t c = retarget(p, s, PORTATTN_BACKEND_CUDA_GENERIC, b->dq, b->dk, b->dv, b->dref,
                                           b->dlse_ref, b->dcu_q, b->dcu_k);
        if ((st = portattn_forward(&c, NULL)) != PORTATTN_SUCCESS) BAIL_API("cuda-generic reference", st);
        if (dm_sync(kind) || dm_download(kind, b->href, b->dref, obytes) ||
            (s->lse && dm_download(kind, b->hlse_ref, b->dlse_ref, lbytes)))
            BAIL("check: cuda-generic reference failed on the device");
    } else {
        r->check = "skipped";
        snprintf(r->msg, sizeof r->msg, "check skipped: too large for the CPU reference (%.3g multiply-adds > --check-limit %.3g)",
                 macs, o->check_limit);
        printf("  %s\n", r->msg);
        return 0;
    }

    snprintf(r->check_ref, sizeof r->check_ref, "%s", which);
    double bound = s->dtype == PORTATTN_DTYPE_F32 ? 1e-4 : s->dtype == PORTATTN_DTYPE_F16 ? 5e-3 : 1e-2;
    err eo = compare(b->ho, s->dtype, b->href, ref_dtype, b->no), el = {0, 0, 0};
    if (s->lse) el = compare(b->hlse, PORTATTN_DTYPE_F32, b->hlse_ref, PORTATTN_DTYPE_F32, b->nlse);
    r->o_maxabs = eo.maxabs; r->o_rel = eo.rel; r->lse_maxabs = el.maxabs; r->lse_rel = el.rel;
    int pass = eo.bad == 0 && eo.rel <= bound && el.bad == 0 && el.rel <= bound;
    r->check = pass ? "pass" : "fail";
    printf("  check vs %s: O max-abs %.3e rel-L2 %.3e", which, eo.maxabs, eo.rel);
    if (eo.bad) printf(" (%zu NaN/inf mismatches)", eo.bad);
    if (s->lse) {
        printf(" | LSE max-abs %.3e rel-L2 %.3e", el.maxabs, el.rel);
        if (el.bad) printf(" (%zu NaN/inf mismatches)", el.bad);
    }
    printf(" -> %s (rel-L2 bound %.0e)\n", pass ? "PASS" : "FAIL", bound);
    if (!pass)
        snprintf(r->msg, sizeof r->msg, "check failed: O rel-L2 %.3e, %zu bad; LSE rel-L2 %.3e, %zu bad",
                 eo.rel, eo.bad, el.rel, el.bad);
    return !pass;
bail:
    r->check = "error";
    printf("  %s\n", r->msg);
    return 1;
}

static void print_row(const row *r)
{
    const shape *s = &r->s;
    printf("%-13s %-24s %-4s %4lld %6lld %6lld %4lld %4lld %4lld %4lld ", r->backend, r->kernel, dtype_name(s->dtype),
           (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)s->hq, (long long)s->hkv,
           (long long)s->d, (long long)s->dv);
    if (r->ms >= 0) printf("%10.3f %8.2f ", r->ms, r->tflops);
    else printf("%10s %8s ", "-", "-");
    if (s->causal) printf(" causal");
    if (s->wl >= 0 || s->wr >= 0) printf(" window(%lld,%lld)", (long long)s->wl, (long long)s->wr);
    if (s->softcap > 0) printf(" softcap=%g", s->softcap);
    if (s->varlen) printf(" varlen(tokens q=%lld k=%lld)", (long long)r->tokens_q, (long long)r->tokens_k);
    if (s->lse) printf(" lse");
    if (s->bhsd) printf(" bhsd");
    printf("\n");
}

/* Allocates, fills, times and (optionally) checks one shape. Returns 0 on success, 1 on failure. */
static int run_shape(const opts *o, const shape *s, dm_kind kind, rng *gen, row *r)
{
    bufs b;
    memset(&b, 0, sizeof b);
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->check = "none";
    r->ms = r->tflops = -1;
    snprintf(r->backend, sizeof r->backend, "?");
    int fail = 1;
    double flops = 0, macs = 0;
    /* the int64 and size_t products below must not overflow: refuse absurd shapes first */
    double elems = (double)s->b * (double)(s->sq > s->sk ? s->sq : s->sk) *
                   (double)(s->hq > s->hkv ? s->hq : s->hkv) * (double)(s->d > s->dv ? s->d : s->dv);
    if (elems > 17592186044416.0 || elems * 4 > (double)SIZE_MAX || (s->varlen && s->b >= INT32_MAX))
        BAIL("shape too large to allocate");
    int64_t tq = s->b * s->sq, tk = s->b * s->sk, maxq = s->sq, maxk = s->sk;

    if (s->varlen) { /* B random lengths in [1, S], reproducible whatever --seed says */
        rng lr = {VARLEN_SEED};
        if (!(b.hcu_q = malloc(sizeof(int32_t) * (size_t)(s->b + 1))) ||
            !(b.hcu_k = malloc(sizeof(int32_t) * (size_t)(s->b + 1))))
            BAIL("out of host memory");
        b.hcu_q[0] = b.hcu_k[0] = 0;
        tq = tk = maxq = maxk = 0;
        for (int64_t i = 0; i < s->b; i++) {
            int64_t lq = 1 + (int64_t)(rng_unit(&lr) * (double)s->sq);
            int64_t lk = s->sk == s->sq ? lq : 1 + (int64_t)(rng_unit(&lr) * (double)s->sk);
            if (tq + lq > INT32_MAX || tk + lk > INT32_MAX) BAIL("varlen: more than 2^31 packed tokens");
            tq += lq; tk += lk;
            maxq = lq > maxq ? lq : maxq; maxk = lk > maxk ? lk : maxk;
            b.hcu_q[i + 1] = (int32_t)tq; b.hcu_k[i + 1] = (int32_t)tk;
            flops += seq_flops(s, lq, lk);
            macs += (double)s->hq * (double)lq * (double)lk * (double)(s->d + s->dv);
        }
    } else {
        flops = (double)s->b * seq_flops(s, s->sq, s->sk);
        macs = (double)s->b * (double)s->hq * (double)s->sq * (double)s->sk * (double)(s->d + s->dv);
    }
    r->tokens_q = tq; r->tokens_k = tk; r->flops = flops;

    b.nq = (size_t)(tq * s->hq * s->d); b.nk = (size_t)(tk * s->hkv * s->d);
    b.nv = (size_t)(tk * s->hkv * s->dv); b.no = (size_t)(tq * s->hq * s->dv);
    b.nlse = s->lse ? (size_t)(tq * s->hq) : 0;
    size_t es = (size_t)dtype_size(s->dtype), cub = sizeof(int32_t) * (size_t)(s->b + 1);
    b.hq = malloc(b.nq * es + 1); b.hk = malloc(b.nk * es + 1); b.hv = malloc(b.nv * es + 1);
    b.ho = malloc(b.no * es + 1); b.hlse = (float *)malloc(b.nlse * sizeof(float) + 4);
    b.dq = dm_alloc(kind, b.nq * es); b.dk = dm_alloc(kind, b.nk * es); b.dv = dm_alloc(kind, b.nv * es);
    b.dout = dm_alloc(kind, b.no * es); b.dlse = (float *)dm_alloc(kind, b.nlse * sizeof(float));
    if (s->varlen) { b.dcu_q = (int32_t *)dm_alloc(kind, cub); b.dcu_k = (int32_t *)dm_alloc(kind, cub); }
    if (!b.hq || !b.hk || !b.hv || !b.ho || !b.hlse || !b.dq || !b.dk || !b.dv || !b.dout || !b.dlse ||
        (s->varlen && (!b.dcu_q || !b.dcu_k)))
        BAIL("out of %s memory", kind == DM_HOST ? "host" : "device");
    /* fresh random inputs for every row: a kernel that ignores its inputs cannot pass */
    fill_random(b.hq, s->dtype, b.nq, gen, o->normal);
    fill_random(b.hk, s->dtype, b.nk, gen, o->normal);
    fill_random(b.hv, s->dtype, b.nv, gen, o->normal);
    if (dm_upload(kind, b.dq, b.hq, b.nq * es) || dm_upload(kind, b.dk, b.hk, b.nk * es) ||
        dm_upload(kind, b.dv, b.hv, b.nv * es) ||
        (s->varlen && (dm_upload(kind, b.dcu_q, b.hcu_q, cub) || dm_upload(kind, b.dcu_k, b.hcu_k, cub))))
        BAIL("upload failed");

    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = s->dtype;
    p.batch = s->b;
    p.seqlen_q = s->varlen ? tq : s->sq;
    p.seqlen_k = s->varlen ? tk : s->sk;
    p.heads_q = s->hq; p.heads_kv = s->hkv;
    p.head_dim_qk = s->d; p.head_dim_v = s->dv;
    {
        portattn_tensor_t (*mk)(void *, int64_t, int64_t, int64_t) = s->bhsd ? portattn_tensor_bhsd : portattn_tensor_bshd;
        p.q = mk(b.dq, p.seqlen_q, s->hq, s->d);
        p.k = mk(b.dk, p.seqlen_k, s->hkv, s->d);
        p.v = mk(b.dv, p.seqlen_k, s->hkv, s->dv);
        p.o = mk(b.dout, p.seqlen_q, s->hq, s->dv);
    }
    if (s->lse) {
        p.lse = b.dlse;
        p.lse_stride[0] = s->varlen ? 0 : s->hq * p.seqlen_q; /* varlen: (head, packed token) */
        p.lse_stride[1] = p.seqlen_q;
        p.lse_stride[2] = 1;
    }
    if (s->varlen) {
        p.cu_seqlens_q = b.dcu_q; p.cu_seqlens_k = b.dcu_k;
        p.max_seqlen_q = maxq; p.max_seqlen_k = maxk;
    }
    p.softcap = s->softcap;
    p.causal = s->causal;
    p.window_left = s->wl; p.window_right = s->wr;
    p.backend = o->backend;

    portattn_selection_t sel;
    portattn_status_t st = portattn_forward_query(&p, &sel);
    if (st != PORTATTN_SUCCESS) BAIL_API("portattn_forward_query", st);
    snprintf(r->backend, sizeof r->backend, "%s", sel.backend_name);
    snprintf(r->kernel, sizeof r->kernel, "%s", sel.kernel);
    if (dm_kind_of(sel.backend) != kind) /* e.g. a HIP backend, which devmem does not know yet */
        BAIL("selected backend %s takes other memory than was allocated", sel.backend_name);

    int warmup = o->warmup >= 0 ? o->warmup : kind == DM_HOST ? 1 : 5;
    int reps = o->reps >= 1 ? o->reps : kind == DM_HOST ? 3 : 20;
    call c = {&p, PORTATTN_SUCCESS};
    r->ms = dm_time_ms(kind, warmup, reps, call_forward, &c);
    if (r->ms < 0 && c.st != PORTATTN_SUCCESS) BAIL_API("portattn_forward", c.st);
    if (r->ms < 0) BAIL("timing failed (device error or event failure)");
    r->tflops = r->ms > 0 ? flops / (r->ms * 1e-3) / 1e12 : 0;
    print_row(r);
    fail = 0;
    if (o->check > 0) fail = check_row(o, s, kind, &p, sel.backend, &b, macs, r);
bail:
    if (fail && r->ms < 0) { print_row(r); printf("  error: %s\n", r->msg); }
    free_bufs(&b, kind);
    return fail;
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x) /* JSON has no NaN/inf: null */
{
    if (isfinite(x)) fprintf(f, "%.6g", x);
    else fputs("null", f);
}

static int write_json(const char *path, const char *device, const row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int v = portattn_version();
    fprintf(f, "{\"tool\":\"portattn-bench\",\"version\":\"%d.%d.%d\",\"device\":", v / 10000, v / 100 % 100, v % 100);
    json_str(f, device);
    fputs(",\"rows\":[", f);
#define JS(key, val) (fprintf(f, ",\"%s\":", key), json_str(f, val))
#define JN(key, val) (fprintf(f, ",\"%s\":", key), json_num(f, val))
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const shape *s = &r->s;
        fprintf(f, "%s\n{\"dtype\":\"%s\"", i ? "," : "", dtype_name(s->dtype));
        JS("backend", r->backend);
        JS("kernel", r->kernel);
        fprintf(f, ",\"batch\":%lld,\"seqlen_q\":%lld,\"seqlen_k\":%lld,\"tokens_q\":%lld,\"tokens_k\":%lld,"
                   "\"heads_q\":%lld,\"heads_kv\":%lld,\"head_dim_qk\":%lld,\"head_dim_v\":%lld,\"causal\":%s,"
                   "\"window_left\":%lld,\"window_right\":%lld,\"softcap\":%g,\"varlen\":%s,\"lse\":%s,\"layout\":\"%s\"",
                (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)r->tokens_q, (long long)r->tokens_k,
                (long long)s->hq, (long long)s->hkv, (long long)s->d, (long long)s->dv, s->causal ? "true" : "false",
                (long long)s->wl, (long long)s->wr, s->softcap, s->varlen ? "true" : "false",
                s->lse ? "true" : "false", s->bhsd ? "bhsd" : "bshd");
        JN("ms", r->ms >= 0 ? r->ms : NAN); /* null when the row did not run */
        JN("flops", r->flops);
        JN("tflops", r->ms >= 0 ? r->tflops : NAN);
        JS("check", r->check);
        if (r->check_ref[0]) { /* something was compared */
            JS("check_ref", r->check_ref);
            JN("o_max_abs", r->o_maxabs);
            JN("o_rel_l2", r->o_rel);
            if (s->lse) { JN("lse_max_abs", r->lse_maxabs); JN("lse_rel_l2", r->lse_rel); }
        }
        if (r->msg[0]) JS("message", r->msg);
        fputc('}', f);
    }
#undef JS
#undef JN
    fputs("\n]}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- main -------------------------------------------------------------------------------- */

static int list_backends(void)
{
    printf("%-14s %-9s %-10s %-7s %s\n", "backend", "compiled", "available", "memory", "detail");
    for (int i = 1; i < PORTATTN_BACKEND_COUNT_; i++) {
        portattn_backend_info_t info;
        portattn_status_t st = portattn_backend_get_info((portattn_backend_t)i, &info);
        if (st != PORTATTN_SUCCESS) {
            printf("%-14d error: %s: %s\n", i, portattn_status_string(st), portattn_last_error());
            continue;
        }
        printf("%-14s %-9s %-10s %-7s %s\n", info.name ? info.name : "?", info.compiled ? "yes" : "no",
               info.available ? "yes" : "no", dm_kind_of(info.backend) == DM_CUDA ? "cuda" : "host", info.detail);
    }
    return 0;
}

/* The memory to allocate in: that of the forced backend (--backend, else PORTATTN_BACKEND, which
 * portattn_forward also honours), else of the first available backend in preference order, which
 * is the one automatic selection tries first. */
static int choose_kind(portattn_backend_t forced, dm_kind *kind, char *why, size_t n)
{
    portattn_backend_t be = forced;
    const char *env = getenv("PORTATTN_BACKEND");
    if (be == PORTATTN_BACKEND_AUTO && env && *env) {
        int ok = 0;
        be = portattn_backend_from_name(env, &ok);
        if (!ok) { snprintf(why, n, "PORTATTN_BACKEND='%s' is not a backend name", env); return -1; }
    }
    for (int i = 1; be == PORTATTN_BACKEND_AUTO && i < PORTATTN_BACKEND_COUNT_; i++) {
        portattn_backend_info_t info;
        if (portattn_backend_get_info((portattn_backend_t)i, &info) == PORTATTN_SUCCESS && info.available)
            be = (portattn_backend_t)i;
    }
    if (be == PORTATTN_BACKEND_AUTO) { snprintf(why, n, "no backend is available (see --list-backends)"); return -1; }
    *kind = dm_kind_of(be);
    char w[200] = "";
    if (!dm_available(*kind, w, sizeof w)) {
        snprintf(why, n, "backend %s needs %s memory: %s", portattn_backend_name(be),
                 *kind == DM_CUDA ? "CUDA" : "host", w);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.backend = PORTATTN_BACKEND_AUTO;
    o.check = -1;
    o.check_limit = 2e10; /* ~10-30 s of the double-precision CPU reference */
    o.s.wl = o.s.wr = -1;
    int list = 0, rc = parse_args(argc, argv, &o, &list);
    if (rc) return rc == 1 ? 0 : 2;
    if (list) return list_backends();

    dm_kind kind = DM_HOST;
    char why[400];
    if (choose_kind(o.backend, &kind, why, sizeof why)) {
        fprintf(stderr, "portattn-bench: %s\n", why);
        return 1;
    }
    if (o.sweep && kind == DM_HOST && !o.force) {
        fprintf(stderr, "portattn-bench: the sweep on the CPU backend would take hours; pass --force to run it anyway\n");
        return 2;
    }
    shape *s = &o.s;
    if (!o.sweep && !o.shape_given) { /* the default "main job": seconds on a CPU, a real load on a GPU,
                                        * both small enough for the CPU reference check */
        if (kind == DM_HOST) { s->b = 1; s->sq = s->sk = 1024; s->hq = 8; s->d = 64; }
        else { s->b = 1; s->sq = s->sk = 2048; s->hq = 16; s->d = 128; }
        if (o.check < 0) o.check = 1;
    }
    if (s->b < 0) s->b = 1;
    if (s->sq < 0) s->sq = s->sk = 1024;
    if (s->hq < 0) s->hq = s->hkv > 0 ? s->hkv : 16;
    if (s->hkv < 0) s->hkv = s->hq;
    if (s->d < 0) s->d = s->dv > 0 ? s->dv : 128;
    if (s->dv < 0) s->dv = s->d;

    int v = portattn_version();
    const char *device = dm_device_name(kind);
    printf("# portattn-bench: portattn %d.%d.%d, device: %s, memory: %s%s%s\n", v / 10000, v / 100 % 100, v % 100,
           device, kind == DM_HOST ? "host" : "cuda", getenv("PORTATTN_BACKEND") ? ", PORTATTN_BACKEND=" : "",
           getenv("PORTATTN_BACKEND") ? getenv("PORTATTN_BACKEND") : "");
    printf("%-13s %-24s %-4s %4s %6s %6s %4s %4s %4s %4s %10s %8s  flags\n", "backend", "kernel", "type", "B", "Sq",
           "Sk", "Hq", "Hkv", "D", "Dv", "ms", "TFLOPS");

    /* the rows to run: one shape, or the sweep */
    static const int64_t def_seqlens[] = {512, 1024, 2048, 4096, 8192, 16384}, def_dims[] = {64, 128, 256};
    const int64_t *seqlens = o.nseqlens ? o.seqlens : def_seqlens, *dims = o.ndims ? o.dims : def_dims;
    int nseq = o.nseqlens ? o.nseqlens : 6, ndim = o.ndims ? o.ndims : 3;
    int ncausal = o.sweep && !s->causal ? 2 : 1; /* --causal with --sweep: causal rows only */
    int nrows = o.sweep ? o.ndtypes * ndim * ncausal * nseq : 1;
    row *rows = (row *)calloc((size_t)nrows, sizeof(row));
    if (!rows) { fprintf(stderr, "portattn-bench: out of host memory\n"); return 1; }
    rng gen = {o.seed};
    int failed = 0, n = 0;
    for (int t = 0; t < (o.sweep ? o.ndtypes : 1); t++)
        for (int di = 0; di < (o.sweep ? ndim : 1); di++)
            for (int c = 0; c < ncausal; c++)
                for (int si = 0; si < (o.sweep ? nseq : 1); si++) {
                    shape sh = *s;
                    if (o.sweep) { /* 16384 tokens and 2048 = heads * head_dim, as FlashAttention's benchmark */
                        sh.dtype = o.dtypes[t];
                        sh.d = sh.dv = dims[di];
                        sh.hq = sh.hkv = 2048 / dims[di] > 0 ? 2048 / dims[di] : 1;
                        sh.sq = sh.sk = seqlens[si];
                        sh.b = 16384 / seqlens[si] > 0 ? 16384 / seqlens[si] : 1;
                        sh.causal = s->causal || c == 1;
                    }
                    failed |= run_shape(&o, &sh, kind, &gen, &rows[n++]);
                }
    if (o.json) {
        if (write_json(o.json, device, rows, n)) {
            fprintf(stderr, "portattn-bench: cannot write %s\n", o.json);
            failed = 1;
        } else {
            printf("# wrote %s\n", o.json);
        }
    }
    free(rows);
    return failed ? 1 : 0;
}
