/* Argument validation: every check of the public contract lives here, before any backend sees the
 * call. Each failure names the argument and the value. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "validate_view.h"

#define INVALID(...) pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* Non-negative int64 arithmetic that reports overflow instead of wrapping. */
static int mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a != 0 && b > INT64_MAX / a) return 0;
    *r = a * b;
    return 1;
}

static int add_ok(int64_t a, int64_t b, int64_t *r)
{
    if (b > INT64_MAX - a) return 0;
    *r = a + b;
    return 1;
}

portattn_status_t check_view(view *t, int must_not_self_overlap, char *why, size_t why_len)
{
    int64_t count = 1, extent = 0;
    for (int i = 0; i < 4; i++)
        if (!mul_ok(count, t->dim[i], &count)) return INVALID("%s: element count overflows int64", t->name);
    t->count = count;
    if (count == 0) return PORTATTN_SUCCESS; /* never addressed: its strides do not matter */
    for (int i = 0; i < 4; i++)
        if (t->stride[i] < 0)
            return INVALID("%s.stride[%d] = %lld is negative%s", t->name, i, (long long)t->stride[i],
                           t->stride[i] == -1 ? " (portattn_tensor_bshd/bhsd give -1 when s * h * d overflows)" : "");
    if (!t->data) return INVALID("%s is NULL but has %lld elements", t->name, (long long)count);
    if ((uintptr_t)t->data % (uintptr_t)t->elem)
        return INVALID("%s = %p is not aligned to its %lld-byte elements", t->name, t->data, (long long)t->elem);
    for (int i = 0; i < 4; i++) {
        int64_t step;
        if (!mul_ok(t->dim[i] - 1, t->stride[i], &step) || !add_ok(extent, step, &extent))
            return INVALID("%s: strided extent overflows int64", t->name);
    }
    int64_t bytes;
    if (!add_ok(extent, 1, &extent) || !mul_ok(extent, t->elem, &bytes) ||
        (uint64_t)bytes > UINTPTR_MAX - (uintptr_t)t->data)
        return INVALID("%s: byte extent overflows the address space", t->name);
    t->lo = (uintptr_t)t->data;
    t->hi = t->lo + (uintptr_t)bytes;
#if UINTPTR_MAX > 0xffffffffu
    /* No CPU or GPU maps addresses at or above 2^57 (5-level paging): larger extents come from
     * garbage strides, and accepting them would mean writing wherever they point. */
    if (t->hi > ((uintptr_t)1 << 57))
        return INVALID("%s: strides reach past the largest virtual address space (%lld bytes from %p)", t->name,
                       (long long)bytes, t->data);
#endif

    if (must_not_self_overlap) {
        /* Sufficient condition for distinct addresses: with the dims of size > 1 sorted by stride,
         * each stride exceeds the extent spanned by the smaller ones. */
        int idx[4], n = 0;
        for (int i = 0; i < 4; i++)
            if (t->dim[i] > 1) idx[n++] = i;
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && t->stride[idx[b]] < t->stride[idx[b - 1]]; b--) {
                int s = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = s;
            }
        int64_t span = 0; /* elements spanned by the dims visited so far, minus one */
        for (int a = 0; a < n; a++) {
            int i = idx[a];
            if (t->stride[i] <= span)
                return INVALID("%s: cannot show that its elements do not overlap: stride[%d] = %lld is not above "
                               "the %lld elements spanned by its smaller strides (a written tensor needs every "
                               "element at its own address)", t->name, i, (long long)t->stride[i], (long long)span);
            span += (t->dim[i] - 1) * t->stride[i]; /* no overflow: bounded by extent above */
        }
    }
    return PORTATTN_SUCCESS;
}

portattn_status_t check_struct_size(size_t got, size_t want, const char *init_fn, char *why, size_t why_len)
{
    if (got != want)
        return INVALID("params->struct_size = %zu, expected %zu: not initialised with %s? (or built against a newer "
                       "portattn.h than this library)", got, want, init_fn);
    return PORTATTN_SUCCESS;
}

int views_overlap(const view *a, const view *b)
{
    return a->count && b->count && a->lo < b->hi && b->lo < a->hi;
}

/* Appending writes K and V: when their ranges overlap (K and V interleaved in one buffer), no element
 * may belong to both. Sufficient condition: with equal strides and V at a whole number of elements
 * from K, the pair is one tensor with an extra dimension of 2 (stride = that distance) and the head
 * dim of the larger of the two, and that tensor passes the self-overlap test. */
