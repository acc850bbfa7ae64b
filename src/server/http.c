/* http.c — the HTTP server of `wick serve` on libmicrohttpd (http.h).
 *
 * One daemon with a pool of threads that poll the connections (epoll on
 * Linux), keep-alive (HTTP/1.1's default), a timeout for idle
 * connections, and a limit on request bodies: a Content-Length above it
 * is answered 413 before the body is read; a chunked body that grows
 * past it is read to its end and dropped, then answered 413.
 *
 * Answers that come later (a generation) never hold a pool thread: the
 * connection is suspended (MHD_suspend_connection) until the answer is
 * there, and whoever gives it resumes the connection. A stream works the
 * same way: the producer (the engine's thread) appends to the request's
 * buffer under its mutex and resumes the connection if it sleeps; the
 * response's content reader (MHD_create_response_from_callback) takes
 * from the buffer and, when it is empty, suspends the connection again.
 * A slow client only lets the buffer grow; the producer never waits.
 *
 * Locks: a request's mutex is taken by the pool's threads (the handler,
 * the reader, the end of a request) and by producers; libmicrohttpd's own
 * mutexes are taken inside it (suspend, resume) and it calls nothing of
 * ours while holding them, so there is one order: ours, then its. The
 * server's list of open requests (for http_stop) is taken before a
 * request's mutex, never after.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include "wick.h"
#include "wick_ext.h"
#include "http.h"

#define MAX_HEADERS 4

struct http_server {
    struct MHD_Daemon *d;
    http_config cfg;
    MHD_socket listen_fd;      /* after http_quiesce: closed at the stop */
    int port;
    atomic_int stopping;
    pthread_mutex_t mu;        /* the list of open requests               */
    http_req *open;
    int n_open;
};

struct http_req {
    http_server *h;
    struct MHD_Connection *conn;   /* NULL once the connection is done with it */
    pthread_mutex_t mu;
    int refs;                      /* under mu                                */
    char method[16];
    char *path;
    double t0;
    /* the body */
    char *body;
    size_t n_body, cap_body;
    bool too_large, handled;
    /* the answer */
    int status;
    char *ctype;
    char *resp;                    /* a whole response, not yet queued        */
    size_t n_resp;
    bool have_resp, queued, deferred, suspended, streaming, ended, aborted, complete;
    char *hname[MAX_HEADERS], *hval[MAX_HEADERS];
    int n_headers;
    /* a stream's bytes not yet taken by the reader */
    char *sbuf;
    size_t s_off, s_len, s_cap;
    http_close_fn on_close;
    void *close_ctx;
    http_req *prev, *next;         /* the server's open list                  */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- requests --------------------------------------------------------------------- */

static http_req *req_new(http_server *h, struct MHD_Connection *c, const char *method, const char *url)
{
    http_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->path = strdup(url ? url : "/");
    if (!r->path || pthread_mutex_init(&r->mu, NULL)) {
        free(r->path);
        free(r);
        return NULL;
    }
    r->h = h;
    r->conn = c;
    r->refs = 1;   /* the connection's */
    r->t0 = now_s();
    snprintf(r->method, sizeof r->method, "%s", method ? method : "?");
    pthread_mutex_lock(&h->mu);
    r->next = h->open;
    if (h->open) h->open->prev = r;
    h->open = r;
    h->n_open++;
    pthread_mutex_unlock(&h->mu);
    return r;
}

void http_req_ref(http_req *r)
{
    pthread_mutex_lock(&r->mu);
    r->refs++;
    pthread_mutex_unlock(&r->mu);
}

void http_req_unref(http_req *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    const int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left) return;
    pthread_mutex_destroy(&r->mu);
    for (int i = 0; i < r->n_headers; i++) {
        free(r->hname[i]);
        free(r->hval[i]);
    }
    free(r->path);
    free(r->body);
    free(r->ctype);
    free(r->resp);
    free(r->sbuf);
    free(r);
}

const char *http_req_method(const http_req *r) { return r->method; }
const char *http_req_path(const http_req *r) { return r->path; }

const char *http_req_body(const http_req *r, size_t *len)
{
    if (len) *len = r->n_body;
    return r->body ? r->body : "";
}

