/* test_tokenizer.c — the tokenizer layer without Python: tokenizers built
 * from arrays (byte-level BPE by merges, SentencePiece-style by scores and
 * byte fallback), the committed fixtures of tests/data/tok/ (small
 * tokenizers trained and written by tools/check_tokenizers.py --fixtures,
 * with the ids and text Hugging Face's tokenizers gives, through both the
 * tokenizer.json and the GGUF constructor), streaming decoding of
 * characters split over tokens, invalid UTF-8 both ways, and errors.
 * The full comparison on the 12,000-record corpus is
 * tools/check_tokenizers.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "wick_tokenizer.h"

#define TOK_OK(expr) do { wk_status st_ = (expr); if (st_ != WK_OK) t_fail("%s returned %s: %s", #expr, wk_status_name(st_), wk_last_error()); } while (0)

static const char *tok_data_dir(void)
{
    static const char *const c[] = { "tests/data/tok", "../tests/data/tok", "data/tok" };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/expect.txt", c[i]);
        FILE *f = fopen(p, "rb");
        if (f) { fclose(f); return c[i]; }
    }
    return NULL;
}

/* ids of an encoding, as a string "1 2 3" (static buffer) */
static const char *ids_str(const int32_t *ids, int64_t n)
{
    static char buf[8192];
    size_t o = 0;
    buf[0] = 0;
    for (int64_t i = 0; i < n && o < sizeof buf - 16; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d", i ? " " : "", ids[i]);
    return buf;
}

static bool encode_is(const wk_tokenizer *t, const char *text, size_t len, unsigned flags, const char *want)
{
    int32_t *ids = NULL;
    int64_t n = 0;
    wk_status st = wk_tokenizer_encode(t, text, len, flags, &ids, &n);
    if (st) { t_fail("encode \"%.40s\": %s", text, wk_last_error()); return false; }
    const char *got = ids_str(ids, n);
    bool ok = !strcmp(got, want);
    if (!ok) t_fail("encode \"%.40s\": got [%s], want [%s]", text, got, want);
    free(ids);
    return ok;
}

static bool decode_is(const wk_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags, const char *want, size_t want_len)
{
    char *s = NULL;
    size_t len = 0;
    wk_status st = wk_tokenizer_decode(t, ids, n, flags, &s, &len);
    if (st) { t_fail("decode: %s", wk_last_error()); return false; }
    bool ok = len == want_len && !memcmp(s, want, len);
    if (!ok) t_fail("decode [%s] flags %u: got \"%.*s\" (%zu bytes), want \"%.*s\" (%zu bytes)", ids_str(ids, n), flags, (int)len, s, len,
                    (int)want_len, want, want_len);
    free(s);
    return ok;
}

/* ---- a byte-level BPE from arrays ---------------------------------------- */

/* GPT-2's printable form of a byte, as UTF-8 */
static int byte_char(int b, char *out)
{
    unsigned cp;
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) cp = (unsigned)b;
    else {
        unsigned k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; return 1; }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = 0;
    return 2;
}

typedef struct small_vocab {
    char store[300][24];
    const char *tok[300];
    int32_t types[300];
    float scores[300];
    int n;
} small_vocab;

static int add_tok(small_vocab *v, const char *s, int type, float score)
{
    snprintf(v->store[v->n], sizeof v->store[0], "%s", s);
    v->tok[v->n] = v->store[v->n];
    v->types[v->n] = type;
    v->scores[v->n] = score;
    return v->n++;
}

