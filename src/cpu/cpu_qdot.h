/* cpu_qdot.h — what the integer qmatmul's files share (cpu_qdot.c, the
 * entry point and the AVX2 and C kernels; cpu_qdot_vnni.c, the AVX-512
 * VNNI kernels): the quantized rows of x, and the VNNI tile. */
#ifndef WK_CPU_QDOT_H
#define WK_CPU_QDOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wick.h"

/* unpacked weight rows (cpu_qdot.c's tasks) or the quantized rows of x */
typedef struct qd_rows {
    int8_t *q;          /* [rows, k]                                        */
    int16_t *sc, *mn;   /* [rows, k / 16] (weights of 256-blocks)           */
    float *d, *dm;      /* [rows, k / B]: weights d and m/dmin; x: d and s  */
    int16_t *bs;        /* x for q8_K: [rows, k / 16] sums of 16 quants     */
    int32_t *xs;        /* x for q8_0 / q8_1: [rows, k / 32] sums of quants */
} qd_rows;

/* The VNNI kernels (cpu_qdot_vnni.c). Rows of the weight go 16 to a
 * vector (a lane each), so one pair (weight row, row of x) is summed the
 * same way whatever the rows around it, in this order:
 *   acc = 0; for each block b: acc = fma((float)isum_b, dw_b * dx_b, acc)
 *   [then for q4_1 / q5_1: acc = fma(m_b, s_b, acc); for the 256-blocks
 *   with mins: acc = fma(-(float)msum_b, dmin_b * dx_b, acc)]
 * where isum_b (and msum_b) are the block's exact integer sums.
 *
 * wk_qdot_vnni_ok: the cpu has the instructions, the type has kernels and
 * the weight's row stride (bytes) allows them. */
bool wk_qdot_vnni_ok(wk_dtype dt, int64_t row_bytes);

/* Rows [0, nr) of the weight (nr <= 16; w: its first row's bytes, rs the
 * row stride in bytes; nbk blocks a row) against rows [i0, i0 + mi) of x
 * (quantized as the type pairs: a, k values a row): y[i * ys + r] for
 * i < mi, r < nr. Any mi; x's rows go 8 at a time. scratch (64-byte
 * aligned, wk_qdot_vnni_scratch bytes, or NULL) keeps the weight's
 * vectors for the passes after the first (the same values: the same
 * bits either way). */
void wk_qdot_vnni_tile(wk_dtype dt, const uint8_t *w, int64_t rs, int nr, int64_t nbk, const qd_rows *a, int64_t k,
                       int64_t i0, int64_t mi, float *y, int64_t ys, void *scratch);
size_t wk_qdot_vnni_scratch(wk_dtype dt, int64_t nbk);

/* One block of x (32 values for q8_0 / q8_1, 256 for q8_K) quantized
 * with AVX-512 to the bits of the reference quantizer: q, d (q8_0 / q8_1:
 * the f16 scale widened), xs (q8_0 / q8_1: the sum of q), bs (q8_K: the
 * sums of 16). False where it declines (no AVX-512, a non-finite value, a
 * tiny scale): the caller quantizes that block with the reference. */
bool wk_qdot_quant_block(wk_dtype act, const float *x, int8_t *q, float *d, int32_t *xs, int16_t *bs);

#endif
