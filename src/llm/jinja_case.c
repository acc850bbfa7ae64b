/* jinja_case.c — letter case for chat templates, as Python's str methods
 * do it on any Unicode text: upper() and lower() (full mappings, so "ß"
 * upper is "SS", and lower()'s final sigma: "Σ" at the end of a word is
 * "ς"), title() (after a cased letter lower, else title case),
 * capitalize(), islower(), isupper(), and jinja2's own title filter (words
 * start after "-", "(", "{", "[", "<" and white space). The tables are
 * jinja_case.h, generated from Python by tools/gen_case_tables.py. Bytes
 * that are not UTF-8 pass through unchanged. */
#include <string.h>
#include "jinja.h"
#include "jinja_case.h"

#define COUNT(t) (sizeof(t) / sizeof((t)[0]))

static uint32_t run_map(const jcase_run *t, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;   /* the last run starting at or before cp */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t[mid].lo <= cp) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return cp;
    const jcase_run *r = &t[lo - 1];
    if (cp > r->hi || (cp - r->lo) % r->stride) return cp;
    return (uint32_t)((int64_t)cp + r->delta);
}

static const jcase_multi *multi(const jcase_multi *t, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && t[lo].cp == cp ? &t[lo] : NULL;
}

static bool in_ranges(const uint32_t (*t)[2], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t[mid][1] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && t[lo][0] <= cp;
}

enum { UPPER, LOWER, TITLE };

/* cp's full mapping into out; the number of code points */
static int map_cp(int which, uint32_t cp, uint32_t out[3])
{
    const jcase_multi *m = which == UPPER ? multi(jcase_upper_multi, COUNT(jcase_upper_multi), cp)
                           : which == LOWER ? multi(jcase_lower_multi, COUNT(jcase_lower_multi), cp)
                                            : multi(jcase_title_multi, COUNT(jcase_title_multi), cp);
    if (m) {
        memcpy(out, m->to, m->n * sizeof *out);
        return m->n;
    }
    out[0] = which == UPPER ? run_map(jcase_upper, COUNT(jcase_upper), cp)
             : which == LOWER ? run_map(jcase_lower, COUNT(jcase_lower), cp)
                              : run_map(jcase_title, COUNT(jcase_title), cp);
    return 1;
}

static bool cased(uint32_t cp) { return in_ranges(jcase_cased, COUNT(jcase_cased), cp); }
static bool ignorable(uint32_t cp) { return in_ranges(jcase_ignorable, COUNT(jcase_ignorable), cp); }

/* a string's code points (with each one's bytes), in the arena */
typedef struct cps {
    uint32_t *cp;
    size_t n;
} cps;

static cps decode(jctx *c, jv s)
{
    cps d = { jalloc(c, (s.u.s.n + 1) * sizeof(uint32_t)), 0 };
    for (size_t i = 0; i < s.u.s.n;) {
        i += (size_t)ju_next(s.u.s.p + i, s.u.s.n - i, &d.cp[d.n]);
        d.n++;
    }
    return d;
}

static void put(jctx *c, jbuf *b, uint32_t cp)
{
    char u[4];
    jb_put(c, b, u, (size_t)ju_put(cp, u));
}

static void put_mapped(jctx *c, jbuf *b, int which, uint32_t cp)
{
    uint32_t out[3];
    int k = map_cp(which, cp, out);
    for (int i = 0; i < k; i++) put(c, b, out[i]);
}

/* lower() of d.cp[i], within d.cp[from, to): a capital sigma is final when a
   cased letter comes before it and none after (case-ignorables skipped) */
static void put_lower(jctx *c, jbuf *b, const cps *d, size_t i, size_t from, size_t to)
{
    if (d->cp[i] != 0x3A3) {
        put_mapped(c, b, LOWER, d->cp[i]);
        return;
    }
    size_t j = i;
    while (j > from && ignorable(d->cp[j - 1])) j--;
    bool final = j > from && cased(d->cp[j - 1]);
    if (final) {
        j = i + 1;
        while (j < to && ignorable(d->cp[j])) j++;
        final = j == to || !cased(d->cp[j]);
    }
    put(c, b, final ? 0x3C2 : 0x3C3);
}

