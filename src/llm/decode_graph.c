/* decode_graph.c — recorded decode steps: a one-token pass recorded once
 * as a device graph and replayed for every later token (the GPUs), so the
 * host pays one launch per step and the device runs the step's kernels
 * back to back; and the greedy step that feeds itself the next token on
 * the device. The comment below says how a step reads what changes from
 * device memory (llm_dyn, llm_internal.h).
 */
#include <stdlib.h>
#include "llm_internal.h"

/* ---- recorded decode steps ------------------------------------------------------
 * On a device that records graphs (wk_graph_begin: the GPUs), a one-token
 * pass is recorded once and replayed: the ~10 launches of each layer cost
 * the host one graph launch, and the device runs them without the gaps
 * between launches. What changes from step to step comes from device
 * memory (llm_dyn): the token's id, the position and the count of keys
 * (u32 [3], written by the host before a replay), the rope and the KV
 * cache's row (wk_rope_kv reading the position; for layers with q/k norms
 * the rope tables' rows selected at the position and a scatter along the
 * cache's position dim), and the keys attention reads: a fixed stretch
 * of the cache, [0, cap), of which the first position + 1 exist
 * (wk_attention_opts.kv_len: the same causal and window rules as the
 * eager step, no mask). cap is the whole cache, so a graph is recorded
 * once: the attention's grid is sized for cap keys, and its kernels split
 * the keys they find as a call for that many would (the blocks past
 * them take no part), so the replay runs what the eager step runs.
 * WICK_LLM_GRAPH=N (a multiple of 16) makes cap the position + 1 rounded
 * up to N instead, recorded again past it (tests, comparisons).
 * Two graphs: the step to its logits (graph_step), and the greedy step
 * (graph_greedy) to the argmax of its logits, which then writes the next
 * step's inputs on the device itself (the token's id, the position and
 * the count + 1): so greedy generation queues step
 * i + 1 before step i's token is back on the host, and the device never
 * waits for the host between steps. Not used: WICK_LLM_GRAPH=0,
 * WICK_LLM_TIMING=2 (its events between the parts), window caches (they
 * move). A split model records on every rank: the ranks make the same
 * calls in the same order, collectives included (the peer-memory
 * all_reduce keeps its epochs in device memory for that). */
struct llm_graphs {
    wk_tensor *in;               /* u32 [3]: the token's id (the rank's row), the
                                    position, the count of keys (position + 1)   */
    wk_graph *g;                 /* the recorded step (logits of the token)       */
    wk_tensor *out;              /* what its replay writes: f32 logits [1, vocab]  */
    int64_t cap;                 /* keys its attention spans (0: none recorded)    */
    /* the greedy step */
    wk_graph *gb;
    wk_tensor *best;             /* u32 [1]: its argmax (a vocabulary id)          */
    int64_t cap_b;
    wk_tensor *c_ids, *c_ones, *c_voc0;   /* constants its updates read       */
    uint32_t *host_best;         /* pinned [2]: the argmax of the last two steps  */
    wk_event *ev[2];             /* recorded after each one's copy               */
    int slot;                    /* the slot of the next step queued              */
    bool queued;                 /* a greedy step may still be running            */
    bool ahead;                  /* the step at ahead_pos, fed last_best, is queued
                                    in slot ahead_slot (graph_greedy)            */
    int64_t ahead_pos;
    int ahead_slot;
    int32_t last_best;
};

static bool graph_usable(const wk_llm *m)
{
    /* a mixture of experts routes on the host (blocks.c blk_moe): a
       step waits for the router's logits, which a graph cannot */
    if (m->rt.graph_off || llm_timing_by_part(m) || m->st.sw_cap > 0 || m->cfg.hp.n_expert > 0) return false;
    return wk_supports(m->dev, "graph", WK_F32);
}

/* A greedy step queued ahead is not to be used (what it read changes). */
void llm_greedy_drop(wk_llm *m)
{
    if (m->rt.graphs) m->rt.graphs->ahead = false;
}

