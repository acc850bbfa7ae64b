/* runtime.hip — the GPU backend's host side: device enumeration and
 * properties, contexts (one stream each), error reporting, the vtable
 * (its op table is op_table.hip's), the environment knobs (gpu_env.h:
 * read at the entry point and by env_refresh) and the plugin's one
 * exported symbol, wk_backend_entry_v1. The same file builds the "cuda" plugin
 * (nvcc) and the "rocm" plugin (hipcc); see compat.h. */
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const wk_host_api *wk_gpu_host;

/* WICK_GPU_COUNT_LAUNCHES=1: count launches (wick's kernels and BLAS
 * calls, each one wk_gpu_launched) in the process and print the running
 * total to stderr at every device synchronize, so that a benchmark can
 * tell the launches of one step (bench/llm_bench.c). Off: one branch per
 * launch. */
static int wk_gpu_counting;
static uint64_t wk_gpu_launches;

/* ---- errors ------------------------------------------------------------ */

wk_status wk_gpu_fail(wk_gpu_ctx *c, hipError_t err, const char *call, const char *file, int line)
{
    const char *name = hipGetErrorName(err), *text = hipGetErrorString(err);
    const char *last = c ? __atomic_load_n(&c->last_op, __ATOMIC_RELAXED) : NULL;
    if (last)
        return wk_gpu_host->set_error(WK_ERR_BACKEND, "%s failed: %s: %s (%s:%d; last op launched: %s)",
                                      call, name ? name : "?", text ? text : "?", file, line, last);
    return wk_gpu_host->set_error(WK_ERR_BACKEND, "%s failed: %s: %s (%s:%d)", call, name ? name : "?",
                                  text ? text : "?", file, line);
}

wk_status wk_gpu_fail_lib(const char *call, const char *what, long code, const char *file, int line)
{
    return wk_gpu_host->set_error(WK_ERR_BACKEND, "%s failed: %s (status %ld) (%s:%d)", call,
                                  what ? what : "?", code, file, line);
}

wk_status wk_gpu_launched(wk_gpu_ctx *c, const char *what, const char *file, int line)
{
    /* the name itself, not a copy: both are string constants (core.h) */
    const char *op = wk_gpu_host->current_op ? wk_gpu_host->current_op() : NULL;
    __atomic_store_n(&c->last_op, op ? op : what, __ATOMIC_RELAXED);
    if (wk_gpu_counting) __atomic_add_fetch(&wk_gpu_launches, 1, __ATOMIC_RELAXED);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess) {
        char call[96];
        snprintf(call, sizeof call, "launch of %s", what);
        return wk_gpu_fail(NULL, e, call, file, line);
    }
    if (c->sync_launches && !c->recording) {   /* (a graph's kernels run at its launch) */
        e = hipStreamSynchronize(c->stream);
        if (e != hipSuccess) {
            char call[96];
            snprintf(call, sizeof call, "kernel %s", what);
            return wk_gpu_fail(NULL, e, call, file, line);
        }
    }
    return WK_OK;
}

wk_status wk_gpu_enter(wk_gpu_ctx *c)
{
    if (!c->multi_device) return WK_OK;        /* the one device is current */
    int cur = -1;
    if (hipGetDevice(&cur) == hipSuccess && cur == c->device) return WK_OK;
    WK_GPU_CHECK(hipSetDevice(c->device));
    return WK_OK;
}

/* ---- devices ----------------------------------------------------------- */

static int rt_device_count(void)
{
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess) {
        (void)hipGetLastError();          /* no driver / no device: none */
        return 0;
    }
    return n;
}

static wk_status rt_attr(int *out, int attr, int dev)
{
    *out = 0;
    WK_GPU_CHECK(hipDeviceGetAttribute(out, (decltype(hipDeviceAttributeWarpSize))attr, dev));
    return WK_OK;
}

