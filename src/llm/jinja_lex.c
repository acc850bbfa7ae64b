/* jinja_lex.c — a chat template's text to tokens, as jinja2's lexer makes
 * them in the environment transformers renders chat templates with
 * (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False):
 *
 *   - newlines (\r\n, \r, \n) become \n and one trailing newline goes;
 *   - text runs up to the next {{, {% or {#; "{%-", "{{-", "{#-" strip
 *     the white space before the tag (Python's str.rstrip: Unicode white
 *     space too), "-%}", "-}}", "-#}" the white space after it;
 *   - lstrip_blocks: before {% and {# (not {{), the spaces and tabs
 *     between the line's start and the tag go, unless "{%+";
 *   - trim_blocks: one newline right after %} or #} goes, unless "+%}";
 *   - {% raw %} ... {% endraw %} is text;
 *   - inside a tag: names, numbers (1_000, 0x1F, 1.5e3), strings with
 *     Python's escapes, operators; a tag ends only where its brackets
 *     balance.
 * Each rule follows jinja2/lexer.py (its regular expressions, in order).
 */
#include <stdlib.h>
#include <string.h>
#include "jinja.h"

typedef struct lex {
    jctx *c;
    const char *s;
    size_t n, pos;
    int line;
    jtok *t;
    int nt, cap;
    bool line_starting;
    char bal[256];
    int nbal;
} lex;

static jtok *push(lex *L, int type, int line)
{
    if (L->nt == L->cap) {
        int cap = L->cap ? L->cap * 2 : 256;
        if (cap > (1 << 26)) jfail(L->c, JERR_LIMIT, line, "the template has too many tokens");
        L->t = jrealloc(L->c, L->t, (size_t)L->cap * sizeof(jtok), (size_t)cap * sizeof(jtok));
        L->cap = cap;
    }
    jtok *k = &L->t[L->nt++];
    k->type = (uint8_t)type;
    k->line = line;
    return k;
}

/* move to position p, counting lines */
static void go(lex *L, size_t p)
{
    for (size_t i = L->pos; i < p; i++)
        if (L->s[i] == '\n') L->line++;
    L->pos = p;
}

/* the length of the white space (Python's \s) at p */
static size_t space_at(const lex *L, size_t p)
{
    size_t i = p;
    while (i < L->n) {
        uint32_t cp;
        int k = ju_next(L->s + i, L->n - i, &cp);
        if (!ju_isspace(cp)) break;
        i += (size_t)k;
    }
    return i - p;
}

static bool at(const lex *L, size_t p, const char *w)
{
    size_t k = strlen(w);
    return p <= L->n && L->n - p >= k && !memcmp(L->s + p, w, k);
}

/* text[0, n) without its trailing white space (Unicode, like str.rstrip) */
static size_t rstrip_len(const char *text, size_t n)
{
    size_t end = n, i = 0;
    while (i < n) {   /* the end of the last non-space code point */
        uint32_t cp;
        int k = ju_next(text + i, n - i, &cp);
        i += (size_t)k;
        if (!ju_isspace(cp)) end = i;
    }
    for (i = 0; i < n;) {   /* all white space */
        uint32_t cp;
        int k = ju_next(text + i, n - i, &cp);
        if (!ju_isspace(cp)) return end;
        i += (size_t)k;
    }
    return 0;
}

/* The text before a tag, after the tag's white-space control: sign '-',
 * '+' or 0; lstrip: the tag is a block, comment or raw (not a variable). */
static void emit_text(lex *L, size_t start, size_t end, char sign, bool lstrip)
{
    const char *text = L->s + start;
    size_t n = end - start;
    if (sign == '-') {
        n = rstrip_len(text, n);
    } else if (sign != '+' && lstrip) {
        size_t l_pos = 0;
        for (size_t i = n; i > 0; i--)
            if (text[i - 1] == '\n') {
                l_pos = i;
                break;
            }
        if ((l_pos > 0 || L->line_starting) && l_pos < n) {
            bool all = true;
            for (size_t i = l_pos; i < n && all;) {
                uint32_t cp;
                int k = ju_next(text + i, n - i, &cp);
                all = ju_isspace(cp);
                i += (size_t)k;
            }
            if (all) n = l_pos;
        }
    }
    if (n) {
        jtok *k = push(L, JT_DATA, L->line);
        k->p = text;
        k->n = n;
    }
    go(L, end);
}

