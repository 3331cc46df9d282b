#include "devmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PORTATTN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef PORTATTN_HAVE_HIP
#include "hip_rt.h" /* libamdhip64, loaded at run time */

static const pa_hip_rt *hip(void) { return pa_hip_rt_get(NULL, 0); }
#endif

dm_kind dm_kind_of(portattn_backend_t backend)
{
    switch (backend) {
    case PORTATTN_BACKEND_CUDA_SM100:
    case PORTATTN_BACKEND_CUDA_SM90:
    case PORTATTN_BACKEND_CUDA_SM80:
    case PORTATTN_BACKEND_CUDA_GENERIC: return DM_CUDA;
#ifdef PORTATTN_HIP_EMULATION
    case PORTATTN_BACKEND_HIP_CDNA: return DM_CUDA; /* the kernel under the nvcc emulation */
#endif
#ifdef PORTATTN_HAVE_HIP
    case PORTATTN_BACKEND_HIP_CDNA:
    case PORTATTN_BACKEND_HIP_RDNA3: return DM_HIP;
#endif
    default: return DM_HOST;
    }
}

int dm_available(dm_kind kind, char *why, size_t why_len)
{
    if (kind == DM_HOST) return 1;
    if (kind == DM_HIP) {
#ifdef PORTATTN_HAVE_HIP
        const pa_hip_rt *rt = pa_hip_rt_get(why, why_len);
        int n = 0;
        if (!rt) return 0;
        if (rt->GetDeviceCount(&n) != PA_HIP_SUCCESS || n == 0) {
            snprintf(why, why_len, "no AMD GPU");
            return 0;
        }
        return 1;
#else
        snprintf(why, why_len, "built without HIP");
        return 0;
#endif
    }
#ifdef PORTATTN_HAVE_CUDA
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(why, why_len, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return 0;
    }
    return 1;
#else
    snprintf(why, why_len, "built without CUDA");
    return 0;
#endif
}

void *dm_alloc(dm_kind kind, size_t bytes)
{
    if (bytes == 0) bytes = 16; /* a valid, distinct pointer even for empty tensors */
    if (kind == DM_HOST) return malloc(bytes);
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) {
        void *p = NULL;
        return hip() && hip()->Malloc(&p, bytes) == PA_HIP_SUCCESS ? p : NULL;
    }
#endif
#ifdef PORTATTN_HAVE_CUDA
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
#else
    return NULL;
#endif
}

void dm_free(dm_kind kind, void *ptr)
{
    if (!ptr) return;
    if (kind == DM_HOST) { free(ptr); return; }
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) { if (hip()) hip()->Free(ptr); return; }
#endif
#ifdef PORTATTN_HAVE_CUDA
    cudaFree(ptr);
#endif
}

static int dm_copy(dm_kind kind, void *dst, const void *src, size_t bytes, int up)
{
    if (bytes == 0) return 0;
    if (kind == DM_HOST) { memcpy(dst, src, bytes); return 0; }
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) return !hip() || hip()->Memcpy(dst, src, bytes, up ? PA_HIP_MEMCPY_H2D : PA_HIP_MEMCPY_D2H) != PA_HIP_SUCCESS;
#endif
#ifdef PORTATTN_HAVE_CUDA
    return cudaMemcpy(dst, src, bytes, up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) != cudaSuccess;
#else
    (void)up;
    return 1;
#endif
}

int dm_upload(dm_kind kind, void *dst, const void *src, size_t bytes) { return dm_copy(kind, dst, src, bytes, 1); }
int dm_download(dm_kind kind, void *dst, const void *src, size_t bytes) { return dm_copy(kind, dst, src, bytes, 0); }

int dm_sync(dm_kind kind)
{
    if (kind == DM_HOST) return 0;
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) return !hip() || hip()->DeviceSynchronize() != PA_HIP_SUCCESS;
#endif
#ifdef PORTATTN_HAVE_CUDA
    return cudaDeviceSynchronize() != cudaSuccess;
#else
    return 1;
#endif
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double host_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double dm_last_host_us = -1;

/* Like triton.testing.do_bench (what the peers of anchors/sdpa.py are timed with): before each
 * call a 256 MB buffer is zeroed on the stream (it flushes L2, and the GPU is busy while the host
 * prepares the call, so host-side work is not timed as idle GPU), then the call is bracketed by its
 * own pair of events; no sync in between. The host time spent inside the calls is recorded too. */
