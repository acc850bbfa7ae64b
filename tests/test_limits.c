/* test_limits.c — sizes at the edge of 64 bits and absurd sizes, op by op,
 * each next to its legal twin: output sizes that would overflow int64
 * (conv_transpose with a huge stride, conv with a huge padding or
 * dilation, a pool window of 2^64 cells) are errors, not short results;
 * sizes no device holds (rope tables of 2^40 positions, arange of 10^15
 * elements, a tensor of 2^40 elements) fail at once with the sizes in the
 * message; upsampling with a tiny scale gives PyTorch's clamped values
 * (the last cell) instead of converting a position past 2^63 to an
 * integer; chunk, rope_kv, rope positions and attention windows at the
 * int64 limits. Then faults of model files at load (suite faults): a
 * truncated data section, overlapping tensors, a model too large for the
 * device. References: naive loops here in double (PyTorch's formulas) and
 * a few values printed by PyTorch 2.x.
 *
 * Case names: limits/<op>/<what>, faults/<what>.
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "t_llm_model.h"
#include "test.h"
#include "wick_formats.h"
#include "wick_llm.h"
#include "wick_tokenizer.h"

static const int64_t I64MAX = INT64_MAX;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* x f32 [1, 1, h, w] holding 0, 1, 2, ... */
static wk_tensor *ramp(wk_dtype dt, int64_t h, int64_t w)
{
    float v[64];
    for (int i = 0; i < h * w && i < 64; i++) v[i] = (float)i;
    wk_tensor *t = T_NEED(wk_from_host(t_dev(), WK_F32, WK_SHAPE(1, 1, h, w), v));
    return t && dt != WK_F32 ? t_own(wk_to_dtype(t, dt)) : t;
}

/* ---- PyTorch's upsampling formulas (aten/src/ATen/native/UpSample.h), in double ---- */

/* nearest: the source index of output o (the scale in f32 as PyTorch has it) */
static int64_t ref_nearest(int64_t o, int64_t in, int64_t out, double user)
{
    if (out == in || o == 0) return o;   /* o = 0: 0 x s is 0 for every finite s */
    if (out == 2 * in) return o >> 1;
    const float s = user > 0 ? (float)(1.0 / user) : (float)in / (float)out;
    const double r = floor((double)((float)o * s));
    return r >= (double)(in - 1) ? in - 1 : (int64_t)r;
}

/* bilinear without align_corners: the two sources and the second's weight
 * (guard_index_and_lambda: the weight clamped to [0, 1]); f32: the
 * position in f32 */
static void ref_bilin(int64_t o, int64_t in, int64_t out, double user, bool f32, int64_t *i0, int64_t *i1, double *l1)
{
    if (out == in) {
        *i0 = *i1 = o;
        *l1 = 0;
        return;
    }
    double r;
    if (f32) {
        const float s = user > 0 ? (float)(1.0 / user) : (float)in / (float)out;
        r = (double)(s * ((float)o + 0.5f) - 0.5f);
    } else {
        const double s = user > 0 ? 1.0 / user : (double)in / (double)out;
        r = s * ((double)o + 0.5) - 0.5;
    }
    if (r < 0) r = 0;
    *i0 = floor(r) >= (double)(in - 1) ? in - 1 : (int64_t)floor(r);
    *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);
    double l = r - (double)*i0;
    *l1 = l < 0 ? 0 : l > 1 ? 1 : l;
}

/* the bilinear upsampling of x [h, w] (row-major values) to [ho, wo] */
static void ref_bilinear(const double *x, int64_t h, int64_t w, int64_t ho, int64_t wo, double sh, double sw, bool f32,
                         double *out)
{
    for (int64_t a = 0; a < ho; a++)
        for (int64_t b = 0; b < wo; b++) {
            int64_t h0, h1, w0, w1;
            double lh, lw;
            ref_bilin(a, h, ho, sh, f32, &h0, &h1, &lh);
            ref_bilin(b, w, wo, sw, f32, &w0, &w1, &lw);
            out[a * wo + b] = (1 - lh) * ((1 - lw) * x[h0 * w + w0] + lw * x[h0 * w + w1]) +
                              lh * ((1 - lw) * x[h1 * w + w0] + lw * x[h1 * w + w1]);
        }
}

