/* hip-generic's vocabulary (hipgen_kernel.h) on the CPU, for tests/sim/hip_fake (compiled with -D__CUDACC__
 * and its shim first): each wave is W consecutive fibers, and cross-lane values pass through a shared
 * array between wave barriers. Included by hipgen_kernel.h only; no AMD build compiles this folder. */
#ifndef PORTATTN_HIPGEN_VOCAB_EMU_H
#define PORTATTN_HIPGEN_VOCAB_EMU_H

/* The butterfly of W lanes as the hardware computes it (lane l meets lane l ^ o, o = W/2 .. 1), with
 * one exchange: every lane's value through a block-wide array between two barriers of its wave
 * (workgroups run one at a time: one array per type). Each lane then computes only its own result:
 * u[j] stands for lane l ^ j, and stage o combines u[j] with u[j + o] (lane l ^ j ^ o) in the
 * hardware's operand order, W - 1 operations instead of replaying the whole butterfly. */
template <int W, typename V, typename Op> inline V pa_hipgen_butterfly(V x, Op op)
{
    static V lanes[1024];
    lanes[threadIdx.x] = x;
    sim_sync_wave();
    V u[W];
    const unsigned base = threadIdx.x & ~(unsigned)(W - 1), lane = threadIdx.x & (W - 1);
    for (unsigned j = 0; j < (unsigned)W; ++j) u[j] = lanes[base + (lane ^ j)];
    sim_sync_wave();
    for (int o = W / 2; o > 0; o >>= 1)
        for (int j = 0; j < o; ++j) u[j] = op(u[j], u[j + o]);
    return u[0];
}
template <int W> inline float gen_max(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return fmaxf(a, b); }); }
template <int W> inline float gen_sum(float x) { return pa_hipgen_butterfly<W>(x, [](float a, float b) { return a + b; }); }
template <int W> inline double gen_sum_d(double x) { return pa_hipgen_butterfly<W>(x, [](double a, double b) { return a + b; }); }
template <int W> inline int gen_any(int p) { return pa_hipgen_butterfly<W>(p != 0, [](int a, int b) { return a | b; }); }
template <int W> inline void gen_sync_warp() { sim_sync_wave(); }

#endif
