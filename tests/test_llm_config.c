/* test_llm_config.c — the loader's switches (src/llm/llm_config_check.c,
 * docs/model-config.md): each config.json field and GGUF key that changes
 * the computation, set to a value wick does not run, is refused at load
 * with a message naming it, and set to the default or an implemented value
 * loads; each key the reference ignores loads and changes no logit.
 *
 *   llm_config/hf/<type>/<key>...    tiny safetensors + config.json models
 *   llm_config/gguf/<arch>/<key>...  tiny GGUF models (wick's writer)
 *   llm_config_ref/<case>            the switches wick now implements or
 *                                    ignores, against the reference's logits
 *                                    (tests/data/config_ref, made by
 *                                    tools/gen_config_ref.py: transformers
 *                                    5.24 for safetensors, llama.cpp for
 *                                    GGUF), within 1e-4 of the largest
 *                                    |logit| per row, the argmax equal
 *
 * A spec is an architecture and the keys changed from a base file that
 * loads (a JSON text per key, NULL to leave the key out); two specs of one
 * architecture and shape have the same weights, so "the same logits" is a
 * bitwise comparison.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "t_files.h"
#include "wick_llm.h"

enum { A_LLAMA, A_QWEN2, A_QWEN3, A_GEMMA3 };
static const char *const arch_name[] = { "llama", "qwen2", "qwen3", "gemma3" };
static const char *const hf_type[] = { "llama", "qwen2", "qwen3", "gemma3_text" };

enum { V = 32, E = 16, H = 2, D = 8, F = 24, T = 10 };
static const int32_t tokens[T] = { 1, 7, 30, 2, 2, 9, 17, 4, 28, 11 };

typedef struct kv { const char *key, *val; } kv;
#define KV(...) ((const kv[]){ __VA_ARGS__, { NULL, NULL } })
#define NONE ((const kv[]){ { NULL, NULL } })

typedef struct spec {
    int arch;
    bool gguf;
    const char *mt;              /* HF model_type (NULL: the architecture's) */
    int L, Hkv;                  /* 0: 3 layers (gemma3 7), 1 kv head */
    const kv *set;               /* keys changed, added or (val NULL) left out */
    const char *const *tensors;  /* more tensors: [E] (GGUF) or lm_head.weight (HF) */
} spec;

static int n_layers(const spec *s) { return s->L ? s->L : s->arch == A_GEMMA3 ? 7 : 3; }
static int n_kv(const spec *s) { return s->Hkv ? s->Hkv : 1; }

/* ---- weights: fixed per architecture and shape ------------------------------- */

typedef t_tensor tw;

static float *rnd(t_rng *r, int64_t n, double lo, double hi)
{
    float *p = t_mem((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)t_rng_range(r, lo, hi);
    return p;
}

/* the tensors of s, named for its format; HF gemma stores norms as w - 1 */
static int weights(const spec *s, tw *out)
{
    const int L = n_layers(s), KD = n_kv(s) * D, QD = H * D;
    const bool hf = !s->gguf, gemma = s->arch == A_GEMMA3;
    t_rng r = { 1000u * (uint64_t)s->arch + 10u * (uint64_t)L + (uint64_t)n_kv(s) };
    int n = 0;
#define PUT(g, h, l, sh, lo, hi)                                                      \
    do {                                                                              \
        snprintf(out[n].name, sizeof out[n].name, hf ? h : g, l);                     \
        out[n].shape = sh;                                                            \
        int64_t c_ = 1;                                                               \
        for (int d_ = 0; d_ < out[n].shape.rank; d_++) c_ *= out[n].shape.dims[d_];   \
        out[n].data = rnd(&r, c_, lo, hi);                                            \
        n++;                                                                          \
    } while (0)
    const double nlo = hf && gemma ? -0.5 : 0.5, nhi = nlo + 1.0;   /* norms */
    const bool tied = s->arch == A_QWEN2 || gemma;
    PUT("token_embd.weight%.0d", "model.embed_tokens.weight%.0d", 0, WK_SHAPE(V, E), -1, 1);
    PUT("output_norm.weight%.0d", "model.norm.weight%.0d", 0, WK_SHAPE(E), nlo, nhi);
    if (!tied) PUT("output.weight%.0d", "lm_head.weight%.0d", 0, WK_SHAPE(V, E), -0.3, 0.3);
    for (int l = 0; l < L; l++) {
        PUT("blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", l, WK_SHAPE(E), nlo, nhi);
        PUT("blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", l, WK_SHAPE(QD, E), -0.3, 0.3);
        PUT("blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", l, WK_SHAPE(KD, E), -0.3, 0.3);
        PUT("blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", l, WK_SHAPE(KD, E), -0.3, 0.3);
        PUT("blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", l, WK_SHAPE(E, QD), -0.3, 0.3);
        if (s->arch == A_QWEN2) {
            PUT("blk.%d.attn_q.bias", "model.layers.%d.self_attn.q_proj.bias", l, WK_SHAPE(QD), -0.5, 0.5);
            PUT("blk.%d.attn_k.bias", "model.layers.%d.self_attn.k_proj.bias", l, WK_SHAPE(KD), -0.5, 0.5);
            PUT("blk.%d.attn_v.bias", "model.layers.%d.self_attn.v_proj.bias", l, WK_SHAPE(KD), -0.5, 0.5);
        }
        if (s->arch == A_QWEN3 || gemma) {
            PUT("blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", l, WK_SHAPE(D), nlo, nhi);
            PUT("blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", l, WK_SHAPE(D), nlo, nhi);
        }
        if (gemma) {
            PUT("blk.%d.post_attention_norm.weight", "model.layers.%d.post_attention_layernorm.weight", l, WK_SHAPE(E),
                nlo, nhi);
            PUT("blk.%d.ffn_norm.weight", "model.layers.%d.pre_feedforward_layernorm.weight", l, WK_SHAPE(E), nlo, nhi);
            PUT("blk.%d.post_ffw_norm.weight", "model.layers.%d.post_feedforward_layernorm.weight", l, WK_SHAPE(E), nlo,
                nhi);
        } else {
            PUT("blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", l, WK_SHAPE(E), nlo, nhi);
        }
        PUT("blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", l, WK_SHAPE(F, E), -0.3, 0.3);
        PUT("blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", l, WK_SHAPE(F, E), -0.3, 0.3);
        PUT("blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", l, WK_SHAPE(E, F), -0.3, 0.3);
    }
    for (int i = 0; s->tensors && s->tensors[i]; i++) {
        const bool head = !strcmp(s->tensors[i], "lm_head.weight");
        PUT("%s", "%s", s->tensors[i], head ? WK_SHAPE(V, E) : WK_SHAPE(E), -0.3, 0.3);
    }
#undef PUT
    return n;
}

/* ---- the files ------------------------------------------------------------------ */

/* the base keys, then s->set over them: out[i] = { key, JSON text } */
static int keys(const spec *s, kv *out, char (*buf)[32])
{
    const int L = n_layers(s);
    int n = 0, b = 0;
#define NUM(k, fmt, v) (snprintf(buf[b], 32, fmt, v), out[n++] = (kv){ k, buf[b++] })
    if (s->gguf) {
        NUM("context_length", "%d", 32);
        NUM("embedding_length", "%d", E);
        NUM("block_count", "%d", L);
        NUM("feed_forward_length", "%d", F);
        NUM("attention.head_count", "%d", H);
        NUM("attention.head_count_kv", "%d", n_kv(s));
        NUM("attention.key_length", "%d", D);
        out[n++] = (kv){ "attention.layer_norm_rms_epsilon", "1e-5" };
        out[n++] = (kv){ "rope.freq_base", s->arch == A_GEMMA3 ? "1e6" : "1e4" };
        if (s->arch == A_GEMMA3) out[n++] = (kv){ "attention.sliding_window", "3" };
    } else {
        snprintf(buf[b], 32, "\"%s\"", s->mt ? s->mt : hf_type[s->arch]);
        out[n++] = (kv){ "model_type", buf[b++] };
        NUM("vocab_size", "%d", V);
        NUM("hidden_size", "%d", E);
        NUM("num_hidden_layers", "%d", L);
        NUM("num_attention_heads", "%d", H);
        NUM("num_key_value_heads", "%d", n_kv(s));
        NUM("head_dim", "%d", D);
        NUM("intermediate_size", "%d", F);
        NUM("max_position_embeddings", "%d", 32);
        out[n++] = (kv){ "rms_norm_eps", "1e-5" };
        out[n++] = (kv){ "tie_word_embeddings", s->arch == A_QWEN2 || s->arch == A_GEMMA3 ? "true" : "false" };
        if (s->arch == A_GEMMA3) {
            out[n++] = (kv){ "hidden_activation", "\"gelu_pytorch_tanh\"" };
            out[n++] = (kv){ "query_pre_attn_scalar", "8" };
            out[n++] = (kv){ "sliding_window", "3" };
            out[n++] = (kv){ "rope_theta", "1e6" };
        } else {
            out[n++] = (kv){ "hidden_act", "\"silu\"" };
            out[n++] = (kv){ "rope_theta", "1e4" };
        }
    }
#undef NUM
    for (int i = 0; s->set && s->set[i].key; i++) {
        int j = 0;
        while (j < n && strcmp(out[j].key, s->set[i].key)) j++;
        out[j] = s->set[i];
        if (j == n) n++;
    }
    return n;
}

static const char *tmp_path(const char *what)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/wick-test-llmcfg-%d-%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(),
             what);
    return buf;
}

