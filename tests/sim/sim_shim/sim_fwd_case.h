/* What the simulations of the TMA kernels (cuda-sm90, cuda-sm100) share: a forward case's inputs
 * (random, BSHD or packed varlen, one sequence optionally all NaN/inf), the kernel arguments as
 * pa_fwd_fill_args makes them, the simulated tensor maps, and the check of O and the LSE against a
 * double-precision reference. O and the LSE start as NaN: every element a kernel must write is
 * checked written. */
#ifndef PORTATTN_SIM_FWD_CASE_H
#define PORTATTN_SIM_FWD_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utility>
#include <vector>

#include "cuda.h" /* the simulated CUtensorMap */
#include "fwd_args.h"
#include "half.h"

struct sim_fwd_case {
    const char *name;
    int d, dv, bf16, b, hq, hkv, sq, sk, causal, wl, wr; /* dv 0: d */
    float softcap, kgrow; /* kgrow: K row j scaled by 1 + j * kgrow (row maxima that keep growing) */
};
/* varlen: c.b packed sequences of these lengths (c.sq, c.sk unused); every Q, K and V element of
 * sequence `poison` is NaN or inf, and the other sequences' rows must come out as without it */
struct sim_varlen {
    int lq[4], lk[4];
    int poison; /* -1: none */
};

/* A KV cache: sequence b's keys are the first used[b] rows of a cache of `capacity` rows (with varlen
 * queries: vl->lk[b] rows), its own ([batch, capacity], page 0) or pages of `page` rows from a pool in
 * shuffled order (one spare page no sequence uses). Every cache row past a sequence's keys is NaN/inf:
 * what a kernel reads there must never reach O. Queries per sequence (c.sq), or packed with varlen
 * (a serving call: sequence b's queries are the last of its keys). */
struct sim_kv {
    int capacity, page;
    int used[4];
};

inline uint32_t sim_fwd_rng = 2024u;
inline float sim_frand(void)
{
    sim_fwd_rng = sim_fwd_rng * 1664525u + 1013904223u;
    return (float)(sim_fwd_rng >> 8) / 8388608.0f - 1.0f;
}

/* A case's tensors and arguments. Sequence b: query tokens [q0[b], q0[b] + sqv[b]), keys [k0[b], ...)
 * of the token-major tensors (without varlen, b * Sq and b * Sk: the BSHD layout). */
struct sim_fwd_problem {
    const sim_fwd_case &c;
    const sim_varlen *vl;
    const sim_kv *kv;
    int dq, dv, maxq = 0, TQ, TK, Sq, Sk, ps; /* Sq, Sk: the maps' extents; ps: the poisoned sequence or -1 */
    int NK = 1, maxp = 0;                     /* K/V maps' batch extent; pages per sequence (block table row) */
    std::vector<int> q0, k0, sqv, skv;
    std::vector<uint16_t> q, k, v, o;
    std::vector<float> lse;
    std::vector<int32_t> cuq, cuk, used, table;
    pa_fwd_args a;

    uint16_t to16(float x) const { return c.bf16 ? pa_f32_to_bf16(x) : pa_f32_to_f16(x); }
    float from16(uint16_t h) const { return c.bf16 ? pa_bf16_to_f32(h) : pa_f16_to_f32(h); }

    sim_fwd_problem(const sim_fwd_case &c_, const sim_varlen *vl_, const sim_kv *kv_ = nullptr) : c(c_), vl(vl_), kv(kv_)
    {
        const int B = c.b, Hq = c.hq;
        dq = c.d, dv = c.dv ? c.dv : c.d;
        q0.assign(B + 1, 0), k0.assign(B + 1, 0), sqv.resize(B), skv.resize(B);
        for (int b = 0; b < B; ++b) {
            sqv[b] = vl ? vl->lq[b] : c.sq, skv[b] = vl ? vl->lk[b] : kv ? kv->used[b] : c.sk;
            q0[b + 1] = q0[b] + sqv[b], k0[b + 1] = k0[b] + skv[b];
            maxq = sqv[b] > maxq ? sqv[b] : maxq;
        }
        TQ = q0[B], TK = k0[B], Sq = vl ? TQ : c.sq, Sk = vl ? TK : c.sk, NK = vl ? 1 : B;
        if (kv) cache_layout();
        q.resize((size_t)TQ * Hq * dq);
        o.assign((size_t)TQ * Hq * dv, 0x7FFF), lse.assign((size_t)Hq * TQ, NAN);
        for (auto &x : q) x = to16(2.f * sim_frand());
        fill_kv();
        ps = vl ? vl->poison : -1;
        if (ps >= 0) poison(ps);
        cuq.assign(q0.begin(), q0.end()), cuk.assign(k0.begin(), k0.end());
        fill_args();
    }

