/* hip-generic: the HIP backends' kernel for every call their fast kernels do not take (f32, head
 * dims that are not multiples of 8, packed queries over a KV cache, the KV-cache calls hip-rdna3's
 * WMMA kernel and hip-cdna's decode kernel decline, any strides). It is cuda-generic's kernel
 * (common/gen_fwd_body.h) on the vocabulary below: the AMD builtins under hipcc, with W the target's
 * wave (64 on CDNA, 32 on RDNA), and an exact CPU model of them for tests/sim/hip_fake
 * (emu/hipgen_vocab_emu.h).
 * Instances: hipgen_entries.h. */
#ifndef PORTATTN_HIPGEN_KERNEL_H
#define PORTATTN_HIPGEN_KERNEL_H

#include <stdint.h>

#include "hip_wave.h" /* first: the device qualifiers, and the 16-bit conversions of both builds */

#include "fwd_args.h"
#include "hipgen_entries.h"

/* The 16-bit element types, distinct so that gen_ld/gen_st overload on them. */
struct pa_hipgen_f16 { uint16_t b; };
struct pa_hipgen_bf16 { uint16_t b; };

__device__ __forceinline__ float gen_ld(const float *p) { return *p; }
__device__ __forceinline__ void gen_st(float *p, float x) { *p = x; }
__device__ __forceinline__ float gen_ld(const pa_hipgen_f16 *p) { return pa_to_f32<false>(p->b); }
__device__ __forceinline__ void gen_st(pa_hipgen_f16 *p, float x) { p->b = pa_from_f32<false>(x); }
__device__ __forceinline__ float gen_ld(const pa_hipgen_bf16 *p) { return pa_to_f32<true>(p->b); }
__device__ __forceinline__ void gen_st(pa_hipgen_bf16 *p, float x) { p->b = pa_from_f32<true>(x); }

#ifdef PA_WAVE_REAL
template <int W> __device__ __forceinline__ float gen_max(float x)
{
    for (int o = W / 2; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor(x, o, W));
    return x;
}
template <int W> __device__ __forceinline__ float gen_sum(float x)
{
    for (int o = W / 2; o > 0; o >>= 1) x += __shfl_xor(x, o, W);
    return x;
}
template <int W> __device__ __forceinline__ double gen_sum_d(double x)
{
    for (int o = W / 2; o > 0; o >>= 1) x += __shfl_xor(x, o, W);
    return x;
}
template <int W> __device__ __forceinline__ int gen_any(int p) { return __any(p); } /* the wave is the warp */
/* The wave's LDS writes before the barrier are seen by its reads after it (what CUDA's __syncwarp
 * gives); a wave runs in lockstep, so this orders memory and the compiler, and waits for nothing. */
template <int W> __device__ __forceinline__ void gen_sync_warp()
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
#include "emu/hipgen_vocab_emu.h"
#endif

#include "gen_append_body.h"
#include "gen_fwd_body.h" /* after the vocabulary it uses */

/* Entry `kind` of hipgen_entries.h for a wave of W lanes: the forward in its dtype, or the append.
 * Every entry takes the call's pa_fwd_args (fwd_args.h), as every other forward kernel does. */
template <int KIND, int W> __device__ __forceinline__ void pa_hipgen_run(const pa_fwd_args &a)
{
    constexpr int rows = PA_HIPGEN_THREADS / W;
    if constexpr (KIND == PA_HIPGEN_APPEND16) {
        pa_gen_append_body<uint16_t, W, rows>(a);
    } else if constexpr (KIND == PA_HIPGEN_APPEND32) {
        pa_gen_append_body<uint32_t, W, rows>(a);
    } else {
        /* Static LDS sized for the largest head dims: 37 KB on CDNA, 41 KB on RDNA (64 KB allowed). */
        __shared__ float smem[PA_GEN_SMEM_FLOATS(PA_HIPGEN_KT, rows, PA_GEN_DMAX, PA_GEN_DMAX)];
        if constexpr (KIND == PA_HIPGEN_F32) pa_gen_fwd_body<float, W, PA_HIPGEN_KT, rows>(a, smem);
        else if constexpr (KIND == PA_HIPGEN_F16) pa_gen_fwd_body<pa_hipgen_f16, W, PA_HIPGEN_KT, rows>(a, smem);
        else pa_gen_fwd_body<pa_hipgen_bf16, W, PA_HIPGEN_KT, rows>(a, smem);
    }
}

#endif
