/* The hip-generic kernel instances, one list for every place that names them: the entry points
 * (hipgen.hip), the host's lookup and launches (hipgen_host.c), the code-object check
 * (tests/isa/test_hip_code_objects.c) and the CPU-simulated device (tests/sim/hip_fake). Plain C.
 * X(name, kind): the forward in each dtype, and the KV-cache append by element size; in kind order,
 * so that a kind indexes the functions the host looks up in list order. */
#ifndef PORTATTN_HIPGEN_ENTRIES_H
#define PORTATTN_HIPGEN_ENTRIES_H

enum { PA_HIPGEN_F32, PA_HIPGEN_F16, PA_HIPGEN_BF16, PA_HIPGEN_APPEND16, PA_HIPGEN_APPEND32 };

#define PA_HIPGEN_ENTRIES(X)                                                                                 \
    X(pa_hipgen_fwd_f32, PA_HIPGEN_F32)                                                                      \
    X(pa_hipgen_fwd_f16, PA_HIPGEN_F16)                                                                      \
    X(pa_hipgen_fwd_bf16, PA_HIPGEN_BF16)                                                                    \
    X(pa_hipgen_append_b16, PA_HIPGEN_APPEND16)                                                              \
    X(pa_hipgen_append_b32, PA_HIPGEN_APPEND32)
#define PA_HIPGEN_ENTRY_COUNT 5

/* Threads a workgroup, on every target: 4 waves of 64 (CDNA) or 8 of 32 (RDNA), one query row (or
 * appended row) a wave. Keys a tile: 16, so that the fp32 K/V tiles of head dim 256 fit in 64 KB. */
#define PA_HIPGEN_THREADS 256
#define PA_HIPGEN_KT 16

#endif
