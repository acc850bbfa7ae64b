/* wick_formats.h — model files: GGUF (v2 and v3, read and write),
 * safetensors (one file or a sharded model), JSON (config.json,
 * tokenizer.json), loading tensors onto a device with a progress bar, and
 * wk_model_file, one handle over a model's weights in either format.
 * The code lives in src/formats/ and is written against wick.h and
 * wick_ext.h only (the lowest of the layers above the core).
 * docs/model-files.md says what is supported and what is checked.
 *
 * Conventions (as wick.h's)
 *   - Functions that make something return it, or NULL on error; functions
 *     that act return a wk_status.
 *   - Errors are reported through the library's one thread-local error
 *     state, wk_last_error() and wk_last_status(), as every op's are. When
 *     a core call fails inside a file function (wk_from_host of a tensor,
 *     say), the file and tensor are put in front of its message.
 *   - A file that is truncated or corrupt gives WK_ERR_IO and a message
 *     naming the file, the field and the value; every offset, size, count
 *     and string length is checked against the file before it is used.
 *   - Files are mapped (mmap), never read into memory: metadata strings are
 *     copied once into the handle, tensor bytes go from the mapping straight
 *     to the device. Pointers into a handle (names, strings, tensor infos,
 *     data) live until it is closed.
 *   - Only little-endian files on little-endian hosts.
 */
#ifndef WICK_FORMATS_H
#define WICK_FORMATS_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ------------------------------------------------------------------ */
/* progress of a load                                                  */

typedef enum wk_progress_mode {
    WK_PROGRESS_AUTO = 0,  /* a bar on stderr when it is a terminal; the
                              environment's WICK_PROGRESS=0/1 overrides    */
    WK_PROGRESS_OFF,       /* never                                        */
    WK_PROGRESS_ON         /* always (stderr), even when not a terminal    */
} wk_progress_mode;

typedef struct wk_progress wk_progress;
/* A bar counting up to total bytes, labelled (a file name, say). NULL when
 * the mode says quiet; every function below takes NULL and does nothing. */
wk_progress *wk_progress_begin(const char *label, uint64_t total_bytes, wk_progress_mode mode);
void wk_progress_add(wk_progress *p, uint64_t bytes);
/* Ends the bar's line: with the total time and rate when ok. Frees p. */
void wk_progress_end(wk_progress *p, bool ok);

/* ------------------------------------------------------------------ */
/* tensors of a file (GGUF or safetensors)                             */

typedef struct wk_file_tensor {
    const char *name;
    const char *file;        /* the path of the file that holds its bytes  */
    wk_dtype dtype;          /* WK_DTYPE_COUNT when wick has no such dtype  */
    const char *type_name;   /* the file's name of its type: "Q4_K", "BF16",
                                "IQ2_XXS", "F8_E5M2", "type 77"              */
    uint32_t ggml_type;      /* GGUF: the ggml type number; else UINT32_MAX */
    wk_shape shape;          /* outermost dim first (GGUF's ne reversed)    */
    uint64_t offset;         /* of its first byte in its file               */
    uint64_t nbytes;         /* 0 when the type's size is unknown           */
    const void *data;        /* into the mapping (any alignment)            */
} wk_file_tensor;

/* A tensor on dev with the file's bytes (wk_from_host from the mapping).
 * A type wick has no dtype for is WK_ERR_UNSUPPORTED naming the tensor,
 * the type and its number. */
wk_tensor *wk_file_tensor_load(const wk_file_tensor *info, wk_device *dev);
/* n tensors to dev, out[i] for infos[i], with one progress bar over their
 * bytes (label: what to print, a file name say). On error every tensor
 * made is released and out[] is NULL. */
wk_status wk_file_tensors_load(const wk_file_tensor *const *infos, int64_t n, wk_device *dev,
                               wk_progress_mode mode, const char *label, wk_tensor **out);

/* ------------------------------------------------------------------ */
/* GGUF                                                                */

