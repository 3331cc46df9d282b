/* The strided-view checks of validate.c, shared with the backward's and the merge's validation
 * (bwd_validate.c, merge.c): one definition of what a well-formed tensor argument is, when two of them
 * overlap, and how a params struct's struct_size is judged. */
#ifndef PORTATTN_VALIDATE_VIEW_H
#define PORTATTN_VALIDATE_VIEW_H

#include <stdint.h>

#include "frontend.h"

/* A strided 4-D (or 3-D with dim[3] = 1) view checked for null, alignment, negative strides,
 * overflow and self-overlap; its byte range is kept for the overlap checks between tensors. */
typedef struct view {
    const char *name;
    const void *data;
    int64_t dim[4], stride[4];
    int64_t elem;         /* bytes per element */
    int64_t count;        /* elements addressed (0 = empty) */
    uintptr_t lo, hi;     /* byte range [lo, hi) */
} view;

/* INVALID_ARGUMENT and why, or success with count/lo/hi filled. must_not_self_overlap: an output. */
portattn_status_t check_view(view *t, int must_not_self_overlap, char *why, size_t why_len);
/* 1 if both views address elements and their byte ranges intersect. */
int views_overlap(const view *a, const view *b);
/* The view of tensor t with dims (nb, s, h, d); varlen ignores stride[0]. */
view make_view(const char *name, const portattn_tensor_t *t, int64_t nb, int64_t s, int64_t h, int64_t d,
               int64_t elem, int varlen);

/* The struct_size rule of every params struct: any size but this library's is INVALID_ARGUMENT, naming
 * the init function the caller should have called. Only the sizes the library was built with are
 * trusted: any other value is far more often an uninitialised struct than a caller built against a
 * newer header, and the message names both. (The forward also accepts its 0.1 size.) */
portattn_status_t check_struct_size(size_t got, size_t want, const char *init_fn, char *why, size_t why_len);

#endif
