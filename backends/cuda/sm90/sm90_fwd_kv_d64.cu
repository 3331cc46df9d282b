/* cuda-sm90 KV-cache instance: head dim 64 (f16 and bf16; per-sequence or paged caches, packed
 * queries or not). */
#include "sm90_fwd_kernel.cuh"

SM90_KV_INSTANCE(64, PA_SM90_BN(64), PA_SM90_KV_STAGES(64))
