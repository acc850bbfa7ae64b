/* bpe.c — the BPE merge loop of one pre-token.
 *
 * Symbols start as bytes (byte-level BPE) or characters (SentencePiece
 * style) and are merged pair by pair through a binary heap:
 *   - by merge rank (lowest first, leftmost on ties), with a stale entry
 *     recognised as Hugging Face's BPE does it (the pair now at its place
 *     must make the same new token), when the tokenizer has merges;
 *   - by the score of the merged piece (highest first, leftmost on ties),
 *     with the size check of llama.cpp's SentencePiece tokenizer, when it
 *     has only scores.
 * A character with no token becomes byte tokens (byte fallback) or the
 * unknown token (consecutive ones fused), as Hugging Face's BPE does. */
#include <stdlib.h>
#include "tok_internal.h"

bool tok_merge_find(const wk_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id);

typedef struct sym { int32_t id, prev, next; uint32_t start, len; } sym;
typedef struct cand { uint64_t key; uint32_t pos, size; int32_t new_id; } cand;

struct tok_bpe_scratch {
    sym *s;
    size_t ns, cap_s;
    cand *h;
    size_t nh, cap_h;
    tok_buf word;
};

tok_bpe_scratch *tok_bpe_scratch_new(void)
{
    tok_bpe_scratch *s = calloc(1, sizeof *s);
    if (!s) wk_error_set(WK_ERR_MEMORY, "out of memory");
    return s;
}

void tok_bpe_scratch_free(tok_bpe_scratch *s)
{
    if (!s) return;
    free(s->s);
    free(s->h);
    tok_buf_free(&s->word);
    free(s);
}

static bool sym_push(tok_bpe_scratch *b, int32_t id, uint32_t start, uint32_t len)
{
    if (b->ns == b->cap_s) {
        size_t nc = b->cap_s ? b->cap_s * 2 : 256;
        sym *np = realloc(b->s, nc * sizeof *np);
        if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
        b->s = np;
        b->cap_s = nc;
    }
    int32_t i = (int32_t)b->ns;
    b->s[b->ns++] = (sym){ id, i - 1, i + 1, start, len };
    return true;
}

static bool less(const cand *a, const cand *b) { return a->key < b->key || (a->key == b->key && a->pos < b->pos); }

static bool heap_push(tok_bpe_scratch *b, cand c)
{
    if (b->nh == b->cap_h) {
        size_t nc = b->cap_h ? b->cap_h * 2 : 256;
        cand *np = realloc(b->h, nc * sizeof *np);
        if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
        b->h = np;
        b->cap_h = nc;
    }
    size_t i = b->nh++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!less(&c, &b->h[p])) break;
        b->h[i] = b->h[p];
        i = p;
    }
    b->h[i] = c;
    return true;
}

static cand heap_pop(tok_bpe_scratch *b)
{
    cand top = b->h[0], last = b->h[--b->nh];
    size_t i = 0, n = b->nh;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *mv = &last;
        if (l < n && less(&b->h[l], mv)) { m = l; mv = &b->h[l]; }
        if (r < n && less(&b->h[r], mv)) m = r;
        if (m == i) break;
        b->h[i] = b->h[m];
        i = m;
    }
    if (n) b->h[i] = last;
    return top;
}

/* A float's order as an unsigned integer; higher scores get smaller keys. */
static uint64_t score_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return (uint64_t)(0xFFFFFFFFu - u);
}

/* The candidate merge of symbols l and r (adjacent), if there is one. */
static bool try_pair(const wk_tokenizer *t, tok_bpe_scratch *b, const char *p, int32_t l, int32_t r)
{
    const sym *a = &b->s[l], *c = &b->s[r];
    if (t->use_scores) {
        int32_t id = tok_find(t, p + a->start, a->len + c->len);
        if (id < 0) return true;
        return heap_push(b, (cand){ score_key(t->score[id]), (uint32_t)l, a->len + c->len, id });
    }
    uint32_t rank;
    int32_t nid;
    if (!tok_merge_find(t, a->id, c->id, &rank, &nid)) return true;
    return heap_push(b, (cand){ rank, (uint32_t)l, 0, nid });
}

static bool add_unk(const wk_tokenizer *t, tok_bpe_scratch *b, int32_t *pend_unk, uint32_t *pend_start,
                    uint32_t *pend_len, uint32_t start, uint32_t len)
{
    (void)t;
    if (*pend_unk >= 0 && t->fuse_unk) { *pend_len += len; return true; }
    if (*pend_unk >= 0 && !sym_push(b, *pend_unk, *pend_start, *pend_len)) return false;
    *pend_unk = t->unk_id;
    *pend_start = start;
    *pend_len = len;
    return true;
}

