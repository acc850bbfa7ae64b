/* tensor.c — storage (a refcounted buffer on one device) and tensors (a
 * refcounted view: storage + dtype + shape/strides/offset), scopes that
 * own temporaries, accessors, and host transfers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "scalar.h"

/* ---- storage ---------------------------------------------------------- */

/* A tensor made by wk_tensor_alloc and its storage are one allocation (one
 * malloc per op, not two). Views made later point at that storage; the
 * block is freed when the storage's last reference goes, so a released
 * tensor's header may outlive it until then (it is dead, never read). */
typedef struct tensor_block {
    struct wk_tensor t;
    wk_storage st;
} tensor_block;

/* ---- what is alive (wk_live_stats_get) -------------------------------- */

static _Atomic int64_t live_tensors, live_storages, live_bytes;

static inline void live_add(_Atomic int64_t *c, int64_t d) { atomic_fetch_add_explicit(c, d, memory_order_relaxed); }

static inline void storage_born(const wk_storage *st)
{
    live_add(&live_storages, 1);
    live_add(&live_bytes, (int64_t)st->bytes);
}

wk_live_stats wk_live_stats_get(void)
{
    return (wk_live_stats){ .tensors = atomic_load_explicit(&live_tensors, memory_order_relaxed),
                            .storages = atomic_load_explicit(&live_storages, memory_order_relaxed),
                            .storage_bytes = atomic_load_explicit(&live_bytes, memory_order_relaxed) };
}

/* ---- debug handles (core.h: WK_DEBUG_HANDLES) ------------------------- */

#ifdef WK_DEBUG_HANDLES
#define WK_DEBUG_QUARANTINE 65536   /* released headers kept; older ones are freed */
static _Atomic uint64_t dbg_serial;
static pthread_mutex_t dbg_mu = PTHREAD_MUTEX_INITIALIZER;
static void *dbg_ring[WK_DEBUG_QUARANTINE];
static size_t dbg_head, dbg_count;

/* a header's memory goes to the quarantine; the oldest one there is freed */
static void header_free(void *p)
{
    void *old = NULL;
    pthread_mutex_lock(&dbg_mu);
    if (dbg_count == WK_DEBUG_QUARANTINE) {
        old = dbg_ring[dbg_head];
        dbg_ring[dbg_head] = p;
        dbg_head = (dbg_head + 1) % WK_DEBUG_QUARANTINE;
    } else {
        dbg_ring[(dbg_head + dbg_count++) % WK_DEBUG_QUARANTINE] = p;
    }
    pthread_mutex_unlock(&dbg_mu);
    free(old);
}

static void header_born(wk_tensor *t)
{
    live_add(&live_tensors, 1);
    t->gen = atomic_fetch_add_explicit(&dbg_serial, 1, memory_order_relaxed) + 1;
    atomic_init(&t->dead, false);
}

bool wk_handle_dead(const wk_tensor *t, const char *what)
{
    if (!atomic_load_explicit(&t->dead, memory_order_acquire)) return false;
    wk_error(WK_ERR_ARGUMENT, "%s %p (handle generation %llu) was released: a use after wk_release", what,
             (const void *)t, (unsigned long long)t->gen);
    return true;
}
#else
#define header_free(p) free(p)
#define header_born(t) live_add(&live_tensors, 1)
#endif

/* true when t is the tensor whose block holds its storage */
static inline bool owns_block(const wk_tensor *t)
{
    return (const char *)t->st - offsetof(tensor_block, st) == (const char *)t;
}

static void storage_release(wk_storage *st)
{
    /* refs == 1 seen by the one holder: nobody else can take a reference */
    if (atomic_load_explicit(&st->refs, memory_order_acquire) == 1 || atomic_fetch_sub(&st->refs, 1) == 1) {
        live_add(&live_storages, -1);
        live_add(&live_bytes, -(int64_t)st->bytes);
        if (st->release) st->release(st->release_ctx);
        else st->dev->be->free(st->dev->ctx, st->ptr);
        wk_device_release(st->dev);
        header_free((char *)st - offsetof(tensor_block, st));
    }
}

