/* The selector on a CUDA machine: device pointers go to a CUDA backend, host pointers to the CPU,
 * a call nobody can take is NOT_SUPPORTED with every backend's reason, and a forced backend never
 * falls back. Exit 77 without a CUDA device. */
#include <stdio.h>
#include <string.h>

#include "devmem.h"
#include "harness.h"

static int failures, checks;
#define CHECK(cond, ...) (checks++, (cond) ? 0 : (failures++, printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n")))

int main(void)
{
    const int present = test_backend_present(PORTATTN_BACKEND_CUDA_GENERIC);
    if (present) return present;
    /* what AUTO must pick comes from the hardware (compute capability 9.0: cuda-sm90), never from the
     * library's own availability answer */
    const int sm90_device = cuda_compute_capability() == 90;
    enum { S = 64, H = 2, D = 300 };
    size_t bytes = (size_t)S * H * D * 2;
    void *dev[4], *host[4];
    static unsigned short fill[S * H * D];
    for (int i = 0; i < S * H * D; i++) fill[i] = (unsigned short)(0x3c00 + i % 512); /* f16 values in [1, 2) */
    for (int i = 0; i < 4; i++) {
        dev[i] = dm_alloc(DM_CUDA, bytes);
        host[i] = dm_alloc(DM_HOST, bytes);
        if (!dev[i] || !host[i] || dm_upload(DM_CUDA, dev[i], fill, bytes)) return printf("allocation failed\n"), 1;
        memcpy(host[i], fill, bytes);
    }
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F16, p.batch = 1, p.seqlen_q = p.seqlen_k = S, p.heads_q = p.heads_kv = H;
    p.head_dim_qk = p.head_dim_v = 128;
    portattn_selection_t sel;
    portattn_status_t st0;
    void **sets[2] = {dev, host};
    for (int s = 0; s < 2; s++) {
        void **b = sets[s];
        p.q = portattn_tensor_bshd(b[0], S, H, 128), p.k = portattn_tensor_bshd(b[1], S, H, 128);
        p.v = portattn_tensor_bshd(b[2], S, H, 128), p.o = portattn_tensor_bshd(b[3], S, H, 128);
        portattn_status_t st = portattn_forward_query(&p, &sel);
        printf("%s pointers -> %s / %s (skipped: %s)\n", s ? "host" : "device", sel.backend_name, sel.kernel, sel.reason);
        CHECK(st == PORTATTN_SUCCESS, "query: %s", portattn_last_error());
        CHECK(s ? sel.backend == PORTATTN_BACKEND_CPU : sel.backend != PORTATTN_BACKEND_CPU, "picked %s", sel.backend_name);
        CHECK(!s || strstr(sel.reason, "host memory"), "host pointers: reason '%s'", sel.reason);
        CHECK(portattn_forward(&p, NULL) == PORTATTN_SUCCESS && !dm_sync(DM_CUDA), "run: %s", portattn_last_error());
    }
    /* Preference order on device pointers: cuda-sm90 where it runs (H100/H200), and the split-KV
     * decode kernel of cuda-sm80 for a few query tokens, with sm90's reason for passing. */
    p.q = portattn_tensor_bshd(dev[0], S, H, 128), p.k = portattn_tensor_bshd(dev[1], S, H, 128);
    p.v = portattn_tensor_bshd(dev[2], S, H, 128), p.o = portattn_tensor_bshd(dev[3], S, H, 128);
    CHECK(portattn_forward_query(&p, &sel) == PORTATTN_SUCCESS &&
              sel.backend == (sm90_device ? PORTATTN_BACKEND_CUDA_SM90 : PORTATTN_BACKEND_CUDA_SM80),
          "prefill d128 picked %s (%s cuda-sm90 device)", sel.backend_name, sm90_device ? "a" : "not a");
    /* cuda-sm100 has never run on a B200/B300: AUTO passes it even there (forced calls only). */
    CHECK(sel.backend != PORTATTN_BACKEND_CUDA_SM100 &&
              (strstr(sel.reason, "cuda-sm100: forced calls only") || strstr(sel.reason, "cuda-sm100: not compiled in")),
          "cuda-sm100 under AUTO: picked %s, reason '%s'", sel.backend_name, sel.reason);
    p.seqlen_q = 1;
    p.q = portattn_tensor_bshd(dev[0], 1, H, 128), p.o = portattn_tensor_bshd(dev[3], 1, H, 128);
    st0 = portattn_forward_query(&p, &sel);
    printf("decode (Sq = 1) -> %s / %s (skipped: %s)\n", sel.backend_name, sel.kernel, sel.reason);
    CHECK(st0 == PORTATTN_SUCCESS && sel.backend == PORTATTN_BACKEND_CUDA_SM80 && strstr(sel.kernel, "decode") &&
              (!sm90_device || strstr(sel.reason, "cuda-sm90: 1 query tokens")),
          "decode picked %s / %s (%s)", sel.backend_name, sel.kernel, sel.reason);
    p.seqlen_q = S;

    /* Packed queries over a KV cache (serving): cuda-sm90's KV-cache instances take it on an H100/H200,
     * cuda-sm80's paged prefill elsewhere; with head dims over cuda-sm80's largest paged instance (128)
     * AUTO takes cuda-sm90's d256 instance or cuda-generic, and a forced cuda-sm80 says why it cannot. */
    {
        const int32_t cu[3] = {0, 1, S}, used[2] = {S, 5};
        void *dcu = dm_alloc(DM_CUDA, sizeof cu), *dused = dm_alloc(DM_CUDA, sizeof used);
        CHECK(dcu && dused && !dm_upload(DM_CUDA, dcu, cu, sizeof cu) && !dm_upload(DM_CUDA, dused, used, sizeof used),
              "serving: allocation failed");
        p.batch = 2, p.cu_seqlens_q = dcu, p.seqused_k = dused; /* K/V [2, S, H, 128] fit the D = 300 buffers */
        st0 = portattn_forward_query(&p, &sel);
        printf("serving (cu_seqlens_q + seqused_k) -> %s / %s (skipped: %s)\n", sel.backend_name, sel.kernel, sel.reason);
        CHECK(st0 == PORTATTN_SUCCESS &&
                  (sm90_device ? sel.backend == PORTATTN_BACKEND_CUDA_SM90 && strstr(sel.kernel, "sm90-kv<")
                               : sel.backend == PORTATTN_BACKEND_CUDA_SM80 && strstr(sel.kernel, "sm80-paged")),
              "serving picked %s / %s (%s)", sel.backend_name, sel.kernel, sel.reason);
        CHECK(portattn_forward(&p, NULL) == PORTATTN_SUCCESS && !dm_sync(DM_CUDA), "serving run: %s", portattn_last_error());
        /* d136: Q [S, H, 136] and K/V [2, S, H, 136] still fit the buffers */
        p.head_dim_qk = p.head_dim_v = 136;
        p.q = portattn_tensor_bshd(dev[0], S, H, 136), p.k = portattn_tensor_bshd(dev[1], S, H, 136);
        p.v = portattn_tensor_bshd(dev[2], S, H, 136), p.o = portattn_tensor_bshd(dev[3], S, H, 136);
        st0 = portattn_forward_query(&p, &sel);
        printf("serving d136 -> %s / %s (skipped: %s)\n", sel.backend_name, sel.kernel, sel.reason);
        CHECK(st0 == PORTATTN_SUCCESS &&
                  (sm90_device ? sel.backend == PORTATTN_BACKEND_CUDA_SM90 && strstr(sel.kernel, "sm90-kv<") &&
                                     strstr(sel.kernel, "d256")
                               : sel.backend == PORTATTN_BACKEND_CUDA_GENERIC &&
                                     strstr(sel.reason, "cuda-sm80: paged prefill (KV cache): head dims 136/136")),
              "serving d136 picked %s / %s (%s)", sel.backend_name, sel.kernel, sel.reason);
        CHECK(portattn_forward(&p, NULL) == PORTATTN_SUCCESS && !dm_sync(DM_CUDA), "serving d136 run: %s",
              portattn_last_error());
        p.backend = PORTATTN_BACKEND_CUDA_SM80;
        CHECK(portattn_forward(&p, NULL) == PORTATTN_ERROR_NOT_SUPPORTED &&
                  strstr(portattn_last_error(), "paged prefill (KV cache): head dims"),
              "serving d136 forced on cuda-sm80: %s", portattn_last_error());
        p.head_dim_qk = p.head_dim_v = 128;
        p.q = portattn_tensor_bshd(dev[0], S, H, 128), p.k = portattn_tensor_bshd(dev[1], S, H, 128);
        p.v = portattn_tensor_bshd(dev[2], S, H, 128), p.o = portattn_tensor_bshd(dev[3], S, H, 128);
        p.backend = PORTATTN_BACKEND_AUTO, p.batch = 1, p.cu_seqlens_q = NULL, p.seqused_k = NULL;
        dm_free(DM_CUDA, dcu), dm_free(DM_CUDA, dused);
    }

    /* Forced CUDA on host pointers: refused, no fallback. */
    p.backend = PORTATTN_BACKEND_CUDA_GENERIC;
    p.q = portattn_tensor_bshd(host[0], S, H, 128), p.k = portattn_tensor_bshd(host[1], S, H, 128);
    p.v = portattn_tensor_bshd(host[2], S, H, 128), p.o = portattn_tensor_bshd(host[3], S, H, 128);
    CHECK(portattn_forward(&p, NULL) == PORTATTN_ERROR_NOT_SUPPORTED && strstr(portattn_last_error(), "host memory"),
          "forced on host memory: %s", portattn_last_error());
    /* Head dim 300 on device pointers: the GPU kernels refuse, the CPU cannot read device memory. */
    p.backend = PORTATTN_BACKEND_AUTO, p.head_dim_qk = p.head_dim_v = D;
    p.q = portattn_tensor_bshd(dev[0], S, H, D), p.k = portattn_tensor_bshd(dev[1], S, H, D);
    p.v = portattn_tensor_bshd(dev[2], S, H, D), p.o = portattn_tensor_bshd(dev[3], S, H, D);
    portattn_status_t st = portattn_forward(&p, NULL);
    printf("d=300 on device: %s: %s\n", portattn_status_string(st), portattn_last_error());
    CHECK(st == PORTATTN_ERROR_NOT_SUPPORTED && strstr(portattn_last_error(), "cuda-generic") &&
              strstr(portattn_last_error(), "cpu: "), "d=300: %s", portattn_last_error());
    for (int i = 0; i < 4; i++) dm_free(DM_CUDA, dev[i]), dm_free(DM_HOST, host[i]);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
