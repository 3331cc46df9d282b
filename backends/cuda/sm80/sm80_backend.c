/* cuda-sm80: the mma.sync FlashAttention-2-class kernel (A100 and newer) and its split-KV decode
 * kernel. This file is the backend table: which kernel takes a call, and why not otherwise (the selector then falls back to
 * cuda-generic and shows the reason in the "which kernel" query). */
#include <stdint.h>

#include "backend.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "sm80_decode.h"
#include "sm80_launch.h"

static int sm80_prefill_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_sm80_instance(pb, why, why_len) != NULL;
}

/* The prefill instances, the paged ones over a KV cache (sm80_launch.h): int32 rows inside the
 * kernel, one CTA column per (batch, head) pair over grid y and z. */
static const pa_family sm80_prefill = {
    .dtypes = PA_DTYPES_16, .cc = {80}, .cc_newer = 1, .head_dims = sm80_prefill_dims,
    .max_seqlen = PA_SM80_MAX_SEQ, .grid_dim = INT32_MAX, .grid_blocks = PA_SM80_MAX_BH,
};

/* The split-KV decode kernel (sm80_decode.h): per-sequence queries of decode shapes. Its grid (KV heads
 * x row tiles of the packed GQA rows) and cache capacity are checked with its launch shape
 * (pa_sm80_decode_supports). */
static const pa_family sm80_decode = {
    .who = "decode kernel", .dtypes = PA_DTYPES_16, .cc = {80}, .cc_newer = 1, .head_dims = pa_sm80_decode_dims,
    .refuses = PA_REFUSES_VARLEN, .max_queries = PA_DECODE_MAX_SQ,
};

static int sm80_probe(char *detail, size_t detail_len)
{
    return pa_cuda_probe(detail, detail_len) && pa_cuda_arch_ok(&sm80_prefill, detail, detail_len);
}

/* Few query tokens per sequence (per-sequence queries, KV cache or not) go to the split-KV decode
 * kernel; KV-cache calls with more, and every serving call (packed queries over a KV cache: the
 * host cannot see how many rows each sequence has without reading cu_seqlens_q back), go to the
 * paged prefill instances; so do the KV-cache calls the decode kernel declines (pages under 16 rows,
 * head dims over 256). */
static int sm80_decode_candidate(const pa_problem *pb)
{
    return !pb->varlen && pb->p.seqlen_q <= PA_DECODE_MAX_SQ;
}

/* A serving call whose every sequence has one query token (max_seqlen_q 1 and as many tokens as
 * sequences: counts of at most 1 that sum to the batch are all 1) is a decode batch: packed token b
 * is sequence b's, so Q, O and the LSE read as per-sequence tensors whose batch stride is the token
 * stride, and the split-KV decode kernel takes it. 1 and that problem in *out, else 0. */
static int sm80_serving_decodes(const pa_problem *pb, pa_problem *out)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_serving(pb) || pb->max_seqlen_q != 1 || p->seqlen_q != p->batch) return 0;
    *out = *pb;
    out->varlen = 0;
    out->p.cu_seqlens_q = NULL;
    out->p.seqlen_q = 1, out->p.max_seqlen_q = 0;
    out->p.q.stride[0] = p->q.stride[1], out->p.o.stride[0] = p->o.stride[1];
    out->p.lse_stride[0] = p->lse_stride[2];
    return 1;
}

/* The routes of a call (pa_choice.route): the prefill instances (paged over a KV cache), the decode
 * kernel on the call's problem, or on its serving decode batch rewritten per sequence. */
enum { SM80_PREFILL, SM80_DECODE, SM80_DECODE_SERVING };

/* The problem the decode kernel would take for this call (pb itself, or the rewritten serving decode
 * batch in *tmp, with *route saying which), or NULL when the call is not decode-shaped. */
static const pa_problem *sm80_decode_view(const pa_problem *pb, pa_problem *tmp, int *route)
{
    *route = SM80_DECODE;
    if (sm80_decode_candidate(pb)) return pb;
    *route = SM80_DECODE_SERVING;
    return sm80_serving_decodes(pb, tmp) ? tmp : NULL;
}

/* Decode kernel: its family check, the kernel's own limits (its instance into ch->inst), layouts, and
 * every pointer it reads on the device. */
static int sm80_decode_ok(const pa_problem *pb, pa_choice *ch, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (!pa_family_can_implement(&sm80_decode, pb, why, why_len)) return 0;
    if (!(ch->inst = pa_sm80_decode_supports(pb, why, why_len))) return 0;
    if (p->batch == 0 || p->seqlen_q == 0) return 1;
    if (!pa_fwd_layouts_ok(pb, why, why_len)) return 0;
    const int needs_kv = p->seqlen_k > 0;
    const pa_cuda_ptr ptrs[] = {
        {p->q.data, "q.data", 1}, {p->o.data, "o.data", 1}, {p->k.data, "k.data", needs_kv},
        {p->v.data, "v.data", needs_kv}, {p->lse, "lse", p->lse != NULL},
        {p->seqused_k, "seqused_k", p->seqused_k != NULL}, {p->block_table, "block_table", p->block_table != NULL},
        {p->k_new.data, "k_new.data", pb->seqlen_new > 0}, {p->v_new.data, "v_new.data", pb->seqlen_new > 0},
    };
    return pa_cuda_ptrs_ok(ptrs, sizeof ptrs / sizeof ptrs[0], why, why_len);
}

