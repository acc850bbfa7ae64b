/* test_nn.c — the fused NN ops (docs/nn.md) on f16, bf16, f32 and f64
 * against naive double-precision loops written here: softmax and
 * log_softmax (rows 1 .. 4097 long, any dim of transposed, reversed,
 * narrowed and broadcast views, column tiles, -inf rows), rms_norm (with
 * and without weight, Gemma), add_rms_norm (both outputs, and bit for bit
 * what wk_add then wk_rms_norm give), layer_norm (weight and bias each
 * present or not), silu_mul with broadcasting, rope / rope_i / rope_thd
 * with position offsets, tables of every float dtype and non-contiguous x,
 * wk_rope_tables with no, linear and Llama-3 scaling, and attention with
 * every option (scale, grouped heads 1/4/8, causal with Tq != Tk and
 * Tq = 1 against 1 .. 4097 keys, windows smaller and larger than Tk,
 * softcap, masks of every broadcast shape and dtype, rows masked entirely
 * with -inf, D 1 .. 300 with odd ones, q/k/v as transposed views of
 * [B, T, H, D], narrowed views and views whose last stride is not 1).
 * The nn/numpy/ cases check the same ops (and the naive references) once
 * more against numpy's float64 values in data/nn_ref.h
 * (data/gen_nn_ref.py). nn/errors/ cases: every bad argument fails with
 * its status and a message naming the problem.
 *
 * Inputs are random from the case's seed (printed on failure; --seed
 * replays). Results must match the reference rounded to the dtype within
 * the accumulating bound (t_bound_acc), NaN and Inf in the same places;
 * silu_mul within the elementwise bound.
 *
 * Case names: nn/<op>/<dtype>/<case>.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "data/nn_ref.h"

static const wk_dtype nn_dts[4] = { WK_F16, WK_BF16, WK_F32, WK_F64 };
#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- helpers ------------------------------------------------------------ */

/* the values of a host array as doubles (owned by the case) */
static double *as_doubles(const t_arr *a)
{
    double *d = t_mem((size_t)a->n * sizeof(double) + 8);
    for (int64_t i = 0; i < a->n; i++) d[i] = t_get(a->dt, a->p, i);
    return d;
}

/* a tensor of shape s in layout kind with values uniform in [lo, hi);
 * *v receives its logical values (row-major). Owned by the case. */
static wk_tensor *mk(wk_dtype dt, t_layout_kind kind, wk_shape s, double lo, double hi, double **v)
{
    t_arr a;
    wk_tensor *t = t_make(dt, kind, s, T_GEN(G_UNIFORM, lo, hi), &a);
    if (t && v) *v = as_doubles(&a);
    return t;
}

/* a contiguous tensor of dt holding vals rounded to dt; *v (optional)
 * receives the rounded values. Owned by the case. */
static wk_tensor *from_vals(wk_dtype dt, wk_shape s, const double *vals, double **v)
{
    t_arr a = t_arr_new(dt, s);
    for (int64_t i = 0; i < a.n; i++) t_put(dt, a.p, i, vals[i]);
    if (v) *v = as_doubles(&a);
    return T_NEED(wk_from_host(t_dev(), dt, s, a.p));
}

/* a view of shape s = [B, X, Y, D] whose memory is [B, Y, X, D] (dims 1
 * and 2 swapped: a [B, T, H, D] tensor seen as [B, H, T, D]) */
static wk_tensor *mk_swap12(wk_dtype dt, wk_shape s, double lo, double hi, double **v)
{
    wk_shape m = WK_SHAPE(s.dims[0], s.dims[2], s.dims[1], s.dims[3]);
    t_arr a;
    wk_tensor *base = t_make(dt, LK_CONTIG, m, T_GEN(G_UNIFORM, lo, hi), &a);
    wk_tensor *view = base ? T_NEED(wk_transpose(base, 1, 2)) : NULL;
    if (!view) return NULL;
    t_arr g = t_gather_view(view, a.p, dt);
    if (v) *v = as_doubles(&g);
    return view;
}

/* input layouts of the rank-4 ops */
typedef enum { IN_CONTIG, IN_SWAP12, IN_NARROW, IN_LAST } in_layout;
static wk_tensor *mk_in(wk_dtype dt, in_layout l, wk_shape s, double lo, double hi, double **v)
{
    switch (l) {
    case IN_SWAP12: return mk_swap12(dt, s, lo, hi, v);
    case IN_NARROW: return mk(dt, LK_NARROWED, s, lo, hi, v);
    case IN_LAST: return mk(dt, LK_TRANSPOSED, s, lo, hi, v);   /* last stride != 1: the core copies */
    default: return mk(dt, LK_CONTIG, s, lo, hi, v);
    }
}

static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t n = 1;
    for (int i = lo; i < hi; i++) n *= d[i];
    return n;
}

/* ---- references (naive, double) ------------------------------------------ */

static void ref_softmax(const double *x, wk_shape s, int dim, bool lg, double *y)
{
    int d = dim < 0 ? dim + s.rank : dim;
    int64_t outer = prod(s.dims, 0, d), n = s.dims[d], inner = prod(s.dims, d + 1, s.rank);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < inner; c++) {
            const double *xr = x + o * n * inner + c;
            double *yr = y + o * n * inner + c;
            double m = -INFINITY, sum = 0;
            bool nan = false;
            for (int64_t k = 0; k < n; k++) {
                if (isnan(xr[k * inner])) nan = true;
                if (xr[k * inner] > m) m = xr[k * inner];
            }
            for (int64_t k = 0; k < n; k++) sum += exp(xr[k * inner] - m);
            for (int64_t k = 0; k < n; k++) {
                double v = lg ? (xr[k * inner] - m) - log(sum) : exp(xr[k * inner] - m) / sum;
                yr[k * inner] = nan ? NAN : v;
            }
        }
}

enum { NK_RMS, NK_GEMMA, NK_LN };
static void ref_norm(int kind, const double *x, int64_t rows, int64_t D, const double *w, const double *b, double eps,
                     double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * D;
        double *yr = y + r * D;
        if (kind == NK_LN) {
            double mean = 0, var = 0;
            for (int64_t i = 0; i < D; i++) mean += xr[i];
            mean /= (double)D;
            for (int64_t i = 0; i < D; i++) var += (xr[i] - mean) * (xr[i] - mean);
            var /= (double)D;
            for (int64_t i = 0; i < D; i++)
                yr[i] = (xr[i] - mean) / sqrt(var + eps) * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
        } else {
            double ss = 0;
            for (int64_t i = 0; i < D; i++) ss += xr[i] * xr[i];
            double rms = sqrt(ss / (double)D + eps);
            for (int64_t i = 0; i < D; i++) {
                double wi = w ? w[i] : 0.0;
                yr[i] = xr[i] / rms * (kind == NK_GEMMA ? 1.0 + wi : w ? wi : 1.0);
            }
        }
    }
}

/* op: 0 rope ([B, H, T, D], halves), 1 rope_i (interleaved), 2 rope_thd ([B, T, H, D], halves) */
static void ref_rope(int op, const double *x, wk_shape s, const double *cs, const double *sn, int64_t off, double *y)
{
    const int64_t D = s.dims[3], half = D / 2, rows = s.dims[0] * s.dims[1] * s.dims[2];
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = op == 2 ? (r / s.dims[2]) % s.dims[1] : r % s.dims[2];
        const double *c = cs + (t + off) * half, *sr = sn + (t + off) * half, *xr = x + r * D;
        double *yr = y + r * D;
        for (int64_t i = 0; i < half; i++) {
            int64_t i0 = op == 1 ? 2 * i : i, i1 = op == 1 ? 2 * i + 1 : i + half;
            yr[i0] = xr[i0] * c[i] - xr[i1] * sr[i];
            yr[i1] = xr[i0] * sr[i] + xr[i1] * c[i];
        }
    }
}

/* mask: the full [B, Hq, Tq, Tk] values or NULL */
static void ref_attention(int64_t B, int64_t Hq, int64_t Hkv, int64_t Tq, int64_t Tk, int64_t D, const double *q,
                          const double *k, const double *v, const double *mask, double scale, bool causal,
                          int64_t window, double softcap, double *out)
{
    const int64_t g = Hq / Hkv;
    double *s = malloc((size_t)(Tk + 1) * sizeof(double));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Tq; i++) {
                const double *qr = q + ((b * Hq + h) * Tq + i) * D;
                double *orow = out + ((b * Hq + h) * Tq + i) * D;
                const int64_t pos = i + Tk - Tq;
                double m = -INFINITY;
                for (int64_t j = 0; j < Tk; j++) {
                    bool vis = (!causal || j <= pos) && (window <= 0 || j > pos - window);
                    if (!vis) { s[j] = -INFINITY; continue; }
                    const double *kr = k + ((b * Hkv + h / g) * Tk + j) * D;
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += qr[d] * kr[d];
                    double sc = scale * dot;
                    if (softcap > 0) sc = softcap * tanh(sc / softcap);
                    if (mask) sc += mask[((b * Hq + h) * Tq + i) * Tk + j];
                    s[j] = sc;
                    if (sc > m) m = sc;
                }
                for (int64_t d = 0; d < D; d++) orow[d] = 0;
                if (m == -INFINITY) continue;
                double l = 0;
                for (int64_t j = 0; j < Tk; j++) l += exp(s[j] - m);
                for (int64_t j = 0; j < Tk; j++) {
                    double p = exp(s[j] - m) / l;
                    if (p == 0) continue;
                    const double *vr = v + ((b * Hkv + h / g) * Tk + j) * D;
                    for (int64_t d = 0; d < D; d++) orow[d] += p * vr[d];
                }
            }
    free(s);
}

/* ---- softmax ------------------------------------------------------------------ */

typedef struct smcase { const char *name; t_layout_kind kind; wk_shape s; int dim; } smcase;
static const smcase smcases[] = {
    { "n1", LK_CONTIG, { 2, { 3, 1 } }, -1 },
    { "n7", LK_CONTIG, { 2, { 3, 7 } }, -1 },
    { "n33", LK_CONTIG, { 2, { 3, 33 } }, 1 },
    { "n1023", LK_CONTIG, { 2, { 3, 1023 } }, -1 },
    { "n4097", LK_CONTIG, { 2, { 2, 4097 } }, -1 },
    { "rank1_n33", LK_CONTIG, { 1, { 33 } }, 0 },
    { "transposed_dim0", LK_TRANSPOSED, { 3, { 5, 7, 9 } }, 0 },
    { "transposed_dim1", LK_TRANSPOSED, { 3, { 5, 7, 9 } }, 1 },
    { "transposed_dimlast", LK_TRANSPOSED, { 3, { 5, 7, 9 } }, -1 },
    { "transposed_big_dim0", LK_TRANSPOSED, { 2, { 1023, 33 } }, 0 },
    { "reversed_dim1", LK_REVERSED, { 3, { 3, 5, 7 } }, 1 },
    { "narrowed_rows", LK_NARROWED, { 2, { 6, 33 } }, -1 },
    { "narrowed_dim0", LK_NARROWED, { 3, { 6, 33, 4 } }, 0 },
    { "broadcast_dim0", LK_BROADCAST, { 2, { 4, 33 } }, 0 },
    { "broadcast_dim1", LK_BROADCAST, { 3, { 4, 7, 5 } }, 1 },
    { "inner100_tiles", LK_CONTIG, { 3, { 3, 33, 100 } }, 1 },
    { "inner9_n4097", LK_CONTIG, { 3, { 2, 4097, 9 } }, 1 },
    { "mid_n1023", LK_CONTIG, { 3, { 2, 1023, 5 } }, -2 },
    { "empty_rows", LK_CONTIG, { 2, { 0, 5 } }, -1 },
    { "empty_dim", LK_CONTIG, { 2, { 3, 0 } }, -1 },
};

