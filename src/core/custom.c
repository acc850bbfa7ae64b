/* custom.c — custom ops (include/wick_ext.h): wk_apply_op1..3 and
 * wk_apply_inplace1..3 check their tensors, give the user's callback of
 * the device's kind raw views and, on a GPU, the device's stream (the
 * backend's stream member, which also makes the device current), and
 * turn what the callback returns into wick's error state. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core.h"
#include "wick_ext.h"

/* The thread's error state from before a call. A call that succeeds
 * leaves it as it was (the library's rule), but a custom op clears it to
 * see whether a callback reported through wk_error_set, so it keeps a
 * copy and puts it back after success. */
typedef struct err_saved {
    wk_status status;
    char msg[1024];
} err_saved;
static void err_save(err_saved *e)
{
    e->status = wk_last_status();
    if (e->status != WK_OK) snprintf(e->msg, sizeof e->msg, "%s", wk_last_error());
}
static void err_restore(const err_saved *e)
{
    if (e->status == WK_OK) wk_clear_error();
    else wk_error(e->status, "%s", e->msg);
}

static wk_raw_view raw_of(const wk_tensor *t)
{
    wk_raw_view v;
    memset(&v, 0, sizeof v);
    /* offsets of block dtypes are whole blocks (dtype_traits.h) */
    v.data = t->st->ptr ? (char *)t->st->ptr + t->offset / wk_dt_block(t->dtype) * wk_dt_block_bytes(t->dtype)
                        : NULL;
    v.dtype = t->dtype;
    v.rank = t->rank;
    for (int d = 0; d < t->rank; d++) {
        v.dims[d] = t->dims[d];
        v.strides[d] = t->strides[d];
    }
    return v;
}

/* The callback of dev's kind among (cpu, cuda, rocm), as a generic
 * pointer; NULL + WK_ERR_UNSUPPORTED when there is none. */
static void *pick(const char *name, wk_device *dev, void *cpu, void *cuda, void *rocm)
{
    const char *kind = dev->be->kind;
    void *f = strcmp(kind, "cpu") == 0 ? cpu : strcmp(kind, "cuda") == 0 ? cuda : strcmp(kind, "rocm") == 0 ? rocm : NULL;
    if (!f) wk_error(WK_ERR_UNSUPPORTED, "%s is not implemented for %s (no %s callback; device %s)", name, kind, kind,
                     dev->name);
    return f;
}

static bool make_env(wk_device *dev, wk_custom_env *env)
{
    env->dev = dev;
    env->kind = dev->be->kind;
    env->stream = NULL;
    if (dev->be->stream && dev->be->stream(dev->ctx, &env->stream) != WK_OK) return false;
    return true;
}

/* The callback's status, with a message when it set none of its own. */
static wk_status after_callback(const char *name, wk_device *dev, wk_status st)
{
    if (st == WK_OK) return WK_OK;
    if ((unsigned)st >= WK_STATUS_COUNT) st = WK_ERR_BACKEND;
    if (wk_last_status() == WK_OK)
        wk_error(st, "%s failed on %s (its callback returned %s)", name, dev->name, wk_status_name(st));
    return st;
}

/* Inputs as the callback gets them: the tensor itself, or a contiguous
 * copy (contiguous, or alias: it shares storage with dst). *tmp gets the
 * copy to release. */
static const wk_tensor *prepare(const wk_tensor *t, bool contiguous, const wk_tensor *dst, wk_tensor **tmp)
{
    *tmp = NULL;
    if (dst && t->st == dst->st) *tmp = wk_copy(t);
    else if (contiguous && !wk_tensor_is_contiguous(t)) *tmp = wk_contiguous(t);
    else return t;
    return *tmp;
}

static const char *const in_names[3] = { "a", "b", "c" };

/* ---- new output ---------------------------------------------------------- */

