/* GPU errors come back as statuses with messages:
 *   test_cuda_errors <GPU backend>      exit 0 pass, 1 fail, 77 no GPU
 * 1. Out of memory: the device is filled with the test's own allocations, then a split-KV decode
 *    call without a workspace (the library would allocate its split scratch) must either succeed
 *    with the right answer (it falls back to one split) or return OUT_OF_MEMORY/DEVICE with a
 *    message; a prefill call likewise. Nothing may abort. Each call is made with an error of the
 *    caller pending (a failed cudaSetDevice), which must still be pending after it, whatever the
 *    outcome: the library may not clear it, not even after its own failed allocation (a static
 *    libportattn only: a shared one has its own copy of the runtime, and of its last error).
 * 2. A dead context: a kernel traps (the sticky state a faulting kernel or a lost device leaves),
 *    then forward on the GPU backend (forced and automatic) must return PORTATTN_ERROR_DEVICE naming
 *    the CUDA error, forward_query and workspace_size (which launch nothing) must answer or report
 *    it, and the CPU backend must still work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"

int pa_test_trap(char *name, int len); /* cuda_fault.cu */

enum { B = 1, HQ = 8, HKV = 2, D = 128, SK = 4096 };

typedef struct prob {
    int64_t sq;
    uint16_t *hq, *hk, *hv, *ho;
    float *fq, *fk, *fv, *fo;
    void *dq, *dk, *dv, *dout;
} prob;

static int fails;

/* Which runtime's last error a pending-error check can see (tests/CMakeLists.txt). */
static void runtime_note(void)
{
    printf(PA_TEST_SHARES_RUNTIME ? "note the library shares this program's CUDA runtime (static build): the pending-error "
                                    "checks see its effect\n"
                                  : "note the library has its own copy of the CUDA runtime (shared build): it cannot "
                                    "touch this program's last error; build with -DBUILD_SHARED_LIBS=OFF to test that "
                                    "it leaves it alone\n");
}
#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL " __VA_ARGS__); printf("\n"); fails++; } } while (0)

static void params(portattn_fwd_params_t *p, const prob *t, portattn_dtype_t dt, void *q, void *k, void *v, void *o)
{
    portattn_fwd_params_init(p);
    p->dtype = dt, p->batch = B, p->seqlen_q = t->sq, p->seqlen_k = SK, p->heads_q = HQ, p->heads_kv = HKV;
    p->head_dim_qk = p->head_dim_v = D, p->causal = 1;
    p->q = portattn_tensor_bshd(q, t->sq, HQ, D), p->o = portattn_tensor_bshd(o, t->sq, HQ, D);
    p->k = portattn_tensor_bshd(k, SK, HKV, D), p->v = portattn_tensor_bshd(v, SK, HKV, D);
}

static int setup(prob *t, int64_t sq, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    t->sq = sq;
    size_t qn = (size_t)(B * sq * HQ * D), kn = (size_t)(B * SK * HKV * D);
    t->hq = malloc(qn * 2), t->ho = malloc(qn * 2), t->hk = malloc(kn * 2), t->hv = malloc(kn * 2);
    t->fq = malloc(qn * 4), t->fo = malloc(qn * 4), t->fk = malloc(kn * 4), t->fv = malloc(kn * 4);
    t->dq = dm_alloc(DM_CUDA, qn * 2), t->dout = dm_alloc(DM_CUDA, qn * 2);
    t->dk = dm_alloc(DM_CUDA, kn * 2), t->dv = dm_alloc(DM_CUDA, kn * 2);
    if (!t->hq || !t->ho || !t->hk || !t->hv || !t->fq || !t->fo || !t->fk || !t->fv || !t->dq || !t->dout ||
        !t->dk || !t->dv)
        return 0;
    for (size_t i = 0; i < qn; i++) t->hq[i] = pa_f32_to_bf16((float)urand(&seed)), t->fq[i] = pa_bf16_to_f32(t->hq[i]);
    for (size_t i = 0; i < kn; i++) {
        t->hk[i] = pa_f32_to_bf16((float)urand(&seed)), t->fk[i] = pa_bf16_to_f32(t->hk[i]);
        t->hv[i] = pa_f32_to_bf16((float)urand(&seed)), t->fv[i] = pa_bf16_to_f32(t->hv[i]);
    }
    memset(t->ho, 0xFF, qn * 2); /* poison */
    portattn_fwd_params_t p;
    params(&p, t, PORTATTN_DTYPE_F32, t->fq, t->fk, t->fv, t->fo);
    p.backend = PORTATTN_BACKEND_CPU;
    return portattn_forward(&p, NULL) == PORTATTN_SUCCESS && !dm_upload(DM_CUDA, t->dq, t->hq, qn * 2) &&
           !dm_upload(DM_CUDA, t->dk, t->hk, kn * 2) && !dm_upload(DM_CUDA, t->dv, t->hv, kn * 2) &&
           !dm_upload(DM_CUDA, t->dout, t->ho, qn * 2);
}

