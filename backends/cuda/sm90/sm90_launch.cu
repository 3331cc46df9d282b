/* cuda-sm90 launcher: builds the TMA tensor maps of Q, K and V (4-D: dim, seq, head, batch, with the
 * caller's strides; varlen: the packed tensors as one batch of all tokens; a KV cache as
 * pa_tmap_kv_extent says) and launches the instance for (head dim, dtype, KV cache or not). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "cuda_append.h"
#include "cuda_host.h"
#include "cuda_tmap.cuh"
#include "fwd_resolve.h"
#include "sm90_fwd_kernel.cuh"
#include "sm90_launch.h"

#define PA_X(D)                                                                                              \
    cudaError_t sm90_launch_d##D(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *,                 \
                                 const pa_fwd_args *, int, int, int64_t, int64_t, cudaStream_t);
PA_SM90_DIMS(PA_X)
#undef PA_X
#define PA_X(D)                                                                                              \
    cudaError_t sm90_launch_kv_d##D(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *,              \
                                    const pa_fwd_args *, int, int64_t, int64_t, cudaStream_t);
PA_SM90_KV_DIMS(PA_X)
#undef PA_X

extern "C" int pa_sm90_compiled(void) { return 1; }

/* The instance tables and, in the same row order, the instance files' entry points: both from
 * sm90_instances.h. bm and warps are the default shape's (the short shape of d <= 64: pa_sm90_nc). */
#define SM90_FWD_ROW(Y, D, BN, ST, NC, NS) {Y, D, PA_SM90_BM_NC(NC), BN, 4 * (NC), ST, PA_SM90_SMEM_SHAPE(D, NC, BN, ST)},
#define SM90_KV_ROW(Y, D, ST)                                                                                 \
    {Y, D, PA_SM90_BM_NC(PA_SM90_NC(D)), PA_SM90_BN(D), 4 * PA_SM90_NC(D), ST,                              \
     PA_SM90_SMEM_SHAPE(D, PA_SM90_NC(D), PA_SM90_BN(D), ST)},
static const pa_cuda_inst fwd_insts[] = {PA_SM90_FWD_LIST(SM90_FWD_ROW, "sm90")};
static const pa_cuda_inst kv_insts[] = {PA_SM90_KV_LIST(SM90_KV_ROW, "sm90-kv")};
#undef SM90_FWD_ROW
#undef SM90_KV_ROW
typedef cudaError_t (*sm90_fwd_fn)(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const pa_fwd_args *,
                                   int, int, int64_t, int64_t, cudaStream_t);
typedef cudaError_t (*sm90_kv_fn)(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const pa_fwd_args *,
                                  int, int64_t, int64_t, cudaStream_t);
#define PA_X(D) sm90_launch_d##D,
static const sm90_fwd_fn fwd_fns[] = {PA_SM90_DIMS(PA_X)};
#undef PA_X
#define PA_X(D) sm90_launch_kv_d##D,
static const sm90_kv_fn kv_fns[] = {PA_SM90_KV_DIMS(PA_X)};
#undef PA_X
PA_CUDA_INST_FNS_OK(fwd_insts, fwd_fns);
PA_CUDA_INST_FNS_OK(kv_insts, kv_fns);

extern "C" const pa_cuda_inst *pa_sm90_instance(const pa_problem *pb, char *why, size_t why_len)
{
    if (pb->kv_cache)
        return pa_cuda_inst_ok(kv_insts, PA_CUDA_ROWS(kv_insts), pb, "KV cache", why, why_len);
    return pa_cuda_inst_ok(fwd_insts, PA_CUDA_ROWS(fwd_insts), pb, NULL, why, why_len);
}

