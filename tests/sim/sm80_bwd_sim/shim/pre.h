/* Included first (-include) by test_sm80_bwd_sim: the CUDA names and the sm_80 instructions
 * (sm80_ptx.cuh's wrappers) the cuda-sm80 backward kernels use, on the host. Each thread of a block is
 * a fiber (sim_fiber.h); __syncthreads is a barrier of the block; a warp-wide instruction (ldmatrix,
 * mma, shuffle) posts each lane's operands, meets the warp's barrier, computes the lane's result from
 * all the posts and meets it again. cp.async lands at once, or with sim_late_copies as late as the
 * hardware may land it: at the thread's next wait (the kernel's barriers must make both safe).
 * Shared memory is one array: the blocks of a launch run one after another. */
#pragma once
#include <atomic>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

/* The kernels' `extern __shared__ __align__(128) uint8_t smem[]` names the one array below, whose
 * definition carries the alignment: here __align__ is nothing. */
#define __align__(n)
/* float2, float4 and uint4 as this simulation has always had them: at their members' alignment. */
#define PA_SIM_VECTORS_UNALIGNED
#include "cuda_runtime.h" /* the names every simulation shares (tests/sim/sim_shim), fp16 and bf16 too */

#define SIM_SMEM_BYTES (232 * 1024)
alignas(128) inline uint8_t smem[SIM_SMEM_BYTES];

/* The lanes' posts, one set per warp of the block (32 warps at most). */
struct sim_warp {
    uint32_t addr[32], a[32][4], b[32][2];
    float f[32];
};
inline sim_warp sim_warps[32];
#define sim_cur_warp (&sim_warps[threadIdx.x / 32])

static inline unsigned sim_lane(void) { return threadIdx.x & 31; }

static inline float __shfl_xor_sync(unsigned, float x, int mask)
{
    sim_cur_warp->f[sim_lane()] = x;
    sim_sync_wave();
    const float r = sim_cur_warp->f[sim_lane() ^ (unsigned)mask];
    sim_sync_wave();
    return r;
}

static inline float atomicAdd(float *p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }

/* sm80_ptx.cuh, cuda_math.cuh and cuda_attr.cuh are replaced by what follows. */
#define PORTATTN_SM80_PTX_CUH
#define PORTATTN_CUDA_MATH_CUH
#define PORTATTN_CUDA_ATTR_CUH

static inline uint32_t sm80_smem_u32(const void *p) { return (uint32_t)((const uint8_t *)p - smem); }

struct sim_copy {
    uint32_t dst;
    const void *src;
    bool valid;
};
inline bool sim_late_copies;
/* Each thread's copies not landed yet. */
inline std::vector<sim_copy> sim_pending_of[1024];
#define sim_pending (sim_pending_of[threadIdx.x])

static inline void sim_land(const sim_copy &c)
{
    if (c.valid)
        memcpy(smem + c.dst, c.src, 16);
    else
        memset(smem + c.dst, 0, 16);
}
static inline void sm80_cp_async16(uint32_t dst, const void *src, bool valid)
{
    const sim_copy c = {dst, src, valid};
    if (sim_late_copies)
        sim_pending.push_back(c);
    else
        sim_land(c);
}
static inline void sm80_cp_async_commit(void) {}
/* Lands every pending copy: for N > 0 earlier than required, which the hardware may also do. */
template <int N>
static inline void sm80_cp_async_wait(void)
{
    for (const sim_copy &c : sim_pending) sim_land(c);
    sim_pending.clear();
}

static inline uint32_t sim_ld32(uint32_t addr)
{
    uint32_t v;
    memcpy(&v, smem + addr, 4);
    return v;
}
static inline uint32_t sim_ld16(uint32_t addr)
{
    uint16_t v;
    memcpy(&v, smem + addr, 2);
    return v;
}

/* Matrix i's row r comes from the address lane 8 i + r posted. Plain: lane l gets row l / 4, columns
 * 2 (l % 4) and + 1; transposed: rows 2 (l % 4) and + 1 of column l / 4. */
