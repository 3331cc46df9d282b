/* The lane layouts of backends/hip/hip_mfma_layout.h: each map is a bijection of the matrix
 * onto (lane, item) slots, and matches the documented examples (docs/design.md section 9 and the
 * AMD lab notes' 32x32x8 walk-through: "the first 32 lanes of a[0..3] hold columns 0-3 of A and the
 * last 32 lanes hold columns 4-7; d[0:3] holds rows 0-7"...). It also checks the two facts the
 * planned CDNA kernel relies on: the S^T = K Q^T accumulator of one 32-key x 32-query tile is, reg
 * for reg, the B operand of the next O^T += V^T P^T step (no shuffles for P), and each lane of that
 * accumulator holds a single query column (the row softmax is per lane plus one xor-32 exchange);
 * and the RDNA3 kernel's WMMA counterparts (one query per lane, the P^T key order after the xor-16
 * exchange, the O^T epilogue's head-dim per register). */
#include <stdio.h>
#include <string.h>

#include "hip_mfma_layout.h"

static int failures, checks;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok) failures++, printf("FAIL %s\n", what);
}

/* Every (r, c) of an R x C matrix maps to a distinct (lane, item) with lane < lanes, item < items,
 * and every slot is used (copies = 1) or, for the WMMA A/B replication, the first copy's slots. */
static int bijective(pa_lane_item (*f)(int, int), int R, int C, int lanes, int items)
{
    static unsigned char used[64 * 64];
    memset(used, 0, sizeof used);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            pa_lane_item s = f(r, c);
            if (s.lane < 0 || s.lane >= lanes || s.item < 0 || s.item >= items || used[s.lane * items + s.item]) return 0;
            used[s.lane * items + s.item] = 1;
        }
    int n = 0;
    for (int i = 0; i < lanes * items; i++) n += used[i];
    return n == R * C;
}

