/* paged_bench.c — wk_paged_attention on one device: decode steps of B
 * sequences of L keys each (one query token per sequence; Llama-3 8B
 * heads: Hq 32, Hkv 8, D 128; blocks of 16 positions; bf16), the pool's
 * block ids shuffled, and one step mixing a 512-token prefill chunk with
 * 32 decode rows. Per shape: microseconds per call, the mean of 50 calls
 * back to back (each waits for its id check's answer, not for the
 * attention), then the same 50 calls recorded as a graph and one replay
 * timed (no id check, no host wait: the kernel's own time), and GB/s of
 * the K and V rows the tokens read; beside them wk_attention's decode on
 * the same keys laid out densely ([B, Hkv, L, D], one query each), which
 * reads the same bytes.
 *   cc -O2 -Iinclude bench/paged_bench.c build/libwick.a -lm -ldl -pthread -o build/paged-bench
 *   build/paged-bench [cuda:0]   (the GPU plugin beside build/) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"

enum { HQ = 32, HKV = 8, D = 128, BS = 16, REPS = 50 };

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* device time per call of fn over REPS calls, eager and replayed from a graph (ms) */
typedef wk_tensor *(*call_fn)(void *arg);
static void time_calls(wk_device *dev, call_fn fn, void *arg, double *eager_us, double *graph_us)
{
    wk_event *a = wk_event_new(dev), *b = wk_event_new(dev);
    double ms = 0;
    for (int r = 0; r < 3; r++) wk_release(fn(arg));            /* warm up */
    wk_device_synchronize(dev);
    wk_event_record(a);
    for (int r = 0; r < REPS; r++) wk_release(fn(arg));
    wk_event_record(b);
    *eager_us = wk_event_elapsed_ms(a, b, &ms) == WK_OK ? 1e3 * ms / REPS : -1;
    *graph_us = -1;
    if (wk_supports(dev, "graph", WK_BF16) && wk_graph_begin(dev) == WK_OK) {
        wk_scope_begin();
        for (int r = 0; r < REPS; r++) fn(arg);
        wk_scope_end();
        wk_graph *g = wk_graph_end(dev);
        if (g && wk_graph_launch(g) == WK_OK) {
            wk_event_record(a);
            wk_graph_launch(g);
            wk_event_record(b);
            if (wk_event_elapsed_ms(a, b, &ms) == WK_OK) *graph_us = 1e3 * ms / REPS;
        }
        wk_graph_free(g);
    }
    wk_event_free(a);
    wk_event_free(b);
}

typedef struct paged_in {
    wk_tensor *q, *kp, *vp, *bt, *seq, *pos;
} paged_in;
static wk_tensor *call_paged(void *arg)
{
    const paged_in *p = arg;
    return wk_paged_attention(p->q, p->kp, p->vp, p->bt, p->seq, p->pos, NULL);
}
typedef struct dense_in {
    wk_tensor *q, *k, *v;
} dense_in;
static wk_tensor *call_dense(void *arg)
{
    const dense_in *p = arg;
    const wk_attention_opts o = { .causal = true };
    return wk_attention(p->q, p->k, p->v, &o);
}

/* B sequences of L keys; a decode row each, and (chunk > 0) sequence 0
 * also a prefill chunk of its last `chunk` positions */
static void run(wk_device *dev, int64_t B, int64_t L, int64_t chunk)
{
    wk_scope_begin();
    const int64_t mb = (L + BS - 1) / BS, NB = B * mb + 1, T = B + (chunk > 1 ? chunk - 1 : 0);
    uint32_t *perm = malloc((size_t)NB * 4), *bt = malloc((size_t)(B * mb) * 4);
    uint32_t *seq = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
    uint64_t x = 42;
    for (int64_t i = 0; i < NB; i++) perm[i] = (uint32_t)i;
    for (int64_t i = NB - 1; i > 0; i--) {
        const int64_t j = (int64_t)(lcg(&x) % (uint64_t)(i + 1));
        const uint32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < B * mb; i++) bt[i] = perm[i];
    int64_t t = 0;
    for (int64_t i = chunk > 1 ? chunk - 1 : 0; i > 0; i--, t++) seq[t] = 0, pos[t] = (uint32_t)(L - 1 - i);
    for (int64_t s = 0; s < B; s++, t++) seq[t] = (uint32_t)s, pos[t] = (uint32_t)(L - 1);
    paged_in p = { wk_rand_uniform(dev, WK_BF16, WK_SHAPE(T, HQ, D), -1, 1),
                   wk_rand_uniform(dev, WK_BF16, WK_SHAPE(NB, BS, HKV, D), -1, 1),
                   wk_rand_uniform(dev, WK_BF16, WK_SHAPE(NB, BS, HKV, D), -1, 1),
                   wk_from_host(dev, WK_U32, WK_SHAPE(B, mb), bt), wk_from_host(dev, WK_U32, WK_SHAPE(T), seq),
                   wk_from_host(dev, WK_U32, WK_SHAPE(T), pos) };
    double keys = 0;
    for (int64_t i = 0; i < T; i++) keys += (double)pos[i] + 1;
    const double bytes = keys * HKV * D * 2 * 2;                 /* K and V rows, bf16 */
    double pe, pg, de = -1, dg = -1;
    if (!p.q || !p.kp || !p.vp || !p.bt || !p.seq || !p.pos) {
        printf("B %lld L %lld: inputs: %s\n", (long long)B, (long long)L, wk_last_error());
        goto out;
    }
    time_calls(dev, call_paged, &p, &pe, &pg);
    if (chunk <= 1) {
        dense_in d = { wk_rand_uniform(dev, WK_BF16, WK_SHAPE(B, HQ, 1, D), -1, 1),
                       wk_rand_uniform(dev, WK_BF16, WK_SHAPE(B, HKV, L, D), -1, 1),
                       wk_rand_uniform(dev, WK_BF16, WK_SHAPE(B, HKV, L, D), -1, 1) };
        if (d.q && d.k && d.v) time_calls(dev, call_dense, &d, &de, &dg);
    }
    printf("B %4lld  L %5lld  T %4lld  paged %9.1f us (graph %9.1f us, %6.0f GB/s)   dense attention %9.1f us (graph %9.1f us)\n",
           (long long)B, (long long)L, (long long)T, pe, pg, pg > 0 ? bytes / pg / 1e3 : 0, de, dg);
out:
    free(perm), free(bt), free(seq), free(pos);
    wk_scope_end();
}

int main(int argc, char **argv)
{
    wk_device *dev = wk_device_open(argc > 1 ? argv[1] : "cuda:0");
    if (!dev) {
        printf("%s\n", wk_last_error());
        return 1;
    }
    wk_device_info info;
    if (wk_device_info_get(dev, &info) == WK_OK) printf("%s: Hq %d, Hkv %d, D %d, BS %d, bf16\n", info.model, HQ, HKV, D, BS);
    static const int64_t shapes[][3] = { { 1, 4096, 0 },  { 8, 4096, 0 },  { 32, 2048, 0 }, { 64, 2048, 0 },
                                         { 128, 1024, 0 }, { 256, 512, 0 }, { 32, 2048, 512 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) run(dev, shapes[s][0], shapes[s][1], shapes[s][2]);
    wk_device_close(dev);
    return 0;
}
