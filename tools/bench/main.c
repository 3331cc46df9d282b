/* portattn-bench: times portattn_forward on one shape, on a named sweep (the docs/design.md section 7
 * prefill sweep, or decode: one query token against long KV caches) or on a list of shapes from a
 * file, and reports TFLOPS (decode: effective KV bytes/s) with the fraction of the device's peak from
 * the device table (tools/devices.json). With --check it compares the result with the CPU reference
 * (or with the generic CUDA kernel when the problem is too large for the CPU). The parts: bench.h. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bench.h"

const char *const sweep_names[] = {"single", "prefill", "decode", "file"};

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

static void opts_defaults(opts *o)
{
    memset(o, 0, sizeof *o);
    shape_in_init(&o->in);
    o->backend = PORTATTN_BACKEND_AUTO;
    o->check = -1;
    o->check_limit = 2e10; /* ~10-30 s of the double-precision CPU reference */
    o->prefer_measured = 1;
    o->normal = 1;
    o->warmup_ms = 25;
    o->rep_ms = 100;
}

/* The rules that need the memory kind; then the default shape where none was given. 0, or 2. */
static int fit_to_kind(opts *o, dm_kind kind)
{
    if ((o->sweep == SWEEP_PREFILL || o->sweep == SWEEP_DECODE) && kind == DM_HOST && !o->force) {
        fprintf(stderr, "portattn-bench: the %s sweep on the CPU backend would take %s; pass --force to run it "
                        "anyway (with short --sweep-seqlens for a quick one)\n", sweep_names[o->sweep],
                o->sweep == SWEEP_PREFILL ? "hours" : "many minutes and 17 GB of memory");
        return 2;
    }
    if (kind != DM_HOST && !o->burst && (o->warmup >= 0 || o->reps >= 1)) {
        fprintf(stderr, "portattn-bench: --warmup/--reps count calls only with --burst; on a GPU the default "
                        "times by --warmup-ms/--rep-ms as do_bench\n");
        return 2;
    }
    shape_in *si = &o->in;
    if (o->sweep == SWEEP_NONE && !shape_dims_given(si)) { /* the default "main job": seconds on a CPU, a
                                                           * real load on a GPU, both small enough for the
                                                           * CPU reference check */
        si->b = 1;
        if (kind == DM_HOST) { si->sq = si->sk = 1024; si->hq = 8; si->d = 64; }
        else { si->sq = si->sk = 2048; si->hq = 16; si->d = 128; }
        if (o->check < 0) o->check = 1;
    }
    return 0;
}

