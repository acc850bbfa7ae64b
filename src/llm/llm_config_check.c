/* llm_config_check.c — every config.json field and GGUF key that changes
 * the computation of a model wick runs, with what wick does with it, in
 * two tables (one per kind of file: config.json here, GGUF in
 * llm_gguf_check.c) that the hparam readers (hparams.c and the architectures' files) consult before
 * they read:
 *
 *   READ     hparams.c or the architecture's file implements it (a test against the reference,
 *            tests/test_llm.c, tests/test_llm_config.c, the model oracle);
 *            the check here refuses the values it does not implement;
 *   IGNORED  the reference does not read it for this architecture, and
 *            neither does wick (the reason cites the reference);
 *   REFUSED  refused at load when set to what wick does not implement,
 *            with a message naming the file, the key and its value.
 *
 * The references, read for this table: transformers 5.24's configuration
 * and modeling files of llama, mistral, qwen2, qwen3, gemma3_text, phi3,
 * mixtral, qwen2_moe, qwen3_moe and olmoe (what
 * from_pretrained builds from config.json), and llama.cpp's loader for
 * GGUF (ggml-org/llama.cpp@0c1e57098: src/llama-model.cpp load_hparams,
 * src/models/{llama,qwen2,qwen3,gemma3}.cpp, llama-context.cpp).
 * docs/model-config.md is this file in prose.
 *
 * Keys in neither table pass: config.json files carry many that change
 * nothing (architectures, torch_dtype, transformers_version, use_cache,
 * initializer_range, ...), GGUF files general.* and tokenizer.* keys, and
 * the references do not read them for these architectures either.
 * GGUF tensors are checked too: llama.cpp refuses a file with tensors it
 * does not create ("wrong number of tensors") and creates optional ones
 * (biases, fused q/k/v, experts) that wick does not run, so wick accepts
 * exactly the tensors it loads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm_config_check.h"
#include "llm_internal.h"

enum { READ, IGNORED, REFUSED };   /* what wick does with a key (the tables' outcome column) */

/* The one place that reports (both files): "<file>: <key> is <value>: <why>". */
wk_status llm_check_refuse(wk_status st, const char *file, const char *key, const char *value, const char *why)
{
    return wk_error_set(st, "%s: %s is %s: %s", file, key, value, why);
}

/* ==== config.json (transformers 5.24) =========================================== */

enum {
    T_LLAMA = 1, T_MISTRAL = 2, T_QWEN2 = 4, T_QWEN3 = 8, T_GEMMA3 = 16, T_PHI3 = 32, T_MIXTRAL = 64,
    T_QWEN2MOE = 128, T_QWEN3MOE = 256, T_OLMOE = 512, T_ALL = 1023
};
#define T_QMOE (T_QWEN2MOE | T_QWEN3MOE)
#define T_MOE (T_MIXTRAL | T_QMOE | T_OLMOE)
#define T_SILU (T_LLAMA | T_MISTRAL | T_QWEN2 | T_QWEN3 | T_PHI3 | T_MOE)

typedef struct cctx {
    const wk_json *c;
    unsigned type;
    const char *cls;              /* transformers' config class, for messages */
    int64_t E, H, L;              /* hidden_size, num_attention_heads, num_hidden_layers (0: absent) */
    const char *key;              /* a check may name another key than its row's */
    const wk_json *val;           /* ... and show its value */
    wk_status st;                 /* WK_ERR_UNSUPPORTED unless a check says WK_ERR_IO */
    char why[320];
} cctx;

/* NULL: fine; "": refused for the row's reason; else: refused for this reason */
typedef const char *(*cfg_fn)(cctx *x, const wk_json *v);

static bool j_true(const wk_json *v)
{
    bool b = false;
    return wk_json_bool(v, &b) && b;
}

static bool j_num(const wk_json *v, double *d) { return wk_json_number(v, d); }

