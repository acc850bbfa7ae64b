/* chat.c — conversations as text, the way the model's chat template
 * writes them.
 *
 * The model's own template first: the Jinja text of the file (GGUF
 * tokenizer.chat_template; tokenizer_config.json's chat_template or
 * chat_template.jinja beside a safetensors model) is parsed at load and
 * run per conversation by wick's interpreter (chat_template.c and the
 * jinja_*.c files), with the variables transformers' apply_chat_template
 * gives it: messages, add_generation_prompt, the vocabulary's bos_token,
 * eos_token, unk_token and pad_token, tools=None, documents=None. The text
 * equals Hugging Face's byte for byte (tools/check_chat_templates.py
 * checks the templates of SmolLM2, Gemma 3, Llama 3.x, Qwen 2.5/3,
 * Mistral and Phi-3 against jinja2). At load the template renders one
 * user message; a template wick cannot parse or run is noted in
 * wk_llm_info.chat_template_error and the fixed formats below stand in.
 *
 * The fixed formats, told from the template's markers (wk_chat_format_detect;
 * the family also decides the stop tokens), for files whose template wick
 * cannot run: what Hugging Face's apply_chat_template gives for plain
 * system/user/assistant messages.
 *
 *   ChatML (SmolLM2, Qwen 2/2.5/3):
 *     [<|im_start|>system\n{default system}<|im_end|>\n]   when the template
 *                                         adds one and the chat has none
 *     <|im_start|>{role}\n{content}<|im_end|>\n  ...
 *     <|im_start|>assistant\n                      (generation prompt)
 *   Llama 3:
 *     <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n
 *     {content, trimmed}<|eot_id|> ...  <|start_header_id|>assistant<|end_header_id|>\n\n
 *     Llama 3.1+ templates (they mention "Cutting Knowledge Date") always
 *     open with a system turn "Cutting Knowledge Date: December 2023\n
 *     Today Date: 26 Jul 2024\n\n{system, trimmed}" (3.1's default date;
 *     Llama 3.2's templates ask for today's date, strftime_now("%d %b %Y"),
 *     and get it; WICK_CHAT_DATE sets the date for both).
 *   Gemma:
 *     <bos><start_of_turn>user\n{system, as it is}\n\n{content, trimmed}<end_of_turn>\n
 *     <start_of_turn>model\n{content, trimmed}<end_of_turn>\n ...
 *     <start_of_turn>model\n
 *     (the system text goes before the first user message; "assistant"
 *     is "model")
 *
 * Tools, images and other template features reach only the template
 * path (wk_chat_template_render with JSON variables).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "llm_internal.h"

const char *wk_chat_format_name(wk_chat_format f)
{
    static const char *const names[] = { "none", "chatml", "llama3", "gemma" };
    return (unsigned)f < WK_CHAT_FORMAT_COUNT ? names[f] : "?";
}

wk_chat_format wk_chat_format_detect(const char *t)
{
    if (!t) return WK_CHAT_NONE;
    if (strstr(t, "<|im_start|>")) return WK_CHAT_CHATML;
    if (strstr(t, "<|start_header_id|>")) return WK_CHAT_LLAMA3;
    if (strstr(t, "<start_of_turn>")) return WK_CHAT_GEMMA;
    return WK_CHAT_NONE;
}

/* A growing string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t len)
{
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Jinja's trim: Python's str.strip() of ASCII white space */
static void put_trim(sbuf *b, const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n && strchr(" \t\n\r\v\f", s[i])) i++;
    while (n > i && strchr(" \t\n\r\v\f", s[n - 1])) n--;
    put(b, s + i, n - i);
}

