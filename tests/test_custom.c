/* test_custom.c — custom ops (wick_ext.h) on the cpu: the six forms
 * (wk_apply_op1..3, wk_apply_inplace1..3) against naive loops in double,
 * the raw views a callback gets (data, dtype, dims, strides of strided,
 * narrowed and broadcast inputs; contiguous copies on request), shape
 * functions (another dtype and shape, a refusal with its own message),
 * the user's struct and data passed back untouched, the environment (cpu,
 * no stream), in-place aliasing (an input that shares dst's storage is
 * read as it was before the op; a broadcast dst is refused; views of dst
 * see the writes), and the errors: NULL arguments, a kind without a
 * callback ("not implemented for cpu"), a failing callback with and
 * without its own message, an empty output (callback not called).
 *
 * Case names: custom/<what>.
 */
#include <string.h>
#include "test.h"
#include "wick_ext.h"

/* ---- helpers ---------------------------------------------------------- */

/* element i (row-major over v's dims) of an f32 view */
static float at(const wk_raw_view *v, int64_t i)
{
    int64_t off = 0;
    for (int d = v->rank - 1; d >= 0; d--) {
        int64_t k = v->dims[d] ? i % v->dims[d] : 0;
        i = v->dims[d] ? i / v->dims[d] : 0;
        off += k * v->strides[d];
    }
    return ((const float *)v->data)[off];
}
static float *at_w(const wk_raw_view *v, int64_t i)
{
    int64_t off = 0;
    for (int d = v->rank - 1; d >= 0; d--) {
        int64_t k = i % v->dims[d];
        i /= v->dims[d];
        off += k * v->strides[d];
    }
    return (float *)v->data + off;
}
static int64_t numel(const wk_raw_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->dims[d];
    return n;
}

typedef struct user_data {
    double factor;
    int calls;
    const void *op_seen;            /* the op pointer the callback got  */
    const void *user_seen;
    const char *kind_seen;
    void *stream_seen;
    wk_device *dev_seen;
    wk_raw_view a_seen, out_seen;
} user_data;

static wk_tensor *from_f32(const float *v, wk_shape s)
{
    return T_NEED(wk_from_host(t_dev(), WK_F32, s, v));
}
static bool read_f32(const wk_tensor *t, float *out, int64_t n)
{
    if (!t || wk_tensor_numel(t) != n) {
        t_fail("tensor missing or of %lld elements, want %lld", t ? (long long)wk_tensor_numel(t) : -1LL, (long long)n);
        return false;
    }
    wk_status st = wk_to_host(t, out, (size_t)n * 4);
    if (st != WK_OK) t_fail("wk_to_host: %s", wk_last_error());
    return st == WK_OK;
}

/* ---- op1: out = factor * a, any strides ------------------------------- */

static wk_status scale_cpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                           const wk_raw_view *a)
{
    user_data *u = op->user;
    u->calls++;
    u->op_seen = op;
    u->user_seen = op->user;
    u->kind_seen = env->kind;
    u->stream_seen = env->stream;
    u->dev_seen = env->dev;
    u->a_seen = *a;
    u->out_seen = *out;
    if (a->dtype != WK_F32 || out->dtype != WK_F32) return wk_error_set(WK_ERR_DTYPE, "scale takes f32");
    for (int64_t i = 0; i < numel(out); i++) *at_w(out, i) = (float)(u->factor * at(a, i));
    return WK_OK;
}

