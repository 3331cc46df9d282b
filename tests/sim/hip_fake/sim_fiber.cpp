/* sim_fiber.h */
#include "sim_fiber.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

sim_dim3 threadIdx, blockIdx, gridDim, blockDim;

/* The switch between fibers. On x86-64 a few instructions: the callee-saved registers, MXCSR and
 * the x87 control word pushed on the current stack, the stack pointers swapped, the other side's
 * popped (the System V ABI leaves everything else to the caller). glibc's swapcontext also saves
 * the signal mask, one system call per switch: two thirds of a simulated launch's time went there.
 * Elsewhere, and where CET shadow stacks may be on (a ret into another fiber's frame would fault),
 * ucontext. */
#if defined(__x86_64__) && !(defined(__CET__) && (__CET__ & 2))
#define SIM_FAST_SWITCH 1
extern "C" void pa_sim_switch(void **save_sp, void *load_sp);
asm(R"(
    .text
    .p2align 4
    .globl pa_sim_switch
    .hidden pa_sim_switch
    .type pa_sim_switch, @function
pa_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size pa_sim_switch, .-pa_sim_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");
#endif

namespace {
enum { STACK = 256 * 1024, MAX_BARS = 1 + 1024 / 32 };

struct fiber {
#ifdef SIM_FAST_SWITCH
    void *sp = nullptr; /* its saved stack pointer (pa_sim_switch's frame) */
#else
    ucontext_t ctx;
#endif
    std::vector<char> stack;
    int bar = -1;      /* the barrier it waits at, -1 = runnable */
    unsigned gen = 0;  /* that barrier's generation when it arrived */
    bool done = false;
};
struct barrier { int expected = 0, arrived = 0; unsigned gen = 0; };

#ifdef SIM_FAST_SWITCH
void *g_sched_sp;
#else
ucontext_t g_sched;
#endif
std::vector<fiber> g_f;
barrier g_bar[MAX_BARS];
int g_cur;
unsigned g_wave = 64;
void (*g_body)(void *);
void *g_arg;

#ifdef SIM_FAST_SWITCH
void trampoline()
{
    g_body(g_arg);
    g_f[g_cur].done = true;
    void *dead;
    pa_sim_switch(&dead, g_sched_sp); /* never resumed */
    abort();
}

/* A new fiber's stack: pa_sim_switch's frame (MXCSR and control word at their defaults, six zero
 * registers) under trampoline's address, which its ret jumps to with the stack aligned as at a call. */
void fiber_start(fiber &f)
{
    uintptr_t top = ((uintptr_t)f.stack.data() + f.stack.size()) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 16); /* the return-address slot, 16-byte aligned */
    sp[1] = 0;
    sp[0] = (uint64_t)(uintptr_t)&trampoline;
    sp -= 7;
    for (int i = 1; i < 7; ++i) sp[i] = 0;
    sp[0] = 0x1F80u | (uint64_t)0x037Fu << 32; /* MXCSR, x87 control word */
    f.sp = sp;
}
void to_fiber(fiber &f) { pa_sim_switch(&g_sched_sp, f.sp); }
void to_scheduler(fiber &f) { pa_sim_switch(&f.sp, g_sched_sp); }
#else
void trampoline()
{
    g_body(g_arg);
    g_f[g_cur].done = true; /* uc_link returns to the scheduler */
}
void fiber_start(fiber &f)
{
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = &g_sched;
    makecontext(&f.ctx, trampoline, 0);
}
void to_fiber(fiber &f) { swapcontext(&g_sched, &f.ctx); }
void to_scheduler(fiber &f) { swapcontext(&f.ctx, &g_sched); }
#endif

void arrive(int b)
{
    barrier &x = g_bar[b];
    fiber &f = g_f[g_cur];
    f.bar = b, f.gen = x.gen;
    if (++x.arrived == x.expected) x.arrived = 0, ++x.gen;
    to_scheduler(f);
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
                    fiber_start(f);
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
                        to_fiber(f);
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
