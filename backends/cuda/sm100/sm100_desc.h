/* cuda-sm100: the tile geometry and the tcgen05 descriptors of the kernel, as plain functions that
 * the kernel (device), the launcher (host) and the CPU emulator test all include, so the test checks
 * the very descriptors the kernel issues. C and CUDA alike (no CUDA header needed).
 *
 * Shared memory holds every 16-bit tile as 64-column blocks of 128-byte rows, written by TMA with
 * the 128-byte swizzle (16-byte chunk c of row r at c ^ (r & 7), a 1024-byte aligned pattern):
 *   Q: 2 tiles x NB blocks of 128 rows;  K, V: per ring slot NB blocks of BN rows (NB = D / 64).
 * TMEM (128 lanes x 512 columns of 32 bits; lane = query row of a tile):
 *   S0 = cols [0,128), S1 = [128,256): fp32 scores of tile 0/1; P_t (16-bit pairs) overwrites the
 *   first 64 columns of S_t;  O0 = [256, 256 + D), O1 = [256 + D, 256 + 2D): fp32 accumulators.
 *   d128 fills all 512 columns, d64 uses 384 (the allocation is 512: a power of two). */
#ifndef PORTATTN_SM100_DESC_H
#define PORTATTN_SM100_DESC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef PA_HD /* as problem.h defines it */
#if defined(__CUDACC__)
#define PA_HD __host__ __device__ __forceinline__
#else
#define PA_HD static inline
#endif
#endif

/* ---- kernel shape ------------------------------------------------------------------------ */
#define PA_SM100_BM 128              /* rows of one Q tile (the MMA's M, one TMEM lane per row) */
#define PA_SM100_QT 2                /* Q tiles per CTA (ping-pong between the softmax groups) */
#define PA_SM100_BN 128              /* keys per K/V tile (the S MMA's N) */
/* The compiled instances, one row each, X(Y, D) (Y passed through): the launcher's prototypes and
 * dispatch table and supports()' head-dim rule come from this list; a new head dim is a row here and
 * its file sm100_fwd_d<D>.cu (TMEM budget: NOTES.md). Dqk == Dv == D only. */
#define PA_SM100_LIST(X, Y) X(Y, 64) X(Y, 128)
#define PA_SM100_HAS_DIM_(d, D) (d) == (D) ||
#define PA_SM100_HAS_DIM(d) (PA_SM100_LIST(PA_SM100_HAS_DIM_, d) 0)
#define PA_SM100_STAGES(d) 2 /* 3 slots at d64 spilled (ptxas, 168-register cap of 10 warps) */
/* warps 0-3: softmax of tile 0, 4-7: tile 1, 8: MMA issue (and TMEM owner), 9: TMA loads */
#define PA_SM100_WARPS 10
#define PA_SM100_THREADS (32 * PA_SM100_WARPS)
#define PA_SM100_MMA_WARP 8
#define PA_SM100_TMA_WARP 9
#define PA_SM100_TMEM_COLS 512
#define PA_SM100_S_COL(t) (128 * (t))
#define PA_SM100_O_COL(d, t) (256 + (d) * (t))
/* barriers: q_full, k_full[ST], v_full[ST], k_empty[ST], v_empty[ST], s_full[2], p_ready[2],
 * pv_done[2], then the 4-byte TMEM address slot */
#define PA_SM100_NBARS(st) (1 + 4 * (st) + 6)
#define PA_SM100_QBYTES(d) (PA_SM100_QT * PA_SM100_BM * (d) * 2)
#define PA_SM100_KVBYTES(d) (PA_SM100_BN * (d) * 2)
#define PA_SM100_SMEM_SHAPE(d, st) (PA_SM100_QBYTES(d) + 2 * (st) * PA_SM100_KVBYTES(d) + 8 * PA_SM100_NBARS(st) + 16 + 1024)
#define PA_SM100_SMEM(d) PA_SM100_SMEM_SHAPE(d, PA_SM100_STAGES(d))
#define PA_SM100_MAX_SEQ ((1 << 30) - 1)

/* ---- descriptors (PTX ISA, tcgen05 "matrix descriptors" / "instruction descriptor") ---------- */
enum { PA_SM100_SW_NONE = 0, PA_SM100_SW_128B_BASE32B = 1, PA_SM100_SW_128B = 2, PA_SM100_SW_64B = 4, PA_SM100_SW_32B = 6 };

