/* cuda-sm90: the wgmma + TMA warp-specialized kernel for H100/H200 (sm_90a code runs on compute
 * capability 9.0 only), with KV-cache instances for prefill and serving calls over a cache. This
 * file is the backend table: which calls it takes, and why not otherwise (the selector then falls
 * back to cuda-sm80 and shows the reason). */
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm90_launch.h"

static int sm90_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_sm90_instance(pb, why, why_len) != NULL;
}

/* The dense and KV-cache instances (sm90_launch.h). Varlen: seqlen_q/k are the packed totals (the tensor
 * maps' rows, int32 row arithmetic) and the query tokens max_seqlen_q, the longest sequence's. Decode
 * shapes are cuda-sm80's: its split-KV kernel reads K/V at copy bandwidth. The grid counts the
 * persistent scheduler's work items at the shape sm90_supports picks (rows, GQA packing). */
static const pa_family sm90_family = {
    .dtypes = PA_DTYPES_16, .cc = {90}, .code = "sm_90a code", .head_dims = sm90_dims,
    .min_queries = PA_DECODE_MAX_SQ + 1, .fewer_go = "decode shapes go to cuda-sm80", .needs_keys = 1,
    .max_seqlen = PA_SM90_MAX_SEQ, .grid_dim = INT32_MAX, .grid_blocks = INT32_MAX, .grid_rows = PA_GRID_AT_LAUNCH,
};

static int sm90_probe(char *detail, size_t detail_len)
{
    return pa_cuda_probe(detail, detail_len) && pa_cuda_arch_ok(&sm90_family, detail, detail_len);
}

/* A KV-cache call (per-sequence caches or a page pool, seqused_k, append; packed queries or not):
 * K and V as the paged family's layouts (their batch or page stride is used under varlen too), and
 * pages of whole swizzle atoms (sm90_pages). */
static int sm90_kv_ok(const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->block_table && p->page_size < PA_SM90_MIN_PAGE)
        return PA_REFUSE("pages of %lld rows: its TMA boxes need at least %d (cuda-sm80's paged prefill takes them)",
                      (long long)p->page_size, PA_SM90_MIN_PAGE);
    return pa_fwd_kv_layouts_ok(pb, why, why_len);
}

static int sm90_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                         size_t why_len)
{
    if (!pa_cuda_family_ok(&sm90_family, pb, why, why_len)) return 0;
    const pa_cuda_inst *in = pa_sm90_instance(pb, NULL, 0); /* the family check found one */
    const int d = in->d;
    if (pb->kv_cache && !sm90_kv_ok(pb, why, why_len)) return 0;
    const int nc = pa_sm90_nc(pb, d), bm = PA_SM90_BM_NC(nc), qpack = pa_sm90_qpack(pb, bm);
    if (!pa_family_grid_ok(&sm90_family, pb, bm / qpack, qpack, why, why_len) ||
        !pa_fwd_score_map_ok(pb, why, why_len) || !pa_cuda_smem_ok(in->family, d, in->smem, why, why_len))
        return 0;
    if ((!pb->kv_cache && !pa_fwd_layouts_ok(pb, why, why_len)) || !pa_tma_strides_ok(pb, 0, why, why_len) ||
        !pa_cuda_fwd_ptrs_ok(pb, why, why_len))
        return 0;
    ch->inst = in, ch->nc = nc, ch->bm = bm, ch->qpack = qpack;
    if (kernel && kernel_len) {
        char pack[24];
        snprintf(pack, sizeof pack, "packgqa%d", qpack);
        pa_kernel_name(kernel, kernel_len, in->family, pa_dtype_name(pb->p.dtype), d, pb, bm, in->bn,
                       qpack > 1 ? pack : NULL);
    }
    return 1;
}

static portattn_status_t sm90_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    return pa_cuda_sm90_launch(pb, ch, stream, err, err_len);
}

const pa_backend pa_backend_cuda_sm90 = {
    PORTATTN_BACKEND_CUDA_SM90, "cuda-sm90", sm90_probe, sm90_supports, sm90_run, NULL,
};
