/* jinja_parse.c — a chat template's tokens to its tree (jinja.h's jnode),
 * following jinja2/parser.py: the same precedence (filters and tests bind
 * tighter than arithmetic, `a if b else c` loosest), the same statements
 * (if/elif/else, for with else and an if filter, set and set blocks,
 * macro, with, filter blocks, break/continue from the loopcontrols
 * extension, transformers' {% generation %}, block and print), and a
 * clear error with the line for everything else (include, extends,
 * import, call blocks, recursive loops, *args): no chat template needs
 * them. Unknown filters and tests are errors here, as jinja2's compiler
 * makes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jinja.h"

typedef struct P {
    jctx *c;
    jtok *t;
    int nt, i;
    int loops;              /* for loops around the current statement (in this macro) */
} P;

static jtok *cur(P *p) { return &p->t[p->i]; }
static jtok *peek(P *p) { return &p->t[p->i + 1 < p->nt ? p->i + 1 : p->i]; }
static void next(P *p)
{
    if (p->i + 1 < p->nt) p->i++;
}
static bool name_is(const jtok *k, const char *w)
{
    return k->type == JT_NAME && k->n == strlen(w) && !memcmp(k->p, w, k->n);
}
static bool op_is(const jtok *k, int op) { return k->type == JT_OP && k->op == op; }

static const char *describe(const jtok *k, char *buf, size_t n)
{
    switch (k->type) {
    case JT_EOF: return "end of template";
    case JT_DATA: return "template data";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "'}}'";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "'%}'";
    case JT_NAME: snprintf(buf, n, "'%.*s'", (int)(k->n > 40 ? 40 : k->n), k->p); return buf;
    case JT_STRING: return "a string";
    case JT_INT: case JT_FLOAT: return "a number";
    default: return "an operator";
    }
}

_Noreturn static void unexpected(P *p, const char *want)
{
    char buf[64];
    jfail(p->c, JERR_SYNTAX, cur(p)->line, "expected %s, got %s", want, describe(cur(p), buf, sizeof buf));
}

static void expect_op(P *p, int op, const char *what)
{
    if (!op_is(cur(p), op)) unexpected(p, what);
    next(p);
}

static void expect_name(P *p, const char *w)
{
    if (!name_is(cur(p), w)) {
        char want[48];
        snprintf(want, sizeof want, "'%s'", w);
        unexpected(p, want);
    }
    next(p);
}

static const char *take_name(P *p)
{
    if (cur(p)->type != JT_NAME) unexpected(p, "a name");
    const char *s = jstrdup(p->c, cur(p)->p, cur(p)->n);
    next(p);
    return s;
}

