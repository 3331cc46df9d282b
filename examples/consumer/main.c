/* The smallest portattn program: attention over host buffers on the CPU backend. With one key
 * per sequence the output equals V, which the program checks. */
#include <portattn.h>
#include <stdio.h>

int main(void)
{
    enum { S = 4, H = 2, D = 8 };
    static float q[S * H * D], k[H * D], v[H * D], o[S * H * D];
    for (int i = 0; i < S * H * D; i++) q[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < H * D; i++) k[i] = 0.25f * (float)i, v[i] = (float)i - 5.0f;

    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    p.dtype = PORTATTN_DTYPE_F32;
    p.batch = 1, p.seqlen_q = S, p.seqlen_k = 1, p.heads_q = H, p.heads_kv = H;
    p.head_dim_qk = D, p.head_dim_v = D;
    p.q = portattn_tensor_bshd(q, S, H, D);
    p.k = portattn_tensor_bshd(k, 1, H, D);
    p.v = portattn_tensor_bshd(v, 1, H, D);
    p.o = portattn_tensor_bshd(o, S, H, D);
    p.backend = PORTATTN_BACKEND_CPU;

    portattn_selection_t sel;
    portattn_status_t st = portattn_forward_query(&p, &sel);
    if (st == PORTATTN_SUCCESS) st = portattn_forward(&p, NULL);
    if (st != PORTATTN_SUCCESS) {
        fprintf(stderr, "portattn: %s: %s\n", portattn_status_string(st), portattn_last_error());
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < S * H * D; i++) bad += o[i] != v[i % (H * D)];
    printf("portattn %d via %s (%s): %s\n", portattn_version(), sel.backend_name, sel.kernel, bad ? "WRONG" : "ok");
    return bad != 0;
}
