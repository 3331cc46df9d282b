/* The cuda-sm90 kernel source on the CPU (no GPU): sm90_fwd_kernel.cuh compiled by g++ with
 * PA_SM90_HOST_SIM, a fiber per CUDA thread (sim_fiber.h; 384 or 512 per CTA, a few persistent CTAs
 * one after another, each walking several work items), and
 *  - mbarriers, TMA boxes with the 128-byte swizzle and zero fill, named barriers (sim_tma.h),
 *  - warp shuffles, ballots (the softmax's row reductions, the epilogue's quad transpose, the
 *    varlen walk's scan),
 *  - wgmma as the hardware runs it: each wgmma of a warpgroup is one operation, which exists once all
 *    128 threads have issued it (each thread's accumulator and A registers taken at issue) and is
 *    computed at the first wgmma.wait_group that retires its group, reading shared memory then and
 *    writing every thread's accumulators. Operands by descriptor (128-byte swizzle, K-major or, for
 *    the register-A form's B, N-major with LBO between 64-column blocks) or from the A fragments of
 *    the warps' 16-row slices; accumulators in the m64nNk16 layout. A kernel that reads an
 *    accumulator before its wait, rewrites one in flight or releases a K/V slot too early computes
 *    something else here.
 * Each case runs one instance of the real shape table (sm90_instances.h) and compares O and LSE with
 * a double-precision reference; injected faults must each fail a case. This checks the kernel's
 * barrier protocol, descriptors, fragment layouts, masks, schedule and softmax as written; it says
 * nothing about timing, and what ptxas makes of the code is the ISA gate's and the H200's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <deque>
#include <vector>

#include "cuda.h"
#include "cuda_runtime.h"
#include "fwd_args.h"
#include "half.h"
#include "sim_fwd_case.h"

/* ---- the simulated CTA ----------------------------------------------------------------- */
alignas(1024) uint8_t smem_raw[232448];
static int sim_errors;
static char sim_error_text[256];

static void sim_fail(const char *what)
{
    if (sim_errors++ == 0) snprintf(sim_error_text, sizeof sim_error_text, "%s", what);
}

#include "sim_tma.h"

#include "sm90_emu.h"

#include "sm90_fwd_kernel.cuh"

/* ---- cases --------------------------------------------------------------------------------- */
struct sm90_case {
    sim_fwd_case c;
    int nc_short; /* the short-query shape (PA_SM90_NC_SHORT) */
    int ctas;     /* persistent CTAs (each walks several items) */
    int l2_pairs; /* the launcher's L2 budget in (batch, head) pairs: small makes causal chunks */
};

/* One instance of the shape table: head dim D, NC consumer warpgroups, its K/V tile and ring; over a KV
 * cache (KV) the KV row's ring and GQA packing (pa_sm90_qpack: the group, where it fits the block). */
template <typename T, int D, int NC, bool VL, bool KV> static void launch(const sm90_case &k, sim_fwd_problem &p)
{
    constexpr int BN = PA_SM90_BN(D), ST = KV ? PA_SM90_KV_STAGES(D) : PA_SM90_STAGES(D), BM = PA_SM90_BM_NC(NC);
    static_assert(PA_SM90_SMEM_SHAPE(D, NC, BN, ST) <= (int)sizeof smem_raw, "shared memory");
    const int g = KV && PA_SM90_KV_PACK_GQA && p.a.group > 1 && p.a.group <= BM ? p.a.group : 1, rows = BM / g;
    p.a.kv.qpack = g;
    const CUtensorMap tq = p.map_q(rows, g), tk = p.map_k(BN), tv = p.map_v(BN);
    const int nmb = (p.maxq + rows - 1) / rows;
    const int64_t pairs = (int64_t)p.a.batch * (p.a.heads / g), nwork = nmb * pairs;
    const int grid = (int)(nwork < k.ctas ? nwork : k.ctas);
    const int chunk = sm90_chunk(pairs, g > 1 ? 1 : p.a.group, k.l2_pairs / g, nmb, grid);
    auto start = [&] {
        memset(smem_raw, 0xFF, sizeof smem_raw); /* NaN in both 16-bit types: a read of unwritten memory shows */
        sim_tma_reset();
        wg_reset();
    };
    auto thread = [&] {
        if (!sim_dead) sm90_fwd<T, D, NC, BN, ST, VL, KV>(tq, tk, tv, p.a, nmb, chunk);
    };
    if (sim_run_blocks({(unsigned)grid, 1, 1}, PA_SM90_THREADS_NC(NC), 32, start, thread))
        sim_fail("deadlock at a block or named barrier");
    for (const wg_state &g : wgs)
        if (!g.ops.empty()) sim_fail("wgmma issued and never retired by a wait");
}

