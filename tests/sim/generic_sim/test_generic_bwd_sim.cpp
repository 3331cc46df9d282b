/* cuda-generic's backward kernels (generic_bwd_kernel.cuh) on the CPU, every lane a fiber (sim_fiber.h), with
 * grids smaller than the problem so every grid-stride loop runs: dq, dk, dv against the CPU backend's
 * backward on the same inputs (GQA/MQA, Dqk != Dv up to 256, causal with rows that see no key,
 * windows, softcap, scale, varlen with empty sequences, padded gradient layouts), f32/f16/bf16.
 * Every gradient element must be written (NaN poison), close to the CPU's, and padding untouched.
 * The kernel source compiled for the GPU is the same file; this checks its logic without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vector>

#include "generic_bwd_kernel.cuh"
#include "half.h"
#include "portattn.h"

sim_warp sim_warps[32];

/* Every block of `grid` in turn, its warps side by side (the kernels never sync across warps). */
template <typename K>
static void sim_launch(K kernel, sim_dim3 grid, const pa_bwd_problem &bp, float inv_cap)
{
    sim_run_or_fail(grid, GB_THREADS, 32, [&] { kernel(bp, inv_cap); });
}

struct cfg {
    const char *name;
    int64_t b, sq, sk, hq, hkv, dqk, dv;
    int causal;
    int64_t wl, wr;
    float softcap, scale, amp;
    int pad;               /* gradients in a padded layout */
    int32_t cuq[4], cuk[4]; /* varlen when cuq[b] != 0: sq, sk are the totals */
};

static const cfg cfgs[] = {
    {"gqa_causal_d40_v24", 2, 13, 19, 4, 2, 40, 24, 1, -1, -1, 0, 0, 1, 0, {0}, {0}},
    {"mqa_window_softcap", 2, 11, 9, 3, 1, 16, 16, 0, 3, 2, 4, 0, 2, 1, {0}, {0}},
    {"nokey_rows_scale_d64", 1, 20, 7, 2, 2, 64, 64, 1, -1, -1, 0, 0.5f, 1, 0, {0}, {0}},
    {"d256", 1, 5, 6, 2, 1, 256, 256, 0, -1, -1, 0, 0, 1, 1, {0}, {0}},
    {"varlen_gqa_causal_padded", 3, 17, 21, 4, 2, 8, 12, 1, -1, -1, 0, 0, 1, 1, {0, 9, 9, 17}, {0, 12, 12, 21}},
    {"varlen_window_nokey_seq", 3, 14, 10, 2, 1, 24, 8, 0, 2, 4, 3, 0, 1, 0, {0, 6, 6, 14}, {0, 5, 10, 10}},
};

static uint64_t rng_state;
static float urand()
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* A BSHD tensor over a buffer, with a gap after every head row and sequence row when padded. */
struct buf {
    portattn_tensor_t t;
    std::vector<unsigned char> mem;
    int64_t elems;
};

static buf make_buf(int64_t nb, int64_t s, int64_t h, int64_t d, int pad, int esz)
{
    buf r;
    const int64_t hs = d + (pad ? 3 : 0), ss = h * hs + (pad ? 5 : 0), bs = s * ss + (pad ? 7 : 0);
    r.elems = nb * bs + 8;
    r.mem.assign((size_t)(r.elems * esz), 0xFF); /* NaN in f32, f16 and bf16 */
    r.t = {r.mem.data(), {bs, ss, hs, 1}};
    return r;
}

static int failures;

