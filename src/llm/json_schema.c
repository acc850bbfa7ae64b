/* json_schema.c — a JSON schema compiled into a grammar (wick_llm.h's
 * wk_grammar; grammar_internal.h's node table) that grammar.c's
 * recogniser runs.
 *
 * The subset clients send (OpenAI's structured outputs, pydantic's
 * schemas): type (one or a list; nullable), properties (written in the
 * schema's order; optional ones may be left out), required,
 * additionalProperties (false, true or a schema), items, prefixItems (and
 * the older array form of items with additionalItems), enum, const, anyOf,
 * oneOf (taken as anyOf), allOf of one schema, minItems, maxItems,
 * minLength, maxLength, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, $ref to any place of the same document ("#",
 * "#/$defs/x", "#/definitions/x", ...), with recursion. Annotations
 * (title, description, default, examples, format, ...) are accepted and
 * not enforced; any other keyword is an error naming it and its place,
 * since ignoring it could let through values it forbids.
 *
 * After compiling, one pass finds the least container nesting each node's
 * values need (none: nothing satisfies it) and prunes what cannot be
 * satisfied, so that every prefix the recogniser allows can be completed.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grammar_internal.h"

typedef struct cref {
    const wk_json *s;
    int32_t node;
} cref;

typedef struct cctx {
    wk_grammar *g;
    const wk_json *root;
    cref *refs;
    int n_refs, cap_refs;
    int32_t any;                   /* the node of any value (-1: not made yet) */
    int nest;                      /* compile_into calls open                  */
    char path[1024];
    bool failed, oom;
    char err[1024];
} cctx;

/* ---- errors ------------------------------------------------------------------------ */

static void fail(cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(cctx *c, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, sizeof c->err, "%.400s: %.500s", c->path, msg);
}

static void oom(cctx *c)
{
    if (!c->failed) c->oom = true;
    c->failed = true;
}

/* the path grows by "/seg" for the duration of a child; returns the old length */
static size_t path_push(cctx *c, const char *seg, size_t n)
{
    const size_t at = strlen(c->path);
    if (at + n + 2 < sizeof c->path) {
        c->path[at] = '/';
        memcpy(c->path + at + 1, seg, n);
        c->path[at + 1 + n] = 0;
    }
    return at;
}

/* ---- the tables ------------------------------------------------------------------------ */

static bool grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    if (need <= *cap) return true;
    int64_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * size);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static int32_t new_node(cctx *c, gkind kind)
{
    wk_grammar *g = c->g;
    if (g->n_nodes >= G_MAX_NODES) {
        fail(c, "the schema is too large (more than %d nodes)", G_MAX_NODES);
        return -1;
    }
    int64_t cap = g->cap_nodes;
    if (!grow((void **)&g->nodes, &cap, g->n_nodes + 1, sizeof *g->nodes)) {
        oom(c);
        return -1;
    }
    g->cap_nodes = (int32_t)cap;
    g->nodes[g->n_nodes] = (gnode){ .kind = (uint8_t)kind, .child = -1, .max = -1 };
    return g->n_nodes++;
}

static int32_t add_lit(cctx *c, const char *s, size_t n)
{
    wk_grammar *g = c->g;
    int64_t cap = g->cap_lits;
    if (!grow((void **)&g->lit_off, &cap, g->n_lits + 2, sizeof *g->lit_off) ||
        !grow((void **)&g->lit_bytes, &g->cap_lit_bytes, g->n_lit_bytes + (int64_t)n + 1, 1)) {
        oom(c);
        return -1;
    }
    g->cap_lits = (int32_t)cap;
    if (g->n_lits == 0) g->lit_off[0] = 0;
    memcpy(g->lit_bytes + g->n_lit_bytes, s, n);
    g->n_lit_bytes += (int64_t)n;
    g->lit_off[g->n_lits + 1] = g->n_lit_bytes;
    return g->n_lits++;
}

/* alts[a .. a + n) for a node */
static int32_t add_alts(cctx *c, const int32_t *ids, int32_t n)
{
    wk_grammar *g = c->g;
    int64_t cap = g->cap_alts;
    if (!grow((void **)&g->alts, &cap, g->n_alts + n + 1, sizeof *g->alts)) {
        oom(c);
        return -1;
    }
    g->cap_alts = (int32_t)cap;
    const int32_t a = g->n_alts;
    if (n) memcpy(g->alts + a, ids, (size_t)n * sizeof *ids);
    g->n_alts += n;
    return a;
}

/* ---- JSON text of values (enum, const, property names) ---------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* a string as JSON writes it: '"', '\\' and control bytes escaped, the
 * rest (UTF-8) as it is */
static void sb_string(sbuf *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        char e[8];
        const char *r = NULL;
        switch (ch) {
        case '"': r = "\\\""; break;
        case '\\': r = "\\\\"; break;
        case '\b': r = "\\b"; break;
        case '\f': r = "\\f"; break;
        case '\n': r = "\\n"; break;
        case '\r': r = "\\r"; break;
        case '\t': r = "\\t"; break;
        default:
            if (ch < 0x20) {
                snprintf(e, sizeof e, "\\u%04x", ch);
                r = e;
            }
        }
        if (r) sb_put(b, r, strlen(r));
        else sb_put(b, s + i, 1);
    }
    sb_put(b, "\"", 1);
}

/* the shortest of %.15g .. %.17g that reads back as v */
static void sb_number(sbuf *b, const wk_json *v)
{
    char t[40];
    int64_t i;
    double d = 0;
    if (wk_json_int(v, &i)) snprintf(t, sizeof t, "%lld", (long long)i);
    else {
        wk_json_number(v, &d);
        for (int p = 15; p <= 17; p++) {
            snprintf(t, sizeof t, "%.*g", p, d);
            if (strtod(t, NULL) == d) break;
        }
    }
    sb_put(b, t, strlen(t));
}

