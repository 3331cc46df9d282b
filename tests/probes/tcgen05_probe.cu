/* tcgen05_probe: runs each tcgen05 operation the cuda-sm100 kernel uses on a B200/B300 (sm_100a or
 * sm_103a) and compares the result bit for bit with the project's exact model of it
 * (backends/cuda/sm100/sm100_tc_emu.h, run on the CPU here), on which cuda-sm100's T3 rests:
 *   TMEM alloc (the base address), tcgen05.st/ld 32x32b.x32 (a round trip through every lane),
 *   tcgen05.mma kind::f16 SS (A and B from shared memory, K-major, 128-byte swizzle, 4 k-steps)
 *   and TS (A from TMEM), in f16 and bf16, and on sm_103a tcgen05.ld.red max.
 * Operands are random 16-bit values with zeros and subnormals mixed in. Built with the kernel's own
 * wrappers (sm100_ptx.cuh) and descriptors (sm100_desc.h).
 * usage: tcgen05_probe [RESULTS_FILE] [TRIALS]   exit 0 all equal, 1 a difference, 77 no sm_100/103 GPU */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include "sm100_desc.h"
#include "sm100_ptx.cuh"
#include "sm100_tc_emu.h"

#define TILE_BYTES (128 * 128) /* 128 rows of 64 16-bit elements, K-major, 128-byte swizzle */
#define SMEM_BYTES (2 * TILE_BYTES + 1024 + 64)
#define WORDS 32                /* st/ld: one x32 register set a thread */
#define N_OUT (WORDS + 128 + 128 + WORDS + 1) /* per thread: st/ld, SS result row, TS result row, ld.red */

/* meta[0]: TMEM base from alloc; meta[1]: shared address of the A tile (B follows at + TILE_BYTES). */
template <bool BF16>
__global__ void __launch_bounds__(128) probe(const uint8_t *tiles, const uint32_t *words, uint32_t *out, uint32_t *meta)
{
#ifdef PA_SM100_NATIVE
    extern __shared__ uint8_t raw[];
    const uint32_t raw_addr = pa_smem_u32(raw), base_addr = (raw_addr + 1023u) & ~1023u;
    uint8_t *tiles_s = raw + (base_addr - raw_addr);
    const uint32_t a_addr = base_addr, b_addr = base_addr + TILE_BYTES, bar = base_addr + 2 * TILE_BYTES,
                   slot = bar + 8;
    const int t = threadIdx.x, warp = t / 32;
    for (int i = t; i < 2 * TILE_BYTES / 16; i += 128) ((uint4 *)tiles_s)[i] = ((const uint4 *)tiles)[i];
    pa_fence_proxy_async(); /* generic-proxy writes seen by the tensor core */
    if (warp == 0) sm100_tmem_alloc(slot, 512);
    if (t == 0) pa_bar_init(bar, 1), pa_bar_init_fence();
    sm100_fence_before();
    __syncthreads();
    sm100_fence_after();
    const uint32_t tmem = *(volatile uint32_t *)(tiles_s + 2 * TILE_BYTES + 8);
    if (t == 0) meta[0] = tmem, meta[1] = a_addr;
    uint32_t *o = out + (size_t)t * N_OUT;
    const uint32_t lane_base = sm100_taddr(tmem, 32 * warp, 0);

    /* st/ld round trip at columns 256..287; the same words are the TS probe's A (columns 256..263) */
    uint32_t r[32];
    for (int j = 0; j < 32; ++j) r[j] = words[t * WORDS + j];
    sm100_st32(lane_base + 256, r);
    sm100_wait_st();
    sm100_ld32(lane_base + 256, r);
    sm100_wait_ld();
    for (int j = 0; j < 32; ++j) o[j] = r[j];
    sm100_fence_before();
    __syncthreads();
    sm100_fence_after();

    const uint32_t idesc = sm100_idesc_f16(BF16, 128, 128, 0, 0);
    if (t == 0) { /* SS into columns 0..127, then TS into 128..255, one commit each */
        for (int kk = 0; kk < 4; ++kk)
            sm100_mma_ss(sm100_taddr(tmem, 0, 0), sm100_desc_kmajor(a_addr, 128, kk), sm100_desc_kmajor(b_addr, 128, kk), idesc, kk > 0);
        sm100_commit(bar);
    }
    pa_bar_wait(bar, 0);
    sm100_fence_after();
    if (t == 0) {
        for (int kk = 0; kk < 4; ++kk)
            sm100_mma_ts(sm100_taddr(tmem, 0, 128), sm100_taddr(tmem, 0, 256 + 8 * kk), sm100_desc_kmajor(b_addr, 128, kk), idesc, kk > 0);
        sm100_commit(bar);
    }
    pa_bar_wait(bar, 1);
    sm100_fence_after();
    for (int c = 0; c < 8; ++c) {
        sm100_ld32(lane_base + 32 * c, r);
        sm100_wait_ld();
        for (int j = 0; j < 32; ++j) o[WORDS + 32 * c + j] = r[j];
    }
#ifdef PA_SM100_HAVE_LD_RED
    float mx;
    sm100_ld32_max(lane_base, r, mx);
    sm100_wait_ld();
    for (int j = 0; j < 32; ++j) o[WORDS + 256 + j] = r[j];
    o[WORDS + 256 + 32] = __float_as_uint(mx);
#endif
    sm100_fence_before();
    __syncthreads();
    sm100_fence_after();
    if (warp == 0) sm100_tmem_dealloc(tmem, 512);
#else
    (void)tiles, (void)words, (void)out, (void)meta;
#endif
}

