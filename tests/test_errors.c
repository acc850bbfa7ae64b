/* test_errors.c — bad input never aborts: NULL handles, dtype and shape
 * mismatches, ranks outside 0..8, bad dims, out-of-range ids and indices,
 * impossible allocations (2^62 elements, byte counts that overflow),
 * unknown devices and unsupported dtypes. Each returns NULL or a status,
 * and wk_last_error() names the op and the offending values. After every
 * error the library keeps working (a later op succeeds), the error state
 * behaves (clear, status names, kept across successful calls), and
 * nothing leaks (the suite runs under LeakSanitizer in `make asan`).
 *
 * Case names: errors/<what>.
 */
#include <stdlib.h>
#include "test.h"

/* a wildcard for t_check_error: any failing status */
#define ANY WK_STATUS_COUNT

static void check_st_(const char *expr, wk_status got, wk_status want, const char *w1, const char *w2, const char *w3)
{
    if (want == ANY) want = got == WK_OK ? WK_ERR_ARGUMENT : got;
    t_check_error(expr, want, got, w1, w2, w3, (const char *)NULL);
}
/* the expression must fail with `want`, its message naming up to three words */
#define NUL(expr, want, w1, w2, w3) t_check_null(#expr, (expr), (want), (w1), (w2), (w3))
#define BAD(expr, want, ...) check_st_(#expr, (expr), (want), __VA_ARGS__)

/* the library still works: a small op gives the right answer */
static void still_works(void)
{
    wk_tensor *a = t_own(wk_full(t_dev(), WK_F32, WK_SHAPE(3), 2));
    wk_tensor *b = a ? t_own(wk_mul(a, a)) : NULL;
    double v = 0;
    if (!b || wk_item(b, (const int64_t[]){ 1 }, &v) != WK_OK || v != 4)
        t_fail("the library does not work after an error: %s", wk_last_error());
}

