/* model_file.c — a model's weights behind one handle (wk_model_file): a
 * GGUF file, known by its magic whatever its name, or a safetensors model
 * (one file, a shard index or a folder holding either) with the
 * config.json beside it (required) and tokenizer_config.json (optional).
 * Its tensors are the table of the file underneath (file_tensor.c).
 *
 * What a path is decides the message when it is none of these: a path
 * that does not exist says so; a file named .gguf without the magic says
 * it is not a GGUF file and shows its first bytes (not a safetensors
 * error); a file named neither .safetensors nor .json that the safetensors
 * reader refuses gets both words; a folder without model.safetensors or
 * its index says that, and names a .gguf file it holds. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats_internal.h"

struct wk_model_file {
    char *path;                    /* the GGUF file, or the safetensors model's folder */
    wk_gguf *gguf;                 /* one of these two */
    wk_safetensors *st;
    const wk_tensor_table *tensors;
    wk_json *config;               /* safetensors: config.json */
    wk_json *tokcfg;               /* safetensors: tokenizer_config.json, when present and valid */
};

WK_MODEL_API void wk_model_file_close(wk_model_file *f)
{
    if (!f) return;
    wk_gguf_close(f->gguf);
    wk_safetensors_close(f->st);
    wk_json_free(f->config);
    wk_json_free(f->tokcfg);
    free(f->path);
    free(f);
}

/* The first bytes of a file (up to n); -1 when it cannot be read (errno). */
static ssize_t first_bytes(const char *path, unsigned char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    return (ssize_t)got;
}

