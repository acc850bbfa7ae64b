/* engine_bench.c — build/wick-engine-bench: the batched engine's
 * throughput (include/wick_engine.h) on the workload of llama.cpp's
 * llama-batched-bench: B sequences, each a prompt of P random tokens (not
 * shared), G tokens generated (end tokens ignored), all submitted at once.
 *
 *   wick-engine-bench MODEL [--device D] [--dtype bf16|f32] [--batch 1,8,32,64]
 *                     [--prompt P] [--gen G] [--step-tokens N] [--block B]
 *                     [--shared-prefix S] [--label TEXT]
 *
 * For each B, a fresh engine (max_seqs B, N tokens a step, default 2048),
 * steps on this thread until every sequence ends:
 *   prefill: from the submission until every sequence has its first token
 *            -> B P / time, tokens/s (prompt chunks share steps with the
 *            first decode tokens, as a server's do);
 *   decode:  from then to the end -> B (G - 1) / time, tokens/s aggregate;
 *   ttft:    median and largest time to first token.
 * --shared-prefix S: the prefix-cache case instead: one request with a
 * system prompt of S tokens runs first (it fills the cache), then B users
 * each send those S tokens and 32 of their own; the B users' time to first
 * token (median, largest) and the tokens the cache served.
 * One JSON object per B. Token ids are random (seed 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_llm.h"
#include "wick_engine.h"
#include "../cli/timing.h"
#include "bench_args.h"


typedef struct req_state {
    double t_submit, t_first;
    int64_t n;
    bool done;
    wk_finish finish;
} req_state;

static void on_event(void *user, const wk_engine_event *ev)
{
    req_state *r = user;
    if (!ev->done && r->n++ == 0) r->t_first = wk_now_ms();
    if (ev->done) {
        r->done = true;
        r->finish = ev->finish;
    }
}

static bool run_all(wk_engine *e, int64_t max_steps)
{
    int64_t active = 1;
    for (int64_t i = 0; i < max_steps && active; i++)
        if (wk_engine_step(e, &active) != WK_OK) {
            fprintf(stderr, "wick-engine-bench: step: %s\n", wk_last_error());
            return false;
        }
    return active == 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: wick-engine-bench MODEL [--device D] [--dtype bf16|f32] [--batch 1,8,32,64] [--prompt P] "
                    "[--gen G] [--step-tokens N] [--block B] [--shared-prefix S] [--label TEXT]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *device = "cuda:0", *dtype = "bf16", *label = "";
    int64_t batches[16] = { 1, 8, 32, 64 }, P = 512, G = 128, step_tokens = 2048, block = 16, shared = 0;
    int n_b = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            model = a;
            continue;
        }
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--batch")) n_b = parse_list(v, batches, 16);
        else if (!strcmp(a, "--prompt")) P = atoll(v);
        else if (!strcmp(a, "--gen")) G = atoll(v);
        else if (!strcmp(a, "--step-tokens")) step_tokens = atoll(v);
        else if (!strcmp(a, "--block")) block = atoll(v);
        else if (!strcmp(a, "--shared-prefix")) shared = atoll(v);
        else if (!strcmp(a, "--label")) label = v;
        else return usage();
    }
    if (!model || n_b <= 0 || P <= 0 || G <= 1) return usage();
    wk_device *dev = wk_device_open(device);
    if (!dev) {
        fprintf(stderr, "wick-engine-bench: %s\n", wk_last_error());
        return 1;
    }
    const int64_t own = shared ? 32 : P, ctx = (shared ? shared + own : P) + G + 1;
    wk_llm_options o = { .act_dtype = !strcmp(dtype, "f32") ? WK_F32 : WK_BF16, .context = ctx,
                         .progress = WK_PROGRESS_OFF };
    wk_llm *m = wk_llm_load(model, dev, &o);
    if (!m) {
        fprintf(stderr, "wick-engine-bench: %s\n", wk_last_error());
        return 1;
    }
    const int64_t V = wk_llm_get_info(m)->n_vocab, plen = shared ? shared + own : P;
    uint64_t seed = 1;
    int rc = 0;
    for (int bi = 0; bi < n_b && rc == 0; bi++) {
        const int64_t B = batches[bi];
        const wk_engine_options eo = { .max_seqs = B, .max_batch_tokens = step_tokens, .block_size = block };
        wk_engine *e = wk_engine_new(m, &eo);
        int32_t *prompts = malloc((size_t)(B * plen) * sizeof *prompts);
        req_state *rs = calloc((size_t)B + 1, sizeof *rs);
        if (!e || !prompts || !rs) {
            fprintf(stderr, "wick-engine-bench: %s\n", e ? "out of memory" : wk_last_error());
            rc = 1;
        }
        for (int64_t i = 0; rc == 0 && i < B * plen; i++) prompts[i] = (int32_t)(rnd(&seed) % (uint32_t)V);
        if (rc == 0 && shared) {   /* the system prompt, once, fills the cache */
            for (int64_t b = 1; b < B; b++) memcpy(prompts + b * plen, prompts, (size_t)shared * sizeof *prompts);
            const wk_request w = { .prompt = prompts, .n_prompt = shared + 1, .max_tokens = 1, .ignore_eog = true,
                                   .on_event = on_event, .user = &rs[B] };
            if (wk_engine_submit(e, &w) < 0 || !run_all(e, 100000)) rc = 1;
        }
        /* a warm-up step shape: one short request (kernels loaded, graphs of the plugin's first calls) */
        if (rc == 0) {
            req_state warm = { 0 };
            const wk_request w = { .prompt = prompts + plen - 8, .n_prompt = 8, .max_tokens = 2, .ignore_eog = true,
                                   .on_event = on_event, .user = &warm };
            if (wk_engine_submit(e, &w) < 0 || !run_all(e, 1000)) rc = 1;
        }
        const double t0 = wk_now_ms();
        for (int64_t b = 0; rc == 0 && b < B; b++) {
            const wk_request r = { .prompt = prompts + b * plen, .n_prompt = plen, .max_tokens = G, .ignore_eog = true,
                                   .on_event = on_event, .user = &rs[b] };
            rs[b].t_submit = t0;
            if (wk_engine_submit(e, &r) < 0) {
                fprintf(stderr, "wick-engine-bench: submit: %s\n", wk_last_error());
                rc = 1;
            }
        }
        if (rc == 0 && !run_all(e, 10000000)) rc = 1;
        const double t1 = wk_now_ms();
        if (rc == 0) {
            double first_all = 0, *ttft = malloc((size_t)B * sizeof *ttft);
            int64_t gen = 0;
            bool all = true;
            for (int64_t b = 0; b < B; b++) {
                ttft[b] = rs[b].t_first - t0;
                if (rs[b].t_first > first_all) first_all = rs[b].t_first;
                gen += rs[b].n;
                all = all && rs[b].done && rs[b].finish == WK_FINISH_LENGTH && rs[b].n == G;
            }
            const double ttft_max = first_all - t0, ttft_med = wk_median(ttft, (int)B);
            wk_engine_stats st;
            wk_engine_get_stats(e, &st);
            const double dec_ms = t1 - first_all;
            printf("{\"label\":\"%s\",\"model\":\"%s\",\"device\":\"%s\",\"dtype\":\"%s\",\"batch\":%lld,\"prompt\":%lld,"
                   "\"gen\":%lld,\"shared_prefix\":%lld,\"step_tokens\":%lld,\"block\":%lld,\"all_complete\":%s,"
                   "\"prefill_tok_s\":%.1f,\"decode_tok_s\":%.1f,\"total_s\":%.3f,\"ttft_median_ms\":%.1f,"
                   "\"ttft_max_ms\":%.1f,\"cached_tokens\":%lld,\"steps\":%lld,\"preemptions\":%lld,\"kv_blocks\":%lld}\n",
                   label, model, device, dtype, (long long)B, (long long)plen, (long long)G, (long long)shared,
                   (long long)step_tokens, (long long)block, all ? "true" : "false",
                   (double)(B * plen) / (ttft_max / 1e3), dec_ms > 0 ? (double)(gen - B) / (dec_ms / 1e3) : 0.0,
                   (t1 - t0) / 1e3, ttft_med, ttft_max, (long long)st.cached_tokens, (long long)st.steps,
                   (long long)st.preemptions, (long long)st.blocks_total);
            fflush(stdout);
            free(ttft);
        }
        wk_engine_free(e);
        free(prompts);
        free(rs);
    }
    wk_llm_free(m);
    wk_device_close(dev);
    return rc;
}
