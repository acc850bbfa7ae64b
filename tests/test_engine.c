/* test_engine.c — the batched engine (wick_engine.h), on the cpu and every
 * GPU, against sequences run alone by wk_llm_generate (the single-stream
 * path: its own caches and attention):
 *   engine/<dev>/<arch>          greedy sequences of different prompts and
 *                                lengths, arriving at different steps, with
 *                                chunked prefill (chunks of 3 and budgets of
 *                                7 tokens a step): each one's tokens equal
 *                                its tokens alone; every block back at the end
 *   engine/<dev>/preemption      a cache too small for all of them at once:
 *                                sequences are preempted and recomputed, the
 *                                tokens unchanged
 *   engine/<dev>/prefix          requests sharing a long prefix take its
 *                                blocks from the prefix cache (counted), with
 *                                the tokens of their own run; different
 *                                suffixes never see each other's blocks
 *   engine/cancel                cancellation while waiting, in prefill and in
 *                                decode: the last event says cancelled, the
 *                                others run on, every block comes back
 *   engine/limits                max_tokens, the end of the context, an end
 *                                token, seeded sampling repeated, logprobs
 *                                against the single-stream logits
 *   engine/errors                bad requests and options: clear errors
 *   engine/thread                a thousand requests from four threads to
 *                                the engine's own thread, some cancelled:
 *                                every one ends exactly once
 *   engine/real/<model>          the real SmolLM2 and Gemma 3 270M (when
 *                                present): greedy replies in a batch equal
 *                                their replies alone; a stop string
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "t_llm_model.h"
#include "wick_engine.h"

/* what the events of one request said */
typedef struct got {
    int32_t tok[256];
    int n, done, bad;
    wk_finish finish;
    char text[1024];
    size_t text_n;
    int64_t cached;
    pthread_mutex_t *mu;
} got;

static void on_event(void *user, const wk_engine_event *ev)
{
    got *g = user;
    if (g->mu) pthread_mutex_lock(g->mu);
    if (g->done) g->bad++;   /* an event after the last */
    if (ev->done) {
        g->done++;
        g->finish = ev->finish;
        g->cached = ev->cached_tokens;
    } else if (g->n < 256) g->tok[g->n++] = ev->token;
    if (ev->len && g->text_n + ev->len < sizeof g->text) {
        memcpy(g->text + g->text_n, ev->text, ev->len);
        g->text_n += ev->len;
    }
    if (g->mu) pthread_mutex_unlock(g->mu);
}

static bool collect_token(void *user, int32_t token, const char *text, size_t len)
{
    got *g = user;
    if (token >= 0 && g->n < 256) g->tok[g->n++] = token;
    if (len && g->text_n + len < sizeof g->text) {
        memcpy(g->text + g->text_n, text, len);
        g->text_n += len;
    }
    return true;
}

/* logprob events: the first token's logprob kept; each greedy token must be
 * the first of its top list, the list in order */
static double lp_first;
static int lp_bad;
static void on_lp_event(void *user, const wk_engine_event *ev)
{
    got *g = user;
    if (!ev->done) {
        if (g->n == 0) lp_first = ev->logprob;
        bool ok = ev->n_top == 3 && ev->top_ids && ev->top_ids[0] == ev->token && ev->logprob <= 0 &&
                  fabs(ev->logprob - ev->top_logprobs[0]) < 1e-6;
        for (int i = 1; ok && i < ev->n_top; i++) ok = ev->top_logprobs[i] <= ev->top_logprobs[i - 1];
        lp_bad += !ok;
    }
    on_event(user, ev);
}

/* prompt alone, greedy, at most n tokens (wk_llm_generate) */
static bool alone(wk_llm *m, const int32_t *prompt, int64_t n_prompt, int64_t n, const char *stop, got *g)
{
    memset(g, 0, sizeof *g);
    wk_llm_rewind(m, 0);
    wk_generate_opts o = { .sampling = wk_sampling_greedy(), .max_tokens = n, .stop = stop ? &stop : NULL, .n_stop = !!stop };
    if (wk_llm_generate(m, prompt, n_prompt, &o, collect_token, g, NULL) != WK_OK) {
        t_fail("wk_llm_generate: %s", wk_last_error());
        return false;
    }
    return true;
}

