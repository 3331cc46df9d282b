/* The page-address arithmetic of cuda-sm80's paged prefill instances, on the host: the very inline
 * function the kernel's K/V tile loads call (pa_kv_page_offset, kv_args.h), driven in the
 * kernel's own load order (64-key tiles, one thread per 16-byte column chunk, passes of RS rows,
 * only rows below the sequence's length), gathers each sequence's keys out of a shuffled page pool
 * and compares them with the sequence as written. Pools hold unused pages and pages shared by two
 * sequences (a common prefix); page sizes 1..256; table rows are allocated to their exact length, so
 * a read past a row's last page is an out-of-bounds read (ASan in CI). Garbage entries clamp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_args.h"

static int failures, checks;
static unsigned rng = 12345u;
static unsigned rnd(void) { return rng = rng * 1664525u + 1013904223u; }

#define HEADS 2
#define DIM 16 /* elements per row of one head: two 16-byte chunks of f16 */
#define BN 64  /* keys per tile (the d64/d128 instances) */

/* Key j of sequence b, head h, column c: a value that names all four. */
static int32_t tag(int b, int j, int h, int c) { return ((b * 4096 + j) * HEADS + h) * DIM + c + 1; }

/* The kernel's tile loop for one sequence: tiles of BN keys, NT threads of PITCH chunks, passes of
 * RS rows; each visited key's row is gathered through pa_kv_page_offset. */
static void gather(const int32_t *pool, const int32_t *bt_row, int64_t num_pages, int shift, int64_t pstride,
                   int64_t rstride, int h, int len, int rs, int32_t *out, int *seen)
{
    for (int row0 = 0; row0 < len; row0 += BN)
        for (int r = 0; r < rs; ++r)
            for (int k = 0; k < BN / rs; ++k) {
                const int key = row0 + r + k * rs;
                if (key >= len) continue;
                const int64_t off = pa_kv_page_offset(bt_row, num_pages, shift, pstride, rstride, key);
                memcpy(out + (int64_t)key * DIM, pool + off + h * DIM, DIM * sizeof *out);
                seen[key]++;
            }
}

static void one_pool(int page, int nseq, int maxlen, int rs)
{
    int shift = 0;
    while ((1 << shift) < page) shift++;
    int len[8], npg[8];
    int64_t total = 0;
    for (int b = 0; b < nseq; ++b) {
        len[b] = b == 0 ? 0 : 1 + (int)(rnd() % (unsigned)maxlen); /* an idle sequence too */
        if (b == 1) len[b] = maxlen;
        npg[b] = (len[b] + page - 1) / page;
        total += npg[b];
    }
    /* Pool: every sequence's pages, shuffled, and as many unused ones; sequence 2 reuses sequence 1's
     * first page (same prefix) when both have one. */
    const int64_t num_pages = 2 * total + 1, rstride = HEADS * DIM + 8 /* padded rows */;
    const int64_t pstride = page * rstride + 16;
    int64_t *perm = malloc((size_t)num_pages * sizeof *perm);
    for (int64_t i = 0; i < num_pages; ++i) perm[i] = i;
    for (int64_t i = num_pages - 1; i > 0; --i) {
        const int64_t j = rnd() % (unsigned)(i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int32_t *pool = malloc((size_t)(num_pages * pstride) * sizeof *pool);
    for (int64_t i = 0; i < num_pages * pstride; ++i) pool[i] = -1; /* poison: unused pages and pads */
    int32_t *bt[8];
    int64_t next = 0;
    const int share = nseq > 2 && npg[1] > 0 && npg[2] > 0;
    for (int b = 0; b < nseq; ++b) {
        bt[b] = malloc((size_t)(npg[b] ? npg[b] : 1) * sizeof *bt[b]);
        for (int p = 0; p < npg[b]; ++p) {
            if (b == 2 && p == 0 && share) {
                bt[b][p] = bt[1][0];
                continue;
            }
            bt[b][p] = (int32_t)perm[next++];
            for (int r = 0; r < page && p * page + r < len[b]; ++r)
                for (int h = 0; h < HEADS; ++h)
                    for (int c = 0; c < DIM; ++c)
                        pool[bt[b][p] * pstride + r * rstride + h * DIM + c] = tag(b, p * page + r, h, c);
        }
    }
    for (int b = 0; b < nseq; ++b) {
        int32_t *out = malloc((size_t)(len[b] + 1) * DIM * sizeof *out);
        int *seen = calloc((size_t)len[b] + 1, sizeof *seen);
        for (int h = 0; h < HEADS; ++h) {
            memset(seen, 0, (size_t)(len[b] + 1) * sizeof *seen);
            gather(pool, bt[b], num_pages, shift, pstride, rstride, h, len[b], rs, out, seen);
            for (int j = 0; j < len[b]; ++j) {
                /* the shared first page holds sequence 1's keys (the common prefix) */
                const int src = b == 2 && share && j < page ? 1 : b;
                checks++;
                int ok = seen[j] == 1;
                for (int c = 0; c < DIM && ok; ++c) ok = out[(int64_t)j * DIM + c] == tag(src, j, h, c);
                if (!ok && failures++ < 10)
                    printf("FAIL page %d seq %d head %d key %d: seen %d, got %d want %d\n", page, b, h, j, seen[j],
                           out[(int64_t)j * DIM], tag(src, j, h, 0));
            }
        }
        free(out), free(seen), free(bt[b]);
    }
    free(pool), free(perm);
}

/* Garbage entries (device memory is not validated) clamp into the pool. */
static void garbage(void)
{
    const int32_t row[4] = {-5, 7, 1000, 3};
    const int64_t want[4] = {0, 7, 9, 3}; /* num_pages 10 */
    for (int i = 0; i < 4; ++i) {
        checks++;
        const int64_t off = pa_kv_page_offset(row, 10, 4, 1000, 10, i * 16 + 5);
        if (off != want[i] * 1000 + 5 * 10 && failures++ < 10)
            printf("FAIL garbage entry %d: offset %lld\n", row[i], (long long)off);
    }
}

int main(void)
{
    static const int pages[] = {1, 2, 8, 16, 32, 64, 128, 256};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; ++i)
        for (int rs = 8; rs <= 16; rs += 8) /* d128: 8 rows a pass; d64: 16 */
            for (int rep = 0; rep < 3; ++rep) one_pool(pages[i], 6, 40 + (int)(rnd() % 700u), rs);
    garbage();
    printf("%s: %d checks, %d failures\n", failures ? "FAIL" : "PASS", checks, failures);
    return failures != 0;
}
