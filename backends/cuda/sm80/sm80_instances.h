/* cuda-sm80's compiled instances, one row each: the one list that the instance files' launchers, the
 * launchers' dispatch tables, supports()' choice of instance, its shared-memory check and the kernel's
 * name are generated from (docs/design.md section 8). A new head dim is a row here and its instance
 * file (sm80_fwd_d<D>.cu, sm80_fwd_paged_d<D>.cu or sm80_decode_d<D>.cu, which CMake finds by name).
 * Rows ascend by D: a call runs on the smallest instance that holds both of its head dims. Plain C.
 *
 * Why these shapes: sm80_launch.h (prefill and paged) and sm80_decode.h (decode). */
#ifndef PORTATTN_SM80_INSTANCES_H
#define PORTATTN_SM80_INSTANCES_H

/* Prefill (contiguous K/V, varlen or not): X(Y, D, BM, BN, WARPS, STAGES, SCHED), the default shape of
 * head dim D: query rows per CTA, keys per tile, warps, K/V ring slots, and the tile loop's schedule
 * flags below. Y is passed through to X. d256 also has a 64-row shape (PA_SM80_D256_SMALL_*,
 * sm80_launch.h), picked per device at run time, with the same flags. */
#define PA_SM80_FWD_LIST(X, Y)                                                                               \
    X(Y, 32, 128, 128, 4, 2, 0)                                                                              \
    X(Y, 64, 128, 64, 4, 2, PA_SM80_RESCALE_FIRST)                                                           \
    X(Y, 96, 128, 64, 4, 2, PA_SM80_EARLY_V | PA_SM80_QK_WHOLE)                                              \
    X(Y, 128, 128, 64, 4, 2, 0)                                                                              \
    X(Y, 160, 128, 64, 8, 1, PA_SM80_EARLY_V | PA_SM80_RESCALE_FIRST)                                        \
    X(Y, 192, 64, 64, 4, 1, 0)                                                                               \
    X(Y, 256, 128, 64, 8, 1, 0)

/* Schedule flags: where the tile loop waits for V and rescales O, and how far Q K^T is unrolled. They
 * change only the order ptxas sees (results are bitwise the same) and were picked per head dim by an
 * A/B on the H200 (NOTES.md, "Forward schedule"): each helps some head dims and costs others, since at
 * 240-255 registers a longer straight stretch of code is a trade between overlap and spills.
 *   EARLY_V: the wait for V_n and the barrier before the softmax rather than after it, so that the
 *            exponentials and the P V MMAs are one stretch of code.
 *   RESCALE_FIRST: O rescaled (when a row max grew) before the exponentials rather than after them.
 *   QK_WHOLE: the Q K^T depth loop unrolled whole (else by 2 above d64), fragment addresses constant. */
#define PA_SM80_EARLY_V 1
#define PA_SM80_RESCALE_FIRST 2
#define PA_SM80_QK_WHOLE 4

/* Paged prefill (over a KV cache): X(Y, D), the prefill row of the same D's shape. */
#define PA_SM80_PAGED_LIST(X, Y) X(Y, 64) X(Y, 128)

/* Split-KV decode: X(Y, D, STAGES), cp.async ring slots per warp (about 64 KB in flight per CTA). */
#define PA_SM80_DEC_LIST(X, Y) X(Y, 64, 4) X(Y, 128, 3) X(Y, 256, 2)

/* ---- derived: the head dims of each list, X(D) ---------------------------------------------- */
#define PA_SM80_D6_(Y, D, a, b, c, e, f) Y(D)
#define PA_SM80_D2_(Y, D, a) Y(D)
#define PA_SM80_D0_(Y, D) Y(D)
#define PA_SM80_DIMS(X) PA_SM80_FWD_LIST(PA_SM80_D6_, X)
#define PA_SM80_PAGED_DIMS(X) PA_SM80_PAGED_LIST(PA_SM80_D0_, X)
#define PA_SM80_DEC_DIMS(X) PA_SM80_DEC_LIST(PA_SM80_D2_, X)

/* ---- derived: a row's fields by head dim (constant expressions; 0 for a D without a row) ----- */
#define PA_SM80_BM_(d, D, bm, bn, w, st, sc) (d) == (D) ? (bm) :
#define PA_SM80_BN_(d, D, bm, bn, w, st, sc) (d) == (D) ? (bn) :
#define PA_SM80_WARPS_(d, D, bm, bn, w, st, sc) (d) == (D) ? (w) :
#define PA_SM80_STAGES_(d, D, bm, bn, w, st, sc) (d) == (D) ? (st) :
#define PA_SM80_SCHED_(d, D, bm, bn, w, st, sc) (d) == (D) ? (sc) :
#define PA_SM80_DEC_STAGES_(d, D, st) (d) == (D) ? (st) :
#define PA_SM80_BM(d) (PA_SM80_FWD_LIST(PA_SM80_BM_, d) 0)
#define PA_SM80_BN(d) (PA_SM80_FWD_LIST(PA_SM80_BN_, d) 0)
#define PA_SM80_WARPS(d) (PA_SM80_FWD_LIST(PA_SM80_WARPS_, d) 0)
#define PA_SM80_STAGES(d) (PA_SM80_FWD_LIST(PA_SM80_STAGES_, d) 0)
#define PA_SM80_SCHED(d) (PA_SM80_FWD_LIST(PA_SM80_SCHED_, d) 0)
#define PA_SM80_DEC_STAGES(d) (PA_SM80_DEC_LIST(PA_SM80_DEC_STAGES_, d) 0)

#endif
