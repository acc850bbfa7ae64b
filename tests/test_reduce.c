/* test_reduce.c — reductions: sum, min, max, argmin, argmax (wk_reduce and
 * the wrappers) and mean, over one dim, negative dims, several dims, all
 * dims (NULL), with and without keepdim, on every dtype and over
 * contiguous, transposed, narrowed, broadcast, reversed, rank-8, size-1,
 * odd, large and empty inputs. The reference walks the input in row-major
 * order in double (sums of floats) or 64-bit wrapping integers, with the
 * NaN rules (NaN largest for max/argmax, smallest for min/argmin) and the
 * first index of the extremum.
 *
 * Case names: reduce/<op>/<dtype>/<layout>[/keepdim], reduce/mean/...
 */
#include <stdlib.h>
#include "test.h"

typedef struct rlay {
    const char *name;
    t_layout_kind kind;
    wk_shape shape;
    int ndims;          /* -1: dims = NULL (all) */
    int dims[4];
} rlay;

static const rlay rlays[] = {
    { "all/contiguous", LK_CONTIG, { 2, { 4, 33 } }, -1, { 0 } },
    { "dim0/contiguous", LK_CONTIG, { 2, { 4, 33 } }, 1, { 0 } },
    { "dim1/transposed", LK_TRANSPOSED, { 2, { 4, 33 } }, 1, { 1 } },
    { "dim0/transposed", LK_TRANSPOSED, { 2, { 33, 5 } }, 1, { 0 } },
    { "dimneg1/narrowed", LK_NARROWED, { 3, { 5, 7, 3 } }, 1, { -1 } },
    { "dims02/reversed", LK_REVERSED, { 3, { 3, 5, 7 } }, 2, { 0, 2 } },
    { "dims21/broadcast", LK_BROADCAST, { 3, { 4, 6, 5 } }, 2, { 2, 1 } },
    { "dim0/broadcast", LK_BROADCAST, { 2, { 6, 5 } }, 1, { 0 } },
    { "dims_all_listed", LK_CONTIG, { 3, { 3, 5, 7 } }, 3, { 0, 1, 2 } },
    { "dims35/rank8", LK_NARROWED, { 8, { 2, 1, 2, 3, 1, 2, 2, 3 } }, 2, { 3, 5 } },
    { "scalar", LK_CONTIG, { 0, { 0 } }, -1, { 0 } },
    { "size1", LK_CONTIG, { 1, { 1 } }, 1, { 0 } },
    { "odd7", LK_NARROWED, { 1, { 7 } }, 1, { 0 } },
    { "odd1023", LK_CONTIG, { 1, { 1023 } }, -1, { 0 } },
    { "big65537", LK_CONTIG, { 1, { 65537 } }, -1, { 0 } },
    { "big_rows", LK_TRANSPOSED, { 2, { 257, 263 } }, 1, { 1 } },
    { "big_cols", LK_CONTIG, { 2, { 257, 263 } }, 1, { 0 } },
    { "empty_kept", LK_CONTIG, { 2, { 0, 5 } }, 1, { 1 } },
    { "empty_all", LK_CONTIG, { 2, { 3, 0 } }, -1, { 0 } },      /* sum only */
    { "empty_reduced", LK_TRANSPOSED, { 2, { 3, 0 } }, 1, { 1 } }, /* sum only */
};
#define NRLAYS ((int)(sizeof rlays / sizeof rlays[0]))

static const char *op_name(wk_reduce_op op)
{
    static const char *n[] = { "sum", "min", "max", "argmin", "argmax" };
    return n[op];
}

/* mask of reduced dims and the output shape */
static uint32_t reduce_mask(const rlay *L, wk_shape *out, bool keepdim)
{
    uint32_t mask = 0;
    int r = L->shape.rank;
    if (L->ndims < 0) mask = r ? (1u << r) - 1 : 0;
    for (int i = 0; i < L->ndims; i++) mask |= 1u << (L->dims[i] < 0 ? L->dims[i] + r : L->dims[i]);
    out->rank = 0;
    for (int d = 0; d < r; d++) {
        if (mask >> d & 1) {
            if (keepdim) out->dims[out->rank++] = 1;
        } else {
            out->dims[out->rank++] = L->shape.dims[d];
        }
    }
    return mask;
}

