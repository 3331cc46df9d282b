/* portattn-bench's command line: --help, the shape flags (the same on --sweep-file lines), the run
 * and output options, and the rules that tie them together. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_PAGE_SIZE ((int64_t)1 << 20) /* the library's limit (portattn.h: a power of two) */
#define MAX_KV_COPIES 1024 /* --kv-copies */

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
        "  --serve N1xQ1,N2xQ2,...  a serving call: N1 sequences of Q1 query tokens, N2 of Q2, ... (up to 8\n"
        "                 groups; 'Q' alone = one sequence), packed (cu_seqlens_q) over a KV cache of --seqlen-k\n"
        "                 tokens per sequence (seqused_k; paged with --page-size), queries the last tokens\n"
        "                 (e.g. --serve 8x1,2x512 --seqlen-k 16384 --page-size 16: 8 decodes and 2 chunks)\n"
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
int parse_dtypes(const char *s, portattn_dtype_t *out)
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
#define FLAG(n) (!strcmp(name, n)) /* in a function with a `name` */

/* The flags of one shape: the same on the command line and on --sweep-file lines. */
static const char *const shape_switches[] = {"--causal", "--varlen", "--lse"};
static const char *const shape_valued[] = {"--batch", "--seqlen", "--seqlen-q", "--seqlen-k", "--heads-q",
    "--heads-kv", "--head-dim", "--head-dim-v", "--dtype", "--layout", "--window", "--softcap", "--page-size",
    "--serve"};

/* What a flag's value must be, for the "bad value" message ("" where the flag's help says it). */
const char *value_hint(const char *name)
{
    if (!strcmp(name, "--page-size")) return " (a power of two in [1, 2^20], or 0 for contiguous K/V)";
    if (!strcmp(name, "--kv-copies")) return " (an integer in [1, 1024])";
    return "";
}

/* 0: not a shape flag, 1: a shape switch, 2: a shape flag with a value. */
int shape_flag_kind(const char *name)
{
    return IN_LIST(name, shape_switches) ? 1 : IN_LIST(name, shape_valued) ? 2 : 0;
}

void shape_in_init(shape_in *si)
{
    memset(si, 0, sizeof *si);
    si->b = si->sq = si->sk = si->hq = si->hkv = si->d = si->dv = si->wl = si->wr = -1;
}

/* --serve "N1xQ1,N2xQ2,..." (or "Q": one sequence): groups of N sequences of Q query tokens. */
static int parse_serve(const char *v, shape_in *si)
{
    char buf[256];
    if (strlen(v) >= sizeof buf) return -1;
    strcpy(buf, v);
    si->nserve = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        if ((next = strchr(tok, ','))) *next++ = 0;
        char *x = strchr(tok, 'x');
        int64_t n = 1, q;
        if (x) {
            *x = 0;
            if (parse_i64(tok, 1, &n)) return -1;
            tok = x + 1;
        }
        if (parse_i64(tok, 0, &q) || si->nserve == MAX_SERVE || n > (1 << 20)) return -1;
        si->serve_n[si->nserve] = n, si->serve_q[si->nserve++] = q;
    }
    return 0;
}

