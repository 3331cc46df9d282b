/* The forward kernels' one argument struct: everything a forward GPU kernel reads (the tiled kernels
 * of every family, the split-KV decode kernels, the generic kernel and the KV-cache appends), resolved
 * on the host from a validated problem in one place (pa_fwd_args_of, fwd_resolve.c). A family's
 * launcher adds only its launch shape: cuda-sm90's GQA packing (kv.qpack) and the decode kernels'
 * split (split). Plain C: the CUDA kernels, the HIP kernels (hipcc, the nvcc emulation, the CPU
 * simulations) and host tests share it. Runtime flags are values, not templates.
 *
 * Two widths of the same extents: the tiled and decode kernels do their row arithmetic in int32 and
 * read the int fields, which their supports() keep in range; the generic kernel and the appends take
 * every validated shape (a sequence or a batch may pass 2^31 without varlen) and read the 64-bit
 * ones. New fields go after the old ones, so that the fast kernels' parameter offsets stay put. */
#ifndef PORTATTN_FWD_ARGS_H
#define PORTATTN_FWD_ARGS_H

#include <stdint.h>

/* A KV cache (seqused_k and/or block_table): sequence b holds seqused_k[b] + seqlen_new keys, clamped
 * to the capacity seqlen_k, in its row of the page table or contiguous at the batch stride. All zero
 * but qpack without a cache. The page-address arithmetic is kv_args.h's. */
typedef struct pa_kv_args {
    const int32_t *seqused_k;   /* NULL: every sequence holds seqlen_k keys */
    const int32_t *block_table; /* NULL: one contiguous cache per sequence (batch stride ks[0]) */
    int64_t bt_stride;          /* block_table row of sequence b starts at b * bt_stride */
    int64_t num_pages;          /* pool size; garbage entries are clamped into it */
    int page_shift;             /* log2(page_size) */
    int seqlen_new;             /* tokens appended just before the kernel: counted in the cache length */
    int qpack;                  /* query heads per work item (cuda-sm90's GQA packing): 1, or the group */
} pa_kv_args;

/* Split-KV: the decode kernels' launch shape (cuda-sm80's and hip-cdna's), set by their launchers,
 * which pick the split count and the workspace; zero for every other kernel. */
typedef struct pa_split_args {
    int splits;               /* key splits of each row tile (1: O and the LSE are written directly) */
    int tiles;                /* key tiles of each split, the last may hold fewer (hip-cdna) */
    int rows, mtiles;         /* packed rows (seqlen_q x group) per (sequence, KV head), and row tiles of them */
    int d;                    /* the instance's head dim: part_o's row pitch (hip-cdna) */
    int pdl;                  /* the combine is a programmatic dependent launch (cuda-sm80 on sm_90+) */
    float *part_o, *part_lse; /* splits > 1: [split][packed row][d] partial O, [split][packed row] base-2 LSE */
} pa_split_args;

typedef struct pa_fwd_args {
    const void *q, *k, *v;
    void *o;
    float *lse; /* NULL = not wanted */
    const int32_t *cu_q, *cu_k; /* varlen when cu_q is non-NULL (packed [1, total, H, D]); cu_k NULL over a KV cache */
    int64_t qs[3], ks[3], vs[3], os[3], ls[3]; /* element strides (batch, seq, head); dim strides: qd.. below */
    int batch, heads, group;
    int dqk, dv;            /* the call's head dims; an instance's D may be larger (columns past them read as 0, never written) */
    int seqlen_q, seqlen_k; /* per sequence, or the packed totals with varlen; seqlen_k: the capacity of a KV cache */
    int wl, wr;             /* window sides, -1 = unbounded (causal folded into wr = 0); a side past sq + sk is -1 */
    int transform;          /* 0: log2 score = raw * mult; 1: scores rewritten first (softcap or scale < 0) */
    float mult;             /* scale * log2(e), > 0; 1 when transform */
    float pre_mul, post_mul; /* transform: s = post_mul * tanh(raw * pre_mul), or raw * pre_mul without softcap */
    int softcap;

    /* What the decode kernels read besides the fields above comes first and packed, in this order:
     * hip-cdna's d256 decode instances run at the scalar-register limit, and on gfx942 (clang 19)
     * other orders of these three made them take 20 bytes of scratch (isa_gate_hip refuses any). */
    pa_split_args split;
    pa_kv_args kv;
    int heads_kv;
    int64_t qd, kd, vd, od; /* dim strides: 1 wherever a tiled kernel runs (supports()); any in the generic one */
    /* KV-cache append: token i of sequence b goes to cache row seqused_k[b] + i, before the attention. */
    const void *k_new, *v_new; /* NULL without an append */
    int64_t kns[4], vns[4];    /* their strides (batch, token, head, dim) */
    /* The 64-bit extents and the window as validated (the generic kernel and the appends; the decode
     * kernel's window arithmetic). window_*: -1 = unbounded, causal folded in, not clamped. */
    int64_t batch64, seqlen_q64, seqlen_k64, seqlen_new64, window_left, window_right;
    /* The raw softmax scale, softcap (0 = off) and 1 / softcap (0 without): the generic kernel scores in
     * natural-log units as the CPU reference does, and divides by nothing it could precompute. */
    float scale, cap, inv_cap;
} pa_fwd_args;

#endif
