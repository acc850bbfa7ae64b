/* ops_index.c — front-end of the indexing ops: index_select, gather
 * (out of place) and scatter_set, scatter_add, index_add (in place).
 * Shapes are checked here; ids are data, so their range is checked by the
 * backend before it writes anything. */
#include <stdlib.h>
#include <string.h>
#include "core.h"

static bool ids_dtype_ok(const wk_tensor *ids)
{
    if (ids->dtype == WK_U8 || ids->dtype == WK_U32 || ids->dtype == WK_I64) return true;
    wk_error(WK_ERR_DTYPE, "ids must be u8, u32 or i64, not %s", wk_dtype_name(ids->dtype));
    return false;
}

/* Range check of ids on the host, for the calls that launch no kernel
 * (an empty result or source beside non-empty ids), where no backend sees
 * the ids: an out-of-range id is still an error, as it is on every other
 * path (and in PyTorch). Reads the ids back (synchronizing; such calls
 * move no data). */
static wk_status ids_check_host(const wk_tensor *ids, int64_t limit, int dim)
{
    int64_t n = wk_numel(ids->rank, ids->dims);
    if (n == 0) return WK_OK;
    if (limit == 0) return wk_error(WK_ERR_INDEX, "dim %d is empty: every id is out of range", dim);
    size_t bytes = wk_tensor_nbytes(ids);
    unsigned char *h = malloc(bytes);
    if (!h) return wk_error(WK_ERR_MEMORY, "out of memory reading %lld ids", (long long)n);
    wk_status st = wk_to_host(ids, h, bytes);
    for (int64_t i = 0; st == WK_OK && i < n; i++) {
        int64_t v = ids->dtype == WK_U8 ? (int64_t)h[i]
                    : ids->dtype == WK_U32 ? (int64_t)((const uint32_t *)(const void *)h)[i]
                                           : ((const int64_t *)(const void *)h)[i];
        if (v < 0 || v >= limit)
            st = wk_error(WK_ERR_INDEX, "id %lld is out of range for dim %d of size %lld", (long long)v, dim,
                          (long long)limit);
    }
    free(h);
    return st;
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
    wk_status st;
    if (wk_numel(t->rank, dims) == 0 || t->dims[d] == 0) {
        st = ids_check_host(ids, t->dims[d], dim);
    } else {
        wk_view vd = wk_view_of(out), vs = wk_view_of(t), vi = wk_view_of(ids);
        wk_op_args a = { .op = op, .dst = &vd, .src = { &vs, &vi }, .dim = d };
        st = wk_run(dev, &a);
    }
    return wk_finish(st, out);
}

wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim)
    WK_API(wk_tensor *, "index_select", select_impl(WK_OP_INDEX_SELECT, t, ids, dim))
wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim)
    WK_API(wk_tensor *, "gather", select_impl(WK_OP_GATHER, t, ids, dim))

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
    if (!wk_check_same_dtype(src, dst, "src", "dst")) return wk_last_status();
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
    if (wk_numel(src->rank, src->dims) == 0 || dst->dims[d] == 0) return ids_check_host(ids, dst->dims[d], dim);
    wk_tensor *t1, *t2;
    const wk_tensor *s = unaliased(src, dst, &t1), *i = unaliased(ids, dst, &t2);
    wk_status st;
    if (!s || !i) {
        st = wk_last_status();
    } else {
        wk_view vd = wk_view_of(dst), vi = wk_view_of(i), vs = wk_view_of(s);
        wk_op_args a = { .op = op, .dst = &vd, .src = { &vi, &vs }, .dim = d };
        st = wk_run(dev, &a);
    }
    wk_release(t1);
    wk_release(t2);
    return st;
}

wk_status wk_scatter_set(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
    WK_API(wk_status, "scatter_set", write_impl(WK_OP_SCATTER_SET, dst, ids, src, dim))

wk_status wk_scatter_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
    WK_API(wk_status, "scatter_add", write_impl(WK_OP_SCATTER_ADD, dst, ids, src, dim))

wk_status wk_index_add(wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim)
    WK_API(wk_status, "index_add", write_impl(WK_OP_INDEX_ADD, dst, ids, src, dim))
