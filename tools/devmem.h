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

/* Median time of one call of fn(arg) on the kind's clock over `reps` calls, after `warmup` untimed
 * calls; -1 on error. CUDA: as triton.testing.do_bench (an L2-flushing 256 MB memset before each
 * call, each call between its own events, no sync in between). */
double dm_time_ms(dm_kind kind, int warmup, int reps, int (*fn)(void *), void *arg);
/* CUDA: mean host time inside one fn(arg) of the last dm_time_ms (the API's CPU overhead:
 * validation, selection, launches), in microseconds; -1 otherwise. */
extern double dm_last_host_us;

/* The kind's short name: "host", "cuda" or "hip". */
const char *dm_kind_name(dm_kind kind);

/* Device name for reports ("host CPU" for DM_HOST). */
const char *dm_device_name(dm_kind kind);

#endif