/* ids: 0..255 the bytes; then Ġt(256) he(257) Ġthe(258) <|end|>(259) <|x|>(260, user-defined) */
static wk_tokenizer *bytes_tokenizer(const char *pre)
{
    static small_vocab v;
    v.n = 0;
    for (int b = 0; b < 256; b++) {
        char c[4];
        byte_char(b, c);
        add_tok(&v, c, WK_TOK_TYPE_NORMAL, 0);
    }
    add_tok(&v, "\xc4\xa0t", 1, 0);      /* Ġt */
    add_tok(&v, "he", 1, 0);
    add_tok(&v, "\xc4\xa0the", 1, 0);
    add_tok(&v, "<|end|>", WK_TOK_TYPE_CONTROL, 0);
    add_tok(&v, "<|x|>", WK_TOK_TYPE_USER_DEFINED, 0);
    static const char *merges[] = { "\xc4\xa0 t", "h e", "\xc4\xa0t he" };
    wk_tokenizer_spec sp = wk_tokenizer_spec_default();
    sp.model = WK_TOK_MODEL_BYTE_BPE;
    sp.n_tokens = v.n;
    sp.tokens = v.tok;
    sp.token_types = v.types;
    sp.n_merges = 3;
    sp.merges = merges;
    sp.pre = pre;
    sp.eos_id = 259;
    return wk_tokenizer_new(&sp);
}

/* ids: <unk>0 <s>1 </s>2 <0x00>..<0xFF> 3..258, then ▁(259) a(260) b(261)
 * ▁a(262) ab(263) ▁ab(264) ▁b(265) */
static wk_tokenizer *spm_tokenizer(wk_tok_prefix prefix)
{
    static small_vocab v;
    v.n = 0;
    add_tok(&v, "<unk>", WK_TOK_TYPE_UNKNOWN, 0);
    add_tok(&v, "<s>", WK_TOK_TYPE_CONTROL, 0);
    add_tok(&v, "</s>", WK_TOK_TYPE_CONTROL, 0);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        add_tok(&v, s, WK_TOK_TYPE_BYTE, 0);
    }
    add_tok(&v, "\xe2\x96\x81", 1, -100);
    add_tok(&v, "a", 1, -101);
    add_tok(&v, "b", 1, -102);
    add_tok(&v, "\xe2\x96\x81" "a", 1, -3);
    add_tok(&v, "ab", 1, -1);     /* a+b beats ▁+a */
    add_tok(&v, "\xe2\x96\x81" "ab", 1, -2);
    add_tok(&v, "\xe2\x96\x81" "b", 1, -4);
    wk_tokenizer_spec sp = wk_tokenizer_spec_default();
    sp.model = WK_TOK_MODEL_SPM;
    sp.n_tokens = v.n;
    sp.tokens = v.tok;
    sp.token_types = v.types;
    sp.scores = v.scores;
    sp.unk_id = 0;
    sp.bos_id = 1;
    sp.eos_id = 2;
    sp.add_bos = true;
    sp.prefix = prefix;
    return wk_tokenizer_new(&sp);
}

