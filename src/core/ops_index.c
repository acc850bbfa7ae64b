/* ops_index.c — front-end of the indexing ops: index_select, gather
 * (out of place) and scatter_set, scatter_add, index_add (in place).
 * Shapes are checked here; ids are data, so their range is checked by the
 * backend before it writes anything. */
#include <string.h>
#include "core.h"

static bool ids_dtype_ok(const wk_tensor *ids)
{
    if (ids->dtype == WK_U8 || ids->dtype == WK_U32 || ids->dtype == WK_I64) return true;
    wk_error(WK_ERR_DTYPE, "ids must be u8, u32 or i64, not %s", wk_dtype_name(ids->dtype));
    return false;
}

/* a and b have one rank and equal dims except at dim */
static bool same_except(const wk_tensor *a, const char *an, const wk_tensor *b, const char *bn, int dim)
{
    if (a->rank != b->rank) {
        wk_error(WK_ERR_SHAPE, "%s has rank %d, %s has rank %d", an, a->rank, bn, b->rank);
        return false;
    }
    for (int d = 0; d < a->rank; d++)
        if (d != dim && a->dims[d] != b->dims[d]) {
            wk_error(WK_ERR_SHAPE, "%s has size %lld at dim %d, %s has %lld", an, (long long)a->dims[d], d, bn,
                     (long long)b->dims[d]);
            return false;
        }
    return true;
}

static wk_tensor *select_impl(wk_op op, const wk_tensor *t, const wk_tensor *ids, int dim)
{
    const wk_tensor *ts[2] = { t, ids };
    static const char *const names[2] = { "source", "ids" };
    if (!wk_check_tensors(2, ts, names) || !ids_dtype_ok(ids)) return NULL;
    int d = wk_norm_dim(dim, t->rank);
    if (d < 0) return NULL;
    wk_device *dev = t->st->dev;
    if (!wk_check_supported(dev, op, t->dtype)) return NULL;
    int64_t dims[WK_MAX_RANK];
    if (op == WK_OP_INDEX_SELECT) {
        if (ids->rank != 1) {
            wk_error(WK_ERR_SHAPE, "ids must be 1-d, not rank %d", ids->rank);
            return NULL;
        }
        memcpy(dims, t->dims, sizeof dims);
        dims[d] = ids->dims[0];
    } else {
        if (!same_except(ids, "ids", t, "source", d)) return NULL;
        memcpy(dims, ids->dims, sizeof dims);
    }
    wk_tensor *out = wk_tensor_alloc(dev, t->dtype, t->rank, dims);
    if (!out) return NULL;
    wk_status st = WK_OK;
    if (wk_numel(t->rank, dims) > 0) {
        if (t->dims[d] == 0) {
            st = wk_error(WK_ERR_INDEX, "dim %d of the source is empty: every id is out of range", dim);
        } else {
            wk_view vd = wk_view_of(out), vs = wk_view_of(t), vi = wk_view_of(ids);
            st = op == WK_OP_INDEX_SELECT ? dev->be->index_select(dev->ctx, &vd, &vs, &vi, d)
                                          : dev->be->gather(dev->ctx, &vd, &vs, &vi, d);
        }
    }
    return wk_finish(st, out);
}

wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim)
{
    WK_ENTER("index_select");
    wk_tensor *r = select_impl(WK_OP_INDEX_SELECT, t, ids, dim);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim)
{
    WK_ENTER("gather");
    wk_tensor *r = select_impl(WK_OP_GATHER, t, ids, dim);
    WK_LEAVE();
    return r;
}

/* Copies a that shares storage with dst, so reading it cannot see writes. */
static const wk_tensor *unaliased(const wk_tensor *a, const wk_tensor *dst, wk_tensor **tmp)
{
    *tmp = NULL;
    if (a->st != dst->st) return a;
    *tmp = wk_copy(a);
    return *tmp;
}

static wk_status write_impl(wk_op op, wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
{
    const wk_tensor *ts[3] = { dst, ids, src };
    static const char *const names[3] = { "dst", "ids", "src" };
    if (!wk_check_tensors(3, ts, names) || !ids_dtype_ok(ids)) return wk_last_status();
    if (src->dtype != dst->dtype)
        return wk_error(WK_ERR_DTYPE, "src is %s, dst is %s", wk_dtype_name(src->dtype), wk_dtype_name(dst->dtype));
    int d = wk_norm_dim(dim, dst->rank);
    if (d < 0) return wk_last_status();
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, op, dst->dtype)) return wk_last_status();
    if (op == WK_OP_INDEX_ADD) {
        if (ids->rank != 1) return wk_error(WK_ERR_SHAPE, "ids must be 1-d, not rank %d", ids->rank);
        if (!same_except(src, "src", dst, "dst", d)) return wk_last_status();
        if (src->dims[d] != ids->dims[0])
            return wk_error(WK_ERR_SHAPE, "src has %lld entries on dim %d but there are %lld ids",
                            (long long)src->dims[d], dim, (long long)ids->dims[0]);
    } else {
        if (!same_except(ids, "ids", src, "src", -1) || !same_except(ids, "ids", dst, "dst", d)) return wk_last_status();
    }
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_SHAPE, "destination has overlapping elements (a broadcast view)");
    if (wk_numel(src->rank, src->dims) == 0) return WK_OK;
    if (dst->dims[d] == 0) return wk_error(WK_ERR_INDEX, "dim %d of dst is empty: every id is out of range", dim);
    wk_tensor *t1, *t2;
    const wk_tensor *s = unaliased(src, dst, &t1), *i = unaliased(ids, dst, &t2);
    wk_status st;
    if (!s || !i) {
        st = wk_last_status();
    } else {
        wk_view vd = wk_view_of(dst), vi = wk_view_of(i), vs = wk_view_of(s);
        st = op == WK_OP_INDEX_ADD ? dev->be->index_add(dev->ctx, &vd, &vi, &vs, d)
                                   : dev->be->scatter(dev->ctx, op, &vd, &vi, &vs, d);
    }
    wk_release(t1);
    wk_release(t2);
    return st;
}

wk_status wk_scatter_set(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
{
    WK_ENTER("scatter_set");
    wk_status st = write_impl(WK_OP_SCATTER_SET, dst, ids, src, dim);
    WK_LEAVE();
    return st;
}

wk_status wk_scatter_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
{
    WK_ENTER("scatter_add");
    wk_status st = write_impl(WK_OP_SCATTER_ADD, dst, ids, src, dim);
    WK_LEAVE();
    return st;
}

wk_status wk_index_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
{
    WK_ENTER("index_add");
    wk_status st = write_impl(WK_OP_INDEX_ADD, dst, ids, src, dim);
    WK_LEAVE();
    return st;
}
