/* views.c — ops that make views of a tensor's storage (reshape, narrow,
 * transpose, permute, broadcast_as, squeeze, unsqueeze, flatten, chunk)
 * and the layout ops that copy (contiguous, copy, to_dtype, cat, stack). */
#include <stdlib.h>
#include <string.h>
#include "core.h"

/* Strides that give t's elements the new dims in row-major order without a
 * copy, when they exist (the rule used by numpy and PyTorch). */
static bool view_strides(const wk_tensor *t, int nr, const int64_t *nd, int64_t *ns)
{
    if (wk_numel(t->rank, t->dims) == 0 || wk_tensor_is_contiguous(t)) {
        wk_contiguous_strides(nr, nd, ns);
        return true;
    }
    int vd = nr - 1;
    int64_t base = t->strides[t->rank - 1], tn = 1, vn = 1;
    for (int td = t->rank - 1; td >= 0; td--) {
        tn *= t->dims[td];
        if (td == 0 || (t->dims[td - 1] != 1 && t->strides[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || nd[vd] == 1)) {
                ns[vd] = vn * base;
                vn *= nd[vd];
                vd--;
            }
            if (vn != tn) return false;
            if (td > 0) {
                base = t->strides[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    return vd == -1;
}

static wk_tensor *reshape_impl(const wk_tensor *t, wk_shape shape)
{
    if (!WK_CHECK_T(t)) return NULL;
    if (shape.rank < 0 || shape.rank > WK_MAX_RANK) {
        wk_error(WK_ERR_SHAPE, "rank %d outside 0..%d", shape.rank, WK_MAX_RANK);
        return NULL;
    }
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < shape.rank; d++) {
        if (shape.dims[d] == -1) {
            if (infer >= 0) {
                wk_error(WK_ERR_SHAPE, "more than one dim is -1");
                return NULL;
            }
            infer = d;
        } else if (shape.dims[d] < 0) {
            wk_error(WK_ERR_SHAPE, "negative size %lld at dim %d", (long long)shape.dims[d], d);
            return NULL;
        } else if (__builtin_mul_overflow(known, shape.dims[d], &known)) {
            wk_error(WK_ERR_SHAPE, "the shape has more than 2^63 elements");
            return NULL;
        }
    }
    int64_t n = wk_numel(t->rank, t->dims);
    if (infer >= 0) {
        if (known == 0 || n % known != 0) {
            wk_error(WK_ERR_SHAPE, "cannot infer dim %d: %lld elements into blocks of %lld", infer, (long long)n, (long long)known);
            return NULL;
        }
        shape.dims[infer] = n / known;
        known = n;
    }
    if (known != n) {
        wk_error(WK_ERR_SHAPE, "cannot reshape %lld elements into %lld", (long long)n, (long long)known);
        return NULL;
    }
    int64_t strides[WK_MAX_RANK];
    if (view_strides(t, shape.rank, shape.dims, strides))
        return wk_tensor_view(t, shape.rank, shape.dims, strides, t->offset);
    wk_tensor *c = wk_contiguous(t);
    if (!c) return NULL;
    wk_contiguous_strides(shape.rank, shape.dims, strides);
    wk_tensor *v = wk_tensor_view(c, shape.rank, shape.dims, strides, c->offset);
    wk_release(c);
    return v;
}

wk_tensor *wk_reshape(const wk_tensor *t, wk_shape shape)
{
    WK_ENTER("reshape");
    wk_tensor *r = reshape_impl(t, shape);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len)
{
    WK_ENTER("narrow");
    wk_tensor *r = NULL;
    int d = WK_CHECK_T(t) ? wk_norm_dim(dim, t->rank) : -1;
    if (d >= 0) {
        if (start < 0 || len < 0 || start > t->dims[d] || len > t->dims[d] - start) {
            wk_error(WK_ERR_INDEX, "start %lld + len %lld out of range for dim %d of size %lld",
                     (long long)start, (long long)len, dim, (long long)t->dims[d]);
        } else {
            int64_t dims[WK_MAX_RANK];
            memcpy(dims, t->dims, sizeof dims);
            dims[d] = len;
            r = wk_tensor_view(t, t->rank, dims, t->strides, t->offset + (len ? start * t->strides[d] : 0));
        }
    }
    WK_LEAVE();
    return r;
}

static wk_tensor *permuted(const wk_tensor *t, const int *perm)
{
    int64_t dims[WK_MAX_RANK], strides[WK_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        dims[i] = t->dims[perm[i]];
        strides[i] = t->strides[perm[i]];
    }
    return wk_tensor_view(t, t->rank, dims, strides, t->offset);
}

wk_tensor *wk_transpose(const wk_tensor *t, int dim0, int dim1)
{
    WK_ENTER("transpose");
    wk_tensor *r = NULL;
    int a = WK_CHECK_T(t) ? wk_norm_dim(dim0, t->rank) : -1;
    int b = a >= 0 ? wk_norm_dim(dim1, t->rank) : -1;
    if (b >= 0) {
        int perm[WK_MAX_RANK];
        for (int i = 0; i < t->rank; i++) perm[i] = i;
        perm[a] = b;
        perm[b] = a;
        r = permuted(t, perm);
    }
    WK_LEAVE();
    return r;
}

wk_tensor *wk_permute(const wk_tensor *t, const int *perm)
{
    WK_ENTER("permute");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t)) {
        int p[WK_MAX_RANK];
        bool seen[WK_MAX_RANK] = { false };
        bool ok = perm || t->rank == 0;
        if (!ok) wk_error(WK_ERR_ARGUMENT, "NULL permutation");
        for (int i = 0; ok && i < t->rank; i++) {
            p[i] = perm[i] < 0 ? perm[i] + t->rank : perm[i];
            if (p[i] < 0 || p[i] >= t->rank || seen[p[i]]) {
                wk_error(WK_ERR_INDEX, "entry %d (%d) of the permutation is out of range or repeated", i, perm[i]);
                ok = false;
            } else {
                seen[p[i]] = true;
            }
        }
        if (ok) r = permuted(t, p);
    }
    WK_LEAVE();
    return r;
}

wk_tensor *wk_broadcast_as(const wk_tensor *t, wk_shape shape)
{
    WK_ENTER("broadcast_as");
    wk_tensor *r = NULL;
    int64_t strides[WK_MAX_RANK];
    int64_t n = 1;
    bool big = false, empty = false;
    for (int d = 0; d < shape.rank && d < WK_MAX_RANK; d++) {
        if (shape.dims[d] == 0) empty = true;
        else if (shape.dims[d] > 0 && !big && __builtin_mul_overflow(n, shape.dims[d], &n)) big = true;
    }
    if (big && !empty)
        wk_error(WK_ERR_SHAPE, "shape has more than 2^63 elements");
    else if (WK_CHECK_T(t) && wk_shape_valid("shape", shape) && wk_broadcast_strides(t, shape.rank, shape.dims, strides))
        r = wk_tensor_view(t, shape.rank, shape.dims, strides, t->offset);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_squeeze(const wk_tensor *t, int dim)
{
    WK_ENTER("squeeze");
    wk_tensor *r = NULL;
    int d = WK_CHECK_T(t) ? wk_norm_dim(dim, t->rank) : -1;
    if (d >= 0) {
        if (t->dims[d] != 1) {
            wk_error(WK_ERR_SHAPE, "dim %d has size %lld, not 1", dim, (long long)t->dims[d]);
        } else {
            int64_t dims[WK_MAX_RANK], strides[WK_MAX_RANK];
            int k = 0;
            for (int i = 0; i < t->rank; i++)
                if (i != d) {
                    dims[k] = t->dims[i];
                    strides[k++] = t->strides[i];
                }
            r = wk_tensor_view(t, t->rank - 1, dims, strides, t->offset);
        }
    }
    WK_LEAVE();
    return r;
}

wk_tensor *wk_unsqueeze(const wk_tensor *t, int dim)
{
    WK_ENTER("unsqueeze");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t)) {
        int d = dim < 0 ? dim + t->rank + 1 : dim;
        if (t->rank >= WK_MAX_RANK) {
            wk_error(WK_ERR_SHAPE, "rank %d tensor cannot gain a dim (max %d)", t->rank, WK_MAX_RANK);
        } else if (d < 0 || d > t->rank) {
            wk_error(WK_ERR_INDEX, "dim %d out of range for rank %d (allowed %d..%d)", dim, t->rank, -t->rank - 1, t->rank);
        } else {
            int64_t dims[WK_MAX_RANK], strides[WK_MAX_RANK];
            for (int i = 0, k = 0; i <= t->rank; i++) {
                if (i == d) {
                    dims[i] = 1;
                    strides[i] = d < t->rank ? t->dims[d] * t->strides[d] : 1;
                } else {
                    dims[i] = t->dims[k];
                    strides[i] = t->strides[k++];
                }
            }
            r = wk_tensor_view(t, t->rank + 1, dims, strides, t->offset);
        }
    }
    WK_LEAVE();
    return r;
}

