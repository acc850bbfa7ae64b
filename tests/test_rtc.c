/* test_rtc.c — kernels compiled at run time, the parts that run without
 * a GPU: the API's refusal on the cpu (wk_rtc_available, wk_supports(dev,
 * "rtc"), wk_rtc_compile's WK_ERR_UNSUPPORTED naming the device, bad
 * arguments), and the disk cache at unit level through the core's own
 * functions (src/core/rtc_cache.h; this suite is the one place the tests
 * include a src/ header, because the cache is not public): SHA-256
 * against FIPS 180-4's vectors, the key (every part changes it, option
 * boundaries count), the folder from the environment, an entry written
 * and read back, no temporary file left behind, corrupt, truncated and
 * misnamed entries refused, a corrupt entry rewritten, and writers racing
 * readers (every read sees a whole entry or none). The GPU side
 * (compile, launch, cache hit across processes) is
 * tests/device/rtc_checks.c.
 *
 * Case names: rtc/<what>.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "wick_ext.h"
#include "core/rtc_cache.h"

static void hex_of(const unsigned char *d, int n, char *out)
{
    for (int i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ---- the API on the cpu ----------------------------------------------- */

static void cpu_refusal(void)
{
    if (!t_case("rtc/cpu_refuses")) return;
    wk_device *dev = t_dev();
    T_CHECK(!wk_rtc_available(dev), "the cpu says it compiles kernels");
    T_CHECK(!wk_rtc_available(NULL), "a NULL device says it compiles kernels");
    T_CHECK(!wk_supports(dev, "rtc", WK_F32), "wk_supports(cpu, \"rtc\") is true");
    /* wk_rtc_available sets no error and keeps one already set */
    wk_clear_error();
    (void)wk_rtc_available(dev);
    T_CHECK(wk_last_status() == WK_OK, "wk_rtc_available set an error: %s", wk_last_error());
    static const char src[] = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1; }";
    wk_rtc_kernel *k = wk_rtc_compile(dev, src, "k", NULL, 0);
    T_CHECK(!k, "the cpu compiled a kernel");
    t_check_error("compile on the cpu", WK_ERR_UNSUPPORTED, wk_last_status(), "rtc_compile", "cpu",
                  "GPU", (const char *)NULL);
    wk_rtc_free(k);
    /* bad arguments come first */
    T_CHECK(!wk_rtc_compile(NULL, src, "k", NULL, 0), "NULL device compiled");
    t_check_error("NULL device", WK_ERR_ARGUMENT, wk_last_status(), "NULL device", (const char *)NULL);
    T_CHECK(!wk_rtc_compile(dev, NULL, "k", NULL, 0), "NULL source compiled");
    t_check_error("NULL source", WK_ERR_ARGUMENT, wk_last_status(), "NULL source", (const char *)NULL);
    T_CHECK(!wk_rtc_compile(dev, src, "", NULL, 0), "no name compiled");
    t_check_error("no name", WK_ERR_ARGUMENT, wk_last_status(), "name", (const char *)NULL);
    T_CHECK(!wk_rtc_compile(dev, src, "k", NULL, 2), "NULL options compiled");
    t_check_error("NULL options", WK_ERR_ARGUMENT, wk_last_status(), "options", (const char *)NULL);
    const char *opts[2] = { "-DX=1", NULL };
    T_CHECK(!wk_rtc_compile(dev, src, "k", opts, 2), "a NULL option compiled");
    t_check_error("NULL option", WK_ERR_ARGUMENT, wk_last_status(), "option 1", (const char *)NULL);
    const unsigned g[3] = { 1, 1, 1 };
    t_check_error("launch NULL", WK_ERR_ARGUMENT, wk_rtc_launch(NULL, g, g, 0, NULL, NULL), "rtc_launch", "kernel",
                  (const char *)NULL);
    T_CHECK(!wk_rtc_from_cache(NULL), "NULL kernel from the cache");
    wk_rtc_free(NULL);
}

/* Without a GPU (CI): every GPU device this machine lacks refuses to open,
 * and every one it has answers wk_rtc_available without failing. */
