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

/* ---- timing ---------------------------------------------------------------------------------
 * The protocol of triton.testing.do_bench, by which the peers are timed: one call and a sync, an
 * estimate from 5 flushed calls, warm-up and repetitions counted from --warmup-ms and --rep-ms over
 * that estimate, each timed call preceded by zeroing a 256 MB buffer on the stream (L2 flushed, and
 * the GPU stays busy while the host prepares the call) and bracketed by its own pair of events, no
 * sync in between, the median reported. The burst form (fixed counts) is the same loop. */
#define DM_FLUSH_BYTES ((size_t)DM_FLUSH_MIB * 1024 * 1024)
#define DM_MAX_REPS 100000

/* One GPU runtime's clock: events on the default stream, the flush, a device sync. 0 = success. */
typedef struct dm_clock {
    int (*event_new)(void **ev);
    void (*event_free)(void *ev);
    int (*record)(void *ev);
    int (*elapsed)(float *ms, void *a, void *b);
    int (*flush)(void);
    int (*sync)(void);
} dm_clock;

#ifdef PORTATTN_HAVE_CUDA
static void *cuda_flush_buf; /* kept for the process, as do_bench's cache buffer */
static int cu_event_new(void **ev) { return cudaEventCreate((cudaEvent_t *)ev) != cudaSuccess; }
static void cu_event_free(void *ev) { cudaEventDestroy((cudaEvent_t)ev); }
static int cu_record(void *ev) { return cudaEventRecord((cudaEvent_t)ev, 0) != cudaSuccess; }
static int cu_elapsed(float *ms, void *a, void *b) { return cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b) != cudaSuccess; }
static int cu_sync(void) { return cudaDeviceSynchronize() != cudaSuccess; }
static int cu_flush(void)
{
    if (!cuda_flush_buf && cudaMalloc(&cuda_flush_buf, DM_FLUSH_BYTES) != cudaSuccess) {
        cuda_flush_buf = NULL;
        (void)cudaGetLastError();
        return 1;
    }
    return cudaMemsetAsync(cuda_flush_buf, 0, DM_FLUSH_BYTES, 0) != cudaSuccess;
}
static const dm_clock cuda_clock = {cu_event_new, cu_event_free, cu_record, cu_elapsed, cu_flush, cu_sync};
#endif

#ifdef PORTATTN_HAVE_HIP
static void *hip_flush_buf;
static int hp_event_new(void **ev) { return !hip() || hip()->EventCreate(ev) != PA_HIP_SUCCESS; }
static void hp_event_free(void *ev) { if (hip()) hip()->EventDestroy(ev); }
static int hp_record(void *ev) { return hip()->EventRecord(ev, NULL) != PA_HIP_SUCCESS; }
static int hp_elapsed(float *ms, void *a, void *b) { return hip()->EventElapsedTime(ms, a, b) != PA_HIP_SUCCESS; }
static int hp_sync(void) { return !hip() || hip()->DeviceSynchronize() != PA_HIP_SUCCESS; }
static int hp_flush(void)
{
    if (!hip_flush_buf && hip()->Malloc(&hip_flush_buf, DM_FLUSH_BYTES) != PA_HIP_SUCCESS) {
        hip_flush_buf = NULL;
        (void)hip()->GetLastError();
        return 1;
    }
    return hip()->MemsetAsync(hip_flush_buf, 0, DM_FLUSH_BYTES, NULL) != PA_HIP_SUCCESS;
}
static const dm_clock hip_clock = {hp_event_new, hp_event_free, hp_record, hp_elapsed, hp_flush, hp_sync};
#endif

static const dm_clock *clock_of(dm_kind kind)
{
#ifdef PORTATTN_HAVE_CUDA
    if (kind == DM_CUDA) return &cuda_clock;
#endif
#ifdef PORTATTN_HAVE_HIP
    if (kind == DM_HIP) return hip() ? &hip_clock : NULL;
#endif
    (void)kind;
    return NULL;
}

