/*
 * portattn: a portable attention library with a C11 API.
 *
 * One forward call, many backends (CPU reference, CUDA generic/sm80/sm90/sm100, HIP). The front
 * end validates every argument, picks the best backend that supports the call on the current
 * device (or the one the caller forces) and launches it asynchronously on the caller's stream.
 *
 * Conventions
 *  - Logical tensor dims are (batch, seq, heads, head_dim); strides are int64 element strides in
 *    that order, any non-negative values (a tensor with no elements is never addressed and its
 *    strides are not checked). The default layout is BSHD as in FlashAttention.
 *      Q [B, Sq, Hq, Dqk]   K [B, Sk, Hkv, Dqk]   V [B, Sk, Hkv, Dv]   O [B, Sq, Hq, Dv]
 *      LSE (optional) fp32 [B, Hq, Sq], natural log of the softmax denominator (incl. the max).
 *  - GQA/MQA: Hq is a multiple of Hkv; query head h reads KV head h / (Hq / Hkv).
 *  - Masks are aligned bottom-right (as FlashAttention >= 2.1): query i of a sequence with lengths
 *    (sq, sk) may see key j iff  i + sk - sq - window_left <= j <= i + sk - sq + window_right,
 *    where a window side of -1 is unbounded and causal sets window_right to 0.
 *  - A query row that sees no key writes O = 0 and LSE = -inf (never NaN).
 *  - Memory: GPU backends take device (or managed) pointers, the CPU backend host pointers. The
 *    selector checks where the pointers live, so host pointers on a GPU machine go to the CPU.
 *  - Calls are asynchronous on `stream` (a cudaStream_t / hipStream_t, NULL = default stream) and
 *    thread-safe; the library never exits or aborts.
 *
 * Compiles as C11 and C++ with -Wall -Wextra -Werror -pedantic; needs no CUDA or HIP header.
 */
#ifndef PORTATTN_H
#define PORTATTN_H

#include <stddef.h>
#include <stdint.h>

#include "portattn_version.h" /* PORTATTN_VERSION_MAJOR/MINOR/PATCH, PORTATTN_VERSION (generated) */

#if defined(_WIN32) && defined(PORTATTN_SHARED)
#  if defined(PORTATTN_BUILDING)
#    define PORTATTN_API __declspec(dllexport)
#  else
#    define PORTATTN_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define PORTATTN_API __attribute__((visibility("default")))
#else
#  define PORTATTN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------------ */

typedef enum portattn_status {
    PORTATTN_SUCCESS = 0,
    PORTATTN_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad shape/stride/flag, overlap, overflow */
    PORTATTN_ERROR_NOT_SUPPORTED = 2,    /* valid call that no (or not the forced) backend can run */
    PORTATTN_ERROR_BACKEND_UNAVAILABLE = 3, /* forced backend not compiled in or its hardware absent */
    PORTATTN_ERROR_OUT_OF_MEMORY = 4,    /* host or device allocation failed */
    PORTATTN_ERROR_DEVICE = 5,           /* the GPU runtime reported an error (launch, driver, ...) */
    PORTATTN_ERROR_INTERNAL = 6          /* a bug in portattn: please report it */
} portattn_status_t;

/* Static, never NULL: "success", "invalid argument", ... ("unknown status" for other values). */
PORTATTN_API const char *portattn_status_string(portattn_status_t status);

/* The reason for the last failed call made by this thread (which argument, which value, which
 * backend refused and why); "" when the last call succeeded. Valid until this thread's next call. */
PORTATTN_API const char *portattn_last_error(void);

/* ---- types ------------------------------------------------------------------------------- */

typedef enum portattn_dtype {
    PORTATTN_DTYPE_F16 = 1,
    PORTATTN_DTYPE_BF16 = 2,
    PORTATTN_DTYPE_F32 = 3 /* CPU reference and the generic CUDA kernel only */
} portattn_dtype_t;

/* Backend ids. They are stable: a new backend gets the next id, and no id is renumbered. The order in
 * which automatic selection tries them is the library's own (fastest first, the CPU last; the query's
 * reason lists the ones passed) and need not follow the ids. */
