/* rtc_checks.c — custom ops and kernels compiled at run time on a GPU
 * (wick_ext.h), the part CI cannot run:
 *  - one HIP-style source compiled for the device (NVRTC on cuda:N,
 *    hiprtc on rocm:N): an extern "C" kernel, a template instance by its
 *    name expression, a kernel using the prelude's warp helpers
 *    (wk_warp_sum<WK_WARP_SIZE>, wk_ballot) against sums made here;
 *  - a custom op whose cuda/rocm callback launches a compiled kernel on
 *    the stream the callback gets, with a cpu callback for the same op:
 *    both devices give the same values; the op between wick ops on the
 *    device's stream (no synchronisation: order is the stream's); an
 *    in-place op through the same kernel on a narrowed view; an op with
 *    no callback for this kind fails "not implemented for <kind>";
 *  - the disk cache: the first compile in a fresh cache folder compiles,
 *    the second (same process) and a second process (this program run
 *    again with --child) load the entry (wk_rtc_from_cache), and the
 *    child's load is timed (the bound: under 5 ms); a child with
 *    the compiler turned off (WICK_RTC_LIB=none) loads the entry and runs
 *    it; an entry
 *    corrupted on disk is compiled again and rewritten; different options
 *    are another entry;
 *  - errors: a compile error returns the compiler's log (the undefined
 *    name and its line in the user's source), an unknown kernel name,
 *    zero grid or block dims; WICK_RTC_LIB=none (and no cache) in a child process makes
 *    wk_rtc_available and wk_supports(dev, "rtc") false and compile
 *    WK_ERR_UNSUPPORTED;
 *  - a thread whose first wick calls compile, launch and
 *    free a kernel (the driver's context bound to it);
 *  - launch cost: 2000 launches of a one-block kernel against 2000 small
 *    built-in ops (wk_affine of 256 elements) on the same device, both
 *    timed with events (printed; the issue asks for the same cost within
 *    10%).
 * Usage: wick-rtc-checks [--device NAME]   (default: cuda:0, else rocm:0)
 * Ends with "N passed, N failed". */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick.h"
#include "wick_ext.h"

static int passed, failed;

static void check(const char *what, bool ok, const char *detail)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL rtc/%s: %s (%s)\n", what, detail ? detail : "", wk_last_error());
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The kernels: one source for NVIDIA and AMD. */
static const char kSource[] =
    "extern \"C\" __global__ void scale(float *out, const float *in, float a, int64_t n)\n"
    "{\n"
    "    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = in[i] * a + (float)OFFSET;\n"
    "}\n"
    "template <typename T> __global__ void axpy(T *y, const T *x, T a, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] += a * x[i];\n"
    "}\n"
    "template __global__ void axpy<float>(float *, const float *, float, int);\n"
    "extern \"C\" __global__ void rowsum(const float *x, float *out, int n, unsigned long long *ballots)\n"
    "{\n"
    "    float s = 0;\n"
    "    for (int i = wk_lane<WK_WARP_SIZE>(); i < n; i += WK_WARP_SIZE) s += x[(int64_t)blockIdx.x * n + i];\n"
    "    s = wk_warp_sum<WK_WARP_SIZE>(s);\n"
    "    uint64_t b = wk_ballot<WK_WARP_SIZE>(wk_lane<WK_WARP_SIZE>() % 3 == 0);\n"
    "    if (wk_lane<WK_WARP_SIZE>() == 0) { out[blockIdx.x] = s; ballots[blockIdx.x] = b; }\n"
    "}\n";
static const char *const kOpts[] = { "-DOFFSET=0" };

static wk_rtc_kernel *compile(wk_device *dev, const char *name, const char *opt)
{
    const char *opts[1] = { opt ? opt : kOpts[0] };
    return wk_rtc_compile(dev, kSource, name, opts, 1);
}

/* ---- the custom op: out = a * in (a GPU kernel or a cpu loop) -------- */