static bool same_tokens(const got *a, const got *b, const char *what, int i)
{
    const bool eq = a->n == b->n && !memcmp(a->tok, b->tok, (size_t)a->n * sizeof a->tok[0]);
    if (!eq) {
        int k = 0;
        while (k < a->n && k < b->n && a->tok[k] == b->tok[k]) k++;
        t_fail("%s: request %d: %d tokens in the batch, %d alone; first difference at %d (%d vs %d)", what, i, a->n, b->n,
               k, k < a->n ? a->tok[k] : -1, k < b->n ? b->tok[k] : -1);
    }
    return eq;
}

/* steps until nothing is active (at most `limit`) */
static bool drain(wk_engine *e, int limit)
{
    int64_t active = 1;
    for (int i = 0; i < limit && active; i++)
        if (wk_engine_step(e, &active) != WK_OK) {
            t_fail("wk_engine_step: %s", wk_last_error());
            return false;
        }
    if (active) t_fail("%lld requests still active after %d steps", (long long)active, limit);
    return !active;
}

static void check_no_leak(wk_engine *e, const char *what)
{
    wk_engine_stats s;
    wk_engine_get_stats(e, &s);
    T_CHECK(s.blocks_used == 0 && s.running == 0 && s.waiting == 0,
            "%s: after every request ended, %lld blocks are held, %lld running, %lld waiting", what,
            (long long)s.blocks_used, (long long)s.running, (long long)s.waiting);
}

enum { NREQ = 6 };

typedef struct prompts {
    int32_t tok[NREQ][48];
    int len[NREQ], gen[NREQ];
} prompts;

static prompts make_prompts(int V, int shared)
{
    prompts p;
    for (int i = 0; i < NREQ; i++) {
        p.len[i] = (int)t_rng_int(t_r(), 1, 40);
        p.gen[i] = (int)t_rng_int(t_r(), 1, 12);
        for (int j = 0; j < 48; j++) p.tok[i][j] = i > 0 && j < shared ? p.tok[0][j] : (int32_t)t_rng_int(t_r(), 3, V - 1);
        if (shared) p.len[i] = shared + (int)t_rng_int(t_r(), 1, 6);
    }
    return p;
}

static wk_llm *load_test_model(const tmodel *tm, const char *path, wk_device *dev)
{
    if (!write_gguf(tm, path, WK_F32)) return NULL;
    wk_llm_options o = { .context = 64 };
    wk_llm *m = wk_llm_load(path, dev, &o);
    if (!m) t_fail("wk_llm_load: %s", wk_last_error());
    return m;
}

/* every request of p through one engine (arrivals spread over the first
 * steps) against each alone */
static void run_against_alone(wk_llm *m, const prompts *p, const wk_engine_options *eo, const char *what,
                              wk_engine_stats *stats_out, got *batch)
{
    got solo[NREQ];
    for (int i = 0; i < NREQ; i++)
        if (!alone(m, p->tok[i], p->len[i], p->gen[i], NULL, &solo[i])) return;
    wk_engine *e = wk_engine_new(m, eo);
    if (!e) {
        t_fail("%s: wk_engine_new: %s", what, wk_last_error());
        return;
    }
    memset(batch, 0, NREQ * sizeof *batch);
    int64_t active = 0;
    for (int i = 0; i < NREQ; i++) {   /* two at first, then one a step */
        const wk_request r = { .prompt = p->tok[i], .n_prompt = p->len[i], .max_tokens = p->gen[i], .on_event = on_event,
                               .user = &batch[i] };
        T_CHECK(wk_engine_submit(e, &r) > 0, "%s: submit %d: %s", what, i, wk_last_error());
        if (i >= 1) T_CHECK(wk_engine_step(e, &active) == WK_OK, "%s: step: %s", what, wk_last_error());
    }
    drain(e, 2000);
    for (int i = 0; i < NREQ; i++) {
        T_CHECK(batch[i].done == 1 && !batch[i].bad, "%s: request %d ended %d times (%d late events)", what, i,
                batch[i].done, batch[i].bad);
        same_tokens(&batch[i], &solo[i], what, i);
    }
    check_no_leak(e, what);
    if (stats_out) wk_engine_get_stats(e, stats_out);
    wk_engine_free(e);
}

