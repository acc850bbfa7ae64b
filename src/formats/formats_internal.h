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

/* Sizes for messages: "1.23 GB". buf of 32. */
const char *wk_fmt_bytes(uint64_t bytes, char *buf);

#endif /* WICK_FORMATS_INTERNAL_H */
