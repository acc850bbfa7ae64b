/* test_matmul.c — wk_matmul on f16, bf16, f32 and f64: sizes with m, n or
 * k of 1, odd sizes, k = 0 (zeros), m or n = 0 (empty), a large product
 * (blocked / BLAS paths), transposed and narrowed operands, batches,
 * broadcast batch dims (size-1 dims, stride-0 views, a rank-2 operand
 * against a batched one). The reference is a naive triple loop in double;
 * the result must match it rounded to the dtype within the accumulating
 * bound.
 *
 * The gemv_* shapes (m of 1 to 4, and 5 just past) go through the cpu's
 * path for a few rows of a: b with contiguous columns (a transposed
 * weight: dot products) or contiguous rows (scaled rows added), k and n
 * around its 8- and 16-element steps and its blocks of 16 and 256
 * columns, a transposed or narrowed a, batches. matmul/<f16|bf16>/
 * gemv_bits/<dot|axpy> multiply every bit pattern of the dtype (subnormals,
 * infinities and NaNs included) by one-hot rows of a: each output is one
 * element of b, exactly; gemv_inf adds infinities of either sign into sums.
 *
 * Case names: matmul/<dtype>/<shape case>.
 */
#include <math.h>
#include <stdlib.h>
#include "test.h"

typedef struct mcase {
    const char *name;
    t_layout_kind ka;
    wk_shape sa;       /* [..., m, k] */
    t_layout_kind kb;
    wk_shape sb;       /* [..., k, n] */
} mcase;

