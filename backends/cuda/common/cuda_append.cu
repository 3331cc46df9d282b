/* KV-cache append: one warp per (sequence, new token, KV head) row, lanes over the head dims.
 * It copies bits, so one instance per element size serves f16, bf16 and f32. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_append.h"
#include "cuda_host.h"

#define APP_WARPS 4
#define APP_THREADS (APP_WARPS * 32)
#define APP_MAX_BLOCKS 65535 /* enough to fill any GPU; the grid-stride loop covers the rest */

template <typename T>
__global__ void __launch_bounds__(APP_THREADS) pa_append_kernel(const pa_problem pb)
{
    const int lane = threadIdx.x & 31;
    const int64_t hkv = pb.p.heads_kv, snew = pb.seqlen_new, cap = pb.p.seqlen_k;
    const int64_t rows = pb.p.batch * snew * hkv; /* the size of k_new, validated to fit */
    const int64_t *kst = pb.p.k.stride, *vst = pb.p.v.stride;
    const int64_t *knst = pb.p.k_new.stride, *vnst = pb.p.v_new.stride;
    const int32_t *used_k = pb.p.seqused_k, *bt = pb.p.block_table;
    /* page_size is a power of two: shift and mask instead of 64-bit division. */
    const int pshift = bt ? __ffsll((long long)pb.p.page_size) - 1 : 0;
    const int64_t pmask = bt ? pb.p.page_size - 1 : 0;
    T *k = (T *)pb.p.k.data, *v = (T *)pb.p.v.data;
    const T *kn = (const T *)pb.p.k_new.data, *vn = (const T *)pb.p.v_new.data;

    for (int64_t r = (int64_t)blockIdx.x * APP_WARPS + (threadIdx.x >> 5); r < rows;
         r += (int64_t)gridDim.x * APP_WARPS) {
        const int64_t h = r % hkv, t = r / hkv, i = t % snew, b = t / snew;
        /* Device memory may hold anything: a negative length counts as 0, rows past the capacity
         * and pages outside the pool are dropped (warp-uniform, r is per warp). */
        const int64_t used = used_k[b];
        const int64_t j = (used < 0 ? 0 : used) + i;
        if (j >= cap) continue;
        int64_t ko, vo;
        if (bt) {
            /* j < seqlen_k, so j / page_size < block_table_stride: the table read is in bounds. */
            const int64_t page = bt[b * pb.p.block_table_stride + (j >> pshift)];
            if (page < 0 || page >= pb.p.num_pages) continue;
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
        for (int64_t d = lane; d < pb.p.head_dim_qk; d += 32) k[ko + d * kst[3]] = kn[kno + d * knst[3]];
        for (int64_t d = lane; d < pb.p.head_dim_v; d += 32) v[vo + d * vst[3]] = vn[vno + d * vnst[3]];
    }
}

extern "C" portattn_status_t pa_cuda_append(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (pb->seqlen_new <= 0 || p->batch <= 0 || p->heads_kv <= 0) return PORTATTN_SUCCESS; /* nothing to copy */
    if (!p->seqused_k || !p->k_new.data || !p->v_new.data) /* the front end requires all three */
        return pa_fmt(err, err_len, PORTATTN_ERROR_INTERNAL, "cuda append: seqlen_new = %lld without %s",
                      (long long)pb->seqlen_new, !p->seqused_k ? "seqused_k" : "k_new/v_new");
    const void *fn = NULL;
    switch (pa_dtype_size(p->dtype)) {
    case 2: fn = (const void *)pa_append_kernel<uint16_t>; break;
    case 4: fn = (const void *)pa_append_kernel<uint32_t>; break;
    default:
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda append: dtype %d not supported", (int)p->dtype);
    }
    const int64_t rows = p->batch * pb->seqlen_new * p->heads_kv;
    const int64_t blocks = rows / APP_WARPS + 1; /* no rounding overflow near INT64_MAX */
    const dim3 grid((unsigned)(blocks < APP_MAX_BLOCKS ? blocks : APP_MAX_BLOCKS));
    /* cudaLaunchKernel's own status, so that an error the caller left pending in the runtime is not
     * reported as ours (nor cleared: cuda_host.h, pa_cuda_drop_error). */
    pa_problem arg = *pb;
    void *args[] = { &arg };
    cudaError_t e = cudaLaunchKernel(fn, grid, dim3(APP_THREADS), args, 0, (cudaStream_t)stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda append: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
