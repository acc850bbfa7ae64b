/* wick_llm.h — transformer language models on any wick device: load a GGUF
 * file or a safetensors model (with its config.json), run tokens through
 * it with a KV cache, sample, write chats with the model's own Jinja chat
 * template (wick runs the template language: the text equals Hugging
 * Face's apply_chat_template), and generate text with a callback per
 * token. docs/models.md has an example and the details.
 *
 * Architectures: llama (Llama 2, Llama 3.x with its rope scaling, Mistral,
 * SmolLM2, TinyLlama), qwen2 (q/k/v biases), qwen3 (q/k norms) and gemma3
 * (sliding-window and global layers, q/k norms, pre- and post-norms, gelu
 * MLP, scaled and tied embeddings). Weights f32, f16, bf16 or any GGUF
 * block type; activations and the KV cache f32 or bf16.
 *
 * Errors, as in wick_formats.h: NULL or a status, and the message in
 * wk_last_error().
 */
#ifndef WICK_LLM_H
#define WICK_LLM_H

#include "wick.h"
#include "wick_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ------------------------------------------------------------------ */
/* models                                                              */

typedef enum wk_llm_arch {
    WK_LLM_LLAMA = 0,   /* Llama 2/3.x, Mistral, SmolLM2, TinyLlama          */
    WK_LLM_QWEN2,       /* q, k, v biases                                     */
    WK_LLM_QWEN3,       /* q and k rms-normed per head                        */
    WK_LLM_GEMMA3,      /* see above                                          */
    WK_LLM_PHI3,        /* Phi-3: fused q/k/v and gate/up, LongRoPE           */
    WK_LLM_MIXTRAL,     /* llama's attention, a mixture of experts            */
    WK_LLM_QWEN2MOE,    /* qwen2's attention, experts and a gated shared one  */
    WK_LLM_QWEN3MOE,    /* qwen3's attention, experts                         */
    WK_LLM_OLMOE,       /* q/k normed over all heads, experts                 */
    WK_LLM_ARCH_COUNT
} wk_llm_arch;
const char *wk_llm_arch_name(wk_llm_arch a);      /* "llama", ...; "?" */

typedef enum wk_chat_format {
    WK_CHAT_NONE = 0,   /* no template known: prompts go in as they are       */
    WK_CHAT_CHATML,     /* <|im_start|>role\n...<|im_end|>\n (SmolLM2, Qwen)  */
    WK_CHAT_LLAMA3,     /* <|start_header_id|>role<|end_header_id|>\n\n...    */
    WK_CHAT_GEMMA,      /* <start_of_turn>user\n...<end_of_turn>\n            */
    WK_CHAT_FORMAT_COUNT
} wk_chat_format;
const char *wk_chat_format_name(wk_chat_format f); /* "chatml", ...; "?" */

typedef struct wk_llm_options {
    /* WK_F32 or WK_BF16: the activations and the KV cache. A zeroed
     * struct (WK_U8) means WK_F32. */
    wk_dtype act_dtype;
    /* Positions the KV cache holds (allocated once at load). 0: the
     * model's own context length, at most 4096. More than the model's
     * length is an error. */
    int64_t context;
    /* Tokens per prefill step (0: 512). */
    int64_t prefill_chunk;
    /* Block-quantized weights decoded to act_dtype at load (then
     * multiplied by wk_matmul) instead of multiplied by wk_qmatmul. */
    bool dequantize;
    wk_progress_mode progress;   /* the loading bar */
    /* Tensor parallel (docs/tensor-parallel.md): the model is this rank's
     * share of a model split over the communicator's ranks (load it once
     * per rank, each on the comm's device, and run every call on every
     * rank, each from its own thread; they exchange partial results
     * through the comm). NULL or a comm of one rank: the whole model.
     * With two or more ranks the load is itself collective: every rank
     * calls it, and if any rank fails, every rank gets NULL (the failing
     * ones their own error, the others one that says how many failed),
     * so that no rank is left waiting for another in a forward pass. */
    struct wk_comm *comm;
} wk_llm_options;