typedef enum wk_gguf_type {
    WK_GGUF_U8 = 0, WK_GGUF_I8 = 1, WK_GGUF_U16 = 2, WK_GGUF_I16 = 3,
    WK_GGUF_U32 = 4, WK_GGUF_I32 = 5, WK_GGUF_F32 = 6, WK_GGUF_BOOL = 7,
    WK_GGUF_STRING = 8, WK_GGUF_ARRAY = 9, WK_GGUF_U64 = 10, WK_GGUF_I64 = 11,
    WK_GGUF_F64 = 12,
    WK_GGUF_TYPE_COUNT
} wk_gguf_type;
const char *wk_gguf_type_name(wk_gguf_type t);   /* "u8" .. "f64", "string", "array"; "?" */
/* The name of a ggml tensor type ("Q4_K", "IQ2_XXS"; "type N" when
 * unknown: a static buffer per thread) and wick's dtype for it
 * (WK_DTYPE_COUNT when none). */
const char *wk_ggml_type_name(uint32_t ggml_type);
wk_dtype wk_ggml_type_dtype(uint32_t ggml_type);
/* The ggml type of a wick dtype; false for u8, u32 and f8e4m3, which
 * GGUF cannot hold. */
bool wk_dtype_ggml_type(wk_dtype dt, uint32_t *ggml_type);

typedef struct wk_gguf wk_gguf;
typedef struct wk_gguf_value wk_gguf_value;    /* lives as long as its file */

/* Maps and parses a GGUF file: header, every metadata value, every tensor
 * info (dims, type, offset against the data section). */
wk_gguf *wk_gguf_open(const char *path);
void wk_gguf_close(wk_gguf *g);                  /* NULL is fine */
const char *wk_gguf_path(const wk_gguf *g);
uint32_t wk_gguf_version(const wk_gguf *g);      /* 2 or 3 */
uint32_t wk_gguf_alignment(const wk_gguf *g);    /* general.alignment, 32 when absent */
uint64_t wk_gguf_data_offset(const wk_gguf *g);  /* where the tensor data begins */
uint64_t wk_gguf_file_size(const wk_gguf *g);

/* Metadata, in file order. */
int64_t wk_gguf_kv_count(const wk_gguf *g);
const char *wk_gguf_kv_key(const wk_gguf *g, int64_t i);
const wk_gguf_value *wk_gguf_kv_value(const wk_gguf *g, int64_t i);
/* NULL when the key is absent (no error set). */
const wk_gguf_value *wk_gguf_find(const wk_gguf *g, const char *key);

wk_gguf_type wk_gguf_value_type(const wk_gguf_value *v);
/* A scalar value. false when v is not of a fitting type: _int takes every
 * integer type whose value fits int64, _uint every non-negative one, _float
 * f32 and f64, _bool bool. */
bool wk_gguf_value_int(const wk_gguf_value *v, int64_t *out);
bool wk_gguf_value_uint(const wk_gguf_value *v, uint64_t *out);
bool wk_gguf_value_float(const wk_gguf_value *v, double *out);
bool wk_gguf_value_bool(const wk_gguf_value *v, bool *out);
/* A string value: NUL-terminated (its bytes may hold NULs: len says how
 * many there are); NULL when v is not a string. */
const char *wk_gguf_value_str(const wk_gguf_value *v, size_t *len);
/* An array: its element type (WK_GGUF_TYPE_COUNT when v is not an array)
 * and length; elements by index, with the scalar rules above. _at gives
 * the element of an array of arrays. A wrong type or an index past the end
 * gives false/NULL. */
wk_gguf_type wk_gguf_array_type(const wk_gguf_value *v);
uint64_t wk_gguf_array_len(const wk_gguf_value *v);
bool wk_gguf_array_int(const wk_gguf_value *v, uint64_t i, int64_t *out);
bool wk_gguf_array_uint(const wk_gguf_value *v, uint64_t i, uint64_t *out);
bool wk_gguf_array_float(const wk_gguf_value *v, uint64_t i, double *out);
bool wk_gguf_array_bool(const wk_gguf_value *v, uint64_t i, bool *out);
const char *wk_gguf_array_str(const wk_gguf_value *v, uint64_t i, size_t *len);
const wk_gguf_value *wk_gguf_array_at(const wk_gguf_value *v, uint64_t i);
/* The elements of an array of numbers or bools as the file stores them
 * (little-endian, packed, possibly unaligned: copy with memcpy); NULL for
 * arrays of strings or arrays. */