static const char *j_show(const wk_json *v, char *buf, size_t n)
{
    if (!v) return "missing";
    double d;
    switch (wk_json_kind(v)) {
    case WK_JSON_NULL: return "null";
    case WK_JSON_BOOL: return j_true(v) ? "true" : "false";
    case WK_JSON_NUMBER: j_num(v, &d), snprintf(buf, n, "%.9g", d); return buf;
    case WK_JSON_STRING: snprintf(buf, n, "'%.60s'", wk_json_string(v, NULL)); return buf;
    case WK_JSON_ARRAY: return "an array";
    default: return "an object";
    }
}

static const char *c_true(cctx *x, const wk_json *v) { (void)x; return j_true(v) ? "" : NULL; }

static const char *c_exists(cctx *x, const wk_json *v) { (void)x; return v ? "" : NULL; }

static const char *c_present(cctx *x, const wk_json *v)
{
    (void)x;
    return v && wk_json_kind(v) != WK_JSON_NULL ? "" : NULL;
}

/* the MLP's activation: wick's is fixed per architecture */
static const char *c_act(cctx *x, const wk_json *v, const char *a, const char *b)
{
    (void)x;
    if (!v) return NULL;
    const char *s = wk_json_string(v, NULL);
    return s && (!strcmp(s, a) || (b && !strcmp(s, b))) ? NULL : "";
}
static const char *c_silu(cctx *x, const wk_json *v) { return c_act(x, v, "silu", "swish"); }
static const char *c_gelu(cctx *x, const wk_json *v) { return c_act(x, v, "gelu_pytorch_tanh", NULL); }

static const char *c_positive(cctx *x, const wk_json *v)
{
    double d;
    x->st = WK_ERR_IO;
    return j_num(v, &d) && !(d > 0) ? "it must be positive" : NULL;
}

/* absent: the config class's default, where it is not wick's */
static const char *c_kv_heads(cctx *x, const wk_json *v)
{
    if (v || x->H <= 0) return NULL;
    const int64_t def = x->type & (T_QWEN2 | T_QWEN3)  ? 32
                        : x->type & (T_MISTRAL | T_MIXTRAL) ? 8
                        : x->type & T_QWEN2MOE ? 16
                        : x->type & (T_GEMMA3 | T_QWEN3MOE) ? 4
                                                      : x->H;
    if (def == x->H) return NULL;
    x->st = WK_ERR_IO;
    snprintf(x->why, sizeof x->why,
             "transformers' %s then takes %lld key/value heads, where wick would take num_attention_heads (%lld); "
             "write the key into the file", x->cls, (long long)def, (long long)x->H);
    return x->why;
}

static const char *c_head_dim(cctx *x, const wk_json *v)
{
    if ((v && wk_json_kind(v) != WK_JSON_NULL) || !(x->type & T_QWEN3) || x->H <= 0 || x->E / x->H == 128) return NULL;
    x->st = WK_ERR_IO;
    snprintf(x->why, sizeof x->why,
             "transformers' Qwen3Config then takes 128, where wick would take hidden_size / num_attention_heads (%lld); "
             "write the key into the file", (long long)(x->E / x->H));
    return x->why;
}

/* phi3 (Phi3Config.validate_rope): default or longrope (su and yarn are
   renamed longrope), whose lists phi3.c reads, as it reads
   partial_rotary_factor (Phi3's ropes, default and longrope, take it) */
static const char *phi3_rope(cctx *x, const char *name, const wk_json *d, const char *type)
{
    static _Thread_local char key[96];
    if (!type || (strcmp(type, "default") && strcmp(type, "longrope") && strcmp(type, "su") && strcmp(type, "yarn")))
        return "Phi3Config takes the default rope and longrope (su and yarn read as longrope) only";
    if (strcmp(type, "default")) {
        static const char *const need[] = { "short_factor", "long_factor" };
        for (int i = 0; i < 2; i++)
            if (wk_json_kind(wk_json_get(d, need[i])) != WK_JSON_ARRAY) {
                snprintf(key, sizeof key, "%s.%s", name, need[i]);
                x->key = key, x->val = wk_json_get(d, need[i]), x->st = WK_ERR_IO;
                return "longrope needs both lists of factors";
            }
    }
    x->key = NULL, x->val = NULL;   /* partial_rotary_factor: read (phi3.c) */
    return NULL;
}

