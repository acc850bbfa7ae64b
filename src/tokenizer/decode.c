/* decode.c — ids to text, whole or streamed.
 *
 * Two stages. The first turns each token into bytes as Hugging Face's
 * decoders do: byte-level BPE maps GPT-2's characters back to bytes;
 * SentencePiece-style tokens get their replaces ("▁" -> " "), runs of
 * <0xNN> tokens are joined and become their text when it is valid UTF-8
 * and one U+FFFD per byte when it is not (ByteFallback), and the leading
 * space of the text is stripped (Strip after Fuse, or Metaspace's first
 * token). The second stage makes valid UTF-8: complete characters go out,
 * an incomplete one is held until its last byte comes, and each maximal
 * ill-formed subsequence becomes U+FFFD (what from_utf8_lossy does to the
 * whole text), unless WK_TOK_RAW. wk_tokenizer_decode is a stream fed
 * every id, then flushed, so both give the same text. */
#include <stdlib.h>
#include "tok_internal.h"

struct wk_tok_stream {
    const wk_tokenizer *t;
    unsigned flags;
    bool started;        /* a token was decoded (not skipped) */
    bool emitted;        /* a byte reached the second stage   */
    int strip_left;      /* TOK_STRIP_FUSED: spaces still to drop at the start */
    tok_buf run;         /* bytes of <0xNN> tokens not yet resolved */
    tok_buf pend;        /* second stage: an incomplete character   */
    tok_buf out;         /* what the current call gives             */
    tok_buf tmp;
};

static const char FFFD[] = "\xef\xbf\xbd";

static void reset(wk_tok_stream *s)
{
    s->started = s->emitted = false;
    s->strip_left = (s->t->strip == TOK_STRIP_FUSED && !(s->flags & WK_TOK_KEEP_SPACE)) ? s->t->strip_n : 0;
    s->run.n = s->pend.n = 0;
}

WK_TOK_API wk_tok_stream *wk_tok_stream_new(const wk_tokenizer *t, unsigned flags)
{
    if (!t) { wk_error_set(WK_ERR_ARGUMENT, "wk_tok_stream_new: NULL tokenizer"); return NULL; }
    if (flags & ~(WK_TOK_SKIP_SPECIAL | WK_TOK_RAW | WK_TOK_KEEP_SPACE)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_tok_stream_new: unknown flags 0x%x", flags);
        return NULL;
    }
    wk_tok_stream *s = calloc(1, sizeof *s);
    if (!s) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return NULL; }
    s->t = t;
    s->flags = flags;
    reset(s);
    return s;
}

WK_TOK_API void wk_tok_stream_free(wk_tok_stream *s)
{
    if (!s) return;
    tok_buf_free(&s->run);
    tok_buf_free(&s->pend);
    tok_buf_free(&s->out);
    tok_buf_free(&s->tmp);
    free(s);
}

/* Second stage: pend + p[0..n) -> out, holding an incomplete character. */
static bool utf8_stage(wk_tok_stream *s, const char *p, size_t n, bool final)
{
    if (!tok_buf_put(&s->pend, p, n)) return false;
    const unsigned char *u = (const unsigned char *)s->pend.p;
    size_t m = s->pend.n, i = 0, done = 0;
    while (i < m) {
        if (u[i] < 0x80) { i++; continue; }
        uint32_t cp;
        bool cut;
        int l = tok_utf8_next(u + i, m - i, &cp, &cut);
        if (l > 0) { i += (size_t)l; continue; }
        if (cut && !final) break;   /* may be completed by the next token */
        if (s->flags & WK_TOK_RAW) { i += (size_t)-l; continue; }
        if (!tok_buf_put(&s->out, s->pend.p + done, i - done) || !tok_buf_put(&s->out, FFFD, 3)) return false;
        i += (size_t)-l;
        done = i;
    }
    if (!tok_buf_put(&s->out, s->pend.p + done, i - done)) return false;
    memmove(s->pend.p, s->pend.p + i, m - i);
    s->pend.n = m - i;
    return true;
}

/* First stage's output: the leading spaces to strip, then the second stage. */
static bool emit(wk_tok_stream *s, const char *p, size_t n)
{
    while (s->strip_left > 0 && n) {
        if (p[0] != ' ') { s->strip_left = 0; break; }
        p++;
        n--;
        s->strip_left--;
    }
    if (n) s->strip_left = 0;
    return n ? utf8_stage(s, p, n, false) : true;
}

/* A run of byte tokens ends: its text when valid, else U+FFFD per byte. */
static bool flush_run(wk_tok_stream *s)
{
    if (!s->run.n) return true;
    bool valid = true;
    if (!(s->flags & WK_TOK_RAW))
        for (size_t i = 0; i < s->run.n && valid;) {
            uint32_t cp;
            bool cut;
            int l = tok_utf8_next((const unsigned char *)s->run.p + i, s->run.n - i, &cp, &cut);
            if (l <= 0) valid = false;
            else i += (size_t)l;
        }
    bool ok;
    if (valid) ok = emit(s, s->run.p, s->run.n);
    else {
        s->tmp.n = 0;
        ok = true;
        for (size_t i = 0; i < s->run.n && ok; i++) ok = tok_buf_put(&s->tmp, FFFD, 3);
        ok = ok && emit(s, s->tmp.p, s->tmp.n);
    }
    s->run.n = 0;
    return ok;
}

/* each call's text starts empty and NUL-terminated (a call that only holds
 * bytes back gives "", not the previous call's bytes past len 0) */
