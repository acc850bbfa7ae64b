/* test_llm_batch.c — forward passes over flat batches of many sequences
 * with a paged KV cache (wk_llm_kv, wk_llm_eval_batch), on the cpu and on
 * every GPU:
 *   llm_batch/<dev>/<arch>/<file>   sequences of different lengths arriving
 *                                   at different steps, fed in random chunks
 *                                   (decode rows and prefill chunks in one
 *                                   batch), blocks of 4 positions taken
 *                                   from the pool in a shuffled order: every
 *                                   row's logits against the float64
 *                                   reference of its sequence alone
 *   llm_batch/<dev>/argmax          the device's argmax rows equal the
 *                                   logits' first largest index
 *   llm_batch/errors                ids out of range, NULL and mismatched
 *                                   arguments: clear errors, nothing run
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "wick_ext.h"
#include "t_llm_model.h"

enum { BS = 4, NSEQ = 4, MAXLEN = 40, MB = (MAXLEN + BS - 1) / BS };

/* N sequences, their tokens and the order their blocks come from the pool */
typedef struct plan {
    int n;
    int len[NSEQ], start[NSEQ];      /* tokens; the step at which it arrives */
    int32_t tok[NSEQ][MAXLEN];
    int32_t table[NSEQ * MB];
} plan;

