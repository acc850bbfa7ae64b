/* test_grammar.c — constrained output (wick_llm.h's wk_grammar,
 * wk_grammar_state, wk_grammar_vocab; wk_request.grammar in the engine):
 *   grammar/validator       the independent validator below (a JSON-schema
 *                           checker over wk_json trees that shares no code
 *                           with the grammar) accepts and rejects documents
 *                           it should: the other cases trust it
 *   grammar/accept          hand-written texts against schemas: whole, a
 *                           prefix only, or refused at a byte; every prefix
 *                           of a whole text is a prefix; whole texts pass the
 *                           validator and refused JSON texts fail it
 *   grammar/errors          schemas refused, with the keyword and the place
 *   grammar/mask            masks over a small vocabulary equal, token by
 *                           token, what the byte recogniser takes after the
 *                           text so far; the same comparison catches a mask
 *                           with one invalid token let in (it must fail)
 *   grammar/random          random walks through the masks: every finished
 *                           text parses and passes the validator
 *   grammar/real/<model>    SmolLM2's and Gemma 3's vocabularies: tokens
 *                           known to be invalid are masked, masks checked
 *                           token by token at a few places, mask times printed
 *   engine/grammar          a random-weight model with a vocabulary in the
 *                           engine, sampled at temperature 1 over seeds: every
 *                           reply parses and validates; greedy replies are the
 *                           argmax of the masked logits; max_tokens cuts with
 *                           "length"; logprobs; a model with no vocabulary
 *   engine/grammar/real/<model>  SmolLM2 (and Gemma 3) asked for JSON, at
 *                           temperature 1 over seeds: every reply validates
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test.h"
#include "t_llm_model.h"
#include "wick_engine.h"
#include "wick_formats.h"

/* ---- an independent validator ----------------------------------------------------------- */

static bool v_valid(const wk_json *root, const wk_json *s, const wk_json *x, int depth);

static bool json_equal(const wk_json *a, const wk_json *b)
{
    if (wk_json_kind(a) != wk_json_kind(b)) return false;
    size_t an, bn;
    double da, db;
    bool ba, bb;
    switch (wk_json_kind(a)) {
    case WK_JSON_NULL: return true;
    case WK_JSON_BOOL: return wk_json_bool(a, &ba) && wk_json_bool(b, &bb) && ba == bb;
    case WK_JSON_NUMBER: return wk_json_number(a, &da) && wk_json_number(b, &db) && da == db;
    case WK_JSON_STRING: {
        const char *sa = wk_json_string(a, &an), *sb = wk_json_string(b, &bn);
        return an == bn && !memcmp(sa, sb, an);
    }
    case WK_JSON_ARRAY:
        if (wk_json_count(a) != wk_json_count(b)) return false;
        for (size_t i = 0; i < wk_json_count(a); i++)
            if (!json_equal(wk_json_item(a, i), wk_json_item(b, i))) return false;
        return true;
    case WK_JSON_OBJECT:
        if (wk_json_count(a) != wk_json_count(b)) return false;
        for (size_t i = 0; i < wk_json_count(a); i++) {
            const char *k = wk_json_key(a, i, &an);
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)an, k);
            const wk_json *o = wk_json_get(b, key);
            if (!o || !json_equal(wk_json_item(a, i), o)) return false;
        }
        return true;
    }
    return false;
}

static const wk_json *v_pointer(const wk_json *root, const char *ref)
{
    if (ref[0] != '#') return NULL;
    const wk_json *v = root;
    char seg[256];
    for (const char *p = ref + 1; *p == '/' && v;) {
        p++;
        size_t k = 0;
        while (*p && *p != '/' && k + 1 < sizeof seg) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                seg[k++] = p[1] == '0' ? '~' : '/';
                p += 2;
            } else seg[k++] = *p++;
        }
        seg[k] = 0;
        v = wk_json_kind(v) == WK_JSON_ARRAY ? wk_json_item(v, (size_t)atoi(seg)) : wk_json_get(v, seg);
    }
    return v;
}

static bool v_type(const char *t, const wk_json *x)
{
    const wk_json_type k = wk_json_kind(x);
    double d;
    if (!strcmp(t, "null")) return k == WK_JSON_NULL;
    if (!strcmp(t, "boolean")) return k == WK_JSON_BOOL;
    if (!strcmp(t, "object")) return k == WK_JSON_OBJECT;
    if (!strcmp(t, "array")) return k == WK_JSON_ARRAY;
    if (!strcmp(t, "string")) return k == WK_JSON_STRING;
    if (!strcmp(t, "number")) return k == WK_JSON_NUMBER;
    if (!strcmp(t, "integer")) return k == WK_JSON_NUMBER && wk_json_number(x, &d) && d == floor(d);
    return false;
}

static int64_t v_chars(const wk_json *x)
{
    size_t n;
    const char *s = wk_json_string(x, &n);
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

static bool v_item_schema(const wk_json *s, size_t i, const wk_json **out)
{
    const wk_json *pre = wk_json_get(s, "prefixItems"), *items = wk_json_get(s, "items");
    if (!pre && wk_json_kind(items) == WK_JSON_ARRAY) {
        pre = items;
        items = wk_json_get(s, "additionalItems");
    }
    if (pre && i < wk_json_count(pre)) *out = wk_json_item(pre, i);
    else *out = items;
    return true;
}

static bool v_valid(const wk_json *root, const wk_json *s, const wk_json *x, int depth)
{
    bool b;
    if (!s) return true;
    if (wk_json_bool(s, &b)) return b;
    if (depth > 200) return false;
    const wk_json *v;
    double d, lim;
    int64_t n;
    if ((v = wk_json_get(s, "$ref")) && !v_valid(root, v_pointer(root, wk_json_string(v, NULL)), x, depth + 1))
        return false;
    if ((v = wk_json_get(s, "allOf")))
        for (size_t i = 0; i < wk_json_count(v); i++)
            if (!v_valid(root, wk_json_item(v, i), x, depth + 1)) return false;
    if ((v = wk_json_get(s, "anyOf"))) {
        bool any = false;
        for (size_t i = 0; i < wk_json_count(v) && !any; i++) any = v_valid(root, wk_json_item(v, i), x, depth + 1);
        if (!any) return false;
    }
    if ((v = wk_json_get(s, "oneOf"))) {
        int k = 0;
        for (size_t i = 0; i < wk_json_count(v); i++) k += v_valid(root, wk_json_item(v, i), x, depth + 1);
        if (k != 1) return false;
    }
    if ((v = wk_json_get(s, "const")) && !json_equal(v, x)) return false;
    if ((v = wk_json_get(s, "enum"))) {
        bool any = false;
        for (size_t i = 0; i < wk_json_count(v) && !any; i++) any = json_equal(wk_json_item(v, i), x);
        if (!any) return false;
    }
    if ((v = wk_json_get(s, "type"))) {
        bool ok = false;
        if (wk_json_kind(v) == WK_JSON_STRING) ok = v_type(wk_json_string(v, NULL), x);
        for (size_t i = 0; wk_json_kind(v) == WK_JSON_ARRAY && i < wk_json_count(v) && !ok; i++)
            ok = v_type(wk_json_string(wk_json_item(v, i), NULL), x);
        if (!ok && wk_json_bool(wk_json_get(s, "nullable"), &b) && b) ok = wk_json_kind(x) == WK_JSON_NULL;
        if (!ok) return false;
    }
    switch (wk_json_kind(x)) {
    case WK_JSON_STRING:
        if (wk_json_int(wk_json_get(s, "minLength"), &n) && v_chars(x) < n) return false;
        if (wk_json_int(wk_json_get(s, "maxLength"), &n) && v_chars(x) > n) return false;
        break;
    case WK_JSON_NUMBER: {
        wk_json_number(x, &d);
        const wk_json *emin = wk_json_get(s, "exclusiveMinimum"), *emax = wk_json_get(s, "exclusiveMaximum");
        bool fmin = wk_json_bool(emin, &b) && b, fmax = wk_json_bool(emax, &b) && b;
        if (wk_json_number(wk_json_get(s, "minimum"), &lim) && (fmin ? d <= lim : d < lim)) return false;
        if (wk_json_number(wk_json_get(s, "maximum"), &lim) && (fmax ? d >= lim : d > lim)) return false;
        if (wk_json_number(emin, &lim) && d <= lim) return false;
        if (wk_json_number(emax, &lim) && d >= lim) return false;
        break;
    }
    case WK_JSON_OBJECT: {
        const wk_json *props = wk_json_get(s, "properties"), *add = wk_json_get(s, "additionalProperties");
        if ((v = wk_json_get(s, "required")))
            for (size_t i = 0; i < wk_json_count(v); i++)
                if (!wk_json_get(x, wk_json_string(wk_json_item(v, i), NULL))) return false;
        for (size_t i = 0; i < wk_json_count(x); i++) {
            size_t kn;
            const char *k = wk_json_key(x, i, &kn);
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)kn, k);
            const wk_json *ps = props ? wk_json_get(props, key) : NULL;
            if (!v_valid(root, ps ? ps : add, wk_json_item(x, i), depth + 1)) return false;
        }
        break;
    }
    case WK_JSON_ARRAY:
        if (wk_json_int(wk_json_get(s, "minItems"), &n) && (int64_t)wk_json_count(x) < n) return false;
        if (wk_json_int(wk_json_get(s, "maxItems"), &n) && (int64_t)wk_json_count(x) > n) return false;
        for (size_t i = 0; i < wk_json_count(x); i++) {
            const wk_json *is;
            v_item_schema(s, i, &is);
            if (!v_valid(root, is, wk_json_item(x, i), depth + 1)) return false;
        }
        break;
    default: break;
    }
    return true;
}

