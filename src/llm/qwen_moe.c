/* qwen_moe.c — Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B) and Qwen3-MoE
 * (Qwen3-30B-A3B, 235B-A22B): the attention of Qwen 2 (q/k/v biases) or
 * Qwen 3 (q/k RMS norms per head) from qwen.c's tables, and a mixture of
 * experts in place of the MLP (moe.c's layer, blocks.c blk_moe): the
 * router's softmax over the experts, the num_experts_per_tok largest,
 * renormalized when norm_topk_prob; Qwen2-MoE adds a shared expert on
 * every token, gated by sigmoid(h . shared_expert_gate):
 *
 *   f = sum_e w_e expert_e(h) [+ sigmoid(h Wsg) shared(h)]
 *
 * Files: transformers' Qwen2MoeForCausalLM / Qwen3MoeForCausalLM (one
 * tensor per expert: mlp.experts.N.{gate,up,down}_proj) and llama.cpp's
 * GGUF architectures qwen2moe / qwen3moe (experts stacked; the shared
 * expert's gate a vector, ffn_gate_inp_shexp). Every layer is sparse:
 * decoder_sparse_step other than 1 and mlp_only_layers are refused
 * (llm_config_check.c). */
#include "llm_internal.h"

/* llama.cpp renormalizes for qwen3moe, not for qwen2moe (src/models/) */
static wk_status read_gguf2(llm_config *c, const llm_gguf_keys *k) { return llm_moe_read_gguf(c, k, LLM_MOE_FF_KEY, true, false); }
static wk_status read_gguf3(llm_config *c, const llm_gguf_keys *k) { return llm_moe_read_gguf(c, k, LLM_MOE_FF_KEY, false, true); }

static wk_status read_hf2(llm_config *c, const wk_json *cfg)
{
    wk_status st = llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
    return st ? st : llm_moe_read_hf(c, cfg, "num_experts", NULL, "moe_intermediate_size", "shared_expert_intermediate_size",
                                     "norm_topk_prob", false);
}

static wk_status read_hf3(llm_config *c, const wk_json *cfg)
{
    wk_status st = llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
    return st ? st : llm_moe_read_hf(c, cfg, "num_local_experts", "num_experts", "moe_intermediate_size", NULL, "norm_topk_prob", false);
}

#define ROW_ATTN_NORM LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE)
#define ROW_FFN_NORM \
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE)
#define ROWS_EXPERTS                                                                                   \
    LLM_ROWS_EXPERTS("model.layers.%d.mlp.gate.weight", "model.layers.%d.mlp.experts.%d.gate_proj.weight", \
                     "model.layers.%d.mlp.experts.%d.up_proj.weight", "model.layers.%d.mlp.experts.%d.down_proj.weight")

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
    ROWS_EXPERTS,
    { offsetof(llm_layer, sh_gate), "blk.%d.ffn_gate_shexp.weight", "model.layers.%d.mlp.shared_expert.gate_proj.weight",
      LLM_DFS, LLM_DE, true, LLM_SH_ROWS_FS, LLM_D0, 0 },
    { offsetof(llm_layer, sh_up), "blk.%d.ffn_up_shexp.weight", "model.layers.%d.mlp.shared_expert.up_proj.weight",
      LLM_DFS, LLM_DE, true, LLM_SH_ROWS_FS, LLM_D0, 0 },
    { offsetof(llm_layer, sh_down), "blk.%d.ffn_down_shexp.weight", "model.layers.%d.mlp.shared_expert.down_proj.weight",
      LLM_DE, LLM_DFS, true, LLM_SH_COLS_FS, LLM_D0, 0 },
    { offsetof(llm_layer, sh_inp), "blk.%d.ffn_gate_inp_shexp.weight", "model.layers.%d.mlp.shared_expert_gate.weight",
      LLM_DONE, LLM_DE, true, LLM_SH_ALL, LLM_D0, LLM_W_GGUF_VEC },
};

static const llm_wrow rows3[] = {
    ROW_ATTN_NORM,
    LLM_ROWS_QKVO,
    LLM_ROW_NORM(q_norm, "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", LLM_DHEAD),
    LLM_ROW_NORM(k_norm, "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", LLM_DHEAD),
    ROW_FFN_NORM,
    ROWS_EXPERTS,
};

const llm_arch_desc llm_qwen2moe = {
    .arch = WK_LLM_QWEN2MOE,
    .name = "qwen2moe",
    .gguf_archs = (const char *const[]){ "qwen2moe", NULL },
    .hf_types = (const char *const[]){ "qwen2_moe", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf2,
    .read_hf = read_hf2,
    .rows = rows2,
    .n_rows = sizeof rows2 / sizeof rows2[0],
    .layer = llm_moe_layer,
};

const llm_arch_desc llm_qwen3moe = {
    .arch = WK_LLM_QWEN3MOE,
    .name = "qwen3moe",
    .gguf_archs = (const char *const[]){ "qwen3moe", NULL },
    .hf_types = (const char *const[]){ "qwen3_moe", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf3,
    .read_hf = read_hf3,
    .rows = rows3,
    .n_rows = sizeof rows3 / sizeof rows3[0],
    .layer = llm_moe_layer,
};
