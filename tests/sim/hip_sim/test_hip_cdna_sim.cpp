// test_hip_cdna_sim: the hip-cdna kernel source (backends/hip/cdna_fwd_kernel.h) on the CPU, as the
// nvcc emulation build compiles it (hip_wave.h's emulated wave primitives), every GPU thread a
// fiber (sim_fiber.h): 256 per workgroup, __syncthreads and the per-wave named barriers its barriers,
// __shared__ as static storage (workgroups run one after another). The kernel and hip_wave.h are used
// verbatim; shim/ only supplies the CUDA names. Each case is compared with a double-precision
// attention over the same 16-bit inputs; outputs and LSE start as sentinels, so rows never written
// and stray writes outside the sequences fail too. T3 is the case table through the library's backend
// (tests/sim/hip_fake); this is a second, independent check and not AMD hardware; it checks the kernel's index math, masking, softmax and data flow.
// The case table, reference and launch are shared with test_hip_rdna3_sim (sim_common.h).
// Exit 0 pass, 1 fail. Seed: $PORTATTN_TEST_SEED, else the clock (printed).
#include "cdna_entries.h"
#include "cdna_fwd_kernel.h"

#include "sim_common.h"

// Every launch the host makes for instance d (cdna_entries.h): its instances of the dtype whose first
// output column is below the call's Dv, one after another in each thread.
static void run_cdna(const pa_fwd_args &a, bool bf, int d) {
#define RUN(n, b16, dk, dn, c0) if (dk == d && (b16 != 0) == bf && c0 < a.dv) pa_cdna_fwd<b16 != 0, dk, dn, c0>(a);
    PA_CDNA_ENTRIES(RUN)
#undef RUN
}

int main(int argc, char **argv) {
    const SimKernel k = {"hip-cdna", PA_CDNA_BM, PA_CDNA_WAVES * PA_WAVE, PA_WAVE, run_cdna, {PA_CDNA_DIMS}};
    pa_sim_mfma_ftz = 1; /* as gfx90a (MI200), the CDNA target whose MFMA flushes 16-bit subnormals */
    return sim_main(argc, argv, k);
}
