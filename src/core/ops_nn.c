/* ops_nn.c — front-ends of the fused NN ops: softmax, log_softmax,
 * rms_norm (plain, Gemma, fused with the residual add), layer_norm,
 * the three rotary embeddings and their tables, rope_kv, attention, and
 * the fused products of a projection with the op after it
 * (linear_silu_mul, linear_rope_kv: the LINEAR family for one row of a
 * dense weight, else the two calls). Each checks its arguments, brings
 * its inputs to the layouts the backend families of backend.h describe
 * (a copy only where a view cannot be described that way) and runs the
 * op. silu_mul is a binary op (ops_elementwise.c). docs/nn.md has the
 * semantics, docs/fused-ops.md the fused products. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "../view.h"

/* ---- layout helpers ---------------------------------------------------- */

/* t itself when every dim from `from` on has unit spacing as wk_merge_range
 * needs, else a contiguous copy; NULL + error on failure. The caller
 * releases the result. */
static wk_tensor *nn_usable(const wk_tensor *t, bool ok)
{
    return ok ? wk_retain((wk_tensor *)t) : wk_contiguous(t);
}

/* x as [rows, D] with strides [row stride, 1] (a copy when its layout
 * does not allow it): *held receives the tensor the view is of. */
static bool nn_rows(const wk_tensor *x, wk_tensor **held, wk_view *v)
{
    int r = x->rank;
    int64_t D = x->dims[r - 1], rows = 0, rs = 0;
    bool ok = (D <= 1 || x->strides[r - 1] == 1) && wk_merge_range(x->dims, x->strides, 0, r - 1, &rows, &rs);
    *held = nn_usable(x, ok);
    if (!*held) return false;
    const wk_tensor *h = *held;
    if (!ok) wk_merge_range(h->dims, h->strides, 0, r - 1, &rows, &rs);
    *v = wk_view_of(h);
    v->rank = 2;
    v->dims[0] = rows;
    v->dims[1] = D;
    v->strides[0] = rows > 1 ? rs : D;
    v->strides[1] = 1;
    for (int d = 2; d < WK_MAX_RANK; d++) v->dims[d] = v->strides[d] = 0;
    return true;
}

/* the view of a fresh contiguous tensor as [rows, D] */
static wk_view nn_rows_of_fresh(const wk_tensor *t)
{
    wk_view v = wk_view_of(t);
    int64_t D = t->dims[t->rank - 1];
    v.rank = 2;
    v.dims[0] = D ? wk_numel(t->rank, t->dims) / D : 0;
    v.dims[1] = D;
    v.strides[0] = D;
    v.strides[1] = 1;
    for (int d = 2; d < WK_MAX_RANK; d++) v.dims[d] = v.strides[d] = 0;
    return v;
}

/* a 1-d parameter (weight, bias) of size D, x's dtype and device; made
 * contiguous when it is not. NULL stays NULL (*held NULL). */
static bool nn_param_ok(const wk_tensor *x, const wk_tensor *p, const char *name)
{
    if (!p) return true;
    if (p->st->dev != x->st->dev) {
        wk_error(WK_ERR_DEVICE, "x is on %s but %s is on %s", x->st->dev->name, name, p->st->dev->name);
        return false;
    }
    if (p->dtype != x->dtype) {
        wk_error(WK_ERR_DTYPE, "dtypes differ: x is %s, %s is %s", wk_dtype_name(x->dtype), name,
                 wk_dtype_name(p->dtype));
        return false;
    }
    int64_t D = x->dims[x->rank - 1];
    if (p->rank != 1 || p->dims[0] != D) {
        wk_error(WK_ERR_SHAPE, "%s must be 1-d of x's last dim (%lld), not of rank %d%s%lld%s", name,
                 (long long)D, p->rank, p->rank ? " [" : "", p->rank ? (long long)p->dims[0] : 0LL,
                 p->rank == 1 ? "]" : p->rank ? ", ..]" : "");
        return false;
    }
    return true;
}

static bool nn_param(const wk_tensor *x, const wk_tensor *p, const char *name, wk_tensor **held)
{
    *held = NULL;
    if (!p) return true;
    if (!nn_param_ok(x, p, name)) return false;
    *held = nn_usable(p, x->dims[x->rank - 1] <= 1 || p->strides[0] == 1);
    return *held != NULL;
}

/* The product part of a LINEAR op's record (backend.h) for x [.., 1, K]
 * (a vector as [1, K], as wk_reshape makes it) and w [N, K]: MATMUL's
 * views of x and of w transposed, as wk_matmul passes them, and y, their
 * product [.., 1, N] (contiguous, base NULL: it is in no memory). */
typedef struct nn_linear {
    wk_view a, b, y;
} nn_linear;

/* The product of a fused linear op goes through wk_qmatmul for a
 * block-quantized w, and for a dense f16/bf16 w under x of another float
 * dtype (a model's matrices kept as stored: qmatmul widens them as it
 * reads); else through wk_matmul, w in x's dtype. */
static bool nn_via_qmatmul(const wk_tensor *x, const wk_tensor *w)
{
    return wk_dtype_is_quantized(w->dtype) ||
           ((w->dtype == WK_F16 || w->dtype == WK_BF16) && wk_dtype_is_float(x->dtype) && w->dtype != x->dtype);
}

static void nn_linear_views(const wk_tensor *x, const wk_tensor *w, nn_linear *l)
{
    wk_view xv = wk_view_of(x), wt = wk_view_of(w);
    if (x->rank == 1) {
        xv.rank = 2;
        xv.dims[0] = 1;
        xv.dims[1] = x->dims[0];
        wk_contiguous_strides(2, xv.dims, xv.strides);
    }
    wt.dims[0] = w->dims[1];
    wt.dims[1] = w->dims[0];
    wt.strides[0] = w->strides[1];
    wt.strides[1] = w->strides[0];
    const int br = xv.rank - 2;
    wk_matmul_view(&xv, br, xv.dims, &l->a);
    wk_matmul_view(&wt, br, xv.dims, &l->b);
    memset(&l->y, 0, sizeof l->y);
    l->y.dtype = x->dtype;
    l->y.rank = br + 2;
    for (int d = 0; d <= br; d++) l->y.dims[d] = xv.dims[d];
    l->y.dims[br + 1] = w->dims[0];
    wk_contiguous_strides(br + 2, l->y.dims, l->y.strides);
}

