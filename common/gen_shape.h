/* What the generic forward kernel (gen_fwd_body.h, one source for cuda-generic and hip-generic) takes
 * and which pointers it dereferences: one host rule for both backends. Plain C; PA_GEN_DMAX also
 * sizes the kernel's per-lane output registers. */
#ifndef PORTATTN_GEN_SHAPE_H
#define PORTATTN_GEN_SHAPE_H

#include <stddef.h>

#define PA_GEN_DMAX 256 /* the largest head dim (Dqk and Dv) */
#define PA_GEN_MAX_PTRS 11

#ifdef __cplusplus
extern "C" {
#endif
struct pa_problem;

/* 1 if the generic kernel takes the (validated) problem by its shape, its name "generic<dtype>" in
 * kernel; else 0 and why: a dtype it does not know, head dims outside 1..PA_GEN_DMAX, heads_q over
 * 2^31-1 (its head math is 32-bit). */
int pa_gen_shape_ok(const struct pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len);

/* A pointer the kernels will dereference, and its name for the refusal. */
typedef struct pa_gen_ptr { const void *ptr; const char *what; } pa_gen_ptr;
/* The pointers the generic forward and its append dereference for this call (none for an empty
 * call: nothing is launched; K and V only with keys; k_new/v_new only when appending): their count,
 * at most PA_GEN_MAX_PTRS, written to out. */
int pa_gen_device_ptrs(const struct pa_problem *pb, pa_gen_ptr out[PA_GEN_MAX_PTRS]);
#ifdef __cplusplus
}
#endif

#endif
