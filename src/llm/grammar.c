/* grammar.c — running a compiled JSON-schema grammar (json_schema.c) over
 * output bytes, and the token masks of constrained sampling (wick_llm.h:
 * wk_grammar_state, wk_grammar_vocab; docs/grammar.md).
 *
 * The recogniser is a pushdown automaton over bytes: a parse is a stack
 * of frames, one per value being written (the root, objects, arrays,
 * strings, numbers, literals, keys), each with its small state (which
 * punctuation comes next, the items or characters so far, UTF-8 and
 * escape progress, the digits of a number). anyOf alternatives, and keys
 * that may be a declared property or an additional one, are followed as
 * several parses at once (a set of stacks, duplicates merged). Frames are
 * immutable once made: a byte makes new top frames that point at the old
 * ones below, so trying a byte never copies a stack.
 *
 * A token mask walks a trie of the vocabulary's byte strings in preorder
 * (built once per model): each trie node steps its parent's parse set by
 * one byte in a scratch arena rewound as the walk backtracks, and a dead
 * set skips the node's whole subtree. The common state, inside a string,
 * is cut short: tokens that are plain string text (no quote, backslash or
 * control byte; whole UTF-8 characters) are allowed as a precomputed
 * bitset by their character count, and only the others (a few percent)
 * are walked.
 */
#include <stdlib.h>
#include <string.h>
#include "wick_tokenizer.h"
#include "grammar_internal.h"
#include "llm_internal.h"

/* ---- an arena with rewind -------------------------------------------------------------- */

#define CHUNK (1u << 16)

typedef struct arena {
    char **chunk;
    int n_chunk, cur;
    size_t off;
} arena;

typedef struct amark {
    int cur;
    size_t off;
} amark;

static void *aalloc(arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (a->n_chunk == 0 || a->off + n > CHUNK) {
        if (a->n_chunk > 0) a->cur++;
        if (a->cur >= a->n_chunk) {
            char **c = realloc(a->chunk, (size_t)(a->n_chunk + 1) * sizeof *c);
            if (!c) return NULL;
            a->chunk = c;
            if (!(a->chunk[a->n_chunk] = malloc(CHUNK))) return NULL;
            a->n_chunk++;
        }
        a->off = 0;
    }
    void *p = a->chunk[a->cur] + a->off;
    a->off += n;
    return p;
}

static amark amark_get(const arena *a) { return (amark){ a->cur, a->off }; }
static void arewind(arena *a, amark m)
{
    a->cur = m.cur;
    a->off = m.off;
}
static void areset(arena *a) { arewind(a, (amark){ 0, 0 }); }
static void afree(arena *a)
{
    for (int i = 0; i < a->n_chunk; i++) free(a->chunk[i]);
    free(a->chunk);
    *a = (arena){ 0 };
}

/* ---- frames ---------------------------------------------------------------------------- */

typedef struct gkey {
    const struct gkey *next;
    uint64_t h;
} gkey;

enum { K_ROOT, K_OBJ, K_ARR, K_STR, K_NUM, K_LIT, K_KEY };
enum { R_START, R_VALUE, R_DONE };
enum { O_OPEN, O_FIRST, O_KEY, O_COLON, O_VAL, O_VALUE, O_AFTER, O_NEXT };
enum { A_OPEN, A_FIRST, A_VALUE, A_AFTER, A_NEXT };
enum { S_OPEN, S_BODY, S_ESC, S_U, S_LOW_BS, S_LOW_U, S_LOW };
enum { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
enum { F_KEY = 1, F_NEG = 2 };

typedef struct gframe {
    const struct gframe *up;
    const gkey *keys;          /* K_OBJ: hashes of the additional keys written       */
    uint64_t h;                /* K_STR: hash of the decoded text (keys); K_NUM: the
                                  digits as an integer; K_KEY: candidate properties */
    int32_t node;
    int32_t n;                 /* K_OBJ: next declared property; K_ARR: items; K_STR:
                                  characters; K_LIT: first candidate; K_KEY: bytes  */
    int32_t p;                 /* K_LIT: bytes matched; K_STR: hex digits of \u      */
    uint32_t m;                /* K_OBJ: property of the value to come (-1: an
                                  additional one); K_LIT: past the last candidate;
                                  K_KEY: the property matched; K_STR: \u code units */
    uint16_t depth;            /* objects and arrays open, this one included          */
    uint8_t kind, st, ws;      /* ws: bytes of the current run of whitespace          */
    uint8_t nl;                /* newlines in it                                      */
    uint8_t u8n, u8lo, u8hi;   /* K_STR: continuation bytes to come, the next's range */
    uint8_t nd, fd, ed;        /* K_NUM: digits of the integer, fraction, exponent    */
    uint8_t flags;
} gframe;

#define TMAX 64                /* parses followed at once */

typedef struct gctx {
    const wk_grammar *g;
    arena *ar;
    const gframe **out;
    int n_out;
    bool oom, over;
} gctx;

static gframe *fnew(gctx *x, const gframe *from)
{
    gframe *f = aalloc(x->ar, sizeof *f);
    if (!f) {
        x->oom = true;
        return NULL;
    }
    *f = *from;
    return f;
}

static bool keys_equal(const gkey *a, const gkey *b)
{
    for (; a && b && a != b; a = a->next, b = b->next)
        if (a->h != b->h) return false;
    return a == b;
}

static bool same_parse(const gframe *a, const gframe *b)
{
    for (; a && b && a != b; a = a->up, b = b->up)
        if (a->kind != b->kind || a->st != b->st || a->node != b->node || a->n != b->n || a->p != b->p ||
            a->m != b->m || a->h != b->h || a->depth != b->depth || a->ws != b->ws || a->nl != b->nl || a->u8n != b->u8n ||
            a->u8lo != b->u8lo || a->u8hi != b->u8hi || a->nd != b->nd || a->fd != b->fd || a->ed != b->ed ||
            a->flags != b->flags || !keys_equal(a->keys, b->keys))
            return false;
    return a == b;
}

static int dedup(const gframe **t, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (int j = 0; j < k && !dup; j++) dup = same_parse(t[i], t[j]);
        if (!dup) t[k++] = t[i];
    }
    return k;
}