static wk_status rt_query(wk_gpu_ctx *c)
{
    int v;
    wk_status st;
    if ((st = rt_attr(&c->hw_warp_size, hipDeviceAttributeWarpSize, c->device))) return st;
    if ((st = rt_attr(&c->sm_count, hipDeviceAttributeMultiprocessorCount, c->device))) return st;
    if ((st = rt_attr(&c->max_threads_per_block, hipDeviceAttributeMaxThreadsPerBlock, c->device))) return st;
    if ((st = rt_attr(&c->max_threads_per_sm, hipDeviceAttributeMaxThreadsPerMultiProcessor, c->device))) return st;
    if ((st = rt_attr(&v, hipDeviceAttributeMaxSharedMemoryPerBlock, c->device))) return st;
    c->shared_per_block = (size_t)v;
    if ((st = rt_attr(&v, hipDeviceAttributeL2CacheSize, c->device))) return st;
    c->l2_bytes = (size_t)v;
    hipDeviceProp_t prop;
    memset(&prop, 0, sizeof prop);
    WK_GPU_CHECK(hipGetDeviceProperties(&prop, c->device));
    snprintf(c->model, sizeof c->model, "%.127s", prop.name);
#if defined(WK_GPU_HIP)
    snprintf(c->arch, sizeof c->arch, "%.63s", prop.gcnArchName);
    if (!c->model[0]) snprintf(c->model, sizeof c->model, "%.63s", prop.gcnArchName);
#else
    c->cc_major = prop.major;
    c->cc_minor = prop.minor;
    snprintf(c->arch, sizeof c->arch, "sm_%d%d", prop.major, prop.minor);
#endif
    if (c->hw_warp_size != 32 && c->hw_warp_size != 64)
        return wk_gpu_host->set_error(WK_ERR_BACKEND, "device %d reports warp size %d (want 32 or 64)",
                                      c->device, c->hw_warp_size);
    c->warp_size = c->hw_warp_size;
#if defined(WK_VIRTUAL_WAVE64)
    /* two 32-lane warps make each 64-lane one (compat.h) */
    if (c->hw_warp_size != 32)
        return wk_gpu_host->set_error(WK_ERR_BACKEND, "the virtual-wave64 build needs 32-lane warps");
    c->warp_size = 64;
#endif
    c->stream_block = 128;
    const char *eb = getenv("WICK_GPU_STREAM_BLOCK");       /* tuning runs */
    if (eb && *eb) {
        const int v = atoi(eb);
        if (v <= 0 || v > WK_GPU_EW_MAX_BLOCK || v % c->warp_size)
            return wk_gpu_host->set_error(WK_ERR_ARGUMENT,
                                          "WICK_GPU_STREAM_BLOCK=%s: want a multiple of %d up to %d", eb,
                                          c->warp_size, WK_GPU_EW_MAX_BLOCK);
        c->stream_block = v;
    }
    return WK_OK;
}

static void rt_close(void *ctx);

static wk_status rt_open(int index, void **out)
{
    *out = NULL;
    int n = rt_device_count();
    if (index < 0 || index >= n)
        return wk_gpu_host->set_error(WK_ERR_DEVICE, "no %s device %d (%d found)", WK_GPU_PLATFORM, index, n);
    wk_gpu_ctx *c = (wk_gpu_ctx *)calloc(1, sizeof *c);
    if (!c) return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory opening %s:%d", WK_GPU_PLATFORM, index);
    c->device = index;
    const char *sync = getenv("WICK_GPU_SYNC");
    c->sync_launches = sync && sync[0] && strcmp(sync, "0") != 0;
    const char *cnt = getenv("WICK_GPU_COUNT_LAUNCHES");
    if (cnt && cnt[0] && strcmp(cnt, "0") != 0) wk_gpu_counting = 1;
    c->multi_device = n > 1;
    wk_status st = WK_OK;
    WK_GPU_TRY(st, hipSetDevice(c->device));
    if (st == WK_OK) st = rt_query(c);
    WK_GPU_TRY(st, hipStreamCreateWithFlags(&c->stream, hipStreamNonBlocking));
    if (st == WK_OK) st = wk_gpu_pool_create(c);
    if (st != WK_OK) {
        rt_close(c);
        return st;
    }
    *out = c;
    return WK_OK;
}

static void rt_close(void *ctx)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!c) return;
    if (hipSetDevice(c->device) == hipSuccess && c->stream) (void)hipStreamSynchronize(c->stream);
    for (int k = 0; k < WK_GPU_EXT_SLOTS; k++)
        if (c->ext[k] && c->ext_free[k]) c->ext_free[k](c, c->ext[k]);
    wk_gpu_staging_destroy(c);
    wk_gpu_pool_destroy(c);
    if (c->order_ev) (void)hipEventDestroy(c->order_ev);
    if (c->stream) (void)hipStreamDestroy(c->stream);
    (void)hipGetLastError();
    free(c);
}

