/* Does compute-sanitizer's racecheck see the orderings cuda-sm90's kernels rely on? Three handoffs of
 * a shared-memory word from one warp (the "producer") to another (the "consumer"), each a kernel:
 *   none     the consumer reads while the producer writes, no synchronization: racecheck must flag it
 *            (the probe's teeth; an exit code that says nothing was flagged fails the probe);
 *   mbarrier the producer writes, then arrives on an mbarrier (release); the consumer waits on it
 *            (try_wait, acquire), then reads: the protocol of sm90_fwd's work-item slots;
 *   named    the producer writes, then bar.arrive; the consumer bar.sync on the same named barrier,
 *            then reads: FlashAttention-3's scheduler handoff;
 * and two handoffs back (write after read: every consumer lane reads the word, the producer waits on an
 * mbarrier, then overwrites it):
 *   warp     the consumer warp's lanes read, __syncwarp, lane 0 arrives (count 1);
 *   threads  each consumer lane arrives after its own read (count 32): the protocol of the slots now.
 * It runs each kernel once (results checked) and prints one line per handoff; racecheck_probe.sh
 * runs it under racecheck, one handoff at a time, and reports which ones the tool sees as ordered. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define PROBE_DEVICE 1
#endif

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

#ifdef PROBE_DEVICE
__device__ __forceinline__ void wait_parity0(uint64_t *bar)
{
    uint32_t done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(smem_u32(bar))
                     : "memory");
}
#endif
/* mode 0: none, 1: mbarrier, 2: named barrier, 3: warp, 4: threads. out[0] = what the consumer read
 * (42 once ordered), out[1] for modes 3 and 4 the word after the producer's overwrite (7). */
__global__ void handoff(int mode, int *out)
{
#ifdef PROBE_DEVICE
    __shared__ int word;
    __shared__ alignas(8) uint64_t bar;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        word = 0;
        if (mode == 4) asm volatile("mbarrier.init.shared::cta.b64 [%0], 32;" ::"r"(smem_u32(&bar)));
        else asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)));
        if (mode >= 3) word = 42;
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (mode >= 3) { /* write after read */
        if (warp == 1) {
            const int seen = word;
            if (lane == 0) out[0] = seen;
            if (mode == 3) {
                __syncwarp();
                if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
            } else {
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
            }
        } else if (lane == 0) {
            wait_parity0(&bar);
            word = 7;
            out[1] = word;
        }
        return;
    }
    if (warp == 0) { /* producer */
        if (lane == 0) {
            if (mode == 0) {
                for (volatile int i = 0; i < 1000; ++i) {
                }
            }
            word = 42;
            if (mode == 1) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
        }
        if (mode == 2) asm volatile("bar.arrive 2, 64;" ::: "memory");
    } else { /* consumer */
        if (mode == 1) wait_parity0(&bar);
        if (mode == 2) asm volatile("bar.sync 2, 64;" ::: "memory");
        if (lane == 0) out[0] = word;
    }
#else
    (void)mode;
    if (out) out[0] = -1;
#endif
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"none", "mbarrier", "named", "warp", "threads"};
    int only = -1;
    for (int m = 0; argc > 1 && m < 5; ++m)
        if (!strcmp(argv[1], names[m])) only = m;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
        major < 9) {
        printf("SKIP: no GPU of compute capability 9.0 or newer\n");
        return 77;
    }
    int *out = NULL;
    if (cudaMalloc(&out, 2 * sizeof(int)) != cudaSuccess) return 1;
    int bad = 0;
    for (int m = 0; m < 5; ++m) {
        if (only >= 0 && m != only) continue;
        int got[2] = {-2, -2};
        handoff<<<1, 64>>>(m, out);
        if (cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
        /* the unsynchronized read may see either value; a write after read must not reach the read */
        const int ok = (m == 0 || got[0] == 42) && (m < 3 || got[1] == 7);
        printf("%-8s consumer read %d%s\n", names[m], got[0], ok ? "" : " (expected 42, then 7: FAIL)");
        bad |= !ok;
    }
    cudaFree(out);
    return bad;
}
