/* index.hip — index_select, gather, scatter_set, scatter_add, index_add:
 * ids u8/u32/i64 with any strides, values of all 10 dtypes, every view
 * strided (the destination of the in-place ops may be any non-overlapping
 * view), 64-bit offsets throughout.
 *
 * One formulation for the five ops. The iteration space (dst dims for
 * index_select, ids dims for gather/scatter, src dims for index_add) is
 * split at `dim` into pre dims, the coordinate c along dim, and post dims.
 * Three operands walk it: X, the tensor addressed through the id along dim
 * (src of index_select/gather, dst of scatter/index_add), Y, addressed by
 * c (the other tensor), and I, the ids (1-d ids have stride 0 on every dim
 * but dim). Then: read  Y[e] = X[id]  (index_select, gather),
 *                  set   X[id] = Y[e]  (scatter_set),
 *                  add   X[id] += Y[e] (scatter_add, index_add).
 *
 * Ids are checked without stalling the stream. A check kernel finds the
 * first out-of-range position (row-major) and leaves it in a device word
 * (~0: none); one block does it for up to IX_CHECK1_MAX ids (no atomics
 * in memory), more use a grid with atomicMin. The word is one of a pair
 * kept by the context: each check also resets the other word for the next
 * op, so no op needs a memset. The word is copied into a pinned host word
 * on a side stream and an event is recorded there; the host waits for
 * that event (never for the op's kernel), reads the word, and on failure
 * reads the offending id and reports WK_ERR_INDEX. The op's kernel is
 * queued before that wait, so back-to-back ops keep the device busy (the
 * old order, check + wait + launch, left the device idle for a round trip
 * per op, about 17 us of a 69 us embedding lookup).
 *   Reads (index_select, gather) write a fresh destination, which the
 * core drops when the op fails, so their kernel need not wait for the
 * check: an event (the fence) marks where the main stream stands, the
 * side stream waits for it and runs the check there, beside the op's
 * kernel, which is not gated and never reads through a bad id (it writes
 * zeros there). The side stream has the device's greatest priority, so
 * the check's few blocks start as soon as any of the op's finish (at equal
 * priority the op's blocks filled the device first and the host's wait
 * ended only after the op: 52 us instead of 40 for an embedding lookup).
 *   In-place ops (scatter_set, scatter_add, index_add) leave their
 * destination untouched on failure: the check runs on the main stream,
 * then the fence, then at once the op's kernel, gated on the word (its
 * blocks read it first and return without writing when it names a bad
 * id); the answer's copy waits for the fence, not for the op.
 *   Measured on an H200 ([128256, 4096] bf16, 8192 ids, median of 100):
 * the read with its check beside 39.7 us, with the check before the op on
 * the main stream 40.7 us, with no check at all 39.0 us.
 *   Inside a graph (c->recording) no check is made at all: its answer
 * would need a host wait at every replay. The kernels test every id
 * themselves: a read gives zeros, a write or add through a bad id does
 * nothing.
 *   No check when no id can be out of range (u8 ids against a dim of 256
 * or more, u32 against 2^32). Without pinned memory the check's answer is
 * waited for before the op's launch.
 *
 * Rows (index_select, the embedding lookup): when the selected dim's
 * inner extent is one contiguous run of `row` elements in src and dst
 * (any dim: outer x ids x row, the outer dim one merged stride), each row
 * is moved as raw bytes in units of 16 bytes (8/4/2/1 when the row bytes,
 * the strides or the base addresses are not 16-aligned) by
 * ix_rows_kernel: the flattened (outer, id, unit) space streams through
 * wk_gpu_stream, the elementwise kernels' loop (tiles of the stream block
 * x IX_ROWS_K units, each thread issuing its K loads, each with its id
 * load before it, then its K stores). 2 units per thread in blocks of 128
 * (32 bytes in flight per thread, like the streaming kernels): for [8192
 * ids x 4096 bf16] on an H200 that took 38.4 us against 40.2 for 256 x 4
 * (bench/TUNING-gpu.md has the sweep). The old path moved one 16-byte
 * unit per thread per iteration behind its own dependent id load and a
 * strided-offset computation (2.7 TB/s on an H200).
 *
 * Adds: f32, f64, u32, i32 and i64 use the hardware atomicAdd (integers
 * wrap). u8, i16, f16, bf16 and f8e4m3 have no portable atomic add, so
 * they use a compare-and-swap loop on the aligned 32-bit word holding the
 * element (narrow floats add in f32 and round once per add; the word never
 * leaves the allocation, whose size the allocator rounds to 512 bytes). Where ids
 * repeat, float adds happen in an unspecified order, so such results may
 * differ in the last bits from run to run (and scatter_set keeps one of
 * the values, unspecified which).
 *
 * Other moves (gather, scatter_set, index_select layouts the row path
 * does not take): pure data movement dispatches on element size only;
 * when ids do not vary along the post dims and rows are contiguous and
 * aligned, elements are regrouped into 16/8/4-byte units so each thread
 * moves a vector.
 *
 * Warp size: nothing here depends on it (blocks of 256 or 8 warps, no
 * warp operations), so one instantiation serves wave32 and wave64.
 */
#include "gpu_internal.h"
#include <mutex>

enum { IX_READ = 0, IX_SET = 1, IX_ADD = 2 };

/* the id check's "no bad id" value */
#define IX_NONE (~0ull)

