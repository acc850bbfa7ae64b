/* test_scopes.c — wk_scope_begin / wk_scope_end / wk_keep: tensors made in
 * a scope are released at its end unless kept; wk_keep moves a tensor to
 * the enclosing scope (or to the caller); nesting; wk_release and
 * wk_retain on scope-owned tensors; keep outside a scope; an unmatched
 * end; many temporaries; views of outer tensors. Lifetimes are checked by
 * reading the survivors; double frees and leaks show under `make asan`.
 * scopes/live_counts: wk_live_stats_get counts handles, storages and bytes
 * as they come and go (what a server's /metrics shows for leaks).
 *
 * Case names: scopes/<what>.
 */
#include <stdlib.h>
#include "test.h"

static bool has_value(const wk_tensor *t, double want)
{
    double v = -1;
    int64_t idx[WK_MAX_RANK] = { 0 };
    return t && wk_item(t, idx, &v) == WK_OK && v == want;
}

T_SUITE(scopes)
{
    if (t_case("scopes/keep_survives")) {
        wk_scope_begin();
        wk_tensor *a = wk_full(t_dev(), WK_F32, WK_SHAPE(4), 3);
        wk_tensor *b = a ? wk_mul(a, a) : NULL;           /* temporary */
        wk_tensor *c = b ? wk_add(b, a) : NULL;           /* kept      */
        wk_keep(c);
        wk_scope_end();
        T_CHECK(has_value(c, 12), "a kept tensor lost its value");
        wk_release(c);                                    /* the caller owns it now */
    }
    if (t_case("scopes/nested_keep_moves_out_one_level")) {
        wk_tensor *outer_kept = NULL, *inner_kept = NULL;
        wk_scope_begin();
        {
            wk_scope_begin();
            inner_kept = wk_keep(wk_full(t_dev(), WK_I32, WK_SHAPE(2), 7));
            wk_tensor *tmp = wk_full(t_dev(), WK_I32, WK_SHAPE(2), 8);
            (void)tmp;
            wk_scope_end();
            T_CHECK(has_value(inner_kept, 7), "inner keep did not survive the inner scope");
            outer_kept = wk_keep(inner_kept ? wk_neg(inner_kept) : NULL);
        }
        wk_scope_end();                                   /* releases inner_kept */
        T_CHECK(has_value(outer_kept, -7), "outer keep lost its value");
        wk_release(outer_kept);
    }
    if (t_case("scopes/keep_twice_through_levels")) {
        wk_tensor *t = NULL;
        wk_scope_begin();
        wk_scope_begin();
        wk_scope_begin();
        t = wk_keep(wk_ones(t_dev(), WK_F64, WK_SHAPE(3)));
        wk_scope_end();
        wk_keep(t);
        wk_scope_end();
        wk_keep(t);
        wk_scope_end();
        T_CHECK(has_value(t, 1), "a tensor kept out of three scopes");
        wk_release(t);
    }
    if (t_case("scopes/release_inside_scope")) {
        wk_scope_begin();
        wk_tensor *a = wk_zeros(t_dev(), WK_U8, WK_SHAPE(16));
        wk_release(a);                                    /* the scope forgets it */
        wk_tensor *b = wk_ones(t_dev(), WK_U8, WK_SHAPE(16));
        wk_scope_end();                                   /* releases b only */
        (void)b;
        wk_tensor *c = T_NEED(wk_ones(t_dev(), WK_U8, WK_SHAPE(2)));
        T_CHECK(has_value(c, 1), "library broken after release in a scope");
    }
    if (t_case("scopes/retain_outlives_scope")) {
        wk_tensor *r;
        wk_scope_begin();
        wk_tensor *a = wk_full(t_dev(), WK_F16, WK_SHAPE(5), 2.5);
        r = wk_retain(a);                                 /* our own reference */
        wk_scope_end();
        T_CHECK(has_value(r, 2.5), "a retained scoped tensor did not survive");
        wk_release(r);
    }
    if (t_case("scopes/keep_without_scope_and_unmatched_end")) {
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2)));
        T_CHECK(wk_keep(a) == a, "keep outside a scope changed the handle");
        T_CHECK(wk_keep(NULL) == NULL, "keep(NULL)");
        wk_scope_end();                                   /* no scope: nothing happens */
        T_CHECK(has_value(a, 0), "an unmatched scope_end released a tensor");
    }
    if (t_case("scopes/views_of_outer_tensor")) {
        wk_tensor *base = T_NEED(wk_arange(t_dev(), WK_F32, 0, 12, 1));
        wk_scope_begin();
        wk_tensor *v = base ? wk_reshape(base, WK_SHAPE(3, 4)) : NULL;
        wk_tensor *tv = v ? wk_transpose(v, 0, 1) : NULL;
        T_CHECK(tv && wk_tensor_same_storage(tv, base), "views in a scope");
        wk_scope_end();
        double got = -1;
        T_CHECK(base && wk_item(base, (const int64_t[]){ 11 }, &got) == WK_OK && got == 11, "outer tensor after its views' scope ended");
    }
    if (t_case("scopes/many_temporaries_and_errors")) {
        wk_scope_begin();
        wk_tensor *x = wk_ones(t_dev(), WK_F32, WK_SHAPE(8));
        for (int i = 0; i < 5000 && x; i++) x = wk_affine(x, 1.0, 1.0);
        T_CHECK(has_value(x, 5001), "chain of 5000 temporaries gave %s", x ? "a wrong value" : wk_last_error());
        T_CHECK(!wk_add(x, NULL), "add(x, NULL) in a scope");
        wk_clear_error();
        wk_keep(x);
        wk_scope_end();
        T_CHECK(has_value(x, 5001), "kept result of the chain");
        wk_release(x);
    }
    if (t_case("scopes/deep_nesting")) {
        wk_tensor *t = NULL;
        for (int i = 0; i < 40; i++) wk_scope_begin();
        t = wk_full(t_dev(), WK_I64, WK_SCALAR, 40);
        for (int i = 0; i < 40; i++) {
            wk_keep(t);
            wk_scope_end();
        }
        T_CHECK(has_value(t, 40), "a tensor kept out of 40 scopes");
        wk_release(t);
    }
    if (t_case("scopes/chunk_outputs_are_scoped")) {
        wk_scope_begin();
        wk_tensor *a = wk_zeros(t_dev(), WK_F32, WK_SHAPE(6));
        wk_tensor *parts[3] = { 0 };
        int n = a ? wk_chunk(a, 3, 0, parts) : -1;
        T_CHECK(n == 3, "chunk in a scope gave %d", n);
        wk_keep(parts[1]);
        wk_scope_end();                                   /* releases a, parts[0], parts[2] */
        T_CHECK(n != 3 || has_value(parts[1], 0), "kept chunk");
        if (n == 3) wk_release(parts[1]);
    }
    if (t_case("scopes/live_counts")) {
        const wk_live_stats s0 = wk_live_stats_get();
        wk_tensor *a = wk_zeros(t_dev(), WK_F32, WK_SHAPE(64));           /* 256 bytes */
        wk_tensor *v = a ? wk_narrow(a, 0, 8, 16) : NULL;                 /* a view: no storage */
        T_CHECK(a && v, "zeros, narrow: %s", wk_last_error());
        const wk_live_stats s1 = wk_live_stats_get();
        T_CHECK(s1.tensors == s0.tensors + 2 && s1.storages == s0.storages + 1 &&
                    s1.storage_bytes == s0.storage_bytes + 256,
                "live after a tensor and a view: %lld %lld %lld from %lld %lld %lld", (long long)s1.tensors,
                (long long)s1.storages, (long long)s1.storage_bytes, (long long)s0.tensors, (long long)s0.storages,
                (long long)s0.storage_bytes);
        wk_release(a);                                    /* the view keeps the storage */
        const wk_live_stats s2 = wk_live_stats_get();
        T_CHECK(s2.tensors == s0.tensors + 1 && s2.storages == s0.storages + 1, "after releasing the base");
        wk_scope_begin();
        for (int i = 0; i < 100; i++) (void)wk_add(v, v);
        wk_scope_end();
        wk_release(v);
        const wk_live_stats s3 = wk_live_stats_get();
        T_CHECK(s3.tensors == s0.tensors && s3.storages == s0.storages && s3.storage_bytes == s0.storage_bytes,
                "back to the start: %lld %lld %lld, not %lld %lld %lld", (long long)s3.tensors,
                (long long)s3.storages, (long long)s3.storage_bytes, (long long)s0.tensors, (long long)s0.storages,
                (long long)s0.storage_bytes);
    }
}
