/* The HIP backends: hip-cdna (MFMA, wave64) and hip-rdna3 (WMMA, wave32) on an AMD GPU through the HIP
 * runtime. Each family's code objects (one per gfx target it is built for) are embedded in the
 * library; the first that the current device loads is used, so a GPU without one is reported
 * unavailable with the targets it would need. libamdhip64 is loaded at run time (hip_rt.h). hip-cdna
 * sends KV-cache and decode-shaped calls to its split-KV decode kernel (code objects of their own,
 * launched by cdna_decode_host.c) when that kernel takes them. Both send every call their kernels
 * decline by its shape (f32, odd head dims, serving calls, any strides, ...) to hip-generic
 * (hipgen_kernel.h, cuda-generic's source: code objects of their own, launched by hipgen_host.c).
 *
 * Both pass the full case table through this file against tests/sim/hip_fake's simulated device, so the
 * selector picks them on an AMD GPU; the backend detail says what they have not been through
 * (README, backends/hip/NOTES.md). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cdna_decode_entries.h"
#include "cdna_decode_host.h"
#include "cdna_entries.h"
#include "cdna_grid.h"
#include "fwd_resolve.h"
#include "gen_shape.h"
#include "hip_code_objects.h"
#include "hip_grid.h"
#include "hip_rt.h"
#include "hip_shape.h"
#include "hipgen_entries.h"
#include "hipgen_host.h"
#include "rdna3_entries.h"
#include "rdna3_grid.h"

#define HIP_MAX_DEVICES 64
#define HIP_MAX_ENTRIES 24

/* Loaded once per device for the life of the process: a caller's hipDeviceReset is not noticed
 * (NOTES.md, "The caller's HIP state"). */
typedef struct hip_module {
    int state; /* 0 untried, 1 loaded, -1 no usable code object */
    pa_hip_module mod;
    pa_hip_fn fn[HIP_MAX_ENTRIES];
    const char *target;
    char why[200];
} hip_module;

/* One kernel family: its code objects, instances, launch shape and shapes it takes. */
typedef struct hip_family {
    const char *tag, *archs_option;
    const pa_hip_code_object *objects;
    const int *object_count;
    const char *const *names; /* the entry points, looked up by name */
    /* the entry points' instances (cdna_entries.h, rdna3_entries.h): a call launches, in list order,
     * every instance of its dtype and of the head dim that serves it (pa_fwd_instance_dim) whose first
     * output column c0 is below the call's Dv; NULL for the decode and generic families (their hosts
     * launch them) */
    const pa_hip_inst *insts;
    int entry_count, threads, rows_per_block, keys_per_tile;
    int keys_per_tile_wide; /* of instances over 128 columns (pa_hip_shape_ok_wide) */
    const int *dims;
    int ndims;
    const pa_family *limits; /* what the fast kernel takes (PA_HIP_FAST_FAMILY); NULL for the others */
    hip_module mod[HIP_MAX_DEVICES];
} hip_family;

#define HIP_NAME5(name, bf16, dqk, dv, c0) #name,
static const char *const cdna_names[] = {PA_CDNA_ENTRIES(HIP_NAME5)};
static const char *const rdna3_names[] = {PA_RDNA3_ENTRIES(HIP_NAME5)};
static const pa_hip_inst cdna_insts[] = {PA_CDNA_ENTRIES(PA_HIP_INST)};
static const pa_hip_inst rdna3_insts[] = {PA_RDNA3_ENTRIES(PA_HIP_INST)};
#define HIP_NAME6(name, kind, bf16, dqk, dv, c0) #name,
static const char *const cdnadec_names[] = {PA_CDNA_DEC_ENTRIES(HIP_NAME6)};
#define HIP_NAME2(name, kind) #name,
static const char *const hipgen_names[] = {PA_HIPGEN_ENTRIES(HIP_NAME2)};
static const int cdna_dims[] = {PA_CDNA_DIMS}, rdna3_dims[] = {PA_RDNA3_DIMS};
#define HIP_NDIMS(dims) ((int)(sizeof dims / sizeof *dims))
static int cdna_head_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_fwd_dims_ok(cdna_dims, HIP_NDIMS(cdna_dims), pb, NULL, why, why_len);
}
static int rdna3_head_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_fwd_dims_ok(rdna3_dims, HIP_NDIMS(rdna3_dims), pb, NULL, why, why_len);
}
static const pa_family cdna_limits = PA_HIP_FAST_FAMILY(cdna_head_dims);
static const pa_family rdna3_limits = PA_HIP_FAST_FAMILY(rdna3_head_dims);
_Static_assert(PA_CDNA_ENTRY_COUNT <= HIP_MAX_ENTRIES && PA_RDNA3_ENTRY_COUNT <= HIP_MAX_ENTRIES &&
               PA_CDNA_DEC_ENTRY_COUNT <= HIP_MAX_ENTRIES && PA_HIPGEN_ENTRY_COUNT <= HIP_MAX_ENTRIES, "entries");

