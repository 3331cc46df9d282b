/* portattn-host-cost: where the host time of one portattn_forward goes, on the decode sweep's shapes
 * (bf16, Hq 32, Hkv 8, d128, one query token; batch 1/8/32 x KV 4k/16k/64k), each as a full cache
 * and with seqused_k (as serving engines call it, in the kind's memory).
 *
 *   portattn-host-cost [--calls N] [--backend NAME]
 *
 * Per shape, the median host time of one call over N calls back to back (a device sync every 8):
 *   check    portattn_forward_workspace_size: validation and the quiet selection, no launch
 *   forward  portattn_forward with a caller workspace (GPUs only: on the CPU it would compute)
 * and, once, the floor: one launch of an empty kernel in this process (cudaLaunchKernel, as the
 * library launches). forward - floor is what the library adds to its one launch. Also once: one
 * pointer-attribute query and one cudaGetDevice, the runtime calls the checks are made of, so that
 * the check column can be attributed. Without a GPU only the check column is measured (the CUDA
 * backends are refused at their probe there), which still times validation and the walk over the
 * backends. Exit 0, or 1 when a call fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "portattn.h"
#ifdef PORTATTN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { HQ = 32, HKV = 8, D = 128, MAX_B = 32, MAX_KV = 65536 };

typedef struct bufs {
    dm_kind kind;
    void *q, *o, *k, *v, *used, *ws;
    size_t ws_bytes;
} bufs;

static int alloc_bufs(bufs *m)
{
    const size_t qo = (size_t)MAX_B * HQ * D * 2, kv = (size_t)MAX_B * MAX_KV * HKV * D * 2;
    int32_t used[MAX_B];
    for (int b = 0; b < MAX_B; b++) used[b] = 1000 + 17 * b; /* within every capacity below */
    m->q = dm_alloc(m->kind, qo), m->o = dm_alloc(m->kind, qo);
    m->k = dm_alloc(m->kind, kv), m->v = dm_alloc(m->kind, kv); /* never read on the CPU: left as they come */
    m->used = dm_alloc(m->kind, sizeof used);
    return !(m->q && m->o && m->k && m->v && m->used) || dm_upload(m->kind, m->used, used, sizeof used);
}

static void free_bufs(bufs *m)
{
    void *all[] = {m->q, m->o, m->k, m->v, m->used, m->ws};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dm_free(m->kind, all[i]);
}

static portattn_fwd_params_t make_call(const bufs *m, int64_t b, int64_t kv, int with_used, portattn_backend_t be)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_BF16, p.backend = be;
    p.batch = b, p.seqlen_q = 1, p.seqlen_k = kv, p.heads_q = HQ, p.heads_kv = HKV;
    p.head_dim_qk = p.head_dim_v = D;
    p.q = portattn_tensor_bshd(m->q, 1, HQ, D), p.o = portattn_tensor_bshd(m->o, 1, HQ, D);
    p.k = portattn_tensor_bshd(m->k, kv, HKV, D), p.v = portattn_tensor_bshd(m->v, kv, HKV, D);
    if (with_used) p.seqused_k = (const int32_t *)m->used;
    return p;
}

static int call_check(void *arg)
{
    size_t bytes;
    return portattn_forward_workspace_size((const portattn_fwd_params_t *)arg, &bytes) != PORTATTN_SUCCESS;
}

static int call_forward(void *arg) { return portattn_forward((const portattn_fwd_params_t *)arg, NULL) != PORTATTN_SUCCESS; }

#ifdef PORTATTN_HAVE_CUDA
static int query_pointer(void *ptr)
{
    struct cudaPointerAttributes a;
    return cudaPointerGetAttributes(&a, ptr) != cudaSuccess;
}

static int query_device(void *unused)
{
    int dev;
    (void)unused;
    return cudaGetDevice(&dev) != cudaSuccess;
}
#endif

