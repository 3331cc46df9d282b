/* host shim for simulating the nvcc emulation build with std::threads */
#pragma once
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <barrier>
#include <thread>
#include <vector>
struct sim_dim3 { unsigned x, y, z; };
extern thread_local sim_dim3 threadIdx, blockIdx;
extern sim_dim3 gridDim;
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { uint4 r = {a, b, c, d}; return r; }
static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
extern std::barrier<> *sim_block_bar;
extern std::barrier<> *sim_wave_bar[16];
extern int sim_bar_calls_bad;
extern int sim_wave_threads; /* 64 (CDNA) or 32 (RDNA3): which wave barrier a thread's named barrier is */
static inline void __syncthreads() { sim_block_bar->arrive_and_wait(); }
static inline void sim_named_bar() { sim_wave_bar[threadIdx.x / sim_wave_threads]->arrive_and_wait(); }
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
