/* The sm_80 instructions the kernels are built from, as thin inline-PTX wrappers: cp.async (16-byte,
 * zero-filling), ldmatrix (plain and transposed), mma.sync m16n8k16 with fp32 accumulation, and the
 * shared-memory swizzle; ex2 and the 16-bit packing every CUDA kernel uses are in cuda_math.cuh. */
#ifndef PORTATTN_SM80_PTX_CUH
#define PORTATTN_SM80_PTX_CUH

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include "cuda_math.cuh"

__device__ __forceinline__ uint32_t sm80_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes global -> shared, bypassing L1; when !valid nothing is read and 16 zero bytes land, so
 * rows past a sequence's end are zeros (never NaN garbage that a p = 0 could not cancel). */
__device__ __forceinline__ void sm80_cp_async16(uint32_t dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void sm80_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }

/* Wait until at most N of this thread's groups are still in flight. */
template <int N>
__device__ __forceinline__ void sm80_cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i. */
__device__ __forceinline__ void sm80_ldsm_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void sm80_ldsm_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* d += a * b for one 16x8x16 tile: a row-major 16x16 (4 regs), b column-major 16x8 (2 regs). */
__device__ __forceinline__ void sm80_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __half)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void sm80_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __nv_bfloat16)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Byte offset of 16-byte chunk `ch` of row `row` in a shared tile of PITCH chunks per row (PITCH a
 * multiple of 8): chunks XOR-swizzled by (row & 7) inside each 128-byte group, so the eight rows
 * one ldmatrix phase reads (or one cp.async phase writes) hit 32 distinct banks. */
template <int PITCH>
__device__ __forceinline__ uint32_t sm80_swz(int row, int ch)
{
    return (uint32_t)(row * PITCH * 16 + ((ch ^ (row & 7)) << 4));
}

#endif
