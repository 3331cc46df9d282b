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
uint32_t __cvta_generic_to_shared(const void *p) { return (uint32_t)((const uint8_t *)p - smem_raw); }

/* mbarriers: state by shared-memory address */
struct sim_bar {
    int count = 0, pending = 0;
    int64_t tx = 0;
    unsigned phase = 0; /* completed phases */
};
static std::map<uint32_t, sim_bar> bars;
static bool sim_dead;
/* Faults injected into the simulated hardware, to prove the simulation catches them. */
enum { INJ_NONE, INJ_PARITY, INJ_NO_SWIZZLE, INJ_EARLY_COMMIT, INJ_QUADRANT };
static int inject = INJ_NONE;
static int inject_armed;

/* After every change of an mbarrier's state: a waiter may be able to go on. */
static void bar_check(sim_bar &b)
{
    sim_progress();
    if (b.pending == 0 && b.tx == 0) {
        b.phase++;
        b.pending = b.count;
    } else if (b.pending < 0 || b.tx < 0) {
        sim_fail("mbarrier: more arrivals or bytes than expected in a phase");
    }
}
static uint32_t pa_smem_u32(const void *p) { return __cvta_generic_to_shared(p); }
static void pa_bar_init(uint32_t a, int count)
{
    bars[a] = sim_bar{count, count, 0, 0};
}
static void pa_bar_init_fence(void) {}
static void pa_fence_proxy_async(void) {}
static void pa_bar_expect_tx(uint32_t a, uint32_t bytes)
{
    sim_bar &b = bars.at(a);
    b.tx += bytes;
    b.pending--;
    bar_check(b);
}
/* An arrival is visible at once: the waiters it releases run before this thread's next step (an
 * arrival made too early, before the data it announces, shows). */
static void pa_bar_arrive(uint32_t a)
{
    sim_bar &b = bars.at(a);
    b.pending--;
    bar_check(b);
    sim_yield();
}
static void pa_bar_wait(uint32_t a, uint32_t parity)
{
    /* fault: the first wait of softmax thread 0 asks for the other parity (a kernel bug's effect) */
    if (inject == INJ_PARITY && threadIdx.x == 0 && inject_armed) inject_armed = 0, parity ^= 1u;
    const sim_bar &b = bars.at(a);
    /* try_wait.parity(P) succeeds once the phase of parity P has completed: current parity != P */
    while ((b.phase & 1u) == parity && !sim_dead)
        if (sim_spin()) { /* every thread waits and nothing can move */
            char msg[128];
            snprintf(msg, sizeof msg, "deadlock: wait on the mbarrier at smem offset %u (parity %u, %u phases done)",
                     a, parity, b.phase);
            sim_fail(msg);
            sim_dead = true;
        }
}
/* TMA: a 64-column x box_rows box at (c0, c1, c2, c3), 128-byte swizzle by address bits, zeros out of bounds */
static void pa_tma_load_4d(uint32_t dst, const void *tmap, uint32_t bar, int c0, int c1, int c2, int c3)
{
    const CUtensorMap *m = (const CUtensorMap *)tmap;
    if (dst % 1024) sim_fail("TMA box destination not 1024-byte aligned (128-byte swizzle)");
    for (int r = 0; r < m->box_rows; ++r)
        for (int c = 0; c < 64; ++c) {
            const int64_t x = c0 + c, y = c1 + r;
            uint16_t v = 0;
            if (x < m->dims[0] && y < m->dims[1] && c2 < m->dims[2] && c3 < m->dims[3])
                v = *(const uint16_t *)((const uint8_t *)m->ptr + y * m->strides[0] + c2 * m->strides[1] +
                                        c3 * m->strides[2] + x * 2);
            uint32_t a = dst + (uint32_t)(r * 128 + c * 2);
            if (inject != INJ_NO_SWIZZLE) a ^= ((a >> 7) & 7u) << 4;
            memcpy(smem_raw + a, &v, 2);
        }
    sim_bar &b = bars.at(bar);
    b.tx -= 64 * m->box_rows * 2;
    bar_check(b);
}

/* TMA store of a 64-column x box_rows box at (c0, c1, c2, c3) from swizzled shared memory; rows
 * outside the tensor are not written. Synchronous here, so the bulk-group wait has nothing to do. */
