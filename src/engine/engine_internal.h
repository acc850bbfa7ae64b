/* engine_internal.h — what the engine's files share: a sequence (one
 * request as it runs) and its lists (seq.c), the engine, and the step
 * (step.c) that engine.c's API and thread drive. The files call one way:
 * engine.c -> step.c -> seq.c, kv_blocks.c. */
#ifndef WICK_ENGINE_INTERNAL_H
#define WICK_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "wick_engine.h"
#include "wick_ext.h"
#include "kv_blocks.h"

/* One request as it runs. tokens[0 .. n_tokens) are the prompt and the
 * tokens generated so far; the KV cache holds positions 0 .. n_computed
 * (the last token, just sampled, is computed by the next step). blocks
 * [n_blocks] is its row of the block table; the first n_published of
 * them are in the prefix cache, the last one's key in last_key. */
typedef struct seq {
    int64_t id;
    int32_t *tokens;
    int64_t n_tokens, cap, n_prompt, n_computed, n_gen, n_cached;
    int32_t *blocks;
    int64_t n_blocks, cap_blocks, n_published;
    uint64_t last_key;
    wk_request req;               /* stop strings and prompt: not the caller's */
    char **stop;
    wk_sampler *sampler;
    wk_text_out *text;
    wk_grammar_state *gs;         /* the request's grammar, or NULL            */
    bool greedy;                  /* the argmax is the sampler's choice       */
    bool cancel;
    bool stop_string;             /* it ended at a stop string                */
    int64_t chunk;                /* tokens it puts in this step              */
    int64_t row;                  /* its row of this step's block table       */
} seq;

/* a list of sequences in arrival order */
typedef struct seq_list {
    seq **s;
    int64_t n, cap;
} seq_list;

struct wk_engine {
    wk_llm *m;
    wk_llm_kv *kv;
    kv_blocks *blocks;
    int64_t max_seqs, max_tokens, chunk, bs, context, n_vocab;
    bool prefix_cache;

    /* submitted from any thread: the scheduler takes them at a step */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    seq_list incoming;
    int64_t *cancels, n_cancels, cap_cancels;
    int64_t next_id;
    bool stop, thread_on;
    pthread_t thread;
    wk_engine_stats stats;        /* under mu */

    /* the step's (step.c; only the stepping thread touches them) */
    seq_list waiting, running;
    int32_t *b_tok, *b_pos, *b_seq, *b_table, *b_out, *b_best;
    int64_t b_cap, b_table_cap, b_out_cap;
    float *logits;
    int64_t logits_rows;
    wk_grammar_vocab *gvocab;     /* the model's tokens for grammar masks (made
                                     at the first request with a grammar)      */
    uint32_t *gbits;              /* a mask: n_vocab bits                       */
};

/* seq.c */
bool seq_list_push(seq_list *l, seq *s);
bool seq_list_push_front(seq_list *l, seq *s);
void seq_list_remove_at(seq_list *l, int64_t i);

/* One step: take what was submitted and cancelled, schedule, run the
 * batch, sample, report (step.c). */
wk_status engine_step(wk_engine *e, int64_t *active);
/* A sequence ends: its last event, its blocks back, it is freed. */
void engine_finish(wk_engine *e, seq *s, wk_finish why, const char *error);
void seq_free(seq *s);   /* seq.c */

#endif