/* one rope dict (rope_scaling, rope_parameters or one of gemma3's per
   layer type): what hparams.c's llm_hf_rope implements of it */
static const char *rope_dict(cctx *x, const char *name, const wk_json *d)
{
    static _Thread_local char key[96];
    const char *tk = wk_json_get(d, "rope_type") ? "rope_type" : "type";
    const wk_json *tv = wk_json_get(d, tk);
    const char *type = tv ? wk_json_string(tv, NULL) : "default";
    snprintf(key, sizeof key, "%s.%s", name, tk);
    x->key = key, x->val = tv;
    if (x->type & T_PHI3) return phi3_rope(x, name, d, type);
    if (!type || (strcmp(type, "default") && strcmp(type, "linear") && strcmp(type, "llama3")))
        return "rope scaling of this kind is not supported (wick runs default, linear and llama3 ropes)";
    static const char *const need[] = { "factor", "low_freq_factor", "high_freq_factor" };
    for (int i = 0; i < (!strcmp(type, "llama3") ? 3 : !strcmp(type, "linear") ? 1 : 0); i++) {
        double f;
        if (!j_num(wk_json_get(d, need[i]), &f)) {
            snprintf(key, sizeof key, "%s.%s", name, need[i]);
            x->val = wk_json_get(d, need[i]), x->st = WK_ERR_IO;
            return "a rope of this type needs it (transformers refuses the config without it)";
        }
    }
    if (!strcmp(type, "llama3")) {
        const wk_json *top = wk_json_get(x->c, "original_max_position_embeddings");
        const wk_json *in = wk_json_get(d, "original_max_position_embeddings");
        double a = 0, b = 0;
        if (top && !(j_num(top, &a) && j_num(in, &b) && a == b)) {
            x->key = "original_max_position_embeddings", x->val = top, x->st = WK_ERR_IO;
            return "transformers takes this top-level value over the rope dict's, wick the rope dict's; make them agree";
        }
        if (!in) {
            snprintf(key, sizeof key, "%s.original_max_position_embeddings", name);
            x->val = NULL, x->st = WK_ERR_IO;
            return "transformers then takes max_position_embeddings, wick 8192; write it into the file";
        }
    }
    const wk_json *pv = wk_json_get(d, "partial_rotary_factor");
    if (!pv) pv = wk_json_get(x->c, "partial_rotary_factor");
    double p = 1;
    if (strcmp(type, "default") && j_num(pv, &p) && p != 1) {
        if (wk_json_get(d, "partial_rotary_factor")) snprintf(key, sizeof key, "%s.partial_rotary_factor", name);
        else x->key = "partial_rotary_factor";
        x->val = pv;
        return "a rope over part of the head is not supported (transformers' default rope ignores the factor, its "
               "scaled ropes do not; wick rotates the whole head)";
    }
    double t, top = x->type & T_GEMMA3 ? 1e6 : 10000.0;
    if (!strcmp(name, "rope_scaling") && j_num(wk_json_get(d, "rope_theta"), &t) &&
        (j_num(wk_json_get(x->c, "rope_theta"), &top), t != top)) {
        x->key = "rope_scaling.rope_theta", x->val = wk_json_get(d, "rope_theta"), x->st = WK_ERR_IO;
        return "transformers takes it over rope_theta, wick reads rope_theta; make them agree";
    }
    x->key = NULL, x->val = NULL;
    return NULL;
}

static bool is_obj(const wk_json *v) { return wk_json_kind(v) == WK_JSON_OBJECT; }