static void run(const cfg &c, portattn_dtype_t dt)
{
    const int esz = dt == PORTATTN_DTYPE_F32 ? 4 : 2, varlen = c.cuq[c.b] != 0;
    const int64_t nb = varlen ? 1 : c.b;
    buf q = make_buf(nb, c.sq, c.hq, c.dqk, 0, esz), k = make_buf(nb, c.sk, c.hkv, c.dqk, 0, esz);
    buf v = make_buf(nb, c.sk, c.hkv, c.dv, 0, esz), o = make_buf(nb, c.sq, c.hq, c.dv, 0, esz);
    buf dout = make_buf(nb, c.sq, c.hq, c.dv, 0, esz);
    buf g[2][3]; /* [reference, kernel][dq, dk, dv] */
    const int64_t gs[3] = {c.sq, c.sk, c.sk}, gh[3] = {c.hq, c.hkv, c.hkv}, gd[3] = {c.dqk, c.dqk, c.dv};
    for (int r = 0; r < 2; ++r)
        for (int i = 0; i < 3; ++i) g[r][i] = make_buf(nb, gs[i], gh[i], gd[i], c.pad, esz);
    buf *in[4] = {&q, &k, &v, &dout};
    for (int n = 0; n < 4; ++n)
        for (int64_t e = 0; e < in[n]->elems; ++e) pa_store_elem(dt, in[n]->t.data, e, urand() * (n < 2 ? c.amp : 1.f));
    std::vector<float> lse((size_t)(nb * c.hq * c.sq + 1), NAN);

    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = dt, f.backend = PORTATTN_BACKEND_CPU, f.batch = c.b, f.seqlen_q = c.sq, f.seqlen_k = c.sk;
    f.heads_q = c.hq, f.heads_kv = c.hkv, f.head_dim_qk = c.dqk, f.head_dim_v = c.dv;
    f.q = q.t, f.k = k.t, f.v = v.t, f.o = o.t, f.lse = lse.data();
    f.lse_stride[0] = c.hq * c.sq, f.lse_stride[1] = c.sq, f.lse_stride[2] = 1;
    f.causal = c.causal, f.window_left = c.wl, f.window_right = c.wr, f.softcap = c.softcap, f.softmax_scale = c.scale;
    if (varlen) f.cu_seqlens_q = c.cuq, f.cu_seqlens_k = c.cuk;
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = dt, p.backend = PORTATTN_BACKEND_CPU, p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k;
    p.heads_q = f.heads_q, p.heads_kv = f.heads_kv, p.head_dim_qk = f.head_dim_qk, p.head_dim_v = f.head_dim_v;
    p.q = f.q, p.k = f.k, p.v = f.v, p.o = f.o, p.dout = dout.t, p.lse = f.lse;
    memcpy(p.lse_stride, f.lse_stride, sizeof p.lse_stride);
    p.dq = g[0][0].t, p.dk = g[0][1].t, p.dv = g[0][2].t;
    p.causal = f.causal, p.window_left = f.window_left, p.window_right = f.window_right, p.softcap = f.softcap;
    p.softmax_scale = f.softmax_scale, p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
    if (portattn_forward(&f, NULL) || portattn_backward(&p, NULL)) {
        printf("FAIL %s: CPU reference: %s\n", c.name, portattn_last_error());
        failures++;
        return;
    }

    /* The problem as the front end resolves it for a backend. */
    pa_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    bp.fwd.p = f;
    bp.fwd.scale = c.scale != 0 ? c.scale : (float)(1.0 / sqrt((double)c.dqk));
    bp.fwd.window_left = c.wl, bp.fwd.window_right = c.causal ? 0 : c.wr;
    bp.fwd.varlen = varlen, bp.fwd.group = c.hq / c.hkv;
    bp.fwd.max_seqlen_q = c.sq, bp.fwd.max_seqlen_k = c.sk;
    bp.dout = dout.t, bp.dq = g[1][0].t, bp.dk = g[1][1].t, bp.dv = g[1][2].t;
    const float inv_cap = c.softcap > 0 ? 1.f / c.softcap : 0.f;
    const sim_dim3 grid = {2, 2, 2}; /* fewer blocks than rows, heads and sequences */
    switch (dt) {
    case PORTATTN_DTYPE_F16:
        sim_launch(gen_bwd_dq<__half>, grid, bp, inv_cap), sim_launch(gen_bwd_dkdv<__half>, grid, bp, inv_cap);
        break;
    case PORTATTN_DTYPE_BF16:
        sim_launch(gen_bwd_dq<__nv_bfloat16>, grid, bp, inv_cap);
        sim_launch(gen_bwd_dkdv<__nv_bfloat16>, grid, bp, inv_cap);
        break;
    default: sim_launch(gen_bwd_dq<float>, grid, bp, inv_cap), sim_launch(gen_bwd_dkdv<float>, grid, bp, inv_cap);
    }

    static const char *const names[3] = {"dq", "dk", "dv"};
    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : dt == PORTATTN_DTYPE_BF16 ? 1.0 / 256 : 0;
    int ok = 1;
    char note[256] = "";
    size_t n = 0;
    for (int i = 0; i < 3; ++i) {
        double err = 0, mag = 0;
        long long mism = 0;
        for (int64_t e = 0; e < g[0][i].elems; ++e) {
            const double r = pa_load_elem(dt, g[0][i].t.data, e), x = pa_load_elem(dt, g[1][i].t.data, e);
            if (isnan(r) || isnan(x)) { /* padding (NaN in both), or a row one side did not write */
                mism += isnan(r) != isnan(x);
                continue;
            }
            err = fmax(err, fabs(x - r)), mag = fmax(mag, fabs(r));
        }
        const double bound = u ? 2 * u * mag : 1e-5 * (1 + mag);
        ok &= mism == 0 && err <= bound && mag > 0;
        n += (size_t)snprintf(note + n, sizeof note - n, " %s %.1e (bound %.1e)%s", names[i], err, bound,
                              mism ? " WRITTEN/UNWRITTEN MISMATCH" : "");
    }
    failures += !ok;
    printf("%-4s %-26s %-4s%s\n", ok ? "ok" : "FAIL", c.name, dt == PORTATTN_DTYPE_F32 ? "f32" : dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16",
           note);
    fflush(stdout);
}

int main()
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed ? seed : 1;
    for (const cfg &c : cfgs)
        for (portattn_dtype_t dt : {PORTATTN_DTYPE_F32, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
    printf("%d failures\n", failures);
    return failures != 0;
}
