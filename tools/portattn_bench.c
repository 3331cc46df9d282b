/* portattn-bench: times portattn_forward on one shape, on a named sweep (the docs/design.md section 7
 * prefill sweep, or decode: one query token against long KV caches) or on a list of shapes from a
 * file, and reports TFLOPS (decode: effective KV bytes/s) with the fraction of the device's peak from
 * the device table (tools/devices.json). With --check it compares the result with the CPU reference
 * (or with the generic CUDA kernel when the problem is too large for the CPU). Host C11 on the public
 * API and tools/devmem.h only, so that it measures exactly what a user calls. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench_devices.h"
#include "devmem.h"
#include "half.h"
#include "problem.h"
#include "portattn.h"

#define MAX_LIST 16
#define VARLEN_SEED 0x5EEDu /* fixed: the same --varlen lengths on every run and machine */
#define PAGE_SEED 0x9A6Eu   /* fixed: the same --page-size block table on every run and machine */
#define MAX_PAGE_SIZE ((int64_t)1 << 20) /* the library's limit (portattn.h: a power of two) */
/* Decode rows cycle through copies of K and V of at least this many bytes in all, so that no timed
 * call finds its KV cache in L2 (triton's do_bench, which times the peers, clears 256 MB instead). */
#define ROTATE_BYTES (256.0 * 1024 * 1024)
#define MAX_COPIES 64
#define MAX_KV_COPIES 1024 /* --kv-copies */

/* dtype conversions: common/half.h, the same round-to-nearest-even code as the CPU backend. */

static int dtype_size(portattn_dtype_t t) { return t == PORTATTN_DTYPE_F32 ? 4 : 2; }
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
        pa_store_elem(t, dst, (int64_t)i, (float)x);
    }
}

/* ---- options and results ----------------------------------------------------------------- */

typedef struct shape {
    portattn_dtype_t dtype;
    int64_t b, sq, sk, hq, hkv, d, dv;
    int causal, varlen, lse, bhsd;
    int64_t wl, wr; /* -1 = unbounded */
    int64_t page;   /* page size of a paged K/V cache; 0 = contiguous K/V */
    float softcap;
} shape;

/* A shape as given on the command line or on one --sweep-file line; -1 = not given. */
typedef struct shape_in {
    int64_t b, sq, sk, hq, hkv, d, dv, wl, wr;
    int64_t page; /* 0 = not given (contiguous K/V) */
    int causal, varlen, lse, bhsd;
    double softcap;
    char dtype[32]; /* "" = not given; with a sweep a comma list runs every shape once per dtype */
} shape_in;

typedef enum sweep_kind { SWEEP_NONE, SWEEP_PREFILL, SWEEP_DECODE, SWEEP_FILE } sweep_kind;
static const char *const sweep_names[] = {"single", "prefill", "decode", "file"};

typedef struct opts {
    shape_in in;
    portattn_backend_t backend;
    int warmup, reps, check; /* -1 = default for the memory kind */
    double warmup_ms, rep_ms; /* GPU timing by time, as do_bench (the default) */
    int burst;                /* --burst: GPU timing by the counts --warmup/--reps instead */
    dm_protocol protocol;     /* set by main from the above once the memory kind is known */
    int kv_copies;           /* --kv-copies; 0 = automatic */
    sweep_kind sweep;
    int force, normal, prefer_measured;
    int no_workspace;        /* --no-workspace: let the library allocate split-KV scratch per call */
    int num_splits;          /* --num-splits: params.num_splits (0 = the library's heuristic) */
    double check_limit;
    uint64_t seed;
    const char *json, *csv, *sweep_file, *devices, *device_entry;
    portattn_dtype_t dtypes[3];
    int ndtypes;
    int64_t seqlens[MAX_LIST], dims[MAX_LIST], batches[MAX_LIST];
    int nseqlens, ndims, nbatches;
    /* set by main once the device is known */
    const char *device;
    const dt_device *dev; /* NULL: unknown device or no table */
    int have_table;
} opts;

typedef struct row {
    shape s;
    char backend[32], kernel[96];
    int64_t tokens_q, tokens_k; /* real token counts (the packed totals with --varlen) */
    int decode;                 /* one query token: judged by KV bytes/s against the HBM peak */
    double flops, ms, tflops;
    double host_us;             /* CPU time inside one portattn_forward call (GPU backends; -1 = n/a) */
    dm_timing timing;           /* the spread and count of the timed calls */
    double kv_bytes, kv_Bps;    /* bytes of K and V the call must read; per second (decode rows) */
    int kv_copies;              /* K/V copies cycled through while timing (decode rows) */
    char peak_metric[24];       /* the device table's metric the row is judged by */
    const dt_peak *peak;        /* NULL: no percentage, peak_note says why */
    double peak_fraction;
    char peak_note[120];
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
        "Times portattn_forward as triton.testing.do_bench times the peers (on GPUs: warm-up and\n"
        "repetitions by time, a 256 MiB L2-flushing memset before each call, events around each call,\n"
        "the median; inputs standard normal as torch.randn) and prints\n"
        "TFLOPS by the FlashAttention convention 2*B*Hq*Sq*Sk*(Dqk+Dv), halved when causal; rows with one\n"
        "query token (decode) also print the effective KV bandwidth, bytes of K and V / time.\n"
        "shape (also the syntax of --sweep-file lines):\n"
        "  --batch B --seqlen S (sets Sq and Sk) --seqlen-q Sq --seqlen-k Sk (default Sq)\n"
        "  --heads-q Hq --heads-kv Hkv (default Hq) --head-dim D --head-dim-v Dv (default D)\n"
        "  --dtype f16|bf16|f32 (a comma list with sweeps; default bf16) --layout bshd|bhsd\n"
        "  --causal --window L,R (-1 = unbounded side) --softcap X --lse\n"
        "  --varlen       pack B sequences of random lengths in [1, S] (fixed seed)\n"
        "  --page-size P  paged KV cache: K and V become page pools of B*ceil(Sk/P) pages of P tokens\n"
        "                 (--layout within a page) read through a block table holding a random permutation\n"
        "                 of the pages (fixed seed); P a power of two in [1, 2^20], 0 = contiguous K/V\n"
        "                 (the default); not with --varlen\n"
        );
    fprintf(f,
        "sweeps (a progress line on stderr; --causal/--window/--softcap/--lse/--layout/--page-size\n"
        "        apply to every row):\n"
        "  --sweep prefill  (plain --sweep too) FlashAttention's grid: B*S = 16384, H*D = 2048,\n"
        "                   S 512..16384, D 64,128,256, causal no and yes (only yes with --causal)\n"
        "                   [--sweep-seqlens LIST] [--sweep-dims LIST]\n"
        "  --sweep decode   one query token, Hq=32 Hkv=8 D=128, batch 1,8,32, KV length 4096,16384,65536\n"
        "                   (the points of sdpa.py --decode) [--sweep-batches LIST] [--sweep-seqlens LIST\n"
        "                   (KV lengths)] [--sweep-dims LIST]; K/V are cycled through >= 256 MiB of copies\n"
        "  --sweep-file FILE  one shape a line in the shape flags above, '#' starts a comment; lines\n"
        "                   without --dtype run once per --dtype of the command line\n"
        "  --force          run a named sweep on the CPU backend (slow)\n"
        "run:\n"
        "  --backend NAME (default automatic, or env PORTATTN_BACKEND)\n"
        "  --warmup-ms MS (25) --rep-ms MS (100)  GPU warm-up and timed calls, by time as do_bench\n"
        "  --burst        GPU: time fixed counts --warmup N (5) --reps N (20) instead (the old short\n"
        "                 burst; its rows are marked \"burst\" and are not comparable with the peers')\n"
        "  --warmup N --reps N  counts for --burst and for the CPU (1 and 3 there)\n"
        "  --seed N --dist normal|uniform (normal, as torch.randn; uniform = [-1, 1))\n"
        "  --no-workspace  pass no split-KV workspace (the library then allocates one per call); by\n"
        "                 default one sized by portattn_forward_workspace_size is allocated per row\n"
        "  --kv-copies N  decode rows: cycle through N copies of K and V (1..1024) instead of the automatic\n"
        "                 >= 256 MiB; 1 = K/V stay warm in L2 as in a plain PyTorch loop (sdpa.py)\n"
        "  --num-splits N  params.num_splits for split-KV decode (1 = never split; 0, the default: heuristic)\n"
        "  --check | --no-check   compare O (and LSE) with the CPU reference; exit 1 on failure\n"
        "  --check-limit MACS     largest B*Hq*Sq*Sk*(Dqk+Dv) for the CPU reference (2e10); above it\n"
        "                         a GPU run is compared with the cuda-generic backend instead\n"
        "output:\n"
        "  --json FILE --csv FILE  every row with its kernel, time, TFLOPS, KV bytes/s, check, and the\n"
        "                         fraction of the device's peak with which peak (metric, value, measured\n"
        "                         or datasheet)\n"
        "  --devices FILE         device table (default: $PORTATTN_DEVICES, else devices.json next to the\n"
        "                         executable or in ../share/portattn, else the source tree's tools/)\n"
        "  --peak measured|datasheet  which peak to prefer where the table has both (measured)\n"
        "  --device-entry NAME    judge by the table's entry NAME (e.g. H200) instead of matching the\n"
        "                         detected device name; the detected name is still recorded\n"
        "  --list-backends --help\n"
        "With no shape flags: B=1 S=2048 H=16 D=128 on a GPU, B=1 S=1024 H=8 D=64 on a CPU-only\n"
        "machine, both with --check on. On the CPU warmup/reps default to 1/3.\n"
        "Exit: 0 ok, 1 a run or check failed, 2 bad command line or sweep file.\n");
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