    /* The K/V storage row (token index of the [NK, Sk] maps) of key j of sequence b. */
    size_t krow(int b, int j) const
    {
        if (!kv) return (size_t)k0[b] + j;
        if (!kv->page) return (size_t)b * kv->capacity + j;
        return (size_t)table[(size_t)b * maxp + j / kv->page] * kv->page + j % kv->page;
    }

    /* A cache: [batch, capacity], or a pool of B * maxp + 1 pages handed out in shuffled order. */
    void cache_layout()
    {
        const int B = c.b;
        used.assign(skv.begin(), skv.end());
        Sk = kv->page ? kv->page : kv->capacity;
        if (!kv->page) {
            NK = B;
            return;
        }
        maxp = (kv->capacity + kv->page - 1) / kv->page, NK = B * maxp + 1;
        std::vector<int32_t> pages(NK);
        for (int i = 0; i < NK; ++i) pages[i] = i;
        for (int i = NK - 1; i > 0; --i) std::swap(pages[i], pages[(sim_fwd_rng = sim_fwd_rng * 1664525u + 1013904223u) % (i + 1)]);
        table.assign(pages.begin(), pages.begin() + (size_t)B * maxp);
    }

    /* K and V: every storage row NaN/inf, then each sequence's keys random. */
    void fill_kv()
    {
        const int B = c.b, Hk = c.hkv;
        const size_t rows = (size_t)NK * Sk;
        k.resize(rows * Hk * dq), v.resize(rows * Hk * dv);
        const uint16_t nan = 0x7FFF, inf = c.bf16 ? 0x7F80 : 0x7C00;
        for (size_t i = 0; i < k.size(); ++i) k[i] = i % 3 ? nan : inf;
        for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? nan : inf;
        for (int b = 0; b < B; ++b)
            for (int j = 0; j < skv[b]; ++j)
                for (int h = 0; h < Hk; ++h) {
                    const size_t r = krow(b, j) * Hk + h;
                    for (int e = 0; e < dq; ++e) k[r * dq + e] = to16(2.f * sim_frand() * (1.f + j * c.kgrow));
                    for (int e = 0; e < dv; ++e) v[r * dv + e] = to16(sim_frand());
                }
    }

    /* Sequence s all NaN/inf: Q, and its keys */
    void poison(int s)
    {
        const int Hq = c.hq, Hk = c.hkv;
        const uint16_t nan = 0x7FFF, inf = c.bf16 ? 0x7F80 : 0x7C00;
        for (int j = 0; j < skv[s]; ++j)
            for (int h = 0; h < Hk; ++h) {
                const size_t r = krow(s, j) * Hk + h;
                for (int e = 0; e < dq; ++e) k[r * dq + e] = (r + e) % 3 ? nan : inf;
                for (int e = 0; e < dv; ++e) v[r * dv + e] = (r + e) % 2 ? nan : inf;
            }
        for (size_t i = (size_t)q0[s] * Hq * dq; i < (size_t)q0[s + 1] * Hq * dq; ++i) q[i] = nan;
    }

