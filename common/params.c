/* Parameter defaults, tensor helpers, names and version. */
#include <string.h>

#include "frontend.h"

void portattn_fwd_params_init(portattn_fwd_params_t *params)
{
    if (!params) return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->dtype = PORTATTN_DTYPE_BF16;
    params->window_left = -1;
    params->window_right = -1;
    params->backend = PORTATTN_BACKEND_AUTO;
}

/* The contiguous helpers multiply the caller's sizes: a product past int64 (or a negative size)
 * would be undefined behaviour, so it yields strides of -1 instead, which validation refuses. */
static portattn_tensor_t contiguous(void *data, int64_t s, int64_t h, int64_t d, int bhsd)
{
    portattn_tensor_t t = {data, {-1, -1, -1, -1}};
    if (s < 0 || h < 0 || d < 0 || (d && h > INT64_MAX / d) || (h && d && s > INT64_MAX / (h * d))) return t;
    if (bhsd) t.stride[0] = h * s * d, t.stride[1] = d, t.stride[2] = s * d, t.stride[3] = 1;
    else t.stride[0] = s * h * d, t.stride[1] = h * d, t.stride[2] = d, t.stride[3] = 1;
    return t;
}

portattn_tensor_t portattn_tensor_bshd(void *data, int64_t s, int64_t h, int64_t d)
{
    return contiguous(data, s, h, d, 0);
}

portattn_tensor_t portattn_tensor_bhsd(void *data, int64_t s, int64_t h, int64_t d)
{
    return contiguous(data, s, h, d, 1);
}

static const char *const backend_names[PORTATTN_BACKEND_COUNT_] = {
    [PORTATTN_BACKEND_AUTO] = "auto",
    [PORTATTN_BACKEND_CUDA_SM100] = "cuda-sm100",
    [PORTATTN_BACKEND_CUDA_SM90] = "cuda-sm90",
    [PORTATTN_BACKEND_CUDA_SM80] = "cuda-sm80",
    [PORTATTN_BACKEND_HIP_CDNA] = "hip-cdna",
    [PORTATTN_BACKEND_HIP_RDNA3] = "hip-rdna3",
    [PORTATTN_BACKEND_CUDA_GENERIC] = "cuda-generic",
    [PORTATTN_BACKEND_CPU] = "cpu",
};

const char *portattn_backend_name(portattn_backend_t backend)
{
    if ((int)backend < 0 || backend >= PORTATTN_BACKEND_COUNT_) return "invalid";
    return backend_names[backend];
}

portattn_backend_t portattn_backend_from_name(const char *name, int *ok)
{
    for (int i = 0; name && i < PORTATTN_BACKEND_COUNT_; i++)
        if (strcmp(name, backend_names[i]) == 0) {
            if (ok) *ok = 1;
            return (portattn_backend_t)i;
        }
    if (ok) *ok = 0;
    return PORTATTN_BACKEND_AUTO;
}

int portattn_version(void) { return PORTATTN_VERSION; }
