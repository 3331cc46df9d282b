/* amd_probe: runs each matrix and cross-lane instruction the HIP kernels use (amd_wave_probes.h) on
 * the AMD GPU of this machine, on random operands with zeros, 16-bit and f32 subnormals mixed in,
 * and compares every result bit for bit with the project's emulation of it (hip_wave.h, run on the
 * CPU by amd_probe_emu.cpp): the first hour on a new GPU confirms or refutes the emulation that
 * every T3 result of the AMD kernels rests on. gfx9 (CDNA) GPUs run the MFMA, xor-32 and any
 * probes, gfx11 (RDNA3) the WMMA and xor-16 ones; the emulation flushes 16-bit subnormals in MFMAs
 * on gfx90a only, as AMD documents for MI200.
 * usage: amd_probe [RESULTS_FILE] [TRIALS]   exit 0 all equal, 1 a mismatch, 77 no AMD GPU here */
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include "amd_wave_probes.h"

extern "C" int pa_probe_emulate(int op, int ftz, const uint32_t *in, uint32_t *out); /* amd_probe_emu.cpp */

#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define PROBE_MFMA 1
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__)
#define PROBE_WMMA 1
#endif

/* Each probe compiles only for the targets that have its instruction (empty elsewhere). */
template <int OP> __global__ void probe(const uint32_t *in, uint32_t *out)
{
#if defined(PROBE_MFMA)
    if constexpr (OP <= PA_PROBE_ANY64) pa_probe_body<OP>(in, out);
#elif defined(PROBE_WMMA)
    if constexpr (OP > PA_PROBE_ANY64) pa_probe_body<OP>(in, out);
#endif
    (void)in, (void)out;
}

static const char *const op_names[PA_PROBE_COUNT] = {"v_mfma_f32_32x32x8 f16", "v_mfma_f32_32x32x8 bf16",
                                                     "xor-32 exchange (wave64)", "any (wave64)",
                                                     "v_wmma_f32_16x16x16 f16", "v_wmma_f32_16x16x16 bf16",
                                                     "xor-16 exchange (wave32)"};

