/* safetensors.c — safetensors files: one file, a sharded model
 * (model.safetensors.index.json and the shards it names) or a folder that
 * holds either.
 *
 * A file is a u64 header length N (at most 100 MB, the package's limit),
 * N bytes of JSON (an object: tensor name -> {"dtype", "shape",
 * "data_offsets": [begin, end]}, and an optional "__metadata__" object of
 * strings), then the data; offsets count from the end of the header. Checked as the safetensors package checks them: N
 * inside the file, the JSON strict (json.c), each entry's fields of the
 * right kinds, dims non-negative and their product without overflow, the
 * byte count equal to the elements times the dtype's size, and the tensors,
 * sorted by offset, covering the data exactly (no gap, no overlap, nothing
 * after the last one). Every failure is WK_ERR_IO naming the file, the
 * tensor or field, and the value.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "formats_internal.h"

typedef struct st_dtype {
    const char *name;
    uint32_t bits;            /* per element */
    wk_dtype dt;              /* WK_DTYPE_COUNT: wick has none */
} st_dtype;

static const st_dtype ST_DTYPES[] = {
    { "BOOL", 8, WK_U8 },         { "U8", 8, WK_U8 },           { "I8", 8, WK_DTYPE_COUNT },
    { "I16", 16, WK_I16 },        { "U16", 16, WK_DTYPE_COUNT }, { "I32", 32, WK_I32 },
    { "U32", 32, WK_U32 },        { "I64", 64, WK_I64 },        { "U64", 64, WK_DTYPE_COUNT },
    { "F16", 16, WK_F16 },        { "BF16", 16, WK_BF16 },      { "F32", 32, WK_F32 },
    { "F64", 64, WK_F64 },        { "F8_E4M3", 8, WK_F8E4M3 },  { "F8_E5M2", 8, WK_DTYPE_COUNT },
    { "F8_E8M0", 8, WK_DTYPE_COUNT }, { "F8_E4M3FNUZ", 8, WK_DTYPE_COUNT }, { "F8_E5M2FNUZ", 8, WK_DTYPE_COUNT },
    { "F6_E2M3", 6, WK_DTYPE_COUNT }, { "F6_E3M2", 6, WK_DTYPE_COUNT }, { "F4", 4, WK_DTYPE_COUNT },
    { "C64", 64, WK_DTYPE_COUNT },
};
#define N_ST_DTYPES (sizeof ST_DTYPES / sizeof ST_DTYPES[0])

static const st_dtype *st_find(const char *name)
{
    for (size_t i = 0; i < N_ST_DTYPES; i++)
        if (strcmp(ST_DTYPES[i].name, name) == 0) return &ST_DTYPES[i];
    return NULL;
}

WK_MODEL_API bool wk_safetensors_dtype(const char *name, wk_dtype *out)
{
    const st_dtype *d = name ? st_find(name) : NULL;
    if (!d || d->dt == WK_DTYPE_COUNT) return false;
    if (out) *out = d->dt;
    return true;
}

struct wk_safetensors {
    int nfiles;
    wk_map *maps;
    wk_arena arena;
    wk_tensor_table tensors;
    int64_t nmeta, capmeta;
    const char **mkeys, **mvals;
};

