/* gguf_writer.c — writing GGUF files (v3).
 *
 * The writer keeps each metadata value serialised as it will be written
 * and each tensor as a wick tensor (retained) or host bytes, and writes a
 * v3 file to path.tmp, renamed over path when complete; every tensor's
 * data is aligned to general.alignment and the data section padded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "gguf_internal.h"

/* ---- the writer's buffers and state --------------------------------------------------------------------------- */

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
    wb_put(&b, v, (size_t)wk_gguf_scalar_size(t));
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
        if (!wk_mul_u64(n, wk_gguf_scalar_size(et), &bytes) || bytes > SIZE_MAX) {
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
        wb_put(b, v->data, (size_t)(v->n * wk_gguf_scalar_size(v->elem)));
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
        wb_put(&b, tmp, (size_t)wk_gguf_scalar_size(v->type));
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
    const ggml_type_info *ti = wk_ggml_info(gt);
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
    const wk_dtype dt = wk_tensor_dtype(t);
    if (dt == WK_DTYPE_COUNT) {   /* a released handle (debug builds): the accessor said so */
        wk_error_wrap("gguf writer: add_tensor '%s'", name ? name : "(null)");
        return wk_last_status();
    }
    return add_tensor(w, name, dt, wk_tensor_shape(t), (wk_tensor *)t, NULL);
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

