/* Every CUDA backward's per-row kernels around its main kernel, and the sequence and workspace
 * indexing they share with it:
 *  pa_bwd_prep: for every row slot of every (batch, query head), D = rowsum(dO * O) in fp32 and the
 *               forward's LSE in base 2; padding slots and rows that saw no key (LSE -inf) get
 *               LSE_2 = +inf and D = 0, so that every P a main kernel forms for them is 0.
 *  pa_bwd_dq:   dQ = scale * (the sum of the fp32 slices, in slice order), in the dtype.
 * A power of two of threads per row (PA_BWD_TPR), one 16-byte column chunk each; d96's 12 chunks
 * leave 4 of its 16 threads idle. */
#ifndef PORTATTN_CUDA_BWD_ROWS_CUH
#define PORTATTN_CUDA_BWD_ROWS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_bwd_args.h"
#include "cuda_math.cuh" /* pa_pack */
#include "seqlen.h"      /* pa_seq_extent */

/* One sequence of the call: where its rows start, how many, and its batch offsets of each tensor. */
struct pa_bwd_seq {
    int q0, sq, k0, sk;
};

__device__ __forceinline__ pa_bwd_seq pa_bwd_seq_of(const pa_bwd_args &a, int b)
{
    pa_bwd_seq s = {0, a.f.seqlen_q, 0, a.f.seqlen_k};
    if (a.f.cu_q) {
        pa_seq_extent(a.f.cu_q, b, a.f.seqlen_q, &s.q0, &s.sq);
        pa_seq_extent(a.f.cu_k, b, a.f.seqlen_k, &s.k0, &s.sk);
    }
    if (s.sq > a.max_sq) s.sq = a.max_sq; /* the workspace holds max_sq rows per (batch, head) */
    return s;
}

/* Element offset of packed row `row` of sequence b (varlen: the batch stride is ignored). Strides by
 * value: a pointer into the kernel's parameter struct would make the compiler copy it to local memory. */
__device__ __forceinline__ int64_t pa_bwd_row(const pa_bwd_args &a, int64_t bstride, int64_t rstride, int b, int row)
{
    return (a.f.cu_q ? 0 : (int64_t)b * bstride) + (int64_t)row * rstride;
}

/* Row index, in the workspace, of row 0 of (slice, batch, query head). */
__device__ __forceinline__ int64_t pa_bwd_ws_row(const pa_bwd_args &a, int slice, int b, int h)
{
    return (((int64_t)slice * a.f.batch + b) * a.f.heads + h) * a.sqp;
}

#define PA_BWD_ROW_THREADS 256
#define PA_BWD_TPR(d) ((d) <= 64 ? 8 : (d) <= 128 ? 16 : 32)

/* A 16-bit value (the low half of `bits`) as a float. */
__device__ __forceinline__ float pa_bwd_f32(uint32_t bits, __half)
{
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}
__device__ __forceinline__ float pa_bwd_f32(uint32_t bits, __nv_bfloat16)
{
    return __bfloat162float(__ushort_as_bfloat16((unsigned short)(bits & 0xffffu)));
}

/* Eight 16-bit values of a 16-byte chunk, as floats (element 2 i in the low half of word i). */
template <typename T>
__device__ __forceinline__ void pa_bwd_unpack8(uint4 u, float *f)
{
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = pa_bwd_f32(w[i / 2] >> (16 * (i & 1)), T());
}