    /* pa_fwd_fill_args' result for this call (BSHD strides in elements; varlen: one packed batch) */
    void fill_args()
    {
        const int B = c.b, Hq = c.hq, Hk = c.hkv;
        const double scale = 1.0 / sqrt((double)dq), log2e = 1.4426950408889634;
        memset(&a, 0, sizeof a);
        a.q = q.data(), a.k = k.data(), a.v = v.data(), a.o = o.data(), a.lse = lse.data();
        const int64_t qs[3] = {(int64_t)Sq * Hq * dq, (int64_t)Hq * dq, dq}, os[3] = {(int64_t)Sq * Hq * dv, (int64_t)Hq * dv, dv},
                      ks[3] = {(int64_t)Sk * Hk * dq, (int64_t)Hk * dq, dq}, vs[3] = {(int64_t)Sk * Hk * dv, (int64_t)Hk * dv, dv};
        memcpy(a.qs, qs, sizeof qs), memcpy(a.os, os, sizeof os), memcpy(a.ks, ks, sizeof ks), memcpy(a.vs, vs, sizeof vs);
        a.ls[0] = vl ? 0 : (int64_t)Hq * Sq, a.ls[1] = Sq, a.ls[2] = 1;
        if (vl) a.cu_q = cuq.data(), a.cu_k = kv ? nullptr : cuk.data();
        a.batch = B, a.heads = Hq, a.group = Hq / Hk, a.heads_kv = Hk, a.seqlen_q = Sq, a.seqlen_k = kv ? kv->capacity : Sk;
        if (kv) {
            a.kv.seqused_k = used.data();
            if (kv->page) {
                a.kv.block_table = table.data(), a.kv.bt_stride = maxp, a.kv.num_pages = NK;
                while ((1 << a.kv.page_shift) < kv->page) a.kv.page_shift++;
            }
        }
        a.dqk = dq, a.dv = dv, a.qd = a.kd = a.vd = a.od = 1, a.kv.qpack = 1;
        a.wl = c.wl, a.wr = c.causal ? 0 : c.wr;
        a.softcap = c.softcap > 0.f, a.transform = a.softcap;
        a.mult = a.transform ? 1.f : (float)(scale * log2e);
        a.pre_mul = a.softcap ? (float)(scale / c.softcap) : (float)(scale * log2e);
        a.post_mul = a.softcap ? (float)(c.softcap * log2e) : 1.f;
    }

    /* A map over t ([batch, S, H, d], or the packed tokens as one batch under varlen), boxes of 64
     * columns x `rows` rows */
    CUtensorMap map(const std::vector<uint16_t> &t, int n, int S, int H, int d, int rows, int heads = 1) const
    {
        CUtensorMap m;
        m.ptr = t.data();
        m.dims[0] = d, m.dims[1] = S, m.dims[2] = H, m.dims[3] = n;
        m.strides[0] = (int64_t)H * d * 2, m.strides[1] = (int64_t)d * 2, m.strides[2] = (int64_t)S * H * d * 2;
        m.box_rows = rows, m.box_heads = heads;
        return m;
    }
    /* Q and O in boxes of `rows` tokens x `heads` heads; K and V in boxes of `rows`, at most a page */
    CUtensorMap map_q(int rows, int heads = 1) const { return map(q, vl ? 1 : c.b, Sq, c.hq, dq, rows, heads); }
    CUtensorMap map_o(int rows) const { return map(o, vl ? 1 : c.b, Sq, c.hq, dv, rows); }
    CUtensorMap map_k(int rows) const { return map(k, NK, Sk, c.hkv, dq, kv && kv->page && kv->page < rows ? kv->page : rows); }
    CUtensorMap map_v(int rows) const { return map(v, NK, Sk, c.hkv, dv, kv && kv->page && kv->page < rows ? kv->page : rows); }

