/* test_dtype.c — dtype conversions (wk_to_dtype, all 100 pairs) and the
 * dtype helpers (names, sizes, is_float, from_name).
 *
 *   ref/...           the tests' own codecs (t_dtype.h) against numpy /
 *                     ml_dtypes data (tests/data/dtype_ref.h): every f16,
 *                     bf16 and f8e4m3 pattern, tricky roundings
 *   to_dtype/decode/  the library's f16/bf16/f8e4m3 -> f32/f64 for every
 *                     bit pattern, against the checked-in data
 *   to_dtype/round/   the library's f64/f32/i64 -> f16/bf16/f8e4m3/f32
 *                     on the checked-in rounding cases (midpoints, double
 *                     rounding traps, overflow, saturation, NaN)
 *   to_dtype/A->B/L   every pair over the layouts, random values with
 *                     specials (NaN, Inf, +-0, saturating magnitudes),
 *                     exact against the tests' own codec
 *   dtype/...         names and sizes
 */
#include <stdlib.h>
#include "test.h"
#include "data/dtype_ref.h"

#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

static uint32_t f32_bits_of(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t fnv_words(const uint32_t *w, int64_t n)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            h ^= (w[i] >> (8 * k)) & 0xFF;
            h *= 0x100000001B3ull;
        }
    return h;
}

static double f64_of_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ---- the tests' own codecs against numpy/ml_dtypes ------------------------ */

static void ref_cases(void)
{
    if (t_case("ref/decode/f16_bf16_tables")) {
        uint32_t *w16 = t_mem(65536 * 4), *wb = t_mem(65536 * 4);
        for (int p = 0; p < 65536; p++) {
            double a = t_f16_value((uint16_t)p), b = t_bf16_value((uint16_t)p);
            w16[p] = isnan(a) ? 0x7FC00000u : f32_bits_of(a);
            wb[p] = isnan(b) ? 0x7FC00000u : f32_bits_of(b);
        }
        T_CHECK(fnv_words(w16, 65536) == ref_f16_table_fnv, "f16 decoder disagrees with numpy's table");
        T_CHECK(fnv_words(wb, 65536) == ref_bf16_table_fnv, "bf16 decoder disagrees with ml_dtypes' table");
        for (int64_t i = 0; i < NELEM(ref_f16_samples); i++)
            T_CHECK(w16[ref_f16_samples[i][0]] == ref_f16_samples[i][1], "f16 pattern 0x%04x", ref_f16_samples[i][0]);
        for (int64_t i = 0; i < NELEM(ref_bf16_samples); i++)
            T_CHECK(wb[ref_bf16_samples[i][0]] == ref_bf16_samples[i][1], "bf16 pattern 0x%04x", ref_bf16_samples[i][0]);
    }
    if (t_case("ref/decode/f8e4m3_table")) {
        for (int b = 0; b < 256; b++) {
            double want = f64_of_bits(ref_f8e4m3_values[b]), got = t_f8_value((uint8_t)b);
            T_CHECK(isnan(want) ? isnan(got) : got == want, "f8e4m3 pattern 0x%02x: %g, ml_dtypes %g", b, got, want);
        }
    }
    if (t_case("ref/round/float_sources")) {
        for (int64_t i = 0; i < NELEM(ref_round_cases); i++) {
            const ref_round_case *c = &ref_round_cases[i];
            double x = f64_of_bits(c->src);
            uint32_t h = t_round_narrow(WK_F16, x), b = t_round_narrow(WK_BF16, x), e = t_round_narrow(WK_F8E4M3, x);
            uint64_t f = t_encode(WK_F32, x);
            bool nan = isnan(x);
            T_CHECK(nan ? (h & 0x7FFF) > 0x7C00 : h == c->f16, "f16 of %.17g: 0x%04x, expected 0x%04x", x, h, c->f16);
            T_CHECK(nan ? (b & 0x7FFF) > 0x7F80 : b == c->bf16, "bf16 of %.17g: 0x%04x, expected 0x%04x", x, b, c->bf16);
            T_CHECK(e == c->f8, "f8e4m3 of %.17g: 0x%02x, expected 0x%02x", x, e, c->f8);
            T_CHECK(nan ? (f & 0x7FFFFFFF) > 0x7F800000 : f == c->f32, "f32 of %.17g: 0x%08llx, expected 0x%08x", x,
                    (unsigned long long)f, c->f32);
        }
    }
    if (t_case("ref/round/int_sources")) {
        for (int64_t i = 0; i < NELEM(ref_int_cases); i++) {
            const ref_int_case *c = &ref_int_cases[i];
            long double x = (long double)c->src;
            T_CHECK(t_round_narrow(WK_F16, x) == c->f16, "f16 of %lld", (long long)c->src);
            T_CHECK(t_round_narrow(WK_BF16, x) == c->bf16, "bf16 of %lld", (long long)c->src);
            T_CHECK(t_round_narrow(WK_F8E4M3, x) == c->f8, "f8e4m3 of %lld", (long long)c->src);
            T_CHECK(t_encode(WK_F32, x) == c->f32, "f32 of %lld", (long long)c->src);
            T_CHECK(t_encode(WK_F64, x) == c->f64, "f64 of %lld", (long long)c->src);
        }
    }
}