static void emit(gctx *x, const gframe *f)
{
    if (!f) return;
    if (x->n_out == TMAX) x->n_out = dedup(x->out, x->n_out);
    if (x->n_out == TMAX) {   /* more parses than followed: this one is dropped (the mask may be narrower) */
        x->over = true;
        return;
    }
    x->out[x->n_out++] = f;
}

static bool is_ws(int c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* ---- numbers: digits, and bounds checked on every prefix ------------------------------- */

static const double pow10_tab[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

static bool bounded(const gnode *nd) { return !nd->integer && (nd->has_lo || nd->has_hi); }
static int int_digits(const gnode *nd) { return nd->integer ? G_INT_DIGITS : bounded(nd) ? G_BOUNDED_DIGITS : G_NUM_DIGITS; }

/* is there a v in [a, b) (positive side) or (a, b] (neg) within the bounds? */
static bool meets(const gnode *nd, double a, double b, bool neg)
{
    if (!neg) {
        if (nd->has_hi && (nd->hi_excl ? !(a < nd->hi) : !(a <= nd->hi))) return false;
        if (nd->has_lo && !(b > nd->lo)) return false;
    } else {
        if (nd->has_lo && (nd->lo_excl ? !(b > nd->lo) : !(b >= nd->lo))) return false;
        if (nd->has_hi && !(a < nd->hi)) return false;
    }
    return true;
}

/* can the number begun in f still end within the node's bounds? */
static bool num_viable(const gnode *nd, const gframe *f)
{
    const bool neg = f->flags & F_NEG;
    if (nd->integer) {
        if (f->st == N_START) return true;
        if (f->st == N_MINUS) return nd->ilo <= 0;
        const int64_t p = (int64_t)f->h;
        if (f->st == N_ZERO) return nd->ilo <= 0 && 0 <= nd->ihi;
        int64_t scale = 1;
        for (int j = 0; f->nd + j <= G_INT_DIGITS; j++, scale *= 10) {
            /* the integers with p's digits first and j more */
            const int64_t lo = p * scale, hi = p * scale + scale - 1;
            const int64_t a = neg ? -hi : lo, b = neg ? -lo : hi;
            if (a <= nd->ihi && b >= nd->ilo) return true;
            if (f->nd + j == G_INT_DIGITS) break;
        }
        return false;
    }
    if (!bounded(nd)) return true;
    switch (f->st) {
    case N_START: return true;
    case N_MINUS: return meets(nd, -1e16, 0, true);
    case N_ZERO: return neg ? meets(nd, -1, 0, true) : meets(nd, 0, 1, false);
    case N_INT: {
        const double p = (double)f->h;
        for (int j = 0; f->nd + j <= G_BOUNDED_DIGITS; j++) {
            const double lo = p * pow10_tab[j], hi = (p + 1) * pow10_tab[j];
            if (neg ? meets(nd, -hi, -lo, true) : meets(nd, lo, hi, false)) return true;
        }
        return false;
    }
    case N_DOT: {
        const double p = (double)f->h;
        return neg ? meets(nd, -(p + 1), -p, true) : meets(nd, p, p + 1, false);
    }
    case N_FRAC: {
        const double v = (double)f->h / pow10_tab[f->fd], w = 1 / pow10_tab[f->fd];
        return neg ? meets(nd, -(v + w), -v, true) : meets(nd, v, v + w, false);
    }
    }
    return true;
}

static bool num_accepting(const gframe *f)
{
    return f->st == N_ZERO || f->st == N_INT || f->st == N_FRAC || f->st == N_EXP;
}

/* the number written so far is a whole value within the bounds */
static bool num_ok(const gnode *nd, const gframe *f)
{
    if (!num_accepting(f)) return false;
    const bool neg = f->flags & F_NEG;
    if (nd->integer) {
        const int64_t v = neg ? -(int64_t)f->h : (int64_t)f->h;
        return v >= nd->ilo && v <= nd->ihi;
    }
    if (!bounded(nd)) return true;
    double v = (double)f->h / pow10_tab[f->fd];   /* below 2^53 over an exact power: rounded once, as strtod */
    if (neg) v = -v;
    if (nd->has_lo && (nd->lo_excl ? !(v > nd->lo) : !(v >= nd->lo))) return false;
    if (nd->has_hi && (nd->hi_excl ? !(v < nd->hi) : !(v <= nd->hi))) return false;
    return true;
}

/* ---- stepping ---------------------------------------------------------------------------- */

static void feed(gctx *x, const gframe *f, int c);

/* the parent of a value just ended, as it is after it; NULL: out of memory */
static const gframe *done(gctx *x, const gframe *child)
{
    const gframe *p = child->up;
    gframe *n = fnew(x, p);
    if (!n) return NULL;
    n->ws = n->nl = 0;
    switch (p->kind) {
    case K_ROOT: n->st = R_DONE; break;
    case K_OBJ:
        if (p->st == O_KEY) {
            n->st = O_COLON;
            if (child->kind == K_KEY) {
                n->m = child->m;
                n->n = (int32_t)child->m + 1;
            } else {
                gkey *k = aalloc(x->ar, sizeof *k);
                if (!k) {
                    x->oom = true;
                    return NULL;
                }
                *k = (gkey){ p->keys, child->h };
                n->keys = k;
                n->m = (uint32_t)-1;
            }
        } else n->st = O_AFTER;
        break;
    case K_ARR:
        n->st = A_AFTER;
        n->n++;
        break;
    }
    return n;
}

/* a value of node begins with byte c under parent (already in its waiting state) */
static void start_value(gctx *x, const gframe *parent, int32_t node, int c)
{
    const wk_grammar *g = x->g;
    const gnode *nd = &g->nodes[node];
    if (nd->kind == G_ANYOF) {
        for (int32_t k = 0; k < nd->n; k++) start_value(x, parent, g->alts[nd->a + k], c);
        return;
    }
    if (parent->depth + nd->min_depth > G_DEPTH_MAX) return;   /* could not be finished within the nesting */
    gframe f = { .up = parent, .node = node, .depth = parent->depth };
    switch (nd->kind) {
    case G_OBJECT:
        f.kind = K_OBJ;
        f.depth++;
        break;
    case G_ARRAY:
        f.kind = K_ARR;
        f.depth++;
        break;
    case G_STRING:
        f.kind = K_STR;
        f.h = G_HASH0;
        break;
    case G_NUMBER: f.kind = K_NUM; break;
    case G_LITERALS:
        f.kind = K_LIT;
        f.n = nd->a;
        f.m = (uint32_t)(nd->a + nd->n);
        break;
    }
    feed(x, &f, c);
}

/* whitespace: a run of at most G_WS_MAX bytes with one newline */
static void ws_step(gctx *x, const gframe *f, int c)
{
    if (f->ws >= G_WS_MAX || (c == '\n' && f->nl)) return;
    gframe *n = fnew(x, f);
    if (!n) return;
    n->ws++;
    n->nl += c == '\n';
    emit(x, n);
}

static void to_state(gctx *x, const gframe *f, int st)
{
    gframe *n = fnew(x, f);
    if (!n) return;
    n->st = (uint8_t)st;
    n->ws = n->nl = 0;
    emit(x, n);
}

static bool required_left(const wk_grammar *g, const gnode *nd, int32_t from)
{
    for (int32_t k = from; k < nd->n; k++)
        if (g->props[nd->a + k].required) return true;
    return false;
}

/* a '"' where a key begins: a declared property (the next ones up to the
 * first required), or an additional one */
static void key_start(gctx *x, const gframe *f, const gnode *nd)
{
    const wk_grammar *g = x->g;
    gframe *o = fnew(x, f);
    if (!o) return;
    o->st = O_KEY;
    o->ws = o->nl = 0;
    if (f->n < nd->n) {
        uint64_t mask = 0;
        for (int32_t k = f->n; k < nd->n; k++) {
            mask |= 1ull << k;
            if (g->props[nd->a + k].required) break;
        }
        const gframe kf = { .up = o, .kind = K_KEY, .node = f->node, .h = mask, .depth = f->depth };
        feed(x, &kf, '"');
    }
    if (nd->child >= 0) {
        const gframe sf = { .up = o, .kind = K_STR, .node = g->key_node, .h = G_HASH0, .depth = f->depth,
                            .flags = F_KEY };
        feed(x, &sf, '"');
    }
}

static void feed_obj(gctx *x, const gframe *f, const gnode *nd, int c)
{
    const wk_grammar *g = x->g;
    switch (f->st) {
    case O_OPEN:
        if (c == '{') to_state(x, f, O_FIRST);
        return;
    case O_FIRST:
    case O_NEXT:
        if (is_ws(c)) ws_step(x, f, c);
        else if (c == '}' && f->st == O_FIRST && !required_left(g, nd, f->n)) emit(x, done(x, f));
        else if (c == '"') key_start(x, f, nd);
        return;
    case O_COLON:
        if (is_ws(c)) ws_step(x, f, c);
        else if (c == ':') to_state(x, f, O_VAL);
        return;
    case O_VAL: {
        if (is_ws(c)) {
            ws_step(x, f, c);
            return;
        }
        gframe *n = fnew(x, f);
        if (!n) return;
        n->st = O_VALUE;
        n->ws = n->nl = 0;
        start_value(x, n, f->m != (uint32_t)-1 ? g->props[nd->a + (int32_t)f->m].node : nd->child, c);
        return;
    }
    case O_AFTER:
        if (is_ws(c)) ws_step(x, f, c);
        else if (c == ',' && (f->n < nd->n || nd->child >= 0)) to_state(x, f, O_NEXT);
        else if (c == '}' && !required_left(g, nd, f->n)) emit(x, done(x, f));
        return;
    }
}

static int32_t item_node(const wk_grammar *g, const gnode *nd, int32_t i)
{
    return i < nd->n ? g->alts[nd->a + i] : nd->child;
}

static void feed_arr(gctx *x, const gframe *f, const gnode *nd, int c)
{
    const wk_grammar *g = x->g;
    switch (f->st) {
    case A_OPEN:
        if (c == '[') to_state(x, f, A_FIRST);
        return;
    case A_FIRST:
    case A_NEXT:
        if (is_ws(c)) ws_step(x, f, c);
        else if (c == ']' && f->st == A_FIRST && nd->min == 0) emit(x, done(x, f));
        else if ((nd->max < 0 || f->n < nd->max) && item_node(g, nd, f->n) >= 0) {
            gframe *n = fnew(x, f);
            if (!n) return;
            n->st = A_VALUE;
            n->ws = n->nl = 0;
            start_value(x, n, item_node(g, nd, f->n), c);
        }
        return;
    case A_AFTER:
        if (is_ws(c)) ws_step(x, f, c);
        else if (c == ',' && (nd->max < 0 || f->n < nd->max) && item_node(g, nd, f->n) >= 0) to_state(x, f, A_NEXT);
        else if (c == ']' && f->n >= nd->min) emit(x, done(x, f));
        return;
    }
}

/* the UTF-8 of a code point, hashed into a key's hash */
static uint64_t hash_cp(uint64_t h, uint32_t cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) b[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800) b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        b[0] = (unsigned char)(0xe0 | cp >> 12), b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)),
        b[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
    else
        b[0] = (unsigned char)(0xf0 | cp >> 18), b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f)),
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (unsigned char)(0x80 | (cp & 0x3f)), n = 4;
    return g_hash(h, b, n);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* a string's closing quote: a key of an additional property must be none
 * of the declared ones and none written before in this object */