/* Wait for the greedy steps still queued (before a graph they replay is
 * freed or recorded again); the step queued ahead is dropped. */
static void greedy_settle(wk_llm *m)
{
    llm_graphs *G = m->rt.graphs;
    if (!G) return;
    if (G->queued) (void)wk_device_synchronize(m->dev);
    G->queued = G->ahead = false;
}

void llm_graphs_free(wk_llm *m)
{
    llm_graphs *G = m->rt.graphs;
    if (!G) return;
    greedy_settle(m);
    wk_graph_free(G->g);
    wk_graph_free(G->gb);
    wk_release(G->out);
    wk_release(G->best);
    wk_release(G->in);
    wk_release(G->c_ids);
    wk_release(G->c_ones);
    wk_release(G->c_voc0);
    for (int i = 0; i < 2; i++) wk_event_free(G->ev[i]);
    wk_host_free(G->host_best);
    free(G);
    m->rt.graphs = NULL;
}

/* The persistent inputs and constants, made once (outside any recording:
 * they are written from the host). */
static wk_status graphs_init(wk_llm *m)
{
    if (m->rt.graphs) return WK_OK;
    llm_graphs *G = calloc(1, sizeof *G);
    if (!G) return wk_error_set(WK_ERR_MEMORY, "out of host memory for the decode graphs' inputs");
    m->rt.graphs = G;
    wk_scope_begin();
    const uint32_t ids[2] = { 1, 2 }, ones[2] = { 1, 1 }, voc0 = (uint32_t)m->cfg.tp.voc0;
    G->in = wk_retain(wk_zeros(m->dev, WK_U32, WK_SHAPE(3)));
    G->c_ids = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(2), ids));
    G->c_ones = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(2), ones));
    G->c_voc0 = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(1), &voc0));
    wk_scope_end();
    G->host_best = wk_host_alloc(m->dev, 2 * sizeof(uint32_t));
    for (int i = 0; i < 2; i++) G->ev[i] = wk_event_new(m->dev);
    if (!G->in || !G->c_ids || !G->c_ones || !G->c_voc0 || !G->host_best || !G->ev[0] || !G->ev[1]) {
        llm_graphs_free(m);
        return wk_error_wrap("the decode graphs' inputs");
    }
    return WK_OK;
}

/* The greedy step's last ops, recorded after its argmax `best` (u32 [1],
 * a vocabulary id): the next step's inputs. The token's row (on a split
 * model its id less the rank's first row: u32 arithmetic wraps, so an id
 * below the rank's rows, like one past them, is out of the rank's range,
 * which a recorded lookup reads as zeros), then the position and the
 * count of keys + 1. */
static wk_status record_next_inputs(wk_llm *m, const wk_tensor *best)
{
    llm_graphs *G = m->rt.graphs;
    const wk_tensor *row = m->cfg.tp.comm ? wk_sub(best, G->c_voc0) : best;
    wk_status st = row ? wk_copy_into(wk_narrow(G->in, 0, 0, 1), row) : WK_ERR_BACKEND;
    if (st == WK_OK) st = wk_scatter_add(G->in, G->c_ids, G->c_ones, 0);   /* in[1], in[2] += 1 */
    return st;
}

/* Record the one-token pass over keys [0, cap): to its logits (G->g), or
 * with `greedy` to its argmax and the next step's inputs (G->gb). */
