/* tokenizer.c — the tokenizer object: its error state, building it from a
 * spec (vocabulary, merges, added tokens, byte tokens, the pipeline named
 * by the pre-tokenizer), the vocabulary queries and encoding (added
 * tokens, normalizers, invalid UTF-8, pre-tokenizer splits, then bpe.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "tok_internal.h"

/* ---- buffers ---------------------------------------------------------- */

bool tok_buf_reserve(tok_buf *b, size_t extra)
{
    if (b->cap - b->n > extra) return true;   /* room for a NUL too */
    size_t nc = b->cap ? b->cap : 64;
    while (nc - b->n <= extra) {
        if (nc > SIZE_MAX / 2) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
        nc *= 2;
    }
    char *np = realloc(b->p, nc);
    if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory (%zu bytes)", nc); return false; }
    b->p = np;
    b->cap = nc;
    return true;
}

bool tok_buf_put(tok_buf *b, const void *s, size_t n)
{
    if (!tok_buf_reserve(b, n)) return false;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

void tok_buf_free(tok_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

bool tok_ids_push(tok_ids *v, int32_t id)
{
    if (v->n == v->cap) {
        int64_t nc = v->cap ? v->cap * 2 : 64;
        int32_t *np = realloc(v->p, (size_t)nc * sizeof *np);
        if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
        v->p = np;
        v->cap = nc;
    }
    v->p[v->n++] = id;
    return true;
}

/* ---- hashing ------------------------------------------------------------ */

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    return k ^ (k >> 33);
}

int32_t tok_find(const wk_tokenizer *t, const char *s, size_t len)
{
    if (!t->vcap || !len) return -1;
    uint64_t m = t->vcap - 1;
    for (uint64_t i = hash_str(s, len) & m;; i = (i + 1) & m) {
        uint32_t v = t->vslot[i];
        if (!v) return -1;
        int32_t id = (int32_t)(v - 1);
        if (t->len[id] == len && memcmp(t->text[id], s, len) == 0) return id;
    }
}

static bool merge_find(const wk_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id)
{
    if (!t->mcap || a < 0 || b < 0) return false;
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b, m = t->mcap - 1;
    for (uint64_t i = hash_pair(key) & m;; i = (i + 1) & m) {
        if (t->mkey[i] == UINT64_MAX) return false;
        if (t->mkey[i] == key) {
            *rank = t->mrank[i];
            *new_id = t->mnew[i];
            return true;
        }
    }
}

/* exported to bpe.c through this name */
bool tok_merge_find(const wk_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id);
bool tok_merge_find(const wk_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id)
{
    return merge_find(t, a, b, rank, new_id);
}

/* ---- freeing --------------------------------------------------------------- */

WK_TOK_API void wk_tokenizer_free(wk_tokenizer *t)
{
    if (!t) return;
    free(t->tpool);
    free(t->text);
    free(t->len);
    free(t->score);
    free(t->type);
    free(t->special);
    free(t->dec_pool);
    free(t->dec_off);
    free(t->dec_byte);
    free(t->vslot);
    free(t->mkey);
    free(t->mrank);
    free(t->mnew);
    free(t->added);
    free(t->added_by_id);
    for (int i = 0; i < t->n_norm; i++) { free(t->norm[i].str); free(t->norm[i].str2); }
    for (int i = 0; i < t->n_steps; i++) tok_regex_free(t->step[i].re);
    for (int i = 0; i < t->n_drep; i++) { free(t->drep_from[i]); free(t->drep_to[i]); }
    free(t->meta);
    free(t);
}

/* ---- the pipeline ------------------------------------------------------------ */

static char *dup_bytes(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return NULL; }
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

wk_status tok_add_norm(wk_tokenizer *t, tok_norm_kind kind, const char *s, size_t len, const char *s2, size_t len2)
{
    if (t->n_norm == TOK_MAX_NORM) return wk_error_set(WK_ERR_UNSUPPORTED, "more than %d normalizer steps", TOK_MAX_NORM);
    tok_norm *n = &t->norm[t->n_norm];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    if (s && !(n->str = dup_bytes(s, len))) return WK_ERR_MEMORY;
    if (s2 && !(n->str2 = dup_bytes(s2, len2))) { free(n->str); return WK_ERR_MEMORY; }
    n->len = len;
    n->len2 = len2;
    t->n_norm++;
    return WK_OK;
}

wk_status tok_add_step(wk_tokenizer *t, const char *pattern, size_t len, bool literal, tok_split_behavior b,
                       bool invert)
{
    if (t->n_steps == TOK_MAX_STEPS) return wk_error_set(WK_ERR_UNSUPPORTED, "more than %d pre-tokenizer steps", TOK_MAX_STEPS);
    tok_regex *re = literal ? tok_regex_literal(pattern, len) : tok_regex_new(pattern, len);
    if (!re) return wk_last_status();
    t->step[t->n_steps++] = (tok_step){ re, b, invert };
    return WK_OK;
}

/* The regexes of the byte-level families, as their tokenizer.json files and
 * llama.cpp have them. */
static const char RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char RE_LLAMA3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

wk_status tok_set_pre(wk_tokenizer *t, const char *pre)
{
    wk_status st;
    if (!pre || !strcmp(pre, "default") || !strcmp(pre, "gpt2") || !strcmp(pre, "gpt-2"))
        return tok_add_step(t, RE_GPT2, sizeof RE_GPT2 - 1, false, TOK_SPLIT_ISOLATED, false);
    if (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3")) {
        t->ignore_merges = true;
        return tok_add_step(t, RE_LLAMA3, sizeof RE_LLAMA3 - 1, false, TOK_SPLIT_ISOLATED, false);
    }
    if (!strcmp(pre, "qwen2")) {
        if ((st = tok_add_norm(t, TOK_NORM_NFC, NULL, 0, NULL, 0))) return st;
        return tok_add_step(t, RE_QWEN2, sizeof RE_QWEN2 - 1, false, TOK_SPLIT_ISOLATED, false);
    }
    if (!strcmp(pre, "smollm")) {
        if ((st = tok_add_step(t, "\\p{N}", 5, false, TOK_SPLIT_ISOLATED, false))) return st;
        return tok_add_step(t, RE_GPT2, sizeof RE_GPT2 - 1, false, TOK_SPLIT_ISOLATED, false);
    }
    if (!strcmp(pre, "none")) return WK_OK;
    return wk_error_set(WK_ERR_UNSUPPORTED,
                   "pre-tokenizer \"%s\" is not one wick knows (gpt2/default, llama-bpe, qwen2, smollm, none)", pre);
}

static const char META[] = "\xe2\x96\x81";   /* U+2581 ▁ */

/* ---- added tokens ------------------------------------------------------------ */

wk_status tok_set_added(wk_tokenizer *t, const tok_added *added, int32_t n)
{
    tok_added *a = NULL;
    int32_t k = 0;
    if (n) {
        a = malloc((size_t)n * sizeof *a);
        if (!a) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        if (added[i].id < 0 || added[i].id >= t->n) {
            free(a);
            return wk_error_set(WK_ERR_ARGUMENT, "added token id %d out of range (%d tokens)", added[i].id, t->n);
        }
        if (t->len[added[i].id]) a[k++] = added[i];   /* an empty string never matches */
    }
    /* bucket by first byte: a stable counting sort */
    for (int i = 0; i < 257; i++) t->added_bucket[i] = 0;
    for (int32_t i = 0; i < k; i++) t->added_bucket[(unsigned char)t->text[a[i].id][0] + 1]++;
    for (int i = 0; i < 256; i++) t->added_bucket[i + 1] += t->added_bucket[i];
    tok_added *sorted = k ? malloc((size_t)k * sizeof *sorted) : NULL;
    if (k && !sorted) { free(a); return wk_error_set(WK_ERR_MEMORY, "out of memory"); }
    int32_t fill[256];
    for (int i = 0; i < 256; i++) fill[i] = t->added_bucket[i];
    for (int32_t i = 0; i < k; i++) sorted[fill[(unsigned char)t->text[a[i].id][0]]++] = a[i];
    free(a);
    free(t->added);
    t->added = sorted;
    t->n_added = k;
    for (int32_t i = 0; i < t->n; i++) t->added_by_id[i] = -1;
    for (int32_t i = 0; i < k; i++) t->added_by_id[sorted[i].id] = i;
    return WK_OK;
}

/* ---- building -------------------------------------------------------------- */

WK_TOK_API wk_tokenizer_spec wk_tokenizer_spec_default(void)
{
    wk_tokenizer_spec s;
    memset(&s, 0, sizeof s);
    s.bos_id = s.eos_id = s.unk_id = s.pad_id = -1;
    return s;
}

static uint64_t pow2_at_least(uint64_t x)
{
    uint64_t c = 16;
    while (c < x) c *= 2;
    return c;
}

/* The pieces decoder's bytes of one token (replaces applied). */
static bool piece_bytes(const wk_tokenizer *t, const char *s, size_t n, tok_buf *out)
{
    tok_buf a = {0}, b = {0};
    if (!tok_buf_put(&a, s, n)) return false;
    for (int r = 0; r < t->n_drep; r++) {
        b.n = 0;
        if (!tok_buf_reserve(&b, 0)) goto fail;
        size_t fl = t->drep_from_len[r];
        for (size_t i = 0; i < a.n;) {
            if (fl && i + fl <= a.n && !memcmp(a.p + i, t->drep_from[r], fl)) {
                if (!tok_buf_put(&b, t->drep_to[r], t->drep_to_len[r])) goto fail;
                i += fl;
            } else {
                if (!tok_buf_put(&b, a.p + i, 1)) goto fail;
                i++;
            }
        }
        tok_buf tmp = a; a = b; b = tmp;
    }
    bool ok = tok_buf_put(out, a.p, a.n);
    tok_buf_free(&a);
    tok_buf_free(&b);
    return ok;
fail:
    tok_buf_free(&a);
    tok_buf_free(&b);
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool build_decoder(wk_tokenizer *t)
{
    tok_buf pool = {0};
    t->dec_off = malloc(((size_t)t->n + 1) * sizeof *t->dec_off);
    t->dec_byte = malloc((size_t)t->n * sizeof *t->dec_byte);
    if (!t->dec_off || !t->dec_byte) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
    for (int32_t i = 0; i < t->n; i++) {
        t->dec_off[i] = pool.n;
        t->dec_byte[i] = -1;
        const char *s = t->text[i];
        size_t n = t->len[i];
        bool ok = true;
        if (t->dec == TOK_DEC_BYTE_LEVEL) {
            /* every character in GPT-2's alphabet: its bytes; else the text
             * as it is (Hugging Face's ByteLevel decoder) */
            char tmp[64];
            size_t m = 0;
            bool mapped = true;
            char *big = n > sizeof tmp ? malloc(n) : NULL;
            char *dst = big ? big : tmp;
            if (n > sizeof tmp && !big) { wk_error_set(WK_ERR_MEMORY, "out of memory"); ok = false; }
            for (size_t k = 0; ok && k < n;) {
                uint32_t cp;
                bool cut;
                int l = tok_utf8_next((const unsigned char *)s + k, n - k, &cp, &cut);
                int byte = l > 0 ? tok_cp_to_byte(cp) : -1;
                if (byte < 0) { mapped = false; break; }
                dst[m++] = (char)byte;
                k += (size_t)l;
            }
            if (ok) ok = mapped ? tok_buf_put(&pool, dst, m) : tok_buf_put(&pool, s, n);
            free(big);
        } else if (t->dec == TOK_DEC_PIECES) {
            size_t at = pool.n;
            ok = piece_bytes(t, s, n, &pool);
            if (ok && t->dec_byte_fallback && pool.n - at == 6 && !memcmp(pool.p + at, "<0x", 3) && pool.p[at + 5] == '>') {
                int h = hexval(pool.p[at + 3]), l = hexval(pool.p[at + 4]);
                if (h >= 0 && l >= 0) t->dec_byte[i] = (int16_t)(h * 16 + l);
            }
        } else ok = tok_buf_put(&pool, s, n);
        if (!ok) { tok_buf_free(&pool); return false; }
    }
    t->dec_off[t->n] = pool.n;
    t->dec_pool = pool.p ? pool.p : calloc(1, 1);
    if (!t->dec_pool) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
    return true;
}

wk_tokenizer *tok_build(wk_tokenizer *t, const wk_tokenizer_spec *spec, bool pipeline_set)
{
    wk_status st;
    if (!spec) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: NULL spec"); goto fail; }
    if ((unsigned)spec->model >= WK_TOK_MODEL_COUNT) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: model %d is not a wk_tok_model", (int)spec->model); goto fail; }
    if (spec->n_tokens <= 0 || !spec->tokens) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: no tokens (n_tokens %d)", spec->n_tokens); goto fail; }
    if (spec->n_merges < 0 || (spec->n_merges && !spec->merges)) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: %lld merges but no array", (long long)spec->n_merges); goto fail; }
    t->model = spec->model;
    int32_t n = t->n = spec->n_tokens;

    /* strings */
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!spec->tokens[i]) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: token %d is NULL", i); goto fail; }
        size_t l = spec->token_lens ? spec->token_lens[i] : strlen(spec->tokens[i]);
        if (l > UINT32_MAX - 1) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: token %d is %zu bytes long", i, l); goto fail; }
        total += l + 1;
    }
    t->tpool = malloc(total);
    t->text = malloc((size_t)n * sizeof *t->text);
    t->len = malloc((size_t)n * sizeof *t->len);
    t->type = malloc((size_t)n);
    t->special = malloc((size_t)n);
    t->added_by_id = malloc((size_t)n * sizeof *t->added_by_id);
    if (!t->tpool || !t->text || !t->len || !t->type || !t->special || !t->added_by_id) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory for %d tokens", n); goto fail; }
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l = spec->token_lens ? spec->token_lens[i] : strlen(spec->tokens[i]);
        memcpy(t->tpool + at, spec->tokens[i], l);
        t->tpool[at + l] = 0;
        t->text[i] = t->tpool + at;
        t->len[i] = (uint32_t)l;
        at += l + 1;
        int32_t ty = spec->token_types ? spec->token_types[i] : WK_TOK_TYPE_NORMAL;
        if (ty < 0 || ty > WK_TOK_TYPE_BYTE) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: token %d (\"%.40s\") has type %d (0..6)", i, t->text[i], ty); goto fail; }
        t->type[i] = (uint8_t)ty;
        t->special[i] = ty == WK_TOK_TYPE_CONTROL || ty == WK_TOK_TYPE_UNKNOWN;
    }
    if (spec->scores) {
        t->score = malloc((size_t)n * sizeof *t->score);
        if (!t->score) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory"); goto fail; }
        memcpy(t->score, spec->scores, (size_t)n * sizeof *t->score);
    }

    /* string -> id; a repeated string keeps its first id */
    t->vcap = pow2_at_least((uint64_t)n * 2);
    t->vslot = calloc(t->vcap, sizeof *t->vslot);
    if (!t->vslot) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory"); goto fail; }
    for (int32_t i = 0; i < n; i++) {
        if (!t->len[i]) continue;
        uint64_t m = t->vcap - 1;
        for (uint64_t k = hash_str(t->text[i], t->len[i]) & m;; k = (k + 1) & m) {
            uint32_t v = t->vslot[k];
            if (!v) { t->vslot[k] = (uint32_t)i + 1; break; }
            if (t->len[v - 1] == t->len[i] && !memcmp(t->text[v - 1], t->text[i], t->len[i])) break;
        }
    }

    /* merges: rank = index; a repeated pair keeps its last rank (as
     * Hugging Face's map does) */
    t->n_merges = spec->n_merges;
    if (spec->n_merges) {
        t->mcap = pow2_at_least((uint64_t)spec->n_merges * 2);
        t->mkey = malloc(t->mcap * sizeof *t->mkey);
        t->mrank = malloc(t->mcap * sizeof *t->mrank);
        t->mnew = malloc(t->mcap * sizeof *t->mnew);
        if (!t->mkey || !t->mrank || !t->mnew) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory for %lld merges", (long long)spec->n_merges); goto fail; }
        memset(t->mkey, 0xff, t->mcap * sizeof *t->mkey);
        tok_buf cat = {0};
        for (int64_t r = 0; r < spec->n_merges; r++) {
            const char *s = spec->merges[r];
            if (!s) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: merge %lld is NULL", (long long)r); tok_buf_free(&cat); goto fail; }
            size_t l = strlen(s);
            const char *sp = l > 1 ? memchr(s + 1, ' ', l - 1) : NULL;
            if (!sp) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: merge %lld \"%.60s\" is not \"left right\"", (long long)r, s); tok_buf_free(&cat); goto fail; }
            size_t la = (size_t)(sp - s), lb = l - la - 1;
            int32_t a = tok_find(t, s, la), b = tok_find(t, sp + 1, lb);
            cat.n = 0;
            if (!tok_buf_put(&cat, s, la) || !tok_buf_put(&cat, sp + 1, lb)) { tok_buf_free(&cat); goto fail; }
            int32_t c = tok_find(t, cat.p, cat.n);
            if (a < 0 || b < 0 || c < 0) {
                wk_error_set(WK_ERR_ARGUMENT, "tokenizer: merge %lld \"%.60s\": \"%.60s\" is not a token", (long long)r, s,
                        a < 0 ? s : b < 0 ? sp + 1 : cat.p);
                tok_buf_free(&cat);
                goto fail;
            }
            uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b, m = t->mcap - 1;
            for (uint64_t k = hash_pair(key) & m;; k = (k + 1) & m) {
                if (t->mkey[k] == UINT64_MAX || t->mkey[k] == key) {
                    t->mkey[k] = key;
                    t->mrank[k] = (uint32_t)r;
                    t->mnew[k] = c;
                    break;
                }
            }
        }
        tok_buf_free(&cat);
    }
    t->use_scores = spec->model == WK_TOK_MODEL_SPM && !spec->n_merges;
    if (t->use_scores && !t->score) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: a SentencePiece-style tokenizer without merges needs scores"); goto fail; }
    if (spec->model == WK_TOK_MODEL_BYTE_BPE && !spec->n_merges) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: a byte-level BPE tokenizer needs merges"); goto fail; }

    /* special ids */
    const int32_t ids[4] = { spec->bos_id, spec->eos_id, spec->unk_id, spec->pad_id };
    const char *names[4] = { "bos", "eos", "unk", "pad" };
    for (int k = 0; k < 4; k++)
        if (ids[k] < -1 || ids[k] >= n) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: %s id %d out of range (%d tokens)", names[k], ids[k], n); goto fail; }
    t->bos_id = spec->bos_id;
    t->eos_id = spec->eos_id;
    t->unk_id = spec->unk_id;
    t->pad_id = spec->pad_id;

    /* byte tokens */
    for (int b = 0; b < 256; b++) {
        char s[8];
        int l;
        if (spec->model == WK_TOK_MODEL_BYTE_BPE) l = tok_utf8_put(tok_byte_to_cp((unsigned char)b), s);
        else l = snprintf(s, sizeof s, "<0x%02X>", b);
        t->byte_tok[b] = tok_find(t, s, (size_t)l);
    }

    /* added tokens: control, user-defined and unknown tokens */
    {
        tok_added *a = malloc((size_t)n * sizeof *a);
        if (!a) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory"); goto fail; }
        int32_t k = 0;
        for (int32_t i = 0; i < n; i++) {
            int ty = t->type[i];
            if (ty == WK_TOK_TYPE_CONTROL || ty == WK_TOK_TYPE_USER_DEFINED || ty == WK_TOK_TYPE_UNKNOWN)
                a[k++] = (tok_added){ i, t->special[i], false, false };
        }
        st = tok_set_added(t, a, k);
        free(a);
        if (st) goto fail;
    }

    if (!pipeline_set) {
        t->ignore_merges = spec->ignore_merges;
        if (spec->model == WK_TOK_MODEL_BYTE_BPE) {
            if (tok_set_pre(t, spec->pre)) goto fail;
            t->dec = TOK_DEC_BYTE_LEVEL;
        } else {
            if (spec->pre && strcmp(spec->pre, "default") && strcmp(spec->pre, "none") && strcmp(spec->pre, "llama")) {
                wk_error_set(WK_ERR_UNSUPPORTED, "tokenizer: pre-tokenizer \"%s\" with a SentencePiece-style model", spec->pre);
                goto fail;
            }
            t->byte_fallback = true;
            t->fuse_unk = true;
            t->dec = TOK_DEC_PIECES;
            t->dec_byte_fallback = true;
            if (spec->prefix == WK_TOK_PREFIX_ALWAYS) {
                if (tok_add_norm(t, TOK_NORM_PREPEND, META, 3, NULL, 0)) goto fail;
                t->strip = TOK_STRIP_FUSED;
                t->strip_n = 1;
            }
            if (tok_add_norm(t, TOK_NORM_REPLACE, " ", 1, META, 3)) goto fail;
            if (spec->prefix == WK_TOK_PREFIX_FIRST) {
                if (tok_add_norm(t, TOK_NORM_META_FIRST, META, 3, NULL, 0)) goto fail;
                t->strip = TOK_STRIP_FIRST_TOKEN;
                if (!(t->meta = dup_bytes(META, 3))) goto fail;
                t->meta_len = 3;
            }
            if (!(t->drep_from[0] = dup_bytes(META, 3)) || !(t->drep_to[0] = dup_bytes(" ", 1))) goto fail;
            t->drep_from_len[0] = 3;
            t->drep_to_len[0] = 1;
            t->n_drep = 1;
        }
        if (spec->add_bos) {
            if (spec->bos_id < 0) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: add_bos is set but there is no bos id"); goto fail; }
            t->prefix_ids[t->n_prefix++] = spec->bos_id;
        }
        if (spec->add_eos) {
            if (spec->eos_id < 0) { wk_error_set(WK_ERR_ARGUMENT, "tokenizer: add_eos is set but there is no eos id"); goto fail; }
            t->suffix_ids[t->n_suffix++] = spec->eos_id;
        }
    }
    if (!build_decoder(t)) goto fail;
    return t;
