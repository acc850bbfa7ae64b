/* threadpool.c — wk_parallel_for: the CPU backend's persistent thread pool.
 *
 * The pool is made on first use: one thread per online CPU (the
 * WICK_NUM_THREADS environment variable overrides the count), of which the
 * calling thread is one, so nthreads - 1 workers are started. A call splits
 * [0, n) into chunks of at least `grain` items (of 64 or more items,
 * rounded to a multiple of 64, so vector loops and cache lines of neighbouring chunks stay apart) and
 * every participant, the caller included, claims chunks from an atomic
 * counter until none are left; the caller then waits for the workers that
 * joined the job. Workers wait for a job spinning for a while, then
 * asleep (worker_main), so that ops a few microseconds apart do not pay a
 * futex wake-up each.
 *
 * Small work (n <= grain), a pool of one thread, and calls made from
 * inside a pool task run inline on the calling thread without locking.
 * Calls from several user threads are safe: one job runs at a time, and a
 * call that finds the pool busy runs inline instead of waiting. In a
 * child process made by fork() the pool's threads are gone, and every
 * call runs inline.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "cpu_internal.h"

#define WK_POOL_MAX_THREADS 1024

typedef struct pool_job {
    wk_range_fn fn;
    void *arg;
    int64_t n, chunk, nchunks;
    atomic_int_fast64_t next;   /* next chunk to claim                    */
    atomic_int_fast64_t left;   /* chunks not yet finished                */
} pool_job;

static struct {
    pthread_once_t once;
    int nthreads;               /* participants, the caller included      */
    pthread_mutex_t lock;       /* sleeping workers wait under it         */
    pthread_cond_t wake;        /* workers: a job was posted              */
    pthread_mutex_t submit;     /* one job at a time                      */
    _Atomic(pool_job *) job;    /* the job being run, or NULL             */
    atomic_ulong gen;           /* bumped when a job is posted            */
    atomic_int active;          /* workers that may be inside a job       */
    atomic_int sleepers;        /* workers asleep on `wake`               */
} pool = {
    .once = PTHREAD_ONCE_INIT,
    .nthreads = 1,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .submit = PTHREAD_MUTEX_INITIALIZER,
};

/* set on pool threads, and on a caller while it runs its share of a job */
static _Thread_local int in_pool_task;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void run_chunks(pool_job *j)
{
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->nchunks) return;
        int64_t b = c * j->chunk;
        int64_t e = b + j->chunk < j->n ? b + j->chunk : j->n;
        j->fn(j->arg, b, e);
        atomic_fetch_sub_explicit(&j->left, 1, memory_order_acq_rel);
    }
}

/* A worker waits for the next job spinning for WK_POOL_SPIN_NS (a model's
 * ops come microseconds apart: a futex wake-up per op would cost more
 * than many of them), then asleep on the condition variable. It joins a
 * job by counting itself in `active` before it reads `job`; the caller
 * clears `job` before it waits for `active` to fall to zero, so a worker
 * either is waited for or finds no job (or the next one) -- never a job
 * whose caller has returned. */
#define WK_POOL_SPIN_NS 200000