static wk_status graph_record(wk_llm *m, int64_t cap, bool greedy)
{
    llm_graphs *G = m->rt.graphs;
    wk_graph **gp = greedy ? &G->gb : &G->g;
    wk_tensor **op = greedy ? &G->best : &G->out;
    int64_t *cp = greedy ? &G->cap_b : &G->cap;
    greedy_settle(m);   /* nothing of the graph about to be freed still runs */
    wk_graph_free(*gp);
    wk_release(*op);
    *gp = NULL, *op = NULL, *cp = 0;
    if (wk_graph_begin(m->dev) != WK_OK) return wk_error_wrap("recording a decode step");
    wk_scope_begin();
    llm_dyn dy = { .pos = wk_narrow(G->in, 0, 1, 1), .kv_len = wk_narrow(G->in, 0, 2, 1), .cap = cap };
    /* the tables' rows at the position, for ropes apart from rope_kv (q/k norms, separate projections) */
    bool rows = false;
    for (int64_t l = 0; l < m->cfg.info.n_layer; l++) rows = rows || m->w.layers[l].q_norm || !m->w.layers[l].wqkv;
    dy.cos = rows ? wk_index_select(m->w.cos, dy.pos, 0) : m->w.cos;
    dy.sin = rows ? wk_index_select(m->w.sin, dy.pos, 0) : m->w.sin;
    dy.cos_l = rows && m->w.cos_local ? wk_index_select(m->w.cos_local, dy.pos, 0) : NULL;
    dy.sin_l = rows && m->w.sin_local ? wk_index_select(m->w.sin_local, dy.pos, 0) : NULL;
    wk_tensor *out = dy.cos && dy.sin ? llm_pass_run(m, wk_narrow(G->in, 0, 0, 1), 0, 1, 0, 0,
                                                     greedy ? LLM_OUT_BEST : LLM_OUT_LOGITS, &dy, NULL)
                                      : NULL;
    if (out && greedy && record_next_inputs(m, out) != WK_OK) out = NULL;
    if (out) wk_retain(out);
    wk_scope_end();
    wk_graph *g = wk_graph_end(m->dev);   /* ends the recording whatever happened */
    if (!g || !out) {
        wk_graph_free(g);
        wk_release(out);
        return wk_error_wrap("recording a decode step");
    }
    *gp = g, *op = out, *cp = cap;
    return WK_OK;
}

/* Ready the graph for the step at m->st.pos (recorded at its first use, and
 * again when its span of keys changes: WICK_LLM_GRAPH=N only): *used
 * false when the model does not record, or cannot here (then never
 * again: the eager pass from now on). */
static wk_status graph_ready(wk_llm *m, bool greedy, bool *used)
{
    *used = false;
    if (!graph_usable(m)) return WK_OK;
    const int64_t C = m->cfg.info.context, step = m->rt.graph_step;
    int64_t cap = step ? (m->st.pos + 1 + step - 1) / step * step : C;
    if (cap > C) cap = C;
    wk_status st = graphs_init(m);
    if (st == WK_OK && (greedy ? m->rt.graphs->cap_b : m->rt.graphs->cap) != cap) st = graph_record(m, cap, greedy);
    if (st != WK_OK) {   /* not recordable here (a library that cannot be captured) */
        m->rt.graph_off = true;
        llm_graphs_free(m);
        wk_clear_error();
        return WK_OK;
    }
    *used = true;
    return WK_OK;
}

/* The host's write of a step's inputs: the token's row, the position, the
 * count of keys. */
static wk_status write_inputs(wk_llm *m, int32_t token)
{
    uint32_t in[3];
    llm_local_ids(m, &token, 1, &in[0]);
    in[1] = (uint32_t)m->st.pos;
    in[2] = (uint32_t)m->st.pos + 1;
    return wk_write(m->rt.graphs->in, in, sizeof in);
}

/* The replay of the one-token pass of token `token` at m->st.pos, its logits
 * into out. *used false (and nothing done) when the model does not
 * record. */