fail:
    wk_tokenizer_free(t);
    return NULL;
}

WK_TOK_API wk_tokenizer *wk_tokenizer_new(const wk_tokenizer_spec *spec)
{
    wk_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { wk_error_set(WK_ERR_MEMORY, "tokenizer: out of memory"); return NULL; }
    return tok_build(t, spec, false);
}

/* ---- queries --------------------------------------------------------------- */

WK_TOK_API int32_t wk_tokenizer_n_tokens(const wk_tokenizer *t) { return t ? t->n : 0; }

WK_TOK_API const char *wk_tokenizer_token(const wk_tokenizer *t, int32_t id, size_t *len)
{
    if (!t || id < 0 || id >= t->n) return NULL;
    if (len) *len = t->len[id];
    return t->text[id];
}

WK_TOK_API int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *s, size_t len)
{
    return t && s ? tok_find(t, s, len) : -1;
}

WK_TOK_API wk_tok_type wk_tokenizer_token_type(const wk_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n ? (wk_tok_type)t->type[id] : WK_TOK_TYPE_UNDEFINED;
}

WK_TOK_API bool wk_tokenizer_is_special(const wk_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n && t->special[id];
}

WK_TOK_API int32_t wk_tokenizer_bos(const wk_tokenizer *t) { return t ? t->bos_id : -1; }
WK_TOK_API int32_t wk_tokenizer_eos(const wk_tokenizer *t) { return t ? t->eos_id : -1; }