struct alignas(16) ix_v16 {
    uint32_t w[4];
};

struct ix_params {
    wk_gpu_layout<3> pre, post;  /* operands 0 = X, 1 = Y, 2 = I            */
    int64_t n;                   /* iteration elements                      */
    int64_t nd, npost;           /* size along dim, elements of post dims   */
    wk_divmod32 dnd, dpost;      /* for n < 2^32                            */
    int64_t sd[3];               /* strides along dim (X's is per id)       */
    int64_t limit;               /* X's size along dim: ids in [0, limit)   */
};

/* e -> (pre index, c, post index) */
WK_DEV void ix_split(const ix_params &p, int64_t e, int64_t *pre, int64_t *c, int64_t *post)
{
    if (p.n <= (int64_t)UINT32_MAX) {
        const uint32_t u = (uint32_t)e;
        const uint32_t q = wk_divmod32_div(p.dpost, u);
        const uint32_t q2 = wk_divmod32_div(p.dnd, q);
        *post = (int64_t)(u - q * p.dpost.d);
        *c = (int64_t)(q - q2 * p.dnd.d);
        *pre = (int64_t)q2;
    } else {
        const int64_t q = e / p.npost;
        *post = e - q * p.npost;
        *c = q % p.nd;
        *pre = q / p.nd;
    }
}

/* offsets of X (without the id term), Y and I for element e */
WK_DEV void ix_offsets(const ix_params &p, int64_t e, int64_t o[3])
{
    int64_t pre, c, post, a[3], b[3];
    ix_split(p, e, &pre, &c, &post);
    wk_gpu_offsets<3>(p.pre, pre, a);
    wk_gpu_offsets<3>(p.post, post, b);
    o[0] = a[0] + b[0];
    o[1] = a[1] + b[1] + c * p.sd[1];
    o[2] = a[2] + b[2] + c * p.sd[2];
}

/* ------------------------------------------------------------------ */
/* atomic add of every dtype                                           */

template <typename T> WK_DEV T ix_add_val(T a, T b)
{
    if constexpr (wk_type<T>::is_float) return wk_to<T>(wk_load_c(a) + wk_load_c(b));
    else return (T)((typename std::make_unsigned<T>::type)a + (typename std::make_unsigned<T>::type)b);
}

/* compare-and-swap on the aligned 32-bit word holding a 1- or 2-byte element */
template <typename T> WK_DEV void ix_cas_add(T *p, T v)
{
    static_assert(sizeof(T) == 1 || sizeof(T) == 2, "sub-word element");
    const uintptr_t a = (uintptr_t)p;
    unsigned int *w = (unsigned int *)(a & ~(uintptr_t)3);
    const unsigned shift = (unsigned)(a & 3u) * 8u;
    const unsigned mask = (sizeof(T) == 1 ? 0xFFu : 0xFFFFu) << shift;
    unsigned old = *(volatile unsigned int *)w, assumed;
    do {
        assumed = old;
        T cur;
        const unsigned bits = (assumed & mask) >> shift;
        memcpy(&cur, &bits, sizeof(T));   /* little-endian: low bytes */
        const T nv = ix_add_val<T>(cur, v);
        unsigned nb = 0;
        memcpy(&nb, &nv, sizeof(T));
        old = atomicCAS(w, assumed, (assumed & ~mask) | (nb << shift));
    } while (old != assumed);
}

template <typename T> WK_DEV void ix_atomic_add(T *p, T v)
{
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value ||
                  std::is_same<T, uint32_t>::value)
        atomicAdd(p, v);
    else if constexpr (std::is_same<T, int32_t>::value) atomicAdd((int *)p, (int)v);
    else if constexpr (std::is_same<T, int64_t>::value)
        atomicAdd((unsigned long long *)p, (unsigned long long)v);
    else ix_cas_add<T>(p, v);
}

/* ------------------------------------------------------------------ */
/* kernels                                                             */

template <typename I> WK_DEV int64_t ix_id(const I *ids, int64_t o) { return (int64_t)ids[o]; }

/* The gate of every op kernel: true when the id check found a bad id
 * (bad is NULL when no check ran). */
WK_DEV bool ix_gated(const unsigned long long *bad) { return bad != NULL && *bad != IX_NONE; }

/* an id inside [0, limit) */
template <typename I> WK_DEV bool ix_in_range(I id, int64_t limit) { return (uint64_t)(int64_t)id < (uint64_t)limit; }

/* read (set == 0) or set: E is a storage unit of 1..16 bytes. A read
 * never addresses X through a bad id (its element is written as zero; the
 * op fails and its fresh destination is dropped), so reads need no gate. */
template <typename E, typename I>
__global__ void ix_move_kernel(ix_params p, E *x, E *y, const I *__restrict__ ids, int set,
                               const unsigned long long *__restrict__ bad)
{
    if (ix_gated(bad)) return;
    WK_GPU_FOR(e, p.n) {
        int64_t o[3];
        ix_offsets(p, e, o);
        const I id = ids[o[2]];
        const int64_t xo = o[0] + (int64_t)id * p.sd[0];
        if (!set) y[o[1]] = ix_in_range(id, p.limit) ? x[xo] : E{};
        else if (ix_in_range(id, p.limit)) x[xo] = y[o[1]];   /* unchecked in a graph */
    }
}