static portattn_status_t check_kv_pair(const view *k, const view *v, char *why, size_t why_len)
{
    if (!k->count || !v->count || !(k->lo < v->hi && v->lo < k->hi)) return PORTATTN_SUCCESS;
    const view *lo = k->lo <= v->lo ? k : v, *hi = lo == k ? v : k;
    const uintptr_t gap = hi->lo - lo->lo;
    if (memcmp(k->stride, v->stride, sizeof k->stride) || gap % (uintptr_t)k->elem)
        return INVALID("k and v (appended to) overlap in memory with different strides or at an offset of %llu bytes, "
                       "not a whole element: cannot show that an append writes no element of both",
                       (unsigned long long)gap);
    /* the last dims of size > 1: (batch, seq, heads, pair, dim) as one 5-D tensor */
    const int64_t dims[5] = {k->dim[0], k->dim[1], k->dim[2], 2, k->dim[3] > v->dim[3] ? k->dim[3] : v->dim[3]};
    const int64_t strides[5] = {k->stride[0], k->stride[1], k->stride[2], (int64_t)(gap / (uintptr_t)k->elem), k->stride[3]};
    int idx[5], n = 0;
    for (int i = 0; i < 5; i++)
        if (dims[i] > 1) idx[n++] = i;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && strides[idx[b]] < strides[idx[b - 1]]; b--) {
            int t = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = t;
        }
    int64_t span = 0;
    for (int a = 0; a < n; a++) {
        const int i = idx[a];
        if (strides[i] <= span)
            return INVALID("k and v (appended to) share memory %lld elements apart: cannot show that an append "
                           "writes no element of both (interleave them as [B, S, 2, Hkv, D] or [B, S, Hkv, 2, D])",
                           (long long)strides[3]);
        span += (dims[i] - 1) * strides[i]; /* bounded by the two views' checked extents */
    }
    return PORTATTN_SUCCESS;
}

view make_view(const char *name, const portattn_tensor_t *t, int64_t nb, int64_t s, int64_t h,
               int64_t d, int64_t elem, int varlen)
{
    view v = {name, t->data, {nb, s, h, d}, {varlen ? 0 : t->stride[0], t->stride[1], t->stride[2], t->stride[3]},
              elem, 0, 0, 0};
    return v;
}

/* cu_seqlens readable on the host are checked in full: starts at 0, non-decreasing, ends in range. */
static portattn_status_t check_cu_seqlens(const char *name, const int32_t *cu, int64_t batch, int64_t total,
                                          int64_t *max_len, char *why, size_t why_len)
{
    if (!pa_host_accessible(cu)) return PORTATTN_SUCCESS; /* device memory: kernels clamp instead */
    if (cu[0] != 0) return INVALID("%s[0] = %d, expected 0", name, cu[0]);
    int64_t longest = 0;
    for (int64_t b = 0; b < batch; b++) {
        if (cu[b + 1] < cu[b])
            return INVALID("%s is decreasing at [%lld] (%d -> %d)", name, (long long)b + 1, cu[b], cu[b + 1]);
        if (cu[b + 1] - cu[b] > longest) longest = cu[b + 1] - cu[b];
    }
    if (cu[batch] > total)
        return INVALID("%s[%lld] = %d exceeds the %lld packed tokens", name, (long long)batch, cu[batch],
                       (long long)total);
    if (*max_len < longest)
        return INVALID("%s holds a sequence of %lld tokens, longer than max_seqlen = %lld", name,
                       (long long)longest, (long long)*max_len);
    return PORTATTN_SUCCESS;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether the host may read the cache tables (pa_host_accessible; 1 for NULL). */
typedef struct host_view { int seqused_k, block_table; } host_view;

/* Appending through a page table: two sequences whose tables name the same page would both write
 * its rows (a race, and one of them reads the other's keys). Checked when the host can read the
 * tables: every cache row an append writes must be distinct. */
static portattn_status_t check_append_targets(const portattn_fwd_params_t *p, int64_t new_tokens, const host_view *hv,
                                              char *why, size_t why_len)
{
    if (!p->block_table || !new_tokens || !hv->block_table || !hv->seqused_k) return PORTATTN_SUCCESS;
    if ((uint64_t)p->batch > SIZE_MAX / sizeof(int64_t) / (uint64_t)new_tokens) return PORTATTN_SUCCESS;
    int64_t n = 0, *rows = malloc(sizeof(int64_t) * (size_t)(p->batch * new_tokens) + 1);
    if (!rows) return pa_fmt(why, why_len, PORTATTN_ERROR_OUT_OF_MEMORY, "checking append targets: out of host memory");
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t i = 0; i < new_tokens; i++) {
            const int64_t j = p->seqused_k[b] + i; /* validated: within the capacity */
            rows[n++] = (int64_t)p->block_table[b * p->block_table_stride + j / p->page_size] * p->page_size +
                        j % p->page_size;
        }
    qsort(rows, (size_t)n, sizeof *rows, cmp_i64);
    for (int64_t i = 1; i < n; i++)
        if (rows[i] == rows[i - 1]) {
            const int64_t page = rows[i] / p->page_size, row = rows[i] % p->page_size;
            free(rows);
            return INVALID("append: two sequences write row %lld of page %lld (their block_table rows share a page)",
                           (long long)row, (long long)page);
        }
    free(rows);
    return PORTATTN_SUCCESS;
}