typedef struct scale_user {
    wk_rtc_kernel *kernel;     /* the device's "scale"                    */
    float factor;
    int gpu_calls, cpu_calls;
    void *stream_seen;
} scale_user;

static wk_status scale_gpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                           const wk_raw_view *in)
{
    scale_user *u = op->user;
    u->gpu_calls++;
    u->stream_seen = env->stream;
    int64_t n = 1;
    for (int d = 0; d < out->rank; d++) n *= out->dims[d];
    void *o = out->data, *i = in->data;
    float a = u->factor;
    void *args[4] = { &o, &i, &a, &n };
    const unsigned grid[3] = { (unsigned)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
    return wk_rtc_launch(u->kernel, grid, block, 0, env->stream, args);
}
static wk_status scale_cpu(const wk_custom_op1 *op, const wk_custom_env *env, const wk_raw_view *out,
                           const wk_raw_view *in)
{
    (void)env;
    scale_user *u = op->user;
    u->cpu_calls++;
    int64_t n = 1;
    for (int d = 0; d < out->rank; d++) n *= out->dims[d];
    for (int64_t k = 0; k < n; k++) ((float *)out->data)[k] = ((const float *)in->data)[k] * u->factor;
    return WK_OK;
}
/* in place: dst = factor * dst (dst contiguous rows of a narrowed view) */
static wk_status scale_inplace_gpu(const wk_inplace_op1 *op, const wk_custom_env *env, const wk_raw_view *dst)
{
    scale_user *u = op->user;
    u->gpu_calls++;
    /* rows of dims[1] contiguous elements, row stride strides[0] */
    for (int64_t r = 0; r < dst->dims[0]; r++) {
        void *p = (float *)dst->data + r * dst->strides[0];
        int64_t n = dst->dims[1];
        float a = u->factor;
        void *args[4] = { &p, &p, &a, &n };
        const unsigned grid[3] = { (unsigned)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
        wk_status st = wk_rtc_launch(u->kernel, grid, block, 0, env->stream, args);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

static bool read_all(const wk_tensor *t, float *out, size_t n)
{
    return t && wk_to_host(t, out, n * sizeof(float)) == WK_OK;
}

static void custom_checks(wk_device *dev, wk_rtc_kernel *k)
{
    scale_user u = { .kernel = k, .factor = 3.0f };
    wk_custom_op1 op = { .name = "scale", .cpu = scale_cpu, .cuda = scale_gpu, .rocm = scale_gpu, .contiguous = true,
                         .user = &u };
    enum { N = 100003 };
    float *host = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float)), *ref = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) host[i] = (float)((i * 37) % 1001) * 0.01f - 5.0f;
    wk_device *cpu = wk_device_open("cpu");
    /* the op on the GPU, between wick ops: y = scale(exp(x) ... ) without syncs */
    wk_tensor *x = wk_from_host(dev, WK_F32, WK_SHAPE(N), host);
    wk_tensor *e = x ? wk_affine(x, 1.0, 1.0) : NULL;                  /* x + 1 */
    wk_tensor *y = e ? wk_apply_op1(&op, e) : NULL;                    /* 3 (x + 1) */
    wk_tensor *z = y ? wk_affine(y, 1.0, -3.0) : NULL;                 /* 3 x */
    bool ok = z && read_all(z, got, N);
    int bad = -1;
    for (int i = 0; ok && i < N; i++)
        if (got[i] != (host[i] + 1.0f) * 3.0f - 3.0f) {
            bad = i;
            ok = false;
        }
    char d[160];
    snprintf(d, sizeof d, "element %d: %g, want %g", bad, bad >= 0 ? got[bad] : 0, bad >= 0 ? (host[bad] + 1.0f) * 3.0f - 3.0f : 0);
    check("custom_op/gpu_between_ops", ok, d);
    check("custom_op/gpu_callback_ran", u.gpu_calls == 1 && u.cpu_calls == 0, "the GPU callback did not run once");
    check("custom_op/got_stream", u.stream_seen != NULL, "no stream on a GPU");
    /* the same op on the cpu: same values */
    wk_tensor *xc = cpu ? wk_from_host(cpu, WK_F32, WK_SHAPE(N), host) : NULL;
    wk_tensor *yc = xc ? wk_apply_op1(&op, xc) : NULL;
    wk_tensor *yg = x ? wk_apply_op1(&op, x) : NULL;
    ok = read_all(yc, ref, N) && read_all(yg, got, N) && memcmp(ref, got, N * sizeof(float)) == 0;
    check("custom_op/cpu_equals_gpu", ok && u.cpu_calls == 1, "cpu and GPU callbacks differ");
    /* transposed input: contiguous = true gives the kernel a dense copy */
    wk_tensor *m = x ? wk_narrow(x, 0, 0, 300 * 301) : NULL;
    wk_tensor *m2 = m ? wk_reshape(m, WK_SHAPE(300, 301)) : NULL;
    wk_tensor *mt = m2 ? wk_transpose(m2, 0, 1) : NULL;
    wk_tensor *ym = mt ? wk_apply_op1(&op, mt) : NULL;
    ok = ym && read_all(ym, got, 300 * 301);
    for (int i = 0; ok && i < 301; i++)
        for (int j = 0; j < 300; j++)
            if (got[i * 300 + j] != host[j * 301 + i] * 3.0f) ok = false;
    check("custom_op/transposed_input", ok, "transposed input scaled wrong");
    /* in place on a narrowed view: columns 10..209 of [300, 301] rows */
    wk_inplace_op1 iop = { .name = "scale_", .cuda = scale_inplace_gpu, .rocm = scale_inplace_gpu, .user = &u };
    wk_tensor *full = wk_from_host(dev, WK_F32, WK_SHAPE(300, 301), host);
    wk_tensor *win = full ? wk_narrow(full, 1, 10, 200) : NULL;
    ok = win && wk_apply_inplace1(&iop, win) == WK_OK && read_all(full, got, 300 * 301);
    for (int i = 0; ok && i < 300 * 301; i++) {
        const int c = i % 301;
        const float want = c >= 10 && c < 210 ? host[i] * 3.0f : host[i];
        if (got[i] != want) ok = false;
    }
    check("custom_op/inplace_narrowed", ok, "in-place scale of a window wrong or spilled");
    /* a kind without a callback */
    wk_custom_op1 cpu_only = { .name = "cpu_only", .cpu = scale_cpu, .user = &u };
    wk_tensor *no = x ? wk_apply_op1(&cpu_only, x) : NULL;
    char want_msg[64];
    snprintf(want_msg, sizeof want_msg, "not implemented for %.*s", (int)strcspn(wk_device_name(dev), ":"),
             wk_device_name(dev));
    check("custom_op/missing_callback", !no && wk_last_status() == WK_ERR_UNSUPPORTED && strstr(wk_last_error(), want_msg),
          want_msg);
    wk_release(no);
    wk_release(full), wk_release(win), wk_release(ym), wk_release(mt), wk_release(m2), wk_release(m);
    wk_release(yg), wk_release(yc), wk_release(xc), wk_release(z), wk_release(y), wk_release(e), wk_release(x);
    if (cpu) wk_device_close(cpu);
    free(host), free(got), free(ref);
}

/* ---- kernels on their own ----------------------------------------------- */

static void kernel_checks(wk_device *dev)
{
    /* a template instance by its name expression */
    wk_rtc_kernel *ax = compile(dev, "axpy<float>", NULL);
    check("compile/template", ax != NULL, "axpy<float>");
    enum { N = 1000 };
    float hx[N], hy[N], got[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 1.0f;
    wk_tensor *x = wk_from_host(dev, WK_F32, WK_SHAPE(N), hx), *y = wk_from_host(dev, WK_F32, WK_SHAPE(N), hy);
    if (ax && x && y) {
        void *py = wk_tensor_data(y), *px = wk_tensor_data(x);
        float a = 0.5f;
        int n = N;
        void *args[4] = { &py, &px, &a, &n };
        const unsigned g[3] = { (N + 127) / 128, 1, 1 }, b[3] = { 128, 1, 1 };
        check("launch/template", wk_rtc_launch(ax, g, b, 0, NULL, args) == WK_OK, "launch failed");
        bool ok = read_all(y, got, N);
        for (int i = 0; ok && i < N; i++) ok = got[i] == 1.0f + 0.5f * (float)i;
        check("launch/template_values", ok, "axpy values");
        const unsigned z[3] = { 0, 1, 1 };
        check("launch/zero_grid", wk_rtc_launch(ax, z, b, 0, NULL, args) == WK_ERR_ARGUMENT, "grid 0 accepted");
    }
    /* the prelude's warp helpers at the device's warp size */
    wk_device_info info;
    wk_device_info_get(dev, &info);
    wk_rtc_kernel *rs = compile(dev, "rowsum", NULL);
    check("compile/warp_helpers", rs != NULL, "rowsum");
    enum { R = 37, C = 333 };
    float *hm = malloc(R * C * sizeof(float));
    for (int i = 0; i < R * C; i++) hm[i] = (float)(i % 17) - 8.0f;
    wk_tensor *m = wk_from_host(dev, WK_F32, WK_SHAPE(R, C), hm), *sums = wk_zeros(dev, WK_F32, WK_SHAPE(R)),
              *bal = wk_zeros(dev, WK_I64, WK_SHAPE(R));
    if (rs && m && sums && bal) {
        void *pm = wk_tensor_data(m), *ps = wk_tensor_data(sums), *pb = wk_tensor_data(bal);
        int n = C;
        void *args[4] = { &pm, &ps, &n, &pb };
        /* one warp per block: the hardware's warp (WK_WARP_SIZE is it) */
        const unsigned g[3] = { R, 1, 1 }, b[3] = { 32, 1, 1 }, b64[3] = { 64, 1, 1 };
        wk_status st = wk_rtc_launch(rs, g, info.warp_size == 64 ? b64 : b, 0, NULL, args);
        float hs[R];
        int64_t hb[R];
        bool ok = st == WK_OK && read_all(sums, hs, R) && wk_to_host(bal, hb, sizeof hb) == WK_OK;
        for (int r = 0; ok && r < R; r++) {
            double want = 0;
            for (int c = 0; c < C; c++) want += hm[r * C + c];
            uint64_t wb = 0;
            for (int l = 0; l < (info.warp_size == 64 ? 64 : 32); l += 3) wb |= 1ull << l;
            ok = hs[r] == (float)want && (uint64_t)hb[r] == wb;
        }
        check("launch/warp_helpers_values", ok, "row sums or ballots differ");
    }
    /* errors: the compiler's log, an unknown name */
    static const char bad[] = "extern \"C\" __global__ void broken(float *x)\n{\n    x[0] = undefined_thing;\n}\n";
    wk_rtc_kernel *kb = wk_rtc_compile(dev, bad, "broken", NULL, 0);
    check("compile_error/log", !kb && wk_last_status() == WK_ERR_ARGUMENT && strstr(wk_last_error(), "undefined_thing") &&
                                   strstr(wk_last_error(), "kernel.hip"),
          "no compiler log in the message");
    wk_rtc_free(kb);
    wk_rtc_kernel *kn = compile(dev, "no_such_kernel", NULL);
    check("compile_error/unknown_name", !kn && wk_last_status() != WK_OK, "an unknown kernel name compiled");
    wk_rtc_free(kn);
    wk_release(m), wk_release(sums), wk_release(bal), wk_release(x), wk_release(y);
    free(hm);
    wk_rtc_free(rs);
    wk_rtc_free(ax);
}

/* ---- the cache ----------------------------------------------------------- */

static int entries(const char *folder, char *one, size_t n)
{
    int c = 0;
    DIR *d = opendir(folder);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".wkrtc") && !strstr(e->d_name, ".tmp")) {
            c++;
            if (one) snprintf(one, n, "%s/%s", folder, e->d_name);
        }
    closedir(d);
    return c;
}

