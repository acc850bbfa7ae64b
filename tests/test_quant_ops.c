/* test_quant_ops.c — the ops on block-quantized tensors: wk_dequantize,
 * wk_quantize, wk_qmatmul, wk_qgather.
 *
 * References come from tests/data/quant_vectors.bin, written by
 * tools/gen_quant_vectors.py from llama.cpp's own quantizers (ggml's
 * quantize_row_*_ref through PyPI's llama-cpp-python) and from the gguf
 * Python package (see that script). Checked here:
 *   dequantize  bit for bit against the gguf package (q8_1, q8_k: their
 *               definition in ggml; the nine IQ types too), to f32, and to f16/bf16 as the f32
 *               value rounded once; through views (narrowed, 3-d, broadcast
 *               rows, leading dims that need a copy)
 *   quantize    byte for byte against llama.cpp for all twelve q types and
 *               iq4_nl, iq4_xs (the lattice IQ types are refused), and
 *               against the gguf package for q4_0 .. q8_0 (for q4_1 and
 *               q5_1 the sign of a zero d or m field may differ: gguf takes
 *               min/max from numpy, whose choice between +0 and -0 is its
 *               own; llama.cpp's C loop keeps the first); strided views,
 *               many rows (the threaded path)
 *   round trip  dequantize(quantize(x)) of normal data, relative RMS error
 *               per type under a bound (docs/quantization.md lists the
 *               measured values; WICK_QUANT_ERRORS=1 prints them)
 *   qmatmul     against wick's dequantize + an f64 matmul on the host, within
 *               the f32 accumulation bound: k one block, n = 1, 7, 4097,
 *               m = 1..8 and larger, x transposed, narrowed, 3-d, rank 1,
 *               f16/bf16, the weight a row view (weights of the lattice IQ
 *               types: random blocks with small f16 scales)
 *   qgather     rows against the dequantize vectors, ids of every dtype and
 *               shape, non-contiguous ids, ids out of range
 *   errors, empty tensors and wk_supports.
 *
 * Case names: quantops/<what>/<dtype>[/...].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "wick_ext.h"
#include "t_llm_model.h"
#include "wick_formats.h"

/* round-trip bounds of the IQ4 types (relative RMS error, normal x) */
#define IQ4_NL_BOUND 0.086
#define IQ4_XS_BOUND 0.084

typedef struct qinfo {
    wk_dtype dt;
    const char *name;
    int64_t block, bytes;
    bool gguf_q;          /* the gguf package quantizes it */
    bool wick_q;          /* wk_quantize writes it (llama.cpp's reference quantizer) */
} qinfo;
static const qinfo QT[] = {
    { WK_Q4_0, "q4_0", 32, 18, true, true },    { WK_Q4_1, "q4_1", 32, 20, true, true },
    { WK_Q5_0, "q5_0", 32, 22, true, true },    { WK_Q5_1, "q5_1", 32, 24, true, true },
    { WK_Q8_0, "q8_0", 32, 34, true, true },    { WK_Q8_1, "q8_1", 32, 36, false, true },
    { WK_Q2_K, "q2_k", 256, 84, false, true },  { WK_Q3_K, "q3_k", 256, 110, false, true },
    { WK_Q4_K, "q4_k", 256, 144, false, true }, { WK_Q5_K, "q5_k", 256, 176, false, true },
    { WK_Q6_K, "q6_k", 256, 210, false, true }, { WK_Q8_K, "q8_k", 256, 292, false, true },
    { WK_IQ4_NL, "iq4_nl", 32, 18, false, true },     { WK_IQ4_XS, "iq4_xs", 256, 136, false, true },
    { WK_IQ3_XXS, "iq3_xxs", 256, 98, false, false }, { WK_IQ3_S, "iq3_s", 256, 110, false, false },
    { WK_IQ2_XXS, "iq2_xxs", 256, 66, false, false }, { WK_IQ2_XS, "iq2_xs", 256, 74, false, false },
    { WK_IQ2_S, "iq2_s", 256, 82, false, false },     { WK_IQ1_S, "iq1_s", 256, 50, false, false },
    { WK_IQ1_M, "iq1_m", 256, 56, false, false },
};
#define NQ ((int)(sizeof QT / sizeof QT[0]))
static const wk_dtype FOUT[3] = { WK_F32, WK_F16, WK_BF16 };


/* ---- the vector file ------------------------------------------------------- */

typedef struct qv_sec {
    char type[9], kind[9];
    uint32_t rows, cols;
    uint64_t n;
    const unsigned char *p;
} qv_sec;
static struct {
    unsigned char *buf;
    int n;
    qv_sec s[128];
    char why[256];
} QV;

static bool qv_load(void)
{
    static const char *paths[] = { "tests/data/quant_vectors.bin", "../tests/data/quant_vectors.bin",
                                   "data/quant_vectors.bin" };
    FILE *f = NULL;
    const char *path = NULL;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !f; i++) f = fopen(path = paths[i], "rb");
    if (!f) {
        snprintf(QV.why, sizeof QV.why, "cannot open tests/data/quant_vectors.bin (run from the repository root)");
        return false;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    QV.buf = malloc(len > 0 ? (size_t)len : 1);
    bool ok = QV.buf && len > 12 && fread(QV.buf, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    if (!ok || memcmp(QV.buf, "WKQVEC01", 8) != 0) {
        snprintf(QV.why, sizeof QV.why, "%s: not a quant vector file", path);
        return false;
    }
    uint32_t count;
    memcpy(&count, QV.buf + 8, 4);
    size_t off = 12;
    for (uint32_t i = 0; i < count; i++) {
        if (QV.n == 128 || off + 32 > (size_t)len) {
            snprintf(QV.why, sizeof QV.why, "%s: truncated or too many sections", path);
            return false;
        }
        qv_sec *s = &QV.s[QV.n++];
        memcpy(s->type, QV.buf + off, 8);
        memcpy(s->kind, QV.buf + off + 8, 8);
        s->type[8] = s->kind[8] = 0;
        memcpy(&s->rows, QV.buf + off + 16, 4);
        memcpy(&s->cols, QV.buf + off + 20, 4);
        memcpy(&s->n, QV.buf + off + 24, 8);
        off += 32;
        if (s->n > (uint64_t)len - off) {
            snprintf(QV.why, sizeof QV.why, "%s: section %s/%s runs past the end", path, s->type, s->kind);
            return false;
        }
        s->p = QV.buf + off;
        off += s->n;
    }
    return true;
}

static const qv_sec *qv_find(const char *type, const char *kind)
{
    for (int i = 0; i < QV.n; i++)
        if (!strcmp(QV.s[i].type, type) && !strcmp(QV.s[i].kind, kind)) return &QV.s[i];
    t_fail("quant_vectors.bin has no section %s/%s", type, kind);
    return NULL;
}

/* float i of a section (unaligned) */
static float qv_f32(const qv_sec *s, int64_t i)
{
    float v;
    memcpy(&v, s->p + 4 * i, 4);
    return v;
}

/* ---- helpers ------------------------------------------------------------------- */

static const char *fname(wk_dtype dt) { return wk_dtype_name(dt); }

/* t's bytes must be ref's n bytes; zero_sign: the f16 fields at offsets
 * 0 and 2 of each block may differ in the sign of a zero (see the top) */
static bool check_blocks(const char *what, const wk_tensor *t, const qinfo *q, const unsigned char *ref, size_t n,
                         bool zero_sign)
{
    if (!t) return false;
    if (wk_tensor_nbytes(t) != n) {
        t_fail("%s: %zu bytes, expected %zu", what, wk_tensor_nbytes(t), n);
        return false;
    }
    unsigned char *got = t_mem(n);
    wk_status st = wk_to_host(t, got, n);
    if (st != WK_OK) {
        t_fail("%s: wk_to_host: %s", what, wk_last_error());
        return false;
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == ref[i]) continue;
        const size_t o = i % (size_t)q->bytes;
        /* iq4_nl: llama.cpp writes a block of zeros (|x| < 1e-15) with d = 0
         * and the codes its previous block left in a scratch array; wick
         * writes code 8 there. Both decode to zeros: the codes are free. */
        if (q->dt == WK_IQ4_NL && o >= 2 && ref[i - o] == 0 && (ref[i - o + 1] & 0x7F) == 0 && got[i - o] == 0 &&
            (got[i - o + 1] & 0x7F) == 0)
            continue;
        if (zero_sign && (o == 1 || o == 3) && (got[i] ^ ref[i]) == 0x80 && got[i - 1] == 0 && ref[i - 1] == 0 &&
            (got[i] & 0x7F) == 0)
            continue;   /* +0 against -0 in an f16 field */
        if (bad++ < 3)
            t_fail("%s: byte %zu (block %zu, offset %zu) is 0x%02x, expected 0x%02x", what, i, i / (size_t)q->bytes, o,
                   got[i], ref[i]);
    }
    if (bad > 3) t_fail("%s: %d bytes differ in all", what, bad);
    return bad == 0;
}