/* A page an append writes that is also read as another key range (by another sequence, or by the
 * same sequence's table naming it twice): the reader would see the new tokens in place of its own
 * keys (on a GPU, whichever came first). Checked per page, not per row, so that the cost is that of
 * reading the tables: sequences may share full pages (a common prefix) that no append writes.
 * Entries: page * 2 + (written), tagged with the sequence and the table position. */
typedef struct page_use { int64_t key, seq, pos; } page_use;

static int cmp_page_use(const void *a, const void *b)
{
    const page_use *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static portattn_status_t check_append_readers(const portattn_fwd_params_t *p, int64_t pages_per_seq,
                                              int64_t new_tokens, const host_view *hv, char *why, size_t why_len)
{
    if (!p->block_table || !new_tokens || !hv->block_table || !hv->seqused_k) return PORTATTN_SUCCESS;
    if ((uint64_t)p->batch > SIZE_MAX / sizeof(page_use) / 2 / (uint64_t)pages_per_seq) return PORTATTN_SUCCESS;
    page_use *u = malloc(sizeof(page_use) * (size_t)(p->batch * pages_per_seq * 2) + 1);
    if (!u) return pa_fmt(why, why_len, PORTATTN_ERROR_OUT_OF_MEMORY, "checking append targets: out of host memory");
    int64_t n = 0;
    for (int64_t b = 0; b < p->batch; b++) { /* validated: used + new within the capacity */
        const int64_t used = p->seqused_k[b], first_new = used / p->page_size;
        for (int64_t g = 0; g * p->page_size < used + new_tokens; g++) {
            const int64_t page = p->block_table[b * p->block_table_stride + g];
            u[n++] = (page_use){page * 2, b, g};
            if (g >= first_new) u[n++] = (page_use){page * 2 + 1, b, g};
        }
    }
    qsort(u, (size_t)n, sizeof *u, cmp_page_use);
    for (int64_t i = 0, j; i < n; i = j) { /* one page: its readers (key even) then its writers (odd) */
        for (j = i; j < n && u[j].key / 2 == u[i].key / 2; j++) {}
        for (int64_t w = i; w < j; w++)
            for (int64_t r = i; u[w].key % 2 && r < j; r++)
                if (u[r].key % 2 == 0 && (u[r].seq != u[w].seq || u[r].pos != u[w].pos)) {
                    const int64_t page = u[w].key / 2, writer = u[w].seq, reader = u[r].seq;
                    free(u);
                    return INVALID("append: sequence %lld writes page %lld, which sequence %lld also reads as other "
                                   "keys (its block_table row names the page again): they would become the new keys",
                                   (long long)writer, (long long)page, (long long)reader);
                }
    }
    free(u);
    return PORTATTN_SUCCESS;
}

/* seqused_k and block_table contents, when the host can read them: lengths (plus appended tokens)
 * within the capacity, and every page a sequence uses inside the pool. */
static portattn_status_t check_kv_cache(const portattn_fwd_params_t *p, int64_t pages_per_seq, int64_t new_tokens,
                                        const host_view *hv, char *why, size_t why_len)
{
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t used = p->seqlen_k;
        if (p->seqused_k && hv->seqused_k) {
            used = p->seqused_k[b];
            if (used < 0 || used > p->seqlen_k - new_tokens)
                return INVALID("seqused_k[%lld] = %lld is outside [0, seqlen_k - seqlen_new = %lld]", (long long)b,
                               (long long)used, (long long)(p->seqlen_k - new_tokens));
            used += new_tokens;
            /* packed queries over the cache: max_seqlen_k, when given, bounds every cache length */
            if (p->cu_seqlens_q && p->max_seqlen_k && used > p->max_seqlen_k)
                return INVALID("seqused_k[%lld] = %lld exceeds max_seqlen_k = %lld", (long long)b, (long long)used,
                               (long long)p->max_seqlen_k);
        }
        if (!p->block_table || !hv->block_table) continue;
        for (int64_t g = 0; g < pages_per_seq && g * p->page_size < used; g++) {
            int32_t page = p->block_table[b * p->block_table_stride + g];
            if (page < 0 || page >= p->num_pages)
                return INVALID("block_table[%lld][%lld] = %d is outside [0, num_pages = %lld)", (long long)b,
                               (long long)g, page, (long long)p->num_pages);
        }
    }
    return PORTATTN_SUCCESS;
}

