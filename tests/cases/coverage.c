/* The pinned lists (coverage.h), from what the README and each backend's supports() claim. The
 * CPU backend, cuda-generic and the HIP backends (hip-generic behind their kernels) decline nothing. The others decline every f32 case and, in f16 and
 * bf16, the cases listed (forward and backward apart). */
#include "coverage.h"
#include "harness.h"

#include <string.h>

/* KV cache and paged K/V with few query tokens: cuda-sm80 takes them (split-KV decode kernel), the
 * tiled prefill kernels not. */
#define KV_CACHE_CASES                                                                                       \
    "kvcache_used_decode", "paged16_decode_gqa4", "paged64_sq16_causal_mqa", "paged256_window",                \
        "decode_append1_paged16_gqa8", "decode_sq4_append4_paged64_causal", "decode_mqa_sq16_append16_paged256", \
        "decode_gqa4_d256_used", "decode_split_long_gqa4", "decode_split_paged64_window_softcap",               \
        "decode_sq8_gqa4_bhsd_paged32", "decode_padded_append3_nolse", "decode_splits7_negscale",                \
        "decode_splits128_short", "decode_nosplit_long"

/* Packed queries over a KV cache: the CPU, cuda-generic, cuda-sm80's paged prefill instances
 * (d64/d128) and cuda-sm90's KV-cache instances (pa_fwd_not_serving refuses the rest). */
#define SERVE_SM80_CASES                                                                                      \
    "serve_mix_paged16_gqa4_causal", "serve_mix_paged64_causal_window", "serve_mix_paged256_mqa_softcap",        \
        "serve_used_padded_gqa8_nolse", "serve_decodes_paged64_splits3", "serve_mix_paged16_bhsd_window",         \
        "serve_mix_paged8_gqa4_d96", "serve_mix_paged32_gqa3_causal", "serve_mix_paged16_mqa32", \
        "serve_many_paged16_gqa4_causal"
/* ... and those with head dims over 128 (no paged d256 instance) or not multiples of 8 */
#define SERVE_WIDE_CASES "serve_paged16_full_d256", "serve_mix_paged256_d59_v37"
#define SERVE_CASES SERVE_SM80_CASES, SERVE_WIDE_CASES
/* More than 16 query tokens per sequence over a KV cache: past the decode kernels; cuda-sm80 takes
 * them on its paged prefill instances. */
#define KV_PREFILL_CASES \
    "kvprefill_paged16_gqa4_causal", "kvprefill_append40_paged64_window", "kvprefill_page1_mqa_softcap", \
        "kvprefill_gqa5_d64_causal_window"

/* head dims that are not multiples of 8, and a non-unit innermost stride */
#define ODD_SHAPE_CASES "d59_v37_odd", "layout_strided_d"
/* Varlen at head dims that are not multiples of 64 (those of cuda-sm90's narrow instances) */
#define VARLEN_DIM_CASES                                                                                     \
    "d32_varlen_window", "d40_varlen_causal_gqa2", "d96_varlen", "d160_varlen_softcap", "d224_varlen_causal"
/* cuda-sm100's instances take d64 and d128 with Dqk == Dv only */
#define SM100_DIM_CASES                                                                                      \
    "d32", "d80", "d160", "d192_v128", "d96", "d40", "d48_causal_gqa2", "d112_varlen", "d224_causal",          \
        "d136_v72_window", "d64_v128_varlen_causal", "d192_padded", "d96_v160_padded", "d256", "d256_causal",      \
        "varlen_softcap_d256", VARLEN_DIM_CASES
/* The KV-cache cases with head dims between the decode kernel's instances */
#define DECODE_DIM_CASES "d80_decode_paged16_gqa4", "d200_decode_split_causal", "d32_v96_decode_append2"

static const char *const none[] = {NULL};
static const char *const sm80[] = {ODD_SHAPE_CASES, SERVE_WIDE_CASES, NULL};
/* The TMA kernels take no decode shapes (16 query tokens or fewer, or no keys): cuda-sm80 takes those */
#define TMA_DECODE_CASES "single", "sq7_sk17", "sk0_masked", "sink1_decode_gqa4", DECODE_DIM_CASES, KV_CACHE_CASES
/* cuda-sm90's KV-cache instances (d64/d128/d256) take the serving and KV-prefill cases but a decode
 * batch, head dims that are not multiples of 8 and pages under 8 rows */
static const char *const sm90[] = {ODD_SHAPE_CASES, TMA_DECODE_CASES, "serve_decodes_paged64_splits3",
                                   "serve_mix_paged256_d59_v37", "kvprefill_page1_mqa_softcap", NULL};
static const char *const sm100[] = {ODD_SHAPE_CASES, TMA_DECODE_CASES, SERVE_CASES, KV_PREFILL_CASES, SM100_DIM_CASES,
                                    NULL};
/* hip-cdna under the nvcc wave emulation (PORTATTN_HIP_EMULATION): its prefill kernel alone. The HIP
 * backends themselves decline nothing: hip-generic takes what their fast kernels do not. */
static const char *const hip_cdna_emu[] = {ODD_SHAPE_CASES, DECODE_DIM_CASES, KV_CACHE_CASES, SERVE_CASES,
                                           KV_PREFILL_CASES, NULL};

