/* fp16 for the CPU simulations of the CUDA kernels, shared by all of them: the storage is the 16 bits,
 * and every conversion goes through the library's own (common/half.h, round to nearest even), so the
 * simulated kernels round exactly as the CPU backend they are compared with. */
#pragma once
#include <stdint.h>

#include "half.h"

/* No constructor of its own, as CUDA's: an aggregate (__half{bits}), zero when value-initialised. */
struct __half {
    uint16_t bits;
    explicit operator float() const { return pa_f16_to_f32(bits); }
};
struct __half2 {
    __half x, y;
};

/* f16 to f32 through a table of all 65536 values (pa_f16_to_f32's, without its branches): the emulated
 * MFMAs convert every operand, a tenth of a simulated hip-cdna case table's time otherwise. */
struct pa_sim_f16_table {
    float f[65536];
    pa_sim_f16_table()
    {
        for (uint32_t b = 0; b < 65536; ++b) f[b] = pa_f16_to_f32((uint16_t)b);
    }
};
inline const pa_sim_f16_table pa_sim_f16;
static inline float __half2float(__half h) { return pa_sim_f16.f[h.bits]; }
static inline __half __float2half_rn(float x) { return __half{pa_f32_to_f16(x)}; }
static inline __half __ushort_as_half(unsigned short b) { return __half{(uint16_t)b}; }
static inline unsigned short __half_as_ushort(__half h) { return h.bits; }
static inline __half2 __floats2half2_rn(float lo, float hi) { return __half2{__float2half_rn(lo), __float2half_rn(hi)}; }
