/* Included first (-include) when the hip-cdna kernel source is compiled for the fiber simulation. */
#include "cuda_fp16.h"
#include "cuda_runtime.h"
/* The emulation's only inline asm is its per-wave barrier, asm volatile("bar.sync %0, %1;" :: ...):
 * it becomes sim_sync_wave(), a barrier of the calling fiber's 64-thread wave. */
#define asm
#define volatile(...) sim_sync_wave()
