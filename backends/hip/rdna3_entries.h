/* The hip-rdna3 kernel instances, one list for the hipcc entry points (rdna3_fwd.hip), the host's
 * lookup (hip_backend.c), the code-object check and the CPU-simulated device. Plain C.
 * X(name, bf16, head dim): a call launches the instance of its head dim and dtype. */
#ifndef PORTATTN_RDNA3_ENTRIES_H
#define PORTATTN_RDNA3_ENTRIES_H

#define PA_RDNA3_ENTRIES(X)                                                                                  \
    X(pa_rdna3_fwd_f16_d64, 0, 64)                                                                           \
    X(pa_rdna3_fwd_bf16_d64, 1, 64)                                                                          \
    X(pa_rdna3_fwd_f16_d128, 0, 128)                                                                         \
    X(pa_rdna3_fwd_bf16_d128, 1, 128)
#define PA_RDNA3_ENTRY_COUNT 4

#endif
