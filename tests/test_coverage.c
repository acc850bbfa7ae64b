/* test_coverage.c — the (op, dtype) coverage rule and listing, and the
 * guard that every pair wk_supports claims runs (coverage/runs, below).
 *
 * tests/required_ops.txt lists every pair that must be supported. The rule:
 * the list holds at least REQUIRED_PAIRS_MIN pairs (so it cannot shrink
 * quietly), every name is an op of wk_op_names(), every pair is supported
 * on cpu (wk_supports) and some case that ran this time covered it
 * (t_cover). The listing shows, per device (cpu and every cuda/rocm device
 * found), one row per op and one column per dtype:
 *   T  implemented and tested (by a case of this run)
 *   I  implemented, untested here
 *   !  required but unsupported or untested (a failure)
 *   -  not required and not supported
 */
#include <stdlib.h>
#include <string.h>
#include "test.h"

#define REQUIRED_PAIRS_MIN 554

typedef struct pair { char op[32]; int dt; } pair;

static int load_required(const char *path, pair **out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, cap = 0;
    pair *ps = NULL;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char op[64], dts[64];
        if (line[0] == '#' || sscanf(line, "%63s %63s", op, dts) != 2) continue;
        wk_dtype dt;
        if (!wk_dtype_from_name(dts, &dt)) {
            printf("coverage: %s: unknown dtype \"%s\"\n", path, dts);
            dt = WK_DTYPE_COUNT;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 512;
            ps = realloc(ps, (size_t)cap * sizeof *ps);
        }
        snprintf(ps[n].op, sizeof ps[n].op, "%.31s", op);
        ps[n].dt = (int)dt;
        n++;
    }
    fclose(f);
    *out = ps;
    return n;
}

static bool tested(const char *op, int dt)
{
    for (int i = 0; i < t_cov_count(); i++) {
        const t_cov_entry *e = t_cov_get(i);
        if (e->dt == dt && !strcmp(e->op, op)) return true;
    }
    return false;
}

static bool required(const pair *ps, int n, const char *op, int dt)
{
    for (int i = 0; i < n; i++)
        if (ps[i].dt == dt && !strcmp(ps[i].op, op)) return true;
    return false;
}

static bool op_known(const char *op)
{
    for (const char *const *p = wk_op_names(); p && *p; p++)
        if (!strcmp(*p, op)) return true;
    return false;
}

static void listing(wk_device *dev, bool test_here, const pair *ps, int n)
{
    printf("\ncoverage on %s (T tested, I implemented/untested, ! required but missing, - neither)\n", wk_device_name(dev));
    int counts[4] = { 0 };
    /* two tables: the dense dtypes, then the block-quantized ones */
    for (int part = 0; part < 2; part++) {
        const int d0 = part ? WK_DENSE_DTYPE_COUNT : 0, d1 = part ? WK_DTYPE_COUNT : WK_DENSE_DTYPE_COUNT;
        printf("%s%-20s", part ? "\n" : "", "op");
        for (int d = d0; d < d1; d++) printf("%7s", wk_dtype_name((wk_dtype)d));
        printf("\n");
        for (const char *const *p = wk_op_names(); p && *p; p++) {
            char row[WK_DTYPE_COUNT];
            bool any = false;
            for (int d = d0; d < d1; d++) {
                bool sup = wk_supports(dev, *p, (wk_dtype)d), req = required(ps, n, *p, d);
                bool tst = test_here && tested(*p, d);
                char c = sup ? (tst ? 'T' : 'I') : '-';
                if (req && (!sup || (test_here && !tst))) c = '!';
                row[d] = c;
                counts[c == 'T' ? 0 : c == 'I' ? 1 : c == '!' ? 2 : 3]++;
                if (c != '-') any = true;
            }
            if (!any) continue;
            printf("%-20s", *p);
            for (int d = d0; d < d1; d++) printf("%7c", row[d]);
            printf("\n");
        }
    }
    printf("%s: %d tested, %d implemented untested, %d required missing\n", wk_device_name(dev), counts[0], counts[1],
           counts[2]);
}

/* listing() of one GPU device (t_each_gpu) */
struct gpu_listing {
    const pair *ps;
    int n;
};
static void list_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)name;
    const struct gpu_listing *gl = arg;
    listing(dev, false, gl->ps, gl->n);
}

