/* phi3.c — Phi-3 (Abdin et al. 2024; Phi-3-mini/medium, 4k and 128k):
 * llama's layer with q, k and v in one matrix (qkv_proj, rows q then k
 * then v) and gate and up in one (gate_up_proj, rows gate then up), rope
 * over halves, and LongRoPE for the 128k models: frequency i divided by
 * a factor of a list (the short list within the original context, the
 * long one past it), cos and sin multiplied by
 * sqrt(1 + ln(s) / ln(original context)), s = context / original one.
 * A sliding window on every layer where the config sets one.
 *
 *   q, k, v = rows of h Wqkv;  rope;  x += attention Wo
 *   g, u = rows of h Wgu;  x += (silu(g) * u) Wdown
 *
 * The fused matrices are the file's own, so weights.c stacks nothing and
 * the blocks take them as they take stacked ones: the layer function is
 * llama's. Files: transformers' Phi3ForCausalLM (model_type phi3), and
 * llama.cpp's GGUF architecture phi3 (attn_qkv, ffn_up holding gate and
 * up, rope_factors_long/short.weight, rope.scaling.attn_factor,
 * rope.scaling.original_context_length). The choice of factors is the
 * context's wick allocates (as llama.cpp's n_ctx), where transformers
 * switches to the long ones once a sequence passes the original context
 * (docs/model-config.md). A partial rotary (partial_rotary_factor, GGUF
 * rope.dimension_count below the head size: Phi-4-mini) rotates the first
 * dims of each head (blocks.c), the factor lists as long as their half. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "llm_internal.h"

static void all_sliding(llm_config *c, int64_t window)
{
    c->info.sliding_window = window;
    for (int64_t l = 0; l < c->info.n_layer; l++) c->sliding[l] = true;
}

static wk_status alloc_factors(llm_config *c)
{
    const int64_t half = llm_rope_dims(c) / 2;
    if (half <= 0 || half > ((int64_t)1 << 20)) return wk_error_set(WK_ERR_IO, "head dim %lld", (long long)c->info.head_dim);
    c->hp.rope_factors = calloc((size_t)(2 * half), sizeof *c->hp.rope_factors);
    return c->hp.rope_factors ? WK_OK : wk_error_set(WK_ERR_MEMORY, "out of memory");
}

/* rope_factors_short.weight and rope_factors_long.weight (f32 [D/2]) */
static wk_status gguf_factors(llm_config *c, const llm_gguf_keys *k)
{
    static const char *const names[2] = { "rope_factors_short.weight", "rope_factors_long.weight" };
    const int64_t half = llm_rope_dims(c) / 2;
    const int64_t is = wk_gguf_tensor_index(k->g, names[0]), il = wk_gguf_tensor_index(k->g, names[1]);
    if (is < 0 && il < 0) return WK_OK;
    if (is < 0 || il < 0)
        return wk_error_set(WK_ERR_IO, "%s: %s without %s", wk_gguf_path(k->g), names[is < 0], names[is >= 0]);
    wk_status st = alloc_factors(c);
    if (st) return st;
    for (int i = 0; i < 2; i++) {
        const wk_file_tensor *t = wk_gguf_tensor_info(k->g, i ? il : is);
        if (!t || t->dtype != WK_F32 || t->shape.rank != 1 || t->shape.dims[0] != half || t->nbytes < (uint64_t)(4 * half))
            return wk_error_set(WK_ERR_IO, "%s: %s must be f32 [%lld]", wk_gguf_path(k->g), names[i], (long long)half);
        memcpy(c->hp.rope_factors + i * half, t->data, (size_t)(4 * half));
    }
    return WK_OK;
}

static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k)
{
    if (k->swa > 0) all_sliding(c, k->swa);
    c->hp.rope_orig_ctx = c->info.train_context;
    c->hp.rope_mscale = 1.0;
    wk_status st;
    if ((st = llm_gguf_int(k->g, k->arch, "rope.scaling.original_context_length", false, &c->hp.rope_orig_ctx)) ||
        (st = llm_gguf_float(k->g, k->arch, "rope.scaling.attn_factor", &c->hp.rope_mscale)))
        return st;
    return gguf_factors(c, k);
}

/* a list of D/2 positive numbers */
static wk_status hf_list(llm_config *c, const wk_json *d, const char *key, float *out)
{
    const char *doc = wk_json_doc_name(d);
    const wk_json *v = wk_json_get(d, key);
    const int64_t half = llm_rope_dims(c) / 2;
    if (wk_json_kind(v) != WK_JSON_ARRAY || (int64_t)wk_json_count(v) != half)
        return wk_error_set(WK_ERR_IO, "%s: the rope dict's %s must be a list of %lld numbers (rotated dims / 2)", doc,
                            key, (long long)half);
    for (int64_t i = 0; i < half; i++) {
        double x;
        if (!wk_json_number(wk_json_item(v, (size_t)i), &x) || !(x > 0))
            return wk_error_set(WK_ERR_IO, "%s: %s[%lld] is not a positive number", doc, key, (long long)i);
        out[i] = (float)x;
    }
    return WK_OK;
}

