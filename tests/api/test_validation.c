/* Every validation path returns its documented status and a message that names the problem. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portattn.h"

enum { B = 2, S = 8, H = 4, HKV = 2, D = 16 };
static float q[B * S * H * D], k[B * S * HKV * D], v[B * S * HKV * D], o[B * S * H * D], lse[B * H * S];
static int32_t cu[B + 1];
static int failures, checks;

static portattn_fwd_params_t base(void)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32;
    p.batch = B, p.seqlen_q = S, p.seqlen_k = S, p.heads_q = H, p.heads_kv = HKV, p.head_dim_qk = D, p.head_dim_v = D;
    p.q = portattn_tensor_bshd(q, S, H, D), p.k = portattn_tensor_bshd(k, S, HKV, D);
    p.v = portattn_tensor_bshd(v, S, HKV, D), p.o = portattn_tensor_bshd(o, S, H, D);
    p.lse = lse, p.lse_stride[0] = H * S, p.lse_stride[1] = S, p.lse_stride[2] = 1;
    p.backend = PORTATTN_BACKEND_CPU;
    return p;
}

/* Expects `want`, and a message holding `word`, from all three entry points alike: portattn_forward,
 * portattn_forward_query and portattn_forward_workspace_size validate and select by one rule. */
static void expect(const char *what, const portattn_fwd_params_t *p, portattn_status_t want, const char *word)
{
    static const char *const entry[3] = {"forward", "query", "workspace_size"};
    portattn_selection_t sel;
    size_t bytes;
    portattn_status_t got[3];
    char msg[3][1024];
    got[0] = portattn_forward(p, NULL);
    snprintf(msg[0], sizeof msg[0], "%s", portattn_last_error());
    got[1] = portattn_forward_query(p, &sel);
    snprintf(msg[1], sizeof msg[1], "%s", portattn_last_error());
    got[2] = portattn_forward_workspace_size(p, &bytes);
    snprintf(msg[2], sizeof msg[2], "%s", portattn_last_error());
    int ok = 1;
    for (int e = 0; e < 3; e++) {
        const int ok_e = got[e] == want && (want == PORTATTN_SUCCESS ? msg[e][0] == '\0' : strstr(msg[e], word) != NULL);
        if (!ok_e)
            printf("     %s: expected %s with \"%s\", got %s: %s\n", entry[e], portattn_status_string(want), word,
                   portattn_status_string(got[e]), msg[e]);
        ok &= ok_e;
    }
    checks++;
    failures += !ok;
    printf("%-4s %-34s -> %s: %s\n", ok ? "ok" : "FAIL", what, portattn_status_string(got[0]), msg[0]);
}

#define CASE(what, mutation, status, word)                                                               \
    do {                                                                                                 \
        portattn_fwd_params_t p = base();                                                                \
        mutation;                                                                                        \
        expect(what, &p, status, word);                                                                  \
    } while (0)

static const portattn_status_t INV = PORTATTN_ERROR_INVALID_ARGUMENT;

