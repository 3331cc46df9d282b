/* The cuda-sm100 kernel source on the CPU (no GPU): sm100_fwd_kernel.cuh compiled by g++ with
 * PA_SM100_HOST_SIM, a fiber per CUDA thread (sim_fiber.h; 320 per CTA, CTAs one after another), and
 *  - mbarriers with phases, arrival counts and transaction bytes (a wait that nothing can complete
 *    is reported as a deadlock, with the barrier's address),
 *  - TMA loads of 64-column boxes with the 128-byte swizzle and zero fill out of bounds,
 *  - tcgen05 from sm100_tc_emu.h: MMAs queued at issue and run at commit (so reading TMEM before
 *    the commit's barrier shows stale data), 32x32b ld/st with the warp-quadrant rule.
 * Each case runs the kernel and compares O and LSE with a double-precision reference. This checks
 * the kernel's barrier protocol, TMEM map, descriptors, masks and softmax as written; it is not T3
 * (that runs the emulation build on a GPU) and says nothing about real B200/B300 timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <string>
#include <vector>

#include "cuda.h"
#include "cuda_runtime.h"
#include "fwd_args.h"
#include "half.h"
#include "sm100_desc.h"
#include "sm100_tc_emu.h"
#include "sim_fwd_case.h"

/* ---- the simulated CTA ----------------------------------------------------------------- */
alignas(1024) uint8_t smem_raw[232448];
static std::vector<uint32_t> tmem(SM100_TMEM_LANES * SM100_TMEM_COLS);
static int votes[PA_SM100_WARPS][32];
static int sim_errors;
static char sim_error_text[256];

static void sim_fail(const char *what)
{
    if (sim_errors++ == 0) snprintf(sim_error_text, sizeof sim_error_text, "%s", what);
}

void __syncwarp(unsigned) { sim_sync_wave(); }
int __any_sync(unsigned, int pred)
{
    const int w = threadIdx.x / 32;
    votes[w][threadIdx.x % 32] = pred != 0;
    sim_sync_wave();
    int any = 0;
    for (int i = 0; i < 32; ++i) any |= votes[w][i];
    sim_sync_wave(); /* nobody overwrites a vote before all have read */
    return any;
}
float __shfl_xor_sync(unsigned, float v, int) { return sim_fail("__shfl_xor_sync is not simulated"), v; }

/* mbarriers, TMA, named barriers: the simulation shared with cuda-sm90's (sim_tma.h). */
#include "sim_tma.h"
/* Faults injected into the simulated hardware, to prove the simulation catches them. */
enum { INJ_NONE, INJ_PARITY, INJ_NO_SWIZZLE, INJ_EARLY_COMMIT, INJ_QUADRANT };
static int inject = INJ_NONE;

/* tcgen05 */
struct sim_mma {
    uint64_t a_desc, b_desc;
    uint32_t d, a_t, idesc;
    int ts, acc;
};
static std::vector<sim_mma> mma_queue;
static void sim_check(int e, const char *what)
{
    if (e) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s: emulator error %d (warp %u)", what, e, threadIdx.x / 32);
        sim_fail(msg);
    }
}
static void sm100_tmem_alloc(uint32_t slot, uint32_t ncols)
{
    if (ncols != 512) sim_fail("TMEM alloc: the kernel allocates all 512 columns");
    const uint32_t z = 0;
    memcpy(smem_raw + slot, &z, 4);
}
static void sm100_tmem_dealloc(uint32_t, uint32_t) {}
static void sm100_fence_before(void) {}
static void sm100_fence_after(void) {}
static void sm100_mma_ss(uint32_t d, uint64_t a, uint64_t b, uint32_t id, int acc) { mma_queue.push_back({a, b, d, 0, id, 0, acc}); }
static void sm100_mma_ts(uint32_t d, uint32_t a, uint64_t b, uint32_t id, int acc) { mma_queue.push_back({0, b, d, a, id, 1, acc}); }
static void sm100_commit(uint32_t bar)
{
    if (inject == INJ_EARLY_COMMIT) pa_bar_arrive(bar); /* fault: arrive before the result exists */
    for (const sim_mma &o : mma_queue)
        sim_check(sm100_emu_mma_f16(tmem.data(), smem_raw, sizeof smem_raw, o.d, o.ts, o.a_desc, o.a_t, o.b_desc, o.idesc, o.acc),
                  "tcgen05.mma");
    mma_queue.clear();
    if (inject != INJ_EARLY_COMMIT) pa_bar_arrive(bar);
}
static void sm100_ld32(uint32_t taddr, uint32_t (&r)[32])
{
    if (inject == INJ_QUADRANT && threadIdx.x / 32 == 1) taddr -= 32u << 16; /* fault: warp 1 names quadrant 0 */
    sim_check(sm100_emu_ld_32x32b(tmem.data(), threadIdx.x / 32, threadIdx.x % 32, taddr, 32, r), "tcgen05.ld");
}
static void sm100_st32(uint32_t taddr, const uint32_t (&r)[32])
{
    sim_check(sm100_emu_st_32x32b(tmem.data(), threadIdx.x / 32, threadIdx.x % 32, taddr, 32, r), "tcgen05.st");
}
static void sm100_wait_ld(void) {}
static void sm100_wait_st(void) {}
static float sm100_ex2(float x) { return exp2f(x); }

