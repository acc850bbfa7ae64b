/* test_index.c — index_select, gather, scatter_set, scatter_add and
 * index_add with u8, u32 and i64 ids, on every value dtype, over
 * contiguous, transposed, narrowed, reversed and broadcast sources (a
 * broadcast destination becomes a narrowed one: overlapping destinations
 * are refused, see test_semantics.c),
 * strided id views, destinations that are views into a poisoned storage
 * (elements outside the view must stay poisoned), negative dims, empty id
 * lists, size 1, odd and large sizes. Out-of-range ids (the dim size, and
 * a negative i64) must fail with WK_ERR_INDEX, name the op, the id and the
 * limit, and leave the destination unchanged.
 *
 * Case names: index/<op>/<dtype>/<ids dtype>/<case>.
 */
#include <stdlib.h>
#include "test.h"

static const wk_dtype id_dts[] = { WK_U8, WK_U32, WK_I64 };

typedef struct icase {
    const char *name;
    t_layout_kind kind;   /* of the source (select/gather) or destination */
    wk_shape shape;       /* its shape                                     */
    int dim;
    int64_t nsel;         /* ids length (select/index_add) or ids' size on dim */
    t_layout_kind ids_kind, src_kind;
} icase;

static const icase icases[] = {
    { "dim0/contiguous", LK_CONTIG, { 2, { 6, 5 } }, 0, 9, LK_CONTIG, LK_CONTIG },
    { "dim1/transposed", LK_TRANSPOSED, { 2, { 5, 7 } }, 1, 4, LK_CONTIG, LK_TRANSPOSED },
    { "dimneg1/narrowed", LK_NARROWED, { 3, { 5, 7, 3 } }, -1, 5, LK_NARROWED, LK_NARROWED },
    { "dim1/reversed3d", LK_REVERSED, { 3, { 3, 5, 7 } }, 1, 8, LK_TRANSPOSED, LK_CONTIG },
    { "dim0/broadcast", LK_BROADCAST, { 2, { 4, 33 } }, 0, 6, LK_CONTIG, LK_BROADCAST },
    { "empty_ids", LK_CONTIG, { 2, { 6, 5 } }, 0, 0, LK_CONTIG, LK_CONTIG },
    { "empty_other_dim", LK_CONTIG, { 2, { 6, 0 } }, 0, 3, LK_CONTIG, LK_CONTIG },
    { "size1", LK_CONTIG, { 1, { 1 } }, 0, 1, LK_CONTIG, LK_CONTIG },
    { "odd1023", LK_CONTIG, { 1, { 1023 } }, 0, 33, LK_NARROWED, LK_CONTIG },
    { "big", LK_TRANSPOSED, { 2, { 263, 250 } }, 0, 257, LK_CONTIG, LK_CONTIG },
};
#define NICASES ((int)(sizeof icases / sizeof icases[0]))

static void unravel(wk_shape s, int64_t i, int64_t *c)
{
    for (int d = s.rank - 1; d >= 0; d--) { c[d] = i % s.dims[d]; i /= s.dims[d]; }
}
static int64_t ravel(wk_shape s, const int64_t *c)
{
    int64_t i = 0;
    for (int d = 0; d < s.rank; d++) i = i * s.dims[d] + c[d];
    return i;
}

/* ids of dtype idt with `n` entries in [0, limit) (u8 ids stay < 256) */
static int64_t id_limit(wk_dtype idt, int64_t limit) { return idt == WK_U8 && limit > 256 ? 256 : limit; }

static wk_tensor *make_ids(wk_dtype idt, wk_shape s, const int64_t *vals, t_layout_kind kind)
{
    t_arr a = t_arr_new(idt, s);
    for (int64_t i = 0; i < a.n; i++) t_puti(idt, a.p, i, vals[i]);
    return t_make_from(&a, kind);
}

static t_gen value_gen(wk_dtype dt, bool adds)
{
    if (!t_is_float(dt)) return T_GEN(G_FULL, 0, 0);
    return adds ? T_GEN(G_SMALLSET, 0, 0) : T_GEN(G_UNIFORM, -100, 100);
}

/* ---- index_select and gather ------------------------------------------------ */