const void *wk_gguf_array_data(const wk_gguf_value *v);

/* Typed look-ups by key, for model code: WK_ERR_ARGUMENT when the key is
 * absent, WK_ERR_DTYPE when its value is of another type; the message
 * names the file and the key. */
wk_status wk_gguf_get_int(const wk_gguf *g, const char *key, int64_t *out);
wk_status wk_gguf_get_uint(const wk_gguf *g, const char *key, uint64_t *out);
wk_status wk_gguf_get_float(const wk_gguf *g, const char *key, double *out);   /* integers too */
wk_status wk_gguf_get_bool(const wk_gguf *g, const char *key, bool *out);
wk_status wk_gguf_get_str(const wk_gguf *g, const char *key, const char **out, size_t *len);
/* An array: its element type, length and value (for the _array_ calls). */
wk_status wk_gguf_get_array(const wk_gguf *g, const char *key, wk_gguf_type *elem_type, uint64_t *len,
                            const wk_gguf_value **arr);

/* Tensors, in file order. */
int64_t wk_gguf_tensor_count(const wk_gguf *g);
const wk_file_tensor *wk_gguf_tensor_info(const wk_gguf *g, int64_t i);   /* NULL past the end */
int64_t wk_gguf_tensor_index(const wk_gguf *g, const char *name);          /* -1 when absent */
/* A tensor on dev (wk_file_tensor_load); an absent name is WK_ERR_ARGUMENT. */
wk_tensor *wk_gguf_tensor(const wk_gguf *g, const char *name, wk_device *dev);
/* Every tensor to dev with a progress bar: out[wk_gguf_tensor_count(g)]. */
wk_status wk_gguf_load_all(const wk_gguf *g, wk_device *dev, wk_progress_mode mode, wk_tensor **out);

/* ------------------------------------------------------------------ */
/* GGUF writer                                                         */

/* Metadata and tensors are collected, then written in one go (GGUF v3,
 * every tensor's data aligned, the data section padded). Setting a key
 * that is set already replaces its value in place. */
typedef struct wk_gguf_writer wk_gguf_writer;
wk_gguf_writer *wk_gguf_writer_new(void);
void wk_gguf_writer_free(wk_gguf_writer *w);     /* releases the tensors it holds */
/* A power of two; also sets general.alignment (u32). Default 32. */
wk_status wk_gguf_writer_set_alignment(wk_gguf_writer *w, uint32_t alignment);
wk_status wk_gguf_writer_set_u8(wk_gguf_writer *w, const char *key, uint8_t v);
wk_status wk_gguf_writer_set_i8(wk_gguf_writer *w, const char *key, int8_t v);
wk_status wk_gguf_writer_set_u16(wk_gguf_writer *w, const char *key, uint16_t v);
wk_status wk_gguf_writer_set_i16(wk_gguf_writer *w, const char *key, int16_t v);
wk_status wk_gguf_writer_set_u32(wk_gguf_writer *w, const char *key, uint32_t v);
wk_status wk_gguf_writer_set_i32(wk_gguf_writer *w, const char *key, int32_t v);
wk_status wk_gguf_writer_set_u64(wk_gguf_writer *w, const char *key, uint64_t v);
wk_status wk_gguf_writer_set_i64(wk_gguf_writer *w, const char *key, int64_t v);
wk_status wk_gguf_writer_set_f32(wk_gguf_writer *w, const char *key, float v);
wk_status wk_gguf_writer_set_f64(wk_gguf_writer *w, const char *key, double v);
wk_status wk_gguf_writer_set_bool(wk_gguf_writer *w, const char *key, bool v);
wk_status wk_gguf_writer_set_str(wk_gguf_writer *w, const char *key, const char *v);
wk_status wk_gguf_writer_set_strn(wk_gguf_writer *w, const char *key, const char *v, size_t len);
/* An array of n elements of a scalar type: data holds them as C values
 * (uint8_t .. double; bool as bool); for WK_GGUF_STRING data is
 * const char *const[n] (NUL-terminated). Arrays of arrays: copy them from
 * a file with wk_gguf_writer_copy_kv. */
