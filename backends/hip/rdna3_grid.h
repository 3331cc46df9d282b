/* hip-rdna3's launch shape, in plain C for the host and the kernel alike: a workgroup of
 * PA_RDNA3_WAVES wave32s owns PA_RDNA3_BM query rows of one (batch, head). */
#ifndef PORTATTN_RDNA3_GRID_H
#define PORTATTN_RDNA3_GRID_H

#define PA_RDNA3_WAVES 4
#define PA_RDNA3_THREADS (PA_RDNA3_WAVES * 32)
#define PA_RDNA3_BM (16 * PA_RDNA3_WAVES) /* query rows per workgroup */
#define PA_RDNA3_BN 32                    /* keys per tile: two WMMA blocks (clang-15 spilled them; clang 17+ does not) */

#endif