/* 1: text is valid JSON under the schema; 0: valid JSON, not under it; -1: not JSON */
static int validate(const char *schema, const char *text, size_t n)
{
    wk_json *s = wk_json_parse(schema, strlen(schema), "schema", 0);
    wk_json *x = wk_json_parse(text, n, "text", 0);
    int r = !x ? -1 : v_valid(s, s, x, 0) ? 1 : 0;
    wk_json_free(s);
    wk_json_free(x);
    wk_clear_error();
    return r;
}

/* ---- schemas ------------------------------------------------------------------------------- */

static const char *const S_PERSON =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":12},"
    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},\"email\":{\"type\":[\"string\",\"null\"],"
    "\"maxLength\":20},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\",7]},"
    "\"maxItems\":3}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";
static const char *const S_UNION =
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},\"x\":{\"type\":\"number\","
    "\"minimum\":-2.5,\"exclusiveMaximum\":10}},\"required\":[\"kind\",\"x\"],\"additionalProperties\":false},"
    "{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"b\"},\"y\":{\"type\":\"boolean\"}},"
    "\"required\":[\"kind\",\"y\"],\"additionalProperties\":false},{\"type\":\"null\"}]}";
static const char *const S_TREE =
    "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\",\"minimum\":-9,"
    "\"maximum\":99},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},"
    "\"required\":[\"v\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
static const char *const S_OPEN =   /* optional properties, additional ones of a schema */
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"maxLength\":4},\"b\":{\"type\":\"boolean\"}},"
    "\"additionalProperties\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}}";
static const char *const S_TUPLE =
    "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\",\"maxLength\":3},{\"const\":[1,{\"k\":null}]}],"
    "\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},\"minItems\":2,\"maxItems\":4}";
static const char *const S_OBJECT = "{\"type\":\"object\"}";

/* ---- grammar/validator ------------------------------------------------------------------------ */

static void check_validator(void)
{
    static const struct { const char *const *schema; const char *text; int want; } cases[] = {
        { &S_PERSON, "{\"name\":\"Al\",\"age\":3}", 1 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":3,\"tags\":[\"red\",7]}", 1 },
        { &S_PERSON, "{\"name\":\"Al\"}", 0 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":3.5}", 0 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":121}", 0 },
        { &S_PERSON, "{\"name\":\"\",\"age\":1}", 0 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":1,\"x\":1}", 0 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":1,\"tags\":[\"pink\"]}", 0 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":1,\"tags\":[7,7,7,7]}", 0 },
        { &S_PERSON, "{\"name\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\",\"age\":1}", 1 },
        { &S_PERSON, "{\"name\":\"Al\",\"age\":1,", -1 },
        { &S_UNION, "{\"kind\":\"a\",\"x\":-2.5}", 1 },
        { &S_UNION, "{\"kind\":\"a\",\"x\":10}", 0 },
        { &S_UNION, "{\"kind\":\"b\",\"x\":1}", 0 },
        { &S_UNION, "null", 1 },
        { &S_TREE, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]}]}", 1 },
        { &S_TREE, "{\"v\":1,\"kids\":[{\"v\":200}]}", 0 },
        { &S_OPEN, "{\"b\":true,\"zz\":3}", 1 },
        { &S_OPEN, "{\"zz\":10}", 0 },
        { &S_TUPLE, "[\"ab\",[1,{\"k\":null}],0.5]", 1 },
        { &S_TUPLE, "[\"ab\",[1,{\"k\":0}]]", 0 },
        { &S_TUPLE, "[\"ab\"]", 0 },
        { &S_OBJECT, "[]", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int got = validate(*cases[i].schema, cases[i].text, strlen(cases[i].text));
        T_CHECK(got == cases[i].want, "validator: %s gives %d, not %d", cases[i].text, got, cases[i].want);
    }
}

/* ---- grammar/accept --------------------------------------------------------------------------- */

enum { REFUSED, PREFIX, WHOLE, SUBSET };   /* SUBSET: refused by the grammar, valid under the schema */

static int run_text(wk_grammar *g, const char *text, size_t n, size_t *bad_at)
{
    wk_grammar_state *s = wk_grammar_state_new(g);
    int r = PREFIX;
    *bad_at = n;
    for (size_t i = 0; i < n && r == PREFIX; i++)
        if (wk_grammar_state_accept(s, text + i, 1) != WK_OK) {
            r = REFUSED;
            *bad_at = i;
        }
    if (r == PREFIX && wk_grammar_state_complete(s)) r = WHOLE;
    wk_grammar_state_free(s);
    return r;
}

