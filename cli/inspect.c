/* inspect.c — `wick inspect [--all] FILE`: a GGUF file's header, metadata
 * and tensor table, or a safetensors model's (one file, an index with its
 * shards, or a folder) metadata and tensor table. Long arrays and strings
 * are shortened unless --all. A file that cannot be read, or is corrupt,
 * is one line on stderr (the model layer's message) and exit status 1.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "wick.h"
#include "wick_formats.h"
#include "cli.h"

void wick_inspect_usage(void)
{
    printf("usage: wick inspect [--all] FILE\n"
           "\n"
           "Prints a model file's metadata and tensor table. FILE is a .gguf file, a\n"
           ".safetensors file, a model.safetensors.index.json (with its shards) or a\n"
           "folder holding model.safetensors or the index.\n"
           "\n"
           "  --all   print every element of long arrays and whole strings\n");
}

static bool full_output;

/* The shortest %g that reads back as the same value (an f32 value with f32's digits). */
static void print_float(double d, bool is_f32)
{
    char buf[40];
    for (int p = is_f32 ? 6 : 15; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, d);
        double r = strtod(buf, NULL);
        if (is_f32 ? (float)r == (float)d : r == d) break;
    }
    fputs(buf, stdout);
}

/* A string as a quoted C-like literal, shortened unless --all. */
static void print_str(const char *s, size_t len)
{
    size_t max = full_output ? len : 80;
    putchar('"');
    for (size_t i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') printf("\\n");
        else if (c == '\t') printf("\\t");
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
    if (len > max) printf("... (%zu bytes)", len);
}

static void print_array(const wk_gguf_value *v, int depth);

static void print_elem(const wk_gguf_value *v, uint64_t i, int depth)
{
    int64_t x;
    uint64_t u;
    double d;
    bool b;
    size_t len;
    const char *s;
    if ((s = wk_gguf_array_str(v, i, &len))) print_str(s, len);
    else if (wk_gguf_array_at(v, i)) print_array(wk_gguf_array_at(v, i), depth + 1);
    else if (wk_gguf_array_bool(v, i, &b)) printf("%s", b ? "true" : "false");
    else if (wk_gguf_array_int(v, i, &x)) printf("%" PRId64, x);
    else if (wk_gguf_array_uint(v, i, &u)) printf("%" PRIu64, u);
    else if (wk_gguf_array_float(v, i, &d)) print_float(d, wk_gguf_array_type(v) == WK_GGUF_F32);
    else printf("?");
}

static void print_array(const wk_gguf_value *v, int depth)
{
    uint64_t n = wk_gguf_array_len(v);
    uint64_t max = full_output ? n : (depth ? 4 : 8);
    printf("[%s x %" PRIu64 "] [", wk_gguf_type_name(wk_gguf_array_type(v)), n);
    for (uint64_t i = 0; i < n && i < max; i++) {
        if (i) printf(", ");
        print_elem(v, i, depth);
    }
    if (n > max) printf(", ...");
    putchar(']');
}

static void print_value(const wk_gguf_value *v)
{
    int64_t x;
    uint64_t u;
    double d;
    bool b;
    size_t len;
    const char *s;
    wk_gguf_type t = wk_gguf_value_type(v);
    if (t == WK_GGUF_ARRAY) {
        print_array(v, 0);
        return;
    }
    printf("%-6s ", wk_gguf_type_name(t));
    if ((s = wk_gguf_value_str(v, &len))) print_str(s, len);
    else if (wk_gguf_value_bool(v, &b)) printf("%s", b ? "true" : "false");
    else if (wk_gguf_value_int(v, &x)) printf("%" PRId64, x);
    else if (wk_gguf_value_uint(v, &u)) printf("%" PRIu64, u);
    else if (wk_gguf_value_float(v, &d)) print_float(d, t == WK_GGUF_F32);
}

static void fmt_bytes(uint64_t b, char *out, size_t n)
{
    if (b < 10000) snprintf(out, n, "%" PRIu64 " B", b);
    else if (b < 10000000) snprintf(out, n, "%.1f kB", (double)b / 1e3);
    else if (b < 10000000000ull) snprintf(out, n, "%.1f MB", (double)b / 1e6);
    else snprintf(out, n, "%.2f GB", (double)b / 1e9);
}

/* The table of tensors, then totals by type. */
static void print_tensors(int64_t n, const wk_file_tensor *(*info)(const void *, int64_t), const void *h, bool files)
{
    size_t w = 4;
    for (int64_t i = 0; i < n; i++) {
        size_t l = strlen(info(h, i)->name);
        if (l > w) w = l;
    }
    if (w > 48) w = 48;
    printf("\ntensors (%" PRId64 "):\n", n);
    printf("  %5s  %-*s  %-8s  %-22s  %12s  %10s%s\n", "#", (int)w, "name", "type", "shape", "offset", "bytes",
           files ? "  file" : "");
    struct type_total { const char *type; uint64_t bytes; int64_t count; } tot[64];
    int ntot = 0;
    uint64_t all = 0;
    for (int64_t i = 0; i < n; i++) {
        const wk_file_tensor *t = info(h, i);
        char shape[96] = "[", *p = shape + 1;
        for (int d = 0; d < t->shape.rank; d++)
            p += snprintf(p, sizeof shape - (size_t)(p - shape), "%s%" PRId64, d ? ", " : "", t->shape.dims[d]);
        snprintf(p, sizeof shape - (size_t)(p - shape), "]");
        printf("  %5" PRId64 "  %-*s  %-8s  %-22s  %12" PRIu64 "  %10" PRIu64, i, (int)w, t->name, t->type_name, shape,
               t->offset, t->nbytes);
        if (files) {
            const char *base = strrchr(t->file, '/');
            printf("  %s", base ? base + 1 : t->file);
        }
        if ((unsigned)t->dtype >= WK_DTYPE_COUNT) printf("  (wick has no dtype for it)");
        putchar('\n');
        int k = 0;
        while (k < ntot && strcmp(tot[k].type, t->type_name)) k++;
        if (k == ntot && ntot < 64) tot[ntot++] = (struct type_total){ t->type_name, 0, 0 };
        if (k < ntot) {
            tot[k].bytes += t->nbytes;
            tot[k].count++;
        }
        all += t->nbytes;
    }
    char b[32];
    fmt_bytes(all, b, sizeof b);
    printf("\ntotal: %" PRId64 " tensors, %s", n, b);
    for (int k = 0; k < ntot; k++) {
        fmt_bytes(tot[k].bytes, b, sizeof b);
        printf("%s %" PRId64 " %s (%s)", k ? "," : ":", tot[k].count, tot[k].type, b);
    }
    putchar('\n');
}

static const wk_file_tensor *g_info(const void *h, int64_t i) { return wk_gguf_tensor_info(h, i); }
static const wk_file_tensor *s_info(const void *h, int64_t i) { return wk_safetensors_tensor_info(h, i); }

static int inspect_gguf(const char *path)
{
    wk_gguf *g = wk_gguf_open(path);
    if (!g) {
        fprintf(stderr, "wick inspect: %s\n", wk_last_error());
        return WICK_EXIT_FAIL;
    }
    char b[32];
    fmt_bytes(wk_gguf_file_size(g), b, sizeof b);
    printf("%s: GGUF v%u, %s, alignment %u, tensor data at byte %" PRIu64 "\n", path, wk_gguf_version(g), b,
           wk_gguf_alignment(g), wk_gguf_data_offset(g));
    int64_t nkv = wk_gguf_kv_count(g);
    size_t w = 8;
    for (int64_t i = 0; i < nkv; i++) {
        size_t l = strlen(wk_gguf_kv_key(g, i));
        if (l > w) w = l;
    }
    if (w > 48) w = 48;
    printf("\nmetadata (%" PRId64 "):\n", nkv);
    for (int64_t i = 0; i < nkv; i++) {
        printf("  %-*s  ", (int)w, wk_gguf_kv_key(g, i));
        print_value(wk_gguf_kv_value(g, i));
        putchar('\n');
    }
    print_tensors(wk_gguf_tensor_count(g), g_info, g, false);
    wk_gguf_close(g);
    return WICK_EXIT_OK;
}

static int inspect_safetensors(const char *path)
{
    wk_safetensors *s = wk_safetensors_open(path);
    if (!s) {
        fprintf(stderr, "wick inspect: %s\n", wk_last_error());
        return WICK_EXIT_FAIL;
    }
    int nf = wk_safetensors_file_count(s);
    printf("%s: safetensors, %d file%s\n", path, nf, nf == 1 ? "" : "s");
    if (nf > 1)
        for (int i = 0; i < nf; i++) printf("  %s\n", wk_safetensors_file_path(s, i));
    int64_t nm = wk_safetensors_meta_count(s);
    printf("\nmetadata (%" PRId64 "):\n", nm);
    for (int64_t i = 0; i < nm; i++) {
        const char *v = wk_safetensors_meta_value(s, i);
        printf("  %-24s  ", wk_safetensors_meta_key(s, i));
        print_str(v, strlen(v));
        putchar('\n');
    }
    print_tensors(wk_safetensors_tensor_count(s), s_info, s, nf > 1);
    wk_safetensors_close(s);
    return WICK_EXIT_OK;
}

/* cli.h: GGUF when the file starts with the magic or is named .gguf (a
 * broken one: the GGUF reader says why); the rest is tried as safetensors. */
bool wick_cli_is_gguf(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char m[4] = { 0 };
    size_t n = fread(m, 1, 4, f);
    fclose(f);
    if (n == 4 && memcmp(m, "GGUF", 4) == 0) return true;
    size_t l = strlen(path);
    return l >= 5 && strcmp(path + l - 5, ".gguf") == 0;   /* a broken .gguf: the GGUF reader says why */
}

int wick_cmd_inspect(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--all")) full_output = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            wick_inspect_usage();
            return WICK_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "wick inspect: unknown option '%s' (wick inspect --help)\n", argv[i]);
            return WICK_EXIT_USAGE;
        } else if (path) {
            fprintf(stderr, "wick inspect: one file at a time ('%s' and '%s')\n", path, argv[i]);
            return WICK_EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "wick inspect: no file given (usage: wick inspect [--all] FILE)\n");
        return WICK_EXIT_USAGE;
    }
    return wick_cli_is_gguf(path) ? inspect_gguf(path) : inspect_safetensors(path);
}
