/* fuzz_chat.c — libFuzzer harness for the chat-template renderer (the
 * Jinja subset of src/llm/jinja_*.c through wk_chat_template_parse and
 * wk_chat_template_render): templates are untrusted text from model files.
 *
 * Input: the template, then "\n#WICK-FUZZ#\n", then the conversation (one
 * message a line: role, a tab, the content; "\n" in the content written
 * as \n), then optionally "\n#WICK-FUZZ#\n" and a JSON object of more
 * variables. Limits are set low (1 MiB of output, 200000 steps, 64 MiB of
 * values) so that each input runs in milliseconds.
 * Checked promises: a template that does not parse, and a render that
 * fails, leave an error status and a message (a refused conversation:
 * WK_ERR_ARGUMENT; anything else: WK_ERR_UNSUPPORTED); an output is
 * NUL-terminated, at most the output limit, and the same when rendered
 * twice (the clock fixed).
 * Corpus: tests/fuzz/corpus/chat/ (the real templates of
 * tests/data/chat_templates/ with a conversation, and hostile ones).
 */
#include "fuzz_util.h"
#include "wick_formats.h"
#include "wick_llm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

#define FZ_MAX_MSGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_part parts[3];
    const int np = fz_split(data, size, "\n#WICK-FUZZ#\n", parts, 3);
    wk_clear_error();
    wk_chat_template *t = wk_chat_template_parse((const char *)parts[0].p, parts[0].n);
    if (!t) {
        fz_check_error("wk_chat_template_parse");
        return 0;
    }
    /* the conversation */
    char *conv = np > 1 ? fz_strdup(parts[1]) : fz_strdup((fz_part){ NULL, 0 });
    wk_chat_message msgs[FZ_MAX_MSGS];
    int n = 0;
    for (char *line = conv, *next; line && *line && n < FZ_MAX_MSGS; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        for (char *r = tab + 1, *w = tab + 1;; r++, w++) {   /* "\n" -> newline, in place */
            if (r[0] == '\\' && r[1] == 'n') *w = '\n', r++;
            else *w = *r;
            if (!*r) break;
        }
        msgs[n++] = (wk_chat_message){ line, tab + 1 };
    }
    wk_json *vars = NULL;
    if (np > 2) {
        vars = wk_json_parse((const char *)parts[2].p, parts[2].n, "vars", 0);
        if (vars && wk_json_kind(vars) != WK_JSON_OBJECT) {
            wk_json_free(vars);
            vars = NULL;
        }
    }
    const size_t max_output = (size_t)1 << 20;
    wk_chat_template_opts o = { .add_generation_prompt = size % 2 == 1, .bos_token = "<s>", .eos_token = "</s>",
                                .now = 1700000000, .vars = vars, .max_output = max_output, .max_steps = 200000,
                                .max_memory = (size_t)64 << 20 };
    wk_clear_error();
    char *out = wk_chat_template_render(t, msgs, n, &o);
    if (!out) {
        fz_check_error("wk_chat_template_render");
        const wk_status st = wk_last_status();
        FZ_CHECK(st == WK_ERR_ARGUMENT || st == WK_ERR_UNSUPPORTED, "a failed render's status is %d", (int)st);
    } else {
        const size_t len = strlen(out);
        FZ_CHECK(len <= max_output, "an output of %zu bytes past the limit of %zu", len, max_output);
        char *again = wk_chat_template_render(t, msgs, n, &o);
        FZ_CHECK(again != NULL, "a second render failed: %s", wk_last_error());
        FZ_CHECK(strcmp(out, again) == 0, "two renders of one input differ");
        free(again);
        free(out);
    }
    wk_json_free(vars);
    free(conv);
    wk_chat_template_free(t);
    return 0;
}
