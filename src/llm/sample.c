/* sample.c — choosing the next token from logits: greedy, or a draw after a
 * repetition penalty, temperature, top-k, top-p and min-p, from a seeded
 * xoshiro256** generator so that a seed repeats a run.
 *
 * The order, on the host in double precision:
 *   1. repetition penalty on the tokens of the last repeat_last_n accepted
 *      (each distinct token once): a positive logit divided by the
 *      penalty, a negative one multiplied (the CTRL / HF / llama.cpp rule);
 *   1b. presence and frequency penalties (OpenAI's) over the generated
 *      tokens: logit -= frequency * count + presence * (count > 0);
 *   2. temperature <= 0: the first index of the largest logit (greedy);
 *   3. probabilities p = softmax(logit / temperature);
 *   4. top-k: the k largest (ties broken by the lower id);
 *   5. top-p: the smallest prefix, largest first, whose mass reaches top_p
 *      (at least one token);
 *   6. min-p: tokens with p < min_p * p_max dropped;
 *   7. one uniform u in [0, 1) (53 bits) against the cumulative mass of
 *      what is left, renormalised.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "llm_internal.h"

struct wk_sampler {
    wk_sampling p;
    int64_t n_vocab;
    uint64_t s[4];            /* xoshiro256** state */
    int32_t *hist;            /* ring of the last repeat_last_n tokens */
    int64_t hist_n, hist_pos;
    double *lg;               /* [n_vocab] working logits */
    int32_t *idx;             /* [n_vocab] candidate ids  */
    unsigned char *seen;      /* [n_vocab] penalty marks  */
    int32_t *count;           /* [n_vocab] generated tokens' counts (presence/frequency), or NULL */
    int32_t *out;             /* the generated tokens (distinct), out_n of them */
    int64_t out_n;
};

wk_sampling wk_sampling_default(void)
{
    return (wk_sampling){ .temperature = 0.7, .top_k = 40, .top_p = 0.95, .min_p = 0.05, .repeat_penalty = 1.0,
                          .repeat_last_n = 64, .seed = 0 };
}

