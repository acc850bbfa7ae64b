/* comm.hip — collectives on GPUs (backend.h: comm_available .. comm_run;
 * the API is include/wick_comm.h): NCCL on NVIDIA, RCCL on AMD, which
 * share NCCL's interface.
 *
 * The library is opened at run time (dlopen), as the BLAS libraries are,
 * so the plugin loads and works without it (then comm_available says
 * why not): libnccl.so.2 / libnccl.so, librccl.so.1 / librccl.so, or the
 * file WICK_NCCL_LIB names (WICK_NCCL_LIB=none: off). Only the stable part
 * of the interface is declared here (no nccl.h is needed to build): the
 * unique id of 128 bytes passed by value, ncclResult_t 0 for success,
 * ncclSum 0, and the data type numbers NCCL and RCCL both use.
 *
 * Every collective runs on the stream of the rank's context, where wick's
 * ops on that device run, so it is ordered with them both ways and
 * returns before it finishes.
 */
#include "gpu_internal.h"
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(WK_GPU_CUDA)
#define COMM_LIB "NCCL"
#else
#define COMM_LIB "RCCL"
#endif

typedef int comm_res;                            /* ncclResult_t */
typedef struct comm_nccl_ *comm_handle;          /* ncclComm_t   */
typedef struct {
    char internal[128];
} comm_uid;                                      /* ncclUniqueId */
static_assert(sizeof(comm_uid) == 128, "NCCL's unique id is 128 bytes");

/* ncclDataType_t */
enum { NC_INT8 = 0, NC_UINT8 = 1, NC_INT32 = 2, NC_UINT32 = 3, NC_INT64 = 4, NC_UINT64 = 5, NC_F16 = 6, NC_F32 = 7,
       NC_F64 = 8, NC_BF16 = 9 };

struct comm_lib_t {
    comm_res (*get_unique_id)(comm_uid *);
    comm_res (*init_rank)(comm_handle *, int, comm_uid, int);
    comm_res (*init_all)(comm_handle *, int, const int *);
    comm_res (*destroy)(comm_handle);
    comm_res (*all_reduce)(const void *, void *, size_t, int, int, comm_handle, hipStream_t);
    comm_res (*all_gather)(const void *, void *, size_t, int, comm_handle, hipStream_t);
    comm_res (*broadcast)(const void *, void *, size_t, int, int, comm_handle, hipStream_t);
    const char *(*error_string)(comm_res);
    comm_res (*version)(int *);
    int ver;
};

static std::mutex comm_mutex;
static comm_lib_t comm_lib;
static int comm_state;           /* 0 not tried, 1 loaded, -1 absent */
static char comm_why[384];

static bool comm_bind(void *dl)
{
    bool ok = true;
#define COMM_SYM_(field, name)                                                 \
    {                                                                          \
        void *f_ = dlsym(dl, name);                                            \
        if (!f_) ok = false;                                                   \
        memcpy(&comm_lib.field, &f_, sizeof f_);                               \
    }
    COMM_SYM_(get_unique_id, "ncclGetUniqueId")
    COMM_SYM_(init_rank, "ncclCommInitRank")
    COMM_SYM_(init_all, "ncclCommInitAll")
    COMM_SYM_(destroy, "ncclCommDestroy")
    COMM_SYM_(all_reduce, "ncclAllReduce")
    COMM_SYM_(all_gather, "ncclAllGather")
    COMM_SYM_(broadcast, "ncclBroadcast")
    COMM_SYM_(error_string, "ncclGetErrorString")
    COMM_SYM_(version, "ncclGetVersion")
#undef COMM_SYM_
    return ok && comm_lib.version(&comm_lib.ver) == 0;
}

static const comm_lib_t *comm_lib_get(void)
{
    std::lock_guard<std::mutex> lock(comm_mutex);
    if (comm_state != 0) return comm_state == 1 ? &comm_lib : NULL;
    comm_state = -1;
    const char *names[3];
    int n = 0;
    const char *env = getenv("WICK_NCCL_LIB");
    if (env && *env) {
        if (strcmp(env, "none") == 0) {
            snprintf(comm_why, sizeof comm_why, "turned off by WICK_NCCL_LIB=none");
            return NULL;
        }
        names[n++] = env;
    } else {
#if defined(WK_GPU_CUDA)
        names[n++] = "libnccl.so.2";
        names[n++] = "libnccl.so";
#else
        names[n++] = "librccl.so.1";
        names[n++] = "librccl.so";
#endif
    }
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (dl && comm_bind(dl)) {
            comm_state = 1;
            return &comm_lib;
        }
        const char *e = dl ? "a symbol is missing" : dlerror();
        int w = snprintf(comm_why + used, sizeof comm_why - used, "%s%s: %s", i ? "; " : "", names[i], e ? e : "?");
        if (w > 0) used = used + (size_t)w < sizeof comm_why ? used + (size_t)w : sizeof comm_why - 1;
        if (dl) dlclose(dl);
    }
    return NULL;
}

