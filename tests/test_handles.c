/* test_handles.c — released handles in the debug build (make debug, which
 * compiles with -DWK_DEBUG_HANDLES; src/core/core.h): every public
 * function that takes a tensor, given one that wk_release has released,
 * fails with WK_ERR_ARGUMENT and a message that names the op and says the
 * tensor was released, and writes nothing; a second release of a handle
 * is reported and not done; retain and keep of a released handle give
 * NULL; the accessors give their NULL answers. Each argument position of
 * each op is tried with the live tensors it needs around it. Built
 * without the switch (the release build keeps no state to tell), the
 * suite is empty.
 *
 * Case names: handles/<what>.
 */
#include <string.h>
#include "test.h"
#include "wick_comm.h"
#include "wick_ext.h"
#include "wick_formats.h"

#ifdef WK_DEBUG_HANDLES

static bool dead_ok(const char *op, bool failed)
{
    const char *e = wk_last_error();
    const bool ok = failed && wk_last_status() == WK_ERR_ARGUMENT && strstr(e, "released") && strstr(e, op);
    if (!ok)
        t_fail("%s with a released tensor: %s (status %s, message \"%s\")", op, failed ? "failed" : "did not fail",
               wk_status_name(wk_last_status()), e);
    return ok;
}

/* a tensor-returning call: NULL and the message */
#define DEAD_T(op, expr)                                                       \
    do {                                                                       \
        wk_clear_error();                                                      \
        wk_tensor *r_ = (expr);                                                \
        dead_ok(op, r_ == NULL);                                               \
        wk_release(r_);                                                        \
    } while (0)
/* a status call */
#define DEAD_S(op, expr)                                                       \
    do {                                                                       \
        wk_clear_error();                                                      \
        dead_ok(op, (expr) != WK_OK);                                          \
    } while (0)

/* a released tensor of t's dtype and shape (its header lives on, dead) */
static wk_tensor *dead_like(const wk_tensor *t)
{
    wk_tensor *c = wk_copy(t);
    if (!c) t_fail("copy: %s", wk_last_error());
    wk_release(c);
    return c;
}

static wk_tensor *f32(wk_shape s, double v) { return T_NEED(wk_full(t_dev(), WK_F32, s, v)); }

static wk_status cpu_fwd1(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                          const wk_raw_view *a)
{
    (void)op, (void)env, (void)out, (void)a;
    return WK_OK;
}
static wk_status cpu_fwd2(const wk_custom_op2 *op, const wk_custom_env *env, const wk_raw_view *out,
                          const wk_raw_view *a, const wk_raw_view *b)
{
    (void)op, (void)env, (void)out, (void)a, (void)b;
    return WK_OK;
}
static wk_status cpu_fwd3(const wk_custom_op3 *op, const wk_custom_env *env, const wk_raw_view *out,
                          const wk_raw_view *a, const wk_raw_view *b, const wk_raw_view *c)
{
    (void)op, (void)env, (void)out, (void)a, (void)b, (void)c;
    return WK_OK;
}
static wk_status ip1(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst)
{
    (void)op, (void)env, (void)dst;
    return WK_OK;
}
static wk_status ip2(const wk_inplace_op2 *op, const wk_custom_env *env, const wk_raw_view *dst, const wk_raw_view *a)
{
    (void)op, (void)env, (void)dst, (void)a;
    return WK_OK;
}
static wk_status ip3(const wk_inplace_op3 *op, const wk_custom_env *env, const wk_raw_view *dst, const wk_raw_view *a,
                     const wk_raw_view *b)
{
    (void)op, (void)env, (void)dst, (void)a, (void)b;
    return WK_OK;
}

