/* hparams.c — what a model file says about its architecture and shape:
 * the keys every architecture shares, from GGUF metadata or a Hugging
 * Face config.json (the transformers 4 keys, rope_theta and rope_scaling,
 * and the transformers 5 ones, rope_parameters); then the architecture's
 * own reader (its descriptor's read_gguf / read_hf: llama.c, qwen.c,
 * gemma3.c) for what only it has. And the lookup of a file's tensors by
 * their GGUF or HF names.
 *
 * GGUF and HF differ in three ways the forward pass must know:
 *   - llama.cpp's converter permutes the rows of llama's Q and K weights so
 *     that rope rotates adjacent pairs (2i, 2i + 1) (llama.cpp's "normal"
 *     rope, wk_rope_i); HF files and every other architecture here rotate
 *     halves (i, i + D/2) (NeoX rope, wk_rope). llama.c says so.
 *   - the converter adds 1 to gemma's norm weights, so a GGUF gemma3 uses
 *     the plain rms_norm where HF's uses x * (1 + w) (gemma3.c).
 *   - Llama 3.1's rope scaling is a tensor in GGUF (rope_freqs.weight, the
 *     factor each frequency is divided by) and rope_scaling in HF's config.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm_internal.h"
#include "llm_config_check.h"

/* ---- GGUF ------------------------------------------------------------------- */

static wk_status g_int(const wk_gguf *g, const char *arch, const char *key, bool required, int64_t *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const wk_gguf_value *v = wk_gguf_find(g, k);
    if (!v) {
        if (!required) return WK_OK;
        return wk_error_set(WK_ERR_IO, "%s: the key %s is missing (the %s architecture needs it)", wk_gguf_path(g), k, arch);
    }
    int64_t x;
    if (!wk_gguf_value_int(v, &x)) {
        if (wk_gguf_value_type(v) == WK_GGUF_ARRAY)
            return wk_error_set(WK_ERR_UNSUPPORTED, "%s: %s is an array (a value per layer); wick takes one value",
                           wk_gguf_path(g), k);
        return wk_error_set(WK_ERR_IO, "%s: %s is a %s, not an integer", wk_gguf_path(g), k,
                       wk_gguf_type_name(wk_gguf_value_type(v)));
    }
    *out = x;
    return WK_OK;
}

wk_status llm_gguf_int(const wk_gguf *g, const char *arch, const char *key, bool required, int64_t *out)
{
    return g_int(g, arch, key, required, out);
}

wk_status llm_gguf_float(const wk_gguf *g, const char *arch, const char *key, double *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const wk_gguf_value *v = wk_gguf_find(g, k);
    if (!v) return WK_OK;
    double x;
    int64_t i;
    if (wk_gguf_value_float(v, &x)) *out = x;
    else if (wk_gguf_value_int(v, &i)) *out = (double)i;
    else return wk_error_set(WK_ERR_IO, "%s: %s is a %s, not a number", wk_gguf_path(g), k, wk_gguf_type_name(wk_gguf_value_type(v)));
    return WK_OK;
}

static const char *g_str(const wk_gguf *g, const char *key)
{
    const wk_gguf_value *v = wk_gguf_find(g, key);
    return v ? wk_gguf_value_str(v, NULL) : NULL;
}

