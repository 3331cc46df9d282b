/* The oracle check: the tested backend once more on poisoned outputs, then a reference (the CPU
 * backend in f32 on the same input values, or cuda-generic for problems too large for the CPU),
 * compared by max-abs and relative L2 error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "half.h"

/* An fp32 copy of a whole strided buffer (same element strides), or NULL. */
static float *upcast(const void *src, portattn_dtype_t t, size_t n)
{
    float *f = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; f && i < n; i++) f[i] = pa_load_elem(t, src, (int64_t)i);
    return f;
}

typedef struct err { double maxabs, rel; size_t bad; } err;

/* Max-abs and relative-L2 error; NaN anywhere or a differing infinity counts as bad. Equal
 * infinities (LSE = -inf of a fully masked row) agree. */
static err compare(const void *out, portattn_dtype_t t, const void *ref, portattn_dtype_t tref, size_t n)
{
    err e = {0, 0, 0};
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double x = pa_load_elem(t, out, (int64_t)i), y = pa_load_elem(tref, ref, (int64_t)i);
        if (isnan(x) || isnan(y) || ((isinf(x) || isinf(y)) && x != y)) { e.bad++; continue; }
        if (isinf(x)) continue;
        double dd = fabs(x - y);
        if (dd > e.maxabs) e.maxabs = dd;
        num += dd * dd;
        den += y * y;
    }
    e.rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return e;
}

/* Same call on other O/LSE buffers (and, for the CPU reference, other inputs: K/V and the block
 * table of a paged row in host memory; the pools keep their strides and page count). */
static portattn_fwd_params_t retarget(const portattn_fwd_params_t *p, const shape *s, portattn_backend_t be,
                                      void *q, void *k, void *v, void *o, float *lse,
                                      const int32_t *cuq, const int32_t *cuk, const int32_t *bt, const int32_t *used)
{
    portattn_fwd_params_t r = *p;
    r.q.data = q; r.k.data = k; r.v.data = v; r.o.data = o;
    r.lse = s->lse ? lse : NULL;
    if (s->varlen) { r.cu_seqlens_q = cuq; r.cu_seqlens_k = cuk; }
    if (s->nserve) { r.cu_seqlens_q = cuq; r.seqused_k = used; }
    if (s->page > 0) {
        r.block_table = bt;
        r.block_table_stride = p->block_table_stride;
        r.page_size = p->page_size;
        r.num_pages = p->num_pages;
    }
    r.workspace = NULL; /* the reference call sizes its own */
    r.workspace_size = 0;
    r.backend = be;
    return r;
}

/* Reruns the tested call on poisoned outputs (so unwritten elements fail) and downloads them. */
static int rerun_poisoned(const shape *s, dm_kind kind, const portattn_fwd_params_t *p, bufs *b, row *r)
{
    size_t obytes = b->no * (size_t)dtype_size(s->dtype), lbytes = b->nlse * sizeof(float);
    portattn_status_t st;
    memset(b->ho, 0xFF, obytes); /* all-ones bits: NaN in f16, bf16 and f32 */
    if (s->lse) memset(b->hlse, 0xFF, lbytes);
    if (dm_upload(kind, b->dout, b->ho, obytes) || (s->lse && dm_upload(kind, b->dlse, b->hlse, lbytes)))
        return row_error(r, "check: upload failed");
    if ((st = portattn_forward(p, NULL)) != PORTATTN_SUCCESS) return row_api_error(r, "check run", st);
    if (dm_sync(kind) || dm_download(kind, b->ho, b->dout, obytes) || (s->lse && dm_download(kind, b->hlse, b->dlse, lbytes)))
        return row_error(r, "check: device sync or download failed");
    return 0;
}

/* The CPU reference in fp32 on the same input values (upcast exactly, same strides): it yields the
 * exact function of the inputs, so even the CPU backend's own dtype run is checked for real (its
 * rounding, its dtype paths). */
static int cpu_reference(const shape *s, const portattn_fwd_params_t *p, bufs *b, row *r)
{
    float *f[3] = {upcast(b->hq, s->dtype, b->nq), upcast(b->hk, s->dtype, b->nk), upcast(b->hv, s->dtype, b->nv)};
    portattn_fwd_params_t c = retarget(p, s, PORTATTN_BACKEND_CPU, f[0], f[1], f[2], b->href, b->hlse_ref,
                                       b->hcu_q, b->hcu_k, b->hbt, b->hused);
    c.dtype = PORTATTN_DTYPE_F32;
    portattn_status_t st = f[0] && f[1] && f[2] ? portattn_forward(&c, NULL) : PORTATTN_ERROR_OUT_OF_MEMORY;
    free(f[0]), free(f[1]), free(f[2]);
    return st != PORTATTN_SUCCESS ? row_api_error(r, "cpu reference", st) : 0;
}