/* The backward (cpu and cuda-generic): every case but the KV-cache and serving ones, which have no backward. */
static const char *const bwd[] = {KV_CACHE_CASES, DECODE_DIM_CASES, SERVE_CASES, KV_PREFILL_CASES, NULL};
/* cuda-sm80's backward: head dims 64, 96, 128 and 256 with Dqk == Dv (no padded instances), f16 and bf16 */
static const char *const bwd_sm80[] = {KV_CACHE_CASES, DECODE_DIM_CASES, SERVE_CASES, KV_PREFILL_CASES, ODD_SHAPE_CASES,
                                       "d32", "d80",
                                       "d160", "d192_v128", "d40", "d48_causal_gqa2", "d112_varlen", "d224_causal",
                                       "d136_v72_window", "d64_v128_varlen_causal", "d192_padded", "d96_v160_padded",
                                       "d32_varlen_window", "d40_varlen_causal_gqa2", "d160_varlen_softcap",
                                       "d224_varlen_causal", NULL};
/* ... whose d256 instance needs 209 KB of shared memory per block: sm_90 and sm_100-class parts allow
 * 227 KB, the A100 (sm_80/87) 163 KB and sm_86/89/120 99 KB, which decline these cases. */
static const char *const bwd_sm80_d256[] = {"d256", "d256_causal", "varlen_softcap_d256", NULL};

/* cuda-sm90's backward (sm90_bwd_backend.c): d64 and d128 with Dqk == Dv, f16 and bf16, dense batches
 * with keys and more than 16 queries, no softcap or negative scale, 16-byte rows. Its deterministic mode is declined,
 * so the harness checks its default mode alone. Decided from the case's fields (harness.h). */
static const char *const odd_shapes[] = {ODD_SHAPE_CASES, NULL};
static int listed(const char *const *list, const char *name);
static int bwd_sm90_declines(const char *name, portattn_dtype_t dtype)
{
    if (dtype == PORTATTN_DTYPE_F32 || listed(bwd, name) || listed(odd_shapes, name)) return 1;
    for (int i = 0; i < test_case_count; i++) {
        const tcase *c = &test_cases[i];
        if (strcmp(c->name, name)) continue;
        /* the case's forward runs forced on cuda-sm90 first, which leaves decode shapes to cuda-sm80 */
        return c->dqk != c->dv || (c->dqk != 64 && c->dqk != 128) || c->varlen || c->softcap > 0 || c->scale < 0 ||
               (c->b > 0 && (c->sk == 0 || c->sq <= 16));
    }
    return 1;
}

/* hip-cdna is its nvcc emulation (cdna_emu_backend.c), whose probe detail says so. */
static int hip_cdna_emulated(void)
{
    portattn_backend_info_t info;
    return !portattn_backend_get_info(PORTATTN_BACKEND_HIP_CDNA, &info) && info.available &&
           strstr(info.detail, "emulated on a CUDA device") != NULL;
}

/* The device cuda-sm80 runs on has 227 KB of shared memory per block: its probe's detail names it
 * as "NAME (sm_XY, N SMs)". */
static int sm80_device_has_227k(void)
{
    portattn_backend_info_t info;
    if (portattn_backend_get_info(PORTATTN_BACKEND_CUDA_SM80, &info) || !info.available) return 0;
    const char *sm = strstr(info.detail, "(sm_");
    return sm && (!strncmp(sm + 4, "9", 1) || !strncmp(sm + 4, "10", 2));
}

static int listed(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (!strcmp(*list, name)) return 1;
    return 0;
}

int coverage_expects_decline(portattn_backend_t backend, const char *name, portattn_dtype_t dtype, int backward)
{
    const char *const *list;
    if (backward) {
        if (backend == PORTATTN_BACKEND_CUDA_SM80) {
            if (dtype == PORTATTN_DTYPE_F32) return 1;
            if (listed(bwd_sm80_d256, name)) return !sm80_device_has_227k();
            list = bwd_sm80;
        } else if (backend == PORTATTN_BACKEND_CUDA_SM90) {
            return bwd_sm90_declines(name, dtype);
        } else if (backend == PORTATTN_BACKEND_CPU || backend == PORTATTN_BACKEND_CUDA_GENERIC) {
            list = bwd;
        } else {
            return -1;
        }
        return listed(list, name);
    }
    switch (backend) {
    case PORTATTN_BACKEND_CPU:
    case PORTATTN_BACKEND_CUDA_GENERIC: list = none; break;
    case PORTATTN_BACKEND_CUDA_SM80: list = sm80; break;
    case PORTATTN_BACKEND_CUDA_SM90: list = sm90; break;
    case PORTATTN_BACKEND_CUDA_SM100: list = sm100; break;
    case PORTATTN_BACKEND_HIP_CDNA: list = hip_cdna_emulated() ? hip_cdna_emu : none; break;
    case PORTATTN_BACKEND_HIP_RDNA3: list = none; break;
    default: return -1;
    }
    if (list != none && dtype == PORTATTN_DTYPE_F32) return 1;
    return listed(list, name);
}
