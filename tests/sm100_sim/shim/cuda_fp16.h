#pragma once
#include <stdint.h>
#include "half.h"
struct __half {
    uint16_t b;
};
struct __half2 {
    __half x, y;
};
static inline __half2 __floats2half2_rn(float lo, float hi) { return __half2{{pa_f32_to_f16(lo)}, {pa_f32_to_f16(hi)}}; }
