/* test_comm.c — collectives (wick_comm.h) on the cpu communicator: 1 to 4
 * ranks as threads. all_reduce for f32, f16, bf16, f64, i32, i64 against
 * sums made here in double (and every rank's result identical to the
 * bit), in place on contiguous tensors and on transposed views (only the
 * view's elements change); all_reduce_add_rms_norm against a sum and norm
 * made here, and its refusals of bad operands before anything is summed; all_gather along every dim of a 3-d tensor
 * and of narrowed (non-contiguous) inputs against index arithmetic made
 * here; broadcast from every root into narrowed views; ranks that make
 * different calls all get WK_ERR_ARGUMENT instead of hanging, and a rank
 * that never comes makes the others give up after WICK_COMM_TIMEOUT
 * (WK_ERR_BACKEND, the communicator refused from then on); a rank that
 * aborts instead of calling (wk_comm_abort) makes the others fail at once
 * with "aborted" (WICK_COMM_TIMEOUT long meanwhile), and later calls too;
 * WICK_COMM_FAIL's injected failure does the same; wk_supports;
 * the errors (NULL arguments, block dtypes, dtypes that do not sum, a root
 * or dim out of range, one-rank-per-process calls on the cpu, torchrun
 * variables missing or malformed) and the id's hex form.
 *
 * Case names: comm/<what>.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test.h"
#include "wick_comm.h"

#define MAXR 4

typedef enum { J_REDUCE, J_REDUCE_T, J_GATHER, J_BCAST, J_MISMATCH, J_ABSENT, J_NORM, J_ABORT } job_kind;

typedef struct job {
    wk_comm *comm;
    job_kind kind;
    wk_dtype dt;
    int rank, n, dim, root;
    uint64_t seed;
    int64_t d0, d1, d2;
    double *in;          /* what the rank put in (row-major over its tensor's dims) */
    double *out;         /* what came out                                          */
    double *sum, *xr;    /* J_NORM: the sum x + residual, x after the call         */
    int64_t n_in, n_out;
    wk_status st;
    char err[512];
    bool injected;       /* J_ABORT: the last rank's second call fails (WICK_COMM_FAIL) instead */
} job;

/* values exact in every float dtype tested: small integers and halves */
static double value(uint64_t seed, int rank, int64_t i)
{
    t_rng r = { seed * 0x9e3779b97f4a7c15ull + (uint64_t)rank * 1000003u + (uint64_t)i * 7919u + 1 };
    return (double)t_rng_int(&r, -40, 40) * 0.5;
}

/* t's values as doubles (exact for every dtype here), malloc'd: the rank
 * threads read with this, not t_read, whose case-owned memory belongs to
 * the case's own thread. */
static bool read_doubles(const wk_tensor *t, double **out, int64_t *n)
{
    wk_tensor *d = wk_to_dtype(t, WK_F64);
    const int64_t k = wk_tensor_numel(t);
    *out = malloc((size_t)(k ? k : 1) * sizeof(double));
    const bool ok = d && *out && wk_to_host(d, *out, (size_t)k * sizeof(double)) == WK_OK;
    wk_release(d);
    if (!ok) {
        free(*out);
        *out = NULL;
        return false;
    }
    *n = k;
    return true;
}

/* a rank's tensor of the job's dtype holding value(seed, rank, i) */
static wk_tensor *make(const job *j, wk_shape s, double **vals)
{
    const int64_t n = t_numel(s);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = value(j->seed, j->rank, i);
    wk_tensor *x64 = wk_from_host(t_dev(), WK_F64, s, v);
    wk_tensor *x = x64 ? wk_to_dtype(x64, j->dt) : NULL;
    wk_release(x64);
    free(v);
    /* what the tensor holds (integer dtypes drop the halves) */
    int64_t got = 0;
    *vals = NULL;
    if (x && !read_doubles(x, vals, &got)) *vals = NULL;
    return x;
}

