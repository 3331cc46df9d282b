/* The hip-cdna kernel instances, one list for every place that names them: the hipcc entry points
 * (cdna_fwd.hip), the host's lookup and launches (hip_backend.c), the code-object check
 * (tests/isa/test_hip_code_objects.c) and the CPU-simulated device (tests/sim/hip_fake). Plain C.
 * X(name, bf16, head dim, output columns, first output column): a call runs on the smallest head dim
 * here that holds its Dqk and Dv (pa_fwd_instance_dim) and launches every instance of that dim and
 * its dtype whose first output column is below its Dv (d256: one per half of the output columns). No
 * d224: in one launch it spilled to scratch, and as two launches (128 + 96 columns, both computing S)
 * it ran 0.67 of its FLOPs useful against 0.58 on d256, for 4 more kernels (about 100 KiB a target). */
#ifndef PORTATTN_CDNA_ENTRIES_H
#define PORTATTN_CDNA_ENTRIES_H

#define PA_CDNA_ENTRIES(X)                                                                                   \
    X(pa_cdna_fwd_f16_d32, 0, 32, 32, 0)                                                                     \
    X(pa_cdna_fwd_bf16_d32, 1, 32, 32, 0)                                                                    \
    X(pa_cdna_fwd_f16_d64, 0, 64, 64, 0)                                                                     \
    X(pa_cdna_fwd_bf16_d64, 1, 64, 64, 0)                                                                    \
    X(pa_cdna_fwd_f16_d96, 0, 96, 96, 0)                                                                     \
    X(pa_cdna_fwd_bf16_d96, 1, 96, 96, 0)                                                                    \
    X(pa_cdna_fwd_f16_d128, 0, 128, 128, 0)                                                                  \
    X(pa_cdna_fwd_bf16_d128, 1, 128, 128, 0)                                                                 \
    X(pa_cdna_fwd_f16_d160, 0, 160, 160, 0)                                                                  \
    X(pa_cdna_fwd_bf16_d160, 1, 160, 160, 0)                                                                 \
    X(pa_cdna_fwd_f16_d192, 0, 192, 192, 0)                                                                  \
    X(pa_cdna_fwd_bf16_d192, 1, 192, 192, 0)                                                                 \
    X(pa_cdna_fwd_f16_d256_lo, 0, 256, 128, 0)                                                               \
    X(pa_cdna_fwd_bf16_d256_lo, 1, 256, 128, 0)                                                              \
    X(pa_cdna_fwd_f16_d256_hi, 0, 256, 128, 128)                                                             \
    X(pa_cdna_fwd_bf16_d256_hi, 1, 256, 128, 128)
#define PA_CDNA_ENTRY_COUNT 16
/* The head dims above, ascending: the instances a call may run on (pa_fwd_instance_dim). */
#define PA_CDNA_DIMS 32, 64, 96, 128, 160, 192, 256

#endif
