/* jinja_eval.c — runs a parsed chat template (jinja.h's tree) the way
 * jinja2 does: Python's operators and truthiness on the values, jinja2's
 * scoping (a for loop's body gets a fresh scope each iteration, so a
 * `set` inside it does not outlive the iteration; namespace() objects are
 * how templates carry state out of loops; if blocks share their scope; a
 * macro sees the scope it was defined in, as it is when called), Undefined
 * for missing names, attributes and items (printing nothing, false, and an
 * error as soon as anything reads into it), and the output as str() of
 * every {{ }}. Steps, depth and output are bounded (jinja.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jinja.h"

enum { GO = 0, BRK, CONT };

/* ---- scopes ------------------------------------------------------------------------ */

jscope *jscope_new(jctx *c, jscope *up)
{
    jscope *s = jalloc(c, sizeof *s);
    s->up = up;
    return s;
}

static int scope_find(const jscope *s, const char *name)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (!strcmp(s->names[i], name)) return i;
    return -1;
}

jv jscope_get(const jscope *s, const char *name, bool *found)
{
    for (; s; s = s->up) {
        int i = scope_find(s, name);
        if (i >= 0) {
            if (found) *found = true;
            return s->vals[i];
        }
    }
    if (found) *found = false;
    return jv_undef(NULL);
}

void jscope_set(jctx *c, jscope *s, const char *name, jv v)
{
    int i = scope_find(s, name);
    if (i >= 0) {
        s->vals[i] = v;
        return;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 4;
        s->names = jrealloc(c, s->names, (size_t)s->cap * sizeof *s->names, (size_t)cap * sizeof *s->names);
        s->vals = jrealloc(c, s->vals, (size_t)s->cap * sizeof *s->vals, (size_t)cap * sizeof *s->vals);
        s->cap = cap;
    }
    s->names[s->n] = name;
    s->vals[s->n++] = v;
}

/* ---- helpers ------------------------------------------------------------------------- */

static jv undef_fmt(jctx *c, const char *fmt, const char *a, const char *b)
{
    char tmp[200];
    snprintf(tmp, sizeof tmp, fmt, a, b);
    return jv_undef(jstrdup(c, tmp, strlen(tmp)));
}

_Noreturn static void undefined_error(jctx *c, int line, jv u)
{
    jfail(c, JERR_RUNTIME, line, "%s", u.u.s.p ? u.u.s.p : "a value is undefined");
}

static jv eval(jrun *r, const jnode *n, jscope *s);
static int exec(jrun *r, const jnode *n, jscope *s);

static void out_value(jrun *r, jv v) { jv_str_to(&r->c, r->out, v); }

/* the output of body, as a string */
static jv capture(jrun *r, const jnode *body, jscope *s)
{
    jbuf b = { .max = r->out->max }, *saved = r->out;
    r->out = &b;
    exec(r, body, s);
    r->out = saved;
    return jb_value(&b);
}

/* ---- items and attributes ----------------------------------------------------------- */

static int64_t as_index(jv v) { return v.k == JV_BOOL ? v.u.b : v.u.i; }

/* Python's slice.indices for a sequence of length len */
static void slice_indices(jctx *c, int line, jv start, jv stop, jv step, int64_t len, int64_t *o_start, int64_t *o_stop,
                          int64_t *o_step)
{
    int64_t st = 1;
    if (step.k != JV_NONE && step.k != JV_UNDEF) {
        if (step.k != JV_INT && step.k != JV_BOOL) jfail(c, JERR_RUNTIME, line, "slice indices must be integers or None");
        st = as_index(step);
        if (st == 0) jfail(c, JERR_RUNTIME, line, "slice step cannot be zero");
    }
    int64_t lo, hi;
    if (st > 0) lo = 0, hi = len;
    else lo = -1, hi = len - 1;
    int64_t a = st > 0 ? lo : hi, b = st > 0 ? hi : lo;
    jv ends[2] = { start, stop };
    int64_t *outs[2] = { &a, &b };
    for (int k = 0; k < 2; k++) {
        jv e = ends[k];
        if (e.k == JV_NONE || e.k == JV_UNDEF) continue;
        if (e.k != JV_INT && e.k != JV_BOOL) jfail(c, JERR_RUNTIME, line, "slice indices must be integers or None");
        int64_t x = as_index(e);
        if (x < 0) {
            x = x < -len ? lo : x + len;
            if (x < lo) x = lo;
        } else if (x > hi) {
            x = hi;
        }
        *outs[k] = x;
    }
    *o_start = a;
    *o_stop = b;
    *o_step = st;
}

