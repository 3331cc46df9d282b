/* cuda-sm80's backward kernels (sm80_bwd_rows.cuh, sm80_bwd_kernel.cuh) on the CPU, a fiber per GPU
 * thread (sim_fiber.h, resumed in a random order that differs between runs), ldmatrix and mma.sync emulated by the lanes' posted operands (shim/pre.h): dq, dk, dv
 * against the CPU backend's backward on the same inputs. Covers d64, d96, d128 and d256, f16 and
 * bf16, GQA/MQA, causal with rows that see no key, windows, softcap, a negative scale, varlen with
 * empty sequences, whole blocks (the unmasked path) at d128 and d256, several key blocks per CTA (a
 * grid narrower than the key blocks), the deterministic mode's slices (run twice: bitwise equal) and
 * one query row. cp.async lands at once (f16 runs) or at the thread's wait (bf16 runs), the two ends
 * of what the hardware may do. Every gradient element must be written (NaN poison), close to the
 * CPU's, and padding untouched. The GPU compiles the same kernel source; this checks its index math
 * and its barriers without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vector>

#include "bwd_problem.h"
#include "portattn.h"
#include "sm80_bwd_rows.cuh"

static int failures;

struct cfg {
    const char *name;
    int64_t b, sq, sk, hq, hkv, d;
    int causal;
    int64_t wl, wr;
    float softcap, scale, amp;
    int pad;                /* gradients in a padded layout */
    int det;                /* deterministic mode: dQ slices */
    int gx;                 /* grid x of the main kernel in the default mode (0: one per key block) */
    int32_t cuq[4], cuk[4]; /* varlen when cuq[b] != 0: sq, sk are the totals */
    int bm = 0;             /* query rows per block (main() runs d64 at both of its shapes) */
};

static const cfg cfgs[] = {
    {"gqa2_d64_2kblocks", 1, 70, 150, 2, 1, 64, 0, -1, -1, 0, 0, 1, 0, 0, 0, {0}, {0}},
    {"causal_nokey_rows_d64_gx1", 1, 150, 100, 2, 2, 64, 1, -1, -1, 0, 0, 1, 1, 0, 1, {0}, {0}},
    {"window_softcap_d128_det", 1, 90, 200, 2, 1, 128, 0, 20, 40, 5, 0, 2, 0, 2, 0, {0}, {0}},
    {"varlen_causal_negscale_d64", 3, 150, 170, 4, 2, 64, 1, -1, -1, 0, -0.2f, 1, 1, 0, 0, {0, 80, 80, 150},
     {0, 130, 130, 170}},
    {"mqa_d128_det3", 2, 40, 300, 3, 1, 128, 0, -1, -1, 0, 0, 1, 0, 3, 0, {0}, {0}},
    {"one_row_five_keys_d128", 1, 1, 5, 1, 1, 128, 0, -1, -1, 0, 0, 1, 0, 0, 0, {0}, {0}},
    {"d96_causal_gqa3_det2", 2, 100, 140, 6, 2, 96, 1, -1, -1, 0, 0, 1, 1, 2, 0, {0}, {0}},
    {"d96_varlen_softcap", 3, 150, 170, 2, 2, 96, 0, -1, -1, 3, 0, 2, 0, 0, 0, {0, 80, 80, 150}, {0, 130, 130, 170}},
    {"gqa4_window_left_det2", 1, 200, 300, 8, 2, 64, 0, 10, -1, 0, 0, 1, 1, 2, 0, {0}, {0}},
    {"d128_full_blocks_gqa2", 1, 128, 256, 4, 2, 128, 0, -1, -1, 0, 0, 1, 0, 0, 0, {0}, {0}},
    {"d64_full_blocks_gqa2_det2", 1, 256, 256, 4, 2, 64, 0, -1, -1, 0, 0, 1, 0, 2, 0, {0}, {0}},
    {"d256_full_blocks_det2", 1, 128, 128, 2, 1, 256, 0, -1, -1, 0, 0, 1, 1, 2, 0, {0}, {0}},
    {"d256_causal_gqa2_2kblocks", 1, 100, 140, 4, 2, 256, 1, -1, -1, 0, 0, 1, 1, 0, 1, {0}, {0}},
    {"d256_window_softcap_det2", 1, 90, 150, 2, 1, 256, 0, 20, 40, 5, 0, 2, 0, 2, 0, {0}, {0}},
    {"d256_varlen_negscale", 3, 150, 170, 2, 2, 256, 1, -1, -1, 0, -0.2f, 1, 0, 0, 0, {0, 80, 80, 150},
     {0, 130, 130, 170}},
};

