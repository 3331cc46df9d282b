/* cuda-sm80 instances for head dim 32 (f16 and bf16); one file per head dim keeps builds parallel. */
#include "sm80_fwd_kernel.cuh"

SM80_INSTANCE_LAUNCHER(32)

/* Read by the ISA gate from the PTX (tests/isa/isa_gate_sm80.sh). */
extern "C" __device__ const int pa_sm80_smem_d32 = PA_SM80_SMEM_BYTES(32);