/* Comma list of dtypes into out[3]; returns the count or -1. */
static int parse_dtypes(const char *s, portattn_dtype_t *out)
{
    char buf[64];
    int n = 0;
    if (strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (n == 3 || parse_dtype(tok, &out[n++])) return -1;
    return n ? n : -1;
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

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return 1;
    return 0;
}
#define IN_LIST(name, list) in_list(name, list, sizeof list / sizeof list[0])

/* The flags of one shape: the same on the command line and on --sweep-file lines. */
static const char *const shape_switches[] = {"--causal", "--varlen", "--lse"};
static const char *const shape_valued[] = {"--batch", "--seqlen", "--seqlen-q", "--seqlen-k", "--heads-q",
    "--heads-kv", "--head-dim", "--head-dim-v", "--dtype", "--layout", "--window", "--softcap", "--page-size"};

/* What a flag's value must be, for the "bad value" message ("" where the flag's help says it). */
static const char *value_hint(const char *name)
{
    if (!strcmp(name, "--page-size")) return " (a power of two in [1, 2^20], or 0 for contiguous K/V)";
    if (!strcmp(name, "--kv-copies")) return " (an integer in [1, 1024])";
    return "";
}

/* 0: not a shape flag, 1: a shape switch, 2: a shape flag with a value. */
static int shape_flag_kind(const char *name)
{
    return IN_LIST(name, shape_switches) ? 1 : IN_LIST(name, shape_valued) ? 2 : 0;
}

static void shape_in_init(shape_in *si)
{
    memset(si, 0, sizeof *si);
    si->b = si->sq = si->sk = si->hq = si->hkv = si->d = si->dv = si->wl = si->wr = -1;
}

/* Applies one shape flag (v = its value, NULL for a switch); -1 for a bad value. */
static int shape_flag_set(shape_in *si, const char *name, const char *v)
{
    const struct { const char *name; int64_t *dst; } ints[] = {
        {"--batch", &si->b}, {"--seqlen-q", &si->sq}, {"--seqlen-k", &si->sk}, {"--heads-q", &si->hq},
        {"--heads-kv", &si->hkv}, {"--head-dim", &si->d}, {"--head-dim-v", &si->dv}};
    for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
        if (!strcmp(name, ints[j].name)) return parse_i64(v, 1, ints[j].dst);
#define FLAG(n) (!strcmp(name, n))
    if (FLAG("--causal")) si->causal = 1;
    else if (FLAG("--varlen")) si->varlen = 1;
    else if (FLAG("--lse")) si->lse = 1;
    else if (FLAG("--seqlen")) { if (parse_i64(v, 1, &si->sq)) return -1; si->sk = si->sq; }
    else if (FLAG("--dtype")) {
        portattn_dtype_t t[3];
        if (strlen(v) >= sizeof si->dtype || parse_dtypes(v, t) < 0) return -1;
        strcpy(si->dtype, v);
    } else if (FLAG("--layout")) {
        if (strcmp(v, "bshd") && strcmp(v, "bhsd")) return -1;
        si->bhsd = v[1] == 'h';
    } else if (FLAG("--softcap")) {
        if (parse_f64(v, &si->softcap)) return -1;
    } else if (FLAG("--page-size")) {
        if (parse_i64(v, 0, &si->page) || si->page > MAX_PAGE_SIZE || (si->page & (si->page - 1))) return -1;
    } else if (FLAG("--window")) {
        char buf[64], *comma;
        if (strlen(v) >= sizeof buf) return -1;
        strcpy(buf, v);
        if (!(comma = strchr(buf, ','))) return -1;
        *comma = 0;
        if (parse_i64(buf, -1, &si->wl) || parse_i64(comma + 1, -1, &si->wr)) return -1;
    }
    return 0;
}

static int shape_dims_given(const shape_in *si)
{
    return si->b > 0 || si->sq > 0 || si->sk > 0 || si->hq > 0 || si->hkv > 0 || si->d > 0 || si->dv > 0;
}

/* The shape of `si` in `dtype`, with defaults for what was not given; NULL, or why it is invalid. */
static const char *finish_shape(const shape_in *si, portattn_dtype_t dtype, shape *s)
{
    if (si->sq < 0 && si->sk > 0) return "--seqlen-k needs --seqlen-q or --seqlen";
    if (si->varlen && si->page > 0)
        return "--page-size and --varlen: a paged KV cache takes per-sequence K/V (block_table), not packed "
               "sequences (cu_seqlens); use one or the other";
    memset(s, 0, sizeof *s);
    s->dtype = dtype;
    s->b = si->b > 0 ? si->b : 1;
    s->sq = si->sq > 0 ? si->sq : 1024;
    s->sk = si->sk > 0 ? si->sk : s->sq;
    s->hq = si->hq > 0 ? si->hq : si->hkv > 0 ? si->hkv : 16;
    s->hkv = si->hkv > 0 ? si->hkv : s->hq;
    s->d = si->d > 0 ? si->d : si->dv > 0 ? si->dv : 128;
    s->dv = si->dv > 0 ? si->dv : s->d;
    s->causal = si->causal; s->varlen = si->varlen; s->lse = si->lse; s->bhsd = si->bhsd;
    s->wl = si->wl; s->wr = si->wr;
    s->page = si->page;
    s->softcap = (float)si->softcap;
    return NULL;
}

/* Returns 0 to run, 1 to exit 0 (help printed), 2 for a usage error. */
static int parse_args(int argc, char **argv, opts *o, int *list_backends)
{
    int64_t warmup = -1, reps = -1, seed = 1, kv_copies = 0, num_splits = 0;
    const struct { const char *name; int *dst; int val; } switches[] = {
        {"--list-backends", list_backends, 1}, {"--check", &o->check, 1}, {"--no-check", &o->check, 0},
        {"--force", &o->force, 1}, {"--no-workspace", &o->no_workspace, 1}, {"--burst", &o->burst, 1}};
    const struct { const char *name; int64_t *dst; int64_t min; } ints[] = {
        {"--warmup", &warmup, 0}, {"--reps", &reps, 1}, {"--seed", &seed, 0}, {"--kv-copies", &kv_copies, 1},
        {"--num-splits", &num_splits, 0}};
    static const char *const valued[] = {"--json", "--csv", "--sweep-file", "--sweep-seqlens", "--sweep-dims",
        "--sweep-batches", "--dist", "--check-limit", "--backend", "--devices", "--device-entry", "--peak", "--warmup",
        "--reps", "--seed", "--kv-copies", "--num-splits", "--warmup-ms", "--rep-ms"};
    shape_in *si = &o->in;
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *a = argv[i], *v = NULL, *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        int known = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 1; }
        if (strncmp(a, "--", 2) || len >= sizeof name) goto bad;
        memcpy(name, a, len);
        name[len] = 0;
        if (eq) v = eq + 1;
        if (FLAG("--sweep")) { /* an optional value: prefill (the default) or decode */
            if (!v && i + 1 < argc && argv[i + 1][0] != '-') v = argv[++i];
            if (!v || !strcmp(v, "prefill")) o->sweep = SWEEP_PREFILL;
            else if (!strcmp(v, "decode")) o->sweep = SWEEP_DECODE;
            else { fprintf(stderr, "portattn-bench: unknown sweep '%s' (prefill or decode; or --sweep-file FILE)\n", v); return 2; }
            continue;
        }
        int kind = shape_flag_kind(name);
        for (size_t j = 0; j < sizeof switches / sizeof switches[0]; j++)
            if (FLAG(switches[j].name) && !v) { *switches[j].dst = switches[j].val; known = 1; }
        if (kind == 1 && !v) { shape_flag_set(si, name, NULL); known = 1; }
        if (known) continue;
        if (kind != 2 && !IN_LIST(name, valued)) goto bad;
        if (!v && !(v = i + 1 < argc ? argv[++i] : NULL)) {
            fprintf(stderr, "portattn-bench: %s needs a value\n", name);
            return 2;
        }
        if (kind == 2) { if (shape_flag_set(si, name, v)) goto bad_value; continue; }
        for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
            if (FLAG(ints[j].name) && parse_i64(v, ints[j].min, ints[j].dst)) goto bad_value;
        if (FLAG("--json")) o->json = v;
        else if (FLAG("--csv")) o->csv = v;
        else if (FLAG("--sweep-file")) o->sweep_file = v;
        else if (FLAG("--devices")) o->devices = v;
        else if (FLAG("--device-entry")) o->device_entry = v;
        else if (FLAG("--sweep-seqlens")) { if ((o->nseqlens = parse_list(v, o->seqlens)) < 0) goto bad_value; }
        else if (FLAG("--sweep-dims")) { if ((o->ndims = parse_list(v, o->dims)) < 0) goto bad_value; }
        else if (FLAG("--sweep-batches")) { if ((o->nbatches = parse_list(v, o->batches)) < 0) goto bad_value; }
        else if (FLAG("--dist")) { if (strcmp(v, "uniform") && strcmp(v, "normal")) goto bad_value; o->normal = v[0] == 'n'; }
        else if (FLAG("--peak")) { if (strcmp(v, "measured") && strcmp(v, "datasheet")) goto bad_value; o->prefer_measured = v[0] == 'm'; }
        else if (FLAG("--check-limit")) { if (parse_f64(v, &o->check_limit)) goto bad_value; }
        else if (FLAG("--warmup-ms")) { if (parse_f64(v, &o->warmup_ms) || !(o->warmup_ms >= 0 && o->warmup_ms <= 6e4)) goto bad_value; }
        else if (FLAG("--rep-ms")) { if (parse_f64(v, &o->rep_ms) || !(o->rep_ms > 0 && o->rep_ms <= 6e5)) goto bad_value; }
        else if (FLAG("--backend")) {
            int ok = 0;
            o->backend = portattn_backend_from_name(v, &ok);
            if (!ok) { fprintf(stderr, "portattn-bench: unknown backend '%s' (see --list-backends)\n", v); return 2; }
        }
        continue;
    bad_value:
        fprintf(stderr, "portattn-bench: bad value '%s' for %s%s\n", v, name, value_hint(name));
        return 2;
    bad:
        fprintf(stderr, "portattn-bench: unknown argument '%s'\n\n", a);
        usage(stderr);
        return 2;
    }
