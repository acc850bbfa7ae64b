/* file_util.c — the shared pieces of src/formats: mapped files, the
 * arena, the name -> index table, sizes for messages and the progress bar.
 * (The table of a file's tensors and loading them: file_tensor.c.) */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "formats_internal.h"

/* ---- mapped files ------------------------------------------------------- */

wk_status wk_map_open(const char *path, wk_map *m)
{
    memset(m, 0, sizeof *m);
    if (!path) return wk_error_set(WK_ERR_ARGUMENT, "NULL path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wk_error_set(WK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return wk_error_set(WK_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return wk_error_set(WK_ERR_IO, "%s: not a regular file%s", path, S_ISDIR(sb.st_mode) ? " (a directory)" : "");
    }
    m->path = strdup(path);
    if (!m->path) {
        close(fd);
        return wk_error_set(WK_ERR_MEMORY, "%s: out of memory", path);
    }
    m->size = (uint64_t)sb.st_size;
    if (m->size > 0) {
        if ((uint64_t)(size_t)m->size != m->size) {
            close(fd);
            wk_map_close(m);
            return wk_error_set(WK_ERR_IO, "%s: %llu bytes do not fit the address space", path, (unsigned long long)sb.st_size);
        }
        void *p = mmap(NULL, (size_t)m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(m->path);
            memset(m, 0, sizeof *m);
            return wk_error_set(WK_ERR_IO, "%s: cannot map %llu bytes: %s", path, (unsigned long long)sb.st_size,
                           strerror(e));
        }
        m->p = p;
    }
    close(fd);
    return WK_OK;
}

void wk_map_close(wk_map *m)
{
    if (!m) return;
    if (m->p) munmap((void *)m->p, (size_t)m->size);
    free(m->path);
    memset(m, 0, sizeof *m);
}

/* ---- arena --------------------------------------------------------------- */