/* ---- the library's decoding of every pattern ---------------------------------- */

static void decode_cases(void)
{
    static const wk_dtype narrow[] = { WK_F16, WK_BF16, WK_F8E4M3 };
    for (int k = 0; k < 3; k++) {
        wk_dtype src = narrow[k];
        int n = src == WK_F8E4M3 ? 256 : 65536;
        for (int to64 = 0; to64 < 2; to64++) {
            wk_dtype dst = to64 ? WK_F64 : WK_F32;
            if (!t_case("to_dtype/decode/%s->%s/all_patterns", t_dt_name(src), t_dt_name(dst))) continue;
            t_cover("copy", src);
            t_arr pats = t_arr_new(src, WK_SHAPE(n));
            for (int p = 0; p < n; p++) t_put_bits(src, pats.p, p, (uint64_t)p);
            wk_tensor *x = T_NEED(wk_from_host(t_dev(), src, pats.shape, pats.p));
            wk_tensor *y = x ? T_NEED(wk_to_dtype(x, dst)) : NULL;
            if (!y) continue;
            bool ok;
            t_arr g = t_read(y, &ok);
            if (!ok) continue;
            uint32_t *words = t_mem((size_t)n * 4);
            int bad = 0;
            for (int p = 0; p < n; p++) {
                double v = t_get(dst, g.p, p), want = t_get(src, pats.p, p);
                if (src == WK_F8E4M3) want = f64_of_bits(ref_f8e4m3_values[p]);
                words[p] = isnan(v) ? 0x7FC00000u : f32_bits_of(v);
                if (!(isnan(want) ? isnan(v) : v == want && signbit(v) == signbit(want)) && bad++ < 3)
                    t_fail("pattern 0x%x decodes to %.9g, expected %.9g", p, v, want);
            }
            if (src == WK_F16) T_CHECK(fnv_words(words, n) == ref_f16_table_fnv, "f16 table checksum differs from numpy's");
            if (src == WK_BF16) T_CHECK(fnv_words(words, n) == ref_bf16_table_fnv, "bf16 table checksum differs from ml_dtypes'");
        }
    }
}

/* ---- the library's rounding on the checked-in cases ---------------------------- */

