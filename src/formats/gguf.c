/* gguf.c — GGUF files (v2 and v3): the reader and the writer.
 *
 * Layout (little-endian): "GGUF", version u32, tensor count u64, metadata
 * count u64; each metadata pair is a key (u64 length + bytes), a value type
 * u32 and the value (scalars; strings as u64 length + bytes; arrays as an
 * element type u32, a u64 count and the elements, arrays of arrays
 * included); each tensor info is a name, n_dims u32, n_dims u64 dims
 * (innermost first), a ggml type u32 and an offset u64 from the start of the
 * data section, which begins at the next multiple of general.alignment (32
 * when absent) after the infos.
 *
 * The reader maps the file and walks it with one cursor whose every read is
 * checked against the file's size first; counts are checked against the
 * bytes left before anything is allocated for them (every element takes at
 * least one byte in the file), so a corrupt count cannot ask for more
 * memory than the file could describe. Tensor sizes come from the type's
 * block size and bytes and are checked for overflow, whole blocks and the
 * end of the file. Every failure is WK_ERR_IO naming the file, the field
 * (with the key or tensor it belongs to) and the value.
 *
 * The writer keeps each metadata value serialised as it will be written
 * and each tensor as a wick tensor (retained) or host bytes, and writes a
 * v3 file to path.tmp, renamed over path when complete.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "formats_internal.h"

/* ---- ggml types ----------------------------------------------------------- */

typedef struct ggml_type_info {
    const char *name;
    uint32_t block, bytes;   /* 0: size unknown (a type removed from ggml) */
    wk_dtype dt;             /* WK_DTYPE_COUNT: wick has no such dtype */
} ggml_type_info;

#define NO WK_DTYPE_COUNT
static const ggml_type_info GGML_TYPES[] = {
    [0] = { "F32", 1, 4, WK_F32 },          [1] = { "F16", 1, 2, WK_F16 },
    [2] = { "Q4_0", 32, 18, WK_Q4_0 },      [3] = { "Q4_1", 32, 20, WK_Q4_1 },
    [4] = { "Q4_2", 0, 0, NO },             [5] = { "Q4_3", 0, 0, NO },
    [6] = { "Q5_0", 32, 22, WK_Q5_0 },      [7] = { "Q5_1", 32, 24, WK_Q5_1 },
    [8] = { "Q8_0", 32, 34, WK_Q8_0 },      [9] = { "Q8_1", 32, 36, WK_Q8_1 },
    [10] = { "Q2_K", 256, 84, WK_Q2_K },    [11] = { "Q3_K", 256, 110, WK_Q3_K },
    [12] = { "Q4_K", 256, 144, WK_Q4_K },   [13] = { "Q5_K", 256, 176, WK_Q5_K },
    [14] = { "Q6_K", 256, 210, WK_Q6_K },   [15] = { "Q8_K", 256, 292, WK_Q8_K },
    [16] = { "IQ2_XXS", 256, 66, NO },      [17] = { "IQ2_XS", 256, 74, NO },
    [18] = { "IQ3_XXS", 256, 98, NO },      [19] = { "IQ1_S", 256, 50, NO },
    [20] = { "IQ4_NL", 32, 18, NO },        [21] = { "IQ3_S", 256, 110, NO },
    [22] = { "IQ2_S", 256, 82, NO },        [23] = { "IQ4_XS", 256, 136, NO },
    [24] = { "I8", 1, 1, NO },              [25] = { "I16", 1, 2, WK_I16 },
    [26] = { "I32", 1, 4, WK_I32 },         [27] = { "I64", 1, 8, WK_I64 },
    [28] = { "F64", 1, 8, WK_F64 },         [29] = { "IQ1_M", 256, 56, NO },
    [30] = { "BF16", 1, 2, WK_BF16 },       [31] = { "Q4_0_4_4", 0, 0, NO },
    [32] = { "Q4_0_4_8", 0, 0, NO },        [33] = { "Q4_0_8_8", 0, 0, NO },
    [34] = { "TQ1_0", 256, 54, NO },        [35] = { "TQ2_0", 256, 66, NO },
    [36] = { "IQ4_NL_4_4", 0, 0, NO },      [37] = { "IQ4_NL_4_8", 0, 0, NO },
    [38] = { "IQ4_NL_8_8", 0, 0, NO },      [39] = { "MXFP4", 32, 17, NO },
    [40] = { "NVFP4", 64, 36, NO },         [41] = { "Q1_0", 128, 18, NO },
};
#undef NO
#define N_GGML_TYPES ((uint32_t)(sizeof GGML_TYPES / sizeof GGML_TYPES[0]))

static const ggml_type_info *ggml_info(uint32_t t) { return t < N_GGML_TYPES ? &GGML_TYPES[t] : NULL; }

WK_MODEL_API const char *wk_ggml_type_name(uint32_t t)
{
    static _Thread_local char buf[32];
    const ggml_type_info *i = ggml_info(t);
    if (i) return i->name;
    snprintf(buf, sizeof buf, "type %" PRIu32, t);
    return buf;
}

WK_MODEL_API wk_dtype wk_ggml_type_dtype(uint32_t t)
{
    const ggml_type_info *i = ggml_info(t);
    return i ? i->dt : WK_DTYPE_COUNT;
}

WK_MODEL_API bool wk_dtype_ggml_type(wk_dtype dt, uint32_t *out)
{
    if ((unsigned)dt >= WK_DTYPE_COUNT) return false;
    for (uint32_t t = 0; t < N_GGML_TYPES; t++)
        if (GGML_TYPES[t].dt == dt) {
            if (out) *out = t;
            return true;
        }
    return false;
}

WK_MODEL_API const char *wk_gguf_type_name(wk_gguf_type t)
{
    static const char *const names[] = { "u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                         "bool", "string", "array", "u64", "i64", "f64" };
    return (unsigned)t < WK_GGUF_TYPE_COUNT ? names[t] : "?";
}

/* bytes of one element of a scalar type; 0 for string and array */
static uint64_t scalar_size(wk_gguf_type t)
{
    switch (t) {
    case WK_GGUF_U8: case WK_GGUF_I8: case WK_GGUF_BOOL: return 1;
    case WK_GGUF_U16: case WK_GGUF_I16: return 2;
    case WK_GGUF_U32: case WK_GGUF_I32: case WK_GGUF_F32: return 4;
    case WK_GGUF_U64: case WK_GGUF_I64: case WK_GGUF_F64: return 8;
    default: return 0;
    }
}

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
    int64_t n_kv, n_tensors;
    const char **keys;
    size_t *klens;
    wk_gguf_value *values;
    wk_strtab ktab;
    wk_file_tensor *tensors;
    const char **tnames;
    wk_strtab ttab;
};

