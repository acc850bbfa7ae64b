/* regex.c — pre-tokenizer regexes on PCRE2, loaded at run time.
 *
 * libpcre2-8.so.0 is opened with dlopen the first time a regex is made, so
 * wick builds without PCRE2's headers and runs without the library as long
 * as no tokenizer needs a regex. The few functions and constants used are
 * declared here: PCRE2's 8-bit ABI has been stable since 10.00 (so.0).
 *
 * Patterns come from tokenizer.json files written for Oniguruma (Hugging
 * Face's engine); they are compiled with PCRE2_UTF | PCRE2_UCP, so that
 * \p{L}, \p{N} and (?i) work on Unicode, and JIT-compiled. One difference
 * is papered over: PCRE2's \s also takes U+180E (MONGOLIAN VOWEL
 * SEPARATOR, which Unicode 6.3 took out of White_Space) where Oniguruma's
 * does not, so \s and \S are rewritten to the White_Space class. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "tok_internal.h"

/* ---- the part of pcre2.h that is used -------------------------------- */

typedef struct pcre2_code_8 pcre2_code;
typedef struct pcre2_match_data_8 pcre2_match_data;
typedef struct pcre2_match_context_8 pcre2_match_context;
typedef struct pcre2_jit_stack_8 pcre2_jit_stack;
typedef const unsigned char *PCRE2_SPTR;
typedef size_t PCRE2_SIZE;

#define PCRE2_UTF                  0x00080000u
#define PCRE2_UCP                  0x00020000u
#define PCRE2_NO_UTF_CHECK         0x40000000u
#define PCRE2_JIT_COMPLETE         0x00000001u
#define PCRE2_ERROR_NOMATCH        (-1)
#define PCRE2_ERROR_JIT_STACKLIMIT (-46)

static struct {
    pcre2_code *(*compile)(PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *, PCRE2_SIZE *, void *);
    int (*jit_compile)(pcre2_code *, uint32_t);
    void (*code_free)(pcre2_code *);
    pcre2_match_data *(*md_create)(const pcre2_code *, void *);
    void (*md_free)(pcre2_match_data *);
    int (*match)(const pcre2_code *, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE, uint32_t, pcre2_match_data *,
                 pcre2_match_context *);
    PCRE2_SIZE *(*ovector)(pcre2_match_data *);
    int (*error_message)(int, unsigned char *, PCRE2_SIZE);
    pcre2_match_context *(*mc_create)(void *);
    void (*mc_free)(pcre2_match_context *);
    pcre2_jit_stack *(*js_create)(PCRE2_SIZE, PCRE2_SIZE, void *);
    void (*js_free)(pcre2_jit_stack *);
    void (*js_assign)(pcre2_match_context *, void *, void *);
    char why[512];     /* empty when loaded */
} P;

static pthread_once_t p_once = PTHREAD_ONCE_INIT;

static void p_load(void)
{
    const char *name = "libpcre2-8.so.0";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(P.why, sizeof P.why,
                 "the regex library PCRE2 (%s) could not be loaded: %s; install it (Debian/Ubuntu: "
                 "apt-get install libpcre2-8-0; Fedora: pcre2; macOS: brew install pcre2)",
                 name, dlerror());
        return;
    }
#define SYM(field, sym)                                                                    \
    do {                                                                                   \
        *(void **)&P.field = dlsym(h, sym);                                                \
        if (!P.field) {                                                                    \
            snprintf(P.why, sizeof P.why, "%s has no %s: a PCRE2 older than 10.00?", name, sym); \
            return;                                                                        \
        }                                                                                  \
    } while (0)
    SYM(compile, "pcre2_compile_8");
    SYM(jit_compile, "pcre2_jit_compile_8");
    SYM(code_free, "pcre2_code_free_8");
    SYM(md_create, "pcre2_match_data_create_from_pattern_8");
    SYM(md_free, "pcre2_match_data_free_8");
    SYM(match, "pcre2_match_8");
    SYM(ovector, "pcre2_get_ovector_pointer_8");
    SYM(error_message, "pcre2_get_error_message_8");
    SYM(mc_create, "pcre2_match_context_create_8");
    SYM(mc_free, "pcre2_match_context_free_8");
    SYM(js_create, "pcre2_jit_stack_create_8");
    SYM(js_free, "pcre2_jit_stack_free_8");
    SYM(js_assign, "pcre2_jit_stack_assign_8");
#undef SYM
    /* the library stays loaded for the life of the process */
}

static bool p_ready(void)
{
    pthread_once(&p_once, p_load);
    if (P.why[0]) {
        wk_error_set(WK_ERR_UNSUPPORTED, "%s", P.why);
        return false;
    }
    return true;
}

/* ---- patterns ------------------------------------------------------------ */

struct tok_regex {
    pcre2_code *code;
    bool jit;
};

/* Unicode White_Space, as a class body */
static const char WS[] = "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
                         "\\x{202F}\\x{205F}\\x{3000}";

