/* cpu_comm.c — the cpu's collectives (backend.h: comm_available ..
 * comm_run): ranks are threads of this process sharing memory, so that
 * sharded code (tensor parallelism) runs and is tested without GPUs.
 *
 * A group of n ranks shares one board: each rank posts its call (kind,
 * dtype, count, root, buffers) and meets the others at a barrier; then
 * every rank checks that all posts agree (the same verdict everywhere, so
 * a mismatch fails on every rank instead of hanging some), does its part,
 * and meets them again before returning, so no rank reuses a buffer
 * another is still reading.
 *
 * all_reduce: rank r sums the r-th slice of the elements over all ranks'
 * inputs, in rank order (f16/bf16 in f32, rounded once), into its own
 * output; after a barrier each rank copies the other slices from their
 * owners' outputs. Every element is summed by one rank, so every rank
 * gets the same bits. The slices are disjoint, so in place (send == recv)
 * is safe. all_gather and broadcast are copies after the first barrier.
 *
 * A rank that fails aborts the group (wk_cpu_comm_abort, from any
 * thread): the barrier breaks, every rank waiting in it returns an error
 * at once and every later call fails. A rank that neither comes nor
 * aborts breaks the group after WICK_COMM_TIMEOUT seconds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpu_internal.h"

enum { BROKEN_NOT, BROKEN_TIMEOUT, BROKEN_ABORT };

typedef struct cpu_comm_group {
    int n;
    atomic_int refs;
    /* a barrier that gives up: a rank that never comes (it failed before
       the call, or made another) must not hang the others for ever */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned long generation;
    int broken;                  /* BROKEN_*: every later call fails          */
    int aborted_by;              /* the rank that aborted (-1: another thread) */
    double timeout;              /* seconds a rank waits (read at creation)  */
    wk_coll_args post[];         /* one per rank                          */
} cpu_comm_group;

/* Seconds a rank waits for the others (WICK_COMM_TIMEOUT, default 600),
 * read when a communicator is made. */
static double comm_timeout(void)
{
    const char *e = getenv("WICK_COMM_TIMEOUT");
    double t = e && *e ? atof(e) : 600.0;
    return t > 0 ? t : 600.0;
}

/* Wait until every rank has arrived; false when the group broke (a rank
 * waited longer than the timeout, here or before, or, at a collective's
 * entry, the group was aborted). Past the entry every rank is inside the
 * same collective and reaches its next barrier without waiting for
 * anything, so the later barriers of a call ignore an abort: no rank
 * leaves while another may still read its buffers. */
static bool group_wait_(cpu_comm_group *g, bool entry)
{
    pthread_mutex_lock(&g->mu);
    if (g->broken == BROKEN_TIMEOUT || (entry && g->broken)) {
        pthread_mutex_unlock(&g->mu);
        return false;
    }
    const unsigned long gen = g->generation;
    if (++g->arrived == g->n) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        return true;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    const double t = g->timeout;
    until.tv_sec += (time_t)t;
    until.tv_nsec += (long)((t - (double)(time_t)t) * 1e9);
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (gen == g->generation && g->broken != BROKEN_TIMEOUT && !(entry && g->broken))
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT && gen == g->generation) {
            g->broken = BROKEN_TIMEOUT;
            pthread_cond_broadcast(&g->cv);
        }
    const bool ok = gen != g->generation;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static bool group_wait(cpu_comm_group *g) { return group_wait_(g, false); }
static bool group_enter(cpu_comm_group *g) { return group_wait_(g, true); }

static wk_status broken(cpu_comm_group *g, int rank)
{
    pthread_mutex_lock(&g->mu);
    const int why = g->broken, by = g->aborted_by;
    pthread_mutex_unlock(&g->mu);
    if (why == BROKEN_ABORT)
        return wk_cpu_host->set_error(WK_ERR_BACKEND,
                                      "rank %d of %d: the communicator was aborted (by rank %d: it failed); no "
                                      "collective of it can succeed any more",
                                      rank, g->n, by);
    return wk_cpu_host->set_error(WK_ERR_BACKEND,
                                  "rank %d of %d waited more than %g s for the other ranks (WICK_COMM_TIMEOUT): a rank "
                                  "failed before this collective or made another call; the communicator is unusable",
                                  rank, g->n, g->timeout);
}

