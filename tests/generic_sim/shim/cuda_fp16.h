/* fp16 for the host simulation: the compiler's _Float16 (round to nearest even). */
#pragma once
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half_rn(float x) { return (__half)x; }
