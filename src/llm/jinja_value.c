/* jinja_value.c — the values of wick's Jinja interpreter (jinja.h): the
 * arena they live in, errors, growing buffers, UTF-8 as Python sees it,
 * and Python's own text forms of values (str, repr, and json.dumps as
 * transformers' tojson calls it), equality and order. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jinja.h"

/* ---- errors and the arena --------------------------------------------------- */

void jfail(jctx *c, int kind, int line, const char *fmt, ...)
{
    char msg[sizeof c->err - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(c->err, sizeof c->err, "line %d: %s", line, msg);
    else snprintf(c->err, sizeof c->err, "%s", msg);
    c->err_kind = kind;
    longjmp(c->jb, 1);
}

struct jchunk {
    jchunk *next;
    size_t size, used;
    max_align_t data[];
};

enum { CHUNK = 64 * 1024 };

void *jalloc(jctx *c, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    jchunk *h = c->chunks;
    if (!h || h->size - h->used < n) {
        size_t size = n > CHUNK / 4 ? n : CHUNK;
        if (size > SIZE_MAX - sizeof(jchunk) || c->mem + size + sizeof(jchunk) > c->mem_max)
            jfail(c, JERR_LIMIT, 0, "the template needs more than %zu bytes of memory", c->mem_max);
        jchunk *k = malloc(sizeof(jchunk) + size);
        if (!k) jfail(c, JERR_LIMIT, 0, "out of memory");
        c->mem += sizeof(jchunk) + size;
        k->size = size;
        k->used = 0;
        if (h && size != CHUNK && h->size - h->used >= 256) {   /* a big block: keep filling the current chunk */
            k->next = h->next;
            h->next = k;
        } else {
            k->next = h;
            c->chunks = k;
        }
        h = k;
    }
    void *p = (char *)h->data + h->used;
    h->used += n;
    memset(p, 0, n);
    return p;
}

void *jrealloc(jctx *c, void *old, size_t old_n, size_t n)
{
    jchunk *h = c->chunks;
    size_t o = (old_n + 15) & ~(size_t)15, nn = (n + 15) & ~(size_t)15;
    if (old && h && (char *)old + o == (char *)h->data + h->used && (char *)old >= (char *)h->data &&
        nn >= o && h->size - h->used >= nn - o) {   /* the last block: grow in place */
        memset((char *)old + o, 0, nn - o);
        h->used += nn - o;
        return old;
    }
    void *p = jalloc(c, n);
    if (old) memcpy(p, old, old_n < n ? old_n : n);
    return p;
}

void jarena_free(jctx *c)
{
    jchunk *h = c->chunks;
    while (h) {
        jchunk *next = h->next;
        free(h);
        h = next;
    }
    c->chunks = NULL;
    c->mem = 0;
}

char *jstrdup(jctx *c, const char *s, size_t n)
{
    char *p = jalloc(c, n + 1);
    if (n) memcpy(p, s, n);
    return p;
}

void jenter(jctx *c, int line)
{
    if (++c->depth > c->depth_max) jfail(c, JERR_LIMIT, line, "the template nests deeper than %d levels", c->depth_max);
}

/* ---- buffers ------------------------------------------------------------------ */

void jb_put(jctx *c, jbuf *b, const char *s, size_t n)
{
    if (!n) return;
    if (b->max && (n > b->max || b->n > b->max - n))
        jfail(c, JERR_LIMIT, 0, "the template's output is longer than %zu bytes", b->max);
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        b->p = jrealloc(c, b->p, b->cap, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

void jb_puts(jctx *c, jbuf *b, const char *s) { jb_put(c, b, s, strlen(s)); }

void jb_printf(jctx *c, jbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) jb_put(c, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

jv jb_value(jbuf *b) { return jv_str(b->p ? b->p : "", b->n); }

/* ---- UTF-8 ---------------------------------------------------------------------- */

int ju_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int need;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; v = c & 0x07; min = 0x10000; }
    else goto bad;
    if ((size_t)need >= n) goto bad;
    for (int i = 1; i <= need; i++) {
        if ((p[i] & 0xC0) != 0x80) goto bad;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
    *cp = v;
    return need + 1;
bad:
    *cp = 0xDC00 + c;   /* surrogateescape */
    return 1;
}

int ju_put(uint32_t cp, char out[4])
{
    if (cp >= 0xDC80 && cp <= 0xDCFF) {   /* an escaped byte goes back as itself */
        out[0] = (char)(cp - 0xDC00);
        return 1;
    }
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t ju_len(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)ju_next(p + i, n - i, &cp);
        k++;
    }
    return k;
}

size_t ju_offset(const char *p, size_t n, size_t idx)
{
    size_t i = 0;
    for (size_t k = 0; k < idx && i < n; k++) {
        uint32_t cp;
        i += (size_t)ju_next(p + i, n - i, &cp);
    }
    return i;
}

bool ju_isspace(uint32_t c)
{
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (c < 0x85) return false;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ---- values ----------------------------------------------------------------------- */

jv jv_cstr(const char *s) { return jv_str(s, strlen(s)); }

jv jv_list(jctx *c, size_t n, bool tuple)
{
    if (n > ((size_t)1 << 40) / sizeof(jv)) jfail(c, JERR_LIMIT, 0, "a list of %zu items", n);
    jlist *l = jalloc(c, sizeof *l);
    l->n = n;
    l->v = n ? jalloc(c, n * sizeof(jv)) : NULL;
    jv v = { .k = JV_LIST, .tuple = tuple };
    v.u.l = l;
    return v;
}

jv jv_dict(jctx *c, size_t cap)
{
    jdict *d = jalloc(c, sizeof *d);
    if (cap) {
        d->key = jalloc(c, cap * sizeof(jv));
        d->val = jalloc(c, cap * sizeof(jv));
        d->cap = cap;
    }
    jv v = { .k = JV_DICT };
    v.u.d = d;
    return v;
}

static bool hashable_eq(jv a, jv b)   /* dict keys: strings mostly; numbers by value */
{
    if (a.k == JV_STR && b.k == JV_STR) return a.u.s.n == b.u.s.n && !memcmp(a.u.s.p, b.u.s.p, a.u.s.n);
    if (jv_is_num(a) && jv_is_num(b)) {
        double x = a.k == JV_FLOAT ? a.u.f : a.k == JV_BOOL ? a.u.b : (double)a.u.i;
        double y = b.k == JV_FLOAT ? b.u.f : b.k == JV_BOOL ? b.u.b : (double)b.u.i;
        if (a.k != JV_FLOAT && b.k != JV_FLOAT) return (a.k == JV_BOOL ? a.u.b : a.u.i) == (b.k == JV_BOOL ? b.u.b : b.u.i);
        return x == y;
    }
    if (a.k == JV_NONE && b.k == JV_NONE) return true;
    return false;
}

static long dict_find(const jdict *d, jv key)
{
    for (size_t i = 0; i < d->n; i++)
        if (hashable_eq(d->key[i], key)) return (long)i;
    return -1;
}

void jdict_set(jctx *c, jdict *d, jv key, jv val)
{
    if (key.k != JV_STR && key.k != JV_NONE && !jv_is_num(key))
        jfail(c, JERR_RUNTIME, 0, "unhashable type: '%s'", jv_type_name(key));
    long i = dict_find(d, key);
    if (i >= 0) {
        d->val[i] = val;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        d->key = jrealloc(c, d->key, d->cap * sizeof(jv), cap * sizeof(jv));
        d->val = jrealloc(c, d->val, d->cap * sizeof(jv), cap * sizeof(jv));
        d->cap = cap;
    }
    d->key[d->n] = key;
    d->val[d->n] = val;
    d->n++;
}

bool jdict_get(const jdict *d, jv key, jv *out)
{
    long i = dict_find(d, key);
    if (i < 0) return false;
    *out = d->val[i];
    return true;
}

bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out) { return jdict_get(d, jv_str(key, n), out); }

bool jv_truthy(jv v)
{
    switch (v.k) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STR: return v.u.s.n != 0;
    case JV_LIST: return v.u.l->n != 0;
    case JV_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

bool jv_is_num(jv v) { return v.k == JV_BOOL || v.k == JV_INT || v.k == JV_FLOAT; }

const char *jv_type_name(jv v)
{
    switch (v.k) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v.tuple ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_FUNC: return "function";
    case JV_MACRO: return "Macro";
    case JV_LOOP: return "LoopContext";
    default: return "?";
    }
}

/* an int against a float, exactly (Python compares them without rounding) */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f)) return 2;   /* unordered */
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double t = trunc(f);
    int64_t fi = (int64_t)t;
    if (i != fi) return i < fi ? -1 : 1;
    return f > t ? -1 : f < t ? 1 : 0;
}

