/* matvec_bench.c — the one-row products of an 8B decode step (Llama-3 8B
 * shapes, bf16), on one GPU and on one rank of two: microseconds and GB/s
 * of W read, each the mean of 200 products back to back, W cycled among
 * enough copies to miss the L2. MV_GRAPH=1 records the 200 products as a
 * graph and times one replay (device time without the host's issue
 * time, as a recorded decode step runs them); without it they are issued
 * one by one. WICK_GEMV=0 gives them to the BLAS (matmul.hip).
 *   cc -O2 -Iinclude bench/matvec_bench.c build/libwick.a -lm -ldl -pthread -o build/matvec-bench
 *   MV_GRAPH=1 build/matvec-bench [cuda:0]   (the CUDA plugin beside build/) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
int main(int argc, char **argv)
{
    wk_device *dev = wk_device_open(argc > 1 ? argv[1] : "cuda:0");
    if (!dev) { printf("%s\n", wk_last_error()); return 1; }
    static const struct { const char *name; int64_t n, k; } sh[] = {
        { "qkv 6144x4096", 6144, 4096 }, { "o 4096x4096", 4096, 4096 }, { "gu 28672x4096", 28672, 4096 },
        { "down 4096x14336", 4096, 14336 }, { "head 128256x4096", 128256, 4096 },
        { "r.qkv 3072x4096", 3072, 4096 }, { "r.o 4096x2048", 4096, 2048 }, { "r.gu 14336x4096", 14336, 4096 },
        { "r.down 4096x7168", 4096, 7168 }, { "r.head 64128x4096", 64128, 4096 },
    };
    for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++) {
        wk_scope_begin();
        const int64_t n = sh[s].n, k = sh[s].k;
        const double bytes = 2.0 * n * k;
        int copies = (int)(400e6 / bytes) + 1;
        if (copies > 64) copies = 64;
        wk_tensor *w[64], *x = wk_rand_uniform(dev, WK_BF16, WK_SHAPE(1, k), -1, 1);
        for (int c = 0; c < copies; c++) w[c] = wk_rand_uniform(dev, WK_BF16, WK_SHAPE(n, k), -1, 1);
        for (int c = 0; c < copies; c++) wk_matmul(x, wk_transpose(w[c], 0, 1));
        wk_device_synchronize(dev);
        wk_event *a = wk_event_new(dev), *b = wk_event_new(dev);
        const int reps = 200;
        const int graph = getenv("MV_GRAPH") != NULL;
        wk_graph *g = NULL;
        if (graph) wk_graph_begin(dev);
        if (!graph) wk_event_record(a);
        for (int r = 0; r < reps; r++) {
            wk_scope_begin();
            wk_matmul(x, wk_transpose(w[r % copies], 0, 1));
            wk_scope_end();
        }
        if (graph) {
            g = wk_graph_end(dev);
            if (!g) printf("graph: %s\n", wk_last_error());
            wk_graph_launch(g);
            wk_event_record(a);
            wk_graph_launch(g);
        }
        wk_event_record(b);
        double ms = 0;
        wk_event_elapsed_ms(a, b, &ms);
        const double us = 1e3 * ms / reps;
        printf("%-20s %8.2f us %7.0f GB/s\n", sh[s].name, us, bytes / us / 1e3);
        wk_event_free(a);
        wk_event_free(b);
        wk_graph_free(g);
        wk_scope_end();
    }
    wk_device_close(dev);
    return 0;
}
