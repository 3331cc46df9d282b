/* The cuda-sm80 backward's launches: its main kernel (sm80_bwd_kernel.cuh) between every CUDA
 * backward's row kernels (cuda_bwd_rows.cuh), and the instance files' entry points. */
#ifndef PORTATTN_SM80_BWD_ROWS_CUH
#define PORTATTN_SM80_BWD_ROWS_CUH

#include "sm80_bwd_kernel.cuh"

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
    constexpr int BM_MAX = PA_SM80_BWD_BM_MAX(D);
    pa_bwd_args arg = *a;
    void *args[] = {&arg};
    cudaError_t e = pa_bwd_rows_launch<T, D>(a, 0, stream);
    if (e == cudaSuccess && max_sk > 0) {
        if constexpr (BM_MAX != 64)
            e = a->bm == BM_MAX ? sm80_bwd_main_launch<T, D, BM_MAX>(a, args, max_sk, stream)
                                : sm80_bwd_main_launch<T, D, 64>(a, args, max_sk, stream);
        else
            e = sm80_bwd_main_launch<T, D, 64>(a, args, max_sk, stream);
    }
    if (e == cudaSuccess) e = pa_bwd_rows_launch<T, D>(a, 1, stream);
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