typedef struct cpu_comm {
    cpu_comm_group *g;
    int rank;
} cpu_comm;

wk_status wk_cpu_comm_available(void) { return WK_OK; }

bool wk_cpu_comm_dtype(wk_dtype dt)
{
    return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16 || dt == WK_F64 || dt == WK_I32 || dt == WK_I64;
}

wk_status wk_cpu_comm_init_all(void *const *ctxs, int n, void **comms)
{
    (void)ctxs;
    cpu_comm_group *g = calloc(1, sizeof *g + (size_t)n * sizeof g->post[0]);
    if (!g || pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return wk_cpu_host->set_error(WK_ERR_MEMORY, "out of host memory for a communicator of %d ranks", n);
    }
    pthread_cond_init(&g->cv, NULL);
    g->n = n;
    g->aborted_by = -1;
    g->timeout = comm_timeout();
    atomic_init(&g->refs, n);
    /* one allocation per rank, so that each rank frees its own */
    for (int i = 0; i < n; i++) {
        cpu_comm *one = malloc(sizeof *one);
        if (!one) {
            for (int j = 0; j < i; j++) free(comms[j]);
            pthread_cond_destroy(&g->cv);
            pthread_mutex_destroy(&g->mu);
            free(g);
            return wk_cpu_host->set_error(WK_ERR_MEMORY, "out of host memory for a communicator of %d ranks", n);
        }
        one->g = g, one->rank = i;
        comms[i] = one;
    }
    return WK_OK;
}

void wk_cpu_comm_free(void *comm)
{
    cpu_comm *c = comm;
    if (!c) return;
    if (atomic_fetch_sub(&c->g->refs, 1) == 1) {
        pthread_cond_destroy(&c->g->cv);
        pthread_mutex_destroy(&c->g->mu);
        free(c->g);
    }
    free(c);
}

