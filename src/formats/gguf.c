/* gguf.c — reading GGUF files (v2 and v3): the ggml type table, the
 * parser, the handle and its tensors. Metadata values are read in
 * gguf_meta.c, files are written by gguf_writer.c.
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
 * end of the file, and no two tensors' bytes may overlap. Every failure is
 * WK_ERR_IO naming the file, the field (with the key or tensor it belongs
 * to) and the value.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "gguf_internal.h"

/* ---- ggml types ----------------------------------------------------------- */

#define NO WK_DTYPE_COUNT
static const ggml_type_info GGML_TYPES[] = {
    [0] = { "F32", 1, 4, WK_F32 },              [1] = { "F16", 1, 2, WK_F16 },
    [2] = { "Q4_0", 32, 18, WK_Q4_0 },          [3] = { "Q4_1", 32, 20, WK_Q4_1 },
    [4] = { "Q4_2", 0, 0, NO },                 [5] = { "Q4_3", 0, 0, NO },
    [6] = { "Q5_0", 32, 22, WK_Q5_0 },          [7] = { "Q5_1", 32, 24, WK_Q5_1 },
    [8] = { "Q8_0", 32, 34, WK_Q8_0 },          [9] = { "Q8_1", 32, 36, WK_Q8_1 },
    [10] = { "Q2_K", 256, 84, WK_Q2_K },        [11] = { "Q3_K", 256, 110, WK_Q3_K },
    [12] = { "Q4_K", 256, 144, WK_Q4_K },       [13] = { "Q5_K", 256, 176, WK_Q5_K },
    [14] = { "Q6_K", 256, 210, WK_Q6_K },       [15] = { "Q8_K", 256, 292, WK_Q8_K },
    [16] = { "IQ2_XXS", 256, 66, WK_IQ2_XXS },  [17] = { "IQ2_XS", 256, 74, WK_IQ2_XS },
    [18] = { "IQ3_XXS", 256, 98, WK_IQ3_XXS },  [19] = { "IQ1_S", 256, 50, WK_IQ1_S },
    [20] = { "IQ4_NL", 32, 18, WK_IQ4_NL },     [21] = { "IQ3_S", 256, 110, WK_IQ3_S },
    [22] = { "IQ2_S", 256, 82, WK_IQ2_S },      [23] = { "IQ4_XS", 256, 136, WK_IQ4_XS },
    [24] = { "I8", 1, 1, NO },                  [25] = { "I16", 1, 2, WK_I16 },
    [26] = { "I32", 1, 4, WK_I32 },             [27] = { "I64", 1, 8, WK_I64 },
    [28] = { "F64", 1, 8, WK_F64 },             [29] = { "IQ1_M", 256, 56, WK_IQ1_M },
    [30] = { "BF16", 1, 2, WK_BF16 },           [31] = { "Q4_0_4_4", 0, 0, NO },
    [32] = { "Q4_0_4_8", 0, 0, NO },            [33] = { "Q4_0_8_8", 0, 0, NO },
    [34] = { "TQ1_0", 256, 54, NO },            [35] = { "TQ2_0", 256, 66, NO },
    [36] = { "IQ4_NL_4_4", 0, 0, NO },          [37] = { "IQ4_NL_4_8", 0, 0, NO },
    [38] = { "IQ4_NL_8_8", 0, 0, NO },          [39] = { "MXFP4", 32, 17, NO },
    [40] = { "NVFP4", 64, 36, NO },             [41] = { "Q1_0", 128, 18, NO },
};
#undef NO
#define N_GGML_TYPES ((uint32_t)(sizeof GGML_TYPES / sizeof GGML_TYPES[0]))

const ggml_type_info *wk_ggml_info(uint32_t t) { return t < N_GGML_TYPES ? &GGML_TYPES[t] : NULL; }

WK_MODEL_API const char *wk_ggml_type_name(uint32_t t)
{
    static _Thread_local char buf[32];
    const ggml_type_info *i = wk_ggml_info(t);
    if (i) return i->name;
    snprintf(buf, sizeof buf, "type %" PRIu32, t);
    return buf;
}

WK_MODEL_API wk_dtype wk_ggml_type_dtype(uint32_t t)
{
    const ggml_type_info *i = wk_ggml_info(t);
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

uint64_t wk_gguf_scalar_size(wk_gguf_type t)
{
    switch (t) {
    case WK_GGUF_U8: case WK_GGUF_I8: case WK_GGUF_BOOL: return 1;
    case WK_GGUF_U16: case WK_GGUF_I16: return 2;
    case WK_GGUF_U32: case WK_GGUF_I32: case WK_GGUF_F32: return 4;
    case WK_GGUF_U64: case WK_GGUF_I64: case WK_GGUF_F64: return 8;
    default: return 0;
    }
}

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
    return wk_gguf_scalar_size(t);
}

static bool rd_value(rd *r, wk_gguf_type type, wk_gguf_value *v, int depth);

static bool rd_scalar(rd *r, wk_gguf_type type, wk_gguf_value *v)
{
    uint64_t sz = wk_gguf_scalar_size(type);
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

/* ---- the data section: no two tensors share a byte ------------------------------ */

typedef struct span { uint64_t off; int64_t i; } span;
static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->i < y->i ? -1 : 1;
}

