/* The backward check of the case table: for one case and dtype, the backend's forward gives O and
 * LSE, its backward writes dq, dk, dv into poisoned buffers in the case's layout, and each gradient
 * is compared with the CPU backward in fp32 on the same dtype-exact inputs. The bound is
 * FlashAttention's rule for gradients: max error at most 3x that of a naive same-precision backward
 * (PyTorch-style eager: scores, P, dP and dS rounded to the dtype, fp32 accumulation). The call is
 * made with deterministic = 1 and run twice: both runs must write the same bytes; on a GPU it is made
 * once more without it (a backend may then take another path, e.g. atomics) and checked alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "half.h"
#include "harness.h"
#include "problem.h"

#define POISON 0xFF /* every byte: a NaN in f16, bf16 and f32 */

/* One tensor argument: layout, host copy in the dtype, device copy. */
typedef struct arg {
    tens t;
    void *host, *dev;
    size_t bytes;
} arg;

static int arg_alloc(arg *a, dm_kind kind, tens t, int esz)
{
    a->t = t, a->bytes = (size_t)t.elems * (size_t)esz + 16;
    a->host = malloc(a->bytes), a->dev = dm_alloc(kind, a->bytes);
    return a->host && a->dev;
}

static portattn_tensor_t arg_tensor(const arg *a)
{
    portattn_tensor_t t = {a->dev, {a->t.stride[0], a->t.stride[1], a->t.stride[2], a->t.stride[3]}};
    return t;
}

/* Per-sequence extents: packed starts and lengths (B + 1 offsets each). */
typedef struct seqs {
    int64_t B, nb, SQ, SK;
    int32_t *cuq, *cuk;
} seqs;

/* The naive same-precision backward of one sequence, written from the math with its own mask code:
 * every intermediate a PyTorch eager implementation materialises is rounded to the dtype. Arrays
 * are logical packed [T, H, D] fp32; work holds 3 * sk + dqk + 2 * sk * (dqk + dv) floats. */
