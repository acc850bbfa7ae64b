/* openai.c — OpenAI's completions and chat completions as JSON for `wick
 * serve` (openai.h): the request's fields read with wk_json_* (types and
 * ranges checked, each error naming its field), and the answers written
 * with a small writer that makes any bytes valid JSON (a token may end
 * inside a UTF-8 character: such bytes become U+FFFD in strings, and the
 * exact bytes go into the "bytes" arrays of log-probabilities).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_formats.h"
#include "wick_llm.h"
#include "openai.h"

/* ---- the writer ------------------------------------------------------------------------ */

void jw_raw(jw *w, const char *s, size_t n)
{
    if (w->oom) return;
    if (w->n + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->n + n + 1) cap *= 2;
        char *p = realloc(w->p, cap);
        if (!p) {
            w->oom = true;
            return;
        }
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->n, s, n);
    w->n += n;
    w->p[w->n] = 0;
}

static void put(jw *w, const char *s) { jw_raw(w, s, strlen(s)); }

/* before a value or a key: the comma its place needs */
static void sep(jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0) {
        if (!w->first[w->depth]) jw_raw(w, ",", 1);
        w->first[w->depth] = false;
    }
}

static void open_(jw *w, const char *c)
{
    sep(w);
    jw_raw(w, c, 1);
    if (w->depth < OA_JW_DEPTH) w->first[++w->depth] = true;
    else w->oom = true;   /* deeper than any answer goes: a bug, reported as a failure */
}

static void close_(jw *w, const char *c)
{
    jw_raw(w, c, 1);
    if (w->depth > 0) w->depth--;
}

void jw_obj(jw *w) { open_(w, "{"); }
void jw_end_obj(jw *w) { close_(w, "}"); }
void jw_arr(jw *w) { open_(w, "["); }
void jw_end_arr(jw *w) { close_(w, "]"); }

/* the length of the valid UTF-8 character at s (n bytes left), 0 if none */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < k || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return k;
}

static void str_body(jw *w, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0;   /* bytes that go as they are, from u + i - run */
    for (size_t i = 0; i < n;) {
        const unsigned c = u[i];
        const char *esc = NULL;
        char buf[8];
        size_t k = 1;
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c < 0x20) {
            snprintf(buf, sizeof buf, "\\u%04x", c);
            esc = buf;
        } else if (c >= 0x80 && !(k = utf8_len(u + i, n - i))) {
            esc = "\\ufffd";
            k = 1;
        }
        if (esc) {
            jw_raw(w, (const char *)u + i - run, run);
            run = 0;
            put(w, esc);
        } else run += k;
        i += k;
    }
    jw_raw(w, (const char *)u + n - run, run);
}

void jw_key(jw *w, const char *k)
{
    sep(w);
    jw_raw(w, "\"", 1);
    str_body(w, k, strlen(k));
    jw_raw(w, "\":", 2);
    w->after_key = true;
}

void jw_strn(jw *w, const char *s, size_t n)
{
    sep(w);
    jw_raw(w, "\"", 1);
    str_body(w, s, n);
    jw_raw(w, "\"", 1);
}

void jw_str(jw *w, const char *s)
{
    if (!s) jw_null(w);
    else jw_strn(w, s, strlen(s));
}

void jw_int(jw *w, int64_t v)
{
    char b[32];
    sep(w);
    snprintf(b, sizeof b, "%lld", (long long)v);
    put(w, b);
}

void jw_num(jw *w, double v)
{
    char b[40];
    if (isnan(v)) {
        jw_null(w);
        return;
    }
    sep(w);
    if (isinf(v)) snprintf(b, sizeof b, "%s", v < 0 ? "-9999.0" : "9999.0");
    else snprintf(b, sizeof b, "%.9g", v);
    put(w, b);
}

void jw_bool(jw *w, bool v)
{
    sep(w);
    put(w, v ? "true" : "false");
}

void jw_null(jw *w)
{
    sep(w);
    put(w, "null");
}

