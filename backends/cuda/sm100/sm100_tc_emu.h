/* cuda-sm100: an exact software model of the tcgen05 operations the kernel uses, for the emulation
 * build (the kernel source on sm_90 with these in place of the tcgen05 instructions) and for
 * the CPU test of the emulator itself (tests/sim/test_sm100_emu.c). __host__ __device__, plain C.
 *
 * What it models (PTX ISA, tcgen05 sections):
 * - TMEM: 128 lanes x 512 columns of 32-bit cells; an address is (lane << 16) | column.
 * - The kind::f16 instruction descriptor, decoded field by field; reserved, sparse, saturate and
 *   max-shift bits must be 0, and anything this model does not implement (M = 64, f16
 *   accumulators, A and B of different types) is an error rather than a guess.
 * - Shared-memory matrix descriptors: start, LBO, SBO (>> 4), version 1, base offset, LBO mode and
 *   the layout type (none, 32/64/128-byte swizzle). Element addresses follow the canonical
 *   K-major and MN-major layouts; the swizzle is the XOR of address bits [7, 7 + log2(W/16)) into
 *   bits [4, ...) that TMA applies when it writes a box (so tiles must be 1024-byte aligned).
 * - tcgen05.mma.cta_group::1.kind::f16, A from shared memory (SS) or from TMEM (TS: row m in lane
 *   m, the 16-bit elements k = 2c and 2c + 1 in the low and high halves of column c).
 * - tcgen05.ld/st .32x32b.xN with the warp-quadrant rule: warp w (of its warpgroup) may touch
 *   lanes 32 (w % 4) .. + 31 only.
 * Every function returns 0 or an error code (SM100_EMU_E*); nothing is silently clamped. */
#ifndef PORTATTN_SM100_TC_EMU_H
#define PORTATTN_SM100_TC_EMU_H

#include <stdint.h>
#include <string.h>

#include "sm100_desc.h"

#define SM100_TMEM_LANES 128
#define SM100_TMEM_COLS 512

enum {
    SM100_EMU_OK = 0,
    SM100_EMU_EIDESC = 1,   /* instruction descriptor: reserved bit set or unsupported field */
    SM100_EMU_ESHAPE = 2,   /* M/N not a valid (or modelled) shape */
    SM100_EMU_ESDESC = 3,   /* shared-memory descriptor: version, reserved bits, layout */
    SM100_EMU_ETMEM = 4,    /* TMEM address out of range */
    SM100_EMU_EQUADRANT = 5, /* tcgen05.ld/st outside the warp's lane quadrant */
    SM100_EMU_ESMEM = 6,    /* operand outside the shared-memory window */
    SM100_EMU_EMAJOR = 7    /* A from TMEM must be K-major */
};

typedef struct sm100_idesc_t {
    int c_f32, bf16, a_neg, b_neg, a_mn, b_mn, m, n;
} sm100_idesc_t;

typedef struct sm100_sdesc_t {
    uint32_t start, lbo, sbo, base_offset, lbo_mode, layout, swizzle_bytes; /* swizzle_bytes 0 = none */
} sm100_sdesc_t;

PA_HD int sm100_emu_idesc(uint32_t d, sm100_idesc_t *o)
{
    /* bits 0-3 sparsity/saturate, 6, 23, 29 reserved, 30-31 max shift: all 0 for dense kind::f16 */
    if (d & (0xFu | (1u << 6) | (1u << 23) | (1u << 29) | (3u << 30))) return SM100_EMU_EIDESC;
    const uint32_t c = (d >> 4) & 3u, a = (d >> 7) & 7u, b = (d >> 10) & 7u;
    if (c != 1u || a > 1u || a != b) return SM100_EMU_EIDESC; /* f32 accumulate, f16/bf16 pairs only */
    o->c_f32 = 1, o->bf16 = (int)a;
    o->a_neg = (int)((d >> 13) & 1u), o->b_neg = (int)((d >> 14) & 1u);
    o->a_mn = (int)((d >> 15) & 1u), o->b_mn = (int)((d >> 16) & 1u);
    o->n = (int)((d >> 17) & 63u) << 3, o->m = (int)((d >> 24) & 31u) << 4;
    /* cta_group::1: M = 64 has its own TMEM layout, not modelled; M = 128 takes N % 16 in [16, 256] */
    if (o->m != 128 || o->n < 16 || o->n > 256 || o->n % 16) return SM100_EMU_ESHAPE;
    return SM100_EMU_OK;
}

