/* Element <-> (lane, register item) maps of the AMD matrix instructions the HIP kernels use,
 * from docs/design.md section 9 (checked element by element against AMD's matrix instruction
 * calculator). A is M x K, B is K x N, C/D is M x N; "item" is the element's index in the lane's
 * operand vector (half4: items 0..3; float16: regs 0..15). Plain C for host tests and device code;
 * tests/sim/test_hip_layout.c checks them against the documented examples and for being bijections. */
#ifndef PORTATTN_HIP_MFMA_LAYOUT_H
#define PORTATTN_HIP_MFMA_LAYOUT_H

#if defined(__HIPCC__) || defined(__CUDACC__)
#define PA_MFMA_FN __host__ __device__ static inline
#else
#define PA_MFMA_FN static inline
#endif

typedef struct pa_lane_item { int lane, item; } pa_lane_item;

/* v_mfma_f32_32x32x8f16 / _32x32x8bf16_1k (CDNA2, CDNA3): wave64, A/B 4 elements, D 16 floats. */
PA_MFMA_FN pa_lane_item pa_mfma32_a(int i, int k) { pa_lane_item r = {i + 32 * (k / 4), k % 4}; return r; }
PA_MFMA_FN pa_lane_item pa_mfma32_b(int k, int j) { pa_lane_item r = {j + 32 * (k / 4), k % 4}; return r; }
PA_MFMA_FN pa_lane_item pa_mfma32_d(int i, int j) { pa_lane_item r = {j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4}; return r; }

/* v_mfma_f32_16x16x16f16 / _16x16x16bf16_1k: wave64, A/B 4 elements, D 4 floats. */
PA_MFMA_FN pa_lane_item pa_mfma16_a(int i, int k) { pa_lane_item r = {i + 16 * (k / 4), k % 4}; return r; }
PA_MFMA_FN pa_lane_item pa_mfma16_b(int k, int j) { pa_lane_item r = {j + 16 * (k / 4), k % 4}; return r; }
PA_MFMA_FN pa_lane_item pa_mfma16_d(int i, int j) { pa_lane_item r = {j + 16 * (i / 4), i % 4}; return r; }

/* v_wmma_f32_16x16x16_f16 (RDNA3), wave32: A row i and B column j live in lanes i and i + 16 (the same
 * 16 elements twice; the functions give the first copy); D (f32) 8 floats per lane. */
PA_MFMA_FN pa_lane_item pa_wmma_a(int i, int k) { pa_lane_item r = {i, k}; return r; }
PA_MFMA_FN pa_lane_item pa_wmma_b(int k, int j) { pa_lane_item r = {j, k}; return r; }
PA_MFMA_FN pa_lane_item pa_wmma_d(int i, int j) { pa_lane_item r = {j + 16 * (i % 2), i / 2}; return r; }

/* The RDNA3 kernel's P^T: in the S^T = K Q^T accumulator a lane holds 8 of the 16 keys of its query
 * (keys 2r + lane / 16, reg r), its partner lane ^ 16 the other 8. After one exchange both lanes hold
 * all 16 in the order "even keys, then odd keys": B item p of P^T (and A item p of V^T, which must
 * use the same k order) is key pa_wmma_pv_key(p) of the 16-key block. */
PA_MFMA_FN int pa_wmma_pv_key(int p) { return 2 * (p % 8) + p / 8; }

#endif
