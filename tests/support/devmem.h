/* Memory and timing for the tests and the benchmark: the same calls for host memory (CPU backend)
 * and device memory (CUDA and HIP backends), so one harness drives every backend. Not part of the library. */
#ifndef PORTATTN_DEVMEM_H
#define PORTATTN_DEVMEM_H

#include <stddef.h>
#include "portattn.h"

typedef enum dm_kind { DM_HOST = 0, DM_CUDA = 1, DM_HIP = 2 } dm_kind;

/* Memory a backend takes its tensors in. */
dm_kind dm_kind_of(portattn_backend_t backend);
/* 1 if memory of this kind can be had here (device present); else 0 and why. */
int dm_available(dm_kind kind, char *why, size_t why_len);

void *dm_alloc(dm_kind kind, size_t bytes); /* NULL on failure */
void dm_free(dm_kind kind, void *ptr);
int dm_upload(dm_kind kind, void *dst, const void *src, size_t bytes);   /* 0 on success */
int dm_download(dm_kind kind, void *dst, const void *src, size_t bytes); /* 0 on success */
int dm_sync(dm_kind kind);                                              /* 0 on success */

/* How calls are timed. GPUs, by default as triton.testing.do_bench times the peers: warm-up and
 * repetitions by time (counts from an estimate over 5 calls), a 256 MiB L2-flushing memset before
 * each timed call, each call between its own events, the median. burst = 1: fixed counts `warmup`
 * and `reps` instead (the same flushes and events). The host CPU always takes the counts, timed by
 * the wall clock. */
typedef struct dm_protocol {
    double warmup_ms, rep_ms;
    int burst, warmup, reps;
} dm_protocol;

typedef struct dm_timing {
    double median_ms, p20_ms, p80_ms, min_ms; /* over the timed calls */
    int reps;                                 /* timed calls */
    double host_us; /* GPUs: median host time inside one fn(arg), the API's CPU overhead, measured after
                     * the timing with the launch queue kept short; -1 otherwise */
} dm_timing;

/* Times fn(arg) (0 = success) on the kind's clock; 0 on success, 1 if a call or the clock failed. */
int dm_time(dm_kind kind, const dm_protocol *pr, int (*fn)(void *), void *arg, dm_timing *out);
/* Median host time (us) of one fn(arg) over `calls` calls back to back, the device synchronised every
 * 8 so that the launch queue never fills (as dm_timing's host_us); on DM_HOST without syncs. 0 on
 * success, 1 if a call or a sync failed. */
int dm_host_cost(dm_kind kind, int calls, int (*fn)(void *), void *arg, double *us);
/* The host-cost floor of any call that launches a kernel: the median host time of one launch of an
 * empty kernel (cudaLaunchKernel, as the library launches), measured as dm_timing's host_us (calls
 * back to back, a sync every 8). 0 and *us on success; 1 and *us = -1 where there is no such launch
 * (the CPU, HIP) or it failed. */
int dm_launch_floor(dm_kind kind, int calls, double *us);
#define DM_FLUSH_MIB 256
#define DM_XSTR(x) #x
#define DM_STR(x) DM_XSTR(x)

/* The kind's short name: "host", "cuda" or "hip". */
const char *dm_kind_name(dm_kind kind);

/* Device name for reports ("host CPU" for DM_HOST). */
const char *dm_device_name(dm_kind kind);

#endif