wk_status llm_graph_step(wk_llm *m, int32_t token, float *out, bool *used)
{
    wk_status st = graph_ready(m, false, used);
    if (!*used || st != WK_OK) return st;
    llm_graphs *G = m->rt.graphs;
    llm_greedy_drop(m);   /* the inputs change under a greedy step queued ahead */
    const double t0 = m->rt.timing ? llm_now_ms() : 0;
    /* WICK_LLM_TIMING: the device's time of the writes and of the replay */
    llm_timing_replay(m, 0);   /* WICK_LLM_TIMING: the device's time of the writes and of the replay */
    st = write_inputs(m, token);
    llm_timing_replay(m, 1);
    if (st == WK_OK) st = wk_graph_launch(G->g);
    llm_timing_replay(m, 2);
    const double t1 = m->rt.timing ? llm_now_ms() : 0;
    if (st == WK_OK) st = wk_to_host(G->out, out, (size_t)m->cfg.info.n_vocab * sizeof(float));
    if (m->rt.timing && st == WK_OK) {
        llm_timing_add(m, t0, t1);
        llm_timing_replay_add(m);
    }
    return st == WK_OK ? WK_OK : wk_error_wrap("replaying the decode step at position %lld", (long long)m->st.pos);
}

/* Queue one greedy step (its inputs already in place) and the copy of its
 * argmax into the next slot; the slot it used. */
static wk_status greedy_queue(wk_llm *m, int *slot)
{
    llm_graphs *G = m->rt.graphs;
    const int s = G->slot;
    wk_status st = wk_graph_launch(G->gb);
    if (st == WK_OK) st = wk_to_host_async(G->best, &G->host_best[s], sizeof G->host_best[s]);
    if (st == WK_OK) st = wk_event_record(G->ev[s]);
    G->queued = true;
    G->slot = s ^ 1;
    *slot = s;
    return st;
}

/* The greedy step of token `token` at m->st.pos through the greedy graph: the
 * argmax of its logits into *best. A generation loop calls this with the
 * token the last call returned, at the next position: that step was
 * queued by the last call already (the device fed it that token itself),
 * so this call only queues the step after it (while the device still runs
 * this one), then waits for this one's 4 bytes. Any other call (another
 * token or position; an eval or rewind between) queues its step from the
 * host. No step is queued ahead past the graph's span of keys or the
 * context; one queued ahead but not used later was harmless: it wrote
 * the cache row at a position past the end of the cache's contents, which
 * is written again before it is read, and the inputs the next replay
 * rewrites. *used false when the model does not record.
 * WICK_LLM_GREEDY_GRAPH=0 takes the eager steps instead (comparisons).
 * On two H200s an 8B model's greedy generation runs 3% faster this way
 * split in two, and on one GPU within 1% of the eager steps (slower at
 * 512 keys, faster at 4096; bench/RESULTS-tp.md). */
wk_status llm_graph_greedy(wk_llm *m, int32_t token, int32_t *best, bool *used)
{
    llm_graphs *G = m->rt.graphs;
    const int64_t pos = m->st.pos;
    const bool fed = G && G->ahead && G->ahead_pos == pos && G->last_best == token;
    wk_status st = WK_OK;
    int cur = 0;
    const double t0 = m->rt.timing ? llm_now_ms() : 0;
    if (fed) {
        *used = true;
        cur = G->ahead_slot;
    } else {
        st = graph_ready(m, true, used);
        if (!*used || st != WK_OK) return st;
        G = m->rt.graphs;
        st = write_inputs(m, token);
        if (st == WK_OK) st = greedy_queue(m, &cur);
    }
    G->ahead = false;
    if (st == WK_OK && pos + 2 <= G->cap_b && pos + 1 < m->cfg.info.context) {
        st = greedy_queue(m, &G->ahead_slot);
        G->ahead = st == WK_OK;
        G->ahead_pos = pos + 1;
    }
    const double t1 = m->rt.timing ? llm_now_ms() : 0;
    if (st == WK_OK) st = wk_event_synchronize(G->ev[cur]);
    if (st == WK_OK) {
        *best = (int32_t)G->host_best[cur];
        G->last_best = *best;
        if (!G->ahead) G->queued = false;   /* nothing runs past the step waited for */
        llm_timing_add(m, t0, t1);
        return WK_OK;
    }
    G->ahead = false;
    return wk_error_wrap("the greedy decode step at position %lld", (long long)pos);
}

