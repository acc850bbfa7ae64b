/* test_host_memory.c — pinned host memory (wk_host_alloc / wk_host_free):
 * round trips through wk_from_host and wk_to_host from and into whole
 * blocks and ranges inside them (odd offsets and lengths, several
 * dtypes), a transposed view read into a block, zero-byte blocks,
 * alignment; errors for a NULL device and for pointers wk_host_alloc did
 * not return (a malloc'd block, an inner pointer, a block freed already),
 * after which the library keeps working. wk_to_host_async: a tensor and a
 * transposed view into ranges of a block, complete at an event, holding
 * the data as it was when queued (an op that overwrites the source is
 * queued behind it); its errors (memory that is not a block of the
 * device's kind, a range past a block's end, a short buffer). Runs on the cpu and on every GPU device present
 * (tests/device/device_checks.c does a larger round trip on the GPU).
 *
 * Case names: host_memory/<device>/<what>, host_memory/errors/<what>.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"

/* bytes of a xorshift stream (not zeros, not a short period) */
static void fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = (unsigned char)(s >> 24);
    }
}

static void round_trips(wk_device *dev, const char *label)
{
    if (t_case("host_memory/%s/whole_block_round_trip", label)) {
        size_t n = ((size_t)3 << 20) + 5;        /* not a multiple of a page or of a staging chunk */
        unsigned char *src = wk_host_alloc(dev, n), *dst = wk_host_alloc(dev, n);
        if (!src || !dst) t_fail("wk_host_alloc: %s", wk_last_error());
        else {
            fill_bytes(src, n, t_seed());
            memset(dst, 0xEE, n);
            wk_tensor *t = T_NEED(wk_from_host(dev, WK_U8, WK_SHAPE((int64_t)n), src));
            if (t) {
                memset(src, 0, n);               /* from_host returned: src is ours again */
                T_OK(wk_to_host(t, dst, n));
                fill_bytes(src, n, t_seed());
                T_CHECK(memcmp(src, dst, n) == 0, "the round trip through pinned memory changed the data");
            }
        }
        wk_host_free(src);
        wk_host_free(dst);
    }
    if (t_case("host_memory/%s/inner_ranges", label)) {
        /* f32 and bf16 tensors from odd offsets inside one block, read back
         * into odd offsets of another; the bytes around stay untouched */
        size_t n = (size_t)1 << 20;
        unsigned char *a = wk_host_alloc(dev, n), *b = wk_host_alloc(dev, n);
        if (!a || !b) t_fail("wk_host_alloc: %s", wk_last_error());
        else {
            static const struct { wk_dtype dt; size_t off_in, off_out; int64_t rows, cols; } cs[] = {
                { WK_F32, 4096 + 12, 100, 33, 65 },
                { WK_BF16, 6, 1 << 19, 7, 1023 },
                { WK_I64, 8 * 1001, 8 * 3, 1, 1 },
            };
            for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
                size_t bytes = (size_t)(cs[k].rows * cs[k].cols) * wk_dtype_size(cs[k].dt);
                fill_bytes(a, n, t_seed() + k);
                memset(b, 0xA5, n);
                wk_tensor *t = T_NEED(wk_from_host(dev, cs[k].dt, WK_SHAPE(cs[k].rows, cs[k].cols), a + cs[k].off_in));
                if (!t) break;
                T_OK(wk_to_host(t, b + cs[k].off_out, bytes));
                T_CHECK(memcmp(a + cs[k].off_in, b + cs[k].off_out, bytes) == 0, "%s: data changed",
                        wk_dtype_name(cs[k].dt));
                bool around = true;
                for (size_t i = 0; i < n && around; i++)
                    if ((i < cs[k].off_out || i >= cs[k].off_out + bytes) && b[i] != 0xA5) around = false;
                T_CHECK(around, "%s: bytes outside the destination range were written", wk_dtype_name(cs[k].dt));
            }
        }
        wk_host_free(a);
        wk_host_free(b);
    }
    if (t_case("host_memory/%s/transposed_view_into_block", label)) {
        /* a view's to_host goes through a contiguous copy, then into pinned memory */
        float *h = wk_host_alloc(dev, 6 * sizeof(float)), *o = wk_host_alloc(dev, 6 * sizeof(float));
        if (!h || !o) t_fail("wk_host_alloc: %s", wk_last_error());
        else {
            for (int i = 0; i < 6; i++) h[i] = (float)(i + 1);   /* [[1 2 3] [4 5 6]] */
            wk_tensor *t = T_NEED(wk_from_host(dev, WK_F32, WK_SHAPE(2, 3), h));
            wk_tensor *tt = t ? T_NEED(wk_transpose(t, 0, 1)) : NULL;
            if (tt) {
                T_OK(wk_to_host(tt, o, 6 * sizeof(float)));
                static const float want[6] = { 1, 4, 2, 5, 3, 6 };
                T_CHECK(memcmp(o, want, sizeof want) == 0, "transposed read: %g %g %g %g %g %g", o[0], o[1], o[2],
                        o[3], o[4], o[5]);
                double v = 0;
                T_OK(wk_item(tt, (const int64_t[]){ 2, 1 }, &v));
                T_CHECK(v == 6, "item [2,1] of the transpose: %g", v);
            }
        }
        wk_host_free(h);
        wk_host_free(o);
    }
    if (t_case("host_memory/%s/zero_bytes_and_alignment", label)) {
        void *z = wk_host_alloc(dev, 0);
        T_CHECK(z != NULL, "wk_host_alloc(0) returned NULL: %s", wk_last_error());
        wk_host_free(z);
        T_CHECK(wk_last_status() == WK_OK, "freeing a zero-byte block: %s", wk_last_error());
        for (size_t sz = 1; sz <= ((size_t)8 << 20); sz *= 8) {
            void *p = wk_host_alloc(dev, sz);
            T_CHECK(p && ((uintptr_t)p & 63) == 0, "wk_host_alloc(%zu) = %p (64-byte aligned expected)", sz, p);
            if (p) memset(p, 1, sz);           /* the whole block is writable */
            wk_host_free(p);
        }
        /* an empty tensor from and to a block */
        void *p = wk_host_alloc(dev, 64);
        wk_tensor *e = p ? T_NEED(wk_from_host(dev, WK_F32, WK_SHAPE(0, 4), p)) : NULL;
        if (e) T_OK(wk_to_host(e, p, 0));
        wk_host_free(p);
    }
}