static void op1_cases(void)
{
    if (t_case("custom/op1/strided")) {
        user_data u = { .factor = 3.0 };
        wk_custom_op1 op = { .name = "scale", .cpu = scale_cpu, .user = &u };
        const wk_custom_op1 copy = op;
        float v[12];
        for (int i = 0; i < 12; i++) v[i] = (float)(i - 5) * 0.5f;
        wk_tensor *x = from_f32(v, WK_SHAPE(3, 4));
        wk_tensor *xt = x ? T_NEED(wk_transpose(x, 0, 1)) : NULL;      /* [4, 3] */
        wk_tensor *y = xt ? T_NEED(wk_apply_op1(&op, xt)) : NULL;
        float got[12];
        if (y && read_f32(y, got, 12)) {
            wk_shape s = wk_tensor_shape(y);
            T_CHECK(s.rank == 2 && s.dims[0] == 4 && s.dims[1] == 3, "shape %s, want [4, 3]", t_shape_str(s));
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 3; j++)
                    T_CHECK(got[i * 3 + j] == 3.0f * v[j * 4 + i], "y[%d][%d] = %g, want %g", i, j, got[i * 3 + j],
                            3.0 * v[j * 4 + i]);
            T_CHECK(u.calls == 1, "callback called %d times", u.calls);
            T_CHECK(u.op_seen == &op && u.user_seen == &u, "the callback got op %p user %p, want %p %p", u.op_seen,
                    u.user_seen, (void *)&op, (void *)&u);
            T_CHECK(memcmp(&copy, &op, sizeof op) == 0, "the op struct changed");
            T_CHECK(u.kind_seen && strcmp(u.kind_seen, "cpu") == 0, "env kind %s", u.kind_seen ? u.kind_seen : "NULL");
            T_CHECK(u.stream_seen == NULL, "a stream on the cpu");
            T_CHECK(u.dev_seen == t_dev(), "env dev is not the input's device");
            /* the transposed view as it is: strides [1, 4] */
            T_CHECK(u.a_seen.rank == 2 && u.a_seen.dims[0] == 4 && u.a_seen.strides[0] == 1 &&
                        u.a_seen.strides[1] == 4 && u.a_seen.data == wk_tensor_data(xt),
                    "input view: rank %d dims [%lld, %lld] strides [%lld, %lld]", u.a_seen.rank,
                    (long long)u.a_seen.dims[0], (long long)u.a_seen.dims[1], (long long)u.a_seen.strides[0],
                    (long long)u.a_seen.strides[1]);
            T_CHECK(u.out_seen.strides[0] == 3 && u.out_seen.strides[1] == 1 && u.out_seen.data == wk_tensor_data(y),
                    "output view is not y, contiguous");
        }
    }
    if (t_case("custom/op1/contiguous_and_offset")) {
        user_data u = { .factor = -1.0 };
        wk_custom_op1 op = { .name = "neg", .cpu = scale_cpu, .contiguous = true, .user = &u };
        float v[20];
        for (int i = 0; i < 20; i++) v[i] = (float)i;
        wk_tensor *x = from_f32(v, WK_SHAPE(4, 5));
        wk_tensor *n = x ? T_NEED(wk_narrow(x, 1, 1, 3)) : NULL;        /* [4, 3], offset 1 */
        wk_tensor *y = n ? T_NEED(wk_apply_op1(&op, n)) : NULL;
        float got[12];
        if (y && read_f32(y, got, 12)) {
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 3; j++)
                    T_CHECK(got[i * 3 + j] == -v[i * 5 + j + 1], "y[%d][%d] = %g", i, j, got[i * 3 + j]);
            T_CHECK(u.a_seen.strides[0] == 3 && u.a_seen.strides[1] == 1, "contiguous was asked: strides [%lld, %lld]",
                    (long long)u.a_seen.strides[0], (long long)u.a_seen.strides[1]);
        }
        /* without the flag the narrowed view arrives with its offset applied */
        op.contiguous = false;
        wk_tensor *y2 = n ? T_NEED(wk_apply_op1(&op, n)) : NULL;
        if (y2 && read_f32(y2, got, 12)) {
            T_CHECK(u.a_seen.data == (float *)wk_tensor_data(x) + 1 && u.a_seen.strides[0] == 5,
                    "narrowed view: data not at element 1 or row stride %lld", (long long)u.a_seen.strides[0]);
            T_CHECK(got[4] == -v[7], "y2[1][1] = %g, want %g", got[4], -v[7]);
        }
    }
    if (t_case("custom/op1/broadcast_input")) {
        user_data u = { .factor = 2.0 };
        wk_custom_op1 op = { .name = "scale", .cpu = scale_cpu, .user = &u };
        float v[3] = { 1, 2, 3 };
        wk_tensor *x = from_f32(v, WK_SHAPE(1, 3));
        wk_tensor *b = x ? T_NEED(wk_broadcast_as(x, WK_SHAPE(4, 3))) : NULL;
        wk_tensor *y = b ? T_NEED(wk_apply_op1(&op, b)) : NULL;
        float got[12];
        if (y && read_f32(y, got, 12)) {
            T_CHECK(u.a_seen.strides[0] == 0, "broadcast dim has stride %lld, want 0", (long long)u.a_seen.strides[0]);
            for (int i = 0; i < 12; i++) T_CHECK(got[i] == 2 * v[i % 3], "y[%d] = %g", i, got[i]);
        }
    }
}