static bool grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) return true;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) {
        wk_error_set(WK_ERR_MEMORY, "safetensors: out of memory");
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

static int cmp_offset(const void *a, const void *b)
{
    const wk_file_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

static const char *kind_name(wk_json_type k)
{
    static const char *const n[] = { "null", "a boolean", "a number", "a string", "an array", "an object" };
    return (unsigned)k < 6 ? n[k] : "?";
}

/* A non-negative integer of a JSON value; false when it is not one. */
static bool json_u64(const wk_json *v, uint64_t *out)
{
    int64_t i;   /* integers past int64 are refused too: no file is that large */
    if (!wk_json_int(v, &i) || i < 0) return false;
    *out = (uint64_t)i;
    return true;
}

/* The entry of tensor `name` (the value v of the header). */
static bool parse_entry(wk_safetensors *s, const char *path, const char *name, const wk_json *v, uint64_t data_size,
                        uint64_t data_start)
{
    if (wk_json_kind(v) != WK_JSON_OBJECT) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': its header entry is %s, expected an object", path, name,
                kind_name(wk_json_kind(v)));
        return false;
    }
    const wk_json *dt = wk_json_get(v, "dtype"), *sh = wk_json_get(v, "shape"), *off = wk_json_get(v, "data_offsets");
    if (!dt || !sh || !off) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': its header entry has no \"%s\"", path, name,
                !dt ? "dtype" : !sh ? "shape" : "data_offsets");
        return false;
    }
    const char *dname = wk_json_string(dt, NULL);
    if (!dname) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': dtype is %s, expected a string", path, name, kind_name(wk_json_kind(dt)));
        return false;
    }
    const st_dtype *d = st_find(dname);
    if (!d) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': unknown dtype \"%.60s\"", path, name, dname);
        return false;
    }
    if (wk_json_kind(sh) != WK_JSON_ARRAY) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': shape is %s, expected an array", path, name, kind_name(wk_json_kind(sh)));
        return false;
    }
    size_t rank = wk_json_count(sh);
    if (rank > WK_MAX_RANK) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': shape has %zu dims (wick takes at most %d)", path, name, rank, WK_MAX_RANK);
        return false;
    }
    wk_file_tensor *t = wk_tensor_table_add(&s->tensors);
    if (!t) return false;
    t->shape.rank = (int)rank;
    uint64_t numel = 1;
    for (size_t i = 0; i < rank; i++) {
        uint64_t x;
        if (!json_u64(wk_json_item(sh, i), &x) || x > (uint64_t)INT64_MAX) {
            wk_error_set(WK_ERR_IO, "%s: tensor '%s': dim %zu of its shape is not a non-negative integer", path, name, i);
            return false;
        }
        t->shape.dims[i] = (int64_t)x;
        if (!wk_mul_u64(numel, x, &numel) || numel > (uint64_t)INT64_MAX) {
            wk_error_set(WK_ERR_IO, "%s: tensor '%s': the element count of its shape overflows", path, name);
            return false;
        }
    }
    uint64_t b, e;
    if (wk_json_kind(off) != WK_JSON_ARRAY || wk_json_count(off) != 2 || !json_u64(wk_json_item(off, 0), &b) ||
        !json_u64(wk_json_item(off, 1), &e)) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': data_offsets is not two non-negative integers", path, name);
        return false;
    }
    if (b > e || e > data_size) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] %s (the data section has %" PRIu64
                " bytes)", path, name, b, e, b > e ? "end before they begin" : "run past the end of the file", data_size);
        return false;
    }
    uint64_t bits, want;
    if (!wk_mul_u64(numel, d->bits, &bits) || bits % 8) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': %" PRIu64 " elements of %s are not a whole number of bytes", path, name,
                numel, d->name);
        return false;
    }
    want = bits / 8;
    if (e - b != want) {
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                " bytes, its shape of %" PRIu64 " %s elements needs %" PRIu64, path, name, b, e, e - b, numel, d->name,
                want);
        return false;
    }
    t->name = wk_arena_strndup(&s->arena, name, strlen(name));
    if (!t->name) return false;
    t->type_name = d->name;
    t->dtype = d->dt;
    t->ggml_type = UINT32_MAX;
    t->offset = data_start + b;
    t->nbytes = e - b;
    return true;
}

static bool add_meta(wk_safetensors *s, const char *path, const wk_json *m)
{
    if (wk_json_kind(m) != WK_JSON_OBJECT) {
        wk_error_set(WK_ERR_IO, "%s: __metadata__ is %s, expected an object of strings", path, kind_name(wk_json_kind(m)));
        return false;
    }
    for (size_t i = 0; i < wk_json_count(m); i++) {
        size_t klen, vlen;
        const char *k = wk_json_key(m, i, &klen);
        const char *v = wk_json_string(wk_json_item(m, i), &vlen);
        if (!v) {
            wk_error_set(WK_ERR_IO, "%s: __metadata__ \"%.100s\" is %s, expected a string", path, k,
                    kind_name(wk_json_kind(wk_json_item(m, i))));
            return false;
        }
        bool seen = false;
        for (int64_t j = 0; j < s->nmeta && !seen; j++) seen = strcmp(s->mkeys[j], k) == 0;
        if (seen) continue;   /* the first file's value wins */
        int64_t c = s->capmeta;
        if (!grow((void **)&s->mkeys, &c, s->nmeta + 1, sizeof *s->mkeys)) return false;
        c = s->capmeta;
        if (!grow((void **)&s->mvals, &c, s->nmeta + 1, sizeof *s->mvals)) return false;
        s->capmeta = c;
        s->mkeys[s->nmeta] = wk_arena_strndup(&s->arena, k, klen);
        s->mvals[s->nmeta] = wk_arena_strndup(&s->arena, v, vlen);
        if (!s->mkeys[s->nmeta] || !s->mvals[s->nmeta]) return false;
        s->nmeta++;
    }
    return true;
}