wk_status wk_gguf_writer_set_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type, const void *data,
                                   uint64_t n);
/* The value of key in src (any type, nested arrays included) under the
 * same key. */
wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *src, const char *key);
/* A tensor from a wick tensor (any device, any view; retained, read back
 * when written). Its dtype must have a ggml type (wk_dtype_ggml_type). */
wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, const wk_tensor *t);
/* A tensor from host bytes laid out as wk_from_host takes them (a GGUF
 * file's tensor data, say); data must stay valid until the file is
 * written. */
wk_status wk_gguf_writer_add_data(wk_gguf_writer *w, const char *name, wk_dtype dt, wk_shape shape,
                                  const void *data);
/* Writes the file (to path.tmp, then renamed over path). */
wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path);

/* ------------------------------------------------------------------ */
/* safetensors                                                         */

typedef struct wk_safetensors wk_safetensors;
/* A .safetensors file, a model.safetensors.index.json (every shard it
 * names is opened), or a folder holding model.safetensors or
 * model.safetensors.index.json. */
wk_safetensors *wk_safetensors_open(const char *path);
void wk_safetensors_close(wk_safetensors *s);                 /* NULL is fine */
int wk_safetensors_file_count(const wk_safetensors *s);       /* 1, or the shards */
const char *wk_safetensors_file_path(const wk_safetensors *s, int i);
/* The __metadata__ string pairs of every file (the first file's value
 * where shards disagree). */
int64_t wk_safetensors_meta_count(const wk_safetensors *s);
const char *wk_safetensors_meta_key(const wk_safetensors *s, int64_t i);
const char *wk_safetensors_meta_value(const wk_safetensors *s, int64_t i);
const char *wk_safetensors_meta(const wk_safetensors *s, const char *key);   /* NULL when absent */
/* Tensors of every file, file by file, each in order of its data offset. */
int64_t wk_safetensors_tensor_count(const wk_safetensors *s);
const wk_file_tensor *wk_safetensors_tensor_info(const wk_safetensors *s, int64_t i);
int64_t wk_safetensors_tensor_index(const wk_safetensors *s, const char *name);   /* -1 when absent */
wk_tensor *wk_safetensors_tensor(const wk_safetensors *s, const char *name, wk_device *dev);
wk_status wk_safetensors_load_all(const wk_safetensors *s, wk_device *dev, wk_progress_mode mode, wk_tensor **out);
/* The safetensors dtype's wick dtype (BOOL is u8); false for the others
 * (I8, U16, U64, F8_E5M2, ...) and unknown names. */
bool wk_safetensors_dtype(const char *name, wk_dtype *out);

/* ------------------------------------------------------------------ */
/* JSON                                                                */

/* RFC 8259, strictly: UTF-8 text, strings with every escape (\u
 * surrogate pairs joined; a lone surrogate is an error), numbers (an
 * integer literal that fits int64 is also kept exactly), true, false,
 * null; duplicate keys and nesting deeper than 256 are errors. */
typedef enum wk_json_type {
    WK_JSON_NULL = 0, WK_JSON_BOOL, WK_JSON_NUMBER, WK_JSON_STRING, WK_JSON_ARRAY, WK_JSON_OBJECT
} wk_json_type;
#define WK_JSON_MAX_DEPTH 256
/* Parse flag: also NaN, Infinity and -Infinity, as Python's json writes
 * them (HF config.json files may hold them). */
#define WK_JSON_ALLOW_NAN 1u

typedef struct wk_json wk_json;
/* name: what the text is, for messages ("config.json"). The result is the
 * document's root; every value in it lives until wk_json_free(root). */
wk_json *wk_json_parse(const char *text, size_t len, const char *name, unsigned flags);
wk_json *wk_json_parse_file(const char *path, unsigned flags);
void wk_json_free(wk_json *root);                       /* NULL is fine */

