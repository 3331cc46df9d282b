/* One workgroup of GPU threads as cooperative fibers on the calling OS thread (sim_fiber.cpp's own
 * context switch on x86-64, ucontext elsewhere): each fiber
 * runs the kernel body until it reaches a barrier, and a barrier releases once every thread it names
 * has arrived, in the order a GPU gives no guarantee about beyond that. One OS thread and no locks:
 * a barrier costs a context switch per thread instead of a futex wake-up per thread, so the full case
 * table runs in minutes on two cores. A barrier some threads never reach (divergent __syncthreads,
 * wrong counts) is reported as a deadlock instead of hanging. */
#ifndef PORTATTN_SIM_FIBER_H
#define PORTATTN_SIM_FIBER_H

struct sim_dim3 { unsigned x, y, z; };
extern sim_dim3 threadIdx, blockIdx, gridDim, blockDim;

void sim_sync_block(); /* __syncthreads */
void sim_sync_wave();  /* the threads of the caller's wave (the emulation's bar.sync 1 + wave, wave size) */

/* Runs body(arg) as every thread of every workgroup of the grid (workgroups one after another), in
 * waves of `wave` consecutive threads (64 CDNA, 32 RDNA3). Returns 0, or -1 after a deadlock
 * (message on stderr). */
int sim_launch(sim_dim3 grid, unsigned threads, unsigned wave, void (*body)(void *), void *arg);

#endif