static hip_family g_cdna = {"cdna", "PORTATTN_HIP_CDNA_ARCHS", pa_cdna_code_objects, &pa_cdna_code_object_count,
                            cdna_names, cdna_insts, PA_CDNA_ENTRY_COUNT, PA_CDNA_THREADS, PA_CDNA_BM, PA_CDNA_BN,
                            PA_CDNA_BN, cdna_dims, HIP_NDIMS(cdna_dims), &cdna_limits, {{0}}};
static hip_family g_rdna3 = {"rdna3", "PORTATTN_HIP_RDNA3_ARCHS", pa_rdna3_code_objects, &pa_rdna3_code_object_count,
                             rdna3_names, rdna3_insts, PA_RDNA3_ENTRY_COUNT, PA_RDNA3_THREADS, PA_RDNA3_BM,
                             PA_RDNA3_BN, PA_RDNA3_BN_WIDE, rdna3_dims, HIP_NDIMS(rdna3_dims), &rdna3_limits,
                             {{0}}};
/* hip-cdna's decode kernels: code objects of their own (cdna_decode.hip), routed to by hip-cdna; the
 * launch shape fields are unused (cdna_decode_host.c launches them). */
static hip_family g_cdnadec = {"cdna", "PORTATTN_HIP_CDNA_ARCHS", pa_cdnadec_code_objects, &pa_cdnadec_code_object_count,
                               cdnadec_names, NULL, PA_CDNA_DEC_ENTRY_COUNT, 0, 0, 0, 0, NULL, 0, NULL, {{0}}};
/* hip-generic: code objects for every CDNA and RDNA target (hipgen.hip), routed to by both families;
 * launched by hipgen_host.c. */
static hip_family g_hipgen = {"generic", "PORTATTN_HIP_CDNA_ARCHS / PORTATTN_HIP_RDNA3_ARCHS", pa_hipgen_code_objects,
                              &pa_hipgen_code_object_count, hipgen_names, NULL, PA_HIPGEN_ENTRY_COUNT, 0, 0, 0, 0, NULL,
                              0, NULL, {{0}}};
static pthread_mutex_t g_mod_mu = PTHREAD_MUTEX_INITIALIZER;

static void hip_try_load(const pa_hip_rt *rt, const hip_family *f, hip_module *m)
{
    char built[96] = "";
    for (int i = 0; i < *f->object_count; i++) {
        const pa_hip_code_object *co = &f->objects[i];
        snprintf(built + strlen(built), sizeof built - strlen(built), "%s%s", i ? ", " : "", co->target);
        pa_hip_module mod = NULL;
        if (rt->ModuleLoadData(&mod, co->data) != PA_HIP_SUCCESS) continue; /* another target's code */
        int ok = 1;
        for (int k = 0; k < f->entry_count && ok; k++)
            ok = rt->ModuleGetFunction(&m->fn[k], mod, f->names[k]) == PA_HIP_SUCCESS;
        if (!ok) {
            snprintf(m->why, sizeof m->why, "code object %s lacks the hip-%s entry points", co->target, f->tag);
            m->state = -1;
            return;
        }
        m->mod = mod, m->target = co->target, m->state = 1;
        return;
    }
    snprintf(m->why, sizeof m->why, "no hip-%s code object loads on this GPU (built for %s; rebuild with -D%s=<its gfx "
             "target>)", f->tag, built, f->archs_option);
    m->state = -1;
}

/* Loads the first code object the current device takes. Another target's object failing to load is
 * an answer, not an error, and so is a device none loads on (the backend is then unavailable, and
 * automatic selection carries on): the errors those loads leave are dropped (hip_rt.h). */
static void hip_load(const pa_hip_rt *rt, const hip_family *f, hip_module *m)
{
    const pa_hip_err pending = rt->PeekAtLastError();
    hip_try_load(rt, f, m);
    pa_hip_drop_error(rt, pending);
}

