/* test_sizes.c — element and byte counts that would overflow, and ids
 * that must be checked even when an index op moves no data: the three
 * failures an independent check of wick found (a crash in wk_cat on
 * broadcast views whose summed size wraps, wk_to_host writing nothing and
 * answering WK_OK for a view of 2^64 bytes, out-of-range ids accepted
 * beside an empty result or source), each with the legal call next to it
 * so that the check cannot pass by refusing everything.
 *
 * Case names: sizes/<what>.
 */
#include "test.h"

/* a broadcast view f32 [n] of a one-element tensor */
static wk_tensor *big_view(int64_t n)
{
    wk_tensor *one = T_NEED(wk_full(t_dev(), WK_F32, WK_SHAPE(1), 3.0));
    return one ? t_own(wk_broadcast_as(one, WK_SHAPE(n))) : NULL;
}

T_SUITE(sizes)
{
    if (t_case("sizes/cat_sum_wraps")) {
        wk_tensor *v = big_view((int64_t)1 << 62);
        if (v) {
            wk_tensor *four[4] = { v, v, v, v }, *two[2] = { v, v };
            wk_tensor *r4 = t_own(wk_cat(four, 4, 0));
            T_CHECK(!r4 && (wk_last_status() == WK_ERR_SHAPE || wk_last_status() == WK_ERR_MEMORY),
                    "cat of four [2^62] views: %s (%s)", r4 ? "returned a tensor" : "wrong status", wk_last_error());
            wk_tensor *r2 = t_own(wk_cat(two, 2, 0));
            T_CHECK(!r2 && (wk_last_status() == WK_ERR_SHAPE || wk_last_status() == WK_ERR_MEMORY),
                    "cat of two [2^62] views: %s (%s)", r2 ? "returned a tensor" : "wrong status", wk_last_error());
        }
        /* the legal version: small broadcast views concatenate */
        wk_tensor *s = big_view(5);
        wk_tensor *pair[2] = { s, s };
        wk_tensor *r = s ? t_own(wk_cat(pair, 2, 0)) : NULL;
        T_CHECK(r && wk_tensor_numel(r) == 10, "cat of two [5] broadcast views failed: %s", wk_last_error());
        float out[10] = { 0 };
        T_CHECK(r && wk_to_host(r, out, sizeof out) == WK_OK && out[0] == 3.0f && out[9] == 3.0f,
                "cat of broadcast views: wrong values");
    }
    if (t_case("sizes/to_host_2e64_bytes")) {
        wk_tensor *one = T_NEED(wk_full(t_dev(), WK_F32, WK_SHAPE(1, 1), 1.0));
        wk_tensor *v = one ? t_own(wk_broadcast_as(one, WK_SHAPE((int64_t)1 << 31, (int64_t)1 << 31))) : NULL;
        T_CHECK(v != NULL, "broadcast to [2^31, 2^31] failed: %s", wk_last_error());
        unsigned char buf[256];
        memset(buf, 0x5A, sizeof buf);
        wk_status st = v ? wk_to_host(v, buf, sizeof buf) : WK_OK;
        T_CHECK(!v || st == WK_ERR_ARGUMENT, "to_host of 2^62 f32 into 256 bytes: %s, expected argument error (%s)",
                wk_status_name(st), wk_last_error());
        T_CHECK(buf[0] == 0x5A && buf[255] == 0x5A, "to_host wrote into the buffer it refused");
        T_CHECK(v && wk_tensor_nbytes(v) == SIZE_MAX, "wk_tensor_nbytes of 2^64 bytes is not SIZE_MAX");
        /* a view past 2^63 elements cannot be made at all */
        wk_tensor *w = one ? t_own(wk_broadcast_as(one, WK_SHAPE((int64_t)1 << 32, (int64_t)1 << 32))) : NULL;
        T_CHECK(!w, "a broadcast view of 2^64 elements was made");
    }
    if (t_case("sizes/index_select_empty_result")) {
        wk_tensor *src = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0, 5)));
        uint32_t bad = 7, good = 4;
        wk_tensor *ib = T_NEED(wk_from_host(t_dev(), WK_U32, WK_SHAPE(1), &bad));
        wk_tensor *ig = T_NEED(wk_from_host(t_dev(), WK_U32, WK_SHAPE(1), &good));
        if (src && ib && ig) {
            wk_tensor *r = t_own(wk_index_select(src, ib, 1));
            T_CHECK(!r && wk_last_status() == WK_ERR_INDEX, "index_select of [0, 5] with id 7 on dim 1: %s (%s)",
                    r ? "returned a tensor" : wk_status_name(wk_last_status()), wk_last_error());
            wk_tensor *ok = t_own(wk_index_select(src, ig, 1));
            T_CHECK(ok && wk_tensor_dim(ok, 0) == 0 && wk_tensor_dim(ok, 1) == 1,
                    "index_select of [0, 5] with id 4 on dim 1 failed: %s", wk_last_error());
        }
    }
    if (t_case("sizes/index_add_empty_dst")) {
        wk_tensor *dst = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3, 0)));
        wk_tensor *src = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 0)));
        int64_t bad = 7, good = 2;
        wk_tensor *ib = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(1), &bad));
        wk_tensor *ig = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(1), &good));
        if (dst && src && ib && ig) {
            wk_status st = wk_index_add(dst, ib, src, 0);
            T_CHECK(st == WK_ERR_INDEX, "index_add into [3, 0] with id 7: %s, expected an index error",
                    wk_status_name(st));
            st = wk_index_add(dst, ig, src, 0);
            T_CHECK(st == WK_OK, "index_add into [3, 0] with id 2 failed: %s", wk_last_error());
        }
    }
}