/* Relative L2 error of the downloaded output against the oracle (inf if non-finite). */
static double error_of(const prob *t)
{
    size_t qn = (size_t)(B * t->sq * HQ * D);
    if (dm_download(DM_CUDA, t->ho, t->dout, qn * 2)) return INFINITY;
    double se = 0, sr = 0;
    for (size_t i = 0; i < qn; i++) {
        double g = pa_bf16_to_f32(t->ho[i]), e = g - t->fo[i];
        if (!isfinite(g)) return INFINITY;
        se += e * e, sr += (double)t->fo[i] * t->fo[i];
    }
    return sqrt(se / sr);
}

static void release(prob *t)
{
    dm_free(DM_CUDA, t->dq), dm_free(DM_CUDA, t->dk), dm_free(DM_CUDA, t->dv), dm_free(DM_CUDA, t->dout);
    free(t->hq), free(t->ho), free(t->hk), free(t->hv), free(t->fq), free(t->fo), free(t->fk), free(t->fv);
}

/* Takes all free device memory in shrinking chunks; returns the number of chunks held. */
static int fill_device(void **chunks, int max, double *gb)
{
    static const size_t sizes[] = {(size_t)1 << 30, (size_t)64 << 20, (size_t)2 << 20, (size_t)64 << 10, 4096, 256};
    int n = 0;
    *gb = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        while (n < max && (chunks[n] = dm_alloc(DM_CUDA, sizes[s])) != NULL) *gb += (double)sizes[s] / 1e9, n++;
    return n;
}

static void out_of_memory(portattn_backend_t be, const char *name, const prob *tests, int ntests)
{
    static void *chunks[1 << 16];
    double gb;
    int n = fill_device(chunks, 1 << 16, &gb);
    printf("device filled: %d chunks, %.1f GB\n", n, gb);
    portattn_status_t st[4];
    char msg[4][256];
    cudaError_t mine[4], after[4];
    for (int i = 0; i < ntests; i++) {
        portattn_fwd_params_t p;
        params(&p, &tests[i], PORTATTN_DTYPE_BF16, tests[i].dq, tests[i].dk, tests[i].dv, tests[i].dout);
        p.backend = be;
        (void)cudaGetLastError();
        mine[i] = cudaSetDevice(-1); /* the caller's pending error */
        st[i] = portattn_forward(&p, NULL);
        after[i] = cudaGetLastError();
        snprintf(msg[i], sizeof msg[i], "%s", portattn_last_error());
        dm_sync(DM_CUDA);
    }
    for (int i = 0; i < n; i++) dm_free(DM_CUDA, chunks[i]);
    for (int i = 0; i < ntests; i++) {
        /* The runtime may hold the library's error in place of the caller's (it keeps the newer one). */
        const int kept = mine[i] != cudaSuccess && after[i] != cudaSuccess;
        printf("%-4s %s oom sq=%lld: caller's pending %s, after the call %s\n", kept ? "ok" : "FAIL", name,
               (long long)tests[i].sq, cudaGetErrorName(mine[i]), cudaGetErrorName(after[i]));
        fails += !kept;
        if (st[i] == PORTATTN_ERROR_NOT_SUPPORTED && strstr(msg[i], "query tokens")) {
            printf("n/a  %s oom sq=%lld: the backend does not take this shape: %s\n", name, (long long)tests[i].sq, msg[i]);
        } else if (st[i] == PORTATTN_SUCCESS) {
            double err = error_of(&tests[i]);
            printf("%-4s %s oom sq=%lld: success on a full device, rel-L2 %.2e\n", err <= 1e-2 ? "ok" : "FAIL", name,
                   (long long)tests[i].sq, err);
            fails += !(err <= 1e-2);
        } else {
            int ok = (st[i] == PORTATTN_ERROR_OUT_OF_MEMORY || st[i] == PORTATTN_ERROR_DEVICE) && msg[i][0];
            printf("%-4s %s oom sq=%lld: %s: %s\n", ok ? "ok" : "FAIL", name, (long long)tests[i].sq,
                   portattn_status_string(st[i]), msg[i]);
            fails += !ok;
        }
    }
}

