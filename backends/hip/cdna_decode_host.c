/* cdna_decode_host.h */
#include "cdna_decode_host.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cdna_decode_args.h"
#include "cdna_decode_entries.h"
#include "family.h"
#include "fwd_resolve.h"

static const int dec_dims[] = {PA_CDNA_DEC_DIMS};
#define DEC_NDIMS ((int)(sizeof dec_dims / sizeof dec_dims[0]))

static int dec_head_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_fwd_dims_ok(dec_dims, DEC_NDIMS, pb, "decode kernel", why, why_len);
}

/* Per-sequence queries of decode shapes. Its grid (KV heads x row tiles of the packed GQA rows) and
 * cache capacity are checked with its launch shape (pa_cdna_dec_shape_ok). */
static const pa_family dec_family = {
    .who = "decode kernel", .dtypes = PA_DTYPES_16, .head_dims = dec_head_dims, .refuses = PA_REFUSES_VARLEN,
    .max_queries = PA_CDNA_DEC_MAX_SQ,
};

int pa_cdna_dec_candidate(const pa_problem *pb)
{
    return pb->kv_cache || (!pb->varlen && pb->p.seqlen_q <= PA_CDNA_DEC_MAX_SQ);
}

static int64_t dec_rows(const pa_problem *pb) { return pb->p.seqlen_q * pb->group; }
static int dec_dim(const pa_problem *pb)
{
    return pa_fwd_instance_dim(dec_dims, DEC_NDIMS, pb->p.head_dim_qk, pb->p.head_dim_v);
}

int pa_cdna_dec_shape_ok(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_family_can_implement(&dec_family, pb, why, why_len)) return 0;
    const int64_t mtiles = (dec_rows(pb) + PA_CDNA_DEC_ROWS - 1) / PA_CDNA_DEC_ROWS;
    if (p->batch > 65535 || p->heads_kv * mtiles > 65535 || pb->group > INT32_MAX / PA_CDNA_DEC_MAX_SQ)
        return PA_REFUSE("decode kernel: batch %lld or KV heads %lld x row tiles %lld over the grid's 65535",
                      (long long)p->batch, (long long)p->heads_kv, (long long)mtiles);
    if (p->seqlen_k > (1 << 30) - 1 || pb->seqlen_new > (1 << 30) - 1)
        return PA_REFUSE("decode kernel: cache capacity %lld over 2^30-1", (long long)p->seqlen_k);
    if (p->batch * p->heads_kv * dec_rows(pb) > INT32_MAX)
        return PA_REFUSE("decode kernel: %lld packed rows over the combine's 2^31-1",
                      (long long)(p->batch * p->heads_kv * dec_rows(pb)));
    if (!pa_fwd_score_map_ok(pb, why, why_len)) return 0;
    if (p->batch > 0 && p->seqlen_q > 0 && !pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    if (kernel && kernel_len) {
        char note[48];
        const int d = dec_dim(pb);
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "cdna-decode<%s,d%d%s,splits=%d>", pa_dtype_name(p->dtype), d,
               pa_dims_note(pb, d, note, sizeof note), pa_cdna_dec_splits(pb));
    }
    return 1;
}

int pa_cdna_dec_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int kv = p->seqlen_k > 0, app = pb->seqlen_new > 0;
    const struct { const void *ptr; const char *what; int need; } ptrs[] = {
        {p->q.data, "q.data", 1}, {p->o.data, "o.data", 1}, {p->k.data, "k.data", kv}, {p->v.data, "v.data", kv},
        {p->lse, "lse", p->lse != NULL}, {p->seqused_k, "seqused_k", p->seqused_k != NULL},
        {p->block_table, "block_table", p->block_table != NULL}, {p->k_new.data, "k_new.data", app},
        {p->v_new.data, "v_new.data", app}, {p->workspace, "workspace", p->workspace != NULL},
    };
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i].need && !pa_hip_ptr_check(rt, ptrs[i].ptr, dev, ptrs[i].what, why, why_len)) return 0;
    return 1;
}

/* The HIP backend does not query the GPU's CU count, so the rule is static: enough workgroups to fill
 * an MI300X (304 CUs) about once, at least 256 keys a split (8 tiles), at most 128 splits. Keys are
 * counted at the capacity (seqlen_k): lengths in device memory are not read on the host. */
int pa_cdna_dec_splits(const pa_problem *pb)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->num_splits > 0) return p->num_splits < PA_CDNA_DEC_MAX_SPLITS ? (int)p->num_splits : PA_CDNA_DEC_MAX_SPLITS;
    const int64_t target = 304;
    const int64_t base = p->batch * p->heads_kv * ((dec_rows(pb) + PA_CDNA_DEC_ROWS - 1) / PA_CDNA_DEC_ROWS);
    if (base <= 0 || base >= target) return 1;
    int64_t s = (target + base - 1) / base, most = (p->seqlen_k + 255) / 256;
    if (s > most) s = most;
    if (s > PA_CDNA_DEC_MAX_SPLITS) s = PA_CDNA_DEC_MAX_SPLITS;
    return s < 1 ? 1 : (int)s;
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Bytes for `splits` (0 with one) and where the partial LSEs start: after the partial O. */
static size_t dec_ws_bytes(const pa_problem *pb, int splits, size_t *lse_offset)
{
    const size_t rows = (size_t)pb->p.batch * (size_t)pb->p.heads_kv * (size_t)dec_rows(pb);
    const size_t o_bytes = align256((size_t)splits * rows * (size_t)dec_dim(pb) * 4);
    if (lse_offset) *lse_offset = o_bytes;
    return splits <= 1 ? 0 : o_bytes + align256((size_t)splits * rows * 4);
}