static void null_handles(void)
{
    if (!t_case("errors/null_tensors")) return;
    wk_tensor *x = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 3)));
    wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_U32, WK_SHAPE(2, 3)));
    if (!x || !ids) return;
    NUL(wk_exp(NULL), WK_ERR_ARGUMENT, "exp", NULL, NULL);
    NUL(wk_unary(WK_RELU, NULL), WK_ERR_ARGUMENT, "relu", NULL, NULL);
    NUL(wk_affine(NULL, 1, 0), WK_ERR_ARGUMENT, "affine", NULL, NULL);
    NUL(wk_powf(NULL, 2), WK_ERR_ARGUMENT, "powf", NULL, NULL);
    NUL(wk_elu(NULL, 1), WK_ERR_ARGUMENT, "elu", NULL, NULL);
    NUL(wk_add(NULL, x), WK_ERR_ARGUMENT, "add", NULL, NULL);
    NUL(wk_div(x, NULL), WK_ERR_ARGUMENT, "div", NULL, NULL);
    NUL(wk_cmp(WK_GE, x, NULL), WK_ERR_ARGUMENT, "ge", NULL, NULL);
    NUL(wk_where(NULL, x, x), WK_ERR_ARGUMENT, "where", NULL, NULL);
    NUL(wk_sum(NULL, NULL, 0, false), WK_ERR_ARGUMENT, "sum", NULL, NULL);
    NUL(wk_mean(NULL, NULL, 0, false), WK_ERR_ARGUMENT, "mean", NULL, NULL);
    NUL(wk_argmax(NULL, 0, false), WK_ERR_ARGUMENT, "argmax", NULL, NULL);
    NUL(wk_matmul(x, NULL), WK_ERR_ARGUMENT, "matmul", NULL, NULL);
    NUL(wk_index_select(x, NULL, 0), WK_ERR_ARGUMENT, "index_select", NULL, NULL);
    NUL(wk_gather(NULL, ids, 0), WK_ERR_ARGUMENT, "gather", NULL, NULL);
    BAD(wk_scatter_set(NULL, ids, x, 0), WK_ERR_ARGUMENT, "scatter_set", NULL, NULL);
    BAD(wk_scatter_add(x, NULL, x, 0), WK_ERR_ARGUMENT, "scatter_add", NULL, NULL);
    BAD(wk_index_add(x, ids, NULL, 0), WK_ERR_ARGUMENT, "index_add", NULL, NULL);
    BAD(wk_const_set(NULL, 1), WK_ERR_ARGUMENT, "const_set", NULL, NULL);
    BAD(wk_copy_into(x, NULL), WK_ERR_ARGUMENT, "copy_into", NULL, NULL);
    BAD(wk_copy2d(NULL, x, 1, 1, 1, 1, 0, 0), WK_ERR_ARGUMENT, "copy2d", NULL, NULL);
    NUL(wk_reshape(NULL, WK_SHAPE(6)), WK_ERR_ARGUMENT, "reshape", NULL, NULL);
    NUL(wk_narrow(NULL, 0, 0, 1), WK_ERR_ARGUMENT, "narrow", NULL, NULL);
    NUL(wk_transpose(NULL, 0, 1), WK_ERR_ARGUMENT, "transpose", NULL, NULL);
    NUL(wk_permute(x, NULL), WK_ERR_ARGUMENT, "permute", NULL, NULL);
    NUL(wk_broadcast_as(NULL, WK_SHAPE(2, 3)), WK_ERR_ARGUMENT, "broadcast_as", NULL, NULL);
    NUL(wk_squeeze(NULL, 0), WK_ERR_ARGUMENT, "squeeze", NULL, NULL);
    NUL(wk_unsqueeze(NULL, 0), WK_ERR_ARGUMENT, "unsqueeze", NULL, NULL);
    NUL(wk_flatten(NULL, 0, 1), WK_ERR_ARGUMENT, "flatten", NULL, NULL);
    NUL(wk_contiguous(NULL), WK_ERR_ARGUMENT, "contiguous", NULL, NULL);
    NUL(wk_copy(NULL), WK_ERR_ARGUMENT, "copy", NULL, NULL);
    NUL(wk_to_dtype(NULL, WK_F16), WK_ERR_ARGUMENT, "to_dtype", NULL, NULL);
    NUL(wk_cat(NULL, 2, 0), WK_ERR_ARGUMENT, "cat", NULL, NULL);
    NUL(wk_stack((wk_tensor *const[]){ x, NULL }, 2, 0), WK_ERR_ARGUMENT, "stack", "1", NULL);
    NUL(wk_to_device(NULL, t_dev()), WK_ERR_ARGUMENT, "to_device", NULL, NULL);
    NUL(wk_to_device(x, NULL), WK_ERR_ARGUMENT, "to_device", NULL, NULL);
    NUL(wk_zeros(NULL, WK_F32, WK_SHAPE(2)), WK_ERR_ARGUMENT, "zeros", NULL, NULL);
    NUL(wk_from_host(t_dev(), WK_F32, WK_SHAPE(2), NULL), WK_ERR_ARGUMENT, "from_host", NULL, NULL);
    NUL(wk_rand_uniform(NULL, WK_F32, WK_SHAPE(2), 0, 1), WK_ERR_ARGUMENT, "rand_uniform", NULL, NULL);
    BAD(wk_to_host(NULL, NULL, 0), WK_ERR_ARGUMENT, "to_host", NULL, NULL);
    double v;
    BAD(wk_item(NULL, NULL, &v), WK_ERR_ARGUMENT, "item", NULL, NULL);
    wk_tensor *parts[2];
    T_CHECK(wk_chunk(NULL, 2, 0, parts) == -1, "chunk(NULL) did not return -1");
    wk_clear_error();
    /* accessors and lifetime calls take NULL quietly */
    wk_release(NULL);
    T_CHECK(wk_retain(NULL) == NULL, "retain(NULL)");
    T_CHECK(wk_tensor_rank(NULL) == -1 && wk_tensor_numel(NULL) == -1 && wk_tensor_device(NULL) == NULL, "accessors of NULL");
    T_CHECK(!wk_tensor_same_storage(NULL, x) && !wk_tensor_is_contiguous(NULL), "predicates of NULL");
    T_CHECK(!wk_supports(NULL, "exp", WK_F32) && !wk_supports(t_dev(), NULL, WK_F32), "supports(NULL)");
    T_CHECK(!wk_supports(t_dev(), "no_such_op", WK_F32), "supports of an unknown op");
    still_works();
}

