/* parity_cases.c — every case of build/wick-parity: the unary family
 * (19 ops + affine, powf, elu), binary, cmp, where_cond (u8/u32/i64
 * masks), to_dtype (all 100 pairs, filed under "copy"), reductions over
 * one, several and all dims, matmul (odd, transposed, batched, broadcast
 * batch, k = 0, large), index_select / gather / scatter_set / scatter_add /
 * index_add with u8/u32/i64 ids, copy_into, const_set, copy2d, cat, and
 * rand_uniform / rand_normal, over sizes 1, 7, 33, 1023, 65537, empty and
 * rank 0 and over transposed, narrowed and broadcast inputs; the fused NN
 * ops (softmax, log_softmax, rms_norm, add_rms_norm, layer_norm, silu_mul,
 * rope, rope_i, rope_thd, rope_kv, attention, paged_attention: nn_ops
 * below); the fused
 * products (linear_silu_mul, linear_rope_kv: one row, where they are ops
 * of their own, and the shapes that take the two calls); the block-quantized
 * ops (dequantize, qmatmul, qgather: quant_ops below, every GGUF type,
 * weights quantized on the cpu). --quick drops every
 * case with an input above 4096 elements.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parity.h"

#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct p_lay { const char *name; p_kind kind; wk_shape shape; } p_lay;

static const p_lay lays[] = {
    { "size1", PK_CONTIG, { 1, { 1 } } },
    { "size7", PK_CONTIG, { 1, { 7 } } },
    { "size33", PK_CONTIG, { 1, { 33 } } },
    { "size1023", PK_CONTIG, { 1, { 1023 } } },
    { "size65537", PK_CONTIG, { 1, { 65537 } } },
    { "empty", PK_CONTIG, { 1, { 0 } } },
    { "empty2d", PK_TRANSPOSED, { 2, { 3, 0 } } },
    { "scalar", PK_CONTIG, { 0, { 0 } } },
    { "transposed", PK_TRANSPOSED, { 2, { 33, 31 } } },
    { "strided1023", PK_TRANSPOSED, { 1, { 1023 } } },
    { "narrowed", PK_NARROWED, { 2, { 33, 7 } } },
    { "broadcast", PK_BROADCAST, { 2, { 33, 31 } } },
    { "narrowed3d", PK_NARROWED, { 3, { 5, 7, 9 } } },
    { "big_transposed", PK_TRANSPOSED, { 2, { 257, 255 } } },
};

static const wk_dtype all_dts[WK_DENSE_DTYPE_COUNT] = { WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
static const wk_dtype id_dts[3] = { WK_U8, WK_U32, WK_I64 };

static int64_t numel(wk_shape s)
{
    int64_t n = 1;
    for (int d = 0; d < s.rank; d++) n *= s.dims[d];
    return n;
}

static p_input IN(wk_dtype dt, wk_shape s, p_kind k, p_gen g, double lo, double hi)
{
    p_input in = { dt, s, k, g, lo, hi };
    return in;
}

/* run c unless --quick excludes it */
static void go(p_case *c)
{
    if (p_quick())
        for (int i = 0; i < c->nin; i++)
            if (numel(c->in[i].shape) > 4096) return;
    p_run(c);
}

static p_case start(const char *op, wk_dtype dt, p_family fam)
{
    p_case c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.dt = dt;
    c.fam = fam;
    return c;
}

/* ---- elementwise ---------------------------------------------------------------- */

static const struct { const char *name; int sub; p_family fam; bool ints; p_gen gen; double lo, hi, p0, p1; } unary_ops[] = {
    { "exp", WK_EXP, PF_UNARY, false, PG_UNIFORM, -5, 5, 0, 0 },   { "log", WK_LOG, PF_UNARY, false, PG_POSITIVE, 0.05, 20, 0, 0 },
    { "sin", WK_SIN, PF_UNARY, false, PG_UNIFORM, -6, 6, 0, 0 },   { "cos", WK_COS, PF_UNARY, false, PG_UNIFORM, -6, 6, 0, 0 },
    { "tanh", WK_TANH, PF_UNARY, false, PG_UNIFORM, -4, 4, 0, 0 }, { "abs", WK_ABS, PF_UNARY, true, PG_UNIFORM, -10, 10, 0, 0 },
    { "neg", WK_NEG, PF_UNARY, true, PG_UNIFORM, -10, 10, 0, 0 },  { "recip", WK_RECIP, PF_UNARY, false, PG_AWAY, 0.1, 10, 0, 0 },
    { "sqr", WK_SQR, PF_UNARY, true, PG_UNIFORM, -10, 10, 0, 0 },  { "sqrt", WK_SQRT, PF_UNARY, false, PG_POSITIVE, 0, 20, 0, 0 },
    { "gelu", WK_GELU, PF_UNARY, false, PG_UNIFORM, -5, 5, 0, 0 }, { "gelu_erf", WK_GELU_ERF, PF_UNARY, false, PG_UNIFORM, -5, 5, 0, 0 },
    { "erf", WK_ERF, PF_UNARY, false, PG_UNIFORM, -3, 3, 0, 0 },   { "relu", WK_RELU, PF_UNARY, true, PG_UNIFORM, -5, 5, 0, 0 },
    { "silu", WK_SILU, PF_UNARY, false, PG_UNIFORM, -6, 6, 0, 0 }, { "sigmoid", WK_SIGMOID, PF_UNARY, false, PG_UNIFORM, -12, 12, 0, 0 }, { "floor", WK_FLOOR, PF_UNARY, true, PG_UNIFORM, -10, 10, 0, 0 },
    { "ceil", WK_CEIL, PF_UNARY, true, PG_UNIFORM, -10, 10, 0, 0 }, { "round", WK_ROUND, PF_UNARY, true, PG_SMALLSET, 0, 0, 0, 0 },
    { "sign", WK_SIGN, PF_UNARY, true, PG_SMALLSET, 0, 0, 0, 0 },  { "affine", 0, PF_AFFINE, true, PG_UNIFORM, -8, 8, 1.5, -0.25 },
    { "powf", 0, PF_POWF, false, PG_POSITIVE, 0.1, 4, 2.5, 0 },    { "elu", 0, PF_ELU, false, PG_UNIFORM, -4, 4, 0.7, 0 },
};

static void elementwise(void)
{
    for (int o = 0; o < N_(unary_ops); o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            wk_dtype dt = all_dts[d];
            if (!t_is_float(dt) && !unary_ops[o].ints) continue;
            for (int l = 0; l < N_(lays); l++) {
                p_case c = start(unary_ops[o].name, dt, unary_ops[o].fam);
                snprintf(c.name, sizeof c.name, "%s/%s/%s", c.op, wk_dtype_name(dt), lays[l].name);
                c.sub = unary_ops[o].sub;
                c.p0 = unary_ops[o].p0;
                c.p1 = unary_ops[o].p1;
                if (!t_is_float(dt) && c.fam == PF_AFFINE) { c.p0 = 3; c.p1 = -7; }
                c.exact = !t_is_float(dt);
                c.nin = 1;
                c.in[0] = IN(dt, lays[l].shape, lays[l].kind, t_is_float(dt) ? unary_ops[o].gen : PG_FULL, unary_ops[o].lo, unary_ops[o].hi);
                if (!t_is_float(dt) && c.fam == PF_AFFINE && dt == WK_I64) c.in[0].gen = PG_UNIFORM, c.in[0].lo = -1e12, c.in[0].hi = 1e12;
                go(&c);
            }
        }
    for (int o = 0; o < WK_BINARY_COUNT + WK_CMP_COUNT; o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            wk_dtype dt = all_dts[d];
            bool cmp = o >= WK_BINARY_COUNT;
            const char *op = cmp ? wk_cmp_name((wk_cmp_op)(o - WK_BINARY_COUNT)) : wk_binary_name((wk_binary_op)o);
            for (int l = 0; l <= N_(lays) + 4; l++) {
                p_case c = start(op, dt, cmp ? PF_CMP : PF_BINARY);
                c.sub = cmp ? o - WK_BINARY_COUNT : o;
                c.exact = !t_is_float(dt) || cmp || o == WK_MINIMUM || o == WK_MAXIMUM;
                c.nin = 2;
                p_gen g = cmp || o >= WK_MINIMUM ? PG_SMALLSET : t_is_float(dt) ? PG_UNIFORM : PG_FULL;
                p_gen gb = o == WK_DIV ? (t_is_float(dt) ? PG_AWAY : PG_SMALLSET) : g;
                if (l == N_(lays)) {      /* numpy broadcasting of a row */
                    snprintf(c.name, sizeof c.name, "%s/%s/bcast_row", op, wk_dtype_name(dt));
                    c.in[0] = IN(dt, WK_SHAPE(33, 31), PK_TRANSPOSED, g, -10, 10);
                    c.in[1] = IN(dt, WK_SHAPE(31), PK_CONTIG, gb, 0.5, 4);
                } else if (l > N_(lays)) {
                    /* contiguous [37, 64] with a row [64] or a column [37, 1],
                     * on either side: rows a multiple of every 16-byte unit
                     * (the GPU's vectorised broadcast path) */
                    static const char *const bn[4] = { "bcast_row64", "bcast_col64", "bcast_row64_left",
                                                       "bcast_col64_left" };
                    const int k = l - N_(lays) - 1;
                    const wk_shape full = WK_SHAPE(37, 64), part = k % 2 ? WK_SHAPE(37, 1) : WK_SHAPE(64);
                    snprintf(c.name, sizeof c.name, "%s/%s/%s", op, wk_dtype_name(dt), bn[k]);
                    c.in[0] = IN(dt, k < 2 ? full : part, PK_CONTIG, g, -10, 10);
                    c.in[1] = IN(dt, k < 2 ? part : full, PK_CONTIG, gb, 0.5, 4);
                } else {
                    snprintf(c.name, sizeof c.name, "%s/%s/%s", op, wk_dtype_name(dt), lays[l].name);
                    c.in[0] = IN(dt, lays[l].shape, lays[l].kind, g, -10, 10);
                    c.in[1] = IN(dt, lays[l].shape, PK_CONTIG, gb, 0.5, 4);
                }
                go(&c);
            }
        }
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
            for (int l = 0; l < N_(lays); l++) {
                wk_dtype dt = all_dts[d];
                p_case c = start("where_cond", dt, PF_WHERE);
                snprintf(c.name, sizeof c.name, "where_cond/%s/%s/%s", wk_dtype_name(dt), wk_dtype_name(id_dts[m]), lays[l].name);
                c.exact = true;
                c.nin = 3;
                c.in[0] = IN(id_dts[m], lays[l].shape, lays[l].kind, PG_MASK, 0, 0);
                c.in[1] = IN(dt, lays[l].shape, PK_CONTIG, PG_FULL, 0, 0);
                c.in[2] = IN(dt, lays[l].shape, PK_NARROWED, PG_FULL, 0, 0);
                go(&c);
            }
}

/* ---- conversions and copies ------------------------------------------------------------ */

