/* The cuda-sm80 backward's two per-row kernels around the main one (sm80_bwd_kernel.cuh):
 *  sm80_bwd_prep: for every row slot of every (batch, query head), D = rowsum(dO * O) in fp32 and
 *                 the forward's LSE in base 2; padding slots and rows that saw no key (LSE -inf)
 *                 get LSE_2 = +inf and D = 0, so that every P the main kernel forms for them is 0.
 *  sm80_bwd_dq:   dQ = scale * (the sum of the fp32 slices, in slice order), in the dtype.
 * A power of two of threads per row (SM80B_TPR), one 16-byte column chunk each; d96's 12 chunks
 * leave 4 of its 16 threads idle. */
#ifndef PORTATTN_SM80_BWD_ROWS_CUH
#define PORTATTN_SM80_BWD_ROWS_CUH

#include "sm80_bwd_kernel.cuh"

#define SM80B_ROW_THREADS 256
#define SM80B_TPR(d) ((d) <= 64 ? 8 : (d) <= 128 ? 16 : 32)

/* A 16-bit value (the low half of `bits`) as a float. */
__device__ __forceinline__ float sm80b_f32(uint32_t bits, __half)
{
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}
__device__ __forceinline__ float sm80b_f32(uint32_t bits, __nv_bfloat16)
{
    return __bfloat162float(__ushort_as_bfloat16((unsigned short)(bits & 0xffffu)));
}

/* Eight 16-bit values of a 16-byte chunk, as floats (element 2 i in the low half of word i). */
template <typename T>
__device__ __forceinline__ void sm80b_unpack8(uint4 u, float *f)
{
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = sm80b_f32(w[i / 2] >> (16 * (i & 1)), T());
}

template <typename T, int D>
__global__ void __launch_bounds__(SM80B_ROW_THREADS, 1) sm80_bwd_prep(const pa_bwd_args a)
{
    constexpr int TPR = SM80B_TPR(D), RPB = SM80B_ROW_THREADS / TPR; /* threads per row, rows per block */
    static_assert(TPR * 8 >= D && TPR * 4 < D, "threads per row");
    const int c = threadIdx.x % TPR, b = blockIdx.z, h = blockIdx.y;
    const int i = blockIdx.x * RPB + threadIdx.x / TPR; /* row slot within (b, h) */
    const sm80b_seqinfo s = sm80b_seq_of(a, b);
    float d = 0.f;
    if (i < s.sq && c < D / 8) {
        float x[8], y[8];
        const int64_t col = (int64_t)h * a.dos[2] + c * 8, ocol = (int64_t)h * a.f.os[2] + c * 8;
        sm80b_unpack8<T>(*(const uint4 *)((const T *)a.dout + sm80b_row(a, a.dos[0], a.dos[1], b, s.q0 + i) + col), x);
        const T *orow = (const T *)a.f.o + sm80b_row(a, a.f.os[0], a.f.os[1], b, s.q0 + i);
        sm80b_unpack8<T>(*(const uint4 *)(orow + ocol), y);
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
    const int64_t r = sm80b_ws_row(a, 0, b, h) + i;
    a.lse2[r] = l2;
    a.delta[r] = i < s.sq ? d : 0.f;
}

template <typename T, int D>
__global__ void __launch_bounds__(SM80B_ROW_THREADS, 1) sm80_bwd_dq(const pa_bwd_args a)
{
    constexpr int TPR = SM80B_TPR(D), RPB = SM80B_ROW_THREADS / TPR;
    const int c = threadIdx.x % TPR, b = blockIdx.z, h = blockIdx.y;
    const int i = blockIdx.x * RPB + threadIdx.x / TPR;
    const sm80b_seqinfo s = sm80b_seq_of(a, b);
    if (i >= s.sq || c >= D / 8) return;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int sl = 0; sl < a.splits; ++sl) {
        const float4 *src = (const float4 *)(a.dq_acc + (sm80b_ws_row(a, sl, b, h) + i) * D + c * 8);
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
    *(uint4 *)((T *)a.dq + sm80b_row(a, a.dqs[0], a.dqs[1], b, s.q0 + i) + (int64_t)h * a.dqs[2] + c * 8) = out;
}

/* The main kernel of BM rows over every key block (deterministic: one CTA per dQ slice). */
template <typename T, int D, int BM>
static cudaError_t sm80_bwd_main_launch(const pa_bwd_args *a, void **args, int64_t max_sk, cudaStream_t stream)
{
    constexpr int BN = PA_SM80_BWD_BN(D), SMEM = PA_SM80_BWD_SMEM(D, BM);
    auto kern = sm80_bwd_main<T, D, BM>;
    static int optin_done[64];
    cudaError_t e = pa_smem_optin_once(kern, SMEM, optin_done);
    const int64_t nkb = (max_sk + BN - 1) / BN;
    const unsigned gx = (unsigned)(a->deterministic ? a->splits : (nkb < 0x7fffffff ? nkb : 0x7fffffff));
    const dim3 grid(gx, (unsigned)(a->f.heads / a->f.group), (unsigned)a->f.batch); /* key blocks, KV heads */
    if (e == cudaSuccess)
        e = cudaLaunchKernel((const void *)kern, grid, dim3(PA_SM80_BWD_WARPS * 32), args, SMEM, stream);
    return e;
}

/* The three launches of one instance: row prologue, main kernel (a->bm rows a block), dQ conversion.
 * The fp32 dQ slices must be zero before (the caller clears them). */
template <typename T, int D>
static cudaError_t sm80_bwd_instance(const pa_bwd_args *a, int64_t max_sk, cudaStream_t stream)
{
    constexpr int RPB = SM80B_ROW_THREADS / SM80B_TPR(D), BM_MAX = PA_SM80_BWD_BM_MAX(D);
    pa_bwd_args arg = *a;
    void *args[] = {&arg};
    cudaError_t e = cudaSuccess;
    const dim3 rows_grid((unsigned)((a->sqp + RPB - 1) / RPB), (unsigned)a->f.heads, (unsigned)a->f.batch);
    if (a->sqp > 0)
        e = cudaLaunchKernel((const void *)sm80_bwd_prep<T, D>, rows_grid, dim3(SM80B_ROW_THREADS), args, 0, stream);
    if (e == cudaSuccess && max_sk > 0) {
        if constexpr (BM_MAX != 64)
            e = a->bm == BM_MAX ? sm80_bwd_main_launch<T, D, BM_MAX>(a, args, max_sk, stream)
                                : sm80_bwd_main_launch<T, D, 64>(a, args, max_sk, stream);
        else
            e = sm80_bwd_main_launch<T, D, 64>(a, args, max_sk, stream);
    }
    if (e == cudaSuccess && a->sqp > 0)
        e = cudaLaunchKernel((const void *)sm80_bwd_dq<T, D>, rows_grid, dim3(SM80B_ROW_THREADS), args, 0, stream);
    return e;
}

#define SM80_BWD_INSTANCE(D)                                                                            \
    cudaError_t sm80_bwd_run_d##D(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream) \
    {                                                                                                    \
        return bf16 ? sm80_bwd_instance<__nv_bfloat16, D>(a, max_sk, stream)                             \
                    : sm80_bwd_instance<__half, D>(a, max_sk, stream);                                   \
    }

cudaError_t sm80_bwd_run_d64(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d96(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d128(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);
cudaError_t sm80_bwd_run_d256(const pa_bwd_args *a, int bf16, int64_t max_sk, cudaStream_t stream);

#endif