bool tok_bpe(const wk_tokenizer *t, tok_bpe_scratch *b, const char *p, size_t n, tok_ids *out)
{
    if (!n) return true;
    if (n > UINT32_MAX / 2) { wk_error_set(WK_ERR_ARGUMENT, "a pre-token of %zu bytes is too long", n); return false; }
    b->ns = b->nh = 0;
    if (t->model == WK_TOK_MODEL_BYTE_BPE) {
        if (t->ignore_merges) {
            /* the whole pre-token, in GPT-2's mapping, may be a token */
            b->word.n = 0;
            if (!tok_buf_reserve(&b->word, n * 2)) return false;
            for (size_t i = 0; i < n; i++) b->word.n += (size_t)tok_utf8_put(tok_byte_to_cp((unsigned char)p[i]), b->word.p + b->word.n);
            int32_t id = tok_find(t, b->word.p, b->word.n);
            if (id >= 0) return tok_ids_push(out, id);
        }
        for (size_t i = 0; i < n; i++) {
            /* a byte without a token (a vocabulary trained without it) is
             * dropped, as Hugging Face's BPE (no unk token) and llama.cpp do */
            int32_t id = t->byte_tok[(unsigned char)p[i]];
            if (id >= 0 && !sym_push(b, id, (uint32_t)i, 1)) return false;
        }
    } else {
        int32_t pend_unk = -1;
        uint32_t pend_start = 0, pend_len = 0;
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            bool cut;
            int l = tok_utf8_next((const unsigned char *)p + i, n - i, &cp, &cut);
            if (l <= 0) l = 1;   /* not reached: runs are valid UTF-8 */
            int32_t id = tok_find(t, p + i, (size_t)l);
            if (id >= 0 || t->use_scores) {
                /* scores: a character with no token may still merge into one;
                 * what is left unknown is resolved below */
                if (pend_unk >= 0) { if (!sym_push(b, pend_unk, pend_start, pend_len)) return false; pend_unk = -1; }
                if (!sym_push(b, id, (uint32_t)i, (uint32_t)l)) return false;
            } else {
                bool bytes = t->byte_fallback;
                for (int k = 0; bytes && k < l; k++) bytes = t->byte_tok[(unsigned char)p[i + (size_t)k]] >= 0;
                if (bytes) {
                    for (int k = 0; k < l; k++)
                        if (!sym_push(b, t->byte_tok[(unsigned char)p[i + (size_t)k]], (uint32_t)(i + (size_t)k), 1)) return false;
                } else if (t->unk_id >= 0) {
                    if (!add_unk(t, b, &pend_unk, &pend_start, &pend_len, (uint32_t)i, (uint32_t)l)) return false;
                }
            }
            i += (size_t)l;
        }
        if (pend_unk >= 0 && !sym_push(b, pend_unk, pend_start, pend_len)) return false;
    }
    if (!b->ns) return true;
    b->s[b->ns - 1].next = -1;

    for (size_t i = 0; i + 1 < b->ns; i++)
        if (!try_pair(t, b, p, (int32_t)i, (int32_t)i + 1)) return false;
    while (b->nh) {
        cand c = heap_pop(b);
        sym *a = &b->s[c.pos];
        if (!a->len || a->next < 0) continue;
        sym *r = &b->s[a->next];
        if (t->use_scores) {
            if (!r->len || a->len + r->len != c.size) continue;
        } else {
            uint32_t rank;
            int32_t nid;
            if (!tok_merge_find(t, a->id, r->id, &rank, &nid) || nid != c.new_id) continue;
        }
        a->id = c.new_id;
        a->len += r->len;
        a->next = r->next;
        r->len = 0;
        if (a->next >= 0) b->s[a->next].prev = (int32_t)c.pos;
        if (a->prev >= 0 && !try_pair(t, b, p, a->prev, (int32_t)c.pos)) return false;
        if (a->next >= 0 && !try_pair(t, b, p, (int32_t)c.pos, a->next)) return false;
    }

    for (int32_t i = 0; i >= 0; i = b->s[i].next) {
        const sym *s = &b->s[i];
        if (s->id >= 0) {
            if (!tok_ids_push(out, s->id)) return false;
            continue;
        }
        /* scores: a character that no merge took and that has no token */
        bool bytes = t->byte_fallback;
        for (uint32_t k = 0; bytes && k < s->len; k++) bytes = t->byte_tok[(unsigned char)p[s->start + k]] >= 0;
        if (bytes) {
            for (uint32_t k = 0; k < s->len; k++)
                if (!tok_ids_push(out, t->byte_tok[(unsigned char)p[s->start + k]])) return false;
        } else if (t->unk_id >= 0) {
            if (!(t->fuse_unk && out->n && out->p[out->n - 1] == t->unk_id && i > 0 && b->s[b->s[i].prev].id < 0) &&
                !tok_ids_push(out, t->unk_id))
                return false;
        }
    }
    return true;
}
