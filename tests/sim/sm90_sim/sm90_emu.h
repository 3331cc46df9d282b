/* What the CPU simulations of cuda-sm90's kernels (test_sm90_sim: the forward; test_sm90_bwd_sim: the
 * backward) share: warp shuffles, votes and ballots through a per-warp table, the sm_90a primitives of
 * sm90_ptx.cuh, and wgmma as the hardware runs it (see test_sm90_sim.cpp). The includer defines
 * smem_raw and sim_fail() and includes sim_tma.h first. */
#pragma once
#include <math.h>
#include <string.h>

#include <deque>
#include <vector>

/* Faults of the wgmma half (sim_tma.h has the parity and swizzle ones). */
enum { INJ_NONE, INJ_PARITY, INJ_NO_SWIZZLE, INJ_LATE_WAIT, INJ_NO_LBO, INJ_A_ROWS };
static int inject = INJ_NONE;

/* ---- warp intrinsics: values exchanged through a per-warp table between two warp barriers -- */
static uint32_t lane_vals[32][32];
static uint32_t sim_exchange(uint32_t v, int src)
{
    const int w = threadIdx.x / 32;
    lane_vals[w][threadIdx.x % 32] = v;
    sim_sync_wave();
    const uint32_t r = lane_vals[w][src & 31];
    sim_sync_wave(); /* nobody overwrites a value before all have read */
    return r;
}
void __syncwarp(unsigned = 0xffffffffu) { sim_sync_wave(); }
float __shfl_xor_sync(unsigned, float v, int m) { return __uint_as_float(sim_exchange(__float_as_uint(v), (threadIdx.x % 32) ^ m)); }
uint32_t __shfl_xor_sync(unsigned, uint32_t v, int m) { return sim_exchange(v, (threadIdx.x % 32) ^ m); }
int __shfl_sync(unsigned, int v, int src) { return (int)sim_exchange((uint32_t)v, src); }
int __shfl_up_sync(unsigned, int v, int d)
{
    const int l = threadIdx.x % 32;
    return (int)sim_exchange((uint32_t)v, l >= d ? l - d : l);
}
unsigned __ballot_sync(unsigned, int pred)
{
    const int w = threadIdx.x / 32;
    lane_vals[w][threadIdx.x % 32] = pred != 0;
    sim_sync_wave();
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) m |= lane_vals[w][i] << i;
    sim_sync_wave();
    return m;
}
int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }

/* ---- sm_90a primitives (sm90_ptx.cuh's names) -------------------------------------------- */
static inline void sm90_wgmma_fence(void) {}
template <int R> static inline void sm90_setmaxnreg_inc(void) {}
template <int R> static inline void sm90_setmaxnreg_dec(void) {}
static inline void sm90_reg_fence(float &) {}
static inline void sm90_reg_fence(uint32_t &) {}
static inline void sm90_st_shared_zero16(uint32_t addr)
{
    if (addr % 16 || addr + 16 > sizeof smem_raw) sim_fail("st.shared.v4: misaligned or outside shared memory");
    else memset(smem_raw + addr, 0, 16);
}
static inline void sm90_st_shared32(uint32_t addr, uint32_t v)
{
    if (addr % 4 || addr + 4 > sizeof smem_raw) sim_fail("st.shared.b32: misaligned or outside shared memory");
    else memcpy(smem_raw + addr, &v, 4);
}
/* One OS thread runs every fiber: an atomic is a plain add between two of its switches. */
static inline float atomicAdd(float *p, float v)
{
    const float old = *p;
    *p = old + v;
    return old;
}
static inline void sm90_st_global16(void *p, uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3)
{
    if ((uintptr_t)p % 16) sim_fail("st.global.v4: address not 16-byte aligned");
    const uint32_t x[4] = {x0, x1, x2, x3};
    memcpy(p, x, 16);
}

/* ---- wgmma ------------------------------------------------------------------------------- */
/* both operands by descriptor (K-major); the same, D write-only; A from registers; both by descriptor,
 * MN-major (trans-a, trans-b) */
enum { WG_SS, WG_SS0, WG_RS, WG_SST };
struct wg_op {
    int kind, n, bf16, acc;
    uint64_t da, db;
    int issued = 0;
    bool done = false;
    float *d[128];
    bool chain[128];       /* the thread's D is the output of an earlier op still in flight */
    std::vector<float> din; /* [thread][n / 2]: the thread's D when it issued (unless chained) */
    uint32_t a[128][4];
};
struct wg_state {
    std::deque<wg_op> ops;
    long base = 0;                   /* sequence number of ops.front() */
    long next[128];                  /* per thread: the sequence number of its next wgmma */
    std::vector<long> ends[128];     /* per thread: the end of each group it committed */
    size_t retired[128];             /* per thread: groups its waits have retired */
    int waits1[128];                 /* per thread: wait_group 1 calls (a fault delays the first) */
};
static wg_state wgs[4];
static void wg_reset(void)
{
    for (wg_state &g : wgs) {
        g.ops.clear(), g.base = 0;
        for (int t = 0; t < 128; ++t) g.next[t] = 0, g.ends[t].clear(), g.retired[t] = 0, g.waits1[t] = 0;
    }
}