static void softmax_case(wk_dtype dt, bool lg, const smcase *C)
{
    double *x;
    wk_tensor *t = mk(dt, C->kind, C->s, -8, 8, &x);
    if (!t) return;
    t_cover(lg ? "log_softmax" : "softmax", dt);
    wk_tensor *y = t_own(lg ? wk_log_softmax(t, C->dim) : wk_softmax(t, C->dim));
    double *ref = t_mem((size_t)t_numel(C->s) * sizeof(double) + 8);
    ref_softmax(x, C->s, C->dim, lg, ref);
    t_check_close(lg ? "log_softmax" : "softmax", y, C->s, dt, ref, t_bound_acc(dt));
}

/* rows of -inf: all (NaN), some (zeros / -inf), a +inf (NaN), a NaN (NaN) */
static void softmax_inf_case(wk_dtype dt, bool lg, int dim)
{
    const wk_shape s = WK_SHAPE(6, 9);
    double v[54];
    t_rng *r = t_r();
    for (int i = 0; i < 54; i++) v[i] = t_rng_range(r, -4, 4);
    if (dim == 1) {
        for (int j = 0; j < 9; j++) v[9 + j] = -INFINITY;   /* row 1: all -inf */
        v[18] = v[22] = v[26] = -INFINITY;                    /* row 2: some     */
        v[27 + 4] = INFINITY;                                 /* row 3: a +inf   */
        v[36 + 2] = NAN;                                      /* row 4: a NaN    */
    } else {
        for (int i = 0; i < 6; i++) v[i * 9 + 1] = -INFINITY; /* column 1: all -inf */
        v[2] = v[20] = -INFINITY;                              /* column 2: some     */
        v[9 + 5] = NAN;                                        /* column 5: a NaN    */
    }
    double *x;
    wk_tensor *t = from_vals(dt, s, v, &x);
    if (!t) return;
    t_cover(lg ? "log_softmax" : "softmax", dt);
    wk_tensor *y = t_own(lg ? wk_log_softmax(t, dim) : wk_softmax(t, dim));
    double ref[54];
    ref_softmax(x, s, dim, lg, ref);
    t_check_close(lg ? "log_softmax" : "softmax", y, s, dt, ref, t_bound_acc(dt));
}

/* ---- norms ---------------------------------------------------------------------- */

typedef struct ncase { const char *name; t_layout_kind kind; wk_shape s; } ncase;
static const ncase ncases[] = {
    { "d1", LK_CONTIG, { 2, { 3, 1 } } },
    { "d7", LK_CONTIG, { 2, { 3, 7 } } },
    { "d33", LK_CONTIG, { 2, { 4, 33 } } },
    { "d64", LK_CONTIG, { 2, { 5, 64 } } },
    { "d80", LK_CONTIG, { 2, { 5, 80 } } },
    { "d128", LK_CONTIG, { 3, { 2, 3, 128 } } },
    { "d1023", LK_CONTIG, { 2, { 3, 1023 } } },
    { "d4097", LK_CONTIG, { 2, { 2, 4097 } } },
    { "rows1023_d64", LK_CONTIG, { 2, { 1023, 64 } } },
    { "narrowed", LK_NARROWED, { 2, { 5, 33 } } },
    { "narrowed3d", LK_NARROWED, { 3, { 2, 5, 33 } } },
    { "transposed", LK_TRANSPOSED, { 2, { 33, 7 } } },
    { "broadcast_rows", LK_BROADCAST, { 2, { 4, 33 } } },
    { "reversed3d", LK_REVERSED, { 3, { 3, 5, 7 } } },
    { "rank1", LK_CONTIG, { 1, { 33 } } },
    { "empty", LK_CONTIG, { 2, { 0, 16 } } },
};

/* kind: NK_RMS (wflags bit 0: weight), NK_GEMMA, NK_LN (bit 0 weight, bit 1 bias) */
static void norm_case(wk_dtype dt, int kind, int wflags, const ncase *C, double eps)
{
    double *x, *w = NULL, *b = NULL;
    const int64_t D = C->s.dims[C->s.rank - 1], rows = D ? t_numel(C->s) / D : 0;
    wk_tensor *t = mk(dt, C->kind, C->s, -3, 3, &x);
    wk_tensor *tw = wflags & 1 ? mk(dt, LK_CONTIG, WK_SHAPE(D), -1.5, 1.5, &w) : NULL;
    wk_tensor *tb = wflags & 2 ? mk(dt, LK_TRANSPOSED, WK_SHAPE(D), -1, 1, &b) : NULL;   /* a strided bias */
    if (!t || ((wflags & 1) && !tw) || ((wflags & 2) && !tb)) return;
    const char *op = kind == NK_LN ? "layer_norm" : "rms_norm";
    t_cover(op, dt);
    wk_tensor *y = t_own(kind == NK_LN ? wk_layer_norm(t, tw, tb, eps)
                         : kind == NK_GEMMA ? wk_rms_norm_gemma(t, tw, eps) : wk_rms_norm(t, tw, eps));
    double *ref = t_mem((size_t)t_numel(C->s) * sizeof(double) + 8);
    ref_norm(kind, x, rows, D, w, b, eps, ref);
    t_check_close(op, y, C->s, dt, ref, t_bound_acc(dt));
}

static void add_rms_norm_case(wk_dtype dt, const ncase *C, bool gemma, bool weight)
{
    double *x, *r, *w = NULL;
    const int64_t D = C->s.dims[C->s.rank - 1], rows = D ? t_numel(C->s) / D : 0, n = t_numel(C->s);
    wk_tensor *tx = mk(dt, C->kind, C->s, -3, 3, &x);
    wk_tensor *tr = mk(dt, C->kind == LK_CONTIG ? LK_NARROWED : LK_CONTIG, C->s, -3, 3, &r);
    wk_tensor *tw = weight ? mk(dt, LK_CONTIG, WK_SHAPE(D), -1, 1, &w) : NULL;
    if (!tx || !tr || (weight && !tw)) return;
    t_cover("add_rms_norm", dt);
    wk_tensor *sum = NULL;
    wk_tensor *y = t_own(wk_add_rms_norm(tx, tr, tw, 1e-6, gemma, &sum));
    t_own(sum);
    if (!y || !sum) {
        t_fail("add_rms_norm failed (result %p, sum %p): %s", (void *)y, (void *)sum, wk_last_error());
        return;
    }
    /* the sum rounded to the dtype, and the norm of those rounded values */
    double *s = t_mem((size_t)n * sizeof(double) + 8), *ref = t_mem((size_t)n * sizeof(double) + 8);
    for (int64_t i = 0; i < n; i++) s[i] = t_round_to(dt, x[i] + r[i]);
    ref_norm(gemma ? NK_GEMMA : NK_RMS, s, rows, D, w, NULL, 1e-6, ref);
    t_check_close("add_rms_norm sum", sum, C->s, dt, s, t_bound(dt));
    t_check_close("add_rms_norm", y, C->s, dt, ref, t_bound_acc(dt));
    /* exactly what a separate add then rms_norm give */
    wk_tensor *s2 = T_NEED(wk_add(tx, tr));
    wk_tensor *y2 = s2 ? T_NEED(gemma ? wk_rms_norm_gemma(s2, tw, 1e-6) : wk_rms_norm(s2, tw, 1e-6)) : NULL;
    if (!y2) return;
    t_arr a2 = t_read(s2, NULL), b2 = t_read(y2, NULL);
    t_check_exact("add_rms_norm sum vs wk_add", sum, C->s, dt, a2.p);
    t_check_exact("add_rms_norm vs wk_add + wk_rms_norm", y, C->s, dt, b2.p);
}

/* ---- silu_mul ----------------------------------------------------------------------- */

typedef struct bcase { const char *name; t_layout_kind ka; wk_shape sa; t_layout_kind kb; wk_shape sb; } bcase;
static const bcase bcases[] = {
    { "same", LK_CONTIG, { 2, { 4, 33 } }, LK_CONTIG, { 2, { 4, 33 } } },
    { "size1", LK_CONTIG, { 1, { 1 } }, LK_CONTIG, { 1, { 1 } } },
    { "size7", LK_CONTIG, { 1, { 7 } }, LK_CONTIG, { 1, { 7 } } },
    { "size1023", LK_CONTIG, { 1, { 1023 } }, LK_NARROWED, { 1, { 1023 } } },
    { "size4097", LK_CONTIG, { 1, { 4097 } }, LK_CONTIG, { 1, { 4097 } } },
    { "a_transposed", LK_TRANSPOSED, { 2, { 33, 31 } }, LK_CONTIG, { 2, { 33, 31 } } },
    { "both_transposed", LK_TRANSPOSED, { 2, { 33, 31 } }, LK_TRANSPOSED, { 2, { 33, 31 } } },
    { "bcast_row", LK_CONTIG, { 2, { 7, 33 } }, LK_CONTIG, { 1, { 33 } } },
    { "bcast_row_left", LK_CONTIG, { 1, { 33 } }, LK_NARROWED, { 2, { 7, 33 } } },
    { "bcast_col", LK_CONTIG, { 2, { 7, 33 } }, LK_CONTIG, { 2, { 7, 1 } } },
    { "bcast_both", LK_CONTIG, { 2, { 7, 1 } }, LK_CONTIG, { 2, { 1, 33 } } },
    { "bcast_stride0", LK_BROADCAST, { 3, { 3, 5, 7 } }, LK_CONTIG, { 3, { 3, 5, 7 } } },
    { "scalar_x_vec", LK_CONTIG, { 0, { 0 } }, LK_CONTIG, { 1, { 9 } } },
    { "rank0", LK_CONTIG, { 0, { 0 } }, LK_CONTIG, { 0, { 0 } } },
    { "empty", LK_CONTIG, { 2, { 0, 5 } }, LK_CONTIG, { 1, { 5 } } },
};

static void silu_mul_case(wk_dtype dt, const bcase *C)
{
    double *a, *b;
    wk_tensor *ta = mk(dt, C->ka, C->sa, -8, 8, &a), *tb = mk(dt, C->kb, C->sb, -2, 2, &b);
    if (!ta || !tb) return;
    t_cover("silu_mul", dt);
    wk_shape so;
    if (!t_bcast_shape(C->sa, C->sb, &so)) { t_fail("bad test shapes"); return; }
    wk_tensor *y = t_own(wk_silu_mul(ta, tb));
    int64_t n = t_numel(so);
    double *ref = t_mem((size_t)n * sizeof(double) + 8);
    for (int64_t i = 0; i < n; i++) {
        double x = a[t_bcast_index(so, C->sa, i)], z = b[t_bcast_index(so, C->sb, i)];
        ref[i] = x / (1 + exp(-x)) * z;
    }
    t_check_close("silu_mul", y, so, dt, ref, t_bound(dt));
}

/* a q8_0 matrix [rows, K] of random values; *v receives its dequantized
 * values (NULL and no tensor on failure). Owned by the case. */
