/* The CPU backward (the gradient oracle) against two independent derivations, on tiny shapes with
 * fresh random f32 inputs (seed printed):
 *  (a) a naive backward in double that recomputes softmax itself and multiplies dP by the full
 *      softmax Jacobian diag(P) - P P^T of each row (no LSE, no rowsum(dO * O) shortcut);
 *  (b) central finite differences, in double, of L = sum(dO * O) through a naive double forward.
 * Also: rows that see no key and keys no row sees get exactly 0, the padding of the gradient
 * tensors is untouched, and the result is bitwise identical for 1 and 3 threads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "portattn.h"

typedef struct cfg {
    const char *name;
    int64_t b, sq, sk, hq, hkv, dqk, dv; /* sq, sk per sequence; varlen: the packed totals */
    int causal;
    int64_t wl, wr;
    double softcap, scale, amp; /* scale 0 = default; amp scales q and k */
    int32_t cuq[5], cuk[5];     /* varlen when cuq[b] != 0 */
} cfg;

static const cfg cfgs[] = {
    {"gqa2", 2, 5, 7, 4, 2, 6, 6, 0, -1, -1, 0, 0, 1, {0}, {0}},
    {"mqa_dqk5_dv3_scale", 1, 4, 6, 3, 1, 5, 3, 0, -1, -1, 0, 0.7, 1, {0}, {0}},
    {"causal_sq6_sk4_nokey_rows", 2, 6, 4, 2, 1, 4, 5, 1, -1, -1, 0, 0, 1, {0}, {0}},
    {"window_2_1", 1, 7, 9, 2, 2, 4, 4, 0, 2, 1, 0, 0, 1, {0}, {0}},
    {"window_unseen_keys", 1, 3, 9, 2, 1, 4, 4, 0, 1, 0, 0, 0, 1, {0}, {0}},
    {"softcap_2", 2, 5, 6, 2, 1, 4, 4, 0, -1, -1, 2.0, 0, 3, {0}, {0}},
    {"softcap_causal_gqa", 1, 6, 6, 4, 2, 3, 5, 1, -1, -1, 1.5, 0, 2, {0}, {0}},
    {"varlen_gqa_causal", 4, 9, 10, 4, 2, 4, 3, 1, -1, -1, 0, 0, 1, {0, 3, 3, 7, 9}, {0, 5, 7, 7, 10}},
    {"varlen_window_softcap", 3, 8, 8, 2, 1, 5, 4, 0, 1, 2, 3.0, 0, 2, {0, 4, 4, 8}, {0, 2, 5, 8}},
};

static int failures;

/* Sequence extents from the config: packed offsets (varlen) or b * S. */
static void extent(const cfg *c, int64_t b, int64_t *q0, int64_t *sq, int64_t *k0, int64_t *sk)
{
    int varlen = c->cuq[c->b] != 0;
    *q0 = varlen ? c->cuq[b] : b * c->sq, *sq = varlen ? c->cuq[b + 1] - c->cuq[b] : c->sq;
    *k0 = varlen ? c->cuk[b] : b * c->sk, *sk = varlen ? c->cuk[b + 1] - c->cuk[b] : c->sk;
}

static int visible(const cfg *c, int64_t i, int64_t j, int64_t sq, int64_t sk)
{
    int64_t wr = c->causal ? 0 : c->wr, shift = sk - sq;
    return (c->wl < 0 || j >= i + shift - c->wl) && (wr < 0 || j <= i + shift + wr);
}

static double scale_of(const cfg *c) { return c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->dqk); }

/* Softmax probabilities of one row over all sk keys (0 where masked or when nothing is visible),
 * and the softcap derivative per key. Arrays: packed [T, H, D] doubles. */
static void probs(const cfg *c, const double *q, const double *k, int64_t qrow, int64_t k0, int64_t sq, int64_t sk,
                  int64_t i, int64_t h, double *p, double *dsdx)
{
    const int64_t hk = h / (c->hq / c->hkv);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < sk; j++) {
        double x = 0;
        for (int64_t d = 0; d < c->dqk; d++) x += q[(qrow * c->hq + h) * c->dqk + d] * k[((k0 + j) * c->hkv + hk) * c->dqk + d];
        x *= scale_of(c);
        dsdx[j] = 1;
        if (c->softcap > 0) {
            double t = tanh(x / c->softcap);
            x = c->softcap * t, dsdx[j] = 1 - t * t;
        }
        p[j] = visible(c, i, j, sq, sk) ? x : -INFINITY;
        if (p[j] > mx) mx = p[j];
    }
    for (int64_t j = 0; j < sk; j++) sum += p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx);
    for (int64_t j = 0; j < sk; j++) p[j] = sum > 0 ? p[j] / sum : 0;
}

