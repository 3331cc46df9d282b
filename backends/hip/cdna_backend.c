/* hip-cdna: the CDNA MFMA kernel (cdna_fwd_kernel.h) on an AMD GPU through the HIP runtime. The code
 * objects for PORTATTN_HIP_CDNA_ARCHS are embedded in the library; the first that the current device
 * loads is used, so a GPU without one (e.g. gfx942 from a gfx940-only build) is reported unavailable
 * with the targets it would need. libamdhip64 is loaded at run time (hip_rt.h).
 *
 * The kernel has not run on AMD hardware: it reached T3 on the CPU (the full case table through this
 * backend against tests/hip_fake's simulated device), so the selector picks it on an AMD GPU, and its
 * detail string says what it has not been through. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cdna_entries.h"
#include "cdna_grid.h"
#include "cdna_shape.h"
#include "fwd_resolve.h"
#include "hip_code_objects.h"
#include "hip_rt.h"

#define REFUSE(...) (pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, __VA_ARGS__), 0)
#define CDNA_MAX_DEVICES 64

/* The entry points of cdna_fwd.hip: a call launches every one of its head dim and dtype, in order. */
typedef struct cdna_entry { const char *name; int bf16, d; } cdna_entry;
#define CDNA_ENTRY(name, bf16, dqk, dv, c0) {#name, bf16, dqk},
static const cdna_entry cdna_entries[PA_CDNA_ENTRY_COUNT] = {PA_CDNA_ENTRIES(CDNA_ENTRY)};

/* One device's module, loaded on first use and kept for the process. */
typedef struct cdna_module {
    int state; /* 0 untried, 1 loaded, -1 no usable code object */
    pa_hip_module mod;
    pa_hip_fn fn[PA_CDNA_ENTRY_COUNT];
    const char *target;
    char why[200];
} cdna_module;

static cdna_module g_mod[CDNA_MAX_DEVICES];
static pthread_mutex_t g_mod_mu = PTHREAD_MUTEX_INITIALIZER;

static void cdna_load(const pa_hip_rt *rt, cdna_module *m)
{
    char built[96] = "";
    for (int i = 0; i < pa_cdna_code_object_count; i++) {
        const pa_hip_code_object *co = &pa_cdna_code_objects[i];
        snprintf(built + strlen(built), sizeof built - strlen(built), "%s%s", i ? ", " : "", co->target);
        pa_hip_module mod = NULL;
        if (rt->ModuleLoadData(&mod, co->data) != PA_HIP_SUCCESS) continue; /* another target's code */
        int ok = 1;
        for (int k = 0; k < PA_CDNA_ENTRY_COUNT && ok; k++) ok = rt->ModuleGetFunction(&m->fn[k], mod, cdna_entries[k].name) == PA_HIP_SUCCESS;
        if (!ok) {
            snprintf(m->why, sizeof m->why, "code object %s lacks the hip-cdna entry points", co->target);
            m->state = -1;
            return;
        }
        m->mod = mod, m->target = co->target, m->state = 1;
        return;
    }
    (void)rt->GetLastError();
    snprintf(m->why, sizeof m->why, "no hip-cdna code object loads on this GPU (built for %s; rebuild with "
             "-DPORTATTN_HIP_CDNA_ARCHS=<its gfx target>)", built);
    m->state = -1;
}