/* The params struct itself: present, of a size this library knows, copied into the problem. */
static portattn_status_t load_params(const portattn_fwd_params_t *in, pa_problem *pb, char *why, size_t why_len)
{
    if (!in) return INVALID("params is NULL");
    /* The 0.1 struct is still accepted; otherwise the one rule of every params struct (check_struct_size). */
    if (in->struct_size != PORTATTN_FWD_PARAMS_SIZE_V1) {
        const portattn_status_t st =
            check_struct_size(in->struct_size, sizeof(portattn_fwd_params_t), "portattn_fwd_params_init", why, why_len);
        if (st != PORTATTN_SUCCESS) return st;
    }
    memset(pb, 0, sizeof *pb);
    memcpy(&pb->p, in, in->struct_size); /* an older, smaller struct leaves the newer fields zero */
    pb->p.struct_size = sizeof pb->p;
    return PORTATTN_SUCCESS;
}

/* dtype, backend, shapes and head dims, windows, softmax scale and softcap. elem: the dtype's size. */
static portattn_status_t check_scalars(const portattn_fwd_params_t *p, int64_t elem, char *why, size_t why_len)
{
    if (!elem) return INVALID("dtype = %d is not a portattn_dtype_t", (int)p->dtype);
    if ((int)p->backend < 0 || p->backend >= PORTATTN_BACKEND_COUNT_)
        return INVALID("backend = %d is not a portattn_backend_t", (int)p->backend);
    if (p->batch < 0) return INVALID("batch = %lld is negative", (long long)p->batch);
    if (p->seqlen_q < 0) return INVALID("seqlen_q = %lld is negative", (long long)p->seqlen_q);
    if (p->seqlen_k < 0) return INVALID("seqlen_k = %lld is negative", (long long)p->seqlen_k);
    if (p->heads_q < 1 || p->heads_kv < 1)
        return INVALID("heads_q = %lld and heads_kv = %lld must be >= 1", (long long)p->heads_q, (long long)p->heads_kv);
    if (p->heads_q % p->heads_kv)
        return INVALID("heads_q = %lld is not a multiple of heads_kv = %lld", (long long)p->heads_q,
                       (long long)p->heads_kv);
    if (p->head_dim_qk < 1 || p->head_dim_v < 1)
        return INVALID("head_dim_qk = %lld and head_dim_v = %lld must be >= 1", (long long)p->head_dim_qk,
                       (long long)p->head_dim_v);
    if (p->window_left < -1 || p->window_right < -1)
        return INVALID("window (%lld, %lld): each side must be >= 0, or -1 for unbounded",
                       (long long)p->window_left, (long long)p->window_right);
    if (!isfinite(p->softmax_scale)) return INVALID("softmax_scale = %g is not finite", (double)p->softmax_scale);
    if (!isfinite(p->softcap) || p->softcap < 0)
        return INVALID("softcap = %g must be finite and >= 0 (0 = off)", (double)p->softcap);
    return PORTATTN_SUCCESS;
}

/* Varlen: packed queries with packed keys (cu_seqlens_q and cu_seqlens_k), or packed queries over
 * a KV cache (cu_seqlens_q with seqused_k and/or block_table: the keys stay per sequence). Records
 * the mode and the longest sequences in pb. */
