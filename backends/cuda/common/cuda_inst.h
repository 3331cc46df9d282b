/* One compiled instance of a tiled CUDA kernel family, as the family's instance list states it
 * (sm80/sm80_instances.h, sm90/sm90_instances.h, sm100/sm100_desc.h): the tables of these that the
 * backend tables search are generated from those lists, beside the launchers' tables of entry points
 * in the same order, so that supports(), the launch and the kernel's name read one row
 * (docs/design.md section 8). Plain C. */
#ifndef PORTATTN_CUDA_INST_H
#define PORTATTN_CUDA_INST_H

#include <stddef.h>
#include <stdint.h>

struct pa_problem;

typedef struct pa_cuda_inst {
    const char *family; /* the kernel name's prefix: "sm80", "sm80-paged", "sm80-decode", "sm90", ... */
    int d;              /* head dim: takes calls whose Dqk and Dv are multiples of 8 up to d */
    int bm, bn;         /* query rows per CTA (work item) and keys per tile of its default shape */
    int warps, stages;  /* warps per CTA (consumer warpgroups x 4 on sm90), K/V ring slots */
    int smem;           /* bytes of shared memory a block of the default shape needs */
} pa_cuda_inst;

/* Rows of an instance table, and the most a family may have (pa_cuda_inst_for's head-dim list). */
#define PA_CUDA_ROWS(t) ((int)(sizeof(t) / sizeof((t)[0])))
#define PA_CUDA_INST_MAX 16
/* Beside a table of rows, its table of entry points in the same order (launchers, C++). */
#define PA_CUDA_INST_FNS_OK(insts, fns)                                                                        \
    static_assert(PA_CUDA_ROWS(insts) == PA_CUDA_ROWS(fns) && PA_CUDA_ROWS(insts) <= PA_CUDA_INST_MAX,         \
                  "one entry point per instance row, at most PA_CUDA_INST_MAX rows")

#ifdef __cplusplus
extern "C" {
#endif

/* The instance of table t (n rows, ascending d) a call with head dims dqk/dv runs on: the smallest that
 * holds both (pa_fwd_instance_dim), or NULL. */
const pa_cuda_inst *pa_cuda_inst_for(const pa_cuda_inst *t, int n, int64_t dqk, int64_t dv);
/* supports()' form: that instance, or NULL and why (pa_fwd_dims_ok's words; `who` names a kernel family
 * inside the backend, NULL the backend's own). */
const pa_cuda_inst *pa_cuda_inst_ok(const pa_cuda_inst *t, int n, const struct pa_problem *pb, const char *who,
                                    char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
