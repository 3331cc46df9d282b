// The CPU simulation of the HIP kernels' emulation build, shared by test_hip_cdna_sim.cpp and
// test_hip_rdna3_sim.cpp (each test is one translation unit that includes this once, after its
// kernel header): 16-bit conversions, the case table, the launch (every GPU thread a fiber of
// tests/sim/sim_shim/sim_fiber.h, __syncthreads and the emulation's per-wave barriers its barriers),
// the double-precision reference and the checker.
// A kernel is described by SimKernel: rows per workgroup, threads per workgroup, wave size and a
// function running one thread of it (every launch a call makes, as the host backend does).
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hip_grid.h"

int pa_sim_mfma_ftz; // the emulated MFMA flushes 16-bit subnormals (gfx90a); set by the CDNA test

struct SimKernel {
    const char *name;
    int block_m;  // query rows per workgroup (the grid's x extent divides max_seqlen_q by it)
    int threads;  // threads per workgroup
    int wave;     // threads per wave (64 CDNA, 32 RDNA3)
    void (*run)(const pa_fwd_args &a, bool bf16, int d); // one thread of every launch of instance d
    std::vector<int> dims; // the instances' head dims, ascending (PA_CDNA_DIMS, PA_RDNA3_DIMS)
};

// The instance that serves head dims dqk/dv, as pa_hip_instance_dim (backends/hip/hip_shape.c) picks it.
static int sim_instance_dim(const SimKernel &k, int dqk, int dv) {
    for (int d : k.dims)
        if (d >= std::max(dqk, dv)) return d;
    return 0;
}

static float h2f(uint16_t b, bool bf) {
    if (bf) return __uint_as_float((uint32_t)b << 16);
    _Float16 h; memcpy(&h, &b, 2); return (float)h;
}
static uint16_t f2h(float x, bool bf) {
    if (bf) { uint32_t u = __float_as_uint(x); return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }
    _Float16 h = (_Float16)x; uint16_t b; memcpy(&b, &h, 2); return b;
}

struct Case {
    const char *name;
    int B, H, Hk, sq, sk, D; bool bf; bool causal; long wl, wr; float scale, softcap;
    int Dv = 0; // head dim of V and O (0: D); the kernel runs on the instance holding both
    bool varlen; std::vector<int> lq, lk; // varlen lengths
    int max_sq_override = 0; // 0: true max
    int pad = 8; // extra elements in head stride
    bool nanq = false, nanv = false, ninfk = false;
    int sinks = 0; // dominant keys per sequence over a tail 8-12 nats below (shape_sinks)
};

// Attention-sink inputs (as tests/cases/harness.c): keys i sk / sinks score -0.5 i, every other key 8-12
// below, through head-dim element 0 (q = 4, k = score / (4 scale)); V in [0.5, 1.5), so dropping the
// tail's small weights (gfx90a's MFMA flush of f16 P) moves every output by the tail's share.
static void shape_sinks(const Case &c, std::vector<uint16_t> &q, std::vector<uint16_t> &k, std::vector<uint16_t> &v,
                        int64_t ssq, int64_t hsq, int64_t ssk, int64_t hsk, int64_t bsq, int64_t bsk, std::mt19937 &rng) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int b = 0; b < c.B; ++b) {
        for (int i = 0; i < c.sq; ++i)
            for (int h = 0; h < c.H; ++h) q[b * bsq + i * ssq + h * hsq] = f2h(4.f, c.bf);
        for (int j = 0; j < c.sk; ++j) {
            double score = -(10.0 + 2.0 * u(rng));
            for (int s = 0; s < c.sinks; ++s)
                if (j == (int64_t)s * c.sk / c.sinks) score = -0.5 * s;
            for (int h = 0; h < c.Hk; ++h) {
                k[b * bsk + j * ssk + h * hsk] = f2h((float)(score / (4.0 * c.scale)), c.bf);
                for (int d = 0; d < c.Dv; ++d) v[b * bsk + j * ssk + h * hsk + d] = f2h((float)(1.0 + 0.5 * u(rng)), c.bf);
            }
        }
    }
}