static void cache_checks(wk_device *dev, const char *self, const char *devname)
{
    char folder[] = "/tmp/wick-rtc-checks-XXXXXX";
    if (!mkdtemp(folder)) {
        check("cache/folder", false, "mkdtemp failed");
        return;
    }
    setenv("WICK_RTC_CACHE", folder, 1);
    double t0 = now_ms();
    wk_rtc_kernel *a = compile(dev, "scale", NULL);
    double t1 = now_ms();
    check("cache/first_compiles", a && !wk_rtc_from_cache(a), "the first compile came from the cache");
    check("cache/entry_written", entries(folder, NULL, 0) == 1, "not one entry in the folder");
    wk_rtc_kernel *b = compile(dev, "scale", NULL);
    double t2 = now_ms();
    check("cache/second_hits", b && wk_rtc_from_cache(b), "the second compile missed the cache");
    printf("rtc: compile %.1f ms, cache hit in this process %.2f ms\n", t1 - t0, t2 - t1);
    /* a second process finds it (and times its load) */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "WICK_RTC_CACHE='%s' '%s' --child hit --device %s", folder, self, devname);
    check("cache/second_process_hits", system(cmd) == 0, cmd);
    /* a hit needs no compiler: a process without one loads and runs it */
    snprintf(cmd, sizeof cmd, "WICK_RTC_LIB=none WICK_RTC_CACHE='%s' '%s' --child cachedonly --device %s", folder, self,
             devname);
    check("cache/hit_without_compiler", system(cmd) == 0, cmd);
    /* other options: another entry */
    wk_rtc_kernel *c = compile(dev, "scale", "-DOFFSET=1");
    check("cache/options_are_key", c && !wk_rtc_from_cache(c) && entries(folder, NULL, 0) == 2,
          "other options hit the first entry");
    wk_rtc_free(c);
    /* a corrupt entry is compiled again, and rewritten */
    char path[2048];
    /* corrupt every entry's last byte, then compile the first kernel again */
    DIR *dd = opendir(folder);
    struct dirent *e;
    while (dd && (e = readdir(dd))) {
        if (!strstr(e->d_name, ".wkrtc")) continue;
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        FILE *f = fopen(path, "r+b");
        if (f) {
            fseek(f, -1, SEEK_END);
            int ch = fgetc(f);
            fseek(f, -1, SEEK_END);
            fputc(ch ^ 0xff, f);
            fclose(f);
        }
    }
    if (dd) closedir(dd);
    wk_rtc_kernel *d = compile(dev, "scale", NULL);
    check("cache/corrupt_recompiled", d && !wk_rtc_from_cache(d), "a corrupt entry was loaded");
    wk_rtc_kernel *f2 = compile(dev, "scale", NULL);
    check("cache/corrupt_rewritten", f2 && wk_rtc_from_cache(f2), "the rewritten entry missed");
    wk_rtc_free(d), wk_rtc_free(f2);
    custom_checks(dev, b);
    wk_rtc_free(a), wk_rtc_free(b);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", folder);
    if (system(cmd) != 0) printf("rtc: could not remove %s\n", folder);
    unsetenv("WICK_RTC_CACHE");
}