static void check_accept(void)
{
    static const struct { const char *const *schema; const char *text; int want; } cases[] = {
        { &S_OBJECT, "{}", WHOLE },
        { &S_OBJECT, "{\"a\": [1, -2.5e+3, \"x\\u00e9\\ud83d\\ude00\\n\", true, null, {\"b\": -0}],\n \"c\":{}}", WHOLE },
        { &S_OBJECT, "{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", WHOLE },
        { &S_OBJECT, "{\"a\":\"", PREFIX },
        { &S_OBJECT, "{\"a\":12", PREFIX },
        { &S_OBJECT, "{\"a\":1,\"a\":2}", REFUSED },       /* duplicate keys (the validator's parser refuses them too) */
        { &S_OBJECT, "[1]", REFUSED },
        { &S_OBJECT, "{\"a\":01}", REFUSED },
        { &S_OBJECT, "{\"a\":1,}", REFUSED },
        { &S_OBJECT, "{\"a\":.5}", REFUSED },
        { &S_OBJECT, "{\"a\":\"\\ud83d\"}", REFUSED },      /* a lone surrogate */
        { &S_OBJECT, "{\"a\":\"\\x\"}", REFUSED },
        { &S_OBJECT, "{\"a\":\"\xc3\"}", REFUSED },         /* a cut UTF-8 character */
        { &S_OBJECT, "{\"a\":\"\xed\xa0\x80\"}", REFUSED }, /* a surrogate in UTF-8 */
        { &S_OBJECT, "{\"a\":\"\xc0\xaf\"}", REFUSED },     /* overlong */
        { &S_OBJECT, "{\"a\":\"\t\"}", REFUSED },           /* a raw control byte */
        { &S_OBJECT, "{\"a\":tru}", REFUSED },
        { &S_OBJECT, " {}", SUBSET },                        /* no whitespace before or after the value */
        { &S_OBJECT, "{}\n", SUBSET },
        { &S_OBJECT, "{\"a\":                         1}", SUBSET },   /* 25 spaces: over 24 */
        { &S_OBJECT, "{\"a\":\n                       1}", WHOLE },    /* a newline and 23 spaces */
        { &S_OBJECT, "{\"a\":\n\n1}", SUBSET },                       /* two newlines in a run */
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":42}", WHOLE },
        { &S_PERSON, "{ \"name\" : \"Bob\" ,\n  \"age\": 120, \"email\": null, \"tags\": [ \"red\", 7 ] }", WHOLE },
        { &S_PERSON, "{\"name\":\"\\u00e9\\\"\\\\\xe2\x82\xac\",\"age\":0,\"email\":\"a@b\"}", WHOLE },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":4", PREFIX },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":121}", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":-1", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1.5}", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1,\"x\":1}", REFUSED },
        { &S_PERSON, "{\"name\":\"\",\"age\":1}", REFUSED },
        { &S_PERSON, "{\"name\":\"abcdefghijklm\",\"age\":1}", REFUSED },   /* 13 characters */
        { &S_PERSON, "{\"name\":\"Bob\"}", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1,\"tags\":[\"red\",\"green\",\"blue\",7]}", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1,\"tags\":[\"pink\"]}", REFUSED },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1,\"tags\":[7]}", WHOLE },
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1,\"tags\":[70]}", REFUSED },
        { &S_PERSON, "{\"age\":42,\"name\":\"Bob\"}", SUBSET },   /* properties come in the schema's order */
        { &S_PERSON, "{\"name\":\"Bob\",\"age\":1.0}", SUBSET },  /* integers without a fraction */
        { &S_UNION, "{\"kind\":\"a\",\"x\":-2.5}", WHOLE },
        { &S_UNION, "{\"kind\":\"a\",\"x\":9.999}", WHOLE },
        { &S_UNION, "{\"kind\":\"a\",\"x\":10}", REFUSED },
        { &S_UNION, "{\"kind\":\"a\",\"x\":-2.6}", REFUSED },
        { &S_UNION, "{\"kind\":\"a\",\"x\":-3", REFUSED },
        { &S_UNION, "{\"kind\":\"a\",\"x\":1e0}", SUBSET },   /* bounded numbers have no exponent */
        { &S_UNION, "{\"kind\":\"b\",\"y\":false}", WHOLE },
        { &S_UNION, "{\"kind\":\"b\",\"x\":1}", REFUSED },
        { &S_UNION, "{\"kind\":\"c\"", REFUSED },
        { &S_UNION, "null", WHOLE },
        { &S_UNION, "nul", PREFIX },
        { &S_TREE, "{\"v\":1,\"kids\":[{\"v\":-9},{\"v\":99,\"kids\":[]}]}", WHOLE },
        { &S_TREE, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3},{\"v\":4}]}", REFUSED },
        { &S_TREE, "{\"v\":1,\"kids\":[{\"v\":100}]}", REFUSED },
        { &S_TREE, "{\"kids\":[]}", REFUSED },
        { &S_OPEN, "{}", WHOLE },
        { &S_OPEN, "{\"b\":true,\"aa\":3,\"ab\":0}", WHOLE },
        { &S_OPEN, "{\"z\":3,\"a\":\"xy\"}", WHOLE },           /* additional ones anywhere */
        { &S_PERSON, "{\"name\":\"a\",\"tags\":[],\"age\":3}", SUBSET },   /* declared ones in order */
        { &S_OPEN, "{\"a\":\"xy\",\"b\":true,\"c\":9}", WHOLE },
        { &S_OPEN, "{\"a\":\"xy\",\"c\":10}", REFUSED },
        { &S_OPEN, "{\"c\":1,\"c\":2}", REFUSED },
        { &S_OPEN, "{\"a\":\"x\",\"b\":true,\"a\":3}", REFUSED },   /* an additional key equal to a declared one */
        { &S_OPEN, "{\"b\":true,\"\\u0061\":3}", REFUSED },          /* the same, escaped */
        { &S_TUPLE, "[\"ab\",[1,{\"k\":null}]]", WHOLE },
        { &S_TUPLE, "[\"ab\",[1,{\"k\":null}],0.25,1]", WHOLE },
        { &S_TUPLE, "[\"ab\",[1,{\"k\":null}],0.25,1,0]", REFUSED },
        { &S_TUPLE, "[\"ab\",[1,{\"k\":null}],1.5]", REFUSED },
        { &S_TUPLE, "[\"ab\"]", REFUSED },
        { &S_TUPLE, "[\"ab\",[1, {\"k\":null}]]", SUBSET },   /* const values as written compactly */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *schema = *cases[i].schema, *text = cases[i].text;
        wk_grammar *g = wk_grammar_from_json_schema(schema, strlen(schema));
        if (!g) {
            t_fail("schema %zu: %s", i, wk_last_error());
            continue;
        }
        size_t bad_at;
        const int got = run_text(g, text, strlen(text), &bad_at);
        const int want = cases[i].want == SUBSET ? REFUSED : cases[i].want;
        T_CHECK(got == want, "%s: %s (want %s; refused at byte %zu)", text,
                got == WHOLE ? "whole" : got == PREFIX ? "a prefix" : "refused",
                want == WHOLE ? "whole" : want == PREFIX ? "a prefix" : "refused", bad_at);
        const int valid = validate(schema, text, strlen(text));
        if (cases[i].want == WHOLE) T_CHECK(valid == 1, "%s: whole, but the validator says %d", text, valid);
        if (cases[i].want == REFUSED) T_CHECK(valid != 1, "%s: refused, but the validator passes it", text);
        if (cases[i].want == SUBSET) T_CHECK(valid == 1, "%s: the validator should pass it", text);
        /* every prefix of a whole text is a prefix (byte by byte above; in one call here) */
        if (got == WHOLE) {
            wk_grammar_state *s = wk_grammar_state_new(g);
            T_CHECK(wk_grammar_state_accept(s, text, strlen(text)) == WK_OK && wk_grammar_state_complete(s),
                    "%s: in one call", text);
            const bool fin = wk_grammar_state_finished(s);
            T_CHECK(fin == (text[strlen(text) - 1] == '}' || text[strlen(text) - 1] == ']' || !strcmp(text, "null")),
                    "%s: finished %d", text, fin);
            T_CHECK(wk_grammar_state_accept(s, "x", 1) != WK_OK, "%s: a byte after the end", text);
            wk_grammar_state_free(s);
        }
        wk_grammar_release(g);
    }
    /* a refused byte leaves the state as it was */
    wk_grammar *g = wk_grammar_from_json_schema(S_PERSON, strlen(S_PERSON));
    wk_grammar_state *s = g ? wk_grammar_state_new(g) : NULL;
    if (s) {
        T_OK(wk_grammar_state_accept(s, "{\"name\":\"A", 10));
        T_CHECK(wk_grammar_state_accept(s, "\",\"x", 4) != WK_OK, "a bad key");
        T_OK(wk_grammar_state_accept(s, "\",\"age\":5}", 10));
        T_CHECK(wk_grammar_state_finished(s), "finished");
    }
    wk_grammar_state_free(s);
    wk_grammar_release(g);
    /* JSON mode */
    g = wk_grammar_json_object();
    size_t at;
    T_CHECK(g && run_text(g, "{\"k\":[{}]}", 10, &at) == WHOLE && run_text(g, "\"s\"", 3, &at) == REFUSED, "json_object");
    wk_grammar_release(g);
}

