/* test_events.c — device events (wk_event_new/record/synchronize/
 * elapsed_ms/free) on the cpu, and on every GPU device present: elapsed
 * time is >= 0 and ordered, brackets real time (a sleep between two
 * records on the cpu), is exactly antisymmetric, follows a re-recorded
 * mark; errors for NULL arguments and events never recorded; an event
 * keeps its device open. Events of two devices are checked on a GPU
 * machine by tests/device/device_checks.c (the cpu is one device).
 * Graphs (wk_graph_*): the cpu records none and says so; NULL arguments.
 * Their recording and replay are checked on GPUs by device_checks.c.
 *
 * Case names: events/<what>, events/<device>/<what>, graphs/<what>.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test.h"

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

/* an event owned by the caller; fails the case on NULL */
static wk_event *new_event(wk_device *dev)
{
    wk_event *e = wk_event_new(dev);
    if (!e) t_fail("wk_event_new(%s) returned NULL: %s", wk_device_name(dev), wk_last_error());
    return e;
}

static double elapsed(const wk_event *a, const wk_event *b)
{
    double ms = -1e300;
    T_OK(wk_event_elapsed_ms(a, b, &ms));
    return ms;
}

/* Work on dev between two events: elapsed >= 0; a third event after more
 * work is further; the reverse is the negative; an event against itself
 * is 0; synchronize works on each. */
static void ordering(wk_device *dev, const char *label)
{
    if (!t_case("events/%s/ordered", label)) return;
    wk_event *a = new_event(dev), *b = new_event(dev), *c = new_event(dev);
    if (a && b && c) {
        wk_tensor *x = T_NEED(wk_rand_uniform(dev, WK_F32, WK_SHAPE(256, 256), -1, 1));
        T_OK(wk_event_record(a));
        wk_tensor *y = x ? T_NEED(wk_matmul(x, x)) : NULL;
        T_OK(wk_event_record(b));
        wk_tensor *z = y ? T_NEED(wk_matmul(y, x)) : NULL;
        (void)z;
        T_OK(wk_event_record(c));
        T_OK(wk_event_synchronize(c));
        T_OK(wk_event_synchronize(a));
        double ab = elapsed(a, b), ac = elapsed(a, c), ba = elapsed(b, a), aa = elapsed(a, a);
        T_CHECK(ab >= 0, "elapsed(a, b) = %g ms, expected >= 0", ab);
        T_CHECK(ac >= ab, "elapsed(a, c) = %g ms < elapsed(a, b) = %g ms", ac, ab);
        /* exact on the cpu; a GPU runtime computes each from its own
         * timestamps (float ms) */
        T_CHECK(ba + ab == 0 || (dev != t_dev() && ba <= 0 && ba + ab < 1e-3 && ba + ab > -1e-3),
                "elapsed(b, a) = %g ms, expected -elapsed(a, b) = %g ms", ba, -ab);
        T_CHECK(aa == 0, "elapsed(a, a) = %g ms, expected 0", aa);
        T_CHECK(ac < 60000, "elapsed(a, c) = %g ms for two small matmuls", ac);
    }
    wk_event_free(a);
    wk_event_free(b);
    wk_event_free(c);
}

/* Elapsed time through a pinned round trip: the events bracket the
 * copies (a GPU's copies run on the stream the events are recorded on). */
static void bracket_copies(wk_device *dev, const char *label)
{
    if (!t_case("events/%s/brackets_copies", label)) return;
    wk_event *a = new_event(dev), *b = new_event(dev);
    size_t n = (size_t)4 << 20;
    unsigned char *h = wk_host_alloc(dev, n), *back = wk_host_alloc(dev, n);
    if (a && b && h && back) {
        for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + 3);
        T_OK(wk_event_record(a));
        wk_tensor *t = T_NEED(wk_from_host(dev, WK_U8, WK_SHAPE((int64_t)n), h));
        if (t) T_OK(wk_to_host(t, back, n));
        T_OK(wk_event_record(b));
        double ms = elapsed(a, b);
        T_CHECK(ms >= 0, "a 4 MiB round trip took %g ms between events", ms);
        T_CHECK(memcmp(h, back, n) == 0, "the round trip changed the data");
    } else if (!h || !back) {
        t_fail("wk_host_alloc: %s", wk_last_error());
    }
    wk_host_free(h);
    wk_host_free(back);
    wk_event_free(a);
    wk_event_free(b);
}

static void on_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    ordering(dev, name);
    bracket_copies(dev, name);
}

