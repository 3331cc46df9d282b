/* Several host threads calling portattn_forward, then portattn_backward (deterministic; the GQA jobs'
 * dK/dV sum over query heads) where the backend has a backward pass, at once give the same bits as
 * the same calls made one after another, and repeated runs are bitwise identical (determinism). Each
 * thread has its own buffers and its own problem, and sees only its own last-error messages, forward
 * and backward. test_concurrency <backend>: exit 77 when the backend is absent. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"

enum { THREADS = 6, REPS = 3 };

typedef struct job {
    portattn_backend_t backend;
    dm_kind kind;
    int id;
    int64_t sq, sk, h, hkv, d; /* h query heads onto hkv KV heads */
    void *q, *k, *v, *o; /* memory of `kind` */
    float *lse;
    void *dout, *dq, *dk, *dv; /* the backward's (when it runs) */
    int bwd;                   /* the backward runs after the forward */
    int in_bwd;                /* status and err are the backward's */
    void *ws;             /* split-KV workspace (decode jobs that pass one) */
    int declined;         /* the backend does not take this shape (e.g. cuda-sm90 and decode): skipped */
    size_t ws_bytes;
    size_t bytes, kv_bytes; /* O (and Q), K (and V) */
    portattn_status_t status;
    char err[256];
    int msg_errors;       /* calls whose last-error message was not this thread's own */
} job;

/* The backward of forward call p of job j: its problem, O and LSE, dO, and j's gradients. */
static void bwd_params_of(const portattn_fwd_params_t *p, const job *j, portattn_bwd_params_t *b)
{
    portattn_bwd_params_init(b);
    b->dtype = p->dtype, b->backend = p->backend, b->batch = p->batch, b->seqlen_q = p->seqlen_q;
    b->seqlen_k = p->seqlen_k, b->heads_q = p->heads_q, b->heads_kv = p->heads_kv;
    b->head_dim_qk = p->head_dim_qk, b->head_dim_v = p->head_dim_v;
    b->q = p->q, b->k = p->k, b->v = p->v, b->o = p->o, b->lse = p->lse;
    memcpy(b->lse_stride, p->lse_stride, sizeof b->lse_stride);
    b->causal = p->causal, b->window_left = p->window_left, b->window_right = p->window_right;
    b->dout = portattn_tensor_bshd(j->dout, j->sq, j->h, j->d), b->dq = portattn_tensor_bshd(j->dq, j->sq, j->h, j->d);
    b->dk = portattn_tensor_bshd(j->dk, j->sk, j->hkv, j->d), b->dv = portattn_tensor_bshd(j->dv, j->sk, j->hkv, j->d);
    b->deterministic = 1;
}

static void run_job(job *j)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_BF16, p.backend = j->backend;
    p.batch = 1, p.seqlen_q = j->sq, p.seqlen_k = j->sk, p.heads_q = j->h, p.heads_kv = j->hkv;
    p.head_dim_qk = p.head_dim_v = j->d;
    p.q = portattn_tensor_bshd(j->q, j->sq, j->h, j->d), p.k = portattn_tensor_bshd(j->k, j->sk, j->hkv, j->d);
    p.v = portattn_tensor_bshd(j->v, j->sk, j->hkv, j->d), p.o = portattn_tensor_bshd(j->o, j->sq, j->h, j->d);
    p.lse = j->lse, p.lse_stride[0] = j->h * j->sq, p.lse_stride[1] = j->sq, p.lse_stride[2] = 1;
    p.causal = j->id & 1, p.window_left = j->id % 3 == 0 ? 37 : -1;
    p.workspace = j->ws, p.workspace_size = j->ws_bytes;
    j->status = portattn_forward(&p, NULL);
    j->in_bwd = !j->status && j->bwd;
    if (j->in_bwd) {
        portattn_bwd_params_t b;
        bwd_params_of(&p, j, &b);
        j->status = portattn_backward(&b, NULL);
    }
    if (j->status) snprintf(j->err, sizeof j->err, "%s", portattn_last_error());
    else if (dm_sync(j->kind)) j->status = PORTATTN_ERROR_DEVICE;
}

/* Each thread's last-error message is its own: a refused call with a value only this thread uses,
 * a yield so that the others' calls interleave, then the message must still name that value; and a
 * call that succeeded must leave "" while the others fail. Counted in j->msg_errors. */
static void check_messages(job *j)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    for (int i = 0; i < 200; i++) {
        char want[64];
        p.batch = -(int64_t)(j->id * 100000 + i + 1);
        snprintf(want, sizeof want, "batch = %lld is negative", (long long)p.batch);
        const portattn_status_t st = portattn_forward(&p, NULL);
        sched_yield();
        if (st != PORTATTN_ERROR_INVALID_ARGUMENT || !strstr(portattn_last_error(), want)) j->msg_errors++;
        if (!j->bwd) continue;
        portattn_bwd_params_t b; /* the backward's refusals are this thread's own too */
        portattn_bwd_params_init(&b);
        b.batch = p.batch - 50000;
        snprintf(want, sizeof want, "batch = %lld is negative", (long long)b.batch);
        const portattn_status_t sb = portattn_backward(&b, NULL);
        sched_yield();
        if (sb != PORTATTN_ERROR_INVALID_ARGUMENT || !strstr(portattn_last_error(), want)) j->msg_errors++;
    }
    if (!j->declined && !j->status && portattn_last_error()[0] == '\0') { /* run_job's own call succeeded */
        p.batch = 0; /* nothing to compute: success */
        for (int i = 0; i < 200; i++) {
            const portattn_status_t st = portattn_forward(&p, NULL);
            sched_yield();
            if (st || portattn_last_error()[0] != '\0') j->msg_errors++;
        }
    }
}