/* ---- the checked cursor -------------------------------------------------------- */

#define MAX_NEST 16   /* arrays of arrays, at most this deep */

typedef struct rd {
    const unsigned char *p;
    uint64_t size, pos;
    const char *path;
    wk_gguf *g;
    char field[256];   /* what is being read, for messages */
} rd;

__attribute__((format(printf, 2, 3))) static void set_field(rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->field, sizeof r->field, fmt, ap);
    va_end(ap);
}

/* n bytes at the cursor, or a truncation error naming the field. */
static bool need(rd *r, uint64_t n, const char *what)
{
    if (n <= r->size - r->pos) return true;
    wk_error_set(WK_ERR_IO, "%s: truncated: %s%s%s needs %" PRIu64 " bytes at offset %" PRIu64 ", the %" PRIu64
            "-byte file has %" PRIu64 " left", r->path, r->field, r->field[0] && what[0] ? " " : "", what, n, r->pos,
            r->size, r->size - r->pos);
    return false;
}

static bool rd_u32(rd *r, const char *what, uint32_t *out)
{
    if (!need(r, 4, what)) return false;
    *out = wk_ld32(r->p + r->pos);
    r->pos += 4;
    return true;
}

static bool rd_u64(rd *r, const char *what, uint64_t *out)
{
    if (!need(r, 8, what)) return false;
    *out = wk_ld64(r->p + r->pos);
    r->pos += 8;
    return true;
}

/* A string (u64 length + bytes): a pointer into the mapping. */
static bool rd_str(rd *r, const char *what, const char **s, uint64_t *len)
{
    char w[96];
    snprintf(w, sizeof w, "%s length", what);
    if (!rd_u64(r, w, len)) return false;
    if (*len > r->size - r->pos) {
        wk_error_set(WK_ERR_IO, "%s: %s%s%s is %" PRIu64 " bytes at offset %" PRIu64 ", past the end of the file (%" PRIu64
                " bytes left)", r->path, r->field, r->field[0] && what[0] ? " " : "", what, *len, r->pos - 8,
                r->size - r->pos);
        return false;
    }
    *s = (const char *)r->p + r->pos;
    r->pos += *len;
    return true;
}

