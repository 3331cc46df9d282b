/* sim_fiber.h */
#include "sim_fiber.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif
#ifdef SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

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
/* A fiber's stack: mapped once, committed as it is touched, a guard page under it (an overflow
 * faults instead of writing over the next stack). AddressSanitizer's frames are several times larger. */
#ifdef SIM_ASAN
enum { STACK = 4 << 20 };
#else
enum { STACK = 1 << 20 };
#endif
/* barrier slots: 0 the block, 1..32 the waves, then bar.sync ids 1..15 */
enum { WAVE_BARS = 32, NAMED_BARS = 16, MAX_BARS = 1 + WAVE_BARS + NAMED_BARS };
enum state { RUNNABLE, AT_BARRIER, SPINNING, DONE };

struct fiber {
#ifdef SIM_FAST_SWITCH
    void *sp = nullptr; /* its saved stack pointer (pa_sim_switch's frame) */
#else
    ucontext_t ctx;
#endif
    char *stack = nullptr; /* STACK bytes above the guard page */
    state st = RUNNABLE;
    int bar = -1;     /* the barrier it waits at */
    unsigned gen = 0; /* that barrier's generation when it arrived */
#ifdef SIM_ASAN
    void *fake = nullptr;
#endif
};
struct barrier { unsigned expected = 0, arrived = 0, gen = 0; };

#ifdef SIM_FAST_SWITCH
void *g_sched_sp;
#else
ucontext_t g_sched;
#endif
std::vector<fiber> g_f;
barrier g_bar[MAX_BARS];
int g_cur;
unsigned g_wave = 32;
bool g_progress, g_stalled, g_error;
unsigned g_order_seed, g_rng;
std::vector<unsigned> g_order;
void (*g_body)(void *);
void *g_arg;
#ifdef SIM_ASAN
void *g_sched_fake;
const void *g_sched_bottom;
size_t g_sched_size;
#endif

char *map_stack()
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || mprotect(p, page, PROT_NONE)) {
        fprintf(stderr, "sim_launch: no memory for a fiber stack\n");
        abort();
    }
    return (char *)p + page;
}

/* AddressSanitizer follows the switches between stacks (without this it sees a stack pointer jump
 * into foreign memory); a fiber's stack is unpoisoned when it restarts, since a fiber that ended or
 * was abandoned left its frames' redzones behind. */
void asan_enter_fiber(fiber &f)
{
#ifdef SIM_ASAN
    __sanitizer_start_switch_fiber(&g_sched_fake, f.stack, STACK);
#else
    (void)f;
#endif
}
void asan_back_in_scheduler()
{
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(g_sched_fake, nullptr, nullptr);
#endif
}
void asan_leave_fiber(fiber &f)
{
#ifdef SIM_ASAN
    __sanitizer_start_switch_fiber(f.st == DONE ? nullptr : &f.fake, g_sched_bottom, g_sched_size);
#else
    (void)f;
#endif
}
void asan_back_in_fiber(fiber &f)
{
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(f.fake, &g_sched_bottom, &g_sched_size);
#else
    (void)f;
#endif
}

void to_scheduler(fiber &f);

void fiber_main()
{
    fiber &f = g_f[g_cur];
    asan_back_in_fiber(f);
    g_body(g_arg);
    g_f[g_cur].st = DONE;
    to_scheduler(g_f[g_cur]); /* never resumed */
    abort();
}

#ifdef SIM_FAST_SWITCH
/* A new fiber's stack: pa_sim_switch's frame (MXCSR and control word at their defaults, six zero
 * registers) under fiber_main's address, which its ret jumps to with the stack aligned as at a call. */
void fiber_start(fiber &f)
{
    uintptr_t top = ((uintptr_t)f.stack + STACK) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 16); /* the return-address slot, 16-byte aligned */
    sp[1] = 0;
    sp[0] = (uint64_t)(uintptr_t)&fiber_main;
    sp -= 7;
    for (int i = 1; i < 7; ++i) sp[i] = 0;
    sp[0] = 0x1F80u | (uint64_t)0x037Fu << 32; /* MXCSR, x87 control word */
    f.sp = sp;
}
void to_fiber(fiber &f)
{
    asan_enter_fiber(f);
    pa_sim_switch(&g_sched_sp, f.sp);
    asan_back_in_scheduler();
}
void to_scheduler(fiber &f)
{
    asan_leave_fiber(f);
    pa_sim_switch(&f.sp, g_sched_sp);
    asan_back_in_fiber(f);
}
#else
void fiber_start(fiber &f)
{
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK;
    f.ctx.uc_link = nullptr; /* fiber_main never returns */
    makecontext(&f.ctx, fiber_main, 0);
}
void to_fiber(fiber &f)
{
    asan_enter_fiber(f);
    swapcontext(&g_sched, &f.ctx);
    asan_back_in_scheduler();
}
void to_scheduler(fiber &f)
{
    asan_leave_fiber(f);
    swapcontext(&f.ctx, &g_sched);
    asan_back_in_fiber(f);
}
#endif

void arrive(int b, unsigned expected)
{
    barrier &x = g_bar[b];
    fiber &f = g_f[g_cur];
    if (x.arrived == 0) x.expected = expected;
    if (x.expected != expected) {
        fprintf(stderr, "sim_launch: thread %u names %u threads at a barrier that %u threads wait at\n",
                threadIdx.x, expected, x.expected);
        g_error = true;
    }
    f.st = AT_BARRIER, f.bar = b, f.gen = x.gen;
    if (++x.arrived == x.expected) x.arrived = 0, ++x.gen;
    g_progress = true;
    to_scheduler(f);
}