static void *thread_main(void *arg)
{
    job *j = arg;
    if (!j->declined) run_job(j);
    check_messages(j);
    return NULL;
}

/* Bytes of what a job writes: O, LSE, and with the backward dQ, dK, dV. */
static size_t result_bytes(const job *j)
{
    return j->bytes + (size_t)(j->h * j->sq) * 4 + (j->bwd ? j->bytes + 2 * j->kv_bytes : 0);
}

/* What a job wrote, downloaded to the host in result_bytes() order. */
static int fetch(const job *j, unsigned char *out)
{
    size_t lse_bytes = (size_t)(j->h * j->sq) * 4;
    if (dm_download(j->kind, out, j->o, j->bytes) || dm_download(j->kind, out + j->bytes, j->lse, lse_bytes)) return 1;
    out += j->bytes + lse_bytes;
    return j->bwd && (dm_download(j->kind, out, j->dq, j->bytes) || dm_download(j->kind, out + j->bytes, j->dk, j->kv_bytes) ||
                      dm_download(j->kind, out + j->bytes + j->kv_bytes, j->dv, j->kv_bytes));
}

/* Poisons what a job writes (every byte 0xFF: NaN in bf16), so that a run that writes nothing fails. */
static int poison(const job *j)
{
    const size_t n = j->bytes > j->kv_bytes ? j->bytes : j->kv_bytes;
    unsigned char *ff = malloc(n);
    int bad = !ff;
    if (!bad) {
        memset(ff, 0xFF, n);
        bad = dm_upload(j->kind, j->o, ff, j->bytes) ||
              (j->bwd && (dm_upload(j->kind, j->dq, ff, j->bytes) || dm_upload(j->kind, j->dk, ff, j->kv_bytes) ||
                          dm_upload(j->kind, j->dv, ff, j->kv_bytes)));
    }
    free(ff);
    return bad;
}

