/* The hip-cdna kernel instances, one list for every place that names them: the hipcc entry points
 * (cdna_fwd.hip), the host's lookup (cdna_backend.c), the code-object check
 * (tests/test_hip_code_objects.c) and the CPU-simulated device (tests/hip_fake). Plain C.
 * X(name, bf16, head_dim); index i of the list is pa_cdna_entry_index(d, bf16). */
#ifndef PORTATTN_CDNA_ENTRIES_H
#define PORTATTN_CDNA_ENTRIES_H

#define PA_CDNA_ENTRIES(X)                                                                                   \
    X(pa_cdna_fwd_f16_d64, 0, 64)                                                                            \
    X(pa_cdna_fwd_bf16_d64, 1, 64)                                                                           \
    X(pa_cdna_fwd_f16_d128, 0, 128)                                                                          \
    X(pa_cdna_fwd_bf16_d128, 1, 128)
#define PA_CDNA_ENTRY_COUNT 4
#define pa_cdna_entry_index(d, bf16) (((d) == 128 ? 2 : 0) + ((bf16) ? 1 : 0))

#endif