static void mismatches(void)
{
    if (t_case("errors/dtype_mismatch")) {
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 3)));
        wk_tensor *b = T_NEED(wk_zeros(t_dev(), WK_F16, WK_SHAPE(2, 3)));
        wk_tensor *fi = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2)));
        wk_tensor *u = T_NEED(wk_zeros(t_dev(), WK_U8, WK_SHAPE(2, 3)));
        wk_tensor *i32 = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(3, 3)));
        if (!a || !b || !fi || !u || !i32) return;
        NUL(wk_add(a, b), WK_ERR_DTYPE, "add", "f32", "f16");
        NUL(wk_cmp(WK_EQ, b, a), WK_ERR_DTYPE, "eq", "f16", "f32");
        NUL(wk_where(u, a, b), WK_ERR_DTYPE, "where", "f32", "f16");
        NUL(wk_matmul(a, T_NEED(wk_zeros(t_dev(), WK_F16, WK_SHAPE(3, 2)))), WK_ERR_DTYPE, "matmul", "f32", "f16");
        NUL(wk_matmul(i32, i32), ANY, "matmul", "i32", NULL);
        NUL(wk_index_select(a, fi, 0), WK_ERR_DTYPE, "index_select", "f32", NULL);
        BAD(wk_scatter_add(a, u, b, 1), ANY, "scatter_add", NULL, NULL);
        NUL(wk_cat((wk_tensor *const[]){ a, b }, 2, 0), WK_ERR_DTYPE, "cat", "f16", "f32");
        NUL(wk_mean(u, NULL, 0, false), WK_ERR_DTYPE, "mean", "u8", NULL);
        NUL(wk_exp(i32), ANY, "exp", "i32", NULL);
        NUL(wk_rand_uniform(t_dev(), WK_I32, WK_SHAPE(2), 0, 1), ANY, "rand_uniform", "i32", NULL);
        NUL(wk_rand_normal(t_dev(), WK_U8, WK_SHAPE(2), 0, 1), ANY, "rand_normal", "u8", NULL);
        NUL(wk_to_dtype(a, (wk_dtype)42), WK_ERR_DTYPE, "to_dtype", "42", NULL);
        NUL(wk_zeros(t_dev(), (wk_dtype)-1, WK_SHAPE(2)), WK_ERR_DTYPE, "zeros", "-1", NULL);
        BAD(wk_copy2d(a, b, 1, 1, 1, 1, 0, 0), WK_ERR_DTYPE, "copy2d", "f32", "f16");
        still_works();
    }
    if (t_case("errors/shape_mismatch")) {
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3, 4)));
        wk_tensor *b = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(5)));
        wk_tensor *c = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(5, 2)));
        wk_tensor *ids = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(2, 2)));
        wk_tensor *ids3 = T_NEED(wk_zeros(t_dev(), WK_I64, WK_SHAPE(3, 4, 1)));
        if (!a || !b || !c || !ids || !ids3) return;
        NUL(wk_add(a, b), WK_ERR_SHAPE, "add", "4", "5");
        NUL(wk_where(T_NEED(wk_zeros(t_dev(), WK_U8, WK_SHAPE(2))), a, a), WK_ERR_SHAPE, "where", "2", "4");
        NUL(wk_matmul(a, c), WK_ERR_SHAPE, "matmul", "4", "5");
        NUL(wk_matmul(b, b), WK_ERR_SHAPE, "matmul", "rank", NULL);
        NUL(wk_reshape(a, WK_SHAPE(5, 5)), WK_ERR_SHAPE, "reshape", "12", "25");
        NUL(wk_reshape(a, WK_SHAPE(-1, -1)), WK_ERR_SHAPE, "reshape", "-1", NULL);
        NUL(wk_reshape(a, WK_SHAPE(5, -1)), WK_ERR_SHAPE, "reshape", "12", NULL);
        NUL(wk_broadcast_as(a, WK_SHAPE(3, 5)), WK_ERR_SHAPE, "broadcast_as", "4", "5");
        NUL(wk_cat((wk_tensor *const[]){ a, c }, 2, 0), WK_ERR_SHAPE, "cat", "4", "2");
        NUL(wk_stack((wk_tensor *const[]){ a, b }, 2, 0), WK_ERR_SHAPE, "stack", NULL, NULL);
        NUL(wk_gather(a, ids, 0), WK_ERR_SHAPE, "gather", NULL, NULL);
        NUL(wk_index_select(a, ids, 0), WK_ERR_SHAPE, "index_select", "2", NULL);
        BAD(wk_scatter_set(a, ids3, b, 2), ANY, "scatter_set", NULL, NULL);
        BAD(wk_copy_into(a, c), WK_ERR_SHAPE, "copy_into", NULL, NULL);
        still_works();
    }
}