static bool bad(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(rd *r, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    wk_error_set(WK_ERR_IO, "%s: %s%s%s", r->path, r->field, r->field[0] ? ": " : "", what);
    return false;
}

/* The smallest number of bytes an element of type t takes in the file. */
static uint64_t min_elem_bytes(wk_gguf_type t)
{
    if (t == WK_GGUF_STRING) return 8;
    if (t == WK_GGUF_ARRAY) return 12;
    return scalar_size(t);
}

static bool rd_value(rd *r, wk_gguf_type type, wk_gguf_value *v, int depth);

static bool rd_scalar(rd *r, wk_gguf_type type, wk_gguf_value *v)
{
    uint64_t sz = scalar_size(type);
    if (!need(r, sz, "value")) return false;
    const unsigned char *q = r->p + r->pos;
    switch (type) {
    case WK_GGUF_U8: v->s.u = q[0]; break;
    case WK_GGUF_I8: v->s.i = (int8_t)q[0]; break;
    case WK_GGUF_U16: v->s.u = wk_ld16(q); break;
    case WK_GGUF_I16: v->s.i = (int16_t)wk_ld16(q); break;
    case WK_GGUF_U32: v->s.u = wk_ld32(q); break;
    case WK_GGUF_I32: v->s.i = (int32_t)wk_ld32(q); break;
    case WK_GGUF_U64: v->s.u = wk_ld64(q); break;
    case WK_GGUF_I64: v->s.i = (int64_t)wk_ld64(q); break;
    case WK_GGUF_F32: {
        float f;
        memcpy(&f, q, 4);
        v->s.f = f;
        break;
    }
    case WK_GGUF_F64: memcpy(&v->s.f, q, 8); break;
    case WK_GGUF_BOOL:
        if (q[0] > 1) return bad(r, "bool value %u at offset %" PRIu64 " is neither 0 nor 1", q[0], r->pos);
        v->s.u = q[0];
        break;
    default: return false;
    }
    r->pos += sz;
    return true;
}

static bool rd_array(rd *r, wk_gguf_value *v, int depth)
{
    uint32_t et;
    if (!rd_u32(r, "array element type", &et)) return false;
    if (et >= WK_GGUF_TYPE_COUNT)
        return bad(r, "array element type %" PRIu32 " at offset %" PRIu64 " is not a GGUF value type (0..12)", et,
                   r->pos - 4);
    if (et == WK_GGUF_ARRAY && depth >= MAX_NEST)
        return bad(r, "arrays nested deeper than %d (offset %" PRIu64 ")", MAX_NEST, r->pos - 4);
    uint64_t n;
    if (!rd_u64(r, "array length", &n)) return false;
    v->elem = (wk_gguf_type)et;
    v->n = n;
    uint64_t minb = min_elem_bytes(v->elem), total;
    if (!wk_mul_u64(n, minb, &total) || total > r->size - r->pos)
        return bad(r, "array of %" PRIu64 " %s elements at offset %" PRIu64 " needs at least %s bytes, %" PRIu64
                   " are left in the file", n, wk_gguf_type_name(v->elem), r->pos - 8,
                   wk_mul_u64(n, minb, &total) ? "more" : "2^64 or more", r->size - r->pos);
    if (minb && v->elem != WK_GGUF_STRING && v->elem != WK_GGUF_ARRAY) {
        v->data = r->p + r->pos;
        if (v->elem == WK_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (v->data[i] > 1)
                    return bad(r, "bool element %" PRIu64 " of an array (offset %" PRIu64 ") is %u, neither 0 nor 1", i,
                               r->pos + i, v->data[i]);
        r->pos += total;
        return true;
    }
    if (v->elem == WK_GGUF_STRING) {
        v->strs = wk_arena_alloc(&r->g->arena, (size_t)(n ? n : 1) * sizeof *v->strs);
        v->lens = wk_arena_alloc(&r->g->arena, (size_t)(n ? n : 1) * sizeof *v->lens);
        if (!v->strs || !v->lens) return false;
        for (uint64_t i = 0; i < n; i++) {
            const char *s;
            uint64_t len;
            char w[64];
            snprintf(w, sizeof w, "string %" PRIu64 " of the array", i);
            if (!rd_str(r, w, &s, &len)) return false;
            v->strs[i] = wk_arena_strndup(&r->g->arena, s, (size_t)len);
            if (!v->strs[i]) return false;
            v->lens[i] = (size_t)len;
        }
        return true;
    }
    v->arr = wk_arena_alloc(&r->g->arena, (size_t)(n ? n : 1) * sizeof *v->arr);
    if (!v->arr) return false;
    for (uint64_t i = 0; i < n; i++) {
        v->arr[i].type = WK_GGUF_ARRAY;
        if (!rd_array(r, &v->arr[i], depth + 1)) return false;
    }
    return true;
}

static bool rd_value(rd *r, wk_gguf_type type, wk_gguf_value *v, int depth)
{
    v->type = type;
    if (type == WK_GGUF_STRING) {
        const char *s;
        uint64_t len;
        if (!rd_str(r, "string", &s, &len)) return false;
        v->str = wk_arena_strndup(&r->g->arena, s, (size_t)len);
        v->len = (size_t)len;
        return v->str != NULL;
    }
    if (type == WK_GGUF_ARRAY) return rd_array(r, v, depth + 1);
    return rd_scalar(r, type, v);
}

/* ---- open ------------------------------------------------------------------------- */

static bool parse(wk_gguf *g)
{
    rd R = { .p = g->map.p, .size = g->map.size, .pos = 0, .path = g->map.path, .g = g };
    rd *r = &R;
    set_field(r, "header:");
    if (!need(r, 4, "magic")) return false;
    if (memcmp(r->p, "GGUF", 4) != 0) {
        const unsigned char *m = r->p;
        return bad(r, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", m[0], m[1], m[2], m[3]);
    }
    r->pos = 4;
    if (!rd_u32(r, "version", &g->version)) return false;
    r->field[0] = 0;
    if (g->version == 0x02000000u || g->version == 0x03000000u)
        return bad(r, "a big-endian GGUF file (version %" PRIu32 " byte-swapped); wick reads little-endian files",
                   __builtin_bswap32(g->version));
    if (g->version != 2 && g->version != 3)
        return bad(r, "GGUF version %" PRIu32 " (wick reads versions 2 and 3)", g->version);
    uint64_t nt, nkv;
    set_field(r, "header:");
    if (!rd_u64(r, "tensor count", &nt) || !rd_u64(r, "metadata count", &nkv)) return false;
    r->field[0] = 0;
    /* a tensor info takes at least 24 bytes, a pair at least 13 */
    if (nt > (r->size - r->pos) / 24)
        return bad(r, "tensor count %" PRIu64 " does not fit the %" PRIu64 "-byte file", nt, r->size);
    if (nkv > (r->size - r->pos) / 13)
        return bad(r, "metadata count %" PRIu64 " does not fit the %" PRIu64 "-byte file", nkv, r->size);
    g->n_kv = (int64_t)nkv;
    g->n_tensors = (int64_t)nt;
    g->keys = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->keys);
    g->klens = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->klens);
    g->values = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->values);
    g->tensors = wk_arena_alloc(&g->arena, (size_t)(nt + 1) * sizeof *g->tensors);
    g->tnames = wk_arena_alloc(&g->arena, (size_t)(nt + 1) * sizeof *g->tnames);
    if (!g->keys || !g->klens || !g->values || !g->tensors || !g->tnames) return false;

    g->alignment = 32;
    for (uint64_t i = 0; i < nkv; i++) {
        set_field(r, "metadata %" PRIu64 ":", i);
        const char *k;
        uint64_t klen;
        if (!rd_str(r, "key", &k, &klen)) return false;
        g->keys[i] = wk_arena_strndup(&g->arena, k, (size_t)klen);
        if (!g->keys[i]) return false;
        g->klens[i] = (size_t)klen;
        set_field(r, "metadata %" PRIu64 " ('%.120s')", i, g->keys[i]);
        uint32_t t;
        if (!rd_u32(r, "value type", &t)) return false;
        if (t >= WK_GGUF_TYPE_COUNT)
            return bad(r, "value type %" PRIu32 " at offset %" PRIu64 " is not a GGUF value type (0..12)", t, r->pos - 4);
        if (!rd_value(r, (wk_gguf_type)t, &g->values[i], 0)) return false;
    }
    int64_t dup;
    if (!wk_strtab_build(&g->ktab, g->keys, g->klens, (size_t)nkv, &dup)) return false;
    r->field[0] = 0;
    if (dup >= 0) return bad(r, "metadata key '%.200s' appears twice (pairs %" PRId64 " and later)", g->keys[dup], dup);

    int64_t ai = wk_strtab_find(&g->ktab, g->keys, g->klens, "general.alignment", 17);
    if (ai >= 0) {
        const wk_gguf_value *a = &g->values[ai];
        if (a->type != WK_GGUF_U32)
            return bad(r, "general.alignment is of type %s, expected u32", wk_gguf_type_name(a->type));
        if (a->s.u == 0 || (a->s.u & (a->s.u - 1)))
            return bad(r, "general.alignment is %" PRIu64 ", not a power of two", a->s.u);
        g->alignment = (uint32_t)a->s.u;
    }

    for (uint64_t i = 0; i < nt; i++) {
        wk_file_tensor *t = &g->tensors[i];
        set_field(r, "tensor %" PRIu64 ":", i);
        const char *nm;
        uint64_t nlen;
        if (!rd_str(r, "name", &nm, &nlen)) return false;
        t->name = g->tnames[i] = wk_arena_strndup(&g->arena, nm, (size_t)nlen);
        if (!t->name) return false;
        t->file = g->map.path;
        set_field(r, "tensor %" PRIu64 " ('%.120s')", i, t->name);
        uint32_t nd;
        if (!rd_u32(r, "n_dims", &nd)) return false;
        if (nd > 4) return bad(r, "n_dims is %" PRIu32 " (GGUF tensors have at most 4)", nd);
        t->shape.rank = (int)nd;
        uint64_t numel = 1;
        bool over = false;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne;
            char w[32];
            snprintf(w, sizeof w, "dim %" PRIu32, d);
            if (!rd_u64(r, w, &ne)) return false;
            if (ne > (uint64_t)INT64_MAX) return bad(r, "dim %" PRIu32 " is %" PRIu64 ", larger than 2^63-1", d, ne);
            t->shape.dims[nd - 1 - d] = (int64_t)ne;
            if (!wk_mul_u64(numel, ne, &numel)) over = true;
        }
        if (over || numel > (uint64_t)INT64_MAX) return bad(r, "the element count of its dims overflows 64 bits");
        uint32_t ty;
        if (!rd_u32(r, "type", &ty)) return false;
        t->ggml_type = ty;
        t->type_name = wk_ggml_type_name(ty);
        if (!ggml_info(ty)) {   /* the thread's buffer: keep a copy */
            t->type_name = wk_arena_strndup(&g->arena, t->type_name, strlen(t->type_name));
            if (!t->type_name) return false;
        }
        t->dtype = wk_ggml_type_dtype(ty);
        const ggml_type_info *ti = ggml_info(ty);
        t->nbytes = 0;
        if (ti && ti->block) {
            if (nd > 0 && t->shape.dims[nd - 1] % ti->block)
                return bad(r, "its row of %" PRId64 " elements is not a whole number of %s blocks (%" PRIu32 ")",
                           t->shape.dims[nd - 1], ti->name, ti->block);
            if (!wk_block_bytes(numel, ti->block, ti->bytes, &t->nbytes))
                return bad(r, "%" PRIu64 " elements of %s do not make whole blocks or overflow a byte count", numel,
                           ti->name);
        }
        if (!rd_u64(r, "data offset", &t->offset)) return false;
    }
    if (!wk_strtab_build(&g->ttab, g->tnames, NULL, (size_t)nt, &dup)) return false;
    r->field[0] = 0;
    if (dup >= 0) return bad(r, "tensor name '%.200s' appears twice (tensor %" PRId64 ")", g->tnames[dup], dup);

    /* the data section */
    uint64_t a = g->alignment, data = r->pos;
    if (data % a) data += a - data % a;
    g->data_offset = data;
    for (uint64_t i = 0; i < nt; i++) {
        wk_file_tensor *t = &g->tensors[i];
        set_field(r, "tensor %" PRIu64 " ('%.120s')", i, t->name);
        if (t->offset % a)
            return bad(r, "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, t->offset, a);
        uint64_t start, end;
        if (!wk_add_u64(data, t->offset, &start) || !wk_add_u64(start, t->nbytes, &end) || end > r->size) {
            return bad(r, "its %" PRIu64 " bytes at data offset %" PRIu64 " (file offset %" PRIu64
                       ") run past the end of the file (%" PRIu64 " bytes)", t->nbytes, t->offset, data + t->offset,
                       r->size);
        }
        t->offset = start;
        t->data = r->p + start;
    }
    return true;
}

