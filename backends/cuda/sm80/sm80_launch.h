/* cuda-sm80: the tile shapes of each instance (shared by the backend table, which names kernels,
 * and the .cu files, which instantiate them) and the launcher prototype. */
#ifndef PORTATTN_SM80_LAUNCH_H
#define PORTATTN_SM80_LAUNCH_H

#include "backend.h"
#include "fwd_resolve.h"

/* Instances: head dim x {f16, bf16}, one row each in sm80_instances.h (PA_SM80_FWD_LIST, and the
 * paged family's PA_SM80_PAGED_LIST with the same shapes); a call runs on the smallest instance that
 * holds both of its head dims (pa_fwd_instance_dim: Dqk != Dv and every multiple of 8 up to 256). The
 * list is FlashAttention-2's less d224, which runs on d256 at 7/8 of its columns. Warps split the CTA's
 * BM query rows (128; d192 64); each warp owns its rows in full. d32, d64, d96 and d128 have 4 warps of
 * two 16-row MMA tiles, so each K and V fragment read from shared memory feeds two MMAs (d32 with
 * 128-key tiles, FlashAttention-2's shape, 11-13% faster than 64). d96 at 64-key tiles ran d80 and d96
 * 14-22% faster than the d128 instance (H200, sm80 forced); its sm_80 build spills 32 bytes (sm_90:
 * none), allowed by the ISA gate by name. d160..d256 have one 16-row tile per warp (the O accumulator
 * of two would not fit beside S) and a one-slot ring (FlashAttention-2's order: V_j lands during Q K_j^T,
 * K_{j+1} during P V_j): d160 8 warps; d192 4 warps, two CTAs per SM, 64-key tiles (on the H200 8-10%
 * faster than 128 rows of 8 warps, which was 18-25% faster than 32-key tiles). d256 has two shapes,
 * picked per device at run time as FlashAttention-2 does: 128 x 64 with 8 warps (128 KB, one CTA per
 * SM: the A100) and 64 x 64 with 4 warps (96 KB: two CTAs per SM where an SM holds 2 x 97 KB,
 * H100/H200; also the only d256 shape within sm_86/89's 99 KB). PA_SM80_BM/BN/WARPS/STAGES (from the
 * list) and PA_SM80_MIN_CTAS/SMEM_BYTES name the default shape of each head dim (d256: the larger). */
#include "cuda_inst.h"
#include "sm80_instances.h"

/* CTAs per SM that __launch_bounds__ asks ptxas to fit (caps registers at 65536 / (CTAs x threads)):
 * one of 8 warps, two of 4, so that every shape gets 255 registers a thread. */
#define PA_SM80_MIN_CTAS(d) (PA_SM80_WARPS(d) == 8 ? 1 : 2)
/* d256's second shape: 64 rows, 4 warps, two CTAs per SM. */
#define PA_SM80_D256_SMALL_BM 64
#define PA_SM80_D256_SMALL_WARPS 4
#define PA_SM80_D256_SMALL_MIN_CTAS 2
/* Dynamic shared memory: the Q tile and STAGES K and V tiles, rows padded to 128-byte multiples
 * (the swizzle works on groups of eight 16-byte chunks): d32 80 KB, d64 48 KB, d96 96 KB, d128 96 KB,
 * d160 96 KB, d192 72 KB, d256 128 KB (64-row shape 96 KB). All fit the A100's 163 KB per block;
 * sm_86/89 (99 KB) take all but d256's 128-row shape. */
#define PA_SM80_PITCH_BYTES(d) (((d) * 2 + 127) / 128 * 128)
#define PA_SM80_SMEM_SHAPE(d, bm, bn, st) (((bm) + 2 * (st) * (bn)) * PA_SM80_PITCH_BYTES(d))
#define PA_SM80_SMEM_BYTES(d) PA_SM80_SMEM_SHAPE(d, PA_SM80_BM(d), PA_SM80_BN(d), PA_SM80_STAGES(d))
#define PA_SM80_D256_SMALL_SMEM \
    PA_SM80_SMEM_SHAPE(256, PA_SM80_D256_SMALL_BM, PA_SM80_BN(256), PA_SM80_STAGES(256))
/* The fewest bytes of shared memory per block that some shape of head dim d needs. */
#define PA_SM80_MIN_SMEM_BYTES(d) ((d) == 256 ? PA_SM80_D256_SMALL_SMEM : PA_SM80_SMEM_BYTES(d))
/* Sequence lengths, windows and row/key indices are int32 inside the kernel (pointer offsets are
 * int64); longer calls go to cuda-generic. */
#define PA_SM80_MAX_SEQ ((1 << 30) - 1)
/* One CTA column per (batch, head) pair, spread over grid y and z. */
#define PA_SM80_MAX_BH ((int64_t)65535 * 65535)

#ifdef __cplusplus
extern "C" {
#endif

/* The prefill launch of what supports() chose: the instance row in ch->inst, its rows per CTA in ch->bm
 * (d256: which of its two shapes). */
portattn_status_t pa_cuda_sm80_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                      size_t err_len);
/* The instance a call runs on (the paged family's over a KV cache, pb->kv_cache), from the tables
 * sm80_launch.cu generates from sm80_instances.h; NULL and why (head dims not multiples of 8, or over
 * the largest instance) when none holds its head dims. */
const pa_cuda_inst *pa_sm80_instance(const pa_problem *pb, char *why, size_t why_len);
/* Query rows per CTA of head dim d's shape on the current device (d256: 64 where two 64-row CTAs
 * fit an SM or the 128-row one does not fit a block, else 128); 0 if the device cannot be read. */
int pa_sm80_block_rows(int d);

#ifdef __cplusplus
}
#endif

#endif