T_SUITE(tokenizer_arrays)
{
    if (t_case("tokenizer/arrays/bytes")) {
        wk_tokenizer *t = bytes_tokenizer("gpt2");
        if (!t) t_fail("bytes_tokenizer: %s", wk_last_error());
        else {
            /* "the the": t h e | Ġ t h e -> t he, Ġthe */
            encode_is(t, "the the", 7, 0, "116 257 258");
            encode_is(t, "<|end|>x<|x|>", 13, WK_TOK_PARSE_SPECIAL, "259 120 260");
            /* without PARSE_SPECIAL only the user-defined token is split out */
            encode_is(t, "<|end|><|x|>", 12, 0, "60 124 101 110 100 124 62 260");
            /* invalid UTF-8: its bytes, the text around as it is */
            encode_is(t, "a\xff" "b\xe4\xb8", 5, 0, "97 255 98 228 184");
            int32_t ids[] = { 116, 257, 258, 259 };
            decode_is(t, ids, 4, 0, "the the<|end|>", 14);
            decode_is(t, ids, 4, WK_TOK_SKIP_SPECIAL, "the the", 7);
            int32_t bad[] = { 97, 255, 98, 228, 184 };
            decode_is(t, bad, 5, WK_TOK_RAW, "a\xff" "b\xe4\xb8", 5);
            decode_is(t, bad, 5, 0, "a\xef\xbf\xbd" "b\xef\xbf\xbd", 8);   /* \xe4\xb8 cut: one U+FFFD */
            int32_t eog[4];
            T_CHECK(wk_tokenizer_eog(t, eog, 4) == 1 && eog[0] == 259, "eog: eos only");
            T_CHECK(wk_tokenizer_find(t, "he", 2) == 257, "find he");
            T_CHECK(wk_tokenizer_token_type(t, 260) == WK_TOK_TYPE_USER_DEFINED, "type of <|x|>");
            T_CHECK(wk_tokenizer_is_special(t, 259) && !wk_tokenizer_is_special(t, 260), "special flags");
            wk_tokenizer_free(t);
        }
    }
    if (t_case("tokenizer/arrays/spm_scores")) {
        wk_tokenizer *t = spm_tokenizer(WK_TOK_PREFIX_ALWAYS);
        if (!t) t_fail("spm_tokenizer: %s", wk_last_error());
        else {
            /* "ab ab" -> ▁ab ▁ab; bos first */
            encode_is(t, "ab ab", 5, WK_TOK_ADD_SPECIAL, "1 264 264");
            /* ▁ a b: ab (-1) merges before ▁a (-3), then ▁+ab */
            encode_is(t, "ab", 2, 0, "264");
            /* é has no token: its bytes */
            encode_is(t, "a\xc3\xa9", 3, 0, "262 198 172");
            /* the prefix again after a special token (Llama 2, llama.cpp) */
            encode_is(t, "a<s>b", 5, WK_TOK_PARSE_SPECIAL, "262 1 265");
            encode_is(t, " a", 2, 0, "259 262");
            int32_t ids[] = { 1, 264, 264, 198, 172 };
            decode_is(t, ids, 5, 0, "<s> ab ab\xc3\xa9", 11);
            decode_is(t, ids, 5, WK_TOK_SKIP_SPECIAL, "ab ab\xc3\xa9", 7);
            decode_is(t, ids, 5, WK_TOK_SKIP_SPECIAL | WK_TOK_KEEP_SPACE, " ab ab\xc3\xa9", 8);
            /* a run of byte tokens that is not valid UTF-8: U+FFFD per byte */
            int32_t bad[] = { 264, 3 + 0xE4, 3 + 0xB8, 260 };
            decode_is(t, bad, 4, 0, "ab\xef\xbf\xbd\xef\xbf\xbd" "a", 9);
            wk_tokenizer_free(t);
        }
        t = spm_tokenizer(WK_TOK_PREFIX_NONE);
        if (t) {
            encode_is(t, "ab ab", 5, 0, "263 264");
            wk_tokenizer_free(t);
        } else t_fail("spm_tokenizer (no prefix): %s", wk_last_error());
        t = spm_tokenizer(WK_TOK_PREFIX_FIRST);
        if (t) {
            encode_is(t, "a<s>b", 5, WK_TOK_PARSE_SPECIAL, "262 1 261");
            encode_is(t, " a", 2, 0, "262");
            int32_t ids[] = { 262, 265 };
            decode_is(t, ids, 2, 0, "a b", 3);
            wk_tokenizer_free(t);
        } else t_fail("spm_tokenizer (first): %s", wk_last_error());
    }
}

/* ---- streaming ---------------------------------------------------------------- */

/* Pushes ids one by one: want[i] is what push i gives, want[n] the flush. */
static void stream_is(const wk_tokenizer *t, unsigned flags, const int32_t *ids, int n, const char *const *want)
{
    wk_tok_stream *s = wk_tok_stream_new(t, flags);
    if (!s) { t_fail("wk_tok_stream_new: %s", wk_last_error()); return; }
    for (int i = 0; i <= n; i++) {
        const char *p;
        size_t len;
        wk_status st = i < n ? wk_tok_stream_push(s, ids[i], &p, &len) : wk_tok_stream_flush(s, &p, &len);
        if (st) { t_fail("stream step %d: %s", i, wk_last_error()); break; }
        if (len != strlen(want[i]) || memcmp(p, want[i], len)) t_fail("stream step %d: got \"%.*s\", want \"%s\"", i, (int)len, p, want[i]);
    }
    wk_tok_stream_free(s);
}

