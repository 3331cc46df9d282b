/* Host side: the dynamic shared memory opt-in of a kernel, set once per device rather than on every
 * launch (cudaFuncSetAttribute costs about a microsecond of host time, which decode calls feel). */
#ifndef PORTATTN_SM80_ATTR_CUH
#define PORTATTN_SM80_ATTR_CUH

#include <cuda_runtime.h>

/* `done` belongs to the caller's launcher instance (a static array there): kernels of one signature
 * share a pointer type, so a static here would wrongly be shared between them. */
template <typename Kernel>
static cudaError_t sm80_smem_optin(Kernel kern, int bytes, int done[64])
{
    int dev = 0; /* a racing second set is harmless */
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const bool cached = dev >= 0 && dev < 64;
    if (cached && __atomic_load_n(&done[dev], __ATOMIC_ACQUIRE)) return cudaSuccess;
    e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess && cached) __atomic_store_n(&done[dev], 1, __ATOMIC_RELEASE);
    return e;
}

#endif
