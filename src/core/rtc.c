/* rtc.c — kernels compiled at run time (include/wick_ext.h): the public
 * wk_rtc_* functions, the disk cache (rtc_cache.h) and SHA-256 for its
 * keys and checksums. Compiling, loading and launching are the GPU
 * plugin's (backend.h: rtc_target .. rtc_launch; src/gpu/rtc.hip); the
 * cpu has none of them, so every call there is WK_ERR_UNSUPPORTED. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core.h"
#include "rtc_cache.h"
#include "wick_ext.h"

/* ---- SHA-256 (FIPS 180-4) ---------------------------------------------- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR_(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR_(w[i - 15], 7) ^ ROR_(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR_(w[i - 2], 17) ^ ROR_(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR_(e, 6) ^ ROR_(e, 11) ^ ROR_(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ROR_(a, 2) ^ ROR_(a, 13) ^ ROR_(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void wk_sha256_init(wk_sha256 *s)
{
    static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->used = 0;
}

void wk_sha256_update(wk_sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->bytes += n;
    while (n > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->buf + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            sha_block(s->h, s->buf);
            s->used = 0;
        }
    }
}

void wk_sha256_final(wk_sha256 *s, unsigned char out[32])
{
    const uint64_t bits = s->bytes * 8;
    static const unsigned char pad[64] = { 0x80 };
    size_t padn = s->used < 56 ? 56 - s->used : 120 - s->used;
    wk_sha256_update(s, pad, padn);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    wk_sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

/* ---- the key -------------------------------------------------------------- */

static void key_str(wk_sha256 *s, const char *v)
{
    uint64_t n = v ? strlen(v) : UINT64_MAX;      /* NULL differs from "" */
    wk_sha256_update(s, &n, sizeof n);
    if (v) wk_sha256_update(s, v, strlen(v));
}
static void key_int(wk_sha256 *s, int64_t v) { wk_sha256_update(s, &v, sizeof v); }

void wk_rtc_key(const wk_rtc_key_parts *p, unsigned char key[32], char hex[65])
{
    wk_sha256 s;
    wk_sha256_init(&s);
    key_str(&s, "wick rtc cache 1");
    key_int(&s, WK_VERSION_MAJOR);
    key_int(&s, WK_VERSION_MINOR);
    key_int(&s, WK_VERSION_PATCH);
    key_str(&s, p->platform);
    key_str(&s, p->compiler);
    key_str(&s, p->arch);
    key_int(&s, p->warp_size);
    key_int(&s, p->driver_version);
    key_str(&s, p->prelude);
    key_str(&s, p->name);
    key_int(&s, p->n_options);
    for (int i = 0; i < p->n_options; i++) key_str(&s, p->options[i]);
    key_str(&s, p->source);
    wk_sha256_final(&s, key);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
}

/* ---- the folder and its files --------------------------------------------- */

