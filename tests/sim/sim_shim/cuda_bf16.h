/* bf16 for the CPU simulations of the CUDA kernels, shared by all of them: the storage is the 16 bits,
 * and every conversion goes through the library's own (common/half.h, round to nearest even). */
#pragma once
#include <stdint.h>

#include "half.h"

/* No constructor of its own, as CUDA's: an aggregate, zero when value-initialised. */
struct __nv_bfloat16 {
    uint16_t bits;
    explicit operator float() const { return pa_bf16_to_f32(bits); }
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};

static inline float __bfloat162float(__nv_bfloat16 h) { return pa_bf16_to_f32(h.bits); }
static inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16{pa_f32_to_bf16(x)}; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16{(uint16_t)b}; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi)
{
    return __nv_bfloat162{__float2bfloat16_rn(lo), __float2bfloat16_rn(hi)};
}
