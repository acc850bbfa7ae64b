/* comm_checks.c — collectives (wick_comm.h) on the GPUs of this machine,
 * the part CI cannot run (no GPU, no NCCL there):
 *  - the library: wk_comm_available and wk_supports(dev, "all_reduce")
 *    agree; with WICK_NCCL_LIB=none a child process gets WK_ERR_UNSUPPORTED
 *    with the reason;
 *  - every GPU of the kind as one rank of a wk_comm_init_all communicator,
 *    one thread per GPU (one rank when the machine has one GPU):
 *    all_reduce of f32, bf16, f16 and i32 tensors against sums made here,
 *    on a transposed view too; all_gather along dims 0 and 1; broadcast
 *    from the last rank; each between wick ops on the same stream with no
 *    synchronisation (x = exp(0) * rank ..., reduce, then y = x * 2), so
 *    a collective that ignored the stream order would read or leave stale
 *    values; all_reduce_add_rms_norm (fused on the peer-memory path)
 *    against add_rms_norm of the sum, interleaved with plain all_reduces;
 *  - a one-rank-per-process communicator: wk_comm_unique_id +
 *    wk_comm_init_rank with a world of 1, and wk_comm_init_env from
 *    torchrun's variables (RANK=0, WORLD_SIZE=1, MASTER_ADDR, MASTER_PORT);
 *  - the bus bandwidth of all_reduce on 256 MiB of bf16 (printed; with one
 *    rank NCCL only copies, so the figure means something from 2 GPUs);
 *  - wk_comm_abort: from 2 GPUs, the last rank aborts while the others
 *    wait in an all_reduce: they come back (their stream drains) within
 *    30 s, see the communicator aborted, and every later call fails
 *    naming it; with one GPU, an aborted communicator refuses its next
 *    calls and a new one works after it is freed.
 * Usage: wick-comm-checks [--kind cuda|rocm]   (WICK_NCCL_LIB names the
 * library when it is not on the loader's path)
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick.h"
#include "wick_comm.h"

static int passed, failed;
static void check(const char *what, bool ok, const char *detail)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL %s: %s (%s)\n", what, detail, wk_last_error());
    }
}

#define MAXG 16

typedef struct rank_job {
    wk_comm *comm;
    int rank, n;
    char fail[512];
} rank_job;

static bool read_f(const wk_tensor *t, float *out, size_t n)
{
    wk_tensor *f = wk_to_dtype(t, WK_F32);
    bool ok = f && wk_to_host(f, out, n * sizeof(float)) == WK_OK;
    wk_release(f);
    return ok;
}

static void *rank_main(void *arg)
{
    rank_job *j = arg;
    wk_device *dev = wk_comm_device(j->comm);
    const int r = j->rank, n = j->n;
    const int64_t R = 37, C = 1029;
    float *got = malloc((size_t)(R * C * (n > 1 ? n : 1)) * sizeof(float));
    j->fail[0] = 0;
#define JFAIL(...) do { if (!j->fail[0]) snprintf(j->fail, sizeof j->fail, __VA_ARGS__); } while (0)
    static const wk_dtype dts[] = { WK_F32, WK_BF16, WK_F16, WK_I32 };
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        /* x[i] = (i % 13) + rank: the + rank made on the device right before the reduce */
        for (int64_t i = 0; i < R * C; i++) got[i] = (float)(i % 13);
        wk_tensor *m = wk_from_host(dev, WK_F32, WK_SHAPE(R * C), got);
        wk_tensor *xf = m ? wk_affine(m, 1.0, (double)r) : NULL;
        wk_tensor *x0 = xf ? wk_to_dtype(xf, dts[k]) : NULL;
        wk_tensor *x = x0 ? wk_reshape(x0, WK_SHAPE(R, C)) : NULL;
        if (!x || wk_all_reduce(j->comm, x) != WK_OK) JFAIL("all_reduce %s: %s", wk_dtype_name(dts[k]), wk_last_error());
        wk_tensor *y = x ? wk_affine(x, 2.0, 0.0) : NULL;   /* after the reduce, on the stream */
        if (y && read_f(y, got, (size_t)(R * C))) {
            for (int64_t i = 0; i < R * C; i++) {
                const double want = 2.0 * ((double)(i % 13) * n + n * (n - 1) / 2.0);
                if (got[i] != (float)want) {
                    JFAIL("all_reduce %s: element %lld is %g, want %g", wk_dtype_name(dts[k]), (long long)i, got[i], want);
                    break;
                }
            }
        } else JFAIL("all_reduce %s: no result: %s", wk_dtype_name(dts[k]), wk_last_error());
        wk_release(y), wk_release(x), wk_release(x0), wk_release(xf), wk_release(m);
    }
    /* many all_reduces in a row with no host wait between them (the
     * peer-memory path's slots and epochs reused), odd sizes (a 16-bit
     * tensor's last word half used) and sizes on both sides of its limits
     * (65536 f32 or 131072 16-bit elements, then NCCL):
     * x = k + rank everywhere; each result summed on the device in f64 */
    {
        enum { ITERS = 120 };
        static const int64_t sizes[] = { 1, 3, 257, 4097, 65536, 65537, 131072, 131073, 300 };
        wk_tensor *sums[ITERS] = { 0 };
        for (int k = 0; k < ITERS; k++) {
            const int64_t sz = sizes[k % 9];
            const wk_dtype dt = k % 3 == 0 ? WK_F32 : k % 3 == 1 ? WK_BF16 : WK_F16;
            wk_tensor *x = wk_full(dev, dt, WK_SHAPE(sz), (double)(k % 50 + r));
            if (!x || wk_all_reduce(j->comm, x) != WK_OK) JFAIL("all_reduce in a row, call %d: %s", k, wk_last_error());
            wk_tensor *xd = x ? wk_to_dtype(x, WK_F64) : NULL;
            sums[k] = xd ? wk_sum(xd, NULL, 0, false) : NULL;
            wk_release(xd), wk_release(x);
        }
        for (int k = 0; k < ITERS; k++) {
            double v = -1;
            const double want = (double)sizes[k % 9] * ((double)(k % 50) * n + n * (n - 1) / 2.0);
            if (!sums[k] || wk_to_host(sums[k], &v, sizeof v) != WK_OK || v != want) {
                JFAIL("all_reduce in a row, call %d (%lld elements): sum %g, want %g", k, (long long)sizes[k % 9], v, want);
            }
            wk_release(sums[k]);
        }
    }
    /* all_reduce_add_rms_norm (the fused kernel on the peer-memory path,
     * else the two calls) against add_rms_norm of the sum made here:
     * x = (i % 7 - 3) * 0.5 + rank (exact sums), residual and weight the
     * same on every rank; each call followed by a plain all_reduce with no
     * host wait (the two share the path's slots and epochs). The sum and
     * the reduced x must match to the bit (same rounding), the norm within
     * one unit of the dtype's last place (its sum of squares may add in
     * another order). Odd D (16-bit: half a word per row) and rows past
     * the path's limit take the two calls. */
    {
        static const int64_t shapes[][2] = { { 1, 4096 }, { 3, 4096 }, { 32, 4096 }, { 2, 1029 }, { 5, 64 }, { 40, 4096 } };
        static const wk_dtype ndt[] = { WK_BF16, WK_F32, WK_F16 };
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t di = 0; di < 3; di++)
                for (int variant = 0; variant < 3; variant++) {   /* weight, no weight, Gemma's 1 + weight */
                    const int64_t rows = shapes[si][0], D = shapes[si][1], N = rows * D;
                    const wk_dtype dt = ndt[di];
                    float *h = malloc((size_t)N * 3 * sizeof(float)), *sumx = h + N, *resv = h + 2 * N;
                    for (int64_t i = 0; i < N; i++) {
                        h[i] = (float)((i % 7) - 3) * 0.5f + (float)r;
                        sumx[i] = 0;
                        for (int q = 0; q < n; q++) sumx[i] += (float)((i % 7) - 3) * 0.5f + (float)q;
                        resv[i] = (float)((i % 5) - 2) * 0.25f;
                    }
                    wk_tensor *xf = wk_from_host(dev, WK_F32, WK_SHAPE(rows, D), h);
                    wk_tensor *x = xf ? wk_to_dtype(xf, dt) : NULL;
                    wk_tensor *sf = wk_from_host(dev, WK_F32, WK_SHAPE(rows, D), sumx);
                    wk_tensor *xs = sf ? wk_to_dtype(sf, dt) : NULL;
                    wk_tensor *rf = wk_from_host(dev, WK_F32, WK_SHAPE(rows, D), resv);
                    wk_tensor *res = rf ? wk_to_dtype(rf, dt) : NULL;
                    wk_tensor *wi = variant == 1 ? NULL : wk_arange(dev, WK_F32, 0, (double)D, 1);
                    wk_tensor *wf = wi ? wk_affine(wi, 0.001, 0.5) : NULL;
                    wk_tensor *w = wf ? wk_to_dtype(wf, dt) : NULL;
                    wk_release(wi);
                    wk_tensor *s = NULL, *s_ref = NULL;
                    wk_tensor *o = x && res ? wk_all_reduce_add_rms_norm(j->comm, x, res, w, 1e-6, variant == 2, &s) : NULL;
                    wk_tensor *after = wk_full(dev, dt, WK_SHAPE(77), (double)r);
                    if (!after || wk_all_reduce(j->comm, after) != WK_OK) JFAIL("plain all_reduce after the fused one: %s", wk_last_error());
                    wk_tensor *o_ref = xs && res ? wk_add_rms_norm(xs, res, w, 1e-6, variant == 2, &s_ref) : NULL;
                    float *g = malloc((size_t)N * 6 * sizeof(float));
                    const char *what = NULL;
                    if (!o || !s || !o_ref || !s_ref) what = "no result";
                    else if (!read_f(o, g, (size_t)N) || !read_f(o_ref, g + N, (size_t)N) || !read_f(s, g + 2 * N, (size_t)N) ||
                             !read_f(s_ref, g + 3 * N, (size_t)N) || !read_f(x, g + 4 * N, (size_t)N) || !read_f(xs, g + 5 * N, (size_t)N))
                        what = "read back";
                    else if (memcmp(g + 2 * N, g + 3 * N, (size_t)N * sizeof(float)) != 0) what = "x + residual differs";
                    else if (memcmp(g + 4 * N, g + 5 * N, (size_t)N * sizeof(float)) != 0) what = "the reduced x differs";
                    else {
                        const float ulp = dt == WK_F32 ? 4e-6f : dt == WK_BF16 ? 8e-3f : 1e-3f;
                        for (int64_t i = 0; i < N && !what; i++)
                            if (fabsf(g[i] - g[N + i]) > ulp * (1.0f + fabsf(g[N + i]))) {
                                JFAIL("all_reduce_add_rms_norm %s [%lld, %lld] variant %d: norm[%lld] %g, want %g",
                                      wk_dtype_name(dt), (long long)rows, (long long)D, variant, (long long)i, g[i], g[N + i]);
                                what = "";
                            }
                    }
                    if (what && *what)
                        JFAIL("all_reduce_add_rms_norm %s [%lld, %lld] variant %d: %s (%s)", wk_dtype_name(dt), (long long)rows,
                              (long long)D, variant, what, wk_last_error());
                    free(g), free(h);
                    wk_release(o), wk_release(s), wk_release(o_ref), wk_release(s_ref), wk_release(after);
                    wk_release(x), wk_release(xf), wk_release(xs), wk_release(sf), wk_release(res), wk_release(rf);
                    wk_release(w), wk_release(wf);
                }
    }
    /* in place on a transposed view */
    {
        wk_tensor *a = wk_full(dev, WK_F32, WK_SHAPE(R, C), (double)(r + 1));
        wk_tensor *t = a ? wk_transpose(a, 0, 1) : NULL;
        if (!t || wk_all_reduce(j->comm, t) != WK_OK || !read_f(a, got, (size_t)(R * C)))
            JFAIL("all_reduce of a transposed view: %s", wk_last_error());
        else if (got[0] != (float)(n * (n + 1) / 2) || got[R * C - 1] != (float)(n * (n + 1) / 2))
            JFAIL("all_reduce of a transposed view: %g, want %d", got[0], n * (n + 1) / 2);
        wk_release(t), wk_release(a);
    }
    /* all_gather along dims 0 and 1 */
    for (int dim = 0; dim < 2; dim++) {
        wk_tensor *a = wk_full(dev, WK_BF16, WK_SHAPE(R, C), (double)r);
        wk_tensor *g = a ? wk_all_gather(j->comm, a, dim) : NULL;
        if (!g || !read_f(g, got, (size_t)(R * C * n))) {
            JFAIL("all_gather dim %d: %s", dim, wk_last_error());
        } else {
            for (int64_t i = 0; i < R * C * n; i++) {
                const int64_t row = i / (dim ? C * n : C), col = i % (dim ? C * n : C);
                const float want = (float)(dim ? col / C : row / R);
                if (got[i] != want) {
                    JFAIL("all_gather dim %d: element %lld is %g, want %g", dim, (long long)i, got[i], want);
                    break;
                }
            }
        }
        wk_release(g), wk_release(a);
    }
    /* broadcast from the last rank */
    {
        wk_tensor *a = wk_full(dev, WK_F16, WK_SHAPE(R, C), (double)(r * 10 + 1));
        if (!a || wk_broadcast(j->comm, a, n - 1) != WK_OK || !read_f(a, got, (size_t)(R * C)))
            JFAIL("broadcast: %s", wk_last_error());
        else if (got[5] != (float)((n - 1) * 10 + 1))
            JFAIL("broadcast: %g, want %d", got[5], (n - 1) * 10 + 1);
        wk_release(a);
    }
    free(got);
    return NULL;
}

