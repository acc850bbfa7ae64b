/* text_out.c — the text of generated tokens as it can be passed on
 * (wick_llm.h: wk_text_out): each token's bytes through the tokenizer's
 * streaming decoder, held back while they may begin a stop string or end
 * inside a UTF-8 character, cut where a stop string begins. One per
 * generated sequence: wk_llm_generate's, and each of the engine's. */
#include <stdlib.h>
#include <string.h>
#include "wick_tokenizer.h"
#include "llm_internal.h"

struct wk_text_out {
    const wk_llm *m;
    wk_tok_stream *stream;        /* NULL: the GGUF vocabulary's bytes */
    char **stop;
    int n_stop;
    size_t max_stop;
    char *p;                      /* pending text: p[0 .. n) held, then emitted */
    size_t n, cap, emitted;       /* emitted: bytes of p passed on by the last call */
};

/* bytes at the end of s[0..n) that start an incomplete UTF-8 character */
static size_t utf8_tail(const char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xc0) == 0x80) continue;            /* a continuation byte */
        int need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return (size_t)need > k ? k : 0;
    }
    return 0;
}

wk_text_out *wk_text_out_new(const wk_llm *m, const char *const *stop, int n_stop)
{
    if (!m || n_stop < 0 || (n_stop > 0 && !stop)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_text_out_new: %s", !m ? "the model is NULL" : "bad stop strings");
        return NULL;
    }
    wk_text_out *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->m = m;
    const wk_tokenizer *tk = llm_text_tokenizer(m);
    if (tk && !(t->stream = wk_tok_stream_new(tk, WK_TOK_SKIP_SPECIAL | WK_TOK_KEEP_SPACE))) {
        wk_text_out_free(t);
        return NULL;
    }
    if (n_stop > 0 && !(t->stop = calloc((size_t)n_stop, sizeof *t->stop))) goto oom;
    for (int i = 0; i < n_stop; i++) {
        if (!stop[i] || !stop[i][0]) continue;   /* an empty stop string never matches */
        if (!(t->stop[t->n_stop] = strdup(stop[i]))) goto oom;
        const size_t len = strlen(stop[i]);
        if (len > t->max_stop) t->max_stop = len;
        t->n_stop++;
    }
    return t;
oom:
    wk_text_out_free(t);
    wk_error_set(WK_ERR_MEMORY, "out of memory");
    return NULL;
}

void wk_text_out_free(wk_text_out *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_stop; i++) free(t->stop[i]);
    free(t->stop);
    wk_tok_stream_free(t->stream);
    free(t->p);
    free(t);
}

/* drop what the last call passed on */
static void drop_emitted(wk_text_out *t)
{
    if (t->emitted) memmove(t->p, t->p + t->emitted, t->n - t->emitted);   /* (p is NULL before the first) */
    t->n -= t->emitted;
    t->emitted = 0;
    if (t->p) t->p[t->n] = 0;
}

static bool append(wk_text_out *t, const char *s, size_t len)
{
    if (t->n + len + 1 > t->cap) {
        const size_t cap = (t->n + len + 1) * 2;
        char *p = realloc(t->p, cap);
        if (!p) return false;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, len);
    t->n += len;
    t->p[t->n] = 0;
    return true;
}

wk_status wk_text_out_push(wk_text_out *t, int32_t tok, const char **text, size_t *len, bool *stopped)
{
    *text = "";
    *len = 0;
    *stopped = false;
    drop_emitted(t);
    size_t n;
    const char *s;
    if (t->stream) {
        if (wk_tok_stream_push(t->stream, tok, &s, &n))
            return wk_error_set(wk_last_status(), "decoding token %d: %s", tok, wk_last_error());
    } else {
        s = wk_llm_token_text(t->m, tok, &n);
    }
    if (!append(t, s, n)) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    size_t emit = t->n, hit = SIZE_MAX;
    for (int i = 0; i < t->n_stop; i++) {
        const char *f = strstr(t->p, t->stop[i]);
        if (f && (size_t)(f - t->p) < hit) hit = (size_t)(f - t->p);
    }
    if (hit != SIZE_MAX) emit = hit;
    else if (t->max_stop) {   /* hold back a suffix that a stop string starts with */
        for (size_t k = t->max_stop - 1 < t->n ? t->max_stop - 1 : t->n; k > 0; k--) {
            bool pre = false;
            for (int i = 0; i < t->n_stop && !pre; i++)
                if (strlen(t->stop[i]) > k && !strncmp(t->p + t->n - k, t->stop[i], k)) pre = true;
            if (pre) {
                emit = t->n - k;
                break;
            }
        }
    }
    if (hit == SIZE_MAX) emit -= utf8_tail(t->p, emit);
    *text = t->p;
    *len = emit;
    t->emitted = emit;
    if (hit != SIZE_MAX) {   /* the rest is never passed on */
        *stopped = true;
        t->n = emit;
    }
    return WK_OK;
}

wk_status wk_text_out_flush(wk_text_out *t, const char **text, size_t *len)
{
    drop_emitted(t);
    const char *rest = NULL;
    size_t rn = 0;
    if (t->stream && wk_tok_stream_flush(t->stream, &rest, &rn) == WK_OK && rn && !append(t, rest, rn))
        return wk_error_set(WK_ERR_MEMORY, "out of memory");
    *text = t->p ? t->p : "";
    *len = t->n;
    t->emitted = t->n;
    return WK_OK;
}