/* For input element i: its output index and its index among the reduced
 * dims flattened row-major. */
static void split_index(wk_shape s, uint32_t mask, int64_t i, int64_t *oi, int64_t *ri)
{
    int64_t o = 0, r = 0, ostride = 1, rstride = 1;
    for (int d = s.rank - 1; d >= 0; d--) {
        int64_t c = i % s.dims[d];
        i /= s.dims[d];
        if (mask >> d & 1) { r += c * rstride; rstride *= s.dims[d]; }
        else { o += c * ostride; ostride *= s.dims[d]; }
    }
    *oi = o;
    *ri = r;
}

/* is a "better" than b for op (strictly, so the first extremum stays) */
static bool better(wk_reduce_op op, double a, double b)
{
    bool mx = op == WK_MAX || op == WK_ARGMAX;
    if (isnan(b)) return false;            /* NaN is the extremum of both kinds */
    if (isnan(a)) return true;
    return mx ? a > b : a < b;
}
static bool better_int(wk_reduce_op op, int64_t a, int64_t b)
{
    return op == WK_MAX || op == WK_ARGMAX ? a > b : a < b;
}

static wk_tensor *call_reduce(wk_reduce_op op, const wk_tensor *t, const rlay *L, bool keepdim, bool wrapper)
{
    const int *dims = L->ndims < 0 ? NULL : L->dims;
    int nd = L->ndims < 0 ? 0 : L->ndims;
    if (!wrapper) return wk_reduce(op, t, dims, nd, keepdim);
    switch (op) {
    case WK_SUM: return wk_sum(t, dims, nd, keepdim);
    case WK_MIN: return wk_min(t, dims, nd, keepdim);
    case WK_MAX: return wk_max(t, dims, nd, keepdim);
    case WK_ARGMIN: return wk_argmin(t, L->dims[0], keepdim);
    case WK_ARGMAX: return wk_argmax(t, L->dims[0], keepdim);
    default: return NULL;
    }
}

static void reduce_case(wk_reduce_op op, wk_dtype dt, const rlay *L, bool keepdim, bool wrapper)
{
    bool is_int = !t_is_float(dt), is_arg = op == WK_ARGMIN || op == WK_ARGMAX;
    t_gen g = op == WK_SUM ? (is_int ? T_GEN(G_FULL, 0, 0) : T_GEN(G_UNIFORM, -1, 1))
                           : ((L->shape.rank + (int)L->kind) % 2 ? T_GEN(G_FULL, 0, 0) : T_GEN(G_SMALLSET, 0, 0));
    t_arr x;
    wk_tensor *in = t_make(dt, L->kind, L->shape, g, &x);
    if (!in) return;
    t_cover(op_name(op), dt);
    wk_shape os;
    uint32_t mask = reduce_mask(L, &os, keepdim);
    wk_tensor *y = t_own(call_reduce(op, in, L, keepdim, wrapper));
    if (!y) { t_fail("%s returned NULL: %s", op_name(op), wk_last_error()); return; }
    int64_t no = t_numel(os);
    double *acc = t_mem((size_t)no * sizeof(double) + 8);
    uint64_t *iacc = t_mem((size_t)no * 8 + 8);
    int64_t *arg = t_mem((size_t)no * 8 + 8);
    bool *seen = t_mem((size_t)no + 1);
    for (int64_t i = 0; i < x.n; i++) {
        int64_t oi, ri;
        split_index(x.shape, mask, i, &oi, &ri);
        if (op == WK_SUM) {
            if (is_int) iacc[oi] += (uint64_t)t_geti(dt, x.p, i);
            else acc[oi] += t_get(dt, x.p, i);
            continue;
        }
        bool take = !seen[oi] || (is_int ? better_int(op, t_geti(dt, x.p, i), (int64_t)iacc[oi])
                                         : better(op, t_get(dt, x.p, i), acc[oi]));
        if (take) {
            if (is_int) iacc[oi] = (uint64_t)t_geti(dt, x.p, i);
            else acc[oi] = t_get(dt, x.p, i);
            arg[oi] = ri;
            seen[oi] = true;
        }
    }
    if (is_arg) {
        t_arr ref = t_arr_new(WK_U32, os);
        for (int64_t i = 0; i < no; i++) t_puti(WK_U32, ref.p, i, arg[i]);
        t_check_exact(op_name(op), y, os, WK_U32, ref.p);
    } else if (is_int || op != WK_SUM) {
        t_arr ref = t_arr_new(dt, os);
        for (int64_t i = 0; i < no; i++) {
            if (is_int) t_puti(dt, ref.p, i, (int64_t)iacc[i]);
            else t_put(dt, ref.p, i, acc[i]);
        }
        t_check_exact(op_name(op), y, os, dt, ref.p);
    } else {
        t_check_close(op_name(op), y, os, dt, acc, t_bound_acc(dt));
    }
}

