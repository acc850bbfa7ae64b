/* wick_tokenizer.h — tokenizers: byte-level BPE (GPT-2, Llama 3, Qwen 2/3,
 * SmolLM2) and SentencePiece-style BPE with byte fallback (Llama 2,
 * Mistral, Gemma), built from plain arrays, from a GGUF file's
 * tokenizer.ggml.* metadata or from a Hugging Face tokenizer.json. Encoding
 * and decoding give what Hugging Face's `tokenizers` gives for the same
 * tokenizer (tools/check_tokenizers.py compares them); decoding can stream.
 * The code lives in src/tokenizer/ and is written against the public
 * headers only. docs/tokenizers.md says what is supported.
 *
 * Conventions
 *   - Functions that make something return it, or NULL on error; functions
 *     that act return a wk_status.
 *   - Errors are reported through the library's one error state,
 *     wk_last_error() and wk_last_status() (thread-local). When a
 *     file-layer call fails (wk_gguf_open, wk_json_parse_file), the
 *     tokenizer's context is put in front of its message.
 *   - Text is bytes: encoding takes any bytes (invalid UTF-8 included, see
 *     wk_tokenizer_encode); decoding gives valid UTF-8 unless asked for the
 *     raw bytes.
 *   - Pre-tokenizer regexes run on PCRE2 (its 8-bit library,
 *     libpcre2-8.so.0), loaded at run time: building wick needs no PCRE2
 *     headers, and a tokenizer that needs a regex fails with a message
 *     saying so when the library is absent. Byte-level BPE needs it;
 *     SentencePiece-style tokenizers do not.
 *   - A tokenizer is immutable once made: several threads may encode and
 *     decode with one tokenizer at once.
 */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H

#include "wick.h"
#include "wick_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ------------------------------------------------------------------ */
/* building a tokenizer from plain arrays                              */

/* The tokenizer's model. */
typedef enum wk_tok_model {
    /* Byte-level BPE (GGUF "gpt2"): text is split by the pre-tokenizer,
     * every byte is mapped to one of 256 printable characters (GPT-2's
     * bytes_to_unicode) and the result is merged by the merges' ranks. */
    WK_TOK_MODEL_BYTE_BPE = 0,
    /* SentencePiece-style BPE (GGUF "llama"): spaces become U+2581 "▁",
     * characters are merged (by the merges' ranks when merges are given,
     * else by the score of the merged piece, higher first, leftmost on
     * ties), and a character with no token becomes byte tokens <0xNN>
     * (byte fallback), or the unknown token when there are none. */
    WK_TOK_MODEL_SPM,
    WK_TOK_MODEL_COUNT
} wk_tok_model;

/* Token types, numbered as GGUF's tokenizer.ggml.token_type. */
typedef enum wk_tok_type {
    WK_TOK_TYPE_UNDEFINED = 0,
    WK_TOK_TYPE_NORMAL = 1,
    WK_TOK_TYPE_UNKNOWN = 2,       /* the unknown token; split out of text like a special token */
    WK_TOK_TYPE_CONTROL = 3,       /* special tokens: <s>, <|im_start|>, ...                       */
    WK_TOK_TYPE_USER_DEFINED = 4,  /* added tokens that are not special: split out of text         */
    WK_TOK_TYPE_UNUSED = 5,
    WK_TOK_TYPE_BYTE = 6           /* <0xNN> byte-fallback tokens                                  */
} wk_tok_type;

/* Where a SentencePiece-style tokenizer puts its leading "▁". */
typedef enum wk_tok_prefix {
    WK_TOK_PREFIX_NONE = 0,   /* never (Gemma)                                          */
    WK_TOK_PREFIX_ALWAYS,     /* before every piece of text, the first and each one after
                                 an added token, even one that starts with a space
                                 (Llama 2, Mistral: GGUF add_space_prefix; Hugging Face's
                                 Prepend normalizer)                                      */
    WK_TOK_PREFIX_FIRST       /* before the text's first piece only, unless it starts with
                                 a space (Hugging Face's Metaspace, prepend_scheme first) */
} wk_tok_prefix;

