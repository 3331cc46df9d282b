/* cuda-generic forward: one warp per query row, 32-key tiles staged in shared memory as fp32,
 * online softmax in fp32. Simple on purpose: it is the GPU oracle, not the fast path. */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "cuda_append.h"
#include "cuda_host.h"
#include "gen_device.cuh"
#include "generic_launch.h"

#define GEN_ROWS 8                  /* warps per block, one query row each */
#define GEN_THREADS (GEN_ROWS * 32)
#define GEN_KT 32                   /* keys per tile: one per lane for the scores */
#define GEN_DMAX 256
#define GEN_DREG (GEN_DMAX / 32)    /* output dims per lane */

/* Floats of dynamic shared memory: K tile (odd pitch so lane-per-key reads hit 32 banks), V tile,
 * one scaled query row and one P row per warp. */
#define GEN_KPITCH(dqk) ((dqk) | 1)
#define GEN_SMEM_FLOATS(dqk, dv) \
    (GEN_KT * GEN_KPITCH(dqk) + GEN_KT * (dv) + GEN_ROWS * (dqk) + GEN_ROWS * GEN_KT)
/* Every launch raises the limit to the largest size, never to its own: a smaller value set by a
 * concurrent caller could otherwise fail a bigger launch. */
#define GEN_SMEM_MAX_BYTES (sizeof(float) * GEN_SMEM_FLOATS(GEN_DMAX, GEN_DMAX))

/* Page of key j (< seqlen_k) from a sequence's page-table row (as kv_row() in cpu_ref.c). Entries
 * in device memory may be garbage: clamped into the pool so that they never read out of bounds.
 * Shift, not division: page_size is a power of two, and 64-bit division costs registers (below). */
__device__ __forceinline__ int64_t gen_page(const int32_t *bt_row, int64_t j, int pshift, int64_t num_pages)
{
    return pa_page_clamp(bt_row[j >> pshift], num_pages);
}

/* No IEEE division and no 64-bit division in the kernel: ptxas turns them into ABI calls whose
 * saved registers spill. Hence inv_cap from the host, 32-bit head math, and __fdividef by lsum,
 * which lies in [1, Sk] where it is within 2 ulp. The min-blocks 2 (a 128-register cap) is there
 * because with 256 alone ptxas 13.0 picked 80 registers and spilled for the sm_80 fp32 instance. */
