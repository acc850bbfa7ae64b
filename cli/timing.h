/* timing.h — host-clock timing helpers shared by the benchmark drivers
 * (cli/bench.c, bench/gpu_bench.c, bench/launch_overhead.c): a monotonic clock in ms and the
 * median of a sample. */
#ifndef WICK_CLI_TIMING_H
#define WICK_CLI_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double wk_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static inline int wk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median of v[0..n) (sorts v); 0 when n <= 0 */
static inline double wk_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, wk_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif /* WICK_CLI_TIMING_H */
