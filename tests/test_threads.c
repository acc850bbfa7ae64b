/* test_threads.c — the promises of docs/threads.md:
 *   threads/concurrent_ops     8 threads run ops on shared read-only inputs
 *                              (large enough for the CPU pool) and match
 *                              the single-thread results
 *   threads/errors_per_thread  an error set in one thread is invisible in
 *                              another, and each keeps its own message
 *   threads/rand_disjoint      concurrent wk_rand calls reserve disjoint
 *                              block ranges: each call's values equal one
 *                              of the serial outcomes, each used once
 *   threads/scopes_per_thread  scopes in several threads at once
 *   threads/open_close_refcount concurrent device open/close and
 *                              retain/release of one shared tensor
 * Worker threads never touch the per-case ownership lists; they release
 * what they make and report through t_fail (which is thread-safe).
 */
#include <pthread.h>
#include <stdlib.h>
#include "test.h"

#define NT 8

/* ---- concurrent ops on shared inputs ---------------------------------------- */

enum { R_EXP, R_ADD, R_SUM, R_MATMUL, R_CAST, R_SELECT, R_WHERE, R_ARGMAX, R_COUNT };
static const char *rnames[R_COUNT] = { "exp", "add", "sum", "matmul", "to_dtype", "index_select", "where_cond", "argmax" };

typedef struct shared_in {
    wk_tensor *a, *b, *m, *ids, *mask;
    t_arr want[R_COUNT];
    int iters;
} shared_in;

static wk_tensor *run_op(const shared_in *s, int k)
{
    switch (k) {
    case R_EXP: return wk_exp(s->a);
    case R_ADD: return wk_add(s->a, s->b);
    case R_SUM: return wk_sum(s->a, (const int[]){ 1 }, 1, false);
    case R_MATMUL: return wk_matmul(s->m, s->m);
    case R_CAST: return wk_to_dtype(s->b, WK_BF16);
    case R_SELECT: return wk_index_select(s->a, s->ids, 0);
    case R_WHERE: return wk_where(s->mask, s->a, s->b);
    case R_ARGMAX: return wk_argmax(s->b, 0, false);
    default: return NULL;
    }
}

/* host copy without the per-case lists (workers call it) */
static void *read_all(const wk_tensor *t, size_t *bytes)
{
    *bytes = (size_t)wk_tensor_numel(t) * t_size(wk_tensor_dtype(t));
    void *p = malloc(*bytes + 1);
    if (p && wk_to_host(t, p, *bytes) != WK_OK) { free(p); p = NULL; }
    return p;
}

static bool same(int k, const t_arr *want, const void *got)
{
    wk_dtype dt = want->dt;
    if (k != R_SUM && k != R_MATMUL) return memcmp(want->p, got, (size_t)want->n * t_size(dt)) == 0;
    /* accumulations may split differently when the pool is busy */
    for (int64_t i = 0; i < want->n; i++) {
        double a = t_get(dt, want->p, i), b = t_get(dt, got, i);
        if (!(fabs(a - b) <= 1e-4 * (1 + fabs(a)))) return false;
    }
    return true;
}

static void *ops_worker(void *arg)
{
    const shared_in *s = arg;
    for (int it = 0; it < s->iters; it++) {
        for (int k0 = 0; k0 < R_COUNT; k0++) {
            int k = (k0 + it) % R_COUNT;
            wk_tensor *r = run_op(s, k);
            if (!r) { t_fail("thread: %s returned NULL: %s", rnames[k], wk_last_error()); continue; }
            size_t bytes;
            void *p = read_all(r, &bytes);
            if (!p) t_fail("thread: reading %s failed: %s", rnames[k], wk_last_error());
            else if (!same(k, &s->want[k], p)) t_fail("thread: %s differs from the single-thread result", rnames[k]);
            free(p);
            wk_release(r);
        }
    }
    return NULL;
}

static void concurrent_ops(void)
{
    if (!t_case("threads/concurrent_ops")) return;
    shared_in s;
    memset(&s, 0, sizeof s);
    s.iters = 6;
    t_arr va, vb;
    s.a = t_make(WK_F32, LK_TRANSPOSED, WK_SHAPE(257, 263), T_GEN(G_UNIFORM, -2, 2), &va);
    s.b = t_make(WK_F32, LK_CONTIG, WK_SHAPE(257, 263), T_GEN(G_UNIFORM, -2, 2), &vb);
    s.m = t_make(WK_F32, LK_CONTIG, WK_SHAPE(96, 96), T_GEN(G_UNIFORM, -1, 1), NULL);
    int64_t idv[300];
    for (int i = 0; i < 300; i++) idv[i] = t_rng_int(t_r(), 0, 256);
    s.ids = T_NEED(wk_from_host(t_dev(), WK_I64, WK_SHAPE(300), idv));
    s.mask = t_make(WK_U8, LK_BROADCAST, WK_SHAPE(257, 263), T_GEN(G_UNIFORM, 0, 1), NULL);
    if (!s.a || !s.b || !s.m || !s.ids || !s.mask) return;
    for (int k = 0; k < R_COUNT; k++) {
        wk_tensor *r = t_own(run_op(&s, k));
        if (!r) { t_fail("%s returned NULL: %s", rnames[k], wk_last_error()); return; }
        bool ok;
        s.want[k] = t_read(r, &ok);
        if (!ok) return;
    }
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) pthread_create(&th[i], NULL, ops_worker, &s);
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
}

/* ---- errors are per thread ---------------------------------------------------- */

