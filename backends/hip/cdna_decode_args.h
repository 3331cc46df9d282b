/* hip-cdna's split-KV decode: the launch shape and everything its kernels read, resolved on the host
 * (cdna_decode_host.c) from a validated problem. Plain C: the hipcc entry points (cdna_decode.hip),
 * the host and the CPU-simulated device (tests/sim/hip_fake) share it. Design: NOTES.md, "Decode". */
#ifndef PORTATTN_CDNA_DECODE_ARGS_H
#define PORTATTN_CDNA_DECODE_ARGS_H

#include <stdint.h>

#define PA_CDNA_DEC_THREADS 64      /* one wave64 a workgroup: the split count supplies the parallelism */
#define PA_CDNA_DEC_ROWS 32         /* packed query rows (token x query head of one KV head) a workgroup */
#define PA_CDNA_DEC_KT 32           /* keys a tile: the M of one v_mfma_f32_32x32x8 */
#define PA_CDNA_DEC_MAX_SQ 16       /* query tokens per sequence the decode kernel takes */
#define PA_CDNA_DEC_MAX_SPLITS 128
#define PA_CDNA_DEC_COMBINE_GRID 65535 /* combine workgroups at most; each loops over rows */

typedef struct pa_cdna_dec_args {
    const void *q, *k, *v;
    void *o;
    float *lse;                 /* NULL = not wanted */
    float *part_o, *part_lse;   /* splits > 1: [split][packed row][d] normalised O, [split][packed row] base-2 LSE */
    const int32_t *seqused_k;   /* NULL = every sequence holds seqlen_k keys */
    const int32_t *block_table; /* NULL = contiguous */
    const void *k_new, *v_new;  /* appended tokens (seqlen_new > 0) */
    int64_t bt_stride, num_pages;
    int64_t qs[3], os[3], ls[3];   /* element strides (batch, seq, head); dim stride 1 */
    int64_t ks[4], vs[4];          /* the cache's (batch or page, row, head, dim); dim stride 1 */
    int64_t kns[4], vns[4];        /* k_new, v_new: any strides */
    int batch, heads_kv, group, seqlen_q, seqlen_k, seqlen_new;
    int dqk, dv, d;             /* the call's head dims; d the instance's (columns past dqk/dv read as 0) */
    int page_shift;             /* log2(page_size) when paged */
    int rows;                   /* seqlen_q * group: packed rows per (sequence, KV head) */
    int mtiles;                 /* ceil(rows / PA_CDNA_DEC_ROWS) */
    int splits, split_tiles;    /* key splits, and key tiles of each (the last may hold fewer) */
    int wl, wr;                 /* window sides, -1 = unbounded (causal folded into wr = 0), capped at 2^30 */
    int transform, softcap;     /* as pa_fwd_args */
    float mult, pre_mul, post_mul;
} pa_cdna_dec_args;

#endif