int main(void)
{
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = (float)(i % 13) * 0.1f - 0.6f;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) k[i] = (float)(i % 7) * 0.1f - 0.3f, v[i] = (float)(i % 5);

    CASE("valid call", (void)0, PORTATTN_SUCCESS, "");
    checks++;
    if (portattn_forward(NULL, NULL) != INV || !strstr(portattn_last_error(), "params is NULL")) failures++;
    CASE("struct_size 0", p.struct_size = 0, INV, "struct_size");
    CASE("struct_size newer", p.struct_size += 8, INV, "not initialised with portattn_fwd_params_init");
    CASE("struct_size garbage", p.struct_size = (size_t)0x7f3a9c41d2e8ull, INV, "not initialised");
    CASE("dtype 0", p.dtype = (portattn_dtype_t)0, INV, "dtype");
    CASE("dtype 99", p.dtype = (portattn_dtype_t)99, INV, "dtype");
    CASE("backend 99", p.backend = (portattn_backend_t)99, INV, "backend");
    CASE("batch -1", p.batch = -1, INV, "batch");
    CASE("seqlen_q -1", p.seqlen_q = -1, INV, "seqlen_q");
    CASE("seqlen_k -5", p.seqlen_k = -5, INV, "seqlen_k");
    CASE("heads_q 0", p.heads_q = 0, INV, "heads_q");
    CASE("heads_kv 0", p.heads_kv = 0, INV, "heads_kv");
    CASE("heads_q not multiple", (p.heads_q = 3, p.heads_kv = 2), INV, "multiple");
    CASE("head_dim_qk 0", p.head_dim_qk = 0, INV, "head_dim_qk");
    CASE("head_dim_v -1", p.head_dim_v = -1, INV, "head_dim_v");
    CASE("window_left -2", p.window_left = -2, INV, "window");
    CASE("window_right -7", p.window_right = -7, INV, "window");
    CASE("window sides INT64_MAX", (p.window_left = INT64_MAX, p.window_right = INT64_MAX), PORTATTN_SUCCESS, "");
    CASE("softcap negative", p.softcap = -1, INV, "softcap");
    CASE("softcap NaN", p.softcap = NAN, INV, "softcap");
    CASE("scale inf", p.softmax_scale = INFINITY, INV, "softmax_scale");
    CASE("q NULL", p.q.data = NULL, INV, "q is NULL");
    CASE("k NULL", p.k.data = NULL, INV, "k is NULL");
    CASE("v NULL", p.v.data = NULL, INV, "v is NULL");
    CASE("o NULL", p.o.data = NULL, INV, "o is NULL");
    CASE("q negative stride", p.q.stride[1] = -1, INV, "negative");
    CASE("o misaligned", p.o.data = (char *)o + 1, INV, "aligned");
    CASE("o zero seq stride", p.o.stride[1] = 0, INV, "cannot show that its elements do not overlap");
    CASE("o heads overlap dims", p.o.stride[2] = D / 2, INV, "cannot show");
    /* strides of tensors with no elements are never used, so never refused */
    CASE("lse NULL, negative strides", (p.lse = NULL, p.lse_stride[1] = -5), PORTATTN_SUCCESS, "");
    CASE("no append, negative k_new strides", p.k_new.stride[1] = -1, PORTATTN_SUCCESS, "");
    CASE("seqlen_k 0, negative k strides", (p.seqlen_k = 0, p.k.stride[1] = -1, p.v.stride[2] = -7), PORTATTN_SUCCESS, "");
    /* the contiguous helpers: a product past int64 gives strides that are refused, not undefined behaviour */
    CASE("tensor_bshd overflow", p.q = portattn_tensor_bshd(q, INT64_MAX / 2, 3, D), INV, "overflows");
    CASE("tensor_bhsd overflow", p.k = portattn_tensor_bhsd(k, (int64_t)1 << 62, 1 << 4, 1 << 8), INV, "overflows");
    CASE("tensor_bshd negative size", p.o = portattn_tensor_bshd(o, S, -H, D), INV, "negative");
    CASE("o aliases q", p.o.data = q, INV, "o overlaps q");
    CASE("o overlaps v", p.o.data = v + 8, INV, "o overlaps");
    CASE("lse overlaps o", p.lse = o, INV, "lse overlaps o");
    CASE("lse overlaps k", p.lse = k, INV, "lse overlaps k");
    CASE("lse zero stride", p.lse_stride[2] = 0, INV, "overlap");
    CASE("lse negative stride", p.lse_stride[1] = -3, INV, "negative");
    CASE("element count overflow", (p.seqlen_q = (int64_t)1 << 40, p.heads_q = (int64_t)1 << 30), INV, "overflow");
    CASE("extent overflow", p.q.stride[0] = INT64_MAX / 2, INV, "overflow");
    CASE("byte extent overflow", p.o.stride[0] = INT64_MAX / 3, INV, "overflow");
    CASE("extent past address space", p.o.stride[0] = (int64_t)1 << 58, INV, "address space");

    /* varlen */
    cu[0] = 0, cu[1] = 3, cu[2] = 8;
    CASE("varlen valid", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu), PORTATTN_SUCCESS, "");
    CASE("varlen only q", p.cu_seqlens_q = cu, INV, "cu_seqlens_k is NULL");
    CASE("varlen only k", p.cu_seqlens_k = cu, INV, "cu_seqlens_q is NULL");
    CASE("varlen max_seqlen too big", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu, p.max_seqlen_q = 9), INV, "max_seqlen");
    CASE("varlen sequence > max_seqlen", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu, p.max_seqlen_k = 4), INV,
         "longer than max_seqlen");
    int32_t bad0[3] = {1, 3, 8}, dec[3] = {0, 5, 4}, over[3] = {0, 3, 9};
    CASE("varlen cu[0] != 0", (p.cu_seqlens_q = bad0, p.cu_seqlens_k = cu), INV, "expected 0");
    CASE("varlen decreasing", (p.cu_seqlens_q = cu, p.cu_seqlens_k = dec), INV, "decreasing");
    CASE("varlen beyond total", (p.cu_seqlens_q = over, p.cu_seqlens_k = cu), INV, "exceeds");
    CASE("varlen cu overlaps o", (p.cu_seqlens_q = (const int32_t *)o, p.cu_seqlens_k = cu), INV, "overlap");

    /* KV cache: pools of 4 pages x 4 tokens over the k/v buffers, two sequences of up to 8 keys */
    int32_t bt[4] = {3, 1, 0, 2}, bt_bad[4] = {3, 1, 4, 2}, su[2] = {8, 5}, su_bad[2] = {9, 5};