static void check_arch(wk_device *dev, int arch)
{
    tcfg c = cfg_of(arch, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine.gguf");
    wk_llm *m = load_test_model(&tm, path, dev);
    if (m) {
        prompts p = make_prompts(c.V, 0);
        got batch[NREQ];
        const wk_engine_options eo = { .max_seqs = 4, .max_batch_tokens = 7, .prefill_chunk = 3, .block_size = 4 };
        run_against_alone(m, &p, &eo, arch_names[arch], NULL, batch);
    }
    wk_llm_free(m);
    rm_model(path);
}

static void check_preemption(wk_device *dev)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-pre.gguf");
    wk_llm *m = load_test_model(&tm, path, dev);
    if (m) {
        prompts p = make_prompts(c.V, 0);
        for (int i = 0; i < NREQ; i++) p.len[i] = 20 + i, p.gen[i] = 12;
        got batch[NREQ];
        wk_engine_stats st;
        /* 20 blocks of 4: two sequences of 32 positions at most at once */
        const wk_engine_options eo = { .max_seqs = 6, .max_batch_tokens = 64, .block_size = 4, .n_blocks = 20 };
        memset(&st, 0, sizeof st);
        run_against_alone(m, &p, &eo, "preemption", &st, batch);
        T_CHECK(st.preemptions > 0, "no sequence was preempted (%lld steps)", (long long)st.steps);
    }
    wk_llm_free(m);
    rm_model(path);
}

static void check_prefix(wk_device *dev)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-prefix.gguf");
    wk_llm *m = load_test_model(&tm, path, dev);
    if (m) {
        prompts p = make_prompts(c.V, 24);   /* 24 shared tokens: 6 blocks of 4 */
        got batch[NREQ];
        wk_engine_stats st = { 0 };
        const wk_engine_options eo = { .max_seqs = 6, .max_batch_tokens = 64, .block_size = 4 };
        run_against_alone(m, &p, &eo, "prefix", &st, batch);
        int64_t cached = 0;
        for (int i = 0; i < NREQ; i++) cached += batch[i].cached;
        T_CHECK(st.cached_tokens > 0 && cached == st.cached_tokens,
                "the shared prefix was not taken from the cache (%lld tokens; the events say %lld)",
                (long long)st.cached_tokens, (long long)cached);
        T_CHECK(st.blocks_cached > 0, "no block kept in the prefix cache at the end");
        /* without the prefix cache: the same tokens, nothing cached */
        got plain[NREQ];
        const wk_engine_options e2 = { .max_seqs = 6, .max_batch_tokens = 64, .block_size = 4, .no_prefix_cache = true };
        run_against_alone(m, &p, &e2, "prefix off", &st, plain);
        T_CHECK(st.cached_tokens == 0 && st.blocks_cached == 0, "prefix cache off: %lld tokens cached",
                (long long)st.cached_tokens);
    }
    wk_llm_free(m);
    rm_model(path);
}

