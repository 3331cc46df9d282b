/* The test harness: one case table (cases.c), run against any backend, checked against the CPU
 * reference computed in fp32 from the same (dtype-exact) inputs, with the FlashAttention rule:
 * the error may be at most twice that of a naive same-precision implementation. */
#ifndef PORTATTN_TEST_HARNESS_H
#define PORTATTN_TEST_HARNESS_H

#include <stdint.h>
#include "portattn.h"

enum layout { LAYOUT_BSHD, LAYOUT_BHSD, LAYOUT_PADDED, LAYOUT_STRIDED_D };

typedef struct tcase {
    const char *name;
    int64_t b, sq, sk, hq, hkv, dqk, dv;
    int causal;
    int64_t wl, wr;       /* -1 = unbounded */
    float softcap, scale; /* 0 = off / default */
    enum layout layout;
    int varlen;           /* random per-sequence lengths in [0, sq] x [0, sk], some empty; with page or
                           * used: packed queries over the cache (serving: chunks of up to sq tokens,
                           * decodes of 1 and idle sequences mixed, cu_seqlens_k NULL) */
    int lse;
    float amp;            /* amplitude of q and k (0 = 1): large values stress the softmax */
    int64_t page;         /* KV cache: page size of a shuffled page pool (0 = contiguous K/V) */
    int used;             /* KV cache: ragged seqused_k per sequence (some 0 and 1) */
    int64_t append;       /* KV cache: new tokens per sequence appended through k_new/v_new */
    int splits;           /* params.num_splits (0 = heuristic) */
    int sinks;            /* attention-sink inputs (harness.c shape_sinks): this many dominant keys per
                           * sequence over a tail 8-12 nats below; contiguous K/V, positive scale */
    int shared;           /* paged: every odd sequence's first page is sequence 0's (a shared prefix) */
} tcase;

extern const tcase test_cases[];
extern const int test_case_count;

/* A 4-D tensor under test: strides from the case layout, buffer = the whole strided extent. */
typedef struct tens {
    int64_t dim[4], stride[4], elems;
} tens;
tens make_tens(enum layout l, int64_t nb, int64_t s, int64_t h, int64_t d);
int64_t off(const tens *t, int64_t b, int64_t s, int64_t h, int64_t d); /* element offset */
float round_to(portattn_dtype_t t, float x); /* x rounded to dtype t (round to nearest even) */

/* Outcome of one (case, dtype) run. */
typedef enum { RUN_PASS, RUN_FAIL, RUN_NOT_SUPPORTED } run_result;

/* Runs one case in one dtype on `backend` (memory from devmem.h), prints one line, returns the
 * outcome. seed makes the inputs reproducible. */
run_result run_case(const tcase *c, portattn_dtype_t dtype, portattn_backend_t backend, uint64_t seed);

/* The backward of one case (harness_bwd.c): the backend's forward, then its backward, against the
 * CPU backward in fp32 on the same inputs; each of dq, dk, dv within 3x the max error of a naive
 * same-precision backward. KV-cache cases have no backward: RUN_NOT_SUPPORTED. */
run_result run_case_bwd(const tcase *c, portattn_dtype_t dtype, portattn_backend_t backend, uint64_t seed);

/* Whether a test of backend `be` runs: 0 when the backend is available; else 77 ("SKIP ...") when the
 * hardware it needs is absent, or 1 ("FAIL ...") when the CUDA runtime, asked directly, reports a
 * device the backend must run on (e.g. cuda-sm90 on compute capability 9.0): a backend not compiled
 * in or a probe regression must not pass as a skip. */
int test_backend_present(portattn_backend_t be);

/* The compute capability of the current CUDA device (major * 10 + minor), asked of the CUDA runtime
 * directly and not of the library; 0 when there is none or the tests are built without CUDA. */
int cuda_compute_capability(void);

/* The GPU backend a GPU-only test is run for (argv[1]): 0 and *be; 2 with the usage printed when
 * argv[1] names no CUDA-memory backend; else test_backend_present()'s 77 or 1. */
int gpu_test_backend(int argc, char **argv, portattn_backend_t *be);

/* Seed from $PORTATTN_TEST_SEED, else fresh from the clock (printed so a failure can be rerun). */
uint64_t test_seed(void);

/* xorshift-based uniform in [-1, 1) */
double urand(uint64_t *state);

#endif
