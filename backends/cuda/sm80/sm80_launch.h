/* cuda-sm80: the tile shapes of each instance (shared by the backend table, which names kernels,
 * and the .cu files, which instantiate them) and the launcher prototype. */
#ifndef PORTATTN_SM80_LAUNCH_H
#define PORTATTN_SM80_LAUNCH_H

#include "backend.h"

/* Instances: head dim (Dqk == Dv) x {f16, bf16}. Warps split the CTA's BM = 128 query rows; each
 * warp owns its rows in full. For d <= 128 that is two 16-row MMA tiles per warp (4 warps), so each
 * K and V fragment read from shared memory feeds two MMAs; d256 has one tile per warp and 8 warps
 * (its O accumulator alone is 128 registers). K/V tiles of BN keys stream through a cp.async ring
 * of STAGES slots each; d256 has one slot (FlashAttention-2's order: V_j lands during Q K_j^T,
 * K_{j+1} during P V_j), which keeps it within the A100's 163 KB per block. d96 takes 32-key tiles,
 * the largest that leave ptxas no spills next to its padded rows. */
#define PA_SM80_HAS_DIM(d) ((d) == 64 || (d) == 96 || (d) == 128 || (d) == 256)
#define PA_SM80_WARPS(d) ((d) == 256 ? 8 : 4)
#define PA_SM80_BM(d) 128
#define PA_SM80_BN(d) ((d) == 96 ? 32 : 64)
/* CTAs per SM that __launch_bounds__ asks ptxas to fit (caps registers at 65536 / (CTAs x threads)). */
#define PA_SM80_MIN_CTAS(d) ((d) == 256 ? 1 : 2)
#define PA_SM80_STAGES(d) ((d) == 256 ? 1 : 2)
/* Dynamic shared memory: the Q tile and STAGES K and V tiles, rows padded to 128-byte multiples
 * (the swizzle works on groups of eight 16-byte chunks): d64 48 KB, d96 64 KB, d128 96 KB,
 * d256 128 KB. All fit the A100's 163 KB per block; sm_86/89 (99 KB) take d64..d128. */
#define PA_SM80_PITCH_BYTES(d) (((d) * 2 + 127) / 128 * 128)
#define PA_SM80_SMEM_BYTES(d) \
    ((PA_SM80_BM(d) + 2 * PA_SM80_STAGES(d) * PA_SM80_BN(d)) * PA_SM80_PITCH_BYTES(d))
/* Sequence lengths, windows and row/key indices are int32 inside the kernel (pointer offsets are
 * int64); longer calls go to cuda-generic. */
#define PA_SM80_MAX_SEQ ((1 << 30) - 1)
/* One CTA column per (batch, head) pair, spread over grid y and z. */
#define PA_SM80_MAX_BH ((int64_t)65535 * 65535)

#ifdef __cplusplus
extern "C" {
#endif

portattn_status_t pa_cuda_sm80_launch(const pa_problem *pb, void *stream, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
