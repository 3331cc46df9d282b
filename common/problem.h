/* The validated, defaults-resolved form of a forward call that every backend receives.
 * Plain C; included by host C11 code and by CUDA/HIP device code alike. */
#ifndef PORTATTN_PROBLEM_H
#define PORTATTN_PROBLEM_H

#include "hd.h"
#include "portattn.h"

typedef struct pa_problem {
    portattn_fwd_params_t p; /* the caller's params, copied (never read back from the caller) */
    float scale;             /* resolved softmax scale */
    int64_t window_left;     /* resolved: -1 = unbounded */
    int64_t window_right;    /* resolved, causal folded in: -1 = unbounded */
    int varlen;              /* cu_seqlens_q given: Q, O and the LSE are packed [1, total, H, D] */
    int varlen_k;            /* cu_seqlens_k given too: K and V are packed (else per-sequence or paged,
                                the queries then run over a KV cache: pa_serving) */
    int64_t max_seqlen_q;    /* bound on any sequence's query length (grid sizing) */
    int64_t max_seqlen_k;    /* bound on any sequence's key length */
    int64_t group;           /* heads_q / heads_kv */
    int64_t seqlen_new;      /* tokens appended to the KV cache per sequence (0 = no append) */
    int kv_cache;            /* seqused_k or block_table given */
} pa_problem;

/* Packed queries over a KV cache (cu_seqlens_q with seqused_k and/or block_table, cu_seqlens_k
 * NULL): the serving call, in which sequence b's queries are the last tokens of its cached keys. */
PA_HD int pa_serving(const pa_problem *pb) { return pb->varlen && !pb->varlen_k; }

/* Cache length of a sequence as the attention sees it: seqused_k[b] (+ appended tokens), clamped
 * to [0, capacity] so that garbage lengths in device memory never address outside K/V. The kernels
 * that get no pa_problem call the first form with their own copies of the fields. */
PA_HD int64_t pa_cache_len_of(int64_t used, int64_t seqlen_new, int64_t capacity)
{
    int64_t n = (used < 0 ? 0 : used) + seqlen_new;
    return n > capacity ? capacity : n;
}
PA_HD int64_t pa_cache_len(const pa_problem *pb, int64_t used) { return pa_cache_len_of(used, pb->seqlen_new, pb->p.seqlen_k); }

/* A page-table entry as the GPU kernels use it: clamped into the pool [0, num_pages), since entries
 * in device memory are not validated and must never address outside K/V. */
PA_HD int64_t pa_page_clamp(int64_t page, int64_t num_pages)
{
    return page < 0 ? 0 : (page >= num_pages ? num_pages - 1 : page);
}

/* Keys [*lo, *hi] visible to query row i of a sequence with sq queries and sk keys (bottom-right
 * aligned window; -1 = unbounded side). The row sees nothing when *lo > *hi. */
PA_HD void pa_key_range(int64_t i, int64_t sq, int64_t sk, int64_t wl, int64_t wr,
                        int64_t *lo, int64_t *hi)
{
    /* Saturating: a window side may be any int64 (INT64_MAX is a legal "everything"). */
    int64_t diag = (i - sq) + sk; /* i < sq, so no overflow */
    int64_t l = (wl < 0 || wl >= diag) ? 0 : diag - wl;
    int64_t h = (wr < 0 || (diag > 0 && wr > INT64_MAX - diag)) ? sk - 1 : diag + wr;
    *lo = l;
    *hi = h > sk - 1 ? sk - 1 : h;
}

/* Short name of a dtype ("f16", "bf16", "f32"; "?" for an invalid one). */
PA_HD const char *pa_dtype_name(portattn_dtype_t t)
{
    return t == PORTATTN_DTYPE_F16 ? "f16" : t == PORTATTN_DTYPE_BF16 ? "bf16" : t == PORTATTN_DTYPE_F32 ? "f32" : "?";
}

/* Bytes per element of a dtype (0 for an invalid one). */
PA_HD int pa_dtype_size(portattn_dtype_t t)
{
    return t == PORTATTN_DTYPE_F32 ? 4 : (t == PORTATTN_DTYPE_F16 || t == PORTATTN_DTYPE_BF16) ? 2 : 0;
}

#endif