/* Applies one shape flag (v = its value, NULL for a switch); -1 for a bad value. */
int shape_flag_set(shape_in *si, const char *name, const char *v)
{
    const struct { const char *name; int64_t *dst; } ints[] = {
        {"--batch", &si->b}, {"--seqlen-q", &si->sq}, {"--seqlen-k", &si->sk}, {"--heads-q", &si->hq},
        {"--heads-kv", &si->hkv}, {"--head-dim", &si->d}, {"--head-dim-v", &si->dv}};
    for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
        if (!strcmp(name, ints[j].name)) return parse_i64(v, 1, ints[j].dst);
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
    } else if (FLAG("--serve")) {
        if (parse_serve(v, si)) return -1;
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

int shape_dims_given(const shape_in *si)
{
    return si->b > 0 || si->sq > 0 || si->sk > 0 || si->hq > 0 || si->hkv > 0 || si->d > 0 || si->dv > 0;
}

/* The shape of `si` in `dtype`, with defaults for what was not given; NULL, or why it is invalid. */
const char *finish_shape(const shape_in *si, portattn_dtype_t dtype, shape *s)
{
    if (si->sq < 0 && si->sk > 0 && !si->nserve) return "--seqlen-k needs --seqlen-q or --seqlen (or --serve)";
    if (si->varlen && si->page > 0)
        return "--page-size and --varlen: a paged KV cache takes per-sequence K/V (block_table), not packed "
               "sequences (cu_seqlens); use one or the other";
    if (si->nserve && (si->varlen || si->b > 0 || si->sq > 0))
        return "--serve sets the sequences and their query tokens itself (not with --varlen, --batch, --seqlen-q "
               "or --seqlen; give the cache length with --seqlen-k)";
    if (si->nserve && si->sk <= 0) return "--serve needs --seqlen-k (the cached tokens of every sequence)";
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
    if (si->nserve) { /* b = the sequences, sq = the longest query run (for the table) */
        s->nserve = si->nserve;
        s->b = s->sq = 0;
        for (int i = 0; i < si->nserve; i++) {
            s->serve_n[i] = si->serve_n[i], s->serve_q[i] = si->serve_q[i];
            s->b += si->serve_n[i];
            s->sq = si->serve_q[i] > s->sq ? si->serve_q[i] : s->sq;
        }
        if (s->sq == 0) return "--serve: no query tokens at all";
        s->sk = si->sk;
    }
    return NULL;
}

/* The rules between options, once all are read (ndtypes and a --sweep-file's sweep set here); NULL
 * when they hold, else what is wrong. */
static const char *combination_error(opts *o)
{
    const shape_in *si = &o->in;
    int named = o->sweep == SWEEP_PREFILL || o->sweep == SWEEP_DECODE;
    o->ndtypes = parse_dtypes(si->dtype[0] ? si->dtype : "bf16", o->dtypes);
    if (o->sweep_file && !o->sweep) o->sweep = SWEEP_FILE;
    if (o->sweep_file && o->sweep != SWEEP_FILE) return "--sweep and --sweep-file: one or the other";
    if (o->ndtypes > 1 && o->sweep == SWEEP_NONE) return "a --dtype list needs a sweep";
    if (named && shape_dims_given(si)) return "--sweep sets batch, seqlens, heads and head dims itself";
    if (o->sweep == SWEEP_DECODE && (si->causal || si->varlen))
        return "--sweep decode: one query token sees the whole KV cache; --causal and --varlen do not apply";
    if (o->sweep == SWEEP_FILE && (shape_dims_given(si) || si->causal || si->varlen || si->lse || si->bhsd ||
                                   si->wl >= 0 || si->wr >= 0 || si->softcap > 0 || si->page > 0))
        return "--sweep-file: the shapes come from the file (only --dtype may be given, for lines without one)";
    if (!named && (o->nseqlens || o->ndims)) return "--sweep-seqlens/--sweep-dims need --sweep prefill or decode";
    if (o->nbatches && o->sweep != SWEEP_DECODE) return "--sweep-batches needs --sweep decode";
    shape tmp;
    return finish_shape(si, o->dtypes[0], &tmp); /* what the shape itself forbids */
}

/* Applies one run or output option with a value; 0, -1 for a bad value, 2 when the message is printed. */
static int set_option(opts *o, const char *name, const char *v)
{
    if (FLAG("--json")) o->json = v;
    else if (FLAG("--csv")) o->csv = v;
    else if (FLAG("--sweep-file")) o->sweep_file = v;
    else if (FLAG("--devices")) o->devices = v;
    else if (FLAG("--device-entry")) o->device_entry = v;
    else if (FLAG("--sweep-seqlens")) { if ((o->nseqlens = parse_list(v, o->seqlens)) < 0) return -1; }
    else if (FLAG("--sweep-dims")) { if ((o->ndims = parse_list(v, o->dims)) < 0) return -1; }
    else if (FLAG("--sweep-batches")) { if ((o->nbatches = parse_list(v, o->batches)) < 0) return -1; }
    else if (FLAG("--dist")) { if (strcmp(v, "uniform") && strcmp(v, "normal")) return -1; o->normal = v[0] == 'n'; }
    else if (FLAG("--peak")) { if (strcmp(v, "measured") && strcmp(v, "datasheet")) return -1; o->prefer_measured = v[0] == 'm'; }
    else if (FLAG("--check-limit")) { if (parse_f64(v, &o->check_limit)) return -1; }
    else if (FLAG("--warmup-ms")) { if (parse_f64(v, &o->warmup_ms) || !(o->warmup_ms >= 0 && o->warmup_ms <= 6e4)) return -1; }
    else if (FLAG("--rep-ms")) { if (parse_f64(v, &o->rep_ms) || !(o->rep_ms > 0 && o->rep_ms <= 6e5)) return -1; }
    else if (FLAG("--backend")) {
        int ok = 0;
        o->backend = portattn_backend_from_name(v, &ok);
        if (!ok) { fprintf(stderr, "portattn-bench: unknown backend '%s' (see --list-backends)\n", v); return 2; }
    }
    return 0;
}

/* Returns 0 to run, 1 to exit 0 (help printed), 2 for a usage error. */
int parse_args(int argc, char **argv, opts *o, int *list_backends)
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
        int known = 0, rc;
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
        if ((rc = set_option(o, name, v)) < 0) goto bad_value;
        if (rc) return rc;
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

    const char *err = combination_error(o);
    if (err) { fprintf(stderr, "portattn-bench: %s\n", err); return 2; }
    return 0;
}
