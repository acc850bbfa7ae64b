/* jinja.h — the Jinja subset that runs chat templates (wk_chat_template_*
 * in chat_template.c), shared by its files:
 *
 *   jinja_lex.c       the template text to tokens, with jinja2's whitespace
 *                     rules as transformers sets them (trim_blocks,
 *                     lstrip_blocks, "-" and "+" on tags)
 *   jinja_parse.c     tokens to a tree (jnode), jinja2's grammar
 *   jinja_value.c     values (jv), the arena they live in, Python's text
 *                     forms of them (str, repr, json.dumps), equality and
 *                     order, UTF-8 and Python's idea of white space
 *   jinja_eval.c      statements and expressions over scopes: the render
 *   jinja_builtins.c  filters, tests, methods of strings, lists and dicts,
 *                     and the global functions
 *   jinja_case.c      Unicode letter case as Python's str methods do it
 *                     (tables: jinja_case.h, from tools/gen_case_tables.py)
 *
 * Everything a parse or a render allocates comes from one arena (jarena),
 * freed at once; an error anywhere (a bad template, a raise_exception, a
 * limit reached) longjmps back to the entry point with the message in
 * jctx.err. Templates are untrusted: the arena, the output, the number of
 * steps and the depth of recursion are all bounded.
 */
#ifndef WICK_LLM_JINJA_H
#define WICK_LLM_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- errors, limits, memory ------------------------------------------------- */

typedef struct jchunk jchunk;

typedef struct jctx {
    jmp_buf jb;
    char err[640];
    int err_kind;           /* JERR_* */
    jchunk *chunks;         /* the arena */
    size_t mem, mem_max;    /* bytes taken from malloc, the most allowed */
    int depth, depth_max;   /* recursion (parser and evaluator) */
    int64_t steps, steps_max;
} jctx;

enum { JERR_NONE = 0, JERR_SYNTAX, JERR_RUNTIME, JERR_RAISED, JERR_LIMIT };

_Noreturn void jfail(jctx *c, int kind, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void *jalloc(jctx *c, size_t n);                 /* zeroed; fails through jfail */
void *jrealloc(jctx *c, void *old, size_t old_n, size_t n);
void jarena_free(jctx *c);
char *jstrdup(jctx *c, const char *s, size_t n); /* NUL-terminated copy */
/* one level deeper (jfail beyond depth_max); jleave on the way out */
void jenter(jctx *c, int line);
static inline void jleave(jctx *c) { c->depth--; }

/* ---- values ----------------------------------------------------------------- */

typedef enum jkind {
    JV_UNDEF = 0, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR,
    JV_LIST,        /* list, or tuple when .tuple */
    JV_DICT,        /* insertion-ordered, immutable once built */
    JV_NS,          /* namespace(): a dict whose attributes can be set */
    JV_FUNC,        /* a builtin function or a bound method (.fn, u.fn) */
    JV_MACRO,
    JV_LOOP,        /* a for loop's `loop` */
} jkind;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jfunc jfunc;
typedef struct jmacro jmacro;
typedef struct jloop jloop;

typedef struct jv {
    uint8_t k;              /* jkind */
    uint8_t tuple;          /* JV_LIST: a tuple */
    uint16_t fn;            /* JV_FUNC: which (jinja_builtins.c's JF_*) */
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *p; size_t n; } s;   /* JV_STR; JV_UNDEF: its name (p may be NULL) */
        jlist *l;
        jdict *d;           /* JV_DICT, JV_NS */
        jfunc *fn;          /* JV_FUNC: the bound object (NULL: a global function) */
        jmacro *m;
        jloop *loop;
    } u;
} jv;

struct jlist { size_t n; jv *v; };
struct jdict { size_t n, cap; jv *key, *val; };
struct jfunc { jv self; };
struct jloop { int64_t index0, length; const jlist *items; };

static inline jv jv_undef(const char *name) { jv v = { .k = JV_UNDEF }; v.u.s.p = name; v.u.s.n = 0; return v; }
static inline jv jv_none(void) { jv v = { .k = JV_NONE }; return v; }
static inline jv jv_bool(bool b) { jv v = { .k = JV_BOOL }; v.u.b = b; return v; }
static inline jv jv_int(int64_t i) { jv v = { .k = JV_INT }; v.u.i = i; return v; }
static inline jv jv_float(double f) { jv v = { .k = JV_FLOAT }; v.u.f = f; return v; }
static inline jv jv_str(const char *p, size_t n) { jv v = { .k = JV_STR }; v.u.s.p = p; v.u.s.n = n; return v; }