static bool ascii(jv s)
{
    for (size_t i = 0; i < s.u.s.n; i++)
        if ((unsigned char)s.u.s.p[i] >= 0x80) return false;
    return true;
}

jv jstr_upper(jctx *c, jv s)
{
    jbuf b = { 0 };
    if (ascii(s)) {
        char *p = jalloc(c, s.u.s.n + 1);
        for (size_t i = 0; i < s.u.s.n; i++) p[i] = s.u.s.p[i] >= 'a' && s.u.s.p[i] <= 'z' ? (char)(s.u.s.p[i] - 32) : s.u.s.p[i];
        return jv_str(p, s.u.s.n);
    }
    cps d = decode(c, s);
    for (size_t i = 0; i < d.n; i++) put_mapped(c, &b, UPPER, d.cp[i]);
    return jb_value(&b);
}

jv jstr_lower(jctx *c, jv s)
{
    if (ascii(s)) {
        char *p = jalloc(c, s.u.s.n + 1);
        for (size_t i = 0; i < s.u.s.n; i++) p[i] = s.u.s.p[i] >= 'A' && s.u.s.p[i] <= 'Z' ? (char)(s.u.s.p[i] + 32) : s.u.s.p[i];
        return jv_str(p, s.u.s.n);
    }
    jbuf b = { 0 };
    cps d = decode(c, s);
    for (size_t i = 0; i < d.n; i++) put_lower(c, &b, &d, i, 0, d.n);
    return jb_value(&b);
}

jv jstr_title(jctx *c, jv s)
{
    jbuf b = { 0 };
    cps d = decode(c, s);
    bool prev = false;
    for (size_t i = 0; i < d.n; i++) {
        if (prev) put_lower(c, &b, &d, i, 0, d.n);
        else put_mapped(c, &b, TITLE, d.cp[i]);
        prev = cased(d.cp[i]);
    }
    return jb_value(&b);
}

jv jstr_capitalize(jctx *c, jv s)
{
    jbuf b = { 0 };
    cps d = decode(c, s);
    for (size_t i = 0; i < d.n; i++) {
        if (i) put_lower(c, &b, &d, i, 0, d.n);
        else put_mapped(c, &b, TITLE, d.cp[i]);
    }
    return jb_value(&b);
}

/* jinja2's title filter: "".join(w[0].upper() + w[1:].lower() for w in
   re.split(r"([-\s({\[<]+)", s) if w) */
jv jstr_jinja_title(jctx *c, jv s)
{
    jbuf b = { 0 };
    cps d = decode(c, s);
    for (size_t i = 0; i < d.n;) {
        uint32_t x = d.cp[i];
        bool sep = x == '-' || x == '(' || x == '{' || x == '[' || x == '<' || ju_isspace(x);
        size_t j = i;
        while (j < d.n) {   /* a run of separators, or of the rest */
            uint32_t y = d.cp[j];
            bool s2 = y == '-' || y == '(' || y == '{' || y == '[' || y == '<' || ju_isspace(y);
            if (s2 != sep) break;
            j++;
        }
        put_mapped(c, &b, UPPER, d.cp[i]);
        for (size_t k = i + 1; k < j; k++) put_lower(c, &b, &d, k, i + 1, j);
        i = j;
    }
    return jb_value(&b);
}

/* Python's str.islower (want_lower) / str.isupper */
bool jstr_iscase(jv s, bool want_lower)
{
    bool any = false;
    for (size_t i = 0; i < s.u.s.n;) {
        uint32_t cp;
        i += (size_t)ju_next(s.u.s.p + i, s.u.s.n - i, &cp);
        bool lo = in_ranges(jcase_is_lower, COUNT(jcase_is_lower), cp);
        bool up = in_ranges(jcase_is_upper, COUNT(jcase_is_upper), cp);
        bool ti = in_ranges(jcase_is_title, COUNT(jcase_is_title), cp);
        if (ti || (want_lower ? up : lo)) return false;
        if (want_lower ? lo : up) any = true;
    }
    return any;
}
