/* portattn_merge's CUDA kernel: one warp per (batch, query, head) row, lanes over the head dims,
 * the row formula of the host loop (merge.h). One instance per (o, o_part) element type pair. Included
 * by cuda_merge.cu (the launcher) and by the CPU simulation of the kernel (test_merge_sim). */
#ifndef PORTATTN_CUDA_MERGE_KERNEL_CUH
#define PORTATTN_CUDA_MERGE_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "merge.h"

#define MRG_WARPS 4
#define MRG_THREADS (MRG_WARPS * 32)
#define MRG_MAX_BLOCKS 65535 /* enough to fill any GPU; the grid-stride loop covers the rest */

__device__ __forceinline__ float mrg_load(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float mrg_load(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float mrg_load(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void mrg_store(float *p, int64_t i, float x) { p[i] = x; }
__device__ __forceinline__ void mrg_store(__half *p, int64_t i, float x) { p[i] = __float2half_rn(x); }
__device__ __forceinline__ void mrg_store(__nv_bfloat16 *p, int64_t i, float x) { p[i] = __float2bfloat16_rn(x); }

template <typename TO, typename TP>
__global__ void __launch_bounds__(MRG_THREADS) pa_merge_kernel(const portattn_merge_params_t p)
{
    const int lane = threadIdx.x & 31;
    const int64_t rows = p.batch * p.seqlen_q * p.heads_q; /* validated to fit: o has that many rows */
    TO *o = (TO *)p.o.data;
    const TP *op = (const TP *)p.o_part.data;
    for (int64_t r = (int64_t)blockIdx.x * MRG_WARPS + (threadIdx.x >> 5); r < rows;
         r += (int64_t)gridDim.x * MRG_WARPS) {
        const int64_t h = r % p.heads_q, s = (r / p.heads_q) % p.seqlen_q, b = r / p.heads_q / p.seqlen_q;
        float *lse = p.lse + b * p.lse_stride[0] + h * p.lse_stride[1] + s * p.lse_stride[2];
        const float l = *lse;
        const float lp = p.lse_part[b * p.lse_part_stride[0] + h * p.lse_part_stride[1] + s * p.lse_part_stride[2]];
        float w, wp, merged;
        pa_merge_weights(l, lp, &w, &wp, &merged);
        const int64_t o0 = b * p.o.stride[0] + s * p.o.stride[1] + h * p.o.stride[2];
        const int64_t op0 = b * p.o_part.stride[0] + s * p.o_part.stride[1] + h * p.o_part.stride[2];
        for (int64_t d = lane; d < p.head_dim_v; d += 32) {
            float x = 0.0f; /* a side with LSE -inf saw no key: its O may be anything, never read */
            if (l != -INFINITY) x = w * mrg_load(o, o0 + d * p.o.stride[3]);
            if (lp != -INFINITY) x += wp * mrg_load(op, op0 + d * p.o_part.stride[3]);
            mrg_store(o, o0 + d * p.o.stride[3], x);
        }
        __syncwarp(); /* every lane has read the old LSE before lane 0 replaces it */
        if (lane == 0) *lse = merged;
    }
}

#endif
