/* The caller's CUDA state around library calls:
 *   test_cuda_reset      exit 0 pass, 1 fail, 77 no CUDA device of compute capability 8.0+
 * 1. A cudaDeviceReset between calls. Each fast kernel family the device must run (cuda-sm80 prefill
 *    and decode from compute capability 8.0, cuda-sm90 prefill on 9.0; the skip rule asks the runtime,
 *    not the library) runs a case, the caller resets the device, and the same case (the same kernel
 *    instance) runs again in the new context: it must succeed with the CPU backend's answer. The
 *    kernels' shared-memory opt-in is per context, so a cache that outlives the reset fails here.
 * 2. An error the caller has pending (a failed cudaSetDevice: not sticky) is still pending, with its
 *    own code, after each of those successful calls: the library clears no error it did not raise.
 *    (test_cuda_errors checks the same where the library's own allocation fails and it carries on.)
 *    Only a static libportattn shares this program's runtime; a shared one has its own copy, whose last
 *    error this program never sees (the output says which build this is). */
#include <stdio.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "harness.h"

#define U -1

/* b sq sk hq hkv dqk dv causal wl wr softcap scale layout varlen lse amp page used append splits sinks shared */
static const tcase prefill = {"reset_prefill_gqa4_causal", 2, 200, 333, 8, 2, 128, 128, 1, U, U, 0, 0, LAYOUT_BSHD,
                              0, 1, 0, 0, 0, 0, 0, 0, 0};
static const tcase decode = {"reset_decode_paged16_append1", 3, 1, 700, 8, 2, 128, 128, 0, U, U, 0, 0, LAYOUT_BSHD,
                             0, 1, 0, 16, 1, 1, 0, 0, 0};

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

/* The current context's id (cuCtxGetId through the runtime's driver entry point), 0 if unknown: printed
 * so that a failure after the reset says whether the driver gave the new context a new id. */
static unsigned long long context_id(void)
{
    typedef CUresult (*ctx_id_fn)(CUcontext, unsigned long long *);
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q;
    unsigned long long id = 0;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetId", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !f)
        return 0;
    return ((ctx_id_fn)(uintptr_t)f)(NULL, &id) == CUDA_SUCCESS ? id : 0;
}

/* run_case with an error pending: it must pass, and the caller's error must come back unchanged. */
static int run_with_pending(const tcase *c, portattn_backend_t be, const char *name, const char *when, uint64_t seed)
{
    (void)cudaGetLastError();
    const cudaError_t mine = cudaSetDevice(-1);
    if (mine == cudaSuccess || cudaPeekAtLastError() != mine) {
        printf("FAIL cannot set a pending error (cudaSetDevice(-1): %s)\n", cudaGetErrorName(mine));
        return 0;
    }
    const run_result r = run_case(c, PORTATTN_DTYPE_BF16, be, seed);
    const cudaError_t after = cudaGetLastError();
    const int ok = r == RUN_PASS && after == mine;
    printf("%-4s %s %s %s: %s, caller's pending %s after the call: %s\n", ok ? "ok" : "FAIL", name, c->name, when,
           r == RUN_PASS ? "pass" : r == RUN_FAIL ? "FAIL" : "declined", cudaGetErrorName(mine), cudaGetErrorName(after));
    fails += !ok;
    return ok;
}

static void reset_between(const tcase *c, portattn_backend_t be, const char *name, uint64_t seed)
{
    if (!run_with_pending(c, be, name, "before the reset", seed)) return;
    const unsigned long long before = context_id();
    const cudaError_t e = cudaDeviceReset();
    if (e != cudaSuccess) {
        printf("FAIL cudaDeviceReset: %s\n", cudaGetErrorName(e));
        fails++;
        return;
    }
    run_with_pending(c, be, name, "after cudaDeviceReset", seed + 1);
    printf("     context id %llu before the reset, %llu after\n", before, context_id());
}

int main(void)
{
    const int cc = cuda_compute_capability(), major = cc / 10, minor = cc % 10;
    if (!cc) return printf("SKIP no CUDA device\n"), 77;
    if (cc < 80) return printf("SKIP compute capability %d.%d: no fast backend runs there\n", major, minor), 77;
    const uint64_t seed = test_seed();
    runtime_note();
    /* test_backend_present fails (1) when the runtime's answer says the backend must be there */
    int rc = test_backend_present(PORTATTN_BACKEND_CUDA_SM80);
    if (rc) return rc;
    reset_between(&prefill, PORTATTN_BACKEND_CUDA_SM80, "cuda-sm80", seed);
    reset_between(&decode, PORTATTN_BACKEND_CUDA_SM80, "cuda-sm80", seed + 2);
    if (cc == 90) {
        if ((rc = test_backend_present(PORTATTN_BACKEND_CUDA_SM90))) return rc;
        reset_between(&prefill, PORTATTN_BACKEND_CUDA_SM90, "cuda-sm90", seed + 4);
    } else {
        printf("n/a  cuda-sm90: compute capability %d.%d\n", major, minor);
    }
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