typedef enum portattn_backend {
    PORTATTN_BACKEND_AUTO = 0,
    PORTATTN_BACKEND_CUDA_SM100 = 1, /* tcgen05 + TMEM (B200/B300) */
    PORTATTN_BACKEND_CUDA_SM90 = 2,  /* wgmma + TMA (H100/H200) */
    PORTATTN_BACKEND_CUDA_SM80 = 3,  /* mma.sync (A100 and newer) */
    PORTATTN_BACKEND_HIP_CDNA = 4,   /* MFMA (MI250/MI300) */
    PORTATTN_BACKEND_HIP_RDNA3 = 5,  /* WMMA (gfx11) */
    PORTATTN_BACKEND_CUDA_GENERIC = 6, /* simple, every feature: the GPU oracle and fallback */
    PORTATTN_BACKEND_CPU = 7,        /* C11 reference with double accumulation: the oracle */
    PORTATTN_BACKEND_COUNT_ = 8
} portattn_backend_t;

/* A strided tensor: a pointer and element strides for (batch, seq, heads, head_dim). */
typedef struct portattn_tensor {
    void *data;
    int64_t stride[4];
} portattn_tensor_t;

/* Forward parameters. Initialise with portattn_fwd_params_init(), then set fields. The first
 * field lets the struct grow: later versions append fields and accept older, smaller structs. */
typedef struct portattn_fwd_params {
    size_t struct_size; /* sizeof(portattn_fwd_params_t), set by portattn_fwd_params_init; any
                           size but this one and PORTATTN_FWD_PARAMS_SIZE_V1 is INVALID_ARGUMENT */

    portattn_dtype_t dtype; /* of Q, K, V and O */
    int64_t batch;          /* sequences; 0 is a valid no-op */
    int64_t seqlen_q;       /* Sq per sequence; with cu_seqlens_q: total packed query tokens */
    int64_t seqlen_k;       /* Sk per sequence; with cu_seqlens_k: total packed key tokens */
    int64_t heads_q, heads_kv;
    int64_t head_dim_qk, head_dim_v;

    portattn_tensor_t q, k, v, o;

    /* Optional fp32 LSE output [B, Hq, Sq], strides (batch, head, seq); NULL = not wanted.
     * Varlen: index (head, packed token) and lse_stride[0] is ignored. */
    float *lse;
    int64_t lse_stride[3];

    /* Variable length (FlashAttention's varlen API): int32, batch + 1 entries, non-decreasing,
     * starting at 0, last <= seqlen_q / seqlen_k. Same memory as the tensors. Tensors are then packed
     * [1, total, H, D]: stride[0] is ignored. max_seqlen_* bound the per-sequence lengths (0 = use
     * the totals). Both, or cu_seqlens_q alone over a KV cache (seqused_k and/or block_table below,
     * the serving call): then only Q, O and the LSE are packed. cu_seqlens in host-readable memory
     * are checked against them (INVALID_ARGUMENT); in device memory they cannot be, and a sequence
     * longer than max_seqlen_q gets its rows past max_seqlen_q left unwritten by the kernels that
     * size their grid by it (cuda-sm90, cuda-sm100), as in FlashAttention. */
    const int32_t *cu_seqlens_q;
    const int32_t *cu_seqlens_k;
    int64_t max_seqlen_q, max_seqlen_k;

    float softmax_scale;  /* 0 = 1/sqrt(head_dim_qk) */
    float softcap;        /* 0 = off; else scores become softcap * tanh(scores / softcap) */
    int causal;           /* nonzero: bottom-right causal (same as window_right = 0) */
    int64_t window_left;  /* -1 = unbounded */
    int64_t window_right; /* -1 = unbounded */

    portattn_backend_t backend; /* AUTO = best available; anything else forces that backend */

    /* KV cache (decode, serving). Optional, all zero/NULL = contiguous K/V as above.
     * seqused_k: int32 [batch], keys actually present per sequence (the cache length, <= seqlen_k,
     *   which is then the capacity); queries align bottom-right with it. Not with cu_seqlens_k.
     * Queries per sequence: seqlen_q each, or packed by cu_seqlens_q (cu_seqlens_k NULL): sequence b's
     *   cu_seqlens_q[b + 1] - cu_seqlens_q[b] queries (0, 1 or many) are the last tokens of its
     *   seqused_k[b] keys (of seqlen_k without seqused_k), so query i sees keys up to
     *   seqused_k[b] - sq_b + i when causal: one call for a batch of decodes and prompt chunks.
     *   max_seqlen_k then bounds the cache lengths (0 = seqlen_k). No append in this form (below).
     *   The tiled kernels refuse it (NOT_SUPPORTED): cuda-generic and the CPU run it.
     * block_table: int32 [batch, >= ceil(seqlen_k / page_size)] with row stride block_table_stride:
     *   K and V are then page pools [num_pages, page_size, Hkv, D] (stride[0] between pages,
     *   stride[1] between tokens of a page) and key j of sequence b is row j % page_size of page
     *   block_table[b * block_table_stride + j / page_size]. page_size: a power of two. Entries of
     *   pages a sequence uses must lie in [0, num_pages). Not with cu_seqlens_k.
     * Same memory as the tensors. Backends that do not take them refuse the call (NOT_SUPPORTED).
     * Sequences may share pages (a common prefix), except a page an append writes (below). */
    const int32_t *seqused_k;
    const int32_t *block_table;
    int64_t block_table_stride;
    int64_t page_size;
    int64_t num_pages;

    /* ---- added in 0.2: older callers pass the smaller struct_size and get zeros here ---- */

    /* Append (decode), needs seqused_k: k_new/v_new [batch, seqlen_new, Hkv, D] are written into
     * the cache at rows seqused_k[b] .. seqused_k[b] + seqlen_new - 1 (through the page table when
     * paged) before the attention, which then sees seqused_k[b] + seqlen_new keys. seqused_k is not
     * updated (the caller advances it). K and V are then written: they must be writable, must not
     * share elements with each other (interleaved in one buffer is fine when their strides are equal,
     * e.g. [B, S, 2, Hkv, D]; other shared layouts are refused) or overlap any other argument, and must have room:
     * seqused_k[b] + seqlen_new <= seqlen_k (checked when the host can read seqused_k; on the device
     * rows past the capacity are dropped, never written out of bounds). A page an append writes must
     * not be read as other keys, by another sequence or at a second position of the same table
     * (checked when the host can read the table). k_new.data NULL = none. Not with cu_seqlens_q
     * (INVALID_ARGUMENT): k_new gives every sequence seqlen_new tokens, packed queries give each its
     * own count; write a serving step's new tokens into the cache first and count them in seqused_k. */
    portattn_tensor_t k_new, v_new;
    int64_t seqlen_new;

    /* Split-KV (flash-decoding) scratch for GPU backends. portattn_forward_workspace_size() gives
     * the bytes a call needs (0 when its kernel does not split). With workspace NULL a backend that
     * needs it allocates stream-ordered (cudaMallocAsync/cudaFreeAsync) on the call's stream; pass
     * one to keep allocation out of a captured CUDA graph. num_splits: 0 = heuristic, 1 = never
     * split, n > 1 = split the keys of each (sequence, KV head) into at most n parts. For a given
     * split count the result is bitwise deterministic. */
    void *workspace;
    size_t workspace_size;
    int num_splits;
} portattn_fwd_params_t;