static void naive_bwd_lowp(portattn_dtype_t dt, const tcase *c, const float *q, const float *k, const float *v,
                           const float *dout, float *dq, float *dk, float *dv, int64_t q0, int64_t sq, int64_t k0,
                           int64_t sk, float scale, float *work)
{
    const int64_t group = c->hq / c->hkv, wl = c->wl, wr = c->causal ? 0 : c->wr, dqk = c->dqk, dvv = c->dv;
    float *s = work, *pr = s + sk, *dp = pr + sk, *qs = dp + sk, *hk_acc = qs + dqk, *hv_acc = hk_acc + sk * dqk;
    float *sum_k = hv_acc + sk * dvv, *sum_v = sum_k + sk * dqk;
    for (int64_t hk = 0; hk < c->hkv; hk++) {
        memset(sum_k, 0, sizeof(float) * (size_t)(sk * (dqk + dvv)));
        for (int64_t h = hk * group; h < (hk + 1) * group; h++) {
            memset(hk_acc, 0, sizeof(float) * (size_t)(sk * (dqk + dvv)));
            for (int64_t i = 0; i < sq; i++) {
                const float *qi = q + ((q0 + i) * c->hq + h) * dqk, *doi = dout + ((q0 + i) * c->hq + h) * dvv;
                for (int64_t d = 0; d < dqk; d++) qs[d] = round_to(dt, qi[d] * scale);
                float mx = -INFINITY, tot = 0, delta = 0;
                for (int64_t j = 0; j < sk; j++) {
                    const float *kj = k + ((k0 + j) * c->hkv + hk) * dqk;
                    float x = 0;
                    for (int64_t d = 0; d < dqk; d++) x += qs[d] * kj[d];
                    x = round_to(dt, x);
                    if (c->softcap > 0) x = round_to(dt, c->softcap * tanhf(x / c->softcap));
                    int seen = (wl < 0 || j >= i + sk - sq - wl) && (wr < 0 || j <= i + sk - sq + wr);
                    s[j] = seen ? x : -INFINITY;
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t j = 0; j < sk; j++) tot += pr[j] = mx == -INFINITY ? 0 : expf(s[j] - mx);
                for (int64_t j = 0; j < sk; j++) {
                    pr[j] = round_to(dt, tot > 0 ? pr[j] / tot : 0);
                    const float *vj = v + ((k0 + j) * c->hkv + hk) * dvv;
                    float x = 0;
                    for (int64_t d = 0; d < dvv; d++) x += doi[d] * vj[d];
                    dp[j] = round_to(dt, x);
                    delta += pr[j] * dp[j];
                }
                delta = round_to(dt, delta);
                float *dqi = dq + ((q0 + i) * c->hq + h) * dqk;
                for (int64_t d = 0; d < dqk; d++) dqi[d] = 0;
                for (int64_t j = 0; j < sk; j++) {
                    if (pr[j] == 0) continue;
                    float ds = round_to(dt, pr[j] * (dp[j] - delta));
                    if (c->softcap > 0) {
                        const float t = s[j] / c->softcap;
                        ds = round_to(dt, ds * (1 - t * t));
                    }
                    const float *kj = k + ((k0 + j) * c->hkv + hk) * dqk;
                    for (int64_t d = 0; d < dqk; d++) dqi[d] += ds * kj[d], hk_acc[j * dqk + d] += ds * qs[d];
                    for (int64_t d = 0; d < dvv; d++) hv_acc[j * dvv + d] += pr[j] * doi[d];
                }
                for (int64_t d = 0; d < dqk; d++) dqi[d] = round_to(dt, round_to(dt, dqi[d]) * scale);
            }
            for (int64_t x = 0; x < sk * dqk; x++) sum_k[x] += round_to(dt, hk_acc[x]);
            for (int64_t x = 0; x < sk * dvv; x++) sum_v[x] += round_to(dt, hv_acc[x]);
        }
        for (int64_t j = 0; j < sk; j++) {
            for (int64_t d = 0; d < dqk; d++) dk[((k0 + j) * c->hkv + hk) * dqk + d] = round_to(dt, sum_k[j * dqk + d]);
            for (int64_t d = 0; d < dvv; d++) dv[((k0 + j) * c->hkv + hk) * dvv + d] = round_to(dt, sum_v[j * dvv + d]);
        }
    }
}

/* The CPU oracle in fp32 on the logical copies: forward for O/LSE, then backward. */
static portattn_status_t oracle(const tcase *c, const seqs *sq, float *lq, float *lk, float *lv, float *ldo, float *lo,
                                float *ll, float *rq, float *rk, float *rv)
{
    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = PORTATTN_DTYPE_F32, f.backend = PORTATTN_BACKEND_CPU;
    f.batch = sq->B, f.seqlen_q = sq->SQ, f.seqlen_k = sq->SK, f.heads_q = c->hq, f.heads_kv = c->hkv;
    f.head_dim_qk = c->dqk, f.head_dim_v = c->dv;
    f.q = portattn_tensor_bshd(lq, sq->SQ, c->hq, c->dqk), f.k = portattn_tensor_bshd(lk, sq->SK, c->hkv, c->dqk);
    f.v = portattn_tensor_bshd(lv, sq->SK, c->hkv, c->dv), f.o = portattn_tensor_bshd(lo, sq->SQ, c->hq, c->dv);
    f.lse = ll, f.lse_stride[0] = c->hq * sq->SQ, f.lse_stride[1] = sq->SQ, f.lse_stride[2] = 1;
    f.causal = c->causal, f.window_left = c->wl, f.window_right = c->wr, f.softcap = c->softcap;
    f.softmax_scale = c->scale;
    if (c->varlen) f.cu_seqlens_q = sq->cuq, f.cu_seqlens_k = sq->cuk;
    portattn_status_t st = portattn_forward(&f, NULL);
    if (st) return st;
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = f.dtype, p.backend = f.backend, p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k;
    p.heads_q = f.heads_q, p.heads_kv = f.heads_kv, p.head_dim_qk = f.head_dim_qk, p.head_dim_v = f.head_dim_v;
    p.q = f.q, p.k = f.k, p.v = f.v, p.o = f.o, p.dout = portattn_tensor_bshd(ldo, sq->SQ, c->hq, c->dv);
    p.lse = ll, memcpy(p.lse_stride, f.lse_stride, sizeof p.lse_stride);
    p.dq = portattn_tensor_bshd(rq, sq->SQ, c->hq, c->dqk), p.dk = portattn_tensor_bshd(rk, sq->SK, c->hkv, c->dqk);
    p.dv = portattn_tensor_bshd(rv, sq->SK, c->hkv, c->dv);
    p.causal = f.causal, p.window_left = f.window_left, p.window_right = f.window_right, p.softcap = f.softcap;
    p.softmax_scale = f.softmax_scale, p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
    return portattn_backward(&p, NULL);
}