/* ---- grammar/errors ---------------------------------------------------------------------------- */

static void check_errors(void)
{
    static const struct { const char *schema, *msg; } cases[] = {
        { "{\"type\":\"string\",\"pattern\":\"a+\"}", "#: 'pattern' is not supported" },
        { "{\"properties\":{\"a\":{\"multipleOf\":3}}}", "#/properties/a: 'multipleOf' is not supported" },
        { "{\"items\":{\"not\":{}}}", "#/items: 'not' is not supported" },
        { "{\"$defs\":{\"x\":{\"type\":\"object\",\"minProperties\":1}},\"$ref\":\"#/$defs/x\"}",
          "#/$defs/x: 'minProperties' is not supported" },
        { "{\"type\":\"array\",\"uniqueItems\":true}", "'uniqueItems'" },
        { "{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "'allOf' is supported with one schema only" },
        { "{\"type\":\"string\",\"anyOf\":[{\"maxLength\":3}]}", "'anyOf' beside 'type'" },
        { "{\"$ref\":\"#/$defs/nope\"}", "names nothing" },
        { "{\"$ref\":\"other.json#/a\"}", "only references inside the schema" },
        { "{\"type\":\"strin\"}", "unknown type 'strin'" },
        { "{\"type\":\"string\",\"minLength\":-1}", "'minLength' must be a non-negative integer" },
        { "{\"minLength\":3,\"maxLength\":2}", "no JSON value satisfies" },
        { "{\"type\":\"integer\",\"minimum\":1.5,\"maximum\":1.9}", "no JSON value satisfies" },
        { "{\"enum\":[1,2],\"type\":\"string\"}", "no JSON value satisfies" },
        { "false", "no JSON value satisfies" },
        { "{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}},\"required\":[\"a\"]}", "no JSON value satisfies" },
        { "{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/a\"}", "cycle" },
        { "{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":false}", "'a' is not in 'properties'" },
        { "[1]", "a schema must be an object or a boolean" },
        { "{\"type\":\"object\"", "not valid JSON" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        wk_grammar *g = wk_grammar_from_json_schema(cases[i].schema, strlen(cases[i].schema));
        T_CHECK(!g && wk_last_status() == WK_ERR_ARGUMENT && strstr(wk_last_error(), cases[i].msg),
                "%s: %s (want \"%s\")", cases[i].schema, g ? "compiled" : wk_last_error(), cases[i].msg);
        wk_grammar_release(g);
    }
    /* accepted: annotations, and OpenAI's wrapper keys that pydantic writes */
    static const char *const fine[] = {
        "{\"title\":\"T\",\"description\":\"d\",\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\","
        "\"format\":\"date-time\",\"default\":\"x\"}},\"$schema\":\"https://json-schema.org/draft/2020-12/schema\"}",
        "{\"definitions\":{\"a\":{\"type\":\"integer\",\"exclusiveMinimum\":0}},\"type\":\"object\",\"properties\":{\"a\":"
        "{\"allOf\":[{\"$ref\":\"#/definitions/a\"}],\"description\":\"an a\"}},\"required\":[\"a\"]}",
        "{\"type\":\"string\",\"nullable\":true}",
        "{\"type\":\"number\",\"minimum\":0,\"exclusiveMinimum\":true}",
        "true", "{}",
    };
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        wk_grammar *g = wk_grammar_from_json_schema(fine[i], strlen(fine[i]));
        T_CHECK(g, "%s: %s", fine[i], wk_last_error());
        wk_grammar_release(g);
    }
    /* untrusted sizes: a chain of 2000 $refs is refused (not a deep
       recursion), an enum of 3000 strings compiles and matches */
    char *big = t_mem(200000);
    size_t at = (size_t)sprintf(big, "{\"$ref\":\"#/$defs/d0\",\"$defs\":{");
    for (int i = 0; i < 2000; i++)
        at += (size_t)sprintf(big + at, "%s\"d%d\":{\"$ref\":\"#/$defs/d%d\"}", i ? "," : "", i, i + 1);
    at += (size_t)sprintf(big + at, ",\"d2000\":{\"type\":\"null\"}}}");
    wk_grammar *g = wk_grammar_from_json_schema(big, at);
    T_CHECK(!g && strstr(wk_last_error(), "nest deeper"), "a chain of 2000 $refs: %s", g ? "compiled" : wk_last_error());
    wk_grammar_release(g);
    at = (size_t)sprintf(big, "{\"enum\":[");
    for (int i = 0; i < 3000; i++) at += (size_t)sprintf(big + at, "%s\"v%d\"", i ? "," : "", (i * 7919) % 3000);
    at += (size_t)sprintf(big + at, "]}");
    g = wk_grammar_from_json_schema(big, at);
    size_t bad_at;
    T_CHECK(g && run_text(g, "\"v1234\"", 7, &bad_at) == WHOLE && run_text(g, "\"v2999\"", 7, &bad_at) == WHOLE &&
                run_text(g, "\"v3000\"", 7, &bad_at) == REFUSED && run_text(g, "\"v12\"", 5, &bad_at) == WHOLE &&
                run_text(g, "\"v1", 3, &bad_at) == PREFIX,
            "an enum of 3000 strings: %s", g ? "wrong matches" : wk_last_error());
    wk_grammar_release(g);
    T_CHECK(!wk_grammar_from_json_schema(NULL, 0) && !wk_grammar_state_new(NULL), "NULL arguments");
    wk_grammar_release(NULL);
    wk_grammar_state_free(NULL);
    wk_grammar_vocab_free(NULL);
}

/* ---- a small vocabulary --------------------------------------------------------------------------- */

/* A small vocabulary (the random test model's too): 0 has no text, 1 is
 * plain text, 2 the end token, then every printable ASCII character and
 * "\n" (so that any text the grammars allow can be spelled), and tokens
 * that cross JSON's punctuation, escapes and UTF-8 characters. */
static const char *const multi_tokens[] = {
    "true", "false", "null", "name", "age", "tags", "kind", "email", "{\"", "\":", "\",", "\"}", ", \"", "\": ",
    "[\"", "\"]", "00e9", "\xc3\xa9", "\xc3", "\xa9", "\\\"", "12", "}}", "]}", "  ", "red", "green", "blue", "y z",
    "E+", "\xf0\x9f\x98", "\x80", "\\n", "\\u", "ud83d", "\\ude00", "-0.", "1e", "\n  ", ",\n", "\t",
};
enum { N_MULTI = sizeof multi_tokens / sizeof *multi_tokens, SMALL_N = 3 + 95 + 1 + N_MULTI, SMALL_EOS = 2 };
static const char *small_tokens[SMALL_N];
static size_t small_lens[SMALL_N];

static void small_init(void)
{
    static char ascii[95][2];
    small_tokens[0] = "";
    small_tokens[1] = "<s>";
    small_tokens[2] = "</s>";
    for (int i = 0; i < 95; i++) {
        ascii[i][0] = (char)(0x20 + i);
        small_tokens[3 + i] = ascii[i];
    }
    small_tokens[98] = "\n";
    for (int i = 0; i < N_MULTI; i++) small_tokens[99 + i] = multi_tokens[i];
    for (int i = 0; i < SMALL_N; i++) small_lens[i] = strlen(small_tokens[i]);
}

/* the id of a token of the small vocabulary */
static int32_t tok(const char *s)
{
    for (int32_t i = 0; i < SMALL_N; i++)
        if (!strcmp(small_tokens[i], s)) return i;
    t_fail("no token \"%s\"", s);
    return 0;
}

static wk_grammar_vocab *small_vocab(void)
{
    small_init();
    const int32_t eog = SMALL_EOS;
    return wk_grammar_vocab_from_tokens(SMALL_N, small_tokens, small_lens, &eog, 1);
}

/* does the grammar take token t after text[0 .. n)? (a fresh state, byte by byte) */
static bool takes(wk_grammar *g, const char *text, size_t n, const char *tok, size_t tn, bool eog)
{
    wk_grammar_state *s = wk_grammar_state_new(g);
    bool ok = wk_grammar_state_accept(s, text, n) == WK_OK;
    if (ok && eog) ok = wk_grammar_state_complete(s);
    else if (ok) ok = tn > 0 && wk_grammar_state_accept(s, tok, tn) == WK_OK;
    wk_grammar_state_free(s);
    wk_clear_error();
    return ok;
}

/* the tokens where mask and the byte recogniser disagree after text (the
 * first in *first); 0 when they agree */
static int mask_mismatches(wk_grammar *g, const uint32_t *mask, int32_t n_tok, const char *const *toks,
                           const size_t *lens, int32_t eog, const char *text, size_t n, int32_t *first)
{
    int bad = 0;
    for (int32_t t = 0; t < n_tok; t++) {
        const bool in = mask[t / 32] >> (t % 32) & 1;
        if (in != takes(g, text, n, toks[t], lens[t], t == eog)) {
            if (!bad) *first = t;
            bad++;
        }
    }
    return bad;
}

typedef struct walk_out {
    char text[4096];
    size_t n;
    bool finished;   /* complete, and ended by the grammar or an end token */
    int steps;
} walk_out;

/* a random walk through the masks of a small vocabulary; each mask checked
 * token by token when check is set */
static void walk(wk_grammar *g, wk_grammar_vocab *v, const char *const *toks, const size_t *lens, int32_t n_tok,
                 int32_t eog, bool check, int max_steps, walk_out *o)
{
    memset(o, 0, sizeof *o);
    wk_grammar_state *s = wk_grammar_state_new(g);
    uint32_t mask[(SMALL_N + 31) / 32];
    int32_t allowed[SMALL_N];
    while (s && o->steps < max_steps && !o->finished) {
        const int64_t k = wk_grammar_state_mask(s, v, mask);
        if (k <= 0) {
            t_fail("no token allowed after \"%.*s\" (%s)", (int)o->n, o->text, k < 0 ? wk_last_error() : "");
            break;
        }
        if (check) {
            int32_t first = -1;
            const int bad = mask_mismatches(g, mask, n_tok, toks, lens, eog, o->text, o->n, &first);
            if (bad) {
                t_fail("after \"%.*s\": %d tokens wrong in the mask, the first \"%s\" (%s)", (int)o->n, o->text, bad,
                       toks[first], mask[first / 32] >> (first % 32) & 1 ? "allowed" : "masked");
                break;
            }
        }
        int na = 0;
        for (int32_t t = 0; t < n_tok; t++)
            if (mask[t / 32] >> (t % 32) & 1) allowed[na++] = t;
        T_CHECK(na == k, "the mask's count %lld, its bits %d", (long long)k, na);
        /* after a third of the steps, lean to the end token and short tokens */
        int32_t t = allowed[t_rng_int(t_r(), 0, na - 1)];
        if (o->steps > max_steps / 3 && (mask[eog / 32] >> (eog % 32) & 1)) t = eog;
        if (wk_grammar_state_accept_token(s, v, t) != WK_OK) {
            t_fail("an allowed token \"%s\" refused after \"%.*s\": %s", toks[t], (int)o->n, o->text, wk_last_error());
            break;
        }
        o->steps++;
        if (t == eog) o->finished = true;
        else if (o->n + lens[t] < sizeof o->text) {
            memcpy(o->text + o->n, toks[t], lens[t]);
            o->n += lens[t];
        }
        if (wk_grammar_state_finished(s)) o->finished = true;
    }
    wk_grammar_state_free(s);
}

static void check_mask(void)
{
    wk_grammar_vocab *v = small_vocab();
    const size_t *lens = small_lens;
    if (!v) {
        t_fail("small vocabulary: %s", wk_last_error());
        return;
    }
    T_CHECK(wk_grammar_vocab_size(v) == SMALL_N, "vocabulary size %d", wk_grammar_vocab_size(v));
    const char *const *schemas[] = { &S_OBJECT, &S_PERSON, &S_UNION, &S_TREE, &S_OPEN, &S_TUPLE };
    for (size_t k = 0; k < sizeof schemas / sizeof *schemas; k++) {
        wk_grammar *g = wk_grammar_from_json_schema(*schemas[k], strlen(*schemas[k]));
        if (!g) {
            t_fail("%s", wk_last_error());
            continue;
        }
        for (int w = 0; w < 6 && !t_case_failed(); w++) {
            walk_out o;
            walk(g, v, small_tokens, lens, SMALL_N, SMALL_EOS, true, 60, &o);
        }
        wk_grammar_release(g);
    }
    /* known places: what must be masked and what not */
    wk_grammar *g = wk_grammar_from_json_schema(S_PERSON, strlen(S_PERSON));
    wk_grammar_state *s = g ? wk_grammar_state_new(g) : NULL;
    uint32_t mask[(SMALL_N + 31) / 32];
    if (s) {
#define IN(t) (mask[tok(t) / 32] >> (tok(t) % 32) & 1)
        int64_t k = wk_grammar_state_mask(s, v, mask);
        T_CHECK(k == 2 && IN("{") && IN("{\""), "at the start: '{' and '{\"' only (%lld)", (long long)k);
        T_OK(wk_grammar_state_accept(s, "{\"name\":\"", 9));
        wk_grammar_state_mask(s, v, mask);
        T_CHECK(IN("a") && IN("\xc3\xa9") && IN("\xc3") && !IN("\xa9") && !IN("\"") && !IN("\"}") && IN("\\") &&
                    IN("\\n") && !IN("\n") && !IN("\t") && !(mask[0] >> SMALL_EOS & 1),
                "in a string of at least one character: text, not a quote or a newline");
        T_OK(wk_grammar_state_accept(s, "\xc3", 1));
        k = wk_grammar_state_mask(s, v, mask);
        T_CHECK(k == 2 && IN("\xa9") && IN("\x80"), "inside a UTF-8 character: its continuations only (%lld)", (long long)k);
        T_OK(wk_grammar_state_accept(s, "\xa9\",\"age\":1", 10));
        wk_grammar_state_mask(s, v, mask);
        T_CHECK(IN("0") && IN("12") && IN("}") && IN(",") && IN(",\n") && IN(" ") && IN("\n  ") && !IN(".") &&
                    !IN("1e") && !IN("}}") && !IN("\"") && !(mask[0] >> SMALL_EOS & 1),
                "after age 1: digits, '}', ',', whitespace");
        T_OK(wk_grammar_state_accept(s, "}", 1));
        T_CHECK(wk_grammar_state_mask(s, v, mask) == 1 && (mask[0] >> SMALL_EOS & 1) && wk_grammar_state_finished(s),
                "after the object: the end token only (the output is over)");
#undef IN
        /* the comparison catches a broken mask: one invalid token let in */
        wk_grammar_state_free(s);
        s = wk_grammar_state_new(g);
        const char *pre = "{\"name\":\"Al\",";
        T_OK(wk_grammar_state_accept(s, pre, strlen(pre)));
        wk_grammar_state_mask(s, v, mask);
        int32_t first = -1;
        T_CHECK(mask_mismatches(g, mask, SMALL_N, small_tokens, lens, SMALL_EOS, pre, strlen(pre), &first) == 0,
                "the true mask after %s", pre);
        mask[tok("}") / 32] |= 1u << (tok("}") % 32);   /* '}' before the required age */
        T_CHECK(mask_mismatches(g, mask, SMALL_N, small_tokens, lens, SMALL_EOS, pre, strlen(pre), &first) == 1 &&
                    first == tok("}"),
                "a mask with '}' let in was not caught");
    }
    wk_grammar_state_free(s);
    wk_grammar_release(g);
    wk_grammar_vocab_free(v);
}

static void check_random(void)
{
    wk_grammar_vocab *v = small_vocab();
    const size_t *lens = small_lens;
    const char *const *schemas[] = { &S_OBJECT, &S_PERSON, &S_UNION, &S_TREE, &S_OPEN, &S_TUPLE };
    for (size_t k = 0; v && k < sizeof schemas / sizeof *schemas; k++) {
        wk_grammar *g = wk_grammar_from_json_schema(*schemas[k], strlen(*schemas[k]));
        int finished = 0;
        for (int w = 0; g && w < 150 && !t_case_failed(); w++) {
            walk_out o;
            walk(g, v, small_tokens, lens, SMALL_N, SMALL_EOS, false, 120, &o);
            if (!o.finished) continue;
            finished++;
            const int valid = validate(*schemas[k], o.text, o.n);
            T_CHECK(valid == 1, "schema %zu: \"%.*s\" %s", k, (int)o.n, o.text,
                    valid < 0 ? "does not parse" : "is not valid under the schema");
        }
        T_CHECK(finished >= 50, "schema %zu: only %d of 150 walks finished", k, finished);
        wk_grammar_release(g);
    }
    wk_grammar_vocab_free(v);
}

/* ---- real vocabularies ---------------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int32_t find_token(const wk_llm *m, const char *text)
{
    int32_t *ids = NULL;
    int64_t n = 0;
    int32_t r = -1;
    if (wk_llm_tokenize(m, text, strlen(text), false, &ids, &n) == WK_OK && n == 1) r = ids[0];
    free(ids);
    wk_clear_error();
    return r;
}

static void check_real_vocab(const char *env, const char *file)
{
    char path[4096];
    if (!t_model_path(env, file, path, sizeof path)) {
        printf("  grammar/real: no model at %s: not run\n", path);
        return;
    }
    wk_llm *m = wk_llm_load(path, t_dev(), &(wk_llm_options){ .context = 256 });
    if (!m) {
        t_fail("wk_llm_load(%s): %s", path, wk_last_error());
        return;
    }
    const double t0 = now_ms();
    wk_grammar_vocab *v = wk_grammar_vocab_new(m);
    const double t_vocab = now_ms() - t0;
    const int32_t V = v ? wk_grammar_vocab_size(v) : 0;
    uint32_t *mask = t_mem(((size_t)V + 31) / 32 * sizeof *mask + 4);
    wk_grammar *g = wk_grammar_from_json_schema(S_PERSON, strlen(S_PERSON));
    if (v && g) {
        /* tokens and their bytes as the decoder gives them */
        const int32_t brace = find_token(m, "{"), close = find_token(m, "}"), quote = find_token(m, "\""),
                      name = find_token(m, "name");
        int32_t eog = -1;
        for (int32_t t = 0; t < V && eog < 0; t++)
            if (wk_llm_is_eog(m, t)) eog = t;
        T_CHECK(brace >= 0 && close >= 0 && quote >= 0 && name >= 0 && eog >= 0, "tokens not found");
        wk_grammar_state *s = wk_grammar_state_new(g);
        const char *steps[] = { "", "{\"", "{\"name\":\"Jo", "{\"name\":\"Jo\",\"age\":1" };
        double worst = 0;
        for (size_t k = 0; s && k < sizeof steps / sizeof *steps && brace >= 0 && eog >= 0; k++) {
            if (k) T_OK(wk_grammar_state_accept(s, steps[k] + strlen(steps[k - 1]), strlen(steps[k]) - strlen(steps[k - 1])));
            const double a = now_ms();
            const int64_t n = wk_grammar_state_mask(s, v, mask);
            const double b = now_ms() - a;
            worst = b > worst ? b : worst;
#define IN(t) ((t) >= 0 && (mask[(t) / 32] >> ((t) % 32) & 1))
            if (k == 0) T_CHECK(IN(brace) && !IN(close) && !IN(quote) && !IN(eog) && n < 100, "start: %lld allowed", (long long)n);
            if (k == 1) T_CHECK(IN(name) && !IN(brace) && !IN(close) && !IN(eog) && n < 100, "a key: %lld allowed", (long long)n);
            if (k == 2) T_CHECK(IN(name) && IN(quote) && !IN(eog) && n > V / 2, "a string: %lld allowed", (long long)n);
            if (k == 3) T_CHECK(!IN(name) && IN(close) && !IN(eog) && n < 1000, "a number: %lld allowed", (long long)n);
#undef IN
            /* every token, by the bytes the vocabulary holds for it (a fresh state per token) */
            if (k == 1 || k == 3) {
                int bad = 0;
                for (int32_t t = 0; t < V; t++) {
                    wk_grammar_state *c = wk_grammar_state_new(g);
                    bool ok = wk_grammar_state_accept(c, steps[k], strlen(steps[k])) == WK_OK &&
                              wk_grammar_state_accept_token(c, v, t) == WK_OK;
                    bad += ok != (bool)(mask[t / 32] >> (t % 32) & 1);
                    wk_grammar_state_free(c);
                }
                wk_clear_error();
                T_CHECK(bad == 0, "after %s: %d tokens masked wrong", steps[k], bad);
            }
        }
        wk_grammar_state_free(s);
        /* time: masks along random walks inside strings and structure */
        wk_grammar *go = wk_grammar_json_object();
        double total = 0;
        int count = 0;
        for (int w = 0; go && w < 3; w++) {
            wk_grammar_state *r = wk_grammar_state_new(w == 0 ? go : g);
            for (int i = 0; r && i < 60 && !wk_grammar_state_finished(r); i++) {
                const double a = now_ms();
                const int64_t n = wk_grammar_state_mask(r, v, mask);
                const double b = now_ms() - a;
                total += b;
                count++;
                if (n <= 0) break;
                int32_t pick = -1;
                const int32_t from = (int32_t)t_rng_int(t_r(), 0, V - 1);
                for (int32_t j = 0; j < V && pick < 0; j++) {
                    const int32_t t = (from + j) % V;
                    if (mask[t / 32] >> (t % 32) & 1 && t != eog) pick = t;
                }
                if (pick < 0 || wk_grammar_state_accept_token(r, v, pick) != WK_OK) break;
            }
            wk_grammar_state_free(r);
        }
        wk_grammar_release(go);
        printf("  grammar/real: %s: %d tokens indexed in %.0f ms; masks %.3f ms on average (%d), %.3f ms at most "
               "of the fixed places\n", file, (int)V, t_vocab, count ? total / count : 0, count, worst);
    } else t_fail("%s", wk_last_error());
    wk_grammar_release(g);
    wk_grammar_vocab_free(v);
    wk_llm_free(m);
}

