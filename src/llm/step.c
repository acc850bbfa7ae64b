/* step.c — running tokens through a model: wk_llm_eval splits them into
 * prefill chunks, each chunk is one forward pass (eager, or a recorded
 * decode step replayed: decode_graph.c), and a pass is
 *
 *   x = embed(tokens)                                   blocks.c
 *   h = norm(x) (layer 0's input norm)
 *   for each layer: h = layer(p, h, next layer's input norm)
 *                        (the architecture's function: llama.c, ...)
 *   logits = output(norm(x))                            blocks.c
 *
 * Every temporary lives in a wick scope (one per layer, so a long prompt
 * frees each layer's work as it goes); the buffers that outlive a step
 * are the weights, the KV caches and the rope tables. */
#include <stdlib.h>
#include "llm_internal.h"

void llm_local_ids(const wk_llm *m, const int32_t *tokens, int64_t T, uint32_t *ids)
{
    const llm_tp *tp = &m->cfg.tp;
    for (int64_t i = 0; i < T; i++) {
        if (!tp->comm) {
            ids[i] = (uint32_t)tokens[i];
            continue;
        }
        const int64_t li = tokens[i] - tp->voc0;
        ids[i] = (uint32_t)(li >= 0 && li < tp->n_voc ? li : tp->n_voc);
    }
}

wk_tensor *llm_pass_run(wk_llm *m, const wk_tensor *tid, int64_t row, int64_t T, int64_t pos, int64_t first_out,
                        int want, const llm_dyn *dy, const llm_paged *pg)
{
    const int64_t L = m->cfg.info.n_layer;
    llm_pass p = { .m = m, .T = T, .pos = pos, .dy = dy, .pg = pg };
    p.x = blk_embed(&p, tid, row);
    wk_tensor *h = p.x ? blk_norm(&p, p.x, m->w.layers[0].attn_norm) : NULL;
    for (int64_t l = 0; l < L && h; l++) {
        p.l = l;
        wk_scope_begin();
        const wk_tensor *next = l + 1 < L ? m->w.layers[l + 1].attn_norm : NULL;
        h = m->cfg.arch->layer(&p, &m->w.layers[l], h, next);
        wk_keep(p.x);
        wk_keep(p.f);
        wk_keep(h);
        wk_scope_end();
    }
    if (!h || want == LLM_OUT_NONE) return h ? p.x : NULL;
    return blk_logits(&p, first_out, want);
}

/* Tokens [T] at positions pos .. pos+T-1 through the model; rows of logits
 * (f32) for tokens first_out .. T-1 into out (NULL: none); or, with
 * best non-NULL (and out NULL), the index of the last token's largest
 * logit, found on the device. One-token passes replay a recorded graph
 * where the device records (decode_graph.c). */
static wk_status forward(wk_llm *m, const int32_t *tokens, int64_t T, int64_t first_out, float *out, int32_t *best)
{
    const int64_t pos = m->st.pos;
    bool used = false;
    if (T == 1 && out) {
        wk_status st = llm_graph_step(m, tokens[0], out, &used);
        if (used || st != WK_OK) return st;
    } else if (T == 1 && best && m->rt.greedy_graph) {
        wk_status st = llm_graph_greedy(m, tokens[0], best, &used);
        if (used || st != WK_OK) return st;
    }
    llm_greedy_drop(m);   /* this pass changes what a step queued ahead read */
    uint32_t *ids = malloc((size_t)T * sizeof *ids);
    if (!ids) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    llm_local_ids(m, tokens, T, ids);

    const bool timed = m->rt.timing && T == 1;
    const double t0 = timed ? llm_now_ms() : 0;
    double t1 = 0;
    const bool parts = llm_parts_on(m, T);
    wk_scope_begin();
    const int want = out ? LLM_OUT_LOGITS : best ? LLM_OUT_BEST : LLM_OUT_NONE;
    /* one token: its row is known here (the pass copies it) */
    wk_tensor *tid = T == 1 ? NULL : wk_from_host(m->dev, WK_U32, WK_SHAPE(T), ids);
    wk_tensor *o = tid || T == 1 ? llm_pass_run(m, tid, ids[0], T, pos, first_out, want, NULL, NULL) : NULL;
    if (timed) t1 = llm_now_ms();
    wk_status st = WK_OK;
    uint32_t b = 0;
    if (!o) st = WK_ERR_BACKEND;
    else if (want == LLM_OUT_LOGITS)
        st = wk_to_host(o, out, (size_t)((T - first_out) * m->cfg.info.n_vocab) * sizeof(float));
    else if (want == LLM_OUT_BEST) st = wk_to_host(o, &b, sizeof b);
    else st = wk_device_synchronize(m->dev);   /* no logits wanted: the work is done and errors surface */
    if (want == LLM_OUT_BEST && st == WK_OK) *best = (int32_t)b;
    if (st != WK_OK) st = wk_error_wrap("forward pass at position %lld (%lld tokens)", (long long)pos, (long long)T);
    if (timed && st == WK_OK && want != LLM_OUT_NONE) {
        if (parts) llm_parts_add(m);
        llm_timing_add(m, t0, t1);
    }
    wk_scope_end();
    free(ids);
    return st;
}

static wk_status eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits, int32_t *best)
{
    wk_clear_error();
    if (!m || (!tokens && n > 0) || n < 0)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval: %s", !m ? "the model is NULL" : "bad tokens or count");
    if (n == 0) return WK_OK;
    const wk_llm_info *in = &m->cfg.info;
    if (n > in->context - m->st.pos)
        return wk_error_set(WK_ERR_ARGUMENT,
                            "context full: %lld tokens do not fit after the %lld in the cache (context %lld; "
                            "load with a longer context, up to the model's %lld)",
                            (long long)n, (long long)m->st.pos, (long long)in->context, (long long)in->train_context);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= in->n_vocab)
            return wk_error_set(WK_ERR_INDEX, "wk_llm_eval: token %lld is %d, outside the vocabulary of %lld",
                                (long long)i, tokens[i], (long long)in->n_vocab);
    const int64_t start = m->st.pos, V = in->n_vocab, chunk = m->st.chunk;
    for (int64_t i = 0; i < n; i += chunk) {
        const int64_t T = n - i < chunk ? n - i : chunk;
        const bool last = i + T == n;
        float *out = NULL;
        int64_t first = T;
        if (logits && all_logits) {
            out = logits + i * V;
            first = 0;
        } else if (logits && last) {
            out = logits;
            first = T - 1;
        }
        wk_status st = llm_window_room(m, T);
        if (st == WK_OK) st = forward(m, tokens + i, T, first, out, last ? best : NULL);
        if (st) {
            if (m->st.pos) llm_set_pos(m, start);   /* (window_room empties the cache when it fails) */
            return st;
        }
        m->st.pos += T;
    }
    return WK_OK;
}

wk_status wk_llm_eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits)
{
    return eval(m, tokens, n, all_logits, logits, NULL);
}

wk_status llm_eval_greedy(wk_llm *m, const int32_t *tokens, int64_t n, int32_t *next)
{
    if (!next) return wk_error_set(WK_ERR_ARGUMENT, "llm_eval_greedy: next is NULL");
    return eval(m, tokens, n, false, NULL, next);
}