static wk_tensor *mk_q8_0(int64_t rows, int64_t K, double **v)
{
    *v = NULL;
    wk_tensor *wf = mk(WK_F32, LK_CONTIG, WK_SHAPE(rows, K), -1, 1, NULL);
    wk_tensor *w = wf ? T_NEED(wk_quantize(wf, WK_Q8_0)) : NULL;
    wk_tensor *wd = w ? T_NEED(wk_dequantize(w, WK_F32)) : NULL;
    bool ok = wd != NULL;
    t_arr a = ok ? t_read(wd, &ok) : (t_arr){ 0 };
    if (!ok) return NULL;
    *v = as_doubles(&a);
    return w;
}

/* ---- linear_silu_mul: x . w^T, then silu of the gate half times the up half --------------------------- */

/* x [rows.., K] against w [2F, K]: dense (wlay: contiguous, a window of a
 * wider matrix, or w's rows as a view with a row stride), or q8_0
 * (quant); the reference in double from the values the tensors hold, the
 * two products rounded to x's dtype as the product's result is */
static void linear_silu_mul_case(wk_dtype dt, wk_shape xs, int64_t F, t_layout_kind xlay, t_layout_kind wlay,
                                 bool quant)
{
    const int64_t K = xs.dims[xs.rank - 1], rows = t_numel(xs) / (K ? K : 1);
    double *xv = NULL, *wv = NULL;
    wk_tensor *x = mk(dt, xlay, xs, -1, 1, &xv);
    wk_tensor *w = quant ? mk_q8_0(2 * F, K, &wv) : mk(dt, wlay, WK_SHAPE(2 * F, K), -1, 1, &wv);
    if (!x || !w || !xv || !wv) return;
    t_cover("linear_silu_mul", dt);
    wk_tensor *y = t_own(wk_linear_silu_mul(x, w));
    wk_shape so = xs;
    so.dims[so.rank - 1] = F;
    double *ref = t_mem((size_t)(rows * F) * sizeof(double) + 8);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < F; j++) {
            double g = 0, u = 0;
            for (int64_t k = 0; k < K; k++) {
                g += xv[r * K + k] * wv[j * K + k];
                u += xv[r * K + k] * wv[(F + j) * K + k];
            }
            g = t_round_to(dt, g), u = t_round_to(dt, u);
            ref[r * F + j] = g / (1 + exp(-g)) * u;
        }
    t_check_close("linear_silu_mul", y, so, dt, ref, t_bound_acc(dt));
}

/* ---- rope ------------------------------------------------------------------------------ */

static const char *const rope_names[3] = { "rope", "rope_i", "rope_thd" };

/* tables: 0 wk_rope_tables, 1 random f32, 2 random f16 (converted by the op), 3 random f32 narrowed views */
static void rope_case(wk_dtype dt, int op, wk_shape s, in_layout lay, int64_t off, int tables)
{
    const int64_t D = s.dims[3], half = D / 2, T = s.dims[op == 2 ? 1 : 2], npos = T + off + 3;
    double *x, *cs, *sn;
    wk_tensor *tx = mk_in(dt, lay, s, -2, 2, &x), *tc = NULL, *ts = NULL;
    if (!tx) return;
    if (tables == 0) {
        wk_tensor *c = NULL, *si = NULL;
        T_OK(wk_rope_tables(t_dev(), D, 10000, npos, NULL, &c, &si));
        tc = t_own(c);
        ts = t_own(si);
        if (!tc || !ts) return;
        t_arr ac = t_read(tc, NULL), as = t_read(ts, NULL);
        cs = as_doubles(&ac);
        sn = as_doubles(&as);
    } else {
        const wk_dtype tdt = tables == 2 ? WK_F16 : WK_F32;
        const t_layout_kind tk = tables == 3 ? LK_NARROWED : LK_CONTIG;
        tc = mk(tdt, tk, WK_SHAPE(npos, half), -1, 1, &cs);
        ts = mk(tdt, tk, WK_SHAPE(npos, half), -1, 1, &sn);
        if (!tc || !ts) return;
    }
    t_cover(rope_names[op], dt);
    wk_tensor *y = t_own(op == 0 ? wk_rope(tx, tc, ts, off) : op == 1 ? wk_rope_i(tx, tc, ts, off)
                                                                      : wk_rope_thd(tx, tc, ts, off));
    double *ref = t_mem((size_t)t_numel(s) * sizeof(double) + 8);
    ref_rope(op, x, s, cs, sn, off, ref);
    t_check_close(rope_names[op], y, s, dt, ref, t_bound_acc(dt));
}

/* ---- rope_kv: rope of q and k, k and v appended to caches ----------------------------------- */

/* qkv [B, T, Hq + 2 Hkv, D] in layout lay; caches [B, Hkv, C, D] of random
 * values (what rope_kv must leave alone outside rows off .. off + T - 1);
 * devpos: 0 host offset, 1 a u32 device position, 2 an i64 one; rows past
 * the tables or caches (devpos only) write nothing and give zero queries. */
static void rope_kv_case(wk_dtype dt, int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, int64_t C, int64_t off,
                         int64_t npos, in_layout lay, bool inter, int devpos, t_layout_kind cache_lay)
{
    const int64_t H = Hq + 2 * Hkv, half = D / 2;
    double *x = NULL, *cs = NULL, *sn = NULL, *k0 = NULL, *v0 = NULL;
    wk_tensor *tx = mk_in(dt, lay, WK_SHAPE(B, T, H, D), -2, 2, &x);
    wk_tensor *tc = mk(WK_F32, LK_CONTIG, WK_SHAPE(npos, half), -1, 1, &cs);
    wk_tensor *ts = mk(WK_F32, LK_CONTIG, WK_SHAPE(npos, half), -1, 1, &sn);
    wk_tensor *kc = mk(dt, cache_lay, WK_SHAPE(B, Hkv, C, D), -9, 9, &k0);
    wk_tensor *vc = mk(dt, cache_lay, WK_SHAPE(B, Hkv, C, D), -9, 9, &v0);
    if (!tx || !tc || !ts || !kc || !vc || !x || !cs || !sn || !k0 || !v0) return;
    wk_tensor *pt = NULL;
    if (devpos == 1) pt = t_own(wk_from_host(t_dev(), WK_U32, WK_SHAPE(1), &(uint32_t){ (uint32_t)off }));
    if (devpos == 2) pt = t_own(wk_from_host(t_dev(), WK_I64, WK_SHAPE(1), &(int64_t){ off }));
    t_cover("rope_kv", dt);
    wk_tensor *y = t_own(wk_rope_kv(tx, Hq, tc, ts, devpos ? 0 : off, pt, inter, kc, vc));
    if (!y) {
        t_fail("rope_kv returned NULL: %s", wk_last_error());
        return;
    }
    const int64_t nq = B * T * Hq * D, nc = B * Hkv * C * D;
    double *rq = t_mem((size_t)nq * sizeof(double) + 8), *rk = t_mem((size_t)nc * sizeof(double) + 8),
           *rv = t_mem((size_t)nc * sizeof(double) + 8);
    for (int64_t i = 0; i < nc; i++) rk[i] = k0[i], rv[i] = v0[i];
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++) {
                const int64_t p = off + t;
                const bool in = p < npos && p < C;
                const double *xr = x + ((b * T + t) * H + h) * D;
                double row[512];
                for (int64_t d = 0; d < D; d++) row[d] = xr[d];
                if (in && h < Hq + Hkv)
                    for (int64_t i = 0; i < half; i++) {
                        const int64_t i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + half;
                        const double c = cs[p * half + i], sv = sn[p * half + i];
                        row[i0] = xr[i0] * c - xr[i1] * sv;
                        row[i1] = xr[i0] * sv + xr[i1] * c;
                    }
                if (h < Hq) {
                    for (int64_t d = 0; d < D; d++) rq[((b * T + t) * Hq + h) * D + d] = in ? row[d] : 0.0;
                } else if (in) {
                    double *dst = h < Hq + Hkv ? rk : rv;
                    const int64_t hh = h < Hq + Hkv ? h - Hq : h - Hq - Hkv;
                    for (int64_t d = 0; d < D; d++) dst[((b * Hkv + hh) * C + p) * D + d] = row[d];
                }
            }
    t_check_close("rope_kv queries", y, WK_SHAPE(B, T, Hq, D), dt, rq, t_bound_acc(dt));
    t_check_close("rope_kv k_cache", kc, WK_SHAPE(B, Hkv, C, D), dt, rk, t_bound_acc(dt));
    t_check_close("rope_kv v_cache", vc, WK_SHAPE(B, Hkv, C, D), dt, rv, t_bound_acc(dt));
}

static void rope_kv_errors(void)
{
    wk_tensor *qkv = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 1, 8, 4)));
    wk_tensor *c = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(4, 2)));
    wk_tensor *kc = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 2, 3, 4)));
    wk_tensor *vc = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 2, 3, 4)));
    wk_tensor *fp = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1)));
    if (!qkv || !c || !kc || !vc || !fp) return;
    T_CHECK(!wk_rope_kv(qkv, 3, c, c, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_SHAPE,
            "8 heads as 3 query heads + 2 x 2.5 accepted");
    T_CHECK(!wk_rope_kv(qkv, 4, c, c, 3, NULL, false, kc, vc) && wk_last_status() == WK_ERR_INDEX,
            "position 3 of a 3-row cache accepted");
    T_CHECK(!wk_rope_kv(qkv, 4, c, c, 0, fp, false, kc, vc) && wk_last_status() == WK_ERR_ARGUMENT,
            "an f32 position accepted");
    T_CHECK(!wk_rope_kv(qkv, 4, c, c, 0, NULL, false, kc, kc) && wk_last_status() == WK_ERR_ARGUMENT,
            "one tensor as both caches accepted");
    T_CHECK(!wk_rope_kv(qkv, 4, c, c, 0, NULL, false, kc, NULL) && wk_last_status() == WK_ERR_ARGUMENT,
            "a NULL cache accepted");
    wk_tensor *kt = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 2, 4, 3)));
    T_CHECK(kt && !wk_rope_kv(qkv, 4, c, c, 0, NULL, false, t_own(wk_transpose(kt, 2, 3)), vc) && wk_last_status() == WK_ERR_SHAPE,
            "a cache whose last stride is not 1 accepted");
    wk_clear_error();
}

/* ---- linear_rope_kv: the q/k/v product and rope_kv in one call --------------------------- */

/* true when a and b hold the same bytes (both dense, one shape and dtype) */
static bool same_bytes(const wk_tensor *a, const wk_tensor *b)
{
    const size_t n = a && b ? wk_tensor_nbytes(a) : 0;
    if (!a || !b || n != wk_tensor_nbytes(b)) return false;
    unsigned char *x = t_mem(n + 1), *y = t_mem(n + 1);
    return wk_to_host(a, x, n) == WK_OK && wk_to_host(b, y, n) == WK_OK && memcmp(x, y, n) == 0;
}

/* x [T, K] . w^T (w [(Hq + 2 Hkv) D, K]: dense of x's dtype, its rows a
 * window of a wider matrix when wide, or q8_0) with rope_kv, against the
 * two calls on the same device (the same bits: queries and both caches,
 * whose other rows hold random values) and against a reference in double
 * from the values the tensors hold (each product rounded to x's dtype, as
 * the product's result is). devpos: 0 the host's position, 1 a u32 one on
 * the device. */
