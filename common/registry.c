/* The backend registry and the one selector: it answers "which backend and kernel" for the query
 * and for the launch alike, so the two can never disagree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

/* Compiled-in backends, looked up by id. */
static const pa_backend *const compiled[] = {
#ifdef PORTATTN_HAVE_SM100
    &pa_backend_cuda_sm100,
#endif
#ifdef PORTATTN_HAVE_SM90
    &pa_backend_cuda_sm90,
#endif
#ifdef PORTATTN_HAVE_CUDA
    &pa_backend_cuda_sm80,
#endif
#ifdef PORTATTN_HAVE_HIP
    &pa_backend_hip_cdna,
    &pa_backend_hip_rdna3,
#endif
#ifdef PORTATTN_HAVE_CUDA
    &pa_backend_cuda_generic,
#endif
    &pa_backend_cpu,
};

/* The order in which automatic selection tries the backends (forward and backward): the fastest
 * kernels first, cuda-generic and the CPU last. Not the id order, so that a new backend can take its
 * place here without renumbering the public ids. */
static const portattn_backend_t preference[] = {
    PORTATTN_BACKEND_CUDA_SM100, PORTATTN_BACKEND_CUDA_SM90, PORTATTN_BACKEND_CUDA_SM80, PORTATTN_BACKEND_HIP_CDNA,
    PORTATTN_BACKEND_HIP_RDNA3,  PORTATTN_BACKEND_CUDA_GENERIC, PORTATTN_BACKEND_CPU,
};
_Static_assert(sizeof preference / sizeof preference[0] == PORTATTN_BACKEND_COUNT_ - 1,
               "every backend id has its place in the preference order");

portattn_backend_t pa_backend_preferred(int i)
{
    return i >= 0 && i < (int)(sizeof preference / sizeof preference[0]) ? preference[i] : PORTATTN_BACKEND_AUTO;
}

/* Compiled-in backward passes (looked up by id; a backend without one is absent). */
static const pa_bwd_backend *const compiled_bwd[] = {
#ifdef PORTATTN_HAVE_CUDA
#ifdef PORTATTN_HAVE_SM90
    &pa_bwd_backend_cuda_sm90,
#endif
    &pa_bwd_backend_cuda_sm80,
    &pa_bwd_backend_cuda_generic,
#endif
    &pa_bwd_backend_cpu,
};

const pa_bwd_backend *pa_bwd_lookup(portattn_backend_t id)
{
    for (size_t i = 0; i < sizeof compiled_bwd / sizeof compiled_bwd[0]; i++)
        if (compiled_bwd[i]->id == id) return compiled_bwd[i];
    return NULL;
}

/* cuda-sm100 builds, passes its ISA gate and runs under its tcgen05 emulator, but has never run on a
 * B200/B300 (backends/cuda/sm100/NOTES.md): it takes forced calls only until it has. */
int pa_backend_forced_only(portattn_backend_t id) { return id == PORTATTN_BACKEND_CUDA_SM100; }

/* Tables registered by test builds (pa_backend_register_test), by id; set before main, read-only after. */
static const pa_backend *test_tables[PORTATTN_BACKEND_COUNT_];

void pa_backend_register_test(const pa_backend *be)
{
    if (be && (int)be->id > 0 && be->id < PORTATTN_BACKEND_COUNT_) test_tables[be->id] = be;
}

const pa_backend *pa_backend_lookup(portattn_backend_t id)
{
    if ((int)id > 0 && id < PORTATTN_BACKEND_COUNT_ && test_tables[id]) return test_tables[id];
    for (size_t i = 0; i < sizeof compiled / sizeof compiled[0]; i++)
        if (compiled[i]->id == id) return compiled[i];
    return NULL;
}