void wk_cpu_comm_abort(void *comm)
{
    cpu_comm *c = comm;
    cpu_comm_group *g = c->g;
    pthread_mutex_lock(&g->mu);
    if (g->broken == BROKEN_NOT) {
        g->broken = BROKEN_ABORT;
        g->aborted_by = c->rank;
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

bool wk_cpu_comm_aborted(void *comm)
{
    cpu_comm_group *g = ((cpu_comm *)comm)->g;
    pthread_mutex_lock(&g->mu);
    const bool b = g->broken != BROKEN_NOT;
    pthread_mutex_unlock(&g->mu);
    return b;
}

/* Sum slice [lo, hi) of every rank's send buffer into out, in rank order. */
static void reduce_slice(const cpu_comm_group *g, wk_dtype dt, void *out, size_t lo, size_t hi)
{
    const int n = g->n;
    for (size_t i = lo; i < hi; i++) {
        switch (dt) {
        case WK_F32: {
            float s = 0;
            for (int r = 0; r < n; r++) s += ((const float *)g->post[r].send)[i];
            ((float *)out)[i] = s;
            break;
        }
        case WK_F64: {
            double s = 0;
            for (int r = 0; r < n; r++) s += ((const double *)g->post[r].send)[i];
            ((double *)out)[i] = s;
            break;
        }
        case WK_F16: {
            float s = 0;
            for (int r = 0; r < n; r++) s += wk_f16_to_f32(((const uint16_t *)g->post[r].send)[i]);
            ((uint16_t *)out)[i] = wk_f32_to_f16(s);
            break;
        }
        case WK_BF16: {
            float s = 0;
            for (int r = 0; r < n; r++) s += wk_bf16_to_f32(((const uint16_t *)g->post[r].send)[i]);
            ((uint16_t *)out)[i] = wk_f32_to_bf16(s);
            break;
        }
        case WK_I32: {
            uint32_t s = 0;   /* wraps as two's complement, never UB */
            for (int r = 0; r < n; r++) s += (uint32_t)((const int32_t *)g->post[r].send)[i];
            ((int32_t *)out)[i] = (int32_t)s;
            break;
        }
        case WK_I64: {
            uint64_t s = 0;
            for (int r = 0; r < n; r++) s += (uint64_t)((const int64_t *)g->post[r].send)[i];
            ((int64_t *)out)[i] = (int64_t)s;
            break;
        }
        default: return;
        }
    }
}

wk_status wk_cpu_comm_run(void *comm, const wk_coll_args *a)
{
    cpu_comm *c = comm;
    cpu_comm_group *g = c->g;
    const int n = g->n, r = c->rank;
    if (a->kind != WK_COLL_ALL_REDUCE_SUM && a->kind != WK_COLL_ALL_GATHER && a->kind != WK_COLL_BROADCAST)   /* no fused kinds */
        return wk_cpu_host->set_error(WK_ERR_UNSUPPORTED, "the cpu communicator fuses no collective");
    g->post[r] = *a;
    if (!group_enter(g)) return broken(g, r);
    /* every rank reads the same posts, so every rank reaches the same verdict */
    int bad = -1;
    for (int s = 1; s < n && bad < 0; s++)
        if (g->post[s].kind != g->post[0].kind || g->post[s].dtype != g->post[0].dtype ||
            g->post[s].count != g->post[0].count ||
            (g->post[0].kind == WK_COLL_BROADCAST && g->post[s].root != g->post[0].root))
            bad = s;
    if (bad >= 0) {
        const wk_coll_args p0 = g->post[0], pb = g->post[bad];
        if (!group_wait(g)) return broken(g, r);
        return wk_cpu_host->set_error(WK_ERR_ARGUMENT,
                                      "the ranks of a communicator made different calls: rank 0 %s of %zu %s (root %d), "
                                      "rank %d %s of %zu %s (root %d)",
                                      p0.kind == WK_COLL_ALL_REDUCE_SUM ? "all_reduce"
                                      : p0.kind == WK_COLL_ALL_GATHER  ? "all_gather"
                                                                       : "broadcast",
                                      p0.count, wk_dtype_name(p0.dtype), p0.root, bad,
                                      pb.kind == WK_COLL_ALL_REDUCE_SUM ? "all_reduce"
                                      : pb.kind == WK_COLL_ALL_GATHER  ? "all_gather"
                                                                       : "broadcast",
                                      pb.count, wk_dtype_name(pb.dtype), pb.root);
    }
    const size_t es = (size_t)wk_dt_elem_bytes(a->dtype), count = a->count;
    switch (a->kind) {
    case WK_COLL_ALL_REDUCE_ADD_RMS_NORM: break;   /* refused above */
    case WK_COLL_ALL_REDUCE_SUM: {
        const size_t per = (count + (size_t)n - 1) / (size_t)n;
        const size_t lo = per * (size_t)r < count ? per * (size_t)r : count;
        const size_t hi = lo + per < count ? lo + per : count;
        reduce_slice(g, a->dtype, a->recv, lo, hi);
        if (!group_wait(g)) return broken(g, r);
        for (int s = 0; s < n; s++) {
            if (s == r) continue;
            const size_t slo = per * (size_t)s < count ? per * (size_t)s : count;
            const size_t shi = slo + per < count ? slo + per : count;
            if (shi > slo)
                memcpy((char *)a->recv + slo * es, (const char *)g->post[s].recv + slo * es, (shi - slo) * es);
        }
        break;
    }
    case WK_COLL_ALL_GATHER:
        for (int s = 0; s < n; s++) {
            char *dst = (char *)a->recv + (size_t)s * count * es;
            if (count && dst != (const char *)g->post[s].send) memcpy(dst, g->post[s].send, count * es);
        }
        break;
    case WK_COLL_BROADCAST:
        if (r != a->root && count) memcpy(a->recv, g->post[a->root].send, count * es);
        else if (r == a->root && count && a->recv != a->send) memcpy(a->recv, a->send, count * es);
        break;
    }
    if (!group_wait(g)) return broken(g, r);
    return WK_OK;
}
