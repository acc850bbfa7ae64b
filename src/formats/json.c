/* json.c — a strict RFC 8259 JSON parser (config.json, tokenizer.json,
 * model.safetensors.index.json, safetensors headers). Reading the values
 * and freeing a document: json_access.c; the HF config.json getters:
 * config.c.
 *
 * The text must be UTF-8 (checked inside strings: no overlong forms, no
 * encoded surrogates, nothing past U+10FFFF); a leading byte order mark is
 * ignored (RFC 8259 8.1 allows it). Strings take every escape, \u
 * surrogate pairs are joined and a lone surrogate is an error; control
 * characters must be escaped. Numbers follow the grammar exactly (no
 * leading zeros, no '+', no '.5'); an integer literal that fits int64 is
 * kept exactly beside its double. Duplicate keys and nesting deeper than
 * WK_JSON_MAX_DEPTH are errors. Every error is WK_ERR_IO naming the
 * document, the line and column, and what was found.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "json_internal.h"

/* ---- the parser --------------------------------------------------------- */

typedef struct jp {
    const unsigned char *p, *end, *start;
    json_doc *doc;
    unsigned flags;
    bool failed;
    /* the scratch stack of children of the open arrays and objects */
    wk_json **stack;
    const char **kstack;
    size_t *lstack;
    const unsigned char **pstack;   /* where each key begins, for messages */
    size_t top, cap;
    /* the scratch buffer of the string being decoded */
    char *buf;
    size_t bcap;
} jp;

