#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devmem.h"
#include "half.h"
#include "problem.h"

#ifdef PORTATTN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define POISON 0xFF /* every byte: a NaN in f16, bf16 and f32 */

double urand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    *s = x;
    return (double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

uint64_t test_seed(void)
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    fflush(stdout); /* printed even if the run then crashes */
    return seed ? seed : 1;
}

float round_to(portattn_dtype_t t, float x)
{
    uint16_t h;
    if (t == PORTATTN_DTYPE_F16) return h = pa_f32_to_f16(x), pa_f16_to_f32(h);
    if (t == PORTATTN_DTYPE_BF16) return h = pa_f32_to_bf16(x), pa_bf16_to_f32(h);
    return x;
}

tens make_tens(enum layout l, int64_t nb, int64_t s, int64_t h, int64_t d)
{
    tens t = {{nb, s, h, d}, {0}, 0};
    switch (l) {
    case LAYOUT_BHSD: t.stride[3] = 1, t.stride[2] = s * d, t.stride[1] = d, t.stride[0] = h * s * d; break;
    case LAYOUT_PADDED: /* every level padded, rows stay 16-byte aligned for 2-byte types */
        t.stride[3] = 1, t.stride[2] = d + 8, t.stride[1] = h * (d + 8) + 16, t.stride[0] = s * t.stride[1] + 32;
        break;
    case LAYOUT_STRIDED_D: t.stride[3] = 2, t.stride[2] = 2 * d, t.stride[1] = 2 * d * h, t.stride[0] = 2 * d * h * s; break;
    default: t.stride[3] = 1, t.stride[2] = d, t.stride[1] = h * d, t.stride[0] = s * h * d; break;
    }
    t.elems = 1;
    for (int i = 0; i < 4; i++) t.elems += (t.dim[i] - 1) * t.stride[i];
    for (int i = 0; i < 4; i++)
        if (t.dim[i] == 0) t.elems = 0;
    return t;
}

int64_t off(const tens *t, int64_t b, int64_t s, int64_t h, int64_t d)
{
    return b * t->stride[0] + s * t->stride[1] + h * t->stride[2] + d * t->stride[3];
}

/* Attention-sink inputs: in each sequence of n keys, keys i n / sinks (i < sinks) score -0.5 i nats
 * and every other key 8-12 nats (uniform) less, plus the noise of the other head-dim elements (about
 * 0.3 nats): element 0 of every query is 4 and of every key its score / (4 scale). V is in [0.5, 1.5),
 * so the tail's weight moves every output; a kernel that drops weights this small (gfx90a's MFMA
 * flushes f16 values below 2^-14, 9.7 nats under the max, to zero) is off by the tail's share of the
 * row, a few percent, instead of an error that random V averages away. */
static void shape_sinks(const tcase *c, portattn_dtype_t dt, void *hq, void *hk, void *hv, const tens *tq,
                        const tens *tk, const tens *tv, const int32_t *cuk, uint64_t *rng)
{
    const double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->dqk);
    for (int64_t b = 0; b < tq->dim[0]; b++)
        for (int64_t s = 0; s < tq->dim[1]; s++)
            for (int64_t h = 0; h < c->hq; h++) pa_store_elem(dt, hq, off(tq, b, s, h, 0), 4.0f);
    for (int64_t seq = 0; seq < c->b; seq++) {
        const int64_t b = c->varlen ? 0 : seq, k0 = c->varlen ? cuk[seq] : 0;
        const int64_t n = c->varlen ? cuk[seq + 1] - cuk[seq] : c->sk;
        for (int64_t j = 0; j < n; j++) {
            double score = -(10.0 + 2.0 * urand(rng));
            for (int64_t i = 0; i < c->sinks; i++)
                if (j == i * n / c->sinks) score = -0.5 * (double)i;
            for (int64_t h = 0; h < c->hkv; h++) {
                pa_store_elem(dt, hk, off(tk, b, k0 + j, h, 0), (float)(score / (4.0 * scale)));
                for (int64_t d = 0; d < c->dv; d++) pa_store_elem(dt, hv, off(tv, b, k0 + j, h, d), (float)(1.0 + 0.5 * urand(rng)));
            }
        }
    }
}

