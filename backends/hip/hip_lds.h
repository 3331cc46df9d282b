/* LDS (shared memory) layout of the HIP kernels, derived from one bank model per target.
 * Plain C, for the host tests and for HIP device code alike; the kernels take every LDS address from
 * the functions below, so the bank-conflict proof (tests/sim/test_hip_lds.c) checks the addresses the
 * kernels use, not a copy of them.
 *
 * Tiles hold rows of head-dim elements (f16/bf16) as 16-byte chunks, rows packed without padding.
 * Chunk c of row r is stored at chunk c ^ x(r) of its row, where x(r) < g and g, the XOR's block, is
 * the largest power of two that divides the row's chunk count, at most P = chunks per "bank row"
 * (banks x bank width / 16 bytes: 8 for 32 banks of 4 bytes, 16 for 64 banks). With g = P (rows of a
 * multiple of P chunks: d128, d256 on 32 banks) x(r) = r % P; with g < P (d64 on 64 banks, and the
 * head dims whose rows hold an odd multiple of 4 chunks: d32, d96, d160, d224) the rows that share a
 * bank row's banks take a permutation of (r / (P / g)) % g. The XOR never leaves its aligned block of g
 * chunks, and a row starts on such a block, so the layout is a permutation of each row and of each
 * aligned run of g chunks of the tile (what the row-major tile stores rely on). Rows must hold a
 * multiple of 4 chunks (head dims that are multiples of 32). Facts from docs/design.md
 * section 9: CDNA2/CDNA3 (gfx90a, gfx940, gfx942) and RDNA3 (gfx1100, unverified) have 32 banks of
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

/* The XOR's block for rows of `chunks` chunks under a period of `period` chunks: the largest power of
 * two that divides `chunks`, at most the period. */
PA_LDS_FN int pa_lds_block(int period, int chunks)
{
    const int low = chunks & -chunks; /* the lowest set bit: the largest power of two dividing chunks */
    return low < period ? low : period;
}

/* Byte address of chunk `ch` of row `row` in a tile of `chunks` chunks per row (a multiple of 4).
 * Rows whose chunk count is a multiple of the period XOR by row % period. Otherwise the XOR block g is
 * smaller than a bank row, which holds share = P / g blocks: chunks / g being odd, each aligned run of
 * share rows starts once in every block of a bank row, and the runs XOR by (row / share) % g, so a
 * column still spreads over every bank. */
PA_LDS_FN int pa_lds_chunk_addr(const pa_lds_model *m, int row, int ch, int chunks)
{
    const int p = pa_lds_period(m), g = pa_lds_block(p, chunks), share = p / g;
    int x = row % p;
    if (share > 1) {
        /* q = (row / share) % g, for blocks of 8 with bits 1 and 2 swapped: the V gathers of P.V read
         * keys k and k + 4 (32x32) or k, k + 4, k + 8, k + 12 (16x16) in one phase, which must land on
         * different chunk groups (tests/sim/test_hip_lds.c proves it for d64 on 64 banks); a block of
         * 4 has no bit 2 to move it to */
        const int q = (row / share) % g;
        x = g < 8 ? q : (q & ~6) | ((q & 2) << 1) | ((q & 4) >> 1);
    }
    return (row * chunks + (ch ^ x)) * 16;
}

/* ---- the tile loops' accesses (the kernels call these) ----------------------------------------- */

/* Tile store from global memory, ds_write_b128. The kernels number a tile's 16-byte copies row-major,
 * thread-fastest (copy pass x threads + thread), so pass `pass` of a wave (pass x waves + wave, in the
 * kernel's numbering) writes copies pass * wave + lane: row copy / chunks, chunk copy % chunks. Each
 * wave thus writes whole aligned runs of the tile, which the swizzle permutes only within (see the
 * header): conflict-free for any chunk count. */
