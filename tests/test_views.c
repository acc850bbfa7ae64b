/* test_views.c — view ops and storage sharing: reshape (views, -1, copies
 * when strides forbid a view), narrow, transpose, permute, broadcast_as,
 * squeeze, unsqueeze, flatten, contiguous, copy, chunk. Each checks the
 * shape, the strides and offset it promises, whether storage is shared,
 * and the values read through the view (against the host copy of the
 * storage). In-place ops written through one view must be visible through
 * views made before the write; a view keeps its storage alive.
 *
 * Case names: views/<op>/<what>[/<dtype>].
 */
#include <stdlib.h>
#include "test.h"

/* base [4, 6] of dt with distinct values; host copy in *h */
static wk_tensor *base46(wk_dtype dt, t_arr *h)
{
    *h = t_arr_new(dt, WK_SHAPE(4, 6));
    for (int64_t i = 0; i < 24; i++) t_puti(dt, h->p, i, i + 1);
    return T_NEED(wk_from_host(t_dev(), dt, h->shape, h->p));
}

static bool check_geom(const char *what, const wk_tensor *v, wk_shape shape, const int64_t *strides, int64_t offset)
{
    if (!v) { t_fail("%s returned NULL: %s", what, wk_last_error()); return false; }
    bool ok = true;
    if (!t_shape_eq(wk_tensor_shape(v), shape)) {
        t_fail("%s: shape %s, expected %s", what, t_shape_str(wk_tensor_shape(v)), t_shape_str(shape));
        return false;
    }
    for (int d = 0; strides && d < shape.rank; d++)
        if (shape.dims[d] != 1 && wk_tensor_stride(v, d) != strides[d]) {
            t_fail("%s: stride of dim %d is %lld, expected %lld", what, d, (long long)wk_tensor_stride(v, d), (long long)strides[d]);
            ok = false;
        }
    if (offset >= 0 && t_numel(shape) && wk_tensor_offset(v) != offset) {
        t_fail("%s: offset %lld, expected %lld", what, (long long)wk_tensor_offset(v), (long long)offset);
        ok = false;
    }
    return ok;
}

/* the values read through v equal what its geometry says in storage h */
static void check_values(const char *what, const wk_tensor *v, const t_arr *h)
{
    if (!v) return;
    t_arr want = t_gather_view(v, h->p, h->dt);
    t_check_exact(what, v, want.shape, h->dt, want.p);
}

/* values of v equal the row-major values `want` */
static void check_rowmajor(const char *what, const wk_tensor *v, wk_shape shape, const t_arr *want)
{
    if (v) t_check_exact(what, v, shape, want->dt, want->p);
}

