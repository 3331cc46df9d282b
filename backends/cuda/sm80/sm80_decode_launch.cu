/* cuda-sm80 decode path, host side: which calls it takes, the split heuristic, the workspace, and
 * the launches (append, decode, combine) on the caller's stream. */
#include <cuda_runtime.h>

#include "cuda_append.h"
#include "cuda_family.h"
#include "cuda_host.h"
#include "sm80_decode.h"
#include "sm80_decode_kernel.cuh"
#include "sm80_launch.h"

/* The instance table and, in the same row order, the instance files' entry points: both from
 * sm80_instances.h. */
#define SM80_DEC_ROW(Y, D, ST) {Y, D, 16, PA_SM80_DEC_KT, PA_SM80_DEC_WARPS, ST, PA_SM80_DEC_SMEM_SHAPE(D, ST) + PA_SM80_DEC_STATIC_SMEM},
static const pa_cuda_inst dec_insts[] = {PA_SM80_DEC_LIST(SM80_DEC_ROW, "sm80-decode")};
#undef SM80_DEC_ROW
typedef cudaError_t (*sm80_dec_fn)(const pa_fwd_args *, int, cudaStream_t);
#define PA_X(D) sm80_decode_d##D,
static const sm80_dec_fn dec_fns[] = {PA_SM80_DEC_DIMS(PA_X)};
#undef PA_X
PA_CUDA_INST_FNS_OK(dec_insts, dec_fns);

extern "C" int pa_sm80_decode_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_cuda_inst_ok(dec_insts, PA_CUDA_ROWS(dec_insts), pb, "decode kernel", why, why_len) != NULL;
}

/* 1 and the instance in *out if the decode path takes this problem, which passed its family check
 * (sm80_backend.c: dtype, head dims, per-sequence queries of decode shapes); else 0 and why. */
static int decode_ok(const pa_problem *pb, const pa_cuda_inst **out, char *why, size_t why_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_cuda_inst *in = pa_cuda_inst_ok(dec_insts, PA_CUDA_ROWS(dec_insts), pb, "decode kernel", why, why_len);
    if (!in) return 0;
    const int d = in->d;
    if (p->block_table && p->page_size < PA_SM80_DEC_MIN_PAGE)
        return PA_REFUSE("decode kernel: page_size %lld (takes >= %d)", (long long)p->page_size, PA_SM80_DEC_MIN_PAGE);
    const int64_t rows = p->seqlen_q * pb->group, mtiles = (rows + 15) / 16;
    if (p->batch > 65535 || p->heads_kv * mtiles > 65535 || pb->group > INT32_MAX / 16)
        return PA_REFUSE("decode kernel: batch %lld or KV heads %lld x row tiles %lld over the grid's 65535",
                      (long long)p->batch, (long long)p->heads_kv, (long long)mtiles);
    if (p->seqlen_k > PA_SM80_MAX_SEQ || p->seqlen_new > PA_SM80_MAX_SEQ)
        return PA_REFUSE("decode kernel: cache capacity %lld over 2^30-1", (long long)p->seqlen_k);
    if (!pa_fwd_score_map_ok(pb, why, why_len) || !pa_cuda_smem_ok(in->family, d, in->smem, why, why_len)) return 0;
    if (p->batch * p->heads_kv * rows > INT32_MAX)
        return PA_REFUSE("decode kernel: %lld packed rows over the combine grid", (long long)(p->batch * p->heads_kv * rows));
    *out = in;
    return 1;
}

extern "C" const pa_cuda_inst *pa_sm80_decode_supports(const pa_problem *pb, char *why, size_t why_len)
{
    const pa_cuda_inst *in = NULL;
    return decode_ok(pb, &in, why, why_len) ? in : NULL;
}

/* FlashAttention-2's rule with a tighter bound: the fewest splits whose wave efficiency (CTAs over
 * whole waves of the device's CTA slots) is within 95% of the best (FA2's 85% left 40 of the
 * H200's 264 slots idle at batch 1: 28 splits x 8 KV heads; 32 fill 97%, as cuDNN's grid does),
 * at least 128 keys per split (4 warps x 2 tiles), at most 128 splits. Keys are counted at the capacity (seqlen_k): device-resident cache lengths
 * are not read on the host. params->num_splits overrides (1 = never split). */
