/* file_tensor.c — the tensors of a model file: the table a GGUF file and a
 * safetensors model each hold (entries, names, the name index; look-up by
 * name, info by index, loading one or all of them) and loading a tensor's
 * bytes from the mapping onto a device, with the progress bar. */
#include <stdio.h>
#include <stdlib.h>
#include "formats_internal.h"

/* ---- the table ------------------------------------------------------------------ */

bool wk_tensor_table_reserve(wk_tensor_table *t, int64_t n)
{
    if (n <= t->cap) return true;
    if ((uint64_t)n > SIZE_MAX / sizeof *t->tensors) {
        wk_error_set(WK_ERR_MEMORY, "%s: %lld tensors are too many", t->path ? t->path : t->kind, (long long)n);
        return false;
    }
    wk_file_tensor *q = realloc(t->tensors, (size_t)n * sizeof *q);
    if (!q) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory (a table of %lld tensors)", t->path ? t->path : t->kind,
                     (long long)n);
        return false;
    }
    t->tensors = q;
    t->cap = n;
    return true;
}

wk_file_tensor *wk_tensor_table_add(wk_tensor_table *t)
{
    if (t->n == t->cap && !wk_tensor_table_reserve(t, t->cap ? 2 * t->cap : 16)) return NULL;
    wk_file_tensor *e = &t->tensors[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

bool wk_tensor_table_index(wk_tensor_table *t, int64_t *dup)
{
    *dup = -1;
    free(t->names);
    t->names = malloc((size_t)(t->n ? t->n : 1) * sizeof *t->names);
    if (!t->names) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", t->path ? t->path : t->kind);
        return false;
    }
    for (int64_t i = 0; i < t->n; i++) t->names[i] = t->tensors[i].name;
    wk_strtab_free(&t->index);
    return wk_strtab_build(&t->index, t->names, NULL, (size_t)t->n, dup);
}

void wk_tensor_table_free(wk_tensor_table *t)
{
    if (!t) return;
    free(t->tensors);
    free(t->names);
    wk_strtab_free(&t->index);
    t->tensors = NULL;
    t->names = NULL;
    t->n = t->cap = 0;
}

int64_t wk_tensor_table_count(const wk_tensor_table *t) { return t ? t->n : 0; }

const wk_file_tensor *wk_tensor_table_info(const wk_tensor_table *t, int64_t i)
{
    return t && i >= 0 && i < t->n ? &t->tensors[i] : NULL;
}

int64_t wk_tensor_table_find(const wk_tensor_table *t, const char *name)
{
    if (!t || !name || !t->names) return -1;
    return wk_strtab_find(&t->index, t->names, NULL, name, strlen(name));
}

wk_tensor *wk_tensor_table_load(const wk_tensor_table *t, const char *null_handle, const char *name, wk_device *dev)
{
    if (!t || !name) {
        if (t) wk_error_set(WK_ERR_ARGUMENT, "%s: NULL tensor name", t->kind);
        else wk_error_set(WK_ERR_ARGUMENT, "%s", null_handle);
        return NULL;
    }
    int64_t i = wk_tensor_table_find(t, name);
    if (i < 0) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: no tensor named '%s'", t->path ? t->path : t->kind, name);
        return NULL;
    }
    return wk_file_tensor_load(&t->tensors[i], dev);
}

wk_status wk_tensor_table_load_all(const wk_tensor_table *t, const char *null_handle, wk_device *dev,
                                   wk_progress_mode mode, wk_tensor **out)
{
    if (!t) return wk_error_set(WK_ERR_ARGUMENT, "%s", null_handle);
    const wk_file_tensor **infos = malloc((size_t)(t->n ? t->n : 1) * sizeof *infos);
    if (!infos) return wk_error_set(WK_ERR_MEMORY, "%s: out of memory", t->path ? t->path : t->kind);
    for (int64_t i = 0; i < t->n; i++) infos[i] = &t->tensors[i];
    wk_status st = wk_file_tensors_load(infos, t->n, dev, mode, t->label, out);
    free(infos);
    return st;
}

/* ---- loading onto a device ----------------------------------------------------- */

wk_tensor *wk_file_tensor_load(const wk_file_tensor *info, wk_device *dev)
{
    if (!info) {
        wk_error_set(WK_ERR_ARGUMENT, "NULL tensor info");
        return NULL;
    }
    if (!dev) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: tensor '%s': NULL device", info->file, info->name);
        return NULL;
    }
    if ((unsigned)info->dtype >= WK_DTYPE_COUNT) {
        if (info->ggml_type != UINT32_MAX)
            wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor '%s' is of ggml type %u (%s), which wick does not support",
                    info->file, info->name, info->ggml_type, info->type_name);
        else
            wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor '%s' is of dtype %s, which wick does not support", info->file,
                    info->name, info->type_name);
        return NULL;
    }
    wk_clear_error();
    wk_tensor *t = wk_from_host(dev, info->dtype, info->shape, info->data);
    if (!t) {
        wk_error_wrap("%s: tensor '%s' (%s, %llu bytes) to %s", info->file, info->name, wk_dtype_name(info->dtype),
                     (unsigned long long)info->nbytes, wk_device_name(dev));
        return NULL;
    }
    if (wk_tensor_nbytes(t) != info->nbytes) {   /* the file's size and wick's disagree: never expected */
        wk_error_set(WK_ERR_IO, "%s: tensor '%s': %llu bytes in the file, wick's %s tensor of this shape takes %zu",
                info->file, info->name, (unsigned long long)info->nbytes, wk_dtype_name(info->dtype),
                wk_tensor_nbytes(t));
        wk_release(t);
        return NULL;
    }
    return t;
}

wk_status wk_file_tensors_load(const wk_file_tensor *const *infos, int64_t n, wk_device *dev,
                               wk_progress_mode mode, const char *label, wk_tensor **out)
{
    if (n < 0 || (n > 0 && (!infos || !out))) return wk_error_set(WK_ERR_ARGUMENT, "load: bad tensor list (n = %lld)", (long long)n);
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = NULL;
        if (!infos[i]) return wk_error_set(WK_ERR_ARGUMENT, "load: tensor info %lld is NULL", (long long)i);
        total += infos[i]->nbytes;
    }
    /* the dtype check first: an unsupported tensor fails the load before any copy */
    for (int64_t i = 0; i < n; i++)
        if ((unsigned)infos[i]->dtype >= WK_DTYPE_COUNT) return wk_file_tensor_load(infos[i], dev), wk_last_status();
    wk_progress *p = wk_progress_begin(label, total, mode);
    for (int64_t i = 0; i < n; i++) {
        out[i] = wk_file_tensor_load(infos[i], dev);
        if (!out[i]) {
            wk_progress_end(p, false);
            for (int64_t j = 0; j < i; j++) {
                wk_release(out[j]);
                out[j] = NULL;
            }
            return wk_last_status();
        }
        wk_progress_add(p, infos[i]->nbytes);
    }
    wk_progress_end(p, true);
    return WK_OK;
}