static void *run_rank(void *arg)
{
    job *j = arg;
    wk_shape s3 = { .rank = 3, .dims = { j->d0, j->d1, j->d2 } };
    wk_tensor *x = NULL, *y = NULL, *v = NULL;
    j->st = WK_OK;
    switch (j->kind) {
    case J_REDUCE:
        x = make(j, s3, &j->in);
        j->n_in = t_numel(s3);
        j->st = x ? wk_all_reduce(j->comm, x) : wk_last_status();
        if (j->st == WK_OK) read_doubles(x, &j->out, &j->n_out);
        break;
    case J_REDUCE_T:   /* in place on the transposed view of a [d0, d1 * d2] tensor, narrowed */
        x = make(j, WK_SHAPE(j->d0, j->d1 * j->d2), &j->in);
        j->n_in = j->d0 * j->d1 * j->d2;
        y = x ? wk_transpose(x, 0, 1) : NULL;
        v = y ? wk_narrow(y, 0, 1, j->d1 * j->d2 - 2) : NULL;
        j->st = v ? wk_all_reduce(j->comm, v) : wk_last_status();
        if (j->st == WK_OK) read_doubles(x, &j->out, &j->n_out);
        break;
    case J_GATHER:     /* a narrowed view of [d0, d1 + 3, d2] */
        x = make(j, WK_SHAPE(j->d0, j->d1 + 3, j->d2), &j->in);
        j->n_in = j->d0 * (j->d1 + 3) * j->d2;
        v = x ? wk_narrow(x, 1, 2, j->d1) : NULL;
        y = v ? wk_all_gather(j->comm, v, j->dim) : NULL;
        j->st = y ? WK_OK : wk_last_status();
        if (y) read_doubles(y, &j->out, &j->n_out);
        break;
    case J_BCAST:      /* into a narrowed view of [d0, d1 + 1] */
        x = make(j, WK_SHAPE(j->d0, j->d1 + 1), &j->in);
        j->n_in = j->d0 * (j->d1 + 1);
        v = x ? wk_narrow(x, 1, 1, j->d1) : NULL;
        j->st = v ? wk_broadcast(j->comm, v, j->root) : wk_last_status();
        if (j->st == WK_OK) read_doubles(x, &j->out, &j->n_out);
        break;
    case J_ABSENT:     /* the last rank never comes; the others give up, then stay refused */
        if (j->rank == j->n - 1) break;
        x = make(j, WK_SHAPE(10), &j->in);
        j->st = x ? wk_all_reduce(j->comm, x) : wk_last_status();
        if (j->st != WK_OK) snprintf(j->err, sizeof j->err, "%s", wk_last_error());
        if (x && wk_all_reduce(j->comm, x) == WK_OK) j->st = WK_OK;   /* must fail again, at once */
        break;
    case J_ABORT:      /* the last rank aborts instead of its second all_reduce (root: a gather instead) */
        x = make(j, WK_SHAPE(10), &j->in);
        j->st = x ? wk_all_reduce(j->comm, x) : wk_last_status();
        if (j->st != WK_OK) break;
        if (j->rank == j->n - 1 && !j->injected) {
            wk_comm_abort(j->comm);
            j->st = WK_ERR_BACKEND;
            snprintf(j->err, sizeof j->err, "aborted by this rank");
            j->dim = wk_comm_aborted(j->comm);
            wk_release(x);
            return NULL;
        }
        if (j->root) {
            y = wk_all_gather(j->comm, x, 0);
            j->st = y ? WK_OK : wk_last_status();
        } else {
            j->st = wk_all_reduce(j->comm, x);
        }
        if (j->st != WK_OK) snprintf(j->err, sizeof j->err, "%s", wk_last_error());
        if (wk_all_reduce(j->comm, x) == WK_OK) j->st = WK_OK;   /* must fail again, at once */
        j->dim = wk_comm_aborted(j->comm);
        wk_release(v), wk_release(y), wk_release(x);
        return NULL;
    case J_NORM: {     /* x [d0, d2] summed, + residual, normed by weight (residual and weight: every rank's alike) */
        x = make(j, WK_SHAPE(j->d0, j->d2), &j->in);
        j->n_in = j->d0 * j->d2;
        job same = *j;
        same.rank = 100;
        double *rv = NULL, *wv = NULL;
        wk_tensor *res = make(&same, WK_SHAPE(j->d0, j->d2), &rv);
        same.rank = 200;
        wk_tensor *w = make(&same, WK_SHAPE(j->d2), &wv);
        free(rv), free(wv);
        wk_tensor *s = NULL;
        y = x && res && w ? wk_all_reduce_add_rms_norm(j->comm, x, res, w, 1e-5, j->root, &s) : NULL;
        j->st = y ? WK_OK : wk_last_status();
        int64_t k;
        if (y && read_doubles(y, &j->out, &j->n_out) && read_doubles(s, &j->sum, &k)) read_doubles(x, &j->xr, &k);
        wk_release(s), wk_release(res), wk_release(w);
        break;
    }
    case J_MISMATCH:   /* the last rank sums one element fewer */
        x = make(j, WK_SHAPE(j->rank == j->n - 1 ? 9 : 10), &j->in);
        j->st = x ? wk_all_reduce(j->comm, x) : wk_last_status();
        break;
    }
    if (j->st != WK_OK) snprintf(j->err, sizeof j->err, "%s", wk_last_error());
    wk_release(v), wk_release(y), wk_release(x);
    return NULL;
}