/* ---- shape functions: row sums in f64 -------------------------------- */

static wk_status rowsum_shape(const wk_custom_op1 *op, const wk_raw_view *a, wk_dtype *dt, wk_shape *shape)
{
    (void)op;
    if (a->rank != 2) return wk_error_set(WK_ERR_SHAPE, "rowsum takes a matrix, not rank %d", a->rank);
    *dt = WK_F64;
    *shape = WK_SHAPE(a->dims[0]);
    return WK_OK;
}
static wk_status rowsum_cpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                            const wk_raw_view *a)
{
    (void)env;
    ((user_data *)op->user)->calls++;
    if (out->dtype != WK_F64 || out->rank != 1) return WK_ERR_DTYPE;
    for (int64_t i = 0; i < a->dims[0]; i++) {
        double s = 0;
        for (int64_t j = 0; j < a->dims[1]; j++) s += ((const float *)a->data)[i * a->strides[0] + j * a->strides[1]];
        ((double *)out->data)[i * out->strides[0]] = s;
    }
    return WK_OK;
}

static void shape_cases(void)
{
    if (t_case("custom/shape_fn/dtype_and_shape")) {
        user_data u = { 0 };
        wk_custom_op1 op = { .name = "rowsum", .shape = rowsum_shape, .cpu = rowsum_cpu, .user = &u };
        float v[6] = { 1, 2, 3, 4, 5, 6.5f };
        wk_tensor *x = from_f32(v, WK_SHAPE(2, 3));
        wk_tensor *y = x ? T_NEED(wk_apply_op1(&op, x)) : NULL;
        if (y) {
            wk_shape s = wk_tensor_shape(y);
            T_CHECK(wk_tensor_dtype(y) == WK_F64 && s.rank == 1 && s.dims[0] == 2, "got %s %s, want f64 [2]",
                    wk_dtype_name(wk_tensor_dtype(y)), t_shape_str(s));
            double got[2] = { 0, 0 };
            T_OK(wk_to_host(y, got, sizeof got));
            T_CHECK(got[0] == 6 && got[1] == 15.5, "sums %g %g, want 6 15.5", got[0], got[1]);
        }
    }
    if (t_case("custom/shape_fn/refusal")) {
        user_data u = { 0 };
        wk_custom_op1 op = { .name = "rowsum", .shape = rowsum_shape, .cpu = rowsum_cpu, .user = &u };
        wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 3, 4)));
        wk_tensor *y = x ? wk_apply_op1(&op, x) : NULL;
        T_CHECK(!y, "a rank-3 input was taken");
        t_own(y);
        t_check_error("rowsum of rank 3", WK_ERR_SHAPE, wk_last_status(), "rowsum takes a matrix", "rank 3",
                      (const char *)NULL);
        T_CHECK(u.calls == 0, "the callback ran after the shape function refused");
    }
    if (t_case("custom/empty_output")) {
        user_data u = { .factor = 1 };
        wk_custom_op1 op = { .name = "scale", .cpu = scale_cpu, .user = &u };
        wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0, 5)));
        wk_tensor *y = x ? T_NEED(wk_apply_op1(&op, x)) : NULL;
        T_CHECK(!y || wk_tensor_numel(y) == 0, "empty input gave %lld elements", y ? (long long)wk_tensor_numel(y) : 0LL);
        T_CHECK(u.calls == 0, "the callback ran for an empty output");
    }
}

