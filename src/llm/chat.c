/* chat.c — conversations as text, the way each model family's chat
 * template writes them (what Hugging Face's apply_chat_template gives for
 * plain system/user/assistant messages), and telling the family from the
 * template a file carries.
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
 * Templates are recognised by their markers, not run: wick has no Jinja
 * interpreter. Tools, images and other template features are not
 * rendered.
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
    return wk_chat_apply(m->cfg.info.chat, m->text.default_system, msgs, n, add_generation_prompt);
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