/* ---- scopes ----------------------------------------------------------- */

typedef struct scope_frame {
    wk_tensor **items;
    size_t n, cap;
} scope_frame;

static _Thread_local scope_frame *tl_scopes;
static _Thread_local int tl_depth, tl_cap;

static bool frame_push(scope_frame *f, wk_tensor *t)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 64;
        wk_tensor **items = realloc(f->items, cap * sizeof *items);
        if (!items) return false;
        f->items = items;
        f->cap = cap;
    }
    f->items[f->n++] = t;
    return true;
}

/* Removes t from the innermost frame that holds it; true if found. */
static bool scopes_forget(wk_tensor *t)
{
    for (int d = tl_depth - 1; d >= 0; d--) {
        scope_frame *f = &tl_scopes[d];
        for (size_t i = f->n; i-- > 0;) {
            if (f->items[i] == t) {
                f->items[i] = f->items[--f->n];
                return true;
            }
        }
    }
    return false;
}

void wk_scope_begin(void)
{
    if (tl_depth == tl_cap) {
        int cap = tl_cap ? tl_cap * 2 : 8;
        scope_frame *s = realloc(tl_scopes, (size_t)cap * sizeof *s);
        if (!s) {
            /* cannot nest deeper: tensors go to the enclosing scope */
            wk_error(WK_ERR_MEMORY, "scope_begin: out of memory");
            return;
        }
        tl_scopes = s;
        tl_cap = cap;
    }
    tl_scopes[tl_depth++] = (scope_frame){ 0 };
}

void wk_scope_end(void)
{
    if (tl_depth == 0) return;
    scope_frame f = tl_scopes[--tl_depth];
    for (size_t i = 0; i < f.n; i++) {
        f.items[i]->scoped = 0;
        wk_release(f.items[i]);
    }
    free(f.items);
    if (tl_depth == 0) {
        free(tl_scopes);
        tl_scopes = NULL;
        tl_cap = 0;
    }
}

wk_tensor *wk_keep(wk_tensor *t)
{
    if (WK_DEAD(t, "wk_keep: the tensor")) return NULL;
    if (!t || !t->scoped || tl_depth == 0) return t;
    if (!scopes_forget(t)) return t;
    if (tl_depth >= 2 && frame_push(&tl_scopes[tl_depth - 2], t)) return t;
    t->scoped = 0;
    return t;
}

wk_tensor *wk_track(wk_tensor *t)
{
    if (t && tl_depth > 0 && frame_push(&tl_scopes[tl_depth - 1], t)) t->scoped = 1;
    return t;
}

/* ---- tensors ---------------------------------------------------------- */

wk_tensor *wk_retain(wk_tensor *t)
{
    if (WK_DEAD(t, "wk_retain: the tensor")) return NULL;
    if (t) atomic_fetch_add(&t->refs, 1);
    return t;
}

void wk_release(wk_tensor *t)
{
    if (!t || WK_DEAD(t, "wk_release: the tensor")) return;
    /* refs == 1 seen by the one holder: nobody else can take a reference */
    if (atomic_load_explicit(&t->refs, memory_order_acquire) == 1 || atomic_fetch_sub(&t->refs, 1) == 1) {
        if (t->scoped) scopes_forget(t);
#ifdef WK_DEBUG_HANDLES
        atomic_store_explicit(&t->dead, true, memory_order_release);
#endif
        live_add(&live_tensors, -1);
        const bool in_block = owns_block(t);   /* then freed with the storage */
        storage_release(t->st);
        if (!in_block) header_free(t);
    }
}

/* Bytes of a new tensor: the element count by checked multiplies (inline:
 * every op allocates), whole blocks for block dtypes. */
