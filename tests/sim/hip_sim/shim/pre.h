/* Included first (-include) by test_hip_cdna_sim and test_hip_rdna3_sim: the CUDA names the
 * emulation build of the HIP kernels uses, on the host. */
#include "cuda_runtime.h"
#include "cuda_fp16.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <random>
#include <vector>
#include <string>
#include <algorithm>
#include <cmath>
#include <functional>
/* The emulation's only inline asm is its per-wave barrier, asm volatile("bar.sync %0, %1;" :: ...):
 * it becomes sim_named_bar(), a std::barrier of the wave's threads (64 or 32:
 * sim_wave_threads). */
#define asm
#define volatile(...) sim_named_bar()
/* Whether the emulated MFMA flushes 16-bit subnormals as gfx90a's does (hip_wave.h); sim_common.h
 * defines it, each test sets it. */
extern int pa_sim_mfma_ftz;
#define PA_EMU_MFMA_FTZ pa_sim_mfma_ftz
