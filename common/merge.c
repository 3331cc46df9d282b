/* portattn_merge: defaults, validation and where the merge runs (host loop or the CUDA kernel). */
#include <stdio.h>
#include <string.h>

#include "frontend.h"
#include "merge.h"
#include "validate_view.h"

#define INVALID(...) pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

void portattn_merge_params_init(portattn_merge_params_t *params)
{
    if (!params) return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->dtype = PORTATTN_DTYPE_BF16;
    params->backend = PORTATTN_BACKEND_AUTO;
}

/* The four tensors as views: o, lse, o_part, lse_part (an LSE is a [B, Sq, Hq, 1] view). */
static void merge_views(const portattn_merge_params_t *p, view v[4])
{
    portattn_tensor_t lse = {p->lse, {p->lse_stride[0], p->lse_stride[2], p->lse_stride[1], 0}};
    portattn_tensor_t lsep = {(void *)(uintptr_t)p->lse_part,
                              {p->lse_part_stride[0], p->lse_part_stride[2], p->lse_part_stride[1], 0}};
    v[0] = make_view("o", &p->o, p->batch, p->seqlen_q, p->heads_q, p->head_dim_v, pa_dtype_size(p->dtype), 0);
    v[1] = make_view("lse", &lse, p->batch, p->seqlen_q, p->heads_q, 1, 4, 0);
    v[2] = make_view("o_part", &p->o_part, p->batch, p->seqlen_q, p->heads_q, p->head_dim_v,
                     pa_dtype_size(p->dtype_part), 0);
    v[3] = make_view("lse_part", &lsep, p->batch, p->seqlen_q, p->heads_q, 1, 4, 0);
}

static portattn_status_t check_scalars(const portattn_merge_params_t *p, char *why, size_t why_len)
{
    if (!pa_dtype_size(p->dtype)) return INVALID("dtype = %d is not a portattn_dtype_t", (int)p->dtype);
    if (!pa_dtype_size(p->dtype_part))
        return INVALID("dtype_part = %d is not a portattn_dtype_t (0 = dtype)", (int)p->dtype_part);
    if ((int)p->backend < 0 || p->backend >= PORTATTN_BACKEND_COUNT_)
        return INVALID("backend = %d is not a portattn_backend_t", (int)p->backend);
    if (p->batch < 0) return INVALID("batch = %lld is negative", (long long)p->batch);
    if (p->seqlen_q < 0) return INVALID("seqlen_q = %lld is negative", (long long)p->seqlen_q);
    if (p->heads_q < 1) return INVALID("heads_q = %lld must be >= 1", (long long)p->heads_q);
    if (p->head_dim_v < 1) return INVALID("head_dim_v = %lld must be >= 1", (long long)p->head_dim_v);
    return PORTATTN_SUCCESS;
}

portattn_status_t pa_merge_validate(const portattn_merge_params_t *in, pa_merge_problem *mp, char *why,
                                    size_t why_len)
{
    if (!in) return INVALID("params is NULL");
    portattn_status_t size_st = check_struct_size(in->struct_size, sizeof *in, "portattn_merge_params_init", why, why_len);
    if (size_st) return size_st;
    mp->p = *in;
    portattn_merge_params_t *p = &mp->p;
    if (!p->dtype_part) p->dtype_part = p->dtype;
    portattn_status_t st = check_scalars(p, why, why_len);
    if (st) return st;

    view v[4];
    merge_views(p, v);
    if (v[0].count && (!p->lse || !p->lse_part))
        return INVALID("%s is NULL: a merge needs the LSE of both sides", !p->lse ? "lse" : "lse_part");
    for (int i = 0; i < 4; i++)
        if ((st = check_view(&v[i], i < 2, why, why_len))) return st;
    /* The written pair (o, lse) shares memory with nothing else: a row read after another row's
     * write would see merged values. */
    for (int w = 0; w < 2; w++)
        for (int r = w + 1; r < 4; r++)
            if (views_overlap(&v[w], &v[r])) return INVALID("%s overlaps %s in memory", v[r].name, v[w].name);
    if (!v[0].count) { /* never addressed: make the copies' strides harmless */
        memset(p->o.stride, 0, sizeof p->o.stride), memset(p->o_part.stride, 0, sizeof p->o_part.stride);
        memset(p->lse_stride, 0, sizeof p->lse_stride), memset(p->lse_part_stride, 0, sizeof p->lse_part_stride);
    }
    return PORTATTN_SUCCESS;
}

/* The merge's arguments that are memory, for the placement checks. */
static int merge_pointers(const portattn_merge_params_t *p, const void *ptr[4], const char *name[4])
{
    ptr[0] = p->o.data, ptr[1] = p->lse, ptr[2] = p->o_part.data, ptr[3] = p->lse_part;
    name[0] = "o.data", name[1] = "lse", name[2] = "o_part.data", name[3] = "lse_part";
    return 4;
}

