/* view.h — arithmetic on wk_view (backend.h) that the core, the cpu and
 * the GPU backend share: element count, row-major contiguity, and the
 * merging of dims that several views can walk as one. Host code; C and
 * C++. */
#ifndef WICK_VIEW_H
#define WICK_VIEW_H

#include "backend.h"

static inline int64_t wk_view_numel(const wk_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->dims[d];
    return n;
}

/* true when the view's elements are dense in row-major order */
static inline bool wk_view_is_contiguous(const wk_view *v)
{
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->dims[d] != 1 && v->strides[d] != s) return false;
        s *= v->dims[d];
    }
    return true;
}

/* The dims of n views that share views[0]'s dims, visited in `order` (a
 * permutation of 0..rank-1; NULL: as they are), with size-1 dims dropped
 * and each dim merged into the one before it where every view's strides
 * allow (stride[prev] == stride[d] * size[d]): writes the merged dims and
 * each view's strides and returns the merged rank. Element order is
 * kept when order is NULL. */
static inline int wk_views_merge_dims(int n, const wk_view *const *views, const int *order, int64_t *dims,
                                      int64_t (*strides)[WK_MAX_RANK])
{
    int r = 0;
    for (int o = 0; o < views[0]->rank; o++) {
        const int d = order ? order[o] : o;
        const int64_t size = views[0]->dims[d];
        if (size == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < n && merge; k++)
            if (strides[k][r - 1] != views[k]->strides[d] * size) merge = false;
        if (merge) {
            dims[r - 1] *= size;
            for (int k = 0; k < n; k++) strides[k][r - 1] = views[k]->strides[d];
        } else {
            dims[r] = size;
            for (int k = 0; k < n; k++) strides[k][r] = views[k]->strides[d];
            r++;
        }
    }
    return r;
}

/* Merge dims [lo, hi) of one layout into one (size, stride): false when
 * they are not equally spaced. Size-1 dims are ignored; a range of them
 * only has stride 1. (The rows of a norm, a quantized tensor or a sort's
 * input as one index; the dims before and after a softmax's.) */
static inline bool wk_merge_range(const int64_t *dims, const int64_t *strides, int lo, int hi, int64_t *size,
                                  int64_t *stride)
{
    int64_t n = 1, st = 1;
    int last = -1;
    for (int d = hi - 1; d >= lo; d--) {
        n *= dims[d];
        if (dims[d] == 1) continue;
        if (last < 0) st = strides[d];
        else if (strides[d] != strides[last] * dims[last]) return false;
        last = d;
    }
    *size = n;
    *stride = st;
    return true;
}

#endif /* WICK_VIEW_H */
