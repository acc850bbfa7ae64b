/* batch.c — forward passes over a flat batch of tokens from many
 * sequences with a paged KV cache (wick_llm.h: wk_llm_kv,
 * wk_llm_eval_batch): the batched engine's forward (src/engine/).
 *
 * The pass is step.c's, with a llm_paged record: every token carries its
 * own position (the rope tables' rows are gathered once per pass), its
 * K and V go to its row of the pools (a scatter), attention reads each
 * sequence's blocks through the block table (wk_paged_attention), and the
 * logits are taken for the rows the batch names. Everything else (norms,
 * products, the MLP) runs on the batch's rows as on a prompt's. */
#include <stdlib.h>
#include "llm_internal.h"

struct wk_llm_kv {
    wk_llm *m;
    int64_t n_blocks, block_size;
    wk_tensor **k, **v;   /* [n_layer] of [NB, BS, Hkv, D] */
};

uint64_t wk_llm_kv_block_bytes(const wk_llm *m, int64_t block_size)
{
    if (!m || block_size <= 0) return 0;
    const wk_llm_info *in = &m->cfg.info;
    return (uint64_t)(2 * in->n_layer * block_size * m->cfg.tp.n_kv * in->head_dim) * wk_dtype_size(in->act_dtype);
}

wk_llm_kv *wk_llm_kv_new(wk_llm *m, int64_t n_blocks, int64_t block_size)
{
    wk_clear_error();
    if (!m || n_blocks <= 0 || block_size <= 0) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_llm_kv_new: %s", !m ? "the model is NULL" : "blocks and block size must be > 0");
        return NULL;
    }
    if (m->cfg.tp.comm) {
        wk_error_set(WK_ERR_UNSUPPORTED, "a paged KV cache for a tensor-parallel model is not supported yet");
        return NULL;
    }
    const wk_llm_info *in = &m->cfg.info;
    wk_llm_kv *kv = calloc(1, sizeof *kv);
    if (kv) {
        kv->k = calloc((size_t)in->n_layer, sizeof *kv->k);
        kv->v = calloc((size_t)in->n_layer, sizeof *kv->v);
    }
    if (!kv || !kv->k || !kv->v) {
        wk_llm_kv_free(kv);
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    kv->m = m;
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    for (int64_t l = 0; l < in->n_layer; l++) {
        const wk_shape s = WK_SHAPE(n_blocks, block_size, m->cfg.tp.n_kv, in->head_dim);
        kv->k[l] = wk_zeros(m->dev, in->act_dtype, s);
        kv->v[l] = wk_zeros(m->dev, in->act_dtype, s);
        if (!kv->k[l] || !kv->v[l]) {
            wk_error_wrap("paged KV cache of %lld blocks of %lld positions (%.1f MiB; layer %lld)", (long long)n_blocks,
                          (long long)block_size, (double)wk_llm_kv_block_bytes(m, block_size) * (double)n_blocks / 1048576.0,
                          (long long)l);
            wk_llm_kv_free(kv);
            return NULL;
        }
    }
    return kv;
}

void wk_llm_kv_free(wk_llm_kv *kv)
{
    if (!kv) return;
    for (int64_t l = 0; kv->m && l < kv->m->cfg.info.n_layer; l++) {
        if (kv->k) wk_release(kv->k[l]);
        if (kv->v) wk_release(kv->v[l]);
    }
    free(kv->k);
    free(kv->v);
    free(kv);
}

int64_t wk_llm_kv_blocks(const wk_llm_kv *kv) { return kv ? kv->n_blocks : 0; }
int64_t wk_llm_kv_block_size(const wk_llm_kv *kv) { return kv ? kv->block_size : 0; }

