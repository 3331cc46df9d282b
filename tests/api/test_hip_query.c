/* test_hip_query: what portattn_forward_query says about a HIP backend's head dims. A call runs on the
 * smallest instance that holds its Dqk and Dv (d32 to d256 in steps of 32), and the kernel name says the instance
 * and, where they differ from it, the call's head dims; head dims that are not multiples of 8 run on
 * hip-generic, and head dims over 256 are refused with that reason. On hip-cdna a call of one query token runs on the split-KV decode kernel, which
 * names its instance the same way. Run with the backend's device present (tests/sim/hip_fake on the CPU).
 * usage: test_hip_query <hip-cdna|hip-rdna3>. Exit 0 pass, 1 fail, 77 no such device. */
#include <stdio.h>
#include <string.h>

#include "devmem.h"
#include "harness.h"

static int fails;

/* Queries a bf16 call of sq query tokens over 40 keys, head dims dqk/dv, forced onto backend be; want:
 * the kernel name expected, or NULL with `refusal` a substring of the error. */
static void check(portattn_backend_t be, int64_t sq, int dqk, int dv, const char *want, const char *refusal)
{
    const int64_t s = 40, h = 2, d = dqk > dv ? dqk : dv;
    void *buf = dm_alloc(DM_HIP, (size_t)(s * h * d * 2) * 4 + 64);
    if (!buf) {
        printf("FAIL %d/%d: no device memory\n", dqk, dv);
        fails++;
        return;
    }
    char *base = (char *)buf;
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.backend = be, p.dtype = PORTATTN_DTYPE_BF16;
    p.batch = 1, p.seqlen_q = sq, p.seqlen_k = s, p.heads_q = h, p.heads_kv = h;
    p.head_dim_qk = dqk, p.head_dim_v = dv;
    p.q = portattn_tensor_bshd(base, sq, h, dqk);
    p.k = portattn_tensor_bshd(base + s * h * d * 2, s, h, dqk);
    p.v = portattn_tensor_bshd(base + 2 * s * h * d * 2, s, h, dv);
    p.o = portattn_tensor_bshd(base + 3 * s * h * d * 2, sq, h, dv);
    portattn_selection_t sel;
    memset(&sel, 0, sizeof sel);
    const portattn_status_t st = portattn_forward_query(&p, &sel);
    const char *err = portattn_last_error();
    if (want) {
        const int ok = st == PORTATTN_SUCCESS && !strcmp(sel.kernel, want);
        printf("%s %3d/%-3d %s%s%s\n", ok ? "ok  " : "FAIL", dqk, dv, sel.kernel, ok ? "" : ", expected ", ok ? "" : want);
        if (!ok && st) printf("     %s: %s\n", portattn_status_string(st), err);
        fails += !ok;
    } else {
        const int ok = st == PORTATTN_ERROR_NOT_SUPPORTED && strstr(err, refusal);
        printf("%s %3d/%-3d refused: %s\n", ok ? "ok  " : "FAIL", dqk, dv, st ? err : sel.kernel);
        fails += !ok;
    }
    dm_free(DM_HIP, buf);
}

int main(int argc, char **argv)
{
    int ok = 0;
    portattn_backend_t be = argc > 1 ? portattn_backend_from_name(argv[1], &ok) : PORTATTN_BACKEND_AUTO;
    if (!ok || (be != PORTATTN_BACKEND_HIP_CDNA && be != PORTATTN_BACKEND_HIP_RDNA3)) {
        fprintf(stderr, "usage: %s <hip-cdna|hip-rdna3>\n", argv[0]);
        return 2;
    }
    const int present = test_backend_present(be);
    if (present) return present;
    const int cdna = be == PORTATTN_BACKEND_HIP_CDNA;
    /* the kernel after "<tag><bf16,": hip-cdna's 128x32 tiles, its d256 as launches of 128 output
     * columns (those holding some of Dv), no d224; hip-rdna3's 64x32 tiles up to 128 columns, 64x16
     * over, every head dim one launch */
    static const struct { int dqk, dv; const char *cdna, *rdna3; } named[] = {
        {32, 32, "d32,128x32>", "d32,64x32>"},
        {40, 40, "d64(40/40),128x32>", "d64(40/40),64x32>"},
        {64, 64, "d64,128x32>", "d64,64x32>"},
        {80, 80, "d96(80/80),128x32>", "d96(80/80),64x32>"},
        {96, 96, "d96,128x32>", "d96,64x32>"},
        {128, 64, "d128(128/64),128x32>", "d128(128/64),64x32>"},
        {112, 112, "d128(112/112),128x32>", "d128(112/112),64x32>"},
        {128, 128, "d128,128x32>", "d128,64x32>"},
        {96, 160, "d160(96/160),128x32>", "d160(96/160),64x16>"},
        {160, 160, "d160,128x32>", "d160,64x16>"},
        {192, 128, "d192(192/128),128x32>", "d192(192/128),64x16>"},
        {192, 192, "d192,128x32>", "d192,64x16>"},
        {224, 128, "d256(224/128),128x32,1x128 columns>", "d224(224/128),64x16>"},
        {224, 224, "d256(224/224),128x32,2x128 columns>", "d224,64x16>"},
        {200, 256, "d256(200/256),128x32,2x128 columns>", "d256(200/256),64x16>"},
        {256, 256, "d256,128x32,2x128 columns>", "d256,64x16>"},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s<bf16,%s", cdna ? "cdna" : "rdna3", cdna ? named[i].cdna : named[i].rdna3);
        check(be, 40, named[i].dqk, named[i].dv, want, NULL);
    }
    /* head dims the fast kernels do not take run on hip-generic; past 256 nothing takes them */
    check(be, 40, 59, 37, "generic<bf16>", NULL);
    check(be, 40, 64, 36, "generic<bf16>", NULL);
    check(be, 40, 264, 264, NULL, "outside 1..256");
    if (be == PORTATTN_BACKEND_HIP_CDNA) { /* 40 keys: one split; the unsplit decode serves d80 on d128 */
        check(be, 1, 128, 128, "cdna-decode<bf16,d128,splits=1>", NULL);
        check(be, 1, 80, 80, "cdna-decode<bf16,d128(80/80),splits=1>", NULL);
        check(be, 1, 192, 128, "cdna-decode<bf16,d256(192/128),splits=1>", NULL);
    }
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