/* The naive same-precision baseline (PyTorch-style eager attention in the input dtype): scores
 * rounded to the dtype, softmax in fp32 rounded to the dtype, P.V accumulated in fp32 and rounded.
 * Written independently of the library's mask code on purpose. */
static void naive_lowp(portattn_dtype_t dt, const tcase *c, const float *q, const float *k, const float *v,
                       float *o, int64_t sq, int64_t sk, int64_t q0, int64_t k0, int64_t h, int64_t b_off_q,
                       int64_t b_off_k, float scale, float *s, float *qs, double *smax)
{
    int64_t hk = h / (c->hq / c->hkv), wl = c->wl, wr = c->causal ? 0 : c->wr;
    for (int64_t i = 0; i < sq; i++) {
        const float *qi = q + ((b_off_q + q0 + i) * c->hq + h) * c->dqk;
        for (int64_t d = 0; d < c->dqk; d++) qs[d] = round_to(dt, qi[d] * scale);
        float mx = -INFINITY;
        for (int64_t j = 0; j < sk; j++) {
            int ok = (wl < 0 || j >= i + sk - sq - wl) && (wr < 0 || j <= i + sk - sq + wr);
            const float *kj = k + ((b_off_k + k0 + j) * c->hkv + hk) * c->dqk;
            float dot = 0;
            for (int64_t d = 0; d < c->dqk; d++) dot += qs[d] * kj[d];
            float x = round_to(dt, dot);
            if (c->softcap > 0) x = round_to(dt, c->softcap * tanhf(x / c->softcap));
            s[j] = ok ? x : -INFINITY;
            if (ok && fabs(x) > *smax) *smax = fabs(x);
            if (s[j] > mx) mx = s[j];
        }
        float sum = 0;
        for (int64_t j = 0; j < sk; j++) sum += s[j] = mx == -INFINITY ? 0 : expf(s[j] - mx);
        for (int64_t j = 0; j < sk; j++) s[j] = round_to(dt, sum > 0 ? s[j] / sum : 0);
        float *oi = o + ((b_off_q + q0 + i) * c->hq + h) * c->dv;
        for (int64_t d = 0; d < c->dv; d++) oi[d] = 0;
        for (int64_t j = 0; j < sk; j++) {
            const float *vj = v + ((b_off_k + k0 + j) * c->hkv + hk) * c->dv;
            for (int64_t d = 0; d < c->dv; d++) oi[d] += s[j] * vj[d];
        }
        for (int64_t d = 0; d < c->dv; d++) oi[d] = round_to(dt, oi[d]);
    }
}