static void linear_rope_kv_case(wk_dtype dt, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, int64_t K, int64_t off,
                                bool inter, int devpos, bool wide, bool quant)
{
    const int64_t H = Hq + 2 * Hkv, half = D / 2, C = off + T + 2, npos = C + 1;
    double *xv = NULL, *wv = NULL, *cs = NULL, *sn = NULL, *k0 = NULL, *v0 = NULL;
    wk_tensor *x = mk(dt, LK_CONTIG, WK_SHAPE(T, K), -1, 1, &xv);
    wk_tensor *w = quant ? mk_q8_0(H * D, K, &wv) : mk(dt, wide ? LK_NARROWED : LK_CONTIG, WK_SHAPE(H * D, K), -1, 1, &wv);
    wk_tensor *tc = mk(WK_F32, LK_CONTIG, WK_SHAPE(npos, half), -1, 1, &cs);
    wk_tensor *ts = mk(WK_F32, LK_CONTIG, WK_SHAPE(npos, half), -1, 1, &sn);
    wk_tensor *kc = mk(dt, LK_CONTIG, WK_SHAPE(1, Hkv, C, D), -9, 9, &k0);
    wk_tensor *vc = mk(dt, LK_CONTIG, WK_SHAPE(1, Hkv, C, D), -9, 9, &v0);
    if (!x || !w || !tc || !ts || !kc || !vc || !xv || !wv || !cs || !sn) return;
    wk_tensor *kc2 = t_own(wk_copy(kc)), *vc2 = t_own(wk_copy(vc));
    wk_tensor *pt = devpos ? t_own(wk_from_host(t_dev(), WK_U32, WK_SHAPE(1), &(uint32_t){ (uint32_t)off })) : NULL;
    if (!kc2 || !vc2 || (devpos && !pt)) return;
    t_cover("linear_rope_kv", dt);
    wk_tensor *y = t_own(wk_linear_rope_kv(x, w, Hq, tc, ts, devpos ? 0 : off, pt, inter, kc, vc));
    if (!y) {
        t_fail("linear_rope_kv returned NULL: %s", wk_last_error());
        return;
    }
    wk_tensor *qkv = quant ? t_own(wk_qmatmul(x, w)) : t_own(wk_matmul(x, t_own(wk_transpose(w, 0, 1))));
    wk_tensor *y2 = qkv ? t_own(wk_rope_kv(t_own(wk_reshape(qkv, WK_SHAPE(1, T, H, D))), Hq, tc, ts, devpos ? 0 : off,
                                           pt, inter, kc2, vc2))
                        : NULL;
    T_CHECK(same_bytes(y, y2), "queries differ from the two calls'");
    T_CHECK(same_bytes(kc, kc2), "the key cache differs from the two calls'");
    T_CHECK(same_bytes(vc, vc2), "the value cache differs from the two calls'");
    double *rq = t_mem((size_t)(T * Hq * D) * sizeof(double) + 8), row[512];
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < Hq; h++) {
            for (int64_t d = 0; d < D; d++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++) acc += xv[t * K + k] * wv[(h * D + d) * K + k];
                row[d] = t_round_to(dt, acc);
            }
            const int64_t p = off + t;
            for (int64_t i = 0; i < half; i++) {
                const int64_t i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + half;
                const double c = cs[p * half + i], sv = sn[p * half + i];
                rq[(t * Hq + h) * D + i0] = row[i0] * c - row[i1] * sv;
                rq[(t * Hq + h) * D + i1] = row[i0] * sv + row[i1] * c;
            }
        }
    t_check_close("linear_rope_kv queries", y, WK_SHAPE(1, T, Hq, D), dt, rq, t_bound_acc(dt));
}

