/* engine.c — the batched engine's API (wick_engine.h): creating it (the
 * paged cache sized from the options and the device), submitting and
 * cancelling requests from any thread (a queue under a mutex that the
 * step drains), stepping on the caller's thread or on the engine's own,
 * the statistics, and the teardown that cancels what is left. The step
 * itself is step.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"

const char *wk_finish_name(wk_finish f)
{
    switch (f) {
    case WK_FINISH_NONE: return "none";
    case WK_FINISH_STOP: return "stop";
    case WK_FINISH_LENGTH: return "length";
    case WK_FINISH_CANCELLED: return "cancelled";
    case WK_FINISH_ERROR: return "error";
    }
    return "?";
}

/* ---- creation ------------------------------------------------------------------ */

/* The blocks of a cache the options ask for: n_blocks, else room for
 * max_seqs sequences of the context within the byte budget. */
static int64_t blocks_for(const wk_llm *m, const wk_engine_options *o, int64_t max_seqs, int64_t bs, int64_t context)
{
    if (o->n_blocks > 0) return o->n_blocks;
    const uint64_t per = wk_llm_kv_block_bytes(m, bs);
    uint64_t budget = o->kv_bytes;
    if (!budget) {
        wk_device *dev = wk_llm_device(m);
        wk_device_info di = { 0 };
        const bool got = wk_device_info_get(dev, &di) == WK_OK;
        const uint64_t reserve = 2ull << 30;   /* a step's activations and the GEMMs' workspace */
        if (!got) budget = per;
        else if (di.warp_size <= 1) budget = di.total_memory / 4;   /* the cpu */
        else budget = di.free_memory > reserve ? (di.free_memory - reserve) / 10 * 9 : per;
    }
    int64_t n = per ? (int64_t)(budget / per) : 0;
    const int64_t want = max_seqs * ((context + bs - 1) / bs);
    if (n > want) n = want;
    return n;
}

wk_engine *wk_engine_new(wk_llm *m, const wk_engine_options *opts)
{
    wk_clear_error();
    if (!m) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_new: the model is NULL");
        return NULL;
    }
    wk_engine_options o = { 0 };
    if (opts) o = *opts;
    if (o.max_seqs < 0 || o.max_batch_tokens < 0 || o.prefill_chunk < 0 || o.block_size < 0 || o.n_blocks < 0) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_new: negative limits (max_seqs %lld, max_batch_tokens %lld, "
                     "prefill_chunk %lld, block_size %lld, n_blocks %lld)", (long long)o.max_seqs,
                     (long long)o.max_batch_tokens, (long long)o.prefill_chunk, (long long)o.block_size,
                     (long long)o.n_blocks);
        return NULL;
    }
    const wk_llm_info *in = wk_llm_get_info(m);
    wk_engine *e = calloc(1, sizeof *e);
    if (!e) {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    e->m = m;
    e->max_seqs = o.max_seqs ? o.max_seqs : 64;
    e->max_tokens = o.max_batch_tokens ? o.max_batch_tokens : 512;
    e->chunk = o.prefill_chunk && o.prefill_chunk < e->max_tokens ? o.prefill_chunk : e->max_tokens;
    e->bs = o.block_size ? o.block_size : 16;
    e->context = in->context;
    e->n_vocab = in->n_vocab;
    e->prefix_cache = !o.no_prefix_cache;
    e->next_id = 1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    const int64_t nb = blocks_for(m, &o, e->max_seqs, e->bs, e->context);
    if (nb <= 0) {
        wk_error_set(WK_ERR_MEMORY, "wk_engine_new: no room for one KV block of %lld positions (%llu bytes) in the "
                     "budget", (long long)e->bs, (unsigned long long)wk_llm_kv_block_bytes(m, e->bs));
        wk_engine_free(e);
        return NULL;
    }
    e->kv = wk_llm_kv_new(m, nb, e->bs);
    e->blocks = e->kv ? kvb_new(nb, e->bs) : NULL;
    if (!e->kv || !e->blocks) {
        if (e->kv) wk_error_set(WK_ERR_MEMORY, "out of memory for the bookkeeping of %lld blocks", (long long)nb);
        wk_engine_free(e);
        return NULL;
    }
    e->stats.blocks_total = nb;
    e->stats.block_size = e->bs;
    return e;
}

