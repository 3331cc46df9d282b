/* The simulations' <cuda.h>: the tensor map that the simulated TMA of cuda-sm90's and cuda-sm100's
 * simulations reads and writes (sim_tma.h). */
#pragma once
#include "cuda_runtime.h"
typedef struct CUtensorMap {
    const uint16_t *ptr;
    int64_t dims[4];    /* innermost first: head dim, seq, heads, batch */
    int64_t strides[3]; /* bytes, of dims 1..3 */
    int box_rows;       /* the box is 64 columns x box_rows rows x box_heads heads, 128-byte swizzle; */
    int box_heads = 1;  /* it lands head by head (row r of head h at box row h * box_rows + r) */
} CUtensorMap;