int pa_host_accessible(const void *ptr)
{
#ifdef PORTATTN_HAVE_CUDA
    if (pa_cuda_ptr_is_device_only(ptr)) return 0;
#endif
#ifdef PORTATTN_HAVE_HIP
    if (pa_hip_ptr_is_device_only(ptr)) return 0;
#endif
    (void)ptr;
    return 1;
}

portattn_status_t portattn_backend_get_info(portattn_backend_t backend, portattn_backend_info_t *info)
{
    if (!info) return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "info is NULL");
    if ((int)backend <= 0 || backend >= PORTATTN_BACKEND_COUNT_)
        return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "backend = %d is not a backend id", (int)backend);
    const pa_backend *be = pa_backend_lookup(backend);
    memset(info, 0, sizeof *info);
    info->backend = backend;
    info->name = portattn_backend_name(backend);
    info->compiled = be != NULL;
    if (be)
        info->available = be->probe(info->detail, sizeof info->detail);
    else
        snprintf(info->detail, sizeof info->detail, "not compiled into this build");
    return pa_clear_error();
}

/* The forced backend: params->backend, else $PORTATTN_BACKEND, else AUTO. A bad name is an error,
 * never ignored. `by` says who forced it, for messages. */
portattn_status_t forced_backend(const pa_problem *pb, portattn_backend_t *id, const char **by,
                                        char *why, size_t why_len)
{
    *id = pb->p.backend;
    *by = "params->backend";
    if (*id != PORTATTN_BACKEND_AUTO) return PORTATTN_SUCCESS;
    const char *env = getenv("PORTATTN_BACKEND");
    if (!env || !*env) return PORTATTN_SUCCESS;
    int ok;
    *id = portattn_backend_from_name(env, &ok);
    *by = "PORTATTN_BACKEND";
    if (!ok)
        return pa_fmt(why, why_len, PORTATTN_ERROR_INVALID_ARGUMENT,
                      "PORTATTN_BACKEND=\"%.64s\" is not a backend name (auto, cpu, cuda-generic, cuda-sm80, "
                      "cuda-sm90, cuda-sm100, hip-cdna, hip-rdna3)", env);
    return PORTATTN_SUCCESS;
}

static void append(char *buf, size_t len, const char *name, const char *text)
{
    size_t n = strlen(buf);
    if (n < len) snprintf(buf + n, len - n, "%s%s: %s", n ? "; " : "", name, text);
}

/* A device error met while asking the backends (a sticky launch failure, a lost device): 1 and
 * its message, cleared. Without one a refusal is the problem's fault, not the device's. */
static int gpu_device_error(char *buf, size_t len)
{
#ifdef PORTATTN_HAVE_CUDA
    return pa_cuda_take_device_error(buf, len);
#else
    (void)buf, (void)len;
    return 0;
#endif
}

/* A refusal (message already in why): PORTATTN_ERROR_DEVICE with the device error in front when
 * the backends met one, else NOT_SUPPORTED. */
static portattn_status_t refusal(char *why, size_t why_len)
{
    char dev[192], text[768];
    snprintf(text, sizeof text, "%s", why);
    if (gpu_device_error(dev, sizeof dev))
        return pa_fmt(why, why_len, PORTATTN_ERROR_DEVICE, "%s; %s", dev, text);
    return PORTATTN_ERROR_NOT_SUPPORTED;
}

/* The forced backend's table, when it is compiled in and its hardware present; else
 * BACKEND_UNAVAILABLE and why (the probe's detail only with `explain`). */
static portattn_status_t forced_present(portattn_backend_t forced, const char *by, int explain, const pa_backend **be,
                                        char *why, size_t why_len)
{
    const char *name = portattn_backend_name(forced);
    char text[256] = "";
    *be = pa_backend_lookup(forced);
    if (!*be)
        return pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s (forced by %s) is not compiled into this build",
                      name, by);
    if (!(*be)->probe(explain ? text : NULL, explain ? sizeof text : 0))
        return pa_fmt(why, why_len, PORTATTN_ERROR_BACKEND_UNAVAILABLE, "%s (forced by %s) is unavailable: %s", name,
                      by, text);
    return PORTATTN_SUCCESS;
}