static void copies(void)
{
    static const int cast_lays[] = { 3, 4, 5, 7, 8, 11 };   /* size1023 size65537 empty scalar transposed broadcast */
    for (int a = 0; a < WK_DENSE_DTYPE_COUNT; a++)
        for (int b = 0; b < WK_DENSE_DTYPE_COUNT; b++)
            for (int k = 0; k < N_(cast_lays); k++) {
                const p_lay *L = &lays[cast_lays[k]];
                p_case c = start("copy", all_dts[a], PF_CAST);
                snprintf(c.name, sizeof c.name, "copy/%s->%s/%s", wk_dtype_name(all_dts[a]), wk_dtype_name(all_dts[b]), L->name);
                c.to = all_dts[b];
                c.exact = true;
                c.nin = 1;
                c.in[0] = IN(all_dts[a], L->shape, L->kind, PG_FULL, 0, 0);
                go(&c);
            }
    static const int dst_lays[] = { 3, 6, 7, 8, 10, 12, 13 };
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int k = 0; k < N_(dst_lays); k++) {
            const p_lay *L = &lays[dst_lays[k]];
            wk_dtype dt = all_dts[d];
            /* copy_into from a broadcast source of the dst's dtype and from f32 */
            for (int conv = 0; conv < 2; conv++) {
                p_case c = start("copy", dt, PF_COPY_INTO);
                snprintf(c.name, sizeof c.name, "copy_into/%s%s/%s", wk_dtype_name(dt), conv ? "<-f32" : "", L->name);
                c.exact = true;
                c.nin = 2;
                c.in[0] = IN(dt, L->shape, L->kind, PG_POISON, 0, 0);
                c.in[1] = IN(conv ? WK_F32 : dt, L->shape, L->shape.rank ? PK_BROADCAST : PK_CONTIG, PG_FULL, 0, 0);
                go(&c);
            }
            static const double vals[] = { 1.5, -2.5, 1e10 };
            for (int v = 0; v < 3; v++) {
                p_case c = start("const_set", dt, PF_CONST_SET);
                snprintf(c.name, sizeof c.name, "const_set/%s/%s/%g", wk_dtype_name(dt), L->name, vals[v]);
                c.exact = true;
                c.p0 = vals[v];
                c.nin = 1;
                c.in[0] = IN(dt, L->shape, L->kind, PG_POISON, 0, 0);
                go(&c);
            }
        }
    static const int64_t c2[][4] = { { 5, 7, 9, 11 }, { 1, 1, 1, 1 }, { 0, 5, 5, 5 }, { 33, 1023, 1030, 1025 }, { 257, 255, 260, 255 } };
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int k = 0; k < N_(c2); k++) {
            wk_dtype dt = all_dts[d];
            p_case c = start("copy2d", dt, PF_COPY2D);
            snprintf(c.name, sizeof c.name, "copy2d/%s/%lldx%lld", wk_dtype_name(dt), (long long)c2[k][0], (long long)c2[k][1]);
            c.exact = true;
            for (int i = 0; i < 4; i++) c.dims[i] = (int)c2[k][i];
            int64_t srcn = c2[k][0] * c2[k][2] + 8, dstn = c2[k][0] * c2[k][3] + 8;
            c.nin = 2;
            c.in[0] = IN(dt, WK_SHAPE(dstn), PK_CONTIG, PG_POISON, 0, 0);
            c.in[1] = IN(dt, WK_SHAPE(srcn), PK_CONTIG, PG_FULL, 0, 0);
            go(&c);
        }
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int dim = 0; dim < 2; dim++) {
            wk_dtype dt = all_dts[d];
            p_case c = start("copy", dt, PF_CAT);
            snprintf(c.name, sizeof c.name, "cat/%s/dim%d", wk_dtype_name(dt), dim);
            c.exact = true;
            c.dims[0] = dim;
            c.nin = 3;
            c.in[0] = IN(dt, dim ? WK_SHAPE(33, 5) : WK_SHAPE(5, 31), PK_TRANSPOSED, PG_FULL, 0, 0);
            c.in[1] = IN(dt, dim ? WK_SHAPE(33, 0) : WK_SHAPE(0, 31), PK_CONTIG, PG_FULL, 0, 0);
            c.in[2] = IN(dt, dim ? WK_SHAPE(33, 7) : WK_SHAPE(7, 31), PK_NARROWED, PG_FULL, 0, 0);
            go(&c);
        }
}

/* ---- reductions and matmul -------------------------------------------------------------- */

static void reductions_matmul(void)
{
    static const struct { const char *name; p_kind kind; wk_shape shape; int nd; int dims[3]; bool keep; } rc[] = {
        { "all/size1023", PK_CONTIG, { 1, { 1023 } }, -1, { 0 }, false },
        { "all/size65537", PK_CONTIG, { 1, { 65537 } }, -1, { 0 }, false },
        { "all/scalar", PK_CONTIG, { 0, { 0 } }, -1, { 0 }, false },
        { "dim1/transposed", PK_TRANSPOSED, { 2, { 33, 31 } }, 1, { 1 }, false },
        { "dim0/narrowed", PK_NARROWED, { 2, { 33, 7 } }, 1, { 0 }, true },
        { "dims02/narrowed3d", PK_NARROWED, { 3, { 5, 7, 9 } }, 2, { 0, 2 }, false },
        { "dimneg1/broadcast", PK_BROADCAST, { 2, { 33, 31 } }, 1, { -1 }, true },
        { "dim0/big_transposed", PK_TRANSPOSED, { 2, { 257, 255 } }, 1, { 0 }, false },
        { "dim1/empty_kept", PK_CONTIG, { 2, { 0, 5 } }, 1, { 1 }, false },
        { "dim1/empty_extent", PK_CONTIG, { 2, { 3, 0 } }, 1, { 1 }, false },
    };
    static const char *rnames[] = { "sum", "min", "max", "argmin", "argmax" };
    for (int o = 0; o < WK_REDUCE_COUNT; o++)
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
            for (int k = 0; k < N_(rc); k++) {
                wk_dtype dt = all_dts[d];
                if (o != WK_SUM && !strcmp(rc[k].name, "dim1/empty_extent")) continue;
                p_case c = start(rnames[o], dt, PF_REDUCE);
                snprintf(c.name, sizeof c.name, "%s/%s/%s", rnames[o], wk_dtype_name(dt), rc[k].name);
                c.sub = o;
                c.dim = rc[k].nd;
                memcpy(c.dims, rc[k].dims, sizeof rc[k].dims);
                c.keepdim = rc[k].keep;
                c.accum = o == WK_SUM;
                c.exact = o != WK_SUM || !t_is_float(dt);
                c.nin = 1;
                c.in[0] = IN(dt, rc[k].shape, rc[k].kind, o == WK_SUM ? (t_is_float(dt) ? PG_UNIFORM : PG_FULL) : PG_SMALLSET, -1, 1);
                go(&c);
            }
    static const struct { const char *name; p_kind ka; wk_shape sa; p_kind kb; wk_shape sb; } mc[] = {
        { "1x1x1", PK_CONTIG, { 2, { 1, 1 } }, PK_CONTIG, { 2, { 1, 1 } } },
        { "7x33x1", PK_CONTIG, { 2, { 7, 33 } }, PK_CONTIG, { 2, { 33, 1 } } },
        { "33x17x7", PK_CONTIG, { 2, { 33, 17 } }, PK_CONTIG, { 2, { 17, 7 } } },
        { "a_transposed", PK_TRANSPOSED, { 2, { 65, 33 } }, PK_CONTIG, { 2, { 33, 31 } } },
        { "b_transposed", PK_CONTIG, { 2, { 65, 33 } }, PK_TRANSPOSED, { 2, { 33, 31 } } },
        { "narrowed", PK_NARROWED, { 2, { 9, 13 } }, PK_NARROWED, { 2, { 13, 6 } } },
        { "batched", PK_CONTIG, { 3, { 3, 5, 7 } }, PK_TRANSPOSED, { 3, { 3, 7, 4 } } },
        { "batch_broadcast", PK_CONTIG, { 4, { 2, 1, 5, 7 } }, PK_CONTIG, { 3, { 3, 7, 4 } } },
        { "batch_stride0", PK_BROADCAST, { 3, { 3, 5, 7 } }, PK_CONTIG, { 3, { 3, 7, 4 } } },
        { "k0", PK_CONTIG, { 2, { 5, 0 } }, PK_CONTIG, { 2, { 0, 3 } } },
        { "m0", PK_CONTIG, { 2, { 0, 4 } }, PK_CONTIG, { 2, { 4, 3 } } },
        { "130x257x65", PK_CONTIG, { 2, { 130, 257 } }, PK_CONTIG, { 2, { 257, 65 } } },
        { "512x512x512", PK_TRANSPOSED, { 2, { 512, 512 } }, PK_CONTIG, { 2, { 512, 512 } } },
        { "1x4096x1023", PK_CONTIG, { 2, { 1, 4096 } }, PK_CONTIG, { 2, { 4096, 1023 } } },
    };
    static const wk_dtype mdts[] = { WK_F16, WK_BF16, WK_F32, WK_F64 };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(mc); k++) {
            p_case c = start("matmul", mdts[d], PF_MATMUL);
            snprintf(c.name, sizeof c.name, "matmul/%s/%s", wk_dtype_name(mdts[d]), mc[k].name);
            c.accum = true;
            c.nin = 2;
            c.in[0] = IN(mdts[d], mc[k].sa, mc[k].ka, PG_UNIFORM, -1, 1);
            c.in[1] = IN(mdts[d], mc[k].sb, mc[k].kb, PG_UNIFORM, -1, 1);
            go(&c);
        }
}

/* ---- indexing ---------------------------------------------------------------------------- */