static void close_string(gctx *x, const gframe *f)
{
    if (f->flags & F_KEY) {
        const gframe *o = f->up;
        const gnode *on = &x->g->nodes[o->node];
        for (int32_t k = 0; k < on->n; k++)
            if (x->g->props[on->a + k].hash == f->h) return;
        for (const gkey *k = o->keys; k; k = k->next)
            if (k->h == f->h) return;
    }
    emit(x, done(x, f));
}

static void feed_str(gctx *x, const gframe *f, const gnode *nd, int c)
{
    const bool key = f->flags & F_KEY;
    gframe *n;
    switch (f->st) {
    case S_OPEN:
        if (c == '"') to_state(x, f, S_BODY);
        return;
    case S_BODY: {
        if (f->u8n) {
            if (c < f->u8lo || c > f->u8hi || !(n = fnew(x, f))) return;
            n->u8n--;
            n->u8lo = 0x80;
            n->u8hi = 0xbf;
            if (key) n->h = g_hash(n->h, &(unsigned char){ (unsigned char)c }, 1);
            emit(x, n);
            return;
        }
        if (c == '"') {
            if (f->n >= nd->min) close_string(x, f);
            return;
        }
        if (c < 0x20 || (nd->max >= 0 && f->n >= nd->max)) return;
        int need = 0, lo = 0x80, hi = 0xbf;
        if (c >= 0x80) {
            if (c >= 0xc2 && c <= 0xdf) need = 1;
            else if (c == 0xe0) need = 2, lo = 0xa0;
            else if (c == 0xed) need = 2, hi = 0x9f;
            else if (c >= 0xe1 && c <= 0xef) need = 2;
            else if (c == 0xf0) need = 3, lo = 0x90;
            else if (c == 0xf4) need = 3, hi = 0x8f;
            else if (c >= 0xf1 && c <= 0xf3) need = 3;
            else return;   /* a continuation byte, C0, C1, F5..FF: not UTF-8 */
        }
        if (!(n = fnew(x, f))) return;
        n->n++;
        if (c == '\\') n->st = S_ESC;
        else if (key) n->h = g_hash(n->h, &(unsigned char){ (unsigned char)c }, 1);
        n->u8n = (uint8_t)need;
        n->u8lo = (uint8_t)lo;
        n->u8hi = (uint8_t)hi;
        emit(x, n);
        return;
    }
    case S_ESC: {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = c ? strchr(from, c) : NULL;
        if (!e && c != 'u') return;
        if (!(n = fnew(x, f))) return;
        if (e) {
            n->st = S_BODY;
            if (key) n->h = g_hash(n->h, &to[e - from], 1);
        } else {
            n->st = S_U;
            n->p = 0;
            n->m = 0;
        }
        emit(x, n);
        return;
    }
    case S_U:
    case S_LOW: {
        const int v = hexval(c);
        if (v < 0 || !(n = fnew(x, f))) return;
        n->m = (n->m & 0xffff0000u) | (((n->m & 0xffffu) << 4) | (uint32_t)v);
        /* surrogates, digit by digit: a low one alone (\udc..\udf..) never
           completes; after a high one only a low one may follow */
        if (f->st == S_U && n->p == 1 && (n->m & 0xffu) >= 0xdc && (n->m & 0xffu) <= 0xdf) return;
        if (f->st == S_LOW && ((n->p == 0 && v != 0xd) || (n->p == 1 && v < 0xc))) return;
        if (++n->p < 4) {
            emit(x, n);
            return;
        }
        const uint32_t u = n->m & 0xffffu;
        if (f->st == S_U) {
            if (u >= 0xd800 && u <= 0xdbff) {   /* a high surrogate: its low half must follow */
                n->st = S_LOW_BS;
                n->m = u << 16;
            } else if (u >= 0xdc00 && u <= 0xdfff) return;   /* a lone low surrogate */
            else {
                n->st = S_BODY;
                if (key) n->h = hash_cp(n->h, u);
            }
        } else {
            if (u < 0xdc00 || u > 0xdfff) return;
            n->st = S_BODY;
            if (key) n->h = hash_cp(n->h, 0x10000 + (((n->m >> 16) - 0xd800) << 10) + (u - 0xdc00));
        }
        emit(x, n);
        return;
    }
    case S_LOW_BS:
        if (c == '\\') to_state(x, f, S_LOW_U);
        return;
    case S_LOW_U:
        if (c != 'u' || !(n = fnew(x, f))) return;
        n->st = S_LOW;
        n->p = 0;
        emit(x, n);
        return;
    }
}

