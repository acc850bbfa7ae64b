/* template.c — `wick template`: a conversation through a chat template,
 * printed exactly as the model would read it (no newline added). With a
 * model, its own template and special tokens through wk_llm_chat_apply
 * (what `wick run --chat` and `wick serve` send); with --template FILE, a
 * template on its own through wk_chat_template_render, every variable
 * from the JSON. The JSON (a file, or - for stdin) is an object:
 * "messages" (a list of {"role", "content"} objects) and, for --template,
 * any other variables (add_generation_prompt, bos_token, tools, ...).
 * tests/chat_templates/check_templates.py compares it with jinja2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick.h"
#include "wick_formats.h"
#include "wick_llm.h"
#include "cli.h"

void wick_template_usage(void)
{
    printf("usage: wick template (MODEL | --template FILE) [options] JSON\n"
           "\n"
           "Prints a conversation as a chat template writes it. JSON is a file (or -\n"
           "for stdin) holding an object with \"messages\": [{\"role\": ..., \"content\":\n"
           "...}, ...].\n"
           "\n"
           "  MODEL              a model file: its own template and special tokens, as\n"
           "                     wick run --chat and wick serve use them\n"
           "  --template FILE    a Jinja template file; every other member of the JSON\n"
           "                     object is a template variable too\n"
           "  --generation-prompt  end with the assistant's header\n"
           "                     (add_generation_prompt; --template: or in the JSON)\n"
           "  --now SECONDS      strftime_now's clock (seconds since 1970; default: now)\n");
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    while (b) {
        size_t k = fread(b + len, 1, cap - len, f);
        len += k;
        if (len < cap) break;
        char *p = cap < ((size_t)1 << 30) ? realloc(b, cap * 2) : NULL;
        if (!p) {
            free(b);
            b = NULL;
            break;
        }
        b = p;
        cap *= 2;
    }
    if (f != stdin) fclose(f);
    if (b) {
        b[len < cap ? len : cap - 1] = 0;
        *n = len;
    }
    return b;
}

int wick_cmd_template(int argc, char **argv)
{
    const char *model = NULL, *tmpl_path = NULL, *json_path = NULL;
    const char *pos[2];
    int npos = 0;
    bool gen = false;
    long long now = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            wick_template_usage();
            return WICK_EXIT_OK;
        } else if (!strcmp(a, "--template") && i + 1 < argc) {
            tmpl_path = argv[++i];
        } else if (!strcmp(a, "--generation-prompt")) {
            gen = true;
        } else if (!strcmp(a, "--now") && i + 1 < argc) {
            char *end;
            now = strtoll(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "wick template: --now takes seconds, not '%s'\n", argv[i]);
                return WICK_EXIT_USAGE;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "wick template: unknown option %s (wick template --help)\n", a);
            return WICK_EXIT_USAGE;
        } else if (npos < 2) {
            pos[npos++] = a;
        } else {
            npos = 3;
        }
    }
    if (npos == 1 && tmpl_path) json_path = pos[0];
    if (npos == 2 && !tmpl_path) model = pos[0], json_path = pos[1];
    if (!json_path) {
        fprintf(stderr, "wick template: give a MODEL or --template FILE, and the JSON (wick template --help)\n");
        return WICK_EXIT_USAGE;
    }
    size_t jn = 0;
    char *jtext = read_file(json_path, &jn);
    if (!jtext) {
        fprintf(stderr, "wick template: cannot read %s\n", json_path);
        return WICK_EXIT_FAIL;
    }
    wk_json *vars = wk_json_parse(jtext, jn, json_path, 0);
    free(jtext);
    if (!vars || wk_json_kind(vars) != WK_JSON_OBJECT) {
        fprintf(stderr, "wick template: %s\n", vars ? "the JSON must be an object" : wk_last_error());
        wk_json_free(vars);
        return WICK_EXIT_FAIL;
    }
    /* the messages, for the model's path */
    const wk_json *jm = wk_json_get(vars, "messages");
    int n = (int)wk_json_count(jm);
    wk_chat_message *msgs = calloc((size_t)n + 1, sizeof *msgs);
    int rc = WICK_EXIT_FAIL;
    char *out = NULL;
    for (int i = 0; msgs && i < n; i++) {
        msgs[i].role = wk_json_string(wk_json_get(wk_json_item(jm, (size_t)i), "role"), NULL);
        msgs[i].content = wk_json_string(wk_json_get(wk_json_item(jm, (size_t)i), "content"), NULL);
        if (model && (!msgs[i].role || !msgs[i].content)) {
            fprintf(stderr, "wick template: message %d needs a string role and content\n", i);
            goto done;
        }
    }
    if (tmpl_path) {
        size_t tn = 0;
        char *text = read_file(tmpl_path, &tn);
        if (!text) {
            fprintf(stderr, "wick template: cannot read %s\n", tmpl_path);
            goto done;
        }
        wk_chat_template *t = wk_chat_template_parse(text, tn);
        free(text);
        if (!t) goto fail;
        wk_chat_template_opts o = { .add_generation_prompt = gen, .now = now, .vars = vars };
        out = wk_chat_template_render(t, NULL, 0, &o);
        wk_chat_template_free(t);
    } else {
        wk_device *dev = wk_device_open("cpu");
        wk_llm_options lo = { .progress = WK_PROGRESS_OFF, .context = 16 };
        wk_llm *m = dev ? wk_llm_load(model, dev, &lo) : NULL;
        if (m) {
            const wk_llm_info *in = wk_llm_get_info(m);
            if (in->chat_template_error) fprintf(stderr, "wick template: the fixed format instead: %s\n", in->chat_template_error);
            out = wk_llm_chat_apply(m, msgs, n, gen);
        }
        wk_llm_free(m);
        wk_device_close(dev);
    }
    if (!out) goto fail;
    fwrite(out, 1, strlen(out), stdout);
    rc = fflush(stdout) ? WICK_EXIT_FAIL : WICK_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "wick template: %s\n", wk_last_error());
done:
    free(out);
    free(msgs);
    wk_json_free(vars);
    return rc;
}