static void pa_tma_store_4d(const void *tmap, uint32_t src, int c0, int c1, int c2, int c3)
{
    const CUtensorMap *m = (const CUtensorMap *)tmap;
    if (src % 1024) sim_fail("TMA store source not 1024-byte aligned (128-byte swizzle)");
    for (int r = 0; r < m->box_rows; ++r)
        for (int c = 0; c < 64; ++c) {
            const int64_t x = c0 + c, y = c1 + r;
            if (!(x < m->dims[0] && y < m->dims[1] && c2 < m->dims[2] && c3 < m->dims[3])) continue;
            uint32_t a = src + (uint32_t)(r * 128 + c * 2);
            if (inject != INJ_NO_SWIZZLE) a ^= ((a >> 7) & 7u) << 4;
            memcpy((uint8_t *)m->ptr + y * m->strides[0] + c2 * m->strides[1] + c3 * m->strides[2] + x * 2, smem_raw + a, 2);
        }
}
static void pa_bulk_commit(void) {}
static void pa_bulk_wait_read(void) {}
static void pa_named_sync(int id, int n)
{
    if (id < 1 || id > 2 || n != 128) sim_fail("named barrier: the kernel uses ids 1 and 2 over 128 threads");
    else sim_sync_named(id, (unsigned)n);
}

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

/* ---- cases --------------------------------------------------------------------------------- */
struct sim_case {
    const char *name;
    int d, bf16, b, hq, hkv, sq, sk, causal, wl, wr;
    float softcap, kgrow; /* kgrow: K row j scaled by 1 + j * kgrow (forces the rescale path) */
};
/* varlen: c.b packed sequences of these lengths (c.sq, c.sk unused); every Q, K and V element of
 * sequence `poison` is NaN or inf, and the other sequences' rows must come out as without it */
struct sim_varlen {
    int lq[4], lk[4];
    int poison; /* -1: none */
};

static uint32_t rng = 2024u;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