/* Run one job per rank of an n-rank cpu communicator, in threads. */
static bool run_all(int n, job *jobs)
{
    wk_device *devs[MAXR] = { 0 };
    wk_comm *comms[MAXR];
    for (int i = 0; i < n; i++) devs[i] = t_dev();
    wk_status st = wk_comm_init_all(devs, n, comms);
    if (st != WK_OK) {
        t_fail("comm_init_all(%d cpu ranks): %s", n, wk_last_error());
        return false;
    }
    pthread_t th[MAXR];
    for (int i = 0; i < n; i++) {
        T_CHECK(wk_comm_rank(comms[i]) == i && wk_comm_size(comms[i]) == n && wk_comm_device(comms[i]) == t_dev(),
                "rank %d: rank %d size %d", i, wk_comm_rank(comms[i]), wk_comm_size(comms[i]));
        jobs[i].comm = comms[i], jobs[i].rank = i, jobs[i].n = n;
        pthread_create(&th[i], NULL, run_rank, &jobs[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) wk_comm_free(comms[i]);
    return true;
}

static void free_jobs(int n, job *jobs)
{
    for (int i = 0; i < n; i++) free(jobs[i].in), free(jobs[i].out), free(jobs[i].sum), free(jobs[i].xr);
}

static double bound_of(wk_dtype dt) { return dt == WK_F16 ? 1e-3 : dt == WK_BF16 ? 8e-3 : 0; }

static void reduce_cases(void)
{
    static const wk_dtype dts[] = { WK_F32, WK_F16, WK_BF16, WK_F64, WK_I32, WK_I64 };
    for (int n = 1; n <= MAXR; n++)
        for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++)
            for (int transposed = 0; transposed < 2; transposed++) {
                if (!t_case("comm/all_reduce/%d_ranks/%s/%s", n, wk_dtype_name(dts[k]),
                            transposed ? "transposed_view" : "contiguous"))
                    continue;
                job jobs[MAXR];
                memset(jobs, 0, sizeof jobs);
                for (int i = 0; i < n; i++)
                    jobs[i] = (job){ .kind = transposed ? J_REDUCE_T : J_REDUCE, .dt = dts[k], .seed = t_seed(),
                                     .d0 = 3, .d1 = 7, .d2 = 33 };
                if (!run_all(n, jobs)) continue;
                bool ok = true;
                for (int i = 0; i < n && ok; i++)
                    if (jobs[i].st != WK_OK || jobs[i].n_out != jobs[i].n_in) {
                        t_fail("rank %d: %s", i, jobs[i].st != WK_OK ? jobs[i].err : "wrong size");
                        ok = false;
                    }
                const int64_t total = jobs[0].n_in, cols = 7 * 33;
                for (int64_t e = 0; ok && e < total; e++) {
                    /* the transposed case sums rows 1 .. cols-2 of the view, i.e. columns 1 .. cols-2 */
                    const bool summed = !transposed || (e % cols >= 1 && e % cols <= cols - 2);
                    for (int i = 0; ok && i < n; i++) {
                        double want = 0;
                        for (int r = 0; r < n; r++) want += summed ? jobs[r].in[e] : (r == i ? jobs[r].in[e] : 0);
                        const double got = jobs[i].out[e], b = bound_of(dts[k]) * (fabs(want) > 1 ? fabs(want) : 1);
                        if (fabs(got - want) > b) {
                            t_fail("rank %d element %lld: %g, want %g", i, (long long)e, got, want);
                            ok = false;
                        }
                        if (summed && got != jobs[0].out[e]) {
                            t_fail("rank %d element %lld: %g but rank 0 has %g (ranks must agree to the bit)", i,
                                   (long long)e, got, jobs[0].out[e]);
                            ok = false;
                        }
                    }
                }
                free_jobs(n, jobs);
            }
}

static void gather_cases(void)
{
    for (int n = 1; n <= MAXR; n++)
        for (int dim = -1; dim < 3; dim++) {
            if (!t_case("comm/all_gather/%d_ranks/dim%d", n, dim)) continue;
            job jobs[MAXR];
            memset(jobs, 0, sizeof jobs);
            const int64_t A = 2, B = 5, C = 9;
            for (int i = 0; i < n; i++)
                jobs[i] = (job){ .kind = J_GATHER, .dt = WK_F16, .seed = t_seed(), .dim = dim, .d0 = A,
                                 .d1 = B, .d2 = C };
            if (!run_all(n, jobs)) continue;
            const int d = dim < 0 ? dim + 3 : dim;
            int64_t od[3] = { A, B, C };
            od[d] *= n;
            bool ok = true;
            for (int i = 0; i < n && ok; i++) {
                if (jobs[i].st != WK_OK || jobs[i].n_out != od[0] * od[1] * od[2]) {
                    t_fail("rank %d: %s", i, jobs[i].st != WK_OK ? jobs[i].err : "wrong size");
                    ok = false;
                    continue;
                }
                for (int64_t a = 0; a < od[0] && ok; a++)
                    for (int64_t b = 0; b < od[1] && ok; b++)
                        for (int64_t c = 0; c < od[2] && ok; c++) {
                            int64_t idx[3] = { a, b, c };
                            const int src = (int)(idx[d] / (d == 0 ? A : d == 1 ? B : C));
                            idx[d] %= d == 0 ? A : d == 1 ? B : C;
                            /* the source's element in its [A, B + 3, C] base, columns 2 .. B+1 */
                            const double want = jobs[src].in[(idx[0] * (B + 3) + idx[1] + 2) * C + idx[2]];
                            const double got = jobs[i].out[(a * od[1] + b) * od[2] + c];
                            if (got != want) {
                                t_fail("rank %d [%lld, %lld, %lld]: %g, want %g (rank %d's)", i, (long long)a,
                                       (long long)b, (long long)c, got, want, src);
                                ok = false;
                            }
                        }
            }
            free_jobs(n, jobs);
        }
}

static void broadcast_cases(void)
{
    for (int n = 1; n <= MAXR; n++)
        for (int root = 0; root < n; root++) {
            if (!t_case("comm/broadcast/%d_ranks/root%d", n, root)) continue;
            job jobs[MAXR];
            memset(jobs, 0, sizeof jobs);
            for (int i = 0; i < n; i++)
                jobs[i] = (job){ .kind = J_BCAST, .dt = WK_BF16, .seed = t_seed(), .root = root, .d0 = 4, .d1 = 6 };
            if (!run_all(n, jobs)) continue;
            for (int i = 0; i < n; i++) {
                if (jobs[i].st != WK_OK) {
                    t_fail("rank %d: %s", i, jobs[i].err);
                    continue;
                }
                for (int64_t e = 0; e < jobs[i].n_in; e++) {
                    /* column 0 of the [4, 7] base is outside the view: the rank's own */
                    const double want = e % 7 == 0 ? jobs[i].in[e] : jobs[root].in[e];
                    if (jobs[i].out[e] != want) {
                        t_fail("rank %d element %lld: %g, want %g", i, (long long)e, jobs[i].out[e], want);
                        break;
                    }
                }
            }
            free_jobs(n, jobs);
        }
}

static void mismatch_cases(void)
{
    for (int n = 2; n <= MAXR; n++) {
        if (!t_case("comm/mismatch/%d_ranks", n)) continue;
        job jobs[MAXR];
        memset(jobs, 0, sizeof jobs);
        for (int i = 0; i < n; i++) jobs[i] = (job){ .kind = J_MISMATCH, .dt = WK_F32, .seed = t_seed() };
        if (!run_all(n, jobs)) continue;
        for (int i = 0; i < n; i++)
            T_CHECK(jobs[i].st == WK_ERR_ARGUMENT && strstr(jobs[i].err, "different calls"),
                    "rank %d: status %s, message '%s'", i, wk_status_name(jobs[i].st), jobs[i].err);
        free_jobs(n, jobs);
    }
}

static void absent_cases(void)
{
    if (!t_case("comm/absent_rank")) return;
    char *old = getenv("WICK_COMM_TIMEOUT") ? strdup(getenv("WICK_COMM_TIMEOUT")) : NULL;
    setenv("WICK_COMM_TIMEOUT", "0.3", 1);
    job jobs[3];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 3; i++) jobs[i] = (job){ .kind = J_ABSENT, .dt = WK_F32, .seed = t_seed() };
    if (run_all(3, jobs))
        for (int i = 0; i < 2; i++)
            T_CHECK(jobs[i].st == WK_ERR_BACKEND && strstr(jobs[i].err, "waited more than"),
                    "rank %d: status %s, '%s'", i, wk_status_name(jobs[i].st), jobs[i].err);
    free_jobs(3, jobs);
    if (old) setenv("WICK_COMM_TIMEOUT", old, 1);
    else unsetenv("WICK_COMM_TIMEOUT");
    free(old);
}

