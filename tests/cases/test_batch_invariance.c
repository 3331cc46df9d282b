/* Batch invariance: with num_splits fixed, a sequence's output (O and LSE) is bitwise the same
 * whatever else is in the batch: alone, or at any position among other sequences of other cache and
 * query lengths. Three call forms over one paged KV cache: per-sequence queries (decode, 2 tokens
 * each), packed queries (serving: cu_seqlens_q, chunks and decodes mixed) with a target of 5 query
 * tokens, and the same with a 24-token target chunk and max_seqlen_q = 40 (past the decode kernels:
 * the prefill kernels over a cache take it).
 * test_batch_invariance <backend>: a form the backend declines (NOT_SUPPORTED) is reported n/a; at
 * least one form must run. Exit 77 when the backend's hardware is absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"
#include "problem.h"

enum { HQ = 8, HKV = 2, D = 64, PAGE = 16, PPS = 16, CAP = PAGE * PPS, NPAGES = 96 };
enum { SQ_DECODE = 2, NQ_SERVE = 5, NQ_CHUNK = 24, MAXQ = 40, T_USED = 200, MAXB = 8, TRIALS = 6 };
enum form { DECODE, SERVING, CHUNK };
static const char *const form_name[] = {"decode", "serving", "chunk"};

typedef struct world {
    portattn_dtype_t dt;
    portattn_backend_t be;
    dm_kind kind;
    void *k, *v;        /* the page pool, in the backend's memory */
    void *qt;           /* host: the target sequence's query rows [NQ_CHUNK, HQ, D] */
    int32_t bt_t[PPS];  /* the target's page table row */
} world;

static int pick(uint64_t *r, int lo, int hi) { return lo + (int)((urand(r) + 1) * 0.5 * (hi - lo + 1)) % (hi - lo + 1); }

/* Outputs of the target sequence: O rows [nq, HQ, D] and LSE [HQ, nq]. */
typedef struct target_out {
    unsigned char o[NQ_CHUNK * HQ * D * 4];
    float lse[HQ * NQ_CHUNK];
} target_out;

/* One call: n sequences, the target at `pos`, the others random (cache lengths 0..CAP, random pages,
 * serving: 0 to MAXQ query tokens). Fills *t from the target's rows. */