static void select_case(wk_dtype dt, wk_dtype idt, const icase *C, bool gather)
{
    const char *op = gather ? "gather" : "index_select";
    t_arr vs;
    wk_tensor *src = t_make(dt, C->kind, C->shape, value_gen(dt, false), &vs);
    if (!src) return;
    int dim = C->dim < 0 ? C->dim + C->shape.rank : C->dim;
    int64_t lim = id_limit(idt, C->shape.dims[dim]);
    wk_shape ids_shape, os;
    if (gather) { ids_shape = C->shape; ids_shape.dims[dim] = C->nsel; }
    else { ids_shape.rank = 1; ids_shape.dims[0] = C->nsel; }
    int64_t nids = t_numel(ids_shape);
    int64_t *ids = t_mem((size_t)nids * 8 + 8);
    for (int64_t i = 0; i < nids; i++) ids[i] = lim ? t_rng_int(t_r(), 0, lim - 1) : 0;
    if (lim == 0 && nids) { t_fail("bad test case"); return; }
    wk_tensor *idt_t = make_ids(idt, ids_shape, ids, C->ids_kind == LK_NARROWED && !gather ? LK_TRANSPOSED : C->ids_kind);
    if (!idt_t) return;
    t_cover(op, dt);
    wk_tensor *y = t_own(gather ? wk_gather(src, idt_t, C->dim) : wk_index_select(src, idt_t, C->dim));
    if (!y) { t_fail("%s returned NULL: %s", op, wk_last_error()); return; }
    os = C->shape;
    if (gather) os = ids_shape;
    else os.dims[dim] = C->nsel;
    t_arr ref = t_arr_new(dt, os);
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < ref.n; i++) {
        unravel(os, i, c);
        int64_t id = gather ? ids[i] : ids[c[dim]];
        c[dim] = id;
        t_put_bits(dt, ref.p, i, t_bits(dt, vs.p, ravel(C->shape, c)));
    }
    t_check_exact(op, y, os, dt, ref.p);
}

/* ---- scatter_set, scatter_add, index_add ------------------------------------- */

typedef enum { SC_SET, SC_ADD, IDX_ADD } inplace_kind;
static const char *inplace_name(inplace_kind k)
{
    return k == SC_SET ? "scatter_set" : k == SC_ADD ? "scatter_add" : "index_add";
}

static void inplace_case(inplace_kind kind, wk_dtype dt, wk_dtype idt, const icase *C)
{
    const char *op = inplace_name(kind);
    int dim = C->dim < 0 ? C->dim + C->shape.rank : C->dim;
    int64_t dsize = C->shape.dims[dim], lim = id_limit(idt, dsize);
    /* scatter: ids/src have dst's shape with at most dsize entries on dim
     * (scatter_set needs distinct ids per line); index_add: nsel ids */
    int64_t nsel = kind == IDX_ADD ? C->nsel : (C->nsel < lim ? C->nsel : lim);
    wk_shape ss = C->shape, ids_shape = C->shape;
    ss.dims[dim] = nsel;
    if (kind == IDX_ADD) { ids_shape.rank = 1; ids_shape.dims[0] = nsel; }
    else ids_shape = ss;
    t_arr init = t_arr_new(dt, C->shape);
    t_fill(dt, init.p, init.n, value_gen(dt, kind != SC_SET));
    t_dst d;
    if (!t_make_dst(&init, C->kind == LK_BROADCAST ? LK_NARROWED : C->kind, &d)) return;
    t_arr vs;
    wk_tensor *src = t_make(dt, C->src_kind, ss, value_gen(dt, kind != SC_SET), &vs);
    if (!src) return;
    int64_t nids = t_numel(ids_shape);
    int64_t *ids = t_mem((size_t)nids * 8 + 8);
    if (kind == SC_SET) {
        /* per line along dim: the first nsel entries of a permutation of [0, lim) */
        int64_t *perm = t_mem((size_t)lim * 8 + 8), c[WK_MAX_RANK];
        for (int64_t i = 0; i < nids; i++) {
            unravel(ids_shape, i, c);
            if (c[dim] == 0) {
                for (int64_t k = 0; k < lim; k++) perm[k] = k;
                for (int64_t k = lim - 1; k > 0; k--) {
                    int64_t j = t_rng_int(t_r(), 0, k), tmp = perm[k];
                    perm[k] = perm[j];
                    perm[j] = tmp;
                }
            }
            ids[i] = perm[c[dim]];
        }
    } else {
        for (int64_t i = 0; i < nids; i++) ids[i] = t_rng_int(t_r(), 0, lim - 1);
    }
    wk_tensor *idt_t = make_ids(idt, ids_shape, ids, kind == IDX_ADD && C->ids_kind == LK_NARROWED ? LK_TRANSPOSED : C->ids_kind);
    if (!idt_t) return;
    t_cover(op, dt);
    wk_status st = kind == SC_SET ? wk_scatter_set(d.view, idt_t, src, C->dim)
                 : kind == SC_ADD ? wk_scatter_add(d.view, idt_t, src, C->dim)
                                  : wk_index_add(d.view, idt_t, src, C->dim);
    if (st != WK_OK) { t_fail("%s returned %s: %s", op, wk_status_name(st), wk_last_error()); return; }
    /* expected storage: exact values in double (floats) or wrapped ints */
    t_arr expect = t_arr_new(dt, d.storage.shape);
    memcpy(expect.p, d.storage.p, (size_t)expect.n * t_size(dt));
    double *acc = t_mem((size_t)init.n * sizeof(double) + 8);
    uint64_t *iacc = t_mem((size_t)init.n * 8 + 8);
    for (int64_t i = 0; i < init.n; i++) {
        acc[i] = t_get(dt, init.p, i);
        iacc[i] = (uint64_t)t_geti(dt, init.p, i);
    }
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < vs.n; i++) {
        unravel(ss, i, c);
        c[dim] = kind == IDX_ADD ? ids[c[dim]] : ids[i];
        int64_t t = ravel(C->shape, c);
        if (kind == SC_SET) { acc[t] = t_get(dt, vs.p, i); iacc[t] = (uint64_t)t_geti(dt, vs.p, i); }
        else { acc[t] += t_get(dt, vs.p, i); iacc[t] += (uint64_t)t_geti(dt, vs.p, i); }
    }
    for (int64_t i = 0; i < init.n; i++) {
        if (t_is_float(dt)) t_put(dt, expect.p, d.off[i], acc[i]);
        else t_puti(dt, expect.p, d.off[i], (int64_t)iacc[i]);
    }
    t_check_dst(op, &d, &expect, kind == SC_SET || !t_is_float(dt) ? 0 : t_bound_acc(dt));
}

