/* hip_rt.h: libamdhip64 loaded on first use. Also linked into the tests' device memory helpers
 * (tests/support/devmem.c), so it needs nothing from the library. */
#include "hip_rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static pa_hip_rt g_rt;
static const pa_hip_rt *g_ok;
static char g_why[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Function pointers from dlsym: the object-to-function conversion is POSIX's, not ISO C's. */
#define LOAD(field, name)                                                                                        \
    do {                                                                                                         \
        void *s_ = dlsym(h, name);                                                                               \
        if (!s_) {                                                                                               \
            snprintf(g_why, sizeof g_why, "%s lacks %s", lib, name);                                             \
            return;                                                                                              \
        }                                                                                                        \
        memcpy(&g_rt.field, &s_, sizeof s_);                                                                     \
    } while (0)

static void hip_rt_load(void)
{
    const char *env = getenv("PORTATTN_HIP_LIBRARY");
    const char *names[] = {env && *env ? env : "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
    const char *lib = NULL;
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL))) lib = names[i];
    if (!h) {
        const char *e = dlerror();
        snprintf(g_why, sizeof g_why, "HIP runtime not found (%s)", e ? e : "dlopen libamdhip64.so failed");
        return;
    }
    pa_hip_err (*version)(int *) = NULL;
    void *s = dlsym(h, "hipRuntimeGetVersion");
    if (s) memcpy(&version, &s, sizeof s);
    if (!version || version(&g_rt.version) != PA_HIP_SUCCESS) g_rt.version = 0;
    LOAD(GetDeviceCount, "hipGetDeviceCount");
    LOAD(GetDevice, "hipGetDevice");
    LOAD(DeviceGetName, "hipDeviceGetName");
    LOAD(ModuleLoadData, "hipModuleLoadData");
    LOAD(ModuleGetFunction, "hipModuleGetFunction");
    LOAD(ModuleLaunchKernel, "hipModuleLaunchKernel");
    LOAD(PointerGetAttributes, "hipPointerGetAttributes");
    LOAD(GetLastError, "hipGetLastError");
    LOAD(PeekAtLastError, "hipPeekAtLastError");
    LOAD(GetErrorName, "hipGetErrorName");
    LOAD(GetErrorString, "hipGetErrorString");
    LOAD(Malloc, "hipMalloc");
    LOAD(Free, "hipFree");
    LOAD(Memcpy, "hipMemcpy");
    LOAD(MemsetAsync, "hipMemsetAsync");
    LOAD(DeviceSynchronize, "hipDeviceSynchronize");
    LOAD(EventCreate, "hipEventCreate");
    LOAD(EventRecord, "hipEventRecord");
    LOAD(EventElapsedTime, "hipEventElapsedTime");
    LOAD(EventDestroy, "hipEventDestroy");
    g_ok = &g_rt; /* the handle stays open for the process */
}

const pa_hip_rt *pa_hip_rt_get(char *why, size_t why_len)
{
    pthread_once(&g_once, hip_rt_load);
    if (!g_ok && why && why_len) snprintf(why, why_len, "%s", g_why);
    return g_ok;
}
