/* portattn-bench's shared types: a shape, the options of a run, the row each shape yields, and the
 * functions one part of the bench offers the others. Each concern lives in its own file:
 *   args.c    the command line and the shape flags (also the syntax of --sweep-file lines)
 *   plan.c    the rows to run: one shape, a named sweep or a sweep file
 *   inputs.c  random inputs, varlen lengths, the block table, the host and device buffers
 *   work.c    what a row counts: FLOPs and the keys it must read
 *   run.c     one shape: sizes, buffers, the portattn_forward call, its timing and peak
 *   timing.c  the timing protocol: the timed call and the K/V copies cycled through
 *   check.c   the oracle check against the CPU reference (or cuda-generic)
 *   table.c   the progress line and the printed table
 *   output.c  the JSON and CSV files
 *   devices.c the device table (tools/devices.json)
 *   main.c    the run from command line to exit code
 * Host C11 on the public API and devmem.h only, so that it measures exactly what a user calls. */
#ifndef PORTATTN_BENCH_H
#define PORTATTN_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "devices.h"
#include "devmem.h"
#include "portattn.h"

#define MAX_LIST 16
#define MAX_SERVE 8 /* --serve groups */

static inline int dtype_size(portattn_dtype_t t) { return t == PORTATTN_DTYPE_F32 ? 4 : 2; }

/* ---- shapes and options ------------------------------------------------------------------ */

typedef struct shape {
    portattn_dtype_t dtype;
    int64_t b, sq, sk, hq, hkv, d, dv;
    int causal, varlen, lse, bhsd;
    int64_t wl, wr; /* -1 = unbounded */
    int64_t page;   /* page size of a paged K/V cache; 0 = contiguous K/V */
    float softcap;
    /* --serve: a serving call, serve_n[i] sequences of serve_q[i] query tokens each (b their sum),
     * packed (cu_seqlens_q) over a KV cache of sk tokens per sequence (seqused_k; paged with page) */
    int nserve;
    int64_t serve_n[MAX_SERVE], serve_q[MAX_SERVE];
} shape;

/* A shape as given on the command line or on one --sweep-file line; -1 = not given. */
typedef struct shape_in {
    int64_t b, sq, sk, hq, hkv, d, dv, wl, wr;
    int64_t page; /* 0 = not given (contiguous K/V) */
    int causal, varlen, lse, bhsd;
    double softcap;
    char dtype[32]; /* "" = not given; with a sweep a comma list runs every shape once per dtype */
    int nserve;     /* --serve, as in shape */
    int64_t serve_n[MAX_SERVE], serve_q[MAX_SERVE];
} shape_in;

typedef enum sweep_kind { SWEEP_NONE, SWEEP_PREFILL, SWEEP_DECODE, SWEEP_FILE } sweep_kind;
extern const char *const sweep_names[]; /* by sweep_kind: "single", "prefill", "decode", "file" */

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

/* ---- one row of results ------------------------------------------------------------------ */

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

