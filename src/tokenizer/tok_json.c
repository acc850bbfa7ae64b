/* tok_json.c — a tokenizer from a Hugging Face tokenizer.json: the BPE
 * model (vocab, merges in either format, byte_fallback, fuse_unk,
 * ignore_merges, unk_token), added_tokens, and the normalizer,
 * pre-tokenizer, decoder and post-processor the byte-level and
 * SentencePiece-style families use. Anything else is refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include "tok_internal.h"

typedef struct jctx {
    const char *doc;
    wk_tokenizer *t;
    bool byte_level;      /* a ByteLevel pre-tokenizer was seen      */
    bool fused;           /* a Fuse decoder was seen                 */
    bool dec_set;
    const wk_json *special_tokens;
} jctx;

static const char *jstr(const wk_json *o, const char *key)
{
    return wk_json_string(wk_json_get(o, key), NULL);
}

static bool jbool(const wk_json *o, const char *key, bool dflt)
{
    bool b;
    return wk_json_bool(wk_json_get(o, key), &b) ? b : dflt;
}

static wk_status unsupported(jctx *c, const char *what, const char *type)
{
    return wk_error_set(WK_ERR_UNSUPPORTED, "%s: %s \"%s\" is not supported", c->doc, what, type ? type : "(no type)");
}

/* {"String": s} or {"Regex": r} */
static wk_status pattern_of(jctx *c, const wk_json *p, const char *what, const char **s, size_t *len, bool *literal)
{
    const wk_json *v;
    if ((v = wk_json_get(p, "String")) && (*s = wk_json_string(v, len))) { *literal = true; return WK_OK; }
    if ((v = wk_json_get(p, "Regex")) && (*s = wk_json_string(v, len))) { *literal = false; return WK_OK; }
    return wk_error_set(WK_ERR_IO, "%s: %s has no String or Regex pattern", c->doc, what);
}

/* ---- normalizers ------------------------------------------------------- */

static wk_status normalizer(jctx *c, const wk_json *n)
{
    if (!n || wk_json_kind(n) == WK_JSON_NULL) return WK_OK;
    const char *ty = jstr(n, "type");
    wk_status st;
    if (!ty) return wk_error_set(WK_ERR_IO, "%s: a normalizer without a type", c->doc);
    if (!strcmp(ty, "Sequence")) {
        const wk_json *a = wk_json_get(n, "normalizers");
        for (size_t i = 0; i < wk_json_count(a); i++)
            if ((st = normalizer(c, wk_json_item(a, i)))) return st;
        return WK_OK;
    }
    if (!strcmp(ty, "NFC")) return tok_add_norm(c->t, TOK_NORM_NFC, NULL, 0, NULL, 0);
    if (!strcmp(ty, "Prepend")) {
        size_t l;
        const char *s = wk_json_string(wk_json_get(n, "prepend"), &l);
        if (!s) return wk_error_set(WK_ERR_IO, "%s: Prepend normalizer without a prepend string", c->doc);
        return tok_add_norm(c->t, TOK_NORM_PREPEND, s, l, NULL, 0);
    }
    if (!strcmp(ty, "Replace")) {
        const char *s, *r;
        size_t l, rl;
        bool lit = false;
        if ((st = pattern_of(c, wk_json_get(n, "pattern"), "Replace normalizer", &s, &l, &lit))) return st;
        if (!lit) return unsupported(c, "normalizer Replace with a pattern of type", "Regex");
        if (!(r = wk_json_string(wk_json_get(n, "content"), &rl))) return wk_error_set(WK_ERR_IO, "%s: Replace normalizer without content", c->doc);
        return tok_add_norm(c->t, TOK_NORM_REPLACE, s, l, r, rl);
    }
    return unsupported(c, "normalizer", ty);
}

/* ---- pre-tokenizers ------------------------------------------------------- */