/* expected values (f32 floats at ref, rows x cols from row r0) as n elements of dt */
static void *expect_as(wk_dtype dt, const qv_sec *deq, int64_t r0, int64_t rows)
{
    const int64_t cols = deq->cols, n = rows * cols;
    void *e = t_mem((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        float v = qv_f32(deq, r0 * cols + i);
        if (dt == WK_F32) memcpy((char *)e + 4 * i, &v, 4);
        else t_put(dt, e, i, v);
    }
    return e;
}

/* host rows of x as doubles, [m, k] row-major (x any layout, read through to_host) */
static double *host_values(const wk_tensor *t, int64_t *n)
{
    bool ok;
    t_arr a = t_read(t, &ok);
    if (!ok) return NULL;
    double *v = t_mem((size_t)a.n * sizeof(double) + 1);
    for (int64_t i = 0; i < a.n; i++) v[i] = t_get(a.dt, a.p, i);
    *n = a.n;
    return v;
}

/* a [rows, cols] f32 tensor of normal values (owned by the case) */
static wk_tensor *normal_f32(int64_t rows, int64_t cols, double scale)
{
    float *h = t_mem((size_t)(rows * cols) * sizeof(float) + 1);
    for (int64_t i = 0; i < rows * cols; i++) {
        double u1 = t_rng_unit(t_r()), u2 = t_rng_unit(t_r());
        h[i] = (float)(scale * sqrt(-2 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2));
    }
    return T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rows, cols), h));
}

/* ---- dequantize --------------------------------------------------------------- */

static void dequantize_cases(const qinfo *q)
{
    const qv_sec *blk = NULL, *deq = NULL;
    for (int o = 0; o < 3; o++) {
        if (!t_case("quantops/dequantize/%s/%s", q->name, fname(FOUT[o]))) continue;
        t_cover("dequantize", q->dt);
        if (!(blk = qv_find(q->name, "blocks")) || !(deq = qv_find(q->name, "deq"))) return;
        const int64_t rows = blk->rows, cols = blk->cols;
        wk_tensor *t = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(rows, cols), blk->p));
        if (!t) return;
        wk_tensor *y = T_NEED(wk_dequantize(t, FOUT[o]));
        t_check_exact("dequantize", y, WK_SHAPE(rows, cols), FOUT[o], expect_as(FOUT[o], deq, 0, rows));
    }
    if (!t_case("quantops/dequantize_views/%s", q->name)) return;
    t_cover("dequantize", q->dt);
    if (!(blk = qv_find(q->name, "blocks")) || !(deq = qv_find(q->name, "deq"))) return;
    const int64_t rows = blk->rows, cols = blk->cols;
    wk_tensor *t = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(rows, cols), blk->p));
    if (!t) return;
    /* rows 1 .. rows-2 */
    wk_tensor *nv = T_NEED(wk_narrow(t, 0, 1, rows - 2));
    t_check_exact("narrowed rows", T_NEED(wk_dequantize(nv, WK_F32)), WK_SHAPE(rows - 2, cols), WK_F32,
                  expect_as(WK_F32, deq, 1, rows - 2));
    /* [2, rows/2, cols] */
    wk_tensor *r3 = T_NEED(wk_reshape(t, WK_SHAPE(2, rows / 2, cols)));
    t_check_exact("3-d", T_NEED(wk_dequantize(r3, WK_BF16)), WK_SHAPE(2, rows / 2, cols), WK_BF16,
                  expect_as(WK_BF16, deq, 0, rows));
    /* [2, rows/2 - 1, cols]: the leading dims do not merge (a copy) */
    wk_tensor *g = T_NEED(wk_narrow(r3, 1, 1, rows / 2 - 1));
    if (g) {
        wk_tensor *y = T_NEED(wk_dequantize(g, WK_F32));
        float *e = t_mem((size_t)(2 * (rows / 2 - 1) * cols) * 4);
        for (int64_t b = 0; b < 2; b++)
            for (int64_t r = 0; r < rows / 2 - 1; r++)
                for (int64_t c = 0; c < cols; c++)
                    e[(b * (rows / 2 - 1) + r) * cols + c] = qv_f32(deq, (b * (rows / 2) + 1 + r) * cols + c);
        t_check_exact("gapped 3-d", y, WK_SHAPE(2, rows / 2 - 1, cols), WK_F32, e);
    }
    /* one row broadcast to 3 (row stride 0) */
    wk_tensor *one = T_NEED(wk_narrow(t, 0, rows - 1, 1));
    wk_tensor *bc = one ? T_NEED(wk_broadcast_as(one, WK_SHAPE(3, cols))) : NULL;
    if (bc) {
        float *e = t_mem((size_t)(3 * cols) * 4);
        for (int64_t r = 0; r < 3; r++)
            for (int64_t c = 0; c < cols; c++) e[r * cols + c] = qv_f32(deq, (rows - 1) * cols + c);
        t_check_exact("broadcast rows", T_NEED(wk_dequantize(bc, WK_F32)), WK_SHAPE(3, cols), WK_F32, e);
    }
    /* 1-d: one row */
    wk_tensor *flat = one ? T_NEED(wk_reshape(one, WK_SHAPE(cols))) : NULL;
    if (flat)
        t_check_exact("1-d", T_NEED(wk_dequantize(flat, WK_F16)), WK_SHAPE(cols), WK_F16,
                      expect_as(WK_F16, deq, rows - 1, 1));
}

/* ---- quantize ------------------------------------------------------------------- */

