/* llm.c — a transformer language model on a wick device: loading the
 * weights of a GGUF or safetensors file, the KV cache, the rope tables,
 * and the forward pass from token ids to logits.
 *
 * One forward pass serves llama, qwen2, qwen3 and gemma3; the flags of
 * llm_hparams (llm_arch.c) switch the parts that differ:
 *
 *   x = embed(tokens) [* sqrt(E): gemma]                       [T, E]
 *   for each layer:
 *     h = norm(x)                                   rms_norm, gemma: (1 + w)
 *     q, k, v = h Wq [+ bq], h Wk [+ bk], h Wv [+ bv]   (qwen2: biases)
 *     q, k = norm(q), norm(k) per head                  (qwen3, gemma3)
 *     q, k = rope(q), rope(k) at positions pos .. pos+T-1
 *     cache[pos .. pos+T) = k, v
 *     a = attention(q, cache[0 .. pos+T)) causal [, window]  GQA in place
 *     a = a Wo [; a = norm(a): gemma's post-norm]
 *     x = x + a;  h = norm(x)                          (one fused op)
 *     f = (silu(h Wg) * h Wu) Wd     gemma: gelu_tanh(h Wg) * h Wu
 *     [f = norm(f)]; x = x + f
 *   logits = norm(x) Wout (tied: the embedding) [softcap]
 *
 * Every temporary lives in a wick scope, so a layer reads as above; the
 * only buffers that outlive a step are the weights, the KV cache (one
 * [1, Hkv, context, D] tensor per layer for K and one for V, allocated at
 * load) and the rope tables. Weights: block-quantized matrices are
 * multiplied by wk_qmatmul (on the cpu: decoded to f32, f32 sums), or
 * decoded once at load (options.dequantize); dense ones are converted to
 * the activation dtype at load.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "llm_internal.h"

static double llm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const char *wk_llm_arch_name(wk_llm_arch a)
{
    static const char *const names[] = { "llama", "qwen2", "qwen3", "gemma3" };
    return (unsigned)a < WK_LLM_ARCH_COUNT ? names[a] : "?";
}

/* ---- loading ---------------------------------------------------------------- */

/* A weight to load: where it goes, which file tensor, and the shape it must
 * have (rank 1 or 2). */
typedef struct wslot {
    wk_tensor **dst;
    const wk_file_tensor *info;
    int rank;
    int64_t d0, d1;
    bool matrix;      /* a weight multiplied by activations (may stay quantized) */
    bool embedding;   /* the token embedding (may stay quantized: qgather)       */
    int share;        /* tensor parallel: the rank's part (llm_tp.h)             */
} wslot;

/* What a rank of a tensor-parallel model holds of a weight. */
enum {
    SH_ALL,           /* all of it (norms, q/k norms)                           */
    SH_ROWS_Q,        /* rows of its query heads (wq, bq)                       */
    SH_ROWS_KV,       /* rows of its KV heads (wk, wv, bk, bv)                  */
    SH_COLS_Q,        /* columns of its query heads (wo)                        */
    SH_ROWS_FF,       /* rows of its FFN slice (gate, up)                       */
    SH_COLS_FF,       /* columns of its FFN slice (down)                        */
    SH_ROWS_VOC,      /* rows of its vocabulary slice (embedding, output)       */
};

typedef struct wlist {
    wslot *s;
    int64_t n, cap;
} wlist;

static wk_status want(wk_llm *m, wlist *wl, wk_tensor **dst, const char *gname, const char *hname, int layer,
                      bool required, int rank, int64_t d0, int64_t d1, bool matrix, int share)
{
    const wk_file_tensor *info = llm_find(m, gname, hname, layer);
    if (!info) {
        if (!required) return WK_OK;
        char name[256];
        snprintf(name, sizeof name, m->src.gguf ? gname : hname, layer);
        return wk_error_set(WK_ERR_IO, "%s: the tensor %s is missing (a %s model needs it)",
                       m->src.gguf ? wk_gguf_path(m->src.gguf) : m->src.dir, name, wk_llm_arch_name(m->info.arch));
    }
    bool ok = info->shape.rank == rank && info->shape.dims[0] == d0 && (rank == 1 || info->shape.dims[1] == d1);
    if (!ok) {
        char got[128] = "", exp[64];
        int p = 0;
        for (int i = 0; i < info->shape.rank && p < 100; i++)
            p += snprintf(got + p, sizeof got - (size_t)p, "%s%lld", i ? ", " : "", (long long)info->shape.dims[i]);
        if (rank == 1) snprintf(exp, sizeof exp, "%lld", (long long)d0);
        else snprintf(exp, sizeof exp, "%lld, %lld", (long long)d0, (long long)d1);
        return wk_error_set(WK_ERR_IO, "%s: tensor %s has shape [%s]; the model's hyperparameters say [%s]", info->file,
                       info->name, got, exp);
    }
    if (info->dtype == WK_DTYPE_COUNT)
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor %s is of type %s, which wick does not have", info->file, info->name,
                       info->type_name);
    if (wk_dtype_is_quantized(info->dtype) && !matrix)
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor %s is %s; wick takes block types for matrices only", info->file,
                       info->name, wk_dtype_name(info->dtype));
    if (!wk_dtype_is_float(info->dtype) && !wk_dtype_is_quantized(info->dtype))
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor %s is %s, not a float or block type", info->file, info->name,
                       wk_dtype_name(info->dtype));
    if (wl->n == wl->cap) {
        int64_t cap = wl->cap ? wl->cap * 2 : 64;
        wslot *s = realloc(wl->s, (size_t)cap * sizeof *s);
        if (!s) return wk_error_set(WK_ERR_MEMORY, "out of memory");
        wl->s = s;
        wl->cap = cap;
    }
    wl->s[wl->n++] = (wslot){ dst, info, rank, d0, d1, matrix, false, share };
    return WK_OK;
}

/* The tensor as the forward pass uses it (see the top of the file). */
static wk_tensor *prepare(const wk_llm *m, wk_tensor *t, const wk_llm_options *o)
{
    const wk_dtype act = m->info.act_dtype;
    const wk_dtype dt = wk_tensor_dtype(t);
    if (wk_dtype_is_quantized(dt)) {
        if (!o->dequantize) return wk_retain(t);
        return wk_dequantize(t, act);
    }
    if (dt == act) return wk_retain(t);
    return wk_to_dtype(t, act);
}

/* Tensor parallel: each weight's share for this rank, read from the
 * file's mapping (only the share travels to the device). */
static wk_status load_shares(wk_llm *m, const wlist *wl, wk_tensor **raw)
{
    const llm_tp *tp = &m->tp;
    const int64_t D = m->info.head_dim;
    for (int64_t i = 0; i < wl->n; i++) {
        const wslot *w = &wl->s[i];
        int64_t r0 = 0, nr = w->d0, c0 = 0, nc = w->rank == 2 ? w->d1 : 1;
        switch (w->share) {
        case SH_ROWS_Q: r0 = tp->head0 * D, nr = tp->n_head * D; break;
        case SH_ROWS_KV: r0 = tp->kv0 * D, nr = tp->n_kv * D; break;
        case SH_COLS_Q: c0 = tp->head0 * D, nc = tp->n_head * D; break;
        case SH_ROWS_FF: r0 = tp->ff0, nr = tp->n_ff; break;
        case SH_COLS_FF: c0 = tp->ff0, nc = tp->n_ff; break;
        case SH_ROWS_VOC: r0 = tp->voc0, nr = tp->n_voc; break;
        default: break;
        }
        /* the embedding's share ends with a row of zeros, which the tokens
           of other ranks look up (forward) */
        raw[i] = llm_tp_slice(w->info, m->dev, r0, nr, c0, nc, w->embedding ? 1 : 0);
        if (!raw[i]) {
            for (int64_t j = 0; j < i; j++) {
                wk_release(raw[j]);
                raw[j] = NULL;
            }
            return wk_last_status();
        }
    }
    return WK_OK;
}

