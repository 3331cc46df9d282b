/* The page-address arithmetic of a K/V row in a KV cache (pa_fwd_args's kv, fwd_args.h), as the
 * KV-cache instances of cuda-sm80 and cuda-sm90 compute it. Plain C with host+device inline functions
 * (problem.h's PA_HD), so that tests/sim/test_sm80_pages.c checks the very function the kernels call. */
#ifndef PORTATTN_KV_ARGS_H
#define PORTATTN_KV_ARGS_H

#include <stdint.h>

#include "problem.h"

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