#define ST_MAX_HEADER 100000000

/* Maps and parses one file into s (its tensors appended in offset order). */
static bool open_file(wk_safetensors *s, const char *path)
{
    wk_map *m = &s->maps[s->nfiles];
    if (wk_map_open(path, m) != WK_OK) return false;
    s->nfiles++;
    path = m->path;
    if (m->size < 8) {
        wk_error_set(WK_ERR_IO, "%s: truncated: the header length needs 8 bytes, the file has %" PRIu64, path, m->size);
        return false;
    }
    uint64_t n = wk_ld64(m->p);
    if (n > ST_MAX_HEADER) {   /* as the safetensors package refuses it (HeaderTooLarge) */
        wk_error_set(WK_ERR_IO, "%s: header length %" PRIu64 " is over the safetensors limit of %d bytes", path, n,
                ST_MAX_HEADER);
        return false;
    }
    if (n > m->size - 8) {
        wk_error_set(WK_ERR_IO, "%s: header length %" PRIu64 " runs past the end of the file (%" PRIu64 " bytes)", path, n,
                m->size);
        return false;
    }
    char label[1100];
    snprintf(label, sizeof label, "%s (header)", path);
    wk_json *h = wk_json_parse((const char *)m->p + 8, (size_t)n, label, 0);
    if (!h) return false;
    bool ok = true;
    if (wk_json_kind(h) != WK_JSON_OBJECT) {
        wk_error_set(WK_ERR_IO, "%s: the header is %s, expected an object", path, kind_name(wk_json_kind(h)));
        ok = false;
    }
    int64_t first = s->tensors.n;
    uint64_t data_start = 8 + n, data_size = m->size - data_start;
    for (size_t i = 0; ok && i < wk_json_count(h); i++) {
        size_t klen;
        const char *k = wk_json_key(h, i, &klen);
        if (strlen(k) != klen) {
            wk_error_set(WK_ERR_IO, "%s: a tensor name holds a NUL byte", path);
            ok = false;
        } else if (strcmp(k, "__metadata__") == 0) {
            ok = add_meta(s, path, wk_json_item(h, i));
        } else {
            ok = parse_entry(s, path, k, wk_json_item(h, i), data_size, data_start);
        }
    }
    wk_json_free(h);
    if (!ok) return false;
    wk_file_tensor *t = s->tensors.tensors + first;
    int64_t cnt = s->tensors.n - first;
    if (cnt > 1) qsort(t, (size_t)cnt, sizeof *t, cmp_offset);
    uint64_t at = data_start;
    for (int64_t i = 0; i < cnt; i++) {
        t[i].file = path;
        t[i].data = m->p + t[i].offset;
        if (t[i].offset != at) {
            wk_error_set(WK_ERR_IO, "%s: tensor '%s' begins at data offset %" PRIu64 ", expected %" PRIu64 " (%s)", path,
                    t[i].name, t[i].offset - data_start, at - data_start,
                    t[i].offset < at ? "it overlaps the tensor before it" : "a gap before it");
            return false;
        }
        at += t[i].nbytes;
    }
    if (at != m->size) {
        wk_error_set(WK_ERR_IO, "%s: the tensors end at data offset %" PRIu64 ", but the data section has %" PRIu64 " bytes",
                path, at - data_start, data_size);
        return false;
    }
    return true;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The shards of an index: opened in name order; every weight_map entry checked. */
static bool open_index(wk_safetensors *s, const char *path)
{
    wk_json *idx = wk_json_parse_file(path, 0);
    if (!idx) return false;
    bool ok = false;
    char *dir = NULL;
    const char **shards = NULL;
    const wk_json *wm = wk_json_get(idx, "weight_map");
    if (wk_json_kind(wm) != WK_JSON_OBJECT) {
        wk_error_set(WK_ERR_IO, "%s: \"weight_map\" is %s, expected an object", path,
                wm ? kind_name(wk_json_kind(wm)) : "missing");
        goto out;
    }
    size_t n = wk_json_count(wm);
    shards = malloc((n ? n : 1) * sizeof *shards);
    if (!shards) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        goto out;
    }
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *f = wk_json_string(wk_json_item(wm, i), &len);
        const char *k = wk_json_key(wm, i, NULL);
        if (!f) {
            wk_error_set(WK_ERR_IO, "%s: weight_map[\"%.100s\"] is %s, expected a file name", path, k,
                    kind_name(wk_json_kind(wk_json_item(wm, i))));
            goto out;
        }
        if (len == 0 || strlen(f) != len || strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0) {
            wk_error_set(WK_ERR_IO, "%s: weight_map[\"%.100s\"] = \"%.100s\" is not a file name in the index's folder", path, k, f);
            goto out;
        }
        shards[ns++] = f;
    }
    qsort(shards, ns, sizeof *shards, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < ns; i++)
        if (u == 0 || strcmp(shards[u - 1], shards[i]) != 0) shards[u++] = shards[i];
    ns = u;
    if (ns == 0) {
        wk_error_set(WK_ERR_IO, "%s: \"weight_map\" names no tensor", path);
        goto out;
    }
    s->maps = calloc(ns, sizeof *s->maps);
    if (!s->maps) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    dir = slash ? wk_arena_strndup(&s->arena, path, (size_t)(slash - path + 1)) : wk_arena_strndup(&s->arena, "", 0);
    if (!dir) goto out;
    int64_t *first = calloc(ns + 1, sizeof *first);
    if (!first) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        char *full = wk_path_join(*dir ? dir : ".", shards[i]);
        if (!full) {
            free(first);
            goto out;
        }
        first[i] = s->tensors.n;
        bool fo = open_file(s, full);
        free(full);
        if (!fo) {   /* the message names the shard */
            free(first);
            goto out;
        }
    }
    first[ns] = s->tensors.n;
    /* every weight_map entry is in the shard it names */
    for (size_t i = 0; i < n; i++) {
        const char *k = wk_json_key(wm, i, NULL);
        const char *f = wk_json_string(wk_json_item(wm, i), NULL);
        size_t lo = 0, hi = ns;
        while (lo < hi) {   /* the shard's index */
            size_t mid = (lo + hi) / 2;
            int c = strcmp(shards[mid], f);
            if (c == 0) lo = hi = mid;
            else if (c < 0) lo = mid + 1;
            else hi = mid;
        }
        bool found = false;
        for (int64_t j = first[lo]; j < first[lo + 1] && !found; j++) found = strcmp(s->tensors.tensors[j].name, k) == 0;
        if (!found) {
            wk_error_set(WK_ERR_IO, "%s: weight_map puts tensor '%.200s' in %s, which does not hold it", path, k, f);
            free(first);
            goto out;
        }
    }
    free(first);
    ok = true;