/* the abort check's ranks: a first all_reduce that succeeds, then the
 * last rank aborts (after a pause, while the others wait in their second
 * all_reduce) */
typedef struct abort_job {
    wk_comm *comm;
    int rank, n;
    bool first_ok, aborted, later_refused;
    double secs;
    char err[256];
} abort_job;

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *abort_rank(void *arg)
{
    abort_job *j = arg;
    wk_device *dev = wk_comm_device(j->comm);
    wk_tensor *x = wk_full(dev, WK_F32, WK_SHAPE(1 << 20), 1.0);
    j->first_ok = x && wk_all_reduce(j->comm, x) == WK_OK && wk_device_synchronize(dev) == WK_OK;
    const double t0 = mono_s();
    if (j->rank == j->n - 1) {
        struct timespec pause = { 0, 500 * 1000 * 1000 };
        nanosleep(&pause, NULL);
        wk_comm_abort(j->comm);
    } else if (x) {
        wk_all_reduce(j->comm, x);   /* waits for the last rank, which aborts instead */
        wk_device_synchronize(dev);
    }
    j->secs = mono_s() - t0;
    j->aborted = wk_comm_aborted(j->comm);
    j->later_refused = x && wk_all_reduce(j->comm, x) != WK_OK && strstr(wk_last_error(), "abort");
    snprintf(j->err, sizeof j->err, "%s", wk_last_error());
    wk_release(x);
    return NULL;
}

