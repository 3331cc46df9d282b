/* cuda-sm90 instance: head dim 224 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(224, PA_SM90_BN(224), PA_SM90_STAGES(224))