static inline void sim_ldsm(uint32_t r[4], uint32_t addr, bool trans)
{
    const unsigned l = sim_lane();
    sim_cur_warp->addr[l] = addr;
    sim_sync_wave();
    for (int i = 0; i < 4; ++i) {
        const uint32_t *rows = sim_cur_warp->addr + 8 * i;
        if (!trans)
            r[i] = sim_ld32(rows[l / 4] + (l % 4) * 4);
        else
            r[i] = sim_ld16(rows[2 * (l % 4)] + (l / 4) * 2) | sim_ld16(rows[2 * (l % 4) + 1] + (l / 4) * 2) << 16;
    }
    sim_sync_wave();
}
static inline void sm80_ldsm_x4(uint32_t r[4], uint32_t addr) { sim_ldsm(r, addr, false); }
static inline void sm80_ldsm_x4_trans(uint32_t r[4], uint32_t addr) { sim_ldsm(r, addr, true); }

static inline float sim_h(uint32_t bits, __half) { return pa_f16_to_f32((uint16_t)bits); }
static inline float sim_h(uint32_t bits, __nv_bfloat16) { return pa_bf16_to_f32((uint16_t)bits); }

/* d += a b, m16n8k16: A row-major 16 x 16 (a0: rows 0-7 k 0-7, a1: rows 8-15 k 0-7, a2: rows 0-7
 * k 8-15, a3: rows 8-15 k 8-15; lane g * 4 + t holds row g, k 2t and 2t + 1, the lower k in the
 * low half), B 16 x 8 (b0: k 0-7, b1: k 8-15; lane n * 4 + t holds column n, k 2t and 2t + 1). */
template <typename T>
static inline void sim_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, T tag)
{
    const unsigned l = sim_lane();
    memcpy(sim_cur_warp->a[l], a, 16);
    sim_cur_warp->b[l][0] = b0, sim_cur_warp->b[l][1] = b1;
    sim_sync_wave();
    const unsigned g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
        const unsigned row = g + 8 * (e >> 1), col = 2 * t + (e & 1);
        float s = 0.f;
        for (unsigned k = 0; k < 16; ++k) {
            const uint32_t areg = sim_cur_warp->a[(row % 8) * 4 + (k % 8) / 2][(row >= 8) + 2 * (k >= 8)];
            const uint32_t breg = sim_cur_warp->b[col * 4 + (k % 8) / 2][k >= 8];
            s += sim_h((k & 1) ? areg >> 16 : areg & 0xffff, tag) * sim_h((k & 1) ? breg >> 16 : breg & 0xffff, tag);
        }
        d[e] += s;
    }
    sim_sync_wave();
}
static inline void sm80_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __half tag)
{
    sim_mma(d, a, b0, b1, tag);
}
static inline void sm80_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __nv_bfloat16 tag)
{
    sim_mma(d, a, b0, b1, tag);
}

static inline uint32_t pa_pack(float lo, float hi, __half)
{
    return pa_f32_to_f16(lo) | (uint32_t)pa_f32_to_f16(hi) << 16;
}
static inline uint32_t pa_pack(float lo, float hi, __nv_bfloat16)
{
    return pa_f32_to_bf16(lo) | (uint32_t)pa_f32_to_bf16(hi) << 16;
}

static inline float pa_ex2(float x) { return exp2f(x); }

template <typename Kernel>
static cudaError_t pa_smem_optin_once(Kernel, int, int *) { return 1; }

/* Runs kernel(a) as every block of `grid` in turn, `threads` fibers each, over shared memory that
 * starts as garbage. Returns the failures it saw: a thread that ended a block with cp.async copies
 * never waited for (the kernel's bug), a launch that deadlocked. */
template <typename K, typename A>
[[nodiscard]] static int sim_launch(K kernel, sim_dim3 grid, int threads, const A &a)
{
    int failures = 0;
    memset(smem, 0xFF, sizeof smem);
    const int r = sim_run(grid, (unsigned)threads, 32, [&] {
        kernel(a);
        if (!sim_pending.empty()) {
            printf("FAIL: thread %u ended a block with %zu cp.async copies not waited for\n", threadIdx.x,
                   sim_pending.size());
            sim_pending.clear();
            failures++;
        }
    });
    if (r) {
        printf("FAIL: a launch deadlocked\n");
        failures++;
    }
    return failures;
}
