/* hip-rdna3 launcher (hipcc, gfx1100, wave32): one workgroup of 4 wave32s per 64 query rows of one
 * (batch, head). Not registered with the front end: the kernel has not run on AMD hardware (NOTES.md). */
#include "rdna3_fwd_kernel.h"

extern "C" hipError_t pa_hip_rdna3_launch(const pa_fwd_args *a, int bf16, int d, int64_t max_sq, hipStream_t stream)
{
    const int64_t mb = (max_sq + PA_RDNA3_BM - 1) / PA_RDNA3_BM, bh = (int64_t)a->batch * a->heads;
    const int64_t gy = bh < 65535 ? bh : 65535, gz = (bh + gy - 1) / gy;
    const dim3 grid((unsigned)mb, (unsigned)gy, (unsigned)gz), block(PA_RDNA3_WAVES * PA_WAVE32);
    if (d == 64 && bf16) hipLaunchKernelGGL((pa_rdna3_fwd<true, 64>), grid, block, 0, stream, *a);
    else if (d == 64) hipLaunchKernelGGL((pa_rdna3_fwd<false, 64>), grid, block, 0, stream, *a);
    else if (bf16) hipLaunchKernelGGL((pa_rdna3_fwd<true, 128>), grid, block, 0, stream, *a);
    else hipLaunchKernelGGL((pa_rdna3_fwd<false, 128>), grid, block, 0, stream, *a);
    return hipGetLastError();
}