wk_tensor *wk_flatten(const wk_tensor *t, int start_dim, int end_dim)
{
    WK_ENTER("flatten");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t)) {
        if (t->rank == 0) {
            r = reshape_impl(t, WK_SHAPE(1));
        } else {
            int a = wk_norm_dim(start_dim, t->rank);
            int b = a >= 0 ? wk_norm_dim(end_dim, t->rank) : -1;
            if (b >= 0 && a > b) {
                wk_error(WK_ERR_INDEX, "start dim %d is after end dim %d", start_dim, end_dim);
            } else if (b >= 0) {
                wk_shape s = { 0, { 0 } };
                for (int i = 0; i < a; i++) s.dims[s.rank++] = t->dims[i];
                s.dims[s.rank++] = wk_numel(b - a + 1, t->dims + a);
                for (int i = b + 1; i < t->rank; i++) s.dims[s.rank++] = t->dims[i];
                r = reshape_impl(t, s);
            }
        }
    }
    WK_LEAVE();
    return r;
}

static wk_tensor *copy_as(const wk_tensor *t, wk_dtype dt)
{
    wk_tensor *out = wk_tensor_alloc(t->st->dev, dt, t->rank, t->dims);
    if (out && wk_copy_raw(out, t) != WK_OK) {
        wk_release(out);
        return NULL;
    }
    return out;
}