static void linear_rope_kv_errors(void)
{
    wk_tensor *x = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 16)));
    wk_tensor *w = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(32, 16)));
    wk_tensor *c = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(4, 2)));
    wk_tensor *c3 = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(4, 3)));
    wk_tensor *kc = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 2, 3, 4)));
    wk_tensor *vc = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 2, 3, 4)));
    wk_tensor *xh = t_own(wk_zeros(t_dev(), WK_F16, WK_SHAPE(1, 16)));
    wk_tensor *x3 = t_own(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 1, 16)));
    if (!x || !w || !c || !c3 || !kc || !vc || !xh || !x3) return;
    T_CHECK(t_own(wk_linear_rope_kv(x, w, 4, c, c, 0, NULL, false, kc, vc)) != NULL, "a valid call failed: %s",
            wk_last_error());
    T_CHECK(!wk_linear_rope_kv(x, w, 4, c3, c3, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_SHAPE,
            "32 rows as heads of D = 6 accepted");
    T_CHECK(!wk_linear_rope_kv(x3, w, 4, c, c, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_SHAPE,
            "a rank-3 x accepted");
    T_CHECK(!wk_linear_rope_kv(xh, w, 4, c, c, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_DTYPE,
            "an f16 x with an f32 w accepted");
    T_CHECK(!wk_linear_rope_kv(x, w, 4, NULL, c, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_SHAPE,
            "a NULL cos accepted");
    T_CHECK(!wk_linear_rope_kv(x, w, 3, c, c, 0, NULL, false, kc, vc) && wk_last_status() == WK_ERR_SHAPE,
            "8 heads as 3 query heads + 2 x 2.5 accepted");
    T_CHECK(!wk_linear_rope_kv(x, w, 4, c, c, 3, NULL, false, kc, vc) && wk_last_status() == WK_ERR_INDEX,
            "position 3 of a 3-row cache accepted");
    wk_clear_error();
}

/* ---- rope tables -------------------------------------------------------------------------- */

static double ref_inv_freq(int64_t i, int64_t D, double base, const wk_rope_scaling *sc)
{
    double f = 1.0 / pow(base, (double)(2 * i) / (double)D);
    if (!sc || sc->type != WK_ROPE_SCALING_LLAMA3) return f;
    const double wavelen = 2 * M_PI / f;
    const double low_wavelen = sc->original_max_position / sc->low_freq_factor;
    const double high_wavelen = sc->original_max_position / sc->high_freq_factor;
    if (wavelen < high_wavelen) return f;
    if (wavelen > low_wavelen) return f / sc->factor;
    const double a = (sc->original_max_position / wavelen - sc->low_freq_factor) /
                     (sc->high_freq_factor - sc->low_freq_factor);
    return (1 - a) * f / sc->factor + a * f;
}

static void rope_tables_case(int64_t D, double base, int64_t npos, const wk_rope_scaling *sc)
{
    wk_tensor *c = NULL, *s = NULL;
    T_OK(wk_rope_tables(t_dev(), D, base, npos, sc, &c, &s));
    t_own(c);
    t_own(s);
    if (!c || !s) return;
    const int64_t half = D / 2;
    double *rc = t_mem((size_t)(npos * half) * sizeof(double) + 8), *rs = t_mem((size_t)(npos * half) * sizeof(double) + 8);
    for (int64_t p = 0; p < npos; p++)
        for (int64_t i = 0; i < half; i++) {
            double pp = sc && sc->type == WK_ROPE_SCALING_LINEAR ? (double)p / sc->factor : (double)p;
            double ang = pp * ref_inv_freq(i, D, base, sc);
            rc[p * half + i] = cos(ang);
            rs[p * half + i] = sin(ang);
        }
    t_check_close("rope_tables cos", c, WK_SHAPE(npos, half), WK_F32, rc, t_bound(WK_F32));
    t_check_close("rope_tables sin", s, WK_SHAPE(npos, half), WK_F32, rs, t_bound(WK_F32));
}

/* ---- attention ------------------------------------------------------------------------------ */

/* mask shapes: none, [Tq, Tk], [1, Hq, Tq, Tk], [B, 1, 1, Tk], [B, Hq, Tq, Tk], [Tk], [B, 1, Tq, Tk] */
enum { M_NONE, M_TQTK, M_1HTT, M_B11TK, M_FULL, M_TK, M_B1TT };

typedef struct acase {
    const char *name;
    int64_t B, Hq, Hkv, Tq, Tk, D;
    double scale;
    bool causal;
    int64_t window;
    double softcap;
    int mask;          /* M_* */
    int mask_inf;      /* 0 none, 1 some -inf entries, 2 also the whole first row of the mask */
    wk_dtype mask_dt;  /* 0: f32 */
    in_layout lay;
    double qr;         /* q values in [-qr, qr] */
} acase;

static const acase acases[] = {
    { "plain_b2_h4_t33_d64", 2, 4, 4, 33, 33, 64, 0, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "scale0.3", 1, 2, 2, 7, 33, 64, 0.3, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "gqa4", 2, 8, 2, 7, 33, 64, 0, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "gqa8", 1, 8, 1, 33, 33, 128, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "causal_square", 1, 2, 2, 33, 33, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "causal_tq7_tk33", 2, 2, 1, 7, 33, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "causal_tq33_tk7", 1, 2, 2, 33, 7, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "causal_tq1_tk1", 1, 4, 1, 1, 1, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "decode_tk7", 1, 8, 1, 1, 7, 128, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "decode_tk33", 2, 8, 2, 1, 33, 128, 0, true, 0, 0, M_NONE, 0, 0, IN_SWAP12, 1 },
    { "decode_tk1023", 1, 8, 8, 1, 1023, 128, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "decode_tk4097_gqa8", 1, 8, 1, 1, 4097, 128, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 2 },
    { "tq7_tk4097_window", 1, 4, 1, 7, 4097, 64, 0, true, 100, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "long_causal_1023", 1, 1, 1, 1023, 1023, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "window5", 1, 2, 2, 33, 33, 64, 0, true, 5, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "window100_gt_tk", 1, 2, 2, 33, 33, 64, 0, true, 100, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "window5_noncausal", 1, 2, 2, 33, 33, 64, 0, false, 5, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "window3_tq7_tk33", 1, 2, 1, 7, 33, 64, 0, true, 3, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "window1", 1, 2, 2, 9, 9, 64, 0, true, 1, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "softcap5", 1, 2, 2, 33, 33, 64, 0, false, 0, 5, M_NONE, 0, 0, IN_CONTIG, 3 },
    { "softcap_causal_scale", 1, 4, 2, 7, 33, 64, 1.0, true, 0, 2, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "mask_tqtk", 1, 2, 2, 7, 33, 64, 0, false, 0, 0, M_TQTK, 1, 0, IN_CONTIG, 1 },
    { "mask_1hqtqtk", 2, 4, 2, 7, 33, 64, 0, false, 0, 0, M_1HTT, 1, 0, IN_CONTIG, 1 },
    { "mask_b11tk", 2, 4, 4, 7, 33, 64, 0, true, 0, 0, M_B11TK, 1, 0, IN_CONTIG, 1 },
    { "mask_full", 2, 2, 1, 7, 33, 64, 0, false, 0, 0, M_FULL, 1, 0, IN_CONTIG, 1 },
    { "mask_tk", 2, 2, 2, 7, 33, 64, 0, false, 0, 0, M_TK, 1, 0, IN_CONTIG, 1 },
    { "mask_b1tqtk", 2, 4, 1, 7, 33, 64, 0, false, 0, 0, M_B1TT, 1, 0, IN_CONTIG, 1 },
    { "mask_f16", 1, 2, 2, 7, 33, 64, 0, false, 0, 0, M_TQTK, 1, WK_F16, IN_CONTIG, 1 },
    { "mask_f64", 1, 2, 2, 7, 33, 64, 0, false, 0, 0, M_1HTT, 1, WK_F64, IN_CONTIG, 1 },
    { "masked_row_tqtk", 1, 2, 2, 7, 33, 64, 0, false, 0, 0, M_TQTK, 2, 0, IN_CONTIG, 1 },
    { "masked_row_full", 2, 2, 2, 7, 33, 64, 0, true, 0, 0, M_FULL, 2, 0, IN_CONTIG, 1 },
    { "masked_batch_b11tk", 2, 2, 2, 7, 33, 64, 0, false, 0, 0, M_B11TK, 2, 0, IN_CONTIG, 1 },
    { "d80", 1, 4, 2, 7, 33, 80, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "d256", 1, 2, 1, 7, 33, 256, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "d7_odd", 1, 2, 2, 7, 33, 7, 0, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "d1", 1, 2, 2, 7, 9, 1, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "d300", 1, 2, 2, 5, 70, 300, 0, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "bthd_views", 2, 4, 2, 33, 33, 64, 0, true, 0, 0, M_NONE, 0, 0, IN_SWAP12, 1 },
    { "narrowed", 2, 4, 2, 7, 33, 64, 0, true, 0, 0, M_TQTK, 1, 0, IN_NARROW, 1 },
    { "last_strided", 1, 4, 2, 7, 33, 64, 0, false, 0, 0, M_NONE, 0, 0, IN_LAST, 1 },
    { "all_options", 2, 8, 2, 7, 70, 64, 0.2, true, 16, 8, M_B11TK, 1, 0, IN_SWAP12, 3 },
    { "tk0", 1, 2, 1, 3, 0, 16, 0, false, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
    { "tq0", 1, 2, 1, 0, 5, 16, 0, true, 0, 0, M_NONE, 0, 0, IN_CONTIG, 1 },
};

static wk_shape mask_shape(const acase *C)
{
    switch (C->mask) {
    case M_TQTK: return WK_SHAPE(C->Tq, C->Tk);
    case M_1HTT: return WK_SHAPE(1, C->Hq, C->Tq, C->Tk);
    case M_B11TK: return WK_SHAPE(C->B, 1, 1, C->Tk);
    case M_FULL: return WK_SHAPE(C->B, C->Hq, C->Tq, C->Tk);
    case M_TK: return WK_SHAPE(C->Tk);
    default: return WK_SHAPE(C->B, 1, C->Tq, C->Tk);
    }
}

static void attention_case(wk_dtype dt, const acase *C)
{
    const wk_shape sq = WK_SHAPE(C->B, C->Hq, C->Tq, C->D), skv = WK_SHAPE(C->B, C->Hkv, C->Tk, C->D);
    double *q, *k, *v, *mfull = NULL;
    wk_tensor *tq = mk_in(dt, C->lay, sq, -C->qr, C->qr, &q);
    wk_tensor *tk = mk_in(dt, C->lay, skv, -1.5, 1.5, &k), *tv = mk_in(dt, C->lay, skv, -1, 1, &v);
    if (!tq || !tk || !tv) return;
    wk_attention_opts o = { .scale = C->scale, .causal = C->causal, .window = C->window, .softcap = C->softcap };
    if (C->mask != M_NONE) {
        wk_shape ms = mask_shape(C);
        int64_t mn = t_numel(ms);
        double *mv = t_mem((size_t)mn * sizeof(double) + 8);
        t_rng *r = t_r();
        for (int64_t i = 0; i < mn; i++) mv[i] = C->mask_inf && t_rng_int(r, 0, 9) == 0 ? -INFINITY : t_rng_range(r, -2, 2);
        if (C->mask_inf == 2)   /* the first row of the mask (its last dim) all -inf */
            for (int64_t j = 0; j < C->Tk; j++) mv[j] = -INFINITY;
        double *mr;
        wk_tensor *tm = from_vals(C->mask_dt ? C->mask_dt : WK_F32, ms, mv, &mr);
        if (!tm) return;
        o.mask = tm;
        /* the mask as f32 values (the op uses it as f32), broadcast to [B, Hq, Tq, Tk] */
        const wk_shape full = WK_SHAPE(C->B, C->Hq, C->Tq, C->Tk);
        int64_t fn = t_numel(full);
        mfull = t_mem((size_t)fn * sizeof(double) + 8);
        for (int64_t i = 0; i < fn; i++) mfull[i] = t_round_to(WK_F32, mr[t_bcast_index(full, ms, i)]);
    }
    t_cover("attention", dt);
    wk_tensor *y = t_own(wk_attention(tq, tk, tv, &o));
    double *ref = t_mem((size_t)t_numel(sq) * sizeof(double) + 8);
    ref_attention(C->B, C->Hq, C->Hkv, C->Tq, C->Tk, C->D, q, k, v, mfull,
                  C->scale != 0 ? C->scale : 1 / sqrt((double)C->D), C->causal, C->window, C->softcap, ref);
    t_check_close("attention", y, sq, dt, ref, t_bound_acc(dt));
}

/* kv_len: the op with a count L of keys read from a tensor gives the bits
 * of the op on the first min(L, Tk) keys (and mask columns), for counts
 * 0, 1, inside, Tk, past Tk and negative, u32 and i64; decode, prefill
 * with a window, a mask, a soft-cap. */
static void attention_kv_len_case(wk_dtype dt)
{
    static const struct { int64_t B, Hq, Hkv, Tq, Tk, D, window; bool causal, mask; double softcap; } cs[] = {
        { 1, 8, 2, 1, 70, 64, 0, true, false, 0 },
        { 2, 4, 2, 7, 40, 32, 5, true, false, 0 },
        { 1, 2, 1, 3, 33, 16, 0, false, true, 0 },
        { 1, 4, 4, 2, 25, 8, 0, true, false, 3 },
    };
    static const int64_t Ls[] = { 0, 1, 13, -1 /* Tk - 1 */, -2 /* Tk */, -3 /* Tk + 20 */, -4 /* -3 */ };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const int64_t Tk = cs[c].Tk;
        double *vals;
        wk_tensor *q = mk_in(dt, IN_CONTIG, WK_SHAPE(cs[c].B, cs[c].Hq, cs[c].Tq, cs[c].D), -1, 1, &vals);
        wk_tensor *k = mk_in(dt, IN_SWAP12, WK_SHAPE(cs[c].B, cs[c].Hkv, Tk, cs[c].D), -1.5, 1.5, &vals);
        wk_tensor *v = mk_in(dt, IN_CONTIG, WK_SHAPE(cs[c].B, cs[c].Hkv, Tk, cs[c].D), -1, 1, &vals);
        wk_tensor *m = cs[c].mask ? t_own(wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE(cs[c].Tq, Tk), -2, 2)) : NULL;
        if (!q || !k || !v || (cs[c].mask && !m)) return;
        for (size_t l = 0; l < sizeof Ls / sizeof Ls[0]; l++)
            for (int wide = 0; wide < 2; wide++) {
                const int64_t L = Ls[l] >= 0 ? Ls[l] : Ls[l] == -1 ? Tk - 1 : Ls[l] == -2 ? Tk : Ls[l] == -3 ? Tk + 20 : -3;
                if (L < 0 && !wide) continue;   /* a negative count: i64 only */
                const int64_t n = L < 0 ? 0 : L < Tk ? L : Tk;
                const int64_t l64 = L;
                const uint32_t l32 = (uint32_t)L;
                wk_tensor *lt = t_own(wide ? wk_from_host(t_dev(), WK_I64, WK_SHAPE(1), &l64)
                                           : wk_from_host(t_dev(), WK_U32, WK_SHAPE(1, 1), &l32));
                wk_attention_opts o = { .causal = cs[c].causal, .window = cs[c].window, .softcap = cs[c].softcap,
                                        .mask = m, .kv_len = lt };
                wk_tensor *y = t_own(wk_attention(q, k, v, &o));
                o.kv_len = NULL;
                o.mask = m ? t_own(wk_narrow(m, 1, 0, n)) : NULL;
                wk_tensor *ref = t_own(wk_attention(q, t_own(wk_narrow(k, 2, 0, n)), t_own(wk_narrow(v, 2, 0, n)), &o));
                const wk_shape s = WK_SHAPE(cs[c].B, cs[c].Hq, cs[c].Tq, cs[c].D);
                const size_t bytes = (size_t)t_numel(s) * wk_dtype_size(dt);
                void *rb = t_mem(bytes + 8);
                if (!y || !ref || wk_to_host(ref, rb, bytes) != WK_OK) {
                    t_fail("case %zu, L %lld (%s): %s", c, (long long)L, wide ? "i64" : "u32", wk_last_error());
                    continue;
                }
                char what[96];
                snprintf(what, sizeof what, "case %zu, kv_len %lld (%s)", c, (long long)L, wide ? "i64" : "u32");
                t_check_exact(what, y, s, dt, rb);
            }
    }
}

/* ---- numpy references (data/nn_ref.h) ------------------------------------------------------- */

/* got against numpy's values: the bound of dt (inputs are f32 values, exact in f32 and f64) */
static void np_check(const char *what, const wk_tensor *got, wk_shape s, wk_dtype dt, const double *want)
{
    t_check_close(what, got, s, dt, want, dt == WK_F64 ? 1e-24 : t_bound_acc(dt));
}
/* the naive reference must agree with numpy to double precision */
static void np_ref_check(const char *what, const double *mine, const double *want, int64_t n)
{
    t_cmp_values(what, WK_F64, mine, want, n, 1e-26);
}

static void numpy_cases(void)
{
    static const wk_dtype dts[2] = { WK_F32, WK_F64 };
    for (int d = 0; d < 2; d++) {
        const wk_dtype dt = dts[d];
        const char *dn = t_dt_name(dt);
        if (t_case("nn/numpy/%s/softmax", dn)) {
            wk_tensor *x = from_vals(dt, WK_SHAPE(4, 10), nnref_sm_x, NULL);
            wk_tensor *x3 = x ? T_NEED(wk_narrow(x, 0, 0, 3)) : NULL;
            if (x3) {
                t_cover("softmax", dt);
                t_cover("log_softmax", dt);
                np_check("softmax dim 1", t_own(wk_softmax(x, 1)), WK_SHAPE(4, 10), dt, nnref_sm_last);
                np_check("log_softmax dim 1", t_own(wk_log_softmax(x, -1)), WK_SHAPE(4, 10), dt, nnref_lsm_last);
                np_check("softmax dim 0", t_own(wk_softmax(x3, 0)), WK_SHAPE(3, 10), dt, nnref_sm_dim0);
                np_check("log_softmax dim 0", t_own(wk_log_softmax(x3, 0)), WK_SHAPE(3, 10), dt, nnref_lsm_dim0);
                double mine[40];
                ref_softmax(nnref_sm_x, WK_SHAPE(4, 10), 1, false, mine);
                np_ref_check("ref_softmax", mine, nnref_sm_last, 40);
                ref_softmax(nnref_sm_x, WK_SHAPE(4, 10), 1, true, mine);
                np_ref_check("ref_log_softmax", mine, nnref_lsm_last, 40);
                ref_softmax(nnref_sm_x, WK_SHAPE(3, 10), 0, false, mine);
                np_ref_check("ref_softmax dim 0", mine, nnref_sm_dim0, 30);
            }
        }
        if (t_case("nn/numpy/%s/norms", dn)) {
            const wk_shape s = WK_SHAPE(NNREF_NORM_R, NNREF_NORM_D);
            wk_tensor *x = from_vals(dt, s, nnref_norm_x, NULL);
            wk_tensor *w = from_vals(dt, WK_SHAPE(NNREF_NORM_D), nnref_norm_w, NULL);
            wk_tensor *b = from_vals(dt, WK_SHAPE(NNREF_NORM_D), nnref_norm_b, NULL);
            if (x && w && b) {
                t_cover("rms_norm", dt);
                t_cover("layer_norm", dt);
                np_check("rms_norm", t_own(wk_rms_norm(x, w, NNREF_NORM_EPS)), s, dt, nnref_rms);
                np_check("rms_norm_gemma", t_own(wk_rms_norm_gemma(x, w, NNREF_NORM_EPS)), s, dt, nnref_rms_gemma);
                np_check("rms_norm no weight", t_own(wk_rms_norm(x, NULL, NNREF_NORM_EPS)), s, dt, nnref_rms_now);
                np_check("layer_norm", t_own(wk_layer_norm(x, w, b, NNREF_NORM_EPS)), s, dt, nnref_ln);
                double mine[NNREF_NORM_R * NNREF_NORM_D];
                const int64_t R = NNREF_NORM_R, D = NNREF_NORM_D;
                ref_norm(NK_RMS, nnref_norm_x, R, D, nnref_norm_w, NULL, NNREF_NORM_EPS, mine);
                np_ref_check("ref rms_norm", mine, nnref_rms, R * D);
                ref_norm(NK_GEMMA, nnref_norm_x, R, D, nnref_norm_w, NULL, NNREF_NORM_EPS, mine);
                np_ref_check("ref rms_norm_gemma", mine, nnref_rms_gemma, R * D);
                ref_norm(NK_LN, nnref_norm_x, R, D, nnref_norm_w, nnref_norm_b, NNREF_NORM_EPS, mine);
                np_ref_check("ref layer_norm", mine, nnref_ln, R * D);
            }
        }
        if (t_case("nn/numpy/%s/rope", dn)) {
            const wk_shape s = WK_SHAPE(NNREF_ROPE_B, NNREF_ROPE_H, NNREF_ROPE_T, NNREF_ROPE_D);
            const wk_shape sthd = WK_SHAPE(NNREF_ROPE_B, 2, 5, NNREF_ROPE_D);
            const wk_shape st = WK_SHAPE(NNREF_ROPE_NPOS, NNREF_ROPE_D / 2);
            wk_tensor *x = from_vals(dt, s, nnref_rope_x, NULL), *xt = from_vals(dt, sthd, nnref_rope_x, NULL);
            wk_tensor *c = from_vals(WK_F32, st, nnref_rope_cos, NULL), *sn = from_vals(WK_F32, st, nnref_rope_sin, NULL);
            if (x && xt && c && sn) {
                for (int op = 0; op < 3; op++) t_cover(rope_names[op], dt);
                np_check("rope", t_own(wk_rope(x, c, sn, NNREF_ROPE_OFF)), s, dt, nnref_rope);
                np_check("rope_i", t_own(wk_rope_i(x, c, sn, NNREF_ROPE_OFF)), s, dt, nnref_rope_i);
                np_check("rope_thd", t_own(wk_rope_thd(xt, c, sn, NNREF_ROPE_OFF)), sthd, dt, nnref_rope_thd);
                double mine[NNREF_ROPE_B * NNREF_ROPE_H * NNREF_ROPE_T * NNREF_ROPE_D];
                ref_rope(0, nnref_rope_x, s, nnref_rope_cos, nnref_rope_sin, NNREF_ROPE_OFF, mine);
                np_ref_check("ref rope", mine, nnref_rope, N_(mine));
                ref_rope(1, nnref_rope_x, s, nnref_rope_cos, nnref_rope_sin, NNREF_ROPE_OFF, mine);
                np_ref_check("ref rope_i", mine, nnref_rope_i, N_(mine));
                ref_rope(2, nnref_rope_x, sthd, nnref_rope_cos, nnref_rope_sin, NNREF_ROPE_OFF, mine);
                np_ref_check("ref rope_thd", mine, nnref_rope_thd, N_(mine));
            }
        }
        if (t_case("nn/numpy/%s/attention", dn)) {
            const wk_shape sq = WK_SHAPE(NNREF_ATT_B, NNREF_ATT_HQ, NNREF_ATT_TQ, NNREF_ATT_D);
            const wk_shape skv = WK_SHAPE(NNREF_ATT_B, NNREF_ATT_HKV, NNREF_ATT_TK, NNREF_ATT_D);
            const wk_shape sm = WK_SHAPE(NNREF_ATT_B, 1, NNREF_ATT_TQ, NNREF_ATT_TK);
            wk_tensor *q = from_vals(dt, sq, nnref_att_q, NULL), *k = from_vals(dt, skv, nnref_att_k, NULL);
            wk_tensor *v = from_vals(dt, skv, nnref_att_v, NULL), *m = from_vals(WK_F32, sm, nnref_att_mask, NULL);
            if (q && k && v && m) {
                t_cover("attention", dt);
                np_check("attention plain", t_own(wk_attention(q, k, v, NULL)), sq, dt, nnref_att_plain);
                const wk_attention_opts o = { .scale = 0.5, .causal = true, .window = NNREF_ATT_WINDOW,
                                              .softcap = NNREF_ATT_SOFTCAP, .mask = m };
                np_check("attention all options", t_own(wk_attention(q, k, v, &o)), sq, dt, nnref_att_all);
                enum { NQ = NNREF_ATT_B * NNREF_ATT_HQ * NNREF_ATT_TQ * NNREF_ATT_D };
                enum { NM = NNREF_ATT_B * NNREF_ATT_HQ * NNREF_ATT_TQ * NNREF_ATT_TK };
                double mine[NQ], mfull[NM];
                const wk_shape full = WK_SHAPE(NNREF_ATT_B, NNREF_ATT_HQ, NNREF_ATT_TQ, NNREF_ATT_TK);
                for (int64_t i = 0; i < NM; i++) mfull[i] = nnref_att_mask[t_bcast_index(full, sm, i)];
                ref_attention(NNREF_ATT_B, NNREF_ATT_HQ, NNREF_ATT_HKV, NNREF_ATT_TQ, NNREF_ATT_TK, NNREF_ATT_D,
                              nnref_att_q, nnref_att_k, nnref_att_v, NULL, 1 / sqrt((double)NNREF_ATT_D), false, 0, 0,
                              mine);
                np_ref_check("ref attention plain", mine, nnref_att_plain, NQ);
                ref_attention(NNREF_ATT_B, NNREF_ATT_HQ, NNREF_ATT_HKV, NNREF_ATT_TQ, NNREF_ATT_TK, NNREF_ATT_D,
                              nnref_att_q, nnref_att_k, nnref_att_v, mfull, 0.5, true, NNREF_ATT_WINDOW,
                              NNREF_ATT_SOFTCAP, mine);
                np_ref_check("ref attention all options", mine, nnref_att_all, NQ);
            }
        }
    }
    if (t_case("nn/numpy/rope_tables/llama3")) {
        const wk_rope_scaling sc = { WK_ROPE_SCALING_LLAMA3, NNREF_L3_FACTOR, NNREF_L3_LOW, NNREF_L3_HIGH, NNREF_L3_ORIG };
        wk_tensor *c = NULL, *s = NULL;
        T_OK(wk_rope_tables(t_dev(), NNREF_L3_D, NNREF_L3_BASE, NNREF_L3_NPOS, &sc, &c, &s));
        t_own(c);
        t_own(s);
        const wk_shape st = WK_SHAPE(NNREF_L3_NPOS, NNREF_L3_D / 2);
        if (c && s) {
            t_check_close("llama3 cos", c, st, WK_F32, nnref_l3_cos, t_bound(WK_F32));
            t_check_close("llama3 sin", s, st, WK_F32, nnref_l3_sin, t_bound(WK_F32));
        }
        double mine[NNREF_L3_D / 2];
        for (int i = 0; i < NNREF_L3_D / 2; i++) mine[i] = cos(ref_inv_freq(i, NNREF_L3_D, NNREF_L3_BASE, &sc) * 39);
        np_ref_check("ref llama3 frequencies (row 39)", mine, nnref_l3_cos + 39 * (NNREF_L3_D / 2), NNREF_L3_D / 2);
    }
}

/* ---- errors ------------------------------------------------------------------------------------ */

#define ANY WK_STATUS_COUNT
static void check_st_(const char *expr, wk_status got, wk_status want, const char *w1, const char *w2)
{
    t_check_error(expr, want, got, w1, w2, (const char *)NULL);
}
/* the expression must fail with `want`, its message naming up to two words */
#define NUL(expr, want, w1, w2) t_check_null(#expr, (expr), (want), (w1), (w2), NULL)
#define BAD(expr, want, ...) check_st_(#expr, (expr), (want), __VA_ARGS__)

static void errors(void)
{
    wk_device *dev = t_dev();
    if (t_case("nn/errors/softmax")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *xi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(3, 4)));
        wk_tensor *x8 = T_NEED(wk_zeros(dev, WK_F8E4M3, WK_SHAPE(3, 4)));
        wk_tensor *s0 = T_NEED(wk_zeros(dev, WK_F32, WK_SCALAR));
        if (x && xi && x8 && s0) {
            NUL(wk_softmax(NULL, 0), WK_ERR_ARGUMENT, "softmax", "NULL");
            NUL(wk_log_softmax(NULL, 0), WK_ERR_ARGUMENT, "log_softmax", "NULL");
            NUL(wk_softmax(x, 2), WK_ERR_INDEX, "dim 2", "rank 2");
            NUL(wk_log_softmax(x, -3), WK_ERR_INDEX, "dim -3", "rank 2");
            NUL(wk_softmax(xi, 1), WK_ERR_UNSUPPORTED, "softmax", "i32");
            NUL(wk_log_softmax(x8, 1), WK_ERR_UNSUPPORTED, "log_softmax", "f8e4m3");
            NUL(wk_softmax(s0, 0), WK_ERR_SHAPE, "rank", NULL);
        }
    }
    if (t_case("nn/errors/norms")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *w5 = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(5)));
        wk_tensor *w2d = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 4)));
        wk_tensor *w16 = T_NEED(wk_ones(dev, WK_F16, WK_SHAPE(4)));
        wk_tensor *w = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(4)));
        wk_tensor *r = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *r5 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 5)));
        wk_tensor *r64 = T_NEED(wk_zeros(dev, WK_F64, WK_SHAPE(3, 4)));
        wk_tensor *xi = T_NEED(wk_zeros(dev, WK_I64, WK_SHAPE(3, 4)));
        if (x && w5 && w2d && w16 && w && r && r5 && r64 && xi) {
            NUL(wk_rms_norm(NULL, w, 1e-5), WK_ERR_ARGUMENT, "rms_norm", "NULL");
            NUL(wk_rms_norm(x, w5, 1e-5), WK_ERR_SHAPE, "weight", "4");
            NUL(wk_rms_norm(x, w2d, 1e-5), WK_ERR_SHAPE, "weight", "rank 2");
            NUL(wk_rms_norm_gemma(x, w16, 1e-5), WK_ERR_DTYPE, "weight", "f16");
            NUL(wk_rms_norm(x, w, -1), WK_ERR_ARGUMENT, "eps", NULL);
            NUL(wk_rms_norm(x, w, NAN), WK_ERR_ARGUMENT, "eps", NULL);
            NUL(wk_rms_norm(xi, NULL, 1e-5), WK_ERR_UNSUPPORTED, "rms_norm", "i64");
            NUL(wk_layer_norm(x, w, w5, 1e-5), WK_ERR_SHAPE, "bias", "4");
            NUL(wk_layer_norm(x, w16, NULL, 1e-5), WK_ERR_DTYPE, "weight", "f16");
            NUL(wk_layer_norm(x, NULL, NULL, INFINITY), WK_ERR_ARGUMENT, "eps", "layer_norm");
            wk_tensor *sum = (wk_tensor *)1;
            NUL(wk_add_rms_norm(x, r5, w, 1e-5, false, &sum), WK_ERR_SHAPE, "residual", "shape");
            T_CHECK(sum == NULL, "add_rms_norm left *sum set after an error");
            sum = (wk_tensor *)1;
            NUL(wk_add_rms_norm(x, r64, w, 1e-5, false, &sum), WK_ERR_DTYPE, "residual", "f64");
            T_CHECK(sum == NULL, "add_rms_norm left *sum set after an error");
            sum = (wk_tensor *)1;
            NUL(wk_add_rms_norm(x, NULL, w, 1e-5, true, &sum), WK_ERR_ARGUMENT, "add_rms_norm", "NULL");
            T_CHECK(sum == NULL, "add_rms_norm left *sum set after an error");
            sum = (wk_tensor *)1;
            NUL(wk_add_rms_norm(x, r, w5, 1e-5, false, &sum), WK_ERR_SHAPE, "weight", NULL);
            T_CHECK(sum == NULL, "add_rms_norm left *sum set after an error");
            NUL(wk_add_rms_norm(x, r, w, 1e-5, false, NULL), WK_ERR_ARGUMENT, "sum", "NULL");
        }
    }
    if (t_case("nn/errors/silu_mul")) {
        wk_tensor *a = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *b = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 5)));
        wk_tensor *b16 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(3, 4)));
        wk_tensor *ai = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(3, 4)));
        wk_tensor *a8 = T_NEED(wk_zeros(dev, WK_F8E4M3, WK_SHAPE(3, 4)));
        if (a && b && b16 && ai && a8) {
            NUL(wk_silu_mul(a, b), WK_ERR_SHAPE, "silu_mul", "broadcast");
            NUL(wk_silu_mul(a, b16), WK_ERR_DTYPE, "silu_mul", "f16");
            NUL(wk_silu_mul(ai, ai), WK_ERR_UNSUPPORTED, "silu_mul", "i32");
            NUL(wk_silu_mul(a8, a8), WK_ERR_UNSUPPORTED, "silu_mul", "f8e4m3");
            NUL(wk_silu_mul(NULL, a), WK_ERR_ARGUMENT, "silu_mul", NULL);
        }
    }
    if (t_case("nn/errors/linear_silu_mul")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 8)));
        wk_tensor *w = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(6, 8)));
        wk_tensor *w_odd = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 8)));
        wk_tensor *w_k = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(6, 9)));
        wk_tensor *w1 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(8)));
        wk_tensor *w16 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(6, 8)));
        wk_tensor *w64 = T_NEED(wk_zeros(dev, WK_F64, WK_SHAPE(6, 8)));
        if (x && w && w_odd && w_k && w1 && w16 && w64) {
            NUL(wk_linear_silu_mul(x, w_odd), WK_ERR_SHAPE, "linear_silu_mul", "[2F, K]");
            NUL(wk_linear_silu_mul(x, w_k), WK_ERR_SHAPE, "linear_silu_mul", "last dim 8");
            NUL(wk_linear_silu_mul(x, w1), WK_ERR_SHAPE, "linear_silu_mul", "rank 1");
            NUL(wk_linear_silu_mul(x, w64), WK_ERR_DTYPE, "linear_silu_mul", "f64");
            /* an f16 w under f32 x goes through qmatmul: a result where the device takes it */
            if (wk_supports(dev, "qmatmul", WK_F16)) {
                wk_tensor *r = wk_linear_silu_mul(x, w16);
                T_CHECK(r && wk_tensor_dtype(r) == WK_F32 && wk_tensor_dim(r, 1) == 3,
                        "wk_linear_silu_mul(x f32, w f16) on a device with qmatmul of f16: %s", r ? "a wrong result" : wk_last_error());
                wk_release(r);
            } else {
                NUL(wk_linear_silu_mul(x, w16), WK_ERR_UNSUPPORTED, "qmatmul", "f16");
            }
            NUL(wk_linear_silu_mul(NULL, w), WK_ERR_ARGUMENT, "linear_silu_mul", NULL);
            NUL(wk_linear_silu_mul(x, NULL), WK_ERR_ARGUMENT, "linear_silu_mul", NULL);
        }
    }
    if (t_case("nn/errors/rope")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 3, 8)));
        wk_tensor *xodd = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 3, 7)));
        wk_tensor *x3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 3, 8)));
        wk_tensor *xi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(1, 2, 3, 8)));
        wk_tensor *c = NULL, *s = NULL, *c6 = NULL, *s6 = NULL;
        T_OK(wk_rope_tables(dev, 8, 10000, 5, NULL, &c, &s));
        T_OK(wk_rope_tables(dev, 8, 10000, 6, NULL, &c6, &s6));
        t_own(c), t_own(s), t_own(c6), t_own(s6);
        wk_tensor *cw = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5, 3)));
        wk_tensor *ci = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(5, 4)));
        if (x && xodd && x3 && xi && c && s && c6 && s6 && cw && ci) {
            NUL(wk_rope(xodd, c, s, 0), WK_ERR_SHAPE, "even", "7");
            NUL(wk_rope_i(x3, c, s, 0), WK_ERR_SHAPE, "rank >= 4", "rank 3");
            NUL(wk_rope(x, c, s, 3), WK_ERR_INDEX, "positions 3 .. 5", "5 positions");
            NUL(wk_rope_i(x, c, s, -1), WK_ERR_INDEX, "positions", NULL);
            NUL(wk_rope_thd(x, c, s, 4), WK_ERR_INDEX, "positions 4 .. 5", NULL);
            NUL(wk_rope(x, cw, s, 0), WK_ERR_SHAPE, "cos", "[n_pos, 4]");
            NUL(wk_rope(x, c, cw, 0), WK_ERR_SHAPE, "sin", NULL);
            NUL(wk_rope(x, c, s6, 0), WK_ERR_SHAPE, "cos has 5 positions", "sin has 6");
            NUL(wk_rope(x, ci, s, 0), WK_ERR_DTYPE, "cos", "i32");
            NUL(wk_rope(x, NULL, s, 0), WK_ERR_ARGUMENT, "cos", "NULL");
            NUL(wk_rope_thd(x, c, NULL, 0), WK_ERR_ARGUMENT, "sin", "NULL");
            NUL(wk_rope(xi, c, s, 0), WK_ERR_UNSUPPORTED, "rope", "i32");
            NUL(wk_rope(NULL, c, s, 0), WK_ERR_ARGUMENT, "rope", "NULL");
        }
    }
    if (t_case("nn/errors/rope_tables")) {
        wk_tensor *c = (wk_tensor *)1, *s = (wk_tensor *)1;
        BAD(wk_rope_tables(dev, 7, 10000, 4, NULL, &c, &s), WK_ERR_SHAPE, "head_dim", "7");
        T_CHECK(c == NULL && s == NULL, "rope_tables left its outputs set after an error");
        BAD(wk_rope_tables(dev, 0, 10000, 4, NULL, &c, &s), WK_ERR_SHAPE, "head_dim", NULL);
        BAD(wk_rope_tables(dev, 8, 10000, -1, NULL, &c, &s), WK_ERR_SHAPE, "n_pos", "-1");
        BAD(wk_rope_tables(dev, 8, 0, 4, NULL, &c, &s), WK_ERR_ARGUMENT, "base", NULL);
        BAD(wk_rope_tables(dev, 8, 10000, 4, NULL, NULL, &s), WK_ERR_ARGUMENT, "NULL", NULL);
        BAD(wk_rope_tables(NULL, 8, 10000, 4, NULL, &c, &s), WK_ERR_ARGUMENT, "device", NULL);
        const wk_rope_scaling bad_type = { (wk_rope_scaling_type)7, 2, 1, 4, 8192 };
        BAD(wk_rope_tables(dev, 8, 10000, 4, &bad_type, &c, &s), WK_ERR_ARGUMENT, "scaling type", "7");
        const wk_rope_scaling bad_factor = { WK_ROPE_SCALING_LINEAR, 0, 0, 0, 0 };
        BAD(wk_rope_tables(dev, 8, 10000, 4, &bad_factor, &c, &s), WK_ERR_ARGUMENT, "factor", NULL);
        const wk_rope_scaling bad_l3 = { WK_ROPE_SCALING_LLAMA3, 8, 4, 1, 8192 };
        BAD(wk_rope_tables(dev, 8, 10000, 4, &bad_l3, &c, &s), WK_ERR_ARGUMENT, "llama3", "low_freq_factor");
        T_CHECK(c == NULL && s == NULL, "rope_tables left its outputs set after an error");
    }
    if (t_case("nn/errors/attention")) {
        wk_tensor *q = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 4, 3, 8)));
        wk_tensor *k = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 2, 5, 8)));
        wk_tensor *k3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 3, 5, 8)));
        wk_tensor *kd = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 2, 5, 16)));
        wk_tensor *kb = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 5, 8)));
        wk_tensor *v6 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 2, 6, 8)));
        wk_tensor *k16 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(2, 2, 5, 8)));
        wk_tensor *q3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(4, 3, 8)));
        wk_tensor *qi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(2, 4, 3, 8)));
        wk_tensor *ki = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(2, 2, 5, 8)));
        wk_tensor *mbad = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *mi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(3, 5)));
        wk_tensor *m5 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 3, 4, 5)));
        if (q && k && k3 && kd && kb && v6 && k16 && q3 && qi && ki && mbad && mi && m5) {
            NUL(wk_attention(NULL, k, k, NULL), WK_ERR_ARGUMENT, "attention", "NULL");
            NUL(wk_attention(q, k, NULL, NULL), WK_ERR_ARGUMENT, "attention", "NULL");
            NUL(wk_attention(q, k16, k16, NULL), WK_ERR_DTYPE, "f32", "f16");
            NUL(wk_attention(q3, k, k, NULL), WK_ERR_SHAPE, "rank 4", NULL);
            NUL(wk_attention(q, k3, k3, NULL), WK_ERR_SHAPE, "multiple", "(3)");
            NUL(wk_attention(q, kd, kd, NULL), WK_ERR_SHAPE, "head dims", "16");
            NUL(wk_attention(q, kb, kb, NULL), WK_ERR_SHAPE, "batch", NULL);
            NUL(wk_attention(q, k, v6, NULL), WK_ERR_SHAPE, "one shape", NULL);
            NUL(wk_attention(qi, ki, ki, NULL), WK_ERR_UNSUPPORTED, "attention", "i32");
            wk_attention_opts o = { .mask = mbad };
            NUL(wk_attention(q, k, k, &o), WK_ERR_SHAPE, "broadcast", "4");
            o.mask = m5;
            NUL(wk_attention(q, k, k, &o), WK_ERR_SHAPE, "rank 5", NULL);
            o.mask = mi;
            NUL(wk_attention(q, k, k, &o), WK_ERR_DTYPE, "mask", "i32");
            o = (wk_attention_opts){ .window = -1 };
            NUL(wk_attention(q, k, k, &o), WK_ERR_ARGUMENT, "window", "-1");
            o = (wk_attention_opts){ .softcap = -2 };
            NUL(wk_attention(q, k, k, &o), WK_ERR_ARGUMENT, "softcap", NULL);
            o = (wk_attention_opts){ .scale = INFINITY };
            NUL(wk_attention(q, k, k, &o), WK_ERR_ARGUMENT, "scale", NULL);
            o = (wk_attention_opts){ .kv_len = mi };
            NUL(wk_attention(q, k, k, &o), WK_ERR_DTYPE, "kv_len", "i32");
            wk_tensor *l2 = T_NEED(wk_zeros(dev, WK_U32, WK_SHAPE(2)));
            o = (wk_attention_opts){ .kv_len = l2 };
            if (l2) NUL(wk_attention(q, k, k, &o), WK_ERR_SHAPE, "kv_len", "one");
        }
    }
}

