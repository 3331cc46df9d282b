/* cuda-sm80 decode instances for head dim 256 (f16 and bf16): split-KV kernel + combine. */
#include "sm80_decode_kernel.cuh"

SM80_DECODE_INSTANCE(256)
