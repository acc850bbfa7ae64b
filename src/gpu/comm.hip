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
 *
 * Small all_reduces of a communicator made by wk_comm_init_all (the ranks
 * of one process) whose GPUs reach each other's memory run as one wick
 * kernel per rank over peer memory instead (see "one-shot all_reduce"
 * below): a tensor-parallel decode step makes two all_reduces of a few
 * KiB per layer, and there NCCL's fixed cost per call, on the device and
 * on the host, is most of the time. WICK_COMM_P2P=0 turns it off. The same
 * path fuses an all_reduce with the residual add and rms_norm after it
 * (wk_all_reduce_add_rms_norm; WICK_COMM_FUSE=0 turns that off).
 *
 * Aborting (wk_comm_abort; "aborting a communicator" below): the ranks of
 * one wk_comm_init_all share an abort state; an abort from any thread
 * marks it, calls ncclCommAbort on each rank's library communicator
 * (NCCL's kernels waiting for a peer then end) and raises a flag in
 * mapped host memory that the peer-memory kernels' waits poll, so no
 * rank's stream waits for ever on a rank that failed. A watchdog thread
 * per communicator polls ncclCommGetAsyncError and aborts on an error
 * the library saw (a peer process lost over the network).
 */
#include "gpu_internal.h"
#include <atomic>
#include <dlfcn.h>
#include <errno.h>
#include <mutex>
#include <pthread.h>
#include <time.h>
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
    comm_res (*abort)(comm_handle);                  /* optional: ncclCommAbort        */
    comm_res (*async_error)(comm_handle, comm_res *);  /* optional: ncclCommGetAsyncError */
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
    /* optional (NCCL >= 2.4, every RCCL): without them an abort only
       stops the peer-memory kernels and refuses later calls */
    void *ab = dlsym(dl, "ncclCommAbort"), *ae = dlsym(dl, "ncclCommGetAsyncError");
    memcpy(&comm_lib.abort, &ab, sizeof ab);
    memcpy(&comm_lib.async_error, &ae, sizeof ae);
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

/* ---- one-shot all_reduce over peer memory ----------------------------
 * For f32/f16/bf16 tensors of at most P2P_MAX_WORDS 32-bit words, when
 * every GPU of a wk_comm_init_all communicator can address every other's
 * memory (NVLink or PCIe peer access on NVIDIA, xGMI on AMD). Each rank
 * owns a receive buffer on its GPU: two slots (call parity) of one row
 * per sender, each word stored with the call's epoch beside it in one
 * 8-byte store (NCCL's "LL" protocol): a reader that sees the epoch sees
 * the data, so no fence is needed (a system-scope fence or release store
 * costs about 10 us per call on an H100). One kernel per rank, one thread
 * per word of x:
 *   1. stores (word, epoch) into the word's place in every peer's buffer,
 *   2. waits for every peer's (word, epoch) in its own buffer,
 *   3. sums the word's elements over the ranks in rank order, in f32.
 * Every rank adds in the same order, so all hold the same bits (as the
 * cpu communicator does). Two slots are enough: a peer writes slot e % 2
 * in call e, and it reaches call e + 2 only after this rank's call e + 1
 * sent it data, that is after this rank's call e read the slot. On AMD
 * the buffers are fine-grained memory (coherent across GPUs while kernels
 * run).
 *   The epoch lives in device memory, after the rank's receive buffer:
 * a call reads the last call's epoch and adds one, and the last of its
 * blocks to finish stores the new one (a count of finished blocks beside
 * it), so the next call on the stream finds it. Nothing of a call depends
 * on the host then, and a recorded graph (graph.hip) replays the calls
 * with fresh epochs. Every rank makes the same calls in the same order,
 * so the ranks' epochs agree. */
#define P2P_MAX_RANKS 8
#define P2P_THREADS 256
#define P2P_MAX_WORDS 65536   /* 256 KiB of data per call */

struct p2p_group {                 /* shared by the ranks of one init_all */
    int n, refs;
    int dev[P2P_MAX_RANKS];
    void *recv[P2P_MAX_RANKS];     /* [2 slots][n senders][P2P_MAX_WORDS] x 8 bytes */
};

struct p2p_args {
    void *x;
    int64_t count;                 /* elements of x */
    void *recv[P2P_MAX_RANKS];
    int n, rank;
    uint32_t *ep;                  /* the rank's [last epoch, blocks done] */
    const int *abort;              /* mapped host memory, nonzero once aborted (or NULL) */
};

/* Bytes of a rank's receive buffer (its epoch words follow). */
#define P2P_RECV_BYTES(n) (2 * (size_t)(n) * P2P_MAX_WORDS * 8)

/* This call's epoch: the last one's plus one (0 is the zeroed buffer's:
 * skipped to 2, which keeps the parity). */
__device__ inline uint32_t p2p_epoch(const uint32_t *ep)
{
    const uint32_t e = *(const volatile uint32_t *)ep + 1u;
    return e == 0u ? 2u : e;
}
/* The block is done with the call (every thread of the block calls it):
 * the last block to get here stores the call's epoch for the next call.
 * Every block read the old epoch before it counted itself. */
__device__ inline void p2p_done(uint32_t *ep, uint32_t e)
{
    __syncthreads();
    if (threadIdx.x != 0) return;
    if (gridDim.x == 1) *(volatile uint32_t *)ep = e;   /* the only block (a decode step's norm): no count */
    else if (atomicAdd(&ep[1], 1u) == gridDim.x - 1) {
        ep[1] = 0u;
        *(volatile uint32_t *)ep = e;
    }
}

/* One (data, epoch) pair: a single 8-byte store / load at system scope. */
__device__ inline void p2p_put(void *p, uint32_t data, uint32_t epoch)
{
#if defined(WK_GPU_CUDA)
    asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(data), "r"(epoch) : "memory");
#else
    __hip_atomic_store((uint64_t *)p, ((uint64_t)epoch << 32) | data, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#endif
}
/* Waits for the peer's word of this epoch. Every 1024 polls it also reads
 * the communicator's abort flag (host memory, over the bus: rare enough
 * not to slow a wait that ends in microseconds) and, once raised, stops
 * waiting and returns 0: the call's result is garbage then, and the
 * communicator refuses every later call. */
__device__ inline uint32_t p2p_take(const void *p, uint32_t epoch, const int *abort)
{
    uint32_t d, e;
    for (uint32_t spin = 1;; spin++) {
#if defined(WK_GPU_CUDA)
        asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(d), "=r"(e) : "l"(p) : "memory");
#else
        const uint64_t v = __hip_atomic_load((uint64_t *)p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
        d = (uint32_t)v, e = (uint32_t)(v >> 32);
#endif
        if (e == epoch) return d;
        if ((spin & 1023u) == 0u && abort && *(const volatile int *)abort) return 0u;
    }
}

/* A word of x: one f32, or two 16-bit elements (low first; the second
 * absent past the end). 16-bit elements are read one by one: a narrowed
 * view may start at an odd element. */
template <typename T> struct p2p_word {
    static constexpr int per = 4 / (int)sizeof(T);
    static __device__ uint32_t load(const T *x, int64_t w, int64_t count)
    {
        if constexpr (per == 1) {
            return *(const uint32_t *)&x[w];
        } else {
            const uint16_t *h = (const uint16_t *)x;
            const uint32_t lo = h[2 * w], hi = 2 * w + 1 < count ? h[2 * w + 1] : 0u;
            return lo | (hi << 16);
        }
    }
    static __device__ void add(float (&acc)[2], uint32_t v)
    {
        if constexpr (per == 1) {
            acc[0] += __uint_as_float(v);
        } else {
            T a, b;
            a.bits = (uint16_t)v, b.bits = (uint16_t)(v >> 16);
            acc[0] += wk_load_c(a), acc[1] += wk_load_c(b);
        }
    }
    static __device__ void store(T *x, int64_t w, int64_t count, const float (&acc)[2])
    {
        if constexpr (per == 1) {
            x[w] = wk_to_<T>::from(acc[0]);
        } else {
            x[2 * w] = wk_to_<T>::from(acc[0]);
            if (2 * w + 1 < count) x[2 * w + 1] = wk_to_<T>::from(acc[1]);
        }
    }
};

template <typename T> __global__ __launch_bounds__(P2P_THREADS) void p2p_all_reduce_kernel(p2p_args a)
{
    typedef p2p_word<T> W;
    wk_pdl_wait();
    const int64_t words = (a.count + W::per - 1) / W::per;
    const int64_t w = (int64_t)blockIdx.x * P2P_THREADS + threadIdx.x;
    const uint32_t epoch = p2p_epoch(a.ep);
    if (w < words) {
        const int64_t row = P2P_MAX_WORDS, slot = (int64_t)(epoch & 1u) * a.n * row;
        T *x = (T *)a.x;
        const uint32_t mine = W::load(x, w, a.count);
        for (int p = 0; p < a.n; p++)
            if (p != a.rank) p2p_put((uint2 *)a.recv[p] + slot + a.rank * row + w, mine, epoch);
        float acc[2] = { 0.0f, 0.0f };
        for (int p = 0; p < a.n; p++)
            W::add(acc, p == a.rank ? mine : p2p_take((const uint2 *)a.recv[a.rank] + slot + p * row + w, epoch, a.abort));
        W::store(x, w, a.count, acc);
    }
    p2p_done(a.ep, epoch);
}

/* ---- all_reduce fused with the residual add and rms_norm -------------
 * wk_all_reduce_add_rms_norm on the peer-memory path: one block of
 * P2P_NORM_THREADS per row of x [rows, D], each thread holding at most
 * P2P_NORM_WORDS 32-bit words of the row (D a whole number of words, every
 * operand 4-byte aligned: p2p_takes). The thread loads its words of x,
 * the residual and the weight into registers first, then exchanges its x
 * words as p2p_all_reduce_kernel does (same slots and epochs: one more
 * call of the sequence), so that the waits for the peers' words are the
 * only memory reads left between the exchange's volatile accesses (each
 * of which orders every memory access around it). In the block: the sum
 * rounded to T (written back to x), + residual rounded to T (written to
 * sum), the sum of its squares (xor shuffles within groups of 32 threads,
 * then across the 32 groups: every rank adds in the same order, whatever
 * the wave width), then the normed row
 * (s * rsqrt(mean + eps) * w, or * (1 + w) in the Gemma form, as nn.hip
 * computes it). */
#define P2P_NORM_THREADS 1024
#define P2P_NORM_WORDS 4

struct p2p_norm_args {
    p2p_args m;                    /* the message: x, the peers' buffers, the epoch */
    const void *r, *w;             /* residual [rows, D]; weight [D] or NULL */
    void *norm, *sum;              /* [rows, D] */
    int64_t D;
    float eps;
    int gemma;
};

/* Elements of a 32-bit word as f32, and f32 values rounded to T packed
 * into a word. */
template <typename T> struct p2p_elems {
    static constexpr int per = 4 / (int)sizeof(T);
    static __device__ float get(uint32_t w, int j)
    {
        if constexpr (per == 1) {
            return __uint_as_float(w);
        } else {
            T t;
            t.bits = (uint16_t)(w >> (16 * j));
            return wk_load_c(t);
        }
    }
    static __device__ uint32_t pack(const float (&f)[2])
    {
        if constexpr (per == 1) return __float_as_uint(f[0]);
        else return (uint32_t)wk_to_<T>::from(f[0]).bits | ((uint32_t)wk_to_<T>::from(f[1]).bits << 16);
    }
};

template <typename T> __global__ __launch_bounds__(P2P_NORM_THREADS) void p2p_all_reduce_norm_kernel(p2p_norm_args a)
{
    typedef p2p_word<T> W;
    typedef p2p_elems<T> E;
    constexpr int NT = P2P_NORM_THREADS, NW = P2P_NORM_WORDS;
    __shared__ float part[NT / 32 + 1];
    static_assert(NT == 32 * 32, "the fold below: 32 groups of 32 threads");
    wk_pdl_wait();
    const int tid = (int)threadIdx.x;
    const int64_t D = a.D, wpr = D / W::per, base = (int64_t)blockIdx.x * wpr;
    const uint32_t epoch = p2p_epoch(a.m.ep);
    const int64_t row = P2P_MAX_WORDS, slot = (int64_t)(epoch & 1u) * a.m.n * row;
    uint32_t *x = (uint32_t *)a.m.x + base, *s = (uint32_t *)a.sum + base, *o = (uint32_t *)a.norm + base;
    const uint32_t *r = (const uint32_t *)a.r + base, *w = (const uint32_t *)a.w;
    uint32_t mine[NW], res[NW], wt[NW], sv[NW];
#pragma unroll
    for (int k = 0; k < NW; k++) {
        const int64_t i = tid + (int64_t)k * NT;
        mine[k] = i < wpr ? x[i] : 0u;
        res[k] = i < wpr ? r[i] : 0u;
        wt[k] = i < wpr && w ? w[i] : 0u;
    }
#pragma unroll
    for (int k = 0; k < NW; k++) {
        const int64_t i = tid + (int64_t)k * NT;
        if (i < wpr)
            for (int p = 0; p < a.m.n; p++)
                if (p != a.m.rank) p2p_put((uint2 *)a.m.recv[p] + slot + a.m.rank * row + base + i, mine[k], epoch);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < NW; k++) {
        const int64_t i = tid + (int64_t)k * NT;
        sv[k] = 0u;
        if (i >= wpr) continue;
        float acc[2] = { 0.0f, 0.0f };
        for (int p = 0; p < a.m.n; p++)
            W::add(acc, p == a.m.rank ? mine[k]
                                      : p2p_take((const uint2 *)a.m.recv[a.m.rank] + slot + p * row + base + i, epoch,
                                                 a.m.abort));
        const uint32_t xw = E::pack(acc);
        float z[2] = { 0.0f, 0.0f };
        for (int j = 0; j < W::per; j++) z[j] = E::get(xw, j) + E::get(res[k], j);
        sv[k] = E::pack(z);
        for (int j = 0; j < W::per; j++) {
            const float f = E::get(sv[k], j);
            ss += f * f;
        }
        x[i] = xw;
        s[i] = sv[k];
    }
    /* groups of 32 threads fold by xor shuffles within the group (the
       same order on 32- and 64-wide waves), then one group the groups' sums */
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += wk_shfl_xor<32>(ss, o, 32);
    if (tid % 32 == 0) part[tid / 32] = ss;
    __syncthreads();
    if (tid < 32) {
        float t = part[tid];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) t += wk_shfl_xor<32>(t, o, 32);
        if (tid == 0) part[NT / 32] = t;
    }
    __syncthreads();
    const float inv = rsqrtf(part[NT / 32] * (1.0f / (float)D) + a.eps);
#pragma unroll
    for (int k = 0; k < NW; k++) {
        const int64_t i = tid + (int64_t)k * NT;
        if (i >= wpr) continue;
        float v[2] = { 0.0f, 0.0f };
        for (int j = 0; j < W::per; j++) {
            v[j] = E::get(sv[k], j) * inv;
            if (w) v[j] *= a.gemma ? 1.0f + E::get(wt[k], j) : E::get(wt[k], j);
        }
        o[i] = E::pack(v);
    }
    p2p_done(a.m.ep, epoch);
}

