/* llm_internal.h — what the language-model files of src/model/ share: the
 * model struct (hyperparameters, weights, KV cache, rope tables), the
 * hyperparameter reader (llm_arch.c) and the text side (llm_text.c).
 * Written against the public headers only (tools/check-layers). */
#ifndef WICK_LLM_INTERNAL_H
#define WICK_LLM_INTERNAL_H

#include <string.h>
#include "wick_llm.h"
#include "wick_ext.h"
#include "wick_formats.h"
#include "llm_tp.h"

/* The last component of a path, for labels and messages. */
static inline const char *llm_path_base(const char *path)
{
    if (!path) return "";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* One transformer block's weights and cache. NULL where the architecture
 * has none. Matrices are [out, in] (a GGUF file's ne reversed, a HF
 * Linear's weight); dense ones are in the activation dtype, block ones as
 * the file has them. */
typedef struct llm_layer {
    wk_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *post_attn_norm;
    wk_tensor *ffn_norm, *w_gate, *w_up, *w_down, *post_ffn_norm;
    /* fused at load (llm.c, fuse_layer): [wq; wk; wv] and its bias, and
       [w_gate; w_up], when the parts share a dtype; the parts are then
       NULL. One matmul instead of three (two) per step. */
    wk_tensor *wqkv, *bqkv, *w_gu;
    bool sliding;                 /* gemma3's local layers, Mistral's window */
    wk_tensor *k_cache, *v_cache; /* [1, Hkv, context, D] (Hkv: the rank's)    */
} llm_layer;

/* The file a model came from: one of the two. */
typedef struct llm_source {
    wk_gguf *gguf;
    wk_safetensors *st;
    wk_json *config;              /* safetensors: config.json                 */
    wk_json *tokcfg;              /* safetensors: tokenizer_config.json       */
    char *dir;                    /* safetensors: the model's folder          */
} llm_source;

/* Hyperparameters beyond wk_llm_info. */
typedef struct llm_hparams {
    bool gemma_norm;              /* norms are x * (1 + w) (HF gemma files)   */
    bool qkv_bias, qk_norm, post_norms, gelu_mlp;
    double attn_scale;            /* 0: 1/sqrt(D)                             */
    double embd_scale;            /* 0: none                                  */
    double attn_softcap, final_softcap;
    wk_rope_scaling scaling;      /* global layers                            */
    wk_rope_scaling scaling_local;
    bool freq_factors;            /* GGUF rope_freqs.weight divides the freqs */
    bool tied;                    /* output = token embedding                  */
} llm_hparams;

struct wk_llm {
    wk_llm_info info;
    llm_hparams hp;
    llm_tp tp;                    /* this rank's share (the whole model: 0 of 1) */
    llm_source src;
    wk_device *dev;
    wk_tensor *tok_embd, *out_norm, *output;
    llm_layer *layers;
    wk_tensor *cos, *sin, *cos_local, *sin_local;   /* [context, D/2] f32 */
    int64_t pos, chunk;
    /* window caches (llm.c): the sliding-window layers' K and V hold
       sw_cap positions, sw_base .. sw_base + sw_cap - 1, when that is
       less than the context (sw_cap 0: every cache holds the context) */
    int64_t sw_cap, sw_base;
    /* WICK_LLM_TIMING=1: host time of one-token forward passes, split into
       issuing the work and waiting for the logits (printed at free); =2:
       also the device's time by part of the pass, from events recorded
       between the parts (LLM_PARTS per layer, then the output head) */
    int timing;
    /* recorded decode steps (llm.c, "recorded decode steps"); graph_off:
       WICK_LLM_GRAPH=0; graph_step: the positions one graph serves
       (WICK_LLM_GRAPH=N, a multiple of 16; 0 by default: the whole cache);
       greedy_graph: greedy steps through the greedy graph, queued ahead
       (the default; WICK_LLM_GREEDY_GRAPH=0: eager steps) */
    struct llm_graphs *graphs;
    bool graph_off, greedy_graph;
    int64_t graph_step;
    int64_t t_steps;
    double t_issue_ms, t_wait_ms;
    struct wk_event **t_ev;       /* LLM_EVENTS(m) events (llm.c)         */
    double t_part_ms[7];          /* per part (llm.c), over steps, layers  */
    /* WICK_LLM_TIMING=1 with recorded steps: events before the step's
       input writes, before and after the replay; their device times */
    struct wk_event *t_gev[3];
    double t_gw_ms, t_gg_ms;
    int64_t t_gn;
    /* text: token strings from the file (GGUF) for EOG detection and,
       when a tokenizer is built in, the tokenizer */
    char *chat_template;
    char *default_system;
    void *tok;                    /* llm_text.c's */
};

/* llm_arch.c: architecture and hyperparameters from the file, the names
 * of its tensors. */
wk_status llm_read_hparams(wk_llm *m, const char *path);
/* The file's tensor for a role: gguf_name / hf_name are printf patterns
 * with the layer (-1 for a global tensor). NULL when absent. */
const wk_file_tensor *llm_find(const wk_llm *m, const char *gguf_name, const char *hf_name, int layer);

/* llm.c: wk_llm_eval without logits: *next is the last token's argmax,
 * taken on the device (the first index of the largest logit; a NaN logit
 * counts as the largest there, where the sampler skips it). For greedy
 * generation (llm_text.c). */
wk_status llm_eval_greedy(wk_llm *m, const int32_t *tokens, int64_t n, int32_t *next);

/* llm.c: the recorded decode steps' graphs and inputs, freed (at free,
 * and wherever what they recorded stops holding). */
typedef struct llm_graphs llm_graphs;
void llm_graphs_free(wk_llm *m);

/* llm_text.c: tokenizer and end-of-generation tokens, set up at load. */
wk_status llm_text_init(wk_llm *m);
void llm_text_free(wk_llm *m);


#endif /* WICK_LLM_INTERNAL_H */
