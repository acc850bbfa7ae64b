/* test_model_files.c — the model-file layer (include/wick_formats.h): JSON,
 * HF config getters, GGUF read and write, safetensors (one file, shards, a
 * folder).
 *
 * References: the fixtures of tests/data/model_files/ and what the gguf and
 * safetensors packages read from them (tests/data/model_files_expect.h),
 * both written by tools/gen_model_files.py; the metadata values of
 * types.gguf are the ones that script sets. Checked here:
 *   json        valid and invalid texts (every RFC 8259 rule the parser
 *               enforces, with line/column in the message), NaN/Infinity
 *               under WK_JSON_ALLOW_NAN, large objects, every prefix and
 *               random byte flips (seeded, printed) of a document
 *   config      config.json getters: types, defaults, required keys
 *   gguf        every metadata type and array (nested too), alignment,
 *               tensor infos and bytes bit for bit (FNV-1a of the data,
 *               loaded onto the cpu and read back), v2, types wick lacks,
 *               hand-made corrupt files with the words of their messages,
 *               truncation at every byte of the fixtures and random flips:
 *               WK_ERR_IO or a valid result, never a crash (this suite runs
 *               under `make asan`)
 *   writer      every value type, nested arrays copied from a file, tensors
 *               of every GGUF dtype of wick (views too), alignment; read
 *               back by wick here and by the gguf package in
 *               `tools/gen_model_files.py --check-writer`
 *               (WICK_MODEL_FILES_KEEP=path keeps the written file)
 *   safetensors every dtype, scalar and empty tensors, metadata, shards
 *               through the index and the folder, corrupt headers,
 *               truncations and flips
 *   model_file  wk_model_file over a GGUF file (any name) and safetensors
 *               models (file, folder, shards; config.json required,
 *               tokenizer_config.json optional): the same tensors and bytes
 *               as the wk_gguf / wk_safetensors route; a text file named
 *               .gguf, a missing path, folders without model files, bad
 *               configs, NULL arguments
 * Case names: model_files/<part>/<what>.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "wick_formats.h"
#include "data/model_files_expect.h"

/* ---- helpers -------------------------------------------------------------- */

static const char *mf_dir(void)
{
    static const char *dir;
    if (!dir) {
        static const char *const c[] = { "tests/data/model_files", "../tests/data/model_files", "data/model_files" };
        for (size_t i = 0; i < sizeof c / sizeof c[0] && !dir; i++) {
            struct stat sb;
            if (stat(c[i], &sb) == 0) dir = c[i];
        }
        if (!dir) dir = c[0];
    }
    return dir;
}

static const char *mf_path(const char *rel)
{
    static _Thread_local char buf[4][512];
    static _Thread_local int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s", mf_dir(), rel);
    return buf[k];
}

/* A folder of its own for the files the cases write (thousands of truncated
 * and flipped copies): in /dev/shm when there is one (memory; a disk makes
 * this suite a minute slower), else $TMPDIR or /tmp. Removed when the
 * suite ends. */
static char tmp_dir_buf[256];
static const char *tmp_dir(void)
{
    if (!tmp_dir_buf[0]) {
        const char *t = getenv("TMPDIR");
        const char *c[] = { "/dev/shm", t && *t ? t : "/tmp", "/tmp" };
        for (int i = 0; i < 3 && !tmp_dir_buf[0]; i++) {
            snprintf(tmp_dir_buf, sizeof tmp_dir_buf, "%s/wick-model-files-XXXXXX", c[i]);
            if (!mkdtemp(tmp_dir_buf)) tmp_dir_buf[0] = 0;
        }
        if (!tmp_dir_buf[0]) snprintf(tmp_dir_buf, sizeof tmp_dir_buf, ".");
    }
    return tmp_dir_buf;
}