static void feed_num(gctx *x, const gframe *f, const gnode *nd, int c)
{
    const bool digit = c >= '0' && c <= '9', integer = nd->integer, expo = !integer && !bounded(nd);
    int st = -1;   /* the next state; -1: the number ends before c */
    switch (f->st) {
    case N_START:
        if (c == '-') st = N_MINUS;
        else if (c == '0') st = N_ZERO;
        else if (digit) st = N_INT;
        else return;
        break;
    case N_MINUS:
        if (c == '0') st = N_ZERO;
        else if (digit) st = N_INT;
        else return;
        break;
    case N_ZERO:
    case N_INT:
        if (digit && f->st == N_INT && f->nd < int_digits(nd)) st = N_INT;
        else if (c == '.' && !integer && (!bounded(nd) || f->nd < G_BOUNDED_DIGITS)) st = N_DOT;
        else if ((c == 'e' || c == 'E') && expo) st = N_E;
        break;
    case N_DOT:
        if (!digit) return;
        st = N_FRAC;
        break;
    case N_FRAC:
        if (digit && (bounded(nd) ? f->nd + f->fd < G_BOUNDED_DIGITS : f->fd < G_NUM_DIGITS)) st = N_FRAC;
        else if ((c == 'e' || c == 'E') && expo) st = N_E;
        break;
    case N_E:
        if (c == '+' || c == '-') st = N_ESIGN;
        else if (digit) st = N_EXP;
        else return;
        break;
    case N_ESIGN:
        if (!digit) return;
        st = N_EXP;
        break;
    case N_EXP:
        if (digit && f->ed < G_EXP_DIGITS) st = N_EXP;
        break;
    }
    if (st < 0) {   /* c is not the number's: it ends here, and c goes to the parent */
        if (!num_ok(nd, f)) return;
        const gframe *p = done(x, f);
        if (p) feed(x, p, c);
        return;
    }
    gframe *n = fnew(x, f);
    if (!n) return;
    n->st = (uint8_t)st;
    if (c == '-' && st == N_MINUS) n->flags |= F_NEG;
    if (digit) {
        if (st == N_INT || st == N_ZERO) n->nd++;
        if (st == N_FRAC) n->fd++;
        if (st == N_EXP) n->ed++;
        if (st != N_EXP) n->h = n->h * 10 + (uint64_t)(c - '0');
    }
    if (!num_viable(nd, n)) return;
    emit(x, n);
}

