/* The hip-rdna3 kernel source compiled by nvcc against the wave emulation of hip_wave.h (a wave32 is
 * one NVIDIA warp of 32 consecutive threads): the same launch shape as rdna3_fwd.hip. Built by
 * tests/isa/isa_gate_hip.sh; not yet run on a GPU (no library backend uses it). */
#include "rdna3_entries.h"
#include "rdna3_fwd_kernel.h"
#include "hip_grid.h"

/* Every instance of rdna3_entries.h of head dim d (the one serving the call, pa_fwd_instance_dim) and
 * this dtype that holds some of the call's output columns, as hip_backend.c launches them. */
extern "C" cudaError_t pa_hip_rdna3_emu_launch(const pa_fwd_args *a, int bf16, int d, int64_t max_sq, cudaStream_t stream)
{
    unsigned g[3];
    pa_hip_grid(a->batch, a->heads, max_sq, PA_RDNA3_BM, g);
    const dim3 grid(g[0], g[1], g[2]), block(PA_RDNA3_THREADS);
    pa_fwd_args arg = *a;
    void *args[] = {&arg};
    cudaError_t e = cudaSuccess;
    /* the instances over 128 columns are left out: d256's 48 KiB of LDS plus the emulation's scratch
     * pass CUDA's 48 KiB of static shared memory, and d160-d224 (30-42 KiB) have not been built with
     * nvcc (they run on the CPU simulation, tests/sim/hip_fake); their entries name a d64 stand-in so
     * that the list compiles */
#define LAUNCH(name, b16, dk, dn, c0)                                                                         \
    if (e == cudaSuccess && dk == d && b16 == bf16 && c0 < a->dv)                                             \
        e = cudaLaunchKernel((const void *)pa_rdna3_fwd<b16 != 0, dk <= 128 ? dk : 64, dk <= 128 ? dn : 64, dk <= 128 ? c0 : 0>, grid, \
                             block, args, 0, stream);
    if (d > 128) return cudaErrorNotSupported;
    PA_RDNA3_ENTRIES(LAUNCH)
#undef LAUNCH
    return e;
}
