/* test_matmul.c — wk_matmul on f16, bf16, f32 and f64: sizes with m, n or
 * k of 1, odd sizes, k = 0 (zeros), m or n = 0 (empty), a large product
 * (blocked / BLAS paths), transposed and narrowed operands, batches,
 * broadcast batch dims (size-1 dims, stride-0 views, a rank-2 operand
 * against a batched one). The reference is a naive triple loop in double;
 * the result must match it rounded to the dtype within the accumulating
 * bound.
 *
 * Case names: matmul/<dtype>/<shape case>.
 */
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

T_SUITE(matmul)
{
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
