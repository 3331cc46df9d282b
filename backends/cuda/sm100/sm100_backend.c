/* cuda-sm100: the tcgen05 + TMEM warp-specialized kernel for B200/B300 (sm_100a and sm_103a code:
 * compute capability 10.0 and 10.3 only). This file is the backend table: which calls it takes, and
 * why not otherwise. The kernel has never run on a B200/B300, so the selector never picks it on its
 * own (common/registry.c: forced_only); a caller must force it by name. */
#include <stdint.h>

#include "backend.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm100_desc.h"
#include "sm100_launch.h"

/* Dqk == Dv of an instance only (PA_SM100_LIST): d256 needs more than TMEM's 512 columns for two Q
 * tiles. */
static int sm100_dims(const pa_problem *pb, char *why, size_t why_len)
{
    if (pa_sm100_instance(pb->p.head_dim_qk, pb->p.head_dim_v)) return 1;
    return PA_REFUSE("head dims %lld/%lld: instances take 64 and 128 with Dqk == Dv (d256 needs more than TMEM's "
                     "512 columns for two Q tiles)", (long long)pb->p.head_dim_qk, (long long)pb->p.head_dim_v);
}

/* The tcgen05 + TMEM instances (sm100_desc.h): no KV cache; decode shapes are cuda-sm80's; a CTA per
 * (batch, head, two 128-row Q tiles). Varlen: seqlen_q/k are the packed totals, max_seqlen_q bounds
 * each sequence. The emulation build (PORTATTN_SM100_EMULATION: the kernel on sm_90a with tcgen05
 * emulated, emu/sm100_emu_ptx.cuh) runs on compute capability 9.0 instead. */
static const pa_family sm100_family = {
    .dtypes = PA_DTYPES_16,
#ifdef PORTATTN_SM100_EMULATION
    .cc = {90}, .code = "sm_90a code: the tcgen05 emulation build",
#else
    .cc = {100, 103}, .code = "sm_100a/sm_103a code",
#endif
    .head_dims = sm100_dims, .refuses = PA_REFUSES_KV_CACHE, .min_queries = PA_DECODE_MAX_SQ + 1,
    .fewer_go = "decode shapes go to cuda-sm80", .needs_keys = 1, .max_seqlen = PA_SM100_MAX_SEQ,
    .grid_dim = INT32_MAX, .grid_blocks = INT32_MAX, .grid_rows = PA_SM100_QT * PA_SM100_BM,
};

static int sm100_probe(char *detail, size_t detail_len)
{
    if (!pa_cuda_probe(detail, detail_len) || !pa_cuda_arch_ok(&sm100_family, detail, detail_len)) return 0;
#ifdef PORTATTN_SM100_EMULATION
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "tcgen05 emulated on an sm_90 GPU (test build): forced calls only");
#else
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "never run on this hardware: forced calls only");
#endif
    return 1;
}

static int sm100_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                          size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_cuda_family_ok(&sm100_family, pb, why, why_len)) return 0;
    const pa_cuda_inst *in = pa_sm100_instance(p->head_dim_qk, p->head_dim_v); /* the family check found one */
#ifdef PORTATTN_SM100_EMULATION
    /* one thread runs each emulated MMA: this bounds a test build's run time per call */
    enum { emu_max_ctas = 4096 };
    const int64_t rows = PA_SM100_QT * PA_SM100_BM, blocks = (pb->max_seqlen_q + rows - 1) / rows;
    if (blocks * p->batch * p->heads_q > emu_max_ctas)
        return PA_REFUSE("emulation build: %lld CTAs, it takes at most %d (one thread computes each emulated MMA)",
                      (long long)(blocks * p->batch * p->heads_q), (int)emu_max_ctas);
#endif
    if (!pa_fwd_score_map_ok(pb, why, why_len) || !pa_cuda_smem_ok(in->family, in->d, in->smem, why, why_len)) return 0;
    if (!pa_fwd_layouts_ok(pb, why, why_len) || !pa_tma_strides_ok(pb, 1, why, why_len) ||
        !pa_cuda_fwd_ptrs_ok(pb, why, why_len))
        return 0;
    ch->inst = in;
    if (kernel && kernel_len)
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "sm100<%s,d%d,2x%dx%d>", pa_dtype_name(p->dtype), in->d,
               PA_SM100_BM, PA_SM100_BN);
    return 1;
}

static portattn_status_t sm100_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    return pa_cuda_sm100_launch(pb, ch, stream, err, err_len);
}

const pa_backend pa_backend_cuda_sm100 = {
    PORTATTN_BACKEND_CUDA_SM100, "cuda-sm100", sm100_probe, sm100_supports, sm100_run, NULL,
};
