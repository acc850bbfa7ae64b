/* test_quant.c — block-quantized dtypes (GGUF's q4_0 .. q8_k) as tensors:
 * their traits against GGUF's block sizes written out here (not taken
 * from the library), the layout rule (rank >= 1, last dim whole blocks,
 * views narrow or select rows only), the byte-moving ops that take them
 * (from_host, to_host, narrow, reshape, contiguous, copy, cat, stack,
 * copy_into, to_device), each checked byte for byte against a reference
 * built on the host from random bytes, and a clear error from every op
 * that does not take them: wk_supports answers false for every op name
 * but the quantized ops' (dequantize, quantize, qmatmul, qgather:
 * test_quant_ops.c),
 * and a representative call of each public op returns NULL or a status
 * whose message names the op and the dtype, leaving its destination
 * untouched.
 *
 * Case names: quant/<what>/<dtype>.
 */
#include <stdlib.h>
#include <string.h>
#include "test.h"

/* GGUF's block types (ggml's type traits): elements per block, bytes per block */
typedef struct qinfo {
    wk_dtype dt;
    const char *name;
    size_t block, bytes;
} qinfo;
static const qinfo QT[] = {
    { WK_Q4_0, "q4_0", 32, 18 },  { WK_Q4_1, "q4_1", 32, 20 },  { WK_Q5_0, "q5_0", 32, 22 },
    { WK_Q5_1, "q5_1", 32, 24 },  { WK_Q8_0, "q8_0", 32, 34 },  { WK_Q8_1, "q8_1", 32, 36 },
    { WK_Q2_K, "q2_k", 256, 84 }, { WK_Q3_K, "q3_k", 256, 110 }, { WK_Q4_K, "q4_k", 256, 144 },
    { WK_Q5_K, "q5_k", 256, 176 }, { WK_Q6_K, "q6_k", 256, 210 }, { WK_Q8_K, "q8_k", 256, 292 },
    { WK_IQ4_NL, "iq4_nl", 32, 18 }, { WK_IQ4_XS, "iq4_xs", 256, 136 }, { WK_IQ3_XXS, "iq3_xxs", 256, 98 },
    { WK_IQ3_S, "iq3_s", 256, 110 }, { WK_IQ2_XXS, "iq2_xxs", 256, 66 }, { WK_IQ2_XS, "iq2_xs", 256, 74 },
    { WK_IQ2_S, "iq2_s", 256, 82 },  { WK_IQ1_S, "iq1_s", 256, 50 },   { WK_IQ1_M, "iq1_m", 256, 56 },
};
#define NQ ((int)(sizeof QT / sizeof QT[0]))

/* another block dtype with q's block size: the k-th after q (k >= 1,
 * cyclically) among those with its block size */
static const qinfo *other_of(const qinfo *q, int k)
{
    int i = (int)(q - QT);
    while (k > 0) {
        i = (i + 1) % NQ;
        if (QT[i].block == q->block && &QT[i] != q) k--;
    }
    return &QT[i];
}

/* bytes of one row of cols elements */
static size_t row_bytes(const qinfo *q, int64_t cols) { return (size_t)cols / q->block * q->bytes; }

/* n random bytes from the case's generator (owned by the case) */
static unsigned char *rand_bytes(size_t n)
{
    unsigned char *p = t_mem(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(t_rng_next(t_r()) >> 56);
    return p;
}

/* a [rows, cols] tensor of q from random bytes; *host receives them */
static wk_tensor *qmake(const qinfo *q, int64_t rows, int64_t cols, unsigned char **host)
{
    *host = rand_bytes(row_bytes(q, cols) * (size_t)rows);
    return T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(rows, cols), *host));
}

/* t's bytes (wk_to_host) must be the n bytes at ref; wk_tensor_nbytes(t)
 * must be n, and to_host must write nothing past n bytes. */
static bool check_bytes(const char *what, const wk_tensor *t, const unsigned char *ref, size_t n)
{
    if (!t) return false;
    size_t nb = wk_tensor_nbytes(t);
    if (nb != n) {
        t_fail("%s: wk_tensor_nbytes is %zu, expected %zu", what, nb, n);
        return false;
    }
    unsigned char *got = t_mem(n + 64);
    memset(got, 0xA5, n + 64);
    wk_status st = wk_to_host(t, got, n + 64);
    if (st != WK_OK) {
        t_fail("%s: wk_to_host returned %s: %s", what, wk_status_name(st), wk_last_error());
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (got[i] != ref[i]) {
            t_fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, got[i], ref[i]);
            return false;
        }
    for (size_t i = n; i < n + 64; i++)
        if (got[i] != 0xA5) {
            t_fail("%s: wk_to_host wrote byte %zu, past the %zu it owes", what, i, n);
            return false;
        }
    return true;
}

static bool check_shape(const char *what, const wk_tensor *t, wk_dtype dt, wk_shape want)
{
    if (!t) return false;
    if (wk_tensor_dtype(t) != dt || !t_shape_eq(wk_tensor_shape(t), want)) {
        char ws[128];
        snprintf(ws, sizeof ws, "%s", t_shape_str(want));
        t_fail("%s: got %s %s, expected %s %s", what, wk_dtype_name(wk_tensor_dtype(t)), t_shape_str(wk_tensor_shape(t)),
               wk_dtype_name(dt), ws);
        return false;
    }
    return true;
}

