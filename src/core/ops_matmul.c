/* ops_matmul.c — front-end of matmul: batched, broadcast batch dims, any
 * strides of either operand (the backend picks transposes or copies). */
#include <string.h>
#include "core.h"

void wk_matmul_view(const wk_view *t, int br, const int64_t *dims, wk_view *v)
{
    *v = *t;
    v->rank = br + 2;
    /* batch dims broadcast (stride 0); the last two keep theirs */
    int tb = t->rank - 2;
    for (int q = 0; q < br; q++) {
        int qt = q - (br - tb);
        v->dims[q] = dims[q];
        v->strides[q] = qt >= 0 && t->dims[qt] == dims[q] && dims[q] != 1 ? t->strides[qt] : 0;
    }
    v->dims[br] = t->dims[t->rank - 2];
    v->dims[br + 1] = t->dims[t->rank - 1];
    v->strides[br] = t->strides[t->rank - 2];
    v->strides[br + 1] = t->strides[t->rank - 1];
    for (int q = br + 2; q < WK_MAX_RANK; q++) v->dims[q] = v->strides[q] = 0;
}

static wk_tensor *matmul_impl(const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *ts[2] = { a, b };
    static const char *const names[2] = { "a", "b" };
    if (!wk_check_tensors(2, ts, names)) return NULL;
    if (!wk_check_same_dtype(a, b, "a", "b")) return NULL;
    if (a->rank < 2 || b->rank < 2) {
        wk_error(WK_ERR_SHAPE, "operands need rank >= 2 (a has %d, b has %d)", a->rank, b->rank);
        return NULL;
    }
    int64_t m = a->dims[a->rank - 2], k = a->dims[a->rank - 1], n = b->dims[b->rank - 1];
    if (b->dims[b->rank - 2] != k) {
        wk_error(WK_ERR_SHAPE, "inner dims differ: a is [.., %lld, %lld], b is [.., %lld, %lld]", (long long)m,
                 (long long)k, (long long)b->dims[b->rank - 2], (long long)n);
        return NULL;
    }
    wk_device *dev = a->st->dev;
    if (!wk_check_supported(dev, WK_OP_MATMUL, a->dtype)) return NULL;
    int br;
    int64_t dims[WK_MAX_RANK];
    if (!wk_broadcast_shapes(a->rank - 2, a->dims, b->rank - 2, b->dims, &br, dims)) return NULL;
    int rank = br + 2;
    dims[br] = m;
    dims[br + 1] = n;
    wk_tensor *out = wk_tensor_alloc(dev, a->dtype, rank, dims);
    if (!out) return NULL;
    wk_status st = WK_OK;
    if (wk_numel(rank, dims) > 0) {
        wk_view d = wk_view_of(out);
        if (k == 0) {
            st = wk_fill_zero(out);
        } else {
            wk_view v[2];
            for (int i = 0; i < 2; i++) {
                const wk_view t = wk_view_of(ts[i]);
                wk_matmul_view(&t, br, dims, &v[i]);
            }
            wk_op_args args = { .op = WK_OP_MATMUL, .dst = &d, .src = { &v[0], &v[1] } };
            st = wk_run(dev, &args);
        }
    }
    if (st == WK_OK) WK_FAULT(WK_OP_MATMUL, out);
    return wk_finish(st, out);
}

wk_tensor *wk_matmul(const wk_tensor *a, const wk_tensor *b) WK_API(wk_tensor *, "matmul", matmul_impl(a, b))