static const char RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static wk_status pretokenizer(jctx *c, const wk_json *p)
{
    if (!p || wk_json_kind(p) == WK_JSON_NULL) return WK_OK;
    const char *ty = jstr(p, "type");
    wk_status st;
    if (!ty) return wk_error_set(WK_ERR_IO, "%s: a pre-tokenizer without a type", c->doc);
    if (c->byte_level) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: a pre-tokenizer (%s) after ByteLevel is not supported", c->doc, ty);
    if (!strcmp(ty, "Sequence")) {
        const wk_json *a = wk_json_get(p, "pretokenizers");
        for (size_t i = 0; i < wk_json_count(a); i++)
            if ((st = pretokenizer(c, wk_json_item(a, i)))) return st;
        return WK_OK;
    }
    if (!strcmp(ty, "Split")) {
        const char *s;
        size_t l;
        bool lit = false;
        if ((st = pattern_of(c, wk_json_get(p, "pattern"), "Split pre-tokenizer", &s, &l, &lit))) return st;
        const char *b = jstr(p, "behavior");
        tok_split_behavior bh;
        if (!b) return wk_error_set(WK_ERR_IO, "%s: Split pre-tokenizer without a behavior", c->doc);
        if (!strcmp(b, "Isolated")) bh = TOK_SPLIT_ISOLATED;
        else if (!strcmp(b, "Removed")) bh = TOK_SPLIT_REMOVED;
        else if (!strcmp(b, "MergedWithPrevious")) bh = TOK_SPLIT_MERGED_PREV;
        else if (!strcmp(b, "MergedWithNext")) bh = TOK_SPLIT_MERGED_NEXT;
        else if (!strcmp(b, "Contiguous")) bh = TOK_SPLIT_CONTIGUOUS;
        else return unsupported(c, "Split behavior", b);
        return tok_add_step(c->t, s, l, lit, bh, jbool(p, "invert", false));
    }
    if (!strcmp(ty, "ByteLevel")) {
        if (jbool(p, "add_prefix_space", false)) return unsupported(c, "ByteLevel pre-tokenizer with add_prefix_space", "true");
        c->byte_level = true;
        if (jbool(p, "use_regex", true)) {
            c->byte_level = false;   /* allow the step itself */
            st = tok_add_step(c->t, RE_GPT2, sizeof RE_GPT2 - 1, false, TOK_SPLIT_ISOLATED, false);
            c->byte_level = true;
            return st;
        }
        return WK_OK;
    }
    if (!strcmp(ty, "Digits")) {
        bool each = jbool(p, "individual_digits", false);
        return tok_add_step(c->t, each ? "\\p{N}" : "\\p{N}+", each ? 5 : 6, false, TOK_SPLIT_ISOLATED, false);
    }
    if (!strcmp(ty, "Metaspace")) {
        if (c->t->n_steps) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: a Metaspace pre-tokenizer after another one is not supported", c->doc);
        size_t rl;
        const char *r = wk_json_string(wk_json_get(p, "replacement"), &rl);
        if (!r) return wk_error_set(WK_ERR_IO, "%s: Metaspace without a replacement", c->doc);
        const char *scheme = jstr(p, "prepend_scheme");
        if (!scheme) scheme = jbool(p, "add_prefix_space", true) ? "always" : "never";
        if ((st = tok_add_norm(c->t, TOK_NORM_REPLACE, " ", 1, r, rl))) return st;
        if (!strcmp(scheme, "always")) st = tok_add_norm(c->t, TOK_NORM_META_ALWAYS, r, rl, NULL, 0);
        else if (!strcmp(scheme, "first")) st = tok_add_norm(c->t, TOK_NORM_META_FIRST, r, rl, NULL, 0);
        else if (strcmp(scheme, "never")) return unsupported(c, "Metaspace prepend_scheme", scheme);
        if (st) return st;
        if (jbool(p, "split", true)) return tok_add_step(c->t, r, rl, true, TOK_SPLIT_MERGED_NEXT, false);
        return WK_OK;
    }
    return unsupported(c, "pre-tokenizer", ty);
}

/* ---- decoders ------------------------------------------------------------------ */

static wk_status add_drep(jctx *c, const char *from, size_t fl, const char *to, size_t tl)
{
    wk_tokenizer *t = c->t;
    if (t->n_drep == TOK_MAX_NORM) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: more than %d Replace decoders", c->doc, TOK_MAX_NORM);
    char *f = malloc(fl + 1), *o = malloc(tl + 1);
    if (!f || !o) { free(f); free(o); return wk_error_set(WK_ERR_MEMORY, "out of memory"); }
    memcpy(f, from, fl);
    f[fl] = 0;
    memcpy(o, to, tl);
    o[tl] = 0;
    t->drep_from[t->n_drep] = f;
    t->drep_to[t->n_drep] = o;
    t->drep_from_len[t->n_drep] = fl;
    t->drep_to_len[t->n_drep] = tl;
    t->n_drep++;
    return WK_OK;
}

