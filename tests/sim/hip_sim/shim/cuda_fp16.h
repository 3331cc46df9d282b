#pragma once
#include <stdint.h>
#include <string.h>
typedef _Float16 __half;
static inline __half __ushort_as_half(uint16_t b) { __half h; memcpy(&h, &b, 2); return h; }
static inline uint16_t __half_as_ushort(__half h) { uint16_t b; memcpy(&b, &h, 2); return b; }
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half_rn(float x) { return (__half)x; }