template <typename T>
__global__ void __launch_bounds__(GEN_THREADS, 2) gen_fwd(const pa_problem pb, float inv_cap)
{
    extern __shared__ float smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int dqk = (int)pb.p.head_dim_qk, dv = (int)pb.p.head_dim_v, kpitch = GEN_KPITCH(dqk);
    float *ks = smem;
    float *vs = ks + GEN_KT * kpitch;
    float *qs = vs + GEN_KT * dv + warp * dqk;
    float *ps = vs + GEN_KT * dv + GEN_ROWS * dqk + warp * GEN_KT;

    const T *q = (const T *)pb.p.q.data, *k = (const T *)pb.p.k.data, *v = (const T *)pb.p.v.data;
    T *o = (T *)pb.p.o.data;
    const int64_t *qst = pb.p.q.stride, *kst = pb.p.k.stride, *vst = pb.p.v.stride, *ost = pb.p.o.stride;
    const float softcap = pb.p.softcap;
    const int32_t *bt = pb.p.block_table;
    const int pshift = bt ? __ffsll((long long)pb.p.page_size) - 1 : 0;

    for (int64_t b = blockIdx.z; b < pb.p.batch; b += gridDim.z) {
        int64_t q0 = 0, sq = pb.p.seqlen_q, k0 = 0, sk = pb.p.seqlen_k;
        int64_t qb, kb, vb, ob;
        const int32_t *bt_row = bt ? bt + b * pb.p.block_table_stride : NULL;
        /* KV cache: this sequence's length (appended tokens included, clamped to the capacity). */
        if (pb.p.seqused_k) sk = pa_cache_len(&pb, pb.p.seqused_k[b]);
        /* packed [1, total, H, D]: stride[0] is ignored (may be anything). Packed queries over a KV
         * cache keep per-sequence (or paged) keys. */
        if (pb.varlen) {
            pa_seq_extent64(pb.p.cu_seqlens_q, b, pb.p.seqlen_q, &q0, &sq);
            qb = q0 * qst[1]; ob = q0 * ost[1];
        } else {
            qb = b * qst[0]; ob = b * ost[0];
        }
        if (pb.varlen_k) {
            pa_seq_extent64(pb.p.cu_seqlens_k, b, pb.p.seqlen_k, &k0, &sk);
            kb = k0 * kst[1]; vb = k0 * vst[1];
        } else {
            kb = bt ? 0 : b * kst[0]; vb = bt ? 0 : b * vst[0]; /* paged: the row offset names the page */
        }
        for (int64_t h = blockIdx.y; h < pb.p.heads_q; h += gridDim.y) {
            const int64_t hk = (uint32_t)h / (uint32_t)pb.group; /* heads < 2^31: see the launcher */
            const T *qh = q + qb + h * qst[2];
            const T *kh = k + kb + hk * kst[2];
            const T *vh = v + vb + hk * vst[2];
            T *oh = o + ob + h * ost[2];
            /* Bound by sq, not max_seqlen_q, so every row is written even if the bound is low. */
            for (int64_t r0 = (int64_t)blockIdx.x * GEN_ROWS; r0 < sq; r0 += (int64_t)gridDim.x * GEN_ROWS) {
                /* Hull of the block's key ranges: tiles outside it are masked for every row. */
                int64_t blo = INT64_MAX, bhi = -1, lo = 0, hi = -1;
                for (int r = 0; r < GEN_ROWS && r0 + r < sq; ++r) {
                    int64_t l, u;
                    pa_key_range(r0 + r, sq, sk, pb.window_left, pb.window_right, &l, &u);
                    if (l > u) continue;
                    blo = l < blo ? l : blo;
                    bhi = u > bhi ? u : bhi;
                    if (r == warp) { lo = l; hi = u; }
                }
                const int64_t i = r0 + warp;
                const bool active = i < sq;

                __syncwarp(); /* this warp's last reads of qs are done */
                if (active)
                    for (int d = lane; d < dqk; d += 32) qs[d] = gen_ld(qh + i * qst[1] + d * qst[3]) * (gen_exact_scores<T>::value ? 1.f : pb.scale);

                float m = -INFINITY, lsum = 0.f, acc[GEN_DREG];
#pragma unroll
                for (int j = 0; j < GEN_DREG; ++j) acc[j] = 0.f;

                for (int64_t t = blo; t <= bhi; t += GEN_KT) {
                    __syncthreads(); /* previous tile consumed; qs visible */
                    for (int r = warp; r < GEN_KT; r += GEN_ROWS) {
                        const int64_t key = t + r;
                        const bool in = key <= bhi;
                        const T *kr = kh + key * kst[1];
                        const T *vr = vh + key * vst[1];
                        if (bt && in) { /* read the table for real keys only: key <= bhi < seqlen_k */
                            const int64_t page = gen_page(bt_row, key, pshift, pb.p.num_pages);
                            const int64_t row = key & (pb.p.page_size - 1);
                            kr = kh + page * kst[0] + row * kst[1];
                            vr = vh + page * vst[0] + row * vst[1];
                        }
                        /* Zero fill: p = 0 keys must not meet NaN garbage in V. */
                        for (int d = lane; d < dqk; d += 32) ks[r * kpitch + d] = in ? gen_ld(kr + d * kst[3]) : 0.f;
                        for (int d = lane; d < dv; d += 32) vs[r * dv + d] = in ? gen_ld(vr + d * vst[3]) : 0.f;
                    }
                    __syncthreads();
                    if (!active || hi < t || lo > t + GEN_KT - 1) continue; /* warp-uniform */

                    const int64_t key = t + lane;
                    float s = -INFINITY;
                    if (key >= lo && key <= hi) {
                        const float *kr = ks + lane * kpitch;
                        float dot = 0.f;
                        if (gen_exact_scores<T>::value) {
                            double acc = 0.0;
                            for (int d = 0; d < dqk; ++d) acc = fma((double)qs[d], (double)kr[d], acc);
                            dot = (float)(acc * (double)pb.scale);
                        } else {
#pragma unroll 4
                            for (int d = 0; d < dqk; ++d) dot = fmaf(qs[d], kr[d], dot);
                        }
                        s = softcap > 0.f ? softcap * tanhf(dot * inv_cap) : dot;
                    }
                    const float mt = gen_warp_max(s);
                    /* nothing visible here: keep m, avoid -inf - -inf (but NaN scores must reach O and LSE) */
                    if (mt == -INFINITY && !__any_sync(0xffffffffu, s != s)) continue;
                    const float mn = fmaxf(m, mt);
                    const float corr = m == -INFINITY ? 0.f : expf(m - mn);
                    const float p = expf(s - mn); /* s = -inf gives 0 */
                    lsum = lsum * corr + gen_warp_sum(p);
                    m = mn;
                    ps[lane] = p;
                    __syncwarp();
#pragma unroll
                    for (int j = 0; j < GEN_DREG; ++j) acc[j] *= corr;
                    for (int r = 0; r < GEN_KT; ++r) {
                        const float pr = ps[r];
                        if (pr == 0.f) continue; /* masked: its V must not matter (0 * inf) */
                        const float *vr = vs + r * dv;
#pragma unroll
                        for (int j = 0; j < GEN_DREG; ++j)
                            if (lane + 32 * j < dv) acc[j] = fmaf(pr, vr[lane + 32 * j], acc[j]);
                    }
                }

                if (!active) continue;
                /* lsum > 0 iff some key was visible (the max key contributes exp(0) = 1); NaN if a score was. */
                T *orow = oh + i * ost[1];
#pragma unroll
                for (int j = 0; j < GEN_DREG; ++j)
                    if (lane + 32 * j < dv)
                        gen_st(orow + (lane + 32 * j) * ost[3], lsum > 0.f ? __fdividef(acc[j], lsum) : lsum == 0.f ? 0.f : NAN);
                if (pb.p.lse && lane == 0) {
                    const int64_t *ls = pb.p.lse_stride;
                    const int64_t off = pb.varlen ? h * ls[1] + (q0 + i) * ls[2] : b * ls[0] + h * ls[1] + i * ls[2];
                    pb.p.lse[off] = lsum > 0.f ? m + logf(lsum) : lsum == 0.f ? -INFINITY : NAN; /* NaN in, NaN out */
                }
            }
        }
    }
}

