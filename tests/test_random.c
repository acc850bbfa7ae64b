/* test_random.c — wk_rand_uniform / wk_rand_normal on the cpu device:
 *   random/golden/<name>   against tests/data/random_golden.h (computed by
 *                          an independent Python Philox): uniform bit for
 *                          bit, normal within the golden's tolerance. The
 *                          generator's offset is reached by drawing first,
 *                          so goldens with offsets beyond 2^20 blocks are
 *                          left to the backend's own tests.
 *   random/offset/...      consecutive calls continue the stream (a call
 *                          of n elements uses ceil(n/4) blocks, ceil(n/2)
 *                          for f64); empty calls use none
 *   random/seed/...        set_seed resets the offset; seeds differ
 *   random/stats/...       mean, variance, range and the one-sigma mass on
 *                          large draws of every float dtype
 * Case names include rand_uniform or rand_normal and the dtype.
 */
#include <stdlib.h>
#include "test.h"
#include "data/random_golden.h"

#define MAX_DRAW_BLOCKS ((uint64_t)1 << 20)

/* Move the cpu generator to (seed, offset) by drawing offset blocks. */
static bool goto_offset(uint64_t seed, uint64_t offset)
{
    if (wk_device_set_seed(t_dev(), seed) != WK_OK) { t_fail("set_seed: %s", wk_last_error()); return false; }
    if (offset == 0) return true;
    wk_tensor *skip = wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE((int64_t)(offset * 4)), 0, 1);
    if (!skip) { t_fail("skip draw: %s", wk_last_error()); return false; }
    wk_release(skip);
    return true;
}

static wk_tensor *draw(bool normal, wk_dtype dt, wk_shape s, double p0, double p1)
{
    wk_tensor *t = normal ? wk_rand_normal(t_dev(), dt, s, p0, p1) : wk_rand_uniform(t_dev(), dt, s, p0, p1);
    if (!t) t_fail("%s returned NULL: %s", normal ? "rand_normal" : "rand_uniform", wk_last_error());
    return t_own(t);
}

static void golden_case(const wk_rand_golden *g)
{
    if (!goto_offset(g->seed, g->offset)) return;
    t_cover(g->normal ? "rand_normal" : "rand_uniform", g->dtype);
    wk_tensor *t = draw(g->normal, g->dtype, WK_SHAPE(g->n), g->p0, g->p1);
    if (!t) return;
    bool ok;
    t_arr a = t_read(t, &ok);
    if (!ok) return;
    int bad = 0;
    for (int64_t i = 0; i < g->n; i++) {
        if (!g->normal) {
            uint64_t got = t_bits(g->dtype, a.p, i);
            if (got != g->bits[i] && bad++ < 3)
                t_fail("element %lld: bits 0x%llx (%.9g), golden 0x%llx (%.9g)", (long long)i, (unsigned long long)got,
                       t_get(g->dtype, a.p, i), (unsigned long long)g->bits[i], t_get(g->dtype, &g->bits[i], 0));
        } else {
            double got = t_get(g->dtype, a.p, i), want = g->values[i];
            if (!(fabs(got - want) <= g->atol + g->rtol * fabs(want)) && bad++ < 3)
                t_fail("element %lld: %.17g, golden %.17g (rtol %g, atol %g)", (long long)i, got, want, g->rtol, g->atol);
        }
    }
    /* the call advanced the offset by `blocks`: a follow-up equals a fresh
     * draw at offset + blocks */
    wk_tensor *next = draw(false, WK_F32, WK_SHAPE(5), 0, 1);
    if (!next || g->offset + g->blocks > MAX_DRAW_BLOCKS) return;
    if (!goto_offset(g->seed, g->offset + g->blocks)) return;
    wk_tensor *fresh = draw(false, WK_F32, WK_SHAPE(5), 0, 1);
    bool ok2;
    t_arr b = t_read(next, &ok), c = fresh ? t_read(fresh, &ok2) : b;
    if (ok && fresh && memcmp(b.p, c.p, 20) != 0) t_fail("%s advanced the offset by other than %llu blocks", g->name,
                                                          (unsigned long long)g->blocks);
}

