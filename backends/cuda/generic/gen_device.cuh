/* Device helpers of the cuda-generic kernels (forward generic_fwd.cu, backward generic_bwd.cu):
 * element loads/stores through fp32, warp reductions, and the clamped varlen sequence extent. */
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

/* Scores of f32 inputs are q.k accumulated in double and scaled before one rounding to float, in the
 * forward and in the backward alike: both passes then see the same score, and the backward's
 * exp(S - LSE) stays accurate at large logits, where S and LSE are in the hundreds and an fp32
 * rounding difference between the passes would move P by about 1e-4. 16-bit inputs keep fp32. */
template <typename T> struct gen_exact_scores { static const bool value = false; };
template <> struct gen_exact_scores<float> { static const bool value = true; };


#endif
