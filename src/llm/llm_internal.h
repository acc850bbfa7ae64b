/* llm_internal.h — what the files of src/llm/ share. A model (struct
 * wk_llm) is four parts kept apart:
 *
 *   llm_config   what the file says: the architecture's descriptor, the
 *                hyperparameters, which layers slide, the tensor-parallel
 *                plan (hparams.c, arch.c and one file per architecture)
 *   llm_weights  the tensors read from the file, fused at load, and the
 *                rope tables made from the config (weights.c)
 *   llm_state    the KV caches, the position, the window caches (state.c)
 *   llm_runtime  the recorded decode steps and the timing (decode_graph.c,
 *                timing.c)
 *
 * plus the text side (tokenizer, end-of-generation ids, chat template:
 * text.c). A forward pass (step.c) embeds the tokens, runs each layer
 * through its architecture's layer function (llama.c, qwen.c, gemma3.c,
 * phi3.c, moe.c),
 * which is written with the blocks of blocks.c, and ends in the logits.
 * docs/architecture.md has the picture and how to add an architecture.
 * Written against the public headers only (tools/check-layers). */
#ifndef WICK_LLM_INTERNAL_H
#define WICK_LLM_INTERNAL_H

#include <stddef.h>
#include <string.h>
#include "wick_llm.h"
#include "wick_ext.h"
#include "wick_formats.h"
#include "tp.h"

/* ---- configuration ---------------------------------------------------------- */

/* The file a model came from (wick_formats.h), and what it holds: a GGUF
 * file or a safetensors model (one of the two). */
typedef struct llm_source {
    wk_model_file *file;
    const wk_gguf *gguf;
    const wk_safetensors *st;
    const wk_json *config;        /* safetensors: config.json                 */
    const wk_json *tokcfg;        /* safetensors: tokenizer_config.json       */
    const char *dir;              /* safetensors: the model's folder          */
} llm_source;

/* Hyperparameters beyond wk_llm_info. What differs between architectures
 * in structure (biases, q/k norms, post-norms, the MLP's activation) is
 * not here: it is the architecture's tensor table and layer function. */
typedef struct llm_hparams {
    bool gemma_norm;              /* norms are x * (1 + w) (HF gemma files)   */
    double attn_scale;            /* 0: 1/sqrt(D)                             */
    double embd_scale;            /* 0: none                                  */
    double attn_softcap, final_softcap;
    wk_rope_scaling scaling;      /* global layers                            */
    wk_rope_scaling scaling_local;
    bool local_rope;              /* sliding layers have their own rope tables
                                     (rope_base_local, scaling_local: gemma3) */
    bool freq_factors;            /* GGUF rope_freqs.weight divides the freqs */
    bool tied;                    /* output = token embedding                  */
    /* LongRoPE (phi3): frequency i divided by rope_factors[i] (the long
       ones when the context is longer than rope_orig_ctx, else the short
       ones, as llama.cpp chooses: state.c), cos and sin
       multiplied by rope_mscale (1 when 0) */
    float *rope_factors;          /* [R]: the short factors, then the long (R
                                     the rotated dims, llm_rope_dims)       */
    double rope_mscale;
    int64_t rope_orig_ctx;        /* the long factors serve contexts past it */
    int64_t rope_dims;            /* dims of a head rope rotates, the first
                                     ones (phi3's partial rotary; 0: all)   */
    /* mixture of experts (blocks.c blk_moe): experts, experts per token,
       the experts' and the shared expert's FFN widths (0: none), the
       chosen experts' weights renormalized to sum 1 */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool moe_norm_topk;
} llm_hparams;

typedef struct llm_arch_desc llm_arch_desc;
typedef struct llm_pass llm_pass;

typedef struct llm_config {
    const llm_arch_desc *arch;
    wk_llm_info info;
    llm_hparams hp;
    bool *sliding;                /* [n_layer]: the layer attends in a window */
    int64_t n_sliding;            /* its length: the layer count read first   */
    llm_tp tp;                    /* this rank's share (the whole model: 0 of 1) */
} llm_config;

/* ---- weights ------------------------------------------------------------------ */

/* One transformer block's weights. NULL where the architecture has none.
 * Matrices are [out, in] (a GGUF file's ne reversed, a HF Linear's
 * weight); dense ones are in the activation dtype, block ones as the file
 * has them. */
