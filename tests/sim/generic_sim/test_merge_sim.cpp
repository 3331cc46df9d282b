/* portattn_merge's CUDA kernel (cuda_merge_kernel.cuh) on the CPU, every lane a fiber (sim_fiber.h), with
 * grids smaller than the rows so that the grid-stride loop runs: every (o, o_part) dtype pair, BSHD,
 * BHSD and padded layouts, LSE layouts of both orders, LSEs with -inf on one side or both (the O there
 * NaN: it must not be read), NaN, and far apart. The result must be bitwise the host loop's
 * (portattn_merge on the CPU) on the same inputs: the same row formula in the same order, so any
 * difference is the kernel's indexing, its loop or its lane split. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "cuda_merge_kernel.cuh"
#include "half.h"
#include "portattn.h"

sim_warp sim_warps[32];

/* Every block in turn, its warps side by side. */
template <typename K>
static void sim_launch(K kernel, unsigned blocks, const portattn_merge_params_t &p)
{
    sim_run_or_fail({blocks, 1, 1}, MRG_THREADS, 32, [&] { kernel(p); });
}

template <typename TO>
static void run_kernel(const portattn_merge_params_t &p, portattn_dtype_t part, unsigned blocks)
{
    switch (part) {
    case PORTATTN_DTYPE_F32: sim_launch(pa_merge_kernel<TO, float>, blocks, p); break;
    case PORTATTN_DTYPE_F16: sim_launch(pa_merge_kernel<TO, __half>, blocks, p); break;
    default: sim_launch(pa_merge_kernel<TO, __nv_bfloat16>, blocks, p); break;
    }
}

static uint64_t rng_state;
static float urand()
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

struct shape {
    int64_t b, s, h, d;
    int layout; /* 0 BSHD, 1 BHSD, 2 padded BSHD (8 unused elements after each head) */
};

/* Strides of a [b, s, h, d] tensor in the given layout and its element count. */
static int64_t strides(const shape &sh, int layout, int64_t st[4])
{
    const int64_t dp = layout == 2 ? sh.d + 8 : sh.d;
    if (layout == 1) st[3] = 1, st[1] = dp, st[2] = sh.s * dp, st[0] = sh.h * sh.s * dp;
    else st[3] = 1, st[2] = dp, st[1] = sh.h * dp, st[0] = sh.s * sh.h * dp;
    return sh.b * sh.s * sh.h * dp;
}

static int run_case(const shape &sh, portattn_dtype_t to, portattn_dtype_t tp, unsigned blocks)
{
    portattn_merge_params_t p;
    portattn_merge_params_init(&p);
    p.dtype = to, p.dtype_part = tp, p.backend = PORTATTN_BACKEND_CPU;
    p.batch = sh.b, p.seqlen_q = sh.s, p.heads_q = sh.h, p.head_dim_v = sh.d;
    const int64_t no = strides(sh, sh.layout, p.o.stride), np = strides(sh, (sh.layout + 1) % 3, p.o_part.stride);
    const int64_t nl = sh.b * sh.h * sh.s;
    const size_t so = (size_t)pa_dtype_size(to), sp = (size_t)pa_dtype_size(tp);
    std::vector<unsigned char> o(no * so), op(np * sp), o_cpu;
    std::vector<float> lse(nl), lsep(nl), lse_cpu;
    for (int64_t i = 0; i < no; i++) pa_store_elem(to, o.data(), i, urand());
    for (int64_t i = 0; i < np; i++) pa_store_elem(tp, op.data(), i, urand());
    /* LSE [B, Hq, Sq] for o, [B, Sq, Hq] for o_part; a side at -inf gets NaN in its O row */
    p.lse_stride[0] = sh.h * sh.s, p.lse_stride[1] = sh.s, p.lse_stride[2] = 1;
    p.lse_part_stride[0] = sh.s * sh.h, p.lse_part_stride[1] = 1, p.lse_part_stride[2] = sh.h;
    for (int64_t b = 0; b < sh.b; b++)
        for (int64_t s = 0; s < sh.s; s++)
            for (int64_t h = 0; h < sh.h; h++) {
                float *l = &lse[b * p.lse_stride[0] + h * p.lse_stride[1] + s];
                float *lp = &lsep[b * p.lse_part_stride[0] + h + s * p.lse_part_stride[2]];
                const float u = urand();
                *l = 4 * urand(), *lp = 4 * urand();
                if (u < -0.8f) *l = -INFINITY;
                else if (u < -0.6f) *lp = -INFINITY;
                else if (u < -0.5f) *l = *lp = -INFINITY;
                else if (u < -0.45f) *lp = NAN;
                else if (u > 0.9f) *l += 40;
                const int64_t *os = p.o.stride, *ps = p.o_part.stride;
                for (int64_t d = 0; d < sh.d; d++) {
                    if (*l == -INFINITY) pa_store_elem(to, o.data(), b * os[0] + s * os[1] + h * os[2] + d, NAN);
                    if (*lp == -INFINITY) pa_store_elem(tp, op.data(), b * ps[0] + s * ps[1] + h * ps[2] + d, NAN);
                }
            }
    o_cpu = o, lse_cpu = lse;
    p.o.data = o_cpu.data(), p.o_part.data = op.data(), p.lse = lse_cpu.data(), p.lse_part = lsep.data();
    if (portattn_merge(&p, NULL)) return printf("FAIL host merge: %s\n", portattn_last_error()), 0;
    p.o.data = o.data(), p.lse = lse.data();
    switch (to) {
    case PORTATTN_DTYPE_F32: run_kernel<float>(p, tp, blocks); break;
    case PORTATTN_DTYPE_F16: run_kernel<__half>(p, tp, blocks); break;
    default: run_kernel<__nv_bfloat16>(p, tp, blocks); break;
    }
    const int ok = o == o_cpu && !memcmp(lse.data(), lse_cpu.data(), sizeof(float) * (size_t)nl);
    printf("%-4s o %-4s o_part %-4s B%lld S%lld H%lld D%lld layout %d, %u blocks\n", ok ? "ok" : "FAIL",
           pa_dtype_name(to), pa_dtype_name(tp), (long long)sh.b, (long long)sh.s, (long long)sh.h, (long long)sh.d,
           sh.layout, blocks);
    return ok;
}

int main()
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    const uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed | 1;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    const shape shapes[] = {{2, 7, 3, 40, 0}, {1, 9, 2, 96, 1}, {3, 5, 4, 8, 2}, {1, 3, 1, 200, 0}};
    const portattn_dtype_t dts[3] = {PORTATTN_DTYPE_F32, PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16};
    int passed = 0, failed = 0;
    for (const shape &sh : shapes)
        for (auto to : dts)
            for (auto tp : dts) {
                const unsigned blocks = 1 + (unsigned)(sh.b * sh.s) % 3; /* fewer warps than rows */
                run_case(sh, to, tp, blocks) ? passed++ : failed++;
            }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
