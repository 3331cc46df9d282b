/* cuda-sm80 instances for head dim 256 (f16 and bf16); one file per head dim keeps builds parallel. */
#include "sm80_fwd_kernel.cuh"

SM80_INSTANCE_LAUNCHER(256)

/* The 64-row, 4-warp shape (two CTAs per SM on H100/H200; see sm80_launch.h). */
cudaError_t sm80_launch_d256_small(const sm80_args *a, int bf16, int64_t max_sq, cudaStream_t stream)
{
    constexpr int BM = PA_SM80_D256_SMALL_BM, NW = PA_SM80_D256_SMALL_WARPS, MB = PA_SM80_D256_SMALL_MIN_CTAS;
    return bf16 ? sm80_launch_instance<__nv_bfloat16, 256, BM, NW, MB>(a, max_sq, stream)
                : sm80_launch_instance<__half, 256, BM, NW, MB>(a, max_sq, stream);
}

/* Read by the ISA gate from the PTX (tests/isa/isa_gate_sm80.sh). */
extern "C" __device__ const int pa_sm80_smem_d256 = PA_SM80_SMEM_BYTES(256);
