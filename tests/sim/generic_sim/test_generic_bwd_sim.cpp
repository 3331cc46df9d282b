/* cuda-generic's backward kernels (generic_bwd_kernel.cuh) on the CPU, every lane a fiber (sim_fiber.h), with
 * grids smaller than the problem so every grid-stride loop runs: dq, dk, dv against the CPU backend's
 * backward on the same inputs (GQA/MQA, Dqk != Dv up to 256, causal with rows that see no key,
 * windows, softcap, scale, varlen with empty sequences, padded gradient layouts), f32/f16/bf16.
 * Every gradient element must be written (NaN poison), close to the CPU's, and padding untouched.
 * The kernel source compiled for the GPU is the same file; this checks its logic without a GPU. */
#include <stdio.h>

#include "generic_bwd_kernel.cuh"
#include "sim_bwd_case.h"

sim_warp sim_warps[32];

/* Every block of `grid` in turn, its warps side by side (the kernels never sync across warps). */
template <typename K>
static void sim_launch(K kernel, sim_dim3 grid, const pa_bwd_problem &bp, float inv_cap)
{
    sim_run_or_fail(grid, GB_THREADS, 32, [&] { kernel(bp, inv_cap); });
}

static const sim_bwd_case cfgs[] = {
    {"gqa_causal_d40_v24", 2, 13, 19, 4, 2, 40, 24, 1, -1, -1, 0, 0, 1, 0, {0}, {0}},
    {"mqa_window_softcap", 2, 11, 9, 3, 1, 16, 16, 0, 3, 2, 4, 0, 2, 1, {0}, {0}},
    {"nokey_rows_scale_d64", 1, 20, 7, 2, 2, 64, 64, 1, -1, -1, 0, 0.5f, 1, 0, {0}, {0}},
    {"d256", 1, 5, 6, 2, 1, 256, 256, 0, -1, -1, 0, 0, 1, 1, {0}, {0}},
    {"varlen_gqa_causal_padded", 3, 17, 21, 4, 2, 8, 12, 1, -1, -1, 0, 0, 1, 1, {0, 9, 9, 17}, {0, 12, 12, 21}},
    {"varlen_window_nokey_seq", 3, 14, 10, 2, 1, 24, 8, 0, 2, 4, 3, 0, 1, 0, {0, 6, 6, 14}, {0, 5, 10, 10}},
};

static int failures;

static void run(const sim_bwd_case &c, portattn_dtype_t dt)
{
    sim_bwd_run r;
    if (sim_bwd_prepare(c, dt, 3, r)) {
        failures++;
        return;
    }
    const pa_bwd_problem &bp = r.bp;
    const float inv_cap = c.softcap > 0 ? 1.f / c.softcap : 0.f;
    const sim_dim3 grid = {2, 2, 2}; /* fewer blocks than rows, heads and sequences */
    switch (dt) {
    case PORTATTN_DTYPE_F16:
        sim_launch(gen_bwd_dq<__half>, grid, bp, inv_cap), sim_launch(gen_bwd_dkdv<__half>, grid, bp, inv_cap);
        break;
    case PORTATTN_DTYPE_BF16:
        sim_launch(gen_bwd_dq<__nv_bfloat16>, grid, bp, inv_cap);
        sim_launch(gen_bwd_dkdv<__nv_bfloat16>, grid, bp, inv_cap);
        break;
    default: sim_launch(gen_bwd_dq<float>, grid, bp, inv_cap), sim_launch(gen_bwd_dkdv<float>, grid, bp, inv_cap);
    }

    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : dt == PORTATTN_DTYPE_BF16 ? 1.0 / 256 : 0;
    char note[256] = "";
    const int ok = sim_bwd_compare(r, dt, [u](double mag) { return u ? 2 * u * mag : 1e-5 * (1 + mag); }, note, sizeof note);
    failures += !ok;
    printf("%-4s %-26s %-4s%s\n", ok ? "ok" : "FAIL", c.name, dt == PORTATTN_DTYPE_F32 ? "f32" : dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16",
           note);
    fflush(stdout);
}

int main()
{
    sim_seed();
    for (const sim_bwd_case &c : cfgs)
        for (portattn_dtype_t dt : {PORTATTN_DTYPE_F32, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
    printf("%d failures\n", failures);
    return failures != 0;
}