/* a JSON value as a GGUF value: bools, strings, numbers (a '.' or an 'e':
   f32; else u32, or i32 when negative), arrays of bools or integers */
static bool put_gguf(wk_gguf_writer *w, const char *key, const char *text)
{
    wk_json *j = wk_json_parse(text, strlen(text), "value", 0);
    if (!j) return false;
    bool ok = false, b;
    int64_t i;
    double d;
    if (wk_json_bool(j, &b)) ok = !wk_gguf_writer_set_bool(w, key, b);
    else if (wk_json_string(j, NULL)) ok = !wk_gguf_writer_set_str(w, key, wk_json_string(j, NULL));
    else if (wk_json_number(j, &d) && (strpbrk(text, ".e") || !wk_json_int(j, &i)))
        ok = !wk_gguf_writer_set_f32(w, key, (float)d);
    else if (wk_json_int(j, &i)) ok = i < 0 ? !wk_gguf_writer_set_i32(w, key, (int32_t)i) : !wk_gguf_writer_set_u32(w, key, (uint32_t)i);
    else if (wk_json_kind(j) == WK_JSON_ARRAY) {
        const size_t n = wk_json_count(j);
        bool bs[64];
        int32_t is[64];
        const bool bools = n && wk_json_bool(wk_json_item(j, 0), &b);
        for (size_t k = 0; k < n && k < 64; k++) {
            wk_json_bool(wk_json_item(j, k), &bs[k]);
            is[k] = wk_json_int(wk_json_item(j, k), &i) ? (int32_t)i : 0;
        }
        ok = !wk_gguf_writer_set_array(w, key, bools ? WK_GGUF_BOOL : WK_GGUF_I32, bools ? (void *)bs : (void *)is, n);
    }
    wk_json_free(j);
    return ok;
}

static bool write_gguf(const spec *s, const char *path)
{
    kv k[64];
    char buf[32][32];
    const int nk = keys(s, k, buf);
    wk_gguf_writer *w = wk_gguf_writer_new();
    bool ok = w && !wk_gguf_writer_set_str(w, "general.architecture", s->mt ? s->mt : arch_name[s->arch]);
    for (int i = 0; ok && i < nk; i++) {
        if (!k[i].val) continue;
        char key[160];
        const bool global = !strncmp(k[i].key, "general.", 8) || !strncmp(k[i].key, "tokenizer.", 10);
        snprintf(key, sizeof key, "%s%s%s", global ? "" : s->mt ? s->mt : arch_name[s->arch], global ? "" : ".", k[i].key);
        ok = put_gguf(w, key, k[i].val);
    }
    tw *ts = t_mem(256 * sizeof *ts);
    const int n = weights(s, ts);
    for (int i = 0; ok && i < n; i++) ok = !wk_gguf_writer_add_data(w, ts[i].name, WK_F32, ts[i].shape, ts[i].data);
    ok = ok && !wk_gguf_writer_write(w, path);
    if (!ok) t_fail("writing %s: %s", path, wk_last_error());
    wk_gguf_writer_free(w);
    return ok;
}

