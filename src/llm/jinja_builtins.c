/* jinja_builtins.c — what a chat template can call: jinja2's filters and
 * tests, the methods of Python's str, list and dict that templates use
 * (strip, split, startswith, items, get, ...), the `loop` object, and the
 * globals jinja2 and transformers give (range, dict, namespace,
 * raise_exception, strftime_now). Each follows its Python original;
 * filters jinja2 has but no chat template needs (batch, groupby, urlize,
 * ...) are reported as unsupported when the template is parsed. Letter
 * case is jinja_case.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jinja.h"

/* ---- the tables ------------------------------------------------------------------ */

enum {
    F_ABS, F_ATTR, F_CAPITALIZE, F_CENTER, F_LENGTH, F_DEFAULT, F_DICTSORT, F_ESCAPE, F_FIRST, F_FLOAT,
    F_FORMAT, F_INDENT, F_INT, F_ITEMS, F_JOIN, F_LAST, F_LIST, F_LOWER, F_MAP, F_MAX, F_MIN, F_REJECT,
    F_REJECTATTR, F_REPLACE, F_REVERSE, F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR, F_SORT, F_STRING, F_SUM,
    F_TITLE, F_TOJSON, F_TRIM, F_UNIQUE, F_UPPER, F_WORDCOUNT,
};

static const struct { const char *name; int id; } filters[] = {
    { "abs", F_ABS }, { "attr", F_ATTR }, { "capitalize", F_CAPITALIZE }, { "center", F_CENTER },
    { "count", F_LENGTH }, { "length", F_LENGTH }, { "d", F_DEFAULT }, { "default", F_DEFAULT },
    { "dictsort", F_DICTSORT }, { "e", F_ESCAPE }, { "escape", F_ESCAPE }, { "forceescape", F_ESCAPE },
    { "first", F_FIRST }, { "float", F_FLOAT }, { "format", F_FORMAT }, { "indent", F_INDENT }, { "int", F_INT },
    { "items", F_ITEMS }, { "join", F_JOIN }, { "last", F_LAST }, { "list", F_LIST }, { "lower", F_LOWER },
    { "map", F_MAP }, { "max", F_MAX }, { "min", F_MIN }, { "reject", F_REJECT }, { "rejectattr", F_REJECTATTR },
    { "replace", F_REPLACE }, { "reverse", F_REVERSE }, { "round", F_ROUND }, { "safe", F_SAFE },
    { "select", F_SELECT }, { "selectattr", F_SELECTATTR }, { "sort", F_SORT }, { "string", F_STRING },
    { "sum", F_SUM }, { "title", F_TITLE }, { "tojson", F_TOJSON }, { "trim", F_TRIM }, { "unique", F_UNIQUE },
    { "upper", F_UPPER }, { "wordcount", F_WORDCOUNT },
};
/* jinja2's other filters: parsed, then refused by name */
static const char *const filters_unsupported[] = {
    "batch", "filesizeformat", "groupby", "pprint", "random", "slice", "striptags", "truncate",
    "urlencode", "urlize", "wordwrap", "xmlattr",
};

enum {
    T_ODD, T_EVEN, T_DIVISIBLEBY, T_DEFINED, T_UNDEFINED, T_FILTER, T_TEST, T_NONE, T_BOOLEAN, T_FALSE, T_TRUE,
    T_INTEGER, T_FLOAT, T_LOWER, T_UPPER, T_STRING, T_MAPPING, T_NUMBER, T_SEQUENCE, T_ITERABLE, T_CALLABLE,
    T_SAMEAS, T_ESCAPED, T_IN, T_EQ, T_NE, T_GT, T_GE, T_LT, T_LE,
};

static const struct { const char *name; int id; } tests[] = {
    { "odd", T_ODD }, { "even", T_EVEN }, { "divisibleby", T_DIVISIBLEBY }, { "defined", T_DEFINED },
    { "undefined", T_UNDEFINED }, { "filter", T_FILTER }, { "test", T_TEST }, { "none", T_NONE },
    { "boolean", T_BOOLEAN }, { "false", T_FALSE }, { "true", T_TRUE }, { "integer", T_INTEGER },
    { "float", T_FLOAT }, { "lower", T_LOWER }, { "upper", T_UPPER }, { "string", T_STRING },
    { "mapping", T_MAPPING }, { "number", T_NUMBER }, { "sequence", T_SEQUENCE }, { "iterable", T_ITERABLE },
    { "callable", T_CALLABLE }, { "sameas", T_SAMEAS }, { "escaped", T_ESCAPED }, { "in", T_IN },
    { "==", T_EQ }, { "eq", T_EQ }, { "equalto", T_EQ }, { "!=", T_NE }, { "ne", T_NE }, { ">", T_GT },
    { "gt", T_GT }, { "greaterthan", T_GT }, { ">=", T_GE }, { "ge", T_GE }, { "<", T_LT }, { "lt", T_LT },
    { "lessthan", T_LT }, { "<=", T_LE }, { "le", T_LE },
};

/* functions and methods (jv.fn) */
enum {
    JF_RANGE = 1, JF_DICT, JF_NAMESPACE, JF_RAISE, JF_STRFTIME, JF_UNSAFE,
    /* str */
    JF_S_STRIP, JF_S_LSTRIP, JF_S_RSTRIP, JF_S_SPLIT, JF_S_RSPLIT, JF_S_SPLITLINES, JF_S_STARTSWITH,
    JF_S_ENDSWITH, JF_S_UPPER, JF_S_LOWER, JF_S_TITLE, JF_S_CAPITALIZE, JF_S_REPLACE, JF_S_FIND, JF_S_RFIND,
    JF_S_INDEX, JF_S_COUNT, JF_S_JOIN, JF_S_ISSPACE, JF_S_ISDIGIT, JF_S_ISALPHA, JF_S_ISALNUM, JF_S_ISLOWER,
    JF_S_ISUPPER, JF_S_CASEFOLD,
    /* dict */
    JF_D_ITEMS, JF_D_KEYS, JF_D_VALUES, JF_D_GET,
    /* list */
    JF_L_INDEX, JF_L_COUNT,
    /* loop */
    JF_LOOP_CYCLE,
};

static const struct { const char *name; int id; } str_methods[] = {
    { "strip", JF_S_STRIP }, { "lstrip", JF_S_LSTRIP }, { "rstrip", JF_S_RSTRIP }, { "split", JF_S_SPLIT },
    { "rsplit", JF_S_RSPLIT }, { "splitlines", JF_S_SPLITLINES }, { "startswith", JF_S_STARTSWITH },
    { "endswith", JF_S_ENDSWITH }, { "upper", JF_S_UPPER }, { "lower", JF_S_LOWER }, { "title", JF_S_TITLE },
    { "capitalize", JF_S_CAPITALIZE }, { "replace", JF_S_REPLACE }, { "find", JF_S_FIND }, { "rfind", JF_S_RFIND },
    { "index", JF_S_INDEX }, { "count", JF_S_COUNT }, { "join", JF_S_JOIN }, { "isspace", JF_S_ISSPACE },
    { "isdigit", JF_S_ISDIGIT }, { "isalpha", JF_S_ISALPHA }, { "isalnum", JF_S_ISALNUM },
    { "islower", JF_S_ISLOWER }, { "isupper", JF_S_ISUPPER }, { "casefold", JF_S_CASEFOLD },
};

static const char *const dict_unsafe[] = { "clear", "copy", "fromkeys", "pop", "popitem", "setdefault", "update" };
static const char *const list_unsafe[] = { "append", "clear", "copy", "extend", "insert", "pop", "remove", "reverse", "sort" };

int jfilter_id(const char *name)
{
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (!strcmp(filters[i].name, name)) return filters[i].id;
    for (size_t i = 0; i < sizeof filters_unsupported / sizeof filters_unsupported[0]; i++)
        if (!strcmp(filters_unsupported[i], name)) return -2;
    return -1;
}

int jtest_id(const char *name)
{
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(tests[i].name, name)) return tests[i].id;
    return -1;
}

/* ---- arguments -------------------------------------------------------------------- */

typedef struct A {
    jrun *r;
    int line;
    const char *what;       /* "filter 'join'", "str.split", ... */
    int n, nkw;
    const jv *v, *kwv;
    const char *const *kwn;
} A;

/* Bind the call's arguments to params (positional, then by name); out[i]
 * is JV_UNDEF with u.s.p == NULL where not given. */
static void bind(const A *a, const char *const *params, int np, jv *out)
{
    jctx *c = &a->r->c;
    if (a->n > np) jfail(c, JERR_RUNTIME, a->line, "%s takes at most %d argument(s), got %d", a->what, np, a->n);
    for (int i = 0; i < np; i++) out[i] = jv_undef(NULL);
    for (int i = 0; i < a->n; i++) out[i] = a->v[i];
    for (int k = 0; k < a->nkw; k++) {
        int i;
        for (i = 0; i < np; i++)
            if (!strcmp(params[i], a->kwn[k])) break;
        if (i == np) jfail(c, JERR_RUNTIME, a->line, "%s got an unexpected keyword argument '%s'", a->what, a->kwn[k]);
        if (i < a->n) jfail(c, JERR_RUNTIME, a->line, "%s got multiple values for argument '%s'", a->what, a->kwn[k]);
        out[i] = a->kwv[k];
    }
}