int main(int argc, char **argv)
{
    int ok;
    portattn_backend_t be = portattn_backend_from_name(argc > 1 ? argv[1] : "cpu", &ok);
    portattn_backend_info_t info;
    if (!ok || be == PORTATTN_BACKEND_AUTO || portattn_backend_get_info(be, &info)) return 2;
    const int present = test_backend_present(be);
    if (present) return present;
    uint64_t rng = test_seed();
    job jobs[THREADS];
    unsigned char *serial[THREADS], *got = NULL;
    int failures = 0, checks = 0;
    for (int t = 0; t < THREADS; t++) {
        job *j = &jobs[t];
        memset(j, 0, sizeof *j);
        j->backend = be, j->kind = dm_kind_of(be), j->id = t;
        /* jobs 0-3: prefill shapes; 4-5: decode shapes (few queries, long keys: split-KV on GPUs, job 5
         * with its own workspace, job 4 with the library's per-call allocation) */
        j->sq = t < 4 ? 150 + 37 * t : t == 4 ? 1 : 4, j->sk = t < 4 ? j->sq : 2500 + 700 * t;
        j->h = 2 + t % 3, j->d = t % 2 ? 64 : 128;
        j->hkv = t == 2 ? 2 : t == 3 || t == 5 ? 1 : j->h; /* GQA: the backward sums dK/dV over query heads */
        j->bytes = (size_t)(j->sq * j->h * j->d) * 2, j->kv_bytes = (size_t)(j->sk * j->hkv * j->d) * 2;
        uint16_t *host = malloc(j->kv_bytes > j->bytes ? j->kv_bytes : j->bytes);
        void **bufs[4] = {&j->q, &j->k, &j->v, &j->dout};
        for (int b = 0; b < 4; b++) {
            const size_t n = b == 1 || b == 2 ? j->kv_bytes : j->bytes;
            for (size_t e = 0; e < n / 2; e++) host[e] = pa_f32_to_bf16((float)urand(&rng));
            *bufs[b] = dm_alloc(j->kind, n);
            if (!*bufs[b] || dm_upload(j->kind, *bufs[b], host, n)) return printf("allocation failed\n"), 1;
        }
        free(host);
        j->o = dm_alloc(j->kind, j->bytes), j->lse = dm_alloc(j->kind, (size_t)(j->h * j->sq) * 4);
        j->dq = dm_alloc(j->kind, j->bytes), j->dk = dm_alloc(j->kind, j->kv_bytes), j->dv = dm_alloc(j->kind, j->kv_bytes);
        j->bwd = 1;
        serial[t] = malloc(result_bytes(j));
        if (!j->o || !j->lse || !j->dq || !j->dk || !j->dv || !serial[t]) return printf("allocation failed\n"), 1;
        if (t == 5) { /* size the workspace the way a caller would */
            portattn_fwd_params_t p;
            portattn_fwd_params_init(&p);
            p.dtype = PORTATTN_DTYPE_BF16, p.backend = be, p.batch = 1, p.seqlen_q = j->sq, p.seqlen_k = j->sk;
            p.heads_q = j->h, p.heads_kv = j->hkv, p.head_dim_qk = p.head_dim_v = j->d, p.causal = 1;
            p.q = portattn_tensor_bshd(j->q, j->sq, j->h, j->d), p.k = portattn_tensor_bshd(j->k, j->sk, j->hkv, j->d);
            p.v = portattn_tensor_bshd(j->v, j->sk, j->hkv, j->d), p.o = portattn_tensor_bshd(j->o, j->sq, j->h, j->d);
            portattn_status_t st = portattn_forward_workspace_size(&p, &j->ws_bytes);
            if (st && st != PORTATTN_ERROR_NOT_SUPPORTED)
                return printf("FAIL workspace size: %s\n", portattn_last_error()), 1;
            if (j->ws_bytes && !(j->ws = dm_alloc(j->kind, j->ws_bytes))) return printf("allocation failed\n"), 1;
            printf("job 5: workspace %zu bytes\n", j->ws_bytes);
        }
        if (poison(j)) return printf("upload failed\n"), 1;
        run_job(j); /* the serial reference */
        if (j->in_bwd && j->status == PORTATTN_ERROR_NOT_SUPPORTED) { /* the forward ran: keep it alone */
            printf("n/a  job %d backward: %s\n", t, j->err);
            if (t < 4 && !strstr(j->err, "has no backward pass")) /* a backward pass must take prefill shapes */
                failures++, printf("FAIL job %d: the backend has a backward pass but declined a prefill shape\n", t);
            j->bwd = 0;
            run_job(j);
        }
        if (j->status == PORTATTN_ERROR_NOT_SUPPORTED) {
            j->declined = 1;
            printf("n/a  job %d (Sq %lld, Sk %lld, d %lld): %s\n", t, (long long)j->sq, (long long)j->sk,
                   (long long)j->d, j->err);
            continue;
        }
        checks++;
        if (j->status || fetch(j, serial[t])) {
            failures++;
            printf("FAIL serial job %d: %s %s\n", t, portattn_status_string(j->status), j->err);
        }
    }
    size_t most = 0;
    for (int t = 0; t < THREADS; t++)
        if (result_bytes(&jobs[t]) > most) most = result_bytes(&jobs[t]);
    got = malloc(most);
    if (!got) return printf("allocation failed\n"), 1;
    for (int rep = 0; rep < REPS; rep++) {
        pthread_t tid[THREADS];
        for (int t = 0; t < THREADS; t++)
            if (!jobs[t].declined && poison(&jobs[t])) return printf("upload failed\n"), 1;
        for (int t = 0; t < THREADS; t++) pthread_create(&tid[t], NULL, thread_main, &jobs[t]);
        for (int t = 0; t < THREADS; t++) pthread_join(tid[t], NULL);
        for (int t = 0; t < THREADS; t++) {
            const job *j = &jobs[t];
            if (j->declined) continue;
            checks++;
            int same = !j->status && !fetch(j, got) && !memcmp(got, serial[t], result_bytes(j));
            if (!same) {
                failures++;
                printf("FAIL rep %d job %d: %s\n", rep, t, j->status ? j->err : "bits differ from the serial run");
            }
        }
        for (int t = 0; t < THREADS; t++) {
            checks++;
            if (jobs[t].msg_errors)
                failures++, printf("FAIL rep %d thread %d: %d of its last-error messages were not its own\n", rep, t,
                                   jobs[t].msg_errors);
            jobs[t].msg_errors = 0;
        }
    }
    int ran = 0, bwd = 0;
    for (int t = 0; t < THREADS; t++) ran += !jobs[t].declined, bwd += !jobs[t].declined && jobs[t].bwd;
    if (ran < 4) failures++, printf("FAIL only %d of %d jobs ran (the 4 prefill shapes must)\n", ran, THREADS);
    printf("%s: %d threads (%d declined, %d with the backward) x %d reps, results bitwise equal to the serial run: %s\n",
           info.name, THREADS, THREADS - ran, bwd, REPS, failures ? "NO" : "yes");
    for (int t = 0; t < THREADS; t++) {
        dm_free(jobs[t].kind, jobs[t].q), dm_free(jobs[t].kind, jobs[t].k), dm_free(jobs[t].kind, jobs[t].v);
        dm_free(jobs[t].kind, jobs[t].o), dm_free(jobs[t].kind, jobs[t].lse), dm_free(jobs[t].kind, jobs[t].ws);
        dm_free(jobs[t].kind, jobs[t].dout), dm_free(jobs[t].kind, jobs[t].dq), dm_free(jobs[t].kind, jobs[t].dk);
        dm_free(jobs[t].kind, jobs[t].dv);
        free(serial[t]);
    }
    free(got);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
