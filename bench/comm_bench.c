/* comm_bench.c — build/wick-comm-bench: the time of wick_comm.h's
 * all_reduce across the GPUs of one host (bench/comm_vs_torch.py runs it
 * beside torch.distributed's all_reduce over NCCL, in the same run).
 *
 *   wick-comm-bench [--kind cuda|rocm] [--ranks N] [--dtype bf16|f16|f32]
 *                   [--sizes 8K,1M,16M,256M] [--reps R] [--norm D]
 *
 * One thread per GPU (cli/ranks.h), every rank holding a tensor of each
 * size (bytes; K/M suffixes) filled with ones. Per size: 5 untimed
 * all_reduces, then R, each between two of the rank's device events; the
 * median of rank 0's R times. The first result is checked (every element
 * = N). Prints one JSON object per size: ms, algorithm bandwidth
 * (bytes / time) and bus bandwidth (algorithm bandwidth x 2 (N - 1) / N,
 * NCCL's convention: the fraction of the links' speed an all_reduce
 * reaches, the same for any N).
 *
 * --norm D: instead, per size, rows of D elements through
 * wk_all_reduce_add_rms_norm (a tensor-parallel decode step's all_reduce,
 * residual add and norm; fused where the path allows) and through its two
 * calls (wk_all_reduce, then wk_add_rms_norm), R calls of each back to
 * back between two events (the device's time per call when the host
 * issues faster than the device runs; x all zeros, so repeated sums stay
 * finite).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_comm.h"
#include "../cli/ranks.h"
#include "../cli/timing.h"

#define MAX_SIZES 16

typedef struct comm_cfg {
    wk_dtype dt;
    int n_sizes, reps;
    int64_t norm_d;
    int64_t sizes[MAX_SIZES];
} comm_cfg;

/* --norm: the fused call against its two calls, per size */
static int rank_norm(wk_comm *comm, const comm_cfg *c, wk_event *e0, wk_event *e1)
{
    wk_device *dev = wk_comm_device(comm);
    const int rank = wk_comm_rank(comm), n = wk_comm_size(comm);
    int rc = 0;
    for (int s = 0; s < c->n_sizes && !rc; s++) {
        const int64_t D = c->norm_d, rows = c->sizes[s] / (int64_t)wk_dtype_size(c->dt) / D;
        wk_tensor *x = wk_zeros(dev, c->dt, WK_SHAPE(rows > 0 ? rows : 1, D));
        wk_tensor *r = wk_ones(dev, c->dt, WK_SHAPE(rows > 0 ? rows : 1, D));
        wk_tensor *w = wk_ones(dev, c->dt, WK_SHAPE(D));
        rc = !x || !r || !w;
        for (int fused = 1; fused >= 0 && !rc; fused--) {
            for (int i = -5; i < c->reps && !rc; i++) {
                if (i == 0) rc = wk_event_record(e0) != WK_OK;
                wk_tensor *sum = NULL, *h;
                if (fused) h = wk_all_reduce_add_rms_norm(comm, x, r, w, 1e-5, false, &sum);
                else h = wk_all_reduce(comm, x) == WK_OK ? wk_add_rms_norm(x, r, w, 1e-5, false, &sum) : NULL;
                rc = rc || !h;
                wk_release(h);
                wk_release(sum);
            }
            double ms = 0;
            rc = rc || wk_event_record(e1) != WK_OK || wk_event_elapsed_ms(e0, e1, &ms) != WK_OK;
            if (rc) fprintf(stderr, "wick-comm-bench: rank %d: %s\n", rank, wk_last_error());
            else if (rank == 0) {
                printf("{\"what\": \"all_reduce_add_rms_norm\", \"impl\": \"%s\", \"ranks\": %d, \"dtype\": \"%s\", "
                       "\"rows\": %lld, \"D\": %lld, \"reps\": %d, \"us_per_call\": %.2f}\n",
                       fused ? "one call" : "two calls", n, wk_dtype_name(c->dt), (long long)rows, (long long)D, c->reps,
                       1e3 * ms / c->reps);
                fflush(stdout);
            }
        }
        wk_release(x), wk_release(r), wk_release(w);
    }
    return rc;
}