/* The current device's module of family f, or NULL with the reason in why. */
static const hip_module *hip_current(hip_family *f, const pa_hip_rt **rt_out, int *dev_out, char *why, size_t why_len)
{
    const pa_hip_rt *rt = pa_hip_rt_get(why, why_len);
    if (!rt) return NULL;
    int n = 0, dev = 0;
    pa_hip_err e = rt->GetDeviceCount(&n);
    if (e != PA_HIP_SUCCESS || n <= 0) { /* its error stays: every later HIP call says "no device" too */
        pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "no AMD GPU (hipGetDeviceCount: %s)",
               e != PA_HIP_SUCCESS ? rt->GetErrorName(e) : "0 devices");
        return NULL;
    }
    if ((e = rt->GetDevice(&dev)) != PA_HIP_SUCCESS || dev < 0 || dev >= HIP_MAX_DEVICES) {
        pa_hip_status(rt, e, "hipGetDevice", why, why_len);
        return NULL;
    }
    hip_module *m = &f->mod[dev];
    pthread_mutex_lock(&g_mod_mu);
    if (m->state == 0) hip_load(rt, f, m);
    pthread_mutex_unlock(&g_mod_mu);
    if (m->state < 0) {
        pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s", m->why);
        return NULL;
    }
    *rt_out = rt, *dev_out = dev;
    return m;
}

static int hip_probe(hip_family *f, char *detail, size_t detail_len)
{
    const pa_hip_rt *rt;
    int dev;
    const hip_module *m = hip_current(f, &rt, &dev, detail, detail_len);
    if (!m) return 0;
    char name[128] = "";
    if (rt->DeviceGetName(name, (int)sizeof name, dev) != PA_HIP_SUCCESS) snprintf(name, sizeof name, "?");
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "HIP device %d (%s), code object %s (validated in emulation, "
           "not yet on AMD hardware)", dev, name, m->target);
    return 1;
}

/* The kernel a call runs on, by its shape alone: hip-cdna's decode kernel for the decode-shaped calls
 * it takes, the family's fast kernel, else hip-generic. supports() decides it and hands it to run()
 * and the workspace in its choice (pa_choice.route). */
typedef enum { ROUTE_NONE, ROUTE_DECODE, ROUTE_FAST, ROUTE_GENERIC } hip_route;

static hip_route hip_route_of(const hip_family *f, const pa_problem *pb, char *kernel, size_t kernel_len, char *why,
                              size_t why_len)
{
    char fast_why[256];
    if (f == &g_cdna && pa_cdna_dec_candidate(pb) && pa_cdna_dec_shape_ok(pb, kernel, kernel_len, fast_why, sizeof fast_why))
        return ROUTE_DECODE;
    if (pa_hip_shape_ok_wide(pb, f->limits, f->tag, f->rows_per_block, f->keys_per_tile, f->keys_per_tile_wide,
                             f->insts, f->entry_count, f->dims, f->ndims, kernel, kernel_len, fast_why,
                             sizeof fast_why))
        return ROUTE_FAST;
    return pa_gen_shape_ok(pb, kernel, kernel_len, why, why_len) ? ROUTE_GENERIC : ROUTE_NONE;
}

/* The fast kernel's pointers: Q, O, K and V (with keys), the LSE and the packed offsets. */
static int hip_fast_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int needs_kv = p->seqlen_k > 0;
    return pa_hip_ptr_check(rt, p->q.data, dev, "q.data", why, why_len) &&
           pa_hip_ptr_check(rt, p->o.data, dev, "o.data", why, why_len) &&
           (!needs_kv || (pa_hip_ptr_check(rt, p->k.data, dev, "k.data", why, why_len) &&
                          pa_hip_ptr_check(rt, p->v.data, dev, "v.data", why, why_len))) &&
           (!p->lse || pa_hip_ptr_check(rt, p->lse, dev, "lse", why, why_len)) &&
           (!pb->varlen || (pa_hip_ptr_check(rt, p->cu_seqlens_q, dev, "cu_seqlens_q", why, why_len) &&
                            pa_hip_ptr_check(rt, p->cu_seqlens_k, dev, "cu_seqlens_k", why, why_len)));
}

