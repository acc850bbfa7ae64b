/* ops_quant.c — front-ends of the ops on block-quantized tensors (GGUF's
 * q4_0 .. q8_k): dequantize, quantize, qmatmul and qgather. Each checks
 * its arguments (dtypes, the block rule of the last dim, shapes), brings
 * its operands to the row layouts of the QCONVERT, QMATMUL and QGATHER
 * families of src/backend.h (a copy only where a view's leading dims
 * cannot be merged into one row index) and runs the op. Every op is
 * filed in the device's op table under its block dtype, so a device
 * without the kernel for a type says so here (WK_ERR_UNSUPPORTED).
 * docs/quantization.md has the semantics. */
#include <string.h>
#include "core.h"
#include "../view.h"

/* ---- helpers ------------------------------------------------------------- */

/* t (rank >= 1) as a [rows, cols] view: the leading dims merged into rows.
 * unit_last: the last stride must be 1 as well. When the layout does not
 * allow it, a contiguous copy is made: *held receives the tensor the view
 * is of (the caller releases it). */
static bool q_rows(const wk_tensor *t, bool unit_last, wk_tensor **held, wk_view *v)
{
    const int r = t->rank;
    const int64_t cols = t->dims[r - 1];
    int64_t rows = 0, rs = 0;
    bool ok = (!unit_last || cols <= 1 || t->strides[r - 1] == 1) &&
              wk_merge_range(t->dims, t->strides, 0, r - 1, &rows, &rs);
    *held = ok ? wk_retain((wk_tensor *)t) : wk_contiguous(t);
    if (!*held) return false;
    const wk_tensor *h = *held;
    if (!ok) wk_merge_range(h->dims, h->strides, 0, r - 1, &rows, &rs);
    *v = wk_view_of(h);
    v->rank = 2;
    v->dims[0] = rows;
    v->dims[1] = cols;
    v->strides[0] = rows > 1 ? rs : cols;
    v->strides[1] = cols > 1 ? h->strides[r - 1] : 1;
    for (int d = 2; d < WK_MAX_RANK; d++) v->dims[d] = v->strides[d] = 0;
    return true;
}

/* a fresh contiguous tensor as [numel / last, last] */
static wk_view q_rows_of_fresh(const wk_tensor *t, int64_t cols)
{
    wk_view v = wk_view_of(t);
    v.rank = 2;
    v.dims[0] = cols ? wk_numel(t->rank, t->dims) / cols : 0;
    v.dims[1] = cols;
    v.strides[0] = cols;
    v.strides[1] = 1;
    for (int d = 2; d < WK_MAX_RANK; d++) v.dims[d] = v.strides[d] = 0;
    return v;
}

static bool q_float_out(wk_dtype dt, const char *what)
{
    if (dt == WK_F32 || dt == WK_F16 || dt == WK_BF16) return true;
    wk_error(WK_ERR_DTYPE, "%s must be f32, f16 or bf16, not %s", what, wk_dtype_name(dt));
    return false;
}

static bool q_block_in(const wk_tensor *t, const char *name)
{
    if (wk_dtype_is_quantized(t->dtype)) return true;
    wk_error(WK_ERR_DTYPE, "%s is %s, not a block-quantized dtype", name, wk_dtype_name(t->dtype));
    return false;
}

/* the device implements op for the block dtype qt */
static bool q_supported(wk_device *dev, wk_op op, wk_dtype qt)
{
    if (wk_device_supports(dev, op, qt)) return true;
    wk_error(WK_ERR_UNSUPPORTED, "%s of %s is not implemented on %s", wk_op_name(op), wk_dtype_name(qt), dev->name);
    return false;
}

/* ---- dequantize and quantize ---------------------------------------------- */

static wk_tensor *dequantize_impl(const wk_tensor *t, wk_dtype dt)
{
    if (!WK_CHECK_T(t) || !q_block_in(t, "t") || !q_float_out(dt, "the result dtype")) return NULL;
    wk_device *dev = t->st->dev;
    if (!q_supported(dev, WK_OP_DEQUANTIZE, t->dtype)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, dt, t->rank, t->dims);
    if (!out || wk_numel(t->rank, t->dims) == 0) return out;
    wk_tensor *held;
    wk_view s, d = q_rows_of_fresh(out, t->dims[t->rank - 1]);
    if (!q_rows(t, true, &held, &s)) return wk_finish(wk_last_status(), out);
    wk_op_args a = { .op = WK_OP_DEQUANTIZE, .dst = &d, .src = { &s } };
    wk_status st = wk_run(dev, &a);
    wk_release(held);
    return wk_finish(st, out);
}

