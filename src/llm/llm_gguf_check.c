/* llm_gguf_check.c — the GGUF half of the loader's table of switches
 * (llm_config_check.c has the config.json half and says what the outcomes
 * mean): every key of llama.cpp's loader that changes the computation of
 * llama (and Mixtral, llama with experts), qwen2, qwen3, gemma3, phi3,
 * qwen2moe, qwen3moe and olmoe, read, ignored as llama.cpp ignores it, or
 * refused; and the tensors, since llama.cpp refuses a file with tensors it
 * does not create and creates optional ones (biases, fused q/k/v, experts)
 * that wick does not run: wick accepts exactly the tensors it loads.
 * The reference read: ggml-org/llama.cpp@0c1e57098 (src/llama-model.cpp
 * load_hparams, src/models/{llama,qwen2,qwen3,gemma3}.cpp,
 * src/llama-context.cpp). docs/model-config.md is the table in prose.
 */
#include <stdio.h>
#include <string.h>
#include "llm_config_check.h"

enum { READ, IGNORED, REFUSED };   /* as in llm_config_check.c */
enum {
    G_LLAMA = 1, G_QWEN2 = 2, G_QWEN3 = 4, G_GEMMA3 = 8, G_PHI3 = 16, G_QWEN2MOE = 32, G_QWEN3MOE = 64, G_OLMOE = 128,
    G_ALL = 255
};
#define G_MOE (G_QWEN2MOE | G_QWEN3MOE | G_OLMOE)   /* and llama with experts: Mixtral */
#define G_DENSE (G_QWEN2 | G_QWEN3 | G_GEMMA3 | G_PHI3)

typedef struct gctx {
    const wk_gguf *g;
    const char *arch;
    unsigned type;
    bool moe;                     /* experts (a MoE architecture, or llama's Mixtral) */
    int64_t L;
    char key[160];                /* the key a check names (its row's unless it sets another) */
    const wk_gguf_value *val;
    wk_status st;
    char why[320];
} gctx;

typedef const char *(*gguf_fn)(gctx *x, const wk_gguf_value *v);

static const wk_gguf_value *g_get(const gctx *x, const char *suffix)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", x->arch, suffix);
    return wk_gguf_find(x->g, k);
}

static bool g_num(const wk_gguf_value *v, double *d)
{
    int64_t i;
    if (wk_gguf_value_float(v, d)) return true;
    if (!wk_gguf_value_int(v, &i)) return false;
    *d = (double)i;
    return true;
}

static const char *g_show(const wk_gguf_value *v, char *buf, size_t n)
{
    if (!v) return "missing";
    bool b;
    double d;
    if (wk_gguf_value_type(v) == WK_GGUF_STRING) snprintf(buf, n, "'%.60s'", wk_gguf_value_str(v, NULL));
    else if (wk_gguf_value_bool(v, &b)) return b ? "true" : "false";
    else if (wk_gguf_value_type(v) == WK_GGUF_ARRAY) snprintf(buf, n, "an array of %llu", (unsigned long long)wk_gguf_array_len(v));
    else if (g_num(v, &d)) snprintf(buf, n, "%.9g", d);
    else return "a value of another type";
    return buf;
}

static const char *g_required(gctx *x, const wk_gguf_value *v)
{
    x->st = WK_ERR_IO;
    return v ? NULL : "";
}

static const char *g_nonzero(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    double d;
    return g_num(v, &d) && d != 0 ? "" : NULL;
}

static const char *g_not_one(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    double d;
    return g_num(v, &d) && d != 1 ? "" : NULL;
}

static const char *g_negative(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    double d;
    return g_num(v, &d) && d < 0 ? "a negative cap is not supported (llama.cpp's equals that of its absolute value)" : NULL;
}

static const char *g_scale(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    double d;
    return g_num(v, &d) && d != 0 && d != 1 ? "" : NULL;
}

static const char *g_false(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    bool b;
    return wk_gguf_value_bool(v, &b) && !b ? "" : NULL;
}

static const char *g_rope_type(gctx *x, const wk_gguf_value *v)
{
    (void)x;
    const char *s = v ? wk_gguf_value_str(v, NULL) : "linear";
    return s && (!strcmp(s, "none") || !strcmp(s, "linear")) ? NULL : "";
}