T_SUITE(tokenizer_stream)
{
    if (t_case("tokenizer/stream/bytes_split_utf8")) {
        wk_tokenizer *t = bytes_tokenizer(NULL);
        if (t) {
            /* 😀 = F0 9F 98 80, one byte token each (the byte-level ids are the bytes' ranks: see byte_char) */
            int32_t ids[6];
            char c[4];
            const unsigned char emoji[4] = { 0xF0, 0x9F, 0x98, 0x80 };
            for (int k = 0; k < 4; k++) {
                byte_char(emoji[k], c);
                ids[k] = wk_tokenizer_find(t, c, strlen(c));
            }
            ids[4] = 257;   /* he */
            const char *want[] = { "", "", "", "\xf0\x9f\x98\x80", "he", "" };
            stream_is(t, 0, ids, 5, want);
            /* cut at the end: the flush gives U+FFFD (RAW: the bytes) */
            const char *want_cut[] = { "", "", "\xef\xbf\xbd" };
            stream_is(t, 0, ids, 2, want_cut);
            const char *want_raw[] = { "", "", "\xf0\x9f" };
            stream_is(t, WK_TOK_RAW, ids, 2, want_raw);
            /* an invalid byte comes out at once as U+FFFD */
            int32_t ids2[] = { ids[0], 257 };
            const char *want2[] = { "", "\xef\xbf\xbdhe", "" };
            stream_is(t, 0, ids2, 2, want2);
            wk_tokenizer_free(t);
        } else t_fail("bytes_tokenizer: %s", wk_last_error());
    }
    if (t_case("tokenizer/stream/spm_byte_runs")) {
        wk_tokenizer *t = spm_tokenizer(WK_TOK_PREFIX_ALWAYS);
        if (t) {
            /* ▁ab, then é as two byte tokens, then ▁ab: the run is held until it ends */
            int32_t ids[] = { 264, 3 + 0xC3, 3 + 0xA9, 264 };
            const char *want[] = { "ab", "", "", "\xc3\xa9 ab", "" };
            stream_is(t, 0, ids, 4, want);
            /* a run cut at the end: U+FFFD per byte at the flush */
            int32_t ids2[] = { 264, 3 + 0xE4, 3 + 0xB8 };
            const char *want2[] = { "ab", "", "", "\xef\xbf\xbd\xef\xbf\xbd" };
            stream_is(t, 0, ids2, 3, want2);
            /* the stream starts over after a flush (the leading space stripped again) */
            wk_tok_stream *s = wk_tok_stream_new(t, 0);
            const char *p;
            size_t len;
            TOK_OK(wk_tok_stream_push(s, 264, &p, &len));
            TOK_OK(wk_tok_stream_flush(s, &p, &len));
            TOK_OK(wk_tok_stream_push(s, 264, &p, &len));
            T_CHECK(len == 2 && !memcmp(p, "ab", 2), "after a flush: got \"%.*s\"", (int)len, p);
            T_CHECK(wk_tok_stream_push(s, 100000, &p, &len) == WK_ERR_INDEX, "an id out of range");
            wk_tok_stream_free(s);
            wk_tokenizer_free(t);
        } else t_fail("spm_tokenizer: %s", wk_last_error());
    }
}

/* ---- the fixtures: Hugging Face's ids and text ------------------------------------ */

static size_t unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char d = s[i + 1];
            if (d == '\\') { out[o++] = '\\'; i++; continue; }
            if (d == 'n') { out[o++] = '\n'; i++; continue; }
            if (d == 'r') { out[o++] = '\r'; i++; continue; }
            if (d == 'x' && i + 3 < n) {
                char h[3] = { s[i + 2], s[i + 3], 0 };
                out[o++] = (char)strtol(h, NULL, 16);
                i += 3;
                continue;
            }
        }
        out[o++] = s[i];
    }
    return o;
}

