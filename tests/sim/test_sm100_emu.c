/* The tcgen05 emulator core (backends/cuda/sm100/sm100_tc_emu.h) on the CPU: operands laid out in
 * a fake shared memory exactly as the cuda-sm100 kernel's TMA loads leave them (64-column boxes,
 * 128-byte swizzle, the kernel's tile offsets), descriptors built by the kernel's own functions
 * (sm100_desc.h), S = Q K^T and O = P V emulated MMA by MMA and compared with a naive product.
 * Then the emulator must catch deliberate mistakes: a wrong SBO, LBO, swizzle mode or major-ness,
 * a reserved descriptor bit, and a tcgen05.ld outside the warp's lane quadrant. Exit 0 only when
 * the correct layouts pass and every mistake is caught. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "sm100_tc_emu.h"

#define SMEM_SIZE (232u * 1024u)
static uint8_t smem[SMEM_SIZE];
static uint32_t tmem[SM100_TMEM_LANES * SM100_TMEM_COLS];
static int failures;

static uint32_t rng = 12345u;
static float frand(void) /* in [-1, 1) */
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}
static uint16_t to16(float x, int bf16) { return bf16 ? pa_f32_to_bf16(x) : pa_f32_to_f16(x); }
static float from16(uint16_t h, int bf16) { return bf16 ? pa_bf16_to_f32(h) : pa_f16_to_f32(h); }

/* What a TMA load with CU_TENSOR_MAP_SWIZZLE_128B does with a box of 64 columns x rows (the
 * documented pattern, by row index: independent of the emulator's address-bit decoding): row r at
 * dst + 128 r, 16-byte chunk c at chunk c ^ (r & 7). src: rows x ld 16-bit values, columns c0.. */
static void tma_box_sw128(uint32_t dst, const uint16_t *src, int ld, int rows, int c0)
{
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < 64; ++c) {
            const uint32_t a = dst + (uint32_t)r * 128u + (uint32_t)(((c / 8) ^ (r & 7)) * 16 + (c % 8) * 2);
            const uint16_t v = src[(size_t)r * ld + c0 + c];
            smem[a] = (uint8_t)v, smem[a + 1] = (uint8_t)(v >> 8);
        }
}

/* A rows x cols tile (row-major, ld = cols) as the kernel loads it: NB 64-column blocks of `rows`
 * rows each, block b at dst + b * rows * 128. */
static void tma_tile(uint32_t dst, const uint16_t *src, int rows, int cols)
{
    for (int b = 0; b < cols / 64; ++b) tma_box_sw128(dst + (uint32_t)(b * rows * 128), src, cols, rows, b * 64);
}

static double max_err(const float *got, const double *want, int n)
{
    double e = 0.0;
    for (int i = 0; i < n; ++i) {
        const double d = fabs((double)got[i] - want[i]);
        if (!(d <= e)) e = d; /* NaN counts as infinite error */
    }
    return e;
}

/* A tile's TMEM columns [col, col + n) of all 128 lanes, read by the four warps of a warpgroup
 * with tcgen05.ld.32x32b (each warp its own quadrant). */
static int read_tile(int wg, int col, int n, float *out)
{
    uint32_t r[128];
    for (int w = 0; w < 4; ++w)
        for (int lane = 0; lane < 32; ++lane) {
            const int e = sm100_emu_ld_32x32b(tmem, 4 * wg + w, lane, sm100_taddr(0, 32 * w, col), n, r);
            if (e) return e;
            for (int j = 0; j < n; ++j) out[(32 * w + lane) * n + j] = sm100_emu_f32(r[j]);
        }
    return 0;
}

typedef struct layout_t {
    int d, bf16, st;
    uint32_t q_s, k_s, v_s; /* tile addresses as the kernel computes them */
} layout_t;

