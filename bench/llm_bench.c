/* llm_bench.c — build/wick-llm-bench: the speed of a language model in
 * wick, through the public C API (include/wick_llm.h), as a user's
 * generation loop sees it. bench/run_model.sh runs it on the device
 * machine beside Hugging Face transformers.
 *
 *   wick-llm-bench MODEL [--device D] [--dtype bf16|f32] [--prefill N]
 *                  [--decode-at C1,C2,..] [--steps S] [--reps R]
 *                  [--chunk T] [--tp N] [--label TEXT]
 *
 * Loads MODEL with a KV cache of max(C) + S + 1 positions (and at least
 * N), then:
 *   prefill: R + 1 times (the first untimed) the cache is emptied and N
 *            random token ids run through the model in one wk_llm_eval
 *            (prefill steps of --chunk tokens, default N), the last
 *            token's logits read back; the median time -> tokens/s.
 *   decode at C: the cache emptied, C random ids run (untimed), then S
 *            steps of one token each: wk_llm_eval with the logits read
 *            back and the argmax taken on the host as the next token (a
 *            greedy generation loop); 4 steps untimed, then the median
 *            step time -> tokens/s, and the mean for comparison.
 *   generate at C: the cache emptied, then wk_llm_generate with the C
 *            ids as the prompt, greedy, 4 tokens (untimed: a warm-up, as
 *            the decode loop's first steps), then again, S tokens, end
 *            tokens ignored (the
 *            argmax taken on the device); (S - 1) / gen_ms -> tokens/s
 *            (the mean over the steps), and whether its tokens are the
 *            decode loop's (same_tokens_as_decode).
 * With WICK_GPU_COUNT_LAUNCHES=1 (a GPU plugin's launch counter), one
 * more decode step after the first context's, between two device
 * synchronizes, at each of which the plugin prints its count to stderr.
 * Prints one JSON object per measurement. Token ids are random
 * (seed 1), so the work does not depend on a tokenizer.
 * --tp N: the model split over N devices of --device's kind (cuda:0 ..
 * cuda:N-1; cli/ranks.h), one thread per rank, every rank running the
 * same loop (the logits are whole on every rank); rank 0 prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_llm.h"
#include "wick_comm.h"
#include "../cli/ranks.h"
#include "../cli/timing.h"
#include "bench_args.h"


/* wk_llm_generate's tokens, kept */
typedef struct gen_seq {
    int32_t *toks;
    int64_t n, cap;
} gen_seq;

static bool keep_token(void *user, int32_t token, const char *text, size_t len)
{
    (void)text, (void)len;
    gen_seq *g = user;
    if (token >= 0 && g->n < g->cap) g->toks[g->n++] = token;
    return true;
}

static int32_t argmax(const float *v, int64_t n)
{
    int64_t b = 0;
    for (int64_t j = 1; j < n; j++)
        if (v[j] > v[b]) b = j;
    return (int32_t)b;
}

typedef struct bench_cfg {
    const char *model, *device, *dtype, *label;
    int64_t prefill, steps, reps, chunk, at[8];
    int n_at, tp;
} bench_cfg;

/* Loads the model (one rank's share when comm is set) and runs every
 * measurement; only the lead (rank 0, or the only rank) prints. */