template <typename T, typename I>
__global__ void ix_add_kernel(ix_params p, T *x, const T *__restrict__ y, const I *__restrict__ ids,
                              const unsigned long long *__restrict__ bad)
{
    if (ix_gated(bad)) return;
    WK_GPU_FOR(e, p.n) {
        int64_t o[3];
        ix_offsets(p, e, o);
        const int64_t id = ix_id(ids, o[2]);
        if (ix_in_range(id, p.limit)) ix_atomic_add<T>(x + o[0] + id * p.sd[0], y[o[1]]);   /* unchecked in a graph */
    }
}

/* Rows: dst row (o, j) = src row (o, ids[j]), moved in units U of 1..16
 * bytes; strides in units, the ids' in elements. The flattened unit space
 * e = (o * n_ids + j) * nu + col streams through wk_gpu_stream (the
 * elementwise kernels' tile loop, gpu_internal.h) with IX_ROWS_K units per
 * thread. */
#ifndef IX_ROWS_K        /* -D overrides are for tuning builds */
#define IX_ROWS_K 2
#endif

struct ix_rows {
    int64_t total;               /* units to move: outer * n_ids * nu        */
    int64_t nu, n_ids;           /* units per row, ids                       */
    int64_t s_outer, s_id;       /* src strides (units) of outer and id      */
    int64_t d_outer, d_id;       /* dst strides (units) of outer and j       */
    int64_t i_st;                /* ids stride (elements)                    */
    int64_t limit;               /* src rows: ids in [0, limit)              */
    wk_divmod32 dnu, dids;       /* when total < 2^32                        */
};

/* unit e -> (outer o, id slot j, unit col); BIG: total >= 2^32 units */
template <bool BIG>
WK_DEV void ix_rows_at(const ix_rows &r, int64_t e, int64_t *o, int64_t *j, int64_t *col)
{
    if (!BIG) {
        const uint32_t u = (uint32_t)e;
        const uint32_t rw = wk_divmod32_div(r.dnu, u);
        const uint32_t oo = wk_divmod32_div(r.dids, rw);
        *col = (int64_t)(u - rw * r.dnu.d);
        *j = (int64_t)(rw - oo * r.dids.d);
        *o = (int64_t)oo;
    } else {
        const int64_t row = wk_div64(e, r.nu);
        *col = e - row * r.nu;
        *o = wk_div64(row, r.n_ids);
        *j = row - *o * r.n_ids;
    }
}

/* A unit's load finds its id (a row's threads read one id, cached) and
 * reads nothing through a bad one (zeros); its store recomputes the
 * destination offset (fewer registers than keeping it). */
template <typename U, typename I, bool BIG>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ix_rows_kernel(ix_rows r, const U *__restrict__ src, U *__restrict__ dst, const I *__restrict__ ids)
{
    wk_gpu_stream<IX_ROWS_K>(r.total, [&](int64_t e) {
        int64_t o, j, col;
        ix_rows_at<BIG>(r, e, &o, &j, &col);
        const I id = ids[j * r.i_st];
        U v{};
        if (ix_in_range(id, r.limit)) v = src[o * r.s_outer + (int64_t)id * r.s_id + col];
        return v;
    }, [&](int64_t e, const U &v) {
        int64_t o, j, col;
        ix_rows_at<BIG>(r, e, &o, &j, &col);
        dst[o * r.d_outer + j * r.d_id + col] = v;
    });
}

/* first (row-major) position of an id outside [0, limit), by one block
 * that writes the answer (IX_NONE when every id is good): no memset */
#define IX_CHECK1_BLOCK 512
#define IX_CHECK1_K 16
/* one block for at most 1024 ids: on an H200 the one block took 11 us
 * over 8192 i64 ids (Nsight Compute), longer than a memset and a grid */
#define IX_CHECK1_MAX ((int64_t)IX_CHECK1_BLOCK * 2)

template <typename I>
__global__ void __launch_bounds__(IX_CHECK1_BLOCK)
ix_check1_kernel(const I *__restrict__ ids, wk_gpu_layout<1> L, int64_t limit, unsigned long long *first,
                 unsigned long long *reset)
{
    if (threadIdx.x == 0 && reset) *reset = IX_NONE;      /* the next op's word */
    __shared__ unsigned long long s_first;
    if (threadIdx.x == 0) s_first = IX_NONE;
    __syncthreads();
    unsigned long long m = IX_NONE;
    const int64_t n = L.d.n;
    _Pragma("unroll 1")
    for (int64_t b = 0; b < n; b += (int64_t)IX_CHECK1_BLOCK * IX_CHECK1_K) {
        int64_t v[IX_CHECK1_K];
#pragma unroll
        for (int k = 0; k < IX_CHECK1_K; k++) {          /* every load first */
            const int64_t i = b + (int64_t)k * IX_CHECK1_BLOCK + threadIdx.x;
            v[k] = 0;
            if (i < n) {
                int64_t o[1];
                wk_gpu_offsets<1>(L, i, o);
                v[k] = ix_id(ids, o[0]);
            }
        }
#pragma unroll
        for (int k = 0; k < IX_CHECK1_K; k++) {
            const int64_t i = b + (int64_t)k * IX_CHECK1_BLOCK + threadIdx.x;
            if (i < n && (v[k] < 0 || v[k] >= limit) && (unsigned long long)i < m) m = (unsigned long long)i;
        }
    }
    if (m != IX_NONE) atomicMin(&s_first, m);
    __syncthreads();
    if (threadIdx.x == 0) *first = s_first;
}

