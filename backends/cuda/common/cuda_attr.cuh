/* Host side: the dynamic shared memory opt-in of a kernel, set once per context rather than on every
 * launch (cudaFuncSetAttribute costs about a microsecond of host time, which decode calls feel).
 *
 * The attribute belongs to the context: a cudaDeviceReset by the caller destroys the primary context,
 * and in the one the runtime creates next the kernels start again at 48 KB, so a flag "done on this
 * device" goes stale and the next launch fails. The cache holds instead the key of the context the
 * attribute was set in (cuCtxGetId: unique for the life of the process), read by one driver call per
 * launch, a lookup of the thread's current context. Passed over: setting the attribute on every
 * launch (the microsecond, and the call is reported to wait for copies in flight), and retrying a
 * launch that failed for want of it (free until then, but every launch site needs the retry, and the
 * failed launch leaves its error in the caller's runtime slot). Where no key can be had (no context
 * current on this thread yet, the current one destroyed, a driver without cuCtxGetId) the attribute
 * is set, which also makes the runtime create and bind its context; the key cached is the one read
 * after the set. A caller alternating its own contexts on one device pays the set at each switch:
 * correct, only slower. */
#ifndef PORTATTN_CUDA_ATTR_CUH
#define PORTATTN_CUDA_ATTR_CUH

#include <cuda_runtime.h>

extern "C" int pa_cuda_context_key(void); /* cuda_host.c (declared in cuda_host.h too) */
extern "C" cudaError_t pa_cuda_smem_optin(const void *kernel, int bytes); /* cuda_host.c: leaves the error slot */

/* `done` belongs to the caller's launcher instance (a static array there): kernels of one signature
 * share a pointer type, so a static here would wrongly be shared between them. done[dev] is the key of
 * the context the attribute was last set in, 0 for none. */
template <typename Kernel>
static cudaError_t pa_smem_optin_once(Kernel kern, int bytes, int done[64])
{
    int dev = 0; /* a racing second set is harmless */
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const bool cached = dev >= 0 && dev < 64;
    const int key = pa_cuda_context_key();
    if (cached && key && __atomic_load_n(&done[dev], __ATOMIC_ACQUIRE) == key) return cudaSuccess;
    e = pa_cuda_smem_optin((const void *)kern, bytes);
    if (e == cudaSuccess && cached) __atomic_store_n(&done[dev], pa_cuda_context_key(), __ATOMIC_RELEASE);
    return e;
}

#endif
