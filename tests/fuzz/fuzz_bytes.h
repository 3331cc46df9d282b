/* The fuzz targets' input reader: bytes taken big-endian from the front, zeros once the input runs out
 * (so every input, however short, describes a call). */
#ifndef PORTATTN_FUZZ_BYTES_H
#define PORTATTN_FUZZ_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct bytes { const uint8_t *p; size_t n; } bytes;

static inline uint64_t take(bytes *b, int nbytes)
{
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++) v = v << 8 | (b->n ? (b->n--, *b->p++) : 0);
    return v;
}

#endif
