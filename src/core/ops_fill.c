/* ops_fill.c — front-end of the creation fills (zeros, ones, full,
 * arange) and of the in-place writes: const_set, copy_into, copy2d. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"

static wk_status const_set_impl(wk_tensor *dst, double value)
{
    if (!WK_CHECK_T(dst)) return wk_last_status();
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, WK_OP_CONST_SET, dst->dtype)) return wk_last_status();
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_SHAPE, "destination has overlapping elements (a broadcast view)");
    if (wk_numel(dst->rank, dst->dims) == 0) return WK_OK;
    unsigned char buf[8];
    wk_scalar_to_bytes(value, dst->dtype, buf);
    wk_view d = wk_view_of(dst);
    wk_view *vs[1] = { &d };
    wk_views_coalesce(1, vs);
    wk_op_args a = { .op = WK_OP_CONST_SET, .dst = &d, .value = buf };
    return wk_run(dev, &a);
}

wk_status wk_const_set(wk_tensor *dst, double value) WK_API(wk_status, "const_set", const_set_impl(dst, value))

static wk_tensor *filled(wk_device *dev, wk_dtype dt, wk_shape shape, double value)
{
    if (!wk_shape_valid("shape", shape)) return NULL;
    wk_tensor *t = wk_tensor_alloc(dev, dt, shape.rank, shape.dims);
    return t ? wk_finish(const_set_impl(t, value), t) : NULL;
}

wk_tensor *wk_zeros(wk_device *dev, wk_dtype dt, wk_shape shape)
    WK_API(wk_tensor *, "zeros", filled(dev, dt, shape, 0.0))

wk_tensor *wk_ones(wk_device *dev, wk_dtype dt, wk_shape shape)
    WK_API(wk_tensor *, "ones", filled(dev, dt, shape, 1.0))

wk_tensor *wk_full(wk_device *dev, wk_dtype dt, wk_shape shape, double value)
    WK_API(wk_tensor *, "full", filled(dev, dt, shape, value))

static wk_tensor *arange_impl(wk_device *dev, wk_dtype dt, double start, double end, double step)
{
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
        return NULL;
    }
    if (!wk_dtype_valid(dt) || wk_dt_is_quant(dt)) {
        wk_error(WK_ERR_DTYPE, "arange needs a dense dtype, not %s", wk_dtype_name(dt));
        return NULL;
    }
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0) {
        wk_error(WK_ERR_ARGUMENT, "start %g, end %g, step %g: need finite values and a non-zero step", start, end, step);
        return NULL;
    }
    double count = ceil((end - start) / step);
    if (count < 0) count = 0;
    if (count > 1e15) {
        wk_error(WK_ERR_MEMORY, "arange of %g elements", count);
        return NULL;
    }
    int64_t n = (int64_t)count;
    /* the result on the device first: a size it cannot hold fails here, at
     * once; then filled a block at a time from a bounded host buffer */
    wk_tensor *t = wk_tensor_alloc(dev, dt, 1, &n);
    if (!t || n == 0) return t;
    const size_t sz = wk_dtype_size(dt);
    const int64_t block = n < (1 << 16) ? n : (1 << 16);
    unsigned char *host = malloc((size_t)block * sz);
    wk_status st = host ? WK_OK : wk_error(WK_ERR_MEMORY, "out of host memory for %lld elements", (long long)block);
    for (int64_t i0 = 0; st == WK_OK && i0 < n; i0 += block) {
        const int64_t m = n - i0 < block ? n - i0 : block;
        for (int64_t i = 0; i < m; i++) wk_scalar_to_bytes(start + (double)(i0 + i) * step, dt, host + (size_t)i * sz);
        wk_tensor *v = wk_tensor_view(t, 1, &m, t->strides, i0);
        st = v ? wk_write(v, host, (size_t)m * sz) : wk_last_status();
        wk_release(v);
    }
    free(host);
    return wk_finish(st, t);
}

wk_tensor *wk_arange(wk_device *dev, wk_dtype dt, double start, double end, double step)
    WK_API(wk_tensor *, "arange", arange_impl(dev, dt, start, end, step))

