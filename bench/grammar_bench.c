/* grammar_bench.c — build/wick-grammar-bench: what constrained sampling
 * costs per token (wick_llm.h's wk_grammar_state_mask; docs/grammar.md).
 *
 *   wick-grammar-bench MODEL [--schema JSON | --object] [--tokens N]
 *                      [--seed S] [--device D]
 *
 * Indexes the model's vocabulary (timed once), then generates N tokens in
 * one stream: the model's logits (wk_llm_eval), the grammar's mask, the
 * masked logits sampled at temperature 1 (seeded), the token accepted;
 * when a reply is over, another begins from the same prompt. Prints the
 * mask's time per token (mean, median, 99th percentile, largest; wall
 * clock and the thread's CPU time, which a busy shared machine does not
 * inflate) next to the forward pass's, and the tokens allowed on average. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_llm.h"
#include "../cli/timing.h"

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void stats(double *v, long n, double *mean, double *med, double *p99, double *mx)
{
    *mean = *mx = 0;
    for (long i = 0; i < n; i++) {
        *mean += v[i];
        *mx = v[i] > *mx ? v[i] : *mx;
    }
    *mean /= (double)(n ? n : 1);
    *med = wk_median(v, (int)n);   /* sorts v */
    *p99 = n ? v[(long)((double)(n - 1) * 0.99)] : 0;
}

static const char *const default_schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},\"age\":{\"type\":\"integer\","
    "\"minimum\":0,\"maximum\":150},\"email\":{\"type\":[\"string\",\"null\"]},\"hobbies\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"string\"},\"maxItems\":5},\"address\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"zip\":{\"type\":\"string\",\"maxLength\":10}},\"required\":[\"city\"]}},\"required\":[\"name\",\"age\",\"hobbies\","
    "\"address\"],\"additionalProperties\":false}";

static int usage(void)
{
    fprintf(stderr, "usage: wick-grammar-bench MODEL [--schema JSON | --object] [--tokens N] [--seed S] [--device D]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *schema = default_schema, *device = "cpu";
    bool object = false;
    long n_tokens = 400;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--schema") && i + 1 < argc) schema = argv[++i];
        else if (!strcmp(argv[i], "--object")) object = true;
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) n_tokens = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else return usage();
    }
    if (!model || n_tokens <= 0) return usage();
    wk_device *dev = wk_device_open(device);
    wk_llm *m = dev ? wk_llm_load(model, dev, &(wk_llm_options){ .context = 4096 }) : NULL;
    wk_grammar *g = object ? wk_grammar_json_object() : wk_grammar_from_json_schema(schema, strlen(schema));
    if (!m || !g) {
        fprintf(stderr, "wick-grammar-bench: %s\n", wk_last_error());
        return 1;
    }
    double t0 = wk_now_ms();
    wk_grammar_vocab *v = wk_grammar_vocab_new(m);
    const double t_index = wk_now_ms() - t0;
    if (!v) {
        fprintf(stderr, "wick-grammar-bench: %s\n", wk_last_error());
        return 1;
    }
    const int32_t V = (int32_t)wk_llm_get_info(m)->n_vocab;
    const wk_chat_message msg = { .role = "user", .content = "Describe a person as JSON." };
    char *text = wk_llm_chat_apply(m, &msg, 1, true);
    int32_t *prompt = NULL;
    int64_t n_prompt = 0;
    if (!text || wk_llm_tokenize(m, text, strlen(text), wk_llm_get_info(m)->chat == WK_CHAT_NONE, &prompt, &n_prompt)) {
        fprintf(stderr, "wick-grammar-bench: %s\n", wk_last_error());
        return 1;
    }
    free(text);
    float *row = malloc((size_t)V * sizeof *row);
    uint32_t *mask = malloc(((size_t)V + 31) / 32 * sizeof *mask);
    double *t_mask = malloc((size_t)n_tokens * sizeof *t_mask), *t_fwd = malloc((size_t)n_tokens * sizeof *t_fwd),
           *c_mask = malloc((size_t)n_tokens * sizeof *c_mask);
    wk_sampling sp = wk_sampling_greedy();
    sp.temperature = 1.0;
    sp.seed = seed;
    wk_sampler *smp = wk_sampler_new(&sp, V);
    if (!row || !mask || !t_mask || !t_fwd || !c_mask || !smp) return 1;
    long done = 0, replies = 0, allowed_sum = 0;
    while (done < n_tokens) {
        wk_grammar_state *s = wk_grammar_state_new(g);
        wk_llm_rewind(m, 0);
        t0 = wk_now_ms();
        if (wk_llm_eval(m, prompt, n_prompt, false, row)) break;
        double fwd = wk_now_ms() - t0;
        while (done < n_tokens && !wk_grammar_state_finished(s)) {
            t0 = wk_now_ms();
            const double c0 = cpu_ms();
            const int64_t k = wk_grammar_state_mask(s, v, mask);
            c_mask[done] = cpu_ms() - c0;
            t_mask[done] = wk_now_ms() - t0;
            t_fwd[done] = fwd;
            if (k <= 0) break;
            allowed_sum += k;
            for (int32_t t = 0; t < V; t++)
                if (!(mask[t / 32] >> (t % 32) & 1)) row[t] = -INFINITY;
            const int32_t tok = wk_sampler_sample(smp, row);
            done++;
            if (tok < 0 || wk_grammar_state_accept_token(s, v, tok) != WK_OK || wk_llm_is_eog(m, tok)) break;
            t0 = wk_now_ms();
            if (wk_llm_eval(m, &tok, 1, false, row)) break;
            fwd = wk_now_ms() - t0;
        }
        replies++;
        wk_grammar_state_free(s);
    }
    double mean, med, p99, mx, cmean, cmed, cp99, cmx, fmean = 0;
    for (long i = 0; i < done; i++) fmean += t_fwd[i];
    fmean /= (double)(done ? done : 1);
    stats(t_mask, done, &mean, &med, &p99, &mx);
    stats(c_mask, done, &cmean, &cmed, &cp99, &cmx);
    printf("{\"model\": \"%s\", \"vocab\": %d, \"index_ms\": %.1f, \"schema\": \"%s\", \"tokens\": %ld, \"replies\": %ld, "
           "\"mask_ms\": {\"mean\": %.4f, \"median\": %.4f, \"p99\": %.4f, \"max\": %.4f}, "
           "\"mask_cpu_ms\": {\"mean\": %.4f, \"median\": %.4f, \"p99\": %.4f, \"max\": %.4f}, "
           "\"forward_ms_mean\": %.2f, \"allowed_mean\": %.0f}\n",
           model, (int)V, t_index, object ? "json_object" : schema == default_schema ? "person" : "given", done, replies,
           mean, med, p99, mx, cmean, cmed, cp99, cmx, fmean, (double)allowed_sum / (double)(done ? done : 1));
    wk_sampler_free(smp);
    free(row);
    free(mask);
    free(t_mask);
    free(t_fwd);
    free(c_mask);
    free(prompt);
    wk_grammar_vocab_free(v);
    wk_grammar_release(g);
    wk_llm_free(m);
    wk_device_close(dev);
    return 0;
}