static bool given(jv v) { return !(v.k == JV_UNDEF && v.u.s.p == NULL); }

_Noreturn static void type_error(const A *a, const char *want, jv got)
{
    jfail(&a->r->c, JERR_RUNTIME, a->line, "%s: expected %s, got %s", a->what, want, jv_type_name(got));
}

static jv need_str(const A *a, jv v)
{
    if (v.k == JV_UNDEF && v.u.s.p) jfail(&a->r->c, JERR_RUNTIME, a->line, "%s", v.u.s.p);
    if (v.k != JV_STR) type_error(a, "a string", v);
    return v;
}

static int64_t need_int(const A *a, jv v)
{
    if (v.k == JV_INT) return v.u.i;
    if (v.k == JV_BOOL) return v.u.b;
    type_error(a, "an integer", v);
}

/* ---- strings ------------------------------------------------------------------------ */

static bool alpha_c(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* does code point cp occur in chars (a UTF-8 string)? */
static bool in_chars(uint32_t cp, jv chars)
{
    for (size_t i = 0; i < chars.u.s.n;) {
        uint32_t x;
        i += (size_t)ju_next(chars.u.s.p + i, chars.u.s.n - i, &x);
        if (x == cp) return true;
    }
    return false;
}

static bool strip_hit(uint32_t cp, jv chars) { return chars.k == JV_STR ? in_chars(cp, chars) : ju_isspace(cp); }

/* Python's str.strip / lstrip / rstrip; chars: JV_STR or none for white space */
static jv strip(jv s, jv chars, bool left, bool right)
{
    const char *p = s.u.s.p;
    size_t a = 0, b = s.u.s.n;
    if (left)
        while (a < b) {
            uint32_t cp;
            int k = ju_next(p + a, b - a, &cp);
            if (!strip_hit(cp, chars)) break;
            a += (size_t)k;
        }
    if (right)
        while (b > a) {
            size_t q = b - 1;   /* the start of the last code point */
            while (q > a && ((unsigned char)p[q] & 0xC0) == 0x80 && b - q < 4) q--;
            uint32_t cp;
            int k = ju_next(p + q, b - q, &cp);
            if ((size_t)k != b - q) {   /* not one whole sequence: the last byte alone */
                q = b - 1;
                ju_next(p + q, 1, &cp);
            }
            if (!strip_hit(cp, chars)) break;
            b = q;
        }
    return jv_str(p + a, b - a);
}

static jv list_push(jctx *c, jv l, jv item)
{
    jlist *x = l.u.l;
    /* the list grows by doubling: capacity is the next power of two */
    size_t n = x->n, cap = 4;
    while (cap < n) cap *= 2;
    if (n == cap || n == 0) {
        size_t ncap = n == 0 ? 4 : cap * 2;
        x->v = jrealloc(c, x->v, (n == 0 ? 0 : cap) * sizeof(jv), ncap * sizeof(jv));
    }
    x->v[x->n++] = item;
    return l;
}

/* Python's str.split / rsplit */
static jv split(jctx *c, int line, jv s, jv sep, int64_t maxsplit, bool from_right)
{
    jv out = jv_list(c, 0, false);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n;
    if (sep.k == JV_STR) {
        if (!sep.u.s.n) jfail(c, JERR_RUNTIME, line, "empty separator");
        size_t m = sep.u.s.n;
        if (!from_right) {
            size_t i = 0;
            while (maxsplit < 0 || (int64_t)out.u.l->n < maxsplit) {
                const char *q = memmem(p + i, n - i, sep.u.s.p, m);
                if (!q) break;
                list_push(c, out, jv_str(p + i, (size_t)(q - (p + i))));
                i = (size_t)(q - p) + m;
            }
            list_push(c, out, jv_str(p + i, n - i));
            return out;
        }
        /* from the right: collect, then reverse */
        size_t end = n;
        while (maxsplit < 0 || (int64_t)out.u.l->n < maxsplit) {
            size_t k = end;
            bool hit = false;
            while (k >= m) {
                if (!memcmp(p + k - m, sep.u.s.p, m)) {
                    hit = true;
                    break;
                }
                k--;
            }
            if (!hit) break;
            list_push(c, out, jv_str(p + k, end - k));
            end = k - m;
        }
        list_push(c, out, jv_str(p, end));
        jlist *l = out.u.l;
        for (size_t i = 0; i < l->n / 2; i++) {
            jv t = l->v[i];
            l->v[i] = l->v[l->n - 1 - i];
            l->v[l->n - 1 - i] = t;
        }
        return out;
    }
    /* runs of white space, no empty strings */
    if (!from_right) {
        size_t i = 0;
        for (;;) {
            while (i < n) {
                uint32_t cp;
                int k = ju_next(p + i, n - i, &cp);
                if (!ju_isspace(cp)) break;
                i += (size_t)k;
            }
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)out.u.l->n >= maxsplit) {   /* the rest, as it is */
                list_push(c, out, jv_str(p + i, n - i));
                break;
            }
            size_t j = i;
            while (j < n) {
                uint32_t cp;
                int k = ju_next(p + j, n - j, &cp);
                if (ju_isspace(cp)) break;
                j += (size_t)k;
            }
            list_push(c, out, jv_str(p + i, j - i));
            i = j;
        }
        return out;
    }
    jv t = strip(s, jv_none(), false, true);
    size_t end = t.u.s.n;
    while (end > 0) {
        if (maxsplit >= 0 && (int64_t)out.u.l->n >= maxsplit) {   /* the rest, as it is */
            list_push(c, out, jv_str(p, end));
            break;
        }
        size_t k = end;   /* back over non-space */
        while (k > 0) {
            size_t q = k - 1;
            while (q > 0 && ((unsigned char)p[q] & 0xC0) == 0x80 && k - q < 4) q--;
            uint32_t cp;
            if ((size_t)ju_next(p + q, k - q, &cp) != k - q) q = k - 1, ju_next(p + q, 1, &cp);
            if (ju_isspace(cp)) break;
            k = q;
        }
        list_push(c, out, jv_str(p + k, end - k));
        jv before = strip(jv_str(p, k), jv_none(), false, true);
        end = before.u.s.n;
    }
    jlist *l = out.u.l;
    for (size_t i = 0; i < l->n / 2; i++) {
        jv x = l->v[i];
        l->v[i] = l->v[l->n - 1 - i];
        l->v[l->n - 1 - i] = x;
    }
    return out;
}

/* Python's str.splitlines */
static jv splitlines(jctx *c, jv s, bool keepends)
{
    jv out = jv_list(c, 0, false);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, start = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = ju_next(p + i, n - i, &cp);
        size_t eol = (size_t)k;
        bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
                   cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!brk) {
            i += (size_t)k;
            continue;
        }
        if (cp == '\r' && i + 1 < n && p[i + 1] == '\n') eol = 2;
        list_push(c, out, jv_str(p + start, (keepends ? i + eol : i) - start));
        i += eol;
        start = i;
    }
    if (start < n) list_push(c, out, jv_str(p + start, n - start));
    return out;
}

static jv str_replace(jctx *c, jv s, jv old, jv new_, int64_t count)
{
    jbuf b = { 0 };
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, i = 0;
    int64_t done = 0;
    if (!old.u.s.n) {   /* between every character, and at both ends */
        for (;;) {
            if (count >= 0 && done >= count) break;
            jb_put(c, &b, new_.u.s.p, new_.u.s.n);
            done++;
            if (i >= n) break;
            uint32_t cp;
            int k = ju_next(p + i, n - i, &cp);
            jb_put(c, &b, p + i, (size_t)k);
            i += (size_t)k;
        }
        jb_put(c, &b, p + i, n - i);
        return jb_value(&b);
    }
    while (count < 0 || done < count) {
        const char *q = memmem(p + i, n - i, old.u.s.p, old.u.s.n);
        if (!q) break;
        jb_put(c, &b, p + i, (size_t)(q - (p + i)));
        jb_put(c, &b, new_.u.s.p, new_.u.s.n);
        i = (size_t)(q - p) + old.u.s.n;
        done++;
    }
    jb_put(c, &b, p + i, n - i);
    return jb_value(&b);
}

/* Python's str.find (code point indices); from_right: rfind */
static int64_t str_find(jv s, jv sub, bool from_right)
{
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, m = sub.u.s.n;
    if (m > n) return -1;
    size_t at = SIZE_MAX;
    if (!from_right) {
        const char *q = m ? memmem(p, n, sub.u.s.p, m) : p;
        if (q) at = (size_t)(q - p);
    } else {
        for (size_t k = n - m + 1; k > 0; k--)
            if (!memcmp(p + k - 1, sub.u.s.p, m)) {
                at = k - 1;
                break;
            }
    }
    return at == SIZE_MAX ? -1 : (int64_t)ju_len(p, at);
}

static int64_t str_count(jv s, jv sub)
{
    if (!sub.u.s.n) return (int64_t)ju_len(s.u.s.p, s.u.s.n) + 1;
    int64_t k = 0;
    const char *p = s.u.s.p, *e = p + s.u.s.n;
    for (;;) {
        const char *q = memmem(p, (size_t)(e - p), sub.u.s.p, sub.u.s.n);
        if (!q) return k;
        k++;
        p = q + sub.u.s.n;
    }
}

