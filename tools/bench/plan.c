/* The rows to run: the one shape of the command line, a named sweep (FlashAttention's prefill grid,
 * or decode against long KV caches) or the shapes of a --sweep-file. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

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
int make_plan(const opts *o, const shape *one, plan *pl)
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