static const char *find_required(const char *given)
{
    static const char *candidates[] = { "tests/required_ops.txt", "../tests/required_ops.txt", "required_ops.txt" };
    if (given) return given;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        FILE *f = fopen(candidates[i], "r");
        if (f) { fclose(f); return candidates[i]; }
    }
    return candidates[0];
}

bool t_coverage_check(bool print_listing, const char *required_path);
bool t_coverage_check(bool print_listing, const char *required_path)
{
    const char *path = find_required(required_path);
    pair *ps = NULL;
    int n = load_required(path, &ps);
    bool ok = true;
    if (n < 0) {
        printf("FAIL coverage: cannot read %s (run from the repository root or pass --required FILE)\n", path);
        return false;
    }
    if (n < REQUIRED_PAIRS_MIN) {
        printf("FAIL coverage: %s lists %d pairs, fewer than the %d required\n", path, n, REQUIRED_PAIRS_MIN);
        ok = false;
    }
    int missing = 0;
    for (int i = 0; i < n; i++) {
        const char *why = NULL;
        if (ps[i].dt >= WK_DTYPE_COUNT) why = "bad dtype";
        else if (!op_known(ps[i].op)) why = "not an op of wk_op_names()";
        else if (!wk_supports(t_dev(), ps[i].op, (wk_dtype)ps[i].dt)) why = "unsupported on cpu";
        else if (!tested(ps[i].op, ps[i].dt)) why = "no test case ran";
        if (why) {
            if (missing++ < 40)
                printf("FAIL coverage: %s %s: %s\n", ps[i].op, ps[i].dt < WK_DTYPE_COUNT ? wk_dtype_name((wk_dtype)ps[i].dt) : "?",
                       why);
            ok = false;
        }
    }
    if (missing > 40) printf("FAIL coverage: ... %d missing pairs in all\n", missing);
    if (print_listing) {
        listing(t_dev(), true, ps, n);
        struct gpu_listing gl = { ps, n };
        t_each_gpu(list_gpu, &gl);
        printf("\nrequired pairs: %d listed (minimum %d), %d missing\n", n, REQUIRED_PAIRS_MIN, missing);
    }
    free(ps);
    return ok;
}

/* ---- every supported pair runs ------------------------------------------------
 *
 * coverage/runs/<op>/<dtype>: for every op of wk_op_names() and every dense
 * dtype that wk_supports(cpu, op, dtype) claims, the op's public entry
 * (wk_unary, wk_affine, wk_powf, wk_elu, wk_binary, wk_cmp, wk_where,
 * wk_reduce, wk_matmul, the index ops, wk_to_dtype for copy, wk_copy2d,
 * wk_const_set, wk_rand_*, the NN ops (paged attention included) and the
 * fused products on one row, which is where they are ops of their own) runs on a small valid input and succeeds with the
 * expected shape and dtype, so a pair listed as supported whose kernel is
 * missing fails here by name. A supported op this file has no call for
 * fails too (add its call to run_op). coverage/refuses/<op>/<dtype>: the
 * same call for a dense dtype the op does not support is an error, never a
 * silent success. Values are checked by the op's own suite. */

#define RUN_UNMAPPED 2   /* run_op: this file has no call for the op */