/* S_t = Q_t K^T through the kernel's descriptors; mutate(kk, &adesc, &bdesc, &idesc) may break one. */
typedef void (*mutate_fn)(uint64_t *a, uint64_t *b, uint32_t *id);
static int emulate_s(const layout_t *L, int t, int slot, mutate_fn mut)
{
    const uint32_t q = L->q_s + (uint32_t)(t * PA_SM100_BM * L->d * 2), k = L->k_s + (uint32_t)(slot * PA_SM100_KVBYTES(L->d));
    for (int kk = 0; kk < L->d / 16; ++kk) {
        uint64_t a = sm100_desc_kmajor(q, PA_SM100_BM, kk), b = sm100_desc_kmajor(k, PA_SM100_BN, kk);
        uint32_t id = sm100_idesc_f16(L->bf16, PA_SM100_BM, PA_SM100_BN, 0, 0);
        if (mut) mut(&a, &b, &id);
        const int e = sm100_emu_mma_f16(tmem, smem, SMEM_SIZE, sm100_taddr(0, 0, PA_SM100_S_COL(t)), 0, a, 0, b, id, kk > 0);
        if (e) return e;
    }
    return 0;
}
static int emulate_pv(const layout_t *L, int t, int slot, mutate_fn mut)
{
    const uint32_t v = L->v_s + (uint32_t)(slot * PA_SM100_KVBYTES(L->d));
    for (int ks = 0; ks < PA_SM100_BN / 16; ++ks) {
        uint64_t a = 0, b = sm100_desc_v(v, PA_SM100_BN, ks);
        uint32_t id = sm100_idesc_f16(L->bf16, PA_SM100_BM, L->d, 0, 1);
        if (mut) mut(&a, &b, &id);
        const int e = sm100_emu_mma_f16(tmem, smem, SMEM_SIZE, sm100_taddr(0, 0, PA_SM100_O_COL(L->d, t)), 1, 0,
                                        sm100_taddr(0, 0, PA_SM100_S_COL(t) + ks * 8), b, id, ks > 0);
        if (e) return e;
    }
    return 0;
}

static void bad_sbo(uint64_t *a, uint64_t *b, uint32_t *id) { (void)b, (void)id; *a = (*a & ~(0x3FFFull << 32)) | ((512ull >> 4) << 32); }
static void bad_swizzle(uint64_t *a, uint64_t *b, uint32_t *id) { (void)a, (void)id; *b = (*b & ~(7ull << 61)) | ((uint64_t)PA_SM100_SW_64B << 61); }
static void bad_major_s(uint64_t *a, uint64_t *b, uint32_t *id) { (void)a, (void)b; *id |= 1u << 16; }
static void bad_lbo(uint64_t *a, uint64_t *b, uint32_t *id) { (void)a, (void)id; *b = (*b & ~(0x3FFFull << 16)) | ((uint64_t)((64 * 128) >> 4) << 16); }
static void bad_major_pv(uint64_t *a, uint64_t *b, uint32_t *id) { (void)a, (void)b; *id &= ~(1u << 16); }
static void bad_reserved(uint64_t *a, uint64_t *b, uint32_t *id) { (void)a, (void)b; *id |= 1u << 23; }
static void bad_version(uint64_t *a, uint64_t *b, uint32_t *id) { (void)b, (void)id; *a &= ~(3ull << 46); }

/* A deliberate mistake is caught when the emulator refuses it or the result is wrong. */
static void expect_caught(const char *what, int err, double e, double tol)
{
    const int caught = err != 0 || !(e <= tol);
    printf("  %-58s %s (%s)\n", what, caught ? "caught" : "NOT CAUGHT",
           err ? "emulator error" : caught ? "wrong result" : "result matched");
    if (!caught) failures++;
}