static void check_cancel(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-cancel.gguf");
    wk_llm *m = load_test_model(&tm, path, t_dev());
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .max_seqs = 2, .max_batch_tokens = 4, .block_size = 4 }) : NULL;
    if (m) T_CHECK(e != NULL, "wk_engine_new: %s", wk_last_error());
    if (e) {
        int32_t prompt[20];
        for (int i = 0; i < 20; i++) prompt[i] = (int32_t)t_rng_int(t_r(), 3, c.V - 1);
        got g[4];
        memset(g, 0, sizeof g);
        int64_t id[4];
        for (int i = 0; i < 4; i++) {
            const wk_request r = { .prompt = prompt, .n_prompt = 20, .max_tokens = 30, .ignore_eog = true,
                                   .on_event = on_event, .user = &g[i] };
            id[i] = wk_engine_submit(e, &r);
        }
        int64_t active;
        wk_engine_step(e, &active);                  /* 0 in prefill (4 of 20), 1 waits (max_seqs 2... budget) */
        T_CHECK(wk_engine_cancel(e, id[0]) == WK_OK, "cancel in prefill: %s", wk_last_error());
        T_CHECK(wk_engine_cancel(e, id[3]) == WK_OK, "cancel while waiting: %s", wk_last_error());
        for (int i = 0; i < 12; i++) wk_engine_step(e, &active);   /* 1 decodes by now */
        T_CHECK(g[1].n > 0 && !g[1].done, "request 1 decodes (%d tokens, done %d)", g[1].n, g[1].done);
        T_CHECK(wk_engine_cancel(e, id[1]) == WK_OK, "cancel in decode: %s", wk_last_error());
        drain(e, 500);
        T_CHECK(g[0].done == 1 && g[0].finish == WK_FINISH_CANCELLED && g[0].n == 0, "cancelled in prefill: %s, %d tokens",
                wk_finish_name(g[0].finish), g[0].n);
        T_CHECK(g[3].done == 1 && g[3].finish == WK_FINISH_CANCELLED && g[3].n == 0, "cancelled while waiting: %s",
                wk_finish_name(g[3].finish));
        T_CHECK(g[1].done == 1 && g[1].finish == WK_FINISH_CANCELLED && g[1].n < 30, "cancelled in decode: %s, %d tokens",
                wk_finish_name(g[1].finish), g[1].n);
        T_CHECK(g[2].done == 1 && g[2].finish == WK_FINISH_LENGTH && g[2].n == 30, "the other one: %s, %d tokens",
                wk_finish_name(g[2].finish), g[2].n);
        T_CHECK(wk_engine_cancel(e, id[2]) == WK_OK, "cancelling an ended request is harmless");
        T_CHECK(wk_engine_cancel(e, 999) == WK_ERR_ARGUMENT, "an unknown id: %s", wk_last_error());
        drain(e, 10);
        check_no_leak(e, "cancel");
        /* freeing with requests in flight: each ends once, cancelled */
        got h[3];
        memset(h, 0, sizeof h);
        for (int i = 0; i < 3; i++) {
            const wk_request r = { .prompt = prompt, .n_prompt = 20, .max_tokens = 30, .on_event = on_event, .user = &h[i] };
            wk_engine_submit(e, &r);
        }
        wk_engine_step(e, &active);
        wk_engine_free(e);
        for (int i = 0; i < 3; i++)
            T_CHECK(h[i].done == 1 && h[i].finish == WK_FINISH_CANCELLED, "freed engine: request %d ended %d times (%s)",
                    i, h[i].done, wk_finish_name(h[i].finish));
    }
    wk_llm_free(m);
    rm_model(path);
}

static void check_limits(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-lim.gguf");
    wk_llm *m = load_test_model(&tm, path, t_dev());   /* context 64 */
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .block_size = 4 }) : NULL;
    if (e) {
        int32_t prompt[60];
        for (int i = 0; i < 60; i++) prompt[i] = (int32_t)t_rng_int(t_r(), 3, c.V - 1);
        got g[4];
        memset(g, 0, sizeof g);
        const wk_sampling samp = { .temperature = 0.9, .top_k = 20, .top_p = 0.95, .seed = 42 };
        const wk_request r0 = { .prompt = prompt, .n_prompt = 60, .ignore_eog = true, .on_event = on_event, .user = &g[0] };
        const wk_request r1 = { .prompt = prompt, .n_prompt = 5, .max_tokens = 7, .ignore_eog = true, .sampling = samp,
                                .on_event = on_event, .user = &g[1] };
        const wk_request r2 = { .prompt = prompt, .n_prompt = 5, .max_tokens = 7, .ignore_eog = true, .sampling = samp,
                                .on_event = on_event, .user = &g[2] };
        wk_engine_submit(e, &r0);
        wk_engine_submit(e, &r1);
        wk_engine_submit(e, &r2);
        drain(e, 200);
        T_CHECK(g[0].finish == WK_FINISH_LENGTH && g[0].n == 5, "to the context's end: %s after %d tokens (64 - 60 + 1)",
                wk_finish_name(g[0].finish), g[0].n);
        T_CHECK(g[1].finish == WK_FINISH_LENGTH && g[1].n == 7, "max_tokens 7: %s after %d", wk_finish_name(g[1].finish),
                g[1].n);
        T_CHECK(g[1].n == g[2].n && !memcmp(g[1].tok, g[2].tok, sizeof g[1].tok[0] * (size_t)g[1].n),
                "one seed, one prompt: the same draws in one batch");
        /* an end token: generation stops there (token 2 is the file's eos) */
        int32_t eos_prompt[3] = { 5, 6, 7 };
        got h;
        if (alone(m, eos_prompt, 3, 40, NULL, &h)) {
            memset(&g[3], 0, sizeof g[3]);
            const wk_request r3 = { .prompt = eos_prompt, .n_prompt = 3, .max_tokens = 40, .on_event = on_event, .user = &g[3] };
            wk_engine_submit(e, &r3);
            drain(e, 200);
            same_tokens(&g[3], &h, "end token", 3);
            T_CHECK(g[3].finish == (h.n < 40 ? WK_FINISH_STOP : WK_FINISH_LENGTH), "finish %s after %d tokens",
                    wk_finish_name(g[3].finish), g[3].n);
        }
        /* logprobs: the greedy token is the most likely; its log-probability
           that of the single-stream logits (first token: the prompt's last row) */
        got lp;
        memset(&lp, 0, sizeof lp);
        lp_first = NAN;
        const wk_request r4 = { .prompt = eos_prompt, .n_prompt = 3, .max_tokens = 4, .logprobs = true, .top_logprobs = 3,
                                .on_event = on_lp_event, .user = &lp };
        wk_engine_submit(e, &r4);
        drain(e, 100);
        float *row = t_mem((size_t)c.V * sizeof *row);
        wk_llm_rewind(m, 0);
        if (wk_llm_eval(m, eos_prompt, 3, false, row) == WK_OK) {
            double mx = row[0], sum = 0;
            for (int i = 1; i < c.V; i++) mx = row[i] > mx ? row[i] : mx;
            for (int i = 0; i < c.V; i++) sum += exp((double)row[i] - mx);
            const int32_t best = t_argmax(row, c.V);
            const double want = (double)row[best] - mx - log(sum);
            T_CHECK(lp.n > 0 && lp.tok[0] == best && fabs(lp_first - want) < 1e-4, "first token %d (logprob %.6f), "
                    "single stream %d (%.6f)", lp.n ? lp.tok[0] : -1, lp_first, best, want);
        }
        T_CHECK(lp_bad == 0, "%d events whose logprobs were not the top one's (greedy) or not in order", lp_bad);
        check_no_leak(e, "limits");
    }
    wk_engine_free(e);
    wk_llm_free(m);
    rm_model(path);
}

