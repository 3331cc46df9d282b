/* What the backward simulations share: a case's inputs (random, in the case's layout), the CPU
 * backend's forward and backward on them as the reference, the problem the front end would hand a
 * backend, and the comparison of the kernel's gradients with the reference's. Gradient buffers start
 * as NaN poison: every element a kernel must write is checked written, and the padding left alone. */
#ifndef PORTATTN_SIM_BWD_CASE_H
#define PORTATTN_SIM_BWD_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "bwd_problem.h"
#include "half.h"
#include "portattn.h"

/* One problem: varlen when cuq[b] != 0 (then sq, sk are the packed totals). */
struct sim_bwd_case {
    const char *name;
    int64_t b, sq, sk, hq, hkv, dqk, dv;
    int causal;
    int64_t wl, wr;
    float softcap, scale, amp; /* amp: Q and K values in [-amp, amp] (larger scores), others in [-1, 1] */
    int pad;                   /* gradients in a padded layout */
    int32_t cuq[4], cuk[4];
};

inline uint64_t sim_rng;
inline float sim_urand()
{
    sim_rng ^= sim_rng << 13, sim_rng ^= sim_rng >> 7, sim_rng ^= sim_rng << 17;
    return (float)((double)(sim_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}
/* The seed from PORTATTN_TEST_SEED or the clock, printed so that a failure can be rerun. */
inline void sim_seed()
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    const uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    sim_rng = seed ? seed : 1;
}

/* A BSHD tensor over a NaN-filled buffer, 16-byte aligned; padded: a gap of `gap` elements after
 * every head row, sequence row and sequence. */
struct sim_buf {
    portattn_tensor_t t;
    std::vector<unsigned char> mem;
    int64_t elems;
};
inline sim_buf sim_make_buf(int64_t nb, int64_t s, int64_t h, int64_t d, int64_t gap, int esz)
{
    sim_buf r;
    const int64_t hs = d + gap, ss = h * hs + gap, bs = s * ss + gap;
    r.elems = nb * bs + 8;
    r.mem.assign((size_t)(r.elems * esz) + 16, 0xFF); /* NaN in f32, f16 and bf16 */
    const uintptr_t p = (uintptr_t)r.mem.data();
    r.t = {(void *)((p + 15) / 16 * 16), {bs, ss, hs, 1}};
    return r;
}

/* A case made ready: inputs, the CPU's gradients in g[0], poisoned gradients for the kernel in g[1],
 * and bp, the problem as the front end resolves it (windows as fwd_resolve.c leaves them). */
struct sim_bwd_run {
    sim_buf q, k, v, o, dout, g[2][3]; /* g[reference, kernel][dq, dk, dv] */
    std::vector<float> lse;
    pa_bwd_problem bp;
};

/* Fills r for case c in dtype dt (gradients padded by `gap` when c.pad); 0, or -1 after printing why
 * the CPU reference failed. */
inline int sim_bwd_prepare(const sim_bwd_case &c, portattn_dtype_t dt, int64_t gap, sim_bwd_run &r)
{
    const int esz = dt == PORTATTN_DTYPE_F32 ? 4 : 2, varlen = c.cuq[c.b] != 0;
    const int64_t nb = varlen ? 1 : c.b;
    r.q = sim_make_buf(nb, c.sq, c.hq, c.dqk, 0, esz), r.k = sim_make_buf(nb, c.sk, c.hkv, c.dqk, 0, esz);
    r.v = sim_make_buf(nb, c.sk, c.hkv, c.dv, 0, esz), r.o = sim_make_buf(nb, c.sq, c.hq, c.dv, 0, esz);
    r.dout = sim_make_buf(nb, c.sq, c.hq, c.dv, 0, esz);
    const int64_t gs[3] = {c.sq, c.sk, c.sk}, gh[3] = {c.hq, c.hkv, c.hkv}, gd[3] = {c.dqk, c.dqk, c.dv};
    for (int s = 0; s < 2; ++s)
        for (int i = 0; i < 3; ++i) r.g[s][i] = sim_make_buf(nb, gs[i], gh[i], gd[i], c.pad ? gap : 0, esz);
    sim_buf *in[4] = {&r.q, &r.k, &r.v, &r.dout};
    for (int n = 0; n < 4; ++n)
        for (int64_t e = 0; e < in[n]->elems; ++e) pa_store_elem(dt, in[n]->t.data, e, sim_urand() * (n < 2 ? c.amp : 1.f));
    r.lse.assign((size_t)(nb * c.hq * c.sq + 1), NAN);

    portattn_fwd_params_t f;
    portattn_fwd_params_init(&f);
    f.dtype = dt, f.backend = PORTATTN_BACKEND_CPU, f.batch = c.b, f.seqlen_q = c.sq, f.seqlen_k = c.sk;
    f.heads_q = c.hq, f.heads_kv = c.hkv, f.head_dim_qk = c.dqk, f.head_dim_v = c.dv;
    f.q = r.q.t, f.k = r.k.t, f.v = r.v.t, f.o = r.o.t, f.lse = r.lse.data();
    f.lse_stride[0] = c.hq * c.sq, f.lse_stride[1] = c.sq, f.lse_stride[2] = 1;
    f.causal = c.causal, f.window_left = c.wl, f.window_right = c.wr, f.softcap = c.softcap, f.softmax_scale = c.scale;
    if (varlen) f.cu_seqlens_q = c.cuq, f.cu_seqlens_k = c.cuk;
    portattn_bwd_params_t p;
    portattn_bwd_params_init(&p);
    p.dtype = dt, p.backend = PORTATTN_BACKEND_CPU, p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k;
    p.heads_q = f.heads_q, p.heads_kv = f.heads_kv, p.head_dim_qk = f.head_dim_qk, p.head_dim_v = f.head_dim_v;
    p.q = f.q, p.k = f.k, p.v = f.v, p.o = f.o, p.dout = r.dout.t, p.lse = f.lse;
    memcpy(p.lse_stride, f.lse_stride, sizeof p.lse_stride);
    p.dq = r.g[0][0].t, p.dk = r.g[0][1].t, p.dv = r.g[0][2].t;
    p.causal = f.causal, p.window_left = f.window_left, p.window_right = f.window_right, p.softcap = f.softcap;
    p.softmax_scale = f.softmax_scale, p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
    if (portattn_forward(&f, NULL) || portattn_backward(&p, NULL)) {
        printf("FAIL %s: CPU reference: %s\n", c.name, portattn_last_error());
        return -1;
    }

    pa_bwd_problem &bp = r.bp;
    memset(&bp, 0, sizeof bp);
    bp.fwd.p = f;
    bp.fwd.scale = c.scale != 0 ? c.scale : (float)(1.0 / sqrt((double)c.dqk));
    bp.fwd.window_left = c.wl, bp.fwd.window_right = c.causal ? 0 : c.wr;
    bp.fwd.varlen = varlen, bp.fwd.group = c.hq / c.hkv;
    int64_t mq = c.sq, mk = c.sk;
    for (int64_t b = 0; varlen && b < c.b; ++b) {
        mq = b == 0 || c.cuq[b + 1] - c.cuq[b] > mq ? c.cuq[b + 1] - c.cuq[b] : mq;
        mk = b == 0 || c.cuk[b + 1] - c.cuk[b] > mk ? c.cuk[b + 1] - c.cuk[b] : mk;
    }
    bp.fwd.max_seqlen_q = mq, bp.fwd.max_seqlen_k = mk;
    bp.dout = r.dout.t, bp.dq = r.g[1][0].t, bp.dk = r.g[1][1].t, bp.dv = r.g[1][2].t;
    return 0;
}

/* The kernel's gradients against the reference's: every element the reference wrote written (and no
 * other), max error within bound(max |reference|) for each of dq, dk, dv. Appends "dq err (bound b,
 * max m)" per gradient to note; 1 when all three pass. */
template <typename B>
inline int sim_bwd_compare(const sim_bwd_run &r, portattn_dtype_t dt, B bound_of, char *note, size_t note_len)
{
    static const char *const names[3] = {"dq", "dk", "dv"};
    int ok = 1;
    size_t n = strlen(note);
    for (int i = 0; i < 3; ++i) {
        double err = 0, mag = 0;
        long long mism = 0;
        for (int64_t e = 0; e < r.g[0][i].elems; ++e) {
            const double ref = pa_load_elem(dt, r.g[0][i].t.data, e), x = pa_load_elem(dt, r.g[1][i].t.data, e);
            if (isnan(ref) || isnan(x)) { /* padding (NaN in both), or a row one side did not write */
                mism += isnan(ref) != isnan(x);
                continue;
            }
            err = fmax(err, fabs(x - ref)), mag = fmax(mag, fabs(ref));
        }
        const double bound = bound_of(mag);
        ok &= mism == 0 && err <= bound && mag > 0;
        if (n < note_len)
            n += (size_t)snprintf(note + n, note_len - n, " %s %.1e (bound %.1e, max %.1e)%s", names[i], err, bound, mag,
                                  mism ? " WRITTEN/UNWRITTEN MISMATCH" : "");
    }
    return ok;
}

#endif
