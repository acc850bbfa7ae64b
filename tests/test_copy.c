/* test_copy.c — in-place copies and fills, joins and creation:
 *   copy_into  dst views (contiguous, transposed, narrowed, reversed,
 *              rank 0, empty) inside a poisoned storage, sources
 *              contiguous / transposed / broadcast / rank 0, same dtype
 *              and converting pairs
 *   copy2d     row copies with strides and offsets; nothing outside the
 *              rows is touched; rows or cols of 0
 *   const_set  every dtype over the destination layouts, values that
 *              round, truncate, saturate, overflow to Inf
 *   cat/stack  along first, middle, last and negative dims, mixed
 *              layouts, empty pieces, rank-0 pieces for stack
 *   create     zeros, ones, full, arange, from_host/to_host, item,
 *              to_device (cpu to cpu), write (into a contiguous tensor
 *              and into a transposed view of a poisoned storage; a short
 *              buffer and a NULL source refused)
 * Case names: copy_into/..., copy2d/..., const_set/..., cat/..., stack/...,
 * create/....
 */
#include <stdlib.h>
#include <string.h>
#include "test.h"

static const t_layout dst_lays[] = {
    { "contiguous", LK_CONTIG, { 2, { 4, 33 } } },
    { "transposed", LK_TRANSPOSED, { 2, { 5, 7 } } },
    { "narrowed", LK_NARROWED, { 2, { 5, 7 } } },
    { "reversed3d", LK_REVERSED, { 3, { 3, 5, 7 } } },
    { "rank8", LK_NARROWED, { 8, { 2, 1, 2, 3, 1, 2, 2, 3 } } },
    { "scalar", LK_CONTIG, { 0, { 0 } } },
    { "empty", LK_NARROWED, { 2, { 0, 5 } } },
    { "odd1023", LK_TRANSPOSED, { 1, { 1023 } } },
    { "big_strided", LK_TRANSPOSED, { 2, { 257, 263 } } },
};
#define NDST ((int)(sizeof dst_lays / sizeof dst_lays[0]))

/* ---- copy_into ----------------------------------------------------------------- */

static void copy_into_case(wk_dtype sdt, wk_dtype ddt, const t_layout *L, int src_mode)
{
    t_arr init = t_arr_new(ddt, L->shape);
    t_fill(ddt, init.p, init.n, T_GEN(G_UNIFORM, -50, 50));
    t_dst d;
    if (!t_make_dst(&init, L->kind, &d)) return;
    /* source: same shape (transposed layout), broadcast from a smaller
     * shape, or a rank-0 scalar */
    wk_shape ss = L->shape;
    t_layout_kind sk = LK_TRANSPOSED;
    if (src_mode == 1 && ss.rank >= 1) { ss.dims[0] = 1; sk = LK_CONTIG; }
    if (src_mode == 2) ss.rank = 0;
    t_arr vs;
    wk_tensor *src = t_make(sdt, sk, ss, T_GEN(G_FULL, 0, 0), &vs);
    if (!src) return;
    t_cover("copy", ddt);
    wk_status st = wk_copy_into(d.view, src);
    if (st != WK_OK) { t_fail("copy_into returned %s: %s", wk_status_name(st), wk_last_error()); return; }
    t_arr expect = t_arr_new(ddt, d.storage.shape);
    memcpy(expect.p, d.storage.p, (size_t)expect.n * t_size(ddt));
    for (int64_t i = 0; i < init.n; i++) {
        int64_t si = t_bcast_index(L->shape, ss, i);
        if (!t_is_float(sdt) && !t_is_float(ddt)) t_put_bits(ddt, expect.p, d.off[i], (uint64_t)t_geti(sdt, vs.p, si));
        else if (!t_is_float(sdt)) t_put(ddt, expect.p, d.off[i], (long double)t_geti(sdt, vs.p, si));
        else t_put(ddt, expect.p, d.off[i], (long double)t_get(sdt, vs.p, si));
    }
    t_check_dst("copy_into", &d, &expect, 0);
}

/* ---- const_set -------------------------------------------------------------------- */

static void const_set_case(wk_dtype dt, const t_layout *L, double value)
{
    t_arr init = t_arr_new(dt, L->shape);
    t_fill(dt, init.p, init.n, T_GEN(G_UNIFORM, -50, 50));
    t_dst d;
    if (!t_make_dst(&init, L->kind, &d)) return;
    t_cover("const_set", dt);
    wk_status st = wk_const_set(d.view, value);
    if (st != WK_OK) { t_fail("const_set returned %s: %s", wk_status_name(st), wk_last_error()); return; }
    t_arr expect = t_arr_new(dt, d.storage.shape);
    memcpy(expect.p, d.storage.p, (size_t)expect.n * t_size(dt));
    for (int64_t i = 0; i < init.n; i++) t_put(dt, expect.p, d.off[i], value);
    t_check_dst("const_set", &d, &expect, 0);
}

