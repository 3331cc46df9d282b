/* libFuzzer target over the public API on the CPU backend. The input bytes choose shapes,
 * strides, dtypes, flags, windows, cu_seqlens contents (monotone or not), KV-cache lengths and page
 * tables, appends, workspaces, NULL / aliased / misaligned pointers, K and V sharing memory, index
 * arrays sharing memory with each other or with the tensors, struct_size, and the backend: forced
 * (the CPU, one not compiled in, an invalid id) or AUTO with PORTATTN_BACKEND set or not. Every buffer
 * is allocated to exactly the extent the call describes, so AddressSanitizer catches a single element
 * read or written out of bounds; descriptions too large to back with memory are only passed when
 * validation must reject them (int64 or address-space overflow). Each call goes through all three
 * entry points, which must agree (status and message); a failure must carry a message; and an
 * accepted call of modest size must match the independent reference (tests/cases/naive_ref.c) on
 * pseudo-random inputs with poisoned outputs. Any violation aborts (a finding). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "naive_ref.h"
#include "fuzz_bytes.h"
#include "portattn.h"

enum { MAX_ELEMS = 1 << 18 }; /* largest tensor backed by real memory */
#define MAX_CHECKED_MACS 2e4    /* largest call compared with the reference (it is as slow as the CPU backend) */


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

/* Pseudo-random values in [-1, 1) for n elements of dtype dt (never all alike: masks must matter). */
static void fill_values(portattn_dtype_t dt, void *buf, int64_t n, uint64_t *state)
{
    if (!buf || dt < PORTATTN_DTYPE_F16 || dt > PORTATTN_DTYPE_F32) return;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = *state;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        *state = x;
        pa_store_elem(dt, buf, i, (float)((double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0));
    }
}

/* The backend: mostly the CPU forced, else AUTO under some PORTATTN_BACKEND, one not compiled in,
 * cuda-generic, or an invalid id. */
static void take_backend(bytes *b, portattn_fwd_params_t *p)
{
    static const char *const env[] = {NULL, "cpu", "auto", "", "no-such-backend", "cuda-sm90", "hip-rdna3"};
    const uint8_t sel = (uint8_t)take(b, 1);
    const char *e = env[(sel >> 3) % 7];
    if (e) setenv("PORTATTN_BACKEND", e, 1);
    else unsetenv("PORTATTN_BACKEND");
    switch (sel % 8) {
    case 4: p->backend = PORTATTN_BACKEND_AUTO; break;
    case 5: p->backend = PORTATTN_BACKEND_CUDA_SM90; break;
    case 6: p->backend = (portattn_backend_t)(PORTATTN_BACKEND_COUNT_ + sel % 3 - 1); break;
    case 7: p->backend = PORTATTN_BACKEND_CUDA_GENERIC; break;
    default: p->backend = PORTATTN_BACKEND_CPU; break;
    }
}

static void finding(const char *what, portattn_status_t a, portattn_status_t b, const char *ma, const char *mb)
{
    fflush(stdout); /* the reference's report of the differing elements */
    fprintf(stderr, "%s: %d (%s) vs %d (%s)\n", what, (int)a, ma, (int)b, mb);
    abort();
}

/* All three entry points on one call: query and workspace_size must agree with each other and with
 * forward (status and message; forward may only add a run-time OUT_OF_MEMORY), and an accepted call
 * small enough is compared with the reference, computed before the call. */