template <typename T, bool VL, bool KV> static void launch_d(const sm90_case &k, sim_fwd_problem &p)
{
#define SIM_GO(D, NC) launch<T, D, NC, VL, KV>(k, p)
    switch (k.c.d) {
    case 32: return SIM_GO(32, PA_SM90_NC(32));
    case 64: return k.nc_short ? SIM_GO(64, PA_SM90_NC_SHORT(64)) : SIM_GO(64, PA_SM90_NC(64));
    case 96: return SIM_GO(96, PA_SM90_NC(96));
    case 128: return SIM_GO(128, PA_SM90_NC(128));
    case 192: return SIM_GO(192, PA_SM90_NC(192));
    case 256: return SIM_GO(256, PA_SM90_NC(256));
    default: sim_fail("no such instance in the simulation");
    }
#undef SIM_GO
}

template <typename T> static void launch_t(const sm90_case &k, sim_fwd_problem &p)
{
    if (p.kv) p.vl ? launch_d<T, true, true>(k, p) : launch_d<T, false, true>(k, p);
    else p.vl ? launch_d<T, true, false>(k, p) : launch_d<T, false, false>(k, p);
}

static int run_case(const sm90_case &k, const sim_varlen *vl = nullptr, const sim_kv *kv = nullptr)
{
    sim_fwd_problem p(k.c, vl, kv);
    sim_errors = 0;
    if (k.c.bf16) launch_t<__nv_bfloat16>(k, p);
    else launch_t<__half>(k, p);
    return p.check(sim_errors ? sim_error_text : nullptr);
}

