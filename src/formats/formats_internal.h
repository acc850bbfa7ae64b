/* formats_internal.h — what the files of src/formats/ share: mapped files,
 * a bump arena, a string hash table, the table of a file's tensors,
 * checked arithmetic and little-endian reads. Errors go to the library's
 * one error state (wk_error_set, wick_ext.h). Written against the public
 * API only (tools/check-layers). */
#ifndef WICK_FORMATS_INTERNAL_H
#define WICK_FORMATS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "wick.h"
#include "wick_ext.h"
#include "wick_formats.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "src/formats reads little-endian files by plain loads: a big-endian host needs byte swaps"
#endif

#define WK_MODEL_API __attribute__((visibility("default")))


/* ---- mapped files ----------------------------------------------------- */

typedef struct wk_map {
    const unsigned char *p;   /* NULL for an empty file */
    uint64_t size;
    char *path;               /* a copy */
} wk_map;
/* WK_ERR_IO naming the path when it cannot be opened, is not a regular
 * file, or cannot be mapped. An empty file maps to p == NULL, size 0. */
wk_status wk_map_open(const char *path, wk_map *m);
void wk_map_close(wk_map *m);

/* ---- arena ------------------------------------------------------------- */

typedef struct wk_arena_block wk_arena_block;
typedef struct wk_arena { wk_arena_block *head; } wk_arena;
/* 16-byte aligned, zeroed; NULL (and WK_ERR_MEMORY set) on failure. */
void *wk_arena_alloc(wk_arena *a, size_t bytes);
char *wk_arena_strndup(wk_arena *a, const char *s, size_t len);
void wk_arena_free(wk_arena *a);

/* ---- a name -> index table --------------------------------------------- */

typedef struct wk_strtab {
    uint32_t *slots;          /* index + 1; 0 empty */
    size_t cap;               /* power of two */
} wk_strtab;
uint64_t wk_str_hash(const char *s, size_t len);
/* names[i] with lens[i] (lens NULL: strlen); false on memory (set). *dup
 * is the first index whose name repeats an earlier one, or -1. */
bool wk_strtab_build(wk_strtab *t, const char *const *names, const size_t *lens, size_t n, int64_t *dup);
int64_t wk_strtab_find(const wk_strtab *t, const char *const *names, const size_t *lens, const char *key,
                       size_t keylen);
void wk_strtab_free(wk_strtab *t);

/* ---- the table of a file's tensors (file_tensor.c) --------------------- */

/* The tensors of a GGUF file or of a safetensors model with their name
 * index: wk_gguf_tensor_* and wk_safetensors_tensor_* are calls of these.
 * Entries are added, then indexed once (wk_tensor_table_index); the
 * pointers into it live until it is freed. */
typedef struct wk_tensor_table {
    wk_file_tensor *tensors;  /* n of them, in the format's order */
    int64_t n, cap;
    const char **names;       /* names[i] == tensors[i].name (the index's keys) */
    wk_strtab index;
    const char *kind;         /* "gguf", "safetensors": a NULL name's message */
    const char *path;         /* the file an absent tensor's message names */
    char label[256];          /* the progress bar's (a file name, "N shards") */
} wk_tensor_table;

/* Room for n entries (false and WK_ERR_MEMORY set on failure). */
bool wk_tensor_table_reserve(wk_tensor_table *t, int64_t n);
/* A zeroed entry at the end; NULL (error set) on memory. */
wk_file_tensor *wk_tensor_table_add(wk_tensor_table *t);
/* The name index over every entry; *dup is the first index whose name
 * repeats an earlier one, or -1. false on memory (set). */
bool wk_tensor_table_index(wk_tensor_table *t, int64_t *dup);
void wk_tensor_table_free(wk_tensor_table *t);
/* As the public calls: t may be NULL (0, NULL, -1); _load and _load_all
 * set null_handle as the message when t is NULL ("gguf: NULL file"). */
int64_t wk_tensor_table_count(const wk_tensor_table *t);
const wk_file_tensor *wk_tensor_table_info(const wk_tensor_table *t, int64_t i);
int64_t wk_tensor_table_find(const wk_tensor_table *t, const char *name);
wk_tensor *wk_tensor_table_load(const wk_tensor_table *t, const char *null_handle, const char *name, wk_device *dev);
wk_status wk_tensor_table_load_all(const wk_tensor_table *t, const char *null_handle, wk_device *dev,
                                   wk_progress_mode mode, wk_tensor **out);
/* The table of an open file (NULL for NULL): what wk_model_file reads. */
const wk_tensor_table *wk_gguf_tensor_table(const wk_gguf *g);
const wk_tensor_table *wk_safetensors_tensor_table(const wk_safetensors *s);

/* ---- checked arithmetic ------------------------------------------------- */

static inline bool wk_add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool wk_mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Bytes of a tensor of numel elements with `block` elements in
 * `block_bytes` bytes; false when numel is not whole blocks or it
 * overflows. */
static inline bool wk_block_bytes(uint64_t numel, uint64_t block, uint64_t block_bytes, uint64_t *out)
{
    if (block == 0 || numel % block) return false;
    return wk_mul_u64(numel / block, block_bytes, out);
}

/* ---- little-endian loads (any alignment) ---------------------------------- */

static inline uint16_t wk_ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t wk_ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t wk_ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* The last path component (for labels). */
const char *wk_path_base(const char *path);

/* dir + "/" + name (no second slash), malloc'd; NULL (error set) on memory. */
char *wk_path_join(const char *dir, const char *name);

/* Sizes for messages: "1.23 GB". buf of 32. */
const char *wk_fmt_bytes(uint64_t bytes, char *buf);

#endif /* WICK_FORMATS_INTERNAL_H */
