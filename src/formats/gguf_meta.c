/* gguf_meta.c — a GGUF file's metadata: the pairs in file order, look-up
 * by key, scalar and array values (widened as the header says) and the
 * typed look-ups by key that model code uses. */
#include <inttypes.h>
#include <stdio.h>
#include "gguf_internal.h"

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
    const unsigned char *q = v->data + i * wk_gguf_scalar_size(v->elem);
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