static plan make_plan(const tcfg *c, int n)
{
    plan p = { .n = n };
    int32_t ids[NSEQ * MB];
    for (int i = 0; i < NSEQ * MB; i++) ids[i] = i;
    for (int i = NSEQ * MB - 1; i > 0; i--) {   /* shuffled block ids */
        const int j = (int)t_rng_int(t_r(), 0, i), t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    for (int s = 0; s < n; s++) {
        p.len[s] = (int)t_rng_int(t_r(), 5, MAXLEN);
        p.start[s] = (int)t_rng_int(t_r(), 0, 4);
        for (int i = 0; i < p.len[s]; i++) p.tok[s][i] = (int32_t)t_rng_int(t_r(), 0, c->V - 1);
        for (int b = 0; b < MB; b++) p.table[s * MB + b] = ids[s * MB + b];
    }
    return p;
}

/* Runs the plan's sequences in steps (each sequence, from its arrival,
 * gives a chunk of 1..max_chunk of its next tokens; only: just that
 * sequence) and puts every token's logits in lg[s][i]. */
static bool run_plan(wk_llm *m, wk_llm_kv *kv, const plan *p, int max_chunk, int only, float **lg)
{
    const int64_t V = wk_llm_get_info(m)->n_vocab;
    int done[NSEQ] = { 0 };
    int32_t tok[NSEQ * MAXLEN], pos[NSEQ * MAXLEN], seq[NSEQ * MAXLEN], out[NSEQ * MAXLEN];
    int who[NSEQ * MAXLEN];
    float *buf = t_mem((size_t)(NSEQ * MAXLEN) * (size_t)V * sizeof *buf);
    for (int step = 0; step < 200; step++) {
        int T = 0;
        for (int s = 0; s < p->n; s++) {
            if ((only >= 0 && s != only) || (only < 0 && step < p->start[s]) || done[s] == p->len[s]) continue;
            int k = (int)t_rng_int(t_r(), 1, max_chunk);
            if (k > p->len[s] - done[s]) k = p->len[s] - done[s];
            for (int i = 0; i < k; i++, T++) {
                tok[T] = p->tok[s][done[s] + i];
                pos[T] = done[s] + i;
                seq[T] = s;
                out[T] = T;
                who[T] = s;
            }
            done[s] += k;
        }
        if (T == 0) {
            bool all = true;
            for (int s = 0; s < p->n; s++) all = all && (only >= 0 ? s != only || done[s] == p->len[s] : done[s] == p->len[s]);
            if (all) return true;
            continue;
        }
        const wk_llm_batch b = { .n_tokens = T, .tokens = tok, .pos = pos, .seq = seq, .n_seqs = p->n, .max_blocks = MB,
                                 .block_table = p->table, .n_out = T, .out = out };
        if (wk_llm_eval_batch(m, kv, &b, buf, NULL) != WK_OK) {
            t_fail("step %d (%d tokens): %s", step, T, wk_last_error());
            return false;
        }
        for (int i = 0; i < T; i++) memcpy(lg[who[i]] + (int64_t)pos[i] * V, buf + (int64_t)i * V, (size_t)V * sizeof *buf);
    }
    t_fail("the plan did not finish in 200 steps");
    return false;
}


static float **alloc_logits(int n, int64_t V)
{
    float **lg = t_mem((size_t)n * sizeof *lg);
    for (int s = 0; s < n; s++) {
        lg[s] = t_mem((size_t)MAXLEN * (size_t)V * sizeof **lg);
        for (int64_t i = 0; i < MAXLEN * V; i++) lg[s][i] = NAN;   /* poison: a row never written fails */
    }
    return lg;
}

static wk_llm *load_model(const tmodel *tm, const char *path, wk_device *dev)
{
    if (!(tm->c.hf ? write_hf(tm, path) : write_gguf(tm, path, WK_F32))) return NULL;
    wk_llm_options o = { .context = 64 };
    wk_llm *m = wk_llm_load(path, dev, &o);
    if (!m) t_fail("wk_llm_load(%s): %s", path, wk_last_error());
    return m;
}

static void check_against_reference(wk_device *dev, int arch, bool hf)
{
    tcfg c = cfg_of(arch, hf);
    tmodel tm = make_model(c);
    const char *path = tmp_path(hf ? "batch-hf" : "batch.gguf");
    wk_llm *m = load_model(&tm, path, dev);
    wk_llm_kv *kv = m ? wk_llm_kv_new(m, NSEQ * MB, BS) : NULL;
    if (m) T_CHECK(kv, "wk_llm_kv_new: %s", wk_last_error());
    if (kv) {
        plan p = make_plan(&c, NSEQ);
        float **lg = alloc_logits(NSEQ, c.V);
        if (run_plan(m, kv, &p, 6, -1, lg))
            for (int s = 0; s < NSEQ; s++) {
                double *ref = ref_forward(&tm, p.tok[s], p.len[s]);
                const double e = rel_err(lg[s], ref, (int64_t)p.len[s] * c.V);
                T_CHECK(e < 2e-4, "sequence %d (%d tokens): logits differ from the reference by %.3g", s, p.len[s], e);
            }
    }
    wk_llm_kv_free(kv);
    wk_llm_free(m);
    rm_model(path);
}

static void check_argmax(wk_device *dev)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("batch-argmax.gguf");
    wk_llm *m = load_model(&tm, path, dev);
    wk_llm_kv *kv = m ? wk_llm_kv_new(m, 8, BS) : NULL;
    if (kv) {
        /* two sequences of 6 and 3 tokens in one batch; rows 5 and 8 out */
        int32_t tok[9], pos[9], seq[9], table[2 * 2] = { 3, 1, 6, 0 }, out[2] = { 5, 8 }, best[2] = { -1, -1 };
        int32_t best2[2] = { -2, -2 };
        for (int i = 0; i < 9; i++) {
            tok[i] = (int32_t)t_rng_int(t_r(), 0, c.V - 1);
            seq[i] = i < 6 ? 0 : 1;
            pos[i] = i < 6 ? i : i - 6;
        }
        const wk_llm_batch b = { .n_tokens = 9, .tokens = tok, .pos = pos, .seq = seq, .n_seqs = 2, .max_blocks = 2,
                                 .block_table = table, .n_out = 2, .out = out };
        float *lg = t_mem(2 * (size_t)c.V * sizeof *lg);
        T_CHECK(wk_llm_eval_batch(m, kv, &b, NULL, best) == WK_OK, "argmax only: %s", wk_last_error());
        T_CHECK(wk_llm_eval_batch(m, kv, &b, lg, best2) == WK_OK, "logits and argmax: %s", wk_last_error());
        for (int r = 0; r < 2; r++) {
            int a = 0;
            for (int i = 1; i < c.V; i++)
                if (lg[r * c.V + i] > lg[r * c.V + a]) a = i;
            T_CHECK(best[r] == a && best2[r] == a, "row %d: argmax %d (device) and %d (with logits), logits' %d", r,
                    best[r], best2[r], a);
        }
    }
    wk_llm_kv_free(kv);
    wk_llm_free(m);
    rm_model(path);
}