/* Tensors whose bytes overlap are a corrupt file (a writer gives each its
 * own range): refused at open, naming both, rather than loading one
 * tensor's bytes as another's. Tensors of a type of unknown size (nbytes
 * 0) and empty ones take no bytes. */
static bool no_overlap(wk_gguf *g, rd *r)
{
    const int64_t n = g->tensors.n;
    if (n < 2) return true;
    span *sp = malloc((size_t)n * sizeof *sp);
    if (!sp) {
        wk_error_set(WK_ERR_MEMORY, "out of memory (%lld tensors)", (long long)n);
        return false;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (g->tensors.tensors[i].nbytes) sp[k++] = (span){ g->tensors.tensors[i].offset, i };
    qsort(sp, (size_t)k, sizeof *sp, cmp_span);
    bool ok = true;
    for (int64_t i = 1; i < k && ok; i++) {
        const wk_file_tensor *a = &g->tensors.tensors[sp[i - 1].i], *b = &g->tensors.tensors[sp[i].i];
        if (b->offset < a->offset + a->nbytes) {
            r->field[0] = 0;
            ok = bad(r, "tensor '%.120s' (%" PRIu64 " bytes at file offset %" PRIu64 ") overlaps tensor '%.120s' (%" PRIu64
                     " bytes at %" PRIu64 "): inconsistent tensor offsets", b->name, b->nbytes, b->offset, a->name,
                     a->nbytes, a->offset);
        }
    }
    free(sp);
    return ok;
}

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
    g->keys = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->keys);
    g->klens = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->klens);
    g->values = wk_arena_alloc(&g->arena, (size_t)(nkv + 1) * sizeof *g->values);
    if (!g->keys || !g->klens || !g->values || !wk_tensor_table_reserve(&g->tensors, (int64_t)nt)) return false;

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
        wk_file_tensor *t = wk_tensor_table_add(&g->tensors);
        if (!t) return false;
        set_field(r, "tensor %" PRIu64 ":", i);
        const char *nm;
        uint64_t nlen;
        if (!rd_str(r, "name", &nm, &nlen)) return false;
        t->name = wk_arena_strndup(&g->arena, nm, (size_t)nlen);
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
        if (!wk_ggml_info(ty)) {   /* the thread's buffer: keep a copy */
            t->type_name = wk_arena_strndup(&g->arena, t->type_name, strlen(t->type_name));
            if (!t->type_name) return false;
        }
        t->dtype = wk_ggml_type_dtype(ty);
        const ggml_type_info *ti = wk_ggml_info(ty);
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
    if (!wk_tensor_table_index(&g->tensors, &dup)) return false;
    r->field[0] = 0;
    if (dup >= 0) return bad(r, "tensor name '%.200s' appears twice (tensor %" PRId64 ")", g->tensors.names[dup], dup);

    /* the data section */
    uint64_t a = g->alignment, data = r->pos;
    if (data % a) data += a - data % a;
    g->data_offset = data;
    for (uint64_t i = 0; i < nt; i++) {
        wk_file_tensor *t = &g->tensors.tensors[i];
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
    return no_overlap(g, r);
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
    g->tensors.kind = "gguf";
    g->tensors.path = g->map.path;
    snprintf(g->tensors.label, sizeof g->tensors.label, "%s", wk_path_base(g->map.path));
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
    wk_tensor_table_free(&g->tensors);
    wk_arena_free(&g->arena);
    wk_map_close(&g->map);
    free(g);
}

WK_MODEL_API const char *wk_gguf_path(const wk_gguf *g) { return g ? g->map.path : NULL; }
WK_MODEL_API uint32_t wk_gguf_version(const wk_gguf *g) { return g ? g->version : 0; }
WK_MODEL_API uint32_t wk_gguf_alignment(const wk_gguf *g) { return g ? g->alignment : 0; }
WK_MODEL_API uint64_t wk_gguf_data_offset(const wk_gguf *g) { return g ? g->data_offset : 0; }
WK_MODEL_API uint64_t wk_gguf_file_size(const wk_gguf *g) { return g ? g->map.size : 0; }

/* ---- tensors (the table: file_tensor.c) -------------------------------------------- */

const wk_tensor_table *wk_gguf_tensor_table(const wk_gguf *g) { return g ? &g->tensors : NULL; }

WK_MODEL_API int64_t wk_gguf_tensor_count(const wk_gguf *g) { return wk_tensor_table_count(wk_gguf_tensor_table(g)); }

WK_MODEL_API const wk_file_tensor *wk_gguf_tensor_info(const wk_gguf *g, int64_t i)
{
    return wk_tensor_table_info(wk_gguf_tensor_table(g), i);
}

WK_MODEL_API int64_t wk_gguf_tensor_index(const wk_gguf *g, const char *name)
{
    return wk_tensor_table_find(wk_gguf_tensor_table(g), name);
}

WK_MODEL_API wk_tensor *wk_gguf_tensor(const wk_gguf *g, const char *name, wk_device *dev)
{
    return wk_tensor_table_load(wk_gguf_tensor_table(g), "gguf: NULL file", name, dev);
}

WK_MODEL_API wk_status wk_gguf_load_all(const wk_gguf *g, wk_device *dev, wk_progress_mode mode, wk_tensor **out)
{
    return wk_tensor_table_load_all(wk_gguf_tensor_table(g), "gguf: NULL file", dev, mode, out);
}