static wk_status load_weights(wk_llm *m, const wk_llm_options *o)
{
    const wk_llm_info *in = &m->info;
    const llm_hparams *hp = &m->hp;
    const int64_t E = in->n_embd, V = in->n_vocab, F = in->n_ff, D = in->head_dim;
    const int64_t QD = in->n_head * D, KD = in->n_head_kv * D;
    wlist wl = { 0 };
    wk_status st;
#define WANT(dst, g, h, l, req, rank, d0, d1, mat, share) \
    if ((st = want(m, &wl, dst, g, h, l, req, rank, d0, d1, mat, share))) goto done

    WANT(&m->tok_embd, "token_embd.weight", "model.embed_tokens.weight", -1, true, 2, V, E, true, SH_ROWS_VOC);
    wl.s[wl.n - 1].embedding = true;
    WANT(&m->out_norm, "output_norm.weight", "model.norm.weight", -1, true, 1, E, 0, false, SH_ALL);
    if (!hp->tied)
        WANT(&m->output, "output.weight", "lm_head.weight", -1, !!m->src.st && !hp->tied, 2, V, E, true, SH_ROWS_VOC);
    for (int l = 0; l < in->n_layer; l++) {
        llm_layer *y = &m->layers[l];
        WANT(&y->attn_norm, "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", l, true, 1, E, 0, false, SH_ALL);
        WANT(&y->wq, "blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", l, true, 2, QD, E, true, SH_ROWS_Q);
        WANT(&y->wk, "blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", l, true, 2, KD, E, true, SH_ROWS_KV);
        WANT(&y->wv, "blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", l, true, 2, KD, E, true, SH_ROWS_KV);
        WANT(&y->wo, "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", l, true, 2, E, QD, true, SH_COLS_Q);
        if (hp->qkv_bias) {
            WANT(&y->bq, "blk.%d.attn_q.bias", "model.layers.%d.self_attn.q_proj.bias", l, true, 1, QD, 0, false, SH_ROWS_Q);
            WANT(&y->bk, "blk.%d.attn_k.bias", "model.layers.%d.self_attn.k_proj.bias", l, true, 1, KD, 0, false, SH_ROWS_KV);
            WANT(&y->bv, "blk.%d.attn_v.bias", "model.layers.%d.self_attn.v_proj.bias", l, true, 1, KD, 0, false, SH_ROWS_KV);
        }
        if (hp->qk_norm) {
            WANT(&y->q_norm, "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", l, true, 1, D, 0, false, SH_ALL);
            WANT(&y->k_norm, "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", l, true, 1, D, 0, false, SH_ALL);
        }
        if (hp->post_norms) {
            WANT(&y->post_attn_norm, "blk.%d.post_attention_norm.weight", "model.layers.%d.post_attention_layernorm.weight",
                 l, true, 1, E, 0, false, SH_ALL);
            WANT(&y->ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.pre_feedforward_layernorm.weight", l, true, 1, E,
                 0, false, SH_ALL);
            WANT(&y->post_ffn_norm, "blk.%d.post_ffw_norm.weight", "model.layers.%d.post_feedforward_layernorm.weight", l,
                 true, 1, E, 0, false, SH_ALL);
        } else {
            WANT(&y->ffn_norm, "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", l, true, 1, E,
                 0, false, SH_ALL);
        }
        WANT(&y->w_gate, "blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", l, true, 2, F, E, true, SH_ROWS_FF);
        WANT(&y->w_up, "blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", l, true, 2, F, E, true, SH_ROWS_FF);
        WANT(&y->w_down, "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", l, true, 2, E, F, true, SH_COLS_FF);
    }
#undef WANT

    {
        uint64_t dtype_bytes[WK_DTYPE_COUNT] = { 0 };
        const wk_file_tensor **infos = malloc((size_t)wl.n * sizeof *infos);
        wk_tensor **raw = calloc((size_t)wl.n, sizeof *raw);
        if (!infos || !raw) {
            free(infos);
            free(raw);
            st = wk_error_set(WK_ERR_MEMORY, "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < wl.n; i++) infos[i] = wl.s[i].info;
        const char *label = m->src.gguf ? llm_path_base(wk_gguf_path(m->src.gguf)) : llm_path_base(m->src.dir);
        st = m->tp.comm ? load_shares(m, &wl, raw) : wk_file_tensors_load(infos, wl.n, m->dev, o->progress, label, raw);
        for (int64_t i = 0; st == WK_OK && i < wl.n; i++) {
            wk_tensor *t = prepare(m, raw[i], o);
            if (!t) {
                st = wk_error_wrap("%s: tensor %s", wl.s[i].info->file, wl.s[i].info->name);
                break;
            }
            *wl.s[i].dst = t;
            m->info.weight_bytes += wk_tensor_nbytes(t);
            if (wl.s[i].matrix) dtype_bytes[wl.s[i].info->dtype] += wl.s[i].info->nbytes;
        }
        for (int d = 0; d < WK_DTYPE_COUNT; d++)   /* the dtype holding most matrix bytes */
            if (dtype_bytes[d] > dtype_bytes[m->info.weight_dtype]) m->info.weight_dtype = (wk_dtype)d;
        for (int64_t i = 0; i < wl.n; i++) wk_release(raw[i]);
        free(infos);
        free(raw);
    }
    if (st == WK_OK && !m->output)   /* tied; tensor parallel: without the zero row */
        m->output = m->tp.comm ? wk_narrow(m->tok_embd, 0, 0, m->tp.n_voc) : wk_retain(m->tok_embd);
    if (st == WK_OK && !m->output) st = wk_error_wrap("the output head");
done:
    free(wl.s);
    return st;
}

/* cos/sin [n_pos, D/2] for base and scaling; with GGUF's rope_freqs.weight
 * (Llama 3.1 files) frequency i is divided by factor i. */
static wk_status rope_tables(wk_llm *m, double base, const wk_rope_scaling *sc, bool freq_factors, wk_tensor **pcos,
                             wk_tensor **psin)
{
    const int64_t D = m->info.head_dim, n = m->info.context, half = D / 2;
    if (!freq_factors) {
        if (wk_rope_tables(m->dev, D, base, n, sc, pcos, psin) != WK_OK) return wk_error_wrap("rope tables");
        return WK_OK;
    }
    const wk_file_tensor *fi = llm_find(m, "rope_freqs.weight", NULL, -1);
    if (!fi || fi->dtype != WK_F32 || fi->shape.rank != 1 || fi->shape.dims[0] != half)
        return wk_error_set(WK_ERR_IO, "%s: rope_freqs.weight must be f32 [%lld]", wk_gguf_path(m->src.gguf), (long long)half);
    const unsigned char *fd = fi->data;
    float *c = malloc((size_t)(n * half) * sizeof *c), *s = malloc((size_t)(n * half) * sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        return wk_error_set(WK_ERR_MEMORY, "out of memory for rope tables of %lld positions", (long long)n);
    }
    for (int64_t i = 0; i < half; i++) {
        float ff;
        memcpy(&ff, fd + 4 * i, 4);
        double f = pow(base, -2.0 * (double)i / (double)D) / (double)ff;
        for (int64_t p = 0; p < n; p++) {
            c[p * half + i] = (float)cos((double)p * f);
            s[p * half + i] = (float)sin((double)p * f);
        }
    }
    *pcos = wk_from_host(m->dev, WK_F32, WK_SHAPE(n, half), c);
    *psin = wk_from_host(m->dev, WK_F32, WK_SHAPE(n, half), s);
    free(c);
    free(s);
    if (!*pcos || !*psin) {
        wk_release(*pcos);
        wk_release(*psin);
        *pcos = *psin = NULL;
        return wk_error_wrap("rope tables");
    }
    return WK_OK;
}

/* n matrices (or biases) stacked along dim 0 into *dst when all are
 * present and of one dtype (one block type for quantized ones: rows are
 * whole blocks, so stacking rows is a byte copy); the parts are released
 * and set to NULL. Otherwise nothing changes. */
static wk_status fuse(wk_tensor **dst, wk_tensor **const *parts, int n)
{
    for (int i = 0; i < n; i++)
        if (!*parts[i] || wk_tensor_dtype(*parts[i]) != wk_tensor_dtype(*parts[0])) return WK_OK;
    wk_tensor *ts[3] = { 0 };
    for (int i = 0; i < n; i++) ts[i] = *parts[i];
    wk_tensor *c = wk_cat(ts, n, 0);
    if (!c) return wk_error_wrap("stacking weights");
    *dst = c;
    for (int i = 0; i < n; i++) {
        wk_release(*parts[i]);
        *parts[i] = NULL;
    }
    return WK_OK;
}

/* A layer's q, k, v matrices as one (and their biases, when every part
 * fuses), and gate with up: a decode step then launches 3 matmuls fewer.
 * WICK_LLM_FUSE=0 keeps them apart (for measuring the difference). */
static wk_status fuse_layer(llm_layer *y)
{
    const char *e = getenv("WICK_LLM_FUSE");
    if (e && !strcmp(e, "0")) return WK_OK;
    wk_status st;
    const bool bias = y->bq || y->bk || y->bv;
    const bool same = wk_tensor_dtype(y->wq) == wk_tensor_dtype(y->wk) && wk_tensor_dtype(y->wq) == wk_tensor_dtype(y->wv);
    if (same && (!bias || (y->bq && y->bk && y->bv))) {
        wk_tensor **w[3] = { &y->wq, &y->wk, &y->wv }, **b[3] = { &y->bq, &y->bk, &y->bv };
        if (bias && (st = fuse(&y->bqkv, b, 3))) return st;
        if (!bias || y->bqkv) {
            if ((st = fuse(&y->wqkv, w, 3))) return st;
        }
    }
    wk_tensor **g[2] = { &y->w_gate, &y->w_up };
    return fuse(&y->w_gu, g, 2);
}

static bool is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[4] = { 0 };
    size_t n = fread(magic, 1, 4, f);
    fclose(f);
    return n == 4 && !memcmp(magic, "GGUF", 4);
}

static wk_status open_source(wk_llm *m, const char *path)
{
    if (is_gguf(path)) {
        m->src.gguf = wk_gguf_open(path);
        return m->src.gguf ? WK_OK : wk_last_status();
    }
    m->src.st = wk_safetensors_open(path);
    if (!m->src.st) return wk_last_status();
    /* config.json: in the folder, or beside the file */
    const char *first = wk_safetensors_file_path(m->src.st, 0);
    const char *slash = strrchr(first, '/');
    size_t dl = slash ? (size_t)(slash - first) : 1;
    m->src.dir = malloc(dl + 1);
    if (!m->src.dir) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    memcpy(m->src.dir, slash ? first : ".", dl);
    m->src.dir[dl] = 0;
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", m->src.dir);
    m->src.config = wk_config_open(cfg);
    if (!m->src.config) return wk_error_set(WK_ERR_IO, "%s: a safetensors model needs its config.json beside it: %s", path,
                                       wk_last_error());
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", m->src.dir);
    FILE *f = fopen(cfg, "rb");
    if (f) {
        fclose(f);
        m->src.tokcfg = wk_json_parse_file(cfg, WK_JSON_ALLOW_NAN);   /* optional: its chat template */
        wk_clear_error();
    }
    return WK_OK;
}

static wk_llm *load_one(const char *path, wk_device *dev, const wk_llm_options *opts)
{
    if (!path || !dev) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_llm_load: %s is NULL", path ? "the device" : "the path");
        return NULL;
    }
    wk_llm_options o = { 0 };
    if (opts) o = *opts;
    if (o.act_dtype == WK_U8) o.act_dtype = WK_F32;
    if (o.act_dtype != WK_F32 && o.act_dtype != WK_BF16) {
        wk_error_set(WK_ERR_DTYPE, "wk_llm_load: activations must be f32 or bf16, not %s", wk_dtype_name(o.act_dtype));
        return NULL;
    }
    if (o.context < 0 || o.prefill_chunk < 0) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_llm_load: context %lld and prefill_chunk %lld must not be negative",
                (long long)o.context, (long long)o.prefill_chunk);
        return NULL;
    }
    wk_llm *m = calloc(1, sizeof *m);
    if (!m) {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    m->dev = dev;
    m->info.act_dtype = o.act_dtype;
    m->info.bos_id = -1;
    m->chunk = o.prefill_chunk ? o.prefill_chunk : 512;
    const char *tenv = getenv("WICK_LLM_TIMING");
    m->timing = !tenv || !tenv[0] || !strcmp(tenv, "0") ? 0 : !strcmp(tenv, "2") ? 2 : 1;
    const char *genv = getenv("WICK_LLM_GRAPH");
    const long long gstep = genv && *genv ? atoll(genv) : 0;
    m->graph_off = genv && !strcmp(genv, "0");
    m->graph_step = gstep >= 16 && gstep % 16 == 0 ? gstep : 0;
    const char *ggenv = getenv("WICK_LLM_GREEDY_GRAPH");
    m->greedy_graph = !(ggenv && !strcmp(ggenv, "0"));
    wk_status st = open_source(m, path);
    if (!st) st = llm_read_hparams(m, path);
    if (st) goto fail;
    wk_llm_info *in = &m->info;
    if (m->src.gguf) {   /* the vocabulary: the embedding's rows */
        const wk_file_tensor *te = llm_find(m, "token_embd.weight", NULL, -1);
        if (!te || te->shape.rank != 2) {
            st = wk_error_set(WK_ERR_IO, "%s: token_embd.weight is missing or not 2-d", path);
            goto fail;
        }
        in->n_vocab = te->shape.dims[0];
        m->hp.tied = llm_find(m, "output.weight", NULL, -1) == NULL;
    }
    if (in->n_vocab <= 0 || in->n_vocab > ((int64_t)1 << 31)) {
        st = wk_error_set(WK_ERR_IO, "%s: vocabulary of %lld tokens", path, (long long)in->n_vocab);
        goto fail;
    }
    in->context = o.context ? o.context : (in->train_context < 4096 ? in->train_context : 4096);
    if (in->context > in->train_context) {
        st = wk_error_set(WK_ERR_ARGUMENT, "%s: a context of %lld tokens is longer than the model's %lld", path,
                     (long long)in->context, (long long)in->train_context);
        goto fail;
    }
    if ((st = llm_tp_plan(&m->tp, o.comm, in))) goto fail;
    if (m->tp.comm && wk_comm_device(m->tp.comm) != dev) {
        st = wk_error_set(WK_ERR_ARGUMENT, "wk_llm_load: rank %d's communicator is on %s, the model on %s", m->tp.rank,
                     wk_device_name(wk_comm_device(m->tp.comm)), wk_device_name(dev));
        goto fail;
    }
    in->tp_rank = m->tp.rank, in->tp_size = m->tp.size;
    if ((st = load_weights(m, &o))) goto fail;
    for (int64_t l = 0; l < in->n_layer; l++)
        if ((st = fuse_layer(&m->layers[l]))) goto fail;
    if ((st = rope_tables(m, in->rope_base, &m->hp.scaling, m->hp.freq_factors, &m->cos, &m->sin))) goto fail;
    if (in->arch == WK_LLM_GEMMA3 &&
        (st = rope_tables(m, in->rope_base_local, &m->hp.scaling_local, false, &m->cos_local, &m->sin_local)))
        goto fail;
    /* a sliding-window layer's cache holds its window and one prefill
       chunk where that is less than the context (window caches, below) */
    if (in->sliding_window > 0 && in->sliding_window + m->chunk < in->context)
        m->sw_cap = in->sliding_window + m->chunk;
    for (int64_t l = 0; l < in->n_layer; l++) {
        const int64_t cap = m->layers[l].sliding && m->sw_cap ? m->sw_cap : in->context;
        wk_shape s = WK_SHAPE(1, m->tp.n_kv, cap, in->head_dim);
        m->layers[l].k_cache = wk_zeros(dev, in->act_dtype, s);
        m->layers[l].v_cache = wk_zeros(dev, in->act_dtype, s);
        if (!m->layers[l].k_cache || !m->layers[l].v_cache) {
            st = wk_error_wrap("KV cache of %lld positions (layer %lld)", (long long)cap, (long long)l);
            goto fail;
        }
    }
    if ((st = llm_text_init(m))) goto fail;
    return m;
fail:
    (void)st;
    wk_llm_free(m);
    return NULL;
}

