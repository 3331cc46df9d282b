/* The wave primitives of the HIP kernels, in one place: the real AMD builtins under hipcc,
 * and an exact emulation under nvcc or on the CPU (T3: the same kernel source runs on an NVIDIA GPU
 * or as CPU fibers, tests/hip_fake; a 64-lane wave as 64 consecutive threads, MFMA computed from the lane maps of hip_mfma_layout.h, cross-lane
 * exchanges through shared memory). The kernels use nothing wave-level outside this header, so the
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
typedef _Float16 pa_h4v __attribute__((ext_vector_type(4)));
typedef short pa_s4v __attribute__((ext_vector_type(4)));
typedef float pa_f16v __attribute__((ext_vector_type(16)));

/* The per-wave scratch the emulation needs; nothing on AMD. */
#define PA_WAVE_SCRATCH(nwaves)

template <bool BF16> __device__ __forceinline__ void pa_wave_mfma32(pa_acc32 &acc, const pa_in4 &a, const pa_in4 &b)
{
    pa_f16v c;
#pragma unroll
    for (int i = 0; i < 16; ++i) c[i] = acc.r[i];
    if (BF16) {
        pa_s4v x, y;
        __builtin_memcpy(&x, &a, 8);
        __builtin_memcpy(&y, &b, 8);
        c = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(x, y, c, 0, 0, 0);
    } else {
        pa_h4v x, y;
        __builtin_memcpy(&x, &a, 8);
        __builtin_memcpy(&y, &b, 8);
        c = __builtin_amdgcn_mfma_f32_32x32x8f16(x, y, c, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) acc.r[i] = c[i];
}

__device__ __forceinline__ float pa_wave_xor32(float x) { return __shfl_xor(x, 32); }
__device__ __forceinline__ int pa_wave_any(int p) { return __any(p); }

typedef _Float16 pa_h16v __attribute__((ext_vector_type(16)));
typedef short pa_s16v __attribute__((ext_vector_type(16)));
typedef float pa_f8v __attribute__((ext_vector_type(8)));
typedef unsigned pa_u8v __attribute__((ext_vector_type(8)));

/* The per-wave scratch the wave32 emulation needs; nothing on AMD. */
#define PA_WAVE32_SCRATCH(nwaves)

/* v_wmma_f32_16x16x16_{f16,bf16} (gfx11, wave32); the builtins need gfx11-insts, so only the RDNA3
 * kernel may instantiate this (a template is emitted only where used). */
template <bool BF16> __device__ __forceinline__ void pa_wave_wmma16(pa_acc8 &acc, const pa_in16 &a, const pa_in16 &b)
{
    pa_f8v c;
    pa_u8v aw, bw; /* whole words, bit-cast: a memcpy into the 16-bit vector split and re-packed them */
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = acc.r[i], aw[i] = a.w[i], bw[i] = b.w[i];
    if (BF16)
        c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(pa_s16v, aw), __builtin_bit_cast(pa_s16v, bw), c);
    else
        c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(pa_h16v, aw), __builtin_bit_cast(pa_h16v, bw), c);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc.r[i] = c[i];
}

/* An empty asm that "changes" x: LICM cannot hoist what is derived from it out of the loop. */
__device__ __forceinline__ int pa_opaque(int x)
{
    asm volatile("" : "+v"(x));
    return x;
}

/* clang-15 left the (uniform) results of the 64-bit batch/head division in VGPRs, and with them
 * every pointer derived from them: 8+ VGPRs the RDNA3 kernel cannot spare. */
__device__ __forceinline__ int pa_uniform(int x) { return __builtin_amdgcn_readfirstlane(x); }

/* HIP's __shfl_xor (ds_bpermute) with the wave32 width: the documented, portable form; v_permlanex16
 * would avoid the LDS crossbar but its lane-select encoding is unverified here. */
__device__ __forceinline__ uint32_t pa_wave_xor16(uint32_t x) { return (uint32_t)__shfl_xor((int)x, 16, 32); }

#else /* PA_WAVE_EMU: 64 consecutive threads of the block are one wave */