size_t pa_cdna_dec_workspace(const pa_problem *pb) { return dec_ws_bytes(pb, pa_cdna_dec_splits(pb), NULL); }

/* The resolved arguments (pa_fwd_fill_args) with the launch shape that follows from the call: the
 * packed rows and their tiles, the instance; the splits, their tiles and the workspace are the
 * caller's. 0 when scale/softcap leave the float range. */
static int dec_fill(const pa_problem *pb, pa_fwd_args *a)
{
    if (pa_fwd_fill_args(pb, a, NULL, 0)) return 0;
    a->split.rows = (int)dec_rows(pb), a->split.mtiles = (a->split.rows + PA_CDNA_DEC_ROWS - 1) / PA_CDNA_DEC_ROWS;
    a->split.d = dec_dim(pb);
    return 1;
}

static portattn_status_t dec_go(const pa_hip_rt *rt, pa_hip_fn fn, unsigned gx, unsigned gy, unsigned gz,
                                pa_fwd_args *a, void *stream, const char *what, char *err, size_t err_len)
{
    void *args[] = {a};
    const pa_hip_err e = rt->ModuleLaunchKernel(fn, gx, gy, gz, PA_CDNA_DEC_THREADS, 1, 1, 0, stream, args, NULL);
    return e == PA_HIP_SUCCESS ? PORTATTN_SUCCESS : pa_hip_status(rt, e, what, err, err_len);
}

portattn_status_t pa_cdna_dec_launch(const pa_hip_rt *rt, const pa_hip_fn *fns, const pa_problem *pb, void *stream,
                                     char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    pa_fwd_args a;
    if (!dec_fill(pb, &a)) return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "scale/softcap out of range");
    pa_split_args *sp = &a.split;
    sp->splits = pa_cdna_dec_splits(pb);
    /* Partials go to the caller's workspace; without one the call runs unsplit (the HIP backend does
     * not allocate per call). Settled before the append, so a refused call leaves the cache alone. */
    size_t lse_offset = 0;
    const size_t need = dec_ws_bytes(pb, sp->splits, &lse_offset);
    if (need && p->workspace && p->workspace_size < need)
        return pa_fmt(err, err_len, PORTATTN_ERROR_INVALID_ARGUMENT,
                      "workspace_size = %zu, this call needs %zu (portattn_forward_workspace_size; it grows with "
                      "batch, heads and query tokens)", p->workspace_size, need);
    if (need && !p->workspace) sp->splits = 1;
    if (sp->splits > 1) sp->part_o = (float *)p->workspace, sp->part_lse = (float *)((char *)p->workspace + lse_offset);
    const int ntiles = (a.seqlen_k + PA_CDNA_DEC_KT - 1) / PA_CDNA_DEC_KT;
    sp->tiles = (ntiles + sp->splits - 1) / sp->splits;
    if (sp->tiles < 1) sp->tiles = 1;

    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16, d = sp->d;
    static const struct { int kind, bf16, d, c0; } ent[] = {
#define DEC_ENT(name, kind, b16, dk, dn, c0) {kind, b16, dk, c0},
        PA_CDNA_DEC_ENTRIES(DEC_ENT)
#undef DEC_ENT
    };
    portattn_status_t st = PORTATTN_SUCCESS;
    const int64_t app_rows = p->batch * pb->seqlen_new * p->heads_kv, nr = (int64_t)a.batch * a.heads_kv * sp->rows;
    for (int k = 0; k < PA_CDNA_DEC_ENTRY_COUNT && !st; ++k) /* the append (listed last) goes first */
        if (ent[k].kind == PA_CDNA_DEC_APPEND && app_rows > 0)
            st = dec_go(rt, fns[k], (unsigned)(app_rows < 65535 ? app_rows : 65535), 1, 1, &a, stream,
                        "hip-cdna: append launch", err, err_len);
    for (int k = 0; k < PA_CDNA_DEC_ENTRY_COUNT && !st; ++k)
        if (ent[k].kind == PA_CDNA_DEC_ATTN && ent[k].d == d && ent[k].bf16 == bf16 && ent[k].c0 < a.dv)
            st = dec_go(rt, fns[k], (unsigned)sp->splits, (unsigned)(a.heads_kv * sp->mtiles), (unsigned)a.batch, &a,
                        stream, "hip-cdna: decode launch", err, err_len);
    for (int k = 0; k < PA_CDNA_DEC_ENTRY_COUNT && !st && sp->splits > 1; ++k)
        if (ent[k].kind == PA_CDNA_DEC_COMBINE && ent[k].bf16 == bf16)
            st = dec_go(rt, fns[k], (unsigned)(nr < PA_CDNA_DEC_COMBINE_GRID ? nr : PA_CDNA_DEC_COMBINE_GRID), 1, 1, &a,
                        stream, "hip-cdna: combine launch", err, err_len);
    return st;
}