/* the call must have failed (NULL tensor) with status want (WK_STATUS_COUNT:
 * any error) and a message naming w1 and w2 */
static void refused_(const char *expr, wk_tensor *r, wk_status want, const char *w1, const char *w2)
{
    if (r) {
        t_own(r);
        t_fail("%s returned a tensor", expr);
        return;
    }
    wk_status got = wk_last_status();
    if (want == WK_STATUS_COUNT) want = got == WK_OK ? WK_ERR_UNSUPPORTED : got;
    t_check_error(expr, want, got, w1, w2, (const char *)NULL);
}
static void refused_st_(const char *expr, wk_status got, wk_status want, const char *w1, const char *w2)
{
    if (want == WK_STATUS_COUNT) want = got == WK_OK ? WK_ERR_UNSUPPORTED : got;
    t_check_error(expr, want, got, w1, w2, (const char *)NULL);
}
#define REFUSED(expr, want, w1, w2) refused_(#expr, (expr), (want), (w1), (w2))
#define REFUSED_ST(expr, want, w1, w2) refused_st_(#expr, (expr), (want), (w1), (w2))

/* ---- traits ----------------------------------------------------------------- */

static void traits(void)
{
    if (t_case("quant/traits/dtype_list")) {
        /* the block dtypes are exactly the ones after the dense ones, in GGUF's order */
        T_CHECK(WK_DTYPE_COUNT - WK_DENSE_DTYPE_COUNT == NQ, "%d block dtypes in wk_dtype, the test knows %d",
                WK_DTYPE_COUNT - WK_DENSE_DTYPE_COUNT, NQ);
        for (int i = 0; i < NQ; i++)
            T_CHECK((int)QT[i].dt == WK_DENSE_DTYPE_COUNT + i, "%s is dtype %d, expected %d", QT[i].name, (int)QT[i].dt,
                    WK_DENSE_DTYPE_COUNT + i);
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            wk_dtype dt = (wk_dtype)d;
            T_CHECK(!wk_dtype_is_quantized(dt), "%s is quantized", wk_dtype_name(dt));
            T_CHECK(wk_dtype_block_size(dt) == 1, "block size of %s is %zu, expected 1", wk_dtype_name(dt),
                    wk_dtype_block_size(dt));
            T_CHECK(wk_dtype_block_bytes(dt) == t_size(dt) && wk_dtype_size(dt) == t_size(dt),
                    "%s: block bytes %zu, size %zu, expected %zu", wk_dtype_name(dt), wk_dtype_block_bytes(dt),
                    wk_dtype_size(dt), t_size(dt));
        }
        const wk_dtype bad[] = { WK_DTYPE_COUNT, (wk_dtype)(WK_DTYPE_COUNT + 7), (wk_dtype)-1 };
        for (int i = 0; i < 3; i++) {
            T_CHECK(wk_dtype_block_size(bad[i]) == 0 && wk_dtype_block_bytes(bad[i]) == 0 && wk_dtype_size(bad[i]) == 0,
                    "invalid dtype %d: block size %zu, block bytes %zu, size %zu (expected 0)", (int)bad[i],
                    wk_dtype_block_size(bad[i]), wk_dtype_block_bytes(bad[i]), wk_dtype_size(bad[i]));
            T_CHECK(!wk_dtype_is_quantized(bad[i]), "invalid dtype %d is quantized", (int)bad[i]);
        }
        wk_dtype out = WK_F32;
        T_CHECK(!wk_dtype_from_name("q4", &out) && !wk_dtype_from_name("q4_k_m", &out) && !wk_dtype_from_name("q9_0", &out),
                "wk_dtype_from_name accepted a name that is no dtype");
    }
    for (int i = 0; i < NQ; i++) {
        const qinfo *q = &QT[i];
        if (!t_case("quant/traits/%s", q->name)) continue;
        T_CHECK(wk_dtype_block_size(q->dt) == q->block, "block size %zu, GGUF's is %zu", wk_dtype_block_size(q->dt),
                q->block);
        T_CHECK(wk_dtype_block_bytes(q->dt) == q->bytes, "block bytes %zu, GGUF's are %zu", wk_dtype_block_bytes(q->dt),
                q->bytes);
        T_CHECK(!strcmp(wk_dtype_name(q->dt), q->name), "name \"%s\", expected \"%s\"", wk_dtype_name(q->dt), q->name);
        wk_dtype back = WK_F32;
        T_CHECK(wk_dtype_from_name(q->name, &back) && back == q->dt, "wk_dtype_from_name(\"%s\") gave %d, expected %d",
                q->name, (int)back, (int)q->dt);
        T_CHECK(wk_dtype_size(q->dt) == 0, "wk_dtype_size is %zu, expected 0", wk_dtype_size(q->dt));
        T_CHECK(wk_dtype_is_quantized(q->dt), "wk_dtype_is_quantized is false");
        T_CHECK(!wk_dtype_is_float(q->dt), "wk_dtype_is_float is true");
    }
}

/* ---- creation, transfer, layout rule ------------------------------------------ */