static size_t gen_smem(const pa_problem *pb)
{
    return sizeof(float) * GEN_SMEM_FLOATS((size_t)pb->p.head_dim_qk, (size_t)pb->p.head_dim_v);
}

/* The shared-memory opt-in a large head dim needs: done before the append, so that its failure
 * leaves the cache as it was. */
template <typename T>
static portattn_status_t gen_smem_limit(const pa_problem *pb, char *err, size_t err_len)
{
    if (gen_smem(pb) <= 48 * 1024) return PORTATTN_SUCCESS;
    cudaError_t e = cudaFuncSetAttribute(gen_fwd<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)GEN_SMEM_MAX_BYTES);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-generic: raising the shared memory limit", err, err_len);
    return PORTATTN_SUCCESS;
}

template <typename T>
static portattn_status_t gen_launch(const pa_problem *pb, cudaStream_t stream, char *err, size_t err_len)
{
    const size_t smem = gen_smem(pb);
    cudaError_t e;
    const int64_t row_blocks = (pb->max_seqlen_q + GEN_ROWS - 1) / GEN_ROWS;
    const dim3 grid((unsigned)(row_blocks < INT_MAX ? row_blocks : INT_MAX),
                    (unsigned)(pb->p.heads_q < 65535 ? pb->p.heads_q : 65535),
                    (unsigned)(pb->p.batch < 65535 ? pb->p.batch : 65535));
    /* cudaLaunchKernel's own status, not cudaGetLastError: an error the caller left pending in the
     * runtime must not be reported as ours (nor cleared: cuda_host.h, pa_cuda_drop_error). */
    pa_problem arg = *pb;
    float inv_cap = pb->p.softcap > 0.f ? 1.f / pb->p.softcap : 0.f;
    void *args[] = { &arg, &inv_cap };
    e = cudaLaunchKernel((const void *)gen_fwd<T>, grid, dim3(GEN_THREADS), args, smem, stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-generic: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_generic_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->head_dim_qk < 1 || p->head_dim_qk > GEN_DMAX || p->head_dim_v < 1 || p->head_dim_v > GEN_DMAX)
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic: head dims %lld/%lld outside 1..%d",
                      (long long)p->head_dim_qk, (long long)p->head_dim_v, GEN_DMAX);
    if (p->heads_q > INT32_MAX)
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic: heads_q %lld over 2^31-1",
                      (long long)p->heads_q);
    /* Every refusal before the append (a failed call leaves the cache as it was), then the append on
     * the same stream: the attention below must see the new keys. */
    portattn_status_t ast;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F16: ast = gen_smem_limit<__half>(pb, err, err_len); break;
    case PORTATTN_DTYPE_BF16: ast = gen_smem_limit<__nv_bfloat16>(pb, err, err_len); break;
    case PORTATTN_DTYPE_F32: ast = gen_smem_limit<float>(pb, err, err_len); break;
    default:
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic: dtype %d not supported", (int)p->dtype);
    }
    if (ast == PORTATTN_SUCCESS) ast = pa_cuda_append(pb, stream, err, err_len);
    if (ast != PORTATTN_SUCCESS) return ast;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0 || p->heads_q <= 0) return PORTATTN_SUCCESS; /* nothing to do */
    cudaStream_t st = (cudaStream_t)stream;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F16: return gen_launch<__half>(pb, st, err, err_len);
    case PORTATTN_DTYPE_BF16: return gen_launch<__nv_bfloat16>(pb, st, err, err_len);
    default: return gen_launch<float>(pb, st, err, err_len);
    }
}