static bool write_hf(const spec *s, const char *dir)
{
    char path[320];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    if (system(path) != 0) return false;
    tw *ts = t_mem(256 * sizeof *ts);
    const int n = weights(s, ts);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!t_write_safetensors(path, ts, n)) return false;
    kv k[64];
    char buf[32][32];
    const int nk = keys(s, k, buf);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "{\"architectures\":[\"X\"],\"torch_dtype\":\"float32\",\"transformers_version\":\"5.24.0\"");
    for (int i = 0; i < nk; i++)
        if (k[i].val) fprintf(f, ",\"%s\":%s", k[i].key, k[i].val);
    fprintf(f, "}\n");
    fclose(f);
    return true;
}

/* ---- load and run ------------------------------------------------------------- */

static char last_msg[1024];

/* the logits of every token of `tokens` (t_mem), or NULL when the load is
   refused (its message in last_msg); const info copied to *info */
static float *run(const spec *s, wk_llm_info *info)
{
    const char *path = tmp_path(s->gguf ? "m.gguf" : "hf");
    last_msg[0] = 0;
    if (!(s->gguf ? write_gguf(s, path) : write_hf(s, path))) {
        t_fail("could not write %s", path);
        return NULL;
    }
    wk_llm *m = wk_llm_load(path, t_dev(), NULL);
    float *lg = NULL;
    if (!m) {
        snprintf(last_msg, sizeof last_msg, "%s", wk_last_error());
    } else {
        if (info) *info = *wk_llm_get_info(m);
        lg = t_mem((size_t)T * V * sizeof *lg);
        if (wk_llm_eval(m, tokens, T, true, lg) != WK_OK) {
            t_fail("eval: %s", wk_last_error());
            lg = NULL;
        }
        wk_llm_free(m);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) t_fail("could not remove %s", path);
    return lg;
}

/* refused, the message naming every one of words */
static void refused(spec s, const char *w1, const char *w2)
{
    float *lg = run(&s, NULL);
    T_CHECK(!lg, "loaded, but it should be refused (%s)", w1);
    if (lg) return;
    T_CHECK(strstr(last_msg, w1) && (!w2 || strstr(last_msg, w2)), "the message does not say '%s'%s%s: %s", w1,
            w2 ? " and " : "", w2 ? w2 : "", last_msg);
}

static float *loads(spec s)
{
    float *lg = run(&s, NULL);
    T_CHECK(lg, "refused: %s", last_msg);
    return lg;
}

/* a loads with the same logits as b, bit for bit (or within tol) */
static void same(spec a, spec b, double tol)
{
    float *la = run(&a, NULL);
    T_CHECK(la, "refused: %s", last_msg);
    float *lb = run(&b, NULL);
    T_CHECK(lb, "the reference spec is refused: %s", last_msg);
    if (!la || !lb) return;
    double e = 0, s = 0;
    for (int i = 0; i < T * V; i++) e = fmax(e, fabs(la[i] - lb[i])), s = fmax(s, fabs(lb[i]));
    if (tol == 0) T_CHECK(!memcmp(la, lb, (size_t)T * V * sizeof *la), "logits differ (by %.3g)", e);
    else T_CHECK(e <= tol * s, "logits differ by %.3g of the largest", e / s);
}

/* the switch matters: a's logits are not b's */
static void differs(spec a, spec b)
{
    float *la = run(&a, NULL), *lb = run(&b, NULL);
    T_CHECK(la && lb, "refused: %s", last_msg);
    if (la && lb) T_CHECK(memcmp(la, lb, (size_t)T * V * sizeof *la), "the logits do not change");
}

#define HF(a, ...) ((spec){ .arch = (a), .gguf = false, __VA_ARGS__ })
#define GG(a, ...) ((spec){ .arch = (a), .gguf = true, __VA_ARGS__ })

