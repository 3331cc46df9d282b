/* hip-rdna3's launch shape, in plain C for the host and the kernel alike: a workgroup of
 * PA_RDNA3_WAVES wave32s owns PA_RDNA3_BM query rows of one (batch, head). */
#ifndef PORTATTN_RDNA3_GRID_H
#define PORTATTN_RDNA3_GRID_H

#define PA_RDNA3_WAVES 4
#define PA_RDNA3_THREADS (PA_RDNA3_WAVES * 32)
#define PA_RDNA3_BM (16 * PA_RDNA3_WAVES) /* query rows per workgroup */
#define PA_RDNA3_BN 32                    /* keys per tile up to d128: two WMMA blocks */
/* d256 is one launch of all 256 output columns: O^T takes 128 VGPRs a lane, which leaves room for one
 * 16-key block (256 VGPRs under clang-19, no spills); two launches of 128 columns would recompute S (1.5x).
 * d160-d224 take the same tiles (218-234 VGPRs). */
#define PA_RDNA3_BN_WIDE 16
#define PA_RDNA3_BN_OF(dv) ((dv) > 128 ? PA_RDNA3_BN_WIDE : PA_RDNA3_BN)

#endif
