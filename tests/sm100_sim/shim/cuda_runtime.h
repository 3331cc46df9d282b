/* Host shim for the CPU simulation of the cuda-sm100 kernel (tests/sm100_sim): the CUDA names the
 * kernel headers use, declared for g++ so that the kernel body runs on std::threads. Launch-side
 * runtime calls exist only to be parsed (the simulation never calls them). */
#pragma once
#include <math.h>
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
#define __shared__
#define __align__(n) __attribute__((aligned(n)))

struct sim_dim3 {
    unsigned x, y, z;
};
extern thread_local sim_dim3 threadIdx, blockIdx;
extern sim_dim3 gridDim;
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float __fdividef(float a, float b) { return a / b; }
#define __log2f log2f

/* block and warp synchronisation of the simulated CTA (test_sm100_sim.cpp) */
void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
int __any_sync(unsigned mask, int pred);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);
uint32_t __cvta_generic_to_shared(const void *p);

typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0, cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
cudaError_t cudaGetDevice(int *);
cudaError_t cudaFuncSetAttribute(const void *, int, int);
template <typename K> cudaError_t cudaFuncSetAttribute(K, int, int) { return 0; }
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t, cudaStream_t);
