/* seq.c — the engine's sequences as lists hold them (engine_internal.h):
 * the waiting queue and the running list keep arrival order (pushed at the
 * back; a preempted sequence goes back to the front), and a sequence's
 * own memory (tokens, block row, stop strings, sampler, text, grammar
 * state) is freed in
 * one place. engine.c makes sequences, step.c moves them. */
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"

static bool grow(seq_list *l)
{
    if (l->n < l->cap) return true;
    const int64_t cap = l->cap ? 2 * l->cap : 16;
    seq **p = realloc(l->s, (size_t)cap * sizeof *p);
    if (!p) return false;
    l->s = p;
    l->cap = cap;
    return true;
}

bool seq_list_push(seq_list *l, seq *s)
{
    if (!grow(l)) return false;
    l->s[l->n++] = s;
    return true;
}

bool seq_list_push_front(seq_list *l, seq *s)
{
    if (!grow(l)) return false;
    memmove(l->s + 1, l->s, (size_t)l->n * sizeof *l->s);
    l->s[0] = s;
    l->n++;
    return true;
}

void seq_list_remove_at(seq_list *l, int64_t i)
{
    memmove(l->s + i, l->s + i + 1, (size_t)(l->n - i - 1) * sizeof *l->s);
    l->n--;
}

void seq_free(seq *s)
{
    if (!s) return;
    for (int i = 0; i < s->req.n_stop; i++) free(s->stop[i]);
    free(s->stop);
    free(s->tokens);
    free(s->blocks);
    wk_sampler_free(s->sampler);
    wk_text_out_free(s->text);
    wk_grammar_state_free(s->gs);
    free(s);
}

