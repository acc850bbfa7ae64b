/* openai.h — OpenAI's API as JSON (openai.c): a small writer that escapes
 * what it is given into valid JSON, the parameters of a completion or a
 * chat completion read from a request body (wk_json_*), and the bodies
 * of the answers: a whole response, stream chunks, errors.
 */
#ifndef WICK_SERVER_OPENAI_H
#define WICK_SERVER_OPENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick_llm.h"

/* ---- a JSON writer: commas and escapes are its own ---------------------------------- */

#define OA_JW_DEPTH 32
typedef struct jw {
    char *p;
    size_t n, cap;
    bool oom;
    bool after_key;
    int depth;
    bool first[OA_JW_DEPTH + 1];
} jw;

void jw_raw(jw *w, const char *s, size_t n);     /* bytes as they are         */
void jw_obj(jw *w);
void jw_end_obj(jw *w);
void jw_arr(jw *w);
void jw_end_arr(jw *w);
void jw_key(jw *w, const char *k);
/* a string: invalid UTF-8 becomes U+FFFD, controls are escaped */
void jw_strn(jw *w, const char *s, size_t n);
void jw_str(jw *w, const char *s);               /* NULL: null                */
void jw_int(jw *w, int64_t v);
void jw_num(jw *w, double v);                    /* -inf: -9999.0; NaN: null  */
void jw_bool(jw *w, bool v);
void jw_null(jw *w);
/* The text written (malloc'd, NUL-terminated; the writer is empty after);
 * NULL when memory ran out. */
char *jw_take(jw *w, size_t *len);
void jw_free(jw *w);

/* ---- errors --------------------------------------------------------------------------- */

typedef struct oa_error {
    int status;              /* the HTTP status                               */
    const char *type;        /* "invalid_request_error", "server_error", ...   */
    const char *param;       /* the request field at fault, or NULL           */
    const char *code;        /* or NULL                                       */
    char message[512];
} oa_error;
void oa_error_set(oa_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* {"error":{"message":...,"type":...,"param":...,"code":...}} */
char *oa_error_json(const oa_error *e, size_t *len);

/* ---- a request ---------------------------------------------------------------------- */

#define OA_MAX_STOP 16
#define OA_MAX_N 16          /* choices per request at most                   */
typedef struct oa_params {
    bool chat;               /* /v1/chat/completions, else /v1/completions    */
    int n;                   /* choices (1..OA_MAX_N)                         */
    const char *prompt;      /* completions                                   */
    wk_chat_message *msgs;   /* chat                                          */
    int n_msgs;
    wk_sampling sampling;
    bool seeded;             /* seed given (else the caller picks one)        */
    int64_t max_tokens;      /* 0: none given                                 */
    const char *stop[OA_MAX_STOP];
    int n_stop;
    bool stream, include_usage;
    bool ignore_eos;         /* vLLM's: go on past end tokens                  */
    bool logprobs;
    int top_logprobs;        /* chat: top_logprobs; completions: logprobs N   */
    wk_grammar *grammar;     /* response_format json_object / json_schema, or NULL */
    /* what the strings above point into */
    wk_json *doc;
    char **owned;
    int n_owned;
} oa_params;

/* The parameters of a request body; 0, or -1 with e filled (400). Fields
 * it does not know are ignored; null is as absent. */
int oa_parse(const char *body, size_t len, bool chat, oa_params *p, oa_error *e);
void oa_params_free(oa_params *p);

/* ---- answers -------------------------------------------------------------------------- */

/* one generated token's log-probabilities */
typedef struct oa_token {
    int32_t id;
    float logprob;
    int n_top;
    int32_t top_ids[20];
    float top_lps[20];
    int64_t offset;          /* completions: where its text starts            */
} oa_token;

/* what every answer of one request shares */
typedef struct oa_head {
    const char *id;          /* "chatcmpl-..." / "cmpl-..."                    */
    int64_t created;
    const char *model;
    const wk_llm *m;         /* the tokens' text                               */
    const oa_params *p;
} oa_head;

/* one choice of a whole response */
typedef struct oa_choice {
    const char *text;
    size_t len;
    const oa_token *toks;    /* its tokens' log-probabilities (p->logprobs)   */
    size_t n_toks;
    const char *finish;      /* "stop", "length"                              */
} oa_choice;

/* A whole response: its n choices (index 0..n-1), the usage. */
void oa_write_response(jw *w, const oa_head *h, const oa_choice *c, int n, int64_t prompt_tokens,
                       int64_t completion_tokens);
/* One server-sent event, "data: {chunk}\n\n", of the choice index: a chat
 * chunk starts with the role when role is set; finish: the choice's last
 * chunk's reason (NULL before). */
void oa_write_chunk(jw *w, const oa_head *h, int index, bool role, const char *text, size_t len,
                    const oa_token *toks, size_t n_toks, const char *finish);
/* The usage chunk (stream_options.include_usage), no choices. */
void oa_write_usage_chunk(jw *w, const oa_head *h, int64_t prompt_tokens, int64_t completion_tokens);

#endif /* WICK_SERVER_OPENAI_H */
