/* The small C-linkage table each backend gives the front end (docs/design.md section 3). */
#ifndef PORTATTN_BACKEND_H
#define PORTATTN_BACKEND_H

#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a backend's supports() decided for a call, which run() and workspace() then take as it is
 * instead of deriving it again (docs/design.md section 3): the instance it chose and what it derived
 * on the way (the route between its kernel families, the shape, the split count). Lives in the
 * caller's frame; the selector zeroes it before each supports() it calls, and the supports() that
 * accepts the call fills what its backend reads. */
typedef struct pa_choice {
    const void *inst; /* the instance descriptor (CUDA families: a row of their pa_cuda_inst table), or NULL */
    int route;        /* which of the backend's kernel families takes the call (the backend's own codes) */
    int bm;           /* query rows per CTA or work item of the shape chosen */
    int nc, qpack;    /* cuda-sm90: consumer warpgroups, query heads per work item */
    int splits;       /* split-KV parts of a decode call (1: none) */
} pa_choice;

typedef struct pa_backend {
    portattn_backend_t id;
    const char *name;
    /* 1 if the hardware/runtime is present; `detail` gets the device name or why not.
     * Called on every selection: cache anything expensive. */
    int (*probe)(char *detail, size_t detail_len);
    /* 1 if it can run the (validated) problem, with its choice in *ch (never NULL) and its kernel
     * named; else 0 and the reason. Pure: never launches. The selector calls it for "supported?" and
     * before each launch. */
    int (*supports)(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why, size_t why_len);
    /* Launches on `stream` what supports() chose (ch). On failure returns a status with the message in `err`. */
    portattn_status_t (*run)(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len);
    /* Optional (NULL = never needs one): workspace bytes run() uses for this problem and choice. */
    size_t (*workspace)(const pa_problem *pb, const pa_choice *ch);
} pa_backend;

/* Backward entry points of a backend that has a backward pass (the same id's pa_backend gives its
 * name and probe). Same contracts as supports/run/workspace above, for a validated backward call. */
struct pa_bwd_problem;
typedef struct pa_bwd_backend {
    portattn_backend_t id;
    int (*supports)(const struct pa_bwd_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len);
    portattn_status_t (*run)(const struct pa_bwd_problem *pb, void *stream, char *err, size_t err_len);
    size_t (*workspace)(const struct pa_bwd_problem *pb); /* optional */
    /* Non-NULL: automatic selection passes it over and says why (a backward not yet run on its
     * hardware, or not yet faster than the next one); forced calls run it. */
    const char *forced_only;
} pa_bwd_backend;

/* The compiled-in backends (see registry.c). */
extern const pa_backend pa_backend_cpu;
extern const pa_bwd_backend pa_bwd_backend_cpu; /* common/cpu_bwd.c */
int pa_cpu_thread_count(void); /* threads of the CPU backend: PORTATTN_NUM_THREADS, else online cores */
#ifdef PORTATTN_HAVE_CUDA
extern const pa_backend pa_backend_cuda_sm80;
extern const pa_bwd_backend pa_bwd_backend_cuda_sm80; /* backends/cuda/sm80/sm80_bwd_backend.c */
#ifdef PORTATTN_HAVE_SM90
extern const pa_backend pa_backend_cuda_sm90;
extern const pa_bwd_backend pa_bwd_backend_cuda_sm90; /* backends/cuda/sm90/sm90_bwd_backend.c: forced calls only */
#endif
#ifdef PORTATTN_HAVE_SM100
extern const pa_backend pa_backend_cuda_sm100; /* forced calls only (registry.c: pa_backend_forced_only) */
#endif
extern const pa_backend pa_backend_cuda_generic;
extern const pa_bwd_backend pa_bwd_backend_cuda_generic; /* backends/cuda/generic/generic_bwd_backend.c */
/* Where a pointer lives, from the CUDA runtime (backends/cuda/common/cuda_host.c). */
int pa_cuda_ptr_is_device_only(const void *ptr); /* host cannot dereference it */
int pa_cuda_ptr_is_device_accessible(const void *ptr); /* current device can dereference it */
int pa_cuda_take_device_error(char *buf, size_t len);  /* a device error this thread's queries met */
void pa_cuda_memo(int on); /* answers reused within one resolution (cuda_host.h) */
#endif

#ifdef PORTATTN_HAVE_HIP
extern const pa_backend pa_backend_hip_cdna;  /* backends/hip/hip_backend.c */
extern const pa_backend pa_backend_hip_rdna3; /* backends/hip/hip_backend.c */
/* 1 if ptr is HIP device memory the host cannot dereference; 0 otherwise and whenever the process has
 * not loaded the HIP runtime itself (backends/hip/hip_rt.c). */
int pa_hip_ptr_is_device_only(const void *ptr);
#endif

/* Test builds' hook (common/registry.c): `be` answers for its id in place of the compiled-in table
 * (or where none is compiled in) for the rest of the process. Called before the first call into the
 * library, by an emulation backend's load-time constructor (backends/hip/cdna_emu_backend.c), so that
 * the product registry names no emulation backend. */
void pa_backend_register_test(const pa_backend *be);

/* Can the host dereference ptr? Asks every compiled GPU runtime; 1 when none objects. */
int pa_host_accessible(const void *ptr);

/* snprintf into a reason/message buffer, never overflowing, returns `status` (for one-line returns). */
portattn_status_t pa_fmt(char *buf, size_t len, portattn_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* supports()' refusal: the reason into (why, why_len), NOT_SUPPORTED, and 0 as the function's answer.
 * Expects the function's parameters to be named why and why_len. */
#define PA_REFUSE(...) (pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, __VA_ARGS__), 0)

#ifdef __cplusplus
}
#endif

#endif