static const char *c_rope_scaling(cctx *x, const wk_json *v)
{
    if (!is_obj(v)) return NULL;
    if (is_obj(wk_json_get(x->c, "rope_parameters"))) {
        x->st = WK_ERR_IO;
        return "rope_parameters is set too: transformers then takes rope_scaling alone for its rope, wick mixes the "
               "two; keep one";
    }
    return x->type & T_GEMMA3 ? NULL : rope_dict(x, "rope_scaling", v);   /* gemma3: with rope_parameters' checks */
}

static const char *c_rope_parameters(cctx *x, const wk_json *v)
{
    if (!(x->type & T_GEMMA3)) return is_obj(v) ? rope_dict(x, "rope_parameters", v) : NULL;
    /* gemma3: one dict per layer type; Gemma3TextConfig drops a flat one
       (it sets full_attention and sliding_attention to the defaults) */
    static const char *const lt[] = { "full_attention", "sliding_attention" };
    if (is_obj(v) && !wk_json_get(v, lt[0]) && !wk_json_get(v, lt[1]) && wk_json_count(v) > 0)
        return "gemma3 takes one rope dict per layer type (full_attention, sliding_attention); transformers replaces a "
               "flat one by the defaults, wick would apply it";
    const char *r;
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "rope_parameters.%s", lt[i]);
        if (is_obj(wk_json_get(v, lt[i])) && (r = rope_dict(x, name, wk_json_get(v, lt[i])))) return r;
    }
    const wk_json *rs = wk_json_get(x->c, "rope_scaling");   /* transformers 4's: the global layers' */
    return is_obj(rs) ? rope_dict(x, "rope_scaling", rs) : NULL;
}

/* qwen2/qwen3: transformers' layer_types (Qwen2Config.__post_init__):
   sliding from max_window_layers on when use_sliding_window and a window;
   wick runs them without windows */
static const char *c_qwen_window(cctx *x, const wk_json *v)
{
    const wk_json *lt = wk_json_get(x->c, "layer_types");
    if (wk_json_kind(lt) == WK_JSON_ARRAY) {
        for (size_t i = 0; i < wk_json_count(lt); i++) {
            const char *s = wk_json_string(wk_json_item(lt, i), NULL);
            if (s && !strcmp(s, "sliding_attention")) {
                x->key = "layer_types", x->val = wk_json_item(lt, i);
                snprintf(x->why, sizeof x->why, "layer %zu would attend through a window; wick runs %s without windows",
                         i, x->type & T_QWEN2 ? "qwen2" : "qwen3");
                return x->why;
            }
        }
        return NULL;
    }
    const wk_json *sw = wk_json_get(x->c, "sliding_window");
    if (!j_true(v) || (sw && wk_json_kind(sw) == WK_JSON_NULL)) return NULL;
    int64_t mwl = 28;
    wk_json_int(wk_json_get(x->c, "max_window_layers"), &mwl);
    if (mwl >= x->L) return NULL;   /* no layer at or past max_window_layers */
    snprintf(x->why, sizeof x->why,
             "layers %lld to %lld would attend through a window (max_window_layers %lld); wick runs %s without windows",
             (long long)(mwl > 0 ? mwl : 0), (long long)(x->L - 1), (long long)mwl, x->type & T_QWEN2 ? "qwen2" : "qwen3");
    return x->why;
}

/* gemma3: does any layer slide (layer_types, else sliding_window_pattern) */
static bool gemma_slides(const wk_json *c, int64_t L)
{
    const wk_json *lt = wk_json_get(c, "layer_types");
    if (wk_json_kind(lt) == WK_JSON_ARRAY) {
        for (size_t i = 0; i < wk_json_count(lt); i++) {
            const char *s = wk_json_string(wk_json_item(lt, i), NULL);
            if (s && !strcmp(s, "sliding_attention")) return true;
        }
        return false;
    }
    int64_t p = 6;
    wk_json_int(wk_json_get(c, "sliding_window_pattern"), &p);
    for (int64_t l = 0; l < L; l++)
        if (p > 0 && (l + 1) % p) return true;
    return false;
}

