/* generate.c — wk_llm_generate, the generation loop: the prompt's
 * prefill, then one token a step (sampled on the host, or greedy on the
 * device: llm_eval_greedy), stopped by an end-of-generation token, a stop
 * string, the token budget, the context's end or the callback; whole UTF-8
 * characters to the callback (text_out.c); the timings.
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
    wk_text_out *txo = wk_text_out_new(m, o.stop, o.n_stop);
    wk_status st = WK_OK;
    if (!logits || !sm || !txo) {
        st = sm && txo ? wk_error_set(WK_ERR_MEMORY, "out of memory") : wk_last_status();
        goto out;
    }
    for (int64_t i = 0; i < n_prompt; i++) wk_sampler_accept(sm, prompt[i]);
    /* greedy without a penalty needs only the argmax: taken on the device,
       4 bytes read back per step instead of the logits */
    const bool dev_greedy = o.sampling.temperature <= 0 &&
                            (o.sampling.repeat_penalty == 1.0 || o.sampling.repeat_penalty == 0.0) &&
                            o.sampling.presence_penalty == 0 && o.sampling.frequency_penalty == 0;
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
        wk_sampler_accept_output(sm, tok);
        s.gen_tokens++;
        /* whole characters that cannot be the start of a stop string */
        const char *txt;
        size_t len;
        bool hit;
        if ((st = wk_text_out_push(txo, tok, &txt, &len, &hit))) break;
        bool go = true;
        if (cb) go = cb(user, tok, txt, len);
        if (hit) {
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
        const char *rest;
        size_t rn;
        if (wk_text_out_flush(txo, &rest, &rn) == WK_OK && rn) cb(user, -1, rest, rn);
    }
    s.gen_ms = now_ms() - t0;
out:
    wk_text_out_free(txo);
    free(logits);
    wk_sampler_free(sm);
    if (stats) *stats = s;
    return st;
}