struct wk_arena_block {
    wk_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *wk_arena_alloc(wk_arena *a, size_t bytes)
{
    size_t need = (bytes + 15) & ~(size_t)15;
    if (need < bytes) {
        wk_error_set(WK_ERR_MEMORY, "arena: %zu bytes is too large", bytes);
        return NULL;
    }
    wk_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > ((size_t)1 << 16) ? need : ((size_t)1 << 16);
        b = malloc(sizeof *b + cap);
        if (!b) {
            wk_error_set(WK_ERR_MEMORY, "out of memory (%zu bytes)", bytes);
            return NULL;
        }
        b->used = 0;
        b->cap = cap;
        if (a->head && need > ((size_t)1 << 16)) {   /* a large one goes behind the current block */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    memset(p, 0, need);
    return p;
}

char *wk_arena_strndup(wk_arena *a, const char *s, size_t len)
{
    if (len == SIZE_MAX) {
        wk_error_set(WK_ERR_MEMORY, "string too long");
        return NULL;
    }
    char *d = wk_arena_alloc(a, len + 1);
    if (!d) return NULL;
    if (len) memcpy(d, s, len);
    d[len] = 0;
    return d;
}

void wk_arena_free(wk_arena *a)
{
    wk_arena_block *b = a->head;
    while (b) {
        wk_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

/* ---- name table ------------------------------------------------------------ */

uint64_t wk_str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static size_t name_len(const char *const *names, const size_t *lens, size_t i)
{
    return lens ? lens[i] : strlen(names[i]);
}

int64_t wk_strtab_find(const wk_strtab *t, const char *const *names, const size_t *lens, const char *key,
                       size_t keylen)
{
    if (!t->cap) return -1;
    size_t mask = t->cap - 1, j = (size_t)wk_str_hash(key, keylen) & mask;
    for (;;) {
        uint32_t s = t->slots[j];
        if (!s) return -1;
        size_t i = s - 1;
        if (name_len(names, lens, i) == keylen && memcmp(names[i], key, keylen) == 0) return (int64_t)i;
        j = (j + 1) & mask;
    }
}

bool wk_strtab_build(wk_strtab *t, const char *const *names, const size_t *lens, size_t n, int64_t *dup)
{
    *dup = -1;
    t->slots = NULL;
    t->cap = 0;
    if (n >= UINT32_MAX / 2) {
        wk_error_set(WK_ERR_MEMORY, "%zu names are too many", n);
        return false;
    }
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) {
        wk_error_set(WK_ERR_MEMORY, "out of memory (a table of %zu names)", n);
        return false;
    }
    t->cap = cap;
    for (size_t i = 0; i < n; i++) {
        size_t len = name_len(names, lens, i);
        size_t j = (size_t)wk_str_hash(names[i], len) & (cap - 1);
        for (;;) {
            uint32_t s = t->slots[j];
            if (!s) {
                t->slots[j] = (uint32_t)(i + 1);
                break;
            }
            size_t k = s - 1;
            if (name_len(names, lens, k) == len && memcmp(names[k], names[i], len) == 0) {
                if (*dup < 0) *dup = (int64_t)i;
                break;
            }
            j = (j + 1) & (cap - 1);
        }
    }
    return true;
}

void wk_strtab_free(wk_strtab *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = 0;
}

/* ---- small helpers ------------------------------------------------------------ */

const char *wk_path_base(const char *path)
{
    if (!path) return "";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

char *wk_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *r = malloc(a + b + 2);
    if (!r) {
        wk_error_set(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    memcpy(r, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') r[k++] = '/';
    memcpy(r + k, name, b + 1);
    return r;
}

const char *wk_fmt_bytes(uint64_t bytes, char *buf)
{
    static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB", "EB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1000.0 && u < 6) {
        v /= 1000.0;
        u++;
    }
    if (u == 0) snprintf(buf, 32, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, 32, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u]);
    return buf;
}

/* ---- progress ------------------------------------------------------------------- */

struct wk_progress {
    char label[64];
    uint64_t total, done;
    double t0, last;
    int last_pct;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_draw(wk_progress *p)
{
    const int width = 30;
    double frac = p->total ? (double)p->done / (double)p->total : 1.0;
    if (frac > 1) frac = 1;
    int fill = (int)(frac * width);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : ' ';
    bar[width] = 0;
    char a[32], b[32];
    fprintf(stderr, "\r%s [%s] %3d%% %s / %s", p->label, bar, (int)(frac * 100), wk_fmt_bytes(p->done, a),
            wk_fmt_bytes(p->total, b));
    fflush(stderr);
}

wk_progress *wk_progress_begin(const char *label, uint64_t total_bytes, wk_progress_mode mode)
{
    if (mode == WK_PROGRESS_OFF) return NULL;
    if (mode == WK_PROGRESS_AUTO) {
        const char *env = getenv("WICK_PROGRESS");
        if (env && env[0] == '0' && !env[1]) return NULL;
        bool forced = env && env[0] == '1' && !env[1];
        if (!forced && !isatty(STDERR_FILENO)) return NULL;
    }
    wk_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->label, sizeof p->label, "loading %s", label ? label : "");
    p->total = total_bytes;
    p->t0 = p->last = now_s();
    p->last_pct = -1;
    progress_draw(p);
    return p;
}

void wk_progress_add(wk_progress *p, uint64_t bytes)
{
    if (!p) return;
    p->done += bytes;
    double t = now_s();
    int pct = p->total ? (int)((double)p->done * 100.0 / (double)p->total) : 100;
    if (t - p->last >= 0.1 || pct == 100) {
        if (pct != p->last_pct || t - p->last >= 0.5) {
            progress_draw(p);
            p->last_pct = pct;
        }
        p->last = t;
    }
}

void wk_progress_end(wk_progress *p, bool ok)
{
    if (!p) return;
    progress_draw(p);
    double dt = now_s() - p->t0;
    char r[32];
    if (ok)
        fprintf(stderr, " in %.2f s (%s/s)\n", dt, wk_fmt_bytes(dt > 0 ? (uint64_t)((double)p->done / dt) : 0, r));
    else
        fprintf(stderr, " failed\n");
    fflush(stderr);
    free(p);
}