static void p2p_free_group(p2p_group *g)
{
    int cur = 0;
    (void)hipGetDevice(&cur);
    for (int i = 0; i < g->n; i++) {
        if (!g->recv[i]) continue;
        (void)hipSetDevice(g->dev[i]);
        (void)hipFree(g->recv[i]);
    }
    (void)hipSetDevice(cur);
    (void)hipGetLastError();
    free(g);
}

static hipError_t p2p_alloc(void **p, size_t bytes)
{
#if defined(WK_GPU_CUDA)
    return hipMalloc(p, bytes);
#else
    return hipExtMallocWithFlags(p, bytes, hipDeviceMallocFinegrained);
#endif
}

/* The group for n ranks on ctxs, or NULL (then NCCL does every size):
 * WICK_COMM_P2P=0, fewer than 2 or more than P2P_MAX_RANKS ranks, two
 * ranks on one GPU, a pair without peer access, or no memory. */
static p2p_group *p2p_make(void *const *ctxs, int n)
{
    const char *env = getenv("WICK_COMM_P2P");
    if ((env && strcmp(env, "0") == 0) || n < 2 || n > P2P_MAX_RANKS) return NULL;
    p2p_group *g = (p2p_group *)calloc(1, sizeof *g);
    if (!g) return NULL;
    g->n = n;
    for (int i = 0; i < n; i++) g->dev[i] = ((wk_gpu_ctx *)ctxs[i])->device;
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        for (int j = 0; j < n && ok; j++) {
            int can = 0;
            ok = i == j || (g->dev[i] != g->dev[j] && hipDeviceCanAccessPeer(&can, g->dev[i], g->dev[j]) == hipSuccess && can);
        }
    int cur = 0;
    (void)hipGetDevice(&cur);
    for (int i = 0; i < n && ok; i++) {
        ok = hipSetDevice(g->dev[i]) == hipSuccess;
        for (int j = 0; j < n && ok; j++) {
            if (j == i) continue;
            hipError_t e = hipDeviceEnablePeerAccess(g->dev[j], 0);
            ok = e == hipSuccess || e == hipErrorPeerAccessAlreadyEnabled;
        }
        /* epochs start at 1: a zeroed buffer holds no call's data; the
           epoch words after the buffer start at 0 */
        const size_t bytes = P2P_RECV_BYTES(n) + 256;
        ok = ok && p2p_alloc(&g->recv[i], bytes) == hipSuccess &&
             hipMemsetAsync(g->recv[i], 0, bytes, ((wk_gpu_ctx *)ctxs[i])->stream) == hipSuccess &&
             hipStreamSynchronize(((wk_gpu_ctx *)ctxs[i])->stream) == hipSuccess;
    }
    (void)hipSetDevice(cur);
    (void)hipGetLastError();
    if (!ok) {
        p2p_free_group(g);
        return NULL;
    }
    g->refs = n;
    return g;
}