/* What a loaded model is. Lives as long as the model. */
typedef struct wk_llm_info {
    wk_llm_arch arch;
    char name[128];            /* general.name, or the file's name           */
    int64_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int64_t train_context;     /* the model's context length                 */
    int64_t context;           /* the KV cache's (wk_llm_options.context)    */
    double rope_base;          /* global layers                              */
    double rope_base_local;    /* gemma3's sliding layers                    */
    double norm_eps;
    int64_t sliding_window;    /* 0: none                                    */
    bool rope_interleaved;     /* GGUF llama: rotates pairs (2i, 2i+1)       */
    wk_dtype weight_dtype;     /* of the largest matrices, as stored         */
    wk_dtype act_dtype;
    uint64_t weight_bytes;     /* on the device                              */
    int32_t bos_id;            /* -1: none */
    bool add_bos;              /* the tokenizer puts BOS before a prompt     */
    int n_eog;                 /* end-of-generation tokens                   */
    int32_t eog_ids[8];
    wk_chat_format chat;       /* the template's family (stop tokens; the fallback format) */
    const char *default_system;  /* ChatML templates that add one; or NULL  */
    /* The file's Jinja chat template (tokenizer.chat_template, or
     * tokenizer_config.json's chat_template / chat_template.jinja); NULL
     * when it has none. chat_template_error: NULL when wick renders it
     * (wk_llm_chat_apply), else why not (then the fixed format `chat`
     * stands in, when it is not WK_CHAT_NONE). */
    const char *chat_template;
    const char *chat_template_error;
    int tp_rank, tp_size;      /* tensor parallel: this share of how many (0 of 1) */
} wk_llm_info;

typedef struct wk_llm wk_llm;
/* A GGUF file, a .safetensors file or index (config.json beside it), or a
 * folder holding a safetensors model. opts NULL: the defaults. */
wk_llm *wk_llm_load(const char *path, wk_device *dev, const wk_llm_options *opts);
void wk_llm_free(wk_llm *m);                       /* NULL is fine */
const wk_llm_info *wk_llm_get_info(const wk_llm *m);
wk_device *wk_llm_device(const wk_llm *m);

/* Positions filled in the KV cache (the next token's position). */
int64_t wk_llm_pos(const wk_llm *m);
/* Forget positions pos and later (0: empty the cache). A model whose
 * sliding-window layers keep only their window and one prefill chunk
 * (Gemma 3's local layers, Mistral's: when that is less than the context)
 * goes back to 0 instead when the positions pos's window needs are no
 * longer held: wk_llm_pos says where the cache stands after a rewind. */
wk_status wk_llm_rewind(wk_llm *m, int64_t pos);
/* Run n tokens at positions pos .. pos + n - 1 (prefill steps of
 * prefill_chunk tokens) and keep them in the cache. logits: NULL, or
 * n_vocab f32 values for the last token, or n x n_vocab when all_logits.
 * A token id out of range is WK_ERR_INDEX; running past the context is
 * WK_ERR_ARGUMENT saying so, with the cache unchanged. */
wk_status wk_llm_eval(wk_llm *m, const int32_t *tokens, int64_t n, bool all_logits, float *logits);

/* ------------------------------------------------------------------ */
/* sampling                                                            */

typedef struct wk_sampling {
    double temperature;      /* <= 0: greedy (argmax after the penalty)      */
    int64_t top_k;           /* keep the k most likely; 0: off               */
    double top_p;            /* keep the smallest set of mass >= p; >= 1: off */
    double min_p;            /* drop p < min_p * p_max; 0: off               */
    double repeat_penalty;   /* the last repeat_last_n tokens' logits: / it
                                when > 0, * it when < 0; 1: off              */
    int64_t repeat_last_n;   /* 0: 64                                        */
    uint64_t seed;           /* the same seed, the same choices              */
    /* OpenAI's penalties over the tokens generated so far (those given to
     * wk_sampler_accept_output): logit -= frequency_penalty * count +
     * presence_penalty * (count > 0); 0: off; each in [-2, 2]          */
    double presence_penalty, frequency_penalty;
} wk_sampling;
/* temperature 0.7, top_k 40, top_p 0.95, min_p 0.05, no penalty, seed 0 */
wk_sampling wk_sampling_default(void);
/* greedy, every filter off */
wk_sampling wk_sampling_greedy(void);