static void feed_lit(gctx *x, const gframe *f, int c)
{
    const wk_grammar *g = x->g;
    int32_t lo = f->n;
    const int32_t hi = (int32_t)f->m, pos = f->p;
    int64_t len;
    g_lit(g, lo, &len);
    const bool whole = len == pos;   /* the first candidate is written out */
    if (whole) lo++;
    /* candidates [lo, hi) share their first pos bytes and are longer,
       sorted: those whose byte pos is c are a run (binary searches: an
       enum may be long) */
    int32_t a = lo, b = hi;
    while (a < b) {
        const int32_t mid = a + (b - a) / 2;
        if ((unsigned char)g_lit(g, mid, &len)[pos] < (unsigned char)c) a = mid + 1;
        else b = mid;
    }
    b = hi;
    for (int32_t l = a; l < b;) {
        const int32_t mid = l + (b - l) / 2;
        if ((unsigned char)g_lit(g, mid, &len)[pos] <= (unsigned char)c) l = mid + 1;
        else b = mid;
    }
    if (a == b) {
        if (whole) {   /* the literal ended before c */
            const gframe *p = done(x, f);
            if (p) feed(x, p, c);
        }
        return;
    }
    gframe *n = fnew(x, f);
    if (!n) return;
    n->n = a;
    n->m = (uint32_t)b;
    n->p = pos + 1;
    g_lit(g, a, &len);
    if (b - a == 1 && len == pos + 1) emit(x, done(x, n));   /* whole, and nothing longer */
    else emit(x, n);
}

static void feed_key(gctx *x, const gframe *f, int c)
{
    const wk_grammar *g = x->g;
    const gnode *nd = &g->nodes[f->node];
    uint64_t keep = 0;
    int32_t whole = -1;
    for (int32_t k = 0; k < nd->n; k++) {
        if (!(f->h >> k & 1)) continue;
        int64_t len;
        const char *s = g_lit(g, g->props[nd->a + k].lit, &len);
        if (len <= f->n || (unsigned char)s[f->n] != c) continue;
        keep |= 1ull << k;
        if (len == f->n + 1) whole = k;
    }
    if (!keep) return;
    gframe *n = fnew(x, f);
    if (!n) return;
    n->h = keep;
    n->n++;
    if (whole >= 0) {   /* the closing quote of a declared name */
        n->m = (uint32_t)whole;
        emit(x, done(x, n));
    } else emit(x, n);
}

static void feed(gctx *x, const gframe *f, int c)
{
    const gnode *nd = &x->g->nodes[f->node];
    switch (f->kind) {
    case K_ROOT:
        if (f->st == R_START) {
            gframe *n = fnew(x, f);
            if (!n) return;
            n->st = R_VALUE;
            start_value(x, n, x->g->root, c);
        }
        return;
    case K_OBJ: feed_obj(x, f, nd, c); return;
    case K_ARR: feed_arr(x, f, nd, c); return;
    case K_STR: feed_str(x, f, nd, c); return;
    case K_NUM: feed_num(x, f, nd, c); return;
    case K_LIT: feed_lit(x, f, c); return;
    case K_KEY: feed_key(x, f, c); return;
    }
}

/* the parse is a whole value (numbers and literals that could go on end here) */
static bool can_end(const wk_grammar *g, const gframe *f)
{
    if (f->kind == K_ROOT) return f->st == R_DONE;
    if (!f->up || f->up->kind != K_ROOT) return false;
    if (f->kind == K_NUM) return num_ok(&g->nodes[f->node], f);
    if (f->kind == K_LIT) {
        int64_t len;
        g_lit(g, f->n, &len);
        return len == f->p;
    }
    return false;
}

/* ---- states ------------------------------------------------------------------------------- */

/* the parse sets of a mask's walk, one per trie depth */
typedef struct level {
    const gframe **t;
    int n;
    amark mark;
} level;

struct wk_grammar_state {
    wk_grammar *g;
    arena live, spare, scratch;   /* live: the parses; scratch: tries; spare: the next live */
    const gframe **th;
    int n;
    bool ended;                   /* an end token was taken */
    level *lv;
    int cap_lv;
};

static const gkey *copy_keys(arena *a, const gkey *k, bool *oom)
{
    if (!k) return NULL;
    gkey *n = aalloc(a, sizeof *n);
    if (!n) {
        *oom = true;
        return NULL;
    }
    n->h = k->h;
    n->next = copy_keys(a, k->next, oom);
    return n;
}

static const gframe *copy_parse(arena *a, const gframe *f, bool *oom)
{
    if (!f) return NULL;
    gframe *n = aalloc(a, sizeof *n);
    if (!n) {
        *oom = true;
        return NULL;
    }
    *n = *f;
    n->up = copy_parse(a, f->up, oom);
    n->keys = copy_keys(a, f->keys, oom);
    return n;
}

wk_grammar_state *wk_grammar_state_new(wk_grammar *g)
{
    if (!g) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_state_new: the grammar is NULL");
        return NULL;
    }
    wk_grammar_state *s = calloc(1, sizeof *s);
    gframe *root = s ? aalloc(&s->live, sizeof *root) : NULL;
    const gframe **th = root ? aalloc(&s->live, sizeof *th) : NULL;
    if (!th) {
        wk_grammar_state_free(s);
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    *root = (gframe){ .kind = K_ROOT, .st = R_START, .node = g->root };
    th[0] = root;
    s->th = th;
    s->n = 1;
    s->g = wk_grammar_retain(g);
    return s;
}

void wk_grammar_state_free(wk_grammar_state *s)
{
    if (!s) return;
    afree(&s->live);
    afree(&s->spare);
    afree(&s->scratch);
    free(s->lv);
    wk_grammar_release(s->g);
    free(s);
}

