/* test_overflow.c — the neighbours of the three size and id checks that
 * test_sizes.c pins (the sum of wk_cat's sizes, wk_to_host's byte count,
 * ids beside an empty result or source): other counts of parts, other
 * dims and dtypes (block-quantized ones too), byte counts on each side of
 * 2^63 and 2^64, every id dtype, ids one past the end or negative, and
 * the empty-source paths of gather and scatter. Every refusal has its
 * legal twin next to it, so that no check passes by refusing everything;
 * refused calls must leave their buffers and destinations untouched.
 *
 * Case names: overflow/<what>.
 */
#include <string.h>
#include "test.h"

/* a broadcast view of dtype dt and shape s of a tensor holding one value (or one row) */
static wk_tensor *bview(wk_dtype dt, wk_shape one, wk_shape s)
{
    wk_tensor *t = NULL;
    if (wk_dtype_is_quantized(dt)) {
        static unsigned char bytes[1024];
        for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + 11);
        t = T_NEED(wk_from_host(t_dev(), dt, one, bytes));
    } else {
        t = T_NEED(wk_full(t_dev(), dt, one, 2.0));
    }
    wk_tensor *v = t ? t_own(wk_broadcast_as(t, s)) : NULL;
    if (t && !v) t_fail("broadcast to %s failed: %s", t_shape_str(s), wk_last_error());
    return v;
}

/* the call returned NULL with status a or b */
static void null_with(const char *what, wk_tensor *r, wk_status a, wk_status b)
{
    wk_status st = wk_last_status();
    if (r) {
        t_own(r);
        t_fail("%s returned a tensor of %s", what, t_shape_str(wk_tensor_shape(r)));
    } else if (st != a && st != b) {
        t_fail("%s: status %s, expected %s or %s (%s)", what, wk_status_name(st), wk_status_name(a), wk_status_name(b),
               wk_last_error());
    } else if (!*wk_last_error()) {
        t_fail("%s: no error message", what);
    }
    wk_clear_error();
}

