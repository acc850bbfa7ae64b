/* timing.c — what the blocks' named marks (llm_mark) feed, for whoever
 * tunes or debugs the forward pass. WICK_LLM_TIMING:
 *   =1  the host's time of one-token passes (and of the batched engine's
 *       passes of decode rows only: batch.c), split into issuing the work
 *       and waiting for the result, and, for replayed steps, the device's
 *       time writing the step's inputs and running it (printed at free);
 *   =2  also the device's time by part of a one-token pass: an event at
 *       the start and one at each block's end (llm_mark, blocks.c); the
 *       interval before a mark adds to the sum of the mark's name, so the
 *       parts are the blocks' names (summed over layers). Recorded steps
 *       are not used at =2 (the events sit between their launches).
 * WICK_LLM_DUMP=1 (every name) or =NAME (one block's, e.g. attention):
 * each block's result of eager passes printed to stderr as it is made,
 * with the layer, the first position, the shape, mean |x|, max |x| and the
 * first values (a host copy per block: for comparing with a reference's
 * hooks, not for speed; recorded steps are not dumped). Read once at load. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "llm_internal.h"

enum { MAX_PARTS = 16 };

struct llm_timing {
    int level;
    char *dump;           /* WICK_LLM_DUMP: "" every name, else one; NULL off */
    int64_t steps;
    double issue_ms, wait_ms;
    /* =2: events of the pass in progress (active), the name each one
       closes, and the sums by name */
    bool active;
    int64_t n_ev, cap_ev;
    wk_event **ev;
    const char **ev_name;
    const char *names[MAX_PARTS];
    double part_ms[MAX_PARTS];
    int n_names;
    /* replayed steps: events before the inputs' write, before and after
       the replay; their sums */
    wk_event *gev[3];
    bool gev_on;
    double gw_ms, gg_ms;
    int64_t gn;
};

double llm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void llm_timing_init(wk_llm *m)
{
    const char *e = getenv("WICK_LLM_TIMING"), *d = getenv("WICK_LLM_DUMP");
    const int level = !e || !e[0] || !strcmp(e, "0") ? 0 : !strcmp(e, "2") ? 2 : 1;
    const bool dump = d && d[0] && strcmp(d, "0");
    if (!level && !dump) return;
    llm_timing *t = m->rt.timing = calloc(1, sizeof *m->rt.timing);
    if (!t) return;   /* no memory: no timing */
    t->level = level;
    if (dump) t->dump = strdup(strcmp(d, "1") ? d : "");
}