static float sim_h16(uint16_t h, int bf16) { return bf16 ? pa_bf16_to_f32(h) : pa_f16_to_f32(h); }
static uint16_t sim_smem16(uint32_t a)
{
    uint16_t v = 0;
    if (a + 2 > sizeof smem_raw) sim_fail("wgmma: operand outside shared memory");
    else memcpy(&v, smem_raw + sim_swz128(a), 2);
    return v;
}
/* A descriptor's fields (sm90_desc_sw128's encoding); only the 128-byte swizzle is used. */
struct sim_desc { uint32_t start, lbo, sbo; };
static sim_desc sim_decode(uint64_t d)
{
    if ((d >> 62) != 1 || ((d >> 49) & 7)) sim_fail("wgmma descriptor: not the 128-byte swizzle with base offset 0");
    return {(uint32_t)(d & 0x3FFF) << 4, (uint32_t)((d >> 16) & 0x3FFF) << 4, (uint32_t)((d >> 32) & 0x3FFF) << 4};
}
/* Element (row, k) of a K-major operand: 8-row groups sbo apart, rows 128 bytes apart, k contiguous. */
static uint32_t sim_kmajor(const sim_desc &s, int row, int k) { return s.start + (row / 8) * s.sbo + (row % 8) * 128 + k * 2; }

/* Element (k, mn) of an MN-major operand: rows of 64 MN-contiguous elements (128 bytes), K rows 128
 * bytes apart in 8-row groups SBO apart, 64-element MN blocks LBO apart. */
static uint32_t sim_mnmajor(const sim_desc &s, int k, int mn)
{
    const uint32_t lbo = inject == INJ_NO_LBO ? 0 : s.lbo;
    return s.start + (k / 8) * s.sbo + (k % 8) * 128 + (mn / 64) * lbo + (mn % 64) * 2;
}

/* Runs op o for its warpgroup: C = A B (64 x n, depth 16) into every thread's accumulators. */
static void wg_compute(wg_op &o)
{
    float A[64][16], B[16][256];
    if (o.kind == WG_RS) {
        for (int t = 0; t < 128; ++t) { /* the m16n8k16 A fragment of warp t / 32's 16 rows */
            const int r0 = 16 * (t / 32) + (t % 32) / 4, c0 = 2 * (t % 4);
            for (int i = 0; i < 4; ++i) {
                int r = r0 + 8 * (i & 1), c = c0 + 8 * (i >> 1);
                if (inject == INJ_A_ROWS) r = r0 + 8 * (i >> 1), c = c0 + 8 * (i & 1); /* fault: registers 1, 2 swapped */
                A[r][c] = sim_h16((uint16_t)o.a[t][i], o.bf16), A[r][c + 1] = sim_h16((uint16_t)(o.a[t][i] >> 16), o.bf16);
            }
        }
    } else {
        const sim_desc s = sim_decode(o.da);
        for (int r = 0; r < 64; ++r)
            for (int k = 0; k < 16; ++k)
                A[r][k] = sim_h16(sim_smem16(o.kind == WG_SST ? sim_mnmajor(s, k, r) : sim_kmajor(s, r, k)), o.bf16);
    }
    const sim_desc s = sim_decode(o.db);
    for (int k = 0; k < 16; ++k)
        for (int j = 0; j < o.n; ++j) {
            /* register-A form: B N-major (imm-trans-b), rows of 64 columns, column blocks LBO apart */
            const uint32_t a = o.kind == WG_RS || o.kind == WG_SST ? sim_mnmajor(s, k, j) : sim_kmajor(s, j, k);
            B[k][j] = sim_h16(sim_smem16(a), o.bf16);
        }
    const int h = o.n / 2;
    for (int t = 0; t < 128; ++t) {
        const int r0 = 16 * (t / 32) + (t % 32) / 4, c0 = 2 * (t % 4);
        for (int i = 0; i < h; ++i) {
            const int r = r0 + 8 * ((i % 4) >> 1), c = 8 * (i / 4) + c0 + (i & 1);
            float acc = 0.f;
            for (int k = 0; k < 16; ++k) acc += A[r][k] * B[k][c];
            const float in = o.kind == WG_SS0 || !o.acc ? 0.f : o.chain[t] ? o.d[t][i] : o.din[(size_t)t * h + i];
            o.d[t][i] = in + acc;
        }
    }
    o.done = true;
}

