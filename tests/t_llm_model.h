/* t_llm_model.h — small random models of every architecture (t_llm_model.c):
 * their config and weights, a float64 reference forward pass, and the
 * GGUF / safetensors writers the model tests load them from. */
#ifndef WICK_T_LLM_MODEL_H
#define WICK_T_LLM_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include "t_files.h"
#include "wick_llm.h"

enum { A_LLAMA, A_QWEN2, A_QWEN3, A_GEMMA3 };
extern const char *const arch_names[];
/* A name -> f32 array list, written as GGUF or safetensors. */
typedef t_tensor tw;

typedef struct tcfg {
    int arch;
    bool hf;            /* safetensors + config.json; else GGUF */
    bool hf_v5;         /* config in transformers 5's rope_parameters style */
    int V, E, L, H, Hkv, D, F, window;
    double base, base_local, eps;
    bool tied;
    bool freq_factors;  /* GGUF llama: rope_freqs.weight (Llama 3.1 files) */
} tcfg;

typedef struct tlayer {
    double *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *post_attn, *ffn_norm, *gate, *up,
        *down, *post_ffn;
} tlayer;

typedef struct tmodel {
    tcfg c;
    double *emb, *out_norm, *output;
    double *ff;         /* [D/2] rope frequency divisors, or NULL */
    tlayer *l;
} tmodel;


/* random weights for c */
tmodel make_model(tcfg c);
/* layer l attends in a window (gemma3's 5-in-6 pattern) */
bool sliding(const tcfg *c, int l);
/* logits [T, V] of tokens tok at positions 0 .. T-1, float64 (malloc'd by t_mem) */
double *ref_forward(const tmodel *m, const int32_t *tok, int T);
/* the model's tensors as files store them; n returned */
int collect(const tmodel *m, tw *out);
/* f32 copies of n doubles (+ add) */
float *to_f32(const double *p, int64_t n, double add);
/* a temporary path for this process ("what" names it) */
const char *tmp_path(const char *what);
/* one tensor of a GGUF written in another dtype than the rest (NULL: none) */
extern const char *mixed_name;
extern wk_dtype mixed_dt;
/* the token strings write_gguf stores as tokenizer.ggml.tokens (V of
 * them; NULL: none, the model runs ids only) */
extern const char *const *gguf_tokens;
extern int gguf_context;   /* the context_length write_gguf stores (0: 64) */
bool write_gguf(const tmodel *m, const char *path, wk_dtype wdt);
bool write_hf(const tmodel *m, const char *dir);
void rm_model(const char *path);
/* max |a - b| over max |b| (inf when a has a non-finite value) */
double rel_err(const float *a, const double *b, int64_t n);
/* the test configs of each architecture (GGUF or safetensors) */
tcfg cfg_of(int arch, bool hf);

#endif