/* Shared scratch of the emulation: operands of every lane of every wave. */
#define PA_WAVE_SCRATCH(nwaves) __shared__ pa_in4 pa_emu_a[nwaves][PA_WAVE], pa_emu_b[nwaves][PA_WAVE]; \
    __shared__ float pa_emu_x[nwaves][PA_WAVE]; __shared__ int pa_emu_i[nwaves][PA_WAVE]

/* Barrier over the 64 threads of this wave (named barrier 1 + wave; a block has at most 15 waves). */
__device__ __forceinline__ void pa_wave_sync(void)
{
    asm volatile("bar.sync %0, %1;" ::"r"(1 + (int)(threadIdx.x / PA_WAVE)), "r"(PA_WAVE) : "memory");
}

/* gfx90a's f16 and bf16 MFMAs flush subnormal inputs and outputs to zero (AMD's MIOpen documentation,
 * "MI200 MFMA behavior specifics"); gfx940 and later keep them. PA_EMU_MFMA_FTZ says whether the
 * emulated target flushes: 1 (gfx90a, the stricter target) unless the build defines it; the CPU
 * simulation defines it as a variable its runtime sets for the target it simulates. */
#ifndef PA_EMU_MFMA_FTZ
#define PA_EMU_MFMA_FTZ 1
#endif

/* A 16-bit float with a zero exponent field becomes a zero of its sign. */
template <bool BF16> __device__ __forceinline__ uint16_t pa_ftz16(uint16_t b)
{
    return (b & (BF16 ? 0x7f80u : 0x7c00u)) == 0 ? (uint16_t)(b & 0x8000u) : b;
}
__device__ __forceinline__ float pa_ftz32(float x)
{
    return (__float_as_uint(x) & 0x7f800000u) == 0 ? __uint_as_float(__float_as_uint(x) & 0x80000000u) : x;
}

/* acc += A B of v_mfma_f32_32x32x8: element (i, k) of A is item k % 4 of lane i + 32 (k / 4), (k, j)
 * of B item k % 4 of lane j + 32 (k / 4), and this lane's accumulator register r holds D(i, j) with
 * (lane, r) = pa_mfma32_d(i, j). Products of 16-bit values are exact in f32; the sum runs in k order.
 * Under PA_EMU_MFMA_FTZ, subnormal A, B, C and D values are zeros (the sum itself keeps them). */
template <bool BF16>
__device__ __forceinline__ void pa_wave_mfma32_emu(pa_acc32 &acc, const pa_in4 &a, const pa_in4 &b,
                                                   pa_in4 (*sa)[PA_WAVE], pa_in4 (*sb)[PA_WAVE])
{
    const int w = threadIdx.x / PA_WAVE, l = threadIdx.x % PA_WAVE;
    sa[w][l] = a, sb[w][l] = b;
    pa_wave_sync();
    const int j = l % 32;
    const bool ftz = PA_EMU_MFMA_FTZ;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        const int i = 8 * (r / 4) + 4 * (l / 32) + r % 4; /* inverse of pa_mfma32_d */
        float s = ftz ? pa_ftz32(acc.r[r]) : acc.r[r];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            uint16_t x = sa[w][i + 32 * (k / 4)].h[k % 4], y = sb[w][j + 32 * (k / 4)].h[k % 4];
            if (ftz) x = pa_ftz16<BF16>(x), y = pa_ftz16<BF16>(y);
            s = fmaf(pa_to_f32<BF16>(x), pa_to_f32<BF16>(y), s);
        }
        acc.r[r] = ftz ? pa_ftz32(s) : s;
    }
    pa_wave_sync(); /* the scratch is reused by the next call */
}

__device__ __forceinline__ int pa_wave_any_emu(int p, int (*si)[PA_WAVE])
{
    const int w = threadIdx.x / PA_WAVE, l = threadIdx.x % PA_WAVE;
    si[w][l] = p != 0;
    pa_wave_sync();
    int any = 0;
    for (int i = 0; i < PA_WAVE; ++i) any |= si[w][i];
    pa_wave_sync();
    return any;
}

__device__ __forceinline__ float pa_wave_xor32_emu(float x, float (*sx)[PA_WAVE])
{
    const int w = threadIdx.x / PA_WAVE, l = threadIdx.x % PA_WAVE;
    sx[w][l] = x;
    pa_wave_sync();
    const float y = sx[w][l ^ 32];
    pa_wave_sync();
    return y;
}

