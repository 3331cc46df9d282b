/* Runs the whole case table on one backend: test_cases <backend-name> [case-substring | K/N]; built
 * as test_cases_bwd (PA_BACKWARD) it runs the backward check of every case instead. K/N runs the K-th
 * of N shares of the table, balanced by each case's work: N processes (CTest runs them side by side
 * on the cores) run every case once between them.
 * Exit 0 all pass, 1 any failure, 77 when the hardware the backend needs is absent (harness.h).
 * Cases the backend declines (NOT_SUPPORTED) are listed and counted apart, never as passes, and must
 * be exactly the backend's pinned list (coverage.c): a decline more or fewer fails, named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coverage.h"
#include "problem.h"
#include "devmem.h"
#include "harness.h"

#ifndef PA_BACKWARD
#define PA_BACKWARD 0
#endif

/* A case's work on a backend: the visible part of its score matrix times the head dims, none if the
 * backend declines it (a varlen batch's random lengths average a quarter of the matrix). */
static double case_work(const tcase *c, portattn_backend_t be)
{
    if (coverage_expects_decline(be, c->name, PORTATTN_DTYPE_F16, PA_BACKWARD) == 1) return 0;
    const double rows = (double)(c->sq > 0 ? c->sq : 1), keys = (double)(c->sk > 0 ? c->sk : 1);
    return (double)c->b * (double)c->hq * rows * keys * (double)(c->dqk + c->dv) * (c->causal ? 0.5 : 1) *
           (c->varlen ? 0.25 : 1);
}

/* The share (0..n-1) of every case: the largest first, each to the least loaded share so far.
 * work: scratch of test_case_count entries. */
static void shares(portattn_backend_t be, int n, int *share, double *work)
{
    double load[64] = {0};
    for (int i = 0; i < test_case_count; i++) share[i] = -1, work[i] = case_work(&test_cases[i], be);
    for (int k = 0; k < test_case_count; k++) {
        int big = -1, least = 0;
        for (int i = 0; i < test_case_count; i++)
            if (share[i] < 0 && (big < 0 || work[i] > work[big])) big = i;
        for (int j = 1; j < n; j++)
            if (load[j] < load[least]) least = j;
        share[big] = least, load[least] += work[big];
    }
}

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
        if (shard < 1 || shard > shards || shards > 64) {
            fprintf(stderr, "shard %s: K must be in 1..N, N at most 64\n", only);
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
    int *share = malloc(sizeof *share * (size_t)test_case_count);
    double *work = malloc(sizeof *work * (size_t)test_case_count);
    if (!share || !work) return 1;
    shares(be, shards, share, work);
    free(work);
    for (int i = 0; i < test_case_count; i++) {
        if ((only && !strstr(test_cases[i].name, only)) || share[i] != shard - 1) continue;
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
    if (shards > 1) printf("share %d of %d: ", shard, shards);
    printf("%s: %d cases ran, %d declined by the backend (n/a)\n", info.name, passed + failed, declined);
    printf("%d passed, %d failed, %d off the pinned coverage (COVERAGE lines)\n", passed, failed, off_list);
    free(share);
    return failed || off_list || passed == 0 ? 1 : 0;
}
