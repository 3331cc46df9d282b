/* cuda-generic forward: common/gen_fwd_body.h's kernel with 32 lanes a warp, 32-key tiles and 8
 * rows a block, on the vocabulary of gen_device.cuh. It is the GPU oracle, not the fast path. */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "cuda_append.h"
#include "cuda_host.h"
#include "gen_device.cuh"
#include "fwd_resolve.h" /* pa_fwd_args_of */
#include "gen_shape.h"   /* pa_gen_shape_ok */
#include "generic_launch.h"

/* The rest of common/gen_fwd_body.h's vocabulary: an NVIDIA warp is 32 lanes. */
template <int W> __device__ __forceinline__ float gen_max(float x) { static_assert(W == 32, "warp"); return gen_warp_max(x); }
template <int W> __device__ __forceinline__ float gen_sum(float x) { static_assert(W == 32, "warp"); return gen_warp_sum(x); }
template <int W> __device__ __forceinline__ double gen_sum_d(double x) { static_assert(W == 32, "warp"); return gen_warp_sum_d(x); }
template <int W> __device__ __forceinline__ int gen_any(int p) { static_assert(W == 32, "warp"); return __any_sync(0xffffffffu, p); }
template <int W> __device__ __forceinline__ void gen_sync_warp() { static_assert(W == 32, "warp"); __syncwarp(); }

#include "gen_fwd_body.h"

#define GEN_ROWS 8                  /* warps per block, one query row each */
#define GEN_THREADS (GEN_ROWS * 32)
#define GEN_KT 32                   /* keys per tile: one per lane for the scores */
#define GEN_DMAX PA_GEN_DMAX
/* Every launch raises the limit to the largest size, never to its own: a smaller value set by a
 * concurrent caller could otherwise fail a bigger launch. */
#define GEN_SMEM_MAX_BYTES (sizeof(float) * PA_GEN_SMEM_FLOATS(GEN_KT, GEN_ROWS, GEN_DMAX, GEN_DMAX))

/* The min-blocks 2 (a 128-register cap) is there because with 256 alone ptxas 13.0 picked 80
 * registers and spilled for the sm_80 fp32 instance. */
template <typename T>
__global__ void __launch_bounds__(GEN_THREADS, 2) gen_fwd(const pa_fwd_args a)
{
    extern __shared__ float smem[];
    pa_gen_fwd_body<T, 32, GEN_KT, GEN_ROWS>(a, smem);
}

static size_t gen_smem(const pa_problem *pb)
{
    return sizeof(float) * PA_GEN_SMEM_FLOATS(GEN_KT, GEN_ROWS, (size_t)pb->p.head_dim_qk, (size_t)pb->p.head_dim_v);
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
static portattn_status_t gen_launch(const pa_problem *pb, const pa_fwd_args *a, cudaStream_t stream, char *err,
                                    size_t err_len)
{
    const size_t smem = gen_smem(pb);
    cudaError_t e;
    const int64_t row_blocks = (pb->max_seqlen_q + GEN_ROWS - 1) / GEN_ROWS;
    const dim3 grid((unsigned)(row_blocks < INT_MAX ? row_blocks : INT_MAX),
                    (unsigned)(pb->p.heads_q < 65535 ? pb->p.heads_q : 65535),
                    (unsigned)(pb->p.batch < 65535 ? pb->p.batch : 65535));
    /* cudaLaunchKernel's own status, not cudaGetLastError: an error the caller left pending in the
     * runtime must not be reported as ours (nor cleared: cuda_host.h, pa_cuda_drop_error). */
    pa_fwd_args arg = *a;
    void *args[] = {&arg};
    e = cudaLaunchKernel((const void *)gen_fwd<T>, grid, dim3(GEN_THREADS), args, smem, stream);
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-generic: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}

extern "C" portattn_status_t pa_cuda_generic_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    char why[160];
    if (!pa_gen_shape_ok(pb, NULL, 0, why, sizeof why)) /* supports()' rule: a direct call is refused as well */
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "cuda-generic: %s", why);
    /* Every refusal before the append (a failed call leaves the cache as it was), then the append on
     * the same stream: the attention below must see the new keys. */
    portattn_status_t ast;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F16: ast = gen_smem_limit<__half>(pb, err, err_len); break;
    case PORTATTN_DTYPE_BF16: ast = gen_smem_limit<__nv_bfloat16>(pb, err, err_len); break;
    default: ast = gen_smem_limit<float>(pb, err, err_len); break; /* f32: pa_gen_shape_ok refused the rest */
    }
    pa_fwd_args a;
    pa_fwd_args_of(pb, &a);
    if (ast == PORTATTN_SUCCESS) ast = pa_cuda_append(pb, &a, stream, err, err_len);
    if (ast != PORTATTN_SUCCESS) return ast;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0 || p->heads_q <= 0) return PORTATTN_SUCCESS; /* nothing to do */
    cudaStream_t st = (cudaStream_t)stream;
    switch (p->dtype) {
    case PORTATTN_DTYPE_F16: return gen_launch<__half>(pb, &a, st, err, err_len);
    case PORTATTN_DTYPE_BF16: return gen_launch<__nv_bfloat16>(pb, &a, st, err, err_len);
    default: return gen_launch<float>(pb, &a, st, err, err_len);
    }
}