/* ---- a fresh thread: its first wick calls load, launch and free --------- */

typedef struct thread_arg {
    wk_device *dev;
    void *data;          /* 256 floats of ones on dev */
    wk_status st;
} thread_arg;

static void *fresh_thread(void *p)
{
    thread_arg *a = p;
    wk_rtc_kernel *k = compile(a->dev, "scale", NULL);
    if (!k) {
        a->st = wk_last_status();
        return NULL;
    }
    float f = 2.0f;
    int64_t n = 256;
    void *args[4] = { &a->data, &a->data, &f, &n };
    const unsigned g[3] = { 1, 1, 1 }, b[3] = { 256, 1, 1 };
    a->st = wk_rtc_launch(k, g, b, 0, NULL, args);
    wk_rtc_free(k);
    return NULL;
}

static void thread_checks(wk_device *dev)
{
    wk_tensor *x = wk_ones(dev, WK_F32, WK_SHAPE(256));
    thread_arg a = { dev, x ? wk_tensor_data(x) : NULL, WK_ERR_ARGUMENT };
    pthread_t th;
    if (x && pthread_create(&th, NULL, fresh_thread, &a) == 0) pthread_join(th, NULL);
    float got[256];
    bool ok = a.st == WK_OK && read_all(x, got, 256);
    for (int i = 0; ok && i < 256; i++) ok = got[i] == 2.0f;
    check("fresh_thread", ok, "a kernel compiled, launched and freed on a new thread");
    wk_release(x);
}