/* One gradient checked: every logical element finite and within the bound, the padding untouched. */
typedef struct gcheck {
    double err, naive, bound, max_ref;
    long long bad, pad;
} gcheck;

static gcheck compare(portattn_dtype_t dt, const arg *a, int64_t nb, int64_t S, int64_t H, int64_t D, const float *ref,
                      const float *naive)
{
    gcheck g = {0, 0, 0, 0, 0, 0};
    const int esz = pa_dtype_size(dt);
    unsigned char *covered = calloc((size_t)a->t.elems + 1, 1);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t d = 0; d < D; d++) {
                    const int64_t o = off(&a->t, b, s, h, d), l = ((b * S + s) * H + h) * D + d;
                    if (covered) covered[o] = 1;
                    const double got = pa_load_elem(dt, a->host, o);
                    if (!isfinite(got)) { g.bad++; continue; }
                    g.err = fmax(g.err, fabs(got - ref[l]));
                    g.naive = fmax(g.naive, fabs((double)naive[l] - ref[l]));
                    g.max_ref = fmax(g.max_ref, fabs(ref[l]));
                }
    const unsigned char *bytes = a->host;
    for (int64_t e = 0; covered && e < a->t.elems; e++)
        if (!covered[e])
            for (int i = 0; i < esz; i++) g.pad += bytes[e * esz + i] != POISON;
    free(covered);
    /* Floors: the rounding of the gradient itself (lowp), or fp32 accumulation noise; and 1e-6 for a
     * gradient that is exactly 0 in exact arithmetic (one visible key: dQ = dK = 0), where fp32
     * cancellation in dO.V - dO.O leaves ~1e-8 that the exact reference and the naive one do not. */
    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : dt == PORTATTN_DTYPE_BF16 ? 1.0 / 256 : 0;
    g.bound = fmax(fmax(3 * g.naive, u ? 2 * u * g.max_ref : 1e-5 * fmax(1, g.max_ref)), 1e-6);
    return g;
}

/* dq, dk, dv (downloaded into a[5..7].host) against the oracle, appended to the note with `tag`. */
static int compare_grads(portattn_dtype_t dt, const arg *a, int64_t nb, const int64_t *S_, const int64_t *H_,
                         const int64_t *D_, const float *const refs[3], const float *const naives[3], const char *tag,
                         char *note, size_t len)
{
    static const char *const names[3] = {"dq", "dk", "dv"};
    int pass = 1;
    size_t n = strlen(note);
    for (int i = 0; i < 3; i++) {
        gcheck g = compare(dt, &a[5 + i], nb, S_[5 + i], H_[5 + i], D_[5 + i], refs[i], naives[i]);
        pass &= !g.bad && !g.pad && g.err <= g.bound;
        if (n < len)
            n += (size_t)snprintf(note + n, len - n, " %s%s %.1e (bound %.1e)%s%s", tag, names[i], g.err, g.bound,
                                  g.bad ? " NON-FINITE/UNWRITTEN" : "", g.pad ? " WROTE PADDING" : "");
    }
    return pass;
}