static wk_tensor *quantize_impl(const wk_tensor *t, wk_dtype qt)
{
    if (!WK_CHECK_T(t)) return NULL;
    if (t->dtype != WK_F32) {
        wk_error(WK_ERR_DTYPE, "t must be f32, not %s (wk_to_dtype converts it)", wk_dtype_name(t->dtype));
        return NULL;
    }
    if (!wk_dtype_is_quantized(qt)) {
        wk_error(WK_ERR_DTYPE, "%s is not a block-quantized dtype", wk_dtype_name(qt));
        return NULL;
    }
    if (t->rank < 1) {
        wk_error(WK_ERR_SHAPE, "a scalar cannot be quantized (rank >= 1, the last dim whole blocks)");
        return NULL;
    }
    const int64_t cols = t->dims[t->rank - 1], B = (int64_t)wk_dtype_block_size(qt);
    if (cols % B != 0) {
        wk_error(WK_ERR_SHAPE, "the last dim (%lld) is not a multiple of %s's block of %lld", (long long)cols,
                 wk_dtype_name(qt), (long long)B);
        return NULL;
    }
    wk_device *dev = t->st->dev;
    if (!q_supported(dev, WK_OP_QUANTIZE, qt)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, qt, t->rank, t->dims);
    if (!out || wk_numel(t->rank, t->dims) == 0) return out;
    wk_tensor *held;
    wk_view s, d = q_rows_of_fresh(out, cols);
    if (!q_rows(t, true, &held, &s)) return wk_finish(wk_last_status(), out);
    wk_op_args a = { .op = WK_OP_QUANTIZE, .dst = &d, .src = { &s } };
    wk_status st = wk_run(dev, &a);
    wk_release(held);
    return wk_finish(st, out);
}

/* ---- qmatmul ----------------------------------------------------------------- */

/* x . w^T for a block-quantized w, or a dense f16/bf16 one (a model's
 * matrices as its file stores them, against x of any float dtype: where
 * the device takes it; the cpu does) */
