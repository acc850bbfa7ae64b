/* test_binary.c — the binary family (add sub mul div minimum maximum), the
 * comparisons (eq ne lt le gt ge, u8 results) and where_cond (masks u8,
 * u32, i64), on every dtype, over the standard layouts applied to the
 * operands and over numpy broadcasting (row, column, rank-extending,
 * rank-0 against a tensor). References are naive double / 64-bit integer
 * loops: integer results exactly (wrap-around, division by zero = 0,
 * INT_MIN / -1 = INT_MIN), float results with the normalized error.
 *
 * Case names: binary/<op>/<dtype>/<layout>, cmp/<op>/<dtype>/<layout>,
 * where_cond/<mask dtype>/<dtype>/<layout>.
 */
#include <stdlib.h>
#include "test.h"

/* two-operand layouts: (kind, shape) for a and for b */
typedef struct blay {
    const char *name;
    t_layout_kind ka;
    wk_shape sa;
    t_layout_kind kb;
    wk_shape sb;
} blay;

static const blay blays[] = {
    { "contiguous", LK_CONTIG, { 2, { 4, 33 } }, LK_CONTIG, { 2, { 4, 33 } } },
    { "transposed", LK_TRANSPOSED, { 2, { 4, 33 } }, LK_CONTIG, { 2, { 4, 33 } } },
    { "both_transposed", LK_TRANSPOSED, { 2, { 5, 7 } }, LK_TRANSPOSED, { 2, { 5, 7 } } },
    { "narrowed", LK_NARROWED, { 2, { 5, 7 } }, LK_REVERSED, { 2, { 5, 7 } } },
    { "broadcast", LK_BROADCAST, { 2, { 4, 33 } }, LK_NARROWED, { 2, { 4, 33 } } },
    { "bcast_row", LK_CONTIG, { 2, { 4, 33 } }, LK_CONTIG, { 1, { 33 } } },
    { "bcast_outer", LK_CONTIG, { 2, { 4, 1 } }, LK_TRANSPOSED, { 2, { 1, 33 } } },
    { "bcast_rank3", LK_NARROWED, { 3, { 3, 1, 5 } }, LK_CONTIG, { 2, { 4, 1 } } },
    { "scalar_tensor", LK_CONTIG, { 0, { 0 } }, LK_TRANSPOSED, { 2, { 4, 7 } } },
    { "tensor_scalar", LK_REVERSED, { 3, { 2, 3, 4 } }, LK_CONTIG, { 0, { 0 } } },
    { "rank8", LK_NARROWED, { 8, { 2, 1, 2, 3, 1, 2, 2, 3 } }, LK_CONTIG, { 8, { 2, 1, 2, 3, 1, 2, 2, 3 } } },
    { "empty", LK_CONTIG, { 2, { 0, 5 } }, LK_CONTIG, { 2, { 0, 5 } } },
    { "empty_bcast", LK_CONTIG, { 2, { 0, 1 } }, LK_CONTIG, { 1, { 7 } } },
    { "size1", LK_CONTIG, { 1, { 1 } }, LK_CONTIG, { 1, { 1 } } },
    { "odd7", LK_CONTIG, { 1, { 7 } }, LK_NARROWED, { 1, { 7 } } },
    { "odd1023", LK_CONTIG, { 1, { 1023 } }, LK_CONTIG, { 1, { 1023 } } },
    { "scalar", LK_CONTIG, { 0, { 0 } }, LK_CONTIG, { 0, { 0 } } },
    { "big65537", LK_CONTIG, { 1, { 65537 } }, LK_CONTIG, { 1, { 65537 } } },
    { "big_strided", LK_TRANSPOSED, { 2, { 257, 263 } }, LK_BROADCAST, { 2, { 257, 263 } } },
};
#define NBLAYS ((int)(sizeof blays / sizeof blays[0]))

/* ---- references ---------------------------------------------------------- */

static int64_t ref_int_binary(wk_binary_op op, wk_dtype dt, int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case WK_ADD: return t_wrap(dt, ua + ub);
    case WK_SUB: return t_wrap(dt, ua - ub);
    case WK_MUL: return t_wrap(dt, ua * ub);
    case WK_DIV:
        if (b == 0) return 0;
        if (b == -1) return t_wrap(dt, (uint64_t)0 - ua);     /* INT_MIN / -1 wraps to INT_MIN */
        return a / b;
    case WK_MINIMUM: return a < b ? a : b;
    case WK_MAXIMUM: return a > b ? a : b;
    default: return 0;
    }
}

static double ref_float_binary(wk_binary_op op, double a, double b)
{
    switch (op) {
    case WK_ADD: return a + b;
    case WK_SUB: return a - b;
    case WK_MUL: return a * b;
    case WK_DIV: return a / b;
    case WK_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case WK_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    default: return NAN;
    }
}