/* x must be a float tensor of a dtype the device's backend implements
 * op for, of rank >= min_rank */
static bool nn_check_x(const wk_tensor *x, wk_op op, int min_rank, const char *what)
{
    if (!WK_CHECK_T(x)) return false;
    if (x->rank < min_rank) {
        wk_error(WK_ERR_SHAPE, "%s needs rank >= %d, got rank %d", what, min_rank, x->rank);
        return false;
    }
    return wk_check_supported(x->st->dev, op, x->dtype);
}

/* ---- softmax, log_softmax ---------------------------------------------- */

static wk_tensor *softmax_impl(wk_op op, const wk_tensor *x, int dim)
{
    if (!nn_check_x(x, op, 1, "x")) return NULL;
    int d = wk_norm_dim(dim, x->rank);
    if (d < 0) return NULL;
    wk_tensor *out = wk_tensor_alloc(x->st->dev, x->dtype, x->rank, x->dims);
    if (!out) return NULL;
    if (wk_numel(x->rank, x->dims) == 0) return out;
    int64_t outer = 0, os = 0, inner = 0, is = 0;
    bool ok = wk_merge_range(x->dims, x->strides, 0, d, &outer, &os) &&
              wk_merge_range(x->dims, x->strides, d + 1, x->rank, &inner, &is);
    wk_tensor *h = nn_usable(x, ok);
    if (!h) return wk_finish(wk_last_status(), out);
    wk_merge_range(h->dims, h->strides, 0, d, &outer, &os);
    wk_merge_range(h->dims, h->strides, d + 1, h->rank, &inner, &is);
    wk_view s = wk_view_of(h), o = wk_view_of(out);
    int64_t n = x->dims[d];
    const int64_t sdims[3] = { outer, n, inner }, sstr[3] = { os, h->strides[d], is };
    const int64_t ostr[3] = { n * inner, inner, 1 };
    for (int q = 0; q < WK_MAX_RANK; q++) {
        s.dims[q] = o.dims[q] = q < 3 ? sdims[q] : 0;
        s.strides[q] = q < 3 ? sstr[q] : 0;
        o.strides[q] = q < 3 ? ostr[q] : 0;
    }
    s.rank = o.rank = 3;
    wk_op_args a = { .op = op, .dst = &o, .src = { &s } };
    wk_status st = wk_run(x->st->dev, &a);
    wk_release(h);
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

wk_tensor *wk_softmax(const wk_tensor *x, int dim) WK_API(wk_tensor *, "softmax", softmax_impl(WK_OP_SOFTMAX, x, dim))
wk_tensor *wk_log_softmax(const wk_tensor *x, int dim)
    WK_API(wk_tensor *, "log_softmax", softmax_impl(WK_OP_LOG_SOFTMAX, x, dim))

/* ---- norms ---------------------------------------------------------------- */

static bool nn_check_eps(double eps)
{
    if (eps >= 0 && isfinite(eps)) return true;
    wk_error(WK_ERR_ARGUMENT, "eps must be finite and >= 0, got %g", eps);
    return false;
}

/* add_rms_norm's residual: x's shape, dtype and device */
static bool nn_check_residual(const wk_tensor *x, const wk_tensor *residual)
{
    if (!WK_CHECK_T(residual)) return false;
    const wk_tensor *ts[2] = { x, residual };
    static const char *const names[2] = { "x", "residual" };
    if (!wk_check_tensors(2, ts, names) || !wk_check_same_dtype(x, residual, "x", "residual")) return false;
    if (residual->rank != x->rank || memcmp(residual->dims, x->dims, sizeof x->dims) != 0) {
        wk_error(WK_ERR_SHAPE, "x and residual must have one shape (ranks %d and %d)", x->rank, residual->rank);
        return false;
    }
    return true;
}

static bool nn_check_sum(wk_tensor **sum)
{
    if (sum) return true;
    wk_error(WK_ERR_ARGUMENT, "sum is NULL (it receives x + residual)");
    return false;
}

bool wk_add_rms_norm_check(const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight, double eps,
                           wk_tensor **sum)
{
    return nn_check_sum(sum) && nn_check_x(x, WK_OP_ADD_RMS_NORM, 1, "x") && nn_check_eps(eps) &&
           nn_check_residual(x, residual) && nn_param_ok(x, weight, "weight");
}

/* rms_norm, its Gemma form, layer_norm and add_rms_norm (residual, sum) */
static wk_tensor *norm_impl(wk_op op, const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight,
                            const wk_tensor *bias, double eps, bool gemma, wk_tensor **sum)
{
    if (sum) *sum = NULL;
    if (!nn_check_x(x, op, 1, "x") || !nn_check_eps(eps)) return NULL;
    if (op == WK_OP_ADD_RMS_NORM && !nn_check_residual(x, residual)) return NULL;
    wk_device *dev = x->st->dev;
    wk_tensor *hw = NULL, *hb = NULL, *hx = NULL, *hr = NULL, *out = NULL, *s = NULL;
    wk_status st = WK_OK;
    if (!nn_param(x, weight, "weight", &hw) || !nn_param(x, bias, "bias", &hb)) goto fail;
    out = wk_tensor_alloc(dev, x->dtype, x->rank, x->dims);
    if (!out) goto fail;
    if (sum && !(s = wk_tensor_alloc(dev, x->dtype, x->rank, x->dims))) goto fail;
    if (wk_numel(x->rank, x->dims) > 0) {
        wk_view vx, vr, vo = nn_rows_of_fresh(out), vs, vw, vb;
        if (!nn_rows(x, &hx, &vx)) goto fail;
        if (residual && !nn_rows(residual, &hr, &vr)) goto fail;
        if (hw) vw = wk_view_of(hw);
        if (hb) vb = wk_view_of(hb);
        wk_op_args a = { .op = op, .dst = &vo, .src = { &vx }, .p = { eps, gemma ? 1.0 : 0.0 } };
        if (op == WK_OP_LAYER_NORM) {
            a.src[1] = hw ? &vw : NULL;
            a.src[2] = hb ? &vb : NULL;
        } else if (op == WK_OP_ADD_RMS_NORM) {
            vs = nn_rows_of_fresh(s);
            a.src[1] = &vr;
            a.src[2] = hw ? &vw : NULL;
            a.src[3] = &vs;
        } else {
            a.src[1] = hw ? &vw : NULL;
        }
        st = wk_run(dev, &a);
        if (st != WK_OK) goto fail;
        WK_FAULT(op, out);
    }
    wk_release(hw);
    wk_release(hb);
    wk_release(hx);
    wk_release(hr);
    if (sum) *sum = s;
    return out;
fail:
    wk_release(hw);
    wk_release(hb);
    wk_release(hx);
    wk_release(hr);
    wk_release(s);
    wk_release(out);
    return NULL;
}

wk_tensor *wk_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps)
    WK_API(wk_tensor *, "rms_norm", norm_impl(WK_OP_RMS_NORM, x, NULL, weight, NULL, eps, false, NULL))