static wk_tensor *apply_impl(int n, const void *opv, const char *name, void *cpu, void *cuda, void *rocm,
                             bool contiguous, const wk_tensor *const *in)
{
    if (!opv) {
        wk_error(WK_ERR_ARGUMENT, "NULL custom op");
        return NULL;
    }
#ifdef WK_DEBUG_HANDLES
    for (int i = 0; i < n; i++) {   /* the op's own name in the message */
        char what[160];
        snprintf(what, sizeof what, "%s: %s", name, in_names[i]);
        if (WK_DEAD(in[i], what)) return NULL;
    }
#endif
    if (!wk_check_tensors(n, in, in_names)) return NULL;
    wk_device *dev = in[0]->st->dev;
    wk_tensor *tmp[3] = { NULL, NULL, NULL }, *out = NULL;
    const wk_tensor *use[3] = { NULL, NULL, NULL };
    wk_raw_view v[3], vo;
    wk_status st = WK_OK;
    void *fwd = pick(name, dev, cpu, cuda, rocm);
    if (!fwd) return NULL;
    for (int i = 0; i < n && st == WK_OK; i++) {
        use[i] = prepare(in[i], contiguous, NULL, &tmp[i]);
        if (!use[i]) st = wk_last_status();
        else v[i] = raw_of(use[i]);
    }
    wk_dtype dt = in[0]->dtype;
    wk_shape shape = wk_tensor_shape(in[0]);
    if (st == WK_OK) {
        wk_status s2 = WK_OK;
        wk_clear_error();
        if (n == 1 && ((const wk_custom_op1 *)opv)->shape)
            s2 = ((const wk_custom_op1 *)opv)->shape(opv, &v[0], &dt, &shape);
        else if (n == 2 && ((const wk_custom_op2 *)opv)->shape)
            s2 = ((const wk_custom_op2 *)opv)->shape(opv, &v[0], &v[1], &dt, &shape);
        else if (n == 3 && ((const wk_custom_op3 *)opv)->shape)
            s2 = ((const wk_custom_op3 *)opv)->shape(opv, &v[0], &v[1], &v[2], &dt, &shape);
        if (s2 != WK_OK) {
            st = (unsigned)s2 < WK_STATUS_COUNT ? s2 : WK_ERR_SHAPE;
            if (wk_last_status() == WK_OK)
                wk_error(st, "%s: its shape function refused the inputs (%s)", name, wk_status_name(st));
        } else if (!wk_dtype_valid(dt)) {
            st = wk_error(WK_ERR_DTYPE, "%s: its shape function gave dtype %d", name, (int)dt);
        } else if (!wk_shape_valid(name, shape)) {
            st = wk_last_status();
        }
    }
    if (st == WK_OK) {
        out = wk_tensor_alloc(dev, dt, shape.rank, shape.dims);
        if (!out) st = wk_last_status();
    }
    if (st == WK_OK && wk_tensor_numel(out) > 0) {
        wk_custom_env env;
        vo = raw_of(out);
        if (!make_env(dev, &env)) {
            st = wk_last_status();
        } else {
            wk_clear_error();
            if (n == 1) st = ((wk_custom_fwd1)fwd)(opv, &env, &vo, &v[0]);
            else if (n == 2) st = ((wk_custom_fwd2)fwd)(opv, &env, &vo, &v[0], &v[1]);
            else st = ((wk_custom_fwd3)fwd)(opv, &env, &vo, &v[0], &v[1], &v[2]);
            st = after_callback(name, dev, st);
        }
    }
    for (int i = 0; i < 3; i++) wk_release(tmp[i]);
    return wk_finish(st, out);
}

/* ---- in place ------------------------------------------------------------- */

static wk_status inplace_impl(int n, const void *opv, const char *name, void *cpu, void *cuda, void *rocm,
                              bool contiguous, wk_tensor *dst, const wk_tensor *const *in)
{
    if (!opv) return wk_error(WK_ERR_ARGUMENT, "NULL custom op");
    static const char *const names[3] = { "dst", "a", "b" };
    const wk_tensor *ts[3] = { dst, n > 1 ? in[0] : NULL, n > 2 ? in[1] : NULL };
#ifdef WK_DEBUG_HANDLES
    for (int i = 0; i < n; i++) {   /* the op's own name in the message */
        char what[160];
        snprintf(what, sizeof what, "%s: %s", name, names[i]);
        if (WK_DEAD(ts[i], what)) return wk_last_status();
    }
#endif
    if (!wk_check_tensors(n, ts, names)) return wk_last_status();
    wk_device *dev = dst->st->dev;
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_ARGUMENT, "%s: dst has overlapping elements (a broadcast view) and cannot be written",
                        name);
    void *fwd = pick(name, dev, cpu, cuda, rocm);
    if (!fwd) return wk_last_status();
    if (wk_tensor_numel(dst) == 0) return WK_OK;
    wk_tensor *tmp[2] = { NULL, NULL };
    wk_raw_view v[2], vd = raw_of(dst);
    wk_status st = WK_OK;
    for (int i = 0; i < n - 1 && st == WK_OK; i++) {
        const wk_tensor *u = prepare(in[i], contiguous, dst, &tmp[i]);
        if (!u) st = wk_last_status();
        else v[i] = raw_of(u);
    }
    wk_custom_env env;
    if (st == WK_OK && !make_env(dev, &env)) st = wk_last_status();
    if (st == WK_OK) {
        wk_clear_error();
        if (n == 1)
            st = ((wk_status (*)(const wk_inplace_op1 *, const wk_custom_env *, const wk_raw_view *))fwd)(opv, &env,
                                                                                                           &vd);
        else if (n == 2)
            st = ((wk_status (*)(const wk_inplace_op2 *, const wk_custom_env *, const wk_raw_view *,
                                 const wk_raw_view *))fwd)(opv, &env, &vd, &v[0]);
        else
            st = ((wk_status (*)(const wk_inplace_op3 *, const wk_custom_env *, const wk_raw_view *,
                                 const wk_raw_view *, const wk_raw_view *))fwd)(opv, &env, &vd, &v[0], &v[1]);
        st = after_callback(name, dev, st);
    }
    wk_release(tmp[0]);
    wk_release(tmp[1]);
    return st;
}