static bool ref_cmp(wk_cmp_op op, double a, double b)
{
    switch (op) {
    case WK_EQ: return a == b;
    case WK_NE: return a != b;
    case WK_LT: return a < b;
    case WK_LE: return a <= b;
    case WK_GT: return a > b;
    case WK_GE: return a >= b;
    default: return false;
    }
}
static bool ref_cmp_int(wk_cmp_op op, int64_t a, int64_t b)
{
    switch (op) {
    case WK_EQ: return a == b;
    case WK_NE: return a != b;
    case WK_LT: return a < b;
    case WK_LE: return a <= b;
    case WK_GT: return a > b;
    case WK_GE: return a >= b;
    default: return false;
    }
}

static wk_tensor *call_binary(wk_binary_op op, const wk_tensor *a, const wk_tensor *b, bool wrapper)
{
    if (!wrapper) return wk_binary(op, a, b);
    switch (op) {
    case WK_ADD: return wk_add(a, b);
    case WK_SUB: return wk_sub(a, b);
    case WK_MUL: return wk_mul(a, b);
    case WK_DIV: return wk_div(a, b);
    case WK_MINIMUM: return wk_minimum(a, b);
    case WK_MAXIMUM: return wk_maximum(a, b);
    default: return NULL;
    }
}

/* ---- cases ----------------------------------------------------------------- */

static bool make_pair(wk_dtype dt, const blay *L, t_gen ga, t_gen gb, wk_tensor **a, wk_tensor **b, t_arr *va, t_arr *vb,
                      wk_shape *out)
{
    *a = t_make(dt, L->ka, L->sa, ga, va);
    *b = t_make(dt, L->kb, L->sb, gb, vb);
    if (!*a || !*b) return false;
    if (!t_bcast_shape(L->sa, L->sb, out)) { t_fail("bad test layout"); return false; }
    return true;
}

static void binary_case(wk_binary_op op, wk_dtype dt, const blay *L, bool wrapper)
{
    const char *name = wk_binary_name(op);
    bool is_int = !t_is_float(dt);
    t_gen ga = is_int ? T_GEN(G_FULL, 0, 0) : T_GEN(G_UNIFORM, -10, 10);
    t_gen gb = ga;
    if (!is_int && op == WK_DIV) gb = T_GEN(G_AWAY, 0.5, 4);
    if (!is_int && (op == WK_MINIMUM || op == WK_MAXIMUM)) ga = gb = T_GEN(G_SMALLSET, 0, 0);
    if (is_int && op == WK_DIV && dt != WK_U8) gb = T_GEN(G_SMALLSET, 0, 0);   /* 0, +-1, small divisors */
    wk_tensor *a, *b;
    t_arr va, vb;
    wk_shape os;
    if (!make_pair(dt, L, ga, gb, &a, &b, &va, &vb, &os)) return;
    t_cover(name, dt);
    wk_tensor *y = t_own(call_binary(op, a, b, wrapper));
    if (!y) { t_fail("%s returned NULL: %s", name, wk_last_error()); return; }
    int64_t n = t_numel(os);
    if (is_int) {
        t_arr ref = t_arr_new(dt, os);
        for (int64_t i = 0; i < n; i++)
            t_puti(dt, ref.p, i, ref_int_binary(op, dt, t_geti(dt, va.p, t_bcast_index(os, va.shape, i)),
                                                t_geti(dt, vb.p, t_bcast_index(os, vb.shape, i))));
        t_check_exact(name, y, os, dt, ref.p);
    } else {
        double *ref = t_mem((size_t)n * sizeof(double) + 8);
        for (int64_t i = 0; i < n; i++)
            ref[i] = ref_float_binary(op, t_get(dt, va.p, t_bcast_index(os, va.shape, i)),
                                      t_get(dt, vb.p, t_bcast_index(os, vb.shape, i)));
        t_check_close(name, y, os, dt, ref, t_bound(dt));
    }
}

static void cmp_case(wk_cmp_op op, wk_dtype dt, const blay *L)
{
    const char *name = wk_cmp_name(op);
    wk_tensor *a, *b;
    t_arr va, vb;
    wk_shape os;
    if (!make_pair(dt, L, T_GEN(G_SMALLSET, 0, 0), T_GEN(G_SMALLSET, 0, 0), &a, &b, &va, &vb, &os)) return;
    t_cover(name, dt);
    wk_tensor *y = t_own(wk_cmp(op, a, b));
    if (!y) { t_fail("%s returned NULL: %s", name, wk_last_error()); return; }
    int64_t n = t_numel(os);
    t_arr ref = t_arr_new(WK_U8, os);
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = t_bcast_index(os, va.shape, i), ib = t_bcast_index(os, vb.shape, i);
        bool r = t_is_float(dt) ? ref_cmp(op, t_get(dt, va.p, ia), t_get(dt, vb.p, ib))
                                : ref_cmp_int(op, t_geti(dt, va.p, ia), t_geti(dt, vb.p, ib));
        ref.p[i] = r ? 1 : 0;
    }
    t_check_exact(name, y, os, WK_U8, ref.p);
}

