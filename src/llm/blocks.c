/* blocks.c — the blocks a transformer layer is written with, for every
 * architecture: the token embedding, q/k/v with rope and the cache write,
 * attention over the cache with its output projection, the gated MLP, the
 * residual add with the next norm, and the logits. Each block owns the
 * fusion choices for its part (which ops run as one launch on which
 * device), so an architecture's layer function (llama.c, qwen.c,
 * gemma3.c) reads as the maths and never changes when a fusion does; and
 * each names what it makes (llm_mark: WICK_LLM_TIMING=2 sums the
 * device's time by these names, WICK_LLM_DUMP prints the tensors they
 * name).
 *
 * What a block does is decided by the weights the architecture's tensor
 * table loaded (a bias, q/k norms, a post-norm: present or NULL) and by
 * the config (gemma norms, softcaps, windows, the attention scale), so one
 * block serves every architecture that has its part.
 *
 * Tensors live in the caller's wick scope; a block returns NULL (the error
 * set) when an op fails, and every block takes NULL inputs as a failure
 * already reported. */
#include <math.h>
#include <stdlib.h>
#include "llm_internal.h"

/* y [T, n] = x [T, k] . W^T, W [n, k] dense or block-quantized */
static wk_tensor *linear(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b)
{
    /* block-quantized w, or f16/bf16 kept as stored under other activations
       (weights.c): qmatmul, as the fused linear ops choose it */
    const wk_dtype wd = wk_tensor_dtype(w);
    const bool q = wk_dtype_is_quantized(wd) || ((wd == WK_F16 || wd == WK_BF16) && x && wd != wk_tensor_dtype(x));
    wk_tensor *y = q ? wk_qmatmul(x, w) : wk_matmul(x, wk_transpose(w, 0, 1));
    return b && y ? wk_add(y, b) : y;
}

wk_tensor *blk_norm(const llm_pass *p, const wk_tensor *x, const wk_tensor *w)
{
    const llm_config *c = &p->m->cfg;
    return c->hp.gemma_norm ? wk_rms_norm_gemma(x, w, c->info.norm_eps) : wk_rms_norm(x, w, c->info.norm_eps);
}

/* The round-to-bf16 of a scale, as HF multiplies by a tensor of the dtype. */
static double in_dtype(double v, wk_dtype dt)
{
    if (dt != WK_BF16) return (double)(float)v;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* x [T, E]: the tokens' rows of the embedding (tid: u32 ids; NULL: the
 * one row `row`, known to the host, copied: the same values, and no
 * device check of an id for the host to wait for); with tensor parallel
 * each row comes from the rank that holds it (the others add zeros);
 * scaled where the architecture scales it (gemma3: sqrt(E)). */
wk_tensor *blk_embed(llm_pass *p, const wk_tensor *tid, int64_t row)
{
    const wk_llm *m = p->m;
    const wk_dtype act = m->cfg.info.act_dtype;
    const wk_tensor *te = m->w.tok_embd;
    const bool qe = wk_dtype_is_quantized(wk_tensor_dtype(te));
    wk_tensor *x;
    if (tid) x = qe ? wk_qgather(te, tid, act) : wk_index_select(te, tid, 0);
    else {
        wk_tensor *r = wk_narrow(te, 0, row, 1);
        x = !r ? NULL : qe ? wk_dequantize(r, act) : wk_copy(r);
    }
    if (x && !qe && wk_tensor_dtype(x) != act) x = wk_to_dtype(x, act);   /* an f16/bf16 table kept as stored */
    if (x && m->cfg.tp.comm && wk_all_reduce(m->cfg.tp.comm, x) != WK_OK) x = NULL;
    if (x && m->cfg.hp.embd_scale > 0) x = wk_affine(x, in_dtype(m->cfg.hp.embd_scale, act), 0.0);
    llm_mark(p, "embedding", x);
    return x;
}

/* The rope tables of layer l: a sliding layer's own where the
 * architecture has them (gemma3), else the global ones; a recorded step's
 * rows at its position, unless `whole` (wk_rope_kv, which reads the
 * position itself from the step's inputs). */
