// test_hip_cdna_decode_sim: hip-cdna's split-KV decode kernels (backends/hip/cdna_decode_kernel.h: the
// append, the split attention and the combine) on the CPU, as the emulation build compiles them, every
// GPU thread a fiber (tests/sim/sim_shim/sim_fiber.h). Independent of the library's host code: the
// arguments are filled here, so what this checks is the kernels' own index math, paging, masking and
// split merge against a double-precision attention. Inputs are chosen to catch what the case table
// does not: pages of 1 and 2 keys, tables with entries outside the pool, cache lengths below zero and
// past the capacity, GQA groups that do not divide the 32-row tile, more splits than tiles, and cache
// rows past each sequence (and unused pages) filled with NaN, which must never reach O.
// The cache after the append must equal the expected one everywhere; O's columns past Dv and its head
// padding, and the LSE's padding, keep their sentinels; the split workspace starts as NaN.
// Exit 0 pass, 1 fail. Seed: $PORTATTN_TEST_SEED, else the clock (printed).
#include "cdna_decode_entries.h"
#include "cdna_decode_kernel.h"

#include "sim_common.h"

namespace {
struct DecCase {
    const char *name;
    int B, H, Hk, sq, cap, D, Dv, page, A, splits; // page 0: contiguous cache; A: tokens appended
    bool bf, causal; int wl; float scale, softcap;
    std::vector<int> used;                         // seqused_k per sequence (may be garbage)
};

// One launch of 64-thread workgroups over grid g; body runs as every thread.
template <typename F> void launch(unsigned gx, unsigned gy, unsigned gz, F body) {
    sim_run_or_fail({gx, gy, gz}, PA_CDNA_DEC_THREADS, PA_WAVE, body);
}

// The split attention of one entry of cdna_decode_entries.h, if it is an attention instance the call uses.
template <int KIND, bool B16, int DK, int DN, int C0> void run_attn(const pa_fwd_args &a, bool bf) {
    if constexpr (KIND == PA_CDNA_DEC_ATTN)
        if (DK == a.split.d && B16 == bf && C0 < a.dv)
            launch(a.split.splits, a.heads_kv * a.split.mtiles, a.batch, [&] { pa_cdna_dec_body<B16, DK, DN, C0>(a); });
}

// Every launch of instance d, as cdna_decode_host.c makes them (append first, combine last).
void run_kernels(const pa_fwd_args &a, bool bf) {
    if (a.kv.seqlen_new > 0) {
        const int64_t rows = (int64_t)a.batch * a.kv.seqlen_new * a.heads_kv;
        // fewer workgroups than rows: the grid-stride loop
        launch((unsigned)std::min<int64_t>(rows, 7), 1, 1, [&] { pa_cdna_dec_append_body(a); });
    }
#define RUN(n, kind, b16, dk, dn, c0) run_attn<kind, b16 != 0, dk, dn, c0>(a, bf);
    PA_CDNA_DEC_ENTRIES(RUN)
#undef RUN
    if (a.split.splits > 1) {
        const unsigned g = 5; // fewer groups than packed rows: the grid-stride loop
        if (bf) launch(g, 1, 1, [&] { pa_cdna_dec_combine_body<true>(a); });
        else launch(g, 1, 1, [&] { pa_cdna_dec_combine_body<false>(a); });
    }
}

int run_dec(const DecCase &c, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int W = std::max(c.D, c.Dv), d = W <= 64 ? 64 : W <= 128 ? 128 : 256, group = c.H / c.Hk;
    const uint16_t nan16 = c.bf ? 0x7fc0 : 0x7e00, sent = 0x7e01;
    const int64_t hs = W + 8, rs = (int64_t)c.Hk * hs; // cache: head and row strides
    const int pps = c.page ? (c.cap + c.page - 1) / c.page : 0, npages = c.B * pps + 3;
    const int64_t ps0 = c.page ? (int64_t)c.page * rs : (int64_t)c.cap * rs; // page (or sequence) stride
    const int64_t nk = (c.page ? npages : c.B) * ps0;
    std::vector<int32_t> bt(c.page ? c.B * pps : 1, 0);
    auto sk_of = [&](int b) { return (int)std::min<int64_t>(std::max(c.used[b], 0) + (int64_t)c.A, c.cap); };
    if (c.page) { // a shuffled pool with unused pages; entries of pages past a sequence's keys point outside it
        std::vector<int32_t> perm(npages);
        for (int i = 0; i < npages; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int i = 0; i < c.B * pps; ++i)
            bt[i] = (i % pps) * c.page >= sk_of(i / pps) ? (i % 2 ? -7 : npages + 5) : perm[i];
    }
    auto row_of = [&](int b, int j) { // element offset of key j of sequence b, head 0
        if (!c.page) return b * ps0 + (int64_t)j * rs;
        return (int64_t)bt[b * pps + j / c.page] * ps0 + (int64_t)(j % c.page) * rs;
    };
    // cache: NaN everywhere but the live rows' head-dim columns (keys a sequence holds before the append)
    std::vector<uint16_t> k(nk, nan16), v(nk, nan16);
    for (int b = 0; b < c.B; ++b)
        for (int j = 0; j < std::min(std::max(c.used[b], 0), c.cap); ++j)
            for (int h = 0; h < c.Hk; ++h)
                for (int e = 0; e < W; ++e) {
                    if (e < c.D) k[row_of(b, j) + h * hs + e] = f2h(nd(rng), c.bf);
                    if (e < c.Dv) v[row_of(b, j) + h * hs + e] = f2h(nd(rng), c.bf);
                }
    // appended tokens [B, A, Hk, W] with a dim stride of 1; the expected cache after the append
    std::vector<uint16_t> kn((size_t)c.B * std::max(c.A, 1) * c.Hk * W), vn(kn.size());
    for (auto &x : kn) x = f2h(nd(rng), c.bf);
    for (auto &x : vn) x = f2h(nd(rng), c.bf);
    std::vector<uint16_t> k_want = k, v_want = v;
    for (int b = 0; b < c.B; ++b)
        for (int i = 0; i < c.A; ++i) {
            const int j = std::max(c.used[b], 0) + i;
            if (j >= c.cap) continue;
            for (int h = 0; h < c.Hk; ++h)
                for (int e = 0; e < W; ++e) {
                    const size_t src = (((size_t)b * c.A + i) * c.Hk + h) * W + e;
                    if (e < c.D) k_want[row_of(b, j) + h * hs + e] = kn[src];
                    if (e < c.Dv) v_want[row_of(b, j) + h * hs + e] = vn[src];
                }
        }
    // Q [B, sq, H, W + 8] (columns past D NaN), O likewise with sentinels, LSE [B, H, sq + 2]
    const int64_t qh = W + 8, qs1 = (int64_t)c.H * qh, qs0 = (int64_t)c.sq * qs1;
    std::vector<uint16_t> q(c.B * qs0, nan16), o(c.B * qs0, sent);
    for (int64_t t = 0; t < (int64_t)q.size(); ++t) if (t % qh < c.D) q[t] = f2h(nd(rng), c.bf);
    const int64_t ls1 = c.sq + 2, ls0 = (int64_t)c.H * ls1;
    std::vector<float> lse(c.B * ls0, 12345.f);
    std::vector<int32_t> used = c.used;

    pa_fwd_args a;
    memset(&a, 0, sizeof a);
    pa_kv_args &kv = a.kv;
    pa_split_args &sp = a.split;
    a.q = q.data(), a.k = k.data(), a.v = v.data(), a.o = o.data(), a.lse = lse.data();
    kv.seqused_k = used.data(), kv.block_table = c.page ? bt.data() : nullptr;
    a.k_new = kn.data(), a.v_new = vn.data();
    kv.bt_stride = pps, kv.num_pages = npages;
    const int64_t qsv[3] = {qs0, qs1, qh}, lsv[3] = {ls0, ls1, 1}, csv[4] = {ps0, rs, hs, 1};
    const int64_t nsv[4] = {(int64_t)c.A * c.Hk * W, (int64_t)c.Hk * W, W, 1};
    for (int i = 0; i < 4; ++i) {
        if (i < 3) a.qs[i] = a.os[i] = qsv[i], a.ls[i] = lsv[i], a.ks[i] = a.vs[i] = csv[i];
        a.kns[i] = a.vns[i] = nsv[i];
    }
    a.kd = a.vd = csv[3];
    a.batch = c.B, a.heads_kv = c.Hk, a.group = group, a.seqlen_q = c.sq, a.seqlen_k = c.cap, kv.seqlen_new = c.A;
    a.dqk = c.D, a.dv = c.Dv, sp.d = d;
    while (c.page && (1 << kv.page_shift) < c.page) kv.page_shift++;
    sp.rows = c.sq * group, sp.mtiles = (sp.rows + PA_CDNA_DEC_ROWS - 1) / PA_CDNA_DEC_ROWS;
    sp.splits = c.splits;
    const int ntiles = (c.cap + PA_CDNA_DEC_KT - 1) / PA_CDNA_DEC_KT;
    sp.tiles = std::max(1, (ntiles + c.splits - 1) / c.splits);
    a.wl = c.wl, a.wr = c.causal ? 0 : -1;
    const double log2e = 1.4426950408889634;
    a.softcap = c.softcap > 0, a.transform = a.softcap || c.scale < 0;
    a.mult = a.transform ? 1.f : (float)(c.scale * log2e);
    a.pre_mul = a.softcap ? (float)((double)c.scale / c.softcap) : (float)(c.scale * log2e);
    a.post_mul = a.softcap ? (float)(c.softcap * log2e) : 1.f;
    const int64_t nr = (int64_t)c.B * c.Hk * sp.rows;
    std::vector<float> part_o(c.splits > 1 ? (size_t)c.splits * nr * d : 1, NAN);
    std::vector<float> part_lse(c.splits > 1 ? (size_t)c.splits * nr : 1, NAN);
    sp.part_o = part_o.data(), sp.part_lse = part_lse.data(); // poisoned: every slot read must be written first

    run_kernels(a, c.bf);

    long bad = 0, stray = 0;
    double maxerr = 0;
    for (size_t t = 0; t < k.size(); ++t) // the append wrote its rows and nothing else
        if (k[t] != k_want[t] || v[t] != v_want[t]) { if (bad < 3) printf("   cache element %zu differs\n", t); ++bad; }
    std::vector<char> touched(o.size(), 0), ltouched(lse.size(), 0);
    for (int b = 0; b < c.B; ++b) {
        const int sk = sk_of(b);
        for (int i = 0; i < c.sq; ++i)
            for (int h = 0; h < c.H; ++h) {
                const int hk = h / group;
                const int64_t diag = (int64_t)i + sk - c.sq; // bottom-right aligned
                const int64_t lo = c.wl < 0 ? 0 : std::max<int64_t>(0, diag - c.wl);
                const int64_t hi = c.causal ? std::min<int64_t>(sk - 1, diag) : sk - 1;
                std::vector<double> s;
                double m = -INFINITY;
                for (int64_t j = lo; j <= hi; ++j) {
                    double dot = 0;
                    for (int e = 0; e < c.D; ++e)
                        dot += (double)h2f(q[b * qs0 + i * qs1 + h * qh + e], c.bf) *
                               h2f(k[row_of(b, (int)j) + hk * hs + e], c.bf);
                    const double sc = c.softcap > 0 ? c.softcap * tanh(dot * c.scale / c.softcap) : dot * c.scale;
                    s.push_back(sc), m = std::max(m, sc);
                }
                double l = 0;
                std::vector<double> acc(c.Dv, 0.0);
                for (size_t t = 0; t < s.size(); ++t) {
                    const double p = exp(s[t] - m);
                    l += p;
                    for (int e = 0; e < c.Dv; ++e) acc[e] += p * h2f(v[row_of(b, (int)(lo + t)) + hk * hs + e], c.bf);
                }
                for (int e = 0; e < c.Dv; ++e) {
                    const int64_t at = b * qs0 + i * qs1 + h * qh + e;
                    touched[at] = 1;
                    const double ref = s.empty() ? 0.0 : acc[e] / l, got = h2f(o[at], c.bf), err = fabs(got - ref);
                    if (o[at] == sent || !(err <= (c.bf ? 2e-2 : 4e-3) * (1 + fabs(ref)))) {
                        if (bad < 5) printf("   O b%d i%d h%d e%d got %g ref %g\n", b, i, h, e, got, ref);
                        ++bad;
                    }
                    maxerr = std::max(maxerr, err);
                }
                const int64_t lat = b * ls0 + h * ls1 + i;
                ltouched[lat] = 1;
                const double lref = s.empty() ? -INFINITY : m + log(l), lg = lse[lat];
                if (s.empty() ? !(lg == -INFINITY) : !(fabs(lg - lref) < 1e-3 * (1 + fabs(lref)))) {
                    if (bad < 5) printf("   LSE b%d i%d h%d got %g ref %g\n", b, i, h, lg, lref);
                    ++bad;
                }
            }
    }
    for (size_t t = 0; t < o.size(); ++t) stray += !touched[t] && o[t] != sent;
    for (size_t t = 0; t < lse.size(); ++t) stray += !ltouched[t] && lse[t] != 12345.f;
    const bool ok = bad == 0 && stray == 0;
    printf("%-46s %s maxerr %.3g bad %ld stray %ld\n", c.name, ok ? "ok  " : "FAIL", maxerr, bad, stray);
    return ok;
}

std::vector<DecCase> dec_cases() {
    // name, B, H, Hk, sq, cap, D, Dv, page, A, splits, bf, causal, wl, scale, softcap, used
    return {
        {"d64 f16 contiguous, one split", 2, 4, 2, 1, 90, 64, 64, 0, 0, 1, false, false, -1, 0.125f, 0, {90, 37}},
        {"d64 bf16 page 1, splits 3, append 2", 2, 4, 1, 2, 70, 64, 64, 1, 2, 3, true, true, -1, 0.125f, 0, {40, 68}},
        {"d128 f16 page 2, group 3, sq 16, causal", 1, 6, 2, 16, 100, 128, 128, 2, 0, 2, false, true, -1, 0.09f, 0,
         {100}},
        {"d64 f16 used < 0 and > capacity, append 3", 3, 2, 2, 3, 64, 64, 64, 16, 3, 2, false, true, -1, 0.125f, 0,
         {-5, 500, 20}},
        {"d80/48 bf16 window 9, softcap, splits 9 > tiles", 2, 3, 1, 4, 150, 80, 48, 32, 1, 9, true, true, 9, 0.1f, 5.f,
         {120, 3}},
        {"d192/128 f16 page 64, splits 4 (d256 lo)", 1, 4, 2, 2, 260, 192, 128, 64, 0, 4, false, false, -1, 0.07f, 0,
         {260}},
        {"d96/160 bf16 splits 2, neg scale (d256 lo+hi)", 1, 2, 2, 1, 80, 96, 160, 0, 1, 2, true, false, -1, -0.1f, 0,
         {50}},
        {"d128 f16 empty caches, splits 2", 2, 2, 1, 2, 64, 128, 128, 8, 0, 2, false, true, -1, 0.09f, 0, {0, 0}},
    };
}
} // namespace

int main(int argc, char **argv) {
    const char *env = getenv("PORTATTN_TEST_SEED");
    const unsigned seed = env && *env ? (unsigned)strtoul(env, nullptr, 10)
                                      : (unsigned)std::chrono::steady_clock::now().time_since_epoch().count();
    printf("hip-cdna decode kernel source, %d threads a workgroup, wave%d, gfx90a subnormal flush on\n",
           PA_CDNA_DEC_THREADS, PA_WAVE);
    printf("seed %u (rerun with PORTATTN_TEST_SEED=%u)\n", seed, seed);
    pa_sim_mfma_ftz = 1;
    const std::vector<DecCase> cs = dec_cases();
    int fails = 0;
    for (size_t i = 0; i < cs.size(); ++i)
        if (argc < 2 || strstr(cs[i].name, argv[1])) fails += !run_dec(cs[i], seed + (unsigned)i);
    printf("%zu cases, %d failing\n", cs.size(), fails);
    return fails ? 1 : 0;
}