/* ---- copy2d ------------------------------------------------------------------------- */

static void copy2d_case(wk_dtype dt, int64_t rows, int64_t cols, int64_t ss, int64_t ds, int64_t so, int64_t dof)
{
    int64_t sn = so + (rows ? (rows - 1) * ss + cols : 0) + 3, dn = dof + (rows ? (rows - 1) * ds + cols : 0) + 5;
    t_arr s = t_arr_new(dt, WK_SHAPE(sn)), dinit = t_arr_new(dt, WK_SHAPE(dn));
    t_fill(dt, s.p, s.n, T_GEN(G_FULL, 0, 0));
    memset(dinit.p, T_POISON, (size_t)dn * t_size(dt));
    wk_tensor *src = T_NEED(wk_from_host(t_dev(), dt, s.shape, s.p));
    wk_tensor *dst = T_NEED(wk_from_host(t_dev(), dt, dinit.shape, dinit.p));
    if (!src || !dst) return;
    t_cover("copy2d", dt);
    wk_status st = wk_copy2d(dst, src, rows, cols, ss, ds, so, dof);
    if (st != WK_OK) { t_fail("copy2d returned %s: %s", wk_status_name(st), wk_last_error()); return; }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) t_put_bits(dt, dinit.p, dof + r * ds + c, t_bits(dt, s.p, so + r * ss + c));
    t_check_exact("copy2d", dst, dinit.shape, dt, dinit.p);
}

/* ---- cat and stack -------------------------------------------------------------------- */

static void cat_case(wk_dtype dt, int dim, bool stack, int variant)
{
    /* three pieces [3, 4, 5] with the cat dim varied; mixed layouts */
    wk_shape base = WK_SHAPE(3, 4, 5);
    if (variant == 1) base = WK_SCALAR;                              /* stack of rank-0 */
    int r = base.rank, nd = dim < 0 ? dim + (stack ? r + 1 : r) : dim;
    int64_t sizes[3] = { 2, 0, 3 };
    if (variant == 2) sizes[1] = 1;
    wk_tensor *ts[3];
    t_arr vals[3];
    static const t_layout_kind kinds[3] = { LK_CONTIG, LK_TRANSPOSED, LK_NARROWED };
    for (int i = 0; i < 3; i++) {
        wk_shape s = base;
        if (!stack) s.dims[nd] = sizes[i];
        ts[i] = t_make(dt, kinds[i], s, T_GEN(G_FULL, 0, 0), &vals[i]);
        if (!ts[i]) return;
    }
    wk_tensor *y = t_own(stack ? wk_stack(ts, 3, dim) : wk_cat(ts, 3, dim));
    if (!y) { t_fail("%s returned NULL: %s", stack ? "stack" : "cat", wk_last_error()); return; }
    t_cover("copy", dt);
    wk_shape os = WK_SCALAR;
    if (stack) {
        os.rank = r + 1;
        for (int d = 0, k = 0; d < r + 1; d++) os.dims[d] = d == nd ? 3 : base.dims[k++];
    } else {
        os = base;
        os.dims[nd] = sizes[0] + sizes[1] + sizes[2];
    }
    t_arr ref = t_arr_new(dt, os);
    /* walk output row-major: outer = prod dims before nd, then pieces */
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < nd; d++) outer *= os.dims[d];
    for (int d = nd + 1; d < os.rank; d++) inner *= os.dims[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < 3; i++) {
            int64_t span = (stack ? 1 : sizes[i]) * inner;
            for (int64_t j = 0; j < span; j++) t_put_bits(dt, ref.p, k++, t_bits(dt, vals[i].p, o * span + j));
        }
    t_check_exact(stack ? "stack" : "cat", y, os, dt, ref.p);
}

/* ---- creation ----------------------------------------------------------------------------- */

