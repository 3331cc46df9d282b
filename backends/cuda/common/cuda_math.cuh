/* The arithmetic every CUDA kernel's softmax shares: 2^x on the SFU, and two floats packed into one
 * register of two 16-bit values (the A fragment of the P V product on every generation). */
#ifndef PORTATTN_CUDA_MATH_CUH
#define PORTATTN_CUDA_MATH_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

/* Two floats -> one register of two 16-bit values, the first in the low half (lower column). */
__device__ __forceinline__ uint32_t pa_pack(float lo, float hi, __half)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&h;
}

__device__ __forceinline__ uint32_t pa_pack(float lo, float hi, __nv_bfloat16)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&h;
}

/* 2^x on the SFU; ex2(-inf) = +0, which is what masked scores need. */
__device__ __forceinline__ float pa_ex2(float x)
{
#ifdef PA_CUDA_HOST_SIM /* a CPU simulation of a kernel (tests/sim) */
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#endif
}

#endif
