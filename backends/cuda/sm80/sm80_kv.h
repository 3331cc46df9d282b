/* cuda-sm80 prefill over a KV cache (the paged instances of sm80_fwd_kernel.cuh): what they read
 * besides pa_fwd_args, and the page-address arithmetic of their K/V tile loads. Plain C with
 * host+device inline functions, so that tests/test_sm80_pages.c checks the very function the kernel
 * calls. */
#ifndef PORTATTN_SM80_KV_H
#define PORTATTN_SM80_KV_H

#include <stdint.h>

#include "problem.h"

/* Instances of the paged family (f16 and bf16 each): a call runs on the smallest that holds both of
 * its head dims, as the contiguous family. */
#define PA_SM80_PAGED_DIMS(X) X(64) X(128)

typedef struct sm80_kv {
    const int32_t *seqused_k;   /* NULL: every sequence holds seqlen_k keys */
    const int32_t *block_table; /* NULL: one contiguous cache per sequence (batch stride ks[0]) */
    int64_t bt_stride;          /* block_table row of sequence b starts at b * bt_stride */
    int64_t num_pages;          /* pool size; garbage entries are clamped into it */
    int page_shift;             /* log2(page_size) */
    int seqlen_new;             /* tokens appended just before the kernel: counted in the cache length */
} sm80_kv;

/* The KV-cache fields of a validated call, as the launchers of both KV-cache families pass them. */
PA_HD sm80_kv pa_sm80_kv_of(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    sm80_kv kv;
    kv.seqused_k = p->seqused_k, kv.block_table = p->block_table;
    kv.bt_stride = p->block_table_stride, kv.num_pages = p->num_pages;
    for (kv.page_shift = 0; p->block_table && ((int64_t)1 << kv.page_shift) < p->page_size;) kv.page_shift++;
    kv.seqlen_new = (int)pb->seqlen_new;
    return kv;
}

/* Element offset, from the pool base, of row `key` of a sequence whose page-table row is bt_row:
 * page bt_row[key / page_size] (clamped into [0, num_pages)), row key % page_size, pages pstride and
 * rows rstride elements apart. Any page size works and consecutive keys may cross pages, because
 * every key is addressed on its own. The caller reads only keys below the sequence's length, whose
 * pages lie inside its table row. */
PA_HD int64_t pa_sm80_page_offset(const int32_t *bt_row, int64_t num_pages, int shift, int64_t pstride,
                                  int64_t rstride, int key)
{
    const int64_t page = pa_page_clamp(bt_row[key >> shift], num_pages);
    return page * pstride + (int64_t)(key & ((1 << shift) - 1)) * rstride;
}

#endif
