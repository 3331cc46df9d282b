/* Front-end internals shared by the files of common/. */
#ifndef PORTATTN_FRONTEND_H
#define PORTATTN_FRONTEND_H

#include "backend.h"

/* Records the thread's last-error message (cleared on success) and returns status. */
portattn_status_t pa_set_error(portattn_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clears the thread's last-error message; returns PORTATTN_SUCCESS. */
portattn_status_t pa_clear_error(void);

/* Checks every argument and resolves defaults into *pb. On failure: the status and why. */
portattn_status_t pa_validate(const portattn_fwd_params_t *params, pa_problem *pb, char *why, size_t why_len);

/* 1 for a backend the AUTO selector never picks: it runs only when forced by params->backend or
 * PORTATTN_BACKEND (a kernel that has not run on its hardware yet). */
int pa_backend_forced_only(portattn_backend_t id);
/* The i-th backend automatic selection tries (0 first); PORTATTN_BACKEND_AUTO past the last. */
portattn_backend_t pa_backend_preferred(int i);

/* The compiled-in backend table for an id, or NULL when not compiled in. */
const pa_backend *pa_backend_lookup(portattn_backend_t id);

/* The compiled-in backward entry points for an id, or NULL when that backend has no backward. */
const pa_bwd_backend *pa_bwd_lookup(portattn_backend_t id);

/* The forced backend: pb->p.backend, else $PORTATTN_BACKEND (a bad name is INVALID_ARGUMENT), else
 * AUTO; *by names who forced it, for messages. */
portattn_status_t forced_backend(const pa_problem *pb, portattn_backend_t *id, const char **by, char *why,
                                 size_t why_len);

#endif