/* ---- aborting a communicator ------------------------------------------
 * The ranks of one wk_comm_init_all (or the one rank of a
 * wk_comm_init_rank) share an abort state: whether it happened (read
 * without a lock by every call), who did it, the ranks' library
 * communicators (NULL once freed or aborted), the flag in mapped host
 * memory that the peer-memory kernels poll, and a watchdog thread that
 * polls the library's asynchronous error every 200 ms and aborts on one.
 * ncclCommAbort ends the library's kernels of that communicator and
 * frees it (so comm_free then destroys nothing); it may run while the
 * rank's own thread is in a call on it, as NCCL allows. */
#define AB_POLL_MS 200

struct comm_abort_t {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    std::atomic<bool> aborted;
    int by;                        /* the rank that aborted; -1: the watchdog; -2: this process's one rank */
    comm_res why;                  /* the library's error the watchdog saw  */
    int n, refs;
    bool closing, watching;
    comm_handle *h;                /* n of them */
    int *flag;                     /* mapped host memory, or NULL */
    int *flag_dev;                 /* the kernels' pointer to it  */
    pthread_t watchdog;
};

/* Marks g aborted (once) and aborts the library's communicators; g->mu held. */
static void ab_abort_locked(comm_abort_t *g, int by, comm_res why)
{
    if (g->aborted.load()) return;
    g->by = by, g->why = why;
    if (g->flag) {
        *(volatile int *)g->flag = 1;
        __sync_synchronize();
    }
    g->aborted.store(true);
    for (int i = 0; i < g->n; i++)
        if (g->h[i] && comm_lib.abort) {
            (void)comm_lib.abort(g->h[i]);
            g->h[i] = NULL;   /* freed by the abort */
        }
}

