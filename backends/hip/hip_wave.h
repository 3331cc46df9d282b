/* The wave primitives of the HIP kernels, in one place: the real AMD builtins under hipcc
 * (hip_wave_amd.h), and an exact emulation under nvcc or on the CPU (emu/hip_wave_emu.h), so that
 * the same kernel source runs on an NVIDIA GPU or as CPU fibers (tests/sim/hip_fake): a 64-lane wave as
 * 64 consecutive threads, MFMA computed from the lane maps of hip_mfma_layout.h, cross-lane
 * exchanges through shared memory. The kernels use nothing wave-level outside this header, so the
 * emulated and the real paths differ only here.
 *   pa_in4     4 16-bit inputs of one lane (f16 or bf16 bits)
 *   pa_acc32   the 16 f32 accumulators of one lane of a 32x32 MFMA tile
 *   pa_wave_mfma32<BF16>(acc, a, b)   acc += A B (v_mfma_f32_32x32x8{f16,bf16_1k})
 *   pa_wave_xor32(x)                  the value of lane ^ 32
 *   pa_wave_any(p)                    1 if p is nonzero in any lane of the wave
 *   pa_exp2(x), pa_to_f32<BF16>(bits), pa_from_f32<BF16>(x), pa_pack2<BF16>(lo, hi)
 * and for the RDNA3 kernel (wave32; a block's waves are 32 consecutive threads, also in the emulation):
 *   pa_in16    16 16-bit inputs of one lane (a WMMA A or B operand), item k in 16-bit half k % 2
 *              of word k / 2 (whole words: clang-15 gives each 16-bit scalar its own VGPR)
 *   pa_acc8    the 8 f32 accumulators of one lane of a 16x16 WMMA tile
 *   PA_WMMA16(BF16, acc, a, b)        acc += A B (v_wmma_f32_16x16x16_{f16,bf16}, wave32)
 *   PA_XOR16(u)                       the 32-bit value of lane ^ 16 (wave32)
 *   pa_opaque(x)                      x, hidden from the optimizer: a loop-invariant address base
 *                                     made opaque inside the loop keeps clang-15 from hoisting every
 *                                     address derived from it into its own (spilled) VGPR
 *   pa_uniform(x)                     x, known by the caller to be equal in every lane, in a scalar
 *                                     register (v_readfirstlane; identity in the emulation) */
#ifndef PORTATTN_HIP_WAVE_H
#define PORTATTN_HIP_WAVE_H

#include <stdint.h>

#include "hip_mfma_layout.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define PA_WAVE_REAL 1
#elif defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#define PA_WAVE_EMU 1
#else
#error "hip_wave.h is for hipcc (AMD) or nvcc (the emulation)"
#endif

#define PA_WAVE 64 /* CDNA: wave64 */

typedef struct pa_in4 { uint16_t h[4]; } pa_in4;
typedef struct pa_acc32 { float r[16]; } pa_acc32;

#define PA_WAVE32 32 /* RDNA3: wave32 (hipcc's default for gfx11) */
typedef struct pa_in16 { uint32_t w[8]; } pa_in16;
typedef struct pa_acc8 { float r[8]; } pa_acc8;

__device__ __forceinline__ int pa_wave_lane(void) { return (int)(threadIdx.x % PA_WAVE); }

template <bool BF16> __device__ __forceinline__ float pa_to_f32(uint16_t b)
{
    if (BF16) return __uint_as_float((uint32_t)b << 16);
#ifdef PA_WAVE_REAL
    _Float16 h;
    __builtin_memcpy(&h, &b, 2);
    return (float)h;
#else
    return __half2float(__ushort_as_half(b));
#endif
}

template <bool BF16> __device__ __forceinline__ uint16_t pa_from_f32(float x)
{
    if (BF16) { /* round to nearest even; NaN stays NaN */
        const uint32_t u = __float_as_uint(x);
        if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
        return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
#ifdef PA_WAVE_REAL
    const _Float16 h = (_Float16)x;
    uint16_t b;
    __builtin_memcpy(&b, &h, 2);
    return b;
#else
    return __half_as_ushort(__float2half_rn(x));
#endif
}

/* Two f32 rounded to 16 bits (as pa_from_f32) and packed, lo in bits 0-15, without branches: the
 * early return of pa_from_f32<true> for NaN became a branch per element in clang-15's gfx1100 code,
 * splitting the RDNA3 kernel's loop into hundreds of blocks (and spilling). */
template <bool BF16> __device__ __forceinline__ uint32_t pa_pack2(float lo, float hi)
{
    if (BF16) {
        const uint32_t u = __float_as_uint(lo), v = __float_as_uint(hi);
        const uint32_t ru = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, rv = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
        const uint32_t a = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : ru;
        const uint32_t b = (v & 0x7fffffffu) > 0x7f800000u ? (v >> 16) | 0x40u : rv;
        return (a & 0xffffu) | b << 16;
    }
    return (uint32_t)pa_from_f32<false>(lo) | (uint32_t)pa_from_f32<false>(hi) << 16;
}

__device__ __forceinline__ float pa_exp2(float x)
{
    return exp2f(x); /* clang-15 has no __builtin_amdgcn_exp2f; ocml's exp2f is v_exp_f32 + range fix-ups */
}

#ifdef PA_WAVE_REAL
#include "hip_wave_amd.h"
#else
#include "emu/hip_wave_emu.h"
#endif

#endif
