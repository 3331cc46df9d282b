/* cuda-sm90 instance: head dim 48 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(48, PA_SM90_BN(48), PA_SM90_STAGES(48))