wk_tensor *wk_rms_norm_gemma(const wk_tensor *x, const wk_tensor *weight, double eps)
    WK_API(wk_tensor *, "rms_norm", norm_impl(WK_OP_RMS_NORM, x, NULL, weight, NULL, eps, true, NULL))
wk_tensor *wk_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps)
    WK_API(wk_tensor *, "layer_norm", norm_impl(WK_OP_LAYER_NORM, x, NULL, weight, bias, eps, false, NULL))

static wk_tensor *add_rms_norm_impl(const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight,
                                    double eps, bool gemma, wk_tensor **sum)
{
    if (!nn_check_sum(sum)) return NULL;
    return norm_impl(WK_OP_ADD_RMS_NORM, x, residual, weight, NULL, eps, gemma, sum);
}

wk_tensor *wk_add_rms_norm(const wk_tensor *x, const wk_tensor *residual, const wk_tensor *weight, double eps,
                           bool gemma, wk_tensor **sum)
    WK_API(wk_tensor *, "add_rms_norm", add_rms_norm_impl(x, residual, weight, eps, gemma, sum))

/* ---- rotary embeddings ------------------------------------------------------- */

/* a cos/sin table as f32 [n_pos, half] contiguous (converted or copied
 * when it is not); NULL + error */
static wk_tensor *rope_table(const wk_tensor *x, const wk_tensor *t, const char *name, int64_t half)
{
    if (!t || WK_DEAD(t, name)) {
        if (!t) wk_error(WK_ERR_ARGUMENT, "%s is NULL", name);
        return NULL;
    }
    if (t->st->dev != x->st->dev) {
        wk_error(WK_ERR_DEVICE, "x is on %s but %s is on %s", x->st->dev->name, name, t->st->dev->name);
        return NULL;
    }
    if (!wk_dtype_is_float(t->dtype) || wk_dt_is_quant(t->dtype)) {
        wk_error(WK_ERR_DTYPE, "%s must be a float tensor, not %s", name, wk_dtype_name(t->dtype));
        return NULL;
    }
    if (t->rank != 2 || t->dims[1] != half) {
        wk_error(WK_ERR_SHAPE, "%s must be [n_pos, %lld] (head dim / 2), got rank %d%s", name, (long long)half,
                 t->rank, t->rank == 2 ? " with another last dim" : "");
        return NULL;
    }
    if (t->dtype != WK_F32) return wk_to_dtype(t, WK_F32);
    return nn_usable(t, wk_layout_is_contiguous(t->rank, t->dims, t->strides));
}

/* pos + T - 1 for a message, saturated (pos may be anything the caller gave) */
static long long last_pos(int64_t pos, int64_t T)
{
    int64_t r;
    return __builtin_add_overflow(pos, T - 1, &r) ? (long long)INT64_MAX : (long long)r;
}

/* the run of a rope op once the tables are f32 [n_pos, D/2] */
static wk_tensor *rope_run(wk_op op, const wk_tensor *x, const wk_tensor *hc, const wk_tensor *hs, int64_t pos)
{
    int64_t T = x->dims[op == WK_OP_ROPE_THD ? 1 : 2];
    if (hc->dims[0] != hs->dims[0]) {
        wk_error(WK_ERR_SHAPE, "cos has %lld positions but sin has %lld", (long long)hc->dims[0],
                 (long long)hs->dims[0]);
        return NULL;
    }
    if (pos < 0 || pos > hc->dims[0] - T) {
        wk_error(WK_ERR_INDEX, "positions %lld .. %lld are not all in the tables (%lld positions)", (long long)pos,
                 last_pos(pos, T), (long long)hc->dims[0]);
        return NULL;
    }
    wk_tensor *out = wk_tensor_alloc(x->st->dev, x->dtype, 4, x->dims);
    if (!out || wk_numel(4, x->dims) == 0) return out;
    wk_tensor *hx = nn_usable(x, x->dims[3] <= 1 || x->strides[3] == 1);
    if (!hx) return wk_finish(wk_last_status(), out);
    wk_view vx = wk_view_of(hx), vo = wk_view_of(out), vc = wk_view_of(hc), vs = wk_view_of(hs);
    wk_op_args a = { .op = op, .dst = &vo, .src = { &vx, &vc, &vs }, .p = { (double)pos } };
    wk_status st = wk_run(x->st->dev, &a);
    wk_release(hx);
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

static wk_tensor *rope_impl(wk_op op, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos)
{
    if (!nn_check_x(x, op, 4, "x")) return NULL;
    if (x->rank != 4) {
        wk_error(WK_ERR_SHAPE, "x must be rank 4 (%s), got rank %d",
                 op == WK_OP_ROPE_THD ? "[B, T, H, D]" : "[B, H, T, D]", x->rank);
        return NULL;
    }
    int64_t D = x->dims[3];
    if (D % 2) {
        wk_error(WK_ERR_SHAPE, "head dim D must be even, got %lld", (long long)D);
        return NULL;
    }
    wk_tensor *hc = rope_table(x, cos, "cos", D / 2);
    wk_tensor *hs = hc ? rope_table(x, sin, "sin", D / 2) : NULL;
    wk_tensor *out = hs ? rope_run(op, x, hc, hs, pos) : NULL;
    wk_release(hc);
    wk_release(hs);
    return out;
}

wk_tensor *wk_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset)
    WK_API(wk_tensor *, "rope", rope_impl(WK_OP_ROPE, x, cos, sin, pos_offset))