static void ranks_and_dims(void)
{
    if (t_case("errors/rank_over_8")) {
        wk_shape s9 = { 8, { 1, 1, 1, 1, 1, 1, 1, 2 } };
        s9.rank = 9;
        NUL(wk_zeros(t_dev(), WK_F32, s9), WK_ERR_SHAPE, "zeros", "9", NULL);
        wk_shape neg = WK_SHAPE(2);
        neg.rank = -1;
        NUL(wk_empty(t_dev(), WK_F32, neg), WK_ERR_SHAPE, "empty", "-1", NULL);
        wk_tensor *r8 = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 1, 1, 1, 1, 1, 1, 2)));
        if (r8) {
            NUL(wk_unsqueeze(r8, 0), WK_ERR_SHAPE, "unsqueeze", "8", NULL);
            NUL(wk_stack((wk_tensor *const[]){ r8, r8 }, 2, 0), ANY, "stack", NULL, NULL);
            NUL(wk_reshape(r8, s9), WK_ERR_SHAPE, "reshape", "9", NULL);
            NUL(wk_broadcast_as(r8, s9), WK_ERR_SHAPE, "broadcast_as", "9", NULL);
        }
        still_works();
    }
    if (t_case("errors/bad_dims")) {
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(3, 4)));
        if (!a) return;
        NUL(wk_narrow(a, 2, 0, 1), WK_ERR_INDEX, "narrow", "2", NULL);
        NUL(wk_narrow(a, 1, 3, 2), WK_ERR_INDEX, "narrow", "3", "4");
        NUL(wk_narrow(a, 0, -1, 1), ANY, "narrow", "-1", NULL);
        NUL(wk_transpose(a, 0, 2), WK_ERR_INDEX, "transpose", "2", NULL);
        NUL(wk_transpose(a, -3, 0), WK_ERR_INDEX, "transpose", "-3", NULL);
        NUL(wk_permute(a, (const int[]){ 0, 0 }), WK_ERR_INDEX, "permute", "0", NULL);
        NUL(wk_permute(a, (const int[]){ 0, 2 }), WK_ERR_INDEX, "permute", "2", NULL);
        NUL(wk_squeeze(a, 1), WK_ERR_SHAPE, "squeeze", "4", NULL);
        NUL(wk_squeeze(a, 5), WK_ERR_INDEX, "squeeze", "5", NULL);
        NUL(wk_unsqueeze(a, 4), WK_ERR_INDEX, "unsqueeze", "4", NULL);
        NUL(wk_flatten(a, 1, 0), WK_ERR_INDEX, "flatten", "1", "0");
        NUL(wk_sum(a, (const int[]){ 0, 0 }, 2, false), WK_ERR_ARGUMENT, "sum", "0", NULL);
        NUL(wk_sum(a, (const int[]){ 0, -2 }, 2, false), WK_ERR_ARGUMENT, "sum", NULL, NULL);
        NUL(wk_max(a, (const int[]){ 2 }, 1, false), WK_ERR_INDEX, "max", "2", NULL);
        NUL(wk_sum(a, (const int[]){ 0, 1, 0 }, 3, false), WK_ERR_ARGUMENT, "sum", "3", NULL);
        NUL(wk_argmax(a, 7, false), WK_ERR_INDEX, "argmax", "7", NULL);
        NUL(wk_cat(&a, 1, 2), WK_ERR_INDEX, "cat", "2", NULL);
        NUL(wk_cat(&a, 0, 0), WK_ERR_ARGUMENT, "cat", "0", NULL);
        NUL(wk_index_select(a, T_NEED(wk_zeros(t_dev(), WK_U8, WK_SHAPE(1))), 3), WK_ERR_INDEX, "index_select", "3", NULL);
        NUL(wk_min(T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(0))), NULL, 0, false), WK_ERR_SHAPE, "min", "empty", NULL);
        wk_tensor *parts[4];
        T_CHECK(wk_chunk(a, 0, 0, parts) == -1, "chunk into 0 parts did not fail");
        T_CHECK(wk_chunk(a, 2, 3, parts) == -1, "chunk along dim 3 of a rank-2 tensor did not fail");
        wk_clear_error();
        double v;
        BAD(wk_item(a, (const int64_t[]){ 3, 0 }, &v), WK_ERR_INDEX, "item", "3", NULL);
        BAD(wk_item(a, (const int64_t[]){ 0, -1 }, &v), WK_ERR_INDEX, "item", "-1", NULL);
        still_works();
    }
    if (t_case("errors/copy2d_bounds")) {
        t_arr init = t_arr_new(WK_I32, WK_SHAPE(20));
        for (int i = 0; i < 20; i++) t_puti(WK_I32, init.p, i, i);
        wk_tensor *d = T_NEED(wk_from_host(t_dev(), WK_I32, init.shape, init.p));
        wk_tensor *s = T_NEED(wk_zeros(t_dev(), WK_I32, WK_SHAPE(20)));
        if (!d || !s) return;
        BAD(wk_copy2d(d, s, 3, 5, 5, 8, 0, 0), WK_ERR_INDEX, "copy2d", "20", "21");      /* writes up to 21 */
        BAD(wk_copy2d(d, s, 5, 5, 5, 1, 0, 0), ANY, "copy2d", NULL, NULL);               /* rows overlap */
        BAD(wk_copy2d(d, s, 2, 5, 5, 5, 16, 0), WK_ERR_INDEX, "copy2d", "20", NULL);     /* reads past the end */
        BAD(wk_copy2d(d, s, -1, 5, 5, 5, 0, 0), WK_ERR_ARGUMENT, "copy2d", "-1", NULL);
        BAD(wk_copy2d(d, s, 2, 2, INT64_MAX / 2, 2, 0, 0), WK_ERR_INDEX, "copy2d", NULL, NULL);
        t_check_exact("copy2d left dst alone", d, init.shape, WK_I32, init.p);
        still_works();
    }
}

