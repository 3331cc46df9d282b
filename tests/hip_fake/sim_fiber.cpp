/* sim_fiber.h */
#include "sim_fiber.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

sim_dim3 threadIdx, blockIdx, gridDim, blockDim;

namespace {
enum { STACK = 256 * 1024, MAX_BARS = 1 + 1024 / 32 };

struct fiber {
    ucontext_t ctx;
    std::vector<char> stack;
    int bar = -1;      /* the barrier it waits at, -1 = runnable */
    unsigned gen = 0;  /* that barrier's generation when it arrived */
    bool done = false;
};
struct barrier { int expected = 0, arrived = 0; unsigned gen = 0; };

ucontext_t g_sched;
std::vector<fiber> g_f;
barrier g_bar[MAX_BARS];
int g_cur;
unsigned g_wave = 64;
void (*g_body)(void *);
void *g_arg;

void trampoline()
{
    g_body(g_arg);
    g_f[g_cur].done = true; /* uc_link returns to the scheduler */
}

void arrive(int b)
{
    barrier &x = g_bar[b];
    fiber &f = g_f[g_cur];
    f.bar = b, f.gen = x.gen;
    if (++x.arrived == x.expected) x.arrived = 0, ++x.gen;
    swapcontext(&f.ctx, &g_sched);
}
} // namespace

void sim_sync_block() { arrive(0); }
void sim_sync_wave() { arrive(1 + (int)(threadIdx.x / g_wave)); }

int sim_launch(sim_dim3 grid, unsigned threads, unsigned wave, void (*body)(void *), void *arg)
{
    if (threads == 0 || threads > 1024 || (wave != 32 && wave != 64))
        return fprintf(stderr, "sim_launch: %u threads, wave %u\n", threads, wave), -1;
    g_body = body, g_arg = arg, gridDim = grid, blockDim = {threads, 1, 1}, g_wave = wave;
    g_f.resize(threads);
    for (auto &f : g_f)
        if (f.stack.size() != STACK) f.stack.resize(STACK);
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                blockIdx = {x, y, z};
                g_bar[0] = barrier{(int)threads, 0, 0};
                for (int w = 0; w + 1 < MAX_BARS; ++w) {
                    const int first = w * (int)wave, n = (int)threads - first;
                    g_bar[1 + w] = barrier{n <= 0 ? 0 : (n < (int)wave ? n : (int)wave), 0, 0};
                }
                for (unsigned t = 0; t < threads; ++t) {
                    fiber &f = g_f[t];
                    f.bar = -1, f.gen = 0, f.done = false;
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack.data();
                    f.ctx.uc_stack.ss_size = f.stack.size();
                    f.ctx.uc_link = &g_sched;
                    makecontext(&f.ctx, trampoline, 0);
                }
                /* Round robin: resume every fiber that is runnable or whose barrier has moved on. */
                for (unsigned live = threads; live;) {
                    bool progress = false;
                    live = 0;
                    for (unsigned t = 0; t < threads; ++t) {
                        fiber &f = g_f[t];
                        if (f.done) continue;
                        ++live;
                        if (f.bar >= 0 && g_bar[f.bar].gen == f.gen) continue; /* still waiting */
                        f.bar = -1, g_cur = (int)t, threadIdx = {t, 0, 0};
                        swapcontext(&g_sched, &f.ctx);
                        progress = true;
                    }
                    if (live && !progress) {
                        fprintf(stderr, "sim_launch: deadlock in workgroup (%u,%u,%u): every live thread waits at a "
                                        "barrier that some thread never reaches\n", x, y, z);
                        return -1;
                    }
                }
            }
    return 0;
}
