/* cuda-sm90: the instance shapes (shared by the backend table and the kernel files) and the
 * launcher prototype. */
#ifndef PORTATTN_SM90_LAUNCH_H
#define PORTATTN_SM90_LAUNCH_H

#include "backend.h"
#include "cuda_inst.h"
#include "sm90_instances.h"

/* The instances and their shapes are rows of sm90_instances.h (PA_SM90_FWD_LIST, PA_SM90_KV_LIST),
 * from which PA_SM90_NC, PA_SM90_NC_SHORT, PA_SM90_BN, PA_SM90_STAGES and PA_SM90_KV_STAGES come.
 * One producer warpgroup and NC consumer warpgroups of 64 query rows each: two above d64, three
 * at d64 and below (whose exponentials cost as much as their GEMMs: a third warpgroup keeps the
 * tensor cores fed while two do softmax, as FlashAttention-3's 192-row d64 tiles). The producer
 * gives registers to the consumers: 40 x 128 + 232 x 256 and 24 x 128 + 160 x 384 = 64,512 of the SM's 65,536. */
/* d64 (and d32, d48) also have a two-consumer (128-row) shape for short queries (pa_sm90_nc, NC_SHORT):
 * 77 or 128 rows in 128-row blocks waste a third less than in 192-row ones. */
#define PA_SM90_BM_NC(nc) (64 * (nc))
#define PA_SM90_THREADS_NC(nc) (128 * ((nc) + 1))
#define PA_SM90_PRODUCER_REGS_NC(nc) ((nc) == 3 ? 24 : 40)
#define PA_SM90_CONSUMER_REGS_NC(nc) ((nc) == 3 ? 160 : 232)
#define PA_SM90_BM(d) PA_SM90_BM_NC(PA_SM90_NC(d))
/* Instances (head dim D, f16/bf16, PA_SM90_FWD_LIST); a call runs on the smallest that holds both of its head dims
 * (pa_fwd_instance_dim): the tensor maps span the call's columns, so the TMA zero-fills the rest of
 * each 64-column box without reading it. 128-key tiles for d64 (3 K/V slots) and d128 (2), 112 for
 * d192 (2; FlashAttention-3's d192 tile: the largest multiple of 16 whose two slots fit beside Q),
 * 64 for d256 (2; its O accumulator alone is 128 registers a thread). Shared memory
 * (PA_SM90_SMEM, with two Q slots for d64): about 145, 161, 217 and 193 KB of the H100/H200's 227 KB
 * per block. d32 and d48 take d64's shape, d96 d128's, d160 d192's and d224 d256's, in the same shared
 * memory (their rows padded to whole 64-column blocks). */
/* KV-cache instances (PA_SM90_KV_LIST; the default shape of each: a chunk of a prompt is rarely short): K and V from
 * per-sequence caches or through a page table, lengths from seqused_k, packed queries or not. A call
 * runs on the smallest that holds both head dims (d160/d192 on d256). Pages must hold at least
 * PA_SM90_MIN_PAGE rows: a tile of a page pool is one TMA box per page, and a box must land on a
 * whole 8-row swizzle atom of the slot. */
#define PA_SM90_MIN_PAGE 8
/* K/V slots: 3 for d64 and below, 2 for the others (d128: -DPA_SM90_STAGES_D128=3 for an A/B,
 * sm90_instances.h). */
/* Q slots: two for d64 and below, so that the producer loads the next work item's Q while the
 * consumers still wait on this one's (items of one or two key tiles would otherwise pay a Q load latency each, one
 * after another): +1-5% on short non-causal d64 (H200, A/B in NOTES.md). d128 measured 1-2% slower
 * with two, and d192/d256 have no room. -DPA_SM90_Q_SLOTS=1 (C and CUDA flags) builds one slot for
 * an A/B. */
/* GQA packing of the KV instances (FlashAttention-3's PackGQA): a work item takes BM / group query
 * tokens of every query head of one KV head instead of BM tokens of one query head. A decode row of a
 * serving batch is then one item per KV head, not one per query head (each walks the sequence's
 * whole cache: a mixed batch of 8 decodes and 2 chunks of 512 cost 1.78x its parts with one row a
 * query head), and the heads of a group read each K/V tile once. Off for groups over the block's rows.
 * -DPA_SM90_KV_PACK_GQA=0 (C and CUDA flags) builds it off for an A/B. */
