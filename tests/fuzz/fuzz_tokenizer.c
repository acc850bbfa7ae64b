/* fuzz_tokenizer.c — libFuzzer harness for the tokenizers (src/tokenizer/).
 * Two kinds of input:
 *   - "tokenizer.json" + "\n#WICK-FUZZ#\n" + text: the JSON is parsed and
 *     built into a tokenizer (wk_tokenizer_from_json), which encodes and
 *     decodes the text;
 *   - anything else: the first byte picks one of five tokenizers built
 *     here from arrays (byte-level BPE with the gpt2 and llama-bpe
 *     pre-tokenizers, SentencePiece-style with each prefix rule) and the
 *     encode/decode flags; the rest is the text.
 * Checked promises (include/wick_tokenizer.h): encoding any bytes
 * succeeds with ids in range; decoding gives NUL-terminated text, valid
 * UTF-8 unless WK_TOK_RAW; the streaming decoder's pieces and its flush
 * join to exactly what wk_tokenizer_decode gives; an id out of range is
 * WK_ERR_INDEX; and byte-level BPE is lossless: the raw decoding of the
 * encoding of any text (special tokens not parsed) is the text.
 * Corpus: tests/fuzz/corpus/tokenizer/.
 */
#include "fuzz_util.h"
#include "wick_formats.h"
#include "wick_tokenizer.h"

#define SEP "\n#WICK-FUZZ#\n"
#define N_BUILTIN 5

static wk_tokenizer *builtin[N_BUILTIN];

/* GPT-2's bytes_to_unicode: the code point byte b is written as */
static unsigned byte_cp(unsigned b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) n++;
    return 256 + n;
}

static int put_utf8(unsigned cp, char *s)
{
    if (cp < 0x80) return s[0] = (char)cp, 1;
    if (cp < 0x800) return s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 63)), 2;
    s[0] = (char)(0xE0 | cp >> 12), s[1] = (char)(0x80 | ((cp >> 6) & 63)), s[2] = (char)(0x80 | (cp & 63));
    return 3;
}

static wk_tokenizer *make_byte_bpe(const char *pre, bool ignore_merges)
{
    static char bytes[256][4];
    static const char *const extra[] = { "he", "\u0120t", "\u0120the", "in", "er", "\u0120a", "an",
                                         "\u0120an", "12", "123", "<|endoftext|>", "<|im_start|>", "<tool>" };
    static const char *const merges[] = { "h e", "\u0120 t", "\u0120t he", "i n", "e r", "\u0120 a", "a n",
                                          "\u0120a n", "1 2", "12 3" };
    enum { NB = 256, NE = sizeof extra / sizeof *extra };
    const char *toks[NB + NE];
    int32_t types[NB + NE];
    for (unsigned b = 0; b < NB; b++) {
        bytes[b][put_utf8(byte_cp(b), bytes[b])] = 0;
        toks[b] = bytes[b];
        types[b] = WK_TOK_TYPE_NORMAL;
    }
    for (int i = 0; i < NE; i++) {
        toks[NB + i] = extra[i];
        types[NB + i] = WK_TOK_TYPE_NORMAL;
    }
    types[NB + NE - 3] = types[NB + NE - 2] = WK_TOK_TYPE_CONTROL;
    types[NB + NE - 1] = WK_TOK_TYPE_USER_DEFINED;
    wk_tokenizer_spec s = wk_tokenizer_spec_default();
    s.model = WK_TOK_MODEL_BYTE_BPE;
    s.n_tokens = NB + NE;
    s.tokens = toks;
    s.token_types = types;
    s.n_merges = sizeof merges / sizeof *merges;
    s.merges = merges;
    s.pre = pre;
    s.eos_id = NB + NE - 3;
    s.ignore_merges = ignore_merges;
    wk_tokenizer *t = wk_tokenizer_new(&s);
    FZ_CHECK(t != NULL, "the byte-level tokenizer (%s): %s", pre, wk_last_error());
    return t;
}

static wk_tokenizer *make_spm(wk_tok_prefix prefix)
{
    static char bytes[256][8];
    static const char *const pieces[] = { "\u2581", "\u2581t", "h", "e", "he", "t", "the", "\u2581the",
                                          "a", "\u2581a", "n", "an", "\xc3\xa9", "\u2581\u2581" };
    enum { NS = 3, NB = 256, NP = sizeof pieces / sizeof *pieces, N = NS + NB + NP };
    const char *toks[N];
    int32_t types[N];
    float scores[N];
    toks[0] = "<unk>", types[0] = WK_TOK_TYPE_UNKNOWN;
    toks[1] = "<s>", types[1] = WK_TOK_TYPE_CONTROL;
    toks[2] = "</s>", types[2] = WK_TOK_TYPE_CONTROL;
    for (int b = 0; b < NB; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[NS + b] = bytes[b];
        types[NS + b] = WK_TOK_TYPE_BYTE;
    }
    for (int i = 0; i < NP; i++) {
        toks[NS + NB + i] = pieces[i];
        types[NS + NB + i] = WK_TOK_TYPE_NORMAL;
    }
    for (int i = 0; i < N; i++) scores[i] = i < NS + NB ? 0.0f : -(float)(i % 7);
    wk_tokenizer_spec s = wk_tokenizer_spec_default();
    s.model = WK_TOK_MODEL_SPM;
    s.n_tokens = N;
    s.tokens = toks;
    s.token_types = types;
    s.scores = scores;
    s.unk_id = 0, s.bos_id = 1, s.eos_id = 2;
    s.add_bos = true;
    s.prefix = prefix;
    wk_tokenizer *t = wk_tokenizer_new(&s);
    FZ_CHECK(t != NULL, "the SentencePiece-style tokenizer: %s", wk_last_error());
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    builtin[0] = make_byte_bpe("gpt2", false);
    builtin[1] = make_byte_bpe("llama-bpe", true);
    builtin[2] = make_spm(WK_TOK_PREFIX_NONE);
    builtin[3] = make_spm(WK_TOK_PREFIX_ALWAYS);
    builtin[4] = make_spm(WK_TOK_PREFIX_FIRST);
    return 0;
}