run_result run_case(const tcase *c, portattn_dtype_t dt, portattn_backend_t backend, uint64_t seed)
{
    uint64_t rng = seed ^ ((uint64_t)dt << 40);
    for (const char *p = c->name; *p; p++) rng = rng * 1099511628211u ^ (uint64_t)*p;
    if (!rng) rng = 1;
    const int esz = dt == PORTATTN_DTYPE_F32 ? 4 : 2;
    const dm_kind kind = dm_kind_of(backend);
    run_result res = RUN_FAIL;
    char note[512] = "";

    /* Sequence lengths: varlen draws them, the first is the longest and some are empty. Serving
     * (packed queries over the cache): sequence 0 a chunk of sq tokens, then a decode (1 token, over
     * an empty cache), an idle sequence, and decodes and random chunks alternating. */
    const int serve = c->varlen && (c->page > 0 || c->used);
    int64_t B = c->b, nb = c->varlen ? 1 : B, nbk = c->varlen && !serve ? 1 : B; /* Q/O/LSE, K/V */
    int32_t *cuq = calloc((size_t)B + 1, 4), *cuk = calloc((size_t)B + 1, 4);
    for (int64_t b = 0; b < B; b++) {
        int64_t lq = c->sq, lk = c->sk;
        if (c->varlen && b > 0) {
            lq = (int64_t)((urand(&rng) + 1) * 0.5 * (double)(c->sq + 1)) % (c->sq + 1);
            lk = (int64_t)((urand(&rng) + 1) * 0.5 * (double)(c->sk + 1)) % (c->sk + 1);
            if (b == 1) lq = 0;  /* an empty query sequence */
            if (b == 2) lk = 0;  /* queries that see no key */
            if (serve) lq = b == 1 ? 1 : b == 2 ? 0 : b % 2 ? 1 : lq;
        }
        cuq[b + 1] = cuq[b] + (int32_t)lq;
        cuk[b + 1] = cuk[b] + (int32_t)lk;
    }
    const int64_t SQ = c->varlen ? cuq[B] : c->sq, SK = c->varlen && !serve ? cuk[B] : c->sk;

    /* KV cache cases: ragged cache lengths (the first full, then 0 and 1) and/or a page pool with
     * the pages of all sequences shuffled (two pages unused). */
    const int kvc = c->page > 0 || c->used || c->append;
    const int64_t A = c->append; /* appended tokens: the cache holds used[b] + A keys afterwards */
    const int64_t pps = c->page ? (SK + c->page - 1) / c->page : 0, npages = B * pps + 2;
    int32_t *used = calloc((size_t)B + 1, 4), *bt = calloc((size_t)(B * pps + 2), 4);
    for (int64_t b = 0; used && b < B; b++)
        used[b] = (int32_t)(!c->used || b == 0 ? SK - A : b == 1 ? 0 : b == 2 ? 1
                                     : (int64_t)((urand(&rng) + 1) * 0.5 * (double)(SK - A + 1)) % (SK - A + 1));
    for (int64_t g = 0; bt && g < npages - 2; g++) bt[g] = (int32_t)g;
    for (int64_t g = npages - 3; bt && g > 0; g--) { /* Fisher-Yates over the used pages */
        int64_t r = (int64_t)((urand(&rng) + 1) * 0.5 * (double)(g + 1)) % (g + 1);
        int32_t x = bt[g]; bt[g] = bt[r]; bt[r] = x;
    }
    for (int64_t g = 0; bt && g < npages - 2; g++) bt[g] += bt[g] >= 1; /* page 1 stays unused */
    for (int64_t b = 1; c->shared && bt && b < B; b += 2) bt[b * pps] = bt[0]; /* its own first page unused */

    tens tq = make_tens(c->layout, nb, SQ, c->hq, c->dqk), to = make_tens(c->layout, nb, SQ, c->hq, c->dv);
    tens tk = c->page ? make_tens(c->layout, npages, c->page, c->hkv, c->dqk) : make_tens(c->layout, nbk, SK, c->hkv, c->dqk);
    tens tv = c->page ? make_tens(c->layout, npages, c->page, c->hkv, c->dv) : make_tens(c->layout, nbk, SK, c->hkv, c->dv);
    /* LSE [B, Hq, Sq] (varlen: [Hq, total]); the padded layout pads its rows too. */
    int64_t lpad = c->layout == LAYOUT_PADDED ? 3 : 0;
    int64_t ls[3] = {c->hq * (SQ + lpad), SQ + lpad, 1};
    int64_t lse_elems = nb * ls[0] + 1;

    /* Host buffers in the dtype; junk in padding too, so a kernel that reads it is caught. */
    void *hq_ = malloc((size_t)(tq.elems * esz + 16)), *hk_ = malloc((size_t)(tk.elems * esz + 16));
    void *hv_ = malloc((size_t)(tv.elems * esz + 16)), *ho_ = malloc((size_t)(to.elems * esz + 16));
    float *hl = malloc((size_t)lse_elems * 4);
    /* Logical fp32 copies, contiguous BSHD: the oracle's input (exact: values are dtype values). */
    int64_t nq = nb * SQ * c->hq, nk = nbk * SK * c->hkv;
    float *fq = malloc((size_t)(nq * c->dqk + 1) * 4), *fk = malloc((size_t)(nk * c->dqk + 1) * 4);
    float *fv = malloc((size_t)(nk * c->dv + 1) * 4), *fo = malloc((size_t)(nq * c->dv + 1) * 4);
    float *fl = malloc((size_t)(nb * c->hq * SQ + 1) * 4), *no = malloc((size_t)(nq * c->dv + 1) * 4);
    float *sbuf = malloc((size_t)(SK + 1 + c->dqk) * 4);
    /* Appended tokens, contiguous [B, A, Hkv, D], and the cache as it must look afterwards. */
    const int64_t nkn = B * A * c->hkv * c->dqk, nvn = B * A * c->hkv * c->dv;
    void *hkn = malloc((size_t)(nkn * esz + 16)), *hvn = malloc((size_t)(nvn * esz + 16));
    void *wk = malloc((size_t)(tk.elems * esz + 16)), *wv = malloc((size_t)(tv.elems * esz + 16));
    void *dkn = dm_alloc(kind, (size_t)(nkn * esz + 16)), *dvn = dm_alloc(kind, (size_t)(nvn * esz + 16));
    void *dq = dm_alloc(kind, (size_t)tq.elems * esz), *dk = dm_alloc(kind, (size_t)tk.elems * esz);
    void *dv = dm_alloc(kind, (size_t)tv.elems * esz), *dout = dm_alloc(kind, (size_t)to.elems * esz);
    void *dl = dm_alloc(kind, (size_t)lse_elems * 4);
    void *dcq = dm_alloc(kind, (size_t)(B + 1) * 4), *dck = dm_alloc(kind, (size_t)(B + 1) * 4);
    void *dused = dm_alloc(kind, (size_t)(B + 1) * 4), *dbt = dm_alloc(kind, (size_t)(B * pps + 2) * 4);
    if (!hkn || !hvn || !wk || !wv || !dkn || !dvn || !used || !bt || !dused || !dbt || !cuq || !cuk || !hq_ || !hk_ || !hv_ || !ho_ || !hl || !fq || !fk || !fv || !fo || !fl || !no || !sbuf ||
        !dq || !dk || !dv || !dout || !dl || !dcq || !dck) {
        snprintf(note, sizeof note, "allocation failed");
        goto done;
    }
    const float amp = c->amp > 0 ? c->amp : 1.0f;
    for (int64_t i = 0; i < tq.elems; i++) pa_store_elem(dt, hq_, i, (float)urand(&rng) * amp);
    for (int64_t i = 0; i < tk.elems; i++) pa_store_elem(dt, hk_, i, (float)urand(&rng) * amp);
    for (int64_t i = 0; i < tv.elems; i++) pa_store_elem(dt, hv_, i, (float)urand(&rng));
    for (int64_t i = 0; i < nkn; i++) pa_store_elem(dt, hkn, i, (float)urand(&rng) * amp);
    for (int64_t i = 0; i < nvn; i++) pa_store_elem(dt, hvn, i, (float)urand(&rng));
    if (c->sinks) shape_sinks(c, dt, hq_, hk_, hv_, &tq, &tk, &tv, cuk, &rng);
    /* The expected cache after the append: the old one with rows used[b] + i replaced. */
    memcpy(wk, hk_, (size_t)(tk.elems * esz)), memcpy(wv, hv_, (size_t)(tv.elems * esz));
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < A; i++)
            for (int64_t h = 0; h < c->hkv; h++) {
                int64_t s_ = used[b] + i, pb_ = c->page ? bt[b * pps + s_ / c->page] : b, ps_ = c->page ? s_ % c->page : s_;
                for (int64_t d = 0; d < c->dqk; d++)
                    pa_store_elem(dt, wk, off(&tk, pb_, ps_, h, d), pa_load_elem(dt, hkn, ((b * A + i) * c->hkv + h) * c->dqk + d));
                for (int64_t d = 0; d < c->dv; d++)
                    pa_store_elem(dt, wv, off(&tv, pb_, ps_, h, d), pa_load_elem(dt, hvn, ((b * A + i) * c->hkv + h) * c->dv + d));
            }
    for (int64_t b = 0; b < nb; b++)
        for (int64_t s = 0; s < SQ; s++)
            for (int64_t h = 0; h < c->hq; h++)
                for (int64_t d = 0; d < c->dqk; d++)
                    fq[((b * SQ + s) * c->hq + h) * c->dqk + d] = pa_load_elem(dt, hq_, off(&tq, b, s, h, d));
    for (int64_t b = 0; b < nbk; b++)
        for (int64_t s = 0; s < SK; s++)
            for (int64_t h = 0; h < c->hkv; h++) {
                int64_t pb_ = c->page ? bt[b * pps + s / c->page] : b, ps_ = c->page ? s % c->page : s;
                for (int64_t d = 0; d < c->dqk; d++)
                    fk[((b * SK + s) * c->hkv + h) * c->dqk + d] = pa_load_elem(dt, wk, off(&tk, pb_, ps_, h, d));
                for (int64_t d = 0; d < c->dv; d++)
                    fv[((b * SK + s) * c->hkv + h) * c->dv + d] = pa_load_elem(dt, wv, off(&tv, pb_, ps_, h, d));
            }

    /* The oracle: the CPU backend in fp32 on the logical copies. */
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32;
    p.batch = B, p.seqlen_q = SQ, p.seqlen_k = SK, p.heads_q = c->hq, p.heads_kv = c->hkv;
    p.head_dim_qk = c->dqk, p.head_dim_v = c->dv;
    p.q = portattn_tensor_bshd(fq, SQ, c->hq, c->dqk), p.k = portattn_tensor_bshd(fk, SK, c->hkv, c->dqk);
    p.v = portattn_tensor_bshd(fv, SK, c->hkv, c->dv), p.o = portattn_tensor_bshd(fo, SQ, c->hq, c->dv);
    p.lse = fl, p.lse_stride[0] = c->hq * SQ, p.lse_stride[1] = SQ, p.lse_stride[2] = 1;
    p.causal = c->causal, p.window_left = c->wl, p.window_right = c->wr;
    p.softcap = c->softcap, p.softmax_scale = c->scale;
    if (c->varlen) p.cu_seqlens_q = cuq, p.cu_seqlens_k = cuk;
    p.backend = PORTATTN_BACKEND_CPU;
    float *pk = NULL, *pv = NULL, *pl = NULL;
    int32_t *ocq = NULL, *ock = NULL;
    if (kvc) { /* the oracle sees the cache lengths through varlen packing, a different code path */
        pk = malloc((size_t)(nk * c->dqk + 1) * 4), pv = malloc((size_t)(nk * c->dv + 1) * 4);
        pl = malloc((size_t)(nbk * c->hq * SQ + 1) * 4);
        ocq = calloc((size_t)B + 1, 4), ock = calloc((size_t)B + 1, 4);
        if (!pk || !pv || !pl || !ocq || !ock) {
            snprintf(note, sizeof note, "allocation failed");
            goto oracle_done;
        }
        for (int64_t b = 0; b < B; b++) {
            const int64_t n = used[b] + A;
            ocq[b + 1] = serve ? cuq[b + 1] : ocq[b] + (int32_t)SQ, ock[b + 1] = ock[b] + (int32_t)n;
            memcpy(pk + (int64_t)ock[b] * c->hkv * c->dqk, fk + b * SK * c->hkv * c->dqk, (size_t)(n * c->hkv * c->dqk) * 4);
            memcpy(pv + (int64_t)ock[b] * c->hkv * c->dv, fv + b * SK * c->hkv * c->dv, (size_t)(n * c->hkv * c->dv) * 4);
        }
        p.seqlen_q = ocq[B], p.seqlen_k = ock[B], p.cu_seqlens_q = ocq, p.cu_seqlens_k = ock;
        p.k = portattn_tensor_bshd(pk, ock[B], c->hkv, c->dqk), p.v = portattn_tensor_bshd(pv, ock[B], c->hkv, c->dv);
        p.q.stride[0] = p.o.stride[0] = 0;
        p.lse = pl, p.lse_stride[0] = 0, p.lse_stride[1] = ocq[B], p.lse_stride[2] = 1;
    }
    portattn_status_t ost = portattn_forward(&p, NULL);
    if (ost != PORTATTN_SUCCESS) snprintf(note, sizeof note, "oracle failed: %s", portattn_last_error());
    if (kvc && ost == PORTATTN_SUCCESS) /* LSE back to [B, Hq, Sq] (serving: it is [1, Hq, packed] already) */
        for (int64_t b = 0; b < nb; b++)
            for (int64_t h = 0; h < c->hq; h++)
                for (int64_t i = 0; i < SQ; i++) fl[(b * c->hq + h) * SQ + i] = pl[h * ocq[B] + b * SQ + i];
