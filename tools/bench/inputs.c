/* A row's inputs: random numbers (splitmix64, uniform [-1, 1) or standard normal), the --varlen
 * lengths and the paged block table (fixed seeds, the same on every run and machine), and the host
 * and device buffers they live in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "half.h"

#define VARLEN_SEED 0x5EEDu /* fixed: the same --varlen lengths on every run and machine */
#define PAGE_SEED 0x9A6Eu   /* fixed: the same --page-size block table on every run and machine */

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

void fill_random(void *dst, portattn_dtype_t t, size_t n, rng *r, int normal)
{
    for (size_t i = 0; i < n; i++) {
        double x = 2.0 * rng_unit(r) - 1.0;
        if (normal) x = sqrt(-2.0 * log(1.0 - rng_unit(r))) * cos(6.283185307179586 * rng_unit(r));
        pa_store_elem(t, dst, (int64_t)i, (float)x);
    }
}

int varlen_lengths(const shape *s, bufs *b, extent *e, row *r)
{
    rng lr = {VARLEN_SEED}; /* reproducible whatever --seed says */
    if (!(b->hcu_q = malloc(sizeof(int32_t) * (size_t)(s->b + 1))) ||
        !(b->hcu_k = malloc(sizeof(int32_t) * (size_t)(s->b + 1))))
        return row_error(r, "out of host memory");
    b->hcu_q[0] = b->hcu_k[0] = 0;
    e->tq = e->tk = e->maxq = e->maxk = 0;
    for (int64_t i = 0; i < s->b; i++) {
        int64_t lq = 1 + (int64_t)(rng_unit(&lr) * (double)s->sq);
        int64_t lk = s->sk == s->sq ? lq : 1 + (int64_t)(rng_unit(&lr) * (double)s->sk);
        if (e->tq + lq > INT32_MAX || e->tk + lk > INT32_MAX) return row_error(r, "varlen: more than 2^31 packed tokens");
        e->tq += lq; e->tk += lk;
        e->maxq = lq > e->maxq ? lq : e->maxq; e->maxk = lk > e->maxk ? lk : e->maxk;
        b->hcu_q[i + 1] = (int32_t)e->tq; b->hcu_k[i + 1] = (int32_t)e->tk;
    }
    return 0;
}

int serve_lengths(const shape *s, bufs *b, extent *e, row *r)
{
    if (!(b->hcu_q = malloc(sizeof(int32_t) * (size_t)(s->b + 1))) ||
        !(b->hused = malloc(sizeof(int32_t) * (size_t)s->b)))
        return row_error(r, "out of host memory");
    b->hcu_q[0] = 0;
    *e = (extent){0, s->b * s->sk, 0, s->sk};
    int64_t i = 0;
    for (int g = 0; g < s->nserve; g++)
        for (int64_t n = 0; n < s->serve_n[g]; n++, i++) {
            if (e->tq + s->serve_q[g] > INT32_MAX) return row_error(r, "serve: more than 2^31 packed tokens");
            e->tq += s->serve_q[g];
            e->maxq = s->serve_q[g] > e->maxq ? s->serve_q[g] : e->maxq;
            b->hcu_q[i + 1] = (int32_t)e->tq;
            b->hused[i] = (int32_t)s->sk;
        }
    return 0;
}

int make_block_table(dm_kind kind, int64_t num_pages, bufs *b, row *r)
{
    size_t btb = sizeof(int32_t) * (size_t)num_pages; /* the block table [B, pages_per_seq] */
    rng pr = {PAGE_SEED}; /* reproducible whatever --seed says */
    if (!(b->hbt = malloc(btb + 4))) return row_error(r, "out of host memory");
    for (int64_t i = 0; i < num_pages; i++) b->hbt[i] = (int32_t)i;
    for (int64_t i = num_pages - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)(rng_unit(&pr) * (double)(i + 1));
        j = j > i ? i : j;
        int32_t t = b->hbt[i]; b->hbt[i] = b->hbt[j]; b->hbt[j] = t;
    }
    if (!(b->dbt = (int32_t *)dm_alloc(kind, btb))) return row_error(r, "out of %s memory", kind == DM_HOST ? "host" : "device");
    if (dm_upload(kind, b->dbt, b->hbt, btb)) return row_error(r, "upload failed");
    return 0;
}

int make_inputs(const opts *o, const shape *s, dm_kind kind, size_t copies, rng *gen, bufs *b, row *r)
{
    size_t es = (size_t)dtype_size(s->dtype), cub = sizeof(int32_t) * (size_t)(s->b + 1);
    b->hq = malloc(b->nq * es + 1); b->hk = malloc(b->nk * es + 1); b->hv = malloc(b->nv * es + 1);
    b->ho = malloc(b->no * es + 1); b->hlse = (float *)malloc(b->nlse * sizeof(float) + 4);
    b->dq = dm_alloc(kind, b->nq * es); b->dk = dm_alloc(kind, copies * b->nk * es);
    b->dv = dm_alloc(kind, copies * b->nv * es);
    b->dout = dm_alloc(kind, b->no * es); b->dlse = (float *)dm_alloc(kind, b->nlse * sizeof(float));
    if (s->varlen) { b->dcu_q = (int32_t *)dm_alloc(kind, cub); b->dcu_k = (int32_t *)dm_alloc(kind, cub); }
    if (s->nserve) { b->dcu_q = (int32_t *)dm_alloc(kind, cub); b->dused = (int32_t *)dm_alloc(kind, cub); }
    if (!b->hq || !b->hk || !b->hv || !b->ho || !b->hlse || !b->dq || !b->dk || !b->dv || !b->dout || !b->dlse ||
        (s->varlen && (!b->dcu_q || !b->dcu_k)) || (s->nserve && (!b->dcu_q || !b->dused)))
        return row_error(r, "out of %s memory", kind == DM_HOST ? "host" : "device");
    /* fresh random inputs for every row: a kernel that ignores its inputs cannot pass */
    fill_random(b->hq, s->dtype, b->nq, gen, o->normal);
    fill_random(b->hk, s->dtype, b->nk, gen, o->normal);
    fill_random(b->hv, s->dtype, b->nv, gen, o->normal);
    if (dm_upload(kind, b->dq, b->hq, b->nq * es) ||
        (s->varlen && (dm_upload(kind, b->dcu_q, b->hcu_q, cub) || dm_upload(kind, b->dcu_k, b->hcu_k, cub))) ||
        (s->nserve && (dm_upload(kind, b->dcu_q, b->hcu_q, cub) ||
                       dm_upload(kind, b->dused, b->hused, cub - sizeof(int32_t)))))
        return row_error(r, "upload failed");
    for (size_t i = 0; i < copies; i++) /* K/V copies for the timing protocol (timing.c) */
        if (dm_upload(kind, (char *)b->dk + i * b->nk * es, b->hk, b->nk * es) ||
            dm_upload(kind, (char *)b->dv + i * b->nv * es, b->hv, b->nv * es))
            return row_error(r, "upload failed");
    return 0;
}

void free_bufs(bufs *b, dm_kind kind)
{
    void *host[] = {b->hq, b->hk, b->hv, b->ho, b->href, b->hlse, b->hlse_ref, b->hcu_q, b->hcu_k, b->hbt, b->hused};
    void *dev[] = {b->dq, b->dk, b->dv, b->dout, b->dref, b->dlse, b->dlse_ref, b->dcu_q, b->dcu_k, b->dbt, b->dws,
                   b->dused};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) dm_free(kind, dev[i]);
}