/* A 16-bit operand: mostly normal values in [-4, 4], some zeros and subnormals of either sign. */
static uint16_t operand(std::mt19937 &rng, bool bf16)
{
    const uint32_t r = rng(), sign = (r >> 31) << 15;
    switch (r % 16) {
    case 0: return (uint16_t)sign;
    case 1:
    case 2: return (uint16_t)(sign | ((r >> 8) & (bf16 ? 0x7fu : 0x3ffu)) | 1u);
    default: break;
    }
    const float x = std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
    if (bf16) {
        uint32_t u;
        memcpy(&u, &x, 4);
        return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    const _Float16 h = (_Float16)x;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}

/* An f32 accumulator: mostly in [-64, 64], some zeros and f32 subnormals. */
static uint32_t accumulator(std::mt19937 &rng)
{
    const uint32_t r = rng();
    if (r % 16 == 0) return r & 0x80000000u;
    if (r % 16 == 1) return (r & 0x80000000u) | ((r >> 4) & 0x7fffffu) | 1u;
    const float x = std::uniform_real_distribution<float>(-64.f, 64.f)(rng);
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* The operands of one trial of op, PA_PROBE_IN words a lane; WMMA operands replicated in lanes l
 * and l + 16, as the RDNA3 kernel feeds them. */
static void make_inputs(int op, std::mt19937 &rng, std::vector<uint32_t> &in)
{
    const bool bf16 = op == PA_PROBE_MFMA32_BF16 || op == PA_PROBE_WMMA16_BF16;
    for (int l = 0; l < 64; ++l) {
        uint32_t *x = &in[PA_PROBE_IN * l];
        if (op == PA_PROBE_MFMA32_F16 || op == PA_PROBE_MFMA32_BF16) {
            for (int w = 0; w < 4; ++w) x[w] = operand(rng, bf16) | (uint32_t)operand(rng, bf16) << 16;
            for (int r = 0; r < 16; ++r) x[4 + r] = accumulator(rng);
        } else if (op == PA_PROBE_WMMA16_F16 || op == PA_PROBE_WMMA16_BF16) {
            if (l >= 16) {
                memcpy(x, &in[PA_PROBE_IN * (l - 16)], 16 * 4); /* a and b as in lane l - 16 */
                for (int r = 0; r < 8; ++r) x[16 + r] = accumulator(rng);
                continue;
            }
            for (int w = 0; w < 16; ++w) x[w] = operand(rng, bf16) | (uint32_t)operand(rng, bf16) << 16;
            for (int r = 0; r < 8; ++r) x[16 + r] = accumulator(rng);
        } else if (op == PA_PROBE_ANY64) {
            x[0] = rng() % 97 == 0; /* most trials have some lane set, some none */
        } else {
            x[0] = accumulator(rng);
        }
    }
}

#define HIP_OK(call) do { hipError_t e_ = (call); if (e_ != hipSuccess) { \
    fprintf(stderr, "%s: %s\n", #call, hipGetErrorString(e_)); exit(1); } } while (0)

template <int OP> static void launch(const uint32_t *in, uint32_t *out)
{
    hipLaunchKernelGGL(probe<OP>, dim3(1), dim3(pa_probe_wave64(OP) ? 64 : 32), 0, 0, in, out);
}

int main(int argc, char **argv)
{
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess || n == 0) {
        printf("SKIP: no AMD GPU (HIP runtime reports none)\n");
        return 77;
    }
    hipDeviceProp_t prop;
    HIP_OK(hipGetDeviceProperties(&prop, 0));
    const char *arch = prop.gcnArchName;
    const bool cdna = !strncmp(arch, "gfx9", 4), rdna3 = !strncmp(arch, "gfx11", 5);
    if (!cdna && !rdna3) {
        printf("SKIP: %s (%s) has neither the MFMA nor the WMMA instructions the kernels use\n", prop.name, arch);
        return 77;
    }
    const int ftz = !strncmp(arch, "gfx90a", 6);
    const int trials = argc > 2 ? atoi(argv[2]) : 200;
    FILE *res = argc > 1 ? fopen(argv[1], "w") : NULL;
    printf("%s (%s), emulation %s 16-bit subnormals in MFMAs, %d trials a probe\n", prop.name, arch,
           ftz ? "flushing" : "keeping", trials);
    if (res) fprintf(res, "device %s\narch %s\nemulated_mfma_flush %d\n", prop.name, arch, ftz);
    std::vector<uint32_t> in(64 * PA_PROBE_IN), got(64 * PA_PROBE_OUT), want(64 * PA_PROBE_OUT);
    uint32_t *d_in, *d_out;
    HIP_OK(hipMalloc((void **)&d_in, in.size() * 4));
    HIP_OK(hipMalloc((void **)&d_out, got.size() * 4));
    void (*const launches[PA_PROBE_COUNT])(const uint32_t *, uint32_t *) = {
        launch<0>, launch<1>, launch<2>, launch<3>, launch<4>, launch<5>, launch<6>};
    int failed = 0;
    for (int op = 0; op < PA_PROBE_COUNT; ++op) {
        if (pa_probe_wave64(op) != cdna) continue;
        std::mt19937 rng(1234u + (unsigned)op);
        long bad = 0, shown = 0;
        for (int t = 0; t < trials; ++t) {
            make_inputs(op, rng, in);
            HIP_OK(hipMemcpy(d_in, in.data(), in.size() * 4, hipMemcpyHostToDevice));
            HIP_OK(hipMemset(d_out, 0xff, got.size() * 4));
            launches[op](d_in, d_out);
            HIP_OK(hipDeviceSynchronize());
            HIP_OK(hipMemcpy(got.data(), d_out, got.size() * 4, hipMemcpyDeviceToHost));
            std::fill(want.begin(), want.end(), 0xffffffffu);
            if (pa_probe_emulate(op, ftz, in.data(), want.data())) {
                fprintf(stderr, "emulation of %s failed\n", op_names[op]);
                return 1;
            }
            for (size_t i = 0; i < got.size(); ++i)
                if (got[i] != want[i] && bad++ < 1000 && shown < 8) {
                    printf("  %s trial %d lane %zu word %zu: GPU %08x emulation %08x\n", op_names[op], t, i / PA_PROBE_OUT,
                           i % PA_PROBE_OUT, got[i], want[i]);
                    ++shown;
                }
        }
        printf("%-28s %s (%ld words differ)\n", op_names[op], bad ? "DIFFERS" : "bit-exact", bad);
        if (res) fprintf(res, "probe \"%s\" trials %d differing_words %ld\n", op_names[op], trials, bad);
        failed += bad != 0;
    }
    if (res) fclose(res);
    return failed ? 1 : 0;
}
