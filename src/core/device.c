/* device.c — the device registry: "cpu" (built in), "cuda:N" and "rocm:N"
 * (GPU plugins, loaded on first use with dlopen(RTLD_LOCAL) and entered
 * through their one exported symbol), device references, generator state.
 *
 * Plugin search, first hit wins: $WICK_CUDA_PLUGIN / $WICK_ROCM_PLUGIN (a
 * file: when set, that file or no plugin of the kind at all),
 * $WICK_PLUGIN_DIR/libwick_<kind>.so, the folder holding libwick (or the
 * executable it is linked into), the lib folder beside that folder when it
 * is a bin folder (PREFIX/lib for PREFIX/bin/wick, where make install puts
 * the plugins), then the dynamic loader's own search for
 * libwick_<kind>.so. A missing plugin is not an error: the kind has zero
 * devices and wk_plugin_status says why, its first words one of "not
 * built", "no driver", "not loadable" or "not loaded" (the named file).
 * wk_env_refresh asks every loaded backend to read its knobs again. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core.h"
#include "wick_ext.h"

const wk_backend_iface *wk_cpu_backend(const wk_host_api *host);

enum { KIND_CPU, KIND_CUDA, KIND_ROCM, KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = { "cpu", "cuda", "rocm" };
#define MAX_DEVICES 64

static struct {
    bool tried;
    const wk_backend_iface *be;
    void *handle;
    char status[512];
    wk_device *open[MAX_DEVICES];
} kinds[KIND_COUNT];

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static int kind_of(const char *s, size_t n)
{
    for (int k = 0; k < KIND_COUNT; k++)
        if (strlen(kind_names[k]) == n && strncmp(s, kind_names[k], n) == 0) return k;
    return -1;
}

/* What the failed attempts of one plugin search saw, worst news last:
 * nothing there, a file there that is not a loadable plugin, a plugin
 * there whose own libraries (the GPU runtime, the driver) are missing. */
enum { SEEN_NOTHING, SEEN_UNLOADABLE, SEEN_NO_DRIVER };

/* dlopen(path); on failure appends "path (why): loader's words" to the
 * kind's status and raises *seen to what the failure shows. */
static void *try_dlopen(int k, const char *path, const char *why, int *seen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    if (!e) e = "not loadable";
    /* glibc names the file it could not open first: the plugin itself, or
     * a library the plugin needs */
    size_t plen = strlen(path);
    bool about_plugin = strncmp(e, path, plen) == 0 && e[plen] == ':';
    int saw = SEEN_NOTHING;
    if (!about_plugin && strstr(e, "cannot open shared object file")) saw = SEEN_NO_DRIVER;
    else if (!about_plugin || (strchr(path, '/') && access(path, F_OK) == 0)) saw = SEEN_UNLOADABLE;
    if (saw > *seen) *seen = saw;
    size_t used = strlen(kinds[k].status);
    snprintf(kinds[k].status + used, sizeof kinds[k].status - used, "%s%s (%s): %s", used ? "; " : "", path, why, e);
    return NULL;
}

/* Loads kind k's plugin once; under registry_lock. */
static void load_plugin(int k)
{
    if (kinds[k].tried) return;
    kinds[k].tried = true;
    if (k == KIND_CPU) {
        kinds[k].be = wk_cpu_backend(&wk_host);
        return;
    }
    char file[64], path[4096];
    snprintf(file, sizeof file, "libwick_%s.so", kind_names[k]);
    int seen = SEEN_NOTHING;
    void *h = NULL;
    const char *from = file;   /* what was loaded, for the messages below */
    const char *var = k == KIND_CUDA ? "WICK_CUDA_PLUGIN" : "WICK_ROCM_PLUGIN";
    const char *env = getenv(var);
    if (env && *env) {
        /* named explicitly: that file or nothing, never a plugin found
         * elsewhere in its place */
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(kinds[k].status, sizeof kinds[k].status, "not loaded: %s=%.200s cannot be loaded: %.200s", var,
                     env, e ? e : "not loadable");
            return;
        }
        from = env;
    }
    const char *dir = getenv("WICK_PLUGIN_DIR");
    if (!h && dir && *dir) {
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if ((h = try_dlopen(k, path, "WICK_PLUGIN_DIR", &seen))) from = path;
    }
    if (!h) {
        /* the file holding this code: libwick.so, or the executable libwick.a
         * is linked into, whose name the loader gives as it was run (no
         * folder when found through PATH: then ask the kernel) */
        Dl_info info;
        char self[4096] = "";
        if (dladdr((void *)&load_plugin, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
            snprintf(self, sizeof self, "%s", info.dli_fname);
        } else {
            ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
            self[len > 0 ? len : 0] = 0;
        }
        const char *slash = strrchr(self, '/');
        if (slash) {
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - self), self, file);
            if ((h = try_dlopen(k, path, "beside libwick", &seen))) from = path;
        }
        /* PREFIX/bin/program: PREFIX/lib, where make install puts plugins */
        if (!h && slash && slash - self >= 4 && !strncmp(slash - 4, "/bin", 4)) {
            snprintf(path, sizeof path, "%.*s/lib/%s", (int)(slash - 4 - self), self, file);
            if ((h = try_dlopen(k, path, "the lib folder beside bin", &seen))) from = path;
        }
    }
    if (!h) h = try_dlopen(k, file, "loader search path", &seen);
    if (!h) {
        /* the first words say which: no plugin file anywhere, a plugin
         * that needs a library (the GPU runtime) this machine lacks, or a
         * file of that name that is not a loadable plugin */
        char detail[sizeof kinds[k].status];
        snprintf(detail, sizeof detail, "%s", kinds[k].status);
        snprintf(kinds[k].status, sizeof kinds[k].status, "%s %.480s",
                 seen == SEEN_NO_DRIVER ? "no driver:" : seen == SEEN_UNLOADABLE ? "not loadable:" : "not built:", detail);
        return;
    }
    wk_backend_entry_fn entry = (wk_backend_entry_fn)dlsym(h, "wk_backend_entry_v1");
    if (!entry) {
        snprintf(kinds[k].status, sizeof kinds[k].status, "not loadable: %.400s has no entry point wk_backend_entry_v1",
                 from);
        dlclose(h);
        return;
    }
    wk_status saved = wk_last_status();
    const wk_backend_iface *be = entry(&wk_host);
    if (!be || be->abi != WK_BACKEND_ABI) {
        snprintf(kinds[k].status, sizeof kinds[k].status, "not loadable: %.200s refused to load: %.250s", from,
                 be ? "backend ABI mismatch" : wk_last_error());
        dlclose(h);
        return;
    }
    if (saved == WK_OK) wk_clear_error();
    kinds[k].status[0] = 0;
    kinds[k].be = be;
    kinds[k].handle = h;
}