PA_HD int sm100_emu_sdesc(uint64_t d, sm100_sdesc_t *o)
{
    /* reserved: bits 14-15, 30-31, 48, 53-60 */
    const uint64_t rsv = (3ull << 14) | (3ull << 30) | (1ull << 48) | (0xFFull << 53);
    if (d & rsv) return SM100_EMU_ESDESC;
    if (((d >> 46) & 3u) != 1u) return SM100_EMU_ESDESC; /* version 1 (tcgen05), not the sm_90 format */
    o->start = (uint32_t)(d & 0x3FFFu) << 4;
    o->lbo = (uint32_t)((d >> 16) & 0x3FFFu) << 4;
    o->sbo = (uint32_t)((d >> 32) & 0x3FFFu) << 4;
    o->base_offset = (uint32_t)((d >> 49) & 7u);
    o->lbo_mode = (uint32_t)((d >> 52) & 1u);
    o->layout = (uint32_t)(d >> 61);
    o->swizzle_bytes = o->layout == PA_SM100_SW_128B ? 128u : o->layout == PA_SM100_SW_64B ? 64u
                     : o->layout == PA_SM100_SW_32B ? 32u : 0u;
    if (o->layout != PA_SM100_SW_NONE && !o->swizzle_bytes) return SM100_EMU_ESDESC; /* 128B_base32B: not modelled */
    if (o->base_offset || o->lbo_mode) return SM100_EMU_ESDESC; /* not modelled: tiles are 1024-byte aligned */
    return SM100_EMU_OK;
}

/* Shared-window byte address of element (mn, k) of a 16-bit operand (mn: row of A or column of B). */
PA_HD uint32_t sm100_emu_elem_addr(const sm100_sdesc_t *f, int mn_major, int mn, int k)
{
    const uint32_t w = f->swizzle_bytes, e = w / 2u, umn = (uint32_t)mn, uk = (uint32_t)k;
    uint32_t a;
    if (!w) /* interleaved 8 x 16-byte core matrices: LBO steps along K, SBO along M/N (K-major) */
        a = f->start + (umn / 8u) * f->sbo + (uk / 8u) * f->lbo + (umn % 8u) * 16u + (uk % 8u) * 2u;
    else if (!mn_major) /* rows of W bytes along K, 8-row groups SBO apart */
        a = f->start + (umn / 8u) * f->sbo + (umn % 8u) * w + uk * 2u;
    else /* W bytes along M/N per K row, 8-row (K) groups SBO apart, W-byte column blocks LBO apart */
        a = f->start + (umn / e) * f->lbo + (uk / 8u) * f->sbo + (uk % 8u) * w + (umn % e) * 2u;
    if (w) a ^= ((a >> 7) & (w / 16u - 1u)) << 4;
    return a;
}

PA_HD float sm100_emu_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
PA_HD uint32_t sm100_emu_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
PA_HD float sm100_emu_h2f(uint32_t h, int bf16)
{
    h &= 0xFFFFu;
    if (bf16) return sm100_emu_f32(h << 16);
    const uint32_t s = (h & 0x8000u) << 16, ex = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (ex == 0x1Fu) return sm100_emu_f32(s | 0x7F800000u | (man << 13));
    if (ex == 0) {
        const float v = (float)man * (1.0f / 16777216.0f);
        return s ? -v : v;
    }
    return sm100_emu_f32(s | ((ex + 112u) << 23) | (man << 13));
}

/* One 16-bit operand element from shared memory (smem[x] is shared-window byte x; size bytes). */
PA_HD int sm100_emu_smem_elem(const uint8_t *smem, uint32_t size, const sm100_sdesc_t *f, int mn_major, int mn, int k,
                              int bf16, float *v)
{
    const uint32_t a = sm100_emu_elem_addr(f, mn_major, mn, k);
    if (a + 2u > size) return SM100_EMU_ESMEM;
    *v = sm100_emu_h2f((uint32_t)smem[a] | ((uint32_t)smem[a + 1] << 8), bf16);
    return SM100_EMU_OK;
}

/* D[m][n] (+)= sum_k A[m][k] B[n][k] over one K = 16 step; A from shared memory (a_desc) or
 * from TMEM (a_taddr, when a_from_tmem). tmem: 128 x 512 cells, row-major by lane. */
