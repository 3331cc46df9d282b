/* cuda-sm100 instance: head dim 64 (f16 and bf16), 2 K/V slots. */
#include "sm100_fwd_kernel.cuh"

SM100_INSTANCE(64)
