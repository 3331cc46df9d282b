/* The emulation build of cuda-sm100 (PA_SM100_EMULATE, compiled for sm_90a): the tcgen05 wrappers
 * of sm100_ptx.cuh with the same signatures, implemented by sm100_tc_emu.h on an sm_90 GPU, while
 * TMA and mbarriers stay native. sm100_ptx.cuh includes this file in that build only; no release
 * build compiles or includes anything in this folder, and the kernel and its launcher do not know
 * the emulation exists (no parameter, no host code).
 *
 * - TMEM: 128 x 512 cells of global memory per CTA, one slot of a static pool of this module
 *   (sm100_emu_pool; each instance .cu is its own module, so each has its own pool). The emulated
 *   tcgen05.alloc claims a free slot (a flag taken by atomicCAS), dealloc gives it back, as the
 *   hardware allocates TMEM per resident CTA: launches on several streams at once get disjoint
 *   cells. The pool holds a slot for every CTA that can be resident on an sm_90 GPU (132 SMs, at
 *   most 2 of these CTAs per SM); were they all taken, alloc waits for a holder's dealloc, which
 *   comes (a holder is resident and needs no other CTA to finish). A slot's cells keep whatever
 *   its last CTA left, as TMEM does: the kernel never reads a cell it has not written.
 * - tcgen05.mma does not compute at issue: it is queued (in shared memory, issuing thread only)
 *   and the queue runs at the next tcgen05.commit, which then arrives on the mbarrier. So a
 *   consumer that reads TMEM without waiting for the commit's barrier sees stale data, as it
 *   could on hardware.
 * - tcgen05.ld/st: the thread's row of its warp's quadrant; a quadrant violation, a malformed
 *   descriptor or an out-of-range address traps (the test then fails with a launch error).
 * - wait::ld/st and the tcgen05 fences are no-ops: loads and stores complete at once, and the
 *   mbarrier/bar.sync that follow them order the global-memory TMEM for the other threads. */
#ifndef PORTATTN_SM100_EMU_PTX_CUH
#define PORTATTN_SM100_EMU_PTX_CUH

#include <stdint.h>

#include "sm100_tc_emu.h"
#include "tma_mbar_ptx.cuh"

/* The pool, in every pass: nvcc's host pass registers a module's __device__ variables. */
#define PA_SM100_EMU_SLOTS 264 /* 132 SMs x 2 CTAs (99,464 bytes of shared memory at d64) */
#define PA_SM100_EMU_CELLS (SM100_TMEM_LANES * SM100_TMEM_COLS)

__device__ uint32_t sm100_emu_pool[PA_SM100_EMU_SLOTS][PA_SM100_EMU_CELLS]; /* 256 KB per slot */
__device__ int sm100_emu_slot_taken[PA_SM100_EMU_SLOTS];                  /* 1: a CTA holds it */

#ifdef __CUDA_ARCH__ /* the wrappers: device passes only (they use tma_mbar_ptx.cuh's device functions) */
#define PA_SM100_EMU_QUEUE 32 /* MMAs between two commits: the kernel issues at most 8 (D/16, BN/16) */

typedef struct sm100_emu_op {
    uint64_t a_desc, b_desc;
    uint32_t d_taddr, a_taddr, idesc;
    int a_from_tmem, acc;
} sm100_emu_op;

__shared__ uint32_t *sm100_emu_tmem;                   /* this CTA's 128 x 512 cells */
__shared__ int sm100_emu_slot;                         /* their slot in the pool */
__shared__ sm100_emu_op sm100_emu_queue[PA_SM100_EMU_QUEUE];
__shared__ int sm100_emu_queued;

__device__ __forceinline__ void sm100_emu_check(int e)
{
    if (e) __trap();
}

/* Warp-collective, as tcgen05.alloc: lane 0 claims a pool slot (the first free one from
 * blockIdx.x on) for the CTA, empties the MMA queue and writes TMEM address 0 to the shared slot.
 * The kernel's __syncthreads after the allocation publishes the slot before any other tcgen05 use. */