#undef FLAG
    if (warmup > 1000000 || reps > 1000000) { fprintf(stderr, "portattn-bench: --warmup/--reps too large\n"); return 2; }
    if (kv_copies > MAX_KV_COPIES) {
        fprintf(stderr, "portattn-bench: bad value '%lld' for --kv-copies%s\n", (long long)kv_copies, value_hint("--kv-copies"));
        return 2;
    }
    if (num_splits > 1024) { fprintf(stderr, "portattn-bench: --num-splits too large (at most 1024)\n"); return 2; }
    o->warmup = (int)warmup; o->reps = (int)reps; o->seed = (uint64_t)seed; o->kv_copies = (int)kv_copies;
    o->num_splits = (int)num_splits;

    const char *err = NULL;
    int named = o->sweep == SWEEP_PREFILL || o->sweep == SWEEP_DECODE;
    o->ndtypes = parse_dtypes(si->dtype[0] ? si->dtype : "bf16", o->dtypes);
    if (o->sweep_file && !o->sweep) o->sweep = SWEEP_FILE;
    if (o->sweep_file && o->sweep != SWEEP_FILE) err = "--sweep and --sweep-file: one or the other";
    else if (o->ndtypes > 1 && o->sweep == SWEEP_NONE) err = "a --dtype list needs a sweep";
    else if (named && shape_dims_given(si)) err = "--sweep sets batch, seqlens, heads and head dims itself";
    else if (o->sweep == SWEEP_DECODE && (si->causal || si->varlen))
        err = "--sweep decode: one query token sees the whole KV cache; --causal and --varlen do not apply";
    else if (o->sweep == SWEEP_FILE && (shape_dims_given(si) || si->causal || si->varlen || si->lse || si->bhsd ||
                                        si->wl >= 0 || si->wr >= 0 || si->softcap > 0 || si->page > 0))
        err = "--sweep-file: the shapes come from the file (only --dtype may be given, for lines without one)";
    else if (!named && (o->nseqlens || o->ndims)) err = "--sweep-seqlens/--sweep-dims need --sweep prefill or decode";
    else if (o->nbatches && o->sweep != SWEEP_DECODE) err = "--sweep-batches needs --sweep decode";
    else { shape tmp; err = finish_shape(si, o->dtypes[0], &tmp); } /* what the shape itself forbids */
    if (err) { fprintf(stderr, "portattn-bench: %s\n", err); return 2; }
    return 0;
}

/* ---- the rows to run --------------------------------------------------------------------- */

typedef struct plan { shape *s; int n, cap; } plan;

static int plan_add(plan *p, const shape *s)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        shape *t = cap > 1000000 ? NULL : realloc(p->s, sizeof(shape) * (size_t)cap);
        if (!t) return -1;
        p->s = t;
        p->cap = cap;
    }
    p->s[p->n++] = *s;
    return 0;
}

/* --sweep-file: one shape a line in the command line's shape flags ("--flag value" or
 * "--flag=value"), '#' to the end of the line is a comment. Returns 0, or 2 with the message printed. */
