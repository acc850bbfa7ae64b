/* fuzz_ops.c — libFuzzer harness for the ops' integer and float options
 * at the limits of 64 bits: the input is a list of calls, each an op
 * number and its options (small values mostly, powers of two up to 2^63,
 * any 64-bit value, and for doubles tiny, huge, infinite and NaN values).
 * The ops run on small cpu tensors of every dense dtype and on broadcast
 * views of up to 2^62 elements: convolutions, pools, upsampling, rope
 * tables and positions, arange, full, narrow, chunk, reshape, cat,
 * broadcast_as, topk, copy2d, attention windows, affine / powf / elu and
 * casts into integer dtypes. A call either fails with an error message
 * or gives a tensor; for convolutions and pools the output size is
 * computed here in 128-bit arithmetic and must match (a size past 2^63
 * must be an error, not a wrapped result). Calls whose result would be
 * larger than 2^20 elements but valid are not made (they are legal, only
 * slow). UBSan reports any signed overflow or float-to-integer conversion
 * out of range; -timeout reports an op that runs for minutes on a size it
 * should refuse. Corpus: tests/fuzz/corpus/ops/.
 */
#include <math.h>
#include "fuzz_util.h"

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static uint8_t u8(rd *r) { return r->at < r->n ? r->p[r->at++] : 0; }

