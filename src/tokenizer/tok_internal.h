/* tok_internal.h — what the files of src/tokenizer/ share: the layer's
 * error state, growable buffers, UTF-8 and NFC helpers (unicode.c), the
 * run-time-loaded PCRE2 regexes (regex.c), the tokenizer's internal form
 * (the pipeline a spec, a GGUF file or a tokenizer.json is turned into)
 * and the BPE merge loop (bpe.c). Written against the public API only
 * (tools/check-layers). */
#ifndef WICK_TOK_INTERNAL_H
#define WICK_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "wick.h"
#include "wick_ext.h"
#include "wick_formats.h"
#include "wick_tokenizer.h"

#define WK_TOK_API __attribute__((visibility("default")))

/* ---- growable buffers ------------------------------------------------ */

typedef struct tok_buf { char *p; size_t n, cap; } tok_buf;
bool tok_buf_reserve(tok_buf *b, size_t extra);          /* false: WK_ERR_MEMORY set */
bool tok_buf_put(tok_buf *b, const void *s, size_t n);
void tok_buf_free(tok_buf *b);

typedef struct tok_ids { int32_t *p; int64_t n, cap; } tok_ids;
bool tok_ids_push(tok_ids *v, int32_t id);

/* ---- UTF-8 and Unicode (unicode.c) ------------------------------------ */

/* The character at p[0..n): its length (1..4) and code point when it is
 * valid; otherwise minus the length of its maximal ill-formed subsequence
 * (Unicode's "maximal subpart", as Python and Rust replace them), with
 * *cut set when those bytes are a valid start cut by the end of the
 * buffer (more bytes could complete it). n must be > 0. */
int tok_utf8_next(const unsigned char *p, size_t n, uint32_t *cp, bool *cut);
int tok_utf8_put(uint32_t cp, char *out);                 /* 1..4 bytes */
/* Unicode White_Space (what Oniguruma's \s and Rust's is_whitespace take). */
bool tok_is_space(uint32_t cp);
/* Appends the NFC form of valid UTF-8 s[0..n) to out. */
bool tok_nfc(const char *s, size_t n, tok_buf *out);
const char *tok_unicode_version(void);
/* GPT-2's bytes_to_unicode: the code point a byte maps to; and back
 * (-1 for a code point that is no byte's). */
uint32_t tok_byte_to_cp(unsigned char b);
int tok_cp_to_byte(uint32_t cp);

/* ---- regexes (regex.c): PCRE2 through dlopen -------------------------- */

typedef struct tok_regex tok_regex;
/* Compiles an Oniguruma-style pattern (what tokenizer.json holds) with
 * UTF and UCP, \s and \S rewritten to Unicode White_Space as Oniguruma
 * has it, and JIT-compiles it. NULL with the error set (PCRE2 missing:
 * WK_ERR_UNSUPPORTED saying what to install). */
tok_regex *tok_regex_new(const char *pattern, size_t len);
/* A literal string to split on. */
tok_regex *tok_regex_literal(const char *s, size_t len);
void tok_regex_free(tok_regex *re);
/* Per-call matching state (match data, a JIT stack when one is needed). */
typedef struct tok_match tok_match;
tok_match *tok_match_new(void);
void tok_match_free(tok_match *m);
/* The next match in s[0..n) at or after start (s valid UTF-8): 1 and
 * [*ms, *me); 0 when none; -1 on error (set). */
int tok_regex_find(const tok_regex *re, tok_match *m, const char *s, size_t n, size_t start, size_t *ms,
                   size_t *me);

/* ---- the tokenizer ------------------------------------------------------ */

/* Normalizer steps, applied in order to each piece of text between added
 * tokens. */
typedef enum tok_norm_kind {
    TOK_NORM_NFC,
    TOK_NORM_PREPEND,       /* str before a non-empty piece (HF Prepend)                  */
    TOK_NORM_REPLACE,       /* every str -> str2 (HF Replace with a String pattern)       */
    TOK_NORM_META_ALWAYS,   /* str before a piece that does not start with it (Metaspace) */
    TOK_NORM_META_FIRST     /* the same, only for the piece at offset 0 of the text       */
} tok_norm_kind;
typedef struct tok_norm { tok_norm_kind kind; char *str, *str2; size_t len, len2; } tok_norm;

typedef enum tok_split_behavior {
    TOK_SPLIT_REMOVED, TOK_SPLIT_ISOLATED, TOK_SPLIT_MERGED_PREV, TOK_SPLIT_MERGED_NEXT, TOK_SPLIT_CONTIGUOUS
} tok_split_behavior;
/* Pre-tokenizer steps: each splits every piece by a regex. */
typedef struct tok_step { tok_regex *re; tok_split_behavior behavior; bool invert; } tok_step;

typedef struct tok_added {
    int32_t id;
    bool special, lstrip, rstrip;
} tok_added;