static bool affix(const A *a, jv s, jv what, bool end)
{
    if (what.k == JV_LIST && what.tuple) {
        for (size_t i = 0; i < what.u.l->n; i++)
            if (affix(a, s, what.u.l->v[i], end)) return true;
        return false;
    }
    if (what.k != JV_STR) type_error(a, "a string or a tuple of strings", what);
    if (what.u.s.n > s.u.s.n) return false;
    return !memcmp(end ? s.u.s.p + s.u.s.n - what.u.s.n : s.u.s.p, what.u.s.p, what.u.s.n);
}

static jv join_items(const A *a, jlist *items, jv sep)
{
    jctx *c = &a->r->c;
    jbuf b = { 0 };
    for (size_t i = 0; i < items->n; i++) {
        if (i) jb_put(c, &b, sep.u.s.p, sep.u.s.n);
        jv_str_to(c, &b, items->v[i]);
    }
    return jb_value(&b);
}

/* ---- iteration ------------------------------------------------------------------------ */

jlist *jiter(jrun *r, int line, jv v)
{
    jctx *c = &r->c;
    switch (v.k) {
    case JV_LIST: return v.u.l;
    case JV_DICT: {
        jlist *l = jalloc(c, sizeof *l);
        l->n = v.u.d->n;
        l->v = v.u.d->key;
        return l;
    }
    case JV_STR: {
        size_t n = ju_len(v.u.s.p, v.u.s.n);
        jv out = jv_list(c, n, false);
        for (size_t i = 0, k = 0; k < n; k++) {
            uint32_t cp;
            int m = ju_next(v.u.s.p + i, v.u.s.n - i, &cp);
            out.u.l->v[k] = jv_str(v.u.s.p + i, (size_t)m);
            i += (size_t)m;
        }
        return out.u.l;
    }
    case JV_UNDEF: {
        jlist *l = jalloc(c, sizeof *l);
        return l;
    }
    default:
        jfail(c, JERR_RUNTIME, line, "'%s' object is not iterable", jv_type_name(v));
    }
}

/* ---- attributes ------------------------------------------------------------------------- */

static jv bound(jctx *c, int fn, jv self)
{
    jfunc *f = jalloc(c, sizeof *f);
    f->self = self;
    jv v = { .k = JV_FUNC, .fn = (uint16_t)fn };
    v.u.fn = f;
    return v;
}

