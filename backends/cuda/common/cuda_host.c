#include "cuda_host.h"
#include "cuda_inst.h"
#include "fwd_resolve.h"
#include "bwd_problem.h"

#include <cuda.h> /* cuCtxGetId's types, for the entry point found at run time */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define PA_CUDA_MAX_DEVICES 64

typedef struct pa_dev_info {
    int major, minor, sms;
    int smem_optin, smem_per_sm; /* bytes: per block with the opt-in attribute, per SM */
    int l2_bytes;
    char name[96];
} pa_dev_info;

/* Per-device cache. State 0 empty, 1 being filled, 2 ready: one winner fills a slot, racing
 * threads use their own copy, so no lock and no torn reads. */
static pa_dev_info g_dev[PA_CUDA_MAX_DEVICES];
static atomic_int g_dev_state[PA_CUDA_MAX_DEVICES];

/* "No driver / no device" never heals within a process: remember it so that CPU-only machines
 * pay for the failed runtime init once, not on every pointer query. */
static atomic_int g_absent_state;
static char g_absent_why[128];

/* The last device error a query of this thread ran into (a sticky launch failure, a lost device),
 * so that the selector can report "device error" instead of "pointer not accessible". */
static _Thread_local char g_dev_error[160];

static int pa_cuda_is_absence(cudaError_t e)
{
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver;
}

static int pa_cuda_absent(void)
{
    return atomic_load_explicit(&g_absent_state, memory_order_acquire) == 2;
}

/* Records why a query failed and writes the reason. The runtime's last error is left as the failed
 * query set it (cuda_host.h: pa_cuda_drop_error): "no device" and a sticky device error come back
 * from every later runtime call anyway. */
static void pa_cuda_fail(cudaError_t e, char *why, size_t len)
{
    if (pa_cuda_is_absence(e)) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&g_absent_state, &expect, 1)) {
            snprintf(g_absent_why, sizeof g_absent_why, "no CUDA device: %s", cudaGetErrorString(e));
            atomic_store_explicit(&g_absent_state, 2, memory_order_release);
        }
        if (why && len) snprintf(why, len, "no CUDA device: %s", cudaGetErrorString(e));
    } else {
        snprintf(g_dev_error, sizeof g_dev_error, "CUDA device unusable: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        if (why && len) snprintf(why, len, "%s", g_dev_error);
    }
}

int pa_cuda_take_device_error(char *buf, size_t len)
{
    if (!g_dev_error[0]) return 0;
    if (buf && len) snprintf(buf, len, "%s", g_dev_error);
    g_dev_error[0] = 0;
    return 1;
}

static cudaError_t pa_cuda_query(int dev, pa_dev_info *out)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess) return e;
    out->major = prop.major;
    out->minor = prop.minor;
    out->sms = prop.multiProcessorCount;
    out->smem_optin = (int)prop.sharedMemPerBlockOptin;
    out->smem_per_sm = (int)prop.sharedMemPerMultiprocessor;
    out->l2_bytes = prop.l2CacheSize;
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof out->name - 1, prop.name);
    return cudaSuccess;
}

/* The cached record of the current device; 0 with the reason in name when there is none. */
static int pa_cuda_record(pa_dev_info *out, char *name, size_t name_len);

int pa_cuda_device_info(int *cc_major, int *cc_minor, int *sm_count, char *name, size_t name_len)
{
    pa_dev_info info;
    if (!pa_cuda_record(&info, name, name_len)) return 0;
    if (cc_major) *cc_major = info.major;
    if (cc_minor) *cc_minor = info.minor;
    if (sm_count) *sm_count = info.sms;
    if (name && name_len) snprintf(name, name_len, "%s", info.name);
    return 1;
}

int pa_cuda_device_smem(int *optin, int *per_sm)
{
    pa_dev_info info;
    if (!pa_cuda_record(&info, NULL, 0)) return 0;
    if (optin) *optin = info.smem_optin;
    if (per_sm) *per_sm = info.smem_per_sm;
    return 1;
}

int pa_cuda_device_l2(int *bytes)
{
    pa_dev_info info;
    if (!pa_cuda_record(&info, NULL, 0)) return 0;
    if (bytes) *bytes = info.l2_bytes;
    return 1;
}