/* ---- op2, op3 ---------------------------------------------------------- */

static wk_status axpy_shape(const wk_custom_op2 *op, const wk_raw_view *a, const wk_raw_view *b, wk_dtype *dt,
                            wk_shape *shape)
{
    (void)op;
    if (a->rank != b->rank || numel(a) != numel(b)) return wk_error_set(WK_ERR_SHAPE, "axpy: shapes differ");
    *dt = a->dtype;
    shape->rank = a->rank;
    for (int d = 0; d < a->rank; d++) shape->dims[d] = a->dims[d];
    return WK_OK;
}
static wk_status axpy_cpu(const wk_custom_op2 *op, const wk_custom_env *env, const wk_raw_view *out,
                          const wk_raw_view *a, const wk_raw_view *b)
{
    (void)env;
    const double alpha = *(const double *)op->user;
    for (int64_t i = 0; i < numel(out); i++) *at_w(out, i) = (float)(alpha * at(a, i) + at(b, i));
    return WK_OK;
}
static wk_status fma_cpu(const wk_custom_op3 *op, const wk_custom_env *env, const wk_raw_view *out,
                         const wk_raw_view *a, const wk_raw_view *b, const wk_raw_view *c)
{
    (void)env;
    (*(int *)op->user)++;
    for (int64_t i = 0; i < numel(out); i++) *at_w(out, i) = (float)((double)at(a, i) * at(b, i) + at(c, i));
    return WK_OK;
}

static void op23_cases(void)
{
    float va[6] = { 1, -2, 3, 4, 0.5f, 6 }, vb[6] = { 0.25f, 1, -1, 2, 3, -4 }, vc[6] = { 10, 20, 30, 40, 50, 60 };
    if (t_case("custom/op2/axpy")) {
        double alpha = 2.5;
        wk_custom_op2 op = { .name = "axpy", .shape = axpy_shape, .cpu = axpy_cpu, .user = &alpha };
        wk_tensor *a = from_f32(va, WK_SHAPE(2, 3)), *b = from_f32(vb, WK_SHAPE(3, 2));
        wk_tensor *bt = b ? T_NEED(wk_transpose(b, 0, 1)) : NULL;        /* [2, 3], strided */
        wk_tensor *y = a && bt ? T_NEED(wk_apply_op2(&op, a, bt)) : NULL;
        float got[6];
        if (y && read_f32(y, got, 6))
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    T_CHECK(got[i * 3 + j] == (float)(2.5 * va[i * 3 + j] + vb[j * 2 + i]), "y[%d][%d] = %g", i, j,
                            got[i * 3 + j]);
        T_CHECK(alpha == 2.5, "user data changed");
        wk_tensor *c = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(4)));
        wk_tensor *bad = a && c ? wk_apply_op2(&op, a, c) : NULL;
        T_CHECK(!bad, "axpy of [2, 3] and [4] was taken");
        t_own(bad);
        t_check_error("axpy shapes", WK_ERR_SHAPE, wk_last_status(), "axpy: shapes differ", (const char *)NULL);
    }
    if (t_case("custom/op3/fma")) {
        int calls = 0;
        wk_custom_op3 op = { .name = "fma", .cpu = fma_cpu, .user = &calls };   /* shape NULL: a's */
        wk_tensor *a = from_f32(va, WK_SHAPE(6)), *b = from_f32(vb, WK_SHAPE(6)), *c = from_f32(vc, WK_SHAPE(6));
        wk_tensor *y = a && b && c ? T_NEED(wk_apply_op3(&op, a, b, c)) : NULL;
        float got[6];
        if (y && read_f32(y, got, 6))
            for (int i = 0; i < 6; i++)
                T_CHECK(got[i] == (float)((double)va[i] * vb[i] + vc[i]), "y[%d] = %g", i, got[i]);
        T_CHECK(calls == 1, "callback called %d times", calls);
    }
}