static int hip_supports(hip_family *f, const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                        size_t why_len)
{
    const hip_route r = hip_route_of(f, pb, kernel, kernel_len, why, why_len);
    if (r == ROUTE_NONE) return 0;
    ch->route = (int)r;
    if (pa_hip_nothing_to_do(pb)) return 1; /* no launch (the front end appends only with queries) */
    hip_family *code = r == ROUTE_DECODE ? &g_cdnadec : r == ROUTE_GENERIC ? &g_hipgen : f;
    const pa_hip_rt *rt;
    int dev;
    if (!hip_current(code, &rt, &dev, why, why_len)) return 0;
    return r == ROUTE_DECODE ? pa_cdna_dec_ptrs_ok(rt, dev, pb, why, why_len)
         : r == ROUTE_GENERIC ? pa_hipgen_ptrs_ok(rt, dev, pb, why, why_len)
                              : hip_fast_ptrs_ok(rt, dev, pb, why, why_len);
}

static portattn_status_t hip_run_fast(hip_family *f, const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_hip_rt *rt;
    int dev;
    const hip_module *m = hip_current(f, &rt, &dev, err, err_len);
    if (!m) return PORTATTN_ERROR_BACKEND_UNAVAILABLE;
    pa_fwd_args a;
    portattn_status_t st = pa_fwd_fill_args(pb, &a, err, err_len);
    if (st) return st;
    unsigned g[3];
    pa_hip_grid(a.batch, a.heads, pb->max_seqlen_q, f->rows_per_block, g);
    void *args[] = {&a};
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16, d = pa_fwd_instance_dim(f->dims, f->ndims, a.dqk, a.dv);
    for (int k = 0; k < f->entry_count; k++) {
        const pa_hip_inst *ent = &f->insts[k];
        if (ent->d != d || ent->bf16 != bf16 || ent->c0 >= a.dv) continue; /* columns from c0 on: none of the call's */
        const pa_hip_err e = rt->ModuleLaunchKernel(m->fn[k], g[0], g[1], g[2], (unsigned)f->threads, 1, 1, 0, stream, args, NULL);
        if (e != PA_HIP_SUCCESS) { /* the call fails: the launch's error stays, as a failed runtime call's does */
            char what[32];
            snprintf(what, sizeof what, "hip-%s: kernel launch", f->tag);
            return pa_hip_status(rt, e, what, err, err_len);
        }
    }
    return PORTATTN_SUCCESS;
}

static portattn_status_t hip_run(hip_family *f, const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                 size_t err_len)
{
    const hip_route r = (hip_route)ch->route;
    if (pa_hip_nothing_to_do(pb)) return PORTATTN_SUCCESS;
    if (r == ROUTE_FAST) return hip_run_fast(f, pb, stream, err, err_len);
    const pa_hip_rt *rt;
    int dev;
    const hip_module *m = hip_current(r == ROUTE_DECODE ? &g_cdnadec : &g_hipgen, &rt, &dev, err, err_len);
    if (!m) return PORTATTN_ERROR_BACKEND_UNAVAILABLE;
    return r == ROUTE_GENERIC ? pa_hipgen_launch(rt, m->fn, m->target, pb, stream, err, err_len)
                              : pa_cdna_dec_launch(rt, m->fn, pb, stream, err, err_len);
}

static size_t cdna_workspace(const pa_problem *pb, const pa_choice *ch)
{
    return ch->route == ROUTE_DECODE ? pa_cdna_dec_workspace(pb) : 0;
}

#define HIP_BACKEND(fam, id, name, ws)                                                                         \
    static int fam##_probe(char *d, size_t n) { return hip_probe(&g_##fam, d, n); }                          \
    static int fam##_supports(const pa_problem *pb, pa_choice *ch, char *k, size_t kl, char *w, size_t wl)   \
    {                                                                                                        \
        return hip_supports(&g_##fam, pb, ch, k, kl, w, wl);                                                 \
    }                                                                                                        \
    static portattn_status_t fam##_run(const pa_problem *pb, const pa_choice *ch, void *s, char *e, size_t el) \
    {                                                                                                        \
        return hip_run(&g_##fam, pb, ch, s, e, el);                                                          \
    }                                                                                                        \
    const pa_backend pa_backend_hip_##fam = {id, name, fam##_probe, fam##_supports, fam##_run, ws};

HIP_BACKEND(cdna, PORTATTN_BACKEND_HIP_CDNA, "hip-cdna", cdna_workspace)
HIP_BACKEND(rdna3, PORTATTN_BACKEND_HIP_RDNA3, "hip-rdna3", NULL)
