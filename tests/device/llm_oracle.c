/* llm_oracle.c — build/wick-llm-oracle, the wick side of the model oracle
 * (tools/llm_oracle.py runs it against Hugging Face transformers on the
 * device machine).
 *
 *   wick-llm-oracle MODEL --device D --dtype f32|bf16 --prompt 1,2,3
 *                   [--force 4,5,6] [--dequantize] --out FILE
 *
 * Loads MODEL, runs the prompt in one prefill (the logits of every
 * position), then one token per step: the --force ids when given (teacher
 * forcing, so the rows line up with the reference's), else wick's own
 * greedy choice, 32 steps. FILE: int32 rows (np + steps - 1), int32 vocab,
 * int32 steps, the steps' tokens (int32), then rows x vocab f32 logits:
 * the prompt's positions, then one row per decode step (row np - 1 + i is
 * the one step i's token is chosen from). Prints the timings as JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick.h"
#include "wick_llm.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int64_t parse_ids(const char *s, int32_t *out, int64_t cap)
{
    int64_t n = 0;
    while (*s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) return -1;
        out[n++] = (int32_t)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *device = "cpu", *dtype = "f32", *prompt = NULL, *force = NULL, *out = NULL;
    bool deq = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = argv[++i];
        else if (!strcmp(argv[i], "--force") && i + 1 < argc) force = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--dequantize")) deq = true;
        else if (!model && argv[i][0] != '-') model = argv[i];
        else {
            fprintf(stderr, "wick-llm-oracle: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!model || !prompt || !out) {
        fprintf(stderr, "usage: wick-llm-oracle MODEL --device D --dtype f32|bf16 --prompt IDS [--force IDS] --out FILE\n");
        return 2;
    }
    static int32_t p[8192], f[1024];
    const int64_t np = parse_ids(prompt, p, 8192), nf = force ? parse_ids(force, f, 1024) : 32;
    if (np <= 0 || nf < 0) {
        fprintf(stderr, "wick-llm-oracle: bad ids\n");
        return 2;
    }
    wk_device *dev = wk_device_open(device);
    if (!dev) {
        fprintf(stderr, "wick-llm-oracle: %s\n", wk_last_error());
        return 1;
    }
    wk_llm_options o = { .act_dtype = !strcmp(dtype, "bf16") ? WK_BF16 : WK_F32, .context = np + nf + 1,
                         .dequantize = deq, .progress = WK_PROGRESS_OFF };
    double t0 = now_ms();
    wk_llm *m = wk_llm_load(model, dev, &o);
    if (!m) {
        fprintf(stderr, "wick-llm-oracle: %s\n", wk_model_last_error());
        return 1;
    }
    const double load_ms = now_ms() - t0;
    const int64_t V = wk_llm_get_info(m)->n_vocab, rows = np + nf - 1 + 1;
    float *lg = malloc((size_t)(np + nf) * (size_t)V * sizeof *lg);
    int32_t *steps = malloc((size_t)nf * sizeof *steps);
    if (!lg || !steps) return 1;
    t0 = now_ms();
    if (wk_llm_eval(m, p, np, true, lg)) {
        fprintf(stderr, "wick-llm-oracle: prefill: %s\n", wk_model_last_error());
        return 1;
    }
    const double prefill_ms = now_ms() - t0;
    t0 = now_ms();
    for (int64_t i = 0; i < nf; i++) {
        const float *row = lg + (np - 1 + i) * V;
        int32_t b = 0;
        for (int64_t j = 1; j < V; j++)
            if (row[j] > row[b]) b = (int32_t)j;
        steps[i] = force ? f[i] : b;
        if (i + 1 == nf) break;   /* the last step's token needs no logits */
        if (wk_llm_eval(m, &steps[i], 1, false, lg + (np + i) * V)) {
            fprintf(stderr, "wick-llm-oracle: step %lld: %s\n", (long long)i, wk_model_last_error());
            return 1;
        }
    }
    const double decode_ms = now_ms() - t0;
    FILE *fo = fopen(out, "wb");
    int32_t hdr[3] = { (int32_t)(np + nf - 1), (int32_t)V, (int32_t)nf };
    (void)rows;
    if (!fo || fwrite(hdr, 4, 3, fo) != 3 || fwrite(steps, 4, (size_t)nf, fo) != (size_t)nf ||
        fwrite(lg, 4, (size_t)((np + nf - 1) * V), fo) != (size_t)((np + nf - 1) * V)) {
        fprintf(stderr, "wick-llm-oracle: cannot write %s\n", out);
        return 1;
    }
    fclose(fo);
    printf("{\"load_ms\": %.1f, \"prefill_ms\": %.2f, \"prefill_tokens\": %lld, \"decode_ms\": %.2f, \"decode_steps\": %lld}\n",
           load_ms, prefill_ms, (long long)np, decode_ms, (long long)(nf - 1));
    wk_llm_free(m);
    wk_device_close(dev);
    free(lg);
    free(steps);
    return 0;
}