wk_json_type wk_json_kind(const wk_json *v);            /* NULL: WK_JSON_NULL */
/* Arrays: elements; objects: members in text order. 0 for the rest. */
size_t wk_json_count(const wk_json *v);
const wk_json *wk_json_item(const wk_json *v, size_t i);            /* element / member value */
const char *wk_json_key(const wk_json *v, size_t i, size_t *len);   /* member key */
const wk_json *wk_json_get(const wk_json *obj, const char *key);    /* NULL when absent */
/* Strings: NUL-terminated, len bytes (a \u0000 escape gives a NUL). */
const char *wk_json_string(const wk_json *v, size_t *len);          /* NULL if not a string */
bool wk_json_number(const wk_json *v, double *out);
/* A number whose value is an integer that fits int64 ("7", "7.0", "7e0"). */
bool wk_json_int(const wk_json *v, int64_t *out);
bool wk_json_bool(const wk_json *v, bool *out);
/* The value at a dotted path of object keys ("rope_scaling.factor"). */
const wk_json *wk_json_path(const wk_json *root, const char *path);
const char *wk_json_doc_name(const wk_json *v);          /* the name given to the parse */

/* HF config.json: wk_config_open takes the file or its folder (parsed
 * with WK_JSON_ALLOW_NAN). The getters read a dotted path: absent or null
 * is WK_OK with *out unchanged (set the default first) unless required
 * (then WK_ERR_ARGUMENT); a value of another type is WK_ERR_IO naming the
 * file, the key and what it holds. */
wk_json *wk_config_open(const char *path);
wk_status wk_config_int(const wk_json *cfg, const char *path, bool required, int64_t *out);
wk_status wk_config_float(const wk_json *cfg, const char *path, bool required, double *out);
wk_status wk_config_bool(const wk_json *cfg, const char *path, bool required, bool *out);
wk_status wk_config_str(const wk_json *cfg, const char *path, bool required, const char **out);

/* ------------------------------------------------------------------ */
/* a model's weights, whatever the format                              */

/* One handle over the formats above, for code that loads a model:
 *   - a GGUF file, known by its magic whatever its name; a file named
 *     .gguf without it is WK_ERR_IO "not a GGUF file" showing its first
 *     bytes (a file of another name is read as safetensors);
 *   - a safetensors model (one file, a model.safetensors.index.json, or a
 *     folder holding either) with its config.json beside it: required,
 *     WK_ERR_IO naming the path when it is absent, not valid JSON or not
 *     an object; and tokenizer_config.json beside it when present (parsed
 *     with WK_JSON_ALLOW_NAN; a file that does not parse is left out,
 *     without an error).
 * A path that does not exist is WK_ERR_IO "no such file or folder". Its
 * tensors are those of the file underneath (wk_gguf_tensor_info's,
 * wk_safetensors_tensor_info's, in the same order). */
typedef struct wk_model_file wk_model_file;
wk_model_file *wk_model_file_open(const char *path);
void wk_model_file_close(wk_model_file *f);                 /* NULL is fine */
/* The GGUF file, or the safetensors model's folder (where its config.json is). */
const char *wk_model_file_path(const wk_model_file *f);
int64_t wk_model_file_tensor_count(const wk_model_file *f);
const wk_file_tensor *wk_model_file_tensor_info(const wk_model_file *f, int64_t i);   /* NULL past the end */
const wk_file_tensor *wk_model_file_find(const wk_model_file *f, const char *name);   /* NULL when absent, no error set */
/* One tensor on dev (wk_file_tensor_load); an absent name is WK_ERR_ARGUMENT. */
wk_tensor *wk_model_file_tensor(const wk_model_file *f, const char *name, wk_device *dev);
/* The file underneath, and the configs; they live as long as f. */
const wk_gguf *wk_model_file_gguf(const wk_model_file *f);                /* NULL for safetensors */
const wk_safetensors *wk_model_file_safetensors(const wk_model_file *f);  /* NULL for GGUF */
const wk_json *wk_model_file_config(const wk_model_file *f);              /* config.json; NULL for GGUF */
const wk_json *wk_model_file_tokenizer_config(const wk_model_file *f);    /* tokenizer_config.json or NULL */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* WICK_FORMATS_H */