bool wk_rtc_cache_folder(char *out, size_t n)
{
    const char *env = getenv("WICK_RTC_CACHE");
    int w;
    if (env) {
        if (!*env || strcmp(env, "off") == 0) return false;
        w = snprintf(out, n, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/') w = snprintf(out, n, "%s/wick/rtc", xdg);
        else if (home && *home) w = snprintf(out, n, "%s/.cache/wick/rtc", home);
        else return false;
    }
    return w > 0 && (size_t)w < n;
}

void wk_rtc_cache_path(const char *folder, const unsigned char key[32], char *out, size_t n)
{
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    snprintf(out, n, "%s/%s.wkrtc", folder, hex);
}

/* mkdir -p, each new folder 0700 */
static wk_status make_folder(const char *folder)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", folder) >= (int)sizeof p)
        return wk_error(WK_ERR_IO, "cache folder name too long: %.200s", folder);
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == 0) {
            char keep = *c;
            *c = 0;
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return wk_error(WK_ERR_IO, "cannot create the cache folder %.300s: %s", p, strerror(errno));
            *c = keep;
            if (!keep) break;
        }
    }
    struct stat sb;
    if (stat(folder, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return wk_error(WK_ERR_IO, "the cache folder %.300s is not a folder", folder);
    return WK_OK;
}

static const char entry_magic[8] = { 'W', 'K', 'R', 'T', 'C', '0', '1', '\n' };
enum { ENTRY_HEAD = 8 + 32 + 8 + 8 + 32 };

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void entry_sum(const char *symbol, size_t s, const void *code, size_t c, unsigned char out[32])
{
    wk_sha256 h;
    wk_sha256_init(&h);
    wk_sha256_update(&h, symbol, s);
    wk_sha256_update(&h, code, c);
    wk_sha256_final(&h, out);
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

wk_status wk_rtc_cache_write(const char *folder, const unsigned char key[32], const char *symbol, const void *code,
                             size_t size)
{
    wk_status st = make_folder(folder);
    if (st != WK_OK) return st;
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    wk_rtc_cache_path(folder, key, path, sizeof path);
    /* a name no other writer uses: mkstemp's */
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return wk_error(WK_ERR_IO, "cannot write the cache entry %.300s: %s", tmp, strerror(errno));
    const size_t s = strlen(symbol);
    unsigned char head[ENTRY_HEAD];
    memcpy(head, entry_magic, 8);
    memcpy(head + 8, key, 32);
    put_u64(head + 40, s);
    put_u64(head + 48, size);
    entry_sum(symbol, s, code, size, head + 56);
    bool ok = write_all(fd, head, sizeof head) && write_all(fd, symbol, s) && write_all(fd, code, size);
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        return wk_error(WK_ERR_IO, "cannot write the cache entry %.300s: %s", path, strerror(err));
    }
    return WK_OK;
}

int wk_rtc_cache_read(const char *folder, const unsigned char key[32], char **symbol, void **code, size_t *size)
{
    *symbol = NULL;
    *code = NULL;
    *size = 0;
    char path[PATH_MAX];
    wk_rtc_cache_path(folder, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int r = -1;
    char *sym = NULL;
    unsigned char *buf = NULL, head[ENTRY_HEAD], sum[32];
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < ENTRY_HEAD) goto done;
    if (fread(head, 1, sizeof head, f) != sizeof head) goto done;
    if (memcmp(head, entry_magic, 8) != 0 || memcmp(head + 8, key, 32) != 0) goto done;
    const uint64_t s = get_u64(head + 40), c = get_u64(head + 48);
    if (s == 0 || s > 4096 || c == 0 || c > (uint64_t)sb.st_size || (uint64_t)sb.st_size != ENTRY_HEAD + s + c)
        goto done;
    sym = malloc(s + 1);
    buf = malloc(c);
    if (!sym || !buf) goto done;
    if (fread(sym, 1, s, f) != s || fread(buf, 1, c, f) != c) goto done;
    sym[s] = 0;
    entry_sum(sym, s, buf, c, sum);
    if (memcmp(sum, head + 56, 32) != 0 || strlen(sym) != s) goto done;
    *symbol = sym;
    *code = buf;
    *size = c;
    sym = NULL;
    buf = NULL;
    r = 1;
done:
    fclose(f);
    free(sym);
    free(buf);
    return r;
}

/* ---- the public functions ------------------------------------------------- */

struct wk_rtc_kernel {
    wk_device *dev;            /* retained                                */
    void *fn;                  /* the backend's handle                    */
    bool from_cache;
};

static bool rtc_members(const wk_backend_iface *be)
{
    return be->rtc_target && be->rtc_compiler && be->rtc_compile && be->rtc_load && be->rtc_unload && be->rtc_launch;
}

bool wk_rtc_available(wk_device *dev)
{
    if (!dev || !rtc_members(dev->be)) return false;
    /* the query may set an error: keep the caller's */
    wk_status saved = wk_last_status();
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", wk_last_error());
    wk_rtc_target t;
    bool ok = dev->be->rtc_target(dev->ctx, &t) == WK_OK && dev->be->rtc_compiler() == WK_OK;
    if (saved == WK_OK) wk_clear_error();
    else wk_error(saved, "%s", msg);
    return ok;
}

static _Thread_local char tl_folder[PATH_MAX];

const char *wk_rtc_cache_dir(void)
{
    if (!wk_rtc_cache_folder(tl_folder, sizeof tl_folder)) tl_folder[0] = 0;
    return tl_folder;
}

static wk_rtc_kernel *compile_impl(wk_device *dev, const char *source, const char *name, const char *const *options,
                                   int n_options)
{
    if (!dev || !source || !name || !*name || n_options < 0 || (n_options > 0 && !options)) {
        wk_error(WK_ERR_ARGUMENT, "%s", !dev ? "NULL device" : !source ? "NULL source" : !name || !*name ? "no kernel name"
                                                                                      : "bad options (NULL or a negative count)");
        return NULL;
    }
    for (int i = 0; i < n_options; i++)
        if (!options[i]) {
            wk_error(WK_ERR_ARGUMENT, "option %d is NULL", i);
            return NULL;
        }
    const wk_backend_iface *be = dev->be;
    if (!rtc_members(be)) {
        wk_error(WK_ERR_UNSUPPORTED, "kernels compiled at run time are not available on %s (a GPU device is needed)",
                 dev->name);
        return NULL;
    }
    wk_rtc_target t;
    if (be->rtc_target(dev->ctx, &t) != WK_OK) return NULL;
    wk_rtc_key_parts parts = {
        .platform = be->kind, .compiler = t.compiler, .arch = t.arch,
        .warp_size = t.warp_size, .driver_version = t.driver_version, .prelude = t.prelude, .source = source,
        .name = name, .options = options, .n_options = n_options,
    };
    unsigned char key[32];
    char hex[65], folder[PATH_MAX];
    wk_rtc_key(&parts, key, hex);
    const bool cached = wk_rtc_cache_folder(folder, sizeof folder);

    wk_rtc_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        wk_error(WK_ERR_MEMORY, "out of host memory");
        return NULL;
    }
    if (cached) {
        char *sym = NULL;
        void *code = NULL;
        size_t size = 0;
        if (wk_rtc_cache_read(folder, key, &sym, &code, &size) == 1) {
            /* a checksummed entry the loader still refuses (written by a
             * driver that no longer agrees) is compiled again */
            if (be->rtc_load(dev->ctx, code, size, sym, &k->fn) == WK_OK) k->from_cache = true;
        }
        free(sym);
        free(code);
    }
    if (!k->fn) {
        wk_rtc_code c = { 0 };
        if (be->rtc_compile(&t, source, name, options, n_options, &c) != WK_OK) {
            free(k);
            return NULL;
        }
        wk_status st = be->rtc_load(dev->ctx, c.code, c.size, c.symbol, &k->fn);
        if (st == WK_OK && cached) {
            /* the cache only saves time: a folder we cannot write is not
             * the caller's error (wk_rtc_compile drops its message) */
            (void)wk_rtc_cache_write(folder, key, c.symbol, c.code, c.size);
        }
        free(c.code);
        free(c.symbol);
        if (st != WK_OK) {
            free(k);
            return NULL;
        }
    }
    k->dev = wk_device_retain(dev);
    return k;
}