/* The record of the run (device, sweep, timing, date, command line); `date` holds its text. */
static void describe_run(opts *o, dm_kind kind, int argc, char **argv, char date[32], run_info *ri)
{
    memset(ri, 0, sizeof *ri);
    ri->launch_floor_us = -1;
    o->device = ri->device = dm_device_name(kind);
    ri->sweep = sweep_names[o->sweep];
    ri->timing = timing_name(o, kind);
    o->protocol = timing_protocol(o, kind);
    ri->o = o;
    time_t now = time(NULL);
    strftime(date, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    ri->date = date;
    for (int i = 0, k = 0; i < argc; i++) /* the command line, for the record */
        k += snprintf(ri->command + k, k < (int)sizeof ri->command ? sizeof ri->command - (size_t)k : 0, "%s%s",
                      i ? " " : "", argv[i]);
}

static void print_banner(dm_kind kind, const run_info *ri)
{
    int v = portattn_version();
    printf("# portattn-bench: portattn %d.%d.%d, device: %s, memory: %s%s%s\n", v / 10000, v / 100 % 100, v % 100,
           ri->device, dm_kind_name(kind), getenv("PORTATTN_BACKEND") ? ", PORTATTN_BACKEND=" : "",
           getenv("PORTATTN_BACKEND") ? getenv("PORTATTN_BACKEND") : "");
}

static void print_protocol(const opts *o, const run_info *ri)
{
    if (!strcmp(ri->timing, "do_bench"))
        printf("# timing: do_bench protocol, %g ms warm-up, %g ms of timed calls, %d MiB L2 flush before each, "
               "median; inputs %s\n", o->warmup_ms, o->rep_ms, DM_FLUSH_MIB, o->normal ? "standard normal" : "uniform [-1, 1)");
    else
        printf("# timing: %s, median of a fixed count of calls%s; inputs %s\n", ri->timing,
               o->burst ? " (BURST: not the peers' protocol, rows marked \"burst\")" : "",
               o->normal ? "standard normal" : "uniform [-1, 1)");
    print_header();
    fflush(stdout); /* before the progress line on stderr, which may go to the same log */
}

/* Runs every row of the plan into rows[]; 1 if any failed. */
static int run_rows(const opts *o, const plan *pl, dm_kind kind, row *rows)
{
    rng gen = {o->seed};
    int failed = 0, nfailed = 0;
    progress_start(o->sweep != SWEEP_NONE);
    for (int i = 0; i < pl->n; i++) {
        progress_show(i, pl->n, &pl->s[i]);
        int f = run_shape(o, &pl->s[i], kind, &gen, &rows[i]);
        fflush(stdout); /* the check line too, before the next progress line */
        failed |= f;
        nfailed += f;
    }
    progress_end(pl->n, nfailed);
    return failed;
}

/* The --json and --csv files; 1 if one could not be written. */
static int write_outputs(const opts *o, const run_info *ri, const row *rows, int n)
{
    const struct { const char *path; int (*write)(const char *, const run_info *, const row *, int); } outs[] = {
        {o->json, write_json}, {o->csv, write_csv}};
    int failed = 0;
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        if (!outs[i].path) continue;
        if (outs[i].write(outs[i].path, ri, rows, n)) {
            fprintf(stderr, "portattn-bench: cannot write %s\n", outs[i].path);
            failed = 1;
        } else {
            printf("# wrote %s\n", outs[i].path);
        }
    }
    return failed;
}

int main(int argc, char **argv)
{
    static dt_table tab; /* large: not on the stack */
    opts o;
    opts_defaults(&o);
    int list = 0, rc = parse_args(argc, argv, &o, &list);
    if (rc) return rc == 1 ? 0 : 2;
    if (list) return list_backends();

    dm_kind kind = DM_HOST;
    char why[400];
    if (choose_kind(o.backend, &kind, why, sizeof why)) {
        fprintf(stderr, "portattn-bench: %s\n", why);
        return 1;
    }
    if ((rc = fit_to_kind(&o, kind))) return rc;
    shape one;
    finish_shape(&o.in, o.dtypes[0], &one); /* validated by parse_args */
    plan pl = {NULL, 0, 0};
    if ((rc = make_plan(&o, &one, &pl))) { free(pl.s); return rc; }

    run_info ri;
    char date[32];
    describe_run(&o, kind, argc, argv, date, &ri);
    print_banner(kind, &ri);
    if ((rc = find_device(&o, &tab, &ri))) { free(pl.s); return rc; }
    print_protocol(&o, &ri);

    row *rows = (row *)calloc((size_t)pl.n, sizeof(row));
    if (!rows) { fprintf(stderr, "portattn-bench: out of host memory\n"); free(pl.s); return 1; }
    int failed = run_rows(&o, &pl, kind, rows);
    /* the floor in the same process and run, so that the host cost is read against what one launch costs */
    ri.launch_floor_us = -1;
    if (kind != DM_HOST) (void)dm_launch_floor(kind, 256, &ri.launch_floor_us);
    print_host_cost(rows, pl.n, ri.launch_floor_us);
    failed |= write_outputs(&o, &ri, rows, pl.n);
    free(rows);
    free(pl.s);
    return failed ? 1 : 0;
}
