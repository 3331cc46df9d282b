/* hip-cdna's launch shape, in plain C for the host (hip_backend.c) and the kernel alike: a workgroup
 * of PA_CDNA_WAVES wave64s owns PA_CDNA_BM query rows of one (batch, head); the grid: hip_grid.h. */
#ifndef PORTATTN_CDNA_GRID_H
#define PORTATTN_CDNA_GRID_H

#define PA_CDNA_WAVES 4
#define PA_CDNA_THREADS (PA_CDNA_WAVES * 64)
#define PA_CDNA_BM (32 * PA_CDNA_WAVES) /* query rows per workgroup */
#define PA_CDNA_BN 32                   /* keys per tile */

#endif
