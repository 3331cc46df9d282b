/* The independent reference (naive_ref.h): one key at a time, the mask as a predicate per key, the
 * page table and appended tokens looked up per key, every score kept. Slow on purpose. */
#include "naive_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "half.h"

int64_t naive_rows(const portattn_fwd_params_t *p)
{
    return p->cu_seqlens_q ? p->seqlen_q : p->batch * p->seqlen_q;
}

/* Query and key lengths of sequence b and the packed offsets of its first query and key. */
static void lengths(const portattn_fwd_params_t *p, int64_t b, int64_t *sq, int64_t *sk, int64_t *q0, int64_t *k0)
{
    *sq = p->seqlen_q, *sk = p->seqlen_k, *q0 = b * p->seqlen_q, *k0 = 0;
    if (p->cu_seqlens_q) *q0 = p->cu_seqlens_q[b], *sq = p->cu_seqlens_q[b + 1] - *q0;
    if (p->cu_seqlens_k) *k0 = p->cu_seqlens_k[b], *sk = p->cu_seqlens_k[b + 1] - *k0;
    if (p->seqused_k) *sk = p->seqused_k[b] + (p->k_new.data ? p->seqlen_new : 0);
}

/* Element offset of (key j, head h, dim 0) of sequence b in t: packed, batched or paged. */
static int64_t key_offset(const portattn_fwd_params_t *p, const portattn_tensor_t *t, int64_t b, int64_t k0,
                          int64_t j, int64_t h)
{
    if (p->block_table) {
        const int64_t page = p->block_table[b * p->block_table_stride + j / p->page_size];
        return page * t->stride[0] + (j % p->page_size) * t->stride[1] + h * t->stride[2];
    }
    if (p->cu_seqlens_k) return (k0 + j) * t->stride[1] + h * t->stride[2];
    return b * t->stride[0] + j * t->stride[1] + h * t->stride[2];
}

/* Element d of key j (head h) of sequence b of K (which = 0) or V (1), appended tokens included. */
static double key_elem(const portattn_fwd_params_t *p, int which, int64_t b, int64_t k0, int64_t j, int64_t h,
                       int64_t d)
{
    const portattn_tensor_t *cache = which ? &p->v : &p->k, *fresh = which ? &p->v_new : &p->k_new;
    if (p->k_new.data && p->seqused_k && j >= p->seqused_k[b]) {
        const int64_t i = j - p->seqused_k[b];
        return pa_load_elem(p->dtype, fresh->data,
                            b * fresh->stride[0] + i * fresh->stride[1] + h * fresh->stride[2] + d * fresh->stride[3]);
    }
    return pa_load_elem(p->dtype, cache->data, key_offset(p, cache, b, k0, j, h) + d * cache->stride[3]);
}

static int visible(const portattn_fwd_params_t *p, int64_t i, int64_t j, int64_t sq, int64_t sk)
{
    const int64_t diag = i + sk - sq, right = p->causal ? 0 : p->window_right;
    return (p->window_left < 0 || p->window_left >= diag - j) && (right < 0 || j - diag <= right);
}

static void one_row(const portattn_fwd_params_t *p, int64_t b, int64_t i, int64_t h, double *w, double *o, double *lse)
{
    int64_t sq, sk, q0, k0;
    lengths(p, b, &sq, &sk, &q0, &k0);
    const int64_t hk = h / (p->heads_q / p->heads_kv);
    const int64_t qoff = (p->cu_seqlens_q ? 0 : b * p->q.stride[0]) + (p->cu_seqlens_q ? q0 + i : i) * p->q.stride[1] +
                         h * p->q.stride[2];
    const double scale = p->softmax_scale != 0 ? p->softmax_scale : 1.0 / sqrt((double)p->head_dim_qk);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < sk; j++) {
        w[j] = -INFINITY;
        if (!visible(p, i, j, sq, sk)) continue;
        double dot = 0;
        for (int64_t d = 0; d < p->head_dim_qk; d++)
            dot += pa_load_elem(p->dtype, p->q.data, qoff + d * p->q.stride[3]) * key_elem(p, 0, b, k0, j, hk, d);
        w[j] = p->softcap > 0 ? p->softcap * tanh(dot * scale / p->softcap) : dot * scale;
        mx = fmax(mx, w[j]);
    }
    for (int64_t j = 0; j < sk; j++) sum += w[j] = w[j] == -INFINITY ? 0 : exp(w[j] - mx);
    for (int64_t d = 0; d < p->head_dim_v; d++) {
        double acc = 0;
        for (int64_t j = 0; j < sk; j++)
            if (w[j] != 0) acc += w[j] * key_elem(p, 1, b, k0, j, hk, d);
        o[d] = sum > 0 ? acc / sum : 0;
    }
    *lse = sum > 0 ? mx + log(sum) : -INFINITY;
}