/* struct_size of the 0.1 struct (up to num_pages), still accepted. */
#define PORTATTN_FWD_PARAMS_SIZE_V1 offsetof(portattn_fwd_params_t, k_new)

/* Sets struct_size, windows to -1, backend AUTO, every other field 0. */
PORTATTN_API void portattn_fwd_params_init(portattn_fwd_params_t *params);

/* Contiguous BSHD tensor [b, s, h, d] over `data`. A negative size, or s * h * d past INT64_MAX,
 * gives every stride -1, which portattn_forward refuses (INVALID_ARGUMENT). */
PORTATTN_API portattn_tensor_t portattn_tensor_bshd(void *data, int64_t s, int64_t h, int64_t d);
/* Contiguous BHSD tensor [b, h, s, d] over `data` (logical dims stay (batch, seq, heads, dim)); the
 * same -1 strides on overflow. */
PORTATTN_API portattn_tensor_t portattn_tensor_bhsd(void *data, int64_t s, int64_t h, int64_t d);

/* ---- forward ----------------------------------------------------------------------------- */

/* Validates, selects and launches. Forcing: params->backend, else the environment variable
 * PORTATTN_BACKEND (a backend name, e.g. "cpu", "cuda-generic"), else automatic. A forced backend
 * that cannot run the call returns NOT_SUPPORTED or BACKEND_UNAVAILABLE with the reason; there is
 * no silent fallback. Asynchronous on `stream` for GPU backends; synchronous for the CPU. */