/* ---- the engine ------------------------------------------------------------------------------------- */

typedef struct reply {
    char text[8192];
    size_t n;
    int32_t tok[512];
    int n_tok;
    bool done;
    wk_finish finish;
    char error[256];
    int lp_bad;
} reply;

static void on_reply(void *user, const wk_engine_event *ev)
{
    reply *r = user;
    if (ev->done) {
        r->done = true;
        r->finish = ev->finish;
        if (ev->error) snprintf(r->error, sizeof r->error, "%s", ev->error);
    } else if (r->n_tok < 512) {
        r->tok[r->n_tok++] = ev->token;
        if (ev->n_top > 0 && !(ev->logprob <= 0 && ev->top_logprobs[0] >= ev->logprob - 1e-6)) r->lp_bad++;
    }
    if (ev->len && r->n + ev->len < sizeof r->text) {
        memcpy(r->text + r->n, ev->text, ev->len);
        r->n += ev->len;
    }
}

static bool run_engine(wk_engine *e, int limit)
{
    int64_t active = 1;
    for (int i = 0; i < limit && active; i++)
        if (wk_engine_step(e, &active) != WK_OK) {
            t_fail("wk_engine_step: %s", wk_last_error());
            return false;
        }
    if (active) t_fail("%lld requests still active after %d steps", (long long)active, limit);
    return !active;
}