/* how many items a slice from a to b (exclusive) by st takes (no overflow:
   a and b lie within [-1, len]) */
static size_t slice_count(int64_t a, int64_t b, int64_t st)
{
    if (st > 0) return b > a ? (size_t)((uint64_t)(b - a - 1) / (uint64_t)st + 1) : 0;
    return a > b ? (size_t)((uint64_t)(a - b - 1) / ((uint64_t)0 - (uint64_t)st) + 1) : 0;
}

static jv do_slice(jrun *r, int line, jv obj, jv start, jv stop, jv step)
{
    jctx *c = &r->c;
    int64_t a, b, st;
    if (obj.k == JV_STR) {
        /* code points */
        const char *p = obj.u.s.p;
        size_t n = obj.u.s.n, len = ju_len(p, n);
        slice_indices(c, line, start, stop, step, (int64_t)len, &a, &b, &st);
        if (st == 1) {
            if (b <= a) return jv_str("", 0);
            size_t o1 = ju_offset(p, n, (size_t)a), o2 = o1 + ju_offset(p + o1, n - o1, (size_t)(b - a));
            return jv_str(p + o1, o2 - o1);
        }
        size_t *off = jalloc(c, (len + 1) * sizeof *off);
        for (size_t i = 0, k = 0; k <= len; k++) {
            off[k] = i;
            if (i < n) {
                uint32_t cp;
                i += (size_t)ju_next(p + i, n - i, &cp);
            }
        }
        jbuf out = { 0 };
        const size_t cnt = slice_count(a, b, st);
        int64_t i = a;
        for (size_t k = 0; k < cnt; k++) {
            jb_put(c, &out, p + off[i], off[i + 1] - off[i]);
            if (k + 1 < cnt) i += st;
        }
        return jb_value(&out);
    }
    if (obj.k == JV_LIST) {
        const jlist *l = obj.u.l;
        slice_indices(c, line, start, stop, step, (int64_t)l->n, &a, &b, &st);
        const size_t cnt = slice_count(a, b, st);
        jv out = jv_list(c, cnt, obj.tuple);
        int64_t i = a;
        for (size_t k = 0; k < cnt; k++) {
            out.u.l->v[k] = l->v[i];
            if (k + 1 < cnt) i += st;
        }
        return out;
    }
    if (obj.k == JV_UNDEF) undefined_error(c, line, obj);
    return undef_fmt(c, "'%s object' is not subscriptable%s", jv_type_name(obj), "");
}

static jv getitem(jrun *r, int line, jv obj, jv key)
{
    jctx *c = &r->c;
    switch (obj.k) {
    case JV_UNDEF: undefined_error(c, line, obj);
    case JV_DICT: {
        jv v;
        if (jdict_get(obj.u.d, key, &v)) return v;
        break;
    }
    case JV_LIST:
    case JV_STR:
        if (key.k == JV_INT || key.k == JV_BOOL) {
            int64_t i = as_index(key);
            if (obj.k == JV_LIST) {
                int64_t n = (int64_t)obj.u.l->n;
                if (i < 0) i += n;
                if (i >= 0 && i < n) return obj.u.l->v[i];
            } else {
                int64_t n = (int64_t)ju_len(obj.u.s.p, obj.u.s.n);
                if (i < 0) i += n;
                if (i >= 0 && i < n) {
                    size_t o = ju_offset(obj.u.s.p, obj.u.s.n, (size_t)i);
                    uint32_t cp;
                    int k = ju_next(obj.u.s.p + o, obj.u.s.n - o, &cp);
                    return jv_str(obj.u.s.p + o, (size_t)k);
                }
            }
            char idx[32];
            snprintf(idx, sizeof idx, "%lld", (long long)as_index(key));
            return undef_fmt(c, "'%s object' has no element %s", jv_type_name(obj), idx);
        }
        break;
    default: break;
    }
    if (key.k == JV_STR) {   /* then an attribute of that name */
        const char *name = jstrdup(c, key.u.s.p, key.u.s.n);
        return jgetattr(r, line, obj, name);
    }
    jbuf b = { 0 };
    jv_repr_to(c, &b, key);
    jb_putc(c, &b, 0);
    return undef_fmt(c, "'%s object' has no element %s", jv_type_name(obj), b.p);
}