static bool ends_with_ci(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* "not a GGUF file (its first bytes are 68 65 6c 6c "hell", ...)" into out. */
static void not_gguf_words(const unsigned char *b, ssize_t n, char *out, size_t outsz)
{
    if (n <= 0) {
        snprintf(out, outsz, "not a GGUF file (it is empty)");
        return;
    }
    char hex[3 * 8 + 1] = "", txt[8 + 1] = "";
    size_t at = 0;
    for (ssize_t i = 0; i < n && i < 8; i++) {
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", b[i]);
        txt[i] = isprint(b[i]) ? (char)b[i] : '.';
        txt[i + 1] = 0;
    }
    snprintf(out, outsz, "not a GGUF file (its first bytes are %s \"%s\", a GGUF file begins with \"GGUF\")", hex, txt);
}

/* A .gguf file in folder dir, for the message of a folder that holds no
 * safetensors model (the name in out, empty when none). */
static void find_gguf(const char *dir, char *out, size_t outsz)
{
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (ends_with_ci(e->d_name, ".gguf") && (!out[0] || strcmp(e->d_name, out) < 0))
            snprintf(out, outsz, "%s", e->d_name);
    closedir(d);
}

/* The safetensors model's folder: the path itself when a folder (without
 * trailing slashes), else the folder of the file ("." when none is named). */
static char *model_dir(const char *path, bool is_dir)
{
    size_t n = strlen(path);
    if (!is_dir) {
        const char *slash = strrchr(path, '/');
        n = slash ? (size_t)(slash - path) : 0;
        if (!slash) path = ".", n = 1;
        else if (n == 0) n = 1;   /* "/model.safetensors": the root */
    }
    while (n > 1 && path[n - 1] == '/') n--;
    char *d = malloc(n + 1);
    if (!d) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        return NULL;
    }
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

/* config.json (required) and tokenizer_config.json (optional) of the
 * safetensors model at f->path; path is what the caller gave, for messages. */
static wk_status open_configs(wk_model_file *f, const char *path)
{
    char *cfg = wk_path_join(f->path, "config.json");
    if (!cfg) return wk_last_status();
    struct stat sb;
    if (stat(cfg, &sb) != 0) {
        int e = errno;
        wk_status st = e == ENOENT || e == ENOTDIR
                           ? wk_error_set(WK_ERR_IO, "%s: a safetensors model needs its config.json beside it, and %s does "
                                          "not exist", path, cfg)
                           : wk_error_set(WK_ERR_IO, "%s: a safetensors model needs its config.json beside it: %s: %s", path,
                                          cfg, strerror(e));
        free(cfg);
        return st;
    }
    f->config = wk_json_parse_file(cfg, WK_JSON_ALLOW_NAN);
    if (!f->config) {
        free(cfg);
        return wk_error_wrap("%s: the model's config.json is not valid", path);
    }
    if (wk_json_kind(f->config) != WK_JSON_OBJECT) {
        static const char *const kinds[] = { "null", "a boolean", "a number", "a string", "an array", "an object" };
        wk_status st = wk_error_set(WK_ERR_IO, "%s: the model's config.json is not valid: %s holds %s, expected an object",
                                    path, cfg, kinds[wk_json_kind(f->config)]);
        free(cfg);
        return st;
    }
    free(cfg);
    char *tok = wk_path_join(f->path, "tokenizer_config.json");
    if (!tok) return wk_last_status();
    if (stat(tok, &sb) == 0 && S_ISREG(sb.st_mode)) {
        f->tokcfg = wk_json_parse_file(tok, WK_JSON_ALLOW_NAN);   /* optional: its chat template */
        if (!f->tokcfg) wk_clear_error();
    }
    free(tok);
    return WK_OK;
}

static wk_status open_safetensors(wk_model_file *f, const char *path, bool is_dir)
{
    f->st = wk_safetensors_open(path);
    if (!f->st) {
        char g[256];
        if (is_dir && (find_gguf(path, g, sizeof g), g[0]))
            return wk_error_set(wk_last_status(), "%s (a GGUF file is opened by its own path: %s/%s)", wk_last_error(),
                                path, g);
        return wk_last_status();
    }
    f->tensors = wk_safetensors_tensor_table(f->st);
    f->path = model_dir(path, is_dir);
    if (!f->path) return wk_last_status();
    return open_configs(f, path);
}

WK_MODEL_API wk_model_file *wk_model_file_open(const char *path)
{
    if (!path) {
        wk_error_set(WK_ERR_ARGUMENT, "wk_model_file_open: NULL path");
        return NULL;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) wk_error_set(WK_ERR_IO, "%s: no such file or folder", path);
        else wk_error_set(WK_ERR_IO, "%s: cannot open: %s", path, strerror(e));
        return NULL;
    }
    bool is_dir = S_ISDIR(sb.st_mode);
    if (!is_dir && !S_ISREG(sb.st_mode)) {
        wk_error_set(WK_ERR_IO, "%s: not a file or a folder", path);
        return NULL;
    }
    wk_model_file *f = calloc(1, sizeof *f);
    if (!f) {
        wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
        return NULL;
    }
    wk_clear_error();
    wk_status st;
    unsigned char magic[8];
    ssize_t n = is_dir ? 0 : first_bytes(path, magic, sizeof magic);
    if (!is_dir && n < 0) {
        st = wk_error_set(WK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    } else if (n >= 4 && memcmp(magic, "GGUF", 4) == 0) {
        f->gguf = wk_gguf_open(path);
        f->tensors = wk_gguf_tensor_table(f->gguf);
        f->path = f->gguf ? strdup(path) : NULL;
        st = !f->gguf ? wk_last_status() : f->path ? WK_OK : wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
    } else if (!is_dir && ends_with_ci(path, ".gguf")) {
        char words[160];
        not_gguf_words(magic, n, words, sizeof words);
        st = wk_error_set(WK_ERR_IO, "%s: %s", path, words);
    } else {
        st = open_safetensors(f, path, is_dir);
        if (st != WK_OK && !is_dir && !f->st && !ends_with_ci(path, ".safetensors") && !ends_with_ci(path, ".json")) {
            char words[160];   /* a file named as neither: say what both readers found */
            not_gguf_words(magic, n, words, sizeof words);
            st = wk_error_set(st, "%s: %s, nor a safetensors file: %s", path, words, wk_last_error());
        }
    }
    if (st != WK_OK) {
        if (wk_last_status() == WK_OK) wk_error_set(WK_ERR_IO, "%s: cannot open", path);
        wk_model_file_close(f);
        return NULL;
    }
    return f;
}

WK_MODEL_API const char *wk_model_file_path(const wk_model_file *f) { return f ? f->path : NULL; }

WK_MODEL_API int64_t wk_model_file_tensor_count(const wk_model_file *f)
{
    return wk_tensor_table_count(f ? f->tensors : NULL);
}

WK_MODEL_API const wk_file_tensor *wk_model_file_tensor_info(const wk_model_file *f, int64_t i)
{
    return wk_tensor_table_info(f ? f->tensors : NULL, i);
}

WK_MODEL_API const wk_file_tensor *wk_model_file_find(const wk_model_file *f, const char *name)
{
    const wk_tensor_table *t = f ? f->tensors : NULL;
    return wk_tensor_table_info(t, wk_tensor_table_find(t, name));
}

WK_MODEL_API wk_tensor *wk_model_file_tensor(const wk_model_file *f, const char *name, wk_device *dev)
{
    if (f && !name) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: NULL tensor name", f->path);
        return NULL;
    }
    return wk_tensor_table_load(f ? f->tensors : NULL, "model file: NULL file", name, dev);
}

WK_MODEL_API const wk_gguf *wk_model_file_gguf(const wk_model_file *f) { return f ? f->gguf : NULL; }
WK_MODEL_API const wk_safetensors *wk_model_file_safetensors(const wk_model_file *f) { return f ? f->st : NULL; }
WK_MODEL_API const wk_json *wk_model_file_config(const wk_model_file *f) { return f ? f->config : NULL; }
WK_MODEL_API const wk_json *wk_model_file_tokenizer_config(const wk_model_file *f) { return f ? f->tokcfg : NULL; }
