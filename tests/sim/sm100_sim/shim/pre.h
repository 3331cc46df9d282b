/* Included first (-include) by test_sm100_sim: the shared CUDA names (tests/sim/sim_shim), and the block
 * and warp synchronisation of the simulated CTA, which test_sm100_sim.cpp defines (warp barriers, votes
 * and the shared-memory address map are its own). */
#pragma once
#include "cuda_runtime.h"

void __syncwarp(unsigned mask = 0xffffffffu);
int __any_sync(unsigned mask, int pred);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);