static void roundtrips(const qinfo *q)
{
    const int64_t B = (int64_t)q->block;
    if (t_case("quant/roundtrip/%s", q->name)) {
        const int64_t rows = t_rng_int(t_r(), 1, 5), cols = B * t_rng_int(t_r(), 1, 3);
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        const size_t n = row_bytes(q, cols) * (size_t)rows;
        if (check_shape("from_host", t, q->dt, WK_SHAPE(rows, cols))) {
            T_CHECK(wk_tensor_numel(t) == rows * cols, "numel %lld, expected %lld", (long long)wk_tensor_numel(t),
                    (long long)(rows * cols));
            T_CHECK(wk_tensor_is_contiguous(t), "a fresh tensor is not contiguous");
            check_bytes("from_host/to_host", t, h, n);
            /* a buffer one byte short is refused and left alone */
            unsigned char *small = t_mem(n);
            memset(small, 0x3C, n);
            REFUSED_ST(wk_to_host(t, small, n - 1), WK_ERR_ARGUMENT, "to_host", NULL);
            bool untouched = true;
            for (size_t i = 0; i < n; i++) untouched &= small[i] == 0x3C;
            T_CHECK(untouched, "to_host wrote into a buffer it refused");
        }
        /* rank 1 and rank 3 */
        unsigned char *h1 = rand_bytes(2 * q->bytes);
        wk_tensor *r1 = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(2 * B), h1));
        if (check_shape("rank 1", r1, q->dt, WK_SHAPE(2 * B))) check_bytes("rank 1", r1, h1, 2 * q->bytes);
        wk_tensor *r3 = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(1, rows, cols), h));
        if (check_shape("rank 3", r3, q->dt, WK_SHAPE(1, rows, cols))) check_bytes("rank 3", r3, h, n);
        /* empty tensors: no bytes */
        wk_tensor *e0 = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(0, B), h));
        if (e0) {
            T_CHECK(wk_tensor_nbytes(e0) == 0, "nbytes of [0, %lld] is %zu", (long long)B, wk_tensor_nbytes(e0));
            T_OK(wk_to_host(e0, NULL, 0));
        }
        wk_tensor *e1 = T_NEED(wk_empty(t_dev(), q->dt, WK_SHAPE(3, 0)));
        if (e1) T_CHECK(wk_tensor_nbytes(e1) == 0, "nbytes of [3, 0] is %zu", wk_tensor_nbytes(e1));
        /* wk_empty takes the shape too */
        wk_tensor *em = T_NEED(wk_empty(t_dev(), q->dt, WK_SHAPE(rows, cols)));
        if (check_shape("empty", em, q->dt, WK_SHAPE(rows, cols)))
            T_CHECK(wk_tensor_nbytes(em) == n, "nbytes of empty is %zu, expected %zu", wk_tensor_nbytes(em), n);
    }
    if (t_case("quant/nbytes/%s", q->name)) {
        /* [rows, cols]: rows x cols / block x block bytes, for several shapes */
        static const int64_t rows_[] = { 1, 3, 7, 64 };
        for (int r = 0; r < 4; r++)
            for (int64_t k = 1; k <= 4; k++) {
                wk_tensor *t = T_NEED(wk_empty(t_dev(), q->dt, WK_SHAPE(rows_[r], k * B)));
                size_t want = (size_t)rows_[r] * (size_t)k * q->bytes;
                T_CHECK(!t || wk_tensor_nbytes(t) == want, "nbytes of [%lld, %lld] is %zu, expected %zu",
                        (long long)rows_[r], (long long)(k * B), t ? wk_tensor_nbytes(t) : 0, want);
            }
    }
    if (t_case("quant/bad_shapes/%s", q->name)) {
        unsigned char *h = rand_bytes(8 * q->bytes);
        const int64_t bad_last[] = { 1, B / 2, B - 1, B + 1, 3 * B / 2 };
        for (int i = 0; i < 5; i++) {
            REFUSED(wk_from_host(t_dev(), q->dt, WK_SHAPE(2, bad_last[i]), h), WK_ERR_SHAPE, q->name, NULL);
            REFUSED(wk_empty(t_dev(), q->dt, WK_SHAPE(bad_last[i])), WK_ERR_SHAPE, q->name, NULL);
        }
        REFUSED(wk_from_host(t_dev(), q->dt, WK_SCALAR, h), WK_ERR_SHAPE, q->name, NULL);
        REFUSED(wk_empty(t_dev(), q->dt, WK_SCALAR), WK_ERR_SHAPE, q->name, NULL);
        /* whole blocks in the last dim, whatever the other dims */
        wk_tensor *ok = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(2, 1, 2, B), h));
        if (ok) check_bytes("[2, 1, 2, block]", ok, h, 4 * q->bytes);
    }
}