static int read_sweep_file(const opts *o, plan *pl)
{
    FILE *f = fopen(o->sweep_file, "r");
    if (!f) { fprintf(stderr, "portattn-bench: cannot read --sweep-file %s\n", o->sweep_file); return 2; }
    char line[4096];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *tok[128], *hash = strchr(line, '#');
        int ntok = 0;
        if (!strchr(line, '\n') && !feof(f)) { rc = 1; fprintf(stderr, "%s:%d: line too long\n", o->sweep_file, lineno); break; }
        if (hash) *hash = 0;
        for (char *t = strtok(line, " \t\r\n"); t && !rc; t = strtok(NULL, " \t\r\n")) {
            if (ntok == 128) { fprintf(stderr, "%s:%d: too many flags\n", o->sweep_file, lineno); rc = 1; }
            else tok[ntok++] = t;
        }
        if (!ntok || rc) continue;
        shape_in si;
        shape_in_init(&si);
        for (int i = 0; i < ntok && !rc; i++) {
            char *name = tok[i], *v = NULL, *eq = strchr(name, '=');
            if (eq) { *eq = 0; v = eq + 1; }
            int kind = shape_flag_kind(name);
            if (!kind) {
                fprintf(stderr, "%s:%d: '%s' is not a shape flag (see --help: shape)\n", o->sweep_file, lineno, name);
                rc = 1;
            } else if (kind == 2 && !v && !(v = i + 1 < ntok ? tok[++i] : NULL)) {
                fprintf(stderr, "%s:%d: %s needs a value\n", o->sweep_file, lineno, name);
                rc = 1;
            } else if (kind == 1 && v) {
                fprintf(stderr, "%s:%d: %s takes no value\n", o->sweep_file, lineno, name);
                rc = 1;
            } else if (shape_flag_set(&si, name, v)) {
                fprintf(stderr, "%s:%d: bad value '%s' for %s%s\n", o->sweep_file, lineno, v, name, value_hint(name));
                rc = 1;
            }
        }
        portattn_dtype_t dt[3];
        int ndt = si.dtype[0] ? parse_dtypes(si.dtype, dt) : o->ndtypes;
        if (!si.dtype[0]) memcpy(dt, o->dtypes, sizeof dt);
        for (int t = 0; t < ndt && !rc; t++) {
            shape s;
            const char *why = finish_shape(&si, dt[t], &s);
            if (why) { fprintf(stderr, "%s:%d: %s\n", o->sweep_file, lineno, why); rc = 1; }
            else if (plan_add(pl, &s)) { fprintf(stderr, "portattn-bench: too many shapes\n"); rc = 1; }
        }
    }
    fclose(f);
    if (!rc && pl->n == 0) { fprintf(stderr, "portattn-bench: no shapes in %s\n", o->sweep_file); rc = 1; }
    return rc ? 2 : 0;
}

/* The rows of a named sweep, of the sweep file, or the one shape. 0, else the exit code (message printed). */
static int make_plan(const opts *o, const shape *one, plan *pl)
{
    static const int64_t def_seqlens[] = {512, 1024, 2048, 4096, 8192, 16384}, def_dims[] = {64, 128, 256};
    static const int64_t dec_batches[] = {1, 8, 32}, dec_kv[] = {4096, 16384, 65536}, dec_dims[] = {128};
    int rc = 0;
    if (o->sweep == SWEEP_FILE) return read_sweep_file(o, pl);
    if (o->sweep == SWEEP_NONE) rc = plan_add(pl, one);
    int dec = o->sweep == SWEEP_DECODE;
    const int64_t *seqlens = o->nseqlens ? o->seqlens : dec ? dec_kv : def_seqlens;
    const int64_t *dims = o->ndims ? o->dims : dec ? dec_dims : def_dims;
    const int64_t *batches = o->nbatches ? o->batches : dec_batches;
    int nseq = o->nseqlens ? o->nseqlens : dec ? 3 : 6, ndim = o->ndims ? o->ndims : dec ? 1 : 3;
    int nb = dec ? (o->nbatches ? o->nbatches : 3) : 1;
    int ncausal = !dec && !one->causal ? 2 : 1; /* --causal with --sweep: causal rows only */
    for (int t = 0; t < o->ndtypes && o->sweep != SWEEP_NONE; t++)
        for (int di = 0; di < ndim; di++)
            for (int c = 0; c < ncausal; c++)
                for (int bi = 0; bi < nb; bi++)
                    for (int si = 0; si < nseq && !rc; si++) {
                        shape sh = *one;
                        sh.dtype = o->dtypes[t];
                        sh.d = sh.dv = dims[di];
                        if (dec) { /* sdpa.py --decode: GQA 32/8, one query token */
                            sh.b = batches[bi];
                            sh.hq = 32; sh.hkv = 8;
                            sh.sq = 1; sh.sk = seqlens[si];
                        } else { /* 16384 tokens and 2048 = heads * head_dim, as FlashAttention's benchmark */
                            sh.hq = sh.hkv = 2048 / dims[di] > 0 ? 2048 / dims[di] : 1;
                            sh.sq = sh.sk = seqlens[si];
                            sh.b = 16384 / seqlens[si] > 0 ? 16384 / seqlens[si] : 1;
                            sh.causal = one->causal || c == 1;
                        }
                        rc = plan_add(pl, &sh);
                    }
    if (rc) fprintf(stderr, "portattn-bench: out of host memory\n");
    return rc ? 1 : 0;
}

/* ---- running one shape ------------------------------------------------------------------- */

/* The timed call. Decode rows cycle K and V through `copies` identical copies so that every call
 * reads its KV cache from HBM, not from an L2 that the previous call left warm. Paged rows: each
 * copy is a whole page pool, and all copies share the one block table. */
typedef struct call {
    portattn_fwd_params_t p;
    char *k0, *v0;         /* copy 0 */
    size_t kbytes, vbytes; /* one copy */
    int copies, next;
    portattn_status_t st;
} call;

static int call_forward(void *arg)
{
    call *c = (call *)arg;
    int i = c->next++ % c->copies;
    c->p.k.data = c->k0 + (size_t)i * c->kbytes;
    c->p.v.data = c->v0 + (size_t)i * c->vbytes;
    c->st = portattn_forward(&c->p, NULL);
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

/* Keys a sequence must read at least once: all of them, except that a window (bottom-right, as in
 * portattn.h) hides those left of the first query row's window and right of the last row's. */
static double seq_keys(const shape *s, int64_t sq, int64_t sk)
{
    int64_t wl = s->wl, wr = s->causal ? 0 : s->wr;
    int64_t lo = wl < 0 ? 0 : sk - sq - wl, hi = wr < 0 ? sk - 1 : sk - 1 + wr;
    lo = lo < 0 ? 0 : lo;
    hi = hi > sk - 1 ? sk - 1 : hi;
    return hi >= lo ? (double)(hi - lo + 1) : 0;
}

/* An fp32 copy of a whole strided buffer (same element strides), or NULL. */
static float *upcast(const void *src, portattn_dtype_t t, size_t n)
{
    float *f = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; f && i < n; i++) f[i] = pa_load_elem(t, src, (int64_t)i);
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
        double x = pa_load_elem(t, out, (int64_t)i), y = pa_load_elem(tref, ref, (int64_t)i);
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
    int32_t *hcu_q, *hcu_k, *hbt; /* hbt: the block table of a paged row [B, pages per sequence] */
    void *dq, *dk, *dv, *dout, *dref;
    float *dlse, *dlse_ref;
    int32_t *dcu_q, *dcu_k, *dbt;
    void *dws; /* split-KV workspace, sized by portattn_forward_workspace_size */
} bufs;

static void free_bufs(bufs *b, dm_kind kind)
{
    void *host[] = {b->hq, b->hk, b->hv, b->ho, b->href, b->hlse, b->hlse_ref, b->hcu_q, b->hcu_k, b->hbt};
    void *dev[] = {b->dq, b->dk, b->dv, b->dout, b->dref, b->dlse, b->dlse_ref, b->dcu_q, b->dcu_k, b->dbt, b->dws};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) dm_free(kind, dev[i]);
}

/* Same call on other O/LSE buffers (and, for the CPU reference, other inputs: K/V and the block
 * table of a paged row in host memory; the pools keep their strides and page count). */