int naive_forward(const portattn_fwd_params_t *p, double *o, double *lse)
{
    const int64_t rows = naive_rows(p), hq = p->heads_q, dv = p->head_dim_v;
    for (int64_t r = 0; r < rows * hq; r++) {
        lse[r] = NAN;
        for (int64_t d = 0; d < dv; d++) o[r * dv + d] = NAN;
    }
    int64_t longest = 0;
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t sq, sk, q0, k0;
        lengths(p, b, &sq, &sk, &q0, &k0);
        if (sk > longest) longest = sk;
    }
    double *w = malloc(sizeof(double) * (size_t)(longest + 1));
    if (!w) return -1;
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t sq, sk, q0, k0;
        lengths(p, b, &sq, &sk, &q0, &k0);
        for (int64_t i = 0; i < sq; i++)
            for (int64_t h = 0; h < hq; h++) {
                const int64_t r = (q0 + i) * hq + h;
                one_row(p, b, i, h, w, o + r * dv, lse + r);
            }
    }
    free(w);
    return 0;
}

/* Relative rounding of one conversion into the dtype, with a margin. */
static double unit(portattn_dtype_t t)
{
    return t == PORTATTN_DTYPE_BF16 ? 1.0 / 256 : t == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / (1 << 22);
}

static int close_to(double got, double ref, double u)
{
    if (isinf(ref)) return got == ref;
    return fabs(got - ref) <= u * fabs(ref) + 1e-6;
}

long naive_compare(const char *what, const portattn_fwd_params_t *p, const double *o, const double *lse)
{
    long bad = 0;
    const int64_t hq = p->heads_q, dv = p->head_dim_v, varlen = p->cu_seqlens_q != NULL;
    for (int64_t b = 0; b < p->batch; b++) {
        int64_t sq, sk, q0, k0;
        lengths(p, b, &sq, &sk, &q0, &k0);
        for (int64_t i = 0; i < sq; i++)
            for (int64_t h = 0; h < hq; h++) {
                const int64_t r = (q0 + i) * hq + h, tok = varlen ? q0 + i : i, bb = varlen ? 0 : b;
                for (int64_t d = 0; d < dv; d++) {
                    const double got = pa_load_elem(p->dtype, p->o.data, bb * p->o.stride[0] + tok * p->o.stride[1] +
                                                                             h * p->o.stride[2] + d * p->o.stride[3]);
                    if (!close_to(got, o[r * dv + d], unit(p->dtype)) && bad++ < 3)
                        printf("     %s: O[b %lld, i %lld, h %lld, d %lld] = %.9g, reference %.9g\n", what, (long long)b,
                               (long long)i, (long long)h, (long long)d, got, o[r * dv + d]);
                }
                if (!p->lse) continue;
                const double got = p->lse[bb * p->lse_stride[0] + h * p->lse_stride[1] + tok * p->lse_stride[2]];
                if (!close_to(got, lse[r], 1.0 / (1 << 22)) && bad++ < 3)
                    printf("     %s: LSE[b %lld, h %lld, i %lld] = %.9g, reference %.9g\n", what, (long long)b,
                           (long long)h, (long long)i, got, lse[r]);
            }
    }
    return bad;
}