static void views(const qinfo *q)
{
    const int64_t B = (int64_t)q->block;
    if (t_case("quant/narrow_rows/%s", q->name)) {
        const int64_t rows = 6, cols = 2 * B, start = t_rng_int(t_r(), 0, 4), len = t_rng_int(t_r(), 1, rows - start);
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        const size_t rb = row_bytes(q, cols);
        wk_tensor *v = t ? T_NEED(wk_narrow(t, 0, start, len)) : NULL;
        if (check_shape("narrow rows", v, q->dt, WK_SHAPE(len, cols))) {
            T_CHECK(wk_tensor_same_storage(v, t), "narrow copied");
            check_bytes("narrow rows", v, h + start * rb, (size_t)len * rb);
        }
        /* a narrow of a narrow, and an empty one */
        wk_tensor *v2 = v ? T_NEED(wk_narrow(v, 0, len - 1, 1)) : NULL;
        if (v2) check_bytes("narrow of narrow", v2, h + (start + len - 1) * rb, rb);
        wk_tensor *v0 = t ? T_NEED(wk_narrow(t, 0, 3, 0)) : NULL;
        if (v0) T_CHECK(wk_tensor_nbytes(v0) == 0, "an empty narrow has %zu bytes", wk_tensor_nbytes(v0));
    }
    if (t_case("quant/narrow_blocks/%s", q->name)) {
        /* a narrow on the last dim by whole blocks keeps the rule */
        const int64_t rows = 4, cols = 3 * B;
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        const size_t rb = row_bytes(q, cols);
        wk_tensor *v = t ? T_NEED(wk_narrow(t, 1, B, 2 * B)) : NULL;
        if (check_shape("narrow blocks", v, q->dt, WK_SHAPE(rows, 2 * B))) {
            T_CHECK(!wk_tensor_is_contiguous(v), "a column window of a [4, 3 blocks] tensor claims to be contiguous");
            unsigned char *ref = t_mem((size_t)rows * 2 * q->bytes);
            for (int64_t r = 0; r < rows; r++) memcpy(ref + r * 2 * q->bytes, h + r * rb + q->bytes, 2 * q->bytes);
            check_bytes("narrow blocks", v, ref, (size_t)rows * 2 * q->bytes);
        }
    }
    if (t_case("quant/refused_views/%s", q->name)) {
        unsigned char *h;
        wk_tensor *t = qmake(q, 4, 2 * B, &h);
        if (!t) return;
        REFUSED(wk_narrow(t, 1, 0, B / 2), WK_ERR_SHAPE, "narrow", q->name);
        REFUSED(wk_narrow(t, 1, 1, B), WK_ERR_SHAPE, "narrow", q->name);        /* whole length, unaligned start */
        REFUSED(wk_narrow(t, -1, B, 1), WK_ERR_SHAPE, "narrow", q->name);
        REFUSED(wk_transpose(t, 0, 1), WK_ERR_SHAPE, "transpose", q->name);
        REFUSED(wk_permute(t, (const int[]){ 1, 0 }), WK_ERR_SHAPE, "permute", q->name);
        REFUSED(wk_unsqueeze(t, 2), WK_ERR_SHAPE, "unsqueeze", q->name);           /* last dim 1 */
        REFUSED(wk_reshape(t, WK_SHAPE(4 * 2 * B / 2, 2)), WK_ERR_SHAPE, "reshape", q->name);
        REFUSED(wk_reshape(t, WK_SHAPE(8, -1, B / 2)), WK_ERR_SHAPE, "reshape", q->name);
        wk_tensor *sq = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(B, B), rand_bytes(B * q->bytes)));
        if (sq) REFUSED(wk_transpose(sq, 0, 1), WK_ERR_SHAPE, "transpose", q->name);   /* a square one too */
        /* the refusals leave t alone */
        check_bytes("after refused views", t, h, 4 * row_bytes(q, 2 * B));
    }
    if (t_case("quant/reshape_rows/%s", q->name)) {
        const int64_t rows = 6, cols = 2 * B;
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        const size_t n = (size_t)rows * row_bytes(q, cols);
        if (!t) return;
        wk_tensor *a = T_NEED(wk_reshape(t, WK_SHAPE(2, 3, cols)));
        if (check_shape("reshape [2, 3, cols]", a, q->dt, WK_SHAPE(2, 3, cols))) {
            T_CHECK(wk_tensor_same_storage(a, t), "a row-keeping reshape copied");
            check_bytes("reshape [2, 3, cols]", a, h, n);
        }
        wk_tensor *b = T_NEED(wk_reshape(t, WK_SHAPE(-1, B)));          /* rows of one block */
        if (check_shape("reshape [-1, block]", b, q->dt, WK_SHAPE(rows * 2, B))) check_bytes("reshape [-1, block]", b, h, n);
        wk_tensor *f = T_NEED(wk_flatten(t, 0, 1));
        if (check_shape("flatten", f, q->dt, WK_SHAPE(rows * cols))) check_bytes("flatten", f, h, n);
        wk_tensor *u = T_NEED(wk_unsqueeze(t, 0));
        wk_tensor *s = u ? T_NEED(wk_squeeze(u, 0)) : NULL;
        if (check_shape("unsqueeze/squeeze", s, q->dt, WK_SHAPE(rows, cols))) check_bytes("unsqueeze/squeeze", s, h, n);
        /* a reshape of a narrowed rows view keeps its bytes */
        wk_tensor *v = T_NEED(wk_narrow(t, 0, 2, 4));
        wk_tensor *vr = v ? T_NEED(wk_reshape(v, WK_SHAPE(2, 2, cols))) : NULL;
        if (check_shape("reshape of narrowed rows", vr, q->dt, WK_SHAPE(2, 2, cols)))
            check_bytes("reshape of narrowed rows", vr, h + 2 * row_bytes(q, cols), 4 * row_bytes(q, cols));
        /* a reshape that cannot be a view of a block-column window copies, bytes intact */
        wk_tensor *w = T_NEED(wk_narrow(t, 1, B, B));                      /* [6, B], row stride 2B */
        wk_tensor *wr = w ? t_own(wk_reshape(w, WK_SHAPE(3, 2 * B))) : NULL;
        if (w && !wr) {
            t_fail("reshape of a block-column window to [3, 2 blocks] failed: %s", wk_last_error());
        } else if (check_shape("reshape of a column window", wr, q->dt, WK_SHAPE(3, 2 * B))) {
            unsigned char *ref = t_mem((size_t)rows * q->bytes);
            for (int64_t r = 0; r < rows; r++) memcpy(ref + r * q->bytes, h + r * row_bytes(q, cols) + q->bytes, q->bytes);
            check_bytes("reshape of a column window", wr, ref, (size_t)rows * q->bytes);
        }
    }
    if (t_case("quant/broadcast_rows/%s", q->name)) {
        /* one row broadcast to several (row strides 0: still whole blocks) */
        unsigned char *h;
        wk_tensor *t = qmake(q, 1, 2 * B, &h);
        wk_tensor *b = t ? t_own(wk_broadcast_as(t, WK_SHAPE(3, 2 * B))) : NULL;
        if (!b) {
            t_fail("broadcast of a [1, 2 blocks] row to 3 rows failed: %s", wk_last_error());
        } else {
            unsigned char *ref = t_mem(6 * q->bytes);
            for (int r = 0; r < 3; r++) memcpy(ref + r * 2 * q->bytes, h, 2 * q->bytes);
            check_bytes("broadcast rows", b, ref, 6 * q->bytes);
            wk_tensor *c = T_NEED(wk_contiguous(b));
            if (c) check_bytes("contiguous of broadcast rows", c, ref, 6 * q->bytes);
        }
    }
}

