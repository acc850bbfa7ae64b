/* replay.c — a main for a fuzz harness without libFuzzer: every file named
 * on the command line, and every file inside a folder named there, is
 * given to LLVMFuzzerTestOneInput once, in name order. A harness built
 * with it (make fuzz-replay) replays the corpus in `make test` with any
 * compiler, so each input kept in tests/fuzz/corpus/ (the crashes found
 * included) stays a regression test. Prints "replay NAME: N inputs" and
 * exits 0; a finding aborts, as under libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    fclose(f);
    /* an exact-size copy, so that a read past the input is seen by ASan */
    uint8_t *in = malloc(n ? n : 1);
    if (!in) {
        free(buf);
        return -1;
    }
    memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 1;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "replay: no such file or folder: %s\n", path);
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) return run_file(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) break;
        snprintf(names[n], len, "%s/%s", path, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        int r = run_path(names[i]);
        if (r < 0) count = -1;
        else if (count >= 0) count += r;
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int r = run_path(argv[i]);
        if (r < 0) return 1;
        total += r;
    }
    printf("replay %s: %d inputs\n", name, total);
    return 0;
}
