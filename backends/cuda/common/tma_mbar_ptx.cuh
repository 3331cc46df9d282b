/* mbarrier and TMA primitives shared by the sm_90a and sm_100a/sm_103a kernels (cuda-sm90,
 * cuda-sm100): inline PTX that exists from sm_90 on. Outside a device pass of compute capability
 * 9.0 or newer the functions are not defined, so the header can sit in any build.
 * Waits are written-out try_wait loops: one register holds the barrier address across the loop
 * (library waits let ptxas outline the retry path and spill the address; seed log V40). */
#ifndef PORTATTN_TMA_MBAR_PTX_CUH
#define PORTATTN_TMA_MBAR_PTX_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PA_TMA_DEVICE 1
#endif

#ifndef PA_CUDA_HOST_SIM /* the CPU simulations (tests/sim/sim_shim/sim_tma.h) define these names themselves */
__device__ __forceinline__ uint32_t pa_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
#endif

#ifdef PA_TMA_DEVICE
__device__ __forceinline__ void pa_bar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
/* Makes the initialised barriers visible to the async proxy (TMA, tcgen05) before any use. */
__device__ __forceinline__ void pa_bar_init_fence(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void pa_bar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void pa_bar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Waits for the completion of the barrier's phase with this parity (k-th completion: k & 1). */
__device__ __forceinline__ void pa_bar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
/* Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (TMA
 * stores, wgmma, tcgen05.mma) that a barrier hands them to. */
__device__ __forceinline__ void pa_fence_proxy_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/* One box of a 4-D tensor map (coordinates innermost first) into shared memory; completes `bytes`
 * of the barrier's transaction count. Rows outside the tensor arrive as zeros. */
__device__ __forceinline__ void pa_tma_load_4d(uint32_t dst, const void *tmap, uint32_t bar, int c0, int c1, int c2,
                                               int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(dst), "l"((uint64_t)tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
/* One box from shared memory to a 4-D tensor map (rows outside the tensor are not written), in the
 * thread's bulk async-group; the source must be written, and fenced with pa_fence_proxy_async, first. */
__device__ __forceinline__ void pa_tma_store_4d(const void *tmap, uint32_t src, int c0, int c1, int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                 ::"l"((uint64_t)tmap), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void pa_bulk_commit(void) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* Until the thread's committed bulk stores have read their shared memory (it may be reused or freed). */
__device__ __forceinline__ void pa_bulk_wait_read(void) { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
/* Named barrier `id` (1..15; 0 is __syncthreads) over `n` threads, a multiple of 32. */
__device__ __forceinline__ void pa_named_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
/* Counts this thread at named barrier id (of n threads) without waiting for the others. */
__device__ __forceinline__ void pa_named_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
#endif

#endif