static tok_regex *compile(const char *pat, size_t len, const char *shown, size_t shown_len)
{
    if (!p_ready()) return NULL;
    int ec = 0;
    PCRE2_SIZE eo = 0;
    pcre2_code *code = P.compile((PCRE2_SPTR)pat, len, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!code) {
        unsigned char msg[256];
        if (P.error_message(ec, msg, sizeof msg) < 0) snprintf((char *)msg, sizeof msg, "error %d", ec);
        wk_error_set(WK_ERR_ARGUMENT, "regex \"%.*s\": %s (at offset %zu of the compiled form)", (int)shown_len, shown,
                (const char *)msg, (size_t)eo);
        return NULL;
    }
    tok_regex *re = calloc(1, sizeof *re);
    if (!re) {
        P.code_free(code);
        wk_error_set(WK_ERR_MEMORY, "regex: out of memory");
        return NULL;
    }
    re->code = code;
    re->jit = P.jit_compile(code, PCRE2_JIT_COMPLETE) == 0;   /* without JIT it is slower, still right */
    return re;
}

tok_regex *tok_regex_new(const char *pattern, size_t len)
{
    tok_buf b = {0};
    bool in_class = false, ok = true;
    for (size_t i = 0; i < len && ok; i++) {
        char c = pattern[i];
        if (c == '\\' && i + 1 < len) {
            char d = pattern[i + 1];
            if (d == 's' && !in_class) ok = tok_buf_put(&b, "[", 1) && tok_buf_put(&b, WS, sizeof WS - 1) && tok_buf_put(&b, "]", 1);
            else if (d == 'S' && !in_class) ok = tok_buf_put(&b, "[^", 2) && tok_buf_put(&b, WS, sizeof WS - 1) && tok_buf_put(&b, "]", 1);
            else if (d == 's') ok = tok_buf_put(&b, WS, sizeof WS - 1);
            else ok = tok_buf_put(&b, pattern + i, 2);
            i++;
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = true;
            ok = tok_buf_put(&b, "[", 1);
            /* a ']' right after '[' or '[^' is a literal */
            if (ok && i + 1 < len && pattern[i + 1] == '^') { ok = tok_buf_put(&b, "^", 1); i++; }
            if (ok && i + 1 < len && pattern[i + 1] == ']') { ok = tok_buf_put(&b, "]", 1); i++; }
            continue;
        }
        if (c == ']' && in_class) in_class = false;
        ok = tok_buf_put(&b, &c, 1);
    }
    if (!ok) { tok_buf_free(&b); return NULL; }
    tok_regex *re = compile(b.p ? b.p : "", b.n, pattern, len);
    tok_buf_free(&b);
    return re;
}

tok_regex *tok_regex_literal(const char *s, size_t len)
{
    tok_buf b = {0};
    bool ok = true;
    for (size_t i = 0; i < len && ok; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
            char e[8];
            snprintf(e, sizeof e, "\\x%02X", c);
            ok = tok_buf_put(&b, e, 4);
        } else ok = tok_buf_put(&b, s + i, 1);
    }
    if (!ok) { tok_buf_free(&b); return NULL; }
    tok_regex *re = compile(b.p ? b.p : "", b.n, s, len);
    tok_buf_free(&b);
    return re;
}

void tok_regex_free(tok_regex *re)
{
    if (!re) return;
    P.code_free(re->code);
    free(re);
}

/* ---- matching --------------------------------------------------------------- */

#define TOK_MATCH_SLOTS 8
struct tok_match {
    const tok_regex *re[TOK_MATCH_SLOTS];
    pcre2_match_data *md[TOK_MATCH_SLOTS];
    pcre2_match_context *mc;    /* with a large JIT stack, made when the default one was short */
    pcre2_jit_stack *js;
};

tok_match *tok_match_new(void)
{
    tok_match *m = calloc(1, sizeof *m);
    if (!m) wk_error_set(WK_ERR_MEMORY, "regex: out of memory");
    return m;
}

void tok_match_free(tok_match *m)
{
    if (!m) return;
    for (int i = 0; i < TOK_MATCH_SLOTS; i++)
        if (m->md[i]) P.md_free(m->md[i]);
    if (m->mc) P.mc_free(m->mc);
    if (m->js) P.js_free(m->js);
    free(m);
}

int tok_regex_find(const tok_regex *re, tok_match *m, const char *s, size_t n, size_t start, size_t *ms, size_t *me)
{
    int slot = 0;
    while (slot < TOK_MATCH_SLOTS && m->re[slot] && m->re[slot] != re) slot++;
    if (slot == TOK_MATCH_SLOTS) { wk_error_set(WK_ERR_ARGUMENT, "regex: more than %d patterns", TOK_MATCH_SLOTS); return -1; }
    if (!m->re[slot]) {
        m->md[slot] = P.md_create(re->code, NULL);
        if (!m->md[slot]) { wk_error_set(WK_ERR_MEMORY, "regex: out of memory"); return -1; }
        m->re[slot] = re;
    }
    /* the text was checked to be valid UTF-8 by the caller */
    int rc = P.match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, m->md[slot], m->mc);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !m->js) {
        m->mc = P.mc_create(NULL);
        m->js = m->mc ? P.js_create(64 * 1024, 64u * 1024 * 1024, NULL) : NULL;
        if (!m->js) { wk_error_set(WK_ERR_MEMORY, "regex: cannot make a JIT stack"); return -1; }
        P.js_assign(m->mc, NULL, m->js);
        rc = P.match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, m->md[slot], m->mc);
    }
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        unsigned char msg[256];
        if (P.error_message(rc, msg, sizeof msg) < 0) snprintf((char *)msg, sizeof msg, "error %d", rc);
        wk_error_set(WK_ERR_BACKEND, "regex match failed: %s", (const char *)msg);
        return -1;
    }
    PCRE2_SIZE *ov = P.ovector(m->md[slot]);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}