/* Every id of the batch in range, before anything runs. */
static wk_status check_batch(const wk_llm *m, const wk_llm_kv *kv, const wk_llm_batch *b)
{
    const wk_llm_info *in = &m->cfg.info;
    const int64_t T = b->n_tokens, S = b->n_seqs, MB = b->max_blocks, BS = kv->block_size;
    if (T <= 0 || !b->tokens || !b->pos || !b->seq)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval_batch: a batch needs tokens, positions and sequences (%lld tokens)",
                            (long long)T);
    if (S <= 0 || MB <= 0 || !b->block_table)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval_batch: a batch needs a block table (%lld x %lld)", (long long)S,
                            (long long)MB);
    if (b->n_out < 0 || (b->n_out > 0 && !b->out))
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval_batch: bad output rows (%lld)", (long long)b->n_out);
    for (int64_t i = 0; i < T; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= in->n_vocab)
            return wk_error_set(WK_ERR_INDEX, "wk_llm_eval_batch: token %lld is %d, outside the vocabulary of %lld",
                                (long long)i, b->tokens[i], (long long)in->n_vocab);
        if (b->seq[i] < 0 || b->seq[i] >= S)
            return wk_error_set(WK_ERR_INDEX, "wk_llm_eval_batch: token %lld's sequence %d is outside the table's %lld",
                                (long long)i, b->seq[i], (long long)S);
        const int64_t p = b->pos[i];
        if (p < 0 || p >= in->context || p / BS >= MB)
            return wk_error_set(WK_ERR_INDEX,
                                "wk_llm_eval_batch: token %lld's position %lld is outside the context (%lld) or the "
                                "block table (%lld blocks of %lld)",
                                (long long)i, (long long)p, (long long)in->context, (long long)MB, (long long)BS);
        for (int64_t k = 0; k <= p / BS; k++) {
            const int32_t blk = b->block_table[b->seq[i] * MB + k];
            if (blk < 0 || blk >= kv->n_blocks)
                return wk_error_set(WK_ERR_INDEX,
                                    "wk_llm_eval_batch: block %lld of sequence %d is %d, outside the cache's %lld blocks",
                                    (long long)k, b->seq[i], blk, (long long)kv->n_blocks);
        }
    }
    for (int64_t i = 0; i < b->n_out; i++)
        if (b->out[i] < 0 || b->out[i] >= T)
            return wk_error_set(WK_ERR_INDEX, "wk_llm_eval_batch: output row %lld names token %d of %lld", (long long)i,
                                b->out[i], (long long)T);
    return WK_OK;
}

/* u32 copies of n int32 values (the caller frees) */
static uint32_t *as_u32(const int32_t *a, int64_t n)
{
    uint32_t *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    for (int64_t i = 0; u && i < n; i++) u[i] = (uint32_t)a[i];
    return u;
}

/* host arrays of a batch, as the device takes them */
typedef struct batch_host {
    uint32_t *ids, *pos, *seq, *slot, *table, *out;
} batch_host;

static void host_free(batch_host *h)
{
    free(h->ids);
    free(h->pos);
    free(h->seq);
    free(h->slot);
    free(h->table);
    free(h->out);
}

static bool host_make(const wk_llm *m, const wk_llm_kv *kv, const wk_llm_batch *b, batch_host *h)
{
    const int64_t T = b->n_tokens, BS = kv->block_size;
    h->ids = malloc((size_t)T * sizeof *h->ids);
    h->slot = malloc((size_t)T * sizeof *h->slot);
    h->pos = as_u32(b->pos, T);
    h->seq = as_u32(b->seq, T);
    h->table = as_u32(b->block_table, b->n_seqs * b->max_blocks);
    h->out = as_u32(b->out, b->n_out);
    if (!h->ids || !h->slot || !h->pos || !h->seq || !h->table || !h->out) return false;
    llm_local_ids(m, b->tokens, T, h->ids);
    for (int64_t i = 0; i < T; i++)
        h->slot[i] = (uint32_t)(b->block_table[b->seq[i] * b->max_blocks + b->pos[i] / BS] * BS + b->pos[i] % BS);
    for (int64_t i = 0; i < b->n_seqs * b->max_blocks; i++)   /* unused entries (< 0) are never read */
        if (b->block_table[i] < 0) h->table[i] = 0;
    return true;
}