static int sm80_prefill_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                                 size_t why_len);

/* The decode kernel's choice: its instance (sm80_decode_ok) and the split count, fixed here for the
 * workspace size and the launch alike. */
static int sm80_decode_chosen(const pa_problem *dp, pa_choice *ch, char *kernel, size_t kernel_len)
{
    ch->splits = pa_sm80_decode_splits(dp, ch->inst);
    if (kernel && kernel_len) {
        char note[48];
        const int d = ((const pa_cuda_inst *)ch->inst)->d;
        pa_fmt(kernel, kernel_len, PORTATTN_SUCCESS, "sm80-decode<%s,d%d%s,splits=%d>", pa_dtype_name(dp->p.dtype), d,
               pa_dims_note(dp, d, note, sizeof note), ch->splits);
    }
    return 1;
}

static int sm80_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                         size_t why_len)
{
    if (!pa_cuda_arch_ok(&sm80_prefill, why, why_len)) return 0; /* every sm80 kernel's */
    /* Checked for both kernels, whichever the call takes. */
    if (pb->p.workspace && !pa_cuda_ptr_check(pb->p.workspace, "workspace", why, why_len)) return 0;
    pa_problem tmp;
    const pa_problem *dp = sm80_decode_view(pb, &tmp, &ch->route);
    if (dp) {
        char dwhy[256];
        if (sm80_decode_ok(dp, ch, dwhy, sizeof dwhy)) return sm80_decode_chosen(dp, ch, kernel, kernel_len);
        if (pb->kv_cache) {
            char pwhy[256];
            if (sm80_prefill_supports(pb, ch, kernel, kernel_len, pwhy, sizeof pwhy)) return 1;
            return PA_REFUSE("KV cache: the decode kernel declines (%s), the paged prefill too (%s)", dwhy, pwhy);
        }
    }
    return sm80_prefill_supports(pb, ch, kernel, kernel_len, why, why_len);
}

/* What supports() chose: the prefill instances, or the decode kernel on the call's problem or on its
 * serving decode batch (rewritten again here: a struct copy, no device query). */
static portattn_status_t sm80_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    pa_problem tmp;
    if (ch->route == SM80_PREFILL) return pa_cuda_sm80_launch(pb, ch, stream, err, err_len);
    if (ch->route == SM80_DECODE_SERVING) pb = sm80_serving_decodes(pb, &tmp) ? &tmp : pb;
    return pa_sm80_decode_launch(pb, ch, stream, err, err_len);
}

static size_t sm80_workspace(const pa_problem *pb, const pa_choice *ch)
{
    pa_problem tmp;
    if (ch->route == SM80_PREFILL) return 0;
    if (ch->route == SM80_DECODE_SERVING) pb = sm80_serving_decodes(pb, &tmp) ? &tmp : pb;
    return pa_sm80_decode_workspace(pb, ch);
}

static int sm80_prefill_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why,
                                 size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p; /* the device was checked by sm80_supports */
    if (!pa_family_can_implement(&sm80_prefill, pb, why, why_len)) return 0;
    const pa_cuda_inst *in = pa_sm80_instance(pb, NULL, 0); /* the family check found one */
    const int d = in->d;
    /* d256's smaller shape is enough (pa_sm80_block_rows picks the shape that fits) */
    if (!pa_cuda_smem_ok(in->family, d, PA_SM80_MIN_SMEM_BYTES(d), why, why_len)) return 0;
    const int bm = pa_sm80_block_rows(d);
    if (bm == 0) return PA_REFUSE("cannot read the device's shared memory per SM");

    if (pb->kv_cache && !pa_fwd_kv_layouts_ok(pb, why, why_len)) return 0;
    if (p->batch > 0 && pb->max_seqlen_q > 0 &&
        ((!pb->kv_cache && !pa_fwd_layouts_ok(pb, why, why_len)) || !pa_cuda_fwd_ptrs_ok(pb, why, why_len)))
        return 0;
    ch->route = SM80_PREFILL, ch->inst = in, ch->bm = bm;
    if (kernel && kernel_len)
        pa_kernel_name(kernel, kernel_len, in->family, pa_dtype_name(p->dtype), d, pb, bm, in->bn, NULL);
    return 1;
}

const pa_backend pa_backend_cuda_sm80 = {
    PORTATTN_BACKEND_CUDA_SM80, "cuda-sm80", sm80_probe, sm80_supports, sm80_run, sm80_workspace,
};
