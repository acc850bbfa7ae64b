/* unicode.c — UTF-8 decoding with Unicode's maximal-subpart rule, White_Space,
 * NFC (canonical decomposition, ordering and composition, Hangul by
 * algorithm; tables in unicode_data.h from tools/gen_unicode_tables.py) and
 * GPT-2's byte <-> printable-character mapping. */
#include <stdlib.h>
#include "tok_internal.h"
#include "unicode_data.h"

const char *tok_unicode_version(void) { return WK_UNICODE_VERSION; }

/* ---- UTF-8 --------------------------------------------------------------- */

int tok_utf8_next(const unsigned char *p, size_t n, uint32_t *cp, bool *cut)
{
    *cut = false;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int need;
    unsigned lo = 0x80, hi = 0xBF;   /* the range of the second byte */
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; v = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2; v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3; v = c & 0x07;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return -1;               /* 80..BF, C0, C1, F5..FF: never a start */
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n) {
            *cut = true;
            return -k;
        }
        unsigned b = p[k];
        unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) return -k;
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return need + 1;
}

int tok_utf8_put(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | (cp >> 6)); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

bool tok_is_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* ---- NFC ------------------------------------------------------------------- */

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define LCOUNT 19u
#define VCOUNT 21u
#define TCOUNT 28u
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

static unsigned ccc(uint32_t cp)
{
    if (cp < 0x300) return 0;
    size_t lo = 0, hi = sizeof wk_ccc_table / sizeof wk_ccc_table[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (wk_ccc_table[mid][0] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof wk_ccc_table / sizeof wk_ccc_table[0] && wk_ccc_table[lo][0] == cp ? wk_ccc_table[lo][1] : 0;
}

static const uint32_t *decomp(uint32_t cp, int *len)
{
    size_t lo = 0, hi = sizeof wk_decomp_table / sizeof wk_decomp_table[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (wk_decomp_table[mid][0] < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < sizeof wk_decomp_table / sizeof wk_decomp_table[0] && wk_decomp_table[lo][0] == cp) {
        *len = (int)wk_decomp_table[lo][2];
        return wk_decomp_pool + wk_decomp_table[lo][1];
    }
    return NULL;
}

/* The primary composite of (a, b), or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    size_t lo = 0, hi = sizeof wk_comp_table / sizeof wk_comp_table[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *e = wk_comp_table[mid];
        if (e[0] < a || (e[0] == a && e[1] < b)) lo = mid + 1;
        else hi = mid;
    }
    if (lo < sizeof wk_comp_table / sizeof wk_comp_table[0] && wk_comp_table[lo][0] == a && wk_comp_table[lo][1] == b)
        return wk_comp_table[lo][2];
    return 0;
}

typedef struct cpbuf { uint32_t *p; size_t n, cap; } cpbuf;
static bool cp_push(cpbuf *b, uint32_t c)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        uint32_t *np = realloc(b->p, nc * sizeof *np);
        if (!np) return false;
        b->p = np;
        b->cap = nc;
    }
    b->p[b->n++] = c;
    return true;
}

bool tok_nfc(const char *s, size_t n, tok_buf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    /* text made of code points below U+0300 is NFC already (checked by the
     * table generator) */
    bool simple = true;
    for (size_t i = 0; i < n; i++)
        if (u[i] >= 0xCC) { simple = false; break; }   /* 0xCC 0x80 is U+0300 */
    if (simple) return tok_buf_put(out, s, n);

    cpbuf b = {0};
    bool ok = true;
    for (size_t i = 0; i < n && ok;) {
        uint32_t cp = 0;
        bool cut;
        int l = tok_utf8_next(u + i, n - i, &cp, &cut);
        if (l <= 0) { l = -l; cp = 0xFFFD; }   /* not reached: the text is valid */
        i += (size_t)l;
        if (cp >= SBASE && cp < SBASE + SCOUNT) {
            uint32_t si = cp - SBASE;
            ok = cp_push(&b, LBASE + si / NCOUNT) && cp_push(&b, VBASE + (si % NCOUNT) / TCOUNT);
            if (ok && si % TCOUNT) ok = cp_push(&b, TBASE + si % TCOUNT);
            continue;
        }
        int dl;
        const uint32_t *d = cp >= 0xC0 ? decomp(cp, &dl) : NULL;
        if (d) for (int k = 0; k < dl && ok; k++) ok = cp_push(&b, d[k]);
        else ok = cp_push(&b, cp);
    }
    if (!ok) { free(b.p); wk_error_set(WK_ERR_MEMORY, "NFC: out of memory"); return false; }
    /* canonical ordering: a stable insertion sort of each run of non-starters */
    for (size_t i = 1; i < b.n; i++) {
        unsigned c = ccc(b.p[i]);
        if (!c) continue;
        size_t j = i;
        uint32_t x = b.p[i];
        while (j > 0 && ccc(b.p[j - 1]) > c) { b.p[j] = b.p[j - 1]; j--; }
        b.p[j] = x;
    }
    /* composition */
    if (b.n) {
        size_t starter = 0, w = 1;
        unsigned last = ccc(b.p[0]) ? 256 : 0;
        for (size_t i = 1; i < b.n; i++) {
            uint32_t c = b.p[i];
            unsigned cc = ccc(c);
            /* not blocked: the last kept character is the starter itself, or
             * of a lower class than c (UAX #15's sample composition) */
            uint32_t comp = (last < cc || last == 0) ? compose(b.p[starter], c) : 0;
            if (comp) {
                b.p[starter] = comp;
                continue;
            }
            if (cc == 0) starter = w;
            last = cc;
            b.p[w++] = c;
        }
        b.n = w;
    }
    ok = tok_buf_reserve(out, b.n * 4);
    if (ok)
        for (size_t i = 0; i < b.n; i++) out->n += (size_t)tok_utf8_put(b.p[i], out->p + out->n);
    free(b.p);
    return ok;
}

/* ---- GPT-2's byte mapping ------------------------------------------------------ */

uint32_t tok_byte_to_cp(unsigned char b)
{
    /* printable Latin-1 bytes map to themselves; the other 68 to 256.. in order */
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    unsigned k = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) k++;
    return 256 + k;
}

int tok_cp_to_byte(uint32_t cp)
{
    static int16_t back[324];
    static volatile int ready;
    if (!ready) {   /* idempotent: racing threads write the same values */
        for (int i = 0; i < 324; i++) back[i] = -1;
        for (int b = 0; b < 256; b++) back[tok_byte_to_cp((unsigned char)b)] = (int16_t)b;
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return cp < 324 ? back[cp] : -1;
}