static void check_errors(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-err.gguf");
    wk_llm *m = load_test_model(&tm, path, t_dev());
    T_CHECK(!wk_engine_new(NULL, NULL) && strstr(wk_last_error(), "NULL"), "a NULL model: %s", wk_last_error());
    T_CHECK(!wk_engine_new(m, &(wk_engine_options){ .max_seqs = -1 }), "negative limits refused");
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .block_size = 4, .n_blocks = 8 }) : NULL;
    if (e) {
        int32_t prompt[40] = { 1, 2, 3 };
        wk_request r = { .prompt = prompt, .n_prompt = 3 };
        T_CHECK(wk_engine_submit(NULL, &r) < 0 && wk_engine_submit(e, NULL) < 0, "NULL engine or request");
        r.n_prompt = 0;
        T_CHECK(wk_engine_submit(e, &r) < 0 && wk_last_status() == WK_ERR_ARGUMENT, "an empty prompt: %s", wk_last_error());
        r.n_prompt = 3;
        prompt[1] = (int32_t)c.V;
        T_CHECK(wk_engine_submit(e, &r) < 0 && wk_last_status() == WK_ERR_INDEX, "a token outside the vocabulary: %s",
                wk_last_error());
        prompt[1] = 2;
        r.n_prompt = 33;   /* 8 blocks of 4: 32 positions */
        T_CHECK(wk_engine_submit(e, &r) < 0 && strstr(wk_last_error(), "does not fit"), "a prompt larger than the cache: %s",
                wk_last_error());
        r.n_prompt = 30;
        r.max_tokens = 10;
        T_CHECK(wk_engine_submit(e, &r) < 0 && strstr(wk_last_error(), "max_tokens"), "prompt + max_tokens too large: %s",
                wk_last_error());
        r.max_tokens = -1;
        T_CHECK(wk_engine_submit(e, &r) < 0, "negative max_tokens");
        r.max_tokens = 1;
        r.sampling.temperature = 1.0;
        r.sampling.top_p = 2.0;
        r.sampling.min_p = -1;
        const int64_t id = wk_engine_submit(e, &r);
        if (id < 0) T_CHECK(strlen(wk_last_error()) > 0, "bad sampling options: a message");
        r.sampling = wk_sampling_greedy();
        T_CHECK(wk_engine_step(NULL, NULL) == WK_ERR_ARGUMENT && wk_engine_cancel(NULL, 1) == WK_ERR_ARGUMENT,
                "NULL engine to step / cancel");
        drain(e, 100);
        check_no_leak(e, "errors");
    }
    wk_engine_free(e);
    wk_engine_free(NULL);
    wk_llm_free(m);
    rm_model(path);
}