static void quantize_cases(const qinfo *q)
{
    const qv_sec *rows_s, *ref;
    if (!q->wick_q) return;   /* refused: support_cases */
    if (t_case("quantops/quantize/%s", q->name)) {
        t_cover("quantize", q->dt);
        if (!(rows_s = qv_find("f32", "rows")) || !(ref = qv_find(q->name, "q_ggml"))) return;
        const int64_t rows = rows_s->rows, cols = rows_s->cols;
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rows, cols), rows_s->p));
        wk_tensor *y = x ? T_NEED(wk_quantize(x, q->dt)) : NULL;
        if (y && wk_tensor_dtype(y) != q->dt) t_fail("quantize gave %s", wk_dtype_name(wk_tensor_dtype(y)));
        check_blocks("quantize vs llama.cpp", y, q, ref->p, (size_t)ref->n, false);
    }
    if (q->gguf_q && t_case("quantops/quantize_gguf/%s", q->name)) {
        t_cover("quantize", q->dt);
        if (!(rows_s = qv_find("f32", "rows")) || !(ref = qv_find(q->name, "q_gguf"))) return;
        const int64_t rows = rows_s->rows, cols = rows_s->cols;
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rows, cols), rows_s->p));
        wk_tensor *y = x ? T_NEED(wk_quantize(x, q->dt)) : NULL;
        const bool zs = q->dt == WK_Q4_1 || q->dt == WK_Q5_1;
        check_blocks("quantize vs gguf", y, q, ref->p, (size_t)ref->n, zs);
    }
    if (!t_case("quantops/quantize_views/%s", q->name)) return;
    t_cover("quantize", q->dt);
    if (!(rows_s = qv_find("f32", "rows")) || !(ref = qv_find(q->name, "q_ggml"))) return;
    const int64_t rows = rows_s->rows, cols = rows_s->cols;
    /* transposed storage: [cols, rows] holding x^T, viewed as [rows, cols] (last stride rows: a copy) */
    float *tr = t_mem((size_t)(rows * cols) * 4);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) tr[c * rows + r] = qv_f32(rows_s, r * cols + c);
    wk_tensor *st = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(cols, rows), tr));
    wk_tensor *xt = st ? T_NEED(wk_transpose(st, 0, 1)) : NULL;
    if (xt) check_blocks("transposed x", T_NEED(wk_quantize(xt, q->dt)), q, ref->p, (size_t)ref->n, false);
    /* rows of a wider storage (row stride 2 cols, no copy), 3-d */
    float *wide = t_mem((size_t)(rows * 2 * cols) * 4);
    for (int64_t r = 0; r < rows; r++) memcpy(wide + r * 2 * cols + cols, rows_s->p + 4 * r * cols, (size_t)cols * 4);
    wk_tensor *ws = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rows, 2 * cols), wide));
    wk_tensor *xw = ws ? T_NEED(wk_narrow(ws, 1, cols, cols)) : NULL;
    if (xw) check_blocks("row-strided x", T_NEED(wk_quantize(xw, q->dt)), q, ref->p, (size_t)ref->n, false);
    wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rows, cols), rows_s->p));
    wk_tensor *x3 = x ? T_NEED(wk_reshape(x, WK_SHAPE(rows / 8, 8, cols))) : NULL;
    wk_tensor *y3 = x3 ? T_NEED(wk_quantize(x3, q->dt)) : NULL;
    if (y3 && !t_shape_eq(wk_tensor_shape(y3), WK_SHAPE(rows / 8, 8, cols)))
        t_fail("3-d quantize gave %s", t_shape_str(wk_tensor_shape(y3)));
    check_blocks("3-d x", y3, q, ref->p, (size_t)ref->n, false);
    /* many rows (the threaded path): the rows repeated 24 times */
    const int64_t rep = 24;
    float *big = t_mem((size_t)(rep * rows * cols) * 4);
    unsigned char *bref = t_mem((size_t)rep * (size_t)ref->n);
    for (int64_t k = 0; k < rep; k++) {
        memcpy(big + k * rows * cols, rows_s->p, (size_t)(rows * cols) * 4);
        memcpy(bref + (size_t)k * ref->n, ref->p, (size_t)ref->n);
    }
    wk_tensor *xb = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(rep * rows, cols), big));
    if (xb) check_blocks("many rows", T_NEED(wk_quantize(xb, q->dt)), q, bref, (size_t)rep * ref->n, false);
}

/* ---- round trip ------------------------------------------------------------------ */

/* bounds on the relative RMS error of dequantize(quantize(x)), x normal:
 * the measured values (docs/quantization.md) with ~10% headroom */
static double roundtrip_bound(wk_dtype dt)
{
    switch (dt) {
    case WK_Q4_0: return 0.095;
    case WK_Q4_1: return 0.087;
    case WK_Q5_0: return 0.048;
    case WK_Q5_1: return 0.042;
    case WK_Q8_0: return 0.0059;
    case WK_Q8_1: return 0.0059;
    case WK_Q2_K: return 0.33;
    case WK_Q3_K: return 0.166;
    case WK_Q4_K: return 0.079;
    case WK_Q5_K: return 0.040;
    case WK_Q6_K: return 0.0195;
    case WK_Q8_K: return 0.0078;
    case WK_IQ4_NL: return IQ4_NL_BOUND;
    case WK_IQ4_XS: return IQ4_XS_BOUND;
    default: return 0;
    }
}

static void roundtrip_case(const qinfo *q)
{
    if (!q->wick_q) return;
    if (!t_case("quantops/roundtrip/%s", q->name)) return;
    t_cover("quantize", q->dt);
    t_cover("dequantize", q->dt);
    const int64_t rows = 32, cols = 4096;
    wk_tensor *x = normal_f32(rows, cols, 1.0);
    wk_tensor *qx = x ? T_NEED(wk_quantize(x, q->dt)) : NULL;
    wk_tensor *y = qx ? T_NEED(wk_dequantize(qx, WK_F32)) : NULL;
    if (!y) return;
    int64_t n1, n2;
    double *a = host_values(x, &n1), *b = host_values(y, &n2);
    if (!a || !b || n1 != n2) return;
    double se = 0, sx = 0, maxe = 0;
    for (int64_t i = 0; i < n1; i++) {
        double e = b[i] - a[i];
        se += e * e;
        sx += a[i] * a[i];
        if (fabs(e) > maxe) maxe = fabs(e);
    }
    const double rel = sqrt(se / sx);
    if (getenv("WICK_QUANT_ERRORS")) printf("roundtrip %s: relative RMS error %.5f, max abs error %.4f\n", q->name, rel, maxe);
    T_CHECK(rel <= roundtrip_bound(q->dt), "%s round trip: relative RMS error %.5f above %.5f", q->name, rel,
            roundtrip_bound(q->dt));
    T_CHECK(rel > roundtrip_bound(q->dt) / 4, "%s round trip: relative RMS error %.6f is implausibly small", q->name,
            rel);
}

/* ---- qmatmul ------------------------------------------------------------------------ */

/* y = wk_qmatmul(x, w) against dequantize(w) in f64: |y - ref| <= (k/8 + 4)
 * 2^-24 sum |x w| (f32 sums of 8 lanes) + the rounding of the result */
static void check_qmatmul_vs(const char *what, const wk_tensor *x, const wk_tensor *w, const wk_tensor *wf,
                             wk_tensor **yout);
static void check_qmatmul(const char *what, const wk_tensor *x, const wk_tensor *w)
{
    check_qmatmul_vs(what, x, w, T_NEED(wk_dequantize(w, WK_F32)), NULL);
}

