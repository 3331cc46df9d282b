/* The KV-cache append of the generic kernels, one source for every vendor: cuda-generic's and every
 * CUDA family's (backends/cuda/common/cuda_append.cu) and hip-generic's (backends/hip/hipgen.hip).
 * Plain device code on threadIdx/blockIdx/gridDim only; W lanes a warp, WARPS warps a block. */
#ifndef PORTATTN_GEN_APPEND_BODY_H
#define PORTATTN_GEN_APPEND_BODY_H

#include <stdint.h>

#include "fwd_args.h"

/* KV-cache append: one warp per (sequence, new token, KV head) row, lanes over the head dims. It
 * copies bits, so one instance per element size serves f16, bf16 and f32 (T = uint16_t, uint32_t). */
template <typename T, int W, int WARPS>
__device__ __forceinline__ void pa_gen_append_body(const pa_fwd_args &a)
{
    const int lane = threadIdx.x & (W - 1);
    const int64_t hkv = a.heads_kv, snew = a.seqlen_new64, cap = a.seqlen_k64;
    const int64_t rows = a.batch64 * snew * hkv; /* the size of k_new, validated to fit */
    const int64_t *kst = a.ks, *vst = a.vs, *knst = a.kns, *vnst = a.vns;
    const int32_t *used_k = a.kv.seqused_k, *bt = a.kv.block_table;
    /* page_size is a power of two: shift and mask instead of 64-bit division. */
    const int pshift = a.kv.page_shift;
    const int64_t pmask = ((int64_t)1 << pshift) - 1;
    T *k = (T *)a.k, *v = (T *)a.v;
    const T *kn = (const T *)a.k_new, *vn = (const T *)a.v_new;

    for (int64_t r = (int64_t)blockIdx.x * WARPS + (threadIdx.x / W); r < rows; r += (int64_t)gridDim.x * WARPS) {
        const int64_t h = r % hkv, t = r / hkv, i = t % snew, b = t / snew;
        /* Device memory may hold anything: a negative length counts as 0, rows past the capacity
         * and pages outside the pool are dropped (warp-uniform, r is per warp). */
        const int64_t used = used_k[b];
        const int64_t j = (used < 0 ? 0 : used) + i;
        if (j >= cap) continue;
        int64_t ko, vo;
        if (bt) {
            /* j < seqlen_k, so j / page_size < block_table_stride: the table read is in bounds. */
            const int64_t page = bt[b * a.kv.bt_stride + (j >> pshift)];
            if (page < 0 || page >= a.kv.num_pages) continue;
            ko = page * kst[0] + (j & pmask) * kst[1];
            vo = page * vst[0] + (j & pmask) * vst[1];
        } else {
            ko = b * kst[0] + j * kst[1];
            vo = b * vst[0] + j * vst[1];
        }
        ko += h * kst[2];
        vo += h * vst[2];
        const int64_t kno = b * knst[0] + i * knst[1] + h * knst[2];
        const int64_t vno = b * vnst[0] + i * vnst[1] + h * vnst[2];
        for (int64_t d = lane; d < a.dqk; d += W) k[ko + d * a.kd] = kn[kno + d * knst[3]];
        for (int64_t d = lane; d < a.dv; d += W) v[vo + d * a.vd] = vn[vno + d * vnst[3]];
    }
}

#endif