static void *ab_watch(void *arg)
{
    comm_abort_t *g = (comm_abort_t *)arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += AB_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (!g->closing && pthread_cond_timedwait(&g->cv, &g->mu, &until) != ETIMEDOUT) {}
        if (g->closing) break;
        if (g->aborted.load()) continue;
        for (int i = 0; i < g->n; i++) {
            comm_res r = 0;
            /* 7: ncclInProgress (a nonblocking communicator still working) */
            if (g->h[i] && comm_lib.async_error(g->h[i], &r) == 0 && r != 0 && r != 7) {
                ab_abort_locked(g, -1, r);
                break;
            }
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static comm_abort_t *ab_make(const comm_handle *hs, int n)
{
    comm_abort_t *g = new (std::nothrow) comm_abort_t();
    comm_handle *h = (comm_handle *)calloc((size_t)n, sizeof *h);
    if (!g || !h) {
        delete g;
        free(h);
        return NULL;
    }
    g->h = h;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->aborted.store(false);
    g->by = -1, g->why = 0, g->n = n, g->refs = n;
    for (int i = 0; i < n; i++) g->h[i] = hs[i];
    void *f = NULL;
    if (hipHostMalloc(&f, 64, hipHostMallocMapped | hipHostMallocPortable) == hipSuccess && f) {
        g->flag = (int *)f;
        *(volatile int *)g->flag = 0;
        void *d = NULL;
        /* one address for every device where memory is unified (every
           64-bit platform of CUDA and ROCm); the host's otherwise */
        g->flag_dev = hipHostGetDevicePointer(&d, f, 0) == hipSuccess && d ? (int *)d : (int *)f;
    }
    (void)hipGetLastError();
    g->watching = comm_lib.async_error && pthread_create(&g->watchdog, NULL, ab_watch, g) == 0;
    return g;
}

/* Rank r is done with g: its library communicator (when not aborted) is
 * destroyed; the last rank stops the watchdog and frees g. */
static void ab_release(comm_abort_t *g, int r)
{
    pthread_mutex_lock(&g->mu);
    comm_handle h = g->h[r];
    g->h[r] = NULL;
    const bool last = --g->refs == 0;
    if (last) g->closing = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (h) comm_lib.destroy(h);
    if (!last) return;
    if (g->watching) pthread_join(g->watchdog, NULL);
    if (g->flag) (void)hipHostFree(g->flag);
    (void)hipGetLastError();
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g->h);
    delete g;
}

/* A rank: its library communicator, its context, and, for the ranks of a
 * wk_comm_init_all whose GPUs reach each other, the peer-memory group;
 * the abort state it shares with the other ranks of its communicator. */
struct comm_rank_t {
    comm_handle h;
    wk_gpu_ctx *c;
    p2p_group *g;
    int rank;
    comm_abort_t *ab;
};

/* A call's message arguments: x = a->recv; the rank's epoch words. */
static p2p_args p2p_message(comm_rank_t *k, const wk_coll_args *a)
{
    p2p_args pa;
    memset(&pa, 0, sizeof pa);
    pa.x = a->recv;
    pa.count = (int64_t)a->count;
    pa.n = k->g->n;
    pa.rank = k->rank;
    pa.ep = (uint32_t *)((char *)k->g->recv[k->rank] + P2P_RECV_BYTES(pa.n));
    pa.abort = k->ab ? k->ab->flag_dev : NULL;
    for (int i = 0; i < pa.n; i++) pa.recv[i] = k->g->recv[i];
    return pa;
}

/* Whether the peer-memory path takes an all_reduce of count elements of
 * dt in place (the fused kind: also whole words per row). */
static bool p2p_takes(const comm_rank_t *k, const wk_coll_args *a)
{
    const int per = a->dtype == WK_F32 ? 1 : 2;
    if (!k->g || a->count == 0 || a->send != a->recv || (a->dtype != WK_F32 && a->dtype != WK_F16 && a->dtype != WK_BF16) ||
        a->count > (size_t)per * P2P_MAX_WORDS)
        return false;
    const uintptr_t any = (uintptr_t)a->recv | (uintptr_t)a->residual | (uintptr_t)a->weight | (uintptr_t)a->norm |
                          (uintptr_t)a->sum;
    return a->kind == WK_COLL_ALL_REDUCE_SUM ||
           (a->kind == WK_COLL_ALL_REDUCE_ADD_RMS_NORM && a->D > 0 && a->D % per == 0 &&
            a->D / per <= P2P_NORM_THREADS * P2P_NORM_WORDS && a->rows <= 65535 && a->rows * a->D == (int64_t)a->count &&
            any % 4 == 0);
}

static wk_status p2p_all_reduce(comm_rank_t *k, const wk_coll_args *a)
{
    const p2p_args pa = p2p_message(k, a);
    const int64_t words = a->dtype == WK_F32 ? pa.count : (pa.count + 1) / 2;
    const unsigned blocks = (unsigned)((words + P2P_THREADS - 1) / P2P_THREADS);
    wk_gpu_ctx *c = k->c;
    switch (a->dtype) {
    case WK_F32: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_kernel<float>, blocks, P2P_THREADS, 0, c->stream, pa); break;
    case WK_F16: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_kernel<wk_f16_t>, blocks, P2P_THREADS, 0, c->stream, pa); break;
    default: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_kernel<wk_bf16_t>, blocks, P2P_THREADS, 0, c->stream, pa); break;
    }
    WK_GPU_LAUNCH_CHECK(c, "all_reduce");
    return WK_OK;
}

