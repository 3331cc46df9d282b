/* hip-cdna decode entry points (hipcc or clang 17+): one code object per CDNA target beside the
 * prefill's, embedded in the library and loaded by hip_backend.c. extern "C" names (cdna_decode_entries.h). */
#include "cdna_decode_entries.h"
#include "cdna_decode_kernel.h"

/* At least two waves a SIMD: a workgroup is one wave and this kernel waits on memory, so latency is
 * hidden only by other workgroups. Left alone, d128/d256 took 260-304 registers (one wave a SIMD);
 * with the bound they fit 256 with no spill and no scratch (isa_gate_hip checks the scratch). */
#define PA_CDNA_DEC_ENTRY(name, kind, bf16, dqk, dv, c0)                                                     \
    extern "C" __global__ void __launch_bounds__(PA_CDNA_DEC_THREADS) __attribute__((amdgpu_waves_per_eu(2)))  \
    name(const pa_fwd_args a)                                                                                \
    {                                                                                                        \
        if constexpr (kind == PA_CDNA_DEC_ATTN) pa_cdna_dec_body<bf16 != 0, dqk, dv, c0>(a);                 \
        else if constexpr (kind == PA_CDNA_DEC_COMBINE) pa_cdna_dec_combine_body<bf16 != 0>(a);              \
        else pa_cdna_dec_append_body(a);                                                                     \
    }
PA_CDNA_DEC_ENTRIES(PA_CDNA_DEC_ENTRY)