void wk_engine_free(wk_engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_broadcast(&e->cv);
    const bool joined = e->thread_on;
    pthread_mutex_unlock(&e->mu);
    if (joined) pthread_join(e->thread, NULL);
    seq_list *lists[3] = { &e->running, &e->waiting, &e->incoming };
    for (int i = 0; i < 3; i++) {
        while (lists[i]->n > 0) {
            seq *s = lists[i]->s[lists[i]->n - 1];
            lists[i]->n--;
            if (e->blocks) engine_finish(e, s, WK_FINISH_CANCELLED, NULL);
            else seq_free(s);
        }
        free(lists[i]->s);
    }
    kvb_free(e->blocks);
    wk_llm_kv_free(e->kv);
    free(e->cancels);
    free(e->b_tok);
    free(e->b_pos);
    free(e->b_seq);
    free(e->b_table);
    free(e->b_out);
    free(e->b_best);
    free(e->logits);
    wk_grammar_vocab_free(e->gvocab);
    free(e->gbits);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* ---- requests ------------------------------------------------------------------- */

static seq *seq_new(wk_engine *e, const wk_request *r)
{
    seq *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->req = *r;
    s->req.prompt = NULL;
    s->req.stop = NULL;
    s->req.grammar = NULL;   /* s->gs holds it */
    s->n_prompt = s->n_tokens = r->n_prompt;
    s->cap = r->n_prompt + 16;
    s->tokens = malloc((size_t)s->cap * sizeof *s->tokens);
    if (r->n_stop > 0) s->stop = calloc((size_t)r->n_stop, sizeof *s->stop);
    bool ok = s->tokens && (r->n_stop == 0 || s->stop);
    for (int i = 0; ok && i < r->n_stop; i++) ok = (s->stop[i] = strdup(r->stop[i] ? r->stop[i] : "")) != NULL;
    if (!ok) {
        seq_free(s);
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    memcpy(s->tokens, r->prompt, (size_t)r->n_prompt * sizeof *s->tokens);
    const wk_sampling *sp = &r->sampling;
    s->greedy = sp->temperature <= 0 && (sp->repeat_penalty == 1.0 || sp->repeat_penalty == 0.0) &&
                sp->presence_penalty == 0 && sp->frequency_penalty == 0 && !r->logprobs && !r->grammar;
    s->sampler = wk_sampler_new(sp, e->n_vocab);
    s->text = s->sampler ? wk_text_out_new(e->m, (const char *const *)s->stop, r->n_stop) : NULL;
    if (s->text && r->grammar && !(s->gs = wk_grammar_state_new(r->grammar))) {
        wk_text_out_free(s->text);
        s->text = NULL;
    }
    if (!s->text) {
        wk_error_wrap("the request's sampling options, stop strings or grammar");
        seq_free(s);
        return NULL;
    }
    for (int64_t i = 0; i < r->n_prompt; i++) wk_sampler_accept(s->sampler, r->prompt[i]);
    return s;
}

int64_t wk_engine_submit(wk_engine *e, const wk_request *r)
{
    wk_clear_error();
    if (!e || !r) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_submit: %s is NULL", !e ? "the engine" : "the request");
        return -1;
    }
    if (r->n_prompt <= 0 || !r->prompt) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_submit: a request needs a prompt of at least one token");
        return -1;
    }
    if (r->top_logprobs < 0 || r->top_logprobs > 20) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_submit: top_logprobs must be 0..20, not %d", r->top_logprobs);
        return -1;
    }
    if (r->max_tokens < 0 || r->n_stop < 0 || (r->n_stop > 0 && !r->stop)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_engine_submit: max_tokens (%lld) and the stop strings (%d) must be >= 0",
                     (long long)r->max_tokens, r->n_stop);
        return -1;
    }
    for (int64_t i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= e->n_vocab) {
            wk_error_set(WK_ERR_INDEX, "wk_engine_submit: prompt token %lld is %d, outside the vocabulary of %lld",
                         (long long)i, r->prompt[i], (long long)e->n_vocab);
            return -1;
        }
    const int64_t cache = kvb_total(e->blocks) * e->bs, room = cache < e->context ? cache : e->context;
    const int64_t need = r->n_prompt + (r->max_tokens > 0 ? r->max_tokens - 1 : 0);
    if (need > room) {
        wk_error_set(WK_ERR_ARGUMENT,
                     "wk_engine_submit: the prompt of %lld tokens%s does not fit: the context is %lld and the KV "
                     "cache %lld positions",
                     (long long)r->n_prompt, r->max_tokens > 0 ? " with max_tokens" : "", (long long)e->context,
                     (long long)cache);
        return -1;
    }
    seq *s = seq_new(e, r);
    if (!s) return -1;
    pthread_mutex_lock(&e->mu);
    /* the id is read here: once the lock is let go the engine's thread may
       run the sequence to its end and free it */
    const int64_t id = s->id = e->next_id++;
    const bool ok = !e->stop && seq_list_push(&e->incoming, s);
    if (ok) {
        e->stats.waiting++;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (!ok) {
        const bool stopping = e->stop;
        seq_free(s);
        wk_error_set(stopping ? WK_ERR_ARGUMENT : WK_ERR_MEMORY, "wk_engine_submit: %s",
                     stopping ? "the engine is being freed" : "out of memory");
        return -1;
    }
    return id;
}