static void check_bilinear(const char *what, wk_dtype dt, int64_t h, int64_t w, int64_t ho, int64_t wo, double sh,
                           double sw)
{
    wk_tensor *x = ramp(dt, h, w);
    if (!x) return;
    wk_clear_error();
    wk_tensor *y = t_own(wk_upsample_bilinear2d(x, ho, wo, false, sh, sw));
    if (!y) {
        t_fail("%s: %s", what, wk_last_error());
        return;
    }
    double xs[64], *ref = t_mem((size_t)(ho * wo) * sizeof *ref);
    for (int i = 0; i < h * w; i++) xs[i] = i;
    ref_bilinear(xs, h, w, ho, wo, sh, sw, dt != WK_F64, ref);
    t_check_close(what, y, WK_SHAPE(1, 1, ho, wo), dt, ref, dt == WK_F64 ? 1e-24 : 1e-12);
}

static void check_nearest(const char *what, int64_t h, int64_t w, int64_t ho, int64_t wo, double sh, double sw)
{
    wk_tensor *x = ramp(WK_F32, h, w);
    if (!x) return;
    wk_tensor *y = t_own(wk_upsample_nearest2d(x, ho, wo, sh, sw));
    if (!y) {
        t_fail("%s: %s", what, wk_last_error());
        return;
    }
    double *ref = t_mem((size_t)(ho * wo) * sizeof *ref);
    for (int64_t a = 0; a < ho; a++)
        for (int64_t b = 0; b < wo; b++) ref[a * wo + b] = (double)(ref_nearest(a, h, ho, sh) * w + ref_nearest(b, w, wo, sw));
    t_check_close(what, y, WK_SHAPE(1, 1, ho, wo), WK_F32, ref, 0);
}

