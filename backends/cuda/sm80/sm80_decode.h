/* cuda-sm80 decode (flash-decoding) path: what the backend table, the launcher and the kernels
 * share. Few query tokens per sequence (Sq <= 16) against a long, optionally paged KV cache.
 *
 * GQA packing: the Sq x group query rows that share a KV head form the M dimension of one 16-row
 * mma tile (row r = query token r / group, head r % group), so each K/V byte is read once per
 * KV head (per 16 packed rows). Split-KV: the keys of each (sequence, KV head, row tile) are cut
 * into `splits` contiguous ranges, one CTA each; the CTA's four warps stream interleaved 16-key
 * tiles through private cp.async rings (no block barrier in the main loop) and merge their
 * softmax states in shared memory in a fixed order. With one split the CTA writes O and LSE; with
 * more it writes fp32 partial O and base-2 LSE to the workspace and a combine kernel merges the
 * splits in split order, so the result is bitwise deterministic for a given split count. */
#ifndef PORTATTN_SM80_DECODE_H
#define PORTATTN_SM80_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "fwd_resolve.h" /* pa_fwd_args (the kernels' argument); PA_DECODE_MAX_SQ: query tokens per sequence */

/* Instances (head dim D): PA_SM80_DEC_LIST in sm80_instances.h, with each one's ring depth
 * (PA_SM80_DEC_STAGES: ~64 KB in flight per CTA for d64/d128, 64 KB for d256). A call runs on the
 * smallest that holds both of its head dims, the columns past them zero-filled (pa_fwd_instance_dim):
 * the loads skip them, so the bandwidth-bound kernel keeps its speed on any multiple of 8. */
#include "cuda_inst.h"
#include "sm80_instances.h"
#define PA_SM80_DEC_WARPS 4
#define PA_SM80_DEC_KT 16          /* keys per warp tile (one page never splits a tile: page >= 16) */
#define PA_SM80_DEC_MIN_PAGE 16
#define PA_SM80_DEC_MAX_SPLITS 128
/* Static shared memory of the kernel: the warps' row max and sum (sm_m, sm_l). */
#define PA_SM80_DEC_STATIC_SMEM (2 * PA_SM80_DEC_WARPS * 16 * 4)
/* Q tile (16 rows) + per warp STAGES x (K tile + V tile), rows of d x 2 bytes. */
#define PA_SM80_DEC_SMEM_SHAPE(d, st) ((16 + PA_SM80_DEC_WARPS * (st) * 2 * PA_SM80_DEC_KT) * (d) * 2)
#define PA_SM80_DEC_SMEM(d) PA_SM80_DEC_SMEM_SHAPE(d, PA_SM80_DEC_STAGES(d))
/* The kernels take pa_fwd_args (fwd_args.h) as every forward kernel does; the launcher sets its split
 * fields: the split count, the workspace, the packed rows and their 16-row tiles, PDL. */

#ifdef __cplusplus
extern "C" {
#endif

/* The decode family's head-dim rule (its family check, sm80_backend.c): an instance of the table
 * sm80_decode_launch.cu generates from sm80_instances.h holds both head dims. 1, or 0 and why. */
int pa_sm80_decode_dims(const pa_problem *pb, char *why, size_t why_len);
/* The instance the decode path runs a (validated) problem that passed its family check on; NULL and
 * why when the path does not take it (pages, grid, cache capacity, score map, shared memory). */
const pa_cuda_inst *pa_sm80_decode_supports(const pa_problem *pb, char *why, size_t why_len);
/* Splits for a call on instance `in` (device SM count and the work; params->num_splits caps it): the
 * backend's supports() fixes them in its choice (pa_choice.splits). */
int pa_sm80_decode_splits(const pa_problem *pb, const pa_cuda_inst *in);
/* Workspace bytes for the choice's instance and splits (0 with one split). */
size_t pa_sm80_decode_workspace(const pa_problem *pb, const pa_choice *ch);
/* Append (if any), decode kernel, combine (if split), all on `stream`, as the choice says. */
portattn_status_t pa_sm80_decode_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                        size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