static int pa_cuda_record(pa_dev_info *out, char *name, size_t name_len)
{
    if (pa_cuda_absent()) {
        if (name && name_len) snprintf(name, name_len, "%s", g_absent_why);
        return 0;
    }
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) { pa_cuda_fail(e, name, name_len); return 0; }

    pa_dev_info local;
    const pa_dev_info *info = &local;
    int cacheable = dev >= 0 && dev < PA_CUDA_MAX_DEVICES;
    if (cacheable && atomic_load_explicit(&g_dev_state[dev], memory_order_acquire) == 2) {
        info = &g_dev[dev];
    } else {
        e = pa_cuda_query(dev, &local);
        if (e != cudaSuccess) { pa_cuda_fail(e, name, name_len); return 0; }
        int expect = 0;
        if (cacheable && atomic_compare_exchange_strong(&g_dev_state[dev], &expect, 1)) {
            g_dev[dev] = local;
            atomic_store_explicit(&g_dev_state[dev], 2, memory_order_release);
        }
    }
    *out = *info;
    return 1;
}

/* A driver function's address by name (0: none), looked up once into *fn (racing first lookups store the same pointer);
 * NULL when the driver lacks it. A failed lookup is carried on past, so its runtime error is
 * cleared unless one was pending. */
static uintptr_t pa_driver_entry(const char *name, atomic_uintptr_t *fn, atomic_int *missing)
{
    const uintptr_t f = atomic_load_explicit(fn, memory_order_acquire);
    if (f) return f;
    if (atomic_load_explicit(missing, memory_order_relaxed)) return 0;
    const cudaError_t pending = cudaPeekAtLastError();
    enum cudaDriverEntryPointQueryResult q;
    void *found = NULL;
    if (cudaGetDriverEntryPointByVersion(name, &found, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !found) {
        pa_cuda_drop_error(pending);
        atomic_store_explicit(missing, 1, memory_order_relaxed);
        return 0;
    }
    atomic_store_explicit(fn, (uintptr_t)found, memory_order_release);
    return (uintptr_t)found;
}

typedef CUresult (*pa_ctx_id_fn)(CUcontext, unsigned long long *);
typedef CUresult (*pa_func_attr_fn)(CUfunction, CUfunction_attribute, int);

/* cuCtxGetId (CUDA 12.0 drivers have it). */
static pa_ctx_id_fn pa_ctx_id_lookup(void)
{
    static atomic_uintptr_t fn;
    static atomic_int missing;
    return (pa_ctx_id_fn)pa_driver_entry("cuCtxGetId", &fn, &missing);
}

/* cuFuncSetAttribute. */
static pa_func_attr_fn pa_func_attr_lookup(void)
{
    static atomic_uintptr_t fn;
    static atomic_int missing;
    return (pa_func_attr_fn)pa_driver_entry("cuFuncSetAttribute", &fn, &missing);
}

/* The runtime's cudaFuncSetAttribute resets the thread's last error when it succeeds (CUDA 13,
 * measured on the H200: a caller's pending cudaErrorInvalidDevice read cudaSuccess after it), which
 * in a static build is the caller's slot. The driver's cuFuncSetAttribute on the kernel's CUfunction
 * (cudaGetFuncBySymbol leaves the slot alone) sets the same attribute and leaves the slot alone: on
 * the H200 a 200 KB launch then ran and the caller's error stayed pending. The driver route is taken
 * only while an error is pending (one peek per opt-in, which happens once per kernel and context);
 * otherwise, and without the driver entry point, the runtime's call. */
cudaError_t pa_cuda_smem_optin(const void *kernel, int bytes)
{
    const pa_func_attr_fn set = cudaPeekAtLastError() != cudaSuccess ? pa_func_attr_lookup() : NULL;
    if (!set) return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    cudaFunction_t f = NULL;
    const cudaError_t e = cudaGetFuncBySymbol(&f, kernel);
    if (e != cudaSuccess) return e;
    const CUresult r = set((CUfunction)f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    return r == CUDA_SUCCESS ? cudaSuccess : (cudaError_t)r; /* CUresult and cudaError_t share numbers */
}

int pa_cuda_context_key(void)
{
    const pa_ctx_id_fn get = pa_ctx_id_lookup();
    unsigned long long id = 0;
    if (!get || get(NULL, &id) != CUDA_SUCCESS) return 0; /* a driver call: the runtime's slot is untouched */
    /* Two contexts share a key only 2^31 context creations apart; an id with low bits 0 is not cached. */
    return (int)(id & 0x7fffffffu);
}

int pa_cuda_probe(char *detail, size_t detail_len)
{
    int major = 0, minor = 0, sms = 0;
    char name[128];
    const int words = detail && detail_len; /* the selector's quiet pass formats nothing */
    if (!pa_cuda_device_info(&major, &minor, &sms, words ? name : NULL, words ? sizeof name : 0)) {
        if (words) snprintf(detail, detail_len, "%s", name);
        return 0;
    }
    if (words)
        snprintf(detail, detail_len, "%s (sm_%d%d, %d SMs)", name, major, minor, sms);
    return 1;
}

/* Residency of ptr as the runtime sees it. */
typedef enum pa_cuda_mem {
    PA_MEM_UNKNOWN = 0, /* the query failed (no driver, ...) */
    PA_MEM_HOST,        /* plain pageable host memory */
    PA_MEM_PINNED,      /* page-locked host memory; *mapped = device can use ptr itself */
    PA_MEM_DEVICE,      /* device memory of *device */
    PA_MEM_MANAGED
} pa_cuda_mem;

/* The answers this thread already had in the front end's current resolution (pa_cuda_memo): the
 * validation asks about seqused_k, block_table and cu_seqlens, then each backend the selector tries
 * asks about every pointer its kernel reads, and a failed quiet pass is chosen again with words.
 * Inside one call on one thread no pointer changes hands (another thread freeing it mid-call would
 * break the launch anyway), so a second query's answer is the first's. Failed queries are not kept
 * (their device error must be met again), and nothing is kept outside a resolution. */
#define PA_MEMO_SLOTS 16
typedef struct pa_memo {
    int on, n;
    const void *ptr[PA_MEMO_SLOTS];
    pa_cuda_mem mem[PA_MEMO_SLOTS];
    int device[PA_MEMO_SLOTS], mapped[PA_MEMO_SLOTS];
} pa_memo;
static _Thread_local pa_memo g_memo;

void pa_cuda_memo(int on)
{
    g_memo.on = on;
    g_memo.n = 0;
}

static pa_cuda_mem pa_cuda_query_ptr(const void *ptr, int *device, int *mapped);

static pa_cuda_mem pa_cuda_where(const void *ptr, int *device, int *mapped)
{
    *device = -1;
    *mapped = 0;
    if (!ptr || pa_cuda_absent()) return PA_MEM_UNKNOWN;
    for (int i = 0; g_memo.on && i < g_memo.n; i++)
        if (g_memo.ptr[i] == ptr) {
            *device = g_memo.device[i], *mapped = g_memo.mapped[i];
            return g_memo.mem[i];
        }
    const pa_cuda_mem m = pa_cuda_query_ptr(ptr, device, mapped);
    if (g_memo.on && m != PA_MEM_UNKNOWN && g_memo.n < PA_MEMO_SLOTS) {
        const int i = g_memo.n++;
        g_memo.ptr[i] = ptr, g_memo.mem[i] = m, g_memo.device[i] = *device, g_memo.mapped[i] = *mapped;
    }
    return m;
}

/* One runtime query (no memo). */
static pa_cuda_mem pa_cuda_query_ptr(const void *ptr, int *device, int *mapped)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess) {
        /* A pointer the runtime has never seen is not an error (cudaErrorInvalidValue from runtimes
         * before 11.0, older than the one linked in: a guard); anything else means the device itself
         * is in trouble. */
        if (e == cudaErrorInvalidValue) return PA_MEM_HOST;
        pa_cuda_fail(e, NULL, 0);
        return PA_MEM_UNKNOWN;
    }
    *device = a.device;
    switch (a.type) {
    case cudaMemoryTypeDevice: return PA_MEM_DEVICE;
    case cudaMemoryTypeManaged: return PA_MEM_MANAGED;
    case cudaMemoryTypeHost:
        /* Mapped pinned memory has the same address on the device under UVA. */
        *mapped = a.devicePointer == ptr;
        return PA_MEM_PINNED;
    default: return PA_MEM_HOST;
    }
}

