/* hip_rt.h's library side: HIP errors as statuses, pointer checks. */
#include <dlfcn.h>
#include <string.h>

#include "backend.h"
#include "hip_rt.h"

portattn_status_t pa_hip_status(const pa_hip_rt *rt, pa_hip_err e, const char *what, char *err, size_t err_len)
{
    const portattn_status_t st = e == PA_HIP_ERR_OUT_OF_MEMORY                                 ? PORTATTN_ERROR_OUT_OF_MEMORY
                                 : e == PA_HIP_ERR_NO_DEVICE || e == PA_HIP_ERR_INVALID_DEVICE ? PORTATTN_ERROR_NOT_SUPPORTED
                                                                                               : PORTATTN_ERROR_DEVICE;
    const char *name = rt ? rt->GetErrorName(e) : NULL, *str = rt ? rt->GetErrorString(e) : NULL;
    return pa_fmt(err, err_len, st, "%s: %s (%s)", what, name ? name : "hipError", str ? str : "?");
}

void pa_hip_drop_error(const pa_hip_rt *rt, pa_hip_err pending)
{
    if (pending == PA_HIP_SUCCESS) (void)rt->GetLastError();
}

/* hipPointerGetAttributes, whose failure on a host pointer (an answer here, not an error) is dropped
 * when no error of the caller was pending. The peek costs one more runtime call per pointer (a read
 * of the thread's slot, no device work; up to 8 a forward call); without it the library cannot know
 * whether the error it would clear is its own. */
static pa_hip_err pa_hip_ptr_query(const pa_hip_rt *rt, pa_hip_ptr_attr *a, const void *ptr)
{
    const pa_hip_err pending = rt->PeekAtLastError();
    const pa_hip_err e = rt->PointerGetAttributes(a, ptr);
    if (e != PA_HIP_SUCCESS) pa_hip_drop_error(rt, pending);
    return e;
}

int pa_hip_ptr_check(const pa_hip_rt *rt, const void *ptr, int dev, const char *what, char *why, size_t why_len)
{
    pa_hip_ptr_attr a;
    memset(&a, 0, sizeof a);
    if (!ptr) return pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, "%s is NULL", what), 0;
    const pa_hip_err e = pa_hip_ptr_query(rt, &a, ptr);
    const int device_type = rt->version >= 60000000 ? 2 : 1; /* hipMemoryTypeDevice: renumbered in ROCm 6 */
    if (e == PA_HIP_SUCCESS && a.is_managed) return 1;
    if (e == PA_HIP_SUCCESS && a.memory_type == device_type) {
        if (a.device == dev) return 1;
        return pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, "%s is on HIP device %d, current device %d", what,
                      a.device, dev), 0;
    }
    return pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, "%s %p is not HIP device memory", what, ptr), 0;
}

int pa_hip_ptr_is_device_only(const void *ptr)
{
    /* Only a process that loaded the HIP runtime can hold HIP memory: never load it just to ask. */
    static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!h) return 0;
    dlclose(h); /* drops the reference RTLD_NOLOAD took */
    const pa_hip_rt *rt = pa_hip_rt_get(NULL, 0);
    if (!rt || !ptr) return 0;
    pa_hip_ptr_attr a;
    memset(&a, 0, sizeof a);
    const pa_hip_err e = pa_hip_ptr_query(rt, &a, ptr);
    return e == PA_HIP_SUCCESS && !a.is_managed && a.memory_type == (rt->version >= 60000000 ? 2 : 1);
}