static portattn_fwd_params_t retarget(const portattn_fwd_params_t *p, const shape *s, portattn_backend_t be,
                                      void *q, void *k, void *v, void *o, float *lse,
                                      const int32_t *cuq, const int32_t *cuk, const int32_t *bt)
{
    portattn_fwd_params_t r = *p;
    r.q.data = q; r.k.data = k; r.v.data = v; r.o.data = o;
    r.lse = s->lse ? lse : NULL;
    if (s->varlen) { r.cu_seqlens_q = cuq; r.cu_seqlens_k = cuk; }
    if (s->page > 0) {
        r.block_table = bt;
        r.block_table_stride = p->block_table_stride;
        r.page_size = p->page_size;
        r.num_pages = p->num_pages;
    }
    r.workspace = NULL; /* the reference call sizes its own */
    r.workspace_size = 0;
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
    /* the CPU backend checked by itself in f32 tests its dtype paths only, and says so */
    const char *which = tested == PORTATTN_BACKEND_CPU ? "cpu itself in f32" : "cpu";
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
                                           b->hcu_q, b->hcu_k, b->hbt);
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
                                           b->dlse_ref, b->dcu_q, b->dcu_k, b->dbt);
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

/* ---- progress and the printed table ------------------------------------------------------- */

/* The progress line of a sweep on stderr: rewritten in place on a terminal, one line a row when
 * stderr is a file or pipe (a log then shows how far a sweep got). */
static struct { int on, tty, shown; double t0; } progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "causal window(L,R) softcap=X varlen lse bhsd page_size=P": what is not plain in a shape. */
static void shape_flags(const shape *s, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
#define ADD(...) (k += (size_t)snprintf(buf + k, k < n ? n - k : 0, __VA_ARGS__), k = k < n ? k : n - 1)
    if (s->causal) ADD(" causal");
    if (s->wl >= 0 || s->wr >= 0) ADD(" window(%lld,%lld)", (long long)s->wl, (long long)s->wr);
    if (s->softcap > 0) ADD(" softcap=%g", s->softcap);
    if (s->varlen) ADD(" varlen");
    if (s->lse) ADD(" lse");
    if (s->bhsd) ADD(" bhsd");
    if (s->page > 0) ADD(" page_size=%lld", (long long)s->page);
#undef ADD
    if (buf[0] == ' ') memmove(buf, buf + 1, strlen(buf));
}

static void progress_show(int i, int n, const shape *s)
{
    if (!progress.on) return;
    char fl[160];
    shape_flags(s, fl, sizeof fl);
    fprintf(stderr, "%s[%d/%d] %s B=%lld Sq=%lld Sk=%lld Hq=%lld Hkv=%lld D=%lld%s%s  (%.1f s elapsed)%s",
            progress.tty ? "\r\033[K" : "", i + 1, n, pa_dtype_name(s->dtype), (long long)s->b, (long long)s->sq,
            (long long)s->sk, (long long)s->hq, (long long)s->hkv, (long long)s->d, fl[0] ? " " : "", fl,
            now_s() - progress.t0, progress.tty ? "" : "\n");
    fflush(stderr);
    progress.shown = progress.tty;
}

static void progress_clear(void) /* before anything goes to stdout, which may be the same terminal */
{
    if (progress.shown) { fputs("\r\033[K", stderr); fflush(stderr); }
    progress.shown = 0;
}

static void print_header(void)
{
    printf("%-13s %-24s %-4s %4s %6s %6s %4s %4s %4s %4s %12s %8s %8s %6s  flags\n", "backend", "kernel", "type",
           "B", "Sq", "Sk", "Hq", "Hkv", "D", "Dv", "time", "TFLOPS", "KV TB/s", "%peak");
}

