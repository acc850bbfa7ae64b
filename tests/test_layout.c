/* test_layout.c — the layout of elementwise results. An op whose inputs
 * are all laid out densely in one non-row-major order (a transposed or
 * permuted tensor, no broadcast) returns that layout; anything else
 * returns a row-major tensor. Values are checked in logical order against
 * integer references computed here (neg and add of small integers are
 * exact in every dtype used).
 *
 * Case names: layout/<op>/<what>/<dtype>.
 */
#include "test.h"

/* [2, 3, 4, 5] of dt holding 1..120 in storage order; host copy in *h */
static wk_tensor *base2345(wk_dtype dt, t_arr *h)
{
    *h = t_arr_new(dt, WK_SHAPE(2, 3, 4, 5));
    for (int64_t i = 0; i < h->n; i++) t_puti(dt, h->p, i, i + 1 - (i % 3 == 0 ? 200 : 0));
    return T_NEED(wk_from_host(t_dev(), dt, h->shape, h->p));
}

static bool same_strides(const wk_tensor *a, const wk_tensor *b)
{
    for (int d = 0; d < wk_tensor_rank(a); d++)
        if (wk_tensor_dim(a, d) > 1 && wk_tensor_stride(a, d) != wk_tensor_stride(b, d)) return false;
    return true;
}

/* got must hold factor x the logical contents of in, exactly */
static void check_times(const char *what, const wk_tensor *got, const wk_tensor *in, wk_dtype dt, int64_t factor)
{
    bool ok = true;
    t_arr a = t_read(in, &ok), want = t_arr_new(dt, a.shape);
    if (!ok) {
        t_fail("%s: reading the input failed", what);
        return;
    }
    for (int64_t i = 0; i < a.n; i++) t_puti(dt, want.p, i, factor * t_geti(dt, a.p, i));
    t_check_exact(what, got, a.shape, dt, want.p);
}

static void layout_cases(wk_dtype dt)
{
    const char *dn = t_dt_name(dt);
    const int perm[4] = { 2, 0, 3, 1 };
    t_arr h;
    if (t_case("layout/neg/permuted/%s", dn)) {
        wk_tensor *x = base2345(dt, &h);
        wk_tensor *p = T_NEED(wk_permute(x, perm));
        wk_tensor *y = T_NEED(wk_neg(p));
        if (p && y) {
            T_CHECK(!wk_tensor_is_contiguous(y) && same_strides(y, p), "neg of a permuted tensor lost its layout");
            T_CHECK(!wk_tensor_same_storage(y, p), "neg wrote into its input's storage");
            check_times("neg(permuted)", y, p, dt, -1);
        }
    }
    if (t_case("layout/add/both_transposed/%s", dn)) {
        wk_tensor *x = base2345(dt, &h);
        wk_tensor *a = T_NEED(wk_transpose(x, 1, 3)), *b = T_NEED(wk_transpose(x, 1, 3));
        wk_tensor *y = T_NEED(wk_add(a, b));
        if (a && y) {
            T_CHECK(same_strides(y, a), "add of two transposed views lost their layout");
            check_times("add(transposed, transposed)", y, a, dt, 2);
        }
    }
    if (t_case("layout/add/mixed/%s", dn)) {
        /* a transposed + a row-major operand: a row-major result */
        wk_tensor *x = base2345(dt, &h);
        wk_tensor *a = T_NEED(wk_transpose(x, 0, 2));
        wk_tensor *b = a ? T_NEED(wk_contiguous(a)) : NULL;
        wk_tensor *y = b ? T_NEED(wk_add(a, b)) : NULL;
        if (y) {
            T_CHECK(wk_tensor_is_contiguous(y), "add of mixed layouts is not row-major");
            check_times("add(transposed, contiguous)", y, a, dt, 2);
        }
    }
    if (t_case("layout/neg/gapped/%s", dn)) {
        /* a narrowed transposed view is not dense: a row-major result */
        wk_tensor *x = base2345(dt, &h);
        wk_tensor *t = T_NEED(wk_transpose(x, 2, 3));
        wk_tensor *n = t ? T_NEED(wk_narrow(t, 3, 1, 2)) : NULL;
        wk_tensor *y = n ? T_NEED(wk_neg(n)) : NULL;
        if (y) {
            T_CHECK(wk_tensor_is_contiguous(y), "neg of a gapped view is not row-major");
            check_times("neg(gapped)", y, n, dt, -1);
        }
    }
    if (t_case("layout/neg/result_feeds_ops/%s", dn)) {
        /* a permuted result is an ordinary view for the next ops */
        wk_tensor *x = base2345(dt, &h);
        wk_tensor *p = T_NEED(wk_permute(x, perm));
        wk_tensor *y = p ? T_NEED(wk_neg(p)) : NULL;
        wk_tensor *z = y ? T_NEED(wk_contiguous(y)) : NULL;
        wk_tensor *w = z ? T_NEED(wk_add(y, z)) : NULL;
        if (w) {
            T_CHECK(wk_tensor_is_contiguous(z), "contiguous() of a permuted result is not row-major");
            check_times("neg(p) + contiguous(neg(p))", w, p, dt, -2);
        }
    }
}

T_SUITE(layout)
{
    const wk_dtype dts[] = { WK_F32, WK_BF16, WK_I32, WK_I64, WK_F64, WK_I16 };
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) layout_cases(dts[k]);
}