static int run_case(const Case &c0, unsigned seed, const SimKernel &kern) {
    Case c = c0;
    if (!c.Dv) c.Dv = c.D;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int B = c.B, H = c.H, Hk = c.Hk, D = c.D, Dv = c.Dv, W = std::max(D, Dv); // W: columns a head holds
    int totq, totk; std::vector<int> cuq(B + 1, 0), cuk(B + 1, 0);
    if (c.varlen) {
        for (int b = 0; b < B; ++b) cuq[b + 1] = cuq[b] + c.lq[b], cuk[b + 1] = cuk[b] + c.lk[b];
        totq = cuq[B] + 3, totk = cuk[B] + 5; // trailing garbage tokens
    } else totq = c.sq, totk = c.sk;
    const int Bt = c.varlen ? 1 : B;
    // layout [B, S, H, W] with padded head stride; Q/K columns from D on and V columns from Dv on are NaN
    // (a kernel that reads them instead of zeros fails), O's from Dv on must stay the sentinel
    const int64_t hsq = W + c.pad, ssq = (int64_t)H * hsq, bsq = (int64_t)totq * ssq;
    const int64_t hsk = W + c.pad, ssk = (int64_t)Hk * hsk, bsk = (int64_t)totk * ssk;
    // each buffer ends in a tail of 256 elements: a read past the last row meets NaN, a write is a stray
    const int64_t tail = 256;
    std::vector<uint16_t> q(Bt * bsq + tail), k(Bt * bsk + tail), v(Bt * bsk + tail), o(Bt * bsq + tail, 0x7e01);
    for (auto &x : q) x = f2h(nd(rng), c.bf);
    for (auto &x : k) x = f2h(nd(rng), c.bf);
    for (auto &x : v) x = f2h(nd(rng), c.bf);
    if (c.sinks) shape_sinks(c, q, k, v, ssq, hsq, ssk, hsk, bsq, bsk, rng);
    if (c.nanq) q[0] = c.bf ? 0x7fc0 : 0x7e00;
    if (c.nanv) v[5 * ssk + 0 * hsk + 5] = c.bf ? 0x7fc0 : 0x7e00;
    // q > 0 and normal: a subnormal q element is flushed to +0 by gfx90a's MFMA (emulated) and meets
    // the -inf keys as 0 * -inf = NaN, which is then the right answer, not the one this case checks
    if (c.ninfk) { for (auto &x : q) x = (x & 0x7fff) | (c.bf ? 0x0080 : 0x0400); for (int j = 0; j < totk; ++j) for (int d = 0; d < D; ++d) k[j * ssk + d] = c.bf ? 0xff80 : 0xfc00; }
    const uint16_t qnan = c.bf ? 0x7fc0 : 0x7e00;
    for (size_t t = 0; t < q.size(); ++t) if (t % hsq >= (size_t)D || t >= q.size() - tail) q[t] = qnan;
    for (size_t t = 0; t < k.size(); ++t) {
        if (t % hsk >= (size_t)D || t >= k.size() - tail) k[t] = qnan;
        if (t % hsk >= (size_t)Dv || t >= v.size() - tail) v[t] = qnan;
    }
    // LSE [B, H, S] (non-varlen) or [H, total] (varlen)
    const int64_t ls2 = 1, ls1 = totq + 2, ls0 = (int64_t)H * ls1;
    std::vector<float> lse(Bt * ls0, 12345.f);

    pa_fwd_args a;
    memset(&a, 0, sizeof a);
    a.q = q.data(), a.k = k.data(), a.v = v.data(), a.o = o.data(), a.lse = lse.data();
    if (c.varlen) a.cu_q = cuq.data(), a.cu_k = cuk.data();
    a.qs[0] = bsq, a.qs[1] = ssq, a.qs[2] = hsq; a.os[0] = bsq, a.os[1] = ssq, a.os[2] = hsq;
    a.ks[0] = bsk, a.ks[1] = ssk, a.ks[2] = hsk; a.vs[0] = bsk, a.vs[1] = ssk, a.vs[2] = hsk;
    a.ls[0] = ls0, a.ls[1] = ls1, a.ls[2] = ls2;
    a.batch = B, a.heads = H, a.group = H / Hk, a.seqlen_q = totq, a.seqlen_k = totk;
    a.dqk = D, a.dv = Dv;
    // mirrors pa_fwd_fill_args / pa_fwd_score_map (common/fwd_resolve.c)
    auto win = [&](long w) { return w < 0 || w >= (long)totq + totk ? -1 : (int)w; };
    long wl = c.wl, wr = c.causal ? 0 : c.wr;
    a.wl = win(wl), a.wr = win(wr);
    const double log2e = 1.4426950408889634, cap = c.softcap;
    a.softcap = cap > 0; a.transform = a.softcap || c.scale < 0;
    a.mult = a.transform ? 1.f : (float)(c.scale * log2e);
    a.pre_mul = a.softcap ? (float)((double)c.scale / cap) : (float)(c.scale * log2e);
    a.post_mul = a.softcap ? (float)(cap * log2e) : 1.f;

    int max_sq = c.varlen ? *std::max_element(c.lq.begin(), c.lq.end()) : c.sq;
    if (c.max_sq_override) max_sq = c.max_sq_override;
    const int inst = sim_instance_dim(kern, D, Dv);
    if (!inst) { printf("%-44s FAIL no instance for head dims %d/%d\n", c.name, D, Dv); return 0; }
    unsigned g[3];
    pa_hip_grid(B, H, max_sq, kern.block_m, g);
    const unsigned gy = g[1], gz = g[2];
    if (sim_run({g[0], gy, gz}, (unsigned)kern.threads, (unsigned)kern.wave, [&] { kern.run(a, c.bf, inst); })) {
        printf("%-44s FAIL the launch deadlocked\n", c.name);
        return 0;
    }

    // reference (double, from the 16-bit inputs)
    double maxerr = 0, maxlse = 0; long bad = 0, unwritten = 0, overwritten = 0;
    std::vector<char> touched(o.size(), 0), ltouched(lse.size(), 0);
    for (int b = 0; b < B; ++b) {
        int q0 = 0, k0 = 0, sq = c.sq, sk = c.sk;
        if (c.varlen) q0 = cuq[b], k0 = cuk[b], sq = cuq[b + 1] - q0, sk = cuk[b + 1] - k0;
        const int64_t qb = c.varlen ? (int64_t)q0 * ssq : b * bsq, kb = c.varlen ? (int64_t)k0 * ssk : b * bsk;
        for (int h = 0; h < H; ++h) {
            const int hk = h / (H / Hk);
            for (int i = 0; i < sq; ++i) {
                int64_t lo, hi;

                {
                    int64_t diag = (i - (int64_t)sq) + sk;
                    int64_t l = (wl < 0 || wl >= diag) ? 0 : diag - wl;
                    int64_t hh = wr < 0 ? sk - 1 : diag + wr;
                    lo = l, hi = hh > sk - 1 ? sk - 1 : hh;
                }
                std::vector<double> s;
                double m = -INFINITY;
                for (int64_t j = lo; j <= hi; ++j) {
                    double dot = 0;
                    for (int d = 0; d < D; ++d)
                        dot += (double)h2f(q[qb + i * ssq + h * hsq + d], c.bf) * h2f(k[kb + j * ssk + hk * hsk + d], c.bf);
                    double sc = c.softcap > 0 ? c.softcap * tanh(dot * c.scale / c.softcap) : dot * c.scale;
                    s.push_back(sc); m = std::max(m, sc);
                }
                double l = 0;
                std::vector<double> acc(Dv, 0.0);
                for (size_t t = 0; t < s.size(); ++t) {
                    double p = exp(s[t] - m); l += p;
                    for (int d = 0; d < Dv; ++d) acc[d] += p * h2f(v[kb + (lo + t) * ssk + hk * hsk + d], c.bf);
                }
                const int64_t orow = qb + i * ssq + h * hsq;
                for (int d = 0; d < Dv; ++d) {
                    const double ref = s.empty() ? 0.0 : acc[d] / l;
                    const uint16_t bits = o[orow + d];
                    touched[orow + d] = 1;
                    const double got = h2f(bits, c.bf);
                    if (bits == 0x7e01 && !c.bf) { ++unwritten; continue; }
                    if (c.bf && bits == 0x7e01) { ++unwritten; continue; }
                    const double e = fabs(got - ref);
                    if (c.nanq && b == 0 && h == 0 && i == 0) continue;
                    if (c.nanv && hk == 0 && d == 5) { bool sees = lo <= 5 && 5 <= hi; if (s.empty() ? bits != 0 : (sees && !std::isnan(got))) { ++bad; printf("   nanv row %d bits %04x\n", i, bits); } continue; }
                    if (c.ninfk && hk == 0) { if (bits != 0) { ++bad; if (bad < 5) printf("   ninfk row %d bits %04x\n", i, bits);} continue; }
                    if (!(e <= (c.bf ? 2e-2 : 4e-3) * (1 + fabs(ref)))) { if (bad < 5) printf("   O b%d h%d i%d d%d got %g ref %g\n", b, h, i, d, got, ref); ++bad; }
                    if (e > maxerr) maxerr = e;
                }
                const int64_t loff = c.varlen ? h * ls1 + (int64_t)(q0 + i) * ls2 : b * ls0 + h * ls1 + (int64_t)i * ls2;
                ltouched[loff] = 1;
                const double lref = s.empty() ? -INFINITY : m + log(l);
                const double lg = lse[loff];
                if (lg == 12345.f) { ++unwritten; continue; }
                if (c.nanq && b == 0 && h == 0 && i == 0) continue;
                if (c.ninfk && hk == 0) { if (!(lg == -INFINITY)) { ++bad; printf("   ninfk lse %g\n", lg);} continue; }
                if (s.empty()) { if (!(lg == -INFINITY)) { ++bad; printf("   LSE empty row got %g\n", lg); } }
                else { double e = fabs(lg - lref); if (e > maxlse) maxlse = e; if (!(e < 1e-3 * (1 + fabs(lref)))) { ++bad; if (bad < 5) printf("   LSE b%d h%d i%d got %g ref %g\n", b, h, i, lg, lref); } }
            }
        }
    }
    for (size_t t = 0; t < o.size(); ++t) if (!touched[t] && o[t] != 0x7e01) ++overwritten;
    for (size_t t = 0; t < lse.size(); ++t) if (!ltouched[t] && lse[t] != 12345.f) ++overwritten;
    const bool ok = bad == 0 && unwritten == 0 && overwritten == 0;
    printf("%-44s %s maxerr %.3g lse %.3g bad %ld unwritten %ld stray %ld\n", c.name, ok ? "ok  " : "FAIL", maxerr, maxlse, bad, unwritten, overwritten);
    if (c.nanq) {
        // row 0 of b0 h0: expect NaN output and NaN LSE as sm80
        printf("   nan row: o[0]=%04x lse=%g\n", o[0], lse[0]);
    }
    return ok;
}