static void each_gpu(wk_device *dev, const char *name, void *arg)
{
    (void)arg;
    bool av = wk_rtc_available(dev);
    T_CHECK(av == wk_supports(dev, "rtc", WK_F32), "%s: wk_rtc_available and wk_supports disagree", name);
    if (!av) {
        wk_rtc_kernel *k = wk_rtc_compile(dev, "__global__ void k() {}", "k", NULL, 0);
        T_CHECK(!k, "%s compiled without a compiler", name);
        wk_rtc_free(k);
        t_check_error("no compiler", WK_ERR_UNSUPPORTED, wk_last_status(), "run-time compiler", (const char *)NULL);
    }
}
static void gpu_answer(void)
{
    if (!t_case("rtc/gpu_devices_answer")) return;
    t_each_gpu(each_gpu, NULL);
}

/* ---- SHA-256 ---------------------------------------------------------- */

static void sha_cases(void)
{
    if (!t_case("rtc/cache/sha256")) return;
    static const struct { const char *in; const char *out; } v[] = {
        { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        wk_sha256 s;
        unsigned char d[32];
        char hex[65];
        wk_sha256_init(&s);
        wk_sha256_update(&s, v[i].in, strlen(v[i].in));
        wk_sha256_final(&s, d);
        hex_of(d, 32, hex);
        T_CHECK(strcmp(hex, v[i].out) == 0, "sha256(\"%s\") = %s, want %s", v[i].in, hex, v[i].out);
    }
    /* a million 'a', fed in uneven pieces */
    wk_sha256 s;
    wk_sha256_init(&s);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    for (size_t piece = 1; left > 0; piece = piece % 997 + 1) {
        size_t n = piece < left ? piece : left;
        wk_sha256_update(&s, a, n);
        left -= n;
    }
    unsigned char d[32];
    char hex[65];
    wk_sha256_final(&s, d);
    hex_of(d, 32, hex);
    T_CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
            "sha256(10^6 x 'a') = %s", hex);
}

/* ---- the key ----------------------------------------------------------- */

static void key_cases(void)
{
    if (!t_case("rtc/cache/key")) return;
    const char *o1[2] = { "-DA=1", "-O3" };
    wk_rtc_key_parts base = {
        .platform = "cuda", .compiler = "nvrtc", .arch = "sm_90", .warp_size = 32,
        .driver_version = 13000, .prelude = "prelude", .source = "src", .name = "k", .options = o1, .n_options = 2,
    };
    unsigned char k0[32], k1[32];
    char h0[65], h1[65];
    wk_rtc_key(&base, k0, h0);
    wk_rtc_key(&base, k1, h1);
    T_CHECK(memcmp(k0, k1, 32) == 0 && strcmp(h0, h1) == 0 && strlen(h0) == 64, "the key is not deterministic");
    char hx[65];
    hex_of(k0, 32, hx);
    T_CHECK(strcmp(hx, h0) == 0, "hex %s is not the key %s", h0, hx);
    const char *o2[2] = { "-DA=1", "-O2" }, *o3[1] = { "-DA=1-O3" }, *o4[2] = { "-O3", "-DA=1" };
    wk_rtc_key_parts ch[12];
    const char *what[12];
    int n = 0;
#define VARY_(field, value)                                                    \
    ch[n] = base;                                                              \
    ch[n].field = value;                                                       \
    what[n++] = #field " = " #value;
    VARY_(platform, "rocm")
    VARY_(compiler, "hiprtc")
    VARY_(arch, "sm_80")
    VARY_(warp_size, 64)
    VARY_(driver_version, 12040)
    VARY_(prelude, "prelude ")
    VARY_(source, "src ")
    VARY_(name, "k<float>")
    VARY_(options, o2)
    VARY_(options, o4)
    ch[n] = base;
    ch[n].options = o3;
    ch[n].n_options = 1;
    what[n++] = "options joined";
#undef VARY_
    for (int i = 0; i < n; i++) {
        wk_rtc_key(&ch[i], k1, h1);
        T_CHECK(memcmp(k0, k1, 32) != 0, "the key did not change with %s", what[i]);
    }
}

/* ---- the folder -------------------------------------------------------- */

/* setenv/unsetenv that restore the old value on undo */
typedef struct env_save { const char *name; char *old; } env_save;
static env_save env_set(const char *name, const char *value)
{
    const char *o = getenv(name);
    env_save s = { name, o ? strdup(o) : NULL };
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return s;
}
static void env_undo(env_save s)
{
    if (s.old) setenv(s.name, s.old, 1);
    else unsetenv(s.name);
    free(s.old);
}

