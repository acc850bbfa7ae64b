/* step.c — one step of the batched engine (continuous batching):
 *
 *   1. take the requests submitted and the cancellations since the last
 *      step (a queue under the engine's mutex); cancelled ones end now;
 *   2. schedule, under the step's token budget, first come first served:
 *      a. every running sequence that decodes puts its one token in
 *         (a block for it taken; when none is left the newest running
 *         sequence is preempted: its blocks go back, it returns to the
 *         head of the waiting queue and is recomputed when readmitted);
 *      b. running sequences still in their prompt put a chunk in;
 *      c. waiting sequences are admitted while the limits and the free
 *         blocks allow: their prompt's full blocks that the prefix cache
 *         holds are shared (no compute), a first chunk of the rest goes in;
 *   3. one forward pass of the flat batch (wk_llm_eval_batch): logits for
 *      the rows that end a sequence's tokens, or only their argmax when
 *      every such sequence is greedy;
 *   4. each sequence that got a row samples its next token with its own
 *      sampler (a sequence with a grammar from the tokens its grammar
 *      allows: the others' logits -inf) and reports it; it finishes on an
 *      end token, a stop string, its grammar's end, its token limit or the
 *      context's end; finished sequences give their blocks back (full ones
 *      stay in the prefix cache).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"

/* ---- blocks of a sequence ------------------------------------------------------ */

/* blocks for positions < upto; false when the pool has none left (the
 * blocks taken so far stay with the sequence) */
static bool reserve(wk_engine *e, seq *s, int64_t upto)
{
    const int64_t need = (upto + e->bs - 1) / e->bs;
    if (need > s->cap_blocks) {
        const int64_t cap = need + 16;
        int32_t *p = realloc(s->blocks, (size_t)cap * sizeof *p);
        if (!p) return false;
        s->blocks = p;
        s->cap_blocks = cap;
    }
    while (s->n_blocks < need) {
        const int32_t id = kvb_alloc(e->blocks);
        if (id < 0) return false;
        s->blocks[s->n_blocks++] = id;
    }
    return true;
}

static void release_blocks(wk_engine *e, seq *s)
{
    for (int64_t i = 0; i < s->n_blocks; i++) kvb_release(e->blocks, s->blocks[i]);
    s->n_blocks = s->n_published = 0;
    s->last_key = 0;
}

/* the full blocks whose positions are computed, into the prefix cache */
static void publish(wk_engine *e, seq *s)
{
    if (!e->prefix_cache) return;
    while ((s->n_published + 1) * e->bs <= s->n_computed) {
        const int32_t *t = s->tokens + s->n_published * e->bs;
        const uint64_t key = kvb_hash(e->blocks, s->last_key, t);
        kvb_publish(e->blocks, s->blocks[s->n_published], key, s->last_key, t);
        s->last_key = key;
        s->n_published++;
    }
}

/* a new (or recomputed) sequence takes the blocks of its leading tokens
 * that the prefix cache holds; at least its last token is left to compute
 * (its logits are wanted) */
static void take_prefix(wk_engine *e, seq *s)
{
    while (e->prefix_cache && (s->n_blocks + 1) * e->bs <= s->n_tokens - 1) {
        if (s->n_blocks == s->cap_blocks) {
            int32_t *p = realloc(s->blocks, (size_t)(s->cap_blocks + 16) * sizeof *p);
            if (!p) break;
            s->blocks = p;
            s->cap_blocks += 16;
        }
        const int32_t *t = s->tokens + s->n_blocks * e->bs;
        const uint64_t key = kvb_hash(e->blocks, s->last_key, t);
        const int32_t id = kvb_lookup(e->blocks, key, s->last_key, t);
        if (id < 0) break;
        s->blocks[s->n_blocks++] = id;
        s->last_key = key;
        s->n_published = s->n_blocks;
        s->n_computed = s->n_blocks * e->bs;
    }
}

/* ---- ending ------------------------------------------------------------------------ */

/* lp: the token's log-probabilities (wk_request.logprobs), or NULL */
typedef struct tok_lp {
    double lp;
    int n;
    int32_t ids[20];
    float lps[20];
} tok_lp;