static std::vector<Case> sim_cases() {
    std::vector<Case> cs;
    auto C = [&](const char *n, int B, int H, int Hk, int sq, int sk, int D, bool bf, bool causal, long wl, long wr, float scale, float cap) {
        Case c; c.name = n; c.B = B; c.H = H; c.Hk = Hk; c.sq = sq; c.sk = sk; c.D = D; c.bf = bf; c.causal = causal; c.wl = wl; c.wr = wr;
        c.scale = scale; c.softcap = cap; c.varlen = false; return c; };
    cs.push_back(C("d64 f16 plain 40x70", 1, 1, 1, 40, 70, 64, false, false, -1, -1, 0.125f, 0));
    cs.push_back(C("d128 f16 plain 130x100", 1, 2, 1, 130, 100, 128, false, false, -1, -1, 0.0883883f, 0));
    cs.push_back(C("d64 bf16 causal 200x200", 2, 2, 2, 200, 200, 64, true, true, -1, -1, 0.125f, 0));
    cs.push_back(C("d128 bf16 causal sq>sk 300x90", 1, 2, 2, 300, 90, 128, true, true, -1, -1, 0.0883883f, 0));
    cs.push_back(C("d64 f16 causal sq<sk 70x300", 1, 4, 2, 70, 300, 64, false, true, -1, -1, 0.125f, 0));
    cs.push_back(C("d64 f16 window(37,5) 150x170", 1, 2, 1, 150, 170, 64, false, false, 37, 5, 0.125f, 0));
    cs.push_back(C("d128 f16 window(0,0) 64x64", 1, 1, 1, 64, 64, 128, false, false, 0, 0, 0.0883883f, 0));
    cs.push_back(C("d64 f16 left window only (10,-1)", 1, 1, 1, 100, 80, 64, false, false, 10, -1, 0.125f, 0));
    cs.push_back(C("d64 f16 softcap 5", 1, 2, 2, 50, 90, 64, false, false, -1, -1, 0.5f, 5.f));
    cs.push_back(C("d64 bf16 softcap 3 causal", 1, 2, 2, 70, 70, 64, true, true, -1, -1, 0.3f, 3.f));
    cs.push_back(C("d64 f16 neg scale", 1, 1, 1, 33, 47, 64, false, false, -1, -1, -0.2f, 0));
    cs.push_back(C("d64 f16 sk=0", 1, 1, 1, 33, 0, 64, false, false, -1, -1, 0.125f, 0));
    cs.push_back(C("d64 f16 sq=1", 1, 3, 1, 1, 77, 64, false, true, -1, -1, 0.125f, 0));
    cs.push_back(C("d64 f16 large scores (scale 2)", 1, 1, 1, 40, 100, 64, false, false, -1, -1, 2.f, 0));
    {
        Case c = C("d64 f16 varlen causal", 3, 2, 1, 0, 0, 64, false, true, -1, -1, 0.125f, 0);
        c.varlen = true; c.lq = {5, 140, 0}; c.lk = {9, 100, 7}; cs.push_back(c);
    }
    {
        Case c = C("d128 bf16 varlen window(20,3)", 3, 2, 2, 0, 0, 128, true, false, 20, 3, 0.0883883f, 0);
        c.varlen = true; c.lq = {33, 1, 260}; c.lk = {0, 40, 250}; cs.push_back(c);
    }
    {
        Case c = C("d64 f16 varlen low max_seqlen", 2, 1, 1, 0, 0, 64, false, false, -1, -1, 0.125f, 0);
        c.varlen = true; c.lq = {200, 10}; c.lk = {50, 50}; c.max_sq_override = 100; cs.push_back(c);
    }
    {
        Case c = C("d64 f16 NaN in q[0]", 1, 1, 1, 40, 40, 64, false, false, -1, -1, 0.125f, 0);
        c.nanq = true; cs.push_back(c);
    }
    { Case c = C("d64 f16 causal 40x20 NaN in V[5][5] head0", 1, 4, 2, 40, 20, 64, false, true, -1, -1, 0.125f, 0); c.nanv = true; cs.push_back(c); }
    { Case c = C("d64 bf16 causal 24x24 NaN in V[5][5] head0", 1, 4, 2, 24, 24, 64, true, true, -1, -1, 0.125f, 0); c.nanv = true; cs.push_back(c); }
    { Case c = C("d128 f16 K=-inf head0 -> O=0 LSE=-inf", 1, 4, 2, 24, 24, 128, false, true, -1, -1, 0.125f, 0); c.ninfk = true; cs.push_back(c); }
    { Case c = C("d64 f16 big 3 tiles x 300 window(100,50)", 2, 2, 1, 300, 333, 64, false, false, 100, 50, 0.125f, 0); cs.push_back(c); }
    { Case c = C("d128 f16 sink + 1500-key tail", 1, 2, 1, 40, 1500, 128, false, false, -1, -1, 0.0883883f, 0); c.sinks = 1; cs.push_back(c); }
    { Case c = C("d64 f16 3 sinks causal", 1, 2, 2, 70, 900, 64, false, true, -1, -1, 0.125f, 0); c.sinks = 3; cs.push_back(c); }
    { Case c = C("d64 bf16 sink + 900-key tail", 1, 1, 1, 40, 900, 64, true, false, -1, -1, 0.125f, 0); c.sinks = 1; cs.push_back(c); }
    // each instance at its own head dim, and head dims below their instance's: Q/K columns past Dqk and
    // V columns past Dv read as zeros, O's past Dv never written (hip-cdna's d256: the second launch only
    // when Dv > 128; hip-cdna runs the d224 cases there)
    cs.push_back(C("d32 f16 plain 50x60 (d32)", 1, 2, 1, 50, 60, 32, false, false, -1, -1, 0.17f, 0));
    cs.push_back(C("d24 bf16 causal 45x70 (d32)", 1, 2, 1, 45, 70, 24, true, true, -1, -1, 0.2f, 0));
    cs.push_back(C("d40 bf16 window(20,5) 90x70 (d64)", 1, 2, 2, 90, 70, 40, true, false, 20, 5, 0.15f, 0));
    cs.push_back(C("d96 f16 causal sq>sk 150x70 (d96)", 1, 2, 1, 150, 70, 96, false, true, -1, -1, 0.1f, 0));
    cs.push_back(C("d80 f16 causal 100x130 (d96)", 1, 2, 1, 100, 130, 80, false, true, -1, -1, 0.11f, 0));
    {
        Case c = C("d64/96 bf16 varlen window(25,0) (d96)", 2, 2, 1, 0, 0, 64, true, false, 25, 0, 0.125f, 0);
        c.Dv = 96; c.varlen = true; c.lq = {40, 90}; c.lk = {60, 90}; cs.push_back(c);
    }
    {
        Case c = C("d112 bf16 varlen causal (d128)", 3, 2, 1, 0, 0, 112, true, true, -1, -1, 0.0945f, 0);
        c.varlen = true; c.lq = {20, 0, 70}; c.lk = {30, 5, 66}; cs.push_back(c);
    }
    cs.push_back(C("d160 bf16 window(30,10) 100x120 (d160)", 1, 2, 2, 100, 120, 160, true, false, 30, 10, 0.079f, 0));
    { Case c = C("d96/160 f16 40x50 (d160)", 1, 2, 2, 40, 50, 96, false, false, -1, -1, 0.1f, 0); c.Dv = 160; cs.push_back(c); }
    { Case c = C("d152/136 f16 causal 70x60 (d160)", 1, 2, 1, 70, 60, 152, false, true, -1, -1, 0.081f, 0); c.Dv = 136; cs.push_back(c); }
    cs.push_back(C("d192 f16 GQA 4/2 80x100 (d192)", 1, 4, 2, 80, 100, 192, false, false, -1, -1, 0.072f, 0));
    { Case c = C("d192/128 bf16 causal 70x90 (d192)", 1, 2, 1, 70, 90, 192, true, true, -1, -1, 0.072f, 0); c.Dv = 128; cs.push_back(c); }
    cs.push_back(C("d224 f16 softcap 10 40x45 (rdna3 d224, cdna d256)", 1, 1, 1, 40, 45, 224, false, false, -1, -1, 0.067f, 10.f));
    { Case c = C("d224/200 bf16 causal 60x75 (rdna3 d224, cdna d256)", 1, 2, 1, 60, 75, 224, true, true, -1, -1, 0.067f, 0); c.Dv = 200; cs.push_back(c); }
    { Case c = C("d208/128 f16 45x60 (rdna3 d224, cdna d256)", 1, 2, 2, 45, 60, 208, false, false, -1, -1, 0.069f, 0); c.Dv = 128; cs.push_back(c); }
    cs.push_back(C("d256 f16 causal 70x90 (d256)", 1, 2, 1, 70, 90, 256, false, true, -1, -1, 0.0625f, 0));
    { Case c = C("d232/136 bf16 50x40 (d256)", 1, 2, 1, 50, 40, 232, true, false, -1, -1, 0.065f, 0); c.Dv = 136; cs.push_back(c); }
    return cs;
}

static int sim_main(int argc, char **argv, const SimKernel &kern) {
    std::vector<Case> cs = sim_cases();
    int fails = 0;
    const char *only = argc > 1 ? argv[1] : nullptr;
    const char *env = getenv("PORTATTN_TEST_SEED");
    const unsigned seed = env && *env ? (unsigned)strtoul(env, nullptr, 10)
                                      : (unsigned)std::chrono::steady_clock::now().time_since_epoch().count();
    printf("%s kernel source, %d threads a workgroup, wave%d\n", kern.name, kern.threads, kern.wave);
    printf("seed %u (rerun with PORTATTN_TEST_SEED=%u)\n", seed, seed);
    for (size_t i = 0; i < cs.size(); ++i) {
        if (only && !strstr(cs[i].name, only)) continue;
        fails += !run_case(cs[i], seed + (unsigned)i, kern);
    }
    printf("%zu cases, %d failing\n", cs.size(), fails);
    return fails ? 1 : 0;
}
