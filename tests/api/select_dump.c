/* select_dump: a differential record of the forward selector. Runs a fixed, seeded corpus of forward
 * calls (dtypes, head dims 8..264 with odd ones and Dqk != Dv, GQA, causal/window/softcap, varlen, KV
 * caches contiguous and paged, appends, decode and serving shapes, strided layouts, forced backends)
 * through portattn_forward_query and portattn_forward_workspace_size, and prints one line per call:
 * the status, backend, kernel, reason and last error of the query, then the workspace status, bytes
 * and last error. Nothing is launched. Two builds (two commits) on one machine must print the same
 * lines; `diff` shows where their selection differs.
 *
 * Tensors live in device memory where a CUDA device is present, else where a HIP device is (an AMD GPU,
 * or the simulated one of tests/sim/hip_fake, under which the HIP backends' routes and kernels show);
 * most calls, some staying in host memory so that the GPU backends' pointer refusals are exercised too.
 * Without a device, everything is in host memory. Public API and
 * tests/support/devmem only, so the file builds unchanged in older trees.
 * usage: select_dump [calls (default 4000)] [seed (default 20261204)] */
#define _POSIX_C_SOURCE 200809L
#define _ISOC11_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "portattn.h"

#define TENSOR_BYTES ((size_t)64 << 20) /* each tensor buffer; shapes are shrunk to fit */
#define META_INTS (1 << 16)             /* cu_seqlens, seqused_k, block_table entries */

enum { B_Q, B_K, B_V, B_O, B_LSE, B_KNEW, B_VNEW, B_WS, B_CUQ, B_CUK, B_USED, B_BT, B_COUNT };

typedef struct arena {
    dm_kind kind;
    void *buf[B_COUNT];
} arena;

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}
static int64_t range(int64_t lo, int64_t hi) { return hi <= lo ? lo : lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1)); }
static int chance(int percent) { return (int)(rnd() % 100) < percent; }
static int64_t pick(const int64_t *v, int n) { return v[rnd() % (uint32_t)n]; }

static int arena_init(arena *a, dm_kind kind)
{
    memset(a, 0, sizeof *a);
    a->kind = kind;
    for (int i = 0; i < B_COUNT; i++) {
        const size_t bytes = i >= B_CUQ ? META_INTS * sizeof(int32_t) : TENSOR_BYTES;
        a->buf[i] = kind == DM_HOST ? aligned_alloc(4096, bytes) : dm_alloc(kind, bytes); /* aligned: no address in a message */
        if (!a->buf[i]) return 0;
    }
    return 1;
}

static void arena_free(arena *a)
{
    for (int i = 0; i < B_COUNT; i++) {
        if (a->kind == DM_HOST)
            free(a->buf[i]);
        else if (a->buf[i])
            dm_free(a->kind, a->buf[i]);
        a->buf[i] = NULL;
    }
}

/* A head dim: mostly the instance dims, else any in 8..264 (odd ones too). */
static int64_t head_dim(void)
{
    static const int64_t common[] = {32, 64, 80, 96, 128, 160, 192, 256};
    if (chance(55)) return pick(common, 8);
    if (chance(50)) return 8 * range(1, 33);
    return range(8, 264);
}

/* Strides over (batch, seq, heads, dim) for layout 0 bshd, 1 bhsd, 2 padded rows, 3 dim stride 2. */
static void layout(portattn_tensor_t *t, int kind, int64_t s, int64_t h, int64_t d)
{
    const int64_t dp = kind == 2 ? d + 8 : d, m = kind == 3 ? 2 : 1;
    if (kind == 1) {
        t->stride[0] = h * s * d, t->stride[1] = d, t->stride[2] = s * d, t->stride[3] = 1;
    } else {
        t->stride[0] = s * h * dp * m, t->stride[1] = h * dp * m, t->stride[2] = dp * m, t->stride[3] = m;
    }
}

typedef struct shape {
    int mode; /* 0 dense, 1 varlen, 2 KV cache, 3 serving (packed queries over a cache) */
    int paged, append, lay;
    int64_t page_size;
    int32_t cuq[META_INTS / 4], cuk[META_INTS / 4], used[META_INTS / 4];
} shape;