static void print_row(const row *r)
{
    const shape *s = &r->s;
    char fl[160];
    progress_clear();
    printf("%-13s %-24s %-4s %4lld %6lld %6lld %4lld %4lld %4lld %4lld ", r->backend, r->kernel, pa_dtype_name(s->dtype),
           (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)s->hq, (long long)s->hkv,
           (long long)s->d, (long long)s->dv);
    if (r->ms < 0) printf("%12s %8s %8s %6s ", "-", "-", "-", "-");
    else {
        if (r->decode) printf("%9.1f us ", r->ms * 1e3);
        else printf("%9.3f ms ", r->ms);
        printf("%8.2f ", r->tflops);
        if (r->decode) printf("%8.3f ", r->kv_Bps * 1e-12);
        else printf("%8s ", "-");
        if (r->peak) printf(r->peak_fraction < 0.0995 ? "%5.2f%% " : "%5.1f%% ", 100 * r->peak_fraction);
        else printf("%6s ", "-");
    }
    shape_flags(s, fl, sizeof fl);
    printf(" %s", fl);
    if (s->varlen) printf(" (tokens q=%lld k=%lld)", (long long)r->tokens_q, (long long)r->tokens_k);
    printf("\n");
    fflush(stdout);
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

/* Allocates, fills, times and (optionally) checks one shape. Returns 0 on success, 1 on failure. */
static int run_shape(const opts *o, const shape *s, dm_kind kind, rng *gen, row *r)
{
    bufs b;
    memset(&b, 0, sizeof b);
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->check = "none";
    r->ms = r->tflops = r->kv_Bps = r->host_us = -1;
    r->kv_copies = 1;
    r->decode = !s->varlen && s->sq == 1;
    snprintf(r->backend, sizeof r->backend, "?");
    int fail = 1;
    double flops = 0, macs = 0, keys = 0;
    /* the int64 and size_t products below must not overflow: refuse absurd shapes first */
    int paged = s->page > 0;
    int64_t pages_per_seq = paged ? (s->sk + s->page - 1) / s->page : 0; /* of the block table */
    int64_t sk_alloc = paged ? pages_per_seq * s->page : s->sk;         /* keys per sequence in memory */
    double elems = (double)s->b * (double)(s->sq > sk_alloc ? s->sq : sk_alloc) *
                   (double)(s->hq > s->hkv ? s->hq : s->hkv) * (double)(s->d > s->dv ? s->d : s->dv);
    if (elems > 17592186044416.0 || elems * 4 > (double)SIZE_MAX || (s->varlen && s->b >= INT32_MAX))
        BAIL("shape too large to allocate");
    if (paged && (double)s->b * (double)pages_per_seq > (double)INT32_MAX)
        BAIL("paged: more than 2^31 pages (int32 block table entries)");
    int64_t tq = s->b * s->sq, tk = s->b * s->sk, maxq = s->sq, maxk = s->sk;
    int64_t num_pages = s->b * pages_per_seq;

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
            keys += seq_keys(s, lq, lk);
            macs += (double)s->hq * (double)lq * (double)lk * (double)(s->d + s->dv);
        }
    } else {
        flops = (double)s->b * seq_flops(s, s->sq, s->sk);
        keys = (double)s->b * seq_keys(s, s->sq, s->sk);
        macs = (double)s->b * (double)s->hq * (double)s->sq * (double)s->sk * (double)(s->d + s->dv);
    }
    r->tokens_q = tq; r->tokens_k = tk; r->flops = flops;
    size_t es = (size_t)dtype_size(s->dtype), cub = sizeof(int32_t) * (size_t)(s->b + 1);
    size_t btb = sizeof(int32_t) * (size_t)num_pages; /* the block table [B, pages_per_seq] */
    /* the keys read, not the pool: a paged row's tail padding in its last page is not counted */
    r->kv_bytes = keys * (double)s->hkv * (double)(s->d + s->dv) * (double)es;

    int64_t kv_tokens = paged ? num_pages * s->page : tk; /* rows of K/V in memory (one copy) */
    b.nq = (size_t)(tq * s->hq * s->d); b.nk = (size_t)(kv_tokens * s->hkv * s->d);
    b.nv = (size_t)(kv_tokens * s->hkv * s->dv); b.no = (size_t)(tq * s->hq * s->dv);
    b.nlse = s->lse ? (size_t)(tq * s->hq) : 0;
    if (r->decode) { /* enough copies of K and V that no timed call finds them in L2, or --kv-copies */
        double all = (double)(b.nk + b.nv) * (double)es;
        r->kv_copies = all <= 0 ? 1 : (int)fmin(MAX_COPIES, ceil(ROTATE_BYTES / all));
        if (o->kv_copies > 0) r->kv_copies = o->kv_copies;
    }
    if (paged) { /* every page used once, in a random order reproducible whatever --seed says */
        rng pr = {PAGE_SEED};
        if (!(b.hbt = malloc(btb + 4))) BAIL("out of host memory");
        for (int64_t i = 0; i < num_pages; i++) b.hbt[i] = (int32_t)i;
        for (int64_t i = num_pages - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(rng_unit(&pr) * (double)(i + 1));
            j = j > i ? i : j;
            int32_t t = b.hbt[i]; b.hbt[i] = b.hbt[j]; b.hbt[j] = t;
        }
        if (!(b.dbt = (int32_t *)dm_alloc(kind, btb))) BAIL("out of %s memory", kind == DM_HOST ? "host" : "device");
        if (dm_upload(kind, b.dbt, b.hbt, btb)) BAIL("upload failed");
    }
    size_t copies = (size_t)r->kv_copies;
    b.hq = malloc(b.nq * es + 1); b.hk = malloc(b.nk * es + 1); b.hv = malloc(b.nv * es + 1);
    b.ho = malloc(b.no * es + 1); b.hlse = (float *)malloc(b.nlse * sizeof(float) + 4);
    b.dq = dm_alloc(kind, b.nq * es); b.dk = dm_alloc(kind, copies * b.nk * es);
    b.dv = dm_alloc(kind, copies * b.nv * es);
    b.dout = dm_alloc(kind, b.no * es); b.dlse = (float *)dm_alloc(kind, b.nlse * sizeof(float));
    if (s->varlen) { b.dcu_q = (int32_t *)dm_alloc(kind, cub); b.dcu_k = (int32_t *)dm_alloc(kind, cub); }
    if (!b.hq || !b.hk || !b.hv || !b.ho || !b.hlse || !b.dq || !b.dk || !b.dv || !b.dout || !b.dlse ||
        (s->varlen && (!b.dcu_q || !b.dcu_k)))
        BAIL("out of %s memory", kind == DM_HOST ? "host" : "device");
    /* fresh random inputs for every row: a kernel that ignores its inputs cannot pass */
    fill_random(b.hq, s->dtype, b.nq, gen, o->normal);
    fill_random(b.hk, s->dtype, b.nk, gen, o->normal);
    fill_random(b.hv, s->dtype, b.nv, gen, o->normal);
    if (dm_upload(kind, b.dq, b.hq, b.nq * es) ||
        (s->varlen && (dm_upload(kind, b.dcu_q, b.hcu_q, cub) || dm_upload(kind, b.dcu_k, b.hcu_k, cub))))
        BAIL("upload failed");
    for (size_t i = 0; i < copies; i++)
        if (dm_upload(kind, (char *)b.dk + i * b.nk * es, b.hk, b.nk * es) ||
            dm_upload(kind, (char *)b.dv + i * b.nv * es, b.hv, b.nv * es))
            BAIL("upload failed");

    call c;
    memset(&c, 0, sizeof c);
    portattn_fwd_params_t *p = &c.p;
    portattn_fwd_params_init(p);
    p->dtype = s->dtype;
    p->batch = s->b;
    p->seqlen_q = s->varlen ? tq : s->sq;
    p->seqlen_k = s->varlen ? tk : s->sk;
    p->heads_q = s->hq; p->heads_kv = s->hkv;
    p->head_dim_qk = s->d; p->head_dim_v = s->dv;
    {
        portattn_tensor_t (*mk)(void *, int64_t, int64_t, int64_t) = s->bhsd ? portattn_tensor_bhsd : portattn_tensor_bshd;
        p->q = mk(b.dq, p->seqlen_q, s->hq, s->d);
        /* paged: pools [num_pages, P, Hkv, D], the row's layout within a page, stride[0] = page stride */
        p->k = mk(b.dk, paged ? s->page : p->seqlen_k, s->hkv, s->d);
        p->v = mk(b.dv, paged ? s->page : p->seqlen_k, s->hkv, s->dv);
        p->o = mk(b.dout, p->seqlen_q, s->hq, s->dv);
    }
    if (paged) {
        p->block_table = b.dbt;
        p->block_table_stride = pages_per_seq;
        p->page_size = s->page;
        p->num_pages = num_pages;
    }
    if (s->lse) {
        p->lse = b.dlse;
        p->lse_stride[0] = s->varlen ? 0 : s->hq * p->seqlen_q; /* varlen: (head, packed token) */
        p->lse_stride[1] = p->seqlen_q;
        p->lse_stride[2] = 1;
    }
    if (s->varlen) {
        p->cu_seqlens_q = b.dcu_q; p->cu_seqlens_k = b.dcu_k;
        p->max_seqlen_q = maxq; p->max_seqlen_k = maxk;
    }
    p->softcap = s->softcap;
    p->causal = s->causal;
    p->window_left = s->wl; p->window_right = s->wr;
    p->backend = o->backend;
    c.k0 = (char *)b.dk; c.v0 = (char *)b.dv;
    c.kbytes = b.nk * es; c.vbytes = b.nv * es;
    c.copies = r->kv_copies;

    p->num_splits = o->num_splits;
    portattn_selection_t sel;
    portattn_status_t st = portattn_forward_query(p, &sel);
    if (st != PORTATTN_SUCCESS) BAIL_API("portattn_forward_query", st);
    snprintf(r->backend, sizeof r->backend, "%s", sel.backend_name);
    snprintf(r->kernel, sizeof r->kernel, "%s", sel.kernel);
    if (dm_kind_of(sel.backend) != kind) /* e.g. a HIP backend, which devmem does not know yet */
        BAIL("selected backend %s takes other memory than was allocated", sel.backend_name);
    /* Split-KV scratch allocated once, as serving engines do (--no-workspace: the library's own
     * per-call stream-ordered allocation). */
    size_t ws = 0;
    if (!o->no_workspace && (st = portattn_forward_workspace_size(p, &ws)) != PORTATTN_SUCCESS)
        BAIL_API("portattn_forward_workspace_size", st);
    if (ws) {
        if (!(b.dws = dm_alloc(kind, ws))) BAIL("out of memory for a %zu-byte workspace", ws);
        p->workspace = b.dws;
        p->workspace_size = ws;
    }

    if (dm_time(kind, &o->protocol, call_forward, &c, &r->timing)) {
        if (c.st != PORTATTN_SUCCESS) BAIL_API("portattn_forward", c.st);
        BAIL("timing failed (device error, event failure or no memory for the L2 flush)");
    }
    r->ms = r->timing.median_ms;
    r->host_us = r->timing.host_us;
    r->tflops = r->ms > 0 ? flops / (r->ms * 1e-3) / 1e12 : 0;
    if (r->decode) r->kv_Bps = r->ms > 0 ? r->kv_bytes / (r->ms * 1e-3) : 0;
    assign_peak(o, r);
    print_row(r);
    fail = 0;
    if (o->check > 0) fail = check_row(o, s, kind, p, sel.backend, &b, macs, r);
bail:
    if (fail && r->ms < 0) { print_row(r); printf("  error: %s\n", r->msg); }
    free_bufs(&b, kind);
    return fail;
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The API's host cost over the rows that ran on a GPU: the median and the largest. */
static void print_host_cost(const row *rows, int n)
{
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; h && i < n; i++)
        if (rows[i].ms >= 0 && rows[i].host_us >= 0) h[m++] = rows[i].host_us;
    if (m) {
        qsort(h, (size_t)m, sizeof(double), cmp_f64);
        printf("# host time inside portattn_forward: median %.2f us, max %.2f us per call over %d rows\n",
               m % 2 ? h[m / 2] : 0.5 * (h[m / 2 - 1] + h[m / 2]), h[m - 1], m);
    }
    free(h);
}

