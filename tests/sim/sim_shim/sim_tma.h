/* The asynchronous-copy half of a simulated Hopper/Blackwell CTA, shared by the CPU simulations of
 * cuda-sm90 and cuda-sm100 (tests/sim/sm90_sim, sm100_sim): mbarriers with phases, arrival counts
 * and transaction bytes (a wait that nothing can complete is reported as a deadlock, with the
 * barrier's address), TMA loads and stores of 64-column boxes with the 128-byte swizzle and zero fill
 * out of bounds, named barriers, and the fences (nothing to order in one address space).
 *
 * The including simulation defines first: `smem_raw` (its CTA's shared memory, 1024-byte aligned;
 * shared-memory addresses are offsets into it) and `void sim_fail(const char *)` (records the first
 * error of a case). The tensor map is the shim cuda.h's. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <map>

#include "sim_fiber.h"
#include "cuda.h" /* CUtensorMap */

/* Faults this half can inject, to prove that a simulation catches them: the first mbarrier wait of
 * thread sim_fault_parity_tid asks for the other parity (then the fault disarms itself); TMA boxes
 * written and read without the swizzle. */
static int sim_fault_parity_tid = -1;
static bool sim_fault_no_swizzle;

struct sim_bar {
    int count = 0, pending = 0;
    int64_t tx = 0;
    unsigned phase = 0; /* completed phases */
};
static std::map<uint32_t, sim_bar> bars;
static bool sim_dead; /* a deadlock was reported: every waiter stops waiting */

static inline uint32_t pa_smem_u32(const void *p) { return (uint32_t)((const uint8_t *)p - smem_raw); }

/* After every change of an mbarrier's state: a waiter may be able to go on. */
static inline void bar_check(sim_bar &b)
{
    sim_progress();
    if (b.pending == 0 && b.tx == 0) {
        b.phase++;
        b.pending = b.count;
    } else if (b.pending < 0 || b.tx < 0) {
        sim_fail("mbarrier: more arrivals or bytes than expected in a phase");
    }
}
static inline sim_bar &bar_at(uint32_t a)
{
    auto it = bars.find(a);
    if (it != bars.end()) return it->second;
    sim_fail("mbarrier used before its init");
    return bars[a];
}
static inline void pa_bar_init(uint32_t a, int count) { bars[a] = sim_bar{count, count, 0, 0}; }
static inline void pa_bar_init_fence(void) {}
static inline void pa_fence_proxy_async(void) {}
static inline void pa_bar_expect_tx(uint32_t a, uint32_t bytes)
{
    sim_bar &b = bar_at(a);
    b.tx += bytes;
    b.pending--;
    bar_check(b);
}
/* An arrival is visible at once: the waiters it releases run before this thread's next step (an
 * arrival made too early, before the data it announces, shows). */
static inline void pa_bar_arrive(uint32_t a)
{
    sim_bar &b = bar_at(a);
    b.pending--;
    bar_check(b);
    sim_yield();
}
static inline void pa_bar_wait(uint32_t a, uint32_t parity)
{
    if ((int)threadIdx.x == sim_fault_parity_tid) sim_fault_parity_tid = -1, parity ^= 1u;
    const sim_bar &b = bar_at(a);
    /* try_wait.parity(P) succeeds once the phase of parity P has completed: current parity != P */
    while ((b.phase & 1u) == parity && !sim_dead)
        if (sim_spin()) { /* every thread waits and nothing can move */
            char msg[128];
            snprintf(msg, sizeof msg, "deadlock: wait on the mbarrier at smem offset %u (parity %u, %u phases done)",
                     a, parity, b.phase);
            sim_fail(msg);
            sim_dead = true;
        }
}

/* The 128-byte swizzle by address bits: 16-byte chunk c of a 128-byte row r (of a 1024-byte aligned
 * atom) at chunk c ^ (r & 7). What the TMA applies (unless the fault is on) and the MMA units read. */
static inline uint32_t sim_swz128(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }
static inline uint32_t sim_tma_swz(uint32_t a) { return sim_fault_no_swizzle ? a : sim_swz128(a); }

/* Element (x, y, c2, c3) of the map's tensor, or null where it is out of bounds. */
static inline uint8_t *sim_tmap_at(const CUtensorMap *m, int64_t x, int64_t y, int64_t c2, int64_t c3)
{
    if (x < 0 || y < 0 || c2 < 0 || c3 < 0 || x >= m->dims[0] || y >= m->dims[1] || c2 >= m->dims[2] || c3 >= m->dims[3])
        return nullptr;
    return (uint8_t *)m->ptr + y * m->strides[0] + c2 * m->strides[1] + c3 * m->strides[2] + x * 2;
}

/* TMA: a 64-column x box_rows x box_heads box at (c0, c1, c2, c3), head by head, zeros out of bounds;
 * the transaction counts the whole box. */
static inline void pa_tma_load_4d(uint32_t dst, const void *tmap, uint32_t bar, int c0, int c1, int c2, int c3)
{
    const CUtensorMap *m = (const CUtensorMap *)tmap;
    if (dst % 1024) sim_fail("TMA box destination not 1024-byte aligned (128-byte swizzle)");
    for (int h = 0; h < m->box_heads; ++h)
        for (int r = 0; r < m->box_rows; ++r)
            for (int c = 0; c < 64; ++c) {
                const uint8_t *src = sim_tmap_at(m, c0 + c, c1 + r, c2 + h, c3);
                uint16_t v = 0;
                if (src) memcpy(&v, src, 2);
                memcpy(smem_raw + sim_tma_swz(dst + (uint32_t)((h * m->box_rows + r) * 128 + c * 2)), &v, 2);
            }
    sim_bar &b = bar_at(bar);
    b.tx -= 64 * m->box_rows * m->box_heads * 2;
    bar_check(b);
}

/* TMA store of a 64-column x box_rows box at (c0, c1, c2, c3) from swizzled shared memory; elements
 * outside the tensor are not written. Synchronous here, so the bulk-group wait has nothing to do. */
static inline void pa_tma_store_4d(const void *tmap, uint32_t src, int c0, int c1, int c2, int c3)
{
    const CUtensorMap *m = (const CUtensorMap *)tmap;
    if (src % 1024) sim_fail("TMA store source not 1024-byte aligned (128-byte swizzle)");
    for (int r = 0; r < m->box_rows; ++r)
        for (int c = 0; c < 64; ++c) {
            uint8_t *dst = sim_tmap_at(m, c0 + c, c1 + r, c2, c3);
            if (dst) memcpy(dst, smem_raw + sim_tma_swz(src + (uint32_t)(r * 128 + c * 2)), 2);
        }
}
static inline void pa_bulk_commit(void) {}
static inline void pa_bulk_wait_read(void) {}
static inline void pa_named_sync(int id, int n) { sim_sync_named(id, (unsigned)n); }
static inline void pa_named_arrive(int id, int n) { sim_arrive_named(id, (unsigned)n); }

/* The start of a simulated CTA: no barriers, no deadlock. */
static inline void sim_tma_reset(void)
{
    bars.clear();
    sim_dead = false;
}