/* ---- the KV pool exhausted ------------------------------------------------------------- */

/* A pool of 8 blocks of 4 (32 positions) under a context of 64: a request
 * whose prompt and max_tokens need more than the whole pool is refused at
 * submit with the sizes; one without max_tokens that outgrows the pool
 * ends with "length" where the pool ends, its tokens those of the same
 * prompt alone; a pool-sized prompt gets its one token; requests that fit
 * one at a time but not together preempt and still finish as alone; the
 * engine steps on cleanly after all of it and holds no block. */
/* prompt alone, greedy, n tokens past end tokens */
static bool alone_all(wk_llm *m, const int32_t *prompt, int64_t n_prompt, int64_t n, got *g)
{
    memset(g, 0, sizeof *g);
    wk_llm_rewind(m, 0);
    wk_generate_opts o = { .sampling = wk_sampling_greedy(), .max_tokens = n, .ignore_eog = true };
    if (wk_llm_generate(m, prompt, n_prompt, &o, collect_token, g, NULL) != WK_OK) {
        t_fail("wk_llm_generate: %s", wk_last_error());
        return false;
    }
    return true;
}

static void check_pool_exhausted(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-pool.gguf");
    wk_llm *m = load_test_model(&tm, path, t_dev());   /* context 64 */
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .block_size = 4, .n_blocks = 8 }) : NULL;
    if (e) {
        int32_t prompt[40];
        for (int i = 0; i < 40; i++) prompt[i] = (int32_t)t_rng_int(t_r(), 3, c.V - 1);
        wk_request r = { .prompt = prompt, .n_prompt = 20, .max_tokens = 20, .ignore_eog = true };
        T_CHECK(wk_engine_submit(e, &r) < 0 && wk_last_status() == WK_ERR_ARGUMENT && strstr(wk_last_error(), "32 positions"),
                "20 + 20 tokens in a pool of 32 positions: %s", wk_last_error());
        /* no max_tokens: to the pool's end (20 prompt tokens, then 32 - 20 + 1 generated) */
        got g, a;
        memset(&g, 0, sizeof g);
        r = (wk_request){ .prompt = prompt, .n_prompt = 20, .ignore_eog = true, .on_event = on_event, .user = &g };
        T_CHECK(wk_engine_submit(e, &r) > 0, "a request that fits: %s", wk_last_error());
        drain(e, 200);
        T_CHECK(g.done == 1 && g.bad == 0 && g.finish == WK_FINISH_LENGTH && g.n == 13,
                "outgrowing the pool: %d tokens, finish %s (want 13, length)", g.n, wk_finish_name(g.finish));
        if (alone_all(m, prompt, 20, 13, &a)) same_tokens(&g, &a, "to the pool's end", 0);
        /* a prompt of exactly the pool */
        memset(&g, 0, sizeof g);
        r.n_prompt = 32;
        T_CHECK(wk_engine_submit(e, &r) > 0, "a prompt of the pool's size: %s", wk_last_error());
        drain(e, 200);
        T_CHECK(g.done == 1 && g.finish == WK_FINISH_LENGTH && g.n == 1, "a pool-sized prompt: %d tokens, %s", g.n,
                wk_finish_name(g.finish));
        /* three requests of 20 positions each: one at a time fits, together they preempt */
        got h[3];
        memset(h, 0, sizeof h);
        for (int i = 0; i < 3; i++) {
            const wk_request ri = { .prompt = prompt + 5 * i, .n_prompt = 12, .max_tokens = 9, .ignore_eog = true,
                                    .on_event = on_event, .user = &h[i] };
            T_CHECK(wk_engine_submit(e, &ri) > 0, "request %d: %s", i, wk_last_error());
        }
        drain(e, 400);
        for (int i = 0; i < 3; i++) {
            T_CHECK(h[i].done == 1 && h[i].finish == WK_FINISH_LENGTH && h[i].n == 9, "request %d: %d tokens, %s", i,
                    h[i].n, wk_finish_name(h[i].finish));
            if (alone_all(m, prompt + 5 * i, 12, 9, &a)) same_tokens(&h[i], &a, "preempted in a full pool", i);
        }
        check_no_leak(e, "pool exhausted");
    }
    wk_engine_free(e);
    wk_llm_free(m);
    rm_model(path);
}