static double quantile(const double *sorted, int n, double q) /* linear, as numpy's default */
{
    double x = q * (n - 1);
    int i = (int)x;
    return i + 1 < n ? sorted[i] + (x - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

static void summarise(double *t, int n, dm_timing *out)
{
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    out->reps = n;
    out->median_ms = quantile(t, n, 0.5);
    out->p20_ms = quantile(t, n, 0.2);
    out->p80_ms = quantile(t, n, 0.8);
    out->min_ms = t[0];
}

/* The timed loop on a GPU clock: `reps` calls, each after a flush, between its own two events. */
static int gpu_timed(const dm_clock *c, int reps, int (*fn)(void *), void *arg, double *t)
{
    void **ev = calloc((size_t)reps * 2, sizeof(void *));
    int made = 0, bad;
    for (; ev && made < 2 * reps; made++)
        if (c->event_new(&ev[made])) break;
    bad = !ev || made < 2 * reps;
    for (int i = 0; i < reps && !bad; i++)
        bad = c->flush() || c->record(ev[2 * i]) || fn(arg) || c->record(ev[2 * i + 1]);
    bad = bad || c->sync();
    for (int i = 0; i < reps && !bad; i++) {
        float ms = 0;
        bad = c->elapsed(&ms, ev[2 * i], ev[2 * i + 1]);
        t[i] = ms;
    }
    for (int i = 0; i < made; i++) c->event_free(ev[i]);
    free(ev);
    return bad;
}

/* do_bench's estimate: 5 flushed calls between two events, the flushes included. */
static int gpu_estimate(const dm_clock *c, int (*fn)(void *), void *arg, double *ms)
{
    void *a = NULL, *b = NULL;
    int bad = c->event_new(&a) || c->event_new(&b) || c->record(a);
    for (int i = 0; i < 5 && !bad; i++) bad = c->flush() || fn(arg);
    float e = 0;
    bad = bad || c->record(b) || c->sync() || c->elapsed(&e, a, b);
    if (a) c->event_free(a);
    if (b) c->event_free(b);
    *ms = e / 5;
    return bad;
}

static int no_sync(void) { return 0; } /* dm_host_cost's clock on the CPU */

/* The host time of one call, apart from the timed loop: there the launches of a short kernel outrun
 * the device, fill the launch queue and then wait for room, which is not the API's cost. Calls go in
 * groups of 8 with a device sync between groups (so the queue never fills); the median call. */
static int gpu_host_cost(const dm_clock *c, int calls, int (*fn)(void *), void *arg, double *us)
{
    double *h = malloc(sizeof(double) * (size_t)calls);
    int bad = !h;
    for (int i = 0; i < calls && !bad; i++) {
        if (i % 8 == 0) bad = c->sync();
        double t0 = host_now_ms();
        bad = bad || fn(arg);
        if (h) h[i] = (host_now_ms() - t0) * 1e3;
    }
    bad = bad || c->sync();
    if (!bad) {
        qsort(h, (size_t)calls, sizeof(double), cmp_double);
        *us = h[calls / 2];
    }
    free(h);
    return bad;
}

static int count_for(double budget_ms, double est_ms, int at_least)
{
    double n = est_ms > 0 ? budget_ms / est_ms : DM_MAX_REPS;
    return n < at_least ? at_least : n > DM_MAX_REPS ? DM_MAX_REPS : (int)n;
}

int dm_time(dm_kind kind, const dm_protocol *pr, int (*fn)(void *), void *arg, dm_timing *out)
{
    memset(out, 0, sizeof *out);
    out->host_us = -1;
    const dm_clock *c = kind == DM_HOST ? NULL : clock_of(kind);
    if (kind != DM_HOST && !c) return 1;
    int warmup = pr->warmup, reps = pr->reps;
    if (fn(arg) || dm_sync(kind)) return 1;
    double est = 0;
    if (c && gpu_estimate(c, fn, arg, &est)) return 1;
    if (c && !pr->burst) {
        warmup = count_for(pr->warmup_ms, est, 1);
        reps = count_for(pr->rep_ms, est, 1);
    }
    if (reps < 1) reps = 1;
    for (int i = 0; i < warmup; i++)
        if (fn(arg)) return 1;
    if (dm_sync(kind)) return 1;
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t) return 1;
    int bad = 0;
    if (c) {
        const int host_calls = count_for(20, est, 16); /* about 20 ms of calls, 16 to 256 */
        bad = gpu_timed(c, reps, fn, arg, t) || gpu_host_cost(c, host_calls < 256 ? host_calls : 256, fn, arg, &out->host_us);
    } else {
        for (int i = 0; i < reps && !bad; i++) {
            double t0 = host_now_ms();
            bad = fn(arg);
            t[i] = host_now_ms() - t0;
        }
    }
    if (!bad) summarise(t, reps, out);
    else out->host_us = -1;
    free(t);
    return bad;
}

#ifdef PORTATTN_HAVE_CUDA
/* An empty kernel, JIT-compiled from PTX by the runtime so that this C file needs no nvcc. */
static const char empty_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                                ".visible .entry dm_empty()\n{\n\tret;\n}\n";

static int cu_empty_launch(void *kernel)
{
    const dim3 one = {1, 1, 1};
    return cudaLaunchKernel((const void *)kernel, one, one, NULL, 0, NULL) != cudaSuccess;
}
#endif

int dm_host_cost(dm_kind kind, int calls, int (*fn)(void *), void *arg, double *us)
{
    static const dm_clock none = {NULL, NULL, NULL, NULL, NULL, no_sync};
    const dm_clock *c = kind == DM_HOST ? &none : clock_of(kind);
    *us = -1;
    return calls < 1 || !c || gpu_host_cost(c, calls, fn, arg, us);
}

int dm_launch_floor(dm_kind kind, int calls, double *us)
{
    *us = -1;
#ifdef PORTATTN_HAVE_CUDA
    if (kind != DM_CUDA) return 1;
    cudaLibrary_t lib = NULL;
    cudaKernel_t kernel = NULL;
    if (cudaLibraryLoadData(&lib, empty_ptx, NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess ||
        cudaLibraryGetKernel(&kernel, lib, "dm_empty") != cudaSuccess) {
        if (lib) (void)cudaLibraryUnload(lib);
        (void)cudaGetLastError();
        return 1;
    }
    int bad = cu_empty_launch(kernel) || cuda_clock.sync(); /* first launch: module load, not timed */
    bad = bad || dm_host_cost(kind, calls, cu_empty_launch, kernel, us);
    (void)cudaLibraryUnload(lib);
    if (bad) *us = -1;
    return bad;
#else
    (void)kind, (void)calls;
    return 1;
#endif
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