/* The ranks of a split model tell each other whether they loaded (one
 * all_reduce of a count): a rank that failed alone (its memory, say)
 * would otherwise leave the others waiting in their first collective. */
static wk_llm *load_agree(wk_llm *m, wk_comm *comm, const char *path)
{
    char *why = m ? NULL : strdup(wk_last_error());
    const wk_status why_st = m ? WK_OK : wk_last_status();
    int32_t failed = m ? 0 : 1;
    wk_tensor *t = wk_from_host(wk_comm_device(comm), WK_I32, WK_SHAPE(1), &failed);
    const bool told = t && wk_all_reduce(comm, t) == WK_OK && wk_to_host(t, &failed, sizeof failed) == WK_OK;
    wk_release(t);
    if (!m) {   /* this rank's own error stays its message */
        wk_error_set(why_st, "%s", why ? why : "out of memory");
        free(why);
        return NULL;
    }
    if (!told || failed) {
        if (!told) wk_error_wrap("wk_llm_load: rank %d: the check that every rank loaded", wk_comm_rank(comm));
        else
            wk_error_set(WK_ERR_BACKEND, "wk_llm_load: %s: %d of the %d ranks failed to load their share (their errors say "
                    "why); rank %d had loaded its own", path ? path : "(null)", (int)failed, wk_comm_size(comm),
                    wk_comm_rank(comm));
        wk_llm_free(m);
        return NULL;
    }
    return m;
}

wk_llm *wk_llm_load(const char *path, wk_device *dev, const wk_llm_options *opts)
{
    wk_clear_error();
    wk_llm *m = load_one(path, dev, opts);
    wk_comm *comm = opts ? opts->comm : NULL;
    return comm && wk_comm_size(comm) > 1 ? load_agree(m, comm, path) : m;
}

/* WICK_LLM_TIMING=2: the parts of a one-token pass between device events:
 * one mark before the token's upload, LLM_PARTS marks per layer (the last
 * part runs from the layer's last mark to the next layer's first: the
 * residual add and the next input norm), one after the output head (final
 * norm, logits, their gather). Event i is recorded by PART(i); the interval
 * from event i to i + 1 adds to the sum llm_part_of(i). */