PORTATTN_API portattn_status_t portattn_forward(const portattn_fwd_params_t *params, void *stream);

/* Bytes of workspace portattn_forward would use for these params on the backend it would select
 * (0 when it needs none). Validates like portattn_forward; launches and allocates nothing. */
PORTATTN_API portattn_status_t portattn_forward_workspace_size(const portattn_fwd_params_t *params, size_t *bytes);

/* Which backend and kernel portattn_forward would run for these params, and why the backends
 * ahead of it were passed over. Same selector as portattn_forward; launches nothing. */
typedef struct portattn_selection {
    portattn_backend_t backend;
    char backend_name[32];
    char kernel[96];  /* e.g. "generic<bf16>" */
    char reason[512]; /* one line per skipped backend, e.g. "cuda-sm90: not compiled in" */
} portattn_selection_t;

PORTATTN_API portattn_status_t portattn_forward_query(const portattn_fwd_params_t *params,
                                                      portattn_selection_t *selection);

/* ---- backward ---------------------------------------------------------------------------- */

/* Backward parameters: the forward's problem (same fields, same meaning; no KV cache, no append),
 * its output O and LSE, the upstream gradient dO, and the gradients to write. Initialise with
 * portattn_bwd_params_init(), then set fields. The first field lets the struct grow.
 *   dO [B, Sq, Hq, Dv] (strides like O)   dQ [B, Sq, Hq, Dqk]   dK [B, Sk, Hkv, Dqk]   dV [B, Sk, Hkv, Dv]
 * GQA/MQA: dK and dV of a KV head are summed over the query heads that read it. Gradients of keys no
 * query sees, and of rows that see no key, are written as 0. Under varlen, token rows past the last
 * sequence (cu_seqlens[batch] < the packed total) are not written, as in the forward. */
typedef struct portattn_bwd_params {
    size_t struct_size; /* sizeof(portattn_bwd_params_t), set by portattn_bwd_params_init; any other
                           size is INVALID_ARGUMENT */

    portattn_dtype_t dtype; /* of Q, K, V, O, dO, dQ, dK and dV */
    int64_t batch;
    int64_t seqlen_q;       /* with cu_seqlens_q: total packed query tokens */
    int64_t seqlen_k;       /* with cu_seqlens_k: total packed key tokens */
    int64_t heads_q, heads_kv;
    int64_t head_dim_qk, head_dim_v;

    portattn_tensor_t q, k, v; /* the forward's inputs */
    portattn_tensor_t o;       /* the forward's output */
    portattn_tensor_t dout;    /* dLoss/dO */

    /* The forward's fp32 LSE [B, Hq, Sq] (required), strides (batch, head, seq); varlen: (head, packed
     * token), lse_stride[0] ignored. -inf marks a row that saw no key. */
    const float *lse;
    int64_t lse_stride[3];

    portattn_tensor_t dq, dk, dv; /* outputs: distinct addresses, sharing memory with no other argument */

    /* Variable length, exactly as in the forward. */
    const int32_t *cu_seqlens_q;
    const int32_t *cu_seqlens_k;
    int64_t max_seqlen_q, max_seqlen_k;

    float softmax_scale;  /* 0 = 1/sqrt(head_dim_qk) */
    float softcap;        /* 0 = off */
    int causal;           /* bottom-right */
    int64_t window_left;  /* -1 = unbounded */
    int64_t window_right; /* -1 = unbounded */

    /* Nonzero: bitwise-identical gradients run to run (backends that would otherwise accumulate in
     * a nondeterministic order choose a fixed one, or refuse with NOT_SUPPORTED). */
    int deterministic;

    portattn_backend_t backend; /* AUTO = best available with a backward; else forced */

    /* Scratch for GPU backends, sized by portattn_backward_workspace_size(); NULL = the backend
     * allocates stream-ordered when it needs some. */
    void *workspace;
    size_t workspace_size;
} portattn_bwd_params_t;

/* Sets struct_size, windows to -1, backend AUTO, dtype BF16, every other field 0. */
PORTATTN_API void portattn_bwd_params_init(portattn_bwd_params_t *params);

/* Validates, selects a backend that has a backward pass and launches (forcing as in the forward).
 * Asynchronous on `stream` for GPU backends; synchronous for the CPU. */
