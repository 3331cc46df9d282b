/* cuda-sm80 backward: the tile shape the backend table and the kernels share, the kernels' argument
 * struct and the host entry points (sm80_bwd_launch.cu). Plain C, included by C and CUDA alike.
 *
 * A CTA owns BN keys of one KV head and keeps their K and V in shared memory; Q and dO blocks of
 * BM rows stream past them, over every query head of the KV head's group, and dK/dV sum in
 * registers. dQ sums in an fp32 workspace, converted to the dtype by a last kernel. */
#ifndef PORTATTN_SM80_BWD_H
#define PORTATTN_SM80_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_bwd_args.h"
#include "portattn.h"

#define PA_SM80_BWD_HAS_DIM(d) ((d) == 64 || (d) == 96 || (d) == 128 || (d) == 256)
/* Query rows per streamed block: 64, and at d64 128 (half the barriers and loads per MMA; its
 * accumulators then match d128's at 64 rows), which pa_sm80_bwd_rows takes where shared memory allows.
 * Both shapes are built; the workspace's rows per (batch, head) are a multiple of the largest, so that
 * its size does not depend on the device. */
#define PA_SM80_BWD_BM_MAX(d) ((d) == 64 ? 128 : 64)
#define PA_SM80_BWD_BN(d) ((d) > 128 ? 64 : 128)   /* keys per CTA block: a quarter per warp pair */
#define PA_SM80_BWD_WARPS 8
/* Deterministic mode: at most this many dQ partial slices (each B x Hq x rows x D floats), and no
 * more than this many bytes of slices beyond the first (long sequences get fewer). */
#define PA_SM80_BWD_MAX_SPLITS 8
#define PA_SM80_BWD_SPLIT_BYTES ((size_t)1 << 30)
/* Dynamic shared memory at bm rows: K and V (BN rows each), two buffers of Q and dO (bm rows each), P^T
 * and dS^T (BN x bm 16-bit values each) and two buffers of the rows' base-2 LSE and D. Rows are D * 2
 * bytes padded to a multiple of 128 (the swizzle's span). At 64 rows d64 97 KB, d96 and d128 161 KB
 * (the A100's 163 KB per block and H100/H200 take them; sm_86/89/120 allow 99 KB), d256 209 KB:
 * H100/H200 (227 KB) only; d64 at 128 rows 162 KB. */
#define PA_SM80_BWD_PITCH_BYTES(d) (((d) * 2 + 127) / 128 * 128)
#define PA_SM80_BWD_SMEM(d, bm)                                                                         \
    ((2 * PA_SM80_BWD_BN(d) + 4 * (bm)) * PA_SM80_BWD_PITCH_BYTES(d) + 2 * PA_SM80_BWD_BN(d) * (bm) * 2 + \
     4 * (bm) * 4)

#ifdef __cplusplus
extern "C" {
#endif
struct pa_bwd_problem;
/* dQ slices of a call: 1, or in deterministic mode enough key-block groups to fill the device. */
int pa_sm80_bwd_splits(const struct pa_bwd_problem *bp);
/* Query rows per block of head dim d on a device allowing `optin` bytes of shared memory per block: the
 * largest of its shapes that fits, else 0. */
int pa_sm80_bwd_rows(int d, int optin);
/* Workspace bytes of a call (never 0 for a call with query rows). */
size_t pa_sm80_bwd_workspace(const struct pa_bwd_problem *bp);
/* The three launches on the caller's stream; supports() ran before. */
portattn_status_t pa_sm80_bwd_launch(const struct pa_bwd_problem *bp, void *stream, char *err, size_t err_len);
#ifdef __cplusplus
}
#endif

#endif