/* ---- JSON and CSV ------------------------------------------------------------------------ */

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
    if (isfinite(x)) fprintf(f, "%.10g", x);
    else fputs("null", f);
}

/* What the run was: the device, its table entry and the command line. */
typedef struct run_info {
    const char *device, *entry, *table, *sweep, *date;
    const char *timing; /* "do_bench", "burst" or "host" */
    const opts *o;
    char command[2048];
} run_info;

static const char *timing_name(const opts *o, dm_kind kind)
{
    return kind == DM_HOST ? "host" : o->burst ? "burst" : "do_bench";
}

/* The numbers of one row that may be absent: NAN, written as null (JSON) or an empty field (CSV). */
typedef struct row_nums { double ms, us, tflops, kv_Bps, peak_value, peak_fraction; } row_nums;

static row_nums nums_of(const row *r)
{
    int ran = r->ms >= 0;
    row_nums n = {ran ? r->ms : NAN, ran ? r->ms * 1e3 : NAN, ran ? r->tflops : NAN,
                  ran && r->decode ? r->kv_Bps : NAN, r->peak ? r->peak->value : NAN,
                  ran && r->peak ? r->peak_fraction : NAN};
    return n;
}

static int write_json(const char *path, const run_info *ri, const row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int v = portattn_version();
    fprintf(f, "{\"tool\":\"portattn-bench\",\"format\":2,\"version\":\"%d.%d.%d\"", v / 10000, v / 100 % 100, v % 100);
#define JS(key, val) (fprintf(f, ",\"%s\":", key), json_str(f, val))
#define JN(key, val) (fprintf(f, ",\"%s\":", key), json_num(f, val))
    JS("device", ri->device);
    JS("device_entry", ri->entry);
    JS("devices_file", ri->table);
    JS("sweep", ri->sweep);
    JS("date", ri->date);
    JS("command", ri->command);
    const opts *o = ri->o;
    fprintf(f, ",\"protocol\":{\"timing\":\"%s\",\"statistic\":\"median\",\"inputs\":\"%s\"", ri->timing,
            o->normal ? "normal" : "uniform");
    const dm_protocol *pr = &o->protocol;
    if (!strcmp(ri->timing, "do_bench"))
        fprintf(f, ",\"warmup_ms\":%g,\"rep_ms\":%g,\"flush_mib\":%d", pr->warmup_ms, pr->rep_ms, DM_FLUSH_MIB);
    else
        fprintf(f, ",\"warmup\":%d,\"reps\":%d%s", pr->warmup, pr->reps,
                !strcmp(ri->timing, "burst") ? ",\"flush_mib\":" DM_STR(DM_FLUSH_MIB) : "");
    fputc('}', f);
    fputs(",\"rows\":[", f);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const shape *s = &r->s;
        row_nums x = nums_of(r);
        char fl[160];
        shape_flags(s, fl, sizeof fl);
        fprintf(f, "%s\n{\"mode\":\"%s\",\"dtype\":\"%s\"", i ? "," : "", r->decode ? "decode" : "prefill",
                pa_dtype_name(s->dtype));
        JS("backend", r->backend);
        JS("kernel", r->kernel);
        fprintf(f, ",\"batch\":%lld,\"seqlen_q\":%lld,\"seqlen_k\":%lld,\"tokens_q\":%lld,\"tokens_k\":%lld,"
                   "\"heads_q\":%lld,\"heads_kv\":%lld,\"head_dim_qk\":%lld,\"head_dim_v\":%lld,\"causal\":%s,"
                   "\"window_left\":%lld,\"window_right\":%lld,\"softcap\":%g,\"varlen\":%s,\"lse\":%s,\"layout\":\"%s\","
                   "\"page_size\":%lld",
                (long long)s->b, (long long)s->sq, (long long)s->sk, (long long)r->tokens_q, (long long)r->tokens_k,
                (long long)s->hq, (long long)s->hkv, (long long)s->d, (long long)s->dv, s->causal ? "true" : "false",
                (long long)s->wl, (long long)s->wr, s->softcap, s->varlen ? "true" : "false",
                s->lse ? "true" : "false", s->bhsd ? "bhsd" : "bshd", (long long)s->page);
        JS("flags", fl);
        JN("time_ms", x.ms); /* null when the row did not run */
        JN("time_us", x.us);
        JN("host_us_per_call", r->host_us >= 0 ? r->host_us : NAN);
        if (x.ms == x.ms) {
            JN("time_ms_p20", r->timing.p20_ms);
            JN("time_ms_p80", r->timing.p80_ms);
            fprintf(f, ",\"timed_calls\":%d", r->timing.reps);
            JS("timing", ri->timing);
        }
        JN("flops", r->flops);
        JN("tflops", x.tflops);
        JN("kv_bytes", r->kv_bytes);
        JN("kv_bytes_per_s", x.kv_Bps); /* decode rows */
        fprintf(f, ",\"kv_copies\":%d", r->kv_copies);
        JS("peak_name", r->peak_metric);
        JN("peak_value", x.peak_value);
        JS("peak_unit", r->decode ? "TB/s" : "TFLOPS");
        JS("peak_kind", r->peak ? r->peak->kind : "");
        JS("peak_date", r->peak ? r->peak->date : "");
        JS("peak_source", r->peak ? r->peak->source : "");
        JN("peak_fraction", x.peak_fraction);
        JS("peak_note", r->peak_note);
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

static void csv_str(FILE *f, const char *s) /* RFC 4180: quoted when it holds , " or a line break */
{
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double x)
{
    if (isfinite(x)) fprintf(f, "%.10g", x);
}

static int write_csv(const char *path, const run_info *ri, const row *rows, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("device,device_entry,sweep,mode,backend,kernel,dtype,batch,seqlen_q,seqlen_k,tokens_q,tokens_k,heads_q,"
          "heads_kv,head_dim_qk,head_dim_v,causal,window_left,window_right,softcap,varlen,lse,layout,page_size,flags,"
          "time_ms,time_us,flops,tflops,kv_bytes,kv_bytes_per_s,kv_copies,peak_name,peak_value,peak_unit,peak_kind,"
          "peak_date,peak_source,peak_fraction,peak_note,check,check_ref,o_max_abs,o_rel_l2,lse_max_abs,lse_rel_l2,"
          "message\n", f);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const shape *s = &r->s;
        row_nums x = nums_of(r);
        char fl[160];
        shape_flags(s, fl, sizeof fl);
#define S(val) (csv_str(f, val), fputc(',', f))
#define N(val) (csv_num(f, val), fputc(',', f))
        S(ri->device); S(ri->entry); S(ri->sweep); S(r->decode ? "decode" : "prefill"); S(r->backend);
        S(r->kernel); S(pa_dtype_name(s->dtype));
        fprintf(f, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%lld,%lld,%g,%d,%d,%s,%lld,", (long long)s->b,
                (long long)s->sq, (long long)s->sk, (long long)r->tokens_q, (long long)r->tokens_k, (long long)s->hq,
                (long long)s->hkv, (long long)s->d, (long long)s->dv, s->causal, (long long)s->wl, (long long)s->wr,
                s->softcap, s->varlen, s->lse, s->bhsd ? "bhsd" : "bshd", (long long)s->page);
        S(fl);
        N(x.ms); N(x.us); N(r->flops); N(x.tflops); N(r->kv_bytes); N(x.kv_Bps);
        fprintf(f, "%d,", r->kv_copies);
        S(r->peak_metric); N(x.peak_value); S(r->decode ? "TB/s" : "TFLOPS");
        S(r->peak ? r->peak->kind : ""); S(r->peak ? r->peak->date : ""); S(r->peak ? r->peak->source : "");
        N(x.peak_fraction); S(r->peak_note); S(r->check); S(r->check_ref);
        if (r->check_ref[0]) { N(r->o_maxabs); N(r->o_rel); } else fputs(",,", f);
        if (r->check_ref[0] && s->lse) { N(r->lse_maxabs); N(r->lse_rel); } else fputs(",,", f);
        csv_str(f, r->msg);
        fputc('\n', f);
#undef S
#undef N
    }
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
               info.available ? "yes" : "no", dm_kind_name(dm_kind_of(info.backend)), info.detail);
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
                 dm_kind_name(*kind), w);
        return -1;
    }
    return 0;
}