/* ---- launch cost ----------------------------------------------------------- */

static void launch_cost(wk_device *dev)
{
    wk_rtc_kernel *k = compile(dev, "scale", NULL);
    wk_tensor *x = wk_ones(dev, WK_F32, WK_SHAPE(256));
    wk_event *e0 = wk_event_new(dev), *e1 = wk_event_new(dev);
    if (!k || !x || !e0 || !e1) {
        check("launch_cost/setup", false, "setup failed");
    } else {
        void *p = wk_tensor_data(x);
        float a = 1.0f;
        int64_t n = 256;
        void *args[4] = { &p, &p, &a, &n };
        const unsigned g[3] = { 1, 1, 1 }, b[3] = { 256, 1, 1 };
        double ms_rtc = 0, ms_op = 0, h_rtc = 0, h_op = 0;
        for (int rep = 0; rep < 3; rep++) {       /* the last of three (warm) */
            wk_device_synchronize(dev);
            double h0 = now_ms();
            wk_event_record(e0);
            for (int i = 0; i < 2000; i++) wk_rtc_launch(k, g, b, 0, NULL, args);
            wk_event_record(e1);
            h_rtc = now_ms() - h0;
            wk_event_elapsed_ms(e0, e1, &ms_rtc);
            wk_device_synchronize(dev);
            h0 = now_ms();
            wk_event_record(e0);
            for (int i = 0; i < 2000; i++) wk_release(wk_affine(x, 1.0, 0.0));
            wk_event_record(e1);
            h_op = now_ms() - h0;
            wk_event_elapsed_ms(e0, e1, &ms_op);
        }
        printf("rtc: 2000 launches: run-time compiled %.3f us/launch host, %.3f us device; built-in affine(256) "
               "%.3f us host, %.3f us device; ratio %.2f\n",
               h_rtc * 1e3 / 2000, ms_rtc * 1e3 / 2000, h_op * 1e3 / 2000, ms_op * 1e3 / 2000,
               ms_op > 0 ? ms_rtc / ms_op : 0);
        check("launch_cost/ran", wk_device_synchronize(dev) == WK_OK, "launches failed");
    }
    wk_event_free(e0), wk_event_free(e1);
    wk_release(x);
    wk_rtc_free(k);
}