static void check_errors(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *path = tmp_path("batch-err.gguf");
    wk_llm *m = load_model(&tm, path, t_dev());
    wk_llm *m2 = m ? load_model(&tm, tmp_path("batch-err2.gguf"), t_dev()) : NULL;
    wk_llm_kv *kv = m ? wk_llm_kv_new(m, 4, BS) : NULL;
    T_CHECK(!wk_llm_kv_new(NULL, 4, BS) && !wk_llm_kv_new(m, 0, BS) && !wk_llm_kv_new(m, 4, 0),
            "wk_llm_kv_new refuses a NULL model and empty pools");
    if (kv && m2) {
        int32_t tok[2] = { 1, 2 }, pos[2] = { 0, 1 }, seq[2] = { 0, 0 }, table[2] = { 2, 3 }, out[1] = { 1 };
        wk_llm_batch b = { .n_tokens = 2, .tokens = tok, .pos = pos, .seq = seq, .n_seqs = 1, .max_blocks = 2,
                           .block_table = table, .n_out = 1, .out = out };
        float *lg = t_mem((size_t)c.V * sizeof *lg);
        T_CHECK(wk_llm_eval_batch(m, kv, &b, lg, NULL) == WK_OK, "a good batch: %s", wk_last_error());
#define BAD(what, st, ...)                                                                                            \
    do {                                                                                                             \
        wk_llm_batch x = b;                                                                                          \
        int32_t t2[2] = { 1, 2 }, p2[2] = { 0, 1 }, s2[2] = { 0, 0 }, tb2[2] = { 2, 3 }, o2[1] = { 1 };             \
        x.tokens = t2, x.pos = p2, x.seq = s2, x.block_table = tb2, x.out = o2;                                      \
        __VA_ARGS__;                                                                                                 \
        const wk_status got = wk_llm_eval_batch(m, kv, &x, lg, NULL);                                                \
        T_CHECK(got == (st), "%s: status %s (%s)", what, wk_status_name(got), wk_last_error());                     \
    } while (0)
        BAD("a token outside the vocabulary", WK_ERR_INDEX, t2[1] = c.V);
        BAD("a negative token", WK_ERR_INDEX, t2[0] = -1);
        BAD("a sequence outside the table", WK_ERR_INDEX, s2[1] = 1);
        BAD("a position past the table", WK_ERR_INDEX, p2[1] = 2 * BS);
        BAD("a negative position", WK_ERR_INDEX, p2[0] = -1);
        BAD("a block outside the pool", WK_ERR_INDEX, tb2[0] = 4);
        BAD("an output row past the batch", WK_ERR_INDEX, o2[0] = 2);
        BAD("no tokens", WK_ERR_ARGUMENT, x.n_tokens = 0);
        BAD("no block table", WK_ERR_ARGUMENT, x.block_table = NULL);
        BAD("rows without their list", WK_ERR_ARGUMENT, x.out = NULL);
#undef BAD
        T_CHECK(wk_llm_eval_batch(m2, kv, &b, lg, NULL) == WK_ERR_ARGUMENT && strstr(wk_last_error(), "another"),
                "a cache of another model: %s", wk_last_error());
        T_CHECK(wk_llm_eval_batch(m, NULL, &b, lg, NULL) == WK_ERR_ARGUMENT, "a NULL cache");
        T_CHECK(wk_llm_eval_batch(m, kv, NULL, lg, NULL) == WK_ERR_ARGUMENT, "a NULL batch");
        T_CHECK(wk_llm_eval_batch(m, kv, &b, lg, NULL) == WK_OK, "a good batch after the bad ones: %s", wk_last_error());
    }
    wk_llm_kv_free(kv);
    wk_llm_free(m2);
    wk_llm_free(m);
    rm_model(path);
    rm_model(tmp_path("batch-err2.gguf"));
}