static wk_status copy_into_impl(wk_tensor *dst, const wk_tensor *src)
{
    const wk_tensor *ts[2] = { dst, src };
    static const char *const names[2] = { "dst", "src" };
    if (!wk_check_tensors(2, ts, names)) return wk_last_status();
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_SHAPE, "destination has overlapping elements (a broadcast view)");
    int64_t strides[WK_MAX_RANK];
    if (!wk_broadcast_strides(src, dst->rank, dst->dims, strides)) return wk_last_status();
    if (src->st == dst->st && wk_numel(dst->rank, dst->dims) > 0) {
        /* src may alias dst: read it whole before writing */
        wk_tensor *tmp = wk_copy(src);
        if (!tmp) return wk_last_status();
        wk_status st = wk_copy_raw(dst, tmp);
        wk_release(tmp);
        return st;
    }
    return wk_copy_raw(dst, src);
}

wk_status wk_copy_into(wk_tensor *dst, const wk_tensor *src) WK_API(wk_status, "copy_into", copy_into_impl(dst, src))

static wk_status copy2d_impl(wk_tensor *dst, const wk_tensor *src, int64_t rows, int64_t cols, int64_t ss,
                             int64_t ds, int64_t so, int64_t dof)
{
    const wk_tensor *ts[2] = { dst, src };
    static const char *const names[2] = { "dst", "src" };
    if (!wk_check_tensors(2, ts, names)) return wk_last_status();
    if (dst->dtype != src->dtype)
        return wk_error(WK_ERR_DTYPE, "dst is %s, src is %s", wk_dtype_name(dst->dtype), wk_dtype_name(src->dtype));
    if (rows < 0 || cols < 0 || ss < 0 || ds < 0 || so < 0 || dof < 0)
        return wk_error(WK_ERR_ARGUMENT, "negative rows %lld, cols %lld, strides or offsets", (long long)rows, (long long)cols);
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, WK_OP_COPY2D, src->dtype)) return wk_last_status();
    if (rows == 0 || cols == 0) return WK_OK;
    int64_t sz = (int64_t)wk_dtype_size(src->dtype);
    int64_t s_need, d_need;
    if (__builtin_mul_overflow(rows - 1, ss, &s_need) || __builtin_add_overflow(s_need, so, &s_need) ||
        __builtin_add_overflow(s_need, cols, &s_need) || __builtin_mul_overflow(rows - 1, ds, &d_need) ||
        __builtin_add_overflow(d_need, dof, &d_need) || __builtin_add_overflow(d_need, cols, &d_need))
        return wk_error(WK_ERR_INDEX, "rows, strides and offsets overflow");
    if (s_need > (int64_t)src->st->bytes / sz)
        return wk_error(WK_ERR_INDEX, "src storage has %lld elements, the copy reads up to %lld",
                        (long long)(src->st->bytes / sz), (long long)s_need);
    if (d_need > (int64_t)dst->st->bytes / sz)
        return wk_error(WK_ERR_INDEX, "dst storage has %lld elements, the copy writes up to %lld",
                        (long long)(dst->st->bytes / sz), (long long)d_need);
    if (ds < cols && rows > 1)
        return wk_error(WK_ERR_SHAPE, "dst stride %lld < cols %lld: rows would overlap", (long long)ds, (long long)cols);
    if (rows == 1) ss = ds = cols;   /* one row: its strides step nowhere (and may be any size: no bytes from them) */
    wk_view vd = { .base = dst->st->ptr, .dtype = dst->dtype, .rank = 2, .offset = dof,
                   .dims = { rows, cols }, .strides = { ds, 1 } };
    wk_view vs = { .base = src->st->ptr, .dtype = src->dtype, .rank = 2, .offset = so,
                   .dims = { rows, cols }, .strides = { ss, 1 } };
    wk_op_args a = { .op = WK_OP_COPY2D, .dst = &vd, .src = { &vs } };
    return wk_run(dev, &a);
}

wk_status wk_copy2d(wk_tensor *dst, const wk_tensor *src, int64_t rows, int64_t cols, int64_t src_stride,
                    int64_t dst_stride, int64_t src_offset, int64_t dst_offset)
    WK_API(wk_status, "copy2d", copy2d_impl(dst, src, rows, cols, src_stride, dst_stride, src_offset, dst_offset))