/* y = wk_qmatmul(x, w) against x . wf^T in f64 (wf: w's values in f32) */
static void check_qmatmul_vs(const char *what, const wk_tensor *x, const wk_tensor *w, const wk_tensor *wf,
                             wk_tensor **yout)
{
    wk_tensor *y = T_NEED(wk_qmatmul(x, w));
    if (yout) *yout = y;
    if (!y || !wf) return;
    const wk_dtype dt = wk_tensor_dtype(x);
    const int64_t n = wk_tensor_dim(w, 0), k = wk_tensor_dim(w, 1);
    wk_shape ys = wk_tensor_shape(x);
    ys.dims[ys.rank - 1] = n;
    if (wk_tensor_dtype(y) != dt || !t_shape_eq(wk_tensor_shape(y), ys)) {
        t_fail("%s: got %s %s, expected %s", what, wk_dtype_name(wk_tensor_dtype(y)), t_shape_str(wk_tensor_shape(y)),
               wk_dtype_name(dt));
        return;
    }
    int64_t nx, nw, ny;
    double *xv = host_values(x, &nx), *wv = host_values(wf, &nw), *yv = host_values(y, &ny);
    if (!xv || !wv || !yv) return;
    const int64_t m = k ? nx / k : 0;
    const double out_u = dt == WK_F32 ? 0x1p-24 : dt == WK_F16 ? 0x1p-11 : 0x1p-8;
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t c = 0; c < k; c++) {
                s += xv[i * k + c] * wv[j * k + c];
                sa += fabs(xv[i * k + c] * wv[j * k + c]);
            }
            const double got = yv[i * n + j];
            const double tol = ((double)k / 8 + 4) * 0x1p-24 * sa * (1 + out_u) + out_u * fabs(s) + 1e-300;
            if (!(fabs(got - s) <= tol) && bad++ < 3)
                t_fail("%s: y[%lld][%lld] = %.9g, f64 reference %.9g (bound %.3g)", what, (long long)i, (long long)j,
                       got, s, tol);
        }
    if (bad > 3) t_fail("%s: %d elements out of bound in all", what, bad);
}

/* a quantized [n, k] weight from normal values (owned by the case); for
 * a type wick does not quantize, random blocks whose f16 d is drawn from
 * [2^-10, 2^-6) (iq1_m: in the top nibbles of its four scale words) */
static wk_tensor *qweight(const qinfo *q, int64_t n, int64_t k)
{
    if (q->wick_q) {
        wk_tensor *f = normal_f32(n, k, 0.5);
        return f ? T_NEED(wk_quantize(f, q->dt)) : NULL;
    }
    const int64_t nb = n * (k / q->block);
    unsigned char *h = t_mem((size_t)(nb * q->bytes) + 1);
    for (int64_t i = 0; i < nb * q->bytes; i++) h[i] = (unsigned char)((uint32_t)t_rng_next(t_r()) & 0xFF);
    for (int64_t b = 0; b < nb; b++) {
        unsigned char *blk = h + b * q->bytes;
        const uint16_t d = (uint16_t)((5 + ((uint32_t)t_rng_next(t_r()) & 3)) << 10 | ((uint32_t)t_rng_next(t_r()) & 0x3FF));
        if (q->dt == WK_IQ1_M) {
            for (int i = 0; i < 4; i++) {
                uint16_t w;
                memcpy(&w, blk + 48 + 2 * i, 2);
                w = (uint16_t)((w & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
                memcpy(blk + 48 + 2 * i, &w, 2);
            }
        } else {
            memcpy(blk, &d, 2);
        }
    }
    return T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(n, k), h));
}

/* ---- qmatmul of a dense f16/bf16 weight ----------------------------------------------- */

/* y = wk_qmatmul(x, w) for a dense half w: against the f64 sum of x and w
 * widened (each widening exact), the bound of check_qmatmul */
static void check_half_qmatmul(const char *what, const wk_tensor *x, const wk_tensor *w, wk_tensor **yout)
{
    check_qmatmul_vs(what, x, w, T_NEED(wk_to_dtype(w, WK_F32)), yout);
}

/* the same bits, as two tensors of one shape and dtype */
static bool same_bits_t(const wk_tensor *a, const wk_tensor *b)
{
    bool oa, ob;
    t_arr x = t_read(a, &oa), y = t_read(b, &ob);
    return oa && ob && x.n == y.n && x.dt == y.dt && !memcmp(x.p, y.p, (size_t)x.n * wk_dtype_size(x.dt));
}

static const char *hq_mode = "default";   /* the kernel set the cases run on (WICK_CPU_QDOT) */

