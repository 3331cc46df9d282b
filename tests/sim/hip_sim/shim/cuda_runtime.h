/* The CUDA names of the HIP kernels' nvcc emulation build, on the host, for the fiber simulation
 * (tests/sim/sim_shim/sim_fiber.h) of tests/sim/hip_fake and tests/sim/hip_sim: thread and block
 * indices are globals the scheduler sets before it resumes a fiber; __syncthreads and the emulation's
 * per-wave barrier are fiber barriers. */
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim_fiber.h"

struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { uint4 r = {a, b, c, d}; return r; }
static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline void __syncthreads() { sim_sync_block(); }
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static /* workgroups run one at a time */
