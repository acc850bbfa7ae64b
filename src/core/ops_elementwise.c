/* ops_elementwise.c — front-end of the elementwise ops: unary (and affine,
 * powf, elu), binary with broadcasting, comparisons, where. Each op:
 * validate, compute the output shape, allocate, express inputs as views
 * broadcast to the output's dims, coalesce, run the backend's op. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"

/* ---- output layout -------------------------------------------------------- */

/* An elementwise result whose inputs are all laid out densely in one
 * order other than row-major (a transposed or permuted tensor, with no
 * broadcast) takes that layout too, as in PyTorch: the op then streams
 * through memory instead of transposing. out is fresh (row-major) with
 * the inputs' dims; b may be NULL. */
static void keep_dense_layout(wk_tensor *out, const wk_tensor *a, const wk_tensor *b)
{
    int64_t st[WK_MAX_RANK];
    if (a->rank != out->rank || memcmp(a->dims, out->dims, (size_t)out->rank * sizeof(int64_t)) != 0) return;
    if (!wk_layout_dense_permuted(a->rank, a->dims, a->strides, st)) return;
    if (b && (b->rank != a->rank || memcmp(b->dims, a->dims, (size_t)a->rank * sizeof(int64_t)) != 0 ||
              memcmp(b->strides, a->strides, (size_t)a->rank * sizeof(int64_t)) != 0))
        return;
    memcpy(out->strides, st, (size_t)out->rank * sizeof(int64_t));
}

/* ---- unary -------------------------------------------------------------- */

static wk_tensor *unary_impl(wk_op op, const wk_tensor *t, double p0, double p1)
{
    if (!WK_CHECK_T(t)) return NULL;
    wk_device *dev = t->st->dev;
    if (!wk_check_supported(dev, op, t->dtype)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, t->dtype, t->rank, t->dims);
    if (!out) return NULL;
    keep_dense_layout(out, t, NULL);
    wk_status st = WK_OK;
    if (wk_numel(t->rank, t->dims) > 0) {
        wk_view d = wk_view_of(out), s = wk_view_of(t);
        wk_view *vs[2] = { &d, &s };
        wk_views_coalesce(2, vs);
        wk_op_args a = { .op = op, .dst = &d, .src = { &s }, .p = { p0, p1 } };
        st = wk_run(dev, &a);
    }
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

static wk_tensor *unary_entry(wk_op op, const wk_tensor *t, double p0, double p1)
    WK_API(wk_tensor *, wk_op_name(op), unary_impl(op, t, p0, p1))

wk_tensor *wk_unary(wk_unary_op op, const wk_tensor *t)
{
    if ((unsigned)op >= WK_UNARY_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "unary: invalid op %d", (int)op);
        return NULL;
    }
    return unary_entry(wk_op_of_unary(op), t, 0, 0);
}

#define UNARY_FN(name, OP) \
    wk_tensor *wk_##name(const wk_tensor *t) { return unary_entry(OP, t, 0, 0); }
UNARY_FN(exp, WK_OP_EXP)
UNARY_FN(log, WK_OP_LOG)
UNARY_FN(sin, WK_OP_SIN)
UNARY_FN(cos, WK_OP_COS)
UNARY_FN(tanh, WK_OP_TANH)
UNARY_FN(abs, WK_OP_ABS)
UNARY_FN(neg, WK_OP_NEG)
UNARY_FN(recip, WK_OP_RECIP)
UNARY_FN(sqr, WK_OP_SQR)
UNARY_FN(sqrt, WK_OP_SQRT)
UNARY_FN(gelu, WK_OP_GELU)
UNARY_FN(gelu_erf, WK_OP_GELU_ERF)
UNARY_FN(erf, WK_OP_ERF)
UNARY_FN(relu, WK_OP_RELU)
UNARY_FN(silu, WK_OP_SILU)
UNARY_FN(floor, WK_OP_FLOOR)
UNARY_FN(ceil, WK_OP_CEIL)
UNARY_FN(round, WK_OP_ROUND)
UNARY_FN(sign, WK_OP_SIGN)
UNARY_FN(sigmoid, WK_OP_SIGMOID)

wk_tensor *wk_affine(const wk_tensor *t, double mul, double add) { return unary_entry(WK_OP_AFFINE, t, mul, add); }
wk_tensor *wk_powf(const wk_tensor *t, double e) { return unary_entry(WK_OP_POWF, t, e, 0); }
wk_tensor *wk_elu(const wk_tensor *t, double alpha) { return unary_entry(WK_OP_ELU, t, alpha, 0); }

/* ---- binary and cmp --------------------------------------------------------- */