/* key and value lengths: llama.cpp's default E / H; the window layers'
   own ones default to the global layers' */
static int64_t g_len(const gctx *x, const char *suffix)
{
    int64_t E = 0, H = 0, v;
    wk_gguf_value_int(g_get(x, "embedding_length"), &E);
    wk_gguf_value_int(g_get(x, "attention.head_count"), &H);
    if (!strcmp(suffix, "rope.dimension_count")) return wk_gguf_value_int(g_get(x, suffix), &v) ? v : g_len(x, "attention.key_length");
    return wk_gguf_value_int(g_get(x, suffix), &v) ? v : H > 0 ? E / H : 0;
}

static const char *g_same_as(gctx *x, const wk_gguf_value *v, const char *other)
{
    int64_t a;
    if (!v || (wk_gguf_value_int(v, &a) && a == g_len(x, other))) return NULL;
    snprintf(x->why, sizeof x->why, "%s.%s is %lld: wick runs one head size for keys, values and rope in every layer",
             x->arch, other, (long long)g_len(x, other));
    return x->why;
}
static const char *g_value_len(gctx *x, const wk_gguf_value *v) { return g_same_as(x, v, "attention.key_length"); }
static const char *g_key_swa(gctx *x, const wk_gguf_value *v) { return g_same_as(x, v, "attention.key_length"); }
static const char *g_value_swa(gctx *x, const wk_gguf_value *v) { return g_same_as(x, v, "attention.value_length"); }
static const char *g_rot_swa(gctx *x, const wk_gguf_value *v) { return g_same_as(x, v, "rope.dimension_count"); }

static const char *g_factor(gctx *x, const wk_gguf_value *v)
{
    double f;
    const char *t = wk_gguf_value_str(g_get(x, "rope.scaling.type"), NULL);
    if (!g_num(v, &f) || f == 0 || f == 1 || (t && !strcmp(t, "none")) || wk_gguf_tensor_index(x->g, "rope_freqs.weight") < 0)
        return NULL;
    return "linear scaling together with rope_freqs.weight is not supported (llama.cpp applies both)";
}

static const char *g_pattern(gctx *x, const wk_gguf_value *v)
{
    int64_t n;
    if (!v || (wk_gguf_value_int(v, &n) && n >= 0)) return NULL;
    x->st = WK_ERR_IO;
    if (wk_gguf_value_type(v) != WK_GGUF_ARRAY) return "a period must be 0 or more, or a flag per layer";
    wk_gguf_type t = wk_gguf_array_type(v);
    if (t != WK_GGUF_BOOL && t != WK_GGUF_U32 && t != WK_GGUF_I32) return "llama.cpp takes bool, u32 or i32 flags";
    if ((int64_t)wk_gguf_array_len(v) != x->L) {
        snprintf(x->why, sizeof x->why, "one flag per layer is wanted (%lld layers)", (long long)x->L);
        return x->why;
    }
    return NULL;
}

typedef struct gguf_rule {
    const char *key;   /* after "<arch>." */
    unsigned types;
    int outcome;
    gguf_fn check;
    const char *why;
} gguf_rule;

