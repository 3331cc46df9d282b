/* cuda-sm80 backward instances for head dim 256 (f16 and bf16); one file per head dim keeps builds parallel. */
#include "sm80_bwd_rows.cuh"

SM80_BWD_INSTANCE(256)