enum { LLM_PARTS = 5 };
#define LLM_EVENTS(m) ((m)->info.n_layer * LLM_PARTS + 3)
static const char *const llm_part_names[LLM_PARTS + 2] = {
    "token upload, embedding", "q/k/v, rope, KV cache, attention", "o projection",
    "(all_reduce,) add + norm after attention", "gate/up, silu, down", "(all_reduce,) add + next layer's norm",
    "output head",
};
_Static_assert(sizeof ((wk_llm *)0)->t_part_ms / sizeof(double) == LLM_PARTS + 2, "one sum per part");

static int llm_part_of(const wk_llm *m, int64_t i)
{
    return i == 0 ? 0 : i + 2 == LLM_EVENTS(m) ? LLM_PARTS + 1 : 1 + (int)((i - 1) % LLM_PARTS);
}

static void part_mark(wk_llm *m, int64_t i)
{
    if (m->t_ev && m->t_ev[i]) (void)wk_event_record(m->t_ev[i]);
}

/* after a pass's logits are read: the parts' device times added up */
static void parts_add(wk_llm *m)
{
    for (int64_t i = 0; m->t_ev && i + 1 < LLM_EVENTS(m); i++) {
        double ms = 0;
        if (!m->t_ev[i] || !m->t_ev[i + 1] || wk_event_elapsed_ms(m->t_ev[i], m->t_ev[i + 1], &ms) != WK_OK) continue;
        m->t_part_ms[llm_part_of(m, i)] += ms;
    }
}

void wk_llm_free(wk_llm *m)
{
    if (!m) return;
    if (m->timing && m->t_steps)
        fprintf(stderr, "wick: %lld one-token forward passes: %.1f us to issue, %.1f us waiting for the logits (mean)\n",
                (long long)m->t_steps, 1e3 * m->t_issue_ms / (double)m->t_steps, 1e3 * m->t_wait_ms / (double)m->t_steps);
    if (m->timing == 2 && m->t_steps && m->t_ev) {
        /* one write: the ranks of a split model print at once */
        char line[1024];
        double all = 0;
        int k = snprintf(line, sizeof line, "wick: device time of a one-token pass by part (us, mean; %lld layers):",
                         (long long)m->info.n_layer);
        for (int p = 0; p < LLM_PARTS + 2 && k > 0 && k < (int)sizeof line; p++) {
            k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %.1f", p ? ";" : "", llm_part_names[p],
                          1e3 * m->t_part_ms[p] / (double)m->t_steps);
            all += m->t_part_ms[p];
        }
        if (k > 0 && k < (int)sizeof line)
            snprintf(line + k, sizeof line - (size_t)k, "; all %.1f of the host's %.1f\n", 1e3 * all / (double)m->t_steps,
                     1e3 * (m->t_issue_ms + m->t_wait_ms) / (double)m->t_steps);
        fputs(line, stderr);
    }
    llm_graphs_free(m);
    if (m->timing && m->t_gn)
        fprintf(stderr, "wick: %lld replayed steps: the device's time %.1f us writing the step's inputs, %.1f us "
                        "running the step (mean)\n",
                (long long)m->t_gn, 1e3 * m->t_gw_ms / (double)m->t_gn, 1e3 * m->t_gg_ms / (double)m->t_gn);
    for (int i = 0; i < 3; i++) wk_event_free(m->t_gev[i]);
    if (m->t_ev) {
        for (int64_t i = 0; i < LLM_EVENTS(m); i++) wk_event_free(m->t_ev[i]);
        free(m->t_ev);
    }
    if (m->layers) {
        for (int64_t l = 0; l < m->info.n_layer; l++) {
            llm_layer *y = &m->layers[l];
            wk_tensor *ts[] = { y->attn_norm, y->wq, y->wk, y->wv, y->wo, y->bq, y->bk, y->bv, y->q_norm, y->k_norm,
                                y->post_attn_norm, y->ffn_norm, y->w_gate, y->w_up, y->w_down, y->post_ffn_norm,
                                y->k_cache, y->v_cache, y->wqkv, y->bqkv, y->w_gu };
            for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) wk_release(ts[i]);
        }
        free(m->layers);
    }
    wk_release(m->tok_embd);
    wk_release(m->out_norm);
    wk_release(m->output);
    wk_release(m->cos);
    wk_release(m->sin);
    wk_release(m->cos_local);
    wk_release(m->sin_local);
    llm_text_free(m);
    wk_gguf_close(m->src.gguf);
    wk_safetensors_close(m->src.st);
    wk_json_free(m->src.config);
    wk_json_free(m->src.tokcfg);
    free(m->src.dir);
    free(m);
}

const wk_llm_info *wk_llm_get_info(const wk_llm *m) { return m ? &m->info : NULL; }
wk_device *wk_llm_device(const wk_llm *m) { return m ? m->dev : NULL; }
int64_t wk_llm_pos(const wk_llm *m) { return m ? m->pos : 0; }

/* ---- window caches ------------------------------------------------------------
 * A sliding-window layer (Gemma 3's local layers, Mistral's) reads only the
 * last W positions, so its K and V caches hold sw_cap = W + chunk positions
 * (when that is less than the context) instead of the context: positions
 * sw_base .. sw_base + sw_cap - 1, in order, position p at slot p - sw_base.
 * Before a chunk of T positions that would run past the end, the W - 1
 * positions before it (all its window needs) move to the start and sw_base
 * follows; keys stay in order, so attention takes a contiguous range of
 * slots with its usual window mask. The global layers' caches hold the
 * context as before. A rewind to pos keeps the cache only where the
 * positions its window needs (from pos - W + 1) are still held; otherwise
 * it empties the cache (pos 0): wk_llm_pos says which. */

static bool windowed(const wk_llm *m, const llm_layer *y) { return y->sliding && m->sw_cap > 0; }

/* The position at which the cache stands after going back to pos. */
static int64_t window_pos(const wk_llm *m, int64_t pos)
{
    const int64_t need = pos - m->info.sliding_window + 1;
    return m->sw_cap && pos > 0 && (need > 0 ? need : 0) < m->sw_base ? 0 : pos;
}

static void greedy_drop(wk_llm *m);

static void set_pos(wk_llm *m, int64_t pos)
{
    greedy_drop(m);   /* a greedy step queued ahead is for the old position */
    m->pos = window_pos(m, pos);
    if (m->pos == 0) m->sw_base = 0;
}

/* Room for T positions at m->pos in the window caches. On a failure the
 * cache is emptied (some layers moved, others not). */
static wk_status window_room(wk_llm *m, int64_t T)
{
    if (!m->sw_cap || m->pos + T - m->sw_base <= m->sw_cap) return WK_OK;
    const int64_t pos = m->pos, W = m->info.sliding_window;
    const int64_t keep = pos - m->sw_base < W - 1 ? pos - m->sw_base : W - 1;
    wk_status st = WK_OK;
    for (int64_t l = 0; l < m->info.n_layer && st == WK_OK && keep > 0; l++) {
        if (!windowed(m, &m->layers[l])) continue;
        wk_tensor *caches[2] = { m->layers[l].k_cache, m->layers[l].v_cache };
        for (int i = 0; i < 2 && st == WK_OK; i++) {   /* copy_into reads an overlapping source whole first */
            wk_scope_begin();
            st = wk_copy_into(wk_narrow(caches[i], 2, 0, keep), wk_narrow(caches[i], 2, pos - keep - m->sw_base, keep));
            wk_scope_end();
        }
    }
    if (st != WK_OK) {
        m->pos = m->sw_base = 0;
        return wk_error_wrap("moving the window caches' last %lld positions (the cache is emptied)", (long long)keep);
    }
    m->sw_base = pos - keep;
    return WK_OK;
}

wk_status wk_llm_rewind(wk_llm *m, int64_t pos)
{
    if (!m) return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_rewind: the model is NULL");
    if (pos < 0 || pos > m->pos)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_rewind: position %lld is outside the %lld the cache holds", (long long)pos,
                       (long long)m->pos);
    set_pos(m, pos);   /* later positions are overwritten before they are read */
    return WK_OK;
}

/* ---- the forward pass ------------------------------------------------------- */

/* y [T, n] = x [T, k] . W^T, W [n, k] dense or block-quantized */
static wk_tensor *linear(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b)
{
    wk_tensor *y = wk_dtype_is_quantized(wk_tensor_dtype(w)) ? wk_qmatmul(x, w) : wk_matmul(x, wk_transpose(w, 0, 1));
    return b && y ? wk_add(y, b) : y;
}

