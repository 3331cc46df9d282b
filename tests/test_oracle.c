/* Checks the oracle itself: the CPU backend against an independent, deliberately plain double
 * implementation (full score matrix, per-key mask predicate), against closed-form answers, and
 * the fp16/bf16 conversions it rests on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "harness.h"

static int failures, checks;

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        checks++;                                                                                       \
        if (!(cond)) {                                                                                  \
            failures++;                                                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
            printf(__VA_ARGS__);                                                                        \
            printf("\n");                                                                               \
        }                                                                                               \
    } while (0)

typedef struct shape {
    int64_t b, sq, sk, hq, hkv, dqk, dv, wl, wr;
    int causal, bhsd;
    float softcap, scale;
} shape;

/* Plain attention in double, straight from the definitions in portattn.h. */
static void naive(const shape *s, const float *q, const float *k, const float *v, double *o, double *lse)
{
    int64_t g = s->hq / s->hkv;
    double scale = s->scale ? s->scale : 1.0 / sqrt((double)s->dqk);
    double *w = malloc(sizeof(double) * (size_t)(s->sk + 1));
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < s->sk; j++) {
                    int64_t shift = s->sk - s->sq; /* bottom-right alignment */
                    int right = s->causal ? 0 : s->wr;
                    int visible = (s->wl < 0 || j >= i + shift - s->wl) && (right < 0 || j <= i + shift + right);
                    double dot = 0;
                    for (int64_t d = 0; d < s->dqk; d++)
                        dot += (double)q[((b * s->sq + i) * s->hq + h) * s->dqk + d] *
                               (double)k[((b * s->sk + j) * s->hkv + h / g) * s->dqk + d];
                    dot *= scale;
                    if (s->softcap > 0) dot = s->softcap * tanh(dot / s->softcap);
                    w[j] = visible ? dot : -INFINITY;
                    mx = fmax(mx, w[j]);
                }
                for (int64_t j = 0; j < s->sk; j++) sum += w[j] = isinf(w[j]) ? 0 : exp(w[j] - mx);
                for (int64_t d = 0; d < s->dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < s->sk; j++) acc += w[j] * v[((b * s->sk + j) * s->hkv + h / g) * s->dv + d];
                    o[((b * s->sq + i) * s->hq + h) * s->dv + d] = sum > 0 ? acc / sum : 0;
                }
                lse[(b * s->hq + h) * s->sq + i] = sum > 0 ? mx + log(sum) : -INFINITY;
            }
    free(w);
}

/* Runs the CPU backend on contiguous BSHD (or BHSD-strided) fp32 buffers. */
static portattn_status_t cpu(const shape *s, const float *q, const float *k, const float *v, float *o, float *lse)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32, p.backend = PORTATTN_BACKEND_CPU;
    p.batch = s->b, p.seqlen_q = s->sq, p.seqlen_k = s->sk, p.heads_q = s->hq, p.heads_kv = s->hkv;
    p.head_dim_qk = s->dqk, p.head_dim_v = s->dv;
    p.q = portattn_tensor_bshd((void *)q, s->sq, s->hq, s->dqk);
    p.k = portattn_tensor_bshd((void *)k, s->sk, s->hkv, s->dqk);
    p.v = portattn_tensor_bshd((void *)v, s->sk, s->hkv, s->dv);
    p.o = portattn_tensor_bshd(o, s->sq, s->hq, s->dv);
    p.lse = lse, p.lse_stride[0] = s->hq * s->sq, p.lse_stride[1] = s->sq, p.lse_stride[2] = 1;
    p.causal = s->causal, p.window_left = s->wl, p.window_right = s->wr;
    p.softcap = s->softcap, p.softmax_scale = s->scale;
    return portattn_forward(&p, NULL);
}

static void compare_with_naive(const char *name, shape s, uint64_t *rng)
{
    int64_t nq = s.b * s.sq * s.hq, nk = s.b * s.sk * s.hkv;
    float *q = malloc(sizeof(float) * (size_t)(nq * s.dqk)), *k = malloc(sizeof(float) * (size_t)(nk * s.dqk));
    float *v = malloc(sizeof(float) * (size_t)(nk * s.dv)), *o = malloc(sizeof(float) * (size_t)(nq * s.dv));
    float *lse = malloc(sizeof(float) * (size_t)nq);
    double *ro = malloc(sizeof(double) * (size_t)(nq * s.dv)), *rl = malloc(sizeof(double) * (size_t)nq);
    for (int64_t i = 0; i < nq * s.dqk; i++) q[i] = (float)urand(rng);
    for (int64_t i = 0; i < nk * s.dqk; i++) k[i] = (float)urand(rng);
    for (int64_t i = 0; i < nk * s.dv; i++) v[i] = (float)urand(rng);
    memset(o, 0xff, sizeof(float) * (size_t)(nq * s.dv));
    naive(&s, q, k, v, ro, rl);
    portattn_status_t st = cpu(&s, q, k, v, o, lse);
    CHECK(st == PORTATTN_SUCCESS, "%s: %s", name, portattn_last_error());
    double worst = 0, worst_lse = 0;
    for (int64_t i = 0; i < nq * s.dv; i++) worst = fmax(worst, isnan(o[i]) ? INFINITY : fabs(o[i] - ro[i]));
    for (int64_t i = 0; i < nq; i++)
        worst_lse = fmax(worst_lse, isinf(rl[i]) ? (lse[i] == rl[i] ? 0 : INFINITY) : fabs(lse[i] - rl[i]));
    CHECK(worst < 1e-6 && worst_lse < 1e-5, "%s: max |O - naive| %.2e, |LSE - naive| %.2e", name, worst, worst_lse);
    printf("%-4s oracle vs naive %-24s max_err %.1e lse_err %.1e\n", worst < 1e-6 && worst_lse < 1e-5 ? "ok" : "FAIL",
           name, worst, worst_lse);
    free(q), free(k), free(v), free(o), free(lse), free(ro), free(rl);
}