static void *worker_main(void *unused)
{
    (void)unused;
    in_pool_task = 1;
    unsigned long seen = 0;
    for (;;) {
        unsigned long g = atomic_load(&pool.gen);
        if (g == seen) {
            const int64_t t0 = now_ns();
            for (int spins = 1; (g = atomic_load(&pool.gen)) == seen; spins++) {
                cpu_relax();
                if (spins % 256 == 0 && now_ns() - t0 > WK_POOL_SPIN_NS) {
                    pthread_mutex_lock(&pool.lock);
                    atomic_fetch_add(&pool.sleepers, 1);
                    while ((g = atomic_load(&pool.gen)) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
                    atomic_fetch_sub(&pool.sleepers, 1);
                    pthread_mutex_unlock(&pool.lock);
                    break;
                }
            }
        }
        seen = g;
        atomic_fetch_add(&pool.active, 1);
        pool_job *j = atomic_load(&pool.job);
        if (j) run_chunks(j);
        atomic_fetch_sub(&pool.active, 1);
    }
    return NULL;
}

/* WICK_NUM_THREADS, else the processors online. A value that is not a
 * positive integer is not silently taken: one warning on stderr (the pool
 * is made once per process), then the default. */
static int threads_wanted(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > WK_POOL_MAX_THREADS) n = WK_POOL_MAX_THREADS;
    const char *env = getenv("WICK_NUM_THREADS");
    if (env && *env) {
        char *end;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (errno == 0 && *end == '\0' && v >= 1) return v > WK_POOL_MAX_THREADS ? WK_POOL_MAX_THREADS : (int)v;
        fprintf(stderr, "wick: WICK_NUM_THREADS='%s' is not a positive integer; using %ld thread%s\n", env, n,
                n == 1 ? "" : "s");
    }
    return (int)n;
}

/* A forked child has only the forking thread: run everything inline. */
static void pool_after_fork_child(void) { pool.nthreads = 1; }

static void pool_init(void)
{
    int want = threads_wanted();
    int started = 0;
    pthread_attr_t attr;
    if (want > 1 && pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (int i = 1; i < want; i++) {
            pthread_t t;
            if (pthread_create(&t, &attr, worker_main, NULL) != 0) break;
            started++;
        }
        pthread_attr_destroy(&attr);
    }
    pool.nthreads = started + 1;
    if (started > 0) pthread_atfork(NULL, NULL, pool_after_fork_child);
}

int wk_cpu_num_threads(void)
{
    pthread_once(&pool.once, pool_init);
    return pool.nthreads;
}

void wk_parallel_for(int64_t n, int64_t grain, wk_range_fn fn, void *arg)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n <= grain || in_pool_task) {
        fn(arg, 0, n);
        return;
    }
    int nt = wk_cpu_num_threads();
    if (nt <= 1 || pthread_mutex_trylock(&pool.submit) != 0) {
        fn(arg, 0, n);  /* one thread, or another user thread holds the pool */
        return;
    }

    /* about 4 chunks per thread (for balance), each >= grain items */
    int64_t chunk = (n + 4 * (int64_t)nt - 1) / (4 * (int64_t)nt);
    if (chunk < grain) chunk = grain;
    if (chunk >= 64) chunk = (chunk + 63) & ~(int64_t)63;  /* coarse tasks (few items) keep their size */
    pool_job j = { .fn = fn, .arg = arg, .n = n, .chunk = chunk, .nchunks = (n + chunk - 1) / chunk };
    atomic_init(&j.next, 0);
    atomic_init(&j.left, j.nchunks);

    atomic_store(&pool.job, &j);
    atomic_fetch_add(&pool.gen, 1);
    if (atomic_load(&pool.sleepers) > 0) {   /* (a worker that is about to sleep sees the new gen) */
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }

    in_pool_task = 1;
    run_chunks(&j);
    in_pool_task = 0;

    atomic_store(&pool.job, NULL);  /* late workers no longer join */
    for (int spins = 1; atomic_load(&j.left) > 0 || atomic_load(&pool.active) > 0; spins++) {
        cpu_relax();
        if (spins % 4096 == 0) sched_yield();   /* (more threads than cores) */
    }
    pthread_mutex_unlock(&pool.submit);
}

void wk_parallel_tasks(int64_t ntasks, double work_per_task, wk_range_fn fn, void *arg)
{
    if (ntasks <= 0) return;
    if (work_per_task < 1) work_per_task = 1;
    if (ntasks == 1 || (double)ntasks * work_per_task <= WK_CPU_GRAIN) {
        fn(arg, 0, ntasks);
        return;
    }
    double g = WK_CPU_GRAIN / work_per_task;
    wk_parallel_for(ntasks, g < 1 ? 1 : (int64_t)g, fn, arg);
}
