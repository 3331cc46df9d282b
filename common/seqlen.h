/* Where a sequence's rows are, as every kernel reads them: its extent in a packed (varlen) buffer.
 * Plain C with host+device inline functions (hd.h's PA_HD), shared by the CUDA and HIP kernels,
 * their CPU simulations and host tests. */
#ifndef PORTATTN_SEQLEN_H
#define PORTATTN_SEQLEN_H

#include <stdint.h>

#include "hd.h"

/* Packed sequence b of a buffer of `total` rows: [*start, *start + *len), cu clamped into [0, total]
 * so that garbage offsets in device memory stay inside the tensors. */
PA_HD void pa_seq_extent(const int32_t *cu, int b, int total, int *start, int *len)
{
    int s = cu[b], e = cu[b + 1];
    s = s < 0 ? 0 : (s > total ? total : s);
    e = e < s ? s : (e > total ? total : e);
    *start = s;
    *len = e - s;
}

/* The same in 64-bit row counts (kernels that index past 2^31 rows). */
PA_HD void pa_seq_extent64(const int32_t *cu, int64_t b, int64_t total, int64_t *start, int64_t *len)
{
    int64_t s = cu[b], e = cu[b + 1];
    s = s < 0 ? 0 : (s > total ? total : s);
    e = e < s ? s : (e > total ? total : e);
    *start = s;
    *len = e - s;
}

#endif
