/* Runs the whole case table on one backend: test_cases <backend-name> [case-substring | K/N]; built
 * as test_cases_bwd (PA_BACKWARD) it runs the backward check of every case instead. K/N runs every
 * N-th case from the K-th: N processes share the table (CTest runs them side by side on the cores).
 * Exit 0 all pass, 1 any failure, 77 when the hardware the backend needs is absent (harness.h).
 * Cases the backend declines (NOT_SUPPORTED) are listed and counted apart, never as passes, and must
 * be exactly the backend's pinned list (coverage.c): a decline more or fewer fails, named. */
#include <stdio.h>
#include <string.h>

#include "coverage.h"
#include "problem.h"
#include "devmem.h"
#include "harness.h"

#ifndef PA_BACKWARD
#define PA_BACKWARD 0
#endif

int main(int argc, char **argv)
{
    int shard = 1, shards = 1;
    char end;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s <backend> [case-substring | K/N]\n", argv[0]);
        return 2;
    }
    const char *only = argc > 2 ? argv[2] : NULL;
    if (only && sscanf(only, "%d/%d%c", &shard, &shards, &end) == 2) {
        if (shard < 1 || shard > shards) {
            fprintf(stderr, "shard %s: K must be in 1..N\n", only);
            return 2;
        }
        only = NULL;
    } else {
        shard = shards = 1;
    }
    int ok;
    portattn_backend_t be = portattn_backend_from_name(argv[1], &ok);
    portattn_backend_info_t info;
    if (!ok || be == PORTATTN_BACKEND_AUTO || portattn_backend_get_info(be, &info)) {
        fprintf(stderr, "unknown backend '%s'\n", argv[1]);
        return 2;
    }
    const int present = test_backend_present(be);
    if (present) return present;
    printf("backend %s on %s (%s)\n", info.name, dm_device_name(dm_kind_of(be)), info.detail);
    uint64_t seed = test_seed();
    const portattn_dtype_t dtypes[] = {PORTATTN_DTYPE_BF16, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_F32};
    int passed = 0, failed = 0, declined = 0, off_list = 0;
    if (coverage_expects_decline(be, "", PORTATTN_DTYPE_F16, PA_BACKWARD) < 0) {
        printf("FAIL %s has no pinned coverage in coverage.c\n", info.name);
        return 1;
    }
    for (int i = 0; i < test_case_count; i++) {
        if ((only && !strstr(test_cases[i].name, only)) || i % shards != shard - 1) continue;
        for (int t = 0; t < 3; t++) {
            run_result r = (PA_BACKWARD ? run_case_bwd : run_case)(&test_cases[i], dtypes[t], be, seed);
            passed += r == RUN_PASS, failed += r == RUN_FAIL, declined += r == RUN_NOT_SUPPORTED;
            const int want = coverage_expects_decline(be, test_cases[i].name, dtypes[t], PA_BACKWARD);
            if (want >= 0 && want != (r == RUN_NOT_SUPPORTED)) {
                printf("COVERAGE %s %s/%s: expected %s, %s\n", info.name, test_cases[i].name, pa_dtype_name(dtypes[t]),
                       want ? "declined" : "to run", want ? "it ran" : "declined");
                off_list++;
            }
        }
    }
    if (shards > 1) printf("cases %d, %d + %d, ... of %d: ", shard, shard + shards, shard + 2 * shards, test_case_count);
    printf("%s: %d cases ran, %d declined by the backend (n/a)\n", info.name, passed + failed, declined);
    printf("%d passed, %d failed, %d off the pinned coverage (COVERAGE lines)\n", passed, failed, off_list);
    return failed || off_list || passed == 0 ? 1 : 0;
}