/* Everything a tokenizer is made of. Arrays are copied; none is kept. */
typedef struct wk_tokenizer_spec {
    wk_tok_model model;
    int32_t n_tokens;
    /* The tokens' strings as the model stores them (byte-level BPE: in
     * GPT-2's printable mapping, "Ġthe"; SentencePiece: "▁the", "<0x0A>").
     * token_lens may be NULL (every string NUL-terminated). */
    const char *const *tokens;
    const size_t *token_lens;
    const float *scores;         /* may be NULL; SentencePiece without merges needs them */
    const int32_t *token_types;  /* wk_tok_type per token; NULL: all NORMAL              */
    /* Merges "left right" (GGUF's tokenizer.ggml.merges, Hugging Face's
     * model.merges), rank = index; both sides and their concatenation must
     * be tokens. n_merges 0: SentencePiece merges by scores. */
    int64_t n_merges;
    const char *const *merges;
    /* The pre-tokenizer, by GGUF's tokenizer.ggml.pre name: "gpt2" (and
     * "default"), "llama-bpe" (Llama 3), "qwen2", "smollm", "none"; NULL
     * is "default" for byte-level BPE and "none" for SentencePiece. Names
     * wick does not know are an error (WK_ERR_UNSUPPORTED). */
    const char *pre;
    /* Special ids, -1 when the file has none. */
    int32_t bos_id, eos_id, unk_id, pad_id;
    bool add_bos, add_eos;       /* put bos/eos around an encoding (WK_TOK_ADD_SPECIAL) */
    wk_tok_prefix prefix;        /* SentencePiece only                               */
    /* Byte-level BPE: a pre-token that is itself a token is not merged
     * (Llama 3; Hugging Face's ignore_merges). */
    bool ignore_merges;
} wk_tokenizer_spec;

/* A spec with every field at its default: ids -1, everything else 0. */
wk_tokenizer_spec wk_tokenizer_spec_default(void);

typedef struct wk_tokenizer wk_tokenizer;

/* Checks the spec (every token string, merge, id and type) and builds the
 * tokenizer: WK_ERR_ARGUMENT naming what is wrong. */
wk_tokenizer *wk_tokenizer_new(const wk_tokenizer_spec *spec);
/* From a GGUF file's tokenizer.ggml.* metadata (model "gpt2" or "llama";
 * others are WK_ERR_UNSUPPORTED naming the model). */
wk_tokenizer *wk_tokenizer_from_gguf(const wk_gguf *g);
wk_tokenizer *wk_tokenizer_from_gguf_file(const char *path);
/* From a parsed tokenizer.json (model BPE; normalizers NFC, Prepend,
 * Replace and Sequence; pre-tokenizers Split, ByteLevel, Digits,
 * Metaspace and Sequence; decoders ByteLevel, Replace, ByteFallback,
 * Fuse, Strip, Metaspace and Sequence; post-processors TemplateProcessing,
 * ByteLevel and Sequence). Anything else is WK_ERR_UNSUPPORTED naming it.
 * A tokenizer_config.json beside it is not read: add_bos and friends come
 * from the post-processor, as Hugging Face's Tokenizer does. */
wk_tokenizer *wk_tokenizer_from_json(const wk_json *root);
/* A tokenizer.json, or a folder holding one. */
wk_tokenizer *wk_tokenizer_from_json_file(const char *path);
void wk_tokenizer_free(wk_tokenizer *t);            /* NULL is fine */

/* ------------------------------------------------------------------ */
/* the vocabulary                                                      */

int32_t wk_tokenizer_n_tokens(const wk_tokenizer *t);
/* The token's string as stored (see wk_tokenizer_spec.tokens), NULL for
 * an id out of range. */
