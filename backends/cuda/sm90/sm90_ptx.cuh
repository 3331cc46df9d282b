/* sm_90a primitives of the cuda-sm90 kernels: the wgmma issue protocol, shared-memory matrix
 * descriptors, register reallocation (mbarriers and TMA loads: ../tma_mbar_ptx.cuh, shared with
 * cuda-sm100). Everything is inline PTX and compiles to nothing outside the sm_90a pass (the
 * feature macro), so the file can sit in any build. */
#ifndef PORTATTN_SM90_PTX_CUH
#define PORTATTN_SM90_PTX_CUH

#include <stdint.h>

#include "tma_mbar_ptx.cuh" /* mbarriers, TMA loads: shared with cuda-sm100 */

#if defined(PA_SM90_HOST_SIM)
/* CPU simulation (tests/sim/sm90_sim): the kernel body compiled by g++; the primitives below, wgmma
 * and the mbarriers/TMA are the simulation's. */
#define PA_SM90_DEVICE 1
#elif defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PA_SM90_DEVICE 1
#endif

#if defined(PA_SM90_DEVICE) && !defined(PA_SM90_HOST_SIM)
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
/* A 32-bit word to a shared-memory address (generic proxy). */
__device__ __forceinline__ void sm90_st_shared32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
/* 16 zero bytes at a shared-memory address (generic proxy). */
__device__ __forceinline__ void sm90_st_shared_zero16(uint32_t addr)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "r"(0) : "memory");
}
/* 16 bytes to global memory at a 16-byte aligned address, as one vector store (spelled out: nvcc
 * split a uint4 store whose alignment it could not prove into four 4-byte ones). */
__device__ __forceinline__ void sm90_st_global16(void *p, uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3)
{
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(x0), "r"(x1), "r"(x2), "r"(x3) : "memory");
}
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