static int unary_of(const char *op)
{
    for (int i = 0; i < WK_UNARY_COUNT; i++)
        if (!strcmp(op, wk_unary_name((wk_unary_op)i))) return i;
    return -1;
}
static int binary_of(const char *op)
{
    for (int i = 0; i < WK_BINARY_COUNT; i++)
        if (!strcmp(op, wk_binary_name((wk_binary_op)i))) return i;
    return -1;
}
static int cmp_of(const char *op)
{
    for (int i = 0; i < WK_CMP_COUNT; i++)
        if (!strcmp(op, wk_cmp_name((wk_cmp_op)i))) return i;
    return -1;
}
static int reduce_of(const char *op)
{
    static const struct { const char *name; wk_reduce_op op; } rs[] = {
        { "sum", WK_SUM }, { "min", WK_MIN }, { "max", WK_MAX }, { "argmin", WK_ARGMIN }, { "argmax", WK_ARGMAX },
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        if (!strcmp(op, rs[i].name)) return (int)rs[i].op;
    return -1;
}

/* the ops run_op calls beside the unary, binary, cmp and reduce families */
static const char *const other_ops[] = {
    "affine", "powf", "elu", "where_cond", "matmul", "index_select", "gather", "scatter_set", "scatter_add",
    "index_add", "copy", "copy2d", "const_set", "rand_uniform", "rand_normal", "softmax", "log_softmax",
    "rms_norm", "layer_norm", "add_rms_norm", "rope", "rope_i", "rope_thd", "rope_kv", "silu_mul", "attention",
    "linear_silu_mul", "linear_rope_kv", "paged_attention",
    "dequantize", "quantize", "qmatmul", "qgather",
    "conv1d", "conv_transpose1d", "conv2d", "conv_transpose2d", "avg_pool2d", "max_pool2d",
    "upsample_nearest1d", "upsample_nearest2d", "upsample_bilinear2d", "arg_sort",
};
static bool mapped(const char *op)
{
    if (unary_of(op) >= 0 || binary_of(op) >= 0 || cmp_of(op) >= 0 || reduce_of(op) >= 0) return true;
    for (size_t i = 0; i < sizeof other_ops / sizeof other_ops[0]; i++)
        if (!strcmp(op, other_ops[i])) return true;
    return false;
}

/* a contiguous [rows, cols] tensor of dt with values in [1, 3] (owned by the case) */
static wk_tensor *small(wk_dtype dt, int64_t rows, int64_t cols)
{
    t_arr a = t_arr_new(dt, WK_SHAPE(rows, cols));
    t_fill(dt, a.p, a.n, T_GEN(G_UNIFORM, 1, 3));
    return T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
}
/* x (a [rows, cols] tensor, owned by the case) viewed as shape s */
static wk_tensor *as_shape(wk_tensor *x, wk_shape s) { return x ? T_NEED(wk_reshape(x, s)) : NULL; }
/* 1-d or 2-d ids of dtype dt from n values (owned by the case) */
static wk_tensor *ids_from(wk_dtype dt, wk_shape s, const int64_t *v)
{
    t_arr a = t_arr_new(dt, s);
    for (int64_t i = 0; i < a.n; i++) t_puti(dt, a.p, i, v[i]);
    return T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
}

/* a tensor result: r must be non-NULL with dtype want_dt and shape want */
static int tensor_result(wk_tensor *r, wk_dtype want_dt, wk_shape want, char *why, size_t n)
{
    if (!r) {
        snprintf(why, n, "returned NULL: %s (%s)", wk_last_error(), wk_status_name(wk_last_status()));
        return 1;
    }
    t_own(r);
    if (wk_tensor_dtype(r) != want_dt || !t_shape_eq(wk_tensor_shape(r), want)) {
        snprintf(why, n, "returned %s %s, expected %s", wk_dtype_name(wk_tensor_dtype(r)),
                 t_shape_str(wk_tensor_shape(r)), wk_dtype_name(want_dt));
        return 1;
    }
    return 0;
}
static int status_result(wk_status st, char *why, size_t n)
{
    if (st == WK_OK) return 0;
    snprintf(why, n, "returned %s: %s", wk_status_name(st), wk_last_error());
    return 1;
}

/* The ops on block-quantized tensors, filed under the block dtype dt: a
 * [3, 2 blocks] weight or table quantized from f32 (for a dense dt, a
 * dense tensor in its place, which each op must refuse). */
static int run_quant_op(const char *op, wk_dtype dt, char *why, size_t n)
{
    const int64_t cols = 2 * (int64_t)wk_dtype_block_size(dt);
    const bool quant = wk_dtype_is_quantized(dt);
    wk_tensor *f = small(WK_F32, 3, cols);
    if (!f) return 1;
    if (!strcmp(op, "quantize")) return tensor_result(wk_quantize(f, dt), dt, WK_SHAPE(3, cols), why, n);
    wk_tensor *w = NULL;
    if (quant && !wk_supports(t_dev(), "quantize", dt)) {
        /* a type with no quantizer (the lattice IQ types): zero blocks */
        const size_t nb = (size_t)(3 * 2) * wk_dtype_block_bytes(dt);
        void *zb = t_mem(nb);
        memset(zb, 0, nb);
        w = t_own(wk_from_host(t_dev(), dt, WK_SHAPE(3, cols), zb));
    } else {
        w = quant ? t_own(wk_quantize(f, dt)) : small(dt, 3, cols);
    }
    if (!w) {
        snprintf(why, n, "making the inputs failed: %s", wk_last_error());
        return 1;
    }
    if (!strcmp(op, "dequantize")) return tensor_result(wk_dequantize(w, WK_F32), WK_F32, WK_SHAPE(3, cols), why, n);
    if (!strcmp(op, "qmatmul")) {
        wk_tensor *x = small(WK_BF16, 2, cols);
        return x ? tensor_result(wk_qmatmul(x, w), WK_BF16, WK_SHAPE(2, 3), why, n) : 1;
    }
    wk_tensor *ids = ids_from(WK_U32, WK_SHAPE(2), (const int64_t[]){ 2, 0 });
    return ids ? tensor_result(wk_qgather(w, ids, WK_F16), WK_F16, WK_SHAPE(2, cols), why, n) : 1;
}

/* Call op on small valid inputs of dtype dt. 0: success with the right
 * result; 1: it failed (why says how); RUN_UNMAPPED: no call for op here. */
static int run_op(const char *op, wk_dtype dt, char *why, size_t n)
{
    why[0] = 0;
    if (!strcmp(op, "dequantize") || !strcmp(op, "quantize") || !strcmp(op, "qmatmul") || !strcmp(op, "qgather"))
        return run_quant_op(op, dt, why, n);
    wk_tensor *x = small(dt, 3, 4), *y = small(dt, 3, 4);
    if (!x || !y) {
        snprintf(why, n, "making the inputs failed");
        return 1;
    }
    const wk_shape s34 = WK_SHAPE(3, 4);
    int k;
    if ((k = unary_of(op)) >= 0) return tensor_result(wk_unary((wk_unary_op)k, x), dt, s34, why, n);
    if (!strcmp(op, "affine")) return tensor_result(wk_affine(x, 2, -1), dt, s34, why, n);
    if (!strcmp(op, "powf")) return tensor_result(wk_powf(x, 1.5), dt, s34, why, n);
    if (!strcmp(op, "elu")) return tensor_result(wk_elu(x, 0.5), dt, s34, why, n);
    if ((k = binary_of(op)) >= 0) return tensor_result(wk_binary((wk_binary_op)k, x, y), dt, s34, why, n);
    if ((k = cmp_of(op)) >= 0) return tensor_result(wk_cmp((wk_cmp_op)k, x, y), WK_U8, s34, why, n);
    if (!strcmp(op, "where_cond")) {
        static const int64_t m[12] = { 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1 };
        wk_tensor *mask = ids_from(WK_U8, s34, m);
        return mask ? tensor_result(wk_where(mask, x, y), dt, s34, why, n) : 1;
    }
    if ((k = reduce_of(op)) >= 0) {
        const bool arg = k == WK_ARGMIN || k == WK_ARGMAX;
        return tensor_result(wk_reduce((wk_reduce_op)k, x, (const int[]){ 1 }, 1, false), arg ? WK_U32 : dt,
                             WK_SHAPE(3), why, n);
    }
    if (!strcmp(op, "matmul")) {
        wk_tensor *b = small(dt, 4, 2);
        return b ? tensor_result(wk_matmul(x, b), dt, WK_SHAPE(3, 2), why, n) : 1;
    }
    if (!strcmp(op, "index_select")) {
        wk_tensor *ids = ids_from(WK_U32, WK_SHAPE(2), (const int64_t[]){ 2, 0 });
        return ids ? tensor_result(wk_index_select(x, ids, 0), dt, WK_SHAPE(2, 4), why, n) : 1;
    }
    static const int64_t ids32[6] = { 0, 2, 1, 3, 3, 0 };   /* [3, 2], distinct within each row */
    if (!strcmp(op, "gather")) {
        wk_tensor *ids = ids_from(WK_I64, WK_SHAPE(3, 2), ids32);
        return ids ? tensor_result(wk_gather(x, ids, 1), dt, WK_SHAPE(3, 2), why, n) : 1;
    }
    if (!strcmp(op, "scatter_set") || !strcmp(op, "scatter_add")) {
        wk_tensor *ids = ids_from(WK_I64, WK_SHAPE(3, 2), ids32), *src = small(dt, 3, 2);
        if (!ids || !src) return 1;
        wk_status st = !strcmp(op, "scatter_set") ? wk_scatter_set(x, ids, src, 1) : wk_scatter_add(x, ids, src, 1);
        return status_result(st, why, n);
    }
    if (!strcmp(op, "index_add")) {
        wk_tensor *ids = ids_from(WK_U8, WK_SHAPE(2), (const int64_t[]){ 2, 0 }), *src = small(dt, 2, 4);
        return ids && src ? status_result(wk_index_add(x, ids, src, 0), why, n) : 1;
    }
    if (!strcmp(op, "copy")) {
        /* to every dense dtype, and a transposed view made contiguous */
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            if (tensor_result(wk_to_dtype(x, (wk_dtype)d), (wk_dtype)d, s34, why, n)) {
                char w[512];
                snprintf(w, sizeof w, "to_dtype to %s %s", wk_dtype_name((wk_dtype)d), why);
                snprintf(why, n, "%s", w);
                return 1;
            }
        }
        wk_tensor *tr = T_NEED(wk_transpose(x, 0, 1));
        return tr ? tensor_result(wk_contiguous(tr), dt, WK_SHAPE(4, 3), why, n) : 1;
    }
    if (!strcmp(op, "copy2d")) {
        wk_tensor *dst = T_NEED(wk_empty(t_dev(), dt, WK_SHAPE(12)));
        return dst ? status_result(wk_copy2d(dst, x, 2, 3, 4, 5, 1, 0), why, n) : 1;
    }
    if (!strcmp(op, "const_set")) {
        wk_tensor *tr = T_NEED(wk_transpose(x, 0, 1));
        return tr ? status_result(wk_const_set(tr, 1), why, n) : 1;
    }
    if (!strcmp(op, "softmax")) return tensor_result(wk_softmax(x, 1), dt, s34, why, n);
    if (!strcmp(op, "log_softmax")) return tensor_result(wk_log_softmax(x, 0), dt, s34, why, n);
    if (!strcmp(op, "silu_mul")) {
        wk_tensor *row = as_shape(small(dt, 1, 4), WK_SHAPE(4));
        return row ? tensor_result(wk_silu_mul(x, row), dt, s34, why, n) : 1;
    }
    if (!strcmp(op, "rms_norm") || !strcmp(op, "layer_norm") || !strcmp(op, "add_rms_norm")) {
        wk_tensor *w = as_shape(small(dt, 1, 4), WK_SHAPE(4)), *b = as_shape(small(dt, 1, 4), WK_SHAPE(4));
        if (!w || !b) return 1;
        if (!strcmp(op, "rms_norm")) return tensor_result(wk_rms_norm(x, w, 1e-5), dt, s34, why, n);
        if (!strcmp(op, "layer_norm")) return tensor_result(wk_layer_norm(x, w, b, 1e-5), dt, s34, why, n);
        wk_tensor *sum = NULL;
        int r = tensor_result(wk_add_rms_norm(x, y, w, 1e-5, false, &sum), dt, s34, why, n);
        if (r == 0) r = tensor_result(sum, dt, s34, why, n);
        else wk_release(sum);
        return r;
    }
    if (!strcmp(op, "rope") || !strcmp(op, "rope_i") || !strcmp(op, "rope_thd")) {
        wk_tensor *c = NULL, *s = NULL;
        wk_status st = wk_rope_tables(t_dev(), 4, 10000, 8, NULL, &c, &s);
        t_own(c);
        t_own(s);
        if (st != WK_OK) return status_result(st, why, n);
        const wk_shape s4 = WK_SHAPE(1, 2, 3, 4);
        wk_tensor *x4 = as_shape(small(dt, 6, 4), s4);
        if (!x4) return 1;
        wk_tensor *r = !strcmp(op, "rope") ? wk_rope(x4, c, s, 2) : !strcmp(op, "rope_i") ? wk_rope_i(x4, c, s, 2)
                                                                                         : wk_rope_thd(x4, c, s, 5);
        return tensor_result(r, dt, s4, why, n);
    }
    if (!strcmp(op, "rope_kv")) {
        wk_tensor *c = NULL, *s = NULL;
        wk_status st = wk_rope_tables(t_dev(), 4, 10000, 8, NULL, &c, &s);
        t_own(c);
        t_own(s);
        if (st != WK_OK) return status_result(st, why, n);
        wk_tensor *qkv = as_shape(small(dt, 8, 4), WK_SHAPE(1, 2, 4, 4));   /* 2 query heads, 1 key, 1 value */
        wk_tensor *kc = t_own(wk_zeros(t_dev(), dt, WK_SHAPE(1, 1, 5, 4))), *vc = t_own(wk_zeros(t_dev(), dt, WK_SHAPE(1, 1, 5, 4)));
        if (!qkv || !kc || !vc) return 1;
        return tensor_result(wk_rope_kv(qkv, 2, c, s, 3, NULL, false, kc, vc), dt, WK_SHAPE(1, 2, 2, 4), why, n);
    }
    if (!strcmp(op, "linear_silu_mul")) {   /* one row: the op itself, not the two calls */
        wk_tensor *row = small(dt, 1, 4), *w = small(dt, 6, 4);
        return row && w ? tensor_result(wk_linear_silu_mul(row, w), dt, WK_SHAPE(1, 3), why, n) : 1;
    }
    if (!strcmp(op, "linear_rope_kv")) {    /* one row; w: 2 query heads, 1 key, 1 value of D 4 */
        wk_tensor *c = NULL, *s = NULL;
        wk_status st = wk_rope_tables(t_dev(), 4, 10000, 8, NULL, &c, &s);
        t_own(c);
        t_own(s);
        if (st != WK_OK) return status_result(st, why, n);
        wk_tensor *row = small(dt, 1, 4), *w = small(dt, 16, 4);
        wk_tensor *kc = t_own(wk_zeros(t_dev(), dt, WK_SHAPE(1, 1, 5, 4))), *vc = t_own(wk_zeros(t_dev(), dt, WK_SHAPE(1, 1, 5, 4)));
        if (!row || !w || !kc || !vc) return 1;
        return tensor_result(wk_linear_rope_kv(row, w, 2, c, s, 3, NULL, false, kc, vc), dt, WK_SHAPE(1, 1, 2, 4), why,
                             n);
    }
    if (!strcmp(op, "attention")) {
        wk_tensor *q = as_shape(small(dt, 6, 4), WK_SHAPE(1, 2, 3, 4));
        wk_tensor *kt = as_shape(small(dt, 5, 4), WK_SHAPE(1, 1, 5, 4));
        wk_tensor *vt = as_shape(small(dt, 5, 4), WK_SHAPE(1, 1, 5, 4));
        if (!q || !kt || !vt) return 1;
        const wk_attention_opts o = { .causal = true };
        return tensor_result(wk_attention(q, kt, vt, &o), dt, WK_SHAPE(1, 2, 3, 4), why, n);
    }
    if (!strcmp(op, "paged_attention")) {
        /* two tokens of two sequences over a pool of 3 blocks of 2 positions, D = 8 */
        wk_tensor *q = as_shape(small(dt, 4, 8), WK_SHAPE(2, 2, 8));
        wk_tensor *kp = as_shape(small(dt, 6, 8), WK_SHAPE(3, 2, 1, 8));
        wk_tensor *vp = as_shape(small(dt, 6, 8), WK_SHAPE(3, 2, 1, 8));
        wk_tensor *bt = ids_from(WK_U32, WK_SHAPE(2, 2), (const int64_t[]){ 2, 0, 1, 1 });
        wk_tensor *seq = ids_from(WK_U32, WK_SHAPE(2), (const int64_t[]){ 1, 0 });
        wk_tensor *pos = ids_from(WK_U32, WK_SHAPE(2), (const int64_t[]){ 0, 3 });
        if (!q || !kp || !vp || !bt || !seq || !pos) return 1;
        return tensor_result(wk_paged_attention(q, kp, vp, bt, seq, pos, NULL), dt, WK_SHAPE(2, 2, 8), why, n);
    }
    if (!strcmp(op, "conv1d") || !strcmp(op, "conv_transpose1d")) {
        wk_tensor *x3 = as_shape(small(dt, 2, 6), WK_SHAPE(1, 2, 6)), *w = as_shape(small(dt, 2, 6), WK_SHAPE(2, 2, 3));
        if (!x3 || !w) return 1;
        return !strcmp(op, "conv1d") ? tensor_result(wk_conv1d(x3, w, NULL, NULL), dt, WK_SHAPE(1, 2, 4), why, n)
                                     : tensor_result(wk_conv_transpose1d(x3, w, NULL, NULL), dt, WK_SHAPE(1, 2, 8), why, n);
    }
    if (!strcmp(op, "conv2d") || !strcmp(op, "conv_transpose2d")) {
        wk_tensor *x4 = as_shape(x, WK_SHAPE(1, 1, 3, 4)), *w = as_shape(small(dt, 1, 4), WK_SHAPE(1, 1, 2, 2));
        if (!x4 || !w) return 1;
        return !strcmp(op, "conv2d") ? tensor_result(wk_conv2d(x4, w, NULL, NULL), dt, WK_SHAPE(1, 1, 2, 3), why, n)
                                     : tensor_result(wk_conv_transpose2d(x4, w, NULL, NULL), dt, WK_SHAPE(1, 1, 4, 5), why, n);
    }
    if (!strcmp(op, "avg_pool2d") || !strcmp(op, "max_pool2d")) {
        wk_tensor *x4 = as_shape(x, WK_SHAPE(1, 1, 3, 4));
        const wk_pool_opts o = { .kernel = { 2, 2 } };
        if (!x4) return 1;
        if (!strcmp(op, "avg_pool2d")) return tensor_result(wk_avg_pool2d(x4, &o), dt, WK_SHAPE(1, 1, 1, 2), why, n);
        wk_tensor *idx = NULL;
        int r = tensor_result(wk_max_pool2d(x4, &o, &idx), dt, WK_SHAPE(1, 1, 1, 2), why, n);
        if (r == 0) r = tensor_result(idx, WK_U32, WK_SHAPE(1, 1, 1, 2), why, n);
        else wk_release(idx);
        return r;
    }
    if (!strcmp(op, "upsample_nearest1d"))
        return tensor_result(wk_upsample_nearest1d(as_shape(x, WK_SHAPE(1, 3, 4)), 9, 0), dt, WK_SHAPE(1, 3, 9), why, n);
    if (!strcmp(op, "upsample_nearest2d"))
        return tensor_result(wk_upsample_nearest2d(as_shape(x, WK_SHAPE(1, 1, 3, 4)), 5, 8, 0, 0), dt,
                             WK_SHAPE(1, 1, 5, 8), why, n);
    if (!strcmp(op, "upsample_bilinear2d"))
        return tensor_result(wk_upsample_bilinear2d(as_shape(x, WK_SHAPE(1, 1, 3, 4)), 5, 8, false, 0, 0), dt,
                             WK_SHAPE(1, 1, 5, 8), why, n);
    if (!strcmp(op, "arg_sort")) return tensor_result(wk_arg_sort(x, true), WK_U32, s34, why, n);
    if (!strcmp(op, "rand_uniform")) return tensor_result(wk_rand_uniform(t_dev(), dt, s34, -1, 1), dt, s34, why, n);
    if (!strcmp(op, "rand_normal")) return tensor_result(wk_rand_normal(t_dev(), dt, s34, 0, 1), dt, s34, why, n);
    return RUN_UNMAPPED;
}

