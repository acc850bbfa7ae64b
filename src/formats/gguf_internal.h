/* gguf_internal.h — what the GGUF reader (gguf.c), its metadata accessors
 * (gguf_meta.c) and the writer (gguf_writer.c) share: the ggml type table,
 * the sizes of scalar value types and the handle's layout. */
#ifndef WICK_GGUF_INTERNAL_H
#define WICK_GGUF_INTERNAL_H

#include "formats_internal.h"

typedef struct ggml_type_info {
    const char *name;
    uint32_t block, bytes;   /* 0: size unknown (a type removed from ggml) */
    wk_dtype dt;             /* WK_DTYPE_COUNT: wick has no such dtype */
} ggml_type_info;
/* The ggml type t's block size, bytes and dtype; NULL past the table. */
const ggml_type_info *wk_ggml_info(uint32_t t);
/* Bytes of one element of a scalar value type; 0 for string and array. */
uint64_t wk_gguf_scalar_size(wk_gguf_type t);

/* ---- the handle -------------------------------------------------------------- */

struct wk_gguf_value {
    wk_gguf_type type;
    wk_gguf_type elem;            /* arrays */
    uint64_t n;                   /* arrays */
    union { uint64_t u; int64_t i; double f; } s;   /* scalars, widened */
    const char *str;              /* strings (NUL-terminated copy) */
    size_t len;
    const unsigned char *data;    /* arrays of scalars: into the mapping */
    const char **strs;            /* arrays of strings */
    size_t *lens;
    wk_gguf_value *arr;           /* arrays of arrays */
};

struct wk_gguf {
    wk_map map;
    wk_arena arena;
    uint32_t version, alignment;
    uint64_t data_offset;
    int64_t n_kv;
    const char **keys;
    size_t *klens;
    wk_gguf_value *values;
    wk_strtab ktab;
    wk_tensor_table tensors;
};

#endif /* WICK_GGUF_INTERNAL_H */