static const gguf_rule gguf_rules[] = {
    { "context_length", G_ALL, READ, NULL, "required" },
    { "embedding_length", G_ALL, READ, NULL, "required" },
    { "block_count", G_ALL, READ, NULL, "required" },
    { "feed_forward_length", G_ALL, READ, NULL, "required by wick (llama.cpp fails later without it)" },
    { "attention.head_count", G_ALL, READ, NULL, "required by wick" },
    { "attention.head_count_kv", G_ALL, READ, NULL, "absent: head_count (as llama.cpp)" },
    { "attention.key_length", G_ALL, READ, NULL, "the head size; absent: embedding_length / head_count" },
    { "attention.value_length", G_ALL, REFUSED, g_value_len, "" },
    { "attention.key_length_swa", G_ALL, REFUSED, g_key_swa, "" },
    { "attention.value_length_swa", G_ALL, REFUSED, g_value_swa, "" },
    { "rope.dimension_count_swa", G_ALL, REFUSED, g_rot_swa, "" },
    { "rope.dimension_count", G_ALL, READ, NULL, "refused by the reader unless it is the head size" },
    { "attention.layer_norm_rms_epsilon", G_ALL, READ, g_required,
      "llama.cpp refuses a file without it for this architecture (a required key)" },
    { "attention.layer_norm_epsilon", G_ALL, IGNORED, NULL, "these architectures' norms are RMSNorms" },
    { "rope.freq_base", G_ALL, READ, NULL, "absent: 10000 (as llama.cpp)" },
    { "rope.scaling.type", G_ALL, READ, g_rope_type,
      "wick runs none and linear (absent: linear, as llama.cpp); yarn and longrope are not supported" },
    { "rope.scaling.factor", G_ALL, READ, g_factor, "linear scaling: positions divided by it (absent or 0: 1)" },
    { "rope.scale_linear", G_ALL, READ, g_factor, "the older name of rope.scaling.factor, read when that is absent" },
    { "rope.scaling.attn_factor", G_ALL & ~G_PHI3, REFUSED, g_not_one, "a factor on rope's cos and sin is not supported" },
    { "rope.scaling.attn_factor", G_PHI3, READ, NULL, "LongRoPE: cos and sin multiplied by it" },
    { "rope.scaling.original_context_length", G_ALL & ~G_PHI3, IGNORED, NULL, "yarn's only (refused)" },
    { "rope.scaling.original_context_length", G_PHI3, READ, NULL,
      "LongRoPE: rope_factors_long past it, rope_factors_short within (by the context allocated, as llama.cpp)" },
    { "rope.scaling.finetuned", G_ALL, IGNORED, NULL, "information only" },
    { "attention.causal", G_ALL, REFUSED, g_false, "attention without the causal mask is not supported" },
    { "pooling_type", G_ALL, IGNORED, NULL, "llama.cpp pools only when embeddings are asked for" },
    { "expert_count", G_DENSE, REFUSED, g_nonzero, "experts are not supported for this architecture (llama.cpp's is dense)" },
    { "expert_used_count", G_DENSE, REFUSED, g_nonzero, "experts are not supported for this architecture" },
    { "expert_count", G_LLAMA | G_MOE, READ, NULL, "the experts (llama: non-zero is Mixtral)" },
    { "expert_used_count", G_LLAMA | G_MOE, READ, NULL, "the experts a token is routed to" },
    { "expert_feed_forward_length", G_QWEN2MOE | G_QWEN3MOE, READ, NULL,
      "an expert's FFN width (absent: feed_forward_length / expert_used_count, as llama.cpp)" },
    { "expert_feed_forward_length", G_LLAMA, IGNORED, NULL, "llama.cpp's llama takes feed_forward_length for experts" },
    { "expert_feed_forward_length", G_OLMOE, IGNORED, NULL, "llama.cpp's olmoe takes feed_forward_length" },
    { "expert_shared_feed_forward_length", G_QWEN2MOE, READ, NULL,
      "the shared expert's FFN width (absent: feed_forward_length, as llama.cpp)" },
    { "expert_weights_scale", G_LLAMA | G_MOE, REFUSED, g_scale, "scaled expert weights are not supported" },
    { "expert_weights_norm", G_LLAMA | G_MOE, IGNORED, NULL,
      "llama.cpp fixes the renormalization per architecture here (llama's Mixtral and qwen3moe yes, qwen2moe and "
      "olmoe no)" },
    { "expert_gating_func", G_LLAMA | G_MOE, IGNORED, NULL, "these architectures' routers are softmaxes in llama.cpp" },
    { "nextn_predict_layers", G_ALL, REFUSED, g_nonzero, "next-token prediction layers are not supported" },
    { "attn_logit_softcapping", G_ALL, IGNORED, NULL, "llama.cpp's llama, qwen2, qwen3 and gemma3 do not read it" },
    { "final_logit_softcapping", G_GEMMA3, READ, g_negative, "logits = c tanh(logits / c) (0: none)" },
    { "final_logit_softcapping", G_ALL & ~G_GEMMA3, IGNORED, NULL, "read by gemma3 only" },
    { "embedding_scale", G_ALL, IGNORED, NULL, "read by granite, minicpm, grok only" },
    { "residual_scale", G_ALL, IGNORED, NULL, "read by granite, minicpm only" },
    { "logit_scale", G_ALL, IGNORED, NULL, "read by granite, cohere, grok, minicpm only" },
    { "attention.scale", G_ALL, IGNORED, NULL, "read by granite only (gemma3's scale comes from its shape)" },
    { "use_parallel_residual", G_ALL, IGNORED, NULL, "read by gpt-neox-like architectures only" },
    { "attention.sliding_window", G_LLAMA, READ, NULL,
      "every layer's window (Mistral's); llama.cpp's llama does not read it and its converter never writes it: "
      "wick applies it as transformers' Mistral does" },
    { "attention.sliding_window", G_QWEN2 | G_QWEN3 | G_MOE, IGNORED, NULL, "llama.cpp does not read it for these" },
    { "attention.sliding_window", G_PHI3, READ, NULL, "every layer's window (absent or 0: none), as llama.cpp's phi3" },
    { "attention.sliding_window", G_GEMMA3, READ, NULL, "absent or 0: no window, every layer global (as llama.cpp)" },
    { "attention.sliding_window_pattern", G_GEMMA3, READ, g_pattern,
      "which layers slide: a period n (layer l slides when l % n < n - 1) or a flag per layer; absent: 6" },
    { "rope.freq_base_swa", G_GEMMA3, READ, NULL, "the sliding layers' rope base (absent: 10000)" },
    { "vocab_size", G_ALL, IGNORED, NULL, "the vocabulary is the embedding's rows" },
};

