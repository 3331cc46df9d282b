/* A kernel family's limits as data (docs/design.md section 3): what every family states the same way
 * (dtypes, the GPUs its code runs on, head dims, calls it refuses outright, query tokens, keys,
 * sequence lengths, the launch grid), filled once per family as a static const, and the one check of
 * them, so that two families refusing the same thing say it in the same words. A supports() runs the
 * family check first and then only what is its own (layouts, pointers, shared memory, its shape).
 * Plain C, vendor-neutral: the device half (compute capability, shared memory) is the CUDA families'
 * backends/cuda/common/cuda_family.h. */
#ifndef PORTATTN_FAMILY_H
#define PORTATTN_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A dtype's bit in pa_family.dtypes; the two every tiled kernel takes. */
#define PA_DTYPE_BIT(t) (1u << (unsigned)(t))
#define PA_DTYPES_16 (PA_DTYPE_BIT(PORTATTN_DTYPE_F16) | PA_DTYPE_BIT(PORTATTN_DTYPE_BF16))

/* Calls a family refuses whatever their shape (pa_family.refuses). */
#define PA_REFUSES_VARLEN 1u   /* packed queries (cu_seqlens_q) */
#define PA_REFUSES_KV_CACHE 2u /* seqused_k or a page table */

/* pa_family.grid_rows of a family whose rows per block come with the launch shape it picks: its
 * supports() calls pa_family_grid_ok itself once it has picked one. */
#define PA_GRID_AT_LAUNCH (-1)

typedef struct pa_family {
    /* Heads the family check's refusals (the head-dim rule words its own) where a backend runs
     * several kernels, so that the reason says which declined ("decode kernel: ..."); NULL where the
     * backend's name says it. */
    const char *who;
    unsigned dtypes; /* PA_DTYPE_BIT of each dtype it takes */
    /* CUDA: the compute capabilities (major * 10 + minor) its code runs on, 0-terminated; with
     * cc_newer, cc[0] and every later one. `code` names the code in the refusal where it binds the
     * family to those (arch-specific 'a' code runs on its own capability only), else NULL. Checked on
     * the device by pa_cuda_arch_ok (cuda_family.h): the vendor-neutral check cannot ask a device. */
    int cc[3];
    int cc_newer;
    const char *code;
    /* The head dims it takes: 1, or 0 and why (an instance table's rule, or the family's own). The one
     * rule given as code, because the families' rules differ (the smallest instance that holds both
     * head dims, or Dqk == Dv of an instance). NULL: any. */
    int (*head_dims)(const pa_problem *pb, char *why, size_t why_len);
    unsigned refuses; /* PA_REFUSES_* */
    /* Query tokens per sequence (max_seqlen_q, which is seqlen_q without varlen) it takes: at least
     * min_queries, at most max_queries (0: no bound). `fewer_go` says in the refusal where calls
     * under min_queries go ("decode shapes go to cuda-sm80"). */
    int64_t min_queries, max_queries;
    const char *fewer_go;
    int needs_keys;     /* 1: refuses calls without keys (its TMA maps need a row) */
    int64_t max_seqlen; /* seqlen_q and seqlen_k (varlen: the packed totals) at most this; 0: no bound */
    /* The launch grid: batch and heads_q at most grid_dim each, and batch x heads_q x row blocks (of
     * grid_rows query rows; 0: no row blocks, one block per head) at most grid_blocks; 0: no bound.
     * grid_rows PA_GRID_AT_LAUNCH: the family checks its grid at its launch shape. grid_blocks needs
     * a grid_dim of at most 2^31-1 (the product is taken of factors that fit 32 bits). */
    int64_t grid_dim, grid_blocks;
    int grid_rows;
} pa_family;

/* The family check: whether family f can run the validated problem as far as its limits say, checked
 * in this order: dtype, head dims, what it refuses outright, query tokens, keys, sequence lengths,
 * the grid (unless PA_GRID_AT_LAUNCH). 1, or 0 and why (why may be NULL: no words). Pure. */
int pa_family_can_implement(const pa_family *f, const pa_problem *pb, char *why, size_t why_len);

/* The grid check at a launch shape: a block takes `rows` query rows (0: all of them) of `qpack`
 * query heads (1 unless the family packs a GQA group into a block). 1, or 0 and why. */
int pa_family_grid_ok(const pa_family *f, const pa_problem *pb, int rows, int qpack, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
