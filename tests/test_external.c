/* test_external.c — memory another owner keeps (wk_from_external) and the
 * address of a view's first element (wk_tensor_data), the two calls that
 * zero-copy exchange (buffer protocol, DLPack) is built on: the tensor
 * reads and writes the owner's memory in place, views of it keep it alive,
 * the release callback runs exactly once at the last view (and never on
 * error), strides (transposed, broadcast, gapped) are taken as given; bad
 * layouts, alignment, NULL data and devices are errors.
 *
 * Case names: external/<what>, external/errors/<what>.
 */
#include <string.h>
#include "test.h"

static void count_release(void *ctx) { (*(int *)ctx)++; }

/* a tensor this file releases itself (T_NEED's belong to the case) */
static wk_tensor *need(wk_tensor *t, const char *expr)
{
    if (!t) t_fail("%s: NULL: %s", expr, wk_last_error());
    return t;
}
#define NEED(expr) need((expr), #expr)

T_SUITE(external)
{
    wk_device *dev = t_dev();
    if (t_case("external/shares_and_releases_once")) {
        float buf[12];
        for (int i = 0; i < 12; i++) buf[i] = (float)i;
        int released = 0;
        wk_tensor *t = NEED(wk_from_external(dev, WK_F32, WK_SHAPE(3, 4), NULL, buf, count_release, &released));
        if (t) {
            T_CHECK(wk_tensor_data(t) == buf, "wk_tensor_data is not the owner's pointer");
            T_CHECK(wk_tensor_is_contiguous(t) && wk_tensor_stride(t, 0) == 4, "row-major strides expected");
            wk_tensor *row = NEED(wk_narrow(t, 0, 1, 1));
            wk_tensor *col = NEED(wk_narrow(t, 1, 2, 1));
            T_CHECK(wk_tensor_data(row) == buf + 4 && wk_tensor_data(col) == buf + 2, "view addresses");
            T_OK(wk_const_set(row, -1.0));                 /* a write lands in the owner's memory */
            T_CHECK(buf[4] == -1.0f && buf[7] == -1.0f && buf[3] == 3.0f, "const_set did not write in place");
            buf[11] = 100.0f;                              /* and the owner's writes are seen */
            double v;
            T_OK(wk_item(t, (const int64_t[]){ 2, 3 }, &v));
            T_CHECK(v == 100.0, "item read %g, not the owner's 100", v);
            wk_tensor *s = NEED(wk_sum(t, NULL, 0, false));
            T_OK(s ? wk_item(s, NULL, &v) : WK_ERR_ARGUMENT);
            T_CHECK(v == 0 + 1 + 2 + 3 - 4 + 8 + 9 + 10 + 100, "sum %g", v);
            wk_release(s);
            wk_release(t);
            T_CHECK(released == 0, "released while views live");
            wk_release(row);
            T_CHECK(released == 0, "released while a view lives");
            wk_release(col);
            T_CHECK(released == 1, "release ran %d times, not once", released);
        }
    }
    if (t_case("external/strides_as_given")) {
        double buf[2 * 5];
        for (int i = 0; i < 10; i++) buf[i] = i;
        /* a [5, 2] view of a [2, 5] row-major block: transposed */
        wk_tensor *t = NEED(wk_from_external(dev, WK_F64, WK_SHAPE(5, 2), (const int64_t[]){ 1, 5 }, buf, NULL, NULL));
        double out[10];
        if (t) {
            T_OK(wk_to_host(t, out, sizeof out));
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 2; j++) T_CHECK(out[i * 2 + j] == buf[j * 5 + i], "transposed element %d,%d", i, j);
            wk_release(t);
        }
        /* broadcast (stride 0) and gapped strides */
        t = NEED(wk_from_external(dev, WK_F64, WK_SHAPE(3, 2), (const int64_t[]){ 0, 4 }, buf + 1, NULL, NULL));
        if (t) {
            T_OK(wk_to_host(t, out, 6 * sizeof(double)));
            for (int i = 0; i < 3; i++) T_CHECK(out[2 * i] == 1 && out[2 * i + 1] == 5, "broadcast row %d", i);
            T_CHECK(wk_const_set(t, 0) == WK_ERR_ARGUMENT || wk_last_status() != WK_OK, "a broadcast destination was written");
            wk_release(t);
        }
        /* empty: NULL data is fine */
        t = NEED(wk_from_external(dev, WK_F32, WK_SHAPE(0, 3), NULL, NULL, NULL, NULL));
        wk_release(t);
    }
    if (t_case("external/quantized_rows")) {
        static unsigned char blocks[2 * 34];     /* two q8_0 rows of 32 */
        memset(blocks, 0, sizeof blocks);
        wk_tensor *t = NEED(wk_from_external(dev, WK_Q8_0, WK_SHAPE(2, 32), NULL, blocks, NULL, NULL));
        if (t) {
            wk_tensor *r = NEED(wk_narrow(t, 0, 1, 1));
            T_CHECK(wk_tensor_data(r) == blocks + 34, "row 1 of q8_0 is 34 bytes in");
            wk_release(r);
            wk_release(t);
        }
    }
    if (t_case("external/errors")) {
        float buf[8];
        int released = 0;
#define BAD(what, expr, want)                                                                                         \
    do {                                                                                                              \
        wk_tensor *b_ = (expr);                                                                                       \
        T_CHECK(!b_ && wk_last_status() == (want), "%s: got %s (%s)", what, b_ ? "a tensor" : wk_status_name(wk_last_status()), \
                wk_last_error());                                                                                     \
        wk_release(b_);                                                                                               \
    } while (0)
        BAD("negative stride", wk_from_external(dev, WK_F32, WK_SHAPE(2), (const int64_t[]){ -1 }, buf + 1, count_release, &released), WK_ERR_SHAPE);
        BAD("negative stride of an empty tensor", wk_from_external(dev, WK_F32, WK_SHAPE(0, 3), (const int64_t[]){ 3, -1 }, buf, count_release, &released), WK_ERR_SHAPE);
        BAD("misaligned", wk_from_external(dev, WK_F32, WK_SHAPE(2), NULL, (char *)buf + 1, count_release, &released), WK_ERR_ARGUMENT);
        BAD("NULL data", wk_from_external(dev, WK_F32, WK_SHAPE(2), NULL, NULL, count_release, &released), WK_ERR_ARGUMENT);
        BAD("NULL device", wk_from_external(NULL, WK_F32, WK_SHAPE(2), NULL, buf, count_release, &released), WK_ERR_ARGUMENT);
        BAD("bad dtype", wk_from_external(dev, (wk_dtype)99, WK_SHAPE(2), NULL, buf, count_release, &released), WK_ERR_DTYPE);
        BAD("negative dim", wk_from_external(dev, WK_F32, WK_SHAPE(-2), NULL, buf, count_release, &released), WK_ERR_SHAPE);
        BAD("partial block", wk_from_external(dev, WK_Q8_0, WK_SHAPE(1, 16), NULL, buf, count_release, &released), WK_ERR_SHAPE);
        BAD("strides past 2^63", wk_from_external(dev, WK_F32, WK_SHAPE(4, 4), (const int64_t[]){ INT64_MAX / 2, 1 }, buf, count_release, &released), WK_ERR_SHAPE);
#undef BAD
        T_CHECK(released == 0, "release ran on an error");
        wk_from_external(dev, WK_F32, WK_SHAPE(2), (const int64_t[]){ -1 }, buf + 1, NULL, NULL);
        T_CHECK(wk_last_status() == WK_ERR_SHAPE && strstr(wk_last_error(), "from_external"), "message: %s", wk_last_error());
        T_CHECK(wk_tensor_data(NULL) == NULL, "wk_tensor_data(NULL)");
    }
}