PA_HD int sm100_emu_mma_f16(uint32_t *tmem, const uint8_t *smem, uint32_t smem_size, uint32_t d_taddr, int a_from_tmem,
                            uint64_t a_desc, uint32_t a_taddr, uint64_t b_desc, uint32_t idesc, int accumulate)
{
    sm100_idesc_t id;
    sm100_sdesc_t fa = {0, 0, 0, 0, 0, 0, 0}, fb;
    int e = sm100_emu_idesc(idesc, &id);
    if (e) return e;
    if ((e = sm100_emu_sdesc(b_desc, &fb))) return e;
    if (!a_from_tmem && (e = sm100_emu_sdesc(a_desc, &fa))) return e;
    if (a_from_tmem && id.a_mn) return SM100_EMU_EMAJOR;
    const uint32_t dl = d_taddr >> 16, dc = d_taddr & 0xFFFFu, al = a_taddr >> 16, ac = a_taddr & 0xFFFFu;
    if (dl != 0 || dc + (uint32_t)id.n > SM100_TMEM_COLS) return SM100_EMU_ETMEM; /* M = 128: lanes 0-127 */
    if (a_from_tmem && (al != 0 || ac + 8u > SM100_TMEM_COLS)) return SM100_EMU_ETMEM;
    for (int m = 0; m < id.m; ++m) {
        float a[16];
        for (int k = 0; k < 16; ++k) {
            if (a_from_tmem) {
                const uint32_t cell = tmem[(uint32_t)m * SM100_TMEM_COLS + ac + (uint32_t)(k >> 1)];
                a[k] = sm100_emu_h2f(k & 1 ? cell >> 16 : cell, id.bf16);
            } else if ((e = sm100_emu_smem_elem(smem, smem_size, &fa, id.a_mn, m, k, id.bf16, &a[k]))) {
                return e;
            }
            if (id.a_neg) a[k] = -a[k];
        }
        for (int n = 0; n < id.n; ++n) {
            double acc = 0.0; /* products of 16-bit floats are exact in double; one rounding per step */
            for (int k = 0; k < 16; ++k) {
                float b;
                if ((e = sm100_emu_smem_elem(smem, smem_size, &fb, id.b_mn, n, k, id.bf16, &b))) return e;
                acc += (double)a[k] * (double)(id.b_neg ? -b : b);
            }
            uint32_t *c = &tmem[(uint32_t)m * SM100_TMEM_COLS + dc + (uint32_t)n];
            *c = sm100_emu_bits(accumulate ? (float)((double)sm100_emu_f32(*c) + acc) : (float)acc);
        }
    }
    return SM100_EMU_OK;
}

/* tcgen05.ld/st .32x32b.xN of one thread: `warp` is the warp's index in the CTA (its quadrant is
 * warp % 4), `lane` the thread's lane; register j <-> column (taddr's column + j) of TMEM lane
 * (taddr's lane + lane). */
PA_HD int sm100_emu_check_32x32b(int warp, uint32_t taddr, int n)
{
    const uint32_t l = taddr >> 16, c = taddr & 0xFFFFu;
    if (n < 1 || n > 128 || (n & (n - 1))) return SM100_EMU_ESHAPE;
    if (l != 32u * (uint32_t)(warp % 4)) return SM100_EMU_EQUADRANT;
    if (c + (uint32_t)n > SM100_TMEM_COLS) return SM100_EMU_ETMEM;
    return SM100_EMU_OK;
}
PA_HD int sm100_emu_ld_32x32b(const uint32_t *tmem, int warp, int lane, uint32_t taddr, int n, uint32_t *r)
{
    const int e = sm100_emu_check_32x32b(warp, taddr, n);
    if (e) return e;
    const uint32_t *row = tmem + ((taddr >> 16) + (uint32_t)lane) * SM100_TMEM_COLS + (taddr & 0xFFFFu);
    for (int j = 0; j < n; ++j) r[j] = row[j];
    return SM100_EMU_OK;
}
PA_HD int sm100_emu_st_32x32b(uint32_t *tmem, int warp, int lane, uint32_t taddr, int n, const uint32_t *r)
{
    const int e = sm100_emu_check_32x32b(warp, taddr, n);
    if (e) return e;
    uint32_t *row = tmem + ((taddr >> 16) + (uint32_t)lane) * SM100_TMEM_COLS + (taddr & 0xFFFFu);
    for (int j = 0; j < n; ++j) row[j] = r[j];
    return SM100_EMU_OK;
}

#endif