/* The current device's module, or NULL with the reason in why. */
static const cdna_module *cdna_current(const pa_hip_rt **rt_out, int *dev_out, char *why, size_t why_len)
{
    const pa_hip_rt *rt = pa_hip_rt_get(why, why_len);
    if (!rt) return NULL;
    int n = 0, dev = 0;
    pa_hip_err e = rt->GetDeviceCount(&n);
    if (e != PA_HIP_SUCCESS || n <= 0) {
        (void)rt->GetLastError();
        pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "no AMD GPU (hipGetDeviceCount: %s)",
               e != PA_HIP_SUCCESS ? rt->GetErrorName(e) : "0 devices");
        return NULL;
    }
    if ((e = rt->GetDevice(&dev)) != PA_HIP_SUCCESS || dev < 0 || dev >= CDNA_MAX_DEVICES) {
        pa_hip_status(rt, e, "hipGetDevice", why, why_len);
        return NULL;
    }
    cdna_module *m = &g_mod[dev];
    pthread_mutex_lock(&g_mod_mu);
    if (m->state == 0) cdna_load(rt, m);
    pthread_mutex_unlock(&g_mod_mu);
    if (m->state < 0) {
        pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s", m->why);
        return NULL;
    }
    *rt_out = rt, *dev_out = dev;
    return m;
}

static int cdna_probe(char *detail, size_t detail_len)
{
    const pa_hip_rt *rt;
    int dev;
    const cdna_module *m = cdna_current(&rt, &dev, detail, detail_len);
    if (!m) return 0;
    char name[128] = "";
    if (rt->DeviceGetName(name, (int)sizeof name, dev) != PA_HIP_SUCCESS) snprintf(name, sizeof name, "?");
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "HIP device %d (%s), code object %s (validated in emulation, "
           "not yet on AMD hardware)", dev, name, m->target);
    return 1;
}

static int cdna_supports(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_cdna_shape_ok(pb, "cdna", kernel, kernel_len, why, why_len)) return 0;
    if (pa_cdna_nothing_to_do(pb)) return 1;
    const pa_hip_rt *rt;
    int dev;
    if (!cdna_current(&rt, &dev, why, why_len)) return 0;
    const int needs_kv = p->seqlen_k > 0;
    return pa_hip_ptr_check(rt, p->q.data, dev, "q.data", why, why_len) &&
           pa_hip_ptr_check(rt, p->o.data, dev, "o.data", why, why_len) &&
           (!needs_kv || (pa_hip_ptr_check(rt, p->k.data, dev, "k.data", why, why_len) &&
                          pa_hip_ptr_check(rt, p->v.data, dev, "v.data", why, why_len))) &&
           (!p->lse || pa_hip_ptr_check(rt, p->lse, dev, "lse", why, why_len)) &&
           (!pb->varlen || (pa_hip_ptr_check(rt, p->cu_seqlens_q, dev, "cu_seqlens_q", why, why_len) &&
                            pa_hip_ptr_check(rt, p->cu_seqlens_k, dev, "cu_seqlens_k", why, why_len)));
}

static portattn_status_t cdna_run(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (pa_cdna_nothing_to_do(pb)) return PORTATTN_SUCCESS;
    const pa_hip_rt *rt;
    int dev;
    const cdna_module *m = cdna_current(&rt, &dev, err, err_len);
    if (!m) return PORTATTN_ERROR_BACKEND_UNAVAILABLE;
    pa_fwd_args a;
    portattn_status_t st = pa_fwd_fill_args(pb, &a, err, err_len);
    if (st) return st;
    unsigned gx, gy, gz;
    PA_CDNA_GRID(&a, pb->max_seqlen_q, gx, gy, gz);
    void *args[] = {&a};
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    for (int k = 0; k < PA_CDNA_ENTRY_COUNT; k++) {
        if (cdna_entries[k].d != p->head_dim_qk || cdna_entries[k].bf16 != bf16) continue;
        const pa_hip_err e = rt->ModuleLaunchKernel(m->fn[k], gx, gy, gz, PA_CDNA_THREADS, 1, 1, 0, stream, args, NULL);
        if (e != PA_HIP_SUCCESS) {
            (void)rt->GetLastError();
            return pa_hip_status(rt, e, "hip-cdna: kernel launch", err, err_len);
        }
    }
    return PORTATTN_SUCCESS;
}

const pa_backend pa_backend_hip_cdna = {
    PORTATTN_BACKEND_HIP_CDNA, "hip-cdna", cdna_probe, cdna_supports, cdna_run, NULL,
};