static bool dims_bytes(wk_dtype dt, int rank, const int64_t *dims, size_t *bytes)
{
    if (rank < 0 || rank > WK_MAX_RANK) {
        wk_error(WK_ERR_SHAPE, "rank %d is outside 0..%d", rank, WK_MAX_RANK);
        return false;
    }
    int64_t n = 1, b;
    bool big = false;
    for (int d = 0; d < rank; d++) {
        if (dims[d] <= 0) {
            if (dims[d] == 0) {
                n = 0;
                big = false;
                break;
            }
            wk_error(WK_ERR_SHAPE, "dim %d has negative size %lld", d, (long long)dims[d]);
            return false;
        }
        big |= __builtin_mul_overflow(n, dims[d], &n);
    }
    if (big) {
        for (int d = 0; d < rank; d++)          /* a later negative dim is the error to report */
            if (dims[d] < 0) {
                wk_numel_checked(rank, dims, &n, WK_ERR_MEMORY);   /* sets the error */
                return false;
            }
        wk_error(WK_ERR_MEMORY, "the shape has more than 2^63 elements");
        return false;
    }
    if (wk_dt_is_quant(dt)) {
        int64_t one[WK_MAX_RANK] = { 0 };
        if (rank > 0) one[rank - 1] = 1;
        if (!wk_layout_fits_dtype(dt, rank, dims, one, 0)) return false;
    }
    if (!wk_dt_bytes(dt, n, &b)) {
        wk_bytes_checked(dt, n, &b);            /* sets the error */
        return false;
    }
    if ((uint64_t)b > (uint64_t)SIZE_MAX / 2) {
        wk_error(WK_ERR_MEMORY, "%lld elements of %s do not fit in memory", (long long)n, wk_dtype_name(dt));
        return false;
    }
    *bytes = (size_t)b;
    return true;
}

