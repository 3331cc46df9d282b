/* hip_shape.h */
#include "hip_shape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwd_resolve.h"

int pa_hip_nothing_to_do(const pa_problem *pb) { return pb->p.batch <= 0 || pb->max_seqlen_q <= 0; }

int pa_hip_shape_ok(const pa_problem *pb, const pa_family *fam, const char *tag, int bm, int bn,
                    const pa_hip_inst *insts, int ninsts, const int *dims, int ndims, char *kernel, size_t kernel_len,
                    char *why, size_t why_len)
{
    return pa_hip_shape_ok_wide(pb, fam, tag, bm, bn, bn, insts, ninsts, dims, ndims, kernel, kernel_len, why, why_len);
}

/* The launches of head dim d for a call of output columns dv, where d runs as more than one instance:
 * "2x128 columns" (equal widths) or "128+96 columns"; empty for a one-launch head dim. */
static void hip_launches(char *buf, size_t len, const pa_hip_inst *insts, int ninsts, int bf16, int d, int64_t dv)
{
    int parts = 0, runs = 0, first = 0, same = 1;
    char list[32] = "";
    for (int i = 0; i < ninsts; i++) {
        if (insts[i].d != d || insts[i].bf16 != bf16) continue;
        parts++;
        if (insts[i].c0 >= dv) continue; /* holds none of the call's columns: not launched */
        if (!runs) first = insts[i].cols;
        same &= insts[i].cols == first;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", runs++ ? "+" : "", insts[i].cols);
    }
    if (parts < 2 || !runs) buf[0] = 0;
    else if (same) snprintf(buf, len, "%dx%d columns", runs, first);
    else snprintf(buf, len, "%s columns", list);
}

int pa_hip_shape_ok_wide(const pa_problem *pb, const pa_family *fam, const char *tag, int bm, int bn, int bn_wide,
                         const pa_hip_inst *insts, int ninsts, const int *dims, int ndims, char *kernel,
                         size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_family_can_implement(fam, pb, why, why_len) || !pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (!pa_hip_nothing_to_do(pb) && !pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    const int d = pa_fwd_instance_dim(dims, ndims, p->head_dim_qk, p->head_dim_v);
    if (kernel && kernel_len) {
        char launches[48];
        hip_launches(launches, sizeof launches, insts, ninsts, p->dtype == PORTATTN_DTYPE_BF16, d, p->head_dim_v);
        pa_kernel_name(kernel, kernel_len, tag, pa_dtype_name(p->dtype), d, pb, bm,
                       d > PA_HIP_NARROW_COLS ? bn_wide : bn, launches[0] ? launches : NULL);
    }
    return 1;
}