static int pa_cuda_current(void)
{
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) return -1;
    return dev;
}

int pa_cuda_ptr_is_device_only(const void *ptr)
{
    int dev, mapped;
    return pa_cuda_where(ptr, &dev, &mapped) == PA_MEM_DEVICE;
}

int pa_cuda_ptr_is_device_accessible(const void *ptr)
{
    return pa_cuda_ptr_check(ptr, "", NULL, 0);
}

int pa_cuda_ptr_check(const void *ptr, const char *what, char *why, size_t why_len)
{
    int dev, mapped, cur;
    if (!why) why_len = 0;
    switch (pa_cuda_where(ptr, &dev, &mapped)) {
    case PA_MEM_MANAGED: return 1;
    case PA_MEM_PINNED:
        if (mapped) return 1;
        if (why_len) snprintf(why, why_len, "%s is pinned host memory not mapped for the device", what);
        return 0;
    case PA_MEM_DEVICE:
        /* Another device's memory works only with peer access enabled, which the runtime cannot
         * be asked about without changing it: refuse rather than risk an illegal address. */
        cur = pa_cuda_current();
        if (dev == cur) return 1;
        if (why_len) snprintf(why, why_len, "%s is on device %d, current device %d", what, dev, cur);
        return 0;
    case PA_MEM_HOST:
        if (why_len) snprintf(why, why_len, "%s is host memory", what);
        return 0;
    default:
        if (why_len) {
            if (!ptr) snprintf(why, why_len, "%s is NULL", what);
            else if (pa_cuda_absent()) snprintf(why, why_len, "%s: %s", what, g_absent_why);
            else if (g_dev_error[0]) snprintf(why, why_len, "%s: %s", what, g_dev_error);
            else snprintf(why, why_len, "%s is not a CUDA-accessible pointer", what);
        }
        return 0;
    }
}