static void emit(const seq *s, int32_t tok, const char *text, size_t len, bool done, wk_finish why, const char *error,
                 const tok_lp *lp)
{
    if (!s->req.on_event) return;
    const wk_engine_event ev = { .id = s->id, .token = tok, .text = text, .len = len, .done = done, .finish = why,
                                 .error = error, .prompt_tokens = s->n_prompt, .gen_tokens = s->n_gen,
                                 .cached_tokens = s->n_cached, .logprob = lp ? lp->lp : 0, .n_top = lp ? lp->n : 0,
                                 .top_ids = lp ? lp->ids : NULL, .top_logprobs = lp ? lp->lps : NULL };
    s->req.on_event(s->req.user, &ev);
}

void engine_finish(wk_engine *e, seq *s, wk_finish why, const char *error)
{
    const char *rest = "";
    size_t rn = 0;
    if (why != WK_FINISH_ERROR && !s->cancel && s->text && !s->stop_string) wk_text_out_flush(s->text, &rest, &rn);
    emit(s, -1, rest, rn, true, why, error, NULL);
    release_blocks(e, s);
    pthread_mutex_lock(&e->mu);
    e->stats.finished++;
    pthread_mutex_unlock(&e->mu);
    seq_free(s);
}

/* ---- 1. what was submitted and cancelled ----------------------------------------- */

static void take_submitted(wk_engine *e)
{
    int64_t n_cancels = 0, *cancels = NULL, moved = 0;
    pthread_mutex_lock(&e->mu);
    while (moved < e->incoming.n && seq_list_push(&e->waiting, e->incoming.s[moved])) moved++;
    /* (out of memory: the rest waits for the next step) */
    if (e->incoming.n > moved)
        memmove(e->incoming.s, e->incoming.s + moved, (size_t)(e->incoming.n - moved) * sizeof *e->incoming.s);
    e->incoming.n -= moved;
    if (e->n_cancels) {
        cancels = malloc((size_t)e->n_cancels * sizeof *cancels);
        if (cancels) {
            memcpy(cancels, e->cancels, (size_t)e->n_cancels * sizeof *cancels);
            n_cancels = e->n_cancels;
            e->n_cancels = 0;
        }
    }
    pthread_mutex_unlock(&e->mu);
    seq_list *lists[2] = { &e->running, &e->waiting };
    for (int64_t c = 0; c < n_cancels; c++)
        for (int l = 0; l < 2; l++)
            for (int64_t i = 0; i < lists[l]->n; i++)
                if (lists[l]->s[i]->id == cancels[c]) lists[l]->s[i]->cancel = true;
    free(cancels);
    for (int l = 0; l < 2; l++)
        for (int64_t i = 0; i < lists[l]->n;)
            if (lists[l]->s[i]->cancel) {
                seq *s = lists[l]->s[i];
                seq_list_remove_at(lists[l], i);
                engine_finish(e, s, WK_FINISH_CANCELLED, NULL);
            } else i++;
}

/* ---- 2. the schedule ---------------------------------------------------------------- */

/* the newest running sequence back to the head of the waiting queue, its
 * blocks freed (recomputed when readmitted) */
static void preempt_newest(wk_engine *e)
{
    seq *s = e->running.s[e->running.n - 1];
    e->running.n--;
    release_blocks(e, s);
    s->n_computed = 0;
    s->chunk = 0;
    if (!seq_list_push_front(&e->waiting, s)) {   /* out of memory: it cannot wait; it ends */
        engine_finish(e, s, WK_FINISH_ERROR, "out of memory while preempting the sequence");
        return;
    }
    pthread_mutex_lock(&e->mu);
    e->stats.preemptions++;
    pthread_mutex_unlock(&e->mu);
}