static const char *c_gemma_window(cctx *x, const wk_json *v)
{
    double d;
    if (j_num(v, &d) && !(d > 0)) return "a window must hold a position at least";
    if (v && wk_json_kind(v) == WK_JSON_NULL && gemma_slides(x->c, x->L)) {
        x->st = WK_ERR_IO;
        return "layers slide (layer_types or sliding_window_pattern) but the window has no size (transformers fails)";
    }
    return NULL;
}

static const char *c_pattern(cctx *x, const wk_json *v)
{
    int64_t p;
    if (wk_json_kind(wk_json_get(x->c, "layer_types")) == WK_JSON_ARRAY || !wk_json_int(v, &p) || p > 0) return NULL;
    x->st = WK_ERR_IO;
    return "transformers takes (layer + 1) % sliding_window_pattern, which needs a positive period";
}

static const char *c_not_one(cctx *x, const wk_json *v)
{
    (void)x;
    double d;
    return j_num(v, &d) && d != 1 ? "" : NULL;
}

static const char *c_false(cctx *x, const wk_json *v)
{
    (void)x;
    bool b = true;
    return wk_json_bool(v, &b) && !b ? "" : NULL;
}

static const char *c_nonempty(cctx *x, const wk_json *v)
{
    (void)x;
    return wk_json_kind(v) == WK_JSON_ARRAY && wk_json_count(v) > 0 ? "" : NULL;
}

/* a sliding_attention entry in layer_types */
static const char *c_no_sliding(cctx *x, const wk_json *v)
{
    for (size_t i = 0; wk_json_kind(v) == WK_JSON_ARRAY && i < wk_json_count(v); i++) {
        const char *s = wk_json_string(wk_json_item(v, i), NULL);
        if (s && !strcmp(s, "sliding_attention")) {
            x->val = wk_json_item(v, i);
            return "";
        }
    }
    return NULL;
}

typedef struct cfg_rule {
    const char *key;
    unsigned types;
    int outcome;
    cfg_fn check;
    const char *why;   /* READ: what wick does; IGNORED: why; REFUSED: what is refused and why */
} cfg_rule;