static jv no_attr(jctx *c, jv obj, const char *name)
{
    char tmp[200];
    snprintf(tmp, sizeof tmp, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
    return jv_undef(jstrdup(c, tmp, strlen(tmp)));
}

static bool in_list(const char *name, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

jv jgetattr(jrun *r, int line, jv obj, const char *name)
{
    jctx *c = &r->c;
    (void)line;
    if (name[0] == '_') return no_attr(c, obj, name);   /* the sandbox hides these */
    switch (obj.k) {
    case JV_STR:
        for (size_t i = 0; i < sizeof str_methods / sizeof str_methods[0]; i++)
            if (!strcmp(str_methods[i].name, name)) return bound(c, str_methods[i].id, obj);
        break;
    case JV_DICT: {
        if (!strcmp(name, "items")) return bound(c, JF_D_ITEMS, obj);
        if (!strcmp(name, "keys")) return bound(c, JF_D_KEYS, obj);
        if (!strcmp(name, "values")) return bound(c, JF_D_VALUES, obj);
        if (!strcmp(name, "get")) return bound(c, JF_D_GET, obj);
        if (in_list(name, dict_unsafe, sizeof dict_unsafe / sizeof dict_unsafe[0])) return bound(c, JF_UNSAFE, obj);
        jv v;
        if (jdict_get_str(obj.u.d, name, strlen(name), &v)) return v;
        break;
    }
    case JV_NS: {
        jv v;
        if (jdict_get_str(obj.u.d, name, strlen(name), &v)) return v;
        break;
    }
    case JV_LIST:
        if (!strcmp(name, "index")) return bound(c, JF_L_INDEX, obj);
        if (!strcmp(name, "count")) return bound(c, JF_L_COUNT, obj);
        if (in_list(name, list_unsafe, sizeof list_unsafe / sizeof list_unsafe[0])) return bound(c, JF_UNSAFE, obj);
        break;
    case JV_LOOP: {
        const jloop *l = obj.u.loop;
        if (!strcmp(name, "index")) return jv_int(l->index0 + 1);
        if (!strcmp(name, "index0")) return jv_int(l->index0);
        if (!strcmp(name, "revindex")) return jv_int(l->length - l->index0);
        if (!strcmp(name, "revindex0")) return jv_int(l->length - l->index0 - 1);
        if (!strcmp(name, "first")) return jv_bool(l->index0 == 0);
        if (!strcmp(name, "last")) return jv_bool(l->index0 == l->length - 1);
        if (!strcmp(name, "length")) return jv_int(l->length);
        if (!strcmp(name, "depth")) return jv_int(1);
        if (!strcmp(name, "depth0")) return jv_int(0);
        if (!strcmp(name, "previtem"))
            return l->index0 > 0 ? l->items->v[l->index0 - 1] : jv_undef("there is no previous item");
        if (!strcmp(name, "nextitem"))
            return l->index0 + 1 < l->length ? l->items->v[l->index0 + 1] : jv_undef("there is no next item");
        if (!strcmp(name, "cycle")) return bound(c, JF_LOOP_CYCLE, obj);
        break;
    }
    default: break;
    }
    return no_attr(c, obj, name);
}

/* ---- sorting ------------------------------------------------------------------------------- */

typedef struct sortkey {
    jv key, item;
} sortkey;

static jv fold_key(jctx *c, jv v, bool case_sensitive)
{
    return !case_sensitive && v.k == JV_STR ? jstr_lower(c, v) : v;
}

/* a stable merge sort of keys (Python's sorted is stable) */
static void merge_sort(jrun *r, int line, sortkey *a, sortkey *tmp, size_t n)
{
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(r, line, a, tmp, h);
    merge_sort(r, line, a + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        jstep(&r->c, line);
        if (jv_cmp(&r->c, line, a[j].key, a[i].key) < 0) tmp[k++] = a[j++];
        else tmp[k++] = a[i++];
    }
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

static jv attr_path(jrun *r, int line, jv item, jv attribute);

static jv sorted(jrun *r, int line, jlist *items, bool reverse, bool case_sensitive, jv attribute, bool by_value_pairs)
{
    jctx *c = &r->c;
    size_t n = items->n;
    sortkey *k = jalloc(c, (n + 1) * sizeof *k), *tmp = jalloc(c, (n + 1) * sizeof *tmp);
    for (size_t i = 0; i < n; i++) {
        jv key = items->v[i];
        if (by_value_pairs) key = key.u.l->v[1];
        else if (given(attribute) && attribute.k != JV_NONE) key = attr_path(r, line, key, attribute);
        k[i].key = fold_key(c, key, case_sensitive);
        k[i].item = items->v[i];
    }
    if (reverse)   /* Python keeps equal items in order when reversing too */
        for (size_t i = 0; i < n / 2; i++) {
            sortkey t = k[i];
            k[i] = k[n - 1 - i];
            k[n - 1 - i] = t;
        }
    merge_sort(r, line, k, tmp, n);
    jv out = jv_list(c, n, false);
    for (size_t i = 0; i < n; i++) out.u.l->v[i] = k[reverse ? n - 1 - i : i].item;
    return out;
}

/* item.a.b for attribute "a.b" (numbers index lists), as jinja2's make_attrgetter */
static jv attr_path(jrun *r, int line, jv item, jv attribute)
{
    jctx *c = &r->c;
    if (attribute.k == JV_INT) {
        jv k = attribute;
        if (item.k == JV_LIST) {
            int64_t i = k.u.i, n = (int64_t)item.u.l->n;
            if (i < 0) i += n;
            return i >= 0 && i < n ? item.u.l->v[i] : jv_undef("no such element");
        }
        if (item.k == JV_DICT) {
            jv v;
            return jdict_get(item.u.d, k, &v) ? v : jv_undef("no such element");
        }
        return jv_undef("no such element");
    }
    if (attribute.k != JV_STR) jfail(c, JERR_RUNTIME, line, "an attribute name must be a string");
    const char *p = attribute.u.s.p, *e = p + attribute.u.s.n;
    while (p <= e) {
        const char *dot = memchr(p, '.', (size_t)(e - p));
        if (!dot) dot = e;
        char *part = jstrdup(c, p, (size_t)(dot - p));
        bool digits = *part != 0;
        for (const char *q = part; *q; q++) digits = digits && *q >= '0' && *q <= '9';
        if (item.k == JV_UNDEF) return item;
        if (digits && item.k == JV_LIST) {
            long long i = atoll(part);
            item = i < (long long)item.u.l->n ? item.u.l->v[i] : jv_undef("no such element");
        } else if (item.k == JV_DICT) {
            jv v;
            item = jdict_get_str(item.u.d, part, strlen(part), &v) ? v : jgetattr(r, line, item, part);
        } else {
            item = jgetattr(r, line, item, part);
        }
        p = dot + 1;
    }
    return item;
}

/* ---- filters -------------------------------------------------------------------------------- */

static jv escape_html(jctx *c, jv s)
{
    jbuf b = { 0 };
    for (size_t i = 0; i < s.u.s.n; i++) {
        char ch = s.u.s.p[i];
        switch (ch) {
        case '&': jb_puts(c, &b, "&amp;"); break;
        case '<': jb_puts(c, &b, "&lt;"); break;
        case '>': jb_puts(c, &b, "&gt;"); break;
        case '"': jb_puts(c, &b, "&#34;"); break;
        case '\'': jb_puts(c, &b, "&#39;"); break;
        default: jb_putc(c, &b, ch);
        }
    }
    return jb_value(&b);
}

/* Python's int(str, base) after strip; false when it is not one */
static bool parse_int(jv s, int base, int64_t *out)
{
    jv t = strip(s, jv_none(), true, true);
    const char *p = t.u.s.p;
    size_t n = t.u.s.n, i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-';
    if (base == 16 && i + 1 < n && p[i] == '0' && (p[i + 1] | 32) == 'x') i += 2;
    if (i >= n) return false;
    uint64_t v = 0;
    bool digit_before = false;
    for (; i < n; i++) {
        char ch = p[i];
        if (ch == '_' && digit_before && i + 1 < n && p[i + 1] != '_') continue;
        int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 32) >= 'a' && (ch | 32) <= 'z' ? (ch | 32) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base) return false;
        v = v * (unsigned)base + (unsigned)d;
        digit_before = true;
    }
    if (v > (uint64_t)INT64_MAX + neg) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* Python's float(str) */
static bool parse_float(jctx *c, jv s, double *out)
{
    jv t = strip(s, jv_none(), true, true);
    if (!t.u.s.n || t.u.s.n > 200) return false;
    char *buf = jalloc(c, t.u.s.n + 1), *w = buf;
    for (size_t i = 0; i < t.u.s.n; i++)
        if (t.u.s.p[i] != '_') *w++ = t.u.s.p[i];
    *w = 0;
    const char *q = buf;
    if (*q == '+' || *q == '-') q++;
    if (!strcasecmp(q, "inf") || !strcasecmp(q, "infinity") || !strcasecmp(q, "nan")) {
        *out = strtod(buf, NULL);
        return true;
    }
    for (const char *x = q; *x; x++)
        if (!((*x >= '0' && *x <= '9') || *x == '.' || *x == 'e' || *x == 'E' || *x == '+' || *x == '-')) return false;
    char *end;
    *out = strtod(buf, &end);
    return *end == 0 && end != buf;
}

/* Python's "%" formatting of a string with args (%s %r %d %i %f %x %%) */
static jv percent_format(const A *a, jv fmt, int nargs, const jv *args)
{
    jctx *c = &a->r->c;
    jbuf b = { 0 };
    int k = 0;
    const char *p = fmt.u.s.p, *e = p + fmt.u.s.n;
    while (p < e) {
        const char *q = memchr(p, '%', (size_t)(e - p));
        if (!q) {
            jb_put(c, &b, p, (size_t)(e - p));
            break;
        }
        jb_put(c, &b, p, (size_t)(q - p));
        p = q + 1;
        char spec[32] = "%";
        size_t sl = 1;
        while (p < e && *p && strchr("-+ #0123456789.", *p) && sl < sizeof spec - 3) spec[sl++] = *p++;
        if (p >= e) jfail(c, JERR_RUNTIME, a->line, "incomplete format");
        spec[sl] = 0;
        for (const char *x = spec + 1; *x; x++)   /* widths and precisions of at most 4 digits */
            if (*x >= '1' && *x <= '9' && strspn(x, "0123456789") > 4)
                jfail(c, JERR_LIMIT, a->line, "a format width or precision over 9999");
        char conv = *p++;
        if (conv == '%') {
            jb_putc(c, &b, '%');
            continue;
        }
        if (k >= nargs) jfail(c, JERR_RUNTIME, a->line, "not enough arguments for format string");
        jv v = args[k++];
        spec[sl] = 0;
        if (conv == 's' || conv == 'r') {
            jbuf t = { 0 };
            if (conv == 's') jv_str_to(c, &t, v);
            else jv_repr_to(c, &t, v);
            const bool left = strchr(spec, '-') != NULL;
            long width = 0;
            for (const char *x = spec + 1; *x && *x != '.'; x++)
                if (*x >= '0' && *x <= '9') width = width * 10 + (*x - '0');
            if (width > 100000) jfail(c, JERR_LIMIT, a->line, "format width %ld", width);
            size_t len = ju_len(t.p ? t.p : "", t.n);
            long pad = width > (long)len ? width - (long)len : 0;
            for (long i = 0; !left && i < pad; i++) jb_putc(c, &b, ' ');
            jb_put(c, &b, t.p ? t.p : "", t.n);
            for (long i = 0; left && i < pad; i++) jb_putc(c, &b, ' ');
        } else if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
            int64_t x;
            if (v.k == JV_FLOAT) x = (int64_t)v.u.f;
            else if (v.k == JV_INT || v.k == JV_BOOL) x = v.k == JV_BOOL ? v.u.b : v.u.i;
            else jfail(c, JERR_RUNTIME, a->line, "%%%c format: a number is required, not %s", conv, jv_type_name(v));
            char f[40];
            snprintf(f, sizeof f, "%sll%c", spec, conv == 'i' ? 'd' : conv);
            jb_printf(c, &b, f, (long long)x);
        } else if (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' || conv == 'G') {
            if (!jv_is_num(v)) jfail(c, JERR_RUNTIME, a->line, "must be real number, not %s", jv_type_name(v));
            double x = v.k == JV_FLOAT ? v.u.f : v.k == JV_BOOL ? v.u.b : (double)v.u.i;
            char f[40];
            snprintf(f, sizeof f, "%s%c", spec, conv);
            jb_printf(c, &b, f, x);
        } else {
            jfail(c, JERR_RUNTIME, a->line, "unsupported format character '%c'", conv);
        }
    }
    if (k < nargs) jfail(c, JERR_RUNTIME, a->line, "not all arguments converted during string formatting");
    return jb_value(&b);
}

static jv do_indent(const A *a, jv s, jv width, bool first, bool blank)
{
    jctx *c = &a->r->c;
    jv ind;
    if (width.k == JV_STR) ind = width;
    else {
        int64_t w = given(width) ? need_int(a, width) : 4;
        if (w < 0) w = 0;
        if (w > 4096) jfail(c, JERR_LIMIT, a->line, "indent width %lld", (long long)w);
        char *p = jalloc(c, (size_t)w + 1);
        memset(p, ' ', (size_t)w);
        ind = jv_str(p, (size_t)w);
    }
    jbuf t = { 0 };
    jb_put(c, &t, s.u.s.p, s.u.s.n);
    jb_putc(c, &t, '\n');
    jlist *lines = splitlines(c, jb_value(&t), false).u.l;
    jbuf b = { 0 };
    if (first) jb_put(c, &b, ind.u.s.p, ind.u.s.n);
    for (size_t i = 0; i < lines->n; i++) {
        jv ln = lines->v[i];
        if (i) {
            jb_putc(c, &b, '\n');
            if (blank || ln.u.s.n) jb_put(c, &b, ind.u.s.p, ind.u.s.n);
        }
        jb_put(c, &b, ln.u.s.p, ln.u.s.n);
    }
    return jb_value(&b);
}

static jv num_round(const A *a, jv v, int64_t prec, jv method)
{
    jctx *c = &a->r->c;
    const char *m = "common";
    if (given(method)) m = jstrdup(c, need_str(a, method).u.s.p, method.u.s.n);
    if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor"))
        jfail(c, JERR_RUNTIME, a->line, "method must be 'common', 'ceil' or 'floor'");
    if (!jv_is_num(v)) type_error(a, "a number", v);
    if (!strcmp(m, "common")) {
        if (v.k != JV_FLOAT) return jv_int(v.k == JV_BOOL ? v.u.b : v.u.i);
        if (prec < -300 || prec > 300 || !isfinite(v.u.f)) return v;
        if (prec < 0) {
            double p10 = pow(10, (double)-prec);
            return jv_float(nearbyint(v.u.f / p10) * p10);
        }
        char buf[700];
        snprintf(buf, sizeof buf, "%.*f", (int)prec, v.u.f);   /* correctly rounded, ties to even */
        return jv_float(strtod(buf, NULL));
    }
    double x = v.k == JV_FLOAT ? v.u.f : v.k == JV_BOOL ? v.u.b : (double)v.u.i, p10 = pow(10, (double)prec);
    return jv_float((!strcmp(m, "ceil") ? ceil(x * p10) : floor(x * p10)) / p10);
}

static bool run_test(jrun *r, int line, jv name, jv item, int nargs, const jv *args)
{
    if (name.k != JV_STR) jfail(&r->c, JERR_RUNTIME, line, "a test name must be a string");
    char *nm = jstrdup(&r->c, name.u.s.p, name.u.s.n);
    int id = jtest_id(nm);
    if (id < 0) jfail(&r->c, JERR_RUNTIME, line, "no test named '%s'", nm);
    return jtest_call(r, line, id, item, nargs, args);
}

/* select / reject / selectattr / rejectattr */
static jv select_items(const A *a, jv seq, bool by_attr, bool keep_if)
{
    jrun *r = a->r;
    jctx *c = &r->c;
    jlist *items = jiter(r, a->line, seq);
    int k = 0;
    jv attr = jv_none();
    if (by_attr) {
        if (a->n < 1) jfail(c, JERR_RUNTIME, a->line, "%s needs an attribute", a->what);
        attr = a->v[k++];
    }
    jv test = jv_none();
    if (k < a->n) test = a->v[k++];
    jv out = jv_list(c, 0, false);
    for (size_t i = 0; i < items->n; i++) {
        jstep(c, a->line);
        jv x = by_attr ? attr_path(r, a->line, items->v[i], attr) : items->v[i];
        bool t = test.k == JV_NONE ? jv_truthy(x) : run_test(r, a->line, test, x, a->n - k, a->v + k);
        if (t == keep_if) list_push(c, out, items->v[i]);
    }
    return out;
}

jv jfilter_call(jrun *r, int line, int id, jv v, int nargs, const jv *args, int nkw, const char *const *kwn,
                const jv *kwv)
{
    jctx *c = &r->c;
    const char *fname = "?";
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (filters[i].id == id) fname = filters[i].name;
    char what[64];
    snprintf(what, sizeof what, "filter '%s'", fname);
    A a = { .r = r, .line = line, .what = what, .n = nargs, .v = args, .nkw = nkw, .kwn = kwn, .kwv = kwv };
    jv p[6];
    switch (id) {
    case F_ABS:
        bind(&a, NULL, 0, p);
        if (v.k == JV_FLOAT) return jv_float(fabs(v.u.f));
        if (v.k == JV_INT || v.k == JV_BOOL) {
            int64_t x = v.k == JV_BOOL ? v.u.b : v.u.i;
            if (x == INT64_MIN) jfail(c, JERR_RUNTIME, line, "integer overflow");
            return jv_int(x < 0 ? -x : x);
        }
        type_error(&a, "a number", v);
    case F_ATTR: {
        static const char *const ps[] = { "name" };
        bind(&a, ps, 1, p);
        if (v.k == JV_UNDEF) return v;
        jv nm = need_str(&a, p[0]);
        return jgetattr(r, line, v, jstrdup(c, nm.u.s.p, nm.u.s.n));
    }
    case F_CAPITALIZE: bind(&a, NULL, 0, p); return jstr_capitalize(c, jv_to_str(c, v));
    case F_CENTER: {
        static const char *const ps[] = { "width" };
        bind(&a, ps, 1, p);
        jv s = jv_to_str(c, v);
        int64_t w = given(p[0]) ? need_int(&a, p[0]) : 80, len = (int64_t)ju_len(s.u.s.p, s.u.s.n);
        if (w > 100000) jfail(c, JERR_LIMIT, line, "center width %lld", (long long)w);
        if (w <= len) return s;
        int64_t pad = w - len, left = pad / 2 + (pad & w & 1);
        jbuf b = { 0 };
        for (int64_t i = 0; i < left; i++) jb_putc(c, &b, ' ');
        jb_put(c, &b, s.u.s.p, s.u.s.n);
        for (int64_t i = 0; i < pad - left; i++) jb_putc(c, &b, ' ');
        return jb_value(&b);
    }
    case F_LENGTH:
        bind(&a, NULL, 0, p);
        switch (v.k) {
        case JV_STR: return jv_int((int64_t)ju_len(v.u.s.p, v.u.s.n));
        case JV_LIST: return jv_int((int64_t)v.u.l->n);
        case JV_DICT: return jv_int((int64_t)v.u.d->n);
        case JV_UNDEF: return jv_int(0);
        case JV_LOOP: return jv_int(v.u.loop->length);
        default: jfail(c, JERR_RUNTIME, line, "object of type '%s' has no len()", jv_type_name(v));
        }
    case F_DEFAULT: {
        static const char *const ps[] = { "default_value", "boolean" };
        bind(&a, ps, 2, p);
        jv dflt = given(p[0]) ? p[0] : jv_str("", 0);
        bool boolean = given(p[1]) && jv_truthy(p[1]);
        if (v.k == JV_UNDEF || (boolean && !jv_truthy(v))) return dflt;
        return v;
    }
    case F_DICTSORT: {
        static const char *const ps[] = { "case_sensitive", "by", "reverse" };
        bind(&a, ps, 3, p);
        if (v.k != JV_DICT) type_error(&a, "a dict", v);
        bool by_value = false;
        if (given(p[1])) {
            jv by = need_str(&a, p[1]);
            if (by.u.s.n == 5 && !memcmp(by.u.s.p, "value", 5)) by_value = true;
            else if (!(by.u.s.n == 3 && !memcmp(by.u.s.p, "key", 3)))
                jfail(c, JERR_RUNTIME, line, "You can only sort by either \"key\" or \"value\"");
        }
        jv pairs = jv_list(c, v.u.d->n, false);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jv t = jv_list(c, 2, true);
            t.u.l->v[0] = v.u.d->key[i];
            t.u.l->v[1] = v.u.d->val[i];
            pairs.u.l->v[i] = t;
        }
        /* sort the pairs by key or by value */
        jlist *items = pairs.u.l;
        size_t n = items->n;
        sortkey *k = jalloc(c, (n + 1) * sizeof *k), *tmp = jalloc(c, (n + 1) * sizeof *tmp);
        const bool cs = given(p[0]) && jv_truthy(p[0]), rev = given(p[2]) && jv_truthy(p[2]);
        for (size_t i = 0; i < n; i++) {
            k[i].key = fold_key(c, items->v[i].u.l->v[by_value ? 1 : 0], cs);
            k[i].item = items->v[i];
        }
        if (rev)
            for (size_t i = 0; i < n / 2; i++) {
                sortkey t = k[i];
                k[i] = k[n - 1 - i];
                k[n - 1 - i] = t;
            }
        merge_sort(r, line, k, tmp, n);
        for (size_t i = 0; i < n; i++) items->v[i] = k[rev ? n - 1 - i : i].item;
        return pairs;
    }
    case F_ESCAPE: bind(&a, NULL, 0, p); return escape_html(c, jv_to_str(c, v));
    case F_FIRST: {
        bind(&a, NULL, 0, p);
        jlist *l = jiter(r, line, v);
        return l->n ? l->v[0] : jv_undef("No first item, sequence was empty.");
    }
    case F_LAST: {
        bind(&a, NULL, 0, p);
        jlist *l = jiter(r, line, v);
        return l->n ? l->v[l->n - 1] : jv_undef("No last item, sequence was empty.");
    }
    case F_FLOAT: {
        static const char *const ps[] = { "default" };
        bind(&a, ps, 1, p);
        jv dflt = given(p[0]) ? p[0] : jv_float(0.0);
        if (v.k == JV_FLOAT) return v;
        if (v.k == JV_INT || v.k == JV_BOOL) return jv_float(v.k == JV_BOOL ? v.u.b : (double)v.u.i);
        double f;
        if (v.k == JV_STR && parse_float(c, v, &f)) return jv_float(f);
        return dflt;
    }
    case F_FORMAT:
        if (nkw) jfail(c, JERR_RUNTIME, line, "the format filter takes positional arguments only here");
        return percent_format(&a, jv_to_str(c, v), nargs, args);
    case F_INDENT: {
        static const char *const ps[] = { "width", "first", "blank" };
        bind(&a, ps, 3, p);
        return do_indent(&a, jv_to_str(c, v), p[0], given(p[1]) && jv_truthy(p[1]), given(p[2]) && jv_truthy(p[2]));
    }
    case F_INT: {
        static const char *const ps[] = { "default", "base" };
        bind(&a, ps, 2, p);
        jv dflt = given(p[0]) ? p[0] : jv_int(0);
        int64_t base = given(p[1]) ? need_int(&a, p[1]) : 10;
        if (v.k == JV_INT) return v;
        if (v.k == JV_BOOL) return jv_int(v.u.b);
        if (v.k == JV_FLOAT) {
            if (!isfinite(v.u.f) || fabs(v.u.f) >= 9.2e18) return dflt;
            return jv_int((int64_t)v.u.f);
        }
        if (v.k == JV_STR) {
            int64_t x;
            if (base >= 2 && base <= 36 && parse_int(v, (int)base, &x)) return jv_int(x);
            double f;
            if (parse_float(c, v, &f) && isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
        }
        return dflt;
    }
    case F_ITEMS: {
        bind(&a, NULL, 0, p);
        if (v.k == JV_UNDEF) return jv_list(c, 0, false);
        if (v.k != JV_DICT) jfail(c, JERR_RUNTIME, line, "Can only get item pairs from a mapping.");
        jv out = jv_list(c, v.u.d->n, false);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jv t = jv_list(c, 2, true);
            t.u.l->v[0] = v.u.d->key[i];
            t.u.l->v[1] = v.u.d->val[i];
            out.u.l->v[i] = t;
        }
        return out;
    }
    case F_JOIN: {
        static const char *const ps[] = { "d", "attribute" };
        bind(&a, ps, 2, p);
        jv sep = given(p[0]) ? jv_to_str(c, p[0]) : jv_str("", 0);
        jlist *items = jiter(r, line, v);
        if (given(p[1]) && p[1].k != JV_NONE) {
            jv out = jv_list(c, items->n, false);
            for (size_t i = 0; i < items->n; i++) out.u.l->v[i] = attr_path(r, line, items->v[i], p[1]);
            items = out.u.l;
        }
        return join_items(&a, items, sep);
    }
    case F_LIST: {
        bind(&a, NULL, 0, p);
        jlist *l = jiter(r, line, v);
        jv out = jv_list(c, l->n, false);
        if (l->n) memcpy(out.u.l->v, l->v, l->n * sizeof(jv));
        return out;
    }
    case F_LOWER: bind(&a, NULL, 0, p); return jstr_lower(c, jv_to_str(c, v));
    case F_UPPER: bind(&a, NULL, 0, p); return jstr_upper(c, jv_to_str(c, v));
    case F_MAP: {
        jlist *items = jiter(r, line, v);
        jv out = jv_list(c, items->n, false);
        jv attr = jv_undef(NULL), dflt = jv_undef(NULL);
        for (int k = 0; k < nkw; k++) {
            if (!strcmp(kwn[k], "attribute")) attr = kwv[k];
            else if (!strcmp(kwn[k], "default")) dflt = kwv[k];
            else jfail(c, JERR_RUNTIME, line, "filter 'map' got an unexpected keyword argument '%s'", kwn[k]);
        }
        if (given(attr)) {
            if (nargs) jfail(c, JERR_RUNTIME, line, "filter 'map' takes no positional arguments with attribute=");
            for (size_t i = 0; i < items->n; i++) {
                jv x = attr_path(r, line, items->v[i], attr);
                out.u.l->v[i] = x.k == JV_UNDEF && given(dflt) ? dflt : x;
            }
            return out;
        }
        if (nargs < 1) jfail(c, JERR_RUNTIME, line, "filter 'map' needs a filter name or attribute=");
        jv fn = need_str(&a, args[0]);
        int fid = jfilter_id(jstrdup(c, fn.u.s.p, fn.u.s.n));
        if (fid < 0) jfail(c, JERR_RUNTIME, line, "no filter named '%.*s'", (int)fn.u.s.n, fn.u.s.p);
        for (size_t i = 0; i < items->n; i++) {
            jstep(c, line);
            out.u.l->v[i] = jfilter_call(r, line, fid, items->v[i], nargs - 1, args + 1, 0, NULL, NULL);
        }
        return out;
    }
    case F_MAX:
    case F_MIN: {
        static const char *const ps[] = { "case_sensitive", "attribute" };
        bind(&a, ps, 2, p);
        jlist *items = jiter(r, line, v);
        if (!items->n) return jv_undef("No aggregated item, sequence was empty.");
        const bool cs = given(p[0]) && jv_truthy(p[0]);
        jv best = items->v[0], bk = fold_key(c, given(p[1]) ? attr_path(r, line, best, p[1]) : best, cs);
        for (size_t i = 1; i < items->n; i++) {
            jv k = fold_key(c, given(p[1]) ? attr_path(r, line, items->v[i], p[1]) : items->v[i], cs);
            int cmp = jv_cmp(c, line, k, bk);
            if (id == F_MAX ? cmp > 0 : cmp < 0) {
                best = items->v[i];
                bk = k;
            }
        }
        return best;
    }
    case F_REJECT: return select_items(&a, v, false, false);
    case F_SELECT: return select_items(&a, v, false, true);
    case F_REJECTATTR: return select_items(&a, v, true, false);
    case F_SELECTATTR: return select_items(&a, v, true, true);
    case F_REPLACE: {
        static const char *const ps[] = { "old", "new", "count" };
        bind(&a, ps, 3, p);
        jv s = jv_to_str(c, v);
        jv old = jv_to_str(c, p[0]), nw = jv_to_str(c, p[1]);
        int64_t count = given(p[2]) && p[2].k != JV_NONE ? need_int(&a, p[2]) : -1;
        return str_replace(c, s, old, nw, count);
    }
    case F_REVERSE: {
        bind(&a, NULL, 0, p);
        if (v.k == JV_STR) {
            jlist *chars = jiter(r, line, v);
            size_t n = chars->n;
            jbuf b = { 0 };
            for (size_t i = n; i > 0; i--) jb_put(c, &b, chars->v[i - 1].u.s.p, chars->v[i - 1].u.s.n);
            return jb_value(&b);
        }
        jlist *l = jiter(r, line, v);
        jv out = jv_list(c, l->n, false);
        for (size_t i = 0; i < l->n; i++) out.u.l->v[i] = l->v[l->n - 1 - i];
        return out;
    }
    case F_ROUND: {
        static const char *const ps[] = { "precision", "method" };
        bind(&a, ps, 2, p);
        return num_round(&a, v, given(p[0]) ? need_int(&a, p[0]) : 0, p[1]);
    }
    case F_SAFE:
    case F_STRING: bind(&a, NULL, 0, p); return jv_to_str(c, v);
    case F_SORT: {
        static const char *const ps[] = { "reverse", "case_sensitive", "attribute" };
        bind(&a, ps, 3, p);
        return sorted(r, line, jiter(r, line, v), given(p[0]) && jv_truthy(p[0]), given(p[1]) && jv_truthy(p[1]), p[2],
                      false);
    }
    case F_SUM: {
        static const char *const ps[] = { "attribute", "start" };
        bind(&a, ps, 2, p);
        jv acc = given(p[1]) ? p[1] : jv_int(0);
        jlist *items = jiter(r, line, v);
        for (size_t i = 0; i < items->n; i++) {
            jv x = given(p[0]) && p[0].k != JV_NONE ? attr_path(r, line, items->v[i], p[0]) : items->v[i];
            if (!jv_is_num(acc) || !jv_is_num(x)) jfail(c, JERR_RUNTIME, line, "sum() of %s and %s", jv_type_name(acc), jv_type_name(x));
            if (acc.k != JV_FLOAT && x.k != JV_FLOAT) {
                int64_t s;
                if (__builtin_add_overflow(acc.k == JV_BOOL ? acc.u.b : acc.u.i, x.k == JV_BOOL ? x.u.b : x.u.i, &s))
                    jfail(c, JERR_RUNTIME, line, "integer overflow");
                acc = jv_int(s);
            } else {
                double f1 = acc.k == JV_FLOAT ? acc.u.f : acc.k == JV_BOOL ? acc.u.b : (double)acc.u.i;
                double f2 = x.k == JV_FLOAT ? x.u.f : x.k == JV_BOOL ? x.u.b : (double)x.u.i;
                acc = jv_float(f1 + f2);
            }
        }
        return acc;
    }
    case F_TITLE: bind(&a, NULL, 0, p); return jstr_jinja_title(c, jv_to_str(c, v));
    case F_TOJSON: {
        static const char *const ps[] = { "ensure_ascii", "indent", "separators", "sort_keys" };
        bind(&a, ps, 4, p);
        jjson_opts o = { .item_sep = ", ", .key_sep = ": " };
        o.ensure_ascii = given(p[0]) && jv_truthy(p[0]);
        if (given(p[1]) && p[1].k != JV_NONE) {
            if (p[1].k == JV_STR) {
                o.indent = jstrdup(c, p[1].u.s.p, p[1].u.s.n);
            } else {
                int64_t w = need_int(&a, p[1]);
                if (w < 0) w = 0;
                if (w > 1024) jfail(c, JERR_LIMIT, line, "tojson indent %lld", (long long)w);
                char *s = jalloc(c, (size_t)w + 1);
                memset(s, ' ', (size_t)w);
                o.indent = s;
            }
            o.item_sep = ",";
        }
        if (given(p[2]) && p[2].k != JV_NONE) {
            jv sp = p[2];
            if (sp.k != JV_LIST || sp.u.l->n != 2 || sp.u.l->v[0].k != JV_STR || sp.u.l->v[1].k != JV_STR)
                type_error(&a, "separators as (item_separator, key_separator)", sp);
            o.item_sep = jstrdup(c, sp.u.l->v[0].u.s.p, sp.u.l->v[0].u.s.n);
            o.key_sep = jstrdup(c, sp.u.l->v[1].u.s.p, sp.u.l->v[1].u.s.n);
        }
        o.sort_keys = given(p[3]) && jv_truthy(p[3]);
        jbuf b = { 0 };
        jv_json_to(c, line, &b, v, &o);
        return jb_value(&b);
    }
    case F_TRIM: {
        static const char *const ps[] = { "chars" };
        bind(&a, ps, 1, p);
        jv chars = given(p[0]) && p[0].k != JV_NONE ? need_str(&a, p[0]) : jv_none();
        return strip(jv_to_str(c, v), chars, true, true);
    }
    case F_UNIQUE: {
        static const char *const ps[] = { "case_sensitive", "attribute" };
        bind(&a, ps, 2, p);
        const bool cs = given(p[0]) && jv_truthy(p[0]);
        jlist *items = jiter(r, line, v);
        jv out = jv_list(c, 0, false), seen = jv_list(c, 0, false);
        for (size_t i = 0; i < items->n; i++) {
            jv k = fold_key(c, given(p[1]) ? attr_path(r, line, items->v[i], p[1]) : items->v[i], cs);
            bool dup = false;
            for (size_t j = 0; j < seen.u.l->n && !dup; j++) {
                jstep(c, line);
                dup = jv_eq(c, seen.u.l->v[j], k);
            }
            if (!dup) {
                list_push(c, seen, k);
                list_push(c, out, items->v[i]);
            }
        }
        return out;
    }
    case F_WORDCOUNT: {
        bind(&a, NULL, 0, p);
        jv s = jv_to_str(c, v);
        int64_t n = 0;
        bool in = false;
        for (size_t i = 0; i < s.u.s.n; i++) {
            unsigned char ch = (unsigned char)s.u.s.p[i];
            bool w = alpha_c((char)ch) || (ch >= '0' && ch <= '9') || ch == '_' || ch >= 0x80;
            if (w && !in) n++;
            in = w;
        }
        return jv_int(n);
    }
    default:
        jfail(c, JERR_RUNTIME, line, "unknown filter");
    }
}

