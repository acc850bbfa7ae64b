/* gemma3.c — Gemma 3 (text): five sliding-window layers to one global
 * layer (rope base 10000 on the local ones), an RMS norm of each query
 * and key head, norms before and after both attention and MLP, a GELU
 * (tanh) gated MLP, embeddings scaled by sqrt(E) and tied to the output
 * (Gemma Team 2025):
 *
 *   h = rms_norm(x)                                    (the previous layer's end)
 *   q, k, v = h Wq, h Wk, h Wv;  q, k = rms_norm per head;  rope (local or global)
 *   x = x + post_attn_norm(softmax(q K^T * scale [, window]) V Wo)
 *   h = pre_ffn_norm(x)
 *   x = x + post_ffn_norm((gelu_tanh(h Wgate) * h Wup) Wdown)
 *   h = the next layer's rms_norm(x)
 *
 * HF's norms are x * (1 + w); llama.cpp's converter adds the 1 to the
 * weights, so a GGUF file takes the plain norm. */
#include <math.h>
#include "llm_internal.h"
#include "llm_config_check.h"

static wk_tensor *layer(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm)
{
    wk_tensor *q = blk_qkv_rope_cache(p, y, h);                      /* q/k norms, rope */
    wk_tensor *a = blk_attention(p, y, q);                           /* window on local layers */
    h = blk_residual_norm(p, a, y->post_attn_norm, y->ffn_norm);     /* x += post(a); h = pre_ffn(x) */
    wk_tensor *f = blk_gated_mlp(p, y, h, LLM_GELU_TANH);
    return blk_residual_norm(p, f, y->post_ffn_norm, next_norm);     /* x += post(f); the next norm */
}

/* What both kinds of file share: the scaled embedding, the local layers'
 * rope. */
static void common(llm_config *c)
{
    c->hp.embd_scale = sqrt((double)c->info.n_embd);
    c->hp.local_rope = true;
    c->info.rope_base_local = 10000.0;
}

/* llama.cpp's gemma3 (src/models/gemma3.cpp): no window (the key absent
 * or 0): every layer global; else the layers of
 * attention.sliding_window_pattern (5 in 6 when absent) slide, with rope
 * base rope.freq_base_swa (10000) unscaled; the 27B shape (62 layers)
 * scales by n_embd/n_head, the others by the head dim. */
static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k)
{
    wk_llm_info *in = &c->info;
    common(c);
    in->sliding_window = k->swa > 0 ? k->swa : 0;
    wk_status st = llm_gguf_float(k->g, k->arch, "rope.freq_base_swa", &in->rope_base_local);
    if (st) return st;
    for (int64_t l = 0; l < in->n_layer; l++) c->sliding[l] = k->swa > 0 && llm_gguf_layer_sliding(k->g, k->arch, l);
    c->hp.attn_scale = in->n_layer == 62 ? 1.0 / sqrt((double)in->n_embd / (double)in->n_head)
                                         : 1.0 / sqrt((double)in->head_dim);
    return WK_OK;
}

/* layer_types (transformers 5) or sliding_window_pattern: which layers
 * slide. */
static wk_status layer_types(llm_config *c, const wk_json *cfg)
{
    const char *doc = wk_json_doc_name(cfg);
    const int64_t L = c->info.n_layer;
    const wk_json *lt = wk_json_get(cfg, "layer_types");
    int64_t pattern = 6;
    wk_status st;
    /* not _sliding_window_pattern, which Gemma3TextConfig does not read */
    if ((st = llm_hf_int(cfg, "sliding_window_pattern", false, &pattern))) return st;
    if (wk_json_kind(lt) != WK_JSON_ARRAY) {
        for (int64_t l = 0; l < L; l++) c->sliding[l] = pattern > 0 && (l + 1) % pattern != 0;
        return WK_OK;
    }
    if ((int64_t)wk_json_count(lt) != L)
        return wk_error_set(WK_ERR_IO, "%s: layer_types has %zu entries for %lld layers", doc, wk_json_count(lt),
                            (long long)L);
    for (int64_t l = 0; l < L; l++) {
        const char *s = wk_json_string(wk_json_item(lt, (size_t)l), NULL);
        if (!s || (strcmp(s, "sliding_attention") && strcmp(s, "full_attention")))
            return wk_error_set(WK_ERR_IO, "%s: layer_types[%lld] is not sliding_attention or full_attention", doc,
                                (long long)l);
        c->sliding[l] = !strcmp(s, "sliding_attention");
    }
    return WK_OK;
}

static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    wk_llm_info *in = &c->info;
    const char *doc = wk_json_doc_name(cfg);
    wk_status st = llm_hf_rope(cfg, "full_attention", &in->rope_base, &c->hp.scaling);
    if (st) return st;
    common(c);
    if ((st = wk_config_float(cfg, "rope_local_base_freq", false, &in->rope_base_local))) return st;
    if (wk_json_get(wk_json_get(cfg, "rope_parameters"), "sliding_attention") &&
        (st = llm_hf_rope(cfg, "sliding_attention", &in->rope_base_local, &c->hp.scaling_local)))
        return st;
    c->hp.gemma_norm = true;
    double qpas = 256;
    if ((st = wk_config_float(cfg, "query_pre_attn_scalar", false, &qpas))) return st;
    if (qpas <= 0) return wk_error_set(WK_ERR_IO, "%s: query_pre_attn_scalar is %g", doc, qpas);
    c->hp.attn_scale = 1.0 / sqrt(qpas);
    in->sliding_window = 4096;
    if ((st = llm_hf_int(cfg, "sliding_window", false, &in->sliding_window))) return st;
    return layer_types(c, cfg);
}

static const llm_wrow rows[] = {
    LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE),
    LLM_ROWS_QKVO,
    LLM_ROW_NORM(q_norm, "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", LLM_DHEAD),
    LLM_ROW_NORM(k_norm, "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", LLM_DHEAD),
    LLM_ROW_NORM(post_attn_norm, "blk.%d.post_attention_norm.weight", "model.layers.%d.post_attention_layernorm.weight",
                 LLM_DE),
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.pre_feedforward_layernorm.weight", LLM_DE),
    LLM_ROW_NORM(post_ffn_norm, "blk.%d.post_ffw_norm.weight", "model.layers.%d.post_feedforward_layernorm.weight",
                 LLM_DE),
    LLM_ROWS_MLP,
};

const llm_arch_desc llm_gemma3 = {
    .arch = WK_LLM_GEMMA3,
    .name = "gemma3",
    .gguf_archs = (const char *const[]){ "gemma3", NULL },
    .hf_types = (const char *const[]){ "gemma3_text", NULL },
    .hf_head_dim = 256,
    .hf_rope_base = 1e6,
    .hf_tied = true,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows,
    .n_rows = sizeof rows / sizeof rows[0],
    .layer = layer,
};
