/* qwen.c — Qwen 2 (and 2.5) and Qwen 3: llama's layer (llama.c) with
 * biases on the q, k and v projections (Qwen 2) or an RMS norm of each
 * query and key head before rope (Qwen 3). Both are tensors of their
 * tables below, which the blocks apply where they are loaded, so the
 * layer function is llama's:
 *
 *   q, k, v = h Wq + bq, h Wk + bk, h Wv + bv                 (Qwen 2)
 *   q, k = rms_norm(q) per head, rms_norm(k) per head        (Qwen 3)
 *   then rope, attention, the SwiGLU MLP as in llama.c.
 */
#include "llm_internal.h"

static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k)
{
    (void)c, (void)k;
    return WK_OK;
}

/* Windows (use_sliding_window, max_window_layers) and biases are checked
 * with the other fields (llm_config_check.c): what runs has none. */
static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    return llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
}

#define ROW_ATTN_NORM LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE)
#define ROW_FFN_NORM \
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE)

static const llm_wrow rows2[] = {
    ROW_ATTN_NORM,
    LLM_ROWS_QKVO,
    { offsetof(llm_layer, bq), "blk.%d.attn_q.bias", "model.layers.%d.self_attn.q_proj.bias", LLM_DQ, LLM_D0, false,
      LLM_SH_ROWS_Q, LLM_D0, 0 },
    { offsetof(llm_layer, bk), "blk.%d.attn_k.bias", "model.layers.%d.self_attn.k_proj.bias", LLM_DKV, LLM_D0, false,
      LLM_SH_ROWS_KV, LLM_D0, 0 },
    { offsetof(llm_layer, bv), "blk.%d.attn_v.bias", "model.layers.%d.self_attn.v_proj.bias", LLM_DKV, LLM_D0, false,
      LLM_SH_ROWS_KV, LLM_D0, 0 },
    ROW_FFN_NORM,
    LLM_ROWS_MLP,
};

static const llm_wrow rows3[] = {
    ROW_ATTN_NORM,
    LLM_ROWS_QKVO,
    LLM_ROW_NORM(q_norm, "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", LLM_DHEAD),
    LLM_ROW_NORM(k_norm, "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", LLM_DHEAD),
    ROW_FFN_NORM,
    LLM_ROWS_MLP,
};

const llm_arch_desc llm_qwen2 = {
    .arch = WK_LLM_QWEN2,
    .name = "qwen2",
    .gguf_archs = (const char *const[]){ "qwen2", NULL },
    .hf_types = (const char *const[]){ "qwen2", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows2,
    .n_rows = sizeof rows2 / sizeof rows2[0],
    .layer = llm_llama_layer,
};

const llm_arch_desc llm_qwen3 = {
    .arch = WK_LLM_QWEN3,
    .name = "qwen3",
    .gguf_archs = (const char *const[]){ "qwen3", NULL },
    .hf_types = (const char *const[]){ "qwen3", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows3,
    .n_rows = sizeof rows3 / sizeof rows3[0],
    .layer = llm_llama_layer,
};
