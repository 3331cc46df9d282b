/* The cuda-sm90 backward's main kernel (sm90_bwd_kernel.cuh) on the CPU, the forward simulation's way
 * (sm90_emu.h: wgmma computed at the wait that retires it, mbarriers, TMA): dq, dk, dv against the CPU
 * backend's backward on the same inputs. The row kernels around it are the host's here: D = rowsum(dO
 * * O) and the LSE in base 2 (+inf and 0 on padding rows) before, dQ = scale * the fp32 sums after, as
 * every CUDA backward's row kernels compute them. d64 and d128 (64-row items, each warpgroup's dQ half of
 * the columns: at d64 a descriptor 64 bytes into the swizzled rows), f16 and bf16, GQA/MQA, causal with rows that see no key, windows, several key
 * blocks, items that see no key block, padded gradient layouts; every gradient element must be written
 * (NaN poison) and close to the CPU's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "cuda.h"
#include "cuda_runtime.h"

alignas(1024) uint8_t smem_raw[232448];
static int sim_errors;
static char sim_error_text[256];
static void sim_fail(const char *what)
{
    if (sim_errors++ == 0) snprintf(sim_error_text, sizeof sim_error_text, "%s", what);
}

#include "sim_tma.h"

#include "sm90_emu.h"

#include "sm90_bwd_kernel.cuh"
#include "sim_bwd_args.h"
#include "sim_bwd_case.h"

static int failures;

/* {name, b, sq, sk, hq, hkv, dqk, dv, causal, wl, wr, softcap, scale, amp, pad, cuq, cuk} */
static const sim_bwd_case cases[] = {
    {"d64_gqa2_2kblocks", 1, 150, 300, 2, 1, 64, 64, 0, -1, -1, 0, 0, 1, 0, {0}, {0}},
    {"d64_causal_nokey_rows", 2, 150, 100, 2, 2, 64, 64, 1, -1, -1, 0, 0, 1, 1, {0}, {0}},
    {"d128_causal_gqa2", 1, 200, 200, 4, 2, 128, 128, 1, -1, -1, 0, 0, 1, 0, {0}, {0}},
    {"d128_window_20_40", 1, 90, 200, 2, 1, 128, 128, 0, 20, 40, 0, 0, 2, 1, {0}, {0}},
    {"d64_mqa_window_left", 1, 200, 300, 3, 1, 64, 64, 0, 10, -1, 0, 0, 1, 0, {0}, {0}},
    {"d128_full_blocks_gqa2", 1, 128, 256, 4, 2, 128, 128, 0, -1, -1, 0, 0, 1, 0, {0}, {0}},
    {"d64_one_row_five_keys", 1, 1, 5, 1, 1, 64, 64, 0, -1, -1, 0, 0, 1, 0, {0}, {0}},
};

/* A map of a BSHD tensor (16-bit elements) in boxes of 64 columns x rows. */
static CUtensorMap map_of(const portattn_tensor_t &t, int64_t b, int64_t s, int64_t h, int64_t d, int rows)
{
    CUtensorMap m;
    m.ptr = (const uint16_t *)t.data;
    m.dims[0] = d, m.dims[1] = s, m.dims[2] = h, m.dims[3] = b;
    m.strides[0] = t.stride[1] * 2, m.strides[1] = t.stride[2] * 2, m.strides[2] = t.stride[0] * 2;
    m.box_rows = rows;
    return m;
}

/* The rows' LSE_2 and D (the prologue), as every CUDA backward's row kernel writes them. */
static void prologue(const sim_bwd_run &r, const pa_bwd_args &a, portattn_dtype_t dt)
{
    const portattn_fwd_params_t &p = r.bp.fwd.p;
    for (int b = 0; b < a.f.batch; ++b)
        for (int h = 0; h < a.f.heads; ++h)
            for (int i = 0; i < a.sqp; ++i) {
                const int64_t w = ((int64_t)b * a.f.heads + h) * a.sqp + i;
                float l2 = INFINITY, d = 0.f;
                if (i < a.f.seqlen_q) {
                    const int64_t o = b * p.o.stride[0] + i * p.o.stride[1] + h * p.o.stride[2];
                    const int64_t g = b * r.bp.dout.stride[0] + i * r.bp.dout.stride[1] + h * r.bp.dout.stride[2];
                    for (int e = 0; e < a.f.dv; ++e) d = fmaf(pa_load_elem(dt, p.o.data, o + e), pa_load_elem(dt, r.bp.dout.data, g + e), d);
                    const float l = p.lse[b * p.lse_stride[0] + h * p.lse_stride[1] + i * p.lse_stride[2]];
                    l2 = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;
                }
                a.lse2[w] = l2, a.delta[w] = d;
            }
}