#define DM_FLUSH_BYTES ((size_t)256 * 1000 * 1000)
#ifdef PORTATTN_HAVE_HIP
/* dm_time_ms on a HIP device, the same protocol as CUDA's below: t[i] in ms, 0 on success. */
static int hip_time(int reps, int (*fn)(void *), void *arg, double *t)
{
    const pa_hip_rt *rt = hip();
    if (!rt) return 1;
    pa_hip_event *ev = calloc((size_t)reps * 2, sizeof(pa_hip_event));
    int made = 0, bad;
    for (; ev && made < 2 * reps; made++)
        if (rt->EventCreate(&ev[made]) != PA_HIP_SUCCESS) break;
    bad = !ev || made < 2 * reps;
    static void *flush;
    if (!flush && rt->Malloc(&flush, DM_FLUSH_BYTES) != PA_HIP_SUCCESS) flush = NULL, (void)rt->GetLastError();
    double host = 0;
    for (int i = 0; i < reps && !bad; i++) {
        bad = (flush && rt->MemsetAsync(flush, 0, DM_FLUSH_BYTES, NULL) != PA_HIP_SUCCESS) ||
              rt->EventRecord(ev[2 * i], NULL) != PA_HIP_SUCCESS;
        double t0 = host_now_ms();
        bad = bad || fn(arg);
        host += host_now_ms() - t0;
        bad = bad || rt->EventRecord(ev[2 * i + 1], NULL) != PA_HIP_SUCCESS;
    }
    dm_last_host_us = bad ? -1 : host * 1e3 / reps;
    bad = bad || rt->DeviceSynchronize() != PA_HIP_SUCCESS;
    for (int i = 0; i < reps && !bad; i++) {
        float ms = 0;
        bad = rt->EventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]) != PA_HIP_SUCCESS;
        t[i] = ms;
    }
    for (int i = 0; i < made; i++) rt->EventDestroy(ev[i]);
    free(ev);
    return bad;
}
#endif
double dm_time_ms(dm_kind kind, int warmup, int reps, int (*fn)(void *), void *arg)
{
    if (reps < 1) reps = 1;
    for (int i = 0; i < warmup; i++)
        if (fn(arg)) return -1;
    if (dm_sync(kind)) return -1;
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t) return -1;
    int bad = 0;
    if (kind == DM_HOST) {
        for (int i = 0; i < reps && !bad; i++) {
            double t0 = host_now_ms();
            bad = fn(arg);
            t[i] = host_now_ms() - t0;
        }
        dm_last_host_us = -1;
    } else if (kind == DM_HIP) {
#ifdef PORTATTN_HAVE_HIP
        bad = hip_time(reps, fn, arg, t);
#else
        bad = 1;
#endif
    } else {
#ifdef PORTATTN_HAVE_CUDA
        cudaEvent_t *ev = calloc((size_t)reps * 2, sizeof(cudaEvent_t));
        int made = 0;
        for (; ev && made < 2 * reps; made++)
            if (cudaEventCreate(&ev[made]) != cudaSuccess) break;
        bad = !ev || made < 2 * reps;
        static void *flush; /* kept for the process, as do_bench's cache buffer */
        if (!flush && cudaMalloc(&flush, DM_FLUSH_BYTES) != cudaSuccess) flush = NULL, (void)cudaGetLastError();
        double host = 0;
        for (int i = 0; i < reps && !bad; i++) {
            bad = (flush && cudaMemsetAsync(flush, 0, DM_FLUSH_BYTES, 0) != cudaSuccess) ||
                  cudaEventRecord(ev[2 * i], 0) != cudaSuccess;
            double t0 = host_now_ms();
            bad = bad || fn(arg);
            host += host_now_ms() - t0;
            bad = bad || cudaEventRecord(ev[2 * i + 1], 0) != cudaSuccess;
        }
        dm_last_host_us = bad ? -1 : host * 1e3 / reps;
        bad = bad || cudaDeviceSynchronize() != cudaSuccess;
        for (int i = 0; i < reps && !bad; i++) {
            float ms = 0;
            bad = cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]) != cudaSuccess;
            t[i] = ms;
        }
        for (int i = 0; i < made; i++) cudaEventDestroy(ev[i]);
        free(ev);
#else
        bad = 1;
#endif
    }
    double med = -1;
    if (!bad) {
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        med = t[reps / 2];
    }
    free(t);
    return med;
}

const char *dm_kind_name(dm_kind kind) { return kind == DM_CUDA ? "cuda" : kind == DM_HIP ? "hip" : "host"; }

const char *dm_device_name(dm_kind kind)
{
    if (kind == DM_HOST) return "host CPU";
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) {
        static char hname[160];
        int dev = 0;
        if (hip() && hip()->GetDevice(&dev) == PA_HIP_SUCCESS && hip()->DeviceGetName(hname, (int)sizeof hname, dev) == PA_HIP_SUCCESS)
            return hname;
        return "unknown AMD GPU";
    }
#endif
#ifdef PORTATTN_HAVE_CUDA
    static char name[320];
    struct cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
        snprintf(name, sizeof name, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
                 prop.multiProcessorCount);
        return name;
    }
#endif
    return "unknown device";
}
