/* wick_engine.h — the batched inference engine: many sequences of one
 * model at once over a paged KV cache (docs/engine.md).
 *
 * Requests are submitted from any thread; each step of the engine runs
 * one forward pass over the next token of every running sequence and
 * chunks of waiting prompts (continuous batching with chunked prefill,
 * under a token budget), samples each sequence's next token with its own
 * options, and reports it through the request's callback. Sequences
 * start as KV blocks allow, the newest are preempted (and later
 * recomputed) when blocks run out, and they finish on an end token, a
 * stop string, their token limit, the context's end or cancellation,
 * giving their blocks back at once. Full blocks of a prompt are kept,
 * keyed by their tokens and everything before them, and shared by later
 * sequences that begin the same way (prefix caching).
 *
 *   wk_engine *e = wk_engine_new(model, NULL);
 *   wk_request r = { .prompt = ids, .n_prompt = n, .sampling = wk_sampling_greedy(),
 *                    .max_tokens = 64, .on_event = cb, .user = me };
 *   int64_t id = wk_engine_submit(e, &r);
 *   wk_engine_start(e);          // or: while (...) wk_engine_step(e, NULL);
 *   ...
 *   wk_engine_free(e);
 */
#ifndef WICK_ENGINE_H
#define WICK_ENGINE_H

#include "wick_llm.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct wk_engine_options {
    int64_t max_seqs;          /* running sequences at most (0: 64)               */
    int64_t max_batch_tokens;  /* tokens per step (0: 512)                        */
    int64_t prefill_chunk;     /* prompt tokens of one sequence per step (0: the
                                  step's budget)                                 */
    int64_t block_size;        /* positions per KV block (0: 16)                  */
    int64_t n_blocks;          /* KV blocks (0: room for max_seqs sequences of the
                                  model's context, within kv_bytes)              */
    uint64_t kv_bytes;         /* the cache's bytes at most when n_blocks is 0 (0:
                                  90% of a GPU's free memory less 2 GiB, a
                                  quarter of the cpu's memory)                   */
    bool no_prefix_cache;      /* do not share prompts' full blocks              */
} wk_engine_options;

typedef enum wk_finish {
    WK_FINISH_NONE = 0,        /* still running                                  */
    WK_FINISH_STOP,            /* an end-of-generation token or a stop string     */
    WK_FINISH_LENGTH,          /* max_tokens, or the end of the context           */
    WK_FINISH_CANCELLED,       /* wk_engine_cancel, or the engine freed           */
    WK_FINISH_ERROR            /* the step failed (the message in error)          */
} wk_finish;
const char *wk_finish_name(wk_finish f);   /* "stop", "length", ...; "?" */

/* What the engine reports about a request: a token and the text it
 * completes (the text may be empty: held back while it may begin a stop
 * string), and at the end one event with done set, the finish reason and
 * any text still held back (token -1). Called on the thread that runs
 * the step; it must not block, and must not call wk_engine_step. */
typedef struct wk_engine_event {
    int64_t id;
    int32_t token;             /* -1 in the last event                           */
    const char *text;          /* valid during the call                          */
    size_t len;
    bool done;
    wk_finish finish;          /* when done                                      */
    const char *error;         /* WK_FINISH_ERROR: the message                   */
    int64_t prompt_tokens, gen_tokens, cached_tokens;   /* cached: prompt tokens
                                  whose KV came from the prefix cache            */
    /* with wk_request.logprobs: the token's log-probability under the
     * model's distribution (wk_logprobs: before penalties and temperature)
     * and the top_logprobs most likely tokens with theirs */
    double logprob;
    int n_top;
    const int32_t *top_ids;
    const float *top_logprobs;
} wk_engine_event;
typedef void (*wk_engine_event_fn)(void *user, const wk_engine_event *ev);

typedef struct wk_request {
    const int32_t *prompt;     /* copied at submit                               */
    int64_t n_prompt;          /* >= 1                                           */
    wk_sampling sampling;      /* zeroed: greedy                                 */
    int64_t max_tokens;        /* 0: until the context's end                      */
    const char *const *stop;   /* stop strings (copied; not passed on)           */
    int n_stop;
    bool ignore_eog;           /* keep going past end tokens                     */
    bool logprobs;             /* each token's log-probability in its event      */
    int top_logprobs;          /* and the most likely n (0..20) with theirs      */
    /* Constrained output (docs/grammar.md): NULL, or each token is drawn
     * from those that keep the text a prefix of a text the grammar
     * accepts (the others' logits are -inf before the sampler, greedy
     * too); end tokens only once it is complete, whatever ignore_eog
     * says; the request ends ("stop") when it is complete and nothing can
     * follow. max_tokens may cut it first ("length"). The engine holds a
     * reference until the request ends. Logprobs stay the model's own
     * (before the mask). */
    wk_grammar *grammar;
    wk_engine_event_fn on_event;   /* may be NULL                                */
    void *user;
} wk_request;

typedef struct wk_engine wk_engine;

/* An engine over a loaded model (which it uses but does not own; free the
 * engine first). NULL + error (wk_last_error). */
wk_engine *wk_engine_new(wk_llm *m, const wk_engine_options *opts);
/* Stops the engine's thread, cancels every request (their last events
 * come with WK_FINISH_CANCELLED) and frees everything. NULL is fine. */
void wk_engine_free(wk_engine *e);

/* Queue a request (any thread). Its id (> 0), or -1 + error: a prompt
 * that is empty, has ids outside the vocabulary or, with max_tokens, does
 * not fit the context or the whole cache. */
int64_t wk_engine_submit(wk_engine *e, const wk_request *r);
/* Cancel a request (any thread): it ends at the next step with
 * WK_FINISH_CANCELLED. WK_ERR_ARGUMENT when the id is unknown or over. */
wk_status wk_engine_cancel(wk_engine *e, int64_t id);

/* One step on the caller's thread (not while the engine's thread runs).
 * *active (may be NULL): the requests still waiting or running after it.
 * An error of the forward pass ends the sequences of that step with
 * WK_FINISH_ERROR and is returned; the engine goes on. */
wk_status wk_engine_step(wk_engine *e, int64_t *active);
/* Steps on a thread of the engine's own, waiting when there is nothing
 * to do, until wk_engine_free. */
wk_status wk_engine_start(wk_engine *e);

typedef struct wk_engine_stats {
    int64_t waiting, running;            /* requests now                       */
    int64_t blocks_total, blocks_used;   /* KV blocks; used: held by sequences */
    int64_t blocks_cached;               /* free but keeping a prefix          */
    int64_t block_size;
    int64_t steps, preemptions;
    int64_t prompt_tokens, gen_tokens, cached_tokens;   /* since the start     */
    int64_t finished;                    /* requests ended                     */
} wk_engine_stats;
void wk_engine_get_stats(wk_engine *e, wk_engine_stats *s);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_ENGINE_H */
