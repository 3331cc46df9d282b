/* The selector's preference order and its forced-only rule, on the CPU: common/registry.c built
 * with every CUDA backend compiled in, over stub backends that are all available and all claim the
 * call. AUTO must pick cuda-sm90 (the first backend that is not forced-only) and say why it passed
 * cuda-sm100, and cuda-sm80 when cuda-sm90 declines; cuda-sm100 must run when forced by params->backend or by PORTATTN_BACKEND, and only
 * then. Needs no GPU and no CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) failures++, printf("FAIL line %d: ", __LINE__), printf(__VA_ARGS__), printf("\n"); } while (0)

static portattn_backend_t ran; /* the backend whose run() was called last */

static portattn_backend_t declining; /* the stub whose supports() refuses (AUTO: none) */

static int stub_probe(char *detail, size_t len) { return snprintf(detail, len, "stub"), 1; }
static int stub_supports(portattn_backend_t id, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    if (id == declining) return snprintf(why, why_len, "declines (stub)"), 0;
    if (kernel && kernel_len) snprintf(kernel, kernel_len, "stub");
    return 1;
}
#define STUB(var, id, name)                                                                                      \
    static portattn_status_t run_##var(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,      \
                                       size_t err_len)                                                           \
    {                                                                                                            \
        (void)pb, (void)ch, (void)stream, (void)err, (void)err_len;                                              \
        ran = id;                                                                                                \
        return PORTATTN_SUCCESS;                                                                                 \
    }                                                                                                            \
    static int supports_##var(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,  \
                              size_t why_len)                                                                    \
    {                                                                                                            \
        (void)pb, (void)ch;                                                                                      \
        return stub_supports(id, kernel, kernel_len, why, why_len);                                              \
    }                                                                                                            \
    const pa_backend var = {id, name, stub_probe, supports_##var, run_##var, NULL};
STUB(pa_backend_cuda_sm100, PORTATTN_BACKEND_CUDA_SM100, "cuda-sm100")
STUB(pa_backend_cuda_sm90, PORTATTN_BACKEND_CUDA_SM90, "cuda-sm90")
STUB(pa_backend_cuda_sm80, PORTATTN_BACKEND_CUDA_SM80, "cuda-sm80")
STUB(pa_backend_cuda_generic, PORTATTN_BACKEND_CUDA_GENERIC, "cuda-generic")
STUB(pa_backend_cpu, PORTATTN_BACKEND_CPU, "cpu")
/* registry.c's table of backward passes names these; the forward selector never reads it. */
const pa_bwd_backend pa_bwd_backend_cpu = {PORTATTN_BACKEND_CPU, NULL, NULL, NULL, NULL};
const pa_bwd_backend pa_bwd_backend_cuda_generic = {PORTATTN_BACKEND_CUDA_GENERIC, NULL, NULL, NULL, NULL};
const pa_bwd_backend pa_bwd_backend_cuda_sm80 = {PORTATTN_BACKEND_CUDA_SM80, NULL, NULL, NULL, NULL};
const pa_bwd_backend pa_bwd_backend_cuda_sm90 = {PORTATTN_BACKEND_CUDA_SM90, NULL, NULL, NULL, "test"};

/* The rest of the front end, reduced to what the selector needs. */
portattn_status_t pa_validate(const portattn_fwd_params_t *params, pa_problem *pb, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    memset(pb, 0, sizeof *pb);
    pb->p = *params;
    return PORTATTN_SUCCESS;
}
int pa_cuda_ptr_is_device_only(const void *ptr) { return (void)ptr, 0; }
int pa_cuda_ptr_is_device_accessible(const void *ptr) { return (void)ptr, 1; }
int pa_cuda_take_device_error(char *buf, size_t len) { return (void)buf, (void)len, 0; }
void pa_cuda_memo(int on) { (void)on; }

/* The preference order names every backend id once, and no id it does not have. */
static void check_preference(void)
{
    int seen[PORTATTN_BACKEND_COUNT_] = {0}, n = 0;
    for (portattn_backend_t id; (id = pa_backend_preferred(n)) != PORTATTN_BACKEND_AUTO; n++) {
        CHECK((int)id > 0 && id < PORTATTN_BACKEND_COUNT_, "preference %d is id %d", n, (int)id);
        if ((int)id > 0 && id < PORTATTN_BACKEND_COUNT_) seen[id]++;
    }
    CHECK(n == PORTATTN_BACKEND_COUNT_ - 1, "%d backends in the preference order", n);
    for (int id = 1; id < PORTATTN_BACKEND_COUNT_; id++)
        CHECK(seen[id] == 1, "%s appears %d times in the preference order", portattn_backend_name(id), seen[id]);
    CHECK(pa_backend_preferred(-1) == PORTATTN_BACKEND_AUTO, "index -1");
}

int main(void)
{
    check_preference();
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F16, p.batch = 1, p.seqlen_q = p.seqlen_k = 64, p.heads_q = p.heads_kv = 1;
    p.head_dim_qk = p.head_dim_v = 128;
    portattn_selection_t sel;
    unsetenv("PORTATTN_BACKEND");

    portattn_status_t st = portattn_forward_query(&p, &sel);
    printf("auto -> %s (skipped: %s)\n", sel.backend_name, sel.reason);
    CHECK(st == PORTATTN_SUCCESS && sel.backend == PORTATTN_BACKEND_CUDA_SM90, "auto picked %s", sel.backend_name);
    CHECK(strstr(sel.reason, "cuda-sm100: forced calls only") != NULL, "reason '%s'", sel.reason);
    ran = PORTATTN_BACKEND_AUTO;
    CHECK(portattn_forward(&p, NULL) == PORTATTN_SUCCESS && ran == PORTATTN_BACKEND_CUDA_SM90, "auto ran %s",
          portattn_backend_name(ran));

    /* with cuda-sm90 declining, AUTO moves on down the order, never back to the forced-only cuda-sm100 */
    declining = PORTATTN_BACKEND_CUDA_SM90;
    st = portattn_forward_query(&p, &sel);
    printf("auto, cuda-sm90 declining -> %s (skipped: %s)\n", sel.backend_name, sel.reason);
    CHECK(st == PORTATTN_SUCCESS && sel.backend == PORTATTN_BACKEND_CUDA_SM80, "auto picked %s", sel.backend_name);
    CHECK(strstr(sel.reason, "cuda-sm90: declines") != NULL, "reason '%s'", sel.reason);
    declining = PORTATTN_BACKEND_AUTO;

    p.backend = PORTATTN_BACKEND_CUDA_SM100;
    st = portattn_forward_query(&p, &sel);
    printf("params->backend = cuda-sm100 -> %s (%s)\n", sel.backend_name, sel.reason);
    CHECK(st == PORTATTN_SUCCESS && sel.backend == PORTATTN_BACKEND_CUDA_SM100, "forced picked %s", sel.backend_name);
    ran = PORTATTN_BACKEND_AUTO;
    CHECK(portattn_forward(&p, NULL) == PORTATTN_SUCCESS && ran == PORTATTN_BACKEND_CUDA_SM100, "forced ran %s",
          portattn_backend_name(ran));

    p.backend = PORTATTN_BACKEND_AUTO;
    setenv("PORTATTN_BACKEND", "cuda-sm100", 1);
    st = portattn_forward_query(&p, &sel);
    printf("PORTATTN_BACKEND=cuda-sm100 -> %s (%s)\n", sel.backend_name, sel.reason);
    CHECK(st == PORTATTN_SUCCESS && sel.backend == PORTATTN_BACKEND_CUDA_SM100, "env picked %s", sel.backend_name);
    unsetenv("PORTATTN_BACKEND");

    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
