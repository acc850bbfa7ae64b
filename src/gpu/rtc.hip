/* rtc.hip — kernels compiled at run time: the plugin's side of
 * wk_rtc_compile / wk_rtc_launch (the core keeps the disk cache and the
 * handles: src/core/rtc.c).
 *
 * One source dialect: the user's kernel is HIP-style, and the plugin puts
 * compat.h in front of it (embedded at build time as rtc_prelude.inc; its
 * WK_GPU_RTC branch leaves out the host headers and the runtime), so the
 * same text compiles with NVRTC for cuda:N and with hiprtc for rocm:N
 * and may use compat.h's warp helpers (wk_shfl_xor<W>, wk_warp_sum<W>,
 * ...). WK_WARP_SIZE is defined to the device's warp size.
 *
 * The compiler library is opened at run time (dlopen), so the plugin
 * loads on machines without it: NVRTC (libnvrtc.so.<CUDA major>, then
 * libnvrtc.so), hiprtc (libhiprtc.so.7/.6/libhiprtc.so, then the HIP
 * runtime itself, which holds hiprtc up to ROCm 5). WICK_RTC_LIB names
 * the file to use instead; WICK_RTC_LIB=none turns compiling off. Its
 * declarations are written here (Debian's HIP 5.2 ships no hiprtc
 * header with every package, and only the shared part of the two
 * interfaces is used: both return 0 for success).
 *
 * Loading and launching go through the driver's module API: on NVIDIA
 * cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel (found with
 * cudaGetDriverEntryPointByVersion, as compat.h finds cuLaunchKernel, so
 * no driver library is linked); on AMD the HIP runtime's hipModule*
 * calls. Code: a CUBIN for the device's sm_XY (NVRTC -arch=sm_XY), an
 * AMD code object for its gcnArchName (hiprtc --gpu-architecture).
 */
#include "gpu_internal.h"
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* compat.h as text (gpu.mk makes rtc_prelude.inc from it) */
static const char rtc_prelude[] =
#include "rtc_prelude.inc"
    ;

/* ------------------------------------------------------------------ */
/* The compiler library                                                */

typedef int rtc_res;                 /* nvrtcResult / hiprtcResult: 0 = success */
typedef struct rtc_prog_ *rtc_prog;  /* nvrtcProgram / hiprtcProgram           */

struct rtc_lib_t {
    rtc_res (*version)(int *, int *);
    rtc_res (*create)(rtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
    rtc_res (*destroy)(rtc_prog *);
    rtc_res (*compile)(rtc_prog, int, const char *const *);
    rtc_res (*log_size)(rtc_prog, size_t *);
    rtc_res (*log)(rtc_prog, char *);
    rtc_res (*code_size)(rtc_prog, size_t *);
    rtc_res (*code)(rtc_prog, char *);
    rtc_res (*add_name)(rtc_prog, const char *);
    rtc_res (*lowered)(rtc_prog, const char *, const char **);
    const char *(*error_string)(rtc_res);
    int major, minor;
};

#if defined(WK_GPU_CUDA)
#define RTC_COMPILER "nvrtc"
#define RTC_P "nvrtc"
#define RTC_CODE_SIZE "nvrtcGetCUBINSize"
#define RTC_CODE "nvrtcGetCUBIN"
#else
#define RTC_COMPILER "hiprtc"
#define RTC_P "hiprtc"
#define RTC_CODE_SIZE "hiprtcGetCodeSize"
#define RTC_CODE "hiprtcGetCode"
#endif

static std::mutex rtc_mutex;
static rtc_lib_t rtc_lib;
static int rtc_state;               /* 0 not tried, 1 loaded, -1 absent */
static char rtc_why[384];           /* why it is absent                  */

static bool rtc_bind(void *dl)
{
    bool ok = true;
#define RTC_SYM_(field, name)                                                  \
    {                                                                          \
        void *f_ = dlsym(dl, name);                                            \
        if (!f_) ok = false;                                                   \
        memcpy(&rtc_lib.field, &f_, sizeof f_);                                \
    }
    RTC_SYM_(version, RTC_P "Version")
    RTC_SYM_(create, RTC_P "CreateProgram")
    RTC_SYM_(destroy, RTC_P "DestroyProgram")
    RTC_SYM_(compile, RTC_P "CompileProgram")
    RTC_SYM_(log_size, RTC_P "GetProgramLogSize")
    RTC_SYM_(log, RTC_P "GetProgramLog")
    RTC_SYM_(code_size, RTC_CODE_SIZE)
    RTC_SYM_(code, RTC_CODE)
    RTC_SYM_(add_name, RTC_P "AddNameExpression")
    RTC_SYM_(lowered, RTC_P "GetLoweredName")
    RTC_SYM_(error_string, RTC_P "GetErrorString")
#undef RTC_SYM_
    return ok && rtc_lib.version(&rtc_lib.major, &rtc_lib.minor) == 0;
}

/* The compiler's functions, or NULL (rtc_why says why). */
static const rtc_lib_t *rtc_lib_get(void)
{
    std::lock_guard<std::mutex> lock(rtc_mutex);
    if (rtc_state != 0) return rtc_state == 1 ? &rtc_lib : NULL;
    rtc_state = -1;
    char names[4][64];
    int n = 0;
    const char *env = getenv("WICK_RTC_LIB");
    if (env && *env) {
        if (strcmp(env, "none") == 0) {
            snprintf(rtc_why, sizeof rtc_why, "turned off by WICK_RTC_LIB=none");
            return NULL;
        }
        snprintf(names[n++], sizeof names[0], "%.63s", env);
    } else {
#if defined(WK_GPU_CUDA)
        snprintf(names[n++], sizeof names[0], "libnvrtc.so.%d", CUDART_VERSION / 1000);
        snprintf(names[n++], sizeof names[0], "libnvrtc.so");
#else
        snprintf(names[n++], sizeof names[0], "libhiprtc.so.7");
        snprintf(names[n++], sizeof names[0], "libhiprtc.so.6");
        snprintf(names[n++], sizeof names[0], "libhiprtc.so");
        /* ROCm 5: hiprtc is part of the HIP runtime the plugin links */
        snprintf(names[n++], sizeof names[0], "libamdhip64.so.%d", HIP_VERSION_MAJOR);
#endif
    }
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (dl && rtc_bind(dl)) {
            rtc_state = 1;
            return &rtc_lib;
        }
        const char *e = dl ? "lacks the " RTC_COMPILER " functions" : dlerror();
        if (dl) dlclose(dl);
        used += (size_t)snprintf(rtc_why + used, used < sizeof rtc_why ? sizeof rtc_why - used : 0, "%s%s: %s",
                                 i ? "; " : "", names[i], e ? e : "not loadable");
        if (used >= sizeof rtc_why) used = sizeof rtc_why - 1;
    }
    return NULL;
}

