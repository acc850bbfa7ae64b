/* text.c — the text side of a model: its chat template (which chat.c
 * parses and runs) and format, BOS and end-of-generation tokens, its
 * tokenizer (wick_tokenizer.h: from the GGUF metadata or the folder's
 * tokenizer.json) and the bytes of each token. A model whose tokenizer
 * cannot be built still loads: it runs token ids, and wk_llm_tokenize
 * says why it has no tokenizer. The generation loop is generate.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick_tokenizer.h"
#include "llm_internal.h"

typedef struct llm_text {
    char *bytes;          /* every token's bytes, back to back          */
    uint64_t *off;        /* [n_vocab + 1] offsets into bytes           */
    unsigned char *special; /* [n_vocab] control tokens: no text        */
    wk_tokenizer *tok;    /* NULL when it could not be built            */
    char why[512];        /* ... and why                                */
} llm_text;

/* ---- token bytes from GGUF --------------------------------------------------- */

/* GPT-2's byte-level alphabet: the code point a byte is written as */
static int byte_of_cp(uint32_t cp)
{
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return (int)cp;
    if (cp < 256) return -1;
    /* the others in order: 0..32, 127..160, 173 -> 256, 257, ... */
    int n = 0;
    for (int b = 0; b < 256; b++) {
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) continue;
        if ((uint32_t)(256 + n) == cp) return b;
        n++;
    }
    return -1;
}

/* one UTF-8 code point at s (n bytes left); its length in *len, 0 when bad */
static uint32_t utf8_cp(const unsigned char *s, size_t n, size_t *len)
{
    *len = 0;
    if (!n) return 0;
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    int k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (!k || (size_t)k > n) return 0;
    uint32_t cp = s[0] & (0x7f >> k);
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    *len = (size_t)k;
    return cp;
}

/* The bytes token `s` stands for: byte-level BPE maps each character back
 * to its byte; SentencePiece writes spaces as U+2581 and bytes as <0xXX>. */
static size_t token_bytes(bool bpe, const char *s, size_t n, char *out)
{
    size_t o = 0;
    if (!bpe) {
        if (n == 6 && !strncmp(s, "<0x", 3) && s[5] == '>') {
            unsigned v;
            if (sscanf(s + 3, "%2x", &v) == 1) {
                out[0] = (char)v;
                return 1;
            }
        }
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && !memcmp(s + i, "\xe2\x96\x81", 3)) {
                out[o++] = ' ';
                i += 3;
            } else {
                out[o++] = s[i++];
            }
        }
        return o;
    }
    for (size_t i = 0; i < n;) {
        size_t l;
        uint32_t cp = utf8_cp((const unsigned char *)s + i, n - i, &l);
        int b = l ? byte_of_cp(cp) : -1;
        if (b < 0) {   /* not of the alphabet (an added token): as written */
            size_t k = l ? l : 1;
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            out[o++] = (char)b;
            i += l;
        }
    }
    return o;
}

static wk_status text_from_gguf(wk_llm *m, llm_text *tx)
{
    const wk_gguf *g = m->src.gguf;
    const wk_gguf_value *toks = wk_gguf_find(g, "tokenizer.ggml.tokens");
    const wk_gguf_value *types = wk_gguf_find(g, "tokenizer.ggml.token_type");
    const char *model = NULL;
    const wk_gguf_value *mv = wk_gguf_find(g, "tokenizer.ggml.model");
    if (mv) model = wk_gguf_value_str(mv, NULL);
    if (!toks || wk_gguf_array_type(toks) != WK_GGUF_STRING) return WK_OK;   /* no vocabulary: ids only */
    const uint64_t n = wk_gguf_array_len(toks);
    const int64_t V = m->cfg.info.n_vocab;
    const bool bpe = model && !strcmp(model, "gpt2");
    uint64_t total = 0;
    for (uint64_t i = 0; i < n && (int64_t)i < V; i++) {
        size_t l = 0;
        wk_gguf_array_str(toks, i, &l);
        total += l;
    }
    tx->bytes = malloc(total + 1);
    tx->off = calloc((size_t)V + 1, sizeof *tx->off);
    tx->special = calloc((size_t)V, 1);
    if (!tx->bytes || !tx->off || !tx->special) return wk_error_set(WK_ERR_MEMORY, "out of memory for the vocabulary");
    uint64_t o = 0;
    for (int64_t i = 0; i < V; i++) {
        tx->off[i] = o;
        if ((uint64_t)i >= n) continue;
        size_t l = 0;
        const char *s = wk_gguf_array_str(toks, (uint64_t)i, &l);
        int64_t type = 1;
        if (types) wk_gguf_array_int(types, (uint64_t)i, &type);
        if (type == 3 || type == 5) {   /* control, unused: no text */
            tx->special[i] = 1;
            continue;
        }
        if (s) o += type == 4 ? (memcpy(tx->bytes + o, s, l), l) : token_bytes(bpe, s, l, tx->bytes + o);
    }
    tx->off[V] = o;
    return WK_OK;
}

