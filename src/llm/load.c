/* load.c — wk_llm_load and wk_llm_free: a model file opened, its config
 * read (hparams.c and its architecture's reader), its weights loaded
 * (weights.c), its caches made (state.c), its text side set up (text.c);
 * a split model's ranks agree that every one of them loaded. */
#include <stdio.h>
#include <stdlib.h>
#include "llm_internal.h"

static wk_status open_source(wk_llm *m, const char *path)
{
    llm_source *src = &m->src;
    src->file = wk_model_file_open(path);
    if (!src->file) return wk_last_status();
    src->gguf = wk_model_file_gguf(src->file);
    src->st = wk_model_file_safetensors(src->file);
    src->config = wk_model_file_config(src->file);
    src->tokcfg = wk_model_file_tokenizer_config(src->file);
    src->dir = src->st ? wk_model_file_path(src->file) : NULL;
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
    m->cfg.info.act_dtype = o.act_dtype;
    m->cfg.info.bos_id = -1;
    m->st.chunk = o.prefill_chunk ? o.prefill_chunk : 512;
    llm_timing_init(m);
    const char *genv = getenv("WICK_LLM_GRAPH");
    const long long gstep = genv && *genv ? atoll(genv) : 0;
    m->rt.graph_off = genv && !strcmp(genv, "0");
    m->rt.graph_step = gstep >= 16 && gstep % 16 == 0 ? gstep : 0;
    const char *ggenv = getenv("WICK_LLM_GREEDY_GRAPH");
    m->rt.greedy_graph = !(ggenv && !strcmp(ggenv, "0"));
    wk_status st = open_source(m, path);
    if (!st) st = llm_read_config(m, path);
    if (st) goto fail;
    wk_llm_info *in = &m->cfg.info;
    if (m->src.gguf) {   /* the vocabulary: the embedding's rows */
        const wk_file_tensor *te = llm_find(m, "token_embd.weight", NULL, -1);
        if (!te || te->shape.rank != 2) {
            st = wk_error_set(WK_ERR_IO, "%s: token_embd.weight is missing or not 2-d", path);
            goto fail;
        }
        in->n_vocab = te->shape.dims[0];
        m->cfg.hp.tied = llm_find(m, "output.weight", NULL, -1) == NULL;
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
    llm_tp *tp = &m->cfg.tp;
    if (o.comm && wk_comm_size(o.comm) > 1 && m->cfg.arch->tp_refused) {   /* before the plan's own checks */
        st = wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor parallel is not supported for %s models yet (%s); load it whole",
                          path, m->cfg.arch->name, m->cfg.arch->tp_refused);
        goto fail;
    }
    if ((st = llm_tp_plan(tp, o.comm, in, m->cfg.hp.n_ff_exp, m->cfg.hp.n_ff_shexp, m->cfg.arch->qk_norm_all)))
        goto fail;
    if (tp->comm && wk_comm_device(tp->comm) != dev) {
        st = wk_error_set(WK_ERR_ARGUMENT, "wk_llm_load: rank %d's communicator is on %s, the model on %s", tp->rank,
                          wk_device_name(wk_comm_device(tp->comm)), wk_device_name(dev));
        goto fail;
    }
    in->tp_rank = tp->rank, in->tp_size = tp->size;
    if ((st = llm_load_weights(m, &o)) || (st = llm_fuse_weights(m)) || (st = llm_state_init(m)) ||
        (st = llm_text_init(m)))
        goto fail;
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


void wk_llm_free(wk_llm *m)
{
    if (!m) return;
    llm_graphs_free(m);
    llm_timing_free(m);
    llm_state_free(m);
    llm_weights_free(m);
    llm_text_free(m);
    free(m->cfg.sliding);
    free(m->cfg.hp.rope_factors);
    wk_model_file_close(m->src.file);
    free(m);
}

const wk_llm_info *wk_llm_get_info(const wk_llm *m) { return m ? &m->cfg.info : NULL; }
wk_device *wk_llm_device(const wk_llm *m) { return m ? m->dev : NULL; }
int64_t wk_llm_pos(const wk_llm *m) { return m ? m->st.pos : 0; }