/* ---- out-of-range ids ------------------------------------------------------------ */

static void out_of_range_case(const char *op, wk_dtype idt, int64_t bad)
{
    t_arr init = t_arr_new(WK_F32, WK_SHAPE(4, 3));
    t_fill(WK_F32, init.p, init.n, T_GEN(G_UNIFORM, -1, 1));
    t_dst d;
    if (!t_make_dst(&init, LK_TRANSPOSED, &d)) return;
    bool one_d = !strcmp(op, "index_select") || !strcmp(op, "index_add");
    wk_shape ids_shape = one_d ? WK_SHAPE(3) : WK_SHAPE(3, 3);
    int64_t ids[9] = { 0, 1, 2, 3, 0, 1, 2, 3, 0 };
    ids[one_d ? 2 : 8] = bad;                  /* the bad id comes last */
    if (!strcmp(op, "scatter_set")) { ids[3] = 1; ids[6] = 2; ids[4] = 3; ids[7] = 0; ids[5] = 2; }
    wk_tensor *it = make_ids(idt, ids_shape, ids, LK_CONTIG);
    wk_tensor *src = T_NEED(wk_ones(t_dev(), WK_F32, WK_SHAPE(3, 3)));
    if (!it || !src) return;
    t_cover(op, WK_F32);
    wk_status st;
    if (!strcmp(op, "index_select")) { wk_tensor *y = t_own(wk_index_select(d.view, it, 0)); st = y ? WK_OK : wk_last_status(); }
    else if (!strcmp(op, "gather")) { wk_tensor *y = t_own(wk_gather(d.view, it, 0)); st = y ? WK_OK : wk_last_status(); }
    else if (!strcmp(op, "scatter_set")) st = wk_scatter_set(d.view, it, src, 0);
    else if (!strcmp(op, "scatter_add")) st = wk_scatter_add(d.view, it, src, 0);
    else st = wk_index_add(d.view, it, src, 0);
    char val[32], lim[32];
    snprintf(val, sizeof val, "%lld", (long long)bad);
    snprintf(lim, sizeof lim, "%d", 4);
    t_check_error(op, WK_ERR_INDEX, st, op, val, lim, (const char *)NULL);
    t_check_dst(op, &d, &d.storage, 0);      /* nothing was written */
}

T_SUITE(index)
{
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int k = 0; k < 3; k++)
            for (int c = 0; c < NICASES; c++) {
                wk_dtype dt = (wk_dtype)d, idt = id_dts[k];
                const icase *C = &icases[c];
                if (t_case("index/index_select/%s/%s/%s", t_dt_name(dt), t_dt_name(idt), C->name)) select_case(dt, idt, C, false);
                if (t_case("index/gather/%s/%s/%s", t_dt_name(dt), t_dt_name(idt), C->name)) select_case(dt, idt, C, true);
                for (int m = 0; m < 3; m++) {
                    if (t_case("index/%s/%s/%s/%s", inplace_name((inplace_kind)m), t_dt_name(dt), t_dt_name(idt), C->name))
                        inplace_case((inplace_kind)m, dt, idt, C);
                }
            }
    static const char *ops[] = { "index_select", "gather", "scatter_set", "scatter_add", "index_add" };
    for (int o = 0; o < 5; o++)
        for (int k = 0; k < 3; k++) {
            if (t_case("index/%s/f32/%s/out_of_range", ops[o], t_dt_name(id_dts[k]))) out_of_range_case(ops[o], id_dts[k], 7);
            if (t_case("index/%s/f32/%s/id_equals_size", ops[o], t_dt_name(id_dts[k]))) out_of_range_case(ops[o], id_dts[k], 4);
            if (id_dts[k] != WK_U8 && t_case("index/%s/f32/%s/out_of_range_huge", ops[o], t_dt_name(id_dts[k])))
                out_of_range_case(ops[o], id_dts[k], 4000000000LL);
            if (id_dts[k] == WK_I64 && t_case("index/%s/f32/i64/negative_id", ops[o])) out_of_range_case(ops[o], WK_I64, -1);
        }
}