static const mcase mcases[] = {
    { "1x1x1", LK_CONTIG, { 2, { 1, 1 } }, LK_CONTIG, { 2, { 1, 1 } } },
    { "m1_k7_n1", LK_CONTIG, { 2, { 1, 7 } }, LK_CONTIG, { 2, { 7, 1 } } },
    { "m7_k1_n33", LK_CONTIG, { 2, { 7, 1 } }, LK_CONTIG, { 2, { 1, 33 } } },
    { "m33_k17_n7", LK_CONTIG, { 2, { 33, 17 } }, LK_CONTIG, { 2, { 17, 7 } } },
    { "m1_k1023_n1", LK_CONTIG, { 2, { 1, 1023 } }, LK_CONTIG, { 2, { 1023, 1 } } },
    { "m1_k33_n65", LK_CONTIG, { 2, { 1, 33 } }, LK_TRANSPOSED, { 2, { 33, 65 } } },
    { "k0", LK_CONTIG, { 2, { 5, 0 } }, LK_CONTIG, { 2, { 0, 3 } } },
    { "m0", LK_CONTIG, { 2, { 0, 4 } }, LK_CONTIG, { 2, { 4, 3 } } },
    { "n0", LK_CONTIG, { 2, { 4, 3 } }, LK_CONTIG, { 2, { 3, 0 } } },
    { "square64", LK_CONTIG, { 2, { 64, 64 } }, LK_CONTIG, { 2, { 64, 64 } } },
    { "large_130x257x65", LK_CONTIG, { 2, { 130, 257 } }, LK_CONTIG, { 2, { 257, 65 } } },
    { "a_transposed", LK_TRANSPOSED, { 2, { 9, 13 } }, LK_CONTIG, { 2, { 13, 6 } } },
    { "b_transposed", LK_CONTIG, { 2, { 9, 13 } }, LK_TRANSPOSED, { 2, { 13, 6 } } },
    { "both_transposed", LK_TRANSPOSED, { 2, { 33, 17 } }, LK_TRANSPOSED, { 2, { 17, 31 } } },
    { "large_transposed", LK_TRANSPOSED, { 2, { 127, 96 } }, LK_TRANSPOSED, { 2, { 96, 129 } } },
    { "narrowed", LK_NARROWED, { 2, { 7, 5 } }, LK_NARROWED, { 2, { 5, 9 } } },
    { "batched", LK_CONTIG, { 3, { 3, 5, 7 } }, LK_CONTIG, { 3, { 3, 7, 4 } } },
    { "batched_transposed", LK_TRANSPOSED, { 3, { 3, 5, 7 } }, LK_REVERSED, { 3, { 3, 7, 4 } } },
    { "batch_broadcast", LK_CONTIG, { 4, { 2, 1, 5, 7 } }, LK_CONTIG, { 3, { 3, 7, 4 } } },
    { "batch_stride0", LK_BROADCAST, { 3, { 3, 5, 7 } }, LK_CONTIG, { 3, { 3, 7, 4 } } },
    { "rank2_x_batched", LK_CONTIG, { 2, { 5, 7 } }, LK_NARROWED, { 3, { 3, 7, 4 } } },
    { "batched_k0", LK_CONTIG, { 3, { 2, 3, 0 } }, LK_CONTIG, { 3, { 2, 0, 4 } } },
    { "batch_empty", LK_CONTIG, { 3, { 0, 3, 2 } }, LK_CONTIG, { 3, { 0, 2, 4 } } },
    { "rank5", LK_CONTIG, { 5, { 2, 1, 2, 3, 4 } }, LK_CONTIG, { 5, { 1, 2, 1, 4, 5 } } },
    { "gemv_m1_k576_n1536_bT", LK_CONTIG, { 2, { 1, 576 } }, LK_TRANSPOSED, { 2, { 576, 1536 } } },
    { "gemv_m1_k1000_n1001", LK_CONTIG, { 2, { 1, 1000 } }, LK_CONTIG, { 2, { 1000, 1001 } } },
    { "gemv_m1_k7_n40_bT", LK_CONTIG, { 2, { 1, 7 } }, LK_TRANSPOSED, { 2, { 7, 40 } } },
    { "gemv_m2_k33_n300_bT", LK_CONTIG, { 2, { 2, 33 } }, LK_TRANSPOSED, { 2, { 33, 300 } } },
    { "gemv_m2_k16_n257", LK_CONTIG, { 2, { 2, 16 } }, LK_CONTIG, { 2, { 16, 257 } } },
    { "gemv_m3_k17_n263", LK_CONTIG, { 2, { 3, 17 } }, LK_CONTIG, { 2, { 17, 263 } } },
    { "gemv_m3_k24_n17_bT", LK_CONTIG, { 2, { 3, 24 } }, LK_TRANSPOSED, { 2, { 24, 17 } } },
    { "gemv_m4_k100_n77_bT", LK_CONTIG, { 2, { 4, 100 } }, LK_TRANSPOSED, { 2, { 100, 77 } } },
    { "gemv_m4_k15_n9_aT", LK_TRANSPOSED, { 2, { 4, 15 } }, LK_CONTIG, { 2, { 15, 9 } } },
    { "gemv_m4_k31_n33_aT_bT", LK_TRANSPOSED, { 2, { 4, 31 } }, LK_TRANSPOSED, { 2, { 31, 33 } } },
    { "gemv_m5_k40_n70_bT", LK_CONTIG, { 2, { 5, 40 } }, LK_TRANSPOSED, { 2, { 40, 70 } } },
    { "gemv_m1_narrowed", LK_NARROWED, { 2, { 1, 45 } }, LK_NARROWED, { 2, { 45, 270 } } },
    { "gemv_m1_k1_n50", LK_CONTIG, { 2, { 1, 1 } }, LK_NARROWED, { 2, { 1, 50 } } },
    { "gemv_m2_k64_n1", LK_CONTIG, { 2, { 2, 64 } }, LK_NARROWED, { 2, { 64, 1 } } },
    { "gemv_batched_bT", LK_CONTIG, { 3, { 3, 1, 40 } }, LK_TRANSPOSED, { 3, { 3, 40, 20 } } },
    { "gemv_batched_rev", LK_REVERSED, { 3, { 5, 2, 19 } }, LK_REVERSED, { 3, { 5, 19, 23 } } },
    { "gemv_batch_broadcast_aT", LK_TRANSPOSED, { 4, { 2, 3, 1, 24 } }, LK_CONTIG, { 2, { 24, 50 } } },
};
#define NMCASES ((int)(sizeof mcases / sizeof mcases[0]))