WK_TOK_API int32_t wk_tokenizer_eog(const wk_tokenizer *t, int32_t *ids, int32_t cap)
{
    static const char *const names[] = { "<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|endoftext|>",
                                         "<|end|>", "<|eom_id|>", "<|end_of_text|>" };
    int32_t k = 0;
    if (!t) return 0;
    int32_t found[16];
    if (t->eos_id >= 0) found[k++] = t->eos_id;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int32_t id = tok_find(t, names[i], strlen(names[i]));
        if (id < 0 || !t->special[id]) continue;
        bool dup = false;
        for (int32_t j = 0; j < k; j++) dup |= found[j] == id;
        if (!dup) found[k++] = id;
    }
    for (int32_t j = 0; j < k && j < cap; j++) ids[j] = found[j];
    return k;
}

/* ---- encoding ------------------------------------------------------------------ */

typedef struct span { size_t s, e; } span;
typedef struct spans { span *p; size_t n, cap; } spans;

static bool spans_push(spans *v, size_t s, size_t e)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        span *np = realloc(v->p, nc * sizeof *np);
        if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }
        v->p = np;
        v->cap = nc;
    }
    v->p[v->n++] = (span){ s, e };
    return true;
}

typedef struct enc {
    const wk_tokenizer *t;
    tok_buf nb[2];        /* normalizer ping-pong */
    spans pa, pb, ms;     /* pieces, next pieces, matches */
    uint8_t *msflag;      /* is_match per entry of ms */
    size_t msflag_cap;
    tok_match *m;
    tok_bpe_scratch *bs;
    tok_ids out;
} enc;