wk_tensor *wk_tensor_alloc(wk_device *dev, wk_dtype dt, int rank, const int64_t *dims)
{
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
        return NULL;
    }
    if (!wk_dtype_valid(dt)) {
        wk_error(WK_ERR_DTYPE, "invalid dtype %d", (int)dt);
        return NULL;
    }
    size_t bytes;
    if (!dims_bytes(dt, rank, dims, &bytes)) return NULL;
    tensor_block *b = malloc(sizeof *b);
    if (!b) {
        wk_error(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    wk_storage *st = &b->st;
    if (dev->be->alloc(dev->ctx, bytes, &st->ptr) != WK_OK) {
        free(b);
        return NULL;
    }
    atomic_init(&st->refs, 1);
    st->dev = wk_device_retain(dev);
    st->bytes = bytes;
    st->release = NULL;
    st->release_ctx = NULL;
    storage_born(st);
    wk_tensor *t = &b->t;
    atomic_init(&t->refs, 1);
    t->scoped = 0;
    t->st = st;
    t->dtype = dt;
    t->rank = rank;
    t->offset = 0;
    header_born(t);
    for (int d = 0; d < WK_MAX_RANK; d++) {         /* 0 past rank (core.h) */
        t->dims[d] = d < rank ? dims[d] : 0;
        t->strides[d] = 0;
    }
    wk_contiguous_strides(rank, dims, t->strides);
    return wk_track(t);
}

wk_tensor *wk_tensor_view(const wk_tensor *src, int rank, const int64_t *dims, const int64_t *strides, int64_t offset)
{
    int64_t n;
    if (!wk_numel_checked(rank, dims, &n, WK_ERR_SHAPE) || !wk_layout_fits_dtype(src->dtype, rank, dims, strides, offset))
        return NULL;
    wk_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        wk_error(WK_ERR_MEMORY, "out of memory");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    t->st = src->st;
    header_born(t);
    atomic_fetch_add(&t->st->refs, 1);
    t->dtype = src->dtype;
    t->rank = rank;
    t->offset = offset;
    for (int d = 0; d < rank; d++) {
        t->dims[d] = dims[d];
        t->strides[d] = strides[d];
    }
    return wk_track(t);
}

/* Accessors: a released handle (debug build) answers as NULL does, with the error set. */
#define LIVE(t, fn) ((t) && !WK_DEAD((t), fn ": the tensor"))
wk_dtype wk_tensor_dtype(const wk_tensor *t) { return LIVE(t, "wk_tensor_dtype") ? t->dtype : WK_DTYPE_COUNT; }
int wk_tensor_rank(const wk_tensor *t) { return LIVE(t, "wk_tensor_rank") ? t->rank : -1; }
wk_shape wk_tensor_shape(const wk_tensor *t)
{
    wk_shape s = { 0, { 0 } };
    if (!LIVE(t, "wk_tensor_shape")) return s;
    s.rank = t->rank;
    for (int d = 0; d < t->rank; d++) s.dims[d] = t->dims[d];
    return s;
}
int64_t wk_tensor_dim(const wk_tensor *t, int dim)
{
    if (!LIVE(t, "wk_tensor_dim")) return -1;
    int d = dim < 0 ? dim + t->rank : dim;
    return d >= 0 && d < t->rank ? t->dims[d] : -1;
}
int64_t wk_tensor_stride(const wk_tensor *t, int dim)
{
    if (!LIVE(t, "wk_tensor_stride")) return -1;
    int d = dim < 0 ? dim + t->rank : dim;
    return d >= 0 && d < t->rank ? t->strides[d] : -1;
}
int64_t wk_tensor_offset(const wk_tensor *t) { return LIVE(t, "wk_tensor_offset") ? t->offset : -1; }
int64_t wk_tensor_numel(const wk_tensor *t) { return LIVE(t, "wk_tensor_numel") ? wk_numel(t->rank, t->dims) : -1; }
size_t wk_tensor_nbytes(const wk_tensor *t)
{
    int64_t b;
    if (!LIVE(t, "wk_tensor_nbytes")) return 0;
    return wk_dt_bytes(t->dtype, wk_numel(t->rank, t->dims), &b) ? (size_t)b : SIZE_MAX;
}
bool wk_tensor_is_contiguous(const wk_tensor *t)
{
    return LIVE(t, "wk_tensor_is_contiguous") && wk_layout_is_contiguous(t->rank, t->dims, t->strides);
}
wk_device *wk_tensor_device(const wk_tensor *t) { return LIVE(t, "wk_tensor_device") ? t->st->dev : NULL; }
bool wk_tensor_same_storage(const wk_tensor *a, const wk_tensor *b)
{
    return LIVE(a, "wk_tensor_same_storage") && LIVE(b, "wk_tensor_same_storage") && a->st == b->st;
}

void *wk_tensor_data(const wk_tensor *t)
{
    return LIVE(t, "wk_tensor_data") ? (char *)t->st->ptr + wk_dt_bytes_of(t->dtype, t->offset) : NULL;
}

/* ---- memory of another owner ---------------------------------------------- */

static void release_nothing(void *ctx) { (void)ctx; }   /* the owner frees it on its own */

wk_tensor *wk_from_external(wk_device *dev, wk_dtype dt, wk_shape shape, const int64_t *strides, void *data,
                            void (*release)(void *ctx), void *ctx)
{
    WK_ENTER("from_external");
    wk_tensor *t = NULL;
    int64_t st_[WK_MAX_RANK] = { 0 }, n, extent = 0, bytes = 0;
    if (!dev || !wk_dtype_valid(dt) || !wk_shape_valid("shape", shape) ||
        !wk_numel_checked(shape.rank, shape.dims, &n, WK_ERR_SHAPE)) {
        if (!dev) wk_error(WK_ERR_ARGUMENT, "NULL device");
        else if (!wk_dtype_valid(dt)) wk_error(WK_ERR_DTYPE, "invalid dtype %d", (int)dt);
        goto out;
    }
    if (strides) memcpy(st_, strides, sizeof(int64_t) * (size_t)shape.rank);
    else wk_contiguous_strides(shape.rank, shape.dims, st_);
    bool big = false;
    for (int d = 0; d < shape.rank; d++) {    /* the last element's index, checked */
        int64_t e;
        if (st_[d] < 0) {   /* refused whatever the shape, empty ones too */
            wk_error(WK_ERR_SHAPE, "stride %lld of dim %d is negative", (long long)st_[d], d);
            goto out;
        }
        if (n > 0)
            big |= __builtin_mul_overflow(st_[d], shape.dims[d] - 1, &e) || __builtin_add_overflow(extent, e, &extent);
    }
    if (n > 0) big |= __builtin_add_overflow(extent, 1, &extent);
    if (big || !wk_layout_fits_dtype(dt, shape.rank, shape.dims, st_, 0) || !wk_bytes_checked(dt, extent, &bytes)) {
        if (big) wk_error(WK_ERR_SHAPE, "the strides reach past 2^63 elements");
        goto out;
    }
    const size_t align = wk_dt_is_quant(dt) ? 2 : wk_dtype_size(dt);
    if (n > 0 && (!data || (uintptr_t)data % align)) {
        wk_error(WK_ERR_ARGUMENT, "data %p is NULL or not aligned to %zu bytes", data, align);
        goto out;
    }
    tensor_block *b = malloc(sizeof *b);
    if (!b) {
        wk_error(WK_ERR_MEMORY, "out of memory");
        goto out;
    }
    wk_storage *st = &b->st;
    atomic_init(&st->refs, 1);
    st->dev = wk_device_retain(dev);
    st->ptr = data;
    st->bytes = (size_t)bytes;
    st->release = release ? release : release_nothing;   /* never the backend's free */
    st->release_ctx = ctx;
    storage_born(st);
    t = &b->t;
    atomic_init(&t->refs, 1);
    t->scoped = 0;
    header_born(t);
    t->st = st;
    t->dtype = dt;
    t->rank = shape.rank;
    t->offset = 0;
    for (int d = 0; d < WK_MAX_RANK; d++) {
        t->dims[d] = d < shape.rank ? shape.dims[d] : 0;
        t->strides[d] = d < shape.rank ? st_[d] : 0;
    }
    wk_track(t);
out:
    WK_LEAVE();
    return t;
}

/* ---- creation and host transfers ------------------------------------------ */

wk_tensor *wk_empty(wk_device *dev, wk_dtype dt, wk_shape shape)
{
    WK_ENTER("empty");
    wk_tensor *t = wk_shape_valid("shape", shape) ? wk_tensor_alloc(dev, dt, shape.rank, shape.dims) : NULL;
    WK_LEAVE();
    return t;
}

wk_tensor *wk_from_host(wk_device *dev, wk_dtype dt, wk_shape shape, const void *data)
{
    WK_ENTER("from_host");
    wk_tensor *t = NULL;
    if (wk_shape_valid("shape", shape)) t = wk_tensor_alloc(dev, dt, shape.rank, shape.dims);
    if (t) {
        size_t bytes = t->st->bytes;
        if (bytes && !data) {
            wk_error(WK_ERR_ARGUMENT, "NULL host data for %zu bytes", bytes);
            wk_release(t);
            t = NULL;
        } else if (bytes && dev->be->write(dev->ctx, t->st->ptr, data, bytes) != WK_OK) {
            wk_release(t);
            t = NULL;
        }
    }
    WK_LEAVE();
    return t;
}

/* Where a copy to the host reads t's elements: t's first one when t is
 * contiguous, else that of *tmp, a contiguous copy queued now (the
 * caller releases it); NULL + error when that copy fails. */
static const void *host_copy_source(const wk_tensor *t, wk_tensor **tmp)
{
    *tmp = NULL;
    if (wk_tensor_is_contiguous(t)) return (const char *)t->st->ptr + wk_dt_bytes_of(t->dtype, t->offset);
    *tmp = wk_contiguous(t);
    return *tmp ? (*tmp)->st->ptr : NULL;
}

wk_status wk_to_host(const wk_tensor *t, void *dst, size_t bytes)
{
    WK_ENTER("to_host");
    wk_status st = WK_OK;
    if (!WK_CHECK_T(t)) st = wk_last_status();
    else {
        int64_t n = wk_numel(t->rank, t->dims), nb;
        size_t need = 0;
        if (!wk_dt_bytes(t->dtype, n, &nb))
            st = wk_error(WK_ERR_ARGUMENT, "the tensor's %lld elements of %s take more than 2^63 bytes: no buffer holds them",
                          (long long)n, wk_dtype_name(t->dtype));
        else if (bytes < (need = (size_t)nb))
            st = wk_error(WK_ERR_ARGUMENT, "buffer of %zu bytes is smaller than the %zu needed", bytes, need);
        else if (need && !dst) st = wk_error(WK_ERR_ARGUMENT, "NULL destination");
        if (st == WK_OK && need) {
            wk_device *dev = t->st->dev;
            wk_tensor *c = NULL;
            const void *src = host_copy_source(t, &c);
            st = src ? dev->be->read(dev->ctx, dst, src, need) : wk_last_status();
            wk_release(c);
        }
    }
    WK_LEAVE();
    return st;
}

/* A host buffer of `bytes` for all of t's elements (wk_write,
 * wk_to_host_async): WK_OK and *nb the bytes they take, else the error. */
static wk_status host_buffer_check(const wk_tensor *t, size_t bytes, int64_t *nb)
{
    *nb = 0;
    if (!WK_CHECK_T(t)) return wk_last_status();
    if (!wk_dt_bytes(t->dtype, wk_numel(t->rank, t->dims), nb))
        return wk_error(WK_ERR_ARGUMENT, "the tensor takes more than 2^63 bytes");
    if (bytes < (size_t)*nb)
        return wk_error(WK_ERR_ARGUMENT, "buffer of %zu bytes is smaller than the %lld the tensor holds", bytes,
                        (long long)*nb);
    return WK_OK;
}

wk_status wk_to_host_async(const wk_tensor *t, void *dst, size_t bytes)
{
    WK_ENTER("to_host_async");
    int64_t nb = 0;
    wk_status st = host_buffer_check(t, bytes, &nb);
    if (st == WK_OK && nb && !wk_host_range_pinned(t->st->dev, dst, (size_t)nb))
        st = wk_error(WK_ERR_ARGUMENT, "the destination (%zu bytes) is not inside one wk_host_alloc block of a %s device",
                      (size_t)nb, t->st->dev->be->kind);
    if (st == WK_OK && nb) {
        wk_device *dev = t->st->dev;
        wk_tensor *c = NULL;   /* its memory goes back to the device's pool in stream order, after the read */
        const void *src = host_copy_source(t, &c);
        if (!src) st = wk_last_status();
        else if (dev->be->read_async) st = dev->be->read_async(dev->ctx, dst, src, (size_t)nb);
        else st = dev->be->read(dev->ctx, dst, src, (size_t)nb);
        wk_release(c);
    }
    WK_LEAVE();
    return st;
}

wk_status wk_write(wk_tensor *t, const void *src, size_t bytes)
{
    WK_ENTER("write");
    int64_t nb = 0;
    wk_status st = host_buffer_check(t, bytes, &nb);
    if (st == WK_OK && nb && !src) st = wk_error(WK_ERR_ARGUMENT, "NULL source");
    if (st == WK_OK && nb) {
        wk_device *dev = t->st->dev;
        if (wk_tensor_is_contiguous(t)) {
            st = dev->be->write(dev->ctx, (char *)t->st->ptr + wk_dt_bytes_of(t->dtype, t->offset), src, (size_t)nb);
        } else {   /* a view with gaps: through a contiguous copy */
            wk_tensor *c = wk_from_host(dev, t->dtype, wk_tensor_shape(t), src);
            st = c ? wk_copy_into(t, c) : wk_last_status();
            wk_release(c);
        }
    }
    WK_LEAVE();
    return st;
}

static double decode(const void *p, wk_dtype dt)
{
    switch (dt) {
    case WK_U8: return *(const uint8_t *)p;
    case WK_U32: return *(const uint32_t *)p;
    case WK_I16: return *(const int16_t *)p;
    case WK_I32: return *(const int32_t *)p;
    case WK_I64: return (double)*(const int64_t *)p;
    case WK_BF16: return wk_bf16_to_f32(*(const uint16_t *)p);
    case WK_F16: return wk_f16_to_f32(*(const uint16_t *)p);
    case WK_F32: return *(const float *)p;
    case WK_F64: return *(const double *)p;
    case WK_F8E4M3: return wk_f8e4m3_to_f32(*(const uint8_t *)p);
    default: return 0;
    }
}

wk_status wk_item(const wk_tensor *t, const int64_t *index, double *out)
{
    WK_ENTER("item");
    wk_status st = WK_OK;
    if (WK_DEAD(t, "the tensor")) st = wk_last_status();
    else if (!t || !out || (t->rank > 0 && !index)) st = wk_error(WK_ERR_ARGUMENT, "NULL tensor, index or output");
    else {
        int64_t off = t->offset;
        for (int d = 0; d < t->rank && st == WK_OK; d++) {
            if (index[d] < 0 || index[d] >= t->dims[d])
                st = wk_error(WK_ERR_INDEX, "index %lld out of range for dim %d of size %lld",
                              (long long)index[d], d, (long long)t->dims[d]);
            else
                off += index[d] * t->strides[d];
        }
        if (st == WK_OK && wk_dt_is_quant(t->dtype))
            st = wk_error(WK_ERR_DTYPE, "%s elements are stored in blocks: dequantize first", wk_dtype_name(t->dtype));
        if (st == WK_OK) {
            unsigned char buf[8];
            size_t sz = wk_dtype_size(t->dtype);
            wk_device *dev = t->st->dev;
            st = dev->be->read(dev->ctx, buf, (const char *)t->st->ptr + off * (int64_t)sz, sz);
            if (st == WK_OK) *out = decode(buf, t->dtype);
        }
    }
    WK_LEAVE();
    return st;
}

wk_tensor *wk_to_device(const wk_tensor *t, wk_device *dev)
{
    WK_ENTER("to_device");
    wk_tensor *out = NULL;
    if (!t || !dev || WK_DEAD(t, "the tensor")) {
        if (!t || !dev) wk_error(WK_ERR_ARGUMENT, "NULL tensor or device");
        WK_LEAVE();
        return NULL;
    }
    wk_tensor *c = wk_contiguous(t);
    if (c) {
        wk_device *src = t->st->dev;
        out = wk_tensor_alloc(dev, t->dtype, t->rank, t->dims);
        size_t bytes = out ? out->st->bytes : 0;
        const void *sp = (const char *)c->st->ptr + wk_dt_bytes_of(t->dtype, c->offset);
        wk_status st = WK_OK;
        if (out && bytes) {
            if (src->be == dev->be && dev->be->copy_peer) {
                st = dev->be->copy_peer(dev->ctx, out->st->ptr, src->ctx, sp, bytes);
            } else {
                void *host = malloc(bytes);
                if (!host) st = wk_error(WK_ERR_MEMORY, "out of memory staging %zu bytes", bytes);
                else {
                    st = src->be->read(src->ctx, host, sp, bytes);
                    if (st == WK_OK) st = dev->be->write(dev->ctx, out->st->ptr, host, bytes);
                    free(host);
                }
            }
        }
        if (st != WK_OK) {
            wk_release(out);
            out = NULL;
        }
        wk_release(c);
    }
    WK_LEAVE();
    return out;
}
