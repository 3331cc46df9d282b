/* cuda-sm90 KV-cache instance: head dim 128 (f16 and bf16; per-sequence or paged caches, packed
 * queries or not). */
#include "sm90_fwd_kernel.cuh"

SM90_KV_INSTANCE(128, PA_SM90_BN(128), PA_SM90_KV_STAGES(128))
