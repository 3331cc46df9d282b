/* cuda-sm90 instance: head dim 192 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(192, PA_SM90_BN(192), PA_SM90_STAGES(192))