/* Batch invariance on the cpu: a quantized model's logits for a sequence
 * are the same bits alone (in chunks of 1..3 tokens) as among the other
 * sequences (chunks of 1..6, arriving at different steps), on the
 * integer path and on the exact path of the quantized products
 * (docs/engine.md). wdt: the weights' type; E, F, H x D multiples of its
 * block. */
static void check_invariance(wk_dtype wdt, int E, int F, int H, int D)
{
    tcfg c = cfg_of(A_LLAMA, false);
    c.E = E, c.F = F, c.H = H, c.Hkv = H / 2, c.D = D;
    tmodel tm = make_model(c);
    const char *path = tmp_path("batch-inv.gguf");
    wk_llm_options o = { .context = 64 };
    wk_llm *m = write_gguf(&tm, path, wdt) ? wk_llm_load(path, t_dev(), &o) : NULL;
    if (!m) t_fail("wk_llm_load(%s): %s", path, wk_last_error());
    const char *old = getenv("WICK_CPU_QDOT");
    char *keep = old ? strdup(old) : NULL;
    static const char *const modes[] = { "1", "0" };
    for (int mi = 0; m && mi < 2 && !t_case_failed(); mi++) {
        setenv("WICK_CPU_QDOT", modes[mi], 1);
        wk_env_refresh();
        wk_llm_kv *kv = wk_llm_kv_new(m, NSEQ * MB, BS);
        T_CHECK(kv, "wk_llm_kv_new: %s", wk_last_error());
        plan p = make_plan(&c, NSEQ);
        float **all = alloc_logits(NSEQ, c.V), **one = alloc_logits(NSEQ, c.V);
        if (kv && run_plan(m, kv, &p, 6, -1, all))
            for (int s = 0; s < NSEQ && !t_case_failed(); s++)
                if (run_plan(m, kv, &p, 1 + s % 3, s, one))
                    T_CHECK(!memcmp(all[s], one[s], (size_t)p.len[s] * (size_t)c.V * sizeof(float)),
                            "WICK_CPU_QDOT=%s: sequence %d's logits alone (chunks of 1..%d) differ from its logits in "
                            "the batch", modes[mi], s, 1 + s % 3);
        wk_llm_kv_free(kv);
    }
    if (keep) setenv("WICK_CPU_QDOT", keep, 1);
    else unsetenv("WICK_CPU_QDOT");
    wk_env_refresh();
    free(keep);
    wk_llm_free(m);
    rm_model(path);
}

static void on_device(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    for (int a = 0; a < 4; a++)
        for (int hf = 0; hf < 2; hf++)
            if (t_case("llm_batch/%s/%s/%s", name, arch_names[a], hf ? "hf" : "gguf")) check_against_reference(dev, a, hf);
    if (t_case("llm_batch/%s/argmax", name)) check_argmax(dev);
}

T_SUITE(llm_batch)
{
    on_device(t_dev(), "cpu", NULL);
    t_each_gpu(on_device, NULL);
    if (t_case("llm_batch/errors")) check_errors();
    if (t_case("llm_batch/cpu/invariance/q4_0")) check_invariance(WK_Q4_0, 64, 96, 4, 16);
    if (t_case("llm_batch/cpu/invariance/q4_k")) check_invariance(WK_Q4_K, 256, 256, 4, 64);
}
