/* tok_gguf.c — a tokenizer from a GGUF file's tokenizer.ggml.* metadata, as
 * llama.cpp's converter writes it: model ("gpt2": byte-level BPE; "llama":
 * SentencePiece-style), tokens, token_type, scores, merges, pre, the
 * bos/eos/unknown/padding ids, add_bos_token, add_eos_token and
 * add_space_prefix. */
#include <stdio.h>
#include <stdlib.h>
#include "tok_internal.h"

static const char *fname(const wk_gguf *g) { return wk_gguf_path(g) ? wk_gguf_path(g) : "GGUF"; }

/* An optional integer id: -1 when absent. */
static wk_status get_id(const wk_gguf *g, const char *key, int32_t n, int32_t *out)
{
    *out = -1;
    const wk_gguf_value *v = wk_gguf_find(g, key);
    if (!v) return WK_OK;
    int64_t x;
    if (!wk_gguf_value_int(v, &x)) return wk_error_set(WK_ERR_IO, "%s: %s is a %s, not an integer", fname(g), key, wk_gguf_type_name(wk_gguf_value_type(v)));
    if (x < 0 || x >= n) {
        /* some files hold ids past the vocabulary (a padding id of -1 written
         * as u32): treat as absent, as llama.cpp does */
        return WK_OK;
    }
    *out = (int32_t)x;
    return WK_OK;
}

static wk_status get_bool(const wk_gguf *g, const char *key, bool dflt, bool *out)
{
    *out = dflt;
    const wk_gguf_value *v = wk_gguf_find(g, key);
    if (!v) return WK_OK;
    if (!wk_gguf_value_bool(v, out)) return wk_error_set(WK_ERR_IO, "%s: %s is a %s, not a bool", fname(g), key, wk_gguf_type_name(wk_gguf_value_type(v)));
    return WK_OK;
}

