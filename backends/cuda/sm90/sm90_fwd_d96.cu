/* cuda-sm90 instance: head dim 96 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(96, PA_SM90_BN(96), PA_SM90_STAGES(96))
