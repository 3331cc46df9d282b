/* The fiber runtime every kernel simulation stands on (sim_fiber.h), checked on its own: barriers
 * order what they must, a barrier some thread never reaches and a wait nothing can end are reported
 * (not hangs), a named barrier's count is checked, and sim_order changes how threads interleave.
 * Exit 0 pass, 1 fail. */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "sim_fiber.h"

static int failures;
static void check(bool ok, const char *what)
{
    printf("%-4s %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

/* Every thread writes its slot, meets the block barrier, then reads every slot: all written. */
static void block_barrier_orders()
{
    static int slot[256];
    memset(slot, 0, sizeof slot);
    int seen_all = 1, blocks = 0;
    const int r = sim_run({3, 2, 1}, 256, 64, [&] {
        slot[threadIdx.x] = 1 + (int)(blockIdx.x + 3 * blockIdx.y);
        sim_sync_block();
        for (int i = 0; i < 256; ++i) seen_all &= slot[i] == 1 + (int)(blockIdx.x + 3 * blockIdx.y);
        sim_sync_block(); /* nobody starts the next block's writes early: blocks run one after another */
        blocks += threadIdx.x == 0;
    });
    check(r == 0 && seen_all && blocks == 6, "block barrier: every write before it is seen after it, in each of 6 blocks");
}

/* Waves of 32 meet their own barrier only: a wave's reads see its lanes' writes. */
static void wave_barrier_orders()
{
    static int lane[128];
    int ok = 1;
    const int r = sim_run({1, 1, 1}, 128, 32, [&] {
        lane[threadIdx.x] = (int)threadIdx.x;
        sim_sync_wave();
        const int w = (int)threadIdx.x / 32;
        for (int i = 0; i < 32; ++i) ok &= lane[32 * w + i] == 32 * w + i;
    });
    check(r == 0 && ok, "wave barrier: a wave's writes are seen by the wave");
}

static void divergent_barrier_reported()
{
    const int r = sim_run({1, 1, 1}, 64, 32, [&] {
        if (threadIdx.x != 5) sim_sync_block();
        else sim_sync_wave(); /* thread 5 never reaches the block barrier */
    });
    check(r == -1, "a block barrier one thread never reaches: reported as a deadlock");
}

static void named_barrier_counts()
{
    int after = 0;
    int r = sim_run({1, 1, 1}, 256, 32, [&] {
        if (threadIdx.x < 128) sim_sync_named(1, 128), after++;
    });
    check(r == 0 && after == 128, "bar.sync 1, 128 over the first 128 threads of 256");
    r = sim_run({1, 1, 1}, 128, 32, [&] { sim_sync_named(2, threadIdx.x < 64 ? 128 : 96); });
    check(r == -1, "bar.sync with two different thread counts: reported");
}

/* A flag set by the last thread after a barrier, waited for by spinning: the waiters (who run first)
 * go on; a flag nobody sets: every spinner is told that it is stalled. */
static void spin_waits()
{
    int flag = 0, released = 0, stalled = 0;
    int r = sim_run({1, 1, 1}, 64, 32, [&] {
        sim_sync_block();
        if (threadIdx.x == 63) flag = 1, sim_progress();
        while (!flag)
            if (sim_spin()) break;
        released += flag;
    });
    check(r == 0 && released == 64, "a spin-wait ends when another thread sets the flag");
    r = sim_run({1, 1, 1}, 64, 32, [&] {
        while (true)
            if (sim_spin()) {
                stalled++;
                break;
            }
    });
    check(r == 0 && stalled == 64, "a spin-wait nothing can end: every spinner is told");
}

/* The order threads first reach a barrier in: thread order by default; sim_order shuffles it. */
static std::vector<unsigned> arrival_order(unsigned seed)
{
    std::vector<unsigned> order;
    sim_order(seed);
    sim_run({1, 1, 1}, 64, 32, [&] {
        sim_sync_block();
        order.push_back(threadIdx.x);
    });
    sim_order(0);
    return order;
}
static void orders()
{
    const std::vector<unsigned> plain = arrival_order(0), a = arrival_order(7), b = arrival_order(8);
    bool in_order = plain.size() == 64;
    for (unsigned i = 0; i < plain.size(); ++i) in_order &= plain[i] == i;
    check(in_order, "default order: thread order");
    check(a.size() == 64 && a != plain && a != b, "sim_order: other orders, one per seed");
}

int main()
{
    block_barrier_orders();
    wave_barrier_orders();
    divergent_barrier_reported();
    named_barrier_counts();
    spin_waits();
    orders();
    printf("%d failures\n", failures);
    return failures != 0;
}