static void rope_tables(const llm_pass *p, bool whole, const wk_tensor **c, const wk_tensor **s)
{
    const wk_llm *m = p->m;
    const bool local = m->cfg.sliding[p->l] && m->w.cos_local;
    if (p->pg) {   /* a batch: the rows at each token's position */
        *c = local ? p->pg->cos_l : p->pg->cos;
        *s = local ? p->pg->sin_l : p->pg->sin;
    } else if (p->dy && !whole) {
        *c = local ? p->dy->cos_l : p->dy->cos;
        *s = local ? p->dy->sin_l : p->dy->sin;
    } else {
        *c = local ? m->w.cos_local : m->w.cos;
        *s = local ? m->w.sin_local : m->w.sin;
    }
}

/* [1, T, H, D] -> rotated [1, H, T, D]; with a partial rotary (phi3's
 * partial_rotary_factor) the first R dims of each head rotated, the rest
 * passed through. */
static wk_tensor *rope(const llm_pass *p, const wk_tensor *x)
{
    const wk_tensor *c, *s;
    rope_tables(p, false, &c, &s);
    const int64_t pos = p->dy || p->pg ? 0 : p->pos;
    const int64_t D = p->m->cfg.info.head_dim, R = llm_rope_dims(&p->m->cfg);
    if (x && R < D) {
        wk_tensor *parts[2] = { wk_rope_thd(wk_contiguous(wk_narrow(x, 3, 0, R)), c, s, pos), wk_narrow(x, 3, R, D - R) };
        return parts[0] && parts[1] ? wk_transpose(wk_cat(parts, 2, 3), 1, 2) : NULL;
    }
    if (p->m->cfg.info.rope_interleaved) return wk_rope_i(wk_transpose(x, 1, 2), c, s, pos);
    return wk_transpose(wk_rope_thd(x, c, s, pos), 1, 2);
}

/* k [1, H, T, D] and v [1, T, H, D] into layer l's cache at the pass's
 * positions (a recorded step: at the device's position). */
static bool cache_write(const llm_pass *p, const wk_tensor *k, const wk_tensor *v)
{
    const wk_llm *m = p->m;
    wk_tensor *kc = m->st.k_cache[p->l], *vc = m->st.v_cache[p->l];
    if (!k || !v) return false;
    if (p->pg) {   /* row slot[t] of the pools [NB BS, Hkv D] */
        const int64_t KD = m->cfg.tp.n_kv * m->cfg.info.head_dim, T = p->T;
        wk_tensor *kp = p->pg->k_pool[p->l], *vp = p->pg->v_pool[p->l];
        const int64_t rows = wk_tensor_dim(kp, 0) * wk_tensor_dim(kp, 1);
        wk_tensor *at = wk_broadcast_as(wk_reshape(p->pg->slot, WK_SHAPE(T, 1)), WK_SHAPE(T, KD));
        return at && wk_scatter_set(wk_reshape(kp, WK_SHAPE(rows, KD)), at, wk_reshape(wk_transpose(k, 1, 2), WK_SHAPE(T, KD)), 0) == WK_OK &&
               wk_scatter_set(wk_reshape(vp, WK_SHAPE(rows, KD)), at, wk_reshape(v, WK_SHAPE(T, KD)), 0) == WK_OK;
    }
    if (p->dy) {
        wk_tensor *at = wk_broadcast_as(wk_reshape(p->dy->pos, WK_SHAPE(1, 1, 1, 1)),
                                        WK_SHAPE(1, m->cfg.tp.n_kv, 1, m->cfg.info.head_dim));
        return at && wk_scatter_set(kc, at, k, 2) == WK_OK && wk_scatter_set(vc, at, wk_transpose(v, 1, 2), 2) == WK_OK;
    }
    const int64_t base = llm_windowed(m, p->l) ? m->st.sw_base : 0;
    return wk_copy_into(wk_narrow(kc, 2, p->pos - base, p->T), k) == WK_OK &&
           wk_copy_into(wk_narrow(vc, 2, p->pos - base, p->T), wk_transpose(v, 1, 2)) == WK_OK;
}

