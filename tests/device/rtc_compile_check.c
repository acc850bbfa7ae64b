/* rtc_compile_check.c — the run-time compiler path of a GPU plugin
 * without a GPU: opens the plugin (libwick_cuda.so, libwick_rocm.so)
 * through its entry point, as the core does, and calls its rtc_compile
 * for an architecture named on the command line (the plugin's own
 * prelude, compat.h, in front): an extern "C" kernel, a template instance
 * by its name expression and a kernel using the prelude's warp helpers at
 * warp sizes 32 and 64 must compile to code with a symbol; a source with
 * an error must fail with WK_ERR_ARGUMENT and the compiler's log naming
 * the user's line; an unknown kernel name must fail. Needs the compiler
 * library (NVRTC, hiprtc), not a device: CI machines with NVRTC run it.
 * This program includes src/backend.h: it stands in for the core.
 *
 * Usage: wick-rtc-compile-check PLUGIN ARCH     (e.g. build/libwick_cuda.so sm_90)
 * Ends with "N passed, N failed"; "skipped" and exit 0 when the plugin has
 * no compiler library here. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"

static char message[4096];
static wk_status set_error(wk_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return s;
}
static const char *current_op(void) { return "rtc_compile"; }

static int passed, failed;
static void check(const char *what, bool ok, const char *detail)
{
    if (ok) passed++;
    else {
        failed++;
        printf("FAIL rtc_compile/%s: %s (%s)\n", what, detail, message);
    }
}

static const char kSource[] =
    "extern \"C\" __global__ void scale(float *out, const float *in, float a, int64_t n)\n"
    "{\n"
    "    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = in[i] * a;\n"
    "}\n"
    "template <typename T> __global__ void axpy(T *y, const T *x, T a, int n)\n"
    "{\n"
    "    __shared__ T tile[256];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    tile[threadIdx.x] = i < n ? x[i] : T(0);\n"
    "    __syncthreads();\n"
    "    if (i < n) y[i] += a * tile[threadIdx.x];\n"
    "}\n"
    "template __global__ void axpy<float>(float *, const float *, float, int);\n"
    "template __global__ void axpy<double>(double *, const double *, double, int);\n"
    "extern \"C\" __global__ void rowsum(const float *x, float *out, int n, unsigned long long *ballots)\n"
    "{\n"
    "    float s = 0;\n"
    "    for (int i = wk_lane<WK_WARP_SIZE>(); i < n; i += WK_WARP_SIZE) s += x[(int64_t)blockIdx.x * n + i];\n"
    "    s = wk_warp_sum<WK_WARP_SIZE>(s);\n"
    "    uint64_t b = wk_ballot<WK_WARP_SIZE>(s > 0);\n"
    "    if (wk_lane<WK_WARP_SIZE>() == 0) { out[blockIdx.x] = s; ballots[blockIdx.x] = b; }\n"
    "}\n";

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wick-rtc-compile-check PLUGIN ARCH\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("skipped: %s\n0 passed, 0 failed\n", dlerror());
        return 0;
    }
    wk_backend_entry_fn entry;
    void *sym = dlsym(h, "wk_backend_entry_v1");
    memcpy(&entry, &sym, sizeof entry);
    wk_host_api host = { WK_BACKEND_ABI, set_error, current_op };
    const wk_backend_iface *be = entry ? entry(&host) : NULL;
    if (!be || !be->rtc_compile) {
        printf("FAIL rtc_compile/plugin: no entry point or no rtc_compile (%s)\n0 passed, 1 failed\n", message);
        return 1;
    }
    static const struct { const char *name; int warp; } cases[] = {
        { "scale", 32 }, { "axpy<float>", 32 }, { "axpy<double>", 32 }, { "rowsum", 32 }, { "rowsum", 64 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wk_rtc_target t;
        memset(&t, 0, sizeof t);
        snprintf(t.arch, sizeof t.arch, "%s", argv[2]);
        t.warp_size = cases[i].warp;
        wk_rtc_code c = { 0 };
        message[0] = 0;
        wk_status st = be->rtc_compile(&t, kSource, cases[i].name, NULL, 0, &c);
        if (st == WK_ERR_UNSUPPORTED) {
            printf("skipped: %s\n0 passed, 0 failed\n", message);
            return 0;
        }
        char what[96];
        snprintf(what, sizeof what, "%s/warp%d", cases[i].name, cases[i].warp);
        check(what, st == WK_OK && c.code && c.size > 0 && c.symbol && c.symbol[0], "no code");
        if (st == WK_OK)
            printf("rtc_compile: %s for %s: %zu bytes, symbol %s\n", what, argv[2], c.size, c.symbol);
        free(c.code);
        free(c.symbol);
    }
    wk_rtc_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.arch, sizeof t.arch, "%s", argv[2]);
    t.warp_size = 32;
    static const char bad[] = "extern \"C\" __global__ void broken(float *x)\n{\n    x[0] = undefined_thing;\n}\n";
    wk_rtc_code c = { 0 };
    wk_status st = be->rtc_compile(&t, bad, "broken", NULL, 0, &c);
    check("error_log", st == WK_ERR_ARGUMENT && strstr(message, "undefined_thing") && strstr(message, "kernel.hip") &&
                           !c.code,
          "a compile error without the compiler's log");
    printf("rtc_compile: the error as reported: %.300s\n", message);
    st = be->rtc_compile(&t, kSource, "no_such_kernel", NULL, 0, &c);
    check("unknown_name", st != WK_OK && !c.code, "an unknown name compiled");
    const char *opts[1] = { "-DUNDEFINED_IN_SOURCE=(" };
    static const char uses[] = "extern \"C\" __global__ void k(int *x) { x[0] = UNDEFINED_IN_SOURCE 1); }\n";
    st = be->rtc_compile(&t, uses, "k", opts, 1, &c);
    check("options_reach_compiler", st == WK_OK, "an option's macro did not reach the source");
    free(c.code);
    free(c.symbol);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