/* ---- the suite ----------------------------------------------------------------------------------- */

T_SUITE(nn)
{
    for (int d = 0; d < 4; d++) {
        const wk_dtype dt = nn_dts[d];
        const char *dn = t_dt_name(dt);
        for (int lg = 0; lg < 2; lg++) {
            const char *op = lg ? "log_softmax" : "softmax";
            for (int c = 0; c < N_(smcases); c++)
                if (t_case("nn/%s/%s/%s", op, dn, smcases[c].name)) softmax_case(dt, lg, &smcases[c]);
            for (int dim = 0; dim < 2; dim++)
                if (t_case("nn/%s/%s/inf_nan_dim%d", op, dn, dim)) softmax_inf_case(dt, lg, dim);
        }
        for (int c = 0; c < N_(ncases); c++) {
            const ncase *C = &ncases[c];
            if (t_case("nn/rms_norm/%s/%s/weight", dn, C->name)) norm_case(dt, NK_RMS, 1, C, 1e-5);
            if (t_case("nn/rms_norm/%s/%s/no_weight", dn, C->name)) norm_case(dt, NK_RMS, 0, C, 1e-6);
            if (t_case("nn/rms_norm/%s/%s/gemma", dn, C->name)) norm_case(dt, NK_GEMMA, 1, C, 1e-6);
            if (t_case("nn/layer_norm/%s/%s/weight_bias", dn, C->name)) norm_case(dt, NK_LN, 3, C, 1e-5);
            if (t_case("nn/add_rms_norm/%s/%s/weight", dn, C->name)) add_rms_norm_case(dt, C, false, true);
            if (c % 3 == 0) {
                if (t_case("nn/rms_norm/%s/%s/gemma_no_weight", dn, C->name)) norm_case(dt, NK_GEMMA, 0, C, 1e-5);
                if (t_case("nn/rms_norm/%s/%s/eps0", dn, C->name)) norm_case(dt, NK_RMS, 1, C, 0);
                if (t_case("nn/layer_norm/%s/%s/weight", dn, C->name)) norm_case(dt, NK_LN, 1, C, 1e-5);
                if (t_case("nn/layer_norm/%s/%s/bias", dn, C->name)) norm_case(dt, NK_LN, 2, C, 1e-5);
                if (t_case("nn/layer_norm/%s/%s/none", dn, C->name)) norm_case(dt, NK_LN, 0, C, 1e-5);
                if (t_case("nn/add_rms_norm/%s/%s/gemma", dn, C->name)) add_rms_norm_case(dt, C, true, true);
                if (t_case("nn/add_rms_norm/%s/%s/no_weight", dn, C->name)) add_rms_norm_case(dt, C, false, false);
            }
        }
        for (int c = 0; c < N_(bcases); c++)
            if (t_case("nn/silu_mul/%s/%s", dn, bcases[c].name)) silu_mul_case(dt, &bcases[c]);
        /* linear_silu_mul: one row (a decode step), rows of a batch, a vector, odd sizes, views, q8_0 weights */
        static const struct { const char *name; wk_shape xs; int64_t F; t_layout_kind xl, wl; bool q; } lc[] = {
            { "row_k64_f48", { 2, { 1, 64 } }, 48, LK_CONTIG, LK_CONTIG, false },
            { "rows7_k33_f5", { 2, { 7, 33 } }, 5, LK_CONTIG, LK_CONTIG, false },
            { "vector_k40_f3", { 1, { 40 } }, 3, LK_CONTIG, LK_CONTIG, false },
            { "batch_2x3_k16_f9", { 3, { 2, 3, 16 } }, 9, LK_CONTIG, LK_NARROWED, false },
            { "x_transposed_k17_f4", { 2, { 5, 17 } }, 4, LK_TRANSPOSED, LK_CONTIG, false },
            { "empty_rows", { 2, { 0, 8 } }, 3, LK_CONTIG, LK_CONTIG, false },
            { "q8_0_row_k64_f20", { 2, { 1, 64 } }, 20, LK_CONTIG, LK_CONTIG, true },
            { "q8_0_rows3_k96_f7", { 2, { 3, 96 } }, 7, LK_NARROWED, LK_CONTIG, true },
        };
        for (int c = 0; c < N_(lc); c++)
            if ((dt != WK_F64 || !lc[c].q) && t_case("nn/linear_silu_mul/%s/%s", dn, lc[c].name))
                linear_silu_mul_case(dt, lc[c].xs, lc[c].F, lc[c].xl, lc[c].wl, lc[c].q);
        /* ropes: head dims 2 .. 256, lengths 1 .. 4097, offsets, layouts, tables */
        static const struct { const char *name; int64_t B, H, T, D, off; in_layout lay; int tables; } rc[] = {
            { "d2_t1", 1, 1, 1, 2, 0, IN_CONTIG, 0 },
            { "d64_t7_off5", 2, 3, 7, 64, 5, IN_CONTIG, 0 },
            { "d80_t33", 1, 2, 33, 80, 0, IN_CONTIG, 1 },
            { "d128_t33_off17", 2, 2, 33, 128, 17, IN_SWAP12, 0 },
            { "d256_t7_off1", 1, 3, 7, 256, 1, IN_NARROW, 1 },
            { "d6_t7", 2, 3, 7, 6, 2, IN_CONTIG, 2 },
            { "d64_t1023", 1, 1, 1023, 64, 0, IN_CONTIG, 0 },
            { "d8_t4097_off3", 1, 1, 4097, 8, 3, IN_CONTIG, 1 },
            { "last_strided", 2, 2, 7, 16, 4, IN_LAST, 0 },
            { "tables_f16", 1, 2, 7, 32, 3, IN_CONTIG, 2 },
            { "tables_narrowed", 1, 2, 7, 32, 3, IN_SWAP12, 3 },
            { "empty_t0", 1, 2, 0, 32, 3, IN_CONTIG, 0 },
        };
        for (int op = 0; op < 3; op++)
            for (int c = 0; c < N_(rc); c++)
                if (t_case("nn/%s/%s/%s", rope_names[op], dn, rc[c].name)) {
                    /* rope_thd: x is [B, T, H, D] */
                    wk_shape s = op == 2 ? WK_SHAPE(rc[c].B, rc[c].T, rc[c].H, rc[c].D)
                                         : WK_SHAPE(rc[c].B, rc[c].H, rc[c].T, rc[c].D);
                    rope_case(dt, op, s, rc[c].lay, rc[c].off, rc[c].tables);
                }
        /* rope_kv: decode shapes, prefill rows, interleaved pairs, device positions (u32, i64) with rows past
           the caches or the tables, strided qkv and cache views */
        static const struct { const char *name; int64_t B, T, Hq, Hkv, D, C, off, npos; in_layout lay; bool inter;
                              int devpos; t_layout_kind clay; } kc[] = {
            { "decode_hq32_hkv8_d128", 1, 1, 32, 8, 128, 9, 5, 12, IN_CONTIG, false, 0, LK_CONTIG },
            { "decode_devpos_u32", 1, 1, 4, 2, 64, 7, 6, 9, IN_CONTIG, false, 1, LK_CONTIG },
            { "decode_devpos_i64_pairs", 2, 1, 6, 3, 16, 5, 2, 9, IN_CONTIG, true, 2, LK_NARROWED },
            { "prefill_t13_off3", 2, 13, 4, 2, 32, 17, 3, 20, IN_SWAP12, false, 0, LK_CONTIG },
            { "prefill_pairs_narrow", 1, 7, 2, 1, 8, 9, 1, 9, IN_NARROW, true, 0, LK_NARROWED },
            { "devpos_past_cache", 1, 3, 2, 1, 8, 4, 2, 9, IN_CONTIG, false, 1, LK_CONTIG },
            { "devpos_past_tables", 1, 3, 2, 1, 8, 9, 3, 4, IN_CONTIG, true, 2, LK_CONTIG },
            { "last_strided", 1, 2, 2, 1, 6, 3, 0, 3, IN_LAST, false, 0, LK_CONTIG },
        };
        for (int c = 0; c < N_(kc); c++)
            if (t_case("nn/rope_kv/%s/%s", dn, kc[c].name))
                rope_kv_case(dt, kc[c].B, kc[c].T, kc[c].Hq, kc[c].Hkv, kc[c].D, kc[c].C, kc[c].off, kc[c].npos, kc[c].lay,
                             kc[c].inter, kc[c].devpos, kc[c].clay);
        /* linear_rope_kv: one row (a GPU's fused launch where it takes it), prefill rows, adjacent pairs, a
           device position, a wide matrix's window, q8_0 */
        static const struct { const char *name; int64_t T, Hq, Hkv, D, K, off; bool inter; int devpos; bool wide, q; } lk[] = {
            { "row_hq4_hkv2_d16_k64", 1, 4, 2, 16, 64, 3, false, 0, false, false },
            { "row_devpos_pairs", 1, 2, 1, 8, 40, 5, true, 1, false, false },
            { "row_wide_d128_k136", 1, 2, 1, 128, 136, 0, false, 1, true, false },
            { "rows5_off2", 5, 2, 1, 8, 24, 2, false, 0, false, false },
            { "q8_0_row_k64", 1, 2, 1, 16, 64, 1, false, 0, false, true },
        };
        for (int c = 0; c < N_(lk); c++)
            if ((dt != WK_F64 || !lk[c].q) && t_case("nn/linear_rope_kv/%s/%s", dn, lk[c].name))
                linear_rope_kv_case(dt, lk[c].T, lk[c].Hq, lk[c].Hkv, lk[c].D, lk[c].K, lk[c].off, lk[c].inter,
                                    lk[c].devpos, lk[c].wide, lk[c].q);
        for (int c = 0; c < N_(acases); c++)
            if (t_case("nn/attention/%s/%s", dn, acases[c].name)) attention_case(dt, &acases[c]);
        if (t_case("nn/attention/%s/kv_len", dn)) attention_kv_len_case(dt);
    }
    if (t_case("nn/rope_kv/errors")) rope_kv_errors();
    if (t_case("nn/linear_rope_kv/errors")) linear_rope_kv_errors();
    static const struct { const char *name; int64_t D; double base; int64_t npos; wk_rope_scaling sc; bool has; } tc[] = {
        { "none_d128", 128, 10000, 4097, { 0 }, false },
        { "none_explicit_d64", 64, 1e6, 1023, { WK_ROPE_SCALING_NONE, 0, 0, 0, 0 }, true },
        { "linear4_d128", 128, 10000, 1023, { WK_ROPE_SCALING_LINEAR, 4, 0, 0, 0 }, true },
        { "llama3_d128", 128, 500000, 1023, { WK_ROPE_SCALING_LLAMA3, 8, 1, 4, 8192 }, true },
        { "llama3_d64_small_orig", 64, 500000, 200, { WK_ROPE_SCALING_LLAMA3, 32, 1, 4, 256 }, true },
        { "d2_npos1", 2, 10000, 1, { 0 }, false },
        { "npos0", 16, 10000, 0, { 0 }, false },
    };
    for (int c = 0; c < N_(tc); c++)
        if (t_case("nn/rope_tables/%s", tc[c].name)) rope_tables_case(tc[c].D, tc[c].base, tc[c].npos, tc[c].has ? &tc[c].sc : NULL);
    numpy_cases();
    errors();
}