static void sb_json(sbuf *b, const wk_json *v)
{
    size_t n;
    bool f;
    switch (wk_json_kind(v)) {
    case WK_JSON_NULL: sb_put(b, "null", 4); break;
    case WK_JSON_BOOL:
        wk_json_bool(v, &f);
        sb_put(b, f ? "true" : "false", f ? 4 : 5);
        break;
    case WK_JSON_NUMBER: sb_number(b, v); break;
    case WK_JSON_STRING: {
        const char *s = wk_json_string(v, &n);
        sb_string(b, s, n);
        break;
    }
    case WK_JSON_ARRAY:
        sb_put(b, "[", 1);
        for (size_t i = 0; i < wk_json_count(v); i++) {
            if (i) sb_put(b, ",", 1);
            sb_json(b, wk_json_item(v, i));
        }
        sb_put(b, "]", 1);
        break;
    case WK_JSON_OBJECT:
        sb_put(b, "{", 1);
        for (size_t i = 0; i < wk_json_count(v); i++) {
            if (i) sb_put(b, ",", 1);
            const char *k = wk_json_key(v, i, &n);
            sb_string(b, k, n);
            sb_put(b, ":", 1);
            sb_json(b, wk_json_item(v, i));
        }
        sb_put(b, "}", 1);
        break;
    }
}

/* ---- keywords ---------------------------------------------------------------------------- */

/* accepted, not enforced: they say nothing about which values are valid
 * (format is an annotation unless a validator opts in) */
static const char *const annotations[] = { "title", "description", "default", "examples", "$schema", "$id",
                                           "$comment", "deprecated", "readOnly", "writeOnly", "format",
                                           "contentEncoding", "contentMediaType", "$anchor", "discriminator",
                                           "$defs", "definitions", "example", "strict" };
static const char *const enforced[] = { "type", "enum", "const", "properties", "required", "additionalProperties",
                                        "items", "prefixItems", "additionalItems", "minItems", "maxItems",
                                        "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                                        "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "nullable",
                                        "uniqueItems" };

static bool in(const char *const *list, size_t n, const char *k, size_t kn)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == kn && !memcmp(list[i], k, kn)) return true;
    return false;
}

static bool is_annotation(const char *k, size_t n)
{
    return in(annotations, sizeof annotations / sizeof *annotations, k, n) || (n > 2 && !memcmp(k, "x-", 2));
}

/* the keywords of s: every one known; with only_with set, any keyword
 * other than those and annotations is an error (what cannot be combined) */
static bool check_keywords(cctx *c, const wk_json *s, const char *with)
{
    for (size_t i = 0; i < wk_json_count(s); i++) {
        size_t n;
        const char *k = wk_json_key(s, i, &n);
        if (is_annotation(k, n)) continue;
        if (!in(enforced, sizeof enforced / sizeof *enforced, k, n)) {
            fail(c, "'%.*s' is not supported", (int)(n > 64 ? 64 : n), k);
            return false;
        }
        if (with && !(strlen(with) == n && !memcmp(with, k, n)) && !(n == 8 && !memcmp(k, "nullable", 8))) {
            fail(c, "'%s' beside '%.*s' is not supported (only annotations may go with it)", with,
                 (int)(n > 64 ? 64 : n), k);
            return false;
        }
    }
    return true;
}

/* a keyword's non-negative integer; 0: absent, -1: failed */
static int get_count(cctx *c, const wk_json *s, const char *key, int64_t *out)
{
    const wk_json *v = wk_json_get(s, key);
    if (!v) return 0;
    if (!wk_json_int(v, out) || *out < 0) {
        fail(c, "'%s' must be a non-negative integer", key);
        return -1;
    }
    return 1;
}

/* ---- nodes --------------------------------------------------------------------------------- */

static int32_t compile(cctx *c, const wk_json *s);
static void compile_into(cctx *c, const wk_json *s, int32_t id);

/* the node of any JSON value (an anyOf of the five kinds) */
static int32_t any_node(cctx *c)
{
    if (c->any >= 0) return c->any;
    const int32_t any = new_node(c, G_ANYOF);
    if (any < 0) return -1;
    c->any = any;
    int32_t kinds[5];
    kinds[0] = new_node(c, G_OBJECT);
    kinds[1] = new_node(c, G_ARRAY);
    kinds[2] = new_node(c, G_STRING);
    kinds[3] = new_node(c, G_NUMBER);
    kinds[4] = new_node(c, G_LITERALS);
    if (c->failed) return -1;
    wk_grammar *g = c->g;
    g->nodes[kinds[0]].child = any;
    g->nodes[kinds[1]].child = any;
    g->key_node = kinds[2];
    int32_t l0 = add_lit(c, "false", 5);
    add_lit(c, "null", 4);
    add_lit(c, "true", 4);
    g->nodes[kinds[4]].a = l0;
    g->nodes[kinds[4]].n = 3;
    const int32_t a = add_alts(c, kinds, 5);
    g->nodes[any].a = a;
    g->nodes[any].n = 5;
    return c->failed ? -1 : any;
}

/* id becomes an anyOf of one node (an alias) */
static void alias(cctx *c, int32_t id, int32_t to)
{
    if (to < 0) return;
    const int32_t a = add_alts(c, &to, 1);
    c->g->nodes[id].kind = G_ANYOF;
    c->g->nodes[id].a = a;
    c->g->nodes[id].n = 1;
}

static bool lit_less(const char *a, int64_t an, const char *b, int64_t bn)
{
    const int r = memcmp(a, b, (size_t)(an < bn ? an : bn));
    return r < 0 || (r == 0 && an < bn);
}