static wk_tensor *binary_impl(wk_op op, bool cmp, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *ts[2] = { a, b };
    static const char *const names[2] = { "a", "b" };
    if (!wk_check_tensors(2, ts, names) || !wk_check_same_dtype(a, b, "a", "b")) return NULL;
    wk_device *dev = a->st->dev;
    if (!wk_check_supported(dev, op, a->dtype)) return NULL;
    int rank;
    int64_t dims[WK_MAX_RANK];
    if (!wk_broadcast_shapes(a->rank, a->dims, b->rank, b->dims, &rank, dims)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, cmp ? WK_U8 : a->dtype, rank, dims);
    if (!out) return NULL;
    keep_dense_layout(out, a, b);
    wk_status st = WK_OK;
    if (wk_numel(rank, dims) > 0) {
        wk_view d = wk_view_of(out), va = wk_view_of(a), vb = wk_view_of(b);
        va.rank = vb.rank = rank;
        memcpy(va.dims, dims, sizeof va.dims);
        memcpy(vb.dims, dims, sizeof vb.dims);
        wk_broadcast_strides(a, rank, dims, va.strides);
        wk_broadcast_strides(b, rank, dims, vb.strides);
        wk_view *vs[3] = { &d, &va, &vb };
        wk_views_coalesce(3, vs);
        wk_op_args args = { .op = op, .dst = &d, .src = { &va, &vb } };
        st = wk_run(dev, &args);
    }
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

static wk_tensor *binary_entry(wk_op op, const wk_tensor *a, const wk_tensor *b)
    WK_API(wk_tensor *, wk_op_name(op), binary_impl(op, false, a, b))
static wk_tensor *cmp_entry(wk_op op, const wk_tensor *a, const wk_tensor *b)
    WK_API(wk_tensor *, wk_op_name(op), binary_impl(op, true, a, b))

wk_tensor *wk_binary(wk_binary_op op, const wk_tensor *a, const wk_tensor *b)
{
    if ((unsigned)op >= WK_BINARY_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "binary: invalid op %d", (int)op);
        return NULL;
    }
    return binary_entry(wk_op_of_binary(op), a, b);
}

wk_tensor *wk_cmp(wk_cmp_op op, const wk_tensor *a, const wk_tensor *b)
{
    if ((unsigned)op >= WK_CMP_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "cmp: invalid op %d", (int)op);
        return NULL;
    }
    return cmp_entry(wk_op_of_cmp(op), a, b);
}

wk_tensor *wk_add(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_ADD, a, b); }
wk_tensor *wk_sub(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_SUB, a, b); }
wk_tensor *wk_mul(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MUL, a, b); }
wk_tensor *wk_div(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_DIV, a, b); }
wk_tensor *wk_minimum(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MINIMUM, a, b); }
wk_tensor *wk_maximum(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MAXIMUM, a, b); }
wk_tensor *wk_silu_mul(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_SILU_MUL, a, b); }

/* ---- where ------------------------------------------------------------------- */

static wk_tensor *where_impl(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *ts[3] = { cond, a, b };
    static const char *const names[3] = { "cond", "a", "b" };
    if (!wk_check_tensors(3, ts, names)) return NULL;
    if (cond->dtype != WK_U8 && cond->dtype != WK_U32 && cond->dtype != WK_I64) {
        wk_error(WK_ERR_DTYPE, "cond must be u8, u32 or i64, not %s", wk_dtype_name(cond->dtype));
        return NULL;
    }
    if (!wk_check_same_dtype(a, b, "a", "b")) return NULL;
    wk_device *dev = a->st->dev;
    if (!wk_check_supported(dev, WK_OP_WHERE, a->dtype)) return NULL;
    int r1, rank;
    int64_t d1[WK_MAX_RANK], dims[WK_MAX_RANK];
    if (!wk_broadcast_shapes(a->rank, a->dims, b->rank, b->dims, &r1, d1)) return NULL;
    if (!wk_broadcast_shapes(cond->rank, cond->dims, r1, d1, &rank, dims)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, a->dtype, rank, dims);
    if (!out) return NULL;
    wk_status st = WK_OK;
    if (wk_numel(rank, dims) > 0) {
        wk_view d = wk_view_of(out), vc = wk_view_of(cond), va = wk_view_of(a), vb = wk_view_of(b);
        wk_view *vs[4] = { &d, &vc, &va, &vb };
        for (int k = 1; k < 4; k++) {
            vs[k]->rank = rank;
            memcpy(vs[k]->dims, dims, sizeof dims);
            wk_broadcast_strides(ts[k - 1], rank, dims, vs[k]->strides);
        }
        wk_views_coalesce(4, vs);
        wk_op_args args = { .op = WK_OP_WHERE, .dst = &d, .src = { &vc, &va, &vb } };
        st = wk_run(dev, &args);
    }
    return wk_finish(st, out);
}

wk_tensor *wk_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b)
    WK_API(wk_tensor *, "where_cond", where_impl(cond, a, b))

