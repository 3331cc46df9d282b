// test_hip_rdna3_sim: the hip-rdna3 kernel source (backends/hip/rdna3_fwd_kernel.h) on the CPU, as the
// nvcc emulation build compiles it (hip_wave.h's emulated wave32 primitives: WMMA computed from the
// lane maps of hip_mfma_layout.h, each half-wave from its own copy of the replicated operands, the
// xor-16 exchange through shared storage), every GPU thread a fiber: 128 per workgroup, four
// wave32s. The same cases, reference and checker as test_hip_cdna_sim (sim_common.h). Not AMD
// hardware; T3 is the case table through the library's backend (tests/sim/hip_fake); it checks the kernel's index math, WMMA operand layouts, masking, softmax
// and data flow. Exit 0 pass, 1 fail. Seed: $PORTATTN_TEST_SEED, else the clock (printed).
#include "rdna3_entries.h"
#include "rdna3_fwd_kernel.h"

#include "sim_common.h"

// Every launch the host makes for instance d (rdna3_entries.h): its instances of the dtype whose first
// output column is below the call's Dv, one after another in each thread.
static void run_rdna3(const pa_fwd_args &a, bool bf, int d) {
#define RUN(n, b16, dk, dn, c0) if (dk == d && (b16 != 0) == bf && c0 < a.dv) pa_rdna3_fwd<b16 != 0, dk, dn, c0>(a);
    PA_RDNA3_ENTRIES(RUN)
#undef RUN
}

int main(int argc, char **argv) {
    const SimKernel k = {"hip-rdna3", PA_RDNA3_BM, PA_RDNA3_WAVES * PA_WAVE32, PA_WAVE32, run_rdna3, {PA_RDNA3_DIMS}};
    return sim_main(argc, argv, k);
}