static void create_cases(wk_dtype dt)
{
    const char *dn = t_dt_name(dt);
    if (t_case("create/zeros_ones_full/%s", dn)) {
        wk_tensor *z = T_NEED(wk_zeros(t_dev(), dt, WK_SHAPE(3, 1023)));
        wk_tensor *o = T_NEED(wk_ones(t_dev(), dt, WK_SHAPE(7)));
        wk_tensor *f = T_NEED(wk_full(t_dev(), dt, WK_SCALAR, -2.75));
        wk_tensor *e = T_NEED(wk_full(t_dev(), dt, WK_SHAPE(0, 3), 1));
        t_arr rz = t_arr_new(dt, WK_SHAPE(3, 1023)), ro = t_arr_new(dt, WK_SHAPE(7)), rf = t_arr_new(dt, WK_SCALAR);
        for (int64_t i = 0; i < ro.n; i++) t_put(dt, ro.p, i, 1);
        t_put(dt, rf.p, 0, -2.75);
        if (z) t_check_exact("zeros", z, rz.shape, dt, rz.p);
        if (o) t_check_exact("ones", o, ro.shape, dt, ro.p);
        if (f) t_check_exact("full", f, rf.shape, dt, rf.p);
        if (e) T_CHECK(wk_tensor_numel(e) == 0 && wk_tensor_rank(e) == 2, "full of [0, 3]");
    }
    if (t_case("create/arange/%s", dn)) {
        wk_tensor *a = T_NEED(wk_arange(t_dev(), dt, 2, 11, 3));     /* 2 5 8 */
        wk_tensor *b = T_NEED(wk_arange(t_dev(), dt, 5, 0, -2));     /* 5 3 1 */
        wk_tensor *c = T_NEED(wk_arange(t_dev(), dt, 3, 3, 1));      /* empty */
        t_arr ra = t_arr_new(dt, WK_SHAPE(3)), rb = t_arr_new(dt, WK_SHAPE(3));
        for (int i = 0; i < 3; i++) { t_put(dt, ra.p, i, 2 + 3 * i); t_put(dt, rb.p, i, 5 - 2 * i); }
        if (a) t_check_exact("arange", a, ra.shape, dt, ra.p);
        if (b) t_check_exact("arange down", b, rb.shape, dt, rb.p);
        if (c) T_CHECK(wk_tensor_numel(c) == 0 && wk_tensor_rank(c) == 1, "arange(3, 3) is not empty 1-d");
    }
    if (t_case("create/host_roundtrip_item/%s", dn)) {
        t_arr v;
        wk_tensor *x = t_make(dt, LK_NARROWED, WK_SHAPE(3, 4), T_GEN(G_FULL, 0, 0), &v);
        if (!x) return;
        double got;
        T_OK(wk_item(x, (const int64_t[]){ 2, 1 }, &got));
        T_CHECK(got == t_get(dt, v.p, 9) || (isnan(got) && isnan(t_get(dt, v.p, 9))), "item [2,1] is %g, expected %g", got,
                t_get(dt, v.p, 9));
        wk_tensor *y = t_own(wk_to_device(x, t_dev()));
        if (!y) { t_fail("to_device(cpu) returned NULL: %s", wk_last_error()); return; }
        T_CHECK(!wk_tensor_same_storage(x, y), "to_device made no copy");
        t_check_exact("to_device", y, v.shape, dt, v.p);
        /* too small a host buffer is refused */
        unsigned char small[8];
        wk_status st = wk_to_host(x, small, 4);
        T_CHECK(st != WK_OK, "to_host accepted a 4-byte buffer for 12 elements");
        wk_clear_error();
    }
    if (t_case("create/write/%s", dn)) {
        /* row-major host values into a contiguous tensor and into a
           transposed view; the rest of the view's storage keeps its poison */
        const size_t es = wk_dtype_size(dt);
        t_arr src = t_arr_new(dt, WK_SHAPE(5, 7)), poison = t_arr_new(dt, WK_SHAPE(7, 9));
        t_fill(dt, src.p, src.n, T_GEN(G_UNIFORM, -50, 50));
        t_fill(dt, poison.p, poison.n, T_GEN(G_FULL, 0, 0));
        wk_tensor *c = t_own(wk_zeros(t_dev(), dt, WK_SHAPE(5, 7)));
        if (c) {
            T_OK(wk_write(c, src.p, (size_t)src.n * es));
            t_check_exact("write contiguous", c, src.shape, dt, src.p);
        }
        wk_tensor *store = t_own(wk_from_host(t_dev(), dt, WK_SHAPE(7, 9), poison.p));
        wk_tensor *view = store ? t_own(wk_transpose(t_own(wk_narrow(store, 1, 2, 5)), 0, 1)) : NULL;   /* [5, 7] */
        if (view) {
            T_OK(wk_write(view, src.p, (size_t)src.n * es));
            t_arr want = t_arr_new(dt, WK_SHAPE(7, 9));
            memcpy(want.p, poison.p, (size_t)poison.n * es);   /* bytes: exact for i64 too */
            for (int64_t r = 0; r < 5; r++)
                for (int64_t k = 0; k < 7; k++)
                    memcpy((char *)want.p + (k * 9 + 2 + r) * (int64_t)es, (const char *)src.p + (r * 7 + k) * (int64_t)es, es);
            t_check_exact("write transposed view", store, want.shape, dt, want.p);
        }
        if (c) {
            T_CHECK(wk_write(c, src.p, (size_t)src.n * es - 1) == WK_ERR_ARGUMENT, "write took a short buffer");
            T_CHECK(wk_write(c, NULL, (size_t)src.n * es) == WK_ERR_ARGUMENT, "write took a NULL source");
            T_CHECK(wk_write(NULL, src.p, 8) == WK_ERR_ARGUMENT, "write took a NULL tensor");
            wk_clear_error();
        }
    }
}