static wk_status hparams_gguf(wk_llm *m)
{
    const wk_gguf *g = m->src.gguf;
    wk_llm_info *in = &m->cfg.info;
    llm_hparams *hp = &m->cfg.hp;
    const char *path = wk_gguf_path(g);
    const char *arch = g_str(g, "general.architecture");
    if (!arch) return wk_error_set(WK_ERR_IO, "%s: general.architecture is missing", path);
    const llm_arch_desc *desc = llm_arch_by_gguf(arch);
    if (!desc)
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (wick runs %s)", path, arch,
                            llm_arch_list(false));
    m->cfg.arch = desc;
    in->arch = desc->arch;
    const char *name = g_str(g, "general.name");
    snprintf(in->name, sizeof in->name, "%s", name ? name : llm_path_base(path));

    wk_status st;
    /* keys and tensors refused, or ignored as llama.cpp does (llm_gguf_check.c) */
    if ((st = llm_check_gguf(g, arch, in->arch))) return st;
    int64_t ctx = 0, E = 0, L = 0, F = 0, H = 0, Hkv = 0, D = 0, rope_dim = 0;
    llm_gguf_keys k = { .g = g, .arch = arch };
    if ((st = g_int(g, arch, "context_length", true, &ctx)) || (st = g_int(g, arch, "embedding_length", true, &E)) ||
        (st = g_int(g, arch, "block_count", true, &L)) || (st = g_int(g, arch, "feed_forward_length", true, &F)) ||
        (st = g_int(g, arch, "attention.head_count", true, &H)))
        return st;
    Hkv = H;
    if ((st = g_int(g, arch, "attention.head_count_kv", false, &Hkv))) return st;
    if (H <= 0) return wk_error_set(WK_ERR_IO, "%s: %s.attention.head_count is %lld", path, arch, (long long)H);
    D = E / H;
    if ((st = g_int(g, arch, "attention.key_length", false, &D))) return st;
    rope_dim = D;
    if ((st = g_int(g, arch, "rope.dimension_count", false, &rope_dim))) return st;
    k.swa = -1;
    if ((st = g_int(g, arch, "attention.sliding_window", false, &k.swa))) return st;
    k.swa_present = k.swa != -1;
    if (!k.swa_present) k.swa = 0;
    /* the architecture's reader fills a flag per layer: the count the
       flags were made for (a block_count out of 1..4096 or read under
       another name before) is refused here, before any is written */
    if (L != m->cfg.n_sliding)
        return wk_error_set(WK_ERR_IO, "%s: %s.block_count is %lld (1 to 4096 layers)", path, arch, (long long)L);
    in->train_context = ctx;
    in->n_embd = E;
    in->n_layer = L;
    in->n_ff = F;
    in->n_head = H;
    in->n_head_kv = Hkv;
    in->head_dim = D;
    if (rope_dim != D && in->arch != WK_LLM_PHI3)
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: rope over %lld of a head's %lld dims (partial rotary) is not supported",
                            path, (long long)rope_dim, (long long)D);
    if (rope_dim <= 0 || rope_dim > D || rope_dim % 2)   /* phi3 (Phi-4-mini): the first rope_dim dims */
        return wk_error_set(WK_ERR_IO, "%s: rope over %lld of a head's %lld dims", path, (long long)rope_dim, (long long)D);
    hp->rope_dims = rope_dim;
    in->norm_eps = 1e-5;
    in->rope_base = 10000.0;
    if ((st = llm_gguf_float(g, arch, "attention.layer_norm_rms_epsilon", &in->norm_eps)) ||
        (st = llm_gguf_float(g, arch, "rope.freq_base", &in->rope_base)) ||
        /* llama.cpp reads no attention softcap for these architectures, the final one for gemma3 only */
        (in->arch == WK_LLM_GEMMA3 && (st = llm_gguf_float(g, arch, "final_logit_softcapping", &hp->final_softcap))))
        return st;

    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const char *stype = g_str(g, key);
    /* llama.cpp's type is linear when absent, its factor rope.scaling.factor, else the older
       rope.scale_linear; 0 means 1 */
    if (!stype || !strcmp(stype, "linear")) {
        hp->scaling.type = WK_ROPE_SCALING_LINEAR;
        hp->scaling.factor = 0.0;
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
        if ((st = llm_gguf_float(g, arch, wk_gguf_find(g, key) ? "rope.scaling.factor" : "rope.scale_linear",
                          &hp->scaling.factor)))
            return st;
        if (hp->scaling.factor == 0.0 || hp->scaling.factor == 1.0) hp->scaling.type = WK_ROPE_SCALING_NONE;
    } else if (strcmp(stype, "none")) {
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (none, linear and Llama 3's are)",
                            path, stype);
    }
    hp->freq_factors = wk_gguf_tensor_index(g, "rope_freqs.weight") >= 0;
    /* what the converter did (see the top of the file) is the
       architecture's to say, with its own keys */
    in->rope_interleaved = false;
    hp->gemma_norm = false;
    return desc->read_gguf(&m->cfg, &k);
}

/* ---- config.json ------------------------------------------------------------ */