PA_LDS_FN int pa_lds_store_addr(const pa_lds_model *m, int lane, int pass, int chunks)
{
    const int copy = pass * m->wave + lane;
    return pa_lds_chunk_addr(m, copy / chunks, copy % chunks, chunks);
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

/* P.V with V row-major [key][dim]: the B operand wants 4 consecutive keys of one dim per lane (MFMA
 * lane j + mn * (k / 4) holds keys k % 4), which the kernels gather with four ds_read_u16: read r of
 * lane l is dim col0 + l % mn of key key0 + 4 * (l / mn) + r. Returns that half's byte address. */
PA_LDS_FN int pa_lds_v_half_addr(const pa_lds_model *m, int lane, int mn, int key0, int r, int col0, int chunks)
{
    const int key = key0 + 4 * (lane / mn) + r, col = col0 + lane % mn;
    return pa_lds_chunk_addr(m, key, col / 8, chunks) + (col % 8) * 2;
}

/* ---- RDNA3 (gfx1100, wave32; rdna3_fwd_kernel.h) ------------------------------------------------
 * RDNA3's bank count is not verified (docs/design.md section 9: 32 x 4 B per CU half, community
 * notes), so its tiles use one layout that must be conflict-free under two models at once, `lo` (32
 * banks) and `hi` (64 banks), each with its own phases (tests/sim/test_hip_lds.c checks both). The XOR
 * x(row) is derived from hi's period P_hi and the row's XOR block g (pa_lds_block(P_hi, chunks)):
 * rows of a multiple of P_hi chunks take row % P_hi (whose low bits are row % P_lo); other rows (d64:
 * g = 8; d32, d96, d160, d224: g = 4; d192: g = 8) take (row % g) ^ ((row / g) % share), share =
 * P_hi / g: distinct over each aligned run of g rows and, inside each aligned run of P_hi rows,
 * distinct among the rows that sit at the same offset of a 64-bank row modulo g (what 64 banks
 * need). A row starts on a block of g (g divides the chunk count), so the XOR stays in the row. Rows
 * must hold a multiple of 4 chunks (x < g needs g >= share). */
PA_LDS_FN int pa_lds_rdna3_chunk_addr(const pa_lds_model *lo, const pa_lds_model *hi, int row, int ch, int chunks)
{
    const int ph = pa_lds_period(hi), g = pa_lds_block(ph, chunks), share = ph / g;
    const int x = share == 1 ? row % ph : (row % g) ^ ((row / g) % share);
    (void)lo; /* lo's period divides hi's: row % P_hi and the short-row rule satisfy it too (proved by the test) */
    return (row * chunks + (ch ^ x)) * 16;
}

/* Tile store from global memory, ds_write_b128: pass `pass` of a wave writes the tile's copies
 * pass * wave + lane, numbered row-major as pa_lds_store_addr's. */
PA_LDS_FN int pa_lds_rdna3_store_addr(const pa_lds_model *lo, const pa_lds_model *hi, int lane, int pass, int chunks)
{
    const int copy = pass * lo->wave + lane;
    if (lo->wave % chunks == 0) /* the same copy, in the form whose row term folds per pass */
        return pa_lds_rdna3_chunk_addr(lo, hi, pass * (lo->wave / chunks) + lane / chunks, lane % chunks, chunks);
    return pa_lds_rdna3_chunk_addr(lo, hi, copy / chunks, copy % chunks, chunks);
}

/* WMMA operand rows, two ds_read_b128 per lane (K rows: A of S^T = K Q^T; Q rows: B = Q^T): lanes
 * i and i + 16 read the same 16 halves of row row0 + i (the replication WMMA wants), `half` 0 and 1 =
 * chunks 2 * kstep and 2 * kstep + 1; row0 is a multiple of 16, the period of the RDNA3 XOR. Written
 * as one per-lane base XOR the chunk's offset inside its XOR block, plus the block's and the row0
 * terms (constants: the reads' offset fields): the lane base is row (lane % 16) x chunks + x, whose
 * low bits below the block g are x alone, so the XOR is the swizzle. The kernel keeps one address
 * register for every K and Q read (per-chunk addresses, hoisted out of the key loop, spilled on
 * clang-15). tests/sim/test_hip_lds.c checks it against pa_lds_rdna3_chunk_addr. */
PA_LDS_FN int pa_lds_wmma_lane_base(const pa_lds_model *lo, const pa_lds_model *hi, int lane, int chunks)
{
    return pa_lds_rdna3_chunk_addr(lo, hi, lane % 16, 0, chunks);
}
PA_LDS_FN int pa_lds_wmma_addr_from(int lane_base, int row0, int kstep, int half, int chunks)
{
    const int g = pa_lds_block(16, chunks), ch = 2 * kstep + half; /* 16: the period of the 64-bank model */
    return (lane_base ^ ((ch % g) * 16)) + (ch - ch % g + row0 * chunks) * 16;
}
PA_LDS_FN int pa_lds_wmma_addr(const pa_lds_model *lo, const pa_lds_model *hi, int lane, int row0, int kstep, int half, int chunks)
{
    return pa_lds_wmma_addr_from(pa_lds_wmma_lane_base(lo, hi, lane, chunks), row0, kstep, half, chunks);
}

/* WMMA A operand of O^T += V^T P^T (V row-major [key][dim]): lane l (and l + 16) wants dim
 * col0 + l % 16 (col0 a multiple of 16) of 16 keys; one ds_read_u16 per key, all lanes on the same
 * key row. Written as a key-only term plus one of two lane terms: with the key a compile-time
 * constant in the unrolled gather, the first is the instruction's offset field and the kernel keeps
 * just two address registers (the generic chunk address per key and lane spilled on clang-15). It is
 * chunk (c0 + h) ^ x with c0 = col0 / 8 even and h = (l / 8) % 2, i.e. (c0 ^ x) + h or - h as bit 0 of
 * x is clear or set; tests/sim/test_hip_lds.c checks it against pa_lds_rdna3_chunk_addr. */
PA_LDS_FN int pa_lds_wmma_v_key_addr(const pa_lds_model *lo, const pa_lds_model *hi, int key, int col0, int chunks)
{
    return pa_lds_rdna3_chunk_addr(lo, hi, key, col0 / 8, chunks); /* (c0 ^ x): byte address of the lane-0 chunk */
}
PA_LDS_FN int pa_lds_wmma_v_lane_addr(int lane, int x_odd)
{
    const int h = (lane / 8) % 2;
    return (x_odd ? -16 * h : 16 * h) + (lane % 8) * 2;
}
/* bit 0 of the row's XOR (which lane term applies), from the chunk address of an even chunk */
PA_LDS_FN int pa_lds_wmma_v_x_odd(int key_addr) { return (key_addr / 16) % 2; }
PA_LDS_FN int pa_lds_wmma_v_half_addr(const pa_lds_model *lo, const pa_lds_model *hi, int lane, int key, int col0, int chunks)
{
    const int k = pa_lds_wmma_v_key_addr(lo, hi, key, col0, chunks);
    return k + pa_lds_wmma_v_lane_addr(lane, pa_lds_wmma_v_x_odd(k));
}

/* Lanes served in one LDS pass ("phase") for an access of `bytes` per lane; lanes `first` onward of
 * phase `ph` are listed in out[] (returns how many). b128 reads on the 32-bank CDNA LDS use CK's
 * lane groups (docs/design.md section 9); everything else takes consecutive lanes filling the banks
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