static void naive_forward(const cfg *c, const double *q, const double *k, const double *v, double *o, double *p,
                          double *t)
{
    for (int64_t b = 0; b < c->b; b++) {
        int64_t q0, sq, k0, sk;
        extent(c, b, &q0, &sq, &k0, &sk);
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < sq; i++) {
                probs(c, q, k, q0 + i, k0, sq, sk, i, h, p, t);
                for (int64_t d = 0; d < c->dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < sk; j++) acc += p[j] * v[((k0 + j) * c->hkv + h / (c->hq / c->hkv)) * c->dv + d];
                    o[((q0 + i) * c->hq + h) * c->dv + d] = acc;
                }
            }
    }
}

/* (a): dS = J dP with the row's full softmax Jacobian J = diag(P) - P P^T. */
static void naive_backward(const cfg *c, const double *q, const double *k, const double *v, const double *dout,
                           double *dq, double *dk, double *dv, double *p, double *t, double *dp)
{
    const int64_t group = c->hq / c->hkv;
    const double sc = scale_of(c);
    for (int64_t b = 0; b < c->b; b++) {
        int64_t q0, sq, k0, sk;
        extent(c, b, &q0, &sq, &k0, &sk);
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < sq; i++) {
                const int64_t hk = h / group, qi = (q0 + i) * c->hq + h;
                probs(c, q, k, q0 + i, k0, sq, sk, i, h, p, t);
                for (int64_t j = 0; j < sk; j++) {
                    dp[j] = 0;
                    for (int64_t d = 0; d < c->dv; d++) dp[j] += dout[qi * c->dv + d] * v[((k0 + j) * c->hkv + hk) * c->dv + d];
                }
                for (int64_t j = 0; j < sk; j++) {
                    double ds = 0;
                    for (int64_t m = 0; m < sk; m++) ds += ((j == m ? p[j] : 0) - p[j] * p[m]) * dp[m];
                    const double dx = ds * t[j] * sc;
                    const int64_t kj = (k0 + j) * c->hkv + hk;
                    for (int64_t d = 0; d < c->dqk; d++) {
                        dq[qi * c->dqk + d] += dx * k[kj * c->dqk + d];
                        dk[kj * c->dqk + d] += dx * q[qi * c->dqk + d];
                    }
                    for (int64_t d = 0; d < c->dv; d++) dv[kj * c->dv + d] += p[j] * dout[qi * c->dv + d];
                }
            }
    }
}

static double loss(const cfg *c, const double *q, const double *k, const double *v, const double *dout, double *o,
                   double *p, double *t)
{
    naive_forward(c, q, k, v, o, p, t);
    double l = 0;
    const int64_t n = (c->cuq[c->b] ? c->sq : c->b * c->sq) * c->hq * c->dv;
    for (int64_t x = 0; x < n; x++) l += dout[x] * o[x];
    return l;
}

/* Padded gradient layout: every level has a gap, so a write outside the logical elements shows. */
static portattn_tensor_t padded(float *base, int64_t s, int64_t h, int64_t d, int64_t *elems)
{
    portattn_tensor_t t = {base, {0, 0, d + 2, 1}};
    t.stride[1] = h * (d + 2) + 1, t.stride[0] = s * t.stride[1] + 3;
    *elems = t.stride[0] * 5; /* room for batch <= 4 */
    return t;
}

static void report(const char *cfgname, const char *what, double err, double bound)
{
    int ok = err <= bound;
    failures += !ok;
    printf("%-4s %-28s %-18s max err %.2e (bound %.1e)\n", ok ? "ok" : "FAIL", cfgname, what, err, bound);
}