/* An RMS norm over all heads of x [1, T, C] (OLMoE's q and k), of width
 * C_all over the whole model: split over ranks, each holds C of it and the
 * sum of squares is summed over the ranks (in f32), then each normalizes
 * its part with its share of the weight. */
static wk_tensor *norm_all_heads(const llm_pass *p, const wk_tensor *x, const wk_tensor *w, int64_t c_all)
{
    wk_comm *comm = p->m->cfg.tp.comm;
    if (!comm || !x) return x ? blk_norm(p, x, w) : NULL;
    const wk_dtype dt = wk_tensor_dtype(x);
    wk_tensor *xf = dt == WK_F32 ? (wk_tensor *)x : wk_to_dtype(x, WK_F32);
    wk_tensor *ss = xf ? wk_reduce(WK_SUM, wk_sqr(xf), (const int[]){ 2 }, 1, true) : NULL;   /* [1, T, 1] */
    if (!ss || wk_all_reduce(comm, ss) != WK_OK) return NULL;
    wk_tensor *r = wk_recip(wk_sqrt(wk_affine(ss, 1.0 / (double)c_all, p->m->cfg.info.norm_eps)));
    wk_tensor *wf = wk_tensor_dtype(w) == WK_F32 ? (wk_tensor *)w : wk_to_dtype(w, WK_F32);
    wk_tensor *y = r && wf ? wk_mul(wk_mul(xf, r), wf) : NULL;
    return y && dt != WK_F32 ? wk_to_dtype(y, dt) : y;
}

/* q, k, v of h [T, E] (h Wq [+ bq], ...), q and k normed per head where
 * the layer has q/k norms, rotated at the pass's positions, and k and v
 * written to layer l's cache: q [1, H, T, D] comes back. Fusions: the
 * stacked q/k/v matrix (weights.c) is one product; without q/k norms,
 * rope and both cache writes are one launch (wk_rope_kv), and without
 * biases the product joins them (wk_linear_rope_kv: one launch for a
 * token on a GPU) — but not into a window cache of an eager pass (its
 * slots are not positions); with q/k norms, q and k stay apart. */
wk_tensor *blk_qkv_rope_cache(llm_pass *p, const llm_layer *y, const wk_tensor *h)
{
    const wk_llm *m = p->m;
    const int64_t T = p->T, H = m->cfg.tp.n_head, Hkv = m->cfg.tp.n_kv, D = m->cfg.info.head_dim;
    const int64_t QD = H * D, KD = Hkv * D;
    const bool qk_norm = y->q_norm != NULL;
    wk_tensor *q = NULL, *k = NULL, *v = NULL;
    if (!h) return NULL;
    if (y->wqkv) {   /* one product; q, k, v are column ranges of its rows */
        const bool fuse = !qk_norm && !p->pg && (p->dy || !llm_windowed(m, p->l)) && llm_rope_dims(&m->cfg) == D;
        wk_tensor *qkv = fuse && !y->bqkv ? NULL : linear(h, y->wqkv, y->bqkv);
        if (fuse) {
            const wk_tensor *c, *s;
            rope_tables(p, true, &c, &s);
            const int64_t p0 = p->dy ? 0 : p->pos;
            const wk_tensor *pt = p->dy ? p->dy->pos : NULL;
            const bool il = m->cfg.info.rope_interleaved;
            wk_tensor *kc = m->st.k_cache[p->l], *vc = m->st.v_cache[p->l];
            wk_tensor *r = y->bqkv ? wk_rope_kv(wk_reshape(qkv, WK_SHAPE(1, T, H + 2 * Hkv, D)), H, c, s, p0, pt, il, kc, vc)
                                   : wk_linear_rope_kv(h, y->wqkv, H, c, s, p0, pt, il, kc, vc);
            q = wk_transpose(r, 1, 2);
            llm_mark(p, "q (k, v cached)", q);
            return q;
        }
        if (!qk_norm) {   /* q and k rotated in one launch */
            wk_tensor *r = rope(p, wk_reshape(wk_narrow(qkv, 1, 0, QD + KD), WK_SHAPE(1, T, H + Hkv, D)));
            q = wk_narrow(r, 1, 0, H);
            k = wk_narrow(r, 1, H, Hkv);
        } else {
            q = wk_reshape(wk_narrow(qkv, 1, 0, QD), WK_SHAPE(1, T, H, D));
            k = wk_reshape(wk_narrow(qkv, 1, QD, KD), WK_SHAPE(1, T, Hkv, D));
        }
        v = wk_reshape(wk_narrow(qkv, 1, QD + KD, KD), WK_SHAPE(1, T, Hkv, D));
    } else {
        q = wk_reshape(linear(h, y->wq, y->bq), WK_SHAPE(1, T, H, D));
        k = wk_reshape(linear(h, y->wk, y->bk), WK_SHAPE(1, T, Hkv, D));
        v = wk_reshape(linear(h, y->wv, y->bv), WK_SHAPE(1, T, Hkv, D));
    }
    if (qk_norm && m->cfg.arch->qk_norm_all) {   /* over all heads at once (OLMoE) */
        q = wk_reshape(norm_all_heads(p, wk_reshape(wk_contiguous(q), WK_SHAPE(1, T, QD)), y->q_norm, m->cfg.info.n_head * D),
                       WK_SHAPE(1, T, H, D));
        k = wk_reshape(norm_all_heads(p, wk_reshape(wk_contiguous(k), WK_SHAPE(1, T, KD)), y->k_norm,
                                      m->cfg.info.n_head_kv * D),
                       WK_SHAPE(1, T, Hkv, D));
    } else if (qk_norm) {
        q = blk_norm(p, q, y->q_norm);
        k = blk_norm(p, k, y->k_norm);
    }
    if (qk_norm || !y->wqkv) {
        q = rope(p, q);
        k = rope(p, k);
    }
    const bool ok = q && cache_write(p, k, v);
    llm_mark(p, "q (k, v cached)", ok ? q : NULL);
    return ok ? q : NULL;
}