static void check_engine(void)
{
    tcfg c = cfg_of(A_LLAMA, false);
    c.V = SMALL_N;
    tmodel tm = make_model(c);
    small_init();
    const char *path = tmp_path("grammar-engine.gguf");
    gguf_tokens = small_tokens;
    gguf_context = 1024;
    const bool written = write_gguf(&tm, path, WK_F32);
    gguf_tokens = NULL;
    gguf_context = 0;
    wk_llm *m = written ? wk_llm_load(path, t_dev(), &(wk_llm_options){ .context = 512 }) : NULL;
    if (written && !m) t_fail("wk_llm_load: %s", wk_last_error());
    wk_engine *e = m ? wk_engine_new(m, &(wk_engine_options){ .max_seqs = 8, .block_size = 8 }) : NULL;
    const char *schemas[] = { S_PERSON, S_UNION, S_TREE, S_OPEN, S_TUPLE, S_OBJECT };
    enum { NS = 6, SEEDS = 5 };
    if (e) {
        static reply r[NS * SEEDS];
        memset(r, 0, sizeof r);
        int32_t prompt[5] = { 5, 9, 13, 20, 1 };
        for (int k = 0; k < NS; k++) {
            wk_grammar *g = wk_grammar_from_json_schema(schemas[k], strlen(schemas[k]));
            if (!g) t_fail("%s", wk_last_error());
            for (int sd = 0; g && sd < SEEDS; sd++) {
                const wk_sampling samp = { .temperature = 1.0, .top_p = 1.0, .seed = (uint64_t)(17 * sd + k) };
                const wk_request q = { .prompt = prompt, .n_prompt = 5, .max_tokens = 300, .sampling = samp,
                                       .logprobs = sd == 0, .top_logprobs = sd == 0 ? 2 : 0, .grammar = g,
                                       .on_event = on_reply, .user = &r[k * SEEDS + sd] };
                T_CHECK(wk_engine_submit(e, &q) > 0, "submit: %s", wk_last_error());
            }
            wk_grammar_release(g);   /* the engine holds its own references */
        }
        run_engine(e, 4000);
        int whole = 0;
        for (int i = 0; i < NS * SEEDS; i++) {
            const int k = i / SEEDS;
            T_CHECK(r[i].done && r[i].finish != WK_FINISH_ERROR, "request %d: %s %s", i, wk_finish_name(r[i].finish), r[i].error);
            T_CHECK(r[i].lp_bad == 0, "request %d: %d tokens whose logprobs are out of order", i, r[i].lp_bad);
            if (r[i].finish != WK_FINISH_STOP) {   /* json_object may run to max_tokens: still a prefix */
                T_CHECK(k == NS - 1 && r[i].finish == WK_FINISH_LENGTH, "schema %d: finished %s", k, wk_finish_name(r[i].finish));
                continue;
            }
            whole++;
            const int valid = validate(schemas[k], r[i].text, r[i].n);
            T_CHECK(valid == 1, "schema %d seed %d: \"%.*s\" %s", k, i % SEEDS, (int)r[i].n, r[i].text,
                    valid < 0 ? "does not parse" : "does not validate");
        }
        T_CHECK(whole >= NS * SEEDS - SEEDS, "only %d replies whole", whole);
        /* greedy: each token the argmax of the masked logits (single stream) */
        wk_grammar *g = wk_grammar_from_json_schema(S_PERSON, strlen(S_PERSON));
        reply gr;
        memset(&gr, 0, sizeof gr);
        const wk_request q = { .prompt = prompt, .n_prompt = 5, .max_tokens = 100, .grammar = g, .on_event = on_reply,
                               .user = &gr };
        wk_engine_submit(e, &q);
        run_engine(e, 400);
        wk_grammar_vocab *v = wk_grammar_vocab_new(m);
        wk_grammar_state *s = g && v ? wk_grammar_state_new(g) : NULL;
        float *row = t_mem((size_t)c.V * sizeof *row);
        uint32_t mask[(SMALL_N + 31) / 32];
        wk_llm_rewind(m, 0);
        bool ok = s && wk_llm_eval(m, prompt, 5, false, row) == WK_OK;
        for (int i = 0; ok && i < gr.n_tok; i++) {
            wk_grammar_state_mask(s, v, mask);
            int32_t best = -1;
            for (int32_t t = 0; t < c.V; t++)
                if (mask[t / 32] >> (t % 32) & 1 && (best < 0 || row[t] > row[best])) best = t;
            if (best != gr.tok[i]) {
                t_fail("greedy token %d is %d, the masked argmax %d", i, gr.tok[i], best);
                break;
            }
            ok = wk_grammar_state_accept_token(s, v, best) == WK_OK &&
                 (best == SMALL_EOS || wk_llm_eval(m, &best, 1, false, row) == WK_OK);
        }
        T_CHECK(gr.finish == WK_FINISH_STOP && validate(S_PERSON, gr.text, gr.n) == 1, "greedy: %s \"%.*s\"",
                wk_finish_name(gr.finish), (int)gr.n, gr.text);
        wk_grammar_state_free(s);
        wk_grammar_vocab_free(v);
        /* max_tokens before the end: "length", the text a prefix */
        memset(&gr, 0, sizeof gr);
        const wk_request q2 = { .prompt = prompt, .n_prompt = 5, .max_tokens = 3, .grammar = g, .on_event = on_reply,
                                .user = &gr };
        wk_engine_submit(e, &q2);
        run_engine(e, 100);
        s = wk_grammar_state_new(g);
        T_CHECK(gr.finish == WK_FINISH_LENGTH && gr.n_tok == 3 && s && wk_grammar_state_accept(s, gr.text, gr.n) == WK_OK &&
                    !wk_grammar_state_complete(s),
                "max_tokens 3: %s after %d tokens, \"%.*s\"", wk_finish_name(gr.finish), gr.n_tok, (int)gr.n, gr.text);
        wk_grammar_state_free(s);
        /* ignore_eog does not let the reply go on past its end */
        memset(&gr, 0, sizeof gr);
        const wk_request q3 = { .prompt = prompt, .n_prompt = 5, .max_tokens = 200, .grammar = g, .ignore_eog = true,
                                .on_event = on_reply, .user = &gr, .sampling = { .temperature = 1, .seed = 5 } };
        wk_engine_submit(e, &q3);
        run_engine(e, 400);
        T_CHECK(gr.finish == WK_FINISH_STOP && validate(S_PERSON, gr.text, gr.n) == 1, "ignore_eog: %s \"%.*s\"",
                wk_finish_name(gr.finish), (int)gr.n, gr.text);
        wk_grammar_release(g);
        wk_engine_stats st;
        wk_engine_get_stats(e, &st);
        T_CHECK(st.blocks_used == 0, "%lld blocks held at the end", (long long)st.blocks_used);
    }
    wk_engine_free(e);
    wk_llm_free(m);
    rm_model(path);
    /* a model without a vocabulary: the request ends with an error that says so */
    path = tmp_path("grammar-novocab.gguf");
    m = write_gguf(&tm, path, WK_F32) ? wk_llm_load(path, t_dev(), &(wk_llm_options){ .context = 64 }) : NULL;
    e = m ? wk_engine_new(m, &(wk_engine_options){ .block_size = 4 }) : NULL;
    if (e) {
        wk_grammar *g = wk_grammar_json_object();
        reply r;
        memset(&r, 0, sizeof r);
        int32_t prompt[2] = { 3, 4 };
        const wk_request q = { .prompt = prompt, .n_prompt = 2, .max_tokens = 5, .grammar = g, .on_event = on_reply, .user = &r };
        wk_engine_submit(e, &q);
        wk_grammar_release(g);
        run_engine(e, 50);
        T_CHECK(r.finish == WK_FINISH_ERROR && r.n_tok == 0, "no vocabulary: %s (%s)", wk_finish_name(r.finish), r.error);
    }
    wk_engine_free(e);
    wk_llm_free(m);
    rm_model(path);
}

