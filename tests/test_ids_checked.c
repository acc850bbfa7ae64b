/* test_ids_checked.c — wk_set_ids_checked (include/wick.h): ids the
 * caller vouches for.
 *   ids_checked/setting        the call returns the previous setting; it is
 *                              the thread's own (another thread sees it off)
 *   ids_checked/cpu            the cpu checks ids anyway: an id out of range
 *                              is WK_ERR_INDEX with the setting on or off
 *   ids_checked/<gpu>          on a GPU, off: WK_ERR_INDEX; on: no error, the
 *                              bad row of an index_select reads zeros, a
 *                              scatter_set writes nothing through a bad id,
 *                              good ids give the same values either way
 */
#include <pthread.h>
#include <string.h>
#include "test.h"

static void *other_thread(void *arg)
{
    *(bool *)arg = wk_set_ids_checked(false);   /* what this thread had: off */
    return NULL;
}

static void check_on(wk_device *dev, const char *name, bool gpu)
{
    const float src[3 * 2] = { 1, 2, 3, 4, 5, 6 };
    const uint32_t good[2] = { 2, 0 }, bad[2] = { 2, 7 };
    wk_scope_begin();
    wk_tensor *s = wk_from_host(dev, WK_F32, WK_SHAPE(3, 2), src);
    wk_tensor *ig = wk_from_host(dev, WK_U32, WK_SHAPE(2), good), *ib = wk_from_host(dev, WK_U32, WK_SHAPE(2), bad);
    /* off: the bad id is an error everywhere */
    wk_tensor *r = wk_index_select(s, ib, 0);
    T_CHECK(!r && wk_last_status() == WK_ERR_INDEX, "%s: a bad id, unchecked by the caller: %s", name, wk_last_error());
    float out[4];
    const bool prev = wk_set_ids_checked(true);
    r = wk_index_select(s, ib, 0);
    if (gpu) {
        T_CHECK(r && wk_to_host(r, out, sizeof out) == WK_OK, "%s: a bad id the caller vouched for: %s", name,
                wk_last_error());
        if (r) T_CHECK(out[0] == 5 && out[1] == 6 && out[2] == 0 && out[3] == 0, "%s: rows %g %g / %g %g (want 5 6 / 0 0)",
                       name, out[0], out[1], out[2], out[3]);
        /* a scatter_set through a bad id writes nothing there, the good row lands */
        wk_tensor *d = wk_zeros(dev, WK_F32, WK_SHAPE(3, 2));
        wk_tensor *at = wk_broadcast_as(wk_reshape(ib, WK_SHAPE(2, 1)), WK_SHAPE(2, 2));
        wk_tensor *v = wk_narrow(s, 0, 0, 2);
        T_CHECK(d && at && v && wk_scatter_set(d, at, v, 0) == WK_OK, "%s: scatter_set: %s", name, wk_last_error());
        float got[6] = { -1, -1, -1, -1, -1, -1 };
        if (d && wk_to_host(d, got, sizeof got) == WK_OK)
            T_CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0 && got[3] == 0 && got[4] == 1 && got[5] == 2,
                    "%s: scatter_set wrote %g %g %g %g %g %g (want 0 0 0 0 1 2)", name, got[0], got[1], got[2], got[3],
                    got[4], got[5]);
    } else {
        T_CHECK(!r && wk_last_status() == WK_ERR_INDEX, "%s: the cpu checks anyway: %s", name, wk_last_error());
    }
    r = wk_index_select(s, ig, 0);
    T_CHECK(r && wk_to_host(r, out, sizeof out) == WK_OK && out[0] == 5 && out[1] == 6 && out[2] == 1 && out[3] == 2,
            "%s: good ids vouched for: %s", name, wk_last_error());
    wk_set_ids_checked(prev);
    wk_scope_end();
}

static void on_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    if (t_case("ids_checked/%s", name)) check_on(dev, name, true);
}

T_SUITE(ids_checked)
{
    if (t_case("ids_checked/setting")) {
        const bool was = wk_set_ids_checked(true);
        T_CHECK(!was, "off by default");
        T_CHECK(wk_set_ids_checked(true), "the previous setting comes back");
        bool other = true;
        pthread_t th;
        pthread_create(&th, NULL, other_thread, &other);
        pthread_join(th, NULL);
        T_CHECK(!other, "another thread's setting is its own (off)");
        wk_set_ids_checked(false);
    }
    if (t_case("ids_checked/cpu")) check_on(t_dev(), "cpu", false);
    t_each_gpu(on_gpu, NULL);
}