T_SUITE(limits)
{
    wk_device *dev = t_dev();
    if (t_case("limits/conv/overflow")) {
        wk_tensor *x = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 3))), *w = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 2)));
        wk_tensor *x2 = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 3, 3))), *w2 = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 2, 2)));
        if (x && w && x2 && w2) {
            /* (3 - 1) * 2^62 + 2 passes 2^63: an error, not a wrapped (short) size */
            const wk_conv_opts big_stride = { .stride = { (int64_t)1 << 62 } };
            t_check_null("conv_transpose1d(stride 2^62)", wk_conv_transpose1d(x, w, NULL, &big_stride), WK_ERR_SHAPE,
                         "overflows", "stride", NULL);
            const wk_conv_opts big2 = { .stride = { 1, I64MAX } };
            t_check_null("conv_transpose2d(stride 2^63-1)", wk_conv_transpose2d(x2, w2, NULL, &big2), WK_ERR_SHAPE,
                         "overflows", NULL, NULL);
            const wk_conv_opts big_pad = { .padding = { (int64_t)1 << 62 } };
            t_check_null("conv1d(padding 2^62)", wk_conv1d(x, w, NULL, &big_pad), WK_ERR_SHAPE, "overflows", "padding", NULL);
            t_check_null("conv_transpose1d(padding 2^62)", wk_conv_transpose1d(x, w, NULL, &big_pad), T_ANY_STATUS, NULL,
                         NULL, NULL);
            const wk_conv_opts big_dil = { .dilation = { I64MAX } };
            t_check_null("conv1d(dilation 2^63-1)", wk_conv1d(x, w, NULL, &big_dil), WK_ERR_SHAPE, "overflows", "dilation",
                         NULL);
            /* the legal twins: stride 3 gives (3 - 1) 3 + 2 = 8; padding 1 gives 4 */
            const wk_conv_opts s3 = { .stride = { 3 } }, p1 = { .padding = { 1 } };
            wk_tensor *y = t_own(wk_conv_transpose1d(x, w, NULL, &s3));
            T_CHECK(y && wk_tensor_dim(y, 2) == 8, "conv_transpose1d stride 3: %s", y ? "wrong size" : wk_last_error());
            y = t_own(wk_conv1d(x, w, NULL, &p1));
            T_CHECK(y && wk_tensor_dim(y, 2) == 4, "conv1d padding 1: %s", y ? "wrong size" : wk_last_error());
        }
    }
    if (t_case("limits/pool/overflow")) {
        wk_tensor *x = ramp(WK_F32, 4, 4);
        if (x) {
            /* ceil mode with a stride near 2^63: one window, x[0, 0] (no overflow in the rounding) */
            const wk_pool_opts o = { .kernel = { 1, 1 }, .stride = { I64MAX, I64MAX }, .ceil_mode = true };
            wk_tensor *y = t_own(wk_max_pool2d(x, &o, NULL));
            float v = -1;
            T_CHECK(y && wk_tensor_numel(y) == 1 && wk_to_host(y, &v, sizeof v) == WK_OK && v == 0.0f,
                    "max_pool2d, stride 2^63-1, ceil_mode: %s", y ? "wrong result" : wk_last_error());
            /* a window of 2^32 x 2^32 cells: its count (avg's divisor) passes 2^63 */
            const wk_pool_opts huge = { .kernel = { (int64_t)1 << 32, (int64_t)1 << 32 },
                                        .padding = { (int64_t)1 << 31, (int64_t)1 << 31 } };
            t_check_null("avg_pool2d(kernel 2^32 x 2^32)", wk_avg_pool2d(x, &huge), WK_ERR_SHAPE, "overflows", NULL, NULL);
            /* the legal twin: 2 x 2 windows, stride 2 */
            const wk_pool_opts two = { .kernel = { 2, 2 } };
            y = t_own(wk_avg_pool2d(x, &two));
            float a[4] = { 0 };
            T_CHECK(y && wk_to_host(y, a, sizeof a) == WK_OK && a[0] == 2.5f && a[3] == 12.5f, "avg_pool2d 2 x 2");
        }
    }
    if (t_case("limits/upsample_bilinear2d/tiny_scale")) {
        /* PyTorch 2.x, aten.upsample_bilinear2d(arange(16).reshape(1, 1, 4, 4), [6, 6], False, s, s):
         * s = 1e-3 (and anything smaller: the positions pass the last cell) gives 15 everywhere */
        const double scales[] = { 1e-3, 1e-30, 1e-300, 4.9e-324 };
        for (size_t i = 0; i < sizeof scales / sizeof *scales; i++) {
            for (int f64 = 0; f64 < 2; f64++) {
                wk_tensor *x = ramp(f64 ? WK_F64 : WK_F32, 4, 4);
                wk_tensor *y = x ? t_own(wk_upsample_bilinear2d(x, 6, 6, false, scales[i], scales[i])) : NULL;
                double v[36];
                wk_tensor *y64 = y ? t_own(wk_to_dtype(y, WK_F64)) : NULL;
                bool ok = y64 && wk_to_host(y64, v, sizeof v) == WK_OK;
                for (int k = 0; ok && k < 36; k++) ok = v[k] == 15.0;
                T_CHECK(ok, "bilinear %s, scale %g: not 15 everywhere (%s)", f64 ? "f64" : "f32", scales[i],
                        y ? "values" : wk_last_error());
            }
        }
        /* part of each dim clamped: PyTorch's row 0 for [8, 8] at scale 0.6 (f32) */
        wk_tensor *x = ramp(WK_F32, 4, 4);
        wk_tensor *y = x ? t_own(wk_upsample_bilinear2d(x, 8, 8, false, 0.6, 0.6)) : NULL;
        float row[64];
        static const float torch_row0[8] = { 1.6666665077209473f, 3.3333332538604736f, 4.3333330154418945f,
                                             4.3333330154418945f, 4.3333330154418945f, 4.3333330154418945f,
                                             4.3333330154418945f, 4.3333330154418945f };
        if (y && wk_to_host(y, row, sizeof row) == WK_OK)
            for (int k = 0; k < 8; k++)
                T_CHECK(fabsf(row[k] - torch_row0[k]) <= 2e-6f * fabsf(torch_row0[k]), "scale 0.6: [0][%d] = %.9g, "
                        "PyTorch %.9g", k, row[k], torch_row0[k]);
        else
            t_fail("bilinear scale 0.6: %s", wk_last_error());
        check_bilinear("bilinear f32 8x8 s0.6", WK_F32, 4, 4, 8, 8, 0.6, 0.6);
        check_bilinear("bilinear f64 8x8 s0.6", WK_F64, 4, 4, 8, 8, 0.6, 0.6);
        check_bilinear("bilinear f32 7x3 s0.3,2", WK_F32, 4, 4, 7, 3, 0.3, 2.0);
        check_bilinear("bilinear f32 5x9 s2,1e-9", WK_F32, 4, 4, 5, 9, 2.0, 1e-9);
        check_bilinear("bilinear f64 9x2 s1e-200,0", WK_F64, 4, 4, 9, 2, 1e-200, 0);
        /* the same size is a copy whatever the scale (PyTorch) */
        check_bilinear("bilinear same size, scale 1e-30", WK_F32, 4, 4, 4, 4, 1e-30, 1e-30);
        check_bilinear("bilinear same size, scale 3", WK_F64, 4, 4, 4, 4, 3, 3);
        /* the legal twin: an ordinary scale */
        check_bilinear("bilinear 2x", WK_F32, 4, 4, 8, 8, 2, 2);
    }
    if (t_case("limits/upsample_nearest/tiny_scale")) {
        /* PyTorch: aten.upsample_nearest2d(arange(16)..., [6, 6], 1e-3, 1e-3)[0][0][0] = [0, 3, 3, 3, 3, 3] */
        check_nearest("nearest scale 1e-3", 4, 4, 6, 6, 1e-3, 1e-3);
        check_nearest("nearest scale 1e-30", 4, 4, 6, 6, 1e-30, 1e-30);
        check_nearest("nearest scale 1e-300", 4, 4, 5, 7, 1e-300, 4.9e-324);
        check_nearest("nearest 2x with a tiny scale (PyTorch's o >> 1)", 4, 4, 8, 8, 1e-30, 1e-30);
        check_nearest("nearest scale 0.5", 4, 4, 6, 6, 0.5, 0.5);
        wk_tensor *x = T_NEED(wk_arange(dev, WK_F32, 0, 4, 1));
        wk_tensor *x1 = x ? t_own(wk_reshape(x, WK_SHAPE(1, 1, 4))) : NULL;
        wk_tensor *y = x1 ? t_own(wk_upsample_nearest1d(x1, 6, 1e-30)) : NULL;
        float v[6];
        T_CHECK(y && wk_to_host(y, v, sizeof v) == WK_OK && v[0] == 0 && v[1] == 3 && v[5] == 3,
                "nearest1d scale 1e-30: %s", y ? "values" : wk_last_error());
        /* a scale whose position product passes 2^61 with sizes like these: refused, not converted */
        wk_tensor *big = T_NEED(wk_full(dev, WK_F32, WK_SHAPE(1, 1, 1, 1), 1.0));
        wk_tensor *bv = big ? t_own(wk_broadcast_as(big, WK_SHAPE(1, 1, 1, (int64_t)1 << 40))) : NULL;
        if (bv)
            t_check_null("nearest2d of a 2^40-wide view to 2^22 with a scale", wk_upsample_nearest2d(bv, 1, (int64_t)1 << 22, 0.5, 1e-30),
                         WK_ERR_SHAPE, "2^61", NULL, NULL);
    }
    if (t_case("limits/rope_tables/huge")) {
        wk_tensor *c = NULL, *s = NULL;
        const double t0 = now_s();
        wk_clear_error();
        wk_status st = wk_rope_tables(dev, 128, 10000.0, (int64_t)1 << 40, NULL, &c, &s);
        const double dt = now_s() - t0;
        T_CHECK(st == WK_ERR_MEMORY && !c && !s && strstr(wk_last_error(), "bytes"),
                "rope tables of 2^40 positions: %s (%s)", wk_status_name(st), wk_last_error());
        T_CHECK(dt < 5, "rope tables of 2^40 positions took %.1f s to fail", dt);
        /* the legal twin */
        T_OK(wk_rope_tables(dev, 8, 10000.0, 70000, NULL, &c, &s));
        t_own(c), t_own(s);
        float row[4];
        wk_tensor *last = c ? t_own(wk_narrow(c, 0, 69999, 1)) : NULL;
        T_CHECK(last && wk_to_host(last, row, sizeof row) == WK_OK && fabs(row[0] - cos(69999.0)) < 1e-5 &&
                    fabs(row[1] - cos(69999.0 * pow(10000.0, -2.0 / 8))) < 1e-5,
                "rope tables, position 69999 (filled in blocks): %g", last ? (double)row[0] : 0.0);
    }
    if (t_case("limits/arange/huge")) {
        const double t0 = now_s();
        t_check_null("arange(0, 1e15)", wk_arange(dev, WK_F32, 0, 1e15, 1), WK_ERR_MEMORY, "bytes", NULL, NULL);
        T_CHECK(now_s() - t0 < 5, "arange of 10^15 elements took %.1f s to fail", now_s() - t0);
        wk_tensor *a = T_NEED(wk_arange(dev, WK_I64, -5, 200000, 3));   /* several blocks of 2^16 */
        int64_t v = 0;
        T_CHECK(a && wk_tensor_numel(a) == 66669 && wk_item(a, (const int64_t[]){ 66668 }, &(double){ 0 }) == WK_OK,
                "arange in blocks: %s", wk_last_error());
        wk_tensor *l = a ? t_own(wk_narrow(a, 0, 66668, 1)) : NULL;
        T_CHECK(l && wk_to_host(l, &v, sizeof v) == WK_OK && v == -5 + 3 * 66668, "arange's last element %lld",
                (long long)v);
    }
    if (t_case("limits/alloc/too_large")) {
        /* 2^40 f32 elements: 4 TiB, more than this machine: refused at once, sizes named */
        t_check_null("empty(f32 [2^40])", wk_empty(dev, WK_F32, WK_SHAPE((int64_t)1 << 40)), WK_ERR_MEMORY, "bytes",
                     "memory", NULL);
        wk_tensor *ok = t_own(wk_empty(dev, WK_F32, WK_SHAPE(1 << 20)));
        T_CHECK(ok != NULL, "4 MiB: %s", wk_last_error());
    }
    if (t_case("limits/chunk/huge_dim")) {
        wk_tensor *one = T_NEED(wk_full(dev, WK_U8, WK_SHAPE(1), 7));
        wk_tensor *v = one ? t_own(wk_broadcast_as(one, WK_SHAPE(I64MAX))) : NULL;
        wk_tensor *parts[3] = { NULL, NULL, NULL };
        int n = v ? wk_chunk(v, 3, 0, parts) : -1;
        T_CHECK(n == 3, "chunk of [2^63-1] in 3: %d (%s)", n, wk_last_error());
        const int64_t step = I64MAX / 3 + 1;
        for (int i = 0; i < n && i < 3; i++) {
            t_own(parts[i]);
            T_CHECK(wk_tensor_dim(parts[i], 0) == (i < 2 ? step : I64MAX - 2 * step), "chunk %d has %lld", i,
                    (long long)wk_tensor_dim(parts[i], 0));
        }
    }
    if (t_case("limits/rope/positions")) {
        wk_tensor *x = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 3, 4)));
        wk_tensor *c = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(8, 2)));
        if (x && c) {
            t_check_null("rope(pos 2^63-1)", wk_rope(x, c, c, I64MAX), WK_ERR_INDEX, "not all in the tables", NULL, NULL);
            t_check_null("rope(pos -2^63)", wk_rope(x, c, c, INT64_MIN), WK_ERR_INDEX, NULL, NULL, NULL);
            wk_tensor *y = t_own(wk_rope(x, c, c, 5));
            T_CHECK(y != NULL, "rope at the last positions 5 .. 7: %s", wk_last_error());
        }
        wk_tensor *qkv = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 2, 3, 4)));
        wk_tensor *kc = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 8, 4))), *vc = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 8, 4)));
        if (qkv && kc && vc && c) {
            const int64_t nqs[] = { INT64_MIN, -1, 0, 3, I64MAX };
            for (size_t i = 0; i < sizeof nqs / sizeof *nqs; i++)
                t_check_null("rope_kv(n_q at the limits)", wk_rope_kv(qkv, nqs[i], c, c, 0, NULL, false, kc, vc),
                             WK_ERR_SHAPE, "query heads", NULL, NULL);
            t_check_null("rope_kv(pos 2^63-1)", wk_rope_kv(qkv, 1, c, c, I64MAX, NULL, false, kc, vc), WK_ERR_INDEX,
                         NULL, NULL, NULL);
            wk_tensor *q = t_own(wk_rope_kv(qkv, 1, c, c, 6, NULL, false, kc, vc));
            T_CHECK(q != NULL, "rope_kv, n_q 1, positions 6 .. 7: %s", wk_last_error());
        }
    }
    if (t_case("limits/attention/huge_window")) {
        wk_tensor *q = T_NEED(wk_rand_normal(dev, WK_F32, WK_SHAPE(1, 2, 5, 8), 0, 1));
        wk_tensor *k = T_NEED(wk_rand_normal(dev, WK_F32, WK_SHAPE(1, 2, 7, 8), 0, 1));
        if (q && k) {
            const int64_t windows[] = { 7, 100, I64MAX };
            wk_tensor *ref = t_own(wk_attention(q, k, k, &(wk_attention_opts){ .causal = true }));
            float a[80], b[80];
            T_CHECK(ref && wk_to_host(ref, a, sizeof a) == WK_OK, "attention: %s", wk_last_error());
            for (size_t i = 0; ref && i < sizeof windows / sizeof *windows; i++) {
                wk_tensor *y = t_own(wk_attention(q, k, k, &(wk_attention_opts){ .causal = true, .window = windows[i] }));
                T_CHECK(y && wk_to_host(y, b, sizeof b) == WK_OK && !memcmp(a, b, sizeof a),
                        "a window of %lld keys (>= Tk = 7) is no window", (long long)windows[i]);
            }
            wk_tensor *w3 = t_own(wk_attention(q, k, k, &(wk_attention_opts){ .causal = true, .window = 3 }));
            T_CHECK(w3 && wk_to_host(w3, b, sizeof b) == WK_OK && memcmp(a, b, sizeof a) != 0, "a window of 3 keys changes "
                    "the result");
        }
    }
    if (t_case("limits/fuzz_ops/findings")) {
        /* found by tests/fuzz/fuzz_ops.c (UBSan): each a signed overflow on a legal call */
        /* an empty tensor whose other dims multiply past 2^63: its strides and numel */
        wk_tensor *e = t_own(wk_full(dev, WK_F32, WK_SHAPE((int64_t)1 << 50, 0, (int64_t)1 << 47), 1.0));
        T_CHECK(e && wk_tensor_numel(e) == 0 && wk_tensor_is_contiguous(e), "full [2^50, 0, 2^47]: %s", wk_last_error());
        wk_tensor *e2 = t_own(wk_zeros(dev, WK_U8, WK_SHAPE(0, (int64_t)1 << 40, (int64_t)1 << 40)));
        T_CHECK(e2 && wk_tensor_numel(e2) == 0 && wk_tensor_nbytes(e2) == 0, "zeros [0, 2^40, 2^40]: %s", wk_last_error());
        /* conv with a stride near 2^63: one output, the im2col step after it must not be taken */
        wk_tensor *x = T_NEED(wk_arange(dev, WK_F32, 1, 5, 1));
        wk_tensor *x3 = x ? t_own(wk_reshape(x, WK_SHAPE(1, 1, 4))) : NULL;
        wk_tensor *w = T_NEED(wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 1)));
        const wk_conv_opts far = { .stride = { I64MAX } };
        wk_tensor *y = x3 && w ? t_own(wk_conv1d(x3, w, NULL, &far)) : NULL;
        float v = 0;
        T_CHECK(y && wk_tensor_numel(y) == 1 && wk_to_host(y, &v, sizeof v) == WK_OK && v == 1.0f,
                "conv1d, stride 2^63-1: %s", y ? "wrong result" : wk_last_error());
        y = x3 && w ? t_own(wk_conv_transpose1d(x3, w, NULL, &(wk_conv_opts){ .stride = { (int64_t)1 << 60 } })) : NULL;
        T_CHECK(!y, "conv_transpose1d, stride 2^60: (4 - 1) 2^60 + 1 elements were made");
        /* copy2d of one row: its strides step nowhere, whatever their size */
        wk_tensor *d = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(4)));
        T_OK(d && x ? wk_copy2d(d, x, 1, 3, I64MAX, I64MAX / 2, 1, 0) : WK_ERR_ARGUMENT);
        float dv[4];
        T_CHECK(d && wk_to_host(d, dv, sizeof dv) == WK_OK && dv[0] == 2 && dv[2] == 4 && dv[3] == 0, "copy2d of one row");
        /* a pool whose kernel is far larger than its input (the cpu's cost estimate multiplied them) */
        wk_tensor *p = ramp(WK_F32, 3, 4);
        const wk_pool_opts big = { .kernel = { (int64_t)1 << 60, 1 }, .padding = { (int64_t)1 << 59, 0 }, .stride = { 1, 1 } };
        wk_tensor *py = p ? t_own(wk_max_pool2d(p, &big, NULL)) : NULL;
        float pv[16];   /* 4 x 4: every window covers the 3 rows */
        T_CHECK(py && wk_tensor_numel(py) == 16 && wk_to_host(py, pv, sizeof pv) == WK_OK && pv[0] == 8 && pv[3] == 11 &&
                    pv[15] == 11,
                "max_pool2d, kernel 2^60 x 1: %s", py ? "wrong result" : wk_last_error());
    }
    if (t_case("limits/tokenizer/stream_nul")) {
        /* found by tests/fuzz/fuzz_tokenizer.c: a push that holds its bytes back (the first byte of
         * a character split over tokens) gave the previous call's text past length 0 */
        static const char *const toks[] = { "<unk>", "<0xC3>", "<0xA9>", "a" };
        const int32_t types[] = { WK_TOK_TYPE_UNKNOWN, WK_TOK_TYPE_BYTE, WK_TOK_TYPE_BYTE, WK_TOK_TYPE_NORMAL };
        const float scores[] = { 0, 0, 0, -1 };
        wk_tokenizer_spec sp = wk_tokenizer_spec_default();
        sp.model = WK_TOK_MODEL_SPM;
        sp.n_tokens = 4, sp.tokens = toks, sp.token_types = types, sp.scores = scores, sp.unk_id = 0;
        wk_tokenizer *t = wk_tokenizer_new(&sp);
        wk_tok_stream *s = t ? wk_tok_stream_new(t, 0) : NULL;
        const char *p = NULL;
        size_t n = 9;
        T_CHECK(s && wk_tok_stream_push(s, 3, &p, &n) == WK_OK && n == 1 && !strcmp(p, "a"), "push 'a'");
        T_CHECK(s && wk_tok_stream_push(s, 1, &p, &n) == WK_OK && n == 0 && p && p[0] == 0,
                "a held-back byte: %zu bytes, text \"%s\"", n, p ? p : "(null)");
        T_CHECK(s && wk_tok_stream_push(s, 2, &p, &n) == WK_OK && n == 0 && p && p[0] == 0,
                "a run of byte tokens, held: %zu bytes, text \"%s\"", n, p ? p : "(null)");
        T_CHECK(s && wk_tok_stream_flush(s, &p, &n) == WK_OK && n == 2 && !strcmp(p, "\xc3\xa9"), "the character at the end");
        wk_tok_stream_free(s);
        wk_tokenizer_free(t);
    }
}

