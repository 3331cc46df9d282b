/* Bank-conflict proof of the HIP kernels' LDS layout, on the host: for every target's bank model,
 * every head dim of an instance (32 to 256 in steps of 32, rows of 4 to 32 chunks) and every LDS
 * access of the tile loops (backends/hip/hip_lds.h: tile stores, MFMA 32x32 and 16x16 operand reads,
 * the u16 gathers of V for P.V; for RDNA3 the WMMA kernel's accesses under both a 32- and a 64-bank
 * model), enumerate the addresses each lane touches, group the lanes into the LDS phases of the
 * model, and require that no bank is asked for two different words in one phase (same-word reads are
 * broadcasts). The unswizzled layout must show conflicts on the operand reads, so the check can fail. */
#include <stdio.h>
#include <string.h>

#include "hip_lds.h"

static int failures, checks;

typedef int (*addr_fn)(const pa_lds_model *m, int lane, int a, int b, int chunks);

/* Worst number of distinct words one bank serves in one phase; lanes with addr < 0 are inactive. */
static int degree(const pa_lds_model *m, const int addr[64], int bytes, int is_read)
{
    int worst = 1, lanes[64];
    for (int ph = 0; ph < pa_lds_phases(m, bytes); ph++) {
        const int n = pa_lds_phase(m, bytes, is_read, ph, lanes);
        int words[64 * 4], nw = 0;
        for (int i = 0; i < n; i++) {
            if (addr[lanes[i]] < 0) continue;
            for (int w = addr[lanes[i]] / 4; w <= (addr[lanes[i]] + bytes - 1) / 4; w++) {
                int seen = 0;
                for (int j = 0; j < nw; j++) seen |= words[j] == w;
                if (!seen) words[nw++] = w;
            }
        }
        for (int bank = 0; bank < m->banks; bank++) {
            int c = 0;
            for (int j = 0; j < nw; j++) c += words[j] % m->banks == bank;
            if (c > worst) worst = c;
        }
    }
    return worst;
}

static void expect(const pa_lds_model *m, const char *what, int d, int got, int want_max)
{
    checks++;
    if (got > want_max) {
        failures++;
        printf("FAIL %-7s d%-3d %-40s %d-way conflict\n", m->target, d, what, got);
    }
}

/* RDNA3 (gfx1100, wave32): one layout (hip_lds.h's pa_lds_rdna3_*) for a bank count that is not
 * verified, so every access of rdna3_fwd_kernel.h's tile loops is checked under the 32-bank and the
 * 64-bank model (each with its own phases): the Q (64 rows) and K/V (32 rows) tile stores, the WMMA
 * operand reads of Q and K rows, the u16 gathers of V^T. The split address forms the kernel uses
 * must equal the generic chunk address. */