static wk_status p2p_all_reduce_norm(comm_rank_t *k, const wk_coll_args *a)
{
    p2p_norm_args na;
    na.m = p2p_message(k, a);
    na.r = a->residual, na.w = a->weight, na.norm = a->norm, na.sum = a->sum;
    na.D = a->D, na.eps = (float)a->eps, na.gemma = a->gemma;
    const unsigned blocks = (unsigned)a->rows;
    wk_gpu_ctx *c = k->c;
    switch (a->dtype) {
    case WK_F32: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_norm_kernel<float>, blocks, P2P_NORM_THREADS, 0, c->stream, na); break;
    case WK_F16: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_norm_kernel<wk_f16_t>, blocks, P2P_NORM_THREADS, 0, c->stream, na); break;
    default: WK_LAUNCH_PDL(c->cc_major >= 9, p2p_all_reduce_norm_kernel<wk_bf16_t>, blocks, P2P_NORM_THREADS, 0, c->stream, na); break;
    }
    WK_GPU_LAUNCH_CHECK(c, "all_reduce_add_rms_norm");
    return WK_OK;
}

/* comm_fuses: the fused kind on the peer-memory path (WICK_COMM_FUSE=0:
 * never, for comparisons). */
extern "C" bool wk_gpu_comm_fuses(void *comm, const wk_coll_args *a)
{
    return !wk_gpu_env.comm_fuse_off && a->kind == WK_COLL_ALL_REDUCE_ADD_RMS_NORM &&
           p2p_takes((const comm_rank_t *)comm, a);
}

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
    k->h = h, k->c = c, k->g = NULL, k->rank = 0, k->ab = NULL;
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
    comm_abort_t *ab = NULL;
    if (st == WK_OK) {
        comm_handle *hs2 = (comm_handle *)malloc((size_t)n * sizeof *hs2);
        for (int i = 0; hs2 && i < n; i++) hs2[i] = ((comm_rank_t *)comms[i])->h;
        ab = hs2 ? ab_make(hs2, n) : NULL;
        free(hs2);
        if (!ab) {
            for (int i = 0; i < n; i++) {
                L->destroy(((comm_rank_t *)comms[i])->h);
                free(comms[i]);
                comms[i] = NULL;
            }
            return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory");
        }
    }
    if (st == WK_OK) {   /* the peer-memory path, where the GPUs allow it */
        p2p_group *g = p2p_make(ctxs, n);
        for (int i = 0; i < n; i++)
            ((comm_rank_t *)comms[i])->g = g, ((comm_rank_t *)comms[i])->rank = i, ((comm_rank_t *)comms[i])->ab = ab;
    }
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
    comm_abort_t *ab = ab_make(&h, 1);
    if (!ab) {
        L->destroy(h);
        return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory");
    }
    wk_status st = comm_wrap(h, c, comm);
    if (st != WK_OK) {   /* comm_wrap destroyed h */
        ab->h[0] = NULL;
        ab_release(ab, 0);
        return st;
    }
    ((comm_rank_t *)*comm)->ab = ab;
    return WK_OK;
}

