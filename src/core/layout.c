/* layout.c — shape and stride arithmetic: element counts, contiguity,
 * numpy broadcasting, dim normalisation, overlap detection, and the
 * coalescing of dims that lets backends see most inputs as flat runs. */
#include <stdlib.h>
#include "core.h"
#include "../view.h"

int64_t wk_numel(int rank, const int64_t *dims)
{
    /* unsigned: an empty tensor's other dims may multiply past 2^63 before
     * its zero dim comes; the wrapped product is then made 0 by it */
    uint64_t n = 1;
    for (int d = 0; d < rank; d++) n *= (uint64_t)dims[d];
    return (int64_t)n;
}

bool wk_numel_checked(int rank, const int64_t *dims, int64_t *out, wk_status too_big)
{
    int64_t n = 1;
    bool big = false;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) {
            wk_error(WK_ERR_SHAPE, "dim %d has negative size %lld", d, (long long)dims[d]);
            return false;
        }
        if (dims[d] == 0) {
            *out = 0;
            return true;
        }
        if (!big && __builtin_mul_overflow(n, dims[d], &n)) big = true;
    }
    if (big) {
        wk_error(too_big, "the shape has more than 2^63 elements");
        return false;
    }
    *out = n;
    return true;
}

bool wk_bytes_checked(wk_dtype dt, int64_t n, int64_t *out)
{
    if (wk_dt_bytes(dt, n, out)) return true;
    if (!wk_dt_valid(dt)) wk_error(WK_ERR_DTYPE, "invalid dtype %d", (int)dt);
    else if (n >= 0 && n % wk_dt_block(dt) != 0)
        wk_error(WK_ERR_SHAPE, "%lld elements of %s are not a whole number of %lld-element blocks", (long long)n,
                 wk_dtype_name(dt), (long long)wk_dt_block(dt));
    else
        wk_error(WK_ERR_MEMORY, "%lld elements of %s take more than 2^63 bytes", (long long)n, wk_dtype_name(dt));
    return false;
}

bool wk_layout_fits_dtype(wk_dtype dt, int rank, const int64_t *dims, const int64_t *strides, int64_t offset)
{
    const int64_t b = wk_dt_block(dt);
    if (b == 1) return true;
    if (rank < 1) {
        wk_error(WK_ERR_SHAPE, "a %s tensor needs rank >= 1 (rows of %lld-element blocks)", wk_dtype_name(dt),
                 (long long)b);
        return false;
    }
    const int last = rank - 1;
    if (dims[last] % b != 0) {
        wk_error(WK_ERR_SHAPE, "a %s tensor's last dim must be a multiple of %lld, not %lld", wk_dtype_name(dt),
                 (long long)b, (long long)dims[last]);
        return false;
    }
    bool ok = offset % b == 0 && (dims[last] == 0 || strides[last] == 1);
    for (int d = 0; d < last && ok; d++)
        if (dims[d] > 1 && strides[d] % b != 0) ok = false;
    if (!ok)
        wk_error(WK_ERR_SHAPE, "a %s tensor is stored in blocks of %lld elements along its last dim: views may "
                 "narrow or select rows only", wk_dtype_name(dt), (long long)b);
    return ok;
}

bool wk_shape_valid(const char *what, wk_shape s)
{
    if (s.rank < 0 || s.rank > WK_MAX_RANK) {
        wk_error(WK_ERR_SHAPE, "%s has rank %d, outside 0..%d", what, s.rank, WK_MAX_RANK);
        return false;
    }
    for (int d = 0; d < s.rank; d++) {
        if (s.dims[d] < 0) {
            wk_error(WK_ERR_SHAPE, "%s has negative size %lld at dim %d", what, (long long)s.dims[d], d);
            return false;
        }
    }
    return true;
}

void wk_contiguous_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        /* an empty tensor's other dims may multiply past 2^63 (their
         * strides address nothing): saturate instead of overflowing */
        if (__builtin_mul_overflow(s, dims[d] ? dims[d] : 1, &s)) s = INT64_MAX;
    }
}

bool wk_layout_is_contiguous(int rank, const int64_t *dims, const int64_t *strides)
{
    for (int d = 0; d < rank; d++)
        if (dims[d] == 0) return true;   /* before any product: the others may pass 2^63 */
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (dims[d] != 1 && strides[d] != s) return false;
        s *= dims[d];
    }
    return true;
}

