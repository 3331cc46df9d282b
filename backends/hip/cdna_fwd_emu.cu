/* The hip-cdna kernel source compiled by nvcc against the wave emulation of hip_wave.h: the same
 * launch shape as cdna_fwd.hip, on an NVIDIA GPU. */
#include "cdna_entries.h"
#include "cdna_fwd_kernel.h"
#include "hip_grid.h"

#ifdef PORTATTN_HIP_EMULATION /* the library build of the emulation (backend hip-cdna, forced only) */
#include "cuda_host.h"
#include "fwd_resolve.h"
#endif

/* Every instance of cdna_entries.h of head dim d (the one serving the call, pa_fwd_instance_dim) and
 * this dtype that holds some of the call's output columns, as hip_backend.c launches them. */
extern "C" cudaError_t pa_hip_cdna_emu_launch(const pa_fwd_args *a, int bf16, int d, int64_t max_sq, cudaStream_t stream)
{
    unsigned g[3];
    pa_hip_grid(a->batch, a->heads, max_sq, PA_CDNA_BM, g);
    pa_fwd_args arg = *a;
    void *args[] = {&arg};
    cudaError_t e = cudaSuccess;
#define LAUNCH(name, b16, dk, dn, c0)                                                                         \
    if (e == cudaSuccess && dk == d && b16 == bf16 && c0 < a->dv)                                             \
        e = cudaLaunchKernel((const void *)pa_cdna_fwd<b16 != 0, dk, dn, c0>, dim3(g[0], g[1], g[2]), dim3(PA_CDNA_THREADS), \
                             args, 0, stream);
    PA_CDNA_ENTRIES(LAUNCH)
#undef LAUNCH
    return e;
}

#ifdef PORTATTN_HIP_EMULATION
extern "C" portattn_status_t pa_hip_cdna_emu_run(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    pa_fwd_args a; /* the same resolved arguments as the CUDA kernels */
    portattn_status_t st = pa_fwd_fill_args(pb, &a, err, err_len);
    if (st) return st;
    static const int dims[] = {PA_CDNA_DIMS};
    const int d = pa_fwd_instance_dim(dims, (int)(sizeof dims / sizeof *dims), a.dqk, a.dv);
    cudaError_t e = pa_hip_cdna_emu_launch(&a, p->dtype == PORTATTN_DTYPE_BF16, d, pb->max_seqlen_q, (cudaStream_t)stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "hip-cdna (emulated): kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
#endif