T_SUITE(llm_config)
{
    static const char *const lm_head[] = { "lm_head.weight", NULL };

    /* ---- config.json ---- */
    for (int a = 0; a < 4; a++)
        if (t_case("llm_config/hf/%s/base", hf_type[a])) loads(HF(a, .set = NONE));
    if (t_case("llm_config/hf/mistral/base")) loads(HF(A_LLAMA, .mt = "mistral", .set = NONE));

    if (t_case("llm_config/hf/llama/mlp_bias")) {
        refused(HF(A_LLAMA, .set = KV({ "mlp_bias", "true" })), "mlp_bias is true", "MLP");
        loads(HF(A_LLAMA, .set = KV({ "mlp_bias", "false" })));
    }
    if (t_case("llm_config/hf/mlp_bias_ignored")) {   /* their MLPs have no biases whatever the key says */
        same(HF(A_LLAMA, .mt = "mistral", .set = KV({ "mlp_bias", "true" })), HF(A_LLAMA, .mt = "mistral", .set = NONE), 0);
        for (int a = A_QWEN2; a <= A_GEMMA3; a++) same(HF(a, .set = KV({ "mlp_bias", "true" })), HF(a, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/attention_bias")) {
        const int refusing[] = { A_LLAMA, A_QWEN3, A_GEMMA3 };
        for (int i = 0; i < 3; i++) {
            refused(HF(refusing[i], .set = KV({ "attention_bias", "true" })), "attention_bias is true", "biases");
            loads(HF(refusing[i], .set = KV({ "attention_bias", "false" })));
        }
        /* Mistral: none; Qwen2: q/k/v always, o never */
        same(HF(A_LLAMA, .mt = "mistral", .set = KV({ "attention_bias", "true" })), HF(A_LLAMA, .mt = "mistral", .set = NONE), 0);
        same(HF(A_QWEN2, .set = KV({ "attention_bias", "false" })), HF(A_QWEN2, .set = NONE), 0);
        same(HF(A_QWEN2, .set = KV({ "attention_bias", "true" })), HF(A_QWEN2, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/hidden_act")) {
        for (int a = A_LLAMA; a <= A_QWEN3; a++) {
            refused(HF(a, .set = KV({ "hidden_act", "\"gelu_pytorch_tanh\"" })), "hidden_act is 'gelu_pytorch_tanh'", "SiLU");
            refused(HF(a, .set = KV({ "hidden_act", "\"relu\"" })), "hidden_act is 'relu'", NULL);
            same(HF(a, .set = KV({ "hidden_act", "\"swish\"" })), HF(a, .set = NONE), 0);
            same(HF(a, .set = KV({ "hidden_act", NULL })), HF(a, .set = NONE), 0);
            same(HF(a, .set = KV({ "hidden_activation", "\"gelu\"" })), HF(a, .set = NONE), 0);   /* not read */
        }
        refused(HF(A_LLAMA, .mt = "mistral", .set = KV({ "hidden_act", "\"gelu\"" })), "hidden_act is 'gelu'", NULL);
    }
    if (t_case("llm_config/hf/gemma3_text/hidden_activation")) {
        refused(HF(A_GEMMA3, .set = KV({ "hidden_activation", "\"silu\"" })), "hidden_activation is 'silu'", NULL);
        refused(HF(A_GEMMA3, .set = KV({ "hidden_activation", "\"gelu\"" })), "hidden_activation is 'gelu'", NULL);
        same(HF(A_GEMMA3, .set = KV({ "hidden_activation", NULL })), HF(A_GEMMA3, .set = NONE), 0);
        /* Gemma3MLP never reads hidden_act */
        same(HF(A_GEMMA3, .set = KV({ "hidden_act", "\"silu\"" })), HF(A_GEMMA3, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/qwen/use_sliding_window")) {
        for (int a = A_QWEN2; a <= A_QWEN3; a++) {
            refused(HF(a, .set = KV({ "use_sliding_window", "true" }, { "max_window_layers", "1" })),
                    "use_sliding_window is true", "max_window_layers 1");
            /* max_window_layers (28 when absent) past the 3 layers, a null window, or the flag off: no layer slides */
            same(HF(a, .set = KV({ "use_sliding_window", "true" })), HF(a, .set = NONE), 0);
            same(HF(a, .set = KV({ "use_sliding_window", "true" }, { "max_window_layers", "3" }, { "sliding_window", "2" })),
                 HF(a, .set = NONE), 0);
            same(HF(a, .set = KV({ "use_sliding_window", "true" }, { "sliding_window", "null" }, { "max_window_layers", "0" })),
                 HF(a, .set = NONE), 0);
            same(HF(a, .set = KV({ "use_sliding_window", "false" }, { "sliding_window", "2" }, { "max_window_layers", "0" })),
                 HF(a, .set = NONE), 0);
            refused(HF(a, .set = KV({ "layer_types", "[\"full_attention\",\"sliding_attention\",\"full_attention\"]" })),
                    "layer_types is 'sliding_attention'", "layer 1");
            same(HF(a, .set = KV({ "layer_types", "[\"full_attention\",\"full_attention\",\"full_attention\"]" })),
                 HF(a, .set = NONE), 0);
        }
    }
    if (t_case("llm_config/hf/sliding_window")) {
        /* llama: not read; mistral: 4096 when absent, none when null */
        wk_llm_info in;
        spec s = HF(A_LLAMA, .set = KV({ "sliding_window", "2" }));
        T_CHECK(run(&s, &in) && in.sliding_window == 0, "llama's sliding_window: window %lld", (long long)in.sliding_window);
        same(s, HF(A_LLAMA, .set = NONE), 0);
        s = HF(A_LLAMA, .mt = "mistral", .set = NONE);
        T_CHECK(run(&s, &in) && in.sliding_window == 4096, "mistral without the key: window %lld", (long long)in.sliding_window);
        s = HF(A_LLAMA, .mt = "mistral", .set = KV({ "sliding_window", "null" }));
        T_CHECK(run(&s, &in) && in.sliding_window == 0, "mistral's null: window %lld", (long long)in.sliding_window);
        differs(HF(A_LLAMA, .mt = "mistral", .set = KV({ "sliding_window", "2" })), HF(A_LLAMA, .mt = "mistral", .set = NONE));
        refused(HF(A_LLAMA, .mt = "mistral", .set = KV({ "sliding_window", "0" })), "sliding_window is 0", NULL);
        refused(HF(A_LLAMA, .mt = "mistral", .set = KV({ "layer_types", "[\"sliding_attention\",\"sliding_attention\",\"sliding_attention\"]" })),
                "layer_types is an array", "ministral");
        same(HF(A_LLAMA, .set = KV({ "layer_types", "[\"sliding_attention\",\"full_attention\",\"full_attention\"]" })),
             HF(A_LLAMA, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/gemma3_text/attn_logit_softcapping")) {   /* transformers never applies it */
        same(HF(A_GEMMA3, .set = KV({ "attn_logit_softcapping", "0.5" })), HF(A_GEMMA3, .set = NONE), 0);
        same(HF(A_GEMMA3, .set = KV({ "attn_logit_softcapping", "null" })), HF(A_GEMMA3, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/softcaps_not_read")) {   /* llama, qwen: neither softcap is read */
        for (int a = A_LLAMA; a <= A_QWEN3; a++)
            same(HF(a, .set = KV({ "attn_logit_softcapping", "0.5" }, { "final_logit_softcapping", "0.5" })), HF(a, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/gemma3_text/final_logit_softcapping")) {
        differs(HF(A_GEMMA3, .set = KV({ "final_logit_softcapping", "0.5" })), HF(A_GEMMA3, .set = NONE));
        same(HF(A_GEMMA3, .set = KV({ "final_logit_softcapping", "null" })), HF(A_GEMMA3, .set = NONE), 0);
        refused(HF(A_GEMMA3, .set = KV({ "final_logit_softcapping", "0" })), "final_logit_softcapping is 0", NULL);
        refused(HF(A_GEMMA3, .set = KV({ "final_logit_softcapping", "-30" })), "final_logit_softcapping is -30", NULL);
    }
    if (t_case("llm_config/hf/gemma3_text/use_bidirectional_attention")) {
        refused(HF(A_GEMMA3, .set = KV({ "use_bidirectional_attention", "true" })), "use_bidirectional_attention is true",
                "causal");
        same(HF(A_GEMMA3, .set = KV({ "use_bidirectional_attention", "false" })), HF(A_GEMMA3, .set = NONE), 0);
    }
    if (t_case("llm_config/hf/gemma3_text/windows")) {
        /* _sliding_window_pattern is not read; sliding_window_pattern is, unless layer_types */
        same(HF(A_GEMMA3, .set = KV({ "_sliding_window_pattern", "2" })), HF(A_GEMMA3, .set = NONE), 0);
        same(HF(A_GEMMA3, .set = KV({ "sliding_window_pattern", "6" })), HF(A_GEMMA3, .set = NONE), 0);
        differs(HF(A_GEMMA3, .set = KV({ "sliding_window_pattern", "2" })), HF(A_GEMMA3, .set = NONE));
        same(HF(A_GEMMA3, .L = 3, .set = KV({ "sliding_window_pattern", "2" })),
             HF(A_GEMMA3, .L = 3, .set = KV({ "layer_types", "[\"sliding_attention\",\"full_attention\",\"sliding_attention\"]" })), 0);
        same(HF(A_GEMMA3, .L = 3, .set = KV({ "sliding_window_pattern", "2" }, { "layer_types", "[\"full_attention\",\"full_attention\",\"full_attention\"]" })),
             HF(A_GEMMA3, .L = 3, .set = KV({ "sliding_window_pattern", "1" })), 0);
        refused(HF(A_GEMMA3, .set = KV({ "sliding_window_pattern", "0" })), "sliding_window_pattern is 0", NULL);
        refused(HF(A_GEMMA3, .set = KV({ "sliding_window", "null" })), "sliding_window is null", NULL);
        loads(HF(A_GEMMA3, .set = KV({ "sliding_window", "null" }, { "sliding_window_pattern", "1" })));
    }
    if (t_case("llm_config/hf/rope_scaling/types")) {
        static const char *const bad[] = { "yarn", "dynamic", "longrope", "su", "mrope" };
        char v[160], want[64];
        for (int i = 0; i < 5; i++) {
            snprintf(v, sizeof v, "{\"rope_type\":\"%s\",\"factor\":4.0,\"original_max_position_embeddings\":16}", bad[i]);
            snprintf(want, sizeof want, "rope_scaling.rope_type is '%s'", bad[i]);
            refused(HF(A_LLAMA, .set = KV({ "rope_scaling", v })), want, NULL);
            snprintf(v, sizeof v, "{\"type\":\"%s\",\"factor\":4.0}", bad[i]);
            snprintf(want, sizeof want, "rope_scaling.type is '%s'", bad[i]);
            refused(HF(A_QWEN2, .set = KV({ "rope_scaling", v })), want, NULL);
            snprintf(v, sizeof v, "{\"rope_type\":\"%s\",\"factor\":4.0,\"rope_theta\":10000}", bad[i]);
            snprintf(want, sizeof want, "rope_parameters.rope_type is '%s'", bad[i]);
            refused(HF(A_QWEN3, .set = KV({ "rope_parameters", v }, { "rope_theta", NULL })), want, NULL);
            snprintf(v, sizeof v, "{\"full_attention\":{\"rope_type\":\"%s\",\"factor\":4.0}}", bad[i]);
            snprintf(want, sizeof want, "rope_parameters.full_attention.rope_type is '%s'", bad[i]);
            refused(HF(A_GEMMA3, .set = KV({ "rope_parameters", v })), want, NULL);
        }
        same(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"default\"}" })), HF(A_LLAMA, .set = NONE), 0);
        same(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":1.0}" })), HF(A_LLAMA, .set = NONE), 0);
        differs(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":4.0}" })), HF(A_LLAMA, .set = NONE));
    }
    if (t_case("llm_config/hf/rope_scaling/keys")) {
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"linear\"}" })), "rope_scaling.factor is missing", NULL);
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"high_freq_factor\":4.0,"
                                                        "\"original_max_position_embeddings\":16}" })),
                "rope_scaling.low_freq_factor is missing", NULL);
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,"
                                                        "\"high_freq_factor\":4.0}" })),
                "rope_scaling.original_max_position_embeddings is missing", "max_position_embeddings");
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,"
                                                        "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":16}" },
                                      { "original_max_position_embeddings", "8" })),
                "original_max_position_embeddings is 8", NULL);
        loads(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,"
                                                      "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":16}" })));
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":2.0}" },
                                      { "rope_parameters", "{\"rope_type\":\"default\",\"rope_theta\":10000}" })),
                "rope_scaling is an object", "rope_parameters");
        refused(HF(A_LLAMA, .set = KV({ "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":2.0,\"rope_theta\":500}" })),
                "rope_scaling.rope_theta is 500", NULL);
        refused(HF(A_GEMMA3, .set = KV({ "rope_parameters", "{\"rope_type\":\"linear\",\"factor\":2.0}" })),
                "rope_parameters is an object", "per layer type");
    }
    if (t_case("llm_config/hf/partial_rotary_factor")) {   /* transformers' default rope ignores it */
        same(HF(A_LLAMA, .set = KV({ "partial_rotary_factor", "0.5" })), HF(A_LLAMA, .set = NONE), 0);
        refused(HF(A_LLAMA, .set = KV({ "partial_rotary_factor", "0.5" }, { "rope_scaling", "{\"rope_type\":\"linear\",\"factor\":2.0}" })),
                "partial_rotary_factor is 0.5", NULL);
        refused(HF(A_QWEN3, .set = KV({ "rope_parameters", "{\"rope_type\":\"linear\",\"factor\":2.0,\"partial_rotary_factor\":0.25}" })),
                "rope_parameters.partial_rotary_factor is 0.25", NULL);
    }
    if (t_case("llm_config/hf/defaults")) {   /* num_key_value_heads and head_dim left out */
        refused(HF(A_QWEN3, .set = KV({ "num_key_value_heads", NULL })), "num_key_value_heads is missing", "32");
        refused(HF(A_QWEN2, .set = KV({ "num_key_value_heads", NULL })), "num_key_value_heads is missing", "32");
        refused(HF(A_GEMMA3, .Hkv = 2, .set = KV({ "num_key_value_heads", NULL })), "num_key_value_heads is missing", "4");
        refused(HF(A_LLAMA, .mt = "mistral", .Hkv = 2, .set = KV({ "num_key_value_heads", NULL })),
                "num_key_value_heads is missing", "8");
        same(HF(A_LLAMA, .Hkv = 2, .set = KV({ "num_key_value_heads", NULL })), HF(A_LLAMA, .Hkv = 2, .set = NONE), 0);
        refused(HF(A_QWEN3, .set = KV({ "head_dim", NULL })), "head_dim is missing", "128");
        same(HF(A_QWEN2, .set = KV({ "head_dim", NULL })), HF(A_QWEN2, .set = NONE), 0);
        same(HF(A_LLAMA, .mt = "mistral", .set = KV({ "head_dim", "null" })), HF(A_LLAMA, .mt = "mistral", .set = NONE), 0);
    }
    if (t_case("llm_config/hf/tie_word_embeddings")) {
        /* tied in the config, but the file holds lm_head.weight: transformers 5 does not tie */
        same(HF(A_QWEN2, .set = KV({ "tie_word_embeddings", "true" }), .tensors = lm_head),
             HF(A_QWEN2, .set = KV({ "tie_word_embeddings", "false" }), .tensors = lm_head), 0);
        differs(HF(A_QWEN2, .set = KV({ "tie_word_embeddings", "true" }), .tensors = lm_head), HF(A_QWEN2, .set = NONE));
        refused(HF(A_QWEN2, .set = KV({ "tie_word_embeddings", "false" })), "lm_head.weight", "missing");
    }
    if (t_case("llm_config/hf/quantization_config")) {
        refused(HF(A_LLAMA, .set = KV({ "quantization_config", "{\"quant_method\":\"fp8\"}" })), "quantization_config is an object",
                "quantized");
        loads(HF(A_LLAMA, .set = KV({ "quantization_config", "null" })));
    }
    if (t_case("llm_config/hf/ignored")) {   /* keys transformers does not read for these models */
        same(HF(A_LLAMA, .set = KV({ "attention_dropout", "0.5" }, { "pretraining_tp", "4" }, { "layer_norm_eps", "0.5" },
                                  { "layer_norm_epsilon", "0.5" }, { "use_qk_norm", "true" }, { "num_experts", "8" },
                                  { "embedding_multiplier", "3.0" }, { "logits_scaling", "2.0" })),
             HF(A_LLAMA, .set = NONE), 0);
        same(HF(A_GEMMA3, .set = KV({ "attention_dropout", "0.5" }, { "layer_norm_eps", "0.5" })), HF(A_GEMMA3, .set = NONE), 0);
    }

    /* ---- GGUF ---- */
    for (int a = 0; a < 4; a++)
        if (t_case("llm_config/gguf/%s/base", arch_name[a])) loads(GG(a, .set = NONE));

    if (t_case("llm_config/gguf/layer_norm_rms_epsilon")) {   /* required by llama.cpp */
        for (int a = 0; a < 4; a++) {
            char want[96];
            snprintf(want, sizeof want, "%s.attention.layer_norm_rms_epsilon is missing", arch_name[a]);
            refused(GG(a, .set = KV({ "attention.layer_norm_rms_epsilon", NULL })), want, NULL);
            refused(GG(a, .set = KV({ "attention.layer_norm_rms_epsilon", NULL }, { "attention.layer_norm_epsilon", "1e-5" })),
                    want, NULL);
        }
        same(GG(A_LLAMA, .set = KV({ "attention.layer_norm_epsilon", "0.5" })), GG(A_LLAMA, .set = NONE), 0);
    }
    if (t_case("llm_config/gguf/rope.scaling.type")) {
        refused(GG(A_LLAMA, .set = KV({ "rope.scaling.type", "\"yarn\"" }, { "rope.scaling.factor", "4.0" })),
                "llama.rope.scaling.type is 'yarn'", NULL);
        refused(GG(A_QWEN2, .set = KV({ "rope.scaling.type", "\"longrope\"" })), "qwen2.rope.scaling.type is 'longrope'", NULL);
        refused(GG(A_QWEN3, .set = KV({ "rope.scaling.type", "\"llama3\"" })), "qwen3.rope.scaling.type is 'llama3'", NULL);
        same(GG(A_LLAMA, .set = KV({ "rope.scaling.type", "\"none\"" }, { "rope.scaling.factor", "4.0" })), GG(A_LLAMA, .set = NONE), 0);
        /* llama.cpp's type is linear when absent; rope.scale_linear is the factor's older name; 0 means 1 */
        same(GG(A_LLAMA, .set = KV({ "rope.scaling.factor", "4.0" })),
             GG(A_LLAMA, .set = KV({ "rope.scaling.type", "\"linear\"" }, { "rope.scaling.factor", "4.0" })), 0);
        differs(GG(A_LLAMA, .set = KV({ "rope.scaling.factor", "4.0" })), GG(A_LLAMA, .set = NONE));
        same(GG(A_QWEN3, .set = KV({ "rope.scale_linear", "4.0" })), GG(A_QWEN3, .set = KV({ "rope.scaling.factor", "4.0" })), 0);
        same(GG(A_QWEN3, .set = KV({ "rope.scaling.factor", "4.0" }, { "rope.scale_linear", "2.0" })),
             GG(A_QWEN3, .set = KV({ "rope.scaling.factor", "4.0" })), 0);
        same(GG(A_QWEN2, .set = KV({ "rope.scaling.factor", "0.0" })), GG(A_QWEN2, .set = NONE), 0);
    }
    if (t_case("llm_config/gguf/rope.scaling.attn_factor")) {
        refused(GG(A_LLAMA, .set = KV({ "rope.scaling.attn_factor", "2.0" })), "llama.rope.scaling.attn_factor is 2", NULL);
        same(GG(A_LLAMA, .set = KV({ "rope.scaling.attn_factor", "1.0" })), GG(A_LLAMA, .set = NONE), 0);
    }
    if (t_case("llm_config/gguf/attention.causal")) {
        refused(GG(A_QWEN3, .set = KV({ "attention.causal", "false" })), "qwen3.attention.causal is false", "causal");
        same(GG(A_QWEN3, .set = KV({ "attention.causal", "true" })), GG(A_QWEN3, .set = NONE), 0);
    }
    if (t_case("llm_config/gguf/experts")) {
        /* llama with experts is Mixtral (llama.cpp's converter writes it so): a dense file's MLP is not its */
        refused(GG(A_LLAMA, .set = KV({ "expert_count", "8" }, { "expert_used_count", "2" })), "blk.0.ffn_gate.weight",
                "not a tensor wick loads");
        refused(GG(A_QWEN2, .set = KV({ "expert_used_count", "2" })), "qwen2.expert_used_count is 2", NULL);
        same(GG(A_LLAMA, .set = KV({ "expert_count", "0" })), GG(A_LLAMA, .set = NONE), 0);
        refused(GG(A_LLAMA, .set = KV({ "nextn_predict_layers", "1" })), "llama.nextn_predict_layers is 1", NULL);
    }
    if (t_case("llm_config/gguf/head_sizes")) {
        refused(GG(A_QWEN3, .set = KV({ "attention.value_length", "4" })), "qwen3.attention.value_length is 4", NULL);
        same(GG(A_QWEN3, .set = KV({ "attention.value_length", "8" })), GG(A_QWEN3, .set = NONE), 0);
        refused(GG(A_GEMMA3, .set = KV({ "attention.key_length_swa", "16" })), "gemma3.attention.key_length_swa is 16", NULL);
        refused(GG(A_GEMMA3, .set = KV({ "rope.dimension_count_swa", "4" })), "gemma3.rope.dimension_count_swa is 4", NULL);
        refused(GG(A_LLAMA, .set = KV({ "rope.dimension_count", "4" })), "partial rotary", NULL);
    }
    if (t_case("llm_config/gguf/softcaps")) {
        /* llama.cpp reads no attention softcap for these four, the final one for gemma3 only */
        for (int a = 0; a < 4; a++) same(GG(a, .set = KV({ "attn_logit_softcapping", "0.5" })), GG(a, .set = NONE), 0);
        for (int a = A_LLAMA; a <= A_QWEN3; a++)
            same(GG(a, .set = KV({ "final_logit_softcapping", "0.5" })), GG(a, .set = NONE), 0);
        differs(GG(A_GEMMA3, .set = KV({ "final_logit_softcapping", "0.5" })), GG(A_GEMMA3, .set = NONE));
        same(GG(A_GEMMA3, .set = KV({ "final_logit_softcapping", "0.0" })), GG(A_GEMMA3, .set = NONE), 0);
        refused(GG(A_GEMMA3, .set = KV({ "final_logit_softcapping", "-30.0" })), "gemma3.final_logit_softcapping is -30", NULL);
    }
    if (t_case("llm_config/gguf/ignored")) {   /* keys llama.cpp does not read for these architectures */
        for (int a = 0; a < 4; a++)
            same(GG(a, .set = KV({ "embedding_scale", "3.0" }, { "residual_scale", "0.5" }, { "logit_scale", "2.0" },
                                 { "attention.scale", "0.1" }, { "use_parallel_residual", "true" }, { "pooling_type", "1" },
                                 { "rope.scaling.original_context_length", "8" }, { "vocab_size", "32" })),
                 GG(a, .set = NONE), 0);
        for (int a = A_QWEN2; a <= A_QWEN3; a++)
            same(GG(a, .set = KV({ "attention.sliding_window", "2" })), GG(a, .set = NONE), 0);
        /* llama: wick applies Mistral's window (llama.cpp does not read the key, its converter never writes it) */
        differs(GG(A_LLAMA, .set = KV({ "attention.sliding_window", "2" })), GG(A_LLAMA, .set = NONE));
    }
    if (t_case("llm_config/gguf/gemma3/sliding_window")) {
        /* without the key (or 0) every layer is global: the same model as
           a window longer than the text on every layer... but for the rope
           base, so the global base is 10000 here */
        wk_llm_info in;
        spec s = GG(A_GEMMA3, .set = KV({ "attention.sliding_window", NULL }));
        T_CHECK(run(&s, &in) && in.sliding_window == 0, "no window key: window %lld", (long long)in.sliding_window);
        same(GG(A_GEMMA3, .set = KV({ "attention.sliding_window", NULL })),
             GG(A_GEMMA3, .set = KV({ "attention.sliding_window", "0" })), 0);
        same(GG(A_GEMMA3, .set = KV({ "attention.sliding_window", NULL }, { "rope.freq_base", "1e4" })),
             GG(A_GEMMA3, .set = KV({ "attention.sliding_window", "64" }, { "rope.freq_base", "1e4" })), 0);
        differs(GG(A_GEMMA3, .set = KV({ "attention.sliding_window", NULL })),
                GG(A_GEMMA3, .set = KV({ "attention.sliding_window", "64" })));
        /* the HF file with every layer global is the same model (HF stores norms as w - 1: rounding) */
        same(GG(A_GEMMA3, .set = KV({ "attention.sliding_window", NULL })),
             HF(A_GEMMA3, .set = KV({ "sliding_window_pattern", "1" })), 1e-5);
    }
    if (t_case("llm_config/gguf/gemma3/sliding_window_pattern")) {
        same(GG(A_GEMMA3, .set = KV({ "attention.sliding_window_pattern", "6" })), GG(A_GEMMA3, .set = NONE), 0);
        same(GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "2" })),
             GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "[true,false,true,false]" })), 0);
        same(GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "[1,0,1,0]" })),
             GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "[true,false,true,false]" })), 0);
        same(GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "[true,false,true,false]" })),
             HF(A_GEMMA3, .L = 4, .set = KV({ "sliding_window_pattern", "2" })), 1e-5);
        differs(GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "2" })), GG(A_GEMMA3, .L = 4, .set = NONE));
        refused(GG(A_GEMMA3, .L = 4, .set = KV({ "attention.sliding_window_pattern", "[true,false]" })),
                "gemma3.attention.sliding_window_pattern is an array of 2", "4 layers");
        refused(GG(A_GEMMA3, .set = KV({ "attention.sliding_window_pattern", "-2" })),
                "gemma3.attention.sliding_window_pattern is -2", NULL);
    }
    if (t_case("llm_config/gguf/gemma3/rope.freq_base_swa")) {
        same(GG(A_GEMMA3, .set = KV({ "rope.freq_base_swa", "1e4" })), GG(A_GEMMA3, .set = NONE), 0);
        same(GG(A_GEMMA3, .set = KV({ "rope.freq_base_swa", "100.0" })),
             HF(A_GEMMA3, .set = KV({ "rope_local_base_freq", "100.0" })), 1e-5);
        differs(GG(A_GEMMA3, .set = KV({ "rope.freq_base_swa", "100.0" })), GG(A_GEMMA3, .set = NONE));
    }
    if (t_case("llm_config/gguf/tensors")) {
        static const char *const q_bias[] = { "blk.0.attn_q.bias", NULL }, *const o_bias[] = { "blk.1.attn_output.bias", NULL },
                                 *const up_bias[] = { "blk.2.ffn_up.bias", NULL }, *const out_bias[] = { "output.bias", NULL },
                                 *const qkv[] = { "blk.0.attn_qkv.weight", NULL }, *const exps[] = { "blk.0.ffn_gate_inp.weight", NULL },
                                 *const cls[] = { "cls.output.weight", NULL }, *const past[] = { "blk.3.attn_norm.weight", NULL },
                                 *const ff[] = { "rope_freqs.weight", NULL }, *const dense[] = { "dense_2.weight", NULL },
                                 *const scale[] = { "blk.0.ffn_up.scale", NULL };
        refused(GG(A_LLAMA, .tensors = q_bias), "blk.0.attn_q.bias", "biases");
        refused(GG(A_LLAMA, .tensors = o_bias), "blk.1.attn_output.bias", "biases");
        refused(GG(A_LLAMA, .tensors = up_bias), "blk.2.ffn_up.bias", "biases");
        refused(GG(A_QWEN2, .tensors = o_bias), "blk.1.attn_output.bias", "biases");
        refused(GG(A_QWEN2, .tensors = out_bias), "output.bias", NULL);
        refused(GG(A_QWEN3, .tensors = q_bias), "blk.0.attn_q.bias", "biases");
        refused(GG(A_GEMMA3, .tensors = q_bias), "blk.0.attn_q.bias", "biases");
        refused(GG(A_LLAMA, .tensors = qkv), "blk.0.attn_qkv.weight", "fused");
        refused(GG(A_LLAMA, .tensors = exps), "blk.0.ffn_gate_inp.weight", "mixture-of-experts");
        refused(GG(A_QWEN3, .tensors = cls), "cls.output.weight", "classifier");
        refused(GG(A_LLAMA, .tensors = past), "blk.3.attn_norm.weight", "block_count");
        /* a layer count past 4096 (fuzz_gguf: it once overran the per-layer flags) */
        refused(GG(A_GEMMA3, .set = KV({ "block_count", "10500" })), "block_count is 10500", "1 to 4096");
        refused(HF(A_GEMMA3, .set = KV({ "num_hidden_layers", "5000" })), "num_hidden_layers is 5000", "1 to 4096");
        refused(GG(A_GEMMA3, .tensors = dense), "dense_2.weight", "not a tensor wick loads");
        refused(GG(A_LLAMA, .tensors = scale), "blk.0.ffn_up.scale", "not a tensor wick loads");
        refused(GG(A_QWEN2, .tensors = ff), "rope_freqs.weight", "llama's");
        /* rope_freqs.weight is llama's, but not with a linear factor (llama.cpp applies both) */
        refused(GG(A_LLAMA, .L = 2, .set = KV({ "rope.scaling.factor", "2.0" }), .tensors = ff), "llama.rope.scaling.factor is 2",
                "rope_freqs.weight");
    }
}

