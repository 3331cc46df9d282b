/* hip-cdna's launch shape, in plain C for the host launcher (cdna_backend.c) and the kernel alike:
 * a workgroup of PA_CDNA_WAVES wave64s owns PA_CDNA_BM query rows of one (batch, head); the grid is
 * row blocks x (batch x heads) spread over y and z. */
#ifndef PORTATTN_CDNA_GRID_H
#define PORTATTN_CDNA_GRID_H

#include <stdint.h>

#define PA_CDNA_WAVES 4
#define PA_CDNA_THREADS (PA_CDNA_WAVES * 64)
#define PA_CDNA_BM (32 * PA_CDNA_WAVES) /* query rows per workgroup */
#define PA_CDNA_BN 32                   /* keys per tile */

#define PA_CDNA_GRID(a, max_sq, gx, gy, gz)                                                                  \
    do {                                                                                                     \
        const int64_t bh_ = (int64_t)(a)->batch * (a)->heads;                                                \
        (gx) = (unsigned)(((max_sq) + PA_CDNA_BM - 1) / PA_CDNA_BM);                                         \
        (gy) = (unsigned)(bh_ < 65535 ? bh_ : 65535);                                                        \
        (gz) = (unsigned)((bh_ + (gy) - 1) / (gy));                                                          \
    } while (0)

#endif