out:
    free(shards);
    wk_json_free(idx);
    return ok;
}

WK_MODEL_API void wk_safetensors_close(wk_safetensors *s)
{
    if (!s) return;
    for (int i = 0; s->maps && i < s->nfiles; i++) wk_map_close(&s->maps[i]);
    free(s->maps);
    wk_tensor_table_free(&s->tensors);
    free(s->mkeys);
    free(s->mvals);
    wk_arena_free(&s->arena);
    free(s);
}

WK_MODEL_API wk_safetensors *wk_safetensors_open(const char *path)
{
    if (!path) {
        wk_error_set(WK_ERR_ARGUMENT, "safetensors: NULL path");
        return NULL;
    }
    wk_safetensors *s = calloc(1, sizeof *s);
    if (!s) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        return NULL;
    }
    s->tensors.kind = "safetensors";
    wk_clear_error();
    bool ok;
    char *owned = NULL;
    const char *p = path;
    if (is_dir(path)) {
        owned = wk_path_join(path, "model.safetensors.index.json");
        if (owned && !exists(owned)) {
            free(owned);
            owned = wk_path_join(path, "model.safetensors");
            if (owned && !exists(owned)) {
                wk_error_set(WK_ERR_IO, "%s: a folder without model.safetensors or model.safetensors.index.json", path);
                free(owned);
                wk_safetensors_close(s);
                return NULL;
            }
        }
        if (!owned) {
            wk_safetensors_close(s);
            return NULL;
        }
        p = owned;
    }
    if (ends_with(p, ".json")) {
        ok = open_index(s, p);
    } else {
        s->maps = calloc(1, sizeof *s->maps);
        ok = s->maps ? open_file(s, p) : (wk_error_set(WK_ERR_MEMORY, "%s: out of memory", p), false);
    }
    free(owned);
    if (ok) {
        wk_tensor_table *tt = &s->tensors;
        tt->path = s->nfiles ? s->maps[0].path : "safetensors";
        if (s->nfiles > 1) snprintf(tt->label, sizeof tt->label, "%d shards", s->nfiles);
        else snprintf(tt->label, sizeof tt->label, "%s", s->nfiles ? wk_path_base(s->maps[0].path) : "");
        int64_t dup;
        ok = wk_tensor_table_index(tt, &dup);
        if (ok && dup >= 0) {
            wk_error_set(WK_ERR_IO, "%s: tensor '%s' appears in two shards (again in %s)", path, tt->names[dup],
                    tt->tensors[dup].file);
            ok = false;
        }
    }
    if (!ok) {
        if (wk_last_status() == WK_OK) wk_error_set(WK_ERR_IO, "%s: cannot open", path);
        wk_safetensors_close(s);
        return NULL;
    }
    return s;
}

