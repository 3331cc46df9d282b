/* portattn_forward captured into a CUDA graph and replayed.
 *   test_graph <cuda backend>     exit 0 pass, 1 fail, 77 no GPU
 * Each scenario builds its call once, captures it on a stream (global capture mode, the strictest,
 * as torch.cuda.graph uses), then replays the graph after writing new inputs and new device-resident
 * lengths (seqused_k, cu_seqlens) into the same buffers. After every replay the output must equal,
 * bit for bit, an uncaptured portattn_forward of the same call on the same data, and be close to the
 * CPU reference. What a capture bakes in: the pointers, shapes, strides, the kernel and split count
 * chosen then, the workspace pointer; device-resident lengths and all data are read at replay. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"

enum { REPLAYS = 3 };

typedef struct scen {
    const char *name;
    int64_t b, sq, sk, hq, hkv, d;
    int causal, decode, varlen;
} scen;

typedef struct bufs {
    void *q, *k, *v, *o, *o_ref, *ws, *used, *cu;
    size_t nq, nk, no;
    uint16_t *hq, *hk, *hv, *ho, *href;
} bufs;

static int fill(void *dev, uint16_t *host, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++) host[i] = pa_f32_to_bf16((float)urand(rng));
    return dm_upload(DM_CUDA, dev, host, n * 2);
}

/* New device-resident lengths for replay r: cache lengths in [1, sk], or varlen offsets with the
 * same total and longest sequence (max_seqlen is baked in). */
static int new_lengths(const scen *s, bufs *m, int r)
{
    int32_t v[8];
    if (s->decode) {
        for (int64_t b = 0; b < s->b; b++) v[b] = (int32_t)(1 + (b * 97 + r * 131) % s->sk);
        return dm_upload(DM_CUDA, m->used, v, (size_t)s->b * 4);
    }
    if (!s->varlen) return 0;
    const int32_t lens[3][3] = {{40, 100, 60}, {100, 20, 80}, {70, 30, 100}};
    v[0] = 0;
    for (int b = 0; b < 3; b++) v[b + 1] = v[b] + lens[r % 3][b];
    return dm_upload(DM_CUDA, m->cu, v, sizeof(int32_t) * 4);
}

static portattn_fwd_params_t make_call(const scen *s, bufs *m, portattn_backend_t be)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_BF16, p.backend = be, p.causal = s->causal;
    p.batch = s->b, p.seqlen_q = s->sq, p.seqlen_k = s->sk, p.heads_q = s->hq, p.heads_kv = s->hkv;
    p.head_dim_qk = p.head_dim_v = s->d;
    p.q = portattn_tensor_bshd(m->q, s->sq, s->hq, s->d), p.o = portattn_tensor_bshd(m->o, s->sq, s->hq, s->d);
    p.k = portattn_tensor_bshd(m->k, s->sk, s->hkv, s->d), p.v = portattn_tensor_bshd(m->v, s->sk, s->hkv, s->d);
    if (s->decode) p.seqused_k = m->used;
    if (s->varlen) {
        p.batch = 3, p.cu_seqlens_q = p.cu_seqlens_k = m->cu, p.max_seqlen_q = p.max_seqlen_k = 100;
        p.q.stride[0] = p.k.stride[0] = p.v.stride[0] = p.o.stride[0] = 0;
    }
    return p;
}

/* The CPU reference of the call on the host copies, for a loose sanity bound (the bitwise check
 * against the uncaptured call is the real one). */