/* softmax(q K^T * scale [softcap] [window]) V over layer l's cache, causal,
 * GQA in place, then the output projection: [T, E]. An eager pass reads
 * the keys from the first its window needs (a window cache holds from
 * sw_base) to its last; a recorded step a fixed stretch [0, cap) of which
 * the device's count exists (wk_attention_opts.kv_len). */
wk_tensor *blk_attention(llm_pass *p, const llm_layer *y, const wk_tensor *q)
{
    const wk_llm *m = p->m;
    const wk_llm_info *in = &m->cfg.info;
    wk_tensor *kc = m->st.k_cache[p->l], *vc = m->st.v_cache[p->l];
    const int64_t T = p->T, pos = p->pos;
    wk_attention_opts ao = { .scale = m->cfg.hp.attn_scale, .causal = true,
                             .window = m->cfg.sliding[p->l] ? in->sliding_window : 0,
                             .softcap = m->cfg.hp.attn_softcap };
    wk_tensor *a = NULL;
    if (q && p->pg) {   /* [T, H, D] over the sequences' blocks */
        const wk_paged_attention_opts po = { .scale = ao.scale, .window = ao.window, .softcap = ao.softcap };
        const llm_paged *g = p->pg;
        wk_tensor *pa = wk_paged_attention(wk_reshape(wk_transpose(q, 1, 2), WK_SHAPE(T, m->cfg.tp.n_head, in->head_dim)),
                                           g->k_pool[p->l], g->v_pool[p->l], g->block_table, g->seq, g->pos, &po);
        a = pa ? wk_transpose(wk_reshape(pa, WK_SHAPE(1, T, m->cfg.tp.n_head, in->head_dim)), 1, 2) : NULL;
    } else if (q && p->dy) {
        ao.kv_len = p->dy->kv_len;
        a = wk_attention(q, wk_narrow(kc, 2, 0, p->dy->cap), wk_narrow(vc, 2, 0, p->dy->cap), &ao);
    } else if (q) {
        const bool win = llm_windowed(m, p->l);
        const int64_t base = win ? m->st.sw_base : 0;
        const int64_t lo = win && pos - in->sliding_window + 1 > base ? pos - in->sliding_window + 1 : base;
        a = wk_attention(q, wk_narrow(kc, 2, lo - base, pos + T - lo), wk_narrow(vc, 2, lo - base, pos + T - lo), &ao);
    }
    llm_mark(p, "attention", a);
    a = a ? linear(wk_reshape(wk_transpose(a, 1, 2), WK_SHAPE(T, m->cfg.tp.n_head * in->head_dim)), y->wo, NULL) : NULL;
    llm_mark(p, "o_proj", a);
    return a;
}

