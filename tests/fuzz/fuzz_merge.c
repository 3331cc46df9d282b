/* libFuzzer target over portattn_merge on the host. The input bytes choose the dims, both dtypes
 * (invalid ones too), the strides of O, O_part and both LSEs (BSHD, BHSD, padded, broadcast or raw
 * values), NULL / aliased / misaligned pointers, struct_size and the backend (the CPU forced, AUTO
 * under some PORTATTN_BACKEND, one not compiled in, an invalid id), and LSE values (-inf, NaN, far
 * apart). Each buffer is allocated to exactly the extent the call describes, so AddressSanitizer
 * catches one element read or written out of bounds; descriptions too large to back with memory are
 * passed only when validation must reject them (int64 overflow). A refused call must carry a message
 * and leave O and the LSE as they were; an accepted one must match a per-row computation in double,
 * made before the call. Any violation aborts (a finding). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_bytes.h"
#include "half.h"
#include "portattn.h"
#include "problem.h"

enum { MAX_ELEMS = 1 << 16 };


/* Mostly small values, sometimes negative or huge. */
static int64_t take_dim(bytes *b, int64_t small)
{
    const uint8_t sel = (uint8_t)take(b, 1);
    if (sel < 215) return (int64_t)(take(b, 1) % (uint64_t)(small + 1));
    if (sel < 235) return -1 - (int64_t)(take(b, 1) % 4);
    return (int64_t)1 << (30 + take(b, 1) % 33);
}

static int64_t w(uint64_t x) { return (int64_t)x; } /* wrapping on purpose: validation must catch it */

/* Strides of a [d0, d1, d2, d3] view (d3 = 1 for an LSE). */
static void take_strides(bytes *b, const int64_t dim[4], int64_t st[4])
{
    const uint64_t pad = take(b, 1) % 3 * 4, d1 = (uint64_t)dim[1], d2 = (uint64_t)dim[2], d3 = (uint64_t)dim[3];
    switch (take(b, 1) % 5) {
    case 0: st[3] = 1, st[2] = w(d3 + pad), st[1] = w(d2 * (d3 + pad)), st[0] = w(d1 * d2 * (d3 + pad)); break;
    case 1: st[3] = 1, st[1] = w(d3 + pad), st[2] = w(d1 * (d3 + pad)), st[0] = w(d2 * d1 * (d3 + pad)); break;
    case 2: st[3] = 2, st[2] = w(2 * d3), st[1] = w(d2 * 2 * d3 + pad), st[0] = w(d1 * (d2 * 2 * d3 + pad)); break;
    case 3: for (int i = 0; i < 4; i++) st[i] = take_dim(b, 64); break;
    default: st[3] = 1, st[2] = w(d3), st[1] = w(d2 * d3), st[0] = 0; break; /* broadcast over the batch */
    }
}

/* Elements addressed by a view (its extent), 0 when empty, -1 when it overflows int64. */
static int64_t extent(const int64_t dim[4], const int64_t st[4])
{
    int64_t e = 1;
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0) return 0;
    for (int i = 0; i < 4; i++) {
        if (st[i] < 0) return -1;
        if (st[i] && dim[i] - 1 > (INT64_MAX - e) / st[i]) return -1;
        e += (dim[i] - 1) * st[i];
    }
    return e;
}

typedef struct side {
    int64_t dim[4], st[4], n; /* (b, s, h, d) view; LSE views as (b, s, h, 1) */
    unsigned char *buf;
} side;