static double ref_error(const scen *s, const portattn_fwd_params_t *gp, bufs *m, int r)
{
    portattn_fwd_params_t p = *gp;
    int32_t used[8], cu[4];
    if (s->decode) {
        for (int64_t b = 0; b < s->b; b++) used[b] = (int32_t)(1 + (b * 97 + r * 131) % s->sk);
        p.seqused_k = used;
    }
    if (s->varlen) {
        const int32_t lens[3][3] = {{40, 100, 60}, {100, 20, 80}, {70, 30, 100}};
        cu[0] = 0;
        for (int b = 0; b < 3; b++) cu[b + 1] = cu[b] + lens[r % 3][b];
        p.cu_seqlens_q = p.cu_seqlens_k = cu;
    }
    p.backend = PORTATTN_BACKEND_CPU, p.workspace = NULL, p.workspace_size = 0;
    p.q.data = m->hq, p.k.data = m->hk, p.v.data = m->hv, p.o.data = m->href;
    if (portattn_forward(&p, NULL)) return INFINITY;
    double se = 0, sr = 0;
    for (size_t i = 0; i < m->no; i++) {
        double a = pa_bf16_to_f32(m->ho[i]), b = pa_bf16_to_f32(m->href[i]);
        se += (a - b) * (a - b), sr += b * b;
    }
    return sqrt(se / (sr > 0 ? sr : 1));
}

/* After a mismatch: the same data through cuda-generic, uncaptured, to tell whether the backend
 * under test or the reference is off. */
static void blame(const scen *s, const portattn_fwd_params_t *pref, bufs *m, int r)
{
    portattn_fwd_params_t g = *pref;
    g.backend = PORTATTN_BACKEND_CUDA_GENERIC, g.workspace = NULL, g.workspace_size = 0;
    if (portattn_forward(&g, NULL) || dm_sync(DM_CUDA) || dm_download(DM_CUDA, m->ho, m->o_ref, m->no * 2)) {
        printf("     (cuda-generic on the same data failed: %s)\n", portattn_last_error());
        return;
    }
    printf("     cuda-generic on the same data: rel-L2 %.2e against the CPU reference\n", ref_error(s, pref, m, r));
}

static int alloc_all(const scen *s, bufs *m)
{
    memset(m, 0, sizeof *m);
    m->nq = m->no = (size_t)(s->b * s->sq * s->hq * s->d), m->nk = (size_t)(s->b * s->sk * s->hkv * s->d);
    m->q = dm_alloc(DM_CUDA, m->nq * 2), m->o = dm_alloc(DM_CUDA, m->no * 2), m->o_ref = dm_alloc(DM_CUDA, m->no * 2);
    m->k = dm_alloc(DM_CUDA, m->nk * 2), m->v = dm_alloc(DM_CUDA, m->nk * 2);
    m->used = dm_alloc(DM_CUDA, 64), m->cu = dm_alloc(DM_CUDA, 64);
    m->hq = malloc(m->nq * 2), m->hk = malloc(m->nk * 2), m->hv = malloc(m->nk * 2);
    m->ho = malloc(m->no * 2), m->href = malloc(m->no * 2);
    return m->q && m->o && m->o_ref && m->k && m->v && m->used && m->cu && m->hq && m->hk && m->hv && m->ho && m->href;
}

static void free_all(bufs *m)
{
    void *dev[] = {m->q, m->k, m->v, m->o, m->o_ref, m->ws, m->used, m->cu};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) dm_free(DM_CUDA, dev[i]);
    free(m->hq), free(m->hk), free(m->hv), free(m->ho), free(m->href);
}

