/* Included first (-include) when a HIP kernel's source is compiled for the CPU (the fake HIP runtime,
 * tests/sim/hip_fake, the kernel-level checks, tests/sim/hip_sim, and the AMD probe's emulated side):
 * the CUDA names every simulation shares (tests/sim/sim_shim, fibers) and what the HIP kernels' nvcc
 * emulation build needs beyond them. */
/* The kernels' __shared__ arrays are function statics: workgroups run one at a time. */
#define __shared__ static
#include "cuda_runtime.h"
/* The emulation's only inline asm is its per-wave barrier, asm volatile("bar.sync %0, %1;" :: ...):
 * it becomes sim_sync_wave(), a barrier of the calling fiber's wave (64 or 32 threads). */
#define asm
#define volatile(...) sim_sync_wave()
/* Whether the simulated target's MFMA flushes 16-bit subnormals (hip_wave.h): set per launch by the
 * fake runtime from the target it simulates, or by the hip_sim test. */
extern int pa_sim_mfma_ftz;
#define PA_EMU_MFMA_FTZ pa_sim_mfma_ftz