/* ---- many submitters, the engine's thread ----------------------------------------------- */

enum { NTH = 4, PER = 250 };

typedef struct sub_arg {
    wk_engine *e;
    got *g;
    int32_t *prompt;
    int V, fails;
} sub_arg;

static void *submitter(void *arg)
{
    sub_arg *a = arg;
    for (int i = 0; i < PER; i++) {
        const wk_request r = { .prompt = a->prompt + i % 7, .n_prompt = 1 + i % 9, .max_tokens = 1 + i % 5,
                               .ignore_eog = true, .on_event = on_event, .user = &a->g[i] };
        const int64_t id = wk_engine_submit(a->e, &r);
        if (id < 0) a->fails++;
        if (id > 0 && i % 6 == 0) wk_engine_cancel(a->e, id);
    }
    return NULL;
}

static void check_thread(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("engine-thr.gguf");
    wk_llm *m = load_test_model(&tm, path, t_dev());
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .max_seqs = 16, .block_size = 4, .n_blocks = 64 }) : NULL;
    if (e) {
        T_CHECK(wk_engine_start(e) == WK_OK, "wk_engine_start: %s", wk_last_error());
        T_CHECK(wk_engine_start(e) != WK_OK, "a second start is refused");
        T_CHECK(wk_engine_step(e, NULL) != WK_OK, "stepping while the engine's thread runs is refused");
        pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        got *g = t_mem(NTH * PER * sizeof *g);
        memset(g, 0, NTH * PER * sizeof *g);
        for (int i = 0; i < NTH * PER; i++) g[i].mu = &mu;
        int32_t prompt[16];
        for (int i = 0; i < 16; i++) prompt[i] = (int32_t)t_rng_int(t_r(), 3, c.V - 1);
        pthread_t th[NTH];
        sub_arg a[NTH];
        for (int t = 0; t < NTH; t++) {
            a[t] = (sub_arg){ .e = e, .g = g + t * PER, .prompt = prompt, .V = c.V };
            pthread_create(&th[t], NULL, submitter, &a[t]);
        }
        for (int t = 0; t < NTH; t++) pthread_join(th[t], NULL);
        int done = 0;
        for (int wait = 0; wait < 6000 && done < NTH * PER; wait++) {   /* at most 60 s */
            usleep(10000);
            pthread_mutex_lock(&mu);
            done = 0;
            for (int i = 0; i < NTH * PER; i++) done += g[i].done;
            pthread_mutex_unlock(&mu);
        }
        int fails = 0, twice = 0, late = 0;
        for (int t = 0; t < NTH; t++) fails += a[t].fails;
        for (int i = 0; i < NTH * PER; i++) twice += g[i].done > 1, late += g[i].bad;
        T_CHECK(fails == 0 && done == NTH * PER && !twice && !late,
                "%d submissions failed, %d of %d ended, %d twice, %d late events", fails, done, NTH * PER, twice, late);
        wk_engine_stats st;
        wk_engine_get_stats(e, &st);
        T_CHECK(st.finished == NTH * PER && st.blocks_used == 0, "stats: %lld finished, %lld blocks held",
                (long long)st.finished, (long long)st.blocks_used);
    }
    wk_engine_free(e);
    wk_llm_free(m);
    rm_model(path);
}

/* ---- real models ---------------------------------------------------------------------------- */

/* Under AddressSanitizer (make asan) a real model runs about 15 times
 * slower: there the case takes two prompts of 6 tokens on SmolLM2 only
 * (the plain build runs them all). */
#if defined(__SANITIZE_ADDRESS__)
#define T_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_SANITIZED 1
#endif
#endif
#ifndef T_SANITIZED
#define T_SANITIZED 0
#endif