/* one byte over a parse set, into out (TMAX slots) */
static int step_set(gctx *x, const gframe *const *in, int n, int c, const gframe **out)
{
    x->out = out;
    x->n_out = 0;
    for (int i = 0; i < n; i++) feed(x, in[i], c);
    return x->n_out > 1 ? dedup(out, x->n_out) : x->n_out;
}

wk_status wk_grammar_state_accept(wk_grammar_state *s, const char *bytes, size_t len)
{
    if (!s || (!bytes && len)) return wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_state_accept: NULL argument");
    if (s->ended && len) return wk_error_set(WK_ERR_ARGUMENT, "the grammar's output has ended: nothing may follow");
    if (!len) return WK_OK;
    areset(&s->scratch);
    gctx x = { .g = s->g, .ar = &s->scratch };
    const gframe *const *cur = s->th;
    int n = s->n;
    for (size_t i = 0; i < len; i++) {
        const gframe **out = aalloc(&s->scratch, TMAX * sizeof *out);
        if (!out) return wk_error_set(WK_ERR_MEMORY, "out of memory");
        n = step_set(&x, cur, n, (unsigned char)bytes[i], out);
        if (x.oom) return wk_error_set(WK_ERR_MEMORY, "out of memory");
        if (n == 0)
            return wk_error_set(WK_ERR_ARGUMENT, "byte %zu of %zu (0x%02x) does not continue a text the grammar accepts",
                                i, len, (unsigned char)bytes[i]);
        cur = out;
    }
    /* the new parses into the spare arena, which becomes the live one */
    areset(&s->spare);
    bool oom = false;
    const gframe **th = aalloc(&s->spare, (size_t)n * sizeof *th);
    for (int i = 0; th && i < n; i++) th[i] = copy_parse(&s->spare, cur[i], &oom);
    if (!th || oom) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    const arena t = s->live;
    s->live = s->spare;
    s->spare = t;
    s->th = th;
    s->n = n;
    areset(&s->scratch);
    return WK_OK;
}

bool wk_grammar_state_complete(const wk_grammar_state *s)
{
    if (!s) return false;
    if (s->ended) return true;
    for (int i = 0; i < s->n; i++)
        if (can_end(s->g, s->th[i])) return true;
    return false;
}

bool wk_grammar_state_finished(const wk_grammar_state *s)
{
    if (!s) return false;
    if (s->ended) return true;
    for (int i = 0; i < s->n; i++)
        if (!(s->th[i]->kind == K_ROOT && s->th[i]->st == R_DONE)) return false;
    return s->n > 0;
}

/* ---- vocabularies ---------------------------------------------------------------------------- */

/* a trie of byte strings in preorder: node i is byte[i] at depth[i]
 * (1-based), its subtree ends before skip[i], and the tokens whose bytes
 * end there are ids[off[i] .. off[i + 1]) */
typedef struct gtrie {
    int32_t n, max_depth;
    uint8_t *byte;
    uint16_t *depth;
    int32_t *skip, *off, *ids;
} gtrie;

#define PLAIN_BITS 16          /* bitsets of plain tokens of 1 .. 16 characters */
#define TOKEN_MAX 4096         /* longer tokens are never allowed */

struct wk_grammar_vocab {
    int32_t n, words;
    char *bytes;
    int64_t *off;              /* token i: bytes[off[i] .. off[i + 1])            */
    int32_t *eog;
    int n_eog;
    gtrie full, rest;          /* every token with text; those that are not plain  */
    uint32_t *le;              /* [PLAIN_BITS + 1][words]: plain tokens of <= k chars */
    int32_t *long_ids, *long_chars, n_long;   /* plain tokens of more, by characters */
};

int32_t wk_grammar_vocab_size(const wk_grammar_vocab *v) { return v ? v->n : 0; }

static void trie_free(gtrie *t)
{
    free(t->byte);
    free(t->depth);
    free(t->skip);
    free(t->off);
    free(t->ids);
    *t = (gtrie){ 0 };
}

void wk_grammar_vocab_free(wk_grammar_vocab *v)
{
    if (!v) return;
    trie_free(&v->full);
    trie_free(&v->rest);
    free(v->bytes);
    free(v->off);
    free(v->eog);
    free(v->le);
    free(v->long_ids);
    free(v->long_chars);
    free(v);
}

static _Thread_local const wk_grammar_vocab *g_sort_v;
static int by_bytes(const void *pa, const void *pb)
{
    const wk_grammar_vocab *v = g_sort_v;
    const int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    const int64_t an = v->off[a + 1] - v->off[a], bn = v->off[b + 1] - v->off[b];
    const int r = memcmp(v->bytes + v->off[a], v->bytes + v->off[b], (size_t)(an < bn ? an : bn));
    if (r) return r;
    if (an != bn) return an < bn ? -1 : 1;
    return (a > b) - (a < b);
}

/* the trie of ids[0 .. n) (sorted by their bytes, none empty) */
static bool trie_build(gtrie *t, const wk_grammar_vocab *v, const int32_t *ids, int32_t n)
{
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) total += v->off[ids[i] + 1] - v->off[ids[i]];
    /* nodes: at most the total bytes */
    const size_t cap = (size_t)total + 1;
    t->byte = malloc(cap);
    t->depth = malloc(cap * sizeof *t->depth);
    t->skip = malloc(cap * sizeof *t->skip);
    t->off = malloc((cap + 1) * sizeof *t->off);
    t->ids = malloc(((size_t)n + 1) * sizeof *t->ids);
    int32_t *node_of = malloc(((size_t)n + 1) * sizeof *node_of);
    int32_t path[TOKEN_MAX];
    if (!t->byte || !t->depth || !t->skip || !t->off || !t->ids || !node_of) {
        free(node_of);
        return false;
    }
    int32_t nn = 0, sp = 0;
    const char *prev = NULL;
    int64_t prev_n = 0;
    for (int32_t k = 0; k < n; k++) {
        const char *s = v->bytes + v->off[ids[k]];
        const int64_t len = v->off[ids[k] + 1] - v->off[ids[k]];
        int64_t l = 0;
        while (prev && l < len && l < prev_n && s[l] == prev[l]) l++;
        for (; sp > l; sp--) t->skip[path[sp - 1]] = nn;
        for (int64_t d = l; d < len; d++) {
            t->byte[nn] = (uint8_t)s[d];
            t->depth[nn] = (uint16_t)(d + 1);
            path[sp++] = nn++;
        }
        node_of[k] = path[len - 1];
        t->ids[k] = ids[k];
        if (len > t->max_depth) t->max_depth = (int32_t)len;
        prev = s;
        prev_n = len;
    }
    for (; sp > 0; sp--) t->skip[path[sp - 1]] = nn;
    /* tokens by node (their nodes rise with the sorted order) */
    int32_t k = 0;
    for (int32_t i = 0; i <= nn; i++) {
        t->off[i] = k;
        while (k < n && node_of[k] == i) k++;
    }
    t->n = nn;
    free(node_of);
    return true;
}