/* Removes dir's files and folders (the model-file cases write folders). */
static void remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[1024];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                struct stat sb;
                if (depth < 4 && lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(p, depth + 1);
                else remove(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

static void tmp_dir_remove(void)
{
    if (!tmp_dir_buf[0] || strcmp(tmp_dir_buf, ".") == 0) return;
    remove_tree(tmp_dir_buf, 0);
    tmp_dir_buf[0] = 0;
}

static const char *tmp_path(const char *name)
{
    static _Thread_local char buf[4][512];
    static _Thread_local int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir(), name);
    return buf[k];
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        t_fail("cannot open %s (run from the repository root)", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = t_mem((size_t)sz + 1);
    if (fread(p, 1, (size_t)sz, f) != (size_t)sz) t_fail("cannot read %s", path);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

static bool write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        t_fail("cannot create %s", path);
        return false;
    }
    bool ok = n == 0 || fwrite(p, 1, n, f) == n;
    ok = fclose(f) == 0 && ok;
    if (!ok) t_fail("cannot write %s", path);
    return ok;
}

static uint64_t fnv64(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The model layer's error: status want and every NULL-terminated word in its message. */
static bool mf_err(const char *what, wk_status want, wk_status got, ...)
{
    const char *msg = wk_last_error();
    bool ok = true;
    if (got != want) {
        t_fail("%s: status %s, expected %s (message: \"%s\")", what, wk_status_name(got), wk_status_name(want), msg);
        ok = false;
    }
    if (want != WK_OK && !*msg) {
        t_fail("%s: no error message", what);
        return false;
    }
    va_list ap;
    va_start(ap, got);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(msg, w)) {
            t_fail("%s: message \"%s\" does not mention \"%s\"", what, msg, w);
            ok = false;
        }
    va_end(ap);
    wk_clear_error();
    return ok;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- JSON -------------------------------------------------------------------- */

static wk_json *jparse(const char *s, unsigned flags) { return wk_json_parse(s, strlen(s), "test.json", flags); }

static void json_valid_cases(void)
{
    if (t_case("model_files/json/scalars")) {
        struct { const char *text; wk_json_type kind; double num; bool is_int; int64_t i; } c[] = {
            { "0", WK_JSON_NUMBER, 0, true, 0 },
            { "-0", WK_JSON_NUMBER, -0.0, true, 0 },
            { " 42 ", WK_JSON_NUMBER, 42, true, 42 },
            { "-9223372036854775808", WK_JSON_NUMBER, -9223372036854775808.0, true, INT64_MIN },
            { "9223372036854775807", WK_JSON_NUMBER, 9223372036854775807.0, true, INT64_MAX },
            { "9223372036854775808", WK_JSON_NUMBER, 9223372036854775808.0, false, 0 },
            { "7.0", WK_JSON_NUMBER, 7, true, 7 },
            { "7e0", WK_JSON_NUMBER, 7, true, 7 },
            { "1.5", WK_JSON_NUMBER, 1.5, false, 0 },
            { "-2.5E-3", WK_JSON_NUMBER, -2.5e-3, false, 0 },
            { "1e+2", WK_JSON_NUMBER, 100, true, 100 },
            { "1e400", WK_JSON_NUMBER, INFINITY, false, 0 },
            { "true", WK_JSON_BOOL, 0, false, 0 },
            { "false", WK_JSON_BOOL, 0, false, 0 },
            { "null", WK_JSON_NULL, 0, false, 0 },
            { "\xEF\xBB\xBF[]", WK_JSON_ARRAY, 0, false, 0 },
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            wk_json *j = jparse(c[i].text, 0);
            if (!j) {
                t_fail("'%s': %s", c[i].text, wk_last_error());
                continue;
            }
            T_CHECK(wk_json_kind(j) == c[i].kind, "'%s': kind %d", c[i].text, wk_json_kind(j));
            if (c[i].kind == WK_JSON_NUMBER) {
                double d = 0;
                int64_t v = 0;
                T_CHECK(wk_json_number(j, &d) && d == c[i].num && signbit(d) == signbit(c[i].num), "'%s': %.17g",
                        c[i].text, d);
                T_CHECK(wk_json_int(j, &v) == c[i].is_int && (!c[i].is_int || v == c[i].i), "'%s': int %lld",
                        c[i].text, (long long)v);
            }
            if (c[i].kind == WK_JSON_BOOL) {
                bool b;
                T_CHECK(wk_json_bool(j, &b) && b == (c[i].text[0] == 't'), "'%s'", c[i].text);
            }
            wk_json_free(j);
        }
    }
    if (t_case("model_files/json/strings")) {
        struct { const char *text; const char *bytes; size_t len; } c[] = {
            { "\"\"", "", 0 },
            { "\"plain\"", "plain", 5 },
            { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8 },
            { "\"\\u0041\\u00e9\\u20AC\"", "A\xC3\xA9\xE2\x82\xAC", 6 },
            { "\"\\ud83d\\ude00\"", "\xF0\x9F\x98\x80", 4 },
            { "\"a\\u0000b\"", "a\0b", 3 },
            { "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9 },
            { "\"\xF4\x8F\xBF\xBF\"", "\xF4\x8F\xBF\xBF", 4 },
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            wk_json *j = jparse(c[i].text, 0);
            size_t len = 99;
            const char *s = j ? wk_json_string(j, &len) : NULL;
            T_CHECK(s && len == c[i].len && memcmp(s, c[i].bytes, len) == 0 && s[len] == 0, "string %zu ('%s'): %s", i,
                    c[i].text, j ? "wrong bytes" : wk_last_error());
            wk_json_free(j);
        }
    }
    if (t_case("model_files/json/structure")) {
        const char *text = "{\"a\": [1, 2.5, \"x\", [true, null], {}], \"b\": {\"c\": {\"d\": -3}}, \"\": 0, \"e\\u0000f\": 1}";
        wk_json *j = jparse(text, 0);
        if (!j) {
            t_fail("%s", wk_last_error());
        } else {
            T_CHECK(wk_json_kind(j) == WK_JSON_OBJECT && wk_json_count(j) == 4, "root");
            const wk_json *a = wk_json_get(j, "a");
            T_CHECK(wk_json_kind(a) == WK_JSON_ARRAY && wk_json_count(a) == 5, "a");
            double d;
            T_CHECK(wk_json_number(wk_json_item(a, 1), &d) && d == 2.5, "a[1]");
            T_CHECK(wk_json_kind(wk_json_item(wk_json_item(a, 3), 1)) == WK_JSON_NULL, "a[3][1]");
            T_CHECK(wk_json_item(a, 5) == NULL && wk_json_item(a, 99) == NULL, "past the end");
            int64_t v;
            T_CHECK(wk_json_int(wk_json_path(j, "b.c.d"), &v) && v == -3, "path b.c.d");
            T_CHECK(wk_json_path(j, "b.x.d") == NULL && wk_json_path(j, "a.b") == NULL, "absent paths");
            T_CHECK(wk_json_get(j, "") != NULL, "empty key");
            size_t kl;
            const char *k = wk_json_key(j, 3, &kl);
            T_CHECK(k && kl == 3 && memcmp(k, "e\0f", 3) == 0, "key with a NUL");
            T_CHECK(wk_json_get(j, "e") == NULL, "a key with a NUL is not its prefix");
            T_CHECK(strcmp(wk_json_doc_name(a), "test.json") == 0, "doc name");
            T_CHECK(wk_json_string(a, NULL) == NULL && !wk_json_number(a, &d) && wk_json_count(wk_json_item(a, 0)) == 0,
                    "wrong-kind accessors");
            wk_json_free(j);
        }
    }
    if (t_case("model_files/json/nan")) {
        const char *c[] = { "NaN", "Infinity", "-Infinity", "[NaN, 1]" };
        for (size_t i = 0; i < 4; i++) {
            wk_json *j = jparse(c[i], WK_JSON_ALLOW_NAN);
            double d = 0;
            const wk_json *v = wk_json_kind(j) == WK_JSON_ARRAY ? wk_json_item(j, 0) : j;
            T_CHECK(j && wk_json_number(v, &d) && (i == 1 ? d == INFINITY : i == 2 ? d == -INFINITY : isnan(d)),
                    "'%s' with the flag: %s", c[i], j ? "wrong value" : wk_last_error());
            T_CHECK(!wk_json_int(v, NULL), "'%s' is no integer", c[i]);
            wk_json_free(j);
            wk_json *k = jparse(c[i], 0);
            T_CHECK(!k, "'%s' without the flag parsed", c[i]);
            wk_json_free(k);
            wk_clear_error();
        }
    }
    if (t_case("model_files/json/large_object")) {
        /* 3000 members: look-ups through the hash table, then a duplicate at the end */
        size_t cap = 3000 * 32 + 64, n = 0;
        char *t = t_mem(cap);
        n += (size_t)snprintf(t + n, cap - n, "{");
        for (int i = 0; i < 3000; i++) n += (size_t)snprintf(t + n, cap - n, "%s\"k%d\": %d", i ? "," : "", i, i * 3);
        size_t body = n;
        n += (size_t)snprintf(t + n, cap - n, "}");
        wk_json *j = wk_json_parse(t, n, "big", 0);
        T_CHECK(j && wk_json_count(j) == 3000, "3000 members: %s", j ? "wrong count" : wk_last_error());
        for (int i = 0; j && i < 3000; i += 7) {
            char k[16];
            snprintf(k, sizeof k, "k%d", i);
            int64_t v;
            T_CHECK(wk_json_int(wk_json_get(j, k), &v) && v == i * 3, "member %s", k);
        }
        T_CHECK(!j || wk_json_get(j, "k3000") == NULL, "absent member");
        wk_json_free(j);
        n = body + (size_t)snprintf(t + body, cap - body, ",\"k1234\": 0}");
        j = wk_json_parse(t, n, "big", 0);
        mf_err("duplicate in a large object", WK_ERR_IO, j ? WK_OK : wk_last_status(), "big", "duplicate key",
               "k1234", NULL);
        wk_json_free(j);
    }
}

static void json_invalid_cases(void)
{
    if (!t_case("model_files/json/invalid")) return;
    struct { const char *text; const char *word; } c[] = {
        { "", "value is missing" },
        { "   ", "value is missing" },
        { "01", "leading zero" },
        { "-", "needs a digit" },
        { "+1", "expected a value" },
        { ".5", "expected a value" },
        { "1.", "no digit after" },
        { "1e", "exponent" },
        { "1e+", "exponent" },
        { "0x10", "after the end" },
        { "tru", "expected a value" },
        { "nul", "expected a value" },
        { "True", "expected a value" },
        { "[1,]", "expected a value" },
        { "[1 2]", "expected ',' or ']'" },
        { "[", "value is missing" },
        { "[1", "never closed" },
        { "{", "never closed" },
        { "{\"a\"}", "expected ':'" },
        { "{\"a\":1,}", "expected a key" },
        { "{a:1}", "expected a key" },
        { "{\"a\":1 \"b\":2}", "expected ',' or '}'" },
        { "{\"a\":1,\"a\":2}", "column 8 (byte 7): duplicate key \"a\"" },
        { "\"abc", "never closed" },
        { "\"a\tb\"", "control character 0x09" },
        { "\"a\nb\"", "control character 0x0a" },
        { "\"\\x\"", "invalid escape" },
        { "\"\\u12\"", "\\u escape" },
        { "\"\\u12G4\"", "four hex digits" },
        { "\"\\ud800\"", "high surrogate" },
        { "\"\\ud800\\u0041\"", "high surrogate" },
        { "\"\\udc00\"", "lone low surrogate" },
        { "\"\xC0\x80\"", "invalid UTF-8" },
        { "\"\xC3\"", "invalid UTF-8" },
        { "\"\xED\xA0\x80\"", "invalid UTF-8" },
        { "\"\xF4\x90\x80\x80\"", "invalid UTF-8" },
        { "\"\xFF\"", "invalid UTF-8" },
        { "\"\x80\"", "invalid UTF-8" },
        { "{} {}", "after the end" },
        { "NaN", "expected a value" },
        { "-Infinity", "needs a digit" },
        { "[1]\x00", "after the end" },
        { "'a'", "expected a value" },
        { "/* c */ 1", "expected a value" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t len = strlen(c[i].text) + (strcmp(c[i].text, "[1]") == 0 ? 1 : 0);
        wk_json *j = wk_json_parse(c[i].text, len, "bad.json", 0);
        char what[96];
        snprintf(what, sizeof what, "invalid %zu ('%.40s')", i, c[i].text);
        mf_err(what, WK_ERR_IO, j ? WK_OK : wk_last_status(), "bad.json", "line 1, column", c[i].word, NULL);
        wk_json_free(j);
    }
    /* nesting: 256 levels parse, 257 do not */
    char deep[600];
    memset(deep, '[', 256);
    memset(deep + 256, ']', 256);
    wk_json *j = wk_json_parse(deep, 512, "deep", 0);
    T_CHECK(j != NULL, "256 levels: %s", wk_last_error());
    wk_json_free(j);
    memset(deep, '[', 257);
    memset(deep + 257, ']', 257);
    j = wk_json_parse(deep, 514, "deep", 0);
    mf_err("257 levels", WK_ERR_IO, j ? WK_OK : wk_last_status(), "nesting deeper than 256", NULL);
    wk_json_free(j);
    /* a line count in the message */
    j = wk_json_parse("{\n  \"a\": 1,\n  \"b\": ?\n}", 22, "lines.json", 0);
    mf_err("line numbers", WK_ERR_IO, j ? WK_OK : wk_last_status(), "line 3, column 8", NULL);
    wk_json_free(j);
    mf_err("bad flags", WK_ERR_ARGUMENT, wk_json_parse("1", 1, "x", 0x80) ? WK_OK : wk_last_status(), "flags",
           NULL);
    wk_json *nf = wk_json_parse_file(mf_path("no-such.json"), 0);
    mf_err("missing file", WK_ERR_IO, nf ? WK_OK : wk_last_status(), "no-such.json", "cannot open", NULL);
}

static void json_fuzz_cases(void)
{
    static const char doc[] = "{\"model_type\": \"llama\", \"n\": [1, -2.5e3, true, null, \"\\u00e9\\ud83d\\ude00\"],"
                              " \"o\": {\"k\": {}, \"l\": []}, \"s\": \"\xC3\xA9t\xC3\xA9\"}";
    size_t n = sizeof doc - 1;
    if (t_case("model_files/json/truncated")) {
        for (size_t k = 0; k < n; k++) {
            wk_json *j = wk_json_parse(doc, k, "cut", 0);
            if (j) t_fail("a prefix of %zu bytes parsed", k);
            else if (wk_last_status() != WK_ERR_IO) t_fail("prefix %zu: status %d", k, wk_last_status());
            wk_json_free(j);
        }
        wk_json *j = wk_json_parse(doc, n, "whole", 0);
        T_CHECK(j != NULL, "the whole document: %s", wk_last_error());
        wk_json_free(j);
    }
    if (t_case("model_files/json/flips")) {
        uint64_t s = t_seed();
        printf("model_files/json/flips: seed %llu\n", (unsigned long long)s);
        char buf[sizeof doc];
        int ok = 0;
        for (int it = 0; it < 4000; it++) {
            memcpy(buf, doc, n);
            int flips = 1 + (int)(rng_next(&s) % 3);
            for (int f = 0; f < flips; f++) buf[rng_next(&s) % n] ^= (char)(1u << (rng_next(&s) % 8));
            wk_json *j = wk_json_parse(buf, n, "flipped", (unsigned)(it & 1));
            if (j) {
                ok++;
                /* walk it */
                const wk_json *st[64];
                int top = 0;
                st[top++] = j;
                while (top) {
                    const wk_json *v = st[--top];
                    for (size_t i = 0; i < wk_json_count(v) && top < 64; i++) st[top++] = wk_json_item(v, i);
                    size_t len;
                    const char *str = wk_json_string(v, &len);
                    if (str && str[len] != 0) t_fail("flip %d: an unterminated string", it);
                }
            } else if (wk_last_status() != WK_ERR_IO) {
                t_fail("flip %d: status %s: %s", it, wk_status_name(wk_last_status()), wk_last_error());
            }
            wk_json_free(j);
        }
        (void)ok;
    }
}

static void config_cases(void)
{
    if (!t_case("model_files/config")) return;
    wk_json *c = wk_config_open(mf_path("sharded"));
    if (!c) {
        t_fail("wk_config_open: %s", wk_last_error());
        return;
    }
    int64_t i = -1;
    double d = -1;
    bool b = true;
    const char *s = NULL;
    T_CHECK(wk_config_int(c, "hidden_size", true, &i) == WK_OK && i == 8, "hidden_size");
    T_CHECK(wk_config_int(c, "max_position_embeddings", true, &i) == WK_OK && i == 131072, "max_position_embeddings");
    T_CHECK(wk_config_float(c, "rms_norm_eps", true, &d) == WK_OK && d == 1e-05, "rms_norm_eps");
    T_CHECK(wk_config_float(c, "rope_scaling.factor", true, &d) == WK_OK && d == 8.0, "rope_scaling.factor");
    T_CHECK(wk_config_float(c, "hidden_size", true, &d) == WK_OK && d == 8.0, "an integer as a float");
    T_CHECK(wk_config_float(c, "initializer_range", true, &d) == WK_OK && isnan(d), "NaN");
    T_CHECK(wk_config_bool(c, "tie_word_embeddings", true, &b) == WK_OK && !b, "tie_word_embeddings");
    T_CHECK(wk_config_str(c, "rope_scaling.rope_type", true, &s) == WK_OK && s && strcmp(s, "llama3") == 0, "rope_type");
    d = 50.0;
    T_CHECK(wk_config_float(c, "attn_logit_softcapping", false, &d) == WK_OK && d == 50.0, "null keeps the default");
    T_CHECK(wk_config_float(c, "no_such_key", false, &d) == WK_OK && d == 50.0, "absent keeps the default");
    mf_err("required null", WK_ERR_ARGUMENT, wk_config_float(c, "attn_logit_softcapping", true, &d), "config.json",
           "attn_logit_softcapping", "null", NULL);
    mf_err("required absent", WK_ERR_ARGUMENT, wk_config_int(c, "num_attention_heads", true, &i),
           "num_attention_heads", "missing", NULL);
    mf_err("string as int", WK_ERR_IO, wk_config_int(c, "torch_dtype", false, &i), "config.json", "torch_dtype",
           "a string \"bfloat16\"", "expected an integer", NULL);
    mf_err("float as int", WK_ERR_IO, wk_config_int(c, "rms_norm_eps", false, &i), "rms_norm_eps", "a number", NULL);
    mf_err("object as str", WK_ERR_IO, wk_config_str(c, "rope_scaling", false, &s), "an object", NULL);
    mf_err("array as bool", WK_ERR_IO, wk_config_bool(c, "architectures", false, &b), "an array", NULL);
    wk_json_free(c);
    wk_json *c2 = wk_config_open(mf_path("sharded/config.json"));
    T_CHECK(c2 != NULL, "config by file: %s", wk_last_error());
    wk_json_free(c2);
    wk_json *c3 = wk_config_open(mf_path("folder"));
    mf_err("a folder without config.json", WK_ERR_IO, c3 ? WK_OK : wk_last_status(), "config.json", NULL);
    wk_json_free(c3);
}

/* ---- GGUF reading --------------------------------------------------------------- */

/* A tensor's bytes through the cpu device must hash to fnv. */
static void check_load(const wk_file_tensor *ti, uint64_t fnv, const char *what)
{
    wk_tensor *t = t_own(wk_file_tensor_load(ti, t_dev()));
    if (!t) {
        t_fail("%s: load: %s", what, wk_last_error());
        return;
    }
    size_t n = wk_tensor_nbytes(t);
    T_CHECK(n == ti->nbytes, "%s: %zu bytes on the device, %llu in the file", what, n, (unsigned long long)ti->nbytes);
    T_CHECK(wk_tensor_dtype(t) == ti->dtype && t_shape_eq(wk_tensor_shape(t), ti->shape), "%s: dtype or shape", what);
    void *p = t_mem(n + 1);
    T_OK(wk_to_host(t, p, n));
    T_CHECK(fnv64(p, n) == fnv, "%s: bytes differ from the file's", what);
}

static void check_tensor_table(const char *file, const mf_tensor *ref, size_t n, const wk_file_tensor *(*info)(const void *, int64_t),
                               int64_t (*index)(const void *, const char *), const void *h, int64_t count, bool gguf)
{
    T_CHECK(count == (int64_t)n, "%s: %lld tensors, expected %zu", file, (long long)count, n);
    for (size_t i = 0; i < n; i++) {
        int64_t k = index(h, ref[i].name);
        const wk_file_tensor *t = info(h, k);
        if (!t) {
            t_fail("%s: no tensor '%s'", file, ref[i].name);
            continue;
        }
        T_CHECK(strcmp(t->name, ref[i].name) == 0, "%s: name", ref[i].name);
        if (gguf) {
            T_CHECK(k == (int64_t)i, "%s: index %lld, file order %zu", ref[i].name, (long long)k, i);
            T_CHECK(t->ggml_type == ref[i].ggml_type, "%s: ggml type %u, expected %u", ref[i].name, t->ggml_type,
                    ref[i].ggml_type);
        } else {
            T_CHECK(t->ggml_type == UINT32_MAX && strcmp(t->type_name, ref[i].type_name) == 0, "%s: type %s", ref[i].name,
                    t->type_name);
            T_CHECK(strstr(t->file, ref[i].file) != NULL, "%s: file %s, expected %s", ref[i].name, t->file, ref[i].file);
        }
        T_CHECK(t->shape.rank == ref[i].rank, "%s: rank %d, expected %d", ref[i].name, t->shape.rank, ref[i].rank);
        for (int d = 0; d < ref[i].rank && d < 8; d++)
            T_CHECK(t->shape.dims[d] == ref[i].dims[d], "%s: dim %d is %lld, expected %lld", ref[i].name, d,
                    (long long)t->shape.dims[d], (long long)ref[i].dims[d]);
        T_CHECK(t->offset == ref[i].offset && t->nbytes == ref[i].nbytes, "%s: offset %llu bytes %llu, expected %llu %llu",
                ref[i].name, (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                (unsigned long long)ref[i].offset, (unsigned long long)ref[i].nbytes);
        T_CHECK(fnv64(t->data, (size_t)t->nbytes) == ref[i].fnv, "%s: mapped bytes differ", ref[i].name);
        if ((unsigned)t->dtype < WK_DTYPE_COUNT) {
            check_load(t, ref[i].fnv, ref[i].name);
        } else {
            wk_tensor *x = wk_file_tensor_load(t, t_dev());
            char what[128];
            snprintf(what, sizeof what, "load of %s", ref[i].name);
            mf_err(what, WK_ERR_UNSUPPORTED, x ? WK_OK : wk_last_status(), ref[i].name, t->type_name,
                   "does not support", NULL);
            wk_release(x);
        }
    }
    T_CHECK(index(h, "no.such.tensor") == -1 && info(h, count) == NULL && info(h, -1) == NULL, "%s: absent tensors",
            file);
}

static const wk_file_tensor *g_info(const void *h, int64_t i) { return wk_gguf_tensor_info(h, i); }
static int64_t g_index(const void *h, const char *n) { return wk_gguf_tensor_index(h, n); }
static const wk_file_tensor *s_info(const void *h, int64_t i) { return wk_safetensors_tensor_info(h, i); }
static int64_t s_index(const void *h, const char *n) { return wk_safetensors_tensor_index(h, n); }

static void check_int(const wk_gguf *g, const char *key, wk_gguf_type type, int64_t want)
{
    const wk_gguf_value *v = wk_gguf_find(g, key);
    int64_t got = 0;
    T_CHECK(v && wk_gguf_value_type(v) == type, "%s: type %s", key, wk_gguf_type_name(wk_gguf_value_type(v)));
    T_CHECK(wk_gguf_value_int(v, &got) && got == want, "%s: %lld, expected %lld", key, (long long)got, (long long)want);
    T_CHECK(wk_gguf_get_int(g, key, &got) == WK_OK && got == want, "%s: get_int", key);
    uint64_t u;
    T_CHECK(wk_gguf_value_uint(v, &u) == (want >= 0) && (want < 0 || u == (uint64_t)want), "%s: as uint", key);
    double d;
    T_CHECK(!wk_gguf_value_float(v, &d) && wk_gguf_get_float(g, key, &d) == WK_OK && d == (double)want, "%s: as float",
            key);
}

static void check_gguf_values(const wk_gguf *g)
{
    check_int(g, "test.u8", WK_GGUF_U8, 200);
    check_int(g, "test.i8", WK_GGUF_I8, -100);
    check_int(g, "test.u16", WK_GGUF_U16, 60000);
    check_int(g, "test.i16", WK_GGUF_I16, -30000);
    check_int(g, "test.u32", WK_GGUF_U32, 4000000000);
    check_int(g, "test.i32", WK_GGUF_I32, -2000000000);
    check_int(g, "test.i64", WK_GGUF_I64, INT64_MIN);
    uint64_t u = 0;
    int64_t i;
    T_CHECK(wk_gguf_get_uint(g, "test.u64", &u) == WK_OK && u == UINT64_MAX, "u64");
    mf_err("u64 max as int", WK_ERR_DTYPE, wk_gguf_get_int(g, "test.u64", &i), "test.u64", "does not fit int64", NULL);
    mf_err("negative as uint", WK_ERR_DTYPE, wk_gguf_get_uint(g, "test.i8", &u), "test.i8", "negative", NULL);
    double d = 0;
    T_CHECK(wk_gguf_get_float(g, "test.f32", &d) == WK_OK && d == 0.15625, "f32");
    T_CHECK(wk_gguf_get_float(g, "test.f32_inexact", &d) == WK_OK && d == (double)1.1f, "f32 1.1");
    T_CHECK(wk_gguf_value_type(wk_gguf_find(g, "test.f32")) == WK_GGUF_F32, "f32 type");
    T_CHECK(wk_gguf_get_float(g, "test.f64", &d) == WK_OK && d == 3.141592653589793, "f64");
    T_CHECK(wk_gguf_value_type(wk_gguf_find(g, "test.f64")) == WK_GGUF_F64, "f64 type");
    bool b = false;
    T_CHECK(wk_gguf_get_bool(g, "test.bool", &b) == WK_OK && b, "bool");
    T_CHECK(wk_gguf_get_bool(g, "test.bool_false", &b) == WK_OK && !b, "bool false");
    const char *s = NULL;
    size_t len = 0;
    T_CHECK(wk_gguf_get_str(g, "test.string", &s, &len) == WK_OK && len == 17 &&
                strcmp(s, "h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93") == 0, "string");
    T_CHECK(wk_gguf_get_str(g, "test.string_empty", &s, &len) == WK_OK && len == 0 && s[0] == 0, "empty string");
    T_CHECK(wk_gguf_get_str(g, "test.string_nul", &s, &len) == WK_OK && len == 3 && memcmp(s, "a\0b", 4) == 0,
            "string with a NUL");
    T_CHECK(wk_gguf_get_str(g, "general.architecture", &s, NULL) == WK_OK && strcmp(s, "llama") == 0, "architecture");
    mf_err("string as int", WK_ERR_DTYPE, wk_gguf_get_int(g, "test.string", &i), "test.string", "string",
           "expected an integer", NULL);
    mf_err("missing key", WK_ERR_ARGUMENT, wk_gguf_get_int(g, "no.such.key", &i), "types.gguf", "no.such.key",
           "missing", NULL);
    mf_err("array as str", WK_ERR_DTYPE, wk_gguf_get_str(g, "test.arr.u8", &s, NULL), "an array of u8", NULL);

    /* arrays of every element type */
    struct { const char *key; wk_gguf_type et; uint64_t n; int64_t v[4]; } ia[] = {
        { "test.arr.u8", WK_GGUF_U8, 3, { 0, 1, 255 } },
        { "test.arr.i8", WK_GGUF_I8, 3, { -128, 0, 127 } },
        { "test.arr.u16", WK_GGUF_U16, 2, { 0, 65535 } },
        { "test.arr.i16", WK_GGUF_I16, 2, { -32768, 32767 } },
        { "test.arr.u32", WK_GGUF_U32, 2, { 0, 4294967295 } },
        { "test.arr.i32", WK_GGUF_I32, 2, { INT32_MIN, INT32_MAX } },
        { "test.arr.i64", WK_GGUF_I64, 2, { INT64_MIN, INT64_MAX } },
    };
    for (size_t k = 0; k < sizeof ia / sizeof ia[0]; k++) {
        wk_gguf_type et = WK_GGUF_TYPE_COUNT;
        uint64_t n = 0;
        const wk_gguf_value *a = NULL;
        T_OK(wk_gguf_get_array(g, ia[k].key, &et, &n, &a));
        T_CHECK(et == ia[k].et && n == ia[k].n && wk_gguf_array_type(a) == et && wk_gguf_array_len(a) == n,
                "%s: %s x %llu", ia[k].key, wk_gguf_type_name(et), (unsigned long long)n);
        for (uint64_t j = 0; j < n && j < 4; j++) {
            int64_t x = 0;
            T_CHECK(wk_gguf_array_int(a, j, &x) && x == ia[k].v[j], "%s[%llu] = %lld", ia[k].key,
                    (unsigned long long)j, (long long)x);
        }
        T_CHECK(!wk_gguf_array_int(a, n, &i) && !wk_gguf_array_float(a, 0, &d) && !wk_gguf_array_str(a, 0, NULL) &&
                    !wk_gguf_array_at(a, 0) && wk_gguf_array_data(a) != NULL, "%s: wrong accessors", ia[k].key);
    }
    const wk_gguf_value *a = wk_gguf_find(g, "test.arr.u64");
    T_CHECK(wk_gguf_array_uint(a, 1, &u) && u == UINT64_MAX && !wk_gguf_array_int(a, 1, &i), "u64 array");
    a = wk_gguf_find(g, "test.arr.f32");
    T_CHECK(wk_gguf_array_type(a) == WK_GGUF_F32 && wk_gguf_array_float(a, 0, &d) && d == 0.5 &&
                wk_gguf_array_float(a, 1, &d) && d == -2.25 && wk_gguf_array_float(a, 2, &d) && d == INFINITY, "f32 array");
    float raw[3];
    memcpy(raw, wk_gguf_array_data(a), sizeof raw);
    T_CHECK(raw[1] == -2.25f, "f32 array data");
    a = wk_gguf_find(g, "test.arr.f64");
    T_CHECK(wk_gguf_array_float(a, 0, &d) && d == 1e300 && wk_gguf_array_float(a, 1, &d) && d == 0 && signbit(d),
            "f64 array");
    a = wk_gguf_find(g, "test.arr.bool");
    T_CHECK(wk_gguf_array_type(a) == WK_GGUF_BOOL && wk_gguf_array_bool(a, 0, &b) && b && wk_gguf_array_bool(a, 1, &b) &&
                !b && wk_gguf_array_bool(a, 2, &b) && b, "bool array");
    a = wk_gguf_find(g, "test.arr.str");
    const char *want_s[] = { "a", "", "\xC3\xBCn\xC3\xAF", "x y" };
    T_CHECK(wk_gguf_array_type(a) == WK_GGUF_STRING && wk_gguf_array_len(a) == 4 && wk_gguf_array_data(a) == NULL,
            "string array");
    for (uint64_t j = 0; j < 4; j++) {
        s = wk_gguf_array_str(a, j, &len);
        T_CHECK(s && len == strlen(want_s[j]) && strcmp(s, want_s[j]) == 0, "string array [%llu]", (unsigned long long)j);
    }
    a = wk_gguf_find(g, "test.arr.nested");
    T_CHECK(wk_gguf_array_type(a) == WK_GGUF_ARRAY && wk_gguf_array_len(a) == 2, "nested");
    const wk_gguf_value *a0 = wk_gguf_array_at(a, 0), *a1 = wk_gguf_array_at(a, 1);
    T_CHECK(wk_gguf_array_type(a0) == WK_GGUF_I32 && wk_gguf_array_len(a0) == 3 && wk_gguf_array_int(a0, 2, &i) && i == 3,
            "nested[0]");
    T_CHECK(wk_gguf_array_len(a1) == 1 && wk_gguf_array_int(a1, 0, &i) && i == 4 && !wk_gguf_array_at(a, 2), "nested[1]");
    a = wk_gguf_find(g, "test.arr.nested_str");
    s = wk_gguf_array_str(wk_gguf_array_at(a, 1), 0, &len);
    T_CHECK(s && strcmp(s, "c") == 0 && wk_gguf_array_len(wk_gguf_array_at(a, 0)) == 2, "nested strings");
    a = wk_gguf_find(g, "test.arr.nested3");
    const wk_gguf_value *a01 = wk_gguf_array_at(wk_gguf_array_at(a, 0), 1);
    T_CHECK(wk_gguf_array_len(a01) == 2 && wk_gguf_array_int(a01, 1, &i) && i == 3, "three deep");
    T_CHECK(wk_gguf_array_int(wk_gguf_array_at(wk_gguf_array_at(a, 1), 0), 0, &i) && i == 4, "three deep [1][0][0]");
}

static void gguf_read_cases(void)
{
    if (t_case("model_files/gguf/types")) {
        wk_gguf *g = wk_gguf_open(mf_path("types.gguf"));
        if (!g) {
            t_fail("open: %s", wk_last_error());
        } else {
            T_CHECK(wk_gguf_version(g) == 3 && wk_gguf_alignment(g) == MF_TYPES_ALIGNMENT, "version %u alignment %u",
                    wk_gguf_version(g), wk_gguf_alignment(g));
            T_CHECK(wk_gguf_data_offset(g) == MF_TYPES_DATA_OFFSET, "data offset %llu",
                    (unsigned long long)wk_gguf_data_offset(g));
            T_CHECK(wk_gguf_kv_count(g) == MF_TYPES_N_KV, "kv count %lld", (long long)wk_gguf_kv_count(g));
            T_CHECK(strcmp(wk_gguf_kv_key(g, 0), "general.architecture") == 0 && wk_gguf_kv_key(g, -1) == NULL &&
                        wk_gguf_kv_value(g, wk_gguf_kv_count(g)) == NULL, "kv order and bounds");
            check_gguf_values(g);
            check_tensor_table("types.gguf", mf_types_gguf, sizeof mf_types_gguf / sizeof mf_types_gguf[0], g_info,
                               g_index, g, wk_gguf_tensor_count(g), true);
            wk_tensor *x = t_own(wk_gguf_tensor(g, "t.q4_k", t_dev()));
            T_CHECK(x && wk_tensor_dtype(x) == WK_Q4_K, "wk_gguf_tensor: %s", wk_last_error());
            mf_err("absent tensor", WK_ERR_ARGUMENT, wk_gguf_tensor(g, "nope", t_dev()) ? WK_OK : wk_last_status(),
                   "types.gguf", "nope", NULL);
            wk_tensor **all = t_mem(sizeof(wk_tensor *) * 32);
            mf_err("load_all with a type wick lacks", WK_ERR_UNSUPPORTED, wk_gguf_load_all(g, t_dev(), WK_PROGRESS_OFF, all),
                   "t.i8", "I8", NULL);
            T_CHECK(all[0] == NULL, "load_all left a tensor behind");
            T_CHECK(strcmp(wk_ggml_type_name(12), "Q4_K") == 0 && strcmp(wk_ggml_type_name(999), "type 999") == 0 &&
                        wk_ggml_type_dtype(30) == WK_BF16 && wk_ggml_type_dtype(24) == WK_DTYPE_COUNT, "type names");
            uint32_t gt;
            T_CHECK(wk_dtype_ggml_type(WK_Q8_1, &gt) && gt == 9 && !wk_dtype_ggml_type(WK_U8, &gt) &&
                        !wk_dtype_ggml_type(WK_F8E4M3, &gt) && !wk_dtype_ggml_type(WK_U32, &gt), "dtype -> ggml type");
            wk_gguf_close(g);
        }
    }
    const char *smalls[] = { "small.gguf", "small_v2.gguf" };
    for (int k = 0; k < 2; k++) {
        if (!t_case("model_files/gguf/%s", smalls[k])) continue;
        wk_gguf *g = wk_gguf_open(mf_path(smalls[k]));
        if (!g) {
            t_fail("open: %s", wk_last_error());
            continue;
        }
        T_CHECK(wk_gguf_version(g) == (k ? 2u : 3u) && wk_gguf_alignment(g) == MF_SMALL_ALIGNMENT &&
                    wk_gguf_data_offset(g) == MF_SMALL_DATA_OFFSET && wk_gguf_kv_count(g) == MF_SMALL_N_KV,
                "header fields");
        check_tensor_table(smalls[k], mf_small_gguf, 3, g_info, g_index, g, wk_gguf_tensor_count(g), true);
        wk_tensor *all[3];
        T_OK(wk_gguf_load_all(g, t_dev(), WK_PROGRESS_OFF, all));
        for (int j = 0; j < 3; j++) wk_release(all[j]);
        wk_gguf_close(g);
    }
}

/* ---- hand-made GGUF files --------------------------------------------------------- */

typedef struct gb { unsigned char *p; size_t n, cap; } gb;
static void gb_put(gb *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        unsigned char *q = t_mem(b->cap);
        if (b->n) memcpy(q, b->p, b->n);
        b->p = q;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void gb_u8(gb *b, uint8_t v) { gb_put(b, &v, 1); }
static void gb_u32(gb *b, uint32_t v) { gb_put(b, &v, 4); }
static void gb_u64(gb *b, uint64_t v) { gb_put(b, &v, 8); }
static void gb_str(gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}
static void gb_pad(gb *b, size_t a)
{
    while (b->n % a) gb_u8(b, 0);
}
static void gb_header(gb *b, uint32_t version, uint64_t nt, uint64_t nkv)
{
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, nt);
    gb_u64(b, nkv);
}
static void gb_kv_u32(gb *b, const char *k, uint32_t v)
{
    gb_str(b, k);
    gb_u32(b, WK_GGUF_U32);
    gb_u32(b, v);
}
/* a tensor info of rank 2 [rows, cols] */
static void gb_tensor(gb *b, const char *name, uint32_t type, uint64_t rows, uint64_t cols, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, 2);
    gb_u64(b, cols);
    gb_u64(b, rows);
    gb_u32(b, type);
    gb_u64(b, offset);
}

static wk_status open_bytes(const gb *b, const char *name, wk_gguf **out)
{
    const char *p = tmp_path(name);
    write_file(p, b->p, b->n);
    wk_clear_error();
    wk_gguf *g = wk_gguf_open(p);
    if (out) *out = g;
    else wk_gguf_close(g);
    return g ? WK_OK : wk_last_status();
}

static void gguf_corrupt_cases(void)
{
    if (!t_case("model_files/gguf/corrupt")) return;
    gb b = { 0 };
    gb_put(&b, "GGUX", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 0);
    gb_u64(&b, 0);
    mf_err("magic", WK_ERR_IO, open_bytes(&b, "magic.gguf", NULL), "magic.gguf", "not a GGUF file", NULL);
    for (uint32_t v = 0; v < 6; v += 1) {
        if (v == 2 || v == 3) continue;
        b = (gb){ 0 };
        gb_header(&b, v, 0, 0);
        mf_err("version", WK_ERR_IO, open_bytes(&b, "version.gguf", NULL), "version.gguf", "GGUF version", NULL);
    }
    b = (gb){ 0 };
    gb_header(&b, 0x03000000u, 0, 0);
    mf_err("big-endian", WK_ERR_IO, open_bytes(&b, "be.gguf", NULL), "be.gguf", "big-endian GGUF file (version 3",
           NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 0);
    wk_gguf *g = NULL;
    T_CHECK(open_bytes(&b, "empty.gguf", &g) == WK_OK && wk_gguf_tensor_count(g) == 0 && wk_gguf_kv_count(g) == 0,
            "a file of a header alone: %s", wk_last_error());
    wk_gguf_close(g);
    b = (gb){ 0 };
    gb_header(&b, 3, 1ull << 40, 0);
    mf_err("tensor count", WK_ERR_IO, open_bytes(&b, "count.gguf", NULL), "tensor count 1099511627776", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, UINT64_MAX);
    mf_err("kv count", WK_ERR_IO, open_bytes(&b, "kv.gguf", NULL), "metadata count 18446744073709551615", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 1ull << 62);
    gb_put(&b, "abcdefgh", 8);
    mf_err("key length", WK_ERR_IO, open_bytes(&b, "keylen.gguf", NULL), "metadata 0", "key", "4611686018427387904",
           "past the end", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.key");
    gb_u32(&b, 13);
    gb_u32(&b, 0);
    mf_err("value type", WK_ERR_IO, open_bytes(&b, "vtype.gguf", NULL), "'a.key'", "value type 13", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.str");
    gb_u32(&b, WK_GGUF_STRING);
    gb_u64(&b, 1000);
    gb_put(&b, "short", 5);
    mf_err("string length", WK_ERR_IO, open_bytes(&b, "strlen.gguf", NULL), "'a.str'", "1000 bytes", "past the end",
           NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.arr");
    gb_u32(&b, WK_GGUF_ARRAY);
    gb_u32(&b, 99);
    gb_u64(&b, 1);
    mf_err("array type", WK_ERR_IO, open_bytes(&b, "atype.gguf", NULL), "'a.arr'", "array element type 99", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.arr");
    gb_u32(&b, WK_GGUF_ARRAY);
    gb_u32(&b, WK_GGUF_STRING);
    gb_u64(&b, 1ull << 61);
    mf_err("array length", WK_ERR_IO, open_bytes(&b, "alen.gguf", NULL), "'a.arr'", "array of 2305843009213693952 string",
           NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "deep");
    gb_u32(&b, WK_GGUF_ARRAY);
    for (int d = 0; d < 40; d++) {
        gb_u32(&b, WK_GGUF_ARRAY);
        gb_u64(&b, 1);
    }
    mf_err("nesting", WK_ERR_IO, open_bytes(&b, "deep.gguf", NULL), "'deep'", "nested deeper", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.bool");
    gb_u32(&b, WK_GGUF_BOOL);
    gb_u8(&b, 2);
    mf_err("bool", WK_ERR_IO, open_bytes(&b, "bool.gguf", NULL), "'a.bool'", "neither 0 nor 1", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "x", 1);
    gb_kv_u32(&b, "x", 2);
    mf_err("duplicate key", WK_ERR_IO, open_bytes(&b, "dupkey.gguf", NULL), "'x' appears twice", NULL);
    uint32_t bad_align[] = { 0, 3, 48 };
    for (int k = 0; k < 3; k++) {
        b = (gb){ 0 };
        gb_header(&b, 3, 0, 1);
        gb_kv_u32(&b, "general.alignment", bad_align[k]);
        char w[48];
        snprintf(w, sizeof w, "general.alignment is %u", bad_align[k]);
        mf_err("alignment", WK_ERR_IO, open_bytes(&b, "align.gguf", NULL), w, "power of two", NULL);
    }
    b = (gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, WK_GGUF_U64);
    gb_u64(&b, 32);
    mf_err("alignment type", WK_ERR_IO, open_bytes(&b, "aligntype.gguf", NULL), "general.alignment is of type u64", NULL);

    /* tensors */
    struct { const char *name; uint32_t type; uint64_t rows, cols, offset, data; const char *w1, *w2; wk_status st; } tc[] = {
        { "ok", 0, 2, 3, 0, 24, NULL, NULL, WK_OK },
        { "past_end", 0, 2, 3, 0, 20, "'past_end'", "run past the end", WK_ERR_IO },
        { "unaligned", 0, 1, 1, 4, 64, "'unaligned'", "not a multiple of the alignment 32", WK_ERR_IO },
        { "rows", 2, 1, 40, 0, 64, "'rows'", "not a whole number of Q4_0 blocks", WK_ERR_IO },
        { "huge", 0, 1ull << 40, 1ull << 40, 0, 64, "'huge'", "overflows", WK_ERR_IO },
        { "dim", 0, 1ull << 63, 1, 0, 64, "'dim'", "larger than 2^63-1", WK_ERR_IO },
        { "offset", 0, 1, 1, UINT64_MAX - 31, 64, "'offset'", "run past the end", WK_ERR_IO },
        { "unknown", 99, 1, 1, 0, 64, NULL, NULL, WK_OK },
        { "tq", 34, 1, 256, 0, 54, NULL, NULL, WK_OK },
        { "iq", 16, 1, 256, 0, 66, NULL, NULL, WK_OK },
    };
    for (size_t k = 0; k < sizeof tc / sizeof tc[0]; k++) {
        b = (gb){ 0 };
        gb_header(&b, 3, 1, 0);
        gb_tensor(&b, tc[k].name, tc[k].type, tc[k].rows, tc[k].cols, tc[k].offset);
        gb_pad(&b, 32);
        for (uint64_t j = 0; j < tc[k].data; j++) gb_u8(&b, (uint8_t)j);
        char what[64];
        snprintf(what, sizeof what, "tensor %s", tc[k].name);
        g = NULL;
        wk_status st = open_bytes(&b, "tensor.gguf", &g);
        if (tc[k].st != WK_OK) {
            mf_err(what, tc[k].st, st, "tensor.gguf", tc[k].w1, tc[k].w2, NULL);
        } else if (!g) {
            t_fail("%s: %s", what, wk_last_error());
        } else if (tc[k].type == 16) {   /* IQ2_XXS: a wick dtype, read byte for byte */
            const wk_file_tensor *ti = wk_gguf_tensor_info(g, 0);
            T_CHECK(ti->dtype == WK_IQ2_XXS && strcmp(ti->type_name, "IQ2_XXS") == 0, "%s: type %s", what, ti->type_name);
            wk_tensor *x = T_NEED(wk_gguf_tensor(g, tc[k].name, t_dev()));
            unsigned char got[66], want[66];
            for (int j = 0; j < 66; j++) want[j] = (unsigned char)j;
            if (x) {
                T_CHECK(wk_tensor_dtype(x) == WK_IQ2_XXS && wk_tensor_nbytes(x) == 66, "%s: %s, %zu bytes", what,
                        wk_dtype_name(wk_tensor_dtype(x)), wk_tensor_nbytes(x));
                T_OK(wk_to_host(x, got, sizeof got));
                T_CHECK(!memcmp(got, want, sizeof got), "%s: the bytes differ from the file's", what);
            }
        } else if (tc[k].type == 99 || tc[k].type == 34) {
            const wk_file_tensor *ti = wk_gguf_tensor_info(g, 0);
            const char *tn = tc[k].type == 99 ? "type 99" : "TQ1_0";
            T_CHECK(ti->dtype == WK_DTYPE_COUNT && strcmp(ti->type_name, tn) == 0, "%s: type name %s", what, ti->type_name);
            wk_tensor *x = wk_gguf_tensor(g, tc[k].name, t_dev());
            mf_err(what, WK_ERR_UNSUPPORTED, x ? WK_OK : wk_last_status(), tc[k].name, tn, NULL);
            wk_release(x);
        }
        wk_gguf_close(g);
    }
    b = (gb){ 0 };
    gb_header(&b, 3, 1, 0);
    gb_str(&b, "five");
    gb_u32(&b, 5);
    for (int j = 0; j < 64; j++) gb_u8(&b, 0);
    mf_err("n_dims", WK_ERR_IO, open_bytes(&b, "ndims.gguf", NULL), "'five'", "n_dims is 5", NULL);
    b = (gb){ 0 };
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "same", 0, 1, 1, 0);
    gb_tensor(&b, "same", 0, 1, 1, 32);
    gb_pad(&b, 32);
    for (int j = 0; j < 64; j++) gb_u8(&b, 0);
    mf_err("duplicate tensor", WK_ERR_IO, open_bytes(&b, "duptensor.gguf", NULL), "'same' appears twice", NULL);
    mf_err("missing file", WK_ERR_IO, wk_gguf_open(tmp_path("absent.gguf")) ? WK_OK : wk_last_status(),
           "absent.gguf", "cannot open", NULL);
    mf_err("a folder", WK_ERR_IO, wk_gguf_open(tmp_dir()) ? WK_OK : wk_last_status(), "not a regular file", NULL);
}

/* Walk everything a handle gives: every value, every array element, every tensor loaded. */
static void walk_value(const wk_gguf_value *v, int depth)
{
    int64_t i;
    double d;
    bool b;
    size_t len;
    wk_gguf_value_int(v, &i);
    wk_gguf_value_float(v, &d);
    wk_gguf_value_bool(v, &b);
    const char *s = wk_gguf_value_str(v, &len);
    if (s && s[len] != 0) t_fail("an unterminated string");
    uint64_t n = wk_gguf_array_len(v);
    for (uint64_t k = 0; k < n; k++) {
        wk_gguf_array_int(v, k, &i);
        wk_gguf_array_float(v, k, &d);
        wk_gguf_array_bool(v, k, &b);
        s = wk_gguf_array_str(v, k, &len);
        if (s && s[len] != 0) t_fail("an unterminated string in an array");
        const wk_gguf_value *a = wk_gguf_array_at(v, k);
        if (a && depth < 32) walk_value(a, depth + 1);
    }
}

static void walk_gguf(const wk_gguf *g)
{
    for (int64_t k = 0; k < wk_gguf_kv_count(g); k++) {
        if (!wk_gguf_kv_key(g, k)) t_fail("key %lld is NULL", (long long)k);
        walk_value(wk_gguf_kv_value(g, k), 0);
    }
    for (int64_t k = 0; k < wk_gguf_tensor_count(g); k++) {
        const wk_file_tensor *t = wk_gguf_tensor_info(g, k);
        if (t->offset + t->nbytes > wk_gguf_file_size(g)) t_fail("tensor %lld past the end", (long long)k);
        (void)fnv64(t->data, (size_t)t->nbytes);   /* ASan sees a read past the mapping */
        wk_tensor *x = wk_file_tensor_load(t, t_dev());
        if (!x && wk_last_status() != WK_ERR_UNSUPPORTED && wk_last_status() != WK_ERR_MEMORY)
            t_fail("tensor %lld of a valid file: %s", (long long)k, wk_last_error());
        wk_release(x);
    }
}

/* Every prefix of the file: an error (WK_ERR_IO naming the file) until the last tensor's data is whole. */
static void truncation_case(const char *rel, bool gguf)
{
    size_t n;
    unsigned char *full = read_file(mf_path(rel), &n);
    if (!full) return;
    uint64_t need = 0;   /* the end of the last tensor */
    if (gguf) {
        wk_gguf *g = wk_gguf_open(mf_path(rel));
        for (int64_t k = 0; g && k < wk_gguf_tensor_count(g); k++) {
            const wk_file_tensor *t = wk_gguf_tensor_info(g, k);
            if (t->offset + t->nbytes > need) need = t->offset + t->nbytes;
        }
        if (g && wk_gguf_tensor_count(g) == 0) need = wk_gguf_data_offset(g);
        wk_gguf_close(g);
    } else {
        need = n;
    }
    const char *p = tmp_path(gguf ? "cut.gguf" : "cut.safetensors");
    int bad = 0;
    for (size_t k = 0; k < n && bad < 5; k++) {
        write_file(p, full, k);
        wk_clear_error();
        if (gguf) {
            wk_gguf *g = wk_gguf_open(p);
            if (k < need && g) {
                t_fail("%s cut to %zu bytes (of %zu) opened", rel, k, n);
                bad++;
            } else if (k >= need && !g) {
                t_fail("%s cut to %zu bytes, after its last tensor: %s", rel, k, wk_last_error());
                bad++;
            } else if (!g && (wk_last_status() != WK_ERR_IO || !strstr(wk_last_error(), "cut.gguf"))) {
                t_fail("%s cut to %zu: %s: %s", rel, k, wk_status_name(wk_last_status()), wk_last_error());
                bad++;
            }
            if (g) walk_gguf(g);
            wk_gguf_close(g);
        } else {
            wk_safetensors *s = wk_safetensors_open(p);
            if (s) {
                t_fail("%s cut to %zu bytes (of %zu) opened", rel, k, n);
                bad++;
            } else if (wk_last_status() != WK_ERR_IO || !strstr(wk_last_error(), "cut.safetensors")) {
                t_fail("%s cut to %zu: %s: %s", rel, k, wk_status_name(wk_last_status()), wk_last_error());
                bad++;
            }
            wk_safetensors_close(s);
        }
    }
}

static void walk_st(const wk_safetensors *s)
{
    for (int64_t k = 0; k < wk_safetensors_meta_count(s); k++)
        if (!wk_safetensors_meta_key(s, k) || !wk_safetensors_meta_value(s, k)) t_fail("metadata %lld", (long long)k);
    for (int64_t k = 0; k < wk_safetensors_tensor_count(s); k++) {
        const wk_file_tensor *t = wk_safetensors_tensor_info(s, k);
        (void)fnv64(t->data, (size_t)t->nbytes);
        wk_tensor *x = wk_file_tensor_load(t, t_dev());
        if (!x && wk_last_status() != WK_ERR_UNSUPPORTED && wk_last_status() != WK_ERR_MEMORY)
            t_fail("tensor %lld of a valid file: %s", (long long)k, wk_last_error());
        wk_release(x);
    }
}

/* Random byte flips (1..4 bytes, mostly in the header): WK_ERR_IO or a handle that walks cleanly. */
static void flips_case(const char *rel, bool gguf, uint64_t header_bytes, int iters)
{
    size_t n;
    unsigned char *full = read_file(mf_path(rel), &n);
    if (!full) return;
    uint64_t s = t_seed();
    printf("model_files/%s/flips/%s: seed %llu (replay: --seed %llu)\n", gguf ? "gguf" : "st", rel,
           (unsigned long long)s, (unsigned long long)s);
    unsigned char *buf = t_mem(n);
    const char *p = tmp_path(gguf ? "flip.gguf" : "flip.safetensors");
    int opened = 0, bad = 0;
    for (int it = 0; it < iters && bad < 5; it++) {
        memcpy(buf, full, n);
        int flips = 1 + (int)(rng_next(&s) % 4);
        for (int f = 0; f < flips; f++) {
            uint64_t r = rng_next(&s);
            size_t at = (size_t)((r & 7) ? (r >> 8) % header_bytes : (r >> 8) % n);
            if ((r >> 4) & 1) buf[at] ^= (unsigned char)(1u << ((r >> 5) % 8));
            else buf[at] = (unsigned char)(r >> 32);
        }
        write_file(p, buf, n);
        wk_clear_error();
        if (gguf) {
            wk_gguf *g = wk_gguf_open(p);
            if (g) {
                opened++;
                walk_gguf(g);
            } else if (wk_last_status() != WK_ERR_IO || !strstr(wk_last_error(), "flip.gguf")) {
                t_fail("flip %d: %s: %s", it, wk_status_name(wk_last_status()), wk_last_error());
                bad++;
            }
            wk_gguf_close(g);
        } else {
            wk_safetensors *st = wk_safetensors_open(p);
            if (st) {
                opened++;
                walk_st(st);
            } else if (wk_last_status() != WK_ERR_IO || !strstr(wk_last_error(), "flip.safetensors")) {
                t_fail("flip %d: %s: %s", it, wk_status_name(wk_last_status()), wk_last_error());
                bad++;
            }
            wk_safetensors_close(st);
        }
    }
    if (getenv("WICK_MODEL_FILES_VERBOSE")) printf("  %d of %d flipped files opened\n", opened, iters);
}

static void gguf_fuzz_cases(void)
{
    if (t_case("model_files/gguf/truncated/small.gguf")) truncation_case("small.gguf", true);
    if (t_case("model_files/gguf/truncated/types.gguf")) truncation_case("types.gguf", true);
    if (t_case("model_files/gguf/flips/small.gguf")) flips_case("small.gguf", true, MF_SMALL_DATA_OFFSET, 3000);
    if (t_case("model_files/gguf/flips/types.gguf")) flips_case("types.gguf", true, MF_TYPES_DATA_OFFSET, 3000);
}

/* ---- the GGUF writer ---------------------------------------------------------------- */

static const wk_dtype W_DTYPES[] = { WK_F32,    WK_F16,    WK_BF16,    WK_F64,   WK_I16,     WK_I32,    WK_I64,
                                     WK_Q4_0,   WK_Q4_1,   WK_Q5_0,    WK_Q5_1,  WK_Q8_0,    WK_Q8_1,   WK_Q2_K,
                                     WK_Q3_K,   WK_Q4_K,   WK_Q5_K,    WK_Q6_K,  WK_Q8_K,    WK_IQ4_NL, WK_IQ4_XS,
                                     WK_IQ3_XXS, WK_IQ3_S, WK_IQ2_XXS, WK_IQ2_XS, WK_IQ2_S,  WK_IQ1_S,  WK_IQ1_M };
#define N_W_DTYPES ((int)(sizeof W_DTYPES / sizeof W_DTYPES[0]))

static wk_shape w_shape(wk_dtype dt)
{
    if (wk_dtype_is_quantized(dt)) return WK_SHAPE(3, (int64_t)wk_dtype_block_size(dt) * 2);
    return WK_SHAPE(2, 3, 5);
}

static unsigned char *w_bytes(size_t n)
{
    unsigned char *p = t_mem(n + 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + 3);
    return p;
}

static size_t dt_bytes(wk_dtype dt, wk_shape s)
{
    size_t n = 1;
    for (int d = 0; d < s.rank; d++) n *= (size_t)s.dims[d];
    return n / wk_dtype_block_size(dt) * wk_dtype_block_bytes(dt);
}

static void writer_cases(void)
{
    if (t_case("model_files/writer/roundtrip")) {
        const char *keep = getenv("WICK_MODEL_FILES_KEEP");
        const char *path = keep && *keep ? keep : tmp_path("written.gguf");
        wk_gguf *src = wk_gguf_open(mf_path("types.gguf"));
        wk_gguf_writer *w = wk_gguf_writer_new();
        if (!src || !w) {
            t_fail("setup: %s", wk_last_error());
            wk_gguf_close(src);
            wk_gguf_writer_free(w);
            return;
        }
        T_OK(wk_gguf_writer_set_str(w, "general.architecture", "llama"));
        T_OK(wk_gguf_writer_set_u8(w, "w.u8", 250));
        T_OK(wk_gguf_writer_set_i8(w, "w.i8", -7));
        T_OK(wk_gguf_writer_set_u16(w, "w.u16", 65535));
        T_OK(wk_gguf_writer_set_i16(w, "w.i16", -32768));
        T_OK(wk_gguf_writer_set_u32(w, "w.u32", 4294967295u));
        T_OK(wk_gguf_writer_set_i32(w, "w.i32", -5));
        T_OK(wk_gguf_writer_set_u64(w, "w.u64", UINT64_MAX));
        T_OK(wk_gguf_writer_set_i64(w, "w.i64", INT64_MIN));
        T_OK(wk_gguf_writer_set_f32(w, "w.f32", 0.25f));
        T_OK(wk_gguf_writer_set_f64(w, "w.f64", -1.5));
        T_OK(wk_gguf_writer_set_bool(w, "w.bool", true));
        T_OK(wk_gguf_writer_set_str(w, "w.str", "\xC3\xA9t\xC3\xA9"));
        T_OK(wk_gguf_writer_set_u32(w, "w.replaced", 1));
        int32_t ai[] = { 1, -2, 3 };
        T_OK(wk_gguf_writer_set_array(w, "w.arr.i32", WK_GGUF_I32, ai, 3));
        const char *as[] = { "x", "", "yz" };
        T_OK(wk_gguf_writer_set_array(w, "w.arr.str", WK_GGUF_STRING, as, 3));
        bool ab[] = { true, false };
        T_OK(wk_gguf_writer_set_array(w, "w.arr.bool", WK_GGUF_BOOL, ab, 2));
        double af[] = { 0.5, -0.25 };
        T_OK(wk_gguf_writer_set_array(w, "w.arr.f64", WK_GGUF_F64, af, 2));
        uint8_t au[] = { 1, 2, 255 };
        T_OK(wk_gguf_writer_set_array(w, "w.arr.u8", WK_GGUF_U8, au, 3));
        T_OK(wk_gguf_writer_set_array(w, "w.arr.empty", WK_GGUF_U32, NULL, 0));
        T_OK(wk_gguf_writer_set_u32(w, "w.replaced", 2));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.arr.nested3"));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.arr.nested_str"));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.string_nul"));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.i8"));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.f32_inexact"));
        T_OK(wk_gguf_writer_copy_kv(w, src, "test.u64"));
        T_OK(wk_gguf_writer_set_alignment(w, 128));
        for (int k = 0; k < N_W_DTYPES; k++) {
            wk_dtype dt = W_DTYPES[k];
            wk_shape s = w_shape(dt);
            char name[32];
            snprintf(name, sizeof name, "w.%s", wk_dtype_name(dt));
            unsigned char *bytes = w_bytes(dt_bytes(dt, s));
            if (k % 2) {
                T_OK(wk_gguf_writer_add_data(w, name, dt, s, bytes));
            } else {
                wk_tensor *t = wk_from_host(t_dev(), dt, s, bytes);
                T_OK(wk_gguf_writer_add_tensor(w, name, t));
                wk_release(t);   /* the writer keeps its own reference */
            }
        }
        /* a transposed view and a narrowed view of rows: their logical contents are written */
        float vals[12];
        for (int k = 0; k < 12; k++) vals[k] = (float)k;
        wk_tensor *m = t_own(wk_from_host(t_dev(), WK_F32, WK_SHAPE(3, 4), vals));
        wk_tensor *mt = t_own(wk_transpose(m, 0, 1));
        T_OK(wk_gguf_writer_add_tensor(w, "v.transposed", mt));
        wk_tensor *q = t_own(wk_from_host(t_dev(), WK_Q8_0, WK_SHAPE(4, 32), w_bytes(4 * 34)));
        wk_tensor *qn = t_own(wk_narrow(q, 0, 1, 2));
        T_OK(wk_gguf_writer_add_tensor(w, "v.rows", qn));
        T_OK(wk_gguf_writer_add_data(w, "v.scalar", WK_F32, WK_SCALAR, vals + 5));
        T_OK(wk_gguf_writer_add_data(w, "v.empty", WK_F32, WK_SHAPE(0, 4), NULL));
        T_OK(wk_gguf_writer_write(w, path));
        wk_gguf_writer_free(w);
        wk_gguf_close(src);

        wk_gguf *g = wk_gguf_open(path);
        if (!g) {
            t_fail("reading back: %s", wk_last_error());
            return;
        }
        T_CHECK(wk_gguf_version(g) == 3 && wk_gguf_alignment(g) == 128 && wk_gguf_data_offset(g) % 128 == 0, "header");
        int64_t i;
        uint64_t u;
        double d;
        bool b;
        const char *s;
        size_t len;
        check_int(g, "w.u8", WK_GGUF_U8, 250);
        check_int(g, "w.i8", WK_GGUF_I8, -7);
        check_int(g, "w.u16", WK_GGUF_U16, 65535);
        check_int(g, "w.i16", WK_GGUF_I16, -32768);
        check_int(g, "w.u32", WK_GGUF_U32, 4294967295);
        check_int(g, "w.i32", WK_GGUF_I32, -5);
        check_int(g, "w.i64", WK_GGUF_I64, INT64_MIN);
        check_int(g, "w.replaced", WK_GGUF_U32, 2);
        check_int(g, "test.i8", WK_GGUF_I8, -100);
        T_CHECK(wk_gguf_get_uint(g, "w.u64", &u) == WK_OK && u == UINT64_MAX, "u64");
        T_CHECK(wk_gguf_get_uint(g, "test.u64", &u) == WK_OK && u == UINT64_MAX, "copied u64");
        T_CHECK(wk_gguf_get_float(g, "w.f32", &d) == WK_OK && d == 0.25 && wk_gguf_value_type(wk_gguf_find(g, "w.f32")) == WK_GGUF_F32, "f32");
        T_CHECK(wk_gguf_get_float(g, "test.f32_inexact", &d) == WK_OK && d == (double)1.1f, "copied f32");
        T_CHECK(wk_gguf_get_float(g, "w.f64", &d) == WK_OK && d == -1.5, "f64");
        T_CHECK(wk_gguf_get_bool(g, "w.bool", &b) == WK_OK && b, "bool");
        T_CHECK(wk_gguf_get_str(g, "w.str", &s, &len) == WK_OK && len == 5 && strcmp(s, "\xC3\xA9t\xC3\xA9") == 0, "str");
        T_CHECK(wk_gguf_get_str(g, "test.string_nul", &s, &len) == WK_OK && len == 3 && memcmp(s, "a\0b", 3) == 0,
                "copied string with a NUL");
        const wk_gguf_value *a = wk_gguf_find(g, "w.arr.i32");
        T_CHECK(wk_gguf_array_type(a) == WK_GGUF_I32 && wk_gguf_array_len(a) == 3 && wk_gguf_array_int(a, 1, &i) && i == -2,
                "i32 array");
        a = wk_gguf_find(g, "w.arr.str");
        T_CHECK(wk_gguf_array_len(a) == 3 && (s = wk_gguf_array_str(a, 2, &len)) && strcmp(s, "yz") == 0 &&
                    wk_gguf_array_str(a, 1, &len) && len == 0, "string array");
        a = wk_gguf_find(g, "w.arr.bool");
        T_CHECK(wk_gguf_array_bool(a, 0, &b) && b && wk_gguf_array_bool(a, 1, &b) && !b, "bool array");
        a = wk_gguf_find(g, "w.arr.f64");
        T_CHECK(wk_gguf_array_float(a, 1, &d) && d == -0.25, "f64 array");
        a = wk_gguf_find(g, "w.arr.empty");
        T_CHECK(wk_gguf_array_type(a) == WK_GGUF_U32 && wk_gguf_array_len(a) == 0, "empty array");
        a = wk_gguf_find(g, "test.arr.nested3");
        const wk_gguf_value *a01 = wk_gguf_array_at(wk_gguf_array_at(a, 0), 1);
        T_CHECK(wk_gguf_array_len(a01) == 2 && wk_gguf_array_int(a01, 1, &i) && i == 3, "copied nested array");
        a = wk_gguf_find(g, "test.arr.nested_str");
        T_CHECK((s = wk_gguf_array_str(wk_gguf_array_at(a, 0), 1, NULL)) && strcmp(s, "b") == 0, "copied nested strings");
        T_CHECK(strcmp(wk_gguf_kv_key(g, 0), "general.architecture") == 0, "key order");
        for (int k = 0; k < N_W_DTYPES; k++) {
            wk_dtype dt = W_DTYPES[k];
            char name[32];
            snprintf(name, sizeof name, "w.%s", wk_dtype_name(dt));
            int64_t idx = wk_gguf_tensor_index(g, name);
            const wk_file_tensor *t = wk_gguf_tensor_info(g, idx);
            if (!t) {
                t_fail("%s missing", name);
                continue;
            }
            size_t n = dt_bytes(dt, w_shape(dt));
            T_CHECK(t->dtype == dt && t_shape_eq(t->shape, w_shape(dt)) && t->nbytes == n && t->offset % 128 == 0,
                    "%s: info", name);
            check_load(t, fnv64(w_bytes(n), n), name);
        }
        const wk_file_tensor *t = wk_gguf_tensor_info(g, wk_gguf_tensor_index(g, "v.transposed"));
        float got[12];
        T_CHECK(t && t->shape.rank == 2 && t->shape.dims[0] == 4 && t->shape.dims[1] == 3, "transposed view shape");
        if (t) {
            memcpy(got, t->data, sizeof got);
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 3; c++) T_CHECK(got[r * 3 + c] == vals[c * 4 + r], "transposed [%d,%d]", r, c);
        }
        t = wk_gguf_tensor_info(g, wk_gguf_tensor_index(g, "v.rows"));
        T_CHECK(t && t->nbytes == 2 * 34 && memcmp(t->data, w_bytes(4 * 34) + 34, 68) == 0, "narrowed rows");
        t = wk_gguf_tensor_info(g, wk_gguf_tensor_index(g, "v.scalar"));
        T_CHECK(t && t->shape.rank == 0 && t->nbytes == 4 && memcmp(t->data, vals + 5, 4) == 0, "scalar");
        t = wk_gguf_tensor_info(g, wk_gguf_tensor_index(g, "v.empty"));
        T_CHECK(t && t->nbytes == 0 && t->shape.dims[0] == 0, "empty");
        wk_tensor *e = t ? t_own(wk_file_tensor_load(t, t_dev())) : NULL;
        T_CHECK(e && wk_tensor_nbytes(e) == 0, "loading an empty tensor: %s", wk_last_error());
        wk_gguf_close(g);
        if (!keep) remove(path);
    }
    if (t_case("model_files/writer/errors")) {
        wk_gguf_writer *w = wk_gguf_writer_new();
        float f[4] = { 0 };
        mf_err("u8 tensor", WK_ERR_DTYPE, wk_gguf_writer_add_data(w, "u", WK_U8, WK_SHAPE(4), f), "'u'", "u8", NULL);
        mf_err("f8 tensor", WK_ERR_DTYPE, wk_gguf_writer_add_data(w, "f8", WK_F8E4M3, WK_SHAPE(4), f), "f8e4m3", NULL);
        mf_err("rank 5", WK_ERR_SHAPE, wk_gguf_writer_add_data(w, "r5", WK_F32, WK_SHAPE(1, 1, 1, 1, 1), f), "rank 5",
               NULL);
        mf_err("rows", WK_ERR_SHAPE, wk_gguf_writer_add_data(w, "q", WK_Q4_0, WK_SHAPE(2, 16), f), "'q'", "Q4_0", NULL);
        T_OK(wk_gguf_writer_add_data(w, "a", WK_F32, WK_SHAPE(4), f));
        mf_err("duplicate", WK_ERR_ARGUMENT, wk_gguf_writer_add_data(w, "a", WK_F32, WK_SHAPE(4), f), "'a'",
               "added already", NULL);
        mf_err("NULL data", WK_ERR_ARGUMENT, wk_gguf_writer_add_data(w, "b", WK_F32, WK_SHAPE(4), NULL), "NULL data",
               NULL);
        mf_err("NULL tensor", WK_ERR_ARGUMENT, wk_gguf_writer_add_tensor(w, "c", NULL), "'c'", NULL);
        mf_err("alignment", WK_ERR_ARGUMENT, wk_gguf_writer_set_alignment(w, 24), "24", "power of two", NULL);
        mf_err("array of arrays", WK_ERR_ARGUMENT, wk_gguf_writer_set_array(w, "x", WK_GGUF_ARRAY, f, 1), "copy_kv", NULL);
        mf_err("NULL array", WK_ERR_ARGUMENT, wk_gguf_writer_set_array(w, "x", WK_GGUF_F32, NULL, 2), "NULL data", NULL);
        mf_err("NULL string", WK_ERR_ARGUMENT, wk_gguf_writer_set_str(w, "x", NULL), "NULL string", NULL);
        mf_err("NULL key", WK_ERR_ARGUMENT, wk_gguf_writer_set_u32(w, NULL, 1), "NULL key", NULL);
        mf_err("unwritable", WK_ERR_IO, wk_gguf_writer_write(w, tmp_path("no/such/dir/x.gguf")), "cannot create", NULL);
        wk_gguf *g = wk_gguf_open(mf_path("small.gguf"));
        mf_err("copy of an absent key", WK_ERR_ARGUMENT, wk_gguf_writer_copy_kv(w, g, "nope"), "nope", "missing", NULL);
        wk_gguf_close(g);
        wk_gguf_writer_free(w);
        wk_gguf_writer_free(NULL);
    }
}

/* ---- safetensors ---------------------------------------------------------------------- */

static void st_cases(void)
{
    if (t_case("model_files/st/types")) {
        wk_safetensors *s = wk_safetensors_open(mf_path("types.safetensors"));
        if (!s) {
            t_fail("open: %s", wk_last_error());
        } else {
            T_CHECK(wk_safetensors_file_count(s) == 1 && strstr(wk_safetensors_file_path(s, 0), "types.safetensors"),
                    "file");
            T_CHECK(wk_safetensors_meta_count(s) == 2 && strcmp(wk_safetensors_meta(s, "format"), "pt") == 0 &&
                        strcmp(wk_safetensors_meta(s, "note"), "h\xC3\xA9llo") == 0 && !wk_safetensors_meta(s, "x"),
                    "metadata");
            check_tensor_table("types.safetensors", mf_types_st, sizeof mf_types_st / sizeof mf_types_st[0], s_info,
                               s_index, s, wk_safetensors_tensor_count(s), false);
            /* file order is offset order */
            for (int64_t k = 1; k < wk_safetensors_tensor_count(s); k++)
                T_CHECK(wk_safetensors_tensor_info(s, k)->offset >= wk_safetensors_tensor_info(s, k - 1)->offset,
                        "offset order at %lld", (long long)k);
            struct { const char *n; wk_dtype dt; } m[] = { { "BOOL", WK_U8 }, { "U8", WK_U8 }, { "I16", WK_I16 },
                                                           { "I32", WK_I32 }, { "U32", WK_U32 }, { "I64", WK_I64 },
                                                           { "F16", WK_F16 }, { "BF16", WK_BF16 }, { "F32", WK_F32 },
                                                           { "F64", WK_F64 }, { "F8_E4M3", WK_F8E4M3 } };
            for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
                wk_dtype dt;
                T_CHECK(wk_safetensors_dtype(m[k].n, &dt) && dt == m[k].dt, "dtype %s", m[k].n);
            }
            wk_dtype dt;
            T_CHECK(!wk_safetensors_dtype("I8", &dt) && !wk_safetensors_dtype("U64", &dt) &&
                        !wk_safetensors_dtype("F8_E5M2", &dt) && !wk_safetensors_dtype("Q4", &dt), "dtypes wick lacks");
            wk_tensor *x = t_own(wk_safetensors_tensor(s, "st.bf16", t_dev()));
            T_CHECK(x && wk_tensor_dtype(x) == WK_BF16, "by name: %s", wk_last_error());
            mf_err("absent", WK_ERR_ARGUMENT, wk_safetensors_tensor(s, "zz", t_dev()) ? WK_OK : wk_last_status(),
                   "zz", NULL);
            wk_safetensors_close(s);
        }
    }
    if (t_case("model_files/st/sharded")) {
        const char *ways[] = { "sharded", "sharded/model.safetensors.index.json" };
        for (int w = 0; w < 2; w++) {
            wk_safetensors *s = wk_safetensors_open(mf_path(ways[w]));
            if (!s) {
                t_fail("%s: %s", ways[w], wk_last_error());
                continue;
            }
            T_CHECK(wk_safetensors_file_count(s) == 2 && strstr(wk_safetensors_file_path(s, 1), "model-00002-of-00002"),
                    "%s: files", ways[w]);
            check_tensor_table(ways[w], mf_sharded_st, sizeof mf_sharded_st / sizeof mf_sharded_st[0], s_info, s_index,
                               s, wk_safetensors_tensor_count(s), false);
            T_CHECK(wk_safetensors_meta_count(s) == 1 && strcmp(wk_safetensors_meta(s, "format"), "pt") == 0, "metadata");
            wk_tensor *all[3] = { 0 };
            T_OK(wk_safetensors_load_all(s, t_dev(), WK_PROGRESS_OFF, all));
            for (int k = 0; k < 3; k++) wk_release(all[k]);
            wk_safetensors_close(s);
        }
    }
    if (t_case("model_files/st/folder")) {
        wk_safetensors *s = wk_safetensors_open(mf_path("folder"));
        T_CHECK(s && wk_safetensors_tensor_count(s) == 1 && wk_safetensors_tensor_index(s, "w") == 0, "folder: %s",
                wk_last_error());
        wk_safetensors_close(s);
        s = wk_safetensors_open(tmp_dir());
        mf_err("empty folder", WK_ERR_IO, s ? WK_OK : wk_last_status(), "model.safetensors", NULL);
        wk_safetensors_close(s);
    }
}

/* a safetensors file from a header text and data bytes */
static wk_status st_bytes(const char *header, size_t data, const char *name)
{
    size_t h = strlen(header);
    gb b = { 0 };
    gb_u64(&b, h);
    gb_put(&b, header, h);
    for (size_t k = 0; k < data; k++) gb_u8(&b, (uint8_t)k);
    const char *p = tmp_path(name);
    write_file(p, b.p, b.n);
    wk_clear_error();
    wk_safetensors *s = wk_safetensors_open(p);
    wk_safetensors_close(s);
    return s ? WK_OK : wk_last_status();
}

static void st_corrupt_cases(void)
{
    if (!t_case("model_files/st/corrupt")) return;
    struct { const char *hdr; size_t data; const char *w1, *w2; } c[] = {
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, NULL, NULL },
        { "{}", 0, NULL, NULL },
        { "[]", 0, "the header is an array", NULL },
        { "{\"a\":1}", 0, "'a'", "expected an object" },
        { "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "'a'", "no \"dtype\"" },
        { "{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype \"Q4\"", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "dim 0", "non-negative" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "dim 0", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "9 dims", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "overflows", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 12, "hold 12 bytes", "needs 8" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "run past the end", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "end before they begin", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "data_offsets", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "'a' begins at data offset 4",
          "a gap" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[4,12]}}", 12, "overlaps", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 9, "the data section has 9 bytes", NULL },
        { "{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ \"k\" is a number", NULL },
        { "{\"__metadata__\":[]}", 0, "__metadata__ is an array", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{}}", 8, "duplicate key \"a\"", NULL },
        { "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "whole number of bytes", NULL },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "(header)", "never closed" },
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        char what[64];
        snprintf(what, sizeof what, "header %zu", k);
        wk_status st = st_bytes(c[k].hdr, c[k].data, "bad.safetensors");
        if (!c[k].w1) T_CHECK(st == WK_OK, "%s: %s", what, wk_last_error());
        else mf_err(what, WK_ERR_IO, st, "bad.safetensors", c[k].w1, c[k].w2, NULL);
    }
    gb b = { 0 };
    gb_u64(&b, 1ull << 40);
    gb_put(&b, "{}", 2);
    write_file(tmp_path("len.safetensors"), b.p, b.n);
    mf_err("header length", WK_ERR_IO, wk_safetensors_open(tmp_path("len.safetensors")) ? WK_OK : wk_last_status(),
           "header length 1099511627776", "over the safetensors limit", NULL);
    b = (gb){ 0 };
    gb_u64(&b, 1000);
    gb_put(&b, "{}", 2);
    write_file(tmp_path("len.safetensors"), b.p, b.n);
    mf_err("header length past the end", WK_ERR_IO,
           wk_safetensors_open(tmp_path("len.safetensors")) ? WK_OK : wk_last_status(), "header length 1000",
           "runs past the end of the file (10 bytes)", NULL);

    /* indexes */
    st_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "shard-a.safetensors");
    st_bytes("{\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "shard-b.safetensors");
    struct { const char *idx; const char *w1, *w2; } ix[] = {
        { "{\"weight_map\":{\"x\":\"shard-a.safetensors\",\"y\":\"shard-b.safetensors\"}}", NULL, NULL },
        { "{\"weight_map\":{\"x\":\"shard-a.safetensors\",\"y\":\"shard-a.safetensors\"}}", "puts tensor 'y' in shard-a",
          "does not hold it" },
        { "{\"weight_map\":{\"x\":\"shard-c.safetensors\"}}", "shard-c.safetensors", "cannot open" },
        { "{\"weight_map\":{\"x\":\"../shard-a.safetensors\"}}", "not a file name", NULL },
        { "{\"weight_map\":{\"x\":1}}", "weight_map[\"x\"] is a number", NULL },
        { "{\"weight_map\":{}}", "names no tensor", NULL },
        { "{\"metadata\":{}}", "\"weight_map\" is missing", NULL },
        { "{\"weight_map\":{\"x\":\"shard-a.safetensors\",\"y\":\"shard-b.safetensors\"}", "never closed", NULL },
    };
    for (size_t k = 0; k < sizeof ix / sizeof ix[0]; k++) {
        const char *p = tmp_path("model.safetensors.index.json");
        write_file(p, ix[k].idx, strlen(ix[k].idx));
        wk_clear_error();
        wk_safetensors *s = wk_safetensors_open(p);
        char what[64];
        snprintf(what, sizeof what, "index %zu", k);
        if (!ix[k].w1) {
            T_CHECK(s && wk_safetensors_file_count(s) == 2 && wk_safetensors_tensor_count(s) == 2, "%s: %s", what,
                    wk_last_error());
        } else {
            mf_err(what, WK_ERR_IO, s ? WK_OK : wk_last_status(), ix[k].w1, ix[k].w2, NULL);
        }
        wk_safetensors_close(s);
    }
    remove(tmp_path("model.safetensors.index.json"));
    /* the same tensor in two shards */
    st_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "shard-b.safetensors");
    const char *idx = "{\"weight_map\":{\"x\":\"shard-a.safetensors\",\"z\":\"shard-b.safetensors\"}}";
    write_file(tmp_path("two.index.json"), idx, strlen(idx));
    wk_safetensors *s = wk_safetensors_open(tmp_path("two.index.json"));
    mf_err("a tensor in two shards", WK_ERR_IO, s ? WK_OK : wk_last_status(), "'x' appears in two shards", NULL);
    wk_safetensors_close(s);
}