static wk_tensor *norm(const wk_llm *m, const wk_tensor *x, const wk_tensor *w)
{
    return m->hp.gemma_norm ? wk_rms_norm_gemma(x, w, m->info.norm_eps) : wk_rms_norm(x, w, m->info.norm_eps);
}

/* What a recorded decode step (graphs, below) reads from device memory
 * instead of taking from the host: the position, the rope tables' rows
 * there, and the count of keys in the cache (the attention spans a fixed
 * stretch of it). NULL: an eager pass (the host's pos). */
typedef struct llm_dyn {
    const wk_tensor *pos;                    /* u32 [1]                         */
    const wk_tensor *cos, *sin, *cos_l, *sin_l;   /* [1, D/2] rows at pos (local: gemma3) */
    const wk_tensor *kv_len;                 /* u32 [1]: pos + 1                */
    int64_t cap;                             /* keys the attention spans        */
} llm_dyn;

/* [1, T, H, D] -> rotated [1, H, T, D]; dy: T is 1, at dy's position */
static wk_tensor *rope(const wk_llm *m, const wk_tensor *x, bool local, int64_t pos, const llm_dyn *dy)
{
    const wk_tensor *c = local ? m->cos_local : m->cos, *s = local ? m->sin_local : m->sin;
    if (dy) {
        c = local ? dy->cos_l : dy->cos, s = local ? dy->sin_l : dy->sin;
        pos = 0;
    }
    if (m->info.rope_interleaved) return wk_rope_i(wk_transpose(x, 1, 2), c, s, pos);
    return wk_transpose(wk_rope_thd(x, c, s, pos), 1, 2);
}

/* Logits of normed rows: the output head; with tensor parallel the ranks'
 * vocabulary slices joined (and the padding of the last one cut). */
static wk_tensor *logits_of(const wk_llm *m, const wk_tensor *hn)
{
    wk_tensor *lg = linear(hn, m->output, NULL);
    if (!lg || !m->tp.comm) return lg;
    wk_tensor *all = wk_all_gather(m->tp.comm, lg, 1);
    return all ? wk_narrow(all, 1, 0, m->info.n_vocab) : NULL;
}

/* f, a block's output, as the residual stream takes it: with tensor
 * parallel first summed over the ranks (the partial sums of a
 * row-parallel projection), then normed by post where the architecture
 * has one (Gemma 3). */
static wk_tensor *block_out(const wk_llm *m, wk_tensor *f, const wk_tensor *post)
{
    if (f && m->tp.comm && wk_all_reduce(m->tp.comm, f) != WK_OK) return NULL;
    return f && post ? norm(m, f, post) : f;
}

/* x + block_out(f) and the norm w of that (*xo receives the sum).
 * Without post, the sum over the ranks, the add and the norm are one
 * kernel per rank where the communicator fuses them (wick_comm.h). */
static wk_tensor *residual_norm(const wk_llm *m, wk_tensor *f, const wk_tensor *post, wk_tensor *x,
                                const wk_tensor *w, wk_tensor **xo)
{
    const double eps = m->info.norm_eps;
    const bool gemma = m->hp.gemma_norm;
    if (f && m->tp.comm && !post) return wk_all_reduce_add_rms_norm(m->tp.comm, f, x, w, eps, gemma, xo);
    f = block_out(m, f, post);
    return f ? wk_add_rms_norm(f, x, w, eps, gemma, xo) : NULL;
}

/* The round-to-bf16 of a scale, as HF multiplies by a tensor of the dtype. */
static double in_dtype(double v, wk_dtype dt)
{
    if (dt != WK_BF16) return (double)(float)v;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* What a pass gives back: rows of logits (f32) of tokens first_out ..
 * T-1, the last token's argmax (u32 [1], taken on the device, so that 4
 * bytes come back instead of a row), or nothing. */
enum { LLM_OUT_NONE, LLM_OUT_LOGITS, LLM_OUT_BEST };

/* The rank's rows of the token ids (the ids outside its vocabulary share
 * look up the share's last row, zeros); ids [T]. */
static void local_ids(const wk_llm *m, const int32_t *tokens, int64_t T, uint32_t *ids)
{
    for (int64_t i = 0; i < T; i++) {
        if (!m->tp.comm) {
            ids[i] = (uint32_t)tokens[i];
            continue;
        }
        const int64_t li = tokens[i] - m->tp.voc0;
        ids[i] = (uint32_t)(li >= 0 && li < m->tp.n_voc ? li : m->tp.n_voc);
    }
}

/* The pass of tokens tid (u32 [T], the rank's ids; NULL: the one token
 * of the rank's row `row`, known to the host) at positions pos ..
 * pos+T-1 (dy: at dy's position, T 1), up to the output `want` asks for:
 * a tensor of the current scope (LLM_OUT_NONE: x, the residual), NULL +
 * error on failure. Events between the parts when `parts`. */