/* where: the condition takes a's layout, a takes b's, b is contiguous.
 * Masks mix zero, small values and values whose low bits are all zero
 * (256, 2^32, INT64_MIN) so a truncating test of the mask shows. */
static void where_case(wk_dtype cdt, wk_dtype dt, const blay *L)
{
    static const int64_t picks[] = { 0, 1, 0, 255, 0, 256, 65536, 0, -1, 0, (int64_t)1 << 32, 0, INT64_MIN };
    int np = cdt == WK_U8 ? 5 : cdt == WK_U32 ? 8 : 13;
    t_arr vc = t_arr_new(cdt, L->sa), va, vb;
    for (int64_t i = 0; i < vc.n; i++) t_puti(cdt, vc.p, i, picks[t_rng_int(t_r(), 0, np - 1)]);
    wk_tensor *c = t_make_from(&vc, L->ka);
    wk_tensor *a = t_make(dt, L->kb, L->sb, T_GEN(G_FULL, -10, 10), &va);
    wk_tensor *b = t_make(dt, LK_CONTIG, L->sb, T_GEN(G_FULL, -10, 10), &vb);
    wk_shape s1, os;
    if (!c || !a || !b) return;
    if (!t_bcast_shape(L->sa, L->sb, &s1) || !t_bcast_shape(s1, L->sb, &os)) { t_fail("bad test layout"); return; }
    t_cover("where_cond", dt);
    wk_tensor *y = t_own(wk_where(c, a, b));
    if (!y) { t_fail("where_cond returned NULL: %s", wk_last_error()); return; }
    int64_t n = t_numel(os);
    t_arr ref = t_arr_new(dt, os);
    for (int64_t i = 0; i < n; i++) {
        bool cond = t_bits(cdt, vc.p, t_bcast_index(os, vc.shape, i)) != 0;
        const t_arr *src = cond ? &va : &vb;
        t_put_bits(dt, ref.p, i, t_bits(dt, src->p, t_bcast_index(os, src->shape, i)));
    }
    t_check_exact("where_cond", y, os, dt, ref.p);
}

T_SUITE(binary)
{
    for (int o = 0; o < WK_BINARY_COUNT; o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            for (int l = 0; l < NBLAYS; l++)
                if (t_case("binary/%s/%s/%s", wk_binary_name((wk_binary_op)o), t_dt_name((wk_dtype)d), blays[l].name))
                    binary_case((wk_binary_op)o, (wk_dtype)d, &blays[l], false);
            if (t_case("binary/%s/%s/wrapper", wk_binary_name((wk_binary_op)o), t_dt_name((wk_dtype)d)))
                binary_case((wk_binary_op)o, (wk_dtype)d, &blays[1], true);
        }
    if (t_case("binary/names")) {
        static const char *names[] = { "add", "sub", "mul", "div", "minimum", "maximum" };
        for (int o = 0; o < WK_BINARY_COUNT; o++)
            T_CHECK(!strcmp(wk_binary_name((wk_binary_op)o), names[o]), "wk_binary_name(%d)", o);
    }
}

T_SUITE(cmp)
{
    for (int o = 0; o < WK_CMP_COUNT; o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
            for (int l = 0; l < NBLAYS; l++)
                if (t_case("cmp/%s/%s/%s", wk_cmp_name((wk_cmp_op)o), t_dt_name((wk_dtype)d), blays[l].name))
                    cmp_case((wk_cmp_op)o, (wk_dtype)d, &blays[l]);
    if (t_case("cmp/names")) {
        static const char *names[] = { "eq", "ne", "lt", "le", "gt", "ge" };
        for (int o = 0; o < WK_CMP_COUNT; o++)
            T_CHECK(!strcmp(wk_cmp_name((wk_cmp_op)o), names[o]), "wk_cmp_name(%d)", o);
    }
}

T_SUITE(where)
{
    static const wk_dtype masks[] = { WK_U8, WK_U32, WK_I64 };
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
            for (int l = 0; l < NBLAYS; l++)
                if (t_case("where_cond/%s/%s/%s", t_dt_name(masks[m]), t_dt_name((wk_dtype)d), blays[l].name))
                    where_case(masks[m], (wk_dtype)d, &blays[l]);
    /* a mask of another dtype is refused */
    if (t_case("where_cond/f32_mask_refused")) {
        wk_tensor *c = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3)));
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3)));
        if (c && a) {
            wk_tensor *y = t_own(wk_where(c, a, a));
            T_CHECK(!y, "where with an f32 mask returned a tensor");
            T_CHECK(strstr(wk_last_error(), "f32") != NULL, "message \"%s\" does not name the mask dtype", wk_last_error());
        }
    }
}
