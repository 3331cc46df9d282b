/* Every validation path of portattn_backward returns its documented status and a message that names
 * the problem: the forward's checks on the shared fields, and the backward's own (LSE required, dO,
 * gradient outputs with distinct addresses that share memory with no other argument). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portattn.h"

enum { B = 2, S = 8, H = 4, HKV = 2, D = 16 };
static float q[B * S * H * D], k[B * S * HKV * D], v[B * S * HKV * D], o[B * S * H * D], lse[B * H * S];
static float dout[B * S * H * D], dq[B * S * H * D], dk[B * S * HKV * D], dv[B * S * HKV * D];
static int32_t cu[B + 1];
static int failures, checks;

static portattn_bwd_params_t base(void)
{
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32;
    p.batch = B, p.seqlen_q = S, p.seqlen_k = S, p.heads_q = H, p.heads_kv = HKV, p.head_dim_qk = D, p.head_dim_v = D;
    p.q = portattn_tensor_bshd(q, S, H, D), p.k = portattn_tensor_bshd(k, S, HKV, D);
    p.v = portattn_tensor_bshd(v, S, HKV, D), p.o = portattn_tensor_bshd(o, S, H, D);
    p.dout = portattn_tensor_bshd(dout, S, H, D);
    p.lse = lse, p.lse_stride[0] = H * S, p.lse_stride[1] = S, p.lse_stride[2] = 1;
    p.dq = portattn_tensor_bshd(dq, S, H, D), p.dk = portattn_tensor_bshd(dk, S, HKV, D);
    p.dv = portattn_tensor_bshd(dv, S, HKV, D);
    p.backend = PORTATTN_BACKEND_CPU;
    return p;
}

/* Expects `want` from portattn_backward, _query and _workspace_size, and a message holding `word`. */
static void expect(const char *what, const portattn_bwd_params_t *p, portattn_status_t want, const char *word)
{
    portattn_selection_t sel;
    size_t bytes = 7;
    portattn_status_t got = portattn_backward(p, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", portattn_last_error());
    portattn_status_t got_q = portattn_backward_query(p, &sel), got_w = portattn_backward_workspace_size(p, &bytes);
    int ok = got == want && (want == PORTATTN_SUCCESS || (got_q == want && got_w == want)) &&
             (want == PORTATTN_SUCCESS ? msg[0] == '\0' && bytes == 0 : strstr(msg, word) != NULL);
    checks++;
    failures += !ok;
    printf("%-4s %-36s -> %s: %s\n", ok ? "ok" : "FAIL", what, portattn_status_string(got), msg);
    if (!ok)
        printf("     expected %s with \"%s\" (query said %s, workspace_size %s)\n", portattn_status_string(want), word,
               portattn_status_string(got_q), portattn_status_string(got_w));
}

#define CASE(what, mutation, status, word)                                                               \
    do {                                                                                                 \
        portattn_bwd_params_t p = base();                                                                \
        mutation;                                                                                        \
        expect(what, &p, status, word);                                                                  \
    } while (0)

static const portattn_status_t INV = PORTATTN_ERROR_INVALID_ARGUMENT;

int main(void)
{
    /* Inputs of a real forward call, so the valid cases compute real gradients. */
    uint64_t x = 88172645463325252ull;
    float *bufs[4] = {q, k, v, dout};
    size_t lens[4] = {sizeof q, sizeof k, sizeof v, sizeof dout};
    for (int b = 0; b < 4; b++)
        for (size_t i = 0; i < lens[b] / sizeof(float); i++)
            x ^= x << 13, x ^= x >> 7, x ^= x << 17, bufs[b][i] = (float)(x >> 40) / 8388608.0f - 1.0f;
    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = PORTATTN_DTYPE_F32, f.batch = B, f.seqlen_q = S, f.seqlen_k = S, f.heads_q = H, f.heads_kv = HKV;
    f.head_dim_qk = D, f.head_dim_v = D;
    f.q = portattn_tensor_bshd(q, S, H, D), f.k = portattn_tensor_bshd(k, S, HKV, D);
    f.v = portattn_tensor_bshd(v, S, HKV, D), f.o = portattn_tensor_bshd(o, S, H, D);
    f.lse = lse, f.lse_stride[0] = H * S, f.lse_stride[1] = S, f.lse_stride[2] = 1;
    if (portattn_forward(&f, NULL)) return printf("FAIL forward: %s\n", portattn_last_error()), 1;

    CASE("valid call", (void)0, PORTATTN_SUCCESS, "");
    checks++;
    if (portattn_backward(NULL, NULL) != INV || !strstr(portattn_last_error(), "params is NULL")) failures++;
    CASE("struct_size 0", p.struct_size = 0, INV, "struct_size");
    CASE("struct_size smaller", p.struct_size -= 8, INV, "struct_size");
    CASE("struct_size newer", p.struct_size += 8, INV, "newer portattn.h");
    /* the forward's checks, through the shared validation */
    CASE("dtype 0", p.dtype = (portattn_dtype_t)0, INV, "dtype");
    CASE("backend 99", p.backend = (portattn_backend_t)99, INV, "backend");
    CASE("batch -1", p.batch = -1, INV, "batch");
    CASE("heads_q not multiple", (p.heads_q = 3, p.heads_kv = 2), INV, "multiple");
    CASE("head_dim_v 0", p.head_dim_v = 0, INV, "head_dim_v");
    CASE("window_left -3", p.window_left = -3, INV, "window");
    CASE("scale NaN", p.softmax_scale = NAN, INV, "softmax_scale");
    CASE("softcap negative", p.softcap = -2, INV, "softcap");
    CASE("q NULL", p.q.data = NULL, INV, "q is NULL");
    CASE("o NULL", p.o.data = NULL, INV, "o is NULL");
    CASE("k negative stride", p.k.stride[2] = -1, INV, "negative");
    CASE("element count overflow", (p.seqlen_q = (int64_t)1 << 40, p.heads_q = (int64_t)1 << 30), INV, "overflow");
    CASE("v extent overflow", p.v.stride[0] = INT64_MAX / 2, INV, "overflow");
    /* LSE */
    CASE("lse NULL", p.lse = NULL, INV, "lse is NULL");
    CASE("lse zero stride", p.lse_stride[2] = 0, INV, "overlap");
    CASE("lse negative stride", p.lse_stride[0] = -1, INV, "negative");
    CASE("lse misaligned", p.lse = (const float *)((const char *)lse + 2), INV, "aligned");
    /* dO */
    CASE("dout NULL", p.dout.data = NULL, INV, "dout is NULL");
    CASE("dout negative stride", p.dout.stride[1] = -4, INV, "negative");
    CASE("dout extent overflow", p.dout.stride[0] = INT64_MAX / 3, INV, "overflow");
    CASE("dout may alias o (both read)", p.dout.data = o, PORTATTN_SUCCESS, "");
    /* gradients: well-formed, distinct addresses */
    CASE("dq NULL", p.dq.data = NULL, INV, "dq is NULL");
    CASE("dk NULL", p.dk.data = NULL, INV, "dk is NULL");
    CASE("dv NULL", p.dv.data = NULL, INV, "dv is NULL");
    CASE("dq misaligned", p.dq.data = (char *)dq + 1, INV, "aligned");
    CASE("dk zero seq stride", p.dk.stride[1] = 0, INV, "overlap");
    CASE("dv heads overlap dims", p.dv.stride[2] = D / 2, INV, "overlap");
    CASE("dq extent past address space", p.dq.stride[0] = (int64_t)1 << 58, INV, "address space");
    CASE("dq element count overflow", (p.head_dim_qk = (int64_t)1 << 62), INV, "overflow");
    /* aliasing of every gradient with every other argument */
    CASE("dq aliases q", p.dq.data = q, INV, "dq overlaps q");
    CASE("k inside dq", p.k.data = dq + 4, INV, "dq overlaps k");
    CASE("dk aliases v", p.v.data = dk, INV, "dk overlaps v");
    CASE("dv aliases o", p.dv.data = o, INV, "dv overlaps o");
    CASE("dv aliases dout", p.dv.data = dout, INV, "dv overlaps dout");
    CASE("lse inside dk", p.lse = dk + 8, INV, "dk overlaps lse");
    CASE("dq overlaps dk", p.dk.data = dq + 8, INV, "dq overlaps dk");
    CASE("dk aliases dv", p.dv.data = dk, INV, "dk overlaps dv");
    CASE("dq aliases dv", p.dv.data = dq, INV, "dq overlaps dv");
    /* varlen */
    cu[0] = 0, cu[1] = 3, cu[2] = 8;
    CASE("varlen valid", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu), PORTATTN_SUCCESS, "");
    CASE("varlen only k", p.cu_seqlens_k = cu, INV, "cu_seqlens_q is NULL");
    CASE("varlen only q", p.cu_seqlens_q = cu, INV, "cu_seqlens_k is NULL");
    int32_t dec[3] = {0, 5, 4};
    CASE("varlen decreasing", (p.cu_seqlens_q = cu, p.cu_seqlens_k = dec), INV, "decreasing");
    CASE("varlen dk overlaps cu_seqlens", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu, p.dk.data = cu), INV,
         "overlaps cu_seqlens");
    CASE("varlen dq stride[0] ignored", (p.cu_seqlens_q = cu, p.cu_seqlens_k = cu, p.dq.stride[0] = -9), PORTATTN_SUCCESS,
         "");
    /* workspace */
    static _Alignas(256) float ws[1024];
    CASE("workspace valid", (p.workspace = ws, p.workspace_size = sizeof ws), PORTATTN_SUCCESS, "");
    CASE("workspace misaligned", (p.workspace = ws + 1, p.workspace_size = 64), INV, "256-byte");
    CASE("workspace overlaps dq",
         (p.workspace = (void *)(((uintptr_t)dq + 255) & ~(uintptr_t)255), p.workspace_size = 64), INV,
         "dq overlaps workspace");
    /* no-ops and degenerate shapes */
    CASE("batch 0, no buffers",
         (p.batch = 0, p.q.data = p.k.data = p.v.data = p.o.data = p.dout.data = p.dq.data = p.dk.data = p.dv.data = NULL,
          p.lse = NULL),
         PORTATTN_SUCCESS, "");
    CASE("seqlen_q 0 (dk, dv written 0)", (p.seqlen_q = 0, p.q.data = p.o.data = p.dout.data = p.dq.data = NULL, p.lse = NULL),
         PORTATTN_SUCCESS, "");
    checks++;
    if (dk[0] != 0.0f || dv[5] != 0.0f) failures++, printf("FAIL seqlen_q 0 did not write dk = dv = 0\n");
    CASE("seqlen_k 0 (dq written 0)", (p.seqlen_k = 0, p.k.data = p.v.data = p.dk.data = p.dv.data = NULL),
         PORTATTN_SUCCESS, "");
    checks++;
    if (dq[0] != 0.0f || dq[B * S * H * D - 1] != 0.0f) failures++, printf("FAIL seqlen_k 0 did not write dq = 0\n");

    /* forcing */
    portattn_backend_t absent = PORTATTN_BACKEND_AUTO;
    for (int b = 1; b < PORTATTN_BACKEND_COUNT_ && absent == PORTATTN_BACKEND_AUTO; b++) {
        portattn_backend_info_t bi;
        if (portattn_backend_get_info((portattn_backend_t)b, &bi) == PORTATTN_SUCCESS && !bi.available)
            absent = (portattn_backend_t)b;
    }
    if (absent != PORTATTN_BACKEND_AUTO)
        CASE("forced, unavailable", p.backend = absent, PORTATTN_ERROR_BACKEND_UNAVAILABLE, portattn_backend_name(absent));
    setenv("PORTATTN_BACKEND", "no-such-backend", 1);
    CASE("env bad name", p.backend = PORTATTN_BACKEND_AUTO, INV, "PORTATTN_BACKEND");
    CASE("env bad name, empty call", (p.backend = PORTATTN_BACKEND_AUTO, p.batch = 0), INV, "PORTATTN_BACKEND");
    unsetenv("PORTATTN_BACKEND");
    CASE("auto picks a backward", p.backend = PORTATTN_BACKEND_AUTO, PORTATTN_SUCCESS, "");

    /* query */
    portattn_bwd_params_t p = base();
    portattn_selection_t sel;
    checks++;
    if (portattn_backward_query(&p, NULL) != INV) failures++, printf("FAIL query with NULL selection\n");
    checks++;
    if (portattn_backward_query(&p, &sel) || sel.backend != PORTATTN_BACKEND_CPU || !strstr(sel.kernel, "bwd"))
        failures++, printf("FAIL query: %s %s\n", sel.backend_name, sel.kernel);
    p.backend = PORTATTN_BACKEND_AUTO;
    checks++;
    if (portattn_backward_query(&p, &sel) || sel.backend != PORTATTN_BACKEND_CPU)
        failures++, printf("FAIL auto query: %s\n", sel.backend_name);
    printf("     auto backward query: %s %s (%s)\n", sel.backend_name, sel.kernel, sel.reason);
    checks++;
    size_t bytes = 3;
    if (portattn_backward_workspace_size(&p, NULL) != INV || portattn_backward_workspace_size(&p, &bytes) || bytes)
        failures++, printf("FAIL workspace_size\n");
    checks++;
    portattn_bwd_params_init(NULL); /* a no-op, never a crash */
    portattn_bwd_params_init(&p);
    if (p.struct_size != sizeof p || p.window_left != -1 || p.window_right != -1 || p.backend != PORTATTN_BACKEND_AUTO)
        failures++, printf("FAIL bwd_params_init defaults\n");

    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
