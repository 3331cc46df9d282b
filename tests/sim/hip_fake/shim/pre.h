/* Included first (-include) when the hip-cdna kernel source is compiled for the fiber simulation. */
#include "cuda_fp16.h"
#include "cuda_runtime.h"
/* The emulation's only inline asm is its per-wave barrier, asm volatile("bar.sync %0, %1;" :: ...):
 * it becomes sim_sync_wave(), a barrier of the calling fiber's 64-thread wave. */
#define asm
#define volatile(...) sim_sync_wave()
/* Whether the simulated target's MFMA flushes 16-bit subnormals (hip_wave.h): set per launch by the
 * runtime (fake_hip.cpp) from the target it simulates. */
extern int pa_sim_mfma_ftz;
#define PA_EMU_MFMA_FTZ pa_sim_mfma_ftz
