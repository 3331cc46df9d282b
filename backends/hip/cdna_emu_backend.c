/* hip-cdna under the nvcc wave emulation (T3; builds with -DPORTATTN_HIP_EMULATION=ON only): the
 * CDNA kernel source (cdna_fwd_kernel.h) compiled by nvcc against hip_wave.h's emulation, run on an
 * NVIDIA GPU so that the case table can check it against the CPU reference. It takes a call only
 * when forced by params->backend, so the selector never picks an emulation for real work. */
#include <stdint.h>

#include "backend.h"
#include "cuda_host.h"
#include "sm80_launch.h"

portattn_status_t pa_hip_cdna_emu_run(const pa_problem *pb, void *stream, char *err, size_t err_len); /* cdna_fwd_emu.cu */

#define REFUSE(...) (pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, __VA_ARGS__), 0)

static int emu_probe(char *detail, size_t detail_len)
{
    if (!pa_cuda_probe(detail, detail_len)) return 0;
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "emulated on a CUDA device (hip_wave.h), forced calls only");
    return 1;
}

static int emu_supports(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->backend != PORTATTN_BACKEND_HIP_CDNA)
        return REFUSE("the hip-cdna emulation runs only when forced by params->backend");
    const char *dt = p->dtype == PORTATTN_DTYPE_F16 || p->dtype == PORTATTN_DTYPE_BF16 ? pa_dtype_name(p->dtype) : NULL;
    if (!dt) return REFUSE("dtype %s not supported (f16, bf16)", p->dtype == PORTATTN_DTYPE_F32 ? "f32" : "?");
    const int64_t d = p->head_dim_qk;
    if (p->head_dim_v != d || (d != 64 && d != 128))
        return REFUSE("head dims %lld/%lld: instances take 64 and 128 with Dqk == Dv", (long long)d,
                      (long long)p->head_dim_v);
    if (pb->kv_cache) return REFUSE("KV cache: not in this kernel");
    if (p->seqlen_q > (1 << 30) - 1 || p->seqlen_k > (1 << 30) - 1)
        return REFUSE("sequence lengths %lld/%lld over 2^30-1", (long long)p->seqlen_q, (long long)p->seqlen_k);
    if (p->batch > INT32_MAX || p->heads_q > INT32_MAX || p->batch * p->heads_q > (int64_t)65535 * 65535)
        return REFUSE("batch %lld x heads %lld over the grid", (long long)p->batch, (long long)p->heads_q);
    if (!pa_sm80_score_map_ok(pb, why, why_len)) return 0;
    if (p->batch > 0 && pb->max_seqlen_q > 0 &&
        (!pa_sm80_layouts_ok(pb, why, why_len) || !pa_sm80_prefill_ptrs_ok(pb, why, why_len)))
        return 0;
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "cdna-emu<%s,d%lld,128x32>", dt, (long long)d);
    return 1;
}

static portattn_status_t emu_run(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    return pa_hip_cdna_emu_run(pb, stream, err, err_len);
}

const pa_backend pa_backend_hip_cdna_emu = {
    PORTATTN_BACKEND_HIP_CDNA, "hip-cdna", emu_probe, emu_supports, emu_run, NULL,
};