static void round_cases(void)
{
    static const wk_dtype targets[] = { WK_F16, WK_BF16, WK_F8E4M3, WK_F32 };
    int64_t n = NELEM(ref_round_cases), nf32 = 0;
    t_arr src64 = { 0 }, src32 = { 0 };
    for (int from32 = 0; from32 < 2; from32++) {
        for (int k = 0; k < 4; k++) {
            wk_dtype dst = targets[k], srcdt = from32 ? WK_F32 : WK_F64;
            if (from32 && dst == WK_F32) continue;
            if (!t_case("to_dtype/round/%s->%s/reference_cases", t_dt_name(srcdt), t_dt_name(dst))) continue;
            t_cover("copy", dst);
            /* sources: every case (f64), or the cases exact in f32 */
            src64 = t_arr_new(WK_F64, WK_SHAPE(n));
            src32 = t_arr_new(WK_F32, WK_SHAPE(n));
            t_arr want = t_arr_new(dst, WK_SHAPE(n));
            nf32 = 0;
            for (int64_t i = 0; i < n; i++) {
                const ref_round_case *c = &ref_round_cases[i];
                if (from32 && !c->f32_exact && !isnan(f64_of_bits(c->src))) continue;
                int64_t j = from32 ? nf32++ : i;
                t_put_bits(WK_F64, src64.p, j, c->src);
                t_put(WK_F32, src32.p, j, f64_of_bits(c->src));
                uint64_t w = dst == WK_F16 ? c->f16 : dst == WK_BF16 ? c->bf16 : dst == WK_F8E4M3 ? c->f8 : c->f32;
                t_put_bits(dst, want.p, j, w);
            }
            int64_t m = from32 ? nf32 : n;
            wk_tensor *x = T_NEED(wk_from_host(t_dev(), srcdt, WK_SHAPE(m), from32 ? src32.p : src64.p));
            wk_tensor *y = x ? T_NEED(wk_to_dtype(x, dst)) : NULL;
            if (y) t_check_exact("to_dtype", y, WK_SHAPE(m), dst, want.p);
        }
    }
    for (int k = 0; k < 5; k++) {
        wk_dtype dst = k < 4 ? targets[k] : WK_F64;
        if (!t_case("to_dtype/round/i64->%s/reference_cases", t_dt_name(dst))) continue;
        t_cover("copy", WK_I64);
        int64_t m = NELEM(ref_int_cases);
        t_arr src = t_arr_new(WK_I64, WK_SHAPE(m)), want = t_arr_new(dst, WK_SHAPE(m));
        for (int64_t i = 0; i < m; i++) {
            const ref_int_case *c = &ref_int_cases[i];
            t_puti(WK_I64, src.p, i, c->src);
            uint64_t w = dst == WK_F16 ? c->f16 : dst == WK_BF16 ? c->bf16 : dst == WK_F8E4M3 ? c->f8 : dst == WK_F32 ? c->f32 : c->f64;
            t_put_bits(dst, want.p, i, w);
        }
        wk_tensor *x = T_NEED(wk_from_host(t_dev(), WK_I64, src.shape, src.p));
        wk_tensor *y = x ? T_NEED(wk_to_dtype(x, dst)) : NULL;
        if (y) t_check_exact("to_dtype", y, src.shape, dst, want.p);
    }
}

/* ---- all pairs over the layouts ----------------------------------------------------- */

/* values worth converting: the tricky ones for every target */
static const double specials[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.99, -0.99, 127.5, 128, -129, 255,
    255.9, 256, -1, 300, 448, 449, 464, 500, -500, 1000, 32767, 32768, -32769, 65504, 65519, 65520, 70000,
    2147483647.0, 2147483648.0, -2147483649.0, 4294967295.0, 4294967296.0, 1e10, -1e10, 9.2233720368547758e18,
    -9.3e18, 1e20, -1e20, 3e38, 1e-3, 1e-6, 6e-8, 1e-40, -1e-40,
};

