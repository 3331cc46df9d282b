/* The timing protocol of a row: as triton.testing.do_bench times the peers on a GPU (devmem.h does
 * the clock work), counts on the CPU; decode rows cycle K and V through copies so that no timed call
 * finds its KV cache in L2. */
#include <math.h>
#include <string.h>

#include "bench.h"

/* Decode rows cycle through copies of K and V of at least this many bytes in all, so that no timed
 * call finds its KV cache in L2 (triton's do_bench, which times the peers, clears 256 MB instead). */
#define ROTATE_BYTES (256.0 * 1024 * 1024)
#define MAX_COPIES 64

const char *timing_name(const opts *o, dm_kind kind)
{
    return kind == DM_HOST ? "host" : o->burst ? "burst" : "do_bench";
}

dm_protocol timing_protocol(const opts *o, dm_kind kind)
{
    dm_protocol pr = {o->warmup_ms, o->rep_ms, o->burst || kind == DM_HOST,
                      o->warmup >= 0 ? o->warmup : kind == DM_HOST ? 1 : 5, o->reps >= 1 ? o->reps : kind == DM_HOST ? 3 : 20};
    return pr;
}

int kv_copy_count(const opts *o, double all)
{
    int n = all <= 0 ? 1 : (int)fmin(MAX_COPIES, ceil(ROTATE_BYTES / all));
    return o->kv_copies > 0 ? o->kv_copies : n;
}

/* The timed call. Paged rows: each copy is a whole page pool, and all copies share the one block
 * table. */
typedef struct call {
    portattn_fwd_params_t *p;
    char *k0, *v0;         /* copy 0 */
    size_t kbytes, vbytes; /* one copy */
    int copies, next;
    portattn_status_t st;
} call;

static int call_forward(void *arg)
{
    call *c = (call *)arg;
    int i = c->next++ % c->copies;
    c->p->k.data = c->k0 + (size_t)i * c->kbytes;
    c->p->v.data = c->v0 + (size_t)i * c->vbytes;
    c->st = portattn_forward(c->p, NULL);
    return c->st != PORTATTN_SUCCESS;
}

int time_forward(const opts *o, dm_kind kind, portattn_fwd_params_t *p, char *k0, char *v0, size_t kbytes,
                 size_t vbytes, int copies, row *r)
{
    call c = {p, k0, v0, kbytes, vbytes, copies, 0, PORTATTN_SUCCESS};
    if (!dm_time(kind, &o->protocol, call_forward, &c, &r->timing)) return 0;
    if (c.st != PORTATTN_SUCCESS) return row_api_error(r, "portattn_forward", c.st);
    return row_error(r, "timing failed (device error, event failure or no memory for the L2 flush)");
}