T_SUITE(events)
{
    wk_device *cpu = t_dev();
    ordering(cpu, "cpu");
    bracket_copies(cpu, "cpu");

    if (t_case("events/cpu/brackets_a_sleep")) {
        wk_event *a = new_event(cpu), *b = new_event(cpu);
        if (a && b) {
            T_OK(wk_event_record(a));
            sleep_ms(20);
            T_OK(wk_event_record(b));
            double ms = elapsed(a, b);
            T_CHECK(ms >= 19.9 && ms < 20000, "a 20 ms sleep measured %g ms", ms);
        }
        wk_event_free(a);
        wk_event_free(b);
    }
    if (t_case("events/cpu/record_again_moves_the_mark")) {
        wk_event *a = new_event(cpu), *b = new_event(cpu);
        if (a && b) {
            T_OK(wk_event_record(a));
            sleep_ms(5);
            T_OK(wk_event_record(b));
            double first = elapsed(a, b);
            sleep_ms(5);
            T_OK(wk_event_record(a));                 /* now after b */
            double second = elapsed(a, b);
            T_CHECK(first >= 4.9, "first interval %g ms, expected >= 5", first);
            T_CHECK(second <= -4.9, "after re-recording the start, elapsed is %g ms, expected <= -5", second);
        }
        wk_event_free(a);
        wk_event_free(b);
    }
    if (t_case("events/errors/null")) {
        wk_event *e = wk_event_new(NULL);
        T_CHECK(!e, "wk_event_new(NULL) returned an event");
        wk_event_free(e);
        t_check_error("wk_event_new(NULL)", WK_ERR_ARGUMENT, wk_last_status(), "event_new", "device", (const char *)NULL);
        t_check_error("wk_event_record(NULL)", WK_ERR_ARGUMENT, wk_event_record(NULL), "event", (const char *)NULL);
        t_check_error("wk_event_synchronize(NULL)", WK_ERR_ARGUMENT, wk_event_synchronize(NULL), "event",
                      (const char *)NULL);
        wk_event_free(NULL);                                   /* fine */
        wk_event *a = new_event(cpu);
        if (a) {
            T_OK(wk_event_record(a));
            double ms = 123;
            t_check_error("elapsed(NULL, a)", WK_ERR_ARGUMENT, wk_event_elapsed_ms(NULL, a, &ms), "start",
                          (const char *)NULL);
            T_CHECK(ms == 0, "a failed elapsed left %g in its output (expected 0)", ms);
            t_check_error("elapsed(a, NULL)", WK_ERR_ARGUMENT, wk_event_elapsed_ms(a, NULL, &ms), "end",
                          (const char *)NULL);
            t_check_error("elapsed(a, a, NULL)", WK_ERR_ARGUMENT, wk_event_elapsed_ms(a, a, NULL), "output",
                          (const char *)NULL);
        }
        wk_event_free(a);
    }
    if (t_case("events/errors/never_recorded")) {
        wk_event *a = new_event(cpu), *b = new_event(cpu);
        if (a && b) {
            double ms = 0;
            t_check_error("synchronize before record", WK_ERR_ARGUMENT, wk_event_synchronize(a), "never recorded",
                          (const char *)NULL);
            t_check_error("elapsed, neither recorded", WK_ERR_ARGUMENT, wk_event_elapsed_ms(a, b, &ms), "neither",
                          (const char *)NULL);
            T_OK(wk_event_record(a));
            t_check_error("elapsed, end not recorded", WK_ERR_ARGUMENT, wk_event_elapsed_ms(a, b, &ms), "end",
                          "never recorded", (const char *)NULL);
            t_check_error("elapsed, start not recorded", WK_ERR_ARGUMENT, wk_event_elapsed_ms(b, a, &ms), "start",
                          "never recorded", (const char *)NULL);
            T_OK(wk_event_record(b));
            T_OK(wk_event_elapsed_ms(a, b, &ms));
            T_OK(wk_event_synchronize(b));
        }
        wk_event_free(a);
        wk_event_free(b);
    }
    if (t_case("events/keeps_its_device_open")) {
        wk_device *d = wk_device_open("cpu");
        wk_event *a = d ? new_event(d) : NULL;
        wk_device_close(d);                        /* the event still holds it */
        if (a) {
            T_OK(wk_event_record(a));
            T_OK(wk_event_synchronize(a));
            double ms = -1;
            T_OK(wk_event_elapsed_ms(a, a, &ms));
            T_CHECK(ms == 0, "elapsed(a, a) = %g", ms);
        }
        wk_event_free(a);
    }
    if (t_case("graphs/cpu_records_none")) {
        T_CHECK(!wk_supports(t_dev(), "graph", WK_F32), "wk_supports(cpu, \"graph\") is true");
        const wk_status st = wk_graph_begin(t_dev());
        T_CHECK(st == WK_ERR_UNSUPPORTED && strstr(wk_last_error(), "graph"), "graph_begin on the cpu gave %s: %s",
                wk_status_name(st), wk_last_error());
        wk_tensor *x = t_own(wk_ones(t_dev(), WK_F32, WK_SHAPE(4)));   /* ops still run at once */
        T_CHECK(x != NULL, "an op after the refused begin failed: %s", wk_last_error());
        T_CHECK(!wk_graph_end(t_dev()) && wk_last_status() == WK_ERR_UNSUPPORTED, "graph_end on the cpu");
        wk_clear_error();
    }
    if (t_case("graphs/errors/null")) {
        T_CHECK(wk_graph_begin(NULL) == WK_ERR_ARGUMENT, "graph_begin(NULL)");
        T_CHECK(!wk_graph_end(NULL) && wk_last_status() == WK_ERR_ARGUMENT, "graph_end(NULL)");
        T_CHECK(wk_graph_launch(NULL) == WK_ERR_ARGUMENT, "graph_launch(NULL)");
        wk_graph_free(NULL);
        wk_clear_error();
    }

    t_each_gpu(on_gpu, NULL);                 /* the same on every GPU device */
}
