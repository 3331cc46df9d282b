/* cuda-sm80's backward kernels (sm80_bwd_rows.cuh, sm80_bwd_kernel.cuh) on the CPU, a fiber per GPU
 * thread (sim_fiber.h, resumed in a random order that differs between runs), ldmatrix and mma.sync emulated by the lanes' posted operands (shim/pre.h): dq, dk, dv
 * against the CPU backend's backward on the same inputs. Covers d64, d96, d128 and d256, f16 and
 * bf16, GQA/MQA, causal with rows that see no key, windows, softcap, a negative scale, varlen with
 * empty sequences, whole blocks (the unmasked path) at d128 and d256, several key blocks per CTA (a
 * grid narrower than the key blocks), the deterministic mode's slices (run twice: bitwise equal) and
 * one query row. cp.async lands at once (f16 runs) or at the thread's wait (bf16 runs), the two ends
 * of what the hardware may do. Every gradient element must be written (NaN poison), close to the
 * CPU's, and padding untouched. The GPU compiles the same kernel source; this checks its index math
 * and its barriers without a GPU. */
#include <stdio.h>

#include <vector>

#include "sim_bwd_args.h"
#include "sim_bwd_case.h"
#include "sm80_bwd_rows.cuh"

static int failures;

/* A case: the problem (dqk = dv, the instance's head dim) and how the kernels run it. */
struct cfg {
    sim_bwd_case c;
    int det;    /* deterministic mode: dQ slices */
    int gx;     /* grid x of the main kernel in the default mode (0: one per key block) */
    int bm = 0; /* query rows per block (main() runs d64 at both of its shapes) */
};

static const cfg cfgs[] = {
    {{"gqa2_d64_2kblocks", 1, 70, 150, 2, 1, 64, 64, 0, -1, -1, 0, 0, 1, 0, {0}, {0}}, 0, 0},
    {{"causal_nokey_rows_d64_gx1", 1, 150, 100, 2, 2, 64, 64, 1, -1, -1, 0, 0, 1, 1, {0}, {0}}, 0, 1},
    {{"window_softcap_d128_det", 1, 90, 200, 2, 1, 128, 128, 0, 20, 40, 5, 0, 2, 0, {0}, {0}}, 2, 0},
    {{"varlen_causal_negscale_d64", 3, 150, 170, 4, 2, 64, 64, 1, -1, -1, 0, -0.2f, 1, 1, {0, 80, 80, 150}, {0, 130, 130, 170}}, 0, 0},
    {{"mqa_d128_det3", 2, 40, 300, 3, 1, 128, 128, 0, -1, -1, 0, 0, 1, 0, {0}, {0}}, 3, 0},
    {{"one_row_five_keys_d128", 1, 1, 5, 1, 1, 128, 128, 0, -1, -1, 0, 0, 1, 0, {0}, {0}}, 0, 0},
    {{"d96_causal_gqa3_det2", 2, 100, 140, 6, 2, 96, 96, 1, -1, -1, 0, 0, 1, 1, {0}, {0}}, 2, 0},
    {{"d96_varlen_softcap", 3, 150, 170, 2, 2, 96, 96, 0, -1, -1, 3, 0, 2, 0, {0, 80, 80, 150}, {0, 130, 130, 170}}, 0, 0},
    {{"gqa4_window_left_det2", 1, 200, 300, 8, 2, 64, 64, 0, 10, -1, 0, 0, 1, 1, {0}, {0}}, 2, 0},
    {{"d128_full_blocks_gqa2", 1, 128, 256, 4, 2, 128, 128, 0, -1, -1, 0, 0, 1, 0, {0}, {0}}, 0, 0},
    {{"d64_full_blocks_gqa2_det2", 1, 256, 256, 4, 2, 64, 64, 0, -1, -1, 0, 0, 1, 0, {0}, {0}}, 2, 0},
    {{"d256_full_blocks_det2", 1, 128, 128, 2, 1, 256, 256, 0, -1, -1, 0, 0, 1, 1, {0}, {0}}, 2, 0},
    {{"d256_causal_gqa2_2kblocks", 1, 100, 140, 4, 2, 256, 256, 1, -1, -1, 0, 0, 1, 1, {0}, {0}}, 0, 1},
    {{"d256_window_softcap_det2", 1, 90, 150, 2, 1, 256, 256, 0, 20, 40, 5, 0, 2, 0, {0}, {0}}, 2, 0},
    {{"d256_varlen_negscale", 3, 150, 170, 2, 2, 256, 256, 1, -1, -1, 0, -0.2f, 1, 0, {0, 80, 80, 150}, {0, 130, 130, 170}}, 0, 0},
};