static void folder_cases(void)
{
    if (!t_case("rtc/cache/folder")) return;
    char f[4096];
    env_save a = env_set("WICK_RTC_CACHE", "off"), b = env_set("XDG_CACHE_HOME", "/x/cache"),
             c = env_set("HOME", "/home/u");
    T_CHECK(!wk_rtc_cache_folder(f, sizeof f), "WICK_RTC_CACHE=off gave %s", f);
    T_CHECK(strcmp(wk_rtc_cache_dir(), "") == 0, "wk_rtc_cache_dir with the cache off: %s", wk_rtc_cache_dir());
    setenv("WICK_RTC_CACHE", "", 1);
    T_CHECK(!wk_rtc_cache_folder(f, sizeof f), "WICK_RTC_CACHE= gave %s", f);
    setenv("WICK_RTC_CACHE", "/tmp/my cache", 1);
    T_CHECK(wk_rtc_cache_folder(f, sizeof f) && strcmp(f, "/tmp/my cache") == 0, "WICK_RTC_CACHE: %s", f);
    T_CHECK(strcmp(wk_rtc_cache_dir(), "/tmp/my cache") == 0, "wk_rtc_cache_dir: %s", wk_rtc_cache_dir());
    unsetenv("WICK_RTC_CACHE");
    T_CHECK(wk_rtc_cache_folder(f, sizeof f) && strcmp(f, "/x/cache/wick/rtc") == 0, "XDG_CACHE_HOME: %s", f);
    setenv("XDG_CACHE_HOME", "relative", 1);     /* the XDG rule: absolute only */
    T_CHECK(wk_rtc_cache_folder(f, sizeof f) && strcmp(f, "/home/u/.cache/wick/rtc") == 0, "HOME: %s", f);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    T_CHECK(!wk_rtc_cache_folder(f, sizeof f), "no HOME gave %s", f);
    env_undo(c);
    env_undo(b);
    env_undo(a);
}

/* ---- entries ----------------------------------------------------------- */

/* a fresh folder under the system's temporary folder (removed by rm_tree) */
static bool temp_folder(char *out, size_t n)
{
    const char *t = getenv("TMPDIR");
    snprintf(out, n, "%s/wick-rtc-test-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(out)) {
        t_fail("mkdtemp(%s) failed", out);
        return false;
    }
    return true;
}
static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_tree(p);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}
static int count_files(const char *folder)
{
    int n = 0;
    DIR *d = opendir(folder);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void fill_key(unsigned char key[32], int seed)
{
    for (int i = 0; i < 32; i++) key[i] = (unsigned char)(seed * 31 + i * 7);
}

/* flip one byte of a file at pos (from the end when pos < 0) */
static void poke(const char *path, long pos)
{
    FILE *f = fopen(path, "r+b");
    if (!f) {
        t_fail("cannot open %s", path);
        return;
    }
    fseek(f, pos, pos < 0 ? SEEK_END : SEEK_SET);
    long at = ftell(f);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

static void entry_cases(void)
{
    if (!t_case("rtc/cache/entries")) return;
    char root[4096], folder[4200], path[4400];
    if (!temp_folder(root, sizeof root)) return;
    snprintf(folder, sizeof folder, "%s/a/b/rtc", root);        /* made on the first write */
    unsigned char key[32], other[32];
    fill_key(key, 1);
    fill_key(other, 2);
    unsigned char code[3000];
    for (size_t i = 0; i < sizeof code; i++) code[i] = (unsigned char)(i * 13 + 5);
    char *sym = NULL;
    void *got = NULL;
    size_t size = 0;
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == 0 && !sym && !got, "an absent entry was found");
    T_OK(wk_rtc_cache_write(folder, key, "_Z5scalePf", code, sizeof code));
    struct stat sb;
    T_CHECK(stat(folder, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 077) == 0,
            "the folder is missing or readable by others (mode %o)", (unsigned)(sb.st_mode & 0777));
    T_CHECK(count_files(folder) == 1, "%d files in the folder, want the entry alone", count_files(folder));
    int r = wk_rtc_cache_read(folder, key, &sym, &got, &size);
    T_CHECK(r == 1 && sym && strcmp(sym, "_Z5scalePf") == 0 && size == sizeof code && got &&
                memcmp(got, code, size) == 0,
            "read back: %d, symbol %s, %zu bytes", r, sym ? sym : "NULL", size);
    free(sym);
    free(got);
    /* another key is another file */
    T_CHECK(wk_rtc_cache_read(folder, other, &sym, &got, &size) == 0, "another key found the entry");
    /* a corrupt code byte, a corrupt symbol, a truncated file, a file under another key's name */
    wk_rtc_cache_path(folder, key, path, sizeof path);
    poke(path, -100);
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == -1 && !sym && !got, "a corrupt code byte was taken");
    T_OK(wk_rtc_cache_write(folder, key, "_Z5scalePf", code, sizeof code));     /* rewritten */
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == 1, "the rewritten entry is not read");
    free(sym);
    free(got);
    poke(path, 8 + 32 + 8 + 8 + 32 + 2);
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == -1, "a corrupt symbol was taken");
    T_OK(wk_rtc_cache_write(folder, key, "_Z5scalePf", code, sizeof code));
    T_CHECK(truncate(path, 200) == 0, "truncate failed");
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == -1, "a truncated entry was taken");
    T_CHECK(truncate(path, 10) == 0, "truncate failed");
    T_CHECK(wk_rtc_cache_read(folder, key, &sym, &got, &size) == -1, "a 10-byte entry was taken");
    T_OK(wk_rtc_cache_write(folder, key, "_Z5scalePf", code, sizeof code));
    char opath[4400];
    wk_rtc_cache_path(folder, other, opath, sizeof opath);
    T_CHECK(rename(path, opath) == 0, "rename failed");
    T_CHECK(wk_rtc_cache_read(folder, other, &sym, &got, &size) == -1, "an entry under another key's name was taken");
    T_CHECK(count_files(folder) == 1, "%d files left, want 1 (no temporary files)", count_files(folder));
    /* a folder that cannot be made: an error, not a crash */
    char blocked[4400];
    snprintf(blocked, sizeof blocked, "%s/file", root);
    FILE *f = fopen(blocked, "w");
    if (f) fclose(f);
    snprintf(folder, sizeof folder, "%s/file/rtc", root);
    t_check_error("folder under a file", WK_ERR_IO, wk_rtc_cache_write(folder, key, "k", code, 10), "cache folder",
                  (const char *)NULL);
    rm_tree(root);
}

