/* state.c — what a model holds between calls besides its weights: the
 * rope tables made from its config, the KV caches (allocated once at
 * load), the position, and the window caches of sliding-window layers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "llm_internal.h"

/* cos/sin [n_pos, D/2] for base and scaling; with GGUF's rope_freqs.weight
 * (Llama 3.1 files) or LongRoPE's factors (phi3: hp.rope_factors)
 * frequency i is divided by factor i, and with LongRoPE cos and sin are
 * multiplied by hp.rope_mscale. */
static wk_status rope_tables(wk_llm *m, double base, const wk_rope_scaling *sc, bool freq_factors, wk_tensor **pcos,
                             wk_tensor **psin)
{
    const int64_t D = llm_rope_dims(&m->cfg), n = m->cfg.info.context, half = D / 2;   /* the rotated dims */
    const float *hf = freq_factors ? m->cfg.hp.rope_factors : NULL;
    if (hf && m->cfg.info.context > m->cfg.hp.rope_orig_ctx) hf += half;   /* the long factors */
    const double ms = freq_factors && m->cfg.hp.rope_mscale > 0 ? m->cfg.hp.rope_mscale : 1.0;
    if (!freq_factors || (!hf && !m->cfg.hp.freq_factors)) {
        if (wk_rope_tables(m->dev, D, base, n, sc, pcos, psin) != WK_OK) return wk_error_wrap("rope tables");
        return WK_OK;
    }
    const unsigned char *fd = NULL;
    if (!hf) {
        const wk_file_tensor *fi = llm_find(m, "rope_freqs.weight", NULL, -1);
        if (!fi || fi->dtype != WK_F32 || fi->shape.rank != 1 || fi->shape.dims[0] != half)
            return wk_error_set(WK_ERR_IO, "%s: rope_freqs.weight must be f32 [%lld]", wk_gguf_path(m->src.gguf),
                                (long long)half);
        fd = fi->data;
    }
    float *c = malloc((size_t)(n * half) * sizeof *c), *s = malloc((size_t)(n * half) * sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        return wk_error_set(WK_ERR_MEMORY, "out of memory for rope tables of %lld positions", (long long)n);
    }
    for (int64_t i = 0; i < half; i++) {
        float ff;
        if (hf) ff = hf[i];
        else memcpy(&ff, fd + 4 * i, 4);
        double f = pow(base, -2.0 * (double)i / (double)D) / (double)ff;
        for (int64_t p = 0; p < n; p++) {
            c[p * half + i] = (float)(cos((double)p * f) * ms);
            s[p * half + i] = (float)(sin((double)p * f) * ms);
        }
    }
    *pcos = wk_from_host(m->dev, WK_F32, WK_SHAPE(n, half), c);
    *psin = wk_from_host(m->dev, WK_F32, WK_SHAPE(n, half), s);
    free(c);
    free(s);
    if (!*pcos || !*psin) {
        wk_release(*pcos);
        wk_release(*psin);
        *pcos = *psin = NULL;
        return wk_error_wrap("rope tables");
    }
    return WK_OK;
}


wk_status llm_state_init(wk_llm *m)
{
    const wk_llm_info *in = &m->cfg.info;
    const llm_hparams *hp = &m->cfg.hp;
    wk_status st = rope_tables(m, in->rope_base, &hp->scaling, hp->freq_factors || hp->rope_factors, &m->w.cos, &m->w.sin);
    if (st == WK_OK && hp->local_rope)
        st = rope_tables(m, in->rope_base_local, &hp->scaling_local, false, &m->w.cos_local, &m->w.sin_local);
    if (st) return st;
    /* a sliding-window layer's cache holds its window and one prefill
       chunk where that is less than the context (window caches, below) */
    if (in->sliding_window > 0 && in->sliding_window + m->st.chunk < in->context)
        m->st.sw_cap = in->sliding_window + m->st.chunk;
    m->st.k_cache = calloc((size_t)in->n_layer, sizeof *m->st.k_cache);
    m->st.v_cache = calloc((size_t)in->n_layer, sizeof *m->st.v_cache);
    if (!m->st.k_cache || !m->st.v_cache) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    for (int64_t l = 0; l < in->n_layer; l++) {
        const int64_t cap = m->cfg.sliding[l] && m->st.sw_cap ? m->st.sw_cap : in->context;
        wk_shape s = WK_SHAPE(1, m->cfg.tp.n_kv, cap, in->head_dim);
        m->st.k_cache[l] = wk_zeros(m->dev, in->act_dtype, s);
        m->st.v_cache[l] = wk_zeros(m->dev, in->act_dtype, s);
        if (!m->st.k_cache[l] || !m->st.v_cache[l])
            return wk_error_wrap("KV cache of %lld positions (layer %lld)", (long long)cap, (long long)l);
    }
    return WK_OK;
}