/* draw A then B; B must equal the tail of one longer draw */
static void offset_case(bool normal, wk_dtype dt, int64_t na)
{
    uint64_t seed = t_seed();
    uint64_t blocks = dt == WK_F64 ? (uint64_t)(na + 1) / 2 : (uint64_t)(na + 3) / 4;
    int per = dt == WK_F64 ? 2 : 4;
    if (!goto_offset(seed, 0)) return;
    t_cover(normal ? "rand_normal" : "rand_uniform", dt);
    wk_tensor *a = draw(normal, dt, WK_SHAPE(na), 0, 1);
    wk_tensor *e = draw(normal, dt, WK_SHAPE(0, 3), 0, 1);         /* empty: uses no blocks */
    wk_tensor *b = draw(normal, dt, WK_SHAPE(3, 5), 0, 1);
    if (!a || !e || !b) return;
    if (!goto_offset(seed, 0)) return;
    int64_t skip = (int64_t)blocks * per;
    wk_tensor *all = draw(normal, dt, WK_SHAPE(skip + 15), 0, 1);
    if (!all) return;
    bool ok;
    t_arr ta = t_read(a, &ok), tb = t_read(b, &ok), tall = t_read(all, &ok);
    if (!ok) return;
    size_t sz = t_size(dt);
    T_CHECK(memcmp(ta.p, tall.p, (size_t)na * sz) == 0, "the first call's values are not the head of the stream");
    T_CHECK(memcmp(tb.p, tall.p + (size_t)skip * sz, 15 * sz) == 0,
            "after %lld elements the next call does not start at block %llu", (long long)na, (unsigned long long)blocks);
}

static void stats_case(bool normal, wk_dtype dt)
{
    int64_t n = 1 << 20;
    double p0 = normal ? 1.0 : -2.0, p1 = normal ? 2.0 : 3.0;
    if (wk_device_set_seed(t_dev(), t_seed()) != WK_OK) return;
    t_cover(normal ? "rand_normal" : "rand_uniform", dt);
    wk_tensor *t = draw(normal, dt, WK_SHAPE(1024, 1024), p0, p1);
    if (!t) return;
    bool ok;
    t_arr a = t_read(t, &ok);
    if (!ok) return;
    double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
    int64_t within = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = t_get(dt, a.p, i);
        if (!isfinite(v)) { t_fail("element %lld is %g", (long long)i, v); return; }
        s += v;
        s2 += v * v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        within += fabs(v - p0) <= p1;
    }
    double mean = s / (double)n, var = s2 / (double)n - mean * mean;
    /* quantisation of narrow dtypes shifts the moments a little */
    double q = dt == WK_F8E4M3 ? 0.06 : dt == WK_BF16 ? 0.01 : dt == WK_F16 ? 0.002 : 0;
    if (normal) {
        T_CHECK(fabs(mean - p0) < 0.01 + q, "normal mean %g, expected %g", mean, p0);
        T_CHECK(fabs(var - p1 * p1) < 0.04 + 8 * q, "normal variance %g, expected %g", var, p1 * p1);
        double frac = (double)within / (double)n;
        T_CHECK(fabs(frac - 0.682689) < 0.004 + 2 * q, "fraction within one sigma %g, expected 0.6827", frac);
        T_CHECK(lo < p0 - 4 * p1 && hi > p0 + 4 * p1, "normal range [%g, %g] lacks 4-sigma tails", lo, hi);
    } else {
        T_CHECK(fabs(mean - 0.5) < 0.008 + q, "uniform mean %g, expected 0.5", mean);
        T_CHECK(fabs(var - 25.0 / 12) < 0.01 + 8 * q, "uniform variance %g, expected %g", var, 25.0 / 12);
        bool narrow = t_is_narrow(dt);
        T_CHECK(lo >= p0 && (narrow ? hi <= p1 : hi < p1), "uniform range [%g, %g] leaves [%g, %g)", lo, hi, p0, p1);
        T_CHECK(lo < p0 + 0.01 + q && hi > p1 - 0.01 - q, "uniform range [%g, %g] does not fill [%g, %g)", lo, hi, p0, p1);
    }
}

