/* cuda-sm90 instance: head dim 160 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(160, PA_SM90_BN(160), PA_SM90_STAGES(160))
