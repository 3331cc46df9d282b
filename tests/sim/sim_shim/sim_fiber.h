/* One block of GPU threads as cooperative fibers on the calling OS thread, the runtime of every CPU
 * simulation of a kernel (sim_fiber.cpp's own context switch on x86-64, ucontext elsewhere). Each
 * fiber runs the kernel body until it reaches a barrier or a spin-wait; a barrier releases once every
 * thread it names has arrived, in an order a GPU gives no guarantee about beyond that. One OS thread
 * and no locks: a barrier costs a context switch per thread, not a futex wake-up, and a simulation
 * runs as fast beside a busy core as alone (a thread per GPU thread ran 4-14x slower there, each
 * barrier waiting for the OS to schedule every thread again). A barrier some threads never reach
 * (divergent __syncthreads, wrong counts) or a spin-wait nothing can end is reported, not a hang. */
#ifndef PORTATTN_SIM_FIBER_H
#define PORTATTN_SIM_FIBER_H

#include <cstdio>
#include <cstdlib>
#include <type_traits>

struct sim_dim3 { unsigned x, y, z; };
/* Set by the scheduler before it resumes a fiber. */
extern sim_dim3 threadIdx, blockIdx, gridDim, blockDim;

void sim_sync_block();                    /* __syncthreads */
void sim_sync_wave();                     /* the threads of the caller's wave (the launch's wave size) */
void sim_sync_named(int id, unsigned n);  /* bar.sync id, n: id 1..15, n threads (a multiple of 32) */
void sim_arrive_named(int id, unsigned n); /* bar.arrive id, n: counts this thread, does not wait */

/* A spin-wait's turn (an mbarrier wait, say): the others run, then this fiber again. Returns nonzero
 * once the block is stalled, every live thread spinning or at a barrier with nothing moving: the
 * caller reports its deadlock and stops waiting. A simulation calls sim_progress() wherever state a
 * spinning thread may wait for changes (an arrival, bytes landing). */
int sim_spin();
void sim_progress();
/* A turn for every other thread before this one goes on: what a GPU thread may observe of another's
 * step at once (an arrival) is then observed before the arriving thread's next step. */
void sim_yield();

/* The order the scheduler resumes fibers in, from the next launch on: 0 (the default) thread order
 * every round, else a pseudo-random order each round drawn from this seed, so that two runs of a
 * kernel whose result depends on how its threads interleave (atomics, a race) can differ. */
void sim_order(unsigned seed);

/* Runs body(arg) as every thread of every block of the grid (blocks one after another, threads
 * threadIdx.x = 0..threads-1), in waves of `wave` consecutive threads (32 CUDA, 64 CDNA, 32 RDNA3).
 * Returns 0, or -1 after a barrier deadlock (message on stderr). Not reentrant: one launch at a time
 * in the process. */
int sim_launch(sim_dim3 grid, unsigned threads, unsigned wave, void (*body)(void *), void *arg);
/* The same, with start(arg) called before each block's threads run (blockIdx set): state a block
 * begins with, such as garbage in shared memory. */
int sim_launch_blocks(sim_dim3 grid, unsigned threads, unsigned wave, void (*start)(void *), void (*body)(void *),
                      void *arg);

/* sim_launch with a callable, run as every thread: sim_run(grid, threads, 32, [&] { kernel(args); }). */
template <typename F> int sim_run(sim_dim3 grid, unsigned threads, unsigned wave, F &&f)
{
    using G = std::remove_reference_t<F>;
    return sim_launch(grid, threads, wave, [](void *p) { (*static_cast<G *>(p))(); }, (void *)&f);
}
/* sim_run for a test that cannot go on after a deadlock: it says so and exits with a failure. */
template <typename F> void sim_run_or_fail(sim_dim3 grid, unsigned threads, unsigned wave, F &&f)
{
    if (sim_run(grid, threads, wave, static_cast<F &&>(f))) {
        printf("FAIL: a launch deadlocked\n");
        exit(1);
    }
}
/* sim_launch_blocks with callables: start() before each block, body() as every thread of it. */
template <typename S, typename F> int sim_run_blocks(sim_dim3 grid, unsigned threads, unsigned wave, S &&start, F &&body)
{
    struct both { S &s; F &f; } b{start, body};
    return sim_launch_blocks(grid, threads, wave, [](void *p) { static_cast<both *>(p)->s(); },
                             [](void *p) { static_cast<both *>(p)->f(); }, &b);
}

#endif
