/* cuda-sm90 backward: the tile shape the backend table and the kernel share, and the host entry
 * points (sm90_bwd_launch.cu). Plain C, included by C and CUDA alike. The kernel: sm90_bwd_kernel.cuh. */
#ifndef PORTATTN_SM90_BWD_H
#define PORTATTN_SM90_BWD_H

#include <stddef.h>

#include "portattn.h"

#define PA_SM90_BWD_HAS_DIM(d) ((d) == 64 || (d) == 128)
#define PA_SM90_BWD_BM 64  /* query rows an item */
#define PA_SM90_BWD_BN 128 /* keys a CTA: 64 per consumer warpgroup */
/* Dynamic shared memory: K and V (BN rows), two stages of Q and dO (BM rows), dS^T (BN keys x BM rows),
 * five barriers, 1 KB to align the tiles: d64 83 KB, d128 145 KB. */
#define PA_SM90_BWD_SMEM(d)                                                                               \
    (2 * PA_SM90_BWD_BN * (d) * 2 + 4 * PA_SM90_BWD_BM * (d) * 2 + PA_SM90_BWD_BN * PA_SM90_BWD_BM * 2 + \
     8 * 5 + 1024)

#ifdef __cplusplus
extern "C" {
#endif
struct pa_bwd_problem;
size_t pa_sm90_bwd_workspace(const struct pa_bwd_problem *bp);
/* The three launches on the caller's stream; supports() ran before. */
portattn_status_t pa_sm90_bwd_launch(const struct pa_bwd_problem *bp, void *stream, char *err, size_t err_len);
#ifdef __cplusplus
}
#endif

#endif