/* ---- against the references ------------------------------------------------------- */

T_SUITE(llm_config_ref)
{
    static const char *const dirs[] = { "tests/data/config_ref", "../tests/data/config_ref", "data/config_ref" };
    const char *dir = NULL;
    wk_json *ref = NULL;
    char path[512];
    for (size_t i = 0; i < 3 && !ref; i++) {
        snprintf(path, sizeof path, "%s/ref.json", dirs[i]);
        if (access(path, R_OK) == 0) dir = dirs[i], ref = wk_json_parse_file(path, 0);
    }
    if (!ref) {
        if (t_case("llm_config_ref/files")) t_fail("cannot read tests/data/config_ref/ref.json (run from the repository root)");
        return;
    }
    const wk_json *cases = wk_json_get(ref, "cases");
    for (size_t c = 0; c < wk_json_count(cases); c++) {
        const wk_json *k = wk_json_item(cases, c);
        const char *name = wk_json_string(wk_json_get(k, "name"), NULL);
        const char *file = wk_json_string(wk_json_get(k, "file"), NULL);
        const char *who = wk_json_string(wk_json_get(k, "reference"), NULL);
        if (!name || !file || !who || !t_case("llm_config_ref/%s/%s", who, name)) continue;
        const wk_json *tk = wk_json_get(k, "tokens"), *lg = wk_json_get(k, "logits");
        const int64_t n = (int64_t)wk_json_count(tk);
        int32_t *ids = t_mem((size_t)n * sizeof *ids);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = 0;
            wk_json_int(wk_json_item(tk, (size_t)i), &v);
            ids[i] = (int32_t)v;
        }
        snprintf(path, sizeof path, "%s/%s", dir, file);
        wk_llm *m = wk_llm_load(path, t_dev(), NULL);
        if (!m) {
            t_fail("%s: %s", path, wk_last_error());
            continue;
        }
        const int64_t nv = wk_llm_get_info(m)->n_vocab;
        float *out = t_mem((size_t)(n * nv) * sizeof *out);
        T_OK(wk_llm_eval(m, ids, n, true, out));
        double worst = 0;
        for (int64_t t = 0; t < n && (int64_t)wk_json_count(lg) == n; t++) {
            const wk_json *row = wk_json_item(lg, (size_t)t);
            double e = 0, s = 0;
            int64_t a = 0, b = 0;
            for (int64_t i = 0; i < nv; i++) {
                double r = 0;
                wk_json_number(wk_json_item(row, (size_t)i), &r);
                e = fmax(e, fabs(out[t * nv + i] - r)), s = fmax(s, fabs(r));
                double rb = 0;
                wk_json_number(wk_json_item(row, (size_t)b), &rb);
                if (out[t * nv + i] > out[t * nv + a]) a = i;
                if (r > rb) b = i;
            }
            worst = fmax(worst, e / (s > 0 ? s : 1));
            T_CHECK(a == b, "position %lld: argmax %lld, the reference's %lld", (long long)t, (long long)a, (long long)b);
        }
        T_CHECK((int64_t)wk_json_count(lg) == n, "%zu rows of logits for %lld tokens", wk_json_count(lg), (long long)n);
        double bound = 1e-4;   /* llama.cpp's gemma3: 2e-3 (its cpu GELU goes through f16, tools/gen_config_ref.py) */
        wk_json_number(wk_json_get(k, "bound"), &bound);
        T_CHECK(worst < bound, "logits differ from %s's by %.3g of the row's largest (bound %g)", who, worst, bound);
        wk_llm_free(m);
    }
    wk_json_free(ref);
}
