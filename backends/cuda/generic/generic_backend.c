/* cuda-generic: one simple kernel for every feature and dtype (the GPU oracle and fallback). */
#include "backend.h"
#include "cuda_host.h"
#include "gen_shape.h"
#include "generic_launch.h"

static int generic_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                            size_t why_len)
{
    (void)ch; /* one kernel */
    if (!pa_gen_shape_ok(pb, kernel, kernel_len, why, why_len)) return 0;
    pa_gen_ptr ptrs[PA_GEN_MAX_PTRS];
    const int n = pa_gen_device_ptrs(pb, ptrs);
    for (int i = 0; i < n; ++i)
        if (!pa_cuda_ptr_check(ptrs[i].ptr, ptrs[i].what, why, why_len)) return 0;
    return 1;
}

static portattn_status_t generic_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    (void)ch;
    return pa_cuda_generic_launch(pb, stream, err, err_len);
}

const pa_backend pa_backend_cuda_generic = {
    PORTATTN_BACKEND_CUDA_GENERIC, "cuda-generic", pa_cuda_probe, generic_supports, generic_run,
    NULL, /* workspace: one kernel, no split-KV scratch */
};