/* Order: repetition penalty, presence and frequency penalties, then
 * (temperature > 0) logits / temperature,
 * softmax, top-k, top-p, min-p, renormalise, one draw from a seeded
 * generator (xoshiro256**, one 53-bit uniform per draw). */
typedef struct wk_sampler wk_sampler;
wk_sampler *wk_sampler_new(const wk_sampling *s, int64_t n_vocab);
void wk_sampler_free(wk_sampler *s);
/* A token from n_vocab logits (left as they are); -1 on error. */
int32_t wk_sampler_sample(wk_sampler *s, const float *logits);
/* Record a token (prompt or generated) for the repetition penalty. */
void wk_sampler_accept(wk_sampler *s, int32_t token);
/* Record a generated token: the repetition penalty's history and the
 * counts of the presence and frequency penalties. */
void wk_sampler_accept_output(wk_sampler *s, int32_t token);
/* The log-probability of token under softmax(logits) (the model's own
 * distribution: no penalty, temperature or filter), and the top_n most
 * likely tokens with theirs (largest first, the lower id first among
 * equals; top_ids / top_lp of top_n entries, may be NULL when top_n is
 * 0). Returns the token's log-probability (-inf for a NaN logit). */
double wk_logprobs(const float *logits, int64_t n_vocab, int32_t token, int top_n, int32_t *top_ids, float *top_lp);
void wk_sampler_reset(wk_sampler *s);               /* history and seed */

/* ------------------------------------------------------------------ */
/* constrained output: JSON schemas (docs/grammar.md)                  */

/* A grammar compiled from a JSON schema: the texts it accepts are JSON
 * values valid under the schema (a subset of them: properties in the
 * schema's order, bounded whitespace and number lengths). Immutable and
 * shared by reference count; several threads may use one at once. */
typedef struct wk_grammar wk_grammar;
/* From a schema's JSON text (a JSON object or true). NULL + error:
 * WK_ERR_ARGUMENT for text that is not JSON, a keyword wick does not
 * enforce (named with its place, "#/properties/age: 'multipleOf' is not
 * supported"), a $ref it cannot resolve, or a schema that no value
 * satisfies; WK_ERR_MEMORY. */
wk_grammar *wk_grammar_from_json_schema(const char *schema, size_t len);
/* The same from a parsed schema (its "$ref"s resolved inside it). */
wk_grammar *wk_grammar_from_json(const wk_json *schema);
/* OpenAI's JSON mode: any JSON object (the schema {"type": "object"}). */
wk_grammar *wk_grammar_json_object(void);
wk_grammar *wk_grammar_retain(wk_grammar *g);     /* returns g            */
void wk_grammar_release(wk_grammar *g);           /* NULL is fine         */

/* A vocabulary's tokens as bytes (the text each one adds to the output),
 * sorted into tries for token masks. Built once per model (about 0.1 s
 * for 262k tokens), read-only after, shared by every state. */
typedef struct wk_grammar_vocab wk_grammar_vocab;
/* The model's tokens (its tokenizer's bytes; control tokens have none)
 * and end-of-generation tokens. */
wk_grammar_vocab *wk_grammar_vocab_new(const wk_llm *m);
/* n tokens of lens[i] bytes each (0: a token with no text, never
 * allowed), and the end tokens eog[0 .. n_eog). */
wk_grammar_vocab *wk_grammar_vocab_from_tokens(int32_t n, const char *const *bytes, const size_t *lens,
                                               const int32_t *eog, int n_eog);