static wk_status decoder(jctx *c, const wk_json *d)
{
    wk_tokenizer *t = c->t;
    if (!d || wk_json_kind(d) == WK_JSON_NULL) return WK_OK;
    const char *ty = jstr(d, "type");
    wk_status st;
    if (!ty) return wk_error_set(WK_ERR_IO, "%s: a decoder without a type", c->doc);
    if (!strcmp(ty, "Sequence")) {
        const wk_json *a = wk_json_get(d, "decoders");
        for (size_t i = 0; i < wk_json_count(a); i++)
            if ((st = decoder(c, wk_json_item(a, i)))) return st;
        return WK_OK;
    }
    if (!strcmp(ty, "ByteLevel")) {
        if (c->dec_set && t->dec != TOK_DEC_BYTE_LEVEL) return unsupported(c, "decoder ByteLevel after other decoders", ty);
        t->dec = TOK_DEC_BYTE_LEVEL;
        c->dec_set = true;
        return WK_OK;
    }
    if (c->dec_set && t->dec == TOK_DEC_BYTE_LEVEL) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: decoder %s after ByteLevel is not supported", c->doc, ty);
    t->dec = TOK_DEC_PIECES;
    c->dec_set = true;
    if (!strcmp(ty, "Replace")) {
        const char *s, *r;
        size_t l, rl;
        bool lit = false;
        if ((st = pattern_of(c, wk_json_get(d, "pattern"), "Replace decoder", &s, &l, &lit))) return st;
        if (!lit) return unsupported(c, "decoder Replace with a pattern of type", "Regex");
        if (!(r = wk_json_string(wk_json_get(d, "content"), &rl))) return wk_error_set(WK_ERR_IO, "%s: Replace decoder without content", c->doc);
        if (c->fused) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: a Replace decoder after Fuse is not supported", c->doc);
        return add_drep(c, s, l, r, rl);
    }
    if (!strcmp(ty, "ByteFallback")) {
        t->dec_byte_fallback = true;
        return WK_OK;
    }
    if (!strcmp(ty, "Fuse")) {
        c->fused = true;
        return WK_OK;
    }
    if (!strcmp(ty, "Strip")) {
        size_t cl;
        const char *content = wk_json_string(wk_json_get(d, "content"), &cl);
        int64_t start = 0, stop = 0;
        wk_json_int(wk_json_get(d, "start"), &start);
        wk_json_int(wk_json_get(d, "stop"), &stop);
        if (!content || cl != 1 || content[0] != ' ' || stop != 0 || start < 0 || start > 64 || !c->fused)
            return wk_error_set(WK_ERR_UNSUPPORTED, "%s: a Strip decoder is supported only after Fuse, stripping spaces from the start", c->doc);
        t->strip = TOK_STRIP_FUSED;
        t->strip_n = (int)start;
        return WK_OK;
    }
    if (!strcmp(ty, "Metaspace")) {
        size_t rl;
        const char *r = wk_json_string(wk_json_get(d, "replacement"), &rl);
        if (!r) return wk_error_set(WK_ERR_IO, "%s: Metaspace decoder without a replacement", c->doc);
        const char *scheme = jstr(d, "prepend_scheme");
        if (!scheme) scheme = jbool(d, "add_prefix_space", true) ? "always" : "never";
        if (strcmp(scheme, "never")) {
            t->strip = TOK_STRIP_FIRST_TOKEN;
            free(t->meta);
            if (!(t->meta = malloc(rl + 1))) return wk_error_set(WK_ERR_MEMORY, "out of memory");
            memcpy(t->meta, r, rl);
            t->meta[rl] = 0;
            t->meta_len = rl;
        }
        return add_drep(c, r, rl, " ", 1);
    }
    return unsupported(c, "decoder", ty);
}

/* ---- post-processors ------------------------------------------------------------- */

static wk_status affix_add(jctx *c, bool after, int64_t id)
{
    wk_tokenizer *t = c->t;
    int *n = after ? &t->n_suffix : &t->n_prefix;
    if (*n == TOK_MAX_AFFIX) return wk_error_set(WK_ERR_UNSUPPORTED, "%s: more than %d tokens around a sequence", c->doc, TOK_MAX_AFFIX);
    if (id < 0 || id > INT32_MAX) return wk_error_set(WK_ERR_IO, "%s: post-processor id %lld", c->doc, (long long)id);
    (after ? t->suffix_ids : t->prefix_ids)[(*n)++] = (int32_t)id;
    return WK_OK;
}

/* ["[CLS]", 101] */
static wk_status pair_id(jctx *c, const wk_json *p, bool after)
{
    int64_t id;
    if (!wk_json_int(wk_json_item(p, 1), &id)) return wk_error_set(WK_ERR_IO, "%s: post-processor token without an id", c->doc);
    return affix_add(c, after, id);
}

