/* ranks.h — the ranks of a tensor-parallel run, one thread each, shared by
 * `wick run --tp N` (cli/run.c), build/wick-llm-bench and
 * build/wick-llm-oracle: opens N devices (the cpu N times, or kind:0 ..
 * kind:N-1 of the GPU kind a device name names), makes a communicator over
 * them (wk_comm_init_all), runs fn(comm, arg) for every rank in its own
 * thread (rank 0 in the caller's; each rank tells itself apart by its
 * comm), then frees the communicators and closes the devices. A rank
 * whose fn fails aborts the communicator, so the others return too. */
#ifndef WICK_CLI_RANKS_H
#define WICK_CLI_RANKS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_comm.h"

#define WK_MAX_RANKS 64

/* a rank's work: 0 when it went well (the first other value is returned) */
typedef int (*wk_rank_fn)(wk_comm *comm, void *arg);

typedef struct wk_rank_job {
    wk_rank_fn fn;
    wk_comm *comm;
    void *arg;
    int rc;
} wk_rank_job;

static void *wk_rank_thread(void *p)
{
    wk_rank_job *j = p;
    j->rc = j->fn(j->comm, j->arg);
    /* a rank that failed makes the others' collectives fail instead of
       waiting for it (wk_comm_abort); one that ended well leaves them be */
    if (j->rc) wk_comm_abort(j->comm);
    return NULL;
}

/* Runs fn on n ranks over devname's kind ("cpu", "cuda", "cuda:3" → cuda:0
 * .. cuda:n-1). Returns -1 when the devices or the communicator could not
 * be made (the reason printed after `who`), else the first rank's nonzero
 * result in rank order, else 0. */
static inline int wk_run_ranks(const char *devname, int n, wk_rank_fn fn, void *arg, const char *who)
{
    if (n < 1 || n > WK_MAX_RANKS) {
        fprintf(stderr, "%s: %d ranks (1 to %d)\n", who, n, WK_MAX_RANKS);
        return -1;
    }
    wk_device *devs[WK_MAX_RANKS] = { 0 };
    wk_comm *comms[WK_MAX_RANKS] = { 0 };
    wk_rank_job jobs[WK_MAX_RANKS];
    pthread_t th[WK_MAX_RANKS];
    const bool cpu = !strncmp(devname, "cpu", 3);
    int rc = 0, opened = 0;
    for (; opened < n; opened++) {
        char name[40];
        snprintf(name, sizeof name, "%.*s:%d", (int)strcspn(devname, ":"), devname, opened);
        devs[opened] = cpu && opened ? devs[0] : wk_device_open(cpu ? "cpu" : name);
        if (!devs[opened]) {
            fprintf(stderr, "%s: %s\n", who, wk_last_error());
            rc = -1;
            break;
        }
    }
    if (!rc && wk_comm_init_all(devs, n, comms) != WK_OK) {
        fprintf(stderr, "%s: %s\n", who, wk_last_error());
        rc = -1;
    }
    if (!rc) {
        for (int i = 0; i < n; i++) {
            jobs[i] = (wk_rank_job){ .fn = fn, .comm = comms[i], .arg = arg, .rc = 0 };
            if (i && pthread_create(&th[i], NULL, wk_rank_thread, &jobs[i]) != 0) {
                /* the ranks already started wait for this one in their
                   first collective: nothing to return to */
                fprintf(stderr, "%s: cannot start the thread of rank %d\n", who, i);
                exit(1);
            }
        }
        wk_rank_thread(&jobs[0]);
        for (int i = 1; i < n; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < n; i++) {
            if (jobs[i].rc && !rc) rc = jobs[i].rc;
            wk_comm_free(comms[i]);
        }
    }
    for (int i = 0; i < opened; i++)
        if (devs[i] && !(cpu && i)) wk_device_close(devs[i]);
    return rc;
}

#endif