/* id becomes one of the JSON texts texts[0 .. n) (sorted, distinct) */
static void literals(cctx *c, int32_t id, sbuf *texts, int n)
{
    for (int i = 1; i < n; i++)   /* insertion sort: enums are short */
        for (int j = i; j > 0 && lit_less(texts[j].p, (int64_t)texts[j].n, texts[j - 1].p, (int64_t)texts[j - 1].n); j--) {
            sbuf t = texts[j];
            texts[j] = texts[j - 1];
            texts[j - 1] = t;
        }
    int32_t a = -1, k = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && texts[i].n == texts[i - 1].n && !memcmp(texts[i].p, texts[i - 1].p, texts[i].n)) continue;
        const int32_t l = add_lit(c, texts[i].p, texts[i].n);
        if (a < 0) a = l;
        k++;
    }
    c->g->nodes[id].kind = G_LITERALS;
    c->g->nodes[id].a = a < 0 ? 0 : a;
    c->g->nodes[id].n = k;   /* 0: an anyOf of nothing would do as well */
    if (k == 0) c->g->nodes[id].kind = G_ANYOF;
}

/* the types a schema names (bits of T_*) */
enum { T_NULL = 1, T_BOOL = 2, T_OBJECT = 4, T_ARRAY = 8, T_NUMBER = 16, T_STRING = 32, T_INTEGER = 64 };
static const char *const type_names[] = { "null", "boolean", "object", "array", "number", "string", "integer" };

static int type_bit(const char *t)
{
    for (int i = 0; i < 7; i++)
        if (!strcmp(t, type_names[i])) return 1 << i;
    return 0;
}

/* -1: failed */
static int types_of(cctx *c, const wk_json *s)
{
    const wk_json *t = wk_json_get(s, "type");
    int bits = 0;
    if (t && wk_json_kind(t) == WK_JSON_STRING) {
        bits = type_bit(wk_json_string(t, NULL));
        if (!bits) {
            fail(c, "unknown type '%.64s'", wk_json_string(t, NULL));
            return -1;
        }
    } else if (t && wk_json_kind(t) == WK_JSON_ARRAY && wk_json_count(t) > 0) {
        for (size_t i = 0; i < wk_json_count(t); i++) {
            const char *n = wk_json_string(wk_json_item(t, i), NULL);
            const int b = n ? type_bit(n) : 0;
            if (!b) {
                fail(c, "'type' must be a type name or a non-empty list of them");
                return -1;
            }
            bits |= b;
        }
    } else if (t) {
        fail(c, "'type' must be a type name or a non-empty list of them");
        return -1;
    }
    if (bits & T_NUMBER) bits &= ~T_INTEGER;   /* integers are numbers */
    bool nb = false;
    const wk_json *nl = wk_json_get(s, "nullable");
    if (nl && !wk_json_bool(nl, &nb)) {
        fail(c, "'nullable' must be true or false");
        return -1;
    }
    if (nb && bits) bits |= T_NULL;
    return bits;
}

/* the type a schema without "type" is about, from its keywords (a subset
 * of what it allows: the rest of the types would be unconstrained) */
static int types_inferred(const wk_json *s)
{
    static const char *const obj[] = { "properties", "required", "additionalProperties" };
    static const char *const arr[] = { "items", "prefixItems", "additionalItems", "minItems", "maxItems" };
    static const char *const str[] = { "minLength", "maxLength" };
    static const char *const num[] = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" };
    int bits = 0;
    for (int i = 0; i < 3; i++) bits |= wk_json_get(s, obj[i]) ? T_OBJECT : 0;
    for (int i = 0; i < 5; i++) bits |= wk_json_get(s, arr[i]) ? T_ARRAY : 0;
    for (int i = 0; i < 2; i++) bits |= wk_json_get(s, str[i]) ? T_STRING : 0;
    for (int i = 0; i < 4; i++) bits |= wk_json_get(s, num[i]) ? T_NUMBER : 0;
    return bits;
}

/* bounds of a number schema; false when it failed */
typedef struct nbounds {
    bool has_lo, has_hi, lo_excl, hi_excl;
    double lo, hi;
} nbounds;

static bool number_bounds(cctx *c, const wk_json *s, nbounds *b)
{
    *b = (nbounds){ 0 };
    const char *names[4] = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" };
    const wk_json *v[4];
    double d[4] = { 0 };
    bool flag[4] = { 0 };
    for (int i = 0; i < 4; i++) {
        v[i] = wk_json_get(s, names[i]);
        if (!v[i]) continue;
        if (i >= 2 && wk_json_kind(v[i]) == WK_JSON_BOOL) {   /* draft 4: a flag on minimum / maximum */
            wk_json_bool(v[i], &flag[i]);
            continue;
        }
        if (!wk_json_number(v[i], &d[i])) {
            fail(c, "'%s' must be a number", names[i]);
            return false;
        }
    }
    if (v[0]) b->has_lo = true, b->lo = d[0], b->lo_excl = flag[2];
    if (v[1]) b->has_hi = true, b->hi = d[1], b->hi_excl = flag[3];
    if (v[2] && !flag[2] && wk_json_kind(v[2]) == WK_JSON_NUMBER && (!b->has_lo || d[2] >= b->lo))
        b->has_lo = true, b->lo = d[2], b->lo_excl = true;
    if (v[3] && !flag[3] && wk_json_kind(v[3]) == WK_JSON_NUMBER && (!b->has_hi || d[3] <= b->hi))
        b->has_hi = true, b->hi = d[3], b->hi_excl = true;
    return true;
}

