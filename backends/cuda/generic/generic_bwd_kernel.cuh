/* cuda-generic backward kernels (launched by generic_bwd.cu; also compiled on the CPU by
 * tests/sim/generic_sim): the GPU gradient oracle, correct for every feature and dtype, not fast.
 * Same math as the CPU backward (common/cpu_bwd.c) in fp32: P = exp(S - LSE) from the forward's LSE,
 * D = rowsum(dO * O), dS = P * (dP - D) times the softcap derivative.
 * Two kernels, one warp per output row, each lane holding head dims lane, lane + 32, ...:
 *  gen_bwd_dq:   a query row; walks its visible keys and writes its dQ row.
 *  gen_bwd_dkdv: a key row of one KV head; walks the group's query heads and the rows that see
 *                the key, and writes its dK and dV rows.
 * Every output row has one owner that sums in a fixed order: no atomics, bitwise deterministic. */
#ifndef PORTATTN_GENERIC_BWD_KERNEL_CUH
#define PORTATTN_GENERIC_BWD_KERNEL_CUH

#include <math.h>
#include <stdint.h>

#include "bwd_problem.h"
#include "gen_device.cuh"

#define GB_WARPS 8 /* rows per block */
#define GB_THREADS (GB_WARPS * 32)
#define GB_DMAX 256
#define GB_DREG (GB_DMAX / 32) /* head dims per lane */

/* One sequence: query rows [q0, q0 + sq) and keys [k0, k0 + sk) of the (packed) tensors. */
struct gb_seq {
    int64_t q0, sq, k0, sk;
};

__device__ __forceinline__ gb_seq gb_seq_of(const pa_problem &pb, int64_t b)
{
    gb_seq s = {0, pb.p.seqlen_q, 0, pb.p.seqlen_k};
    if (pb.varlen) {
        pa_seq_extent64(pb.p.cu_seqlens_q, b, pb.p.seqlen_q, &s.q0, &s.sq);
        pa_seq_extent64(pb.p.cu_seqlens_k, b, pb.p.seqlen_k, &s.k0, &s.sk);
    }
    return s;
}

/* Element offset of (packed) row `row`, head h, of tensor t in sequence b. */
__device__ __forceinline__ int64_t gb_at(const pa_problem &pb, const portattn_tensor_t &t, int64_t b, int64_t row,
                                         int64_t h)
{
    return (pb.varlen ? 0 : b * t.stride[0]) + row * t.stride[1] + h * t.stride[2];
}

template <typename T>
__device__ __forceinline__ void gb_load(const portattn_tensor_t &t, int64_t off, int n, int lane, float *r)
{
    const T *p = (const T *)t.data + off;
#pragma unroll
    for (int j = 0; j < GB_DREG; ++j) r[j] = lane + 32 * j < n ? gen_ld(p + (lane + 32 * j) * t.stride[3]) : 0.f;
}

template <typename T>
__device__ __forceinline__ void gb_store(const portattn_tensor_t &t, int64_t off, int n, int lane, const float *r,
                                         float mul)
{
    T *p = (T *)t.data + off;
#pragma unroll
    for (int j = 0; j < GB_DREG; ++j)
        if (lane + 32 * j < n) gen_st(p + (lane + 32 * j) * t.stride[3], r[j] * mul);
}

__device__ __forceinline__ float gb_dot(const float *a, const float *b)
{
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < GB_DREG; ++j) s = fmaf(a[j], b[j], s);
    return gen_warp_sum(s);
}

/* What a query row brings: its Q and dO in registers, LSE and D. 0 when it saw no key. */
template <typename T>
__device__ __forceinline__ bool gb_qrow(const pa_bwd_problem &bp, int64_t b, const gb_seq &s, int64_t h, int64_t i,
                                        int lane, float *q, float *dout, float *lse, float *delta)
{
    const pa_problem &pb = bp.fwd;
    const int64_t *ls = pb.p.lse_stride;
    *lse = pb.p.lse[(pb.varlen ? 0 : b * ls[0]) + h * ls[1] + (s.q0 + i) * ls[2]];
    if (*lse == -INFINITY) return false; /* warp-uniform */
    float o[GB_DREG];
    const int dqk = (int)pb.p.head_dim_qk, dv = (int)pb.p.head_dim_v;
    gb_load<T>(pb.p.q, gb_at(pb, pb.p.q, b, s.q0 + i, h), dqk, lane, q);
    gb_load<T>(bp.dout, gb_at(pb, bp.dout, b, s.q0 + i, h), dv, lane, dout);
    gb_load<T>(pb.p.o, gb_at(pb, pb.p.o, b, s.q0 + i, h), dv, lane, o);
    *delta = gb_dot(dout, o);
    return true;
}

/* The scaled score q.k * scale, computed as the forward computes it (gen_exact_scores). */
template <typename T>
__device__ __forceinline__ float gb_score(const float *q, const float *k, float scale)
{
    if (!gen_exact_scores<T>::value) return gb_dot(q, k) * scale;
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < GB_DREG; ++j) s = fma((double)q[j], (double)k[j], s);
    return (float)(gen_warp_sum_d(s) * (double)scale);
}