template <typename T, int D>
__global__ void __launch_bounds__(PA_BWD_ROW_THREADS, 1) pa_bwd_prep(const pa_bwd_args a)
{
    constexpr int TPR = PA_BWD_TPR(D), RPB = PA_BWD_ROW_THREADS / TPR; /* threads per row, rows per block */
    static_assert(TPR * 8 >= D && TPR * 4 < D, "threads per row");
    const int c = threadIdx.x % TPR, b = blockIdx.z, h = blockIdx.y;
    const int i = blockIdx.x * RPB + threadIdx.x / TPR; /* row slot within (b, h) */
    const pa_bwd_seq s = pa_bwd_seq_of(a, b);
    float d = 0.f;
    if (i < s.sq && c < D / 8) {
        float x[8], y[8];
        const int64_t col = (int64_t)h * a.dos[2] + c * 8, ocol = (int64_t)h * a.f.os[2] + c * 8;
        pa_bwd_unpack8<T>(*(const uint4 *)((const T *)a.dout + pa_bwd_row(a, a.dos[0], a.dos[1], b, s.q0 + i) + col), x);
        const T *orow = (const T *)a.f.o + pa_bwd_row(a, a.f.os[0], a.f.os[1], b, s.q0 + i);
        pa_bwd_unpack8<T>(*(const uint4 *)(orow + ocol), y);
#pragma unroll
        for (int k = 0; k < 8; ++k) d = fmaf(x[k], y[k], d);
    }
    /* The row's TPR lanes are aligned within the warp; every lane takes part. */
#pragma unroll
    for (int m = TPR / 2; m > 0; m >>= 1) d += __shfl_xor_sync(0xffffffffu, d, m);
    if (c != 0 || i >= a.sqp) return;
    float l2 = INFINITY;
    if (i < s.sq) {
        const int64_t *ls = a.f.ls;
        const float l = a.f.lse[(a.f.cu_q ? 0 : (int64_t)b * ls[0]) + (int64_t)h * ls[1] + (int64_t)(s.q0 + i) * ls[2]];
        l2 = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;
    }
    const int64_t r = pa_bwd_ws_row(a, 0, b, h) + i;
    a.lse2[r] = l2;
    a.delta[r] = i < s.sq ? d : 0.f;
}

template <typename T, int D>
__global__ void __launch_bounds__(PA_BWD_ROW_THREADS, 1) pa_bwd_dq(const pa_bwd_args a)
{
    constexpr int TPR = PA_BWD_TPR(D), RPB = PA_BWD_ROW_THREADS / TPR;
    const int c = threadIdx.x % TPR, b = blockIdx.z, h = blockIdx.y;
    const int i = blockIdx.x * RPB + threadIdx.x / TPR;
    const pa_bwd_seq s = pa_bwd_seq_of(a, b);
    if (i >= s.sq || c >= D / 8) return;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int sl = 0; sl < a.splits; ++sl) {
        const float4 *src = (const float4 *)(a.dq_acc + (pa_bwd_ws_row(a, sl, b, h) + i) * D + c * 8);
        const float4 u = src[0], v = src[1];
        acc[0] += u.x, acc[1] += u.y, acc[2] += u.z, acc[3] += u.w;
        acc[4] += v.x, acc[5] += v.y, acc[6] += v.z, acc[7] += v.w;
    }
    const T tag = T();
    uint4 out;
    out.x = pa_pack(acc[0] * a.scale, acc[1] * a.scale, tag);
    out.y = pa_pack(acc[2] * a.scale, acc[3] * a.scale, tag);
    out.z = pa_pack(acc[4] * a.scale, acc[5] * a.scale, tag);
    out.w = pa_pack(acc[6] * a.scale, acc[7] * a.scale, tag);
    *(uint4 *)((T *)a.dq + pa_bwd_row(a, a.dqs[0], a.dqs[1], b, s.q0 + i) + (int64_t)h * a.dqs[2] + c * 8) = out;
}

/* One of the row kernels (prep: 0, dq: 1) over every row slot of the call. */
template <typename T, int D> static cudaError_t pa_bwd_rows_launch(const pa_bwd_args *a, int dq, cudaStream_t stream)
{
    constexpr int RPB = PA_BWD_ROW_THREADS / PA_BWD_TPR(D);
    if (a->sqp <= 0) return cudaSuccess;
    pa_bwd_args arg = *a;
    void *args[] = {&arg};
    const dim3 grid((unsigned)((a->sqp + RPB - 1) / RPB), (unsigned)a->f.heads, (unsigned)a->f.batch);
    return cudaLaunchKernel(dq ? (const void *)pa_bwd_dq<T, D> : (const void *)pa_bwd_prep<T, D>, grid,
                            dim3(PA_BWD_ROW_THREADS), args, 0, stream);
}

#endif