static wk_status rtc_fail(const rtc_lib_t *L, const char *call, rtc_res r, int line)
{
    return wk_gpu_fail_lib(call, L->error_string ? L->error_string(r) : "?", (long)r, __FILE__, line);
}
#define RTC_CHECK(L, call)                                                     \
    do {                                                                       \
        rtc_res rtc_r_ = (call);                                               \
        if (rtc_r_ != 0) {                                                     \
            st = rtc_fail((L), #call, rtc_r_, __LINE__);                       \
            goto done;                                                         \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------------ */
/* The driver's module API                                             */

#if defined(WK_GPU_CUDA)
struct rtc_cu_t {
    int (*load)(void **mod, const void *image);
    int (*get_function)(void **fn, void *mod, const char *name);
    int (*unload)(void *mod);
    int (*set_attribute)(void *fn, int attr, int value);
    int (*error_string)(int err, const char **s);
    int (*ctx_get_current)(void **ctx);
};
/* the driver's functions, or NULL */
static const rtc_cu_t *rtc_cu(void)
{
    static const rtc_cu_t *const cu = [] {
        static rtc_cu_t t;
        bool ok = true;
        const struct { const char *name; void *dst; } syms[] = {
            { "cuModuleLoadData", &t.load },         { "cuModuleGetFunction", &t.get_function },
            { "cuModuleUnload", &t.unload },         { "cuFuncSetAttribute", &t.set_attribute },
            { "cuGetErrorString", &t.error_string }, { "cuCtxGetCurrent", &t.ctx_get_current },
        };
        for (const auto &s : syms) {
            void *p = NULL;
            cudaDriverEntryPointQueryResult q;
            if (cudaGetDriverEntryPointByVersion(s.name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
                q != cudaDriverEntryPointSuccess || !p)
                ok = false;
            memcpy(s.dst, &p, sizeof p);
        }
        (void)cudaGetLastError();
        return ok ? (const rtc_cu_t *)&t : (const rtc_cu_t *)NULL;
    }();
    return cu;
}
/* The driver's calls act on the thread's current context, which the
 * runtime binds to a thread only at the thread's first runtime call: a
 * thread whose first wick call loads or launches a kernel gets the
 * device's primary context bound first (cudaFree(NULL) binds it). */
static void rtc_cu_bind(const rtc_cu_t *cu)
{
    void *cur = NULL;
    if (cu->ctx_get_current(&cur) == 0 && !cur) {
        (void)cudaFree(NULL);
        (void)cudaGetLastError();
    }
}

static wk_status rtc_cu_fail(const rtc_cu_t *cu, const char *call, int r, int line)
{
    const char *s = NULL;
    if (!cu || cu->error_string(r, &s) != 0) s = NULL;
    return wk_gpu_fail_lib(call, s ? s : "?", (long)r, __FILE__, line);
}
#endif

/* A loaded kernel: its module and function. */
struct rtc_kernel_t {
#if defined(WK_GPU_CUDA)
    void *module, *function;
#else
    hipModule_t module;
    hipFunction_t function;
#endif
};

/* ------------------------------------------------------------------ */
/* Entry points (gpu_entry.h)                                          */

extern "C" wk_status wk_gpu_rtc_target(void *ctx, wk_rtc_target *out)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    memset(out, 0, sizeof *out);
#if defined(WK_GPU_CUDA)
    if (!rtc_cu())
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "the CUDA driver lacks the module API (cuModuleLoadData)");
#endif
    WK_GPU_ENTER(c);
    int drv = 0;
    WK_GPU_CHECK_C(c, hipDriverGetVersion(&drv));
    snprintf(out->arch, sizeof out->arch, "%s", c->arch);
    out->warp_size = c->hw_warp_size;
    out->driver_version = drv;
    out->compiler = RTC_COMPILER;
    out->prelude = rtc_prelude;
    return WK_OK;
}

extern "C" wk_status wk_gpu_rtc_compiler(void)
{
    if (rtc_lib_get()) return WK_OK;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "no run-time compiler (%s): %s", RTC_COMPILER, rtc_why);
}

extern "C" wk_status wk_gpu_rtc_compile(const wk_rtc_target *t, const char *source, const char *name,
                                        const char *const *opts, int n_opts, wk_rtc_code *out)
{
    memset(out, 0, sizeof *out);
    const rtc_lib_t *L = rtc_lib_get();
    if (!L) return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "no run-time compiler (%s): %s", RTC_COMPILER, rtc_why);
    wk_status st = WK_OK;
    rtc_prog prog = NULL;
    char *text = NULL, *log = NULL;
    const char **all = NULL;
    char arch[96], warp[32];
    /* the prelude, then the user's text numbered from its own line 1 */
    static const char head_mark[] = "#line 1 \"wick_rtc_prelude.h\"\n";
    static const char line_mark[] = "\n#line 1 \"kernel.hip\"\n";
    const char *prelude = t->prelude ? t->prelude : rtc_prelude;
    const size_t lh = sizeof head_mark - 1, lp = strlen(prelude), ls = strlen(source);
    text = (char *)malloc(lh + lp + sizeof line_mark + ls);
    all = (const char **)malloc(sizeof *all * (size_t)(n_opts + 4));
    if (!text || !all) {
        st = wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory compiling %s", name);
        goto done;
    }
    memcpy(text, head_mark, lh);
    memcpy(text + lh, prelude, lp);
    memcpy(text + lh + lp, line_mark, sizeof line_mark - 1);
    memcpy(text + lh + lp + sizeof line_mark - 1, source, ls + 1);
    snprintf(arch, sizeof arch, "--gpu-architecture=%s", t->arch);
    snprintf(warp, sizeof warp, "-DWK_WARP_SIZE=%d", t->warp_size);
    {
        int n = 0;
        all[n++] = arch;
        all[n++] = warp;
        all[n++] = "-std=c++17";
        for (int i = 0; i < n_opts; i++) all[n++] = opts[i];
        RTC_CHECK(L, L->create(&prog, text, "kernel.hip", 0, NULL, NULL));
        RTC_CHECK(L, L->add_name(prog, name));
        rtc_res r = L->compile(prog, n, all);
        if (r != 0) {
            size_t n_log = 0;
            if (L->log_size(prog, &n_log) == 0 && n_log > 1 && (log = (char *)malloc(n_log + 1)) &&
                L->log(prog, log) == 0) {
                log[n_log] = 0;
                for (size_t i = strlen(log); i > 0 && (log[i - 1] == '\n' || log[i - 1] == ' '); i--) log[i - 1] = 0;
            }
            st = wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s could not compile kernel %s for %s (%s): %s",
                                        RTC_COMPILER, name, t->arch, L->error_string(r),
                                        log && log[0] ? log : "(no log)");
            goto done;
        }
    }
    {
        const char *lowered = NULL;
        RTC_CHECK(L, L->lowered(prog, name, &lowered));
        size_t size = 0;
        RTC_CHECK(L, L->code_size(prog, &size));
        if (!lowered || size == 0) {
            st = wk_gpu_host->set_error(WK_ERR_BACKEND, "%s gave no code for kernel %s", RTC_COMPILER, name);
            goto done;
        }
        out->symbol = strdup(lowered);
        out->code = malloc(size);
        out->size = size;
        if (!out->symbol || !out->code) {
            st = wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory for %zu bytes of code", size);
            goto done;
        }
        RTC_CHECK(L, L->code(prog, (char *)out->code));
    }