wk_tensor *wk_rope_i(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset)
    WK_API(wk_tensor *, "rope_i", rope_impl(WK_OP_ROPE_I, x, cos, sin, pos_offset))
wk_tensor *wk_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset)
    WK_API(wk_tensor *, "rope_thd", rope_impl(WK_OP_ROPE_THD, x, cos, sin, pos_offset))

/* a KV cache for rope_kv: [B, Hkv, C, D] of qkv's dtype and device, last
 * stride 1, no overlapping elements */
static bool rope_kv_cache(const wk_tensor *qkv, const wk_tensor *c, const char *name, int64_t Hkv)
{
    if (!c) return wk_error(WK_ERR_ARGUMENT, "%s is NULL", name), false;
    if (WK_DEAD(c, name)) return false;
    if (c->st->dev != qkv->st->dev)
        return wk_error(WK_ERR_DEVICE, "qkv is on %s but %s is on %s", qkv->st->dev->name, name, c->st->dev->name), false;
    if (c->dtype != qkv->dtype)
        return wk_error(WK_ERR_DTYPE, "%s is %s, qkv %s", name, wk_dtype_name(c->dtype), wk_dtype_name(qkv->dtype)), false;
    if (c->rank != 4 || c->dims[0] != qkv->dims[0] || c->dims[1] != Hkv || c->dims[3] != qkv->dims[3])
        return wk_error(WK_ERR_SHAPE, "%s must be [%lld, %lld, C, %lld] (batch, KV heads, positions, head dim)", name,
                        (long long)qkv->dims[0], (long long)Hkv, (long long)qkv->dims[3]), false;
    if (c->dims[3] > 1 && c->strides[3] != 1) return wk_error(WK_ERR_SHAPE, "%s's last stride must be 1", name), false;
    if (wk_view_overlaps(c->rank, c->dims, c->strides))
        return wk_error(WK_ERR_SHAPE, "%s has overlapping elements (a broadcast view)", name), false;
    return true;
}

/* rope_kv of qkv; with x and w (linear_rope_kv's one row), qkv's data is
 * not read (it has none): the LINEAR_ROPE_KV op makes it as x . w^T */
static wk_tensor *rope_kv_run(const wk_tensor *qkv, int64_t n_q, const wk_tensor *cos, const wk_tensor *sin,
                              int64_t pos, const wk_tensor *pt, bool inter, wk_tensor *kc, wk_tensor *vc,
                              const wk_tensor *x, const wk_tensor *w)
{
    if (!nn_check_x(qkv, WK_OP_ROPE_KV, 4, "qkv")) return NULL;
    if (qkv->rank != 4) {
        wk_error(WK_ERR_SHAPE, "qkv must be rank 4 ([B, T, Hq + 2 Hkv, D]), got rank %d", qkv->rank);
        return NULL;
    }
    const int64_t B = qkv->dims[0], T = qkv->dims[1], D = qkv->dims[3];
    const int64_t Hkv = n_q >= 1 && n_q < qkv->dims[2] ? (qkv->dims[2] - n_q) / 2 : 0;
    if (n_q < 1 || Hkv < 1 || n_q + 2 * Hkv != qkv->dims[2]) {
        wk_error(WK_ERR_SHAPE, "qkv's %lld heads are not %lld query heads and two equal numbers of key and value heads",
                 (long long)qkv->dims[2], (long long)n_q);
        return NULL;
    }
    if (D % 2) {
        wk_error(WK_ERR_SHAPE, "head dim D must be even, got %lld", (long long)D);
        return NULL;
    }
    if (!rope_kv_cache(qkv, kc, "k_cache", Hkv) || !rope_kv_cache(qkv, vc, "v_cache", Hkv)) return NULL;
    if (wk_tensor_same_storage(kc, qkv) || wk_tensor_same_storage(vc, qkv) ||
        (wk_tensor_same_storage(kc, vc) && kc->offset == vc->offset)) {
        wk_error(WK_ERR_ARGUMENT, "the caches must not share qkv's storage, nor be one view");
        return NULL;
    }
    if (WK_DEAD(pt, "pos")) return NULL;
    if (pt) {
        if (pt->st->dev != qkv->st->dev) {
            wk_error(WK_ERR_DEVICE, "qkv is on %s but pos is on %s", qkv->st->dev->name, pt->st->dev->name);
            return NULL;
        }
        if ((pt->dtype != WK_U32 && pt->dtype != WK_I64) || wk_numel(pt->rank, pt->dims) != 1) {
            wk_error(WK_ERR_ARGUMENT, "pos must be one u32 or i64 element (%s with %lld elements given)",
                     wk_dtype_name(pt->dtype), (long long)wk_numel(pt->rank, pt->dims));
            return NULL;
        }
        pos = 0;
    } else if (pos < 0 || pos > kc->dims[2] - T || pos > vc->dims[2] - T) {
        wk_error(WK_ERR_INDEX, "positions %lld .. %lld are not all in the caches (%lld positions)", (long long)pos,
                 last_pos(pos, T), (long long)kc->dims[2]);
        return NULL;
    }
    wk_tensor *hc = rope_table(qkv, cos, "cos", D / 2);
    wk_tensor *hs = hc ? rope_table(qkv, sin, "sin", D / 2) : NULL;
    wk_tensor *out = NULL;
    if (hs && hc->dims[0] != hs->dims[0])
        wk_error(WK_ERR_SHAPE, "cos has %lld positions but sin has %lld", (long long)hc->dims[0], (long long)hs->dims[0]);
    else if (hs && !pt && pos > hc->dims[0] - T)
        wk_error(WK_ERR_INDEX, "positions %lld .. %lld are not all in the tables (%lld positions)", (long long)pos,
                 last_pos(pos, T), (long long)hc->dims[0]);
    else if (hs)
        out = wk_tensor_alloc(qkv->st->dev, qkv->dtype, 4, (const int64_t[]){ B, T, n_q, D });
    wk_tensor *hx = out ? nn_usable(qkv, D <= 1 || qkv->strides[3] == 1) : NULL;
    if (out && !hx) out = wk_finish(wk_last_status(), out);
    if (out && wk_numel(4, qkv->dims) > 0) {
        wk_view vx = wk_view_of(hx), vo = wk_view_of(out), vcs = wk_view_of(hc), vsn = wk_view_of(hs), vk = wk_view_of(kc),
                vv = wk_view_of(vc), vp;
        if (pt) vp = wk_view_of(pt);
        wk_rope_kv_params rp = { .k_cache = &vk, .v_cache = &vv, .n_q = n_q, .interleaved = inter };
        wk_op_args a = { .op = WK_OP_ROPE_KV, .dst = &vo, .src = { &vx, &vcs, &vsn, pt ? &vp : NULL },
                         .p = { (double)pos }, .params = &rp };
        wk_device *dev = qkv->st->dev;
        wk_status st;
        if (x) {
            /* the product is the op's own: rope_kv's view of it has no memory */
            nn_linear l;
            nn_linear_views(x, w, &l);
            vx.base = NULL;
            vx.offset = 0;
            wk_op_args la = { .op = WK_OP_LINEAR_ROPE_KV, .dst = &vo, .src = { &l.a, &l.b, &l.y }, .params = &a };
            st = wk_run(dev, &la);
        } else {
            st = wk_run(dev, &a);
        }
        if (st == WK_OK) WK_FAULT(x ? WK_OP_LINEAR_ROPE_KV : WK_OP_ROPE_KV, out);
        out = wk_finish(st, out);
    }
    wk_release(hx);
    wk_release(hc);
    wk_release(hs);
    return out;
}