static uint64_t rng_state;
static float urand()
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* A BSHD tensor over a buffer; padded: a gap of 8 elements after every head row and sequence row
 * (16-byte rows, as the kernels need). */
struct buf {
    portattn_tensor_t t;
    std::vector<unsigned char> mem;
    int64_t elems;
};

static buf make_buf(int64_t nb, int64_t s, int64_t h, int64_t d, int pad)
{
    buf r;
    const int64_t hs = d + (pad ? 8 : 0), ss = h * hs + (pad ? 8 : 0), bs = s * ss + (pad ? 8 : 0);
    r.elems = nb * bs + 8;
    r.mem.assign((size_t)(r.elems * 2) + 16, 0xFF); /* NaN in f16 and bf16 */
    uintptr_t p = (uintptr_t)r.mem.data();
    r.t = {(void *)((p + 15) / 16 * 16), {bs, ss, hs, 1}};
    return r;
}

/* What pa_fwd_fill_args and pa_sm80_bwd_launch make of the problem. */
static sm80_bwd_args fill_args(const pa_bwd_problem &bp, int splits, int64_t sqp, int bm)
{
    const portattn_fwd_params_t &p = bp.fwd.p;
    sm80_bwd_args a;
    memset(&a, 0, sizeof a);
    pa_fwd_args &f = a.f;
    f.q = p.q.data, f.k = p.k.data, f.v = p.v.data, f.o = p.o.data, f.lse = p.lse;
    if (bp.fwd.varlen) f.cu_q = p.cu_seqlens_q, f.cu_k = p.cu_seqlens_k;
    for (int i = 0; i < 3; ++i) {
        f.qs[i] = p.q.stride[i], f.ks[i] = p.k.stride[i], f.vs[i] = p.v.stride[i], f.os[i] = p.o.stride[i];
        f.ls[i] = p.lse_stride[i];
        a.dos[i] = bp.dout.stride[i], a.dqs[i] = bp.dq.stride[i];
        a.dks[i] = bp.dk.stride[i], a.dvs[i] = bp.dv.stride[i];
    }
    f.batch = (int)p.batch, f.heads = (int)p.heads_q, f.group = (int)bp.fwd.group;
    f.dqk = f.dv = (int)p.head_dim_qk, f.seqlen_q = (int)p.seqlen_q, f.seqlen_k = (int)p.seqlen_k;
    f.wl = (int)bp.fwd.window_left, f.wr = (int)bp.fwd.window_right;
    const double log2e = 1.4426950408889634, cap = p.softcap;
    f.softcap = cap > 0, f.transform = f.softcap || bp.fwd.scale < 0.f;
    f.mult = f.transform ? 1.f : (float)(bp.fwd.scale * log2e);
    f.pre_mul = f.softcap ? (float)((double)bp.fwd.scale / cap) : (float)(bp.fwd.scale * log2e);
    f.post_mul = f.softcap ? (float)(cap * log2e) : 1.f;
    a.dout = bp.dout.data, a.dq = bp.dq.data, a.dk = bp.dk.data, a.dv = bp.dv.data;
    a.sqp = (int)sqp, a.max_sq = (int)bp.fwd.max_seqlen_q, a.splits = splits, a.deterministic = splits > 1;
    a.scale = bp.fwd.scale, a.bm = bm;
    return a;
}