/* plain string text: no '"', '\\' or control byte, whole UTF-8
 * characters; their count, or -1 */
static int64_t plain_chars(const unsigned char *s, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; k++) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            if (c < 0x20 || c == '"' || c == '\\') return -1;
            i++;
            continue;
        }
        int need;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c == 0xe0) need = 2, lo = 0xa0;
        else if (c == 0xed) need = 2, hi = 0x9f;
        else if (c >= 0xe1 && c <= 0xef) need = 2;
        else if (c == 0xf0) need = 3, lo = 0x90;
        else if (c == 0xf4) need = 3, hi = 0x8f;
        else if (c >= 0xf1 && c <= 0xf3) need = 3;
        else return -1;
        for (int j = 1; j <= need; j++) {
            if (i + j >= n) return -1;
            const unsigned char d = s[i + j];
            if (d < (j == 1 ? lo : 0x80) || d > (j == 1 ? hi : 0xbf)) return -1;
        }
        i += need + 1;
    }
    return k;
}

static wk_grammar_vocab *vocab_index(wk_grammar_vocab *v)
{
    const int32_t n = v->n;
    v->words = (n + 31) / 32;
    int32_t *all = malloc(((size_t)n + 1) * sizeof *all), *rest = malloc(((size_t)n + 1) * sizeof *rest);
    int64_t *chars = malloc(((size_t)n + 1) * sizeof *chars);
    v->le = calloc((size_t)(PLAIN_BITS + 1) * (size_t)v->words + 1, sizeof *v->le);
    v->long_ids = malloc(((size_t)n + 1) * sizeof *v->long_ids);
    v->long_chars = malloc(((size_t)n + 1) * sizeof *v->long_chars);
    bool ok = all && rest && chars && v->le && v->long_ids && v->long_chars;
    int32_t na = 0, nr = 0;
    for (int32_t i = 0; ok && i < n; i++) {
        const int64_t len = v->off[i + 1] - v->off[i];
        bool is_eog = false;
        for (int k = 0; k < v->n_eog; k++) is_eog = is_eog || v->eog[k] == i;
        chars[i] = -1;
        if (len == 0 || len > TOKEN_MAX || is_eog) continue;   /* no text, or an end token: never by its bytes */
        all[na++] = i;
        chars[i] = plain_chars((const unsigned char *)v->bytes + v->off[i], len);
        if (chars[i] < 0) rest[nr++] = i;
        else if (chars[i] > PLAIN_BITS) {
            v->long_ids[v->n_long] = i;
            v->long_chars[v->n_long++] = (int32_t)chars[i];
        } else
            for (int64_t k = chars[i]; k <= PLAIN_BITS; k++)
                v->le[k * v->words + i / 32] |= 1u << (i % 32);
    }
    if (ok) {
        g_sort_v = v;
        qsort(all, (size_t)na, sizeof *all, by_bytes);
        qsort(rest, (size_t)nr, sizeof *rest, by_bytes);
        /* long plain tokens by their characters (insertion into place: they are few) */
        for (int32_t i = 1; i < v->n_long; i++)
            for (int32_t j = i; j > 0 && v->long_chars[j] < v->long_chars[j - 1]; j--) {
                int32_t t = v->long_chars[j];
                v->long_chars[j] = v->long_chars[j - 1];
                v->long_chars[j - 1] = t;
                t = v->long_ids[j];
                v->long_ids[j] = v->long_ids[j - 1];
                v->long_ids[j - 1] = t;
            }
        ok = trie_build(&v->full, v, all, na) && trie_build(&v->rest, v, rest, nr);
    }
    free(all);
    free(rest);
    free(chars);
    if (!ok) {
        wk_grammar_vocab_free(v);
        wk_error_set(WK_ERR_MEMORY, "out of memory indexing a vocabulary of %d tokens", (int)n);
        return NULL;
    }
    return v;
}

wk_grammar_vocab *wk_grammar_vocab_from_tokens(int32_t n, const char *const *bytes, const size_t *lens,
                                               const int32_t *eog, int n_eog)
{
    wk_clear_error();
    if (n <= 0 || (!bytes && n) || !lens || n_eog < 0 || (n_eog && !eog)) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_vocab_from_tokens: bad arguments (%d tokens)", (int)n);
        return NULL;
    }
    wk_grammar_vocab *v = calloc(1, sizeof *v);
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) total += (int64_t)lens[i];
    if (v) {
        v->n = n;
        v->off = malloc(((size_t)n + 1) * sizeof *v->off);
        v->bytes = malloc((size_t)total + 1);
        v->eog = malloc(((size_t)n_eog + 1) * sizeof *v->eog);
    }
    if (!v || !v->off || !v->bytes || !v->eog) {
        wk_grammar_vocab_free(v);
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    int64_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        v->off[i] = o;
        if (lens[i]) memcpy(v->bytes + o, bytes[i], lens[i]);
        o += (int64_t)lens[i];
    }
    v->off[n] = o;
    for (int i = 0; i < n_eog; i++)
        if (eog[i] >= 0 && eog[i] < n) v->eog[v->n_eog++] = eog[i];
    return vocab_index(v);
}

