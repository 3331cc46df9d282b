/* hip-cdna entry points (hipcc): one code object per target, embedded in the library and loaded
 * with hipModuleLoadData by hip_backend.c. extern "C" names (cdna_entries.h) so that the host finds
 * them by name. */
#include "cdna_entries.h"
#include "cdna_fwd_kernel.h"

#define PA_CDNA_ENTRY(name, bf16, dqk, dv, c0)                                                               \
    extern "C" __global__ void __launch_bounds__(PA_CDNA_THREADS) name(const pa_fwd_args a)                 \
    {                                                                                                        \
        pa_cdna_fwd_body<bf16 != 0, dqk, dv, c0>(a);                                                         \
    }
PA_CDNA_ENTRIES(PA_CDNA_ENTRY)