/* ---- faults of model files at load ----------------------------------------------------- */

static bool copy_file(const char *from, const char *to, long keep)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    bool ok = a && b;
    char buf[4096];
    long done = 0;
    for (size_t n; ok && (keep < 0 || done < keep) && (n = fread(buf, 1, sizeof buf, a)) > 0;) {
        if (keep >= 0 && done + (long)n > keep) n = (size_t)(keep - done);
        ok = fwrite(buf, 1, n, b) == n;
        done += (long)n;
    }
    if (a) fclose(a);
    if (b && fclose(b)) ok = false;
    return ok;
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* the file offset of the info of tensor `name` in a GGUF's header (just
 * after its name), or -1 */
static long info_at(const char *path, const char *name)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const size_t len = strlen(name);
    for (size_t i = 0; i + 8 + len <= n; i++) {
        uint64_t l;
        memcpy(&l, buf + i, 8);
        if (l == len && !memcmp(buf + i + 8, name, len)) return (long)(i + 8 + len);
    }
    return -1;
}

static bool patch(const char *path, long at, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY);
    bool ok = fd >= 0 && pwrite(fd, p, n, at) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return ok;
}

static void expect_load_error(const char *what, const char *path, wk_status want, const char *w1, const char *w2)
{
    wk_clear_error();
    wk_llm *m = wk_llm_load(path, t_dev(), &(wk_llm_options){ .progress = WK_PROGRESS_OFF });
    const char *e = wk_last_error();
    T_CHECK(!m && wk_last_status() == want && strstr(e, w1) && (!w2 || strstr(e, w2)),
            "%s: load %s with %s: \"%s\" (want %s, \"%s\", \"%s\")", what, m ? "succeeded" : "failed",
            wk_status_name(wk_last_status()), e, wk_status_name(want), w1, w2 ? w2 : "");
    wk_llm_free(m);
}

