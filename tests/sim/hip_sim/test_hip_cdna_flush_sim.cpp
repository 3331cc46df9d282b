// test_hip_cdna_flush_sim: the attention-sink cases of the CDNA simulation against the kernel as it
// was before P was scaled into f16's normal range (PA_CDNA_P_LOG2 0). With gfx90a's MFMA subnormal
// flush emulated, its f16 sink cases must fail, and with the flush off they must pass: so the sink
// cases still detect the flush (and a kernel that loses the scaling), and the flush alone is what
// breaks the unscaled kernel. The scaled kernel passes the same cases under the flush
// (test_hip_cdna_sim). Exit 0 when both hold, 1 otherwise. Seed: $PORTATTN_TEST_SEED, else the clock.
#define PA_CDNA_P_LOG2 0
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

int main() {
    const SimKernel k = {"hip-cdna without the P scaling", PA_CDNA_BM, PA_CDNA_WAVES * PA_WAVE, PA_WAVE, run_cdna, {PA_CDNA_DIMS}};
    const char *env = getenv("PORTATTN_TEST_SEED");
    const unsigned seed = env && *env ? (unsigned)strtoul(env, nullptr, 10)
                                      : (unsigned)std::chrono::steady_clock::now().time_since_epoch().count();
    printf("%s, seed %u (rerun with PORTATTN_TEST_SEED=%u)\n", k.name, seed, seed);
    const std::vector<Case> cs = sim_cases();
    int f16_sinks = 0, failed_flush = 0, failed_plain = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
        if (!cs[i].sinks || cs[i].bf) continue;
        ++f16_sinks;
        pa_sim_mfma_ftz = 1;
        printf("with gfx90a's MFMA flush:\n");
        failed_flush += !run_case(cs[i], seed + (unsigned)i, k);
        pa_sim_mfma_ftz = 0;
        printf("without it:\n");
        failed_plain += !run_case(cs[i], seed + (unsigned)i, k);
    }
    printf("%d f16 sink cases: %d fail with the flush (all must), %d without it (none may)\n", f16_sinks, failed_flush,
           failed_plain);
    return f16_sinks > 0 && failed_flush == f16_sinks && failed_plain == 0 ? 0 : 1;
}