/* Shared-memory matrix descriptor: start, leading and stride byte offsets (>> 4, 14 bits each),
 * the fixed version 1 at bits 46-47, base offset 0 (every tile is 1024-byte aligned), layout type
 * at bits 61-63. */
PA_HD uint64_t sm100_sdesc(uint32_t start, uint32_t lbo, uint32_t sbo, uint32_t layout)
{
    return (uint64_t)((start >> 4) & 0x3FFFu) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)1 << 46) | ((uint64_t)(layout & 7u) << 61);
}

/* kind::f16 instruction descriptor: f32 accumulator (c_format 1), A/B type 0 f16 / 1 bf16,
 * a_major/b_major 0 = K-major, 1 = MN-major, N >> 3 at bits 17-22, M >> 4 at bits 24-28. */
PA_HD uint32_t sm100_idesc_f16(int bf16, int m, int n, int a_mn_major, int b_mn_major)
{
    const uint32_t f = bf16 ? 1u : 0u;
    return (1u << 4) | (f << 7) | (f << 10) | ((uint32_t)(a_mn_major & 1) << 15) | ((uint32_t)(b_mn_major & 1) << 16) |
           ((uint32_t)(n >> 3) << 17) | ((uint32_t)(m >> 4) << 24);
}

/* S = Q K^T, k-step kk (16 columns of the head dim): both operands K-major, 128-byte swizzle.
 * A k-step is 32 bytes inside a 128-byte row: the start moves by 32 bytes inside a 64-column block,
 * to the next block (rows x 128 bytes further) every 4 steps; SBO = 1024 (8 rows of 128 bytes);
 * LBO is unused by K-major swizzled layouts (encoded as 1). */
PA_HD uint64_t sm100_desc_kmajor(uint32_t tile, int rows, int kk)
{
    return sm100_sdesc(tile + (uint32_t)(kk / 4) * (uint32_t)rows * 128u + (uint32_t)(kk % 4) * 32u, 16u, 1024u,
                       PA_SM100_SW_128B);
}
/* O += P V, k-step ks (16 keys): V is the B operand, N (head dim) contiguous = MN-major, 128-byte
 * swizzle. The start moves by 16 rows of 128 bytes per step; LBO = distance between 64-column
 * blocks (BN rows x 128 bytes), SBO = 1024 (8 keys). */
PA_HD uint64_t sm100_desc_v(uint32_t tile, int bn, int ks)
{
    return sm100_sdesc(tile + (uint32_t)ks * 16u * 128u, (uint32_t)bn * 128u, 1024u, PA_SM100_SW_128B);
}
/* TMEM address: lane in the high half, column in the low half. */
PA_HD uint32_t sm100_taddr(uint32_t base, int lane, int col) { return base + ((uint32_t)lane << 16) + (uint32_t)col; }

/* ---- exponentials on the FMA pipe --------------------------------------------------------- */
/* sm_100a's SFU does 16 ex2 per clock per SM against 128 FMAs, and the softmax is bound by it:
 * as FlashAttention-4 does, part of the exponentials run as a polynomial on the FMA pipe. Which
 * pairs of P (of the 32 per 64 keys): 1 in 8, a guess from those throughputs (the polynomial is
 * about 11 instructions); to be tuned on a B200. */
#define PA_SM100_EXP2_FMA_PAIR(c) ((c) % 8 == 7)
/* 2^x = 2^n 2^f, n = floor(x), f in [0, 1): 2^f by a degree-4 polynomial fitted at Chebyshev
 * nodes (relative error < 4e-6, below half an f16 ulp), n added into the exponent bits. Like
 * ex2.approx.ftz: 0 for x < -126 (and -inf, masked keys), NaN stays NaN. x <= 127 assumed (the
 * kernel's arguments are <= 8: the lagging max). */
PA_HD float sm100_exp2_fma(float x)
{
    const float xc = x >= -126.f ? x : -126.f; /* NaN goes to -126 here and is returned below */
    const float n = floorf(xc), f = xc - n;
    float p = 0.0136703094f;
    p = fmaf(p, f, 0.0517449975f);
    p = fmaf(p, f, 0.241604358f);
    p = fmaf(p, f, 0.692972898f);
    p = fmaf(p, f, 1.00000346f);
    uint32_t bits;
    memcpy(&bits, &p, 4);
    bits += (uint32_t)(int32_t)n << 23;
    memcpy(&p, &bits, 4);
    return x >= -126.f ? p : (x < -126.f ? 0.f : x);
}

#endif