#ifndef PA_SM90_KV_PACK_GQA
#define PA_SM90_KV_PACK_GQA 1
#endif
/* Lazy rescale (FlashAttention-4's): the running max that P is exponentiated against moves only when a
 * row's max grows by more than 2^PA_SM90_RESCALE_THRESHOLD, and a warp none of whose rows moved skips
 * the O rescale (D / 2 multiplies a thread per tile: at d256 four times its exponentials). P <= 2^8
 * rounds to 16 bits as well as P <= 1. -DPA_SM90_LAZY_RESCALE=1 (CUDA flags) builds it for an A/B. */
#ifndef PA_SM90_LAZY_RESCALE
#define PA_SM90_LAZY_RESCALE 0
#endif
#define PA_SM90_RESCALE_THRESHOLD 8.0f
/* Ping-pong of the consumer warpgroups (FlashAttention-3's inter-warpgroup schedule, sm90_fwd_kernel.cuh
 * PA_SM90_BAR_TURN): each issues its wgmmas in turn, so one's softmax overlaps the next one's products.
 * Measured within 1% at s4096 (NOTES.md); items of one or two key tiles have no S_{n+1} to overlap their
 * first softmax with, where it may matter more. -DPA_SM90_PINGPONG=1 (CUDA flags) builds it for an A/B. */
#ifndef PA_SM90_PINGPONG
#define PA_SM90_PINGPONG 0
#endif
#ifndef PA_SM90_Q_SLOTS
#define PA_SM90_Q_SLOTS 2
#endif
#define PA_SM90_QS(d) ((d) <= 64 ? PA_SM90_Q_SLOTS : 1)
/* Dynamic shared memory: QS Q tiles, ST K and V slots, the barriers, QS + 1 work items of 64 bytes
 * (the producer's handoff to the consumers) with a barrier each, and 1 KB to align the tiles. */
#define PA_SM90_SMEM_SHAPE(d, nc, bn, st)                                                               \
    (PA_SM90_QS(d) * PA_SM90_BM_NC(nc) * PA_SM90_DA(d) * 2 + 2 * (st) * (bn) * PA_SM90_DA(d) * 2 +  \
     8 * (2 * PA_SM90_QS(d) + 4 * (st)) + 72 * (PA_SM90_QS(d) + 1) + 1024)
#define PA_SM90_SMEM(d) PA_SM90_SMEM_SHAPE(d, PA_SM90_NC(d), PA_SM90_BN(d), PA_SM90_STAGES(d))
/* The KV-cache instances: d128 with three K/V slots (225 KB). Over a page pool a tile is several TMA
 * boxes, and the deeper ring hides their issue: a 2048-token chunk over 16k cached tokens went from
 * 0.88x to 0.91-0.93x the contiguous kernel's speed at pages of 32, 0.95x to 0.98-0.99x at 64 (H200,
 * one producer warp, two interleaved rounds, NOTES.md), where the dense d128 kernel measured 0-2%
 * slower with three. */
#define PA_SM90_KV_SMEM(d) PA_SM90_SMEM_SHAPE(d, PA_SM90_NC(d), PA_SM90_BN(d), PA_SM90_KV_STAGES(d))
/* Sequence lengths and indices are int32 inside the kernel, as in cuda-sm80. */
#define PA_SM90_MAX_SEQ ((1 << 30) - 1)

#ifdef __cplusplus
extern "C" {
#endif

/* The launch of what supports() chose: the instance row in ch->inst, its consumer warpgroups and
 * query heads per work item in ch->nc and ch->qpack. */
portattn_status_t pa_cuda_sm90_launch(const pa_problem *pb, const pa_choice *ch, void *stream, char *err,
                                      size_t err_len);
/* The instance a call runs on (the KV-cache family's over a KV cache), from the tables sm90_launch.cu
 * generates from sm90_instances.h; NULL and why (head dims not multiples of 8, or over the largest
 * instance) when none holds its head dims. */
const pa_cuda_inst *pa_sm90_instance(const pa_problem *pb, char *why, size_t why_len);
/* The consumer warpgroups of a call on instance d: the short-query shape where its 128-row blocks
 * pad less than the default 192-row ones (d <= 64, at most 256 query rows, no KV cache), else
 * PA_SM90_NC(d). */
int pa_sm90_nc(const pa_problem *pb, int d);
/* Query heads per work item of a call whose row blocks have bm rows: the GQA group for KV-cache calls
 * (packed: bm / group tokens of each head), else 1. */
int pa_sm90_qpack(const pa_problem *pb, int bm);
/* 1 if this build holds the sm_90a kernels (nvcc new enough for sm_90a). */
int pa_sm90_compiled(void);

#ifdef __cplusplus
}
#endif

#endif