static void wg_issue(int kind, int n, int bf16, int acc, uint64_t da, uint64_t db, float *d, const uint32_t *a)
{
    const int t = threadIdx.x % 128;
    wg_state &g = wgs[threadIdx.x / 128];
    const long s = g.next[t]++;
    if (s - g.base == (long)g.ops.size()) {
        wg_op o;
        o.kind = kind, o.n = n, o.bf16 = bf16, o.acc = acc, o.da = da, o.db = db;
        o.din.assign((size_t)128 * (n / 2), 0.f);
        g.ops.push_back(std::move(o));
    }
    wg_op &o = g.ops[s - g.base];
    if (o.kind != kind || o.n != n || o.bf16 != bf16 || o.acc != acc || o.da != da || o.db != db)
        sim_fail("wgmma: the threads of a warpgroup issued different operations");
    o.d[t] = d, o.chain[t] = false;
    for (long p = g.base; p < s; ++p)
        if (!g.ops[p - g.base].done && g.ops[p - g.base].d[t] == d) o.chain[t] = true;
    if (!o.chain[t]) memcpy(&o.din[(size_t)t * (n / 2)], d, sizeof(float) * (n / 2));
    if (a) memcpy(o.a[t], a, 16);
    o.issued++;
}
static inline void sm90_wgmma_commit(void)
{
    wg_state &g = wgs[threadIdx.x / 128];
    g.ends[threadIdx.x % 128].push_back(g.next[threadIdx.x % 128]);
}
/* Retires every committed group of this thread but the newest N: each op in them runs once all 128
 * threads have issued it (the first waiter runs it for the warpgroup). */
template <int N> static void sm90_wgmma_wait(void)
{
    const int t = threadIdx.x % 128;
    wg_state &g = wgs[threadIdx.x / 128];
    int n = N;
    if (inject == INJ_LATE_WAIT && N == 1 && threadIdx.x / 128 == 1 && g.waits1[t]++ == 0) n = 2; /* fault */
    const long groups = (long)g.ends[t].size();
    if (groups - n <= (long)g.retired[t]) return;
    const long end = g.ends[t][groups - n - 1];
    /* (another thread of the warpgroup may run and drop ops while this one waits: s < g.base is done) */
    for (long s = g.base; s < end && !sim_dead; ++s) {
        while (s >= g.base && g.ops[s - g.base].issued < 128 && !sim_dead)
            if (sim_spin()) {
                sim_fail("deadlock: a wgmma.wait_group waits for a wgmma that not every thread of the warpgroup issued");
                sim_dead = true;
            }
        if (s >= g.base && !sim_dead && !g.ops[s - g.base].done) wg_compute(g.ops[s - g.base]);
    }
    g.retired[t] = (size_t)(groups - n);
    while (!g.ops.empty() && g.ops.front().done && g.ops.front().issued == 128) g.ops.pop_front(), g.base++;
}

template <int N> void sm90_wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc, __nv_bfloat16) { wg_issue(WG_SS, N, 1, acc, da, db, d, nullptr); }
template <int N> void sm90_wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int acc, __half) { wg_issue(WG_SS, N, 0, acc, da, db, d, nullptr); }
template <int N> void sm90_wgmma_ss0(float (&d)[N / 2], uint64_t da, uint64_t db, __nv_bfloat16) { wg_issue(WG_SS0, N, 1, 0, da, db, d, nullptr); }
template <int N> void sm90_wgmma_ss0(float (&d)[N / 2], uint64_t da, uint64_t db, __half) { wg_issue(WG_SS0, N, 0, 0, da, db, d, nullptr); }
template <int N> void sm90_wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int acc, __nv_bfloat16) { wg_issue(WG_RS, N, 1, acc, 0, db, d, a); }
template <int N> void sm90_wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int acc, __half) { wg_issue(WG_RS, N, 0, acc, 0, db, d, a); }
template <int N> void sm90_wgmma_sst(float (&d)[N / 2], uint64_t da, uint64_t db, int acc, __nv_bfloat16) { wg_issue(WG_SST, N, 1, acc, da, db, d, nullptr); }
template <int N> void sm90_wgmma_sst(float (&d)[N / 2], uint64_t da, uint64_t db, int acc, __half) { wg_issue(WG_SST, N, 0, acc, da, db, d, nullptr); }