/* rope_parameters (transformers 5) or rope_scaling (4): default, or
 * longrope (su and yarn are read as longrope, as Phi3Config does); the
 * check (llm_config_check.c) has refused every other type and a partial
 * rotary factor. */
static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    wk_status st;
    int64_t swa = 0;
    if ((st = wk_config_float(cfg, "rope_theta", false, &c->info.rope_base)) ||
        (st = llm_hf_int(cfg, "sliding_window", false, &swa)))
        return st;
    if (swa > 0) all_sliding(c, swa);
    const wk_json *rd = wk_json_get(cfg, "rope_scaling");
    if (wk_json_kind(rd) != WK_JSON_OBJECT) rd = wk_json_get(cfg, "rope_parameters");
    /* partial_rotary_factor (the rope dict's, else the top level's): rope
       over the first int(D p) dims of a head (Phi-4-mini: 0.75) */
    double pf = 1.0;
    if (!wk_json_number(wk_json_get(rd, "partial_rotary_factor"), &pf))
        wk_json_number(wk_json_get(cfg, "partial_rotary_factor"), &pf);
    const int64_t D = c->info.head_dim, R = (int64_t)((double)D * pf);
    if (!(pf > 0) || R <= 0 || R > D || R % 2)
        return wk_error_set(WK_ERR_IO, "%s: partial_rotary_factor %g gives %lld rotated dims of %lld (a positive even count "
                            "is needed)", wk_json_doc_name(cfg), pf, (long long)R, (long long)D);
    c->hp.rope_dims = R;
    if (wk_json_kind(rd) != WK_JSON_OBJECT) return WK_OK;
    double t;
    if (wk_json_number(wk_json_get(rd, "rope_theta"), &t)) c->info.rope_base = t;
    const char *type = wk_json_string(wk_json_get(rd, "rope_type"), NULL);
    if (!type) type = wk_json_string(wk_json_get(rd, "type"), NULL);
    if (!type || !strcmp(type, "default")) return WK_OK;
    const int64_t half = llm_rope_dims(c) / 2;
    if ((st = alloc_factors(c)) || (st = hf_list(c, rd, "short_factor", c->hp.rope_factors)) ||
        (st = hf_list(c, rd, "long_factor", c->hp.rope_factors + half)))
        return st;
    /* Phi3Config's original_max_position_embeddings (4096 when absent)
       is the dict's; the factor the ratio of the lengths unless given */
    c->hp.rope_orig_ctx = 4096;
    if ((st = llm_hf_int(cfg, "original_max_position_embeddings", false, &c->hp.rope_orig_ctx))) return st;
    if (c->hp.rope_orig_ctx <= 0)
        return wk_error_set(WK_ERR_IO, "%s: original_max_position_embeddings is %lld", wk_json_doc_name(cfg),
                            (long long)c->hp.rope_orig_ctx);
    double factor = (double)c->info.train_context / (double)c->hp.rope_orig_ctx, af;
    wk_json_number(wk_json_get(rd, "factor"), &factor);
    if (wk_json_number(wk_json_get(rd, "attention_factor"), &af)) c->hp.rope_mscale = af;
    else c->hp.rope_mscale = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)c->hp.rope_orig_ctx));
    return WK_OK;
}

static const llm_wrow rows[] = {
    LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE),
    { offsetof(llm_layer, wqkv), "blk.%d.attn_qkv.weight", "model.layers.%d.self_attn.qkv_proj.weight", LLM_DQKV, LLM_DE,
      true, LLM_SH_ROWS_QKV, LLM_D0, 0 },
    { offsetof(llm_layer, wo), "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", LLM_DE, LLM_DQ,
      true, LLM_SH_COLS_Q, LLM_D0, 0 },
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE),
    { offsetof(llm_layer, w_gu), "blk.%d.ffn_up.weight", "model.layers.%d.mlp.gate_up_proj.weight", LLM_DF2, LLM_DE,
      true, LLM_SH_ROWS_GU, LLM_D0, 0 },
    { offsetof(llm_layer, w_down), "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", LLM_DE, LLM_DF,
      true, LLM_SH_COLS_FF, LLM_D0, 0 },
};

const llm_arch_desc llm_phi3 = {
    .arch = WK_LLM_PHI3,
    .name = "phi3",
    .gguf_archs = (const char *const[]){ "phi3", NULL },
    .hf_types = (const char *const[]){ "phi3", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows,
    .n_rows = sizeof rows / sizeof rows[0],
    .layer = llm_llama_layer,
};