/* ---- tests -------------------------------------------------------------------------------------- */

bool jtest_call(jrun *r, int line, int id, jv v, int nargs, const jv *args)
{
    jctx *c = &r->c;
    int want = id == T_DIVISIBLEBY || id == T_SAMEAS || id == T_IN || id >= T_EQ ? 1 : 0;
    if (nargs != want) jfail(c, JERR_RUNTIME, line, "this test takes %d argument(s), got %d", want, nargs);
    jv o = nargs ? args[0] : jv_none();
    switch (id) {
    case T_ODD:
    case T_EVEN:
        if (v.k != JV_INT && v.k != JV_BOOL) jfail(c, JERR_RUNTIME, line, "odd and even need an integer, not %s", jv_type_name(v));
        return (((v.k == JV_BOOL ? v.u.b : v.u.i) % 2) != 0) == (id == T_ODD);
    case T_DIVISIBLEBY: {
        if (!jv_is_num(v) || !jv_is_num(o)) jfail(c, JERR_RUNTIME, line, "divisibleby needs numbers");
        if (v.k != JV_FLOAT && o.k != JV_FLOAT) {
            int64_t x = v.k == JV_BOOL ? v.u.b : v.u.i, y = o.k == JV_BOOL ? o.u.b : o.u.i;
            if (y == 0) jfail(c, JERR_RUNTIME, line, "integer division or modulo by zero");
            return y == -1 || x % y == 0;
        }
        double x = v.k == JV_FLOAT ? v.u.f : (double)(v.k == JV_BOOL ? v.u.b : v.u.i);
        double y = o.k == JV_FLOAT ? o.u.f : (double)(o.k == JV_BOOL ? o.u.b : o.u.i);
        if (y == 0) jfail(c, JERR_RUNTIME, line, "float modulo");
        return fmod(x, y) == 0;
    }
    case T_DEFINED: return v.k != JV_UNDEF;
    case T_UNDEFINED: return v.k == JV_UNDEF;
    case T_FILTER: return v.k == JV_STR && jfilter_id(jstrdup(c, v.u.s.p, v.u.s.n)) >= 0;
    case T_TEST: return v.k == JV_STR && jtest_id(jstrdup(c, v.u.s.p, v.u.s.n)) >= 0;
    case T_NONE: return v.k == JV_NONE;
    case T_BOOLEAN: return v.k == JV_BOOL;
    case T_FALSE: return v.k == JV_BOOL && !v.u.b;
    case T_TRUE: return v.k == JV_BOOL && v.u.b;
    case T_INTEGER: return v.k == JV_INT;
    case T_FLOAT: return v.k == JV_FLOAT;
    case T_LOWER:
    case T_UPPER: return jstr_iscase(jv_to_str(c, v), id == T_LOWER);
    case T_STRING: return v.k == JV_STR;
    case T_MAPPING: return v.k == JV_DICT;
    case T_NUMBER: return jv_is_num(v);
    case T_SEQUENCE: return v.k == JV_STR || v.k == JV_LIST || v.k == JV_DICT || v.k == JV_UNDEF;
    case T_ITERABLE: return v.k == JV_STR || v.k == JV_LIST || v.k == JV_DICT || v.k == JV_UNDEF;
    case T_CALLABLE: return v.k == JV_FUNC || v.k == JV_MACRO;
    case T_SAMEAS:
        if (v.k != o.k) return false;
        switch (v.k) {
        case JV_NONE: case JV_UNDEF: return true;
        case JV_BOOL: return v.u.b == o.u.b;
        case JV_INT: return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256;   /* CPython's small ints */
        case JV_FLOAT: return false;
        case JV_STR: return v.u.s.p == o.u.s.p && v.u.s.n == o.u.s.n;
        case JV_LIST: return v.u.l == o.u.l;
        case JV_DICT: case JV_NS: return v.u.d == o.u.d;
        default: return jv_eq(c, v, o);
        }
    case T_ESCAPED: return false;
    case T_IN: {
        switch (o.k) {
        case JV_STR:
            if (v.k != JV_STR) jfail(c, JERR_RUNTIME, line, "'in <string>' requires string as left operand");
            return !v.u.s.n || memmem(o.u.s.p, o.u.s.n, v.u.s.p, v.u.s.n) != NULL;
        case JV_LIST:
            for (size_t i = 0; i < o.u.l->n; i++)
                if (jv_eq(c, o.u.l->v[i], v)) return true;
            return false;
        case JV_DICT: {
            jv x;
            return jdict_get(o.u.d, v, &x);
        }
        case JV_UNDEF: return false;
        default: jfail(c, JERR_RUNTIME, line, "argument of type '%s' is not iterable", jv_type_name(o));
        }
    }
    case T_EQ: return jv_eq(c, v, o);
    case T_NE: return !jv_eq(c, v, o);
    default: {
        if (v.k == JV_UNDEF || o.k == JV_UNDEF)
            jfail(c, JERR_RUNTIME, line, "%s", (v.k == JV_UNDEF ? v : o).u.s.p ? (v.k == JV_UNDEF ? v : o).u.s.p : "undefined");
        if (!((jv_is_num(v) && jv_is_num(o)) || (v.k == JV_STR && o.k == JV_STR) || (v.k == JV_LIST && o.k == JV_LIST)))
            jfail(c, JERR_RUNTIME, line, "comparison not supported between instances of '%s' and '%s'", jv_type_name(v),
                  jv_type_name(o));
        int k = jv_cmp(c, line, v, o);
        if (k == 2) return false;
        return id == T_GT ? k > 0 : id == T_GE ? k >= 0 : id == T_LT ? k < 0 : k <= 0;
    }
    }
}