static bool encode_bytes(enc *e, const char *p, size_t n);

/* The split of one piece by a step: HF's Split with its behaviors. */
static bool split_piece(enc *e, const tok_step *st, const char *base, span piece)
{
    const char *s = base + piece.s;
    size_t n = piece.e - piece.s, start = 0, prev = 0;
    e->ms.n = 0;
    /* (offsets, is_match) covering the piece */
#define ADD(a, b, f) do { if (!spans_push(&e->ms, (a), (b))) return false;                   \
        if (e->ms.n > e->msflag_cap) { size_t nc = e->ms.cap; uint8_t *np = realloc(e->msflag, nc); \
            if (!np) { wk_error_set(WK_ERR_MEMORY, "out of memory"); return false; }               \
            e->msflag = np; e->msflag_cap = nc; }                                             \
        e->msflag[e->ms.n - 1] = (f); } while (0)
    while (start < n) {
        size_t a, b;
        int rc = tok_regex_find(st->re, e->m, s, n, start, &a, &b);
        if (rc < 0) return false;
        if (rc == 0) break;
        if (b == a) {   /* an empty match: step over one character */
            uint32_t cp;
            bool cut;
            int l = tok_utf8_next((const unsigned char *)s + a, n - a, &cp, &cut);
            start = a + (size_t)(l > 0 ? l : 1);
            continue;
        }
        if (prev != a) ADD(prev, a, 0);
        ADD(a, b, 1);
        prev = start = b;
    }
    if (prev != n) ADD(prev, n, 0);
