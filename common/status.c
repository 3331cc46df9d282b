/* Status strings, the per-thread last-error message and the message formatter. */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"
#include "frontend.h"

static _Thread_local char last_error[1024];

const char *portattn_status_string(portattn_status_t status)
{
    switch (status) {
    case PORTATTN_SUCCESS: return "success";
    case PORTATTN_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case PORTATTN_ERROR_NOT_SUPPORTED: return "not supported";
    case PORTATTN_ERROR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case PORTATTN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case PORTATTN_ERROR_DEVICE: return "device error";
    case PORTATTN_ERROR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *portattn_last_error(void) { return last_error; }

portattn_status_t pa_fmt(char *buf, size_t len, portattn_status_t status, const char *fmt, ...)
{
    if (buf && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, len, fmt, ap);
        va_end(ap);
    }
    return status;
}

portattn_status_t pa_clear_error(void)
{
    last_error[0] = '\0';
    return PORTATTN_SUCCESS;
}

portattn_status_t pa_set_error(portattn_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}