PORTATTN_API portattn_status_t portattn_backward(const portattn_bwd_params_t *params, void *stream);

/* Bytes of workspace portattn_backward would use for these params (0 when none). */
PORTATTN_API portattn_status_t portattn_backward_workspace_size(const portattn_bwd_params_t *params, size_t *bytes);

/* Which backend and kernel portattn_backward would run, and why the backends ahead were passed over. */
PORTATTN_API portattn_status_t portattn_backward_query(const portattn_bwd_params_t *params,
                                                       portattn_selection_t *selection);

/* ---- merge ------------------------------------------------------------------------------- */

/* Combines two attention results of the same queries over disjoint key sets, (O, LSE) and
 * (O_part, LSE_part), into the first pair, in place: per row, with m = max(LSE, LSE_part),
 *   LSE <- m + log(e^(LSE - m) + e^(LSE_part - m)),   O <- (e^(LSE - m) O + e^(LSE_part - m) O_part) / that sum,
 * in fp32 or wider, so that merging portattn_forward results over key sets K1, K2 gives the forward
 * over K1 u K2 (ring attention, split-KV). A side with LSE = -inf saw no key: its O is not read (a
 * ring may start from LSE = -inf and O uninitialised); both -inf gives O = 0 and LSE = -inf, as the
 * forward writes a row that sees no key. A NaN LSE makes the row NaN. Each O may be F16, BF16 or F32
 * independently (an fp32 accumulator, fp32 partials: no rounding between ring steps).
 *   O, O_part [B, Sq, Hq, Dv] (any strides)     LSE, LSE_part fp32 [B, Hq, Sq], strides (batch, head, seq)
 * Packed (varlen) results: batch 1, seqlen_q = the packed total, LSE strides (0, head, token).
 * O_part and LSE_part are read only and must share no memory with O or LSE. */
typedef struct portattn_merge_params {
    size_t struct_size;          /* sizeof(portattn_merge_params_t), set by portattn_merge_params_init; any
                                    other size is INVALID_ARGUMENT */
    portattn_dtype_t dtype;      /* of o */
    portattn_dtype_t dtype_part; /* of o_part; 0 = the same as dtype */
    int64_t batch, seqlen_q, heads_q, head_dim_v;

    portattn_tensor_t o;         /* read and written */
    float *lse;                  /* read and written */
    int64_t lse_stride[3];
    portattn_tensor_t o_part;
    const float *lse_part;
    int64_t lse_part_stride[3];

    /* AUTO (or PORTATTN_BACKEND when set): the CPU for host memory, CUDA for device memory.
     * CPU forces the host loop; any CUDA backend forces the one CUDA merge kernel. */
    portattn_backend_t backend;
} portattn_merge_params_t;

/* Sets struct_size, dtype BF16, dtype_part 0 (= dtype), backend AUTO, every other field 0. */
PORTATTN_API void portattn_merge_params_init(portattn_merge_params_t *params);

/* Validates and merges (asynchronous on `stream` for CUDA memory, synchronous on the host). */
PORTATTN_API portattn_status_t portattn_merge(const portattn_merge_params_t *params, void *stream);

/* ---- backends ---------------------------------------------------------------------------- */

typedef struct portattn_backend_info {
    portattn_backend_t backend;
    const char *name;   /* "cpu", "cuda-generic", "cuda-sm80", ... (static) */
    int compiled;       /* built into this library */
    int available;      /* compiled and its hardware/runtime is present */
    char detail[160];   /* device name, or why it is unavailable */
} portattn_backend_info_t;

/* Fills info for one backend (any value in [1, PORTATTN_BACKEND_COUNT_)). */
PORTATTN_API portattn_status_t portattn_backend_get_info(portattn_backend_t backend,
                                                         portattn_backend_info_t *info);

/* Name <-> id. "auto" gives PORTATTN_BACKEND_AUTO with *ok = 1; unknown names give
 * PORTATTN_BACKEND_AUTO with *ok = 0 (ok may be NULL). */
PORTATTN_API const char *portattn_backend_name(portattn_backend_t backend);
PORTATTN_API portattn_backend_t portattn_backend_from_name(const char *name, int *ok);

/* Runtime version, PORTATTN_VERSION of the library actually loaded. */
PORTATTN_API int portattn_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTATTN_H */