static portattn_status_t check_varlen(pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int cache = p->block_table != NULL || p->seqused_k;
    const int varlen = p->cu_seqlens_q != NULL, varlen_k = p->cu_seqlens_k != NULL;
    if (varlen_k && !varlen)
        return INVALID("cu_seqlens_k is set but cu_seqlens_q is NULL (packed keys need packed queries)");
    if (varlen_k && cache)
        return INVALID("%s with cu_seqlens_k: over a KV cache the key lengths come from seqused_k (or the capacity "
                       "seqlen_k); pass cu_seqlens_k = NULL", p->seqused_k ? "seqused_k" : "block_table");
    if (varlen && !varlen_k && !cache)
        return INVALID("cu_seqlens_q is set but cu_seqlens_k is NULL: give cu_seqlens_k (packed keys), or seqused_k "
                       "and/or block_table (queries over a KV cache)");
    pb->varlen = varlen;
    pb->varlen_k = varlen_k;
    pb->max_seqlen_q = p->seqlen_q;
    pb->max_seqlen_k = p->seqlen_k;
    if (!varlen) return PORTATTN_SUCCESS;
    if (p->seqlen_q > INT32_MAX || p->seqlen_k > INT32_MAX)
        return INVALID("varlen totals (%lld, %lld) exceed the int32 range of cu_seqlens",
                       (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch >= INT32_MAX) return INVALID("batch = %lld too large for varlen", (long long)p->batch);
    if (p->max_seqlen_q < 0 || p->max_seqlen_q > p->seqlen_q || p->max_seqlen_k < 0 || p->max_seqlen_k > p->seqlen_k)
        return INVALID("max_seqlen (%lld, %lld) must be within [0, %s (%lld, %lld)]",
                       (long long)p->max_seqlen_q, (long long)p->max_seqlen_k,
                       varlen_k ? "totals" : "the query total and the cache capacity", (long long)p->seqlen_q,
                       (long long)p->seqlen_k);
    if (!varlen_k && !p->seqused_k && p->max_seqlen_k && p->max_seqlen_k != p->seqlen_k)
        return INVALID("max_seqlen_k = %lld, but without seqused_k every sequence holds seqlen_k = %lld keys",
                       (long long)p->max_seqlen_k, (long long)p->seqlen_k);
    if (p->max_seqlen_q) pb->max_seqlen_q = p->max_seqlen_q;
    if (p->max_seqlen_k) pb->max_seqlen_k = p->max_seqlen_k;
    return PORTATTN_SUCCESS;
}

/* KV cache: seqused_k and/or a page table; per-sequence or packed (serving) queries. The page
 * table's geometry here (its contents in check_cache_tables); *pages_per_seq: the pages of seqlen_k. */
static portattn_status_t check_paging(pa_problem *pb, int64_t *pages_per_seq, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->block_table) {
        if (p->page_size < 1 || p->page_size > (1 << 20) || (p->page_size & (p->page_size - 1)))
            return INVALID("page_size = %lld is not a power of two in [1, 2^20]", (long long)p->page_size);
        if (p->num_pages < 1) return INVALID("num_pages = %lld must be >= 1", (long long)p->num_pages);
        *pages_per_seq = p->seqlen_k / p->page_size + (p->seqlen_k % p->page_size != 0); /* no int64 overflow */
        if (p->block_table_stride < *pages_per_seq)
            return INVALID("block_table_stride = %lld is below the %lld pages of seqlen_k = %lld",
                           (long long)p->block_table_stride, (long long)*pages_per_seq, (long long)p->seqlen_k);
    } else if (p->page_size || p->num_pages || p->block_table_stride) {
        return INVALID("page_size/num_pages/block_table_stride are set but block_table is NULL");
    }
    pb->kv_cache = p->block_table != NULL || p->seqused_k;
    return PORTATTN_SUCCESS;
}