char *wk_chat_apply(wk_chat_format f, const char *default_system, const wk_chat_message *msgs, int n,
                    bool add_generation_prompt)
{
    if (n < 0 || (n > 0 && !msgs)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_chat_apply: %d messages at %p", n, (const void *)msgs);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            wk_error_set(WK_ERR_ARGUMENT, "wk_chat_apply: message %d has no %s", i, msgs[i].role ? "content" : "role");
            return NULL;
        }
    sbuf b = { 0 };
    put(&b, "", 0);
    const bool sys_first = n > 0 && !strcmp(msgs[0].role, "system");
    switch (f) {
    case WK_CHAT_NONE:
        for (int i = 0; i < n; i++) {
            puts_(&b, msgs[i].content);
            if (i + 1 < n) puts_(&b, "\n");
        }
        break;
    case WK_CHAT_CHATML:
        if (!sys_first && default_system) {
            puts_(&b, "<|im_start|>system\n");
            puts_(&b, default_system);
            puts_(&b, "<|im_end|>\n");
        }
        for (int i = 0; i < n; i++) {
            puts_(&b, "<|im_start|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "\n");
            puts_(&b, msgs[i].content);
            puts_(&b, "<|im_end|>\n");
        }
        if (add_generation_prompt) puts_(&b, "<|im_start|>assistant\n");
        break;
    case WK_CHAT_LLAMA3: {
        puts_(&b, "<|begin_of_text|>");
        int i = 0;
        if (default_system) {   /* 3.1's preamble: see the top of the file */
            puts_(&b, "<|start_header_id|>system<|end_header_id|>\n\n");
            puts_(&b, default_system);
            if (sys_first) put_trim(&b, msgs[0].content);
            puts_(&b, "<|eot_id|>");
            i = sys_first;
        }
        for (; i < n; i++) {
            puts_(&b, "<|start_header_id|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "<|end_header_id|>\n\n");
            put_trim(&b, msgs[i].content);
            puts_(&b, "<|eot_id|>");
        }
        if (add_generation_prompt) puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    }
    case WK_CHAT_GEMMA: {
        puts_(&b, "<bos>");
        for (int i = sys_first; i < n; i++) {
            const char *role = !strcmp(msgs[i].role, "assistant") ? "model" : msgs[i].role;
            puts_(&b, "<start_of_turn>");
            puts_(&b, role);
            puts_(&b, "\n");
            if (i == sys_first && sys_first) {   /* as it is: the template trims the others only */
                puts_(&b, msgs[0].content);
                puts_(&b, "\n\n");
            }
            put_trim(&b, msgs[i].content);
            puts_(&b, "<end_of_turn>\n");
        }
        if (add_generation_prompt) puts_(&b, "<start_of_turn>model\n");
        break;
    }
    default:
        free(b.p);
        wk_error_set(WK_ERR_ARGUMENT, "wk_chat_apply: unknown chat format %d", (int)f);
        return NULL;
    }
    if (b.oom) {
        free(b.p);
        wk_error_set(WK_ERR_MEMORY, "out of memory formatting a chat");
        return NULL;
    }
    return b.p;
}

char *wk_llm_chat_apply(const wk_llm *m, const wk_chat_message *msgs, int n, bool add_generation_prompt)
{
    if (!m) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_llm_chat_apply: the model is NULL");
        return NULL;
    }
    const llm_text_state *t = &m->text;
    if (t->tmpl) {
        const wk_chat_template_opts o = { .add_generation_prompt = add_generation_prompt, .bos_token = t->special[0],
                                          .eos_token = t->special[1], .unk_token = t->special[2],
                                          .pad_token = t->special[3], .vars = t->tmpl_vars };
        char *text = wk_chat_template_render(t->tmpl, msgs, n, &o);
        /* refused by the template, or no fixed format to fall back on: the error stands */
        if (text || wk_last_status() == WK_ERR_ARGUMENT || m->cfg.info.chat == WK_CHAT_NONE) return text;
    }
    return wk_chat_apply(m->cfg.info.chat, t->default_system, msgs, n, add_generation_prompt);
}

bool wk_llm_chat_formatted(const wk_llm *m)
{
    return m && (m->text.tmpl || m->cfg.info.chat != WK_CHAT_NONE);
}

/* ---- the model's template ---------------------------------------------------- */

/* a special token's text: GGUF, the vocabulary entry of the id at key */
static char *gguf_token(const wk_gguf *g, const char *key)
{
    const wk_gguf_value *v = wk_gguf_find(g, key), *toks = wk_gguf_find(g, "tokenizer.ggml.tokens");
    int64_t id;
    size_t len = 0;
    if (!v || !toks || !wk_gguf_value_int(v, &id) || id < 0 || (uint64_t)id >= wk_gguf_array_len(toks)) return NULL;
    const char *s = wk_gguf_array_str(toks, (uint64_t)id, &len);
    return s ? strndup(s, len) : NULL;
}

/* tokenizer_config.json: "bos_token": "<s>" or {"content": "<s>", ...} */
static char *json_token(const wk_json *cfg, const char *key)
{
    const wk_json *j = wk_json_get(cfg, key);
    if (wk_json_kind(j) == WK_JSON_OBJECT) j = wk_json_get(j, "content");
    size_t len = 0;
    const char *s = wk_json_string(j, &len);
    return s ? strndup(s, len) : NULL;
}

/* {"date_string": "<text>"}, the text escaped for JSON */
static wk_json *date_vars(const char *date)
{
    size_t n = strlen(date);
    if (n > 200) return NULL;
    char buf[1400], *w = buf;
    w += sprintf(w, "{\"date_string\": \"");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)date[i];
        if (ch == '"' || ch == '\\') w += sprintf(w, "\\%c", ch);
        else if (ch < 0x20) w += sprintf(w, "\\u%04x", ch);
        else *w++ = (char)ch;
    }
    w += sprintf(w, "\"}");
    wk_json *j = wk_json_parse(buf, (size_t)(w - buf), "WICK_CHAT_DATE", 0);
    if (!j) wk_clear_error();
    return j;
}