static void mean_case(wk_dtype dt, const rlay *L, bool keepdim)
{
    t_arr x;
    wk_tensor *in = t_make(dt, L->kind, L->shape, T_GEN(G_UNIFORM, -1, 3), &x);
    if (!in) return;
    wk_shape os;
    uint32_t mask = reduce_mask(L, &os, keepdim);
    wk_tensor *y = t_own(wk_mean(in, L->ndims < 0 ? NULL : L->dims, L->ndims < 0 ? 0 : L->ndims, keepdim));
    if (!y) { t_fail("mean returned NULL: %s", wk_last_error()); return; }
    int64_t no = t_numel(os), count = no ? x.n / no : 0;
    double *acc = t_mem((size_t)no * sizeof(double) + 8);
    for (int64_t i = 0; i < x.n; i++) {
        int64_t oi, ri;
        split_index(x.shape, mask, i, &oi, &ri);
        acc[oi] += t_get(dt, x.p, i);
    }
    for (int64_t i = 0; i < no; i++) acc[i] = count ? acc[i] / (double)count : NAN;
    t_check_close("mean", y, os, dt, acc, t_bound_acc(dt));
}

T_SUITE(reduce)
{
    for (int o = 0; o < WK_REDUCE_COUNT; o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
            for (int l = 0; l < NRLAYS; l++) {
                const rlay *L = &rlays[l];
                bool empty_reduced = !strncmp(L->name, "empty_all", 9) || !strncmp(L->name, "empty_reduced", 13);
                if (empty_reduced && o != WK_SUM) continue;
                /* argmin/argmax over several dims go through wk_reduce only */
                for (int k = 0; k < 2; k++)
                    if (t_case("reduce/%s/%s/%s%s", op_name((wk_reduce_op)o), t_dt_name((wk_dtype)d), L->name,
                               k ? "/keepdim" : ""))
                        reduce_case((wk_reduce_op)o, (wk_dtype)d, L, k, false);
                if (L->ndims == 1 && l < 3 &&
                    t_case("reduce/%s/%s/%s/wrapper", op_name((wk_reduce_op)o), t_dt_name((wk_dtype)d), L->name))
                    reduce_case((wk_reduce_op)o, (wk_dtype)d, L, l % 2, true);
            }
    static const wk_dtype floats[] = { WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
    for (int d = 0; d < 5; d++)
        for (int l = 0; l < NRLAYS; l++) {
            if (!strncmp(rlays[l].name, "empty", 5)) continue;
            for (int k = 0; k < 2; k++)
                if (t_case("reduce/mean/%s/%s%s", t_dt_name(floats[d]), rlays[l].name, k ? "/keepdim" : ""))
                    mean_case(floats[d], &rlays[l], k);
        }
}