/* ---- operators ----------------------------------------------------------------------------- */

_Noreturn static void bad_operands(jctx *c, int line, const char *op, jv a, jv b)
{
    jfail(c, JERR_RUNTIME, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, jv_type_name(a), jv_type_name(b));
}

static double fnum(jv v) { return v.k == JV_FLOAT ? v.u.f : v.k == JV_BOOL ? (double)v.u.b : (double)v.u.i; }
static int64_t inum(jv v) { return v.k == JV_BOOL ? v.u.b : v.u.i; }

static jv repeat(jrun *r, int line, jv seq, int64_t times)
{
    jctx *c = &r->c;
    if (times < 0) times = 0;
    if (seq.k == JV_STR) {
        if (seq.u.s.n && (uint64_t)times > (uint64_t)(c->mem_max / seq.u.s.n))
            jfail(c, JERR_LIMIT, line, "a string repeated %lld times", (long long)times);
        jbuf b = { 0 };
        for (int64_t i = 0; i < times; i++) jb_put(c, &b, seq.u.s.p, seq.u.s.n);
        return jb_value(&b);
    }
    size_t n = seq.u.l->n;
    if (n && (uint64_t)times > (uint64_t)(c->mem_max / (n * sizeof(jv))))
        jfail(c, JERR_LIMIT, line, "a list repeated %lld times", (long long)times);
    jv out = jv_list(c, n * (size_t)times, seq.tuple);
    for (int64_t i = 0; i < times; i++)
        if (n) memcpy(out.u.l->v + (size_t)i * n, seq.u.l->v, n * sizeof(jv));
    return out;
}

static jv floor_div_int(jctx *c, int line, int64_t a, int64_t b)
{
    if (b == 0) jfail(c, JERR_RUNTIME, line, "integer division or modulo by zero");
    if (a == INT64_MIN && b == -1) jfail(c, JERR_RUNTIME, line, "integer overflow");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return jv_int(q);
}