void wk_env_refresh(void)
{
    pthread_mutex_lock(&registry_lock);
    for (int k = 0; k < KIND_COUNT; k++)
        if (kinds[k].be && kinds[k].be->env_refresh) kinds[k].be->env_refresh();
    pthread_mutex_unlock(&registry_lock);
}

int wk_device_count(const char *kind)
{
    if (!kind) return 0;
    int k = kind_of(kind, strlen(kind));
    if (k < 0) return 0;
    pthread_mutex_lock(&registry_lock);
    load_plugin(k);
    int n = kinds[k].be ? kinds[k].be->device_count() : 0;
    pthread_mutex_unlock(&registry_lock);
    return n < 0 ? 0 : n;
}

const char *wk_plugin_status(const char *kind)
{
    if (!kind) return "";
    int k = kind_of(kind, strlen(kind));
    if (k < 0) return "unknown device kind";
    pthread_mutex_lock(&registry_lock);
    load_plugin(k);
    pthread_mutex_unlock(&registry_lock);
    return kinds[k].status;
}

wk_device *wk_device_open(const char *name)
{
    WK_ENTER("device_open");
    if (!name) {
        wk_error(WK_ERR_ARGUMENT, "device name is NULL");
        WK_LEAVE();
        return NULL;
    }
    const char *colon = strchr(name, ':');
    size_t klen = colon ? (size_t)(colon - name) : strlen(name);
    int k = kind_of(name, klen);
    long index = 0;
    if (colon) {
        char *end;
        index = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || index < 0 || index >= MAX_DEVICES) k = -1;
    }
    if (k < 0) {
        wk_error(WK_ERR_DEVICE, "unknown device '%s' (expected cpu, cuda:N or rocm:N)", name);
        WK_LEAVE();
        return NULL;
    }
    wk_device *dev = NULL;
    pthread_mutex_lock(&registry_lock);
    load_plugin(k);
    const wk_backend_iface *be = kinds[k].be;
    int count = be ? be->device_count() : 0;
    if (!be) {
        wk_error(WK_ERR_DEVICE, "no %s device: %s", kind_names[k], kinds[k].status);
    } else if (index >= count) {
        wk_error(WK_ERR_DEVICE, "no device %s: %d %s device(s) found", name, count, kind_names[k]);
    } else if ((dev = kinds[k].open[index]) != NULL) {
        atomic_fetch_add(&dev->refs, 1);
        dev->opens++;
    } else {
        void *ctx = NULL;
        if (be->device_open((int)index, &ctx) == WK_OK) {
            dev = calloc(1, sizeof *dev);
            if (!dev) {
                be->device_close(ctx);
                wk_error(WK_ERR_MEMORY, "out of memory");
            } else {
                dev->be = be;
                dev->ctx = ctx;
                dev->index = (int)index;
                snprintf(dev->name, sizeof dev->name, k == KIND_CPU ? "%s" : "%s:%ld", kind_names[k], index);
                atomic_init(&dev->refs, 1);
                dev->opens = 1;
                pthread_mutex_init(&dev->rng_lock, NULL);
                kinds[k].open[index] = dev;
            }
        }
    }
    pthread_mutex_unlock(&registry_lock);
    WK_LEAVE();
    return dev;
}