wk_tensor *wk_contiguous(const wk_tensor *t)
{
    WK_ENTER("contiguous");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t))
        r = wk_tensor_is_contiguous(t) ? wk_tensor_view(t, t->rank, t->dims, t->strides, t->offset) : copy_as(t, t->dtype);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_copy(const wk_tensor *t)
{
    WK_ENTER("copy");
    wk_tensor *r = WK_CHECK_T(t) ? copy_as(t, t->dtype) : NULL;
    WK_LEAVE();
    return r;
}

wk_tensor *wk_to_dtype(const wk_tensor *t, wk_dtype dt)
{
    WK_ENTER("to_dtype");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t)) {
        if (!wk_dtype_valid(dt)) wk_error(WK_ERR_DTYPE, "invalid dtype %d", (int)dt);
        else r = copy_as(t, dt);
    }
    WK_LEAVE();
    return r;
}

static wk_tensor *cat_impl(wk_tensor *const *ts, int n, int dim)
{
    if (!ts || n <= 0) {
        wk_error(WK_ERR_ARGUMENT, "no tensors (n = %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!ts[i] || WK_DEAD(ts[i], "a tensor of the list")) {
            if (!ts[i]) wk_error(WK_ERR_ARGUMENT, "tensor %d is NULL", i);
            return NULL;
        }
    const wk_tensor *t0 = ts[0];
    int d = wk_norm_dim(dim, t0->rank);
    if (d < 0) return NULL;
    int64_t dims[WK_MAX_RANK];
    memcpy(dims, t0->dims, sizeof dims);
    dims[d] = 0;
    for (int i = 0; i < n; i++) {
        const wk_tensor *t = ts[i];
        if (t->st->dev != t0->st->dev) {
            wk_error(WK_ERR_DEVICE, "tensor %d is on %s, tensor 0 on %s", i, t->st->dev->name, t0->st->dev->name);
            return NULL;
        }
        if (t->dtype != t0->dtype) {
            wk_error(WK_ERR_DTYPE, "tensor %d is %s, tensor 0 is %s", i, wk_dtype_name(t->dtype), wk_dtype_name(t0->dtype));
            return NULL;
        }
        if (t->rank != t0->rank) {
            wk_error(WK_ERR_SHAPE, "tensor %d has rank %d, tensor 0 rank %d", i, t->rank, t0->rank);
            return NULL;
        }
        for (int k = 0; k < t->rank; k++)
            if (k != d && t->dims[k] != t0->dims[k]) {
                wk_error(WK_ERR_SHAPE, "tensor %d has size %lld at dim %d, tensor 0 has %lld", i,
                         (long long)t->dims[k], k, (long long)t0->dims[k]);
                return NULL;
            }
        if (__builtin_add_overflow(dims[d], t->dims[d], &dims[d])) {
            wk_error(WK_ERR_SHAPE, "the sizes along dim %d add up to more than 2^63", dim);
            return NULL;
        }
    }
    wk_tensor *out = wk_tensor_alloc(t0->st->dev, t0->dtype, t0->rank, dims);
    int64_t at = 0;
    for (int i = 0; out && i < n; i++) {
        const wk_tensor *t = ts[i];
        if (t->dims[d] == 0) continue;
        int64_t pd[WK_MAX_RANK];
        memcpy(pd, out->dims, sizeof pd);
        pd[d] = t->dims[d];
        wk_tensor *part = wk_tensor_view(out, out->rank, pd, out->strides, at * out->strides[d]);
        wk_status st = part ? wk_copy_raw(part, t) : WK_ERR_MEMORY;
        wk_release(part);
        if (st != WK_OK) {
            wk_release(out);
            out = NULL;
        }
        at += t->dims[d];
    }
    return out;
}

wk_tensor *wk_cat(wk_tensor *const *ts, int n, int dim)
{
    WK_ENTER("cat");
    wk_tensor *r = cat_impl(ts, n, dim);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_stack(wk_tensor *const *ts, int n, int dim)
{
    WK_ENTER("stack");
    wk_tensor *r = NULL;
    if (!ts || n <= 0 || n > (1 << 20)) {
        wk_error(WK_ERR_ARGUMENT, "no tensors or too many (n = %d)", n);
    } else {
        wk_tensor **us = calloc((size_t)n, sizeof *us);
        bool ok = us != NULL;
        if (!ok) wk_error(WK_ERR_MEMORY, "out of memory");
        for (int i = 0; ok && i < n; i++) {
            if (!ts[i] || WK_DEAD(ts[i], "a tensor of the list")) {
                if (!ts[i]) wk_error(WK_ERR_ARGUMENT, "tensor %d is NULL", i);
                ok = false;
            } else if (ts[i]->rank != ts[0]->rank) {
                wk_error(WK_ERR_SHAPE, "tensor %d has rank %d, tensor 0 rank %d", i, ts[i]->rank, ts[0]->rank);
                ok = false;
            } else {
                us[i] = wk_unsqueeze(ts[i], dim);
                ok = us[i] != NULL;
            }
        }
        if (ok) r = cat_impl(us, n, dim < 0 ? dim + ts[0]->rank + 1 : dim);
        for (int i = 0; us && i < n; i++) wk_release(us[i]);
        free(us);
    }
    WK_LEAVE();
    return r;
}

int wk_chunk(const wk_tensor *t, int n, int dim, wk_tensor **out)
{
    WK_ENTER("chunk");
    int count = -1;
    int d = WK_CHECK_T(t) ? wk_norm_dim(dim, t->rank) : -1;
    if (d >= 0 && (n <= 0 || !out)) {
        wk_error(WK_ERR_ARGUMENT, "chunk count %d must be positive and out non-NULL", n);
    } else if (d >= 0) {
        int64_t size = t->dims[d];
        int64_t step = size / n + (size % n != 0);   /* ceil, without size + n - 1 passing 2^63 */
        int64_t dims[WK_MAX_RANK];
        memcpy(dims, t->dims, sizeof dims);
        count = 0;
        const int64_t parts = step ? size / step + (size % step != 0) : 1;   /* no at + step past 2^63 */
        for (int64_t i = 0; i < parts; i++) {
            const int64_t at = i * step;
            dims[d] = size - at < step ? size - at : step;
            out[count] = wk_tensor_view(t, t->rank, dims, t->strides, t->offset + (dims[d] ? at * t->strides[d] : 0));
            if (!out[count]) {
                while (count > 0) wk_release(out[--count]);
                count = -1;
                break;
            }
            count++;
        }
    }
    WK_LEAVE();
    return count;
}