/* RFC 3629 UTF-8 */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k;
        unsigned cp;
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

/* decode, and the streaming decoder, of ids with flags: they must agree */
static void check_decode(const wk_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags)
{
    char *text = NULL;
    size_t len = 0;
    wk_clear_error();
    wk_status st = wk_tokenizer_decode(t, ids, n, flags, &text, &len);
    bool in_range = true;
    for (int64_t i = 0; i < n; i++) in_range &= ids[i] >= 0 && ids[i] < wk_tokenizer_n_tokens(t);
    if (!in_range) {
        FZ_CHECK(st == WK_ERR_INDEX, "decode of an id out of range gave %s", wk_status_name(st));
        free(text);
        return;
    }
    FZ_CHECK(st == WK_OK && text, "decode failed: %s", wk_last_error());
    FZ_CHECK(text[len] == 0, "decoded text is not NUL-terminated");
    if (!(flags & WK_TOK_RAW)) FZ_CHECK(utf8_valid((const unsigned char *)text, len), "decoded text is not UTF-8");

    wk_tok_stream *s = wk_tok_stream_new(t, flags);
    FZ_CHECK(s != NULL, "wk_tok_stream_new: %s", wk_last_error());
    char *joined = malloc(len + 1);
    size_t at = 0;
    bool over = false;
    for (int64_t i = 0; i <= n; i++) {
        const char *piece = NULL;
        size_t pl = 0;
        st = i < n ? wk_tok_stream_push(s, ids[i], &piece, &pl) : wk_tok_stream_flush(s, &piece, &pl);
        FZ_CHECK(st == WK_OK && piece, "stream %s failed: %s", i < n ? "push" : "flush", wk_last_error());
        FZ_CHECK(piece[pl] == 0, "a streamed piece is not NUL-terminated");
        if (at + pl > len) over = true;
        else memcpy(joined + at, piece, pl);
        at += pl;
    }
    FZ_CHECK(!over && at == len && memcmp(joined, text, len) == 0,
             "the stream gave %zu bytes, decode %zu (flags %u): they differ", at, len, flags);
    wk_tok_stream_free(s);
    free(joined);
    free(text);
}

static void run(const wk_tokenizer *t, const uint8_t *text, size_t n, unsigned eflags, unsigned dflags, bool lossless)
{
    int32_t *ids = NULL;
    int64_t nid = 0;
    wk_clear_error();
    wk_status st = wk_tokenizer_encode(t, (const char *)text, n, eflags, &ids, &nid);
    FZ_CHECK(st == WK_OK, "encode failed: %s", wk_last_error());
    const int32_t nt = wk_tokenizer_n_tokens(t);
    for (int64_t i = 0; i < nid; i++) FZ_CHECK(ids[i] >= 0 && ids[i] < nt, "id %d of %d tokens", ids[i], nt);
    check_decode(t, ids, nid, dflags);
    if (lossless) {
        char *back = NULL;
        size_t bl = 0;
        FZ_CHECK(wk_tokenizer_decode(t, ids, nid, WK_TOK_RAW, &back, &bl) == WK_OK, "decode: %s", wk_last_error());
        FZ_CHECK(bl == n && memcmp(back, text, n) == 0, "byte-level BPE lost the text (%zu bytes back of %zu)", bl, n);
        free(back);
    }
    free(ids);
    /* the text's bytes as ids, some out of range */
    int64_t m = (int64_t)(n / 2);
    int32_t *raw = malloc((size_t)(m ? m : 1) * sizeof *raw);
    for (int64_t i = 0; i < m; i++) raw[i] = (int32_t)((text[2 * i] | text[2 * i + 1] << 8) % (nt + 1));
    check_decode(t, raw, m, dflags);
    for (int64_t i = 0; i < m; i++) raw[i] %= nt;   /* all in range */
    check_decode(t, raw, m, dflags ^ WK_TOK_SKIP_SPECIAL);
    free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_part parts[2];
    if (fz_split(data, size, SEP, parts, 2) == 2) {
        wk_clear_error();
        wk_json *j = wk_json_parse((const char *)parts[0].p, parts[0].n, "tokenizer.json", WK_JSON_ALLOW_NAN);
        if (!j) return 0;
        wk_tokenizer *t = wk_tokenizer_from_json(j);
        wk_json_free(j);
        if (!t) {
            fz_check_error("wk_tokenizer_from_json");
            return 0;
        }
        const unsigned f = parts[1].n ? parts[1].p[0] : 0;
        run(t, parts[1].p, parts[1].n, f & 3, (f >> 2) & 7, false);
        wk_tokenizer_free(t);
        return 0;
    }
    if (size == 0) return 0;
    const unsigned f = data[0];
    const int which = (int)(f % N_BUILTIN);
    const unsigned eflags = (f / N_BUILTIN) & 3, dflags = (f / N_BUILTIN / 4) & 7;
    run(builtin[which], data + 1, size - 1, eflags, dflags, which < 2 && !(eflags & WK_TOK_PARSE_SPECIAL));
    return 0;
}
