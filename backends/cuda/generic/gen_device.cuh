/* Device helpers of the cuda-generic kernels (forward generic_fwd.cu, backward generic_bwd.cu):
 * element loads/stores through fp32 and the warp's reductions. */
#ifndef PORTATTN_GEN_DEVICE_CUH
#define PORTATTN_GEN_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "seqlen.h"

__device__ __forceinline__ float gen_ld(const float *p) { return *p; }
__device__ __forceinline__ float gen_ld(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ float gen_ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
__device__ __forceinline__ void gen_st(float *p, float x) { *p = x; }
__device__ __forceinline__ void gen_st(__half *p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void gen_st(__nv_bfloat16 *p, float x) { *p = __float2bfloat16_rn(x); }

__device__ __forceinline__ float gen_warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ float gen_warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ double gen_warp_sum_d(double x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

#include "gen_math.h" /* gen_exact_scores */

#endif