#include "sm100_fwd_kernel.cuh"

/* ---- cases (sim_fwd_case.h) ------------------------------------------------------------------ */
template <typename T> static void launch(const sim_fwd_case &c, const CUtensorMap &tq, const CUtensorMap &tk,
                                         const CUtensorMap &tv, const CUtensorMap &to, const pa_fwd_args &a, int ctas)
{
    auto start = [&] {
        memset(smem_raw, 0xFF, sizeof smem_raw);
        for (auto &x : tmem) x = 0x7FC00001u; /* NaN: an unwritten TMEM cell shows */
        if (!mma_queue.empty()) sim_fail("MMAs issued and never committed");
        sim_tma_reset();
        mma_queue.clear();
    };
    auto thread = [&] {
        if (sim_dead) return;
        if (c.d == 64) sm100_fwd<T, 64, PA_SM100_STAGES(64)>(tq, tk, tv, to, a);
        else sm100_fwd<T, 128, PA_SM100_STAGES(128)>(tq, tk, tv, to, a);
    };
    if (sim_run_blocks({(unsigned)ctas, 1, 1}, PA_SM100_THREADS, 32, start, thread))
        sim_fail("deadlock at a block or named barrier");
    if (!mma_queue.empty()) sim_fail("MMAs issued and never committed");
    mma_queue.clear();
}

static int run_case(const sim_fwd_case &c, const sim_varlen *vl = nullptr)
{
    sim_fwd_problem p(c, vl);
    sim_errors = 0;
    const CUtensorMap tq = p.map_q(PA_SM100_BM), tk = p.map_k(PA_SM100_BN), tv = p.map_v(PA_SM100_BN),
                      to = p.map_o(PA_SM100_BM);
    const int ctas = (p.maxq + 255) / 256 * c.b * c.hq;
    if (c.bf16) launch<__nv_bfloat16>(c, tq, tk, tv, to, p.a, ctas);
    else launch<__half>(c, tq, tk, tv, to, p.a, ctas);
    return p.check(sim_errors ? sim_error_text : nullptr);
}

int main(void)
{
    static const sim_fwd_case cases[] = {
        {"d128 f16 300x300", 128, 0, 0, 1, 2, 2, 300, 300, 0, -1, -1, 0.f, 0.f},
        {"d128 bf16 causal 200x333 GQA 4/2", 128, 0, 1, 1, 4, 2, 200, 333, 1, -1, -1, 0.f, 0.f},
        {"d64 f16 window 50/20 300x260", 64, 0, 0, 1, 2, 1, 300, 260, 0, 50, 20, 0.f, 0.f},
        {"d64 bf16 softcap 30 129x17", 64, 0, 1, 2, 1, 1, 129, 17, 0, -1, -1, 30.f, 0.f},
        {"d128 f16 growing keys (rescale)", 128, 0, 0, 1, 1, 1, 140, 640, 0, -1, -1, 0.f, 0.05f},
        {"d64 f16 causal Sq > Sk 280x100", 64, 0, 0, 1, 1, 1, 280, 100, 1, -1, -1, 0.f, 0.f},
    };
    /* varlen (packed sequences): the second sequence's last key tile reaches into the third, which
     * is all NaN/inf (its V rows must be zeroed before P V); causal with sq > sk on one sequence; a
     * sequence of length 0 */
    static const sim_fwd_case vcases[] = {
        {"varlen d64 f16 3 seqs, 3rd poisoned", 64, 0, 0, 3, 2, 1, 0, 0, 0, -1, -1, 0.f, 0.f},
        {"varlen d128 bf16 causal GQA, 2nd poisoned", 128, 0, 1, 4, 4, 2, 0, 0, 1, -1, -1, 0.f, 0.f},
    };
    static const sim_varlen vls[] = {
        {{100, 300, 40}, {150, 200, 90}, 2},
        {{130, 60, 0, 270}, {70, 230, 5, 300}, 1},
    };
    auto run = [](const sim_fwd_case &c, const sim_varlen *vl) { return run_case(c, vl); };
    int failed = sim_fwd_table(cases, 6, vcases, vls, 2, sim_dead, run);
    static const sim_fault faults[] = {
        {INJ_PARITY, "an mbarrier wait with the wrong parity"},
        {INJ_NO_SWIZZLE, "TMA writing without the 128-byte swizzle"},
        {INJ_EARLY_COMMIT, "tcgen05.commit arriving before the MMA result"},
        {INJ_QUADRANT, "tcgen05.ld outside the warp's lane quadrant"},
    };
    auto arm = [](int mode) {
        inject = mode;
        sim_fault_parity_tid = mode == INJ_PARITY ? 0 : -1; /* softmax thread 0 */
        sim_fault_no_swizzle = mode == INJ_NO_SWIZZLE;
    };
    failed += sim_fwd_faults(faults, 4, sim_dead, arm, [&] { return run_case(cases[0]); });
    printf(failed ? "test_sm100_sim: %d check(s) FAILED\n" : "test_sm100_sim: all cases passed, all faults caught\n",
           failed);
    return failed ? 1 : 0;
}
