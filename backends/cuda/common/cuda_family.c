/* cuda_family.h */
#include "cuda_family.h"

#include <stdio.h>

#include "cuda_host.h"

/* "8.0+", "9.0", "10.0 or 10.3": the capabilities of f->cc in words. */
static void cc_words(const pa_family *f, char *buf, size_t len)
{
    int used = 0;
    buf[0] = 0;
    for (int i = 0; i < 3 && f->cc[i] && used < (int)len; ++i)
        used += snprintf(buf + used, len - (size_t)used, "%s%d.%d", i ? " or " : "", f->cc[i] / 10, f->cc[i] % 10);
    if (f->cc_newer && used < (int)len) snprintf(buf + used, len - (size_t)used, "+");
}

static int cc_in(const pa_family *f, int cc)
{
    if (f->cc_newer) return cc >= f->cc[0];
    for (int i = 0; i < 3 && f->cc[i]; ++i)
        if (cc == f->cc[i]) return 1;
    return 0;
}

int pa_cuda_arch_ok(const pa_family *f, char *why, size_t why_len)
{
    int major = 0, minor = 0;
    char dev[96];
    if (!pa_cuda_device_info(&major, &minor, NULL, why ? dev : NULL, why ? sizeof dev : 0)) return PA_REFUSE("%s", dev);
    if (cc_in(f, major * 10 + minor)) return 1;
    if (!why || !why_len) return 0;
    char ccs[48];
    cc_words(f, ccs, sizeof ccs);
    return PA_REFUSE("needs compute capability %s%s%s%s, device is %d.%d", ccs, f->code ? " (" : "",
                     f->code ? f->code : "", f->code ? ")" : "", major, minor);
}

int pa_cuda_family_ok(const pa_family *f, const pa_problem *pb, char *why, size_t why_len)
{
    return pa_cuda_arch_ok(f, why, why_len) && pa_family_can_implement(f, pb, why, why_len);
}

int pa_cuda_smem_ok(const char *kernel, int d, int bytes, char *why, size_t why_len)
{
    int optin = 0;
    if (!pa_cuda_device_smem(&optin, NULL)) return PA_REFUSE("cannot read the device's shared memory limit");
    if (optin >= bytes) return 1;
    return PA_REFUSE("%s d%d needs %d bytes of shared memory, device allows %d per block", kernel, d, bytes, optin);
}

int pa_cuda_bwd_dims_ok(const pa_problem *pb, int has_dim, const char *dims, char *why, size_t why_len)
{
    const int64_t d = pb->p.head_dim_qk;
    if (pb->p.head_dim_v != d)
        return PA_REFUSE("head dims %lld/%lld: no instance with Dqk != Dv", (long long)d, (long long)pb->p.head_dim_v);
    if (!has_dim) return PA_REFUSE("head dim %lld has no backward instance (%s)", (long long)d, dims);
    return 1;
}