/* cuda-generic on the same device inputs, for problems too large for the CPU reference. */
static int generic_reference(const shape *s, dm_kind kind, const portattn_fwd_params_t *p, bufs *b, row *r)
{
    size_t obytes = b->no * (size_t)dtype_size(s->dtype), lbytes = b->nlse * sizeof(float);
    portattn_status_t st;
    b->dref = dm_alloc(kind, obytes);
    b->dlse_ref = (float *)dm_alloc(kind, lbytes);
    if (!b->dref || !b->dlse_ref) return row_error(r, "check: out of device memory for the cuda-generic reference");
    portattn_fwd_params_t c = retarget(p, s, PORTATTN_BACKEND_CUDA_GENERIC, b->dq, b->dk, b->dv, b->dref,
                                       b->dlse_ref, b->dcu_q, b->dcu_k, b->dbt, b->dused);
    if ((st = portattn_forward(&c, NULL)) != PORTATTN_SUCCESS) return row_api_error(r, "cuda-generic reference", st);
    if (dm_sync(kind) || dm_download(kind, b->href, b->dref, obytes) ||
        (s->lse && dm_download(kind, b->hlse_ref, b->dlse_ref, lbytes)))
        return row_error(r, "check: cuda-generic reference failed on the device");
    return 0;
}

/* Compares the tested outputs with the reference's, prints the verdict; 1 when it failed. */
static int judge(const shape *s, const char *which, portattn_dtype_t ref_dtype, const bufs *b, row *r)
{
    snprintf(r->check_ref, sizeof r->check_ref, "%s", which);
    double bound = s->dtype == PORTATTN_DTYPE_F32 ? 1e-4 : s->dtype == PORTATTN_DTYPE_F16 ? 5e-3 : 1e-2;
    err eo = compare(b->ho, s->dtype, b->href, ref_dtype, b->no), el = {0, 0, 0};
    if (s->lse) el = compare(b->hlse, PORTATTN_DTYPE_F32, b->hlse_ref, PORTATTN_DTYPE_F32, b->nlse);
    r->o_maxabs = eo.maxabs; r->o_rel = eo.rel; r->lse_maxabs = el.maxabs; r->lse_rel = el.rel;
    int pass = eo.bad == 0 && eo.rel <= bound && el.bad == 0 && el.rel <= bound;
    r->check = pass ? "pass" : "fail";
    printf("  check vs %s: O max-abs %.3e rel-L2 %.3e", which, eo.maxabs, eo.rel);
    if (eo.bad) printf(" (%zu NaN/inf mismatches)", eo.bad);
    if (s->lse) {
        printf(" | LSE max-abs %.3e rel-L2 %.3e", el.maxabs, el.rel);
        if (el.bad) printf(" (%zu NaN/inf mismatches)", el.bad);
    }
    printf(" -> %s (rel-L2 bound %.0e)\n", pass ? "PASS" : "FAIL", bound);
    if (!pass)
        snprintf(r->msg, sizeof r->msg, "check failed: O rel-L2 %.3e, %zu bad; LSE rel-L2 %.3e, %zu bad",
                 eo.rel, eo.bad, el.rel, el.bad);
    return !pass;
}

int check_row(const opts *o, const shape *s, dm_kind kind, const portattn_fwd_params_t *p,
              portattn_backend_t tested, bufs *b, double macs, row *r)
{
    /* the CPU backend checked by itself in f32 tests its dtype paths only, and says so */
    const char *which = tested == PORTATTN_BACKEND_CPU ? "cpu itself in f32" : "cpu";
    portattn_dtype_t ref_dtype = s->dtype;
    if (rerun_poisoned(s, kind, p, b, r)) goto bail;
    if (!(b->href = malloc(b->no * 4 + 4)) || !(b->hlse_ref = (float *)malloc(b->nlse * sizeof(float) + 4)))
        BAIL("check: out of host memory");
    if (macs <= o->check_limit) {
        ref_dtype = PORTATTN_DTYPE_F32;
        if (cpu_reference(s, p, b, r)) goto bail;
    } else if (kind == DM_CUDA && tested != PORTATTN_BACKEND_CUDA_GENERIC) {
        which = "cuda-generic";
        if (generic_reference(s, kind, p, b, r)) goto bail;
    } else {
        r->check = "skipped";
        snprintf(r->msg, sizeof r->msg, "check skipped: too large for the CPU reference (%.3g multiply-adds > --check-limit %.3g)",
                 macs, o->check_limit);
        printf("  %s\n", r->msg);
        return 0;
    }
    return judge(s, which, ref_dtype, b, r);
bail:
    r->check = "error";
    printf("  %s\n", r->msg);
    return 1;
}