/* down(act(h Wgate) * h Wup): [T, E] (the rank's partial sums with tensor
 * parallel). SwiGLU with gate and up stacked is one call
 * (wk_linear_silu_mul: one launch for a token on a GPU). */
wk_tensor *blk_gated_mlp(llm_pass *p, const llm_layer *y, const wk_tensor *h, llm_act act)
{
    const int64_t F = p->m->cfg.tp.n_ff;
    wk_tensor *g = NULL, *u = NULL, *a = NULL;
    if (h && y->w_gu && act == LLM_SILU) {
        a = wk_linear_silu_mul(h, y->w_gu);
    } else if (h) {
        if (y->w_gu) {
            wk_tensor *gu = linear(h, y->w_gu, NULL);
            g = wk_narrow(gu, 1, 0, F);
            u = wk_narrow(gu, 1, F, F);
        } else {
            g = linear(h, y->w_gate, NULL);
            u = linear(h, y->w_up, NULL);
        }
        a = act == LLM_GELU_TANH ? wk_mul(wk_gelu(g), u) : wk_silu_mul(g, u);
    }
    wk_tensor *f = a ? linear(a, y->w_down, NULL) : NULL;
    llm_mark(p, "gated_mlp", f);
    return f;
}

/* Expert e's matrix of a stack [X, r, c]: a view of its rows, so that
 * only the chosen experts' bytes are read (dense or block-quantized). */
static wk_tensor *expert(const wk_tensor *w, int64_t e)
{
    return wk_squeeze(wk_narrow(w, 0, e, 1), 0);
}

/* A token's router: the softmax of its logits over the experts, the k
 * largest (the first index among equals), renormalized to sum 1 where
 * the model does (norm_topk_prob; Mixtral always), as transformers'
 * routers compute it (softmax in f32, then top-k, then the sum). */
static void route(const float *lg, int64_t X, int64_t K, bool norm, int32_t *ids, float *w)
{
    double mx = lg[0], sum = 0;
    for (int64_t e = 1; e < X; e++) mx = lg[e] > mx ? lg[e] : mx;
    for (int64_t e = 0; e < X; e++) sum += exp((double)lg[e] - mx);
    for (int64_t k = 0; k < K; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < X; e++) {
            bool taken = false;
            for (int64_t j = 0; j < k; j++) taken |= ids[j] == e;
            if (!taken && (best < 0 || lg[e] > lg[best])) best = e;
        }
        ids[k] = (int32_t)best;
        w[k] = (float)(exp((double)lg[best] - mx) / sum);
    }
    if (!norm) return;
    float s = 0;
    for (int64_t k = 0; k < K; k++) s += w[k];
    for (int64_t k = 0; k < K; k++) w[k] /= s;
}

/* A mixture of experts (Mixtral, Qwen2/3-MoE, OLMoE) on h [T, E]: each
 * token's router picks k experts and weighs them (route); the tokens are
 * grouped by expert, and each chosen expert runs once on its tokens'
 * rows (a gather), its output scaled by their weights and added into
 * theirs (index_add), experts in ascending order as transformers adds
 * them; then the shared expert, gated by sigmoid(h w) where the model has
 * that gate (qwen2moe), is added. An expert's matrices are views of the
 * stacks, so a token reads only its k experts' weights, and a prefill
 * reads each chosen expert once for all its tokens.
 *
 * The routing is decided on the host: the router's logits ([T, X], a few
 * bytes a token) come back, which costs a wait for the device in every
 * MoE layer and keeps MoE models out of the recorded decode steps
 * (decode_graph.c). A device-side route (a top-k op and a grouped expert
 * product) would lift both; docs/models.md says where this stands. */
