/* fp16 for the host simulation of the cuda-sm80 backward, through the library's conversions. */
#pragma once
#include "half.h"
struct __half {
    uint16_t bits;
    __half() : bits(0) {}
    explicit operator float() const { return pa_f16_to_f32(bits); }
};
static inline __half __ushort_as_half(unsigned short b)
{
    __half h;
    h.bits = b;
    return h;
}
static inline float __half2float(__half h) { return pa_f16_to_f32(h.bits); }
