/* One wave of each matrix and cross-lane instruction the HIP kernels use, written once against
 * hip_wave.h, so that the same body runs the real instruction (hipcc, amd_probe.hip) and the
 * project's emulation of it (amd_probe_emu.cpp, the CPU fibers of tests/sim/hip_fake). Lane l reads its
 * operands from in[] and writes its results to out[] at fixed per-lane offsets; the host compares the
 * two runs bit for bit. A single workgroup of one wave: 64 threads (CDNA) or 32 (RDNA3). */
#ifndef PORTATTN_AMD_WAVE_PROBES_H
#define PORTATTN_AMD_WAVE_PROBES_H

#include "hip_wave.h"

/* The probes, in the order of the results file. */
enum pa_probe_op {
    PA_PROBE_MFMA32_F16,  /* v_mfma_f32_32x32x8f16 (gfx90a) / _f16 (gfx942) */
    PA_PROBE_MFMA32_BF16, /* v_mfma_f32_32x32x8bf16_1k / _bf16 */
    PA_PROBE_XOR32,       /* __shfl_xor(x, 32), wave64 */
    PA_PROBE_ANY64,       /* __any, wave64 */
    PA_PROBE_WMMA16_F16,  /* v_wmma_f32_16x16x16_f16, wave32 */
    PA_PROBE_WMMA16_BF16, /* v_wmma_f32_16x16x16_bf16, wave32 */
    PA_PROBE_XOR16,       /* __shfl_xor(x, 16, 32), wave32 */
    PA_PROBE_COUNT
};

/* Per-lane input and output words of every probe (the largest: a WMMA's 8 + 8 operand words and 8
 * accumulators in, 8 results out). */
#define PA_PROBE_IN 24
#define PA_PROBE_OUT 16

/* 1 for the probes of a wave64 MFMA target, 0 for those of wave32 RDNA3. */
static inline int pa_probe_wave64(int op) { return op <= PA_PROBE_ANY64; }

template <int OP> __device__ __forceinline__ void pa_probe_body(const uint32_t *in, uint32_t *out)
{
    const int l = (int)threadIdx.x;
    const uint32_t *x = in + PA_PROBE_IN * l;
    uint32_t *y = out + PA_PROBE_OUT * l;
    if constexpr (OP == PA_PROBE_MFMA32_F16 || OP == PA_PROBE_MFMA32_BF16) {
        PA_WAVE_SCRATCH(1);
        pa_in4 a, b;
        pa_acc32 acc;
        for (int i = 0; i < 4; ++i) a.h[i] = (uint16_t)(x[i / 2] >> 16 * (i % 2)), b.h[i] = (uint16_t)(x[2 + i / 2] >> 16 * (i % 2));
        for (int r = 0; r < 16; ++r) acc.r[r] = __uint_as_float(x[4 + r]);
        PA_MFMA32(OP == PA_PROBE_MFMA32_BF16, acc, a, b);
        for (int r = 0; r < 16; ++r) y[r] = __float_as_uint(acc.r[r]);
    } else if constexpr (OP == PA_PROBE_XOR32) {
        PA_WAVE_SCRATCH(1);
        y[0] = __float_as_uint(PA_XOR32(__uint_as_float(x[0])));
    } else if constexpr (OP == PA_PROBE_ANY64) {
        PA_WAVE_SCRATCH(1);
        y[0] = (uint32_t)PA_ANY((int)(x[0] & 1)); /* lanes of the test wave set bit 0 rarely */
    } else if constexpr (OP == PA_PROBE_WMMA16_F16 || OP == PA_PROBE_WMMA16_BF16) {
        PA_WAVE32_SCRATCH(1);
        pa_in16 a, b;
        pa_acc8 acc;
        for (int i = 0; i < 8; ++i) /* opaque words: clang-15 otherwise moved a 4-word load into one VGPR */
            a.w[i] = (uint32_t)pa_opaque((int)x[i]), b.w[i] = (uint32_t)pa_opaque((int)x[8 + i]), acc.r[i] = __uint_as_float(x[16 + i]);
        PA_WMMA16(OP == PA_PROBE_WMMA16_BF16, acc, a, b);
        for (int i = 0; i < 8; ++i) y[i] = __float_as_uint(acc.r[i]);
    } else {
        PA_WAVE32_SCRATCH(1);
        y[0] = PA_XOR16(x[0]);
    }
}

#endif