static int rank_run(wk_comm *comm, void *arg)
{
    const comm_cfg *c = arg;
    wk_device *dev = wk_comm_device(comm);
    const int rank = wk_comm_rank(comm), n = wk_comm_size(comm);
    const size_t es = wk_dtype_size(c->dt);
    wk_event **ev = calloc((size_t)c->reps + 1, sizeof *ev);
    double *ms = calloc((size_t)c->reps, sizeof *ms);
    int rc = 0;
    for (int i = 0; ev && i <= c->reps; i++)
        if (!(ev[i] = wk_event_new(dev))) rc = 1;
    if (!ev || !ms) rc = 1;
    if (!rc && c->norm_d > 0) {
        rc = rank_norm(comm, c, ev[0], ev[1]);
        for (int i = 0; i <= c->reps; i++) wk_event_free(ev[i]);
        free(ev);
        free(ms);
        return rc;
    }
    for (int s = 0; s < c->n_sizes && !rc; s++) {
        const int64_t count = c->sizes[s] / (int64_t)es;
        wk_tensor *x = wk_full(dev, c->dt, WK_SHAPE(count), 1.0);
        rc = !x || wk_all_reduce(comm, x) != WK_OK;
        if (!rc) {   /* the first result: n everywhere (its last element read) */
            wk_tensor *last = wk_narrow(x, 0, count - 1, 1);
            wk_tensor *f = last ? wk_to_dtype(last, WK_F64) : NULL;
            double v = 0;
            rc = !f || wk_to_host(f, &v, sizeof v) != WK_OK || v != (double)n;
            if (rc) fprintf(stderr, "wick-comm-bench: rank %d: all_reduce gave %g, not %d\n", rank, v, n);
            wk_release(f);
            wk_release(last);
        }
        for (int i = 0; i < 4 && !rc; i++) rc = wk_all_reduce(comm, x) != WK_OK;
        for (int i = 0; i < c->reps && !rc; i++)
            rc = wk_event_record(ev[i]) != WK_OK || wk_all_reduce(comm, x) != WK_OK;
        if (!rc) rc = wk_event_record(ev[c->reps]) != WK_OK;
        for (int i = 0; i < c->reps && !rc; i++) rc = wk_event_elapsed_ms(ev[i], ev[i + 1], &ms[i]) != WK_OK;
        if (rc) fprintf(stderr, "wick-comm-bench: rank %d: %s\n", rank, wk_last_error());
        else if (rank == 0) {
            const double med = wk_median(ms, c->reps), bytes = (double)(count * (int64_t)es);
            const double algbw = bytes / (med * 1e-3) / 1e9;
            printf("{\"what\": \"all_reduce\", \"impl\": \"wick\", \"ranks\": %d, \"dtype\": \"%s\", \"bytes\": %.0f, "
                   "\"reps\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"algbw_gbs\": %.2f, \"busbw_gbs\": %.2f}\n",
                   n, wk_dtype_name(c->dt), bytes, c->reps, med, ms[0], algbw, algbw * 2.0 * (n - 1) / n);
            fflush(stdout);
        }
        wk_release(x);
    }
    for (int i = 0; ev && i <= c->reps; i++) wk_event_free(ev[i]);
    free(ev);
    free(ms);
    return rc;
}

static int parse_sizes(const char *s, int64_t *out)
{
    int n = 0;
    while (*s && n < MAX_SIZES) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) return -1;
        if (*end == 'K' || *end == 'k') v <<= 10, end++;
        else if (*end == 'M' || *end == 'm') v <<= 20, end++;
        else if (*end == 'G' || *end == 'g') v <<= 30, end++;
        out[n++] = v;
        if (*end && *end != ',') return -1;
        s = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *kind = "cuda", *dtype = "bf16", *sizes = "8K,64K,1M,16M,256M";
    int ranks = 0;
    comm_cfg c = { .reps = 20 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--kind") && v) kind = argv[++i];
        else if (!strcmp(a, "--ranks") && v) ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--dtype") && v) dtype = argv[++i];
        else if (!strcmp(a, "--sizes") && v) sizes = argv[++i];
        else if (!strcmp(a, "--reps") && v) c.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--norm") && v) c.norm_d = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: wick-comm-bench [--kind cuda|rocm] [--ranks N] [--dtype bf16|f16|f32] "
                            "[--sizes 8K,1M,256M] [--reps R] [--norm D]\n");
            return 2;
        }
    }
    c.dt = !strcmp(dtype, "f32") ? WK_F32 : !strcmp(dtype, "f16") ? WK_F16 : WK_BF16;
    c.n_sizes = parse_sizes(sizes, c.sizes);
    if (!ranks) ranks = wk_device_count(kind);
    if (c.n_sizes <= 0 || c.reps < 1 || ranks < 1) {
        fprintf(stderr, "wick-comm-bench: bad sizes or reps, or no %s device\n", kind);
        return 2;
    }
    for (int s = 0; s < c.n_sizes; s++)
        if (c.sizes[s] % (int64_t)wk_dtype_size(c.dt)) {
            fprintf(stderr, "wick-comm-bench: %lld bytes is not a whole number of %s elements\n",
                    (long long)c.sizes[s], dtype);
            return 2;
        }
    return wk_run_ranks(kind, ranks, rank_run, &c, "wick-comm-bench") != 0;
}