template <typename T, int D>
static void run_kernels(const sm80_bwd_args &a, const cfg &c, int64_t max_sk)
{
    const int rpb = SM80B_ROW_THREADS / SM80B_TPR(D), nkb = (int)((max_sk + PA_SM80_BWD_BN(D) - 1) / PA_SM80_BWD_BN(D));
    const sim_dim3 rows = {(unsigned)((a.sqp + rpb - 1) / rpb), (unsigned)c.hq, (unsigned)c.b};
    const unsigned gx = (unsigned)(a.deterministic ? a.splits : c.gx ? c.gx : nkb);
    failures += sim_launch(sm80_bwd_prep<T, D>, rows, SM80B_ROW_THREADS, a);
    const sim_dim3 grid = {gx, (unsigned)c.hkv, (unsigned)c.b};
    if (a.bm == 64)
        failures += sim_launch(sm80_bwd_main<T, D, 64>, grid, PA_SM80_BWD_WARPS * 32, a);
    else
        failures += sim_launch(sm80_bwd_main<T, D, PA_SM80_BWD_BM_MAX(D)>, grid, PA_SM80_BWD_WARPS * 32, a);
    failures += sim_launch(sm80_bwd_dq<T, D>, rows, SM80B_ROW_THREADS, a);
}

template <typename T>
static void run_dim(const sm80_bwd_args &a, const cfg &c, int64_t max_sk)
{
    c.d == 64 ? run_kernels<T, 64>(a, c, max_sk) : c.d == 96 ? run_kernels<T, 96>(a, c, max_sk)
    : c.d == 128                                              ? run_kernels<T, 128>(a, c, max_sk)
                                                              : run_kernels<T, 256>(a, c, max_sk);
}