__device__ __forceinline__ void sm100_tmem_alloc(uint32_t slot, uint32_t ncols)
{
    if (ncols < 32 || ncols > 512 || (ncols & (ncols - 1))) __trap();
    if ((threadIdx.x & 31) == 0) {
        const int first = (int)(blockIdx.x % PA_SM100_EMU_SLOTS);
        int s = first;
        while (atomicCAS(&sm100_emu_slot_taken[s], 0, 1) != 0) {
            s = (s + 1) % PA_SM100_EMU_SLOTS;
            if (s == first) __nanosleep(1000); /* every slot taken: wait for a dealloc */
        }
        __threadfence(); /* acquire: the previous holder's cell accesses came before its release */
        sm100_emu_slot = s;
        sm100_emu_tmem = sm100_emu_pool[s];
        sm100_emu_queued = 0;
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(slot), "r"(0u) : "memory");
    }
    __syncwarp();
}
/* Warp-collective, as tcgen05.dealloc: after the kernel's final __syncthreads every TMEM access of
 * the CTA is done; lane 0 hands the slot back. */
__device__ __forceinline__ void sm100_tmem_dealloc(uint32_t taddr, uint32_t ncols)
{
    (void)taddr, (void)ncols;
    if ((threadIdx.x & 31) == 0) {
        __threadfence(); /* release: this CTA's cell accesses before the slot is free again */
        atomicExch(&sm100_emu_slot_taken[sm100_emu_slot], 0);
    }
    __syncwarp();
}
__device__ __forceinline__ void sm100_fence_before(void) {}
__device__ __forceinline__ void sm100_fence_after(void) {}

__device__ __forceinline__ void sm100_emu_enqueue(sm100_emu_op op)
{
    if (sm100_emu_queued >= PA_SM100_EMU_QUEUE) __trap();
    sm100_emu_queue[sm100_emu_queued++] = op;
}
__device__ __forceinline__ void sm100_mma_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, int acc)
{
    const sm100_emu_op op = {a_desc, b_desc, d_tmem, 0u, idesc, 0, acc};
    sm100_emu_enqueue(op);
}
__device__ __forceinline__ void sm100_mma_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc, uint32_t idesc, int acc)
{
    const sm100_emu_op op = {0ull, b_desc, d_tmem, a_tmem, idesc, 1, acc};
    sm100_emu_enqueue(op);
}
/* Runs the queued MMAs in issue order over this CTA's shared memory and TMEM, then arrives. */
__device__ __forceinline__ void sm100_commit(uint32_t bar)
{
    const uint8_t *smem = (const uint8_t *)__cvta_shared_to_generic(0);
    for (int i = 0; i < sm100_emu_queued; ++i) {
        const sm100_emu_op *o = &sm100_emu_queue[i];
        sm100_emu_check(sm100_emu_mma_f16(sm100_emu_tmem, smem, 232448u, o->d_taddr, o->a_from_tmem, o->a_desc,
                                          o->a_taddr, o->b_desc, o->idesc, o->acc));
    }
    sm100_emu_queued = 0;
    __threadfence_block();
    pa_bar_arrive(bar);
}

__device__ __forceinline__ void sm100_ld32(uint32_t taddr, uint32_t (&r)[32])
{
    sm100_emu_check(sm100_emu_ld_32x32b(sm100_emu_tmem, (int)(threadIdx.x >> 5), (int)(threadIdx.x & 31), taddr, 32, r));
}
__device__ __forceinline__ void sm100_st32(uint32_t taddr, const uint32_t (&r)[32])
{
    sm100_emu_check(sm100_emu_st_32x32b(sm100_emu_tmem, (int)(threadIdx.x >> 5), (int)(threadIdx.x & 31), taddr, 32, r));
}
__device__ __forceinline__ void sm100_wait_ld(void) {}
__device__ __forceinline__ void sm100_wait_st(void) {}

#endif /* __CUDA_ARCH__ */

#endif