static int run(const cfg *c, uint64_t *rng)
{
    const int varlen = c->cuq[c->b] != 0;
    const int64_t tq = varlen ? c->sq : c->b * c->sq, tk = varlen ? c->sk : c->b * c->sk; /* tokens */
    const int64_t nq = tq * c->hq, nk = tk * c->hkv;
    const int64_t sizes[4] = {nq * c->dqk, nk * c->dqk, nk * c->dv, nq * c->dv};
    double *in[4], *ref[3], *fd[3];
    float *f32[4];
    for (int i = 0; i < 4; i++) {
        in[i] = malloc(sizeof(double) * (size_t)sizes[i]), f32[i] = malloc(sizeof(float) * (size_t)sizes[i]);
        for (int64_t x = 0; x < sizes[i]; x++) {
            f32[i][x] = (float)(urand(rng) * (i < 2 ? c->amp : 1.0));
            in[i][x] = f32[i][x];
        }
        if (i < 3) ref[i] = calloc((size_t)sizes[i], sizeof(double)), fd[i] = calloc((size_t)sizes[i], sizeof(double));
    }
    double *o = malloc(sizeof(double) * (size_t)(nq * c->dv)), *scr = malloc(sizeof(double) * (size_t)(c->sk * 3 + 3));
    float *fo = malloc(sizeof(float) * (size_t)(nq * c->dv)), *lse = malloc(sizeof(float) * (size_t)nq);

    /* The library: forward for O and LSE, then backward into poisoned padded gradients. */
    const int64_t S_q = c->sq, S_k = c->sk;
    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = PORTATTN_DTYPE_F32, f.backend = PORTATTN_BACKEND_CPU;
    f.batch = c->b, f.seqlen_q = S_q, f.seqlen_k = S_k, f.heads_q = c->hq, f.heads_kv = c->hkv;
    f.head_dim_qk = c->dqk, f.head_dim_v = c->dv;
    f.q = portattn_tensor_bshd(f32[0], S_q, c->hq, c->dqk), f.k = portattn_tensor_bshd(f32[1], S_k, c->hkv, c->dqk);
    f.v = portattn_tensor_bshd(f32[2], S_k, c->hkv, c->dv), f.o = portattn_tensor_bshd(fo, S_q, c->hq, c->dv);
    f.lse = lse, f.lse_stride[0] = c->hq * S_q, f.lse_stride[1] = S_q, f.lse_stride[2] = 1;
    if (varlen) f.cu_seqlens_q = c->cuq, f.cu_seqlens_k = c->cuk;
    f.causal = c->causal, f.window_left = c->wl, f.window_right = c->wr;
    f.softcap = (float)c->softcap, f.softmax_scale = (float)c->scale;
    if (portattn_forward(&f, NULL)) {
        printf("FAIL %s forward: %s\n", c->name, portattn_last_error());
        return 1;
    }
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = f.dtype, p.backend = PORTATTN_BACKEND_CPU;
    p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k, p.heads_q = f.heads_q, p.heads_kv = f.heads_kv;
    p.head_dim_qk = f.head_dim_qk, p.head_dim_v = f.head_dim_v;
    p.q = f.q, p.k = f.k, p.v = f.v, p.o = f.o, p.dout = portattn_tensor_bshd(f32[3], S_q, c->hq, c->dv);
    p.lse = lse, memcpy(p.lse_stride, f.lse_stride, sizeof p.lse_stride);
    p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
    p.causal = f.causal, p.window_left = f.window_left, p.window_right = f.window_right;
    p.softcap = f.softcap, p.softmax_scale = f.softmax_scale;
    int64_t ge[3];
    float *g[3], *g1[3];
    const int64_t gs[3] = {S_q, S_k, S_k}, gh[3] = {c->hq, c->hkv, c->hkv}, gd[3] = {c->dqk, c->dqk, c->dv};
    portattn_tensor_t gt[3];
    for (int i = 0; i < 3; i++) {
        gt[i] = padded(NULL, gs[i], gh[i], gd[i], &ge[i]);
        g[i] = malloc(sizeof(float) * (size_t)ge[i]), g1[i] = malloc(sizeof(float) * (size_t)ge[i]);
        memset(g[i], 0xff, sizeof(float) * (size_t)ge[i]); /* NaN poison */
        gt[i].data = g[i];
    }
    p.dq = gt[0], p.dk = gt[1], p.dv = gt[2];
    setenv("PORTATTN_NUM_THREADS", "3", 1);
    if (portattn_backward(&p, NULL)) {
        printf("FAIL %s backward: %s\n", c->name, portattn_last_error());
        return 1;
    }
    /* Same call on one thread: bitwise the same gradients. */
    for (int i = 0; i < 3; i++) memcpy(g1[i], g[i], sizeof(float) * (size_t)ge[i]), memset(g[i], 0xff, sizeof(float) * (size_t)ge[i]);
    setenv("PORTATTN_NUM_THREADS", "1", 1);
    portattn_status_t st1 = portattn_backward(&p, NULL);
    unsetenv("PORTATTN_NUM_THREADS");
    int same = st1 == PORTATTN_SUCCESS;
    for (int i = 0; i < 3; i++) same &= memcmp(g1[i], g[i], sizeof(float) * (size_t)ge[i]) == 0;
    failures += !same;
    printf("%-4s %-28s bitwise equal on 1 and 3 threads\n", same ? "ok" : "FAIL", c->name);

    /* (a) and (b) */
    naive_backward(c, in[0], in[1], in[2], in[3], ref[0], ref[1], ref[2], scr, scr + c->sk + 1, scr + 2 * c->sk + 2);
    const double h = 1e-4;
    for (int i = 0; i < 3; i++)
        for (int64_t x = 0; x < sizes[i]; x++) {
            const double keep = in[i][x];
            in[i][x] = keep + h;
            double lp = loss(c, in[0], in[1], in[2], in[3], o, scr, scr + c->sk + 1);
            in[i][x] = keep - h;
            double lm = loss(c, in[0], in[1], in[2], in[3], o, scr, scr + c->sk + 1);
            in[i][x] = keep;
            fd[i][x] = (lp - lm) / (2 * h);
        }
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        double ea = 0, ef = 0, mag = 0;
        long long zero_bad = 0, pad_bad = 0;
        unsigned char *hit = calloc((size_t)ge[i], 1);
        for (int64_t r = 0; r < (i ? nk : nq) / gh[i]; r++) /* packed token r */
            for (int64_t hh = 0; hh < gh[i]; hh++)
                for (int64_t d = 0; d < gd[i]; d++) {
                    const int64_t bb = varlen ? 0 : r / gs[i], s = varlen ? r : r % gs[i];
                    const int64_t off = bb * gt[i].stride[0] + s * gt[i].stride[1] + hh * gt[i].stride[2] + d;
                    const int64_t lx = (r * gh[i] + hh) * gd[i] + d;
                    const double got = g[i][off];
                    hit[off] = 1;
                    if (ref[i][lx] == 0) zero_bad += got != 0.0; /* no contribution: exactly 0 */
                    if (!(fabs(got - ref[i][lx]) <= ea)) ea = fabs(got - ref[i][lx]);
                    if (!(fabs(got - fd[i][lx]) <= ef)) ef = fabs(got - fd[i][lx]);
                    if (fabs(ref[i][lx]) > mag) mag = fabs(ref[i][lx]);
                }
        uint32_t poison;
        memset(&poison, 0xff, 4);
        for (int64_t e = 0; e < ge[i]; e++) {
            uint32_t bits;
            memcpy(&bits, &g[i][e], 4);
            pad_bad += !hit[e] && bits != poison;
        }
        free(hit);
        char what[64];
        snprintf(what, sizeof what, "%s vs Jacobian", names[i]);
        report(c->name, what, ea, 1e-6 * (1 + mag));
        snprintf(what, sizeof what, "%s vs finite diff", names[i]);
        report(c->name, what, ef, 2e-6 * (1 + mag));
        failures += zero_bad != 0 || pad_bad != 0 || mag == 0;
        if (zero_bad || pad_bad || mag == 0)
            printf("FAIL %-28s %s: %lld nonzero where nothing contributes, %lld padding elements written%s\n", c->name,
                   names[i], zero_bad, pad_bad, mag == 0 ? ", reference all zero" : "");
    }
    for (int i = 0; i < 4; i++) free(in[i]), free(f32[i]);
    for (int i = 0; i < 3; i++) free(ref[i]), free(fd[i]), free(g[i]), free(g1[i]);
    free(o), free(scr), free(fo), free(lse);
    return 0;
}

int main(void)
{
    uint64_t rng = test_seed();
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) failures += run(&cfgs[i], &rng);
    printf("%d failures\n", failures);
    return failures != 0;
}