done:
    if (prog) (void)L->destroy(&prog);
    free(text);
    free(all);
    free(log);
    if (st != WK_OK) {
        free(out->code);
        free(out->symbol);
        memset(out, 0, sizeof *out);
    }
    return st;
}

extern "C" wk_status wk_gpu_rtc_load(void *ctx, const void *code, size_t size, const char *symbol, void **fn)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    (void)size;   /* both loaders read the size from the object's header */
    *fn = NULL;
    WK_GPU_ENTER(c);
    rtc_kernel_t *k = (rtc_kernel_t *)calloc(1, sizeof *k);
    if (!k) return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory loading kernel %s", symbol);
#if defined(WK_GPU_CUDA)
    const rtc_cu_t *cu = rtc_cu();
    if (cu) rtc_cu_bind(cu);
    int r = cu ? cu->load(&k->module, code) : -1;
    if (r != 0) {
        free(k);
        return cu ? rtc_cu_fail(cu, "cuModuleLoadData", r, __LINE__)
                  : wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "the CUDA driver lacks the module API");
    }
    r = cu->get_function(&k->function, k->module, symbol);
    if (r != 0) {
        (void)cu->unload(k->module);
        free(k);
        return rtc_cu_fail(cu, "cuModuleGetFunction", r, __LINE__);
    }
