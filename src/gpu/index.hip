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
 * Ids are checked before anything is written: a check kernel records the
 * first out-of-range position (atomicMin of its row-major position in a
 * device word), the host reads that word back (a synchronization, only
 * when some id could be out of range: u8 ids against a dim of 256 or more
 * skip it), and on failure reads the offending id and reports WK_ERR_INDEX
 * without launching the op's kernel.
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
 * Speed: pure data movement (read, set) dispatches on element size only;
 * when ids do not vary along the post dims (index_select: embedding
 * lookups and row gathers) and rows are contiguous and aligned, elements
 * are regrouped into 16/8/4-byte units so each thread moves a vector.
 */
#include "gpu_internal.h"

enum { IX_READ = 0, IX_SET = 1, IX_ADD = 2 };

struct alignas(16) ix_v16 {
    uint32_t w[4];
};

struct ix_params {
    wk_gpu_layout<3> pre, post;  /* operands 0 = X, 1 = Y, 2 = I            */
    int64_t n;                   /* iteration elements                      */
    int64_t nd, npost;           /* size along dim, elements of post dims   */
    wk_divmod32 dnd, dpost;      /* for n < 2^32                            */
    int64_t sd[3];               /* strides along dim (X's is per id)       */
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

/* read (set == 0) or set: E is a storage unit of 1..16 bytes */
template <typename E, typename I>
__global__ void ix_move_kernel(ix_params p, E *x, E *y, const I *__restrict__ ids, int set)
{
    WK_GPU_FOR(e, p.n) {
        int64_t o[3];
        ix_offsets(p, e, o);
        const int64_t xo = o[0] + ix_id(ids, o[2]) * p.sd[0];
        if (set) x[xo] = y[o[1]];
        else y[o[1]] = x[xo];
    }
}

template <typename T, typename I>
__global__ void ix_add_kernel(ix_params p, T *x, const T *__restrict__ y, const I *__restrict__ ids)
{
    WK_GPU_FOR(e, p.n) {
        int64_t o[3];
        ix_offsets(p, e, o);
        ix_atomic_add<T>(x + o[0] + ix_id(ids, o[2]) * p.sd[0], y[o[1]]);
    }
}

/* first (row-major) position of an id outside [0, limit) */
template <typename I>
__global__ void ix_check_kernel(const I *__restrict__ ids, wk_gpu_layout<1> L, int64_t limit,
                                unsigned long long *first)
{
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
};

static bool ix_id_dtype_ok(wk_dtype dt) { return dt == WK_U8 || dt == WK_U32 || dt == WK_I64; }

template <typename I>
static wk_status ix_check_t(wk_gpu_ctx *c, const wk_view *ids, int64_t limit, int dim)
{
    if (std::is_same<I, uint8_t>::value && limit >= 256) return WK_OK;
    if (std::is_same<I, uint32_t>::value && limit > (int64_t)UINT32_MAX) return WK_OK;
    wk_gpu_layout<1> L;
    const wk_view *vv[1] = { ids };
    const int64_t n = wk_gpu_layout_make<1>(&L, vv);
    if (n == 0) return WK_OK;
    unsigned long long *first = NULL;
    wk_status st = wk_gpu_scratch_alloc(c, sizeof *first, (void **)&first);
    if (st != WK_OK) return st;
    unsigned long long pos = ~0ull;
    hipError_t e = hipMemsetAsync(first, 0xFF, sizeof *first, c->stream);
    if (e != hipSuccess) st = wk_gpu_fail(c, e, "hipMemsetAsync(first bad id)", __FILE__, __LINE__);
    if (st == WK_OK) {
        const int bs = wk_gpu_ew_block(c);
        ix_check_kernel<I><<<wk_gpu_grid(c, n, bs, 4), bs, 0, c->stream>>>((const I *)ids->base, L, limit, first);
        st = wk_gpu_launched(c, "index id check", __FILE__, __LINE__);
    }
    if (st == WK_OK) st = wk_gpu_read(c, &pos, first, sizeof pos);
    wk_gpu_scratch_free(c, first);
    if (st != WK_OK || pos == ~0ull) return st;

    /* the offending id: decode its position in the merged layout */
    int64_t off = L.off[0], rem = (int64_t)pos;
    for (int d = L.d.rank - 1; d >= 0; d--) {
        off += (rem % L.d.dims[d]) * L.st[0][d];
        rem /= L.d.dims[d];
    }
    I idv = 0;
    st = wk_gpu_read(c, &idv, (const I *)ids->base + off, sizeof idv);
    if (st != WK_OK) return st;
    return wk_gpu_host->set_error(WK_ERR_INDEX, "id %lld out of range for dim %d of size %lld", (long long)idv, dim,
                                  (long long)limit);
}

static wk_status ix_check(wk_gpu_ctx *c, const wk_view *ids, int64_t limit, int dim)
{
    switch (ids->dtype) {
    case WK_U8: return ix_check_t<uint8_t>(c, ids, limit, dim);
    case WK_U32: return ix_check_t<uint32_t>(c, ids, limit, dim);
    default: return ix_check_t<int64_t>(c, ids, limit, dim);
    }
}

/* Build the launch parameters; *unit is the element size the kernel moves
 * (regrouped for read/set where allowed; else the dtype's size). */
static int64_t ix_prepare(const ix_spec &S, int mode, ix_params *p, int *unit)
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
    for (int k = 0; k < 3; k++) p->sd[k] = S.st[k][S.dim];
    int es = (int)wk_gpu_dtype_size(S.xdt);
    *unit = es;

