/* fuzz_json.c — libFuzzer harness for the JSON parser (src/formats/json.c):
 * the input is the text, parsed strictly and with WK_JSON_ALLOW_NAN, and
 * every value of the tree is read back through the public getters (kinds,
 * counts, keys, strings, numbers, integers, booleans, look-ups by key and
 * by dotted path, the config.json getters on the root). Checked promises:
 * a document either parses or sets an error; strings are NUL-terminated
 * at their length; an object's keys are found by wk_json_get (those
 * without a NUL inside, which is how callers spell them); an integer read
 * back as a number is the same value; a text that parses strictly also
 * parses with the flag, to the same tree shape.
 * Corpus: tests/fuzz/corpus/json/.
 */
#include <math.h>
#include "fuzz_util.h"
#include "wick_formats.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

/* walks v, returns how many values it holds (itself included) */
static size_t walk(const wk_json *v, int depth)
{
    FZ_CHECK(depth <= WK_JSON_MAX_DEPTH + 1, "a tree %d deep", depth);
    size_t total = 1, len = 0;
    double d;
    int64_t i;
    bool b;
    const wk_json_type k = wk_json_kind(v);
    switch (k) {
    case WK_JSON_NULL: break;
    case WK_JSON_BOOL: FZ_CHECK(wk_json_bool(v, &b), "a bool value does not read as one"); break;
    case WK_JSON_NUMBER:
        FZ_CHECK(wk_json_number(v, &d), "a number does not read as one");
        if (wk_json_int(v, &i)) FZ_CHECK(isnan(d) || d == (double)i || fabs(d - (double)i) <= fabs(d) * 1e-15,
                                         "integer %lld reads as the number %.17g", (long long)i, d);
        break;
    case WK_JSON_STRING: {
        const char *s = wk_json_string(v, &len);
        FZ_CHECK(s && s[len] == 0, "a string is not NUL-terminated at its length");
        break;
    }
    case WK_JSON_ARRAY:
    case WK_JSON_OBJECT: {
        const size_t n = wk_json_count(v);
        for (size_t j = 0; j < n; j++) {
            const wk_json *c = wk_json_item(v, j);
            FZ_CHECK(c != NULL, "item %zu of %zu is NULL", j, n);
            if (k == WK_JSON_OBJECT) {
                size_t kl = 0;
                const char *key = wk_json_key(v, j, &kl);
                FZ_CHECK(key && key[kl] == 0, "key %zu", j);
                if (strlen(key) == kl) FZ_CHECK(wk_json_get(v, key) == c, "key '%s' is not found", key);
            } else {
                FZ_CHECK(wk_json_key(v, j, NULL) == NULL, "an array element has a key");
            }
            total += walk(c, depth + 1);
        }
        FZ_CHECK(wk_json_item(v, n) == NULL, "an item past the end");
        break;
    }
    default: FZ_CHECK(0, "kind %d", (int)k);
    }
    if (k != WK_JSON_STRING) FZ_CHECK(wk_json_string(v, NULL) == NULL, "a %d reads as a string", (int)k);
    return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t counted[2] = { 0, 0 };
    for (unsigned flags = 0; flags < 2; flags++) {
        wk_clear_error();
        wk_json *root = wk_json_parse((const char *)data, size, "fuzz.json", flags ? WK_JSON_ALLOW_NAN : 0);
        if (!root) {
            fz_check_error("wk_json_parse");
            FZ_CHECK(!(flags && counted[0]), "a text parsed strictly fails with WK_JSON_ALLOW_NAN: %s", wk_last_error());
            continue;
        }
        FZ_CHECK(strcmp(wk_json_doc_name(root), "fuzz.json") == 0, "the document's name");
        counted[flags] = walk(root, 0);
        if (wk_json_kind(root) == WK_JSON_OBJECT) {
            static const char *const paths[] = { "a", "a.b", "rope_scaling.factor", "", ".", "a..b", "x.y.z.w" };
            for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
                int64_t iv = 0;
                double dv = 0;
                bool bv = false;
                const char *sv = NULL;
                (void)wk_json_path(root, paths[p]);
                (void)wk_config_int(root, paths[p], false, &iv);
                (void)wk_config_float(root, paths[p], false, &dv);
                (void)wk_config_bool(root, paths[p], false, &bv);
                (void)wk_config_str(root, paths[p], false, &sv);
            }
            /* the first key as a path */
            size_t kl;
            const char *k0 = wk_json_count(root) ? wk_json_key(root, 0, &kl) : NULL;
            if (k0 && strlen(k0) == kl && !strchr(k0, '.'))
                FZ_CHECK(wk_json_path(root, k0) == wk_json_item(root, 0), "the path '%s' is not its key", k0);
        }
        wk_json_free(root);
    }
    if (counted[0]) FZ_CHECK(counted[0] == counted[1], "strict and NaN-allowing parses differ: %zu and %zu values",
                             counted[0], counted[1]);
    return 0;
}