WK_MODEL_API wk_gguf *wk_gguf_open(const char *path)
{
    wk_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path ? path : "(null)");
        return NULL;
    }
    if (wk_map_open(path, &g->map) != WK_OK) {
        free(g);
        return NULL;
    }
    wk_clear_error();
    if (!parse(g)) {
        if (wk_last_status() == WK_OK) wk_error_set(WK_ERR_IO, "%s: cannot parse", g->map.path);
        else if (wk_last_status() == WK_ERR_MEMORY) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", wk_last_error());
            wk_error_set(WK_ERR_MEMORY, "%s: %s", g->map.path, msg);
        }
        wk_gguf_close(g);
        return NULL;
    }
    return g;
}

WK_MODEL_API void wk_gguf_close(wk_gguf *g)
{
    if (!g) return;
    wk_strtab_free(&g->ktab);
    wk_strtab_free(&g->ttab);
    wk_arena_free(&g->arena);
    wk_map_close(&g->map);
    free(g);
}

WK_MODEL_API const char *wk_gguf_path(const wk_gguf *g) { return g ? g->map.path : NULL; }
WK_MODEL_API uint32_t wk_gguf_version(const wk_gguf *g) { return g ? g->version : 0; }
WK_MODEL_API uint32_t wk_gguf_alignment(const wk_gguf *g) { return g ? g->alignment : 0; }
WK_MODEL_API uint64_t wk_gguf_data_offset(const wk_gguf *g) { return g ? g->data_offset : 0; }
WK_MODEL_API uint64_t wk_gguf_file_size(const wk_gguf *g) { return g ? g->map.size : 0; }

/* ---- metadata ------------------------------------------------------------------------ */

WK_MODEL_API int64_t wk_gguf_kv_count(const wk_gguf *g) { return g ? g->n_kv : 0; }

WK_MODEL_API const char *wk_gguf_kv_key(const wk_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_kv ? g->keys[i] : NULL;
}

WK_MODEL_API const wk_gguf_value *wk_gguf_kv_value(const wk_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_kv ? &g->values[i] : NULL;
}

WK_MODEL_API const wk_gguf_value *wk_gguf_find(const wk_gguf *g, const char *key)
{
    if (!g || !key) return NULL;
    int64_t i = wk_strtab_find(&g->ktab, g->keys, g->klens, key, strlen(key));
    return i < 0 ? NULL : &g->values[i];
}

WK_MODEL_API wk_gguf_type wk_gguf_value_type(const wk_gguf_value *v) { return v ? v->type : WK_GGUF_TYPE_COUNT; }

static bool is_signed(wk_gguf_type t) { return t == WK_GGUF_I8 || t == WK_GGUF_I16 || t == WK_GGUF_I32 || t == WK_GGUF_I64; }
static bool is_unsigned(wk_gguf_type t) { return t == WK_GGUF_U8 || t == WK_GGUF_U16 || t == WK_GGUF_U32 || t == WK_GGUF_U64; }

/* element i of a scalar array, widened into a value */
static void array_elem(const wk_gguf_value *v, uint64_t i, wk_gguf_value *e)
{
    memset(e, 0, sizeof *e);
    e->type = v->elem;
    const unsigned char *q = v->data + i * scalar_size(v->elem);
    switch (v->elem) {
    case WK_GGUF_U8: case WK_GGUF_BOOL: e->s.u = q[0]; break;
    case WK_GGUF_I8: e->s.i = (int8_t)q[0]; break;
    case WK_GGUF_U16: e->s.u = wk_ld16(q); break;
    case WK_GGUF_I16: e->s.i = (int16_t)wk_ld16(q); break;
    case WK_GGUF_U32: e->s.u = wk_ld32(q); break;
    case WK_GGUF_I32: e->s.i = (int32_t)wk_ld32(q); break;
    case WK_GGUF_U64: e->s.u = wk_ld64(q); break;
    case WK_GGUF_I64: e->s.i = (int64_t)wk_ld64(q); break;
    case WK_GGUF_F32: {
        float f;
        memcpy(&f, q, 4);
        e->s.f = f;
        break;
    }
    case WK_GGUF_F64: memcpy(&e->s.f, q, 8); break;
    default: break;
    }
}

