/* cuda-sm90 instance: head dim 64 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(64, PA_SM90_BN(64), PA_SM90_STAGES(64))