#undef ADD
    if (st->invert)
        for (size_t i = 0; i < e->ms.n; i++) e->msflag[i] = !e->msflag[i];
    /* behaviors, in place over ms: w = entries kept */
    size_t w = 0;
    bool prev_match = false;
    switch (st->behavior) {
    case TOK_SPLIT_ISOLATED:
        w = e->ms.n;
        break;
    case TOK_SPLIT_REMOVED:
        for (size_t i = 0; i < e->ms.n; i++)
            if (!e->msflag[i]) e->ms.p[w++] = e->ms.p[i];
        break;
    case TOK_SPLIT_MERGED_PREV:
        for (size_t i = 0; i < e->ms.n; i++) {
            bool m = e->msflag[i];
            if (m && !prev_match && w) e->ms.p[w - 1].e = e->ms.p[i].e;
            else e->ms.p[w++] = e->ms.p[i];
            prev_match = m;
        }
        break;
    case TOK_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < e->ms.n; i++) {
            bool m = e->msflag[i];
            if (m == prev_match && w) e->ms.p[w - 1].e = e->ms.p[i].e;
            else e->ms.p[w++] = e->ms.p[i];
            prev_match = m;
        }
        break;
    case TOK_SPLIT_MERGED_NEXT: {
        /* from the end: a match is glued to the piece after it */
        size_t k = e->ms.n;
        w = e->ms.n;
        for (size_t i = e->ms.n; i-- > 0;) {
            bool m = e->msflag[i];
            if (m && !prev_match && k < e->ms.n) e->ms.p[k].s = e->ms.p[i].s;
            else e->ms.p[--k] = e->ms.p[i];
            prev_match = m;
        }
        memmove(e->ms.p, e->ms.p + k, (e->ms.n - k) * sizeof *e->ms.p);
        w = e->ms.n - k;
        break;
    }
    }
    for (size_t i = 0; i < w; i++)
        if (e->ms.p[i].e > e->ms.p[i].s && !spans_push(&e->pb, piece.s + e->ms.p[i].s, piece.s + e->ms.p[i].e)) return false;
    return true;
}