/* A backend's supports() on a zeroed choice: one that refuses after filling part of it (an instance, a
 * route) leaves nothing behind for the next backend asked. */
static int supports_fresh(const pa_backend *b, const pa_problem *pb, pa_choice *ch, char *kernel, size_t kn, char *why,
                          size_t why_len)
{
    memset(ch, 0, sizeof *ch);
    return b->supports(pb, ch, kernel, kn, why, why_len);
}

/* Picks the backend for a validated problem. On success *be is set and sel filled; with `explain`
 * also the kernel's name and why faster backends were passed over. A launch needs neither, and
 * wording them costs more host time than the rest of the choice, so forward takes the quiet pass
 * and words a failure by choosing again with explain (the same choice: probes and supports depend on
 * the problem and the device only). */
static portattn_status_t select_pass(const pa_problem *pb, const pa_backend **be, pa_choice *ch,
                                     portattn_selection_t *sel, int explain, char *why, size_t why_len)
{
    portattn_backend_t forced;
    const char *by;
    portattn_status_t st = forced_backend(pb, &forced, &by, why, why_len);
    if (st) return st;
    memset(sel, 0, sizeof *sel);
    char text[256];
    char *t = explain ? text : NULL, *kernel = explain ? sel->kernel : NULL;
    const size_t tn = explain ? sizeof text : 0, kn = explain ? sizeof sel->kernel : 0;

    if (forced != PORTATTN_BACKEND_AUTO) {
        const char *name = portattn_backend_name(forced);
        const pa_backend *b;
        if ((st = forced_present(forced, by, explain, &b, why, why_len))) return st;
        if (!supports_fresh(b, pb, ch, kernel, kn, t, tn)) {
            snprintf(why, why_len, "%s (forced by %s) cannot run this call: %s", name, by, explain ? text : "");
            return refusal(why, why_len);
        }
        *be = b;
        if (explain) snprintf(sel->reason, sizeof sel->reason, "forced by %s", by);
    } else {
        portattn_backend_t id;
        for (int i = 0; (id = pa_backend_preferred(i)) != PORTATTN_BACKEND_AUTO && !*be; i++) {
            const char *name = portattn_backend_name(id);
            const pa_backend *b = pa_backend_lookup(id);
            const char *skip = NULL;
            if (!b)
                skip = "not compiled in";
            else if (pa_backend_forced_only(b->id))
                skip = "forced calls only (never run on its hardware)";
            else if (!b->probe(t, tn) || !supports_fresh(b, pb, ch, kernel, kn, t, tn))
                skip = text;
            else
                *be = b;
            if (skip && explain) append(sel->reason, sizeof sel->reason, name, skip);
        }
        if (!*be) {
            snprintf(why, why_len, "no backend can run this call: %s", sel->reason);
            return refusal(why, why_len);
        }
    }
    sel->backend = (*be)->id;
    if (explain) snprintf(sel->backend_name, sizeof sel->backend_name, "%s", (*be)->name);
    return PORTATTN_SUCCESS;
}

static portattn_status_t select_backend(const pa_problem *pb, const pa_backend **be, pa_choice *ch,
                                        portattn_selection_t *sel, int explain, char *why, size_t why_len)
{
    gpu_device_error(NULL, 0); /* forget errors of earlier calls */
    portattn_status_t st = select_pass(pb, be, ch, sel, explain, why, why_len);
    if (st && !explain && st != PORTATTN_ERROR_INVALID_ARGUMENT) {
        *be = NULL;
        st = select_pass(pb, be, ch, sel, 1, why, why_len);
    }
    return st;
}

static int problem_is_empty(const pa_problem *pb) { return pb->p.batch == 0 || pb->p.seqlen_q == 0; }

