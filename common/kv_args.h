/* A forward kernel's view of a KV cache (the KV-cache instances of cuda-sm80 and cuda-sm90): what
 * they read besides pa_fwd_args, and the page-address arithmetic of a K/V row. Plain C with
 * host+device inline functions (problem.h's PA_HD), so that tests/sim/test_sm80_pages.c checks the very
 * function the kernels call. */
#ifndef PORTATTN_KV_ARGS_H
#define PORTATTN_KV_ARGS_H

#include <stdint.h>

#include "problem.h"

typedef struct pa_kv_args {
    const int32_t *seqused_k;   /* NULL: every sequence holds seqlen_k keys */
    const int32_t *block_table; /* NULL: one contiguous cache per sequence (batch stride ks[0]) */
    int64_t bt_stride;          /* block_table row of sequence b starts at b * bt_stride */
    int64_t num_pages;          /* pool size; garbage entries are clamped into it */
    int page_shift;             /* log2(page_size) */
    int seqlen_new;             /* tokens appended just before the kernel: counted in the cache length */
    int qpack;                  /* query heads per work item (cuda-sm90's GQA packing): 1, or the group */
} pa_kv_args;

/* The KV-cache fields of a validated call. */
PA_HD pa_kv_args pa_kv_args_of(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    pa_kv_args kv;
    kv.seqused_k = p->seqused_k, kv.block_table = p->block_table;
    kv.bt_stride = p->block_table_stride, kv.num_pages = p->num_pages;
    for (kv.page_shift = 0; p->block_table && ((int64_t)1 << kv.page_shift) < p->page_size;) kv.page_shift++;
    kv.seqlen_new = (int)pb->seqlen_new;
    kv.qpack = 1;
    return kv;
}

/* Element offset, from the pool base, of row `key` of a sequence whose page-table row is bt_row:
 * page bt_row[key / page_size] (clamped into [0, num_pages)), row key % page_size, pages pstride and
 * rows rstride elements apart. Any page size works and consecutive keys may cross pages, because
 * every key is addressed on its own. The caller reads only keys below the sequence's length, whose
 * pages lie inside its table row. */
PA_HD int64_t pa_kv_page_offset(const int32_t *bt_row, int64_t num_pages, int shift, int64_t pstride,
                                int64_t rstride, int key)
{
    const int64_t page = pa_page_clamp(bt_row[key >> shift], num_pages);
    return page * pstride + (int64_t)(key & ((1 << shift) - 1)) * rstride;
}

#endif