void wk_grammar_vocab_free(wk_grammar_vocab *v);   /* NULL is fine */
int32_t wk_grammar_vocab_size(const wk_grammar_vocab *v);

/* Where one output stands in a grammar: the text so far is a prefix of
 * an accepted text. One per generation; not shared between threads. */
typedef struct wk_grammar_state wk_grammar_state;
wk_grammar_state *wk_grammar_state_new(wk_grammar *g);   /* holds a reference to g */
void wk_grammar_state_free(wk_grammar_state *s);         /* NULL is fine */
/* n bytes of output. WK_ERR_ARGUMENT when they do not continue a prefix
 * of an accepted text (the state is then unchanged). */
wk_status wk_grammar_state_accept(wk_grammar_state *s, const char *bytes, size_t n);
/* A token's bytes; an end token when the text is complete (it ends the
 * output: nothing is allowed after it). WK_ERR_ARGUMENT otherwise. */
wk_status wk_grammar_state_accept_token(wk_grammar_state *s, const wk_grammar_vocab *v, int32_t token);
/* The text so far is a whole accepted value (an end token may come). */
bool wk_grammar_state_complete(const wk_grammar_state *s);
/* It is complete and no byte can follow (or an end token was taken):
 * the output is over. */
bool wk_grammar_state_finished(const wk_grammar_state *s);
/* Which tokens keep the text a prefix of an accepted one: bit t % 32 of
 * allowed[t / 32] ((n + 31) / 32 words for a vocabulary of n tokens);
 * end tokens only when the text is complete. Returns how many tokens are
 * allowed, or -1 + error. */
int64_t wk_grammar_state_mask(wk_grammar_state *s, const wk_grammar_vocab *v, uint32_t *allowed);

/* ------------------------------------------------------------------ */
/* batches over a paged KV cache (the batched engine's forward pass)    */

/* A paged KV cache for a model: per layer, K and V pools of n_blocks
 * blocks of block_size positions ([n_blocks, block_size, n_head_kv,
 * head_dim] in the model's activation dtype, on its device). Which
 * block holds which positions of which sequence is the caller's (a block
 * table per batch): wick_engine.h's engine keeps it. */
typedef struct wk_llm_kv wk_llm_kv;
wk_llm_kv *wk_llm_kv_new(wk_llm *m, int64_t n_blocks, int64_t block_size);
void wk_llm_kv_free(wk_llm_kv *kv);               /* NULL is fine */
int64_t wk_llm_kv_blocks(const wk_llm_kv *kv);
int64_t wk_llm_kv_block_size(const wk_llm_kv *kv);
/* Device bytes of one block of block_size positions over every layer. */
uint64_t wk_llm_kv_block_bytes(const wk_llm *m, int64_t block_size);

/* A flat batch of tokens from many sequences, at any positions: decode
 * tokens and prefill chunks together. Token i of sequence seq[i] sits at
 * position pos[i]; its K and V go to row pos[i] % block_size of block
 * block_table[seq[i] * max_blocks + pos[i] / block_size], and its
 * attention reads that sequence's positions 0 .. pos[i] (its window's on
 * sliding layers) through the table: positions before it must have been
 * written by an earlier batch or by an earlier token of this one. Rows
 * out[0 .. n_out) name the tokens whose next-token logits come back. */
typedef struct wk_llm_batch {
    int64_t n_tokens;
    const int32_t *tokens;       /* [n_tokens]                               */
    const int32_t *pos;          /* [n_tokens]                               */
    const int32_t *seq;          /* [n_tokens]: rows of block_table          */
    int64_t n_seqs, max_blocks;
    const int32_t *block_table;  /* [n_seqs, max_blocks]                     */
    int64_t n_out;
    const int32_t *out;          /* [n_out]: indices of tokens               */
} wk_llm_batch;

/* One forward pass of a batch: logits (f32 [n_out, n_vocab], NULL: not
 * wanted) and/or argmax ([n_out], the first index of each row's largest
 * logit, taken on the device; NULL: not wanted). Ids out of range
 * (tokens, sequences, positions past the table, blocks past the pool)
 * are WK_ERR_INDEX / WK_ERR_ARGUMENT before anything runs. Tensor-parallel
 * models are not supported yet (WK_ERR_UNSUPPORTED). */
