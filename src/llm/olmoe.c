/* olmoe.c — OLMoE (Muennighoff et al. 2024): llama's layer with an RMS
 * norm over the whole query and the whole key projection (all heads at
 * once, before the split into heads and rope), and a mixture of experts
 * in place of the MLP (moe.c's layer): the router's softmax over the
 * experts, the num_experts_per_tok largest, renormalized when
 * norm_topk_prob (OLMoE-1B-7B: not).
 *
 *   q = rms_norm(h Wq) (over H D), k = rms_norm(h Wk) (over Hkv D)
 *
 * blocks.c tells these norms from Qwen 3's per-head ones by the
 * descriptor's qk_norm_all; split over ranks, each rank norms its heads
 * with the sum of squares of all (one all_reduce of a number per token).
 * Files: transformers' OlmoeForCausalLM (one tensor per expert) and
 * llama.cpp's GGUF architecture olmoe (experts stacked). clip_qkv is
 * refused (llm_config_check.c). */
#include "llm_internal.h"

/* llama.cpp's olmoe does not renormalize (src/models/olmoe.cpp) */
static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k) { return llm_moe_read_gguf(c, k, LLM_MOE_FF_PLAIN, false, false); }

static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    wk_status st = llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
    return st ? st : llm_moe_read_hf(c, cfg, "num_experts", "num_local_experts", "intermediate_size", NULL, "norm_topk_prob", false);
}

static const llm_wrow rows[] = {
    LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE),
    LLM_ROWS_QKVO,
    /* over all heads: each rank holds its heads' part (tensor parallel) */
    { offsetof(llm_layer, q_norm), "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", LLM_DQ,
      LLM_D0, false, LLM_SH_ROWS_Q, LLM_D0, 0 },
    { offsetof(llm_layer, k_norm), "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", LLM_DKV,
      LLM_D0, false, LLM_SH_ROWS_KV, LLM_D0, 0 },
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE),
    LLM_ROWS_EXPERTS("model.layers.%d.mlp.gate.weight", "model.layers.%d.mlp.experts.%d.gate_proj.weight",
                     "model.layers.%d.mlp.experts.%d.up_proj.weight", "model.layers.%d.mlp.experts.%d.down_proj.weight"),
};

const llm_arch_desc llm_olmoe = {
    .arch = WK_LLM_OLMOE,
    .name = "olmoe",
    .gguf_archs = (const char *const[]){ "olmoe", NULL },
    .hf_types = (const char *const[]){ "olmoe", NULL },
    .hf_rope_base = 10000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows,
    .n_rows = sizeof rows / sizeof rows[0],
    .qk_norm_all = true,
    .layer = llm_moe_layer,
};
