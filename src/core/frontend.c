/* frontend.c — the steps every op's front-end shares: argument checks
 * (those on every op's path are inline in core.h), turning a backend status into a
 * result, and the copies and fills other ops are built from (wk_copy_raw,
 * wk_fill_zero). The fault-injection hook of test builds lives here too. */
#include <string.h>
#include "core.h"

wk_tensor *wk_finish(wk_status st, wk_tensor *out)
{
    if (st != WK_OK) {
        wk_release(out);
        return NULL;
    }
    return out;
}

/* A view of a block-quantized tensor as the u8 bytes of its blocks (the
 * layout rule of dtype_traits.h makes every stride a whole number of
 * blocks). */
static void quant_as_bytes(wk_view *v)
{
    const int64_t b = wk_dt_block(v->dtype), bb = wk_dt_block_bytes(v->dtype);
    for (int d = 0; d < v->rank; d++) {
        if (d == v->rank - 1) v->dims[d] = v->dims[d] / b * bb;
        else v->strides[d] = v->strides[d] / b * bb;
    }
    v->offset = v->offset / b * bb;
    v->dtype = WK_U8;
}

wk_status wk_copy_raw(wk_tensor *dst, const wk_tensor *src)
{
    if (wk_numel(dst->rank, dst->dims) == 0) return WK_OK;
    wk_device *dev = dst->st->dev;
    const bool quant = wk_dt_is_quant(src->dtype) || wk_dt_is_quant(dst->dtype);
    if (quant && src->dtype != dst->dtype)
        return wk_error(WK_ERR_UNSUPPORTED, "cannot convert %s to %s", wk_dtype_name(src->dtype),
                        wk_dtype_name(dst->dtype));
    if (!quant && !wk_check_supported(dev, WK_OP_COPY, src->dtype)) return wk_last_status();
    wk_view d = wk_view_of(dst), s = wk_view_of(src);
    s.rank = d.rank;
    memcpy(s.dims, d.dims, sizeof s.dims);
    if (!wk_broadcast_strides(src, dst->rank, dst->dims, s.strides)) return wk_last_status();
    if (quant) {
        quant_as_bytes(&d);
        quant_as_bytes(&s);
    }
    wk_view *vs[2] = { &d, &s };
    wk_views_coalesce(2, vs);
    wk_op_args a = { .op = WK_OP_COPY, .dst = &d, .src = { &s } };
    return wk_run(dev, &a);
}

wk_status wk_fill_zero(wk_tensor *dst)
{
    static const unsigned char zero[8] = { 0 };
    wk_view d = wk_view_of(dst);
    wk_op_args a = { .op = WK_OP_CONST_SET, .dst = &d, .value = zero };
    return wk_run(dst->st->dev, &a);
}

#ifdef WK_FAULT_INJECT
void wk_fault_perturb(wk_op op, wk_tensor *out)
{
    if (op != WK_FAULT_INJECT || !out || !wk_dtype_is_float(out->dtype)) return;
    wk_view v = wk_view_of(out);
    wk_op_args a = { .op = WK_OP_AFFINE, .dst = &v, .src = { &v }, .p = { 1.001, 0.0 } };
    if (wk_numel(out->rank, out->dims) > 0) wk_run(out->st->dev, &a);
}
#endif

/* ---- ids the caller checked (wick.h: wk_set_ids_checked) ---------------- */

_Thread_local bool wk_tls_ids_checked;

bool wk_set_ids_checked(bool on)
{
    const bool prev = wk_tls_ids_checked;
    wk_tls_ids_checked = on;
    return prev;
}