int main(void)
{
    /* bijections */
    check(bijective(pa_mfma32_a, 32, 8, 64, 4), "mfma 32x32x8 A is a bijection");
    check(bijective(pa_mfma32_b, 8, 32, 64, 4), "mfma 32x32x8 B is a bijection");
    check(bijective(pa_mfma32_d, 32, 32, 64, 16), "mfma 32x32x8 D is a bijection");
    check(bijective(pa_mfma16_a, 16, 16, 64, 4), "mfma 16x16x16 A is a bijection");
    check(bijective(pa_mfma16_b, 16, 16, 64, 4), "mfma 16x16x16 B is a bijection");
    check(bijective(pa_mfma16_d, 16, 16, 64, 4), "mfma 16x16x16 D is a bijection");
    check(bijective(pa_wmma_a, 16, 16, 16, 16), "wmma A (first copy) is a bijection onto lanes 0-15");
    check(bijective(pa_wmma_b, 16, 16, 16, 16), "wmma B (first copy) is a bijection onto lanes 0-15");
    check(bijective(pa_wmma_d, 16, 16, 32, 8), "wmma D is a bijection");

    /* documented examples (lab notes, 32x32x8): A columns 0-3 in lanes 0-31, 4-7 in lanes 32-63;
     * D regs 0-3 hold rows 0-3 (lanes 0-31) and 4-7 (lanes 32-63) */
    check(pa_mfma32_a(5, 2).lane == 5 && pa_mfma32_a(5, 2).item == 2, "A[5][2] in lane 5 item 2");
    check(pa_mfma32_a(5, 6).lane == 37 && pa_mfma32_a(5, 6).item == 2, "A[5][6] in lane 37 item 2");
    check(pa_mfma32_d(3, 7).lane == 7 && pa_mfma32_d(3, 7).item == 3, "D[3][7] in lane 7 reg 3");
    check(pa_mfma32_d(6, 7).lane == 39 && pa_mfma32_d(6, 7).item == 2, "D[6][7] in lane 39 reg 2");
    check(pa_mfma32_d(13, 0).lane == 32 && pa_mfma32_d(13, 0).item == 5, "D[13][0] in lane 32 reg 5");
    check(pa_mfma16_d(6, 3).lane == 19 && pa_mfma16_d(6, 3).item == 2, "16x16 D[6][3] in lane 19 reg 2");
    check(pa_wmma_d(5, 2).lane == 18 && pa_wmma_d(5, 2).item == 2, "wmma D[5][2] in lane 18 reg 2");
    /* RDNA3 wave32 WMMA (docs/design.md section 9): A row i / B column j in lane i (and i + 16), item k;
     * f32 D: VGPR r holds row 2r in lanes 0-15 and row 2r + 1 in lanes 16-31, column = lane % 16 */
    check(pa_wmma_a(7, 11).lane == 7 && pa_wmma_a(7, 11).item == 11, "wmma A[7][11] in lane 7 (and 23) item 11");
    check(pa_wmma_b(11, 7).lane == 7 && pa_wmma_b(11, 7).item == 11, "wmma B[11][7] in lane 7 (and 23) item 11");
    check(pa_wmma_d(0, 15).lane == 15 && pa_wmma_d(0, 15).item == 0, "wmma D[0][15] in lane 15 reg 0");
    check(pa_wmma_d(15, 15).lane == 31 && pa_wmma_d(15, 15).item == 7, "wmma D[15][15] in lane 31 reg 7");
    check(pa_wmma_d(14, 0).lane == 0 && pa_wmma_d(14, 0).item == 7, "wmma D[14][0] in lane 0 reg 7");

    /* The planned CDNA kernel: S^T (keys x queries) = K Q^T on 32 x 32 tiles, then O^T += V^T P^T with
     * P^T as the B operand, 8 keys per step. Key i = 8 s + t of step s must sit in B's slot for k = t:
     * the same lane and register 4 s + t % 4 of the accumulator, item t % 4 of the operand. */
    int reuse = 1, one_column = 1;
    for (int key = 0; key < 32; key++)
        for (int q = 0; q < 32; q++) {
            pa_lane_item acc = pa_mfma32_d(key, q), op = pa_mfma32_b(key % 8, q);
            reuse &= acc.lane == op.lane && acc.item == 4 * (key / 8) + op.item;
            one_column &= acc.lane % 32 == q;
        }
    check(reuse, "S^T accumulator regs 4s..4s+3 are the B operand of P.V step s");
    check(one_column, "each lane of the S^T accumulator holds one query column");

    /* The RDNA3 kernel: S^T (16 keys x 16 queries) = K Q^T, then O^T += V^T P^T with P^T as the B
     * operand in the key order pa_wmma_pv_key. Each lane of the accumulator holds one query; item p
     * of P^T is built from word p % 8 / 2 of half-wave p / 8's packed registers (p % 8 / 2) * 2 + p % 2,
     * i.e. accumulator reg p % 8 of lane q + 16 (p / 8), which must hold key pa_wmma_pv_key(p). */
    int w_one_column = 1, pv_ok = 1, pv_perm = 1, o_rows = 1;
    unsigned seen = 0;
    for (int p = 0; p < 16; p++) {
        const int key = pa_wmma_pv_key(p);
        pv_perm &= key >= 0 && key < 16 && !(seen >> key & 1);
        seen |= 1u << key;
        for (int q = 0; q < 16; q++) {
            pa_lane_item acc = pa_wmma_d(key, q);
            pv_ok &= acc.lane == q + 16 * (p / 8) && acc.item == p % 8;
        }
    }
    for (int i = 0; i < 16; i++)
        for (int q = 0; q < 16; q++) {
            pa_lane_item acc = pa_wmma_d(i, q);
            w_one_column &= acc.lane % 16 == q;
            o_rows &= 2 * acc.item + acc.lane / 16 == i; /* O^T epilogue: reg r, lane l = dim 2r + l / 16 */
        }
    check(pv_perm, "pa_wmma_pv_key is a permutation of the 16 keys");
    check(pv_ok, "P^T item p = the S^T accumulator's reg p % 8 of half-wave p / 8 (the kernel's exchange)");
    check(w_one_column, "each lane of the WMMA S^T accumulator holds one query column");
    check(o_rows, "WMMA accumulator reg r of lane l is row 2r + l / 16 (the O^T epilogue's head-dim)");

    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