static wk_tensor *rope_kv_impl(const wk_tensor *qkv, int64_t n_q, const wk_tensor *cos, const wk_tensor *sin,
                               int64_t pos, const wk_tensor *pt, bool inter, wk_tensor *kc, wk_tensor *vc)
{
    return rope_kv_run(qkv, n_q, cos, sin, pos, pt, inter, kc, vc, NULL, NULL);
}

wk_tensor *wk_rope_kv(const wk_tensor *qkv, int64_t n_q, const wk_tensor *cos, const wk_tensor *sin, int64_t pos_offset,
                      const wk_tensor *pos, bool interleaved, wk_tensor *k_cache, wk_tensor *v_cache)
    WK_API(wk_tensor *, "rope_kv", rope_kv_impl(qkv, n_q, cos, sin, pos_offset, pos, interleaved, k_cache, v_cache))

/* rope_kv of qkv = x . w^T as [1, T, H, D] (D twice cos's last dim): the
 * product as wk_matmul (dense w, x's dtype) or wk_qmatmul (block-quantized
 * w) makes it, then wk_rope_kv, so the result has the bits of those calls;
 * one row of a dense w is the device's LINEAR_ROPE_KV op where it has it
 * (and the caches share neither x's storage nor w's): the same bits, in
 * one launch on a GPU whose kernel takes the operands. */
static wk_tensor *linear_rope_kv_impl(const wk_tensor *x, const wk_tensor *w, int64_t n_q, const wk_tensor *cos,
                                      const wk_tensor *sin, int64_t pos, const wk_tensor *pt, bool inter,
                                      wk_tensor *kc, wk_tensor *vc)
{
    const wk_tensor *ts[2] = { x, w };
    static const char *const names[2] = { "x", "w" };
    if (!wk_check_tensors(2, ts, names)) return NULL;
    const bool quant = nn_via_qmatmul(x, w);
    if (x->rank != 2 || w->rank != 2 || x->dims[1] != w->dims[1]) {
        wk_error(WK_ERR_SHAPE, "x must be [T, K] and w [H D, K]; x has rank %d, w rank %d%s", x->rank, w->rank,
                 x->rank == 2 && w->rank == 2 ? " and another K" : "");
        return NULL;
    }
    if (!quant && w->dtype != x->dtype) {
        wk_error(WK_ERR_DTYPE, "a dense w has x's dtype, or is f16/bf16; x is %s, w %s", wk_dtype_name(x->dtype),
                 wk_dtype_name(w->dtype));
        return NULL;
    }
    if (!cos || cos->rank != 2 || cos->dims[1] < 1) {
        wk_error(WK_ERR_SHAPE, "cos must be [n_pos, D/2] (it gives the head dim D)");
        return NULL;
    }
    const int64_t D = 2 * cos->dims[1], T = x->dims[0], K = x->dims[1];
    if (w->dims[0] % D != 0) {
        wk_error(WK_ERR_SHAPE, "w's %lld rows are not whole heads of D = %lld (twice cos's last dim)",
                 (long long)w->dims[0], (long long)D);
        return NULL;
    }
    const int64_t H = w->dims[0] / D;
    wk_device *dev = x->st->dev;
    if (!quant && T == 1 && K > 0 && wk_device_supports(dev, WK_OP_LINEAR_ROPE_KV, x->dtype) && w->st->dev == dev &&
        w->strides[1] == 1 && wk_tensor_is_contiguous(x) && kc && vc && !wk_tensor_same_storage(kc, x) &&
        !wk_tensor_same_storage(kc, w) && !wk_tensor_same_storage(vc, x) && !wk_tensor_same_storage(vc, w)) {
        /* qkv: its shape and dtype for rope_kv's checks; the op makes its values */
        wk_tensor *qkv = wk_tensor_alloc(dev, x->dtype, 4, (const int64_t[]){ 1, 1, H, D });
        wk_tensor *q = qkv ? rope_kv_run(qkv, n_q, cos, sin, pos, pt, inter, kc, vc, x, w) : NULL;
        wk_release(qkv);
        return q;
    }
    /* the two calls */
    wk_tensor *wt = quant ? NULL : wk_transpose(w, 0, 1);
    wk_tensor *y = quant ? wk_qmatmul(x, w) : wt ? wk_matmul(x, wt) : NULL;
    wk_tensor *qkv = y ? wk_reshape(y, WK_SHAPE(1, T, H, D)) : NULL;
    wk_tensor *q = qkv ? rope_kv_impl(qkv, n_q, cos, sin, pos, pt, inter, kc, vc) : NULL;
    wk_release(qkv);
    wk_release(y);
    wk_release(wt);
    return q;
}