/* A valid UTF-8 run: pre-tokenize, then merge each piece. */
static bool encode_run(enc *e, const char *p, size_t n)
{
    const wk_tokenizer *t = e->t;
    if (!n) return true;
    if (!t->n_steps) return tok_bpe(t, e->bs, p, n, &e->out);
    if (!e->m && !(e->m = tok_match_new())) return false;
    e->pa.n = 0;
    if (!spans_push(&e->pa, 0, n)) return false;
    for (int k = 0; k < t->n_steps; k++) {
        e->pb.n = 0;
        for (size_t i = 0; i < e->pa.n; i++)
            if (!split_piece(e, &t->step[k], p, e->pa.p[i])) return false;
        spans tmp = e->pa; e->pa = e->pb; e->pb = tmp;
    }
    for (size_t i = 0; i < e->pa.n; i++)
        if (!tok_bpe(t, e->bs, p + e->pa.p[i].s, e->pa.p[i].e - e->pa.p[i].s, &e->out)) return false;
    return true;
}

/* Normalized text with invalid bytes in it: valid runs are encoded, each
 * invalid byte becomes its byte token; when there is none, the unknown
 * token (SentencePiece) or nothing (byte-level BPE, as for valid text). */
static bool encode_bytes(enc *e, const char *p, size_t n)
{
    const wk_tokenizer *t = e->t;
    size_t run = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80) { i++; continue; }
        uint32_t cp;
        bool cut;
        int l = tok_utf8_next((const unsigned char *)p + i, n - i, &cp, &cut);
        if (l > 0) { i += (size_t)l; continue; }
        if (!encode_run(e, p + run, i - run)) return false;
        for (int k = 0; k < -l; k++) {
            int32_t id = t->byte_tok[(unsigned char)p[i + (size_t)k]];
            if (id < 0 && t->model == WK_TOK_MODEL_SPM) id = t->unk_id;   /* byte-level: dropped, as in tok_bpe */
            if (id >= 0 && !tok_ids_push(&e->out, id)) return false;
        }
        i += (size_t)-l;
        run = i;
    }
    return encode_run(e, p + run, n - run);
}