static wk_tensor *qmatmul_impl(const wk_tensor *x, const wk_tensor *w)
{
    const wk_tensor *ts[2] = { x, w };
    static const char *const names[2] = { "x", "w" };
    if (!wk_check_tensors(2, ts, names)) return NULL;
    const bool half = w->dtype == WK_F16 || w->dtype == WK_BF16;
    if (!half && !wk_dtype_is_quantized(w->dtype)) {
        wk_error(WK_ERR_DTYPE, "w is %s, not a block-quantized dtype, f16 or bf16", wk_dtype_name(w->dtype));
        return NULL;
    }
    if (w->rank != 2) {
        wk_error(WK_ERR_SHAPE, "w must be 2-d [n, k], not rank %d", w->rank);
        return NULL;
    }
    if (!q_float_out(x->dtype, "x")) return NULL;
    const int64_t n = w->dims[0], k = w->dims[1];
    if (x->rank < 1) {
        wk_error(WK_ERR_SHAPE, "x is a scalar: it must be [.., %lld] (w is [%lld, %lld])", (long long)k, (long long)n,
                 (long long)k);
        return NULL;
    }
    if (x->dims[x->rank - 1] != k) {
        wk_error(WK_ERR_SHAPE, "x's last dim is %lld but w is [%lld, %lld] (n, k): they must agree",
                 (long long)x->dims[x->rank - 1], (long long)n, (long long)k);
        return NULL;
    }
    wk_device *dev = w->st->dev;
    if (!q_supported(dev, WK_OP_QMATMUL, w->dtype)) return NULL;
    int64_t dims[WK_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[x->rank - 1] = n;
    wk_tensor *out = wk_tensor_alloc(dev, x->dtype, x->rank, dims);
    if (!out || wk_numel(x->rank, dims) == 0) return out;
    if (k == 0) return wk_finish(wk_fill_zero(out), out);
    wk_tensor *held;
    /* a dense w's rows contiguous along k (a copy of a view that is not) */
    wk_tensor *wheld = half && w->strides[1] != 1 && k > 1 ? wk_contiguous(w) : wk_retain((wk_tensor *)w);
    if (!wheld) return wk_finish(wk_last_status(), out);
    wk_view xv, wv = wk_view_of(wheld), d = q_rows_of_fresh(out, n);
    if (!q_rows(x, false, &held, &xv)) {
        wk_release(wheld);
        return wk_finish(wk_last_status(), out);
    }
    wk_op_args a = { .op = WK_OP_QMATMUL, .dst = &d, .src = { &wv, &xv } };
    wk_status st = wk_run(dev, &a);
    wk_release(held);
    wk_release(wheld);
    return wk_finish(st, out);
}

/* ---- qgather -------------------------------------------------------------------- */

static wk_tensor *qgather_impl(const wk_tensor *table, const wk_tensor *ids, wk_dtype dt)
{
    const wk_tensor *ts[2] = { table, ids };
    static const char *const names[2] = { "table", "ids" };
    if (!wk_check_tensors(2, ts, names) || !q_block_in(table, "table") || !q_float_out(dt, "the result dtype"))
        return NULL;
    if (table->rank != 2) {
        wk_error(WK_ERR_SHAPE, "table must be 2-d [rows, cols], not rank %d", table->rank);
        return NULL;
    }
    if (ids->dtype != WK_U8 && ids->dtype != WK_U32 && ids->dtype != WK_I64) {
        wk_error(WK_ERR_DTYPE, "ids must be u8, u32 or i64, not %s", wk_dtype_name(ids->dtype));
        return NULL;
    }
    if (ids->rank >= WK_MAX_RANK) {
        wk_error(WK_ERR_SHAPE, "ids have rank %d: the result (ids' dims + [cols]) would pass rank %d", ids->rank,
                 WK_MAX_RANK);
        return NULL;
    }
    wk_device *dev = table->st->dev;
    if (!q_supported(dev, WK_OP_QGATHER, table->dtype)) return NULL;
    const int64_t cols = table->dims[1];
    int64_t dims[WK_MAX_RANK] = { 0 };
    memcpy(dims, ids->dims, (size_t)ids->rank * sizeof dims[0]);
    dims[ids->rank] = cols;
    wk_tensor *out = wk_tensor_alloc(dev, dt, ids->rank + 1, dims);
    const int64_t n = wk_numel(ids->rank, ids->dims);
    if (!out || n == 0) return out;
    /* the ids as one 1-d view (a copy when their strides do not allow it);
     * run even when cols is 0: the ids are still checked */
    int64_t len = 0, stride = 0;
    bool flat = wk_merge_range(ids->dims, ids->strides, 0, ids->rank, &len, &stride);
    wk_tensor *held = flat ? wk_retain((wk_tensor *)ids) : wk_contiguous(ids);
    if (!held) return wk_finish(wk_last_status(), out);
    if (!flat) wk_merge_range(held->dims, held->strides, 0, held->rank, &len, &stride);
    wk_view iv = wk_view_of(held), tv = wk_view_of(table), d = wk_view_of(out);
    iv.rank = 1;
    iv.dims[0] = n;
    iv.strides[0] = n > 1 ? stride : 1;
    for (int q = 1; q < WK_MAX_RANK; q++) iv.dims[q] = iv.strides[q] = 0;
    d.rank = 2;
    d.dims[0] = n;
    d.dims[1] = cols;
    d.strides[0] = cols;
    d.strides[1] = 1;
    for (int q = 2; q < WK_MAX_RANK; q++) d.dims[q] = d.strides[q] = 0;
    wk_op_args a = { .op = WK_OP_QGATHER, .dst = &d, .src = { &tv, &iv } };
    wk_status st = wk_run(dev, &a);
    wk_release(held);
    return wk_finish(st, out);
}

/* ---- public entry points ------------------------------------------------------ */

wk_tensor *wk_dequantize(const wk_tensor *t, wk_dtype dt) WK_API(wk_tensor *, "dequantize", dequantize_impl(t, dt))
wk_tensor *wk_quantize(const wk_tensor *t, wk_dtype qtype) WK_API(wk_tensor *, "quantize", quantize_impl(t, qtype))
wk_tensor *wk_qmatmul(const wk_tensor *x, const wk_tensor *w) WK_API(wk_tensor *, "qmatmul", qmatmul_impl(x, w))
wk_tensor *wk_qgather(const wk_tensor *table, const wk_tensor *ids, wk_dtype dt)
    WK_API(wk_tensor *, "qgather", qgather_impl(table, ids, dt))
