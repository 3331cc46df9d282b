/* Included first (-include) when the HIP kernel source is compiled for the fiber simulation (the fake
 * HIP runtime, tests/sim/hip_fake, and the kernel-level checks, tests/sim/hip_sim). */
#include "cuda_fp16.h"
#include "cuda_runtime.h"
/* The emulation's only inline asm is its per-wave barrier, asm volatile("bar.sync %0, %1;" :: ...):
 * it becomes sim_sync_wave(), a barrier of the calling fiber's wave (64 or 32 threads). */
#define asm
#define volatile(...) sim_sync_wave()
/* Whether the simulated target's MFMA flushes 16-bit subnormals (hip_wave.h): set per launch by the
 * fake runtime from the target it simulates, or by the hip_sim test. */
extern int pa_sim_mfma_ftz;
#define PA_EMU_MFMA_FTZ pa_sim_mfma_ftz