/* Append: new K/V tokens written into the cache at seqused_k. Records seqlen_new in pb. */
static portattn_status_t check_append(pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int append = p->k_new.data || p->v_new.data;
    if (p->seqlen_new < 0) return INVALID("seqlen_new = %lld is negative", (long long)p->seqlen_new);
    if (append) {
        if (!p->k_new.data || !p->v_new.data)
            return INVALID("k_new and v_new must be given together (%s.data is NULL)", p->k_new.data ? "v_new" : "k_new");
        if (!p->seqused_k) return INVALID("appending k_new/v_new needs seqused_k (where the new tokens go)");
        if (p->cu_seqlens_q)
            return INVALID("appending k_new/v_new with cu_seqlens_q: k_new holds seqlen_new tokens for every sequence, "
                           "but packed queries give each sequence its own count; write the new tokens into the cache "
                           "first and count them in seqused_k");
        if (p->seqlen_new > p->seqlen_k)
            return INVALID("seqlen_new = %lld exceeds the cache capacity seqlen_k = %lld", (long long)p->seqlen_new,
                           (long long)p->seqlen_k);
        if (p->batch > 0 && p->seqlen_q == 0 && p->seqlen_new > 0)
            return INVALID("appending needs query tokens (seqlen_q = 0): it is part of an attention call");
        pb->seqlen_new = p->seqlen_new;
    } else if (p->seqlen_new) {
        return INVALID("seqlen_new = %lld but k_new/v_new are NULL", (long long)p->seqlen_new);
    }
    return PORTATTN_SUCCESS;
}

/* Split-KV: num_splits and the scratch workspace. */
static portattn_status_t check_splits(const portattn_fwd_params_t *p, char *why, size_t why_len)
{
    if (p->num_splits < 0) return INVALID("num_splits = %d is negative (0 = heuristic)", p->num_splits);
    if (!p->workspace && p->workspace_size)
        return INVALID("workspace_size = %zu but workspace is NULL", p->workspace_size);
    if ((uintptr_t)p->workspace % 256)
        return INVALID("workspace = %p is not 256-byte aligned (cudaMalloc gives that)", p->workspace);
    if (p->workspace_size > (size_t)INT64_MAX || p->workspace_size > UINTPTR_MAX - (uintptr_t)p->workspace)
        return INVALID("workspace_size = %zu bytes from workspace = %p runs past the end of the address space",
                       p->workspace_size, p->workspace);
    return PORTATTN_SUCCESS;
}

/* The checked views of a call's tensors, for the overlap checks between them. */
typedef struct fwd_views {
    view q, k, v, o, lse, kn, vn, ws;
    int64_t nnew; /* sequences that append (batch, or 0 without an append) */
} fwd_views;

/* The tensors' dtypes, layouts and strides. Varlen tensors are packed [1, total, H, D]; paged K/V
 * are page pools. */
static portattn_status_t check_tensors(const pa_problem *pb, int64_t elem, fwd_views *t, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int paged = p->block_table != NULL, varlen = pb->varlen, varlen_k = pb->varlen_k;
    int64_t nb = varlen ? (p->batch ? 1 : 0) : p->batch, nbk = varlen_k ? nb : p->batch;
    t->q = make_view("q", &p->q, nb, p->seqlen_q, p->heads_q, p->head_dim_qk, elem, varlen);
    int64_t kv_n = paged ? p->num_pages : nbk, kv_s = paged ? p->page_size : p->seqlen_k;
    t->k = make_view("k", &p->k, kv_n, kv_s, p->heads_kv, p->head_dim_qk, elem, varlen_k);
    t->v = make_view("v", &p->v, kv_n, kv_s, p->heads_kv, p->head_dim_v, elem, varlen_k);
    t->o = make_view("o", &p->o, nb, p->seqlen_q, p->heads_q, p->head_dim_v, elem, varlen);
    portattn_tensor_t lse_t = {p->lse, {p->lse_stride[0], p->lse_stride[2], p->lse_stride[1], 0}};
    t->lse = make_view("lse", &lse_t, p->lse ? nb : 0, p->seqlen_q, p->heads_q, 1, 4, varlen);
    t->nnew = pb->seqlen_new ? p->batch : 0;
    t->kn = make_view("k_new", &p->k_new, t->nnew, pb->seqlen_new, p->heads_kv, p->head_dim_qk, elem, 0);
    t->vn = make_view("v_new", &p->v_new, t->nnew, pb->seqlen_new, p->heads_kv, p->head_dim_v, elem, 0);
    portattn_tensor_t ws_t = {p->workspace, {1, 0, 0, 0}};
    t->ws = make_view("workspace", &ws_t, (int64_t)p->workspace_size, 1, 1, 1, 1, 0);
    portattn_status_t st;
    /* Appending writes K and V: then they are outputs and need distinct addresses too. */
    if ((st = check_view(&t->q, 0, why, why_len)) || (st = check_view(&t->k, t->nnew > 0, why, why_len)) ||
        (st = check_view(&t->v, t->nnew > 0, why, why_len)) || (st = check_view(&t->o, 1, why, why_len)) ||
        (st = check_view(&t->lse, 1, why, why_len)) || (st = check_view(&t->kn, 0, why, why_len)) ||
        (st = check_view(&t->vn, 0, why, why_len)) || (st = check_view(&t->ws, 0, why, why_len)))
        return st;
    return PORTATTN_SUCCESS;
}