WK_MODEL_API bool wk_gguf_value_int(const wk_gguf_value *v, int64_t *out)
{
    if (!v) return false;
    if (is_signed(v->type)) {
        if (out) *out = v->s.i;
        return true;
    }
    if (is_unsigned(v->type) && v->s.u <= (uint64_t)INT64_MAX) {
        if (out) *out = (int64_t)v->s.u;
        return true;
    }
    return false;
}

WK_MODEL_API bool wk_gguf_value_uint(const wk_gguf_value *v, uint64_t *out)
{
    if (!v) return false;
    if (is_unsigned(v->type) || (is_signed(v->type) && v->s.i >= 0)) {
        if (out) *out = v->s.u;
        return true;
    }
    return false;
}

WK_MODEL_API bool wk_gguf_value_float(const wk_gguf_value *v, double *out)
{
    if (!v || (v->type != WK_GGUF_F32 && v->type != WK_GGUF_F64)) return false;
    if (out) *out = v->s.f;
    return true;
}

WK_MODEL_API bool wk_gguf_value_bool(const wk_gguf_value *v, bool *out)
{
    if (!v || v->type != WK_GGUF_BOOL) return false;
    if (out) *out = v->s.u != 0;
    return true;
}

WK_MODEL_API const char *wk_gguf_value_str(const wk_gguf_value *v, size_t *len)
{
    if (!v || v->type != WK_GGUF_STRING) return NULL;
    if (len) *len = v->len;
    return v->str;
}

WK_MODEL_API wk_gguf_type wk_gguf_array_type(const wk_gguf_value *v)
{
    return v && v->type == WK_GGUF_ARRAY ? v->elem : WK_GGUF_TYPE_COUNT;
}

WK_MODEL_API uint64_t wk_gguf_array_len(const wk_gguf_value *v) { return v && v->type == WK_GGUF_ARRAY ? v->n : 0; }

static bool scalar_at(const wk_gguf_value *v, uint64_t i, wk_gguf_value *e)
{
    if (!v || v->type != WK_GGUF_ARRAY || i >= v->n || !v->data) return false;
    array_elem(v, i, e);
    return true;
}

WK_MODEL_API bool wk_gguf_array_int(const wk_gguf_value *v, uint64_t i, int64_t *out)
{
    wk_gguf_value e;
    return scalar_at(v, i, &e) && wk_gguf_value_int(&e, out);
}

WK_MODEL_API bool wk_gguf_array_uint(const wk_gguf_value *v, uint64_t i, uint64_t *out)
{
    wk_gguf_value e;
    return scalar_at(v, i, &e) && wk_gguf_value_uint(&e, out);
}

WK_MODEL_API bool wk_gguf_array_float(const wk_gguf_value *v, uint64_t i, double *out)
{
    wk_gguf_value e;
    return scalar_at(v, i, &e) && wk_gguf_value_float(&e, out);
}

WK_MODEL_API bool wk_gguf_array_bool(const wk_gguf_value *v, uint64_t i, bool *out)
{
    wk_gguf_value e;
    return scalar_at(v, i, &e) && wk_gguf_value_bool(&e, out);
}

WK_MODEL_API const char *wk_gguf_array_str(const wk_gguf_value *v, uint64_t i, size_t *len)
{
    if (!v || v->type != WK_GGUF_ARRAY || v->elem != WK_GGUF_STRING || i >= v->n) return NULL;
    if (len) *len = v->lens[i];
    return v->strs[i];
}

WK_MODEL_API const wk_gguf_value *wk_gguf_array_at(const wk_gguf_value *v, uint64_t i)
{
    if (!v || v->type != WK_GGUF_ARRAY || v->elem != WK_GGUF_ARRAY || i >= v->n) return NULL;
    return &v->arr[i];
}

WK_MODEL_API const void *wk_gguf_array_data(const wk_gguf_value *v)
{
    if (!v || v->type != WK_GGUF_ARRAY || v->elem == WK_GGUF_STRING || v->elem == WK_GGUF_ARRAY) return NULL;
    return v->data ? (const void *)v->data : (const void *)"";
}

/* ---- typed look-ups ----------------------------------------------------------------- */

static wk_status get_value(const wk_gguf *g, const char *key, const wk_gguf_value **v)
{
    if (!g || !key) return wk_error_set(WK_ERR_ARGUMENT, "gguf: NULL %s", g ? "key" : "file");
    *v = wk_gguf_find(g, key);
    if (!*v) return wk_error_set(WK_ERR_ARGUMENT, "%s: metadata key '%s' is missing", g->map.path, key);
    return WK_OK;
}

static wk_status wrong_type(const wk_gguf *g, const char *key, const wk_gguf_value *v, const char *want)
{
    if (v->type == WK_GGUF_ARRAY)
        return wk_error_set(WK_ERR_DTYPE, "%s: metadata key '%s' is an array of %s, expected %s", g->map.path, key,
                       wk_gguf_type_name(v->elem), want);
    return wk_error_set(WK_ERR_DTYPE, "%s: metadata key '%s' is of type %s, expected %s", g->map.path, key,
                   wk_gguf_type_name(v->type), want);
}

WK_MODEL_API wk_status wk_gguf_get_int(const wk_gguf *g, const char *key, int64_t *out)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    if (!wk_gguf_value_int(v, out))
        return is_unsigned(v->type) ? wk_error_set(WK_ERR_DTYPE, "%s: metadata key '%s' holds %" PRIu64 ", which does not fit int64",
                                              g->map.path, key, v->s.u)
                                    : wrong_type(g, key, v, "an integer");
    return WK_OK;
}

WK_MODEL_API wk_status wk_gguf_get_uint(const wk_gguf *g, const char *key, uint64_t *out)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    if (!wk_gguf_value_uint(v, out))
        return is_signed(v->type) ? wk_error_set(WK_ERR_DTYPE, "%s: metadata key '%s' holds %" PRId64 ", which is negative",
                                            g->map.path, key, v->s.i)
                                  : wrong_type(g, key, v, "an unsigned integer");
    return WK_OK;
}