/* the intact model file of the GGUF cases, written by the first that needs it */
static bool good_gguf(const tcfg *c, const char *path)
{
    static bool made;
    if (made) return true;
    tmodel tm = make_model(*c);
    made = write_gguf(&tm, path, WK_F32);
    if (!made) t_fail("cannot write %s", path);
    return made;
}

T_SUITE(faults)
{
    tcfg c = cfg_of(A_LLAMA, false);
    c.tied = true;   /* token_embd.weight is then the one tensor of the vocabulary's size */
    const char *good = tmp_path("faults-good.gguf"), *bad = tmp_path("faults-bad.gguf");
    if (t_case("faults/gguf/truncated") && good_gguf(&c, good)) {
        const long size = file_size(good);
        wk_llm *m = wk_llm_load(good, t_dev(), &(wk_llm_options){ .progress = WK_PROGRESS_OFF });
        T_CHECK(m != NULL, "the intact file: %s", wk_last_error());
        wk_llm_free(m);
        /* the data section cut short: one byte, half of it */
        const long cuts[] = { 1, 4096, size / 2 };
        for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
            T_CHECK(copy_file(good, bad, size - cuts[i]), "copy");
            expect_load_error("a truncated data section", bad, WK_ERR_IO, "past the end of the file", "faults-bad.gguf");
        }
    }
    if (t_case("faults/gguf/overlap") && good_gguf(&c, good)) {
        /* blk.0.attn_k.weight's data offset set to blk.0.attn_q.weight's: two tensors in one range */
        const long q = info_at(good, "blk.0.attn_q.weight"), k = info_at(good, "blk.0.attn_k.weight");
        uint64_t qoff;
        FILE *f = fopen(good, "rb");
        bool ok = f && q > 0 && k > 0 && fseek(f, q + 4 + 2 * 8 + 4, SEEK_SET) == 0 && fread(&qoff, 8, 1, f) == 1;
        if (f) fclose(f);
        T_CHECK(ok && copy_file(good, bad, -1) && patch(bad, k + 4 + 2 * 8 + 4, &qoff, 8), "cannot patch the offsets");
        if (ok) expect_load_error("overlapping tensors", bad, WK_ERR_IO, "overlaps", "inconsistent tensor offsets");
        wk_clear_error();
        wk_gguf *g = wk_gguf_open(bad);
        T_CHECK(!g && strstr(wk_last_error(), "blk.0.attn"), "wk_gguf_open of overlapping tensors: %s", wk_last_error());
        wk_gguf_close(g);
    }
    if (t_case("faults/gguf/too_large") && good_gguf(&c, good)) {
        /* token_embd.weight declared [2^31, E] f32 (256 GiB at E = 32), its data a hole in a sparse
         * file: the load fails at its allocation, naming the tensor and the bytes */
        wk_device_info di;
        const uint64_t bytes = ((uint64_t)1 << 31) * (uint64_t)c.E * 4;
        const bool fits = wk_device_info_get(t_dev(), &di) == WK_OK && di.total_memory >= bytes;
        /* the file again with token_embd.weight last, so that its data ends the file */
        wk_gguf *g = wk_gguf_open(good);
        wk_gguf_writer *w = wk_gguf_writer_new();
        bool last = g && w;
        for (int64_t i = 0; last && i < wk_gguf_kv_count(g); i++)
            last = wk_gguf_writer_copy_kv(w, g, wk_gguf_kv_key(g, i)) == WK_OK;
        for (int pass = 0; pass < 2; pass++)
            for (int64_t i = 0; last && i < wk_gguf_tensor_count(g); i++) {
                const wk_file_tensor *ti = wk_gguf_tensor_info(g, i);
                if ((strcmp(ti->name, "token_embd.weight") == 0) == (pass == 1))
                    last = wk_gguf_writer_add_data(w, ti->name, ti->dtype, ti->shape, ti->data) == WK_OK;
            }
        last = last && wk_gguf_writer_write(w, bad) == WK_OK;
        wk_gguf_writer_free(w);
        wk_gguf_close(g);
        g = last ? wk_gguf_open(bad) : NULL;
        const int64_t te = g ? wk_gguf_tensor_index(g, "token_embd.weight") : -1;
        const uint64_t data_start = te >= 0 ? wk_gguf_tensor_info(g, te)->offset : 0;
        wk_gguf_close(g);
        const long at = te >= 0 ? info_at(bad, "token_embd.weight") : -1;
        const uint64_t vocab = (uint64_t)1 << 31;
        if (fits) {
            printf("  faults/gguf/too_large: skipped: this machine has %llu bytes, the tensor takes %llu\n",
                   (unsigned long long)di.total_memory, (unsigned long long)bytes);
        } else if (!last || at < 0) {
            t_fail("cannot rewrite the file with token_embd.weight last: %s", wk_last_error());
        } else {
            bool ok = patch(bad, at + 4 + 8, &vocab, 8);   /* dims[1]: the rows */
            int fd = ok ? open(bad, O_WRONLY) : -1;
            ok = fd >= 0 && ftruncate(fd, (off_t)(data_start + bytes)) == 0;
            if (fd >= 0) close(fd);
            if (!ok) {
                printf("  faults/gguf/too_large: skipped: no sparse file of %llu bytes here\n",
                       (unsigned long long)(data_start + bytes));
            } else {
                const double t0 = now_s();
                expect_load_error("a model too large for the device", bad, WK_ERR_MEMORY, "token_embd.weight", "bytes");
                T_CHECK(now_s() - t0 < 10, "the refusal took %.1f s", now_s() - t0);
                /* the format's reader alone: the tensor's size is in the message */
                wk_gguf *h = wk_gguf_open(bad);
                wk_clear_error();
                wk_tensor *t = h ? wk_gguf_tensor(h, "token_embd.weight", t_dev()) : NULL;
                T_CHECK(h && !t && wk_last_status() == WK_ERR_MEMORY && strstr(wk_last_error(), "274877906944"),
                        "wk_gguf_tensor of 256 GiB: %s", wk_last_error());
                wk_release(t);
                wk_gguf_close(h);
            }
        }
    }
    if (t_case("faults/safetensors/truncated")) {
        tcfg hc = cfg_of(A_LLAMA, true);
        tmodel hm = make_model(hc);
        const char *dir = tmp_path("faults-hf");
        char st[512];
        snprintf(st, sizeof st, "%s/model.safetensors", dir);
        if (!write_hf(&hm, dir)) {
            t_fail("cannot write %s", dir);
        } else {
            wk_llm *m = wk_llm_load(dir, t_dev(), &(wk_llm_options){ .progress = WK_PROGRESS_OFF });
            T_CHECK(m != NULL, "the intact model: %s", wk_last_error());
            wk_llm_free(m);
            const long n = file_size(st);
            int fd = open(st, O_WRONLY);
            T_CHECK(fd >= 0 && ftruncate(fd, n - 100) == 0, "truncate");
            if (fd >= 0) close(fd);
            expect_load_error("a truncated safetensors file", dir, WK_ERR_IO, "model.safetensors", "data");
        }
        rm_model(dir);
    }
    remove(good);
    remove(bad);
}
