/* The launch grid of the HIP kernels, one formula for the host backend (hip_backend.c), the nvcc
 * emulation launchers and the CPU simulations: x = row blocks of the longest sequence, y and z =
 * (batch x heads) spread over at most 65535 in y. Plain C, host only. */
#ifndef PORTATTN_HIP_GRID_H
#define PORTATTN_HIP_GRID_H

#include <stdint.h>

static inline void pa_hip_grid(int64_t batch, int64_t heads, int64_t max_sq, int rows_per_block, unsigned g[3])
{
    const int64_t bh = batch * heads, gy = bh < 65535 ? bh : 65535;
    g[0] = (unsigned)((max_sq + rows_per_block - 1) / rows_per_block);
    g[1] = (unsigned)gy;
    g[2] = (unsigned)((bh + gy - 1) / gy);
}

#endif
