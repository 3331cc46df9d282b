/* Which keys a block of query rows visits, as every tiled kernel computes it: the key range of one
 * row under the bottom-right masks, and the hull of key tiles of a row block with the tiles that no
 * row masks. Plain C with host+device inline functions (hd.h's PA_HD), in the kernels' int32
 * row arithmetic (pa_key_range in problem.h is the int64 host form). */
#ifndef PORTATTN_BLOCK_H
#define PORTATTN_BLOCK_H

#include <stdint.h>

#include "fwd_args.h"
#include "hd.h"

/* Keys [*lo, *hi] that query row i of a sequence with sq queries and sk keys may see (window sides
 * wl, wr, -1 = unbounded, causal folded into wr = 0); *lo > *hi = none. int64 inside: i + sk - sq - wl
 * can leave the int32 range even though the result, clamped to [0, sk], does not. */
PA_HD void pa_row_keys(int i, int sq, int sk, int wl, int wr, int *lo, int *hi)
{
    const int64_t diag = (int64_t)i + sk - sq;
    int64_t l = wl < 0 ? 0 : diag - wl, h = wr < 0 ? (int64_t)sk - 1 : diag + wr;
    l = l < 0 ? 0 : (l > sk ? sk : l);
    h = h > sk - 1 ? sk - 1 : (h < -1 ? -1 : h);
    *lo = (int)l;
    *hi = (int)h;
}

/* The key tiles of bn keys that rows [m0, m0 + bm) (clipped to sq) visit: [n_lo, n_hi), the hull of
 * the rows' ranges (empty when no row sees a key), and [full_lo, full_hi), the tiles every row of the
 * block sees in full, which skip the mask. */
typedef struct pa_tile_hull {
    int n_lo, n_hi, full_lo, full_hi;
} pa_tile_hull;

PA_HD pa_tile_hull pa_tile_hull_of(int m0, int bm, int bn, int sq, int sk, int wl, int wr)
{
    int lo_f, hi_f, lo_l, hi_l;
    const int mlast = (m0 + bm < sq ? m0 + bm : sq) - 1;
    pa_row_keys(m0, sq, sk, wl, wr, &lo_f, &hi_f);
    pa_row_keys(mlast, sq, sk, wl, wr, &lo_l, &hi_l);
    pa_tile_hull t;
    t.n_lo = lo_f / bn, t.n_hi = hi_l < lo_f ? t.n_lo : hi_l / bn + 1;
    t.full_lo = (lo_l + bn - 1) / bn, t.full_hi = (hi_f + 1) / bn;
    return t;
}

/* The backward's transposed question: the row blocks of bm rows whose rows see a key of [n0, n1]
 * (hi(i) >= n0 and lo(i) <= n1; f's window, diag = sk - sq): blocks *mb0 .. *mb0 + *nm - 1 (*nm = 0:
 * none). The window is read through f where the kernel needs it: cuda-sm80's d128 backward, at 255
 * registers, spilled 8 bytes on sm_80 with the two sides passed as values. */
PA_HD void pa_bwd_row_blocks(const pa_fwd_args *f, int sq, int64_t diag, int n0, int n1, int bm, int *mb0, int *nm)
{
    int64_t ilo = 0, ihi = (int64_t)sq - 1;
    if (f->wr >= 0 && n0 - diag - f->wr > ilo) ilo = n0 - diag - f->wr;
    if (f->wl >= 0 && n1 + f->wl - diag < ihi) ihi = n1 + f->wl - diag;
    *mb0 = ilo <= ihi ? (int)(ilo / bm) : 0;
    *nm = ilo <= ihi ? (int)(ihi / bm) - *mb0 + 1 : 0;
}

#endif
