/* The f16 type and conversions the HIP kernels' emulation build uses, on the host. f16 to f32 through
 * a table of all 65536 values (exact: every f16 is an f32): GCC converts _Float16 by a libgcc call,
 * which took a tenth of a simulated case table's time. */
#pragma once
#include <stdint.h>
#include <string.h>
typedef _Float16 __half;
static inline __half __ushort_as_half(uint16_t b) { __half h; memcpy(&h, &b, 2); return h; }
static inline uint16_t __half_as_ushort(__half h) { uint16_t b; memcpy(&b, &h, 2); return b; }
struct pa_sim_f16_table {
    float f[65536];
    pa_sim_f16_table()
    {
        for (uint32_t b = 0; b < 65536; ++b) f[b] = (float)__ushort_as_half((uint16_t)b);
    }
};
inline const pa_sim_f16_table pa_sim_f16_to_f32;
static inline float __half2float(__half h) { return pa_sim_f16_to_f32.f[__half_as_ushort(h)]; }
static inline __half __float2half_rn(float x) { return (__half)x; }