static pthread_barrier_t bar;
static char err_seen[2][256];

static void *err_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    wk_clear_error();
    pthread_barrier_wait(&bar);
    if (me == 0) {
        wk_release(wk_narrow(NULL, 0, 0, 1));          /* thread 0 fails */
    }
    pthread_barrier_wait(&bar);
    if (me == 1) {
        snprintf(err_seen[1], sizeof err_seen[1], "%s|%d", wk_last_error(), (int)wk_last_status());
        wk_release(wk_transpose(NULL, 0, 1));          /* now thread 1 fails */
    }
    pthread_barrier_wait(&bar);
    if (me == 0) snprintf(err_seen[0], sizeof err_seen[0], "%s", wk_last_error());
    pthread_barrier_wait(&bar);
    wk_clear_error();
    return NULL;
}

static void errors_per_thread(void)
{
    if (!t_case("threads/errors_per_thread")) return;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, err_worker, (void *)(intptr_t)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    T_CHECK(!strcmp(err_seen[1], "|0"), "thread 1 saw another thread's error: \"%s\"", err_seen[1]);
    T_CHECK(strstr(err_seen[0], "narrow") && !strstr(err_seen[0], "transpose"),
            "thread 0's message became \"%s\" (expected its own narrow error)", err_seen[0]);
    T_CHECK(!*wk_last_error(), "the main thread sees a worker's error \"%s\"", wk_last_error());
}

/* ---- random numbers from several threads -------------------------------------------- */

#define RN 64      /* f32 elements per call: 16 blocks */

typedef struct rand_job { float out[RN]; bool ok; } rand_job;

static void *rand_worker(void *arg)
{
    rand_job *j = arg;
    pthread_barrier_wait(&bar);
    wk_tensor *t = wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE(RN), 0, 1);
    j->ok = t && wk_to_host(t, j->out, sizeof j->out) == WK_OK;
    wk_release(t);
    return NULL;
}

static void rand_disjoint(void)
{
    if (!t_case("threads/rand_disjoint")) return;
    t_cover("rand_uniform", WK_F32);
    for (int rep = 0; rep < 5; rep++) {
        uint64_t seed = t_seed() + (uint64_t)rep;
        /* the serial outcomes: NT consecutive chunks of one long draw */
        T_OK(wk_device_set_seed(t_dev(), seed));
        wk_tensor *all = t_own(wk_rand_uniform(t_dev(), WK_F32, WK_SHAPE(NT * RN), 0, 1));
        if (!all) { t_fail("rand_uniform: %s", wk_last_error()); return; }
        bool ok;
        t_arr serial = t_read(all, &ok);
        if (!ok) return;
        T_OK(wk_device_set_seed(t_dev(), seed));
        rand_job jobs[NT];
        pthread_t th[NT];
        pthread_barrier_init(&bar, NULL, NT);
        for (int i = 0; i < NT; i++) pthread_create(&th[i], NULL, rand_worker, &jobs[i]);
        for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        bool used[NT] = { false };
        for (int i = 0; i < NT; i++) {
            if (!jobs[i].ok) { t_fail("thread %d: rand_uniform failed", i); continue; }
            int match = -1;
            for (int c = 0; c < NT; c++)
                if (!memcmp(jobs[i].out, serial.p + (size_t)c * RN * 4, sizeof jobs[i].out)) match = c;
            if (match < 0) t_fail("thread %d's values are none of the serial outcomes (seed %llu)", i, (unsigned long long)seed);
            else if (used[match]) t_fail("two threads drew the same block range %d", match);
            else used[match] = true;
        }
    }
}

/* ---- scopes, device handles and refcounts in threads ----------------------------------- */

typedef struct misc_job { wk_tensor *shared; bool ok; } misc_job;

static void *misc_worker(void *arg)
{
    misc_job *j = arg;
    j->ok = true;
    for (int it = 0; it < 50; it++) {
        wk_device *d = wk_device_open("cpu");
        if (!d) { j->ok = false; break; }
        wk_scope_begin();
        wk_tensor *mine = wk_full(d, WK_F64, WK_SHAPE(16), it);
        wk_tensor *r = wk_retain(j->shared);
        wk_tensor *sum = mine ? wk_add(mine, r) : NULL;    /* shared is [16] of 1 */
        double v = -1;
        if (!sum || wk_item(sum, (const int64_t[]){ 5 }, &v) != WK_OK || v != it + 1) j->ok = false;
        wk_keep(sum);
        wk_scope_end();
        wk_release(r);
        wk_release(sum);
        wk_device_close(d);
    }
    return NULL;
}

static void misc_threads(void)
{
    if (!t_case("threads/scopes_open_close_refcount")) return;
    wk_tensor *shared = wk_ones(t_dev(), WK_F64, WK_SHAPE(16));
    if (!shared) { t_fail("ones: %s", wk_last_error()); return; }
    misc_job jobs[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i].shared = shared;
        pthread_create(&th[i], NULL, misc_worker, &jobs[i]);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) T_CHECK(jobs[i].ok, "thread %d: scope/open/retain work went wrong", i);
    double v = 0;
    T_CHECK(wk_item(shared, (const int64_t[]){ 0 }, &v) == WK_OK && v == 1, "the shared tensor after the threads");
    wk_release(shared);
    T_CHECK(wk_device_name(t_dev()) && !strcmp(wk_device_name(t_dev()), "cpu"), "the runner's device after concurrent close");
}

T_SUITE(threads)
{
    concurrent_ops();
    errors_per_thread();
    rand_disjoint();
    misc_threads();
}