static void fill_lengths(portattn_fwd_params_t *p, shape *s)
{
    const int64_t b = p->batch;
    if (s->mode == 1) { /* varlen: per-sequence lengths, packed */
        int64_t tq = 0, tk = 0, mq = 0, mk = 0;
        s->cuq[0] = s->cuk[0] = 0;
        for (int64_t i = 0; i < b; i++) {
            const int64_t lq = chance(10) ? 0 : range(1, p->seqlen_q), lk = chance(5) ? 0 : range(1, p->seqlen_k);
            tq += lq, tk += lk;
            mq = lq > mq ? lq : mq, mk = lk > mk ? lk : mk;
            s->cuq[i + 1] = (int32_t)tq, s->cuk[i + 1] = (int32_t)tk;
        }
        p->seqlen_q = tq, p->seqlen_k = tk;
        p->max_seqlen_q = chance(80) ? mq : 0, p->max_seqlen_k = chance(80) ? mk : 0;
    } else if (s->mode >= 2) { /* cache lengths within the capacity, minus the append */
        int64_t tq = 0, mq = 0;
        s->cuq[0] = 0;
        const int decodes = s->mode == 3 && chance(35);
        for (int64_t i = 0; i < b; i++) {
            int64_t u = chance(10) ? p->seqlen_k - p->seqlen_new : range(0, p->seqlen_k - p->seqlen_new);
            if (s->mode == 3) { /* queries are the last tokens of the cache */
                int64_t lq = decodes ? 1 : (chance(40) ? 1 : range(0, p->seqlen_q));
                lq = lq < p->seqlen_k ? lq : p->seqlen_k;
                if (u < lq) u = lq;
                tq += lq, mq = lq > mq ? lq : mq;
                s->cuq[i + 1] = (int32_t)tq;
            }
            s->used[i] = (int32_t)u;
        }
        if (s->mode == 3) {
            p->seqlen_q = tq;
            p->max_seqlen_q = chance(85) ? mq : 0;
        }
    }
}