static double mono_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A rank aborts (or its collective fails, injected) while the others wait
 * in a collective: they fail at once, saying so, not after the timeout
 * (120 s here: the case's bound is its half, which a working abort meets
 * on any machine), and every later call fails too. */
static void abort_cases(void)
{
    for (int n = 2; n <= MAXR; n++)
        for (int how = 0; how < 3; how++) {
            /* 0: abort while the others all_reduce; 1: while they all_gather; 2: rank n-1's second call fails (injected) */
            if (!t_case("comm/abort/%d_ranks/%s", n, how == 0 ? "all_reduce" : how == 1 ? "all_gather" : "injected"))
                continue;
            setenv("WICK_COMM_TIMEOUT", "120", 1);
            char fail[32];
            snprintf(fail, sizeof fail, "%d:2", n - 1);
            if (how == 2) setenv("WICK_COMM_FAIL", fail, 1);
            job jobs[MAXR];
            memset(jobs, 0, sizeof jobs);
            for (int i = 0; i < n; i++)
                jobs[i] = (job){ .kind = J_ABORT, .dt = WK_F32, .seed = t_seed(), .root = how == 1, .injected = how == 2 };
            const double t0 = mono_secs();
            const bool ran = run_all(n, jobs);
            const double secs = mono_secs() - t0;
            unsetenv("WICK_COMM_TIMEOUT");
            unsetenv("WICK_COMM_FAIL");
            if (!ran) continue;
            T_CHECK(secs < 60, "%d ranks took %.1f s to return after an abort", n, secs);
            for (int i = 0; i < n; i++) {
                const char *want = i < n - 1 ? "aborted" : how == 2 ? "injected" : "aborted by this rank";
                T_CHECK(jobs[i].st == WK_ERR_BACKEND && strstr(jobs[i].err, want) && jobs[i].dim == 1,
                        "rank %d of %d: status %s, aborted %d, '%s' (want '%s')", i, n, wk_status_name(jobs[i].st),
                        jobs[i].dim, jobs[i].err, want);
            }
            free_jobs(n, jobs);
        }
}