static void allocation_and_devices(void)
{
    if (t_case("errors/impossible_allocation")) {
        NUL(wk_empty(t_dev(), WK_U8, WK_SHAPE((int64_t)1 << 62)), WK_ERR_MEMORY, "empty", NULL, NULL);
        NUL(wk_empty(t_dev(), WK_F32, WK_SHAPE((int64_t)1 << 62)), WK_ERR_MEMORY, "empty", NULL, NULL);     /* bytes overflow */
        NUL(wk_zeros(t_dev(), WK_F64, WK_SHAPE((int64_t)1 << 31, (int64_t)1 << 31, 4)), WK_ERR_MEMORY, "zeros", NULL, NULL);
        NUL(wk_empty(t_dev(), WK_U8, WK_SHAPE(INT64_MAX, 2)), WK_ERR_MEMORY, "empty", NULL, NULL);
        NUL(wk_full(t_dev(), WK_I64, WK_SHAPE((int64_t)1 << 40, (int64_t)1 << 20), 1), WK_ERR_MEMORY, "full", NULL, NULL);
        NUL(wk_empty(t_dev(), WK_F32, WK_SHAPE(3, -2)), WK_ERR_SHAPE, "empty", "-2", NULL);
        NUL(wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE((int64_t)1 << 62), 0, 1), WK_ERR_MEMORY, "rand_uniform", NULL, NULL);
        NUL(wk_arange(t_dev(), WK_F32, 0, 1e300, 1), WK_ERR_MEMORY, "arange", NULL, NULL);
        NUL(wk_arange(t_dev(), WK_F32, 0, 1, 0), WK_ERR_ARGUMENT, "arange", NULL, NULL);
        /* a huge view of a real tensor is fine (no allocation) but its copy is not */
        wk_tensor *one = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(1, 1)));
        wk_tensor *huge = one ? T_NEED(wk_broadcast_as(one, WK_SHAPE((int64_t)1 << 31, (int64_t)1 << 31))) : NULL;
        if (huge) NUL(wk_contiguous(huge), WK_ERR_MEMORY, "contiguous", NULL, NULL);
        still_works();
    }
    if (t_case("errors/devices")) {
        wk_device *d = wk_device_open("tpu:0");
        T_CHECK(!d, "opened a tpu");
        t_check_error("open tpu", WK_ERR_DEVICE, wk_last_status(), "tpu", (const char *)NULL);
        d = wk_device_open("cpu:3");
        T_CHECK(!d, "opened cpu:3");
        t_check_error("open cpu:3", WK_ERR_DEVICE, wk_last_status(), "3", (const char *)NULL);
        T_CHECK(!wk_device_open(NULL), "opened NULL");
        wk_clear_error();
        T_CHECK(wk_device_count("cpu") == 1, "wk_device_count(cpu) = %d", wk_device_count("cpu"));
        T_CHECK(wk_device_count("bogus") == 0 && wk_device_count(NULL) == 0, "count of an unknown kind");
        if (wk_device_count("cuda") == 0) {
            T_CHECK(!wk_device_open("cuda:0"), "opened cuda:0 with no cuda device");
            t_check_error("open cuda:0", WK_ERR_DEVICE, wk_last_status(), "cuda", (const char *)NULL);
        }
        wk_device *c2 = wk_device_open("cpu");
        T_CHECK(c2 == t_dev(), "opening cpu twice gives another device");
        wk_device_info info;
        if (c2) {
            T_OK(wk_device_info_get(c2, &info));
            T_CHECK(!strcmp(info.name, "cpu") && info.warp_size == 1 && info.compute_units >= 1, "cpu device info");
            T_CHECK(!strcmp(wk_device_name(c2), "cpu"), "device name");
            wk_device_close(c2);
        }
        BAD(wk_device_info_get(NULL, &info), WK_ERR_ARGUMENT, NULL, NULL, NULL);
        BAD(wk_device_set_seed(NULL, 1), WK_ERR_ARGUMENT, NULL, NULL, NULL);
        wk_device_close(NULL);
        T_CHECK(wk_build_info() && *wk_build_info(), "empty build info");
        still_works();
    }
    if (t_case("errors/error_state")) {
        wk_clear_error();
        T_CHECK(!strcmp(wk_last_error(), "") && wk_last_status() == WK_OK, "cleared state is not empty");
        wk_tensor *r = t_own(wk_exp(NULL));
        T_CHECK(!r, "exp(NULL)");
        char msg[256];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        still_works();                                   /* success keeps the message */
        T_CHECK(!strcmp(wk_last_error(), msg), "a successful call changed the message \"%s\" to \"%s\"", msg, wk_last_error());
        T_CHECK(wk_last_status() == WK_ERR_ARGUMENT, "a successful call changed the status");
        wk_clear_error();
        T_CHECK(!*wk_last_error(), "clear_error left \"%s\"", wk_last_error());
        for (int s = 0; s < WK_STATUS_COUNT; s++) {
            const char *n = wk_status_name((wk_status)s);
            T_CHECK(n && *n, "status %d has no name", s);
            for (int k = 0; k < s; k++) T_CHECK(!n || strcmp(n, wk_status_name((wk_status)k)), "statuses %d and %d share a name", k, s);
        }
        T_CHECK(wk_status_name((wk_status)99) != NULL, "wk_status_name(99) is NULL");
    }
    if (t_case("errors/overflowing_arguments")) {
        /* sizes and offsets whose arithmetic overflows int64 must be refused
         * without undefined behaviour (UBSan watches in `make asan`) */
        wk_tensor *a = T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 3)));
        if (!a) return;
        NUL(wk_reshape(a, WK_SHAPE(INT64_MAX / 3, 3, 3, 3, 3, 3, 3, 3)), WK_ERR_SHAPE, "reshape", NULL, NULL);
        NUL(wk_reshape(a, WK_SHAPE((int64_t)1 << 62, 4, -1)), WK_ERR_SHAPE, "reshape", NULL, NULL);
        NUL(wk_narrow(a, 1, INT64_MAX, 2), WK_ERR_INDEX, "narrow", NULL, NULL);
        NUL(wk_narrow(a, 1, 2, INT64_MAX), WK_ERR_INDEX, "narrow", NULL, NULL);
        NUL(wk_broadcast_as(a, WK_SHAPE(INT64_MAX, INT64_MAX, 2, 3)), ANY, "broadcast_as", NULL, NULL);
        double v;
        BAD(wk_item(a, (const int64_t[]){ INT64_MAX, INT64_MAX }, &v), WK_ERR_INDEX, "item", NULL, NULL);
        BAD(wk_copy2d(a, a, INT64_MAX, 2, 3, 3, 0, 0), ANY, "copy2d", NULL, NULL);
        BAD(wk_copy2d(a, a, 1, 2, 3, 3, INT64_MAX, 0), ANY, "copy2d", NULL, NULL);
        int64_t huge[2] = { INT64_MAX, INT64_MIN };
        wk_tensor *ids = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(2), huge));
        if (ids) {
            NUL(wk_index_select(a, ids, 1), WK_ERR_INDEX, "index_select", NULL, NULL);
            BAD(wk_index_add(a, ids, T_NEED(wk_zeros(t_dev(), WK_F32, WK_SHAPE(2, 2))), 1), WK_ERR_INDEX, "index_add", NULL, NULL);
        }
        wk_tensor *parts[4] = { 0 };
        int np = wk_chunk(a, INT32_MAX, 1, parts);         /* a dim of 3: 3 views of 1 */
        for (int i = 0; i < np && i < 4; i++) t_own(parts[i]);
        T_CHECK(np == 3, "chunk of a dim of 3 into INT_MAX parts gave %d", np);
        wk_clear_error();
        still_works();
    }
}

T_SUITE(errors)
{
    null_handles();
    mismatches();
    ranks_and_dims();
    allocation_and_devices();
}