static portattn_status_t call_all(const portattn_fwd_params_t *p, int differential)
{
    static char mq[1024], mw[1024];
    portattn_selection_t sel;
    size_t ws = 7;
    const portattn_status_t sq = portattn_forward_query(p, &sel);
    snprintf(mq, sizeof mq, "%s", portattn_last_error());
    const portattn_status_t sw = portattn_forward_workspace_size(p, &ws);
    snprintf(mw, sizeof mw, "%s", portattn_last_error());
    if (sq != sw || strcmp(mq, mw)) finding("query and workspace_size disagree", sq, sw, mq, mw);
    if (sw == PORTATTN_SUCCESS && ws != 0) finding("workspace on the CPU", sw, (portattn_status_t)ws, mw, "");
    double *ro = NULL, *rl = NULL;
    /* a valid call: its products fit (its O is backed by memory) */
    const int64_t rows = sq == PORTATTN_SUCCESS && differential && p->batch > 0 && p->seqlen_q > 0 ? naive_rows(p) : 0;
    if (rows > 0) {
        ro = malloc(sizeof(double) * (size_t)(rows * p->heads_q * p->head_dim_v));
        rl = malloc(sizeof(double) * (size_t)(rows * p->heads_q));
        if (!ro || !rl || naive_forward(p, ro, rl)) free(ro), free(rl), ro = rl = NULL;
    }
    const portattn_status_t sf = portattn_forward(p, NULL);
    const char *mf = portattn_last_error();
    if (sf != sq && !(sq == PORTATTN_SUCCESS && sf == PORTATTN_ERROR_OUT_OF_MEMORY)) finding("query and forward disagree", sq, sf, mq, mf);
    if (sf != PORTATTN_SUCCESS && sq != PORTATTN_SUCCESS && strcmp(mq, mf)) finding("messages differ", sq, sf, mq, mf);
    if (sf == PORTATTN_SUCCESS && ro && naive_compare("fuzz", p, ro, rl)) {
        fprintf(stderr, "dtype %d b %lld sq %lld sk %lld hq %lld hkv %lld d %lld/%lld causal %d window %lld/%lld softcap %g "
                "scale %g varlen %d seqused %d paged %lld append %lld\n", (int)p->dtype, (long long)p->batch,
                (long long)p->seqlen_q, (long long)p->seqlen_k, (long long)p->heads_q, (long long)p->heads_kv,
                (long long)p->head_dim_qk, (long long)p->head_dim_v, p->causal, (long long)p->window_left,
                (long long)p->window_right, (double)p->softcap, (double)p->softmax_scale, p->cu_seqlens_q != NULL,
                p->seqused_k != NULL, (long long)p->page_size, (long long)p->seqlen_new);
        for (int64_t i = 0; p->seqused_k && i < p->batch; i++) fprintf(stderr, "seqused_k[%lld] = %d\n", (long long)i, p->seqused_k[i]);
        for (int64_t i = 0; p->block_table && i < p->batch * p->block_table_stride; i++)
            fprintf(stderr, "block_table[%lld] = %d\n", (long long)i, p->block_table[i]);
        fprintf(stderr, "k %p v %p k strides %lld %lld %lld %lld v strides %lld %lld %lld %lld\n", p->k.data, p->v.data,
                (long long)p->k.stride[0], (long long)p->k.stride[1], (long long)p->k.stride[2], (long long)p->k.stride[3],
                (long long)p->v.stride[0], (long long)p->v.stride[1], (long long)p->v.stride[2], (long long)p->v.stride[3]);
        finding("output differs from the reference", sf, sf, "", "");
    }
    free(ro), free(rl);
    return sf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bytes b = {data, size};
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    take_backend(&b, &p);
    uint64_t values = take(&b, 8) | 1; /* seeds the input values */
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
    int64_t ext[5] = {0};
    int must_fail = 0, skip = 0;
    /* K and V sharing memory: V = K (same strides), V one head dim after K (interleaved when the
     * strides leave room), or V one element after K; V then lives in K's buffer, sized for both */
    const uint8_t kv_alias = (uint8_t)take(&b, 1) % 8;
    for (int i = 0; i < 4; i++) {
        take_strides(&b, dims[i], t[i]->stride);
        if (i == 2 && kv_alias < 3) memcpy(t[2]->stride, t[1]->stride, sizeof t[1]->stride);
        int64_t st[4] = {varlen ? 0 : t[i]->stride[0], t[i]->stride[1], t[i]->stride[2], t[i]->stride[3]};
        int64_t e = extent(dims[i], st); /* varlen ignores stride[0], as the library does */
        ext[i] = e;
        if (e < 0) must_fail = 1;                         /* overflow: validation rejects it */
        else if (e > MAX_ELEMS) skip = 1;                 /* valid-looking but too big to back */
        else if (e > 0 && !(i == 2 && kv_alias < 3 && mem[1])) mem[i] = malloc((size_t)(e * esz));
    }
    int64_t v_off = kv_alias == 0 ? 0 : kv_alias == 1 ? (p.head_dim_qk > 0 ? p.head_dim_qk : 0) : 1;
    if (v_off > MAX_ELEMS) v_off = 1; /* a huge head dim over a zero stride */
    if (kv_alias < 3 && mem[1] && ext[2] > 0 && !skip) { /* one buffer for both */
        const int64_t n = ext[1] > v_off + ext[2] ? ext[1] : v_off + ext[2];
        free(mem[1]);
        mem[1] = n <= MAX_ELEMS ? malloc((size_t)(n * esz)) : NULL;
        ext[1] = mem[1] ? n : 0;
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
        ext[4] = e > 0 ? e : 0;
        p.lse = mem[4];
        p.lse_stride[0] = ls[0], p.lse_stride[1] = ls[1], p.lse_stride[2] = ls[2];
    }
    for (int i = 0; i < 4; i++) t[i]->data = mem[i];
    if (kv_alias < 3 && mem[1] && ext[2] > 0) p.v.data = (char *)mem[1] + v_off * esz;
    else if (kv_alias < 3 && ext[2] > 0) skip = 1; /* V would need K's buffer, which is not backed */

    /* Append (k_new/v_new, exactly sized and contiguous, written into the exactly sized K/V: an append
     * past the cache's end is an ASan finding) and a split-KV workspace the CPU backend ignores. */
    void *app[3] = {NULL, NULL, NULL};
    int64_t app_ext[2] = {0, 0};
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
            else if (e > 0) app[i] = malloc((size_t)(e * esz)), app_ext[i] = e;
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
    /* Index arrays sharing memory: with each other (read-only: legal), or with something written
     * (O, LSE, an appended-to K): the library must refuse those. Only where the shared buffer is
     * large enough, so that an accepted call reads nothing out of bounds. */
    switch (take(&b, 1) % 8) {
    case 1: if (varlen) p.cu_seqlens_k = p.cu_seqlens_q; break;
    case 2: if (kvc[0] && kvc[1]) p.seqused_k = kvc[1]; break; /* block_table has >= batch entries */
    case 3: if (varlen && mem[3] && ext[3] * esz >= (p.batch + 1) * 4) p.cu_seqlens_q = mem[3]; break;
    case 4: if (kvc[0] && mem[1] && ext[1] * esz >= p.batch * 4) p.seqused_k = mem[1]; break;
    case 5: if (p.lse && mem[1] && ext[1] * esz >= ext[4] * 4) p.lse = mem[1]; break;
    case 6: if (kvc[1] && mem[0] && ext[0] * esz >= p.batch * (p.block_table_stride > 0 ? p.block_table_stride : 1) * 4)
                p.block_table = mem[0];
            break;
    default: break;
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
        /* inputs: pseudo-random values where the output is compared (an index array placed in one reads
         * them as its entries), else a cheap constant fill (never zeros); outputs poisoned (NaN) */
        const int checked = !must_fail && work <= MAX_CHECKED_MACS;
        for (int i = 0; i < 3; i++)
            if (checked) fill_values(p.dtype, mem[i], ext[i], &values);
            else if (mem[i]) memset(mem[i], 0x3c, (size_t)(ext[i] * esz));
        for (int i = 0; i < 2; i++)
            if (checked) fill_values(p.dtype, app[i], app_ext[i], &values);
            else if (app[i]) memset(app[i], 0x3d, (size_t)(app_ext[i] * esz));
        if (mem[3]) memset(mem[3], 0xff, (size_t)(ext[3] * esz));
        if (mem[4]) memset(mem[4], 0xff, (size_t)ext[4] * 4);
        portattn_status_t s = call_all(&p, checked);
        const char *msg = portattn_last_error();
        if (s < PORTATTN_SUCCESS || s > PORTATTN_ERROR_DEVICE || (s != PORTATTN_SUCCESS && !msg[0]) ||
            (s == PORTATTN_SUCCESS && msg[0])) {
            fprintf(stderr, "undocumented status %d or message '%s'\n", (int)s, msg);
            abort(); /* a finding: the fuzzer reports it */
        }
        static long calls, ok_paged, ok_used, ok_any, ok_append, ok_checked; /* PORTATTN_FUZZ_STATS=1 */
        calls++, ok_any += s == PORTATTN_SUCCESS, ok_checked += s == PORTATTN_SUCCESS && checked;
        ok_append += s == PORTATTN_SUCCESS && p.seqlen_new > 0 && p.batch > 0 && p.seqlen_q > 0;
        ok_paged += s == PORTATTN_SUCCESS && p.block_table && p.batch > 0 && p.seqlen_q > 0;
        ok_used += s == PORTATTN_SUCCESS && p.seqused_k && p.batch > 0 && p.seqlen_q > 0;
        if (calls % 20000 == 0 && getenv("PORTATTN_FUZZ_STATS"))
            fprintf(stderr, "calls %ld: success %ld (%ld against the reference), paged %ld, seqused_k %ld, append %ld\n",
                    calls, ok_any, ok_checked, ok_paged, ok_used, ok_append);
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