T_SUITE(coverage_runs)
{
    for (const char *const *p = wk_op_names(); p && *p; p++) {
        /* block dtypes too: runs only (every other op's refusal of them is test_quant.c's) */
        for (int d = 0; d < WK_DTYPE_COUNT; d++) {
            const wk_dtype dt = (wk_dtype)d;
            char why[768];
            if (d >= WK_DENSE_DTYPE_COUNT && !wk_supports(t_dev(), *p, dt)) continue;
            if (wk_supports(t_dev(), *p, dt)) {
                if (!t_case("coverage/runs/%s/%s", *p, wk_dtype_name(dt))) continue;
                int r = mapped(*p) ? run_op(*p, dt, why, sizeof why) : RUN_UNMAPPED;
                if (r == RUN_UNMAPPED)
                    t_fail("wk_supports(cpu, \"%s\", %s) is true but test_coverage.c has no call for %s: add one to run_op",
                           *p, wk_dtype_name(dt), *p);
                else if (r) t_fail("%s on %s is listed as supported but %s", *p, wk_dtype_name(dt), why);
            } else if (mapped(*p)) {
                /* an op this file calls, on a dtype it does not take: the call must fail */
                if (!t_case("coverage/refuses/%s/%s", *p, wk_dtype_name(dt))) continue;
                wk_clear_error();
                int r = run_op(*p, dt, why, sizeof why);
                if (r == 0) t_fail("%s on %s ran although wk_supports says it is not supported", *p, wk_dtype_name(dt));
                else if (r == RUN_UNMAPPED) t_fail("%s is not called by run_op although mapped() names it", *p);
                else if (r == 1 && (wk_last_status() == WK_OK || !*wk_last_error()))
                    t_fail("%s on %s failed without an error status and message", *p, wk_dtype_name(dt));
            }
        }
    }
}
