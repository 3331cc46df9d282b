/* cuda-generic: one simple kernel for every feature and dtype (the GPU oracle and fallback). */
#include "backend.h"
#include "cuda_host.h"
#include "generic_launch.h"

#define GENERIC_DMAX 256

static int generic_supports(const pa_problem *pb, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const char *dt = pa_dtype_size(p->dtype) ? pa_dtype_name(p->dtype) : NULL; /* f16, bf16 and f32 all run */
    if (!dt) {
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "dtype %d not supported", (int)p->dtype);
        return 0;
    }
    if (p->head_dim_qk < 1 || p->head_dim_qk > GENERIC_DMAX || p->head_dim_v < 1 || p->head_dim_v > GENERIC_DMAX) {
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "head dims %lld/%lld outside 1..%d",
               (long long)p->head_dim_qk, (long long)p->head_dim_v, GENERIC_DMAX);
        return 0;
    }
    if (p->heads_q > INT32_MAX) { /* the kernel does its head math in 32 bits */
        pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "heads_q %lld over 2^31-1", (long long)p->heads_q);
        return 0;
    }

    /* Only pointers the kernels will dereference must live on the device: an empty call launches
     * nothing, with no keys K and V are never read, and k_new/v_new are read only when appending
     * (the front end allows appends only to calls with queries, so this block covers them). */
    if (p->batch > 0 && pb->max_seqlen_q > 0 && p->heads_q > 0) {
        struct { const void *ptr; const char *what; } need[] = {
            { p->q.data, "q.data" }, { p->o.data, "o.data" },
            { p->seqlen_k > 0 ? p->k.data : NULL, "k.data" },
            { p->seqlen_k > 0 ? p->v.data : NULL, "v.data" },
            { p->lse, "lse" },
            { pb->varlen ? (const void *)p->cu_seqlens_q : NULL, "cu_seqlens_q" },
            { pb->varlen_k ? (const void *)p->cu_seqlens_k : NULL, "cu_seqlens_k" },
            { p->seqused_k, "seqused_k" },
            { p->block_table, "block_table" },
            { pb->seqlen_new > 0 ? p->k_new.data : NULL, "k_new.data" },
            { pb->seqlen_new > 0 ? p->v_new.data : NULL, "v_new.data" },
        };
        for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i) {
            int optional = i >= 2; /* q and o are always read/written */
            if (optional && !need[i].ptr) continue;
            if (!pa_cuda_ptr_check(need[i].ptr, need[i].what, why, why_len)) return 0;
        }
    }
    if (kernel && kernel_len) pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "generic<%s>", dt);
    return 1;
}

const pa_backend pa_backend_cuda_generic = {
    PORTATTN_BACKEND_CUDA_GENERIC, "cuda-generic", pa_cuda_probe, generic_supports, pa_cuda_generic_launch,
    NULL, /* workspace: one kernel, no split-KV scratch */
};