/* A tensor with no elements is never addressed, so its strides were not checked: zero them in the
 * problem the backends see, so that no backend even computes an offset from them. */
static void zero_unused_strides(pa_problem *pb, const fwd_views *t)
{
    if (!t->kn.count) memset(pb->p.k_new.stride, 0, sizeof pb->p.k_new.stride);
    if (!t->vn.count) memset(pb->p.v_new.stride, 0, sizeof pb->p.v_new.stride);
    portattn_tensor_t *tens[4] = {&pb->p.q, &pb->p.k, &pb->p.v, &pb->p.o};
    const view *views[4] = {&t->q, &t->k, &t->v, &t->o};
    for (int i = 0; i < 4; i++)
        if (!views[i]->count) memset(tens[i]->stride, 0, sizeof tens[i]->stride);
    if (!t->lse.count) memset(pb->p.lse_stride, 0, sizeof pb->p.lse_stride);
    if (pb->varlen) { /* ignored stride[0]s, likewise never used (K and V keep theirs over a KV cache) */
        for (int i = 0; i < 4; i++)
            if (pb->varlen_k || tens[i] == &pb->p.q || tens[i] == &pb->p.o) tens[i]->stride[0] = 0;
        pb->p.lse_stride[0] = 0;
    }
}

/* Aliasing: the outputs (and, when appending, K and V) share memory with no other tensor. */
static portattn_status_t check_aliasing(const portattn_fwd_params_t *p, const fwd_views *t, char *why, size_t why_len)
{
    const view *inputs[3] = {&t->q, &t->k, &t->v};
    for (int i = 0; i < 3; i++) {
        if (views_overlap(&t->o, inputs[i])) return INVALID("o overlaps %s in memory", inputs[i]->name);
        if (views_overlap(&t->lse, inputs[i])) return INVALID("lse overlaps %s in memory", inputs[i]->name);
    }
    if (views_overlap(&t->lse, &t->o)) return INVALID("lse overlaps o in memory");
    const view *all[8] = {&t->q, &t->k, &t->v, &t->o, &t->lse, &t->kn, &t->vn, &t->ws};
    for (int i = 0; i < 8; i++) /* the workspace is scratch: it shares memory with nothing */
        if (i != 7 && views_overlap(&t->ws, all[i])) return INVALID("workspace overlaps %s in memory", all[i]->name);
    if (!t->nnew) return PORTATTN_SUCCESS;
    if (p->k.data == p->v.data && !memcmp(p->k.stride, p->v.stride, sizeof p->k.stride) &&
        p->head_dim_qk == p->head_dim_v)
        return INVALID("k and v are the same tensor: appending would write V over K");
    portattn_status_t st;
    if ((st = check_kv_pair(&t->k, &t->v, why, why_len))) return st;
    /* the written cache shares memory with nothing but the other cache tensor */
    const view *others[5] = {&t->q, &t->o, &t->lse, &t->kn, &t->vn};
    for (int i = 0; i < 5; i++) {
        if (views_overlap(&t->k, others[i])) return INVALID("k (appended to) overlaps %s in memory", others[i]->name);
        if (views_overlap(&t->v, others[i])) return INVALID("v (appended to) overlaps %s in memory", others[i]->name);
    }
    return PORTATTN_SUCCESS;
}

/* The KV cache's tables (block_table, seqused_k): valid views that no output overlaps, and their
 * contents where the host can read them. */