static void fixtures_check(const char *name, const char *kind)
{
    const char *dir = tok_data_dir();
    if (!dir) { t_fail("cannot find tests/data/tok (run from the repository root)"); return; }
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, !strcmp(kind, "json") ? "tokenizer.json" : "gguf");
    wk_tokenizer *t = !strcmp(kind, "json") ? wk_tokenizer_from_json_file(path) : wk_tokenizer_from_gguf_file(path);
    if (!t) { t_fail("%s: %s", path, wk_last_error()); return; }
    snprintf(path, sizeof path, "%s/expect.txt", dir);
    FILE *f = fopen(path, "rb");
    char *line = NULL, text[4096], dec[4096], tname[64] = "";
    size_t cap = 0, tl = 0;
    ssize_t n;
    int cases = 0;
    while (f && (n = getline(&line, &cap, f)) >= 0) {
        if (n && line[n - 1] == '\n') line[--n] = 0;
        if (n < 2 || line[0] == '#') continue;
        const char *v = line + 2;
        size_t vn = (size_t)n - 2;
        if (line[0] == 'T') snprintf(tname, sizeof tname, "%s", v);
        else if (line[0] == 'I') tl = unescape(v, vn < sizeof text ? vn : sizeof text - 1, text);
        else if (line[0] == 'E' && !strcmp(tname, name)) {
            cases++;
            int32_t *ids = NULL;
            int64_t k = 0;
            if (wk_tokenizer_encode(t, text, tl, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, &ids, &k)) {
                t_fail("encode \"%.*s\": %s", (int)tl, text, wk_last_error());
                continue;
            }
            const char *got = ids_str(ids, k);
            if (strcmp(got, v)) t_fail("%s %s: \"%.*s\": ids [%s], tokenizers [%s]", name, kind, (int)tl, text, got, v);
            free(ids);
        } else if (line[0] == 'D' && !strcmp(tname, name)) {
            /* decode tokenizers' ids: take them from the E line of this case
             * by encoding again (they were just checked equal) */
            int32_t *ids = NULL;
            int64_t k = 0;
            if (wk_tokenizer_encode(t, text, tl, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, &ids, &k)) continue;
            size_t dl = unescape(v, vn < sizeof dec ? vn : sizeof dec - 1, dec);
            decode_is(t, ids, k, 0, dec, dl);
            free(ids);
        }
    }
    if (f) fclose(f);
    free(line);
    T_CHECK(cases >= 20, "%s: only %d cases in expect.txt", name, cases);
    wk_tokenizer_free(t);
}

T_SUITE(tokenizer_fixtures)
{
    if (t_case("tokenizer/fixtures/bytes/json")) fixtures_check("bytes", "json");
    if (t_case("tokenizer/fixtures/bytes/gguf")) fixtures_check("bytes", "gguf");
    if (t_case("tokenizer/fixtures/spm/json")) fixtures_check("spm", "json");
    if (t_case("tokenizer/fixtures/spm/gguf")) fixtures_check("spm", "gguf");
}

/* ---- errors --------------------------------------------------------------------------- */

static bool err_is(const void *made, wk_status want, const char *words)
{
    bool ok = !made && wk_last_status() == want && strstr(wk_last_error(), words);
    if (!ok) t_fail("want %s with \"%s\"; got %s, status %s: \"%s\"", wk_status_name(want), words, made ? "a tokenizer" : "NULL",
                    wk_status_name(wk_last_status()), wk_last_error());
    return ok;
}