/* the same for any number of ids: *first preset to IX_NONE, atomicMin */
template <typename I>
__global__ void ix_check_kernel(const I *__restrict__ ids, wk_gpu_layout<1> L, int64_t limit,
                                unsigned long long *first, unsigned long long *reset)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && reset) *reset = IX_NONE;   /* the next op's word */
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[1];
        wk_gpu_offsets<1>(L, i, o);
        const int64_t id = ix_id(ids, o[0]);
        if (id < 0 || id >= limit) atomicMin(first, (unsigned long long)i);
    }
}

/* ------------------------------------------------------------------ */
/* host                                                                */

/* The iteration space and the three operands over it. */
struct ix_spec {
    int rank, dim;
    int64_t dims[WK_MAX_RANK];
    int64_t st[3][WK_MAX_RANK];
    int64_t off[3];
    void *base[3];
    wk_dtype xdt, idt;
    int64_t limit;               /* X's size along dim */
    bool select;                 /* index_select (1-d ids, read)  */
};

static bool ix_id_dtype_ok(wk_dtype dt) { return dt == WK_U8 || dt == WK_U32 || dt == WK_I64; }

/* ---- the id check ------------------------------------------------- */

/* Per-context state of the check: the pinned host word its result is
 * copied into and the event recorded after that copy; `lock` is held from
 * the check's launch to the read of its result (contexts may be shared by
 * threads). host == NULL: no pinned memory, the check waits before the
 * op's launch. Kept in the context's extension slot IX_EXT_SLOT (the
 * last; matmul.hip owns slot 0). */
enum { IX_EXT_SLOT = WK_GPU_EXT_INDEX };
static_assert((int)IX_EXT_SLOT != (int)WK_GPU_EXT_BLAS, "index.hip needs an extension slot of its own");

struct ix_sync {
    std::mutex lock;
    unsigned long long *host;
    hipEvent_t ev;               /* the answer is in host         */
    hipEvent_t fence;            /* a point of the main stream the side stream waits for */
    hipStream_t side;            /* the answer's copy to the host */
    /* Two device words, the answers of alternate ops: an op's check
     * kernel writes one and resets the other to IX_NONE for the next op
     * (whose kernels run after this op's on the stream, and which is
     * issued after the host read this op's answer), so no op needs a
     * memset or a scratch allocation. dirty: a check failed to launch,
     * reset both first. */
    unsigned long long *words;
    int cur;
    bool dirty;
};

static std::mutex ix_sync_make_lock;

/* The side stream, of the device's greatest priority: a read's check runs
 * there beside the op's kernel, whose blocks would otherwise fill the
 * device first and hold the check (and the host waiting for it) until
 * they are nearly done. */
static bool ix_side_stream(hipStream_t *s)
{
    int least = 0, greatest = 0;
    if (hipDeviceGetStreamPriorityRange(&least, &greatest) != hipSuccess) greatest = 0;
    if (hipStreamCreateWithPriority(s, hipStreamNonBlocking, greatest) == hipSuccess) return true;
    *s = NULL;
    return false;
}

static void ix_sync_free(wk_gpu_ctx *c, void *state)
{
    (void)c;
    ix_sync *y = (ix_sync *)state;
    if (!y) return;
    if (y->ev) {
        (void)hipEventSynchronize(y->ev);
        (void)hipEventDestroy(y->ev);
    }
    if (y->fence) (void)hipEventDestroy(y->fence);
    if (y->side) (void)hipStreamDestroy(y->side);
    if (y->words) (void)hipFree(y->words);
    if (y->host) (void)hipHostFree(y->host);
    (void)hipGetLastError();
    delete y;
}

/* The context's check state, made on first use; NULL when the slot holds
 * something else or host memory is short (then: synchronous check). */
static ix_sync *ix_sync_get(wk_gpu_ctx *c)
{
    std::lock_guard<std::mutex> g(ix_sync_make_lock);
    if (c->ext[IX_EXT_SLOT]) return c->ext_free[IX_EXT_SLOT] == ix_sync_free ? (ix_sync *)c->ext[IX_EXT_SLOT] : NULL;
    ix_sync *y = new (std::nothrow) ix_sync;
    if (!y) return NULL;
    y->host = NULL;
    y->ev = y->fence = NULL;
    y->side = NULL;
    y->words = NULL;
    y->cur = 0;
    y->dirty = true;
    void *h = NULL;
    if (hipHostMalloc(&h, sizeof(unsigned long long), hipHostMallocDefault) == hipSuccess) y->host = (unsigned long long *)h;
    if (y->host && (hipEventCreateWithFlags(&y->ev, hipEventDisableTiming) != hipSuccess ||
                    hipEventCreateWithFlags(&y->fence, hipEventDisableTiming) != hipSuccess ||
                    !ix_side_stream(&y->side))) {
        if (y->ev) (void)hipEventDestroy(y->ev);
        if (y->fence) (void)hipEventDestroy(y->fence);
        y->ev = y->fence = NULL;
        y->side = NULL;
        (void)hipHostFree(y->host);
        y->host = NULL;
    }
    if (y->host && hipMalloc((void **)&y->words, 2 * sizeof(unsigned long long)) != hipSuccess) y->words = NULL;
    (void)hipGetLastError();       /* a failure above only costs speed */
    c->ext[IX_EXT_SLOT] = y;
    c->ext_free[IX_EXT_SLOT] = ix_sync_free;
    return y;
}