static wk_tensor *pass(wk_llm *m, const wk_tensor *tid, int64_t row, int64_t T, int64_t pos, int64_t first_out,
                       int want, const llm_dyn *dy, bool parts)
{
    const wk_llm_info *in = &m->info;
    const llm_hparams *hp = &m->hp;
    /* this rank's heads and FFN width (the whole model's without tensor parallel) */
    const int64_t H = m->tp.n_head, Hkv = m->tp.n_kv, D = in->head_dim;
    const int64_t QD = H * D, KD = Hkv * D, F = m->tp.n_ff;
    wk_comm *comm = m->tp.comm;
    const wk_dtype act = in->act_dtype;
#define PART(i) do { if (parts) part_mark(m, (i)); } while (0)
    const bool qe = wk_dtype_is_quantized(wk_tensor_dtype(m->tok_embd));
    wk_tensor *x;
    if (tid) x = qe ? wk_qgather(m->tok_embd, tid, act) : wk_index_select(m->tok_embd, tid, 0);
    else {   /* a copy of the row: the same values, and no device check of an id for the host to wait for */
        wk_tensor *r = wk_narrow(m->tok_embd, 0, row, 1);
        x = !r ? NULL : qe ? wk_dequantize(r, act) : wk_copy(r);
    }
    /* every token's row comes from the rank that holds it (the others add zeros) */
    if (x && comm && wk_all_reduce(comm, x) != WK_OK) x = NULL;
    if (x && hp->embd_scale > 0) x = wk_affine(x, in_dtype(hp->embd_scale, act), 0.0);
    wk_tensor *f = NULL;   /* the last block's output, added to x by the next norm */
    wk_tensor *h = x ? norm(m, x, m->layers[0].attn_norm) : NULL;
    for (int64_t l = 0; l < in->n_layer && h; l++) {
        llm_layer *y = &m->layers[l];
        wk_scope_begin();
        PART(1 + l * LLM_PARTS);
        /* attention */
        const bool local = in->arch == WK_LLM_GEMMA3 && y->sliding;
        wk_tensor *q = NULL, *k = NULL, *v = NULL;
        bool roped = false, cached = false;   /* cached: k and v are in the cache already */
        if (y->wqkv) {   /* one matmul; q, k, v are column ranges of its rows */
            const bool fuse = !hp->qk_norm && (dy || !windowed(m, y));
            wk_tensor *qkv = fuse && !y->bqkv ? NULL : linear(h, y->wqkv, y->bqkv);
            if (fuse) {
                /* rope of q and k and both cache writes in one launch, at
                   the host's position or the graph's (without biases the
                   product too: one launch for a token on a GPU) */
                const wk_tensor *c = local ? m->cos_local : m->cos, *s = local ? m->sin_local : m->sin;
                const int64_t p0 = dy ? 0 : pos;
                const wk_tensor *pt = dy ? dy->pos : NULL;
                wk_tensor *r = y->bqkv ? wk_rope_kv(wk_reshape(qkv, WK_SHAPE(1, T, H + 2 * Hkv, D)), H, c, s, p0, pt,
                                                    m->info.rope_interleaved, y->k_cache, y->v_cache)
                                       : wk_linear_rope_kv(h, y->wqkv, H, c, s, p0, pt, m->info.rope_interleaved,
                                                           y->k_cache, y->v_cache);
                q = wk_transpose(r, 1, 2);
                roped = cached = q != NULL;
            } else if (!hp->qk_norm) {   /* q and k rotated in one launch */
                wk_tensor *r = rope(m, wk_reshape(wk_narrow(qkv, 1, 0, QD + KD), WK_SHAPE(1, T, H + Hkv, D)), local,
                                    pos, dy);
                q = wk_narrow(r, 1, 0, H);
                k = wk_narrow(r, 1, H, Hkv);
                roped = true;
            } else {
                q = wk_reshape(wk_narrow(qkv, 1, 0, QD), WK_SHAPE(1, T, H, D));
                k = wk_reshape(wk_narrow(qkv, 1, QD, KD), WK_SHAPE(1, T, Hkv, D));
            }
            if (!cached) v = wk_reshape(wk_narrow(qkv, 1, QD + KD, KD), WK_SHAPE(1, T, Hkv, D));
        } else {
            q = wk_reshape(linear(h, y->wq, y->bq), WK_SHAPE(1, T, H, D));
            k = wk_reshape(linear(h, y->wk, y->bk), WK_SHAPE(1, T, Hkv, D));
            v = wk_reshape(linear(h, y->wv, y->bv), WK_SHAPE(1, T, Hkv, D));
        }
        if (hp->qk_norm) {
            q = norm(m, q, y->q_norm);
            k = norm(m, k, y->k_norm);
        }
        if (!roped) {
            q = rope(m, q, local, pos, dy);
            k = rope(m, k, local, pos, dy);
        }
        wk_tensor *a = NULL;
        wk_attention_opts ao = { .scale = hp->attn_scale, .causal = true,
                                 .window = y->sliding ? in->sliding_window : 0, .softcap = hp->attn_softcap };
        const bool have = q && (cached || (k && v));
        if (dy && have) {
            /* the cache's row at the device's position, then the keys of
               the stretch the graph spans up to the device's count */
            wk_tensor *at = cached ? NULL
                                   : wk_broadcast_as(wk_reshape(dy->pos, WK_SHAPE(1, 1, 1, 1)), WK_SHAPE(1, Hkv, 1, D));
            if (cached || (at && wk_scatter_set(y->k_cache, at, k, 2) == WK_OK &&
                           wk_scatter_set(y->v_cache, at, wk_transpose(v, 1, 2), 2) == WK_OK)) {
                ao.kv_len = dy->kv_len;
                a = wk_attention(q, wk_narrow(y->k_cache, 2, 0, dy->cap), wk_narrow(y->v_cache, 2, 0, dy->cap), &ao);
            }
        } else if (have) {
            /* the cache's slot of position pos, and the first position
               read: a window cache holds from sw_base and the window needs
               from pos - W + 1 (window caches, above) */
            const bool win = windowed(m, y);
            const int64_t base = win ? m->sw_base : 0;
            const int64_t lo = win && pos - in->sliding_window + 1 > base ? pos - in->sliding_window + 1 : base;
            if (cached || (wk_copy_into(wk_narrow(y->k_cache, 2, pos - base, T), k) == WK_OK &&
                           wk_copy_into(wk_narrow(y->v_cache, 2, pos - base, T), wk_transpose(v, 1, 2)) == WK_OK))
                a = wk_attention(q, wk_narrow(y->k_cache, 2, lo - base, pos + T - lo),
                                 wk_narrow(y->v_cache, 2, lo - base, pos + T - lo), &ao);
        }
        PART(2 + l * LLM_PARTS);
        a = a ? linear(wk_reshape(wk_transpose(a, 1, 2), WK_SHAPE(T, H * D)), y->wo, NULL) : NULL;
        PART(3 + l * LLM_PARTS);
        /* x += a, then the MLP's norm */
        wk_tensor *x2 = NULL;
        h = residual_norm(m, a, y->post_attn_norm, x, y->ffn_norm, &x2);
        x = x2;
        PART(4 + l * LLM_PARTS);
        wk_tensor *act_ = NULL;
        if (h && y->w_gu && !hp->gelu_mlp) {   /* gate and up stacked in one matrix: one call */
            act_ = wk_linear_silu_mul(h, y->w_gu);
        } else {
            wk_tensor *g = NULL, *u = NULL;
            if (h && y->w_gu) {
                wk_tensor *gu = linear(h, y->w_gu, NULL);
                g = wk_narrow(gu, 1, 0, F);
                u = wk_narrow(gu, 1, F, F);
            } else if (h) {
                g = linear(h, y->w_gate, NULL);
                u = linear(h, y->w_up, NULL);
            }
            act_ = hp->gelu_mlp ? wk_mul(wk_gelu(g), u) : wk_silu_mul(g, u);
        }
        f = act_ ? linear(act_, y->w_down, NULL) : NULL;
        PART(5 + l * LLM_PARTS);
        /* x += f and the next block's input norm; after the last block f
           stays apart for the final norm of the rows wanted */
        h = NULL;
        if (f && l + 1 < in->n_layer) {
            wk_tensor *x3 = NULL;
            h = residual_norm(m, f, y->post_ffn_norm, x, m->layers[l + 1].attn_norm, &x3);
            x = x3;
            f = NULL;
        } else if (f) {
            f = block_out(m, f, y->post_ffn_norm);
            h = f;   /* non-NULL: no error */
        }
        wk_keep(x);
        wk_keep(f);
        wk_keep(h);
        wk_scope_end();
    }
    PART(1 + in->n_layer * LLM_PARTS);
    if (!h || want == LLM_OUT_NONE) return h ? x : NULL;
    /* x + f and the final norm of the rows wanted in one op; the logits */
    const int64_t r0 = want == LLM_OUT_BEST ? T - 1 : first_out;
    wk_tensor *xl = NULL;
    wk_tensor *hn = f ? wk_add_rms_norm(wk_narrow(f, 0, r0, T - r0), wk_narrow(x, 0, r0, T - r0), m->out_norm,
                                        in->norm_eps, hp->gemma_norm, &xl)
                      : NULL;
    wk_tensor *lg = hn ? logits_of(m, hn) : NULL;
    if (lg && hp->final_softcap > 0)   /* monotonic, but the argmax keeps the rounding of the logits eval returns */
        lg = wk_affine(wk_tanh(wk_affine(lg, 1.0 / hp->final_softcap, 0.0)), hp->final_softcap, 0.0);
    wk_tensor *o = want == LLM_OUT_BEST ? (lg ? wk_argmax(lg, 1, false) : NULL)
                   : lg && act != WK_F32 ? wk_to_dtype(lg, WK_F32) : lg;
    PART(2 + in->n_layer * LLM_PARTS);
#undef PART
    return o;
}

/* WICK_LLM_TIMING: one one-token step more, issued from t0 to t1 (ms),
 * its result back now. */
static void timing_add(wk_llm *m, double t0, double t1)
{
    m->t_steps++;
    m->t_issue_ms += t1 - t0;
    m->t_wait_ms += llm_now_ms() - t1;
}

/* ---- recorded decode steps ------------------------------------------------------
 * On a device that records graphs (wk_graph_begin: the GPUs), a one-token
 * pass is recorded once and replayed: the ~10 launches of each layer cost
 * the host one graph launch, and the device runs them without the gaps
 * between launches. What changes from step to step comes from device
 * memory (llm_dyn): the token's id, the position and the count of keys
 * (u32 [3], written by the host before a replay), the rope and the KV
 * cache's row (wk_rope_kv reading the position; for layers with q/k norms
 * the rope tables' rows selected at the position and a scatter along the
 * cache's position dim), and the keys attention reads: a fixed stretch
 * of the cache, [0, cap), of which the first position + 1 exist
 * (wk_attention_opts.kv_len: the same causal and window rules as the
 * eager step, no mask). cap is the whole cache, so a graph is recorded
 * once: the attention's grid is sized for cap keys, and its kernels split
 * the keys they find as a call for that many would (the blocks past
 * them take no part), so the replay runs what the eager step runs.
 * WICK_LLM_GRAPH=N (a multiple of 16) makes cap the position + 1 rounded
 * up to N instead, recorded again past it (tests, comparisons).
 * Two graphs: the step to its logits (graph_step), and the greedy step
 * (graph_greedy) to the argmax of its logits, which then writes the next
 * step's inputs on the device itself (the token's id, the position and
 * the count + 1): so greedy generation queues step
 * i + 1 before step i's token is back on the host, and the device never
 * waits for the host between steps. Not used: WICK_LLM_GRAPH=0,
 * WICK_LLM_TIMING=2 (its events between the parts), window caches (they
 * move). A split model records on every rank: the ranks make the same
 * calls in the same order, collectives included (the peer-memory
 * all_reduce keeps its epochs in device memory for that). */
struct llm_graphs {
    wk_tensor *in;               /* u32 [3]: the token's id (the rank's row), the
                                    position, the count of keys (position + 1)   */
    wk_graph *g;                 /* the recorded step (logits of the token)       */
    wk_tensor *out;              /* what its replay writes: f32 logits [1, vocab]  */
    int64_t cap;                 /* keys its attention spans (0: none recorded)    */
    /* the greedy step */
    wk_graph *gb;
    wk_tensor *best;             /* u32 [1]: its argmax (a vocabulary id)          */
    int64_t cap_b;
    wk_tensor *c_ids, *c_ones, *c_voc0;   /* constants its updates read       */
    uint32_t *host_best;         /* pinned [2]: the argmax of the last two steps  */
    wk_event *ev[2];             /* recorded after each one's copy               */
    int slot;                    /* the slot of the next step queued              */
    bool queued;                 /* a greedy step may still be running            */
    bool ahead;                  /* the step at ahead_pos, fed last_best, is queued
                                    in slot ahead_slot (graph_greedy)            */
    int64_t ahead_pos;
    int ahead_slot;
    int32_t last_best;
};