/* WICK_LLM_DUMP: t's stats, named */
static void dump(const llm_pass *p, const char *name, const wk_tensor *t)
{
    if (p->dy || !t) return;
    wk_scope_begin();
    const int64_t n = wk_tensor_numel(t);
    wk_tensor *f = wk_contiguous(wk_to_dtype(t, WK_F32));
    float *v = f && n > 0 ? malloc((size_t)n * sizeof *v) : NULL;
    if (v && wk_to_host(f, v, (size_t)n * sizeof *v) == WK_OK) {
        double sum = 0, mx = 0;
        for (int64_t i = 0; i < n; i++) {
            const double a = v[i] < 0 ? -(double)v[i] : (double)v[i];
            sum += a;
            if (a > mx || a != a) mx = a;
        }
        char shape[96] = "";
        int k = 0;
        for (int i = 0; i < wk_tensor_rank(t) && k >= 0 && k < (int)sizeof shape; i++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", i ? ", " : "", (long long)wk_tensor_dim(t, i));
        fprintf(stderr, "wick: dump pos %lld layer %lld %s [%s]: mean|x| %.6g max|x| %.6g first %.6g %.6g %.6g %.6g\n",
                (long long)p->pos, (long long)p->l, name, shape, sum / (double)n, mx, v[0], n > 1 ? v[1] : 0.0,
                n > 2 ? v[2] : 0.0, n > 3 ? v[3] : 0.0);
    }
    free(v);
    wk_scope_end();
}

bool llm_parts_on(const wk_llm *m, int64_t T) { return llm_parts_start(m, T == 1); }

bool llm_parts_start(const wk_llm *m, bool timed)
{
    llm_timing *t = m->rt.timing;
    if (!t) return false;
    t->active = t->level == 2 && timed;
    t->n_ev = 0;
    if (t->active) llm_mark(&(llm_pass){ .m = (wk_llm *)m }, NULL, NULL);
    return t->active;
}

void llm_mark(const llm_pass *p, const char *part, const wk_tensor *tensor)
{
    llm_timing *t = p->m->rt.timing;
    if (!t) return;
    if (t->dump && part && (!t->dump[0] || !strcmp(t->dump, part))) dump(p, part, tensor);
    if (!t->active) return;
    if (t->n_ev == t->cap_ev) {
        const int64_t cap = t->cap_ev ? 2 * t->cap_ev : 64;
        wk_event **ev = realloc(t->ev, (size_t)cap * sizeof *ev);
        if (ev) t->ev = ev;
        const char **nm = realloc(t->ev_name, (size_t)cap * sizeof *nm);
        if (nm) t->ev_name = nm;
        if (!ev || !nm) {
            t->active = false;
            return;
        }
        for (int64_t i = t->cap_ev; i < cap; i++) t->ev[i] = NULL;
        t->cap_ev = cap;
    }
    const int64_t i = t->n_ev++;
    if (!t->ev[i]) t->ev[i] = wk_event_new(p->m->dev);
    t->ev_name[i] = part;
    if (t->ev[i]) (void)wk_event_record(t->ev[i]);
}

void llm_parts_add(wk_llm *m)
{
    llm_timing *t = m->rt.timing;
    if (!t || !t->active) return;
    for (int64_t i = 1; i < t->n_ev; i++) {
        double ms = 0;
        if (!t->ev[i - 1] || !t->ev[i] || wk_event_elapsed_ms(t->ev[i - 1], t->ev[i], &ms) != WK_OK) continue;
        int k = 0;
        while (k < t->n_names && strcmp(t->names[k], t->ev_name[i])) k++;
        if (k == t->n_names) {
            if (k == MAX_PARTS) continue;
            t->names[t->n_names++] = t->ev_name[i];
        }
        t->part_ms[k] += ms;
    }
    t->active = false;
}

void llm_timing_add(wk_llm *m, double t0, double t1)
{
    llm_timing *t = m->rt.timing;
    if (!t || !t->level) return;
    t->steps++;
    t->issue_ms += t1 - t0;
    t->wait_ms += llm_now_ms() - t1;
}

void llm_timing_replay(wk_llm *m, int phase)
{
    llm_timing *t = m->rt.timing;
    if (!t || !t->level) return;
    if (phase == 0) {
        for (int i = 0; i < 3; i++)
            if (!t->gev[i]) t->gev[i] = wk_event_new(m->dev);
        t->gev_on = t->gev[0] && t->gev[1] && t->gev[2];
    }
    if (t->gev_on) (void)wk_event_record(t->gev[phase]);
}

void llm_timing_replay_add(wk_llm *m)
{
    llm_timing *t = m->rt.timing;
    double w = 0, g = 0;
    if (t && t->gev_on && wk_event_elapsed_ms(t->gev[0], t->gev[1], &w) == WK_OK &&
        wk_event_elapsed_ms(t->gev[1], t->gev[2], &g) == WK_OK)
        t->gn++, t->gw_ms += w, t->gg_ms += g;
}

void llm_timing_free(wk_llm *m)
{
    llm_timing *t = m->rt.timing;
    if (!t) return;
    const double n = (double)t->steps;
    if (t->steps)
        fprintf(stderr, "wick: %lld timed forward passes (one token, or a batch of decode rows): %.1f us to issue, %.1f "
                        "us waiting for the logits (mean)\n",
                (long long)t->steps, 1e3 * t->issue_ms / n, 1e3 * t->wait_ms / n);
    if (t->level == 2 && t->steps && t->n_names) {
        /* one write: the ranks of a split model print at once */
        char line[1024];
        double all = 0;
        int k = snprintf(line, sizeof line, "wick: device time of a timed pass by part (us, mean; %lld layers):",
                         (long long)m->cfg.info.n_layer);
        for (int i = 0; i < t->n_names && k > 0 && k < (int)sizeof line; i++) {
            k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %.1f", i ? ";" : "", t->names[i],
                          1e3 * t->part_ms[i] / n);
            all += t->part_ms[i];
        }
        if (k > 0 && k < (int)sizeof line)
            snprintf(line + k, sizeof line - (size_t)k, "; all %.1f of the host's %.1f\n", 1e3 * all / n,
                     1e3 * (t->issue_ms + t->wait_ms) / n);
        fputs(line, stderr);
    }
    if (t->gn)
        fprintf(stderr, "wick: %lld replayed steps: the device's time %.1f us writing the step's inputs, %.1f us "
                        "running the step (mean)\n",
                (long long)t->gn, 1e3 * t->gw_ms / (double)t->gn, 1e3 * t->gg_ms / (double)t->gn);
    for (int i = 0; i < 3; i++) wk_event_free(t->gev[i]);
    for (int64_t i = 0; i < t->cap_ev; i++) wk_event_free(t->ev[i]);
    free(t->ev);
    free(t->ev_name);
    free(t->dump);
    free(t);
    m->rt.timing = NULL;
}

bool llm_timing_by_part(const wk_llm *m) { return m->rt.timing && m->rt.timing->level == 2; }