static uint16_t operand(std::mt19937 &rng, bool bf16)
{
    const uint32_t r = rng(), sign = (r >> 31) << 15;
    if (r % 16 == 0) return (uint16_t)sign;
    if (r % 16 == 1) return (uint16_t)(sign | ((r >> 8) & (bf16 ? 0x7fu : 0x3ffu)) | 1u);
    const float x = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
    uint32_t u;
    memcpy(&u, &x, 4);
    if (bf16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    const __half h = __float2half_rn(x);
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}

/* One trial in one dtype; returns the number of differing words (and prints the first few). */
template <bool BF16> static long trial(std::mt19937 &rng, bool ld_red, FILE *res)
{
    std::vector<uint8_t> tiles(2 * TILE_BYTES);
    std::vector<uint32_t> words(128 * WORDS), out(128 * N_OUT, 0xffffffffu), meta(2);
    for (size_t i = 0; i < tiles.size(); i += 2) {
        const uint16_t h = operand(rng, BF16);
        memcpy(&tiles[i], &h, 2);
    }
    for (auto &w : words) w = operand(rng, BF16) | (uint32_t)operand(rng, BF16) << 16;
    uint8_t *d_tiles;
    uint32_t *d_words, *d_out, *d_meta;
    cudaMalloc(&d_tiles, tiles.size()), cudaMalloc(&d_words, words.size() * 4), cudaMalloc(&d_out, out.size() * 4);
    cudaMalloc(&d_meta, 8);
    cudaMemcpy(d_tiles, tiles.data(), tiles.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_words, words.data(), words.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_out, out.data(), out.size() * 4, cudaMemcpyHostToDevice);
    cudaFuncSetAttribute(probe<BF16>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    probe<BF16><<<1, 128, SMEM_BYTES>>>(d_tiles, d_words, d_out, d_meta);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(meta.data(), d_meta, 8, cudaMemcpyDeviceToHost);
    cudaFree(d_tiles), cudaFree(d_words), cudaFree(d_out), cudaFree(d_meta);
    if (e != cudaSuccess) {
        printf("  the probe kernel failed: %s\n", cudaGetErrorString(e));
        return -1;
    }
    /* The model: TMEM and the shared window (tiles at the GPU's shared address), same descriptors. */
    std::vector<uint32_t> tm(SM100_TMEM_LANES * SM100_TMEM_COLS, 0);
    const uint32_t a_addr = meta[1], b_addr = a_addr + TILE_BYTES;
    std::vector<uint8_t> smem(a_addr + 2 * TILE_BYTES);
    memcpy(&smem[a_addr], tiles.data(), tiles.size());
    std::vector<uint32_t> want(128 * N_OUT, 0xffffffffu);
    int err = 0;
    for (int t = 0; t < 128; ++t) {
        const uint32_t ta = sm100_taddr(0, 32 * (t / 32), 256);
        err |= sm100_emu_st_32x32b(tm.data(), t / 32, t % 32, ta, 32, &words[t * WORDS]);
        err |= sm100_emu_ld_32x32b(tm.data(), t / 32, t % 32, ta, 32, &want[t * N_OUT]);
    }
    const uint32_t idesc = sm100_idesc_f16(BF16, 128, 128, 0, 0);
    for (int kk = 0; kk < 4; ++kk)
        err |= sm100_emu_mma_f16(tm.data(), smem.data(), (uint32_t)smem.size(), sm100_taddr(0, 0, 0), 0,
                                 sm100_desc_kmajor(a_addr, 128, kk), 0, sm100_desc_kmajor(b_addr, 128, kk), idesc, kk > 0);
    for (int kk = 0; kk < 4; ++kk)
        err |= sm100_emu_mma_f16(tm.data(), smem.data(), (uint32_t)smem.size(), sm100_taddr(0, 0, 128), 1, 0,
                                 sm100_taddr(0, 0, 256 + 8 * kk), sm100_desc_kmajor(b_addr, 128, kk), idesc, kk > 0);
    for (int t = 0; t < 128; ++t) {
        memcpy(&want[t * N_OUT + WORDS], &tm[(size_t)t * SM100_TMEM_COLS], 256 * 4);
        if (ld_red) {
            memcpy(&want[t * N_OUT + WORDS + 256], &tm[(size_t)t * SM100_TMEM_COLS], 32 * 4);
            float mx = -INFINITY;
            for (int j = 0; j < 32; ++j) mx = fmaxf(mx, sm100_emu_f32(tm[(size_t)t * SM100_TMEM_COLS + j]));
            want[t * N_OUT + WORDS + 288] = sm100_emu_bits(mx);
        }
    }
    if (err) {
        printf("  the model refused the probe's operands (error %d)\n", err);
        return -1;
    }
    static const char *const part[] = {"st/ld", "mma SS", "mma TS", "ld.red"};
    long bad = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == want[i]) continue;
        const int w = (int)(i % N_OUT), p = w < WORDS ? 0 : w < WORDS + 128 ? 1 : w < WORDS + 256 ? 2 : 3;
        if (bad++ < 8)
            printf("  %s %s thread %zu word %d: GPU %08x model %08x\n", BF16 ? "bf16" : "f16", part[p], i / N_OUT, w, out[i],
                   want[i]);
    }
    if (res) fprintf(res, "trial %s tmem_base %08x differing_words %ld\n", BF16 ? "bf16" : "f16", meta[0], bad);
    return bad;
}