wk_tensor *blk_moe(llm_pass *p, const llm_layer *y, const wk_tensor *h)
{
    const wk_llm *m = p->m;
    const llm_hparams *hp = &m->cfg.hp;
    const wk_dtype act = m->cfg.info.act_dtype;
    const int64_t T = p->T, E = m->cfg.info.n_embd, X = hp->n_expert, K = hp->n_expert_used;
    if (!h) return NULL;
    wk_tensor *lg = linear(h, y->router, NULL);
    if (lg && act != WK_F32) lg = wk_to_dtype(lg, WK_F32);
    llm_mark(p, "router", lg);
    float *rl = malloc((size_t)(T * X) * sizeof *rl), *rw = malloc((size_t)(T * K) * sizeof *rw);
    int32_t *ri = malloc((size_t)(T * K) * sizeof *ri);
    uint32_t *tok = malloc((size_t)(T * K) * sizeof *tok);
    float *tw = malloc((size_t)(T * K) * sizeof *tw);
    int64_t *cnt = calloc((size_t)X + 1, sizeof *cnt);
    wk_tensor *out = NULL;
    if (!rl || !rw || !ri || !tok || !tw || !cnt) {
        wk_error_set(WK_ERR_MEMORY, "out of memory routing %lld tokens", (long long)T);
        goto done;
    }
    if (!lg || wk_to_host(lg, rl, (size_t)(T * X) * sizeof *rl) != WK_OK) goto done;
    for (int64_t t = 0; t < T; t++) route(rl + t * X, X, K, hp->moe_norm_topk, ri + t * K, rw + t * K);
    for (int64_t i = 0; i < T * K; i++) cnt[ri[i] + 1]++;   /* tokens grouped by expert, in order */
    for (int64_t e = 0; e < X; e++) cnt[e + 1] += cnt[e];
    {
        int64_t *at = calloc((size_t)X, sizeof *at);
        if (!at) {
            wk_error_set(WK_ERR_MEMORY, "out of memory");
            goto done;
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = 0; k < K; k++) {
                const int64_t e = ri[t * K + k], j = cnt[e] + at[e]++;
                tok[j] = (uint32_t)t, tw[j] = rw[t * K + k];
            }
        free(at);
    }
    out = wk_zeros(m->dev, act, WK_SHAPE(T, E));
    for (int64_t e = 0; out && e < X; e++) {
        const int64_t n = cnt[e + 1] - cnt[e];
        if (!n) continue;
        wk_scope_begin();
        wk_tensor *ids = wk_from_host(m->dev, WK_U32, WK_SHAPE(n), tok + cnt[e]);
        wk_tensor *wt = wk_from_host(m->dev, WK_F32, WK_SHAPE(n, 1), tw + cnt[e]);
        if (wt && act != WK_F32) wt = wk_to_dtype(wt, act);
        const wk_tensor *xe = n == T && T == 1 ? h : ids ? wk_index_select(h, ids, 0) : NULL;
        wk_tensor *a = xe ? wk_silu_mul(linear(xe, expert(y->exp_gate, e), NULL), linear(xe, expert(y->exp_up, e), NULL))
                          : NULL;
        wk_tensor *f = a ? wk_mul(linear(a, expert(y->exp_down, e), NULL), wt) : NULL;
        const bool ok = f && wk_index_add(out, ids, f, 0) == WK_OK;
        wk_scope_end();
        if (!ok) {
            wk_error_wrap("expert %lld of layer %lld", (long long)e, (long long)p->l);
            out = NULL;   /* the pass's scope releases it */
        }
    }
    if (out && y->sh_down) {   /* the shared expert, every token */
        wk_tensor *s = wk_silu_mul(linear(h, y->sh_gate, NULL), linear(h, y->sh_up, NULL));
        s = s ? linear(s, y->sh_down, NULL) : NULL;
        if (s && y->sh_inp) s = wk_mul(s, wk_sigmoid(linear(h, y->sh_inp, NULL)));
        out = s ? wk_add(out, s) : NULL;
    }
done:
    free(rl), free(rw), free(ri), free(tok), free(tw), free(cnt);
    llm_mark(p, "moe", out);
    return out;
}

