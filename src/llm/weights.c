/* weights.c — a model's weights read from its file: the global tensors
 * (embedding, final norm, output head) and each layer's tensors as its
 * architecture's table lists them (llm_wrow: names in GGUF and HF files,
 * shapes, shares), checked against the config, each rank's share read
 * from the mapping (tensor parallel), converted to the activation dtype
 * (dense; f16/bf16 matrices under f32 activations stay as stored where the
 * device's qmatmul takes them) or kept as the file has them (block types),
 * and fused at load:
 * q/k/v stacked into one matrix, gate/up into one. */
#include <stdio.h>
#include <stdlib.h>
#include "llm_internal.h"

/* A table's dim for this model (the whole model's: files hold it all). */
static int64_t dim_of(const llm_config *c, llm_dim d)
{
    const wk_llm_info *in = &c->info;
    switch (d) {
    case LLM_DE: return in->n_embd;
    case LLM_DQ: return in->n_head * in->head_dim;
    case LLM_DKV: return in->n_head_kv * in->head_dim;
    case LLM_DF: return in->n_ff;
    case LLM_DHEAD: return in->head_dim;
    case LLM_DVOC: return in->n_vocab;
    case LLM_DQKV: return (in->n_head + 2 * in->n_head_kv) * in->head_dim;
    case LLM_DF2: return 2 * in->n_ff;
    case LLM_DX: return c->hp.n_expert;
    case LLM_DFX: return c->hp.n_ff_exp;
    case LLM_DFS: return c->hp.n_ff_shexp;
    case LLM_DONE: return 1;
    default: return 0;
    }
}

/* A weight to load: where it goes, which file tensor, and the shape it must
 * have (rank 1 or 2). */
typedef struct wslot {
    wk_tensor **dst;
    const wk_file_tensor *info;
    int rank;
    int64_t d0, d1;
    bool matrix;      /* a weight multiplied by activations (may stay quantized) */
    bool embedding;   /* the token embedding (may stay quantized: qgather)       */
    llm_share share;  /* tensor parallel: the rank's part (llm_tp.h)             */
} wslot;

typedef struct wlist {
    wslot *s;
    int64_t n, cap;
} wlist;

/* The file tensor named by a pattern with the layer and, for a HF
 * file's experts, the expert (extra printf arguments are ignored). */
static const wk_file_tensor *find2(const wk_llm *m, const char *gname, const char *hname, int layer, int expert,
                                   char *name, size_t n)
{
    const char *pattern = m->src.gguf ? gname : hname;
    if (!pattern) return NULL;
    snprintf(name, n, pattern, layer, expert);
    return wk_model_file_find(m->src.file, name);
}