/* ---- in place ------------------------------------------------------------ */

static wk_status double_cpu(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst)
{
    (void)env;
    (*(int *)op->user)++;
    for (int64_t i = 0; i < numel(dst); i++) *at_w(dst, i) *= 2;
    return WK_OK;
}
/* dst[i] = a[n-1-i] + dst[i]: wrong if a were dst itself, read while written */
static wk_status reverse_add_cpu(const wk_inplace_op2 *op, const wk_custom_env *env, const wk_raw_view *dst,
                                 const wk_raw_view *a)
{
    (void)env;
    (void)op;
    const int64_t n = numel(dst);
    for (int64_t i = 0; i < n; i++) *at_w(dst, i) += at(a, n - 1 - i);
    return WK_OK;
}
static wk_status madd_cpu(const wk_inplace_op3 *op, const wk_custom_env *env, const wk_raw_view *dst,
                          const wk_raw_view *a, const wk_raw_view *b)
{
    (void)env;
    (void)op;
    for (int64_t i = 0; i < numel(dst); i++) *at_w(dst, i) += at(a, i) * at(b, i);
    return WK_OK;
}

static void inplace_cases(void)
{
    if (t_case("custom/inplace1/narrowed_view")) {
        int calls = 0;
        wk_inplace_op1 op = { .name = "double", .cpu = double_cpu, .user = &calls };
        float v[12];
        for (int i = 0; i < 12; i++) v[i] = (float)i;
        wk_tensor *x = from_f32(v, WK_SHAPE(3, 4));
        wk_tensor *n = x ? T_NEED(wk_narrow(x, 1, 1, 2)) : NULL;       /* columns 1..2 */
        if (n) T_OK(wk_apply_inplace1(&op, n));
        float got[12];
        if (x && read_f32(x, got, 12))
            for (int i = 0; i < 12; i++) {
                const int col = i % 4;
                const float want = col == 1 || col == 2 ? 2 * v[i] : v[i];
                T_CHECK(got[i] == want, "x[%d] = %g, want %g (outside the view: untouched)", i, got[i], want);
            }
        T_CHECK(calls == 1, "callback called %d times", calls);
    }
    if (t_case("custom/inplace2/aliased_input")) {
        wk_inplace_op2 op = { .name = "reverse_add", .cpu = reverse_add_cpu };
        float v[7];
        for (int i = 0; i < 7; i++) v[i] = (float)(i * i);
        wk_tensor *x = from_f32(v, WK_SHAPE(7));
        if (x) T_OK(wk_apply_inplace2(&op, x, x));         /* a is dst itself */
        float got[7];
        if (x && read_f32(x, got, 7))
            for (int i = 0; i < 7; i++)
                T_CHECK(got[i] == v[i] + v[6 - i], "x[%d] = %g, want %g (the input read as before the op)", i, got[i],
                        v[i] + v[6 - i]);
        /* another view of the same storage is a copy too */
        wk_tensor *y = from_f32(v, WK_SHAPE(7));
        wk_tensor *y2 = y ? T_NEED(wk_narrow(y, 0, 0, 7)) : NULL;
        if (y2) T_OK(wk_apply_inplace2(&op, y, y2));
        if (y && read_f32(y, got, 7))
            for (int i = 0; i < 7; i++) T_CHECK(got[i] == v[i] + v[6 - i], "y[%d] = %g", i, got[i]);
    }
    if (t_case("custom/inplace3/madd")) {
        wk_inplace_op3 op = { .name = "madd", .cpu = madd_cpu, .contiguous = true };
        float d[6] = { 1, 1, 1, 1, 1, 1 }, a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { -1, 0.5f, 2, 0, 1, 3 };
        wk_tensor *td = from_f32(d, WK_SHAPE(2, 3)), *ta = from_f32(a, WK_SHAPE(3, 2)), *tb = from_f32(b, WK_SHAPE(2, 3));
        wk_tensor *tat = ta ? T_NEED(wk_transpose(ta, 0, 1)) : NULL;
        if (td && tat && tb) T_OK(wk_apply_inplace3(&op, td, tat, tb));
        float got[6];
        if (td && read_f32(td, got, 6))
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    T_CHECK(got[i * 3 + j] == 1 + a[j * 2 + i] * b[i * 3 + j], "d[%d][%d] = %g", i, j, got[i * 3 + j]);
    }
    if (t_case("custom/inplace/broadcast_dst")) {
        int calls = 0;
        wk_inplace_op1 op = { .name = "double", .cpu = double_cpu, .user = &calls };
        wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 3)));
        wk_tensor *b = x ? T_NEED(wk_broadcast_as(x, WK_SHAPE(4, 3))) : NULL;
        if (b)
            t_check_error("inplace1 on a broadcast view", WK_ERR_ARGUMENT, wk_apply_inplace1(&op, b), "double",
                          "overlapping", (const char *)NULL);
        T_CHECK(calls == 0, "the callback ran on a broadcast dst");
        wk_tensor *e = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0)));
        if (e) T_OK(wk_apply_inplace1(&op, e));
        T_CHECK(calls == 0, "the callback ran on an empty dst");
    }
}