static portattn_status_t run_batch(const world *w, enum form f, int n, int pos, int splits, uint64_t *rng, target_out *t)
{
    static const int other_nq[] = {0, 1, 1, 17, MAXQ};
    const int64_t es = pa_dtype_size(w->dt), row = HQ * D;
    const int serving = f != DECODE, nq_t = f == CHUNK ? NQ_CHUNK : f == SERVING ? NQ_SERVE : SQ_DECODE;
    int32_t used[MAXB], bt[MAXB * PPS], cu[MAXB + 1] = {0};
    for (int b = 0; b < n; b++) {
        const int me = b == pos;
        used[b] = me ? T_USED : pick(rng, 0, CAP);
        for (int g = 0; g < PPS; g++) bt[b * PPS + g] = me ? w->bt_t[g] : pick(rng, 0, NPAGES - 1);
        cu[b + 1] = cu[b] + (me ? nq_t : serving ? other_nq[pick(rng, 0, 4)] : SQ_DECODE);
    }
    const int64_t total = cu[n], q0 = cu[pos];
    const size_t qbytes = (size_t)(total * row * es), lbytes = sizeof(float) * (size_t)(total * HQ);
    unsigned char *hq = malloc(qbytes + 1), *ho = malloc(qbytes + 1);
    float *hl = malloc(lbytes + 4);
    void *dq = dm_alloc(w->kind, qbytes + 1), *dout = dm_alloc(w->kind, qbytes + 1), *dl = dm_alloc(w->kind, lbytes + 4);
    void *dused = dm_alloc(w->kind, sizeof used), *dbt = dm_alloc(w->kind, sizeof bt), *dcu = dm_alloc(w->kind, sizeof cu);
    void *ws = NULL;
    portattn_status_t st = PORTATTN_ERROR_OUT_OF_MEMORY;
    if (!hq || !ho || !hl || !dq || !dout || !dl || !dused || !dbt || !dcu) goto out;
    for (int64_t i = 0; i < total * row; i++) pa_store_elem(w->dt, hq, i, (float)urand(rng));
    memcpy(hq + q0 * row * es, w->qt, (size_t)(nq_t * row * es));
    static unsigned calls;
    const int poison = 0xF0 + (int)(calls++ % 15); /* each call its own: unwritten rows differ between calls */
    memset(ho, poison, qbytes), memset(hl, poison, lbytes);
    st = PORTATTN_ERROR_DEVICE;
    if (dm_upload(w->kind, dq, hq, qbytes) || dm_upload(w->kind, dout, ho, qbytes) || dm_upload(w->kind, dl, hl, lbytes) ||
        dm_upload(w->kind, dused, used, sizeof used) || dm_upload(w->kind, dbt, bt, sizeof bt) ||
        dm_upload(w->kind, dcu, cu, sizeof cu))
        goto out;

    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = w->dt, p.backend = w->be, p.batch = n, p.seqlen_k = CAP;
    p.heads_q = HQ, p.heads_kv = HKV, p.head_dim_qk = p.head_dim_v = D, p.causal = 1, p.num_splits = splits;
    p.k = portattn_tensor_bshd(w->k, PAGE, HKV, D), p.v = portattn_tensor_bshd(w->v, PAGE, HKV, D);
    p.seqused_k = dused, p.block_table = dbt, p.block_table_stride = PPS, p.page_size = PAGE, p.num_pages = NPAGES;
    p.lse = dl;
    if (serving) {
        p.seqlen_q = total, p.cu_seqlens_q = dcu, p.max_seqlen_q = f == CHUNK ? (total < MAXQ ? total : MAXQ) : 0;
        p.q = portattn_tensor_bshd(dq, total, HQ, D), p.o = portattn_tensor_bshd(dout, total, HQ, D);
        p.lse_stride[1] = total, p.lse_stride[2] = 1;
    } else {
        p.seqlen_q = SQ_DECODE;
        p.q = portattn_tensor_bshd(dq, SQ_DECODE, HQ, D), p.o = portattn_tensor_bshd(dout, SQ_DECODE, HQ, D);
        p.lse_stride[0] = HQ * SQ_DECODE, p.lse_stride[1] = SQ_DECODE, p.lse_stride[2] = 1;
    }
    size_t ws_bytes = 0; /* a workspace from the query, as a CUDA-graph caller passes one */
    if ((st = portattn_forward_workspace_size(&p, &ws_bytes))) goto out;
    if (ws_bytes && !(ws = dm_alloc(w->kind, ws_bytes))) {
        st = PORTATTN_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    p.workspace = ws, p.workspace_size = ws ? ws_bytes : 0;
    if ((st = portattn_forward(&p, NULL))) goto out;
    if (dm_sync(w->kind) || dm_download(w->kind, ho, dout, qbytes) || dm_download(w->kind, hl, dl, lbytes)) {
        st = PORTATTN_ERROR_DEVICE;
        goto out;
    }
    memset(t, 0, sizeof *t);
    memcpy(t->o, ho + q0 * row * es, (size_t)(nq_t * row * es));
    for (int h = 0; h < HQ; h++)
        for (int i = 0; i < nq_t; i++)
            t->lse[h * nq_t + i] = hl[serving ? h * total + q0 + i : (pos * HQ + h) * SQ_DECODE + i];
out:
    if (st && st != PORTATTN_ERROR_NOT_SUPPORTED) printf("FAIL call: %s: %s\n", portattn_status_string(st), portattn_last_error());
    free(hq), free(ho), free(hl);
    dm_free(w->kind, dq), dm_free(w->kind, dout), dm_free(w->kind, dl), dm_free(w->kind, dused);
    dm_free(w->kind, dbt), dm_free(w->kind, dcu), dm_free(w->kind, ws);
    return st;
}

/* One form, dtype and split count: the target alone, then TRIALS batches around it. -1 declined,
 * else the number of batches whose target output differs from the lone one (or failed). */
static int check_form(const world *w, enum form f, int splits, uint64_t *rng)
{
    static target_out alone, within;
    portattn_status_t st = run_batch(w, f, 1, 0, splits, rng, &alone);
    if (st == PORTATTN_ERROR_NOT_SUPPORTED) {
        printf("n/a  %-8s %-4s splits=%d: %s\n", form_name[f], pa_dtype_name(w->dt), splits,
               portattn_last_error());
        return -1;
    }
    if (st) return TRIALS;
    int bad = 0;
    for (int t = 0; t < TRIALS; t++) {
        const int n = pick(rng, 2, MAXB), pos = pick(rng, 0, n - 1);
        st = run_batch(w, f, n, pos, splits, rng, &within);
        const int same = !st && !memcmp(&alone, &within, sizeof alone);
        if (!same) printf("FAIL %s %s splits=%d: the target at %d of %d differs from its lone call%s\n",
                          form_name[f], pa_dtype_name(w->dt), splits, pos, n, st ? " (call failed)" : "");
        bad += !same;
    }
    if (!bad) printf("ok   %-8s %-4s splits=%d: %d batches bitwise equal to the lone call\n", form_name[f],
                     pa_dtype_name(w->dt), splits, TRIALS);
    return bad;
}

int main(int argc, char **argv)
{
    int ok = 0;
    portattn_backend_t be = argc > 1 ? portattn_backend_from_name(argv[1], &ok) : PORTATTN_BACKEND_AUTO;
    if (!ok || be == PORTATTN_BACKEND_AUTO) {
        fprintf(stderr, "usage: %s <backend>\n", argv[0]);
        return 2;
    }
    const int present = test_backend_present(be);
    if (present) return present;
    uint64_t rng = test_seed();
    const portattn_dtype_t dts[] = {PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16};
    int ran = 0, failed = 0;
    for (int d = 0; d < 2; d++) {
        world w = {dts[d], be, dm_kind_of(be), NULL, NULL, NULL, {0}};
        const int64_t es = pa_dtype_size(w.dt), pool = (int64_t)NPAGES * PAGE * HKV * D;
        void *hk = malloc((size_t)(pool * es)), *hv = malloc((size_t)(pool * es));
        w.qt = malloc((size_t)(NQ_CHUNK * HQ * D * es));
        w.k = dm_alloc(w.kind, (size_t)(pool * es)), w.v = dm_alloc(w.kind, (size_t)(pool * es));
        if (!hk || !hv || !w.qt || !w.k || !w.v) {
            printf("FAIL out of memory\n");
            return 1;
        }
        for (int64_t i = 0; i < pool; i++) pa_store_elem(w.dt, hk, i, (float)urand(&rng)), pa_store_elem(w.dt, hv, i, (float)urand(&rng));
        for (int64_t i = 0; i < NQ_CHUNK * HQ * D; i++) pa_store_elem(w.dt, w.qt, i, (float)urand(&rng));
        for (int g = 0; g < PPS; g++) w.bt_t[g] = (int32_t)pick(&rng, 0, NPAGES - 1);
        if (dm_upload(w.kind, w.k, hk, (size_t)(pool * es)) || dm_upload(w.kind, w.v, hv, (size_t)(pool * es))) {
            printf("FAIL upload\n");
            return 1;
        }
        for (int f = DECODE; f <= CHUNK; f++)
            for (int splits = 1; splits <= 3; splits += 2) {
                const int bad = check_form(&w, (enum form)f, splits, &rng);
                ran += bad >= 0, failed += bad > 0;
            }
        dm_free(w.kind, w.k), dm_free(w.kind, w.v);
        free(hk), free(hv), free(w.qt);
    }
    printf("%d forms ran, %d failed\n", ran, failed);
    return failed || !ran ? 1 : 0;
}