static void check_real(const char *env, const char *file)
{
    char path[4096];
    if (!t_model_path(env, file, path, sizeof path)) {
        printf("  engine/real: no model at %s (tools/fetch-default-model.sh): not run\n", path);
        return;
    }
    wk_llm_options lo = { .context = 512 };
    wk_llm *m = wk_llm_load(path, t_dev(), &lo);
    if (!m) {
        t_fail("wk_llm_load(%s): %s", path, wk_last_error());
        return;
    }
    static const char *const texts[] = { "The capital of France is", "Once upon a time, in a small village,",
                                         "def fibonacci(n):", "The three primary colors are",
                                         "Water boils at a temperature of" };
    enum { N_ALL = 5 };
    const int N = T_SANITIZED ? 2 : N_ALL, GEN = T_SANITIZED ? 6 : 16;
    got solo[N_ALL], batch[N_ALL];
    int32_t *ids[N_ALL] = { 0 };
    int64_t n[N_ALL] = { 0 };
    bool ok = true;
    for (int i = 0; i < N && ok; i++) {
        ok = wk_llm_tokenize(m, texts[i], strlen(texts[i]), true, &ids[i], &n[i]) == WK_OK &&
             alone(m, ids[i], n[i], GEN, NULL, &solo[i]);
        if (!ok) t_fail("%s: %s", texts[i], wk_last_error());
    }
    wk_engine *e = ok ? wk_engine_new(m, &(wk_engine_options){ .max_batch_tokens = 16, .prefill_chunk = 5 }) : NULL;
    if (e) {
        memset(batch, 0, sizeof batch);
        for (int i = 0; i < N; i++) {
            const wk_request r = { .prompt = ids[i], .n_prompt = n[i], .max_tokens = GEN, .on_event = on_event,
                                   .user = &batch[i] };
            wk_engine_submit(e, &r);
            wk_engine_step(e, NULL);
        }
        drain(e, 1000);
        for (int i = 0; i < N; i++) {
            same_tokens(&batch[i], &solo[i], file, i);
            T_CHECK(batch[i].text_n == solo[i].text_n && !memcmp(batch[i].text, solo[i].text, solo[i].text_n),
                    "%s: request %d's text differs: \"%.*s\" vs \"%.*s\"", file, i, (int)batch[i].text_n, batch[i].text,
                    (int)solo[i].text_n, solo[i].text);
        }
        /* a stop string from the reply alone: the text ends before it, as wk_llm_generate's */
        if (solo[0].text_n > 8) {
            char stop[4] = { 0 };
            memcpy(stop, solo[0].text + solo[0].text_n / 2, 3);
            got s1, s2;
            memset(&s2, 0, sizeof s2);
            const char *stops[1] = { stop };
            if (alone(m, ids[0], n[0], GEN, stop, &s1)) {
                const wk_request r = { .prompt = ids[0], .n_prompt = n[0], .max_tokens = GEN, .stop = stops, .n_stop = 1,
                                       .on_event = on_event, .user = &s2 };
                wk_engine_submit(e, &r);
                drain(e, 200);
                T_CHECK(s2.finish == WK_FINISH_STOP && s2.text_n == s1.text_n && !memcmp(s2.text, s1.text, s1.text_n) &&
                            !strstr(s2.text, stop),
                        "stop string \"%s\": %s, \"%.*s\" vs alone \"%.*s\"", stop, wk_finish_name(s2.finish),
                        (int)s2.text_n, s2.text, (int)s1.text_n, s1.text);
            }
        }
        check_no_leak(e, file);
    }
    wk_engine_free(e);
    for (int i = 0; i < N; i++) free(ids[i]);
    wk_llm_free(m);
}

static void on_device(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    for (int a = 0; a < 4; a++)
        if (t_case("engine/%s/%s", name, arch_names[a])) check_arch(dev, a);
    if (t_case("engine/%s/preemption", name)) check_preemption(dev);
    if (t_case("engine/%s/prefix", name)) check_prefix(dev);
}

T_SUITE(engine)
{
    on_device(t_dev(), "cpu", NULL);
    t_each_gpu(on_device, NULL);
    if (t_case("engine/cancel")) check_cancel();
    if (t_case("engine/limits")) check_limits();
    if (t_case("engine/pool_exhausted")) check_pool_exhausted();
    if (t_case("engine/errors")) check_errors();
    if (t_case("engine/thread")) check_thread();
    if (t_case("engine/real/smollm2")) check_real("WICK_SMOLLM2", "SmolLM2-135M-Instruct.Q4_1.gguf");
    if (t_case("engine/real/gemma3")) {
        if (T_SANITIZED) printf("  engine/real/gemma3: not under the sanitizers (the plain build runs it)\n");
        else check_real("WICK_GEMMA3", "gemma-3-270m-q4_k_m.gguf");
    }
}