/* ---- the copies ------------------------------------------------------------------ */

static void copies(const qinfo *q)
{
    const int64_t B = (int64_t)q->block;
    if (t_case("quant/contiguous/%s", q->name)) {
        const int64_t rows = 5, cols = 3 * B;
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        const size_t rb = row_bytes(q, cols);
        const int64_t r0 = t_rng_int(t_r(), 0, 3), nr = t_rng_int(t_r(), 1, rows - r0);
        /* narrowed rows: already contiguous (a view of the same storage) */
        wk_tensor *v = t ? T_NEED(wk_narrow(t, 0, r0, nr)) : NULL;
        wk_tensor *c = v ? T_NEED(wk_contiguous(v)) : NULL;
        if (check_shape("contiguous of rows", c, q->dt, WK_SHAPE(nr, cols))) {
            T_CHECK(wk_tensor_is_contiguous(c), "contiguous() result is not contiguous");
            check_bytes("contiguous of rows", c, h + r0 * rb, (size_t)nr * rb);
        }
        /* narrowed rows and blocks: a real copy */
        const int64_t b0 = t_rng_int(t_r(), 0, 1), nb = t_rng_int(t_r(), 1, 3 - b0);
        wk_tensor *w = v ? T_NEED(wk_narrow(v, 1, b0 * B, nb * B)) : NULL;
        unsigned char *ref = t_mem((size_t)(nr * nb) * q->bytes);
        for (int64_t r = 0; r < nr; r++)
            memcpy(ref + r * nb * q->bytes, h + (r0 + r) * rb + b0 * q->bytes, (size_t)nb * q->bytes);
        wk_tensor *cw = w ? T_NEED(wk_contiguous(w)) : NULL;
        if (check_shape("contiguous of a window", cw, q->dt, WK_SHAPE(nr, nb * B))) {
            T_CHECK(wk_tensor_is_contiguous(cw), "contiguous() of a window is not contiguous");
            const bool dense = nb == 3 || nr == 1;      /* then the window is contiguous already: a view */
            T_CHECK(dense || !wk_tensor_same_storage(cw, t), "contiguous() of a strided window did not copy");
            T_CHECK(dense || wk_tensor_offset(cw) == 0, "contiguous() copy has offset %lld", (long long)wk_tensor_offset(cw));
            check_bytes("contiguous of a window", cw, ref, (size_t)(nr * nb) * q->bytes);
        }
        wk_tensor *cp = w ? T_NEED(wk_copy(w)) : NULL;
        if (check_shape("copy of a window", cp, q->dt, WK_SHAPE(nr, nb * B))) {
            T_CHECK(!wk_tensor_same_storage(cp, t), "copy shares storage");
            T_CHECK(wk_tensor_is_contiguous(cp), "copy is not contiguous");
            check_bytes("copy of a window", cp, ref, (size_t)(nr * nb) * q->bytes);
        }
        wk_tensor *cv = v ? T_NEED(wk_copy(v)) : NULL;
        if (check_shape("copy of rows", cv, q->dt, WK_SHAPE(nr, cols))) {
            T_CHECK(!wk_tensor_same_storage(cv, t), "copy shares storage");
            check_bytes("copy of rows", cv, h + r0 * rb, (size_t)nr * rb);
        }
        /* to_dtype to its own dtype is a copy */
        wk_tensor *td = w ? T_NEED(wk_to_dtype(w, q->dt)) : NULL;
        if (check_shape("to_dtype to itself", td, q->dt, WK_SHAPE(nr, nb * B)))
            check_bytes("to_dtype to itself", td, ref, (size_t)(nr * nb) * q->bytes);
    }
    if (t_case("quant/cat/%s", q->name)) {
        const int64_t cols = 2 * B, ra = t_rng_int(t_r(), 1, 4), rb_ = t_rng_int(t_r(), 1, 4);
        const size_t rb = row_bytes(q, cols);
        unsigned char *ha, *hb;
        wk_tensor *a = qmake(q, ra, cols, &ha), *b = qmake(q, rb_, cols, &hb);
        if (!a || !b) return;
        /* dim 0: a's rows then b's */
        wk_tensor *c = T_NEED(wk_cat((wk_tensor *const[]){ a, b }, 2, 0));
        unsigned char *ref = t_mem((size_t)(ra + rb_) * rb);
        memcpy(ref, ha, (size_t)ra * rb);
        memcpy(ref + ra * rb, hb, (size_t)rb_ * rb);
        if (check_shape("cat dim 0", c, q->dt, WK_SHAPE(ra + rb_, cols))) check_bytes("cat dim 0", c, ref, (size_t)(ra + rb_) * rb);
        /* dim 0 of strided windows (second block of each row) and an empty part */
        wk_tensor *wa = T_NEED(wk_narrow(a, 1, B, B)), *wb = T_NEED(wk_narrow(b, 1, B, B));
        wk_tensor *e = T_NEED(wk_narrow(a, 0, 0, 0));
        wk_tensor *we = e ? T_NEED(wk_narrow(e, 1, 0, B)) : NULL;
        if (wa && wb && we) {
            wk_tensor *cw = T_NEED(wk_cat((wk_tensor *const[]){ wa, we, wb }, 3, 0));
            unsigned char *rw = t_mem((size_t)(ra + rb_) * q->bytes);
            for (int64_t r = 0; r < ra; r++) memcpy(rw + r * q->bytes, ha + r * rb + q->bytes, q->bytes);
            for (int64_t r = 0; r < rb_; r++) memcpy(rw + (ra + r) * q->bytes, hb + r * rb + q->bytes, q->bytes);
            if (check_shape("cat of windows", cw, q->dt, WK_SHAPE(ra + rb_, B)))
                check_bytes("cat of windows", cw, rw, (size_t)(ra + rb_) * q->bytes);
        }
        /* the last dim, by whole blocks: each row is a's row, b's row, a's row again */
        const int64_t k = ra < rb_ ? ra : rb_;
        wk_tensor *ak = T_NEED(wk_narrow(a, 0, 0, k)), *bk = T_NEED(wk_narrow(b, 0, 0, k));
        wk_tensor *cl = ak && bk ? T_NEED(wk_cat((wk_tensor *const[]){ ak, bk, ak }, 3, 1)) : NULL;
        unsigned char *rl = t_mem((size_t)k * 3 * rb);
        for (int64_t r = 0; r < k; r++) {
            memcpy(rl + r * 3 * rb, ha + r * rb, rb);
            memcpy(rl + r * 3 * rb + rb, hb + r * rb, rb);
            memcpy(rl + r * 3 * rb + 2 * rb, ha + r * rb, rb);
        }
        if (check_shape("cat last dim", cl, q->dt, WK_SHAPE(k, 3 * cols))) check_bytes("cat last dim", cl, rl, (size_t)k * 3 * rb);
        /* stack of a's and b's first rows: a new leading dim */
        wk_tensor *a1 = T_NEED(wk_narrow(a, 0, 0, 1)), *a2 = T_NEED(wk_narrow(b, 0, 0, 1));
        memcpy(rl, ha, rb);
        memcpy(rl + rb, hb, rb);
        wk_tensor *s = T_NEED(wk_stack((wk_tensor *const[]){ a1, a2 }, 2, 0));
        if (check_shape("stack", s, q->dt, WK_SHAPE(2, 1, cols))) check_bytes("stack", s, rl, 2 * rb);
        /* two block dtypes, or a block dtype and a dense one, do not mix */
        const qinfo *o = other_of(q, 1);
        wk_tensor *x = T_NEED(wk_empty(t_dev(), o->dt, WK_SHAPE(1, cols)));
        wk_tensor *f = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, cols)));
        if (x) REFUSED(wk_cat((wk_tensor *const[]){ a, x }, 2, 0), WK_ERR_DTYPE, q->name, o->name);
        if (f) REFUSED(wk_cat((wk_tensor *const[]){ f, a }, 2, 0), WK_ERR_DTYPE, q->name, "f32");
    }
    if (t_case("quant/copy_into/%s", q->name)) {
        const int64_t rows = 4, cols = 2 * B;
        const size_t rb = row_bytes(q, cols);
        unsigned char *hd, *hs;
        wk_tensor *d = qmake(q, rows, cols, &hd), *s = qmake(q, rows, cols, &hs);
        if (!d || !s) return;
        T_OK(wk_copy_into(d, s));
        check_bytes("copy_into whole", d, hs, rows * rb);
        check_bytes("copy_into left its source alone", s, hs, rows * rb);
        /* into rows 1..2 of a fresh tensor, from a strided source view: the other rows keep their bytes */
        unsigned char *h2;
        wk_tensor *d2 = qmake(q, rows, cols, &h2);
        wk_tensor *dv = d2 ? T_NEED(wk_narrow(d2, 0, 1, 2)) : NULL;
        wk_tensor *s3 = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(2, 2 * cols), rand_bytes(4 * rb)));
        wk_tensor *sv = s3 ? T_NEED(wk_narrow(s3, 1, cols, cols)) : NULL;       /* right half of each row */
        if (dv && sv) {
            unsigned char *srcb = t_mem(4 * rb);
            T_OK(wk_to_host(s3, srcb, 4 * rb));
            unsigned char *ref = t_mem(rows * rb);
            memcpy(ref, h2, rows * rb);
            for (int r = 0; r < 2; r++) memcpy(ref + (1 + r) * rb, srcb + r * 2 * rb + rb, rb);
            T_OK(wk_copy_into(dv, sv));
            check_bytes("copy_into a rows window", d2, ref, rows * rb);
        }
        /* into a block-column window, from one broadcast row */
        unsigned char *h3, *hr;
        wk_tensor *d3 = qmake(q, rows, cols, &h3);
        wk_tensor *row = qmake(q, 1, B, &hr);
        wk_tensor *col = d3 ? T_NEED(wk_narrow(d3, 1, 0, B)) : NULL;
        if (col && row) {
            T_OK(wk_copy_into(col, row));
            unsigned char *ref = t_mem(rows * rb);
            memcpy(ref, h3, rows * rb);
            for (int r = 0; r < rows; r++) memcpy(ref + r * rb, hr, q->bytes);
            check_bytes("copy_into a column window from a broadcast row", d3, ref, rows * rb);
        }
        /* another dtype's bytes are not copied in: an error, the destination unchanged */
        const qinfo *o = other_of(q, 5);
        wk_tensor *x = T_NEED(wk_empty(t_dev(), o->dt, WK_SHAPE(rows, cols)));
        wk_tensor *f = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(rows, cols)));
        if (x) REFUSED_ST(wk_copy_into(d, x), WK_STATUS_COUNT, q->name, o->name);
        if (f) REFUSED_ST(wk_copy_into(d, f), WK_STATUS_COUNT, q->name, "f32");
        if (f) REFUSED_ST(wk_copy_into(f, d), WK_STATUS_COUNT, q->name, "f32");
        check_bytes("refused copy_into left dst alone", d, hs, rows * rb);
    }
    if (t_case("quant/to_device/%s", q->name)) {
        const int64_t rows = 3, cols = 2 * B;
        const size_t rb = row_bytes(q, cols);
        unsigned char *h;
        wk_tensor *t = qmake(q, rows, cols, &h);
        wk_tensor *m = t ? T_NEED(wk_to_device(t, t_dev())) : NULL;
        if (check_shape("to_device", m, q->dt, WK_SHAPE(rows, cols))) check_bytes("to_device", m, h, rows * rb);
        wk_tensor *back = m ? T_NEED(wk_to_device(m, t_dev())) : NULL;
        if (back) check_bytes("to_device twice", back, h, rows * rb);
        /* a window moves as its own bytes */
        wk_tensor *w = t ? T_NEED(wk_narrow(t, 1, B, B)) : NULL;
        wk_tensor *mw = w ? T_NEED(wk_to_device(w, t_dev())) : NULL;
        unsigned char *ref = t_mem(rows * q->bytes);
        for (int r = 0; r < rows; r++) memcpy(ref + r * q->bytes, h + r * rb + q->bytes, q->bytes);
        if (check_shape("to_device of a window", mw, q->dt, WK_SHAPE(rows, B))) check_bytes("to_device of a window", mw, ref, rows * q->bytes);
    }
}

