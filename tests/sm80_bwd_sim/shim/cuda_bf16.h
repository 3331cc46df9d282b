/* bf16 for the host simulation of the cuda-sm80 backward, through the library's conversions. */
#pragma once
#include "half.h"
struct __nv_bfloat16 {
    uint16_t bits;
    __nv_bfloat16() : bits(0) {}
    explicit operator float() const { return pa_bf16_to_f32(bits); }
};
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b)
{
    __nv_bfloat16 h;
    h.bits = b;
    return h;
}
static inline float __bfloat162float(__nv_bfloat16 h) { return pa_bf16_to_f32(h.bits); }