static bool graph_usable(const wk_llm *m)
{
    if (m->graph_off || m->timing == 2 || m->sw_cap > 0) return false;
    return wk_supports(m->dev, "graph", WK_F32);
}

/* A greedy step queued ahead is not to be used (what it read changes). */
static void greedy_drop(wk_llm *m)
{
    if (m->graphs) m->graphs->ahead = false;
}

/* Wait for the greedy steps still queued (before a graph they replay is
 * freed or recorded again); the step queued ahead is dropped. */
static void greedy_settle(wk_llm *m)
{
    llm_graphs *G = m->graphs;
    if (!G) return;
    if (G->queued) (void)wk_device_synchronize(m->dev);
    G->queued = G->ahead = false;
}

void llm_graphs_free(wk_llm *m)
{
    llm_graphs *G = m->graphs;
    if (!G) return;
    greedy_settle(m);
    wk_graph_free(G->g);
    wk_graph_free(G->gb);
    wk_release(G->out);
    wk_release(G->best);
    wk_release(G->in);
    wk_release(G->c_ids);
    wk_release(G->c_ones);
    wk_release(G->c_voc0);
    for (int i = 0; i < 2; i++) wk_event_free(G->ev[i]);
    wk_host_free(G->host_best);
    free(G);
    m->graphs = NULL;
}

/* The persistent inputs and constants, made once (outside any recording:
 * they are written from the host). */
static wk_status graphs_init(wk_llm *m)
{
    if (m->graphs) return WK_OK;
    llm_graphs *G = calloc(1, sizeof *G);
    if (!G) return wk_error_set(WK_ERR_MEMORY, "out of host memory for the decode graphs' inputs");
    m->graphs = G;
    wk_scope_begin();
    const uint32_t ids[2] = { 1, 2 }, ones[2] = { 1, 1 }, voc0 = (uint32_t)m->tp.voc0;
    G->in = wk_retain(wk_zeros(m->dev, WK_U32, WK_SHAPE(3)));
    G->c_ids = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(2), ids));
    G->c_ones = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(2), ones));
    G->c_voc0 = wk_retain(wk_from_host(m->dev, WK_U32, WK_SHAPE(1), &voc0));
    wk_scope_end();
    G->host_best = wk_host_alloc(m->dev, 2 * sizeof(uint32_t));
    for (int i = 0; i < 2; i++) G->ev[i] = wk_event_new(m->dev);
    if (!G->in || !G->c_ids || !G->c_ones || !G->c_voc0 || !G->host_best || !G->ev[0] || !G->ev[1]) {
        llm_graphs_free(m);
        return wk_error_wrap("the decode graphs' inputs");
    }
    return WK_OK;
}

/* The greedy step's last ops, recorded after its argmax `best` (u32 [1],
 * a vocabulary id): the next step's inputs. The token's row (on a split
 * model its id less the rank's first row: u32 arithmetic wraps, so an id
 * below the rank's rows, like one past them, is out of the rank's range,
 * which a recorded lookup reads as zeros), then the position and the
 * count of keys + 1. */
static wk_status record_next_inputs(wk_llm *m, const wk_tensor *best)
{
    llm_graphs *G = m->graphs;
    const wk_tensor *row = m->tp.comm ? wk_sub(best, G->c_voc0) : best;
    wk_status st = row ? wk_copy_into(wk_narrow(G->in, 0, 0, 1), row) : WK_ERR_BACKEND;
    if (st == WK_OK) st = wk_scatter_add(G->in, G->c_ids, G->c_ones, 0);   /* in[1], in[2] += 1 */
    return st;
}

/* Record the one-token pass over keys [0, cap): to its logits (G->g), or
 * with `greedy` to its argmax and the next step's inputs (G->gb). */
static wk_status graph_record(wk_llm *m, int64_t cap, bool greedy)
{
    llm_graphs *G = m->graphs;
    wk_graph **gp = greedy ? &G->gb : &G->g;
    wk_tensor **op = greedy ? &G->best : &G->out;
    int64_t *cp = greedy ? &G->cap_b : &G->cap;
    greedy_settle(m);   /* nothing of the graph about to be freed still runs */
    wk_graph_free(*gp);
    wk_release(*op);
    *gp = NULL, *op = NULL, *cp = 0;
    if (wk_graph_begin(m->dev) != WK_OK) return wk_error_wrap("recording a decode step");
    wk_scope_begin();
    llm_dyn dy = { .pos = wk_narrow(G->in, 0, 1, 1), .kv_len = wk_narrow(G->in, 0, 2, 1), .cap = cap };
    /* the tables' rows at the position, for ropes apart from rope_kv (q/k norms, separate projections) */
    bool rows = m->hp.qk_norm;
    for (int64_t l = 0; l < m->info.n_layer; l++) rows = rows || !m->layers[l].wqkv;
    dy.cos = rows ? wk_index_select(m->cos, dy.pos, 0) : m->cos;
    dy.sin = rows ? wk_index_select(m->sin, dy.pos, 0) : m->sin;
    dy.cos_l = rows && m->cos_local ? wk_index_select(m->cos_local, dy.pos, 0) : NULL;
    dy.sin_l = rows && m->sin_local ? wk_index_select(m->sin_local, dy.pos, 0) : NULL;
    wk_tensor *out = dy.cos && dy.sin ? pass(m, wk_narrow(G->in, 0, 0, 1), 0, 1, 0, 0,
                                             greedy ? LLM_OUT_BEST : LLM_OUT_LOGITS, &dy, false)
                                      : NULL;
    if (out && greedy && record_next_inputs(m, out) != WK_OK) out = NULL;
    if (out) wk_retain(out);
    wk_scope_end();
    wk_graph *g = wk_graph_end(m->dev);   /* ends the recording whatever happened */
    if (!g || !out) {
        wk_graph_free(g);
        wk_release(out);
        return wk_error_wrap("recording a decode step");
    }
    *gp = g, *op = out, *cp = cap;
    return WK_OK;
}

/* Ready the graph for the step at m->pos (recorded at its first use, and
 * again when its span of keys changes: WICK_LLM_GRAPH=N only): *used
 * false when the model does not record, or cannot here (then never
 * again: the eager pass from now on). */
static wk_status graph_ready(wk_llm *m, bool greedy, bool *used)
{
    *used = false;
    if (!graph_usable(m)) return WK_OK;
    const int64_t C = m->info.context, step = m->graph_step;
    int64_t cap = step ? (m->pos + 1 + step - 1) / step * step : C;
    if (cap > C) cap = C;
    wk_status st = graphs_init(m);
    if (st == WK_OK && (greedy ? m->graphs->cap_b : m->graphs->cap) != cap) st = graph_record(m, cap, greedy);
    if (st != WK_OK) {   /* not recordable here (a library that cannot be captured) */
        m->graph_off = true;
        llm_graphs_free(m);
        wk_clear_error();
        return WK_OK;
    }
    *used = true;
    return WK_OK;
}

/* The host's write of a step's inputs: the token's row, the position, the
 * count of keys. */
static wk_status write_inputs(wk_llm *m, int32_t token)
{
    uint32_t in[3];
    local_ids(m, &token, 1, &in[0]);
    in[1] = (uint32_t)m->pos;
    in[2] = (uint32_t)m->pos + 1;
    return wk_write(m->graphs->in, in, sizeof in);
}

/* The replay of the one-token pass of token `token` at m->pos, its logits
 * into out. *used false (and nothing done) when the model does not
 * record. */
static wk_status graph_step(wk_llm *m, int32_t token, float *out, bool *used)
{
    wk_status st = graph_ready(m, false, used);
    if (!*used || st != WK_OK) return st;
    llm_graphs *G = m->graphs;
    greedy_drop(m);   /* the inputs change under a greedy step queued ahead */
    const double t0 = m->timing ? llm_now_ms() : 0;
    /* WICK_LLM_TIMING: the device's time of the writes and of the replay */
    for (int i = 0; m->timing && i < 3; i++)
        if (!m->t_gev[i]) m->t_gev[i] = wk_event_new(m->dev);
    const bool ev = m->timing && m->t_gev[0] && m->t_gev[1] && m->t_gev[2];
    if (ev) (void)wk_event_record(m->t_gev[0]);
    st = write_inputs(m, token);
    if (ev) (void)wk_event_record(m->t_gev[1]);
    if (st == WK_OK) st = wk_graph_launch(G->g);
    if (ev) (void)wk_event_record(m->t_gev[2]);
    const double t1 = m->timing ? llm_now_ms() : 0;
    if (st == WK_OK) st = wk_to_host(G->out, out, (size_t)m->info.n_vocab * sizeof(float));
    if (m->timing && st == WK_OK) {
        timing_add(m, t0, t1);
        double w = 0, g = 0;
        if (ev && wk_event_elapsed_ms(m->t_gev[0], m->t_gev[1], &w) == WK_OK &&
            wk_event_elapsed_ms(m->t_gev[1], m->t_gev[2], &g) == WK_OK)
            m->t_gn++, m->t_gw_ms += w, m->t_gg_ms += g;
    }
    return st == WK_OK ? WK_OK : wk_error_wrap("replaying the decode step at position %lld", (long long)m->pos);
}

