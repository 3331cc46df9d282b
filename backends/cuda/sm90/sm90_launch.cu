/* cuda-sm90 launcher: builds the TMA tensor maps of Q, K and V (4-D: dim, seq, head, batch, with the
 * caller's strides; varlen: the packed tensors as one batch of all tokens) and launches the instance
 * for (head dim, dtype). */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "cuda_host.h"
#include "cuda_tmap.cuh"
#include "sm90_fwd_kernel.cuh"
#include "sm90_launch.h"

cudaError_t sm90_launch_d64(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                            int64_t, cudaStream_t);
cudaError_t sm90_launch_d128(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                             int64_t, cudaStream_t);
cudaError_t sm90_launch_d256(const CUtensorMap *, const CUtensorMap *, const CUtensorMap *, const sm80_args *, int,
                             int64_t, cudaStream_t);

extern "C" int pa_sm90_compiled(void) { return 1; }

extern "C" portattn_status_t pa_cuda_sm90_launch(const pa_problem *pb, void *stream, char *err, size_t err_len)
{
    const portattn_fwd_params_t *p = &pb->p;
    const int64_t d = p->head_dim_qk;
    if (p->batch <= 0 || pb->max_seqlen_q <= 0) return PORTATTN_SUCCESS; /* nothing to write */
    sm80_args a;
    portattn_status_t s = pa_fwd_fill_args(pb, &a, err, err_len);
    if (s) return s;
    PFN_cuTensorMapEncodeTiled_v12000 enc = pa_tmap_encoder();
    if (!enc) return pa_fmt(err, err_len, PORTATTN_ERROR_DEVICE, "cuda-sm90: the driver has no cuTensorMapEncodeTiled");
    cudaError_t e = pa_tmap_ensure_context();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pa_cuda_status(e, "cuda-sm90: making the device's context current", err, err_len);
    }
    const int bf16 = p->dtype == PORTATTN_DTYPE_BF16;
    /* Varlen: batch 1 over the packed tokens (seqlen_q/k are the totals; stride[0] is then unused). */
    const int64_t nb = pb->varlen ? 1 : p->batch;
    CUtensorMap tq, tk, tv;
    CUresult r = pa_tmap_bshd(enc, &tq, p->q.data, bf16, nb, p->seqlen_q, p->heads_q, d, p->q.stride, PA_SM90_BM(d));
    if (r == CUDA_SUCCESS)
        r = pa_tmap_bshd(enc, &tk, p->k.data, bf16, nb, p->seqlen_k, p->heads_kv, d, p->k.stride, PA_SM90_BN(d));
    if (r == CUDA_SUCCESS)
        r = pa_tmap_bshd(enc, &tv, p->v.data, bf16, nb, p->seqlen_k, p->heads_kv, d, p->v.stride, PA_SM90_BN(d));
    /* CUresult and cudaError_t share their numbers (a dead context: 719 in both), so the runtime
     * names the error; supports() keeps the arguments inside the encoder's limits. */
    if (r != CUDA_SUCCESS) return pa_cuda_status((cudaError_t)r, "cuda-sm90: cuTensorMapEncodeTiled", err, err_len);
    cudaStream_t st = (cudaStream_t)stream;
    const int64_t msq = pb->max_seqlen_q; /* row blocks per (batch, head): the longest sequence's */
    e = d == 64    ? sm90_launch_d64(&tq, &tk, &tv, &a, bf16, msq, st)
                    : d == 128 ? sm90_launch_d128(&tq, &tk, &tv, &a, bf16, msq, st)
                               : sm90_launch_d256(&tq, &tk, &tv, &a, bf16, msq, st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pa_cuda_status(e, "cuda-sm90: kernel launch", err, err_len);
    }
    return PORTATTN_SUCCESS;
}