/* 1 if the host can read every argument; else 0 with the first that it cannot. */
static int on_host(const portattn_merge_params_t *p, char *why, size_t why_len)
{
    const void *ptr[4];
    const char *name[4];
    for (int i = 0, n = merge_pointers(p, ptr, name); i < n; i++)
        if (!pa_host_accessible(ptr[i])) return snprintf(why, why_len, "%s is device memory", name[i]), 0;
    return 1;
}

#ifdef PORTATTN_HAVE_CUDA
int pa_cuda_probe(char *detail, size_t detail_len);
int pa_cuda_ptr_check(const void *ptr, const char *what, char *why, size_t why_len);

static int is_cuda(portattn_backend_t id)
{
    return id == PORTATTN_BACKEND_CUDA_GENERIC || id == PORTATTN_BACKEND_CUDA_SM80 ||
           id == PORTATTN_BACKEND_CUDA_SM90 || id == PORTATTN_BACKEND_CUDA_SM100;
}

/* 1 if a CUDA device is present and can address every argument; else 0 and why. */
static int on_cuda(const portattn_merge_params_t *p, char *why, size_t why_len)
{
    const void *ptr[4];
    const char *name[4];
    if (!pa_cuda_probe(why, why_len)) return 0;
    for (int i = 0, n = merge_pointers(p, ptr, name); i < n; i++)
        if (!pa_cuda_ptr_check(ptr[i], name[i], why, why_len)) return 0;
    return 1;
}
#endif

typedef enum { RUN_CPU, RUN_CUDA } merge_place;

/* A forced backend: present, able to merge, and able to reach the memory (when there are rows to
 * merge: a call with none asks no backend, but the forced one must still exist); else why not. */
static portattn_status_t place_forced(const portattn_merge_params_t *p, int rows, portattn_backend_t id,
                                      const char *by, merge_place *where, char *why, size_t why_len)
{
    const char *name = portattn_backend_name(id);
    const pa_backend *b = pa_backend_lookup(id);
    char text[256] = "";
    if (!b || !b->probe(text, sizeof text))
        return pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s (forced by %s) is %s%s", name, by,
                      b ? "unavailable: " : "not compiled into this build", b ? text : "");
    if (!rows) return PORTATTN_SUCCESS;
    int ok = 0;
    if (id == PORTATTN_BACKEND_CPU) ok = on_host(p, text, sizeof text), *where = RUN_CPU;
#ifdef PORTATTN_HAVE_CUDA
    else if (is_cuda(id)) ok = on_cuda(p, text, sizeof text), *where = RUN_CUDA;
#endif
    else snprintf(text, sizeof text, "it has no merge kernel");
    if (!ok)
        return pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s (forced by %s) cannot run this merge: %s", name,
                      by, text);
    return PORTATTN_SUCCESS;
}

/* As the forward's selector: CUDA when the device can reach all the memory, else the host. */
static portattn_status_t place(const pa_merge_problem *mp, int rows, merge_place *where, char *why, size_t why_len)
{
    pa_problem forcing; /* forced_backend reads the backend field of a forward problem */
    memset(&forcing, 0, sizeof forcing);
    forcing.p.backend = mp->p.backend;
    portattn_backend_t id;
    const char *by;
    portattn_status_t st = forced_backend(&forcing, &id, &by, why, why_len);
    if (st || id != PORTATTN_BACKEND_AUTO) return st ? st : place_forced(&mp->p, rows, id, by, where, why, why_len);
    if (!rows) return PORTATTN_SUCCESS;
    char cuda_why[256] = "not compiled in", host_why[256];
#ifdef PORTATTN_HAVE_CUDA
    if (on_cuda(&mp->p, cuda_why, sizeof cuda_why)) return *where = RUN_CUDA, PORTATTN_SUCCESS;
#endif
    if (on_host(&mp->p, host_why, sizeof host_why)) return *where = RUN_CPU, PORTATTN_SUCCESS;
    return pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "no backend can run this merge: cuda: %s; cpu: %s",
                  cuda_why, host_why);
}

portattn_status_t portattn_merge(const portattn_merge_params_t *params, void *stream)
{
    char why[1024];
    pa_merge_problem mp;
    portattn_status_t st = pa_merge_validate(params, &mp, why, sizeof why);
    merge_place where = RUN_CPU;
    const int rows = !st && mp.p.batch && mp.p.seqlen_q;
    if (!st) st = place(&mp, rows, &where, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    if (!rows) return pa_clear_error();
#ifdef PORTATTN_HAVE_CUDA
    if (where == RUN_CUDA) st = pa_cuda_merge(&mp, stream, why, sizeof why);
    else
#endif
    {
        (void)stream; /* the host loop is synchronous */
        st = pa_cpu_merge(&mp, why, sizeof why);
    }
    return st ? pa_set_error(st, "merge: %s", why) : pa_clear_error();
}
