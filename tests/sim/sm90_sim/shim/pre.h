/* Included first (-include) by test_sm90_sim: the shared CUDA names (tests/sim/sim_shim). The warp
 * intrinsics, the wgmma emulation and the shared-memory address map are test_sm90_sim.cpp's own. */
#pragma once
#include "cuda_runtime.h"

/* CUDA's integer min/max overloads, as the kernel calls them (both arguments of one type). */
template <typename T> static inline T max(T a, T b) { return a > b ? a : b; }
template <typename T> static inline T min(T a, T b) { return a < b ? a : b; }
