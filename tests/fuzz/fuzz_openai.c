/* fuzz_openai.c — libFuzzer harness for the server's request parsing
 * (src/server/openai.c, oa_parse: no libmicrohttpd involved): the first
 * byte says which endpoint (odd: /v1/chat/completions, even:
 * /v1/completions), the rest is the request body. A body that is refused
 * must come with a 4xx/5xx status, an error type and a message, and the
 * error's JSON must parse. A body that is taken must give parameters in
 * their documented ranges; then the answers are written from them (a
 * whole response, stream chunks with log-probabilities, the usage chunk,
 * with the prompt or the messages' text as the generated text) and each
 * must be valid JSON whose text field holds the text given (when that is
 * valid UTF-8: the writer replaces the rest). Corpus:
 * tests/fuzz/corpus/openai/.
 */
#include <math.h>
#include "fuzz_util.h"
#include "wick_formats.h"
#include "openai.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp;
        size_t k;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) k = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) k = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) k = 3, cp = c & 0x07;
        else return false;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* the text jw wrote (s, n) parses as JSON; returns the root (free it) */
static wk_json *must_parse(const char *what, const char *s, size_t n)
{
    FZ_CHECK(s != NULL, "%s: the writer ran out of memory", what);
    wk_json *j = wk_json_parse(s, n, what, 0);
    FZ_CHECK(j != NULL, "%s is not valid JSON: %s\n%.*s", what, wk_last_error(), (int)(n < 2000 ? n : 2000), s);
    return j;
}

/* the choice's text must be text (when text is valid UTF-8) */
static void check_text(const wk_json *root, bool chat, bool chunk, const char *text, size_t len)
{
    const wk_json *c = wk_json_item(wk_json_get(root, "choices"), 0);
    FZ_CHECK(c != NULL, "no choice");
    const wk_json *t = chat ? wk_json_get(wk_json_get(c, chunk ? "delta" : "message"), "content") : wk_json_get(c, "text");
    size_t n = 0;
    const char *s = wk_json_string(t, &n);
    FZ_CHECK(s != NULL, "no text in the choice");
    if (utf8_valid((const unsigned char *)text, len))
        FZ_CHECK(n == len && memcmp(s, text, len) == 0, "the text written (%zu bytes) is not the text given (%zu)", n, len);
}

