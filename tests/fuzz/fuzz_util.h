/* fuzz_util.h — what the fuzz harnesses of tests/fuzz/ share: the cpu
 * device opened once, an input written to an in-memory file whose path
 * the library's readers open (they take paths, not buffers), an input cut
 * into parts at a separator, and a check that aborts (so that libFuzzer
 * and the replay runner report it) when a promise of the API is broken.
 * Everything is static: each harness is one translation unit.
 */
#ifndef WICK_FUZZ_UTIL_H
#define WICK_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "wick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A broken promise: print it and abort (a finding). */
#define FZ_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz: check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* The cpu device, one thread in its pool (a run is many small inputs). */
static inline wk_device *fz_dev(void)
{
    static wk_device *dev;
    if (!dev) {
        setenv("WICK_NUM_THREADS", "1", 0);
        setenv("WICK_PROGRESS", "0", 1);
        dev = wk_device_open("cpu");
        FZ_CHECK(dev != NULL, "cannot open the cpu device: %s", wk_last_error());
    }
    return dev;
}

/* An in-memory file (memfd) that holds the bytes given last; its path
 * (/proc/self/fd/N) is what the readers open. */
typedef struct fz_file {
    int fd;
    char path[64];
} fz_file;

static inline void fz_file_init(fz_file *f, const char *name)
{
    f->fd = memfd_create(name, 0);
    FZ_CHECK(f->fd >= 0, "memfd_create failed");
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

static inline const char *fz_file_set(fz_file *f, const void *data, size_t n)
{
    FZ_CHECK(ftruncate(f->fd, 0) == 0, "ftruncate failed");
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(f->fd, (const char *)data + done, n - done, (off_t)done);
        FZ_CHECK(w > 0, "pwrite failed");
        done += (size_t)w;
    }
    return f->path;
}

/* Cuts data into at most max parts at each occurrence of sep; returns how
 * many parts there are (the last one runs to the end). */
typedef struct fz_part {
    const uint8_t *p;
    size_t n;
} fz_part;

static inline int fz_split(const uint8_t *data, size_t size, const char *sep, fz_part *parts, int max)
{
    const size_t sl = strlen(sep);
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; k < max - 1 && sl <= size && i <= size - sl;) {
        if (memcmp(data + i, sep, sl) == 0) {
            parts[k++] = (fz_part){ data + start, i - start };
            i += sl;
            start = i;
        } else {
            i++;
        }
    }
    parts[k++] = (fz_part){ data + start, size - start };
    return k;
}

/* A NUL-terminated copy of a part (free it). */
static inline char *fz_strdup(fz_part p)
{
    char *s = malloc(p.n + 1);
    FZ_CHECK(s != NULL, "out of memory");
    if (p.n) memcpy(s, p.p, p.n);
    s[p.n] = 0;
    return s;
}

/* An error must leave a message behind. */
static inline void fz_check_error(const char *what)
{
    const char *e = wk_last_error();
    FZ_CHECK(wk_last_status() != WK_OK && e && e[0], "%s failed without an error status and message", what);
}

#endif /* WICK_FUZZ_UTIL_H */
