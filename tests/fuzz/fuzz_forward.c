/* libFuzzer target over the public API on the CPU backend (issue 9). The input bytes choose shapes,
 * strides, dtypes, flags, windows, cu_seqlens contents (monotone or not), KV-cache lengths and page
 * tables, appends, workspaces, NULL / aliased / misaligned pointers and struct_size. Every buffer is allocated to exactly the extent the call describes, so
 * AddressSanitizer catches a single element read or written out of bounds; descriptions too large to
 * back with memory are only passed when validation must reject them (int64 or address-space overflow).
 * A call must return a documented status, with a message when it fails, and never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

#include "portattn.h"

enum { MAX_ELEMS = 1 << 18 }; /* largest tensor backed by real memory */

typedef struct bytes { const uint8_t *p; size_t n; } bytes;

static uint64_t take(bytes *b, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++) v = v << 8 | (b->n ? (b->n--, *b->p++) : 0);
    return v;
}

/* Mostly small values, sometimes -1/0/huge, so both the valid space and the edges get visited. */
static int64_t take_dim(bytes *b, int64_t small)
{
    uint8_t sel = (uint8_t)take(b, 1);
    if (sel < 200) return (int64_t)(take(b, 1) % (uint64_t)(small + 1));
    if (sel < 215) return -1 - (int64_t)(take(b, 1) % 4);
    if (sel < 230) return (int64_t)1 << (30 + take(b, 1) % 33); /* 2^30 .. 2^62 */
    return (int64_t)take(b, 8) & INT64_MAX;
}

/* Extent in elements of a 4-D view, or -1 when it overflows int64 (which validation must reject). */
static int64_t extent(const int64_t dim[4], const int64_t stride[4])
{
    int64_t e = 1;
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0) return 0; /* no elements: the library never looks at the strides */
    for (int i = 0; i < 4; i++) {
        if (stride[i] < 0) return -1;
        if (stride[i] && dim[i] - 1 > (INT64_MAX - e) / stride[i]) return -1;
        e += (dim[i] - 1) * stride[i];
    }
    return e;
}

/* Stride arithmetic wraps on purpose (in uint64): a wrapped, negative or huge stride is exactly what
 * validation must reject, and the harness itself must not overflow a signed int. */
static int64_t w(uint64_t x) { return (int64_t)x; }