#define PAGED (p.block_table = bt, p.block_table_stride = 2, p.page_size = 4, p.num_pages = 4, \
               p.k.stride[0] = p.v.stride[0] = 4 * HKV * D)
    CASE("paged valid", PAGED, PORTATTN_SUCCESS, "");
    CASE("paged + seqused_k valid", (PAGED, p.seqused_k = su), PORTATTN_SUCCESS, "");
    CASE("seqused_k alone valid", p.seqused_k = su, PORTATTN_SUCCESS, "");
    CASE("page_size 3", (PAGED, p.page_size = 3), INV, "power of two");
    CASE("num_pages 0", (PAGED, p.num_pages = 0), INV, "num_pages");
    CASE("block_table_stride 1", (PAGED, p.block_table_stride = 1), INV, "block_table_stride");
    CASE("page fields without table", p.page_size = 16, INV, "block_table is NULL");
    CASE("block_table entry out of range", (PAGED, p.block_table = bt_bad), INV, "num_pages");
    CASE("seqused_k above seqlen_k", p.seqused_k = su_bad, INV, "seqused_k[0]");
    CASE("seqused_k with cu_seqlens", (p.seqused_k = su, p.cu_seqlens_q = cu, p.cu_seqlens_k = cu), INV, "cu_seqlens");
    CASE("pool larger than k", (PAGED, p.num_pages = 1 << 20, p.k.stride[0] = -1), INV, "negative");
    CASE("block_table overlaps o", (PAGED, p.block_table = (const int32_t *)o), INV, "overlaps");

    /* packed queries over the cache (serving): sequences of 3 and 5 query tokens, keys per sequence */
    CASE("serving seqused_k valid", (p.cu_seqlens_q = cu, p.seqused_k = su), PORTATTN_SUCCESS, "");
    CASE("serving paged valid", (PAGED, p.cu_seqlens_q = cu, p.seqused_k = su), PORTATTN_SUCCESS, "");
    CASE("serving paged, no seqused_k, valid", (PAGED, p.cu_seqlens_q = cu), PORTATTN_SUCCESS, "");
    CASE("serving q stride[0] ignored", (p.cu_seqlens_q = cu, p.seqused_k = su, p.q.stride[0] = -9), PORTATTN_SUCCESS, "");
    CASE("serving k stride[0] used", (p.cu_seqlens_q = cu, p.seqused_k = su, p.k.stride[0] = -9), INV, "negative");
    CASE("serving with cu_seqlens_k", (PAGED, p.cu_seqlens_q = cu, p.cu_seqlens_k = cu), INV, "cu_seqlens_k = NULL");
    CASE("serving cache length over max_seqlen_k", (p.cu_seqlens_q = cu, p.seqused_k = su, p.max_seqlen_k = 6), INV,
         "exceeds max_seqlen_k");
    CASE("serving max_seqlen_k without seqused_k", (PAGED, p.cu_seqlens_q = cu, p.max_seqlen_k = 4), INV,
         "without seqused_k");
    CASE("serving query sequence over max_seqlen_q", (p.cu_seqlens_q = cu, p.seqused_k = su, p.max_seqlen_q = 4), INV,
         "longer than max_seqlen");
    CASE("serving block_table entry out of range", (PAGED, p.cu_seqlens_q = cu, p.block_table = bt_bad), INV, "num_pages");

    /* append: two new tokens per sequence into caches holding 5 and 6 of 8 keys */
    static float kn[B * 2 * HKV * D], vn[B * 2 * HKV * D];
    int32_t su_app[2] = {5, 6}, su_full[2] = {7, 6};