extern "C" void wk_gpu_comm_abort(void *comm)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    if (!k || !k->ab) return;
    pthread_mutex_lock(&k->ab->mu);
    ab_abort_locked(k->ab, k->ab->n > 1 ? k->rank : -2, 0);
    pthread_mutex_unlock(&k->ab->mu);
}

extern "C" bool wk_gpu_comm_aborted(void *comm)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    return k && k->ab && k->ab->aborted.load();
}

static wk_status comm_refused(const comm_rank_t *k)
{
    const comm_abort_t *g = k->ab;
    if (g->by == -2)
        return wk_gpu_host->set_error(WK_ERR_BACKEND,
                                      "the communicator was aborted (by this rank); no collective of it can succeed "
                                      "any more");
    if (g->by >= 0)
        return wk_gpu_host->set_error(WK_ERR_BACKEND,
                                      "rank %d: the communicator was aborted (by rank %d: it failed); no collective "
                                      "of it can succeed any more",
                                      k->rank, g->by);
    return wk_gpu_host->set_error(WK_ERR_BACKEND,
                                  "rank %d: the communicator was aborted (%s reported an error: %s); no collective "
                                  "of it can succeed any more",
                                  k->rank, COMM_LIB, comm_lib.error_string ? comm_lib.error_string(g->why) : "?");
}