wk_sampling wk_sampling_greedy(void)
{
    return (wk_sampling){ .temperature = 0.0, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .repeat_penalty = 1.0,
                          .repeat_last_n = 64, .seed = 0 };
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro(uint64_t s[4])
{
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void wk_sampler_reset(wk_sampler *s)
{
    if (!s) return;
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
    s->hist_n = s->hist_pos = 0;
    for (int64_t i = 0; s->count && i < s->out_n; i++) s->count[s->out[i]] = 0;
    s->out_n = 0;
}

wk_sampler *wk_sampler_new(const wk_sampling *p, int64_t n_vocab)
{
    if (!p || n_vocab <= 0 || n_vocab > ((int64_t)1 << 31)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_sampler_new: %s", !p ? "the parameters are NULL" : "bad vocabulary size");
        return NULL;
    }
    if (!(p->top_p >= 0) || !(p->min_p >= 0) || p->min_p > 1 || p->top_k < 0 || p->repeat_last_n < 0 ||
        !isfinite(p->temperature) || !isfinite(p->repeat_penalty) || !(fabs(p->presence_penalty) <= 2) ||
        !(fabs(p->frequency_penalty) <= 2)) {
        wk_error_set(WK_ERR_ARGUMENT,
                "wk_sampler_new: bad parameters (temperature %g, top_k %lld, top_p %g, min_p %g, repeat_penalty %g, "
                "repeat_last_n %lld, presence_penalty %g, frequency_penalty %g; the last two in [-2, 2])",
                p->temperature, (long long)p->top_k, p->top_p, p->min_p, p->repeat_penalty, (long long)p->repeat_last_n,
                p->presence_penalty, p->frequency_penalty);
        return NULL;
    }
    wk_sampler *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->p = *p;
    if (s->p.repeat_last_n == 0) s->p.repeat_last_n = 64;
    s->n_vocab = n_vocab;
    s->hist = malloc((size_t)s->p.repeat_last_n * sizeof *s->hist);
    s->lg = malloc((size_t)n_vocab * sizeof *s->lg);
    s->idx = malloc((size_t)n_vocab * sizeof *s->idx);
    s->seen = calloc((size_t)n_vocab, 1);
    if (p->presence_penalty != 0 || p->frequency_penalty != 0) {
        s->count = calloc((size_t)n_vocab, sizeof *s->count);
        s->out = malloc((size_t)n_vocab * sizeof *s->out);
        if (!s->count || !s->out) goto oom;
    }
    if (!s->hist || !s->lg || !s->idx || !s->seen) goto oom;
    wk_sampler_reset(s);
    return s;
oom:
    wk_sampler_free(s);
    wk_error_set(WK_ERR_MEMORY, "out of memory for a sampler of %lld tokens", (long long)n_vocab);
    return NULL;
}

void wk_sampler_free(wk_sampler *s)
{
    if (!s) return;
    free(s->hist);
    free(s->lg);
    free(s->idx);
    free(s->seen);
    free(s->count);
    free(s->out);
    free(s);
}

void wk_sampler_accept(wk_sampler *s, int32_t token)
{
    if (!s || token < 0 || token >= s->n_vocab) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->hist_n < s->p.repeat_last_n) s->hist_n++;
}

void wk_sampler_accept_output(wk_sampler *s, int32_t token)
{
    wk_sampler_accept(s, token);
    if (!s || !s->count || token < 0 || token >= s->n_vocab) return;
    if (s->count[token]++ == 0) s->out[s->out_n++] = token;
}

/* larger logit first; the lower id first among equals */
static _Thread_local const double *g_lg;
static int by_logit(const void *a, const void *b)
{
    const int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (g_lg[i] != g_lg[j]) return g_lg[i] > g_lg[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* the k largest of idx[0..n) to the front, sorted (a partial selection
 * then a sort of k; n log k would do, this is simpler and fast enough for
 * the sizes a sampler sees) */
static void top_sorted(const double *lg, int32_t *idx, int64_t n, int64_t k)
{
    /* threshold by a heap-free pass: keep candidates >= the k-th largest
       found by nth_element-style quickselect */
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (lo < hi) {
        const double pv = lg[idx[(lo + hi) / 2]];
        const int32_t pi = idx[(lo + hi) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (lg[idx[i]] > pv || (lg[idx[i]] == pv && idx[i] < pi)) i++;
            while (lg[idx[j]] < pv || (lg[idx[j]] == pv && idx[j] > pi)) j--;
            if (i <= j) {
                int32_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
                i++;
                j--;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else break;
    }
    g_lg = lg;
    qsort(idx, (size_t)k, sizeof *idx, by_logit);
}

int32_t wk_sampler_sample(wk_sampler *s, const float *logits)
{
    if (!s || !logits) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_sampler_sample: %s is NULL", !s ? "the sampler" : "logits");
        return -1;
    }
    const int64_t V = s->n_vocab;
    double *lg = s->lg;
    for (int64_t i = 0; i < V; i++) lg[i] = isnan(logits[i]) ? -INFINITY : (double)logits[i];
    /* 1. repetition penalty, each distinct token once */
    if (s->p.repeat_penalty != 1.0 && s->p.repeat_penalty != 0.0) {
        const double r = s->p.repeat_penalty;
        for (int64_t i = 0; i < s->hist_n; i++) {
            const int32_t t = s->hist[i];
            if (s->seen[t]) continue;
            s->seen[t] = 1;
            lg[t] = lg[t] > 0 ? lg[t] / r : lg[t] * r;
        }
        for (int64_t i = 0; i < s->hist_n; i++) s->seen[s->hist[i]] = 0;
    }
    /* 1b. presence and frequency penalties over the generated tokens */
    for (int64_t i = 0; i < s->out_n; i++) {
        const int32_t t = s->out[i];
        lg[t] -= s->p.frequency_penalty * s->count[t] + s->p.presence_penalty;
    }
    /* 2. greedy */
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (lg[i] > lg[best]) best = i;
    if (s->p.temperature <= 0 || !isfinite(lg[best])) return (int32_t)best;
    /* 3. softmax of logit / T over every token, as probabilities in lg */
    const double T = s->p.temperature, mx = lg[best];
    for (int64_t i = 0; i < V; i++) lg[i] = exp((lg[i] - mx) / T);
    /* 4. top-k (sorted candidates) */
    int64_t n = V;
    for (int64_t i = 0; i < V; i++) s->idx[i] = (int32_t)i;
    int64_t k = s->p.top_k > 0 && s->p.top_k < V ? s->p.top_k : V;
    if (s->p.top_p >= 1.0 && s->p.min_p <= 0.0 && k == V) {
        /* nothing to sort: draw from all */
    } else {
        top_sorted(lg, s->idx, V, k);
        n = k;
    }
    double total = 0;
    for (int64_t i = 0; i < n; i++) total += lg[s->idx[i]];
    /* 5. top-p over the sorted candidates */
    if (s->p.top_p < 1.0 && n > 1) {
        double cum = 0;
        int64_t keep = n;
        for (int64_t i = 0; i < n; i++) {
            cum += lg[s->idx[i]] / total;
            if (cum >= s->p.top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }
    /* 6. min-p against the most likely (sorted first when filtering) */
    if (s->p.min_p > 0.0 && n > 1) {
        const double th = s->p.min_p * lg[s->idx[0]];
        int64_t keep = 1;
        while (keep < n && lg[s->idx[keep]] >= th) keep++;
        n = keep;
    }
    /* 7. draw */
    total = 0;
    for (int64_t i = 0; i < n; i++) total += lg[s->idx[i]];
    const double u = (double)(xoshiro(s->s) >> 11) * 0x1.0p-53 * total;
    double cum = 0;
    for (int64_t i = 0; i < n; i++) {
        cum += lg[s->idx[i]];
        if (u < cum) return s->idx[i];
    }
    return s->idx[n - 1];
}

double wk_logprobs(const float *logits, int64_t V, int32_t token, int top_n, int32_t *top_ids, float *top_lp)
{
    if (!logits || V <= 0) return -INFINITY;
    double mx = -INFINITY;
    for (int64_t i = 0; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int64_t i = 0; i < V; i++)
        if (!isnan(logits[i])) sum += exp((double)logits[i] - mx);
    const double lse = mx + log(sum);
    if (top_n > V) top_n = (int)V;
    for (int k = 0; k < top_n && top_ids && top_lp; k++) {   /* top_n is small: a pass per entry */
        int64_t b = -1;
        for (int64_t i = 0; i < V; i++) {
            if (isnan(logits[i])) continue;
            bool taken = false;
            for (int j = 0; j < k && !taken; j++) taken = top_ids[j] == i;
            if (!taken && (b < 0 || logits[i] > logits[b])) b = i;
        }
        top_ids[k] = (int32_t)b;
        top_lp[k] = b < 0 ? -INFINITY : (float)((double)logits[b] - lse);
    }
    if (token < 0 || token >= V || isnan(logits[token])) return -INFINITY;
    return (double)logits[token] - lse;
}
