/* family.h */
#include "family.h"

#include <stdarg.h>
#include <stdio.h>

/* The refusal, headed by the family's name where it has one; 0 as the check's answer. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int refuse(const pa_family *f, char *why, size_t why_len, const char *fmt, ...)
{
    if (!why || !why_len) return 0;
    int used = f->who ? snprintf(why, why_len, "%s: ", f->who) : 0;
    if (used < 0 || (size_t)used >= why_len) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, why_len - (size_t)used, fmt, ap);
    va_end(ap);
    return 0;
}

/* A limit as the refusals write it: 2^k-1 above 65535 as "2^31-1", 65535^2 (two grid dimensions) as
 * "65535^2", any other as its number. */
static const char *limit_words(int64_t v, char *buf, size_t len)
{
    int k = 0;
    if (v > 65535 && v < INT64_MAX && ((v + 1) & v) == 0) {
        while (((int64_t)1 << k) <= v) ++k;
        snprintf(buf, len, "2^%d-1", k);
    } else if (v == (int64_t)65535 * 65535) {
        snprintf(buf, len, "65535^2");
    } else {
        snprintf(buf, len, "%lld", (long long)v);
    }
    return buf;
}

static int dtype_ok(const pa_family *f, portattn_dtype_t t, char *why, size_t why_len)
{
    if ((unsigned)t < 32 && (f->dtypes & PA_DTYPE_BIT(t))) return 1;
    char list[32] = "";
    int used = 0;
    for (int d = PORTATTN_DTYPE_F16; d <= PORTATTN_DTYPE_F32 && used < (int)sizeof list; ++d)
        if (f->dtypes & PA_DTYPE_BIT(d))
            used += snprintf(list + used, sizeof list - (size_t)used, "%s%s", used ? ", " : "",
                             pa_dtype_name((portattn_dtype_t)d));
    return refuse(f, why, why_len, "dtype %s not supported (%s)", pa_dtype_name(t), list);
}

static int refused_ok(const pa_family *f, const pa_problem *pb, char *why, size_t why_len)
{
    if ((f->refuses & PA_REFUSES_VARLEN) && pb->varlen) return refuse(f, why, why_len, "no varlen queries");
    if ((f->refuses & PA_REFUSES_KV_CACHE) && pb->kv_cache)
        return refuse(f, why, why_len, "KV cache: not in this kernel");
    return 1;
}

static int queries_ok(const pa_family *f, const pa_problem *pb, char *why, size_t why_len)
{
    const long long n = (long long)pb->max_seqlen_q;
    const char *of = pb->varlen ? " (max_seqlen_q)" : "";
    if (f->min_queries && n < f->min_queries)
        return refuse(f, why, why_len, "%lld query tokens%s: takes %lld or more%s%s%s", n, of,
                      (long long)f->min_queries, f->fewer_go ? " (" : "", f->fewer_go ? f->fewer_go : "",
                      f->fewer_go ? ")" : "");
    if (f->max_queries && n > f->max_queries)
        return refuse(f, why, why_len, "%lld query tokens%s: takes %lld or fewer", n, of, (long long)f->max_queries);
    return 1;
}

static int lengths_ok(const pa_family *f, const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (f->needs_keys && p->seqlen_k < 1) return refuse(f, why, why_len, "no keys (a TMA map needs a row)");
    if (!f->max_seqlen || (p->seqlen_q <= f->max_seqlen && p->seqlen_k <= f->max_seqlen)) return 1;
    char lim[24];
    return refuse(f, why, why_len, "sequence lengths %lld/%lld over %s", (long long)p->seqlen_q, (long long)p->seqlen_k,
                  limit_words(f->max_seqlen, lim, sizeof lim));
}

int pa_family_grid_ok(const pa_family *f, const pa_problem *pb, int rows, int qpack, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    char lim[24], heads[48];
    if (f->grid_dim && (p->batch > f->grid_dim || p->heads_q > f->grid_dim))
        return refuse(f, why, why_len, "batch %lld x heads %lld: the grid takes at most %s of each",
                      (long long)p->batch, (long long)p->heads_q, limit_words(f->grid_dim, lim, sizeof lim));
    if (!f->grid_blocks) return 1;
    /* batch and heads are within grid_dim (int32) here, so only the row blocks could overflow the
     * product: compared by division */
    const int64_t bh = p->batch * (p->heads_q / qpack), blocks = rows > 0 ? (pb->max_seqlen_q + rows - 1) / rows : 1;
    const int fits = bh == 0 || blocks <= f->grid_blocks / bh;
    if (fits || !why) return fits;
    if (qpack > 1) snprintf(heads, sizeof heads, "%lld/%d (GQA-packed)", (long long)p->heads_q, qpack);
    else snprintf(heads, sizeof heads, "%lld", (long long)p->heads_q);
    limit_words(f->grid_blocks, lim, sizeof lim);
    if (rows <= 0)
        return refuse(f, why, why_len, "batch %lld x heads %s: over the grid's %s blocks", (long long)p->batch, heads,
                      lim);
    return refuse(f, why, why_len, "batch %lld x heads %s x %lld row blocks of %d: over the grid's %s blocks",
                  (long long)p->batch, heads, (long long)blocks, rows, lim);
}

int pa_family_can_implement(const pa_family *f, const pa_problem *pb, char *why, size_t why_len)
{
    return dtype_ok(f, pb->p.dtype, why, why_len) && (!f->head_dims || f->head_dims(pb, why, why_len)) &&
           refused_ok(f, pb, why, why_len) && queries_ok(f, pb, why, why_len) && lengths_ok(f, pb, why, why_len) &&
           (f->grid_rows == PA_GRID_AT_LAUNCH || pa_family_grid_ok(f, pb, f->grid_rows, 1, why, why_len));
}