static wk_status postprocessor(jctx *c, const wk_json *p)
{
    if (!p || wk_json_kind(p) == WK_JSON_NULL) return WK_OK;
    const char *ty = jstr(p, "type");
    wk_status st;
    if (!ty) return wk_error_set(WK_ERR_IO, "%s: a post-processor without a type", c->doc);
    if (!strcmp(ty, "Sequence")) {
        const wk_json *a = wk_json_get(p, "processors");
        for (size_t i = 0; i < wk_json_count(a); i++)
            if ((st = postprocessor(c, wk_json_item(a, i)))) return st;
        return WK_OK;
    }
    if (!strcmp(ty, "ByteLevel")) return WK_OK;   /* offsets only */
    if (!strcmp(ty, "BertProcessing") || !strcmp(ty, "RobertaProcessing")) {
        if ((st = pair_id(c, wk_json_get(p, "cls"), false))) return st;
        return pair_id(c, wk_json_get(p, "sep"), true);
    }
    if (!strcmp(ty, "TemplateProcessing")) {
        const wk_json *single = wk_json_get(p, "single"), *sp = wk_json_get(p, "special_tokens");
        bool after = false;
        for (size_t i = 0; i < wk_json_count(single); i++) {
            const wk_json *it = wk_json_item(single, i), *v;
            if (wk_json_get(it, "Sequence")) { after = true; continue; }
            if (!(v = wk_json_get(it, "SpecialToken"))) return wk_error_set(WK_ERR_IO, "%s: TemplateProcessing item %zu is neither Sequence nor SpecialToken", c->doc, i);
            const char *name = jstr(v, "id");
            const wk_json *e = name ? wk_json_get(sp, name) : NULL, *ids = wk_json_get(e, "ids");
            if (!e || wk_json_kind(ids) != WK_JSON_ARRAY)
                return wk_error_set(WK_ERR_IO, "%s: TemplateProcessing names special token \"%s\" that it does not define", c->doc, name ? name : "?");
            for (size_t k = 0; k < wk_json_count(ids); k++) {
                int64_t id;
                if (!wk_json_int(wk_json_item(ids, k), &id)) return wk_error_set(WK_ERR_IO, "%s: special token \"%s\": ids are not integers", c->doc, name);
                if ((st = affix_add(c, after, id))) return st;
            }
        }
        return WK_OK;
    }
    return unsupported(c, "post-processor", ty);
}

/* ---- the whole file ------------------------------------------------------------------ */