static void dead_context(portattn_backend_t be, const char *name, const prob *t)
{
    char err[64];
    int e = pa_test_trap(err, sizeof err);
    CHECK(e != 0, "the trap kernel did not fail");
    printf("trap kernel: %s\n", err);
    portattn_fwd_params_t p;
    params(&p, t, PORTATTN_DTYPE_BF16, t->dq, t->dk, t->dv, t->dout);
    for (int forced = 0; forced < 2; forced++) {
        p.backend = forced ? be : PORTATTN_BACKEND_AUTO;
        const char *how = forced ? name : "auto";
        portattn_status_t st = portattn_forward(&p, NULL);
        printf("forward (%s) after the fault: %s: %s\n", how, portattn_status_string(st), portattn_last_error());
        CHECK(st == PORTATTN_ERROR_DEVICE && strstr(portattn_last_error(), err), "forward (%s) must report %s", how, err);
        /* The query and the workspace size launch nothing: they may answer, or report the error. */
        portattn_selection_t sel;
        st = portattn_forward_query(&p, &sel);
        CHECK(st == PORTATTN_SUCCESS || (st == PORTATTN_ERROR_DEVICE && strstr(portattn_last_error(), err)),
              "query (%s): %s: %s", how, portattn_status_string(st), portattn_last_error());
        size_t bytes = 1;
        st = portattn_forward_workspace_size(&p, &bytes);
        CHECK(st == PORTATTN_SUCCESS || (st == PORTATTN_ERROR_DEVICE && bytes == 0), "workspace_size (%s): %s: %s",
              how, portattn_status_string(st), portattn_last_error());
    }
    /* The CPU backend does not need the device. */
    size_t qn = (size_t)(B * t->sq * HQ * D);
    float *o = malloc(qn * 4);
    params(&p, t, PORTATTN_DTYPE_F32, t->fq, t->fk, t->fv, o);
    p.backend = PORTATTN_BACKEND_CPU;
    portattn_status_t st = portattn_forward(&p, NULL);
    CHECK(st == PORTATTN_SUCCESS && !memcmp(o, t->fo, qn * 4), "cpu after the fault: %s: %s", portattn_status_string(st),
          portattn_last_error());
    if (st == PORTATTN_SUCCESS) printf("ok   cpu backend after the fault: same bits as before\n");
    free(o);
}

int main(int argc, char **argv)
{
    portattn_backend_t be;
    const int rc = gpu_test_backend(argc, argv, &be);
    if (rc) return rc;
    uint64_t seed = test_seed();
    runtime_note();
    prob t[2]; /* a decode (split-KV on cuda-sm80, which wants scratch) and a prefill */
    if (!setup(&t[0], 1, seed) || !setup(&t[1], 256, seed + 1)) {
        printf("FAIL setup (allocation, upload or oracle)\n");
        return 1;
    }
    out_of_memory(be, argv[1], t, 2);
    dead_context(be, argv[1], &t[1]); /* the prefill shape: every GPU backend takes it */
    /* The dead context cannot free device memory; the process exit does. */
    for (int i = 0; i < 2; i++) t[i].dq = t[i].dk = t[i].dv = t[i].dout = NULL, release(&t[i]);
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