/* A GPU backend may take another path without `deterministic` (atomics): the call once more in the
 * default mode, with a workspace of that mode's size, into re-poisoned gradients downloaded into
 * a[5..7].host. 0 when it fails (the status in *st). */
static int run_default_mode(portattn_bwd_params_t *p, dm_kind kind, arg *a, portattn_status_t *st)
{
    int failed = 0;
    for (int i = 5; i < 8; i++) {
        memset(a[i].host, POISON, a[i].bytes);
        failed |= dm_upload(kind, a[i].dev, a[i].host, a[i].bytes);
    }
    size_t bytes = 0;
    void *ws = NULL;
    p->deterministic = 0;
    p->workspace = NULL, p->workspace_size = 0; /* the deterministic run's is freed: never passed again */
    if (failed || (*st = portattn_backward_workspace_size(p, &bytes)) || (bytes && !(ws = dm_alloc(kind, bytes))))
        return 0;
    p->workspace = ws, p->workspace_size = bytes;
    failed = (*st = portattn_backward(p, NULL)) != PORTATTN_SUCCESS || dm_sync(kind);
    for (int i = 5; i < 8 && !failed; i++) failed |= dm_download(kind, a[i].host, a[i].dev, a[i].bytes);
    dm_free(kind, ws);
    return !failed;
}

/* The check of a backend that declines the deterministic mode (why in note): its default mode alone.
 * RUN_NOT_SUPPORTED if it declines that too. */
static run_result run_nondet_only(portattn_dtype_t dt, portattn_bwd_params_t *p, dm_kind kind, arg *a, int64_t nb,
                                  const int64_t *S_, const int64_t *H_, const int64_t *D_, const float *const refs[3],
                                  const float *const naives[3], char *note, size_t len)
{
    portattn_status_t st = PORTATTN_SUCCESS;
    size_t n = strlen(note);
    if (!run_default_mode(p, kind, a, &st)) {
        if (st == PORTATTN_ERROR_NOT_SUPPORTED) return RUN_NOT_SUPPORTED;
        snprintf(note + n, len - n, "; default mode failed: %s: %s", portattn_status_string(st), portattn_last_error());
        return RUN_FAIL;
    }
    snprintf(note + n, len - n, ";");
    return compare_grads(dt, a, nb, S_, H_, D_, refs, naives, " default ", note, len) ? RUN_PASS : RUN_FAIL;
}