#else
    hipError_t e = hipModuleLoadData(&k->module, code);
    if (e != hipSuccess) {
        free(k);
        return wk_gpu_fail(c, e, "hipModuleLoadData", __FILE__, __LINE__);
    }
    e = hipModuleGetFunction(&k->function, k->module, symbol);
    if (e != hipSuccess) {
        (void)hipModuleUnload(k->module);
        free(k);
        return wk_gpu_fail(c, e, "hipModuleGetFunction", __FILE__, __LINE__);
    }
#endif
    *fn = k;
    return WK_OK;
}

extern "C" void wk_gpu_rtc_unload(void *ctx, void *fn)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    rtc_kernel_t *k = (rtc_kernel_t *)fn;
    if (!k) return;
    if (wk_gpu_enter(c) == WK_OK) {
        /* launches still queued keep the module in use: wait for them */
        (void)hipStreamSynchronize(c->stream);
#if defined(WK_GPU_CUDA)
        if (rtc_cu()) {
            rtc_cu_bind(rtc_cu());
            (void)rtc_cu()->unload(k->module);
        }
#else
        (void)hipModuleUnload(k->module);
#endif
    }
    (void)hipGetLastError();
    free(k);
}

extern "C" wk_status wk_gpu_rtc_launch(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                                       unsigned shared_bytes, void *stream, void **args)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    rtc_kernel_t *k = (rtc_kernel_t *)fn;
    WK_GPU_ENTER(c);
    hipStream_t s = stream ? (hipStream_t)stream : c->stream;
#if defined(WK_GPU_CUDA)
    const rtc_cu_t *cu = rtc_cu();
    const wk_cu_launch_fn launch = wk_cu_launch();
    if (!cu || !launch) return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "the CUDA driver lacks cuLaunchKernel");
    rtc_cu_bind(cu);
    if (shared_bytes > 48u * 1024u) {
        /* dynamic shared memory past 48 KiB must be asked for per kernel
         * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8) */
        int r = cu->set_attribute(k->function, 8, (int)shared_bytes);
        if (r != 0) return rtc_cu_fail(cu, "cuFuncSetAttribute(max dynamic shared memory)", r, __LINE__);
    }
    int r = launch(k->function, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, (void *)s,
                   args, NULL);
    if (r != 0) return rtc_cu_fail(cu, "cuLaunchKernel", r, __LINE__);
#else
    hipError_t e = hipModuleLaunchKernel(k->function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                         shared_bytes, s, args, NULL);
    if (e != hipSuccess) return wk_gpu_fail(c, e, "hipModuleLaunchKernel", __FILE__, __LINE__);
#endif
    return wk_gpu_launched(c, "run-time compiled kernel", __FILE__, __LINE__);
}