/* A check in flight: bad is the device word the op's kernel is gated on
 * (NULL: no check ran); when `waited`, pos already holds the answer, else
 * it is on its way to sy->host behind sy->ev. */
struct ix_pending {
    unsigned long long *bad;
    bool scratch;                /* bad is scratch memory (no word pair) */
    bool beside;                 /* the check runs on the side stream, beside the op */
    bool waited;
    unsigned long long pos;
    wk_gpu_layout<1> L;
};

template <typename I>
static wk_status ix_check_start_t(wk_gpu_ctx *c, ix_sync *sy, const wk_view *ids, int64_t limit, bool beside,
                                  ix_pending *pd)
{
    if (std::is_same<I, uint8_t>::value && limit >= 256) return WK_OK;
    if (std::is_same<I, uint32_t>::value && limit > (int64_t)UINT32_MAX) return WK_OK;
    const wk_view *vv[1] = { ids };
    const int64_t n = wk_gpu_layout_make<1>(&pd->L, vv);
    if (n == 0) return WK_OK;
    wk_status st = WK_OK;
    unsigned long long *reset = NULL;
    const bool pair = sy && sy->host && sy->words;
    if (pair) {                               /* the word pair: no memset */
        if (sy->dirty) {
            WK_GPU_CHECK_C(c, hipMemsetAsync(sy->words, 0xFF, 2 * sizeof *sy->words, c->stream));
            sy->dirty = false;
        }
        pd->bad = sy->words + sy->cur;
        reset = sy->words + (sy->cur ^ 1);
        sy->cur ^= 1;
    } else {
        st = wk_gpu_scratch_alloc(c, sizeof *pd->bad, (void **)&pd->bad);
        if (st != WK_OK) {
            pd->bad = NULL;
            return st;
        }
        pd->scratch = true;
    }
    const I *ip = (const I *)ids->base;
    /* beside: the side stream starts where the main stream stands (the
     * ids are ready) and runs the check while the op's kernel runs */
    pd->beside = beside && pair;
    hipStream_t cs = c->stream;
    if (pd->beside) {
        WK_GPU_CHECK_C(c, hipEventRecord(sy->fence, c->stream));
        WK_GPU_CHECK_C(c, hipStreamWaitEvent(sy->side, sy->fence, 0));
        cs = sy->side;
    }
    if (n <= IX_CHECK1_MAX) {
        ix_check1_kernel<I><<<1, IX_CHECK1_BLOCK, 0, cs>>>(ip, pd->L, limit, pd->bad, reset);
    } else {
        if (!pair) {
            hipError_t e = hipMemsetAsync(pd->bad, 0xFF, sizeof *pd->bad, cs);
            if (e != hipSuccess) return wk_gpu_fail(c, e, "hipMemsetAsync(first bad id)", __FILE__, __LINE__);
        }
        const int bs = wk_gpu_ew_block(c);
        ix_check_kernel<I><<<wk_gpu_grid(c, n, bs, 4), bs, 0, cs>>>(ip, pd->L, limit, pd->bad, reset);
    }
    st = wk_gpu_launched(c, "index id check", __FILE__, __LINE__);
    if (st != WK_OK) {
        if (pair) sy->dirty = true;
        return st;
    }
    if (sy && sy->host) {
        /* the point the answer's copy will wait for; the copy itself is
         * queued after the op's launch (ix_check_send) */
        if (!pd->beside) WK_GPU_CHECK_C(c, hipEventRecord(sy->fence, c->stream));
        return WK_OK;
    }
    pd->waited = true;
    return wk_gpu_read(c, &pd->pos, pd->bad, sizeof pd->pos);
}

/* Launch the check of every id against [0, limit): on the main stream,
 * marked after it with the fence (pinned memory); or, asked `beside` and
 * with the word pair, on the side stream after a fence (pd->beside). pd->bad
 * is the word to gate the op's kernel on (not needed beside). */
static wk_status ix_check_start(wk_gpu_ctx *c, ix_sync *sy, const wk_view *ids, int64_t limit, bool beside,
                                ix_pending *pd)
{
    memset(pd, 0, sizeof *pd);
    pd->pos = IX_NONE;
    switch (ids->dtype) {
    case WK_U8: return ix_check_start_t<uint8_t>(c, sy, ids, limit, beside, pd);
    case WK_U32: return ix_check_start_t<uint32_t>(c, sy, ids, limit, beside, pd);
    default: return ix_check_start_t<int64_t>(c, sy, ids, limit, beside, pd);
    }
}

/* After the op's launch: queue the answer's copy to the host on the side
 * stream, behind the mark after the check, so the device runs the check
 * and the op's kernel back to back while the host issues this. */
static wk_status ix_check_send(wk_gpu_ctx *c, ix_sync *sy, const ix_pending *pd)
{
    if (!pd->bad || pd->waited) return WK_OK;
    if (!pd->beside) WK_GPU_CHECK_C(c, hipStreamWaitEvent(sy->side, sy->fence, 0));
    WK_GPU_CHECK_C(c, hipMemcpyAsync(sy->host, pd->bad, sizeof *pd->bad, hipMemcpyDeviceToHost, sy->side));
    WK_GPU_CHECK_C(c, hipEventRecord(sy->ev, sy->side));
    return WK_OK;
}

/* Wait for the check's answer (not for the op's kernel); WK_ERR_INDEX
 * naming the first bad id, else WK_OK. Frees the device word. */
