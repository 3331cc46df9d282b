/* cuda-sm90 instance: head dim 128 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(128, PA_SM90_BN(128), PA_SM90_STAGES(128))
