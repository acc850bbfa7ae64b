/* launch_overhead.c — wick-launch-overhead: the host cost of one small op.
 *
 * Runs the chain that bench/gpu_bench.c's launch_chain case times on a GPU
 * (x = wk_add(x, one), releasing the old x, for 1-element f32 tensors) on
 * any device, and prints the time per add. On the cpu device the add
 * itself is a few instructions, so the figure is nearly all of wick's own
 * per-op host work: the op front-end, tensor allocation and release, and
 * the backend dispatch. Run it under `valgrind --tool=callgrind` for
 * instruction counts (repeatable, unlike times); --scope runs the chain
 * inside a wk_scope_begin/end pair, as model code would.
 *
 * Usage: wick-launch-overhead [--device NAME] [--n ADDS] [--reps R] [--scope]
 * Prints one line: device, adds per chain, median ns per add over R
 * chains, the minimum, and whether the final value was right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "../cli/timing.h"

static int fail(const char *what)
{
    fprintf(stderr, "wick-launch-overhead: %s: %s\n", what, wk_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *dev_name = "cpu";
    long n = 10000, reps = 9;
    int scope = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) dev_name = argv[++i];
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) n = atol(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atol(argv[++i]);
        else if (strcmp(argv[i], "--scope") == 0) scope = 1;
        else {
            fprintf(stderr, "usage: wick-launch-overhead [--device NAME] [--n ADDS] [--reps R] [--scope]\n");
            return 2;
        }
    }
    if (n < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "wick-launch-overhead: --n and --reps must be positive (reps <= 1000)\n");
        return 2;
    }
    wk_device *dev = wk_device_open(dev_name);
    if (!dev) return fail("device_open");
    wk_tensor *one = wk_full(dev, WK_F32, WK_SHAPE(1), 1.0);
    if (!one) return fail("full");
    double t[1000];
    int right = 1;
    for (long r = -1; r < reps; r++) {            /* r = -1: warm-up chain */
        if (scope) wk_scope_begin();
        wk_tensor *x = wk_full(dev, WK_F32, WK_SHAPE(1), 0.5);
        if (!x || wk_device_synchronize(dev) != WK_OK) return fail("full");
        double t0 = wk_now_ms();
        for (long i = 0; i < n; i++) {
            wk_tensor *y = wk_add(x, one);
            wk_release(x);
            x = y;
            if (!x) return fail("add");
        }
        if (wk_device_synchronize(dev) != WK_OK) return fail("synchronize");
        double ms = wk_now_ms() - t0;
        double v = 0;
        int64_t at = 0;
        if (wk_item(x, &at, &v) != WK_OK) return fail("item");
        right = right && v == 0.5 + (double)n;
        if (scope) wk_scope_end();
        else wk_release(x);
        if (r >= 0) t[r] = ms * 1e6 / (double)n;
    }
    double lo = t[0];
    for (long r = 1; r < reps; r++) lo = t[r] < lo ? t[r] : lo;
    printf("device %s: %ld adds per chain, %.1f ns per add (median of %ld chains; min %.1f)%s, value %s\n",
           dev_name, n, wk_median(t, (int)reps), reps, lo, scope ? " in a scope" : "",
           right ? "right" : "WRONG");
    wk_release(one);
    wk_device_close(dev);
    return right ? 0 : 1;
}