static wk_status rt_info(void *ctx, wk_device_info *out)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s:%d", WK_GPU_PLATFORM, c->device);
    snprintf(out->model, sizeof out->model, "%s", c->model);
    size_t fr = 0, tot = 0;
    WK_GPU_CHECK_C(c, hipMemGetInfo(&fr, &tot));
    out->total_memory = tot;
    out->free_memory = fr + wk_gpu_mem_cached(c);   /* the cache is ours to reuse */
    out->compute_units = c->sm_count;
    out->warp_size = c->warp_size;
    return WK_OK;
}

static wk_status rt_synchronize(void *ctx)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_NOT_RECORDING(c, "a synchronization");
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipStreamSynchronize(c->stream));
    if (wk_gpu_counting)
        fprintf(stderr, "wick: launches so far: %llu\n",
                (unsigned long long)__atomic_load_n(&wk_gpu_launches, __ATOMIC_RELAXED));
    return WK_OK;
}

static wk_status rt_alloc(void *ctx, size_t bytes, void **ptr)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *ptr = NULL;
    if (bytes == 0) return WK_OK;
    return wk_gpu_mem_alloc(c, bytes, ptr);     /* enters the device itself on a miss */
}

static void rt_free(void *ctx, void *ptr)
{
    if (ptr) wk_gpu_mem_free((wk_gpu_ctx *)ctx, ptr);
}

/* Device to device: on one device a plain async copy on its stream; across
 * devices the copy runs on the source's stream after the destination's
 * pending work, and the destination's stream waits for it. */
static wk_status rt_copy_peer(void *dst_ctx, void *dst, void *src_ctx, const void *src, size_t bytes)
{
    wk_gpu_ctx *d = (wk_gpu_ctx *)dst_ctx, *s = (wk_gpu_ctx *)src_ctx;
    if (bytes == 0) return WK_OK;
    if (d->device == s->device) {
        WK_GPU_ENTER(s);
        if (d != s) {
            hipEvent_t ev;
            WK_GPU_CHECK(hipEventCreateWithFlags(&ev, hipEventDisableTiming));
            wk_status st = WK_OK;
            WK_GPU_TRY(st, hipEventRecord(ev, d->stream));
            WK_GPU_TRY(st, hipStreamWaitEvent(s->stream, ev, 0));
            WK_GPU_TRY(st, hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, s->stream));
            WK_GPU_TRY(st, hipEventRecord(ev, s->stream));
            WK_GPU_TRY(st, hipStreamWaitEvent(d->stream, ev, 0));
            (void)hipEventDestroy(ev);
            return st;
        }
        WK_GPU_CHECK_C(s, hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, s->stream));
        return WK_OK;
    }
    hipEvent_t ev_d, ev_s;
    WK_GPU_CHECK(hipSetDevice(d->device));
    WK_GPU_CHECK(hipEventCreateWithFlags(&ev_d, hipEventDisableTiming));
    wk_status st = WK_OK;
    WK_GPU_TRY(st, hipEventRecord(ev_d, d->stream));
    WK_GPU_TRY(st, hipSetDevice(s->device));
    if (st != WK_OK) {
        (void)hipEventDestroy(ev_d);
        return st;
    }
    WK_GPU_TRY(st, hipEventCreateWithFlags(&ev_s, hipEventDisableTiming));
    if (st != WK_OK) {
        (void)hipEventDestroy(ev_d);
        return st;
    }
    WK_GPU_TRY(st, hipStreamWaitEvent(s->stream, ev_d, 0));
    WK_GPU_TRY(st, hipMemcpyPeerAsync(dst, d->device, src, s->device, bytes, s->stream));
    WK_GPU_TRY(st, hipEventRecord(ev_s, s->stream));
    WK_GPU_TRY(st, hipSetDevice(d->device));
    WK_GPU_TRY(st, hipStreamWaitEvent(d->stream, ev_s, 0));
    (void)hipEventDestroy(ev_s);
    (void)hipEventDestroy(ev_d);
    return st;
}

/* The context's stream, its device made current (custom ops launch on it). */
static wk_status rt_stream(void *ctx, void **stream)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *stream = NULL;
    WK_GPU_ENTER(c);
    *stream = (void *)c->stream;
    return WK_OK;
}

