/* bf16 for the host simulation, through the library's own conversions (common/half.h). */
#pragma once
#include "half.h"
struct __nv_bfloat16 {
    uint16_t bits;
};
static inline float __bfloat162float(__nv_bfloat16 h) { return pa_bf16_to_f32(h.bits); }
static inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16{pa_f32_to_bf16(x)}; }