static void st_fuzz_cases(void)
{
    if (t_case("model_files/st/truncated/types.safetensors")) truncation_case("types.safetensors", false);
    if (t_case("model_files/st/flips/types.safetensors")) {
        size_t n;
        unsigned char *p = read_file(mf_path("types.safetensors"), &n);
        uint64_t hdr = p && n >= 8 ? 8 + (p[0] | (uint64_t)p[1] << 8) : 8;
        flips_case("types.safetensors", false, hdr, 3000);
    }
}

/* ---- wk_model_file ------------------------------------------------------------------- */

/* a copy of a fixture at a path of the temporary folder */
static bool copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *p = read_file(from, &n);
    return p && write_file(to, p, n);
}

static bool write_text(const char *path, const char *text) { return write_file(path, text, strlen(text)); }

/* A model file's tensors are those of the file underneath, by index and by
 * name; each loads to the bytes the direct route gives. */
static void check_same_tensors(const char *what, const wk_model_file *f, int64_t count,
                               const wk_file_tensor *(*info)(const void *, int64_t), const void *h,
                               wk_tensor *(*load)(const void *, const char *, wk_device *))
{
    T_CHECK(wk_model_file_tensor_count(f) == count && count > 0, "%s: %lld tensors, the file has %lld", what,
            (long long)wk_model_file_tensor_count(f), (long long)count);
    for (int64_t i = 0; i < count; i++) {
        const wk_file_tensor *a = wk_model_file_tensor_info(f, i), *b = info(h, i);
        if (!a || !b) {
            t_fail("%s: tensor %lld: no info", what, (long long)i);
            continue;
        }
        T_CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->file, b->file) == 0 && a->dtype == b->dtype &&
                    a->ggml_type == b->ggml_type && strcmp(a->type_name, b->type_name) == 0 &&
                    t_shape_eq(a->shape, b->shape) && a->offset == b->offset && a->nbytes == b->nbytes,
                "%s: tensor %lld ('%s') differs from the file's", what, (long long)i, b->name);
        T_CHECK(wk_model_file_find(f, b->name) == a, "%s: find('%s') is not tensor %lld", what, b->name, (long long)i);
        if ((unsigned)a->dtype >= WK_DTYPE_COUNT) continue;
        wk_tensor *x = t_own(wk_model_file_tensor(f, b->name, t_dev()));
        wk_tensor *y = t_own(load(h, b->name, t_dev()));
        if (!x || !y) {
            t_fail("%s: load of '%s': %s", what, b->name, wk_last_error());
            continue;
        }
        size_t n = wk_tensor_nbytes(x);
        T_CHECK(n == wk_tensor_nbytes(y) && n == a->nbytes && wk_tensor_dtype(x) == wk_tensor_dtype(y) &&
                    t_shape_eq(wk_tensor_shape(x), wk_tensor_shape(y)), "%s: '%s': size, dtype or shape", what, b->name);
        void *px = t_mem(n + 1), *py = t_mem(n + 1);
        T_OK(wk_to_host(x, px, n));
        T_OK(wk_to_host(y, py, n));
        T_CHECK(memcmp(px, py, n) == 0 && fnv64(px, n) == fnv64(a->data, n), "%s: '%s': bytes differ", what, b->name);
    }
    T_CHECK(wk_model_file_tensor_info(f, count) == NULL && wk_model_file_tensor_info(f, -1) == NULL,
            "%s: info past the end", what);
    wk_clear_error();
    T_CHECK(wk_model_file_find(f, "no.such.tensor") == NULL && wk_last_status() == WK_OK, "%s: an absent name: %s", what,
            wk_last_error());
    mf_err("absent tensor", WK_ERR_ARGUMENT, wk_model_file_tensor(f, "no.such.tensor", t_dev()) ? WK_OK : wk_last_status(),
           "no tensor named", "no.such.tensor", NULL);
}