/* code points of UTF-8 text (continuation bytes not counted) */
static int64_t chars(const char *s, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

/* does an enum / const value pass the schema's type and the simple
 * constraints beside it (lengths, bounds)? */
static bool value_fits(cctx *c, const wk_json *s, int types, const wk_json *v)
{
    int64_t lo, hi, i;
    size_t n;
    double d;
    switch (wk_json_kind(v)) {
    case WK_JSON_NULL: return !types || (types & T_NULL);
    case WK_JSON_BOOL: return !types || (types & T_BOOL);
    case WK_JSON_OBJECT: return !types || (types & T_OBJECT);
    case WK_JSON_ARRAY: return !types || (types & T_ARRAY);
    case WK_JSON_STRING: {
        if (types && !(types & T_STRING)) return false;
        const char *t = wk_json_string(v, &n);
        const int64_t k = chars(t, n);
        if (get_count(c, s, "minLength", &lo) > 0 && k < lo) return false;
        if (get_count(c, s, "maxLength", &hi) > 0 && k > hi) return false;
        return true;
    }
    case WK_JSON_NUMBER: {
        if (types && !(types & (T_NUMBER | T_INTEGER))) return false;
        wk_json_number(v, &d);
        if (types && !(types & T_NUMBER) && (!wk_json_int(v, &i) || d != floor(d))) return false;
        nbounds b;
        if (!number_bounds(c, s, &b)) return false;
        if (b.has_lo && (b.lo_excl ? !(d > b.lo) : !(d >= b.lo))) return false;
        if (b.has_hi && (b.hi_excl ? !(d < b.hi) : !(d <= b.hi))) return false;
        return true;
    }
    }
    return false;
}

static void compile_enum(cctx *c, const wk_json *s, int32_t id, int types)
{
    const wk_json *en = wk_json_get(s, "enum"), *cn = wk_json_get(s, "const");
    if (en && wk_json_kind(en) != WK_JSON_ARRAY) {
        fail(c, "'enum' must be an array");
        return;
    }
    const size_t n = cn ? 1 : wk_json_count(en);
    sbuf *texts = calloc(n ? n : 1, sizeof *texts);
    if (!texts) {
        oom(c);
        return;
    }
    int k = 0;
    for (size_t i = 0; i < n && !c->failed; i++) {
        const wk_json *v = cn ? cn : wk_json_item(en, i);
        if (!value_fits(c, s, types, v)) continue;
        if (cn && en) {   /* both: const, when the enum holds it */
            sbuf a = { 0 }, b = { 0 };
            sb_json(&a, cn);
            bool found = false;
            for (size_t j = 0; j < wk_json_count(en) && !found; j++) {
                b.n = 0;
                sb_json(&b, wk_json_item(en, j));
                found = !a.oom && !b.oom && a.n == b.n && !memcmp(a.p, b.p, a.n);
            }
            free(a.p);
            free(b.p);
            if (!found) continue;
        }
        sb_json(&texts[k], v);
        if (texts[k].oom) oom(c);
        k++;
    }
    if (!c->failed) literals(c, id, texts, k);
    for (size_t i = 0; i < n; i++) free(texts[i].p);
    free(texts);
}

static void compile_object(cctx *c, const wk_json *s, int32_t id)
{
    const wk_json *props = wk_json_get(s, "properties"), *req = wk_json_get(s, "required"),
                  *add = wk_json_get(s, "additionalProperties");
    if (props && wk_json_kind(props) != WK_JSON_OBJECT) {
        fail(c, "'properties' must be an object");
        return;
    }
    if (req && wk_json_kind(req) != WK_JSON_ARRAY) {
        fail(c, "'required' must be an array of names");
        return;
    }
    for (size_t i = 0; req && i < wk_json_count(req); i++)
        if (!wk_json_string(wk_json_item(req, i), NULL)) {
            fail(c, "'required' must be an array of names");
            return;
        }
    int32_t add_node = -1;
    bool b;
    if (!add || (wk_json_bool(add, &b) && b)) add_node = any_node(c);
    else if (wk_json_kind(add) == WK_JSON_OBJECT) {
        const size_t at = path_push(c, "additionalProperties", 20);
        add_node = compile(c, add);
        c->path[at] = 0;
    } else if (wk_json_kind(add) != WK_JSON_BOOL) {
        fail(c, "'additionalProperties' must be a boolean or a schema");
        return;
    }
    const size_t np = wk_json_count(props);
    size_t n_extra = 0;   /* required names that are not among the properties */
    for (size_t i = 0; req && i < wk_json_count(req); i++) {
        size_t kn;
        const char *k = wk_json_string(wk_json_item(req, i), &kn);
        bool found = false;
        for (size_t j = 0; j < np && !found; j++) {
            size_t pn;
            const char *p = wk_json_key(props, j, &pn);
            found = pn == kn && !memcmp(p, k, kn);
        }
        for (size_t j = 0; j < i && !found; j++) {   /* named twice */
            size_t pn;
            const char *p = wk_json_string(wk_json_item(req, j), &pn);
            found = pn == kn && !memcmp(p, k, kn);
        }
        if (found) continue;
        if (add_node < 0 && add) {
            fail(c, "the required property '%.64s' is not in 'properties' and additionalProperties is false", k);
            return;
        }
        n_extra++;
    }
    if (np + n_extra > G_MAX_PROPS) {
        fail(c, "an object of more than %d properties is not supported", G_MAX_PROPS);
        return;
    }
    gprop tmp[G_MAX_PROPS];
    int32_t k = 0;
    for (size_t i = 0; i < np && !c->failed; i++) {
        size_t kn;
        const char *key = wk_json_key(props, i, &kn);
        size_t at = path_push(c, "properties", 10);
        path_push(c, key, kn);
        const int32_t node = compile(c, wk_json_item(props, i));
        c->path[at] = 0;
        bool required = false;
        for (size_t j = 0; req && j < wk_json_count(req) && !required; j++) {
            size_t rn;
            const char *r = wk_json_string(wk_json_item(req, j), &rn);
            required = rn == kn && !memcmp(r, key, kn);
        }
        sbuf t = { 0 };
        sb_string(&t, key, kn);
        if (t.oom) oom(c);
        tmp[k++] = (gprop){ .lit = t.oom ? -1 : add_lit(c, t.p, t.n), .node = node, .required = required,
                            .hash = g_hash(G_HASH0, key, kn) };
        free(t.p);
    }
    for (size_t i = 0; req && i < wk_json_count(req) && !c->failed; i++) {
        size_t kn;
        const char *key = wk_json_string(wk_json_item(req, i), &kn);
        bool found = false;
        for (int32_t j = 0; j < k && !found; j++) {
            int64_t ln;
            const char *l = g_lit(c->g, tmp[j].lit, &ln);
            sbuf t = { 0 };
            sb_string(&t, key, kn);
            found = !t.oom && (int64_t)t.n == ln && !memcmp(t.p, l, t.n);
            free(t.p);
        }
        if (found) continue;
        sbuf t = { 0 };
        sb_string(&t, key, kn);
        if (t.oom) oom(c);
        tmp[k++] = (gprop){ .lit = t.oom ? -1 : add_lit(c, t.p, t.n), .node = add_node, .required = true,
                            .hash = g_hash(G_HASH0, key, kn) };
        free(t.p);
    }
    if (c->failed) return;
    wk_grammar *g = c->g;
    int64_t cap = g->cap_props;
    if (!grow((void **)&g->props, &cap, g->n_props + k + 1, sizeof *g->props)) {
        oom(c);
        return;
    }
    g->cap_props = (int32_t)cap;
    memcpy(g->props + g->n_props, tmp, (size_t)k * sizeof *tmp);
    gnode *nd = &g->nodes[id];
    nd->kind = G_OBJECT;
    nd->a = g->n_props;
    nd->n = k;
    nd->child = add_node;
    g->n_props += k;
}

/* a schema value that may be a boolean: its node, or -1 for false */
static int32_t sub_schema(cctx *c, const wk_json *v, const char *key)
{
    bool b;
    if (!v || (wk_json_bool(v, &b) && b)) return any_node(c);
    if (wk_json_kind(v) == WK_JSON_BOOL) return -1;
    const size_t at = path_push(c, key, strlen(key));
    const int32_t n = compile(c, v);
    c->path[at] = 0;
    return n;
}

static void compile_array(cctx *c, const wk_json *s, int32_t id)
{
    const wk_json *items = wk_json_get(s, "items"), *prefix = wk_json_get(s, "prefixItems");
    int64_t mn = 0, mx = -1;
    if (get_count(c, s, "minItems", &mn) < 0 || get_count(c, s, "maxItems", &mx) < 0) return;
    const wk_json *tuple = NULL;
    int32_t rest;
    if (prefix) {
        if (wk_json_kind(prefix) != WK_JSON_ARRAY) {
            fail(c, "'prefixItems' must be an array of schemas");
            return;
        }
        tuple = prefix;
        if (items && wk_json_kind(items) == WK_JSON_ARRAY) {
            fail(c, "'items' must be a schema beside 'prefixItems'");
            return;
        }
        rest = sub_schema(c, items, "items");
    } else if (items && wk_json_kind(items) == WK_JSON_ARRAY) {   /* the older tuple form */
        tuple = items;
        rest = sub_schema(c, wk_json_get(s, "additionalItems"), "additionalItems");
    } else {
        if (items && wk_json_kind(items) != WK_JSON_OBJECT && wk_json_kind(items) != WK_JSON_BOOL) {
            fail(c, "'items' must be a schema");
            return;
        }
        rest = sub_schema(c, items, "items");
    }
    const size_t nt = wk_json_count(tuple);
    if (nt > 256) {
        fail(c, "tuples of more than 256 items are not supported");
        return;
    }
    int32_t tmp[256];
    for (size_t i = 0; i < nt && !c->failed; i++) {
        char seg[32];
        snprintf(seg, sizeof seg, "%s/%zu", prefix ? "prefixItems" : "items", i);
        const size_t at = path_push(c, seg, strlen(seg));
        tmp[i] = compile(c, wk_json_item(tuple, i));
        c->path[at] = 0;
    }
    if (c->failed) return;
    if (rest < 0 && (mx < 0 || mx > (int64_t)nt)) mx = (int64_t)nt;
    const int32_t a = add_alts(c, tmp, (int32_t)nt);
    gnode *nd = &c->g->nodes[id];
    nd->kind = G_ARRAY;
    nd->a = a;
    nd->n = (int32_t)nt;
    nd->child = rest;
    nd->min = mn;
    nd->max = mx;
    if (mx >= 0 && mn > mx) *nd = (gnode){ .kind = G_ANYOF, .child = -1, .max = -1 };   /* nothing */
}

static void compile_number(cctx *c, const wk_json *s, int32_t id, bool integer)
{
    nbounds b;
    if (!number_bounds(c, s, &b)) return;
    gnode *nd = &c->g->nodes[id];
    nd->kind = G_NUMBER;
    nd->integer = integer;
    bool empty = false;
    if (integer) {
        const double top = 999999999999999999.0;   /* 18 digits (as a double: 1e18) */
        double lo = -top, hi = top;
        if (b.has_lo) lo = b.lo_excl ? floor(b.lo) + 1 : ceil(b.lo);
        if (b.has_hi) hi = b.hi_excl ? ceil(b.hi) - 1 : floor(b.hi);
        if (lo < -top) lo = -top;
        if (hi > top) hi = top;
        empty = lo > hi;
        nd->ilo = lo <= -top ? -999999999999999999ll : (int64_t)lo;
        nd->ihi = hi >= top ? 999999999999999999ll : (int64_t)hi;
        nd->has_lo = b.has_lo;
        nd->has_hi = b.has_hi;
    } else {
        nd->has_lo = b.has_lo;
        nd->has_hi = b.has_hi;
        nd->lo_excl = b.lo_excl;
        nd->hi_excl = b.hi_excl;
        nd->lo = b.lo;
        nd->hi = b.hi;
        empty = b.has_lo && b.has_hi && (b.lo > b.hi || (b.lo == b.hi && (b.lo_excl || b.hi_excl)));
        /* bounded numbers have 15 digits and no exponent */
        if ((b.has_lo && fabs(b.lo) >= 1e15) || (b.has_hi && fabs(b.hi) >= 1e15))
            fail(c, "number bounds beyond 1e15 are not supported");
    }
    if (empty) *nd = (gnode){ .kind = G_ANYOF, .child = -1, .max = -1 };
}

static void compile_type(cctx *c, const wk_json *s, int32_t id, int type)
{
    gnode *nd = &c->g->nodes[id];
    int64_t mn = 0, mx = -1;
    switch (type) {
    case T_NULL: {
        sbuf t = { .p = "null", .n = 4 };
        literals(c, id, &t, 1);
        break;
    }
    case T_BOOL: {
        sbuf t[2] = { { .p = "false", .n = 5 }, { .p = "true", .n = 4 } };
        literals(c, id, t, 2);
        break;
    }
    case T_STRING:
        if (get_count(c, s, "minLength", &mn) < 0 || get_count(c, s, "maxLength", &mx) < 0) return;
        nd->kind = G_STRING;
        nd->min = mn;
        nd->max = mx;
        if (mx >= 0 && mn > mx) nd->kind = G_ANYOF;   /* nothing */
        break;
    case T_NUMBER: compile_number(c, s, id, false); break;
    case T_INTEGER: compile_number(c, s, id, true); break;
    case T_OBJECT: compile_object(c, s, id); break;
    case T_ARRAY: compile_array(c, s, id); break;
    }
}

/* "#", "#/a/b~1c" in the document */
static const wk_json *resolve(cctx *c, const char *ref)
{
    if (ref[0] != '#') {
        fail(c, "'$ref' \"%.128s\": only references inside the schema (\"#/...\") are supported", ref);
        return NULL;
    }
    const wk_json *v = c->root;
    const char *p = ref + 1;
    while (*p == '/') {
        p++;
        const char *e = strchr(p, '/');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        char seg[256];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof seg; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                seg[k++] = p[i + 1] == '0' ? '~' : '/';
                i++;
            } else seg[k++] = p[i];
        }
        seg[k] = 0;
        if (wk_json_kind(v) == WK_JSON_OBJECT) v = wk_json_get(v, seg);
        else if (wk_json_kind(v) == WK_JSON_ARRAY) {
            char *end;
            const unsigned long i = strtoul(seg, &end, 10);
            v = *seg && !*end && i < wk_json_count(v) ? wk_json_item(v, i) : NULL;
        } else v = NULL;
        if (!v) break;
        p += n;
    }
    if (!v || *p) {
        fail(c, "'$ref' \"%.128s\" names nothing in the schema", ref);
        return NULL;
    }
    return v;
}