/* Records why a row failed in r->msg; returns 1 (failure) for `return row_error(...)`. */
int row_error(row *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same for a failed library call: "what: status: last error". */
int row_api_error(row *r, const char *what, portattn_status_t st);
/* Record why a row failed and leave through the function's `bail` label. */
#define BAIL(...) do { row_error(r, __VA_ARGS__); goto bail; } while (0)
#define BAIL_API(what, st) do { row_api_error(r, what, st); goto bail; } while (0)

/* What the run was: the device, its table entry and the command line. */
typedef struct run_info {
    const char *device, *entry, *table, *sweep, *date;
    const char *timing; /* "do_bench", "burst" or "host" */
    const opts *o;
    double launch_floor_us; /* host time of one empty-kernel launch in this run (-1 = none: the CPU) */
    char command[2048];
} run_info;

/* ---- args.c ------------------------------------------------------------------------------ */

/* Returns 0 to run, 1 to exit 0 (help printed), 2 for a usage error (message printed). */
int parse_args(int argc, char **argv, opts *o, int *list_backends);
void shape_in_init(shape_in *si);
int shape_dims_given(const shape_in *si);
/* 0: not a shape flag, 1: a shape switch, 2: a shape flag with a value. */
int shape_flag_kind(const char *name);
/* Applies one shape flag (v = its value, NULL for a switch); -1 for a bad value. */
int shape_flag_set(shape_in *si, const char *name, const char *v);
/* What a flag's value must be, for the "bad value" message ("" where the flag's help says it). */
const char *value_hint(const char *name);
/* Comma list of dtypes into out[3]; returns the count or -1. */
int parse_dtypes(const char *s, portattn_dtype_t *out);
/* The shape of `si` in `dtype`, with defaults for what was not given; NULL, or why it is invalid. */
const char *finish_shape(const shape_in *si, portattn_dtype_t dtype, shape *s);

/* ---- plan.c ------------------------------------------------------------------------------ */

typedef struct plan { shape *s; int n, cap; } plan;

/* The rows of a named sweep, of the sweep file, or the one shape. 0, else the exit code (message printed). */
int make_plan(const opts *o, const shape *one, plan *pl);

/* ---- inputs.c ---------------------------------------------------------------------------- */

typedef struct rng { uint64_t s; } rng;

double rng_unit(rng *r); /* uniform [0, 1) */
void fill_random(void *dst, portattn_dtype_t t, size_t n, rng *r, int normal);

/* Device and host buffers of one shape; every pointer NULL or owned. */
typedef struct bufs {
    size_t nq, nk, nv, no, nlse;
    void *hq, *hk, *hv, *ho, *href;
    float *hlse, *hlse_ref;
    int32_t *hcu_q, *hcu_k, *hbt; /* hbt: the block table of a paged row [B, pages per sequence] */
    int32_t *hused, *dused;       /* --serve: seqused_k */
    void *dq, *dk, *dv, *dout, *dref;
    float *dlse, *dlse_ref;
    int32_t *dcu_q, *dcu_k, *dbt;
    void *dws; /* split-KV workspace, sized by portattn_forward_workspace_size */
} bufs;

/* The real extent of a shape's sequences: token totals and longest sequences (packed with --varlen). */
typedef struct extent { int64_t tq, tk, maxq, maxk; } extent;

/* --varlen: B random lengths in [1, S] into b->hcu_q/hcu_k, the same on every run; 1 on failure. */
int varlen_lengths(const shape *s, bufs *b, extent *e, row *r);
/* --serve: cu_seqlens_q from the groups and seqused_k = Sk for every sequence; 1 on failure. */
int serve_lengths(const shape *s, bufs *b, extent *e, row *r);
/* A paged row's block table, every page once in a fixed random order, in host and kind memory. */
int make_block_table(dm_kind kind, int64_t num_pages, bufs *b, row *r);
/* Allocates the rest of b (K/V as `copies` copies) and uploads fresh random inputs; 1 on failure. */
int make_inputs(const opts *o, const shape *s, dm_kind kind, size_t copies, rng *gen, bufs *b, row *r);
void free_bufs(bufs *b, dm_kind kind);

/* ---- work.c ------------------------------------------------------------------------------ */

/* Forward FLOPs of one sequence of sq queries and sk keys, all heads. */
double seq_flops(const shape *s, int64_t sq, int64_t sk);
/* Keys one sequence must read at least once. */
double seq_keys(const shape *s, int64_t sq, int64_t sk);

/* ---- run.c ------------------------------------------------------------------------------- */

/* Allocates, fills, times and (optionally) checks one shape. Returns 0 on success, 1 on failure. */
int run_shape(const opts *o, const shape *s, dm_kind kind, rng *gen, row *r);

/* ---- timing.c ---------------------------------------------------------------------------- */

/* "host", "burst" or "do_bench": how this run times its calls. */
const char *timing_name(const opts *o, dm_kind kind);
/* The protocol of the options on this memory kind. */
dm_protocol timing_protocol(const opts *o, dm_kind kind);
/* K/V copies a decode row cycles through (--kv-copies, else enough to defeat L2). */
int kv_copy_count(const opts *o, double kv_bytes_one_copy);
/* Times portattn_forward(p) with K/V cycled through `copies` copies at k0/v0; 1 on failure (r->msg). */
int time_forward(const opts *o, dm_kind kind, portattn_fwd_params_t *p, char *k0, char *v0, size_t kbytes,
                 size_t vbytes, int copies, row *r);

/* ---- check.c ----------------------------------------------------------------------------- */

/* Reruns the tested backend on poisoned outputs, runs a reference and compares. 1 when it failed. */
int check_row(const opts *o, const shape *s, dm_kind kind, const portattn_fwd_params_t *p,
              portattn_backend_t tested, bufs *b, double macs, row *r);

/* ---- table.c ----------------------------------------------------------------------------- */

/* "causal window(L,R) softcap=X varlen lse bhsd page_size=P": what is not plain in a shape. */
void shape_flags(const shape *s, char *buf, size_t n);
void progress_start(int on);
void progress_show(int i, int n, const shape *s);
void progress_end(int n, int nfailed); /* clears the line; a sweep's summary */
void print_header(void);
void print_row(const row *r);
/* The median host time per portattn_forward over the GPU rows, beside the empty-launch floor. */
void print_host_cost(const row *rows, int n, double launch_floor_us);

/* ---- output.c ---------------------------------------------------------------------------- */

int write_json(const char *path, const run_info *ri, const row *rows, int n);
int write_csv(const char *path, const run_info *ri, const row *rows, int n);

#endif