extern "C" int pa_sm90_nc(const pa_problem *pb, int d)
{
    const int nc = PA_SM90_NC(d), ns = PA_SM90_NC_SHORT(d);
    const int64_t max_seqlen_q = pb->max_seqlen_q;
    if (!ns || pb->kv_cache || max_seqlen_q > 256) return nc; /* the KV-cache instances have the default shape */
    const int64_t rows = (max_seqlen_q + PA_SM90_BM_NC(nc) - 1) / PA_SM90_BM_NC(nc) * PA_SM90_BM_NC(nc);
    const int64_t rows_short = (max_seqlen_q + PA_SM90_BM_NC(ns) - 1) / PA_SM90_BM_NC(ns) * PA_SM90_BM_NC(ns);
    return rows_short < rows ? ns : nc;
}

/* GQA packing of the KV instances (PA_SM90_KV_PACK_GQA, sm90_launch.h). */
extern "C" int pa_sm90_qpack(const pa_problem *pb, int bm)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t g = p->heads_kv > 0 ? p->heads_q / p->heads_kv : 1;
    return PA_SM90_KV_PACK_GQA && pb->kv_cache && g > 1 && g <= bm ? (int)g : 1;
}

/* Right-bounded (causal) items go longest first. Over all (batch, head) pairs at once a round of 132
 * CTAs holds up to 132 pairs, whose K/V overflow the L2 on long sequences (ncu, b8 s2k h16 d128
 * causal: 128 MB of K/V, DRAM at 3.5 TB/s where cuDNN reads 1 TB/s), so every row block fetched its
 * pair's K/V from DRAM again. The kernel orders the pairs in chunks instead (FlashAttention-3's L2
 * swizzle); this is the chunk the K/V budget allows: the pairs whose K/V heads fill half the L2 (the
 * rest for Q, O and the other chunk's tail), whole GQA groups. The instance clamps it (sm90_chunk). */
#ifndef PA_SM90_L2_CHUNKS /* 0 (-DCMAKE_CUDA_FLAGS=-DPA_SM90_L2_CHUNKS=0): one chunk, for A/B runs */
#define PA_SM90_L2_CHUNKS 1
#endif
static int64_t sm90_l2_pairs(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!PA_SM90_L2_CHUNKS) return (int64_t)p->batch * p->heads_q;
    const int64_t group = p->heads_kv > 0 && p->heads_q % p->heads_kv == 0 ? p->heads_q / p->heads_kv : 1;
    const int64_t sk = pb->max_seqlen_k > 0 ? pb->max_seqlen_k : 1;
    const int64_t kv_head = sk * (p->head_dim_qk + p->head_dim_v) * 2; /* f16/bf16 */
    int l2 = 0;
    if (!pa_cuda_device_l2(&l2) || l2 <= 0) return (int64_t)p->batch * p->heads_q; /* unknown: one chunk */
    const int64_t heads = (int64_t)l2 / 2 / kv_head;
    return (heads > 0 ? heads : 1) * group;
}

extern "C" portattn_status_t pa_cuda_sm90_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                                size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_cuda_inst *in = (const pa_cuda_inst *)ch->inst; /* supports() checked the call against it */
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    pa_fwd_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;
    CUtensorMap tq, tk, tv;
    const int nc = ch->nc, qpack = ch->qpack;
    s = pa_tmap_fwd(pb, "cuda-sm90", PA_SM90_BM_NC(nc) / qpack, qpack, in->bn, &tq, &tk, &tv, NULL, err,
                    err_len);
    if (s) return s;
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t msq = pb->max_seqlen_q; /* row blocks per (batch, head): the longest sequence's */
    const int64_t l2_pairs = sm90_l2_pairs(pb);
    cudaError_t e;
    if (pb->kv_cache) {
        /* the new tokens go into the cache first (same stream), then the KV-cache instance */
        a.kv.qpack = qpack;
        s = pa_cuda_append(pb, &a, st, err, err_len);
        if (s) return s;
        e = kv_fns[in - kv_insts](&tq, &tk, &tv, &a, bf16, msq, l2_pairs, st);
    } else {
        e = fwd_fns[in - fwd_insts](&tq, &tk, &tv, &a, bf16, nc, msq, l2_pairs, st);
    }
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm90: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