/* wk_all_reduce_add_rms_norm against a sum and norm made here in double
 * from what each rank put in (root: the Gemma form), every rank's result
 * the same bits; the cpu runs it as all_reduce, then add_rms_norm */
static void reduce_norm_cases(void)
{
    static const wk_dtype dts[] = { WK_F32, WK_BF16 };
    for (int n = 1; n <= MAXR; n++)
        for (size_t k = 0; k < 2; k++)
            for (int gemma = 0; gemma < 2; gemma++) {
                if (!t_case("comm/all_reduce_add_rms_norm/%d_ranks/%s%s", n, wk_dtype_name(dts[k]), gemma ? "/gemma" : ""))
                    continue;
                job jobs[MAXR];
                memset(jobs, 0, sizeof jobs);
                const uint64_t seed = t_seed();
                for (int i = 0; i < n; i++)
                    jobs[i] = (job){ .kind = J_NORM, .dt = dts[k], .seed = seed, .d0 = 3, .d2 = 70, .root = gemma };
                if (!run_all(n, jobs)) continue;
                bool ok = true;
                for (int i = 0; i < n && ok; i++)
                    if (jobs[i].st != WK_OK || !jobs[i].out || !jobs[i].sum || !jobs[i].xr) {
                        t_fail("rank %d: %s", i, jobs[i].st != WK_OK ? jobs[i].err : "no result");
                        ok = false;
                    }
                const double tol = dts[k] == WK_F32 ? 1e-5 : 2e-2;
                for (int64_t row = 0; ok && row < 3; row++) {
                    double s[70], ss = 0;
                    for (int64_t c = 0; c < 70; c++) {
                        const int64_t e = row * 70 + c;
                        double x = 0;
                        for (int r = 0; r < n; r++) x += jobs[r].in[e];
                        s[c] = x + value(seed, 100, e);
                        ss += s[c] * s[c];
                        if (fabs(jobs[0].xr[e] - x) > tol * (1 + fabs(x)) || fabs(jobs[0].sum[e] - s[c]) > tol * (1 + fabs(s[c]))) {
                            t_fail("row %lld col %lld: x %g sum %g, want %g and %g", (long long)row, (long long)c,
                                   jobs[0].xr[e], jobs[0].sum[e], x, s[c]);
                            ok = false;
                            break;
                        }
                    }
                    const double inv = 1.0 / sqrt(ss / 70 + 1e-5);
                    for (int64_t c = 0; ok && c < 70; c++) {
                        const double w = value(seed, 200, c), want = s[c] * inv * (gemma ? 1 + w : w);
                        const double got = jobs[0].out[row * 70 + c];
                        if (fabs(got - want) > tol * (1 + fabs(want))) {
                            t_fail("row %lld col %lld: norm %g, want %g", (long long)row, (long long)c, got, want);
                            ok = false;
                        }
                    }
                }
                for (int i = 1; ok && i < n; i++)
                    if (memcmp(jobs[i].out, jobs[0].out, 3 * 70 * sizeof(double)) != 0 ||
                        memcmp(jobs[i].sum, jobs[0].sum, 3 * 70 * sizeof(double)) != 0) {
                        t_fail("rank %d's result differs from rank 0's", i);
                        ok = false;
                    }
                free_jobs(n, jobs);
            }
}

