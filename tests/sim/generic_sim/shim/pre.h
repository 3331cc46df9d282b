/* Included first (-include) by test_generic_bwd_sim and test_merge_sim: the CUDA names the cuda-generic
 * backward kernels and the merge kernel use, on the host. Every lane is a fiber (sim_fiber.h); a
 * shuffle is a post and a read around its warp's barrier, so lanes that diverge on a shuffle deadlock
 * here (reported) as they would misbehave on a GPU. */
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_runtime.h" /* the names every simulation shares (tests/sim/sim_shim) */

/* The posts of the lanes of every warp of a block (32 warps at most). */
struct sim_warp {
    float val[32];
    double dval[32];
};
extern sim_warp sim_warps[32];

template <typename T> static inline T sim_shfl_xor(T (sim_warp::*slot)[32], T x, int mask)
{
    sim_warp &w = sim_warps[threadIdx.x / 32];
    const unsigned lane = threadIdx.x & 31;
    (w.*slot)[lane] = x;
    sim_sync_wave();
    const T r = (w.*slot)[lane ^ (unsigned)mask];
    sim_sync_wave();
    return r;
}
static inline double __shfl_xor_sync(unsigned, double x, int mask) { return sim_shfl_xor(&sim_warp::dval, x, mask); }
static inline float __shfl_xor_sync(unsigned, float x, int mask) { return sim_shfl_xor(&sim_warp::val, x, mask); }
static inline void __syncwarp() { sim_sync_wave(); }