static wk_status ix_check_finish(wk_gpu_ctx *c, ix_sync *sy, const wk_view *ids, int64_t limit, int dim,
                                 ix_pending *pd, bool started)
{
    if (!pd->bad) return WK_OK;
    wk_status st = WK_OK;
    if (!pd->waited && started) {
        hipError_t e = hipEventSynchronize(sy->ev);
        if (e != hipSuccess) {
            if (pd->scratch) wk_gpu_scratch_free(c, pd->bad);
            pd->bad = NULL;
            return wk_gpu_fail(c, e, "hipEventSynchronize(id check)", __FILE__, __LINE__);
        }
        pd->pos = *(volatile unsigned long long *)sy->host;
    }
    /* scratch: freed once the side stream has read it; stream-ordered on
     * the main stream, after the gated kernel */
    if (pd->scratch) wk_gpu_scratch_free(c, pd->bad);
    pd->bad = NULL;
    if (pd->pos == IX_NONE) return st;

    /* the offending id: decode its position in the merged layout */
    const wk_gpu_layout<1> &L = pd->L;
    int64_t off = L.off[0], rem = (int64_t)pd->pos;
    for (int d = L.d.rank - 1; d >= 0; d--) {
        off += (rem % L.d.dims[d]) * L.st[0][d];
        rem /= L.d.dims[d];
    }
    int64_t idv = 0;
    const size_t isz = wk_gpu_dtype_size(ids->dtype);
    if (ids->dtype == WK_U8) {
        uint8_t v = 0;
        st = wk_gpu_read(c, &v, (const char *)ids->base + off * (int64_t)isz, sizeof v);
        idv = v;
    } else if (ids->dtype == WK_U32) {
        uint32_t v = 0;
        st = wk_gpu_read(c, &v, (const char *)ids->base + off * (int64_t)isz, sizeof v);
        idv = v;
    } else {
        st = wk_gpu_read(c, &idv, (const char *)ids->base + off * (int64_t)isz, sizeof idv);
    }
    if (st != WK_OK) return st;
    return wk_gpu_host->set_error(WK_ERR_INDEX, "id %lld out of range for dim %d of size %lld", (long long)idv, dim,
                                  (long long)limit);
}

/* ---- the op's kernel ---------------------------------------------- */

/* Build the launch parameters; *unit is the element size the kernel moves
 * (regrouped for read/set where allowed and `regroup`; else the dtype's
 * size). */
static int64_t ix_prepare(const ix_spec &S, int mode, bool regroup, ix_params *p, int *unit)
{
    memset(p, 0, sizeof *p);
    wk_view pv[3], qv[3];
    const wk_view *pvp[3], *qvp[3];
    const int npre = S.dim, nq = S.rank - S.dim - 1;
    for (int k = 0; k < 3; k++) {
        memset(&pv[k], 0, sizeof pv[k]);
        memset(&qv[k], 0, sizeof qv[k]);
        pv[k].rank = npre;
        qv[k].rank = nq;
        for (int d = 0; d < npre; d++) {
            pv[k].dims[d] = S.dims[d];
            pv[k].strides[d] = S.st[k][d];
        }
        for (int d = 0; d < nq; d++) {
            qv[k].dims[d] = S.dims[S.dim + 1 + d];
            qv[k].strides[d] = S.st[k][S.dim + 1 + d];
        }
        pv[k].offset = S.off[k];
        qv[k].offset = 0;
        pvp[k] = &pv[k];
        qvp[k] = &qv[k];
    }
    const int64_t npre_n = wk_gpu_layout_make<3>(&p->pre, pvp);
    p->npost = wk_gpu_layout_make<3>(&p->post, qvp);
    p->nd = S.dims[S.dim];
    p->limit = S.limit;
    for (int k = 0; k < 3; k++) p->sd[k] = S.st[k][S.dim];
    int es = (int)wk_gpu_dtype_size(S.xdt);
    *unit = es;

    /* regroup contiguous rows into wider units (read/set, ids constant
     * along the post dims) */
    const int q = p->post.d.rank;
    if (regroup && mode != IX_ADD && q > 0 && p->post.st[0][q - 1] == 1 && p->post.st[1][q - 1] == 1) {
        bool ids_flat = true;
        for (int d = 0; d < q; d++) ids_flat = ids_flat && p->post.st[2][d] == 0;
        for (int f = 16 / es; ids_flat && f >= 2; f /= 2) {
            bool ok = p->post.d.dims[q - 1] % f == 0;
            for (int k = 0; k < 2 && ok; k++) {
                ok = ok && p->pre.off[k] % f == 0 && p->sd[k] % f == 0 &&
                     ((uintptr_t)S.base[k] % (uintptr_t)(f * es)) == 0;
                for (int d = 0; d < p->pre.d.rank; d++) ok = ok && p->pre.st[k][d] % f == 0;
                for (int d = 0; d < q - 1; d++) ok = ok && p->post.st[k][d] % f == 0;
            }
            if (!ok) continue;
            for (int k = 0; k < 2; k++) {
                p->pre.off[k] /= f;
                p->sd[k] /= f;
                for (int d = 0; d < p->pre.d.rank; d++) p->pre.st[k][d] /= f;
                for (int d = 0; d < q - 1; d++) p->post.st[k][d] /= f;
            }
            p->post.d.dims[q - 1] /= f;
            p->post.d.n /= f;
            p->post.d.div[q - 1] = wk_divmod32_make(p->post.d.dims[q - 1] <= (int64_t)UINT32_MAX
                                                        ? (uint32_t)p->post.d.dims[q - 1] : 1u);
            p->npost /= f;
            *unit = es * f;
            break;
        }
    }
    p->n = npre_n * p->nd * p->npost;
    if (p->n > 0 && p->n <= (int64_t)UINT32_MAX) {
        p->dnd = wk_divmod32_make((uint32_t)p->nd);
        p->dpost = wk_divmod32_make((uint32_t)p->npost);
    }
    return p->n;
}

