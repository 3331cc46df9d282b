/* cuda-sm80's paged prefill instances (sm80_fwd_kernel.cuh with PAGED) on the CPU, a fiber per GPU
 * thread (sim_fiber.h), ldmatrix, mma.sync and cp.async emulated (sm80_bwd_sim/shim/pre.h, fwd_pre.h): O and the
 * LSE of serving calls (packed queries over a paged cache: chunks, decodes, idle sequences, more queries
 * than keys) and of per-sequence KV-cache calls, against the CPU backend on the same inputs. Page sizes
 * 1, 16, 64 and 256 (tiles spanning pages, and pages holding several tiles), shuffled pools with unused
 * and shared pages, GQA/MQA, causal, windows, softcap, a negative scale, d64 and d128, f16 and bf16,
 * cp.async landing at once (f16) or at the wait (bf16). O is NaN-poisoned: every row must be written.
 * The GPU compiles the same kernel source; this checks its paged index math without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vector>

#include "portattn.h"
#include "sm80_fwd_kernel.cuh"

static int failures;

struct cfg {
    const char *name;
    int serve;              /* packed queries (cu_seqlens_q) over the cache; else sq per sequence */
    int b, sq, hq, hkv, d, page; /* page 0: contiguous per-sequence cache (seqused_k only) */
    int cap;                /* cache capacity seqlen_k */
    int causal, wl, wr;
    float softcap, scale;
    int q_len[6], k_len[6]; /* per sequence (serve: query tokens; both: cached keys) */
};

static const cfg cfgs[] = {
    /* chunk over a longer cache, a decode, an idle sequence, sq == sk, more queries than keys */
    {"serve_page16_gqa2_causal_d64", 1, 5, 0, 4, 2, 64, 16, 300, 1, -1, -1, 0, 0, {100, 1, 0, 37, 20},
     {300, 200, 50, 37, 5}},
    {"serve_page1_mqa_softcap_d128", 1, 4, 0, 4, 1, 128, 1, 160, 0, -1, -1, 8, 0, {70, 1, 130, 3}, {160, 90, 130, 3}},
    {"serve_page256_window_d64", 1, 3, 0, 2, 2, 64, 256, 600, 1, 40, -1, 0, 0, {150, 1, 64}, {600, 333, 64}},
    {"serve_page64_negscale_d128", 1, 3, 0, 4, 2, 128, 64, 400, 0, 30, 30, 0, -0.1f, {129, 65, 1}, {400, 131, 64}},
    {"kv_used_contig_causal_d128", 0, 3, 70, 4, 2, 128, 0, 200, 1, -1, -1, 0, 0, {0}, {200, 0, 45}},
    {"kv_page16_gqa4_d64", 0, 2, 40, 8, 2, 64, 16, 250, 0, -1, -1, 0, 0, {0}, {250, 17}},
};

static uint64_t rng_state;
static float urand()
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* 16-bit elements, 16-byte aligned, NaN-filled. */
struct buf {
    std::vector<unsigned char> mem;
    void *p;
    explicit buf(int64_t elems) : mem((size_t)elems * 2 + 16, 0xFF)
    {
        p = (void *)(((uintptr_t)mem.data() + 15) / 16 * 16);
    }
};

template <typename T, int D>
static void run_kernel(const sm80_args &a, int max_sq)
{
    constexpr int BM = PA_SM80_BM(D), NW = PA_SM80_WARPS(D), MT = BM / (16 * NW);
    const sim_dim3 grid = {(unsigned)((max_sq + BM - 1) / BM), (unsigned)(a.batch * a.heads), 1};
    failures += sim_launch(sm80_fwd<T, D, MT, PA_SM80_BN(D), NW, PA_SM80_STAGES(D), PA_SM80_MIN_CTAS(D), true>, grid, NW * 32, a);
}