/* {%[-+]?\s*raw\s*(-%}\s*|%}) at p: its end, or 0 */
static size_t raw_begin(const lex *L, size_t p, const char *word)
{
    size_t i = p + 2;
    if (i < L->n && (L->s[i] == '-' || L->s[i] == '+')) i++;
    i += space_at(L, i);
    if (!at(L, i, word)) return 0;
    i += strlen(word);
    i += space_at(L, i);
    return i;
}

static void lex_comment(lex *L, int open_line)
{
    for (size_t p = L->pos; p < L->n; p++) {
        size_t e = 0;
        if (at(L, p, "+#}")) e = p + 3;
        else if (at(L, p, "-#}")) e = p + 3 + space_at(L, p + 3);
        else if (at(L, p, "#}")) e = p + 2 + (p + 2 < L->n && L->s[p + 2] == '\n');
        if (e) {
            go(L, e);
            L->line_starting = e > 0 && L->s[e - 1] == '\n';
            return;
        }
    }
    jfail(L->c, JERR_SYNTAX, open_line, "missing end of comment tag");
}

static void lex_raw(lex *L, int open_line)
{
    for (size_t p = L->pos; p < L->n; p++) {
        if (L->s[p] != '{' || !at(L, p, "{%")) continue;
        size_t i = raw_begin(L, p, "endraw");
        if (!i) continue;
        size_t e = 0;
        if (at(L, i, "+%}")) e = i + 3;
        else if (at(L, i, "-%}")) e = i + 3 + space_at(L, i + 3);
        else if (at(L, i, "%}")) e = i + 2 + (i + 2 < L->n && L->s[i + 2] == '\n');
        if (!e) continue;
        char sign = L->s[p + 2] == '-' || L->s[p + 2] == '+' ? L->s[p + 2] : 0;
        emit_text(L, L->pos, p, sign, true);
        go(L, e);
        L->line_starting = L->s[e - 1] == '\n';
        return;
    }
    jfail(L->c, JERR_SYNTAX, open_line, "missing end of raw directive");
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool is_name_start(unsigned char ch) { return (ch | 32) >= 'a' && (ch | 32) <= 'z' ? true : ch == '_' || ch >= 0x80; }
static bool is_name_char(unsigned char ch) { return is_name_start(ch) || is_digit((char)ch); }

/* (\d+_)*\d+ at p: its end, or p */
static size_t digits(const lex *L, size_t p)
{
    size_t i = p;
    if (i >= L->n || !is_digit(L->s[i])) return p;
    while (i < L->n && is_digit(L->s[i])) {
        i++;
        if (i + 1 < L->n && L->s[i] == '_' && is_digit(L->s[i + 1])) i++;
    }
    return i;
}

static void number_value(lex *L, jtok *k, size_t start, size_t end, bool is_float)
{
    char buf[128];
    size_t m = 0;
    for (size_t i = start; i < end; i++)
        if (L->s[i] != '_') {
            if (m + 1 >= sizeof buf) jfail(L->c, JERR_SYNTAX, L->line, "a number of more than 120 digits");
            buf[m++] = L->s[i];
        }
    buf[m] = 0;
    char *e;
    if (is_float) {
        k->type = JT_FLOAT;
        k->f = strtod(buf, &e);
        return;
    }
    k->type = JT_INT;
    int base = 10;
    const char *d = buf;
    if (m > 1 && buf[0] == '0' && (buf[1] | 32) == 'x') base = 16, d = buf + 2;
    else if (m > 1 && buf[0] == '0' && (buf[1] | 32) == 'o') base = 8, d = buf + 2;
    else if (m > 1 && buf[0] == '0' && (buf[1] | 32) == 'b') base = 2, d = buf + 2;
    unsigned long long v = 0;
    for (; *d; d++) {
        int dv = is_digit(*d) ? *d - '0' : (*d | 32) - 'a' + 10;
        if (v > (9223372036854775807ULL - (unsigned)dv) / (unsigned)base)
            jfail(L->c, JERR_SYNTAX, L->line, "the integer %s is too large", buf);
        v = v * (unsigned)base + (unsigned)dv;
    }
    k->i = (int64_t)v;
}

/* a number at p (p: a digit): its end */
static size_t lex_number(lex *L, size_t p)
{
    jtok *k = push(L, JT_INT, L->line);
    /* float: (?<!\.)(\d+_)*\d+((\.(\d+_)*\d+)?e[+-]?(\d+_)*\d+|\.(\d+_)*\d+) */
    if (p == 0 || L->s[p - 1] != '.') {
        size_t i = digits(L, p), f = i;
        if (i + 1 < L->n && L->s[i] == '.' && is_digit(L->s[i + 1])) f = digits(L, i + 1);
        if (f < L->n && (L->s[f] | 32) == 'e') {
            size_t e = f + 1;
            if (e < L->n && (L->s[e] == '+' || L->s[e] == '-')) e++;
            size_t ee = digits(L, e);
            if (ee > e) {
                number_value(L, k, p, ee, true);
                return ee;
            }
        }
        if (f > i) {
            number_value(L, k, p, f, true);
            return f;
        }
    }
    /* integer: 0b.. 0o.. 0x.. [1-9](_?\d)* 0(_?0)* */
    size_t i = p;
    const char *s = L->s;
    char x = p + 1 < L->n ? (char)(s[p + 1] | 32) : 0;
    if (s[p] == '0' && (x == 'b' || x == 'o' || x == 'x')) {
        size_t j = p + 2;
        for (;;) {
            size_t q = j < L->n && s[j] == '_' ? j + 1 : j;
            if (q >= L->n) break;
            char ch = (char)(s[q] | 32);
            bool ok = x == 'b' ? (ch == '0' || ch == '1') : x == 'o' ? (ch >= '0' && ch <= '7')
                                                                     : (is_digit(ch) || (ch >= 'a' && ch <= 'f'));
            if (!ok) break;
            j = q + 1;
        }
        if (j > p + 2) {
            number_value(L, k, p, j, false);
            return j;
        }
    }
    if (s[p] == '0') {
        i = p + 1;
        while (i < L->n && (s[i] == '0' || (s[i] == '_' && i + 1 < L->n && s[i + 1] == '0'))) i += s[i] == '_' ? 2 : 1;
    } else {
        i = p + 1;
        while (i < L->n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < L->n && is_digit(s[i + 1])))) i += s[i] == '_' ? 2 : 1;
    }
    number_value(L, k, p, i, false);
    return i;
}

