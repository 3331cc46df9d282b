/* Random argument combinations against portattn_backward (CPU backend, host memory). A valid call is
 * drawn so that every tensor fits its buffer, its forward is run for O and the LSE, and its backward
 * must succeed; then zero to two mutations of the backward's arguments make it invalid in a way
 * validation must catch. Only documented statuses may come back, a failure must carry a message, and
 * under ASan/UBSan nothing may touch memory it should not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { ARENA = 1 << 17, ITERS = 300 };
/* q, k, v, o, lse, dout, dq, dk, dv: disjoint unless a mutation aliases them */
static float arena[9][ARENA];
static int32_t cuq[8], cuk[8];

static int64_t pick(uint64_t *r, int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)((urand(r) + 1) * 0.5 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

static int64_t extent(const int64_t dim[4], const int64_t stride[4])
{
    int64_t e = 1;
    for (int i = 0; i < 4; i++) e += (dim[i] > 0 ? dim[i] - 1 : 0) * stride[i];
    return e;
}

/* Strides for [n, s, h, d] in one of three layouts, maybe padded. */
static void strides(uint64_t *r, int64_t s, int64_t h, int64_t d, int64_t out[4])
{
    int64_t pad = pick(r, 0, 2) * 4;
    switch (pick(r, 0, 2)) {
    case 0: out[3] = 1, out[2] = d + pad, out[1] = h * (d + pad), out[0] = s * h * (d + pad); break;
    case 1: out[3] = 1, out[1] = d + pad, out[2] = s * (d + pad), out[0] = h * s * (d + pad); break;
    default: out[3] = 2, out[2] = 2 * d, out[1] = 2 * d * h + pad, out[0] = s * (2 * d * h + pad); break;
    }
}

/* A valid call: the forward's problem in f, the backward's in p (sharing q, k, v, o, LSE). 0 if the
 * drawn tensors do not fit the arena. */
static int draw(uint64_t *r, portattn_fwd_params_t *f, portattn_bwd_params_t *p)
{
    portattn_fwd_params_init(f);
    f->backend = PORTATTN_BACKEND_CPU, f->dtype = (portattn_dtype_t)pick(r, 1, 3);
    f->batch = pick(r, 0, 3), f->heads_kv = pick(r, 1, 3), f->heads_q = f->heads_kv * pick(r, 1, 3);
    f->head_dim_qk = pick(r, 1, 24), f->head_dim_v = pick(r, 1, 24);
    f->seqlen_q = pick(r, 0, 20), f->seqlen_k = pick(r, 0, 20);
    f->causal = (int)pick(r, 0, 1), f->window_left = pick(r, -1, 6), f->window_right = pick(r, -1, 6);
    f->softcap = pick(r, 0, 1) ? (float)pick(r, 1, 30) : 0.0f;
    f->softmax_scale = pick(r, 0, 1) ? (float)urand(r) : 0.0f;
    const int varlen = pick(r, 0, 3) == 0 && f->batch > 0;
    if (varlen) { /* a valid packing of random lengths, maybe with unused rows at the end */
        cuq[0] = cuk[0] = 0;
        for (int64_t b = 0; b < f->batch; b++)
            cuq[b + 1] = cuq[b] + (int32_t)pick(r, 0, 8), cuk[b + 1] = cuk[b] + (int32_t)pick(r, 0, 8);
        f->cu_seqlens_q = cuq, f->cu_seqlens_k = cuk;
        f->seqlen_q = cuq[f->batch] + pick(r, 0, 2), f->seqlen_k = cuk[f->batch] + pick(r, 0, 2);
    }
    const int64_t nb = varlen ? 1 : f->batch, sq = f->seqlen_q, sk = f->seqlen_k;
    portattn_bwd_params_init(p);
    portattn_tensor_t *t[8] = {&f->q, &f->k, &f->v, &f->o, &p->dout, &p->dq, &p->dk, &p->dv};
    const int region[8] = {0, 1, 2, 3, 5, 6, 7, 8};
    const int64_t dims[8][4] = {{nb, sq, f->heads_q, f->head_dim_qk}, {nb, sk, f->heads_kv, f->head_dim_qk},
                                {nb, sk, f->heads_kv, f->head_dim_v}, {nb, sq, f->heads_q, f->head_dim_v},
                                {nb, sq, f->heads_q, f->head_dim_v}, {nb, sq, f->heads_q, f->head_dim_qk},
                                {nb, sk, f->heads_kv, f->head_dim_qk}, {nb, sk, f->heads_kv, f->head_dim_v}};
    int fits = 1;
    for (int j = 0; j < 8; j++) {
        strides(r, dims[j][1], dims[j][2], dims[j][3], t[j]->stride);
        t[j]->data = arena[region[j]];
        fits &= extent(dims[j], t[j]->stride) * 4 <= (int64_t)sizeof arena[0];
    }
    f->lse = arena[4];
    f->lse_stride[2] = 1, f->lse_stride[1] = sq + pick(r, 0, 2), f->lse_stride[0] = f->heads_q * f->lse_stride[1];
    p->dtype = f->dtype, p->backend = f->backend, p->batch = f->batch, p->seqlen_q = sq, p->seqlen_k = sk;
    p->heads_q = f->heads_q, p->heads_kv = f->heads_kv, p->head_dim_qk = f->head_dim_qk, p->head_dim_v = f->head_dim_v;
    p->q = f->q, p->k = f->k, p->v = f->v, p->o = f->o, p->lse = f->lse;
    memcpy(p->lse_stride, f->lse_stride, sizeof p->lse_stride);
    p->cu_seqlens_q = f->cu_seqlens_q, p->cu_seqlens_k = f->cu_seqlens_k;
    p->causal = f->causal, p->window_left = f->window_left, p->window_right = f->window_right;
    p->softcap = f->softcap, p->softmax_scale = f->softmax_scale, p->deterministic = (int)pick(r, 0, 1);
    return fits;
}

/* A small dense shape with every tensor non-empty, for mutations that need elements to exist. */
static void small_shape(portattn_bwd_params_t *p)
{
    p->batch = p->batch ? p->batch : 1, p->seqlen_q = p->seqlen_k = 3;
    p->cu_seqlens_q = p->cu_seqlens_k = NULL;
}

int main(void)
{
    uint64_t r = test_seed();
    int counts[7] = {0}, failures = 0;
    for (int i = 0; i < ITERS; i++) {
        portattn_fwd_params_t f;
        portattn_bwd_params_t p;
        if (!draw(&r, &f, &p)) { i--; continue; } /* redraw: the library cannot know a buffer is too small */
        for (int j = 0; j < 9; j++)
            for (int64_t e = 0; e < 256; e++) arena[j][e] = (float)urand(&r); /* never zeros */
        if (portattn_forward(&f, NULL)) {
            failures++;
            printf("FAIL iter %d: the forward of a valid call: %s\n", i, portattn_last_error());
            continue;
        }
        int mutated = 0;
        for (int m = (int)pick(&r, 0, 2); m > 0; m--, mutated++) {
            portattn_tensor_t *g[3] = {&p.dq, &p.dk, &p.dv}, *x = g[pick(&r, 0, 2)];
            /* mutations 0-5 set a small shape, which could undo an earlier mutation: first only */
            static const int later[] = {6, 7, 8, 9};
            const int which = (int)(mutated ? later[pick(&r, 0, 3)] : pick(&r, 0, 9));
            if (getenv("PORTATTN_FUZZ_VERBOSE")) printf("iter %d: mutation %d\n", i, which);
            switch (which) {
            case 0: small_shape(&p), x->data = NULL; break;
            case 1: small_shape(&p), x->data = arena[pick(&r, 0, 5)]; break;  /* onto an input */
            case 2: small_shape(&p), p.dk.data = pick(&r, 0, 1) ? p.dq.data : p.dv.data; break;
            case 3: small_shape(&p), p.lse = NULL; break;
            case 4: small_shape(&p), x->stride[1] = 0; break; /* its 3 rows share addresses */
            case 5: small_shape(&p), p.dtype = PORTATTN_DTYPE_F32, x->data = (char *)x->data + 2; break;
            case 6: /* a tensor with no elements never has its strides checked: give it elements */
                small_shape(&p), x->stride[pick(&r, 1, 3)] = -pick(&r, 1, 100); break;
            case 7: p.struct_size = (size_t)pick(&r, 0, 100); break;
            case 8: p.softmax_scale = NAN; break;
            default: p.dtype = (portattn_dtype_t)pick(&r, 4, 100); break;
            }
        }
        portattn_status_t s = portattn_backward(&p, NULL);
        const char *msg = portattn_last_error();
        const int documented = s >= PORTATTN_SUCCESS && s <= PORTATTN_ERROR_DEVICE;
        const int consistent = mutated ? (s == PORTATTN_ERROR_INVALID_ARGUMENT || s == PORTATTN_ERROR_NOT_SUPPORTED) &&
                                             msg[0] != '\0'
                                       : s == PORTATTN_SUCCESS;
        counts[s >= 0 && s <= 6 ? s : 6]++;
        if (!documented || !consistent) {
            failures++;
            printf("FAIL iter %d (%d mutations): %s: %s\n", i, mutated, portattn_status_string(s), msg);
        }
    }
    printf("%d calls: %d success, %d invalid argument, %d not supported, %d other\n", ITERS, counts[0], counts[1],
           counts[2], counts[3] + counts[4] + counts[5] + counts[6]);
    printf("%d passed, %d failed\n", ITERS - failures, failures);
    return failures ? 1 : 0;
}