WK_TOK_API wk_tokenizer *wk_tokenizer_from_gguf(const wk_gguf *g)
{
    if (!g) { wk_error_set(WK_ERR_ARGUMENT, "wk_tokenizer_from_gguf: NULL file"); return NULL; }
    wk_tokenizer_spec sp = wk_tokenizer_spec_default();
    const char **toks = NULL, **merges = NULL;
    size_t *lens = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    wk_tokenizer *t = NULL;
    const wk_gguf_value *v;

    const char *model = (v = wk_gguf_find(g, "tokenizer.ggml.model")) ? wk_gguf_value_str(v, NULL) : NULL;
    if (!model) { wk_error_set(WK_ERR_ARGUMENT, "%s: no tokenizer.ggml.model string: the file has no tokenizer", fname(g)); return NULL; }
    if (!strcmp(model, "gpt2")) sp.model = WK_TOK_MODEL_BYTE_BPE;
    else if (!strcmp(model, "llama")) sp.model = WK_TOK_MODEL_SPM;
    else {
        wk_error_set(WK_ERR_UNSUPPORTED, "%s: tokenizer model \"%s\" is not supported (gpt2, llama)", fname(g), model);
        return NULL;
    }

    const wk_gguf_value *tv = wk_gguf_find(g, "tokenizer.ggml.tokens");
    if (!tv || wk_gguf_array_type(tv) != WK_GGUF_STRING) { wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.tokens is absent or not an array of strings", fname(g)); return NULL; }
    uint64_t n = wk_gguf_array_len(tv);
    if (n == 0 || n > INT32_MAX - 1) { wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.tokens has %llu tokens", fname(g), (unsigned long long)n); return NULL; }
    toks = malloc(n * sizeof *toks);
    lens = malloc(n * sizeof *lens);
    if (!toks || !lens) { wk_error_set(WK_ERR_MEMORY, "out of memory for %llu tokens", (unsigned long long)n); goto done; }
    for (uint64_t i = 0; i < n; i++) toks[i] = wk_gguf_array_str(tv, i, &lens[i]);

    if ((v = wk_gguf_find(g, "tokenizer.ggml.scores"))) {
        if (wk_gguf_array_type(v) != WK_GGUF_F32 || wk_gguf_array_len(v) != n) {
            wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.scores is not %llu f32 values", fname(g), (unsigned long long)n);
            goto done;
        }
        if (!(scores = malloc(n * sizeof *scores))) { wk_error_set(WK_ERR_MEMORY, "out of memory"); goto done; }
        memcpy(scores, wk_gguf_array_data(v), n * sizeof *scores);
    }
    if ((v = wk_gguf_find(g, "tokenizer.ggml.token_type"))) {
        wk_gguf_type et = wk_gguf_array_type(v);
        if (wk_gguf_array_len(v) != n || et == WK_GGUF_STRING || et == WK_GGUF_ARRAY || et == WK_GGUF_TYPE_COUNT) {
            wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.token_type is not %llu integers", fname(g), (unsigned long long)n);
            goto done;
        }
        if (!(types = malloc(n * sizeof *types))) { wk_error_set(WK_ERR_MEMORY, "out of memory"); goto done; }
        for (uint64_t i = 0; i < n; i++) {
            int64_t x;
            if (!wk_gguf_array_int(v, i, &x) || x < 0 || x > WK_TOK_TYPE_BYTE) {
                wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.token_type[%llu] is not a token type (0..6)", fname(g), (unsigned long long)i);
                goto done;
            }
            types[i] = (int32_t)x;
        }
    }
    uint64_t nm = 0;
    if ((v = wk_gguf_find(g, "tokenizer.ggml.merges"))) {
        if (wk_gguf_array_type(v) != WK_GGUF_STRING) { wk_error_set(WK_ERR_IO, "%s: tokenizer.ggml.merges is not an array of strings", fname(g)); goto done; }
        nm = wk_gguf_array_len(v);
        if (nm && !(merges = malloc(nm * sizeof *merges))) { wk_error_set(WK_ERR_MEMORY, "out of memory"); goto done; }
        for (uint64_t i = 0; i < nm; i++) merges[i] = wk_gguf_array_str(v, i, NULL);
    }
    /* SentencePiece models are merged by their scores, as llama.cpp does,
     * even where a converter wrote merges too; but a converter that had no
     * scores writes one placeholder for all (-1000): then the merges rule */
    if (sp.model == WK_TOK_MODEL_SPM && scores) {
        bool varied = false;
        for (uint64_t i = 1; i < n && !varied; i++) varied = scores[i] != scores[0];
        if (varied || !nm) nm = 0;
    }

    int32_t ni = (int32_t)n;
    if (get_id(g, "tokenizer.ggml.bos_token_id", ni, &sp.bos_id) || get_id(g, "tokenizer.ggml.eos_token_id", ni, &sp.eos_id) ||
        get_id(g, "tokenizer.ggml.unknown_token_id", ni, &sp.unk_id) || get_id(g, "tokenizer.ggml.padding_token_id", ni, &sp.pad_id))
        goto done;
    bool spm = sp.model == WK_TOK_MODEL_SPM, space_prefix;
    /* llama.cpp's defaults when a key is absent */
    if (get_bool(g, "tokenizer.ggml.add_bos_token", spm, &sp.add_bos) || get_bool(g, "tokenizer.ggml.add_eos_token", false, &sp.add_eos) ||
        get_bool(g, "tokenizer.ggml.add_space_prefix", spm, &space_prefix))
        goto done;
    if (sp.add_bos && sp.bos_id < 0) sp.add_bos = false;
    if (sp.add_eos && sp.eos_id < 0) sp.add_eos = false;
    sp.prefix = spm && space_prefix ? WK_TOK_PREFIX_ALWAYS : WK_TOK_PREFIX_NONE;
    if (sp.unk_id < 0 && types)
        for (uint64_t i = 0; i < n; i++)
            if (types[i] == WK_TOK_TYPE_UNKNOWN) { sp.unk_id = (int32_t)i; break; }
    const char *pre = (v = wk_gguf_find(g, "tokenizer.ggml.pre")) ? wk_gguf_value_str(v, NULL) : NULL;
    sp.pre = spm ? NULL : pre;
    sp.n_tokens = ni;
    sp.tokens = toks;
    sp.token_lens = lens;
    sp.scores = scores;
    sp.token_types = types;
    sp.n_merges = (int64_t)nm;
    sp.merges = merges;
    t = wk_tokenizer_new(&sp);
    if (!t) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        wk_error_set(wk_last_status(), "%s: %s", fname(g), msg);
    }
done:
    free(toks);
    free(lens);
    free(scores);
    free(types);
    free(merges);
    return t;
}

WK_TOK_API wk_tokenizer *wk_tokenizer_from_gguf_file(const char *path)
{
    wk_gguf *g = wk_gguf_open(path);
    if (!g) { wk_error_wrap("tokenizer"); return NULL; }
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    return t;
}