wk_rtc_kernel *wk_rtc_compile(wk_device *dev, const char *source, const char *name, const char *const *options,
                              int n_options)
{
    /* a cache entry the loader refuses, or a folder that cannot be
     * written, is cleared from the error state on the way to success:
     * success leaves the caller's earlier error as it was */
    const wk_status saved = wk_last_status();
    char *msg = saved != WK_OK ? strdup(wk_last_error()) : NULL;
    WK_ENTER("rtc_compile");
    wk_rtc_kernel *k = compile_impl(dev, source, name, options, n_options);
    WK_LEAVE();
    if (k) {
        if (saved == WK_OK) wk_clear_error();
        else wk_error(saved, "%s", msg ? msg : "");
    }
    free(msg);
    return k;
}

static wk_status launch_impl(const wk_rtc_kernel *k, const unsigned grid[3], const unsigned block[3],
                             size_t shared_bytes, void *stream, void **args)
{
    if (!k || !grid || !block)
        return wk_error(WK_ERR_ARGUMENT, "NULL %s", !k ? "kernel" : !grid ? "grid" : "block");
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            return wk_error(WK_ERR_ARGUMENT, "%s[%d] is 0 (grid %ux%ux%u, block %ux%ux%u)", grid[i] ? "block" : "grid",
                            i, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (shared_bytes > UINT_MAX) return wk_error(WK_ERR_ARGUMENT, "%zu bytes of shared memory", shared_bytes);
    return k->dev->be->rtc_launch(k->dev->ctx, k->fn, grid, block, (unsigned)shared_bytes, stream, args);
}

wk_status wk_rtc_launch(const wk_rtc_kernel *k, const unsigned grid[3], const unsigned block[3], size_t shared_bytes,
                        void *stream, void **args)
    WK_API(wk_status, "rtc_launch", launch_impl(k, grid, block, shared_bytes, stream, args))

void wk_rtc_free(wk_rtc_kernel *k)
{
    if (!k) return;
    k->dev->be->rtc_unload(k->dev->ctx, k->fn);
    wk_device_release(k->dev);
    free(k);
}

bool wk_rtc_from_cache(const wk_rtc_kernel *k) { return k && k->from_cache; }
