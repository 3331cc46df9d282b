/* The hip-rdna3 kernel instances, one list for the hipcc entry points (rdna3_fwd.hip), the host's
 * lookup and launches (hip_backend.c), the code-object check and the CPU-simulated device. Plain C.
 * X(name, bf16, head dim, output columns, first output column), as cdna_entries.h: a call runs on
 * the smallest head dim that holds its Dqk and Dv, one launch per instance of that dim and dtype whose
 * first output column is below its Dv (on RDNA3 each instance is one launch of all its columns). */
#ifndef PORTATTN_RDNA3_ENTRIES_H
#define PORTATTN_RDNA3_ENTRIES_H

#define PA_RDNA3_ENTRIES(X)                                                                                  \
    X(pa_rdna3_fwd_f16_d32, 0, 32, 32, 0)                                                                    \
    X(pa_rdna3_fwd_bf16_d32, 1, 32, 32, 0)                                                                   \
    X(pa_rdna3_fwd_f16_d64, 0, 64, 64, 0)                                                                    \
    X(pa_rdna3_fwd_bf16_d64, 1, 64, 64, 0)                                                                   \
    X(pa_rdna3_fwd_f16_d96, 0, 96, 96, 0)                                                                    \
    X(pa_rdna3_fwd_bf16_d96, 1, 96, 96, 0)                                                                   \
    X(pa_rdna3_fwd_f16_d128, 0, 128, 128, 0)                                                                 \
    X(pa_rdna3_fwd_bf16_d128, 1, 128, 128, 0)                                                                \
    X(pa_rdna3_fwd_f16_d160, 0, 160, 160, 0)                                                                 \
    X(pa_rdna3_fwd_bf16_d160, 1, 160, 160, 0)                                                                \
    X(pa_rdna3_fwd_f16_d192, 0, 192, 192, 0)                                                                 \
    X(pa_rdna3_fwd_bf16_d192, 1, 192, 192, 0)                                                                \
    X(pa_rdna3_fwd_f16_d224, 0, 224, 224, 0)                                                                 \
    X(pa_rdna3_fwd_bf16_d224, 1, 224, 224, 0)                                                                \
    X(pa_rdna3_fwd_f16_d256, 0, 256, 256, 0)                                                                 \
    X(pa_rdna3_fwd_bf16_d256, 1, 256, 256, 0)
#define PA_RDNA3_ENTRY_COUNT 16
/* The head dims above, ascending: the instances a call may run on (pa_fwd_instance_dim). */
#define PA_RDNA3_DIMS 32, 64, 96, 128, 160, 192, 224, 256

#endif
