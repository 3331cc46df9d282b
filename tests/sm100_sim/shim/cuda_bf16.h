#pragma once
#include <stdint.h>
#include "half.h"
struct __nv_bfloat16 {
    uint16_t b;
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
static inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi)
{
    return __nv_bfloat162{{pa_f32_to_bf16(lo)}, {pa_f32_to_bf16(hi)}};
}