/* A call with nothing to compute runs no kernel, so no backend is asked whether it supports it; a
 * forced backend must still be a valid name, compiled in and present. */
static portattn_status_t select_for_empty(const pa_problem *pb, portattn_selection_t *sel, char *why, size_t why_len)
{
    portattn_backend_t forced;
    const char *by;
    const pa_backend *b = NULL;
    portattn_status_t st = forced_backend(pb, &forced, &by, why, why_len);
    if (!st && forced != PORTATTN_BACKEND_AUTO) st = forced_present(forced, by, 1, &b, why, why_len);
    if (st) return st;
    memset(sel, 0, sizeof *sel);
    sel->backend = forced;
    snprintf(sel->backend_name, sizeof sel->backend_name, "%s", b ? b->name : "none");
    snprintf(sel->kernel, sizeof sel->kernel, "none (nothing to compute)");
    snprintf(sel->reason, sizeof sel->reason, "batch or seqlen_q is 0%s%s", b ? ", forced by " : "", b ? by : "");
    return PORTATTN_SUCCESS;
}

/* Within one resolution a pointer's residency is asked once (validation and every backend tried
 * share the answer); outside it, every query is fresh. */
static void pointer_memo(int on)
{
#ifdef PORTATTN_HAVE_CUDA
    pa_cuda_memo(on);
#endif
    (void)on;
}

/* The one rule of all three entry points: validate, then select (no backend for an empty call); the
 * winner's choice in *ch, which the workspace size and the launch take as it is. */
static portattn_status_t resolve(const portattn_fwd_params_t *params, pa_problem *pb, const pa_backend **be,
                                 pa_choice *ch, portattn_selection_t *sel, int explain, char *why, size_t why_len)
{
    pointer_memo(1);
    portattn_status_t st = pa_validate(params, pb, why, why_len);
    *be = NULL;
    if (!st)
        st = problem_is_empty(pb) ? select_for_empty(pb, sel, why, why_len)
                                  : select_backend(pb, be, ch, sel, explain, why, why_len);
    pointer_memo(0);
    return st;
}

portattn_status_t portattn_forward_query(const portattn_fwd_params_t *params, portattn_selection_t *selection)
{
    char why[1024];
    pa_problem pb;
    const pa_backend *be;
    pa_choice ch;
    if (!selection) return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "selection is NULL");
    portattn_status_t st = resolve(params, &pb, &be, &ch, selection, 1, why, sizeof why);
    return st ? pa_set_error(st, "%s", why) : pa_clear_error();
}

portattn_status_t portattn_forward_workspace_size(const portattn_fwd_params_t *params, size_t *bytes)
{
    char why[1024];
    pa_problem pb;
    const pa_backend *be;
    pa_choice ch;
    portattn_selection_t sel;
    if (!bytes) return pa_set_error(PORTATTN_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    *bytes = 0;
    portattn_status_t st = resolve(params, &pb, &be, &ch, &sel, 0, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    if (be && be->workspace) *bytes = be->workspace(&pb, &ch);
    return pa_clear_error();
}

portattn_status_t portattn_forward(const portattn_fwd_params_t *params, void *stream)
{
    char why[1024];
    pa_problem pb;
    const pa_backend *be;
    pa_choice ch;
    portattn_selection_t sel;
    portattn_status_t st = resolve(params, &pb, &be, &ch, &sel, 0, why, sizeof why);
    if (st) return pa_set_error(st, "%s", why);
    if (!be) return pa_clear_error(); /* nothing to compute */
    st = be->run(&pb, &ch, stream, why, sizeof why);
    if (st) {
        pa_choice again;
        supports_fresh(be, &pb, &again, sel.kernel, sizeof sel.kernel, NULL, 0); /* the kernel's name, for the message */
        return pa_set_error(st, "%s (%s): %s", be->name, sel.kernel, why);
    }
    return pa_clear_error();
}