static int64_t i64(rd *r)
{
    uint8_t t = u8(r);
    if (t < 160) return t % 9;
    if (t < 176) return -(int64_t)(t % 4) - 1;
    if (t < 240) {
        int e = (t - 176) % 32 + 32;   /* 2^32 .. 2^63 */
        uint64_t v = e >= 63 ? (uint64_t)INT64_MAX : (uint64_t)1 << e;
        return (t & 1) ? (int64_t)v : (int64_t)(v - 1);
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
    return (int64_t)v;
}

static double dbl(rd *r)
{
    static const double special[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-3, 1e-30, 1e-300, 4.9e-324, 1e30, 1e300,
                                      INFINITY, -INFINITY, NAN, 9.2233720368547758e18, -9.2233720368547758e18,
                                      1.8446744073709552e19, 255.5, -128.5, 65535.7, 4294967296.0, -1e-3, 0.6 };
    uint8_t t = u8(r);
    if (t < 200) return special[t % (sizeof special / sizeof *special)];
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static wk_tensor *small[WK_DTYPE_COUNT];   /* [2, 3, 4] of each dense dtype */
static wk_tensor *one_f32;                 /* [1] */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    wk_device *dev = fz_dev();
    for (int dt = 0; dt <= WK_F8E4M3; dt++) {
        wk_tensor *a = wk_arange(dev, WK_F32, -11, 13, 1);
        wk_tensor *b = a ? wk_reshape(a, WK_SHAPE(2, 3, 4)) : NULL;
        small[dt] = b ? wk_to_dtype(b, (wk_dtype)dt) : NULL;
        FZ_CHECK(small[dt] != NULL, "setup: %s", wk_last_error());
        wk_release(a);
        wk_release(b);
    }
    one_f32 = wk_full(dev, WK_F32, WK_SHAPE(1), 1.5);
    FZ_CHECK(one_f32 != NULL, "setup");
    return 0;
}

#define CAP ((__int128)1 << 20)   /* results larger than this (valid) are not computed */

/* a x b for sizes, saturated at 2^100 */
static __int128 mul(__int128 a, __int128 b)
{
    const __int128 top = (__int128)1 << 100;
    if (a <= 0 || b <= 0) return a < 0 || b < 0 ? -1 : 0;
    return a > top / b ? top : a * b;
}

/* a result: NULL with a message, or a tensor that is read back (small) */
static void done(const char *op, wk_tensor *t)
{
    if (!t) {
        FZ_CHECK(wk_last_status() != WK_OK && wk_last_error()[0], "%s failed without a message", op);
        return;
    }
    const int64_t n = wk_tensor_numel(t);
    FZ_CHECK(n >= 0, "%s: numel %lld", op, (long long)n);
    if (n <= (1 << 20) && wk_tensor_nbytes(t) <= ((size_t)16 << 20)) {
        void *h = malloc(wk_tensor_nbytes(t) + 1);
        FZ_CHECK(wk_to_host(t, h, wk_tensor_nbytes(t)) == WK_OK, "%s: to_host: %s", op, wk_last_error());
        free(h);
    }
    wk_release(t);
}

/* PyTorch's conv output size in 128 bits; -1: below 1 (an error) */
static __int128 conv_out(bool tr, __int128 in, __int128 k, __int128 s, __int128 p, __int128 d, __int128 op)
{
    if (in < 1 || k < 1) return -1;
    __int128 ext = d * (k - 1) + 1, o;
    if (!tr) o = in + 2 * p - ext < 0 ? 0 : (in + 2 * p - ext) / s + 1;
    else o = (in - 1) * s - 2 * p + ext + op;
    return o < 1 ? -1 : o;
}

static void op_conv(rd *r)
{
    const uint8_t f = u8(r);
    const bool tr = f & 1, two = f & 2;
    const int nsp = two ? 2 : 1;
    const int64_t in[2] = { 1 + u8(r) % 8, 1 + u8(r) % 8 }, k[2] = { 1 + u8(r) % 4, 1 + u8(r) % 4 };
    wk_conv_opts o = { .groups = u8(r) % 4 == 0 ? i64(r) : 0 };
    for (int i = 0; i < nsp; i++) {
        o.stride[i] = i64(r), o.padding[i] = i64(r), o.dilation[i] = i64(r);
        o.output_padding[i] = tr ? i64(r) : 0;
    }
    wk_device *dev = fz_dev();
    wk_tensor *x = two ? wk_ones(dev, WK_F32, WK_SHAPE(1, 1, in[0], in[1])) : wk_ones(dev, WK_F32, WK_SHAPE(1, 1, in[0]));
    wk_tensor *w = two ? wk_ones(dev, WK_F32, WK_SHAPE(1, 1, k[0], k[1])) : wk_ones(dev, WK_F32, WK_SHAPE(1, 1, k[0]));
    FZ_CHECK(x && w, "conv setup");
    /* the output, independently: valid options, its size in 128 bits */
    bool valid = o.groups == 0 || o.groups == 1, over = false;
    __int128 numel = 1, out[2] = { 0, 0 };
    for (int i = 0; i < nsp; i++) {
        const __int128 s = o.stride[i] ? o.stride[i] : 1, d = o.dilation[i] ? o.dilation[i] : 1;
        if (s < 1 || d < 1 || o.padding[i] < 0 || o.output_padding[i] < 0) valid = false;
        else if (tr && o.output_padding[i] >= s && o.output_padding[i] >= d) valid = false;
        out[i] = valid ? conv_out(tr, in[i], k[i], s, o.padding[i], d, o.output_padding[i]) : -1;
        if (out[i] >= ((__int128)1 << 63)) over = true;
        if (out[i] < 1) valid = false;
        else numel = mul(numel, out[i]);
    }
    if (!valid || over || numel <= CAP) {
        wk_clear_error();
        wk_tensor *y = two ? (tr ? wk_conv_transpose2d(x, w, NULL, &o) : wk_conv2d(x, w, NULL, &o))
                           : (tr ? wk_conv_transpose1d(x, w, NULL, &o) : wk_conv1d(x, w, NULL, &o));
        FZ_CHECK(!y || !over, "conv (transposed %d, %d-d) accepted options whose output size passes 2^63", tr, nsp);
        FZ_CHECK(!y || valid, "conv (transposed %d, %d-d) accepted invalid options", tr, nsp);
        for (int i = 0; y && i < nsp; i++)
            FZ_CHECK((__int128)wk_tensor_dim(y, 2 + i) == out[i], "conv output size %lld, want %lld",
                     (long long)wk_tensor_dim(y, 2 + i), (long long)out[i]);
        done("conv", y);
    }
    wk_release(x);
    wk_release(w);
}

static void op_pool(rd *r)
{
    const uint8_t f = u8(r);
    wk_pool_opts o = { .ceil_mode = f & 1, .exclude_pad = f & 2 };
    for (int i = 0; i < 2; i++) o.kernel[i] = i64(r), o.stride[i] = i64(r), o.padding[i] = i64(r);
    const bool view = f & 4;   /* a broadcast input of huge planes */
    wk_tensor *x = view ? wk_broadcast_as(one_f32, WK_SHAPE(1, 1, (int64_t)1 << (u8(r) % 31), (int64_t)1 << (u8(r) % 31)))
                        : wk_reshape(small[WK_F32], WK_SHAPE(1, 2, 3, 4));
    FZ_CHECK(x != NULL, "pool setup");
    /* the output size, independently: floor or ceil of (in + 2p - k) / s, + 1 */
    __int128 numel = (__int128)wk_tensor_dim(x, 0) * wk_tensor_dim(x, 1), work = 1;
    bool valid = true;
    for (int i = 0; i < 2; i++) {
        const __int128 k = o.kernel[i], s = o.stride[i] ? o.stride[i] : k, p = o.padding[i], in = wk_tensor_dim(x, 2 + i);
        if (k < 1 || s < 1 || p < 0 || p > k / 2) {
            valid = false;
            break;
        }
        const __int128 num = in + 2 * p - k;
        __int128 out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
        if (o.ceil_mode) {
            out = (num >= 0 ? (num + s - 1) / s : -(-num / s)) + 1;
            if (out > 0 && (out - 1) * s >= in + p) out--;
        }
        if (out < 1) valid = false;
        numel = mul(numel, out > 0 ? out : 1);
        work = mul(work, k < in ? k : in);   /* a window's cells inside x */
    }
    /* valid but long (windows of 2^60 cells of a broadcast view) is not a finding: not run */
    if (!valid || (numel <= CAP && mul(numel, work) <= ((__int128)1 << 26))) {
        wk_clear_error();
        wk_tensor *idx = NULL;
        wk_tensor *y = f & 8 ? wk_max_pool2d(x, &o, &idx) : wk_avg_pool2d(x, &o);
        if (y && valid) FZ_CHECK((__int128)wk_tensor_numel(y) == numel, "pool output of %lld elements, want %lld",
                                 (long long)wk_tensor_numel(y), (long long)numel);
        FZ_CHECK(!y || valid, "a pool with invalid options was accepted");
        wk_release(idx);
        done("pool", y);
    }
    wk_release(x);
}

static void op_upsample(rd *r)
{
    const uint8_t f = u8(r);
    const int64_t oh = 1 + u8(r) % 12, ow = 1 + u8(r) % 12;
    const double sh = dbl(r), sw = dbl(r);
    const wk_dtype dt = f & 1 ? WK_F64 : f & 2 ? WK_BF16 : WK_F32;
    wk_tensor *x = wk_reshape(small[dt], WK_SHAPE(1, 2, 3, 4));
    FZ_CHECK(x != NULL, "upsample setup");
    wk_clear_error();
    switch ((f >> 2) % 3) {
    case 0: done("upsample_nearest2d", wk_upsample_nearest2d(x, oh, ow, sh, sw)); break;
    case 1: done("upsample_bilinear2d", wk_upsample_bilinear2d(x, oh, ow, f & 32, sh, sw)); break;
    default: {
        wk_tensor *x1 = wk_reshape(small[dt], WK_SHAPE(2, 3, 4));
        done("upsample_nearest1d", wk_upsample_nearest1d(x1, ow, sw));
        wk_release(x1);
    }
    }
    /* a wide broadcast input with a scale */
    wk_tensor *bx = wk_broadcast_as(one_f32, WK_SHAPE(1, 1, 2, (int64_t)1 << (u8(r) % 48)));
    if (bx) {
        wk_clear_error();
        done("upsample_nearest2d (wide)", wk_upsample_nearest2d(bx, 2, 1 + u8(r) % 64, sh, sw));
        wk_release(bx);
    }
    wk_release(x);
}

static void op_misc(rd *r)
{
    wk_device *dev = fz_dev();
    const uint8_t which = u8(r);
    const wk_dtype dt = (wk_dtype)(u8(r) % (WK_F8E4M3 + 1));
    wk_clear_error();
    switch (which % 14) {
    case 0: {   /* rope tables: computed when small, else they must be refused at once */
        const int64_t D = i64(r), n = i64(r);
        const double base = dbl(r);
        wk_tensor *c = NULL, *s = NULL;
        const __int128 bytes = mul(mul((D > 0 ? D : 0) / 2, n > 0 ? n : 0), 8);
        if (bytes <= ((__int128)64 << 20) || D % 2 || !(base > 0) || bytes >= ((__int128)1 << 45)) {
            if (wk_rope_tables(dev, D, base, n, NULL, &c, &s) != WK_OK) fz_check_error("rope_tables");
            wk_release(c);
            wk_release(s);
        }
        break;
    }
    case 1: {   /* arange: computed when small, refused when huge */
        const double a = dbl(r), b = dbl(r), st = dbl(r);
        const double cnt = ceil((b - a) / st);
        if (!(cnt > (double)(1 << 20)) || cnt > 1e15) done("arange", wk_arange(dev, dt, a, b, st));
        break;
    }
    case 2: {   /* full: shapes and values at the limits, every dtype (casts saturate) */
        const int rank = u8(r) % 4;
        wk_shape sh = { rank, { 0 } };
        __int128 numel = 1;
        bool neg = false;
        for (int i = 0; i < rank; i++) {
            sh.dims[i] = i64(r);
            neg |= sh.dims[i] < 0;
            numel = mul(numel, sh.dims[i] > 0 ? sh.dims[i] : 0);
        }
        const double v = dbl(r);
        if (neg || numel <= CAP || numel >= ((__int128)1 << 45)) done("full", wk_full(dev, dt, sh, v));
        break;
    }
    case 3: {   /* affine / powf / elu on every dtype */
        const double a = dbl(r), b = dbl(r);
        done("affine", wk_affine(small[dt], a, b));
        done("powf", wk_powf(small[dt], a));
        done("elu", wk_elu(small[dt], b));
        break;
    }
    case 4: {   /* casts of extreme values into every dtype */
        const double v = dbl(r);
        wk_tensor *src = wk_full(dev, u8(r) & 1 ? WK_F64 : WK_F32, WK_SHAPE(3), v);
        if (src) done("to_dtype", wk_to_dtype(src, dt));
        wk_release(src);
        break;
    }
    case 5: {   /* narrow / transpose / unsqueeze / flatten of a broadcast view */
        wk_tensor *v = wk_broadcast_as(one_f32, WK_SHAPE((int64_t)1 << (u8(r) % 63), 1 + u8(r) % 4));
        if (!v) break;
        done("narrow", wk_narrow(v, 0, i64(r), i64(r)));
        done("unsqueeze", wk_unsqueeze(v, (int)(int8_t)u8(r)));
        done("flatten", wk_flatten(v, 0, -1));
        wk_tensor *parts[8];
        const int n = wk_chunk(v, (int)(u8(r) % 9) - 1, (int)(int8_t)u8(r) % 3, parts);
        for (int i = 0; i < n && i < 8; i++) wk_release(parts[i]);
        wk_release(v);
        break;
    }
    case 6: {   /* reshape with -1, and of a broadcast view (copies only when small) */
        wk_shape sh = { 1 + u8(r) % 4, { 0 } };
        for (int i = 0; i < sh.rank; i++) sh.dims[i] = u8(r) & 1 ? -1 : i64(r);
        done("reshape", wk_reshape(small[dt], sh));
        break;
    }
    case 7: {   /* broadcast_as and cat of huge views */
        wk_shape sh = { 2, { i64(r), i64(r) } };
        wk_tensor *v = wk_broadcast_as(one_f32, sh);
        if (v) {
            wk_tensor *ts[3] = { v, v, v };
            const __int128 n = mul(mul(sh.dims[0], sh.dims[1]), 3);
            if (n <= CAP || sh.dims[0] >= ((int64_t)1 << 45)) done("cat", wk_cat(ts, 1 + u8(r) % 3, 0));
            wk_release(v);
        } else {
            fz_check_error("broadcast_as");
        }
        break;
    }
    case 8: {   /* topk */
        wk_tensor *idx = NULL;
        done("topk", wk_topk(small[dt], i64(r), u8(r) & 1, &idx));
        wk_release(idx);
        break;
    }
    case 9: {   /* copy2d */
        wk_tensor *d = wk_zeros(dev, dt, WK_SHAPE(24));
        if (d && wk_copy2d(d, small[dt], i64(r), i64(r), i64(r), i64(r), i64(r), i64(r)) != WK_OK) fz_check_error("copy2d");
        wk_release(d);
        break;
    }
    case 10: {   /* rope positions and rope_kv heads */
        wk_tensor *x = wk_ones(dev, WK_F32, WK_SHAPE(1, 1, 3, 4)), *c = wk_ones(dev, WK_F32, WK_SHAPE(8, 2));
        wk_tensor *qkv = wk_ones(dev, WK_F32, WK_SHAPE(1, 2, 3, 4));
        wk_tensor *kc = wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 8, 4)), *vc = wk_zeros(dev, WK_F32, WK_SHAPE(1, 1, 8, 4));
        if (x && c && qkv && kc && vc) {
            done("rope", wk_rope(x, c, c, i64(r)));
            done("rope_kv", wk_rope_kv(qkv, i64(r), c, c, i64(r), NULL, u8(r) & 1, kc, vc));
        }
        wk_release(x), wk_release(c), wk_release(qkv), wk_release(kc), wk_release(vc);
        break;
    }
    case 11: {   /* attention options */
        wk_tensor *q = wk_reshape(small[WK_F32], WK_SHAPE(1, 2, 3, 4));
        wk_attention_opts o = { .window = i64(r), .scale = dbl(r), .softcap = dbl(r), .causal = u8(r) & 1 };
        if (q) done("attention", wk_attention(q, q, q, &o));
        wk_release(q);
        break;
    }
    case 12: {   /* index_select / gather with ids at the edges */
        int64_t ids[2] = { i64(r), i64(r) };
        wk_tensor *it = wk_from_host(dev, WK_I64, WK_SHAPE(2), ids);
        if (it) {
            done("index_select", wk_index_select(small[dt], it, (int)(int8_t)u8(r) % 4));
            wk_release(it);
        }
        break;
    }
    default: {   /* softmax / reductions over a dim from the input */
        int dims[2] = { (int)(int8_t)u8(r), (int)(int8_t)u8(r) };
        done("sum", wk_sum(small[dt], dims, u8(r) % 3, u8(r) & 1));
        if (wk_dtype_is_float(dt)) done("softmax", wk_softmax(small[dt], dims[0]));
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = { data, size, 0 };
    for (int calls = 0; calls < 8 && r.at < r.n; calls++) {
        switch (u8(&r) % 4) {
        case 0: op_conv(&r); break;
        case 1: op_pool(&r); break;
        case 2: op_upsample(&r); break;
        default: op_misc(&r); break;
        }
    }
    return 0;
}