T_SUITE(copy)
{
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int l = 0; l < NDST; l++)
            for (int m = 0; m < 3; m++) {
                static const char *mode[] = { "src_transposed", "src_broadcast", "src_scalar" };
                if (t_case("copy_into/%s->%s/%s/%s", t_dt_name((wk_dtype)d), t_dt_name((wk_dtype)d), dst_lays[l].name, mode[m]))
                    copy_into_case((wk_dtype)d, (wk_dtype)d, &dst_lays[l], m);
            }
    static const wk_dtype conv[][2] = { { WK_F32, WK_F16 }, { WK_F64, WK_I32 }, { WK_I64, WK_U8 }, { WK_F16, WK_BF16 },
                                        { WK_U8, WK_F8E4M3 }, { WK_F8E4M3, WK_F32 }, { WK_I16, WK_F64 }, { WK_BF16, WK_I64 } };
    for (int c = 0; c < 8; c++)
        for (int l = 0; l < 4; l++)
            if (t_case("copy_into/%s->%s/%s/src_transposed", t_dt_name(conv[c][0]), t_dt_name(conv[c][1]), dst_lays[l].name))
                copy_into_case(conv[c][0], conv[c][1], &dst_lays[l], 0);

    static const double values[] = { 1.5, -2.5, 300, 1e10, NAN };
    static const char *vnames[] = { "1.5", "-2.5", "300", "1e10", "nan" };
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int l = 0; l < NDST; l++)
            for (int v = 0; v < 5; v++) {
                if (v > 1 && l > 1) continue;      /* the extreme values on two layouts */
                if (t_case("const_set/%s/%s/%s", t_dt_name((wk_dtype)d), dst_lays[l].name, vnames[v]))
                    const_set_case((wk_dtype)d, &dst_lays[l], values[v]);
            }

    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
        wk_dtype dt = (wk_dtype)d;
        if (t_case("copy2d/%s/rows", t_dt_name(dt))) copy2d_case(dt, 5, 7, 9, 11, 2, 3);
        if (t_case("copy2d/%s/packed", t_dt_name(dt))) copy2d_case(dt, 4, 33, 33, 33, 0, 0);
        if (t_case("copy2d/%s/one_row", t_dt_name(dt))) copy2d_case(dt, 1, 1023, 1023, 1, 1, 0);
        if (t_case("copy2d/%s/empty", t_dt_name(dt))) copy2d_case(dt, 0, 5, 5, 5, 0, 0);
        if (t_case("copy2d/%s/zero_cols", t_dt_name(dt))) copy2d_case(dt, 3, 0, 4, 4, 0, 0);
        if (t_case("copy2d/%s/large", t_dt_name(dt))) copy2d_case(dt, 300, 257, 263, 260, 5, 7);
    }

    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
        wk_dtype dt = (wk_dtype)d;
        static const int dims[] = { 0, 1, 2, -1 };
        for (int k = 0; k < 4; k++) {
            if (t_case("cat/%s/dim%d", t_dt_name(dt), dims[k])) cat_case(dt, dims[k], false, 0);
            if (t_case("stack/%s/dim%d", t_dt_name(dt), dims[k])) cat_case(dt, dims[k], true, 0);
        }
        if (t_case("cat/%s/dim1_no_empty_piece", t_dt_name(dt))) cat_case(dt, 1, false, 2);
        if (t_case("stack/%s/rank0_pieces", t_dt_name(dt))) cat_case(dt, 0, true, 1);
        create_cases(dt);
    }
    if (t_case("cat/single_piece")) {
        t_arr v;
        wk_tensor *x = t_make(WK_F32, LK_TRANSPOSED, WK_SHAPE(3, 4), T_GEN(G_UNIFORM, -1, 1), &v);
        wk_tensor *y = x ? t_own(wk_cat(&x, 1, 0)) : NULL;
        if (x && !y) t_fail("cat of one piece returned NULL: %s", wk_last_error());
        if (y) t_check_exact("cat", y, v.shape, WK_F32, v.p);
    }
}