static void run(const cfg &c, portattn_dtype_t dt)
{
    const int B = c.b, D = c.d, H = c.hq, HK = c.hkv;
    std::vector<int32_t> cuq(B + 1, 0), used(B);
    for (int b = 0; b < B; ++b) {
        cuq[b + 1] = cuq[b] + (c.serve ? c.q_len[b] : 0);
        used[b] = c.k_len[b];
    }
    const int SQ = c.serve ? cuq[B] : c.sq, nbq = c.serve ? 1 : B;
    int max_sq = c.serve ? 0 : c.sq;
    for (int b = 0; c.serve && b < B; ++b) max_sq = c.q_len[b] > max_sq ? c.q_len[b] : max_sq;

    /* The cache: a pool of pages (shuffled, page 1 unused, sequence 2's first page = sequence 0's when
     * both hold keys: then their first page_size keys are the same tokens), or one block per sequence. */
    const int pps = c.page ? (c.cap + c.page - 1) / c.page : 0, npages = c.page ? B * pps + 2 : 0;
    std::vector<int32_t> bt((size_t)(B * pps + 1), 0);
    for (int g = 0; g < B * pps; ++g) bt[g] = g;
    for (int g = B * pps - 1; g > 0; --g) {
        const int r = (int)((urand() + 1) * 0.5 * (g + 1)) % (g + 1);
        std::swap(bt[g], bt[r]);
    }
    for (int g = 0; g < B * pps; ++g) bt[g] += bt[g] >= 1;
    if (c.page && B > 2 && used[0] > 0 && used[2] > 0) bt[2 * pps] = bt[0];
    const int64_t kv_rows = c.page ? (int64_t)npages * c.page : (int64_t)B * c.cap;
    buf q((int64_t)nbq * SQ * H * D), k(kv_rows * HK * D), v(kv_rows * HK * D);
    buf o_ref((int64_t)nbq * SQ * H * D + 8), o((int64_t)nbq * SQ * H * D + 8);
    for (int64_t e = 0; e < (int64_t)nbq * SQ * H * D; ++e) pa_store_elem(dt, q.p, e, urand());
    for (int64_t e = 0; e < kv_rows * HK * D; ++e) {
        pa_store_elem(dt, k.p, e, urand());
        pa_store_elem(dt, v.p, e, urand());
    }
    std::vector<float> lse_ref((size_t)nbq * H * SQ + 1, NAN), lse((size_t)nbq * H * SQ + 1, NAN);

    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = dt, p.backend = PORTATTN_BACKEND_CPU, p.batch = B, p.seqlen_q = SQ, p.seqlen_k = c.cap;
    p.heads_q = H, p.heads_kv = HK, p.head_dim_qk = p.head_dim_v = D;
    const int64_t rows_per_block = c.page ? c.page : c.cap;
    p.q = {q.p, {(int64_t)SQ * H * D, (int64_t)H * D, D, 1}};
    p.k = {k.p, {rows_per_block * HK * D, (int64_t)HK * D, D, 1}};
    p.v = {v.p, {rows_per_block * HK * D, (int64_t)HK * D, D, 1}};
    p.o = {o_ref.p, {(int64_t)SQ * H * D, (int64_t)H * D, D, 1}};
    p.lse = lse_ref.data(), p.lse_stride[0] = (int64_t)H * SQ, p.lse_stride[1] = SQ, p.lse_stride[2] = 1;
    p.causal = c.causal, p.window_left = c.wl, p.window_right = c.wr, p.softcap = c.softcap, p.softmax_scale = c.scale;
    p.seqused_k = used.data();
    if (c.serve) p.cu_seqlens_q = cuq.data();
    if (c.page)
        p.block_table = bt.data(), p.block_table_stride = pps, p.page_size = c.page, p.num_pages = npages;
    if (portattn_forward(&p, NULL)) {
        printf("FAIL %s: CPU reference: %s\n", c.name, portattn_last_error());
        failures++;
        return;
    }

    /* The arguments as pa_fwd_fill_args and the paged launcher make them. */
    sm80_args a;
    memset(&a, 0, sizeof a);
    a.q = q.p, a.k = k.p, a.v = v.p, a.o = o.p, a.lse = lse.data();
    if (c.serve) a.cu_q = cuq.data();
    for (int i = 0; i < 3; ++i) {
        a.qs[i] = p.q.stride[i], a.ks[i] = p.k.stride[i], a.vs[i] = p.v.stride[i], a.os[i] = p.o.stride[i];
        a.ls[i] = p.lse_stride[i];
    }
    a.batch = B, a.heads = H, a.group = H / HK, a.dqk = a.dv = D, a.seqlen_q = SQ, a.seqlen_k = c.cap;
    a.wl = c.wl, a.wr = c.causal ? 0 : c.wr;
    const float scale = c.scale != 0 ? c.scale : (float)(1.0 / sqrt((double)D));
    const double log2e = 1.4426950408889634, cap = c.softcap;
    a.softcap = cap > 0, a.transform = a.softcap || scale < 0.f;
    a.mult = a.transform ? 1.f : (float)(scale * log2e);
    a.pre_mul = a.softcap ? (float)((double)scale / cap) : (float)(scale * log2e);
    a.post_mul = a.softcap ? (float)(cap * log2e) : 1.f;
    pa_kv_args &kv = a.kv;
    kv.qpack = 1;
    kv.seqused_k = used.data();
    if (c.page) {
        kv.block_table = bt.data(), kv.bt_stride = pps, kv.num_pages = npages;
        while ((1 << kv.page_shift) < c.page) kv.page_shift++;
    }
    sim_late_copies = dt == PORTATTN_DTYPE_BF16;
    if (dt == PORTATTN_DTYPE_F16)
        D == 64 ? run_kernel<__half, 64>(a, max_sq) : run_kernel<__half, 128>(a, max_sq);
    else
        D == 64 ? run_kernel<__nv_bfloat16, 64>(a, max_sq) : run_kernel<__nv_bfloat16, 128>(a, max_sq);

    /* P is rounded to the dtype before P V, as FlashAttention-2 does. */
    const double u = dt == PORTATTN_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
    double err = 0, mag = 0, lerr = 0;
    long long mism = 0;
    for (int64_t e = 0; e < (int64_t)nbq * SQ * H * D; ++e) {
        const double r = pa_load_elem(dt, o_ref.p, e), x = pa_load_elem(dt, o.p, e);
        if (isnan(r) || isnan(x)) {
            mism++;
            continue;
        }
        err = fmax(err, fabs(x - r)), mag = fmax(mag, fabs(r));
    }
    for (size_t i = 0; i + 1 < lse.size(); ++i) {
        if (isinf(lse_ref[i]) || isinf(lse[i])) {
            mism += lse_ref[i] != lse[i];
            continue;
        }
        const double d = fabs((double)lse[i] - lse_ref[i]);
        lerr = isnan(d) ? INFINITY : fmax(lerr, d);
    }
    const double bound = 8 * u * mag;
    const int ok = mism == 0 && err <= bound && mag > 0 && lerr <= 1e-3;
    failures += !ok;
    printf("%-4s %-30s %-4s %-5s O %.1e (bound %.1e, max %.1e) LSE %.1e%s\n", ok ? "ok" : "FAIL", c.name,
           dt == PORTATTN_DTYPE_F16 ? "f16" : "bf16", sim_late_copies ? "late" : "early", err, bound, mag, lerr,
           mism ? " NaN/inf MISMATCH" : "");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *env = getenv("PORTATTN_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    printf("seed %llu (rerun with PORTATTN_TEST_SEED=%llu)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed ? seed : 1;
    for (const cfg &c : cfgs) {
        if (argc > 1 && !strstr(c.name, argv[1])) continue;
        for (portattn_dtype_t dt : {PORTATTN_DTYPE_F16, PORTATTN_DTYPE_BF16}) run(c, dt);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