static const cfg_rule cfg_rules[] = {
    { "model_type", T_ALL, READ, NULL, "the architecture; llama and mistral run as llama" },
    { "vocab_size", T_ALL, READ, NULL, "required (the reader refuses a file without it)" },
    { "hidden_size", T_ALL, READ, NULL, "required" },
    { "intermediate_size", T_ALL, READ, NULL, "required" },
    { "num_hidden_layers", T_ALL, READ, NULL, "required" },
    { "num_attention_heads", T_ALL, READ, NULL, "required" },
    { "num_key_value_heads", T_ALL, READ, c_kv_heads,
      "absent: num_attention_heads; refused when the config class's default differs (mistral 8, qwen2 and qwen3 "
      "32, gemma3_text 4)" },
    { "head_dim", T_ALL, READ, c_head_dim,
      "absent or null: hidden_size / num_attention_heads (gemma3_text 256); refused absent for qwen3 (Qwen3Config "
      "takes 128) unless that is the quotient" },
    { "hidden_act", T_SILU, REFUSED, c_silu,
      "the MLP's activation is not SiLU: wick's MLP for llama, mistral, qwen2 and qwen3 is SiLU-gated (silu, swish)" },
    { "hidden_act", T_GEMMA3, IGNORED, NULL, "Gemma3MLP reads hidden_activation, never hidden_act" },
    { "hidden_activation", T_GEMMA3, REFUSED, c_gelu,
      "the MLP's activation is not gelu_pytorch_tanh, the one wick runs for gemma3" },
    { "hidden_activation", T_SILU, IGNORED, NULL, "their MLPs read hidden_act" },
    { "max_position_embeddings", T_ALL, READ, NULL,
      "the longest context wick allows (2048 when absent); not the computation" },
    { "rms_norm_eps", T_ALL, READ, NULL, "every RMSNorm's epsilon (1e-6 when absent, as every config class)" },
    { "layer_norm_eps", T_ALL, IGNORED, NULL, "these models' norms are RMSNorms that take rms_norm_eps" },
    { "layer_norm_epsilon", T_ALL, IGNORED, NULL, "as layer_norm_eps" },
    { "tie_word_embeddings", T_ALL, READ, NULL,
      "the output head is the embedding, unless the file holds lm_head.weight: transformers 5 then does not tie "
      "(PreTrainedModel.tie_weights) and neither does wick" },
    { "rope_theta", T_ALL, READ, NULL, "the rope base (gemma3_text: of the global layers)" },
    { "rope_scaling", T_ALL, READ, c_rope_scaling,
      "default, linear and llama3 read; other types (yarn, dynamic, longrope, su, ...) refused; a linear rope "
      "without factor, a llama3 one without its keys, a partial one, refused" },
    { "rope_parameters", T_ALL, READ, c_rope_parameters, "transformers 5's rope dict (gemma3_text: one per layer type)" },
    { "partial_rotary_factor", T_ALL & ~T_PHI3, IGNORED, NULL,
      "with the default rope (compute_default_rope_parameters does not read it); refused with a scaled rope" },
    { "partial_rotary_factor", T_PHI3, READ, NULL,
      "rope over the first int(head_dim * factor) dims of a head (Phi-4-mini), as Phi3's ropes, default and longrope, "
      "read it; the dict's over the top level's (phi3.c)" },
    { "original_max_position_embeddings", T_ALL & ~T_PHI3, READ, NULL, "llama3 rope: checked with rope_scaling" },
    { "original_max_position_embeddings", T_PHI3, READ, NULL,
      "longrope: the context the short factors serve (4096 when absent, over the rope dict's, as Phi3Config)" },
    { "rope_local_base_freq", T_GEMMA3, READ, NULL, "the rope base of the sliding layers (10000 when absent)" },
    { "attention_bias", T_LLAMA | T_QWEN3 | T_GEMMA3 | T_QWEN3MOE | T_OLMOE, REFUSED, c_true,
      "biases on q, k, v and o are not supported (wick runs this architecture without them)" },
    { "attention_bias", T_MIXTRAL | T_PHI3 | T_QWEN2MOE, IGNORED, NULL,
      "MixtralAttention and Phi3Attention have no biases; Qwen2MoeAttention reads qkv_bias" },
    { "qkv_bias", T_QWEN2MOE, REFUSED, c_false, "q/k/v without biases: wick runs qwen2moe with them (the default)" },
    { "attention_bias", T_MISTRAL | T_QWEN2, IGNORED, NULL,
      "MistralAttention has no biases, Qwen2Attention always q/k/v biases (read) and no o bias, whatever the key says" },
    { "mlp_bias", T_LLAMA, REFUSED, c_true, "biases in the MLP are not supported (wick runs llama without them)" },
    { "mlp_bias", T_MISTRAL | T_QWEN2 | T_QWEN3 | T_GEMMA3 | T_PHI3 | T_MOE, IGNORED, NULL, "their MLPs have no biases" },
    { "sliding_window", T_LLAMA, IGNORED, NULL, "LlamaModel has no window (the key is Mistral's)" },
    { "sliding_window", T_MISTRAL, READ, c_positive,
      "every layer's window; absent: 4096 (MistralConfig's default); null: none" },
    { "sliding_window", T_QWEN2 | T_QWEN3 | T_QMOE, IGNORED, NULL, "unless use_sliding_window (see there)" },
    { "sliding_window", T_MIXTRAL | T_PHI3, READ, c_positive, "every layer's window; absent or null: none" },
    { "sliding_window", T_OLMOE, IGNORED, NULL, "OlmoeModel's mask has no window" },
    { "use_sliding_window", T_QMOE, REFUSED, c_true, "windows on some layers are not supported for the MoE Qwens" },
    { "max_window_layers", T_QMOE, IGNORED, NULL, "read with use_sliding_window only (refused)" },
    { "layer_types", T_QMOE, REFUSED, c_no_sliding, "a sliding_attention layer is not supported" },
    { "layer_types", T_MIXTRAL | T_PHI3 | T_OLMOE, IGNORED, NULL, "their models do not read it" },
    { "num_local_experts", T_MIXTRAL | T_QWEN3MOE | T_OLMOE, READ, NULL,
      "the experts (mixtral's and qwen3_moe's name; olmoe's alias of num_experts)" },
    { "num_experts", T_QMOE | T_OLMOE | T_MIXTRAL, READ, NULL,
      "the experts (qwen2_moe's and olmoe's name; mixtral's and qwen3_moe's alias); one of the two required, both "
      "must agree" },
    { "num_experts_per_tok", T_MOE, READ, NULL, "the experts a token is routed to (required)" },
    { "moe_intermediate_size", T_QMOE, READ, NULL, "an expert's FFN width (required)" },
    { "shared_expert_intermediate_size", T_QWEN2MOE, READ, NULL, "the shared expert's FFN width (required)" },
    { "norm_topk_prob", T_QMOE | T_OLMOE, READ, NULL, "the chosen experts' weights renormalized (absent: false)" },
    { "norm_topk_prob", T_MIXTRAL, IGNORED, NULL, "MixtralTopKRouter always renormalizes" },
    { "decoder_sparse_step", T_QMOE, REFUSED, c_not_one, "dense MLP layers between the sparse ones are not supported" },
    { "mlp_only_layers", T_QMOE, REFUSED, c_nonempty, "dense MLP layers among the sparse ones are not supported" },
    { "router_jitter_noise", T_MIXTRAL, IGNORED, NULL, "noise in training only" },
    { "output_router_logits", T_MOE, IGNORED, NULL, "the auxiliary loss's, in training only" },
    { "router_aux_loss_coef", T_MOE, IGNORED, NULL, "the auxiliary loss's, in training only" },
    { "clip_qkv", T_OLMOE, REFUSED, c_present, "clamping q, k and v is not supported" },
    { "resid_pdrop", T_PHI3, IGNORED, NULL, "dropout acts in training only" },
    { "embd_pdrop", T_PHI3, IGNORED, NULL, "dropout acts in training only" },
    { "sliding_window", T_GEMMA3, READ, c_gemma_window, "the sliding layers' window; absent: 4096" },
    { "use_sliding_window", T_QWEN2 | T_QWEN3, REFUSED, c_qwen_window,
      "windows on the layers from max_window_layers on; refused when a layer would get one" },
    { "max_window_layers", T_QWEN2 | T_QWEN3, READ, NULL, "with use_sliding_window" },
    { "layer_types", T_QWEN2 | T_QWEN3, REFUSED, NULL, "a sliding_attention entry is refused (with use_sliding_window)" },
    { "layer_types", T_GEMMA3, READ, NULL, "which layers slide (over sliding_window_pattern)" },
    { "layer_types", T_LLAMA, IGNORED, NULL, "LlamaModel does not read it" },
    { "layer_types", T_MISTRAL, REFUSED, c_exists,
      "transformers' AutoConfig then reads the model as ministral (windows per layer type), which wick does not run" },
    { "sliding_window_pattern", T_GEMMA3, READ, c_pattern, "without layer_types: layer l slides unless (l + 1) % p == 0" },
    { "_sliding_window_pattern", T_GEMMA3, IGNORED, NULL, "Gemma3TextConfig reads sliding_window_pattern only" },
    { "query_pre_attn_scalar", T_GEMMA3, READ, NULL, "the attention scale is its inverse square root" },
    { "attn_logit_softcapping", T_GEMMA3, IGNORED, NULL,
      "Gemma3Attention keeps it but never passes softcap= to the attention" },
    { "attn_logit_softcapping", T_SILU, IGNORED, NULL, "not read" },
    { "final_logit_softcapping", T_GEMMA3, READ, c_positive, "logits = c tanh(logits / c); null: none" },
    { "final_logit_softcapping", T_SILU, IGNORED, NULL, "their ForCausalLM heads do not read it" },
    { "use_bidirectional_attention", T_GEMMA3, REFUSED, c_true,
      "attention without the causal mask (EmbeddingGemma) is not supported" },
    { "attention_dropout", T_ALL, IGNORED, NULL, "dropout acts in training only" },
    { "pretraining_tp", T_LLAMA, IGNORED, NULL, "transformers 5 does not read it (4.x split the products: the same sums)" },
    { "quantization_config", T_ALL, REFUSED, c_present,
      "quantized safetensors (GPTQ, AWQ, fp8 with scales, bitsandbytes, ...) are not supported" },
    { "compression_config", T_ALL, REFUSED, c_present, "compressed-tensors checkpoints are not supported" },
    { "bos_token_id", T_ALL, READ, NULL, "not the computation: the BOS token (llm_text.c)" },
    { "eos_token_id", T_ALL, READ, NULL, "not the computation: end tokens (llm_text.c)" },
};