static void run_layout(int d, int bf16)
{
    layout_t L = {d, bf16, PA_SM100_STAGES(d), 0, 0, 0};
    /* the kernel's shared-memory map (sm100_fwd_kernel.cuh): Q tiles, then K slots, then V slots */
    L.q_s = 0, L.k_s = L.q_s + PA_SM100_QBYTES(d), L.v_s = L.k_s + (uint32_t)(L.st * PA_SM100_KVBYTES(d));
    const int M = PA_SM100_BM, N = PA_SM100_BN, slot = L.st - 1; /* the last slot: the largest offsets */
    uint16_t *q = malloc(sizeof(uint16_t) * 2 * M * d), *k = malloc(sizeof(uint16_t) * N * d), *v = malloc(sizeof(uint16_t) * N * d);
    double *want = malloc(sizeof(double) * M * (N > d ? N : d));
    float *got = malloc(sizeof(float) * M * (N > d ? N : d));
    uint16_t *p16 = malloc(sizeof(uint16_t) * M * N);
    for (int i = 0; i < 2 * M * d; ++i) q[i] = to16(frand(), bf16);
    for (int i = 0; i < N * d; ++i) k[i] = to16(frand(), bf16), v[i] = to16(frand(), bf16);
    memset(smem, 0xFF, sizeof smem); /* NaN-like fill: a read outside the tiles shows */
    for (int t = 0; t < 2; ++t) tma_tile(L.q_s + (uint32_t)(t * M * d * 2), q + (size_t)t * M * d, M, d);
    tma_tile(L.k_s + (uint32_t)(slot * PA_SM100_KVBYTES(d)), k, N, d);
    tma_tile(L.v_s + (uint32_t)(slot * PA_SM100_KVBYTES(d)), v, N, d);
    printf("d%d %s (slot %d of %d):\n", d, bf16 ? "bf16" : "f16", slot, L.st);

    /* S_t = Q_t K^T for both tiles */
    const double tol = 1e-4 * d;
    for (int t = 0; t < 2; ++t) {
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                double s = 0;
                for (int c = 0; c < d; ++c) s += (double)from16(q[((size_t)t * M + m) * d + c], bf16) * from16(k[(size_t)n * d + c], bf16);
                want[m * N + n] = s;
            }
        int e = emulate_s(&L, t, slot, NULL);
        if (!e) e = read_tile(t, PA_SM100_S_COL(t), N, got);
        const double err = e ? INFINITY : max_err(got, want, M * N);
        printf("  S%d = Q%d K^T: emulator %d, max error %.3g (tol %.3g)\n", t, t, e, err, tol);
        if (e || !(err <= tol)) failures++;
    }
    /* P_1 (16-bit, packed pairs: key 2c low, 2c + 1 high) written over S_1's first 64 columns by the
     * warps of softmax group 1 with tcgen05.st.32x32b, then O_1 = P_1 V. */
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) p16[m * N + n] = to16(exp2f(0.25f * (float)want[m * N + n]), bf16);
    int e = 0;
    for (int w = 0; w < 4 && !e; ++w)
        for (int lane = 0; lane < 32 && !e; ++lane) {
            uint32_t r[64];
            const int m = 32 * w + lane;
            for (int c = 0; c < 64; ++c) r[c] = (uint32_t)p16[m * N + 2 * c] | ((uint32_t)p16[m * N + 2 * c + 1] << 16);
            e = sm100_emu_st_32x32b(tmem, 4 + w, lane, sm100_taddr(0, 32 * w, PA_SM100_S_COL(1)), 64, r);
        }
    for (int m = 0; m < M; ++m)
        for (int c = 0; c < d; ++c) {
            double o = 0;
            for (int n = 0; n < N; ++n) o += (double)from16(p16[m * N + n], bf16) * from16(v[(size_t)n * d + c], bf16);
            want[m * d + c] = o;
        }
    if (!e) e = emulate_pv(&L, 1, slot, NULL);
    if (!e) e = read_tile(1, PA_SM100_O_COL(d, 1), d, got);
    const double tol_o = 1e-5 * 256 * N; /* P up to 2^8 with the lagging max */
    double err = e ? INFINITY : max_err(got, want, M * d);
    printf("  O1 = P1 V (A from TMEM): emulator %d, max error %.3g (tol %.3g)\n", e, err, tol_o);
    if (e || !(err <= tol_o)) failures++;

    /* Deliberate mistakes. S checks recompute S_0 against Q_0 K^T. */
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double s = 0;
            for (int c = 0; c < d; ++c) s += (double)from16(q[(size_t)m * d + c], bf16) * from16(k[(size_t)n * d + c], bf16);
            want[m * N + n] = s;
        }
    static const struct { const char *what; mutate_fn f; } s_bad[] = {
        {"S: Q descriptor SBO 512 instead of 1024", bad_sbo},
        {"S: K descriptor 64-byte swizzle instead of 128-byte", bad_swizzle},
        {"S: instruction descriptor says K is MN-major", bad_major_s},
        {"S: reserved instruction-descriptor bit 23 set", bad_reserved},
        {"S: Q descriptor without the tcgen05 version bits", bad_version},
    };
    for (size_t i = 0; i < sizeof s_bad / sizeof s_bad[0]; ++i) {
        e = emulate_s(&L, 0, slot, s_bad[i].f);
        if (!e) e = read_tile(0, PA_SM100_S_COL(0), N, got);
        expect_caught(s_bad[i].what, e, e ? 0 : max_err(got, want, M * N), tol);
    }
    for (int m = 0; m < M; ++m)
        for (int c = 0; c < d; ++c) {
            double o = 0;
            for (int n = 0; n < N; ++n) o += (double)from16(p16[m * N + n], bf16) * from16(v[(size_t)n * d + c], bf16);
            want[m * d + c] = o;
        }
    if (d > 64) { /* LBO only matters when N spans more than one 64-column block */
        e = emulate_pv(&L, 1, slot, bad_lbo);
        if (!e) e = read_tile(1, PA_SM100_O_COL(d, 1), d, got);
        expect_caught("PV: V descriptor LBO 8 KB instead of BN x 128 bytes", e, e ? 0 : max_err(got, want, M * d), tol_o);
    }
    e = emulate_pv(&L, 1, slot, bad_major_pv);
    if (!e) e = read_tile(1, PA_SM100_O_COL(d, 1), d, got);
    expect_caught("PV: instruction descriptor says V is K-major", e, e ? 0 : max_err(got, want, M * d), tol_o);
    /* warp 5 (quadrant 1) reading lanes 0-31, which belong to quadrant 0 */
    uint32_t r[32];
    e = sm100_emu_ld_32x32b(tmem, 5, 0, sm100_taddr(0, 0, PA_SM100_O_COL(d, 1)), 32, r);
    expect_caught("tcgen05.ld by warp 5 of lanes 0-31 (quadrant rule)", e, 0, 0);
    e = sm100_emu_st_32x32b(tmem, 2, 0, sm100_taddr(0, 96, 0), 32, r);
    expect_caught("tcgen05.st by warp 2 of lanes 96-127 (quadrant rule)", e, 0, 0);
    free(q), free(k), free(v), free(want), free(got), free(p16);
}