static void indexing(void)
{
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int k = 0; k < 3; k++) {
            wk_dtype dt = all_dts[d], it = id_dts[k];
            const char *dn = wk_dtype_name(dt), *in = wk_dtype_name(it);
            struct { const char *lname; p_kind kind; wk_shape s; int dim; int64_t nid; } cfg[] = {
                { "dim0/contiguous", PK_CONTIG, WK_SHAPE(33, 7), 0, 40 },
                { "dim1/transposed", PK_TRANSPOSED, WK_SHAPE(33, 31), 1, 9 },
                { "dim0/big", PK_NARROWED, WK_SHAPE(300, 255), 0, 1023 },
                { "empty_ids", PK_CONTIG, WK_SHAPE(7, 5), 1, 0 },
            };
            for (int j = 0; j < N_(cfg); j++) {
                int64_t lim = cfg[j].s.dims[cfg[j].dim];
                if (it == WK_U8 && lim > 256) lim = 256;
                wk_shape gs = cfg[j].s;
                gs.dims[cfg[j].dim] = cfg[j].nid;
                /* index_select: 1-d ids */
                p_case c = start("index_select", dt, PF_INDEX_SELECT);
                snprintf(c.name, sizeof c.name, "index_select/%s/%s/%s", dn, in, cfg[j].lname);
                c.exact = true;
                c.dims[0] = cfg[j].dim;
                c.nin = 2;
                c.in[0] = IN(dt, cfg[j].s, cfg[j].kind, PG_FULL, 0, 0);
                c.in[1] = IN(it, WK_SHAPE(cfg[j].nid), PK_TRANSPOSED, PG_IDS, 0, (double)lim);
                go(&c);
                /* gather: ids of the source's shape except on dim */
                c = start("gather", dt, PF_GATHER);
                snprintf(c.name, sizeof c.name, "gather/%s/%s/%s", dn, in, cfg[j].lname);
                c.exact = true;
                c.dims[0] = cfg[j].dim;
                c.nin = 2;
                c.in[0] = IN(dt, cfg[j].s, cfg[j].kind, PG_FULL, 0, 0);
                c.in[1] = IN(it, gs, PK_CONTIG, PG_IDS, 0, (double)lim);
                go(&c);
                /* scatter_set: one id per line (no duplicates); scatter_add: many */
                for (int add = 0; add < 2; add++) {
                    wk_shape ss = cfg[j].s;
                    ss.dims[cfg[j].dim] = add ? cfg[j].nid : (cfg[j].nid ? 1 : 0);
                    c = start(add ? "scatter_add" : "scatter_set", dt, add ? PF_SCATTER_ADD : PF_SCATTER_SET);
                    snprintf(c.name, sizeof c.name, "%s/%s/%s/%s", c.op, dn, in, cfg[j].lname);
                    c.exact = !add || !t_is_float(dt);
                    c.accum = true;
                    c.dims[0] = cfg[j].dim;
                    c.nin = 3;
                    c.in[0] = IN(dt, cfg[j].s, cfg[j].kind, PG_SMALLSET, 0, 0);
                    c.in[1] = IN(it, ss, PK_CONTIG, PG_IDS, 0, (double)lim);
                    c.in[2] = IN(dt, ss, PK_TRANSPOSED, add ? PG_SMALLSET : PG_FULL, 0, 0);
                    go(&c);
                }
                /* index_add: 1-d ids, src with nid rows on dim */
                c = start("index_add", dt, PF_INDEX_ADD);
                snprintf(c.name, sizeof c.name, "index_add/%s/%s/%s", dn, in, cfg[j].lname);
                c.exact = !t_is_float(dt);
                c.accum = true;
                c.dims[0] = cfg[j].dim;
                c.nin = 3;
                c.in[0] = IN(dt, cfg[j].s, cfg[j].kind, PG_SMALLSET, 0, 0);
                c.in[1] = IN(it, WK_SHAPE(cfg[j].nid), PK_CONTIG, PG_IDS, 0, (double)lim);
                c.in[2] = IN(dt, gs, PK_NARROWED, PG_SMALLSET, 0, 0);
                go(&c);
            }
        }
}

/* ---- index_select rows (the GPU's row path) and out-of-range ids ------------------------------ */

/* Rows of every byte length and alignment: 1, 2, 4, 7, 33, 64, 4096
 * elements (odd byte counts for u8), narrowed views whose base and row
 * stride break 16-byte alignment, dims 0, 1 and the last (outer x ids x
 * row), repeated ids, one id, no ids, more ids than one checking block
 * takes; then bad ids, which must fail with WK_ERR_INDEX everywhere and
 * leave an in-place destination unchanged. */
static void index_rows(void)
{
    static const struct { const char *lname; p_kind kind; wk_shape s; int dim; int64_t nid; p_kind ik; } cfg[] = {
        { "rows1", PK_CONTIG, { 2, { 50, 1 } }, 0, 70, PK_CONTIG },
        { "rows2", PK_CONTIG, { 2, { 50, 2 } }, 0, 70, PK_TRANSPOSED },
        { "rows4", PK_CONTIG, { 2, { 50, 4 } }, 0, 70, PK_CONTIG },
        { "rows7", PK_CONTIG, { 2, { 50, 7 } }, 0, 70, PK_CONTIG },
        { "rows33", PK_CONTIG, { 2, { 50, 33 } }, 0, 70, PK_TRANSPOSED },
        { "rows64", PK_CONTIG, { 2, { 40, 64 } }, 0, 100, PK_CONTIG },
        { "rows4096", PK_CONTIG, { 2, { 24, 4096 } }, 0, 50, PK_CONTIG },
        { "rows_narrowed8", PK_NARROWED, { 2, { 30, 8 } }, 0, 45, PK_CONTIG },
        { "rows_narrowed64", PK_NARROWED, { 2, { 30, 64 } }, 0, 45, PK_TRANSPOSED },
        { "dim1/rows33", PK_CONTIG, { 3, { 5, 20, 33 } }, 1, 27, PK_CONTIG },
        { "dim1/rows64", PK_CONTIG, { 3, { 4, 10, 64 } }, 1, 13, PK_TRANSPOSED },
        { "dim1/narrowed3d", PK_NARROWED, { 3, { 5, 7, 9 } }, 1, 11, PK_CONTIG },
        { "dim2/rows1", PK_CONTIG, { 3, { 6, 5, 9 } }, 2, 12, PK_CONTIG },
        { "repeated", PK_CONTIG, { 2, { 3, 40 } }, 0, 64, PK_CONTIG },
        { "one_id", PK_CONTIG, { 2, { 9, 33 } }, 0, 1, PK_CONTIG },
        { "empty_ids", PK_CONTIG, { 2, { 9, 33 } }, 0, 0, PK_CONTIG },
        { "many_ids", PK_CONTIG, { 2, { 100, 3 } }, 0, 20000, PK_CONTIG },
    };
    for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++)
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < N_(cfg); j++) {
                wk_dtype dt = all_dts[d], it = id_dts[k];
                p_case c = start("index_select", dt, PF_INDEX_SELECT);
                snprintf(c.name, sizeof c.name, "index_select/%s/%s/%s", wk_dtype_name(dt), wk_dtype_name(it), cfg[j].lname);
                c.exact = true;
                c.dims[0] = cfg[j].dim;
                c.nin = 2;
                c.in[0] = IN(dt, cfg[j].s, cfg[j].kind, PG_FULL, 0, 0);
                c.in[1] = IN(it, WK_SHAPE(cfg[j].nid), cfg[j].ik, PG_IDS, 0, (double)cfg[j].s.dims[cfg[j].dim]);
                go(&c);
            }

    /* bad ids: the first invalid id, -1 and a huge one (i64), 2^32 - 1 (u32) */
    static const wk_dtype bdts[] = { WK_U8, WK_BF16, WK_F32, WK_F64 };
    static const struct { const char *lname; wk_shape s; int dim; int64_t nid; } bcfg[] = {
        { "dim0", { 2, { 40, 33 } }, 0, 50 },
        { "dim1", { 3, { 5, 20, 8 } }, 1, 27 },
        { "many_ids", { 2, { 100, 3 } }, 0, 20000 },
    };
    for (int d = 0; d < N_(bdts); d++)
        for (int k = 0; k < 3; k++)
            for (int b = 0; b < 3; b++)
                for (int j = 0; j < N_(bcfg); j++) {
                    wk_dtype dt = bdts[d], it = id_dts[k];
                    const int64_t lim = bcfg[j].s.dims[bcfg[j].dim];
                    double bad;
                    if (b == 0) bad = (double)lim;
                    else if (it == WK_I64) bad = b == 1 ? -1.0 : 1099511627776.0;
                    else if (it == WK_U32 && b == 1) bad = 4294967295.0;
                    else continue;
                    wk_shape gs = bcfg[j].s;
                    gs.dims[bcfg[j].dim] = bcfg[j].nid;
                    static const struct { const char *op; p_family fam; } ops[] = {
                        { "index_select", PF_INDEX_SELECT }, { "gather", PF_GATHER }, { "scatter_set", PF_SCATTER_SET },
                        { "scatter_add", PF_SCATTER_ADD }, { "index_add", PF_INDEX_ADD },
                    };
                    for (int o = 0; o < N_(ops); o++) {
                        p_case c = start(ops[o].op, dt, ops[o].fam);
                        snprintf(c.name, sizeof c.name, "%s/%s/%s/bad_id%.0f/%s", ops[o].op, wk_dtype_name(dt), wk_dtype_name(it), bad,
                                 bcfg[j].lname);
                        c.expect_err = true;
                        c.dims[0] = bcfg[j].dim;
                        const bool ids1d = ops[o].fam == PF_INDEX_SELECT || ops[o].fam == PF_INDEX_ADD;
                        wk_shape is = ids1d ? WK_SHAPE(bcfg[j].nid) : gs;
                        c.in[0] = IN(dt, bcfg[j].s, PK_CONTIG, PG_SMALLSET, 0, 0);
                        c.in[1] = IN(it, is, PK_CONTIG, PG_IDS_BAD, bad, (double)lim);
                        c.nin = 2;
                        if (ops[o].fam != PF_INDEX_SELECT && ops[o].fam != PF_GATHER) {
                            c.nin = 3;
                            c.in[2] = IN(dt, gs, PK_CONTIG, PG_SMALLSET, 0, 0);
                        }
                        go(&c);
                    }
                }
}

/* ---- random numbers ------------------------------------------------------------------------ */