#define APPEND (p.seqused_k = su_app, p.k_new = portattn_tensor_bshd(kn, 2, HKV, D), \
                p.v_new = portattn_tensor_bshd(vn, 2, HKV, D), p.seqlen_new = 2)
    CASE("append valid", APPEND, PORTATTN_SUCCESS, "");
    CASE("append paged valid", (APPEND, PAGED), PORTATTN_SUCCESS, "");
    CASE("append without seqused_k", (APPEND, p.seqused_k = NULL), INV, "needs seqused_k");
    CASE("append with packed queries", (APPEND, PAGED, p.cu_seqlens_q = cu), INV, "write the new tokens into the cache");
    CASE("k_new without v_new", (APPEND, p.v_new.data = NULL), INV, "v_new");
    CASE("seqlen_new negative", (APPEND, p.seqlen_new = -1), INV, "negative");
    CASE("seqlen_new without k_new", (p.seqlen_new = 2), INV, "k_new/v_new are NULL");
    CASE("seqlen_new over capacity", (APPEND, p.seqlen_new = 9), INV, "capacity");
    CASE("cache + new over capacity", (APPEND, p.seqused_k = su_full), INV, "seqused_k[0]");
    CASE("append, k_new overlaps k", (APPEND, p.k_new.data = k), INV, "overlaps");
    CASE("append, k overlaps q", (APPEND, p.k.data = q), INV, "overlaps");
    CASE("append, k self-overlapping", (APPEND, p.k.stride[1] = 0), INV, "overlap");
    CASE("append, k and v the same tensor", (APPEND, p.v.data = k), INV, "same tensor");
    /* K and V in one buffer: refused when an element could be written as both, accepted interleaved */
    static float kv[B * S * 2 * HKV * D];