static void run(const cfg &c, portattn_dtype_t dt)
{
    const int varlen = c.cuq[c.b] != 0;
    const int64_t nb = varlen ? 1 : c.b;
    buf q = make_buf(nb, c.sq, c.hq, c.d, 0), k = make_buf(nb, c.sk, c.hkv, c.d, 0);
    buf v = make_buf(nb, c.sk, c.hkv, c.d, 0), o = make_buf(nb, c.sq, c.hq, c.d, 0);
    buf dout = make_buf(nb, c.sq, c.hq, c.d, 0);
    buf g[2][3]; /* [reference, kernel][dq, dk, dv] */
    const int64_t gs[3] = {c.sq, c.sk, c.sk}, gh[3] = {c.hq, c.hkv, c.hkv};
    for (int r = 0; r < 2; ++r)
        for (int i = 0; i < 3; ++i) g[r][i] = make_buf(nb, gs[i], gh[i], c.d, c.pad);
    buf *in[4] = {&q, &k, &v, &dout};
    for (int n = 0; n < 4; ++n)
        for (int64_t e = 0; e < in[n]->elems; ++e) pa_store_elem(dt, in[n]->t.data, e, urand() * (n < 2 ? c.amp : 1.f));
    std::vector<float> lse((size_t)(nb * c.hq * c.sq + 1), NAN);

    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = dt, f.backend = PORTATTN_BACKEND_CPU, f.batch = c.b, f.seqlen_q = c.sq, f.seqlen_k = c.sk;
    f.heads_q = c.hq, f.heads_kv = c.hkv, f.head_dim_qk = c.d, f.head_dim_v = c.d;
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

    /* The problem as the front end resolves it for a backend (windows as fwd_resolve.c leaves them). */
    pa_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    bp.fwd.p = f;
    bp.fwd.scale = c.scale != 0 ? c.scale : (float)(1.0 / sqrt((double)c.d));
    bp.fwd.window_left = c.wl, bp.fwd.window_right = c.causal ? 0 : c.wr;
    bp.fwd.varlen = varlen, bp.fwd.group = c.hq / c.hkv;
    int64_t mq = c.sq, mk = c.sk;
    if (varlen) {
        mq = mk = 0;
        for (int64_t b = 0; b < c.b; ++b) {
            mq = c.cuq[b + 1] - c.cuq[b] > mq ? c.cuq[b + 1] - c.cuq[b] : mq;
            mk = c.cuk[b + 1] - c.cuk[b] > mk ? c.cuk[b + 1] - c.cuk[b] : mk;
        }
    }
    bp.fwd.max_seqlen_q = mq, bp.fwd.max_seqlen_k = mk;
    bp.dout = dout.t, bp.dq = g[1][0].t, bp.dk = g[1][1].t, bp.dv = g[1][2].t;
    const int splits = c.det ? c.det : 1;
    const int64_t bmax = PA_SM80_BWD_BM_MAX(c.d), sqp = (mq + bmax - 1) / bmax * bmax;
    const size_t rows = (size_t)(c.b * c.hq * sqp);
    std::vector<float> ws(rows * (2 + (size_t)splits * (size_t)c.d) + 4, NAN);
    sm80_bwd_args a = fill_args(bp, splits, sqp, c.bm);
    a.lse2 = ws.data(), a.delta = a.lse2 + rows, a.dq_acc = a.delta + rows;
    memset(a.dq_acc, 0, rows * (size_t)splits * (size_t)c.d * 4);
    sim_late_copies = dt == PORTATTN_DTYPE_BF16; /* f16 runs land cp.async at once, bf16 runs at the wait */
    /* Deterministic mode runs twice, gradients re-poisoned and dQ sums cleared in between: the
     * threads interleave differently each time, the results must not differ in a bit. */
    std::vector<unsigned char> first[3];
    for (int pass = 0; pass < (c.det ? 2 : 1); ++pass) {
        urand(); /* the threads interleave differently on each pass */
        sim_order((unsigned)(rng_state >> 32) | 1u);
        if (pass) {
            for (int i = 0; i < 3; ++i) first[i] = g[1][i].mem, memset(g[1][i].mem.data(), 0xFF, g[1][i].mem.size());
            memset(a.dq_acc, 0, rows * (size_t)splits * (size_t)c.d * 4);
        }
        if (dt == PORTATTN_DTYPE_F16)
            run_dim<__half>(a, c, mk);
        else
            run_dim<__nv_bfloat16>(a, c, mk);
    }
    int stable = 1;
    for (int i = 0; i < 3 && c.det; ++i) stable &= first[i] == g[1][i].mem;
    if (!stable) {
        printf("FAIL %s: deterministic mode gave different bits on a second run\n", c.name);
        failures++;
    }

    /* The kernel rounds P and dS to the dtype before its products, as FlashAttention-2 does. */
    static const char *const names[3] = {"dq", "dk", "dv"};
    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
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
        const double bound = 8 * u * mag;
        ok &= mism == 0 && err <= bound && mag > 0;
        n += (size_t)snprintf(note + n, sizeof note - n, " %s %.1e (bound %.1e, max %.1e)%s", names[i], err, bound, mag,
                              mism ? " WRITTEN/UNWRITTEN MISMATCH" : "");
    }
    failures += !ok;
    printf("%-4s %-28s bm%-3d %-4s %-5s%s\n", ok ? "ok" : "FAIL", c.name, c.bm, dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16",
           sim_late_copies ? "late" : "early", note);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed ? seed : 1;
    for (const cfg &c0 : cfgs) {
        if (argc > 1 && !strstr(c0.name, argv[1])) continue;
        /* every shape the head dim builds: d64's 64 rows (what runs on devices with less shared
         * memory) and 128 */
        for (int bm : {64, PA_SM80_BWD_BM_MAX(c0.d)}) {
            cfg c = c0;
            c.bm = bm;
            for (portattn_dtype_t dt : {PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
            if (PA_SM80_BWD_BM_MAX(c0.d) == 64) break;
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