char *jw_take(jw *w, size_t *len)
{
    if (w->oom || !w->p) {
        jw_free(w);
        if (len) *len = 0;
        return NULL;
    }
    char *p = w->p;
    if (len) *len = w->n;
    *w = (jw){ 0 };
    return p;
}

void jw_free(jw *w)
{
    free(w->p);
    *w = (jw){ 0 };
}

/* ---- errors ---------------------------------------------------------------------------- */

void oa_error_set(oa_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    e->param = param;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

char *oa_error_json(const oa_error *e, size_t *len)
{
    jw w = { 0 };
    jw_obj(&w);
    jw_key(&w, "error");
    jw_obj(&w);
    jw_key(&w, "message");
    jw_str(&w, e->message);
    jw_key(&w, "type");
    jw_str(&w, e->type ? e->type : "invalid_request_error");
    jw_key(&w, "param");
    jw_str(&w, e->param);
    jw_key(&w, "code");
    jw_str(&w, e->code);
    jw_end_obj(&w);
    jw_end_obj(&w);
    return jw_take(&w, len);
}

/* ---- a request --------------------------------------------------------------------------- */

static int bad(oa_error *e, const char *param, const char *code, const char *msg)
{
    oa_error_set(e, 400, "invalid_request_error", param, code, "%s", msg);
    return -1;
}

/* the same for a field named by a variable: fmt's one %s is its name */
static int bad_key(oa_error *e, const char *key, const char *code, const char *fmt) __attribute__((format(printf, 4, 0)));
static int bad_key(oa_error *e, const char *key, const char *code, const char *fmt)
{
    char msg[256];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(msg, sizeof msg, fmt, key);
#pragma GCC diagnostic pop
    return bad(e, key, code, msg);
}

/* A field's value (NULL when absent or null). */
static const wk_json *field(const wk_json *root, const char *key)
{
    const wk_json *v = wk_json_get(root, key);
    return wk_json_kind(v) == WK_JSON_NULL ? NULL : v;
}

/* 1: *out set; 0: absent; -1: e set */
static int get_num(const wk_json *root, const char *key, double lo, double hi, double *out, oa_error *e)
{
    const wk_json *v = field(root, key);
    if (!v) return 0;
    if (!wk_json_number(v, out)) return bad_key(e, key, "invalid_type", "'%s' must be a number");
    if (!(*out >= lo && *out <= hi)) {
        oa_error_set(e, 400, "invalid_request_error", key, "invalid_value", "'%s' must be in [%g, %g], not %g", key,
                     lo, hi, *out);
        return -1;
    }
    return 1;
}

static int get_int(const wk_json *root, const char *key, int64_t lo, int64_t hi, int64_t *out, oa_error *e)
{
    const wk_json *v = field(root, key);
    if (!v) return 0;
    if (!wk_json_int(v, out)) return bad_key(e, key, "invalid_type", "'%s' must be an integer");
    if (*out < lo || *out > hi) {
        oa_error_set(e, 400, "invalid_request_error", key, "invalid_value", "'%s' must be in [%lld, %lld], not %lld",
                     key, (long long)lo, (long long)hi, (long long)*out);
        return -1;
    }
    return 1;
}

static int get_bool(const wk_json *root, const char *key, bool *out, oa_error *e)
{
    const wk_json *v = field(root, key);
    if (!v) return 0;
    if (!wk_json_bool(v, out)) return bad_key(e, key, "invalid_type", "'%s' must be true or false");
    return 1;
}

static char *own(oa_params *p, char *s)
{
    if (!s) return NULL;
    char **o = realloc(p->owned, (size_t)(p->n_owned + 1) * sizeof *o);
    if (!o) {
        free(s);
        return NULL;
    }
    p->owned = o;
    p->owned[p->n_owned++] = s;
    return s;
}

/* a message's content: a string, or an array of text parts (joined) */
static const char *content_text(oa_params *p, const wk_json *c, oa_error *e)
{
    if (!c) return "";
    if (wk_json_kind(c) == WK_JSON_STRING) return wk_json_string(c, NULL);
    if (wk_json_kind(c) != WK_JSON_ARRAY) {
        bad(e, "messages", "invalid_type", "'messages': a content must be a string or an array of text parts");
        return NULL;
    }
    size_t total = 1;
    for (size_t i = 0; i < wk_json_count(c); i++) {
        const wk_json *part = wk_json_item(c, i);
        const char *type = wk_json_string(wk_json_get(part, "type"), NULL);
        size_t n = 0;
        if (wk_json_kind(part) != WK_JSON_OBJECT || !type || strcmp(type, "text") ||
            !wk_json_string(wk_json_get(part, "text"), &n)) {
            bad(e, "messages", "unsupported_value", "'messages': content parts must be {\"type\": \"text\", \"text\": ...}; other kinds (images, audio) are not supported");
            return NULL;
        }
        total += n;
    }
    char *s = own(p, malloc(total));
    if (!s) {
        oa_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    size_t at = 0;
    for (size_t i = 0; i < wk_json_count(c); i++) {
        size_t n = 0;
        const char *t = wk_json_string(wk_json_get(wk_json_item(c, i), "text"), &n);
        memcpy(s + at, t, n);
        at += n;
    }
    s[at] = 0;
    return s;
}

static int parse_messages(oa_params *p, const wk_json *root, oa_error *e)
{
    const wk_json *m = field(root, "messages");
    if (!m) return bad(e, "messages", "missing_required_parameter", "'messages' is required");
    if (wk_json_kind(m) != WK_JSON_ARRAY || wk_json_count(m) == 0)
        return bad(e, "messages", "invalid_type", "'messages' must be a non-empty array of messages");
    if (wk_json_count(m) > 65536) return bad(e, "messages", "invalid_value", "'messages': too many messages");
    const int n = (int)wk_json_count(m);
    p->msgs = calloc((size_t)n, sizeof *p->msgs);
    if (!p->msgs) {
        oa_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const wk_json *msg = wk_json_item(m, (size_t)i);
        const char *role = wk_json_string(wk_json_get(msg, "role"), NULL);
        if (wk_json_kind(msg) != WK_JSON_OBJECT || !role)
            return bad(e, "messages", "invalid_type", "'messages': each message must be an object with a string 'role'");
        if (!strcmp(role, "developer")) role = "system";   /* OpenAI's newer name for it */
        if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")) {
            oa_error_set(e, 400, "invalid_request_error", "messages", "unsupported_value",
                         "'messages': the role '%.64s' is not supported (system, developer, user, assistant)", role);
            return -1;
        }
        const char *text = content_text(p, field(msg, "content"), e);
        if (!text) return -1;
        p->msgs[i] = (wk_chat_message){ .role = !strcmp(role, "system") ? "system" : !strcmp(role, "user") ? "user"
                                                                                                       : "assistant",
                                        .content = text };
    }
    p->n_msgs = n;
    return 0;
}

static int parse_stop(oa_params *p, const wk_json *root, oa_error *e)
{
    const wk_json *s = field(root, "stop");
    if (!s) return 0;
    if (wk_json_kind(s) == WK_JSON_STRING) {
        const char *t = wk_json_string(s, NULL);
        if (*t) p->stop[p->n_stop++] = t;
        return 0;
    }
    if (wk_json_kind(s) != WK_JSON_ARRAY)
        return bad(e, "stop", "invalid_type", "'stop' must be a string or an array of strings");
    if (wk_json_count(s) > OA_MAX_STOP)
        return bad(e, "stop", "invalid_value", "'stop' takes at most 16 strings");
    for (size_t i = 0; i < wk_json_count(s); i++) {
        const char *t = wk_json_string(wk_json_item(s, i), NULL);
        if (!t) return bad(e, "stop", "invalid_type", "'stop' must be a string or an array of strings");
        if (*t) p->stop[p->n_stop++] = t;
    }
    return 0;
}

/* response_format: {"type": "text"} (free text), {"type": "json_object"}
 * (any JSON object) or {"type": "json_schema", "json_schema": {"name",
 * "schema", "strict"}}: the reply constrained to it (p->grammar) */
static int parse_response_format(oa_params *p, const wk_json *root, oa_error *e)
{
    const wk_json *v = field(root, "response_format");
    if (!v) return 0;
    const char *type = wk_json_string(wk_json_get(v, "type"), NULL);
    if (wk_json_kind(v) != WK_JSON_OBJECT || !type)
        return bad(e, "response_format", "invalid_type", "'response_format' must be an object with a string 'type'");
    if (!strcmp(type, "text")) return 0;
    if (!strcmp(type, "json_object")) p->grammar = wk_grammar_json_object();
    else if (!strcmp(type, "json_schema")) {
        const wk_json *js = field(v, "json_schema"), *schema = js ? field(js, "schema") : NULL;
        bool strict;
        if (!js || wk_json_kind(js) != WK_JSON_OBJECT)
            return bad(e, "response_format", "invalid_type", "'response_format': \"json_schema\" must be an object with the schema in 'schema'");
        if (field(js, "name") && !wk_json_string(wk_json_get(js, "name"), NULL))
            return bad(e, "response_format", "invalid_type", "'response_format': 'json_schema.name' must be a string");
        if (field(js, "strict") && !wk_json_bool(wk_json_get(js, "strict"), &strict))
            return bad(e, "response_format", "invalid_type", "'response_format': 'json_schema.strict' must be true or false");
        if (!schema || wk_json_kind(schema) != WK_JSON_OBJECT)
            return bad(e, "response_format", !schema ? "missing_required_parameter" : "invalid_type",
                       "'response_format': 'json_schema.schema' must be a JSON schema (an object)");
        p->grammar = wk_grammar_from_json(schema);
    } else {
        oa_error_set(e, 400, "invalid_request_error", "response_format", "unsupported_value",
                     "'response_format': the type '%.64s' is not one of text, json_object, json_schema", type);
        return -1;
    }
    if (!p->grammar) {
        oa_error_set(e, wk_last_status() == WK_ERR_MEMORY ? 500 : 400,
                     wk_last_status() == WK_ERR_MEMORY ? "server_error" : "invalid_request_error", "response_format",
                     "invalid_value", "'response_format': %s", wk_last_error());
        return -1;
    }
    return 0;
}

/* fields that change what comes back, which wick does not do yet: refused
 * rather than ignored */
static int refuse_unsupported(const wk_json *root, bool chat, oa_error *e)
{
    int64_t n;
    const wk_json *v;
    if (!chat && get_int(root, "best_of", 1, 128, &n, e) < 0) return -1;
    if (!chat && field(root, "best_of") && n != 1)
        return bad(e, "best_of", "unsupported_value", "'best_of' must be 1: it is not supported yet");
    bool b = false;
    if (!chat && get_bool(root, "echo", &b, e) < 0) return -1;
    if (b) return bad(e, "echo", "unsupported_value", "'echo' is not supported yet");
    if ((v = field(root, "tools")) && !(wk_json_kind(v) == WK_JSON_ARRAY && wk_json_count(v) == 0))
        return bad(e, "tools", "unsupported_value", "'tools' (function calling) is not supported yet");
    if ((v = field(root, "logit_bias")) && !(wk_json_kind(v) == WK_JSON_OBJECT && wk_json_count(v) == 0))
        return bad(e, "logit_bias", "unsupported_value", "'logit_bias' is not supported yet");
    return 0;
}

int oa_parse(const char *body, size_t len, bool chat, oa_params *p, oa_error *e)
{
    *p = (oa_params){ .chat = chat, .n = 1 };
    p->sampling = wk_sampling_greedy();
    p->sampling.temperature = 1.0;   /* OpenAI's defaults: sampled, no filter */
    p->doc = wk_json_parse(body, len, "the request body", 0);
    if (!p->doc) {
        oa_error_set(e, 400, "invalid_request_error", NULL, "invalid_json", "the body is not valid JSON: %s",
                     wk_last_error());
        return -1;
    }
    const wk_json *root = p->doc;
    if (wk_json_kind(root) != WK_JSON_OBJECT) return bad(e, NULL, "invalid_json", "the body must be a JSON object");
    if (refuse_unsupported(root, chat, e) || parse_response_format(p, root, e)) return -1;
    const wk_json *v = field(root, "model");
    if (v && wk_json_kind(v) != WK_JSON_STRING) return bad(e, "model", "invalid_type", "'model' must be a string");
    if (chat) {
        if (parse_messages(p, root, e)) return -1;
    } else {
        v = field(root, "prompt");
        if (!v) return bad(e, "prompt", "missing_required_parameter", "'prompt' is required");
        if (wk_json_kind(v) == WK_JSON_ARRAY && wk_json_count(v) == 1 &&
            wk_json_kind(wk_json_item(v, 0)) == WK_JSON_STRING)
            v = wk_json_item(v, 0);   /* one prompt in a list */
        if (!(p->prompt = wk_json_string(v, NULL)))
            return bad(e, "prompt", "invalid_type", "'prompt' must be a string (lists of prompts or of token ids are not supported yet)");
    }
    double d;
    int64_t i;
    int r;
    if ((r = get_num(root, "temperature", 0, 2, &d, e)) < 0) return -1;
    if (r) p->sampling.temperature = d;
    if ((r = get_num(root, "top_p", 0, 1, &d, e)) < 0) return -1;
    if (r && d <= 0) return bad(e, "top_p", "invalid_value", "'top_p' must be in (0, 1]");
    if (r) p->sampling.top_p = d;
    if ((r = get_int(root, "top_k", -1, INT32_MAX, &i, e)) < 0) return -1;
    if (r) p->sampling.top_k = i < 0 ? 0 : i;   /* -1 (vLLM's) and 0: off */
    if ((r = get_num(root, "min_p", 0, 1, &d, e)) < 0) return -1;
    if (r) p->sampling.min_p = d;
    if ((r = get_num(root, "presence_penalty", -2, 2, &d, e)) < 0) return -1;
    if (r) p->sampling.presence_penalty = d;
    if ((r = get_num(root, "frequency_penalty", -2, 2, &d, e)) < 0) return -1;
    if (r) p->sampling.frequency_penalty = d;
    if ((r = get_num(root, "repetition_penalty", 0x1p-30, 1e30, &d, e)) < 0) return -1;   /* vLLM's name */
    if (r) p->sampling.repeat_penalty = d;
    if ((r = get_int(root, "seed", INT64_MIN, INT64_MAX, &i, e)) < 0) return -1;
    if (r) {
        p->sampling.seed = (uint64_t)i;
        p->seeded = true;
    }
    const char *mt = chat && field(root, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if ((r = get_int(root, mt, 1, INT32_MAX, &i, e)) < 0) return -1;
    p->max_tokens = r ? i : chat ? 0 : 16;   /* OpenAI's: 16 for completions, the context's end for chats */
    if ((r = get_int(root, "n", 1, OA_MAX_N, &i, e)) < 0) return -1;
    p->n = r ? (int)i : 1;
    if (parse_stop(p, root, e)) return -1;
    if (get_bool(root, "stream", &p->stream, e) < 0) return -1;
    if (get_bool(root, "ignore_eos", &p->ignore_eos, e) < 0) return -1;
    if ((v = field(root, "stream_options"))) {
        if (wk_json_kind(v) != WK_JSON_OBJECT)
            return bad(e, "stream_options", "invalid_type", "'stream_options' must be an object");
        if (!p->stream)
            return bad(e, "stream_options", "invalid_value", "'stream_options' goes only with \"stream\": true");
        if (get_bool(v, "include_usage", &p->include_usage, e) < 0) {
            e->param = "stream_options";
            return -1;
        }
    }
    if (chat) {
        if (get_bool(root, "logprobs", &p->logprobs, e) < 0) return -1;
        if ((r = get_int(root, "top_logprobs", 0, 20, &i, e)) < 0) return -1;
        if (r && !p->logprobs)
            return bad(e, "top_logprobs", "invalid_value", "'top_logprobs' needs \"logprobs\": true");
        p->top_logprobs = r ? (int)i : 0;
    } else {
        if ((r = get_int(root, "logprobs", 0, 20, &i, e)) < 0) return -1;
        p->logprobs = r == 1;
        p->top_logprobs = r ? (int)i : 0;
    }
    return 0;
}

void oa_params_free(oa_params *p)
{
    for (int i = 0; i < p->n_owned; i++) free(p->owned[i]);
    free(p->owned);
    free(p->msgs);
    wk_grammar_release(p->grammar);
    wk_json_free(p->doc);
    *p = (oa_params){ 0 };
}

/* ---- answers ----------------------------------------------------------------------------- */

static void token_text(const oa_head *h, int32_t id, const char **s, size_t *n)
{
    *s = wk_llm_token_text(h->m, id, n);
    if (!*s) {
        *s = "";
        *n = 0;
    }
}

static void bytes_array(jw *w, const char *s, size_t n)
{
    jw_arr(w);
    for (size_t i = 0; i < n; i++) jw_int(w, (unsigned char)s[i]);
    jw_end_arr(w);
}

/* chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]} */
static void chat_logprobs(jw *w, const oa_head *h, const oa_token *t, size_t n)
{
    jw_obj(w);
    jw_key(w, "content");
    jw_arr(w);
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        token_text(h, t[i].id, &s, &len);
        jw_obj(w);
        jw_key(w, "token");
        jw_strn(w, s, len);
        jw_key(w, "logprob");
        jw_num(w, t[i].logprob);
        jw_key(w, "bytes");
        bytes_array(w, s, len);
        jw_key(w, "top_logprobs");
        jw_arr(w);
        for (int k = 0; k < t[i].n_top; k++) {
            token_text(h, t[i].top_ids[k], &s, &len);
            jw_obj(w);
            jw_key(w, "token");
            jw_strn(w, s, len);
            jw_key(w, "logprob");
            jw_num(w, t[i].top_lps[k]);
            jw_key(w, "bytes");
            bytes_array(w, s, len);
            jw_end_obj(w);
        }
        jw_end_arr(w);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    jw_end_obj(w);
}

/* completions: {"tokens", "token_logprobs", "top_logprobs": [{text: lp}], "text_offset"} */
static void completion_logprobs(jw *w, const oa_head *h, const oa_token *t, size_t n)
{
    const char *s;
    size_t len;
    jw_obj(w);
    jw_key(w, "tokens");
    jw_arr(w);
    for (size_t i = 0; i < n; i++) {
        token_text(h, t[i].id, &s, &len);
        jw_strn(w, s, len);
    }
    jw_end_arr(w);
    jw_key(w, "token_logprobs");
    jw_arr(w);
    for (size_t i = 0; i < n; i++) jw_num(w, t[i].logprob);
    jw_end_arr(w);
    jw_key(w, "top_logprobs");
    jw_arr(w);
    for (size_t i = 0; i < n; i++) {
        jw_obj(w);
        char keys[20][256];   /* a key is a string: the writer escapes it */
        int nk = 0;
        for (int k = 0; k < t[i].n_top && k < 20; k++) {
            token_text(h, t[i].top_ids[k], &s, &len);
            char *key = keys[nk];
            snprintf(key, sizeof keys[0], "%.*s", (int)(len < sizeof keys[0] ? len : sizeof keys[0] - 1), s);
            /* tokens of one text (control tokens' empty text, say) share a
             * key: the first, the likeliest, stands for them (no key twice) */
            bool seen = false;
            for (int j = 0; j < nk && !seen; j++) seen = !strcmp(keys[j], key);
            if (seen) continue;
            nk++;
            jw_key(w, key);
            jw_num(w, t[i].top_lps[k]);
        }
        jw_end_obj(w);
    }
    jw_end_arr(w);
    jw_key(w, "text_offset");
    jw_arr(w);
    for (size_t i = 0; i < n; i++) jw_int(w, t[i].offset);
    jw_end_arr(w);
    jw_end_obj(w);
}

static void head(jw *w, const oa_head *h, const char *object)
{
    jw_key(w, "id");
    jw_str(w, h->id);
    jw_key(w, "object");
    jw_str(w, object);
    jw_key(w, "created");
    jw_int(w, h->created);
    jw_key(w, "model");
    jw_str(w, h->model);
}

static void usage(jw *w, int64_t prompt_tokens, int64_t completion_tokens)
{
    jw_key(w, "usage");
    jw_obj(w);
    jw_key(w, "prompt_tokens");
    jw_int(w, prompt_tokens);
    jw_key(w, "completion_tokens");
    jw_int(w, completion_tokens);
    jw_key(w, "total_tokens");
    jw_int(w, prompt_tokens + completion_tokens);
    jw_end_obj(w);
}

static void logprobs(jw *w, const oa_head *h, const oa_token *toks, size_t n)
{
    jw_key(w, "logprobs");
    if (!h->p->logprobs) jw_null(w);
    else if (h->p->chat) chat_logprobs(w, h, toks, n);
    else completion_logprobs(w, h, toks, n);
}

void oa_write_response(jw *w, const oa_head *h, const oa_choice *c, int n, int64_t prompt_tokens,
                       int64_t completion_tokens)
{
    const bool chat = h->p->chat;
    jw_obj(w);
    head(w, h, chat ? "chat.completion" : "text_completion");
    jw_key(w, "choices");
    jw_arr(w);
    for (int i = 0; i < n; i++) {
        jw_obj(w);
        jw_key(w, "index");
        jw_int(w, i);
        if (chat) {
            jw_key(w, "message");
            jw_obj(w);
            jw_key(w, "role");
            jw_str(w, "assistant");
            jw_key(w, "content");
            jw_strn(w, c[i].text, c[i].len);
            jw_end_obj(w);
        } else {
            jw_key(w, "text");
            jw_strn(w, c[i].text, c[i].len);
        }
        logprobs(w, h, c[i].toks, c[i].n_toks);
        jw_key(w, "finish_reason");
        jw_str(w, c[i].finish);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    usage(w, prompt_tokens, completion_tokens);
    jw_end_obj(w);
}

void oa_write_chunk(jw *w, const oa_head *h, int index, bool role, const char *text, size_t len,
                    const oa_token *toks, size_t n_toks, const char *finish)
{
    const bool chat = h->p->chat;
    jw_raw(w, "data: ", 6);
    jw_obj(w);
    head(w, h, chat ? "chat.completion.chunk" : "text_completion");
    jw_key(w, "choices");
    jw_arr(w);
    jw_obj(w);
    jw_key(w, "index");
    jw_int(w, index);
    if (chat) {
        jw_key(w, "delta");
        jw_obj(w);
        if (role) {
            jw_key(w, "role");
            jw_str(w, "assistant");
        }
        if (role || len || !finish) {
            jw_key(w, "content");
            jw_strn(w, text, len);
        }
        jw_end_obj(w);
    } else {
        jw_key(w, "text");
        jw_strn(w, text, len);
    }
    if (n_toks) logprobs(w, h, toks, n_toks);
    else {
        jw_key(w, "logprobs");
        jw_null(w);
    }
    jw_key(w, "finish_reason");
    jw_str(w, finish);
    jw_end_obj(w);
    jw_end_arr(w);
    if (h->p->include_usage) {
        jw_key(w, "usage");
        jw_null(w);
    }
    jw_end_obj(w);
    jw_raw(w, "\n\n", 2);
}

void oa_write_usage_chunk(jw *w, const oa_head *h, int64_t prompt_tokens, int64_t completion_tokens)
{
    jw_raw(w, "data: ", 6);
    jw_obj(w);
    head(w, h, h->p->chat ? "chat.completion.chunk" : "text_completion");
    jw_key(w, "choices");
    jw_arr(w);
    jw_end_arr(w);
    usage(w, prompt_tokens, completion_tokens);
    jw_end_obj(w);
    jw_raw(w, "\n\n", 2);
}