/* ---- wave32 (RDNA3): 32 consecutive threads of the block are one wave ---- */
__device__ __forceinline__ int pa_opaque(int x) { return x; }
__device__ __forceinline__ int pa_uniform(int x) { return x; }

#define PA_WAVE32_SCRATCH(nwaves) __shared__ pa_in16 pa_emu_a16[nwaves][PA_WAVE32], pa_emu_b16[nwaves][PA_WAVE32]; \
    __shared__ uint32_t pa_emu_x16[nwaves][PA_WAVE32]

/* Barrier over the 32 threads of this wave32 (named barrier 1 + wave, at most 15 waves). */
__device__ __forceinline__ void pa_wave32_sync(void)
{
    asm volatile("bar.sync %0, %1;" ::"r"(1 + (int)(threadIdx.x / PA_WAVE32)), "r"(PA_WAVE32) : "memory");
}

/* acc += A B of v_wmma_f32_16x16x16 (wave32), from the lane maps of hip_mfma_layout.h: A(i, k) is
 * item k of lane i, B(k, j) item k of lane j, each held twice (lanes l and l + 16); this lane's
 * register r holds D(i, j) with (lane, r) = pa_wmma_d(i, j). The lanes of each half-wave compute
 * from their own half's copies, so an operand not replicated across the halves gives wrong numbers.
 * Products of 16-bit values are exact in f32; the sum runs in k order. */
template <bool BF16>
__device__ __forceinline__ void pa_wave_wmma16_emu(pa_acc8 &acc, const pa_in16 &a, const pa_in16 &b,
                                                   pa_in16 (*sa)[PA_WAVE32], pa_in16 (*sb)[PA_WAVE32])
{
    const int w = threadIdx.x / PA_WAVE32, l = threadIdx.x % PA_WAVE32, half = l / 16, j = l % 16;
    sa[w][l] = a, sb[w][l] = b;
    pa_wave32_sync();
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        const int i = 2 * r + half; /* inverse of pa_wmma_d */
        float s = acc.r[r];
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            const pa_lane_item ai = pa_wmma_a(i, k), bi = pa_wmma_b(k, j);
            const uint16_t x = (uint16_t)(sa[w][ai.lane + 16 * half].w[ai.item / 2] >> 16 * (ai.item % 2));
            const uint16_t y = (uint16_t)(sb[w][bi.lane + 16 * half].w[bi.item / 2] >> 16 * (bi.item % 2));
            s = fmaf(pa_to_f32<BF16>(x), pa_to_f32<BF16>(y), s);
        }
        acc.r[r] = s;
    }
    pa_wave32_sync(); /* the scratch is reused by the next call */
}

__device__ __forceinline__ uint32_t pa_wave_xor16_emu(uint32_t x, uint32_t (*sx)[PA_WAVE32])
{
    const int w = threadIdx.x / PA_WAVE32, l = threadIdx.x % PA_WAVE32;
    sx[w][l] = x;
    pa_wave32_sync();
    const uint32_t y = sx[w][l ^ 16];
    pa_wave32_sync();
    return y;
}
#endif

/* Kernel-side spellings that work in both builds (the emulation passes its scratch). */
#ifdef PA_WAVE_REAL
#define PA_MFMA32(BF16, acc, a, b) pa_wave_mfma32<BF16>(acc, a, b)
#define PA_XOR32(x) pa_wave_xor32(x)
#define PA_ANY(p) pa_wave_any(p)
#define PA_WMMA16(BF16, acc, a, b) pa_wave_wmma16<BF16>(acc, a, b)
#define PA_XOR16(u) pa_wave_xor16(u)
#else
#define PA_MFMA32(BF16, acc, a, b) pa_wave_mfma32_emu<BF16>(acc, a, b, pa_emu_a, pa_emu_b)
#define PA_XOR32(x) pa_wave_xor32_emu(x, pa_emu_x)
#define PA_ANY(p) pa_wave_any_emu(p, pa_emu_i)
#define PA_WMMA16(BF16, acc, a, b) pa_wave_wmma16_emu<BF16>(acc, a, b, pa_emu_a16, pa_emu_b16)
#define PA_XOR16(u) pa_wave_xor16_emu(u, pa_emu_x16)
#endif

#endif