T_SUITE(random)
{
    for (int i = 0; i < WK_RAND_GOLDEN_COUNT; i++) {
        const wk_rand_golden *g = &wk_rand_goldens[i];
        if (g->offset > MAX_DRAW_BLOCKS) continue;
        if (t_case("random/golden/%s/%s/%s", g->normal ? "rand_normal" : "rand_uniform", t_dt_name(g->dtype), g->name))
            golden_case(g);
    }
    static const wk_dtype fl[] = { WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3 };
    static const int64_t sizes[] = { 1, 2, 3, 7, 33 };
    for (int nrm = 0; nrm < 2; nrm++)
        for (int d = 0; d < 5; d++) {
            const char *op = nrm ? "rand_normal" : "rand_uniform";
            for (int k = 0; k < 5; k++)
                if (t_case("random/offset/%s/%s/n%lld", op, t_dt_name(fl[d]), (long long)sizes[k])) offset_case(nrm, fl[d], sizes[k]);
            if (t_case("random/stats/%s/%s", op, t_dt_name(fl[d]))) stats_case(nrm, fl[d]);
        }
    if (t_case("random/seed/reset_and_differ")) {
        wk_tensor *x[3];
        uint64_t seeds[3] = { 5, 5, 6 };
        for (int i = 0; i < 3; i++) {
            T_OK(wk_device_set_seed(t_dev(), seeds[i]));
            wk_release(wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE(3), 0, 1));   /* move the offset */
            T_OK(wk_device_set_seed(t_dev(), seeds[i]));
            x[i] = draw(true, WK_F64, WK_SHAPE(64), 0, 1);
            if (!x[i]) return;
        }
        bool ok;
        t_arr a = t_read(x[0], &ok), b = t_read(x[1], &ok), c = t_read(x[2], &ok);
        if (!ok) return;
        T_CHECK(memcmp(a.p, b.p, 64 * 8) == 0, "set_seed(5) twice gave different values");
        T_CHECK(memcmp(a.p, c.p, 64 * 8) != 0, "seeds 5 and 6 gave the same values");
    }
    if (t_case("random/shapes_and_bounds")) {
        T_OK(wk_device_set_seed(t_dev(), 77));
        wk_tensor *s = draw(false, WK_F32, WK_SCALAR, 1, 2);
        double v = 0;
        if (s) { T_OK(wk_item(s, NULL, &v)); T_CHECK(v >= 1 && v < 2, "rank-0 uniform %g", v); }
        wk_tensor *c = draw(false, WK_F64, WK_SHAPE(9), 4, 4);           /* lo == hi */
        if (c) {
            double want[9] = { 4, 4, 4, 4, 4, 4, 4, 4, 4 };
            t_check_close("uniform lo == hi", c, WK_SHAPE(9), WK_F64, want, 0);
        }
        wk_tensor *z = draw(true, WK_F32, WK_SHAPE(7), 3, 0);            /* std 0 */
        if (z) {
            double want[7] = { 3, 3, 3, 3, 3, 3, 3 };
            t_check_close("normal std 0", z, WK_SHAPE(7), WK_F32, want, 0);
        }
        T_CHECK(!t_own(wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE(2), 1, 0)), "uniform with hi < lo succeeded");
        T_CHECK(!t_own(wk_rand_normal(t_dev(), WK_F32, WK_SHAPE(2), 0, -1)), "normal with std < 0 succeeded");
        T_CHECK(!t_own(wk_rand_normal(t_dev(), WK_F32, WK_SHAPE(2), NAN, 1)), "normal with a NaN mean succeeded");
        wk_clear_error();
    }
}