/* ---- tensors ---- */

static const char *const t_global[] = { "token_embd.weight", "output_norm.weight", "output.weight" };
static const char *const t_attn[] = { "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                      "attn_output.weight", "ffn_norm.weight" };
static const char *const t_mlp[] = { "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight" };
static const char *const t_phi3[] = { "attn_norm.weight", "attn_qkv.weight", "attn_output.weight", "ffn_norm.weight",
                                      "ffn_up.weight", "ffn_down.weight" };
static const char *const t_phi3_global[] = { "rope_factors_long.weight", "rope_factors_short.weight" };
static const char *const t_experts[] = { "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",
                                         "ffn_down_exps.weight" };
static const char *const t_shexp[] = { "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight",
                                       "ffn_gate_inp_shexp.weight" };
static const char *const t_bias[] = { "attn_q.bias", "attn_k.bias", "attn_v.bias" };
static const char *const t_qk_norm[] = { "attn_q_norm.weight", "attn_k_norm.weight" };
static const char *const t_post[] = { "post_attention_norm.weight", "post_ffw_norm.weight" };

static bool in_list(const char *s, const char *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, l[i])) return true;
    return false;
}
#define IN(s, l) in_list(s, l, sizeof l / sizeof l[0])

#define NOT_LOADED "not a tensor wick loads for this architecture: it would run the model without it"