static void view_ops(wk_dtype dt)
{
    t_arr h;
    const char *dn = t_dt_name(dt);
    if (t_case("views/reshape/view/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *r = b ? t_own(wk_reshape(b, WK_SHAPE(2, 12))) : NULL;
        if (check_geom("reshape", r, WK_SHAPE(2, 12), (int64_t[]){ 12, 1 }, 0)) {
            T_CHECK(wk_tensor_same_storage(r, b), "reshape of a contiguous tensor copied");
            check_values("reshape", r, &h);
        }
        wk_tensor *m = b ? t_own(wk_reshape(b, WK_SHAPE(2, -1, 3))) : NULL;
        if (check_geom("reshape -1", m, WK_SHAPE(2, 4, 3), (int64_t[]){ 12, 3, 1 }, 0)) check_values("reshape -1", m, &h);
        wk_tensor *s = b ? t_own(wk_reshape(b, WK_SHAPE(-1))) : NULL;
        if (check_geom("reshape [-1]", s, WK_SHAPE(24), NULL, 0)) check_rowmajor("reshape [-1]", s, WK_SHAPE(24), &h);
    }
    if (t_case("views/reshape/copy_when_needed/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *tr = b ? T_NEED(wk_transpose(b, 0, 1)) : NULL;      /* [6, 4] */
        wk_tensor *r = tr ? t_own(wk_reshape(tr, WK_SHAPE(24))) : NULL;
        if (check_geom("reshape of transposed", r, WK_SHAPE(24), (int64_t[]){ 1 }, -1)) {
            T_CHECK(!wk_tensor_same_storage(r, b), "a reshape that needs a copy shares storage");
            t_arr want = t_gather_view(tr, h.p, dt);
            check_rowmajor("reshape of transposed", r, WK_SHAPE(24), &want);
        }
        /* splitting a dim of a transposed view can stay a view; values must hold either way */
        wk_tensor *r2 = tr ? t_own(wk_reshape(tr, WK_SHAPE(6, 2, 2))) : NULL;
        if (check_geom("reshape split", r2, WK_SHAPE(6, 2, 2), NULL, -1)) {
            t_arr want = t_gather_view(tr, h.p, dt);
            check_rowmajor("reshape split", r2, WK_SHAPE(6, 2, 2), &want);
        }
    }
    if (t_case("views/narrow/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *n1 = b ? t_own(wk_narrow(b, 1, 2, 3)) : NULL;
        if (check_geom("narrow", n1, WK_SHAPE(4, 3), (int64_t[]){ 6, 1 }, 2)) {
            T_CHECK(wk_tensor_same_storage(n1, b), "narrow copied");
            T_CHECK(!wk_tensor_is_contiguous(n1), "a narrowed column block claims to be contiguous");
            check_values("narrow", n1, &h);
        }
        wk_tensor *n2 = n1 ? t_own(wk_narrow(n1, -2, 1, 2)) : NULL;   /* narrow of a narrow, negative dim */
        if (check_geom("narrow of narrow", n2, WK_SHAPE(2, 3), (int64_t[]){ 6, 1 }, 8)) check_values("narrow of narrow", n2, &h);
        wk_tensor *n0 = b ? t_own(wk_narrow(b, 0, 4, 0)) : NULL;       /* empty at the end */
        if (check_geom("narrow to 0", n0, WK_SHAPE(0, 6), NULL, -1)) T_CHECK(wk_tensor_numel(n0) == 0, "numel of an empty view");
    }
    if (t_case("views/transpose/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *t = b ? t_own(wk_transpose(b, -1, 0)) : NULL;
        if (check_geom("transpose", t, WK_SHAPE(6, 4), (int64_t[]){ 1, 6 }, 0)) {
            T_CHECK(wk_tensor_same_storage(t, b), "transpose copied");
            check_values("transpose", t, &h);
        }
    }
    if (t_case("views/permute/%s", dn)) {
        t_arr v;
        wk_tensor *x = t_make(dt, LK_CONTIG, WK_SHAPE(2, 3, 4), T_GEN(G_FULL, 0, 0), &v);
        wk_tensor *p = x ? t_own(wk_permute(x, (const int[]){ 2, 0, 1 })) : NULL;
        if (check_geom("permute", p, WK_SHAPE(4, 2, 3), (int64_t[]){ 1, 12, 4 }, 0)) check_values("permute", p, &v);
    }
    if (t_case("views/broadcast_as/%s", dn)) {
        t_arr v;
        wk_tensor *x = t_make(dt, LK_CONTIG, WK_SHAPE(3, 1), T_GEN(G_FULL, 0, 0), &v);
        wk_tensor *bc = x ? t_own(wk_broadcast_as(x, WK_SHAPE(2, 3, 4))) : NULL;
        if (check_geom("broadcast_as", bc, WK_SHAPE(2, 3, 4), (int64_t[]){ 0, 1, 0 }, 0)) {
            T_CHECK(wk_tensor_same_storage(bc, x), "broadcast_as copied");
            check_values("broadcast_as", bc, &v);
        }
    }
    if (t_case("views/squeeze_unsqueeze/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *u0 = b ? t_own(wk_unsqueeze(b, 0)) : NULL;
        wk_tensor *u1 = b ? t_own(wk_unsqueeze(b, -1)) : NULL;     /* at the end */
        wk_tensor *u2 = b ? t_own(wk_unsqueeze(b, 1)) : NULL;
        check_geom("unsqueeze 0", u0, WK_SHAPE(1, 4, 6), NULL, 0);
        check_geom("unsqueeze -1", u1, WK_SHAPE(4, 6, 1), NULL, 0);
        if (check_geom("unsqueeze 1", u2, WK_SHAPE(4, 1, 6), (int64_t[]){ 6, 0, 1 }, 0)) check_values("unsqueeze", u2, &h);
        wk_tensor *s = u2 ? t_own(wk_squeeze(u2, 1)) : NULL;
        if (check_geom("squeeze", s, WK_SHAPE(4, 6), (int64_t[]){ 6, 1 }, 0)) check_values("squeeze", s, &h);
        wk_tensor *s2 = u1 ? t_own(wk_squeeze(u1, -1)) : NULL;
        check_geom("squeeze -1", s2, WK_SHAPE(4, 6), NULL, 0);
        /* rank 0 <-> rank 1 */
        wk_tensor *sc = T_NEED(wk_full(t_dev(), dt, WK_SCALAR, 3));
        wk_tensor *u = sc ? t_own(wk_unsqueeze(sc, 0)) : NULL;
        if (check_geom("unsqueeze rank 0", u, WK_SHAPE(1), NULL, 0)) {
            wk_tensor *back = t_own(wk_squeeze(u, 0));
            check_geom("squeeze to rank 0", back, WK_SCALAR, NULL, 0);
        }
    }
    if (t_case("views/flatten/%s", dn)) {
        t_arr v;
        wk_tensor *x = t_make(dt, LK_CONTIG, WK_SHAPE(2, 3, 4, 5), T_GEN(G_FULL, 0, 0), &v);
        wk_tensor *f = x ? t_own(wk_flatten(x, 1, 2)) : NULL;
        if (check_geom("flatten 1..2", f, WK_SHAPE(2, 12, 5), (int64_t[]){ 60, 5, 1 }, 0)) {
            T_CHECK(wk_tensor_same_storage(f, x), "flatten of a contiguous tensor copied");
            check_values("flatten", f, &v);
        }
        wk_tensor *all = x ? t_own(wk_flatten(x, 0, -1)) : NULL;
        if (check_geom("flatten all", all, WK_SHAPE(120), NULL, 0)) check_rowmajor("flatten all", all, WK_SHAPE(120), &v);
        wk_tensor *tr = x ? T_NEED(wk_transpose(x, 1, 2)) : NULL;     /* [2, 4, 3, 5] */
        wk_tensor *ft = tr ? t_own(wk_flatten(tr, 1, 2)) : NULL;      /* needs a copy */
        if (check_geom("flatten of transposed", ft, WK_SHAPE(2, 12, 5), NULL, -1)) {
            t_arr want = t_gather_view(tr, v.p, dt);
            check_rowmajor("flatten of transposed", ft, WK_SHAPE(2, 12, 5), &want);
        }
    }
    if (t_case("views/contiguous_copy/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *c = b ? t_own(wk_contiguous(b)) : NULL;
        if (c) {
            T_CHECK(c == b || wk_tensor_same_storage(c, b), "contiguous() of a contiguous tensor copied");
            T_CHECK(wk_tensor_is_contiguous(c), "contiguous() result is not contiguous");
        }
        wk_tensor *tr = b ? T_NEED(wk_transpose(b, 0, 1)) : NULL;
        wk_tensor *ct = tr ? t_own(wk_contiguous(tr)) : NULL;
        if (check_geom("contiguous of transposed", ct, WK_SHAPE(6, 4), (int64_t[]){ 4, 1 }, -1)) {
            T_CHECK(!wk_tensor_same_storage(ct, b), "contiguous of a transposed view shares storage");
            t_arr want = t_gather_view(tr, h.p, dt);
            check_rowmajor("contiguous", ct, WK_SHAPE(6, 4), &want);
        }
        wk_tensor *cp = b ? t_own(wk_copy(b)) : NULL;
        if (check_geom("copy", cp, WK_SHAPE(4, 6), (int64_t[]){ 6, 1 }, -1)) {
            T_CHECK(!wk_tensor_same_storage(cp, b), "copy shares storage");
            check_rowmajor("copy", cp, WK_SHAPE(4, 6), &h);
        }
        t_cover("copy", dt);
    }
    if (t_case("views/chunk/%s", dn)) {
        wk_tensor *b = base46(dt, &h);
        wk_tensor *parts[8] = { 0 };
        int n = b ? wk_chunk(b, 4, 1, parts) : -1;          /* 6 -> 2, 2, 2 */
        for (int i = 0; i < n && i < 8; i++) t_own(parts[i]);
        T_CHECK(n == 3, "chunk of 6 into 4 gave %d parts, expected 3 of ceil(6/4)=2", n);
        for (int i = 0; i < n && i < 3; i++)
            if (check_geom("chunk", parts[i], WK_SHAPE(4, 2), (int64_t[]){ 6, 1 }, 2 * i)) {
                T_CHECK(wk_tensor_same_storage(parts[i], b), "chunk copied");
                check_values("chunk", parts[i], &h);
            }
        wk_tensor *q[8] = { 0 };
        int m = b ? wk_chunk(b, 3, -2, q) : -1;             /* 4 -> 2, 2 */
        for (int i = 0; i < m && i < 8; i++) t_own(q[i]);
        T_CHECK(m == 2, "chunk of 4 into 3 gave %d parts, expected 2", m);
        if (m == 2) check_geom("chunk last", q[1], WK_SHAPE(2, 6), NULL, 12);
        wk_tensor *r[8] = { 0 };
        int k = b ? wk_chunk(b, 4, 0, r) : -1;              /* 4 -> 1, 1, 1, 1 */
        for (int i = 0; i < k && i < 8; i++) t_own(r[i]);
        T_CHECK(k == 4, "chunk of 4 into 4 gave %d parts", k);
        wk_tensor *s[8] = { 0 };
        int j = b ? wk_chunk(b, 4, 1, s) : -1;              /* 6 into 4: 2,2,2 (uneven when 5: 2,2,1) */
        for (int i = 0; i < j && i < 8; i++) t_own(s[i]);
        wk_tensor *n5 = b ? T_NEED(wk_narrow(b, 1, 0, 5)) : NULL;
        wk_tensor *u[8] = { 0 };
        int l = n5 ? wk_chunk(n5, 3, 1, u) : -1;            /* 5 -> 2, 2, 1 */
        for (int i = 0; i < l && i < 8; i++) t_own(u[i]);
        T_CHECK(l == 3, "chunk of 5 into 3 gave %d parts", l);
        if (l == 3) {
            check_geom("uneven chunk", u[2], WK_SHAPE(4, 1), NULL, 4);
            check_values("uneven chunk", u[2], &h);
        }
    }
}

/* ---- writes through one view, reads through another ------------------------------ */

static void shared_writes(void)
{
    if (t_case("views/shared_write/const_set")) {
        t_arr h;
        wk_tensor *b = base46(WK_F32, &h);
        wk_tensor *flat = b ? T_NEED(wk_reshape(b, WK_SHAPE(24))) : NULL;     /* made before the write */
        wk_tensor *tr = b ? T_NEED(wk_transpose(b, 0, 1)) : NULL;
        wk_tensor *win = tr ? T_NEED(wk_narrow(tr, 0, 2, 3)) : NULL;         /* columns 2..4 of b */
        if (!win || !flat) return;
        t_cover("const_set", WK_F32);
        T_OK(wk_const_set(win, -7));
        for (int64_t r = 0; r < 4; r++)
            for (int64_t c = 2; c < 5; c++) t_put(WK_F32, h.p, r * 6 + c, -7);
        check_rowmajor("read through reshape", flat, WK_SHAPE(24), &h);
        check_values("read through transpose", tr, &h);
    }
    if (t_case("views/shared_write/copy_into")) {
        t_arr h;
        wk_tensor *b = base46(WK_I32, &h);
        wk_tensor *col = b ? T_NEED(wk_narrow(b, 1, 5, 1)) : NULL;            /* [4, 1], stride 6 */
        wk_tensor *src = T_NEED(wk_arange(t_dev(), WK_I32, 100, 104, 1));
        wk_tensor *src2 = src ? T_NEED(wk_reshape(src, WK_SHAPE(4, 1))) : NULL;
        wk_tensor *other = b ? T_NEED(wk_permute(b, (const int[]){ 1, 0 })) : NULL;
        if (!col || !src2 || !other) return;
        T_OK(wk_copy_into(col, src2));
        for (int64_t r = 0; r < 4; r++) t_puti(WK_I32, h.p, r * 6 + 5, 100 + r);
        check_values("read through permute", other, &h);
    }
    if (t_case("views/shared_write/scatter_and_index_add")) {
        t_arr h;
        wk_tensor *b = base46(WK_F64, &h);
        wk_tensor *sq = b ? T_NEED(wk_narrow(b, 1, 1, 4)) : NULL;             /* [4, 4] window */
        int64_t idv[4] = { 3, 0, 2, 1 };
        wk_tensor *ids = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(1, 4), idv));
        wk_tensor *src = T_NEED(wk_full(t_dev(), WK_F64, WK_SHAPE(1, 4), 0.5));
        wk_tensor *ids1 = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(2), (int64_t[]){ 1, 1 }));
        wk_tensor *src1 = T_NEED(wk_ones(t_dev(), WK_F64, WK_SHAPE(2, 4)));
        wk_tensor *flat = b ? T_NEED(wk_flatten(b, 0, 1)) : NULL;
        wk_tensor *row0 = sq ? T_NEED(wk_narrow(sq, 0, 0, 1)) : NULL;          /* [1, 4] */
        if (!row0 || !ids || !src || !ids1 || !src1 || !flat) return;
        /* scatter_add along dim 1 of row 0: sq[0][ids[j]] += 0.5 */
        T_OK(wk_scatter_add(row0, ids, src, 1));
        for (int j = 0; j < 4; j++) t_put(WK_F64, h.p, 1 + idv[j], t_get(WK_F64, h.p, 1 + idv[j]) + 0.5);
        /* index_add along dim 0 twice into row 1 */
        T_OK(wk_index_add(sq, ids1, src1, 0));
        for (int c = 1; c < 5; c++) t_put(WK_F64, h.p, 6 + c, t_get(WK_F64, h.p, 6 + c) + 2);
        check_rowmajor("read through flatten", flat, WK_SHAPE(24), &h);
    }
    if (t_case("views/view_keeps_storage_alive")) {
        t_arr h = t_arr_new(WK_U8, WK_SHAPE(4, 6));
        for (int64_t i = 0; i < 24; i++) h.p[i] = (unsigned char)(i * 7);
        wk_tensor *b = wk_from_host(t_dev(), WK_U8, h.shape, h.p);   /* not owned by the case */
        wk_tensor *v = b ? T_NEED(wk_narrow(b, 0, 1, 2)) : NULL;
        wk_tensor *v2 = v ? T_NEED(wk_transpose(v, 0, 1)) : NULL;
        wk_release(b);                                               /* the views keep the storage */
        check_values("view after its base is released", v, &h);
        check_values("view of a view after its base is released", v2, &h);
    }
}

T_SUITE(views)
{
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) view_ops((wk_dtype)d);
    shared_writes();
}
