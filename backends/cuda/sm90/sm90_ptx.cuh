/* sm_90a primitives of the cuda-sm90 kernels: mbarriers, TMA tile loads, the wgmma issue protocol,
 * shared-memory matrix descriptors, register reallocation. Everything is inline PTX and compiles
 * to nothing outside the sm_90a pass (the feature macro), so the file can sit in any build. */
#ifndef PORTATTN_SM90_PTX_CUH
#define PORTATTN_SM90_PTX_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PA_SM90_DEVICE 1
#endif

__device__ __forceinline__ uint32_t sm90_smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

#ifdef PA_SM90_DEVICE
__device__ __forceinline__ void sm90_bar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
/* Makes the initialised barriers visible to the async proxy (TMA) before any use. */
__device__ __forceinline__ void sm90_bar_init_fence(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void sm90_bar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void sm90_bar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Waits for the completion of the barrier's phase with this parity (k-th completion: k & 1). The
 * loop is written out so that the barrier address stays one register. */
__device__ __forceinline__ void sm90_bar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
/* One box of a 4-D tensor map (coordinates innermost first) into shared memory; completes `bytes`
 * of the barrier's transaction count. Rows outside the tensor arrive as zeros. */
__device__ __forceinline__ void sm90_tma_load_4d(uint32_t dst, const void *tmap, uint32_t bar, int c0, int c1, int c2,
                                                 int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(dst), "l"((uint64_t)tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void sm90_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void sm90_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void sm90_wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int R> __device__ __forceinline__ void sm90_setmaxnreg_inc(void)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> __device__ __forceinline__ void sm90_setmaxnreg_dec(void)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
/* Keeps the compiler from moving accesses of an accumulator register across the async MMA. */
__device__ __forceinline__ void sm90_reg_fence(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void sm90_reg_fence(uint32_t &r) { asm volatile("" : "+r"(r)::"memory"); }
#endif

/* Shared-memory matrix descriptor with the 128-byte swizzle (the layout a SWIZZLE_128B TMA box of
 * 128-byte rows leaves in a 1024-byte aligned region: 16-byte chunk c of row r at c ^ (r & 7)).
 *   start: byte address; lbo: leading byte offset (N-major: between 64-element column blocks;
 *   K-major: unused); sbo: stride byte offset (between 8-row groups: 1024 here). */
__device__ __forceinline__ uint64_t sm90_desc_sw128(uint32_t start, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((start & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)1 << 62);
}

#endif