wk_tensor *wk_linear_rope_kv(const wk_tensor *x, const wk_tensor *w, int64_t n_q, const wk_tensor *cos,
                             const wk_tensor *sin, int64_t pos_offset, const wk_tensor *pos, bool interleaved,
                             wk_tensor *k_cache, wk_tensor *v_cache)
    WK_API(wk_tensor *, "linear_rope_kv",
           linear_rope_kv_impl(x, w, n_q, cos, sin, pos_offset, pos, interleaved, k_cache, v_cache))

/* inverse frequency i of a head of dim D, scaled as asked */
static double rope_inv_freq(int64_t i, int64_t D, double base, const wk_rope_scaling *sc)
{
    double f = pow(base, -(double)(2 * i) / (double)D);
    if (!sc || sc->type != WK_ROPE_SCALING_LLAMA3) return f;
    const double pi = 3.14159265358979323846;
    double lo_wl = sc->original_max_position / sc->low_freq_factor;
    double hi_wl = sc->original_max_position / sc->high_freq_factor;
    double wl = 2 * pi / f;
    if (wl < hi_wl) return f;
    if (wl > lo_wl) return f / sc->factor;
    double smooth = (sc->original_max_position / wl - sc->low_freq_factor) /
                    (sc->high_freq_factor - sc->low_freq_factor);
    return (1 - smooth) * f / sc->factor + smooth * f;
}

static wk_status rope_tables_impl(wk_device *dev, int64_t D, double base, int64_t n_pos, const wk_rope_scaling *sc,
                                  wk_tensor **cos_out, wk_tensor **sin_out)
{
    if (!cos_out || !sin_out) return wk_error(WK_ERR_ARGUMENT, "cos and sin must not be NULL");
    *cos_out = *sin_out = NULL;
    if (!dev) return wk_error(WK_ERR_ARGUMENT, "device is NULL");
    if (D <= 0 || D % 2) return wk_error(WK_ERR_SHAPE, "head_dim must be even and > 0, got %lld", (long long)D);
    if (n_pos < 0) return wk_error(WK_ERR_SHAPE, "n_pos must be >= 0, got %lld", (long long)n_pos);
    if (!(base > 0) || !isfinite(base)) return wk_error(WK_ERR_ARGUMENT, "base must be finite and > 0, got %g", base);
    if (sc && sc->type != WK_ROPE_SCALING_NONE) {
        if (sc->type != WK_ROPE_SCALING_LINEAR && sc->type != WK_ROPE_SCALING_LLAMA3)
            return wk_error(WK_ERR_ARGUMENT, "unknown rope scaling type %d", (int)sc->type);
        if (!(sc->factor > 0) || !isfinite(sc->factor))
            return wk_error(WK_ERR_ARGUMENT, "scaling factor must be finite and > 0, got %g", sc->factor);
        if (sc->type == WK_ROPE_SCALING_LLAMA3 &&
            (!(sc->low_freq_factor > 0) || !(sc->high_freq_factor > sc->low_freq_factor) ||
             !(sc->original_max_position > 0)))
            return wk_error(WK_ERR_ARGUMENT,
                            "llama3 scaling needs 0 < low_freq_factor < high_freq_factor and "
                            "original_max_position > 0 (got %g, %g, %g)",
                            sc->low_freq_factor, sc->high_freq_factor, sc->original_max_position);
    }
    const int64_t half = D / 2, dims[2] = { n_pos, half };
    /* the tables on the device first: sizes it cannot hold (2^40 positions)
     * fail here, at once, before any value is computed */
    wk_tensor *c = wk_tensor_alloc(dev, WK_F32, 2, dims);
    wk_tensor *s = c ? wk_tensor_alloc(dev, WK_F32, 2, dims) : NULL;
    /* then filled a block of positions at a time from a bounded host buffer */
    const int64_t rows = half >= (1 << 16) ? 1 : (1 << 16) / half;
    const int64_t chunk = (n_pos < rows ? n_pos : rows) * half;
    const bool fill = s && n_pos > 0;   /* then half floats fit on the device: half doubles fit here */
    float *buf = fill ? malloc((size_t)chunk * 2 * sizeof(float)) : NULL;
    double *freq = buf ? malloc((size_t)half * sizeof(double)) : NULL;
    wk_status st = s ? WK_OK : wk_last_status();
    if (fill && !freq) st = wk_error(WK_ERR_MEMORY, "out of host memory for %lld table entries", (long long)chunk);
    const double pscale = sc && sc->type == WK_ROPE_SCALING_LINEAR ? 1.0 / sc->factor : 1.0;
    for (int64_t i = 0; fill && st == WK_OK && i < half; i++) freq[i] = rope_inv_freq(i, D, base, sc);
    for (int64_t p0 = 0; st == WK_OK && p0 < n_pos; p0 += rows) {
        const int64_t r = n_pos - p0 < rows ? n_pos - p0 : rows, m = r * half;
        for (int64_t p = 0; p < r; p++)
            for (int64_t i = 0; i < half; i++) {
                double ang = (double)(p0 + p) * pscale * freq[i];
                buf[p * half + i] = (float)cos(ang);
                buf[m + p * half + i] = (float)sin(ang);
            }
        const int64_t pd[2] = { r, half };
        wk_tensor *vc = wk_tensor_view(c, 2, pd, c->strides, p0 * half);
        wk_tensor *vs = vc ? wk_tensor_view(s, 2, pd, s->strides, p0 * half) : NULL;
        st = !vs ? wk_last_status() : wk_write(vc, buf, (size_t)m * sizeof(float));
        if (st == WK_OK) st = wk_write(vs, buf + m, (size_t)m * sizeof(float));
        wk_release(vc);
        wk_release(vs);
    }
    free(freq);
    free(buf);
    if (st != WK_OK) {
        wk_release(c);
        wk_release(s);
        return st;
    }
    *cos_out = c;
    *sin_out = s;
    return WK_OK;
}

wk_status wk_rope_tables(wk_device *dev, int64_t head_dim, double base, int64_t n_pos, const wk_rope_scaling *scaling,
                         wk_tensor **cos, wk_tensor **sin)
    WK_API(wk_status, "rope_tables", rope_tables_impl(dev, head_dim, base, n_pos, scaling, cos, sin))