int main(void)
{
    /* {name, d, dv, bf16, b, hq, hkv, sq, sk, causal, wl, wr, softcap, kgrow}, nc_short, ctas, l2_pairs */
    static const sm90_case cases[] = {
        {{"d128 f16 300x300 (3 CTAs)", 128, 0, 0, 1, 2, 2, 300, 300, 0, -1, -1, 0.f, 0.f}, 0, 3, 1 << 20},
        {{"d64 bf16 causal 400x400 GQA 4/2 chunks", 64, 0, 1, 2, 4, 2, 400, 400, 1, -1, -1, 0.f, 0.f}, 0, 5, 2},
        {{"d64 128-row f16 197x197 (ViT)", 64, 0, 0, 3, 2, 2, 197, 197, 0, -1, -1, 0.f, 0.f}, 1, 4, 1 << 20},
        {{"d64 128-row bf16 window 40/10 77x120", 64, 0, 1, 2, 2, 1, 77, 120, 0, 40, 10, 0.f, 0.f}, 1, 3, 1 << 20},
        {{"d32 f16 softcap 30 129x300", 32, 0, 0, 1, 2, 1, 129, 300, 0, -1, -1, 30.f, 0.f}, 0, 2, 1 << 20},
        {{"d96 bf16 causal Sq > Sk 280x100", 96, 0, 1, 1, 2, 2, 280, 100, 1, -1, -1, 0.f, 0.f}, 0, 3, 1 << 20},
        {{"d128 f16 growing keys 140x640", 128, 0, 0, 1, 1, 1, 140, 640, 0, -1, -1, 0.f, 0.05f}, 0, 2, 1 << 20},
        {{"d128 bf16 Dqk 128 / Dv 64 causal 200x333", 128, 64, 1, 1, 2, 1, 200, 333, 1, -1, -1, 0.f, 0.f}, 0, 2, 1 << 20},
        {{"d192 f16 150x250", 192, 0, 0, 1, 2, 2, 150, 250, 0, -1, -1, 0.f, 0.f}, 0, 2, 1 << 20},
        {{"d256 bf16 causal 130x200", 256, 0, 1, 1, 2, 2, 130, 200, 1, -1, -1, 0.f, 0.f}, 0, 2, 1 << 20},
    };
    /* varlen (packed sequences): a sequence's last key tile reaches into the next, poisoned one (its V
     * rows must be zeroed before P V); non-causal goes the compact order (the warp's scan), causal the
     * slot order with holes; causal with sq > sk on one sequence; a sequence of length 0 */
    static const sm90_case vcases[] = {
        {{"varlen d64 f16 3 seqs, 3rd poisoned", 64, 0, 0, 3, 2, 1, 0, 0, 0, -1, -1, 0.f, 0.f}, 0, 3, 1 << 20},
        {{"varlen d128 bf16 causal GQA, 2nd poisoned", 128, 0, 1, 4, 4, 2, 0, 0, 1, -1, -1, 0.f, 0.f}, 0, 3, 1 << 20},
    };
    static const sim_varlen vls[] = {
        {{100, 300, 40}, {150, 200, 90}, 2},
        {{130, 60, 0, 270}, {70, 230, 5, 300}, 1},
    };
    auto run = [](const sm90_case &c, const sim_varlen *vl) { return run_case(c, vl); };
    int failed = sim_fwd_table(cases, 10, vcases, vls, 2, sim_dead, run);
    /* KV cache (the KV instances): a page pool through a shuffled table (pages of 16 at d128: 8 boxes a
     * K tile, two producer warps; of 64 at d256), or per-sequence caches; rows past each sequence's
     * keys NaN/inf; dense queries, or packed ones (a serving batch with a 5-token row); GQA packed into
     * the row blocks (groups 2, 3: a group that does not divide the block leaves rows unwritten) */
    static const sm90_case kcases[] = {
        {{"kv d128 bf16 paged 16, serving, causal GQA 4/2", 128, 0, 1, 3, 4, 2, 0, 0, 1, -1, -1, 0.f, 0.f}, 0, 3, 1 << 20},
        {{"kv d64 f16 per-sequence cache, 70 queries", 64, 0, 0, 2, 2, 2, 70, 0, 0, -1, -1, 0.f, 0.f}, 0, 2, 1 << 20},
        {{"kv d256 bf16 paged 64, causal GQA 3/1, 33 q", 256, 0, 1, 2, 3, 1, 33, 0, 1, -1, -1, 0.f, 0.f}, 0, 2, 1 << 20},
    };
    static const sim_kv kvs[] = {{320, 16, {200, 77, 300}}, {256, 0, {150, 90}}, {320, 64, {100, 260}}};
    static const sim_varlen kvl = {{5, 40, 130}, {200, 77, 300}, -1};
    for (int i = 0; i < 3 && !sim_dead; ++i) failed += run_case(kcases[i], i == 0 ? &kvl : nullptr, &kvs[i]);
    static const sim_fault faults[] = {
        {INJ_PARITY, "an mbarrier wait with the wrong parity"},
        {INJ_NO_SWIZZLE, "TMA writing without the 128-byte swizzle"},
        {INJ_LATE_WAIT, "a wgmma.wait_group 1 that retires one group too few"},
        {INJ_NO_LBO, "V's 64-column blocks read without the descriptor's LBO"},
        {INJ_A_ROWS, "the register-A fragment's rows and columns swapped"},
    };
    auto arm = [](int mode) {
        inject = mode;
        sim_fault_parity_tid = mode == INJ_PARITY ? 128 : -1; /* the first consumer thread */
        sim_fault_no_swizzle = mode == INJ_NO_SWIZZLE;
    };
    failed += sim_fwd_faults(faults, 5, sim_dead, arm, [&] { return run_case(cases[0]); });
    printf(failed ? "test_sm90_sim: %d check(s) FAILED\n" : "test_sm90_sim: all cases passed, all faults caught\n", failed);
    return failed ? 1 : 0;
}
