/* The HIP runtime as portattn uses it: the few entry points of libamdhip64, loaded with dlopen when
 * first needed, so that the library has no link-time dependency on ROCm and one binary runs with or
 * without it. This header is the one place that names HIP's types and calls (the "vendor header":
 * error codes, memcpy kinds and the pointer-attribute struct are spelled here, not in the backends).
 * Used by the hip-cdna backend and by the tests' and benchmark's device memory (tests/support/devmem.c). */
#ifndef PORTATTN_HIP_RT_H
#define PORTATTN_HIP_RT_H

#include <stddef.h>

#include "portattn.h"

typedef int pa_hip_err;    /* hipError_t; 0 = hipSuccess */
typedef void *pa_hip_module; /* hipModule_t */
typedef void *pa_hip_fn;     /* hipFunction_t */
typedef void *pa_hip_stream; /* hipStream_t (NULL = the default stream) */
typedef void *pa_hip_event;  /* hipEvent_t */

enum { PA_HIP_SUCCESS = 0, PA_HIP_ERR_OUT_OF_MEMORY = 2, PA_HIP_ERR_NO_DEVICE = 100, PA_HIP_ERR_INVALID_DEVICE = 101,
       PA_HIP_ERR_NO_BINARY = 209 /* hipErrorNoBinaryForGpu */ };
enum { PA_HIP_MEMCPY_H2D = 1, PA_HIP_MEMCPY_D2H = 2 };

/* hipPointerAttribute_t up to allocationFlags: the same fields in ROCm 5 and 6, but the memory-type
 * enum was renumbered in ROCm 6 (pa_hip_ptr_is_device reads it by runtime version). */
typedef struct pa_hip_ptr_attr {
    int memory_type;
    int device;
    void *device_pointer, *host_pointer;
    int is_managed;
    unsigned allocation_flags;
    char reserved[64]; /* room for fields newer runtimes append */
} pa_hip_ptr_attr;

typedef struct pa_hip_rt {
    int version; /* hipRuntimeGetVersion */
    pa_hip_err (*GetDeviceCount)(int *);
    pa_hip_err (*GetDevice)(int *);
    pa_hip_err (*DeviceGetName)(char *, int, int);
    pa_hip_err (*ModuleLoadData)(pa_hip_module *, const void *);
    pa_hip_err (*ModuleGetFunction)(pa_hip_fn *, pa_hip_module, const char *);
    pa_hip_err (*ModuleLaunchKernel)(pa_hip_fn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     pa_hip_stream, void **, void **);
    pa_hip_err (*PointerGetAttributes)(pa_hip_ptr_attr *, const void *);
    pa_hip_err (*GetLastError)(void);
    pa_hip_err (*PeekAtLastError)(void);
    const char *(*GetErrorName)(pa_hip_err);
    const char *(*GetErrorString)(pa_hip_err);
    pa_hip_err (*Malloc)(void **, size_t);
    pa_hip_err (*Free)(void *);
    pa_hip_err (*Memcpy)(void *, const void *, size_t, int);
    pa_hip_err (*MemsetAsync)(void *, int, size_t, pa_hip_stream);
    pa_hip_err (*DeviceSynchronize)(void);
    pa_hip_err (*EventCreate)(pa_hip_event *);
    pa_hip_err (*EventRecord)(pa_hip_event, pa_hip_stream);
    pa_hip_err (*EventElapsedTime)(float *, pa_hip_event, pa_hip_event);
    pa_hip_err (*EventDestroy)(pa_hip_event);
} pa_hip_rt;

/* The loaded runtime, or NULL with the reason in why (no libamdhip64, or a symbol missing).
 * Thread-safe; loaded once per process. $PORTATTN_HIP_LIBRARY names another library to load. */
const pa_hip_rt *pa_hip_rt_get(char *why, size_t why_len);

/* The library side (hip_host.c). A HIP error as a portattn status with "what: hipErrorName (string)" in err. */
portattn_status_t pa_hip_status(const pa_hip_rt *rt, pa_hip_err e, const char *what, char *err, size_t err_len);

/* HIP's last error (hipGetLastError) is one slot per thread, shared with the caller: libamdhip64 is
 * one library per process. The rule: the library never clears an error it did not raise. A call of
 * the library that fails leaves its runtime error there, as a failed runtime call does (the status
 * carries it too). Only where the library carries on past a failed runtime call of its own (a pointer
 * query of a host pointer, a code object for another GPU) does it clear that error, and only if the
 * slot was clean before: `pending` is hipPeekAtLastError() from just before the call that may fail.
 * Where a caller's error was pending, a failed call of ours replaces it with ours (HIP has no call to
 * put it back), so an error stays pending but it may be ours. Runtimes before ROCm 7 set the slot to
 * the code of every call, successes included, so there no library call can keep a caller's error. */
void pa_hip_drop_error(const pa_hip_rt *rt, pa_hip_err pending);

/* 1 if ptr is device (or managed) memory of device `dev`; else 0 with why naming `what`. */
int pa_hip_ptr_check(const pa_hip_rt *rt, const void *ptr, int dev, const char *what, char *why, size_t why_len);

#endif