/* numbers: -1, 0, 1, or 2 when unordered (NaN) */
static int num_cmp(jv a, jv b)
{
    if (a.k != JV_FLOAT && b.k != JV_FLOAT) {
        int64_t x = a.k == JV_BOOL ? a.u.b : a.u.i, y = b.k == JV_BOOL ? b.u.b : b.u.i;
        return x < y ? -1 : x > y;
    }
    if (a.k == JV_FLOAT && b.k == JV_FLOAT) {
        if (isnan(a.u.f) || isnan(b.u.f)) return 2;
        return a.u.f < b.u.f ? -1 : a.u.f > b.u.f;
    }
    if (a.k == JV_FLOAT) {
        int r = cmp_int_float(b.k == JV_BOOL ? b.u.b : b.u.i, a.u.f);
        return r == 2 ? 2 : -r;
    }
    return cmp_int_float(a.k == JV_BOOL ? a.u.b : a.u.i, b.u.f);
}

static bool eq_depth(jctx *c, jv a, jv b, int depth)
{
    if (depth > 200) jfail(c, JERR_LIMIT, 0, "values nest too deep to compare");
    if (jv_is_num(a) && jv_is_num(b)) return num_cmp(a, b) == 0;
    if (a.k != b.k) return false;
    switch (a.k) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a.u.s.n == b.u.s.n && !memcmp(a.u.s.p, b.u.s.p, a.u.s.n);
    case JV_LIST:
        if (a.tuple != b.tuple || a.u.l->n != b.u.l->n) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!eq_depth(c, a.u.l->v[i], b.u.l->v[i], depth + 1)) return false;
        return true;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv o;
            if (!jdict_get(b.u.d, a.u.d->key[i], &o) || !eq_depth(c, a.u.d->val[i], o, depth + 1)) return false;
        }
        return true;
    case JV_NS: return a.u.d == b.u.d;
    case JV_FUNC: return a.fn == b.fn && a.u.fn == b.u.fn;
    case JV_MACRO: return a.u.m == b.u.m;
    case JV_LOOP: return a.u.loop == b.u.loop;
    default: return false;
    }
}