/* ---- attention ------------------------------------------------------------------- */

static wk_tensor *attention_impl(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                 const wk_attention_opts *opts)
{
    const wk_tensor *ts[3] = { q, k, v };
    static const char *const names[3] = { "q", "k", "v" };
    if (!wk_check_tensors(3, ts, names)) return NULL;
    if (!wk_check_same_dtype(q, k, "q", "k") || !wk_check_same_dtype(q, v, "q", "v")) return NULL;
    if (q->rank != 4 || k->rank != 4 || v->rank != 4) {
        wk_error(WK_ERR_SHAPE, "q, k and v must be rank 4 ([B, H, T, D]), got ranks %d, %d, %d", q->rank, k->rank,
                 v->rank);
        return NULL;
    }
    wk_attention_opts o = { 0 };
    if (opts) o = *opts;
    int64_t B = q->dims[0], Hq = q->dims[1], Tq = q->dims[2], D = q->dims[3];
    int64_t Hkv = k->dims[1], Tk = k->dims[2];
    if (k->dims[0] != B || v->dims[0] != B) {
        wk_error(WK_ERR_SHAPE, "batch sizes differ: q %lld, k %lld, v %lld", (long long)B, (long long)k->dims[0],
                 (long long)v->dims[0]);
        return NULL;
    }
    if (memcmp(k->dims, v->dims, 4 * sizeof k->dims[0]) != 0) {
        wk_error(WK_ERR_SHAPE, "k [%lld, %lld, %lld, %lld] and v [%lld, %lld, %lld, %lld] must have one shape",
                 (long long)k->dims[0], (long long)k->dims[1], (long long)k->dims[2], (long long)k->dims[3],
                 (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2], (long long)v->dims[3]);
        return NULL;
    }
    if (k->dims[3] != D) {
        wk_error(WK_ERR_SHAPE, "head dims differ: q has D = %lld, k and v %lld", (long long)D, (long long)k->dims[3]);
        return NULL;
    }
    if (Hkv == 0 ? Hq != 0 : Hq % Hkv != 0) {
        wk_error(WK_ERR_SHAPE, "query heads (%lld) must be a multiple of key/value heads (%lld)", (long long)Hq,
                 (long long)Hkv);
        return NULL;
    }
    if (o.window < 0) {
        wk_error(WK_ERR_ARGUMENT, "window must be >= 0 (0: none), got %lld", (long long)o.window);
        return NULL;
    }
    /* without kv_len a query's position is at most Tk - 1: a window of Tk
     * keys or more leaves none out, it is no window (and the kernels'
     * pos - window stays far from 2^63) */
    if (!o.kv_len && o.window >= Tk) o.window = 0;
    if (!(o.softcap >= 0) || !isfinite(o.softcap) || !isfinite(o.scale)) {
        wk_error(WK_ERR_ARGUMENT, "softcap must be finite and >= 0 and scale finite (got %g, %g)", o.softcap,
                 o.scale);
        return NULL;
    }
    wk_device *dev = q->st->dev;
    if (WK_DEAD(o.mask, "mask") || WK_DEAD(o.kv_len, "kv_len")) return NULL;
    if (o.mask && o.mask->st->dev != dev) {
        wk_error(WK_ERR_DEVICE, "q is on %s but mask is on %s", dev->name, o.mask->st->dev->name);
        return NULL;
    }
    if (o.mask && (!wk_dtype_is_float(o.mask->dtype) || wk_dt_is_quant(o.mask->dtype))) {
        wk_error(WK_ERR_DTYPE, "mask must be a float tensor, not %s", wk_dtype_name(o.mask->dtype));
        return NULL;
    }
    if (o.kv_len && o.kv_len->st->dev != dev) {
        wk_error(WK_ERR_DEVICE, "q is on %s but kv_len is on %s", dev->name, o.kv_len->st->dev->name);
        return NULL;
    }
    if (o.kv_len && ((o.kv_len->dtype != WK_U32 && o.kv_len->dtype != WK_I64) ||
                     wk_numel(o.kv_len->rank, o.kv_len->dims) != 1)) {
        wk_error(o.kv_len->dtype != WK_U32 && o.kv_len->dtype != WK_I64 ? WK_ERR_DTYPE : WK_ERR_SHAPE,
                 "kv_len must be one u32 or i64 element, not %lld of %s",
                 (long long)wk_numel(o.kv_len->rank, o.kv_len->dims), wk_dtype_name(o.kv_len->dtype));
        return NULL;
    }
    if (!wk_check_supported(dev, WK_OP_ATTENTION, q->dtype)) return NULL;
    const int64_t mdims[4] = { B, Hq, Tq, Tk };
    int64_t mstr[4];
    if (o.mask && !wk_broadcast_strides(o.mask, 4, mdims, mstr)) return NULL;
    const int64_t odims[4] = { B, Hq, Tq, D };
    wk_tensor *out = wk_tensor_alloc(dev, q->dtype, 4, odims);
    if (!out || wk_numel(4, odims) == 0) return out;
    if (Tk == 0) return wk_finish(wk_fill_zero(out), out);
    wk_tensor *h[4] = { NULL, NULL, NULL, NULL };
    wk_status st = WK_OK;
    for (int i = 0; i < 3; i++)
        if (!(h[i] = nn_usable(ts[i], D <= 1 || ts[i]->strides[3] == 1))) st = wk_last_status();
    if (st == WK_OK && o.mask) {
        h[3] = o.mask->dtype == WK_F32 ? wk_retain((wk_tensor *)o.mask) : wk_to_dtype(o.mask, WK_F32);
        if (!h[3] || !wk_broadcast_strides(h[3], 4, mdims, mstr)) st = wk_last_status();
    }
    if (st == WK_OK) {
        wk_view vq = wk_view_of(h[0]), vk = wk_view_of(h[1]), vv = wk_view_of(h[2]), vo = wk_view_of(out), vm;
        if (h[3]) {
            vm = wk_view_of(h[3]);
            vm.rank = 4;
            for (int d = 0; d < WK_MAX_RANK; d++) {
                vm.dims[d] = d < 4 ? mdims[d] : 0;
                vm.strides[d] = d < 4 ? mstr[d] : 0;
            }
        }
        wk_view vl = o.kv_len ? wk_view_of(o.kv_len) : (wk_view){ 0 };
        wk_attention_params p = { .scale = o.scale != 0 ? o.scale : 1.0 / sqrt((double)D),
                                  .softcap = o.softcap, .window = o.window, .causal = o.causal,
                                  .kv_len = o.kv_len ? &vl : NULL };
        wk_op_args a = { .op = WK_OP_ATTENTION, .dst = &vo, .src = { &vq, &vk, &vv, h[3] ? &vm : NULL },
                         .params = &p };
        st = wk_run(dev, &a);
    }
    for (int i = 0; i < 4; i++) wk_release(h[i]);
    if (st == WK_OK) WK_FAULT(WK_OP_ATTENTION, out);
    return wk_finish(st, out);
}

