/* test_llm_moe.c — the mixture-of-experts families (Mixtral, Qwen2-MoE,
 * Qwen3-MoE, OLMoE) and Phi-3 against transformers' own random-weight
 * models (tests/data/moe_ref, made by tools/gen_moe_ref.py), each as a
 * safetensors folder and as the GGUF file llama.cpp's converter would
 * write from it:
 *
 *   llm_moe_ref/<case>/prefill   the logits of every position of the
 *                                prompt and transformers' greedy tokens in
 *                                one pass, within 1e-4 of each row's
 *                                largest |logit|, the argmax equal
 *   llm_moe_ref/<case>/chunks    the same in prefill steps of 5 tokens
 *   llm_moe_ref/<case>/decode    the prompt, then one token a step through
 *                                the KV cache (the decode path: one
 *                                token's experts), each step's argmax
 *                                equal to transformers' greedy token and
 *                                its logits within the same bound
 *   (qwen2moe_q8_0.gguf: its matrices and expert stacks Q8_0, on the cpu's
 *   exact path, against transformers on the dequantized weights)
 *   llm_moe_refuse/<key>         config.json keys the loader does not
 *                                implement, refused with a message naming
 *                                them (docs/model-config.md)
 *   llm_moe_tp/<case>            the model split over 2 ranks of the cpu
 *                                communicator (each expert's FFN rows and
 *                                columns, the shared expert's; Phi-3's
 *                                stacked q/k/v and gate/up by parts): each
 *                                rank's logits those of the whole model
 *   llm_moe_refuse/tp/<case>     OLMoE over more ranks than divide its KV
 *                                heads (its key norm spans them): refused
 *                                on every rank, naming why
 */
#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "wick_llm.h"
#include "wick_formats.h"
#include "wick_ext.h"
#include "wick_comm.h"

static const char *ref_dir(void)
{
    static const char *const dirs[] = { "tests/data/moe_ref", "../tests/data/moe_ref", "data/moe_ref" };
    char path[512];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/ref.json", dirs[i]);
        if (access(path, R_OK) == 0) return dirs[i];
    }
    return NULL;
}

static int64_t ints(const wk_json *a, int32_t *out, int64_t cap)
{
    int64_t n = (int64_t)wk_json_count(a);
    for (int64_t i = 0; i < n && i < cap; i++) {
        int64_t v = 0;
        wk_json_int(wk_json_item(a, (size_t)i), &v);
        out[i] = (int32_t)v;
    }
    return n < cap ? n : cap;
}

/* max |out - ref| / max |ref| of a row; *arg the argmax of out */
static double row_err(const float *out, const wk_json *row, int64_t nv, int64_t *arg, int64_t *ref_arg)
{
    double e = 0, s = 0, best = -INFINITY;
    int64_t a = 0;
    *ref_arg = 0;
    for (int64_t i = 0; i < nv; i++) {
        double r = 0;
        wk_json_number(wk_json_item(row, (size_t)i), &r);
        e = fmax(e, fabs(out[i] - r)), s = fmax(s, fabs(r));
        if (out[i] > out[a]) a = i;
        if (r > best) best = r, *ref_arg = i;
    }
    *arg = a;
    return e / (s > 0 ? s : 1);
}