typedef struct llm_layer {
    wk_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *post_attn_norm;
    wk_tensor *ffn_norm, *w_gate, *w_up, *w_down, *post_ffn_norm;
    /* fused at load (weights.c): [wq; wk; wv] and its bias, and
       [w_gate; w_up], when the parts share a dtype; the parts are then
       NULL. One matmul instead of three (two) per step. */
    wk_tensor *wqkv, *bqkv, *w_gu;
    /* a mixture of experts (blocks.c blk_moe): the router [X, E], the
       experts stacked [X, F, E] (gate, up) and [X, E, F] (down), and the
       shared expert with its gate [1, E] (qwen2moe); NULL where absent */
    wk_tensor *router, *exp_gate, *exp_up, *exp_down;
    wk_tensor *sh_gate, *sh_up, *sh_down, *sh_inp;
} llm_layer;

typedef struct llm_weights {
    wk_tensor *tok_embd, *out_norm, *output;
    llm_layer *layers;            /* [n_layer] */
    wk_tensor *cos, *sin, *cos_local, *sin_local;   /* [context, D/2] f32 */
} llm_weights;

/* ---- run state -------------------------------------------------------------- */

/* The KV caches and the position. Window caches (state.c): the
 * sliding-window layers' K and V hold sw_cap positions, sw_base ..
 * sw_base + sw_cap - 1, when that is less than the context (sw_cap 0:
 * every cache holds the context). */
typedef struct llm_state {
    wk_tensor **k_cache, **v_cache;   /* [n_layer] of [1, Hkv, cap, D] (Hkv: the rank's) */
    int64_t pos, chunk;
    int64_t sw_cap, sw_base;
} llm_state;

/* ---- runtime ---------------------------------------------------------------- */

typedef struct llm_graphs llm_graphs;
typedef struct llm_timing llm_timing;

typedef struct llm_runtime {
    /* recorded decode steps (decode_graph.c); graph_off: WICK_LLM_GRAPH=0;
       graph_step: the positions one graph serves (WICK_LLM_GRAPH=N, a
       multiple of 16; 0 by default: the whole cache); greedy_graph: greedy
       steps through the greedy graph, queued ahead (the default;
       WICK_LLM_GREEDY_GRAPH=0: eager steps) */
    llm_graphs *graphs;
    bool graph_off, greedy_graph;
    int64_t graph_step;
    llm_timing *timing;           /* WICK_LLM_TIMING (timing.c); NULL: off */
} llm_runtime;

/* ---- text ------------------------------------------------------------------- */

typedef struct llm_text_state {
    char *chat_template;
    char *default_system;
    void *tok;                    /* text.c's */
    /* chat.c's: the template parsed, or NULL and why (tmpl_error); the
       special tokens' text it gets (bos, eos, unk, pad; NULL: none); its
       extra variables (WICK_CHAT_DATE as date_string; NULL: none) */
    wk_chat_template *tmpl;
    char *tmpl_error;
    char *special[4];
    wk_json *tmpl_vars;
} llm_text_state;

struct wk_llm {
    llm_config cfg;
    llm_weights w;
    llm_state st;
    llm_runtime rt;
    llm_text_state text;
    llm_source src;
    wk_device *dev;
};