WK_TOK_API wk_tokenizer *wk_tokenizer_from_json(const wk_json *root)
{
    if (!root) { wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_from_json: NULL document"); return NULL; }
    jctx c = { .doc = wk_json_doc_name(root) ? wk_json_doc_name(root) : "tokenizer.json" };
    const wk_json *model = wk_json_get(root, "model");
    const char **toks = NULL, **merges = NULL;
    char **merge_bufs = NULL;
    size_t *lens = NULL;
    int32_t *types = NULL;
    tok_added *added = NULL;
    int64_t n_added = 0, nm = 0;
    wk_tokenizer *t = NULL, *built = NULL;

    if (wk_json_kind(model) != WK_JSON_OBJECT) { wk_error_set(WK_ERR_IO, "%s: no model object", c.doc); return NULL; }
    const char *mty = jstr(model, "type");
    if (mty && strcmp(mty, "BPE")) { unsupported(&c, "model", mty); return NULL; }
    const wk_json *vocab = wk_json_get(model, "vocab"), *mlist = wk_json_get(model, "merges");
    if (wk_json_kind(vocab) != WK_JSON_OBJECT) { wk_error_set(WK_ERR_IO, "%s: model.vocab is not an object", c.doc); return NULL; }
    const char *cs = jstr(model, "continuing_subword_prefix"), *ew = jstr(model, "end_of_word_suffix");
    if ((cs && *cs) || (ew && *ew)) { unsupported(&c, "BPE with a subword prefix or word suffix", cs && *cs ? cs : ew); return NULL; }
    double dropout;
    if (wk_json_number(wk_json_get(model, "dropout"), &dropout) && dropout != 0) { unsupported(&c, "BPE with dropout", "dropout"); return NULL; }

    /* ids: the vocab and the added tokens */
    int64_t n = 0;
    for (size_t i = 0; i < wk_json_count(vocab); i++) {
        int64_t id;
        if (!wk_json_int(wk_json_item(vocab, i), &id) || id < 0 || id >= INT32_MAX) {
            size_t kl;
            const char *k = wk_json_key(vocab, i, &kl);
            wk_error_set(WK_ERR_IO, "%s: model.vocab[\"%.60s\"] is not a token id", c.doc, k);
            return NULL;
        }
        if (id + 1 > n) n = id + 1;
    }
    const wk_json *at = wk_json_get(root, "added_tokens");
    for (size_t i = 0; i < wk_json_count(at); i++) {
        int64_t id;
        if (!wk_json_int(wk_json_get(wk_json_item(at, i), "id"), &id) || id < 0 || id >= INT32_MAX) {
            wk_error_set(WK_ERR_IO, "%s: added_tokens[%zu] has no valid id", c.doc, i);
            return NULL;
        }
        if (!jstr(wk_json_item(at, i), "content")) { wk_error_set(WK_ERR_IO, "%s: added_tokens[%zu] has no content", c.doc, i); return NULL; }
        if (id + 1 > n) n = id + 1;
    }
    if (n == 0) { wk_error_set(WK_ERR_IO, "%s: no tokens", c.doc); return NULL; }
    toks = calloc((size_t)n, sizeof *toks);
    lens = calloc((size_t)n, sizeof *lens);
    types = malloc((size_t)n * sizeof *types);
    added = malloc((wk_json_count(at) + 1) * sizeof *added);
    t = calloc(1, sizeof *t);
    if (!toks || !lens || !types || !added || !t) { wk_error_set(WK_ERR_MEMORY, "out of memory for %lld tokens", (long long)n); goto done; }
    for (int64_t i = 0; i < n; i++) types[i] = WK_TOK_TYPE_UNUSED;
    for (size_t i = 0; i < wk_json_count(vocab); i++) {
        int64_t id;
        wk_json_int(wk_json_item(vocab, i), &id);
        toks[id] = wk_json_key(vocab, i, &lens[id]);
        types[id] = WK_TOK_TYPE_NORMAL;
    }
    const char *unk = jstr(model, "unk_token");
    int32_t unk_id = -1;
    if (unk) {
        const wk_json *u = wk_json_get(vocab, unk);
        int64_t id;
        if (u && wk_json_int(u, &id)) unk_id = (int32_t)id;
    }
    for (size_t i = 0; i < wk_json_count(at); i++) {
        const wk_json *a = wk_json_item(at, i);
        int64_t id;
        wk_json_int(wk_json_get(a, "id"), &id);
        toks[id] = wk_json_string(wk_json_get(a, "content"), &lens[id]);
        bool special = jbool(a, "special", false);
        types[id] = special ? (id == unk_id ? WK_TOK_TYPE_UNKNOWN : WK_TOK_TYPE_CONTROL) : WK_TOK_TYPE_USER_DEFINED;
        added[n_added++] = (tok_added){ (int32_t)id, special, jbool(a, "lstrip", false), jbool(a, "rstrip", false) };
    }
    for (int64_t i = 0; i < n; i++)
        if (!toks[i]) { toks[i] = ""; lens[i] = 0; }

    /* merges: "a b" strings, or [a, b] pairs */
    nm = (int64_t)wk_json_count(mlist);
    if (nm) {
        merges = calloc((size_t)nm, sizeof *merges);
        merge_bufs = calloc((size_t)nm, sizeof *merge_bufs);
        if (!merges || !merge_bufs) { wk_error_set(WK_ERR_MEMORY, "out of memory for %lld merges", (long long)nm); goto done; }
        for (int64_t i = 0; i < nm; i++) {
            const wk_json *m = wk_json_item(mlist, (size_t)i);
            if ((merges[i] = wk_json_string(m, NULL))) continue;
            size_t la, lb;
            const char *a = wk_json_string(wk_json_item(m, 0), &la), *b = wk_json_string(wk_json_item(m, 1), &lb);
            if (wk_json_count(m) != 2 || !a || !b) { wk_error_set(WK_ERR_IO, "%s: model.merges[%lld] is neither \"a b\" nor [a, b]", c.doc, (long long)i); goto done; }
            if (memchr(a, ' ', la) || memchr(b, ' ', lb)) {
                wk_error_set(WK_ERR_UNSUPPORTED, "%s: model.merges[%lld] has a token with a space in it", c.doc, (long long)i);
                goto done;
            }
            char *s = malloc(la + lb + 2);
            if (!s) { wk_error_set(WK_ERR_MEMORY, "out of memory"); goto done; }
            memcpy(s, a, la);
            s[la] = ' ';
            memcpy(s + la + 1, b, lb);
            s[la + lb + 1] = 0;
            merges[i] = merge_bufs[i] = s;
        }
    }

    /* the pipeline */
    c.t = t;
    if (normalizer(&c, wk_json_get(root, "normalizer")) || pretokenizer(&c, wk_json_get(root, "pre_tokenizer")) ||
        decoder(&c, wk_json_get(root, "decoder")) || postprocessor(&c, wk_json_get(root, "post_processor"))) {
        const char *m = wk_last_error();
        if (strncmp(m, c.doc, strlen(c.doc))) {   /* a regex's or PCRE2's words: name the file */
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", m);
            wk_error_set(wk_last_status(), "%s: %s", c.doc, msg);
        }
        goto done;
    }
    if (!c.dec_set) t->dec = TOK_DEC_JOIN;
    t->byte_fallback = jbool(model, "byte_fallback", false);
    t->fuse_unk = jbool(model, "fuse_unk", false);
    t->ignore_merges = jbool(model, "ignore_merges", false);
    if (c.byte_level) {
        /* the ByteLevel pre-tokenizer maps bytes before the model; here
         * the model does it, so nothing may come between them */
    }

    wk_tokenizer_spec sp = wk_tokenizer_spec_default();
    sp.model = c.byte_level ? WK_TOK_MODEL_BYTE_BPE : WK_TOK_MODEL_SPM;
    sp.n_tokens = (int32_t)n;
    sp.tokens = toks;
    sp.token_lens = lens;
    sp.token_types = types;
    sp.n_merges = nm;
    sp.merges = merges;
    sp.unk_id = unk_id;
    if (!nm && !c.byte_level) {
        wk_error_set(WK_ERR_UNSUPPORTED, "%s: a BPE model without merges", c.doc);
        goto done;
    }
    /* bos/eos: the affixes' tokens, when there is one each */
    if (t->n_prefix == 1) sp.bos_id = t->prefix_ids[0];
    if (t->n_suffix == 1) sp.eos_id = t->suffix_ids[0];
    for (int k = 0; k < t->n_prefix; k++)
        if (t->prefix_ids[k] >= n) { wk_error_set(WK_ERR_IO, "%s: post-processor id %d out of range", c.doc, t->prefix_ids[k]); goto done; }
    for (int k = 0; k < t->n_suffix; k++)
        if (t->suffix_ids[k] >= n) { wk_error_set(WK_ERR_IO, "%s: post-processor id %d out of range", c.doc, t->suffix_ids[k]); goto done; }
    if (sp.eos_id < 0) {
        /* no eos in the template: a special token of a familiar name */
        static const char *const names[] = { "</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "<|im_end|>" };
        for (size_t k = 0; k < sizeof names / sizeof names[0] && sp.eos_id < 0; k++)
            for (int64_t i = 0; i < n_added; i++)
                if (added[i].special && !strcmp(toks[added[i].id], names[k])) { sp.eos_id = added[i].id; break; }
    }
    {
        wk_tokenizer *tt = t;
        t = NULL;   /* tok_build owns it now */
        built = tok_build(tt, &sp, true);
    }
    if (!built) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        wk_error_set(wk_last_status(), "%s: %s", c.doc, msg);
        goto done;
    }
    if (tok_set_added(built, added, (int32_t)n_added)) {
        wk_tokenizer_free(built);
        built = NULL;
    }
done:
    if (t) wk_tokenizer_free(t);
    if (merge_bufs)
        for (int64_t i = 0; i < nm; i++) free(merge_bufs[i]);
    free(merge_bufs);
    free(merges);
    free(toks);
    free(lens);
    free(types);
    free(added);
    return built;
}

WK_TOK_API wk_tokenizer *wk_tokenizer_from_json_file(const char *path)
{
    if (!path) { wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_from_json_file: NULL path"); return NULL; }
    char buf[4096];
    const char *p = path;
    size_t l = strlen(path);
    if (l < 5 || strcmp(path + l - 5, ".json")) {
        snprintf(buf, sizeof buf, "%s/tokenizer.json", path);
        p = buf;
    }
    wk_json *root = wk_json_parse_file(p, 0);
    if (!root) { wk_error_wrap("tokenizer"); return NULL; }
    wk_tokenizer *t = wk_tokenizer_from_json(root);
    wk_json_free(root);
    return t;
}