WK_MODEL_API int wk_safetensors_file_count(const wk_safetensors *s) { return s ? s->nfiles : 0; }

WK_MODEL_API const char *wk_safetensors_file_path(const wk_safetensors *s, int i)
{
    return s && i >= 0 && i < s->nfiles ? s->maps[i].path : NULL;
}

WK_MODEL_API int64_t wk_safetensors_meta_count(const wk_safetensors *s) { return s ? s->nmeta : 0; }

WK_MODEL_API const char *wk_safetensors_meta_key(const wk_safetensors *s, int64_t i)
{
    return s && i >= 0 && i < s->nmeta ? s->mkeys[i] : NULL;
}

WK_MODEL_API const char *wk_safetensors_meta_value(const wk_safetensors *s, int64_t i)
{
    return s && i >= 0 && i < s->nmeta ? s->mvals[i] : NULL;
}

WK_MODEL_API const char *wk_safetensors_meta(const wk_safetensors *s, const char *key)
{
    if (!s || !key) return NULL;
    for (int64_t i = 0; i < s->nmeta; i++)
        if (strcmp(s->mkeys[i], key) == 0) return s->mvals[i];
    return NULL;
}

/* ---- tensors (the table: file_tensor.c) ------------------------------------------------ */

const wk_tensor_table *wk_safetensors_tensor_table(const wk_safetensors *s) { return s ? &s->tensors : NULL; }

WK_MODEL_API int64_t wk_safetensors_tensor_count(const wk_safetensors *s)
{
    return wk_tensor_table_count(wk_safetensors_tensor_table(s));
}

WK_MODEL_API const wk_file_tensor *wk_safetensors_tensor_info(const wk_safetensors *s, int64_t i)
{
    return wk_tensor_table_info(wk_safetensors_tensor_table(s), i);
}

WK_MODEL_API int64_t wk_safetensors_tensor_index(const wk_safetensors *s, const char *name)
{
    return wk_tensor_table_find(wk_safetensors_tensor_table(s), name);
}

WK_MODEL_API wk_tensor *wk_safetensors_tensor(const wk_safetensors *s, const char *name, wk_device *dev)
{
    return wk_tensor_table_load(wk_safetensors_tensor_table(s), "safetensors: NULL handle", name, dev);
}

WK_MODEL_API wk_status wk_safetensors_load_all(const wk_safetensors *s, wk_device *dev, wk_progress_mode mode,
                                               wk_tensor **out)
{
    return wk_tensor_table_load_all(wk_safetensors_tensor_table(s), "safetensors: NULL handle", dev, mode, out);
}