typedef enum tok_strip_kind { TOK_STRIP_NONE, TOK_STRIP_FUSED, TOK_STRIP_FIRST_TOKEN } tok_strip_kind;
typedef enum tok_dec_kind {
    TOK_DEC_BYTE_LEVEL,   /* GPT-2's mapping back to bytes                            */
    TOK_DEC_PIECES,       /* SentencePiece-style: per-token replaces, byte fallback   */
    TOK_DEC_JOIN          /* no decoder: tokens joined with spaces (HF's default)     */
} tok_dec_kind;

#define TOK_MAX_NORM 8
#define TOK_MAX_STEPS 8
#define TOK_MAX_AFFIX 8

struct wk_tokenizer {
    wk_tok_model model;
    int32_t n;                 /* tokens                                        */
    char *tpool;               /* every stored string, NUL-terminated           */
    char **text;               /* into tpool                                    */
    uint32_t *len;
    float *score;              /* NULL when none                                */
    uint8_t *type;             /* wk_tok_type                                   */
    uint8_t *special;          /* skipped by WK_TOK_SKIP_SPECIAL                */
    /* decoded bytes of every token (byte-level: mapped back; pieces: after
     * the per-token replaces), in one pool */
    char *dec_pool;
    uint64_t *dec_off;         /* n + 1 offsets                                 */
    int16_t *dec_byte;         /* pieces: the byte of a <0xNN> token, else -1   */

    /* string -> id */
    uint32_t *vslot;           /* id + 1; 0 empty                               */
    uint64_t vcap;
    /* (left, right) -> rank, new id */
    uint64_t *mkey;            /* left << 32 | right; UINT64_MAX empty          */
    uint32_t *mrank;
    int32_t *mnew;
    uint64_t mcap;
    int64_t n_merges;
    bool use_scores;           /* SentencePiece without merges                  */

    int32_t byte_tok[256];     /* the token of each byte (mapped char / <0xNN>), -1 */
    bool byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id, bos_id, eos_id, pad_id;

    /* added tokens, matched in the raw text leftmost-longest */
    tok_added *added;          /* sorted by the first byte of the token's text  */
    int32_t n_added;
    int32_t added_bucket[257]; /* added[added_bucket[b] .. added_bucket[b+1]) start with byte b */
    int32_t *added_by_id;      /* id -> index into added, or -1 (n entries)     */

    tok_norm norm[TOK_MAX_NORM];
    int n_norm;
    tok_step step[TOK_MAX_STEPS];
    int n_steps;

    /* decoding */
    tok_dec_kind dec;
    bool dec_byte_fallback;
    tok_strip_kind strip;
    int strip_n;               /* TOK_STRIP_FUSED: leading spaces to drop     */
    char *meta;                /* TOK_STRIP_FIRST_TOKEN: the replacement dropped in the first token */
    size_t meta_len;
    /* per-token replaces of the pieces decoder (from, to), applied in order */
    char *drep_from[TOK_MAX_NORM], *drep_to[TOK_MAX_NORM];
    size_t drep_from_len[TOK_MAX_NORM], drep_to_len[TOK_MAX_NORM];
    int n_drep;

    /* ids put around an encoding by WK_TOK_ADD_SPECIAL */
    int32_t prefix_ids[TOK_MAX_AFFIX], suffix_ids[TOK_MAX_AFFIX];
    int n_prefix, n_suffix;
};

/* Builds the vocabulary, merges, added tokens (from the types), byte
 * tokens and decoder pieces from a spec; the normalizer, pre-tokenizer,
 * decoder and affixes come from the spec's names unless the caller set
 * them already in *t (the tokenizer.json path does). On error t is freed. */
wk_tokenizer *tok_build(wk_tokenizer *t, const wk_tokenizer_spec *spec, bool pipeline_set);
/* The standard pipeline of a GGUF pre-tokenizer name into t. */
wk_status tok_set_pre(wk_tokenizer *t, const char *pre);
wk_status tok_add_norm(wk_tokenizer *t, tok_norm_kind kind, const char *s, size_t len, const char *s2, size_t len2);
wk_status tok_add_step(wk_tokenizer *t, const char *pattern, size_t len, bool literal, tok_split_behavior b,
                       bool invert);
/* Marks ids as added tokens (after tok_build), with their flags. */
wk_status tok_set_added(wk_tokenizer *t, const tok_added *added, int32_t n);
int32_t tok_find(const wk_tokenizer *t, const char *s, size_t len);

/* ---- BPE (bpe.c) --------------------------------------------------------- */

typedef struct tok_bpe_scratch tok_bpe_scratch;
tok_bpe_scratch *tok_bpe_scratch_new(void);
void tok_bpe_scratch_free(tok_bpe_scratch *s);
/* Merges one pre-token (valid UTF-8 for SentencePiece, any bytes for
 * byte-level BPE) and appends its ids. */
bool tok_bpe(const wk_tokenizer *t, tok_bpe_scratch *s, const char *p, size_t n, tok_ids *out);

#endif /* WICK_TOK_INTERNAL_H */