/* ---- functions and methods ---------------------------------------------------------------------- */

static jv make_namespace(const A *a)
{
    jctx *c = &a->r->c;
    jv ns = jv_dict(c, 4);
    ns.k = JV_NS;
    for (int i = 0; i < a->n; i++) {
        jv m = a->v[i];
        if (m.k == JV_NS || m.k == JV_DICT) {
            for (size_t k = 0; k < m.u.d->n; k++) jdict_set(c, ns.u.d, m.u.d->key[k], m.u.d->val[k]);
        } else if (m.k == JV_LIST) {
            for (size_t k = 0; k < m.u.l->n; k++) {
                jv pr = m.u.l->v[k];
                if (pr.k != JV_LIST || pr.u.l->n != 2) jfail(c, JERR_RUNTIME, a->line, "%s: expected key/value pairs", a->what);
                jdict_set(c, ns.u.d, pr.u.l->v[0], pr.u.l->v[1]);
            }
        } else {
            type_error(a, "a mapping", m);
        }
        if (i > 0) jfail(c, JERR_RUNTIME, a->line, "%s expected at most 1 positional argument", a->what);
    }
    for (int k = 0; k < a->nkw; k++) jdict_set(c, ns.u.d, jv_cstr(a->kwn[k]), a->kwv[k]);
    for (size_t k = 0; k < ns.u.d->n; k++)
        if (ns.u.d->key[k].k == JV_STR && ns.u.d->key[k].u.s.n && ns.u.d->key[k].u.s.p[0] == '_')
            jfail(c, JERR_RUNTIME, a->line, "chat templates cannot store underscore-prefixed attributes on a namespace");
    return ns;
}

