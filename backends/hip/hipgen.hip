/* hip-generic entry points (one code object per CDNA and RDNA target, embedded in the library and
 * loaded by hip_backend.c); extern "C" names from hipgen_entries.h. The wave width is the target's. */
#include "hipgen_kernel.h"

#define PA_HIPGEN_ENTRY(name, kind)                                                                          \
    extern "C" __global__ void __launch_bounds__(PA_HIPGEN_THREADS) name(const pa_fwd_args a)            \
    {                                                                                                        \
        pa_hipgen_run<kind, __AMDGCN_WAVEFRONT_SIZE>(a);                                                     \
    }
PA_HIPGEN_ENTRIES(PA_HIPGEN_ENTRY)