WK_MODEL_API wk_status wk_gguf_get_float(const wk_gguf *g, const char *key, double *out)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    if (wk_gguf_value_float(v, out)) return WK_OK;
    if (is_signed(v->type)) {
        if (out) *out = (double)v->s.i;
        return WK_OK;
    }
    if (is_unsigned(v->type)) {
        if (out) *out = (double)v->s.u;
        return WK_OK;
    }
    return wrong_type(g, key, v, "a number");
}

WK_MODEL_API wk_status wk_gguf_get_bool(const wk_gguf *g, const char *key, bool *out)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    if (!wk_gguf_value_bool(v, out)) return wrong_type(g, key, v, "a bool");
    return WK_OK;
}

WK_MODEL_API wk_status wk_gguf_get_str(const wk_gguf *g, const char *key, const char **out, size_t *len)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    const char *s = wk_gguf_value_str(v, len);
    if (!s) return wrong_type(g, key, v, "a string");
    if (out) *out = s;
    return WK_OK;
}

WK_MODEL_API wk_status wk_gguf_get_array(const wk_gguf *g, const char *key, wk_gguf_type *elem_type, uint64_t *len,
                                         const wk_gguf_value **arr)
{
    const wk_gguf_value *v;
    wk_status st = get_value(g, key, &v);
    if (st) return st;
    if (v->type != WK_GGUF_ARRAY) return wrong_type(g, key, v, "an array");
    if (elem_type) *elem_type = v->elem;
    if (len) *len = v->n;
    if (arr) *arr = v;
    return WK_OK;
}

/* ---- tensors --------------------------------------------------------------------------- */

WK_MODEL_API int64_t wk_gguf_tensor_count(const wk_gguf *g) { return g ? g->n_tensors : 0; }

WK_MODEL_API const wk_file_tensor *wk_gguf_tensor_info(const wk_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

WK_MODEL_API int64_t wk_gguf_tensor_index(const wk_gguf *g, const char *name)
{
    if (!g || !name) return -1;
    return wk_strtab_find(&g->ttab, g->tnames, NULL, name, strlen(name));
}

WK_MODEL_API wk_tensor *wk_gguf_tensor(const wk_gguf *g, const char *name, wk_device *dev)
{
    if (!g || !name) {
        wk_error_set(WK_ERR_ARGUMENT, "gguf: NULL %s", g ? "tensor name" : "file");
        return NULL;
    }
    int64_t i = wk_gguf_tensor_index(g, name);
    if (i < 0) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: no tensor named '%s'", g->map.path, name);
        return NULL;
    }
    return wk_file_tensor_load(&g->tensors[i], dev);
}

WK_MODEL_API wk_status wk_gguf_load_all(const wk_gguf *g, wk_device *dev, wk_progress_mode mode, wk_tensor **out)
{
    if (!g) return wk_error_set(WK_ERR_ARGUMENT, "gguf: NULL file");
    int64_t n = g->n_tensors;
    const wk_file_tensor **infos = malloc((size_t)(n ? n : 1) * sizeof *infos);
    if (!infos) return wk_error_set(WK_ERR_MEMORY, "%s: out of memory", g->map.path);
    for (int64_t i = 0; i < n; i++) infos[i] = &g->tensors[i];
    wk_status st = wk_file_tensors_load(infos, n, dev, mode, wk_path_base(g->map.path), out);
    free(infos);
    return st;
}

/* ---- the writer --------------------------------------------------------------------------- */

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void wb_put(wbuf *b, const void *src, size_t n)
{
    if (b->oom) return;
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void wb_u32(wbuf *b, uint32_t v) { wb_put(b, &v, 4); }
static void wb_u64(wbuf *b, uint64_t v) { wb_put(b, &v, 8); }
static void wb_str(wbuf *b, const char *s, size_t len)
{
    wb_u64(b, len);
    wb_put(b, s, len);
}

typedef struct wkv {
    char *key;
    wbuf val;   /* type u32 + value, as written */
} wkv;

typedef struct wten {
    char *name;
    wk_dtype dt;
    wk_shape shape;
    uint32_t ggml;
    uint64_t nbytes;
    wk_tensor *t;            /* or data */
    const void *data;
} wten;

struct wk_gguf_writer {
    uint32_t alignment;
    wkv *kv;
    size_t nkv, capkv;
    wten *ten;
    size_t nten, capten;
};

WK_MODEL_API wk_gguf_writer *wk_gguf_writer_new(void)
{
    wk_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory");
        return NULL;
    }
    w->alignment = 32;
    return w;
}

WK_MODEL_API void wk_gguf_writer_free(wk_gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->nkv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val.p);
    }
    for (size_t i = 0; i < w->nten; i++) {
        free(w->ten[i].name);
        wk_release(w->ten[i].t);
    }
    free(w->kv);
    free(w->ten);
    free(w);
}

/* Stores key = the serialised value in b (taken over); replaces an existing key in place. */
static wk_status put_kv(wk_gguf_writer *w, const char *key, wbuf *b)
{
    if (b->oom) {
        free(b->p);
        return wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory for the value of '%s'", key);
    }
    for (size_t i = 0; i < w->nkv; i++)
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].val.p);
            w->kv[i].val = *b;
            return WK_OK;
        }
    if (w->nkv == w->capkv) {
        size_t cap = w->capkv ? 2 * w->capkv : 16;
        wkv *k = realloc(w->kv, cap * sizeof *k);
        if (!k) {
            free(b->p);
            return wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory");
        }
        w->kv = k;
        w->capkv = cap;
    }
    char *kc = strdup(key);
    if (!kc) {
        free(b->p);
        return wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory");
    }
    w->kv[w->nkv].key = kc;
    w->kv[w->nkv].val = *b;
    w->nkv++;
    return WK_OK;
}

static wk_status check_wk(const wk_gguf_writer *w, const char *key)
{
    if (!w) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL writer");
    if (!key) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL key");
    return WK_OK;
}

static wk_status set_scalar(wk_gguf_writer *w, const char *key, wk_gguf_type t, const void *v)
{
    wk_status st = check_wk(w, key);
    if (st) return st;
    wbuf b = { 0 };
    wb_u32(&b, (uint32_t)t);
    wb_put(&b, v, (size_t)scalar_size(t));
    return put_kv(w, key, &b);
}