static void take_strides(bytes *b, const int64_t dim[4], int64_t st[4])
{
    uint64_t pad = take(b, 1) % 3 * 4, d1 = (uint64_t)dim[1], d2 = (uint64_t)dim[2], d3 = (uint64_t)dim[3];
    switch (take(b, 1) % 5) {
    case 0: st[3] = 1, st[2] = w(d3 + pad), st[1] = w(d2 * (d3 + pad)), st[0] = w(d1 * d2 * (d3 + pad)); break; /* BSHD */
    case 1: st[3] = 1, st[1] = w(d3 + pad), st[2] = w(d1 * (d3 + pad)), st[0] = w(d2 * d1 * (d3 + pad)); break; /* BHSD */
    case 2: st[3] = 2, st[2] = w(2 * d3), st[1] = w(d2 * 2 * d3 + pad), st[0] = w(d1 * (d2 * 2 * d3 + pad)); break;
    case 3: for (int i = 0; i < 4; i++) st[i] = take_dim(b, 64); break;                                   /* raw */
    default: st[3] = 1, st[2] = w(d3), st[1] = w(d2 * d3), st[0] = 0; break;                                 /* broadcast */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bytes b = {data, size};
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.backend = PORTATTN_BACKEND_CPU;
    p.dtype = (portattn_dtype_t)(take(&b, 1) % 5); /* 0 and 4 are invalid */
    p.batch = take_dim(&b, 4);
    p.seqlen_q = take_dim(&b, 24), p.seqlen_k = take_dim(&b, 24);
    p.heads_kv = take_dim(&b, 3), p.heads_q = w((uint64_t)p.heads_kv * (1 + take(&b, 1) % 4));
    if (take(&b, 1) > 230) p.heads_q = take_dim(&b, 8);
    p.head_dim_qk = take_dim(&b, 40), p.head_dim_v = take_dim(&b, 40);
    p.causal = (int)(take(&b, 1) & 1);
    p.window_left = take_dim(&b, 12), p.window_right = take_dim(&b, 12);
    uint8_t fl = (uint8_t)take(&b, 1);
    p.softcap = fl & 1 ? (float)(take(&b, 1)) - 8.0f : 0.0f;
    p.softmax_scale = fl & 2 ? (float)((int8_t)take(&b, 1)) / 16.0f : 0.0f;
    if (fl & 4) p.struct_size = (size_t)take(&b, 2);
    int varlen = (fl & 8) && p.batch > 0 && p.batch <= 64;
    int64_t nb = varlen ? 1 : p.batch; /* exactly what the library will address */
    int32_t *cu[2] = {NULL, NULL};
    if (varlen) {
        for (int t = 0; t < 2; t++) { /* exactly batch + 1 entries: monotone from 0, or raw bytes */
            cu[t] = malloc(sizeof(int32_t) * (size_t)(p.batch + 1));
            int raw = take(&b, 1) > 220;
            cu[t][0] = raw ? (int32_t)take(&b, 4) : 0;
            for (int64_t i = 1; i <= p.batch; i++)
                cu[t][i] = raw ? (int32_t)take(&b, 4) : cu[t][i - 1] + (int32_t)(take(&b, 1) % 16);
        }
        p.cu_seqlens_q = cu[0], p.cu_seqlens_k = cu[1];
        p.max_seqlen_q = take(&b, 1) > 200 ? take_dim(&b, 24) : 0;
        p.max_seqlen_k = take(&b, 1) > 200 ? take_dim(&b, 24) : 0;
    }

    /* KV cache: seqused_k and/or a page table, arrays of exactly batch (x stride) entries with
     * contents that may be out of range; K/V then become page pools. */
    int32_t *kvc[2] = {NULL, NULL};
    int64_t kv_n = nb, kv_s = p.seqlen_k;
    uint8_t kf = (uint8_t)take(&b, 1);
    if ((kf & 1) && p.batch > 0 && p.batch <= 64 && p.seqlen_k >= 0 && p.seqlen_k <= 64) {
        kvc[0] = malloc(sizeof(int32_t) * (size_t)p.batch);
        for (int64_t i = 0; i < p.batch; i++) kvc[0][i] = (int32_t)(take(&b, 1) % (uint64_t)(p.seqlen_k + 3)) - 1;
        p.seqused_k = kvc[0];
    }
    if ((kf & 2) && p.batch > 0 && p.batch <= 64 && p.seqlen_k >= 0 && p.seqlen_k <= 64) {
        p.page_size = take(&b, 1) > 240 ? 3 : (int64_t)1 << (take(&b, 1) % 6);
        p.num_pages = (int64_t)(take(&b, 1) % 12);
        int64_t pps = (p.seqlen_k + (p.page_size > 0 ? p.page_size : 1) - 1) / (p.page_size > 0 ? p.page_size : 1);
        p.block_table_stride = pps + (int64_t)(take(&b, 1) % 3) - (take(&b, 1) > 240);
        int64_t n = p.batch * (p.block_table_stride > 0 ? p.block_table_stride : 1);
        kvc[1] = malloc(sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) kvc[1][i] = (int32_t)(take(&b, 1) % (uint64_t)(p.num_pages + 2)) - (take(&b, 1) > 250);
        p.block_table = kvc[1];
        kv_n = p.num_pages, kv_s = p.page_size;
    }

    /* The four tensors and LSE, each backed by exactly its extent (or passed only if invalid). */
    int64_t esz = p.dtype == PORTATTN_DTYPE_F32 ? 4 : 2;
    portattn_tensor_t *t[4] = {&p.q, &p.k, &p.v, &p.o};
    int64_t dims[4][4] = {{nb, p.seqlen_q, p.heads_q, p.head_dim_qk}, {kv_n, kv_s, p.heads_kv, p.head_dim_qk},
                          {kv_n, kv_s, p.heads_kv, p.head_dim_v}, {nb, p.seqlen_q, p.heads_q, p.head_dim_v}};
    void *mem[5] = {NULL};
    int must_fail = 0, skip = 0;
    for (int i = 0; i < 4; i++) {
        take_strides(&b, dims[i], t[i]->stride);
        int64_t st[4] = {varlen ? 0 : t[i]->stride[0], t[i]->stride[1], t[i]->stride[2], t[i]->stride[3]};
        int64_t e = extent(dims[i], st); /* varlen ignores stride[0], as the library does */
        if (e < 0) must_fail = 1;                         /* overflow: validation rejects it */
        else if (e > MAX_ELEMS) skip = 1;                 /* valid-looking but too big to back */
        else if (e > 0) mem[i] = malloc((size_t)(e * esz));
    }
    if (take(&b, 1) & 1) {
        int64_t ld[4] = {nb, p.heads_q, p.seqlen_q, 1}, ls[4];
        ls[3] = 0, ls[2] = 1 + (int64_t)(take(&b, 1) % 3), ls[1] = w((uint64_t)p.seqlen_q * (uint64_t)ls[2]),
        ls[0] = w((uint64_t)p.heads_q * (uint64_t)ls[1]);
        if (take(&b, 1) > 240) ls[2] = 0; /* self-overlapping: must be rejected */
        int64_t e = extent(ld, ls);
        if (e < 0) must_fail = 1;
        else if (e > MAX_ELEMS) skip = 1;
        else if (e > 0) mem[4] = malloc((size_t)e * 4);
        p.lse = mem[4];
        p.lse_stride[0] = ls[0], p.lse_stride[1] = ls[1], p.lse_stride[2] = ls[2];
    }
    for (int i = 0; i < 4; i++) t[i]->data = mem[i];

    /* Append (k_new/v_new, exactly sized and contiguous, written into the exactly sized K/V: an append
     * past the cache's end is an ASan finding) and a split-KV workspace the CPU backend ignores. */
    void *app[3] = {NULL, NULL, NULL};
    uint8_t af = (uint8_t)take(&b, 1);
    if ((af & 1) && p.batch > 0 && p.batch <= 64) {
        p.seqlen_new = af & 2 ? (int64_t)(take(&b, 1) % 5) : take_dim(&b, 4);
        int64_t nd[2][4] = {{p.batch, p.seqlen_new, p.heads_kv, p.head_dim_qk}, {p.batch, p.seqlen_new, p.heads_kv, p.head_dim_v}};
        portattn_tensor_t *nt[2] = {&p.k_new, &p.v_new};
        for (int i = 0; i < 2; i++) {
            int64_t st[4] = {w((uint64_t)nd[i][1] * (uint64_t)nd[i][2] * (uint64_t)nd[i][3]),
                             w((uint64_t)nd[i][2] * (uint64_t)nd[i][3]), nd[i][3], 1};
            memcpy(nt[i]->stride, st, sizeof st);
            int64_t e = extent(nd[i], st);
            if (e < 0) must_fail = 1;
            else if (e > MAX_ELEMS) skip = 1;
            else if (e > 0) app[i] = malloc((size_t)(e * esz)), memset(app[i], 0x3d, (size_t)(e * esz));
            nt[i]->data = app[i] ? app[i] : (af & 4 ? NULL : mem[0]); /* NULL, or aliasing Q */
        }
    }
    if (af & 8) {
        size_t n = (size_t)(take(&b, 1) % 8) * 256;
        app[2] = n ? aligned_alloc(256, n) : NULL;
        p.workspace = app[2] ? (af & 16 ? (char *)app[2] + 16 : app[2]) : NULL; /* sometimes misaligned */
        p.workspace_size = af & 32 ? n : (size_t)take(&b, 2);
        p.num_splits = (int)(take(&b, 1) % 7) - 1;
    }
    uint8_t ptr_mut = (uint8_t)take(&b, 1);
    if (ptr_mut < 20 && mem[0]) p.o.data = mem[0];                                   /* O aliases Q */
    else if (ptr_mut < 30 && mem[3]) p.o.data = (char *)mem[3] + 1;                    /* misaligned */
    else if (ptr_mut < 40) t[ptr_mut % 4]->data = NULL;                              /* NULL */
    if (ptr_mut < 20) must_fail |= mem[0] && mem[3] && extent(dims[3], p.o.stride) > 0 && extent(dims[0], p.q.stride) > 0;

    /* A valid call this large would only burn the fuzzer's time (Sk can be huge with a zero stride). */
    double work = (double)nb * (double)p.heads_q * (double)p.seqlen_q * (double)p.seqlen_k *
                  ((double)p.head_dim_qk + (double)p.head_dim_v);
    if (work > 5e7 && p.batch > 0 && p.heads_q > 0 && p.seqlen_q > 0 && p.seqlen_k > 0 && p.head_dim_qk > 0 &&
        p.head_dim_v > 0)
        skip = 1;
    if (!skip || must_fail) {
        for (int i = 0; i < 4; i++) /* never zeros: a recognisable fill */
            if (mem[i]) memset(mem[i], 0x3c, malloc_usable_size(mem[i]));
        portattn_status_t s = portattn_forward(&p, NULL);
        const char *msg = portattn_last_error();
        if (s < PORTATTN_SUCCESS || s > PORTATTN_ERROR_DEVICE || (s != PORTATTN_SUCCESS && !msg[0]) ||
            (s == PORTATTN_SUCCESS && msg[0])) {
            fprintf(stderr, "undocumented status %d or message '%s'\n", (int)s, msg);
            abort(); /* a finding: the fuzzer reports it */
        }
        static long calls, ok_paged, ok_used, ok_any, ok_append; /* PORTATTN_FUZZ_STATS=1: paths reached? */
        calls++, ok_any += s == PORTATTN_SUCCESS;
        ok_append += s == PORTATTN_SUCCESS && p.seqlen_new > 0 && p.batch > 0 && p.seqlen_q > 0;
        ok_paged += s == PORTATTN_SUCCESS && p.block_table && p.batch > 0 && p.seqlen_q > 0;
        ok_used += s == PORTATTN_SUCCESS && p.seqused_k && p.batch > 0 && p.seqlen_q > 0;
        if (calls % 100000 == 0 && getenv("PORTATTN_FUZZ_STATS"))
            fprintf(stderr, "calls %ld: success %ld, paged success %ld, seqused_k success %ld, append success %ld\n",
                    calls, ok_any, ok_paged, ok_used, ok_append);
        if (must_fail && s == PORTATTN_SUCCESS) {
            fprintf(stderr, "a call that must fail succeeded: dtype %d b %lld sq %lld sk %lld hq %lld hkv %lld d %lld/%lld "
                    "varlen %d\n", (int)p.dtype, (long long)p.batch, (long long)p.seqlen_q, (long long)p.seqlen_k,
                    (long long)p.heads_q, (long long)p.heads_kv, (long long)p.head_dim_qk, (long long)p.head_dim_v, varlen);
            for (int i = 0; i < 4; i++)
                fprintf(stderr, "  tensor %d: %p strides %lld %lld %lld %lld\n", i, t[i]->data, (long long)t[i]->stride[0],
                        (long long)t[i]->stride[1], (long long)t[i]->stride[2], (long long)t[i]->stride[3]);
            abort();
        }
    }
    for (int i = 0; i < 5; i++) free(mem[i]);
    for (int i = 0; i < 3; i++) free(app[i]);
    free(cu[0]), free(cu[1]), free(kvc[0]), free(kvc[1]);
    return 0;
}