void llm_state_free(wk_llm *m)
{
    for (int64_t l = 0; m->st.k_cache && l < m->cfg.info.n_layer; l++) {
        wk_release(m->st.k_cache[l]);
        wk_release(m->st.v_cache[l]);
    }
    free(m->st.k_cache);
    free(m->st.v_cache);
    m->st.k_cache = m->st.v_cache = NULL;
    wk_release(m->w.cos);
    wk_release(m->w.sin);
    wk_release(m->w.cos_local);
    wk_release(m->w.sin_local);
    m->w.cos = m->w.sin = m->w.cos_local = m->w.sin_local = NULL;
}

/* ---- window caches ------------------------------------------------------------
 * A sliding-window layer (Gemma 3's local layers, Mistral's) reads only the
 * last W positions, so its K and V caches hold sw_cap = W + chunk positions
 * (when that is less than the context) instead of the context: positions
 * sw_base .. sw_base + sw_cap - 1, in order, position p at slot p - sw_base.
 * Before a chunk of T positions that would run past the end, the W - 1
 * positions before it (all its window needs) move to the start and sw_base
 * follows; keys stay in order, so attention takes a contiguous range of
 * slots with its usual window mask. The global layers' caches hold the
 * context as before. A rewind to pos keeps the cache only where the
 * positions its window needs (from pos - W + 1) are still held; otherwise
 * it empties the cache (pos 0): wk_llm_pos says which. */

/* The position at which the cache stands after going back to pos. */
static int64_t window_pos(const wk_llm *m, int64_t pos)
{
    const int64_t need = pos - m->cfg.info.sliding_window + 1;
    return m->st.sw_cap && pos > 0 && (need > 0 ? need : 0) < m->st.sw_base ? 0 : pos;
}

void llm_set_pos(wk_llm *m, int64_t pos)
{
    llm_greedy_drop(m);   /* a greedy step queued ahead is for the old position */
    m->st.pos = window_pos(m, pos);
    if (m->st.pos == 0) m->st.sw_base = 0;
}

/* Room for T positions at m->st.pos in the window caches. On a failure the
 * cache is emptied (some layers moved, others not). */
wk_status llm_window_room(wk_llm *m, int64_t T)
{
    if (!m->st.sw_cap || m->st.pos + T - m->st.sw_base <= m->st.sw_cap) return WK_OK;
    const int64_t pos = m->st.pos, W = m->cfg.info.sliding_window;
    const int64_t keep = pos - m->st.sw_base < W - 1 ? pos - m->st.sw_base : W - 1;
    wk_status st = WK_OK;
    for (int64_t l = 0; l < m->cfg.info.n_layer && st == WK_OK && keep > 0; l++) {
        if (!llm_windowed(m, l)) continue;
        wk_tensor *caches[2] = { m->st.k_cache[l], m->st.v_cache[l] };
        for (int i = 0; i < 2 && st == WK_OK; i++) {   /* copy_into reads an overlapping source whole first */
            wk_scope_begin();
            st = wk_copy_into(wk_narrow(caches[i], 2, 0, keep), wk_narrow(caches[i], 2, pos - keep - m->st.sw_base, keep));
            wk_scope_end();
        }
    }
    if (st != WK_OK) {
        m->st.pos = m->st.sw_base = 0;
        return wk_error_wrap("moving the window caches' last %lld positions (the cache is emptied)", (long long)keep);
    }
    m->st.sw_base = pos - keep;
    return WK_OK;
}

wk_status wk_llm_rewind(wk_llm *m, int64_t pos)
{
    if (!m) return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_rewind: the model is NULL");
    if (pos < 0 || pos > m->st.pos)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_rewind: position %lld is outside the %lld the cache holds", (long long)pos,
                       (long long)m->st.pos);
    llm_set_pos(m, pos);   /* later positions are overwritten before they are read */
    return WK_OK;
}