/* Writers replace one entry with alternating contents while readers read
 * it: a read finds a whole entry (one of the two) or none, never a part. */
typedef struct race_arg {
    const char *folder;
    const unsigned char *key;
    int writer;
    int bad, seen;
} race_arg;
static const unsigned char race_a[5000] = { 1 }, race_b[7000] = { 2 };

static void *race_thread(void *p)
{
    race_arg *a = p;
    for (int i = 0; i < 60; i++) {
        if (a->writer) {
            const bool first = (i + a->writer) % 2;
            if (wk_rtc_cache_write(a->folder, a->key, first ? "ka" : "kb", first ? race_a : race_b,
                                   first ? sizeof race_a : sizeof race_b) != WK_OK)
                a->bad++;
        } else {
            char *sym = NULL;
            void *code = NULL;
            size_t size = 0;
            int r = wk_rtc_cache_read(a->folder, a->key, &sym, &code, &size);
            if (r == -1) a->bad++;
            if (r == 1) {
                a->seen++;
                const bool ok = (!strcmp(sym, "ka") && size == sizeof race_a && !memcmp(code, race_a, size)) ||
                                (!strcmp(sym, "kb") && size == sizeof race_b && !memcmp(code, race_b, size));
                if (!ok) a->bad++;
            }
            free(sym);
            free(code);
        }
    }
    return NULL;
}

static void race_case(void)
{
    if (!t_case("rtc/cache/concurrent_writers")) return;
    char root[4096];
    if (!temp_folder(root, sizeof root)) return;
    unsigned char key[32];
    fill_key(key, 9);
    race_arg args[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        args[i] = (race_arg){ root, key, i < 3 ? i + 1 : 0, 0, 0 };
        pthread_create(&th[i], NULL, race_thread, &args[i]);
    }
    int bad = 0, seen = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        bad += args[i].bad;
        seen += args[i].seen;
    }
    T_CHECK(bad == 0, "%d reads or writes saw a partial or failed entry", bad);
    T_CHECK(count_files(root) == 1, "%d files left, want the entry alone", count_files(root));
    (void)seen;
    rm_tree(root);
}

T_SUITE(rtc)
{
    cpu_refusal();
    gpu_answer();
    sha_cases();
    key_cases();
    folder_cases();
    entry_cases();
    race_case();
}