static int bench_run(wk_comm *comm, void *arg)
{
    const bench_cfg *c = arg;
    const bool lead = !comm || wk_comm_rank(comm) == 0;
    const char *label = c->label;
    const int64_t prefill = c->prefill, steps = c->steps, reps = c->reps;
    int64_t ctx = prefill;
    for (int i = 0; i < c->n_at; i++)
        if (c->at[i] + steps + 1 > ctx) ctx = c->at[i] + steps + 1;
    wk_device *dev = comm ? wk_comm_device(comm) : wk_device_open(c->device);
    if (!dev) {
        fprintf(stderr, "wick-llm-bench: %s\n", wk_last_error());
        return 1;
    }
    wk_llm_options o = { .act_dtype = !strcmp(c->dtype, "f32") ? WK_F32 : WK_BF16, .context = ctx,
                         .prefill_chunk = c->chunk ? c->chunk : (prefill > 0 ? prefill : 512),
                         .progress = WK_PROGRESS_OFF, .comm = comm };
    double t0 = wk_now_ms();
    wk_llm *m = wk_llm_load(c->model, dev, &o);
    if (!m) {
        fprintf(stderr, "wick-llm-bench: %s\n", wk_last_error());
        if (!comm) wk_device_close(dev);
        return 1;
    }
    const double load_ms = wk_now_ms() - t0;
    const wk_llm_info *in = wk_llm_get_info(m);
    const int64_t V = in->n_vocab;
    if (lead) {
        printf("{\"label\": \"%s\", \"what\": \"load\", \"device\": \"%s\", \"tp\": %d, \"weight_dtype\": \"%s\", "
               "\"act\": \"%s\", \"weight_bytes\": %llu, \"n_vocab\": %lld, \"n_embd\": %lld, \"n_layer\": %lld, "
               "\"context\": %lld, \"load_ms\": %.0f}\n",
               label, c->device, in->tp_size, wk_dtype_name(in->weight_dtype), wk_dtype_name(in->act_dtype),
               (unsigned long long)in->weight_bytes, (long long)V, (long long)in->n_embd, (long long)in->n_layer,
               (long long)ctx, load_ms);
        fflush(stdout);
    }
    /* the same random ids on every rank (seed 1) */
    int32_t *toks = malloc((size_t)ctx * sizeof *toks);
    float *lg = malloc((size_t)V * sizeof *lg);
    double *ts = malloc((size_t)(reps + steps + 1) * sizeof *ts);
    int32_t *seq = malloc((size_t)(steps + 1) * sizeof *seq), *gen = malloc((size_t)steps * sizeof *gen);
    if (!toks || !lg || !ts || !seq || !gen) goto fail;
    uint64_t seed = 1;
    for (int64_t i = 0; i < ctx; i++) toks[i] = (int32_t)(rnd(&seed) % (uint32_t)V);

    if (prefill > 0) {
        for (int64_t r = 0; r <= reps; r++) {
            if (wk_llm_rewind(m, 0)) goto fail;
            t0 = wk_now_ms();
            if (wk_llm_eval(m, toks, prefill, false, lg)) goto fail;
            const double ms = wk_now_ms() - t0;
            if (r > 0) ts[r - 1] = ms;
        }
        const double med = wk_median(ts, (int)reps);
        if (lead)
            printf("{\"label\": \"%s\", \"what\": \"prefill\", \"tokens\": %lld, \"chunk\": %lld, \"reps\": %lld, "
                   "\"median_ms\": %.3f, \"min_ms\": %.3f, \"tokens_per_s\": %.1f}\n",
                   label, (long long)prefill, (long long)o.prefill_chunk, (long long)reps, med, ts[0],
                   1e3 * (double)prefill / med);
        fflush(stdout);
    }
    for (int i = 0; i < c->n_at; i++) {
        const int64_t at = c->at[i];
        if (wk_llm_rewind(m, 0)) goto fail;
        if (at > 0 && wk_llm_eval(m, toks, at, false, lg)) goto fail;
        int32_t tok = at > 0 ? argmax(lg, V) : 1;
        double sum = 0;
        int64_t timed = 0;
        seq[0] = tok;
        for (int64_t s = 0; s < steps; s++) {
            t0 = wk_now_ms();
            if (wk_llm_eval(m, &tok, 1, false, lg)) goto fail;
            seq[s + 1] = tok = argmax(lg, V);
            const double ms = wk_now_ms() - t0;
            if (s >= 4) {
                ts[timed++] = ms;
                sum += ms;
            }
        }
        const double mean = sum / (double)timed, med = wk_median(ts, (int)timed);
        if (lead)
            printf("{\"label\": \"%s\", \"what\": \"decode\", \"context\": %lld, \"steps\": %lld, \"median_ms\": %.4f, "
                   "\"min_ms\": %.4f, \"mean_ms\": %.4f, \"tokens_per_s\": %.1f, \"tokens_per_s_mean\": %.1f}\n",
                   label, (long long)at, (long long)timed, med, ts[0], mean, 1e3 / med, 1e3 / mean);
        fflush(stdout);
        /* the same through wk_llm_generate, greedy: the argmax on the
           device, 4 bytes back per step (gen_ms: steps - 1 evals and
           the first token's choice) */
        if (at > 0) {
            wk_generate_opts go = { .sampling = wk_sampling_greedy(), .max_tokens = 4, .ignore_eog = true };
            wk_generate_stats gs;
            gen_seq gq = { gen, 0, steps };
            /* untimed, as the decode loop's first steps: a first greedy
               step records what later ones replay */
            if (wk_llm_rewind(m, 0) || wk_llm_generate(m, toks, at, &go, keep_token, &gq, &gs)) goto fail;
            gq.n = 0;
            go.max_tokens = steps;
            if (wk_llm_rewind(m, 0)) goto fail;
            if (wk_llm_generate(m, toks, at, &go, keep_token, &gq, &gs)) goto fail;
            /* the same tokens as the loop above (the logits' argmax on the host) */
            const bool same = gq.n == steps && !memcmp(gen, seq, (size_t)steps * sizeof *gen);
            if (lead)
                printf("{\"label\": \"%s\", \"what\": \"generate\", \"context\": %lld, \"steps\": %lld, "
                       "\"gen_ms\": %.3f, \"tokens_per_s\": %.1f, \"same_tokens_as_decode\": %s}\n",
                       label, (long long)at, (long long)gs.gen_tokens, gs.gen_ms,
                       1e3 * (double)(gs.gen_tokens - 1) / gs.gen_ms, same ? "true" : "false");
            fflush(stdout);
        }
        if (i == 0 && lead && !comm && getenv("WICK_GPU_COUNT_LAUNCHES")) {
            /* the plugin prints its launch count at each synchronize:
               the difference of the two lines is one decode step's */
            fprintf(stderr, "wick-llm-bench: one decode step at context %lld between the next two counts\n",
                    (long long)(at + steps));
            if (wk_device_synchronize(dev)) goto fail;
            if (wk_llm_eval(m, &tok, 1, false, lg)) goto fail;
            if (wk_device_synchronize(dev)) goto fail;
        }
    }
    int rc = 0;
    if (0) {
fail:
        fprintf(stderr, "wick-llm-bench: %s\n", wk_last_error());
        rc = 1;
    }
    wk_llm_free(m);
    if (!comm) wk_device_close(dev);
    free(toks);
    free(lg);
    free(ts);
    free(seq);
    free(gen);
    return rc;
}

