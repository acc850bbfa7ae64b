/* test_sort.c — arg_sort, sort and topk (docs/conv.md) on every dense
 * dtype against a reference written here: a comparison sort of
 * (value, position) pairs, which is stable by construction, with NaN
 * above +inf and -0 equal to +0. Because a stable order is unique, the
 * indices must match exactly. Rows of 1, 2, 7, 33, 1023, 4097 and (f32,
 * i32) 10^6 elements (the parallel radix path), 10^5 rows of 32 (the
 * short-row path); values with many ties (a small set), the integer
 * extremes, and for floats +-inf, NaN and -0; inputs contiguous, with a
 * last stride != 1 (transposed) and narrowed, and rank-3 views whose
 * leading dims cannot merge (reversed), rank 0 and empty rows. sort's
 * values are x at the indices; topk gives the first k of the stable
 * order, smallest or largest. The sort/torch/ cases check the same ops
 * (and the reference) against PyTorch's torch.sort(stable=True) and
 * torch.topk in data/conv_ref.h (tools/gen_conv_ref.py). sort/errors/:
 * bad arguments.
 *
 * Case names: sort/<op>/<dtype>/<case>.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "data/conv_ref.h"

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the reference ------------------------------------------------------- */

typedef struct sitem {
    double f;         /* float value (NaN allowed)  */
    int64_t i;        /* integer value              */
    int64_t pos;
} sitem;

static bool s_isint;
static int s_desc;

/* -1, 0, 1: a against b in the wanted order, NaN largest, -0 == +0 */
static int s_cmp_val(const sitem *a, const sitem *b)
{
    int c;
    if (s_isint) c = a->i < b->i ? -1 : a->i > b->i;
    else {
        bool na = isnan(a->f), nb = isnan(b->f);
        c = na || nb ? (na && nb ? 0 : na ? 1 : -1) : a->f < b->f ? -1 : a->f > b->f;
    }
    return s_desc ? -c : c;
}
static int s_cmp(const void *pa, const void *pb)
{
    const sitem *a = pa, *b = pb;
    int c = s_cmp_val(a, b);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;   /* stable */
}

/* the stable order of each row of vals [rows, n] (row-major) */
static int64_t *ref_order(const t_arr *vals, int64_t rows, int64_t n, bool desc)
{
    int64_t *ord = t_mem((size_t)(rows * n) * 8 + 8);
    sitem *it = malloc((size_t)n * sizeof *it + 8);
    if (!it) return ord;
    s_isint = !wk_dtype_is_float(vals->dt);
    s_desc = desc;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < n; j++) {
            it[j].f = t_get(vals->dt, vals->p, r * n + j);
            it[j].i = s_isint ? t_geti(vals->dt, vals->p, r * n + j) : 0;
            it[j].pos = j;
        }
        qsort(it, (size_t)n, sizeof *it, s_cmp);
        for (int64_t j = 0; j < n; j++) ord[r * n + j] = it[j].pos;
    }
    free(it);
    return ord;
}

/* ---- checks -------------------------------------------------------------------- */

/* got (u32 [.., k]) must equal the first k of each row of ord [rows, n] */
static bool check_idx(const char *what, const wk_tensor *got, const int64_t *ord, int64_t rows, int64_t n, int64_t k)
{
    bool ok;
    t_arr g = t_read(got, &ok);
    if (!ok) return false;
    if (g.dt != WK_U32 || g.n != rows * k) {
        t_fail("%s: %s of %lld elements, expected u32 of %lld", what, t_dt_name(g.dt), (long long)g.n,
               (long long)(rows * k));
        return false;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++)
            if ((int64_t)t_geti(WK_U32, g.p, r * k + j) != ord[r * n + j]) {
                t_fail("%s: row %lld position %lld: index %lld, expected %lld", what, (long long)r, (long long)j,
                       (long long)t_geti(WK_U32, g.p, r * k + j), (long long)ord[r * n + j]);
                return false;
            }
    return true;
}

/* got (x's dtype, [.., k]) must hold x's values at the first k of ord, bit for bit */
static void check_vals(const char *what, const wk_tensor *got, const t_arr *x, const int64_t *ord, int64_t rows,
                       int64_t n, int64_t k)
{
    t_arr want = t_arr_new(x->dt, WK_SHAPE(rows * k));
    size_t sz = t_size(x->dt);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++)
            memcpy(want.p + (size_t)(r * k + j) * sz, x->p + (size_t)(r * n + ord[r * n + j]) * sz, sz);
    wk_shape s = wk_tensor_shape(got);
    t_check_exact(what, got, s, x->dt, want.p);
}

/* ---- cases ------------------------------------------------------------------------ */

