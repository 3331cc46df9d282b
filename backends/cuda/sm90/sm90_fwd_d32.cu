/* cuda-sm90 instance: head dim 32 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(32, PA_SM90_BN(32), PA_SM90_STAGES(32))