static void add_eog(wk_llm *m, int64_t id)
{
    wk_llm_info *in = &m->cfg.info;
    if (id < 0 || id >= in->n_vocab) return;
    for (int i = 0; i < in->n_eog; i++)
        if (in->eog_ids[i] == id) return;
    if (in->n_eog < (int)(sizeof in->eog_ids / sizeof in->eog_ids[0])) in->eog_ids[in->n_eog++] = (int32_t)id;
}

/* eos_token_id of a HF json: a number or a list of them */
static void eog_json(wk_llm *m, const wk_json *j)
{
    const wk_json *e = wk_json_get(j, "eos_token_id");
    int64_t v;
    if (wk_json_int(e, &v)) add_eog(m, v);
    for (size_t i = 0; wk_json_kind(e) == WK_JSON_ARRAY && i < wk_json_count(e); i++)
        if (wk_json_int(wk_json_item(e, i), &v)) add_eog(m, v);
}

static char *read_small_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && n < (1l << 24) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = 0;
            }
        }
    }
    fclose(f);
    return buf;
}

wk_status llm_text_init(wk_llm *m)
{
    llm_text *tx = calloc(1, sizeof *tx);
    if (!tx) return wk_error_set(WK_ERR_MEMORY, "out of memory");
    m->text.tok = tx;
    wk_llm_info *in = &m->cfg.info;
    const char *tmpl = NULL;
    if (m->src.gguf) {
        const wk_gguf *g = m->src.gguf;
        const wk_gguf_value *v;
        int64_t id;
        bool b;
        if ((v = wk_gguf_find(g, "tokenizer.ggml.bos_token_id")) && wk_gguf_value_int(v, &id) && id >= 0 &&
            id < in->n_vocab)
            in->bos_id = (int32_t)id;
        const char *tm = (v = wk_gguf_find(g, "tokenizer.ggml.model")) ? wk_gguf_value_str(v, NULL) : NULL;
        in->add_bos = in->bos_id >= 0 && !(tm && !strcmp(tm, "gpt2"));   /* llama.cpp's default per model */
        if ((v = wk_gguf_find(g, "tokenizer.ggml.add_bos_token")) && wk_gguf_value_bool(v, &b)) in->add_bos = b && in->bos_id >= 0;
        const char *keys[] = { "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id" };
        for (size_t i = 0; i < 3; i++)
            if ((v = wk_gguf_find(g, keys[i])) && wk_gguf_value_int(v, &id)) add_eog(m, id);
        if ((v = wk_gguf_find(g, "tokenizer.chat_template"))) tmpl = wk_gguf_value_str(v, NULL);
        wk_status st = text_from_gguf(m, tx);
        if (st) return st;
        /* the end tokens llama.cpp also stops on, by their text */
        const wk_gguf_value *toks = wk_gguf_find(g, "tokenizer.ggml.tokens");
        static const char *const eog_text[] = { "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>",
                                                "<|endoftext|>", "<|end_of_text|>", "<|end|>" };
        for (uint64_t i = 0; toks && i < wk_gguf_array_len(toks) && (int64_t)i < in->n_vocab; i++) {
            const char *s = wk_gguf_array_str(toks, i, NULL);
            if (!s || s[0] != '<') continue;
            for (size_t k = 0; k < sizeof eog_text / sizeof eog_text[0]; k++)
                if (!strcmp(s, eog_text[k])) add_eog(m, (int64_t)i);
        }
    } else {
        int64_t id;
        if (wk_json_int(wk_json_get(m->src.config, "bos_token_id"), &id) && id >= 0 && id < in->n_vocab) in->bos_id = (int32_t)id;
        in->add_bos = in->bos_id >= 0 && in->arch != WK_LLM_QWEN2 && in->arch != WK_LLM_QWEN3;
        eog_json(m, m->src.config);
        char path[4096];
        snprintf(path, sizeof path, "%s/generation_config.json", m->src.dir);
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            wk_json *gc = wk_json_parse_file(path, WK_JSON_ALLOW_NAN);
            if (gc) eog_json(m, gc);
            wk_json_free(gc);
            wk_clear_error();
        }
        if (m->src.tokcfg) {
            /* a string, or a list of named templates (transformers takes "default") */
            const wk_json *ct = wk_json_get(m->src.tokcfg, "chat_template");
            tmpl = wk_json_string(ct, NULL);
            for (size_t i = 0; !tmpl && i < wk_json_count(ct) && wk_json_kind(ct) == WK_JSON_ARRAY; i++) {
                const char *name = wk_json_string(wk_json_get(wk_json_item(ct, i), "name"), NULL);
                if (name && !strcmp(name, "default")) tmpl = wk_json_string(wk_json_get(wk_json_item(ct, i), "template"), NULL);
            }
        }
        if (!tmpl) {
            snprintf(path, sizeof path, "%s/chat_template.jinja", m->src.dir);
            m->text.chat_template = read_small_file(path);
            tmpl = m->text.chat_template;
        }
    }
    /* the tokenizer */
    if (m->src.gguf) {
        tx->tok = wk_tokenizer_from_gguf(m->src.gguf);
    } else {
        char path[4096];
        snprintf(path, sizeof path, "%s/tokenizer.json", m->src.dir);
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            tx->tok = wk_tokenizer_from_json_file(path);
        } else {
            wk_clear_error();
            snprintf(tx->why, sizeof tx->why, "%s has no tokenizer.json", m->src.dir);
        }
    }
    if (tx->tok) {
        int32_t eog[16];
        int32_t k = wk_tokenizer_eog(tx->tok, eog, 16);
        for (int32_t i = 0; i < k && i < 16; i++) add_eog(m, eog[i]);
        if (in->bos_id < 0) in->bos_id = wk_tokenizer_bos(tx->tok);
        if (wk_tokenizer_n_tokens(tx->tok) > in->n_vocab)
            snprintf(tx->why, sizeof tx->why, "the tokenizer has %d tokens, the model %lld",
                     (int)wk_tokenizer_n_tokens(tx->tok), (long long)in->n_vocab);
    } else if (!tx->why[0]) {
        snprintf(tx->why, sizeof tx->why, "%s", wk_last_error());
    }
    if (tmpl && !m->text.chat_template) m->text.chat_template = strdup(tmpl);
    in->chat = wk_chat_format_detect(m->text.chat_template);
    m->text.default_system = wk_chat_default_system(in->chat, m->text.chat_template);
    in->default_system = m->text.default_system;
    llm_chat_init(m);
    return WK_OK;
}