static jnode *node(P *p, int kind, int line)
{
    jnode *n = jalloc(p->c, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = line;
    return n;
}

/* growing arrays of children */
typedef struct kids {
    jnode **v;
    const char **names;
    int n, cap;
} kids;

static void kid(P *p, kids *k, jnode *n, const char *name)
{
    if (k->n == k->cap) {
        int cap = k->cap ? k->cap * 2 : 4;
        k->v = jrealloc(p->c, k->v, (size_t)k->cap * sizeof *k->v, (size_t)cap * sizeof *k->v);
        k->names = jrealloc(p->c, k->names, (size_t)k->cap * sizeof *k->names, (size_t)cap * sizeof *k->names);
        k->cap = cap;
    }
    k->names[k->n] = name;
    k->v[k->n++] = n;
}

static jnode *parse_expression(P *p, bool with_condexpr);
static jnode *parse_tuple(P *p, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_parens,
                          bool with_namespace);
static jnode *parse_unary(P *p, bool with_filter);
static jnode *parse_primary(P *p, bool with_namespace);
static jnode *parse_postfix(P *p, jnode *n);
static jnode *parse_filter(P *p, jnode *n, bool start_inline);

/* ---- expressions ---------------------------------------------------------------- */

static jnode *parse_condexpr(P *p)
{
    int line = cur(p)->line;
    jnode *e1 = parse_expression(p, false);
    while (name_is(cur(p), "if")) {
        next(p);
        jnode *e2 = parse_expression(p, false);
        jnode *e3 = NULL;
        if (name_is(cur(p), "else")) {
            next(p);
            jenter(p->c, line);
            e3 = parse_condexpr(p);
            jleave(p->c);
        }
        jnode *n = node(p, JN_COND, line);
        n->a = e1;
        n->b = e2;
        n->c = e3;
        e1 = n;
        line = cur(p)->line;
    }
    return e1;
}

static jnode *parse_not(P *p);

static jnode *parse_compare(P *p);

static jnode *parse_and(P *p)
{
    jnode *l = parse_not(p);
    while (name_is(cur(p), "and")) {
        int line = cur(p)->line;
        next(p);
        jnode *n = node(p, JN_AND, line);
        n->a = l;
        n->b = parse_not(p);
        l = n;
    }
    return l;
}

static jnode *parse_or(P *p)
{
    jnode *l = parse_and(p);
    while (name_is(cur(p), "or")) {
        int line = cur(p)->line;
        next(p);
        jnode *n = node(p, JN_OR, line);
        n->a = l;
        n->b = parse_and(p);
        l = n;
    }
    return l;
}

static jnode *parse_not(P *p)
{
    if (name_is(cur(p), "not")) {
        int line = cur(p)->line;
        next(p);
        jenter(p->c, line);
        jnode *n = node(p, JN_NOT, line);
        n->a = parse_not(p);
        jleave(p->c);
        return n;
    }
    return parse_compare(p);
}

static jnode *parse_math1(P *p);

static jnode *parse_compare(P *p)
{
    int line = cur(p)->line;
    jnode *e = parse_math1(p);
    kids k = { 0 };
    for (;;) {
        jtok *t = cur(p);
        int op = 0;
        if (t->type == JT_OP && (t->op == JO_EQ || t->op == JO_NE || t->op == JO_LT || t->op == JO_LE ||
                                 t->op == JO_GT || t->op == JO_GE)) {
            op = t->op;
            next(p);
        } else if (name_is(t, "in")) {
            op = JO_IN;
            next(p);
        } else if (name_is(t, "not") && name_is(peek(p), "in")) {
            op = JO_NOTIN;
            next(p);
            next(p);
        } else {
            break;
        }
        jnode *r = parse_math1(p);
        jnode *o = node(p, JN_CONST, r->line);   /* a holder: op and operand */
        o->op = (uint8_t)op;
        o->a = r;
        kid(p, &k, o, NULL);
    }
    if (!k.n) return e;
    jnode *n = node(p, JN_COMPARE, line);
    n->a = e;
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static jnode *parse_concat(P *p);

static jnode *parse_math1(P *p)
{
    jnode *l = parse_concat(p);
    while (op_is(cur(p), JO_ADD) || op_is(cur(p), JO_SUB)) {
        jnode *n = node(p, JN_BINOP, cur(p)->line);
        n->op = cur(p)->op;
        next(p);
        n->a = l;
        n->b = parse_concat(p);
        l = n;
    }
    return l;
}

static jnode *parse_math2(P *p);

static jnode *parse_concat(P *p)
{
    int line = cur(p)->line;
    jnode *first = parse_math2(p);
    if (!op_is(cur(p), JO_TILDE)) return first;
    kids k = { 0 };
    kid(p, &k, first, NULL);
    while (op_is(cur(p), JO_TILDE)) {
        next(p);
        kid(p, &k, parse_math2(p), NULL);
    }
    jnode *n = node(p, JN_CONCAT, line);
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static jnode *parse_pow(P *p);

static jnode *parse_math2(P *p)
{
    jnode *l = parse_pow(p);
    while (op_is(cur(p), JO_MUL) || op_is(cur(p), JO_DIV) || op_is(cur(p), JO_FLOORDIV) || op_is(cur(p), JO_MOD)) {
        jnode *n = node(p, JN_BINOP, cur(p)->line);
        n->op = cur(p)->op;
        next(p);
        n->a = l;
        n->b = parse_pow(p);
        l = n;
    }
    return l;
}

static jnode *parse_pow(P *p)
{
    jnode *l = parse_unary(p, true);
    while (op_is(cur(p), JO_POW)) {
        jnode *n = node(p, JN_BINOP, cur(p)->line);
        n->op = JO_POW;
        next(p);
        n->a = l;
        n->b = parse_unary(p, true);
        l = n;
    }
    return l;
}

static jnode *parse_filter_expr(P *p, jnode *n);

static jnode *parse_unary(P *p, bool with_filter)
{
    jtok *t = cur(p);
    int line = t->line;
    jenter(p->c, line);
    jnode *n;
    if (op_is(t, JO_SUB) || op_is(t, JO_ADD)) {
        n = node(p, op_is(t, JO_SUB) ? JN_NEG : JN_POS, line);
        next(p);
        n->a = parse_unary(p, false);
    } else {
        n = parse_primary(p, false);
    }
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    jleave(p->c);
    return n;
}

static jnode *konst(P *p, jv v, int line)
{
    jnode *n = node(p, JN_CONST, line);
    n->val = v;
    return n;
}

static jnode *parse_list(P *p, int close, int kind)
{
    int line = cur(p)->line;
    next(p);   /* [ or { */
    kids k = { 0 }, vals = { 0 };
    while (!op_is(cur(p), close)) {
        if (k.n) expect_op(p, JO_COMMA, "','");
        if (op_is(cur(p), close)) break;
        kid(p, &k, parse_expression(p, true), NULL);
        if (kind == JN_DICT) {
            expect_op(p, JO_COLON, "':'");
            kid(p, &vals, parse_expression(p, true), NULL);
        }
    }
    next(p);
    jnode *n = node(p, kind, line);
    n->kids = k.v;
    n->nk = k.n;
    n->kwv = vals.v;
    n->nkw = vals.n;
    return n;
}

static jnode *parse_primary(P *p, bool with_namespace)
{
    jtok *t = cur(p);
    int line = t->line;
    switch (t->type) {
    case JT_NAME: {
        if (name_is(t, "true") || name_is(t, "True")) { next(p); return konst(p, jv_bool(true), line); }
        if (name_is(t, "false") || name_is(t, "False")) { next(p); return konst(p, jv_bool(false), line); }
        if (name_is(t, "none") || name_is(t, "None")) { next(p); return konst(p, jv_none(), line); }
        const char *name = take_name(p);
        if (with_namespace && op_is(cur(p), JO_DOT)) {
            next(p);
            jnode *n = node(p, JN_NSREF, line);
            n->name = name;
            n->attr = take_name(p);
            return n;
        }
        jnode *n = node(p, JN_NAME, line);
        n->name = name;
        return n;
    }
    case JT_STRING: {
        if (peek(p)->type != JT_STRING) {
            next(p);
            return konst(p, jv_str(t->p, t->n), line);
        }
        jbuf b = { 0 };
        while (cur(p)->type == JT_STRING) {
            jb_put(p->c, &b, cur(p)->p, cur(p)->n);
            next(p);
        }
        return konst(p, jv_str(b.p ? b.p : "", b.n), line);
    }
    case JT_INT: next(p); return konst(p, jv_int(t->i), line);
    case JT_FLOAT: next(p); return konst(p, jv_float(t->f), line);
    case JT_OP:
        if (t->op == JO_LPAREN) {
            next(p);
            jnode *n = parse_tuple(p, false, true, NULL, true, false);
            expect_op(p, JO_RPAREN, "')'");
            return n;
        }
        if (t->op == JO_LBRACKET) return parse_list(p, JO_RBRACKET, JN_LIST);
        if (t->op == JO_LBRACE) return parse_list(p, JO_RBRACE, JN_DICT);
        break;
    default: break;
    }
    unexpected(p, "an expression");
}

static bool tuple_end(P *p, const char *extra_end)
{
    jtok *t = cur(p);
    if (t->type == JT_VAR_END || t->type == JT_BLOCK_END || op_is(t, JO_RPAREN)) return true;
    return extra_end && name_is(t, extra_end);
}

static jnode *parse_tuple(P *p, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_parens,
                          bool with_namespace)
{
    int line = cur(p)->line;
    kids k = { 0 };
    bool is_tuple = false;
    for (;;) {
        if (k.n) expect_op(p, JO_COMMA, "','");
        if (tuple_end(p, extra_end)) break;
        kid(p, &k, simplified ? parse_primary(p, with_namespace) : parse_expression(p, with_condexpr), NULL);
        if (op_is(cur(p), JO_COMMA)) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (k.n) return k.v[0];
        if (!explicit_parens) unexpected(p, "an expression");
    }
    jnode *n = node(p, JN_TUPLE, line);
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static jnode *parse_expression(P *p, bool with_condexpr)
{
    return with_condexpr ? parse_condexpr(p) : parse_or(p);
}

/* ( args, name=value ... ) into n's kids and keywords */
static void parse_call_args(P *p, jnode *n)
{
    int line = cur(p)->line;
    expect_op(p, JO_LPAREN, "'('");
    kids a = { 0 }, kw = { 0 };
    bool comma = false;
    while (!op_is(cur(p), JO_RPAREN)) {
        if (comma) {
            expect_op(p, JO_COMMA, "','");
            if (op_is(cur(p), JO_RPAREN)) break;
        }
        if (op_is(cur(p), JO_MUL) || op_is(cur(p), JO_POW))
            jfail(p->c, JERR_SYNTAX, cur(p)->line, "*args and **kwargs in calls are not supported");
        if (cur(p)->type == JT_NAME && op_is(peek(p), JO_ASSIGN)) {
            const char *name = take_name(p);
            next(p);
            kid(p, &kw, parse_expression(p, true), name);
        } else {
            if (kw.n) jfail(p->c, JERR_SYNTAX, line, "invalid syntax for function call expression");
            kid(p, &a, parse_expression(p, true), NULL);
        }
        comma = true;
    }
    next(p);
    n->kids = a.v;
    n->nk = a.n;
    n->kwn = kw.names;
    n->kwv = kw.v;
    n->nkw = kw.n;
}

static jnode *parse_subscribed(P *p)
{
    int line = cur(p)->line;
    jnode *args[3] = { NULL, NULL, NULL };
    if (op_is(cur(p), JO_COLON)) {
        next(p);
    } else {
        jnode *e = parse_expression(p, true);
        if (!op_is(cur(p), JO_COLON)) return e;
        next(p);
        args[0] = e;
    }
    if (!op_is(cur(p), JO_COLON) && !op_is(cur(p), JO_RBRACKET) && !op_is(cur(p), JO_COMMA))
        args[1] = parse_expression(p, true);
    if (op_is(cur(p), JO_COLON)) {
        next(p);
        if (!op_is(cur(p), JO_RBRACKET) && !op_is(cur(p), JO_COMMA)) args[2] = parse_expression(p, true);
    }
    jnode *n = node(p, JN_SLICE, line);
    n->a = args[0];
    n->b = args[1];
    n->c = args[2];
    return n;
}

static jnode *parse_postfix(P *p, jnode *n)
{
    for (;;) {
        jtok *t = cur(p);
        int line = t->line;
        if (op_is(t, JO_DOT)) {
            next(p);
            jtok *a = cur(p);
            if (a->type == JT_NAME) {
                jnode *g = node(p, JN_GETATTR, line);
                g->a = n;
                g->name = take_name(p);
                n = g;
            } else if (a->type == JT_INT) {
                next(p);
                jnode *g = node(p, JN_GETITEM, line);
                g->a = n;
                g->b = konst(p, jv_int(a->i), line);
                n = g;
            } else {
                unexpected(p, "a name or a number");
            }
        } else if (op_is(t, JO_LBRACKET)) {
            next(p);
            kids k = { 0 };
            while (!op_is(cur(p), JO_RBRACKET)) {
                if (k.n) expect_op(p, JO_COMMA, "','");
                kid(p, &k, parse_subscribed(p), NULL);
            }
            next(p);
            jnode *g = node(p, JN_GETITEM, line);
            g->a = n;
            if (k.n == 1) {
                g->b = k.v[0];
            } else {
                jnode *tup = node(p, JN_TUPLE, line);
                tup->kids = k.v;
                tup->nk = k.n;
                g->b = tup;
            }
            n = g;
        } else if (op_is(t, JO_LPAREN)) {
            jnode *call = node(p, JN_CALL, line);
            call->a = n;
            parse_call_args(p, call);
            n = call;
        } else {
            return n;
        }
    }
}

static const char *dotted_name(P *p)
{
    const char *name = take_name(p);
    while (op_is(cur(p), JO_DOT)) {
        next(p);
        const char *more = take_name(p);
        size_t a = strlen(name), b = strlen(more);
        char *s = jalloc(p->c, a + b + 2);
        memcpy(s, name, a);
        s[a] = '.';
        memcpy(s + a + 1, more, b);
        name = s;
    }
    return name;
}

static jnode *parse_filter(P *p, jnode *n, bool start_inline)
{
    while (op_is(cur(p), JO_PIPE) || start_inline) {
        if (!start_inline) next(p);
        int line = cur(p)->line;
        const char *name = dotted_name(p);
        int id = jfilter_id(name);
        if (id == -2) jfail(p->c, JERR_SYNTAX, line, "the filter '%s' is not supported", name);
        if (id < 0) jfail(p->c, JERR_SYNTAX, line, "no filter named '%s'", name);
        jnode *f = node(p, JN_FILTER, line);
        f->op = (uint8_t)id;
        f->name = name;
        f->a = n;
        if (op_is(cur(p), JO_LPAREN)) parse_call_args(p, f);
        n = f;
        start_inline = false;
    }
    return n;
}

static jnode *parse_test(P *p, jnode *n)
{
    int line = cur(p)->line;
    next(p);   /* is */
    bool negated = false;
    if (name_is(cur(p), "not")) {
        next(p);
        negated = true;
    }
    const char *name = dotted_name(p);
    int id = jtest_id(name);
    if (id < 0) jfail(p->c, JERR_SYNTAX, line, "no test named '%s'", name);
    jnode *t = node(p, JN_TEST, line);
    t->op = (uint8_t)id;
    t->name = name;
    t->a = n;
    jtok *k = cur(p);
    if (op_is(k, JO_LPAREN)) {
        parse_call_args(p, t);
    } else if ((k->type == JT_NAME || k->type == JT_STRING || k->type == JT_INT || k->type == JT_FLOAT ||
                op_is(k, JO_LPAREN) || op_is(k, JO_LBRACKET) || op_is(k, JO_LBRACE)) &&
               !name_is(k, "else") && !name_is(k, "or") && !name_is(k, "and")) {
        if (name_is(k, "is")) jfail(p->c, JERR_SYNTAX, k->line, "you cannot chain multiple tests with is");
        jnode *arg = parse_postfix(p, parse_primary(p, false));
        t->kids = jalloc(p->c, sizeof(jnode *));
        t->kids[0] = arg;
        t->nk = 1;
    }
    if (!negated) return t;
    jnode *no = node(p, JN_NOT, line);
    no->a = t;
    return no;
}

static jnode *parse_filter_expr(P *p, jnode *n)
{
    for (;;) {
        jtok *t = cur(p);
        if (op_is(t, JO_PIPE)) n = parse_filter(p, n, false);
        else if (name_is(t, "is")) n = parse_test(p, n);
        else if (op_is(t, JO_LPAREN)) {
            jnode *call = node(p, JN_CALL, t->line);
            call->a = n;
            parse_call_args(p, call);
            n = call;
        } else return n;
    }
}

/* ---- statements ---------------------------------------------------------------------- */

static jnode *subparse(P *p, const char *const *end);

static bool assignable(const jnode *t)
{
    if (t->kind == JN_NAME || t->kind == JN_NSREF) return true;
    if (t->kind != JN_TUPLE) return false;
    for (int i = 0; i < t->nk; i++)
        if (!assignable(t->kids[i]) || t->kids[i]->kind == JN_NSREF) return false;
    return true;
}

static jnode *parse_assign_target(P *p, const char *extra_end, bool with_namespace)
{
    int line = cur(p)->line;
    jnode *t = parse_tuple(p, true, true, extra_end, false, with_namespace);
    if (!assignable(t)) jfail(p->c, JERR_SYNTAX, line, "can't assign to that target");
    return t;
}

/* : %} then the body up to one of the end names (left current) */
static jnode *parse_statements(P *p, const char *const *end, bool drop_needle)
{
    if (op_is(cur(p), JO_COLON)) next(p);
    if (cur(p)->type != JT_BLOCK_END) unexpected(p, "'%}'");
    next(p);
    jnode *body = subparse(p, end);
    if (cur(p)->type == JT_EOF) {
        char want[160] = "";
        for (int i = 0; end[i]; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", end[i]);
        jfail(p->c, JERR_SYNTAX, cur(p)->line, "unexpected end of template: expected %s", want);
    }
    if (drop_needle) next(p);
    return body;
}

static jnode *parse_for(P *p, int line)
{
    next(p);
    jnode *n = node(p, JN_FOR, line);
    n->a = parse_assign_target(p, "in", false);
    if (n->a->kind == JN_NSREF) jfail(p->c, JERR_SYNTAX, line, "a for loop cannot assign to a namespace");
    expect_name(p, "in");
    n->b = parse_tuple(p, false, false, "recursive", false, false);
    if (name_is(cur(p), "if")) {
        next(p);
        n->e = parse_expression(p, true);
    }
    if (name_is(cur(p), "recursive")) jfail(p->c, JERR_SYNTAX, cur(p)->line, "recursive for loops are not supported");
    static const char *const end1[] = { "endfor", "else", NULL }, *const end2[] = { "endfor", NULL };
    p->loops++;
    n->c = parse_statements(p, end1, false);
    p->loops--;
    bool has_else = name_is(cur(p), "else");
    next(p);
    if (has_else) n->d = parse_statements(p, end2, true);
    return n;
}

static jnode *parse_if(P *p, int line)
{
    next(p);
    static const char *const end1[] = { "elif", "else", "endif", NULL }, *const end2[] = { "endif", NULL };
    jnode *first = node(p, JN_IF, line), *n = first;
    for (;;) {
        n->a = parse_tuple(p, false, false, NULL, false, false);
        n->b = parse_statements(p, end1, false);
        jtok *t = cur(p);
        next(p);
        if (name_is(t, "elif")) {
            jnode *e = node(p, JN_IF, t->line);
            n->c = e;
            n = e;
            continue;
        }
        if (name_is(t, "else")) n->c = parse_statements(p, end2, true);
        break;
    }
    return first;
}

static jnode *parse_set(P *p, int line)
{
    next(p);
    jnode *target = parse_assign_target(p, NULL, true);
    if (op_is(cur(p), JO_ASSIGN)) {
        next(p);
        jnode *n = node(p, JN_SET, line);
        n->a = target;
        n->b = parse_tuple(p, false, true, NULL, false, false);
        return n;
    }
    if (target->kind == JN_TUPLE) unexpected(p, "'='");
    jnode *n = node(p, JN_SETBLOCK, line);
    n->a = target;
    n->c = parse_filter(p, NULL, false);
    static const char *const end[] = { "endset", NULL };
    n->b = parse_statements(p, end, true);
    return n;
}

static jnode *parse_macro(P *p, int line)
{
    next(p);
    jnode *n = node(p, JN_MACRO, line);
    n->name = take_name(p);
    expect_op(p, JO_LPAREN, "'('");
    kids params = { 0 }, defaults = { 0 };
    while (!op_is(cur(p), JO_RPAREN)) {
        if (params.n) expect_op(p, JO_COMMA, "','");
        jnode *a = node(p, JN_NAME, cur(p)->line);
        a->name = take_name(p);
        jnode *d = NULL;
        if (op_is(cur(p), JO_ASSIGN)) {
            next(p);
            d = parse_expression(p, true);
        } else if (defaults.n && defaults.v[defaults.n - 1]) {
            jfail(p->c, JERR_SYNTAX, a->line, "non-default argument follows default argument");
        }
        kid(p, &params, a, NULL);
        kid(p, &defaults, d, NULL);
    }
    next(p);
    n->kids = params.v;
    n->nk = params.n;
    n->kwv = defaults.v;
    n->nkw = defaults.n;
    static const char *const end[] = { "endmacro", NULL };
    const int loops = p->loops;
    p->loops = 0;   /* break and continue do not reach out of a macro */
    n->b = parse_statements(p, end, true);
    p->loops = loops;
    return n;
}

static jnode *parse_with(P *p, int line)
{
    next(p);
    jnode *n = node(p, JN_WITH, line);
    kids t = { 0 }, v = { 0 };
    while (cur(p)->type != JT_BLOCK_END) {
        if (t.n) expect_op(p, JO_COMMA, "','");
        jnode *target = parse_assign_target(p, NULL, false);
        expect_op(p, JO_ASSIGN, "'='");
        kid(p, &t, target, NULL);
        kid(p, &v, parse_expression(p, true), NULL);
    }
    n->kids = t.v;
    n->nk = t.n;
    n->kwv = v.v;
    n->nkw = v.n;
    static const char *const end[] = { "endwith", NULL };
    n->b = parse_statements(p, end, true);
    return n;
}

static jnode *parse_statement(P *p)
{
    jtok *t = cur(p);
    int line = t->line;
    if (t->type != JT_NAME) unexpected(p, "a tag name");
    jenter(p->c, line);
    jnode *n = NULL;
    if (name_is(t, "for")) n = parse_for(p, line);
    else if (name_is(t, "if")) n = parse_if(p, line);
    else if (name_is(t, "set")) n = parse_set(p, line);
    else if (name_is(t, "macro")) n = parse_macro(p, line);
    else if (name_is(t, "with")) n = parse_with(p, line);
    else if (name_is(t, "filter")) {
        next(p);
        n = node(p, JN_FILTERBLOCK, line);
        n->c = parse_filter(p, NULL, true);
        static const char *const end[] = { "endfilter", NULL };
        n->b = parse_statements(p, end, true);
    } else if (name_is(t, "break") || name_is(t, "continue")) {
        if (!p->loops)
            jfail(p->c, JERR_SYNTAX, line, "'%s' outside a loop", name_is(t, "break") ? "break" : "continue");
        n = node(p, name_is(t, "break") ? JN_BREAK : JN_CONTINUE, line);
        next(p);
    } else if (name_is(t, "generation")) {   /* transformers' assistant-mask tag: its body, rendered */
        next(p);
        n = node(p, JN_SCOPE, line);
        static const char *const end[] = { "endgeneration", NULL };
        const int loops = p->loops;
        p->loops = 0;
        n->b = parse_statements(p, end, true);
        p->loops = loops;
    } else if (name_is(t, "block")) {
        next(p);
        const char *name = take_name(p);
        if (name_is(cur(p), "scoped")) next(p);
        if (name_is(cur(p), "required")) next(p);
        n = node(p, JN_SCOPE, line);
        static const char *const end[] = { "endblock", NULL };
        const int loops = p->loops;
        p->loops = 0;
        n->b = parse_statements(p, end, true);
        p->loops = loops;
        if (cur(p)->type == JT_NAME && cur(p)->n == strlen(name) && !memcmp(cur(p)->p, name, cur(p)->n)) next(p);
    } else if (name_is(t, "print")) {
        next(p);
        kids k = { 0 };
        while (cur(p)->type != JT_BLOCK_END) {
            if (k.n) expect_op(p, JO_COMMA, "','");
            jnode *o = node(p, JN_OUTPUT, cur(p)->line);
            o->a = parse_expression(p, true);
            kid(p, &k, o, NULL);
        }
        n = node(p, JN_BODY, line);
        n->kids = k.v;
        n->nk = k.n;
    } else {
        static const char *const unsupported[] = { "include", "extends", "import", "from", "call", "autoescape", "do" };
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
            if (name_is(t, unsupported[i])) jfail(p->c, JERR_SYNTAX, line, "the '%s' tag is not supported", unsupported[i]);
        char buf[64];
        jfail(p->c, JERR_SYNTAX, line, "unknown tag %s", describe(t, buf, sizeof buf));
    }
    jleave(p->c);
    return n;
}

static jnode *subparse(P *p, const char *const *end)
{
    jnode *body = node(p, JN_BODY, cur(p)->line);
    kids k = { 0 };
    for (;;) {
        jtok *t = cur(p);
        if (t->type == JT_EOF) break;
        if (t->type == JT_DATA) {
            jnode *d = node(p, JN_DATA, t->line);
            d->val = jv_str(t->p, t->n);
            kid(p, &k, d, NULL);
            next(p);
        } else if (t->type == JT_VAR_BEGIN) {
            next(p);
            jnode *o = node(p, JN_OUTPUT, t->line);
            o->a = parse_tuple(p, false, true, NULL, false, false);
            if (cur(p)->type != JT_VAR_END) unexpected(p, "'}}'");
            next(p);
            kid(p, &k, o, NULL);
        } else if (t->type == JT_BLOCK_BEGIN) {
            next(p);
            if (end)
                for (int i = 0; end[i]; i++)
                    if (name_is(cur(p), end[i])) goto done;
            kid(p, &k, parse_statement(p), NULL);
            if (cur(p)->type != JT_BLOCK_END) unexpected(p, "'%}'");
            next(p);
        } else {
            unexpected(p, "template data or a tag");
        }
    }
done:
    body->kids = k.v;
    body->nk = k.n;
    return body;
}

jnode *jparse(jctx *c, const char *src, size_t n)
{
    int nt = 0;
    jtok *t = jlex(c, src, n, &nt);
    P p = { .c = c, .t = t, .nt = nt };
    jnode *root = subparse(&p, NULL);
    if (cur(&p)->type != JT_EOF) unexpected(&p, "end of template");
    return root;
}