oracle_done:
    free(pk), free(pv), free(pl), free(ocq), free(ock);
    if (note[0]) goto done;
    p.seqlen_q = SQ, p.seqlen_k = SK, p.cu_seqlens_q = p.cu_seqlens_k = NULL;

    /* The naive same-precision baseline that sets the error budget. */
    float scale = c->scale != 0 ? c->scale : (float)(1.0 / sqrt((double)c->dqk));
    double smax = 0; /* largest |scaled logit| any row sees */
    for (int64_t b = 0; b < B; b++) /* f32 too: large logits need the naive fp32 error as a bound */
            for (int64_t h = 0; h < c->hq; h++)
                naive_lowp(dt, c, fq, fk, fv, no, cuq[b + 1] - cuq[b], kvc ? used[b] + A : cuk[b + 1] - cuk[b], c->varlen ? cuq[b] : 0,
                           nbk == 1 && c->varlen ? cuk[b] : 0, h, c->varlen ? 0 : b * SQ, nbk == 1 && c->varlen ? 0 : b * SK,
                           scale, sbuf, sbuf + SK + 1, &smax);

    /* The backend under test, on poisoned outputs. */
    memset(ho_, POISON, (size_t)to.elems * esz);
    memset(hl, POISON, (size_t)lse_elems * 4);
    if (dm_upload(kind, dq, hq_, (size_t)tq.elems * esz) || dm_upload(kind, dk, hk_, (size_t)tk.elems * esz) ||
        dm_upload(kind, dv, hv_, (size_t)tv.elems * esz) || dm_upload(kind, dout, ho_, (size_t)to.elems * esz) ||
        dm_upload(kind, dl, hl, (size_t)lse_elems * 4) || dm_upload(kind, dcq, cuq, (size_t)(B + 1) * 4) ||
        dm_upload(kind, dck, cuk, (size_t)(B + 1) * 4) || dm_upload(kind, dused, used, (size_t)(B + 1) * 4) ||
        dm_upload(kind, dbt, bt, (size_t)(B * pps + 2) * 4) || dm_upload(kind, dkn, hkn, (size_t)(nkn * esz)) ||
        dm_upload(kind, dvn, hvn, (size_t)(nvn * esz))) {
        snprintf(note, sizeof note, "upload failed");
        goto done;
    }
    p.dtype = dt;
    p.q = (portattn_tensor_t){dq, {tq.stride[0], tq.stride[1], tq.stride[2], tq.stride[3]}};
    p.k = (portattn_tensor_t){dk, {tk.stride[0], tk.stride[1], tk.stride[2], tk.stride[3]}};
    p.v = (portattn_tensor_t){dv, {tv.stride[0], tv.stride[1], tv.stride[2], tv.stride[3]}};
    p.o = (portattn_tensor_t){dout, {to.stride[0], to.stride[1], to.stride[2], to.stride[3]}};
    p.lse = c->lse ? dl : NULL, p.lse_stride[0] = ls[0], p.lse_stride[1] = ls[1], p.lse_stride[2] = ls[2];
    if (c->varlen) p.cu_seqlens_q = dcq, p.cu_seqlens_k = serve ? NULL : dck, p.max_seqlen_q = c->sq, p.max_seqlen_k = c->sk;
    if (c->used || A) p.seqused_k = dused;
    if (A) {
        p.k_new = portattn_tensor_bshd(dkn, A, c->hkv, c->dqk), p.v_new = portattn_tensor_bshd(dvn, A, c->hkv, c->dv);
        p.seqlen_new = A;
    }
    if (c->page) p.block_table = dbt, p.block_table_stride = pps, p.page_size = c->page, p.num_pages = npages;
    p.backend = backend;
    p.num_splits = c->splits;
    /* a workspace sized by the query, as callers who capture CUDA graphs pass one */
    void *dws = NULL;
    size_t ws_bytes = 0;
    if (portattn_forward_workspace_size(&p, &ws_bytes) == PORTATTN_SUCCESS && ws_bytes) {
        if (!(dws = dm_alloc(kind, ws_bytes))) {
            snprintf(note, sizeof note, "workspace allocation failed");
            goto done;
        }
        p.workspace = dws, p.workspace_size = ws_bytes;
    }
    portattn_status_t s = portattn_forward(&p, NULL);
    p.workspace = NULL, p.workspace_size = 0;
    dm_free(kind, dws);
    if (s == PORTATTN_ERROR_NOT_SUPPORTED) {
        snprintf(note, sizeof note, "%s", portattn_last_error());
        res = RUN_NOT_SUPPORTED;
        goto done;
    }
    if (s != PORTATTN_SUCCESS || dm_sync(kind) || dm_download(kind, ho_, dout, (size_t)to.elems * esz) ||
        dm_download(kind, hl, dl, (size_t)lse_elems * 4)) {
        snprintf(note, sizeof note, "run failed: %s: %s", portattn_status_string(s), portattn_last_error());
        goto done;
    }

    /* Appending: the cache must now be exactly the expected one (new rows in, nothing else touched). */
    long long cache_bad = 0;
    if (A) {
        if (dm_download(kind, hk_, dk, (size_t)tk.elems * esz) || dm_download(kind, hv_, dv, (size_t)tv.elems * esz)) {
            snprintf(note, sizeof note, "download of the cache failed");
            goto done;
        }
        cache_bad = memcmp(hk_, wk, (size_t)(tk.elems * esz)) != 0 || memcmp(hv_, wv, (size_t)(tv.elems * esz)) != 0;
    }

    /* Compare O (every logical element) and check the padding was left alone. */
    unsigned char *covered = calloc((size_t)to.elems + 1, 1);
    double se = 0, sr = 0, max_err = 0, max_ref = 0, nse = 0, nmax = 0;
    long long bad = 0, pad_written = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < SQ; i++)
            for (int64_t h = 0; h < c->hq; h++)
                for (int64_t d = 0; d < c->dv; d++) {
                    int64_t lo = ((b * SQ + i) * c->hq + h) * c->dv + d, o = off(&to, b, i, h, d);
                    if (covered) covered[o] = 1;
                    double got = pa_load_elem(dt, ho_, o), ref = fo[lo], e = fabs(got - ref);
                    if (!isfinite(got)) { bad++; continue; }
                    se += e * e, sr += ref * ref;
                    if (e > max_err) max_err = e;
                    if (fabs(ref) > max_ref) max_ref = fabs(ref);
                    double ne = fabs(no[lo] - ref);
                    nse += ne * ne;
                    if (ne > nmax) nmax = ne;
                }
    const unsigned char *ob = ho_;
    for (int64_t e = 0; covered && e < to.elems; e++)
        if (!covered[e])
            for (int i = 0; i < esz; i++) pad_written += ob[e * esz + i] != POISON;
    free(covered);
    double rel = sr > 0 ? sqrt(se / sr) : max_err, nrel = sr > 0 ? sqrt(nse / sr) : nmax;

    /* LSE: exact -inf for rows that see nothing, else close to the oracle's. */
    double lse_err = 0;
    long long lse_bad = 0;
    if (c->lse)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t h = 0; h < c->hq; h++)
                for (int64_t i = 0; i < SQ; i++) {
                    double ref = fl[(b * c->hq + h) * SQ + i], got = hl[b * ls[0] + h * ls[1] + i * ls[2]];
                    if (isinf(ref) && ref < 0) { lse_bad += !(isinf(got) && got < 0); continue; }
                    double e = fabs(got - ref);
                    if (!(e <= 1e-4 + 2e-6 * fabs(ref))) lse_bad++;
                    if (e > lse_err || isnan(e)) lse_err = e;
                }

    /* Bounds: fp16/bf16 at most 2x the naive error, never above 1e-2, with a floor of the dtype's
     * unit roundoff (the rounding of O alone); fp32 tight, or 2x the naive fp32 error or the rounding
     * scale of the largest logit where those are larger (large logits move weights in any fp32 code). */
    double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
    double rel_bound = dt == PORTATTN_DTYPE_F32 ? fmax(1e-5, 2 * nrel) : fmin(1e-2, fmax(2 * nrel, u));
    /* fp32: a logit of size |s| carries about |s| * 2^-24 of rounding per operation into its weight */
    double f32_abs = fmax(1e-4, 16.0 * smax / 16777216.0) * fmax(1, max_ref);
    double abs_bound = dt == PORTATTN_DTYPE_F32 ? fmax(f32_abs, 2 * nmax) : fmax(2 * nmax, 2 * u * max_ref);
    int pass = bad == 0 && pad_written == 0 && lse_bad == 0 && !cache_bad && rel <= rel_bound && max_err <= abs_bound;
    snprintf(note, sizeof note, "rel_l2 %.2e (bound %.1e) max_abs %.2e (bound %.1e) lse_err %.1e%s%s%s%s",
             rel, rel_bound, max_err, abs_bound, lse_err, bad ? " NON-FINITE/UNWRITTEN OUTPUT" : "",
             pad_written ? " WROTE PADDING" : "", lse_bad ? " LSE MISMATCH" : "", cache_bad ? " CACHE WRONG AFTER APPEND" : "");
    res = pass ? RUN_PASS : RUN_FAIL;

