/* hip_wave.h's primitives on AMD hardware (hipcc, clang's AMDGPU builtins). Included by hip_wave.h
 * only, after the types and conversions it defines. */
#ifndef PORTATTN_HIP_WAVE_AMD_H
#define PORTATTN_HIP_WAVE_AMD_H

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


/* The kernels' spellings (the emulation's take its scratch arrays). */
#define PA_MFMA32(BF16, acc, a, b) pa_wave_mfma32<BF16>(acc, a, b)
#define PA_XOR32(x) pa_wave_xor32(x)
#define PA_ANY(p) pa_wave_any(p)
#define PA_WMMA16(BF16, acc, a, b) pa_wave_wmma16<BF16>(acc, a, b)
#define PA_XOR16(u) pa_wave_xor16(u)

#endif
