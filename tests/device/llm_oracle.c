/* llm_oracle.c — build/wick-llm-oracle, the wick side of the model oracle
 * (tools/llm_oracle.py runs it against Hugging Face transformers on the
 * device machine).
 *
 *   wick-llm-oracle MODEL --device D --dtype f32|bf16 --prompt 1,2,3
 *                   [--force 4,5,6] [--dequantize] [--tp N] [--chunk T] --out FILE
 *
 * Loads MODEL, runs the prompt in one prefill (the logits of every
 * position), then one token per step: the --force ids when given (teacher
 * forcing, so the rows line up with the reference's), else wick's own
 * greedy choice, 32 steps. FILE: int32 rows (np + steps - 1), int32 vocab,
 * int32 steps, the steps' tokens (int32), then rows x vocab f32 logits:
 * the prompt's positions, then one row per decode step (row np - 1 + i is
 * the one step i's token is chosen from). Prints the timings as JSON.
 * --tp N: the model split over N devices of D's kind (cuda:0 .. cuda:N-1,
 * one thread each, cli/ranks.h); every rank runs the same steps, rank 0
 * writes FILE. --chunk T: prefill chunks of T tokens (the default 512;
 * small ones give sliding-window layers window caches, docs/models.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick.h"
#include "wick_llm.h"
#include "wick_comm.h"
#include "../../cli/ranks.h"

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

typedef struct oracle_cfg {
    const char *model, *device, *dtype, *out;
    bool deq, forced;
    const int32_t *p, *f;
    int64_t np, nf, chunk;
} oracle_cfg;

/* The prefill and the steps on one device, or on one rank of comm */
static int oracle_run(wk_comm *comm, void *arg)
{
    const oracle_cfg *c = arg;
    const int64_t np = c->np, nf = c->nf;
    const bool lead = !comm || wk_comm_rank(comm) == 0;
    wk_device *dev = comm ? wk_comm_device(comm) : wk_device_open(c->device);
    if (!dev) {
        fprintf(stderr, "wick-llm-oracle: %s\n", wk_last_error());
        return 1;
    }
    wk_llm_options o = { .act_dtype = !strcmp(c->dtype, "bf16") ? WK_BF16 : WK_F32, .context = np + nf + 1,
                         .prefill_chunk = c->chunk, .dequantize = c->deq, .progress = WK_PROGRESS_OFF, .comm = comm };
    double t0 = now_ms();
    wk_llm *m = wk_llm_load(c->model, dev, &o);
    if (!m) {
        fprintf(stderr, "wick-llm-oracle: %s\n", wk_last_error());
        if (!comm) wk_device_close(dev);
        return 1;
    }
    const double load_ms = now_ms() - t0;
    const int64_t V = wk_llm_get_info(m)->n_vocab;
    float *lg = malloc((size_t)(np + nf) * (size_t)V * sizeof *lg);
    int32_t *steps = malloc((size_t)nf * sizeof *steps);
    int rc = 1;
    double prefill_ms = 0, decode_ms = 0;
    if (!lg || !steps) goto done;
    t0 = now_ms();
    if (wk_llm_eval(m, c->p, np, true, lg)) {
        fprintf(stderr, "wick-llm-oracle: prefill: %s\n", wk_last_error());
        goto done;
    }
    prefill_ms = now_ms() - t0;
    t0 = now_ms();
    for (int64_t i = 0; i < nf; i++) {
        const float *row = lg + (np - 1 + i) * V;
        int32_t b = 0;
        for (int64_t j = 1; j < V; j++)
            if (row[j] > row[b]) b = (int32_t)j;
        steps[i] = c->forced ? c->f[i] : b;
        if (i + 1 == nf) break;   /* the last step's token needs no logits */
        if (wk_llm_eval(m, &steps[i], 1, false, lg + (np + i) * V)) {
            fprintf(stderr, "wick-llm-oracle: step %lld: %s\n", (long long)i, wk_last_error());
            goto done;
        }
    }
    decode_ms = now_ms() - t0;
    rc = 0;
    if (lead) {
        FILE *fo = fopen(c->out, "wb");
        int32_t hdr[3] = { (int32_t)(np + nf - 1), (int32_t)V, (int32_t)nf };
        if (!fo || fwrite(hdr, 4, 3, fo) != 3 || fwrite(steps, 4, (size_t)nf, fo) != (size_t)nf ||
            fwrite(lg, 4, (size_t)((np + nf - 1) * V), fo) != (size_t)((np + nf - 1) * V) || fclose(fo)) {
            fprintf(stderr, "wick-llm-oracle: cannot write %s\n", c->out);
            rc = 1;
        } else
            printf("{\"load_ms\": %.1f, \"prefill_ms\": %.2f, \"prefill_tokens\": %lld, \"decode_ms\": %.2f, "
                   "\"decode_steps\": %lld, \"tp\": %d}\n",
                   load_ms, prefill_ms, (long long)np, decode_ms, (long long)(nf - 1), comm ? wk_comm_size(comm) : 1);
    }
done:
    wk_llm_free(m);
    if (!comm) wk_device_close(dev);
    free(lg);
    free(steps);
    return rc;
}

int main(int argc, char **argv)
{
    const char *prompt = NULL, *force = NULL;
    oracle_cfg c = { .device = "cpu", .dtype = "f32" };
    int tp = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) c.device = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) c.dtype = argv[++i];
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = argv[++i];
        else if (!strcmp(argv[i], "--force") && i + 1 < argc) force = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) c.out = argv[++i];
        else if (!strcmp(argv[i], "--tp") && i + 1 < argc) tp = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) c.chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--dequantize")) c.deq = true;
        else if (!c.model && argv[i][0] != '-') c.model = argv[i];
        else {
            fprintf(stderr, "wick-llm-oracle: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!c.model || !prompt || !c.out || tp < 1 || tp > WK_MAX_RANKS || c.chunk < 0) {
        fprintf(stderr, "usage: wick-llm-oracle MODEL --device D --dtype f32|bf16 --prompt IDS [--force IDS] "
                        "[--tp N] [--chunk T] --out FILE\n");
        return 2;
    }
    static int32_t p[8192], f[1024];
    c.np = parse_ids(prompt, p, 8192);
    c.nf = force ? parse_ids(force, f, 1024) : 32;
    c.p = p, c.f = f, c.forced = force != NULL;
    if (c.np <= 0 || c.nf <= 0) {
        fprintf(stderr, "wick-llm-oracle: bad ids\n");
        return 2;
    }
    if (tp == 1) return oracle_run(NULL, &c);
    return wk_run_ranks(c.device, tp, oracle_run, &c, "wick-llm-oracle") != 0;
}