/* the node of a $ref's target: compiled once, so that recursion ends */
static int32_t ref_node(cctx *c, const char *ref)
{
    const wk_json *t = resolve(c, ref);
    if (!t) return -1;
    for (int i = 0; i < c->n_refs; i++)
        if (c->refs[i].s == t) return c->refs[i].node;
    int64_t cap = c->cap_refs;
    if (!grow((void **)&c->refs, &cap, c->n_refs + 1, sizeof *c->refs)) {
        oom(c);
        return -1;
    }
    c->cap_refs = (int32_t)cap;
    const int32_t id = new_node(c, G_ANYOF);
    if (id < 0) return -1;
    c->refs[c->n_refs++] = (cref){ t, id };
    char saved[sizeof c->path];
    memcpy(saved, c->path, sizeof saved);
    snprintf(c->path, sizeof c->path, "%s", ref);
    compile_into(c, t, id);
    if (!c->failed) memcpy(c->path, saved, sizeof saved);
    return id;
}

static int32_t compile(cctx *c, const wk_json *s)
{
    const int32_t id = new_node(c, G_ANYOF);
    if (id >= 0) compile_into(c, s, id);
    return c->failed ? -1 : id;
}

/* anyOf / oneOf: the alternatives */
static void compile_anyof(cctx *c, const wk_json *list, const char *key, int32_t id)
{
    if (wk_json_kind(list) != WK_JSON_ARRAY || wk_json_count(list) == 0) {
        fail(c, "'%s' must be a non-empty array of schemas", key);
        return;
    }
    const size_t n = wk_json_count(list);
    int32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        oom(c);
        return;
    }
    for (size_t i = 0; i < n && !c->failed; i++) {
        char seg[48];
        snprintf(seg, sizeof seg, "%s/%zu", key, i);
        const size_t at = path_push(c, seg, strlen(seg));
        tmp[i] = compile(c, wk_json_item(list, i));
        c->path[at] = 0;
    }
    if (!c->failed) {
        const int32_t a = add_alts(c, tmp, (int32_t)n);
        c->g->nodes[id].kind = G_ANYOF;
        c->g->nodes[id].a = a;
        c->g->nodes[id].n = (int32_t)n;
    }
    free(tmp);
}

