/* cuda-sm100: the tcgen05 + TMEM warp-specialized kernel for B200/B300 (sm_100a and sm_103a code:
 * compute capability 10.0 and 10.3 only). This file is the backend table: which calls it takes, and
 * why not otherwise. The kernel has never run on a B200/B300, so the selector never picks it on its
 * own (common/registry.c: forced_only); a caller must force it by name. */
#include <stdint.h>

#include "backend.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "sm100_desc.h"
#include "sm100_launch.h"

static int sm100_device(char *why, size_t why_len)
{
    int major = 0, minor = 0;
    char dev[96];
    if (!pa_cuda_device_info(&major, &minor, NULL, dev, sizeof dev)) return PA_REFUSE("%s", dev);
#ifdef PORTATTN_SM100_EMULATION /* test build: the kernel on sm_90a with tcgen05 emulated (emu/sm100_emu_ptx.cuh) */
    if (major != 9 || minor != 0)
        return PA_REFUSE("the emulation build runs on compute capability 9.0 (sm_90a code), device is %d.%d", major, minor);
    return 1;
#endif
    if (major != 10 || (minor != 0 && minor != 3))
        return PA_REFUSE("needs compute capability 10.0 or 10.3 (sm_100a/sm_103a code), device is %d.%d", major, minor);
    return 1;
}

static int sm100_probe(char *detail, size_t detail_len)
{
    if (!pa_cuda_probe(detail, detail_len) || !sm100_device(detail, detail_len)) return 0;
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
    if (!sm100_device(why, why_len)) return 0;
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return PA_REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d || !PA_SM100_HAS_DIM(d))
        return PA_REFUSE("head dims %lld/%lld: instances take 64 and 128 with Dqk == Dv (d256 needs more than TMEM's "
                      "512 columns for two Q tiles)", (long long)d, (long long)p->head_dim_v);
    if (pb->kv_cache) return PA_REFUSE("KV cache: not in this kernel");
    /* varlen: seqlen_q/k are the packed totals, max_seqlen_q bounds each sequence */
    if (pb->max_seqlen_q <= PA_DECODE_MAX_SQ)
        return PA_REFUSE("%lld query tokens: decode shapes go to cuda-sm80's split-KV kernel", (long long)pb->max_seqlen_q);
    if (p->seqlen_k < 1) return PA_REFUSE("no keys (a TMA map needs a row)");
    if (p->seqlen_q > PA_SM100_MAX_SEQ || p->seqlen_k > PA_SM100_MAX_SEQ)
        return PA_REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    const int64_t rows = PA_SM100_QT * PA_SM100_BM, blocks = (pb->max_seqlen_q + rows - 1) / rows;
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || blocks * p->batch * p->heads_q > INT32_MAX)
        return PA_REFUSE("batch %lld x heads %lld x row blocks over the grid's 2^31-1", (long long)p->batch,
                      (long long)p->heads_q);
#ifdef PORTATTN_SM100_EMULATION
    /* one thread runs each emulated MMA: this bounds a test build's run time per call */
    enum { emu_max_ctas = 4096 };
    if (blocks * p->batch * p->heads_q > emu_max_ctas)
        return PA_REFUSE("emulation build: %lld CTAs, it takes at most %d (one thread computes each emulated MMA)",
                      (long long)(blocks * p->batch * p->heads_q), (int)emu_max_ctas);
#endif
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    int optin = 0;
    if (!pa_cuda_device_smem(&optin, NULL)) return PA_REFUSE("cannot read the device's shared memory limit");
    if (optin < PA_SM100_SMEM((int)d))
        return PA_REFUSE("d%lld needs %d bytes of shared memory, device allows %d per block", (long long)d,
                      PA_SM100_SMEM((int)d), optin);
    if (!pa_fwd_layouts_ok(pb, why, why_len) || !pa_tma_strides_ok(pb, 1, why, why_len) ||
        !pa_cuda_fwd_ptrs_ok(pb, why, why_len))
        return 0;
    ch->inst = pa_sm100_instance(d, d);
    if (kernel && kernel_len)
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "sm100<%s,d%lld,2x%dx%d>", dt, (long long)d, PA_SM100_BM,
               PA_SM100_BN);
    return 1;
}

static portattn_status_t sm100_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    return pa_cuda_sm100_launch(pb, ch, stream, err, err_len);
}

const pa_backend pa_backend_cuda_sm100 = {
    PORTATTN_BACKEND_CUDA_SM100, "cuda-sm100", sm100_probe, sm100_supports, sm100_run, NULL,
};
