/* hip-cdna's decode entry points, one list for every place that names them: the hipcc entry points
 * (cdna_decode.hip), the host's lookup and launches (hip_backend.c, cdna_decode_host.c), the
 * code-object check and the CPU-simulated device (tests/sim/hip_fake). Plain C.
 * X(name, kind, bf16, head dim, output columns, first output column); kind: PA_CDNA_DEC_ATTN (the
 * split attention; d256 as two launches of 128 output columns, as the prefill), PA_CDNA_DEC_COMBINE
 * (the split merge) or PA_CDNA_DEC_APPEND (k_new/v_new into the cache; copies 16-bit elements). */
#ifndef PORTATTN_CDNA_DECODE_ENTRIES_H
#define PORTATTN_CDNA_DECODE_ENTRIES_H

#define PA_CDNA_DEC_ATTN 0
#define PA_CDNA_DEC_COMBINE 1
#define PA_CDNA_DEC_APPEND 2

#define PA_CDNA_DEC_ENTRIES(X)                                                                               \
    X(pa_cdna_dec_f16_d64, PA_CDNA_DEC_ATTN, 0, 64, 64, 0)                                                   \
    X(pa_cdna_dec_bf16_d64, PA_CDNA_DEC_ATTN, 1, 64, 64, 0)                                                  \
    X(pa_cdna_dec_f16_d128, PA_CDNA_DEC_ATTN, 0, 128, 128, 0)                                                \
    X(pa_cdna_dec_bf16_d128, PA_CDNA_DEC_ATTN, 1, 128, 128, 0)                                               \
    X(pa_cdna_dec_f16_d256_lo, PA_CDNA_DEC_ATTN, 0, 256, 128, 0)                                             \
    X(pa_cdna_dec_bf16_d256_lo, PA_CDNA_DEC_ATTN, 1, 256, 128, 0)                                            \
    X(pa_cdna_dec_f16_d256_hi, PA_CDNA_DEC_ATTN, 0, 256, 128, 128)                                           \
    X(pa_cdna_dec_bf16_d256_hi, PA_CDNA_DEC_ATTN, 1, 256, 128, 128)                                          \
    X(pa_cdna_dec_combine_f16, PA_CDNA_DEC_COMBINE, 0, 0, 0, 0)                                              \
    X(pa_cdna_dec_combine_bf16, PA_CDNA_DEC_COMBINE, 1, 0, 0, 0)                                             \
    X(pa_cdna_dec_append_b16, PA_CDNA_DEC_APPEND, 0, 0, 0, 0)
#define PA_CDNA_DEC_ENTRY_COUNT 11
#define PA_CDNA_DEC_ATTN_COUNT 8 /* the ISA gate's count of MFMA kernels */
/* The attention instances' head dims, ascending (pa_fwd_instance_dim). */
#define PA_CDNA_DEC_DIMS 64, 128, 256

#endif