int main(int argc, char **argv)
{
    bench_cfg c = { .device = "cuda:0", .dtype = "bf16", .label = "", .prefill = 2048, .steps = 64, .reps = 3,
                    .at = { 512, 4096 }, .n_at = 2, .tp = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--device") && v) c.device = argv[++i];
        else if (!strcmp(a, "--dtype") && v) c.dtype = argv[++i];
        else if (!strcmp(a, "--prefill") && v) c.prefill = atoll(argv[++i]);
        else if (!strcmp(a, "--steps") && v) c.steps = atoll(argv[++i]);
        else if (!strcmp(a, "--reps") && v) c.reps = atoll(argv[++i]);
        else if (!strcmp(a, "--chunk") && v) c.chunk = atoll(argv[++i]);
        else if (!strcmp(a, "--tp") && v) c.tp = atoi(argv[++i]);
        else if (!strcmp(a, "--label") && v) c.label = argv[++i];
        else if (!strcmp(a, "--decode-at") && v) {
            c.n_at = parse_list(argv[++i], c.at, 8);
            if (c.n_at < 0) c.n_at = 0;
        } else if (!c.model && a[0] != '-') c.model = a;
        else {
            fprintf(stderr, "wick-llm-bench: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (!c.model || c.steps < 5 || c.reps < 1 || c.prefill < 0 || c.tp < 1 || c.tp > WK_MAX_RANKS) {
        fprintf(stderr, "usage: wick-llm-bench MODEL [--device D] [--dtype bf16|f32] [--prefill N] "
                        "[--decode-at C1,C2] [--steps S>=5] [--reps R] [--chunk T] [--tp N] [--label TEXT]\n");
        return 2;
    }
    if (c.tp == 1) return bench_run(NULL, &c);
    return wk_run_ranks(c.device, c.tp, bench_run, &c, "wick-llm-bench") != 0;
}