/* tokens of this step; 0 when nothing can run */
static int64_t schedule(wk_engine *e)
{
    int64_t budget = e->max_tokens;
    for (int64_t i = 0; i < e->running.n; i++) e->running.s[i]->chunk = 0;
    /* a. decode tokens, oldest first; the newest give way when blocks run out */
    for (int64_t i = 0; i < e->running.n && budget > 0; i++) {
        seq *s = e->running.s[i];
        if (s->n_tokens - s->n_computed != 1) continue;
        while (!reserve(e, s, s->n_computed + 1) && e->running.n - 1 > i) preempt_newest(e);
        if (s->n_blocks * e->bs < s->n_computed + 1) {   /* it is the newest and nothing is left: it waits */
            preempt_newest(e);
            break;
        }
        s->chunk = 1;
        budget--;
    }
    /* b. chunks of prompts already running, within the blocks they can get */
    for (int64_t i = 0; i < e->running.n && budget > 0; i++) {
        seq *s = e->running.s[i];
        int64_t k = s->n_tokens - s->n_computed;
        if (s->chunk || k <= 1) continue;
        k = k < e->chunk ? k : e->chunk;
        k = k < budget ? k : budget;
        if (!reserve(e, s, s->n_computed + k)) k = s->n_blocks * e->bs - s->n_computed;
        if (k <= 0) continue;
        s->chunk = k;
        budget -= k;
    }
    /* c. admissions, first come first served */
    while (e->waiting.n > 0 && e->running.n < e->max_seqs && budget > 0) {
        seq *s = e->waiting.s[0];
        if (s->n_blocks == 0) {
            take_prefix(e, s);
            if (s->n_gen == 0 && s->n_computed > s->n_cached) {   /* a first admission's shared prompt */
                pthread_mutex_lock(&e->mu);
                e->stats.cached_tokens += s->n_computed - s->n_cached;
                pthread_mutex_unlock(&e->mu);
                s->n_cached = s->n_computed;
            }
        }
        int64_t k = s->n_tokens - s->n_computed;
        k = k < e->chunk ? k : e->chunk;
        k = k < budget ? k : budget;
        if (!reserve(e, s, s->n_computed + k)) {   /* not now: what it took goes back */
            release_blocks(e, s);
            s->n_computed = 0;
            break;
        }
        seq_list_remove_at(&e->waiting, 0);
        if (!seq_list_push(&e->running, s)) {
            engine_finish(e, s, WK_FINISH_ERROR, "out of memory while admitting the sequence");
            continue;
        }
        s->chunk = k;
        budget -= k;
    }
    return e->max_tokens - budget;
}

/* ---- 3. the batch --------------------------------------------------------------------- */

