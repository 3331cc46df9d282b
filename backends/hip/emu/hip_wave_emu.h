/* hip_wave.h's primitives emulated exactly (nvcc on an NVIDIA GPU, or the CPU fibers of tests/sim/hip_fake
 * and the threads of tests/sim/hip_sim): a 64-lane wave as 64 consecutive threads (32 for RDNA3's wave32),
 * MFMA/WMMA computed from the lane maps of hip_mfma_layout.h, cross-lane exchanges through shared
 * memory between wave barriers. Included by hip_wave.h only; no AMD build compiles this folder. */
#ifndef PORTATTN_HIP_WAVE_EMU_H
#define PORTATTN_HIP_WAVE_EMU_H


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

/* The kernels' spellings: the emulated operations take the scratch PA_WAVE_SCRATCH declared. */
#define PA_MFMA32(BF16, acc, a, b) pa_wave_mfma32_emu<BF16>(acc, a, b, pa_emu_a, pa_emu_b)
#define PA_XOR32(x) pa_wave_xor32_emu(x, pa_emu_x)
#define PA_ANY(p) pa_wave_any_emu(p, pa_emu_i)
#define PA_WMMA16(BF16, acc, a, b) pa_wave_wmma16_emu<BF16>(acc, a, b, pa_emu_a16, pa_emu_b16)
#define PA_XOR16(u) pa_wave_xor16_emu(u, pa_emu_x16)

#endif