wk_status wk_llm_eval_batch(wk_llm *m, wk_llm_kv *kv, const wk_llm_batch *b, float *logits, int32_t *argmax)
{
    wk_clear_error();
    if (!m || !kv || !b || kv->m != m)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_eval_batch: %s",
                            !m ? "the model is NULL" : !kv ? "the cache is NULL" : !b ? "the batch is NULL"
                                                                                 : "the cache is another model's");
    wk_status st = check_batch(m, kv, b);
    if (st) return st;
    batch_host h = { 0 };
    if (!host_make(m, kv, b, &h)) {
        host_free(&h);
        return wk_error_set(WK_ERR_MEMORY, "out of memory");
    }
    const int64_t T = b->n_tokens, V = m->cfg.info.n_vocab, n_out = b->n_out;
    wk_device *dev = m->dev;
    wk_scope_begin();
    /* every id of the pass was checked here (check_batch): the GPUs need
       not check them again (no host wait per scatter, gather or attention) */
    const bool prev = wk_set_ids_checked(true);
    wk_tensor *tid = wk_from_host(dev, WK_U32, WK_SHAPE(T), h.ids);
    wk_tensor *pos = wk_from_host(dev, WK_U32, WK_SHAPE(T), h.pos);
    llm_paged pg = {
        .pos = pos,
        .seq = wk_from_host(dev, WK_U32, WK_SHAPE(T), h.seq),
        .slot = wk_from_host(dev, WK_U32, WK_SHAPE(T), h.slot),
        .block_table = wk_from_host(dev, WK_U32, WK_SHAPE(b->n_seqs, b->max_blocks), h.table),
        .out = n_out ? wk_from_host(dev, WK_U32, WK_SHAPE(n_out), h.out) : NULL,
        .cos = pos ? wk_index_select(m->w.cos, pos, 0) : NULL,
        .sin = pos ? wk_index_select(m->w.sin, pos, 0) : NULL,
        .cos_l = pos && m->w.cos_local ? wk_index_select(m->w.cos_local, pos, 0) : NULL,
        .sin_l = pos && m->w.sin_local ? wk_index_select(m->w.sin_local, pos, 0) : NULL,
        .k_pool = kv->k,
        .v_pool = kv->v,
    };
    const bool ok = tid && pg.seq && pg.slot && pg.block_table && (pg.out || !n_out) && pg.cos && pg.sin &&
                    (!m->w.cos_local || (pg.cos_l && pg.sin_l));
    const int want = !n_out ? LLM_OUT_NONE : logits ? LLM_OUT_LOGITS : argmax ? LLM_OUT_BEST : LLM_OUT_NONE;
    /* WICK_LLM_TIMING (timing.c): passes of decode rows only (every token an output row) */
    const bool timed = m->rt.timing && n_out == T && want != LLM_OUT_NONE;
    const double t0 = timed ? llm_now_ms() : 0;
    const bool parts = timed && llm_parts_start(m, true);
    wk_tensor *o = ok ? llm_pass_run(m, tid, 0, T, 0, 0, want, NULL, &pg) : NULL;
    wk_set_ids_checked(prev);
    const double t1 = timed ? llm_now_ms() : 0;
    if (!o) st = wk_last_status() ? wk_last_status() : WK_ERR_BACKEND;
    else if (want == LLM_OUT_LOGITS) st = wk_to_host(o, logits, (size_t)(n_out * V) * sizeof(float));
    else if (want == LLM_OUT_BEST) {
        uint32_t *best = (uint32_t *)argmax;   /* same size; ids < 2^31 */
        st = wk_to_host(o, best, (size_t)n_out * sizeof *best);
    } else st = wk_device_synchronize(dev);
    if (st == WK_OK && want == LLM_OUT_LOGITS && argmax)
        for (int64_t r = 0; r < n_out; r++) {   /* the first index of the largest (NaN skipped) */
            const float *row = logits + r * V;
            int64_t bi = 0;
            for (int64_t j = 1; j < V; j++)
                if (row[j] > row[bi] || (row[bi] != row[bi] && row[j] == row[j])) bi = j;
            argmax[r] = (int32_t)bi;
        }
    if (timed && st == WK_OK) {
        if (parts) llm_parts_add(m);
        llm_timing_add(m, t0, t1);
    }
    if (st != WK_OK) st = wk_error_wrap("batched forward pass (%lld tokens)", (long long)T);
    wk_scope_end();
    host_free(&h);
    return st;
}
