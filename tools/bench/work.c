/* What a row counts, so that TFLOPS and KV bytes/s mean the same on every backend. */
#include "bench.h"

/* Forward FLOPs. FlashAttention's convention (full Sq*Sk, halved when causal) when there is no
 * window; a sliding window has no convention there, and counting the full square would inflate
 * TFLOPS by Sk/L, so windowed rows count the (query, key) pairs actually visible. */
double seq_flops(const shape *s, int64_t sq, int64_t sk)
{
    double pairs = (double)sq * (double)sk;
    int64_t wl = s->wl, wr = s->causal ? 0 : s->wr;
    if (wl >= 0 || (wr >= 0 && !s->causal)) {
        pairs = 0;
        for (int64_t i = 0; i < sq; i++) { /* the bottom-right window rule of portattn.h */
            int64_t lo = wl < 0 ? 0 : i + sk - sq - wl, hi = wr < 0 ? sk - 1 : i + sk - sq + wr;
            lo = lo < 0 ? 0 : lo;
            hi = hi > sk - 1 ? sk - 1 : hi;
            pairs += hi >= lo ? (double)(hi - lo + 1) : 0;
        }
    } else if (s->causal) {
        pairs *= 0.5;
    }
    return 2.0 * (double)s->hq * pairs * (double)(s->d + s->dv);
}

/* Keys a sequence must read at least once: all of them, except that a window (bottom-right, as in
 * portattn.h) hides those left of the first query row's window and right of the last row's. */
double seq_keys(const shape *s, int64_t sq, int64_t sk)
{
    int64_t wl = s->wl, wr = s->causal ? 0 : s->wr;
    int64_t lo = wl < 0 ? 0 : sk - sq - wl, hi = wr < 0 ? sk - 1 : sk - 1 + wr;
    lo = lo < 0 ? 0 : lo;
    hi = hi > sk - 1 ? sk - 1 : hi;
    return hi >= lo ? (double)(hi - lo + 1) : 0;
}