T_SUITE(llm_moe_ref)
{
    const char *dir = ref_dir();
    char path[600];
    wk_json *ref = NULL;
    if (dir) {
        snprintf(path, sizeof path, "%s/ref.json", dir);
        ref = wk_json_parse_file(path, 0);
    }
    if (!ref) {
        if (t_case("llm_moe_ref/files")) t_fail("cannot read tests/data/moe_ref/ref.json (run from the repository root)");
        return;
    }
    const wk_json *cases = wk_json_get(ref, "cases");
    for (size_t c = 0; c < wk_json_count(cases); c++) {
        const wk_json *k = wk_json_item(cases, c);
        const char *name = wk_json_string(wk_json_get(k, "name"), NULL);
        const char *file = wk_json_string(wk_json_get(k, "file"), NULL);
        if (!name || !file) continue;
        int32_t seq[64];
        const int64_t np = ints(wk_json_get(k, "prompt"), seq, 32);
        const int64_t ng = ints(wk_json_get(k, "greedy"), seq + np, 32);
        const wk_json *lg = wk_json_get(k, "logits");
        const int64_t n = np + ng - 1;   /* rows: every position but the last */
        double bound = 1e-4;
        wk_json_number(wk_json_get(k, "bound"), &bound);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        /* a block-quantized file on the cpu's exact path (its blocks decoded to f32): transformers runs the
           dequantized weights */
        const char *qdot = wk_json_string(wk_json_get(k, "cpu_qdot"), NULL);
        const char *old = getenv("WICK_CPU_QDOT");
        char *keep = old ? strdup(old) : NULL;
        if (qdot) setenv("WICK_CPU_QDOT", qdot, 1), wk_env_refresh();
        wk_llm *m = NULL;
        static const char *const modes[] = { "prefill", "decode", "chunks" };
        for (int mode = 0; mode < 3; mode++) {
            if (!t_case("llm_moe_ref/%s/%s", name, modes[mode])) continue;
            if (mode == 2) {   /* prefill steps of 5 tokens (window caches where the model slides) */
                wk_llm_free(m);
                const wk_llm_options o = { .prefill_chunk = 5 };
                m = wk_llm_load(path, t_dev(), &o);
            }
            if (!m && !(m = wk_llm_load(path, t_dev(), NULL))) {
                t_fail("%s: %s", path, wk_last_error());
                continue;
            }
            const int64_t nv = wk_llm_get_info(m)->n_vocab;
            T_CHECK((int64_t)wk_json_count(lg) == n, "%zu rows of logits for %lld positions", wk_json_count(lg), (long long)n);
            if ((int64_t)wk_json_count(lg) != n) continue;
            float *out = t_mem((size_t)(n * nv) * sizeof *out);
            T_OK(wk_llm_rewind(m, 0));
            double worst = 0;
            if (mode != 1) {
                T_OK(wk_llm_eval(m, seq, n, true, out));
            } else {   /* the prompt, then one token a step */
                T_OK(wk_llm_eval(m, seq, np, true, out));
                for (int64_t t = np; t < n; t++) T_OK(wk_llm_eval(m, seq + t, 1, true, out + t * nv));
            }
            for (int64_t t = 0; t < n; t++) {
                int64_t a = 0, b = 0;
                worst = fmax(worst, row_err(out + t * nv, wk_json_item(lg, (size_t)t), nv, &a, &b));
                T_CHECK(a == b, "position %lld: argmax %lld, transformers' %lld", (long long)t, (long long)a, (long long)b);
                if (t >= np - 1)
                    T_CHECK(a == seq[t + 1], "step %lld: wick's greedy token %lld, transformers' %d", (long long)(t - np + 1),
                            (long long)a, seq[t + 1]);
            }
            T_CHECK(worst < bound, "logits differ from transformers' by %.3g of the row's largest (bound %g)", worst, bound);
        }
        wk_llm_free(m);
        if (qdot) {
            if (keep) setenv("WICK_CPU_QDOT", keep, 1);
            else unsetenv("WICK_CPU_QDOT");
            wk_env_refresh();
        }
        free(keep);
    }
    wk_json_free(ref);
}

/* ---- refusals --------------------------------------------------------------------- */

/* A copy of case `src`'s folder (the weights linked) whose config.json has
 * `"key": value` put first (a later duplicate would be the one read, so the
 * key must not be in the file already). */
static bool variant(const char *dir, const char *src, const char *key, const char *value, char *out, size_t n)
{
    char p[PATH_MAX + 64], w[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/config.json", dir, src);
    FILE *f = fopen(p, "rb");
    if (!f) return false;
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    char tmpl[] = "/tmp/wick-moe-XXXXXX";
    if (!mkdtemp(tmpl)) return false;
    snprintf(out, n, "%s", tmpl);
    snprintf(p, sizeof p, "%s/config.json", out);
    if (!(f = fopen(p, "wb"))) return false;
    const char *brace = strchr(text, '{');
    fprintf(f, "{\"%s\": %s,%s", key, value, brace ? brace + 1 : "}");
    fclose(f);
    snprintf(p, sizeof p, "%s/%s/model.safetensors", dir, src);
    if (!realpath(p, w)) return false;
    snprintf(p, sizeof p, "%s/model.safetensors", out);
    return symlink(w, p) == 0;
}

static void cleanup(const char *d)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/config.json", d), unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", d), unlink(p);
    rmdir(d);
}