static void pair_case(wk_dtype src, wk_dtype dst, const t_layout *lay)
{
    wk_shape s = lay->shape;
    t_arr vals = t_arr_new(src, s);
    if (t_is_float(src)) {
        t_fill(src, vals.p, vals.n, T_GEN(G_FULL, 0, 0));
        /* sprinkle the specials (converted to the source dtype first) */
        for (int64_t i = 0; i < vals.n; i += 3)
            t_put(src, vals.p, i, specials[t_rng_int(t_r(), 0, NELEM(specials) - 1)]);
    } else {
        t_fill(src, vals.p, vals.n, T_GEN(G_FULL, 0, 0));
    }
    wk_tensor *x = t_make_from(&vals, lay->kind);
    if (!x) return;
    t_cover("copy", src);
    t_cover("copy", dst);
    wk_tensor *y = t_own(wk_to_dtype(x, dst));
    if (!y) { t_fail("to_dtype returned NULL: %s", wk_last_error()); return; }
    t_arr want = t_arr_new(dst, s);
    for (int64_t i = 0; i < vals.n; i++) {
        if (!t_is_float(src) && !t_is_float(dst))
            t_put_bits(dst, want.p, i, (uint64_t)t_geti(src, vals.p, i));     /* wrap */
        else if (!t_is_float(src))
            t_put(dst, want.p, i, (long double)t_geti(src, vals.p, i));       /* one rounding */
        else
            t_put(dst, want.p, i, (long double)t_get(src, vals.p, i));        /* round / truncate+saturate */
    }
    t_check_exact("to_dtype", y, s, dst, want.p);
}

T_SUITE(dtype)
{
    ref_cases();
    decode_cases();
    round_cases();
    static const char *lays[] = { "contiguous", "transposed", "narrowed", "broadcast", "empty", "scalar", "odd1023" };
    for (int a = 0; a < WK_DENSE_DTYPE_COUNT; a++)
        for (int b = 0; b < WK_DENSE_DTYPE_COUNT; b++)
            for (int l = 0; l < t_nlayouts; l++) {
                const t_layout *lay = &t_layouts[l];
                bool use = false;
                for (size_t k = 0; k < sizeof lays / sizeof lays[0]; k++) use |= !strcmp(lays[k], lay->name);
                if (!use) continue;
                if (t_case("to_dtype/%s->%s/%s", t_dt_name((wk_dtype)a), t_dt_name((wk_dtype)b), lay->name))
                    pair_case((wk_dtype)a, (wk_dtype)b, lay);
            }

    if (t_case("dtype/names_sizes")) {
        static const size_t sizes[] = { 1, 4, 2, 4, 8, 2, 2, 4, 8, 1 };
        for (int d = 0; d < WK_DENSE_DTYPE_COUNT; d++) {
            wk_dtype back;
            T_CHECK(!strcmp(wk_dtype_name((wk_dtype)d), t_dt_name((wk_dtype)d)), "wk_dtype_name(%d) = %s", d,
                    wk_dtype_name((wk_dtype)d));
            T_CHECK(wk_dtype_size((wk_dtype)d) == sizes[d], "wk_dtype_size(%s)", t_dt_name((wk_dtype)d));
            T_CHECK(wk_dtype_is_float((wk_dtype)d) == (t_is_float((wk_dtype)d) != 0), "wk_dtype_is_float(%s)",
                    t_dt_name((wk_dtype)d));
            T_CHECK(wk_dtype_from_name(t_dt_name((wk_dtype)d), &back) && back == (wk_dtype)d, "wk_dtype_from_name(%s)",
                    t_dt_name((wk_dtype)d));
        }
        wk_dtype dummy;
        T_CHECK(!wk_dtype_from_name("f17", &dummy), "wk_dtype_from_name accepted f17");
        T_CHECK(!wk_dtype_from_name(NULL, &dummy), "wk_dtype_from_name accepted NULL");
        T_CHECK(!strcmp(wk_dtype_name(WK_DTYPE_COUNT), "?"), "wk_dtype_name(invalid) is not \"?\"");
        T_CHECK(wk_dtype_size(WK_DTYPE_COUNT) == 0, "wk_dtype_size(invalid) is not 0");
    }
    if (t_case("to_dtype/same_dtype_keeps_values")) {
        t_arr v;
        wk_tensor *x = t_make(WK_F32, LK_TRANSPOSED, WK_SHAPE(3, 5), T_GEN(G_UNIFORM, -1, 1), &v);
        wk_tensor *y = x ? T_NEED(wk_to_dtype(x, WK_F32)) : NULL;
        if (y) t_check_exact("to_dtype", y, v.shape, WK_F32, v.p);
    }
}
