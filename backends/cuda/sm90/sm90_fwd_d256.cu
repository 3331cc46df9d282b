/* cuda-sm90 instance: head dim 256 (f16 and bf16). */
#include "sm90_fwd_kernel.cuh"

SM90_INSTANCE(256, PA_SM90_BN(256), PA_SM90_STAGES(256))