static jv do_strftime(const A *a, jv fmt)
{
    jctx *c = &a->r->c;
    need_str(a, fmt);
    if (fmt.u.s.n > 1000) jfail(c, JERR_LIMIT, a->line, "a strftime format longer than 1000 bytes");
    char *f = jstrdup(c, fmt.u.s.p, fmt.u.s.n);
    struct tm tm;
    time_t now = a->r->now ? a->r->now : time(NULL);
    if (!localtime_r(&now, &tm)) jfail(c, JERR_RUNTIME, a->line, "strftime_now: no local time");
    if (!fmt.u.s.n) return jv_str("", 0);
    for (size_t cap = 256; cap <= 65536; cap *= 4) {
        char *out = jalloc(c, cap);
        size_t n = strftime(out, cap, f, &tm);
        if (n) return jv_str(out, n);
    }
    return jv_str("", 0);
}

static jv dict_pairs(jctx *c, jv d, int which)   /* 0 items, 1 keys, 2 values */
{
    jv out = jv_list(c, d.u.d->n, false);
    for (size_t i = 0; i < d.u.d->n; i++) {
        if (which == 1) out.u.l->v[i] = d.u.d->key[i];
        else if (which == 2) out.u.l->v[i] = d.u.d->val[i];
        else {
            jv t = jv_list(c, 2, true);
            t.u.l->v[0] = d.u.d->key[i];
            t.u.l->v[1] = d.u.d->val[i];
            out.u.l->v[i] = t;
        }
    }
    return out;
}