#define KV_STRIDES(t, s2) (t.stride[0] = S * 2 * HKV * D, t.stride[1] = 2 * HKV * D, t.stride[2] = s2, t.stride[3] = 1)
    CASE("append, v one element after k", (APPEND, p.k.data = kv, p.v.data = kv + 1), INV, "cannot show that an append");
    CASE("append, v one row after k", (APPEND, p.k.data = kv, p.v.data = kv + HKV * D), INV, "cannot show that an append");
    CASE("append, k and v overlap with other strides", (APPEND, p.k.data = kv, p.v.data = kv + 1, KV_STRIDES(p.v, D)),
         INV, "different strides");
    CASE("append, k and v interleaved [B,S,2,H,D]",
         (APPEND, p.k.data = kv, p.v.data = kv + HKV * D, KV_STRIDES(p.k, D), KV_STRIDES(p.v, D)), PORTATTN_SUCCESS, "");
    CASE("append, k and v interleaved [B,S,H,2,D]",
         (APPEND, p.k.data = kv, p.v.data = kv + D, KV_STRIDES(p.k, 2 * D), KV_STRIDES(p.v, 2 * D)), PORTATTN_SUCCESS, "");
    CASE("append, interleaved but v an element early",
         (APPEND, p.k.data = kv, p.v.data = kv + HKV * D - 1, KV_STRIDES(p.k, D), KV_STRIDES(p.v, D)), INV,
         "cannot show");
    int32_t bt_shared[4] = {1, 3, 0, 3}; /* both sequences' second page is page 3... */
    int32_t su_shared[2] = {4, 4};       /* ...and both append at key 4 = row 0 of their second page */
    CASE("append, two sequences write one page row", (APPEND, PAGED, p.block_table = bt_shared, p.seqused_k = su_shared),
         INV, "two sequences write");
    int32_t bt_read[4] = {1, 3, 0, 1}; /* page 1: sequence 0 appends to rows 2-3, sequence 1 reads it (and writes row 0) */
    int32_t su_read[2] = {2, 3};
    CASE("append, one sequence writes a page another reads", (APPEND, PAGED, p.block_table = bt_read, p.seqused_k = su_read),
         INV, "also reads as other keys");
    int32_t bt_twice[4] = {2, 2, 0, 1}; /* sequence 0's keys 0-3 and 4-7 are both page 2: its append rewrites keys 0-1 */
    int32_t su_twice[2] = {4, 1};
    CASE("append, a table naming the written page twice", (APPEND, PAGED, p.block_table = bt_twice, p.seqused_k = su_twice),
         INV, "also reads as other keys");
    int32_t bt_prefix[4] = {1, 3, 1, 2}; /* a shared full first page that no append writes: fine */
    int32_t su_prefix[2] = {4, 5};
    CASE("append, a shared prefix page", (APPEND, PAGED, p.block_table = bt_prefix, p.seqused_k = su_prefix),
         PORTATTN_SUCCESS, "");
    CASE("append, no queries", (APPEND, p.seqlen_q = 0, p.q.data = p.o.data = NULL, p.lse = NULL), INV, "query tokens");
    /* workspace and splits */
    static _Alignas(256) float ws[1024];
    CASE("workspace valid", (p.workspace = ws, p.workspace_size = sizeof ws, p.num_splits = 4), PORTATTN_SUCCESS, "");
    CASE("workspace_size without workspace", p.workspace_size = 64, INV, "workspace is NULL");
    CASE("workspace misaligned", (p.workspace = ws + 1, p.workspace_size = 64), INV, "256-byte");
    CASE("workspace overlaps o", (p.workspace = (void *)(((uintptr_t)o + 255) & ~(uintptr_t)255), p.workspace_size = 64), INV,
         "workspace overlaps");
    CASE("num_splits negative", p.num_splits = -2, INV, "num_splits");
    CASE("workspace_size SIZE_MAX", (p.workspace = ws, p.workspace_size = SIZE_MAX), INV, "runs past the end");
    /* struct versions: the 0.1 size is accepted, anything else smaller is not */
    CASE("struct_size 0.1", p.struct_size = PORTATTN_FWD_PARAMS_SIZE_V1, PORTATTN_SUCCESS, "");
    CASE("struct_size odd", p.struct_size = PORTATTN_FWD_PARAMS_SIZE_V1 + 8, INV, "struct_size");
    CASE("struct_size 0.1 ignores newer fields", (p.struct_size = PORTATTN_FWD_PARAMS_SIZE_V1, p.num_splits = -5),
         PORTATTN_SUCCESS, "");
    {
        portattn_fwd_params_t p = base();
        size_t bytes = 1;
        checks++;
        if (portattn_forward_workspace_size(&p, &bytes) || bytes != 0 || portattn_forward_workspace_size(&p, NULL) != INV)
            failures++, printf("FAIL workspace_size on the CPU backend: %zu\n", bytes);
    }

    /* no-ops: nothing to compute is success, even with no buffers */
    CASE("batch 0", (p.batch = 0, p.q.data = p.k.data = p.v.data = p.o.data = NULL, p.lse = NULL), PORTATTN_SUCCESS, "");
    CASE("seqlen_q 0", (p.seqlen_q = 0, p.q.data = p.o.data = NULL, p.lse = NULL), PORTATTN_SUCCESS, "");
    CASE("seqlen_k 0 writes masked rows", (p.seqlen_k = 0, p.k.data = p.v.data = NULL), PORTATTN_SUCCESS, "");
    checks++;
    if (!(o[0] == 0 && isinf(lse[0]) && lse[0] < 0)) failures++, printf("FAIL seqlen_k 0 did not write O=0/LSE=-inf\n");

    /* forcing a backend that cannot run here (not compiled, or no device for it): the first one the
     * library reports unavailable, so the check holds in every build (CPU-only, CUDA, emulation) */
    portattn_backend_t absent = PORTATTN_BACKEND_AUTO;
    for (int b = 1; b < PORTATTN_BACKEND_COUNT_ && absent == PORTATTN_BACKEND_AUTO; b++) {
        portattn_backend_info_t bi;
        if (portattn_backend_get_info((portattn_backend_t)b, &bi) == PORTATTN_SUCCESS && !bi.available)
            absent = (portattn_backend_t)b;
    }
    if (absent != PORTATTN_BACKEND_AUTO) {
        const char *an = portattn_backend_name(absent);
        CASE("forced, unavailable", p.backend = absent, PORTATTN_ERROR_BACKEND_UNAVAILABLE, an);
        CASE("forced, unavailable, empty call", (p.backend = absent, p.batch = 0), PORTATTN_ERROR_BACKEND_UNAVAILABLE, an);
        setenv("PORTATTN_BACKEND", an, 1);
        CASE("env names an unavailable backend", p.backend = PORTATTN_BACKEND_AUTO, PORTATTN_ERROR_BACKEND_UNAVAILABLE, an);
        CASE("env unavailable, empty call", (p.backend = PORTATTN_BACKEND_AUTO, p.seqlen_q = 0), PORTATTN_ERROR_BACKEND_UNAVAILABLE, an);
    } else {
        printf("note: every backend is available here; the forced-unavailable checks do not apply\n");
    }
    setenv("PORTATTN_BACKEND", "no-such-backend", 1);
    CASE("env bad name", p.backend = PORTATTN_BACKEND_AUTO, INV, "PORTATTN_BACKEND");
    CASE("env bad name, empty call", (p.backend = PORTATTN_BACKEND_AUTO, p.batch = 0), INV, "PORTATTN_BACKEND");
    setenv("PORTATTN_BACKEND", "cpu", 1);
    CASE("env cpu", p.backend = PORTATTN_BACKEND_AUTO, PORTATTN_SUCCESS, "");
    CASE("api overrides env", p.backend = PORTATTN_BACKEND_CPU, PORTATTN_SUCCESS, "");
    unsetenv("PORTATTN_BACKEND");

    /* query, info, names and strings */
    portattn_fwd_params_t p = base();
    portattn_selection_t sel;
    checks++;
    if (portattn_forward_query(&p, NULL) != INV) failures++, printf("FAIL query with NULL selection\n");
    checks++;
    if (portattn_forward_query(&p, &sel) || sel.backend != PORTATTN_BACKEND_CPU || !strstr(sel.kernel, "cpu"))
        failures++, printf("FAIL query: %s %s\n", sel.backend_name, sel.kernel);
    portattn_backend_info_t info;
    checks++;
    if (portattn_backend_get_info(PORTATTN_BACKEND_AUTO, &info) != INV ||
        portattn_backend_get_info(PORTATTN_BACKEND_CPU, NULL) != INV ||
        portattn_backend_get_info((portattn_backend_t)42, &info) != INV)
        failures++, printf("FAIL backend_get_info accepted a bad argument\n");
    for (int b = 1; b < PORTATTN_BACKEND_COUNT_; b++) {
        int ok = 0;
        checks++;
        if (portattn_backend_get_info((portattn_backend_t)b, &info) ||
            (int)portattn_backend_from_name(info.name, &ok) != b || !ok)
            failures++, printf("FAIL backend %d name round trip\n", b);
        printf("     backend %-13s compiled %d available %d (%s)\n", info.name, info.compiled, info.available, info.detail);
    }
    checks++;
    int ok = 1;
    portattn_backend_from_name("nope", &ok);
    if (ok || strcmp(portattn_backend_name((portattn_backend_t)77), "invalid")) failures++;
    for (int s = 0; s <= PORTATTN_ERROR_INTERNAL; s++) {
        checks++;
        const char *str = portattn_status_string((portattn_status_t)s);
        if (!str || !*str || !strcmp(str, "unknown status")) failures++;
    }
    checks++;
    if (strcmp(portattn_status_string((portattn_status_t)1234), "unknown status")) failures++;

    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