static void async_reads(wk_device *dev, const char *label)
{
    if (t_case("host_memory/%s/to_host_async", label)) {
        const int64_t R = 257, C = 33;
        const size_t bytes = (size_t)(R * C) * sizeof(float), n = 3 * bytes + 64;
        float *h = t_mem(bytes);
        unsigned char *b = wk_host_alloc(dev, n);
        wk_event *ev = wk_event_new(dev);
        if (!b || !ev) t_fail("wk_host_alloc / wk_event_new: %s", wk_last_error());
        else {
            t_fill(WK_F32, h, R * C, T_GEN(G_UNIFORM, -4, 4));
            memset(b, 0x5A, n);
            wk_tensor *t = T_NEED(wk_from_host(dev, WK_F32, WK_SHAPE(R, C), h));
            wk_tensor *tt = t ? T_NEED(wk_transpose(t, 0, 1)) : NULL;
            if (tt) {
                float *o1 = (float *)(b + 4), *o2 = (float *)(b + 4 + bytes + 8);
                T_OK(wk_to_host_async(t, o1, bytes));
                T_OK(wk_to_host_async(tt, o2, bytes));
                T_OK(wk_const_set(t, -7.0));          /* queued behind the copies */
                T_OK(wk_event_record(ev));
                T_OK(wk_event_synchronize(ev));
                T_CHECK(memcmp(o1, h, bytes) == 0, "the async copy differs from the tensor as it was queued");
                bool tr = true;
                for (int64_t i = 0; i < R && tr; i++)
                    for (int64_t j = 0; j < C && tr; j++) tr = o2[j * R + i] == h[i * C + j];
                T_CHECK(tr, "the async copy of the transposed view is not its row-major layout");
                bool around = b[0] == 0x5A && b[3] == 0x5A && b[4 + bytes] == 0x5A && b[4 + bytes + 7] == 0x5A;
                for (size_t i = 4 + 2 * bytes + 8; i < n && around; i++) around = b[i] == 0x5A;
                T_CHECK(around, "bytes outside the destinations were written");
                double v = 0;
                T_OK(wk_item(t, (const int64_t[]){ R - 1, C - 1 }, &v));
                T_CHECK(v == -7.0, "the op queued after the copies: %g", v);
            }
        }
        wk_event_free(ev);
        wk_host_free(b);
    }
    if (t_case("host_memory/%s/to_host_async_errors", label)) {
        unsigned char *b = wk_host_alloc(dev, 64);
        char *m = t_mem(64);
        wk_tensor *t = T_NEED(wk_full(dev, WK_F32, WK_SHAPE(4), 1.0));
        if (b && t) {
            t_check_error("async into malloc'd memory", WK_ERR_ARGUMENT, wk_to_host_async(t, m, 64), "to_host_async",
                          "wk_host_alloc", (const char *)NULL);
            t_check_error("async past the block's end", WK_ERR_ARGUMENT, wk_to_host_async(t, b + 56, 16),
                          "to_host_async", "wk_host_alloc", (const char *)NULL);
            t_check_error("async into a short buffer", WK_ERR_ARGUMENT, wk_to_host_async(t, b, 8), "to_host_async",
                          "smaller", (const char *)NULL);
            t_check_error("async of NULL", WK_ERR_ARGUMENT, wk_to_host_async(NULL, b, 8), "to_host_async", "NULL",
                          (const char *)NULL);
            T_OK(wk_to_host_async(t, b + 48, 16));   /* the last 16 bytes: fine */
            T_OK(wk_device_synchronize(dev));
            T_CHECK(((float *)(b + 48))[3] == 1.0f, "after the errors: %g", ((float *)(b + 48))[3]);
        } else {
            t_fail("setup: %s", wk_last_error());
        }
        wk_host_free(b);
    }
}

