/* qdot_bench.c — wk_qmatmul on the cpu: the exact path (weights decoded to
 * f32, f32 sums) against the integer path (WICK_CPU_QDOT=1: x quantized to
 * q8 blocks, integer dot products; docs/cpu-qdot.md) and its C kernels
 * (WICK_CPU_QDOT=portable), in one run, at the shapes of SmolLM2-135M and
 * of an 8B Llama's FFN (weights of 15 to 60 MB, larger than the caches).
 *
 *   build/wick-qdot-bench [--reps N] [--case SUBSTR]   (reps default 15)
 *
 * Each case: weights wk_quantize'd from uniform values, x uniform; 2
 * untimed calls, then the median of N timed calls (the result's creation
 * included, its release not). Prints ms per call and, for m = 1, the
 * weight bytes streamed per second; for m > 1, integer or float
 * multiply-adds per second (2 m n k / time). The exact path is slow for
 * the large cases, so the C kernels and the exact path take reps / 3 there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_ext.h"
#include "../cli/timing.h"

typedef struct bcase {
    const char *name;
    wk_dtype dt;
    int64_t m, n, k;
} bcase;

static const bcase CASES[] = {
    { "smollm2 ffn_up q4_1", WK_Q4_1, 1, 1536, 576 },    { "smollm2 ffn_down q4_1", WK_Q4_1, 1, 576, 1536 },
    { "smollm2 output q8_0", WK_Q8_0, 1, 49152, 576 },   { "smollm2 ffn_up q4_1", WK_Q4_1, 64, 1536, 576 },
    { "smollm2 output q8_0", WK_Q8_0, 64, 49152, 576 },  { "8b ffn_up q4_0", WK_Q4_0, 1, 14336, 4096 },
    { "8b ffn_up q4_k", WK_Q4_K, 1, 14336, 4096 },       { "8b ffn_down q6_k", WK_Q6_K, 1, 4096, 14336 },
    { "8b ffn_up q4_k", WK_Q4_K, 64, 14336, 4096 },
};

static double time_case(const wk_tensor *x, const wk_tensor *w, const char *mode, int reps)
{
    setenv("WICK_CPU_QDOT", mode, 1);
    wk_env_refresh();   /* the knob is read once, then on a refresh */
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int i = 0; i < 2; i++) wk_release(wk_qmatmul(x, w));
    for (int i = 0; i < reps; i++) {
        const double t0 = wk_now_ms();
        wk_tensor *y = wk_qmatmul(x, w);
        t[i] = wk_now_ms() - t0;
        if (!y) {
            fprintf(stderr, "qmatmul: %s\n", wk_last_error());
            exit(1);
        }
        wk_release(y);
    }
    const double med = wk_median(t, reps);
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    int reps = 15;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    }
    if (reps < 3) reps = 3;
    wk_device *dev = wk_device_open("cpu");
    if (!dev) return 1;
    printf("| case | m x n x k | weight MB | exact ms | integer ms | integer (C) ms | integer / exact speed | integer rate |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const bcase *b = &CASES[c];
        char full[96];
        snprintf(full, sizeof full, "%s m=%lld", b->name, (long long)b->m);
        if (only && !strstr(full, only)) continue;
        wk_tensor *wf = wk_rand_uniform(dev, WK_F32, WK_SHAPE(b->n, b->k), -1, 1);
        wk_tensor *w = wf ? wk_quantize(wf, b->dt) : NULL;
        wk_tensor *x = wk_rand_uniform(dev, WK_F32, WK_SHAPE(b->m, b->k), -1, 1);
        wk_release(wf);
        if (!w || !x) {
            fprintf(stderr, "%s: %s\n", b->name, wk_last_error());
            return 1;
        }
        const bool big = b->n * b->k > 10000000;
        const double te = time_case(x, w, "0", big ? reps / 3 : reps), ti = time_case(x, w, "1", reps),
                     tp = time_case(x, w, "portable", big ? reps / 3 : reps);
        const double mb = (double)wk_tensor_nbytes(w) / 1e6;
        char rate[64];
        if (b->m == 1) snprintf(rate, sizeof rate, "%.1f GB/s of weights", mb / ti);
        else snprintf(rate, sizeof rate, "%.1f G multiply-adds/s", (double)b->m * (double)b->n * (double)b->k / ti / 1e6);
        printf("| %s | %lld x %lld x %lld | %.1f | %.3f | %.3f | %.3f | %.2fx | %s |\n", b->name, (long long)b->m,
               (long long)b->n, (long long)b->k, mb, te, ti, tp, te / ti, rate);
        fflush(stdout);
        wk_release(w);
        wk_release(x);
    }
    unsetenv("WICK_CPU_QDOT");
    wk_env_refresh();
    wk_device_close(dev);
    return 0;
}