static void compile_into_(cctx *c, const wk_json *s, int32_t id);

/* (a bound on the recursion: a chain of $refs could otherwise take the stack) */
static void compile_into(cctx *c, const wk_json *s, int32_t id)
{
    if (c->failed) return;
    if (c->nest >= G_MAX_NEST) {
        fail(c, "schemas nest deeper than %d (through $refs)", G_MAX_NEST);
        return;
    }
    c->nest++;
    compile_into_(c, s, id);
    c->nest--;
}

static void compile_into_(cctx *c, const wk_json *s, int32_t id)
{
    bool b;
    if (wk_json_bool(s, &b)) {
        if (b) alias(c, id, any_node(c));   /* true: anything; false: nothing (an empty anyOf) */
        return;
    }
    if (wk_json_kind(s) != WK_JSON_OBJECT) {
        fail(c, "a schema must be an object or a boolean");
        return;
    }
    if (!check_keywords(c, s, NULL)) return;
    const wk_json *v;
    bool u;
    if ((v = wk_json_get(s, "uniqueItems")) && (!wk_json_bool(v, &u) || u)) {
        fail(c, "'uniqueItems' is not supported (only false)");
        return;
    }
    if ((v = wk_json_get(s, "$ref"))) {
        const char *ref = wk_json_string(v, NULL);
        if (!ref) {
            fail(c, "'$ref' must be a string");
            return;
        }
        if (!check_keywords(c, s, "$ref")) return;
        alias(c, id, ref_node(c, ref));
        return;
    }
    if ((v = wk_json_get(s, "allOf"))) {
        if (wk_json_kind(v) != WK_JSON_ARRAY || wk_json_count(v) != 1) {
            fail(c, "'allOf' is supported with one schema only");
            return;
        }
        if (!check_keywords(c, s, "allOf")) return;
        const size_t at = path_push(c, "allOf/0", 7);
        const int32_t to = compile(c, wk_json_item(v, 0));
        c->path[at] = 0;
        alias(c, id, to);
        return;
    }
    const wk_json *any = wk_json_get(s, "anyOf"), *one = wk_json_get(s, "oneOf");
    if (any && one) {
        fail(c, "'anyOf' beside 'oneOf' is not supported");
        return;
    }
    if (any || one) {
        if (!check_keywords(c, s, any ? "anyOf" : "oneOf")) return;
        compile_anyof(c, any ? any : one, any ? "anyOf" : "oneOf", id);
        if (!c->failed && wk_json_get(s, "nullable")) {   /* OpenAPI's nullable beside anyOf: one more alternative */
            if (wk_json_bool(wk_json_get(s, "nullable"), &b) && b) {
                const gnode old = c->g->nodes[id];
                int32_t *alts = malloc(((size_t)old.n + 1) * sizeof *alts);
                if (!alts) {
                    oom(c);
                    return;
                }
                memcpy(alts, c->g->alts + old.a, (size_t)old.n * sizeof *alts);
                const int32_t nl = new_node(c, G_LITERALS);
                if (nl >= 0) compile_type(c, s, nl, T_NULL);
                alts[old.n] = nl;
                const int32_t a = add_alts(c, alts, old.n + 1);
                free(alts);
                c->g->nodes[id].a = a;
                c->g->nodes[id].n = old.n + 1;
            }
        }
        return;
    }
    int types = types_of(c, s);
    if (types < 0) return;
    if (wk_json_get(s, "enum") || wk_json_get(s, "const")) {
        compile_enum(c, s, id, types);
        return;
    }
    if (!types) types = types_inferred(s);
    if (!types) {
        alias(c, id, any_node(c));
        return;
    }
    int32_t alts[7], n = 0;
    for (int t = 1; t <= T_INTEGER; t <<= 1) {
        if (!(types & t)) continue;
        const int32_t k = n == 0 ? id : new_node(c, G_ANYOF);
        if (k < 0) return;
        compile_type(c, s, k, t);
        alts[n++] = k;
    }
    if (n > 1 && !c->failed) {   /* id holds the first type: it moves to a node of its own */
        const int32_t first = new_node(c, G_ANYOF);
        if (first < 0) return;
        c->g->nodes[first] = c->g->nodes[id];
        alts[0] = first;
        const int32_t a = add_alts(c, alts, n);
        c->g->nodes[id] = (gnode){ .kind = G_ANYOF, .a = a, .n = n, .child = -1, .max = -1 };
    }
}