static wk_status want_t(wk_llm *m, wlist *wl, wk_tensor **dst, const wk_file_tensor *info, const char *name,
                        bool required, int rank, const int64_t *dims, bool matrix, int share)
{
    if (!info) {
        if (!required) return WK_OK;
        return wk_error_set(WK_ERR_IO, "%s: the tensor %s is missing (a %s model needs it)",
                       m->src.gguf ? wk_gguf_path(m->src.gguf) : m->src.dir, name, wk_llm_arch_name(m->cfg.info.arch));
    }
    bool ok = info->shape.rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = info->shape.dims[i] == dims[i];
    if (!ok) {
        char got[128] = "", exp[128] = "";
        int p = 0, q = 0;
        for (int i = 0; i < info->shape.rank && p < 100; i++)
            p += snprintf(got + p, sizeof got - (size_t)p, "%s%lld", i ? ", " : "", (long long)info->shape.dims[i]);
        for (int i = 0; i < rank && q < 100; i++)
            q += snprintf(exp + q, sizeof exp - (size_t)q, "%s%lld", i ? ", " : "", (long long)dims[i]);
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
    wl->s[wl->n++] = (wslot){ dst, info, rank, dims[0], rank > 1 ? dims[1] : 0, matrix, false, share };
    return WK_OK;
}

static wk_status want(wk_llm *m, wlist *wl, wk_tensor **dst, const char *gname, const char *hname, int layer,
                      bool required, int rank, int64_t d0, int64_t d1, bool matrix, int share)
{
    char name[256];
    const int64_t dims[2] = { d0, d1 };
    const wk_file_tensor *info = find2(m, gname, hname, layer, 0, name, sizeof name);
    return want_t(m, wl, dst, info, name, required, rank, dims, matrix, share);
}

/* A HF file's experts, one tensor each, stacked into one [X, d0, d1]
 * after they are read (llm_load_weights). Stacking at load keeps one
 * code path for both kinds of file (GGUF holds them stacked) at the cost
 * of the experts' bytes twice while a model loads. */
typedef struct xstack {
    wk_tensor **dst;
    wk_tensor **parts;            /* [X], read into by the slots */
    int64_t n;
} xstack;

typedef struct xlist {
    xstack *s;
    int64_t n, cap;
} xlist;

/* a table row of experts, for layer l: one slot (GGUF) or X (HF) */
static wk_status want_experts(wk_llm *m, wlist *wl, xlist *xl, wk_tensor **dst, const llm_wrow *w, int l)
{
    const llm_config *c = &m->cfg;
    const int64_t X = dim_of(c, LLM_DX), d0 = dim_of(c, w->d0), d1 = dim_of(c, w->d1);
    const bool req = !(w->flags & LLM_W_OPTIONAL);
    char name[256];
    if (m->src.gguf) {
        const int64_t dims[3] = { X, d0, d1 };
        return want_t(m, wl, dst, find2(m, w->gguf, NULL, l, 0, name, sizeof name), name, req, 3, dims, w->matrix,
                      w->share);
    }
    const wk_file_tensor *first = find2(m, NULL, w->hf, l, 0, name, sizeof name);
    if (!first && !req) return WK_OK;
    if (xl->n == xl->cap) {
        int64_t cap = xl->cap ? xl->cap * 2 : 64;
        xstack *s = realloc(xl->s, (size_t)cap * sizeof *s);
        if (!s) return wk_error_set(WK_ERR_MEMORY, "out of memory");
        xl->s = s, xl->cap = cap;
    }
    xstack *x = &xl->s[xl->n];
    x->dst = dst, x->n = X;
    x->parts = calloc((size_t)X, sizeof *x->parts);
    if (!x->parts) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    xl->n++;
    const int64_t dims[2] = { d0, d1 };
    for (int e = 0; e < X; e++) {
        const wk_file_tensor *info = find2(m, NULL, w->hf, l, e, name, sizeof name);
        wk_status st = want_t(m, wl, &x->parts[e], info, name, true, 2, dims, w->matrix, w->share);
        if (st) return st;
    }
    return WK_OK;
}

/* The tensor as the forward pass uses it (see the top of the file). An
 * f16/bf16 matrix under f32 activations stays as the file has it where
 * the device multiplies it so (qmatmul of a dense half weight: the cpu),
 * half the bytes of widening it, each product still exact in f32. */
static wk_tensor *prepare(const wk_llm *m, wk_tensor *t, bool matrix, const wk_llm_options *o)
{
    const wk_dtype act = m->cfg.info.act_dtype;
    const wk_dtype dt = wk_tensor_dtype(t);
    if (wk_dtype_is_quantized(dt)) {
        if (!o->dequantize) return wk_retain(t);
        return wk_dequantize(t, act);
    }
    if (dt == act) return wk_retain(t);
    if (matrix && act == WK_F32 && (dt == WK_F16 || dt == WK_BF16) && wk_supports(m->dev, "qmatmul", dt))
        return wk_retain(t);
    return wk_to_dtype(t, act);
}

/* Tensor parallel: each weight's share for this rank, read from the
 * file's mapping (only the share travels to the device). */
static wk_status load_shares(wk_llm *m, const wlist *wl, wk_tensor **raw)
{
    const llm_tp *tp = &m->cfg.tp;
    const wk_llm_info *in = &m->cfg.info;
    const int64_t D = in->head_dim, H = in->n_head, Hkv = in->n_head_kv, F = in->n_ff;
    for (int64_t i = 0; i < wl->n; i++) {
        const wslot *w = &wl->s[i];
        /* a matrix's rows and columns (of each matrix of a stack of experts) */
        const wk_shape *fs = &w->info->shape;
        const int64_t rows = fs->dims[fs->rank == 3], cols = fs->rank >= 2 ? fs->dims[fs->rank - 1] : 1;
        llm_rows rg[LLM_TP_MAX_RANGES] = { { 0, rows } };
        int nrg = 1;
        int64_t c0 = 0, nc = cols;
        switch (w->share) {
        case LLM_SH_ROWS_Q: rg[0] = (llm_rows){ tp->head0 * D, tp->n_head * D }; break;
        case LLM_SH_ROWS_KV: rg[0] = (llm_rows){ tp->kv0 * D, tp->n_kv * D }; break;
        case LLM_SH_COLS_Q: c0 = tp->head0 * D, nc = tp->n_head * D; break;
        case LLM_SH_ROWS_FF: rg[0] = (llm_rows){ tp->ff0, tp->n_ff }; break;
        case LLM_SH_COLS_FF: c0 = tp->ff0, nc = tp->n_ff; break;
        case LLM_SH_ROWS_VOC: rg[0] = (llm_rows){ tp->voc0, tp->n_voc }; break;
        case LLM_SH_ROWS_FX: rg[0] = (llm_rows){ tp->ffx0, tp->n_ffx }; break;
        case LLM_SH_COLS_FX: c0 = tp->ffx0, nc = tp->n_ffx; break;
        case LLM_SH_ROWS_FS: rg[0] = (llm_rows){ tp->ffs0, tp->n_ffs }; break;
        case LLM_SH_COLS_FS: c0 = tp->ffs0, nc = tp->n_ffs; break;
        case LLM_SH_ROWS_QKV:   /* its query heads' rows of q, its KV heads' of k and of v */
            rg[0] = (llm_rows){ tp->head0 * D, tp->n_head * D };
            rg[1] = (llm_rows){ (H + tp->kv0) * D, tp->n_kv * D };
            rg[2] = (llm_rows){ (H + Hkv + tp->kv0) * D, tp->n_kv * D };
            nrg = 3;
            break;
        case LLM_SH_ROWS_GU:   /* its FFN slice of gate and of up */
            rg[0] = (llm_rows){ tp->ff0, tp->n_ff };
            rg[1] = (llm_rows){ F + tp->ff0, tp->n_ff };
            nrg = 2;
            break;
        default: break;
        }
        /* the embedding's share ends with a row of zeros, which the tokens
           of other ranks look up (forward) */
        raw[i] = llm_tp_slice(w->info, m->dev, rg, nrg, c0, nc, w->embedding ? 1 : 0);
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

wk_status llm_load_weights(wk_llm *m, const wk_llm_options *o)
{
    const wk_llm_info *in = &m->cfg.info;
    const llm_hparams *hp = &m->cfg.hp;
    const int64_t E = in->n_embd, V = in->n_vocab;
    wlist wl = { 0 };
    xlist xl = { 0 };
    wk_status st;
    m->w.layers = calloc((size_t)in->n_layer, sizeof *m->w.layers);
    if (!m->w.layers) return wk_error_set(WK_ERR_MEMORY, "out of memory");
#define WANT(dst, g, h, l, req, rank, d0, d1, mat, share) \
    if ((st = want(m, &wl, dst, g, h, l, req, rank, d0, d1, mat, share))) goto done

    WANT(&m->w.tok_embd, "token_embd.weight", "model.embed_tokens.weight", -1, true, 2, V, E, true, LLM_SH_ROWS_VOC);
    wl.s[wl.n - 1].embedding = true;
    WANT(&m->w.out_norm, "output_norm.weight", "model.norm.weight", -1, true, 1, E, 0, false, LLM_SH_ALL);
    if (!hp->tied)
        WANT(&m->w.output, "output.weight", "lm_head.weight", -1, !!m->src.st && !hp->tied, 2, V, E, true, LLM_SH_ROWS_VOC);
    const llm_arch_desc *arch = m->cfg.arch;
    for (int l = 0; l < in->n_layer; l++) {
        llm_layer *y = &m->w.layers[l];
        for (int r = 0; r < arch->n_rows; r++) {
            const llm_wrow *w = &arch->rows[r];
            const int64_t d0 = dim_of(&m->cfg, w->d0), d1 = dim_of(&m->cfg, w->d1);
            wk_tensor **dst = (wk_tensor **)((char *)y + w->member);
            const bool req = !(w->flags & LLM_W_OPTIONAL);
            if (w->dx != LLM_D0) {
                if ((st = want_experts(m, &wl, &xl, dst, w, l))) goto done;
            } else if (m->src.gguf && (w->flags & LLM_W_GGUF_VEC) &&
                       (!llm_find(m, w->gguf, NULL, l) || llm_find(m, w->gguf, NULL, l)->shape.rank == 1)) {
                /* [1, d1] as [d1] (llama.cpp's shape; the converter may write either): reshaped below */
                WANT(dst, w->gguf, w->hf, l, req, 1, d1, 0, w->matrix, w->share);
            } else {
                WANT(dst, w->gguf, w->hf, l, req, w->d1 == LLM_D0 ? 1 : 2, d0, d1, w->matrix, w->share);
            }
        }
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
        st = m->cfg.tp.comm ? load_shares(m, &wl, raw) : wk_file_tensors_load(infos, wl.n, m->dev, o->progress, label, raw);
        for (int64_t i = 0; st == WK_OK && i < wl.n; i++) {
            wk_tensor *t = prepare(m, raw[i], wl.s[i].matrix, o);
            if (!t) {
                st = wk_error_wrap("%s: tensor %s", wl.s[i].info->file, wl.s[i].info->name);
                break;
            }
            *wl.s[i].dst = t;
            m->cfg.info.weight_bytes += wk_tensor_nbytes(t);
            if (wl.s[i].matrix) dtype_bytes[wl.s[i].info->dtype] += wl.s[i].info->nbytes;
        }
        for (int d = 0; d < WK_DTYPE_COUNT; d++)   /* the dtype holding most matrix bytes */
            if (dtype_bytes[d] > dtype_bytes[m->cfg.info.weight_dtype]) m->cfg.info.weight_dtype = (wk_dtype)d;
        for (int64_t i = 0; i < wl.n; i++) wk_release(raw[i]);
        free(infos);
        free(raw);
    }
    for (int64_t i = 0; st == WK_OK && i < xl.n; i++) {   /* a HF file's experts stacked */
        *xl.s[i].dst = wk_stack(xl.s[i].parts, (int)xl.s[i].n, 0);
        if (!*xl.s[i].dst) st = wk_error_wrap("stacking the experts");
    }
    for (int64_t l = 0; st == WK_OK && l < in->n_layer; l++) {   /* GGUF's vector of a one-row matrix */
        llm_layer *y = &m->w.layers[l];
        if (y->sh_inp && wk_tensor_rank(y->sh_inp) == 1) {
            wk_tensor *r = wk_reshape(y->sh_inp, WK_SHAPE(1, wk_tensor_dim(y->sh_inp, 0)));
            if (!r) st = wk_error_wrap("the shared expert's gate");
            wk_release(y->sh_inp);
            y->sh_inp = r;
        }
    }
    if (st == WK_OK && !m->w.output)   /* tied; tensor parallel: without the zero row */
        m->w.output = m->cfg.tp.comm ? wk_narrow(m->w.tok_embd, 0, 0, m->cfg.tp.n_voc) : wk_retain(m->w.tok_embd);
    if (st == WK_OK && !m->w.output) st = wk_error_wrap("the output head");
done:
    for (int64_t i = 0; i < xl.n; i++) {
        for (int64_t e = 0; e < xl.s[i].n; e++) wk_release(xl.s[i].parts[e]);
        free(xl.s[i].parts);
    }
    free(xl.s);
    free(wl.s);
    return st;
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
 * WICK_LLM_FUSE=0 keeps them apart (llm_fuse_weights; for measuring the
 * difference). */
static wk_status fuse_layer(llm_layer *y)
{
    wk_status st;
    if (y->wqkv) return WK_OK;   /* stacked in the file (phi3) */
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


wk_status llm_fuse_weights(wk_llm *m)
{
    const char *e = getenv("WICK_LLM_FUSE");   /* read once a load */
    if (e && !strcmp(e, "0")) return WK_OK;
    wk_status st = WK_OK;
    for (int64_t l = 0; l < m->cfg.info.n_layer && st == WK_OK; l++) st = fuse_layer(&m->w.layers[l]);
    return st;
}

void llm_weights_free(wk_llm *m)
{
    if (m->w.layers) {
        for (int64_t l = 0; l < m->cfg.info.n_layer; l++) {
            llm_layer *y = &m->w.layers[l];
            wk_tensor *ts[] = { y->attn_norm, y->wq, y->wk, y->wv, y->wo, y->bq, y->bk, y->bv, y->q_norm, y->k_norm,
                                y->post_attn_norm, y->ffn_norm, y->w_gate, y->w_up, y->w_down, y->post_ffn_norm,
                                y->wqkv, y->bqkv, y->w_gu, y->router, y->exp_gate, y->exp_up, y->exp_down,
                                y->sh_gate, y->sh_up, y->sh_down, y->sh_inp };
            for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) wk_release(ts[i]);
        }
        free(m->w.layers);
        m->w.layers = NULL;
    }
    wk_release(m->w.tok_embd);
    wk_release(m->w.out_norm);
    wk_release(m->w.output);
    m->w.tok_embd = m->w.out_norm = m->w.output = NULL;
}