static void closed_forms(uint64_t *rng)
{
    /* One key: O is V exactly, LSE is the scaled score. */
    shape s = {1, 5, 1, 2, 1, 8, 8, -1, -1, 0, 0, 0, 0};
    float q[5 * 2 * 8], k[8], v[8], o[5 * 2 * 8], lse[10];
    for (int i = 0; i < 80; i++) q[i] = (float)urand(rng);
    for (int i = 0; i < 8; i++) k[i] = (float)urand(rng), v[i] = (float)urand(rng);
    CHECK(cpu(&s, q, k, v, o, lse) == PORTATTN_SUCCESS, "sk=1: %s", portattn_last_error());
    for (int i = 0; i < 80; i++) CHECK(o[i] == v[i % 8], "sk=1: O[%d] = %g, expected V = %g", i, o[i], v[i % 8]);

    /* Identical keys: uniform weights, O = mean of V, LSE = score + log(Sk). */
    shape u = {1, 1, 4, 1, 1, 2, 1, -1, -1, 0, 0, 0, 1.0f};
    float uq[2] = {0.5f, -1}, uk[8] = {1, 2, 1, 2, 1, 2, 1, 2}, uv[4] = {1, 2, 3, 6}, uo[1], ul[1];
    CHECK(cpu(&u, uq, uk, uv, uo, ul) == PORTATTN_SUCCESS, "uniform: %s", portattn_last_error());
    CHECK(fabsf(uo[0] - 3.0f) < 1e-6f, "uniform: O = %g, expected 3", uo[0]);
    CHECK(fabs(ul[0] - (-1.5 + log(4.0))) < 1e-6, "uniform: LSE = %g, expected %g", ul[0], -1.5 + log(4.0));

    /* Causal with Sq > Sk: the first Sq - Sk rows see no key: O = 0, LSE = -inf. */
    shape c = {1, 4, 2, 1, 1, 2, 2, -1, -1, 1, 0, 0, 0};
    float cq[8], ck[4], cv[4], co[8], cl[4];
    for (int i = 0; i < 8; i++) cq[i] = (float)urand(rng);
    for (int i = 0; i < 4; i++) ck[i] = (float)urand(rng), cv[i] = (float)urand(rng);
    CHECK(cpu(&c, cq, ck, cv, co, cl) == PORTATTN_SUCCESS, "causal: %s", portattn_last_error());
    for (int i = 0; i < 2; i++) {
        CHECK(co[2 * i] == 0 && co[2 * i + 1] == 0, "masked row %d: O = (%g, %g)", i, co[2 * i], co[2 * i + 1]);
        CHECK(isinf(cl[i]) && cl[i] < 0, "masked row %d: LSE = %g", i, cl[i]);
    }
    CHECK(co[4] == cv[0] && co[5] == cv[1], "row 2 sees only key 0: O = (%g, %g)", co[4], co[5]);
}

static void conversions(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pa_f16_to_f32((uint16_t)h);
        if (!isnan(f) && pa_f32_to_f16(f) != h) bad++;
        float g = pa_bf16_to_f32((uint16_t)h);
        if (!isnan(g) && pa_f32_to_bf16(g) != h) bad++;
    }
    CHECK(bad == 0, "%d fp16/bf16 values do not round-trip", bad);
    CHECK(pa_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00, "f16 tie rounds to even (down)");
    CHECK(pa_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02, "f16 tie rounds to even (up)");
    CHECK(pa_f32_to_f16(65520.0f) == 0x7c00 && pa_f32_to_f16(65519.0f) == 0x7bff, "f16 overflow threshold");
    CHECK(pa_f32_to_f16(5.9604645e-8f) == 0x0001 && pa_f32_to_f16(2.9802322e-8f) == 0x0000, "f16 subnormals");
    CHECK(pa_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80 && pa_f32_to_bf16(1.0f + 3.0f / 256) == 0x3f82, "bf16 ties");
    CHECK(isnan(pa_bf16_to_f32(pa_f32_to_bf16(NAN))) && isnan(pa_f16_to_f32(pa_f32_to_f16(NAN))), "NaN stays NaN");
}

int main(void)
{
    uint64_t rng = test_seed();
    /*                                      b  sq  sk  hq hkv dqk dv  wl  wr causal bhsd softcap scale */
    compare_with_naive("plain", (shape){2, 17, 23, 2, 2, 16, 16, -1, -1, 0, 0, 0, 0}, &rng);
    compare_with_naive("causal_sq_gt_sk", (shape){1, 30, 12, 2, 1, 8, 8, -1, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("causal_sq_lt_sk", (shape){1, 12, 30, 4, 2, 8, 12, -1, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("window_5_3", (shape){2, 40, 40, 2, 2, 8, 8, 5, 3, 0, 0, 0, 0}, &rng);
    compare_with_naive("window_left_causal", (shape){1, 40, 50, 3, 1, 8, 8, 7, -1, 1, 0, 0, 0}, &rng);
    compare_with_naive("softcap_scale", (shape){1, 20, 20, 2, 2, 8, 8, -1, -1, 0, 0, 2.0f, 3.0f}, &rng);
    compare_with_naive("dqk_ne_dv", (shape){1, 9, 11, 8, 2, 24, 5, -1, 4, 0, 0, 0, 0}, &rng);
    closed_forms(&rng);
    conversions();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