void start_block(unsigned threads, unsigned wave)
{
    g_bar[0] = barrier{threads, 0, 0};
    for (int w = 0; w < WAVE_BARS; ++w) {
        const int n = (int)threads - w * (int)wave;
        g_bar[1 + w] = barrier{n <= 0 ? 0u : (n < (int)wave ? (unsigned)n : wave), 0, 0};
    }
    for (int i = 0; i < NAMED_BARS; ++i) g_bar[1 + WAVE_BARS + i] = barrier{};
    for (unsigned t = 0; t < threads; ++t) {
        fiber &f = g_f[t];
        f.st = RUNNABLE, f.bar = -1, f.gen = 0;
#ifdef SIM_ASAN
        __asan_unpoison_memory_region(f.stack, STACK);
        f.fake = nullptr;
#endif
        fiber_start(f);
    }
    g_stalled = false;
}

/* Round robin until every thread of the block is done: resume every fiber that is runnable,
 * spinning, or whose barrier has moved on. 0, or -1 after a deadlock or a barrier misuse. */
/* The visiting order of the next round under sim_order: a shuffle (xorshift32, Fisher-Yates). */
void next_order(unsigned threads)
{
    g_order.resize(threads);
    for (unsigned t = 0; t < threads; ++t) g_order[t] = t;
    for (unsigned t = threads - 1; t > 0; --t) {
        g_rng ^= g_rng << 13, g_rng ^= g_rng >> 17, g_rng ^= g_rng << 5;
        const unsigned u = g_rng % (t + 1), x = g_order[t];
        g_order[t] = g_order[u], g_order[u] = x;
    }
}

int run_block(unsigned threads)
{
    for (unsigned live = threads; live;) {
        bool resumed_waiter = false;
        unsigned spinning = 0;
        g_progress = false;
        live = 0;
        if (g_order_seed) next_order(threads);
        for (unsigned i = 0; i < threads && !g_error; ++i) {
            const unsigned t = g_order_seed ? g_order[i] : i;
            fiber &f = g_f[t];
            if (f.st == DONE) continue;
            ++live;
            if (f.st == AT_BARRIER && g_bar[f.bar].gen == f.gen) continue; /* still waiting */
            resumed_waiter |= f.st != SPINNING;
            spinning += f.st == SPINNING;
            f.st = RUNNABLE, f.bar = -1, g_cur = (int)t, threadIdx = {t, 0, 0};
            to_fiber(f);
            if (f.st == DONE) g_progress = true;
        }
        if (g_error) return -1;
        if (!live || resumed_waiter || g_progress) continue;
        if (spinning && !g_stalled) {
            g_stalled = true; /* the spinners see it, report and stop waiting */
            continue;
        }
        fprintf(stderr, "sim_launch: deadlock in block (%u,%u,%u): every live thread waits at a barrier "
                        "that some thread never reaches\n", blockIdx.x, blockIdx.y, blockIdx.z);
        return -1;
    }
    return 0;
}
} // namespace

void sim_sync_block() { arrive(0, g_bar[0].expected); }
void sim_sync_wave()
{
    const int w = (int)(threadIdx.x / g_wave);
    arrive(1 + w, g_bar[1 + w].expected);
}
/* A named barrier's id and count as bar.sync/bar.arrive allow them; else the launch fails. */
static bool named_ok(const char *op, int id, unsigned n)
{
    if (id >= 1 && id < NAMED_BARS && n != 0 && n % 32 == 0) return true;
    fprintf(stderr, "sim_launch: %s %d, %u is not a named barrier\n", op, id, n);
    g_error = true;
    to_scheduler(g_f[g_cur]);
    return false;
}
void sim_sync_named(int id, unsigned n)
{
    if (named_ok("bar.sync", id, n)) arrive(1 + WAVE_BARS + id, n);
}
void sim_arrive_named(int id, unsigned n)
{
    if (!named_ok("bar.arrive", id, n)) return;
    barrier &x = g_bar[1 + WAVE_BARS + id];
    if (x.arrived == 0) x.expected = n;
    if (x.expected != n) {
        fprintf(stderr, "sim_launch: thread %u names %u threads at a barrier that %u threads wait at\n",
                threadIdx.x, n, x.expected);
        g_error = true;
    }
    if (++x.arrived == x.expected) x.arrived = 0, ++x.gen;
    g_progress = true;
}
int sim_spin()
{
    fiber &f = g_f[g_cur];
    if (g_stalled) return 1;
    f.st = SPINNING;
    to_scheduler(f);
    return g_stalled;
}
void sim_progress() { g_progress = true; }
void sim_yield()
{
    fiber &f = g_f[g_cur];
    g_progress = true;
    f.st = SPINNING;
    to_scheduler(f);
}
void sim_order(unsigned seed) { g_order_seed = seed, g_rng = seed ? seed : 1; }

int sim_launch(sim_dim3 grid, unsigned threads, unsigned wave, void (*body)(void *), void *arg)
{
    return sim_launch_blocks(grid, threads, wave, nullptr, body, arg);
}

int sim_launch_blocks(sim_dim3 grid, unsigned threads, unsigned wave, void (*start)(void *), void (*body)(void *),
                      void *arg)
{
    if (threads == 0 || threads > 1024 || (wave != 32 && wave != 64))
        return fprintf(stderr, "sim_launch: %u threads, wave %u\n", threads, wave), -1;
    g_body = body, g_arg = arg, gridDim = grid, blockDim = {threads, 1, 1}, g_wave = wave, g_error = false;
    if (g_f.size() < threads) g_f.resize(threads);
    for (unsigned t = 0; t < threads; ++t)
        if (!g_f[t].stack) g_f[t].stack = map_stack();
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                blockIdx = {x, y, z};
                if (start) start(arg);
                start_block(threads, wave);
                if (run_block(threads)) return -1;
            }
    return 0;
}