static wk_status rt_stream_order(void *ctx, void *other, bool ctx_waits)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    hipStream_t o = (hipStream_t)other;
    /* nothing queued on the stream to be waited for: no order to make (a
     * query instead of a record and a wait; its "not ready" answer is no
     * error and must not be left for the next launch's check) */
    const hipError_t q = hipStreamQuery(ctx_waits ? o : c->stream);
    if (q == hipSuccess) return WK_OK;
    if (q == hipErrorNotReady) (void)hipGetLastError();
    /* one event per context, reused: a wait holds the state of the record
     * it follows, so the next record cannot disturb it (a DLPack exchange
     * then costs a record and a wait, no event made or destroyed) */
    hipEvent_t ev = __atomic_exchange_n(&c->order_ev, (hipEvent_t)NULL, __ATOMIC_ACQ_REL);
    if (!ev) WK_GPU_CHECK_C(c, hipEventCreateWithFlags(&ev, hipEventDisableTiming));
    hipError_t e = hipEventRecord(ev, ctx_waits ? o : c->stream);
    if (e == hipSuccess) e = hipStreamWaitEvent(ctx_waits ? c->stream : o, ev, 0);
    ev = __atomic_exchange_n(&c->order_ev, ev, __ATOMIC_ACQ_REL);
    if (ev) (void)hipEventDestroy(ev);   /* another thread's, put back meanwhile */
    if (e != hipSuccess) return wk_gpu_fail(c, e, ctx_waits ? "hipStreamWaitEvent(wick's stream, the other's event)"
                                                           : "hipStreamWaitEvent(the other stream, wick's event)",
                                            __FILE__, __LINE__);
    return WK_OK;
}

/* ---- environment knobs (gpu_env.h) ----------------------------------------- */

wk_gpu_knobs wk_gpu_env;

/* e is "0" (a switch turned off) */
static bool rt_env_zero(const char *e) { return e && !strcmp(e, "0"); }
/* e equals s */
static bool rt_env_is(const char *e, const char *s) { return e && !strcmp(e, s); }
/* atoi of e when set and not empty, else dflt */
static int rt_env_int(const char *e, int dflt) { return e && *e ? atoi(e) : dflt; }

void wk_gpu_env_read(void)
{
    wk_gpu_knobs k;
    memset(&k, 0, sizeof k);
    k.gemv_off = rt_env_zero(getenv("WICK_GEMV"));
    const char *mv = getenv("WICK_MATVEC");
    k.matvec = !mv || !*mv || !strcmp(mv, "auto") ? WK_MATVEC_AUTO
             : !strcmp(mv, "wick")                ? WK_MATVEC_WICK
             : !strcmp(mv, "blas")                ? WK_MATVEC_BLAS
                                                  : WK_MATVEC_OTHER;
    const char *kib = getenv("WICK_MATVEC_MAX_KIB");
    k.matvec_max_kib = kib && *kib ? atoll(kib) : 8192;
    k.glu_off = rt_env_zero(getenv("WICK_GPU_GLU"));
    k.rope_fuse_off = rt_env_zero(getenv("WICK_GPU_ROPE_FUSE"));
    k.qmatmul_dequant = rt_env_is(getenv("WICK_QMATMUL"), "dequant");
    k.qmatvec_f32 = rt_env_is(getenv("WICK_QMATVEC"), "f32");
    k.qmv_x = rt_env_int(getenv("WICK_QMV_X"), 8192);
    const char *bps = getenv("WICK_QMV_BPS");
    k.qmv_bps_set = bps && *bps;
    k.qmv_bps = rt_env_int(bps, 0);
    k.qmv_tr = rt_env_int(getenv("WICK_QMV_TR"), 0);
    k.qmvq_local = rt_env_int(getenv("WICK_QMVQ_LOCAL"), 1);
    k.qmvq_r = rt_env_int(getenv("WICK_QMVQ_R"), 0);
    k.gemm_tiled = rt_env_is(getenv("WICK_GEMM"), "tiled");
    const char *at = getenv("WICK_GPU_ATTN");
    k.attn = rt_env_is(at, "portable")     ? WK_ATTN_ENV_PORTABLE
           : rt_env_is(at, "decode_fma")   ? WK_ATTN_ENV_DECODE_FMA
           : rt_env_is(at, "decode")       ? WK_ATTN_ENV_DECODE
           : rt_env_is(at, "mma")          ? WK_ATTN_ENV_MMA
                                           : WK_ATTN_ENV_NONE;
    const char *mt = getenv("WICK_GPU_ATTN_MT");
    k.attn_mt = mt && mt[0] == '1' ? 1 : mt && mt[0] == '2' ? 2 : 0;
    const char *keys = getenv("WICK_ATTN_DECODE_KEYS"), *splits = getenv("WICK_ATTN_DECODE_SPLITS");
    k.attn_decode_keys = keys ? atoll(keys) : 0;
    k.attn_decode_splits = splits ? atoll(splits) : 0;
    k.paged_mma = !rt_env_is(getenv("WICK_GPU_PAGED"), "portable");
    const char *cv = getenv("WICK_CONV");
    k.conv = rt_env_is(cv, "direct") ? WK_CONV_ENV_DIRECT : rt_env_is(cv, "gemm") ? WK_CONV_ENV_GEMM : WK_CONV_ENV_NONE;
    k.conv_dw3_off = rt_env_zero(getenv("WICK_CONV_DW3"));
    const char *mb = getenv("WICK_CONV_COL_MB");
    k.conv_col_mb = mb ? atoll(mb) : 0;
    k.pool_generic = getenv("WICK_POOL_GENERIC") != NULL;
    k.nn_units = rt_env_int(getenv("WICK_GPU_NN_UNITS"), 0);
    const char *pdl = getenv("WICK_GPU_PDL");
    k.pdl_off = pdl && pdl[0] == '0' && !pdl[1];
    const char *gi = getenv("WICK_GRAPH_INFO");
    k.graph_info = gi && gi[0] == '1';
    k.comm_fuse_off = rt_env_zero(getenv("WICK_COMM_FUSE"));
    wk_gpu_env = k;
}

