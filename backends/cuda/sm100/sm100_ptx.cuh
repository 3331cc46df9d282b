/* sm_100a/sm_103a primitives of the cuda-sm100 kernel: tcgen05 (TMEM allocation, MMA issue,
 * commit, TMEM loads/stores, fences) as inline PTX. Defined only in the sm_100a/sm_103a device
 * passes (feature macros); mbarriers and TMA come from ../tma_mbar_ptx.cuh. With PA_SM100_EMULATE
 * (the emulation build, CMake's PORTATTN_SM100_EMULATION) the same names come from
 * emu/sm100_emu_ptx.cuh instead, used in the sm_90a pass: this switch is the only place the kernel
 * source meets the emulation. */
#ifndef PORTATTN_SM100_PTX_CUH
#define PORTATTN_SM100_PTX_CUH

#include <stdint.h>

#include "tma_mbar_ptx.cuh"

/* PA_SM100_EXP2_FMA: part of the exponentials on the FMA pipe (sm100_exp2_fma), the sm_100a path;
 * sm_103a keeps them all on its faster SFU. The simulation and the emulation build take the sm_100a
 * path, so that the tests cover the polynomial. */
#if defined(PA_SM100_HOST_SIM)
/* CPU simulation (tests/sim/sm100_sim/test_sm100_sim.cpp): the wrappers are the test's, on the host. */
#define PA_SM100_DEVICE 1
#define PA_SM100_EXP2_FMA 1
#elif defined(PA_SM100_EMULATE)
/* Emulation build (test builds only): the same kernel on sm_90a, tcgen05 emulated. Included in
 * every pass: nvcc's host pass registers the emulation's __device__ TMEM pool. */
#include "emu/sm100_emu_ptx.cuh"
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PA_SM100_DEVICE 1
#define PA_SM100_EXP2_FMA 1
#endif
#elif defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM103_ALL))
#define PA_SM100_DEVICE 1
#define PA_SM100_NATIVE 1
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
#define PA_SM100_EXP2_FMA 1
#endif
#endif

#if defined(PA_SM100_DEVICE) && !defined(PA_SM100_HOST_SIM)
/* 2^x on the SFU; ex2(-inf) = +0, which masked scores need. */
__device__ __forceinline__ float sm100_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#endif

#ifdef PA_SM100_NATIVE
/* Warp-collective: allocates ncols TMEM columns (a power of two >= 32), writes the base address to
 * the shared slot; then gives up the right to allocate more, so a co-resident CTA's alloc cannot
 * wait on this one. The same warp frees (dealloc) before the CTA exits. */
__device__ __forceinline__ void sm100_tmem_alloc(uint32_t slot, uint32_t ncols)
{
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(slot), "r"(ncols) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void sm100_tmem_dealloc(uint32_t taddr, uint32_t ncols)
{
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
}
/* Ordering of tcgen05 operations around thread synchronisation (barrier waits/arrives). */
__device__ __forceinline__ void sm100_fence_before(void) { asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory"); }
__device__ __forceinline__ void sm100_fence_after(void) { asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory"); }

/* D (+)= A B, A and B from shared memory by descriptor (one thread issues). */
__device__ __forceinline__ void sm100_mma_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n"
                 ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(acc) : "memory");
}
/* D (+)= A B, A from TMEM (K-major: row m in lane m), B from shared memory (the TS form). */
__device__ __forceinline__ void sm100_mma_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc, uint32_t idesc, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, p;\n}\n"
                 ::"r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(acc) : "memory");
}
/* One arrival on the mbarrier once every tcgen05.mma this thread issued before has completed. */
__device__ __forceinline__ void sm100_commit(uint32_t bar)
{
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(bar) : "memory");
}

/* Warp-collective TMEM <-> register moves, shape 32x32b: thread i <-> lane (taddr lane + i),
 * register j <-> column (taddr column + j). The warp may only name its own lane quadrant. */
__device__ __forceinline__ void sm100_ld32(uint32_t taddr, uint32_t (&r)[32])
{
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, [%32];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
                   "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]),
                   "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]),
                   "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
                 : "r"(taddr) : "memory");
}
__device__ __forceinline__ void sm100_st32(uint32_t taddr, const uint32_t (&r)[32])
{
    asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32};"
                 ::"r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]),
                   "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]),
                   "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]),
                   "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31])
                 : "memory");
}
__device__ __forceinline__ void sm100_wait_ld(void) { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void sm100_wait_st(void) { asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory"); }

#if defined(__CUDA_ARCH_FEAT_SM103_ALL)
/* sm_103 only (PTX ISA: tcgen05.ld.red needs sm_103f): the same load plus the max of the thread's
 * 32 values (the row max of 32 columns). */
#define PA_SM100_HAVE_LD_RED 1
__device__ __forceinline__ void sm100_ld32_max(uint32_t taddr, uint32_t (&r)[32], float &mx)
{
    asm volatile("tcgen05.ld.red.sync.aligned.32x32b.x32.max.f32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, [%33];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
                   "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]),
                   "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]),
                   "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31]),
                   "=f"(mx)
                 : "r"(taddr) : "memory");
}
#endif
#endif

#endif