static bool fit(int32_t **p, int64_t *cap, int64_t n)
{
    if (n <= *cap) return true;
    int32_t *q = realloc(*p, (size_t)n * sizeof *q);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

/* the step's arrays; the rows whose logits are wanted in out (n_out) */
static bool build(wk_engine *e, int64_t T, wk_llm_batch *b)
{
    int64_t rows = 0, mb = 1, n_out = 0;
    for (int64_t i = 0; i < e->running.n; i++) {
        seq *s = e->running.s[i];
        s->row = s->chunk ? rows++ : -1;
        if (s->chunk && s->n_blocks > mb) mb = s->n_blocks;
    }
    int64_t cap = e->b_cap, cap2 = e->b_cap, cap3 = e->b_cap, cap4 = e->b_out_cap, cap5 = e->b_out_cap;
    if (!fit(&e->b_tok, &cap, T) || !fit(&e->b_pos, &cap2, T) || !fit(&e->b_seq, &cap3, T) ||
        !fit(&e->b_out, &cap4, rows) || !fit(&e->b_best, &cap5, rows) || !fit(&e->b_table, &e->b_table_cap, rows * mb))
        return false;
    e->b_cap = cap < cap2 ? cap : cap2 < cap3 ? cap2 : cap3;
    e->b_out_cap = cap4 < cap5 ? cap4 : cap5;
    int64_t t = 0;
    for (int64_t i = 0; i < e->running.n; i++) {
        seq *s = e->running.s[i];
        if (!s->chunk) continue;
        for (int64_t j = 0; j < s->chunk; j++, t++) {
            e->b_tok[t] = s->tokens[s->n_computed + j];
            e->b_pos[t] = (int32_t)(s->n_computed + j);
            e->b_seq[t] = (int32_t)s->row;
        }
        for (int64_t j = 0; j < mb; j++) e->b_table[s->row * mb + j] = j < s->n_blocks ? s->blocks[j] : -1;
        if (s->n_computed + s->chunk == s->n_tokens) e->b_out[n_out++] = (int32_t)(t - 1);
    }
    *b = (wk_llm_batch){ .n_tokens = T, .tokens = e->b_tok, .pos = e->b_pos, .seq = e->b_seq, .n_seqs = rows,
                         .max_blocks = mb, .block_table = e->b_table, .n_out = n_out, .out = e->b_out };
    return true;
}

/* ---- 4. sampling and reporting ---------------------------------------------------------- */

/* A token for s from the tokens its grammar allows: the others' logits in
 * row become -inf before its sampler draws. lp (or NULL): the token's
 * log-probabilities under the row as the model gave it. -1 with the
 * message set when no token is allowed or memory runs out. */
static int32_t sample_constrained(wk_engine *e, seq *s, float *row, tok_lp *lp)
{
    const int64_t V = e->n_vocab;
    if (!e->gvocab) {   /* once per engine, on the stepping thread */
        e->gvocab = wk_grammar_vocab_new(e->m);
        e->gbits = e->gvocab ? calloc((size_t)(V + 31) / 32 + 1, sizeof *e->gbits) : NULL;
        if (!e->gbits) {
            if (e->gvocab) wk_error_set(WK_ERR_MEMORY, "out of memory");
            wk_grammar_vocab_free(e->gvocab);
            e->gvocab = NULL;
            return -1;
        }
    }
    const int64_t k = wk_grammar_state_mask(s->gs, e->gvocab, e->gbits);
    if (k < 0) return -1;
    if (k == 0) {
        wk_error_set(WK_ERR_ARGUMENT, "the grammar allows no token of the vocabulary here");
        return -1;
    }
    float *raw = NULL;
    if (lp) {   /* log-probabilities come from the row as it was */
        if (!(raw = malloc((size_t)V * sizeof *raw))) {
            wk_error_set(WK_ERR_MEMORY, "out of memory");
            return -1;
        }
        memcpy(raw, row, (size_t)V * sizeof *raw);
    }
    const uint32_t *bits = e->gbits;
    for (int64_t t = 0; t < V; t++)
        if (!(bits[t / 32] >> (t % 32) & 1)) row[t] = -INFINITY;
    const int32_t tok = wk_sampler_sample(s->sampler, row);
    if (tok >= 0 && !(bits[tok / 32] >> (tok % 32) & 1)) {   /* every allowed logit NaN or -inf */
        free(raw);
        wk_error_set(WK_ERR_ARGUMENT, "the logits of the tokens the grammar allows are not finite");
        return -1;
    }
    if (lp && tok >= 0) lp->lp = wk_logprobs(raw, V, tok, lp->n, lp->ids, lp->lps);
    free(raw);
    return tok;
}

/* s's next token (lp: its log-probabilities, or NULL): reported, and its
 * end if it is one; true when s ends */
static bool take_token(wk_engine *e, seq *s, int32_t tok, const tok_lp *lp)
{
    if (tok < 0) {
        engine_finish(e, s, WK_FINISH_ERROR, "sampling failed");
        return true;
    }
    /* with a grammar an end token comes only once its text is complete:
       it ends the request even with ignore_eog */
    if ((!s->req.ignore_eog || s->gs) && wk_llm_is_eog(e->m, tok)) {
        engine_finish(e, s, WK_FINISH_STOP, NULL);
        return true;
    }
    if (s->n_tokens == s->cap) {
        int32_t *p = realloc(s->tokens, (size_t)(2 * s->cap) * sizeof *p);
        if (!p) {
            engine_finish(e, s, WK_FINISH_ERROR, "out of memory");
            return true;
        }
        s->tokens = p;
        s->cap *= 2;
    }
    if (s->gs && wk_grammar_state_accept_token(s->gs, e->gvocab, tok) != WK_OK) {
        engine_finish(e, s, WK_FINISH_ERROR, wk_last_error());
        return true;
    }
    s->tokens[s->n_tokens++] = tok;
    s->n_gen++;
    wk_sampler_accept_output(s->sampler, tok);
    const char *text;
    size_t len;
    bool hit;
    if (wk_text_out_push(s->text, tok, &text, &len, &hit) != WK_OK) {
        engine_finish(e, s, WK_FINISH_ERROR, wk_last_error());
        return true;
    }
    emit(s, tok, text, len, false, WK_FINISH_NONE, NULL, lp);
    const int64_t room = kvb_total(e->blocks) * e->bs < e->context ? kvb_total(e->blocks) * e->bs : e->context;
    if (hit) {
        s->stop_string = true;   /* what follows the stop string is never passed on */
        engine_finish(e, s, WK_FINISH_STOP, NULL);
    }
    else if (s->gs && wk_grammar_state_finished(s->gs))   /* the grammar's text is whole and nothing may follow */
        engine_finish(e, s, WK_FINISH_STOP, NULL);
    else if ((s->req.max_tokens > 0 && s->n_gen >= s->req.max_tokens) || s->n_tokens > room)
        engine_finish(e, s, WK_FINISH_LENGTH, NULL);
    else return false;
    return true;
}

static void update_stats(wk_engine *e, int64_t steps, int64_t prompt, int64_t gen, int64_t *active)
{
    pthread_mutex_lock(&e->mu);
    wk_engine_stats *st = &e->stats;
    st->steps += steps;
    st->waiting = e->waiting.n + e->incoming.n;
    st->running = e->running.n;
    st->blocks_used = kvb_used(e->blocks);
    st->blocks_cached = kvb_cached(e->blocks);
    st->prompt_tokens += prompt;
    st->gen_tokens += gen;
    if (active) *active = st->waiting + st->running;
    pthread_mutex_unlock(&e->mu);
}

wk_status engine_step(wk_engine *e, int64_t *active)
{
    take_submitted(e);
    int64_t T = schedule(e);
    if (T == 0 && e->running.n > 0) {   /* every running sequence waits for blocks: the newest gives way */
        preempt_newest(e);
        T = schedule(e);
    }
    wk_status st = WK_OK;
    int64_t prompt = 0, gen = 0;
    wk_llm_batch b;
    if (T > 0 && !build(e, T, &b)) st = wk_error_set(WK_ERR_MEMORY, "out of memory for a step of %lld tokens", (long long)T);
    bool greedy = true;
    for (int64_t i = 0; st == WK_OK && T > 0 && i < e->running.n; i++) {
        const seq *s = e->running.s[i];
        if (s->chunk && s->n_computed + s->chunk == s->n_tokens) greedy = greedy && s->greedy;
    }
    if (st == WK_OK && T > 0 && !greedy && b.n_out > e->logits_rows) {
        float *p = realloc(e->logits, (size_t)(b.n_out * e->n_vocab) * sizeof *p);
        if (!p) st = wk_error_set(WK_ERR_MEMORY, "out of memory for %lld rows of logits", (long long)b.n_out);
        else {
            e->logits = p;
            e->logits_rows = b.n_out;
        }
    }
    if (st == WK_OK && T > 0) st = wk_llm_eval_batch(e->m, e->kv, &b, greedy ? NULL : e->logits, e->b_best);
    if (st != WK_OK && T > 0) {   /* the step's sequences end with the error */
        const char *msg = wk_last_error();
        for (int64_t i = 0; i < e->running.n;)
            if (e->running.s[i]->chunk) {
                seq *s = e->running.s[i];
                seq_list_remove_at(&e->running, i);
                engine_finish(e, s, WK_FINISH_ERROR, msg);
            } else i++;
        update_stats(e, 0, 0, 0, active);
        return st;
    }
    int64_t r = 0;
    for (int64_t i = 0; T > 0 && i < e->running.n;) {
        seq *s = e->running.s[i];
        if (!s->chunk) {
            i++;
            continue;
        }
        const bool out = s->n_computed + s->chunk == s->n_tokens;
        const int64_t before = s->n_computed;
        s->n_computed += s->chunk;
        if (before < s->n_prompt) prompt += (s->n_computed < s->n_prompt ? s->n_computed : s->n_prompt) - before;
        publish(e, s);
        s->chunk = 0;
        if (out) {
            float *row = greedy ? NULL : e->logits + r * e->n_vocab;
            tok_lp lp = { .n = s->req.top_logprobs };
            const bool want_lp = s->req.logprobs && row;
            int32_t tok;
            if (s->gs) tok = sample_constrained(e, s, row, want_lp ? &lp : NULL);
            else {
                tok = s->greedy ? e->b_best[r] : wk_sampler_sample(s->sampler, row);
                if (want_lp && tok >= 0) lp.lp = wk_logprobs(row, e->n_vocab, tok, lp.n, lp.ids, lp.lps);
            }
            r++;
            gen++;
            if (tok < 0 && s->gs) {
                seq_list_remove_at(&e->running, i);
                engine_finish(e, s, WK_FINISH_ERROR, wk_last_error());
                continue;
            }
            if (take_token(e, s, tok, want_lp ? &lp : NULL)) {   /* it ended (and is freed): out of the list */
                seq_list_remove_at(&e->running, i);
                continue;
            }
        }
        i++;
    }
    update_stats(e, T > 0, prompt, gen, active);
    return WK_OK;
}