done:
    printf("%-4s %-28s %-4s %s\n", res == RUN_PASS ? "ok" : res == RUN_FAIL ? "FAIL" : "n/a", c->name, pa_dtype_name(dt),
           note);
    fflush(stdout);
    dm_free(kind, dq), dm_free(kind, dk), dm_free(kind, dv), dm_free(kind, dout), dm_free(kind, dl);
    dm_free(kind, dcq), dm_free(kind, dck), dm_free(kind, dused), dm_free(kind, dbt);
    dm_free(kind, dkn), dm_free(kind, dvn);
    free(hkn), free(hvn), free(wk), free(wv);
    free(used), free(bt);
    free(cuq), free(cuk), free(hq_), free(hk_), free(hv_), free(ho_), free(hl);
    free(fq), free(fk), free(fv), free(fo), free(fl), free(no), free(sbuf);
    return res;
}

int cuda_compute_capability(void)
{
#ifdef PORTATTN_HAVE_CUDA
    int n = 0, dev = 0, major = 0, minor = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return 0;
    return major * 10 + minor;
#else
    return 0;
#endif
}

/* Whether a device of compute capability cc must be able to run a CUDA-memory backend: what the
 * README promises (cuda-sm100 on B200/B300, cuda-sm90 on H100/H200, the rest on sm_80 and newer; the
 * hip-cdna emulation build targets sm_90). */