T_SUITE(llm_moe_refuse)
{
    const char *dir = ref_dir();
    static const struct { const char *src, *key, *value, *expect; } cases[] = {
        { "qwen2moe_norm", "decoder_sparse_step", "2", "decoder_sparse_step is 2" },
        { "qwen2moe_norm", "mlp_only_layers", "[1]", "mlp_only_layers" },
        { "qwen2moe_norm", "qkv_bias", "false", "qkv_bias is false" },
        { "qwen2moe_norm", "use_sliding_window", "true", "use_sliding_window is true" },
        { "qwen3moe", "mlp_only_layers", "[0]", "mlp_only_layers" },
        { "qwen3moe", "attention_bias", "true", "attention_bias is true" },
        { "olmoe", "clip_qkv", "8.0", "clip_qkv is 8" },
        { "olmoe", "attention_bias", "true", "attention_bias is true" },
        { "mixtral_8x2", "hidden_act", "\"gelu\"", "hidden_act is 'gelu'" },
        { "qwen3moe", "num_local_experts", "4", "num_local_experts is 4 but num_experts is 8" },
        { "phi3", "partial_rotary_factor", "0.1", "partial_rotary_factor 0.1 gives 0 rotated dims" },
        { "phi3", "rope_scaling", "{\"type\": \"linear\", \"factor\": 2.0}", "rope_scaling.type is 'linear'" },
        { "phi3", "rope_scaling", "{\"type\": \"longrope\", \"short_factor\": [1, 1]}", "long_factor" },
    };
    for (size_t i = 0; dir && i < sizeof cases / sizeof cases[0]; i++) {
        if (!t_case("llm_moe_refuse/%s/%s", cases[i].src, cases[i].key)) continue;
        char d[PATH_MAX];
        if (!variant(dir, cases[i].src, cases[i].key, cases[i].value, d, sizeof d)) {
            t_fail("cannot write a variant of %s", cases[i].src);
            continue;
        }
        wk_llm *m = wk_llm_load(d, t_dev(), NULL);
        T_CHECK(!m, "loaded with %s = %s", cases[i].key, cases[i].value);
        T_CHECK(m || strstr(wk_last_error(), cases[i].expect), "message '%s' does not say '%s'", wk_last_error(),
                cases[i].expect);
        wk_llm_free(m);
        cleanup(d);
    }
}

/* ---- tensor parallel: experts split over ranks; refused where not yet ------------------- */

typedef struct tp_rank {
    const char *path;
    wk_comm *comm;
    const int32_t *prompt;
    int64_t n, nv;
    float *logits;            /* [n, nv]: the rank's eval of the prompt */
    bool loaded, ran;
    char err[512];
} tp_rank;

static void *tp_main(void *arg)
{
    tp_rank *r = arg;
    wk_llm_options o = { .comm = r->comm };
    wk_llm *m = wk_llm_load(r->path, wk_comm_device(r->comm), &o);
    r->loaded = m != NULL;
    r->ran = m && r->logits && wk_llm_eval(m, r->prompt, r->n, true, r->logits) == WK_OK;
    snprintf(r->err, sizeof r->err, "%s", m && r->ran ? "" : wk_last_error());
    wk_llm_free(m);
    return NULL;
}

/* path over 2 ranks of the cpu communicator; logits (NULL: a refusal is
   expected) gets each rank's [n, nv] logits of the prompt */