static int hexval(char ch)
{
    if (is_digit(ch)) return ch - '0';
    ch = (char)(ch | 32);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static void put_cp(jctx *c, jbuf *b, uint32_t cp)
{
    char u[4];
    jb_put(c, b, u, (size_t)ju_put(cp, u));
}

/* a string literal at p (a quote): its end. Python's unicode-escape
 * decoding of the text between the quotes. */
static size_t lex_string(lex *L, size_t p)
{
    const char q = L->s[p];
    size_t i = p + 1;
    while (i < L->n && L->s[i] != q) i += L->s[i] == '\\' ? 2 : 1;
    if (i >= L->n) jfail(L->c, JERR_SYNTAX, L->line, "unterminated string");
    const char *s = L->s;
    jbuf b = { 0 };
    for (size_t j = p + 1; j < i;) {
        if (s[j] != '\\') {
            size_t r = j;
            while (r < i && s[r] != '\\') r++;
            jb_put(L->c, &b, s + j, r - j);
            j = r;
            continue;
        }
        char e = s[j + 1];
        j += 2;
        switch (e) {
        case '\n': break;
        case '\\': jb_putc(L->c, &b, '\\'); break;
        case '\'': jb_putc(L->c, &b, '\''); break;
        case '"': jb_putc(L->c, &b, '"'); break;
        case 'a': jb_putc(L->c, &b, '\a'); break;
        case 'b': jb_putc(L->c, &b, '\b'); break;
        case 'f': jb_putc(L->c, &b, '\f'); break;
        case 'n': jb_putc(L->c, &b, '\n'); break;
        case 'r': jb_putc(L->c, &b, '\r'); break;
        case 't': jb_putc(L->c, &b, '\t'); break;
        case 'v': jb_putc(L->c, &b, '\v'); break;
        case 'x': case 'u': case 'U': {
            int want = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int d = 0; d < want; d++) {
                int h = j + (size_t)d < i ? hexval(s[j + (size_t)d]) : -1;
                if (h < 0) jfail(L->c, JERR_SYNTAX, L->line, "truncated \\%c escape in a string", e);
                v = v * 16 + (uint32_t)h;
            }
            if (v > 0x10FFFF) jfail(L->c, JERR_SYNTAX, L->line, "illegal Unicode character in a string");
            j += (size_t)want;
            put_cp(L->c, &b, v);
            break;
        }
        case 'N': jfail(L->c, JERR_SYNTAX, L->line, "\\N{...} escapes are not supported");
        default:
            if (e >= '0' && e <= '7') {
                uint32_t v = (uint32_t)(e - '0');
                for (int d = 0; d < 2 && j < i && s[j] >= '0' && s[j] <= '7'; d++) v = v * 8 + (uint32_t)(s[j++] - '0');
                put_cp(L->c, &b, v);
            } else if ((unsigned char)e >= 0x80) {   /* backslashreplace, then the escape taken literally */
                uint32_t cp;
                int k = ju_next(s + j - 1, i - (j - 1), &cp);
                j += (size_t)k - 1;
                if (cp >= 0xDC80 && cp <= 0xDCFF) cp -= 0xDC00;
                jb_printf(L->c, &b, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", (unsigned)cp);
            } else {
                jb_putc(L->c, &b, '\\');
                jb_putc(L->c, &b, e);
            }
        }
    }
    jtok *k = push(L, JT_STRING, L->line);
    k->p = b.p ? b.p : "";
    k->n = b.n;
    return i + 1;
}

static const struct { const char *s; int op; } ops[] = {
    { "//", JO_FLOORDIV }, { "**", JO_POW }, { "==", JO_EQ }, { "!=", JO_NE }, { ">=", JO_GE }, { "<=", JO_LE },
    { "+", JO_ADD }, { "-", JO_SUB }, { "/", JO_DIV }, { "*", JO_MUL }, { "%", JO_MOD }, { "~", JO_TILDE },
    { "[", JO_LBRACKET }, { "]", JO_RBRACKET }, { "(", JO_LPAREN }, { ")", JO_RPAREN }, { "{", JO_LBRACE },
    { "}", JO_RBRACE }, { ">", JO_GT }, { "<", JO_LT }, { "=", JO_ASSIGN }, { ".", JO_DOT }, { ":", JO_COLON },
    { "|", JO_PIPE }, { ",", JO_COMMA }, { ";", JO_SEMICOLON },
};

/* the inside of a {% %} or {{ }} tag, up to and with its end */
static void lex_tag(lex *L, bool block, int open_line)
{
    for (;;) {
        size_t p = L->pos;
        if (L->nbal == 0) {
            size_t e = 0;
            if (block) {
                if (at(L, p, "+%}")) e = p + 3;
                else if (at(L, p, "-%}")) e = p + 3 + space_at(L, p + 3);
                else if (at(L, p, "%}")) e = p + 2 + (p + 2 < L->n && L->s[p + 2] == '\n');
            } else {
                if (at(L, p, "-}}")) e = p + 3 + space_at(L, p + 3);
                else if (at(L, p, "}}")) e = p + 2;
            }
            if (e) {
                push(L, block ? JT_BLOCK_END : JT_VAR_END, L->line);
                go(L, e);
                L->line_starting = L->s[e - 1] == '\n';
                return;
            }
        }
        if (p >= L->n)
            jfail(L->c, JERR_SYNTAX, open_line, "unexpected end of template: the %s opened here is not closed",
                  block ? "{% tag" : "{{ expression");
        size_t w = space_at(L, p);
        if (w) {
            go(L, p + w);
            continue;
        }
        unsigned char ch = (unsigned char)L->s[p];
        if (is_digit((char)ch)) {
            go(L, lex_number(L, p));
            continue;
        }
        if (is_name_start(ch)) {
            size_t i = p + 1;
            while (i < L->n && is_name_char((unsigned char)L->s[i])) i++;
            jtok *k = push(L, JT_NAME, L->line);
            k->p = L->s + p;
            k->n = i - p;
            go(L, i);
            continue;
        }
        if (ch == '\'' || ch == '"') {
            size_t e = lex_string(L, p);
            go(L, e);
            continue;
        }
        int op = 0;
        size_t oplen = 0;
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (at(L, p, ops[i].s)) {
                op = ops[i].op;
                oplen = strlen(ops[i].s);
                break;
            }
        if (!op) {
            if (ch >= 0x20 && ch < 0x7F) jfail(L->c, JERR_SYNTAX, L->line, "unexpected char '%c'", ch);
            jfail(L->c, JERR_SYNTAX, L->line, "unexpected byte 0x%02x", ch);
        }
        if (op == JO_LBRACE || op == JO_LPAREN || op == JO_LBRACKET) {
            if (L->nbal == (int)sizeof L->bal) jfail(L->c, JERR_LIMIT, L->line, "brackets nest deeper than %d", L->nbal);
            L->bal[L->nbal++] = op == JO_LBRACE ? '}' : op == JO_LPAREN ? ')' : ']';
        } else if (op == JO_RBRACE || op == JO_RPAREN || op == JO_RBRACKET) {
            if (!L->nbal) jfail(L->c, JERR_SYNTAX, L->line, "unexpected '%c'", ch);
            char want = L->bal[--L->nbal];
            if (want != (char)ch) jfail(L->c, JERR_SYNTAX, L->line, "unexpected '%c', expected '%c'", ch, want);
        }
        jtok *k = push(L, JT_OP, L->line);
        k->op = (uint8_t)op;
        go(L, p + oplen);
    }
}

jtok *jlex(jctx *c, const char *src, size_t len, int *ntok)
{
    /* newlines to \n, one trailing newline dropped */
    char *s = jalloc(c, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n') n--;
    lex L = { .c = c, .s = s, .n = n, .line = 1, .line_starting = true };
    while (L.pos < L.n) {
        const char *hit = NULL;
        for (size_t p = L.pos; p + 1 < L.n; p++) {
            const char *q = memchr(s + p, '{', L.n - 1 - p);
            if (!q) break;
            p = (size_t)(q - s);
            if (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#') {
                hit = q;
                break;
            }
        }
        if (!hit) {
            emit_text(&L, L.pos, L.n, 0, false);
            break;
        }
        size_t p = (size_t)(hit - s);
        char kind = s[p + 1];
        char sign = p + 2 < L.n && (s[p + 2] == '-' || s[p + 2] == '+') ? s[p + 2] : 0;
        size_t raw_end = 0;
        if (kind == '%') {
            size_t i = raw_begin(&L, p, "raw");
            if (i) {
                if (at(&L, i, "-%}")) raw_end = i + 3 + space_at(&L, i + 3);
                else if (at(&L, i, "%}")) raw_end = i + 2;
            }
        }
        emit_text(&L, L.pos, p, sign, kind != '{');
        const int open_line = L.line;
        if (raw_end) {
            go(&L, raw_end);
            L.line_starting = s[raw_end - 1] == '\n';
            lex_raw(&L, open_line);
            continue;
        }
        go(&L, p + 2 + (sign != 0));
        L.line_starting = false;
        if (kind == '#') {
            lex_comment(&L, open_line);
        } else {
            push(&L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, open_line);
            L.nbal = 0;
            lex_tag(&L, kind == '%', open_line);
        }
    }
    push(&L, JT_EOF, L.line);
    *ntok = L.nt;
    return L.t;
}