static jv binop(jrun *r, int line, int op, jv a, jv b)
{
    jctx *c = &r->c;
    if (a.k == JV_UNDEF) undefined_error(c, line, a);
    if (b.k == JV_UNDEF) undefined_error(c, line, b);
    const bool nums = jv_is_num(a) && jv_is_num(b), ints = nums && a.k != JV_FLOAT && b.k != JV_FLOAT;
    int64_t x = 0;
    switch (op) {
    case JO_ADD:
        if (ints) {
            if (__builtin_add_overflow(inum(a), inum(b), &x)) jfail(c, JERR_RUNTIME, line, "integer overflow");
            return jv_int(x);
        }
        if (nums) return jv_float(fnum(a) + fnum(b));
        if (a.k == JV_STR && b.k == JV_STR) {
            jbuf o = { 0 };
            jb_put(c, &o, a.u.s.p, a.u.s.n);
            jb_put(c, &o, b.u.s.p, b.u.s.n);
            return jb_value(&o);
        }
        if (a.k == JV_LIST && b.k == JV_LIST && a.tuple == b.tuple) {
            jv o = jv_list(c, a.u.l->n + b.u.l->n, a.tuple);
            if (a.u.l->n) memcpy(o.u.l->v, a.u.l->v, a.u.l->n * sizeof(jv));
            if (b.u.l->n) memcpy(o.u.l->v + a.u.l->n, b.u.l->v, b.u.l->n * sizeof(jv));
            return o;
        }
        if (a.k == JV_STR || b.k == JV_STR)
            jfail(c, JERR_RUNTIME, line, "can only concatenate str (not \"%s\") to str",
                  jv_type_name(a.k == JV_STR ? b : a));
        bad_operands(c, line, "+", a, b);
    case JO_SUB:
        if (ints) {
            if (__builtin_sub_overflow(inum(a), inum(b), &x)) jfail(c, JERR_RUNTIME, line, "integer overflow");
            return jv_int(x);
        }
        if (nums) return jv_float(fnum(a) - fnum(b));
        bad_operands(c, line, "-", a, b);
    case JO_MUL:
        if (ints) {
            if (__builtin_mul_overflow(inum(a), inum(b), &x)) jfail(c, JERR_RUNTIME, line, "integer overflow");
            return jv_int(x);
        }
        if (nums) return jv_float(fnum(a) * fnum(b));
        if ((a.k == JV_STR || a.k == JV_LIST) && (b.k == JV_INT || b.k == JV_BOOL)) return repeat(r, line, a, inum(b));
        if ((b.k == JV_STR || b.k == JV_LIST) && (a.k == JV_INT || a.k == JV_BOOL)) return repeat(r, line, b, inum(a));
        bad_operands(c, line, "*", a, b);
    case JO_DIV:
        if (!nums) bad_operands(c, line, "/", a, b);
        if (fnum(b) == 0) jfail(c, JERR_RUNTIME, line, "division by zero");
        return jv_float(fnum(a) / fnum(b));
    case JO_FLOORDIV:
        if (!nums) bad_operands(c, line, "//", a, b);
        if (ints) return floor_div_int(c, line, inum(a), inum(b));
        if (fnum(b) == 0) jfail(c, JERR_RUNTIME, line, "float floor division by zero");
        return jv_float(floor(fnum(a) / fnum(b)));
    case JO_MOD:
        if (a.k == JV_STR) {
            jv args = b;
            jv f = jfilter_call(r, line, jfilter_id("format"), a, b.k == JV_LIST && b.tuple ? (int)b.u.l->n : 1,
                                b.k == JV_LIST && b.tuple ? b.u.l->v : &args, 0, NULL, NULL);
            return f;
        }
        if (!nums) bad_operands(c, line, "%", a, b);
        if (ints) {
            if (inum(b) == 0) jfail(c, JERR_RUNTIME, line, "integer division or modulo by zero");
            if (inum(b) == -1) return jv_int(0);
            int64_t m = inum(a) % inum(b);
            if (m != 0 && ((m < 0) != (inum(b) < 0))) m += inum(b);
            return jv_int(m);
        } else {
            double y = fnum(b);
            if (y == 0) jfail(c, JERR_RUNTIME, line, "float modulo");
            double m = fmod(fnum(a), y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            return jv_float(m);
        }
    case JO_POW:
        if (!nums) bad_operands(c, line, "** or pow()", a, b);
        if (ints && inum(b) >= 0) {
            int64_t base = inum(a), e = inum(b), acc = 1;
            while (e > 0) {
                if ((e & 1) && __builtin_mul_overflow(acc, base, &acc)) jfail(c, JERR_RUNTIME, line, "integer overflow");
                e >>= 1;
                if (e && __builtin_mul_overflow(base, base, &base)) jfail(c, JERR_RUNTIME, line, "integer overflow");
            }
            return jv_int(acc);
        }
        if (fnum(a) == 0 && fnum(b) < 0) jfail(c, JERR_RUNTIME, line, "0.0 cannot be raised to a negative power");
        return jv_float(pow(fnum(a), fnum(b)));
    default:
        jfail(c, JERR_RUNTIME, line, "unknown operator");
    }
}

static bool contains(jrun *r, int line, jv hay, jv needle)
{
    jctx *c = &r->c;
    switch (hay.k) {
    case JV_STR:
        if (needle.k == JV_UNDEF) undefined_error(c, line, needle);
        if (needle.k != JV_STR)
            jfail(c, JERR_RUNTIME, line, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
        if (!needle.u.s.n) return true;
        return memmem(hay.u.s.p, hay.u.s.n, needle.u.s.p, needle.u.s.n) != NULL;
    case JV_LIST:
        for (size_t i = 0; i < hay.u.l->n; i++)
            if (jv_eq(c, hay.u.l->v[i], needle)) return true;
        return false;
    case JV_DICT: {
        jv v;
        return jdict_get(hay.u.d, needle, &v);
    }
    case JV_UNDEF: return false;
    default:
        jfail(c, JERR_RUNTIME, line, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static bool compare(jrun *r, int line, int op, jv a, jv b)
{
    jctx *c = &r->c;
    switch (op) {
    case JO_EQ: return jv_eq(c, a, b);
    case JO_NE: return !jv_eq(c, a, b);
    case JO_IN: return contains(r, line, b, a);
    case JO_NOTIN: return !contains(r, line, b, a);
    default: break;
    }
    if (a.k == JV_UNDEF) undefined_error(c, line, a);
    if (b.k == JV_UNDEF) undefined_error(c, line, b);
    if (!((jv_is_num(a) && jv_is_num(b)) || (a.k == JV_STR && b.k == JV_STR) || (a.k == JV_LIST && b.k == JV_LIST))) {
        static const char *const sym[] = { [JO_GT] = ">", [JO_GE] = ">=", [JO_LT] = "<", [JO_LE] = "<=" };
        jfail(c, JERR_RUNTIME, line, "'%s' not supported between instances of '%s' and '%s'", sym[op], jv_type_name(a),
              jv_type_name(b));
    }
    int k = jv_cmp(c, line, a, b);
    if (k == 2) return false;   /* NaN */
    switch (op) {
    case JO_LT: return k < 0;
    case JO_LE: return k <= 0;
    case JO_GT: return k > 0;
    case JO_GE: return k >= 0;
    default: return false;
    }
}

/* ---- calls --------------------------------------------------------------------------------- */

typedef struct args {
    int n, nkw;
    jv *v, *kwv;
    const char *const *kwn;
} args;

static args eval_args(jrun *r, const jnode *n, jscope *s)
{
    args a = { .n = n->nk, .nkw = n->nkw, .kwn = n->kwn };
    if (a.n) a.v = jalloc(&r->c, (size_t)a.n * sizeof(jv));
    for (int i = 0; i < a.n; i++) a.v[i] = eval(r, n->kids[i], s);
    if (a.nkw) a.kwv = jalloc(&r->c, (size_t)a.nkw * sizeof(jv));
    for (int i = 0; i < a.nkw; i++) a.kwv[i] = eval(r, n->kwv[i], s);
    return a;
}

static jv call_value(jrun *r, int line, jv f, const args *a)
{
    switch (f.k) {
    case JV_FUNC: return jfunc_call(r, line, f, a->n, a->v, a->nkw, a->kwn, a->kwv);
    case JV_MACRO: return jmacro_call(r, line, f, a->n, a->v, a->nkw, a->kwn, a->kwv);
    case JV_UNDEF: undefined_error(&r->c, line, f);
    default: jfail(&r->c, JERR_RUNTIME, line, "'%s' object is not callable", jv_type_name(f));
    }
}

/* value | f1 | f2 ...: the chain's innermost filter has no operand */
static jv apply_filters(jrun *r, const jnode *f, jv v, jscope *s)
{
    if (!f) return v;
    if (f->a) v = apply_filters(r, f->a, v, s);
    args a = eval_args(r, f, s);
    return jfilter_call(r, f->line, f->op, v, a.n, a.v, a.nkw, a.kwn, a.kwv);
}

jv jmacro_call(jrun *r, int line, jv mv, int nargs, const jv *argv, int nkw, const char *const *kwn, const jv *kwv)
{
    jctx *c = &r->c;
    const jmacro *m = mv.u.m;
    const jnode *def = m->def;
    if (r->macro_depth >= 100) jfail(c, JERR_LIMIT, line, "macros call each other more than 100 deep");
    if (nargs > def->nk)
        jfail(c, JERR_RUNTIME, line, "macro '%s' takes not more than %d argument(s)", def->name, def->nk);
    jscope *s = jscope_new(c, m->closure);
    jv *vals = jalloc(c, (size_t)(def->nk + 1) * sizeof(jv));
    bool *given = jalloc(c, (size_t)(def->nk + 1) * sizeof(bool));
    for (int i = 0; i < nargs; i++) {
        vals[i] = argv[i];
        given[i] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int i;
        for (i = 0; i < def->nk; i++)
            if (!strcmp(def->kids[i]->name, kwn[k])) break;
        if (i == def->nk) jfail(c, JERR_RUNTIME, line, "macro '%s' takes no keyword argument '%s'", def->name, kwn[k]);
        if (given[i]) jfail(c, JERR_RUNTIME, line, "macro '%s' got multiple values for argument '%s'", def->name, kwn[k]);
        vals[i] = kwv[k];
        given[i] = true;
    }
    for (int i = 0; i < def->nk; i++) {
        if (!given[i]) {
            if (def->kwv[i]) vals[i] = eval(r, def->kwv[i], s);
            else vals[i] = undef_fmt(c, "parameter '%s' was not provided%s", def->kids[i]->name, "");
        }
        jscope_set(c, s, def->kids[i]->name, vals[i]);
    }
    r->macro_depth++;
    jv out = capture(r, def->b, s);
    r->macro_depth--;
    return out;
}

/* ---- expressions ------------------------------------------------------------------------------- */

static jv eval(jrun *r, const jnode *n, jscope *s)
{
    jctx *c = &r->c;
    jstep(c, n->line);
    jenter(c, n->line);
    jv v;
    switch (n->kind) {
    case JN_CONST: v = n->val; break;
    case JN_NAME: {
        bool found;
        v = jscope_get(s, n->name, &found);
        if (!found) v = undef_fmt(c, "'%s' is undefined%s", n->name, "");
        break;
    }
    case JN_LIST:
    case JN_TUPLE:
        v = jv_list(c, (size_t)n->nk, n->kind == JN_TUPLE);
        for (int i = 0; i < n->nk; i++) v.u.l->v[i] = eval(r, n->kids[i], s);
        break;
    case JN_DICT:
        v = jv_dict(c, (size_t)n->nk);
        for (int i = 0; i < n->nk; i++) {
            jv key = eval(r, n->kids[i], s);
            jv val = eval(r, n->kwv[i], s);
            jdict_set(c, v.u.d, key, val);
        }
        break;
    case JN_GETATTR: {
        jv o = eval(r, n->a, s);
        if (o.k == JV_UNDEF) undefined_error(c, n->line, o);
        v = jgetattr(r, n->line, o, n->name);
        break;
    }
    case JN_GETITEM: {
        jv o = eval(r, n->a, s);
        if (n->b->kind == JN_SLICE) {
            const jnode *sl = n->b;
            jv a = sl->a ? eval(r, sl->a, s) : jv_none(), b = sl->b ? eval(r, sl->b, s) : jv_none(),
               st = sl->c ? eval(r, sl->c, s) : jv_none();
            v = do_slice(r, n->line, o, a, b, st);
        } else {
            v = getitem(r, n->line, o, eval(r, n->b, s));
        }
        break;
    }
    case JN_CALL: {
        jv f = eval(r, n->a, s);
        args a = eval_args(r, n, s);
        v = call_value(r, n->line, f, &a);
        break;
    }
    case JN_FILTER: {
        jv x = eval(r, n->a, s);
        args a = eval_args(r, n, s);
        v = jfilter_call(r, n->line, n->op, x, a.n, a.v, a.nkw, a.kwn, a.kwv);
        break;
    }
    case JN_TEST: {
        jv x = eval(r, n->a, s);
        args a = eval_args(r, n, s);
        if (a.nkw) jfail(c, JERR_RUNTIME, n->line, "tests take no keyword arguments");
        v = jv_bool(jtest_call(r, n->line, n->op, x, a.n, a.v));
        break;
    }
    case JN_NOT: v = jv_bool(!jv_truthy(eval(r, n->a, s))); break;
    case JN_NEG:
    case JN_POS: {
        jv x = eval(r, n->a, s);
        if (x.k == JV_UNDEF) undefined_error(c, n->line, x);
        if (!jv_is_num(x))
            jfail(c, JERR_RUNTIME, n->line, "bad operand type for unary %c: '%s'", n->kind == JN_NEG ? '-' : '+',
                  jv_type_name(x));
        if (n->kind == JN_POS) v = x.k == JV_BOOL ? jv_int(x.u.b) : x;
        else if (x.k == JV_FLOAT) v = jv_float(-x.u.f);
        else {
            if (inum(x) == INT64_MIN) jfail(c, JERR_RUNTIME, n->line, "integer overflow");
            v = jv_int(-inum(x));
        }
        break;
    }
    case JN_BINOP: {
        jv a = eval(r, n->a, s);
        jv b = eval(r, n->b, s);
        v = binop(r, n->line, n->op, a, b);
        break;
    }
    case JN_CONCAT: {
        jbuf b = { 0 };
        for (int i = 0; i < n->nk; i++) jv_str_to(c, &b, eval(r, n->kids[i], s));
        v = jb_value(&b);
        break;
    }
    case JN_COMPARE: {
        jv left = eval(r, n->a, s);
        v = jv_bool(true);
        for (int i = 0; i < n->nk; i++) {
            jv right = eval(r, n->kids[i]->a, s);
            if (!compare(r, n->kids[i]->line, n->kids[i]->op, left, right)) {
                v = jv_bool(false);
                break;
            }
            left = right;
        }
        break;
    }
    case JN_AND: {
        jv a = eval(r, n->a, s);
        v = jv_truthy(a) ? eval(r, n->b, s) : a;
        break;
    }
    case JN_OR: {
        jv a = eval(r, n->a, s);
        v = jv_truthy(a) ? a : eval(r, n->b, s);
        break;
    }
    case JN_COND:
        if (jv_truthy(eval(r, n->b, s))) v = eval(r, n->a, s);
        else v = n->c ? eval(r, n->c, s) : jv_undef("the condition was false and there is no else");
        break;
    default:
        jfail(c, JERR_RUNTIME, n->line, "this expression cannot be evaluated here");
    }
    jleave(c);
    return v;
}

/* ---- statements ---------------------------------------------------------------------------------- */

static void assign(jrun *r, const jnode *t, jv v, jscope *s)
{
    jctx *c = &r->c;
    if (t->kind == JN_NAME) {
        jscope_set(c, s, t->name, v);
        return;
    }
    if (t->kind == JN_NSREF) {
        bool found;
        jv ns = jscope_get(s, t->name, &found);
        if (ns.k != JV_NS) jfail(c, JERR_RUNTIME, t->line, "cannot assign attribute on non-namespace object");
        if (t->attr[0] == '_')
            jfail(c, JERR_RUNTIME, t->line, "chat templates cannot store underscore-prefixed attributes on a namespace");
        jdict_set(c, ns.u.d, jv_cstr(t->attr), v);
        return;
    }
    /* a tuple of names: unpack */
    jlist *items = jiter(r, t->line, v);
    if (v.k == JV_UNDEF) undefined_error(c, t->line, v);
    if ((int)items->n != t->nk)
        jfail(c, JERR_RUNTIME, t->line, (int)items->n < t->nk ? "not enough values to unpack (expected %d, got %zu)"
                                                              : "too many values to unpack (expected %d, got %zu)",
              t->nk, items->n);
    for (int i = 0; i < t->nk; i++) assign(r, t->kids[i], items->v[i], s);
}

static int exec_for(jrun *r, const jnode *n, jscope *s)
{
    jctx *c = &r->c;
    jv seq = eval(r, n->b, s);
    jlist *items = jiter(r, n->line, seq);
    if (n->e) {   /* for x in xs if cond: the loop sees only the items that pass */
        jlist *kept = jalloc(c, sizeof *kept);
        kept->v = items->n ? jalloc(c, items->n * sizeof(jv)) : NULL;
        jscope *fs = jscope_new(c, s);
        for (size_t i = 0; i < items->n; i++) {
            jstep(c, n->line);
            fs->n = 0;
            assign(r, n->a, items->v[i], fs);
            if (jv_truthy(eval(r, n->e, fs))) kept->v[kept->n++] = items->v[i];
        }
        items = kept;
    }
    jloop *lp = jalloc(c, sizeof *lp);
    lp->items = items;
    lp->length = (int64_t)items->n;
    jv loopv = { .k = JV_LOOP };
    loopv.u.loop = lp;
    jscope *is = NULL;
    for (size_t i = 0; i < items->n; i++) {
        jstep(c, n->line);
        if (!is || is->captured) is = jscope_new(c, s);
        else is->n = 0;
        lp->index0 = (int64_t)i;
        jscope_set(c, is, "loop", loopv);
        assign(r, n->a, items->v[i], is);
        int k = exec(r, n->c, is);
        if (is->captured) {   /* a macro defined in the body keeps this iteration's loop */
            jloop *copy = jalloc(c, sizeof *copy);
            *copy = *lp;
            jv lv = { .k = JV_LOOP };
            lv.u.loop = copy;
            jscope_set(c, is, "loop", lv);
        }
        if (k == BRK) break;
    }
    if (!items->n && n->d) return exec(r, n->d, jscope_new(c, s));
    return GO;
}

static int exec(jrun *r, const jnode *n, jscope *s)
{
    jctx *c = &r->c;
    jstep(c, n->line);
    jenter(c, n->line);
    int k = GO;
    switch (n->kind) {
    case JN_BODY:
        for (int i = 0; i < n->nk && k == GO; i++) k = exec(r, n->kids[i], s);
        break;
    case JN_DATA: jb_put(c, r->out, n->val.u.s.p, n->val.u.s.n); break;
    case JN_OUTPUT: out_value(r, eval(r, n->a, s)); break;
    case JN_IF:
        if (jv_truthy(eval(r, n->a, s))) k = exec(r, n->b, s);
        else if (n->c) k = exec(r, n->c, s);
        break;
    case JN_FOR: k = exec_for(r, n, s); break;
    case JN_SET: assign(r, n->a, eval(r, n->b, s), s); break;
    case JN_SETBLOCK: {
        jv v = capture(r, n->b, s);
        assign(r, n->a, apply_filters(r, n->c, v, s), s);
        break;
    }
    case JN_MACRO: {
        jmacro *m = jalloc(c, sizeof *m);
        m->def = n;
        m->closure = s;
        s->captured = true;
        jv v = { .k = JV_MACRO };
        v.u.m = m;
        jscope_set(c, s, n->name, v);
        break;
    }
    case JN_WITH: {
        jscope *w = jscope_new(c, s);
        for (int i = 0; i < n->nk; i++) assign(r, n->kids[i], eval(r, n->kwv[i], s), w);
        k = exec(r, n->b, w);
        break;
    }
    case JN_FILTERBLOCK: out_value(r, apply_filters(r, n->c, capture(r, n->b, s), s)); break;
    case JN_SCOPE: k = exec(r, n->b, jscope_new(c, s)); break;
    case JN_BREAK: k = BRK; break;
    case JN_CONTINUE: k = CONT; break;
    default: jfail(c, JERR_RUNTIME, n->line, "this statement cannot run here");
    }
    jleave(c);
    return k;
}

void jrender(jrun *r, const jnode *root, jbuf *out)
{
    r->out = out;
    jscope *top = jscope_new(&r->c, r->globals);
    exec(r, root, top);
}