/* f, a block's output, as the residual stream takes it: with tensor
 * parallel first summed over the ranks (the partial sums of a
 * row-parallel projection), then normed by post where the layer has one
 * (gemma3). */
static wk_tensor *block_out(const llm_pass *p, wk_tensor *f, const wk_tensor *post)
{
    wk_comm *comm = p->m->cfg.tp.comm;
    if (f && comm && wk_all_reduce(comm, f) != WK_OK) return NULL;
    return f && post ? blk_norm(p, f, post) : f;
}

/* x += block_out(f) and the norm next_norm of that: the next block's input
 * (p->x the new sum). Without post, the sum over the ranks, the add and
 * the norm are one kernel per rank where the communicator fuses them
 * (wick_comm.h). next_norm NULL (after the last layer): f stays apart
 * (p->f) for the final norm of the rows the output needs; f comes back. */
wk_tensor *blk_residual_norm(llm_pass *p, wk_tensor *f, const wk_tensor *post, const wk_tensor *next_norm)
{
    const wk_llm *m = p->m;
    wk_tensor *h = NULL, *xo = NULL;
    if (f && !next_norm) {
        p->f = h = block_out(p, f, post);
    } else if (f && m->cfg.tp.comm && !post) {
        h = wk_all_reduce_add_rms_norm(m->cfg.tp.comm, f, p->x, next_norm, m->cfg.info.norm_eps, m->cfg.hp.gemma_norm,
                                       &xo);
    } else if (f) {
        f = block_out(p, f, post);
        h = f ? wk_add_rms_norm(f, p->x, next_norm, m->cfg.info.norm_eps, m->cfg.hp.gemma_norm, &xo) : NULL;
    }
    if (next_norm) p->x = xo;
    llm_mark(p, "residual_norm", h);
    return h;
}

/* After the last layer: x + f and the final norm of the rows wanted in one
 * op, the logits (the ranks' vocabulary slices joined, the padding of the
 * last cut), the final softcap where the architecture has one; then the
 * last row's argmax (LLM_OUT_BEST) or the rows as f32. */
wk_tensor *blk_logits(llm_pass *p, int64_t first_out, int want)
{
    const wk_llm *m = p->m;
    const wk_llm_info *in = &m->cfg.info;
    const int64_t T = p->T, r0 = want == LLM_OUT_BEST ? T - 1 : first_out;
    wk_tensor *xl = NULL, *f = NULL, *x = NULL;
    if (p->pg && p->f) {   /* a batch: the rows it asks for */
        f = wk_index_select(p->f, p->pg->out, 0);
        x = wk_index_select(p->x, p->pg->out, 0);
    } else if (p->f) {
        f = wk_narrow(p->f, 0, r0, T - r0);
        x = wk_narrow(p->x, 0, r0, T - r0);
    }
    wk_tensor *hn = f && x ? wk_add_rms_norm(f, x, m->w.out_norm, in->norm_eps, m->cfg.hp.gemma_norm, &xl) : NULL;
    wk_tensor *lg = hn ? linear(hn, m->w.output, NULL) : NULL;
    if (lg && m->cfg.tp.comm) {
        wk_tensor *all = wk_all_gather(m->cfg.tp.comm, lg, 1);
        lg = all ? wk_narrow(all, 1, 0, in->n_vocab) : NULL;
    }
    const double cap = m->cfg.hp.final_softcap;
    if (lg && cap > 0)   /* monotonic, but the argmax keeps the rounding of the logits eval returns */
        lg = wk_affine(wk_tanh(wk_affine(lg, 1.0 / cap, 0.0)), cap, 0.0);
    wk_tensor *o = want == LLM_OUT_BEST ? (lg ? wk_argmax(lg, 1, false) : NULL)
                   : lg && in->act_dtype != WK_F32 ? wk_to_dtype(lg, WK_F32)
                                                   : lg;
    llm_mark(p, "logits", o);
    return o;
}