extern "C" int pa_sm80_decode_splits(const pa_problem *pb, const pa_cuda_inst *in)
{
    const portattn_fwd_params_t *p = &pb->p;
    if (p->num_splits > 0) return p->num_splits < PA_SM80_DEC_MAX_SPLITS ? p->num_splits : PA_SM80_DEC_MAX_SPLITS;
    int sms = 0, per_sm = 0;
    if (!pa_cuda_device_info(NULL, NULL, &sms, NULL, 0) || sms < 1 || !pa_cuda_device_smem(NULL, &per_sm)) return 1;
    const int smem = PA_SM80_DEC_SMEM_SHAPE(in->d, in->stages) + 1024; /* + the runtime's reserve */
    int per = per_sm / smem;
    per = per < 1 ? 1 : (per > 4 ? 4 : per);
    const int64_t slots = (int64_t)sms * per;
    const int64_t base = p->batch * p->heads_kv * ((p->seqlen_q * pb->group + 15) / 16);
    int64_t most = (p->seqlen_k + 127) / 128;
    most = most < 1 ? 1 : (most > PA_SM80_DEC_MAX_SPLITS ? PA_SM80_DEC_MAX_SPLITS : most);
    if (base >= slots) return 1;
    double eff[PA_SM80_DEC_MAX_SPLITS + 1], best = 0;
    for (int s = 1; s <= most; ++s) {
        const int64_t n = base * s, waves = (n + slots - 1) / slots;
        eff[s] = (double)n / (double)(waves * slots);
        if (eff[s] > best) best = eff[s];
    }
    for (int s = 1; s <= most; ++s)
        if (eff[s] >= 0.95 * best) return s;
    return 1;
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Workspace bytes for `splits` on instance d (0 with one split); *lse_offset: where the partial LSEs
 * start, after the partial O [split][row][d]. One place for the size and the layout. */
static size_t decode_ws_bytes(const pa_problem *pb, int d, int splits, size_t *lse_offset)
{
    const portattn_fwd_params_t *p = &pb->p;
    const size_t rows = (size_t)p->batch * (size_t)p->heads_kv * (size_t)(p->seqlen_q * pb->group);
    const size_t o_bytes = align256((size_t)splits * rows * (size_t)d * 4); /* rows of D */
    if (lse_offset) *lse_offset = o_bytes;
    return splits <= 1 ? 0 : o_bytes + align256((size_t)splits * rows * 4);
}

extern "C" size_t pa_sm80_decode_workspace(const pa_problem *pb, const pa_choice *ch)
{
    return decode_ws_bytes(pb, ((const pa_cuda_inst *)ch->inst)->d, ch->splits, NULL);
}

extern "C" portattn_status_t pa_sm80_decode_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                                   size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const pa_cuda_inst *in = (const pa_cuda_inst *)ch->inst;
    cudaStream_t st = (cudaStream_t)stream;
    pa_fwd_args a;
    if (pa_fwd_fill_args(pb, &a, NULL, 0))
        return pa_fmt(err, err_len, PORTATTN_ERROR_NOT_SUPPORTED, "scale/softcap out of range");
    pa_split_args *sp = &a.split; /* the launch shape: the choice's splits, the workspace, the packed rows */
    sp->splits = ch->splits;

    /* Split partials go to the caller's workspace, else to a stream-ordered allocation; where the
     * runtime cannot allocate (no memory pools, out of memory) the call runs unsplit, which needs
     * none. All of it is settled before the append, so a refused call leaves the cache untouched. */
    size_t lse_offset = 0, need = decode_ws_bytes(pb, in->d, sp->splits, &lse_offset);
    void *ws = p->workspace, *own = NULL;
    if (need && ws && p->workspace_size < need)
        return pa_fmt(err, err_len, PORTATTN_ERROR_INVALID_ARGUMENT,
                      "workspace_size = %zu, this call needs %zu (portattn_forward_workspace_size; it grows with "
                      "batch, heads and query tokens)", p->workspace_size, need);
    if (need && !ws) {
        const cudaError_t pending = cudaPeekAtLastError(); /* the call carries on: clear only our error */
        if (cudaMallocAsync(&own, need, st) == cudaSuccess) {
            ws = own;
        } else {
            pa_cuda_drop_error(pending);
            sp->splits = 1, need = 0;
        }
    }
    if (need) sp->part_o = (float *)ws, sp->part_lse = (float *)((char *)ws + lse_offset);
    portattn_status_t s = pa_cuda_append(pb, &a, stream, err, err_len); /* new tokens first, same stream */
    if (s) {
        if (own) (void)cudaFreeAsync(own, st);
        return s;
    }

    sp->rows = (int)(p->seqlen_q * pb->group), sp->mtiles = (sp->rows + 15) / 16;
    int major = 0;
    sp->pdl = pa_cuda_device_info(&major, NULL, NULL, NULL, 0) && major >= 9;

    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    cudaError_t e = dec_fns[in - dec_insts](&a, bf16, st);
    if (own) {
        cudaError_t f = cudaFreeAsync(own, st);
        if (e == cudaSuccess) e = f;
    }
    if (e != cudaSuccess) return pa_cuda_status(e, "cuda-sm80 decode: kernel launch", err, err_len);
    return PORTATTN_SUCCESS;
}