static void answers(const oa_params *p, const char *text, size_t len)
{
    oa_head h = { .id = "cmpl-fuzz", .created = 1, .model = "fuzz", .m = NULL, .p = p };
    oa_token toks[3];
    memset(toks, 0, sizeof toks);
    for (int i = 0; i < 3; i++) {
        toks[i].id = i - 1;   /* no model: every token's text is empty */
        toks[i].logprob = i == 0 ? -INFINITY : i == 1 ? NAN : -0.5f;
        toks[i].n_top = p->top_logprobs;
        for (int k = 0; k < p->top_logprobs && k < 20; k++) toks[i].top_ids[k] = k, toks[i].top_lps[k] = -(float)k;
        toks[i].offset = i;
    }
    jw w = { 0 };
    size_t n;
    /* p->n choices: the first the text, the others empty */
    oa_choice ch[OA_MAX_N];
    for (int i = 0; i < p->n && i < OA_MAX_N; i++)
        ch[i] = (oa_choice){ .text = i ? "" : text, .len = i ? 0 : len, .toks = toks, .n_toks = 3,
                             .finish = i % 2 ? "length" : "stop" };
    oa_write_response(&w, &h, ch, p->n, 7, 3);
    char *s = jw_take(&w, &n);
    wk_json *j = must_parse("the response", s, n);
    check_text(j, p->chat, false, text, len);
    FZ_CHECK(wk_json_count(wk_json_get(j, "choices")) == (size_t)p->n, "%d choices asked", p->n);
    wk_json_free(j);
    free(s);
    for (int k = 0; k < 3; k++) {
        oa_write_chunk(&w, &h, k % p->n, k == 0, text, len, k == 1 ? toks : NULL, k == 1 ? 3 : 0,
                       k == 2 ? "length" : NULL);
        s = jw_take(&w, &n);
        FZ_CHECK(s && n > 8 && !memcmp(s, "data: ", 6) && !memcmp(s + n - 2, "\n\n", 2), "a chunk's framing");
        j = must_parse("a chunk", s + 6, n - 8);
        if (k == 0 || len) check_text(j, p->chat, true, text, len);
        wk_json_free(j);
        free(s);
    }
    oa_write_usage_chunk(&w, &h, 1, 2);
    s = jw_take(&w, &n);
    FZ_CHECK(s && n > 8, "the usage chunk");
    j = must_parse("the usage chunk", s + 6, n - 8);
    wk_json_free(j);
    free(s);
    jw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    oa_params p;
    oa_error e;
    memset(&e, 0, sizeof e);
    if (oa_parse((const char *)data + 1, size - 1, chat, &p, &e) != 0) {
        FZ_CHECK(e.status >= 400 && e.status < 600 && e.type && e.message[0], "a refusal without status or message");
        size_t n;
        char *s = oa_error_json(&e, &n);
        wk_json *j = must_parse("the error", s, n);
        FZ_CHECK(wk_json_get(j, "error") != NULL, "the error's JSON has no \"error\"");
        wk_json_free(j);
        free(s);
        oa_params_free(&p);
        return 0;
    }
    /* the documented ranges */
    FZ_CHECK(p.chat == chat, "chat flag");
    FZ_CHECK(p.n >= 1 && p.n <= OA_MAX_N, "n %d", p.n);
    FZ_CHECK(chat ? p.n_msgs > 0 && p.msgs : p.prompt != NULL, "a request without its prompt or messages");
    FZ_CHECK(p.sampling.temperature >= 0 && p.sampling.temperature <= 2, "temperature %g", p.sampling.temperature);
    FZ_CHECK(p.sampling.top_p > 0 && p.sampling.top_p <= 1, "top_p %g", p.sampling.top_p);
    FZ_CHECK(p.sampling.top_k >= 0, "top_k %lld", (long long)p.sampling.top_k);
    FZ_CHECK(p.sampling.min_p >= 0 && p.sampling.min_p <= 1, "min_p %g", p.sampling.min_p);
    FZ_CHECK(fabs(p.sampling.presence_penalty) <= 2 && fabs(p.sampling.frequency_penalty) <= 2, "penalties");
    FZ_CHECK(p.sampling.repeat_penalty > 0 && isfinite(p.sampling.repeat_penalty), "repetition_penalty %g",
             p.sampling.repeat_penalty);
    FZ_CHECK(p.max_tokens >= 0 && p.max_tokens <= INT32_MAX, "max_tokens %lld", (long long)p.max_tokens);
    FZ_CHECK(p.n_stop >= 0 && p.n_stop <= OA_MAX_STOP, "%d stop strings", p.n_stop);
    for (int i = 0; i < p.n_stop; i++) FZ_CHECK(p.stop[i] && p.stop[i][0], "stop string %d is empty", i);
    FZ_CHECK(p.top_logprobs >= 0 && p.top_logprobs <= 20, "top_logprobs %d", p.top_logprobs);
    FZ_CHECK(!p.include_usage || p.stream, "include_usage without stream");
    for (int i = 0; i < p.n_msgs; i++) {
        const char *r = p.msgs[i].role;
        FZ_CHECK(r && (!strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant")), "message %d's role", i);
        FZ_CHECK(p.msgs[i].content != NULL, "message %d has no content", i);
    }
    /* a completion's prompt is a JSON string: its length is strlen's only without a NUL inside */
    const char *text = chat ? p.msgs[p.n_msgs - 1].content : p.prompt;
    answers(&p, text, strlen(text));
    oa_params_free(&p);
    return 0;
}