static bool starts_with(const tok_buf *b, const char *s, size_t n) { return b->n >= n && !memcmp(b->p, s, n); }

/* A piece of text between added tokens: normalizers, then encode_bytes. */
static bool encode_text(enc *e, const char *p, size_t n, bool at_start)
{
    const wk_tokenizer *t = e->t;
    if (!n) return true;
    if (!t->n_norm) return encode_bytes(e, p, n);
    tok_buf *cur = &e->nb[0], *nxt = &e->nb[1];
    cur->n = 0;
    if (!tok_buf_put(cur, p, n)) return false;
    for (int k = 0; k < t->n_norm; k++) {
        const tok_norm *nm = &t->norm[k];
        nxt->n = 0;
        if (!tok_buf_reserve(nxt, cur->n)) return false;
        switch (nm->kind) {
        case TOK_NORM_NFC: {
            /* valid runs only; invalid bytes stay as they are */
            size_t run = 0, i = 0;
            while (i < cur->n) {
                uint32_t cp;
                bool cut;
                if ((unsigned char)cur->p[i] < 0x80) { i++; continue; }
                int l = tok_utf8_next((const unsigned char *)cur->p + i, cur->n - i, &cp, &cut);
                if (l > 0) { i += (size_t)l; continue; }
                if (!tok_nfc(cur->p + run, i - run, nxt) || !tok_buf_put(nxt, cur->p + i, (size_t)-l)) return false;
                i += (size_t)-l;
                run = i;
            }
            if (!tok_nfc(cur->p + run, cur->n - run, nxt)) return false;
            break;
        }
        case TOK_NORM_PREPEND:
            if (cur->n && !tok_buf_put(nxt, nm->str, nm->len)) return false;
            if (!tok_buf_put(nxt, cur->p, cur->n)) return false;
            break;
        case TOK_NORM_META_ALWAYS:
        case TOK_NORM_META_FIRST:
            if (cur->n && !starts_with(cur, nm->str, nm->len) && (nm->kind == TOK_NORM_META_ALWAYS || at_start) &&
                !tok_buf_put(nxt, nm->str, nm->len))
                return false;
            if (!tok_buf_put(nxt, cur->p, cur->n)) return false;
            break;
        case TOK_NORM_REPLACE:
            for (size_t i = 0; i < cur->n;) {
                if (nm->len && i + nm->len <= cur->n && !memcmp(cur->p + i, nm->str, nm->len)) {
                    if (!tok_buf_put(nxt, nm->str2, nm->len2)) return false;
                    i += nm->len;
                } else {
                    size_t j = i + 1;   /* copy up to the next possible match */
                    while (j < cur->n && (!nm->len || cur->p[j] != nm->str[0])) j++;
                    if (!tok_buf_put(nxt, cur->p + i, j - i)) return false;
                    i = j;
                }
            }
            break;
        }
        tok_buf *tmp = cur; cur = nxt; nxt = tmp;
    }
    /* encode_bytes may not touch nb: cur stays valid */
    return encode_bytes(e, cur->p, cur->n);
}