portattn_status_t pa_cuda_status(cudaError_t e, const char *what, char *err, size_t err_len)
{
    if (e == cudaSuccess) return PORTATTN_SUCCESS;
    portattn_status_t st = e == cudaErrorMemoryAllocation ? PORTATTN_ERROR_OUT_OF_MEMORY
                                                          : PORTATTN_ERROR_DEVICE;
    return pa_fmt(err, err_len, st, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int tma_tensor_ok(const portattn_tensor_t *t, const char *name, const int64_t n[3], char *why, size_t why_len)
{
    for (int i = 0; i < 3; i++) {
        if (n[i] == 1) continue; /* a single index: the map gets a nominal stride */
        if (t->stride[i] >= ((int64_t)1 << 39)) {
            pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s.stride[%d] = %lld: TMA strides stay below 2^40 bytes",
                   name, i, (long long)t->stride[i]);
            return 0;
        }
        if (t->stride[i] == 0) {
            pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s.stride[%d] = 0: TMA needs distinct rows", name, i);
            return 0;
        }
    }
    return 1;
}

int pa_tma_strides_ok(const pa_problem *pb, int with_o, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t nb = pb->varlen ? 1 : p->batch;
    int64_t nkb = nb, sk = p->seqlen_k;
    int rows = 1;
    pa_tmap_kv_extent(pb, &nkb, &sk, &rows);
    const int64_t nq[3] = {nb, p->seqlen_q, p->heads_q}, nk[3] = {nkb, sk, p->heads_kv};
    return tma_tensor_ok(&p->q, "q", nq, why, why_len) && tma_tensor_ok(&p->k, "k", nk, why, why_len) &&
           tma_tensor_ok(&p->v, "v", nk, why, why_len) && (!with_o || tma_tensor_ok(&p->o, "o", nq, why, why_len));
}

int pa_cuda_ptrs_ok(const pa_cuda_ptr *ptrs, size_t n, char *why, size_t why_len)
{
    for (size_t i = 0; i < n; i++)
        if (ptrs[i].need && !pa_cuda_ptr_check(ptrs[i].ptr, ptrs[i].what, why, why_len)) return 0;
    return 1;
}

int pa_cuda_fwd_ptrs_ok(const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int needs_kv = p->seqlen_k > 0;
    const pa_cuda_ptr ptrs[] = {
        {p->q.data, "q.data", 1}, {p->o.data, "o.data", 1},
        {p->k.data, "k.data", needs_kv}, {p->v.data, "v.data", needs_kv},
        {p->lse, "lse", p->lse != NULL},
        {p->cu_seqlens_q, "cu_seqlens_q", pb->varlen}, {p->cu_seqlens_k, "cu_seqlens_k", pb->varlen_k},
        {p->seqused_k, "seqused_k", p->seqused_k != NULL}, {p->block_table, "block_table", p->block_table != NULL},
        {p->k_new.data, "k_new.data", pb->seqlen_new > 0}, {p->v_new.data, "v_new.data", pb->seqlen_new > 0},
    };
    return pa_cuda_ptrs_ok(ptrs, sizeof ptrs / sizeof ptrs[0], why, why_len);
}

/* The family's head dims, ascending, for pa_fwd_instance_dim and pa_fwd_dims_ok's words (the launchers
 * assert that no table has more than PA_CUDA_INST_MAX rows). */
static int inst_dims(const pa_cuda_inst *t, int n, int *dims)
{
    n = n < PA_CUDA_INST_MAX ? n : PA_CUDA_INST_MAX;
    for (int i = 0; i < n; ++i) dims[i] = t[i].d;
    return n;
}

const pa_cuda_inst *pa_cuda_inst_for(const pa_cuda_inst *t, int n, int64_t dqk, int64_t dv)
{
    int dims[PA_CUDA_INST_MAX] = {0};
    n = inst_dims(t, n, dims);
    const int d = pa_fwd_instance_dim(dims, n, dqk, dv);
    for (int i = 0; i < n && d; ++i)
        if (t[i].d == d) return &t[i];
    return NULL;
}

const pa_cuda_inst *pa_cuda_inst_ok(const pa_cuda_inst *t, int n, const pa_problem *pb, const char *who, char *why,
                                    size_t why_len)
{
    const pa_cuda_inst *in = pa_cuda_inst_for(t, n, pb->p.head_dim_qk, pb->p.head_dim_v);
    int dims[PA_CUDA_INST_MAX] = {0};
    if (!in) pa_fwd_dims_ok(dims, inst_dims(t, n, dims), pb, who, why, why_len);
    return in;
}

/* cuda_host.h. Layouts and device residency of every tensor a backward touches (none without rows). */
int pa_cuda_bwd_tensors_ok(const pa_bwd_problem *bp, char *why, size_t why_len)
{
    const pa_problem *pb = &bp->fwd;
    const portattn_fwd_params_t *p = &pb->p;
    if (p->batch == 0 || (pb->max_seqlen_q == 0 && pb->max_seqlen_k == 0)) return 1;
    const int kv = p->seqlen_k > 0, vl = pb->varlen;
    if (!pa_fwd_layouts_ok(pb, why, why_len) || !pa_tiled_layout_ok(&bp->dout, "dout", vl, why, why_len) ||
        !pa_tiled_layout_ok(&bp->dq, "dq", vl, why, why_len) ||
        (kv && (!pa_tiled_layout_ok(&bp->dk, "dk", vl, why, why_len) || !pa_tiled_layout_ok(&bp->dv, "dv", vl, why, why_len))))
        return 0;
    const struct { const void *ptr; const char *what; } need[] = {
        {p->q.data, "q.data"}, {p->k.data, "k.data"}, {p->v.data, "v.data"}, {p->o.data, "o.data"},
        {bp->dout.data, "dout.data"}, {p->lse, "lse"}, {bp->dq.data, "dq.data"}, {bp->dk.data, "dk.data"},
        {bp->dv.data, "dv.data"}, {p->cu_seqlens_q, "cu_seqlens_q"}, {p->cu_seqlens_k, "cu_seqlens_k"},
        {p->workspace, "workspace"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
        if (need[i].ptr && !pa_cuda_ptr_check(need[i].ptr, need[i].what, why, why_len)) return 0;
    if ((uintptr_t)p->workspace % 16) return PA_REFUSE("workspace %p is not 16-byte aligned", p->workspace);
    return 1;
}