    /* The reference in double (bottom-right aligned causal/window, softcap, GQA, per sequence) against
     * the kernel's O and LSE; prints a line; 0 if within tolerance (or `error`, the simulation's, is
     * printed instead). */
    int check(const char *error) const
    {
        if (error) {
            printf("  %-40s SIMULATION ERROR: %s\n", c.name, error);
            return 1;
        }
        double max_err = 0, max_lse = 0, ref_max = 0;
        int bad_nan = 0;
        for (int b = 0; b < c.b; ++b)
            if (b != ps) /* the poisoned sequence: anything */
                for (int h = 0; h < c.hq; ++h)
                    for (int i = 0; i < sqv[b]; ++i) check_row(b, h, i, max_err, max_lse, ref_max, bad_nan);
        const double tol = c.bf16 ? 2e-2 : 4e-3;
        const int ok = bad_nan == 0 && max_err <= tol && max_lse <= 1e-3;
        printf("  %-40s O max err %.2e (tol %.0e, |O| <= %.2f), LSE max err %.2e, NaN %d: %s\n", c.name, max_err, tol,
               ref_max, max_lse, bad_nan, ok ? "ok" : "FAIL");
        return ok ? 0 : 1;
    }

private:
    void check_row(int b, int h, int i, double &max_err, double &max_lse, double &ref_max, int &bad_nan) const
    {
        const int sq = sqv[b], sk = skv[b], Hq = c.hq, Hk = c.hkv, hk = h / (Hq / Hk);
        const double scale = 1.0 / sqrt((double)dq);
        const int64_t diag = (int64_t)i + sk - sq;
        const int64_t lo = a.wl < 0 ? 0 : diag - a.wl, hi = a.wr < 0 ? sk - 1 : diag + a.wr;
        std::vector<double> s(sk + 1, -INFINITY);
        double mx = -INFINITY;
        for (int j = 0; j < sk; ++j) {
            if (j < lo || j > hi) continue;
            double dot = 0;
            for (int e = 0; e < dq; ++e)
                dot += (double)from16(q[(((size_t)q0[b] + i) * Hq + h) * dq + e]) * from16(k[(krow(b, j) * Hk + hk) * dq + e]);
            s[j] = c.softcap > 0 ? c.softcap * tanh(dot * scale / c.softcap) : dot * scale;
            mx = fmax(mx, s[j]);
        }
        double l = 0;
        for (int j = 0; j < sk; ++j) l += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
        for (int e = 0; e < dv; ++e) {
            double ov = 0;
            for (int j = 0; j < sk; ++j)
                if (s[j] != -INFINITY) ov += exp(s[j] - mx) * from16(v[(krow(b, j) * Hk + hk) * dv + e]);
            ov = l > 0 ? ov / l : 0;
            const float got = from16(o[(((size_t)q0[b] + i) * Hq + h) * dv + e]);
            if (isnan(got)) bad_nan++;
            max_err = fmax(max_err, fabs(got - ov));
            ref_max = fmax(ref_max, fabs(ov));
        }
        const double want = l > 0 ? mx + log(l) : -INFINITY;
        const float got = lse[vl ? (size_t)h * TQ + q0[b] + i : ((size_t)b * Hq + h) * Sq + i];
        if (want == -INFINITY ? got != -INFINITY : !(fabs(got - want) <= 1e-3 * fmax(1.0, fabs(want)))) max_lse = INFINITY;
        else if (want != -INFINITY) max_lse = fmax(max_lse, fabs(got - want));
    }
};

/* The case table: every case through run(case, varlen or nullptr), the varlen ones with vls[i];
 * stops after a deadlock (`dead`). Returns the failures. */
template <typename C, typename R>
int sim_fwd_table(const C *cases, int n, const C *vcases, const sim_varlen *vls, int nv, const bool &dead, R &&run)
{
    int failed = 0;
    for (int i = 0; i < n && !dead; ++i) failed += run(cases[i], nullptr);
    for (int i = 0; i < nv && !dead; ++i) failed += run(vcases[i], &vls[i]);
    return failed;
}

/* Each injected fault must make a case fail (a wrong result, an emulator error or a reported
 * deadlock); one that passes means the simulation is blind to it. arm(mode) injects it (mode 0:
 * none), run() runs the case and returns nonzero on failure. Returns the faults not caught. */
struct sim_fault {
    int mode;
    const char *what;
};
template <typename A, typename R> int sim_fwd_faults(const sim_fault *faults, int n, bool &dead, A &&arm, R &&run)
{
    int missed = 0;
    printf("injected faults (each must fail the first case):\n");
    for (int i = 0; i < n && !dead; ++i) {
        arm(faults[i].mode);
        const int caught = run() != 0;
        printf("  -> %-56s %s\n", faults[i].what, caught ? "caught" : "NOT CAUGHT");
        missed += !caught;
        arm(0);
        dead = false;
    }
    return missed;
}

#endif