WK_TOK_API wk_status wk_tokenizer_encode(const wk_tokenizer *t, const char *text, size_t len, unsigned flags,
                                         int32_t **ids, int64_t *n_ids)
{
    if (!ids || !n_ids) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_encode: NULL output");
    *ids = NULL;
    *n_ids = 0;
    if (!t) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_encode: NULL tokenizer");
    if (!text && len) return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_encode: NULL text of %zu bytes", len);
    if (flags & ~(WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL))
        return wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_encode: unknown flags 0x%x", flags);
    enc e;
    memset(&e, 0, sizeof e);
    e.t = t;
    bool ok = (e.bs = tok_bpe_scratch_new()) != NULL;
    bool add = flags & WK_TOK_ADD_SPECIAL, parse = flags & WK_TOK_PARSE_SPECIAL;
    for (int k = 0; ok && add && k < t->n_prefix; k++) ok = tok_ids_push(&e.out, t->prefix_ids[k]);
    /* added tokens, leftmost then longest */
    size_t seg = 0;
    for (size_t i = 0; ok && i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        int32_t lo = t->added_bucket[c], hi = t->added_bucket[c + 1];
        if (lo == hi) continue;
        int32_t best = -1;
        size_t best_len = 0;
        for (int32_t k = lo; k < hi; k++) {
            const tok_added *a = &t->added[k];
            if (!parse && a->special) continue;
            size_t l = t->len[a->id];
            if (l > best_len && l <= len - i && !memcmp(text + i, t->text[a->id], l)) { best = k; best_len = l; }
        }
        if (best < 0) continue;
        const tok_added *a = &t->added[best];
        size_t s = i, end = i + best_len;
        if (a->lstrip)   /* whitespace before it goes with it */
            while (s > seg) {
                size_t b = s - 1;
                while (b > seg && ((unsigned char)text[b] & 0xC0) == 0x80) b--;
                uint32_t cp;
                bool cut;
                if (tok_utf8_next((const unsigned char *)text + b, s - b, &cp, &cut) != (int)(s - b) || !tok_is_space(cp)) break;
                s = b;
            }
        if (a->rstrip)
            while (end < len) {
                uint32_t cp;
                bool cut;
                int l = tok_utf8_next((const unsigned char *)text + end, len - end, &cp, &cut);
                if (l <= 0 || !tok_is_space(cp)) break;
                end += (size_t)l;
            }
        ok = encode_text(&e, text + seg, s - seg, seg == 0) && tok_ids_push(&e.out, a->id);
        seg = end;
        i = end - 1;
    }
    if (ok) ok = encode_text(&e, text + seg, len - seg, seg == 0);
    for (int k = 0; ok && add && k < t->n_suffix; k++) ok = tok_ids_push(&e.out, t->suffix_ids[k]);
    tok_buf_free(&e.nb[0]);
    tok_buf_free(&e.nb[1]);
    free(e.pa.p);
    free(e.pb.p);
    free(e.ms.p);
    free(e.msflag);
    tok_match_free(e.m);
    tok_bpe_scratch_free(e.bs);
    if (!ok) {
        free(e.out.p);
        return wk_last_status() ? wk_last_status() : wk_error_set(WK_ERR_MEMORY, "out of memory");
    }
    if (!e.out.p && !(e.out.p = malloc(sizeof(int32_t)))) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    *ids = e.out.p;
    *n_ids = e.out.n;
    return WK_OK;
}