/* ---- child processes ------------------------------------------------------- */

static int child(const char *what, const char *devname)
{
    wk_device *dev = wk_device_open(devname);
    if (!dev) return 2;
    int rc = 1;
    if (strcmp(what, "hit") == 0) {
        double t0 = now_ms();
        wk_rtc_kernel *k = compile(dev, "scale", NULL);
        double t1 = now_ms();
        printf("rtc: cache hit in a second process: %.2f ms (from cache: %s)\n", t1 - t0,
               k && wk_rtc_from_cache(k) ? "yes" : "no");
        rc = k && wk_rtc_from_cache(k) ? 0 : 1;
        if (k && t1 - t0 >= 5.0) printf("rtc: note: the hit took %.2f ms (the issue's bound is 5 ms)\n", t1 - t0);
        wk_rtc_free(k);
    } else if (strcmp(what, "cachedonly") == 0) {
        /* from the cache, with the compiler turned off: it runs */
        wk_rtc_kernel *k = compile(dev, "scale", NULL);
        float host[300], got[300];
        for (int i = 0; i < 300; i++) host[i] = (float)i - 100.5f;
        wk_tensor *x = wk_from_host(dev, WK_F32, WK_SHAPE(300), host), *y = x ? wk_empty(dev, WK_F32, WK_SHAPE(300)) : NULL;
        bool ran = false;
        if (k && y) {
            void *o = wk_tensor_data(y), *in = wk_tensor_data(x);
            float a = -2.0f;
            int64_t n = 300;
            void *args[4] = { &o, &in, &a, &n };
            const unsigned grid[3] = { 2, 1, 1 }, block[3] = { 256, 1, 1 };
            ran = wk_rtc_launch(k, grid, block, 0, NULL, args) == WK_OK && read_all(y, got, 300);
            for (int i = 0; ran && i < 300; i++) ran = got[i] == host[i] * -2.0f;
        }
        rc = k && wk_rtc_from_cache(k) && ran && !wk_rtc_available(dev) ? 0 : 1;
        if (rc)
            printf("rtc: cached kernel without a compiler: kernel %s, from cache %d, ran %d, available %d: %s\n",
                   k ? "loaded" : "missing", k && wk_rtc_from_cache(k), ran, wk_rtc_available(dev), wk_last_error());
        wk_release(y), wk_release(x);
        wk_rtc_free(k);
    } else if (strcmp(what, "nortc") == 0) {
        wk_rtc_kernel *k = compile(dev, "scale", NULL);
        rc = !wk_rtc_available(dev) && !wk_supports(dev, "rtc", WK_F32) && !k &&
                     wk_last_status() == WK_ERR_UNSUPPORTED
                 ? 0
                 : 1;
        if (rc) printf("rtc: with WICK_RTC_LIB=none: %s\n", wk_last_error());
        wk_rtc_free(k);
    }
    wk_device_close(dev);
    return rc;
}