static wk_status comm_fail(const comm_lib_t *L, const char *call, comm_res r)
{
    return wk_gpu_host->set_error(WK_ERR_BACKEND, "%s failed: %s (%s error %d)", call,
                                  L->error_string ? L->error_string(r) : "?", COMM_LIB, r);
}

/* A rank: its library communicator and its context. */
struct comm_rank_t {
    comm_handle h;
    wk_gpu_ctx *c;
};

extern "C" wk_status wk_gpu_comm_available(void)
{
    if (comm_lib_get()) return WK_OK;
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "no collective library (%s): %s", COMM_LIB, comm_why);
}

static int comm_type(wk_dtype dt)
{
    switch (dt) {
    case WK_F32: return NC_F32;
    case WK_F16: return NC_F16;
    case WK_BF16: return NC_BF16;
    case WK_F64: return NC_F64;
    case WK_I32: return NC_INT32;
    case WK_I64: return NC_INT64;
    case WK_U8: return NC_UINT8;
    default: return -1;
    }
}

extern "C" bool wk_gpu_comm_dtype(wk_dtype dt) { return dt != WK_U8 && comm_type(dt) >= 0; }

extern "C" wk_status wk_gpu_comm_unique_id(void *id)
{
    const comm_lib_t *L = comm_lib_get();
    if (!L) return wk_gpu_comm_available();
    comm_uid u;
    memset(&u, 0, sizeof u);
    comm_res r = L->get_unique_id(&u);
    if (r != 0) return comm_fail(L, "ncclGetUniqueId", r);
    memcpy(id, &u, sizeof u);
    return WK_OK;
}

static wk_status comm_wrap(comm_handle h, wk_gpu_ctx *c, void **out)
{
    comm_rank_t *k = (comm_rank_t *)malloc(sizeof *k);
    if (!k) {
        comm_lib.destroy(h);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory");
    }
    k->h = h, k->c = c;
    *out = k;
    return WK_OK;
}

extern "C" wk_status wk_gpu_comm_init_all(void *const *ctxs, int n, void **comms)
{
    const comm_lib_t *L = comm_lib_get();
    if (!L) return wk_gpu_comm_available();
    int *devs = (int *)malloc((size_t)n * sizeof *devs);
    comm_handle *hs = (comm_handle *)calloc((size_t)n, sizeof *hs);
    if (!devs || !hs) {
        free(devs), free(hs);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory");
    }
    for (int i = 0; i < n; i++) devs[i] = ((wk_gpu_ctx *)ctxs[i])->device;
    comm_res r = L->init_all(hs, n, devs);
    free(devs);
    wk_status st = r == 0 ? WK_OK : comm_fail(L, "ncclCommInitAll", r);
    for (int i = 0; i < n; i++) {
        if (st == WK_OK) {
            st = comm_wrap(hs[i], (wk_gpu_ctx *)ctxs[i], &comms[i]);
            if (st != WK_OK)
                for (int j = 0; j < i; j++) {
                    L->destroy(((comm_rank_t *)comms[j])->h);
                    free(comms[j]);
                }
        } else if (r == 0 && hs[i]) {
            L->destroy(hs[i]);
        }
    }
    free(hs);
    return st;
}

extern "C" wk_status wk_gpu_comm_init_rank(void *ctx, const void *id, int rank, int world, void **comm)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const comm_lib_t *L = comm_lib_get();
    if (!L) return wk_gpu_comm_available();
    WK_GPU_ENTER(c);
    comm_uid u;
    memcpy(&u, id, sizeof u);
    comm_handle h = NULL;
    comm_res r = L->init_rank(&h, world, u, rank);
    if (r != 0) return comm_fail(L, "ncclCommInitRank", r);
    return comm_wrap(h, c, comm);
}

extern "C" void wk_gpu_comm_free(void *comm)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    if (!k) return;
    if (wk_gpu_enter(k->c) == WK_OK) (void)hipStreamSynchronize(k->c->stream);
    comm_lib.destroy(k->h);
    free(k);
}

extern "C" wk_status wk_gpu_comm_run(void *comm, const wk_coll_args *a)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    wk_gpu_ctx *c = k->c;
    const comm_lib_t *L = &comm_lib;
    const int t = comm_type(a->dtype);
    if (t < 0) return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s takes no %s", COMM_LIB, "such dtype");
    WK_GPU_ENTER(c);
    comm_res r = 0;
    const char *call = "";
    switch (a->kind) {
    case WK_COLL_ALL_REDUCE_SUM:
        call = "ncclAllReduce";
        r = L->all_reduce(a->send, a->recv, a->count, t, 0 /* ncclSum */, k->h, c->stream);
        break;
    case WK_COLL_ALL_GATHER:
        call = "ncclAllGather";
        r = L->all_gather(a->send, a->recv, a->count, t, k->h, c->stream);
        break;
    case WK_COLL_BROADCAST:
        call = "ncclBroadcast";
        r = L->broadcast(a->send, a->recv, a->count, t, a->root, k->h, c->stream);
        break;
    }
    return r == 0 ? WK_OK : comm_fail(L, call, r);
}