/* ---- errors -------------------------------------------------------------- */

static wk_status fail_quietly(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                              const wk_raw_view *a)
{
    (void)op, (void)env, (void)out, (void)a;
    return WK_ERR_BACKEND;
}
static wk_status fail_loudly(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                             const wk_raw_view *a)
{
    (void)op, (void)env, (void)out, (void)a;
    return wk_error_set(WK_ERR_INDEX, "my kernel saw index %d", 42);
}

static void error_cases(void)
{
    if (!t_case("custom/errors")) return;
    wk_tensor *x = T_NEED(wk_ones(t_dev(), WK_F32, WK_SHAPE(5)));
    if (!x) return;
    user_data u = { .factor = 1 };
    /* a kind without a callback */
    wk_custom_op1 gpu_only = { .name = "gpu_only", .cuda = scale_cpu, .rocm = scale_cpu, .user = &u };
    wk_tensor *y = wk_apply_op1(&gpu_only, x);
    T_CHECK(!y, "an op without a cpu callback ran on the cpu");
    t_own(y);
    t_check_error("no cpu callback", WK_ERR_UNSUPPORTED, wk_last_status(), "gpu_only", "not implemented for cpu",
                  (const char *)NULL);
    wk_inplace_op2 in_gpu = { .name = "in_gpu" };
    t_check_error("no cpu callback (in place)", WK_ERR_UNSUPPORTED, wk_apply_inplace2(&in_gpu, x, x), "in_gpu",
                  "not implemented for cpu", (const char *)NULL);
    /* NULL arguments */
    wk_custom_op1 ok = { .name = "scale", .cpu = scale_cpu, .user = &u };
    y = wk_apply_op1(NULL, x);
    T_CHECK(!y, "NULL op ran");
    t_check_error("NULL op", WK_ERR_ARGUMENT, wk_last_status(), "custom op", (const char *)NULL);
    y = wk_apply_op1(&ok, NULL);
    T_CHECK(!y, "NULL input ran");
    t_check_error("NULL input", WK_ERR_ARGUMENT, wk_last_status(), "NULL", (const char *)NULL);
    wk_custom_op3 op3 = { .name = "fma", .cpu = fma_cpu, .user = &(int){ 0 } };
    y = wk_apply_op3(&op3, x, x, NULL);
    T_CHECK(!y, "NULL third input ran");
    t_check_error("NULL c", WK_ERR_ARGUMENT, wk_last_status(), "c is NULL", (const char *)NULL);
    t_check_error("NULL dst", WK_ERR_ARGUMENT, wk_apply_inplace1(&(wk_inplace_op1){ .cpu = double_cpu }, NULL), "dst",
                  (const char *)NULL);
    /* failing callbacks: wick's message, or the callback's own */
    wk_custom_op1 q = { .name = "quiet", .cpu = fail_quietly };
    y = wk_apply_op1(&q, x);
    T_CHECK(!y, "a failing callback gave a tensor");
    t_own(y);
    t_check_error("quiet failure", WK_ERR_BACKEND, wk_last_status(), "quiet", "callback", (const char *)NULL);
    wk_custom_op1 l = { .name = "loud", .cpu = fail_loudly };
    y = wk_apply_op1(&l, x);
    T_CHECK(!y, "a failing callback gave a tensor");
    t_own(y);
    t_check_error("loud failure", WK_ERR_INDEX, wk_last_status(), "my kernel saw index 42", (const char *)NULL);
    /* the library still works, and an op without a name has one */
    wk_custom_op1 anon = { .cpu = scale_cpu, .user = &u };
    wk_tensor *z = T_NEED(wk_apply_op1(&anon, x));
    T_CHECK(z != NULL, "a good op failed after errors");
    /* a call that succeeds keeps the earlier error, as every wick call does */
    y = wk_apply_op1(&l, x);
    t_own(y);
    wk_tensor *z2 = T_NEED(wk_apply_op1(&anon, x));
    (void)z2;
    int calls = 0;
    wk_inplace_op1 dbl = { .name = "double", .cpu = double_cpu, .user = &calls };
    T_OK(wk_apply_inplace1(&dbl, x));
    t_check_error("earlier error kept after successful ops", WK_ERR_INDEX, wk_last_status(),
                  "my kernel saw index 42", (const char *)NULL);
    wk_custom_op1 anon_gpu = { .cuda = scale_cpu };
    y = wk_apply_op1(&anon_gpu, x);
    t_own(y);
    t_check_error("unnamed op", WK_ERR_UNSUPPORTED, wk_last_status(), "custom_op1", (const char *)NULL);
}