void llm_text_free(wk_llm *m)
{
    llm_text *tx = m->text.tok;
    if (tx) {
        free(tx->bytes);
        free(tx->off);
        free(tx->special);
        wk_tokenizer_free(tx->tok);
        free(tx);
    }
    m->text.tok = NULL;
    llm_chat_free(m);
    free(m->text.chat_template);
    free(m->text.default_system);
}

const char *wk_llm_token_text(const wk_llm *m, int32_t id, size_t *len)
{
    if (len) *len = 0;
    if (!m || !m->text.tok || id < 0 || id >= m->cfg.info.n_vocab) return "";
    const llm_text *tx = m->text.tok;
    if (!tx->off) return "";
    if (len) *len = (size_t)(tx->off[id + 1] - tx->off[id]);
    return tx->bytes + tx->off[id];
}

bool wk_llm_is_eog(const wk_llm *m, int32_t id)
{
    if (!m) return false;
    for (int i = 0; i < m->cfg.info.n_eog; i++)
        if (m->cfg.info.eog_ids[i] == id) return true;
    return false;
}

wk_status wk_llm_tokenize(const wk_llm *m, const char *text, size_t len, bool add_bos, int32_t **ids, int64_t *n)
{
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!m || !ids || !n || (!text && len))
        return wk_error_set(WK_ERR_ARGUMENT, "wk_llm_tokenize: %s is NULL", !m ? "the model" : !text ? "the text" : "an output");
    const llm_text *tx = m->text.tok;
    if (!tx || !tx->tok || tx->why[0])
        return wk_error_set(WK_ERR_UNSUPPORTED, "%s has no usable tokenizer: %s", m->cfg.info.name,
                       tx && tx->why[0] ? tx->why : "none");
    unsigned flags = WK_TOK_PARSE_SPECIAL | (add_bos ? WK_TOK_ADD_SPECIAL : 0u);
    if (wk_tokenizer_encode(tx->tok, text ? text : "", len, flags, ids, n))
        return wk_error_set(wk_last_status(), "%s", wk_last_error());
    return WK_OK;
}

const wk_tokenizer *llm_text_tokenizer(const wk_llm *m)
{
    const llm_text *tx = m->text.tok;
    return tx && tx->tok && !tx->why[0] ? tx->tok : NULL;
}
