/* hip-generic's vocabulary (hipgen_kernel.h) on the CPU, for tests/sim/hip_fake (compiled with -D__CUDACC__
 * and its shim first): each wave is W consecutive fibers, and cross-lane values pass through a shared
 * array between wave barriers. Included by hipgen_kernel.h only; no AMD build compiles this folder. */
#ifndef PORTATTN_HIPGEN_VOCAB_EMU_H
#define PORTATTN_HIPGEN_VOCAB_EMU_H

/* The butterfly of W lanes as the hardware computes it: at stage o = W/2 .. 1 lane l's value becomes
 * op(its own, lane l ^ o's), in that operand order (lanes may end with sums rounded differently).
 * Every lane posts its value into a block-wide array (workgroups run one at a time: one array per
 * type); the wave's last lane to post computes the whole butterfly for all of its lanes (W log W
 * operations, where each lane replaying its own part took W - 1 each), and after a barrier every lane
 * reads its result; a second barrier keeps the arrays until all have. */
template <int W, typename V, typename Op> inline V pa_hipgen_butterfly(V x, Op op)
{
    static V lanes[1024], out[1024];
    static unsigned posted[1024 / W];
    const unsigned t = threadIdx.x, base = t & ~(unsigned)(W - 1), w = t / W;
    const unsigned n = blockDim.x - base < (unsigned)W ? blockDim.x - base : (unsigned)W; /* lanes of this wave */
    lanes[t] = x;
    if (++posted[w] == n) { /* fibers switch only at barriers: no other lane runs in between */
        posted[w] = 0;
        V v[W], nv[W];
        for (unsigned l = 0; l < (unsigned)W; ++l) v[l] = lanes[base + (l < n ? l : 0)];
        for (int o = W / 2; o > 0; o >>= 1) {
            for (unsigned l = 0; l < (unsigned)W; ++l) nv[l] = op(v[l], v[l ^ (unsigned)o]);
            for (unsigned l = 0; l < (unsigned)W; ++l) v[l] = nv[l];
        }
        for (unsigned l = 0; l < n; ++l) out[base + l] = v[l];
    }
    sim_sync_wave();
    const V r = out[t];
    sim_sync_wave();
    return r;
}
template <int W> inline float gen_max(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return fmaxf(a, b); }); }
template <int W> inline float gen_sum(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return a + b; }); }
template <int W> inline double gen_sum_d(double x) { return pa_hipgen_butterfly<W>(x, [](double a, double b) { return a + b; }); }
template <int W> inline int gen_any(int p) { return pa_hipgen_butterfly<W>(p != 0, [](int a, int b) { return a | b; }); }
template <int W> inline void gen_sync_warp() { sim_sync_wave(); }

#endif