static void half_qmatmul_cases(wk_dtype wd)
{
    const char *wn = wk_dtype_name(wd);
    if (!wk_supports(t_dev(), "qmatmul", wd)) return;   /* GPUs widen such weights at load */
    if (t_case("quantops/qmatmul_half/%s/%s/shapes", hq_mode, wn)) {
        t_cover("qmatmul", wd);
        /* k across the vector widths (8, 16) and their tails; m and n across the 4 x 4 tiles, the
           16-row tasks and the 64-row passes over x */
        static const int64_t sh[][3] = { { 1, 1, 1 },   { 1, 7, 16 },  { 1, 33, 17 },  { 3, 5, 100 },
                                         { 5, 37, 576 }, { 64, 19, 33 }, { 70, 65, 129 }, { 2, 17, 8 } };
        for (size_t c = 0; c < sizeof sh / sizeof sh[0]; c++) {
            char what[96];
            snprintf(what, sizeof what, "m %lld n %lld k %lld", (long long)sh[c][0], (long long)sh[c][1],
                     (long long)sh[c][2]);
            wk_tensor *wf = normal_f32(sh[c][1], sh[c][2], 0.5), *x = normal_f32(sh[c][0], sh[c][2], 1.0);
            wk_tensor *w = wf ? T_NEED(wk_to_dtype(wf, wd)) : NULL;
            if (w && x) check_half_qmatmul(what, x, w, NULL);
        }
    }
    if (t_case("quantops/qmatmul_half/%s/%s/x_dtypes", hq_mode, wn)) {
        t_cover("qmatmul", wd);
        static const wk_dtype xd[] = { WK_F16, WK_BF16, WK_F64 };
        wk_tensor *wf = normal_f32(21, 40, 0.5), *xf = normal_f32(6, 40, 1.0);
        wk_tensor *w = wf ? T_NEED(wk_to_dtype(wf, wd)) : NULL;
        for (size_t i = 0; i < sizeof xd / sizeof xd[0] && w && xf; i++) {
            wk_tensor *x = T_NEED(wk_to_dtype(xf, xd[i]));
            if (!x) continue;
            if (xd[i] == WK_F64) {   /* a float dtype qmatmul does not return: refused, naming it */
                wk_tensor *y = wk_qmatmul(x, w);
                if (y || wk_last_status() != WK_ERR_DTYPE || !strstr(wk_last_error(), "f64"))
                    t_fail("x f64: expected a dtype error naming f64, got %s", y ? "a result" : wk_last_error());
                wk_release(y);
                wk_clear_error();
                continue;
            }
            char what[64];
            snprintf(what, sizeof what, "x %s", wk_dtype_name(xd[i]));
            check_half_qmatmul(what, x, w, NULL);
        }
    }
    if (t_case("quantops/qmatmul_half/%s/%s/layouts", hq_mode, wn)) {
        t_cover("qmatmul", wd);
        wk_tensor *wf = normal_f32(30, 48, 0.5), *xf = normal_f32(48, 9, 1.0);
        wk_tensor *w = wf ? T_NEED(wk_to_dtype(wf, wd)) : NULL;
        if (w && xf) {
            wk_tensor *wr = T_NEED(wk_narrow(w, 0, 3, 20));                 /* rows of a bigger matrix */
            wk_tensor *wc = T_NEED(wk_narrow(w, 1, 5, 40));                 /* columns: row stride 48 */
            wk_tensor *wt = T_NEED(wk_contiguous(T_NEED(wk_transpose(w, 0, 1))));
            wk_tensor *wtt = wt ? T_NEED(wk_transpose(wt, 0, 1)) : NULL;    /* k not contiguous */
            wk_tensor *xt = T_NEED(wk_transpose(xf, 0, 1));                 /* [9, 48], x transposed */
            wk_tensor *xn = xt ? T_NEED(wk_narrow(xt, 1, 5, 40)) : NULL;
            if (wr && xt) check_half_qmatmul("w narrowed rows, x transposed", xt, wr, NULL);
            if (wc && xn) check_half_qmatmul("w narrowed columns, x narrowed", xn, wc, NULL);
            if (wtt && xt) check_half_qmatmul("w with k not contiguous", xt, wtt, NULL);
            wk_tensor *x3 = xt ? T_NEED(wk_reshape(T_NEED(wk_contiguous(xt)), WK_SHAPE(3, 3, 48))) : NULL;
            if (x3) check_half_qmatmul("x 3-d", x3, w, NULL);
        }
    }
    /* a row's result has the same bits whatever the other rows: each row
       alone, and at every place of batches of 1..70 rows */
    if (t_case("quantops/qmatmul_half/%s/%s/batch_invariance", hq_mode, wn)) {
        t_cover("qmatmul", wd);
        wk_tensor *wf = normal_f32(37, 200, 0.5), *xf = normal_f32(70, 200, 1.0);
        wk_tensor *w = wf ? T_NEED(wk_to_dtype(wf, wd)) : NULL;
        wk_tensor *yall = w && xf ? T_NEED(wk_qmatmul(xf, w)) : NULL;
        static const int64_t parts[][2] = { { 0, 1 }, { 69, 1 }, { 3, 4 }, { 5, 7 }, { 60, 10 }, { 1, 64 } };
        for (size_t c = 0; c < sizeof parts / sizeof parts[0] && yall; c++) {
            wk_tensor *xs = T_NEED(wk_narrow(xf, 0, parts[c][0], parts[c][1]));
            wk_tensor *ys = xs ? T_NEED(wk_qmatmul(xs, w)) : NULL;
            wk_tensor *yr = T_NEED(wk_contiguous(T_NEED(wk_narrow(yall, 0, parts[c][0], parts[c][1]))));
            if (ys && yr && !same_bits_t(ys, yr))
                t_fail("rows %lld..%lld alone differ from the same rows in a batch of 70", (long long)parts[c][0],
                       (long long)(parts[c][0] + parts[c][1] - 1));
        }
    }
}

static void qmatmul_cases(const qinfo *q)
{
    const int64_t B = q->block;
    char what[128];
    if (t_case("quantops/qmatmul/%s/shapes", q->name)) {
        t_cover("qmatmul", q->dt);
        static const int64_t shapes[][3] = { { 1, 1, 1 }, { 3, 7, 1 }, { 1, 4097, 2 }, { 2, 4097, 1 }, { 5, 33, 4 } };
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2] * B;
            wk_tensor *w = qweight(q, n, k), *x = normal_f32(m, k, 1.0);
            snprintf(what, sizeof what, "m %lld n %lld k %lld", (long long)m, (long long)n, (long long)k);
            if (w && x) check_qmatmul(what, x, w);
        }
    }
    if (t_case("quantops/qmatmul/%s/m1to8", q->name)) {
        t_cover("qmatmul", q->dt);
        const int64_t n = 19, k = 3 * B;
        wk_tensor *w = qweight(q, n, k);
        for (int64_t m = 1; m <= 8 && w; m++) {
            wk_tensor *x = normal_f32(m, k, 1.0);
            snprintf(what, sizeof what, "m %lld", (long long)m);
            if (x) check_qmatmul(what, x, w);
        }
        wk_tensor *x = normal_f32(37, k, 1.0);   /* more rows: the 32-row tiles */
        if (w && x) check_qmatmul("m 37", x, w);
    }
    if (!t_case("quantops/qmatmul/%s/layouts", q->name)) return;
    t_cover("qmatmul", q->dt);
    const int64_t m = 6, n = 11, k = 2 * B;
    wk_tensor *w = qweight(q, n + 5, k);
    wk_tensor *wv = w ? T_NEED(wk_narrow(w, 0, 3, n)) : NULL;   /* the weight a row view */
    if (!wv) return;
    /* x transposed: storage [k, m] */
    wk_tensor *xs = normal_f32(k, m, 1.0), *xt = xs ? T_NEED(wk_transpose(xs, 0, 1)) : NULL;
    if (xt) check_qmatmul("x transposed", xt, wv);
    /* x narrowed columns of a wider [m, 3k] */
    wk_tensor *xw = normal_f32(m, 3 * k, 1.0), *xn = xw ? T_NEED(wk_narrow(xw, 1, k, k)) : NULL;
    if (xn) check_qmatmul("x narrowed", xn, wv);
    /* x 3-d, and 3-d with leading dims that do not merge */
    wk_tensor *x3 = normal_f32(2 * 4, k, 1.0), *x3r = x3 ? T_NEED(wk_reshape(x3, WK_SHAPE(2, 4, k))) : NULL;
    if (x3r) check_qmatmul("x 3-d", x3r, wv);
    wk_tensor *x3g = x3r ? T_NEED(wk_narrow(x3r, 1, 1, 2)) : NULL;
    if (x3g) check_qmatmul("x 3-d gapped", x3g, wv);
    /* x rank 1 */
    wk_tensor *x1 = normal_f32(1, k, 1.0), *x1r = x1 ? T_NEED(wk_reshape(x1, WK_SHAPE(k))) : NULL;
    if (x1r) check_qmatmul("x 1-d", x1r, wv);
    /* x f16 and bf16, transposed too */
    for (int o = 1; o < 3; o++) {
        wk_tensor *xf = xs ? T_NEED(wk_to_dtype(xs, FOUT[o])) : NULL;
        wk_tensor *xft = xf ? T_NEED(wk_transpose(xf, 0, 1)) : NULL;
        snprintf(what, sizeof what, "x %s transposed", wk_dtype_name(FOUT[o]));
        if (xft) check_qmatmul(what, xft, wv);
        wk_tensor *xc = xft ? T_NEED(wk_contiguous(xft)) : NULL;
        snprintf(what, sizeof what, "x %s", wk_dtype_name(FOUT[o]));
        if (xc) check_qmatmul(what, xc, wv);
    }
}

/* ---- qgather -------------------------------------------------------------------------- */