wk_status llm_hf_int(const wk_json *c, const char *key, bool required, int64_t *out)
{
    wk_status st = wk_config_int(c, key, required, out);
    if (st == WK_ERR_ARGUMENT && required)
        return wk_error_set(WK_ERR_IO, "%s: \"%s\" is missing (the model needs it)", wk_json_doc_name(c), key);
    return st;
}

/* rope theta and scaling: transformers 5 writes rope_parameters (for
 * gemma3 one object per layer type), transformers 4 rope_theta and
 * rope_scaling. */
wk_status llm_hf_rope(const wk_json *c, const char *layer_type, double *theta, wk_rope_scaling *sc)
{
    const wk_json *rp = wk_json_get(c, "rope_parameters");
    if (rp && layer_type && wk_json_get(rp, layer_type)) rp = wk_json_get(rp, layer_type);
    const wk_json *rs = wk_json_get(c, "rope_scaling");
    if (wk_json_kind(rs) != WK_JSON_OBJECT) rs = NULL;
    if (wk_json_kind(rp) == WK_JSON_OBJECT) {
        double t;
        if (wk_json_number(wk_json_get(rp, "rope_theta"), &t)) *theta = t;
        if (!rs) rs = rp;
    } else {
        wk_status st = wk_config_float(c, "rope_theta", false, theta);
        if (st) return st;
    }
    sc->type = WK_ROPE_SCALING_NONE;
    if (!rs) return WK_OK;
    const char *type = wk_json_string(wk_json_get(rs, "rope_type"), NULL);
    if (!type) type = wk_json_string(wk_json_get(rs, "type"), NULL);
    if (!type || !strcmp(type, "default")) return WK_OK;
    double f = 1.0;
    wk_json_number(wk_json_get(rs, "factor"), &f);
    if (!strcmp(type, "linear")) {
        sc->type = f == 1.0 ? WK_ROPE_SCALING_NONE : WK_ROPE_SCALING_LINEAR;
        sc->factor = f;
    } else if (!strcmp(type, "llama3")) {
        sc->type = WK_ROPE_SCALING_LLAMA3;
        sc->factor = f;
        sc->low_freq_factor = 1.0;
        sc->high_freq_factor = 4.0;
        sc->original_max_position = 8192.0;
        wk_json_number(wk_json_get(rs, "low_freq_factor"), &sc->low_freq_factor);
        wk_json_number(wk_json_get(rs, "high_freq_factor"), &sc->high_freq_factor);
        wk_json_number(wk_json_get(rs, "original_max_position_embeddings"), &sc->original_max_position);
    } else {
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (none, linear and llama3 are)",
                       wk_json_doc_name(c), type);
    }
    return WK_OK;
}

static wk_status hparams_hf(wk_llm *m)
{
    const wk_json *c = m->src.config;
    wk_llm_info *in = &m->cfg.info;
    llm_hparams *hp = &m->cfg.hp;
    const char *doc = wk_json_doc_name(c);
    const char *mt = NULL;
    wk_status st = wk_config_str(c, "model_type", true, &mt);
    if (st) return st;
    const llm_arch_desc *desc = llm_arch_by_hf(mt);
    if (!desc)
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (wick runs %s)", doc, mt,
                            llm_arch_list(true));
    m->cfg.arch = desc;
    in->arch = desc->arch;
    snprintf(in->name, sizeof in->name, "%s", llm_path_base(m->src.dir));
    /* fields refused, or ignored as transformers does (llm_config_check.c) */
    if ((st = llm_check_config(c, in->arch))) return st;

    int64_t E = 0, L = 0, F = 0, H = 0;
    if ((st = llm_hf_int(c, "hidden_size", true, &E)) || (st = llm_hf_int(c, "num_hidden_layers", true, &L)) ||
        (st = llm_hf_int(c, "intermediate_size", true, &F)) || (st = llm_hf_int(c, "num_attention_heads", true, &H)) ||
        (st = llm_hf_int(c, "vocab_size", true, &in->n_vocab)))
        return st;
    if (H <= 0) return wk_error_set(WK_ERR_IO, "%s: num_attention_heads is %lld", doc, (long long)H);
    if (L != m->cfg.n_sliding)   /* as the GGUF reader: before a layer's flag is written */
        return wk_error_set(WK_ERR_IO, "%s: num_hidden_layers is %lld (1 to 4096 layers)", doc, (long long)L);
    in->n_embd = E;
    in->n_layer = L;
    in->n_ff = F;
    in->n_head = H;
    in->n_head_kv = H;
    in->head_dim = desc->hf_head_dim ? desc->hf_head_dim : E / H;
    in->train_context = 2048;
    in->norm_eps = 1e-6;
    in->rope_base = desc->hf_rope_base;
    if ((st = llm_hf_int(c, "num_key_value_heads", false, &in->n_head_kv)) ||
        (st = llm_hf_int(c, "head_dim", false, &in->head_dim)) ||
        (st = llm_hf_int(c, "max_position_embeddings", false, &in->train_context)) ||
        (st = wk_config_float(c, "rms_norm_eps", false, &in->norm_eps)) ||
        /* transformers applies no attention softcap in these models, the final one in gemma3 only */
        (in->arch == WK_LLM_GEMMA3 && (st = wk_config_float(c, "final_logit_softcapping", false, &hp->final_softcap))))
        return st;
    bool tied = desc->hf_tied;
    if ((st = wk_config_bool(c, "tie_word_embeddings", false, &tied))) return st;
    /* transformers 5 does not tie when the file holds lm_head.weight (tie_weights); the activation
       (hidden_act, hidden_activation) is checked in llm_config_check.c */
    hp->tied = tied && !llm_find(m, NULL, "lm_head.weight", -1);
    in->rope_interleaved = false;
    return desc->read_hf(&m->cfg, c);
}