void llm_chat_init(wk_llm *m)
{
    llm_text_state *t = &m->text;
    wk_llm_info *in = &m->cfg.info;
    in->chat_template = t->chat_template;
    if (!t->chat_template) return;
    static const char *const gguf_keys[4] = { "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                              "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id" };
    static const char *const json_keys[4] = { "bos_token", "eos_token", "unk_token", "pad_token" };
    for (int i = 0; i < 4; i++)
        t->special[i] = m->src.gguf ? gguf_token(m->src.gguf, gguf_keys[i]) : json_token(m->src.tokcfg, json_keys[i]);
    const char *date = getenv("WICK_CHAT_DATE");
    if (date && *date) t->tmpl_vars = date_vars(date);
    t->tmpl = wk_chat_template_parse(t->chat_template, strlen(t->chat_template));
    if (t->tmpl) {   /* one user message must render */
        const wk_chat_message hello = { "user", "Hello" };
        const wk_chat_template_opts o = { .add_generation_prompt = true, .bos_token = t->special[0],
                                          .eos_token = t->special[1], .unk_token = t->special[2],
                                          .pad_token = t->special[3], .vars = t->tmpl_vars };
        char *text = wk_chat_template_render(t->tmpl, &hello, 1, &o);
        if (!text) {
            wk_chat_template_free(t->tmpl);
            t->tmpl = NULL;
        }
        free(text);
    }
    if (!t->tmpl) {
        t->tmpl_error = strdup(wk_last_error());
        wk_clear_error();
    }
    in->chat_template_error = t->tmpl_error;
}

void llm_chat_free(wk_llm *m)
{
    llm_text_state *t = &m->text;
    wk_chat_template_free(t->tmpl);
    free(t->tmpl_error);
    for (int i = 0; i < 4; i++) free(t->special[i]);
    wk_json_free(t->tmpl_vars);
    memset(t->special, 0, sizeof t->special);
    t->tmpl = NULL;
    t->tmpl_error = NULL;
    t->tmpl_vars = NULL;
}

/* Llama 3.1+'s "Today Date": WICK_CHAT_DATE when set (to reproduce a
 * given day), else today's date ("%d %b %Y", English months, local time)
 * when the template asks for it (Llama 3.2's call strftime_now, which
 * transformers provides), else 3.1's fixed default. */
static void chat_date(const char *t, char *out, size_t n)
{
    static const char *const months[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    const char *env = getenv("WICK_CHAT_DATE");
    struct tm tm;
    time_t now = time(NULL);
    if (env && *env) snprintf(out, n, "%s", env);
    else if (strstr(t, "strftime_now") && localtime_r(&now, &tm))
        snprintf(out, n, "%02d %s %04d", tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900);
    else snprintf(out, n, "26 Jul 2024");
}

/* The system text a ChatML template writes when the chat has none: the
 * literal between "<|im_start|>system" + newline and "<|im_end|>", when it
 * is a literal (SmolLM2, Qwen 2.5: yes; Qwen 3: the message's content,
 * no). Llama 3.1+: the dated preamble. NULL when none. */
char *wk_chat_default_system(wk_chat_format f, const char *t)
{
    if (!t) return NULL;
    if (f == WK_CHAT_LLAMA3) {
        if (!strstr(t, "Cutting Knowledge Date")) return NULL;
        char date[64], text[160];
        chat_date(t, date, sizeof date);
        snprintf(text, sizeof text, "Cutting Knowledge Date: December 2023\nToday Date: %s\n\n", date);
        return strdup(text);
    }
    if (f != WK_CHAT_CHATML) return NULL;
    const char *p = strstr(t, "<|im_start|>system");
    while (p) {
        const char *q = p + strlen("<|im_start|>system");
        if (*q == '\n') q++;
        else if (q[0] == '\\' && q[1] == 'n') q += 2;
        else q = NULL;
        const char *e = q ? strstr(q, "<|im_end|>") : NULL;
        if (e && e > q) {
            bool literal = true;
            for (const char *c = q; c < e; c++)
                if (*c == '\'' || *c == '"' || *c == '{' || *c == '}' || *c == '\\') literal = false;
            if (literal) return strndup(q, (size_t)(e - q));
        }
        p = strstr(p + 1, "<|im_start|>system");
    }
    return NULL;
}