T_SUITE(tokenizer_errors)
{
    if (t_case("tokenizer/errors/spec")) {
        err_is(wk_tokenizer_new(NULL), WK_ERR_ARGUMENT, "NULL spec");
        wk_tokenizer_spec sp = wk_tokenizer_spec_default();
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "no tokens");
        const char *toks[] = { "a", "b", "ab" };
        const char *merges[] = { "a c" };
        sp.model = WK_TOK_MODEL_BYTE_BPE;
        sp.n_tokens = 3;
        sp.tokens = toks;
        sp.n_merges = 1;
        sp.merges = merges;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "\"c\" is not a token");
        const char *nospace[] = { "ab" };
        sp.merges = nospace;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "is not \"left right\"");
        const char *good[] = { "a b" };
        sp.merges = good;
        int32_t types[] = { 1, 9, 1 };
        sp.token_types = types;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "has type 9");
        sp.token_types = NULL;
        sp.bos_id = 7;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "bos id 7 out of range");
        sp.bos_id = -1;
        sp.pre = "klingon";
        err_is(wk_tokenizer_new(&sp), WK_ERR_UNSUPPORTED, "\"klingon\"");
        sp.pre = NULL;
        sp.model = WK_TOK_MODEL_SPM;
        sp.n_merges = 0;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "needs scores");
        sp.model = WK_TOK_MODEL_BYTE_BPE;
        sp.add_bos = true;
        sp.n_merges = 1;
        err_is(wk_tokenizer_new(&sp), WK_ERR_ARGUMENT, "no bos id");
    }
    if (t_case("tokenizer/errors/calls")) {
        wk_tokenizer *t = bytes_tokenizer(NULL);
        if (t) {
            int32_t *ids;
            int64_t n;
            T_CHECK(wk_tokenizer_encode(t, "x", 1, 64, &ids, &n) == WK_ERR_ARGUMENT && strstr(wk_last_error(), "flags"), "bad flags");
            T_CHECK(wk_tokenizer_encode(t, NULL, 3, 0, &ids, &n) == WK_ERR_ARGUMENT, "NULL text");
            T_CHECK(wk_tokenizer_encode(t, NULL, 0, 0, &ids, &n) == WK_OK && n == 0, "empty text");
            free(ids);
            int32_t bad[] = { 1, 5000 };
            char *s;
            T_CHECK(wk_tokenizer_decode(t, bad, 2, 0, &s, NULL) == WK_ERR_INDEX && strstr(wk_last_error(), "id 5000"),
                    "decode of an id out of range: %s", wk_last_error());
            T_CHECK(wk_tokenizer_token(t, -1, NULL) == NULL && wk_tokenizer_find(t, "zz", 2) == -1, "queries out of range");
            T_CHECK(!wk_tok_stream_new(t, 99), "stream flags");
            wk_tokenizer_free(t);
        }
        wk_tokenizer_free(NULL);
        wk_tok_stream_free(NULL);
    }
    if (t_case("tokenizer/errors/files")) {
        err_is(wk_tokenizer_from_gguf_file("/nonexistent/x.gguf"), WK_ERR_IO, "x.gguf");
        err_is(wk_tokenizer_from_json_file("/nonexistent/dir"), WK_ERR_IO, "tokenizer.json");
        static const char *const docs[][2] = {
            { "{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", "\"Unigram\"" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"normalizer\":{\"type\":\"NFKC\"}}", "\"NFKC\"" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"Whitespace\"}}", "\"Whitespace\"" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"},\"merges\":[]}}", "not a token id" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a q\"]}}", "is not a token" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"decoder\":{\"type\":\"CTC\"}}", "\"CTC\"" },
            { "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}}", "regex" },
        };
        for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
            wk_json *j = wk_json_parse(docs[i][0], strlen(docs[i][0]), "bad.json", 0);
            if (!j) { t_fail("test document %zu: %s", i, wk_last_error()); continue; }
            wk_tokenizer *t = wk_tokenizer_from_json(j);
            bool ok = !t && strstr(wk_last_error(), docs[i][1]) && strstr(wk_last_error(), "bad.json");
            if (!ok) t_fail("document %zu: want an error naming %s and the file; got \"%s\"", i, docs[i][1], wk_last_error());
            wk_tokenizer_free(t);
            wk_json_free(j);
        }
    }
}
