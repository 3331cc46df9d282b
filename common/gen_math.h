/* What the generic kernels (gen_fwd_body.h, cuda-generic's backward) share below their vendor
 * vocabulary: an intrinsic and the f32 score rule. Device code for CUDA, HIP and their CPU
 * simulations. */
#ifndef PORTATTN_GEN_MATH_H
#define PORTATTN_GEN_MATH_H

#include <stdint.h>

#include "hd.h"

/* a / b within 2 ulp for b in [2^-126, 2^126]: the device intrinsic (CUDA and HIP alike), plain C in
 * the CPU simulations. */
__device__ __forceinline__ float gen_div_fast(float a, float b)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __fdividef(a, b);
#else
    return a / b;
#endif
}

/* Scores of f32 inputs are q.k accumulated in double and scaled before one rounding to float, in the
 * forward and in the backward alike: both passes then see the same score, and the backward's
 * exp(S - LSE) stays accurate at large logits, where S and LSE are in the hundreds and an fp32
 * rounding difference between the passes would move P by about 1e-4. 16-bit inputs keep fp32. */
template <typename T> struct gen_exact_scores { static const bool value = false; };
template <> struct gen_exact_scores<float> { static const bool value = true; };

#endif