static void on_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    round_trips(dev, name);
    async_reads(dev, name);
}

T_SUITE(host_memory)
{
    round_trips(t_dev(), "cpu");
    async_reads(t_dev(), "cpu");

    if (t_case("host_memory/errors/null_device")) {
        void *p = wk_host_alloc(NULL, 16);
        T_CHECK(!p, "wk_host_alloc(NULL, 16) returned memory");
        t_check_error("wk_host_alloc(NULL, 16)", WK_ERR_ARGUMENT, wk_last_status(), "host_alloc", "device",
                      (const char *)NULL);
        wk_host_free(NULL);                            /* fine, no error */
        T_CHECK(wk_last_status() == WK_OK, "wk_host_free(NULL) set an error: %s", wk_last_error());
    }
    if (t_case("host_memory/errors/foreign_pointers")) {
        char *m = t_mem(64);
        wk_host_free(m);                               /* not ours: an error, nothing freed */
        t_check_error("wk_host_free(malloc'd)", WK_ERR_ARGUMENT, wk_last_status(), "host_free", "wk_host_alloc",
                      (const char *)NULL);
        char *p = wk_host_alloc(t_dev(), 256);
        if (!p) t_fail("wk_host_alloc: %s", wk_last_error());
        else {
            wk_host_free(p + 64);                      /* an inner pointer */
            t_check_error("wk_host_free(inner)", WK_ERR_ARGUMENT, wk_last_status(), "host_free", (const char *)NULL);
            p[255] = 1;                                /* still allocated */
            wk_host_free(p);
            T_CHECK(wk_last_status() == WK_OK, "wk_host_free(block): %s", wk_last_error());
            wk_host_free(p);                           /* twice */
            t_check_error("wk_host_free twice", WK_ERR_ARGUMENT, wk_last_status(), "freed already",
                          (const char *)NULL);
        }
        wk_tensor *x = T_NEED(wk_full(t_dev(), WK_I32, WK_SHAPE(3), 5));
        double v = 0;
        if (x) T_OK(wk_item(x, (const int64_t[]){ 2 }, &v));
        T_CHECK(v == 5, "the library does not work after host_free errors");
    }
    if (t_case("host_memory/keeps_its_device_open")) {
        wk_device *d = wk_device_open("cpu");
        unsigned char *p = d ? wk_host_alloc(d, 4096) : NULL;
        wk_device_close(d);                            /* the block still holds it */
        if (!p) t_fail("wk_host_alloc: %s", wk_last_error());
        else {
            memset(p, 7, 4096);
            wk_tensor *t = T_NEED(wk_from_host(t_dev(), WK_U8, WK_SHAPE(4096), p));
            double v = 0;
            if (t) T_OK(wk_item(t, (const int64_t[]){ 4095 }, &v));
            T_CHECK(v == 7, "read %g", v);
        }
        wk_host_free(p);
    }

    t_each_gpu(on_gpu, NULL);                 /* the same on every GPU device */
}