static void abort_check(wk_device **devs, int n)
{
    wk_comm *comms[MAXG];
    if (wk_comm_init_all(devs, n, comms) != WK_OK) {
        check("abort_init_all", false, "wk_comm_init_all");
        return;
    }
    abort_job jobs[MAXG];
    pthread_t th[MAXG];
    for (int i = 0; i < n; i++) {
        jobs[i] = (abort_job){ .comm = comms[i], .rank = i, .n = n };
        pthread_create(&th[i], NULL, abort_rank, &jobs[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) {
        char what[64], detail[512];
        snprintf(what, sizeof what, "abort_rank%d_of_%d", i, n);
        snprintf(detail, sizeof detail, "first all_reduce %s, back after %.1f s, aborted %d, later call refused %d ('%s')",
                 jobs[i].first_ok ? "ok" : "failed", jobs[i].secs, jobs[i].aborted, jobs[i].later_refused, jobs[i].err);
        check(what, jobs[i].first_ok && jobs[i].secs < 30 && jobs[i].aborted && jobs[i].later_refused, detail);
        printf("comm abort: rank %d of %d: %s\n", i, n, detail);
    }
    for (int i = 0; i < n; i++) wk_comm_free(comms[i]);
    /* the devices stay usable: a fresh communicator works */
    if (wk_comm_init_all(devs, n, comms) == WK_OK) {
        wk_tensor *a = wk_full(devs[0], WK_F32, WK_SHAPE(100), 2.0);
        float v[100];
        check("after_abort_new_comm", n > 1 || (a && wk_all_reduce(comms[0], a) == WK_OK && read_f(a, v, 100) && v[0] == 2.0f),
              "a communicator made after an aborted one is freed");
        wk_release(a);
        for (int i = 0; i < n; i++) wk_comm_free(comms[i]);
    } else
        check("after_abort_new_comm", false, "wk_comm_init_all after an abort");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const char *kind = "cuda";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--kind")) kind = argv[i + 1];
    if (argc == 3 && !strcmp(argv[1], "--child-none")) {
        /* WICK_NCCL_LIB=none: unsupported, with the reason */
        wk_device *d = wk_device_open(argv[2]);
        wk_device *ds[1] = { d };
        wk_comm *c = NULL;
        const bool ok = d && !wk_comm_available(d) && !wk_supports(d, "all_reduce", WK_F32) &&
                        wk_comm_init_all(ds, 1, &c) == WK_ERR_UNSUPPORTED && strstr(wk_last_error(), "WICK_NCCL_LIB");
        if (!ok) printf("with WICK_NCCL_LIB=none: %s\n", wk_last_error());
        return ok ? 0 : 1;
    }
    int n = wk_device_count(kind);
    if (n <= 0) {
        printf("no %s device: %s\n0 passed, 0 failed\n", kind, wk_last_error());
        return 0;
    }
    if (n > MAXG) n = MAXG;
    wk_device *devs[MAXG];
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s:%d", kind, i);
        devs[i] = wk_device_open(name);
        if (!devs[i]) {
            printf("cannot open %s: %s\n", name, wk_last_error());
            return 1;
        }
    }
    snprintf(name, sizeof name, "%s:0", kind);
    const bool avail = wk_comm_available(devs[0]);
    check("available", avail, "no collective library (set WICK_NCCL_LIB to libnccl.so.2's path)");
    check("supports_agrees", wk_supports(devs[0], "all_reduce", WK_BF16) == avail && !wk_supports(devs[0], "all_reduce", WK_U8),
          "wk_supports disagrees with wk_comm_available");
    char self[4096], cmd[4300];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    snprintf(cmd, sizeof cmd, "WICK_NCCL_LIB=none '%s' --child-none %s", self, name);
    check("refusal_without_library", system(cmd) == 0, cmd);
    if (avail) {
        printf("comm: %d rank(s), one per %s device\n", n, kind);
        wk_comm *comms[MAXG];
        check("init_all", wk_comm_init_all(devs, n, comms) == WK_OK, "wk_comm_init_all");
        if (!failed) {
            rank_job jobs[MAXG];
            pthread_t th[MAXG];
            for (int i = 0; i < n; i++) {
                jobs[i] = (rank_job){ .comm = comms[i], .rank = i, .n = n };
                pthread_create(&th[i], NULL, rank_main, &jobs[i]);
            }
            for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
            for (int i = 0; i < n; i++) {
                char what[64];
                snprintf(what, sizeof what, "rank%d_collectives", i);
                check(what, !jobs[i].fail[0], jobs[i].fail);
            }
            /* bus bandwidth of all_reduce, 256 MiB of bf16, rank 0's view
             * (one thread drives every rank: NCCL needs them together) */
            if (n == 1) {
                wk_tensor *big = wk_zeros(devs[0], WK_BF16, WK_SHAPE(128 << 20));
                if (big && wk_all_reduce(comms[0], big) == WK_OK && wk_device_synchronize(devs[0]) == WK_OK) {
                    const int reps = 20;
                    double t0 = now_ms();
                    for (int i = 0; i < reps; i++) wk_all_reduce(comms[0], big);
                    wk_device_synchronize(devs[0]);
                    double ms = (now_ms() - t0) / reps;
                    printf("comm: all_reduce 256 MiB bf16, 1 rank: %.3f ms (one rank only copies)\n", ms);
                }
                wk_release(big);
            }
            for (int i = 0; i < n; i++) wk_comm_free(comms[i]);
        }
        abort_check(devs, n);
        /* one rank per process, world of 1 */
        wk_comm_id id;
        check("unique_id", wk_comm_unique_id(devs[0], &id) == WK_OK, "wk_comm_unique_id");
        wk_comm *c = wk_comm_init_rank(devs[0], 0, 1, &id);
        check("init_rank", c != NULL, "wk_comm_init_rank(rank 0 of 1)");
        if (c) {
            wk_tensor *a = wk_full(devs[0], WK_F32, WK_SHAPE(100), 3.0);
            float v[100];
            check("init_rank_all_reduce", a && wk_all_reduce(c, a) == WK_OK && read_f(a, v, 100) && v[99] == 3.0f,
                  "a world of 1 sums to itself");
            wk_release(a);
            wk_comm_free(c);
        }
        setenv("RANK", "0", 1), setenv("WORLD_SIZE", "1", 1), setenv("MASTER_ADDR", "127.0.0.1", 1),
            setenv("MASTER_PORT", "29611", 1);
        wk_comm *e = wk_comm_init_env(devs[0]);
        check("init_env", e && wk_comm_rank(e) == 0 && wk_comm_size(e) == 1, "wk_comm_init_env from torchrun's variables");
        wk_comm_free(e);
    }
    for (int i = 0; i < n; i++) wk_device_close(devs[i]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