/* dX of (row, key) from the row's registers and the key's K and V; *prob gets P. */
template <typename T>
__device__ __forceinline__ float gb_dx(const pa_problem &pb, float inv_cap, const float *q, const float *dout,
                                       float lse, float delta, const float *k, const float *v, float *prob)
{
    float s = gb_score<T>(q, k, pb.scale), dsdx = 1.f;
    if (pb.p.softcap > 0.f) {
        const float t = tanhf(s * inv_cap);
        s = pb.p.softcap * t;
        dsdx = 1.f - t * t;
    }
    *prob = expf(s - lse);
    return *prob * (gb_dot(dout, v) - delta) * dsdx;
}

template <typename T>
__global__ void __launch_bounds__(GB_THREADS) gen_bwd_dq(const pa_bwd_problem bp, float inv_cap)
{
    const pa_problem &pb = bp.fwd;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int dqk = (int)pb.p.head_dim_qk, dv = (int)pb.p.head_dim_v;
    for (int64_t b = blockIdx.z; b < pb.p.batch; b += gridDim.z) {
        const gb_seq s = gb_seq_of(pb, b);
        for (int64_t h = blockIdx.y; h < pb.p.heads_q; h += gridDim.y) {
            const int64_t hk = (uint32_t)h / (uint32_t)pb.group;
            for (int64_t i = (int64_t)blockIdx.x * GB_WARPS + warp; i < s.sq; i += (int64_t)gridDim.x * GB_WARPS) {
                float q[GB_DREG], dout[GB_DREG], k[GB_DREG], v[GB_DREG], acc[GB_DREG], lse, delta, prob;
#pragma unroll
                for (int j = 0; j < GB_DREG; ++j) acc[j] = 0.f;
                int64_t lo, hi;
                pa_key_range(i, s.sq, s.sk, pb.window_left, pb.window_right, &lo, &hi);
                if (lo <= hi && gb_qrow<T>(bp, b, s, h, i, lane, q, dout, &lse, &delta))
                    for (int64_t key = lo; key <= hi; ++key) {
                        gb_load<T>(pb.p.k, gb_at(pb, pb.p.k, b, s.k0 + key, hk), dqk, lane, k);
                        gb_load<T>(pb.p.v, gb_at(pb, pb.p.v, b, s.k0 + key, hk), dv, lane, v);
                        const float dx = gb_dx<T>(pb, inv_cap, q, dout, lse, delta, k, v, &prob);
#pragma unroll
                        for (int j = 0; j < GB_DREG; ++j) acc[j] = fmaf(dx, k[j], acc[j]);
                    }
                gb_store<T>(bp.dq, gb_at(pb, bp.dq, b, s.q0 + i, h), dqk, lane, acc, pb.scale);
            }
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(GB_THREADS, 1) gen_bwd_dkdv(const pa_bwd_problem bp, float inv_cap)
{
    const pa_problem &pb = bp.fwd;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int dqk = (int)pb.p.head_dim_qk, dv = (int)pb.p.head_dim_v;
    for (int64_t b = blockIdx.z; b < pb.p.batch; b += gridDim.z) {
        const gb_seq s = gb_seq_of(pb, b);
        for (int64_t hk = blockIdx.y; hk < pb.p.heads_kv; hk += gridDim.y) {
            for (int64_t key = (int64_t)blockIdx.x * GB_WARPS + warp; key < s.sk; key += (int64_t)gridDim.x * GB_WARPS) {
                float q[GB_DREG], dout[GB_DREG], k[GB_DREG], v[GB_DREG], dk[GB_DREG], dvr[GB_DREG], lse, delta, prob;
                gb_load<T>(pb.p.k, gb_at(pb, pb.p.k, b, s.k0 + key, hk), dqk, lane, k);
                gb_load<T>(pb.p.v, gb_at(pb, pb.p.v, b, s.k0 + key, hk), dv, lane, v);
#pragma unroll
                for (int j = 0; j < GB_DREG; ++j) dk[j] = dvr[j] = 0.f;
                for (int64_t h = hk * pb.group; h < (hk + 1) * pb.group; ++h)
                    for (int64_t i = 0; i < s.sq; ++i) {
                        int64_t lo, hi;
                        pa_key_range(i, s.sq, s.sk, pb.window_left, pb.window_right, &lo, &hi);
                        if (key < lo || key > hi || !gb_qrow<T>(bp, b, s, h, i, lane, q, dout, &lse, &delta)) continue;
                        const float dx = gb_dx<T>(pb, inv_cap, q, dout, lse, delta, k, v, &prob);
#pragma unroll
                        for (int j = 0; j < GB_DREG; ++j) {
                            dk[j] = fmaf(dx, q[j], dk[j]);
                            dvr[j] = fmaf(prob, dout[j], dvr[j]);
                        }
                    }
                gb_store<T>(bp.dk, gb_at(pb, bp.dk, b, s.k0 + key, hk), dqk, lane, dk, pb.scale);
                gb_store<T>(bp.dv, gb_at(pb, bp.dv, b, s.k0 + key, hk), dv, lane, dvr, 1.f);
            }
        }
    }
}

#endif
