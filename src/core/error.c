/* error.c — the thread-local error state (status + message) that every
 * public function reports through, and the host API handed to backends,
 * whose errors land in the same state. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core.h"
#include "wick_ext.h"

static _Thread_local wk_status tl_status;
static _Thread_local char tl_message[1024];
static _Thread_local const char *tl_op;

static wk_status error_v(wk_status status, const char *fmt, va_list ap)
{
    char body[900];
    vsnprintf(body, sizeof body, fmt, ap);
    tl_status = status;
    if (tl_op && strncmp(body, tl_op, strlen(tl_op)) != 0)
        snprintf(tl_message, sizeof tl_message, "%s: %s", tl_op, body);
    else
        snprintf(tl_message, sizeof tl_message, "%s", body);
    return status;
}

wk_status wk_error(wk_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

/* wick_ext.h's setter, for custom ops and the layers above the core (model
 * files, tokenizers, models): one error state for the whole library. The
 * message is formatted apart first, so it may quote wk_last_error(). */
wk_status wk_error_set(wk_status status, const char *fmt, ...)
{
    char body[900] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof body, fmt, ap);
        va_end(ap);
    }
    return wk_error(status, "%s", body);
}

wk_status wk_error_wrap(const char *fmt, ...)
{
    char prefix[512] = "", body[1024];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
    }
    wk_status st = tl_status == WK_OK ? WK_ERR_BACKEND : tl_status;
    snprintf(body, sizeof body, "%s", tl_message);
    tl_status = st;
    snprintf(tl_message, sizeof tl_message, "%.400s%s%.600s", prefix, prefix[0] && body[0] ? ": " : "", body);
    return st;
}

static wk_status host_set_error(wk_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

static const char *host_current_op(void) { return tl_op; }

const wk_host_api wk_host = {
    .abi = WK_BACKEND_ABI,
    .set_error = host_set_error,
    .current_op = host_current_op,
};

const char *wk_op_enter(const char *name)
{
    const char *prev = tl_op;
    /* an op called by another op keeps the outer name in messages */
    if (!prev) tl_op = name;
    return prev;
}

void wk_op_leave(const char *prev) { tl_op = prev; }

const char *wk_last_error(void) { return tl_message; }
wk_status wk_last_status(void) { return tl_status; }

void wk_clear_error(void)
{
    tl_status = WK_OK;
    tl_message[0] = 0;
}

const char *wk_status_name(wk_status s)
{
    static const char *const names[] = {
        "ok", "invalid argument", "shape error", "dtype error", "device error",
        "index out of range", "out of memory", "unsupported", "backend error", "io error",
    };
    _Static_assert(sizeof names / sizeof names[0] == WK_STATUS_COUNT, "status names");
    return (unsigned)s < WK_STATUS_COUNT ? names[s] : "?";
}
