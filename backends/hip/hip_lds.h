/* LDS (shared memory) layout of the HIP kernels, derived from one bank model per target (issue 5).
 * Plain C, for the host tests and for HIP device code alike; the kernels take every LDS address from
 * the functions below, so the bank-conflict proof (tests/test_hip_lds.c) checks the addresses the
 * kernels use, not a copy of them.
 *
 * Tiles hold rows of head-dim elements (f16/bf16) as 16-byte chunks. Chunk c of row r is stored at
 * chunk c ^ x(r) of its row, x(r) = r % P where P = chunks per "bank row" (banks x bank width / 16
 * bytes: 8 for 32 banks of 4 bytes, 16 for 64 banks); rows shorter than a bank row (d64 on 64 banks)
 * use a permutation of (r / rows-per-bank-row) % chunks. The XOR never leaves the row (head dims
 * 64/128/256 give 8/16/32 chunks). Facts from shared/reference/amd-anchors.md
 * section 2: CDNA2/CDNA3 (gfx90a, gfx940, gfx942) and RDNA3 (gfx1100, unverified) have 32 banks of
 * 4 bytes, gfx950 64. */
#ifndef PORTATTN_HIP_LDS_H
#define PORTATTN_HIP_LDS_H

#if defined(__HIPCC__) || defined(__CUDACC__)
#define PA_LDS_FN __host__ __device__ static inline
#else
#define PA_LDS_FN static inline
#endif

typedef struct pa_lds_model {
    const char *target; /* "gfx90a", ... */
    int banks;          /* 32 or 64 */
    int bank_bytes;     /* 4 */
    int wave;           /* 64 (CDNA) or 32 (RDNA3 default) */
    int ck_b128_read_phases; /* 1: ds_read_b128 serves the CK lane groups (0-3 + 20-23, ...), 32 banks */
} pa_lds_model;

/* 16-byte chunks per bank row: the XOR period of the swizzle. */
PA_LDS_FN int pa_lds_period(const pa_lds_model *m) { return m->banks * m->bank_bytes / 16; }

/* Byte address of chunk `ch` of row `row` in a tile of `chunks` chunks per row (a power of two).
 * Rows of at least a bank row XOR by row % period; shorter rows (d64 on 64 banks: two rows per bank
 * row) XOR by (row / rows-per-bank-row) % chunks, so the XOR stays inside the row and the rows that
 * share a bank row still spread a column over every bank. */
PA_LDS_FN int pa_lds_chunk_addr(const pa_lds_model *m, int row, int ch, int chunks)
{
    const int p = pa_lds_period(m), share = chunks >= p ? 1 : p / chunks;
    int x = row % p;
    if (share > 1) {
        /* q = (row / share) % chunks with bits 1 and 2 swapped: the V gathers of P.V read keys
         * k and k + 4 (32x32) or k, k + 4, k + 8, k + 12 (16x16) in one phase, which must land on
         * different chunk groups (tests/test_hip_lds.c proves it for d64 on 64 banks) */
        const int q = (row / share) % chunks;
        x = (q & ~6) | ((q & 2) << 1) | ((q & 4) >> 1);
    }
    return (row * chunks + (ch ^ x)) * 16;
}

/* ---- the tile loops' accesses (the kernels call these) ----------------------------------------- */

/* Tile store from global memory, ds_write_b128: pass `pass` of the wave writes rows
 * pass * (wave / chunks) + lane / chunks, chunk lane % chunks (chunks <= wave). */
PA_LDS_FN int pa_lds_store_addr(const pa_lds_model *m, int lane, int pass, int chunks)
{
    const int rows_per_pass = m->wave / chunks;
    return pa_lds_chunk_addr(m, pass * rows_per_pass + lane / chunks, lane % chunks, chunks);
}

/* MFMA operand read, ds_read_b128 (8 halves per lane, "KPack" = 8): for an M- or N-dimension of `mn`
 * rows (32 for 32x32x8, 16 for 16x16x16), lane l reads row row0 + l % mn at chunk
 * kgroup * (wave / mn) + l / mn; one read feeds two MFMA k-steps. The k order inside those steps is
 * permuted the same way for A and B, which leaves the dot products unchanged. */
PA_LDS_FN int pa_lds_frag_addr(const pa_lds_model *m, int lane, int mn, int row0, int kgroup, int chunks)
{
    const int lanes_k = m->wave / mn; /* lanes that share a row, each on its own chunk */
    return pa_lds_chunk_addr(m, row0 + lane % mn, kgroup * lanes_k + lane / mn, chunks);
}

/* WMMA (RDNA3, wave32) operand read: lanes i and i + 16 hold the same 16 halves of row i (two
 * ds_read_b128 per lane, `half` 0 and 1 = chunks 2 * kstep and 2 * kstep + 1). */
PA_LDS_FN int pa_lds_wmma_addr(const pa_lds_model *m, int lane, int row0, int kstep, int half, int chunks)
{
    return pa_lds_chunk_addr(m, row0 + lane % 16, 2 * kstep + half, chunks);
}

/* P.V with V row-major [key][dim]: the B operand wants 4 consecutive keys of one dim per lane (MFMA
 * lane j + mn * (k / 4) holds keys k % 4), which the kernels gather with four ds_read_u16: read r of
 * lane l is dim col0 + l % mn of key key0 + 4 * (l / mn) + r. Returns that half's byte address. */
PA_LDS_FN int pa_lds_v_half_addr(const pa_lds_model *m, int lane, int mn, int key0, int r, int col0, int chunks)
{
    const int key = key0 + 4 * (lane / mn) + r, col = col0 + lane % mn;
    return pa_lds_chunk_addr(m, key, col / 8, chunks) + (col % 8) * 2;
}

/* Lanes served in one LDS pass ("phase") for an access of `bytes` per lane; lanes `first` onward of
 * phase `ph` are listed in out[] (returns how many). b128 reads on the 32-bank CDNA LDS use CK's
 * lane groups (amd-anchors.md section 2); everything else takes consecutive lanes filling the banks
 * once (b32 and b16: half a wave; b64: 16 lanes; b128: 8; twice as many on 64 banks). */
/* Consecutive lanes that fill the banks once with `bytes` each (at most a wave). */
PA_LDS_FN int pa_lds_phase_size(const pa_lds_model *m, int bytes)
{
    const int per_lane = bytes < 4 ? 4 : bytes; /* b16 occupies a bank like b32 */
    const int n = m->banks * m->bank_bytes / per_lane;
    return n < m->wave ? n : m->wave;
}

PA_LDS_FN int pa_lds_phase(const pa_lds_model *m, int bytes, int is_read, int ph, int out[64])
{
    const int n = pa_lds_phase_size(m, bytes);
    if (bytes == 16 && is_read && m->ck_b128_read_phases && m->wave == 64) {
        static const int first[8][2] = {{0, 20}, {4, 16}, {8, 28}, {12, 24}, {32, 52}, {36, 48}, {40, 60}, {44, 56}};
        for (int i = 0; i < 4; i++) out[i] = first[ph][0] + i, out[4 + i] = first[ph][1] + i;
        return 8;
    }
    for (int i = 0; i < n; i++) out[i] = ph * n + i;
    return n;
}

/* Phases of one wave-wide access. */
PA_LDS_FN int pa_lds_phases(const pa_lds_model *m, int bytes) { return m->wave / pa_lds_phase_size(m, bytes); }

#endif