static const struct { const char *mt, *cls; unsigned type; } cfg_types[] = {
    { "llama", "LlamaConfig", T_LLAMA },        { "mistral", "MistralConfig", T_MISTRAL },
    { "qwen2", "Qwen2Config", T_QWEN2 },        { "qwen3", "Qwen3Config", T_QWEN3 },
    { "gemma3_text", "Gemma3TextConfig", T_GEMMA3 },
    { "phi3", "Phi3Config", T_PHI3 },           { "mixtral", "MixtralConfig", T_MIXTRAL },
    { "qwen2_moe", "Qwen2MoeConfig", T_QWEN2MOE }, { "qwen3_moe", "Qwen3MoeConfig", T_QWEN3MOE },
    { "olmoe", "OlmoeConfig", T_OLMOE },
};

wk_status llm_check_config(const wk_json *c, wk_llm_arch arch)
{
    (void)arch;   /* the model_type says more: mistral is not llama here */
    cctx x = { .c = c };
    const char *mt = wk_json_string(wk_json_get(c, "model_type"), NULL);
    for (size_t i = 0; mt && i < sizeof cfg_types / sizeof cfg_types[0]; i++)
        if (!strcmp(mt, cfg_types[i].mt)) x.type = cfg_types[i].type, x.cls = cfg_types[i].cls;
    if (!x.type) return WK_OK;   /* the reader names the model_type */
    wk_json_int(wk_json_get(c, "hidden_size"), &x.E);
    wk_json_int(wk_json_get(c, "num_attention_heads"), &x.H);
    wk_json_int(wk_json_get(c, "num_hidden_layers"), &x.L);
    for (size_t i = 0; i < sizeof cfg_rules / sizeof cfg_rules[0]; i++) {
        const cfg_rule *r = &cfg_rules[i];
        if (!(r->types & x.type) || !r->check) continue;
        const wk_json *v = wk_json_get(c, r->key);
        x.key = NULL, x.val = NULL, x.st = WK_ERR_UNSUPPORTED;
        const char *why = r->check(&x, v);
        if (!why) continue;
        char buf[96];
        return llm_check_refuse(x.st, wk_json_doc_name(c), x.key ? x.key : r->key, j_show(x.key ? x.val : v, buf, sizeof buf),
                      *why ? why : r->why);
    }
    return WK_OK;
}