static const wk_file_tensor *gi(const void *h, int64_t i) { return wk_gguf_tensor_info(h, i); }
static wk_tensor *gl(const void *h, const char *n, wk_device *d) { return wk_gguf_tensor(h, n, d); }
static const wk_file_tensor *si(const void *h, int64_t i) { return wk_safetensors_tensor_info(h, i); }
static wk_tensor *sl(const void *h, const char *n, wk_device *d) { return wk_safetensors_tensor(h, n, d); }

/* open must fail with status want and a message holding every word */
static void mfile_err(const char *what, const char *path, wk_status want, ...)
{
    wk_clear_error();
    wk_model_file *f = wk_model_file_open(path);
    const char *msg = wk_last_error();
    if (f) t_fail("%s: %s opened", what, path);
    else if (wk_last_status() != want)
        t_fail("%s: status %s, expected %s (\"%s\")", what, wk_status_name(wk_last_status()), wk_status_name(want), msg);
    va_list ap;
    va_start(ap, want);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        T_CHECK(strstr(msg, w) != NULL, "%s: message \"%s\" does not mention \"%s\"", what, msg, w);
    va_end(ap);
    wk_model_file_close(f);
    wk_clear_error();
}

static void model_file_cases(void)
{
    if (t_case("model_files/model_file/gguf")) {
        /* the fixture, and a copy named as no GGUF file is: the magic decides */
        const char *copy = tmp_path("weights.bin");
        copy_file(mf_path("small.gguf"), copy);
        const char *paths[] = { mf_path("small.gguf"), copy };
        for (int k = 0; k < 2; k++) {
            wk_model_file *f = wk_model_file_open(paths[k]);
            wk_gguf *g = wk_gguf_open(paths[k]);
            if (!f || !g) {
                t_fail("%s: %s", paths[k], wk_last_error());
            } else {
                T_CHECK(strcmp(wk_model_file_path(f), paths[k]) == 0, "path %s", wk_model_file_path(f));
                T_CHECK(wk_model_file_gguf(f) && !wk_model_file_safetensors(f) && !wk_model_file_config(f) &&
                            !wk_model_file_tokenizer_config(f), "a GGUF handle: the gguf only");
                T_CHECK(wk_gguf_tensor_info(wk_model_file_gguf(f), 1) == wk_model_file_tensor_info(f, 1),
                        "the gguf's own table");
                check_same_tensors(paths[k], f, wk_gguf_tensor_count(g), gi, g, gl);
            }
            wk_gguf_close(g);
            wk_model_file_close(f);
        }
    }
    if (t_case("model_files/model_file/safetensors")) {
        /* a folder: no config.json, then one, then a tokenizer_config.json */
        const char *dir = tmp_path("st-model");
        mkdir(dir, 0755);
        char file[600], cfg[600], tok[600], idx[600];
        snprintf(file, sizeof file, "%s/model.safetensors", dir);
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        snprintf(tok, sizeof tok, "%s/tokenizer_config.json", dir);
        copy_file(mf_path("folder/model.safetensors"), file);
        mfile_err("no config.json", dir, WK_ERR_IO, dir, "config.json", "does not exist", NULL);
        mfile_err("no config.json (the file)", file, WK_ERR_IO, file, "config.json", "does not exist", NULL);
        write_text(cfg, "{\"hidden_size\": 8,}");
        mfile_err("config.json invalid", dir, WK_ERR_IO, dir, "config.json", "not valid", "line 1", NULL);
        write_text(cfg, "[1, 2]");
        mfile_err("config.json an array", dir, WK_ERR_IO, dir, "config.json", "an array", "expected an object", NULL);
        write_text(cfg, "{\"hidden_size\": 8, \"initializer_range\": NaN, \"rope_scaling\": {\"factor\": 2.5}}");
        const char *ways[] = { dir, file };
        for (int k = 0; k < 2; k++) {
            wk_model_file *f = wk_model_file_open(ways[k]);
            wk_safetensors *s = wk_safetensors_open(ways[k]);
            if (!f || !s) {
                t_fail("%s: %s", ways[k], wk_last_error());
            } else {
                T_CHECK(strcmp(wk_model_file_path(f), dir) == 0, "%s: path %s, expected the folder %s", ways[k],
                        wk_model_file_path(f), dir);
                T_CHECK(!wk_model_file_gguf(f) && wk_model_file_safetensors(f) && !wk_model_file_tokenizer_config(f),
                        "%s: handles", ways[k]);
                int64_t h = 0;
                double fac = 0;
                T_CHECK(wk_config_int(wk_model_file_config(f), "hidden_size", true, &h) == WK_OK && h == 8 &&
                            wk_config_float(wk_model_file_config(f), "rope_scaling.factor", true, &fac) == WK_OK &&
                            fac == 2.5, "%s: config.json values", ways[k]);
                check_same_tensors(ways[k], f, wk_safetensors_tensor_count(s), si, s, sl);
            }
            wk_safetensors_close(s);
            wk_model_file_close(f);
        }
        /* tokenizer_config.json: read when present; one that does not parse is left out, no error */
        write_text(tok, "{\"chat_template\": \"{{ x }}\", \"model_max_length\": Infinity}");
        wk_model_file *f = wk_model_file_open(dir);
        const char *tmpl = NULL;
        T_CHECK(f && wk_config_str(wk_model_file_tokenizer_config(f), "chat_template", true, &tmpl) == WK_OK && tmpl &&
                    strcmp(tmpl, "{{ x }}") == 0, "tokenizer_config.json: %s", wk_last_error());
        wk_model_file_close(f);
        write_text(tok, "{\"chat_template\": ");
        wk_clear_error();
        f = wk_model_file_open(dir);
        T_CHECK(f && !wk_model_file_tokenizer_config(f) && wk_model_file_config(f) && wk_last_status() == WK_OK,
                "a broken tokenizer_config.json: %s", wk_last_error());
        wk_model_file_close(f);
        /* a shard index with its config.json (the fixture's folder) */
        snprintf(idx, sizeof idx, "%s", mf_path("sharded/model.safetensors.index.json"));
        const char *sh[] = { mf_path("sharded"), idx };
        for (int k = 0; k < 2; k++) {
            f = wk_model_file_open(sh[k]);
            wk_safetensors *s = wk_safetensors_open(sh[k]);
            if (!f || !s) {
                t_fail("%s: %s", sh[k], wk_last_error());
            } else {
                T_CHECK(strcmp(wk_model_file_path(f), mf_path("sharded")) == 0, "%s: path %s", sh[k], wk_model_file_path(f));
                T_CHECK(wk_safetensors_file_count(wk_model_file_safetensors(f)) == 2, "%s: two shards", sh[k]);
                const char *arch = NULL;
                T_CHECK(wk_json_string(wk_json_item(wk_json_get(wk_model_file_config(f), "architectures"), 0), NULL) &&
                            wk_config_str(wk_model_file_config(f), "torch_dtype", true, &arch) == WK_OK &&
                            strcmp(arch, "bfloat16") == 0, "%s: config.json", sh[k]);
                check_same_tensors(sh[k], f, wk_safetensors_tensor_count(s), si, s, sl);
            }
            wk_safetensors_close(s);
            wk_model_file_close(f);
        }
    }
    if (t_case("model_files/model_file/errors")) {
        const char *txt = tmp_path("notes.gguf");
        write_text(txt, "hello, world\n");
        mfile_err("a text file named .gguf", txt, WK_ERR_IO, txt, "not a GGUF file", "68 65 6c 6c", "\"hello, w\"", NULL);
        wk_clear_error();
        wk_model_file_close(wk_model_file_open(txt));
        T_CHECK(!strstr(wk_last_error(), "safetensors") && !strstr(wk_last_error(), "header"),
                "a .gguf text file gets a safetensors message: %s", wk_last_error());
        const char *other = tmp_path("notes.bin");
        write_text(other, "hello, world\n");
        mfile_err("a text file of another name", other, WK_ERR_IO, other, "not a GGUF file", "68 65 6c 6c",
                  "nor a safetensors file", "header length", NULL);
        const char *empty = tmp_path("EMPTY.GGUF");
        write_text(empty, "");
        mfile_err("an empty .gguf", empty, WK_ERR_IO, "not a GGUF file", "empty", NULL);
        const char *missing = tmp_path("no-such-model");
        mfile_err("a missing path", missing, WK_ERR_IO, missing, "no such file or folder", NULL);
        char deeper[600];
        snprintf(deeper, sizeof deeper, "%s/model.safetensors", missing);
        mfile_err("a missing folder", deeper, WK_ERR_IO, deeper, "no such file or folder", NULL);
        const char *dir = tmp_path("no-model");
        mkdir(dir, 0755);
        mfile_err("a folder without model files", dir, WK_ERR_IO, dir, "model.safetensors", NULL);
        char g[600];
        snprintf(g, sizeof g, "%s/model-q4.gguf", dir);
        copy_file(mf_path("small.gguf"), g);
        mfile_err("a folder with a GGUF file", dir, WK_ERR_IO, dir, "model.safetensors", "model-q4.gguf", NULL);
        const char *corrupt = tmp_path("corrupt.gguf");
        write_text(corrupt, "GGUF\x07");
        mfile_err("a truncated GGUF", corrupt, WK_ERR_IO, corrupt, "truncated", NULL);
    }
    if (t_case("model_files/model_file/null")) {
        mf_err("NULL path", WK_ERR_ARGUMENT, wk_model_file_open(NULL) ? WK_OK : wk_last_status(), "NULL path", NULL);
        wk_model_file_close(NULL);
        T_CHECK(wk_model_file_path(NULL) == NULL && wk_model_file_tensor_count(NULL) == 0 &&
                    wk_model_file_tensor_info(NULL, 0) == NULL && wk_model_file_find(NULL, "a.f32") == NULL &&
                    wk_model_file_gguf(NULL) == NULL && wk_model_file_safetensors(NULL) == NULL &&
                    wk_model_file_config(NULL) == NULL && wk_model_file_tokenizer_config(NULL) == NULL,
                "NULL handle");
        mf_err("NULL handle", WK_ERR_ARGUMENT, wk_model_file_tensor(NULL, "a.f32", t_dev()) ? WK_OK : wk_last_status(),
               "NULL file", NULL);
        wk_model_file *f = wk_model_file_open(mf_path("small.gguf"));
        if (!f) {
            t_fail("open: %s", wk_last_error());
            return;
        }
        T_CHECK(wk_model_file_find(f, NULL) == NULL, "find(NULL)");
        mf_err("NULL name", WK_ERR_ARGUMENT, wk_model_file_tensor(f, NULL, t_dev()) ? WK_OK : wk_last_status(),
               "NULL tensor name", NULL);
        mf_err("NULL device", WK_ERR_ARGUMENT, wk_model_file_tensor(f, "a.f32", NULL) ? WK_OK : wk_last_status(),
               "a.f32", "NULL device", NULL);
        wk_model_file_close(f);
    }
}