static bool str_all(jv s, int kind)   /* isspace, isdigit, isalpha, isalnum (ASCII letters; Unicode space) */
{
    if (!s.u.s.n) return false;
    for (size_t i = 0; i < s.u.s.n;) {
        uint32_t cp;
        int k = ju_next(s.u.s.p + i, s.u.s.n - i, &cp);
        bool ok;
        if (kind == 0) ok = ju_isspace(cp);
        else if (kind == 1) ok = cp >= '0' && cp <= '9';
        else if (kind == 2) ok = cp < 0x80 ? alpha_c((char)cp) : !ju_isspace(cp);
        else ok = cp < 0x80 ? alpha_c((char)cp) || (cp >= '0' && cp <= '9') : !ju_isspace(cp);
        if (!ok) return false;
        i += (size_t)k;
    }
    return true;
}

jv jfunc_call(jrun *r, int line, jv f, int nargs, const jv *args, int nkw, const char *const *kwn, const jv *kwv)
{
    jctx *c = &r->c;
    jv self = f.u.fn ? f.u.fn->self : jv_none();
    char what[64];
    snprintf(what, sizeof what, "%s", f.fn == JF_RANGE ? "range" : f.fn == JF_NAMESPACE ? "namespace" : f.fn == JF_DICT ? "dict"
                                      : f.fn == JF_RAISE ? "raise_exception" : f.fn == JF_STRFTIME ? "strftime_now" : "a method");
    A a = { .r = r, .line = line, .what = what, .n = nargs, .v = args, .nkw = nkw, .kwn = kwn, .kwv = kwv };
    jv p[4];
    switch (f.fn) {
    case JF_RANGE: {
        if (nkw) jfail(c, JERR_RUNTIME, line, "range takes no keyword arguments");
        if (nargs < 1 || nargs > 3) jfail(c, JERR_RUNTIME, line, "range expected 1 to 3 arguments, got %d", nargs);
        int64_t start = 0, stop, step = 1;
        if (nargs == 1) stop = need_int(&a, args[0]);
        else {
            start = need_int(&a, args[0]);
            stop = need_int(&a, args[1]);
            if (nargs == 3) step = need_int(&a, args[2]);
        }
        if (step == 0) jfail(c, JERR_RUNTIME, line, "range() arg 3 must not be zero");
        int64_t n = 0;
        if (step > 0 && stop > start) n = (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1);
        else if (step < 0 && stop < start) n = (int64_t)(((uint64_t)start - (uint64_t)stop - 1) / ((uint64_t)0 - (uint64_t)step) + 1);
        if (n > 100000) jfail(c, JERR_LIMIT, line, "range too big: at most 100000 items (the sandbox's limit)");
        jv out = jv_list(c, (size_t)n, false);
        for (int64_t i = 0; i < n; i++) out.u.l->v[i] = jv_int(start + i * step);
        return out;
    }
    case JF_DICT: {
        jv d = make_namespace(&a);
        d.k = JV_DICT;
        return d;
    }
    case JF_NAMESPACE: return make_namespace(&a);
    case JF_RAISE: {
        static const char *const ps[] = { "message" };
        bind(&a, ps, 1, p);
        jv msg = jv_to_str(c, p[0]);
        jfail(c, JERR_RAISED, 0, "%.*s", (int)(msg.u.s.n > 500 ? 500 : msg.u.s.n), msg.u.s.p);
    }
    case JF_STRFTIME: {
        static const char *const ps[] = { "format" };
        bind(&a, ps, 1, p);
        return do_strftime(&a, p[0]);
    }
    case JF_UNSAFE:
        jfail(c, JERR_RUNTIME, line, "access to a method that changes a %s is unsafe (templates cannot change lists or dicts)",
              jv_type_name(self));
    case JF_S_STRIP:
    case JF_S_LSTRIP:
    case JF_S_RSTRIP: {
        static const char *const ps[] = { "chars" };
        bind(&a, ps, 1, p);
        jv chars = given(p[0]) && p[0].k != JV_NONE ? need_str(&a, p[0]) : jv_none();
        return strip(self, chars, f.fn != JF_S_RSTRIP, f.fn != JF_S_LSTRIP);
    }
    case JF_S_SPLIT:
    case JF_S_RSPLIT: {
        static const char *const ps[] = { "sep", "maxsplit" };
        bind(&a, ps, 2, p);
        jv sep = given(p[0]) && p[0].k != JV_NONE ? need_str(&a, p[0]) : jv_none();
        int64_t maxsplit = given(p[1]) ? need_int(&a, p[1]) : -1;
        return split(c, line, self, sep, maxsplit, f.fn == JF_S_RSPLIT);
    }
    case JF_S_SPLITLINES: {
        static const char *const ps[] = { "keepends" };
        bind(&a, ps, 1, p);
        return splitlines(c, self, given(p[0]) && jv_truthy(p[0]));
    }
    case JF_S_STARTSWITH:
    case JF_S_ENDSWITH: {
        static const char *const ps[] = { "prefix" };
        bind(&a, ps, 1, p);
        return jv_bool(affix(&a, self, p[0], f.fn == JF_S_ENDSWITH));
    }
    case JF_S_UPPER: bind(&a, NULL, 0, p); return jstr_upper(c, self);
    case JF_S_LOWER:
    case JF_S_CASEFOLD: bind(&a, NULL, 0, p); return jstr_lower(c, self);
    case JF_S_TITLE: bind(&a, NULL, 0, p); return jstr_title(c, self);
    case JF_S_CAPITALIZE: bind(&a, NULL, 0, p); return jstr_capitalize(c, self);
    case JF_S_REPLACE: {
        static const char *const ps[] = { "old", "new", "count" };
        bind(&a, ps, 3, p);
        int64_t count = given(p[2]) ? need_int(&a, p[2]) : -1;
        return str_replace(c, self, need_str(&a, p[0]), need_str(&a, p[1]), count);
    }
    case JF_S_FIND:
    case JF_S_RFIND:
    case JF_S_INDEX: {
        static const char *const ps[] = { "sub" };
        bind(&a, ps, 1, p);
        int64_t k = str_find(self, need_str(&a, p[0]), f.fn == JF_S_RFIND);
        if (k < 0 && f.fn == JF_S_INDEX) jfail(c, JERR_RUNTIME, line, "substring not found");
        return jv_int(k);
    }
    case JF_S_COUNT: {
        static const char *const ps[] = { "sub" };
        bind(&a, ps, 1, p);
        return jv_int(str_count(self, need_str(&a, p[0])));
    }
    case JF_S_JOIN: {
        static const char *const ps[] = { "iterable" };
        bind(&a, ps, 1, p);
        jlist *items = jiter(r, line, p[0]);
        for (size_t i = 0; i < items->n; i++)
            if (items->v[i].k != JV_STR)
                jfail(c, JERR_RUNTIME, line, "sequence item %zu: expected str instance, %s found", i, jv_type_name(items->v[i]));
        return join_items(&a, items, self);
    }
    case JF_S_ISSPACE: bind(&a, NULL, 0, p); return jv_bool(str_all(self, 0));
    case JF_S_ISDIGIT: bind(&a, NULL, 0, p); return jv_bool(str_all(self, 1));
    case JF_S_ISALPHA: bind(&a, NULL, 0, p); return jv_bool(str_all(self, 2));
    case JF_S_ISALNUM: bind(&a, NULL, 0, p); return jv_bool(str_all(self, 3));
    case JF_S_ISLOWER: bind(&a, NULL, 0, p); return jv_bool(jtest_call(r, line, T_LOWER, self, 0, NULL));
    case JF_S_ISUPPER: bind(&a, NULL, 0, p); return jv_bool(jtest_call(r, line, T_UPPER, self, 0, NULL));
    case JF_D_ITEMS: bind(&a, NULL, 0, p); return dict_pairs(c, self, 0);
    case JF_D_KEYS: bind(&a, NULL, 0, p); return dict_pairs(c, self, 1);
    case JF_D_VALUES: bind(&a, NULL, 0, p); return dict_pairs(c, self, 2);
    case JF_D_GET: {
        static const char *const ps[] = { "key", "default" };
        bind(&a, ps, 2, p);
        jv v;
        if (jdict_get(self.u.d, p[0], &v)) return v;
        return given(p[1]) ? p[1] : jv_none();
    }
    case JF_L_INDEX:
    case JF_L_COUNT: {
        static const char *const ps[] = { "value" };
        bind(&a, ps, 1, p);
        int64_t k = 0;
        for (size_t i = 0; i < self.u.l->n; i++)
            if (jv_eq(c, self.u.l->v[i], p[0])) {
                if (f.fn == JF_L_INDEX) return jv_int((int64_t)i);
                k++;
            }
        if (f.fn == JF_L_INDEX) jfail(c, JERR_RUNTIME, line, "list.index(x): x not in list");
        return jv_int(k);
    }
    case JF_LOOP_CYCLE:
        if (nkw) jfail(c, JERR_RUNTIME, line, "loop.cycle takes positional arguments only");
        if (!nargs) jfail(c, JERR_RUNTIME, line, "no items for cycling given");
        return args[self.u.loop->index0 % nargs];
    default:
        jfail(c, JERR_RUNTIME, line, "this function cannot be called");
    }
}

void jglobals_add(jrun *r, jscope *s)
{
    static const struct { const char *name; int fn; } g[] = {
        { "range", JF_RANGE }, { "dict", JF_DICT }, { "namespace", JF_NAMESPACE },
        { "raise_exception", JF_RAISE }, { "strftime_now", JF_STRFTIME },
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        jv v = { .k = JV_FUNC, .fn = (uint16_t)g[i].fn };
        v.u.fn = NULL;
        jscope_set(&r->c, s, g[i].name, v);
    }
}
