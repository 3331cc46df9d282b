/* hip-cdna's split-KV decode: its launch shape. The kernels take pa_fwd_args (fwd_args.h), resolved on
 * the host (cdna_decode_host.c) from a validated problem, with its split fields set there. Plain C: the
 * hipcc entry points (cdna_decode.hip), the host and the CPU-simulated device (tests/sim/hip_fake)
 * share it. Design: NOTES.md, "Decode". */
#ifndef PORTATTN_CDNA_DECODE_ARGS_H
#define PORTATTN_CDNA_DECODE_ARGS_H

#define PA_CDNA_DEC_THREADS 64      /* one wave64 a workgroup: the split count supplies the parallelism */
#define PA_CDNA_DEC_ROWS 32         /* packed query rows (token x query head of one KV head) a workgroup */
#define PA_CDNA_DEC_KT 32           /* keys a tile: the M of one v_mfma_f32_32x32x8 */
#define PA_CDNA_DEC_MAX_SQ 16       /* query tokens per sequence the decode kernel takes */
#define PA_CDNA_DEC_MAX_SPLITS 128
#define PA_CDNA_DEC_COMBINE_GRID 65535 /* combine workgroups at most; each loops over rows */

#endif