static void rdna3(void)
{
    const pa_lds_model lo = {"gfx1100", 32, 4, 32, 0}, hi = {"gfx1100-64", 64, 4, 32, 0};
    const pa_lds_model *hw[2] = {&lo, &hi};
    /* ROWS: Q tile rows (K/V tiles: the first 16 or 32) */
    const int dims[] = {32, 64, 96, 128, 160, 192, 224, 256}, ROWS = 64;
    for (int mi = 0; mi < 2; mi++) {
        const pa_lds_model *m = hw[mi];
        int worst_all = 1;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            const int d = dims[di], ch = d / 8;
            int addr[64];
            static unsigned char used[64 * 32];
            memset(used, 0, sizeof used);
            int bij = 1, same = 1;
            for (int r = 0; r < ROWS; r++)
                for (int c = 0; c < ch; c++) {
                    const int a = pa_lds_rdna3_chunk_addr(&lo, &hi, r, c, ch) / 16;
                    bij &= a >= r * ch && a < (r + 1) * ch && !used[a];
                    if (a >= 0 && a < ROWS * ch) used[a] = 1;
                }
            /* the split forms (pa_lds_wmma_addr_from via pa_lds_wmma_addr; the V gather's key and
             * lane terms) against the generic chunk address */
            for (int l = 0; l < 32; l++)
                for (int row0 = 0; row0 < ROWS; row0 += 16)
                    for (int c = 0; c < ch; c++)
                        same &= pa_lds_wmma_addr(&lo, &hi, l, row0, c / 2, c % 2, ch) ==
                                pa_lds_rdna3_chunk_addr(&lo, &hi, row0 + l % 16, c, ch);
            for (int l = 0; l < 32; l++)
                for (int key = 0; key < ROWS; key++)
                    for (int col0 = 0; col0 < d; col0 += 16) {
                        const int col = col0 + l % 16;
                        same &= pa_lds_wmma_v_half_addr(&lo, &hi, l, key, col0, ch) ==
                                pa_lds_rdna3_chunk_addr(&lo, &hi, key, col / 8, ch) + (col % 8) * 2;
                    }
            checks += 2;
            if (!bij) failures++, printf("FAIL gfx1100 d%d: the swizzle is not a permutation within each row\n", d);
            if (!same) failures++, printf("FAIL gfx1100 d%d: a split address form differs from the chunk address\n", d);
            /* Q and K/V tile stores, ds_write_b128 (pass = store pass x 4 waves + wave) */
            for (int pass = 0; pass < ROWS * ch / 32; pass++) {
                for (int l = 0; l < 32; l++) addr[l] = pa_lds_rdna3_store_addr(&lo, &hi, l, pass, ch);
                int g = degree(m, addr, 16, 0);
                expect(m, "tile store (ds_write_b128)", d, g, 1);
                if (g > worst_all) worst_all = g;
            }
            /* WMMA operand reads of Q and K rows: lanes i and i + 16 on row row0 + i (broadcast) */
            for (int row0 = 0; row0 < ROWS; row0 += 16)
                for (int ks = 0; ks < ch / 2; ks++)
                    for (int half = 0; half < 2; half++) {
                        for (int l = 0; l < 32; l++) addr[l] = pa_lds_wmma_addr(&lo, &hi, l, row0, ks, half, ch);
                        int g = degree(m, addr, 16, 1);
                        expect(m, "WMMA Q/K operand (ds_read_b128)", d, g, 1);
                        if (g > worst_all) worst_all = g;
                        /* control: unswizzled rows conflict */
                        for (int l = 0; l < 32; l++) addr[l] = ((row0 + l % 16) * ch + 2 * ks + half) * 16;
                        checks++;
                        if (degree(m, addr, 16, 1) < 2) failures++, printf("FAIL %s d%d: unswizzled control shows no conflict\n", m->target, d);
                    }
            /* V^T gathers for O^T += V^T P^T (ds_read_u16): every key of a tile, every 16-dim block */
            for (int key = 0; key < 32; key++)
                for (int col0 = 0; col0 < d; col0 += 16) {
                    for (int l = 0; l < 32; l++) addr[l] = pa_lds_wmma_v_half_addr(&lo, &hi, l, key, col0, ch);
                    int g = degree(m, addr, 2, 1);
                    expect(m, "V^T gather (ds_read_u16)", d, g, 1);
                    if (g > worst_all) worst_all = g;
                }
        }
        printf("%-10s %2d banks x %d B, wave%d, RDNA3 layout (XOR from the 32- and 64-bank periods): worst conflict degree %d\n",
               m->target, m->banks, m->bank_bytes, m->wave, worst_all);
    }
}

