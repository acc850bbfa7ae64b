/* http.h — the HTTP side of `wick serve` (http.c, on libmicrohttpd): a
 * server that hands each whole request (its body read, within a size
 * limit) to one handler, and takes the answer from any thread: a whole
 * response now or later, or a stream written piece by piece. Nothing in
 * it knows about models or OpenAI (server.c does).
 *
 * A request (http_req) lives until the connection is done with it and
 * every holder of a reference (http_req_ref) has let go; the answer
 * functions may be called after the client has gone (they do nothing
 * then), so a producer on another thread (the engine) never has to ask.
 */
#ifndef WICK_SERVER_HTTP_H
#define WICK_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_server http_server;
typedef struct http_req http_req;

/* The handler of a whole request, on a thread of the server's pool. It
 * answers with http_respond (now or, after http_defer, from any thread
 * later) or starts a stream (http_stream_begin). It must not block. */
typedef void (*http_handler_fn)(void *user, http_req *r);
/* Every request that ends, on the pool's thread: its method, path, the
 * status sent (0: none was, the client went first) and whether the
 * answer went out whole. */
typedef void (*http_done_fn)(void *user, const char *method, const char *path, int status, bool complete,
                             double seconds);
/* A request's end, for whoever produces its answer (http_req_on_close):
 * complete false when the client went before the answer did. */
typedef void (*http_close_fn)(void *ctx, bool complete);

typedef struct http_config {
    const char *host;        /* an address or a name; NULL: 127.0.0.1       */
    int port;                /* 0: one the system picks (http_port)         */
    int threads;             /* the pool (0: 4)                              */
    size_t max_body;         /* bytes of a request body at most (413 above) */
    unsigned timeout_s;      /* an idle connection's seconds (0: 60)         */
    http_handler_fn handler;
    http_done_fn on_done;    /* may be NULL                                  */
    void *user;
} http_config;

/* Listening when it returns; NULL + error (wk_last_error). */
http_server *http_start(const http_config *cfg);
int http_port(const http_server *h);
/* No new connections from now on (they are refused); those open go on. */
void http_quiesce(http_server *h);
/* Requests the connections still hold (received and not yet answered
 * whole). */
int http_open_requests(http_server *h);
/* Closes every connection (any request still waiting is dropped) and
 * frees the server. NULL is fine. */
void http_stop(http_server *h);

/* ---- a request, in the handler --------------------------------------------- */

const char *http_req_method(const http_req *r);
const char *http_req_path(const http_req *r);     /* without the query        */
const char *http_req_body(const http_req *r, size_t *len);   /* NUL-terminated */
/* A request header (case-insensitive name); NULL when absent. Only in the
 * handler. */
const char *http_req_header(http_req *r, const char *name);
/* fn(ctx, complete) once, when the request ends (not before the handler
 * returns). */
void http_req_on_close(http_req *r, http_close_fn fn, void *ctx);
void http_req_ref(http_req *r);
void http_req_unref(http_req *r);

/* ---- the answer (any thread) ------------------------------------------------- */

/* A header for the response (before it is given; 4 at most). */
void http_set_header(http_req *r, const char *name, const char *value);
/* The whole response (body copied). The first answer counts; later ones
 * and answers after the client went do nothing. */
void http_respond(http_req *r, int status, const char *content_type, const char *body, size_t len);
/* In the handler: the answer comes later (http_respond from any thread). */
void http_defer(http_req *r);
/* In the handler: a response of unknown length (chunked), its body
 * written by http_stream_write from any thread, ended by
 * http_stream_end. Writes before the begin are kept and sent first. */
void http_stream_begin(http_req *r, int status, const char *content_type);
/* false when the client has gone (or out of memory): nothing more is
 * wanted. Never waits for the client. */
bool http_stream_write(http_req *r, const char *data, size_t len);
void http_stream_end(http_req *r);

#endif /* WICK_SERVER_HTTP_H */