T_SUITE(handles)
{
    wk_device *dev = t_dev();
    if (t_case("handles/lifetime")) {
        wk_tensor *a = T_NEED(wk_full(dev, WK_F32, WK_SHAPE(3), 1.0));
        wk_tensor *v = a ? T_NEED(wk_narrow(a, 0, 1, 2)) : NULL;
        if (v) {
            wk_tensor *d = dead_like(v);
            /* accessors: their NULL answers and the message */
            wk_clear_error();
            T_CHECK(wk_tensor_dtype(d) == WK_DTYPE_COUNT && strstr(wk_last_error(), "released"), "dtype of a released tensor");
            wk_clear_error();
            T_CHECK(wk_tensor_rank(d) == -1 && wk_tensor_numel(d) == -1 && wk_tensor_nbytes(d) == 0 &&
                        wk_tensor_dim(d, 0) == -1 && wk_tensor_stride(d, 0) == -1 && wk_tensor_offset(d) == -1 &&
                        !wk_tensor_is_contiguous(d) && !wk_tensor_device(d) && !wk_tensor_data(d) &&
                        !wk_tensor_same_storage(d, d) && wk_tensor_shape(d).rank == 0,
                    "accessors of a released tensor");
            T_CHECK(strstr(wk_last_error(), "released") != NULL, "accessors: no message (%s)", wk_last_error());
            DEAD_T("retain", wk_retain(d));
            DEAD_T("keep", wk_keep(d));
            wk_clear_error();
            wk_release(d);   /* a second release: reported, not done */
            dead_ok("release", true);
            /* a view keeps the storage: the released view's neighbour still works */
            float out[2] = { 0, 0 };
            T_OK(wk_to_host(v, out, sizeof out));
            T_CHECK(out[0] == 1.0f && out[1] == 1.0f, "a live view after its sibling's release");
        }
        /* the block that holds a tensor and its storage: released while a view lives */
        wk_tensor *b = wk_full(dev, WK_F32, WK_SHAPE(4), 2.0);
        wk_tensor *bv = b ? t_own(wk_narrow(b, 0, 0, 2)) : NULL;
        if (bv) {
            wk_release(wk_retain(b));   /* retain + release: still alive */
            wk_release(b);               /* now released; its storage lives for bv */
            DEAD_T("abs", wk_abs(b));
            float out[2];
            T_OK(wk_to_host(bv, out, sizeof out));
            T_CHECK(out[0] == 2.0f, "the view of a released tensor");
        }
        /* scopes release what they own: a handle used after wk_scope_end */
        wk_scope_begin();
        wk_tensor *s = wk_full(dev, WK_F32, WK_SHAPE(2), 1.0);
        wk_scope_end();
        DEAD_T("neg", wk_neg(s));
    }
    if (t_case("handles/ops")) {
        wk_tensor *x = f32(WK_SHAPE(2, 4), 0.5), *y = f32(WK_SHAPE(2, 4), 0.25), *dx = dead_like(x);
        wk_tensor *sq = f32(WK_SHAPE(4, 4), 0.5), *dsq = dead_like(sq);
        uint32_t idv[2] = { 0, 1 };
        wk_tensor *ids = T_NEED(wk_from_host(dev, WK_U32, WK_SHAPE(2), idv)), *dids = dead_like(ids);
        wk_tensor *ids2 = T_NEED(wk_from_host(dev, WK_U32, WK_SHAPE(2, 1), idv)), *dids2 = dead_like(ids2);
        wk_tensor *mask = T_NEED(wk_zeros(dev, WK_U8, WK_SHAPE(2, 4))), *dmask = dead_like(mask);
        wk_tensor *w4 = f32(WK_SHAPE(4), 1.0), *dw4 = dead_like(w4);
        if (!x || !y || !sq || !ids || !ids2 || !mask || !w4) return;
        float host[8];
        int perm[2] = { 1, 0 }, rd[1] = { 1 };
        DEAD_S("to_host", wk_to_host(dx, host, sizeof host));
        DEAD_S("write", wk_write(dx, host, sizeof host));
        DEAD_S("item", wk_item(dx, (const int64_t[]){ 0, 0 }, &(double){ 0 }));
        DEAD_T("to_device", wk_to_device(dx, dev));
        void *pinned = wk_host_alloc(dev, 64);
        if (pinned) DEAD_S("to_host_async", wk_to_host_async(dx, pinned, 64));
        wk_host_free(pinned);
        /* views and copies */
        DEAD_T("reshape", wk_reshape(dx, WK_SHAPE(8)));
        DEAD_T("narrow", wk_narrow(dx, 0, 0, 1));
        DEAD_T("transpose", wk_transpose(dx, 0, 1));
        DEAD_T("permute", wk_permute(dx, perm));
        DEAD_T("broadcast_as", wk_broadcast_as(dx, WK_SHAPE(3, 2, 4)));
        DEAD_T("squeeze", wk_squeeze(dx, 0));
        DEAD_T("unsqueeze", wk_unsqueeze(dx, 0));
        DEAD_T("flatten", wk_flatten(dx, 0, 1));
        DEAD_T("contiguous", wk_contiguous(dx));
        DEAD_T("copy", wk_copy(dx));
        DEAD_T("to_dtype", wk_to_dtype(dx, WK_F16));
        wk_tensor *pair[2] = { x, dx }, *pair2[2] = { dx, x };
        DEAD_T("cat", wk_cat(pair, 2, 0));
        DEAD_T("cat", wk_cat(pair2, 2, 0));
        DEAD_T("stack", wk_stack(pair, 2, 0));
        wk_tensor *parts[2] = { NULL, NULL };
        wk_clear_error();
        dead_ok("chunk", wk_chunk(dx, 2, 0, parts) < 0);
        /* elementwise */
        DEAD_T("exp", wk_exp(dx));
        DEAD_T("sqrt", wk_unary(WK_SQRT, dx));
        DEAD_T("affine", wk_affine(dx, 2, 1));
        DEAD_T("powf", wk_powf(dx, 2));
        DEAD_T("elu", wk_elu(dx, 1));
        DEAD_T("add", wk_add(dx, y));
        DEAD_T("add", wk_add(y, dx));
        DEAD_T("maximum", wk_binary(WK_MAXIMUM, y, dx));
        DEAD_T("lt", wk_cmp(WK_LT, dx, y));
        DEAD_T("lt", wk_cmp(WK_LT, y, dx));
        DEAD_T("where", wk_where(dmask, x, y));
        DEAD_T("where", wk_where(mask, dx, y));
        DEAD_T("where", wk_where(mask, y, dx));
        /* reductions, matmul */
        DEAD_T("sum", wk_sum(dx, rd, 1, false));
        DEAD_T("mean", wk_mean(dx, NULL, 0, false));
        DEAD_T("max", wk_reduce(WK_MAX, dx, NULL, 0, true));
        DEAD_T("argmax", wk_argmax(dx, 1, false));
        DEAD_T("argmin", wk_argmin(dx, 1, false));
        DEAD_T("matmul", wk_matmul(dsq, sq));
        DEAD_T("matmul", wk_matmul(sq, dsq));
        /* nn */
        DEAD_T("softmax", wk_softmax(dx, -1));
        DEAD_T("log_softmax", wk_log_softmax(dx, -1));
        DEAD_T("rms_norm", wk_rms_norm(dx, w4, 1e-5));
        DEAD_T("rms_norm", wk_rms_norm(x, dw4, 1e-5));
        DEAD_T("rms_norm", wk_rms_norm_gemma(dx, w4, 1e-5));
        wk_tensor *sum = NULL;
        DEAD_T("add_rms_norm", wk_add_rms_norm(dx, y, w4, 1e-5, false, &sum));
        DEAD_T("add_rms_norm", wk_add_rms_norm(x, dx, w4, 1e-5, false, &sum));
        DEAD_T("add_rms_norm", wk_add_rms_norm(x, y, dw4, 1e-5, false, &sum));
        DEAD_T("layer_norm", wk_layer_norm(dx, w4, w4, 1e-5));
        DEAD_T("layer_norm", wk_layer_norm(x, dw4, w4, 1e-5));
        DEAD_T("layer_norm", wk_layer_norm(x, w4, dw4, 1e-5));
        DEAD_T("silu_mul", wk_silu_mul(dx, y));
        DEAD_T("silu_mul", wk_silu_mul(x, dx));
        DEAD_T("linear_silu_mul", wk_linear_silu_mul(dx, sq));
        DEAD_T("linear_silu_mul", wk_linear_silu_mul(x, dsq));
        /* rope: x [1, 1, 2, 4], tables [2, 2] */
        wk_tensor *rx = f32(WK_SHAPE(1, 1, 2, 4), 1), *drx = dead_like(rx), *cs = f32(WK_SHAPE(2, 2), 1), *dcs = dead_like(cs);
        if (!rx || !cs) return;
        DEAD_T("rope", wk_rope(drx, cs, cs, 0));
        DEAD_T("rope", wk_rope(rx, dcs, cs, 0));
        DEAD_T("rope", wk_rope(rx, cs, dcs, 0));
        DEAD_T("rope_i", wk_rope_i(drx, cs, cs, 0));
        DEAD_T("rope_thd", wk_rope_thd(rx, cs, dcs, 0));
        /* rope_kv: qkv [1, 2, 3, 4] (1 query, 1 key, 1 value head), caches [1, 1, 4, 4] */
        wk_tensor *qkv = f32(WK_SHAPE(1, 2, 3, 4), 1), *dqkv = dead_like(qkv);
        wk_tensor *kc = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 4, 4))), *vc = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 4, 4)));
        wk_tensor *dkc = kc ? dead_like(kc) : NULL;
        int64_t p0 = 0;
        wk_tensor *pt = T_NEED(wk_from_host(dev, WK_I64, WK_SHAPE(1), &p0)), *dpt = pt ? dead_like(pt) : NULL;
        if (!qkv || !kc || !vc || !pt) return;
        DEAD_T("rope_kv", wk_rope_kv(dqkv, 1, cs, cs, 0, NULL, false, kc, vc));
        DEAD_T("rope_kv", wk_rope_kv(qkv, 1, dcs, cs, 0, NULL, false, kc, vc));
        DEAD_T("rope_kv", wk_rope_kv(qkv, 1, cs, dcs, 0, NULL, false, kc, vc));
        DEAD_T("rope_kv", wk_rope_kv(qkv, 1, cs, cs, 0, dpt, false, kc, vc));
        DEAD_T("rope_kv", wk_rope_kv(qkv, 1, cs, cs, 0, NULL, false, dkc, vc));
        DEAD_T("rope_kv", wk_rope_kv(qkv, 1, cs, cs, 0, NULL, false, kc, dkc));
        wk_tensor *lw = f32(WK_SHAPE(12, 4), 0.1), *dlw = lw ? dead_like(lw) : NULL, *lx = f32(WK_SHAPE(2, 4), 1);
        wk_tensor *dlx = lx ? dead_like(lx) : NULL;
        if (!lw || !lx) return;
        DEAD_T("linear_rope_kv", wk_linear_rope_kv(dlx, lw, 1, cs, cs, 0, NULL, false, kc, vc));
        DEAD_T("linear_rope_kv", wk_linear_rope_kv(lx, dlw, 1, cs, cs, 0, NULL, false, kc, vc));
        DEAD_T("linear_rope_kv", wk_linear_rope_kv(lx, lw, 1, cs, cs, 0, NULL, false, kc, dkc));
        /* attention: q, k, v [1, 1, 2, 4] */
        DEAD_T("attention", wk_attention(drx, rx, rx, NULL));
        DEAD_T("attention", wk_attention(rx, drx, rx, NULL));
        DEAD_T("attention", wk_attention(rx, rx, drx, NULL));
        wk_tensor *am = f32(WK_SHAPE(2, 2), 0), *dam = am ? dead_like(am) : NULL;
        DEAD_T("attention", wk_attention(rx, rx, rx, &(wk_attention_opts){ .mask = dam }));
        DEAD_T("attention", wk_attention(rx, rx, rx, &(wk_attention_opts){ .kv_len = dpt }));
        /* paged attention: q [1, 1, 8], pools [2, 4, 1, 8], tables [1, 2], seq and pos [1] */
        wk_tensor *pq = f32(WK_SHAPE(1, 1, 8), 1), *pool = f32(WK_SHAPE(2, 4, 1, 8), 1);
        uint32_t btv[2] = { 0, 1 }, zero = 0;
        wk_tensor *bt = T_NEED(wk_from_host(dev, WK_U32, WK_SHAPE(1, 2), btv)), *sv = T_NEED(wk_from_host(dev, WK_U32, WK_SHAPE(1), &zero));
        if (!pq || !pool || !bt || !sv) return;
        wk_tensor *dpq = dead_like(pq), *dpool = dead_like(pool), *dbt = dead_like(bt), *dsv = dead_like(sv);
        DEAD_T("paged_attention", wk_paged_attention(dpq, pool, pool, bt, sv, sv, NULL));
        DEAD_T("paged_attention", wk_paged_attention(pq, dpool, pool, bt, sv, sv, NULL));
        DEAD_T("paged_attention", wk_paged_attention(pq, pool, dpool, bt, sv, sv, NULL));
        DEAD_T("paged_attention", wk_paged_attention(pq, pool, pool, dbt, sv, sv, NULL));
        DEAD_T("paged_attention", wk_paged_attention(pq, pool, pool, bt, dsv, sv, NULL));
        DEAD_T("paged_attention", wk_paged_attention(pq, pool, pool, bt, sv, dsv, NULL));
        /* quantized */
        wk_tensor *qx = f32(WK_SHAPE(2, 32), 0.5), *dqx = qx ? dead_like(qx) : NULL;
        wk_tensor *qw = qx ? T_NEED(wk_quantize(qx, WK_Q8_0)) : NULL, *dqw = qw ? dead_like(qw) : NULL;
        if (!qw) return;
        DEAD_T("quantize", wk_quantize(dqx, WK_Q8_0));
        DEAD_T("dequantize", wk_dequantize(dqw, WK_F32));
        DEAD_T("qmatmul", wk_qmatmul(dqx, qw));
        DEAD_T("qmatmul", wk_qmatmul(qx, dqw));
        DEAD_T("qgather", wk_qgather(dqw, ids, WK_F32));
        DEAD_T("qgather", wk_qgather(qw, dids, WK_F32));
        /* conv, pools, upsampling: x [1, 1, 4, 4], w [1, 1, 2, 2], bias [1] */
        wk_tensor *cx = f32(WK_SHAPE(1, 1, 4, 4), 1), *cw = f32(WK_SHAPE(1, 1, 2, 2), 1), *cb = f32(WK_SHAPE(1), 0);
        wk_tensor *cx1 = f32(WK_SHAPE(1, 1, 4), 1), *cw1 = f32(WK_SHAPE(1, 1, 2), 1);
        if (!cx || !cw || !cb || !cx1 || !cw1) return;
        wk_tensor *dcx = dead_like(cx), *dcw = dead_like(cw), *dcb = dead_like(cb), *dcx1 = dead_like(cx1);
        DEAD_T("conv2d", wk_conv2d(dcx, cw, cb, NULL));
        DEAD_T("conv2d", wk_conv2d(cx, dcw, cb, NULL));
        DEAD_T("conv2d", wk_conv2d(cx, cw, dcb, NULL));
        DEAD_T("conv1d", wk_conv1d(dcx1, cw1, NULL, NULL));
        DEAD_T("conv_transpose1d", wk_conv_transpose1d(dcx1, cw1, NULL, NULL));
        DEAD_T("conv_transpose2d", wk_conv_transpose2d(cx, dcw, NULL, NULL));
        const wk_pool_opts po = { .kernel = { 2, 2 } };
        DEAD_T("avg_pool2d", wk_avg_pool2d(dcx, &po));
        wk_tensor *pidx = NULL;
        DEAD_T("max_pool2d", wk_max_pool2d(dcx, &po, &pidx));
        DEAD_T("upsample_nearest1d", wk_upsample_nearest1d(dcx1, 8, 0));
        DEAD_T("upsample_nearest2d", wk_upsample_nearest2d(dcx, 8, 8, 0, 0));
        DEAD_T("upsample_bilinear2d", wk_upsample_bilinear2d(dcx, 8, 8, false, 0, 0));
        /* sorting */
        wk_tensor *sidx = NULL;
        DEAD_T("arg_sort", wk_arg_sort(dx, false));
        DEAD_T("sort", wk_sort(dx, true, &sidx));
        DEAD_T("topk", wk_topk(dx, 2, true, &sidx));
        /* indexing: x [2, 4], ids u32 [2], ids2 [2, 1] */
        DEAD_T("index_select", wk_index_select(dx, ids, 0));
        DEAD_T("index_select", wk_index_select(x, dids, 0));
        DEAD_T("gather", wk_gather(dx, ids2, 1));
        DEAD_T("gather", wk_gather(x, dids2, 1));
        wk_tensor *src = f32(WK_SHAPE(2, 1), 3), *dsrc = src ? dead_like(src) : NULL, *dst = f32(WK_SHAPE(2, 4), 0);
        wk_tensor *src4 = f32(WK_SHAPE(2, 4), 3), *dsrc4 = src4 ? dead_like(src4) : NULL;
        if (!src || !dst || !src4) return;
        DEAD_S("scatter_set", wk_scatter_set(dx, ids2, src, 1));
        DEAD_S("scatter_set", wk_scatter_set(dst, dids2, src, 1));
        DEAD_S("scatter_set", wk_scatter_set(dst, ids2, dsrc, 1));
        DEAD_S("scatter_add", wk_scatter_add(dst, ids2, dsrc, 1));
        DEAD_S("index_add", wk_index_add(dx, ids, src4, 0));
        DEAD_S("index_add", wk_index_add(dst, dids, src4, 0));
        DEAD_S("index_add", wk_index_add(dst, ids, dsrc4, 0));
        DEAD_S("const_set", wk_const_set(dx, 1.0));
        DEAD_S("copy_into", wk_copy_into(dx, src4));
        DEAD_S("copy_into", wk_copy_into(dst, dsrc4));
        DEAD_S("copy2d", wk_copy2d(dx, src4, 1, 4, 4, 4, 0, 0));
        DEAD_S("copy2d", wk_copy2d(dst, dsrc4, 1, 4, 4, 4, 0, 0));
        float back[8];
        T_OK(wk_to_host(dst, back, sizeof back));
        for (int i = 0; i < 8; i++) T_CHECK(back[i] == 0.0f, "dst[%d] = %g: written by a refused op", i, back[i]);
        /* custom ops */
        const wk_custom_op1 o1 = { .name = "custom1", .cpu = cpu_fwd1 };
        const wk_custom_op2 o2 = { .name = "custom2", .cpu = cpu_fwd2 };
        const wk_custom_op3 o3 = { .name = "custom3", .cpu = cpu_fwd3 };
        DEAD_T("custom1", wk_apply_op1(&o1, dx));
        DEAD_T("custom2", wk_apply_op2(&o2, x, dx));
        DEAD_T("custom3", wk_apply_op3(&o3, x, y, dx));
        const wk_inplace_op1 i1 = { .name = "inplace1", .cpu = ip1 };
        const wk_inplace_op2 i2 = { .name = "inplace2", .cpu = ip2 };
        const wk_inplace_op3 i3 = { .name = "inplace3", .cpu = ip3 };
        DEAD_S("inplace1", wk_apply_inplace1(&i1, dx));
        DEAD_S("inplace2", wk_apply_inplace2(&i2, dst, dx));
        DEAD_S("inplace3", wk_apply_inplace3(&i3, dst, x, dx));
        /* collectives: a communicator of one rank */
        wk_comm *comm = NULL;
        if (wk_comm_init_all(&dev, 1, &comm) == WK_OK) {
            DEAD_S("all_reduce", wk_all_reduce(comm, dx));
            DEAD_T("all_gather", wk_all_gather(comm, dx, 0));
            DEAD_S("broadcast", wk_broadcast(comm, dx, 0));
            DEAD_T("all_reduce_add_rms_norm", wk_all_reduce_add_rms_norm(comm, dx, y, w4, 1e-5, false, &sum));
            DEAD_T("all_reduce_add_rms_norm", wk_all_reduce_add_rms_norm(comm, x, dx, w4, 1e-5, false, &sum));
            DEAD_T("all_reduce_add_rms_norm", wk_all_reduce_add_rms_norm(comm, x, y, dw4, 1e-5, false, &sum));
            wk_comm_free(comm);
        }
        /* the GGUF writer keeps a reference: it must not take a released one */
        wk_gguf_writer *gw = wk_gguf_writer_new();
        if (gw) DEAD_S("add_tensor", wk_gguf_writer_add_tensor(gw, "t", dx));
        wk_gguf_writer_free(gw);
    }
}

#endif /* WK_DEBUG_HANDLES */