/* The row path of index_select (see the top comment): one run of `row`
 * contiguous elements per (outer, id) in src and dst, the outer dims
 * merged into one stride. Picks the widest unit (<= 16 bytes) dividing the
 * row bytes, both base addresses and every stride that matters. */
static bool ix_rows_plan(const ix_spec &S, const ix_params &p, ix_rows *r, int *unit, char **src, char **dst,
                         int64_t *ids_off)
{
    if (p.pre.d.rank > 1 || p.post.d.rank > 1) return false;
    if (p.post.d.rank == 1 && (p.post.st[0][0] != 1 || p.post.st[1][0] != 1 || p.post.st[2][0] != 0)) return false;
    if (p.pre.d.rank == 1 && p.pre.st[2][0] != 0) return false;
    const int64_t es = (int64_t)wk_gpu_dtype_size(S.xdt);
    const int64_t rowb = p.npost * es;                 /* npost is 1 for rank 0 */
    const int64_t n_outer = p.pre.d.rank ? p.pre.d.dims[0] : 1;
    /* strides of size-1 dims never move anything: left out of the alignment */
    const int64_t so = n_outer > 1 ? p.pre.st[0][0] : 0, dso = n_outer > 1 ? p.pre.st[1][0] : 0;
    const int64_t si = S.limit > 1 ? p.sd[0] : 0, dsi = p.nd > 1 ? p.sd[1] : 0;
    char *sp = (char *)S.base[0] + p.pre.off[0] * es, *dp = (char *)S.base[1] + p.pre.off[1] * es;
    const uint64_t bits = (uint64_t)rowb | (uint64_t)(uintptr_t)sp | (uint64_t)(uintptr_t)dp | (uint64_t)(so * es) |
                          (uint64_t)(dso * es) | (uint64_t)(si * es) | (uint64_t)(dsi * es);
    int u = 16;
    while (u > 1 && (bits & (uint64_t)(u - 1))) u /= 2;
    memset(r, 0, sizeof *r);
    r->nu = rowb / u;
    r->n_ids = p.nd;
    r->total = n_outer * p.nd * r->nu;
    r->s_outer = so * es / u;
    r->s_id = si * es / u;
    r->d_outer = dso * es / u;
    r->d_id = dsi * es / u;
    r->i_st = p.sd[2];
    r->limit = S.limit;
    if (r->total > 0 && r->total <= (int64_t)UINT32_MAX) {
        r->dnu = wk_divmod32_make((uint32_t)r->nu);
        r->dids = wk_divmod32_make((uint32_t)r->n_ids);
    }
    *unit = u;
    *src = sp;
    *dst = dp;
    *ids_off = p.pre.off[2];
    return true;
}

template <typename U, typename I>
static void ix_rows_launch(wk_gpu_ctx *c, const ix_rows &r, const char *src, char *dst, const I *ids)
{
    const int block = wk_gpu_stream_block(c);
    const unsigned grid = wk_gpu_stream_grid(r.total, block, IX_ROWS_K);
    if (r.total <= (int64_t)UINT32_MAX)
        ix_rows_kernel<U, I, false><<<grid, block, 0, c->stream>>>(r, (const U *)src, (U *)dst, ids);
    else
        ix_rows_kernel<U, I, true><<<grid, block, 0, c->stream>>>(r, (const U *)src, (U *)dst, ids);
}

template <typename I>
static wk_status ix_run_t(wk_gpu_ctx *c, const ix_spec &S, int mode, const unsigned long long *bad)
{
    ix_params p;
    int unit;
    if (S.select) {
        const int64_t n = ix_prepare(S, mode, false, &p, &unit);
        if (n == 0) return WK_OK;
        ix_rows r;
        char *src, *dst;
        int64_t ioff;
        if (ix_rows_plan(S, p, &r, &unit, &src, &dst, &ioff)) {
            const I *ids = (const I *)S.base[2] + ioff;
            switch (unit) {
            case 16: ix_rows_launch<ix_v16, I>(c, r, src, dst, ids); break;
            case 8: ix_rows_launch<uint64_t, I>(c, r, src, dst, ids); break;
            case 4: ix_rows_launch<uint32_t, I>(c, r, src, dst, ids); break;
            case 2: ix_rows_launch<uint16_t, I>(c, r, src, dst, ids); break;
            default: ix_rows_launch<uint8_t, I>(c, r, src, dst, ids); break;
            }
            return wk_gpu_launched(c, "index_select rows", __FILE__, __LINE__);
        }
    }
    const int64_t n = ix_prepare(S, mode, true, &p, &unit);
    if (n == 0) return WK_OK;
    const int bs = wk_gpu_ew_block(c);
    const unsigned grid = wk_gpu_grid(c, n, bs, 8);
    const I *ids = (const I *)S.base[2];
    if (mode == IX_ADD) {
        WK_GPU_DISPATCH_ALL(S.xdt, T,
            ix_add_kernel<T, I><<<grid, bs, 0, c->stream>>>(p, (T *)S.base[0], (const T *)S.base[1], ids, bad));
        return wk_gpu_launched(c, "index add", __FILE__, __LINE__);
    }
    const int set = mode == IX_SET;
    if (unit == 16) {
        ix_move_kernel<ix_v16, I><<<grid, bs, 0, c->stream>>>(p, (ix_v16 *)S.base[0], (ix_v16 *)S.base[1], ids, set, bad);
    } else {
        WK_GPU_DISPATCH_SIZE(unit, E,
            ix_move_kernel<E, I><<<grid, bs, 0, c->stream>>>(p, (E *)S.base[0], (E *)S.base[1], ids, set, bad));
    }
    return wk_gpu_launched(c, mode == IX_READ ? "index read" : "index set", __FILE__, __LINE__);
}

