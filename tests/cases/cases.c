/* The one case table (docs/design.md section 6), run against every backend.
 * Odd lengths, Sq != Sk, GQA 1/4/8 and MQA, varlen with empty sequences, every head dim a kernel
 * may claim (and odd ones for the generic kernel), causal/window/softcap combinations,
 * non-contiguous strides, LSE, numeric edge cases (no keys, huge logits), KV caches and serving
 * batches (packed queries over a paged cache). */
#include "harness.h"

#define U -1 /* unbounded window side */

const tcase test_cases[] = {
    /* name                 b  sq    sk    hq hkv dqk  dv  causal wl  wr  softcap scale layout        varlen lse amp page used append splits sinks shared */
    {"single",              1, 1,    1,    1, 1,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"sq7_sk17",            2, 7,    17,   2, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"sq17_sk7_causal",     2, 17,   7,    2, 2,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"sk1",                 2, 33,   1,    2, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"sk0_masked",          1, 5,    0,    2, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"s127_d128",           2, 127,  127,  4, 4,  128, 128, 0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"s127_d128_causal",    2, 127,  127,  4, 4,  128, 128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"s1000_gqa4",          1, 1000, 1000, 8, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"s1023_gqa8_causal",   1, 1023, 1023, 8, 1,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"mqa_sq129_sk257",     2, 129,  257,  6, 1,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"gqa4_causal_sq300",   1, 300,  517,  8, 2,  128, 128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d32",                 2, 77,   93,   2, 2,  32,  32,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d80",                 2, 77,   93,   2, 2,  80,  80,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d96",                 2, 77,   93,   2, 2,  96,  96,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d160",                1, 77,   93,   2, 2,  160, 160, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d192_v128",           1, 150,  150,  4, 2,  192, 128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d256",                1, 127,  200,  2, 2,  256, 256, 0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d256_causal",         1, 200,  200,  2, 1,  256, 256, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    /* head dims between the instances (each runs on the next wider one, its extra columns zero) */
    {"d40",                 2, 77,   93,   2, 2,  40,  40,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d48_causal_gqa2",     1, 130,  130,  4, 2,  48,  48,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d112_varlen",         3, 100,  120,  2, 2,  112, 112, 0,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d224_causal",         1, 150,  150,  2, 2,  224, 224, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d136_v72_window",     1, 140,  160,  2, 1,  136, 72,  0,    40, 8,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d64_v128_varlen_causal", 3, 90, 90,  4, 2,  64,  128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    /* varlen at the head dims of cuda-sm90's instances narrower than their shared-memory rows (d32,
     * d48, d96, d160, d224: the V tail zeroed per sequence): several key tiles, the last partial */
    {"d32_varlen_window",   3, 300,  400,  2, 2,  32,  32,  0,    60, 20, 0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d40_varlen_causal_gqa2", 4, 260, 300, 4, 2, 40,  40,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d96_varlen",          3, 250,  330,  2, 2,  96,  96,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d160_varlen_softcap", 2, 200,  260,  2, 1,  160, 160, 1,    U,  U,  10,   0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d224_varlen_causal",  2, 210,  210,  2, 2,  224, 224, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d80_decode_paged16_gqa4", 2, 1, 300, 8, 2,  80,  80,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 16, 1, 0, 0, 0, 0},
    {"d200_decode_split_causal", 1, 4, 700, 4, 1, 200, 200, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0,  1, 0, 5, 0, 0},
    {"d32_v96_decode_append2", 2, 2, 100,  4, 2,  32,  96,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0,  1, 2, 0, 0, 0},
    /* padded layouts: a store past Dv (into the padding) fails; 96/160 runs two d256 launches on HIP */
    {"d192_padded",         1, 100,  130,  2, 2,  192, 192, 0,    U,  U,  0,    0,    LAYOUT_PADDED,  0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d96_v160_padded",     2, 60,   75,   2, 2,  96,  160, 0,    U,  U,  0,    0,    LAYOUT_PADDED,  0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"d59_v37_odd",         2, 45,   61,   3, 1,  59,  37,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"window_32_0",         1, 257,  257,  4, 4,  64,  64,  0,    32, 0,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"window_16_8_sq100_sk300", 2, 100, 300, 2, 2, 64,  64,  0,    16, 8,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"window_left_only",    1, 200,  200,  2, 2,  128, 128, 0,    64, U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"window_right_only",   1, 200,  150,  2, 2,  64,  64,  0,    U,  5,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"causal_window_50",    1, 300,  300,  4, 2,  128, 128, 1,    50, U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"window_all_masked_rows", 1, 64, 16,  2, 2,  64,  64,  0,    3,  0,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"softcap_5",           2, 130,  130,  2, 2,  64,  64,  0,    U,  U,  5,    0,    LAYOUT_BSHD,    0, 1, 4, 0, 0, 0, 0, 0, 0},
    {"softcap_30_causal",   1, 200,  200,  4, 1,  128, 128, 1,    U,  U,  30,   0,    LAYOUT_BSHD,    0, 1, 8, 0, 0, 0, 0, 0, 0},
    {"scale_0.5",           1, 100,  100,  2, 2,  64,  64,  0,    U,  U,  0,    0.5f, LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"large_logits",        1, 100,  120,  2, 2,  128, 128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 30, 0, 0, 0, 0, 0, 0},
    {"layout_bhsd",         2, 100,  140,  4, 2,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_BHSD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"layout_padded",       2, 100,  140,  4, 2,  128, 128, 0,    U,  U,  0,    0,    LAYOUT_PADDED,  0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"layout_strided_d",    2, 50,   70,   2, 2,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_STRIDED_D, 0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"no_lse",              2, 100,  100,  2, 2,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"varlen",              5, 300,  300,  4, 4,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"varlen_causal_gqa4",  6, 257,  400,  8, 2,  128, 128, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"varlen_window_padded", 4, 200, 200,  4, 1,  64,  64,  0,    20, 10, 0,    0,    LAYOUT_PADDED,  1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"varlen_softcap_d256", 3, 100,  150,  2, 2,  256, 256, 1,    U,  U,  10,   0,    LAYOUT_BSHD,    1, 1, 2, 0, 0, 0, 0, 0, 0},
    /* More work items than a 132-SM GPU has CTAs: a persistent kernel's CTAs walk several items each, so
     * their Q and K/V slot rings wrap (encoder-sized: CLIP's 77 tokens, a packed batch of short prompts). */
    {"many_items_s77",      64, 77,  77,   8, 8,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"many_items_varlen_causal_gqa4", 48, 150, 150, 8, 2, 128, 128, 1, U, U, 0,   0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    /* More items than CTAs with two key tiles each, with row blocks that see no key (bottom-right
     * causal, Sq - Sk >= 128) between others, and a windowed varlen batch of short sequences. */
    {"chain_sq77_sk140_gqa4", 50, 77, 140,  8, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"chain_causal_empty_blocks", 50, 200, 60, 4, 1, 64, 64, 1,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0, 0, 0, 0, 0, 0},
    {"chain_varlen_window_d128", 60, 70, 90, 4, 2, 128, 128, 0,    40, 8,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    /* over 32 sequences: cuda-sm90 scans a varlen batch's extents 32 at a time (sm90_seek) */
    {"many_seqs_varlen_gqa2",  70, 90,  120,  4, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    1, 1, 0, 0, 0, 0, 0, 0, 0},
    /* KV cache (decode): seqused_k, shuffled page pools, appends, long caches that split. */
    {"kvcache_used_decode",   5, 1,   200,  8, 2,  64,  64,  0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 0,   1, 0, 0, 0, 0},
    {"paged16_decode_gqa4",   4, 1,   300,  8, 2,  128, 128, 0,    U,  U,  0,    0,    LAYOUT_BSHD,    0, 1, 0, 16,  1, 0, 0, 0, 0},
    {"paged64_sq16_causal_mqa", 3, 16, 257, 4, 1,  64,  64,  1,    U,  U,  0,    0,    LAYOUT_PADDED,  0, 1, 0, 64,  1, 0, 0, 0, 0},
    {"paged256_window",       2, 4,   600,  4, 4,  64,  64,  0,    100, U, 0,    0,    LAYOUT_BSHD,    0, 1, 0, 256, 0, 0, 0, 0, 0},
    /* name                      b  sq  sk    hq hkv dqk  dv  causal wl   wr softcap scale layout     varlen lse amp page used append splits sinks shared */
    {"decode_append1_paged16_gqa8", 4, 1, 520, 16, 2, 128, 128, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 16,  1, 1, 0, 0, 0},
    {"decode_sq4_append4_paged64_causal", 3, 4, 300, 8, 8, 64, 64, 1, U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 64,  1, 4, 0, 0, 0},
    {"decode_mqa_sq16_append16_paged256", 2, 16, 700, 8, 1, 128, 128, 1, U, U, 0,   0,    LAYOUT_BSHD,  0, 1, 0, 256, 1, 16, 0, 0, 0},
    {"decode_gqa4_d256_used",     3, 1,  333,  8, 2,  256, 256, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   1, 0, 0, 0, 0},
    {"decode_split_long_gqa4",    2, 1,  5000, 8, 2,  128, 128, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   1, 0, 0, 0, 0},
    {"decode_split_paged64_window_softcap", 3, 2, 3000, 4, 1, 64, 64, 1, 1000, U, 20, 0,   LAYOUT_BSHD,  0, 1, 4, 64,  1, 2, 0, 0, 0},
    {"decode_sq8_gqa4_bhsd_paged32", 2, 8, 1500, 16, 4, 128, 128, 1,    U,   U, 0,    0,    LAYOUT_BHSD,  0, 1, 0, 32,  1, 0, 0, 0, 0},
    {"decode_padded_append3_nolse", 3, 3, 200, 4, 2,  128, 128, 1,    U,   U, 0,    0,    LAYOUT_PADDED, 0, 0, 0, 0,  1, 3, 0, 0, 0},
    /* forced split counts (more splits than tiles too) and a negative scale on the decode path */
    {"decode_splits7_negscale",   3, 2,  900,  8, 2,  64,  64,  1,    U,   U, 0,   -0.2f, LAYOUT_BSHD,  0, 1, 0, 64,  1, 1, 7, 0, 0},
    {"decode_splits128_short",    2, 1,  40,   4, 4,  128, 128, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   1, 0, 128, 0, 0},
    {"decode_nosplit_long",       2, 1,  2000, 8, 1,  256, 256, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 16,  1, 0, 1, 0, 0},
    /* attention sinks: one to four dominant keys a sequence over a long tail 8-12 nats below them
     * (harness.c shape_sinks); the flushed f16 P of a gfx90a MFMA loses the tail. */
    /* name                   b  sq   sk    hq hkv dqk  dv  causal wl  wr softcap scale layout       varlen lse amp page used append splits sinks shared */
    {"sink1_tail2000_gqa2",   1, 100, 2000, 2, 1,  128, 128, 0,    U,  U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   0, 0, 0, 1, 0},
    {"sink1_tail1500_causal", 2, 130, 1500, 2, 2,  64,  64,  1,    U,  U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   0, 0, 0, 1, 0},
    {"sinks4_tail1200_mqa",   1, 70,  1200, 4, 1,  128, 128, 0,    U,  U, 0,    0,    LAYOUT_PADDED, 0, 1, 0, 0,  0, 0, 0, 4, 0},
    {"sinks2_varlen_d64",     3, 90,  1000, 2, 2,  64,  64,  0,    U,  U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 0,   0, 0, 0, 2, 0},
    {"sink1_decode_gqa4",     2, 1,   3000, 8, 2,  128, 128, 0,    U,  U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 0,   0, 0, 0, 1, 0},
    /* Serving batches: packed queries over the cache (cu_seqlens_q with seqused_k/block_table), chunks of
     * a prompt (up to sq tokens), decodes and idle sequences in one call; shuffled tables with unused pages,
     * and a prefix page shared by every odd sequence where `shared` is set. */
    /* name                        b  sq   sk    hq hkv dqk  dv  causal wl   wr softcap scale layout    varlen lse amp page used append splits sinks shared */
    {"serve_mix_paged16_gqa4_causal",  8, 64, 600,  8, 2, 128, 128, 1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 16,  1, 0, 0, 0, 1},
    {"serve_mix_paged64_causal_window", 6, 100, 900, 4, 4, 64, 64,  1,    128, U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 64,  1, 0, 0, 0, 1},
    {"serve_mix_paged256_mqa_softcap", 5, 150, 1200, 8, 1, 128, 128, 1,   U,   U, 20,   0,    LAYOUT_BSHD,  1, 1, 4, 256, 1, 0, 0, 0, 0},
    {"serve_paged16_full_d256",    4, 40,  300,  4, 2,  256, 256, 1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 16,  0, 0, 0, 0, 1},
    {"serve_used_padded_gqa8_nolse", 5, 50, 400, 16, 2, 64,  64,  1,    U,   U, 0,    0,    LAYOUT_PADDED, 1, 0, 0, 0,  1, 0, 0, 0, 0},
    {"serve_decodes_paged64_splits3", 7, 1, 2000, 8, 2,  128, 128, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 64,  1, 0, 3, 0, 0},
    {"serve_mix_paged16_bhsd_window", 4, 33, 500, 4, 2,  64,  64,  0,    50,  50, 0,   0,    LAYOUT_BHSD,  1, 1, 0, 16,  1, 0, 0, 0, 1},
    {"serve_mix_paged256_d59_v37", 4, 70,  700,  6, 3,  59,  37,  1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 256, 1, 0, 0, 0, 1},
    {"serve_mix_paged8_gqa4_d96",  5, 80,  400,  8, 2,  96,  96,  1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 8,   1, 0, 0, 0, 1},
    /* GQA groups that do not divide a 128- or 192-row block (the packed rows of cuda-sm90's KV instances
     * leave its last rows unused), and a group of 32 (4 tokens a block). */
    {"serve_mix_paged32_gqa3_causal", 6, 90, 800, 12, 4, 128, 128, 1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 32,  1, 0, 0, 0, 1},
    {"serve_mix_paged16_mqa32",    4, 40,  500,  32, 1, 128, 128, 0,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 16,  1, 0, 0, 0, 0},
    {"serve_many_paged16_gqa4_causal", 40, 20, 150, 8, 2, 128, 128, 1,    U,   U, 0,    0,    LAYOUT_BSHD,  1, 1, 0, 16,  1, 0, 0, 0, 1},
    /* KV-cache prefill: more than 16 query tokens per sequence over a cache (more queries than keys in
     * the short sequences), pages of 1 row, appends before the attention. */
    {"kvprefill_paged16_gqa4_causal", 3, 100, 700, 8, 2, 128, 128, 1,    U,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 16,  1, 0, 0, 0, 1},
    {"kvprefill_append40_paged64_window", 2, 40, 500, 4, 2, 64, 64, 1,   100, U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 64,  1, 40, 0, 0, 0},
    {"kvprefill_page1_mqa_softcap", 2, 33, 150,  4, 1,  64,  64,  0,    U,   U, 20,   0,    LAYOUT_BSHD,  0, 1, 0, 1,   1, 0, 0, 0, 0},
    {"kvprefill_gqa5_d64_causal_window", 2, 70, 600, 10, 2, 64, 64, 1, 150,   U, 0,    0,    LAYOUT_BSHD,  0, 1, 0, 64,  1, 0, 0, 0, 0},
};

const int test_case_count = (int)(sizeof test_cases / sizeof test_cases[0]);