int main(int argc, char **argv)
{
    const char *devname = NULL, *child_what = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) devname = argv[++i];
        else if (!strcmp(argv[i], "--child") && i + 1 < argc) child_what = argv[++i];
        else {
            fprintf(stderr, "usage: wick-rtc-checks [--device NAME]\n");
            return 2;
        }
    }
    if (!devname) devname = wk_device_count("cuda") > 0 ? "cuda:0" : wk_device_count("rocm") > 0 ? "rocm:0" : NULL;
    if (!devname) {
        printf("rtc: no GPU device (cuda: %s; rocm: %s)\n0 passed, 0 failed\n", wk_plugin_status("cuda"),
               wk_plugin_status("rocm"));
        return 0;
    }
    if (child_what) return child(child_what, devname);
    wk_device *dev = wk_device_open(devname);
    if (!dev) {
        printf("FAIL rtc/open: %s\n0 passed, 1 failed\n", wk_last_error());
        return 1;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    check("available", wk_rtc_available(dev) && wk_supports(dev, "rtc", WK_F32), "no run-time compiler");
    if (wk_rtc_available(dev)) {
        cache_checks(dev, self, devname);
        kernel_checks(dev);
        thread_checks(dev);
        launch_cost(dev);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "WICK_RTC_LIB=none WICK_RTC_CACHE=off '%s' --child nortc --device %s", self, devname);
    check("refusal_without_compiler", system(cmd) == 0, cmd);
    check("device_ok_at_end", wk_device_synchronize(dev) == WK_OK, "the device reports an error");
    wk_device_close(dev);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