static wk_status ix_run(wk_gpu_ctx *c, const ix_spec &S, int mode, const unsigned long long *bad)
{
    switch (S.idt) {
    case WK_U8: return ix_run_t<uint8_t>(c, S, mode, bad);
    case WK_U32: return ix_run_t<uint32_t>(c, S, mode, bad);
    default: return ix_run_t<int64_t>(c, S, mode, bad);
    }
}

/* The common steps: validate ids' dtype, start the id check, launch the
 * op gated on it, then wait for the check's answer. `it` gives the
 * iteration dims; x/y the addressed operands; ids1d: ids is 1-d along dim
 * (index_select, index_add), else it has the iteration dims. */
static wk_status ix_op(void *ctx, const char *name, int mode, const wk_view *it, const wk_view *x, const wk_view *y,
                       const wk_view *ids, bool ids1d, int dim, bool checked)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!ix_id_dtype_ok(ids->dtype))
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: ids must be u8, u32 or i64 (dtype %d given)", name,
                                      (int)ids->dtype);
    if (dim < 0 || dim >= it->rank)
        return wk_gpu_host->set_error(WK_ERR_INDEX, "%s: dim %d out of range for rank %d", name, dim, it->rank);
    if (x->dtype != y->dtype)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtypes %d and %d differ", name, (int)x->dtype,
                                      (int)y->dtype);
    WK_GPU_ENTER(c);
    ix_spec S;
    memset(&S, 0, sizeof S);
    S.rank = it->rank;
    S.dim = dim;
    for (int d = 0; d < it->rank; d++) {
        S.dims[d] = it->dims[d];
        S.st[0][d] = x->strides[d];
        S.st[1][d] = y->strides[d];
        S.st[2][d] = ids1d ? (d == dim ? ids->strides[0] : 0) : ids->strides[d];
    }
    S.off[0] = x->offset;
    S.off[1] = y->offset;
    S.off[2] = ids->offset;
    S.base[0] = x->base;
    S.base[1] = y->base;
    S.base[2] = ids->base;
    S.xdt = x->dtype;
    S.idt = ids->dtype;
    S.limit = x->dims[dim];
    S.select = mode == IX_READ && ids1d;

    /* recording a graph, or ids the caller checked (WK_OPF_IDS_CHECKED): no
       wait for a check's answer (reads write zeros at a bad id, writes skip
       it: the kernels test every id) */
    if (c->recording || checked) return ix_run(c, S, mode, NULL);

    ix_sync *sy = ix_sync_get(c);
    std::unique_lock<std::mutex> held;
    if (sy) held = std::unique_lock<std::mutex>(sy->lock);
    ix_pending pd;
    const wk_status ck = ix_check_start(c, sy, ids, S.limit, mode == IX_READ, &pd);
    wk_status st = ck;
    if (ck == WK_OK && !(pd.waited && pd.pos != IX_NONE))   /* reads need no gate: they skip bad ids */
        st = ix_run(c, S, mode, mode == IX_READ ? NULL : pd.bad);
    /* the answer's copy is queued even when the op's launch failed, so
     * the word is read and released the same way */
    const wk_status ss = ck == WK_OK ? ix_check_send(c, sy, &pd) : ck;
    if (st == WK_OK) st = ss;
    const bool started = ss == WK_OK;       /* the event was recorded (when not waited) */
    const wk_status cs = ix_check_finish(c, sy, ids, S.limit, dim, &pd, started);
    return cs != WK_OK ? cs : st;
}

wk_status wk_gpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim, bool checked)
{
    return ix_op(ctx, "index_select", IX_READ, dst, src, dst, ids, true, dim, checked);
}

wk_status wk_gpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim, bool checked)
{
    return ix_op(ctx, "gather", IX_READ, ids, src, dst, ids, false, dim, checked);
}

wk_status wk_gpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim,
                         bool checked)
{
    if (op != WK_OP_SCATTER_SET && op != WK_OP_SCATTER_ADD)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "scatter: op %d is neither scatter_set nor scatter_add",
                                      (int)op);
    return ix_op(ctx, op == WK_OP_SCATTER_SET ? "scatter_set" : "scatter_add",
                 op == WK_OP_SCATTER_SET ? IX_SET : IX_ADD, ids, dst, src, ids, false, dim, checked);
}

wk_status wk_gpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim, bool checked)
{
    return ix_op(ctx, "index_add", IX_ADD, src, dst, src, ids, true, dim, checked);
}
