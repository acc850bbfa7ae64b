/* mixtral.c — Mixtral (Jiang et al. 2024): llama's attention (a sliding
 * window on every layer where the config sets one) and a mixture of
 * experts in place of the MLP: the router's softmax over the experts,
 * the two largest (num_experts_per_tok) renormalized to sum 1, each a
 * SwiGLU MLP (w1 gate, w3 up, w2 down). The layer is moe.c's.
 *
 * Files: transformers' MixtralForCausalLM (model_type mixtral, one tensor
 * per expert: block_sparse_moe.experts.N.w1/w2/w3), and llama.cpp's GGUF,
 * whose converter writes Mixtral as architecture "llama" with
 * llama.expert_count set, Q and K permuted as for llama, and the experts
 * stacked (ffn_gate_exps, ffn_up_exps, ffn_down_exps, 3-d): llama.c's GGUF
 * reader hands such a file to this one. */
#include <string.h>
#include "llm_internal.h"

static void all_sliding(llm_config *c, int64_t window)
{
    c->info.sliding_window = window;
    for (int64_t l = 0; l < c->info.n_layer; l++) c->sliding[l] = true;
}

static wk_status read_gguf(llm_config *c, const llm_gguf_keys *k)
{
    c->info.rope_interleaved = true;   /* the llama converter permutes Q and K (hparams.c) */
    if (k->swa > 0) all_sliding(c, k->swa);
    return llm_moe_read_gguf(c, k, LLM_MOE_FF_PLAIN, false, true);
}

/* sliding_window: MixtralConfig's default is none (null); a value is every
 * layer's window (create_sliding_window_causal_mask) */
static wk_status read_hf(llm_config *c, const wk_json *cfg)
{
    wk_status st = llm_hf_rope(cfg, NULL, &c->info.rope_base, &c->hp.scaling);
    int64_t swa = 0;
    if (st || (st = llm_hf_int(cfg, "sliding_window", false, &swa))) return st;
    if (swa > 0) all_sliding(c, swa);
    return llm_moe_read_hf(c, cfg, "num_local_experts", "num_experts", "intermediate_size", NULL, NULL, true);
}

static const llm_wrow rows[] = {
    LLM_ROW_NORM(attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", LLM_DE),
    LLM_ROWS_QKVO,
    LLM_ROW_NORM(ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", LLM_DE),
    LLM_ROWS_EXPERTS("model.layers.%d.block_sparse_moe.gate.weight", "model.layers.%d.block_sparse_moe.experts.%d.w1.weight",
                     "model.layers.%d.block_sparse_moe.experts.%d.w3.weight",
                     "model.layers.%d.block_sparse_moe.experts.%d.w2.weight"),
};

const llm_arch_desc llm_mixtral = {
    .arch = WK_LLM_MIXTRAL,
    .name = "mixtral",
    .gguf_archs = (const char *const[]){ NULL },   /* GGUF: "llama" with experts (llama.c) */
    .hf_types = (const char *const[]){ "mixtral", NULL },
    .hf_rope_base = 1000000.0,
    .read_gguf = read_gguf,
    .read_hf = read_hf,
    .rows = rows,
    .n_rows = sizeof rows / sizeof rows[0],
    .layer = llm_moe_layer,
};
