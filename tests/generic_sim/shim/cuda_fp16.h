/* fp16 for the host simulation, through the library's own conversions (common/half.h). */
#pragma once
#include "half.h"
struct __half {
    uint16_t bits;
};
static inline float __half2float(__half h) { return pa_f16_to_f32(h.bits); }
static inline __half __float2half_rn(float x) { return __half{pa_f32_to_f16(x)}; }
