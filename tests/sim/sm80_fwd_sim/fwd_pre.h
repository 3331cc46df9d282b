/* Included first (-include) by test_sm80_fwd_sim: the backward simulation's CUDA names and sm_80
 * instructions (sm80_bwd_sim/shim/pre.h), plus the few the forward kernel uses beyond them. */
#pragma once
#include "pre.h"

static inline void __syncwarp(void) { sim_sync_wave(); }

/* Every lane posts its predicate; all read the OR. */
static inline bool __any_sync(unsigned, bool pred)
{
    sim_cur_warp->f[sim_lane()] = pred ? 1.f : 0.f;
    sim_sync_wave();
    bool any = false;
    for (int l = 0; l < 32; ++l) any |= sim_cur_warp->f[l] != 0.f;
    sim_sync_wave();
    return any;
}

/* sm80_ptx.cuh's swizzle (that header is replaced by pre.h): chunk ch of row row, XOR (row & 7). */
template <int PITCH>
static inline uint32_t sm80_swz(int row, int ch)
{
    return (uint32_t)(row * PITCH * 16 + ((ch ^ (row & 7)) << 4));
}