/* Reads the device table and finds this device in it; prints what it found. 0, or 2 when a table
 * given with --devices cannot be read. */
static int find_device(opts *o, dt_table *tab, run_info *ri)
{
    char why[600];
    ri->entry = "unknown device";
    ri->table = "";
    if (dt_load(o->devices, tab, why, sizeof why)) {
        fprintf(stderr, "portattn-bench: %s\n", why);
        if (o->devices || o->device_entry) return 2;
        printf("# device table: none (%s): no percentage of peak\n", why);
        return 0;
    }
    o->have_table = 1;
    ri->table = tab->path;
    for (int i = 0; o->device_entry && i < tab->n; i++)
        if (!strcasecmp(tab->dev[i].name, o->device_entry)) o->dev = &tab->dev[i];
    if (o->device_entry && !o->dev) {
        fprintf(stderr, "portattn-bench: --device-entry '%s' is not in %s; its entries:", o->device_entry, tab->path);
        for (int i = 0; i < tab->n; i++) fprintf(stderr, "%s '%s'", i ? "," : "", tab->dev[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    if (!o->dev && !(o->dev = dt_match(tab, o->device))) {
        printf("# device table %s: '%s' is an unknown device: no percentage of peak\n", tab->path, o->device);
        return 0;
    }
    ri->entry = o->dev->name;
    printf("# device table %s: %s; %%peak of", tab->path, o->dev->name);
    static const char *const metrics[] = {"bf16_tflops", "fp16_tflops", "hbm_TBps"};
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const dt_peak *p = dt_peak_of(o->dev, metrics[i], o->prefer_measured);
        if (p) printf("%s %s %g (%s%s%s)", i ? "," : "", metrics[i], p->value, p->kind, p->date[0] ? " " : "", p->date);
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    static dt_table tab; /* large: not on the stack */
    opts o;
    memset(&o, 0, sizeof o);
    shape_in_init(&o.in);
    o.backend = PORTATTN_BACKEND_AUTO;
    o.check = -1;
    o.check_limit = 2e10; /* ~10-30 s of the double-precision CPU reference */
    o.prefer_measured = 1;
    o.normal = 1;
    o.warmup_ms = 25;
    o.rep_ms = 100;
    int list = 0, rc = parse_args(argc, argv, &o, &list);
    if (rc) return rc == 1 ? 0 : 2;
    if (list) return list_backends();

    dm_kind kind = DM_HOST;
    char why[400];
    if (choose_kind(o.backend, &kind, why, sizeof why)) {
        fprintf(stderr, "portattn-bench: %s\n", why);
        return 1;
    }
    if ((o.sweep == SWEEP_PREFILL || o.sweep == SWEEP_DECODE) && kind == DM_HOST && !o.force) {
        fprintf(stderr, "portattn-bench: the %s sweep on the CPU backend would take %s; pass --force to run it "
                        "anyway (with short --sweep-seqlens for a quick one)\n", sweep_names[o.sweep],
                o.sweep == SWEEP_PREFILL ? "hours" : "many minutes and 17 GB of memory");
        return 2;
    }
    if (kind != DM_HOST && !o.burst && (o.warmup >= 0 || o.reps >= 1)) {
        fprintf(stderr, "portattn-bench: --warmup/--reps count calls only with --burst; on a GPU the default "
                        "times by --warmup-ms/--rep-ms as do_bench\n");
        return 2;
    }
    shape_in *si = &o.in;
    if (o.sweep == SWEEP_NONE && !shape_dims_given(si)) { /* the default "main job": seconds on a CPU, a
                                                          * real load on a GPU, both small enough for the CPU
                                                          * reference check */
        si->b = 1;
        if (kind == DM_HOST) { si->sq = si->sk = 1024; si->hq = 8; si->d = 64; }
        else { si->sq = si->sk = 2048; si->hq = 16; si->d = 128; }
        if (o.check < 0) o.check = 1;
    }
    shape one;
    finish_shape(si, o.dtypes[0], &one); /* validated by parse_args */
    plan pl = {NULL, 0, 0};
    if ((rc = make_plan(&o, &one, &pl))) { free(pl.s); return rc; }

    int v = portattn_version();
    run_info ri;
    memset(&ri, 0, sizeof ri);
    o.device = ri.device = dm_device_name(kind);
    ri.sweep = sweep_names[o.sweep];
    ri.timing = timing_name(&o, kind);
    o.protocol = (dm_protocol){o.warmup_ms, o.rep_ms, o.burst || kind == DM_HOST,
                               o.warmup >= 0 ? o.warmup : kind == DM_HOST ? 1 : 5, o.reps >= 1 ? o.reps : kind == DM_HOST ? 3 : 20};
    ri.o = &o;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    ri.date = date;
    for (int i = 0, k = 0; i < argc; i++) /* the command line, for the record */
        k += snprintf(ri.command + k, k < (int)sizeof ri.command ? sizeof ri.command - (size_t)k : 0, "%s%s",
                      i ? " " : "", argv[i]);
    printf("# portattn-bench: portattn %d.%d.%d, device: %s, memory: %s%s%s\n", v / 10000, v / 100 % 100, v % 100,
           ri.device, dm_kind_name(kind), getenv("PORTATTN_BACKEND") ? ", PORTATTN_BACKEND=" : "",
           getenv("PORTATTN_BACKEND") ? getenv("PORTATTN_BACKEND") : "");
    if ((rc = find_device(&o, &tab, &ri))) { free(pl.s); return rc; }
    if (!strcmp(ri.timing, "do_bench"))
        printf("# timing: do_bench protocol, %g ms warm-up, %g ms of timed calls, %d MiB L2 flush before each, "
               "median; inputs %s\n", o.warmup_ms, o.rep_ms, DM_FLUSH_MIB, o.normal ? "standard normal" : "uniform [-1, 1)");
    else
        printf("# timing: %s, median of a fixed count of calls%s; inputs %s\n", ri.timing,
               o.burst ? " (BURST: not the peers' protocol, rows marked \"burst\")" : "",
               o.normal ? "standard normal" : "uniform [-1, 1)");
    print_header();
    fflush(stdout); /* before the progress line on stderr, which may go to the same log */

    row *rows = (row *)calloc((size_t)pl.n, sizeof(row));
    if (!rows) { fprintf(stderr, "portattn-bench: out of host memory\n"); free(pl.s); return 1; }
    rng gen = {o.seed};
    int failed = 0, nfailed = 0;
    progress.on = o.sweep != SWEEP_NONE;
    progress.tty = isatty(fileno(stderr));
    progress.t0 = now_s();
    for (int i = 0; i < pl.n; i++) {
        progress_show(i, pl.n, &pl.s[i]);
        int f = run_shape(&o, &pl.s[i], kind, &gen, &rows[i]);
        fflush(stdout); /* the check line too, before the next progress line */
        failed |= f;
        nfailed += f;
    }
    progress_clear();
    if (progress.on)
        fprintf(stderr, "portattn-bench: %d rows in %.1f s, %d failed\n", pl.n, now_s() - progress.t0, nfailed);
    print_host_cost(rows, pl.n);
    const struct { const char *path; int (*write)(const char *, const run_info *, const row *, int); } outs[] = {
        {o.json, write_json}, {o.csv, write_csv}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        if (!outs[i].path) continue;
        if (outs[i].write(outs[i].path, &ri, rows, pl.n)) {
            fprintf(stderr, "portattn-bench: cannot write %s\n", outs[i].path);
            failed = 1;
        } else {
            printf("# wrote %s\n", outs[i].path);
        }
    }
    free(rows);
    free(pl.s);
    return failed ? 1 : 0;
}
