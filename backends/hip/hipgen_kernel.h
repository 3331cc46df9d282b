/* hip-generic: the HIP backends' kernel for every call their fast kernels do not take (f32, head
 * dims that are not multiples of 8, packed queries over a KV cache, the KV-cache calls hip-rdna3's
 * WMMA kernel and hip-cdna's decode kernel decline, any strides). It is cuda-generic's kernel
 * (common/gen_fwd_body.h) on the vocabulary below: the AMD builtins under hipcc, with W the target's
 * wave (64 on CDNA, 32 on RDNA), and an exact CPU model of them for tests/hip_fake, where each wave
 * is W consecutive fibers and cross-lane values pass through a shared array between wave barriers.
 * Instances: hipgen_entries.h. */
#ifndef PORTATTN_HIPGEN_KERNEL_H
#define PORTATTN_HIPGEN_KERNEL_H

#include <stdint.h>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define PA_HIPGEN_REAL 1
#else /* the CPU simulation (tests/hip_fake: -D__CUDACC__ and its shim first) */
#include "half.h"
#endif

#include "hipgen_entries.h"
#include "problem.h"

/* The 16-bit element types, distinct so that gen_ld/gen_st overload on them. */
struct pa_hipgen_f16 { uint16_t b; };
struct pa_hipgen_bf16 { uint16_t b; };

__device__ __forceinline__ float pa_hipgen_bits_f32(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
__device__ __forceinline__ uint32_t pa_hipgen_f32_bits(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }

__device__ __forceinline__ float gen_ld(const float *p) { return *p; }
__device__ __forceinline__ void gen_st(float *p, float x) { *p = x; }
__device__ __forceinline__ float gen_ld(const pa_hipgen_bf16 *p) { return pa_hipgen_bits_f32((uint32_t)p->b << 16); }
__device__ __forceinline__ void gen_st(pa_hipgen_bf16 *p, float x)
{
    const uint32_t u = pa_hipgen_f32_bits(x); /* round to nearest even; NaN stays NaN (as half.h) */
    p->b = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#ifdef PA_HIPGEN_REAL
__device__ __forceinline__ float gen_ld(const pa_hipgen_f16 *p)
{
    _Float16 h;
    __builtin_memcpy(&h, &p->b, 2);
    return (float)h;
}
__device__ __forceinline__ void gen_st(pa_hipgen_f16 *p, float x)
{
    const _Float16 h = (_Float16)x;
    __builtin_memcpy(&p->b, &h, 2);
}

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
__device__ __forceinline__ float gen_ld(const pa_hipgen_f16 *p) { return pa_f16_to_f32(p->b); }
__device__ __forceinline__ void gen_st(pa_hipgen_f16 *p, float x) { p->b = pa_f32_to_f16(x); }

/* The butterfly of W lanes as the hardware computes it (lane l meets lane l ^ o, o = W/2 .. 1), with
 * one exchange: every lane's value through a block-wide array between two barriers of its wave, then
 * the whole butterfly replayed by each lane (workgroups run one at a time: one array per type). */
template <int W, typename V, typename Op> inline V pa_hipgen_butterfly(V x, Op op)
{
    static V lanes[1024];
    lanes[threadIdx.x] = x;
    sim_sync_wave();
    V v[W];
    const unsigned base = threadIdx.x & ~(unsigned)(W - 1);
    for (int l = 0; l < W; ++l) v[l] = lanes[base + l];
    sim_sync_wave();
    for (int o = W / 2; o > 0; o >>= 1) {
        V n[W];
        for (int l = 0; l < W; ++l) n[l] = op(v[l], v[l ^ o]);
        for (int l = 0; l < W; ++l) v[l] = n[l];
    }
    return v[threadIdx.x & (W - 1)];
}
template <int W> inline float gen_max(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return fmaxf(a, b); }); }
template <int W> inline float gen_sum(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return a + b; }); }
template <int W> inline double gen_sum_d(double x) { return pa_hipgen_butterfly<W>(x, [](double a, double b) { return a + b; }); }
template <int W> inline int gen_any(int p) { return pa_hipgen_butterfly<W>(p != 0, [](int a, int b) { return a | b; }); }
template <int W> inline void gen_sync_warp() { sim_sync_wave(); }
#endif

#include "gen_append_body.h"
#include "gen_fwd_body.h" /* after the vocabulary it uses */

/* Entry `kind` of hipgen_entries.h for a wave of W lanes: the forward in its dtype, or the append. */
template <int KIND, int W> __device__ __forceinline__ void pa_hipgen_run(const pa_hipgen_args &a)
{
    constexpr int rows = PA_HIPGEN_THREADS / W;
    if constexpr (KIND == PA_HIPGEN_APPEND16) {
        pa_gen_append_body<uint16_t, W, rows>(a.pb);
    } else if constexpr (KIND == PA_HIPGEN_APPEND32) {
        pa_gen_append_body<uint32_t, W, rows>(a.pb);
    } else {
        /* Static LDS sized for the largest head dims: 37 KB on CDNA, 41 KB on RDNA (64 KB allowed). */
        __shared__ float smem[PA_GEN_SMEM_FLOATS(PA_HIPGEN_KT, rows, PA_GEN_DMAX, PA_GEN_DMAX)];
        if constexpr (KIND == PA_HIPGEN_F32) pa_gen_fwd_body<float, W, PA_HIPGEN_KT, rows>(a.pb, a.inv_cap, smem);
        else if constexpr (KIND == PA_HIPGEN_F16) pa_gen_fwd_body<pa_hipgen_f16, W, PA_HIPGEN_KT, rows>(a.pb, a.inv_cap, smem);
        else pa_gen_fwd_body<pa_hipgen_bf16, W, PA_HIPGEN_KT, rows>(a.pb, a.inv_cap, smem);
    }
}

#endif