static bool check_dims(const wk_llm_info *in, const char *what)
{
    const int64_t lim = (int64_t)1 << 24;
    int64_t v[] = { in->n_embd, in->n_layer, in->n_ff, in->n_head, in->n_head_kv, in->head_dim };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] <= 0 || v[i] > lim) {
            wk_error_set(WK_ERR_IO,
                    "%s: hyperparameters out of range (embedding %lld, layers %lld, ffn %lld, heads %lld, kv heads %lld, "
                    "head dim %lld)",
                    what, (long long)in->n_embd, (long long)in->n_layer, (long long)in->n_ff, (long long)in->n_head,
                    (long long)in->n_head_kv, (long long)in->head_dim);
            return false;
        }
    if (in->n_head % in->n_head_kv) {
        wk_error_set(WK_ERR_IO, "%s: %lld heads are not a multiple of %lld kv heads", what, (long long)in->n_head,
                (long long)in->n_head_kv);
        return false;
    }
    if (in->head_dim % 2) {
        wk_error_set(WK_ERR_IO, "%s: head dim %lld is odd (rope needs pairs)", what, (long long)in->head_dim);
        return false;
    }
    if (in->train_context <= 0) {
        wk_error_set(WK_ERR_IO, "%s: context length %lld", what, (long long)in->train_context);
        return false;
    }
    return true;
}

wk_status llm_read_config(wk_llm *m, const char *path)
{
    /* the layer count first, for the per-layer flags */
    int64_t L = 0;
    wk_status st;
    if (m->src.gguf) {
        const char *arch = g_str(m->src.gguf, "general.architecture");
        if (arch && (st = g_int(m->src.gguf, arch, "block_count", false, &L))) return st;
    } else if ((st = wk_config_int(m->src.config, "num_hidden_layers", false, &L))) {
        return st;
    }
    if (L <= 0 || L > 4096) L = 1;   /* the readers refuse the count below (n_sliding) */
    m->cfg.sliding = calloc((size_t)L, sizeof *m->cfg.sliding);
    if (!m->cfg.sliding) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    m->cfg.n_sliding = L;
    st = m->src.gguf ? hparams_gguf(m) : hparams_hf(m);
    if (st) return st;
    if (m->cfg.info.n_layer != L) return wk_error_set(WK_ERR_IO, "%s: layer count changed while reading", path);
    return check_dims(&m->cfg.info, path) ? WK_OK : wk_last_status();
}

const wk_file_tensor *llm_find(const wk_llm *m, const char *gguf_name, const char *hf_name, int layer)
{
    const char *pattern = m->src.gguf ? gguf_name : hf_name;
    char name[256];
    if (!pattern) return NULL;
    snprintf(name, sizeof name, pattern, layer);
    return wk_model_file_find(m->src.file, name);
}
