/* cuda-sm80 paged instances for head dim 128 (f16 and bf16): prefill over a KV cache (pa_fwd_args.kv). */
#include "sm80_fwd_kernel.cuh"

SM80_PAGED_LAUNCHER(128)