template <typename T> static void launch(const sim_case &c, const CUtensorMap &tq, const CUtensorMap &tk,
                                         const CUtensorMap &tv, const CUtensorMap &to, const pa_fwd_args &a, int ctas)
{
    auto start = [&] {
        memset(smem_raw, 0xFF, sizeof smem_raw);
        for (auto &x : tmem) x = 0x7FC00001u; /* NaN: an unwritten TMEM cell shows */
        if (!mma_queue.empty()) sim_fail("MMAs issued and never committed");
        bars.clear();
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

static int run_case(const sim_case &c, const sim_varlen *vl = nullptr)
{
    const int d = c.d, B = c.b, Hq = c.hq, Hk = c.hkv;
    /* sequence b: query tokens [q0[b], q0[b] + sqv[b]), keys [k0[b], ...) of the token-major tensors
     * (without varlen, b * Sq and b * Sk: the BSHD layout) */
    std::vector<int> q0(B + 1, 0), k0(B + 1, 0), sqv(B), skv(B);
    int maxq = 0;
    for (int b = 0; b < B; ++b) {
        sqv[b] = vl ? vl->lq[b] : c.sq, skv[b] = vl ? vl->lk[b] : c.sk;
        q0[b + 1] = q0[b] + sqv[b], k0[b + 1] = k0[b] + skv[b];
        maxq = sqv[b] > maxq ? sqv[b] : maxq;
    }
    const int TQ = q0[B], TK = k0[B], Sq = vl ? TQ : c.sq, Sk = vl ? TK : c.sk; /* Sq, Sk: the map extents */
    std::vector<uint16_t> q((size_t)TQ * Hq * d), k((size_t)TK * Hk * d), v(k.size()), o(q.size(), 0x7FFF);
    std::vector<float> lse((size_t)Hq * TQ, NAN);
    auto to16 = [&](float x) { return c.bf16 ? pa_f32_to_bf16(x) : pa_f32_to_f16(x); };
    auto from16 = [&](uint16_t h) { return c.bf16 ? pa_bf16_to_f32(h) : pa_f16_to_f32(h); };
    auto lse_at = [&](int b, int h, int i) { return vl ? (size_t)h * TQ + q0[b] + i : ((size_t)b * Hq + h) * Sq + i; };
    for (auto &x : q) x = to16(2.f * frand());
    for (int b = 0; b < B; ++b)
        for (int j = 0; j < skv[b]; ++j)
            for (int h = 0; h < Hk; ++h)
                for (int e = 0; e < d; ++e) {
                    const size_t i = (((size_t)k0[b] + j) * Hk + h) * d + e;
                    k[i] = to16(2.f * frand() * (1.f + j * c.kgrow));
                    v[i] = to16(frand());
                }
    const int ps = vl ? vl->poison : -1;
    if (ps >= 0) {
        const uint16_t nan = 0x7FFF, inf = c.bf16 ? 0x7F80 : 0x7C00;
        for (size_t i = (size_t)k0[ps] * Hk * d; i < (size_t)k0[ps + 1] * Hk * d; ++i) k[i] = i % 3 ? nan : inf, v[i] = i % 2 ? nan : inf;
        for (size_t i = (size_t)q0[ps] * Hq * d; i < (size_t)q0[ps + 1] * Hq * d; ++i) q[i] = nan;
    }
    std::vector<int32_t> cuq(q0.begin(), q0.end()), cuk(k0.begin(), k0.end());
    /* the arguments as pa_fwd_fill_args makes them (BSHD strides in elements) */
    const double scale = 1.0 / sqrt((double)d), log2e = 1.4426950408889634;
    pa_fwd_args a;
    memset(&a, 0, sizeof a);
    a.q = q.data(), a.k = k.data(), a.v = v.data(), a.o = o.data(), a.lse = lse.data();
    const int64_t qs[3] = {(int64_t)Sq * Hq * d, (int64_t)Hq * d, d}, ks[3] = {(int64_t)Sk * Hk * d, (int64_t)Hk * d, d};
    memcpy(a.qs, qs, sizeof qs), memcpy(a.os, qs, sizeof qs), memcpy(a.ks, ks, sizeof ks), memcpy(a.vs, ks, sizeof ks);
    a.ls[0] = vl ? 0 : (int64_t)Hq * Sq, a.ls[1] = Sq, a.ls[2] = 1;
    if (vl) a.cu_q = cuq.data(), a.cu_k = cuk.data();
    a.batch = B, a.heads = Hq, a.group = Hq / Hk, a.seqlen_q = Sq, a.seqlen_k = Sk;
    a.wl = c.wl, a.wr = c.causal ? 0 : c.wr;
    a.softcap = c.softcap > 0.f, a.transform = a.softcap;
    a.mult = a.transform ? 1.f : (float)(scale * log2e);
    a.pre_mul = a.softcap ? (float)(scale / c.softcap) : (float)(scale * log2e);
    a.post_mul = a.softcap ? (float)(c.softcap * log2e) : 1.f;
    const int nb = vl ? 1 : B; /* the maps' batch extent: varlen maps the packed tokens as one sequence */
    auto tmap = [&](const std::vector<uint16_t> &t, int S, int H, int rows) {
        CUtensorMap m;
        m.ptr = t.data();
        m.dims[0] = d, m.dims[1] = S, m.dims[2] = H, m.dims[3] = nb;
        m.strides[0] = (int64_t)H * d * 2, m.strides[1] = (int64_t)d * 2, m.strides[2] = (int64_t)S * H * d * 2;
        m.box_rows = rows;
        return m;
    };
    const CUtensorMap tq = tmap(q, Sq, Hq, PA_SM100_BM), tk = tmap(k, Sk, Hk, PA_SM100_BN), tv = tmap(v, Sk, Hk, PA_SM100_BN),
                      to = tmap(o, Sq, Hq, PA_SM100_BM);
    const int ctas = (maxq + 255) / 256 * B * Hq;
    if (c.bf16) launch<__nv_bfloat16>(c, tq, tk, tv, to, a, ctas);
    else launch<__half>(c, tq, tk, tv, to, a, ctas);
    if (sim_errors) {
        printf("  %-34s SIMULATION ERROR: %s\n", c.name, sim_error_text);
        return 1;
    }

    /* reference in double: bottom-right aligned causal/window, softcap, GQA; per sequence */
    double max_err = 0, max_lse = 0, ref_max = 0;
    int bad_nan = 0;
    std::vector<double> s;
    for (int b = 0; b < B; ++b) {
        if (b == ps) continue; /* the poisoned sequence: anything */
        const int sq = sqv[b], sk = skv[b];
        s.assign(sk + 1, 0.0);
        for (int h = 0; h < Hq; ++h)
            for (int i = 0; i < sq; ++i) {
                const int hk = h / (Hq / Hk);
                const int64_t diag = (int64_t)i + sk - sq;
                const int64_t lo = a.wl < 0 ? 0 : diag - a.wl, hi = a.wr < 0 ? sk - 1 : diag + a.wr;
                double mx = -INFINITY;
                for (int j = 0; j < sk; ++j) {
                    if (j < lo || j > hi) { s[j] = -INFINITY; continue; }
                    double dot = 0;
                    for (int e = 0; e < d; ++e)
                        dot += (double)from16(q[(((size_t)q0[b] + i) * Hq + h) * d + e]) *
                               from16(k[(((size_t)k0[b] + j) * Hk + hk) * d + e]);
                    s[j] = c.softcap > 0 ? c.softcap * tanh(dot * scale / c.softcap) : dot * scale;
                    mx = fmax(mx, s[j]);
                }
                double l = 0;
                for (int j = 0; j < sk; ++j) l += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
                for (int e = 0; e < d; ++e) {
                    double ov = 0;
                    for (int j = 0; j < sk; ++j)
                        if (s[j] != -INFINITY) ov += exp(s[j] - mx) * from16(v[(((size_t)k0[b] + j) * Hk + hk) * d + e]);
                    ov = l > 0 ? ov / l : 0;
                    const float got = from16(o[(((size_t)q0[b] + i) * Hq + h) * d + e]);
                    if (isnan(got)) bad_nan++;
                    max_err = fmax(max_err, fabs(got - ov));
                    ref_max = fmax(ref_max, fabs(ov));
                }
                const double want = l > 0 ? mx + log(l) : -INFINITY;
                const float got = lse[lse_at(b, h, i)];
                if (want == -INFINITY ? got != -INFINITY : !(fabs(got - want) <= 1e-3 * fmax(1.0, fabs(want)))) max_lse = INFINITY;
                else if (want != -INFINITY) max_lse = fmax(max_lse, fabs(got - want));
            }
    }
    const double tol = c.bf16 ? 2e-2 : 4e-3;
    const int ok = bad_nan == 0 && max_err <= tol && max_lse <= 1e-3;
    printf("  %-34s O max err %.2e (tol %.0e, |O| <= %.2f), LSE max err %.2e, NaN %d: %s\n", c.name, max_err, tol,
           ref_max, max_lse, bad_nan, ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

int main(void)
{
    static const sim_case cases[] = {
        {"d128 f16 300x300", 128, 0, 1, 2, 2, 300, 300, 0, -1, -1, 0.f, 0.f},
        {"d128 bf16 causal 200x333 GQA 4/2", 128, 1, 1, 4, 2, 200, 333, 1, -1, -1, 0.f, 0.f},
        {"d64 f16 window 50/20 300x260", 64, 0, 1, 2, 1, 300, 260, 0, 50, 20, 0.f, 0.f},
        {"d64 bf16 softcap 30 129x17", 64, 1, 2, 1, 1, 129, 17, 0, -1, -1, 30.f, 0.f},
        {"d128 f16 growing keys (rescale)", 128, 0, 1, 1, 1, 140, 640, 0, -1, -1, 0.f, 0.05f},
        {"d64 f16 causal Sq > Sk 280x100", 64, 0, 1, 1, 1, 280, 100, 1, -1, -1, 0.f, 0.f},
    };
    /* varlen (packed sequences): the second sequence's last key tile reaches into the third, which
     * is all NaN/inf (its V rows must be zeroed before P V); causal with sq > sk on one sequence; a
     * sequence of length 0 */
    static const sim_case vcases[] = {
        {"varlen d64 f16 3 seqs, 3rd poisoned", 64, 0, 3, 2, 1, 0, 0, 0, -1, -1, 0.f, 0.f},
        {"varlen d128 bf16 causal GQA, 2nd poisoned", 128, 1, 4, 4, 2, 0, 0, 1, -1, -1, 0.f, 0.f},
    };
    static const sim_varlen vls[] = {
        {{100, 300, 40}, {150, 200, 90}, 2},
        {{130, 60, 0, 270}, {70, 230, 5, 300}, 1},
    };
    int failed = 0;
    for (const sim_case &c : cases) {
        failed += run_case(c);
        if (sim_dead) break;
    }
    for (int i = 0; i < 2 && !sim_dead; ++i) failed += run_case(vcases[i], &vls[i]);
    /* Each injected fault must make the first case fail (a wrong result, an emulator error or a
     * reported deadlock); one that passes means the simulation is blind to it. */
    static const struct { int mode; const char *what; } faults[] = {
        {INJ_PARITY, "an mbarrier wait with the wrong parity"},
        {INJ_NO_SWIZZLE, "TMA writing without the 128-byte swizzle"},
        {INJ_EARLY_COMMIT, "tcgen05.commit arriving before the MMA result"},
        {INJ_QUADRANT, "tcgen05.ld outside the warp's lane quadrant"},
    };
    printf("injected faults (each must fail the first case):\n");
    for (const auto &f : faults) {
        if (sim_dead) break;
        inject = f.mode, inject_armed = 1, sim_errors = 0;
        const int caught = run_case(cases[0]) != 0;
        printf("  -> %-52s %s\n", f.what, caught ? "caught" : "NOT CAUGHT");
        failed += !caught;
        inject = INJ_NONE;
        sim_dead = false;
    }
    printf(failed ? "test_sm100_sim: %d check(s) FAILED\n" : "test_sm100_sim: all cases passed, all faults caught\n",
           failed);
    return failed ? 1 : 0;
}