static void randoms(void)
{
    static const wk_dtype fl[] = { WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
    static const int64_t sizes[] = { 1, 7, 33, 1023, 65537 };
    for (int nrm = 0; nrm < 2; nrm++)
        for (int d = 0; d < 5; d++)
            for (int k = nrm; k < 5; k++) {
                p_case c = start(nrm ? "rand_normal" : "rand_uniform", fl[d], nrm ? PF_RAND_NORMAL : PF_RAND_UNIFORM);
                snprintf(c.name, sizeof c.name, "%s/%s/size%lld", c.op, wk_dtype_name(fl[d]), (long long)sizes[k]);
                c.exact = !nrm;
                c.accum = true;
                c.p0 = nrm ? 1.0 : -2.0;
                c.p1 = nrm ? 2.0 : 3.0;
                c.in[0].shape = WK_SHAPE(sizes[k]);   /* the output shape (no inputs) */
                c.nin = 0;
                if (p_quick() && sizes[k] > 4096) continue;
                p_run(&c);
            }
}

/* ---- fused NN ops ------------------------------------------------------------------------------ */

static const wk_dtype nn_dts[4] = { WK_BF16, WK_F16, WK_F32, WK_F64 };

static void nn_softmax_norms(void)
{
    static const struct { const char *name; p_kind kind; wk_shape s; int dim; p_gen gen; } sm[] = {
        { "rows1", PK_CONTIG, { 2, { 4, 1 } }, -1, PG_UNIFORM },
        { "rows7", PK_CONTIG, { 2, { 4, 7 } }, -1, PG_UNIFORM },
        { "rows33", PK_CONTIG, { 2, { 33, 33 } }, 1, PG_UNIFORM },
        { "rows1023", PK_CONTIG, { 2, { 4, 1023 } }, -1, PG_UNIFORM },
        { "rows4097", PK_CONTIG, { 2, { 4, 4097 } }, -1, PG_UNIFORM },
        { "row4097_quick", PK_CONTIG, { 1, { 4097 } }, 0, PG_UNIFORM },
        { "transposed_dim0", PK_TRANSPOSED, { 3, { 5, 33, 31 } }, 0, PG_UNIFORM },
        { "transposed_dim1", PK_TRANSPOSED, { 3, { 5, 33, 31 } }, 1, PG_UNIFORM },
        { "transposed_dimlast", PK_TRANSPOSED, { 3, { 5, 33, 31 } }, -1, PG_UNIFORM },
        { "transposed_big_dim0", PK_TRANSPOSED, { 2, { 1023, 65 } }, 0, PG_UNIFORM },
        { "mid_dim", PK_CONTIG, { 3, { 4, 1023, 9 } }, 1, PG_UNIFORM },
        { "narrowed", PK_NARROWED, { 2, { 33, 7 } }, -1, PG_UNIFORM },
        { "broadcast_dim0", PK_BROADCAST, { 2, { 33, 31 } }, 0, PG_UNIFORM },
        { "inf_rows33", PK_CONTIG, { 2, { 16, 33 } }, -1, PG_INF_ROWS },
        { "inf_rows1023", PK_CONTIG, { 2, { 8, 1023 } }, -1, PG_INF_ROWS },
        { "inf_rows_dim0", PK_TRANSPOSED, { 2, { 31, 16 } }, 0, PG_INF_ROWS },
        { "empty", PK_CONTIG, { 2, { 0, 5 } }, -1, PG_UNIFORM },
    };
    for (int d = 0; d < 4; d++)
        for (int lg = 0; lg < 2; lg++)
            for (int k = 0; k < N_(sm); k++) {
                p_case c = start(lg ? "log_softmax" : "softmax", nn_dts[d], PF_SOFTMAX);
                snprintf(c.name, sizeof c.name, "%s/%s/%s", c.op, wk_dtype_name(nn_dts[d]), sm[k].name);
                c.sub = lg;
                c.dims[0] = sm[k].dim;
                c.accum = true;
                c.nin = 1;
                c.in[0] = IN(nn_dts[d], sm[k].s, sm[k].kind, sm[k].gen, -8, 8);
                go(&c);
            }
    /* norms over the last dim: D 7 .. 4097, rank 3, narrowed, transposed (copied), broadcast rows */
    static const struct { const char *name; p_kind kind; wk_shape s; } nc[] = {
        { "d7", PK_CONTIG, { 2, { 4, 7 } } },
        { "d64", PK_CONTIG, { 2, { 33, 64 } } },
        { "d1023", PK_CONTIG, { 2, { 3, 1023 } } },
        { "d4097", PK_CONTIG, { 2, { 4, 4097 } } },
        { "d4096_row", PK_CONTIG, { 2, { 1, 4096 } } },
        { "rank3_d128", PK_NARROWED, { 3, { 2, 3, 128 } } },
        { "transposed", PK_TRANSPOSED, { 2, { 33, 64 } } },
        { "broadcast_rows", PK_BROADCAST, { 2, { 7, 33 } } },
        { "rows1023_d64", PK_CONTIG, { 2, { 1023, 64 } } },
        { "empty", PK_CONTIG, { 2, { 0, 16 } } },
    };
    static const struct { const char *op; p_family fam; int sub; int nw; } nv[] = {
        { "rms_norm", PF_RMS_NORM, 0, 1 }, { "rms_norm", PF_RMS_NORM, 1, 0 }, { "rms_norm", PF_RMS_NORM, 2, 1 },
        { "layer_norm", PF_LAYER_NORM, 0, 2 }, { "layer_norm", PF_LAYER_NORM, 1, 0 }, { "layer_norm", PF_LAYER_NORM, 2, 1 },
        { "add_rms_norm", PF_ADD_RMS_NORM, 0, 1 }, { "add_rms_norm", PF_ADD_RMS_NORM, 1, 1 },
    };
    static const char *const vnames[8] = { "weight", "no_weight", "gemma", "weight_bias", "none", "weight", "plain", "gemma" };
    for (int d = 0; d < 4; d++)
        for (int v = 0; v < N_(nv); v++)
            for (int k = 0; k < N_(nc); k++) {
                const wk_dtype dt = nn_dts[d];
                const int64_t D = nc[k].s.dims[nc[k].s.rank - 1];
                p_case c = start(nv[v].op, dt, nv[v].fam);
                snprintf(c.name, sizeof c.name, "%s/%s/%s/%s", c.op, wk_dtype_name(dt), vnames[v], nc[k].name);
                c.sub = nv[v].sub;
                c.p0 = k % 2 ? 1e-6 : 1e-5;
                c.accum = true;
                int i = 0;
                c.in[i++] = IN(dt, nc[k].s, nc[k].kind, PG_UNIFORM, -3, 3);
                if (nv[v].fam == PF_ADD_RMS_NORM) c.in[i++] = IN(dt, nc[k].s, PK_CONTIG, PG_UNIFORM, -3, 3);
                for (int w = 0; w < nv[v].nw; w++)   /* weight (strided on odd cases: copied), bias */
                    c.in[i++] = IN(dt, WK_SHAPE(D), k % 2 && w == 0 ? PK_TRANSPOSED : PK_CONTIG, PG_UNIFORM, -1.5, 1.5);
                c.nin = i;
                go(&c);
            }
}

static void nn_silu_rope(void)
{
    static const struct { const char *name; p_kind ka; wk_shape sa; p_kind kb; wk_shape sb; } sc[] = {
        { "size1", PK_CONTIG, { 1, { 1 } }, PK_CONTIG, { 1, { 1 } } },
        { "size7", PK_CONTIG, { 1, { 7 } }, PK_CONTIG, { 1, { 7 } } },
        { "size1023", PK_CONTIG, { 1, { 1023 } }, PK_NARROWED, { 1, { 1023 } } },
        { "size65537", PK_CONTIG, { 1, { 65537 } }, PK_CONTIG, { 1, { 65537 } } },
        { "transposed", PK_TRANSPOSED, { 2, { 33, 31 } }, PK_CONTIG, { 2, { 33, 31 } } },
        { "bcast_row", PK_CONTIG, { 2, { 37, 64 } }, PK_CONTIG, { 1, { 64 } } },
        { "bcast_col", PK_CONTIG, { 2, { 37, 64 } }, PK_CONTIG, { 2, { 37, 1 } } },
        { "bcast_both", PK_CONTIG, { 2, { 37, 1 } }, PK_CONTIG, { 2, { 1, 64 } } },
        { "bcast_stride0", PK_BROADCAST, { 2, { 33, 31 } }, PK_TRANSPOSED, { 2, { 33, 31 } } },
        { "empty", PK_CONTIG, { 2, { 0, 5 } }, PK_CONTIG, { 1, { 5 } } },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(sc); k++) {
            p_case c = start("silu_mul", nn_dts[d], PF_SILU_MUL);
            snprintf(c.name, sizeof c.name, "silu_mul/%s/%s", wk_dtype_name(nn_dts[d]), sc[k].name);
            c.nin = 2;
            c.in[0] = IN(nn_dts[d], sc[k].sa, sc[k].ka, PG_UNIFORM, -8, 8);
            c.in[1] = IN(nn_dts[d], sc[k].sb, sc[k].kb, PG_UNIFORM, -2, 2);
            go(&c);
        }
    /* x [B, H, T, D] (rope_thd: [B, T, H, D]); offsets > 0; transposed views of
     * [B, T, H, D] (swap12), narrowed views, and x with last stride != 1 (copied) */
    static const struct { const char *name; int64_t B, H, T, D, off; p_kind kind; } rc[] = {
        { "d64_t1_off9", 1, 8, 1, 64, 9, PK_CONTIG },
        { "d64_t7_off3", 2, 4, 7, 64, 3, PK_CONTIG },
        { "d128_t33_off5", 1, 4, 33, 128, 5, PK_SWAP12 },
        { "d80_t7", 1, 2, 7, 80, 0, PK_CONTIG },
        { "d128_t7_off2", 2, 2, 7, 128, 2, PK_NARROWED },
        { "d64_t33_swap12", 1, 2, 33, 64, 1, PK_SWAP12 },
        { "d256_t4", 1, 4, 4, 256, 7, PK_SWAP12 },
        { "d16_t7_last_strided", 1, 2, 7, 16, 4, PK_TRANSPOSED },
        { "d64_t1023", 1, 2, 1023, 64, 1, PK_CONTIG },
        { "empty", 1, 2, 0, 64, 1, PK_CONTIG },
    };
    static const char *const rops[3] = { "rope", "rope_i", "rope_thd" };
    for (int d = 0; d < 4; d++)
        for (int op = 0; op < 3; op++)
            for (int k = 0; k < N_(rc); k++) {
                const wk_dtype dt = nn_dts[d];
                p_case c = start(rops[op], dt, PF_ROPE);
                snprintf(c.name, sizeof c.name, "%s/%s/%s", c.op, wk_dtype_name(dt), rc[k].name);
                c.sub = op;
                c.p0 = (double)rc[k].off;
                const wk_shape s = op == 2 ? WK_SHAPE(rc[k].B, rc[k].T, rc[k].H, rc[k].D)
                                           : WK_SHAPE(rc[k].B, rc[k].H, rc[k].T, rc[k].D);
                const wk_shape ts = WK_SHAPE(rc[k].T + rc[k].off + 2, rc[k].D / 2);
                c.nin = 3;
                c.in[0] = IN(dt, s, rc[k].kind, PG_UNIFORM, -2, 2);
                c.in[1] = IN(WK_F32, ts, PK_CONTIG, PG_UNIFORM, -1, 1);
                c.in[2] = IN(WK_F32, ts, PK_CONTIG, PG_UNIFORM, -1, 1);
                go(&c);
            }
}

/* rope_kv: decode rows (the llm's shapes), a device position (with rows
 * past the cache), interleaved pairs, prefill rows, strided qkv */
static void nn_rope_kv(void)
{
    static const struct { const char *name; int64_t B, T, Hq, Hkv, D, C, off; int sub; p_kind kind; } kc[] = {
        { "decode_hq32_hkv8_d128", 1, 1, 32, 8, 128, 600, 511, 0, PK_CONTIG },
        { "decode_devpos", 1, 1, 16, 4, 128, 600, 377, 2, PK_CONTIG },
        { "decode_devpos_pairs", 1, 1, 8, 2, 64, 64, 63, 3, PK_CONTIG },
        { "devpos_past_cache", 1, 5, 4, 2, 64, 20, 17, 2, PK_CONTIG },
        { "prefill_t33", 2, 33, 8, 2, 64, 40, 3, 0, PK_SWAP12 },
        { "prefill_t7_pairs_narrow", 1, 7, 4, 1, 80, 9, 2, 1, PK_NARROWED },
        { "last_strided", 1, 3, 2, 1, 16, 5, 1, 0, PK_TRANSPOSED },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(kc); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start("rope_kv", dt, PF_ROPE_KV);
            snprintf(c.name, sizeof c.name, "rope_kv/%s/%s", wk_dtype_name(dt), kc[k].name);
            c.sub = kc[k].sub;
            c.p0 = (double)kc[k].off;
            c.opt[0] = kc[k].Hq;
            const int64_t H = kc[k].Hq + 2 * kc[k].Hkv;
            const wk_shape ts = WK_SHAPE(kc[k].C + 1, kc[k].D / 2);
            c.nin = 4;
            c.in[0] = IN(dt, WK_SHAPE(kc[k].B, kc[k].T, H, kc[k].D), kc[k].kind, PG_UNIFORM, -2, 2);
            c.in[1] = IN(WK_F32, ts, PK_CONTIG, PG_UNIFORM, -1, 1);
            c.in[2] = IN(WK_F32, ts, PK_CONTIG, PG_UNIFORM, -1, 1);
            c.in[3] = IN(dt, WK_SHAPE(2, kc[k].B, kc[k].Hkv, kc[k].C, kc[k].D), PK_CONTIG, PG_UNIFORM, -9, 9);
            go(&c);
        }
}

/* the fused products: one row of a dense w (the LINEAR ops; a GPU's one
 * launch where its kernel takes the operands: f16/bf16, k a multiple of 8,
 * 16-byte rows; else its two ops), a vector and a [1, 1, K] x, and the
 * shapes that run as the two calls (several rows) */
static void nn_linear(void)
{
    static const struct { const char *name; p_kind kx; wk_shape sx; p_kind kw; int64_t F; } lc[] = {
        { "row_k64_f48", PK_CONTIG, { 2, { 1, 64 } }, PK_CONTIG, 48 },
        { "row_k4096_f1536", PK_CONTIG, { 2, { 1, 4096 } }, PK_CONTIG, 1536 },
        { "vector_k40_f3", PK_CONTIG, { 1, { 40 } }, PK_CONTIG, 3 },
        { "x3d_k64_f8", PK_CONTIG, { 3, { 1, 1, 64 } }, PK_CONTIG, 8 },
        { "row_k33_f7", PK_CONTIG, { 2, { 1, 33 } }, PK_CONTIG, 7 },
        { "row_k136_w_narrowed", PK_CONTIG, { 2, { 1, 136 } }, PK_NARROWED, 20 },
        { "rows3_k64_f16", PK_CONTIG, { 2, { 3, 64 } }, PK_CONTIG, 16 },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(lc); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start("linear_silu_mul", dt, PF_LINEAR_SILU_MUL);
            snprintf(c.name, sizeof c.name, "linear_silu_mul/%s/%s", wk_dtype_name(dt), lc[k].name);
            c.accum = true;
            c.nin = 2;
            c.in[0] = IN(dt, lc[k].sx, lc[k].kx, PG_UNIFORM, -1, 1);
            c.in[1] = IN(dt, WK_SHAPE(2 * lc[k].F, lc[k].sx.dims[lc[k].sx.rank - 1]), lc[k].kw, PG_UNIFORM, -1, 1);
            go(&c);
        }
    static const struct { const char *name; int64_t T, Hq, Hkv, D, K, C, off; int sub; p_kind kw; } rc[] = {
        { "decode_hq8_hkv2_d128_k512", 1, 8, 2, 128, 512, 40, 17, 0, PK_CONTIG },
        { "decode_devpos_pairs", 1, 4, 2, 64, 256, 9, 3, 3, PK_CONTIG },
        { "devpos_past_cache", 1, 2, 1, 16, 64, 6, 6, 2, PK_CONTIG },
        { "decode_k12", 1, 2, 1, 16, 12, 6, 2, 0, PK_CONTIG },
        { "decode_w_narrowed", 1, 4, 2, 32, 136, 9, 5, 1, PK_NARROWED },
        { "prefill_t7", 7, 4, 1, 32, 64, 9, 2, 0, PK_CONTIG },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(rc); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start("linear_rope_kv", dt, PF_LINEAR_ROPE_KV);
            snprintf(c.name, sizeof c.name, "linear_rope_kv/%s/%s", wk_dtype_name(dt), rc[k].name);
            c.accum = true;
            c.sub = rc[k].sub;
            c.p0 = (double)rc[k].off;
            c.opt[0] = rc[k].Hq;
            const int64_t H = rc[k].Hq + 2 * rc[k].Hkv;
            c.nin = 4;
            c.in[0] = IN(dt, WK_SHAPE(rc[k].T, rc[k].K), PK_CONTIG, PG_UNIFORM, -1, 1);
            c.in[1] = IN(dt, WK_SHAPE(H * rc[k].D, rc[k].K), rc[k].kw, PG_UNIFORM, -1, 1);
            c.in[2] = IN(WK_F32, WK_SHAPE(2, rc[k].C + 1, rc[k].D / 2), PK_CONTIG, PG_UNIFORM, -1, 1);
            c.in[3] = IN(dt, WK_SHAPE(2, 1, rc[k].Hkv, rc[k].C, rc[k].D), PK_CONTIG, PG_UNIFORM, -9, 9);
            go(&c);
        }
}

/* mask shapes of attention: [Tq, Tk], [1, Hq, Tq, Tk], [B, 1, 1, Tk] */
enum { AM_NONE, AM_TQTK, AM_1HTT, AM_B11TK };

static void nn_attention(void)
{
    static const struct {
        const char *name;
        int64_t B, Hq, Hkv, Tq, Tk, D;
        double scale, softcap;
        bool causal;
        int window, mask;
        p_gen mgen;
        p_kind kind;
        double qr;
    } ac[] = {
        { "d64", 2, 4, 4, 33, 33, 64, 0, 0, false, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "d80", 1, 4, 2, 33, 33, 80, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "d128", 1, 4, 4, 65, 65, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "d256", 1, 2, 1, 33, 33, 256, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "small_d64", 1, 2, 1, 16, 16, 64, 0, 0, false, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "small_d128_causal", 1, 2, 1, 8, 16, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "small_d256", 1, 2, 1, 8, 8, 256, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "small_d80_gqa2", 1, 2, 1, 8, 16, 80, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_SWAP12, 1 },
        { "gqa1", 2, 8, 8, 65, 65, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "gqa4", 2, 8, 2, 65, 65, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "gqa8", 2, 8, 1, 65, 65, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "causal_tq7_tk65", 2, 4, 2, 7, 65, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "causal_tq65_tk7", 1, 4, 2, 65, 7, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "causal_tq200_tk333", 1, 2, 1, 200, 333, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk1", 1, 8, 1, 1, 1, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk7", 1, 8, 1, 1, 7, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk32", 1, 8, 1, 1, 32, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk33", 2, 8, 2, 1, 33, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_SWAP12, 1 },
        { "decode_tk1023", 1, 8, 1, 1, 1023, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk4097", 1, 8, 1, 1, 4097, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk4097_gqa4_d64", 2, 8, 2, 1, 4097, 64, 0, 0, false, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "decode_tk4097_window256", 1, 4, 1, 1, 4097, 128, 0, 0, true, 256, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "window16", 1, 4, 2, 65, 65, 64, 0, 0, true, 16, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "window100_gt_tk", 1, 4, 2, 65, 65, 64, 0, 0, true, 100, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "window5_noncausal", 1, 4, 2, 33, 33, 64, 0, 0, false, 5, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "softcap", 1, 4, 2, 33, 33, 64, 0, 20, false, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 4 },
        { "softcap_scale", 1, 4, 2, 33, 65, 64, 0.5, 5, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "mask_tqtk", 2, 4, 2, 33, 65, 64, 0, 0, false, 0, AM_TQTK, PG_UNIFORM, PK_CONTIG, 1 },
        { "mask_1hqtqtk", 2, 4, 2, 33, 65, 64, 0, 0, true, 0, AM_1HTT, PG_UNIFORM, PK_CONTIG, 1 },
        { "mask_b11tk", 2, 4, 1, 33, 65, 64, 0, 0, false, 0, AM_B11TK, PG_UNIFORM, PK_CONTIG, 1 },
        { "mask_inf_row", 2, 4, 2, 33, 65, 64, 0, 0, false, 0, AM_TQTK, PG_MASK_INF, PK_CONTIG, 1 },
        { "mask_inf_row_small", 1, 2, 1, 8, 16, 64, 0, 0, false, 0, AM_1HTT, PG_MASK_INF, PK_CONTIG, 1 },
        { "bthd_views", 2, 8, 2, 33, 33, 128, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_SWAP12, 1 },
        { "narrowed", 1, 4, 2, 33, 33, 64, 0, 0, true, 0, AM_B11TK, PG_UNIFORM, PK_NARROWED, 1 },
        { "last_strided", 1, 2, 1, 16, 16, 64, 0, 0, false, 0, AM_NONE, PG_UNIFORM, PK_TRANSPOSED, 1 },
        { "all_options", 2, 8, 2, 17, 100, 64, 0.2, 8, true, 32, AM_B11TK, PG_MASK_INF, PK_SWAP12, 3 },
        { "empty_tq0", 1, 2, 1, 0, 5, 64, 0, 0, true, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
        { "tk0", 1, 2, 1, 3, 0, 64, 0, 0, false, 0, AM_NONE, PG_UNIFORM, PK_CONTIG, 1 },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(ac); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start("attention", dt, PF_ATTENTION);
            snprintf(c.name, sizeof c.name, "attention/%s/%s", wk_dtype_name(dt), ac[k].name);
            c.accum = true;
            c.p0 = ac[k].scale;
            c.p1 = ac[k].softcap;
            c.causal = ac[k].causal;
            c.window = ac[k].window;
            c.nin = ac[k].mask == AM_NONE ? 3 : 4;
            c.in[0] = IN(dt, WK_SHAPE(ac[k].B, ac[k].Hq, ac[k].Tq, ac[k].D), ac[k].kind, PG_UNIFORM, -ac[k].qr, ac[k].qr);
            c.in[1] = IN(dt, WK_SHAPE(ac[k].B, ac[k].Hkv, ac[k].Tk, ac[k].D), ac[k].kind, PG_UNIFORM, -1.5, 1.5);
            c.in[2] = IN(dt, WK_SHAPE(ac[k].B, ac[k].Hkv, ac[k].Tk, ac[k].D), ac[k].kind, PG_UNIFORM, -1, 1);
            const wk_shape ms = ac[k].mask == AM_TQTK ? WK_SHAPE(ac[k].Tq, ac[k].Tk)
                                : ac[k].mask == AM_1HTT ? WK_SHAPE(1, ac[k].Hq, ac[k].Tq, ac[k].Tk)
                                                        : WK_SHAPE(ac[k].B, 1, 1, ac[k].Tk);
            if (c.nin == 4) c.in[3] = IN(WK_F32, ms, PK_CONTIG, ac[k].mgen, -2, 2);
            go(&c);
        }
}

/* paged attention: the ids of a case, made here from its description
 * (host arrays, freed after the case): each sequence's blocks are a
 * shuffled selection of the pool's (a few spare blocks never read), the
 * table's unread entries junk (~0), sequences 1.. share sequence 0's
 * first full blocks where `share`; tokens are the last nq positions of
 * each sequence, interleaved. bad: 1 one token's sequence out of range,
 * 2 a position past the table, 3 a block id read out of range. */
typedef struct pa_desc {
    const char *name;
    int64_t Hq, Hkv, D, BS;
    int nseq;
    int64_t len[6], nq[6];
    int window;
    double scale, softcap;
    p_kind qk, pk;
    bool share;
    int bad;
} pa_desc;

static uint64_t pa_lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void nn_paged_one(const pa_desc *P, wk_dtype dt)
{
    const int64_t BS = P->BS;
    int64_t T = 0, MB = 0, used = 0;
    for (int s = 0; s < P->nseq; s++) {
        const int64_t nb = (P->len[s] + BS - 1) / BS;
        T += P->nq[s];
        MB = nb > MB ? nb : MB;
        used += nb;
    }
    MB += 1;
    const int64_t NB = used + 3, S = P->nseq;
    uint64_t x = t_hash_str(P->name);
    uint32_t *perm = malloc((size_t)NB * sizeof(uint32_t)), *bt = malloc((size_t)(S * MB) * sizeof(uint32_t));
    uint32_t *seq = malloc((size_t)T * sizeof(uint32_t)), *pos = malloc((size_t)T * sizeof(uint32_t));
    if (!perm || !bt || !seq || !pos) {
        free(perm), free(bt), free(seq), free(pos);
        printf("FAIL paged_attention/%s: out of host memory\n", P->name);
        return;
    }
    for (int64_t i = 0; i < NB; i++) perm[i] = (uint32_t)i;
    for (int64_t i = NB - 1; i > 0; i--) {
        const int64_t j = (int64_t)(pa_lcg(&x) % (uint64_t)(i + 1));
        const uint32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int64_t share = 0;
    if (P->share) {
        share = P->len[0] / BS;
        for (int s = 1; s < P->nseq; s++) share = P->len[s] / BS < share ? P->len[s] / BS : share;
    }
    int64_t next = 0;
    for (int64_t i = 0; i < S * MB; i++) bt[i] = 0xFFFFFFFFu;
    for (int s = 0; s < P->nseq; s++)
        for (int64_t b = 0; b < (P->len[s] + BS - 1) / BS; b++) bt[s * MB + b] = s > 0 && b < share ? bt[b] : perm[next++];
    /* tokens interleaved: round robin over the sequences */
    int64_t t = 0, done[6] = { 0 };
    while (t < T)
        for (int s = 0; s < P->nseq; s++)
            if (done[s] < P->nq[s]) {
                seq[t] = (uint32_t)s;
                pos[t] = (uint32_t)(P->len[s] - P->nq[s] + done[s]++);
                t++;
            }
    if (P->bad == 1) seq[T / 2] = (uint32_t)S;
    if (P->bad == 2) pos[T / 2] = (uint32_t)(MB * BS);
    if (P->bad == 3) bt[seq[T - 1] * MB + pos[T - 1] / BS] = (uint32_t)NB;
    p_case c = start("paged_attention", dt, PF_PAGED_ATTENTION);
    snprintf(c.name, sizeof c.name, "paged_attention/%s/%s", wk_dtype_name(dt), P->name);
    c.accum = true;
    c.expect_err = P->bad != 0;
    c.p0 = P->scale;
    c.p1 = P->softcap;
    c.window = P->window;
    c.nin = 3;
    c.in[0] = IN(dt, WK_SHAPE(T, P->Hq, P->D), P->qk, PG_UNIFORM, -1, 1);
    c.in[1] = IN(dt, WK_SHAPE(NB, BS, P->Hkv, P->D), P->pk, PG_UNIFORM, -1.5, 1.5);
    c.in[2] = IN(dt, WK_SHAPE(NB, BS, P->Hkv, P->D), P->pk, PG_UNIFORM, -1, 1);
    c.ids[0] = bt, c.ids_shape[0] = WK_SHAPE(S, MB);
    c.ids[1] = seq, c.ids_shape[1] = WK_SHAPE(T);
    c.ids[2] = pos, c.ids_shape[2] = WK_SHAPE(T);
    go(&c);
    free(perm), free(bt), free(seq), free(pos);
}

static void nn_paged_attention(void)
{
    static const pa_desc pc[] = {
        /* small enough for --quick (compute-sanitizer) */
        { "tiny_d8_bs4", 2, 1, 8, 4, 2, { 5, 3 }, { 1, 3 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "small_gqa4_d16_bs4", 4, 1, 16, 4, 3, { 9, 30, 2 }, { 1, 1, 2 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "small_window4_bs3", 2, 2, 8, 3, 2, { 20, 6 }, { 5, 6 }, 4, 0, 0, PK_T01, PK_NARROWED, false, 0 },
        { "small_shared_softcap", 4, 2, 8, 4, 3, { 13, 17, 9 }, { 1, 2, 1 }, 0, 0, 2, PK_CONTIG, PK_CONTIG, true, 0 },
        { "t1_len1", 4, 2, 64, 16, 1, { 1 }, { 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "decode_lens_1_to_2500", 8, 2, 128, 16, 5, { 1, 17, 300, 1023, 2500 }, { 1, 1, 1, 1, 1 }, 0, 0, 0, PK_CONTIG,
          PK_CONTIG, false, 0 },
        { "decode_gqa1_d64", 4, 4, 64, 16, 3, { 40, 700, 16 }, { 1, 1, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "decode_gqa8_d128", 8, 1, 128, 16, 3, { 333, 2, 1500 }, { 1, 1, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "gqa3", 6, 2, 64, 16, 2, { 90, 41 }, { 1, 3 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "gqa16", 16, 1, 64, 16, 2, { 129, 20 }, { 1, 2 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "prefill_and_decode", 4, 2, 64, 16, 4, { 300, 64, 1000, 5 }, { 1, 64, 1, 5 }, 0, 0, 0, PK_CONTIG, PK_CONTIG,
          false, 0 },
        { "prefill_continued_bs32", 8, 8, 128, 32, 2, { 500, 77 }, { 37, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "bs1", 4, 2, 64, 1, 2, { 37, 5 }, { 1, 5 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "bs7", 4, 2, 64, 7, 3, { 100, 7, 49 }, { 1, 3, 5 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "window100", 4, 1, 64, 16, 3, { 2000, 150, 40 }, { 1, 20, 1 }, 100, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "window1", 2, 1, 64, 16, 2, { 50, 3 }, { 3, 3 }, 1, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "softcap_scale", 4, 2, 64, 16, 3, { 130, 17, 60 }, { 1, 17, 2 }, 0, 0.3, 5, PK_CONTIG, PK_CONTIG, false, 0 },
        { "d256", 4, 2, 256, 16, 2, { 400, 20 }, { 1, 4 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 0 },
        { "shared_blocks", 4, 2, 64, 16, 3, { 200, 180, 250 }, { 1, 1, 10 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, true, 0 },
        { "q_t01", 4, 2, 128, 16, 3, { 70, 300, 16 }, { 1, 1, 16 }, 0, 0, 0, PK_T01, PK_CONTIG, false, 0 },
        { "pools_narrowed", 4, 2, 64, 16, 3, { 70, 130, 8 }, { 1, 1, 4 }, 0, 0, 0, PK_NARROWED, PK_NARROWED, false, 0 },
        { "pools_last_strided", 4, 2, 16, 8, 2, { 30, 9 }, { 1, 3 }, 0, 0, 0, PK_CONTIG, PK_TRANSPOSED, false, 0 },
        { "bad_seq", 4, 2, 8, 4, 3, { 40, 7, 20 }, { 1, 3, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 1 },
        { "bad_pos", 4, 2, 8, 4, 3, { 40, 7, 20 }, { 1, 3, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 2 },
        { "bad_block", 4, 2, 8, 4, 3, { 40, 7, 20 }, { 1, 3, 1 }, 0, 0, 0, PK_CONTIG, PK_CONTIG, false, 3 },
    };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(pc); k++) nn_paged_one(&pc[k], nn_dts[d]);
}

/* ---- block-quantized ops ----------------------------------------------------------- */

/* (the lattice IQ types, iq3_xxs .. iq1_m, have no quantizer to make
 * their inputs: test_quant_ops.c checks them on the cpu; none here yet) */
static const wk_dtype q_types[] = { WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0, WK_Q8_1, WK_Q2_K,
                                    WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K, WK_IQ4_NL, WK_IQ4_XS };
static const wk_dtype q_float_dts[] = { WK_F32, WK_F16, WK_BF16 };

/* dequantize: bit for bit; qmatmul: m = 1..8 (the qmatvec kernel) and
 * more (dequantize + matmul), k = one block, n = 1, 7, 4097, x
 * transposed; qgather: u8/u32/i64 ids, a bad id */
static void quant_ops(void)
{
    static const struct { const char *name; int64_t m, n, kb; p_kind xk; bool narrow; } mc[] = {
        { "m1_n1_k1blk", 1, 1, 1, PK_CONTIG, false },     { "m1_n7_k2blk", 1, 7, 2, PK_CONTIG, false },
        { "m1_n4097_k1blk", 1, 4097, 1, PK_CONTIG, false }, { "m2_n33_k3blk", 2, 33, 3, PK_CONTIG, false },
        { "m3_n7_k5blk_xT", 3, 7, 5, PK_TRANSPOSED, false }, { "m5_n64_k4blk_wrows", 5, 64, 4, PK_CONTIG, true },
        { "m8_n65_k9blk", 8, 65, 9, PK_CONTIG, false },    { "m8_n7_k2blk_xT", 8, 7, 2, PK_TRANSPOSED, false },
        { "m9_n33_k2blk", 9, 33, 2, PK_CONTIG, false },    { "m40_n70_k3blk_xT", 40, 70, 3, PK_TRANSPOSED, false },
        { "m1_n300_k40blk", 1, 300, 40, PK_CONTIG, false },
    };
    /* the dense f16/bf16 matvec beside it (matmul with m <= 8 and b the
     * transposed view of a row-major W: quant.hip's kernel) */
    static const struct { int64_t m, n, k; } dm[] = { { 1, 7, 64 }, { 3, 4097, 96 }, { 8, 33, 4096 }, { 1, 1, 32 } };
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < N_(dm); k++) {
            const wk_dtype dt = f ? WK_F16 : WK_BF16;
            p_case c = start("matmul", dt, PF_MATMUL);
            snprintf(c.name, sizeof c.name, "matmul/%s/matvec_m%lld_n%lld_k%lld_wT", wk_dtype_name(dt),
                     (long long)dm[k].m, (long long)dm[k].n, (long long)dm[k].k);
            c.accum = true;
            c.nin = 2;
            c.in[0] = IN(dt, WK_SHAPE(dm[k].m, dm[k].k), PK_CONTIG, PG_UNIFORM, -1, 1);
            c.in[1] = IN(dt, WK_SHAPE(dm[k].k, dm[k].n), PK_TRANSPOSED, PG_UNIFORM, -1, 1);
            p_run(&c);
        }
    for (int t = 0; t < N_(q_types); t++) {
        const wk_dtype qt = q_types[t];
        const int64_t B = (int64_t)wk_dtype_block_size(qt);
        for (int f = 0; f < N_(q_float_dts); f++) {
            const wk_dtype dt = q_float_dts[f];
            static const struct { const char *name; int64_t rows, blocks; bool narrow; } dc[] = {
                { "1x1blk", 1, 1, false }, { "7x2blk", 7, 2, false }, { "33x5blk_rows", 33, 5, true },
            };
            for (int k = 0; k < N_(dc); k++) {
                p_case c = start("dequantize", qt, PF_DEQUANTIZE);
                snprintf(c.name, sizeof c.name, "dequantize/%s/%s/%s", wk_dtype_name(qt), wk_dtype_name(dt), dc[k].name);
                c.sub = dt;
                c.to = qt;
                c.exact = true;
                c.dims[0] = dc[k].narrow;
                c.nin = 1;
                c.in[0] = IN(WK_F32, WK_SHAPE(dc[k].rows + (dc[k].narrow ? 2 : 0), dc[k].blocks * B), PK_CONTIG,
                             PG_UNIFORM, -3, 3);
                p_run(&c);
            }
            for (int k = 0; k < N_(mc); k++) {
                p_case c = start("qmatmul", qt, PF_QMATMUL);
                snprintf(c.name, sizeof c.name, "qmatmul/%s/%s/%s", wk_dtype_name(qt), wk_dtype_name(dt), mc[k].name);
                c.to = qt;
                c.accum = true;
                c.dims[0] = mc[k].narrow;
                c.nin = 2;
                const int64_t K = mc[k].kb * B;
                c.in[0] = IN(WK_F32, WK_SHAPE(mc[k].n + (mc[k].narrow ? 2 : 0), K), PK_CONTIG, PG_UNIFORM, -1, 1);
                c.in[1] = IN(dt, WK_SHAPE(mc[k].m, K), mc[k].xk, PG_Q8, -1, 1);
                p_run(&c);
            }
            /* x uniform: on GPUs, q4_0/q8_0/q4_k/q5_k/q6_k round x to 8
             * bits for m <= 8 (unless WICK_QMATVEC=f32): a looser bound,
             * about 7x the expected normalized error of that rounding
             * (1.5e-5 for x uniform in [-1, 1]; docs/quantization.md), on
             * cases with enough outputs for the error to be near its mean */
            for (int k = 0; k < 2; k++) {
                static const struct { const char *name; int64_t m, n, kb; p_kind xk; } uc[] = {
                    { "m8_n65_k9blk_xuniform", 8, 65, 9, PK_CONTIG }, { "m1_n300_k40blk_xuniform_xT", 1, 300, 40, PK_TRANSPOSED },
                };
                const char *act = getenv("WICK_QMATVEC");
                const bool q8 = (qt == WK_Q4_0 || qt == WK_Q8_0 || qt == WK_Q4_K || qt == WK_Q5_K || qt == WK_Q6_K) &&
                                !(act && !strcmp(act, "f32"));
                p_case c = start("qmatmul", qt, PF_QMATMUL);
                snprintf(c.name, sizeof c.name, "qmatmul/%s/%s/%s", wk_dtype_name(qt), wk_dtype_name(dt), uc[k].name);
                c.to = qt;
                c.accum = true;
                c.bound = q8 ? 1e-4 : 0;
                c.nin = 2;
                const int64_t K = uc[k].kb * B;
                c.in[0] = IN(WK_F32, WK_SHAPE(uc[k].n, K), PK_CONTIG, PG_UNIFORM, -1, 1);
                c.in[1] = IN(dt, WK_SHAPE(uc[k].m, K), uc[k].xk, PG_UNIFORM, -1, 1);
                p_run(&c);
            }
            for (int i = 0; i < N_(id_dts); i++)
                for (int bad = 0; bad < 2; bad++) {
                    p_case c = start("qgather", qt, PF_QGATHER);
                    snprintf(c.name, sizeof c.name, "qgather/%s/%s/ids_%s%s", wk_dtype_name(qt), wk_dtype_name(dt),
                             wk_dtype_name(id_dts[i]), bad ? "_bad" : "");
                    c.sub = dt;
                    c.to = qt;
                    c.exact = true;
                    c.expect_err = bad;
                    c.nin = 2;
                    c.in[0] = IN(WK_F32, WK_SHAPE(9, 2 * B), PK_CONTIG, PG_UNIFORM, -3, 3);
                    c.in[1] = IN(id_dts[i], WK_SHAPE(6), PK_CONTIG, bad ? PG_IDS_BAD : PG_IDS, 9 + (int)i, 9);
                    p_run(&c);
                }
        }
    }
}

/* ---- convolutions, pools, upsampling, sorting ------------------------------------------------ */

static void conv_ops(void)
{
    /* x dims, w dims, sub (0 conv1d, 1 conv_transpose1d, 2 conv2d, 3 conv_transpose2d), options */
    static const struct { const char *name; int sub; wk_shape x, w; int64_t opt[9]; bool bias; p_kind kind; } cc[] = {
        { "3x3_pad1", 2, { 4, { 2, 8, 9, 9 } }, { 4, { 16, 8, 3, 3 } }, { 1, 1, 1, 1, 1, 1, 0, 0, 1 }, true, PK_CONTIG },
        { "7x7_s2_c3", 2, { 4, { 1, 3, 33, 33 } }, { 4, { 8, 3, 7, 7 } }, { 2, 2, 3, 3, 1, 1, 0, 0, 1 }, false, PK_CONTIG },
        { "depthwise", 2, { 4, { 1, 32, 17, 17 } }, { 4, { 32, 1, 3, 3 } }, { 1, 1, 1, 1, 1, 1, 0, 0, 32 }, true, PK_TRANSPOSED },
        { "1x1", 2, { 4, { 3, 16, 7, 5 } }, { 4, { 24, 16, 1, 1 } }, { 1, 1, 0, 0, 1, 1, 0, 0, 1 }, false, PK_NARROWED },
        { "groups_dil", 2, { 4, { 2, 6, 11, 10 } }, { 4, { 9, 2, 3, 2 } }, { 2, 1, 1, 2, 2, 3, 0, 0, 3 }, true, PK_CONTIG },
        { "t_s2_op1", 3, { 4, { 2, 8, 7, 6 } }, { 4, { 8, 4, 3, 3 } }, { 2, 2, 1, 1, 1, 1, 1, 1, 2 }, true, PK_CONTIG },
        { "t_depthwise", 3, { 4, { 1, 16, 9, 9 } }, { 4, { 16, 1, 4, 4 } }, { 2, 2, 1, 1, 1, 1, 0, 0, 16 }, false, PK_TRANSPOSED },
        { "1d", 0, { 3, { 4, 8, 33 } }, { 3, { 12, 4, 5 } }, { 2, 0, 2, 0, 2, 0, 0, 0, 2 }, true, PK_CONTIG },
        { "t_1d", 1, { 3, { 2, 6, 17 } }, { 3, { 6, 4, 3 } }, { 3, 0, 1, 0, 1, 0, 2, 0, 1 }, true, PK_TRANSPOSED },
        /* more than 4 output channels per group (the GPU's GEMM path), with
         * groups, uneven strides/padding/dilation, odd sizes, views */
        { "groups_gemm", 2, { 4, { 2, 12, 13, 11 } }, { 4, { 18, 4, 3, 3 } }, { 2, 1, 1, 2, 1, 2, 0, 0, 3 }, true, PK_NARROWED },
        { "b17_c33", 2, { 4, { 17, 33, 7, 7 } }, { 4, { 40, 33, 3, 3 } }, { 1, 1, 1, 1, 1, 1, 0, 0, 1 }, true, PK_TRANSPOSED },
        { "depth_mult2", 2, { 4, { 2, 8, 10, 10 } }, { 4, { 16, 1, 3, 3 } }, { 2, 2, 1, 1, 1, 1, 0, 0, 8 }, true, PK_CONTIG },
        { "t_gemm", 3, { 4, { 3, 6, 5, 7 } }, { 4, { 6, 5, 3, 2 } }, { 2, 3, 1, 0, 1, 2, 1, 1, 2 }, true, PK_TRANSPOSED },
        { "t_1d_gemm", 1, { 3, { 2, 8, 9 } }, { 3, { 8, 6, 4 } }, { 2, 0, 1, 0, 1, 0, 1, 0, 1 }, true, PK_NARROWED },
        { "1d_gemm_nobias", 0, { 3, { 3, 5, 40 } }, { 3, { 7, 5, 3 } }, { 3, 0, 0, 0, 3, 0, 0, 0, 1 }, false, PK_TRANSPOSED },
        /* depthwise 3x3 on contiguous rows, stride 1 and 2, widths that
         * are no multiple of 4, with and without padding and bias */
        { "dw3_s1", 2, { 4, { 2, 24, 15, 17 } }, { 4, { 24, 1, 3, 3 } }, { 1, 1, 1, 1, 1, 1, 0, 0, 24 }, true, PK_CONTIG },
        { "dw3_s2", 2, { 4, { 1, 16, 14, 19 } }, { 4, { 16, 1, 3, 3 } }, { 2, 2, 1, 1, 1, 1, 0, 0, 16 }, false, PK_NARROWED },
        { "dw3_s1_nopad", 2, { 4, { 1, 8, 9, 10 } }, { 4, { 8, 1, 3, 3 } }, { 1, 1, 0, 0, 1, 1, 0, 0, 8 }, true, PK_CONTIG },
        /* input channels a multiple of 32, no groups: the GPU's implicit GEMM
         * (f16/bf16); positions and output channels no multiple of its
         * 128 x 128 tiles, more than one tile of each, views */
        { "ig_3x3", 2, { 4, { 3, 32, 13, 11 } }, { 4, { 40, 32, 3, 3 } }, { 1, 1, 1, 1, 1, 1, 0, 0, 1 }, true, PK_CONTIG },
        { "ig_s2_dil", 2, { 4, { 2, 64, 17, 15 } }, { 4, { 136, 64, 3, 2 } }, { 2, 1, 2, 0, 2, 3, 0, 0, 1 }, false, PK_TRANSPOSED },
        { "ig_1x1", 2, { 4, { 2, 32, 9, 7 } }, { 4, { 24, 32, 1, 1 } }, { 1, 1, 0, 0, 1, 1, 0, 0, 1 }, true, PK_NARROWED },
        { "ig_7x7_s2", 2, { 4, { 1, 32, 20, 19 } }, { 4, { 16, 32, 7, 7 } }, { 2, 2, 3, 3, 1, 1, 0, 0, 1 }, true, PK_CONTIG },
        { "ig_1d", 0, { 3, { 2, 32, 50 } }, { 3, { 48, 32, 5 } }, { 1, 0, 2, 0, 1, 0, 0, 0, 1 }, true, PK_CONTIG },
    };
    static const char *const conv_names[4] = { "conv1d", "conv_transpose1d", "conv2d", "conv_transpose2d" };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(cc); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start(conv_names[cc[k].sub], dt, PF_CONV);
            snprintf(c.name, sizeof c.name, "%s/%s/%s", c.op, wk_dtype_name(dt), cc[k].name);
            c.sub = cc[k].sub;
            memcpy(c.opt, cc[k].opt, sizeof cc[k].opt);
            c.accum = true;
            c.nin = cc[k].bias ? 3 : 2;
            c.in[0] = IN(dt, cc[k].x, cc[k].kind, PG_UNIFORM, -2, 2);
            c.in[1] = IN(dt, cc[k].w, PK_CONTIG, PG_UNIFORM, -1, 1);
            int64_t cout = cc[k].sub & 1 ? cc[k].w.dims[1] * cc[k].opt[8] : cc[k].w.dims[0];
            c.in[2] = IN(dt, (wk_shape){ 1, { cout } }, PK_CONTIG, PG_UNIFORM, -1, 1);
            go(&c);
        }
    /* pools: kernel, stride, padding, ceil_mode, exclude_pad */
    static const struct { const char *name; wk_shape x; int64_t opt[8]; p_kind kind; } pc[] = {
        { "k2s2", { 4, { 2, 8, 32, 32 } }, { 2, 2, 2, 2, 0, 0, 0, 0 }, PK_CONTIG },
        { "k3s2p1_ceil", { 4, { 1, 5, 33, 17 } }, { 3, 3, 2, 2, 1, 1, 1, 0 }, PK_TRANSPOSED },
        { "k3s1p1_excl", { 4, { 3, 4, 7, 9 } }, { 3, 3, 1, 1, 1, 1, 0, 1 }, PK_NARROWED },
        { "k2x4_ceil_excl", { 4, { 1, 3, 10, 13 } }, { 2, 4, 3, 3, 1, 2, 1, 1 }, PK_CONTIG },
        /* contiguous rows: the GPU's unrolled avg_pool kernels (3x3 s2 as in a ResNet stem) */
        { "k3s2p1", { 4, { 2, 6, 29, 30 } }, { 3, 3, 2, 2, 1, 1, 0, 0 }, PK_CONTIG },
        { "k3s2p1_ceil_excl", { 4, { 1, 4, 20, 23 } }, { 3, 3, 2, 2, 1, 1, 1, 1 }, PK_NARROWED },
        /* rows of whole 16-byte vectors (W a multiple of 8): read as vectors */
        { "k3s2p1_vec", { 4, { 2, 5, 17, 40 } }, { 3, 3, 2, 2, 1, 1, 0, 0 }, PK_CONTIG },
        { "k2s2_vec_ceil", { 4, { 1, 3, 9, 16 } }, { 2, 2, 2, 2, 0, 0, 1, 0 }, PK_CONTIG },
        { "k3s1p1_vec_excl", { 4, { 1, 2, 6, 24 } }, { 3, 3, 1, 1, 1, 1, 0, 1 }, PK_CONTIG },
        /* long rows (kB each), many output rows: the two-row kernels over a whole plane */
        { "k3s2p1_bands", { 4, { 1, 2, 40, 1024 } }, { 3, 3, 2, 2, 1, 1, 1, 0 }, PK_CONTIG },
        { "k3s1p1_bands_excl", { 4, { 1, 1, 30, 2048 } }, { 3, 3, 1, 1, 1, 1, 0, 1 }, PK_CONTIG },
    };
    static const char *const pool_names[3] = { "avg_pool2d", "max_pool2d", "max_pool2d" };
    for (int d = 0; d < 4; d++)
        for (int sub = 0; sub < 3; sub++)
            for (int k = 0; k < N_(pc); k++) {
                const wk_dtype dt = nn_dts[d];
                p_case c = start(pool_names[sub], dt, PF_POOL);
                snprintf(c.name, sizeof c.name, "%s/%s/%s%s", c.op, wk_dtype_name(dt), pc[k].name,
                         sub == 2 ? "/indices" : "");
                c.sub = sub;
                memcpy(c.opt, pc[k].opt, sizeof pc[k].opt);
                c.accum = sub == 0;
                c.exact = sub != 0;
                c.nin = 1;
                c.in[0] = IN(dt, pc[k].x, pc[k].kind, sub ? PG_SMALLSET : PG_UNIFORM, -2, 2);
                go(&c);
            }
    /* upsampling: output sizes, scales, align_corners */
    static const struct { const char *name; int sub; wk_shape x; int oh, ow; double sh, sw; int align; } uc[] = {
        { "x3", 0, { 3, { 2, 3, 17 } }, 1, 51, 0, 0, 0 },
        { "down", 0, { 3, { 1, 4, 33 } }, 1, 10, 0, 0, 0 },
        { "x2", 1, { 4, { 2, 8, 32, 32 } }, 64, 64, 0, 0, 0 },
        { "scales", 1, { 4, { 1, 3, 7, 9 } }, 11, 15, 1.7, 1.7, 0 },
        { "up", 2, { 4, { 2, 4, 9, 13 } }, 20, 31, 0, 0, 0 },
        { "up_align", 2, { 4, { 2, 4, 9, 13 } }, 20, 31, 0, 0, 1 },
        { "down", 2, { 4, { 1, 3, 33, 17 } }, 7, 5, 0, 0, 0 },
        { "scales", 2, { 4, { 1, 2, 5, 6 } }, 12, 9, 2.5, 1.5, 0 },
        /* rows doubled: the GPU's x2 kernel (odd widths element by element,
         * else whole vectors; a transposed view takes the generic one) */
        { "x2_odd", 1, { 4, { 1, 3, 5, 7 } }, 10, 14, 0, 0, 0 },
        { "x2_t", 1, { 4, { 1, 2, 6, 8 } }, 12, 16, 0, 0, 0 },
        { "x2_1d", 0, { 3, { 2, 3, 12 } }, 1, 24, 0, 0, 0 },
        { "x2_wonly", 1, { 4, { 1, 3, 5, 16 } }, 5, 32, 0, 0, 0 },
    };
    static const char *const up_names[3] = { "upsample_nearest1d", "upsample_nearest2d", "upsample_bilinear2d" };
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < N_(uc); k++) {
            const wk_dtype dt = nn_dts[d];
            p_case c = start(up_names[uc[k].sub], dt, PF_UPSAMPLE);
            snprintf(c.name, sizeof c.name, "%s/%s/%s", c.op, wk_dtype_name(dt), uc[k].name);
            c.sub = uc[k].sub;
            c.dims[0] = uc[k].oh;
            c.dims[1] = uc[k].ow;
            c.p0 = uc[k].sh;
            c.p1 = uc[k].sw;
            c.opt[0] = uc[k].align;
            c.accum = uc[k].sub == 2;
            c.exact = uc[k].sub != 2;
            c.nin = 1;
            c.in[0] = IN(dt, uc[k].x, k % 2 ? PK_TRANSPOSED : PK_CONTIG, PG_UNIFORM, -2, 2);
            go(&c);
        }
}

static void sort_ops(void)
{
    static const wk_dtype dts[10] = { WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
    /* k: topk's k (0: min(n, 50)); a case with k set runs topk only */
    static const struct { const char *name; wk_shape s; p_kind kind; p_gen gen; int64_t k; } sc[] = {
        { "row1", { 2, { 3, 1 } }, PK_CONTIG, PG_UNIFORM, 0 },
        { "rows32", { 2, { 1000, 32 } }, PK_CONTIG, PG_SMALLSET, 0 },
        { "rows1023", { 2, { 4, 1023 } }, PK_TRANSPOSED, PG_FULL, 0 },
        { "rows4097", { 2, { 3, 4097 } }, PK_NARROWED, PG_SMALLSET, 0 },
        { "row1e6", { 1, { 1000000 } }, PK_CONTIG, PG_FULL, 0 },
        /* NaN, +-inf, +-0 and ties (floats), the extremes (integers) */
        { "rows2_special", { 2, { 7, 2 } }, PK_CONTIG, PG_SORTKEYS, 0 },
        { "rows1023_special", { 2, { 5, 1023 } }, PK_TRANSPOSED, PG_SORTKEYS, 0 },
        { "rows3000_special", { 2, { 3, 3000 } }, PK_NARROWED, PG_SORTKEYS, 0 },
        { "rows20000_special", { 2, { 2, 20000 } }, PK_TRANSPOSED, PG_SORTKEYS, 0 },
        { "rows1e5x32", { 2, { 100000, 32 } }, PK_CONTIG, PG_SORTKEYS, 0 },
        /* long rows, small k (the GPU's radix select): k = 1, the
         * largest k it takes (1024) and one past it, ties (small sets)
         * and special values, a sampling step's [1, vocabulary] */
        { "rows5000_k1", { 2, { 3, 5000 } }, PK_TRANSPOSED, PG_SMALLSET, 1 },
        { "rows9000_k1024", { 2, { 2, 9000 } }, PK_CONTIG, PG_SMALLSET, 1024 },
        { "rows9000_k1025", { 2, { 2, 9000 } }, PK_CONTIG, PG_SMALLSET, 1025 },
        { "rows6000_special_k700", { 2, { 4, 6000 } }, PK_NARROWED, PG_SORTKEYS, 700 },
        { "row128256_k50", { 2, { 1, 128256 } }, PK_CONTIG, PG_FULL, 50 },
    };
    for (int d = 0; d < 10; d++)
        for (int k = 0; k < N_(sc); k++)
            for (int sub = 0; sub < 4; sub++)
                for (int desc = 0; desc < 2; desc++) {
                    const wk_dtype dt = dts[d];
                    if (k == 4 && (sub || (dt != WK_F32 && dt != WK_I64 && dt != WK_BF16))) continue;
                    if (k == 9 && sub != 0 && sub != 2) continue;
                    if (sc[k].k && sub < 2) continue;
                    p_case c = start("arg_sort", dt, PF_SORT);
                    static const char *const subn[4] = { "arg_sort", "sort", "topk", "topk_indices" };
                    snprintf(c.name, sizeof c.name, "arg_sort/%s/%s/%s%s", wk_dtype_name(dt), sc[k].name, subn[sub],
                             desc ? "_desc" : "");
                    c.sub = sub;
                    c.opt[0] = desc;
                    c.opt[1] = sc[k].k ? sc[k].k : sc[k].s.dims[sc[k].s.rank - 1] < 50 ? sc[k].s.dims[sc[k].s.rank - 1] : 50;
                    c.exact = true;
                    c.nin = 1;
                    c.in[0] = IN(dt, sc[k].s, sc[k].kind, sc[k].gen, -100, 100);
                    go(&c);
                }
}

void p_all_cases(void)
{
    elementwise();
    copies();
    reductions_matmul();
    indexing();
    index_rows();
    randoms();
    nn_softmax_norms();
    nn_silu_rope();
    nn_rope_kv();
    nn_linear();
    nn_attention();
    nn_paged_attention();
    quant_ops();
    conv_ops();
    sort_ops();
}