int wk_norm_dim(int dim, int rank)
{
    int d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank) {
        wk_error(WK_ERR_INDEX, "dim %d out of range for rank %d", dim, rank);
        return -1;
    }
    return d;
}

bool wk_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rout, int64_t *dout)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
        if (a != b && a != 1 && b != 1) {
            wk_error(WK_ERR_SHAPE, "shapes do not broadcast: size %lld vs %lld at dim %d of the result",
                     (long long)a, (long long)b, i);
            return false;
        }
        dout[i] = a == 1 ? b : a;
    }
    *rout = r;
    return true;
}

bool wk_broadcast_strides(const wk_tensor *t, int rank, const int64_t *dims, int64_t *strides)
{
    if (t->rank > rank) {
        wk_error(WK_ERR_SHAPE, "cannot broadcast rank %d to rank %d", t->rank, rank);
        return false;
    }
    for (int i = 0; i < rank; i++) {
        int it = i - (rank - t->rank);
        if (it < 0) {
            strides[i] = 0;
        } else if (t->dims[it] == dims[i]) {
            strides[i] = dims[i] == 1 ? 0 : t->strides[it];
        } else if (t->dims[it] == 1) {
            strides[i] = 0;
        } else {
            wk_error(WK_ERR_SHAPE, "cannot broadcast size %lld to %lld at dim %d",
                     (long long)t->dims[it], (long long)dims[i], i);
            return false;
        }
    }
    return true;
}

void wk_views_coalesce(int n, wk_view **views)
{
    int rank = views[0]->rank;
    for (int d = 0; d < rank; d++)
        if (views[0]->dims[d] == 0) return;      /* empty: leave as is */
    /* Visit the dims in the order of views[0]'s strides, largest first
     * (stable): the identity for a row-major destination; for a dense
     * destination in another order (a transposed output that keeps its
     * input's layout, a copy into a transposed view) it makes the walk
     * sequential in the destination, and mergeable. Valid because every
     * caller is elementwise: all views are indexed by one multi-index. */
    int order[WK_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int j = d;
        while (j > 0 && views[0]->strides[order[j - 1]] < views[0]->strides[d]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    int64_t dims[WK_MAX_RANK];
    int64_t strides[4][WK_MAX_RANK];
    int r = wk_views_merge_dims(n, (const wk_view *const *)views, order, dims, strides);
    for (int k = 0; k < n; k++) {
        views[k]->rank = r;
        for (int d = 0; d < WK_MAX_RANK; d++) {
            views[k]->dims[d] = d < r ? dims[d] : 0;
            views[k]->strides[d] = d < r ? strides[k][d] : 0;
        }
    }
}

bool wk_layout_dense_permuted(int rank, const int64_t *dims, const int64_t *strides, int64_t *out)
{
    int idx[WK_MAX_RANK], m = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0) return false;
        if (dims[d] > 1) {
            int j = m++;
            while (j > 0 && strides[idx[j - 1]] > strides[d]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = d;
        }
    }
    int64_t expect = 1;
    bool row_major = true;
    for (int k = 0; k < m; k++) {
        if (strides[idx[k]] != expect) return false;
        expect *= dims[idx[k]];
        if (k > 0 && idx[k] > idx[k - 1]) row_major = false;   /* a larger stride on a later dim */
    }
    if (row_major) return false;
    for (int d = 0; d < rank; d++) out[d] = dims[d] > 1 ? strides[d] : expect;
    return true;
}

bool wk_view_overlaps(int rank, const int64_t *dims, const int64_t *strides)
{
    /* Sort the non-trivial dims by stride; the view is free of overlap when
     * each stride exceeds the extent of all smaller-strided dims. */
    int idx[WK_MAX_RANK], m = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0) return false;
        if (dims[d] > 1) idx[m++] = d;
    }
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && strides[idx[j]] < strides[idx[j - 1]]; j--) {
            int tmp = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = tmp;
        }
    int64_t extent = 1;
    for (int i = 0; i < m; i++) {
        int64_t s = strides[idx[i]];
        if (s < extent) return true;
        extent = s * (dims[idx[i]] - 1) + extent;
    }
    return false;
}