/* ---- the public functions ---------------------------------------------------
 * The callbacks travel as generic pointers and are called through the
 * type they were declared with (a pointer to the op struct, passed as
 * const void *, which the callbacks' first parameter receives). */
#define FP_(op, f) ((op) ? (void *)(op)->f : NULL)
#define NAME_(op, dflt) ((op) && (op)->name ? (op)->name : (dflt))

static wk_tensor *op1_impl(const wk_custom_op1 *op, const wk_tensor *a)
{
    const wk_tensor *in[1] = { a };
    return apply_impl(1, op, NAME_(op, "custom_op1"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm),
                      op && op->contiguous, in);
}
static wk_tensor *op2_impl(const wk_custom_op2 *op, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *in[2] = { a, b };
    return apply_impl(2, op, NAME_(op, "custom_op2"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm),
                      op && op->contiguous, in);
}
static wk_tensor *op3_impl(const wk_custom_op3 *op, const wk_tensor *a, const wk_tensor *b, const wk_tensor *c)
{
    const wk_tensor *in[3] = { a, b, c };
    return apply_impl(3, op, NAME_(op, "custom_op3"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm),
                      op && op->contiguous, in);
}
static wk_status in1_impl(const wk_inplace_op1 *op, wk_tensor *dst)
{
    return inplace_impl(1, op, NAME_(op, "inplace_op1"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm), false, dst,
                        NULL);
}
static wk_status in2_impl(const wk_inplace_op2 *op, wk_tensor *dst, const wk_tensor *a)
{
    const wk_tensor *in[1] = { a };
    return inplace_impl(2, op, NAME_(op, "inplace_op2"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm),
                        op && op->contiguous, dst, in);
}
static wk_status in3_impl(const wk_inplace_op3 *op, wk_tensor *dst, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *in[2] = { a, b };
    return inplace_impl(3, op, NAME_(op, "inplace_op3"), FP_(op, cpu), FP_(op, cuda), FP_(op, rocm),
                        op && op->contiguous, dst, in);
}

/* WK_API with the caller's earlier error kept on success (err_save) */
#define CUSTOM_API_(T, ok, call)                                             \
    {                                                                        \
        err_saved e_;                                                        \
        err_save(&e_);                                                       \
        WK_ENTER("custom_op");                                               \
        T r_ = (call);                                                       \
        WK_LEAVE();                                                          \
        if (ok) err_restore(&e_);                                            \
        return r_;                                                           \
    }

wk_tensor *wk_apply_op1(const wk_custom_op1 *op, const wk_tensor *a)
    CUSTOM_API_(wk_tensor *, r_ != NULL, op1_impl(op, a))
wk_tensor *wk_apply_op2(const wk_custom_op2 *op, const wk_tensor *a, const wk_tensor *b)
    CUSTOM_API_(wk_tensor *, r_ != NULL, op2_impl(op, a, b))
wk_tensor *wk_apply_op3(const wk_custom_op3 *op, const wk_tensor *a, const wk_tensor *b, const wk_tensor *c)
    CUSTOM_API_(wk_tensor *, r_ != NULL, op3_impl(op, a, b, c))
wk_status wk_apply_inplace1(const wk_inplace_op1 *op, wk_tensor *dst)
    CUSTOM_API_(wk_status, r_ == WK_OK, in1_impl(op, dst))
wk_status wk_apply_inplace2(const wk_inplace_op2 *op, wk_tensor *dst, const wk_tensor *a)
    CUSTOM_API_(wk_status, r_ == WK_OK, in2_impl(op, dst, a))
wk_status wk_apply_inplace3(const wk_inplace_op3 *op, wk_tensor *dst, const wk_tensor *a, const wk_tensor *b)
    CUSTOM_API_(wk_status, r_ == WK_OK, in3_impl(op, dst, a, b))