static void qgather_cases(const qinfo *q)
{
    if (!t_case("quantops/qgather/%s", q->name)) return;
    t_cover("qgather", q->dt);
    const qv_sec *blk = qv_find(q->name, "blocks"), *deq = qv_find(q->name, "deq");
    if (!blk || !deq) return;
    const int64_t rows = blk->rows, cols = blk->cols;
    wk_tensor *t = T_NEED(wk_from_host(t_dev(), q->dt, WK_SHAPE(rows, cols), blk->p));
    if (!t) return;
    /* i64 [2, 3] with repeats, every output dtype */
    const int64_t id6[6] = { rows - 1, 0, 2, 2, 1, rows - 1 };
    int64_t *h64 = t_mem(sizeof id6);
    memcpy(h64, id6, sizeof id6);
    wk_tensor *ids = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(2, 3), h64));
    for (int o = 0; o < 3 && ids; o++) {
        unsigned char *e = t_mem((size_t)(6 * cols) * 4);
        for (int i = 0; i < 6; i++) {
            void *er = expect_as(FOUT[o], deq, id6[i], 1);
            memcpy(e + (size_t)(i * cols) * t_size(FOUT[o]), er, (size_t)cols * t_size(FOUT[o]));
        }
        char what[64];
        snprintf(what, sizeof what, "i64 ids to %s", wk_dtype_name(FOUT[o]));
        t_check_exact(what, T_NEED(wk_qgather(t, ids, FOUT[o])), WK_SHAPE(2, 3, cols), FOUT[o], e);
    }
    /* u8 1-d; u32 transposed (non-contiguous); a scalar id */
    unsigned char h8[4] = { 1, 0, (unsigned char)(rows - 1), 1 };
    wk_tensor *ids8 = T_NEED(wk_from_host(t_dev(), WK_U8, WK_SHAPE(4), h8));
    if (ids8) {
        float *e = t_mem((size_t)(4 * cols) * 4);
        for (int i = 0; i < 4; i++) memcpy(e + i * cols, expect_as(WK_F32, deq, h8[i], 1), (size_t)cols * 4);
        t_check_exact("u8 ids", T_NEED(wk_qgather(t, ids8, WK_F32)), WK_SHAPE(4, cols), WK_F32, e);
    }
    uint32_t h32[6] = { 0, 1, 2, 3, 1, 0 };   /* storage [2, 3]; transposed [3, 2]: 0 3 / 1 1 / 2 0 */
    wk_tensor *i32s = T_NEED(wk_from_host(t_dev(), WK_U32, WK_SHAPE(2, 3), h32));
    wk_tensor *i32t = i32s ? T_NEED(wk_transpose(i32s, 0, 1)) : NULL;
    if (i32t) {
        const int order[6] = { 0, 3, 1, 1, 2, 0 };
        float *e = t_mem((size_t)(6 * cols) * 4);
        for (int i = 0; i < 6; i++) memcpy(e + i * cols, expect_as(WK_F32, deq, order[i], 1), (size_t)cols * 4);
        t_check_exact("u32 ids transposed", T_NEED(wk_qgather(t, i32t, WK_F32)), WK_SHAPE(3, 2, cols), WK_F32, e);
    }
    int64_t two = 2;
    wk_tensor *sc = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SCALAR, &two));
    if (sc)
        t_check_exact("scalar id", T_NEED(wk_qgather(t, sc, WK_BF16)), WK_SHAPE(cols), WK_BF16,
                      expect_as(WK_BF16, deq, 2, 1));
    /* a row view of the table */
    wk_tensor *tv = T_NEED(wk_narrow(t, 0, 1, rows - 1));
    if (tv && ids8) {
        /* ids 1, 0, rows-1 (out of range for rows-1 rows), 1 */
        wk_tensor *bad = wk_qgather(tv, ids8, WK_F32);
        if (bad) {
            t_own(bad);
            t_fail("qgather with an id out of a row view's range returned a tensor");
        } else {
            t_check_error("id out of a row view", WK_ERR_INDEX, wk_last_status(), "out of range", (const char *)NULL);
        }
        unsigned char ok8[3] = { 1, 0, 1 };
        wk_tensor *idok = T_NEED(wk_from_host(t_dev(), WK_U8, WK_SHAPE(3), ok8));
        float *e3 = t_mem((size_t)(3 * cols) * 4);
        for (int i = 0; i < 3; i++) memcpy(e3 + i * cols, expect_as(WK_F32, deq, ok8[i] + 1, 1), (size_t)cols * 4);
        if (idok) t_check_exact("table row view", T_NEED(wk_qgather(tv, idok, WK_F32)), WK_SHAPE(3, cols), WK_F32, e3);
    }
    /* ids out of range: rows, and -1 */
    int64_t badv[2] = { (int64_t)rows, -1 };
    for (int i = 0; i < 2; i++) {
        wk_tensor *bi = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(1), &badv[i]));
        if (!bi) continue;
        wk_tensor *r = wk_qgather(t, bi, WK_F32);
        if (r) {
            t_own(r);
            t_fail("qgather with id %lld returned a tensor", (long long)badv[i]);
        } else {
            t_check_error("id out of range", WK_ERR_INDEX, wk_last_status(), "qgather", "out of range", (const char *)NULL);
        }
    }
    /* no ids */
    wk_tensor *none = T_NEED(wk_empty(t_dev(), WK_U32, WK_SHAPE(0)));
    wk_tensor *r0 = none ? T_NEED(wk_qgather(t, none, WK_F16)) : NULL;
    if (r0 && !t_shape_eq(wk_tensor_shape(r0), WK_SHAPE(0, cols)))
        t_fail("qgather of no ids gave %s", t_shape_str(wk_tensor_shape(r0)));
}

/* ---- GGUF files ------------------------------------------------------------------------ */

/* The random blocks of every type (the gguf package's, with its values)
 * written as one GGUF file by wick's writer, read back by wick's reader:
 * the ggml type ids in the file, the bytes of each tensor, and its values
 * through wk_dequantize bit for bit against the gguf package's. (The
 * gguf package's own files: tests/data/model_files/types.gguf, which
 * test_model_files.c loads byte for byte, the IQ types included.) */
