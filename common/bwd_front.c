/* The backward's public entry points: defaults, backend selection and launch. The selector walks the
 * backends in the forward's order of preference and takes the first that is available and has a
 * backward pass that supports the call; forcing works as in the forward. */
#include <stdio.h>
#include <string.h>

#include "bwd_problem.h"
#include "frontend.h"

void portattn_bwd_params_init(portattn_bwd_params_t *params)
{
    if (!params) return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->dtype = PORTATTN_DTYPE_BF16;
    params->window_left = -1;
    params->window_right = -1;
    params->backend = PORTATTN_BACKEND_AUTO;
}

/* Why backend b cannot run pb backward ("" when it can; then the kernel is named). */
static int bwd_usable(const pa_bwd_problem *pb, portattn_backend_t id, const pa_bwd_backend **bb, char *kernel,
                      size_t kernel_len, char *text, size_t text_len)
{
    const pa_backend *b = pa_backend_lookup(id);
    if (!b) return snprintf(text, text_len, "not compiled in"), 0;
    if (!b->probe(text, text_len)) return 0;
    if (!(*bb = pa_bwd_lookup(id))) return snprintf(text, text_len, "has no backward pass"), 0;
    return (*bb)->supports(pb, kernel, kernel_len, text, text_len);
}

static portattn_status_t bwd_select(const pa_bwd_problem *pb, const pa_bwd_backend **bb, portattn_selection_t *sel,
                                    char *why, size_t why_len)
{
    portattn_backend_t forced;
    const char *by;
    portattn_status_t st = forced_backend(&pb->fwd, &forced, &by, why, why_len);
    if (st) return st;
    memset(sel, 0, sizeof *sel);
    char text[256];
    *bb = NULL;
    if (forced != PORTATTN_BACKEND_AUTO) {
        const char *name = portattn_backend_name(forced);
        const pa_backend *b = pa_backend_lookup(forced);
        if (!b || !b->probe(text, sizeof text))
            return pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s (forced by %s) is %s%s", name, by,
                          b ? "unavailable: " : "not compiled into this build", b ? text : "");
        if (!bwd_usable(pb, forced, bb, sel->kernel, sizeof sel->kernel, text, sizeof text))
            return pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "%s (forced by %s) cannot run this backward: %s",
                          name, by, text);
        snprintf(sel->reason, sizeof sel->reason, "forced by %s", by);
    } else {
        portattn_backend_t id;
        for (int i = 0; (id = pa_backend_preferred(i)) != PORTATTN_BACKEND_AUTO && !*bb; i++) {
            const pa_backend *b = pa_backend_lookup(id);
            const pa_bwd_backend *bw = pa_bwd_lookup(id);
            int ok = 0;
            if (b && pa_backend_forced_only(b->id))
                snprintf(text, sizeof text, "forced calls only (never run on its hardware)");
            else if (b && bw && bw->forced_only)
                snprintf(text, sizeof text, "forced calls only (%s)", bw->forced_only);
            else
                ok = bwd_usable(pb, id, bb, sel->kernel, sizeof sel->kernel, text, sizeof text);
            if (!ok) {
                *bb = NULL;
                size_t n = strlen(sel->reason);
                if (n < sizeof sel->reason)
                    snprintf(sel->reason + n, sizeof sel->reason - n, "%s%s: %s", n ? "; " : "",
                             portattn_backend_name(id), text);
            }
        }
        if (!*bb)
            return pa_fmt(why, why_len, PORTATTN_ERROR_NOT_SUPPORTED, "no backend can run this backward: %s",
                          sel->reason);
    }
    sel->backend = (*bb)->id;
    snprintf(sel->backend_name, sizeof sel->backend_name, "%s", portattn_backend_name((*bb)->id));
    return PORTATTN_SUCCESS;
}

/* B = 0 writes nothing, so no backend is selected; a bad PORTATTN_BACKEND name is still an error. */
static int bwd_is_empty(const pa_bwd_problem *pb) { return pb->fwd.p.batch == 0; }

static portattn_status_t forced_only_check(const pa_bwd_problem *pb, char *why, size_t why_len)
{
    portattn_backend_t forced;
    const char *by;
    return forced_backend(&pb->fwd, &forced, &by, why, why_len);
}

portattn_status_t portattn_backward_query(const portattn_bwd_params_t *params, portattn_selection_t *selection)
{
    char why[1024];
    pa_bwd_problem pb;
    const pa_bwd_backend *bb;
    if (!selection) return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "selection is NULL");
    portattn_status_t st = pa_bwd_validate(params, &pb, why, sizeof why);
    if (!st) st = bwd_select(&pb, &bb, selection, why, sizeof why);
    return st ? pa_set_error(st, "%s", why) : pa_clear_error();
}

portattn_status_t portattn_backward_workspace_size(const portattn_bwd_params_t *params, size_t *bytes)
{
    char why[1024];
    pa_bwd_problem pb;
    const pa_bwd_backend *bb = NULL;
    portattn_selection_t sel;
    if (!bytes) return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
    portattn_status_t st = pa_bwd_validate(params, &pb, why, sizeof why);
    if (!st) st = bwd_is_empty(&pb) ? forced_only_check(&pb, why, sizeof why) : bwd_select(&pb, &bb, &sel, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    if (bb && bb->workspace) *bytes = bb->workspace(&pb);
    return pa_clear_error();
}

portattn_status_t portattn_backward(const portattn_bwd_params_t *params, void *stream)
{
    char why[1024];
    pa_bwd_problem pb;
    portattn_status_t st = pa_bwd_validate(params, &pb, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    if (bwd_is_empty(&pb)) { /* B = 0: nothing to write */
        st = forced_only_check(&pb, why, sizeof why);
        return st ? pa_set_error(st, "%s", why) : pa_clear_error();
    }
    const pa_bwd_backend *bb;
    portattn_selection_t sel;
    st = bwd_select(&pb, &bb, &sel, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    st = bb->run(&pb, stream, why, sizeof why);
    if (st) return pa_set_error(st, "%s backward (%s): %s", sel.backend_name, sel.kernel, why);
    return pa_clear_error();
}