wk_grammar_vocab *wk_grammar_vocab_new(const wk_llm *m)
{
    wk_clear_error();
    if (!m) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_vocab_new: the model is NULL");
        return NULL;
    }
    const wk_llm_info *in = wk_llm_get_info(m);
    const int32_t n = (int32_t)in->n_vocab;
    const wk_tokenizer *tk = llm_text_tokenizer(m);
    char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    const char **ptrs = calloc((size_t)n, sizeof *ptrs);
    int32_t eog[64];
    int n_eog = 0;
    bool ok = texts && lens && ptrs;
    /* what the engine's text shows for each token: the tokenizer's
       decoder (raw bytes, the leading space kept, special tokens none) */
    const int32_t nt = tk ? wk_tokenizer_n_tokens(tk) : 0;
    for (int32_t i = 0; ok && i < n; i++) {
        if (wk_llm_is_eog(m, i) && n_eog < 64) eog[n_eog++] = i;
        if (i < nt) {
            if (wk_tokenizer_decode(tk, &i, 1, WK_TOK_RAW | WK_TOK_KEEP_SPACE | WK_TOK_SKIP_SPECIAL, &texts[i],
                                    &lens[i]) != WK_OK)
                ok = false;
            ptrs[i] = texts[i];
        } else ptrs[i] = wk_llm_token_text(m, i, &lens[i]);
    }
    wk_grammar_vocab *v = ok ? wk_grammar_vocab_from_tokens(n, ptrs, lens, eog, n_eog) : NULL;
    if (!ok && texts && lens && ptrs) wk_error_wrap("the vocabulary's token texts");
    else if (!ok) wk_error_set(WK_ERR_MEMORY, "out of memory");
    for (int32_t i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(lens);
    free(ptrs);
    return v;
}

/* ---- tokens and masks -------------------------------------------------------------------------- */

static bool is_eog(const wk_grammar_vocab *v, int32_t t)
{
    for (int k = 0; k < v->n_eog; k++)
        if (v->eog[k] == t) return true;
    return false;
}

wk_status wk_grammar_state_accept_token(wk_grammar_state *s, const wk_grammar_vocab *v, int32_t tok)
{
    if (!s || !v || tok < 0 || tok >= v->n)
        return wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_state_accept_token: %s", !s || !v ? "NULL argument" : "token out of range");
    if (is_eog(v, tok)) {
        if (!wk_grammar_state_complete(s))
            return wk_error_set(WK_ERR_ARGUMENT, "an end token before the grammar's text is complete");
        s->ended = true;
        return WK_OK;
    }
    const int64_t len = v->off[tok + 1] - v->off[tok];
    if (len == 0) return wk_error_set(WK_ERR_ARGUMENT, "token %d has no text: the grammar never allows it", (int)tok);
    return wk_grammar_state_accept(s, v->bytes + v->off[tok], (size_t)len);
}

/* the tokens of trie t that parses th[0 .. n) accept, into bits */
static bool walk(wk_grammar_state *s, const gtrie *t, const gframe *const *th, int n, uint32_t *bits)
{
    if (!n || !t->n) return true;
    if (t->max_depth + 1 > s->cap_lv) {
        level *l = realloc(s->lv, (size_t)(t->max_depth + 1) * sizeof *l);
        if (!l) return false;
        s->lv = l;
        s->cap_lv = t->max_depth + 1;
    }
    arena *ar = &s->scratch;
    gctx x = { .g = s->g, .ar = ar };
    s->lv[0] = (level){ (const gframe **)th, n, amark_get(ar) };
    for (int32_t i = 0; i < t->n;) {
        const int d = t->depth[i];
        const level *up = &s->lv[d - 1];
        arewind(ar, up->mark);
        const gframe **out = aalloc(ar, TMAX * sizeof *out);
        if (!out) return false;
        const int k = step_set(&x, up->t, up->n, t->byte[i], out);
        if (x.oom) return false;
        if (k == 0) {
            i = t->skip[i];
            continue;
        }
        s->lv[d] = (level){ out, k, amark_get(ar) };
        for (int32_t j = t->off[i]; j < t->off[i + 1]; j++) bits[t->ids[j] / 32] |= 1u << (t->ids[j] % 32);
        i++;
    }
    arewind(ar, s->lv[0].mark);
    return true;
}

int64_t wk_grammar_state_mask(wk_grammar_state *s, const wk_grammar_vocab *v, uint32_t *bits)
{
    if (!s || !v || !bits) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_grammar_state_mask: NULL argument");
        return -1;
    }
    memset(bits, 0, (size_t)v->words * sizeof *bits);
    if (s->ended) return 0;
    if (wk_grammar_state_complete(s))
        for (int k = 0; k < v->n_eog; k++) bits[v->eog[k] / 32] |= 1u << (v->eog[k] % 32);
    /* parses inside a string take plain tokens by their length, and walk
       the other tokens only; the rest walk every token */
    const gframe *in_str[TMAX], *other[TMAX];
    int ns = 0, no = 0;
    for (int i = 0; i < s->n; i++) {
        const gframe *f = s->th[i];
        if (f->kind == K_STR && f->st == S_BODY) {
            in_str[ns++] = f;
            if (f->u8n) continue;   /* inside a character: no plain token starts with its continuation */
            const gnode *nd = &s->g->nodes[f->node];
            const int64_t room = nd->max < 0 ? INT64_MAX : nd->max - f->n;
            if (room <= 0) continue;
            const uint32_t *le = v->le + (room < PLAIN_BITS ? room : PLAIN_BITS) * v->words;
            for (int32_t w = 0; w < v->words; w++) bits[w] |= le[w];
            for (int32_t k = 0; room > PLAIN_BITS && k < v->n_long && v->long_chars[k] <= room; k++)
                bits[v->long_ids[k] / 32] |= 1u << (v->long_ids[k] % 32);
        } else other[no++] = f;
    }
    areset(&s->scratch);
    if (!walk(s, &v->rest, in_str, ns, bits) || !walk(s, &v->full, other, no, bits)) {
        areset(&s->scratch);
        wk_error_set(WK_ERR_MEMORY, "out of memory for a token mask");
        return -1;
    }
    areset(&s->scratch);
    int64_t count = 0;
    for (int32_t w = 0; w < v->words; w++) count += __builtin_popcount(bits[w]);
    return count;
}
