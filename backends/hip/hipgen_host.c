/* hipgen_host.h */
#include "hipgen_host.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fwd_resolve.h"
#include "gen_shape.h"
#include "hipgen_entries.h"

#define HIPGEN_APPEND_BLOCKS 65535 /* enough to fill any GPU; the grid-stride loop covers the rest */

int pa_hipgen_ptrs_ok(const pa_hip_rt *rt, int dev, const pa_problem *pb, char *why, size_t why_len)
{
    pa_gen_ptr ptrs[PA_GEN_MAX_PTRS];
    const int n = pa_gen_device_ptrs(pb, ptrs);
    for (int i = 0; i < n; i++)
        if (!pa_hip_ptr_check(rt, ptrs[i].ptr, dev, ptrs[i].what, why, why_len)) return 0;
    return 1;
}

/* Wave width of a gfx target's code: 32 on RDNA (gfx10, gfx11, gfx12: hipcc's default), 64 on CDNA. */
static int hipgen_wave(const char *target)
{
    return !strncmp(target, "gfx10", 5) || !strncmp(target, "gfx11", 5) || !strncmp(target, "gfx12", 5) ? 32 : 64;
}

static portattn_status_t hipgen_launch1(const pa_hip_rt *rt, pa_hip_fn fn, const unsigned g[3], pa_fwd_args *a,
                                        void *stream, const char *what, char *err, size_t err_len)
{
    void *args[] = {a};
    const pa_hip_err e = rt->ModuleLaunchKernel(fn, g[0], g[1], g[2], PA_HIPGEN_THREADS, 1, 1, 0, stream, args, NULL);
    /* the call fails: the launch's error stays, as a failed runtime call's does */
    return e == PA_HIP_SUCCESS ? PORTATTN_SUCCESS : pa_hip_status(rt, e, what, err, err_len);
}

static unsigned hipgen_cap(int64_t n, int64_t cap) { return (unsigned)(n < 1 ? 1 : n < cap ? n : cap); }

portattn_status_t pa_hipgen_launch(const pa_hip_rt *rt, const pa_hip_fn *fns, const char *target, const pa_problem *pb,
                                   void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    pa_fwd_args a;
    pa_fwd_args_of(pb, &a);
    const int64_t rows = PA_HIPGEN_THREADS / hipgen_wave(target); /* rows (waves) a workgroup */
    /* The append first, on the same stream: the attention must see the new keys. */
    if (pb->seqlen_new > 0 && p->batch > 0 && p->heads_kv > 0) {
        if (!p->seqused_k || !p->k_new.data || !p->v_new.data) /* the front end requires all three */
            return pa_fmt(err, err_len, PORTATTN_ERROR_INTERNAL, "hip-generic: seqlen_new = %lld without %s",
                          (long long)pb->seqlen_new, !p->seqused_k ? "seqused_k" : "k_new/v_new");
        const int64_t n = p->batch * pb->seqlen_new * p->heads_kv;
        const unsigned g[3] = {hipgen_cap(n / rows + 1, HIPGEN_APPEND_BLOCKS), 1, 1};
        const portattn_status_t st = hipgen_launch1(rt, fns[pa_dtype_size(p->dtype) == 2 ? PA_HIPGEN_APPEND16 : PA_HIPGEN_APPEND32],
                                                    g, &a, stream, "hip-generic: append launch", err, err_len);
        if (st) return st;
    }
    if (p->batch <= 0 || pb->max_seqlen_q <= 0 || p->heads_q <= 0) return PORTATTN_SUCCESS; /* nothing to do */
    /* x: row blocks (grid-strided past 2^24 - 1, so that blocks x threads stay under 2^32), y: heads,
     * z: sequences (both grid-strided past 65535) */
    const unsigned g[3] = {hipgen_cap((pb->max_seqlen_q + rows - 1) / rows, (1 << 24) - 1), hipgen_cap(p->heads_q, 65535),
                           hipgen_cap(p->batch, 65535)};
    const int kind = p->dtype == PORTATTN_DTYPE_F32 ? PA_HIPGEN_F32 : p->dtype == PORTATTN_DTYPE_F16 ? PA_HIPGEN_F16 : PA_HIPGEN_BF16;
    return hipgen_launch1(rt, fns[kind], g, &a, stream, "hip-generic: kernel launch", err, err_len);
}
