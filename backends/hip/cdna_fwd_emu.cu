/* The hip-cdna kernel source compiled by nvcc against the wave emulation of hip_wave.h (T3): the same
 * launch shape as cdna_fwd.hip, on an NVIDIA GPU. */
#include "cdna_fwd_kernel.h"

extern "C" cudaError_t pa_hip_cdna_emu_launch(const pa_hip_args *a, int bf16, int d, int64_t max_sq, cudaStream_t stream)
{
    const int64_t mb = (max_sq + PA_CDNA_BM - 1) / PA_CDNA_BM, bh = (int64_t)a->batch * a->heads;
    const int64_t gy = bh < 65535 ? bh : 65535, gz = (bh + gy - 1) / gy;
    const dim3 grid((unsigned)mb, (unsigned)gy, (unsigned)gz), block(PA_CDNA_WAVES * PA_WAVE);
    pa_hip_args arg = *a;
    void *args[] = {&arg};
    const void *k = d == 64 ? (bf16 ? (const void *)pa_cdna_fwd<true, 64> : (const void *)pa_cdna_fwd<false, 64>)
                            : (bf16 ? (const void *)pa_cdna_fwd<true, 128> : (const void *)pa_cdna_fwd<false, 128>);
    return cudaLaunchKernel(k, grid, block, args, 0, stream);
}
