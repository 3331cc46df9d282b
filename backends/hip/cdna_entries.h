/* The hip-cdna kernel instances, one list for every place that names them: the hipcc entry points
 * (cdna_fwd.hip), the host's lookup and launches (hip_backend.c), the code-object check
 * (tests/test_hip_code_objects.c) and the CPU-simulated device (tests/hip_fake). Plain C.
 * X(name, bf16, head dim, output columns, first output column): a call of head dim d launches every
 * instance of its d and dtype (d256: two, one per half of the output columns). */
#ifndef PORTATTN_CDNA_ENTRIES_H
#define PORTATTN_CDNA_ENTRIES_H

#define PA_CDNA_ENTRIES(X)                                                                                   \
    X(pa_cdna_fwd_f16_d64, 0, 64, 64, 0)                                                                     \
    X(pa_cdna_fwd_bf16_d64, 1, 64, 64, 0)                                                                    \
    X(pa_cdna_fwd_f16_d128, 0, 128, 128, 0)                                                                  \
    X(pa_cdna_fwd_bf16_d128, 1, 128, 128, 0)                                                                 \
    X(pa_cdna_fwd_f16_d256_lo, 0, 256, 128, 0)                                                               \
    X(pa_cdna_fwd_bf16_d256_lo, 1, 256, 128, 0)                                                              \
    X(pa_cdna_fwd_f16_d256_hi, 0, 256, 128, 128)                                                             \
    X(pa_cdna_fwd_bf16_d256_hi, 1, 256, 128, 128)
#define PA_CDNA_ENTRY_COUNT 8

#endif