/* sm100_exp2_fma, the sm_100a path's exponential on the FMA pipe, against exp2 in double: the
 * relative error over the kernel's argument range, and ex2.approx.ftz's special values. */
static void check_exp2_fma(void)
{
    double worst = 0, at = 0;
    for (int i = 0; i <= 4000000; ++i) {
        const float x = -126.f + 134.f * (float)i / 4000000.f; /* [-126, 8] */
        const double want = exp2((double)x), rel = fabs(sm100_exp2_fma(x) - want) / want;
        if (rel > worst) worst = rel, at = x;
    }
    const float nan = NAN;
    const int specials = sm100_exp2_fma(-INFINITY) == 0.f && sm100_exp2_fma(-126.5f) == 0.f && isnan(sm100_exp2_fma(nan)) &&
                         sm100_exp2_fma(0.f) >= 1.f && sm100_exp2_fma(0.f) < 1.00001f && sm100_exp2_fma(3.f) > 7.9999f &&
                         sm100_exp2_fma(3.f) < 8.0001f;
    printf("%s exp2 on the FMA pipe: max relative error %.2e (at %g; bound 4e-6), -inf -> 0, NaN -> NaN: %s\n",
           worst <= 4e-6 && specials ? "ok  " : "FAIL", worst, at, specials ? "yes" : "no");
    failures += !(worst <= 4e-6 && specials);
}

int main(void)
{
    check_exp2_fma();
    /* the kernel's descriptors decode to what the kernel means */
    sm100_idesc_t id;
    sm100_sdesc_t sd;
    int e = sm100_emu_idesc(sm100_idesc_f16(1, 128, 128, 0, 1), &id);
    if (e || id.m != 128 || id.n != 128 || !id.bf16 || id.a_mn || !id.b_mn || !id.c_f32) {
        printf("FAIL: instruction descriptor round trip\n");
        failures++;
    }
    e = sm100_emu_sdesc(sm100_desc_v(0x8000, 128, 3), &sd);
    if (e || sd.start != 0x8000 + 3 * 2048 || sd.lbo != 128 * 128 || sd.sbo != 1024 || sd.swizzle_bytes != 128) {
        printf("FAIL: shared-memory descriptor round trip\n");
        failures++;
    }
    for (int d = 64; d <= 128; d += 64)
        for (int bf16 = 0; bf16 < 2; ++bf16) run_layout(d, bf16);
    if (failures) printf("test_sm100_emu: %d FAILED\n", failures);
    else printf("test_sm100_emu: all passed\n");
    return failures ? 1 : 0;
}