/* ---- everything else refuses them ---------------------------------------------- */

static void refusals(const qinfo *q)
{
    const int64_t B = (int64_t)q->block;
    if (t_case("quant/unsupported/%s", q->name)) {
        /* the ops on block-quantized tensors (test_quant_ops.c) take them */
        static const char *const qops[] = { "dequantize", "quantize", "qmatmul", "qgather" };
        int n = 0;
        for (const char *const *p = wk_op_names(); p && *p; p++, n++) {
            bool qop = false;
            for (size_t i = 0; i < sizeof qops / sizeof qops[0]; i++) qop = qop || !strcmp(*p, qops[i]);
            /* the lattice IQ types have no quantizer (test_quant_ops.c checks the refusal) */
            const bool lattice = q->dt >= WK_IQ3_XXS && q->dt <= WK_IQ1_M;
            if (lattice && !strcmp(*p, "quantize")) qop = false;
            T_CHECK(wk_supports(t_dev(), *p, q->dt) == qop, "wk_supports(cpu, \"%s\", %s) is %s", *p, q->name,
                    qop ? "false" : "true");
        }
        T_CHECK(n > 50, "wk_op_names() lists %d ops", n);
    }
    if (!t_case("quant/refused_ops/%s", q->name)) return;
    const int64_t rows = 2, cols = 2 * B;
    const size_t n = (size_t)rows * row_bytes(q, cols);
    unsigned char *h;
    wk_tensor *t = qmake(q, rows, cols, &h);
    wk_tensor *sq = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(B, B), rand_bytes((size_t)B * q->bytes)));
    wk_tensor *mask = T_NEED(wk_ones(t_dev(), WK_U8, WK_SHAPE(rows, cols)));
    wk_tensor *ids1 = T_NEED(wk_zeros(t_dev(), WK_U32, WK_SHAPE(1)));
    wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(rows, cols)));
    wk_tensor *row = T_NEED(wk_narrow(t, 0, 0, 1));
    wk_tensor *f = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(rows, cols)));
    if (!t || !sq || !mask || !ids1 || !ids || !row || !f) return;
    const char *nm = q->name;
    const wk_status U = WK_ERR_UNSUPPORTED;
    /* elementwise */
    REFUSED(wk_exp(t), U, "exp", nm);
    REFUSED(wk_sigmoid(t), U, "sigmoid", nm);
    REFUSED(wk_unary(WK_NEG, t), U, "neg", nm);
    REFUSED(wk_relu(t), U, "relu", nm);
    REFUSED(wk_affine(t, 2, 1), U, "affine", nm);
    REFUSED(wk_powf(t, 2), U, "powf", nm);
    REFUSED(wk_elu(t, 1), U, "elu", nm);
    REFUSED(wk_add(t, t), U, "add", nm);
    REFUSED(wk_binary(WK_MAXIMUM, t, t), U, "maximum", nm);
    REFUSED(wk_cmp(WK_EQ, t, t), U, "eq", nm);
    REFUSED(wk_where(mask, t, t), U, "where", nm);
    /* reductions */
    REFUSED(wk_sum(t, NULL, 0, false), U, "sum", nm);
    REFUSED(wk_max(t, (const int[]){ 1 }, 1, true), U, "max", nm);
    REFUSED(wk_argmax(t, 1, false), U, "argmax", nm);
    REFUSED(wk_mean(t, NULL, 0, false), WK_STATUS_COUNT, "mean", nm);
    /* matmul */
    REFUSED(wk_matmul(sq, sq), U, "matmul", nm);
    /* conversions to and from dense dtypes */
    REFUSED(wk_to_dtype(t, WK_F32), WK_STATUS_COUNT, "to_dtype", nm);
    REFUSED(wk_to_dtype(f, q->dt), WK_STATUS_COUNT, "to_dtype", nm);
    /* indexing */
    REFUSED(wk_index_select(t, ids1, 0), U, "index_select", nm);
    REFUSED(wk_gather(t, ids, 0), U, "gather", nm);
    REFUSED_ST(wk_scatter_set(t, ids, t, 0), U, "scatter_set", nm);
    REFUSED_ST(wk_scatter_add(t, ids, t, 0), U, "scatter_add", nm);
    REFUSED_ST(wk_index_add(t, ids1, row, 0), U, "index_add", nm);
    /* in-place fills and row copies */
    REFUSED_ST(wk_const_set(t, 0), U, "const_set", nm);
    REFUSED_ST(wk_const_set(row, 1), U, "const_set", nm);
    REFUSED_ST(wk_copy2d(t, t, 1, 1, 1, 1, 0, 1), U, "copy2d", nm);
    /* creation functions */
    REFUSED(wk_zeros(t_dev(), q->dt, WK_SHAPE(2, B)), U, "zeros", nm);
    REFUSED(wk_ones(t_dev(), q->dt, WK_SHAPE(2, B)), U, "ones", nm);
    REFUSED(wk_full(t_dev(), q->dt, WK_SHAPE(2, B), 3), U, "full", nm);
    REFUSED(wk_arange(t_dev(), q->dt, 0, (double)B, 1), WK_STATUS_COUNT, "arange", nm);
    REFUSED(wk_rand_uniform(t_dev(), q->dt, WK_SHAPE(2, B), 0, 1), WK_STATUS_COUNT, "rand_uniform", nm);
    REFUSED(wk_rand_normal(t_dev(), q->dt, WK_SHAPE(2, B), 0, 1), WK_STATUS_COUNT, "rand_normal", nm);
    /* one element */
    double v = 12345;
    REFUSED_ST(wk_item(t, (const int64_t[]){ 0, 0 }, &v), WK_STATUS_COUNT, "item", nm);
    T_CHECK(v == 12345, "a refused wk_item wrote %g", v);
    /* no refusal wrote into the tensor, and the library still works */
    check_bytes("after the refusals", t, h, n);
    wk_tensor *ok = T_NEED(wk_add(f, f));
    T_CHECK(ok != NULL, "the library does not work after the refusals");
}

T_SUITE(quant)
{
    traits();
    for (int i = 0; i < NQ; i++) {
        roundtrips(&QT[i]);
        views(&QT[i]);
        copies(&QT[i]);
        refusals(&QT[i]);
    }
}