static void cat_sums(void)
{
    if (t_case("overflow/cat_counts")) {
        const int64_t e62 = (int64_t)1 << 62, e61 = (int64_t)1 << 61;
        wk_tensor *v62 = bview(WK_F32, WK_SHAPE(1), WK_SHAPE(e62));
        wk_tensor *v61 = bview(WK_F32, WK_SHAPE(1), WK_SHAPE(e61));
        wk_tensor *s = bview(WK_F32, WK_SHAPE(1), WK_SHAPE(3));
        if (!v62 || !v61 || !s) return;
        /* three, five and eight parts of 2^62: the sum passes 2^63 (and, unchecked, wraps past 2^64) */
        wk_tensor *p[8] = { v62, v62, v62, v62, v62, v62, v62, v62 };
        null_with("cat of 3 x [2^62]", wk_cat(p, 3, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        null_with("cat of 5 x [2^62]", wk_cat(p, 5, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        null_with("cat of 8 x [2^62]", wk_cat(p, 8, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        /* a small part first, then parts that wrap to exactly that small size plus 2^64 */
        wk_tensor *q[5] = { s, v62, v62, v62, v62 };
        null_with("cat of [3] and 4 x [2^62]", wk_cat(q, 5, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        /* 4 x 2^61 = 2^63: one past INT64_MAX */
        wk_tensor *r[4] = { v61, v61, v61, v61 };
        null_with("cat of 4 x [2^61]", wk_cat(r, 4, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        /* 3 x 2^61 elements fit in int64, their f32 bytes do not */
        null_with("cat of 3 x [2^61] f32", wk_cat(r, 3, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        /* the legal twin: small parts beside each other */
        wk_tensor *l[3] = { s, s, s };
        wk_tensor *ok = T_NEED(wk_cat(l, 3, 0));
        float out[9] = { 0 };
        T_CHECK(ok && wk_tensor_numel(ok) == 9 && wk_to_host(ok, out, sizeof out) == WK_OK && out[0] == 2 && out[8] == 2,
                "cat of three [3] broadcast views: wrong result (%s)", wk_last_error());
    }
    if (t_case("overflow/cat_dim1")) {
        const int64_t e62 = (int64_t)1 << 62;
        wk_tensor *v = bview(WK_I16, WK_SHAPE(1, 1), WK_SHAPE(1, e62));
        wk_tensor *w = bview(WK_I16, WK_SHAPE(1, 1), WK_SHAPE(2, 3));
        if (!v || !w) return;
        wk_tensor *p[4] = { v, v, v, v };
        null_with("cat on dim 1 of 4 x [1, 2^62]", wk_cat(p, 4, 1), WK_ERR_SHAPE, WK_ERR_MEMORY);
        null_with("cat on dim -1 of 2 x [1, 2^62]", wk_cat(p, 2, -1), WK_ERR_SHAPE, WK_ERR_MEMORY);
        wk_tensor *l[2] = { w, w };
        wk_tensor *ok = T_NEED(wk_cat(l, 2, 1));
        T_CHECK(!ok || (wk_tensor_dim(ok, 0) == 2 && wk_tensor_dim(ok, 1) == 6), "cat on dim 1 of two [2, 3]: wrong shape");
    }
    if (t_case("overflow/cat_quant_rows")) {
        /* rows of a block dtype: the row counts add up within int64, the element count does not */
        const int64_t e57 = (int64_t)1 << 57;
        wk_tensor *v = bview(WK_Q8_0, WK_SHAPE(1, 32), WK_SHAPE(e57, 32));      /* 2^62 elements */
        wk_tensor *w = bview(WK_Q8_0, WK_SHAPE(1, 32), WK_SHAPE(2, 32));
        if (!v || !w) return;
        wk_tensor *p[4] = { v, v, v, v };
        null_with("cat of 2 x [2^57, 32] q8_0", wk_cat(p, 2, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        null_with("cat of 4 x [2^57, 32] q8_0", wk_cat(p, 4, 0), WK_ERR_SHAPE, WK_ERR_MEMORY);
        wk_tensor *l[2] = { w, w };
        wk_tensor *ok = T_NEED(wk_cat(l, 2, 0));
        T_CHECK(!ok || wk_tensor_nbytes(ok) == 4 * 34, "cat of two [2, 32] q8_0: %zu bytes, expected 136",
                ok ? wk_tensor_nbytes(ok) : 0);
    }
}

/* wk_to_host of a huge view into a 256-byte buffer: WK_ERR_ARGUMENT, nothing written */
static void to_host_refused(const char *what, const wk_tensor *v)
{
    unsigned char buf[256];
    memset(buf, 0x5A, sizeof buf);
    wk_status st = wk_to_host(v, buf, sizeof buf);
    T_CHECK(st == WK_ERR_ARGUMENT, "to_host of %s into 256 bytes: %s, expected invalid argument (%s)", what,
            wk_status_name(st), wk_last_error());
    bool untouched = true;
    for (size_t i = 0; i < sizeof buf; i++) untouched &= buf[i] == 0x5A;
    T_CHECK(untouched, "to_host of %s wrote into the buffer it refused", what);
    wk_clear_error();
}

static void to_host_bytes(void)
{
    if (!t_case("overflow/to_host_bytes")) return;
    const int64_t e30 = (int64_t)1 << 30, e31 = (int64_t)1 << 31;
    struct { const char *what; wk_dtype dt; int64_t a, b; size_t nbytes; } cs[] = {
        { "u8 [2^31, 2^31] (2^62 bytes)", WK_U8, e31, e31, (size_t)1 << 62 },
        { "f32 [2^31, 2^30] (2^63 bytes)", WK_F32, e31, e30, (size_t)1 << 63 },
        { "i64 [2^30, 2^31] (2^64 bytes)", WK_I64, e30, e31, SIZE_MAX },
        { "f64 [2^31, 2^31] (2^65 bytes)", WK_F64, e31, e31, SIZE_MAX },
        { "bf16 [2^31, 2^31] (2^63 bytes)", WK_BF16, e31, e31, (size_t)1 << 63 },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        wk_tensor *v = bview(cs[i].dt, WK_SHAPE(1, 1), WK_SHAPE(cs[i].a, cs[i].b));
        if (!v) continue;
        to_host_refused(cs[i].what, v);
        /* nbytes: the count below 2^63, SIZE_MAX past 2^64 (either at exactly 2^63) */
        T_CHECK(wk_tensor_nbytes(v) == cs[i].nbytes || (cs[i].nbytes == (size_t)1 << 63 && wk_tensor_nbytes(v) == SIZE_MAX), "wk_tensor_nbytes of %s is %zu, expected %zu", cs[i].what,
                wk_tensor_nbytes(v), cs[i].nbytes);
        /* the legal twin: a 2 x 2 corner of the same view */
        wk_tensor *c = T_NEED(wk_narrow(v, 0, 0, 2));
        wk_tensor *cc = c ? T_NEED(wk_narrow(c, 1, 0, 2)) : NULL;
        unsigned char out[32];
        memset(out, 0, sizeof out);
        size_t n = 4 * wk_dtype_size(cs[i].dt);
        T_CHECK(cc && wk_to_host(cc, out, n) == WK_OK && t_get(cs[i].dt, out, 3) == 2.0,
                "to_host of a 2 x 2 corner of %s failed: %s", cs[i].what, wk_last_error());
    }
    /* a block dtype: 2^57 rows of one q8_0 block take 2^57 x 34 bytes (below 2^63);
     * 31 x 2^53 rows are 31 x 2^58 elements (below 2^63) in 31 x 34 x 2^53 bytes (above) */
    wk_tensor *q = bview(WK_Q8_0, WK_SHAPE(1, 32), WK_SHAPE((int64_t)1 << 57, 32));
    if (q) {
        to_host_refused("q8_0 [2^57, 32]", q);
        T_CHECK(wk_tensor_nbytes(q) == ((size_t)34 << 57), "wk_tensor_nbytes of q8_0 [2^57, 32] is %zu, expected 34 x 2^57",
                wk_tensor_nbytes(q));
        wk_tensor *r = T_NEED(wk_narrow(q, 0, 5, 3));
        unsigned char out[3 * 34];
        T_CHECK(r && wk_tensor_nbytes(r) == sizeof out && wk_to_host(r, out, sizeof out) == WK_OK &&
                    out[0] == 11 && out[34] == 11 && out[33] == (unsigned char)(33 * 37 + 11),
                "to_host of 3 rows of a broadcast q8_0 view failed: %s", wk_last_error());
    }
    wk_tensor *qb = bview(WK_Q8_0, WK_SHAPE(1, 32), WK_SHAPE((int64_t)31 << 53, 32));
    if (qb) {
        to_host_refused("q8_0 [31 x 2^53, 32]", qb);
        T_CHECK(wk_tensor_nbytes(qb) == SIZE_MAX, "wk_tensor_nbytes of q8_0 [31 x 2^53, 32] is %zu, expected SIZE_MAX",
                wk_tensor_nbytes(qb));
    }
    /* 2^56 rows of 2^1 q4_k blocks: 2^56 x 512 elements = 2^65, no view of them can be made */
    wk_tensor *one = T_NEED(wk_from_host(t_dev(), WK_Q4_K, WK_SHAPE(1, 512), (unsigned char[288]){ 0 }));
    wk_tensor *w = one ? t_own(wk_broadcast_as(one, WK_SHAPE((int64_t)1 << 56, 512))) : NULL;
    T_CHECK(!w, "a broadcast view of 2^65 q4_k elements was made");
    wk_clear_error();
}

/* ids of dtype dt holding the n values v */
static wk_tensor *ids_of(wk_dtype dt, int n, const int64_t *v)
{
    t_arr a = t_arr_new(dt, WK_SHAPE(n));
    for (int i = 0; i < n; i++) t_puti(dt, a.p, i, v[i]);
    return T_NEED(wk_from_host(t_dev(), dt, a.shape, a.p));
}

static void index_empty(void)
{
    static const wk_dtype idts[] = { WK_U8, WK_U32, WK_I64 };
    for (int k = 0; k < 3; k++) {
        const wk_dtype it = idts[k];
        const char *in = wk_dtype_name(it);
        if (t_case("overflow/index_select_empty/%s", in)) {
            wk_tensor *e05 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0, 5)));
            wk_tensor *e30 = T_NEED(wk_zeros(t_dev(), WK_F16, WK_SHAPE(3, 0)));
            wk_tensor *past = ids_of(it, 1, (const int64_t[]){ 5 });          /* one past the end */
            wk_tensor *mixed = ids_of(it, 3, (const int64_t[]){ 4, 0, 9 });
            wk_tensor *good = ids_of(it, 3, (const int64_t[]){ 4, 0, 4 });
            wk_tensor *three = ids_of(it, 1, (const int64_t[]){ 3 });
            wk_tensor *two = ids_of(it, 2, (const int64_t[]){ 2, 0 });
            if (!e05 || !e30 || !past || !mixed || !good || !three || !two) return;
            /* the result is empty (dim 0 has size 0): ids are still checked against dim 1 */
            null_with("index_select [0, 5] dim 1, id 5", wk_index_select(e05, past, 1), WK_ERR_INDEX, WK_ERR_INDEX);
            null_with("index_select [0, 5] dim 1, ids 4 0 9", wk_index_select(e05, mixed, -1), WK_ERR_INDEX, WK_ERR_INDEX);
            wk_tensor *r = T_NEED(wk_index_select(e05, good, 1));
            T_CHECK(!r || (wk_tensor_dim(r, 0) == 0 && wk_tensor_dim(r, 1) == 3), "index_select [0, 5] ids 4 0 4: wrong shape");
            /* the result is empty because the other dim is: [3, 0] along dim 0 */
            null_with("index_select [3, 0] dim 0, id 3", wk_index_select(e30, three, 0), WK_ERR_INDEX, WK_ERR_INDEX);
            wk_tensor *r2 = T_NEED(wk_index_select(e30, two, 0));
            T_CHECK(!r2 || (wk_tensor_dim(r2, 0) == 2 && wk_tensor_dim(r2, 1) == 0), "index_select [3, 0] ids 2 0: wrong shape");
            /* the source dim itself is empty: every id is out of range, id 0 included */
            null_with("index_select [0, 5] dim 0, id 0", wk_index_select(e05, ids_of(it, 1, (const int64_t[]){ 0 }), 0),
                      WK_ERR_INDEX, WK_ERR_INDEX);
            if (it == WK_I64)
                null_with("index_select [0, 5] dim 1, id -1",
                          wk_index_select(e05, ids_of(it, 1, (const int64_t[]){ -1 }), 1), WK_ERR_INDEX, WK_ERR_INDEX);
        }
        if (t_case("overflow/index_add_empty/%s", in)) {
            wk_tensor *d30 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3, 0)));
            wk_tensor *s10 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 0)));
            wk_tensor *s20 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 0)));
            wk_tensor *d04 = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(0, 4)));
            wk_tensor *s14 = T_NEED(wk_ones(t_dev(), WK_I32, WK_SHAPE(1, 4)));
            if (!d30 || !s10 || !s20 || !d04 || !s14) return;
            wk_status st = wk_index_add(d30, ids_of(it, 1, (const int64_t[]){ 3 }), s10, 0);
            T_CHECK(st == WK_ERR_INDEX, "index_add into [3, 0] with id 3: %s", wk_status_name(st));
            st = wk_index_add(d30, ids_of(it, 2, (const int64_t[]){ 0, 200 }), s20, 0);
            T_CHECK(st == WK_ERR_INDEX, "index_add into [3, 0] with ids 0 200: %s", wk_status_name(st));
            if (it == WK_I64) {
                st = wk_index_add(d30, ids_of(it, 1, (const int64_t[]){ -1 }), s10, 0);
                T_CHECK(st == WK_ERR_INDEX, "index_add into [3, 0] with id -1: %s", wk_status_name(st));
            }
            /* the destination dim is empty, the source is not */
            st = wk_index_add(d04, ids_of(it, 1, (const int64_t[]){ 0 }), s14, 0);
            T_CHECK(st == WK_ERR_INDEX, "index_add into [0, 4] with id 0: %s", wk_status_name(st));
            wk_clear_error();
            st = wk_index_add(d30, ids_of(it, 2, (const int64_t[]){ 2, 0 }), s20, 0);
            T_CHECK(st == WK_OK, "index_add into [3, 0] with ids 2 0 failed: %s", wk_last_error());
            /* the legal twin with data: ids at the last row */
            wk_tensor *d34 = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(3, 4)));
            if (d34) {
                T_OK(wk_index_add(d34, ids_of(it, 1, (const int64_t[]){ 2 }), s14, 0));
                int32_t want[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 };
                t_check_exact("index_add at row 2", d34, WK_SHAPE(3, 4), WK_I32, want);
                wk_status bad = wk_index_add(d34, ids_of(it, 1, (const int64_t[]){ 3 }), s14, 0);
                T_CHECK(bad == WK_ERR_INDEX, "index_add into [3, 4] with id 3: %s", wk_status_name(bad));
                t_check_exact("a refused index_add left dst alone", d34, WK_SHAPE(3, 4), WK_I32, want);
            }
        }
    }
    if (t_case("overflow/gather_scatter_empty_source")) {
        /* the source (or destination) is empty along dim, the ids are not: every id is out of range */
        wk_tensor *t20 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 0)));
        wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(2, 1)));
        wk_tensor *src = T_NEED(wk_ones(t_dev(), WK_F32, WK_SHAPE(2, 1)));
        if (!t20 || !ids || !src) return;
        null_with("gather of [2, 0] with ids [2, 1] on dim 1", wk_gather(t20, ids, 1), WK_ERR_INDEX, WK_ERR_INDEX);
        wk_status st = wk_scatter_add(t20, ids, src, 1);
        T_CHECK(st == WK_ERR_INDEX, "scatter_add into [2, 0] with ids [2, 1]: %s", wk_status_name(st));
        st = wk_scatter_set(t20, ids, src, 1);
        T_CHECK(st == WK_ERR_INDEX, "scatter_set into [2, 0] with ids [2, 1]: %s", wk_status_name(st));
        wk_clear_error();
        /* the legal twins: no ids at all, and ids into a non-empty dim */
        wk_tensor *ids0 = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(2, 0)));
        wk_tensor *g = ids0 ? T_NEED(wk_gather(t20, ids0, 1)) : NULL;
        T_CHECK(!g || (wk_tensor_dim(g, 0) == 2 && wk_tensor_dim(g, 1) == 0), "gather of [2, 0] with ids [2, 0]: wrong shape");
        wk_tensor *t21 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 1)));
        if (t21) {
            T_OK(wk_scatter_add(t21, ids, src, 1));
            float want[2] = { 1, 1 };
            t_check_exact("scatter_add into [2, 1]", t21, WK_SHAPE(2, 1), WK_F32, want);
        }
    }
}

T_SUITE(overflow)
{
    cat_sums();
    to_host_bytes();
    index_empty();
}
