/* test_semantics.c — one case per rule of docs/semantics.md, with explicit
 * values: integer wrap-around, integer division by zero and INT_MIN / -1,
 * float -> int truncation / saturation / NaN, round half to even, sign and
 * relu of NaN and +-0, comparisons with NaN, argmin/argmax first index
 * and NaN, min/max and minimum/maximum NaN propagation, wrapping integer
 * sums, f16 overflow to Inf, f8e4m3 saturation and NaN, one rounding from
 * f64 and i64 to the narrow floats, const_set's cast rules, rank-0 and
 * empty tensors through every op family (an empty view at the very end of
 * its storage must not be touched), broadcast destinations rejected.
 *
 * Case names: semantics/<rule>[/<dtype>].
 */
#include <stdlib.h>
#include "test.h"

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* 1-d tensor of dt from doubles (cast rules of the tests' codec) */
static wk_tensor *vec(wk_dtype dt, int n, const double *v)
{
    t_arr a = t_arr_new(dt, WK_SHAPE(n));
    for (int i = 0; i < n; i++) t_put(dt, a.p, i, v[i]);
    return T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
}
static wk_tensor *ivec(wk_dtype dt, int n, const int64_t *v)
{
    t_arr a = t_arr_new(dt, WK_SHAPE(n));
    for (int i = 0; i < n; i++) t_puti(dt, a.p, i, v[i]);
    return T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
}
/* the shape t should have: its own when it holds n elements */
static wk_shape shape_n(const wk_tensor *t, int n)
{
    return wk_tensor_numel(t) == n ? wk_tensor_shape(t) : WK_SHAPE(n);
}
/* t (n elements, dtype dt) must hold exactly v (as dt would store them) */
static void expect(const char *what, wk_tensor *t, wk_dtype dt, int n, const double *v)
{
    if (!t) { t_fail("%s: no result: %s", what, wk_last_error()); return; }
    t_arr a = t_arr_new(dt, shape_n(t, n));
    for (int i = 0; i < n; i++) t_put(dt, a.p, i, v[i]);
    t_check_exact(what, t, a.shape, dt, a.p);
}
static void expecti(const char *what, wk_tensor *t, wk_dtype dt, int n, const int64_t *v)
{
    if (!t) { t_fail("%s: no result: %s", what, wk_last_error()); return; }
    t_arr a = t_arr_new(dt, shape_n(t, n));
    for (int i = 0; i < n; i++) t_puti(dt, a.p, i, v[i]);
    t_check_exact(what, t, a.shape, dt, a.p);
}

static const wk_dtype floats[] = { WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
static const wk_dtype ints[] = { WK_U8, WK_U32, WK_I16, WK_I32, WK_I64 };

static void integer_rules(void)
{
    if (t_case("semantics/wrap/u8_add")) {
        wk_tensor *a = ivec(WK_U8, 3, (int64_t[]){ 200, 255, 0 }), *b = ivec(WK_U8, 3, (int64_t[]){ 100, 1, 0 });
        if (a && b) expecti("u8 200+100", t_own(wk_add(a, b)), WK_U8, 3, (int64_t[]){ 44, 0, 0 });
        if (a && b) expecti("u8 0-1", t_own(wk_sub(b, a)), WK_U8, 3, (int64_t[]){ 156, 2, 0 });
    }
    if (t_case("semantics/wrap/i32_mul")) {
        wk_tensor *a = ivec(WK_I32, 3, (int64_t[]){ 65536, INT32_MAX, INT32_MIN });
        wk_tensor *b = ivec(WK_I32, 3, (int64_t[]){ 65536, 2, -1 });
        if (a && b) expecti("i32 mul", t_own(wk_mul(a, b)), WK_I32, 3, (int64_t[]){ 0, -2, INT32_MIN });
        wk_tensor *one = ivec(WK_I32, 1, (int64_t[]){ 1 });
        wk_tensor *mx = ivec(WK_I32, 1, (int64_t[]){ INT32_MAX });
        if (one && mx) expecti("i32 max+1", t_own(wk_add(mx, one)), WK_I32, 1, (int64_t[]){ INT32_MIN });
    }
    if (t_case("semantics/wrap/i64_and_i16")) {
        wk_tensor *a = ivec(WK_I64, 2, (int64_t[]){ INT64_MAX, INT64_MIN }), *b = ivec(WK_I64, 2, (int64_t[]){ 1, 1 });
        if (a && b) expecti("i64 add", t_own(wk_add(a, b)), WK_I64, 2, (int64_t[]){ INT64_MIN, INT64_MIN + 1 });
        if (a && b) expecti("i64 sub", t_own(wk_sub(a, b)), WK_I64, 2, (int64_t[]){ INT64_MAX - 1, INT64_MAX });
        wk_tensor *c = ivec(WK_I16, 2, (int64_t[]){ INT16_MIN, 300 });
        if (c) expecti("i16 neg/sqr", t_own(wk_neg(c)), WK_I16, 2, (int64_t[]){ INT16_MIN, -300 });
        if (c) expecti("i16 abs", t_own(wk_abs(c)), WK_I16, 2, (int64_t[]){ INT16_MIN, 300 });
        if (c) expecti("i16 sqr", t_own(wk_sqr(c)), WK_I16, 2, (int64_t[]){ 0, (int16_t)(uint16_t)(90000 & 0xFFFF) });
    }
    for (int k = 0; k < N_(ints); k++) {
        wk_dtype dt = ints[k];
        if (!t_case("semantics/int_div/%s", t_dt_name(dt))) continue;
        bool sgn = t_int_min(dt) < 0;
        int64_t mn = t_int_min(dt);
        wk_tensor *a = ivec(dt, 6, (int64_t[]){ 7, 0, 9, sgn ? -7 : 250, sgn ? mn : 255, 5 });
        wk_tensor *b = ivec(dt, 6, (int64_t[]){ 0, 0, 2, 2, sgn ? -1 : 7, 9 });
        if (a && b)
            expecti("div", t_own(wk_div(a, b)), dt, 6, (int64_t[]){ 0, 0, 4, sgn ? -3 : 125, sgn ? mn : 36, 0 });
    }
    if (t_case("semantics/float_to_int")) {
        static const double src[] = { 2.7, -2.7, 1e10, -1e10, NAN, INFINITY, -INFINITY, 255.5, -0.5, 65535.9, 4294967296.5 };
        for (int f = 0; f < 2; f++) {
            wk_dtype sdt = f ? WK_F64 : WK_F32;
            wk_tensor *x = vec(sdt, N_(src), src);
            if (!x) continue;
            expecti("->i32", t_own(wk_to_dtype(x, WK_I32)), WK_I32, N_(src),
                    (int64_t[]){ 2, -2, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 255, 0, 65535, INT32_MAX });
            expecti("->u8", t_own(wk_to_dtype(x, WK_U8)), WK_U8, N_(src), (int64_t[]){ 2, 0, 255, 0, 0, 255, 0, 255, 0, 255, 255 });
            expecti("->i16", t_own(wk_to_dtype(x, WK_I16)), WK_I16, N_(src),
                    (int64_t[]){ 2, -2, INT16_MAX, INT16_MIN, 0, INT16_MAX, INT16_MIN, 255, 0, INT16_MAX, INT16_MAX });
            expecti("->u32", t_own(wk_to_dtype(x, WK_U32)), WK_U32, N_(src),
                    (int64_t[]){ 2, 0, UINT32_MAX, 0, 0, UINT32_MAX, 0, 255, 0, 65535, UINT32_MAX });
            expecti("->i64", t_own(wk_to_dtype(x, WK_I64)), WK_I64, N_(src),
                    (int64_t[]){ 2, -2, 10000000000LL, -10000000000LL, 0, INT64_MAX, INT64_MIN, 255, 0, 65535, f ? 4294967296LL : 4294967296LL });
        }
    }
    if (t_case("semantics/int_to_int_wraps")) {
        wk_tensor *x = ivec(WK_I64, 4, (int64_t[]){ 256 + 7, -1, 70000, (int64_t)1 << 40 });
        if (x) expecti("i64->u8", t_own(wk_to_dtype(x, WK_U8)), WK_U8, 4, (int64_t[]){ 7, 255, 112, 0 });
        if (x) expecti("i64->i16", t_own(wk_to_dtype(x, WK_I16)), WK_I16, 4, (int64_t[]){ 263, -1, 4464, 0 });
        if (x) expecti("i64->u32", t_own(wk_to_dtype(x, WK_U32)), WK_U32, 4, (int64_t[]){ 263, UINT32_MAX, 70000, 0 });
    }
    if (t_case("semantics/int_affine_saturates")) {
        wk_tensor *x = ivec(WK_I32, 3, (int64_t[]){ 1 << 30, -(1 << 30), 5 });
        if (x) expecti("i32 affine", t_own(wk_affine(x, 4, 1)), WK_I32, 3, (int64_t[]){ INT32_MAX, INT32_MIN, 21 });
        wk_tensor *u = ivec(WK_U8, 3, (int64_t[]){ 100, 3, 7 });
        if (u) expecti("u8 affine", t_own(wk_affine(u, 3, -10)), WK_U8, 3, (int64_t[]){ 255, 0, 11 });
        if (u) expecti("u8 affine frac", t_own(wk_affine(u, 0.5, 0.25)), WK_U8, 3, (int64_t[]){ 50, 1, 3 });
    }
}

static void float_rules(void)
{
    for (int k = 0; k < 4; k++) {
        wk_dtype dt = floats[k];
        if (t_case("semantics/round_half_even/%s", t_dt_name(dt))) {
            static const double v[] = { 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, -0.25, 7.75 };
            wk_tensor *x = vec(dt, N_(v), v);
            if (x) expect("round", t_own(wk_round(x)), dt, N_(v), (double[]){ 0, 2, 2, -0.0, -2, -2, 4, 4, -0.0, 8 });
            if (x) expect("floor", t_own(wk_floor(x)), dt, N_(v), (double[]){ 0, 1, 2, -1, -2, -3, 3, 4, -1, 7 });
            if (x) expect("ceil", t_own(wk_ceil(x)), dt, N_(v), (double[]){ 1, 2, 3, -0.0, -1, -2, 4, 5, -0.0, 8 });
        }
    }
    for (int k = 0; k < N_(floats); k++) {
        wk_dtype dt = floats[k];
        if (!t_case("semantics/nan_and_zero/%s", t_dt_name(dt))) continue;
        static const double v[] = { NAN, 0.0, -0.0, -3, 2 };
        wk_tensor *x = vec(dt, N_(v), v);
        if (!x) continue;
        expect("sign", t_own(wk_sign(x)), dt, N_(v), (double[]){ NAN, 0.0, -0.0, -1, 1 });
        /* relu(-0) may be either zero: compare values, not bits */
        wk_tensor *rl = t_own(wk_relu(x));
        if (rl) t_check_close("relu", rl, WK_SHAPE(N_(v)), dt, (double[]){ NAN, 0.0, 0.0, 0, 2 }, 0);
        else t_fail("relu: %s", wk_last_error());
        wk_tensor *y = vec(dt, N_(v), (double[]){ 1, NAN, 1, NAN, 2 });
        if (!y) continue;
        expect("minimum", t_own(wk_minimum(x, y)), dt, N_(v), (double[]){ NAN, NAN, -0.0, NAN, 2 });
        expect("maximum", t_own(wk_maximum(y, x)), dt, N_(v), (double[]){ NAN, NAN, 1, NAN, 2 });
        /* IEEE comparisons: false with NaN except ne */
        static const wk_cmp_op ops[] = { WK_EQ, WK_NE, WK_LT, WK_LE, WK_GT, WK_GE };
        static const int64_t want[6][5] = { { 0, 0, 0, 0, 1 }, { 1, 1, 1, 1, 0 }, { 0, 0, 1, 0, 0 },
                                            { 0, 0, 1, 0, 1 }, { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 1 } };
        for (int o = 0; o < 6; o++) expecti(wk_cmp_name(ops[o]), t_own(wk_cmp(ops[o], x, y)), WK_U8, 5, want[o]);
        /* reductions: NaN is the extremum of max/argmax and of min/argmin */
        wk_tensor *r = vec(dt, 6, (double[]){ 1, 2, NAN, 2, NAN, -1 });
        if (!r) continue;
        expect("max", t_own(wk_max(r, NULL, 0, false)), dt, 1, (double[]){ NAN });
        expect("min", t_own(wk_min(r, NULL, 0, false)), dt, 1, (double[]){ NAN });
        expecti("argmax", t_own(wk_argmax(r, 0, false)), WK_U32, 1, (int64_t[]){ 2 });
        expecti("argmin", t_own(wk_argmin(r, 0, false)), WK_U32, 1, (int64_t[]){ 2 });
    }
    for (int k = 0; k < WK_DENSE_DTYPE_COUNT; k++) {
        wk_dtype dt = (wk_dtype)k;
        if (!t_case("semantics/arg_first_index/%s", t_dt_name(dt))) continue;
        wk_tensor *r = vec(dt, 7, (double[]){ 1, 3, 0, 3, 0, 2, 3 });
        if (!r) continue;
        expecti("argmax", t_own(wk_argmax(r, 0, false)), WK_U32, 1, (int64_t[]){ 1 });
        expecti("argmin", t_own(wk_argmin(r, 0, false)), WK_U32, 1, (int64_t[]){ 2 });
        /* over several dims: the index into the reduced dims flattened */
        wk_tensor *m = r ? T_NEED(wk_reshape(T_NEED(wk_narrow(r, 0, 1, 6)), WK_SHAPE(2, 3))) : NULL;  /* 3 0 3 / 0 2 3 */
        if (m) expecti("argmax all", t_own(wk_reduce(WK_ARGMAX, m, NULL, 0, false)), WK_U32, 1, (int64_t[]){ 0 });
        if (m) expecti("argmin all", t_own(wk_reduce(WK_ARGMIN, m, NULL, 0, false)), WK_U32, 1, (int64_t[]){ 1 });
    }
    if (t_case("semantics/sum_wraps")) {
        wk_tensor *u = ivec(WK_U8, 3, (int64_t[]){ 200, 100, 1 });
        if (u) expecti("u8 sum", t_own(wk_sum(u, NULL, 0, false)), WK_U8, 1, (int64_t[]){ 45 });
        wk_tensor *i = ivec(WK_I32, 2, (int64_t[]){ INT32_MAX, 2 });
        if (i) expecti("i32 sum", t_own(wk_sum(i, NULL, 0, false)), WK_I32, 1, (int64_t[]){ INT32_MIN + 1 });
    }
    if (t_case("semantics/f16_overflow_to_inf")) {
        wk_tensor *x = vec(WK_F16, 3, (double[]){ 60000, -60000, 2 });
        if (x) expect("f16 mul", t_own(wk_mul(x, x)), WK_F16, 3, (double[]){ INFINITY, INFINITY, 4 });
        wk_tensor *d = vec(WK_F64, 3, (double[]){ 70000, -65520, 65519.99 });
        if (d) expect("f64->f16", t_own(wk_to_dtype(d, WK_F16)), WK_F16, 3, (double[]){ INFINITY, -INFINITY, 65504 });
    }
    if (t_case("semantics/f8e4m3_saturation_and_nan")) {
        static const double v[] = { INFINITY, -INFINITY, 500, -500, 448, 464, 1e30, NAN };
        for (int f = 0; f < 2; f++) {
            wk_tensor *x = vec(f ? WK_F64 : WK_F32, N_(v), v);
            if (!x) continue;
            wk_tensor *y = t_own(wk_to_dtype(x, WK_F8E4M3));
            expect("to f8e4m3", y, WK_F8E4M3, N_(v), (double[]){ 448, -448, 448, -448, 448, 448, 448, NAN });
            if (y) {
                bool ok;
                t_arr b = t_read(y, &ok);
                if (ok) T_CHECK((b.p[7] & 0x7F) == 0x7F, "f8e4m3 NaN has bits 0x%02x, not 0x7F/0xFF", b.p[7]);
            }
        }
        /* ops computing in f32 saturate when they round to f8e4m3 */
        wk_tensor *a = vec(WK_F8E4M3, 3, (double[]){ 20, -20, 7 });
        wk_tensor *b = vec(WK_F8E4M3, 3, (double[]){ 30, 30, 0.5 });
        if (a && b) expect("f8 mul", t_own(wk_mul(a, b)), WK_F8E4M3, 3, (double[]){ 448, -448, 3.5 });
        if (a) expect("f8 exp", t_own(wk_exp(a)), WK_F8E4M3, 3, (double[]){ 448, exp(-20), exp(7) });
        if (a && b) expect("f8 div by 0", t_own(wk_div(a, t_own(wk_sub(b, b)))), WK_F8E4M3, 3, (double[]){ 448, -448, 448 });
    }
    if (t_case("semantics/one_rounding_f64_i64")) {
        /* each value rounds to the midpoint in f32; the f32 path then ties to even */
        double h = 1 + 0x1p-11 + 0x1p-40, b = 1 + 0x1p-8 + 0x1p-40, e = 1 + 0x1p-4 + 0x1p-40;
        wk_tensor *x = vec(WK_F64, 3, (double[]){ h, b, e });
        if (x) {
            wk_tensor *y16 = t_own(wk_to_dtype(x, WK_F16)), *yb = t_own(wk_to_dtype(x, WK_BF16)), *y8 = t_own(wk_to_dtype(x, WK_F8E4M3));
            bool ok;
            if (y16) { t_arr a = t_read(y16, &ok); if (ok) T_CHECK(t_bits(WK_F16, a.p, 0) == 0x3C01, "f64 1+2^-11+2^-40 -> f16 0x%04llx, expected 0x3c01", (unsigned long long)t_bits(WK_F16, a.p, 0)); }
            if (yb) { t_arr a = t_read(yb, &ok); if (ok) T_CHECK(t_bits(WK_BF16, a.p, 1) == 0x3F81, "f64 1+2^-8+2^-40 -> bf16 0x%04llx, expected 0x3f81", (unsigned long long)t_bits(WK_BF16, a.p, 1)); }
            if (y8) { t_arr a = t_read(y8, &ok); if (ok) T_CHECK(t_bits(WK_F8E4M3, a.p, 2) == 0x39, "f64 1+2^-4+2^-40 -> f8e4m3 0x%02llx, expected 0x39", (unsigned long long)t_bits(WK_F8E4M3, a.p, 2)); }
        }
        int64_t big = ((int64_t)1 << 62) + ((int64_t)1 << 54) + 1;
        wk_tensor *i = ivec(WK_I64, 2, (int64_t[]){ big, ((int64_t)1 << 62) + ((int64_t)1 << 38) + 1 });
        if (i) {
            expect("i64->bf16", t_own(wk_to_dtype(i, WK_BF16)), WK_BF16, 2, (double[]){ 0x1.02p62, 0x1p62 });
            wk_tensor *f = t_own(wk_to_dtype(i, WK_F32));
            bool ok;
            if (f) { t_arr a = t_read(f, &ok); if (ok) T_CHECK(t_get(WK_F32, a.p, 1) == 0x1.000002p62, "i64 2^62+2^38+1 -> f32 %a, expected 0x1.000002p62", t_get(WK_F32, a.p, 1)); }
        }
    }
    if (t_case("semantics/const_set_casts")) {
        static const struct { wk_dtype dt; double v, want; } cs[] = {
            { WK_U8, 300, 255 }, { WK_U8, -5, 0 }, { WK_I32, -2.9, -2 }, { WK_I16, NAN, 0 }, { WK_F16, 1e6, INFINITY },
            { WK_F8E4M3, 1000, 448 }, { WK_BF16, 1.00390625, 1.0 }, { WK_U32, 5e9, 4294967295.0 },
        };
        for (int i = 0; i < N_(cs); i++) {
            wk_tensor *x = T_NEED(wk_zeros(t_dev(), cs[i].dt, WK_SHAPE(2)));
            if (!x) continue;
            T_OK(wk_const_set(x, cs[i].v));
            expect("const_set", x, cs[i].dt, 2, (double[]){ cs[i].want, cs[i].want });
        }
    }
}

/* ---- rank 0 and empty through every family ------------------------------------------ */

static void empty_and_scalar(void)
{
    if (t_case("semantics/empty_at_storage_end")) {
        /* [4, 6] then an empty view starting one past the last element */
        wk_tensor *b = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(4, 6)));
        wk_tensor *e = b ? T_NEED(wk_narrow(T_NEED(wk_flatten(b, 0, 1)), 0, 24, 0)) : NULL;     /* [0], offset 24 */
        wk_tensor *e2 = b ? T_NEED(wk_narrow(b, 0, 4, 0)) : NULL;                               /* [0, 6] */
        if (!e || !e2) return;
        wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(0)));
        wk_tensor *ids2 = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(0, 6)));
        wk_tensor *m = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(6, 0)));
        if (!ids || !ids2 || !m) return;
        wk_tensor *r[] = {
            wk_exp(e), wk_add(e, e), wk_cmp(WK_LT, e, e), wk_where(ids, e, e), wk_sum(e2, (const int[]){ 0 }, 1, false),
            wk_max(e2, (const int[]){ 1 }, 1, false), wk_to_dtype(e2, WK_F16), wk_copy(e2), wk_contiguous(e2),
            wk_index_select(e2, ids, 1), wk_gather(e2, ids2, 0), wk_matmul(e2, m), wk_affine(e, 2, 1), wk_cat(&e2, 1, 0),
        };
        for (int i = 0; i < N_(r); i++) {
            T_CHECK(r[i] && wk_tensor_numel(r[i]) == (i == 4 ? 6 : 0), "empty op %d: %s", i, r[i] ? "wrong numel" : wk_last_error());
            t_own(r[i]);
        }
        T_OK(wk_const_set(e, 1));
        T_OK(wk_copy_into(e2, e2));
        T_OK(wk_scatter_add(e2, ids2, e2, 0));
        T_OK(wk_scatter_set(e2, ids2, e2, 0));
        T_OK(wk_index_add(e2, ids, T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0, 0))), 1));
        double zero[24] = { 0 };
        t_check_close("storage", b, WK_SHAPE(4, 6), WK_F32, zero, 0);
    }
    if (t_case("semantics/empty_reductions")) {
        wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(3, 0)));
        if (!x) return;
        expecti("sum over empty", t_own(wk_sum(x, (const int[]){ 1 }, 1, false)), WK_I32, 3, (int64_t[]){ 0, 0, 0 });
        static const wk_reduce_op ops[] = { WK_MIN, WK_MAX, WK_ARGMIN, WK_ARGMAX };
        for (int o = 0; o < 4; o++) {
            wk_tensor *y = t_own(wk_reduce(ops[o], x, (const int[]){ 1 }, 1, false));
            T_CHECK(!y, "reduce op %d over an empty extent returned a tensor", o);
            wk_clear_error();
        }
    }
    if (t_case("semantics/rank0_every_family")) {
        wk_tensor *a = T_NEED(wk_full(t_dev(), WK_F32, WK_SCALAR, 2));
        wk_tensor *b = T_NEED(wk_full(t_dev(), WK_F32, WK_SCALAR, 3));
        wk_tensor *c = T_NEED(wk_full(t_dev(), WK_U8, WK_SCALAR, 1));
        if (!a || !b || !c) return;
        struct { const char *what; wk_tensor *t; double want; } r[] = {
            { "sqr", wk_sqr(a), 4 }, { "mul", wk_mul(a, b), 6 }, { "cmp", wk_cmp(WK_LT, a, b), 1 },
            { "where", wk_where(c, a, b), 2 }, { "sum", wk_sum(a, NULL, 0, false), 2 }, { "argmax", wk_reduce(WK_ARGMAX, a, NULL, 0, false), 0 },
            { "to_dtype", wk_to_dtype(a, WK_I64), 2 }, { "affine", wk_affine(b, 2, 1), 7 }, { "copy", wk_copy(b), 3 },
            { "mean", wk_mean(b, NULL, 0, false), 3 },
        };
        for (int i = 0; i < N_(r); i++) {
            t_own(r[i].t);
            double v = -1;
            if (!r[i].t) { t_fail("%s on rank 0: %s", r[i].what, wk_last_error()); continue; }
            T_CHECK(wk_tensor_rank(r[i].t) == 0, "%s on rank 0 gave rank %d", r[i].what, wk_tensor_rank(r[i].t));
            int64_t idx[1] = { 0 };
            T_OK(wk_item(r[i].t, idx, &v));
            T_CHECK(v == r[i].want, "%s on rank 0: %g, expected %g", r[i].what, v, r[i].want);
        }
        T_OK(wk_const_set(a, 9));
        T_OK(wk_copy_into(b, a));
        double v = 0;
        T_OK(wk_item(b, NULL, &v));
        T_CHECK(v == 9, "copy_into a rank-0 tensor: %g", v);
        wk_tensor *st = t_own(wk_stack((wk_tensor *const[]){ a, b }, 2, 0));
        T_CHECK(st && wk_tensor_rank(st) == 1 && wk_tensor_numel(st) == 2, "stack of two rank-0 tensors");
    }
    if (t_case("semantics/overlapping_dst_rejected")) {
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(1, 3), (float[]){ 1, 2, 3 }));
        wk_tensor *bc = x ? T_NEED(wk_broadcast_as(x, WK_SHAPE(4, 3))) : NULL;
        wk_tensor *src = T_NEED(wk_ones(t_dev(), WK_F32, WK_SHAPE(4, 3)));
        wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_U32, WK_SHAPE(4, 3)));
        wk_tensor *ids1 = T_NEED(wk_zeros(t_dev(), WK_U32, WK_SHAPE(4)));
        if (!bc || !src || !ids || !ids1) return;
        static const char *names[5] = { "const_set", "copy_into", "scatter_set", "scatter_add", "index_add" };
        for (int i = 0; i < 5; i++) {
            wk_status st = i == 0 ? wk_const_set(bc, 5) : i == 1 ? wk_copy_into(bc, src) : i == 2 ? wk_scatter_set(bc, ids, src, 1)
                         : i == 3 ? wk_scatter_add(bc, ids, src, 1) : wk_index_add(bc, ids1, src, 0);
            /* refused for the layout (not merely unimplemented), naming the op */
            T_CHECK(st == WK_ERR_SHAPE || st == WK_ERR_ARGUMENT, "%s into a broadcast view: status %s (%s)", names[i],
                    wk_status_name(st), wk_last_error());
            T_CHECK(strstr(wk_last_error(), names[i]) != NULL, "%s: message \"%s\" does not name the op", names[i], wk_last_error());
            wk_clear_error();
        }
        expect("storage unchanged", T_NEED(wk_reshape(x, WK_SHAPE(3))), WK_F32, 3, (double[]){ 1, 2, 3 });
        /* a stride-0 dim of size 1 does not overlap */
        wk_tensor *one = T_NEED(wk_broadcast_as(x, WK_SHAPE(1, 3)));
        if (one) T_OK(wk_const_set(one, 4));
        wk_tensor *u = x ? T_NEED(wk_unsqueeze(x, 0)) : NULL;
        if (u) T_OK(wk_const_set(u, 4));
    }
}

T_SUITE(semantics)
{
    integer_rules();
    float_rules();
    empty_and_scalar();
}