int main(int argc, char **argv)
{
    int dev = 0, n = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    if (prop.major != 10 || (prop.minor != 0 && prop.minor != 3)) {
        printf("SKIP: %s is sm_%d%d; tcgen05 needs a B200/B300 (sm_100/sm_103)\n", prop.name, prop.major, prop.minor);
        return 77;
    }
    const bool ld_red = prop.minor == 3;
    const int trials = argc > 2 ? atoi(argv[2]) : 20;
    FILE *res = argc > 1 ? fopen(argv[1], "w") : NULL;
    printf("%s (sm_%d%d): tcgen05 alloc, st/ld, mma SS/TS f16+bf16%s against sm100_tc_emu.h, %d trials each\n", prop.name,
           prop.major, prop.minor, ld_red ? ", ld.red max" : "", trials);
    if (res) fprintf(res, "device %s\nsm %d%d\n", prop.name, prop.major, prop.minor);
    std::mt19937 rng(4321);
    long bad = 0;
    for (int i = 0; i < trials && bad >= 0; ++i) {
        const long f = trial<false>(rng, ld_red, res), b = f < 0 ? f : trial<true>(rng, ld_red, res);
        bad = f < 0 || b < 0 ? -1 : bad + f + b;
    }
    printf("%s\n", bad == 0 ? "bit-exact: the model matches the hardware on every probe"
                            : bad < 0 ? "FAILED to run" : "DIFFERS: the model does not match the hardware (see above)");
    if (res) fprintf(res, "result %s\n", bad == 0 ? "bit-exact" : bad < 0 ? "failed" : "differs"), fclose(res);
    return bad == 0 ? 0 : 1;
}