/* The last component of a path, for labels and messages. */
static inline const char *llm_path_base(const char *path)
{
    if (!path) return "";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* ---- architectures (arch.c; one file each) ------------------------------------- */

/* The dims a tensor table names (resolved against the model's config). */
typedef enum llm_dim {
    LLM_D0, LLM_DE, LLM_DQ, LLM_DKV, LLM_DF, LLM_DHEAD, LLM_DVOC,
    LLM_DQKV,   /* q, k and v rows stacked (phi3's qkv_proj)          */
    LLM_DF2,    /* gate and up rows stacked (phi3's gate_up_proj)     */
    LLM_DX,     /* the experts                                         */
    LLM_DFX,    /* an expert's FFN width                               */
    LLM_DFS,    /* the shared expert's FFN width                       */
    LLM_DONE,   /* 1 (the shared expert's gate: one row)               */
} llm_dim;

/* What a rank of a tensor-parallel model holds of a weight (llm_tp.h). */
typedef enum llm_share {
    LLM_SH_ALL,       /* all of it (norms, q/k norms)                           */
    LLM_SH_ROWS_Q,    /* rows of its query heads (wq, bq)                       */
    LLM_SH_ROWS_KV,   /* rows of its KV heads (wk, wv, bk, bv)                  */
    LLM_SH_COLS_Q,    /* columns of its query heads (wo)                        */
    LLM_SH_ROWS_FF,   /* rows of its FFN slice (gate, up)                       */
    LLM_SH_COLS_FF,   /* columns of its FFN slice (down)                        */
    LLM_SH_ROWS_VOC,  /* rows of its vocabulary slice (embedding, output)       */
    LLM_SH_ROWS_FX,   /* each expert's rows of its expert-FFN slice (gate, up)  */
    LLM_SH_COLS_FX,   /* each expert's columns of that slice (down)             */
    LLM_SH_ROWS_FS,   /* rows of its shared-expert FFN slice (gate, up)         */
    LLM_SH_COLS_FS,   /* columns of that slice (down)                           */
    LLM_SH_ROWS_QKV,  /* q, k, v stacked in one matrix (phi3): its query heads'
                         rows, its KV heads' of k, of v, joined                 */
    LLM_SH_ROWS_GU,   /* gate and up stacked (phi3): its FFN slice of each      */
} llm_share;

/* One row of an architecture's table of layer tensors: the llm_layer
 * member it fills, its names (printf patterns with the layer) in a GGUF
 * file and in a Hugging Face file, its shape ([d0] or [d0, d1]), whether
 * it multiplies activations (a matrix: may stay block-quantized), and the
 * share a rank holds. Every row is required. */
typedef struct llm_wrow {
    size_t member;                /* offsetof(llm_layer, ...)                 */
    const char *gguf, *hf;
    llm_dim d0, d1;               /* d1 LLM_D0: a vector                      */
    bool matrix;
    llm_share share;
    /* experts (rank 3, [X, d0, d1]): LLM_DX; a GGUF file holds one
       stacked tensor (its name's pattern takes the layer), a HF file one
       tensor per expert (its pattern takes the layer and the expert),
       stacked at load. LLM_D0: not per expert. */
    llm_dim dx;
    unsigned flags;               /* LLM_W_*                                  */
} llm_wrow;
enum {
    LLM_W_OPTIONAL = 1,           /* may be absent (the member stays NULL)    */
    LLM_W_GGUF_VEC = 2,           /* GGUF holds [1, d1] as a vector [d1]      */
};

/* GGUF metadata of one architecture (hparams.c reads the common keys). */
typedef struct llm_gguf_keys llm_gguf_keys;
struct llm_gguf_keys {
    const wk_gguf *g;
    const char *arch;             /* general.architecture, the keys' prefix    */
    int64_t swa;                  /* attention.sliding_window (0: absent)      */
    bool swa_present;
};

struct llm_arch_desc {
    wk_llm_arch arch;
    const char *name;                /* wk_llm_arch_name                        */
    const char *const *gguf_archs;   /* general.architecture values, NULL-ended */
    const char *const *hf_types;     /* config.json model_type values            */
    /* defaults of a config.json that does not say */
    int64_t hf_head_dim;             /* 0: hidden_size / num_attention_heads    */
    double hf_rope_base;
    bool hf_tied;
    /* the architecture's own hyperparameters, after the common ones */
    wk_status (*read_gguf)(llm_config *c, const llm_gguf_keys *k);
    wk_status (*read_hf)(llm_config *c, const wk_json *cfg);
    const llm_wrow *rows;            /* the layer tensors                       */
    int n_rows;
    /* why tensor parallel is refused for it (NULL: it splits) */
    const char *tp_refused;
    /* q and k normed over all heads at once (OLMoE), not per head: split,
       the ranks join their sums of squares, and KV heads must split (a
       replicated one would count twice) */
    bool qk_norm_all;
    /* one layer of the forward pass (step.c calls it for each layer) */
    wk_tensor *(*layer)(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm);
};

/* llama's layer (llama.c), which Qwen 2 and 3 run too (qwen.c) */
wk_tensor *llm_llama_layer(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm);

/* The descriptors (one file each), and the lookups by name (arch.c). */
extern const llm_arch_desc llm_llama, llm_qwen2, llm_qwen3, llm_gemma3, llm_phi3;
extern const llm_arch_desc llm_mixtral, llm_qwen2moe, llm_qwen3moe, llm_olmoe;
/* the layer of the mixture-of-experts families and their readers (moe.c) */
wk_tensor *llm_moe_layer(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm);
/* the experts' FFN width in GGUF: feed_forward_length (llama's Mixtral,
   olmoe), or expert_feed_forward_length, absent: feed_forward_length /
   expert_used_count (qwen2moe, qwen3moe), as llama.cpp reads them */
enum { LLM_MOE_FF_PLAIN, LLM_MOE_FF_KEY };
wk_status llm_moe_read_gguf(llm_config *c, const llm_gguf_keys *k, int ff, bool shared, bool norm);
wk_status llm_moe_read_hf(llm_config *c, const wk_json *cfg, const char *experts_key, const char *alias_key,
                          const char *ff_key, const char *shared_key, const char *norm_key, bool norm_default);
/* GGUF: {arch}.key as an integer (absent: *out unchanged; required: an
   error naming it) */
wk_status llm_gguf_int(const wk_gguf *g, const char *arch, const char *key, bool required, int64_t *out);
const llm_arch_desc *llm_arch_by_gguf(const char *name);
const llm_arch_desc *llm_arch_by_hf(const char *model_type);
/* The names wick runs, for messages: "llama, mistral, qwen2, ..." */
const char *llm_arch_list(bool hf);

/* The rows every llama-like layer has: its q/k/v/o projections and its
 * gated MLP (the norms differ by architecture). */
#define LLM_ROWS_QKVO                                                                                          \
    { offsetof(llm_layer, wq), "blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", LLM_DQ,     \
      LLM_DE, true, LLM_SH_ROWS_Q, LLM_D0, 0 },                                                                         \
    { offsetof(llm_layer, wk), "blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", LLM_DKV,    \
      LLM_DE, true, LLM_SH_ROWS_KV, LLM_D0, 0 },                                                                        \
    { offsetof(llm_layer, wv), "blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", LLM_DKV,    \
      LLM_DE, true, LLM_SH_ROWS_KV, LLM_D0, 0 },                                                                        \
    { offsetof(llm_layer, wo), "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", LLM_DE, \
      LLM_DQ, true, LLM_SH_COLS_Q, LLM_D0, 0 }
#define LLM_ROWS_MLP                                                                                           \
    { offsetof(llm_layer, w_gate), "blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", LLM_DF,   \
      LLM_DE, true, LLM_SH_ROWS_FF, LLM_D0, 0 },                                                                        \
    { offsetof(llm_layer, w_up), "blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", LLM_DF, LLM_DE, \
      true, LLM_SH_ROWS_FF, LLM_D0, 0 },                                                                                \
    { offsetof(llm_layer, w_down), "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", LLM_DE,   \
      LLM_DF, true, LLM_SH_COLS_FF, LLM_D0, 0 }
/* A mixture of experts: the router and the experts' stacks (GGUF: one
 * tensor each; HF: one per expert, the patterns' second %d) */
#define LLM_ROWS_EXPERTS(hf_router, hf_gate, hf_up, hf_down)                                                     \
    { offsetof(llm_layer, router), "blk.%d.ffn_gate_inp.weight", hf_router, LLM_DX, LLM_DE, true, LLM_SH_ALL,    \
      LLM_D0, 0 },                                                                                               \
    { offsetof(llm_layer, exp_gate), "blk.%d.ffn_gate_exps.weight", hf_gate, LLM_DFX, LLM_DE, true, LLM_SH_ROWS_FX,  \
      LLM_DX, 0 },                                                                                               \
    { offsetof(llm_layer, exp_up), "blk.%d.ffn_up_exps.weight", hf_up, LLM_DFX, LLM_DE, true, LLM_SH_ROWS_FX, LLM_DX, \
      0 },                                                                                                       \
    { offsetof(llm_layer, exp_down), "blk.%d.ffn_down_exps.weight", hf_down, LLM_DE, LLM_DFX, true, LLM_SH_COLS_FX,  \
      LLM_DX, 0 }
#define LLM_ROW_NORM(member, gguf, hf, dim) { offsetof(llm_layer, member), gguf, hf, dim, LLM_D0, false, LLM_SH_ALL, LLM_D0, 0 }

/* the dims of a head that rope rotates (the first ones) */
static inline int64_t llm_rope_dims(const llm_config *c) { return c->hp.rope_dims > 0 ? c->hp.rope_dims : c->info.head_dim; }

/* ---- hyperparameters (hparams.c) ------------------------------------------------ */

/* The architecture and hyperparameters from the file: m->cfg filled
 * (sliding allocated). */
wk_status llm_read_config(wk_llm *m, const char *path);
/* The file's tensor for a role: gguf_name / hf_name are printf patterns
 * with the layer (-1 for a global tensor). NULL when absent. */
const wk_file_tensor *llm_find(const wk_llm *m, const char *gguf_name, const char *hf_name, int layer);
/* config.json readers for the architectures' own keys: an integer (a
 * missing required one named), and rope theta and scaling (layer_type:
 * transformers 5's per-layer-type rope_parameters, gemma3) */
wk_status llm_hf_int(const wk_json *c, const char *key, bool required, int64_t *out);
/* GGUF {arch}.{key} as a number (an integer too) into *out; absent: *out
 * unchanged; another type: WK_ERR_IO naming the key */
wk_status llm_gguf_float(const wk_gguf *g, const char *arch, const char *key, double *out);
wk_status llm_hf_rope(const wk_json *c, const char *layer_type, double *theta, wk_rope_scaling *sc);

/* ---- weights and state (weights.c, state.c) --------------------------------------- */

wk_status llm_load_weights(wk_llm *m, const wk_llm_options *o);
wk_status llm_fuse_weights(wk_llm *m);   /* q/k/v and gate/up stacked (WICK_LLM_FUSE=0: not) */
void llm_weights_free(wk_llm *m);
/* the rope tables, the KV caches (window caches where they are smaller) */
wk_status llm_state_init(wk_llm *m);
void llm_state_free(wk_llm *m);
/* the position after a rewind to pos (window caches may empty it) */
void llm_set_pos(wk_llm *m, int64_t pos);
/* room for T positions at the position in the window caches */
wk_status llm_window_room(wk_llm *m, int64_t T);
/* layer l's cache holds a window (moves), not the whole context */
static inline bool llm_windowed(const wk_llm *m, int64_t l) { return m->cfg.sliding[l] && m->st.sw_cap > 0; }

/* ---- the forward pass (step.c, blocks.c) ------------------------------------------- */

/* What a recorded decode step (decode_graph.c) reads from device memory
 * instead of taking from the host: the position, the rope tables' rows
 * there, and the count of keys in the cache (the attention spans a fixed
 * stretch of it). NULL: an eager pass (the host's pos). */
typedef struct llm_dyn {
    const wk_tensor *pos;                    /* u32 [1]                         */
    const wk_tensor *cos, *sin, *cos_l, *sin_l;   /* [1, D/2] rows at pos (local: gemma3) */
    const wk_tensor *kv_len;                 /* u32 [1]: pos + 1                */
    int64_t cap;                             /* keys the attention spans        */
} llm_dyn;

/* A pass over a flat batch of tokens from many sequences with a paged KV
 * cache (batch.c, wk_llm_eval_batch): the device's copies of the batch's
 * ids, the rope tables' rows at each token's position, and the pools.
 * NULL in a pass over one sequence (the model's own caches). */
typedef struct llm_paged {
    const wk_tensor *pos, *seq, *slot;        /* u32 [T]: position, sequence, cache row */
    const wk_tensor *block_table;             /* u32 [S, MB]                     */
    const wk_tensor *out;                     /* u32 [n_out]: rows of the logits */
    const wk_tensor *cos, *sin, *cos_l, *sin_l;   /* [T, D/2] at each token's position */
    wk_tensor *const *k_pool, *const *v_pool; /* [n_layer] of [NB, BS, Hkv, D]  */
} llm_paged;

/* What a pass gives back: rows of logits (f32) of tokens first_out ..
 * T-1, the last token's argmax (u32 [1], taken on the device, so that 4
 * bytes come back instead of a row), or nothing (the residual). */
enum { LLM_OUT_NONE, LLM_OUT_LOGITS, LLM_OUT_BEST };

/* One forward pass in progress: its tokens' span, the residual stream x
 * and the block output f not yet added to it. The blocks read and write
 * it; the architectures' layer functions pass it along. */
struct llm_pass {
    wk_llm *m;
    int64_t l;                    /* the layer being run                    */
    int64_t T, pos;               /* tokens, the first one's position       */
    const llm_dyn *dy;            /* a recorded step: NULL when eager       */
    const llm_paged *pg;          /* a batch over a paged cache, or NULL    */
    wk_tensor *x, *f;             /* the residual stream; the last block's
                                     output when not yet added (last layer) */
};

/* The pass of tokens tid (u32 [T], the rank's ids; NULL: the one token
 * of the rank's row `row`, known to the host) at positions pos ..
 * pos+T-1 (dy: at dy's position, T 1), up to the output `want` asks for:
 * a tensor of the current scope, NULL + error on failure (step.c). */
wk_tensor *llm_pass_run(wk_llm *m, const wk_tensor *tid, int64_t row, int64_t T, int64_t pos, int64_t first_out,
                        int want, const llm_dyn *dy, const llm_paged *pg);
/* The rank's rows of the token ids (those outside its vocabulary share
 * look up the share's last row, zeros); ids [T]. */
void llm_local_ids(const wk_llm *m, const int32_t *tokens, int64_t T, uint32_t *ids);

/* The blocks (blocks.c): each names what it makes (timing.c marks the
 * pass's parts by these names). */
typedef enum llm_act { LLM_SILU, LLM_GELU_TANH } llm_act;
wk_tensor *blk_embed(llm_pass *p, const wk_tensor *tid, int64_t row);
wk_tensor *blk_norm(const llm_pass *p, const wk_tensor *x, const wk_tensor *w);
wk_tensor *blk_qkv_rope_cache(llm_pass *p, const llm_layer *y, const wk_tensor *h);
wk_tensor *blk_attention(llm_pass *p, const llm_layer *y, const wk_tensor *q);
wk_tensor *blk_gated_mlp(llm_pass *p, const llm_layer *y, const wk_tensor *h, llm_act act);
wk_tensor *blk_moe(llm_pass *p, const llm_layer *y, const wk_tensor *h);
wk_tensor *blk_residual_norm(llm_pass *p, wk_tensor *f, const wk_tensor *post, const wk_tensor *next_norm);
wk_tensor *blk_logits(llm_pass *p, int64_t first_out, int want);

/* ---- runtime (decode_graph.c, timing.c) -------------------------------------------- */

/* The recorded steps: the one-token pass replayed to its logits (*used
 * false: the model does not record; do the eager pass), and the greedy
 * step, which feeds itself the next token on the device. */
wk_status llm_graph_step(wk_llm *m, int32_t token, float *out, bool *used);
wk_status llm_graph_greedy(wk_llm *m, int32_t token, int32_t *best, bool *used);
/* a greedy step queued ahead is not to be used (what it read changes) */
void llm_greedy_drop(wk_llm *m);
void llm_graphs_free(wk_llm *m);

/* WICK_LLM_TIMING=1: host time of one-token passes (issue, wait); =2: the
 * device's time by named part, from events at each block's end.
 * WICK_LLM_DUMP: each block's result of eager passes, by name, printed. */
void llm_timing_init(wk_llm *m);
double llm_now_ms(void);
bool llm_timing_by_part(const wk_llm *m);        /* =2 (no recorded steps then) */
bool llm_parts_on(const wk_llm *m, int64_t T);   /* events between parts this pass */
bool llm_parts_start(const wk_llm *m, bool timed);   /* the same for a pass the caller times */
/* the end of a block: t is what it made, by name (timing; WICK_LLM_DUMP) */
void llm_mark(const llm_pass *p, const char *name, const wk_tensor *t);
void llm_parts_add(wk_llm *m);                   /* after a pass's result is back */
void llm_timing_add(wk_llm *m, double t0, double t1);
void llm_timing_replay(wk_llm *m, int phase);    /* events around a replay: 0 before the inputs, 1, 2 */
void llm_timing_replay_add(wk_llm *m);
void llm_timing_free(wk_llm *m);

/* ---- text (text.c, generate.c) ------------------------------------------------------ */

/* wk_llm_eval without logits: *next is the last token's argmax, taken on
 * the device (the first index of the largest logit; a NaN logit counts as
 * the largest there, where the sampler skips it). For greedy generation. */
wk_status llm_eval_greedy(wk_llm *m, const int32_t *tokens, int64_t n, int32_t *next);
/* tokenizer and end-of-generation tokens, set up at load */
wk_status llm_text_init(wk_llm *m);
void llm_text_free(wk_llm *m);
/* chat.c: the chat template parsed and tried, once the text side is
   loaded (never fails: a template wick cannot run is noted, and the fixed
   format stands in); and freed */
void llm_chat_init(wk_llm *m);
void llm_chat_free(wk_llm *m);
/* the model's tokenizer, NULL when it has none (text.c) */
const struct wk_tokenizer *llm_text_tokenizer(const wk_llm *m);

#endif /* WICK_LLM_INTERNAL_H */
