/* hip-cdna's split-KV decode, host side (cdna_decode_host.c): which calls it takes, the split count,
 * the workspace and the launches. hip_backend.c owns the code objects and routes decode-shaped calls
 * here. */
#ifndef PORTATTN_CDNA_DECODE_HOST_H
#define PORTATTN_CDNA_DECODE_HOST_H

#include <stddef.h>

#include "backend.h"
#include "hip_rt.h"

/* Few query tokens per sequence, or any KV-cache call: the decode kernel's calls if it takes them. */
int pa_cdna_dec_candidate(const pa_problem *pb);
/* 1 if the decode kernel takes the (validated) problem by its shape (and its name in kernel), else 0
 * and why. Pointers are checked by pa_cdna_dec_ptrs_ok. */
int pa_cdna_dec_shape_ok(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len);
/* Every pointer the decode launches read or write is memory of device dev. */
int pa_cdna_dec_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len);
/* Key splits: params->num_splits, else the static rule of cdna_decode_host.c. */
int pa_cdna_dec_splits(const pa_problem *pb);
/* Workspace bytes the call needs to split (0 with one split). */
size_t pa_cdna_dec_workspace(const pa_problem *pb);
/* Append (if any), the split attention, the combine (if split) on stream; fns: the functions of
 * cdna_decode_entries.h in list order. Without a workspace the call runs unsplit. */
portattn_status_t pa_cdna_dec_launch(const pa_hip_rt *rt, const pa_hip_fn *fns, const pa_problem *pb, void *stream,
                                     char *err, size_t err_len);

#endif