bool wk_gpu_env_pdl(void) { return !wk_gpu_env.pdl_off; }

/* ---- the vtable and the entry point -------------------------------------- */

static wk_backend_iface rt_iface;

static void rt_fill_iface(wk_backend_iface *f)
{
    memset(f, 0, sizeof *f);
    f->abi = WK_BACKEND_ABI;
    f->kind = WK_GPU_PLATFORM;
    f->device_count = rt_device_count;
    f->device_open = rt_open;
    f->device_close = rt_close;
    f->device_info = rt_info;
    f->synchronize = rt_synchronize;
    f->alloc = rt_alloc;
    f->free = rt_free;
    f->write = wk_gpu_write;
    f->read = wk_gpu_read;
    f->copy_peer = rt_copy_peer;
    f->ops = wk_gpu_op_table();
    f->n_ops = WK_OP_COUNT;
    f->event_new = wk_gpu_event_new;
    f->event_free = wk_gpu_event_free;
    f->event_record = wk_gpu_event_record;
    f->event_synchronize = wk_gpu_event_synchronize;
    f->event_elapsed_ms = wk_gpu_event_elapsed_ms;
    f->host_alloc = wk_gpu_host_alloc;
    f->host_free = wk_gpu_host_free;
    f->stream = rt_stream;
    f->stream_order = rt_stream_order;
    f->rtc_target = wk_gpu_rtc_target;
    f->rtc_compiler = wk_gpu_rtc_compiler;
    f->comm_available = wk_gpu_comm_available;
    f->comm_dtype = wk_gpu_comm_dtype;
    f->comm_unique_id = wk_gpu_comm_unique_id;
    f->comm_init_all = wk_gpu_comm_init_all;
    f->comm_init_rank = wk_gpu_comm_init_rank;
    f->comm_free = wk_gpu_comm_free;
    f->comm_run = wk_gpu_comm_run;
    f->comm_fuses = wk_gpu_comm_fuses;
    f->comm_abort = wk_gpu_comm_abort;
    f->comm_aborted = wk_gpu_comm_aborted;
    f->rtc_compile = wk_gpu_rtc_compile;
    f->rtc_load = wk_gpu_rtc_load;
    f->rtc_unload = wk_gpu_rtc_unload;
    f->rtc_launch = wk_gpu_rtc_launch;
    f->graph_begin = wk_gpu_graph_begin;
    f->graph_end = wk_gpu_graph_end;
    f->graph_launch = wk_gpu_graph_launch;
    f->graph_free = wk_gpu_graph_free;
    f->read_async = wk_gpu_read_async;
    f->env_refresh = wk_gpu_env_read;
}

extern "C" __attribute__((visibility("default"))) const wk_backend_iface *WK_BACKEND_ENTRY(const wk_host_api *host)
{
    if (!host || !host->set_error) return NULL;
    if (host->abi != WK_BACKEND_ABI) {
        host->set_error(WK_ERR_BACKEND, "the %s plugin speaks backend ABI %d, the core %d", WK_GPU_PLATFORM,
                        WK_BACKEND_ABI, host->abi);
        return NULL;
    }
    wk_gpu_host = host;
    wk_gpu_env_read();
    rt_fill_iface(&rt_iface);
    return &rt_iface;
}

static_assert(std::is_same<decltype(&WK_BACKEND_ENTRY), wk_backend_entry_fn>::value,
              "the entry point has the type backend.h declares");