wk_tensor *wk_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_attention_opts *opts)
    WK_API(wk_tensor *, "attention", attention_impl(q, k, v, opts))

/* ---- the gate/up projection with its SwiGLU gate ------------------------ */

/* The LINEAR_SILU_MUL op into out (x's dims, the last F) for one row x of
 * a dense w [2F, K]: the product, then SILU_MUL of its halves as
 * wk_silu_mul runs it on them. */
static wk_status linear_silu_mul_run(const wk_tensor *x, const wk_tensor *w, wk_tensor *out)
{
    nn_linear l;
    nn_linear_views(x, w, &l);
    const int r = l.y.rank;
    const int64_t F = w->dims[0] / 2;
    wk_view d = wk_view_of(out), g = l.y, u = l.y;
    g.dims[r - 1] = u.dims[r - 1] = F;
    u.offset = F;
    d.rank = r;
    memcpy(d.dims, g.dims, sizeof d.dims);
    wk_contiguous_strides(r, d.dims, d.strides);
    wk_view *vs[3] = { &d, &g, &u };
    wk_views_coalesce(3, vs);
    wk_op_args t = { .op = WK_OP_SILU_MUL, .dst = &d, .src = { &g, &u } };
    wk_op_args a = { .op = WK_OP_LINEAR_SILU_MUL, .dst = &d, .src = { &l.a, &l.b, &l.y }, .params = &t };
    return wk_run(x->st->dev, &a);
}

/* silu(x . w[:F]^T) * (x . w[F:]^T) for w [2F, K]: the product as
 * wk_matmul (dense w, x's dtype) or wk_qmatmul (block-quantized w) makes
 * it, then wk_silu_mul of its two halves, so the result has the bits of
 * those calls; one row of a dense w is the device's LINEAR_SILU_MUL op
 * where it has it: the same bits, in one launch on a GPU whose kernel
 * takes the operands. */
static wk_tensor *linear_silu_mul_impl(const wk_tensor *x, const wk_tensor *w)
{
    const wk_tensor *ts[2] = { x, w };
    static const char *const names[2] = { "x", "w" };
    if (!wk_check_tensors(2, ts, names)) return NULL;
    const bool quant = nn_via_qmatmul(x, w);
    if (w->rank != 2 || w->dims[0] % 2 || x->rank < 1 || x->dims[x->rank - 1] != w->dims[1]) {
        wk_error(WK_ERR_SHAPE,
                 "w must be [2F, K] (the gate's F rows, then the up projection's) and x [..., K]; x "
                 "has rank %d and last dim %lld, w rank %d and dims [%lld, %lld]",
                 x->rank, (long long)(x->rank ? x->dims[x->rank - 1] : 0), w->rank,
                 (long long)(w->rank ? w->dims[0] : 0), (long long)(w->rank > 1 ? w->dims[1] : 0));
        return NULL;
    }
    if (!quant && w->dtype != x->dtype) {
        wk_error(WK_ERR_DTYPE, "a dense w has x's dtype, or is f16/bf16; x is %s, w %s", wk_dtype_name(x->dtype),
                 wk_dtype_name(w->dtype));
        return NULL;
    }
    const int64_t F = w->dims[0] / 2, K = w->dims[1];
    /* one row of a dense w: the device's LINEAR_SILU_MUL */
    wk_device *dev = x->st->dev;
    if (!quant && F > 0 && K > 0 && wk_numel(x->rank, x->dims) == K && w->strides[1] == 1 &&
        wk_tensor_is_contiguous(x) && wk_device_supports(dev, WK_OP_LINEAR_SILU_MUL, x->dtype)) {
        int64_t od[WK_MAX_RANK];
        for (int i = 0; i < x->rank; i++) od[i] = x->dims[i];
        od[x->rank - 1] = F;
        wk_tensor *out = wk_tensor_alloc(dev, x->dtype, x->rank, od);
        if (!out) return NULL;
        const wk_status st = linear_silu_mul_run(x, w, out);
        if (st == WK_OK) WK_FAULT(WK_OP_LINEAR_SILU_MUL, out);
        return wk_finish(st, out);
    }
    /* a vector x as one row for the dense product (wk_matmul wants rank >= 2) */
    wk_tensor *xr = !quant && x->rank == 1 ? wk_reshape(x, WK_SHAPE(1, x->dims[0])) : wk_retain((wk_tensor *)x);
    wk_tensor *wt = quant ? NULL : wk_transpose(w, 0, 1);
    wk_tensor *gu = !xr ? NULL : quant ? wk_qmatmul(xr, w) : wt ? wk_matmul(xr, wt) : NULL;
    const int gl = gu ? wk_tensor_rank(gu) - 1 : 0;
    wk_tensor *g = gu ? wk_narrow(gu, gl, 0, F) : NULL, *u = gu ? wk_narrow(gu, gl, F, F) : NULL;
    wk_tensor *y = g && u ? wk_silu_mul(g, u) : NULL;
    if (y && !quant && x->rank == 1) {
        wk_tensor *v = wk_reshape(y, WK_SHAPE(F));
        wk_release(y);
        y = v;
    }
    wk_release(u);
    wk_release(g);
    wk_release(gu);
    wk_release(wt);
    wk_release(xr);
    return y;
}

wk_tensor *wk_linear_silu_mul(const wk_tensor *x, const wk_tensor *w)
    WK_API(wk_tensor *, "linear_silu_mul", linear_silu_mul_impl(x, w))
