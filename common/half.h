/* fp16 / bf16 <-> fp32 conversions on the host, round-to-nearest-even, with inf/NaN/subnormals.
 * Header-only so that the tests and tools use the very same conversions as the CPU backend. */
#ifndef PORTATTN_HALF_H
#define PORTATTN_HALF_H

#include <stdint.h>
#include <string.h>

#include "portattn.h"

static inline float pa_bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t pa_f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float pa_bf16_to_f32(uint16_t h) { return pa_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t pa_f32_to_bf16(float f)
{
    uint32_t u = pa_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float pa_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return pa_bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24 */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return pa_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t pa_f32_to_f16(float f)
{
    uint32_t u = pa_f32_to_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf (>= 65520) */
    if (a < 0x38800000u) { /* below the smallest normal 2^-14: subnormal, RNE on man * 2^-24 */
        float m = pa_bits_to_f32(a) * 16777216.0f;  /* exact: scaling by a power of two */
        uint32_t r = (uint32_t)m;
        float frac = m - (float)r;
        if (frac > 0.5f || (frac == 0.5f && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t e = (a >> 23) - 112u, man = a & 0x7fffffu;
    uint32_t h = (e << 10) | (man >> 13), rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* carry into the exponent is correct */
    return (uint16_t)(sign | h);
}

/* Element i of a buffer of dtype t, read as fp32 / written from fp32 (round to nearest even). */
static inline float pa_load_elem(portattn_dtype_t t, const void *base, int64_t i)
{
    return t == PORTATTN_DTYPE_F32 ? ((const float *)base)[i]
         : t == PORTATTN_DTYPE_F16 ? pa_f16_to_f32(((const uint16_t *)base)[i])
                                   : pa_bf16_to_f32(((const uint16_t *)base)[i]);
}

/* n elements of a row of dtype t (from element off, stride st) into dst in double, the dtype chosen
 * once per row rather than per element (the CPU backend's inner loops). */
static inline void pa_load_row_f64(portattn_dtype_t t, const void *base, int64_t off, int64_t st, int64_t n, double *dst)
{
    if (t == PORTATTN_DTYPE_F32) {
        const float *x = (const float *)base + off;
        for (int64_t d = 0; d < n; d++) dst[d] = x[d * st];
    } else if (t == PORTATTN_DTYPE_F16) {
        const uint16_t *x = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) dst[d] = pa_f16_to_f32(x[d * st]);
    } else {
        const uint16_t *x = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) dst[d] = pa_bf16_to_f32(x[d * st]);
    }
}

static inline void pa_store_elem(portattn_dtype_t t, void *base, int64_t i, float x)
{
    if (t == PORTATTN_DTYPE_F32) ((float *)base)[i] = x;
    else if (t == PORTATTN_DTYPE_F16) ((uint16_t *)base)[i] = pa_f32_to_f16(x);
    else ((uint16_t *)base)[i] = pa_f32_to_bf16(x);
}

#endif