static const wk_dtype all_dts[10] = { WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };

/* values of a [rows, n] row-major array: ties, extremes, specials */
static void fill(t_arr *a, int kind)
{
    bool fl = wk_dtype_is_float(a->dt);
    t_fill(a->dt, a->p, a->n, kind == 0 ? T_GEN(G_SMALLSET, -3, 3) : kind == 1 ? T_GEN(G_FULL, 0, 0)
                                                                               : T_GEN(G_UNIFORM, -100, 100));
    if (fl && kind != 2) {
        static const double sp[5] = { NAN, INFINITY, -INFINITY, -0.0, 0.0 };
        for (int64_t i = 0; i < a->n; i += 5) {
            int64_t j = (int64_t)t_rng_int(t_r(), 0, a->n - 1);
            t_put(a->dt, a->p, j, sp[(i / 5) % 5]);
        }
    }
}

static void sort_case(wk_dtype dt, int64_t rows, int64_t n, int kind, t_layout_kind lay, int rank3)
{
    wk_shape s = rank3 ? WK_SHAPE(rows / rank3, rank3, n) : WK_SHAPE(rows, n);
    t_arr v = t_arr_new(dt, s);
    fill(&v, kind);
    wk_tensor *x = t_make_from(&v, lay);
    if (!x) return;
    /* the logical values, row-major */
    for (int desc = 0; desc < 2; desc++) {
        int64_t *ord = ref_order(&v, rows, n, desc);
        wk_tensor *i = T_NEED(wk_arg_sort(x, desc));
        if (!i || !check_idx(desc ? "arg_sort descending" : "arg_sort", i, ord, rows, n, n)) continue;
        wk_tensor *si = NULL;
        wk_tensor *sv = T_NEED(wk_sort(x, desc, &si));
        t_own(si);
        if (sv) check_vals("sort values", sv, &v, ord, rows, n, n);
        if (si) check_idx("sort indices", si, ord, rows, n, n);
        int64_t k = n < 5 ? n : 5;
        wk_tensor *ti = NULL;
        wk_tensor *tv = T_NEED(wk_topk(x, k, desc, &ti));
        t_own(ti);
        if (tv) check_vals("topk values", tv, &v, ord, rows, n, k);
        if (ti) check_idx("topk indices", ti, ord, rows, n, k);
    }
}

static void torch_cases(void)
{
    for (int d = 0; d < 2; d++) {
        wk_dtype dt = d ? WK_F64 : WK_F32;
        if (!t_case("sort/torch/%s/ties_nan_inf_zero", t_dt_name(dt))) continue;
        t_cover("arg_sort", dt);
        t_arr a = t_arr_new(dt, WK_SHAPE(SREF_ROWS, SREF_N));
        for (int64_t i = 0; i < a.n; i++) t_put(dt, a.p, i, sref_x[i]);
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
        if (!x) continue;
        for (int desc = 0; desc < 2; desc++) {
            const double *wi = desc ? sref_i1 : sref_i0, *wv = desc ? sref_v1 : sref_v0;
            int64_t *ord = ref_order(&a, SREF_ROWS, SREF_N, desc);
            double *od = t_mem(sizeof(double) * SREF_ROWS * SREF_N);
            for (int64_t i = 0; i < SREF_ROWS * SREF_N; i++) od[i] = (double)ord[i];
            t_cmp_values("reference order against torch.sort", WK_F64, od, wi, SREF_ROWS * SREF_N, 0);
            wk_tensor *si = NULL, *sv = T_NEED(wk_sort(x, desc, &si));
            t_own(si);
            if (sv) t_check_close("sort values against torch", sv, a.shape, dt, wv, 0);
            if (si) t_check_close("sort indices against torch", si, a.shape, WK_U32, wi, 0);
            wk_tensor *tv = T_NEED(wk_topk(x, 5, desc, NULL));
            if (tv) t_check_close("topk values against torch", tv, WK_SHAPE(SREF_ROWS, 5), dt,
                                  desc ? sref_topk_v1 : sref_topk_v0, 0);
        }
    }
    if (t_case("sort/torch/i32/ties")) {
        t_cover("arg_sort", WK_I32);
        t_arr a = t_arr_new(WK_I32, WK_SHAPE(SREF_IROWS, SREF_IN));
        for (int64_t i = 0; i < a.n; i++) t_puti(WK_I32, a.p, i, (int64_t)sref_ix[i]);
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_I32, a.shape, a.p));
        for (int desc = 0; x && desc < 2; desc++) {
            wk_tensor *i = T_NEED(wk_arg_sort(x, desc));
            if (i) t_check_close("arg_sort against torch", i, a.shape, WK_U32, desc ? sref_ii1 : sref_ii0, 0);
        }
    }
}