wk_status wk_llm_eval_batch(wk_llm *m, wk_llm_kv *kv, const wk_llm_batch *b, float *logits, int32_t *argmax);

/* ------------------------------------------------------------------ */
/* chat                                                                */

typedef struct wk_chat_message {
    const char *role;        /* "system", "user", "assistant"               */
    const char *content;
} wk_chat_message;
/* The family a chat template (Jinja text from the file) belongs to, told
 * by its markers; NONE when it is none of the known ones. */
wk_chat_format wk_chat_format_detect(const char *chat_template);
/* The conversation as the model's template writes it: the file's own
 * Jinja template run by wick's interpreter (the text Hugging Face's
 * apply_chat_template(messages, tokenize=False, add_generation_prompt)
 * gives; bos_token and eos_token are the vocabulary's), BOS text included
 * where the template writes it. Without a template wick can run
 * (info.chat_template_error says why), the fixed format of the family
 * (wk_chat_apply) stands in; with neither, the messages' contents joined
 * by newlines. A template that refuses the conversation through
 * raise_exception is an error (WK_ERR_ARGUMENT, its message); one that
 * fails on it otherwise falls back to the fixed format when the family is
 * known (wk_last_error() then keeps the reason), else is an error.
 * WICK_CHAT_DATE sets the template variable date_string (Llama 3.x's
 * "Today Date"). malloc'd; NULL + error. */
char *wk_llm_chat_apply(const wk_llm *m, const wk_chat_message *msgs, int n, bool add_generation_prompt);
/* True when wk_llm_chat_apply writes a chat format (the template's or a
 * fixed one), whose text carries BOS where the model wants it (so tokenize
 * it with add_bos false); false: contents joined as plain text. */
bool wk_llm_chat_formatted(const wk_llm *m);

/* Chat templates on their own: wick's interpreter of the Jinja subset
 * chat templates use (jinja2 as transformers sets it up: trim_blocks,
 * lstrip_blocks, loop controls, namespace(), macros, Python's string
 * methods, raise_exception, strftime_now, tojson as transformers defines
 * it). Templates are untrusted: recursion, steps and output are bounded
 * and every failure is an error naming the line and the construct. */
typedef struct wk_chat_template wk_chat_template;
/* Parse a template. NULL + error (WK_ERR_UNSUPPORTED: what and where). */
wk_chat_template *wk_chat_template_parse(const char *text, size_t len);
void wk_chat_template_free(wk_chat_template *t);   /* NULL is fine */
typedef struct wk_chat_template_opts {
    bool add_generation_prompt;
    /* special tokens' text; NULL: the variable is left undefined */
    const char *bos_token, *eos_token, *unk_token, *pad_token;
    /* strftime_now's clock, seconds since 1970, local time (0: now) */
    int64_t now;
    /* NULL, or a JSON object whose members are more variables or replace
     * these (messages with any fields, tools, documents, enable_thinking,
     * date_string, ...); transformers' tools=None and documents=None
     * otherwise */
    const wk_json *vars;
    size_t max_output;      /* bytes of output; 0: 16 MiB */
    int64_t max_steps;      /* 0: 10 million */
    size_t max_memory;      /* bytes the values made may take; 0: 256 MiB */
} wk_chat_template_opts;
/* The messages through the template (opts NULL: defaults). malloc'd;
 * NULL + error: WK_ERR_ARGUMENT when the template raised an exception
 * (raise_exception(msg): the conversation is refused, msg in the error),
 * WK_ERR_UNSUPPORTED when it failed otherwise or reached a limit. */
char *wk_chat_template_render(const wk_chat_template *t, const wk_chat_message *msgs, int n,
                              const wk_chat_template_opts *opts);