int main(void)
{
    const pa_lds_model models[] = {
        {"gfx90a", 32, 4, 64, 1}, {"gfx940", 32, 4, 64, 1}, {"gfx942", 32, 4, 64, 1},
        {"gfx950", 64, 4, 64, 0},
    };
    const int dims[] = {32, 64, 96, 128, 160, 192, 224, 256}, TILE = 64; /* rows of a K/V/Q tile */
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        const pa_lds_model *m = &models[mi];
        int worst_all = 1;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            const int d = dims[di], ch = d / 8;
            int addr[64];
            /* the layout is a bijection of the tile onto itself (no two chunks share an address) */
            static unsigned char used[64 * 32];
            memset(used, 0, sizeof used);
            int bij = 1;
            for (int r = 0; r < TILE; r++)
                for (int c = 0; c < ch; c++) {
                    const int a = pa_lds_chunk_addr(m, r, c, ch) / 16;
                    bij &= a >= r * ch && a < (r + 1) * ch && !used[a];
                    if (a >= 0 && a < TILE * ch) used[a] = 1;
                }
            checks++;
            if (!bij) failures++, printf("FAIL %s d%d: the swizzle is not a permutation within each row\n", m->target, d);
            /* tile stores, ds_write_b128 */
            for (int pass = 0; pass < TILE * ch / m->wave; pass++) {
                for (int l = 0; l < m->wave; l++) addr[l] = pa_lds_store_addr(m, l, pass, ch);
                int g = degree(m, addr, 16, 0);
                expect(m, "tile store (ds_write_b128)", d, g, 1);
                if (g > worst_all) worst_all = g;
            }
            if (m->wave == 64) {
                /* MFMA operand reads (Q as A, K as B of Q K^T): 32x32x8 and 16x16x16 shapes */
                for (int mn = 16; mn <= 32; mn *= 2)
                    for (int row0 = 0; row0 < TILE; row0 += mn)
                        for (int kg = 0; kg < ch / (64 / mn); kg++) {
                            for (int l = 0; l < 64; l++) addr[l] = pa_lds_frag_addr(m, l, mn, row0, kg, ch);
                            int g = degree(m, addr, 16, 1);
                            expect(m, mn == 32 ? "MFMA 32x32 operand (ds_read_b128)" : "MFMA 16x16 operand (ds_read_b128)", d, g, 1);
                            if (g > worst_all) worst_all = g;
                            /* control: the same reads without the swizzle conflict (the check can fail) */
                            for (int l = 0; l < 64; l++) addr[l] = ((row0 + l % mn) * ch + kg * (64 / mn) + l / mn) * 16;
                            checks++;
                            if (degree(m, addr, 16, 1) < 2) failures++, printf("FAIL %s d%d: unswizzled control shows no conflict\n", m->target, d);
                        }
                /* V gathers for P.V (ds_read_u16), both MFMA shapes. On 64 banks (gfx950) a phase reads
                 * keys k and k + 4; rows of an odd multiple of 4 chunks (d32, d96, d160, d224) put
                 * both on the same banks whatever the XOR (4 rows x 4 chunks = a multiple of the
                 * bank row), a 2-way conflict the XOR inside a row cannot remove. No gfx950 code is
                 * built (it needs LLVM 20) and the CDNA kernels take the 32-bank layout on every
                 * target, so it is allowed there and reported. */
                const int vmax = pa_lds_period(m) == 16 && ch % 8 ? 2 : 1;
                if (vmax > 1)
                    printf("note: %s d%d: V gathers %d-way at most (64 banks, odd multiple of 4 chunks a row)\n",
                           m->target, d, vmax);
                for (int mn = 16; mn <= 32; mn *= 2)
                    for (int key0 = 0; key0 + 4 * (64 / mn) <= TILE; key0 += 4 * (64 / mn))
                        for (int col0 = 0; col0 < d; col0 += mn)
                            for (int r = 0; r < 4; r++) {
                                for (int l = 0; l < 64; l++) addr[l] = pa_lds_v_half_addr(m, l, mn, key0, r, col0, ch);
                                int g = degree(m, addr, 2, 1);
                                expect(m, "V gather for P.V (ds_read_u16)", d, g, vmax);
                                if (g > worst_all) worst_all = g;
                            }
            }
        }
        printf("%-8s %2d banks x %d B, wave%d, XOR period %2d chunks: worst conflict degree %d over all accesses\n",
               m->target, m->banks, m->bank_bytes, m->wave, pa_lds_period(m), worst_all);
    }
    rdna3();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