WK_MODEL_API wk_status wk_gguf_writer_set_u8(wk_gguf_writer *w, const char *key, uint8_t v) { return set_scalar(w, key, WK_GGUF_U8, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_i8(wk_gguf_writer *w, const char *key, int8_t v) { return set_scalar(w, key, WK_GGUF_I8, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_u16(wk_gguf_writer *w, const char *key, uint16_t v) { return set_scalar(w, key, WK_GGUF_U16, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_i16(wk_gguf_writer *w, const char *key, int16_t v) { return set_scalar(w, key, WK_GGUF_I16, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_u32(wk_gguf_writer *w, const char *key, uint32_t v) { return set_scalar(w, key, WK_GGUF_U32, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_i32(wk_gguf_writer *w, const char *key, int32_t v) { return set_scalar(w, key, WK_GGUF_I32, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_u64(wk_gguf_writer *w, const char *key, uint64_t v) { return set_scalar(w, key, WK_GGUF_U64, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_i64(wk_gguf_writer *w, const char *key, int64_t v) { return set_scalar(w, key, WK_GGUF_I64, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_f32(wk_gguf_writer *w, const char *key, float v) { return set_scalar(w, key, WK_GGUF_F32, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_f64(wk_gguf_writer *w, const char *key, double v) { return set_scalar(w, key, WK_GGUF_F64, &v); }
WK_MODEL_API wk_status wk_gguf_writer_set_bool(wk_gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    return set_scalar(w, key, WK_GGUF_BOOL, &b);
}

WK_MODEL_API wk_status wk_gguf_writer_set_strn(wk_gguf_writer *w, const char *key, const char *v, size_t len)
{
    wk_status st = check_wk(w, key);
    if (st) return st;
    if (!v && len) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': NULL string", key);
    wbuf b = { 0 };
    wb_u32(&b, WK_GGUF_STRING);
    wb_str(&b, v ? v : "", len);
    return put_kv(w, key, &b);
}

WK_MODEL_API wk_status wk_gguf_writer_set_str(wk_gguf_writer *w, const char *key, const char *v)
{
    if (w && key && !v) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': NULL string", key);
    return wk_gguf_writer_set_strn(w, key, v, v ? strlen(v) : 0);
}

WK_MODEL_API wk_status wk_gguf_writer_set_alignment(wk_gguf_writer *w, uint32_t alignment)
{
    if (!w) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL writer");
    if (alignment == 0 || (alignment & (alignment - 1)))
        return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: alignment %" PRIu32 " is not a power of two", alignment);
    wk_status st = wk_gguf_writer_set_u32(w, "general.alignment", alignment);
    if (st == WK_OK) w->alignment = alignment;
    return st;
}

WK_MODEL_API wk_status wk_gguf_writer_set_array(wk_gguf_writer *w, const char *key, wk_gguf_type et, const void *data,
                                                uint64_t n)
{
    wk_status st = check_wk(w, key);
    if (st) return st;
    if ((unsigned)et >= WK_GGUF_TYPE_COUNT || et == WK_GGUF_ARRAY)
        return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': arrays of %s cannot be set (copy nested arrays with "
                       "wk_gguf_writer_copy_kv)", key, wk_gguf_type_name(et));
    if (n && !data) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': NULL data for %" PRIu64 " elements", key, n);
    wbuf b = { 0 };
    wb_u32(&b, WK_GGUF_ARRAY);
    wb_u32(&b, (uint32_t)et);
    wb_u64(&b, n);
    if (et == WK_GGUF_STRING) {
        const char *const *s = data;
        for (uint64_t i = 0; i < n; i++) {
            if (!s[i]) {
                free(b.p);
                return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': string %" PRIu64 " is NULL", key, i);
            }
            wb_str(&b, s[i], strlen(s[i]));
        }
    } else if (et == WK_GGUF_BOOL) {
        const bool *bv = data;
        for (uint64_t i = 0; i < n; i++) {
            uint8_t x = bv[i] ? 1 : 0;
            wb_put(&b, &x, 1);
        }
    } else {
        uint64_t bytes;
        if (!wk_mul_u64(n, scalar_size(et), &bytes) || bytes > SIZE_MAX) {
            free(b.p);
            return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: '%s': %" PRIu64 " elements are too many", key, n);
        }
        wb_put(&b, data, (size_t)bytes);
    }
    return put_kv(w, key, &b);
}

static void ser_array(wbuf *b, const wk_gguf_value *v)
{
    wb_u32(b, (uint32_t)v->elem);
    wb_u64(b, v->n);
    if (v->elem == WK_GGUF_STRING) {
        for (uint64_t i = 0; i < v->n; i++) wb_str(b, v->strs[i], v->lens[i]);
    } else if (v->elem == WK_GGUF_ARRAY) {
        for (uint64_t i = 0; i < v->n; i++) ser_array(b, &v->arr[i]);
    } else {
        wb_put(b, v->data, (size_t)(v->n * scalar_size(v->elem)));
    }
}

WK_MODEL_API wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *src, const char *key)
{
    wk_status st = check_wk(w, key);
    if (st) return st;
    if (!src) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL source file");
    const wk_gguf_value *v = wk_gguf_find(src, key);
    if (!v) return wk_error_set(WK_ERR_ARGUMENT, "%s: metadata key '%s' is missing", src->map.path, key);
    wbuf b = { 0 };
    wb_u32(&b, (uint32_t)v->type);
    if (v->type == WK_GGUF_STRING) {
        wb_str(&b, v->str, v->len);
    } else if (v->type == WK_GGUF_ARRAY) {
        ser_array(&b, v);
    } else {
        /* the value as the file has it: re-encode from the widened union */
        unsigned char tmp[8];
        switch (v->type) {
        case WK_GGUF_F32: {
            float f = (float)v->s.f;
            memcpy(tmp, &f, 4);
            break;
        }
        case WK_GGUF_F64: memcpy(tmp, &v->s.f, 8); break;
        default: memcpy(tmp, &v->s.u, 8); break;   /* little-endian: the low bytes are the value */
        }
        wb_put(&b, tmp, (size_t)scalar_size(v->type));
    }
    if (strcmp(key, "general.alignment") == 0 && v->type == WK_GGUF_U32) w->alignment = (uint32_t)v->s.u;
    return put_kv(w, key, &b);
}

static wk_status add_tensor(wk_gguf_writer *w, const char *name, wk_dtype dt, wk_shape shape, wk_tensor *t,
                            const void *data)
{
    if (!w) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL writer");
    if (!name) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL tensor name");
    uint32_t gt;
    if (!wk_dtype_ggml_type(dt, &gt))
        return wk_error_set(WK_ERR_DTYPE, "gguf writer: tensor '%s': GGUF has no type for wick's %s", name, wk_dtype_name(dt));
    if (shape.rank < 0 || shape.rank > 4)
        return wk_error_set(WK_ERR_SHAPE, "gguf writer: tensor '%s' has rank %d (GGUF tensors have at most 4 dims)", name,
                       shape.rank);
    uint64_t numel = 1;
    for (int d = 0; d < shape.rank; d++) {
        if (shape.dims[d] < 0 || !wk_mul_u64(numel, (uint64_t)shape.dims[d], &numel))
            return wk_error_set(WK_ERR_SHAPE, "gguf writer: tensor '%s': bad dim %d (%" PRId64 ")", name, d, shape.dims[d]);
    }
    const ggml_type_info *ti = ggml_info(gt);
    uint64_t nbytes;
    if ((shape.rank > 0 && shape.dims[shape.rank - 1] % ti->block) || !wk_block_bytes(numel, ti->block, ti->bytes, &nbytes))
        return wk_error_set(WK_ERR_SHAPE, "gguf writer: tensor '%s': a %s row must be whole blocks of %" PRIu32
                       " elements (shape has %" PRIu64 " elements)", name, ti->name, ti->block, numel);
    for (size_t i = 0; i < w->nten; i++)
        if (strcmp(w->ten[i].name, name) == 0)
            return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: a tensor named '%s' was added already", name);
    if (nbytes && !t && !data) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: tensor '%s': NULL data", name);
    if (w->nten == w->capten) {
        size_t cap = w->capten ? 2 * w->capten : 16;
        wten *n = realloc(w->ten, cap * sizeof *n);
        if (!n) return wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory");
        w->ten = n;
        w->capten = cap;
    }
    char *nc = strdup(name);
    if (!nc) return wk_error_set(WK_ERR_MEMORY, "gguf writer: out of memory");
    w->ten[w->nten] = (wten){ .name = nc, .dt = dt, .shape = shape, .ggml = gt, .nbytes = nbytes,
                              .t = t ? wk_retain(t) : NULL, .data = data };
    w->nten++;
    return WK_OK;
}

WK_MODEL_API wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, const wk_tensor *t)
{
    if (!t) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: tensor '%s' is NULL", name ? name : "(null)");
    return add_tensor(w, name, wk_tensor_dtype(t), wk_tensor_shape(t), (wk_tensor *)t, NULL);
}

WK_MODEL_API wk_status wk_gguf_writer_add_data(wk_gguf_writer *w, const char *name, wk_dtype dt, wk_shape shape,
                                               const void *data)
{
    return add_tensor(w, name, dt, shape, NULL, data);
}

static bool write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }

static bool write_pad(FILE *f, uint64_t pos, uint64_t align)
{
    static const unsigned char zeros[256];
    uint64_t pad = (align - pos % align) % align;
    while (pad) {
        size_t k = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
        if (!write_all(f, zeros, k)) return false;
        pad -= k;
    }
    return true;
}

WK_MODEL_API wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path)
{
    if (!w || !path) return wk_error_set(WK_ERR_ARGUMENT, "gguf writer: NULL %s", w ? "path" : "writer");
    uint64_t a = w->alignment;
    /* header and infos in memory */
    wbuf h = { 0 };
    wb_put(&h, "GGUF", 4);
    wb_u32(&h, 3);
    wb_u64(&h, w->nten);
    wb_u64(&h, w->nkv);
    for (size_t i = 0; i < w->nkv; i++) {
        wb_str(&h, w->kv[i].key, strlen(w->kv[i].key));
        wb_put(&h, w->kv[i].val.p, w->kv[i].val.n);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->nten; i++) {
        const wten *t = &w->ten[i];
        wb_str(&h, t->name, strlen(t->name));
        wb_u32(&h, (uint32_t)t->shape.rank);
        for (int d = t->shape.rank - 1; d >= 0; d--) wb_u64(&h, (uint64_t)t->shape.dims[d]);
        wb_u32(&h, t->ggml);
        wb_u64(&h, off);
        off += t->nbytes;
        off += (a - off % a) % a;
    }
    if (h.oom) {
        free(h.p);
        return wk_error_set(WK_ERR_MEMORY, "%s: out of memory for the header", path);
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(h.p);
        return wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        wk_status st = wk_error_set(WK_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(h.p);
        free(tmp);
        return st;
    }
    wk_status st = WK_OK;
    if (!write_all(f, h.p, h.n) || !write_pad(f, h.n, a)) st = wk_error_set(WK_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    free(h.p);
    void *buf = NULL;
    size_t bufcap = 0;
    for (size_t i = 0; i < w->nten && st == WK_OK; i++) {
        const wten *t = &w->ten[i];
        const void *src = t->data;
        if (t->t) {
            if (t->nbytes > SIZE_MAX) {
                st = wk_error_set(WK_ERR_MEMORY, "%s: tensor '%s' is too large", path, t->name);
                break;
            }
            if (bufcap < t->nbytes) {
                free(buf);
                bufcap = (size_t)t->nbytes;
                buf = malloc(bufcap ? bufcap : 1);
                if (!buf) {
                    bufcap = 0;
                    st = wk_error_set(WK_ERR_MEMORY, "%s: out of memory for tensor '%s' (%" PRIu64 " bytes)", path, t->name,
                                 t->nbytes);
                    break;
                }
            }
            wk_clear_error();
            if (t->nbytes && wk_to_host(t->t, buf, (size_t)t->nbytes) != WK_OK) {
                st = wk_error_wrap("%s: reading tensor '%s' back", path, t->name);
                break;
            }
            src = buf;
        }
        if (!write_all(f, src, (size_t)t->nbytes) || !write_pad(f, t->nbytes, a))
            st = wk_error_set(WK_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    }
    free(buf);
    if (fclose(f) != 0 && st == WK_OK) st = wk_error_set(WK_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
    if (st == WK_OK && rename(tmp, path) != 0) st = wk_error_set(WK_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (st != WK_OK) remove(tmp);
    free(tmp);
    return st;
}