/* Under AddressSanitizer a real model runs about 15 times slower: fewer
 * seeds there */
#if defined(__SANITIZE_ADDRESS__)
#define G_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define G_SANITIZED 1
#endif
#endif
#ifndef G_SANITIZED
#define G_SANITIZED 0
#endif

static void check_engine_real(const char *env, const char *file)
{
    char path[4096];
    if (!t_model_path(env, file, path, sizeof path)) {
        printf("  engine/grammar/real: no model at %s: not run\n", path);
        return;
    }
    wk_llm *m = wk_llm_load(path, t_dev(), &(wk_llm_options){ .context = 1024 });
    if (!m) {
        t_fail("wk_llm_load(%s): %s", path, wk_last_error());
        return;
    }
    static const char *const S_REAL[2] = {
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":24},\"age\":{\"type\":"
        "\"integer\",\"minimum\":0,\"maximum\":120},\"city\":{\"type\":\"string\",\"maxLength\":24},\"hobbies\":{\"type\":"
        "\"array\",\"items\":{\"type\":\"string\",\"maxLength\":16},\"maxItems\":3}},\"required\":[\"name\",\"age\","
        "\"hobbies\"],\"additionalProperties\":false}",
        "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"score\":{\"type\":"
        "\"number\",\"minimum\":0,\"maximum\":10},\"note\":{\"type\":[\"string\",\"null\"],\"maxLength\":20},\"ok\":"
        "{\"type\":\"boolean\"}},\"required\":[\"color\",\"score\",\"note\",\"ok\"],\"additionalProperties\":false}",
    };
    static const char *const asks[2] = { "Describe a person as JSON with a name, an age and hobbies.",
                                         "Rate the color of the sky as JSON." };
    const int seeds = G_SANITIZED ? 1 : 3;
    wk_engine *e = wk_engine_new(m, &(wk_engine_options){ .max_seqs = 16 });
    static reply r[3][4];
    memset(r, 0, sizeof r);
    int32_t *ids[3] = { 0 };
    for (int k = 0; e && k < 3; k++) {
        const wk_chat_message msg = { .role = "user", .content = k < 2 ? asks[k] : "Write a JSON object about cats." };
        char *text = wk_llm_chat_apply(m, &msg, 1, true);
        int64_t n = 0;
        if (!text || wk_llm_tokenize(m, text, strlen(text), wk_llm_get_info(m)->chat == WK_CHAT_NONE, &ids[k], &n)) {
            t_fail("prompt: %s", wk_last_error());
            free(text);
            continue;
        }
        free(text);
        wk_grammar *g = k < 2 ? wk_grammar_from_json_schema(S_REAL[k], strlen(S_REAL[k])) : wk_grammar_json_object();
        for (int sd = 0; g && sd < seeds; sd++) {
            const wk_request q = { .prompt = ids[k], .n_prompt = n, .max_tokens = k < 2 ? 300 : 150, .grammar = g,
                                   .sampling = { .temperature = 1.0, .top_p = 1.0, .seed = (uint64_t)(100 + sd) },
                                   .on_event = on_reply, .user = &r[k][sd] };
            T_CHECK(wk_engine_submit(e, &q) > 0, "submit: %s", wk_last_error());
        }
        wk_grammar_release(g);
    }
    if (e) run_engine(e, 20000);
    for (int k = 0; e && k < 3; k++)
        for (int sd = 0; sd < seeds; sd++) {
            const reply *q = &r[k][sd];
            if (k == 2 && q->finish == WK_FINISH_LENGTH) continue;   /* any object: may be longer than 150 tokens */
            T_CHECK(q->finish == WK_FINISH_STOP, "%s: request %d seed %d: %s %s \"%.*s\"", file, k, sd,
                    wk_finish_name(q->finish), q->error, (int)q->n, q->text);
            const int valid = validate(k < 2 ? S_REAL[k] : S_OBJECT, q->text, q->n);
            T_CHECK(valid == 1, "%s: request %d seed %d: \"%.*s\" %s", file, k, sd, (int)q->n, q->text,
                    valid < 0 ? "does not parse" : "does not validate");
            if (sd == 0) printf("  engine/grammar/real: %s: %.*s\n", file, (int)(q->n < 300 ? q->n : 300), q->text);
        }
    wk_engine_free(e);
    for (int k = 0; k < 3; k++) free(ids[k]);
    wk_llm_free(m);
}

T_SUITE(grammar)
{
    if (t_case("grammar/validator")) check_validator();
    if (t_case("grammar/accept")) check_accept();
    if (t_case("grammar/errors")) check_errors();
    if (t_case("grammar/mask")) check_mask();
    if (t_case("grammar/random")) check_random();
    if (t_case("grammar/real/smollm2")) check_real_vocab("WICK_SMOLLM2", "SmolLM2-135M-Instruct.Q4_1.gguf");
    if (t_case("grammar/real/gemma3")) check_real_vocab("WICK_GEMMA3", "gemma-3-270m-q4_k_m.gguf");
    if (t_case("engine/grammar")) check_engine();
    if (t_case("engine/grammar/real/smollm2")) check_engine_real("WICK_SMOLLM2", "SmolLM2-135M-Instruct.Q4_1.gguf");
    if (t_case("engine/grammar/real/gemma3")) {
        if (G_SANITIZED) printf("  engine/grammar/real/gemma3: not under the sanitizers (the plain build runs it)\n");
        else check_engine_real("WICK_GEMMA3", "gemma-3-270m-q4_k_m.gguf");
    }
}