    /* regroup contiguous rows into wider units (read/set, ids constant
     * along the post dims) */
    const int q = p->post.d.rank;
    if (mode != IX_ADD && q > 0 && p->post.st[0][q - 1] == 1 && p->post.st[1][q - 1] == 1) {
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

template <typename I>
static wk_status ix_run_t(wk_gpu_ctx *c, const ix_spec &S, int mode)
{
    ix_params p;
    int unit;
    const int64_t n = ix_prepare(S, mode, &p, &unit);
    if (n == 0) return WK_OK;
    const int bs = wk_gpu_ew_block(c);
    const unsigned grid = wk_gpu_grid(c, n, bs, 8);
    const I *ids = (const I *)S.base[2];
    if (mode == IX_ADD) {
        WK_GPU_DISPATCH_ALL(S.xdt, T,
            ix_add_kernel<T, I><<<grid, bs, 0, c->stream>>>(p, (T *)S.base[0], (const T *)S.base[1], ids));
        return wk_gpu_launched(c, "index add", __FILE__, __LINE__);
    }
    const int set = mode == IX_SET;
    if (unit == 16) {
        ix_move_kernel<ix_v16, I><<<grid, bs, 0, c->stream>>>(p, (ix_v16 *)S.base[0], (ix_v16 *)S.base[1], ids, set);
    } else {
        WK_GPU_DISPATCH_SIZE(unit, E,
            ix_move_kernel<E, I><<<grid, bs, 0, c->stream>>>(p, (E *)S.base[0], (E *)S.base[1], ids, set));
    }
    return wk_gpu_launched(c, mode == IX_READ ? "index read" : "index set", __FILE__, __LINE__);
}

static wk_status ix_run(wk_gpu_ctx *c, const ix_spec &S, int mode)
{
    switch (S.idt) {
    case WK_U8: return ix_run_t<uint8_t>(c, S, mode);
    case WK_U32: return ix_run_t<uint32_t>(c, S, mode);
    default: return ix_run_t<int64_t>(c, S, mode);
    }
}

/* The common steps: validate ids' dtype, check every id, run. `it` gives
 * the iteration dims; x/y the addressed operands; ids1d: ids is 1-d along
 * dim (index_select, index_add), else it has the iteration dims. */
static wk_status ix_op(void *ctx, const char *name, int mode, const wk_view *it, const wk_view *x, const wk_view *y,
                       const wk_view *ids, bool ids1d, int dim)
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

    wk_status st = ix_check(c, ids, S.limit, dim);
    if (st != WK_OK) return st;
    return ix_run(c, S, mode);
}

bool wk_gpu_index_supports(void *ctx, wk_op op, wk_dtype dt)
{
    (void)ctx;
    return op >= WK_OP_INDEX_SELECT && op <= WK_OP_INDEX_ADD && (unsigned)dt < WK_DTYPE_COUNT;
}

wk_status wk_gpu_index_select(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim)
{
    return ix_op(ctx, "index_select", IX_READ, dst, src, dst, ids, true, dim);
}

wk_status wk_gpu_gather(void *ctx, const wk_view *dst, const wk_view *src, const wk_view *ids, int dim)
{
    return ix_op(ctx, "gather", IX_READ, ids, src, dst, ids, false, dim);
}

wk_status wk_gpu_scatter(void *ctx, wk_op op, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim)
{
    if (op != WK_OP_SCATTER_SET && op != WK_OP_SCATTER_ADD)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "scatter: op %d is neither scatter_set nor scatter_add",
                                      (int)op);
    return ix_op(ctx, op == WK_OP_SCATTER_SET ? "scatter_set" : "scatter_add",
                 op == WK_OP_SCATTER_SET ? IX_SET : IX_ADD, ids, dst, src, ids, false, dim);
}

wk_status wk_gpu_index_add(void *ctx, const wk_view *dst, const wk_view *ids, const wk_view *src, int dim)
{
    return ix_op(ctx, "index_add", IX_ADD, src, dst, src, ids, true, dim);
}
