/* The emulated side of the AMD instruction probes: amd_wave_probes.h's bodies under hip_wave.h's
 * emulation, every lane a fiber of tests/sim/sim_shim/sim_fiber.h, as the simulated GPU of the T3 tests
 * runs the kernels. Compiled like tests/sim/hip_fake/fake_hip.cpp (-D__CUDACC__, -include the HIP shim's
 * pre.h, tests/sim/hip_sim/shim) and linked into amd_probe (amd_probe.hip), which compares it with the
 * hardware. */
#include "amd_wave_probes.h"

int pa_sim_mfma_ftz; /* PA_EMU_MFMA_FTZ (shim/pre.h): set per call */

namespace {
struct job { const uint32_t *in; uint32_t *out; };
template <int OP> void run(void *p)
{
    const job *j = (const job *)p;
    pa_probe_body<OP>(j->in, j->out);
}
} // namespace

/* Runs probe op on one emulated wave (64 lanes or 32); ftz: the target's MFMA flushes 16-bit
 * subnormals (gfx90a). in/out: PA_PROBE_IN / PA_PROBE_OUT words a lane. Returns 0, -1 on a deadlock. */
extern "C" int pa_probe_emulate(int op, int ftz, const uint32_t *in, uint32_t *out)
{
    static void (*const fns[PA_PROBE_COUNT])(void *) = {run<0>, run<1>, run<2>, run<3>, run<4>, run<5>, run<6>};
    if (op < 0 || op >= PA_PROBE_COUNT) return -1;
    pa_sim_mfma_ftz = ftz;
    job j = {in, out};
    const unsigned lanes = pa_probe_wave64(op) ? 64 : 32;
    return sim_launch({1, 1, 1}, lanes, lanes, fns[op], &j);
}