/* Queue one greedy step (its inputs already in place) and the copy of its
 * argmax into the next slot; the slot it used. */
static wk_status greedy_queue(wk_llm *m, int *slot)
{
    llm_graphs *G = m->graphs;
    const int s = G->slot;
    wk_status st = wk_graph_launch(G->gb);
    if (st == WK_OK) st = wk_to_host_async(G->best, &G->host_best[s], sizeof G->host_best[s]);
    if (st == WK_OK) st = wk_event_record(G->ev[s]);
    G->queued = true;
    G->slot = s ^ 1;
    *slot = s;
    return st;
}

/* The greedy step of token `token` at m->pos through the greedy graph: the
 * argmax of its logits into *best. A generation loop calls this with the
 * token the last call returned, at the next position: that step was
 * queued by the last call already (the device fed it that token itself),
 * so this call only queues the step after it (while the device still runs
 * this one), then waits for this one's 4 bytes. Any other call (another
 * token or position; an eval or rewind between) queues its step from the
 * host. No step is queued ahead past the graph's span of keys or the
 * context; one queued ahead but not used later was harmless: it wrote
 * the cache row at a position past the end of the cache's contents, which
 * is written again before it is read, and the inputs the next replay
 * rewrites. *used false when the model does not record.
 * WICK_LLM_GREEDY_GRAPH=0 takes the eager steps instead (comparisons).
 * On two H200s an 8B model's greedy generation runs 3% faster this way
 * split in two, and on one GPU within 1% of the eager steps (slower at
 * 512 keys, faster at 4096; bench/RESULTS-tp.md). */
static wk_status graph_greedy(wk_llm *m, int32_t token, int32_t *best, bool *used)
{
    llm_graphs *G = m->graphs;
    const int64_t pos = m->pos;
    const bool fed = G && G->ahead && G->ahead_pos == pos && G->last_best == token;
    wk_status st = WK_OK;
    int cur = 0;
    const double t0 = m->timing ? llm_now_ms() : 0;
    if (fed) {
        *used = true;
        cur = G->ahead_slot;
    } else {
        st = graph_ready(m, true, used);
        if (!*used || st != WK_OK) return st;
        G = m->graphs;
        st = write_inputs(m, token);
        if (st == WK_OK) st = greedy_queue(m, &cur);
    }
    G->ahead = false;
    if (st == WK_OK && pos + 2 <= G->cap_b && pos + 1 < m->info.context) {
        st = greedy_queue(m, &G->ahead_slot);
        G->ahead = st == WK_OK;
        G->ahead_pos = pos + 1;
    }
    const double t1 = m->timing ? llm_now_ms() : 0;
    if (st == WK_OK) st = wk_event_synchronize(G->ev[cur]);
    if (st == WK_OK) {
        *best = (int32_t)G->host_best[cur];
        G->last_best = *best;
        if (!G->ahead) G->queued = false;   /* nothing runs past the step waited for */
        if (m->timing) timing_add(m, t0, t1);
        return WK_OK;
    }
    G->ahead = false;
    return wk_error_wrap("the greedy decode step at position %lld", (long long)pos);
}

/* Tokens [T] at positions pos .. pos+T-1 through the model; rows of logits
 * (f32) for tokens first_out .. T-1 into out (NULL: none); or, with
 * best non-NULL (and out NULL), the index of the last token's largest
 * logit, found on the device. One-token passes replay a recorded graph
 * where the device records (above). */
static wk_status forward(wk_llm *m, const int32_t *tokens, int64_t T, int64_t first_out, float *out, int32_t *best)
{
    const int64_t pos = m->pos;
    bool used = false;
    if (T == 1 && out) {
        wk_status st = graph_step(m, tokens[0], out, &used);
        if (used || st != WK_OK) return st;
    } else if (T == 1 && best && m->greedy_graph) {
        wk_status st = graph_greedy(m, tokens[0], best, &used);
        if (used || st != WK_OK) return st;
    }
    greedy_drop(m);   /* this pass changes what a step queued ahead read */
    uint32_t *ids = malloc((size_t)T * sizeof *ids);
    if (!ids) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    local_ids(m, tokens, T, ids);

    const double t0 = m->timing ? llm_now_ms() : 0;
    double t1 = 0;
    /* WICK_LLM_TIMING=2: events between the parts of one-token passes */
    if (m->timing == 2 && T == 1 && !m->t_ev) {
        const int64_t n = LLM_EVENTS(m);
        m->t_ev = calloc((size_t)n, sizeof *m->t_ev);
        for (int64_t i = 0; m->t_ev && i < n; i++) m->t_ev[i] = wk_event_new(m->dev);
    }
    const bool parts = m->timing == 2 && T == 1 && m->t_ev;
    if (parts) part_mark(m, 0);
    wk_scope_begin();
    const int want = out ? LLM_OUT_LOGITS : best ? LLM_OUT_BEST : LLM_OUT_NONE;
    /* one token: its row is known here (pass copies it) */
    wk_tensor *tid = T == 1 ? NULL : wk_from_host(m->dev, WK_U32, WK_SHAPE(T), ids);
    wk_tensor *o = tid || T == 1 ? pass(m, tid, ids[0], T, pos, first_out, want, NULL, parts) : NULL;
    if (m->timing) t1 = llm_now_ms();
    wk_status st = WK_OK;
    uint32_t b = 0;
    if (!o) st = WK_ERR_BACKEND;
    else if (want == LLM_OUT_LOGITS)
        st = wk_to_host(o, out, (size_t)((T - first_out) * m->info.n_vocab) * sizeof(float));
    else if (want == LLM_OUT_BEST) st = wk_to_host(o, &b, sizeof b);
    else st = wk_device_synchronize(m->dev);   /* no logits wanted: the work is done and errors surface */
    if (want == LLM_OUT_BEST && st == WK_OK) *best = (int32_t)b;
    if (st != WK_OK) st = wk_error_wrap("forward pass at position %lld (%lld tokens)", (long long)pos, (long long)T);
    if (m->timing && T == 1 && st == WK_OK && want != LLM_OUT_NONE) {
        if (parts) parts_add(m);
        timing_add(m, t0, t1);
    }
    wk_scope_end();
    free(ids);
    return st;
}

static wk_status eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits, int32_t *best);

wk_status wk_llm_eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits)
{
    return eval(m, tokens, n, all_logits, logits, NULL);
}

wk_status llm_eval_greedy(wk_llm *m, const int32_t *tokens, int64_t n, int32_t *next)
{
    if (!next) return wk_error_set(WK_ERR_ARGUMENT, "llm_eval_greedy: next is NULL");
    return eval(m, tokens, n, false, NULL, next);
}

static wk_status eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits, int32_t *best)
{
    wk_clear_error();
    if (!m || (!tokens && n > 0) || n < 0)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval: %s", !m ? "the model is NULL" : "bad tokens or count");
    if (n == 0) return WK_OK;
    if (n > m->info.context - m->pos)
        return wk_error_set(WK_ERR_ARGUMENT,
                       "context full: %lld tokens do not fit after the %lld in the cache (context %lld; "
                       "load with a longer context, up to the model's %lld)",
                       (long long)n, (long long)m->pos, (long long)m->info.context, (long long)m->info.train_context);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->info.n_vocab)
            return wk_error_set(WK_ERR_INDEX, "wk_llm_eval: token %lld is %d, outside the vocabulary of %lld", (long long)i,
                           tokens[i], (long long)m->info.n_vocab);
    const int64_t start = m->pos, V = m->info.n_vocab;
    for (int64_t i = 0; i < n; i += m->chunk) {
        const int64_t T = n - i < m->chunk ? n - i : m->chunk;
        const bool last = i + T == n;
        float *out = NULL;
        int64_t first = T;
        if (logits && all_logits) {
            out = logits + i * V;
            first = 0;
        } else if (logits && last) {
            out = logits;
            first = T - 1;
        }
        wk_status st = window_room(m, T);
        if (st == WK_OK) st = forward(m, tokens + i, T, first, out, last ? best : NULL);
        if (st) {
            if (m->pos) set_pos(m, start);   /* (window_room empties the cache when it fails) */
            return st;
        }
        m->pos += T;
    }
    return WK_OK;
}
