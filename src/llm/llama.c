/* llama.c — the llama family: Llama 2 and 3.x (with Llama 3.1's rope
 * scaling), Mistral (a sliding window on every layer), SmolLM2,
 * TinyLlama. A pre-norm transformer with RMS norms, rope, grouped-query
 * attention and a SwiGLU MLP (Touvron et al. 2023):
 *
 *   h = rms_norm(x)                                  (the previous layer's end)
 *   q, k, v = h Wq, h Wk, h Wv;  q, k = rope(q), rope(k);  cache += k, v
 *   x = x + softmax(q K^T / sqrt(D), causal [, window]) V Wo
 *   h = rms_norm(x)
 *   x = x + (silu(h Wgate) * h Wup) Wdown;  h = the next layer's rms_norm(x)
 *
 * Qwen 2 and 3 run this same layer (qwen.c): their q/k/v biases and q/k
 * norms are tensors of their tables, which the blocks apply. */
#include <string.h>
#include "llm_internal.h"

wk_tensor *llm_llama_layer(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm)
{
    wk_tensor *q = blk_qkv_rope_cache(p, y, h);          /* q; k and v in the cache */
    wk_tensor *a = blk_attention(p, y, q);               /* attention(q, cache) Wo  */
    h = blk_residual_norm(p, a, NULL, y->ffn_norm);      /* x += a; h = norm(x)     */
    wk_tensor *f = blk_gated_mlp(p, y, h, LLM_SILU);     /* (silu(h Wg) * h Wu) Wd  */
    return blk_residual_norm(p, f, NULL, next_norm);     /* x += f; the next norm   */
}

/* Every layer in Mistral's window (v0.1; later Mistrals have none). */
static void all_sliding(llm_config *c, int64_t window)
{
    c->info.sliding_window = window;
    for (int64_t l = 0; l < c->info.n_layer; l++) c->sliding[l] = true;
}

/* llama.cpp's converter permutes Q's and K's rows so that rope rotates
 * adjacent pairs (hparams.c's top comment). */
static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k)
{
    int64_t experts = 0;
    wk_status st = llm_gguf_int(k->g, k->arch, "expert_count", false, &experts);
    if (st) return st;
    if (experts > 0) {   /* Mixtral: llama.cpp's converter writes it as llama with experts */
        c->arch = &llm_mixtral;
        c->info.arch = WK_LLM_MIXTRAL;
        return llm_mixtral.read_gguf(c, k);
    }
    c->info.rope_interleaved = true;
    if (k->swa > 0) all_sliding(c, k->swa);
    return WK_OK;
}

/* The window is Mistral's (MistralConfig: 4096 when absent, none when
 * null); transformers' LlamaModel has none. Biases and the activation are
 * checked with the other fields (llm_config_check.c). */
static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    wk_status st = llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
    if (st) return st;
    const char *mt = wk_json_string(wk_json_get(cfg, "model_type"), NULL);
    const bool mistral = mt && !strcmp(mt, "mistral");
    int64_t swa = mistral && !wk_json_get(cfg, "sliding_window") ? 4096 : 0;
    if (mistral && (st = llm_hf_int(cfg, "sliding_window", false, &swa))) return st;
    if (swa > 0) all_sliding(c, swa);
    return WK_OK;
}

static const llm_wrow rows[] = {
    LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE),
    LLM_ROWS_QKVO,
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE),
    LLM_ROWS_MLP,
};

const llm_arch_desc llm_llama = {
    .arch = WK_LLM_LLAMA,
    .name = "llama",
    .gguf_archs = (const char *const[]){ "llama", "mistral", NULL },
    .hf_types = (const char *const[]){ "llama", "mistral", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows,
    .n_rows = sizeof rows / sizeof rows[0],
    .layer = llm_llama_layer,
};
