/* cuda-sm90: the wgmma + TMA warp-specialized kernel for H100/H200 (sm_90a code runs on compute
 * capability 9.0 only), with KV-cache instances for prefill and serving calls over a cache. This
 * file is the backend table: which calls it takes, and why not otherwise (the selector then falls
 * back to cuda-sm80 and shows the reason). */
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm90_launch.h"

static int sm90_device(char *why, size_t why_len)
{
    int major = 0, minor = 0;
    char dev[96];
    if (!pa_cuda_device_info(&major, &minor, NULL, why ? dev : NULL, why ? sizeof dev : 0)) return PA_REFUSE("%s", dev);
    if (major != 9 || minor != 0)
        return PA_REFUSE("needs compute capability 9.0 (sm_90a code), device is %d.%d", major, minor);
    return 1;
}

static int sm90_probe(char *detail, size_t detail_len)
{
    return pa_cuda_probe(detail, detail_len) && sm90_device(detail, detail_len);
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
    const portattn_fwd_params_t *p = &pb->p;
    if (!sm90_device(why, why_len)) return 0;
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return PA_REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    const pa_cuda_inst *in = pa_sm90_instance(pb, why, why_len);
    if (!in) return 0;
    const int d = in->d;
    /* Varlen: seqlen_q/k are the packed totals (the tensor maps' rows, int32 row arithmetic); the
     * grid and the decode-shape test go by the longest sequence, max_seqlen_q. */
    const int64_t msq = pb->max_seqlen_q; /* seqlen_q without varlen */
    if (msq <= PA_DECODE_MAX_SQ) {
        if (pb->varlen)
            return PA_REFUSE("varlen with max_seqlen_q = %lld: decode shapes (<= %d query tokens) go to cuda-sm80",
                          (long long)msq, PA_DECODE_MAX_SQ);
        return PA_REFUSE("%lld query tokens: cuda-sm80's split-KV decode kernel takes <= %d", (long long)msq,
                      PA_DECODE_MAX_SQ);
    }
    if (p->seqlen_k < 1) return PA_REFUSE("no keys (a TMA map needs a row)");
    if (p->seqlen_q > PA_SM90_MAX_SEQ || p->seqlen_k > PA_SM90_MAX_SEQ)
        return PA_REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (pb->kv_cache && !sm90_kv_ok(pb, why, why_len)) return 0;
    const int nc = pa_sm90_nc(pb, d), bm = PA_SM90_BM_NC(nc), qpack = pa_sm90_qpack(pb, bm);
    const int64_t blocks = (msq + bm / qpack - 1) / (bm / qpack);
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || blocks * p->batch * (p->heads_q / qpack) > INT32_MAX)
        return PA_REFUSE("batch %lld x heads %lld x row blocks over 2^31-1 work items", (long long)p->batch,
                      (long long)p->heads_q);
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    int optin = 0;
    if (!pa_cuda_device_smem(&optin, NULL)) return PA_REFUSE("cannot read the device's shared memory limit");
    const int smem = in->smem;
    if (optin < smem)
        return PA_REFUSE("d%d%s needs %d bytes of shared memory, device allows %d per block", d,
                      pb->kv_cache ? " (KV cache)" : "", smem, optin);
    if ((!pb->kv_cache && !pa_fwd_layouts_ok(pb, why, why_len)) || !pa_tma_strides_ok(pb, 0, why, why_len) ||
        !pa_cuda_fwd_ptrs_ok(pb, why, why_len))
        return 0;
    ch->inst = in, ch->nc = nc, ch->bm = bm, ch->qpack = qpack;
    if (kernel && kernel_len) {
        char pack[24];
        snprintf(pack, sizeof pack, "packgqa%d", qpack);
        pa_kernel_name(kernel, kernel_len, in->family, dt, d, pb, bm, in->bn,
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