static uint64_t mix(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

/* A buffer of exactly the view's extent with values: O in [-1, 1), LSEs from a mix of edge values. */
static int alloc_side(side *v, int elem, int lse, portattn_dtype_t dt, uint64_t *rng)
{
    v->n = extent(v->dim, v->st);
    v->buf = NULL;
    if (v->n < 0) { /* overflows: validation must refuse it before touching memory */
        v->buf = malloc(16);
        return 1;
    }
    if (v->n > MAX_ELEMS) return 0;
    v->buf = malloc((size_t)(v->n * elem) + 1);
    for (int64_t i = 0; i < v->n; i++) {
        const uint64_t x = mix(rng);
        const float u = (float)((double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        if (lse)
            ((float *)v->buf)[i] = x % 17 == 0 ? -INFINITY : x % 31 == 0 ? NAN : x % 13 == 0 ? 60.0f * u : 6.0f * u;
        else if (elem == pa_dtype_size(dt)) pa_store_elem(dt, v->buf, i, u);
    }
    return 1;
}

static int64_t at(const side *v, int64_t b, int64_t s, int64_t h)
{
    return b * v->st[0] + s * v->st[1] + h * v->st[2];
}

static void finding(const char *what, const portattn_merge_params_t *p)
{
    fprintf(stderr, "%s: status message \"%s\"; dtypes %d/%d B %lld S %lld H %lld D %lld\n", what,
            portattn_last_error(), (int)p->dtype, (int)p->dtype_part, (long long)p->batch, (long long)p->seqlen_q,
            (long long)p->heads_q, (long long)p->head_dim_v);
    const portattn_tensor_t *t[2] = {&p->o, &p->o_part};
    for (int i = 0; i < 2; i++)
        fprintf(stderr, "%s %p strides %lld %lld %lld %lld\n", i ? "o_part" : "o", t[i]->data,
                (long long)t[i]->stride[0], (long long)t[i]->stride[1], (long long)t[i]->stride[2],
                (long long)t[i]->stride[3]);
    fprintf(stderr, "lse %p strides %lld %lld %lld, lse_part %p strides %lld %lld %lld\n", (void *)p->lse,
            (long long)p->lse_stride[0], (long long)p->lse_stride[1], (long long)p->lse_stride[2],
            (const void *)p->lse_part, (long long)p->lse_part_stride[0], (long long)p->lse_part_stride[1],
            (long long)p->lse_part_stride[2]);
    abort();
}

/* The expected row in double (merge.h's contract), compared with what the call wrote. */
static int row_ok(const portattn_merge_params_t *p, const side *o, const side *op, const side *l, const side *lp,
                  const unsigned char *o_before, float l_before, int64_t b, int64_t s, int64_t h)
{
    const double x = l_before, y = ((const float *)lp->buf)[at(lp, b, s, h)];
    const double m = x > y ? x : y, got_l = ((const float *)l->buf)[at(l, b, s, h)];
    const int nan = isnan(x) || isnan(y), empty = !nan && m == -INFINITY;
    const double ex = nan || empty ? 0 : exp(x - m), ey = nan || empty ? 0 : exp(y - m), want_l = m + log(ex + ey);
    if (nan ? !isnan(got_l) : empty ? got_l != -INFINITY : !(fabs(got_l - want_l) <= 1e-5 * (1 + fabs(want_l))))
        return fprintf(stderr, "row (%lld, %lld, %lld): lse %g and %g merged to %g, expected %g\n", (long long)b,
                       (long long)s, (long long)h, x, y, got_l, want_l), 0;
    const portattn_dtype_t tp = p->dtype_part ? p->dtype_part : p->dtype; /* 0 = dtype */
    const double tol = p->dtype == PORTATTN_DTYPE_F32 ? 1e-5 : p->dtype == PORTATTN_DTYPE_F16 ? 2e-3 : 1.6e-2;
    for (int64_t d = 0; d < p->head_dim_v; d++) {
        const int64_t i = at(o, b, s, h) + d * o->st[3], j = at(op, b, s, h) + d * op->st[3];
        const double got = pa_load_elem(p->dtype, o->buf, i);
        if (nan) {
            if (!isnan(got)) return 0;
            continue;
        }
        double want = 0;
        if (x != -INFINITY) want += ex * pa_load_elem(p->dtype, o_before, i);
        if (y != -INFINITY) want += ey * pa_load_elem(tp, op->buf, j);
        want = empty ? 0 : want / (ex + ey);
        if (!(fabs(got - want) <= tol * (1 + fabs(want))))
            return fprintf(stderr, "row (%lld, %lld, %lld) lse %g, %g: o[%lld] = %g, expected %g (o %g, o_part %g)\n",
                           (long long)b, (long long)s, (long long)h, x, y, (long long)d, got, want,
                           pa_load_elem(p->dtype, o_before, i), pa_load_elem(tp, op->buf, j)), 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bytes b = {data, size};
    portattn_merge_params_t p;
    portattn_merge_params_init(&p);
    static const char *const env[] = {NULL, "cpu", "auto", "no-such-backend", "cuda-generic"};
    const uint8_t sel = (uint8_t)take(&b, 1);
    if (env[sel % 5]) setenv("PORTATTN_BACKEND", env[sel % 5], 1);
    else unsetenv("PORTATTN_BACKEND");
    p.backend = sel & 0x80 ? (portattn_backend_t)((sel >> 3) % 10) : PORTATTN_BACKEND_CPU;
    p.dtype = (portattn_dtype_t)(take(&b, 1) % 5), p.dtype_part = (portattn_dtype_t)(take(&b, 1) % 5);
    p.batch = take_dim(&b, 3), p.seqlen_q = take_dim(&b, 12);
    p.heads_q = take_dim(&b, 4), p.head_dim_v = take_dim(&b, 40);
    const uint8_t fl = (uint8_t)take(&b, 1);
    if (fl & 1) p.struct_size = (size_t)take(&b, 2);
    uint64_t rng = take(&b, 8) | 1;

    const portattn_dtype_t tp = p.dtype_part ? p.dtype_part : p.dtype;
    const int eo = pa_dtype_size(p.dtype) ? pa_dtype_size(p.dtype) : 2, ep = pa_dtype_size(tp) ? pa_dtype_size(tp) : 2;
    side o = {{p.batch, p.seqlen_q, p.heads_q, p.head_dim_v}, {0}, 0, NULL}, op = o;
    side l = {{p.batch, p.seqlen_q, p.heads_q, 1}, {0}, 0, NULL}, lp = l;
    take_strides(&b, o.dim, o.st), take_strides(&b, op.dim, op.st), take_strides(&b, l.dim, l.st);
    take_strides(&b, lp.dim, lp.st);
    l.st[3] = lp.st[3] = 0; /* an LSE has three strides */
    int ok = alloc_side(&o, eo, 0, p.dtype, &rng) & alloc_side(&op, ep, 0, tp, &rng) &
             alloc_side(&l, 4, 1, p.dtype, &rng) & alloc_side(&lp, 4, 1, p.dtype, &rng);
    if (ok) {
        memcpy(p.o.stride, o.st, sizeof o.st), memcpy(p.o_part.stride, op.st, sizeof op.st);
        p.lse_stride[0] = l.st[0], p.lse_stride[1] = l.st[2], p.lse_stride[2] = l.st[1];
        p.lse_part_stride[0] = lp.st[0], p.lse_part_stride[1] = lp.st[2], p.lse_part_stride[2] = lp.st[1];
        p.o.data = o.buf, p.o_part.data = op.buf, p.lse = (float *)l.buf, p.lse_part = (const float *)lp.buf;
        switch (fl >> 1 & 15) { /* a bad pointer now and then */
        case 1: p.o.data = NULL; break;
        case 2: p.lse_part = NULL; break;
        case 3: p.o_part.data = p.o.data; break;
        case 4: p.lse_part = p.lse; break;
        case 5: p.lse = (float *)p.o.data; break;
        case 6: p.o.data = o.buf ? o.buf + 1 : NULL; break;
        default: break;
        }
    }
    const size_t obytes = ok && o.n > 0 ? (size_t)(o.n * eo) : 0, lbytes = ok && l.n > 0 ? (size_t)(l.n * 4) : 0;
    unsigned char *o_before = ok && obytes ? malloc(obytes) : NULL, *l_before = ok && lbytes ? malloc(lbytes) : NULL;
    if (o_before) memcpy(o_before, o.buf, obytes);
    if (l_before) memcpy(l_before, l.buf, lbytes);

    const portattn_status_t st = ok ? portattn_merge(&p, NULL) : PORTATTN_SUCCESS;
    if (ok && st) {
        if (st > PORTATTN_ERROR_BACKEND_UNAVAILABLE || !portattn_last_error()[0]) finding("undocumented refusal", &p);
        if ((o_before && memcmp(o_before, o.buf, obytes)) || (l_before && memcmp(l_before, l.buf, lbytes)))
            finding("a refused call wrote its outputs", &p);
    } else if (ok && p.batch > 0 && p.seqlen_q > 0) {
        if (o.n < 0 || op.n < 0 || l.n < 0 || lp.n < 0) finding("an overflowing view was accepted", &p);
        for (int64_t bb = 0; bb < p.batch; bb++)
            for (int64_t s = 0; s < p.seqlen_q; s++)
                for (int64_t h = 0; h < p.heads_q; h++)
                    if (!row_ok(&p, &o, &op, &l, &lp, o_before, ((const float *)l_before)[at(&l, bb, s, h)], bb, s, h))
                        finding("a merged row differs from the double computation", &p);
    }
    free(o_before), free(l_before), free(o.buf), free(op.buf), free(l.buf), free(lp.buf);
    return 0;
}