static void gguf_file_case(void)
{
    if (!t_case("quantops/gguf_file")) return;
    const char *path = tmp_path("quant.gguf");
    wk_gguf_writer *w = wk_gguf_writer_new();
    if (!w) {
        t_fail("wk_gguf_writer_new: %s", wk_last_error());
        return;
    }
    char names[NQ][32];
    for (int i = 0; i < NQ; i++) {
        const qv_sec *blk = qv_find(QT[i].name, "blocks");
        snprintf(names[i], sizeof names[i], "t.%s", QT[i].name);
        if (blk) T_OK(wk_gguf_writer_add_data(w, names[i], QT[i].dt, WK_SHAPE(blk->rows, blk->cols), blk->p));
    }
    T_OK(wk_gguf_writer_write(w, path));
    wk_gguf_writer_free(w);
    wk_gguf *g = wk_gguf_open(path);
    if (!g) {
        t_fail("wk_gguf_open: %s", wk_last_error());
        unlink(path);
        return;
    }
    /* ggml's type ids (ggml.h's enum ggml_type) */
    static const struct { wk_dtype dt; uint32_t id; } ids[] = {
        { WK_Q4_0, 2 },      { WK_Q4_1, 3 },     { WK_Q5_0, 6 },      { WK_Q5_1, 7 },      { WK_Q8_0, 8 },
        { WK_Q8_1, 9 },      { WK_Q2_K, 10 },    { WK_Q3_K, 11 },     { WK_Q4_K, 12 },     { WK_Q5_K, 13 },
        { WK_Q6_K, 14 },     { WK_Q8_K, 15 },    { WK_IQ2_XXS, 16 },  { WK_IQ2_XS, 17 },   { WK_IQ3_XXS, 18 },
        { WK_IQ1_S, 19 },    { WK_IQ4_NL, 20 },  { WK_IQ3_S, 21 },    { WK_IQ2_S, 22 },    { WK_IQ4_XS, 23 },
        { WK_IQ1_M, 29 },
    };
    for (int i = 0; i < NQ; i++) {
        const qv_sec *blk = qv_find(QT[i].name, "blocks"), *deq = qv_find(QT[i].name, "deq");
        const int64_t k = wk_gguf_tensor_index(g, names[i]);
        const wk_file_tensor *ti = wk_gguf_tensor_info(g, k);
        if (!blk || !deq || !ti) {
            if (!ti) t_fail("%s: not in the file", names[i]);
            continue;
        }
        uint32_t want = UINT32_MAX;
        for (size_t j = 0; j < sizeof ids / sizeof ids[0]; j++)
            if (ids[j].dt == QT[i].dt) want = ids[j].id;
        T_CHECK(ti->ggml_type == want && ti->dtype == QT[i].dt, "%s: ggml type %u (%s), expected %u", names[i],
                ti->ggml_type, ti->type_name, want);
        wk_tensor *t = T_NEED(wk_gguf_tensor(g, names[i], t_dev()));
        if (!t) continue;
        unsigned char *got = t_mem((size_t)blk->n);
        if (wk_tensor_nbytes(t) != blk->n || wk_to_host(t, got, (size_t)blk->n) != WK_OK || memcmp(got, blk->p, (size_t)blk->n)) {
            t_fail("%s: the bytes read differ from those written", names[i]);
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%.31s from the file", names[i]);
        t_check_exact(what, T_NEED(wk_dequantize(t, WK_F32)), WK_SHAPE(blk->rows, blk->cols), WK_F32,
                      expect_as(WK_F32, deq, 0, blk->rows));
    }
    wk_gguf_close(g);
    unlink(path);
}

/* ---- errors, empty tensors, support -------------------------------------------------------- */

static void expect_null(const char *what, wk_tensor *r, wk_status want, const char *w1, const char *w2)
{
    if (r) {
        t_own(r);
        t_fail("%s returned a tensor", what);
        return;
    }
    t_check_error(what, want, wk_last_status(), w1, w2, (const char *)NULL);
}
#define EXPECT_NULL(expr, want, w1, w2) expect_null(#expr, (expr), (want), (w1), (w2))

static void error_cases(void)
{
    if (!t_case("quantops/errors")) return;
    wk_device *dev = t_dev();
    wk_tensor *f100 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 100)));
    wk_tensor *f32 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 32)));
    wk_tensor *h32 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(2, 32)));
    wk_tensor *i32 = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(2, 32)));
    wk_tensor *s = T_NEED(wk_zeros(dev, WK_F32, WK_SCALAR));
    unsigned char *zb = t_mem(8 * 18);
    wk_tensor *q = T_NEED(wk_from_host(dev, WK_Q4_0, WK_SHAPE(4, 32), zb));       /* [4, 32] q4_0 */
    wk_tensor *q3 = T_NEED(wk_from_host(dev, WK_Q4_0, WK_SHAPE(2, 2, 32), zb));  /* 3-d */
    wk_tensor *q1 = T_NEED(wk_from_host(dev, WK_Q4_0, WK_SHAPE(32), zb));        /* 1-d */
    wk_tensor *ids = T_NEED(wk_zeros(dev, WK_I64, WK_SHAPE(2)));
    wk_tensor *idf = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2)));
    wk_tensor *idi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(2)));
    wk_tensor *id8 = T_NEED(wk_zeros(dev, WK_I64, WK_SHAPE(1, 1, 1, 1, 1, 1, 1, 1)));
    if (!f100 || !f32 || !h32 || !i32 || !s || !q || !q3 || !q1 || !ids || !idf || !idi || !id8) return;
    const wk_status SH = WK_ERR_SHAPE, DT = WK_ERR_DTYPE, AR = WK_ERR_ARGUMENT;
    /* quantize */
    EXPECT_NULL(wk_quantize(f100, WK_Q4_0), SH, "100", "q4_0");
    EXPECT_NULL(wk_quantize(f32, WK_Q4_K), SH, "32", "q4_k");
    EXPECT_NULL(wk_quantize(h32, WK_Q4_0), DT, "quantize", "f16");
    EXPECT_NULL(wk_quantize(f32, WK_F32), DT, "quantize", "f32");
    EXPECT_NULL(wk_quantize(f32, WK_DTYPE_COUNT), DT, "quantize", NULL);
    EXPECT_NULL(wk_quantize(s, WK_Q8_0), SH, "quantize", "scalar");
    EXPECT_NULL(wk_quantize(NULL, WK_Q8_0), AR, "quantize", NULL);
    /* dequantize */
    EXPECT_NULL(wk_dequantize(f32, WK_F32), DT, "dequantize", "f32");
    EXPECT_NULL(wk_dequantize(q, WK_I32), DT, "dequantize", "i32");
    EXPECT_NULL(wk_dequantize(q, WK_F64), DT, "dequantize", "f64");
    EXPECT_NULL(wk_dequantize(q, WK_Q8_0), DT, "dequantize", "q8_0");
    EXPECT_NULL(wk_dequantize(NULL, WK_F32), AR, "dequantize", NULL);
    /* qmatmul */
    EXPECT_NULL(wk_qmatmul(f32, f32), DT, "qmatmul", "f32");
    EXPECT_NULL(wk_qmatmul(f32, q3), SH, "qmatmul", "2-d");
    EXPECT_NULL(wk_qmatmul(f32, q1), SH, "qmatmul", "2-d");
    EXPECT_NULL(wk_qmatmul(i32, q), DT, "qmatmul", "i32");
    EXPECT_NULL(wk_qmatmul(q, q), DT, "qmatmul", "q4_0");
    EXPECT_NULL(wk_qmatmul(f100, q), SH, "qmatmul", "100");
    EXPECT_NULL(wk_qmatmul(s, q), SH, "qmatmul", "scalar");
    EXPECT_NULL(wk_qmatmul(NULL, q), AR, "qmatmul", "x");
    EXPECT_NULL(wk_qmatmul(f32, NULL), AR, "qmatmul", "w");
    /* qgather */
    EXPECT_NULL(wk_qgather(f32, ids, WK_F32), DT, "qgather", "f32");
    EXPECT_NULL(wk_qgather(q3, ids, WK_F32), SH, "qgather", "2-d");
    EXPECT_NULL(wk_qgather(q, idf, WK_F32), DT, "qgather", "f32");
    EXPECT_NULL(wk_qgather(q, idi, WK_F32), DT, "qgather", "i32");
    EXPECT_NULL(wk_qgather(q, ids, WK_I64), DT, "qgather", "i64");
    EXPECT_NULL(wk_qgather(q, id8, WK_F32), SH, "qgather", "rank");
    EXPECT_NULL(wk_qgather(NULL, ids, WK_F32), AR, "qgather", "table");
    EXPECT_NULL(wk_qgather(q, NULL, WK_F32), AR, "qgather", "ids");
    /* the library still works */
    T_NEED(wk_dequantize(q, WK_F32));
}

