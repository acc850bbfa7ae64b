/* ops_paged_attention.c — the front-end of wk_paged_attention: attention of
 * a flat batch of query tokens from many sequences over a paged KV cache
 * (the batched engine's attention; docs/nn.md, "Paged attention"). It
 * checks the shapes, dtypes and devices, brings q, the pools and the ids to
 * the layouts of backend.h's PAGED_ATTENTION family (a copy only where a
 * view cannot be passed as it is) and runs the op. The ids' values are
 * checked by the backend (they are data, possibly on a device). */
#include <math.h>
#include <string.h>
#include "core.h"

/* t when its last dim has unit stride (or size <= 1), else a contiguous
 * copy; the caller releases the result */
static wk_tensor *last_unit(const wk_tensor *t)
{
    const bool ok = t->dims[t->rank - 1] <= 1 || t->strides[t->rank - 1] == 1;
    return ok ? wk_retain((wk_tensor *)t) : wk_contiguous(t);
}

static bool check_ids(const wk_tensor *t, const char *name, int rank)
{
    if (t->dtype != WK_U32) {
        wk_error(WK_ERR_DTYPE, "%s must be u32, not %s", name, wk_dtype_name(t->dtype));
        return false;
    }
    if (t->rank != rank) {
        wk_error(WK_ERR_SHAPE, "%s must have rank %d, got %d", name, rank, t->rank);
        return false;
    }
    return true;
}

static wk_tensor *paged_attention_impl(const wk_tensor *q, const wk_tensor *kp, const wk_tensor *vp,
                                       const wk_tensor *bt, const wk_tensor *seq, const wk_tensor *pos,
                                       const wk_paged_attention_opts *opts)
{
    const wk_tensor *ts[6] = { q, kp, vp, bt, seq, pos };
    static const char *const names[6] = { "q", "k_pool", "v_pool", "block_table", "seq", "pos" };
    if (!wk_check_tensors(6, ts, names)) return NULL;
    if (!wk_check_same_dtype(q, kp, "q", "k_pool") || !wk_check_same_dtype(q, vp, "q", "v_pool")) return NULL;
    if (q->rank != 3 || kp->rank != 4 || vp->rank != 4) {
        wk_error(WK_ERR_SHAPE, "q must be [T, Hq, D] and the pools [NB, BS, Hkv, D]; got ranks %d, %d, %d", q->rank,
                 kp->rank, vp->rank);
        return NULL;
    }
    if (!check_ids(bt, "block_table", 2) || !check_ids(seq, "seq", 1) || !check_ids(pos, "pos", 1)) return NULL;
    wk_paged_attention_opts o = { 0 };
    if (opts) o = *opts;
    const int64_t T = q->dims[0], Hq = q->dims[1], D = q->dims[2], Hkv = kp->dims[2];
    if (memcmp(kp->dims, vp->dims, 4 * sizeof kp->dims[0]) != 0) {
        wk_error(WK_ERR_SHAPE, "k_pool [%lld, %lld, %lld, %lld] and v_pool [%lld, %lld, %lld, %lld] must have one shape",
                 (long long)kp->dims[0], (long long)kp->dims[1], (long long)kp->dims[2], (long long)kp->dims[3],
                 (long long)vp->dims[0], (long long)vp->dims[1], (long long)vp->dims[2], (long long)vp->dims[3]);
        return NULL;
    }
    if (kp->dims[3] != D) {
        wk_error(WK_ERR_SHAPE, "head dims differ: q has D = %lld, the pools %lld", (long long)D, (long long)kp->dims[3]);
        return NULL;
    }
    if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0) {
        wk_error(WK_ERR_SHAPE, "query heads (%lld) must be a multiple of key/value heads (%lld)", (long long)Hq,
                 (long long)Hkv);
        return NULL;
    }
    if (kp->dims[1] <= 0 && T > 0) {
        wk_error(WK_ERR_SHAPE, "the pools' blocks must hold at least one position (BS = %lld)", (long long)kp->dims[1]);
        return NULL;
    }
    if (seq->dims[0] != T || pos->dims[0] != T) {
        wk_error(WK_ERR_SHAPE, "seq [%lld] and pos [%lld] must have one entry per query token (%lld)",
                 (long long)seq->dims[0], (long long)pos->dims[0], (long long)T);
        return NULL;
    }
    if (o.window < 0) {
        wk_error(WK_ERR_ARGUMENT, "window must be >= 0 (0: none), got %lld", (long long)o.window);
        return NULL;
    }
    if (!(o.softcap >= 0) || !isfinite(o.softcap) || !isfinite(o.scale)) {
        wk_error(WK_ERR_ARGUMENT, "softcap must be finite and >= 0 and scale finite (got %g, %g)", o.softcap, o.scale);
        return NULL;
    }
    wk_device *dev = q->st->dev;
    if (!wk_check_supported(dev, WK_OP_PAGED_ATTENTION, q->dtype)) return NULL;
    const int64_t odims[3] = { T, Hq, D };
    wk_tensor *out = wk_tensor_alloc(dev, q->dtype, 3, odims);
    if (!out || wk_numel(3, odims) == 0) return out;
    if (T > 0 && (bt->dims[0] == 0 || bt->dims[1] == 0)) {
        wk_release(out);
        wk_error(WK_ERR_INDEX, "the block table [%lld, %lld] is empty but %lld tokens read it", (long long)bt->dims[0],
                 (long long)bt->dims[1], (long long)T);
        return NULL;
    }
    wk_tensor *h[6] = { last_unit(q), last_unit(kp), last_unit(vp), wk_contiguous(bt), wk_contiguous(seq),
                        wk_contiguous(pos) };
    wk_status st = WK_OK;
    for (int i = 0; i < 6; i++)
        if (!h[i] && st == WK_OK) st = wk_last_status();
    if (st == WK_OK) {
        wk_view vq = wk_view_of(h[0]), vk = wk_view_of(h[1]), vv = wk_view_of(h[2]), vo = wk_view_of(out);
        wk_view vb = wk_view_of(h[3]), vs = wk_view_of(h[4]), vpos = wk_view_of(h[5]);
        wk_paged_attention_params p = { .scale = o.scale != 0 ? o.scale : 1.0 / sqrt((double)D), .softcap = o.softcap,
                                        .window = o.window, .block_table = &vb, .seq = &vs, .pos = &vpos };
        wk_op_args a = { .op = WK_OP_PAGED_ATTENTION, .dst = &vo, .src = { &vq, &vk, &vv }, .params = &p };
        st = wk_run(dev, &a);
    }
    for (int i = 0; i < 6; i++) wk_release(h[i]);
    if (st == WK_OK) WK_FAULT(WK_OP_PAGED_ATTENTION, out);
    return wk_finish(st, out);
}

wk_tensor *wk_paged_attention(const wk_tensor *q, const wk_tensor *k_pool, const wk_tensor *v_pool,
                              const wk_tensor *block_table, const wk_tensor *seq, const wk_tensor *pos,
                              const wk_paged_attention_opts *opts)
    WK_API(wk_tensor *, "paged_attention", paged_attention_impl(q, k_pool, v_pool, block_table, seq, pos, opts))