#define ANY WK_STATUS_COUNT
#define NUL(expr, want, w1, w2) t_check_null(#expr, (expr), (want), (w1), (w2), NULL)

static void errors(void)
{
    if (!t_case("sort/errors/all")) return;
    wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3, 4)));
    wk_tensor *q = T_NEED(wk_empty(t_dev(), WK_Q8_0, WK_SHAPE(1, 32)));
    if (!x || !q) return;
    wk_tensor *idx = (wk_tensor *)1;
    NUL(wk_arg_sort(NULL, false), WK_ERR_ARGUMENT, "arg_sort", "NULL");
    NUL(wk_sort(NULL, false, &idx), WK_ERR_ARGUMENT, "sort", "NULL");
    if (idx) t_fail("sort left *indices set on error");
    NUL(wk_topk(x, 5, true, NULL), WK_ERR_ARGUMENT, "k must be in [0, 4]", "got 5");
    NUL(wk_topk(x, -1, true, NULL), WK_ERR_ARGUMENT, "topk", "-1");
    NUL(wk_arg_sort(q, false), ANY, "arg_sort", "q8_0");
}

T_SUITE(sort)
{
    static const int64_t lens[6] = { 1, 2, 7, 33, 1023, 4097 };
    static const t_layout_kind lays[3] = { LK_CONTIG, LK_TRANSPOSED, LK_NARROWED };
    static const char *const lay_names[3] = { "contig", "transposed", "narrowed" };
    for (int d = 0; d < N_(all_dts); d++) {
        const wk_dtype dt = all_dts[d];
        const char *dn = t_dt_name(dt);
        for (int l = 0; l < N_(lens); l++)
            for (int kind = 0; kind < 3; kind++)
                for (int lay = 0; lay < 3; lay++) {
                    if (lens[l] > 100 && lay != (kind % 3)) continue;   /* long rows: one layout per kind */
                    int64_t rows = lens[l] > 1000 ? 2 : 5;
                    if (t_case("sort/arg_sort/%s/n%lld/%s/%s", dn, (long long)lens[l],
                               kind == 0 ? "ties" : kind == 1 ? "full" : "uniform", lay_names[lay])) {
                        t_cover("arg_sort", dt);
                        sort_case(dt, rows, lens[l], kind, lays[lay], 0);
                    }
                }
        if (t_case("sort/arg_sort/%s/rank3_reversed", dn)) {
            t_cover("arg_sort", dt);
            sort_case(dt, 6, 9, 0, LK_REVERSED, 3);
        }
        if (t_case("sort/arg_sort/%s/rank0_empty", dn)) {
            t_cover("arg_sort", dt);
            wk_tensor *s = T_NEED(wk_full(t_dev(), dt, WK_SCALAR, 3));
            wk_tensor *e = T_NEED(wk_zeros(t_dev(), dt, WK_SHAPE(3, 0)));
            wk_tensor *e2 = T_NEED(wk_zeros(t_dev(), dt, WK_SHAPE(0, 4)));
            if (s && e && e2) {
                wk_tensor *si = NULL, *sv = T_NEED(wk_sort(s, true, &si));
                t_own(si);
                const double zero = 0, three = 3;
                if (sv) t_check_close("sort of a scalar", sv, WK_SCALAR, dt, &three, 0);
                if (si) t_check_close("its index", si, WK_SCALAR, WK_U32, &zero, 0);
                wk_tensor *ie = T_NEED(wk_arg_sort(e, false)), *ie2 = T_NEED(wk_arg_sort(e2, false));
                if (ie && !t_shape_eq(wk_tensor_shape(ie), WK_SHAPE(3, 0))) t_fail("arg_sort [3, 0]: wrong shape");
                if (ie2 && !t_shape_eq(wk_tensor_shape(ie2), WK_SHAPE(0, 4))) t_fail("arg_sort [0, 4]: wrong shape");
                wk_tensor *t0 = T_NEED(wk_topk(e2, 0, true, NULL));
                if (t0 && !t_shape_eq(wk_tensor_shape(t0), WK_SHAPE(0, 0))) t_fail("topk k = 0: wrong shape");
            }
        }
    }
    if (t_case("sort/arg_sort/f32/n1000000")) sort_case(WK_F32, 1, 1000000, 1, LK_CONTIG, 0);
    if (t_case("sort/arg_sort/i32/n1000000_desc_transposed")) sort_case(WK_I32, 2, 1000000, 2, LK_TRANSPOSED, 0);
    if (t_case("sort/arg_sort/f16/rows100000x32")) sort_case(WK_F16, 100000, 32, 0, LK_CONTIG, 0);
    torch_cases();
    errors();
}