static void empty_cases(void)
{
    if (!t_case("quantops/empty")) return;
    wk_device *dev = t_dev();
    wk_tensor *e0 = T_NEED(wk_empty(dev, WK_F32, WK_SHAPE(0, 256)));
    wk_tensor *qe = e0 ? T_NEED(wk_quantize(e0, WK_Q4_K)) : NULL;
    if (qe && (wk_tensor_dtype(qe) != WK_Q4_K || !t_shape_eq(wk_tensor_shape(qe), WK_SHAPE(0, 256))))
        t_fail("quantize of [0, 256] gave %s", t_shape_str(wk_tensor_shape(qe)));
    wk_tensor *de = qe ? T_NEED(wk_dequantize(qe, WK_F16)) : NULL;
    if (de && !t_shape_eq(wk_tensor_shape(de), WK_SHAPE(0, 256))) t_fail("dequantize of [0, 256] wrong shape");
    /* qmatmul: m = 0, n = 0, k = 0 */
    unsigned char *zb = t_mem(4 * 34);
    wk_tensor *w = T_NEED(wk_from_host(dev, WK_Q8_0, WK_SHAPE(4, 32), zb));
    wk_tensor *x0 = T_NEED(wk_empty(dev, WK_F32, WK_SHAPE(0, 32)));
    wk_tensor *y0 = w && x0 ? T_NEED(wk_qmatmul(x0, w)) : NULL;
    if (y0 && !t_shape_eq(wk_tensor_shape(y0), WK_SHAPE(0, 4))) t_fail("qmatmul m = 0 gave %s", t_shape_str(wk_tensor_shape(y0)));
    wk_tensor *wn = T_NEED(wk_from_host(dev, WK_Q8_0, WK_SHAPE(0, 32), zb));
    wk_tensor *x2 = T_NEED(wk_ones(dev, WK_BF16, WK_SHAPE(2, 32)));
    wk_tensor *yn = wn && x2 ? T_NEED(wk_qmatmul(x2, wn)) : NULL;
    if (yn && !t_shape_eq(wk_tensor_shape(yn), WK_SHAPE(2, 0))) t_fail("qmatmul n = 0 gave %s", t_shape_str(wk_tensor_shape(yn)));
    wk_tensor *wk0 = T_NEED(wk_from_host(dev, WK_Q8_0, WK_SHAPE(3, 0), zb));
    wk_tensor *xk0 = T_NEED(wk_empty(dev, WK_F16, WK_SHAPE(2, 0)));
    wk_tensor *yk = wk0 && xk0 ? T_NEED(wk_qmatmul(xk0, wk0)) : NULL;
    if (yk) {
        const uint16_t z[6] = { 0 };
        t_check_exact("qmatmul k = 0", yk, WK_SHAPE(2, 3), WK_F16, z);
    }
}

static void gpu_refuses(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    for (int i = 0; i < NQ; i++) {
        static const char *const ops[4] = { "dequantize", "quantize", "qmatmul", "qgather" };
        for (int o = 0; o < 4; o++)
            if (wk_supports(dev, ops[o], QT[i].dt)) return;   /* a plugin that has them: the parity suite's job */
    }
    unsigned char *zb = t_mem(2 * 18);
    wk_tensor *q = T_NEED(wk_from_host(dev, WK_Q4_0, WK_SHAPE(2, 32), zb));
    if (!q) return;
    wk_tensor *r = wk_dequantize(q, WK_F32);
    if (r) {
        t_own(r);
        t_fail("%s: dequantize ran although wk_supports says no", name);
    } else {
        t_check_error("dequantize on a GPU", WK_ERR_UNSUPPORTED, wk_last_status(), "dequantize", "q4_0",
                      (const char *)NULL);
    }
}

static void support_cases(void)
{
    if (!t_case("quantops/supports")) return;
    static const char *const ops[4] = { "dequantize", "quantize", "qmatmul", "qgather" };
    for (int o = 0; o < 4; o++) {
        for (int i = 0; i < NQ; i++) {
            if (o == 1 && !QT[i].wick_q) {   /* the lattice IQ types: no quantizer */
                T_CHECK(!wk_supports(t_dev(), ops[o], QT[i].dt), "wk_supports(cpu, \"quantize\", %s) is true",
                        QT[i].name);
                wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 256)));
                wk_tensor *r = x ? wk_quantize(x, QT[i].dt) : NULL;
                if (r) {
                    t_own(r);
                    t_fail("wk_quantize to %s returned a tensor", QT[i].name);
                } else if (x) {
                    t_check_error("quantize to a lattice IQ type", WK_ERR_UNSUPPORTED, wk_last_status(), "quantize",
                                  QT[i].name, (const char *)NULL);
                }
                continue;
            }
            T_CHECK(wk_supports(t_dev(), ops[o], QT[i].dt), "wk_supports(cpu, \"%s\", %s) is false", ops[o], QT[i].name);
        }
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            /* qmatmul also takes a dense f16/bf16 weight on the cpu */
            const bool half = o == 2 && (d == WK_F16 || d == WK_BF16);
            T_CHECK(wk_supports(t_dev(), ops[o], (wk_dtype)d) == half,
                    "wk_supports(cpu, \"%s\", %s) is %s (the ops are filed under the block dtype; qmatmul takes f16/bf16 too)",
                    ops[o], wk_dtype_name((wk_dtype)d), half ? "false" : "true");
        }
    }
    t_each_gpu(gpu_refuses, NULL);
}

T_SUITE(quant_ops)
{
    bool loaded = qv_load();
    if (t_case("quantops/vectors")) {
        if (!loaded) t_fail("%s", QV.why);
        else {
            static const char *const kinds[3] = { "q_ggml", "blocks", "deq" };
            qv_find("f32", "rows");
            qv_find("txt", "meta");
            for (int i = 0; i < NQ; i++) {
                for (int k = QT[i].wick_q ? 0 : 1; k < 3; k++) qv_find(QT[i].name, kinds[k]);
                if (QT[i].gguf_q) qv_find(QT[i].name, "q_gguf");
            }
        }
    }
    for (int i = 0; i < NQ && loaded; i++) {
        dequantize_cases(&QT[i]);
        quantize_cases(&QT[i]);
        qgather_cases(&QT[i]);
    }
    for (int i = 0; i < NQ; i++) {
        roundtrip_case(&QT[i]);
        qmatmul_cases(&QT[i]);
    }
    /* each kernel set: the cpu's best, AVX2, plain C (WICK_CPU_QDOT picks, as for the integer path) */
    static const char *const hq_modes[] = { NULL, "avx2", "portable" };
    const char *hq_keep = getenv("WICK_CPU_QDOT");
    char *keep = hq_keep ? strdup(hq_keep) : NULL;
    for (int mi = 0; mi < 3; mi++) {
        if (hq_modes[mi]) setenv("WICK_CPU_QDOT", hq_modes[mi], 1);
        wk_env_refresh();
        hq_mode = hq_modes[mi] ? hq_modes[mi] : "default";
        half_qmatmul_cases(WK_F16);
        half_qmatmul_cases(WK_BF16);
    }
    if (keep) setenv("WICK_CPU_QDOT", keep, 1);
    else unsetenv("WICK_CPU_QDOT");
    free(keep);
    wk_env_refresh();
    if (loaded) gguf_file_case();
    error_cases();
    empty_cases();
    support_cases();
    free(QV.buf);
    memset(&QV, 0, sizeof QV);
}
