/* cuda-sm90 backward instances for head dim 128 (f16 and bf16); one file per head dim keeps builds parallel. */
#include "sm90_bwd_kernel.cuh"

SM90_BWD_INSTANCE(128)