static void matmul_case(wk_dtype dt, const mcase *C)
{
    t_arr va, vb;
    wk_tensor *a = t_make(dt, C->ka, C->sa, T_GEN(G_UNIFORM, -1, 1), &va);
    wk_tensor *b = t_make(dt, C->kb, C->sb, T_GEN(G_UNIFORM, -1, 1), &vb);
    if (!a || !b) return;
    t_cover("matmul", dt);
    int ra = C->sa.rank, rb = C->sb.rank;
    int64_t m = C->sa.dims[ra - 2], k = C->sa.dims[ra - 1], n = C->sb.dims[rb - 1];
    wk_shape ba = { ra - 2, { 0 } }, bb = { rb - 2, { 0 } }, bo, os;
    for (int i = 0; i < ra - 2; i++) ba.dims[i] = C->sa.dims[i];
    for (int i = 0; i < rb - 2; i++) bb.dims[i] = C->sb.dims[i];
    if (!t_bcast_shape(ba, bb, &bo)) { t_fail("bad test shapes"); return; }
    os = bo;
    os.dims[os.rank++] = m;
    os.dims[os.rank++] = n;
    wk_tensor *y = t_own(wk_matmul(a, b));
    if (!y) { t_fail("matmul returned NULL: %s", wk_last_error()); return; }
    int64_t nb = t_numel(bo), no = t_numel(os);
    double *ref = t_mem((size_t)no * sizeof(double) + 8);
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t ia = t_bcast_index(bo, ba, bi), ib = t_bcast_index(bo, bb, bi);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += t_get(dt, va.p, (ia * m + i) * k + p) * t_get(dt, vb.p, (ib * k + p) * n + j);
                ref[(bi * m + i) * n + j] = s;
            }
    }
    t_check_close("matmul", y, os, dt, ref, t_bound_acc(dt));
}

/* Every bit pattern of a 16-bit dtype in b (b[p][j] = pattern j * k + p,
 * stored [n][k] and transposed when dot, else [k][n]), times one-hot rows
 * of a: each output is one element of b (or NaN where another element of
 * its column is infinite or NaN: 0 x inf). */
static void gemv_bits_case(wk_dtype dt, bool dot, int64_t k)
{
    const int64_t n = (65536 + k - 1) / k, m = 3;
    const int64_t hot[3] = { 0, k / 2, k - 1 };
    uint16_t *bv = t_mem((size_t)(k * n) * sizeof *bv), *av = t_mem((size_t)(m * k) * sizeof *av);
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++) {
            uint16_t bits = (uint16_t)((j * k + p) & 0xffff);
            bv[dot ? j * k + p : p * n + j] = bits;
        }
    for (int64_t i = 0; i < m; i++) av[i * k + hot[i]] = dt == WK_F16 ? 0x3c00 : 0x3f80;
    wk_tensor *a = T_NEED(wk_from_host(t_dev(), dt, WK_SHAPE(m, k), av));
    wk_tensor *bs = T_NEED(wk_from_host(t_dev(), dt, dot ? WK_SHAPE(n, k) : WK_SHAPE(k, n), bv));
    wk_tensor *b = bs && dot ? T_NEED(wk_transpose(bs, 0, 1)) : bs;
    if (!a || !b) return;
    double *ref = t_mem((size_t)(m * n) * sizeof *ref);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += t_get(dt, av, i * k + p) * t_get(dt, bv, dot ? j * k + p : p * n + j);
            ref[i * n + j] = s;
        }
    wk_tensor *y = t_own(wk_matmul(a, b));
    t_check_close("matmul gemv bits", y, WK_SHAPE(m, n), dt, ref, 0);
}