/* ---- after compiling: what can be satisfied, at what depth --------------------------------- */

#define DEPTH_NONE INT32_MAX

static int32_t need_of(const wk_grammar *g, const int32_t *d, int32_t node)
{
    (void)g;
    return node < 0 ? DEPTH_NONE : d[node];
}

/* the least nesting of objects and arrays a value of each node needs
 * (DEPTH_NONE: no value satisfies it): a least fixed point */
static void min_depths(const wk_grammar *g, int32_t *d)
{
    for (int32_t i = 0; i < g->n_nodes; i++) d[i] = DEPTH_NONE;
    for (bool changed = true; changed;) {   /* children are made after their parents: last first */
        changed = false;
        for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
            const gnode *nd = &g->nodes[i];
            int64_t v = DEPTH_NONE;
            switch (nd->kind) {
            case G_STRING:
            case G_NUMBER: v = 0; break;
            case G_LITERALS: v = nd->n > 0 ? 0 : DEPTH_NONE; break;
            case G_ANYOF:
                for (int32_t k = 0; k < nd->n; k++) {
                    const int32_t x = need_of(g, d, g->alts[nd->a + k]);
                    if (x < v) v = x;
                }
                break;
            case G_OBJECT: {
                int32_t worst = 0;
                for (int32_t k = 0; k < nd->n && worst != DEPTH_NONE; k++)
                    if (g->props[nd->a + k].required) {
                        const int32_t x = need_of(g, d, g->props[nd->a + k].node);
                        if (x > worst) worst = x;
                    }
                v = worst == DEPTH_NONE ? DEPTH_NONE : worst + 1;
                break;
            }
            case G_ARRAY: {
                int32_t worst = 0;
                for (int64_t k = 0; k < nd->min && worst != DEPTH_NONE; k++) {
                    const int32_t x = need_of(g, d, k < nd->n ? g->alts[nd->a + k] : nd->child);
                    if (x > worst) worst = x;
                    if (k >= nd->n) break;   /* the rest are all the same node */
                }
                v = worst == DEPTH_NONE ? DEPTH_NONE : worst + 1;
                break;
            }
            }
            if (v < d[i]) {
                d[i] = (int32_t)v;
                changed = true;
            }
        }
    }
}