static bool start_call(wk_tok_stream *s)
{
    s->out.n = 0;
    if (!tok_buf_reserve(&s->out, 0)) return false;
    s->out.p[0] = 0;
    return true;
}

WK_TOK_API wk_status wk_tok_stream_push(wk_tok_stream *s, int32_t id, const char **text, size_t *len)
{
    if (!s || !text || !len) return wk_error_set(WK_ERR_ARGUMENT, "wk_tok_stream_push: NULL argument");
    const wk_tokenizer *t = s->t;
    *text = "";
    *len = 0;
    if (id < 0 || id >= t->n) return wk_error_set(WK_ERR_INDEX, "decode: id %d out of range (%d tokens)", id, t->n);
    if (!start_call(s)) return WK_ERR_MEMORY;
    bool ok = true;
    if (!((s->flags & WK_TOK_SKIP_SPECIAL) && t->special[id])) {
        bool first = !s->started;
        s->started = true;
        const char *p = t->dec_pool + t->dec_off[id];
        size_t n = (size_t)(t->dec_off[id + 1] - t->dec_off[id]);
        switch (t->dec) {
        case TOK_DEC_BYTE_LEVEL:
            ok = emit(s, p, n);
            break;
        case TOK_DEC_JOIN:
            ok = (first || emit(s, " ", 1)) && emit(s, p, n);
            break;
        case TOK_DEC_PIECES:
            if (t->dec_byte[id] >= 0) {
                char c = (char)t->dec_byte[id];
                ok = tok_buf_put(&s->run, &c, 1);
                break;
            }
            ok = flush_run(s);
            if (ok && first && t->strip == TOK_STRIP_FIRST_TOKEN && !(s->flags & WK_TOK_KEEP_SPACE)) {
                /* Metaspace's first token: its "▁" are dropped, not made spaces */
                s->tmp.n = 0;
                const char *r = t->text[id];
                size_t rn = t->len[id];
                for (size_t i = 0; ok && i < rn;) {
                    if (t->meta_len && i + t->meta_len <= rn && !memcmp(r + i, t->meta, t->meta_len)) i += t->meta_len;
                    else { ok = tok_buf_put(&s->tmp, r + i, 1); i++; }
                }
                if (ok) {
                    /* then the other replaces, on a copy (piece bytes of a
                     * text that no longer holds "▁") */
                    tok_buf once = {0};
                    ok = tok_buf_put(&once, s->tmp.p ? s->tmp.p : "", s->tmp.n);
                    for (int k = 0; ok && k < t->n_drep; k++) {
                        tok_buf nb = {0};
                        size_t fl = t->drep_from_len[k];
                        for (size_t i = 0; ok && i < once.n;) {
                            if (fl && i + fl <= once.n && !memcmp(once.p + i, t->drep_from[k], fl)) {
                                ok = tok_buf_put(&nb, t->drep_to[k], t->drep_to_len[k]);
                                i += fl;
                            } else { ok = tok_buf_put(&nb, once.p + i, 1); i++; }
                        }
                        tok_buf_free(&once);
                        once = nb;
                    }
                    ok = ok && emit(s, once.p ? once.p : "", once.n);
                    tok_buf_free(&once);
                }
            } else if (ok) ok = emit(s, p, n);
            break;
        }
    }
    if (!ok) return wk_last_status() ? wk_last_status() : WK_ERR_MEMORY;
    *text = s->out.p;
    *len = s->out.n;
    return WK_OK;
}

WK_TOK_API wk_status wk_tok_stream_flush(wk_tok_stream *s, const char **text, size_t *len)
{
    if (!s || !text || !len) return wk_error_set(WK_ERR_ARGUMENT, "wk_tok_stream_flush: NULL argument");
    *text = "";
    *len = 0;
    if (!start_call(s)) return WK_ERR_MEMORY;
    bool ok = flush_run(s) && utf8_stage(s, "", 0, true);
    reset(s);
    if (!ok) return wk_last_status() ? wk_last_status() : WK_ERR_MEMORY;
    *text = s->out.p;
    *len = s->out.n;
    return WK_OK;
}

WK_TOK_API wk_status wk_tokenizer_decode(const wk_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags,
                                         char **text, size_t *len)
{
    if (!text) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_decode: NULL output");
    *text = NULL;
    if (len) *len = 0;
    if (!t) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_decode: NULL tokenizer");
    if (n < 0 || (n && !ids)) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_decode: %lld ids at %p", (long long)n, (const void *)ids);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->n)
            return wk_error_set(WK_ERR_INDEX, "wk_tokenizer_decode: id %d (at %lld) out of range (%d tokens)", ids[i], (long long)i, t->n);
    wk_tok_stream *s = wk_tok_stream_new(t, flags);
    if (!s) return wk_last_status();
    tok_buf all = {0};
    wk_status st = WK_OK;
    const char *p;
    size_t m;
    for (int64_t i = 0; i < n && !st; i++) {
        st = wk_tok_stream_push(s, ids[i], &p, &m);
        if (!st && !tok_buf_put(&all, p, m)) st = WK_ERR_MEMORY;
    }
    if (!st) st = wk_tok_stream_flush(s, &p, &m);
    if (!st && !tok_buf_put(&all, p, m)) st = WK_ERR_MEMORY;
    wk_tok_stream_free(s);
    if (st) { tok_buf_free(&all); return st; }
    if (!all.p && !(all.p = calloc(1, 1))) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    *text = all.p;
    if (len) *len = all.n;
    return WK_OK;
}