/* NULL: a tensor wick loads; else why not */
static const char *tensor_why(const gctx *x, const char *name)
{
    if (IN(name, t_global) || (x->type & G_PHI3 && IN(name, t_phi3_global))) return NULL;
    if (!strcmp(name, "rope_freqs.weight"))
        return x->type & G_LLAMA ? NULL : "rope frequency factors are llama's (llama.cpp does not create them here)";
    int64_t l = -1;
    int at = 0;
    if (!strncmp(name, "cls.", 4)) return "a classifier head (a reranker): wick runs causal language models only";
    if (sscanf(name, "blk.%lld.%n", (long long *)&l, &at) != 1 || at == 0) return NOT_LOADED;
    const char *rest = name + at;
    if (l < 0 || l >= x->L) return "its block is past block_count";
    if (x->type & G_PHI3) {
        if (IN(rest, t_phi3)) return NULL;
    } else if (IN(rest, t_attn) || (!x->moe && IN(rest, t_mlp)) || (x->moe && IN(rest, t_experts)) ||
               (x->type & G_QWEN2MOE && IN(rest, t_shexp)) || (x->type & (G_QWEN2 | G_QWEN2MOE) && IN(rest, t_bias)) ||
               (x->type & (G_QWEN3 | G_GEMMA3 | G_QWEN3MOE | G_OLMOE) && IN(rest, t_qk_norm)) ||
               (x->type & G_GEMMA3 && IN(rest, t_post))) {
        return NULL;
    }
    int e = -1, at2 = 0;
    char part[8] = "";
    if (x->moe && sscanf(rest, "ffn_%4[a-z].%d.weight%n", part, &e, &at2) == 2 && at2 > 0 && rest[at2] == 0)
        return "one tensor per expert (older converters) is not supported: wick reads them stacked (ffn_*_exps)";
    if (x->type & G_PHI3 && (IN(rest, t_attn) || IN(rest, t_mlp)))
        return "phi3 with separate q/k/v or gate is not supported (wick reads attn_qkv and ffn_up holding gate and up)";
    const size_t n = strlen(rest);
    if (n > 5 && !strcmp(rest + n - 5, ".bias"))
        return "biases here are not supported (llama.cpp adds them if present; wick runs this architecture without)";
    if (!strncmp(rest, "attn_qkv.", 9)) return "fused q/k/v weights are not supported (wick reads attn_q, attn_k, attn_v)";
    if (strstr(rest, "_exps") || strstr(rest, "_shexp") || !strncmp(rest, "ffn_gate_inp", 12))
        return x->moe ? "not a tensor wick loads for this architecture's experts"
                      : "mixture-of-experts tensors are not supported for this architecture";
    return NOT_LOADED;
}

wk_status llm_check_gguf(const wk_gguf *g, const char *arch_name, wk_llm_arch arch)
{
    static const unsigned types[WK_LLM_ARCH_COUNT] = { G_LLAMA, G_QWEN2,    G_QWEN3,    G_GEMMA3, G_PHI3,
                                                       G_LLAMA, G_QWEN2MOE, G_QWEN3MOE, G_OLMOE };
    if ((unsigned)arch >= WK_LLM_ARCH_COUNT) return WK_OK;
    gctx x = { .g = g, .arch = arch_name, .type = types[arch] };
    wk_gguf_value_int(g_get(&x, "block_count"), &x.L);
    int64_t experts = 0;
    wk_gguf_value_int(g_get(&x, "expert_count"), &experts);
    x.moe = x.type & G_MOE || (x.type & G_LLAMA && experts > 0);
    const char *path = wk_gguf_path(g);
    for (size_t i = 0; i < sizeof gguf_rules / sizeof gguf_rules[0]; i++) {
        const gguf_rule *r = &gguf_rules[i];
        if (!(r->types & x.type) || !r->check) continue;
        const wk_gguf_value *v = g_get(&x, r->key);
        snprintf(x.key, sizeof x.key, "%s.%s", arch_name, r->key);
        x.val = NULL, x.st = WK_ERR_UNSUPPORTED;
        const char *why = r->check(&x, v);
        if (!why) continue;
        char buf[96];
        return llm_check_refuse(x.st, path, x.key, g_show(v, buf, sizeof buf), *why ? why : r->why);
    }
    for (int64_t i = 0; x.L > 0 && i < wk_gguf_tensor_count(g); i++) {   /* x.L 0: the reader names the key */
        const wk_file_tensor *t = wk_gguf_tensor_info(g, i);
        const char *why = t ? tensor_why(&x, t->name) : NULL;
        if (why) {
            char what[200];
            snprintf(what, sizeof what, "the tensor %.150s", t->name);
            return llm_check_refuse(WK_ERR_UNSUPPORTED, path, what, "in the file", why);
        }
    }
    return WK_OK;
}

bool llm_gguf_layer_sliding(const wk_gguf *g, const char *arch_name, int64_t l)
{
    gctx x = { .g = g, .arch = arch_name };
    const wk_gguf_value *v = g_get(&x, "attention.sliding_window_pattern");
    int64_t n = 6;
    bool b;
    if (v && wk_gguf_value_type(v) == WK_GGUF_ARRAY) {
        if (wk_gguf_array_bool(v, (uint64_t)l, &b)) return b;
        return wk_gguf_array_int(v, (uint64_t)l, &n) && n != 0;
    }
    if (v) wk_gguf_value_int(v, &n);
    return n == 0 || l % n < n - 1;
}
