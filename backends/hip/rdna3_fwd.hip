/* hip-rdna3 entry points (hipcc, gfx1100, wave32): one code object per target, embedded in the
 * library and loaded with hipModuleLoadData by hip_backend.c; extern "C" names (rdna3_entries.h). */
#include "rdna3_entries.h"
#include "rdna3_fwd_kernel.h"

#define PA_RDNA3_ENTRY(name, bf16, dqk, dv, c0)                                                              \
    extern "C" __global__ void __launch_bounds__(PA_RDNA3_THREADS) name(const pa_fwd_args a)                \
    {                                                                                                        \
        pa_rdna3_fwd_body<bf16 != 0, dqk, dv, c0>(a);                                                        \
    }
PA_RDNA3_ENTRIES(PA_RDNA3_ENTRY)