extern "C" void wk_gpu_comm_free(void *comm)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    if (!k) return;
    if (wk_gpu_enter(k->c) == WK_OK) (void)hipStreamSynchronize(k->c->stream);
    if (k->ab) ab_release(k->ab, k->ab->n > 1 ? k->rank : 0);   /* destroys k->h unless aborted */
    else comm_lib.destroy(k->h);
    if (k->g) {   /* the last rank frees the group: every rank's stream is done with it */
        std::unique_lock<std::mutex> lock(comm_mutex);
        const bool last = --k->g->refs == 0;
        lock.unlock();
        if (last) p2p_free_group(k->g);
    }
    free(k);
}

extern "C" wk_status wk_gpu_comm_run(void *comm, const wk_coll_args *a)
{
    comm_rank_t *k = (comm_rank_t *)comm;
    wk_gpu_ctx *c = k->c;
    const comm_lib_t *L = &comm_lib;
    const int t = comm_type(a->dtype);
    if (t < 0) return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s takes no %s", COMM_LIB, "such dtype");
    if (k->ab && k->ab->aborted.load()) return comm_refused(k);
    WK_GPU_ENTER(c);
    comm_res r = 0;
    const char *call = "";
    switch (a->kind) {
    case WK_COLL_ALL_REDUCE_SUM:
        if (p2p_takes(k, a)) return p2p_all_reduce(k, a);
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
    case WK_COLL_ALL_REDUCE_ADD_RMS_NORM:
        if (wk_gpu_comm_fuses(comm, a)) return p2p_all_reduce_norm(k, a);
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "all_reduce_add_rms_norm: not fused for these operands");
    }
    return r == 0 ? WK_OK : comm_fail(L, call, r);
}