/* The runtime calls the checks are made of, timed alone (GPUs). */
static void print_runtime_costs(const bufs *m, int calls)
{
#ifdef PORTATTN_HAVE_CUDA
    double ptr_us = -1, dev_us = -1;
    if (m->kind == DM_CUDA && !dm_host_cost(m->kind, calls, query_pointer, m->k, &ptr_us) &&
        !dm_host_cost(m->kind, calls, query_device, NULL, &dev_us))
        printf("# one cudaPointerGetAttributes (device memory): %.3f us; one cudaGetDevice: %.3f us\n", ptr_us, dev_us);
#else
    (void)m, (void)calls;
#endif
}

/* One shape's row: 0, or 1 with the API's message printed. */
static int shape_row(bufs *m, int64_t b, int64_t kv, int with_used, portattn_backend_t be, int calls)
{
    portattn_fwd_params_t p = make_call(m, b, kv, with_used, be);
    portattn_selection_t sel;
    size_t ws = 0;
    double check = -1, fwd = -1;
    char label[48];
    snprintf(label, sizeof label, "b%lld kv%lldk%s", (long long)b, (long long)kv / 1024, with_used ? " seqused_k" : "");
    if (portattn_forward_query(&p, &sel) || portattn_forward_workspace_size(&p, &ws)) goto fail;
    if (ws > m->ws_bytes) { /* grown as needed, kept for the smaller shapes */
        dm_free(m->kind, m->ws);
        if (!(m->ws = dm_alloc(m->kind, ws))) return printf("%-22s out of memory for a %zu-byte workspace\n", label, ws), 1;
        m->ws_bytes = ws;
    }
    p.workspace = ws ? m->ws : NULL, p.workspace_size = ws;
    if (dm_host_cost(m->kind, calls, call_check, &p, &check)) goto fail;
    if (m->kind != DM_HOST && dm_host_cost(m->kind, calls, call_forward, &p, &fwd)) goto fail;
    printf("%-22s %-42s %8.2f", label, sel.kernel, check);
    if (fwd >= 0) printf(" %8.2f\n", fwd);
    else printf(" %8s\n", "-");
    return 0;
fail:
    printf("%-22s FAIL: %s\n", label, portattn_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int calls = 2000;
    portattn_backend_t be = PORTATTN_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        int ok = 1;
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) be = portattn_backend_from_name(argv[++i], &ok);
        else ok = 0;
        if (!ok || calls < 1) {
            fprintf(stderr, "usage: portattn-host-cost [--calls N (>= 1)] [--backend NAME]\n");
            return 2;
        }
    }
    char why[256];
    bufs m;
    memset(&m, 0, sizeof m);
    m.kind = dm_available(DM_CUDA, why, sizeof why) ? DM_CUDA : DM_HOST;
    if (alloc_bufs(&m)) {
        fprintf(stderr, "portattn-host-cost: out of %s memory\n", dm_kind_name(m.kind));
        free_bufs(&m);
        return 1;
    }
    double floor_us = -1;
    if (m.kind != DM_HOST) (void)dm_launch_floor(m.kind, calls, &floor_us);
    printf("# portattn-host-cost on %s: median host us per call over %d calls (a sync every 8)\n",
           dm_device_name(m.kind), calls);
    printf("# check = workspace_size (validation + selection, no launch); forward = portattn_forward\n");
    if (floor_us >= 0) printf("# one empty-kernel launch (the floor of any forward): %.2f us\n", floor_us);
    else printf("# no GPU: forward and the launch floor are not measured\n");
    print_runtime_costs(&m, calls);
    printf("%-22s %-42s %8s %8s\n", "shape", "kernel", "check", "forward");
    const int64_t batches[] = {1, 8, 32}, kvs[] = {4096, 16384, 65536};
    int failed = 0;
    for (int u = 0; u < 2; u++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) failed |= shape_row(&m, batches[i], kvs[j], u, be, calls);
    free_bufs(&m);
    return failed;
}