/* Draws call i's params; tensors over the arena's buffers, metadata in s (uploaded by the caller). */
static void draw(portattn_fwd_params_t *p, shape *s, const arena *a)
{
    static const portattn_dtype_t dtypes[] = {PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_F32};
    static const int64_t groups[] = {1, 1, 2, 4, 5, 8, 16}, hkvs[] = {1, 2, 4, 8}, pages[] = {1, 4, 8, 16, 32, 64, 256};
    portattn_fwd_params_init(p);
    memset(s, 0, sizeof *s);
    p->dtype = dtypes[rnd() % 10 < 4 ? 0 : rnd() % 10 < 7 ? 1 : 2];
    p->head_dim_qk = head_dim();
    p->head_dim_v = chance(70) ? p->head_dim_qk : head_dim();
    p->heads_kv = pick(hkvs, 4);
    p->heads_q = p->heads_kv * pick(groups, 7);
    p->batch = chance(2) ? 0 : chance(50) ? range(1, 4) : range(1, 40);
    s->mode = (int)(rnd() % 4);
    const int decode = chance(30);
    p->seqlen_q = decode ? range(1, 16) : chance(50) ? range(1, 512) : range(17, 8192);
    p->seqlen_k = chance(3) ? 0 : chance(50) ? range(1, 1024) : range(1, 32768);
    if (chance(2)) p->seqlen_q = 0;
    if (s->mode >= 2) {
        if (p->seqlen_k < 1) p->seqlen_k = 1;
        s->paged = chance(50);
        s->append = s->mode == 2 && chance(30) && p->seqlen_q > 0;
        if (s->append) p->seqlen_new = range(1, p->seqlen_q < p->seqlen_k ? p->seqlen_q : p->seqlen_k);
        if (s->paged) s->page_size = pick(pages, 7);
    }
    if (s->mode == 1 && p->batch == 0) p->batch = 1;
    /* shrink until every tensor fits its buffer and the metadata its arrays */
    const int64_t elem = p->dtype == PORTATTN_DTYPE_F32 ? 4 : 2, cap = (int64_t)(TENSOR_BYTES / 8) / elem;
    const int64_t dmax = p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v;
    while (p->batch * (p->seqlen_q + p->seqlen_k) * p->heads_q * dmax > cap && (p->seqlen_q > 1 || p->seqlen_k > 1)) {
        p->seqlen_q = p->seqlen_q > 1 ? p->seqlen_q / 2 : p->seqlen_q;
        p->seqlen_k = p->seqlen_k > 1 ? p->seqlen_k / 2 : p->seqlen_k;
    }
    while (p->batch * (p->seqlen_q + p->seqlen_k) * p->heads_q * dmax > cap && p->batch > 1) p->batch /= 2;
    if (p->seqlen_new > p->seqlen_k || p->seqlen_new > p->seqlen_q) p->seqlen_new = p->seqlen_q < p->seqlen_k ? p->seqlen_q : p->seqlen_k;
    if (s->append && p->seqlen_new < 1) s->append = 0, p->seqlen_new = 0;
    fill_lengths(p, s);

    s->lay = chance(60) ? 0 : chance(50) ? 1 : chance(80) ? 2 : 3;
    const int packed_q = s->mode == 1 || s->mode == 3, packed_k = s->mode == 1;
    p->q.data = a->buf[B_Q], p->o.data = a->buf[B_O], p->k.data = a->buf[B_K], p->v.data = a->buf[B_V];
    layout(&p->q, s->lay, p->seqlen_q, p->heads_q, p->head_dim_qk);
    layout(&p->o, s->lay == 3 ? 0 : s->lay, p->seqlen_q, p->heads_q, p->head_dim_v);
    if (s->paged) {
        const int64_t per = (p->seqlen_k + s->page_size - 1) / s->page_size;
        p->page_size = s->page_size;
        p->num_pages = (p->batch > 0 ? p->batch : 1) * per + (chance(30) ? range(1, 8) : 0);
        p->block_table_stride = per + (chance(30) ? range(1, 3) : 0);
        layout(&p->k, s->lay, s->page_size, p->heads_kv, p->head_dim_qk);
        layout(&p->v, s->lay, s->page_size, p->heads_kv, p->head_dim_v);
        if (p->num_pages * p->page_size * p->heads_kv * dmax * (s->lay == 3 ? 2 : 1) > cap) { /* too big: contiguous */
            s->paged = 0, p->page_size = p->num_pages = p->block_table_stride = 0;
        }
    }
    if (!s->paged) {
        layout(&p->k, s->lay, p->seqlen_k, p->heads_kv, p->head_dim_qk);
        layout(&p->v, s->lay, p->seqlen_k, p->heads_kv, p->head_dim_v);
    }
    if (chance(50)) {
        p->lse = (float *)a->buf[B_LSE];
        if (packed_q) p->lse_stride[0] = 0, p->lse_stride[1] = p->seqlen_q, p->lse_stride[2] = 1;
        else p->lse_stride[0] = p->heads_q * p->seqlen_q, p->lse_stride[1] = p->seqlen_q, p->lse_stride[2] = 1;
    }
    if (packed_q) p->cu_seqlens_q = (const int32_t *)a->buf[B_CUQ];
    if (packed_k) p->cu_seqlens_k = (const int32_t *)a->buf[B_CUK];
    if (s->mode >= 2 && (!s->paged || chance(80) || s->append || s->mode == 3)) p->seqused_k = (const int32_t *)a->buf[B_USED];
    if (s->mode == 3 && s->paged == 0 && !p->seqused_k) p->seqused_k = (const int32_t *)a->buf[B_USED];
    if (s->paged) p->block_table = (const int32_t *)a->buf[B_BT];
    if (s->append && p->seqused_k) {
        p->k_new.data = a->buf[B_KNEW], p->v_new.data = a->buf[B_VNEW];
        layout(&p->k_new, 0, p->seqlen_new, p->heads_kv, p->head_dim_qk);
        layout(&p->v_new, 0, p->seqlen_new, p->heads_kv, p->head_dim_v);
    } else {
        p->seqlen_new = 0;
    }
    if (chance(30)) p->causal = 1;
    if (chance(15)) p->window_left = range(0, 600), p->window_right = chance(50) ? -1 : range(0, 64);
    if (chance(15)) p->softcap = (float)range(5, 50);
    if (chance(20)) p->softmax_scale = 0.05f * (float)range(1, 20);
    if (chance(25)) p->num_splits = chance(40) ? 1 : (int)range(2, 160);
    if (chance(15)) p->workspace = a->buf[B_WS], p->workspace_size = chance(50) ? TENSOR_BYTES : 4096;
    p->backend = chance(50) ? PORTATTN_BACKEND_AUTO : (portattn_backend_t)range(1, PORTATTN_BACKEND_COUNT_ - 1);
}

/* The page table: every sequence's pages distinct, dealt from a shuffled pool. */
static void fill_table(const portattn_fwd_params_t *p, int32_t *bt, int64_t n)
{
    const int64_t per = (p->seqlen_k + p->page_size - 1) / p->page_size;
    int32_t *perm = malloc(sizeof *perm * (size_t)(p->num_pages > 0 ? p->num_pages : 1));
    for (int64_t i = 0; i < p->num_pages; i++) perm[i] = (int32_t)i;
    for (int64_t i = p->num_pages - 1; i > 0; i--) {
        const int64_t j = rnd() % (uint32_t)(i + 1);
        const int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) bt[i] = 0;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t j = 0; j < per; j++) bt[b * p->block_table_stride + j] = perm[(b * per + j) % p->num_pages];
    free(perm);
}