/* 0 pass, 1 fail, 77 the backend declines the call. */
static int run(const scen *s, portattn_backend_t be, uint64_t seed)
{
    bufs m;
    int rc = 1;
    cudaStream_t st = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    uint64_t rng = seed;
    if (!alloc_all(s, &m)) { printf("FAIL %s: allocation\n", s->name); goto done; }
    if (fill(m.q, m.hq, m.nq, &rng) || fill(m.k, m.hk, m.nk, &rng) || fill(m.v, m.hv, m.nk, &rng) ||
        new_lengths(s, &m, 0) || dm_sync(DM_CUDA)) {
        printf("FAIL %s: upload\n", s->name);
        goto done;
    }
    portattn_fwd_params_t p = make_call(s, &m, be);
    portattn_selection_t sel;
    portattn_status_t ps = portattn_forward_query(&p, &sel);
    if (ps == PORTATTN_ERROR_NOT_SUPPORTED) {
        printf("n/a  %-16s %s\n", s->name, portattn_last_error());
        rc = 77;
        goto done;
    }
    size_t ws = 0;
    if (ps || portattn_forward_workspace_size(&p, &ws)) { printf("FAIL %s: %s\n", s->name, portattn_last_error()); goto done; }
    if (ws && !(m.ws = dm_alloc(DM_CUDA, ws))) { printf("FAIL %s: workspace allocation\n", s->name); goto done; }
    p.workspace = m.ws, p.workspace_size = ws;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) { printf("FAIL %s: stream\n", s->name); goto done; }

    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
    ps = e == cudaSuccess ? portattn_forward(&p, st) : PORTATTN_ERROR_DEVICE;
    cudaError_t e2 = cudaStreamEndCapture(st, &graph);
    if (e || ps || e2 || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        printf("FAIL %-16s capture: %s / %s: %s\n", s->name, cudaGetErrorString(e ? e : e2), portattn_status_string(ps),
               ps ? portattn_last_error() : "");
        goto done;
    }
    portattn_fwd_params_t pref = p;
    pref.o.data = m.o_ref;
    double worst = 0;
    for (int r = 0; r < REPLAYS; r++) {
        /* New data and lengths in the captured buffers, then the graph and an uncaptured call. */
        /* The sync: a copy from pageable memory may return before its DMA lands, and the capture
         * stream is non-blocking, so nothing else orders it after the copies. */
        if (r && (fill(m.q, m.hq, m.nq, &rng) || fill(m.k, m.hk, m.nk, &rng) || fill(m.v, m.hv, m.nk, &rng) ||
                  new_lengths(s, &m, r) || dm_sync(DM_CUDA))) {
            printf("FAIL %s: upload\n", s->name);
            goto done;
        }
        if (cudaGraphLaunch(exec, st) != cudaSuccess || cudaStreamSynchronize(st) != cudaSuccess ||
            portattn_forward(&pref, st) || cudaStreamSynchronize(st) != cudaSuccess) {
            printf("FAIL %s: replay %d: %s\n", s->name, r, portattn_last_error());
            goto done;
        }
        if (dm_download(DM_CUDA, m.ho, m.o, m.no * 2) || dm_download(DM_CUDA, m.href, m.o_ref, m.no * 2)) goto done;
        if (memcmp(m.ho, m.href, m.no * 2)) {
            printf("FAIL %-16s replay %d differs from the uncaptured call\n", s->name, r);
            goto done;
        }
        double err = ref_error(s, &p, &m, r);
        worst = err > worst ? err : worst;
        if (!(err <= 2e-2)) {
            printf("FAIL %-16s replay %d: rel-L2 %.2e against the CPU reference\n", s->name, r, err);
            blame(s, &pref, &m, r);
            goto done;
        }
    }
    printf("ok   %-16s %s, %d replays with new data%s bitwise equal to uncaptured calls, rel-L2 <= %.2e\n", s->name,
           sel.kernel, REPLAYS, s->decode ? " and seqused_k," : s->varlen ? " and cu_seqlens," : ",", worst);
    rc = 0;
done:
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (st) cudaStreamDestroy(st);
    (void)cudaGetLastError();
    free_all(&m);
    return rc;
}

int main(int argc, char **argv)
{
    portattn_backend_t be;
    const int rc = gpu_test_backend(argc, argv, &be);
    if (rc) return rc;
    const scen cases[] = {
        {"decode_seqused", 4, 1, 512, 8, 2, 128, 0, 1, 0},
        {"prefill_causal", 2, 256, 256, 4, 4, 64, 1, 0, 0},
        {"prefill_d128", 2, 200, 300, 8, 2, 128, 1, 0, 0},
        {"varlen_cu", 1, 200, 200, 4, 4, 128, 1, 0, 1},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    uint64_t seed = test_seed();
    int failed = 0, declined = 0;
    for (int i = 0; i < n; i++) {
        int r = run(&cases[i], be, seed + (uint64_t)i);
        failed += r == 1, declined += r == 77;
    }
    printf("%d passed, %d failed, %d skipped\n", n - failed - declined, failed, declined);
    if (declined == n) printf("FAIL: %s declined every scenario\n", argv[1]);
    return failed || declined == n;
}