/* what cannot be satisfied goes: anyOf alternatives, optional properties,
 * array items past those that can be written */
static void prune(wk_grammar *g, const int32_t *d)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        gnode *nd = &g->nodes[i];
        nd->min_depth = d[i];
        if (nd->kind == G_ANYOF) {
            int32_t k = 0;
            for (int32_t j = 0; j < nd->n; j++)
                if (need_of(g, d, g->alts[nd->a + j]) != DEPTH_NONE) g->alts[nd->a + k++] = g->alts[nd->a + j];
            nd->n = k;
        } else if (nd->kind == G_OBJECT) {
            int32_t k = 0;
            for (int32_t j = 0; j < nd->n; j++)
                if (need_of(g, d, g->props[nd->a + j].node) != DEPTH_NONE) g->props[nd->a + k++] = g->props[nd->a + j];
            nd->n = k;
            if (need_of(g, d, nd->child) == DEPTH_NONE) nd->child = -1;
        } else if (nd->kind == G_ARRAY) {
            for (int32_t j = 0; j < nd->n; j++)
                if (need_of(g, d, g->alts[nd->a + j]) == DEPTH_NONE) {
                    nd->n = j;   /* items from j on cannot be written */
                    nd->child = -1;
                    break;
                }
            if (need_of(g, d, nd->child) == DEPTH_NONE) nd->child = -1;
            if (nd->child < 0 && (nd->max < 0 || nd->max > nd->n)) nd->max = nd->n;
        }
    }
}

/* an anyOf that reaches itself through anyOfs only would expand forever */
static bool anyof_cycle(const wk_grammar *g, int32_t i, uint8_t *mark)
{
    if (mark[i] == 1) return true;
    if (mark[i] == 2 || g->nodes[i].kind != G_ANYOF) return false;
    mark[i] = 1;
    for (int32_t k = 0; k < g->nodes[i].n; k++)
        if (anyof_cycle(g, g->alts[g->nodes[i].a + k], mark)) return true;
    mark[i] = 2;
    return false;
}

/* ---- the API -------------------------------------------------------------------------------- */

void wk_grammar_release(wk_grammar *g)
{
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
    free(g->nodes);
    free(g->props);
    free(g->alts);
    free(g->lit_bytes);
    free(g->lit_off);
    free(g);
}

wk_grammar *wk_grammar_retain(wk_grammar *g)
{
    if (g) atomic_fetch_add(&g->refs, 1);
    return g;
}

wk_grammar *wk_grammar_from_json(const wk_json *doc)
{
    wk_clear_error();
    if (!doc) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_from_json: the schema is NULL");
        return NULL;
    }
    wk_grammar *g = calloc(1, sizeof *g);
    cctx c = { .g = g, .root = doc, .any = -1, .path = "#" };
    if (!g) oom(&c);
    else {
        atomic_init(&g->refs, 1);
        g->key_node = -1;
        any_node(&c);   /* nodes 0..: any value, and the keys' string node */
        g->root = compile(&c, doc);
    }
    int32_t *d = !c.failed ? malloc((size_t)g->n_nodes * sizeof *d) : NULL;
    uint8_t *mark = !c.failed ? calloc((size_t)g->n_nodes, 1) : NULL;
    if (!c.failed && (!d || !mark)) oom(&c);
    if (!c.failed) {
        min_depths(g, d);
        if (d[g->root] == DEPTH_NONE) {
            snprintf(c.path, sizeof c.path, "#");
            fail(&c, "no JSON value satisfies the schema");
        } else if (d[g->root] > G_DEPTH_MAX) {
            snprintf(c.path, sizeof c.path, "#");
            fail(&c, "its values nest objects and arrays deeper than %d", G_DEPTH_MAX);
        }
    }
    if (!c.failed) {
        prune(g, d);
        for (int32_t i = 0; i < g->n_nodes && !c.failed; i++)
            if (anyof_cycle(g, i, mark)) {
                snprintf(c.path, sizeof c.path, "#");
                fail(&c, "a '$ref' or 'anyOf' cycle that never reaches a value");
            }
    }
    free(d);
    free(mark);
    free(c.refs);
    if (c.failed) {
        if (c.oom) wk_error_set(WK_ERR_MEMORY, "out of memory compiling a JSON schema");
        else wk_error_set(WK_ERR_ARGUMENT, "JSON schema: %s", c.err);
        if (g) atomic_store(&g->refs, 1);
        wk_grammar_release(g);
        return NULL;
    }
    return g;
}

wk_grammar *wk_grammar_from_json_schema(const char *text, size_t len)
{
    wk_clear_error();
    if (!text) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_from_json_schema: the schema is NULL");
        return NULL;
    }
    wk_json *doc = wk_json_parse(text, len, "the JSON schema", 0);
    if (!doc) {
        wk_error_set(WK_ERR_ARGUMENT, "the JSON schema is not valid JSON: %s", wk_last_error());
        return NULL;
    }
    wk_grammar *g = wk_grammar_from_json(doc);
    wk_json_free(doc);
    return g;
}

wk_grammar *wk_grammar_json_object(void)
{
    static const char schema[] = "{\"type\": \"object\"}";
    return wk_grammar_from_json_schema(schema, sizeof schema - 1);
}
