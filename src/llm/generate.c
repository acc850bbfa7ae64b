/* generate.c — wk_llm_generate, the generation loop: the prompt's
 * prefill, then one token a step (sampled on the host, or greedy on the
 * device: llm_eval_greedy), stopped by an end-of-generation token, a stop
 * string, the token budget, the context's end or the callback; whole UTF-8
 * characters to the callback through the tokenizer's streaming decoder;
 * the timings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick_tokenizer.h"
#include "llm_internal.h"

/* ---- generation --------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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

typedef struct pending {
    char *p;
    size_t n, cap;
} pending;

wk_status wk_llm_generate(wk_llm *m, const int32_t *prompt, int64_t n_prompt, const wk_generate_opts *opts,
                          wk_llm_token_fn cb, void *user, wk_generate_stats *stats)
{
    wk_clear_error();
    wk_generate_stats s = { 0 };
    if (stats) *stats = s;
    if (!m || n_prompt < 0 || (n_prompt > 0 && !prompt))
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_generate: %s", !m ? "the model is NULL" : "bad prompt");
    wk_generate_opts o = { .sampling = wk_sampling_greedy() };
    if (opts) o = *opts;
    if (o.n_stop < 0 || (o.n_stop > 0 && !o.stop)) return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_generate: bad stop strings");
    if (n_prompt == 0 && m->st.pos == 0) return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_generate: an empty prompt and cache");
    if (n_prompt > m->cfg.info.context - m->st.pos)
        return wk_error_set(WK_ERR_ARGUMENT,
                       "the prompt of %lld tokens does not fit: the context holds %lld and %lld are in use "
                       "(a longer context: --ctx / wk_llm_options.context, up to the model's %lld)",
                       (long long)n_prompt, (long long)m->cfg.info.context, (long long)m->st.pos,
                       (long long)m->cfg.info.train_context);
    const int64_t V = m->cfg.info.n_vocab;
    float *logits = malloc((size_t)V * sizeof *logits);
    wk_sampler *sm = wk_sampler_new(&o.sampling, V);
    pending pd = { 0 };
    const wk_tokenizer *tk = llm_text_tokenizer(m);
    wk_tok_stream *stream = tk ? wk_tok_stream_new(tk, WK_TOK_SKIP_SPECIAL | WK_TOK_KEEP_SPACE) : NULL;
    size_t max_stop = 0;
    for (int i = 0; i < o.n_stop; i++)
        if (o.stop[i] && strlen(o.stop[i]) > max_stop) max_stop = strlen(o.stop[i]);
    wk_status st = WK_OK;
    if (!logits || !sm) {
        st = sm ? wk_error_set(WK_ERR_MEMORY, "out of memory") : wk_last_status();
        goto out;
    }
    for (int64_t i = 0; i < n_prompt; i++) wk_sampler_accept(sm, prompt[i]);
    /* greedy without a penalty needs only the argmax: taken on the device,
       4 bytes read back per step instead of the logits */
    const bool dev_greedy = o.sampling.temperature <= 0 &&
                            (o.sampling.repeat_penalty == 1.0 || o.sampling.repeat_penalty == 0.0);
    int32_t next = -1;
    double t0 = now_ms();
    if (n_prompt > 0) st = dev_greedy ? llm_eval_greedy(m, prompt, n_prompt, &next) : wk_llm_eval(m, prompt, n_prompt, false, logits);
    else {   /* continue from the cache: the last token again is not possible, so refuse */
        st = wk_error_set(WK_ERR_ARGUMENT, "wk_llm_generate: give at least one prompt token");
    }
    if (st) goto out;
    s.prompt_tokens = n_prompt;
    s.prompt_ms = now_ms() - t0;
    t0 = now_ms();
    for (;;) {
        const int32_t tok = dev_greedy ? next : wk_sampler_sample(sm, logits);
        if (tok < 0) {
            st = wk_last_status();
            break;
        }
        if (!o.ignore_eog && wk_llm_is_eog(m, tok)) {
            s.stop = WK_STOP_EOG;
            break;
        }
        wk_sampler_accept(sm, tok);
        s.gen_tokens++;
        /* its bytes join what is pending; pass on whole characters that
           cannot be the start of a stop string */
        size_t len;
        const char *txt;
        if (stream) {
            if (wk_tok_stream_push(stream, tok, &txt, &len)) {
                st = wk_error_set(wk_last_status(), "decoding token %d: %s", tok, wk_last_error());
                break;
            }
        } else {
            txt = wk_llm_token_text(m, tok, &len);
        }
        if (pd.n + len + 1 > pd.cap) {
            size_t cap = (pd.n + len + 1) * 2;
            char *p = realloc(pd.p, cap);
            if (!p) {
                st = wk_error_set(WK_ERR_MEMORY, "out of memory");
                break;
            }
            pd.p = p;
            pd.cap = cap;
        }
        memcpy(pd.p + pd.n, txt, len);
        pd.n += len;
        pd.p[pd.n] = 0;
        size_t emit = pd.n, hit = SIZE_MAX;
        for (int i = 0; i < o.n_stop; i++) {
            if (!o.stop[i] || !o.stop[i][0]) continue;
            const char *f = strstr(pd.p, o.stop[i]);
            if (f && (size_t)(f - pd.p) < hit) hit = (size_t)(f - pd.p);
        }
        if (hit != SIZE_MAX) emit = hit;
        else if (max_stop) {
            /* hold back a suffix that a stop string starts with */
            for (size_t k = max_stop - 1 < pd.n ? max_stop - 1 : pd.n; k > 0; k--) {
                bool pre = false;
                for (int i = 0; i < o.n_stop && !pre; i++)
                    if (o.stop[i] && strlen(o.stop[i]) > k && !strncmp(pd.p + pd.n - k, o.stop[i], k)) pre = true;
                if (pre) {
                    emit = pd.n - k;
                    break;
                }
            }
        }
        if (hit == SIZE_MAX) emit -= utf8_tail(pd.p, emit);
        bool go = true;
        if (cb) go = cb(user, tok, pd.p, emit);
        memmove(pd.p, pd.p + emit, pd.n - emit);
        pd.n -= emit;
        if (pd.p) pd.p[pd.n] = 0;
        if (hit != SIZE_MAX) {
            s.stop = WK_STOP_STRING;
            break;
        }
        if (!go) {
            s.stop = WK_STOP_CALLBACK;
            break;
        }
        if (o.max_tokens > 0 && s.gen_tokens >= o.max_tokens) {
            s.stop = WK_STOP_LENGTH;
            break;
        }
        if (m->st.pos >= m->cfg.info.context) {
            s.stop = WK_STOP_CONTEXT;
            break;
        }
        if ((st = dev_greedy ? llm_eval_greedy(m, &tok, 1, &next) : wk_llm_eval(m, &tok, 1, false, logits))) break;
    }
    if (st == WK_OK && s.stop != WK_STOP_STRING && cb) {   /* held back text */
        const char *rest = NULL;
        size_t rn = 0;
        if (stream && wk_tok_stream_flush(stream, &rest, &rn) == WK_OK && rn) {
            char *p = realloc(pd.p, pd.n + rn + 1);
            if (p) {
                memcpy(p + pd.n, rest, rn);
                pd.p = p;
                pd.n += rn;
            }
        }
        if (pd.n) cb(user, -1, pd.p, pd.n);
    }
    s.gen_ms = now_ms() - t0;
out:
    free(pd.p);
    wk_tok_stream_free(stream);
    free(logits);
    wk_sampler_free(sm);
    if (stats) *stats = s;
    return st;
}