wk_device *wk_device_retain(wk_device *dev)
{
    atomic_fetch_add(&dev->refs, 1);
    return dev;
}

void wk_device_release(wk_device *dev)
{
    if (!dev) return;
    /* Not the last reference (every tensor holds one): drop it without the
     * lock. Only a holder of the last one takes the lock and may free the
     * device; wk_device_open adds references under the lock. */
    int refs = atomic_load_explicit(&dev->refs, memory_order_relaxed);
    while (refs > 1)
        if (atomic_compare_exchange_weak(&dev->refs, &refs, refs - 1)) return;
    pthread_mutex_lock(&registry_lock);
    if (atomic_fetch_sub(&dev->refs, 1) == 1) {
        for (int k = 0; k < KIND_COUNT; k++)
            if (kinds[k].be == dev->be && dev->index < MAX_DEVICES && kinds[k].open[dev->index] == dev)
                kinds[k].open[dev->index] = NULL;
        dev->be->device_close(dev->ctx);
        pthread_mutex_destroy(&dev->rng_lock);
        free(dev);
    }
    pthread_mutex_unlock(&registry_lock);
}

void wk_device_close(wk_device *dev)
{
    if (!dev) return;
    pthread_mutex_lock(&registry_lock);
    int opens = dev->opens;
    if (opens > 0) dev->opens--;
    pthread_mutex_unlock(&registry_lock);
    if (opens > 0) wk_device_release(dev);
}

const char *wk_device_name(const wk_device *dev) { return dev ? dev->name : "(null)"; }

wk_status wk_device_info_get(wk_device *dev, wk_device_info *out)
{
    WK_ENTER("device_info");
    wk_status st;
    if (!dev || !out) st = wk_error(WK_ERR_ARGUMENT, "NULL device or output");
    else {
        st = dev->be->device_info(dev->ctx, out);
        if (st == WK_OK) snprintf(out->name, sizeof out->name, "%s", dev->name);
    }
    WK_LEAVE();
    return st;
}

wk_status wk_device_synchronize(wk_device *dev)
{
    WK_ENTER("synchronize");
    wk_status st = dev ? dev->be->synchronize(dev->ctx) : wk_error(WK_ERR_ARGUMENT, "NULL device");
    WK_LEAVE();
    return st;
}

void *wk_device_stream(wk_device *dev)
{
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "device_stream: NULL device");
        return NULL;
    }
    void *s = NULL;
    if (dev->be->stream && dev->be->stream(dev->ctx, &s) != WK_OK) return NULL;
    return s;
}

static wk_status stream_order(wk_device *dev, void *stream, bool dev_waits, const char *what)
{
    if (!dev) return wk_error(WK_ERR_ARGUMENT, "%s: NULL device", what);
    if (!dev->be->stream) return WK_OK;   /* the cpu: nothing is queued */
    if (!dev->be->stream_order) return wk_error(WK_ERR_UNSUPPORTED, "%s: %s cannot order streams", what, dev->name);
    return dev->be->stream_order(dev->ctx, stream, dev_waits);
}

wk_status wk_device_wait_stream(wk_device *dev, void *stream)
{
    return stream_order(dev, stream, true, "device_wait_stream");
}

wk_status wk_stream_wait_device(void *stream, wk_device *dev)
{
    return stream_order(dev, stream, false, "stream_wait_device");
}

wk_status wk_device_set_seed(wk_device *dev, uint64_t seed)
{
    if (!dev) return wk_error(WK_ERR_ARGUMENT, "set_seed: NULL device");
    pthread_mutex_lock(&dev->rng_lock);
    dev->seed = seed;
    dev->rng_offset = 0;
    pthread_mutex_unlock(&dev->rng_lock);
    return WK_OK;
}

uint64_t wk_device_rng_take(wk_device *dev, uint64_t blocks, uint64_t *seed)
{
    pthread_mutex_lock(&dev->rng_lock);
    uint64_t off = dev->rng_offset;
    dev->rng_offset += blocks;
    *seed = dev->seed;
    pthread_mutex_unlock(&dev->rng_lock);
    return off;
}

const char *wk_cpu_blas_name(void);

static char build_text[512];

static void make_build_text(void)
{
    snprintf(build_text, sizeof build_text, "wick %d.%d.%d, %s, cpu BLAS: %s, %s",
             WK_VERSION_MAJOR, WK_VERSION_MINOR, WK_VERSION_PATCH,
#if defined(__clang__)
             "clang " __clang_version__,
#elif defined(__GNUC__)
             "gcc " __VERSION__,
#else
             "unknown compiler",
#endif
             wk_cpu_blas_name(),
#ifdef WK_FAULT_INJECT
             "FAULT-INJECTION BUILD"
#else
             "release build"
#endif
    );
}

const char *wk_build_info(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_build_text);
    return build_text;
}