static int cuda_backend_expected(portattn_backend_t be, int cc)
{
    switch (be) {
    case PORTATTN_BACKEND_CUDA_GENERIC:
    case PORTATTN_BACKEND_CUDA_SM80: return cc >= 80;
    case PORTATTN_BACKEND_CUDA_SM90: return cc == 90;
    case PORTATTN_BACKEND_CUDA_SM100: return cc == 100 || cc == 103;
    case PORTATTN_BACKEND_HIP_CDNA: return cc == 90;
    default: return 0;
    }
}

int test_backend_present(portattn_backend_t be)
{
    portattn_backend_info_t info;
    char why[256] = "";
    if (portattn_backend_get_info(be, &info)) return printf("FAIL backend %d: %s\n", (int)be, portattn_last_error()), 1;
    const dm_kind kind = dm_kind_of(be);
    if (info.available && dm_available(kind, why, sizeof why)) return 0;
    const char *said = info.available ? why : info.detail;
    if (kind != DM_CUDA) return printf("SKIP %s: %s\n", info.name, said), 77; /* no AMD hardware check: none to ask */
    const int cc = cuda_compute_capability();
    if (cc && cuda_backend_expected(be, cc)) {
        printf("FAIL %s: the CUDA runtime reports a compute capability %d.%d device, which it must run on, but the "
               "library says: %s\n", info.name, cc / 10, cc % 10, said);
        return 1;
    }
    if (cc) printf("SKIP %s: not for a compute capability %d.%d device (%s)\n", info.name, cc / 10, cc % 10, said);
    else printf("SKIP %s: %s\n", info.name, said);
    return 77;
}

int gpu_test_backend(int argc, char **argv, portattn_backend_t *be)
{
    int ok = 0;
    *be = argc > 1 ? portattn_backend_from_name(argv[1], &ok) : PORTATTN_BACKEND_AUTO;
    if (!ok || *be == PORTATTN_BACKEND_AUTO || dm_kind_of(*be) != DM_CUDA) {
        fprintf(stderr, "usage: %s <GPU backend name>\n", argv[0]);
        return 2;
    }
    return test_backend_present(*be);
}