/* Infinities of either sign and NaN in the sums: +inf, -inf, NaN (both). */
static void gemv_inf_case(wk_dtype dt, bool dot)
{
    const int64_t k = 19, n = 4;
    double *bd = t_mem((size_t)(k * n) * sizeof *bd);
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++) bd[p * n + j] = 0.25 * (double)(p % 5 + 1);
    bd[3 * n + 0] = INFINITY;               /* column 0: +inf */
    bd[17 * n + 1] = -INFINITY;             /* column 1: -inf (in the scalar tail) */
    bd[2 * n + 2] = INFINITY;               /* column 2: +inf - inf = NaN */
    bd[9 * n + 2] = -INFINITY;
    bd[11 * n + 3] = NAN;                   /* column 3: NaN */
    t_arr av = t_arr_new(dt, WK_SHAPE(1, k)), bv = t_arr_new(dt, WK_SHAPE(k, n));
    for (int64_t p = 0; p < k; p++) t_put(dt, av.p, p, 0.5 + 0.125 * (double)(p % 3));
    for (int64_t i = 0; i < k * n; i++) t_put(dt, bv.p, i, bd[i]);
    wk_tensor *a = t_make_from(&av, LK_CONTIG), *b = t_make_from(&bv, dot ? LK_TRANSPOSED : LK_CONTIG);
    if (!a || !b) return;
    double ref[4];
    for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += t_get(dt, av.p, p) * t_get(dt, bv.p, p * n + j);
        ref[j] = s;
    }
    wk_tensor *y = t_own(wk_matmul(a, b));
    t_check_close("matmul gemv inf", y, WK_SHAPE(1, n), dt, ref, 0);
}

T_SUITE(matmul)
{
    static const wk_dtype dts16[] = { WK_F16, WK_BF16 };
    for (int d = 0; d < 2; d++)
        for (int dot = 0; dot < 2; dot++) {
            if (t_case("matmul/%s/gemv_bits/%s", t_dt_name(dts16[d]), dot ? "dot" : "axpy")) {
                gemv_bits_case(dts16[d], dot, 16);
                gemv_bits_case(dts16[d], dot, 17);
            }
        }
    static const wk_dtype dtsi[] = { WK_F16, WK_BF16, WK_F32 };
    for (int d = 0; d < 3; d++)
        for (int dot = 0; dot < 2; dot++)
            if (t_case("matmul/%s/gemv_inf/%s", t_dt_name(dtsi[d]), dot ? "dot" : "axpy")) gemv_inf_case(dtsi[d], dot);
    static const wk_dtype dts[] = { WK_F16, WK_BF16, WK_F32, WK_F64 };
    for (int d = 0; d < 4; d++)
        for (int c = 0; c < NMCASES; c++)
            if (t_case("matmul/%s/%s", t_dt_name(dts[d]), mcases[c].name)) matmul_case(dts[d], &mcases[c]);
    /* k = 0 gives zeros even where the output storage held garbage before */
    if (t_case("matmul/f32/k0_is_zeros_repeatedly")) {
        for (int rep = 0; rep < 4; rep++) {
            wk_tensor *a = T_NEED(wk_empty(t_dev(), WK_F32, WK_SHAPE(64, 0)));
            wk_tensor *b = T_NEED(wk_empty(t_dev(), WK_F32, WK_SHAPE(0, 64)));
            wk_release(wk_full(t_dev(), WK_F32, WK_SHAPE(64, 64), 12345.0));  /* leave non-zero bytes behind */
            if (!a || !b) break;
            wk_tensor *y = t_own(wk_matmul(a, b));
            double *zero = t_mem(64 * 64 * sizeof(double));
            if (!y) { t_fail("matmul returned NULL: %s", wk_last_error()); break; }
            t_check_close("matmul", y, WK_SHAPE(64, 64), WK_F32, zero, 0);
        }
    }
}