const char *wk_tokenizer_token(const wk_tokenizer *t, int32_t id, size_t *len);
/* The id of a stored string, -1 when there is none. */
int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *s, size_t len);
wk_tok_type wk_tokenizer_token_type(const wk_tokenizer *t, int32_t id);
/* Special tokens (CONTROL, UNKNOWN) are left out of decoding with
 * WK_TOK_SKIP_SPECIAL. */
bool wk_tokenizer_is_special(const wk_tokenizer *t, int32_t id);
int32_t wk_tokenizer_bos(const wk_tokenizer *t);    /* -1 when none */
int32_t wk_tokenizer_eos(const wk_tokenizer *t);
/* The end-of-generation tokens: eos, and <|eot_id|>, <|im_end|>,
 * <end_of_turn>, <|endoftext|>, <|end|>, <|eom_id|> where they are special
 * tokens. Returns how many (at most cap written to ids). */
int32_t wk_tokenizer_eog(const wk_tokenizer *t, int32_t *ids, int32_t cap);

/* ------------------------------------------------------------------ */
/* encoding                                                            */

/* Flags of wk_tokenizer_encode. */
#define WK_TOK_ADD_SPECIAL   1u  /* bos/eos as the file says (HF add_special_tokens=True) */
#define WK_TOK_PARSE_SPECIAL 2u  /* special tokens written in the text are split out as
                                    their ids (HF always does); without it only the added
                                    tokens that are not special are (user text)           */

/* Encodes len bytes of text: added tokens are split out first (the
 * leftmost, then the longest match), the pieces between them are
 * normalized, pre-tokenized and merged. Bytes that are not valid UTF-8
 * (each byte of a maximal ill-formed subsequence) are encoded as their
 * byte tokens, and the valid text around them as if they were not there
 * (no "▁" is added after one). *ids is malloc'd (free it); *n_ids its
 * length. */
wk_status wk_tokenizer_encode(const wk_tokenizer *t, const char *text, size_t len, unsigned flags,
                              int32_t **ids, int64_t *n_ids);

/* ------------------------------------------------------------------ */
/* decoding                                                            */

/* Flags of the decoders. */
#define WK_TOK_SKIP_SPECIAL  1u  /* leave special tokens out (HF skip_special_tokens)   */
#define WK_TOK_RAW           2u  /* the raw bytes: no U+FFFD for invalid UTF-8          */
#define WK_TOK_KEEP_SPACE    4u  /* SentencePiece: keep the space that the leading "▁"
                                    of the first token decodes to (HF strips it)        */

/* The text of n ids, NUL-terminated, malloc'd (free it). Without
 * WK_TOK_RAW it is valid UTF-8 and what Hugging Face's decode gives:
 * invalid UTF-8 becomes U+FFFD (each maximal ill-formed subsequence for
 * byte-level BPE; each byte of a run of byte tokens that is not valid
 * UTF-8 for SentencePiece, as its ByteFallback decoder does). An id out
 * of range is WK_ERR_INDEX. */
wk_status wk_tokenizer_decode(const wk_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags, char **text,
                              size_t *len);

/* Streaming decode: feed ids one at a time; each call gives the text that
 * is complete so far and was not given before. A character whose bytes
 * are split over several tokens comes out whole when its last byte
 * arrives; the text of all calls and of the final flush together equals
 * wk_tokenizer_decode of the same ids with the same flags. */
typedef struct wk_tok_stream wk_tok_stream;
wk_tok_stream *wk_tok_stream_new(const wk_tokenizer *t, unsigned flags);
/* *text (NUL-terminated, *len bytes, possibly 0) stays valid until the
 * next call on the stream. */
wk_status wk_tok_stream_push(wk_tok_stream *s, int32_t id, const char **text, size_t *len);
/* The end: what was held back (an incomplete character becomes U+FFFD
 * unless WK_TOK_RAW). The stream starts over afterwards. */
wk_status wk_tok_stream_flush(wk_tok_stream *s, const char **text, size_t *len);
void wk_tok_stream_free(wk_tok_stream *s);          /* NULL is fine */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_TOKENIZER_H */
