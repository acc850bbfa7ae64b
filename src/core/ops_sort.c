/* ops_sort.c — front-ends of arg_sort (the SORT family of backend.h:
 * stable, along the last dim, every dense dtype) and of sort and topk,
 * which are arg_sort followed by a gather of the values (topk keeps the
 * first k indices). docs/conv.md has the semantics. */
#include <stdint.h>
#include <string.h>
#include "core.h"
#include "../view.h"

/* the first k (all: k < 0) of the stable order of each row, u32 */
static wk_tensor *arg_sort_k(const wk_tensor *x, bool descending, int64_t k)
{
    if (!WK_CHECK_T(x)) return NULL;
    wk_device *dev = x->st->dev;
    if (!wk_check_supported(dev, WK_OP_ARG_SORT, x->dtype)) return NULL;
    int r = x->rank;
    int64_t n = r ? x->dims[r - 1] : 1;
    if (n > (int64_t)UINT32_MAX) {
        wk_error(WK_ERR_SHAPE, "rows of %lld elements are too long for u32 indices (at most %lld)", (long long)n,
                 (long long)UINT32_MAX);
        return NULL;
    }
    int64_t od[WK_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    if (k < 0 || k > n) k = n;
    if (r) od[r - 1] = k;
    wk_tensor *out = wk_tensor_alloc(dev, WK_U32, r, od);
    if (!out) return NULL;
    int64_t rows = 0, rs = 0;
    if (wk_numel(r, od) == 0) return out;
    bool ok = r == 0 || wk_merge_range(x->dims, x->strides, 0, r - 1, &rows, &rs);
    wk_tensor *h = ok ? wk_retain((wk_tensor *)x) : wk_contiguous(x);
    if (!h) return wk_finish(wk_last_status(), out);
    if (r == 0) rows = 1, rs = 1;
    else wk_merge_range(h->dims, h->strides, 0, r - 1, &rows, &rs);
    wk_view vs = wk_view_of(h), vd = wk_view_of(out);
    for (int q = 0; q < WK_MAX_RANK; q++) vs.dims[q] = vs.strides[q] = vd.dims[q] = vd.strides[q] = 0;
    vs.rank = vd.rank = 2;
    vs.dims[0] = vd.dims[0] = rows;
    vs.dims[1] = n;
    vd.dims[1] = k;
    vs.strides[0] = rs;
    vs.strides[1] = r ? h->strides[r - 1] : 1;
    vd.strides[0] = k;
    vd.strides[1] = 1;
    wk_op_args a = { .op = WK_OP_ARG_SORT, .dst = &vd, .src = { &vs }, .p = { descending ? 1.0 : 0.0 } };
    wk_status st = wk_run(dev, &a);
    wk_release(h);
    if (st == WK_OK) WK_FAULT(WK_OP_ARG_SORT, out);
    return wk_finish(st, out);
}

/* the first k indices of each row of the stable order (all of them:
 * k < 0), and the values they pick */
static wk_tensor *sort_topk(const wk_tensor *x, bool descending, int64_t k, wk_tensor **indices)
{
    if (indices) *indices = NULL;
    wk_tensor *idx = arg_sort_k(x, descending, x && x->rank ? k : -1);
    if (!idx) return NULL;
    int r = x->rank;
    if (r == 0) {                      /* one element: itself, index 0 */
        if (k == 0) {
            wk_release(idx);
            wk_error(WK_ERR_ARGUMENT, "k must be 1 for a rank-0 tensor, got 0");
            return NULL;
        }
        wk_tensor *v = wk_copy(x);
        if (!v) { wk_release(idx); return NULL; }
        if (indices) *indices = idx;
        else wk_release(idx);
        return v;
    }
    wk_tensor *v;
    if (wk_numel(idx->rank, idx->dims) == 0) v = wk_tensor_alloc(x->st->dev, x->dtype, idx->rank, idx->dims);
    else v = wk_gather(x, idx, r - 1);
    if (!v) {
        wk_release(idx);
        return NULL;
    }
    if (indices) *indices = idx;
    else wk_release(idx);
    return v;
}

static wk_tensor *topk_impl(const wk_tensor *x, int64_t k, bool largest, wk_tensor **indices)
{
    if (indices) *indices = NULL;
    if (!WK_CHECK_T(x)) return NULL;
    int64_t n = x->rank ? x->dims[x->rank - 1] : 1;
    if (k < 0 || k > n) {
        wk_error(WK_ERR_ARGUMENT, "k must be in [0, %lld] (the last dim), got %lld", (long long)n, (long long)k);
        return NULL;
    }
    return sort_topk(x, largest, k, indices);
}

wk_tensor *wk_arg_sort(const wk_tensor *x, bool descending)
    WK_API(wk_tensor *, "arg_sort", arg_sort_k(x, descending, -1))
wk_tensor *wk_sort(const wk_tensor *x, bool descending, wk_tensor **indices)
    WK_API(wk_tensor *, "sort", (indices ? (void)(*indices = NULL) : (void)0, sort_topk(x, descending, -1, indices)))
wk_tensor *wk_topk(const wk_tensor *x, int64_t k, bool largest, wk_tensor **indices)
    WK_API(wk_tensor *, "topk", topk_impl(x, k, largest, indices))