static void error_cases(void)
{
    if (t_case("comm/supports")) {
        wk_device *d = t_dev();
        T_CHECK(wk_comm_available(d), "the cpu has collectives");
        T_CHECK(wk_supports(d, "all_reduce", WK_F32) && wk_supports(d, "all_reduce", WK_BF16) &&
                    !wk_supports(d, "all_reduce", WK_U8) && wk_supports(d, "all_gather", WK_U8) &&
                    wk_supports(d, "broadcast", WK_I16) && !wk_supports(d, "all_gather", WK_Q4_0),
                "wk_supports answers for the collectives");
    }
    if (t_case("comm/errors")) {
        wk_device *d = t_dev();
        wk_comm *c = NULL;
        T_OK(wk_comm_init_all(&d, 1, &c));
        wk_tensor *x = t_own(wk_ones(d, WK_F32, WK_SHAPE(4, 3)));
        /* one rank: the collectives are the identity */
        T_OK(wk_all_reduce(c, x));
        wk_tensor *g = t_own(wk_all_gather(c, x, 1));
        T_CHECK(g && wk_tensor_dim(g, 0) == 4 && wk_tensor_dim(g, 1) == 3, "one-rank all_gather keeps the shape");
        t_check_error("NULL comm", WK_ERR_ARGUMENT, wk_all_reduce(NULL, x), "communicator", (const char *)NULL);
        t_check_error("NULL tensor", WK_ERR_ARGUMENT, wk_broadcast(c, NULL, 0), "tensor", (const char *)NULL);
        wk_tensor *u8 = t_own(wk_ones(d, WK_U8, WK_SHAPE(4)));
        t_check_error("u8 sum", WK_ERR_DTYPE, wk_all_reduce(c, u8), "u8", "all_reduce", (const char *)NULL);
        T_OK(wk_broadcast(c, u8, 0));
        wk_tensor *q = t_own(wk_quantize(x = t_own(wk_ones(d, WK_F32, WK_SHAPE(2, 32))), WK_Q8_0));
        t_check_error("block dtype", WK_ERR_DTYPE, wk_all_reduce(c, q), "block-quantized", (const char *)NULL);
        t_check_error("root", WK_ERR_ARGUMENT, wk_broadcast(c, x, 1), "root 1", (const char *)NULL);
        T_CHECK(!wk_all_gather(c, x, 2), "dim 2 of a 2-d tensor");
        t_check_error("dim", WK_ERR_ARGUMENT, wk_last_status(), "dim 2", (const char *)NULL);
        /* the fused all_reduce refuses bad operands before it sums (x unchanged) */
        wk_tensor *xs = t_own(wk_full(d, WK_F32, WK_SHAPE(2, 8), 3.0)), *rs = t_own(wk_ones(d, WK_F32, WK_SHAPE(2, 8)));
        wk_tensor *sum = NULL;
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, rs, NULL, 1e-6, false, NULL), "sum NULL");
        t_check_error("sum NULL", WK_ERR_ARGUMENT, wk_last_status(), "sum is NULL", (const char *)NULL);
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, t_own(wk_ones(d, WK_F32, WK_SHAPE(2, 7))), NULL, 1e-6, false, &sum) && !sum,
                "residual of another shape");
        t_check_error("residual shape", WK_ERR_SHAPE, wk_last_status(), "one shape", (const char *)NULL);
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, rs, t_own(wk_ones(d, WK_F32, WK_SHAPE(7))), 1e-6, false, &sum),
                "weight of another length");
        t_check_error("weight shape", WK_ERR_SHAPE, wk_last_status(), "last dim (8)", (const char *)NULL);
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, t_own(wk_ones(d, WK_BF16, WK_SHAPE(2, 8))), NULL, 1e-6, false, &sum),
                "residual of another dtype");
        t_check_error("residual dtype", WK_ERR_DTYPE, wk_last_status(), "bf16", (const char *)NULL);
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, rs, NULL, -1.0, false, &sum), "eps < 0");
        t_check_error("eps", WK_ERR_ARGUMENT, wk_last_status(), "eps", (const char *)NULL);
        T_CHECK(!wk_all_reduce_add_rms_norm(c, xs, NULL, NULL, 1e-6, false, &sum), "NULL residual");
        float xv[16];
        T_OK(wk_to_host(xs, xv, sizeof xv));
        T_CHECK(xv[0] == 3.0f && xv[15] == 3.0f, "x unchanged by the refusals");
        wk_comm_id id;
        t_check_error("unique id on the cpu", WK_ERR_UNSUPPORTED, wk_comm_unique_id(d, &id), "threads",
                      (const char *)NULL);
        memset(&id, 7, sizeof id);
        T_CHECK(!wk_comm_init_rank(d, 0, 1, &id), "init_rank on the cpu");
        t_check_error("init_rank on the cpu", WK_ERR_UNSUPPORTED, wk_last_status(), "wk_comm_init_all",
                      (const char *)NULL);
        T_CHECK(!wk_comm_init_rank(d, 2, 2, &id), "rank 2 of 2");
        t_check_error("rank out of range", WK_ERR_ARGUMENT, wk_last_status(), "rank 2", (const char *)NULL);
        wk_device *two[2] = { d, NULL };
        wk_comm *cs[2];
        t_check_error("NULL device", WK_ERR_ARGUMENT, wk_comm_init_all(two, 2, cs), "device 1", (const char *)NULL);
        T_CHECK(cs[0] == NULL && cs[1] == NULL, "a failed init_all leaves no communicator");
        t_check_error("n = 0", WK_ERR_ARGUMENT, wk_comm_init_all(two, 0, cs), "at least 1", (const char *)NULL);
        wk_comm_free(c);
        wk_comm_free(NULL);
    }
    if (t_case("comm/env")) {
        /* torchrun's variables: missing or malformed ones are named */
        char *old_ws = getenv("WORLD_SIZE") ? strdup(getenv("WORLD_SIZE")) : NULL;
        char *old_r = getenv("RANK") ? strdup(getenv("RANK")) : NULL;
        unsetenv("WORLD_SIZE");
        T_CHECK(!wk_comm_init_env(t_dev()), "no WORLD_SIZE");
        t_check_error("no WORLD_SIZE", WK_ERR_ARGUMENT, wk_last_status(), "WORLD_SIZE", (const char *)NULL);
        setenv("WORLD_SIZE", "2", 1);
        setenv("RANK", "2x", 1);
        T_CHECK(!wk_comm_init_env(t_dev()), "bad RANK");
        t_check_error("bad RANK", WK_ERR_ARGUMENT, wk_last_status(), "RANK='2x'", (const char *)NULL);
        setenv("RANK", "1", 1);
        setenv("WICK_COMM_ID", "abc", 1);
        T_CHECK(!wk_comm_init_env(t_dev()), "short id");
        t_check_error("short id", WK_ERR_ARGUMENT, wk_last_status(), "256 hex digits", (const char *)NULL);
        unsetenv("WICK_COMM_ID");
        if (old_ws) setenv("WORLD_SIZE", old_ws, 1);
        else unsetenv("WORLD_SIZE");
        if (old_r) setenv("RANK", old_r, 1);
        else unsetenv("RANK");
        free(old_ws), free(old_r);
    }
    if (t_case("comm/id_hex")) {
        wk_comm_id a, b;
        for (int i = 0; i < WK_COMM_ID_BYTES; i++) a.bytes[i] = (unsigned char)t_rng_int(t_r(), 0, 255);
        char hex[2 * WK_COMM_ID_BYTES + 1];
        wk_comm_id_to_hex(&a, hex);
        T_CHECK(strlen(hex) == 2 * WK_COMM_ID_BYTES, "hex length %zu", strlen(hex));
        T_OK(wk_comm_id_from_hex(hex, &b));
        T_CHECK(memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0, "the id survives its hex form");
        hex[17] = 'g';
        t_check_error("bad digit", WK_ERR_ARGUMENT, wk_comm_id_from_hex(hex, &b), "non-hex", (const char *)NULL);
    }
}

T_SUITE(comm)
{
    reduce_cases();
    reduce_norm_cases();
    gather_cases();
    broadcast_cases();
    mismatch_cases();
    absent_cases();
    abort_cases();
    error_cases();
}
