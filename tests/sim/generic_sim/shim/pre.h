/* Included first (-include) by test_generic_bwd_sim: the CUDA names the cuda-generic backward kernels
 * use, on the host. Each lane of a warp is a std::thread; a shuffle is a post and a read around the
 * warp's barrier, so lanes that diverge on a shuffle deadlock here as they would misbehave on a GPU. */
#pragma once
#include <barrier>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_runtime.h" /* the names every simulation shares (tests/sim/sim_shim) */

struct sim_warp {
    std::barrier<> bar{32};
    float val[32];
    double dval[32];
};
extern thread_local sim_warp *sim_cur_warp;

static inline double __shfl_xor_sync(unsigned, double x, int mask)
{
    const unsigned lane = threadIdx.x & 31;
    sim_cur_warp->dval[lane] = x;
    sim_cur_warp->bar.arrive_and_wait();
    const double r = sim_cur_warp->dval[lane ^ (unsigned)mask];
    sim_cur_warp->bar.arrive_and_wait();
    return r;
}

static inline float __shfl_xor_sync(unsigned, float x, int mask)
{
    const unsigned lane = threadIdx.x & 31;
    sim_cur_warp->val[lane] = x;
    sim_cur_warp->bar.arrive_and_wait();
    const float r = sim_cur_warp->val[lane ^ (unsigned)mask];
    sim_cur_warp->bar.arrive_and_wait();
    return r;
}