template <typename T, int D>
static void run_kernels(const pa_bwd_args &a, const cfg &c, int64_t max_sk)
{
    const int rpb = PA_BWD_ROW_THREADS / PA_BWD_TPR(D), nkb = (int)((max_sk + PA_SM80_BWD_BN(D) - 1) / PA_SM80_BWD_BN(D));
    const sim_dim3 rows = {(unsigned)((a.sqp + rpb - 1) / rpb), (unsigned)c.c.hq, (unsigned)c.c.b};
    const unsigned gx = (unsigned)(a.deterministic ? a.splits : c.gx ? c.gx : nkb);
    failures += sim_launch(pa_bwd_prep<T, D>, rows, PA_BWD_ROW_THREADS, a);
    const sim_dim3 grid = {gx, (unsigned)c.c.hkv, (unsigned)c.c.b};
    if (a.bm == 64)
        failures += sim_launch(sm80_bwd_main<T, D, 64>, grid, PA_SM80_BWD_WARPS * 32, a);
    else
        failures += sim_launch(sm80_bwd_main<T, D, PA_SM80_BWD_BM_MAX(D)>, grid, PA_SM80_BWD_WARPS * 32, a);
    failures += sim_launch(pa_bwd_dq<T, D>, rows, PA_BWD_ROW_THREADS, a);
}

template <typename T>
static void run_dim(const pa_bwd_args &a, const cfg &c, int64_t max_sk)
{
    const int64_t d = c.c.dqk;
    d == 64 ? run_kernels<T, 64>(a, c, max_sk) : d == 96 ? run_kernels<T, 96>(a, c, max_sk)
    : d == 128                                                ? run_kernels<T, 128>(a, c, max_sk)
                                                              : run_kernels<T, 256>(a, c, max_sk);
}

static void run(const cfg &c, portattn_dtype_t dt)
{
    sim_bwd_run r;
    if (sim_bwd_prepare(c.c, dt, 8, r)) {
        failures++;
        return;
    }
    const int64_t d = c.c.dqk, mq = r.bp.fwd.max_seqlen_q, mk = r.bp.fwd.max_seqlen_k;
    const int splits = c.det ? c.det : 1;
    const int64_t bmax = PA_SM80_BWD_BM_MAX(d), sqp = (mq + bmax - 1) / bmax * bmax;
    const size_t rows = (size_t)(c.c.b * c.c.hq * sqp);
    std::vector<float> ws(rows * (2 + (size_t)splits * (size_t)d) + 4, NAN);
    pa_bwd_args a = sim_bwd_args_of(r.bp, splits, sqp, c.bm);
    a.lse2 = ws.data(), a.delta = a.lse2 + rows, a.dq_acc = a.delta + rows;
    memset(a.dq_acc, 0, rows * (size_t)splits * (size_t)d * 4);
    sim_late_copies = dt == PORTATTN_DTYPE_BF16; /* f16 runs land cp.async at once, bf16 runs at the wait */
    /* Deterministic mode runs twice, gradients re-poisoned and dQ sums cleared in between: the
     * threads interleave differently each time, the results must not differ in a bit. */
    std::vector<unsigned char> first[3];
    for (int pass = 0; pass < (c.det ? 2 : 1); ++pass) {
        sim_urand(); /* the threads interleave differently on each pass */
        sim_order((unsigned)(sim_rng >> 32) | 1u);
        if (pass) {
            for (int i = 0; i < 3; ++i) first[i] = r.g[1][i].mem, memset(r.g[1][i].mem.data(), 0xFF, r.g[1][i].mem.size());
            memset(a.dq_acc, 0, rows * (size_t)splits * (size_t)d * 4);
        }
        if (dt == PORTATTN_DTYPE_F16)
            run_dim<__half>(a, c, mk);
        else
            run_dim<__nv_bfloat16>(a, c, mk);
    }
    int stable = 1;
    for (int i = 0; i < 3 && c.det; ++i) stable &= first[i] == r.g[1][i].mem;
    if (!stable) {
        printf("FAIL %s: deterministic mode gave different bits on a second run\n", c.c.name);
        failures++;
    }

    /* The kernel rounds P and dS to the dtype before its products, as FlashAttention-2 does. */
    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
    char note[256] = "";
    const int ok = sim_bwd_compare(r, dt, [u](double mag) { return 8 * u * mag; }, note, sizeof note);
    failures += !ok;
    printf("%-4s %-28s bm%-3d %-4s %-5s%s\n", ok ? "ok" : "FAIL", c.c.name, c.bm, dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16",
           sim_late_copies ? "late" : "early", note);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    sim_seed();
    for (const cfg &c0 : cfgs) {
        if (argc > 1 && !strstr(c0.c.name, argv[1])) continue;
        /* every shape the head dim builds: d64's 64 rows (what runs on devices with less shared
         * memory) and 128 */
        for (int bm : {64, PA_SM80_BWD_BM_MAX(c0.c.dqk)}) {
            cfg c = c0;
            c.bm = bm;
            for (portattn_dtype_t dt : {PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
            if (PA_SM80_BWD_BM_MAX(c0.c.dqk) == 64) break;
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
