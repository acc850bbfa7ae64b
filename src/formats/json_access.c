/* json_access.c — reading a parsed JSON document (json.c): kinds, counts,
 * elements and members, the objects' member tables (built as the parser
 * closes an object, searched by every look-up), scalars, dotted paths, the
 * document's name, and freeing it. */
#include <math.h>
#include <stdlib.h>
#include "json_internal.h"

/* ---- an object's member table ---------------------------------------------- */

int64_t wk_json_obj_find(const wk_json *o, const char *key, size_t klen)
{
    if (o->slots) {
        size_t mask = o->cap - 1, j = (size_t)wk_str_hash(key, klen) & mask;
        for (;;) {
            uint32_t s = o->slots[j];
            if (!s) return -1;
            size_t i = s - 1;
            if (o->klens[i] == klen && memcmp(o->keys[i], key, klen) == 0) return (int64_t)i;
            j = (j + 1) & mask;
        }
    }
    for (size_t i = 0; i < o->n; i++)
        if (o->klens[i] == klen && memcmp(o->keys[i], key, klen) == 0) return (int64_t)i;
    return -1;
}


bool wk_json_obj_index(wk_arena *a, wk_json *o, int64_t *dup)
{
    size_t n = o->n;
    *dup = -1;
    if (n > 8) {
        size_t cap = 16;
        while (cap < 2 * n) cap *= 2;
        o->slots = wk_arena_alloc(a, cap * sizeof *o->slots);
        if (!o->slots) return false;
        o->cap = cap;
        for (size_t i = 0; i < n && *dup < 0; i++) {
            size_t j = (size_t)wk_str_hash(o->keys[i], o->klens[i]) & (cap - 1);
            for (;;) {
                uint32_t s = o->slots[j];
                if (!s) {
                    o->slots[j] = (uint32_t)(i + 1);
                    break;
                }
                size_t k = s - 1;
                if (o->klens[k] == o->klens[i] && memcmp(o->keys[k], o->keys[i], o->klens[i]) == 0) {
                    *dup = (int64_t)i;
                    break;
                }
                j = (j + 1) & (cap - 1);
            }
        }
    } else {
        for (size_t i = 1; i < n && *dup < 0; i++)
            for (size_t k = 0; k < i; k++)
                if (o->klens[k] == o->klens[i] && memcmp(o->keys[k], o->keys[i], o->klens[i]) == 0) {
                    *dup = (int64_t)i;
                    break;
                }
    }
    return true;
}

/* ---- the document ---------------------------------------------------------- */

WK_MODEL_API void wk_json_free(wk_json *root)
{
    if (!root) return;
    json_doc *doc = root->doc;
    if (doc->root != root) return;   /* not a document's root: it lives as long as its root */
    wk_arena_free(&doc->arena);
    free(doc->name);
    free(doc);
}

/* ---- reading ------------------------------------------------------------- */

WK_MODEL_API wk_json_type wk_json_kind(const wk_json *v) { return v ? v->kind : WK_JSON_NULL; }

WK_MODEL_API size_t wk_json_count(const wk_json *v)
{
    return v && (v->kind == WK_JSON_ARRAY || v->kind == WK_JSON_OBJECT) ? v->n : 0;
}

WK_MODEL_API const wk_json *wk_json_item(const wk_json *v, size_t i)
{
    if (!v || (v->kind != WK_JSON_ARRAY && v->kind != WK_JSON_OBJECT) || i >= v->n) return NULL;
    return v->items[i];
}

WK_MODEL_API const char *wk_json_key(const wk_json *v, size_t i, size_t *len)
{
    if (!v || v->kind != WK_JSON_OBJECT || i >= v->n) return NULL;
    if (len) *len = v->klens[i];
    return v->keys[i];
}

WK_MODEL_API const wk_json *wk_json_get(const wk_json *obj, const char *key)
{
    if (!obj || obj->kind != WK_JSON_OBJECT || !key) return NULL;
    int64_t i = wk_json_obj_find(obj, key, strlen(key));
    return i < 0 ? NULL : obj->items[i];
}

WK_MODEL_API const char *wk_json_string(const wk_json *v, size_t *len)
{
    if (!v || v->kind != WK_JSON_STRING) return NULL;
    if (len) *len = v->len;
    return v->s;
}

WK_MODEL_API bool wk_json_number(const wk_json *v, double *out)
{
    if (!v || v->kind != WK_JSON_NUMBER) return false;
    if (out) *out = v->num;
    return true;
}

WK_MODEL_API bool wk_json_int(const wk_json *v, int64_t *out)
{
    if (!v || v->kind != WK_JSON_NUMBER) return false;
    if (v->is_int) {
        if (out) *out = v->i;
        return true;
    }
    double d = v->num;
    if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    if (out) *out = (int64_t)d;
    return true;
}

WK_MODEL_API bool wk_json_bool(const wk_json *v, bool *out)
{
    if (!v || v->kind != WK_JSON_BOOL) return false;
    if (out) *out = v->b;
    return true;
}

WK_MODEL_API const wk_json *wk_json_path(const wk_json *root, const char *path)
{
    if (!root || !path) return NULL;
    const wk_json *v = root;
    const char *p = path;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!v || v->kind != WK_JSON_OBJECT) return NULL;
        int64_t i = wk_json_obj_find(v, p, n);
        if (i < 0) return NULL;
        v = v->items[i];
        if (!dot) return v;
        p = dot + 1;
    }
}

WK_MODEL_API const char *wk_json_doc_name(const wk_json *v) { return v ? v->doc->name : ""; }