/* ---- scopes: a custom op's output belongs to the open scope ------------ */

static void scope_case(void)
{
    if (!t_case("custom/scope")) return;
    user_data u = { .factor = 1 };
    wk_custom_op1 op = { .name = "scale", .cpu = scale_cpu, .user = &u };
    wk_tensor *x = T_NEED(wk_ones(t_dev(), WK_F32, WK_SHAPE(3)));
    if (!x) return;
    wk_scope_begin();
    wk_tensor *y = wk_apply_op1(&op, x);
    wk_tensor *kept = wk_keep(wk_apply_op1(&op, y));
    wk_scope_end();                 /* releases y; kept is the caller's */
    t_own(kept);
    float got[3];
    if (kept && read_f32(kept, got, 3)) T_CHECK(got[0] == 1 && got[2] == 1, "kept %g %g", got[0], got[2]);
}

/* ---- the device's stream (wk_device_stream and the orderings) on the cpu -- */

static void stream_case(void)
{
    if (!t_case("custom/streams")) return;
    wk_clear_error();
    T_CHECK(wk_device_stream(t_dev()) == NULL && wk_last_status() == WK_OK, "the cpu has no stream: %s",
            wk_last_error());
    T_OK(wk_device_wait_stream(t_dev(), (void *)1));
    T_OK(wk_stream_wait_device((void *)1, t_dev()));
    T_CHECK(wk_device_stream(NULL) == NULL, "NULL device");
    t_check_error("NULL device", WK_ERR_ARGUMENT, wk_last_status(), "device_stream", (const char *)NULL);
    t_check_error("NULL device", WK_ERR_ARGUMENT, wk_device_wait_stream(NULL, NULL), "NULL device", (const char *)NULL);
    t_check_error("NULL device", WK_ERR_ARGUMENT, wk_stream_wait_device(NULL, NULL), "NULL device", (const char *)NULL);
}

T_SUITE(custom)
{
    stream_case();
    op1_cases();
    shape_cases();
    op23_cases();
    inplace_cases();
    error_cases();
    scope_case();
}