/* The system text a template writes when the conversation has none
 * (what wk_llm_get_info's default_system holds): a ChatML template's
 * literal default system message; Llama 3.1+'s "Cutting Knowledge Date:
 * December 2023\nToday Date: <date>\n\n" preamble, the date 3.1's fixed
 * "26 Jul 2024" or, for templates that ask for it (Llama 3.2), today's,
 * "%d %b %Y"; WICK_CHAT_DATE overrides it. malloc'd; NULL when none. */
char *wk_chat_default_system(wk_chat_format f, const char *chat_template);
/* The same for a format given by hand; default_system: ChatML's system
 * text when the conversation has none (NULL: none). */
char *wk_chat_apply(wk_chat_format f, const char *default_system, const wk_chat_message *msgs, int n,
                    bool add_generation_prompt);

/* ------------------------------------------------------------------ */
/* text and generation                                                 */

/* Text to token ids with the model's tokenizer (special tokens written
 * in the text are recognised; add_bos: as the model says when true).
 * *ids is malloc'd. WK_ERR_UNSUPPORTED when the model has no tokenizer. */
wk_status wk_llm_tokenize(const wk_llm *m, const char *text, size_t len, bool add_bos, int32_t **ids, int64_t *n);
/* The bytes of one token of a GGUF vocabulary (no streaming state; len 0
 * for control tokens, and for every token of a safetensors model, whose
 * text comes from its tokenizer's decoder). */
const char *wk_llm_token_text(const wk_llm *m, int32_t id, size_t *len);
bool wk_llm_is_eog(const wk_llm *m, int32_t id);

/* The text of generated tokens as it can be passed on: each token's
 * bytes (the tokenizer's streaming decoder), held back while they may
 * begin one of the stop strings or end inside a UTF-8 character, and cut
 * where a stop string begins (*stopped: the text before it is what push
 * gives; nothing after it is ever given). text stays valid until the next
 * call. flush: what is held back at the end. */
typedef struct wk_text_out wk_text_out;
wk_text_out *wk_text_out_new(const wk_llm *m, const char *const *stop, int n_stop);
wk_status wk_text_out_push(wk_text_out *t, int32_t token, const char **text, size_t *len, bool *stopped);
wk_status wk_text_out_flush(wk_text_out *t, const char **text, size_t *len);
void wk_text_out_free(wk_text_out *t);               /* NULL is fine */

/* Called once per generated token with its id and the text it completes
 * (whole UTF-8 characters only; may be empty: text that may begin a stop
 * string is held back). Return false to stop. At the end, text still held
 * back comes in one last call with token -1. */
typedef bool (*wk_llm_token_fn)(void *user, int32_t token, const char *text, size_t len);

typedef enum wk_stop_reason {
    WK_STOP_NONE = 0, WK_STOP_EOG, WK_STOP_STRING, WK_STOP_LENGTH, WK_STOP_CONTEXT, WK_STOP_CALLBACK
} wk_stop_reason;

typedef struct wk_generate_opts {
    wk_sampling sampling;
    int64_t max_tokens;               /* 0: until the context is full        */
    const char *const *stop;          /* stop strings (not passed on)        */
    int n_stop;
    bool ignore_eog;                  /* keep going past end tokens          */
} wk_generate_opts;

typedef struct wk_generate_stats {
    int64_t prompt_tokens, gen_tokens;
    double prompt_ms, gen_ms;         /* prefill; the rest (decode + sampling) */
    wk_stop_reason stop;
} wk_generate_stats;

/* Feed prompt (after what the cache holds) and generate until an end
 * token, a stop string, max_tokens, the end of the context or the
 * callback says stop. opts NULL: greedy, no limit. cb may be NULL. A
 * prompt that does not fit the context is WK_ERR_ARGUMENT with the
 * numbers, before anything runs. */
wk_status wk_llm_generate(wk_llm *m, const int32_t *prompt, int64_t n_prompt, const wk_generate_opts *opts,
                          wk_llm_token_fn cb, void *user, wk_generate_stats *stats);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_LLM_H */