/* dQ = scale * the fp32 sums, in the dtype (the row kernel after the main one). */
static void epilogue(const sim_bwd_run &r, const pa_bwd_args &a, portattn_dtype_t dt)
{
    const portattn_tensor_t &q = r.bp.dq;
    for (int b = 0; b < a.f.batch; ++b)
        for (int h = 0; h < a.f.heads; ++h)
            for (int i = 0; i < a.f.seqlen_q; ++i)
                for (int e = 0; e < a.f.dqk; ++e)
                    pa_store_elem(dt, q.data, b * q.stride[0] + i * q.stride[1] + h * q.stride[2] + e,
                                  a.scale * a.dq_acc[(((int64_t)b * a.f.heads + h) * a.sqp + i) * a.f.dqk + e]);
}

template <typename T, int D> static void run_main(const sim_bwd_run &r, const pa_bwd_args &a)
{
    using S = sm90b_shape<D>;
    static_assert(S::SMEM <= (int)sizeof smem_raw, "shared memory");
    const portattn_fwd_params_t &p = r.bp.fwd.p;
    const CUtensorMap tq = map_of(p.q, p.batch, p.seqlen_q, p.heads_q, D, S::BM), tdo = map_of(r.bp.dout, p.batch, p.seqlen_q, p.heads_q, D, S::BM);
    const CUtensorMap tk = map_of(p.k, p.batch, p.seqlen_k, p.heads_kv, D, S::BN), tv = map_of(p.v, p.batch, p.seqlen_k, p.heads_kv, D, S::BN);
    const sim_dim3 grid = {(unsigned)((p.seqlen_k + S::BN - 1) / S::BN), (unsigned)p.heads_kv, (unsigned)p.batch};
    auto start = [&] {
        memset(smem_raw, 0xFF, sizeof smem_raw);
        sim_tma_reset();
        wg_reset();
    };
    auto thread = [&] {
        if (!sim_dead) sm90_bwd<T, D>(tq, tk, tv, tdo, a);
    };
    if (sim_run_blocks(grid, S::THREADS, 32, start, thread)) sim_fail("deadlock at a block or named barrier");
    for (const wg_state &g : wgs)
        if (!g.ops.empty()) sim_fail("wgmma issued and never retired by a wait");
}

static void run(const sim_bwd_case &c, portattn_dtype_t dt)
{
    sim_bwd_run r;
    if (sim_bwd_prepare(c, dt, 8, r)) {
        failures++;
        return;
    }
    const int64_t d = c.dqk, bm = 64, sqp = (r.bp.fwd.max_seqlen_q + 127) / 128 * 128;
    const size_t rows = (size_t)(c.b * c.hq * sqp);
    std::vector<float> ws(rows * (2 + (size_t)d) + 4, NAN);
    pa_bwd_args a = sim_bwd_args_of(r.bp, 1, sqp, (int)bm);
    a.lse2 = ws.data(), a.delta = a.lse2 + rows, a.dq_acc = a.delta + rows;
    memset(a.dq_acc, 0, rows * (size_t)d * 4);
    sim_errors = 0;
    prologue(r, a, dt);
    if (dt == PORTATTN_DTYPE_F16) d == 64 ? run_main<__half, 64>(r, a) : run_main<__half, 128>(r, a);
    else d == 64 ? run_main<__nv_bfloat16, 64>(r, a) : run_main<__nv_bfloat16, 128>(r, a);
    epilogue(r, a, dt);
    char note[320] = "";
    int ok = 0;
    if (sim_errors) snprintf(note, sizeof note, " SIMULATION ERROR: %s", sim_error_text);
    else {
        /* P and dS are rounded to the dtype before their products, as FlashAttention's kernels do. */
        const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
        ok = sim_bwd_compare(r, dt, [u](double mag) { return 8 * u * mag; }, note, sizeof note);
    }
    failures += !ok;
    sim_dead = false;
    printf("%-4s %-24s %-4s%s\n", ok ? "ok" : "FAIL", c.name, dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16", note);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    sim_seed();
    for (const sim_bwd_case &c : cases) {
        if (argc > 1 && !strstr(c.name, argv[1])) continue;
        for (portattn_dtype_t dt : {PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
    }
    /* Each injected fault must make a case fail. */
    static const struct { int mode; const char *what; } faults[] = {
        {INJ_PARITY, "an mbarrier wait with the wrong parity"},
        {INJ_NO_SWIZZLE, "TMA writing without the 128-byte swizzle"},
        {INJ_NO_LBO, "MN-major operands read without the descriptor's LBO"},
        {INJ_A_ROWS, "the register-A fragment's rows and columns swapped"},
    };
    for (const auto &f : faults) {
        const int before = failures;
        inject = f.mode, sim_fault_parity_tid = f.mode == INJ_PARITY ? 128 : -1, sim_fault_no_swizzle = f.mode == INJ_NO_SWIZZLE;
        run(cases[3], PORTATTN_DTYPE_F16);
        inject = INJ_NONE, sim_fault_parity_tid = -1, sim_fault_no_swizzle = false;
        const int caught = failures > before;
        failures = before + !caught;
        printf("  -> %-56s %s\n", f.what, caught ? "caught" : "NOT CAUGHT");
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
