/* hip-cdna entry points (hipcc): one code object per target, embedded in the library and loaded
 * with hipModuleLoadData by cdna_backend.c. extern "C" names so that the host finds them by name. */
#include "cdna_fwd_kernel.h"

#define PA_CDNA_ENTRY(name, bf16, d)                                                                         \
    extern "C" __global__ void __launch_bounds__(PA_CDNA_WAVES * PA_WAVE) name(const pa_fwd_args a)         \
    {                                                                                                        \
        pa_cdna_fwd_body<bf16, d>(a);                                                                        \
    }

PA_CDNA_ENTRY(pa_cdna_fwd_f16_d64, false, 64)
PA_CDNA_ENTRY(pa_cdna_fwd_bf16_d64, true, 64)
PA_CDNA_ENTRY(pa_cdna_fwd_f16_d128, false, 128)
PA_CDNA_ENTRY(pa_cdna_fwd_bf16_d128, true, 128)
