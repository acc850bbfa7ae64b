/* config.c — HF config.json: wk_config_open (the file or its folder,
 * parsed with WK_JSON_ALLOW_NAN) and the typed getters by dotted path, whose
 * messages name the file, the key and what it holds. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "json_internal.h"

/* ---- HF config.json ---------------------------------------------------------- */

WK_MODEL_API wk_json *wk_config_open(const char *path)
{
    if (!path) {
        wk_error_set(WK_ERR_ARGUMENT, "config: NULL path");
        return NULL;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        size_t n = strlen(path);
        char *full = malloc(n + 16);
        if (!full) {
            wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
            return NULL;
        }
        snprintf(full, n + 16, "%s%sconfig.json", path, n && path[n - 1] == '/' ? "" : "/");
        wk_json *r = wk_json_parse_file(full, WK_JSON_ALLOW_NAN);
        free(full);
        return r;
    }
    return wk_json_parse_file(path, WK_JSON_ALLOW_NAN);
}

static const char *kind_words(wk_json_type k)
{
    switch (k) {
    case WK_JSON_NULL: return "null";
    case WK_JSON_BOOL: return "a boolean";
    case WK_JSON_NUMBER: return "a number";
    case WK_JSON_STRING: return "a string";
    case WK_JSON_ARRAY: return "an array";
    case WK_JSON_OBJECT: return "an object";
    }
    return "?";
}

/* The value at path, or NULL: absent/null is WK_OK (or WK_ERR_ARGUMENT when required). */
static wk_status cfg_lookup(const wk_json *cfg, const char *path, bool required, const wk_json **out)
{
    *out = NULL;
    if (!cfg || !path) return wk_error_set(WK_ERR_ARGUMENT, "config: NULL %s", cfg ? "key" : "config");
    const wk_json *v = wk_json_path(cfg, path);
    if (!v || v->kind == WK_JSON_NULL) {
        if (required)
            return wk_error_set(WK_ERR_ARGUMENT, "%s: '%s' is %s, and the model needs it", wk_json_doc_name(cfg), path,
                           v ? "null" : "missing");
        return WK_OK;
    }
    *out = v;
    return WK_OK;
}

static wk_status cfg_wrong(const wk_json *cfg, const char *path, const wk_json *v, const char *want)
{
    char shown[96] = "";
    if (v->kind == WK_JSON_STRING) snprintf(shown, sizeof shown, " \"%.60s\"", v->s);
    else if (v->kind == WK_JSON_NUMBER) snprintf(shown, sizeof shown, " %.17g", v->num);
    else if (v->kind == WK_JSON_BOOL) snprintf(shown, sizeof shown, " %s", v->b ? "true" : "false");
    return wk_error_set(WK_ERR_IO, "%s: '%s' is %s%s, expected %s", wk_json_doc_name(cfg), path, kind_words(v->kind), shown,
                   want);
}

WK_MODEL_API wk_status wk_config_int(const wk_json *cfg, const char *path, bool required, int64_t *out)
{
    const wk_json *v;
    wk_status st = cfg_lookup(cfg, path, required, &v);
    if (st != WK_OK || !v) return st;
    int64_t i;
    if (!wk_json_int(v, &i)) return cfg_wrong(cfg, path, v, "an integer");
    if (out) *out = i;
    return WK_OK;
}

WK_MODEL_API wk_status wk_config_float(const wk_json *cfg, const char *path, bool required, double *out)
{
    const wk_json *v;
    wk_status st = cfg_lookup(cfg, path, required, &v);
    if (st != WK_OK || !v) return st;
    if (v->kind != WK_JSON_NUMBER) return cfg_wrong(cfg, path, v, "a number");
    if (out) *out = v->num;
    return WK_OK;
}

WK_MODEL_API wk_status wk_config_bool(const wk_json *cfg, const char *path, bool required, bool *out)
{
    const wk_json *v;
    wk_status st = cfg_lookup(cfg, path, required, &v);
    if (st != WK_OK || !v) return st;
    if (v->kind != WK_JSON_BOOL) return cfg_wrong(cfg, path, v, "true or false");
    if (out) *out = v->b;
    return WK_OK;
}

WK_MODEL_API wk_status wk_config_str(const wk_json *cfg, const char *path, bool required, const char **out)
{
    const wk_json *v;
    wk_status st = cfg_lookup(cfg, path, required, &v);
    if (st != WK_OK || !v) return st;
    if (v->kind != WK_JSON_STRING) return cfg_wrong(cfg, path, v, "a string");
    if (out) *out = v->s;
    return WK_OK;
}
