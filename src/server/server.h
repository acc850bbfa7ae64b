/* server.h — `wick serve`'s server (src/server, docs/server.md): an
 * OpenAI-compatible HTTP API over one loaded model and its batched engine.
 * The one header of the layer that the command line (cli/serve.c)
 * includes; the layer is linked into the `wick` command only (it needs
 * libmicrohttpd), never into libwick.
 *
 *   wks_server *s = wks_server_new(model, engine, &(wks_config){ .port = 8080, .model_id = "m" });
 *   ... until a signal ...
 *   wks_server_shutdown(s, 5.0);   // no new requests; 5 s for those in flight, then cancelled
 *   wks_server_free(s);            // then wk_engine_free, wk_llm_free
 */
#ifndef WICK_SERVER_SERVER_H
#define WICK_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include "wick_engine.h"

typedef struct wks_config {
    const char *host;          /* NULL: 127.0.0.1                               */
    int port;                  /* 0: one the system picks (wks_server_port)     */
    const char *api_key;       /* NULL: none; else /v1/ wants "Bearer KEY"      */
    const char *model_id;      /* the name /v1/models lists                     */
    size_t max_body;           /* request body bytes at most (0: 8 MiB)         */
    int threads;               /* HTTP threads (0: 4)                           */
    unsigned timeout_s;        /* an idle connection's seconds (0: 60)           */
    int max_queue;             /* a generation request finding this many
                                  sequences waiting in the engine is answered
                                  429 (0: 256)                                   */
    bool log;                  /* a line per request on stderr                   */
} wks_config;

typedef struct wks_server wks_server;

/* Listening when it returns, on a model and a started engine (which the
 * server uses and does not own). NULL + error (wk_last_error). */
wks_server *wks_server_new(wk_llm *m, wk_engine *e, const wks_config *cfg);
int wks_server_port(const wks_server *s);
/* Stop: new connections are refused and new requests answered 503; the
 * requests in flight get grace_s seconds to finish, then are cancelled
 * (their answers end: a 503 error, or an error event in a stream); then
 * every connection closes. */
void wks_server_shutdown(wks_server *s, double grace_s);
void wks_server_free(wks_server *s);    /* shuts down first if need be */

#endif /* WICK_SERVER_SERVER_H */