const char *http_req_header(http_req *r, const char *name)
{
    return r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name) : NULL;
}

void http_req_on_close(http_req *r, http_close_fn fn, void *ctx)
{
    pthread_mutex_lock(&r->mu);
    r->on_close = fn;
    r->close_ctx = ctx;
    pthread_mutex_unlock(&r->mu);
}

/* ---- answers ------------------------------------------------------------------------ */

/* under r->mu: wake a connection that waits for us */
static void wake(http_req *r)
{
    if (r->suspended && r->conn) {
        r->suspended = false;
        MHD_resume_connection(r->conn);
    }
}

void http_set_header(http_req *r, const char *name, const char *value)
{
    pthread_mutex_lock(&r->mu);
    if (r->n_headers < MAX_HEADERS && !r->have_resp && !r->streaming) {
        char *n = strdup(name), *v = strdup(value);
        if (n && v) {
            r->hname[r->n_headers] = n;
            r->hval[r->n_headers++] = v;
        } else {
            free(n);
            free(v);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

void http_respond(http_req *r, int status, const char *content_type, const char *body, size_t len)
{
    pthread_mutex_lock(&r->mu);
    if (!r->have_resp && !r->streaming && r->conn) {
        r->resp = malloc(len ? len : 1);
        r->ctype = strdup(content_type ? content_type : "text/plain");
        if (r->resp && len) memcpy(r->resp, body, len);
        r->n_resp = r->resp ? len : 0;
        r->status = r->resp && r->ctype ? status : 500;
        r->have_resp = true;
        wake(r);
    }
    pthread_mutex_unlock(&r->mu);
}

void http_defer(http_req *r)
{
    pthread_mutex_lock(&r->mu);
    r->deferred = true;
    pthread_mutex_unlock(&r->mu);
}

bool http_stream_write(http_req *r, const char *data, size_t len)
{
    pthread_mutex_lock(&r->mu);
    bool ok = !r->ended && !r->aborted && !r->have_resp && r->conn;
    if (ok && r->s_len + len > r->s_cap) {
        if (r->s_off) {   /* what the reader took makes room first */
            memmove(r->sbuf, r->sbuf + r->s_off, r->s_len - r->s_off);
            r->s_len -= r->s_off;
            r->s_off = 0;
        }
        if (r->s_len + len > r->s_cap) {
            size_t cap = r->s_cap ? r->s_cap : 4096;
            while (cap < r->s_len + len) cap *= 2;
            char *p = realloc(r->sbuf, cap);
            if (p) {
                r->sbuf = p;
                r->s_cap = cap;
            } else ok = false;
        }
    }
    if (ok) {
        memcpy(r->sbuf + r->s_len, data, len);
        r->s_len += len;
        wake(r);
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

void http_stream_end(http_req *r)
{
    pthread_mutex_lock(&r->mu);
    r->ended = true;
    wake(r);
    pthread_mutex_unlock(&r->mu);
}

/* The stream's content reader, on the pool's thread of its connection. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_req *r = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&r->mu);
    if (r->s_off < r->s_len) {
        size_t k = r->s_len - r->s_off;
        if (k > max) k = max;
        memcpy(buf, r->sbuf + r->s_off, k);
        r->s_off += k;
        if (r->s_off == r->s_len) r->s_off = r->s_len = 0;
        n = (ssize_t)k;
    } else if (r->ended) {
        r->complete = true;
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else if (r->aborted || atomic_load(&r->h->stopping) || !r->conn) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    } else {   /* nothing yet: sleep until the producer writes */
        MHD_suspend_connection(r->conn);
        r->suspended = true;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

static void stream_free(void *cls) { http_req_unref(cls); }

void http_stream_begin(http_req *r, int status, const char *content_type)
{
    http_req_ref(r);   /* the response's */
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, r, stream_free);
    if (!resp) {
        http_req_unref(r);
        http_respond(r, 500, "text/plain", "out of memory\n", 14);
        return;
    }
    pthread_mutex_lock(&r->mu);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    for (int i = 0; i < r->n_headers; i++) MHD_add_response_header(resp, r->hname[i], r->hval[i]);
    r->streaming = true;
    r->status = status;
    struct MHD_Connection *c = r->conn;
    pthread_mutex_unlock(&r->mu);
    /* the handler's thread is the connection's: the reader cannot run yet */
    if (!c || MHD_queue_response(c, (unsigned)status, resp) != MHD_YES) {
        pthread_mutex_lock(&r->mu);
        r->aborted = true;
        pthread_mutex_unlock(&r->mu);
    } else {
        pthread_mutex_lock(&r->mu);
        r->queued = true;
        pthread_mutex_unlock(&r->mu);
    }
    MHD_destroy_response(resp);   /* the connection holds it now */
}

/* ---- libmicrohttpd's callbacks ----------------------------------------------------- */

static enum MHD_Result queue_whole(http_req *r, struct MHD_Connection *c)
{
    /* r->mu held */
    struct MHD_Response *resp = MHD_create_response_from_buffer(r->n_resp, r->resp, MHD_RESPMEM_MUST_FREE);
    if (!resp) return MHD_NO;
    r->resp = NULL;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype);
    for (int i = 0; i < r->n_headers; i++) MHD_add_response_header(resp, r->hname[i], r->hval[i]);
    const enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->queued = ret == MHD_YES;
    r->complete = r->queued;   /* a buffer goes out whole unless the connection breaks */
    return ret;
}

static const char too_large_json[] =
    "{\"error\":{\"message\":\"the request body is larger than the server takes (wick serve --max-body)\","
    "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"request_too_large\"}}";

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)version;
    http_server *h = cls;
    http_req *r = *con_cls;
    if (!r) {   /* the headers are in */
        if (!(r = req_new(h, c, method, url))) return MHD_NO;
        *con_cls = r;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && h->cfg.max_body && strtoull(cl, NULL, 10) > h->cfg.max_body) {
            /* answered before the body is read (the connection closes after) */
            http_respond(r, 413, "application/json", too_large_json, sizeof too_large_json - 1);
            pthread_mutex_lock(&r->mu);
            r->handled = true;
            const enum MHD_Result ret = queue_whole(r, c);
            pthread_mutex_unlock(&r->mu);
            return ret;
        }
        return MHD_YES;
    }
    if (*upload_data_size) {   /* a piece of the body */
        const size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->queued || r->too_large) return MHD_YES;
        if (h->cfg.max_body && r->n_body + n > h->cfg.max_body) {
            r->too_large = true;
            free(r->body);
            r->body = NULL;
            r->n_body = r->cap_body = 0;
            return MHD_YES;
        }
        if (r->n_body + n + 1 > r->cap_body) {
            size_t cap = r->cap_body ? r->cap_body : 1024;
            while (cap < r->n_body + n + 1) cap *= 2;
            char *p = realloc(r->body, cap);
            if (!p) return MHD_NO;
            r->body = p;
            r->cap_body = cap;
        }
        memcpy(r->body + r->n_body, upload_data, n);
        r->n_body += n;
        r->body[r->n_body] = 0;
        return MHD_YES;
    }
    /* the whole request is in (or, after a resume, its answer is) */
    pthread_mutex_lock(&r->mu);
    const bool first = !r->handled;
    r->handled = true;
    pthread_mutex_unlock(&r->mu);
    if (first) {
        if (r->too_large) http_respond(r, 413, "application/json", too_large_json, sizeof too_large_json - 1);
        else if (atomic_load(&h->stopping)) http_respond(r, 503, "text/plain", "shutting down\n", 14);
        else h->cfg.handler(h->cfg.user, r);
    }
    enum MHD_Result ret = MHD_YES;
    pthread_mutex_lock(&r->mu);
    if (r->queued) {
        /* nothing to do: the answer is on its way */
    } else if (r->streaming) {
        ret = MHD_NO;                /* the stream's response could not be queued */
    } else if (r->have_resp) {
        ret = queue_whole(r, c);
    } else if (r->deferred && !r->aborted && !atomic_load(&h->stopping)) {
        MHD_suspend_connection(c);   /* until http_respond wakes it */
        r->suspended = true;
    } else if (r->deferred) {
        ret = MHD_NO;                /* the server stops: the connection closes */
    } else {                         /* the handler gave no answer */
        static const char msg[] = "the handler gave no answer\n";
        r->have_resp = true;
        r->status = 500;
        r->ctype = strdup("text/plain");
        r->resp = malloc(sizeof msg);
        if (r->resp && r->ctype) {
            memcpy(r->resp, msg, sizeof msg - 1);
            r->n_resp = sizeof msg - 1;
            ret = queue_whole(r, c);
        } else ret = MHD_NO;
    }
    pthread_mutex_unlock(&r->mu);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)c;
    http_server *h = cls;
    http_req *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    pthread_mutex_lock(&r->mu);
    r->conn = NULL;
    r->suspended = false;
    const bool complete = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && r->queued && (r->complete || !r->streaming);
    const int status = r->queued ? r->status : 0;
    http_close_fn fn = r->on_close;
    void *ctx = r->close_ctx;
    r->on_close = NULL;
    pthread_mutex_unlock(&r->mu);
    if (fn) fn(ctx, complete);
    if (h->cfg.on_done) h->cfg.on_done(h->cfg.user, r->method, r->path, status, complete, now_s() - r->t0);
    pthread_mutex_lock(&h->mu);
    if (r->prev) r->prev->next = r->next;
    else h->open = r->next;
    if (r->next) r->next->prev = r->prev;
    h->n_open--;
    pthread_mutex_unlock(&h->mu);
    http_req_unref(r);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("wick serve: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

/* ---- the server ---------------------------------------------------------------------- */

http_server *http_start(const http_config *cfg)
{
    const char *host = cfg->host && *cfg->host ? cfg->host : "127.0.0.1";
    if (!cfg->handler || cfg->port < 0 || cfg->port > 65535) {
        wk_error_set(WK_ERR_ARGUMENT, "http_start: a handler and a port of 0..65535 are needed");
        return NULL;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    const int g = getaddrinfo(host, port, &hints, &ai);
    if (g || !ai) {
        wk_error_set(WK_ERR_ARGUMENT, "the host '%s' is not an address this machine can listen on (%s)", host,
                     g ? gai_strerror(g) : "no address");
        return NULL;
    }
    http_server *h = calloc(1, sizeof *h);
    if (!h || pthread_mutex_init(&h->mu, NULL)) {
        free(h);
        freeaddrinfo(ai);
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    h->listen_fd = MHD_INVALID_SOCKET;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_access, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_log, h,   /* first: it applies to the options after it */
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(cfg->threads > 0 ? cfg->threads : 4),
                            MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 60u,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        wk_error_set(WK_ERR_ARGUMENT, "cannot listen on %s port %d (in use, or not an address of this machine)",
                     host, cfg->port);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info && info->port ? info->port : cfg->port;
    return h;
}

int http_port(const http_server *h) { return h->port; }

void http_quiesce(http_server *h)
{
    if (!h || h->listen_fd != MHD_INVALID_SOCKET) return;
    h->listen_fd = MHD_quiesce_daemon(h->d);
    /* libmicrohttpd's threads may still hold the descriptor (it is closed
     * after the stop); shut, it refuses connections from now on */
    if (h->listen_fd != MHD_INVALID_SOCKET) shutdown(h->listen_fd, SHUT_RDWR);
}

int http_open_requests(http_server *h)
{
    int n = 0;
    pthread_mutex_lock(&h->mu);
    for (http_req *r = h->open; r; r = r->next) {
        pthread_mutex_lock(&r->mu);
        n += r->handled && !r->complete;
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return n;
}

void http_stop(http_server *h)
{
    if (!h) return;
    atomic_store(&h->stopping, 1);
    /* no connection may stay suspended when the daemon stops: wake each
     * (its reader or handler sees the stop and ends it) */
    pthread_mutex_lock(&h->mu);
    for (http_req *r = h->open; r; r = r->next) {
        pthread_mutex_lock(&r->mu);
        r->aborted = true;
        wake(r);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&h->mu);
    MHD_stop_daemon(h->d);
    if (h->listen_fd != MHD_INVALID_SOCKET) close(h->listen_fd);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