bool jv_eq(jctx *c, jv a, jv b) { return eq_depth(c, a, b, 0); }

static int cmp_depth(jctx *c, int line, jv a, jv b, int depth)
{
    if (depth > 200) jfail(c, JERR_LIMIT, line, "values nest too deep to compare");
    if (jv_is_num(a) && jv_is_num(b)) return num_cmp(a, b);
    if (a.k == JV_STR && b.k == JV_STR) {   /* UTF-8 byte order is code point order */
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int r = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
        if (r) return r < 0 ? -1 : 1;
        return a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n;
    }
    if (a.k == JV_LIST && b.k == JV_LIST && a.tuple == b.tuple) {
        size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < n; i++) {
            if (eq_depth(c, a.u.l->v[i], b.u.l->v[i], depth + 1)) continue;
            return cmp_depth(c, line, a.u.l->v[i], b.u.l->v[i], depth + 1);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jfail(c, JERR_RUNTIME, line, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

int jv_cmp(jctx *c, int line, jv a, jv b) { return cmp_depth(c, line, a, b, 0); }

/* ---- text forms ------------------------------------------------------------------- */

void jfloat_repr(double f, char out[40])
{
    if (isnan(f)) { strcpy(out, "nan"); return; }
    if (isinf(f)) { strcpy(out, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { strcpy(out, signbit(f) ? "-0.0" : "0.0"); return; }
    /* the shortest digits that read back as f */
    char e[40];
    int prec;
    for (prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e: [-]d[.ddd]e[+-]xx */
    const char *p = e;
    bool neg = *p == '-';
    if (neg) p++;
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp10 = atoi(p + 1);
    int decpt = exp10 + 1;   /* digits d1 d2 ... with the point after decpt of them */
    char *o = out;
    if (neg) *o++ = '-';
    if (decpt > -4 && decpt <= 16) {   /* fixed notation */
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            for (int i = 0; i < nd; i++) *o++ = digits[i];
        } else {
            for (int i = 0; i < decpt; i++) *o++ = i < nd ? digits[i] : '0';
            *o++ = '.';
            if (nd > decpt)
                for (int i = decpt; i < nd; i++) *o++ = digits[i];
            else *o++ = '0';
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = digits[i];
        }
        snprintf(o, (size_t)(out + 40 - o), "e%c%02d", exp10 < 0 ? '-' : '+', (exp10 < 0 ? -exp10 : exp10) % 1000);
    }
}

static void put_repr_str(jctx *c, jbuf *b, const char *s, size_t n)
{
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    jb_putc(c, b, q);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = ju_next(s + i, n - i, &cp);
        char tmp[16];
        if (cp == (uint32_t)q || cp == '\\') {
            jb_putc(c, b, '\\');
            jb_putc(c, b, (char)cp);
        } else if (cp == '\n') jb_puts(c, b, "\\n");
        else if (cp == '\r') jb_puts(c, b, "\\r");
        else if (cp == '\t') jb_puts(c, b, "\\t");
        else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
            snprintf(tmp, sizeof tmp, "\\x%02x", cp);
            jb_puts(c, b, tmp);
        } else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
                   (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 ||
                   cp == 0xFEFF || (cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB)) {
            snprintf(tmp, sizeof tmp, "\\u%04x", cp);
            jb_puts(c, b, tmp);
        } else {
            jb_put(c, b, s + i, (size_t)k);
        }
        i += (size_t)k;
    }
    jb_putc(c, b, q);
}

static void repr_depth(jctx *c, jbuf *b, jv v, int depth);

static void str_depth(jctx *c, jbuf *b, jv v, int depth)
{
    char tmp[40];
    switch (v.k) {
    case JV_UNDEF: return;
    case JV_NONE: jb_puts(c, b, "None"); return;
    case JV_BOOL: jb_puts(c, b, v.u.b ? "True" : "False"); return;
    case JV_INT: jb_printf(c, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT: jfloat_repr(v.u.f, tmp); jb_puts(c, b, tmp); return;
    case JV_STR: jb_put(c, b, v.u.s.p, v.u.s.n); return;
    default: repr_depth(c, b, v, depth); return;
    }
}

static void repr_depth(jctx *c, jbuf *b, jv v, int depth)
{
    if (depth > 200) jfail(c, JERR_LIMIT, 0, "values nest too deep to print");
    switch (v.k) {
    case JV_UNDEF: jb_puts(c, b, "Undefined"); return;
    case JV_STR: put_repr_str(c, b, v.u.s.p, v.u.s.n); return;
    case JV_LIST:
        jb_putc(c, b, v.tuple ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jb_puts(c, b, ", ");
            repr_depth(c, b, v.u.l->v[i], depth + 1);
        }
        if (v.tuple && v.u.l->n == 1) jb_putc(c, b, ',');
        jb_putc(c, b, v.tuple ? ')' : ']');
        return;
    case JV_DICT:
    case JV_NS:
        if (v.k == JV_NS) jb_puts(c, b, "<Namespace ");
        jb_putc(c, b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jb_puts(c, b, ", ");
            repr_depth(c, b, v.u.d->key[i], depth + 1);
            jb_puts(c, b, ": ");
            repr_depth(c, b, v.u.d->val[i], depth + 1);
        }
        jb_putc(c, b, '}');
        if (v.k == JV_NS) jb_putc(c, b, '>');
        return;
    case JV_FUNC: jb_puts(c, b, "<built-in function>"); return;
    case JV_MACRO: jb_puts(c, b, "<Macro>"); return;
    case JV_LOOP: jb_puts(c, b, "<LoopContext>"); return;
    default: str_depth(c, b, v, depth); return;
    }
}

void jv_str_to(jctx *c, jbuf *b, jv v) { str_depth(c, b, v, 0); }
void jv_repr_to(jctx *c, jbuf *b, jv v) { repr_depth(c, b, v, 0); }

jv jv_to_str(jctx *c, jv v)
{
    if (v.k == JV_STR) return v;
    if (v.k == JV_UNDEF) return jv_str("", 0);
    jbuf b = { 0 };
    jv_str_to(c, &b, v);
    return jb_value(&b);
}

/* ---- json.dumps ------------------------------------------------------------------------ */

static void json_str(jctx *c, jbuf *b, const char *s, size_t n, bool ascii)
{
    jb_putc(c, b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[16];
        if (ascii && ch >= 0x80) {   /* \\uXXXX, surrogate pairs beyond the BMP */
            jb_put(c, b, s + i - run, run);
            run = 0;
            uint32_t cp;
            int k = ju_next(s + i, n - i, &cp);
            i += (size_t)k - 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                jb_printf(c, b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                jb_printf(c, b, "\\u%04x", cp);
            }
            continue;
        }
        switch (ch) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (ch < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", ch);
                esc = tmp;
            }
        }
        if (esc) {
            jb_put(c, b, s + i - run, run);
            run = 0;
            jb_puts(c, b, esc);
        } else {
            run++;
        }
    }
    jb_put(c, b, s + n - run, run);
    jb_putc(c, b, '"');
}

static void json_indent(jctx *c, jbuf *b, const jjson_opts *o, int level)
{
    jb_putc(c, b, '\n');
    for (int i = 0; i < level; i++) jb_puts(c, b, o->indent);
}

static void json_key(jctx *c, int line, jbuf *b, jv k, bool ascii)
{
    char tmp[40];
    switch (k.k) {
    case JV_STR: json_str(c, b, k.u.s.p, k.u.s.n, ascii); return;
    case JV_NONE: jb_puts(c, b, "\"null\""); return;
    case JV_BOOL: jb_puts(c, b, k.u.b ? "\"true\"" : "\"false\""); return;
    case JV_INT: jb_printf(c, b, "\"%lld\"", (long long)k.u.i); return;
    case JV_FLOAT: jfloat_repr(k.u.f, tmp); jb_printf(c, b, "\"%s\"", tmp); return;
    default: jfail(c, JERR_RUNTIME, line, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
    }
}

static void json_depth(jctx *c, int line, jbuf *b, jv v, const jjson_opts *o, int level)
{
    if (level > 200) jfail(c, JERR_LIMIT, line, "values nest too deep for tojson");
    char tmp[40];
    switch (v.k) {
    case JV_NONE: jb_puts(c, b, "null"); return;
    case JV_BOOL: jb_puts(c, b, v.u.b ? "true" : "false"); return;
    case JV_INT: jb_printf(c, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT:
        if (isnan(v.u.f)) jb_puts(c, b, "NaN");
        else if (isinf(v.u.f)) jb_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { jfloat_repr(v.u.f, tmp); jb_puts(c, b, tmp); }
        return;
    case JV_STR: json_str(c, b, v.u.s.p, v.u.s.n, o->ensure_ascii); return;
    case JV_LIST: {
        const jlist *l = v.u.l;
        if (!l->n) { jb_puts(c, b, "[]"); return; }
        jb_putc(c, b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jb_puts(c, b, o->item_sep);
            if (o->indent) json_indent(c, b, o, level + 1);
            json_depth(c, line, b, l->v[i], o, level + 1);
        }
        if (o->indent) json_indent(c, b, o, level);
        jb_putc(c, b, ']');
        return;
    }
    case JV_DICT: {
        const jdict *d = v.u.d;
        if (!d->n) { jb_puts(c, b, "{}"); return; }
        size_t *order = jalloc(c, d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (o->sort_keys)   /* insertion sort: stable, and dicts here are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && jv_cmp(c, line, d->key[order[j]], d->key[order[j - 1]]) < 0; j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        jb_putc(c, b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) jb_puts(c, b, o->item_sep);
            if (o->indent) json_indent(c, b, o, level + 1);
            json_key(c, line, b, d->key[order[i]], o->ensure_ascii);
            jb_puts(c, b, o->key_sep);
            json_depth(c, line, b, d->val[order[i]], o, level + 1);
        }
        if (o->indent) json_indent(c, b, o, level);
        jb_putc(c, b, '}');
        return;
    }
    default:
        jfail(c, JERR_RUNTIME, line, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

void jv_json_to(jctx *c, int line, jbuf *b, jv v, const jjson_opts *o) { json_depth(c, line, b, v, o, 0); }
