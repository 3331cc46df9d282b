/* cuda-sm90's compiled instances, one row each: the one list that the launcher's prototypes and
 * dispatch tables, supports()' choice of instance, its shared-memory check and the kernel's name are
 * generated from (docs/design.md section 8). A new head dim is a row here and its instance file
 * (sm90_fwd_d<D>.cu or sm90_fwd_kv_d<D>.cu, which CMake finds by name); D a multiple of 16, its shared
 * memory rows whole 64-column blocks (the TMA's boxes and the 128-byte swizzle: PA_SM90_DA), new wgmma N
 * sizes from tools/gen_sm90_wgmma.py. D32, d48, d96, d160 and d224 compute only their own columns (Q K^T
 * D / 16 steps deep, P V N = D wide) in the shared-memory layout of the next multiple of 64. Rows
 * ascend by D: a call runs on the smallest instance that holds both of its head dims. Plain C; why
 * these shapes: sm90_launch.h. */
#ifndef PORTATTN_SM90_INSTANCES_H
#define PORTATTN_SM90_INSTANCES_H

/* d128 with three slots needs 225 KB (fits the 227 KB): -DPA_SM90_STAGES_D128=3 in both CMAKE_C_FLAGS
 * and CMAKE_CUDA_FLAGS builds it for an A/B (deeper prefetch across short items; not yet measured). */
#ifndef PA_SM90_STAGES_D128
#define PA_SM90_STAGES_D128 2
#endif
/* d64 with five slots needs 209 KB at 192 rows: -DPA_SM90_STAGES_D64=5 (C and CUDA flags) for an A/B
 * (short items of one or two key tiles: the producer runs 2.5 items ahead instead of 1.5). */
#ifndef PA_SM90_STAGES_D64
#define PA_SM90_STAGES_D64 3
#endif

/* Dense (contiguous K/V, varlen or not): X(Y, D, BN, STAGES, NC, NC_SHORT): keys per tile, K/V slots,
 * consumer warpgroups of 64 query rows, and the consumer warpgroups of a short-query shape (0: none).
 * Y is passed through to X. */
#define PA_SM90_FWD_LIST(X, Y)                                                                               \
    X(Y, 32, 128, 3, 3, 2)                                                                                   \
    X(Y, 48, 128, 3, 3, 2)                                                                                   \
    X(Y, 64, 128, PA_SM90_STAGES_D64, 3, 2)                                                                  \
    X(Y, 96, 128, PA_SM90_STAGES_D128, 2, 0)                                                                 \
    X(Y, 128, 128, PA_SM90_STAGES_D128, 2, 0)                                                                \
    X(Y, 160, 112, 2, 2, 0)                                                                                  \
    X(Y, 192, 112, 2, 2, 0)                                                                                  \
    X(Y, 224, 64, 2, 2, 0)                                                                                   \
    X(Y, 256, 64, 2, 2, 0)

/* Over a KV cache: X(Y, D, STAGES), the dense row of the same D's shape with its own ring depth. */
#define PA_SM90_KV_LIST(X, Y) X(Y, 64, 3) X(Y, 128, 3) X(Y, 256, 2)

/* Columns of a D-wide row in shared memory: whole 64-column blocks (a wgmma of N = D < DA reads part
 * of the last block's 128-byte swizzle atoms; the case table at d32..d224 passes on the H200). */
#define PA_SM90_DA(d) (((d) + 63) / 64 * 64)
#define PA_SM90_NB(d) (PA_SM90_DA(d) / 64) /* its 64-column blocks */

/* ---- derived: the head dims of each list, X(D) ---------------------------------------------- */
#define PA_SM90_D5_(Y, D, a, b, c, e) Y(D)
#define PA_SM90_D1_(Y, D, a) Y(D)
#define PA_SM90_DIMS(X) PA_SM90_FWD_LIST(PA_SM90_D5_, X)
#define PA_SM90_KV_DIMS(X) PA_SM90_KV_LIST(PA_SM90_D1_, X)

/* ---- derived: a row's fields by head dim (constant expressions; 0 for a D without a row) ----- */
#define PA_SM90_BN_(d, D, bn, st, nc, ns) (d) == (D) ? (bn) :
#define PA_SM90_STAGES_(d, D, bn, st, nc, ns) (d) == (D) ? (st) :
#define PA_SM90_NC_(d, D, bn, st, nc, ns) (d) == (D) ? (nc) :
#define PA_SM90_NC_SHORT_(d, D, bn, st, nc, ns) (d) == (D) ? (ns) :
#define PA_SM90_KV_STAGES_(d, D, st) (d) == (D) ? (st) :
#define PA_SM90_BN(d) (PA_SM90_FWD_LIST(PA_SM90_BN_, d) 0)
#define PA_SM90_STAGES(d) (PA_SM90_FWD_LIST(PA_SM90_STAGES_, d) 0)
#define PA_SM90_NC(d) (PA_SM90_FWD_LIST(PA_SM90_NC_, d) 0)
#define PA_SM90_NC_SHORT(d) (PA_SM90_FWD_LIST(PA_SM90_NC_SHORT_, d) 0)
#define PA_SM90_KV_STAGES(d) (PA_SM90_KV_LIST(PA_SM90_KV_STAGES_, d) 0)

#endif