wk_status wk_engine_cancel(wk_engine *e, int64_t id)
{
    wk_clear_error();
    if (!e) return wk_error_set(WK_ERR_ARGUMENT, "wk_engine_cancel: the engine is NULL");
    pthread_mutex_lock(&e->mu);
    wk_status st = WK_OK;
    if (id <= 0 || id >= e->next_id) st = WK_ERR_ARGUMENT;
    else if (e->n_cancels == e->cap_cancels) {
        const int64_t cap = e->cap_cancels ? 2 * e->cap_cancels : 16;
        int64_t *p = realloc(e->cancels, (size_t)cap * sizeof *p);
        if (!p) st = WK_ERR_MEMORY;
        else {
            e->cancels = p;
            e->cap_cancels = cap;
        }
    }
    if (st == WK_OK) {
        e->cancels[e->n_cancels++] = id;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (st == WK_ERR_ARGUMENT) return wk_error_set(st, "wk_engine_cancel: no request has id %lld", (long long)id);
    if (st) return wk_error_set(st, "out of memory");
    return WK_OK;
}

/* ---- running --------------------------------------------------------------------- */

wk_status wk_engine_step(wk_engine *e, int64_t *active)
{
    wk_clear_error();
    if (!e) return wk_error_set(WK_ERR_ARGUMENT, "wk_engine_step: the engine is NULL");
    pthread_mutex_lock(&e->mu);
    const bool busy = e->thread_on;
    pthread_mutex_unlock(&e->mu);
    if (busy) return wk_error_set(WK_ERR_ARGUMENT, "wk_engine_step: the engine's own thread is stepping");
    return engine_step(e, active);
}

static void *engine_main(void *arg)
{
    wk_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stop && e->incoming.n == 0 && e->n_cancels == 0 && e->waiting.n == 0 && e->running.n == 0)
            pthread_cond_wait(&e->cv, &e->mu);
        const bool stop = e->stop;
        pthread_mutex_unlock(&e->mu);
        if (stop) break;
        engine_step(e, NULL);   /* its errors went to the sequences of the step */
    }
    return NULL;
}

wk_status wk_engine_start(wk_engine *e)
{
    wk_clear_error();
    if (!e) return wk_error_set(WK_ERR_ARGUMENT, "wk_engine_start: the engine is NULL");
    pthread_mutex_lock(&e->mu);
    wk_status st = WK_OK;
    if (e->thread_on) st = wk_error_set(WK_ERR_ARGUMENT, "wk_engine_start: already started");
    else if (pthread_create(&e->thread, NULL, engine_main, e) != 0)
        st = wk_error_set(WK_ERR_BACKEND, "wk_engine_start: could not start a thread");
    else e->thread_on = true;
    pthread_mutex_unlock(&e->mu);
    return st;
}

void wk_engine_get_stats(wk_engine *e, wk_engine_stats *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    *s = e->stats;
    pthread_mutex_unlock(&e->mu);
}