static void jp_where(const jp *P, const unsigned char *at, long *line, long *col)
{
    long l = 1, c = 1;
    for (const unsigned char *q = P->start; q < at && q < P->end; q++) {
        if (*q == '\n') {
            l++;
            c = 1;
        } else if ((*q & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static const char *jp_show(const jp *P, const unsigned char *at, char *out, size_t outsz)
{
    if (at >= P->end) return "the end of the text";
    unsigned char c = *at;
    if (c >= 0x20 && c < 0x7f) snprintf(out, outsz, "'%c'", c);
    else snprintf(out, outsz, "byte 0x%02x", c);
    return out;
}

__attribute__((format(printf, 3, 4))) static void *jp_err(jp *P, const unsigned char *at, const char *fmt, ...)
{
    if (P->failed) return NULL;
    P->failed = true;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    long line, col;
    jp_where(P, at, &line, &col);
    wk_error_set(WK_ERR_IO, "%s: JSON line %ld, column %ld (byte %lld): %s", P->doc->name, line, col,
            (long long)(at - P->start), what);
    return NULL;
}

static void *jp_oom(jp *P)
{
    if (!P->failed) {
        P->failed = true;
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory while parsing JSON", P->doc->name);
    }
    return NULL;
}

static void skip_ws(jp *P)
{
    while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r')) P->p++;
}

static wk_json *new_node(jp *P, wk_json_type kind)
{
    wk_json *v = wk_arena_alloc(&P->doc->arena, sizeof *v);
    if (!v) return jp_oom(P);
    v->kind = kind;
    v->doc = P->doc;
    return v;
}

static bool buf_reserve(jp *P, size_t need)
{
    if (need <= P->bcap) return true;
    size_t cap = P->bcap ? P->bcap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return false;
        cap *= 2;
    }
    char *b = realloc(P->buf, cap);
    if (!b) return false;
    P->buf = b;
    P->bcap = cap;
    return true;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at q (q + 4 <= end checked by the caller); -1 if not. */
static long hex4(const unsigned char *q)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(q[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The length of the valid UTF-8 sequence at q (1..4), or 0. */
static int utf8_len(const unsigned char *q, const unsigned char *end)
{
    unsigned char c = q[0];
    if (c < 0x80) return 1;
    int n;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (end - q < n) return 0;
    for (int k = 1; k < n; k++) {
        if ((q[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (q[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string at P->p (the opening quote): its decoded bytes in the arena. */
static bool parse_string(jp *P, const char **out, size_t *outlen)
{
    const unsigned char *open = P->p;
    P->p++;
    /* fast path: no escapes */
    const unsigned char *q = P->p;
    size_t n = 0;
    for (;;) {
        if (q >= P->end) return jp_err(P, open, "a string that is never closed"), false;
        unsigned char c = *q;
        if (c == '"') break;
        if (c == '\\') {
            n = SIZE_MAX;
            break;
        }
        if (c < 0x20) return jp_err(P, q, "control character 0x%02x inside a string (it must be escaped)", c), false;
        int l = utf8_len(q, P->end);
        if (!l) return jp_err(P, q, "invalid UTF-8 (byte 0x%02x) inside a string", c), false;
        q += l;
    }
    if (n != SIZE_MAX) {
        size_t len = (size_t)(q - P->p);
        char *s = wk_arena_strndup(&P->doc->arena, (const char *)P->p, len);
        if (!s) return jp_oom(P), false;
        *out = s;
        *outlen = len;
        P->p = q + 1;
        return true;
    }
    /* with escapes: decode into the scratch buffer (never longer than the text) */
    size_t o = 0;
    q = P->p;
    for (;;) {
        if (q >= P->end) return jp_err(P, open, "a string that is never closed"), false;
        if (!buf_reserve(P, o + 8)) return jp_oom(P), false;
        unsigned char c = *q;
        if (c == '"') break;
        if (c < 0x20) return jp_err(P, q, "control character 0x%02x inside a string (it must be escaped)", c), false;
        if (c != '\\') {
            int l = utf8_len(q, P->end);
            if (!l) return jp_err(P, q, "invalid UTF-8 (byte 0x%02x) inside a string", c), false;
            memcpy(P->buf + o, q, (size_t)l);
            o += (size_t)l;
            q += l;
            continue;
        }
        if (q + 1 >= P->end) return jp_err(P, open, "a string that is never closed"), false;
        unsigned char e = q[1];
        char simple = 0;
        switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default: {
            char sh[32];
            return jp_err(P, q, "invalid escape '\\' followed by %s", jp_show(P, q + 1, sh, sizeof sh)), false;
        }
        }
        if (simple) {
            P->buf[o++] = simple;
            q += 2;
            continue;
        }
        if (P->end - q < 6) return jp_err(P, q, "a \\u escape cut short"), false;
        long cp = hex4(q + 2);
        if (cp < 0) return jp_err(P, q, "a \\u escape without four hex digits"), false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return jp_err(P, q, "a lone low surrogate \\u%04lX", cp), false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = -1;
            if (P->end - q >= 12 && q[6] == '\\' && q[7] == 'u') lo = hex4(q + 8);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return jp_err(P, q, "a high surrogate \\u%04lX not followed by a low one", cp), false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            q += 12;
        } else {
            q += 6;
        }
        o += put_utf8(P->buf + o, (uint32_t)cp);
    }
    char *s = wk_arena_strndup(&P->doc->arena, P->buf, o);
    if (!s) return jp_oom(P), false;
    *out = s;
    *outlen = o;
    P->p = q + 1;
    return true;
}

static bool lit(jp *P, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, word, n) != 0) return false;
    P->p += n;
    return true;
}

static wk_json *parse_number(jp *P)
{
    const unsigned char *s = P->p, *q = P->p;
    bool neg = false, frac = false;
    if (q < P->end && *q == '-') {
        neg = true;
        q++;
    }
    if ((P->flags & WK_JSON_ALLOW_NAN) && neg && P->end - q >= 8 && memcmp(q, "Infinity", 8) == 0) {
        P->p = q + 8;
        wk_json *v = new_node(P, WK_JSON_NUMBER);
        if (v) v->num = -INFINITY;
        return v;
    }
    if (q >= P->end || !(*q >= '0' && *q <= '9')) {
        char sh[32];
        return jp_err(P, q, "a number needs a digit, found %s", jp_show(P, q, sh, sizeof sh));
    }
    if (*q == '0') {
        q++;
        if (q < P->end && *q >= '0' && *q <= '9') return jp_err(P, s, "a number with a leading zero");
    } else {
        while (q < P->end && *q >= '0' && *q <= '9') q++;
    }
    const unsigned char *int_end = q;
    if (q < P->end && *q == '.') {
        frac = true;
        q++;
        if (q >= P->end || !(*q >= '0' && *q <= '9')) return jp_err(P, q, "a number with no digit after '.'");
        while (q < P->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < P->end && (*q == 'e' || *q == 'E')) {
        frac = true;
        q++;
        if (q < P->end && (*q == '+' || *q == '-')) q++;
        if (q >= P->end || !(*q >= '0' && *q <= '9')) return jp_err(P, q, "a number with no digit in its exponent");
        while (q < P->end && *q >= '0' && *q <= '9') q++;
    }
    wk_json *v = new_node(P, WK_JSON_NUMBER);
    if (!v) return NULL;
    size_t len = (size_t)(q - s);
    char small[64], *tmp = small;
    if (len >= sizeof small) {
        tmp = malloc(len + 1);
        if (!tmp) return jp_oom(P);
    }
    memcpy(tmp, s, len);
    tmp[len] = 0;
    errno = 0;
    v->num = strtod(tmp, NULL);   /* overflow gives +-HUGE_VAL: a number too large for a double */
    if (tmp != small) free(tmp);
    if (!frac) {
        /* exact int64: accumulate as a negative number (covers INT64_MIN) */
        int64_t acc = 0;
        bool ok = true;
        for (const unsigned char *d = neg ? s + 1 : s; d < int_end; d++) {
            int dig = *d - '0';
            if (acc < (INT64_MIN + dig) / 10) {
                ok = false;
                break;
            }
            acc = acc * 10 - dig;
        }
        if (ok && !neg && acc == INT64_MIN) ok = false;
        if (ok) {
            v->is_int = true;
            v->i = neg ? acc : -acc;
        }
    }
    P->p = q;
    return v;
}

static bool stack_push(jp *P, wk_json *v, const char *key, size_t klen, const unsigned char *at)
{
    if (P->top == P->cap) {
        size_t cap = P->cap ? 2 * P->cap : 64;
        wk_json **s = realloc(P->stack, cap * sizeof *s);
        if (!s) return false;
        P->stack = s;
        const char **k = realloc(P->kstack, cap * sizeof *k);
        if (!k) return false;
        P->kstack = k;
        size_t *l = realloc(P->lstack, cap * sizeof *l);
        if (!l) return false;
        P->lstack = l;
        const unsigned char **q = realloc(P->pstack, cap * sizeof *q);
        if (!q) return false;
        P->pstack = q;
        P->cap = cap;
    }
    P->stack[P->top] = v;
    P->kstack[P->top] = key;
    P->lstack[P->top] = klen;
    P->pstack[P->top] = at;
    P->top++;
    return true;
}

/* The members pushed since base become the object's; a repeated key is an error. */
static bool close_object(jp *P, wk_json *o, size_t base)
{
    size_t n = P->top - base;
    const unsigned char *const *where = P->pstack + base;
    o->n = n;
    if (n) {
        o->items = wk_arena_alloc(&P->doc->arena, n * sizeof *o->items);
        o->keys = wk_arena_alloc(&P->doc->arena, n * sizeof *o->keys);
        o->klens = wk_arena_alloc(&P->doc->arena, n * sizeof *o->klens);
        if (!o->items || !o->keys || !o->klens) return jp_oom(P), false;
        memcpy(o->items, P->stack + base, n * sizeof *o->items);
        memcpy(o->keys, P->kstack + base, n * sizeof *o->keys);
        memcpy(o->klens, P->lstack + base, n * sizeof *o->klens);
    }
    int64_t dup;
    if (!wk_json_obj_index(&P->doc->arena, o, &dup)) return jp_oom(P), false;
    const unsigned char *at = dup >= 0 ? where[dup] : NULL;
    P->top = base;
    if (dup >= 0) {
        jp_err(P, at, "duplicate key \"%.*s\" in an object", (int)(o->klens[dup] > 200 ? 200 : o->klens[dup]),
               o->keys[dup]);
        return false;
    }
    return true;
}

static wk_json *parse_value(jp *P, int depth);

static wk_json *parse_array(jp *P, int depth)
{
    const unsigned char *open = P->p;
    P->p++;
    wk_json *a = new_node(P, WK_JSON_ARRAY);
    if (!a) return NULL;
    size_t base = P->top;
    skip_ws(P);
    if (P->p < P->end && *P->p == ']') {
        P->p++;
        return a;
    }
    for (;;) {
        wk_json *v = parse_value(P, depth + 1);
        if (!v) return NULL;
        if (!stack_push(P, v, NULL, 0, NULL)) return jp_oom(P);
        skip_ws(P);
        if (P->p >= P->end) return jp_err(P, open, "an array that is never closed");
        if (*P->p == ',') {
            P->p++;
            continue;
        }
        if (*P->p == ']') {
            P->p++;
            break;
        }
        char sh[32];
        return jp_err(P, P->p, "expected ',' or ']' in an array, found %s", jp_show(P, P->p, sh, sizeof sh));
    }
    size_t n = P->top - base;
    a->n = n;
    a->items = wk_arena_alloc(&P->doc->arena, n * sizeof *a->items);
    if (!a->items) return jp_oom(P);
    memcpy(a->items, P->stack + base, n * sizeof *a->items);
    P->top = base;
    return a;
}

static wk_json *parse_object(jp *P, int depth)
{
    const unsigned char *open = P->p;
    P->p++;
    wk_json *o = new_node(P, WK_JSON_OBJECT);
    if (!o) return NULL;
    size_t base = P->top;
    skip_ws(P);
    if (P->p < P->end && *P->p == '}') {
        P->p++;
        return o;
    }
    for (;;) {
        skip_ws(P);
        char sh[32];
        if (P->p >= P->end) return jp_err(P, open, "an object that is never closed");
        if (*P->p != '"') return jp_err(P, P->p, "expected a key (a string) in an object, found %s", jp_show(P, P->p, sh, sizeof sh));
        const char *key;
        size_t klen;
        const unsigned char *kat = P->p;
        if (!parse_string(P, &key, &klen)) return NULL;
        skip_ws(P);
        if (P->p >= P->end || *P->p != ':')
            return jp_err(P, P->p, "expected ':' after a key, found %s", jp_show(P, P->p, sh, sizeof sh));
        P->p++;
        wk_json *v = parse_value(P, depth + 1);
        if (!v) return NULL;
        if (!stack_push(P, v, key, klen, kat)) return jp_oom(P);
        skip_ws(P);
        if (P->p >= P->end) return jp_err(P, open, "an object that is never closed");
        if (*P->p == ',') {
            P->p++;
            continue;
        }
        if (*P->p == '}') {
            P->p++;
            break;
        }
        return jp_err(P, P->p, "expected ',' or '}' in an object, found %s", jp_show(P, P->p, sh, sizeof sh));
    }
    if (!close_object(P, o, base)) return NULL;
    return o;
}

static wk_json *parse_value(jp *P, int depth)
{
    if (depth > WK_JSON_MAX_DEPTH) return jp_err(P, P->p, "nesting deeper than %d", WK_JSON_MAX_DEPTH);
    skip_ws(P);
    if (P->p >= P->end) return jp_err(P, P->p, "a value is missing");
    unsigned char c = *P->p;
    if (c == '{') return parse_object(P, depth);
    if (c == '[') return parse_array(P, depth);
    if (c == '"') {
        wk_json *v = new_node(P, WK_JSON_STRING);
        if (!v) return NULL;
        if (!parse_string(P, &v->s, &v->len)) return NULL;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(P);
    const unsigned char *at = P->p;
    if (lit(P, "true") || lit(P, "false")) {
        wk_json *v = new_node(P, WK_JSON_BOOL);
        if (v) v->b = *at == 't';
        return v;
    }
    if (lit(P, "null")) return new_node(P, WK_JSON_NULL);
    if (P->flags & WK_JSON_ALLOW_NAN) {
        bool nan = lit(P, "NaN");
        if (nan || lit(P, "Infinity")) {
            wk_json *v = new_node(P, WK_JSON_NUMBER);
            if (v) v->num = nan ? NAN : INFINITY;
            return v;
        }
    }
    char sh[32];
    return jp_err(P, at, "expected a value, found %s", jp_show(P, at, sh, sizeof sh));
}

WK_MODEL_API wk_json *wk_json_parse(const char *text, size_t len, const char *name, unsigned flags)
{
    if (!name) name = "JSON";
    if (!text && len) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: NULL text", name);
        return NULL;
    }
    if (flags & ~WK_JSON_ALLOW_NAN) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: unknown JSON flags 0x%x", name, flags);
        return NULL;
    }
    json_doc *doc = calloc(1, sizeof *doc);
    char *nm = doc ? strdup(name) : NULL;
    if (!nm) {
        free(doc);
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", name);
        return NULL;
    }
    doc->name = nm;
    jp P = { 0 };
    P.start = P.p = (const unsigned char *)(text ? text : "");
    P.end = P.start + len;
    P.doc = doc;
    P.flags = flags;
    if (len >= 3 && memcmp(P.p, "\xEF\xBB\xBF", 3) == 0) P.p += 3;
    wk_json *root = parse_value(&P, 1);
    if (root) {
        skip_ws(&P);
        if (P.p < P.end) {
            char sh[32];
            root = jp_err(&P, P.p, "text after the end of the document: %s", jp_show(&P, P.p, sh, sizeof sh));
        }
    }
    free(P.stack);
    free(P.kstack);
    free(P.lstack);
    free(P.pstack);
    free(P.buf);
    if (!root) {
        wk_arena_free(&doc->arena);
        free(doc->name);
        free(doc);
        return NULL;
    }
    doc->root = root;
    return root;
}

WK_MODEL_API wk_json *wk_json_parse_file(const char *path, unsigned flags)
{
    wk_map m;
    if (wk_map_open(path, &m) != WK_OK) return NULL;
    wk_json *r = wk_json_parse((const char *)m.p, (size_t)m.size, path, flags);
    wk_map_close(&m);
    return r;
}