static int put(const arena *a, int which, const void *src, size_t bytes)
{
    if (a->kind == DM_HOST) return memcpy(a->buf[which], src, bytes), 0;
    return dm_upload(a->kind, a->buf[which], src, bytes);
}

static int upload(const portattn_fwd_params_t *p, shape *s, const arena *a)
{
    static int32_t bt[META_INTS];
    const size_t meta = META_INTS * sizeof(int32_t);
    if ((p->batch + 1) * (int64_t)sizeof(int32_t) > (int64_t)(META_INTS / 4 * sizeof(int32_t))) return 1;
    int e = put(a, B_CUQ, s->cuq, (size_t)(p->batch + 1) * sizeof(int32_t));
    e |= put(a, B_CUK, s->cuk, (size_t)(p->batch + 1) * sizeof(int32_t));
    e |= put(a, B_USED, s->used, (size_t)(p->batch > 0 ? p->batch : 1) * sizeof(int32_t));
    if (p->block_table) {
        if (p->batch * p->block_table_stride > META_INTS) return 1;
        fill_table(p, bt, META_INTS);
        e |= put(a, B_BT, bt, meta);
    }
    return e;
}

static void clean(char *text) /* one line per call */
{
    for (; *text; text++)
        if (*text == '\n' || *text == '\r') *text = ' ';
}

int main(int argc, char **argv)
{
    const long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 4000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261204ULL;
    char why[256];
    const dm_kind kind = dm_available(DM_CUDA, why, sizeof why) ? DM_CUDA : DM_HIP;
    const int gpu = kind == DM_CUDA || dm_available(DM_HIP, why, sizeof why);
    arena host, dev;
    memset(&dev, 0, sizeof dev);
    dev.kind = kind;
    if (!arena_init(&host, DM_HOST) || (gpu && !arena_init(&dev, kind))) {
        fprintf(stderr, "select_dump: cannot allocate the buffers\n");
        arena_free(&host), arena_free(&dev);
        return 1;
    }
    printf("# select_dump calls=%ld memory=%s\n", calls,
           !gpu ? "host" : kind == DM_CUDA ? "cuda (15%% host)" : "hip (15%% host)");
    for (long i = 0; i < calls; i++) {
        portattn_fwd_params_t p;
        static shape s;
        const int on_host = !gpu || chance(15);
        const arena *a = on_host ? &host : &dev;
        draw(&p, &s, a);
        if (upload(&p, &s, a)) {
            printf("%ld | skipped (metadata too large)\n", i);
            continue;
        }
        portattn_selection_t sel;
        memset(&sel, 0, sizeof sel);
        const portattn_status_t qs = portattn_forward_query(&p, &sel);
        char qerr[1024];
        snprintf(qerr, sizeof qerr, "%s", portattn_last_error());
        size_t bytes = (size_t)-1;
        const portattn_status_t ws = portattn_forward_workspace_size(&p, &bytes);
        char werr[1024];
        snprintf(werr, sizeof werr, "%s", portattn_last_error());
        clean(sel.kernel), clean(sel.reason), clean(qerr), clean(werr);
        printf("%ld | %s %s b%" PRId64 " sq%" PRId64 " sk%" PRId64 " h%" PRId64 "/%" PRId64 " d%" PRId64 "/%" PRId64
               " mode%d paged%" PRId64 " new%" PRId64 " lay%d c%d w%" PRId64 ",%" PRId64 " cap%g sp%d ws%zu -> %s",
               i, on_host ? "host" : "dev", portattn_backend_name(p.backend), p.batch, p.seqlen_q, p.seqlen_k,
               p.heads_q, p.heads_kv, p.head_dim_qk, p.head_dim_v, s.mode, p.page_size, p.seqlen_new, s.lay, p.causal,
               p.window_left, p.window_right, (double)p.softcap, p.num_splits, p.workspace_size,
               portattn_status_string(qs));
        if (qs == PORTATTN_SUCCESS)
            printf(" | %s | %s | %s", sel.backend_name, sel.kernel, sel.reason);
        printf(" | err: %s | ws %s %zu | err: %s\n", qerr, portattn_status_string(ws), bytes, werr);
    }
    arena_free(&host), arena_free(&dev);
    return 0;
}