static void tp_run(const char *path, const int32_t *prompt, int64_t n, int64_t nv, float *logits[2], tp_rank r[2])
{
    wk_device *devs[2] = { t_dev(), t_dev() };
    wk_comm *comms[2];
    if (wk_comm_init_all(devs, 2, comms) != WK_OK) {
        t_fail("wk_comm_init_all: %s", wk_last_error());
        return;
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (tp_rank){ .path = path, .comm = comms[i], .prompt = prompt, .n = n, .nv = nv,
                          .logits = logits ? logits[i] : NULL };
        pthread_create(&th[i], NULL, tp_main, &r[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) wk_comm_free(comms[i]);
}

T_SUITE(llm_moe_tp)
{
    const char *dir = ref_dir();
    /* split: the experts' rows and columns (and the shared expert's) over
       2 ranks, the router whole; each rank's logits within 1e-5 of each
       row's largest |logit| of the whole model's, the same argmax */
    static const char *const split[] = { "mixtral_8x2.gguf", "mixtral_8x2", "qwen2moe_shared", "qwen2moe_shared.gguf",
                                         "qwen3moe.gguf", "phi3", "phi3.gguf", "phi3_partial", "phi3_window.gguf",
                                         "olmoe", "olmoe.gguf", "olmoe_gqa_norm" };
    for (size_t f = 0; dir && f < sizeof split / sizeof split[0]; f++) {
        if (!t_case("llm_moe_tp/%s", split[f])) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, split[f]);
        wk_llm *m = wk_llm_load(path, t_dev(), NULL);
        if (!m) {
            t_fail("loading %s: %s", path, wk_last_error());
            continue;
        }
        const int64_t nv = wk_llm_get_info(m)->n_vocab, n = 9;
        int32_t prompt[9];
        for (int64_t i = 0; i < n; i++) prompt[i] = (int32_t)(3 + (t_rng_next(t_r()) % (uint64_t)(nv - 3)));
        float *whole = t_mem((size_t)(n * nv) * sizeof(float) + 1);
        float *lg[2] = { t_mem((size_t)(n * nv) * sizeof(float) + 1), t_mem((size_t)(n * nv) * sizeof(float) + 1) };
        const bool ok = wk_llm_eval(m, prompt, n, true, whole) == WK_OK;
        wk_llm_free(m);
        if (!ok) {
            t_fail("the whole model: %s", wk_last_error());
            continue;
        }
        tp_rank r[2];
        tp_run(path, prompt, n, nv, lg, r);
        for (int i = 0; i < 2; i++) {
            if (!r[i].loaded || !r[i].ran) {
                t_fail("rank %d of 2: %s", i, r[i].err);
                continue;
            }
            for (int64_t t = 0; t < n; t++) {
                const float *a = whole + t * nv, *b = lg[i] + t * nv;
                double mx = 0, worst = 0;
                int64_t aa = 0, bb = 0;
                for (int64_t v = 0; v < nv; v++) {
                    mx = fabs(a[v]) > mx ? fabs(a[v]) : mx;
                    worst = fabs(a[v] - b[v]) > worst ? fabs(a[v] - b[v]) : worst;
                    if (a[v] > a[aa]) aa = v;
                    if (b[v] > b[bb]) bb = v;
                }
                T_CHECK(worst <= 1e-5 * mx, "rank %d, position %lld: logits off the whole model's by %.3g (bound %.3g)", i,
                        (long long)t, worst, 1e-5 * mx);
                T_CHECK(aa == bb, "rank %d, position %lld: argmax %lld, the whole model's %lld", i, (long long)t,
                        (long long)bb, (long long)aa);
            }
        }
    }
    /* a share that would cut the Q8_0 blocks of a row (16 of 32 columns of
       the output projection a rank): refused on both ranks, naming it */
    if (dir && t_case("llm_moe_tp/q8_0_cuts_blocks")) {
        char path[600];
        snprintf(path, sizeof path, "%s/qwen2moe_q8_0.gguf", dir);
        tp_rank r[2];
        tp_run(path, NULL, 0, 0, NULL, r);
        for (int i = 0; i < 2; i++)
            T_CHECK(!r[i].loaded && strstr(r[i].err, "cuts blocks"), "rank %d: loaded %d, '%s'", i, r[i].loaded, r[i].err);
    }
    /* OLMoE's key norm spans every KV head: over more ranks than divide
       them (4 ranks, 2 KV heads) refused on every rank, naming why */
    if (dir && t_case("llm_moe_refuse/tp/olmoe_kv_replicated")) {
        char path[600];
        snprintf(path, sizeof path, "%s/olmoe_gqa_norm", dir);
        wk_device *devs[4] = { t_dev(), t_dev(), t_dev(), t_dev() };
        wk_comm *comms[4];
        if (wk_comm_init_all(devs, 4, comms) == WK_OK) {
            tp_rank r[4];
            pthread_t th[4];
            for (int i = 0; i < 4; i++) {
                r[i] = (tp_rank){ .path = path, .comm = comms[i] };
                pthread_create(&th[i], NULL, tp_main, &r[i]);
            }
            for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
            for (int i = 0; i < 4; i++) {
                wk_comm_free(comms[i]);
                T_CHECK(!r[i].loaded, "rank %d loaded a split %s", i, path);
            }
            T_CHECK(strstr(r[0].err, "key norm spans all 2 KV heads"), "rank 0: '%s'", r[0].err);
        } else {
            t_fail("wk_comm_init_all: %s", wk_last_error());
        }
    }
}