run_result run_case_bwd(const tcase *c, portattn_dtype_t dt, portattn_backend_t backend, uint64_t seed)
{
    char note[512] = "";
    run_result res = RUN_FAIL;
    if (c->page || c->used || c->append) { /* KV-cache calls are inference only */
        printf("%-4s %-28s %-4s bwd: KV cache has no backward\n", "n/a", c->name, pa_dtype_name(dt));
        return RUN_NOT_SUPPORTED;
    }
    uint64_t rng = seed ^ ((uint64_t)dt << 40) ^ 0x5bd1e995u;
    for (const char *p = c->name; *p; p++) rng = rng * 1099511628211u ^ (uint64_t)*p;
    if (!rng) rng = 1;
    const int esz = pa_dtype_size(dt);
    const dm_kind kind = dm_kind_of(backend);

    seqs sq = {c->b, c->varlen ? 1 : c->b, 0, 0, calloc((size_t)c->b + 1, 4), calloc((size_t)c->b + 1, 4)};
    for (int64_t b = 0; sq.cuq && sq.cuk && b < c->b; b++) { /* varlen: random lengths, one empty of each */
        int64_t lq = c->sq, lk = c->sk;
        if (c->varlen && b > 0) {
            lq = b == 1 ? 0 : (int64_t)((urand(&rng) + 1) * 0.5 * (double)(c->sq + 1)) % (c->sq + 1);
            lk = b == 2 ? 0 : (int64_t)((urand(&rng) + 1) * 0.5 * (double)(c->sk + 1)) % (c->sk + 1);
        }
        sq.cuq[b + 1] = sq.cuq[b] + (int32_t)lq, sq.cuk[b + 1] = sq.cuk[b] + (int32_t)lk;
    }
    sq.SQ = c->varlen ? sq.cuq[c->b] : c->sq, sq.SK = c->varlen ? sq.cuk[c->b] : c->sk;
    const int64_t nq = sq.nb * sq.SQ * c->hq, nk = sq.nb * sq.SK * c->hkv;
    const int64_t lpad = c->layout == LAYOUT_PADDED ? 3 : 0, ls[3] = {c->hq * (sq.SQ + lpad), sq.SQ + lpad, 1};

    /* q, k, v, o, dout, dq, dk, dv in the case layout */
    arg a[8];
    memset(a, 0, sizeof a);
    const int64_t S_[8] = {sq.SQ, sq.SK, sq.SK, sq.SQ, sq.SQ, sq.SQ, sq.SK, sq.SK};
    const int64_t H_[8] = {c->hq, c->hkv, c->hkv, c->hq, c->hq, c->hq, c->hkv, c->hkv};
    const int64_t D_[8] = {c->dqk, c->dqk, c->dv, c->dv, c->dv, c->dqk, c->dqk, c->dv};
    int ok = sq.cuq && sq.cuk;
    for (int i = 0; i < 8; i++) ok &= arg_alloc(&a[i], kind, make_tens(c->layout, sq.nb, S_[i], H_[i], D_[i]), esz);
    const size_t lse_bytes = (size_t)(sq.nb * ls[0] + 1) * 4;
    float *dl = dm_alloc(kind, lse_bytes);
    int32_t *dcq = dm_alloc(kind, (size_t)(c->b + 1) * 4), *dck = dm_alloc(kind, (size_t)(c->b + 1) * 4);
    /* logical fp32 copies [T, H, D]: inputs, oracle O/LSE/gradients, naive gradients */
    const int64_t ln[11] = {nq * c->dqk, nk * c->dqk, nk * c->dv, nq * c->dv, nq * c->dv, sq.nb * c->hq * sq.SQ,
                            nq * c->dqk, nk * c->dqk, nk * c->dv, nq * c->dqk, nk * c->dqk};
    float *L[13];
    for (int i = 0; i < 11; i++) ok &= (L[i] = malloc(sizeof(float) * (size_t)(ln[i] + 1))) != NULL;
    ok &= (L[11] = malloc(sizeof(float) * (size_t)(nk * c->dv + 1))) != NULL;
    const int64_t wn = 3 * (sq.SK + 1) + c->dqk + 2 * (sq.SK + 1) * (c->dqk + c->dv);
    ok &= (L[12] = malloc(sizeof(float) * (size_t)wn)) != NULL;
    float *lq = L[0], *lk = L[1], *lv = L[2], *ldo = L[3], *lo = L[4], *ll = L[5], *rq = L[6], *rk = L[7], *rv = L[8];
    float *nq_ = L[9], *nk_ = L[10], *nv_ = L[11], *work = L[12];
    if (!ok || !dl || !dcq || !dck) {
        snprintf(note, sizeof note, "allocation failed");
        goto done;
    }

    /* Fresh dtype-exact inputs (junk in padding too) and their logical copies. */
    const float amp = c->amp > 0 ? c->amp : 1.0f;
    const int input[4] = {0, 1, 2, 4}; /* q, k, v, dout */
    float *logical[4] = {lq, lk, lv, ldo};
    for (int n = 0; n < 4; n++) {
        arg *x = &a[input[n]];
        for (int64_t e = 0; e < x->t.elems; e++) pa_store_elem(dt, x->host, e, (float)urand(&rng) * (n < 2 ? amp : 1.0f));
        for (int64_t b = 0; b < sq.nb; b++)
            for (int64_t s = 0; s < x->t.dim[1]; s++)
                for (int64_t h = 0; h < x->t.dim[2]; h++)
                    for (int64_t d = 0; d < x->t.dim[3]; d++)
                        logical[n][((b * x->t.dim[1] + s) * x->t.dim[2] + h) * x->t.dim[3] + d] =
                            pa_load_elem(dt, x->host, off(&x->t, b, s, h, d));
    }
    if (oracle(c, &sq, lq, lk, lv, ldo, lo, ll, rq, rk, rv)) {
        snprintf(note, sizeof note, "oracle failed: %s", portattn_last_error());
        goto done;
    }
    const float scale = c->scale != 0 ? c->scale : (float)(1.0 / sqrt((double)c->dqk));
    for (int64_t b = 0; b < c->b; b++) {
        const int64_t q0 = c->varlen ? sq.cuq[b] : b * sq.SQ, k0 = c->varlen ? sq.cuk[b] : b * sq.SK;
        naive_bwd_lowp(dt, c, lq, lk, lv, ldo, nq_, nk_, nv_, q0, sq.cuq[b + 1] - sq.cuq[b], k0,
                       sq.cuk[b + 1] - sq.cuk[b], scale, work);
    }

    /* The backend: forward (O, LSE), then backward into poisoned gradients. */
    for (int i = 5; i < 8; i++) memset(a[i].host, POISON, a[i].bytes);
    int up = 0;
    for (int i = 0; i < 8; i++) up |= i != 3 && dm_upload(kind, a[i].dev, a[i].host, a[i].bytes);
    up |= dm_upload(kind, dcq, sq.cuq, (size_t)(c->b + 1) * 4) || dm_upload(kind, dck, sq.cuk, (size_t)(c->b + 1) * 4);
    if (up) {
        snprintf(note, sizeof note, "upload failed");
        goto done;
    }
    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = dt, f.backend = backend, f.batch = c->b, f.seqlen_q = sq.SQ, f.seqlen_k = sq.SK;
    f.heads_q = c->hq, f.heads_kv = c->hkv, f.head_dim_qk = c->dqk, f.head_dim_v = c->dv;
    f.q = arg_tensor(&a[0]), f.k = arg_tensor(&a[1]), f.v = arg_tensor(&a[2]), f.o = arg_tensor(&a[3]);
    f.lse = dl, memcpy(f.lse_stride, ls, sizeof ls);
    f.causal = c->causal, f.window_left = c->wl, f.window_right = c->wr, f.softcap = c->softcap;
    f.softmax_scale = c->scale;
    if (c->varlen) f.cu_seqlens_q = dcq, f.cu_seqlens_k = dck, f.max_seqlen_q = c->sq, f.max_seqlen_k = c->sk;
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = dt, p.backend = backend, p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k;
    p.heads_q = f.heads_q, p.heads_kv = f.heads_kv, p.head_dim_qk = f.head_dim_qk, p.head_dim_v = f.head_dim_v;
    p.q = f.q, p.k = f.k, p.v = f.v, p.o = f.o, p.dout = arg_tensor(&a[4]);
    p.lse = dl, memcpy(p.lse_stride, ls, sizeof ls);
    p.dq = arg_tensor(&a[5]), p.dk = arg_tensor(&a[6]), p.dv = arg_tensor(&a[7]);
    p.causal = f.causal, p.window_left = f.window_left, p.window_right = f.window_right, p.softcap = f.softcap;
    p.softmax_scale = f.softmax_scale, p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
    p.max_seqlen_q = f.max_seqlen_q, p.max_seqlen_k = f.max_seqlen_k;
    void *ws = NULL;
    size_t ws_bytes = 0;
    p.deterministic = 1; /* before the workspace query: a deterministic backward may need more */
    portattn_status_t st = portattn_forward(&f, NULL);
    if (!st && !(st = portattn_backward_workspace_size(&p, &ws_bytes)) && ws_bytes) {
        if (!(ws = dm_alloc(kind, ws_bytes))) {
            snprintf(note, sizeof note, "workspace allocation failed");
            goto done;
        }
        p.workspace = ws, p.workspace_size = ws_bytes;
    }
    if (!st) st = portattn_backward(&p, NULL);
    if (st == PORTATTN_ERROR_NOT_SUPPORTED) {
        dm_free(kind, ws);
        snprintf(note, sizeof note, "bwd: %s", portattn_last_error());
        res = RUN_NOT_SUPPORTED;
        /* A GPU backend without a deterministic mode is still checked in its default mode. */
        if (kind != DM_HOST && strstr(note, "deterministic")) {
            const float *const refs[3] = {rq, rk, rv}, *const naives[3] = {nq_, nk_, nv_};
            res = run_nondet_only(dt, &p, kind, a, sq.nb, S_, H_, D_, refs, naives, note, sizeof note);
        }
        goto done;
    }
    /* deterministic: a second run into re-poisoned gradients must write the same bytes (the hosts
     * still hold the poison they were uploaded with) */
    unsigned char *first[3] = {NULL, NULL, NULL};
    int failed = st != PORTATTN_SUCCESS || dm_sync(kind), same = 1;
    for (int i = 0; i < 3 && !failed; i++)
        failed |= !(first[i] = malloc(a[5 + i].bytes)) || dm_download(kind, first[i], a[5 + i].dev, a[5 + i].bytes) ||
                  dm_upload(kind, a[5 + i].dev, a[5 + i].host, a[5 + i].bytes);
    if (!failed) failed = (st = portattn_backward(&p, NULL)) != PORTATTN_SUCCESS || dm_sync(kind);
    for (int i = 0; i < 3 && !failed; i++) {
        failed |= dm_download(kind, a[5 + i].host, a[5 + i].dev, a[5 + i].bytes);
        same &= !failed && memcmp(first[i], a[5 + i].host, a[5 + i].bytes) == 0;
    }
    for (int i = 0; i < 3; i++) free(first[i]);
    dm_free(kind, ws);
    if (failed) {
        snprintf(note, sizeof note, "run failed: %s: %s", portattn_status_string(st), portattn_last_error());
        goto done;
    }

    const float *const refs[3] = {rq, rk, rv}, *const naives[3] = {nq_, nk_, nv_};
    snprintf(note, sizeof note, "bwd%s", same ? "" : " NOT DETERMINISTIC");
    int pass = compare_grads(dt, a, sq.nb, S_, H_, D_, refs, naives, "", note, sizeof note) && same;
    if (kind != DM_HOST) {
        size_t n = strlen(note);
        if (!run_default_mode(&p, kind, a, &st))
            snprintf(note + n, sizeof note - n, "; default mode failed: %s: %s", portattn_status_string(st),
                     portattn_last_error()), pass = 0;
        else
            pass &= compare_grads(dt, a, sq.nb, S_, H_, D_, refs, naives, "default ", note, sizeof note);
    }
    res = pass ? RUN_PASS : RUN_FAIL;

done:
    printf("%-4s %-28s %-4s %s\n", res == RUN_PASS ? "ok" : res == RUN_FAIL ? "FAIL" : "n/a", c->name, pa_dtype_name(dt),
           note);
    fflush(stdout);
    for (int i = 0; i < 8; i++) free(a[i].host), dm_free(kind, a[i].dev);
    dm_free(kind, dl), dm_free(kind, dcq), dm_free(kind, dck);
    for (int i = 0; i < 13; i++) free(L[i]);
    free(sq.cuq), free(sq.cuk);
    return res;
}