jv jv_cstr(const char *s);                         /* s must outlive the value */
jv jv_list(jctx *c, size_t n, bool tuple);         /* n elements, all undefined */
jv jv_dict(jctx *c, size_t cap);
void jdict_set(jctx *c, jdict *d, jv key, jv val); /* replaces an equal key */
bool jdict_get(const jdict *d, jv key, jv *out);
bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out);

bool jv_truthy(jv v);
bool jv_is_num(jv v);                              /* bool, int or float */
const char *jv_type_name(jv v);                    /* Python's: "str", "list", ... */
/* Python's ==; depth-bounded through c */
bool jv_eq(jctx *c, jv a, jv b);
/* Python's <, for numbers, strings and lists (others: jfail, TypeError) */
int jv_cmp(jctx *c, int line, jv a, jv b);

/* ---- text ------------------------------------------------------------------- */

/* A growing byte buffer in the arena, bounded by max (0: no bound but the
 * arena's). */
typedef struct jbuf {
    char *p;
    size_t n, cap, max;
} jbuf;
void jb_put(jctx *c, jbuf *b, const char *s, size_t n);
static inline void jb_putc(jctx *c, jbuf *b, char ch) { jb_put(c, b, &ch, 1); }
void jb_puts(jctx *c, jbuf *b, const char *s);
void jb_printf(jctx *c, jbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
jv jb_value(jbuf *b);                              /* the text so far, as a str */

/* Python's str(v) (what {{ v }} prints; undefined: ""), repr(v), and
 * json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as
 * transformers' tojson calls it (indent: NULL for none). */
void jv_str_to(jctx *c, jbuf *b, jv v);
void jv_repr_to(jctx *c, jbuf *b, jv v);
typedef struct jjson_opts {
    const char *indent;      /* NULL: one line */
    const char *item_sep, *key_sep;
    bool sort_keys, ensure_ascii;
} jjson_opts;
void jv_json_to(jctx *c, int line, jbuf *b, jv v, const jjson_opts *o);
jv jv_to_str(jctx *c, jv v);                       /* str(v) as a value */
void jfloat_repr(double f, char out[40]);          /* Python's repr(float) */

/* UTF-8: one code point from p (n > 0 bytes left); a byte that starts no
 * valid sequence is one code point of its own (0xDC00 + byte, Python's
 * surrogateescape), so every string round-trips. */
int ju_next(const char *p, size_t n, uint32_t *cp);
int ju_put(uint32_t cp, char out[4]);              /* bytes written */
size_t ju_len(const char *p, size_t n);            /* code points */
bool ju_isspace(uint32_t cp);                      /* Python's str.isspace */
/* the byte offset of code point i (i <= ju_len) */
size_t ju_offset(const char *p, size_t n, size_t i);

/* Python's str.upper(), lower(), title(), capitalize() and jinja2's title
   filter on any Unicode text; str.islower() (want_lower) and isupper()
   (jinja_case.c) */
jv jstr_upper(jctx *c, jv s);
jv jstr_lower(jctx *c, jv s);
jv jstr_title(jctx *c, jv s);
jv jstr_capitalize(jctx *c, jv s);
jv jstr_jinja_title(jctx *c, jv s);
bool jstr_iscase(jv s, bool want_lower);

/* ---- templates -------------------------------------------------------------- */

typedef enum jnkind {
    /* statements */
    JN_BODY, JN_DATA, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO, JN_WITH,
    JN_FILTERBLOCK, JN_BREAK, JN_CONTINUE, JN_SCOPE,
    /* expressions */
    JN_CONST, JN_NAME, JN_NSREF, JN_LIST, JN_TUPLE, JN_DICT, JN_GETATTR, JN_GETITEM,
    JN_SLICE, JN_CALL, JN_FILTER, JN_TEST, JN_NOT, JN_NEG, JN_POS, JN_BINOP, JN_CONCAT,
    JN_COMPARE, JN_AND, JN_OR, JN_COND,
} jnkind;

/* JN_BINOP's and JN_COMPARE's operators (the lexer's operator tokens) */
enum {
    JO_ADD = 1, JO_SUB, JO_MUL, JO_DIV, JO_FLOORDIV, JO_MOD, JO_POW, JO_TILDE,
    JO_LBRACKET, JO_RBRACKET, JO_LPAREN, JO_RPAREN, JO_LBRACE, JO_RBRACE,
    JO_EQ, JO_NE, JO_GT, JO_GE, JO_LT, JO_LE, JO_ASSIGN, JO_DOT, JO_COLON,
    JO_PIPE, JO_COMMA, JO_SEMICOLON,
    JO_IN, JO_NOTIN,   /* comparisons by name */
};

typedef struct jnode jnode;
struct jnode {
    uint8_t kind;           /* jnkind */
    uint8_t op;             /* JN_BINOP, compare operands: JO_*; JN_FILTER/JN_TEST: builtin id */
    int line;
    /* JN_IF: a test, b body, c else (a body or another JN_IF)
     * JN_FOR: a target, b iterable, c body, d else, e filter
     * JN_SET: a target, b value; JN_SETBLOCK: a target, b body, c filter chain
     * JN_MACRO: b body (kids: parameters, kwv: their defaults)
     * JN_WITH: b body (kids: targets, kwv: values); JN_FILTERBLOCK: b body, c filter chain
     * JN_GETATTR: a object (name); JN_GETITEM: a object, b index
     * JN_SLICE: a start, b stop, c step (each may be NULL)
     * JN_CALL: a callee; JN_FILTER / JN_TEST: a operand (kids, kw: arguments)
     * JN_NOT, JN_NEG, JN_POS: a; JN_BINOP, JN_AND, JN_OR: a, b
     * JN_COMPARE: a first operand, kids the others (each with its op)
     * JN_COND: a value, b test, c else (may be NULL) */
    jnode *a, *b, *c, *d, *e;
    jnode **kids;
    int nk;
    const char **kwn;       /* keyword names */
    jnode **kwv;
    int nkw;
    const char *name;       /* JN_NAME, JN_NSREF (.name.attr), JN_GETATTR, JN_FILTER, JN_TEST, JN_MACRO */
    const char *attr;       /* JN_NSREF */
    jv val;                 /* JN_CONST, JN_DATA */
};

/* The template's text to its tree, in c's arena. NULL: error in c->err. */
jnode *jparse(jctx *c, const char *src, size_t n);

/* ---- tokens (jinja_lex.c -> jinja_parse.c) ----------------------------------- */

enum { JT_EOF = 0, JT_DATA, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
       JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP };

typedef struct jtok {
    uint8_t type;
    uint8_t op;             /* JT_OP: JO_* */
    int line;
    const char *p;          /* JT_NAME, JT_DATA, JT_STRING (unescaped) */
    size_t n;
    int64_t i;
    double f;
} jtok;

/* The tokens of src (normalized: newlines to \n, one trailing newline
 * dropped), ending with JT_EOF; *n their count. */
jtok *jlex(jctx *c, const char *src, size_t len, int *n);

/* ---- rendering ---------------------------------------------------------------- */

typedef struct jscope jscope;
struct jscope {
    jscope *up;
    int n, cap;
    const char **names;
    jv *vals;
    bool captured;          /* a macro closes over it: do not reuse */
};

struct jmacro { const jnode *def; jscope *closure; };

typedef struct jrun {
    jctx c;
    jscope *globals;
    jbuf *out;              /* where output goes now */
    int macro_depth;
    time_t now;             /* strftime_now's time */
} jrun;

jv jscope_get(const jscope *s, const char *name, bool *found);
void jscope_set(jctx *c, jscope *s, const char *name, jv v);
jscope *jscope_new(jctx *c, jscope *up);

/* Render the tree with the variables in r->globals into *out. */
void jrender(jrun *r, const jnode *root, jbuf *out);

/* ---- builtins (jinja_builtins.c) ------------------------------------------------ */

int jfilter_id(const char *name);                  /* -1: none such */
int jtest_id(const char *name);
/* value | filter(args, kw) */
jv jfilter_call(jrun *r, int line, int id, jv v, int nargs, const jv *args, int nkw, const char *const *kwn, const jv *kwv);
bool jtest_call(jrun *r, int line, int id, jv v, int nargs, const jv *args);
/* obj.name as jinja2's sandbox finds it: an item of a dict, or a method */
jv jgetattr(jrun *r, int line, jv obj, const char *name);
/* fn(args, kw) for a JV_FUNC */
jv jfunc_call(jrun *r, int line, jv fn, int nargs, const jv *args, int nkw, const char *const *kwn, const jv *kwv);
/* the global functions (range, namespace, dict, raise_exception, strftime_now, ...) into s */
void jglobals_add(jrun *r, jscope *s);
/* for x in v: the items (a dict's keys, a string's characters); jfail when v is not iterable */
jlist *jiter(jrun *r, int line, jv v);
/* Call a macro (jinja_eval.c) */
jv jmacro_call(jrun *r, int line, jv m, int nargs, const jv *args, int nkw, const char *const *kwn, const jv *kwv);

/* one more step of work (jfail beyond steps_max) */
static inline void jstep(jctx *c, int line)
{
    if (++c->steps > c->steps_max) jfail(c, JERR_LIMIT, line, "the template ran more than %lld steps", (long long)c->steps_max);
}

#endif