static portattn_status_t check_cache_tables(const pa_problem *pb, int64_t pages_per_seq, const fwd_views *t,
                                            char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!(p->block_table || p->seqused_k) || p->batch <= 0 || p->seqlen_q <= 0) return PORTATTN_SUCCESS;
    view bt = {"block_table", p->block_table, {p->batch, pages_per_seq, 1, 1}, {p->block_table_stride, 1, 0, 0}, 4, 0, 0, 0};
    view su = {"seqused_k", p->seqused_k, {p->seqused_k ? p->batch : 0, 1, 1, 1}, {1, 0, 0, 0}, 4, 0, 0, 0};
    portattn_status_t st;
    if ((st = check_view(&bt, 0, why, why_len)) || (st = check_view(&su, 0, why, why_len))) return st;
    const view *outs[5] = {&t->o, &t->lse, &t->ws, t->nnew ? &t->k : &t->o, t->nnew ? &t->v : &t->o};
    for (int i = 0; i < 5; i++)
        if (views_overlap(&bt, outs[i]) || views_overlap(&su, outs[i]))
            return INVALID("block_table or seqused_k overlaps %s, which is written", outs[i]->name);
    /* asked once per call (each answer is a pointer-attribute query on a GPU build), not per sequence */
    const host_view hv = {pa_host_accessible(p->seqused_k), pa_host_accessible(p->block_table)};
    if ((st = check_kv_cache(p, pages_per_seq, pb->seqlen_new, &hv, why, why_len)) ||
        (st = check_append_targets(p, pb->seqlen_new, &hv, why, why_len)) ||
        (st = check_append_readers(p, pages_per_seq, pb->seqlen_new, &hv, why, why_len)))
        return st;
    return PORTATTN_SUCCESS;
}

/* The varlen arrays (cu_seqlens_q/k): valid views that no output overlaps, and their contents where
 * the host can read them. */
static portattn_status_t check_varlen_arrays(pa_problem *pb, const fwd_views *t, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pb->varlen || p->batch <= 0) return PORTATTN_SUCCESS;
    view cq = {"cu_seqlens_q", p->cu_seqlens_q, {p->batch + 1, 1, 1, 1}, {1, 0, 0, 0}, 4, 0, 0, 0};
    view ck = {"cu_seqlens_k", p->cu_seqlens_k, {pb->varlen_k ? p->batch + 1 : 0, 1, 1, 1}, {1, 0, 0, 0}, 4, 0, 0, 0};
    portattn_status_t st;
    if ((st = check_view(&cq, 0, why, why_len)) || (st = check_view(&ck, 0, why, why_len))) return st;
    if (views_overlap(&cq, &t->o) || views_overlap(&ck, &t->o) || views_overlap(&cq, &t->lse) ||
        views_overlap(&ck, &t->lse) || views_overlap(&cq, &t->ws) || views_overlap(&ck, &t->ws))
        return INVALID("cu_seqlens overlap an output (o, lse or workspace)");
    if ((st = check_cu_seqlens("cu_seqlens_q", p->cu_seqlens_q, p->batch, p->seqlen_q, &pb->max_seqlen_q,
                               why, why_len)) ||
        (pb->varlen_k && (st = check_cu_seqlens("cu_seqlens_k", p->cu_seqlens_k, p->batch, p->seqlen_k,
                                                &pb->max_seqlen_k, why, why_len))))
        return st;
    return PORTATTN_SUCCESS;
}

/* The defaults the backends see resolved: scale, windows with causal folded in, the GQA group. */
static void resolve_defaults(pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    pb->scale = p->softmax_scale != 0.0f ? p->softmax_scale : (float)(1.0 / sqrt((double)p->head_dim_qk));
    pb->window_left = p->window_left;
    pb->window_right = p->causal ? 0 : p->window_right; /* causal is window_right = 0 */
    pb->group = p->heads_q / p->heads_kv;
}

portattn_status_t pa_validate(const portattn_fwd_params_t *in, pa_problem *pb, char *why, size_t why_len)
{
    portattn_status_t st;
    if ((st = load_params(in, pb, why, why_len))) return st;
    const int64_t elem = pa_dtype_size(pb->p.dtype);
    int64_t pages_per_seq = 0;
    fwd_views t;
    if ((st = check_scalars(&pb->p, elem, why, why_len))) return st;
    if ((st = check_varlen(pb, why, why_len))) return st;
    if ((st = check_paging(pb, &pages_per_seq, why, why_len))) return st;
    if ((st = check_append(pb, why, why_len))) return st;
    if ((st = check_splits(&pb->p, why, why_len))) return st;
    if ((st = check_tensors(pb, elem, &t, why, why_len))) return st;
    zero_unused_strides(pb, &t);
    if ((st = check_aliasing(&pb->p, &t, why, why_len))) return st;
    if ((st = check_cache_tables(pb, pages_per_seq, &t, why, why_len))) return st;
    if ((st = check_varlen_arrays(pb, &t, why, why_len))) return st;
    resolve_defaults(pb);
    return PORTATTN_SUCCESS;
}