static void misc_cases(void)
{
    if (!t_case("model_files/misc")) return;
    T_CHECK(wk_progress_begin("x", 10, WK_PROGRESS_OFF) == NULL, "progress off");
    wk_progress_add(NULL, 1);
    wk_progress_end(NULL, true);
    T_CHECK(strcmp(wk_gguf_type_name(WK_GGUF_STRING), "string") == 0 && strcmp(wk_gguf_type_name(WK_GGUF_F64), "f64") == 0 &&
                strcmp(wk_gguf_type_name((wk_gguf_type)77), "?") == 0, "gguf type names");
    wk_gguf_close(NULL);
    wk_safetensors_close(NULL);
    wk_json_free(NULL);
    T_CHECK(wk_gguf_tensor_count(NULL) == 0 && wk_gguf_find(NULL, "x") == NULL && wk_gguf_value_type(NULL) == WK_GGUF_TYPE_COUNT,
            "NULL handles");
    mf_err("NULL path", WK_ERR_ARGUMENT, wk_safetensors_open(NULL) ? WK_OK : wk_last_status(), "NULL path", NULL);
    wk_file_tensor ft = { .name = "n", .file = "f", .dtype = WK_F32, .type_name = "F32", .ggml_type = 0,
                          .shape = WK_SHAPE(2), .nbytes = 8, .data = "abcdefgh" };
    mf_err("NULL device", WK_ERR_ARGUMENT, wk_file_tensor_load(&ft, NULL) ? WK_OK : wk_last_status(), "'n'",
           "NULL device", NULL);
}

T_SUITE(model_files)
{
    json_valid_cases();
    json_invalid_cases();
    json_fuzz_cases();
    config_cases();
    gguf_read_cases();
    gguf_corrupt_cases();
    gguf_fuzz_cases();
    writer_cases();
    st_cases();
    st_corrupt_cases();
    st_fuzz_cases();
    model_file_cases();
    misc_cases();
    tmp_dir_remove();
}
