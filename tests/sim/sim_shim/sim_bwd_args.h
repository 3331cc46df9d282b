/* The CUDA backward kernels' argument struct (cuda_bwd_args.h) as the front end and a launcher fill
 * it, for the simulations of those kernels (test_sm80_bwd_sim, test_sm90_bwd_sim). */
#pragma once
#include <string.h>

#include "bwd_problem.h"
#include "cuda_bwd_args.h"

/* What pa_fwd_fill_args and a CUDA backward launcher make of the problem (sqp: workspace rows per
 * (batch, head); bm: cuda-sm80's rows per block). */
inline pa_bwd_args sim_bwd_args_of(const pa_bwd_problem &bp, int splits, int64_t sqp, int bm)
{
    const portattn_fwd_params_t &p = bp.fwd.p;
    pa_bwd_args a;
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

