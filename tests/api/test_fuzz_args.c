/* Random argument combinations against the public API (CPU backend, host memory). A valid call
 * is drawn so that every tensor really fits its buffer; then zero to two mutations make it
 * invalid in a way validation must catch (INVALID_ARGUMENT with a message, nothing else). Valid
 * calls must succeed and match the independent reference (naive_ref.c) on fresh random inputs
 * with poisoned outputs; under ASan/UBSan nothing may touch memory it should not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "harness.h"
#include "naive_ref.h"
#include "problem.h"

enum { ARENA = 1 << 20, ITERS = 400 };
static float arena[5][ARENA]; /* q, k, v, o, lse regions: disjoint unless a mutation aliases them */
static int32_t cuq[64], cuk[64], su[64];
static double ref_o[(3 * 40 + 3) * 12 * 40], ref_lse[(3 * 40 + 3) * 12]; /* rows x Hq x Dv at most */

static int64_t pick(uint64_t *r, int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)((urand(r) + 1) * 0.5 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

static int64_t extent(const int64_t dim[4], const int64_t stride[4])
{
    int64_t e = 1;
    for (int i = 0; i < 4; i++) e += (dim[i] - 1) * stride[i];
    return e;
}

/* Strides for [n, s, h, d] in one of three layouts, maybe with padding. */
static void strides(uint64_t *r, int64_t n, int64_t s, int64_t h, int64_t d, int64_t out[4])
{
    (void)n;
    int64_t pad = pick(r, 0, 2) * 4;
    switch (pick(r, 0, 2)) {
    case 0: out[3] = 1, out[2] = d + pad, out[1] = h * (d + pad), out[0] = s * h * (d + pad); break;
    case 1: out[3] = 1, out[1] = d + pad, out[2] = s * (d + pad), out[0] = h * s * (d + pad); break;
    default: out[3] = 2, out[2] = 2 * d, out[1] = 2 * d * h + pad, out[0] = s * (2 * d * h + pad); break;
    }
}

int main(void)
{
    uint64_t r = test_seed();
    int counts[7] = {0}, failures = 0, checked = 0, i;
    for (i = 0; i < ITERS; i++) {
        portattn_fwd_params_t p;
        portattn_fwd_params_init(&p);
        p.backend = PORTATTN_BACKEND_CPU;
        p.dtype = (portattn_dtype_t)pick(&r, 1, 3);
        p.batch = pick(&r, 0, 3);
        p.heads_kv = pick(&r, 1, 3);
        p.heads_q = p.heads_kv * pick(&r, 1, 4);
        p.head_dim_qk = pick(&r, 1, 40), p.head_dim_v = pick(&r, 1, 40);
        p.seqlen_q = pick(&r, 0, 40), p.seqlen_k = pick(&r, 0, 40);
        p.causal = (int)pick(&r, 0, 1);
        p.window_left = pick(&r, -1, 10), p.window_right = pick(&r, -1, 10);
        p.softcap = pick(&r, 0, 1) ? (float)pick(&r, 1, 50) : 0.0f;
        p.softmax_scale = pick(&r, 0, 1) ? (float)urand(&r) : 0.0f;
        int varlen = pick(&r, 0, 3) == 0 && p.batch > 0;
        int64_t nb = varlen ? 1 : p.batch;
        if (varlen) { /* a valid packing of random lengths */
            cuq[0] = cuk[0] = 0;
            for (int64_t b = 0; b < p.batch; b++)
                cuq[b + 1] = cuq[b] + (int32_t)pick(&r, 0, 12), cuk[b + 1] = cuk[b] + (int32_t)pick(&r, 0, 12);
            p.cu_seqlens_q = cuq, p.cu_seqlens_k = cuk;
            p.seqlen_q = cuq[p.batch] + pick(&r, 0, 3), p.seqlen_k = cuk[p.batch] + pick(&r, 0, 3);
        }
        const int serving = varlen && pick(&r, 0, 2) == 0; /* packed queries over per-sequence caches */
        if (serving) {
            p.cu_seqlens_k = NULL, p.seqused_k = su;
            for (int64_t b = 0; b < p.batch; b++) su[b] = (int32_t)pick(&r, 0, p.seqlen_k);
        }
        const int64_t nbk = serving ? p.batch : nb;
        portattn_tensor_t *t[4] = {&p.q, &p.k, &p.v, &p.o};
        int64_t dims[4][4] = {{nb, p.seqlen_q, p.heads_q, p.head_dim_qk}, {nbk, p.seqlen_k, p.heads_kv, p.head_dim_qk},
                              {nbk, p.seqlen_k, p.heads_kv, p.head_dim_v}, {nb, p.seqlen_q, p.heads_q, p.head_dim_v}};
        int fits = 1;
        int64_t ext[4];
        for (int j = 0; j < 4; j++) {
            strides(&r, dims[j][0], dims[j][1], dims[j][2], dims[j][3], t[j]->stride);
            t[j]->data = arena[j];
            ext[j] = nb && dims[j][1] ? extent(dims[j], t[j]->stride) : 0;
            fits &= ext[j] * 4 <= (int64_t)sizeof arena[j];
        }
        if (pick(&r, 0, 1)) {
            p.lse = arena[4];
            p.lse_stride[2] = 1, p.lse_stride[1] = p.seqlen_q + pick(&r, 0, 2), p.lse_stride[0] = p.heads_q * p.lse_stride[1];
        }
        if (!fits) { i--; continue; } /* redraw: the library cannot know a buffer is too small */
        for (int j = 0; j < 3; j++) /* fresh inputs, never zeros; poisoned outputs */
            for (int64_t e = 0; e < ext[j]; e++) pa_store_elem(p.dtype, arena[j], e, (float)(urand(&r) + 0.001));
        memset(arena[3], 0xff, (size_t)ext[3] * 4);
        if (p.lse) memset(arena[4], 0xff, (size_t)(nb * p.lse_stride[0] + 1) * 4);

        /* Mutations that validation must reject. */
        int mutated = 0;
        for (int m = (int)pick(&r, 0, 2); m > 0; m--, mutated++) {
            portattn_tensor_t *x = t[pick(&r, 0, 3)];
            /* Mutations 0, 8, 9 and 13 redraw the shape, which could undo an earlier mutation:
             * they may only come first. */
            static const int later[] = {1, 2, 3, 4, 5, 6, 7, 10, 11, 12};
            switch (mutated ? later[pick(&r, 0, 9)] : pick(&r, 0, 13)) {
            case 0: x->data = NULL, p.batch = p.batch ? p.batch : 1, p.seqlen_q = p.seqlen_k = 5, varlen = 0,
                    p.cu_seqlens_q = p.cu_seqlens_k = NULL, p.seqused_k = NULL; break;
            case 1: /* a tensor with no elements never has its strides checked: give it one */
                if (p.batch < 1) p.batch = 1, varlen = 0, p.cu_seqlens_q = p.cu_seqlens_k = NULL, p.seqused_k = NULL;
                x->stride[pick(&r, 1, 3)] = -pick(&r, 1, 100), p.seqlen_q |= 1, p.seqlen_k |= 1; break;
            case 2: p.heads_q = p.heads_kv * 2 + 1, p.heads_kv = 2; break;
            case 3: p.batch = -pick(&r, 1, 1000); break;
            case 4: p.head_dim_qk = -pick(&r, 0, 3); break;
            case 5: p.dtype = (portattn_dtype_t)pick(&r, 4, 100); break;
            case 6: p.window_left = -pick(&r, 2, 50); break;
            case 7: p.softcap = -1.0f; break;
            case 8: p.o.data = arena[pick(&r, 0, 2)], p.batch = 1, p.seqlen_q = 3, p.seqlen_k = 3, varlen = 0,
                    p.cu_seqlens_q = p.cu_seqlens_k = NULL, p.seqused_k = NULL; break;
            case 9: x->stride[pick(&r, 0, 1)] = INT64_MAX / pick(&r, 1, 3), p.batch = 2, p.seqlen_q = p.seqlen_k = 4,
                    varlen = 0, p.cu_seqlens_q = p.cu_seqlens_k = NULL, p.seqused_k = NULL; break;
            case 10: p.heads_kv = 0; break;
            case 11: /* a bad offset or cache length, or cu_seqlens_q with neither cu_seqlens_k nor a cache */
                if (serving && p.batch > 0) su[pick(&r, 0, (int)p.batch - 1)] = -5; /* batch < 0 after mutation 3 */
                else if (varlen && p.batch > 0) cuk[pick(&r, 1, (int)p.batch)] = -5;
                else p.cu_seqlens_q = cuq;
                break;
            case 12: p.struct_size = (size_t)pick(&r, 0, 100); break;
            default: p.o.data = (char *)p.o.data + 2, p.batch = 1, p.seqlen_q = p.seqlen_k = 3, varlen = 0,
                     p.cu_seqlens_q = p.cu_seqlens_k = NULL, p.seqused_k = NULL, p.dtype = PORTATTN_DTYPE_F32; break;
            }
        }
        if (getenv("PORTATTN_FUZZ_VERBOSE")) /* the call about to be made, for a crash report */
            printf("iter %d: mut %d dt %d b %lld sq %lld sk %lld hq %lld hkv %lld d %lld/%lld varlen %d serving %d "
                   "o.stride %lld %lld %lld %lld o %p\n", i, mutated, (int)p.dtype, (long long)p.batch,
                   (long long)p.seqlen_q, (long long)p.seqlen_k, (long long)p.heads_q, (long long)p.heads_kv,
                   (long long)p.head_dim_qk, (long long)p.head_dim_v, varlen, serving, (long long)p.o.stride[0],
                   (long long)p.o.stride[1], (long long)p.o.stride[2], (long long)p.o.stride[3], p.o.data),
                fflush(stdout);
        portattn_status_t s = portattn_forward(&p, NULL);
        const char *msg = portattn_last_error();
        int documented = s >= PORTATTN_SUCCESS && s <= PORTATTN_ERROR_DEVICE;
        int consistent = mutated ? s == PORTATTN_ERROR_INVALID_ARGUMENT && msg[0] != '\0' : s == PORTATTN_SUCCESS;
        if (!mutated && s == PORTATTN_SUCCESS) { /* the outputs, against the independent reference */
            char what[32];
            snprintf(what, sizeof what, "iter %d", i);
            consistent = naive_forward(&p, ref_o, ref_lse) == 0 && naive_compare(what, &p, ref_o, ref_lse) == 0;
            checked++;
        }
        counts[s >= 0 && s <= 6 ? s : 6]++;
        if (!documented || !consistent) {
            failures++;
            printf("FAIL iter %d (%d mutations): %s: %s\n", i, mutated, portattn_status_string(s), msg);
        }
    }
    printf("%d calls: %d success, %d invalid argument, %d not supported, %d other\n", ITERS, counts[0], counts[1],
           counts[2], counts[3] + counts[4] + counts[5] + counts[6]);
    printf("%d valid calls' outputs matched the reference\n", checked);
    printf("%d passed, %d failed\n", ITERS - failures, failures);
    return failures ? 1 : 0;
}
