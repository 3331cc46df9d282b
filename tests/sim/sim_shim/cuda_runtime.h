/* The CUDA names that every CPU simulation of a CUDA kernel needs, declared for g++ so that the kernel
 * source compiles for the host: the qualifiers, the thread and block indices (sim_fiber.h: every GPU
 * thread a fiber, its indices set by the scheduler before it runs), the vector types and bit
 * casts, two fast-math intrinsics, and the runtime calls of the kernels' launch code. Those calls exist
 * only so that the launch code parses: a simulation runs the kernel body itself and never calls them.
 * What differs by simulator (barriers, shuffles, votes, shared memory, the instructions it emulates)
 * stays in that simulator's own pre.h. */
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
/* A simulation places shared memory where its launch can reach it (a global array; the HIP kernels'
 * __shared__ arrays are statics, which their shim defines it as: blocks run one at a time). */
#ifndef __shared__
#define __shared__
#endif
/* A simulation may define __align__ before this header to make it mean something else. */
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

#include "sim_fiber.h"

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

/* CUDA aligns its vector types to their size. A simulator that defines PA_SIM_VECTORS_UNALIGNED gets
 * them at the alignment of their members instead (the layout it was validated with). */
#ifdef PA_SIM_VECTORS_UNALIGNED
#define PA_SIM_VEC_ALIGN(n)
#else
#define PA_SIM_VEC_ALIGN(n) alignas(n)
#endif
struct PA_SIM_VEC_ALIGN(8) float2 {
    float x, y;
};
struct PA_SIM_VEC_ALIGN(16) float4 {
    float x, y, z, w;
};
struct PA_SIM_VEC_ALIGN(16) uint4 {
    uint32_t x, y, z, w;
};
static inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return uint4{a, b, c, d}; }

static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float __fdividef(float a, float b) { return a / b; }
static inline void __syncthreads(void) { sim_sync_block(); }
#define __log2f(x) log2f(x) /* function-like: glibc declares a __log2f of its own, which math.h above has */

typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0, cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
static inline cudaError_t cudaGetDevice(int *) { return 1; }
static inline cudaError_t cudaGetLastError(void) { return 0; }
static inline cudaError_t cudaFuncSetAttribute(const void *, int, int) { return 1; }
template <typename K>
static inline cudaError_t cudaFuncSetAttribute(K, int, int) { return 0; }
static inline cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t) { return 1; }
